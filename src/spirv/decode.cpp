// SPIR-V graph module -> IR, following docs/spirv.md ("How Weft reads a module").
//
// The module is validated first, then read in one pass: types and constants are recorded by id as
// they are declared, each OpGraphARM ... OpGraphEndARM range becomes a Graph. The decoder does not
// rely on the validator: every word it reads is bounds-checked and every id it follows is checked
// for what it must be, so a malformed module gives an Error, never a crash or a huge allocation.
#include <algorithm>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "spirv/binary.h"
#include "spirv/codec.h"
#include "weft/spirv.h"
#include "weft/verify.h"

namespace weft::spirv {
namespace {

// Inline tensor constants larger than this are not materialized (a few words can describe a
// huge composite by nesting shared constituents).
constexpr int64_t kMaxInlineElements = int64_t{1} << 22;

enum class DefKind : uint8_t {
  kNone,
  kOther,        // declared, but nothing a graph can use (OpTypeVoid, OpTypePointer, OpVariable ...)
  kTosaSet,      // OpExtInstImport "TOSA.001000.1"
  kOtherSet,     // another OpExtInstImport
  kScalarType,   // dtype
  kOtherScalar,  // OpTypeInt/OpTypeFloat without a TOSA element type
  kTensorType,   // index into tensor_types_
  kArrayType,    // element type, length in `index`
  kRuntimeArray,
  kStructType,     // members in `operands`
  kGraphType,      // `index` inputs, interface types in `operands`
  kConstant,       // scalar constant: dtype, literal words in `operands`
  kBoolConstant,   // index: value
  kComposite,      // constituents in `operands`
  kGraphConstant,  // index: GraphConstantID
  kNull,           // OpConstantNull (every element zero): type in `type`, dtype for scalars
  kReplicate,      // OpConstantCompositeReplicateEXT: the replicated constituent in operands[0]
  kUndef,          // OpUndef: no value a graph can use
  kString,         // OpString: the text in names_[index]
  kDebugSet,       // OpExtInstImport "NonSemantic.Graph.DebugInfo.<n>"
  kMlOpsSet,       // OpExtInstImport "Arm.ExperimentalMLOperations.<n>"
  kSkippedSet,     // another non-semantic set (its instructions are ignored)
  kGraph,
  kValue,        // defined inside a graph body (value_of_ holds its ValueId)
  kStructValue,  // the struct result of FFT2D / RFFT2D (struct_node_ holds its node)
};

struct Def {
  DefKind kind = DefKind::kNone;
  DType dtype = DType::kFp32;
  uint32_t offset = 0;  // word offset of the defining instruction
  uint32_t type = 0;    // result type id (constants, values)
  uint32_t index = 0;
  int32_t name = -1;  // into Decoder::names_
  std::span<const uint32_t> operands;
};

// One OpGraphInputARM / OpGraphSetOutputARM: interface index, element (or -1), the id involved.
struct Port {
  uint32_t index = 0;
  int64_t element = -1;
  uint32_t id = 0;
  const Instruction* inst = nullptr;
  bool operator<(const Port& o) const { return index != o.index ? index < o.index : element < o.element; }
};

// A graph interface from the OpTypeGraphARM: a tensor, or an array of `count` tensors.
struct InterfaceType {
  TensorType type;
  bool array = false;
  uint32_t count = 1;
};

// Inline tensor constants: written out, all zeros, or one value replicated.
bool is_tensor_constant(DefKind k) { return k == DefKind::kComposite || k == DefKind::kNull || k == DefKind::kReplicate; }

class Decoder {
 public:
  Decoder(std::span<const uint32_t> words, std::span<const GraphConstant> constants, std::string_view source)
      : words_(words), constants_(constants), source_(source) {}

  Module run();

 private:
  // ---- Errors ----
  [[noreturn]] void fail(ErrorCode code, uint32_t offset, uint32_t id, const std::string& message) const {
    std::string where = "word " + std::to_string(offset);
    if (id) where += ", %" + std::to_string(id);
    throw Error(code, where + ": " + message, Location{.file = source_, .graph = graph_name_});
  }
  [[noreturn]] void fail(ErrorCode code, const Instruction& inst, uint32_t id, const std::string& message) const {
    fail(code, inst.offset, id, opname(inst) + ": " + message);
  }
  static std::string opname(const Instruction& inst) {
    const InstDef* d = find_instruction(inst.opcode());
    return d ? d->name : "opcode " + std::to_string(inst.opcode());
  }
  static std::string ref(uint32_t id) { return "%" + std::to_string(id); }

  // ---- Words and ids ----
  uint32_t word(const Instruction& inst, size_t i) const {
    if (i >= inst.size())
      fail(ErrorCode::kParse, inst, 0,
           "operand word " + std::to_string(i) + " is missing (the instruction has " + std::to_string(inst.size()) +
               " words)");
    return inst.word(i);
  }
  void expect_size(const Instruction& inst, size_t min, size_t max) const {
    if (inst.size() < min || inst.size() > max)
      fail(ErrorCode::kParse, inst, 0,
           "has " + std::to_string(inst.size()) + " words, expected " + std::to_string(min) +
               (max == min        ? ""
                : max == SIZE_MAX ? " or more"
                                  : " to " + std::to_string(max)));
  }
  Def& def(const Instruction& inst, uint32_t id) {
    if (id == 0 || id >= defs_.size())
      fail(ErrorCode::kVerify, inst, 0, "id " + ref(id) + " is outside the id bound " + std::to_string(defs_.size()));
    return defs_[id];
  }
  Def& define(const Instruction& inst, uint32_t id, DefKind kind) {
    Def& d = def(inst, id);
    if (d.kind != DefKind::kNone) fail(ErrorCode::kVerify, inst, id, "id " + ref(id) + " is defined twice");
    d.kind = kind;
    d.offset = inst.offset;
    return d;
  }
  // A definition of the wanted kind; `what` describes it for the message.
  const Def& expect(const Instruction& inst, uint32_t id, DefKind kind, const char* what) {
    const Def& d = def(inst, id);
    if (d.kind != kind) fail(ErrorCode::kVerify, inst, id, ref(id) + " must be " + what);
    return d;
  }
  const TensorType& tensor_type(const Instruction& inst, uint32_t id) {
    return tensor_types_[expect(inst, id, DefKind::kTensorType, "an OpTypeTensorARM").index];
  }
  // The value of an OpConstant of the 32-bit integer type (indices, ranks, lengths, enumerations).
  uint32_t uint_value(const Instruction& inst, uint32_t id) {
    const Def& d = def(inst, id);
    if (d.kind == DefKind::kNull && d.dtype == DType::kInt32 && def(inst, d.type).kind == DefKind::kScalarType) return 0;
    if (d.kind != DefKind::kConstant || d.dtype != DType::kInt32)
      fail(ErrorCode::kVerify, inst, id, ref(id) + " must be an OpConstant of a 32-bit integer type");
    return d.operands[0];
  }
  std::string name_of(uint32_t id, std::string_view fallback_prefix = "v") const {
    const int32_t name = id < defs_.size() ? defs_[id].name : -1;
    if (name >= 0 && !names_[static_cast<size_t>(name)].empty()) return names_[static_cast<size_t>(name)];
    return std::string(fallback_prefix) + std::to_string(id);
  }

  // ---- Module-level declarations ----
  void declare(const Instruction& inst);
  void scalar_type(const Instruction& inst);
  void tensor_type_decl(const Instruction& inst);
  void constant(const Instruction& inst);

  // ---- Constants -> IR ----
  Tensor composite_tensor(const Instruction& user, uint32_t id);
  void fill(const Instruction& user, uint32_t id, const TensorType& t, size_t dim, uint8_t* out);
  std::vector<int64_t> int_list(const Instruction& user, uint32_t id, const char* what);
  AttrValue attribute(const Instruction& inst, const AttrDef& a, uint32_t id);

  // ---- Graphs ----
  size_t graph(std::span<const Instruction> insts, size_t start);
  InterfaceType interface_type(const Instruction& inst, uint32_t id);
  std::vector<Port> ports(std::span<const Instruction> body, uint16_t opcode,
                          const std::vector<InterfaceType>& interfaces);
  ValueId operand(const Instruction& inst, uint32_t id, bool shape_position);
  ValueId add_value(uint32_t id, TensorType type);
  int add_node(Node node, uint32_t offset, uint32_t id);
  void ext_inst(const Instruction& inst);
  void ml_call(const Instruction& inst);
  void apply_debug_info(const std::vector<const Instruction*>& debug_info, uint32_t graph_id);
  void composite_extract(const Instruction& inst);

  [[noreturn]] void rethrow_verify(const Module& m, const std::vector<Error>& errors) const;

  std::span<const uint32_t> words_;
  std::span<const GraphConstant> constants_;
  std::string source_;
  std::vector<Def> defs_;
  std::vector<std::string> names_;
  std::vector<TensorType> tensor_types_;
  std::unordered_map<uint32_t, const GraphConstant*> constant_by_id_;
  std::optional<ProfileSet> profiles_;
  std::vector<std::pair<uint32_t, std::string>> entry_points_;  // graph id, name
  std::vector<std::pair<uint32_t, std::string>> graph_names_;   // graph id -> decoded name
  Module module_;
  std::unordered_set<std::string> used_graph_names_;

  // Per graph being decoded.
  Graph* graph_ = nullptr;
  std::string graph_name_;
  std::vector<ValueId> value_of_;                                   // id -> ValueId in graph_ (kNoValue: none)
  std::vector<uint32_t> touched_;                                   // ids set in value_of_, reset after the graph
  std::unordered_map<uint64_t, ValueId> constant_values_;           // (id << 1 | shape) -> CONST / CONST_SHAPE output
  std::unordered_map<uint32_t, std::array<uint32_t, 2>> extracts_;  // struct id -> first extract per member
  std::unordered_map<uint32_t, int> struct_node_;                   // struct id -> node index
  std::vector<std::pair<uint32_t, uint32_t>> node_origin_;          // per node: word offset, id
  std::vector<std::pair<std::string, std::vector<std::pair<uint32_t, uint32_t>>>> origins_;  // per graph
};

// ---- Declarations ----

void Decoder::scalar_type(const Instruction& inst) {
  const uint16_t op = inst.opcode();
  const uint32_t id = word(inst, 1);
  uint32_t width = 0, encoding = kNoEncoding;
  if (op == kOpTypeBool) {
    expect_size(inst, 2, 2);
  } else if (op == kOpTypeInt) {
    expect_size(inst, 4, 4);
    width = word(inst, 2);  // signedness (word 3) is not part of the TOSA mapping
  } else {
    expect_size(inst, 3, 4);
    width = word(inst, 2);
    if (inst.size() == 4) encoding = word(inst, 3);
  }
  const ScalarType* s = spirv::scalar_type(op, width, encoding);
  Def& d = define(inst, id, s ? DefKind::kScalarType : DefKind::kOtherScalar);
  if (s) d.dtype = s->dtype;
}

void Decoder::tensor_type_decl(const Instruction& inst) {
  expect_size(inst, 3, 5);
  const uint32_t id = word(inst, 1);
  const Def& elem = def(inst, word(inst, 2));
  if (elem.kind != DefKind::kScalarType)
    fail(ErrorCode::kUnsupported, inst, id, "element type " + ref(word(inst, 2)) + " is not a TOSA element type");
  if (inst.size() < 4) fail(ErrorCode::kUnsupported, inst, id, "unranked tensor types are not supported");
  const uint32_t rank = uint_value(inst, word(inst, 3));
  if (rank > static_cast<uint32_t>(kMaxRank))
    fail(ErrorCode::kUnsupported, inst, id,
         "rank " + std::to_string(rank) + " exceeds MAX_RANK = " + std::to_string(kMaxRank));
  TensorType t{elem.dtype, {}};
  if (inst.size() < 5) {
    if (rank != 0)
      fail(ErrorCode::kUnsupported, inst, id,
           "tensor types without a shape are not supported (graphs have static shapes)");
  } else {
    const uint32_t shape_id = word(inst, 4);
    const Def& shape = def(inst, shape_id);
    if (shape.kind != DefKind::kComposite || shape.operands.size() != rank)
      fail(ErrorCode::kVerify, inst, id,
           "shape " + ref(shape_id) + " must be an OpConstantComposite of " + std::to_string(rank) + " integers");
    for (uint32_t c : shape.operands) {
      const uint32_t dim = uint_value(inst, c);
      if (dim > static_cast<uint32_t>(std::numeric_limits<int32_t>::max()))
        fail(ErrorCode::kUnsupported, inst, id, "dimension " + std::to_string(dim) + " is above INT32_MAX");
      t.shape.push_back(static_cast<int64_t>(dim));
    }
  }
  Def& d = define(inst, id, DefKind::kTensorType);
  d.dtype = elem.dtype;
  d.index = static_cast<uint32_t>(tensor_types_.size());
  tensor_types_.push_back(std::move(t));
}

void Decoder::constant(const Instruction& inst) {
  expect_size(inst, 3, SIZE_MAX);
  const uint32_t type = word(inst, 1);
  const uint32_t id = word(inst, 2);
  const Def& t = def(inst, type);
  switch (inst.opcode()) {
    case kOpConstantNull: {
      expect_size(inst, 3, 3);
      Def& d = define(inst, id, DefKind::kNull);
      d.type = type;
      d.dtype = t.dtype;
      return;
    }
    case kOpConstantCompositeReplicateEXT:
    case kOpSpecConstantCompositeReplicateEXT: {
      expect_size(inst, 4, 4);
      Def& d = define(inst, id, DefKind::kReplicate);
      d.type = type;
      d.operands = inst.words.subspan(3);
      return;
    }
    case kOpUndef: {
      Def& d = define(inst, id, DefKind::kUndef);
      d.type = type;
      return;
    }
    case kOpSpecConstant:  // specialization constants: their default values (Weft does not specialize)
    case kOpConstant: {
      if (t.kind != DefKind::kScalarType || t.dtype == DType::kBool)
        fail(ErrorCode::kVerify, inst, id,
             "the type " + ref(type) + " of an OpConstant must be a numeric TOSA element type");
      expect_size(inst, 3 + literal_words(t.dtype), 3 + literal_words(t.dtype));
      Def& d = define(inst, id, DefKind::kConstant);
      d.dtype = t.dtype;
      d.type = type;
      d.operands = inst.words.subspan(3);
      return;
    }
    case kOpSpecConstantTrue:
    case kOpSpecConstantFalse:
    case kOpConstantTrue:
    case kOpConstantFalse: {
      expect_size(inst, 3, 3);
      if (t.kind != DefKind::kScalarType || t.dtype != DType::kBool)
        fail(ErrorCode::kVerify, inst, id, "the type " + ref(type) + " must be OpTypeBool");
      Def& d = define(inst, id, DefKind::kBoolConstant);
      d.dtype = DType::kBool;
      d.type = type;
      d.index = inst.opcode() == kOpConstantTrue || inst.opcode() == kOpSpecConstantTrue;
      return;
    }
    case kOpSpecConstantComposite:
    case kOpConstantComposite: {
      Def& d = define(inst, id, DefKind::kComposite);
      d.type = type;
      d.operands = inst.words.subspan(3);
      return;
    }
    default: {  // OpGraphConstantARM
      expect_size(inst, 4, 4);
      if (t.kind != DefKind::kTensorType)
        fail(ErrorCode::kVerify, inst, id, "the type " + ref(type) + " of a graph constant must be an OpTypeTensorARM");
      Def& d = define(inst, id, DefKind::kGraphConstant);
      d.type = type;
      d.index = word(inst, 3);
      return;
    }
  }
}

void Decoder::declare(const Instruction& inst) {
  switch (inst.opcode()) {
    case kOpNop:
    case kOpSource:
    case kOpSourceExtension:
    case kOpLine:
    case kOpNoLine:
    case kOpMemberName:
    case kOpCapability:
    case kOpExtension:
    case kOpMemoryModel:
    case kOpDecorate:
    case kOpMemberDecorate:
      return;
    case kOpName: {
      const uint32_t id = word(inst, 1);
      def(inst, id).name = static_cast<int32_t>(names_.size());
      names_.push_back(read_string(inst, 2, nullptr));
      return;
    }
    case kOpModuleProcessed: {
      const std::string s = read_string(inst, 1, nullptr);
      if (!s.starts_with(kProfilesMarker)) return;
      ProfileSet set = 0;
      std::string_view rest = std::string_view(s).substr(kProfilesMarker.size());
      while (!rest.empty()) {
        const size_t plus = rest.find('+');
        const std::string_view item = rest.substr(0, plus);
        const std::optional<ProfileSet> p = parse_profile(item);
        if (!p) fail(ErrorCode::kParse, inst, 0, "unknown profile '" + std::string(item) + "' in \"" + s + "\"");
        set |= *p;
        rest = plus == std::string_view::npos ? std::string_view() : rest.substr(plus + 1);
      }
      profiles_ = set;
      return;
    }
    case kOpString: {
      Def& d = define(inst, word(inst, 1), DefKind::kString);
      d.index = static_cast<uint32_t>(names_.size());
      names_.push_back(read_string(inst, 2, nullptr));
      return;
    }
    case kOpExtInstImport: {
      const uint32_t id = word(inst, 1);
      const std::string set = read_string(inst, 2, nullptr);
      DefKind kind = set == kTosaSetName                                    ? DefKind::kTosaSet
                     : set.starts_with("NonSemantic.Graph.DebugInfo.")       ? DefKind::kDebugSet
                     : set.starts_with("Arm.ExperimentalMLOperations.")      ? DefKind::kMlOpsSet
                     : set.starts_with("NonSemantic.")                       ? DefKind::kSkippedSet
                                                                             : DefKind::kOtherSet;
      define(inst, id, kind);
      return;
    }
    case kOpTypeVoid:
    case kOpTypePointer:
      define(inst, word(inst, 1), DefKind::kOther);
      return;
    case kOpVariable:
      define(inst, word(inst, 2), DefKind::kOther);
      return;
    case kOpTypeBool:
    case kOpTypeInt:
    case kOpTypeFloat:
      scalar_type(inst);
      return;
    case kOpTypeTensorARM:
      tensor_type_decl(inst);
      return;
    case kOpTypeArray: {
      expect_size(inst, 4, 4);
      const uint32_t length = uint_value(inst, word(inst, 3));
      Def& d = define(inst, word(inst, 1), DefKind::kArrayType);
      d.type = word(inst, 2);
      d.index = length;
      return;
    }
    case kOpTypeRuntimeArray:
      define(inst, word(inst, 1), DefKind::kRuntimeArray);
      return;
    case kOpTypeStruct:
      define(inst, word(inst, 1), DefKind::kStructType).operands = inst.words.subspan(2);
      return;
    case kOpTypeGraphARM: {
      expect_size(inst, 3, SIZE_MAX);
      Def& d = define(inst, word(inst, 1), DefKind::kGraphType);
      d.index = word(inst, 2);
      d.operands = inst.words.subspan(3);
      if (d.index > d.operands.size())
        fail(ErrorCode::kVerify, inst, word(inst, 1),
             "declares " + std::to_string(d.index) + " inputs but lists " + std::to_string(d.operands.size()) +
                 " types");
      return;
    }
    case kOpConstant:
    case kOpConstantTrue:
    case kOpConstantFalse:
    case kOpConstantComposite:
    case kOpConstantNull:
    case kOpConstantCompositeReplicateEXT:
    case kOpSpecConstant:
    case kOpSpecConstantTrue:
    case kOpSpecConstantFalse:
    case kOpSpecConstantComposite:
    case kOpSpecConstantCompositeReplicateEXT:
    case kOpUndef:
    case kOpGraphConstantARM:
      constant(inst);
      return;
    case kOpGraphEntryPointARM: {
      size_t next = 0;
      std::string name = read_string(inst, 2, &next);
      entry_points_.emplace_back(word(inst, 1), std::move(name));
      return;
    }
    default:
      // Everything else (shader types, decorations, non-semantic instructions, ...) is carried by
      // the module but not part of a graph: a graph that uses such an id is refused at that use.
      if (const InstDef* d = find_instruction(inst.opcode())) {
        for (const OperandDef& o : d->operands) {
          if (o.kind == OperandKind::kIdResult) {
            // The result id is the word after the result type, if there is one.
            const bool typed = !d->operands.empty() && d->operands[0].kind == OperandKind::kIdResultType;
            define(inst, word(inst, typed ? 2 : 1), DefKind::kOther);
            break;
          }
        }
      }
      return;
  }
}

// ---- Constants ----

// Writes the elements of the tensor constant `id` (of type `t` from dimension `dim` on) to `out`.
void Decoder::fill(const Instruction& user, uint32_t id, const TensorType& t, size_t dim, uint8_t* out) {
  const Def& d = def(user, id);
  const auto count = static_cast<size_t>(t.shape[dim]);
  const size_t elem_size = storage_size(t.dtype);
  size_t sub_bytes = elem_size;
  for (size_t k = dim + 1; k < t.shape.size(); ++k) sub_bytes *= static_cast<size_t>(t.shape[k]);
  if (d.kind == DefKind::kNull) return;  // zeros: `out` starts zero-filled
  if (d.kind == DefKind::kReplicate) {
    // One constituent repeated: a scalar of the element type (any rank, as spirv-val takes it) or
    // a sub-tensor of the remaining dimensions.
    const uint32_t c = d.operands[0];
    const Def& e = def(user, c);
    if (e.kind == DefKind::kConstant || e.kind == DefKind::kBoolConstant ||
        (e.kind == DefKind::kNull && def(user, e.type).kind == DefKind::kScalarType)) {
      if (e.dtype != t.dtype)
        fail(ErrorCode::kVerify, d.offset, id, "the replicated value " + ref(c) + " must be a " + dtype_spec_name(t.dtype));
      uint8_t one[8] = {};
      if (e.kind == DefKind::kBoolConstant) one[0] = static_cast<uint8_t>(e.index);
      if (e.kind == DefKind::kConstant) unpack_literal(t.dtype, e.operands, one);
      const size_t n = count * (sub_bytes / elem_size);
      for (size_t i = 0; i < n; ++i) std::memcpy(out + i * elem_size, one, elem_size);
      return;
    }
    if (dim + 1 == t.shape.size()) fail(ErrorCode::kVerify, d.offset, id, "the replicated value " + ref(c) + " must be a scalar constant");
    fill(user, c, t, dim + 1, out);
    for (size_t i = 1; i < count; ++i) std::memcpy(out + i * sub_bytes, out, sub_bytes);
    return;
  }
  if (d.kind != DefKind::kComposite)
    fail(ErrorCode::kVerify, user, id, ref(id) + " must be a tensor constant (OpConstantComposite, OpConstantNull or OpConstantCompositeReplicateEXT)");
  if (d.operands.size() != count)
    fail(ErrorCode::kVerify, d.offset, id,
         "a tensor constant of shape " +
             shape_str(Shape(t.shape.begin() + static_cast<ptrdiff_t>(dim), t.shape.end())) + " needs " +
             std::to_string(count) + " constituents, it has " + std::to_string(d.operands.size()));
  if (dim + 1 == t.shape.size()) {
    for (size_t i = 0; i < count; ++i) {
      const uint32_t c = d.operands[i];
      const Def& e = def(user, c);
      if (e.kind == DefKind::kNull && e.dtype == t.dtype && def(user, e.type).kind == DefKind::kScalarType) continue;
      if ((e.kind != DefKind::kConstant && e.kind != DefKind::kBoolConstant) || e.dtype != t.dtype)
        fail(ErrorCode::kVerify, d.offset, id,
             "constituent " + ref(c) + " must be a scalar constant of type " + dtype_spec_name(t.dtype));
      if (e.kind == DefKind::kBoolConstant) {
        out[i] = static_cast<uint8_t>(e.index);
      } else {
        unpack_literal(t.dtype, e.operands, out + i * elem_size);
      }
    }
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    const uint32_t c = d.operands[i];
    const Def& e = def(user, c);
    const bool tensor_constant = e.kind == DefKind::kComposite || e.kind == DefKind::kNull || e.kind == DefKind::kReplicate;
    if (!tensor_constant || def(user, e.type).kind != DefKind::kTensorType ||
        tensor_types_[def(user, e.type).index] !=
            TensorType{t.dtype, Shape(t.shape.begin() + static_cast<ptrdiff_t>(dim) + 1, t.shape.end())})
      fail(ErrorCode::kVerify, d.offset, id,
           "constituent " + ref(c) + " must be a tensor constant of the remaining dimensions");
    fill(user, c, t, dim + 1, out + i * sub_bytes);
  }
}

Tensor Decoder::composite_tensor(const Instruction& user, uint32_t id) {
  const Def& d = def(user, id);
  const TensorType& t = tensor_type(user, d.type);
  if (t.shape.empty())
    fail(ErrorCode::kVerify, d.offset, id, "a rank-0 tensor constant cannot be an inline constant");
  int64_t n = 1;
  for (int64_t dim : t.shape) {
    if (dim > kMaxInlineElements || (n *= dim) > kMaxInlineElements)
      fail(ErrorCode::kUnsupported, d.offset, id,
           "inline tensor constant " + t.str() + " has more than " + std::to_string(kMaxInlineElements) +
               " elements (use OpGraphConstantARM)");
  }
  Tensor result = Tensor::zeros(t);
  fill(user, id, t, 0, result.mutable_bytes());
  return result;
}

std::vector<int64_t> Decoder::int_list(const Instruction& user, uint32_t id, const char* what) {
  const Def& d = def(user, id);
  if (!is_tensor_constant(d.kind) || def(user, d.type).kind != DefKind::kTensorType ||
      tensor_types_[def(user, d.type).index].dtype != DType::kInt32 ||
      tensor_types_[def(user, d.type).index].rank() != 1)
    fail(ErrorCode::kVerify, user, id, std::string(what) + " " + ref(id) + " must be a rank-1 i32 tensor constant");
  Tensor t = composite_tensor(user, id);
  std::vector<int64_t> r(static_cast<size_t>(t.num_elements()));
  for (size_t i = 0; i < r.size(); ++i) r[i] = t.data<int32_t>()[i];
  return r;
}

AttrValue Decoder::attribute(const Instruction& inst, const AttrDef& a, uint32_t id) {
  const Def& d = def(inst, id);
  const std::string what = std::string("attribute ") + a.name;
  switch (a.kind) {
    case AttrKind::kInt:
      return int64_t{static_cast<int32_t>(uint_value(inst, id))};
    case AttrKind::kAccType:
    case AttrKind::kNanMode:
    case AttrKind::kResizeMode:
    case AttrKind::kRoundingMode:
      return int64_t{uint_value(inst, id)};
    case AttrKind::kBool:
      if (d.kind == DefKind::kNull && d.dtype == DType::kBool) return false;
      if (d.kind != DefKind::kBoolConstant)
        fail(ErrorCode::kVerify, inst, id, what + " " + ref(id) + " must be OpConstantTrue or OpConstantFalse");
      return d.index != 0;
    case AttrKind::kIntList:
      return int_list(inst, id, what.c_str());
    case AttrKind::kScalar: {
      if (d.kind == DefKind::kNull && def(inst, d.type).kind == DefKind::kScalarType) return Tensor::zeros(TensorType{d.dtype, {}});
      if (d.kind != DefKind::kConstant && d.kind != DefKind::kBoolConstant)
        fail(ErrorCode::kVerify, inst, id, what + " " + ref(id) + " must be a scalar constant");
      Tensor t = Tensor::zeros(TensorType{d.dtype, {}});
      if (d.kind == DefKind::kBoolConstant) {
        t.mutable_bytes()[0] = static_cast<uint8_t>(d.index);
      } else {
        unpack_literal(d.dtype, d.operands, t.mutable_bytes());
      }
      return t;
    }
    default:
      fail(ErrorCode::kInternal, inst, id, what + " has no SPIR-V encoding");
  }
}

// ---- Graphs ----

ValueId Decoder::add_value(uint32_t id, TensorType type) {
  ValueId v = graph_->add_value(graph_->unique_name(name_of(id)), std::move(type));
  return v;
}

int Decoder::add_node(Node node, uint32_t offset, uint32_t id) {
  node_origin_.emplace_back(offset, id);
  return graph_->add_node(std::move(node));
}

InterfaceType Decoder::interface_type(const Instruction& inst, uint32_t id) {
  const Def& d = def(inst, id);
  if (d.kind == DefKind::kTensorType) return InterfaceType{tensor_types_[d.index], false, 1};
  if (d.kind == DefKind::kArrayType) {
    if (d.index == 0) fail(ErrorCode::kVerify, inst, id, "tensor array interface " + ref(id) + " has length 0");
    if (d.index > words_.size())  // each element needs its own OpGraphInputARM / OpGraphSetOutputARM
      fail(ErrorCode::kUnsupported, inst, id,
           "tensor array interface " + ref(id) + " of " + std::to_string(d.index) +
               " elements is longer than the module");
    return InterfaceType{tensor_type(inst, d.type), true, d.index};
  }
  if (d.kind == DefKind::kRuntimeArray)
    fail(ErrorCode::kUnsupported, inst, id,
         "OpTypeRuntimeArray interface " + ref(id) + " is not supported (graphs have static shapes)");
  fail(ErrorCode::kVerify, inst, id, "graph interface type " + ref(id) + " must be a tensor or an array of tensors");
}

// The OpGraphInputARM or OpGraphSetOutputARM instructions of a body, sorted by (index, element),
// checked against the graph's interfaces.
std::vector<Port> Decoder::ports(std::span<const Instruction> body, uint16_t opcode,
                                 const std::vector<InterfaceType>& interfaces) {
  const bool input = opcode == kOpGraphInputARM;
  const size_t first = input ? 3 : 2;  // InputIndex after the result; OutputIndex after the value
  std::vector<Port> r;
  for (const Instruction& inst : body) {
    if (inst.opcode() != opcode) continue;
    expect_size(inst, first + 1, first + 2);
    Port p;
    p.inst = &inst;
    p.id = word(inst, input ? 2 : 1);
    p.index = uint_value(inst, word(inst, first));
    if (p.index >= interfaces.size())
      fail(ErrorCode::kVerify, inst, p.id,
           "index " + std::to_string(p.index) + " is out of range: the graph has " + std::to_string(interfaces.size()) +
               (input ? " inputs" : " outputs"));
    const InterfaceType& itf = interfaces[p.index];
    if (inst.size() > first + 1) p.element = uint_value(inst, word(inst, first + 1));
    if (itf.array != (p.element >= 0))
      fail(ErrorCode::kVerify, inst, p.id,
           itf.array ? "interface " + std::to_string(p.index) + " is a tensor array: ElementIndex is required"
                     : "interface " + std::to_string(p.index) + " is not an array: ElementIndex must be absent");
    if (p.element >= static_cast<int64_t>(itf.count))
      fail(ErrorCode::kVerify, inst, p.id,
           "ElementIndex " + std::to_string(p.element) + " is out of range: the array has " +
               std::to_string(itf.count) + " elements");
    r.push_back(p);
  }
  std::stable_sort(r.begin(), r.end());
  for (size_t i = 1; i < r.size(); ++i) {
    if (!(r[i - 1] < r[i]))
      fail(ErrorCode::kVerify, *r[i].inst, r[i].id,
           std::string(input ? "input" : "output") + " index " + std::to_string(r[i].index) +
               (r[i].element >= 0 ? " element " + std::to_string(r[i].element) : "") + " appears twice");
  }
  return r;
}

// The value of operand `id` in the current graph; constants become CONST / CONST_SHAPE nodes at
// their first use.
ValueId Decoder::operand(const Instruction& inst, uint32_t id, bool shape_position) {
  const Def& d = def(inst, id);
  if (d.kind == DefKind::kValue && value_of_[id] != kNoValue) return value_of_[id];
  if (!is_tensor_constant(d.kind) && d.kind != DefKind::kGraphConstant) {
    if (d.kind == DefKind::kUndef)
      fail(ErrorCode::kUnsupported, inst, id, ref(id) + " is an OpUndef: a graph operand needs a defined value");
    if (d.kind == DefKind::kStructValue)
      fail(ErrorCode::kVerify, inst, id, "the two-output result " + ref(id) + " must be read with OpCompositeExtract");
    fail(ErrorCode::kVerify, inst, id, ref(id) + " is not a value of this graph (not defined before this use)");
  }
  const uint64_t key = uint64_t{id} << 1 | static_cast<uint64_t>(shape_position);
  if (auto it = constant_values_.find(key); it != constant_values_.end()) return it->second;
  Node node;
  TensorType type;
  if (shape_position) {
    if (!is_tensor_constant(d.kind))
      fail(ErrorCode::kVerify, inst, id, "shape operand " + ref(id) + " must be an inline tensor constant");
    std::vector<int64_t> values = int_list(inst, id, "shape operand");
    type = TensorType{DType::kShape, {static_cast<int64_t>(values.size())}};
    node.op = Op::CONST_SHAPE;
    node.attrs.emplace_back(std::move(values));
  } else if (is_tensor_constant(d.kind)) {
    Tensor t = composite_tensor(inst, id);
    type = t.type();
    node.op = Op::CONST;
    node.attrs.emplace_back(std::move(t));
  } else {
    type = tensor_type(inst, d.type);
    auto it = constant_by_id_.find(d.index);
    if (it == constant_by_id_.end())
      fail(
          ErrorCode::kNotFound, d.offset, id,
          "OpGraphConstantARM: no data for GraphConstantID " + std::to_string(d.index) + " (" + name_of(id, "%") + ")");
    const Tensor& t = it->second->tensor;
    if (t.type() != type || !t.valid())
      fail(ErrorCode::kVerify, d.offset, id,
           "OpGraphConstantARM: the data for GraphConstantID " + std::to_string(d.index) + " is " + t.type().str() +
               " but the constant is declared " + type.str());
    node.op = Op::CONST;
    node.attrs.emplace_back(t);
  }
  node.outputs.push_back(add_value(id, type));
  add_node(std::move(node), d.offset, id);
  const ValueId v = graph_->nodes().back().outputs[0];
  constant_values_.emplace(key, v);
  return v;
}

void Decoder::ext_inst(const Instruction& inst) {
  expect_size(inst, 5, SIZE_MAX);
  const uint32_t type = word(inst, 1);
  const uint32_t id = word(inst, 2);
  const DefKind set = def(inst, word(inst, 3)).kind;
  if (set != DefKind::kTosaSet)
    fail(ErrorCode::kUnsupported, inst, id,
         set == DefKind::kOtherSet ? "only the TOSA.001000.1 instruction set is supported"
                                   : ref(word(inst, 3)) + " is not an OpExtInstImport");
  const std::optional<Op> op = tosa_op_from_opcode(word(inst, 4));
  if (!op) fail(ErrorCode::kVerify, inst, id, "unknown TOSA.001000.1 instruction " + std::to_string(word(inst, 4)));
  const OpDef& d = op_def(*op);
  const size_t given = inst.size() - 5;
  const size_t fixed = d.attrs.size() + d.inputs.size() - (d.has_list_input() ? 1 : 0);
  if (d.has_list_input() ? given < fixed : given != fixed)
    fail(ErrorCode::kVerify, inst, id,
         std::string(d.name) + " takes " + std::to_string(fixed) + (d.has_list_input() ? " or more" : "") +
             " operands (attributes, then inputs), the instruction has " + std::to_string(given));
  Node node;
  node.op = *op;
  for (size_t i = 0; i < d.attrs.size(); ++i) node.attrs.push_back(attribute(inst, d.attrs[i], word(inst, 5 + i)));
  for (size_t k = 0; k < given - d.attrs.size(); ++k) {
    const ArgDef& a = d.inputs[std::min(k, d.inputs.size() - 1)];
    node.inputs.push_back(operand(inst, word(inst, 5 + d.attrs.size() + k), a.kind == ArgKind::kShape));
  }
  Def& result = define(inst, id, d.outputs.size() == 2 ? DefKind::kStructValue : DefKind::kValue);
  result.type = type;
  if (d.outputs.size() == 2) {
    const Def& t = def(inst, type);
    if (t.kind != DefKind::kStructType || t.operands.size() != 2)
      fail(ErrorCode::kVerify, inst, id, std::string(d.name) + " returns an OpTypeStruct of its two output tensors");
    struct_node_[id] = static_cast<int>(graph_->nodes().size());
    node.name = result.name >= 0 ? names_[static_cast<size_t>(result.name)] : std::string();
    const std::array<uint32_t, 2> extract = extracts_.count(id) ? extracts_[id] : std::array<uint32_t, 2>{0, 0};
    for (size_t k = 0; k < 2; ++k) {
      const TensorType& tt = tensor_type(inst, t.operands[k]);
      const uint32_t named = extract[k] ? extract[k] : id;
      std::string base = extract[k] ? name_of(named) : name_of(id) + "_" + std::to_string(k);
      node.outputs.push_back(graph_->add_value(graph_->unique_name(base), tt));
    }
  } else {
    node.outputs.push_back(add_value(id, tensor_type(inst, type)));
    value_of_[id] = node.outputs[0];
    touched_.push_back(id);
  }
  add_node(std::move(node), inst.offset, id);
}

// Arm.ExperimentalMLOperations CALL <opcode> <parameters...>: a CUSTOM node of domain
// "Arm.ExperimentalMLOperations" named by the opcode; its tensor parameters are the node's inputs.
void Decoder::ml_call(const Instruction& inst) {
  expect_size(inst, 6, SIZE_MAX);
  const uint32_t type = word(inst, 1);
  const uint32_t id = word(inst, 2);
  if (word(inst, 4) != 0)
    fail(ErrorCode::kVerify, inst, id, "unknown Arm.ExperimentalMLOperations instruction " + std::to_string(word(inst, 4)));
  if (def(inst, type).kind != DefKind::kTensorType)
    fail(ErrorCode::kUnsupported, inst, id,
         "Arm.ExperimentalMLOperations CALL " + std::to_string(word(inst, 5)) +
             ": only a single tensor result can be a CUSTOM node");
  Node node;
  node.op = Op::CUSTOM;
  node.attrs = make_attrs(Op::CUSTOM, {{"operator_name", "CALL_" + std::to_string(word(inst, 5))},
                                       {"domain_name", std::string(kMlOpsDomain)},
                                       {"implementation_attrs", std::string()}});
  for (size_t k = 6; k < inst.size(); ++k) node.inputs.push_back(operand(inst, word(inst, k), false));
  Def& result = define(inst, id, DefKind::kValue);
  result.type = type;
  node.outputs.push_back(add_value(id, tensor_type(inst, type)));
  value_of_[id] = node.outputs[0];
  touched_.push_back(id);
  add_node(std::move(node), inst.offset, id);
}

// NonSemantic.Graph.DebugInfo: DebugGraph names the graph (unless OpName did), DebugOperation
// labels the nodes of the instructions it lists, DebugTensor names a value (an OpName wins).
void Decoder::apply_debug_info(const std::vector<const Instruction*>& debug_info, uint32_t graph_id) {
  auto text = [&](const Instruction& inst, size_t w) -> std::optional<std::string> {
    const Def& s = def(inst, word(inst, w));
    if (s.kind != DefKind::kString) return std::nullopt;
    return names_[s.index];
  };
  std::unordered_map<uint32_t, int> node_of;  // result id -> node index
  for (size_t n = 0; n < node_origin_.size(); ++n) node_of.emplace(node_origin_[n].second, static_cast<int>(n));
  for (const Instruction* inst : debug_info) {
    if (inst->size() < 7) continue;
    switch (inst->word(4)) {
      case 2: {  // DebugOperation DebugGraph Name Instructions...
        std::optional<std::string> name = text(*inst, 6);
        if (!name || name->empty()) break;
        for (size_t w = 7; w < inst->size(); ++w) {
          auto it = node_of.find(inst->word(w));
          if (it != node_of.end() && graph_->node(it->second).name.empty()) graph_->mutable_node(it->second).name = *name;
        }
        break;
      }
      case 3: {  // DebugTensor Tensor Name [Index]
        const uint32_t tensor = inst->word(5);
        std::optional<std::string> name = text(*inst, 6);
        if (!name || name->empty() || inst->size() > 7 || tensor >= value_of_.size()) break;
        const ValueId v = value_of_[tensor];
        if (v == kNoValue || defs_[tensor].name >= 0) break;
        if (!graph_->find_value(*name)) graph_->rename_value(v, *name);
        break;
      }
      default: break;  // DebugGraph: the graph is named before its body is read
    }
  }
  (void)graph_id;
}

void Decoder::composite_extract(const Instruction& inst) {
  expect_size(inst, 5, 5);
  const uint32_t id = word(inst, 2);
  const uint32_t composite = word(inst, 3);
  const uint32_t member = word(inst, 4);
  const Def& c = def(inst, composite);
  auto node = struct_node_.find(composite);
  if (c.kind != DefKind::kStructValue || node == struct_node_.end())
    fail(ErrorCode::kVerify, inst, id, ref(composite) + " must be the result of FFT2D or RFFT2D in this graph");
  if (member > 1) fail(ErrorCode::kVerify, inst, id, "member index " + std::to_string(member) + " must be 0 or 1");
  const Node& n = graph_->node(node->second);
  const ValueId v = n.outputs[member];
  if (tensor_type(inst, word(inst, 1)) != graph_->value(v).type)
    fail(ErrorCode::kVerify, inst, id, "result type differs from member " + std::to_string(member) + " of the struct");
  Def& d = define(inst, id, DefKind::kValue);
  d.type = word(inst, 1);
  value_of_[id] = v;
  touched_.push_back(id);
}

size_t Decoder::graph(std::span<const Instruction> insts, size_t start) {
  const Instruction& head = insts[start];
  expect_size(head, 3, 3);
  const uint32_t id = word(head, 2);
  const Def& type = expect(head, word(head, 1), DefKind::kGraphType, "an OpTypeGraphARM");
  size_t end = start + 1;
  while (end < insts.size() && insts[end].opcode() != kOpGraphEndARM) ++end;
  if (end == insts.size()) fail(ErrorCode::kVerify, head, id, "the graph has no OpGraphEndARM");
  const std::span<const Instruction> body = insts.subspan(start + 1, end - start - 1);

  // Name: OpName, else the entry point's name, else graph_<id>; unique in the module.
  std::string name = def(head, id).name >= 0 ? name_of(id) : std::string();
  if (name.empty()) {  // a NonSemantic.Graph.DebugInfo DebugGraph of this graph
    for (const Instruction& inst : body) {
      if (inst.opcode() == kOpExtInst && inst.size() >= 7 && inst.word(4) == 1 && inst.word(5) == id &&
          def(inst, inst.word(3)).kind == DefKind::kDebugSet && def(inst, inst.word(6)).kind == DefKind::kString)
        name = names_[def(inst, inst.word(6)).index];
    }
  }
  if (name.empty()) {
    for (const auto& [g, n] : entry_points_)
      if (g == id && !n.empty()) name = n;
  }
  if (name.empty()) name = "graph_" + std::to_string(id);
  const std::string base = name;
  for (int k = 1; used_graph_names_.count(name); ++k) name = base + "_" + std::to_string(k);
  used_graph_names_.insert(name);
  define(head, id, DefKind::kGraph);
  graph_names_.emplace_back(id, name);
  graph_name_ = name;
  Graph& g = module_.add_graph(Graph(name));
  graph_ = &g;
  node_origin_.clear();
  constant_values_.clear();
  extracts_.clear();
  struct_node_.clear();

  std::vector<InterfaceType> inputs, outputs;
  for (size_t i = 0; i < type.operands.size(); ++i)
    (i < type.index ? inputs : outputs).push_back(interface_type(head, type.operands[i]));

  // Which OpCompositeExtract names each output of a two-output instruction.
  for (const Instruction& inst : body) {
    if (inst.opcode() != kOpCompositeExtract || inst.size() != 5 || inst.word(4) > 1 || inst.word(2) >= defs_.size())
      continue;
    uint32_t& first = extracts_[inst.word(3)][inst.word(4)];
    if (!first) first = inst.word(2);
  }

  // Inputs in (index, element) order; interfaces without OpGraphInputARM still get a value.
  const std::vector<Port> in_ports = ports(body, kOpGraphInputARM, inputs);
  size_t next_port = 0;
  for (uint32_t i = 0; i < inputs.size(); ++i) {
    for (uint32_t k = 0; k < inputs[i].count; ++k) {
      const int64_t element = inputs[i].array ? static_cast<int64_t>(k) : -1;
      if (next_port < in_ports.size() && in_ports[next_port].index == i && in_ports[next_port].element == element) {
        const Port& p = in_ports[next_port++];
        const Instruction& inst = *p.inst;
        if (tensor_type(inst, word(inst, 1)) != inputs[i].type)
          fail(ErrorCode::kVerify, inst, p.id, "the result type differs from the graph's input " + std::to_string(i));
        Def& d = define(inst, p.id, DefKind::kValue);
        d.type = word(inst, 1);
        value_of_[p.id] = g.add_input(g.unique_name(name_of(p.id)), inputs[i].type);
        touched_.push_back(p.id);
      } else {
        std::string base = "input" + std::to_string(i) + (element >= 0 ? "[" + std::to_string(k) + "]" : "");
        g.add_input(g.unique_name(base), inputs[i].type);
      }
    }
  }

  std::vector<Port> out_ports;
  std::vector<const Instruction*> debug_info;  // NonSemantic.Graph.DebugInfo, applied at the end
  for (const Instruction& inst : body) {
    switch (inst.opcode()) {
      case kOpGraphInputARM:
        break;
      case kOpExtInst: {
        const DefKind set = def(inst, word(inst, 3)).kind;
        if (set == DefKind::kDebugSet) {
          debug_info.push_back(&inst);
        } else if (set == DefKind::kMlOpsSet) {
          ml_call(inst);
        } else if (set != DefKind::kSkippedSet) {
          ext_inst(inst);
        }
        break;
      }
      case kOpCompositeExtract:
        composite_extract(inst);
        break;
      case kOpGraphSetOutputARM:
        break;
      default:
        fail(ErrorCode::kVerify, inst, 0, "is not allowed in a graph definition");
    }
  }
  // Outputs: constants set as outputs become CONST nodes after the operators.
  out_ports = ports(body, kOpGraphSetOutputARM, outputs);
  size_t expected = 0;
  for (const InterfaceType& itf : outputs) expected += itf.count;
  if (out_ports.size() != expected)
    fail(ErrorCode::kVerify, head, id,
         "the graph sets " + std::to_string(out_ports.size()) + " of its " + std::to_string(expected) + " outputs");
  for (const Port& p : out_ports) {
    const ValueId v = operand(*p.inst, p.id, false);
    const InterfaceType& itf = outputs[p.index];
    if (g.value(v).type != itf.type)
      fail(ErrorCode::kVerify, *p.inst, p.id,
           "value type " + g.value(v).type.str() + " differs from the graph's output type " + itf.type.str());
    g.add_output(v);
  }

  apply_debug_info(debug_info, id);
  for (uint32_t t : touched_) value_of_[t] = kNoValue;
  touched_.clear();
  origins_.emplace_back(name, std::move(node_origin_));
  node_origin_ = {};
  graph_ = nullptr;
  graph_name_.clear();
  return end + 1;
}

[[noreturn]] void Decoder::rethrow_verify(const Module& m, const std::vector<Error>& errors) const {
  const Error& e = errors.front();
  std::string where;
  for (const auto& [graph, origin] : origins_) {
    const Graph* g = m.find_graph(graph);
    if (graph != e.location().graph || !g) continue;
    for (size_t i = 0; i < origin.size() && i < g->nodes().size(); ++i) {
      if (g->node_label(static_cast<int>(i)) == e.location().node) {
        where = "word " + std::to_string(origin[i].first) + ", %" + std::to_string(origin[i].second) + ": ";
        break;
      }
    }
  }
  std::string message = where + e.message();
  if (errors.size() > 1) message += " (and " + std::to_string(errors.size() - 1) + " more)";
  Location loc = e.location();
  loc.file = source_;
  throw Error(e.code(), message, loc);
}

Module Decoder::run() {
  const Stream stream = split_instructions(words_);
  const uint32_t bound = stream.header.bound;
  if (bound > words_.size() + 1024)
    fail(ErrorCode::kUnsupported, 3, 0,
         "id bound " + std::to_string(bound) + " is too large for a module of " + std::to_string(words_.size()) +
             " words");
  defs_.assign(bound, Def{});
  value_of_.assign(bound, kNoValue);
  for (const GraphConstant& c : constants_) constant_by_id_.emplace(c.id, &c);

  const std::span<const Instruction> insts = stream.instructions;
  for (size_t i = 0; i < insts.size();) {
    const uint16_t op = insts[i].opcode();
    if (op == kOpGraphARM) {
      i = graph(insts, i);
      continue;
    }
    if (op == kOpFunction) {  // shader functions are carried by the module, not decoded
      while (i < insts.size() && insts[i].opcode() != kOpFunctionEnd) ++i;
      ++i;
      continue;
    }
    if (op == kOpExtInst && insts[i].size() > 3 && insts[i].word(3) < defs_.size() &&
        (defs_[insts[i].word(3)].kind == DefKind::kDebugSet || defs_[insts[i].word(3)].kind == DefKind::kSkippedSet)) {
      ++i;  // non-semantic information outside graphs
      continue;
    }
    if (op == kOpGraphInputARM || op == kOpGraphSetOutputARM || op == kOpExtInst || op == kOpCompositeExtract ||
        op == kOpGraphEndARM)
      fail(ErrorCode::kVerify, insts[i], 0, "appears outside a graph definition");
    declare(insts[i]);
    ++i;
  }
  if (module_.graphs().empty()) fail(ErrorCode::kVerify, 0, 0, "the module defines no graph (OpGraphARM)");
  std::string entry = module_.graphs().front().name();
  if (!entry_points_.empty()) {
    const uint32_t g = entry_points_.front().first;
    auto it = std::ranges::find_if(graph_names_, [&](const auto& p) { return p.first == g; });
    if (it == graph_names_.end())
      fail(ErrorCode::kVerify, 0, g, "the first OpGraphEntryPointARM names " + ref(g) + ", which is not an OpGraphARM");
    entry = it->second;
  }
  module_.set_entry(entry);
  module_.set_profiles(profiles_.value_or(kAllProfiles));
  std::vector<Error> errors = verify_module(module_);
  if (!errors.empty()) rethrow_verify(module_, errors);
  return std::move(module_);
}

}  // namespace

Module decode_unvalidated(std::span<const uint32_t> words, std::span<const GraphConstant> constants,
                          std::string_view source_name) {
  try {
    return Decoder(words, constants, source_name).run();
  } catch (const Error& e) {
    throw e.with_context(Location{.file = std::string(source_name)});
  }
}

Module decode(std::span<const uint32_t> words, std::span<const GraphConstant> constants, std::string_view source_name) {
  std::vector<Diagnostic> diags = validate(words);
  if (!diags.empty()) {
    std::string message = diags.front().str();
    if (diags.size() > 1) message += "\n(and " + std::to_string(diags.size() - 1) + " more diagnostics)";
    throw Error(ErrorCode::kVerify, message, Location{.file = std::string(source_name)});
  }
  return decode_unvalidated(words, constants, source_name);
}

}  // namespace weft::spirv
