// IR -> SPIR-V graph module, following docs/spirv.md ("How Weft writes a module") to the word.
//
// The module is built in sections (debug names, annotations, types and constants, entry points,
// graph bodies) with provisional ids; types and unnamed constants are interned by structure so each
// is declared once, before its first use. At the end the sections are concatenated and every id is
// renumbered in order of first appearance.
#include <algorithm>
#include <array>
#include <limits>
#include <unordered_map>

#include "spirv/binary.h"
#include "spirv/codec.h"
#include "spirv/lift_rank0.h"
#include "weft/spirv.h"
#include "weft/verify.h"

namespace weft::spirv {
namespace {

// Hash and equality of word sequences, usable with a std::span key for lookups without copying.
struct WordsHash {
  using is_transparent = void;
  size_t operator()(std::span<const uint32_t> w) const {
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint32_t x : w) h = (h ^ x) * 0x100000001b3ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};
struct WordsEqual {
  using is_transparent = void;
  bool operator()(std::span<const uint32_t> a, std::span<const uint32_t> b) const { return std::ranges::equal(a, b); }
};

// Key prefix of the tensor type cache (no opcode has this value).
constexpr uint32_t kTensorTypeKey = 0xffffffffu;

// The opcode of a CUSTOM node that Arm.ExperimentalMLOperations CALL expresses: domain
// "Arm.ExperimentalMLOperations", operator "CALL_<opcode>", one output; nullopt otherwise.
std::optional<uint32_t> ml_call_opcode(const Node& n) {
  if (n.op != Op::CUSTOM || n.attr_str("domain_name") != kMlOpsDomain || n.outputs.size() != 1) return std::nullopt;
  const std::string& name = n.attr_str("operator_name");
  if (!name.starts_with("CALL_") || name.size() == 5 || name.size() > 14) return std::nullopt;
  uint64_t v = 0;
  for (char c : name.substr(5)) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > 0xffffffffu) return std::nullopt;
  return static_cast<uint32_t>(v);
}

bool is_rejected(Op op) {
  switch (op) {
    case Op::CUSTOM:
    case Op::COND_IF:
    case Op::WHILE_LOOP:
    case Op::VARIABLE:
    case Op::VARIABLE_READ:
    case Op::VARIABLE_WRITE:
      return true;
    default:
      return false;
  }
}

bool fits_int32(int64_t v) {
  return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
}

// "<base>[k]" -> (base, k); k without sign or leading zeros.
bool split_element_name(std::string_view name, std::string_view* base, uint32_t* index) {
  if (name.size() < 4 || name.back() != ']') return false;
  size_t open = name.rfind('[');
  if (open == std::string_view::npos || open == 0) return false;
  std::string_view digits = name.substr(open + 1, name.size() - open - 2);
  if (digits.empty() || digits.size() > 9 || (digits.size() > 1 && digits[0] == '0')) return false;
  uint32_t k = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
    k = k * 10 + static_cast<uint32_t>(c - '0');
  }
  *base = name.substr(0, open);
  *index = k;
  return true;
}

// One graph input or output interface: a single value, or a tensor array of `count` values
// named <name>[0..count-1] (first at position `first` of the graph's input or output list).
struct Interface {
  size_t first = 0;
  uint32_t count = 1;
  bool array = false;
  std::string name;
};

// The value an IR value stands for in SPIR-V: IDENTITY forwards its input.
ValueId forwarded(const Graph& g, ValueId v) {
  while (true) {
    const Value& val = g.value(v);
    if (val.producer < 0 || g.node(val.producer).op != Op::IDENTITY) return v;
    v = g.node(val.producer).inputs.at(0);
  }
}

// `values` are forwarded values (what SPIR-V keeps), so that decoded modules group the same way.
std::vector<Interface> group_interfaces(const Graph& g, const std::vector<ValueId>& values) {
  std::vector<Interface> r;
  for (size_t i = 0; i < values.size();) {
    const Value& v = g.value(values[i]);
    Interface itf{i, 1, false, v.name};
    std::string_view base;
    uint32_t k = 0;
    if (split_element_name(v.name, &base, &k) && k == 0) {
      itf.array = true;
      itf.name = std::string(base);
      const std::string prefix = itf.name + "[";
      while (i + itf.count < values.size()) {
        const Value& next = g.value(values[i + itf.count]);
        if (next.type != v.type || next.name != prefix + std::to_string(itf.count) + "]") break;
        ++itf.count;
      }
    }
    i += itf.count;
    r.push_back(std::move(itf));
  }
  return r;
}

// ---- Checks of what TOSA.001000.1 cannot express ----

[[noreturn]] void unsupported(const Graph& g, std::string node, std::string message, std::string operand = "") {
  throw Error(ErrorCode::kUnsupported, std::move(message),
              Location{.graph = g.name(), .node = std::move(node), .operand = std::move(operand)});
}

void check_type(const Graph& g, const std::string& where, const TensorType& t, const std::string& what) {
  if (t.dtype == DType::kInt4)
    unsupported(g, where, what + " is an i4 tensor: TOSA.001000.1 has no SPIR-V type for i4");
  for (int64_t d : t.shape) {
    if (d < 0 || d > std::numeric_limits<int32_t>::max())
      unsupported(g, where, what + " has shape " + shape_str(t.shape) + ": SPIR-V tensor dimensions are int32");
    if (d == 0)
      unsupported(g, where,
                  what + (t.dtype == DType::kShape ? " is an empty shape value" : " has shape " + shape_str(t.shape)) +
                      ": SPV_ARM_tensors requires every dimension to be greater than 0, so an empty tensor cannot "
                      "be written to SPIR-V");
  }
}

void check_interface(const Graph& g, const std::vector<ValueId>& values, const char* what) {
  for (ValueId id : values) {
    const Value& v = g.value(id);
    const std::string label = std::string(what) + " '%" + v.name + "'";
    if (v.type.dtype == DType::kShape)
      unsupported(g, "", label + " is a shape_t value: graph interfaces must be tensors", v.name);
    check_type(g, "", v.type, label);
  }
}

// Operators without a SPIR-V instruction, reported before anything is rewritten (lift_rank0 would
// otherwise trip over a WHILE_LOOP's rank-0 counter first).
void check_instructions(const Module& m) {
  for (const Graph& g : m.graphs())
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      const Node& n = g.nodes()[i];
      if (!is_rejected(n.op) || ml_call_opcode(n)) continue;
      unsupported(g, g.node_label(static_cast<int>(i)),
                  std::string(op_def(n.op).name) + " has no TOSA.001000.1 instruction: it cannot be written to SPIR-V" +
                      (n.op == Op::CUSTOM ? " (only CUSTOM nodes of domain Arm.ExperimentalMLOperations named "
                                            "CALL_<opcode>, with one output, have a SPIR-V form: CALL)"
                       : n.op == Op::COND_IF || n.op == Op::WHILE_LOOP
                           ? " (control flow decided at run time; run the model with `weft run`, or bind the inputs "
                             "that decide an ONNX If's condition or a Loop's trip count and condition at compile "
                             "time with --bind, so that the branch is inlined or the loop unrolled)"
                           : ""));
    }
}

void check_expressible(const Module& m) {
  for (const Graph& g : m.graphs()) {
    check_interface(g, g.inputs(), "graph input");
    check_interface(g, g.outputs(), "graph output");
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      const Node& n = g.nodes()[i];
      const OpDef& d = op_def(n.op);
      const std::string label = g.node_label(static_cast<int>(i));
      for (ValueId out : n.outputs) check_type(g, label, g.value(out).type, "output '%" + g.value(out).name + "'");
      for (size_t a = 0; a < d.attrs.size() && a < n.attrs.size(); ++a) {
        const auto* list = std::get_if<std::vector<int64_t>>(&n.attrs[a]);
        const auto* scalar = std::get_if<int64_t>(&n.attrs[a]);
        auto check = [&](int64_t v) {
          if (!fits_int32(v))
            unsupported(g, label,
                        std::string(d.name) + " attribute '" + d.attrs[a].name + "' holds " + std::to_string(v) +
                            ", outside the int32 range of SPIR-V " +
                            (n.op == Op::CONST_SHAPE ? "shape constants" : "integer constants"),
                        d.attrs[a].name);
        };
        if (list) std::ranges::for_each(*list, check);
        if (scalar) check(*scalar);
      }
    }
  }
}

// ---- The encoder ----

class Encoder {
 public:
  Encoder(const Module& m, const EncodeOptions& o) : module_(m), options_(o) {}

  Binary run();

 private:
  uint32_t fresh() { return next_id_++; }

  // Types and constants: the instruction (opcode, operands without the result id) is looked up by
  // structure; new ones are declared in globals_. Types have their result first, constants after
  // their result type (operands[0]).
  uint32_t intern(uint16_t opcode, std::span<const uint32_t> operands, bool constant);
  uint32_t declare(uint16_t opcode, std::span<const uint32_t> operands, bool constant, uint32_t id);
  uint32_t elem_type(DType t);
  uint32_t uint_type() { return elem_type(DType::kInt32); }
  uint32_t bool_type() { return elem_type(DType::kBool); }
  uint32_t uint_constant(uint32_t v) {
    const uint32_t ops[] = {uint_type(), v};
    return intern(kOpConstant, ops, true);
  }
  uint32_t bool_constant(bool v) {
    const uint32_t ops[] = {bool_type()};
    return intern(v ? kOpConstantTrue : kOpConstantFalse, ops, true);
  }
  uint32_t tensor_type(DType t, std::span<const int64_t> shape);
  uint32_t tensor_type(const TensorType& t) { return tensor_type(t.dtype, t.shape); }
  uint32_t scalar_constant(DType t, const uint8_t* p);
  // An OpConstantComposite of a tensor type (interned unless `named`, which declares a new one).
  uint32_t tensor_constant(DType t, std::span<const int64_t> shape, const uint8_t* data, bool named);
  uint32_t int_list_constant(std::span<const int64_t> values, bool named);
  uint32_t composite_from_scratch(size_t base, bool named);

  void name(uint32_t id, std::string_view s);
  void decorate(uint32_t id, uint32_t decoration, uint32_t value);

  // ---- Graphs ----
  void encode_graph(const Graph& g);
  uint32_t interface_type(const Graph& g, const std::vector<ValueId>& values, const Interface& itf);
  uint32_t value_id(const Graph& g, ValueId v);
  uint32_t constant_node(const Graph& g, const Node& n);
  uint32_t attribute(const Node& n, size_t i);
  void encode_node(const Graph& g, const Node& n);

  std::vector<uint32_t> assemble();

  const Module& module_;
  const EncodeOptions& options_;
  uint32_t next_id_ = 1;
  uint32_t tosa_ = 0;
  uint32_t ml_ = 0;  // Arm.ExperimentalMLOperations.1, imported when a CUSTOM node of its domain is written
  uint32_t capabilities_ = 0;  // bit i: kScalarTypes[i]'s capability is needed
  std::array<uint32_t, kNumDTypes> elem_ids_{};

  std::vector<uint32_t> names_, annotations_, globals_, bodies_;
  std::vector<std::vector<uint32_t>> entry_points_;  // one instruction per graph
  std::unordered_map<std::vector<uint32_t>, uint32_t, WordsHash, WordsEqual> interned_;
  std::vector<uint32_t> key_;        // lookup key under construction
  std::vector<uint32_t> type_key_;   // tensor type cache key under construction
  std::vector<uint32_t> scratch_;    // operand lists, used as a stack by nested calls
  std::vector<uint32_t> value_ids_;  // per graph: ValueId -> SPIR-V id (0: not yet emitted)
  std::vector<GraphConstant> constants_;
};

uint32_t Encoder::declare(uint16_t opcode, std::span<const uint32_t> operands, bool constant, uint32_t id) {
  InstructionWriter w(globals_, opcode);
  if (constant) {
    w.word(operands[0]).word(id).words(operands.subspan(1));
  } else {
    w.word(id).words(operands);
  }
  w.finish();
  return id;
}

uint32_t Encoder::intern(uint16_t opcode, std::span<const uint32_t> operands, bool constant) {
  key_.clear();
  key_.push_back(opcode);
  key_.insert(key_.end(), operands.begin(), operands.end());
  if (auto it = interned_.find(std::span<const uint32_t>(key_)); it != interned_.end()) return it->second;
  uint32_t id = declare(opcode, operands, constant, fresh());
  interned_.emplace(key_, id);
  return id;
}

uint32_t Encoder::elem_type(DType t) {
  if (t == DType::kShape) t = DType::kInt32;  // shape_t values are i32 tensors
  uint32_t& id = elem_ids_[static_cast<size_t>(t)];
  if (id) return id;
  const ScalarType* s = scalar_type(t);
  if (!s) throw Error(ErrorCode::kInternal, std::string("no SPIR-V type for ") + dtype_name(t));
  capabilities_ |= 1u << (s - kScalarTypes);
  // OpTypeBool; OpTypeInt <width> 0 (signedness 0); OpTypeFloat <width> [<encoding>].
  std::array<uint32_t, 2> ops{s->width, 0};
  size_t n = 0;
  if (s->opcode == kOpTypeInt) n = 2;
  if (s->opcode == kOpTypeFloat) {
    n = 1;
    if (s->encoding != kNoEncoding) ops[n++] = s->encoding;
  }
  id = intern(s->opcode, std::span<const uint32_t>(ops.data(), n), false);
  return id;
}

uint32_t Encoder::tensor_type(DType t, std::span<const int64_t> shape) {
  // Cache by (element type, shape) so that repeated value types skip the interning of their parts.
  // (Not reentrant: nothing below calls tensor_type.)
  type_key_.assign({kTensorTypeKey, static_cast<uint32_t>(t)});
  for (int64_t d : shape) type_key_.push_back(static_cast<uint32_t>(d));  // dimensions are int32 (checked)
  if (auto it = interned_.find(std::span<const uint32_t>(type_key_)); it != interned_.end()) return it->second;

  const uint32_t elem = elem_type(t);
  const uint32_t rank = uint_constant(static_cast<uint32_t>(shape.size()));
  uint32_t id;
  if (shape.empty()) {
    const uint32_t ops[] = {elem, rank};
    id = intern(kOpTypeTensorARM, ops, false);
  } else {
    const uint32_t array_ops[] = {uint_type(), rank};
    const uint32_t array = intern(kOpTypeArray, array_ops, false);
    const size_t base = scratch_.size();
    scratch_.push_back(array);
    for (int64_t d : shape) {
      const uint32_t c = uint_constant(static_cast<uint32_t>(d));
      scratch_.push_back(c);
    }
    const uint32_t dims = intern(kOpConstantComposite, std::span<const uint32_t>(scratch_).subspan(base), true);
    scratch_.resize(base);
    const uint32_t ops[] = {elem, rank, dims};
    id = intern(kOpTypeTensorARM, ops, false);
  }
  interned_.emplace(type_key_, id);
  return id;
}

uint32_t Encoder::scalar_constant(DType t, const uint8_t* p) {
  if (t == DType::kBool) return bool_constant(*p != 0);
  std::array<uint32_t, 3> ops{elem_type(t), 0, 0};
  const size_t n = pack_literal(t, p, ops.data() + 1);
  return intern(kOpConstant, std::span<const uint32_t>(ops.data(), 1 + n), true);
}

uint32_t Encoder::tensor_constant(DType t, std::span<const int64_t> shape, const uint8_t* data, bool named) {
  const uint32_t type = tensor_type(t, shape);
  const size_t base = scratch_.size();
  scratch_.push_back(type);
  const size_t elem_size = storage_size(t);
  if (shape.size() == 1) {
    for (int64_t i = 0; i < shape[0]; ++i) {
      const uint32_t c = scalar_constant(t, data + static_cast<size_t>(i) * elem_size);
      scratch_.push_back(c);
    }
  } else {
    const std::span<const int64_t> sub = shape.subspan(1);
    size_t sub_bytes = elem_size;
    for (int64_t d : sub) sub_bytes *= static_cast<size_t>(d);
    for (int64_t i = 0; i < shape[0]; ++i) {
      const uint32_t c = tensor_constant(t, sub, data + static_cast<size_t>(i) * sub_bytes, false);
      scratch_.push_back(c);
    }
  }
  return composite_from_scratch(base, named);
}

// The OpConstantComposite whose operands (type, constituents) were pushed to scratch_ from
// `base`: a fresh named constant, or the shared one with those operands. Pops them.
uint32_t Encoder::composite_from_scratch(size_t base, bool named) {
  const std::span<const uint32_t> ops = std::span<const uint32_t>(scratch_).subspan(base);
  const uint32_t id =
      named ? declare(kOpConstantComposite, ops, true, fresh()) : intern(kOpConstantComposite, ops, true);
  scratch_.resize(base);
  return id;
}

uint32_t Encoder::int_list_constant(std::span<const int64_t> values, bool named) {
  const int64_t n = static_cast<int64_t>(values.size());
  const uint32_t type = tensor_type(DType::kInt32, std::span<const int64_t>(&n, 1));
  const size_t base = scratch_.size();
  scratch_.push_back(type);
  for (int64_t v : values) {
    const uint32_t c = uint_constant(static_cast<uint32_t>(static_cast<int32_t>(v)));  // range checked before
    scratch_.push_back(c);
  }
  return composite_from_scratch(base, named);
}

void Encoder::name(uint32_t id, std::string_view s) {
  if (!options_.debug_names) return;
  InstructionWriter(names_, kOpName).word(id).string(s).finish();
}

void Encoder::decorate(uint32_t id, uint32_t decoration, uint32_t value) {
  InstructionWriter(annotations_, kOpDecorate).word(id).word(decoration).word(value).finish();
}

uint32_t Encoder::interface_type(const Graph& g, const std::vector<ValueId>& values, const Interface& itf) {
  const uint32_t t = tensor_type(g.value(values[itf.first]).type);
  if (!itf.array) return t;
  const uint32_t ops[] = {t, uint_constant(itf.count)};
  return intern(kOpTypeArray, ops, false);
}

// The id of an IR value: IDENTITY forwards its input; CONST / CONST_SHAPE are declared at first use.
uint32_t Encoder::value_id(const Graph& g, ValueId v) {
  if (uint32_t id = value_ids_[static_cast<size_t>(v)]) return id;
  const ValueId source = forwarded(g, v);
  uint32_t& id = value_ids_[static_cast<size_t>(source)];
  if (!id) {
    const Value& val = g.value(source);
    if (val.producer < 0)
      throw Error(ErrorCode::kInternal, "value '%" + val.name + "' is used before its definition", {.graph = g.name()});
    id = constant_node(g, g.node(val.producer));
  }
  value_ids_[static_cast<size_t>(v)] = id;
  return id;
}

uint32_t Encoder::constant_node(const Graph& g, const Node& n) {
  const Value& out = g.value(n.outputs.at(0));
  uint32_t id;
  if (n.op == Op::CONST_SHAPE) {
    id = int_list_constant(std::get<std::vector<int64_t>>(n.attrs.at(0)), true);
  } else if (n.op == Op::CONST) {
    const Tensor& t = std::get<Tensor>(n.attrs.at(0));
    if (t.rank() >= 1 && t.num_elements() <= options_.inline_constant_max_elements) {
      id = tensor_constant(t.dtype(), t.shape(), t.bytes(), true);
    } else {
      const uint32_t type = tensor_type(out.type);
      const auto index = static_cast<uint32_t>(constants_.size());
      id = fresh();
      InstructionWriter(globals_, kOpGraphConstantARM).word(type).word(id).word(index).finish();
      constants_.push_back(GraphConstant{index, options_.debug_names ? out.name : std::string(), t});
    }
  } else {
    throw Error(ErrorCode::kInternal, std::string("not a constant: ") + op_name(n.op), {.graph = g.name()});
  }
  name(id, out.name);
  return id;
}

uint32_t Encoder::attribute(const Node& n, size_t i) {
  const AttrDef& a = op_def(n.op).attrs[i];
  const AttrValue& v = n.attrs.at(i);
  switch (a.kind) {
    case AttrKind::kInt:
    case AttrKind::kAccType:
    case AttrKind::kNanMode:
    case AttrKind::kResizeMode:
    case AttrKind::kRoundingMode:
      return uint_constant(static_cast<uint32_t>(static_cast<int32_t>(std::get<int64_t>(v))));
    case AttrKind::kBool:
      return bool_constant(std::get<bool>(v));
    case AttrKind::kIntList:
      return int_list_constant(std::get<std::vector<int64_t>>(v), false);
    case AttrKind::kScalar: {
      const Tensor& t = std::get<Tensor>(v);
      return scalar_constant(t.dtype(), t.bytes());
    }
    default:
      throw Error(ErrorCode::kInternal, std::string("attribute ") + a.name + " has no SPIR-V encoding");
  }
}

void Encoder::encode_node(const Graph& g, const Node& n) {
  if (n.op == Op::CONST || n.op == Op::CONST_SHAPE || n.op == Op::IDENTITY) return;  // at first use
  if (n.op == Op::CUSTOM) {  // Arm.ExperimentalMLOperations CALL <opcode> <inputs> (check_expressible)
    if (ml_ == 0) ml_ = fresh();
    const size_t base = scratch_.size();
    for (ValueId v : n.inputs) scratch_.push_back(value_id(g, v));
    const uint32_t result = fresh();
    InstructionWriter(bodies_, kOpExtInst)
        .word(tensor_type(g.value(n.outputs[0]).type))
        .word(result)
        .word(ml_)
        .word(0)  // CALL
        .word(*ml_call_opcode(n))
        .words(std::span<const uint32_t>(scratch_).subspan(base))
        .finish();
    scratch_.resize(base);
    value_ids_[static_cast<size_t>(n.outputs[0])] = result;
    name(result, g.value(n.outputs[0]).name);
    return;
  }
  const OpDef& d = op_def(n.op);
  const size_t base = scratch_.size();
  for (size_t i = 0; i < d.attrs.size(); ++i) {
    const uint32_t id = attribute(n, i);
    scratch_.push_back(id);
  }
  for (ValueId v : n.inputs) {
    const uint32_t id = value_id(g, v);
    scratch_.push_back(id);
  }
  std::array<uint32_t, 2> out_types{};
  for (size_t k = 0; k < n.outputs.size() && k < 2; ++k) out_types[k] = tensor_type(g.value(n.outputs[k]).type);
  const bool two = n.outputs.size() == 2;
  const uint32_t result_type = two ? intern(kOpTypeStruct, out_types, false) : out_types[0];
  const uint32_t result = fresh();
  InstructionWriter(bodies_, kOpExtInst)
      .word(result_type)
      .word(result)
      .word(tosa_)
      .word(static_cast<uint32_t>(d.spirv_opcode))
      .words(std::span<const uint32_t>(scratch_).subspan(base))
      .finish();
  scratch_.resize(base);
  if (!two) {
    value_ids_[static_cast<size_t>(n.outputs[0])] = result;
    name(result, g.value(n.outputs[0]).name);
    return;
  }
  if (!n.name.empty()) name(result, n.name);
  for (uint32_t k = 0; k < 2; ++k) {
    const uint32_t id = fresh();
    InstructionWriter(bodies_, kOpCompositeExtract).word(out_types[k]).word(id).word(result).word(k).finish();
    value_ids_[static_cast<size_t>(n.outputs[k])] = id;
    name(id, g.value(n.outputs[k]).name);
  }
}

void Encoder::encode_graph(const Graph& g) {
  const uint32_t graph_id = fresh();
  name(graph_id, g.name());
  value_ids_.assign(g.values().size(), 0);

  // Interfaces: types, variables, names and bindings.
  std::vector<ValueId> outputs;
  for (ValueId v : g.outputs()) outputs.push_back(forwarded(g, v));
  const std::vector<Interface> ins = group_interfaces(g, g.inputs());
  const std::vector<Interface> outs = group_interfaces(g, outputs);
  std::vector<uint32_t> types, vars;
  auto add_interfaces = [&](const std::vector<ValueId>& values, const std::vector<Interface>& itfs) {
    for (const Interface& itf : itfs) {
      const uint32_t t = interface_type(g, values, itf);
      const uint32_t ptr_ops[] = {kStorageUniformConstant, t};
      const uint32_t ptr = intern(kOpTypePointer, ptr_ops, false);
      const uint32_t var = fresh();
      InstructionWriter(globals_, kOpVariable).word(ptr).word(var).word(kStorageUniformConstant).finish();
      name(var, g.name() + "." + itf.name);
      decorate(var, kDecorationDescriptorSet, options_.descriptor_set);
      decorate(var, kDecorationBinding, static_cast<uint32_t>(vars.size()));
      types.push_back(t);
      vars.push_back(var);
    }
  };
  add_interfaces(g.inputs(), ins);
  add_interfaces(outputs, outs);
  types.insert(types.begin(), static_cast<uint32_t>(ins.size()));
  const uint32_t graph_type = intern(kOpTypeGraphARM, types, false);

  InstructionWriter(entry_points_.emplace_back(), kOpGraphEntryPointARM)
      .word(graph_id)
      .string(g.name())
      .words(vars)
      .finish();

  InstructionWriter(bodies_, kOpGraphARM).word(graph_type).word(graph_id).finish();
  for (size_t i = 0; i < ins.size(); ++i) {
    const Interface& itf = ins[i];
    for (uint32_t k = 0; k < itf.count; ++k) {
      const ValueId v = g.inputs()[itf.first + k];
      const uint32_t type = tensor_type(g.value(v).type);
      const uint32_t index = uint_constant(static_cast<uint32_t>(i));
      const uint32_t element = itf.array ? uint_constant(k) : 0;
      const uint32_t id = fresh();
      InstructionWriter w(bodies_, kOpGraphInputARM);
      w.word(type).word(id).word(index);
      if (itf.array) w.word(element);
      w.finish();
      value_ids_[static_cast<size_t>(v)] = id;
      name(id, g.value(v).name);
    }
  }
  for (const Node& n : g.nodes()) encode_node(g, n);
  for (size_t j = 0; j < outs.size(); ++j) {
    const Interface& itf = outs[j];
    for (uint32_t k = 0; k < itf.count; ++k) {
      const uint32_t value = value_id(g, outputs[itf.first + k]);
      const uint32_t index = uint_constant(static_cast<uint32_t>(j));
      const uint32_t element = itf.array ? uint_constant(k) : 0;
      InstructionWriter w(bodies_, kOpGraphSetOutputARM);
      w.word(value).word(index);
      if (itf.array) w.word(element);
      w.finish();
    }
  }
  InstructionWriter(bodies_, kOpGraphEndARM).finish();
}

// Renumbers the ids of one instruction written by this encoder through `map`.
template <class F>
void for_each_id(std::span<uint32_t> inst, uint32_t ml_set, F&& map) {
  const uint16_t opcode = static_cast<uint16_t>(inst[0] & 0xffff);
  const size_t n = inst.size();
  auto ids = [&](size_t from, size_t to) {
    for (size_t i = from; i < to && i < n; ++i) inst[i] = map(inst[i]);
  };
  auto after_string = [&](size_t from) {
    size_t i = from;
    while (i < n) {
      const uint32_t w = inst[i++];
      if ((w & 0xff) == 0 || (w & 0xff00) == 0 || (w & 0xff0000) == 0 || (w & 0xff000000) == 0) break;
    }
    return i;
  };
  switch (opcode) {
    case kOpCapability:
    case kOpExtension:
    case kOpMemoryModel:
    case kOpModuleProcessed:
    case kOpGraphEndARM:
      return;
    case kOpExtInstImport:
    case kOpName:
    case kOpDecorate:
    case kOpTypeBool:
    case kOpTypeInt:
    case kOpTypeFloat:
      ids(1, 2);
      return;
    case kOpTypePointer:
      ids(1, 2);
      ids(3, 4);
      return;
    case kOpConstant:
    case kOpGraphConstantARM:
    case kOpVariable:
      ids(1, 3);
      return;
    case kOpTypeGraphARM:
      ids(1, 2);
      ids(3, n);
      return;
    case kOpGraphEntryPointARM:
      ids(1, 2);
      ids(after_string(2), n);
      return;
    case kOpExtInst: {
      const bool call = ml_set != 0 && n > 3 && inst[3] == ml_set;  // before the set id is renumbered
      ids(1, 4);
      ids(call ? 6 : 5, n);  // Arm.ExperimentalMLOperations CALL: its opcode is a literal
      return;
    }
    case kOpCompositeExtract:
      ids(1, 4);
      return;
    default:
      ids(1, n);
      return;  // every operand is an id
  }
}

std::vector<uint32_t> Encoder::assemble() {
  std::vector<uint32_t> w = {kMagic, kVersion16, 0, 0, 0};
  w.reserve(5 + 64 + names_.size() + annotations_.size() + globals_.size() + 16 * entry_points_.size() +
            bodies_.size());
  std::vector<uint32_t> caps = {kCapShader, kCapVulkanMemoryModel, kCapTensorsARM, kCapGraphARM};
  std::vector<uint32_t> extra;
  for (size_t i = 0; i < std::size(kScalarTypes); ++i)
    if ((capabilities_ >> i & 1) && kScalarTypes[i].capability) extra.push_back(kScalarTypes[i].capability);
  std::ranges::sort(extra);
  extra.erase(std::unique(extra.begin(), extra.end()), extra.end());
  caps.insert(caps.end(), extra.begin(), extra.end());
  for (uint32_t c : caps) InstructionWriter(w, kOpCapability).word(c).finish();
  std::vector<std::string_view> exts = {"SPV_ARM_graph", "SPV_ARM_tensors"};
  if (std::ranges::count(caps, kCapFloat8EXT)) exts.push_back("SPV_EXT_float8");
  if (std::ranges::count(caps, kCapBFloat16TypeKHR)) exts.push_back("SPV_KHR_bfloat16");
  for (std::string_view e : exts) InstructionWriter(w, kOpExtension).string(e).finish();
  InstructionWriter(w, kOpExtInstImport).word(tosa_).string(kTosaSetName).finish();
  if (ml_ != 0) InstructionWriter(w, kOpExtInstImport).word(ml_).string(kMlOpsSetName).finish();
  InstructionWriter(w, kOpMemoryModel).word(kAddressingLogical).word(kMemoryModelVulkan).finish();
  w.insert(w.end(), names_.begin(), names_.end());
  if (module_.profiles() != kAllProfiles) {
    InstructionWriter(w, kOpModuleProcessed)
        .string(std::string(kProfilesMarker) + profile_set_str(module_.profiles()))
        .finish();
  }
  w.insert(w.end(), annotations_.begin(), annotations_.end());
  w.insert(w.end(), globals_.begin(), globals_.end());
  for (const std::vector<uint32_t>& e : entry_points_) w.insert(w.end(), e.begin(), e.end());
  w.insert(w.end(), bodies_.begin(), bodies_.end());

  // Ids in order of first appearance.
  std::vector<uint32_t> remap(next_id_, 0);
  uint32_t next = 1;
  auto map = [&](uint32_t id) {
    uint32_t& r = remap[id];
    if (!r) r = next++;
    return r;
  };
  for (size_t i = 5; i < w.size();) {
    const size_t count = w[i] >> 16;
    for_each_id(std::span<uint32_t>(w).subspan(i, count), ml_, map);
    i += count;
  }
  w[3] = next;
  return w;
}

Binary Encoder::run() {
  tosa_ = fresh();
  const Graph* entry = &module_.main();
  for (const Graph& g : module_.graphs()) {
    encode_graph(g);
    // The entry graph's entry point comes first, the others in module order.
    if (&g == entry) std::rotate(entry_points_.begin(), entry_points_.end() - 1, entry_points_.end());
  }
  Binary b;
  b.words = assemble();
  b.constants = std::move(constants_);
  return b;
}

}  // namespace

Binary encode(const Module& module, const EncodeOptions& options) {
  verify_or_throw(module);
  check_instructions(module);
  // SPIR-V tensors have Rank > 0: rank-0 values are written as [1] (lift_rank0.h).
  std::optional<Module> lifted = lift_rank0(module);
  const Module& m = lifted ? *lifted : module;
  check_expressible(m);
  return Encoder(m, options).run();
}

}  // namespace weft::spirv
