// Vulkan backend: the element-wise operators (unary, binary, ternary, comparisons, CLAMP, the float
// activations and CAST), all through shaders/ew.comp with TOSA broadcasting.
#include <limits>

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

std::string check(const Graph& g, const backend::Composite& c, const Caps& caps) {
  if (c.region == backend::Composite::Region::kRmsNorm) return check_layer_norm(g, c, caps);
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
  if (c.region == backend::Composite::Region::kRmsNorm) return lower_row_norm(l, c);
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

void register_elementwise(std::map<Op, OpLowering>& t) {
  for (const EwEntry& e : kEwOps) t[e.op] = OpLowering{nullptr, check, lower};
}

}  // namespace weft::vkb
