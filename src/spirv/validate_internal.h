// Internals of the SPIR-V graph-module validator (validate.cpp, validate_binary.cpp,
// validate_tosa.cpp). Not part of the library API.
//
// The validator works in two stages:
//  1. parse_module(): the binary stage. Header, word counts, opcodes, operands against the grammar,
//     id bounds. Any failure here gives exactly one "binary.*" diagnostic and stops.
//  2. Checker: every semantic rule, over the parsed instructions, collecting all diagnostics.
//     Lookups only follow ids defined by an *earlier* instruction, so malformed (cyclic,
//     self-referencing) type graphs cannot make it loop; nothing is sized by declared values.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "spirv/binary.h"
#include "spirv/grammar.h"
#include "weft/dtype.h"
#include "weft/ops.h"
#include "weft/spirv.h"

namespace weft::spirv {
class Disassembler;
}

namespace weft::spirv::validation {

// One instruction whose operands parsed against the grammar.
struct Inst {
  uint32_t offset = 0;
  std::span<const uint32_t> words;
  const InstDef* def = nullptr;
  std::vector<ParsedOperand> operands;
  uint32_t result_type = 0;  // 0: none
  uint32_t result = 0;       // 0: none

  uint16_t opcode() const { return static_cast<uint16_t>(words[0] & 0xffff); }
  size_t size() const { return words.size(); }
  uint32_t word(size_t i) const { return i < words.size() ? words[i] : 0; }  // 0 past the end
  const char* name() const { return def != nullptr ? def->name : "OpUnknown"; }
};

struct ParsedModule {
  std::span<const uint32_t> words;
  Header header;
  std::vector<Inst> insts;
};

// Stage 1. Returns the binary.* diagnostic (offset set, instruction and names not yet filled)
// when the stream cannot be parsed.
std::optional<Diagnostic> parse_module(std::span<const uint32_t> words, ParsedModule& out);

// Collects diagnostics; names ids and prints instructions with the disassembler when the stream
// allows one (falls back to %<id> and raw words otherwise).
class Reporter {
 public:
  explicit Reporter(std::span<const uint32_t> words);
  ~Reporter();
  // `inst` null: a module-level diagnostic (offset 0, no instruction text).
  void add(std::string rule, const Inst* inst, std::string message, std::vector<uint32_t> ids = {});
  void add(Diagnostic d);
  std::string name(uint32_t id) const;  // "%name" or "%12"
  std::vector<Diagnostic> finish();     // fills the instruction texts

 private:
  const Disassembler* disassembler() const;

  std::span<const uint32_t> words_;
  mutable bool dis_tried_ = false;
  mutable std::unique_ptr<Disassembler> dis_;
  std::vector<Diagnostic> diags_;
};

// A checked OpTypeTensorARM.
struct TensorInfo {
  uint32_t elem_type = 0;
  std::optional<DType> dtype;  // nullopt: a scalar type without a TOSA mapping (f64, ...)
  int64_t rank = -1;           // -1: unranked, or ranked by a specialization constant
  bool rank_spec = false;      // Rank is a specialization constant (its value is not fixed)
  bool has_shape = false;      // a Shape whose dimensions are all fixed constants: `dims`
  bool shape_spec = false;     // a Shape given by specialization constants (or OpConstantNull)
  std::vector<int64_t> dims;
  bool ranked() const { return rank >= 0 || rank_spec; }
  std::string str() const;  // "f32[1,8,8,3]"
};

// The environment of ValidateOptions::target_env.
struct TargetEnv {
  uint32_t max_version = 0x00010600;  // highest SPIR-V version it takes
  bool vulkan = false;
};

// A checked OpTypeGraphARM.
struct GraphTypeInfo {
  uint32_t num_inputs = 0;
  std::span<const uint32_t> types;  // inputs then outputs
  uint32_t num_outputs() const { return static_cast<uint32_t>(types.size()) - num_inputs; }
};

// The graph definition being checked: which inputs and outputs (or elements of them) are set.
// (At namespace scope: clang cannot use default member initializers of a nested class in
// std::optional members of the enclosing class.)
struct GraphSlot {
  bool whole = false;
  std::unordered_set<uint32_t> elements;
};
struct OpenGraph {
  size_t begin = 0;
  const GraphTypeInfo* type = nullptr;
  std::unordered_map<uint32_t, GraphSlot> inputs, outputs;
  bool any_output = false;
};

class Checker {
 public:
  Checker(const ParsedModule& module, Reporter& reporter, const ValidateOptions& options, TargetEnv env);
  void run();

 private:
  // ---- lookups (only ids defined before instruction `at`) ----
  const Inst* def_before(uint32_t id, size_t at) const;
  const Inst* def_anywhere(uint32_t id) const;
  // The value of an integer OpConstant or OpConstantNull defined before `at`.
  std::optional<int64_t> int_constant(uint32_t id, size_t at, uint32_t* width = nullptr) const;
  // An integer specialization constant (OpSpecConstant, or OpSpecConstantOp), defined before `at`.
  bool is_int_spec_constant(uint32_t id, size_t at) const;
  std::optional<DType> scalar_dtype(uint32_t type_id, size_t at) const;
  const TensorInfo* tensor_type(uint32_t type_id) const;  // null unless a valid tensor type
  // An OpTypeTensorARM that failed its checks (already reported: users need not repeat it).
  bool is_broken_tensor_type(uint32_t type_id) const;
  const Inst* graph_type_of(const Inst& graph) const;
  std::string describe_type(uint32_t type_id) const;

  // ---- module-wide ----
  void collect_declarations();
  void check_layout(size_t i);
  void check_references(size_t i);
  void check_capabilities_and_extensions();
  void check_entry_points();
  void check_module_requirements();

  // ---- per instruction ----
  void check_instruction(size_t i);
  void check_type_int_float(const Inst& in);
  void check_type_array(size_t i);
  void check_type_tensor(size_t i);
  void check_type_graph(size_t i);
  void check_constant(size_t i);
  void check_constant_composite(size_t i);
  void check_variable(size_t i);
  void check_graph_constant(size_t i);
  void check_ext_inst_set(size_t i);
  void check_composite_extract(size_t i);
  void check_constant_null(size_t i);
  void check_replicate(size_t i);
  void check_unique_type(size_t i);
  void check_required_capabilities(size_t i);
  void check_import(size_t i);
  void check_tensor_read_write(size_t i);
  void check_tensor_query_size(size_t i);
  void check_graph_debuginfo(size_t i);
  void check_function_layout(size_t i);

  // ---- graph definitions ----
  void begin_graph(size_t i);
  void end_graph(size_t end_index);  // end_index: the OpGraphEndARM, or SIZE_MAX at module end
  void check_graph_io(size_t i, bool input);
  bool in_graph() const { return graph_.has_value(); }

  // ---- TOSA extended instructions (validate_tosa.cpp) ----
  void check_tosa(size_t i);

  const ParsedModule& m_;
  const std::vector<Inst>& insts_;
  Reporter& r_;
  const ValidateOptions& opt_;
  TargetEnv env_;
  std::unordered_set<uint32_t> enabled_caps_;        // declared capabilities and those they imply
  std::unordered_map<std::string, size_t> types_seen_;  // non-aggregate type key -> its index
  std::optional<size_t> function_;                     // the open OpFunction

  std::unordered_map<uint32_t, size_t> defs_;     // id -> index of its first definition
  std::vector<int> graph_of_;                     // index -> index of its OpGraphARM, -1 outside
  std::unordered_set<uint32_t> capabilities_;
  std::unordered_set<std::string> extensions_;
  std::unordered_map<uint32_t, std::string> imports_;  // OpExtInstImport id -> name
  ProfileSet profiles_ = kAllProfiles;
  std::unordered_map<uint32_t, TensorInfo> tensors_;        // valid tensor types
  std::unordered_map<uint32_t, GraphTypeInfo> graph_types_;  // valid graph types
  std::unordered_map<uint32_t, size_t> graph_constant_ids_;  // GraphConstantID -> index
  std::unordered_map<std::string, size_t> entry_names_;
  std::optional<OpenGraph> graph_;
  int section_ = 0;
  size_t section_index_ = 0;  // the instruction that set section_
};

}  // namespace weft::spirv::validation
