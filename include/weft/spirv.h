// SPIR-V graph modules (SPV_ARM_graph + SPV_ARM_tensors + the TOSA.001000.1 extended
// instruction set): Weft's portable artifact. Encoding conventions: docs/spirv.md.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "weft/graph.h"
#include "weft/tensor.h"

namespace weft::spirv {

// A graph constant: the data behind an OpGraphConstantARM, which stays out of the module
// (the VGF container stores it). `name` is the OpName of the constant, if any.
struct GraphConstant {
  uint32_t id = 0;  // GraphConstantID
  std::string name;
  Tensor tensor;
};

// An encoded module: its words and the data of its graph constants (in GraphConstantID order;
// the tensors share the IR's buffers, nothing is copied).
struct Binary {
  std::vector<uint32_t> words;
  std::vector<GraphConstant> constants;
};

struct EncodeOptions {
  // CONST tensors of rank >= 1 with at most this many elements are written inline as
  // OpConstantComposite (zero points, pad values, small tables); larger ones, and rank-0 ones,
  // become OpGraphConstantARM. 0: every CONST becomes a graph constant.
  int64_t inline_constant_max_elements = 16;
  uint32_t descriptor_set = 0;  // DescriptorSet decoration of the interface variables
  bool debug_names = true;      // emit OpName for graphs, values and interface variables
};

// IR -> SPIR-V. Throws Error(kUnsupported) naming the graph and node for what TOSA.001000.1
// cannot express (CUSTOM, COND_IF, WHILE_LOOP, the VARIABLE operators, i4 tensors, shape
// values outside int32), Error(kVerify) if the module does not verify.
Binary encode(const Module& module, const EncodeOptions& options = {});

// SPIR-V -> IR, the inverse of encode(). Validates first (throws Error(kVerify) carrying the
// first diagnostic). `constants` supplies the data of OpGraphConstantARM by GraphConstantID; a
// missing id or a tensor whose type differs from the declared one is an Error(kNotFound) /
// Error(kVerify). `source_name` is used in error locations.
Module decode(std::span<const uint32_t> words, std::span<const GraphConstant> constants,
              std::string_view source_name = "<spirv>");

// ---- Files and bytes ----
// Bytes of a .spv file -> words in host order. Accepts either byte order (the magic number
// decides, as the SPIR-V specification allows); a size that is not a multiple of 4, a file
// shorter than the 5-word header or a wrong magic number is an Error(kParse).
std::vector<uint32_t> words_from_bytes(std::span<const uint8_t> bytes, std::string_view source_name);
std::vector<uint32_t> read_file(const std::string& path);                     // Error(kIo/kParse)
void write_file(const std::string& path, std::span<const uint32_t> words);   // little-endian

// ---- Text form (spirv-dis / spirv-as style) ----
struct DisassembleOptions {
  bool friendly_names = true;  // %names from OpName and type shapes; false: raw %<id>
  bool header = true;          // the "; SPIR-V" comment block
  bool offsets = false;        // append "; @<word offset>" to each instruction
};
// Throws Error(kParse) (with the word offset) on a malformed stream; does not validate.
std::string disassemble(std::span<const uint32_t> words, const DisassembleOptions& options = {});
// Accepts what disassemble() prints. Names that are decimal numbers (%12) keep that id; other
// names get, in order of first appearance, the lowest ids not taken. Throws Error(kParse) with
// file:line:column and what was expected.
// The header's version is that of the text's "; Version:" line, else `default_version` (1.6).
std::vector<uint32_t> assemble(std::string_view text, std::string_view source_name = "<input>",
                               uint32_t default_version = 0x00010600);

// ---- Validation ----
struct Diagnostic {
  std::string rule;         // stable rule identifier, e.g. "graph.output-index-unique" (docs/spirv.md)
  std::string message;      // what is wrong, naming the ids involved
  uint32_t offset = 0;      // word offset of the offending instruction (0: the module as a whole)
  std::string instruction;  // its disassembly ("" for module-level diagnostics)
  std::vector<uint32_t> ids;
  std::string str() const;  // "error[rule] @offset: message\n  <instruction>"
};

// A rule the validator checks: its stable identifier and what it requires.
struct RuleInfo {
  const char* id;           // "graph.output-index-unique"
  const char* description;  // one line
  bool strict = false;      // checked only with ValidateOptions::strict
};
std::span<const RuleInfo> validation_rules();

struct ValidateOptions {
  // The target environment, named as spirv-val's --target-env names it: universal1.0 ..
  // universal1.6 (also spv1.0 .. spv1.6), vulkan1.0 .. vulkan1.4. It bounds the SPIR-V version
  // and enables the Vulkan-only rules. Unknown names are refused by validate() (Error kInvalidArgument).
  std::string target_env = "universal1.6";
  // Weft's rules beyond the specifications and upstream spirv-val (docs/spirv.md, "Strict rules"):
  // every graph output set, TOSA level 8K limits on tensor types.
  bool strict = false;
};
// The environments ValidateOptions::target_env accepts, and the highest SPIR-V version of one
// (as a header version word; nullopt for an unknown name).
std::span<const char* const> target_environments();
std::optional<uint32_t> target_environment_version(std::string_view env);

// Every rule of docs/spirv.md; never throws on malformed input (a stream that cannot be parsed
// gives one "binary.*" diagnostic). Empty result: valid.
std::vector<Diagnostic> validate(std::span<const uint32_t> words, const ValidateOptions& options = {});

}  // namespace weft::spirv
