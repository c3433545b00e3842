// Vulkan backend: the element-wise operators (unary, binary, ternary, comparisons, CLAMP, the float
// activations and CAST), all through shaders/ew.comp with TOSA broadcasting.
#include <algorithm>
#include <limits>
#include <map>

#include "backends/vulkan/lower.h"

namespace weft::vkb {
namespace {

// The operators ew.comp runs, with their codes there (OP_*): the one list of this family.
struct EwEntry {
  Op op;
  int32_t code;
};
constexpr EwEntry kEwOps[] = {
    {Op::ABS, 1},        {Op::BITWISE_NOT, 2},  {Op::CEIL, 3},      {Op::CLZ, 4},          {Op::COS, 5},
    {Op::EXP, 6},        {Op::FLOOR, 7},        {Op::LOG, 8},       {Op::LOGICAL_NOT, 9},  {Op::NEGATE, 10},
    {Op::RECIPROCAL, 11}, {Op::RSQRT, 12},      {Op::SIN, 13},      {Op::ERF, 14},         {Op::SIGMOID, 15},
    {Op::TANH, 16},      {Op::CLAMP, 17},       {Op::CAST, 18},     {Op::ADD, 30},         {Op::SUB, 31},
    {Op::MUL, 32},       {Op::INTDIV, 33},      {Op::ARITHMETIC_RIGHT_SHIFT, 34},          {Op::BITWISE_AND, 35},
    {Op::BITWISE_OR, 36}, {Op::BITWISE_XOR, 37}, {Op::LOGICAL_AND, 38}, {Op::LOGICAL_OR, 39}, {Op::LOGICAL_XOR, 40},
    {Op::LOGICAL_LEFT_SHIFT, 41}, {Op::LOGICAL_RIGHT_SHIFT, 42}, {Op::MAXIMUM, 43}, {Op::MINIMUM, 44},
    {Op::POW, 45},       {Op::EQUAL, 46},       {Op::GREATER, 47},  {Op::GREATER_EQUAL, 48}, {Op::SELECT, 60},
};

int32_t ew_code(Op op) {
  for (const EwEntry& e : kEwOps)
    if (e.op == op) return e.code;
  return 0;
}

// The operands that are tensors of the element-wise computation (NEGATE's zero points and MUL's shift
// are parameters).
size_t tensor_operands(Op op) {
  switch (op) {
    case Op::NEGATE: return 1;
    case Op::MUL: return 2;
    default: return op_def(op).inputs.size();
  }
}

// ---- Element-wise groups (Region::kElementwise): ew_loop.comp --------------------------------------

// (12 inputs: a GRU step reads 7 to 9 tensors: its gates' slices of two projections, the state, a bias)
constexpr int kLoopSteps = static_cast<int>(kLoopMaxSteps), kLoopInputs = 12, kLoopOutputs = 3;

// How a loop over `rt` reads operand `v`: whole (100), one value per last-axis index (200) or one
// value (300), as ew_loop.comp encodes it; 0 where it cannot.
int loop_form(const Graph& g, ValueId v, const TensorType& rt) {
  const TensorType& t = g.value(v).type;
  if (t.dtype != rt.dtype || t.rank() != rt.rank() || rt.rank() == 0) return 0;
  if (t.shape == rt.shape) return 100;
  if (t.num_elements() == 1) return 300;
  if (t.shape.back() == rt.shape.back() && t.num_elements() == t.shape.back()) return 200;
  return 0;
}

// A float operator ew_loop.comp computes as ew.comp does (MUL without a shift; a float NEGATE's zero
// points are 0 by TOSA's rule and ew.comp ignores them).
bool loop_op(const Graph& g, const Node& n) {
  switch (n.op) {
    case Op::ADD: case Op::SUB: case Op::MAXIMUM: case Op::MINIMUM: case Op::POW: case Op::ABS: case Op::CEIL:
    case Op::FLOOR: case Op::COS: case Op::SIN: case Op::EXP: case Op::LOG: case Op::NEGATE: case Op::RECIPROCAL:
    case Op::RSQRT: case Op::ERF: case Op::SIGMOID: case Op::TANH: case Op::CLAMP: return true;
    case Op::MUL: return const_int(g, n.inputs.at(2)).value_or(1) == 0;
    default: return false;
  }
}

// The group's program as ew_loop.comp's specialization constants and the values bound as its
// inputs, or why it cannot run there (`why`).
struct LoopPlan {
  std::vector<int32_t> spec;
  std::vector<ValueId> inputs;
  std::string why;
};

LoopPlan plan_loop(const Graph& g, const backend::Composite& c) {
  LoopPlan p;
  const TensorType& rt = g.value(g.node(c.anchor).outputs[0]).type;
  p.spec.assign(static_cast<size_t>(10 + 6 * kLoopSteps), 0);
  p.spec[0] = code(rt.dtype);
  p.spec[1] = static_cast<int32_t>(rt.num_elements());
  p.spec[2] = static_cast<int32_t>(rt.rank() ? std::max<int64_t>(1, rt.shape.back()) : 1);
  for (int k = 0; k < kLoopOutputs; ++k) p.spec[static_cast<size_t>(4 + k)] = -1;
  if (!fits_int32(rt)) return p.why = "ELEMENTWISE over " + rt.str() + ": too large for 32-bit shader indexing", p;
  std::map<ValueId, int> step_of;
  int steps = 0;
  for (int ni : c.region_nodes) {
    const Node& n = g.node(ni);
    if (!loop_step(g, ni) || g.value(n.outputs[0]).type != rt) {
      p.why = std::string(op_name(n.op)) + " (" + g.node_label(ni) + ") is not a float loop step over " + rt.str();
      return p;
    }
    if (steps == kLoopSteps) {
      p.why = "ELEMENTWISE of more than " + std::to_string(kLoopSteps) + " operators (ew_loop.comp's limit)";
      return p;
    }
    const size_t base = static_cast<size_t>(10 + 6 * steps);
    p.spec[base] = ew_code(n.op);
    const size_t arity = tensor_operands(n.op);
    for (size_t k = 0; k < arity; ++k) {
      const ValueId v = n.inputs[k];
      int32_t src;
      if (auto it = step_of.find(v); it != step_of.end()) {
        src = it->second;
      } else if (const Tensor* t = const_tensor(g, v); t && t->num_elements() == 1 && arity == 2) {
        src = 400;  // an immediate: B's bits in P1, A's in P2
        p.spec[base + (k == 0 ? 5 : 4)] = f32_bits(static_cast<float>(t->at_double(0)));
      } else {
        auto at = std::find(p.inputs.begin(), p.inputs.end(), v);
        if (at == p.inputs.end()) {
          if (p.inputs.size() == static_cast<size_t>(kLoopInputs)) {
            p.why = "ELEMENTWISE reading more than " + std::to_string(kLoopInputs) + " tensors (ew_loop.comp's limit)";
            return p;
          }
          at = p.inputs.insert(p.inputs.end(), v);
        }
        src = loop_form(g, v, rt) + static_cast<int32_t>(at - p.inputs.begin());
      }
      p.spec[base + 1 + k] = src;
    }
    if (n.op == Op::CLAMP) {
      p.spec[base + 3] = f32_bits(static_cast<float>(n.attr_tensor("min_val").at_double(0)));
      p.spec[base + 4] = f32_bits(static_cast<float>(n.attr_tensor("max_val").at_double(0)));
      p.spec[base + 5] = n.attr_int("nan_mode") == static_cast<int64_t>(NanMode::kPropagate);
    } else if (n.op == Op::MAXIMUM || n.op == Op::MINIMUM) {
      p.spec[base + 3] = n.attr_int("nan_mode") == static_cast<int64_t>(NanMode::kPropagate);
    }
    step_of[n.outputs[0]] = steps++;
  }
  p.spec[3] = steps;
  if (c.outputs.size() > static_cast<size_t>(kLoopOutputs)) {
    p.why = "ELEMENTWISE with more than " + std::to_string(kLoopOutputs) + " results read outside it (ew_loop.comp's limit)";
    return p;
  }
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    auto it = step_of.find(c.outputs[k]);
    if (it == step_of.end()) return p.why = "a result of the group is not computed by it", p;
    p.spec[4 + k] = it->second;
  }
  if (p.inputs.empty()) p.why = "ELEMENTWISE reads no tensor";
  return p;
}

}  // namespace

void lower_ew_loop(Lowering& l, const backend::Composite& c, const std::map<ValueId, LoopInputView>& views) {
  LoopPlan p = plan_loop(l.graph, c);
  if (!p.why.empty()) l.fail(p.why);
  // Bindings a group does not use are bound to its first input (read by nobody). A folded SLICE's
  // result is read from its source at the slice's offset (IN_OFF_k, constants 160 + k).
  p.spec.resize(static_cast<size_t>(160 + kLoopInputs), 0);
  std::vector<Arg> args;
  for (int k = 0; k < kLoopInputs; ++k) {
    const ValueId v = p.inputs[static_cast<size_t>(k) < p.inputs.size() ? static_cast<size_t>(k) : 0];
    auto view = views.find(v);
    if (view == views.end()) {
      args.push_back(l.in(v));
      continue;
    }
    args.push_back(l.in(view->second.src));
    if (static_cast<size_t>(k) < p.inputs.size()) p.spec[static_cast<size_t>(160 + k)] = static_cast<int32_t>(view->second.offset);
  }
  for (int k = 0; k < kLoopOutputs; ++k)
    args.push_back(static_cast<size_t>(k) < c.outputs.size() ? l.out(c.outputs[static_cast<size_t>(k)]) : args[0]);
  const uint64_t count = static_cast<uint64_t>(p.spec[1]);
  l.dispatch("ew_loop", std::move(p.spec), std::move(args), l.grid(count));
}

namespace {

std::string check(const Graph& g, const backend::Composite& c, const Caps& caps) {
  if (c.region == backend::Composite::Region::kRmsNorm || c.region == backend::Composite::Region::kL2Norm)
    return check_layer_norm(g, c, caps);
  if (c.region == backend::Composite::Region::kElementwise) {
    if (caps.max_storage_buffers < static_cast<uint32_t>(kLoopInputs + kLoopOutputs))
      return "ELEMENTWISE needs " + std::to_string(kLoopInputs + kLoopOutputs) +
             " storage buffers per shader; Vulkan device '" + caps.device + "' allows " + std::to_string(caps.max_storage_buffers);
    return plan_loop(g, c).why;
  }
  if (!c.single()) return check_ew_chain(g, c, caps);
  const Node& n = g.node(c.anchor);
  if (n.op == Op::MUL && !const_int(g, n.inputs.at(2)))
    return "MUL's shift must be a constant";
  if (n.op == Op::NEGATE && is_integer(g.value(n.inputs[0]).type.dtype) &&
      (!const_int(g, n.inputs.at(1)) || !const_int(g, n.inputs.at(2))))
    return "NEGATE's zero points must be constants";
  if (n.op == Op::CAST && (g.value(n.inputs[0]).type.dtype == DType::kInt48 || g.value(n.outputs[0]).type.dtype == DType::kInt48))
    return "CAST from or to int48 is not a TOSA conversion";
  return {};
}

void lower(Lowering& l, const backend::Composite& c) {
  if (c.region == backend::Composite::Region::kRmsNorm || c.region == backend::Composite::Region::kL2Norm)
    return lower_row_norm(l, c);
  if (c.region == backend::Composite::Region::kElementwise) return lower_ew_loop(l, c);
  if (!c.single()) return lower_ew_chain(l, c);
  const Node& n = l.n();
  const Op op = n.op;
  const TensorType& out = l.type(n.outputs[0]);
  const size_t arity = tensor_operands(op);
  const int rank = static_cast<int>(out.shape.size());
  std::vector<int32_t> spec(35, 0);
  spec[0] = ew_code(op);
  for (size_t k = 0; k < 3; ++k) spec[1 + k] = code(l.type(n.inputs[k < arity ? k : 0]).dtype);
  spec[4] = code(out.dtype);
  spec[5] = static_cast<int32_t>(shape_elements(out.shape));
  // Shape padded in front to 6 dimensions; strides 0 along broadcast dimensions.
  bool flat = true;
  for (int d = 0; d < 6; ++d) spec[7 + d] = 1;
  for (int d = 0; d < rank; ++d) spec[7 + 6 - rank + d] = static_cast<int32_t>(out.shape[d]);
  for (size_t k = 0; k < 3; ++k) {
    const TensorType& t = l.type(n.inputs[k < arity ? k : 0]);
    if (t.shape != out.shape) flat = false;
    const std::vector<int64_t> st = strides_of(t.shape);
    for (int d = 0; d < rank && d < static_cast<int>(t.shape.size()); ++d)
      spec[13 + 6 * k + 6 - rank + d] = t.shape[d] == 1 && out.shape[d] != 1 ? 0 : static_cast<int32_t>(st[d]);
  }
  spec[6] = flat ? 1 : 0;
  const DType in_t = l.type(n.inputs[0]).dtype;
  spec[34] = is_integer(in_t) ? bit_width(in_t) : 32;
  switch (op) {
    case Op::CLAMP: {
      const Tensor& lo = n.attr_tensor("min_val");
      const Tensor& hi = n.attr_tensor("max_val");
      if (is_float(in_t)) {
        spec[31] = f32_bits(static_cast<float>(lo.at_double(0)));
        spec[32] = f32_bits(static_cast<float>(hi.at_double(0)));
        spec[33] = n.attr_int("nan_mode") == static_cast<int64_t>(NanMode::kPropagate);
      } else {
        spec[31] = static_cast<int32_t>(lo.at_int(0));
        spec[32] = static_cast<int32_t>(hi.at_int(0));
      }
      break;
    }
    case Op::MAXIMUM:
    case Op::MINIMUM: spec[31] = n.attr_int("nan_mode") == static_cast<int64_t>(NanMode::kPropagate); break;
    case Op::MUL: spec[31] = static_cast<int32_t>(*const_int(l.graph, n.inputs[2])); break;
    case Op::ARITHMETIC_RIGHT_SHIFT: spec[31] = n.attr_bool("round") ? 1 : 0; break;
    case Op::NEGATE:
      if (is_integer(in_t)) {
        spec[31] = static_cast<int32_t>(*const_int(l.graph, n.inputs[1]));
        spec[32] = static_cast<int32_t>(*const_int(l.graph, n.inputs[2]));
      }
      break;
    case Op::CAST:
      if (is_integer(out.dtype)) {
        spec[31] = static_cast<int32_t>(int_min(out.dtype));
        spec[32] = static_cast<int32_t>(int_max(out.dtype));
      }
      break;
    default: break;
  }
  std::vector<Arg> args;
  for (size_t k = 0; k < 3; ++k) args.push_back(l.in(n.inputs[k < arity ? k : 0]));
  args.push_back(l.out(n.outputs[0]));
  const uint64_t count = static_cast<uint64_t>(shape_elements(out.shape));
  l.dispatch("ew", std::move(spec), std::move(args), l.grid(count));
  (void)c;
}

}  // namespace

bool loop_step(const Graph& g, int ni) {
  const Node& n = g.node(ni);
  if (n.outputs.size() != 1 || !loop_op(g, n)) return false;
  const TensorType& rt = g.value(n.outputs[0]).type;
  if ((rt.dtype != DType::kFp32 && rt.dtype != DType::kFp16) || rt.num_elements() == 0) return false;
  for (size_t k = 0; k < tensor_operands(n.op); ++k)
    if (!loop_form(g, n.inputs[k], rt)) return false;
  return true;
}

void register_elementwise(std::map<Op, OpLowering>& t) {
  for (const EwEntry& e : kEwOps) t[e.op] = OpLowering{nullptr, check, lower};
}

}  // namespace weft::vkb
