// The SPIR-V graph-module validator: the rule list, the reporter and the module-level and graph
// rules. The binary stage is in validate_binary.cpp, the TOSA.001000.1 instruction rules in
// validate_tosa.cpp. Rule identifiers are stable (docs/spirv.md, tests/spirv/corpus/invalid).
//
// Decisions beyond the specification text (docs/spirv.md, "Validation rules"):
//  - Verdicts follow upstream spirv-val (SPIRV-Tools) on its SPV_ARM_graph / SPV_ARM_tensors tests
//    (tests/spirv/upstream). Weft's stricter rules (TOSA level limits, every graph output set) are
//    `strict` rules, checked only with ValidateOptions::strict.
//  - Values defined inside a graph (OpGraphInputARM, OpExtInst, OpCompositeExtract results) may
//    only be used inside that graph (debug and annotation instructions excepted).
//  - Function bodies are checked for their structure and the SPV_ARM_tensors instructions only:
//    Weft validates graph modules, not shaders (spirv-val remains the reference for those).
//  - The module's profiles are those of `OpModuleProcessed "weft.profiles=..."`, else all.
#include <algorithm>
#include <cstring>
#include <functional>

#include "spirv/text.h"
#include "spirv/validate_internal.h"

namespace weft::spirv {
namespace {

constexpr RuleInfo kRules[] = {
    {"binary.header", "at least 5 header words, the SPIR-V magic number in host order, version 1.0-1.6, schema 0"},
    {"binary.word-count", "every instruction's word count is at least 1 and does not run past the end"},
    {"binary.opcode", "every opcode is a known instruction"},
    {"binary.operands", "operands match the instruction's grammar (count, enumerants, literal widths)"},
    {"binary.string", "literal strings are nul-terminated within their instruction"},
    {"binary.id-bound", "every id is nonzero and below the header's bound"},
    {"limits.id-bound", "the header's id bound is at most 4,194,303 (the SPIR-V specification's universal limit)"},
    {"binary.version", "the SPIR-V version is one the target environment takes (vulkan1.1: up to 1.3, ...)"},
    {"layout.order", "instructions follow the logical layout; graphs come after all other sections"},
    {"layout.function", "function bodies: OpFunction ... OpFunctionEnd, not nested; body instructions only inside functions or graphs"},
    {"layout.memory-model", "exactly one OpMemoryModel"},
    {"layout.entry-point", "at least one OpEntryPoint unless the Linkage or GraphARM capability is declared"},
    {"id.defined-once", "each result id is defined by one instruction"},
    {"id.undefined", "every referenced id is defined somewhere in the module"},
    {"id.defined-before-use", "ids are defined before use (forward references only from debug, annotation and entry-point instructions)"},
    {"id.kind", "Result Type operands are types; struct members and pointees are types"},
    {"capability.required", "every instruction and enumerant the module uses is enabled by a declared capability (or one it implies), as the grammar says"},
    {"id.scope", "values defined inside a graph are used only inside that graph"},
    {"capability.graph", "graph instructions need OpCapability GraphARM"},
    {"capability.tensors", "OpTypeTensorARM needs OpCapability TensorsARM"},
    {"capability.type", "scalar types need their capability (Int8, Int16, Int64, Float16, Float64, BFloat16TypeKHR, Float8EXT)"},
    {"extension.graph", "the GraphARM capability needs OpExtension \"SPV_ARM_graph\""},
    {"extension.tensors", "the TensorsARM capability and SPV_ARM_graph need OpExtension \"SPV_ARM_tensors\""},
    {"extension.type", "BFloat16TypeKHR needs SPV_KHR_bfloat16, Float8EXT needs SPV_EXT_float8"},
    {"exts.import", "OpExtInst's Set is an OpExtInstImport"},
    {"exts.graph-set", "inside graphs, OpExtInst uses TOSA.001000.1, Arm.ExperimentalMLOperations, Arm.MotionEngine or a non-semantic set", true},
    {"exts.import-version", "NonSemantic.Graph.DebugInfo.<N> and Arm.ExperimentalMLOperations.<N> imports name a known version"},
    {"exts.graph-debuginfo", "NonSemantic.Graph.DebugInfo instructions: void result; DebugGraph names an OpGraphARM, DebugOperation a DebugGraph and instructions of its graph, DebugTensor a tensor (with an Index for composites); names are OpString"},
    {"type.scalar", "OpTypeInt width 8/16/32/64 and signedness 0/1; OpTypeFloat width 16/32/64, or 16 with BFloat16KHR, or 8 with a Float8 encoding"},
    {"type.array", "OpTypeArray/OpTypeRuntimeArray element is a type; Length is a positive integer constant"},
    {"type.unique", "no two non-aggregate, non-pointer types have the same opcode and operands"},
    {"type.tensor.element", "a tensor's Element Type is a scalar boolean, integer or floating-point type"},
    {"type.tensor.rank", "a tensor's Rank is a constant (or specialization constant) of scalar integer type, greater than 0"},
    {"type.tensor.shape", "a tensor's Shape is a constant array of Rank integers (Length = Rank), each constant one greater than 0"},
    {"type.tensor.max-rank", "a tensor's Rank is at most MAX_RANK 6 (TOSA level 8K)", true},
    {"type.tensor.size", "a tensor's dimensions and element count stay below 2^31 (TOSA level 8K)", true},
    {"type.graph.outputs", "a graph type has at least one output"},
    {"type.graph.num-inputs", "a graph type's NumInputs does not exceed its number of InOut types"},
    {"type.graph.interface", "graph inputs and outputs are tensors or (runtime) arrays of tensors"},
    {"constant.type", "OpConstant has an integer or float type (unused high literal bits clear), OpConstantTrue/False a bool type"},
    {"constant.composite", "OpConstantComposite constituents are constants matching its array, struct or tensor type in count and type"},
    {"constant.null", "OpConstantNull of a tensor type needs a ranked tensor type with a Shape"},
    {"constant.replicate", "replicated composites (SPV_EXT_replicated_composites): the Value's type is the result's element (member) type; a tensor result has a Shape"},
    {"tensor.read", "OpTensorReadARM: scalar (or array of scalar) result of the Tensor's element type, a ranked Tensor, Coordinates an integer array of Rank elements, tensor operands allowed for reads"},
    {"tensor.write", "OpTensorWriteARM: a ranked Tensor, Coordinates an integer array of Rank elements, an Object of the element type, tensor operands allowed for writes"},
    {"tensor.query-size", "OpTensorQuerySizeARM: integer scalar result, a ranked Tensor, a constant integer Dimension below the Rank"},
    {"variable.type", "OpVariable's Result Type is a pointer of the same storage class"},
    {"graph.constant-type", "OpGraphConstantARM's Result Type is an OpTypeTensorARM"},
    {"graph.constant-id-unique", "GraphConstantID values are unique in the module"},
    {"graph.entry-point-required", "with the GraphARM capability there is at least one OpGraphEntryPointARM"},
    {"graph.entry-point-graph", "OpGraphEntryPointARM's Graph is an OpGraphARM"},
    {"graph.entry-point-interface", "entry-point interface: one UniformConstant OpVariable per graph input then output, pointing to its type"},
    {"graph.entry-point-name-unique", "graph entry-point names are unique"},
    {"graph.type", "OpGraphARM's Result Type is an OpTypeGraphARM"},
    {"graph.end", "each OpGraphARM is closed by OpGraphEndARM before the next one begins; no OpGraphEndARM without OpGraphARM"},
    {"graph.body-instruction", "a graph definition contains only OpGraphInputARM, OpGraphSetOutputARM, OpExtInst and OpCompositeExtract"},
    {"graph.index-constant", "InputIndex, OutputIndex and ElementIndex are 32-bit integers; in Vulkan environments constant instructions (VUID-StandaloneSpirv-OpGraphInputARM-09931/09932)"},
    {"graph.input-placement", "OpGraphInputARM immediately follows OpGraphARM or OpGraphInputARM"},
    {"graph.input-index-range", "InputIndex is below the graph type's NumInputs"},
    {"graph.input-index-unique", "an input (or input element) is defined by at most one OpGraphInputARM per graph"},
    {"graph.input-type", "OpGraphInputARM's Result Type is the input's type (or its element type with ElementIndex)"},
    {"graph.input-element-index", "ElementIndex only for array-of-tensor inputs, at most one, below the array length"},
    {"graph.output-placement", "OpGraphSetOutputARM immediately precedes OpGraphEndARM or OpGraphSetOutputARM"},
    {"graph.output-index-range", "OutputIndex is below the graph type's number of outputs"},
    {"graph.output-index-unique", "an output (or output element) is set by at most one OpGraphSetOutputARM per graph"},
    {"graph.output-type", "the Value's type is the output's type (or its element type with ElementIndex)"},
    {"graph.output-element-index", "ElementIndex only for array-of-tensor outputs, at most one, below the array length"},
    {"graph.output-required", "a graph definition contains at least one OpGraphSetOutputARM"},
    {"graph.all-outputs-set", "every output of the graph type is set (whole, or every element of an array output)", true},
    {"graph.composite-extract", "OpCompositeExtract in a graph takes one member of a struct or element of an array value; its Result Type is that member's type"},
    {"tosa.profiles", "OpModuleProcessed \"weft.profiles=...\" names known TOSA profiles and extensions"},
    {"tosa.instruction", "the instruction number is a TOSA.001000.1 instruction"},
    {"tosa.operand-count", "operand count as the TOSA.001000.1 grammar gives (tensor lists: at least one)"},
    {"tosa.attribute", "attribute operands are constants of their kind: i32 scalar, bool, enum, i32 list tensor, element-typed scalar"},
    {"tosa.attribute-value", "enumeration attributes are in range; list attributes have the required length"},
    {"tosa.tensor-operand", "tensor operands are tensor-typed values (graph values or tensor constants)"},
    {"tosa.shape-operand", "shape operands are rank-1 i32 tensor constants"},
    {"tosa.result-type", "the Result Type is a tensor type (FFT2D/RFFT2D: a struct of two tensor types)"},
    {"tosa.rank", "operand and result ranks are within the operator's bounds"},
    {"tosa.types", "element types form a combination of the operator table (and fixed-type operands have their type)"},
    {"tosa.profile", "the matching type combination is enabled by the module's profiles"},
};

bool is_known_rule(const std::string& id) {
  return std::any_of(std::begin(kRules), std::end(kRules), [&](const RuleInfo& r) { return id == r.id; });
}

std::string raw_instruction(const validation::Inst& in) {
  std::string s = in.name();
  for (size_t k = 1; k < in.size(); ++k) s += " " + std::to_string(in.words[k]);
  return s;
}

}  // namespace

std::string Diagnostic::str() const {
  std::string s = "error[" + rule + "] @" + std::to_string(offset) + ": " + message;
  if (!instruction.empty()) s += "\n  " + instruction;
  return s;
}

std::span<const RuleInfo> validation_rules() { return kRules; }

namespace validation {

// ---------------------------------------------------------------------------------------------
// Reporter

Reporter::Reporter(std::span<const uint32_t> words) : words_(words) {}

// The disassembler is only built when a diagnostic needs names (valid modules never pay for it).
const Disassembler* Reporter::disassembler() const {
  if (!dis_tried_) {
    dis_tried_ = true;
    try {
      dis_ = std::make_unique<Disassembler>(words_);
    } catch (const std::exception&) {
      dis_.reset();  // stream not splittable: fall back to raw forms
    }
  }
  return dis_.get();
}

Reporter::~Reporter() = default;

void Reporter::add(std::string rule, const Inst* inst, std::string message, std::vector<uint32_t> ids) {
  Diagnostic d;
  d.rule = std::move(rule);
  d.message = std::move(message);
  d.ids = std::move(ids);
  if (inst != nullptr) {
    d.offset = inst->offset;
    d.instruction = raw_instruction(*inst);  // replaced by the disassembly in finish()
  }
  add(std::move(d));
}

void Reporter::add(Diagnostic d) {
  if (!is_known_rule(d.rule)) d.message = "(unlisted rule) " + d.message;
  diags_.push_back(std::move(d));
}

std::string Reporter::name(uint32_t id) const {
  if (const Disassembler* dis = disassembler()) {
    try {
      return dis->id_name(id);
    } catch (const std::exception&) {
    }
  }
  return "%" + std::to_string(id);
}

std::vector<Diagnostic> Reporter::finish() {
  for (Diagnostic& d : diags_) {
    const Disassembler* dis = d.offset != 0 ? disassembler() : nullptr;
    if (dis == nullptr) continue;
    try {
      std::string text = dis->instruction(d.offset);
      if (!text.empty()) d.instruction = std::move(text);
    } catch (const std::exception&) {
    }
  }
  std::stable_sort(diags_.begin(), diags_.end(),
                   [](const Diagnostic& a, const Diagnostic& b) { return a.offset < b.offset; });
  return std::move(diags_);
}

// ---------------------------------------------------------------------------------------------
// Helpers

namespace {

enum Section : int {
  kAnywhere = 0,  // OpNop, OpLine, OpNoLine
  kSecCapability = 1,
  kSecExtension,
  kSecImport,
  kSecMemoryModel,
  kSecEntryPoint,
  kSecExecutionMode,
  kSecDebugString,
  kSecDebugName,
  kSecModuleProcessed,
  kSecAnnotation,
  kSecTypes,
  kSecFunctions,
  kSecGraphs,
  kFunctionBody,  // only inside a function (or, for some, a graph) definition
  kGraphBody,     // only inside a graph definition
};

const char* section_name(int s) {
  switch (s) {
    case kSecCapability: return "capabilities";
    case kSecExtension: return "extensions";
    case kSecImport: return "extended instruction imports";
    case kSecMemoryModel: return "memory model";
    case kSecEntryPoint: return "entry points";
    case kSecExecutionMode: return "execution modes";
    case kSecDebugString: return "debug strings and sources";
    case kSecDebugName: return "debug names";
    case kSecModuleProcessed: return "OpModuleProcessed";
    case kSecAnnotation: return "annotations";
    case kSecTypes: return "types, constants and global variables";
    case kSecFunctions: return "functions";
    case kSecGraphs: return "graph entry points and definitions";
    case kFunctionBody: return "function bodies";
    default: return "graph bodies";
  }
}

bool starts_with(const char* s, const char* prefix) { return std::strncmp(s, prefix, std::strlen(prefix)) == 0; }

bool is_type_decl(const Inst& in) { return starts_with(in.name(), "OpType"); }

// Constants of the types section (specialization constants included).
bool is_constant_decl(uint16_t op) {
  switch (op) {
    case kOpConstantTrue:
    case kOpConstantFalse:
    case kOpConstant:
    case kOpConstantComposite:
    case kOpConstantNull:
    case kOpConstantCompositeReplicateEXT:
    case kOpSpecConstantTrue:
    case kOpSpecConstantFalse:
    case kOpSpecConstant:
    case kOpSpecConstantComposite:
    case kOpSpecConstantCompositeReplicateEXT:
    case kOpSpecConstantOp: return true;
    default: return false;
  }
}

bool is_spec_constant(uint16_t op) {
  return op == kOpSpecConstantTrue || op == kOpSpecConstantFalse || op == kOpSpecConstant ||
         op == kOpSpecConstantComposite || op == kOpSpecConstantCompositeReplicateEXT || op == kOpSpecConstantOp;
}

bool is_graph_only(uint16_t op) { return op == kOpGraphInputARM || op == kOpGraphSetOutputARM || op == kOpGraphEndARM; }

int section_of(const Inst& in) {
  switch (in.opcode()) {
    case kOpNop:
    case kOpLine:
    case kOpNoLine: return kAnywhere;
    case kOpCapability: return kSecCapability;
    case kOpExtension: return kSecExtension;
    case kOpExtInstImport: return kSecImport;
    case kOpMemoryModel: return kSecMemoryModel;
    case kOpEntryPoint: return kSecEntryPoint;
    case kOpExecutionMode:
    case kOpExecutionModeId: return kSecExecutionMode;
    case kOpString:
    case kOpSource:
    case kOpSourceContinued:
    case kOpSourceExtension: return kSecDebugString;
    case kOpName:
    case kOpMemberName: return kSecDebugName;
    case kOpModuleProcessed: return kSecModuleProcessed;
    case kOpDecorate:
    case kOpMemberDecorate:
    case kOpDecorateId:
    case kOpDecorateString:
    case kOpMemberDecorateString:
    case kOpDecorationGroup:
    case kOpGroupDecorate:
    case kOpGroupMemberDecorate: return kSecAnnotation;
    case kOpVariable:
    case kOpUndef:
    case kOpTypeForwardPointer:
    case kOpGraphConstantARM: return kSecTypes;
    case kOpFunction: return kSecFunctions;
    case kOpGraphEntryPointARM:
    case kOpGraphARM: return kSecGraphs;
    default:
      if (is_type_decl(in) || is_constant_decl(in.opcode())) return kSecTypes;
      if (is_graph_only(in.opcode())) return kGraphBody;
      return kFunctionBody;
  }
}

// Debug and annotation instructions may name ids defined later and inside graphs.
bool is_debug_or_annotation(const Inst& in) {
  int s = section_of(in);
  return s >= kSecDebugString && s <= kSecAnnotation;
}

// Whether word `w` of `in` may refer to an id defined later in the module.
bool forward_reference_allowed(const Inst& in, size_t w) {
  switch (in.opcode()) {
    case kOpName:
    case kOpMemberName:
    case kOpDecorate:
    case kOpMemberDecorate:
    case kOpDecorateId:
    case kOpDecorateString:
    case kOpMemberDecorateString:
    case kOpExecutionMode:
    case kOpGraphEntryPointARM:
    case kOpTypeForwardPointer: return w == 1;
    case kOpExecutionModeId: return w >= 1;
    case kOpGroupDecorate:
    case kOpGroupMemberDecorate:
    case kOpExtInstWithForwardRefsKHR: return true;
    case kOpEntryPoint: return w >= 2;
    default: return false;
  }
}

// The string starting at word `first`; nullopt if it does not parse.
std::optional<std::string> string_at(const Inst& in, size_t first, size_t* next = nullptr) {
  size_t n = 0;
  try {
    std::string s = read_string(Instruction{in.offset, in.words}, first, &n);
    if (next != nullptr) *next = n;
    return s;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

constexpr int64_t kMaxElements = (int64_t{1} << 31) - 1;  // TOSA level 8K: MAX_LOG2_SIZE 31
constexpr uint32_t kCapFloat64 = 10;
constexpr uint32_t kCapLinkage = 5;

std::string join_names(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

}  // namespace

std::string TensorInfo::str() const {
  std::string s = dtype ? dtype_name(*dtype) : "?";
  if (rank_spec) return s + "[rank by specialization constant]";
  if (rank < 0) return s + "[*]";
  s += "[";
  for (int64_t k = 0; k < rank && k < 16; ++k)
    s += (k ? "," : "") + (has_shape && static_cast<size_t>(k) < dims.size() ? std::to_string(dims[static_cast<size_t>(k)])
                                                                             : std::string("?"));
  return s + (rank > 16 ? ",...]" : "]");
}

// ---------------------------------------------------------------------------------------------
// Lookups

Checker::Checker(const ParsedModule& module, Reporter& reporter, const ValidateOptions& options, TargetEnv env)
    : m_(module), insts_(module.insts), r_(reporter), opt_(options), env_(env), graph_of_(module.insts.size(), -1) {}

const Inst* Checker::def_anywhere(uint32_t id) const {
  auto it = defs_.find(id);
  return it == defs_.end() ? nullptr : &insts_[it->second];
}

const Inst* Checker::def_before(uint32_t id, size_t at) const {
  auto it = defs_.find(id);
  return it == defs_.end() || it->second >= at ? nullptr : &insts_[it->second];
}

std::optional<int64_t> Checker::int_constant(uint32_t id, size_t at, uint32_t* width) const {
  const Inst* c = def_before(id, at);
  if (c == nullptr || (c->opcode() != kOpConstant && c->opcode() != kOpConstantNull)) return std::nullopt;
  const Inst* t = def_before(c->result_type, at);
  if (t == nullptr || t->opcode() != kOpTypeInt) return std::nullopt;
  uint32_t w = t->word(2);
  if (width != nullptr) *width = w;
  if (c->opcode() == kOpConstantNull) return 0;
  bool is_signed = t->word(3) == 1;
  if (width != nullptr) *width = w;
  if (w == 64) {
    uint64_t v = uint64_t{c->word(3)} | (uint64_t{c->word(4)} << 32);
    return static_cast<int64_t>(v);
  }
  uint32_t v = c->word(3);
  if (w < 32) v &= (1u << w) - 1;
  if (is_signed && w <= 32 && w > 0 && (v >> (w - 1)) & 1) return static_cast<int64_t>(v) - (int64_t{1} << w);
  return static_cast<int64_t>(v);
}

bool Checker::is_int_spec_constant(uint32_t id, size_t at) const {
  const Inst* c = def_before(id, at);
  if (c == nullptr || (c->opcode() != kOpSpecConstant && c->opcode() != kOpSpecConstantOp)) return false;
  const Inst* t = def_before(c->result_type, at);
  return t != nullptr && t->opcode() == kOpTypeInt;
}

std::optional<DType> Checker::scalar_dtype(uint32_t type_id, size_t at) const {
  const Inst* t = def_before(type_id, at);
  if (t == nullptr) return std::nullopt;
  switch (t->opcode()) {
    case kOpTypeBool: return DType::kBool;
    case kOpTypeInt:
      switch (t->word(2)) {
        case 8: return DType::kInt8;
        case 16: return DType::kInt16;
        case 32: return DType::kInt32;
        case 64: return DType::kInt48;  // Weft's i48 mapping
        default: return std::nullopt;
      }
    case kOpTypeFloat: {
      uint32_t w = t->word(2);
      if (t->size() < 4) return w == 16 ? std::optional(DType::kFp16) : w == 32 ? std::optional(DType::kFp32) : std::nullopt;
      uint32_t enc = t->word(3);
      if (w == 16 && enc == kFPEncodingBFloat16KHR) return DType::kBf16;
      if (w == 8 && enc == kFPEncodingFloat8E4M3EXT) return DType::kFp8E4M3;
      if (w == 8 && enc == kFPEncodingFloat8E5M2EXT) return DType::kFp8E5M2;
      return std::nullopt;
    }
    default: return std::nullopt;
  }
}

const TensorInfo* Checker::tensor_type(uint32_t type_id) const {
  auto it = tensors_.find(type_id);
  return it == tensors_.end() ? nullptr : &it->second;
}

bool Checker::is_broken_tensor_type(uint32_t type_id) const {
  const Inst* d = def_anywhere(type_id);
  return d != nullptr && d->opcode() == kOpTypeTensorARM && tensor_type(type_id) == nullptr;
}

std::string Checker::describe_type(uint32_t type_id) const {
  if (const TensorInfo* t = tensor_type(type_id)) return r_.name(type_id) + " (tensor " + t->str() + ")";
  if (const Inst* d = def_anywhere(type_id)) return r_.name(type_id) + " (" + d->name() + ")";
  return r_.name(type_id);
}

// ---------------------------------------------------------------------------------------------
// Module-wide passes

void Checker::collect_declarations() {
  for (size_t i = 0; i < insts_.size(); ++i) {
    const Inst& in = insts_[i];
    if (in.result != 0) {
      auto [it, inserted] = defs_.emplace(in.result, i);
      if (!inserted) {
        r_.add("id.defined-once", &in,
               "id " + r_.name(in.result) + " is already defined by " + insts_[it->second].name() + " at @" +
                   std::to_string(insts_[it->second].offset),
               {in.result});
      }
    }
    switch (in.opcode()) {
      case kOpCapability: capabilities_.insert(in.word(1)); break;
      case kOpExtension:
        if (auto s = string_at(in, 1)) extensions_.insert(*s);
        break;
      case kOpExtInstImport:
        if (auto s = string_at(in, 2)) imports_.emplace(in.result, *s);
        break;
      case kOpModuleProcessed: {
        static constexpr std::string_view kKey = "weft.profiles=";
        auto s = string_at(in, 1);
        if (!s || s->rfind(kKey, 0) != 0) break;
        ProfileSet set = 0;
        std::string_view rest = std::string_view(*s).substr(kKey.size());
        std::vector<std::string> unknown;
        while (!rest.empty()) {
          size_t plus = rest.find('+');
          std::string_view part = rest.substr(0, plus);
          if (auto p = parse_profile(part)) {
            set |= *p;
          } else {
            unknown.emplace_back(part);
          }
          rest = plus == std::string_view::npos ? std::string_view() : rest.substr(plus + 1);
        }
        // An empty list is a module that claims no profile (it can only pass values through).
        if (!unknown.empty()) {
          r_.add("tosa.profiles", &in, "unknown profile or extension '" + join_names(unknown, "', '") + "'");
        } else {
          profiles_ = set;
        }
        break;
      }
      default: break;
    }
  }
  // Declared capabilities and those they imply (the grammar's "capabilities" of a Capability).
  std::vector<uint32_t> work(capabilities_.begin(), capabilities_.end());
  while (!work.empty()) {
    uint32_t c = work.back();
    work.pop_back();
    if (!enabled_caps_.insert(c).second) continue;
    if (const EnumDef* e = find_enumerant(OperandKind::kCapability, c))
      work.insert(work.end(), e->capabilities.begin(), e->capabilities.end());
  }
}

void Checker::check_layout(size_t i) {
  const Inst& in = insts_[i];
  uint16_t op = in.opcode();
  int s = section_of(in);
  if (in_graph()) {
    bool allowed = op == kOpGraphInputARM || op == kOpGraphSetOutputARM || op == kOpExtInst ||
                   op == kOpCompositeExtract || op == kOpGraphEndARM || op == kOpGraphARM || s == kAnywhere;
    if (!allowed) {
      r_.add("graph.body-instruction", &in,
             std::string(in.name()) + " inside graph " + r_.name(insts_[graph_->begin].result) +
                 ": a graph definition may only contain OpGraphInputARM, OpGraphSetOutputARM, OpExtInst and "
                 "OpCompositeExtract");
    }
    return;
  }
  if (function_) {
    if (op == kOpFunctionEnd) {
      function_.reset();
    } else if (op == kOpFunction) {
      r_.add("layout.function", &in,
             "OpFunction inside function " + r_.name(insts_[*function_].result) + " (no OpFunctionEnd before it)");
    } else if (s != kFunctionBody && s != kAnywhere && op != kOpVariable && op != kOpUndef && op != kOpExtInst) {
      r_.add("layout.order", &in,
             std::string(in.name()) + " (" + section_name(s) + ") inside function " +
                 r_.name(insts_[*function_].result));
    }
    return;
  }
  if (op == kOpGraphEndARM) {
    r_.add("graph.end", &in, "OpGraphEndARM without a matching OpGraphARM");
    return;
  }
  if (op == kOpFunctionEnd) {
    r_.add("layout.function", &in, "OpFunctionEnd without a matching OpFunction");
    return;
  }
  if (s == kAnywhere) return;
  // A non-semantic OpExtInst (debug information) may appear among the global declarations.
  if (op == kOpExtInst && section_ <= kSecTypes) {
    auto it = imports_.find(in.word(3));
    if (it != imports_.end() && it->second.rfind("NonSemantic.", 0) == 0) s = kSecTypes;
  }
  if (s == kGraphBody || s == kFunctionBody) {
    r_.add("layout.order", &in,
           std::string(in.name()) + " may only appear inside a " + (s == kGraphBody ? "graph" : "function or graph") +
               " definition");
    return;
  }
  if (s < section_) {
    const Inst& prev = insts_[section_index_];
    r_.add("layout.order", &in,
           std::string(in.name()) + " (" + section_name(s) + ") after " + prev.name() + " at @" +
               std::to_string(prev.offset) + " (" + section_name(section_) + ")");
    return;
  }
  if (s > section_) {
    section_ = s;
    section_index_ = i;
  }
  if (op == kOpFunction) function_ = i;
}

void Checker::check_references(size_t i) {
  const Inst& in = insts_[i];
  for (const ParsedOperand& op : in.operands) {
    if (op.kind == OperandKind::kIdResult || !is_id_kind(op.kind)) continue;
    if (op.first_word >= in.size()) continue;
    uint32_t id = in.words[op.first_word];
    auto it = defs_.find(id);
    if (it == defs_.end()) {
      r_.add("id.undefined", &in, std::string(in.name()) + " uses " + r_.name(id) + ", which is never defined", {id});
      continue;
    }
    size_t d = it->second;
    const Inst& def = insts_[d];
    // Inside functions, ids may be used before their definition (labels, OpPhi, calls): SPIR-V
    // asks for dominance there, which Weft does not check.
    bool in_function = function_.has_value() || in.opcode() == kOpFunctionEnd;
    bool forward_ok = forward_reference_allowed(in, op.first_word) ||
                      (in_function && op.kind != OperandKind::kIdResultType);
    if (d >= i && !forward_ok) {
      r_.add("id.defined-before-use", &in,
             std::string(in.name()) + " uses " + r_.name(id) +
                 (d == i ? " in its own definition" : " before its definition at @" + std::to_string(def.offset)),
             {id});
      continue;
    }
    if (d < i && graph_of_[d] >= 0 && graph_of_[d] != graph_of_[i] && !is_debug_or_annotation(in)) {
      r_.add("id.scope", &in,
             r_.name(id) + " is defined inside graph " + r_.name(insts_[static_cast<size_t>(graph_of_[d])].result) +
                 " and cannot be used " +
                 (graph_of_[i] >= 0 ? "in graph " + r_.name(insts_[static_cast<size_t>(graph_of_[i])].result)
                                    : std::string("outside it")),
             {id});
      continue;
    }
    if (op.kind == OperandKind::kIdResultType && d < i && !is_type_decl(def)) {
      r_.add("id.kind", &in,
             "Result Type " + r_.name(id) + " of " + in.name() + " is an " + def.name() + ", not a type", {id});
    }
  }
}

void Checker::check_capabilities_and_extensions() {
  auto has_ext = [&](const char* e) { return extensions_.count(e) != 0; };
  const Inst* first_graph_inst = nullptr;
  const Inst* first_tensor = nullptr;
  for (const Inst& in : insts_) {
    uint16_t op = in.opcode();
    bool graph_inst = op == kOpTypeGraphARM || (op >= kOpGraphConstantARM && op <= kOpGraphEndARM);
    if (graph_inst && first_graph_inst == nullptr) first_graph_inst = &in;
    if (op == kOpTypeTensorARM && first_tensor == nullptr) first_tensor = &in;
    if (op == kOpCapability) {
      uint32_t cap = in.word(1);
      if (cap == kCapGraphARM && !has_ext("SPV_ARM_graph")) {
        r_.add("extension.graph", &in, "capability GraphARM needs OpExtension \"SPV_ARM_graph\"");
      }
      if (cap == kCapTensorsARM && !has_ext("SPV_ARM_tensors")) {
        r_.add("extension.tensors", &in, "capability TensorsARM needs OpExtension \"SPV_ARM_tensors\"");
      }
      if (cap == kCapBFloat16TypeKHR && !has_ext("SPV_KHR_bfloat16")) {
        r_.add("extension.type", &in, "capability BFloat16TypeKHR needs OpExtension \"SPV_KHR_bfloat16\"");
      }
      if (cap == kCapFloat8EXT && !has_ext("SPV_EXT_float8")) {
        r_.add("extension.type", &in, "capability Float8EXT needs OpExtension \"SPV_EXT_float8\"");
      }
    }
    if (op == kOpExtension && string_at(in, 1) == "SPV_ARM_graph" && !has_ext("SPV_ARM_tensors")) {
      r_.add("extension.tensors", &in, "SPV_ARM_graph requires OpExtension \"SPV_ARM_tensors\"");
    }
  }
  if (first_graph_inst != nullptr && capabilities_.count(kCapGraphARM) == 0) {
    r_.add("capability.graph", first_graph_inst,
           std::string(first_graph_inst->name()) + " needs OpCapability GraphARM, which is not declared");
  }
  if (first_tensor != nullptr && capabilities_.count(kCapTensorsARM) == 0) {
    r_.add("capability.tensors", first_tensor, "OpTypeTensorARM needs OpCapability TensorsARM, which is not declared");
  }
}

void Checker::check_module_requirements() {
  const Inst* memory_model = nullptr;
  const Inst* graph_capability = nullptr;
  bool entry_point = false, graph_entry_point = false;
  for (const Inst& in : insts_) {
    switch (in.opcode()) {
      case kOpMemoryModel:
        if (memory_model != nullptr) {
          r_.add("layout.memory-model", &in,
                 "second OpMemoryModel (the first is at @" + std::to_string(memory_model->offset) + ")");
        }
        memory_model = &in;
        break;
      case kOpCapability:
        if (in.word(1) == kCapGraphARM && graph_capability == nullptr) graph_capability = &in;
        break;
      case kOpEntryPoint: entry_point = true; break;
      case kOpGraphEntryPointARM: graph_entry_point = true; break;
      default: break;
    }
  }
  if (memory_model == nullptr) r_.add("layout.memory-model", nullptr, "the module has no OpMemoryModel");
  if (!entry_point && capabilities_.count(kCapLinkage) == 0 && capabilities_.count(kCapGraphARM) == 0) {
    r_.add("layout.entry-point", nullptr,
           "the module has no OpEntryPoint and declares neither the Linkage nor the GraphARM capability");
  }
  if (graph_capability != nullptr && !graph_entry_point) {
    r_.add("graph.entry-point-required", graph_capability,
           "the GraphARM capability is declared but the module has no OpGraphEntryPointARM");
  }
}

void Checker::check_entry_points() {
  for (size_t i = 0; i < insts_.size(); ++i) {
    const Inst& in = insts_[i];
    if (in.opcode() != kOpGraphEntryPointARM) continue;
    uint32_t graph_id = in.word(1);
    size_t next = 0;
    std::optional<std::string> name = string_at(in, 2, &next);
    if (name) {
      auto [it, inserted] = entry_names_.emplace(*name, i);
      if (!inserted) {
        r_.add("graph.entry-point-name-unique", &in,
               "entry point name \"" + *name + "\" is already used at @" + std::to_string(insts_[it->second].offset));
      }
    }
    const Inst* graph = def_anywhere(graph_id);
    if (graph == nullptr) continue;  // id.undefined
    if (graph->opcode() != kOpGraphARM) {
      r_.add("graph.entry-point-graph", &in,
             "Graph " + r_.name(graph_id) + " is an " + graph->name() + ", not an OpGraphARM", {graph_id});
      continue;
    }
    auto gt = graph_types_.find(graph->result_type);
    if (gt == graph_types_.end() || !name) continue;  // graph.type / type.graph.* reported
    const GraphTypeInfo& type = gt->second;
    std::span<const uint32_t> iface = in.words.subspan(std::min(next, in.size()));
    if (iface.size() != type.types.size()) {
      r_.add("graph.entry-point-interface", &in,
             "graph " + r_.name(graph_id) + " has " + std::to_string(type.num_inputs) + " inputs and " +
                 std::to_string(type.num_outputs()) + " outputs but the entry point lists " +
                 std::to_string(iface.size()) + " interface variables",
             {graph_id});
      continue;
    }
    for (size_t k = 0; k < iface.size(); ++k) {
      uint32_t var = iface[k];
      bool is_input = k < type.num_inputs;
      std::string what = (is_input ? "input " + std::to_string(k) : "output " + std::to_string(k - type.num_inputs));
      const Inst* v = def_before(var, i);
      if (v == nullptr) continue;  // id.* reported
      const Inst* ptr = v->opcode() == kOpVariable ? def_before(v->result_type, i) : nullptr;
      std::string problem;
      if (v->opcode() != kOpVariable) {
        problem = " is an " + std::string(v->name()) + ", not an OpVariable";
      } else if (v->word(3) != kStorageUniformConstant) {
        problem = " is not in the UniformConstant storage class";
      } else if (ptr != nullptr && ptr->opcode() == kOpTypePointer && ptr->word(3) != type.types[k]) {
        problem = " points to " + describe_type(ptr->word(3)) + " but " + what + " of graph " + r_.name(graph_id) +
                  " has type " + describe_type(type.types[k]);
      }
      if (!problem.empty()) {
        r_.add("graph.entry-point-interface", &in, "interface " + what + " " + r_.name(var) + problem, {var});
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Types and constants

void Checker::check_type_int_float(const Inst& in) {
  uint32_t w = in.word(2);
  auto need_cap = [&](uint32_t cap, const char* cap_name) {
    if (capabilities_.count(cap) == 0) {
      r_.add("capability.type", &in, std::string(in.name()) + " " + std::to_string(w) + " needs OpCapability " + cap_name);
    }
  };
  if (in.opcode() == kOpTypeInt) {
    if ((w != 8 && w != 16 && w != 32 && w != 64) || in.word(3) > 1) {
      r_.add("type.scalar", &in,
             "OpTypeInt width must be 8, 16, 32 or 64 and signedness 0 or 1, got " + std::to_string(w) + " " +
                 std::to_string(in.word(3)));
      return;
    }
    if (w == 8) need_cap(kCapInt8, "Int8");
    if (w == 16) need_cap(kCapInt16, "Int16");
    if (w == 64) need_cap(kCapInt64, "Int64");
    return;
  }
  if (in.size() < 4) {
    if (w != 16 && w != 32 && w != 64) {
      r_.add("type.scalar", &in, "OpTypeFloat width must be 16, 32 or 64 without an encoding, got " + std::to_string(w));
      return;
    }
    if (w == 16) need_cap(kCapFloat16, "Float16");
    if (w == 64) need_cap(kCapFloat64, "Float64");
    return;
  }
  uint32_t enc = in.word(3);
  bool fp8 = enc == kFPEncodingFloat8E4M3EXT || enc == kFPEncodingFloat8E5M2EXT;
  if (enc == kFPEncodingBFloat16KHR && w == 16) {
    need_cap(kCapBFloat16TypeKHR, "BFloat16TypeKHR");
  } else if (fp8 && w == 8) {
    need_cap(kCapFloat8EXT, "Float8EXT");
  } else {
    r_.add("type.scalar", &in,
           "OpTypeFloat width " + std::to_string(w) + " does not fit encoding " + std::to_string(enc) +
               " (BFloat16KHR needs 16, Float8E4M3EXT/Float8E5M2EXT need 8; others are not supported)");
  }
}

void Checker::check_type_array(size_t i) {
  const Inst& in = insts_[i];
  uint32_t elem = in.word(2);
  const Inst* e = def_before(elem, i);
  if (e != nullptr && !is_type_decl(*e)) {
    r_.add("type.array", &in, "Element Type " + r_.name(elem) + " is an " + e->name() + ", not a type", {elem});
  }
  if (in.opcode() != kOpTypeArray) return;
  uint32_t len = in.word(3);
  if (def_before(len, i) == nullptr) return;  // id.* reported
  auto n = int_constant(len, i);
  if (!n || *n <= 0) {
    r_.add("type.array", &in,
           "Length " + r_.name(len) + (n ? " is " + std::to_string(*n) + ", not positive" : " is not an integer OpConstant"),
           {len});
  }
}

void Checker::check_type_tensor(size_t i) {
  const Inst& in = insts_[i];
  uint32_t elem = in.word(2);
  uint32_t rank_id = in.size() >= 4 ? in.word(3) : 0;
  uint32_t shape_id = in.size() >= 5 ? in.word(4) : 0;
  TensorInfo t;
  t.elem_type = elem;
  bool ok = true;
  const Inst* e = def_before(elem, i);
  if (e != nullptr) {
    uint16_t op = e->opcode();
    if (op != kOpTypeBool && op != kOpTypeInt && op != kOpTypeFloat) {
      r_.add("type.tensor.element", &in,
             "Element Type " + r_.name(elem) + " is an " + e->name() + ", not a scalar type (boolean, integer or float)",
             {elem});
      ok = false;
    }
    t.dtype = scalar_dtype(elem, i);
  } else {
    ok = false;  // id.* reported
  }
  if (rank_id != 0) {
    const Inst* r = def_before(rank_id, i);
    if (r == nullptr) return;  // id.* reported
    const Inst* rt = r->result_type ? def_before(r->result_type, i) : nullptr;
    auto rank = int_constant(rank_id, i);
    if (!is_constant_decl(r->opcode())) {
      r_.add("type.tensor.rank", &in, "Rank " + r_.name(rank_id) + " is an " + r->name() + ", not a constant instruction",
             {rank_id});
      return;
    }
    if (rt == nullptr || rt->opcode() != kOpTypeInt) {
      r_.add("type.tensor.rank", &in, "Rank " + r_.name(rank_id) + " does not have a scalar integer type", {rank_id});
      return;
    }
    if (rank) {
      if (*rank <= 0) {
        r_.add("type.tensor.rank", &in,
               "Rank " + r_.name(rank_id) + " is " + std::to_string(*rank) + ": it must define a value greater than 0",
               {rank_id});
        return;
      }
      if (opt_.strict && *rank > kMaxRank) {
        r_.add("type.tensor.max-rank", &in,
               "Rank " + r_.name(rank_id) + " is " + std::to_string(*rank) + ", above MAX_RANK " +
                   std::to_string(kMaxRank) + " (TOSA level 8K)",
               {rank_id});
        ok = false;
      }
      t.rank = *rank;
    } else {
      t.rank_spec = true;  // a specialization constant (or a composite: not an integer scalar)
      if (r->opcode() != kOpSpecConstant && r->opcode() != kOpSpecConstantOp) {
        r_.add("type.tensor.rank", &in, "Rank " + r_.name(rank_id) + " is not a scalar integer constant", {rank_id});
        return;
      }
    }
  }
  if (shape_id != 0) {
    const Inst* sh = def_before(shape_id, i);
    if (sh == nullptr) return;
    auto shape_error = [&](const std::string& why) {
      r_.add("type.tensor.shape", &in, "Shape " + r_.name(shape_id) + " " + why, {shape_id});
    };
    if (!is_constant_decl(sh->opcode())) return shape_error("is an " + std::string(sh->name()) + ", not a constant instruction");
    const Inst* arr = def_before(sh->result_type, i);
    const Inst* ae = arr != nullptr && arr->opcode() == kOpTypeArray ? def_before(arr->word(2), i) : nullptr;
    // The array's Length where it is an integer constant (plain values: GCC 12 took the
    // std::optional this was for maybe-uninitialized).
    bool have_length = false;
    int64_t length = 0;
    if (arr != nullptr && arr->opcode() == kOpTypeArray)
      if (const std::optional<int64_t> l = int_constant(arr->word(3), i)) {
        have_length = true;
        length = *l;
      }
    if (ae == nullptr || ae->opcode() != kOpTypeInt || (t.rank >= 0 && have_length && length != t.rank)) {
      return shape_error("is not an array of integer type whose Length is equal to Rank" +
                         (have_length && ae != nullptr && ae->opcode() == kOpTypeInt
                              ? " (it has " + std::to_string(length) + " dimensions, Rank is " + std::to_string(t.rank) + ")"
                              : std::string()));
    }
    if (sh->opcode() == kOpConstantComposite || sh->opcode() == kOpSpecConstantComposite) {
      size_t count = sh->size() - 3;
      std::vector<int64_t> dims;
      bool all_fixed = true;
      int64_t elements = 1;
      for (size_t k = 0; k < count; ++k) {
        uint32_t dim_id = sh->word(3 + k);
        auto dim = int_constant(dim_id, i);
        if (!dim) {
          all_fixed = false;  // a specialization constant
          continue;
        }
        if (*dim <= 0) {
          return shape_error("constituent " + std::to_string(k) + " (" + r_.name(dim_id) + " = " +
                             std::to_string(*dim) + ") is not greater than 0");
        }
        if (*dim > kMaxElements || elements > kMaxElements / *dim) {
          if (opt_.strict) {
            r_.add("type.tensor.size", &in,
                   "Shape " + r_.name(shape_id) + ": dimension " + std::to_string(k) + " = " + std::to_string(*dim) +
                       " makes the element count exceed 2^31 - 1 (TOSA level 8K)",
                   {shape_id, dim_id});
          }
          ok = false;  // beyond what Weft's graphs can hold
          continue;
        }
        elements *= *dim;
        dims.push_back(*dim);
      }
      if (all_fixed && t.rank >= 0 && dims.size() == static_cast<size_t>(t.rank)) {
        t.has_shape = true;
        t.dims = std::move(dims);
      } else {
        t.shape_spec = true;
      }
    } else {
      // OpConstantNull (every dimension 0), replicated or operation results: accepted as
      // spirv-val does, but not a shape Weft can use.
      t.shape_spec = true;
    }
  }
  if (ok) tensors_.emplace(in.result, t);
}

void Checker::check_type_graph(size_t i) {
  const Inst& in = insts_[i];
  GraphTypeInfo g;
  g.num_inputs = in.word(2);
  g.types = in.words.subspan(std::min<size_t>(3, in.size()));
  if (g.num_inputs > g.types.size()) {
    r_.add("type.graph.num-inputs", &in,
           "NumInputs is " + std::to_string(g.num_inputs) + " but only " + std::to_string(g.types.size()) +
               " InOut types are given");
    return;
  }
  bool ok = true;
  if (g.types.size() == g.num_inputs) {
    r_.add("type.graph.outputs", &in, "graph type " + r_.name(in.result) + " has no outputs");
    ok = false;
  }
  for (size_t k = 0; k < g.types.size(); ++k) {
    const Inst* t = def_before(g.types[k], i);
    if (t == nullptr) {
      ok = false;
      continue;
    }
    const Inst* elem = t;
    if (t->opcode() == kOpTypeArray || t->opcode() == kOpTypeRuntimeArray) elem = def_before(t->word(2), i);
    if (elem == nullptr || elem->opcode() != kOpTypeTensorARM) {
      std::string what = k < g.num_inputs ? "input " + std::to_string(k) : "output " + std::to_string(k - g.num_inputs);
      r_.add("type.graph.interface", &in,
             what + " type " + describe_type(g.types[k]) + " is not a tensor or an array of tensors", {g.types[k]});
      ok = false;
    }
  }
  if (ok) graph_types_.emplace(in.result, g);
}

void Checker::check_constant(size_t i) {
  const Inst& in = insts_[i];
  const Inst* t = def_before(in.result_type, i);
  if (t == nullptr) return;
  if (in.opcode() != kOpConstant && in.opcode() != kOpSpecConstant) {
    if (t->opcode() != kOpTypeBool) {
      r_.add("constant.type", &in, std::string(in.name()) + " needs a bool type, got " + describe_type(in.result_type),
             {in.result_type});
    }
    return;
  }
  if (t->opcode() != kOpTypeInt && t->opcode() != kOpTypeFloat) {
    r_.add("constant.type", &in, std::string(in.name()) + " needs an integer or float type, got " + describe_type(in.result_type),
           {in.result_type});
    return;
  }
  uint32_t w = t->word(2);
  if (w >= 32 || w == 0) return;
  uint32_t v = in.word(3), high = v >> w;
  bool sign_extended = t->opcode() == kOpTypeInt && t->word(3) == 1 && ((v >> (w - 1)) & 1) &&
                       high == (0xffffffffu >> w);
  if (high != 0 && !sign_extended) {
    r_.add("constant.type", &in,
           "literal " + std::to_string(v) + " has bits set above the " + std::to_string(w) + "-bit type's width");
  }
}

void Checker::check_constant_composite(size_t i) {
  const Inst& in = insts_[i];
  const Inst* t = def_before(in.result_type, i);
  if (t == nullptr) return;
  std::span<const uint32_t> parts = in.words.subspan(3);
  auto fail = [&](const std::string& why, std::vector<uint32_t> ids = {}) {
    r_.add("constant.composite", &in, "composite " + r_.name(in.result) + ": " + why, std::move(ids));
  };
  // Expected constituent count (nullopt: unknown) and type of constituent k.
  std::optional<int64_t> count;
  std::function<bool(size_t, uint32_t)> type_ok;
  std::string expected_desc;
  switch (t->opcode()) {
    case kOpTypeArray: {
      count = int_constant(t->word(3), i);
      uint32_t elem = t->word(2);
      type_ok = [elem](size_t, uint32_t ty) { return ty == elem; };
      expected_desc = r_.name(elem);
      break;
    }
    case kOpTypeStruct: {
      count = static_cast<int64_t>(t->size()) - 2;
      type_ok = [t](size_t k, uint32_t ty) { return t->word(2 + k) == ty; };
      expected_desc = "the member type";
      break;
    }
    case kOpTypeVector:
    case kOpTypeMatrix: {  // word 3: the component (column) count
      count = static_cast<int64_t>(t->word(3));
      uint32_t elem = t->word(2);
      type_ok = [elem](size_t, uint32_t ty) { return ty == elem; };
      expected_desc = r_.name(elem);
      break;
    }
    case kOpTypeTensorARM: {
      const TensorInfo* ti = tensor_type(in.result_type);
      if (ti == nullptr) return;  // type.tensor.* reported
      if (ti->rank_spec || ti->shape_spec) return;  // sizes fixed at specialization time
      if (!ti->has_shape) return fail("its tensor type " + describe_type(in.result_type) + " has no shape");
      count = ti->dims[0];
      if (ti->rank == 1) {
        uint32_t elem = ti->elem_type;
        type_ok = [elem](size_t, uint32_t ty) { return ty == elem; };
        expected_desc = r_.name(elem);
      } else {
        TensorInfo want = *ti;
        want.dims.erase(want.dims.begin());
        want.rank = ti->rank - 1;
        type_ok = [this, want](size_t, uint32_t ty) {
          const TensorInfo* c = tensor_type(ty);
          if (c == nullptr || c->elem_type != want.elem_type) return false;
          if (c->rank_spec || c->shape_spec) return true;  // not known before specialization
          return c->rank == want.rank && c->has_shape && c->dims == want.dims;
        };
        expected_desc = "a tensor " + want.str();
      }
      break;
    }
    default: return fail("its type " + describe_type(in.result_type) + " is not a composite type");
  }
  if (count && *count != static_cast<int64_t>(parts.size())) {
    return fail("has " + std::to_string(parts.size()) + " constituents, its type needs " + std::to_string(*count));
  }
  for (size_t k = 0; k < parts.size(); ++k) {
    const Inst* c = def_before(parts[k], i);
    if (c == nullptr) continue;  // id.* reported
    if (!is_constant_decl(c->opcode()) && c->opcode() != kOpUndef) {
      return fail("constituent " + std::to_string(k) + " " + r_.name(parts[k]) + " is an " + c->name() +
                      ", not a constant",
                  {parts[k]});
    }
    if (in.opcode() == kOpConstantComposite && is_spec_constant(c->opcode())) {
      return fail("constituent " + std::to_string(k) + " " + r_.name(parts[k]) + " is an " + c->name() +
                      ": an OpConstantComposite takes no specialization constants (OpSpecConstantComposite does)",
                  {parts[k]});
    }
    if (!type_ok(k, c->result_type)) {
      return fail("constituent " + std::to_string(k) + " " + r_.name(parts[k]) + " has type " +
                      describe_type(c->result_type) + ", expected " + expected_desc,
                  {parts[k]});
    }
  }
}

void Checker::check_variable(size_t i) {
  const Inst& in = insts_[i];
  const Inst* p = def_before(in.result_type, i);
  if (p == nullptr) return;
  if (p->opcode() != kOpTypePointer || p->word(2) != in.word(3)) {
    r_.add("variable.type", &in,
           "OpVariable " + r_.name(in.result) + ": Result Type " + describe_type(in.result_type) +
               " must be an OpTypePointer of the variable's storage class",
           {in.result_type});
  }
}

void Checker::check_graph_constant(size_t i) {
  const Inst& in = insts_[i];
  const Inst* t = def_before(in.result_type, i);
  if (t != nullptr && t->opcode() != kOpTypeTensorARM) {
    r_.add("graph.constant-type", &in,
           "graph constant " + r_.name(in.result) + " has type " + describe_type(in.result_type) +
               ", not an OpTypeTensorARM",
           {in.result_type});
  }
  uint32_t id = in.word(3);
  auto [it, inserted] = graph_constant_ids_.emplace(id, i);
  if (!inserted) {
    r_.add("graph.constant-id-unique", &in,
           "GraphConstantID " + std::to_string(id) + " of " + r_.name(in.result) + " is already used by " +
               r_.name(insts_[it->second].result) + " at @" + std::to_string(insts_[it->second].offset),
           {in.result, insts_[it->second].result});
  }
}

void Checker::check_ext_inst_set(size_t i) {
  const Inst& in = insts_[i];
  uint32_t set = in.word(3);
  const Inst* d = def_before(set, i);
  if (d == nullptr) return;
  auto it = imports_.find(set);
  if (d->opcode() != kOpExtInstImport || it == imports_.end()) {
    r_.add("exts.import", &in, "Set " + r_.name(set) + " is an " + std::string(d->name()) + ", not an OpExtInstImport",
           {set});
    return;
  }
  const std::string& name = it->second;
  if (name == kTosaSetName) {
    if (in_graph()) check_tosa(i);
    return;
  }
  if (name.rfind("NonSemantic.Graph.DebugInfo.", 0) == 0) {
    check_graph_debuginfo(i);
    return;
  }
  bool graph_set = name.rfind("NonSemantic.", 0) == 0 || name.rfind("Arm.ExperimentalMLOperations.", 0) == 0 ||
                   name == "Arm.MotionEngine.100";
  if (in_graph() && !graph_set && opt_.strict) {
    r_.add("exts.graph-set", &in,
           "OpExtInst of \"" + name + "\" inside graph " + r_.name(insts_[graph_->begin].result) +
               ": graphs take TOSA.001000.1, Arm.ExperimentalMLOperations, Arm.MotionEngine and non-semantic sets",
           {set});
  }
}

void Checker::check_composite_extract(size_t i) {
  const Inst& in = insts_[i];
  uint32_t comp = in.word(3);
  const Inst* c = def_before(comp, i);
  if (c == nullptr) return;
  auto fail = [&](const std::string& why) { r_.add("graph.composite-extract", &in, why, {comp}); };
  if (c->result_type == 0) return fail("Composite " + r_.name(comp) + " is an " + c->name() + ", not a value");
  if (in.size() < 5) return fail("OpCompositeExtract of " + r_.name(comp) + " needs at least one index");
  // Walk the indexes down the type: struct members, array and vector elements. Tensors are not
  // composites for OpCompositeExtract (spirv-val: "Reached non-composite type").
  uint32_t type = c->result_type;
  for (size_t w = 4; w < in.size(); ++w) {
    uint32_t k = in.word(w);
    const Inst* t = def_before(type, i);
    if (t == nullptr) return;
    switch (t->opcode()) {
      case kOpTypeStruct:
        if (k + 2 >= t->size()) {
          return fail("index " + std::to_string(k) + " is out of range: " + describe_type(type) + " has " +
                      std::to_string(t->size() - 2) + " members");
        }
        type = t->word(2 + k);
        break;
      case kOpTypeArray:
      case kOpTypeRuntimeArray:
      case kOpTypeVector: {
        auto len = t->opcode() == kOpTypeArray    ? int_constant(t->word(3), i)
                   : t->opcode() == kOpTypeVector ? std::optional<int64_t>(t->word(3))
                                                  : std::nullopt;
        if (len && k >= *len) {
          return fail("index " + std::to_string(k) + " is out of range: " + describe_type(type) + " has " +
                      std::to_string(*len) + " elements");
        }
        type = t->word(2);
        break;
      }
      default:
        return fail("Composite " + r_.name(comp) + ": index " + std::to_string(k) + " goes into " +
                    describe_type(type) + ", which is not a composite type (reached a non-composite type while "
                    "indexes remain)");
    }
  }
  if (type != in.result_type) {
    fail("Result Type " + describe_type(in.result_type) + " differs from the type " + describe_type(type) +
         " of the element the indexes select");
  }
}

void Checker::check_constant_null(size_t i) {
  const Inst& in = insts_[i];
  const Inst* t = def_before(in.result_type, i);
  if (t == nullptr || t->opcode() != kOpTypeTensorARM) return;
  const TensorInfo* ti = tensor_type(in.result_type);
  if (ti == nullptr) return;  // type.tensor.* reported
  if (!ti->ranked() || (!ti->has_shape && !ti->shape_spec)) {
    r_.add("constant.null", &in,
           "OpConstantNull " + r_.name(in.result) + ": tensor type " + describe_type(in.result_type) +
               " cannot have a null value (it needs a Rank and a Shape)",
           {in.result_type});
  }
}

void Checker::check_replicate(size_t i) {
  const Inst& in = insts_[i];
  const Inst* t = def_before(in.result_type, i);
  uint32_t value = in.word(3);
  const Inst* v = in.opcode() == kOpCompositeConstructReplicateEXT ? def_anywhere(value) : def_before(value, i);
  if (t == nullptr || v == nullptr) return;  // id.* reported
  auto fail = [&](const std::string& why) {
    r_.add("constant.replicate", &in, std::string(in.name()) + " " + r_.name(in.result) + ": " + why, {value});
  };
  if (in.opcode() != kOpCompositeConstructReplicateEXT) {
    bool spec_ok = in.opcode() == kOpSpecConstantCompositeReplicateEXT;
    if (!is_constant_decl(v->opcode()) || (!spec_ok && is_spec_constant(v->opcode())))
      return fail("Value " + r_.name(value) + " is an " + v->name() + ", not a " + (spec_ok ? "" : "non-specialization ") + "constant");
  }
  switch (t->opcode()) {
    case kOpTypeVector:
    case kOpTypeMatrix:
    case kOpTypeArray:
    case kOpTypeTensorARM:
      if (v->result_type != t->word(2)) {
        return fail("Expected Value type to be equal to the result's element type: " + describe_type(v->result_type) +
                    " is not " + describe_type(t->word(2)));
      }
      if (t->opcode() == kOpTypeTensorARM && t->size() < 5)
        return fail("Result tensor type " + describe_type(in.result_type) + " is not a composite type: it has no Shape");
      return;
    case kOpTypeStruct:
      for (size_t k = 2; k < t->size(); ++k) {
        if (t->word(k) != v->result_type)
          return fail("Expected Value type " + describe_type(v->result_type) + " to be equal to every member type of " +
                      describe_type(in.result_type));
      }
      return;
    default: return fail("Result Type " + describe_type(in.result_type) + " is not a composite type");
  }
}

void Checker::check_unique_type(size_t i) {
  const Inst& in = insts_[i];
  switch (in.opcode()) {
    case kOpTypeArray:
    case kOpTypeRuntimeArray:
    case kOpTypeStruct:
    case kOpTypePointer:
    case kOpTypeUntypedPointerKHR:
    case kOpTypeForwardPointer: return;  // aggregates and pointers may be declared twice
    default: break;
  }
  std::string key(reinterpret_cast<const char*>(&in.words[0]), sizeof(uint32_t));
  for (size_t k = 2; k < in.size(); ++k) key.append(reinterpret_cast<const char*>(&in.words[k]), sizeof(uint32_t));
  auto [it, inserted] = types_seen_.emplace(std::move(key), i);
  if (!inserted) {
    const Inst& first = insts_[it->second];
    r_.add("type.unique", &in,
           "Duplicate non-aggregate type declarations are not allowed: " + r_.name(in.result) +
               " repeats the opcode and operands of " + r_.name(first.result) + " at @" + std::to_string(first.offset),
           {in.result, first.result});
  }
}

void Checker::check_required_capabilities(size_t i) {
  const Inst& in = insts_[i];
  auto enabled = [&](std::span<const uint32_t> caps) {
    return caps.empty() || std::any_of(caps.begin(), caps.end(), [&](uint32_t c) { return enabled_caps_.count(c) != 0; });
  };
  auto names = [](std::span<const uint32_t> caps) {
    std::string s;
    for (uint32_t c : caps) {
      const EnumDef* e = find_enumerant(OperandKind::kCapability, c);
      s += (s.empty() ? "" : ", ") + (e ? std::string(e->name) : std::to_string(c));
    }
    return s;
  };
  if (in.def != nullptr && !enabled(in.def->capabilities)) {
    r_.add("capability.required", &in,
           std::string(in.name()) + " requires one of these capabilities: " + names(in.def->capabilities));
  }
  if (in.opcode() == kOpCapability) return;  // declaring a capability needs nothing
  for (const ParsedOperand& op : in.operands) {
    KindCategory cat = kind_category(op.kind);
    if (cat != KindCategory::kValueEnum && cat != KindCategory::kBitEnum) continue;
    uint32_t v = in.word(op.first_word);
    auto check = [&](uint32_t value) {
      const EnumDef* e = find_enumerant(op.kind, value);
      if (e == nullptr || enabled(e->capabilities)) return;
      r_.add("capability.required", &in,
             std::string(operand_kind_name(op.kind)) + " " + e->name + " requires one of these capabilities: " +
                 names(e->capabilities));
    };
    if (cat == KindCategory::kValueEnum) {
      check(v);
    } else {
      for (int bit = 0; bit < 32; ++bit)
        if (v & (uint32_t{1} << bit)) check(uint32_t{1} << bit);
    }
  }
}

void Checker::check_import(size_t i) {
  const Inst& in = insts_[i];
  auto it = imports_.find(in.result);
  if (it == imports_.end()) return;
  const std::string& name = it->second;
  // <prefix><decimal version>, version 1 .. latest.
  auto version_of = [&](const std::string& prefix, const char* set, uint32_t latest, bool graph_debug) {
    if (name.rfind(prefix, 0) != 0) return;
    std::string v = name.substr(prefix.size());
    auto fail = [&](const std::string& why) { r_.add("exts.import-version", &in, "\"" + name + "\": " + why); };
    if (v.empty()) return fail(std::string("Missing ") + set + " import version");
    if (!std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; }) || v.size() > 9)
      return fail(std::string(set) + " import does not encode the version correctly");
    uint32_t n = static_cast<uint32_t>(std::stoul(v));
    if (n == 0 || n > latest) {
      return fail(graph_debug ? std::string(set) + " import version " + std::to_string(n) + " is not supported"
                              : std::string("Unknown ") + set + " import version " + std::to_string(n));
    }
    if (graph_debug && extensions_.count("SPV_ARM_graph") == 0)
      fail(std::string(set) + " requires OpExtension \"SPV_ARM_graph\"");
  };
  version_of("NonSemantic.Graph.DebugInfo.", "NonSemantic.Graph.DebugInfo", 1, true);
  version_of("Arm.ExperimentalMLOperations.", "Arm.ExperimentalMLOperations", 1, false);
}

void Checker::check_tensor_read_write(size_t i) {
  const Inst& in = insts_[i];
  bool read = in.opcode() == kOpTensorReadARM;
  const char* rule = read ? "tensor.read" : "tensor.write";
  auto fail = [&](const std::string& why) { r_.add(rule, &in, std::string(in.name()) + ": " + why); };
  // A scalar type, or an array of one: its scalar type (0 if neither).
  auto scalar_of = [&](uint32_t type) -> uint32_t {
    const Inst* t = def_anywhere(type);
    if (t != nullptr && t->opcode() == kOpTypeArray) t = def_anywhere(t->word(2));
    if (t == nullptr) return 0;
    uint16_t op = t->opcode();
    return op == kOpTypeBool || op == kOpTypeInt || op == kOpTypeFloat ? t->result : 0;
  };
  size_t w = read ? 3 : 1;  // Tensor
  const Inst* tensor = def_anywhere(in.word(w));
  const Inst* coords = def_anywhere(in.word(w + 1));
  if (tensor == nullptr || coords == nullptr) return;  // id.* reported
  if (read && scalar_of(in.result_type) == 0)
    return fail("Expected Result Type to be a scalar type or array of scalar type, got " + describe_type(in.result_type));
  const Inst* tt = def_anywhere(tensor->result_type);
  if (tt == nullptr || tt->opcode() != kOpTypeTensorARM || tt->size() < 4)
    return fail("Expected Tensor to be an OpTypeTensorARM whose Rank is specified, got " + describe_type(tensor->result_type));
  uint32_t elem = tt->word(2);
  if (read && scalar_of(in.result_type) != elem)
    return fail("Expected Result Type to be the same as the Element Type of Tensor (" + describe_type(elem) + ")");
  // Coordinates: an integer array whose Length equals the Rank (when both are known).
  const Inst* ct = def_anywhere(coords->result_type);
  const Inst* ce = ct != nullptr && ct->opcode() == kOpTypeArray ? def_anywhere(ct->word(2)) : nullptr;
  auto rank = int_constant(tt->word(3), insts_.size());
  auto length = ct != nullptr && ct->opcode() == kOpTypeArray ? int_constant(ct->word(3), insts_.size()) : std::nullopt;
  if (ce == nullptr || ce->opcode() != kOpTypeInt || (rank && length && *rank != *length) || (rank && !length))
    return fail("Expected Coordinates to be an array whose Element Type is an integer type and whose Length is equal "
                "to the Rank of Tensor");
  size_t next = w + 2;
  if (!read) {
    const Inst* object = def_anywhere(in.word(w + 2));
    if (object == nullptr) return;
    if (scalar_of(object->result_type) != elem)
      return fail("Expected Object to be a scalar type or array of scalar type that is the same as the Element Type "
                  "of Tensor");
    next = w + 3;
  }
  if (next >= in.size()) return;
  uint32_t flags = in.word(next);
  constexpr uint32_t kOutOfBounds = 0x2, kAvailable = 0x4, kVisible = 0x8, kNonPrivate = 0x10;
  if (read) {
    if (flags & kOutOfBounds) {
      const Inst* oob = next + 1 < in.size() ? def_anywhere(in.word(next + 1)) : nullptr;
      if (oob != nullptr && scalar_of(oob->result_type) != elem)
        return fail("Expected the type of the OutOfBoundsValueARM value to be the same as the Element Type of Tensor");
    }
    if (flags & kAvailable) return fail("MakeElementAvailableARM cannot be used with OpTensorReadARM");
    if ((flags & kVisible) && !(flags & kNonPrivate))
      return fail("MakeElementVisibleARM requires NonPrivateElementARM");
  } else {
    if (flags & kOutOfBounds) return fail("OutOfBoundsValue Tensor Operand not allowed with OpTensorWriteARM");
    if (flags & kVisible) return fail("MakeElementVisibleARM not allowed with OpTensorWriteARM");
    if ((flags & kAvailable) && !(flags & kNonPrivate))
      return fail("MakeElementAvailableARM requires NonPrivateElementARM");
  }
}

void Checker::check_tensor_query_size(size_t i) {
  const Inst& in = insts_[i];
  auto fail = [&](const std::string& why) { r_.add("tensor.query-size", &in, "OpTensorQuerySizeARM: " + why); };
  const Inst* rt = def_anywhere(in.result_type);
  if (rt == nullptr || rt->opcode() != kOpTypeInt) return fail("Expected Result Type to be an integer type scalar");
  const Inst* tensor = def_anywhere(in.word(3));
  const Inst* dim = def_anywhere(in.word(4));
  if (tensor == nullptr || dim == nullptr) return;
  const Inst* tt = def_anywhere(tensor->result_type);
  if (tt == nullptr || tt->opcode() != kOpTypeTensorARM || tt->size() < 4)
    return fail("Expected Tensor to be an OpTypeTensorARM whose Rank is specified");
  const Inst* dt = def_anywhere(dim->result_type);
  if (!is_constant_decl(dim->opcode()) || dt == nullptr || dt->opcode() != kOpTypeInt)
    return fail("Dimension must come from a constant instruction of scalar integer type");
  auto rank = int_constant(tt->word(3), insts_.size());
  auto d = int_constant(in.word(4), insts_.size());
  if (rank && d && (*d < 0 || *d >= *rank))
    fail("Dimension (" + std::to_string(*d) + ") must be less than the Rank of Tensor (" + std::to_string(*rank) + ")");
}

void Checker::check_graph_debuginfo(size_t i) {
  const Inst& in = insts_[i];
  uint32_t number = in.word(4);
  const char* names[] = {"?", "DebugGraph", "DebugOperation", "DebugTensor"};
  std::string what = std::string("NonSemantic.Graph.DebugInfo ") + (number >= 1 && number <= 3 ? names[number] : "?");
  auto fail = [&](const std::string& why) { r_.add("exts.graph-debuginfo", &in, what + ": " + why); };
  const Inst* rt = def_anywhere(in.result_type);
  if (rt == nullptr || rt->opcode() != kOpTypeVoid) return fail("the result type must be an OpTypeVoid");
  auto is_string = [&](size_t w) {
    const Inst* d = w < in.size() ? def_anywhere(in.word(w)) : nullptr;
    return d != nullptr && d->opcode() == kOpString;
  };
  auto is_debug = [&](const Inst* d, uint32_t which) {
    if (d == nullptr || d->opcode() != kOpExtInst || d->size() < 5 || d->word(4) != which) return false;
    auto it = imports_.find(d->word(3));
    return it != imports_.end() && it->second.rfind("NonSemantic.Graph.DebugInfo.", 0) == 0;
  };
  switch (number) {
    case 1: {  // DebugGraph Graph Name
      const Inst* g = def_anywhere(in.word(5));
      if (g == nullptr || g->opcode() != kOpGraphARM) return fail("operand Graph must be a result id of OpGraphARM");
      if (!is_string(6)) return fail("operand Name must be a result id of OpString");
      return;
    }
    case 2: {  // DebugOperation DebugGraph Name Instructions...
      const Inst* dg = def_anywhere(in.word(5));
      if (!is_debug(dg, 1)) return fail("operand DebugGraph must be a result id of NonSemantic.Graph.DebugInfo DebugGraph");
      if (!is_string(6)) return fail("operand Name must be a result id of OpString");
      if (in.size() < 8) return fail("operand Instructions must list at least one instruction");
      auto graph_at = defs_.find(dg->word(5));
      for (size_t w = 7; w < in.size(); ++w) {
        auto d = defs_.find(in.word(w));
        bool inside = d != defs_.end() && graph_at != defs_.end() &&
                      graph_of_[d->second] == static_cast<int>(graph_at->second);
        if (!inside)
          return fail("operand Instructions must be result ids of instructions within the graph described by DebugGraph (" +
                      r_.name(in.word(w)) + " is not)");
      }
      return;
    }
    case 3: {  // DebugTensor Tensor Name [Index]
      const Inst* v = def_anywhere(in.word(5));
      const Inst* t = v != nullptr && v->result_type ? def_anywhere(v->result_type) : nullptr;
      bool tensor = t != nullptr && t->opcode() == kOpTypeTensorARM;
      bool composite = false;
      if (t != nullptr && (t->opcode() == kOpTypeArray || t->opcode() == kOpTypeRuntimeArray)) {
        const Inst* e = def_anywhere(t->word(2));
        composite = e != nullptr && e->opcode() == kOpTypeTensorARM;
      } else if (t != nullptr && t->opcode() == kOpTypeStruct) {
        composite = t->size() > 2;
        for (size_t k = 2; k < t->size(); ++k) {
          const Inst* e = def_anywhere(t->word(k));
          composite = composite && e != nullptr && e->opcode() == kOpTypeTensorARM;
        }
      }
      if (!tensor && !composite)
        return fail("operand Tensor must be a value of OpTypeTensorARM or a composite type whose top-level constituents are OpTypeTensorARM");
      if (!is_string(6)) return fail("operand Name must be a result id of OpString");
      bool has_index = in.size() > 7;
      if (composite && !has_index) return fail("operand Index must be present when Tensor has composite type");
      if (has_index) {
        if (!composite) return fail("operand Tensor must have composite type when Index is present");
        const Inst* idx = def_anywhere(in.word(7));
        const Inst* it = idx != nullptr ? def_anywhere(idx->result_type) : nullptr;
        if (idx == nullptr || idx->opcode() != kOpConstant || it == nullptr || it->opcode() != kOpTypeInt ||
            it->word(2) != 32 || it->word(3) != 0)
          return fail("operand Index must be a result id of 32-bit unsigned OpConstant");
      }
      return;
    }
    default: return;  // the grammar rejected unknown instructions
  }
}

// ---------------------------------------------------------------------------------------------
// Graph definitions

void Checker::begin_graph(size_t i) {
  const Inst& in = insts_[i];
  if (in_graph()) {
    const Inst& open = insts_[graph_->begin];
    r_.add("graph.end", &open,
           "graph " + r_.name(open.result) + " has no OpGraphEndARM before OpGraphARM " + r_.name(in.result) +
               " at @" + std::to_string(in.offset),
           {open.result});
    end_graph(SIZE_MAX);
  }
  graph_.emplace();
  graph_->begin = i;
  const Inst* t = def_before(in.result_type, i);
  if (t != nullptr && t->opcode() != kOpTypeGraphARM) {
    r_.add("graph.type", &in,
           "graph " + r_.name(in.result) + " has Result Type " + describe_type(in.result_type) +
               ", not an OpTypeGraphARM",
           {in.result_type});
  }
  auto gt = graph_types_.find(in.result_type);
  if (gt != graph_types_.end()) graph_->type = &gt->second;
}

void Checker::end_graph(size_t end_index) {
  OpenGraph g = std::move(*graph_);
  graph_.reset();
  const Inst& begin = insts_[g.begin];
  const Inst* at = end_index == SIZE_MAX ? &begin : &insts_[end_index];
  if (!g.any_output) {
    r_.add("graph.output-required", at, "graph " + r_.name(begin.result) + " sets no output (no OpGraphSetOutputARM)",
           {begin.result});
    return;
  }
  if (g.type == nullptr || !opt_.strict) return;
  // An output is complete when set whole, or (arrays) element by element. Only outputs that have
  // an OpGraphSetOutputARM are visited, so the cost follows the graph's size, not the type's.
  auto complete = [&](uint32_t j, const GraphSlot& slot) {
    if (slot.whole) return true;
    const Inst* t = def_anywhere(g.type->types[g.type->num_inputs + j]);
    if (t == nullptr || t->opcode() != kOpTypeArray) return !slot.elements.empty();
    auto len = int_constant(t->word(3), g.begin);
    return !len || static_cast<int64_t>(slot.elements.size()) >= *len;
  };
  size_t done = 0;
  for (const auto& [j, slot] : g.outputs) done += complete(j, slot) ? 1 : 0;
  size_t missing_count = g.type->num_outputs() - done;
  std::vector<std::string> missing;
  constexpr size_t kListed = 8;
  for (uint32_t j = 0; j < g.type->num_outputs() && missing.size() < std::min(missing_count, kListed); ++j) {
    auto it = g.outputs.find(j);
    if (it == g.outputs.end()) {
      missing.push_back(std::to_string(j));
    } else if (!complete(j, it->second)) {
      missing.push_back(std::to_string(j) + " (only " + std::to_string(it->second.elements.size()) + " elements)");
    }
  }
  if (missing_count > missing.size()) missing.push_back("... (" + std::to_string(missing_count) + " in all)");
  if (!missing.empty()) {
    r_.add("graph.all-outputs-set", at,
           "graph " + r_.name(begin.result) + " does not set output" + (missing.size() > 1 ? "s " : " ") +
               join_names(missing),
           {begin.result});
  }
}

void Checker::check_graph_io(size_t i, bool input) {
  const Inst& in = insts_[i];
  const std::string io = input ? "input" : "output";
  auto rule = [&](const char* suffix) { return "graph." + io + "-" + suffix; };
  const Inst& graph = insts_[graph_->begin];
  std::string gname = r_.name(graph.result);
  // Placement.
  // Non-semantic instructions (debug information, OpLine) between them do not count.
  auto non_semantic = [&](size_t k) {
    const Inst& x = insts_[k];
    if (section_of(x) == kAnywhere) return true;
    if (x.opcode() != kOpExtInst) return false;
    auto it = imports_.find(x.word(3));
    return it != imports_.end() && it->second.rfind("NonSemantic.", 0) == 0;
  };
  if (input) {
    size_t p = i - 1;  // i > begin: this is inside a graph
    while (p > graph_->begin && non_semantic(p)) --p;
    uint16_t prev = insts_[p].opcode();
    if (prev != kOpGraphARM && prev != kOpGraphInputARM) {
      r_.add(rule("placement"), &in,
             "OpGraphInputARM must immediately follow OpGraphARM or OpGraphInputARM, not " +
                 std::string(insts_[p].name()));
    }
  } else {
    size_t n = i + 1;
    while (n < insts_.size() && non_semantic(n)) ++n;
    uint16_t next = n < insts_.size() ? insts_[n].opcode() : 0;
    if (next != kOpGraphEndARM && next != kOpGraphSetOutputARM) {
      r_.add(rule("placement"), &in,
             std::string("OpGraphSetOutputARM must immediately precede OpGraphEndARM or OpGraphSetOutputARM, not ") +
                 (n < insts_.size() ? insts_[n].name() : "the end of the module"));
    }
  }
  // Operands: index, optional element index.
  size_t index_word = input ? 3 : 2;
  uint32_t index_id = in.word(index_word);
  std::span<const uint32_t> element_ids = in.words.subspan(std::min(index_word + 1, in.size()));
  if (element_ids.size() > 1) {
    r_.add(rule("element-index"), &in, "at most one ElementIndex may be given, got " + std::to_string(element_ids.size()));
    return;
  }
  // A 32-bit integer; a constant instruction in Vulkan environments. nullopt: not a fixed value.
  bool bad_index = false;
  auto index_value = [&](uint32_t id, const char* what) -> std::optional<int64_t> {
    const Inst* d = def_before(id, i);
    if (d == nullptr) return std::nullopt;  // id.* reported
    const Inst* t = d->result_type ? def_before(d->result_type, i) : nullptr;
    if (t == nullptr || t->opcode() != kOpTypeInt || t->word(2) != 32) {
      r_.add("graph.index-constant", &in, std::string(what) + " " + r_.name(id) + " must be a 32-bit integer", {id});
      bad_index = true;
      return std::nullopt;
    }
    if (env_.vulkan && !is_constant_decl(d->opcode())) {
      r_.add("graph.index-constant", &in,
             std::string(what) + " " + r_.name(id) + " must be the <id> of a constant instruction (VUID-StandaloneSpirv-" +
                 (input ? "OpGraphInputARM-09931" : "OpGraphSetOutputARM-09932") + ")",
             {id});
      bad_index = true;
      return std::nullopt;
    }
    return int_constant(id, i);
  };
  auto index = index_value(index_id, input ? "InputIndex" : "OutputIndex");
  std::optional<int64_t> element;
  if (!element_ids.empty()) element = index_value(element_ids[0], "ElementIndex");
  if (!input) graph_->any_output = true;
  if (bad_index || !index || (!element_ids.empty() && !element)) return;  // not a fixed slot
  if (graph_->type == nullptr) return;
  const GraphTypeInfo& gt = *graph_->type;
  uint32_t count = input ? gt.num_inputs : gt.num_outputs();
  if (*index < 0 || *index >= count) {
    r_.add(rule("index-range"), &in,
           std::string(input ? "InputIndex " : "OutputIndex ") + r_.name(index_id) + " = " + std::to_string(*index) +
               " is out of range: graph " + gname + " has " + std::to_string(count) + " " + io + "s",
           {index_id});
    return;
  }
  auto slot_index = static_cast<uint32_t>(*index);
  uint32_t iface = gt.types[(input ? 0 : gt.num_inputs) + slot_index];
  uint32_t expected = iface;
  const Inst* it = def_anywhere(iface);
  if (element) {
    bool array = it != nullptr && (it->opcode() == kOpTypeArray || it->opcode() == kOpTypeRuntimeArray);
    if (!array) {
      r_.add(rule("element-index"), &in,
             "ElementIndex given but " + io + " " + std::to_string(slot_index) + " of graph " + gname + " has type " +
                 describe_type(iface) + ", not an array of tensors",
             {element_ids[0]});
      return;
    }
    if (it->opcode() == kOpTypeArray) {
      auto len = int_constant(it->word(3), i);
      if (len && (*element < 0 || *element >= *len)) {
        r_.add(rule("element-index"), &in,
               "ElementIndex " + std::to_string(*element) + " is out of range for " + io + " " +
                   std::to_string(slot_index) + " (an array of " + std::to_string(*len) + ")",
               {element_ids[0]});
        return;
      }
    }
    expected = it->word(2);
  }
  // Uniqueness.
  GraphSlot& slot = (input ? graph_->inputs : graph_->outputs)[slot_index];
  bool duplicate = element ? (slot.whole || !slot.elements.insert(static_cast<uint32_t>(*element)).second)
                           : (slot.whole || !slot.elements.empty());
  if (!element) slot.whole = true;
  if (duplicate) {
    r_.add(rule("index-unique"), &in,
           io + " " + std::to_string(slot_index) + (element ? " element " + std::to_string(*element) : "") +
               " of graph " + gname + " is " + (input ? "defined" : "set") + " more than once",
           {index_id});
    return;
  }
  // Type.
  uint32_t actual = in.result_type;
  if (!input) {
    uint32_t value = in.word(1);
    const Inst* v = def_before(value, i);
    if (v == nullptr) return;
    if (v->result_type == 0) {
      r_.add(rule("type"), &in, "Value " + r_.name(value) + " is an " + v->name() + ", not a value", {value});
      return;
    }
    actual = v->result_type;
  }
  if (actual != expected) {
    r_.add(rule("type"), &in,
           std::string(input ? "Result Type " : "Value type ") + describe_type(actual) + " differs from " + io + " " +
               std::to_string(slot_index) + (element ? " element" : "") + " type " + describe_type(expected) +
               " of graph " + gname,
           {actual, expected});
  }
}

// ---------------------------------------------------------------------------------------------
// Driver

void Checker::check_instruction(size_t i) {
  const Inst& in = insts_[i];
  check_required_capabilities(i);
  if (in.result != 0 && is_type_decl(in)) check_unique_type(i);
  switch (in.opcode()) {
    case kOpTypeInt:
    case kOpTypeFloat: check_type_int_float(in); break;
    case kOpTypeArray:
    case kOpTypeRuntimeArray: check_type_array(i); break;
    case kOpTypeStruct:
    case kOpTypePointer: {
      size_t first = in.opcode() == kOpTypeStruct ? 2 : 3;
      for (size_t k = first; k < in.size(); ++k) {
        const Inst* t = def_before(in.word(k), i);
        if (t != nullptr && !is_type_decl(*t)) {
          r_.add("id.kind", &in, std::string(in.name()) + " operand " + r_.name(in.word(k)) + " is an " + t->name() +
                                     ", not a type",
                 {in.word(k)});
        }
      }
      break;
    }
    case kOpTypeTensorARM: check_type_tensor(i); break;
    case kOpConstantNull: check_constant_null(i); break;
    case kOpConstantCompositeReplicateEXT:
    case kOpSpecConstantCompositeReplicateEXT:
    case kOpCompositeConstructReplicateEXT: check_replicate(i); break;
    case kOpExtInstImport: check_import(i); break;
    case kOpTensorReadARM:
    case kOpTensorWriteARM: check_tensor_read_write(i); break;
    case kOpTensorQuerySizeARM: check_tensor_query_size(i); break;
    case kOpTypeGraphARM: check_type_graph(i); break;
    case kOpConstant:
    case kOpConstantTrue:
    case kOpConstantFalse:
    case kOpSpecConstant:
    case kOpSpecConstantTrue:
    case kOpSpecConstantFalse: check_constant(i); break;
    case kOpConstantComposite:
    case kOpSpecConstantComposite: check_constant_composite(i); break;
    case kOpVariable: check_variable(i); break;
    case kOpGraphConstantARM: check_graph_constant(i); break;
    case kOpExtInst: check_ext_inst_set(i); break;
    case kOpCompositeExtract:
      if (in_graph()) check_composite_extract(i);
      break;
    case kOpGraphInputARM:
    case kOpGraphSetOutputARM:
      if (in_graph()) check_graph_io(i, in.opcode() == kOpGraphInputARM);
      break;
    case kOpGraphEndARM:
      if (in_graph()) end_graph(i);
      break;
    default: break;
  }
}

void Checker::run() {
  collect_declarations();
  check_capabilities_and_extensions();
  for (size_t i = 0; i < insts_.size(); ++i) {
    const Inst& in = insts_[i];
    if (in.opcode() == kOpGraphARM) {
      check_layout(i);  // section order, before the graph opens
      begin_graph(i);
    } else {
      graph_of_[i] = in_graph() ? static_cast<int>(graph_->begin) : -1;
      check_layout(i);
    }
    check_references(i);
    check_instruction(i);
  }
  if (in_graph()) {
    const Inst& open = insts_[graph_->begin];
    r_.add("graph.end", &open, "graph " + r_.name(open.result) + " has no OpGraphEndARM", {open.result});
    end_graph(SIZE_MAX);
  }
  if (function_) {
    const Inst& open = insts_[*function_];
    r_.add("layout.function", &open, "function " + r_.name(open.result) + " has no OpFunctionEnd");
  }
  check_entry_points();
  check_module_requirements();
}

}  // namespace validation

namespace {

struct EnvName {
  const char* name;
  validation::TargetEnv env;
};
constexpr EnvName kEnvs[] = {
    {"universal1.0", {0x00010000, false}}, {"universal1.1", {0x00010100, false}}, {"universal1.2", {0x00010200, false}},
    {"universal1.3", {0x00010300, false}}, {"universal1.4", {0x00010400, false}}, {"universal1.5", {0x00010500, false}},
    {"universal1.6", {0x00010600, false}}, {"spv1.0", {0x00010000, false}},       {"spv1.1", {0x00010100, false}},
    {"spv1.2", {0x00010200, false}},       {"spv1.3", {0x00010300, false}},       {"spv1.4", {0x00010400, false}},
    {"spv1.5", {0x00010500, false}},       {"spv1.6", {0x00010600, false}},       {"vulkan1.0", {0x00010000, true}},
    {"vulkan1.1", {0x00010300, true}},     {"vulkan1.1spv1.4", {0x00010400, true}}, {"vulkan1.2", {0x00010500, true}},
    {"vulkan1.3", {0x00010600, true}},     {"vulkan1.4", {0x00010600, true}},
};
constexpr auto kEnvNames = [] {
  std::array<const char*, std::size(kEnvs)> a{};
  for (size_t i = 0; i < a.size(); ++i) a[i] = kEnvs[i].name;
  return a;
}();

}  // namespace

std::span<const char* const> target_environments() { return kEnvNames; }

std::optional<uint32_t> target_environment_version(std::string_view env) {
  for (const EnvName& e : kEnvs)
    if (env == e.name) return e.env.max_version;
  return std::nullopt;
}

std::vector<Diagnostic> validate(std::span<const uint32_t> words, const ValidateOptions& options) {
  const EnvName* env = nullptr;
  for (const EnvName& e : kEnvs)
    if (options.target_env == e.name) env = &e;
  if (env == nullptr) {
    std::string names;
    for (const EnvName& e : kEnvs) names += (names.empty() ? "" : ", ") + std::string(e.name);
    throw Error(ErrorCode::kInvalidArgument, "unknown target environment '" + options.target_env + "' (one of " + names + ")");
  }
  try {
    validation::ParsedModule module;
    if (auto d = validation::parse_module(words, module)) {
      validation::Reporter r(words);
      r.add(std::move(*d));
      std::vector<Diagnostic> out = r.finish();
      if (out[0].offset != 0 && out[0].instruction.empty() && out[0].offset < words.size()) {
        // The stream cannot be split into instructions: describe the offending first word.
        uint32_t w = words[out[0].offset];
        out[0].instruction = "<word count " + std::to_string(w >> 16) + ", opcode " + std::to_string(w & 0xffff) + ">";
      }
      return out;
    }
    validation::Reporter r(words);
    constexpr uint32_t kMaxIdBound = 0x3FFFFF;  // SPIR-V 2.17 "Universal Limits": Result <id> bound
    if (module.header.bound > kMaxIdBound)
      r.add("limits.id-bound", nullptr,
            "the id bound " + std::to_string(module.header.bound) + " is larger than the universal limit 4194303");
    if (module.header.version > env->env.max_version) {
      auto v = [](uint32_t x) { return std::to_string((x >> 16) & 0xff) + "." + std::to_string((x >> 8) & 0xff); };
      r.add("binary.version", nullptr,
            "SPIR-V " + v(module.header.version) + " is newer than target environment " + env->name + " takes (up to " +
                v(env->env.max_version) + ")");
    }
    validation::Checker(module, r, options, env->env).run();
    return r.finish();
  } catch (const std::exception& e) {
    Diagnostic d;
    d.rule = "internal";
    d.message = std::string("validator failure: ") + e.what();
    return {d};
  }
}

}  // namespace weft::spirv
