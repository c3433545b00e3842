// Lowerings of ONNX's element-wise, activation, reduction, normalization and quantization
// operators. Element-wise operators keep their operands' layout (NHWC inside a CNN).
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include <onnx/onnx_pb.h>

#include "frontends/onnx/importer.h"
#include "frontends/onnx/lower.h"

namespace weft::onnxfe {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// out = op(inputs...) with numpy broadcasting, in the operands' layout.
void binary(Importer& imp, Op op, int out_type = -1) {
  std::vector<int64_t> perm;
  Shape shape;
  auto ops = imp.elementwise_operands({0, 1}, &perm, &shape);
  TVal r = op == Op::MUL ? imp.mul(ops[0], ops[1]) : imp.emit(op, ops);
  imp.set_out(0, r, perm, out_type);
}

// f applied to input 0, layout kept.
template <class F>
void unary(Importer& imp, F f, int out_type = -1) {
  const OVal& x = imp.in(0);
  imp.set_out(0, f(x.v), x.perm, out_type < 0 ? x.onnx_type : out_type);
}

TVal full_like(Importer& imp, const TVal& v, double x) { return imp.scalar(v.dtype(), x, v.rank()); }

void require_float(Importer& imp, const TVal& v) {
  if (!is_float(v.dtype())) imp.fail(std::string("the input type ") + dtype_name(v.dtype()) + " is not supported here (floating point only)");
}

TVal sqrt_of(Importer& imp, const TVal& v) { return imp.emit(Op::POW, {v, full_like(imp, v, 0.5)}); }

// Variadic Max/Min/Sum/Mean: a chain of binary operators over all inputs.
void variadic(Importer& imp, Op op, bool mean) {
  const int n = imp.num_inputs();
  if (n < 1) imp.fail("needs at least one input", ErrorCode::kInvalidArgument);
  std::vector<int> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0);
  std::vector<int64_t> perm;
  Shape shape;
  auto ops = imp.elementwise_operands(idx, &perm, &shape);
  TVal acc = ops[0];
  for (size_t i = 1; i < ops.size(); ++i) acc = op == Op::MUL ? imp.mul(acc, ops[i]) : imp.emit(op, {acc, ops[i]});
  if (mean) acc = imp.mul(acc, full_like(imp, acc, 1.0 / n));
  // A single input of lower rank than the broadcast shape: make the shape explicit.
  imp.set_out(0, acc, perm, imp.in(0).onnx_type);
}

// Axes of a reduction, ONNX numbering, sorted; empty = reduce nothing (noop_with_empty_axes).
std::vector<int64_t> reduce_axes(Importer& imp, int64_t rank, bool* noop) {
  std::optional<std::vector<int64_t>> axes;
  if (imp.has_input(1)) axes = imp.const_ints(1, "axes");
  else axes = imp.attr_ints("axes");
  *noop = false;
  std::vector<int64_t> r;
  if (!axes || axes->empty()) {
    if (imp.attr_int("noop_with_empty_axes", 0)) {
      *noop = true;
      return r;
    }
    for (int64_t i = 0; i < rank; ++i) r.push_back(i);
    return r;
  }
  for (int64_t a : *axes) r.push_back(norm_axis(imp, a, rank, "axes"));
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  return r;
}

// Finishes a reduction computed with kept dimensions: drops them unless keepdims, keeping the
// remaining dimensions' layout.
void finish_reduce(Importer& imp, const OVal& x, TVal v, const std::vector<int64_t>& axes, bool keepdims, int out_type) {
  if (keepdims) {
    imp.set_out(0, v, x.perm, out_type);
    return;
  }
  const size_t r = x.shape.size();
  std::vector<int64_t> perm = x.perm;
  if (perm.empty()) {
    perm.resize(r);
    std::iota(perm.begin(), perm.end(), 0);
  }
  // Remaining ONNX dims renumbered; the TOSA value keeps its order of the remaining ones.
  std::vector<int64_t> renum(r, -1);
  int64_t k = 0;
  for (size_t d = 0; d < r; ++d)
    if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) == axes.end()) renum[d] = k++;
  Shape s;
  std::vector<int64_t> np;
  for (size_t i = 0; i < r; ++i) {
    const int64_t od = perm[i];
    if (renum[static_cast<size_t>(od)] < 0) continue;
    s.push_back(v.shape()[i]);
    np.push_back(renum[static_cast<size_t>(od)]);
  }
  imp.set_out(0, imp.reshape(v, s), np, out_type);
}

enum class Red { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

void reduction(Importer& imp, Red kind) {
  const OVal& x = imp.in(0);
  const int64_t r = static_cast<int64_t>(x.shape.size());
  bool noop = false;
  std::vector<int64_t> axes = reduce_axes(imp, r, &noop);
  const bool keepdims = imp.attr_int("keepdims", 1) != 0;
  TVal v = x.v;
  if (kind == Red::kL1) v = imp.emit(Op::ABS, {v});
  if (kind == Red::kL2 || kind == Red::kSumSquare) v = imp.mul(v, v);
  TVal max_kept;
  if (kind == Red::kLogSumExp) {
    // Stable: max + log(sum(exp(x - max))).
    TVal m = v;
    for (int64_t a : axes) m = imp.reduce(Op::REDUCE_MAX, m, tosa_axis(x.perm, a));
    max_kept = m;
    v = imp.emit(Op::EXP, {imp.sub(v, m)});
  }
  if (noop) {
    imp.set_out(0, v, x.perm, x.onnx_type);
    return;
  }
  Op op = Op::REDUCE_SUM;
  if (kind == Red::kMax) op = Op::REDUCE_MAX;
  if (kind == Red::kMin) op = Op::REDUCE_MIN;
  if (kind == Red::kProd) op = Op::REDUCE_PRODUCT;
  int64_t count = 1;
  for (int64_t a : axes) {
    v = imp.reduce(op, v, tosa_axis(x.perm, a));
    count *= x.shape[static_cast<size_t>(a)];
  }
  if (kind == Red::kMean) {
    if (!is_float(v.dtype())) imp.fail("ReduceMean of integers is not supported");
    v = imp.mul(v, full_like(imp, v, 1.0 / static_cast<double>(count)));
  }
  if (kind == Red::kL2) v = sqrt_of(imp, v);
  if (kind == Red::kLogSum) v = imp.emit(Op::LOG, {v});
  if (kind == Red::kLogSumExp) v = imp.add(imp.emit(Op::LOG, {v}), max_kept);
  finish_reduce(imp, x, v, axes, keepdims, x.onnx_type);
}

// Softmax / LogSoftmax over the TOSA axes `axes` of v.
TVal softmax_core(Importer& imp, TVal v, const std::vector<int64_t>& axes, bool log) {
  TVal m = v;
  for (int64_t a : axes) m = imp.reduce(Op::REDUCE_MAX, m, a);
  TVal d = imp.sub(v, m);
  TVal e = imp.emit(Op::EXP, {d});
  TVal s = e;
  for (int64_t a : axes) s = imp.reduce(Op::REDUCE_SUM, s, a);
  if (log) return imp.sub(d, imp.emit(Op::LOG, {s}));
  return imp.mul(e, imp.emit(Op::RECIPROCAL, {s}));
}

void softmax(Importer& imp, bool log) {
  const OVal& x = imp.in(0);
  require_float(imp, x.v);
  const int64_t r = static_cast<int64_t>(x.shape.size());
  if (imp.opset() >= 13) {
    const int64_t axis = norm_axis(imp, imp.attr_int("axis", -1), r);
    imp.set_out(0, softmax_core(imp, x.v, {tosa_axis(x.perm, axis)}, log), x.perm, x.onnx_type);
    return;
  }
  // Before opset 13: the input is seen as 2-D [prod(shape[:axis]), prod(shape[axis:])].
  const int64_t axis = norm_axis(imp, imp.attr_int("axis", 1), r);
  if (!x.perm.empty() && axis == r - 1) {
    imp.set_out(0, softmax_core(imp, x.v, {tosa_axis(x.perm, axis)}, log), x.perm, x.onnx_type);
    return;
  }
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < r; ++i) (i < axis ? outer : inner) *= x.shape[static_cast<size_t>(i)];
  TVal v = imp.reshape(imp.plain(x), {outer, inner});
  imp.set_out(0, imp.reshape(softmax_core(imp, v, {1}, log), x.shape), {}, x.onnx_type);
}

// A per-channel vector (C values, ONNX dim 1) shaped to broadcast against x in x's layout.
TVal channel_vector(Importer& imp, const OVal& x, TVal vec) {
  const size_t r = x.shape.size();
  if (r < 2) imp.fail("input " + shape_str(x.shape) + " has no channel dimension: this operator needs rank >= 2 (N, C, ...)", ErrorCode::kInvalidArgument);
  const int64_t c = vec.shape().empty() ? 1 : shape_elements(vec.shape());
  if (c != x.shape[1] && c != 1)
    imp.fail("a per-channel operand has " + std::to_string(c) + " values for " + std::to_string(x.shape[1]) + " channels (input " +
                 shape_str(x.shape) + ")",
             ErrorCode::kInvalidArgument);
  Shape s(r, 1);
  s[1] = c;
  TVal v = imp.reshape(vec, s);
  return x.perm.empty() ? v : imp.transpose(v, x.perm);
}

// Integer RESCALE parameters for a real scale: multiplier (31-bit) and shift, as TOSA defines them.
std::pair<int32_t, int8_t> rescale_params(Importer& imp, double scale) {
  if (!(scale > 0) || !std::isfinite(scale)) imp.fail("quantization scale " + std::to_string(scale) + " must be positive", ErrorCode::kInvalidArgument);
  int exp = 0;
  const double m = std::frexp(scale, &exp);  // scale = m * 2^exp, m in [0.5, 1)
  int64_t mult = static_cast<int64_t>(std::llround(m * (1LL << 31)));
  if (mult == (1LL << 31)) {
    mult /= 2;
    ++exp;
  }
  int shift = 31 - exp;
  if (shift > 62) {
    // Too small to represent: the result is 0 (multiplier shifted away).
    mult >>= (shift - 62);
    shift = 62;
  }
  if (shift < 2) imp.fail("quantization scale " + std::to_string(scale) + " is too large for an int32 RESCALE", ErrorCode::kUnsupported);
  return {static_cast<int32_t>(mult), static_cast<int8_t>(shift)};
}

}  // namespace

// Shared with lower_nn.cpp: RESCALE of int32 accumulators to int8 with per-tensor or per-channel
// scales (channels on the last TOSA axis).
TVal rescale_to(Importer& imp, const TVal& acc, const std::vector<double>& scales, int64_t out_zp, DType out,
                int64_t in_zp) {
  std::vector<int64_t> mult, shift;
  for (double s : scales) {
    auto [m, sh] = rescale_params(imp, s);
    mult.push_back(m);
    shift.push_back(sh);
  }
  const bool per_channel = scales.size() > 1;
  const int64_t nc = static_cast<int64_t>(scales.size());
  TVal tm = imp.const_tensor(Tensor::from_ints({DType::kInt32, {nc}}, mult));
  TVal ts = imp.const_tensor(Tensor::from_ints({DType::kInt8, {nc}}, shift));
  return imp.emit_as(Op::RESCALE, out,
                     {acc, tm, ts, imp.scalar(acc.dtype(), static_cast<double>(in_zp), 1), imp.scalar(out, static_cast<double>(out_zp), 1)},
                     {{"scale32", true}, {"rounding_mode", static_cast<int64_t>(RoundingMode::kDouble)}, {"per_channel", per_channel}});
}

void lower_Add(Importer& imp, const onnx::NodeProto&) { binary(imp, Op::ADD); }
void lower_Sub(Importer& imp, const onnx::NodeProto&) { binary(imp, Op::SUB); }
void lower_Mul(Importer& imp, const onnx::NodeProto&) { binary(imp, Op::MUL); }
void lower_Max(Importer& imp, const onnx::NodeProto&) { variadic(imp, Op::MAXIMUM, false); }
void lower_Min(Importer& imp, const onnx::NodeProto&) { variadic(imp, Op::MINIMUM, false); }
void lower_Sum(Importer& imp, const onnx::NodeProto&) { variadic(imp, Op::ADD, false); }
void lower_Mean(Importer& imp, const onnx::NodeProto&) { variadic(imp, Op::ADD, true); }

void lower_Div(Importer& imp, const onnx::NodeProto&) {
  std::vector<int64_t> perm;
  Shape shape;
  auto ops = imp.elementwise_operands({0, 1}, &perm, &shape);
  TVal r;
  if (is_float(ops[0].dtype())) {
    r = imp.mul(ops[0], imp.emit(Op::RECIPROCAL, {ops[1]}));
  } else {
    r = imp.emit(Op::INTDIV, ops);
  }
  imp.set_out(0, r, perm, imp.in(0).onnx_type);
}

void lower_Pow(Importer& imp, const onnx::NodeProto&) {
  const OVal& b = imp.in(1);
  if (b.v.is_const() && shape_elements(b.shape) == 1 && is_float(imp.in(0).v.dtype())) {
    const double e = b.v.c->at_double(0);
    if (e == 1.0) { imp.alias_out(0, imp.in(0)); return; }
    if (e == 2.0) { unary(imp, [&](TVal v) { return imp.mul(v, v); }); return; }
    if (e == 3.0) { unary(imp, [&](TVal v) { return imp.mul(imp.mul(v, v), v); }); return; }
    if (e == -1.0) { unary(imp, [&](TVal v) { return imp.emit(Op::RECIPROCAL, {v}); }); return; }
  }
  std::vector<int64_t> perm;
  Shape shape;
  auto ops = imp.elementwise_operands({0, 1}, &perm, &shape);
  if (!is_float(ops[0].dtype())) {
    // An integer base: |x|^y in float32, rounded back, negated for a negative base and an odd
    // exponent. Exact while the result is below 2^24 (ONNX Runtime computes it in integers).
    if (ops[0].dtype() == DType::kBool) imp.fail("Pow of bool values is not defined", ErrorCode::kInvalidArgument);
    TVal x = imp.cast(ops[0], DType::kInt32);
    TVal y = ops[1];
    TVal yi = is_float(y.dtype()) ? imp.cast(imp.emit(Op::FLOOR, {imp.cast(y, DType::kFp32)}), DType::kInt32) : imp.cast(y, DType::kInt32);
    TVal ax = imp.cast(imp.emit(Op::ABS, {x}), DType::kFp32);
    TVal p = imp.cast(imp.emit(Op::POW, {ax, imp.cast(y, DType::kFp32)}), DType::kInt32);
    TVal odd = imp.emit(Op::EQUAL, {imp.emit(Op::BITWISE_AND, {yi, imp.scalar(DType::kInt32, 1, yi.rank())}), imp.scalar(DType::kInt32, 1, yi.rank())});
    TVal neg = imp.emit(Op::LOGICAL_AND, {imp.emit(Op::GREATER, {imp.scalar(DType::kInt32, 0, x.rank()), x}), odd});
    TVal r = imp.emit(Op::SELECT, {neg, imp.emit(Op::NEGATE, {p, imp.scalar(DType::kInt32, 0, 1), imp.scalar(DType::kInt32, 0, 1)}), p});
    imp.set_out(0, imp.cast(r, ops[0].dtype()), perm, imp.in(0).onnx_type);
    return;
  }
  if (ops[1].dtype() != ops[0].dtype()) ops[1] = imp.cast(ops[1], ops[0].dtype());
  imp.set_out(0, imp.emit(Op::POW, ops), perm, imp.in(0).onnx_type);
}

void lower_Equal(Importer& imp, const onnx::NodeProto&) { binary(imp, Op::EQUAL, kOBool); }
void lower_Greater(Importer& imp, const onnx::NodeProto&) { binary(imp, Op::GREATER, kOBool); }
void lower_GreaterOrEqual(Importer& imp, const onnx::NodeProto&) { binary(imp, Op::GREATER_EQUAL, kOBool); }
void lower_Less(Importer& imp, const onnx::NodeProto&) {
  std::vector<int64_t> perm;
  Shape shape;
  auto ops = imp.elementwise_operands({0, 1}, &perm, &shape);
  imp.set_out(0, imp.emit(Op::GREATER, {ops[1], ops[0]}), perm, kOBool);
}
void lower_LessOrEqual(Importer& imp, const onnx::NodeProto&) {
  std::vector<int64_t> perm;
  Shape shape;
  auto ops = imp.elementwise_operands({0, 1}, &perm, &shape);
  imp.set_out(0, imp.emit(Op::GREATER_EQUAL, {ops[1], ops[0]}), perm, kOBool);
}
void lower_And(Importer& imp, const onnx::NodeProto&) { binary(imp, Op::LOGICAL_AND, kOBool); }
void lower_Or(Importer& imp, const onnx::NodeProto&) { binary(imp, Op::LOGICAL_OR, kOBool); }
void lower_Xor(Importer& imp, const onnx::NodeProto&) { binary(imp, Op::LOGICAL_XOR, kOBool); }
void lower_Not(Importer& imp, const onnx::NodeProto&) { unary(imp, [&](TVal v) { return imp.emit(Op::LOGICAL_NOT, {v}); }); }

#define WEFT_SIMPLE_UNARY(NAME, OP) \
  void lower_##NAME(Importer& imp, const onnx::NodeProto&) { unary(imp, [&](TVal v) { return imp.emit(Op::OP, {v}); }); }
WEFT_SIMPLE_UNARY(Exp, EXP)
WEFT_SIMPLE_UNARY(Log, LOG)
WEFT_SIMPLE_UNARY(Abs, ABS)
WEFT_SIMPLE_UNARY(Reciprocal, RECIPROCAL)
WEFT_SIMPLE_UNARY(Floor, FLOOR)
WEFT_SIMPLE_UNARY(Ceil, CEIL)
WEFT_SIMPLE_UNARY(Sigmoid, SIGMOID)
WEFT_SIMPLE_UNARY(Tanh, TANH)
WEFT_SIMPLE_UNARY(Erf, ERF)
WEFT_SIMPLE_UNARY(Sin, SIN)
WEFT_SIMPLE_UNARY(Cos, COS)
#undef WEFT_SIMPLE_UNARY

void lower_Sqrt(Importer& imp, const onnx::NodeProto&) {
  unary(imp, [&](TVal v) {
    require_float(imp, v);
    return sqrt_of(imp, v);
  });
}

void lower_Neg(Importer& imp, const onnx::NodeProto&) {
  unary(imp, [&](TVal v) {
    if (is_float(v.dtype())) return imp.emit(Op::NEGATE, {v, imp.scalar(v.dtype(), 0, 1), imp.scalar(v.dtype(), 0, 1)});
    return imp.sub(full_like(imp, v, 0), v);
  });
}

void lower_Sign(Importer& imp, const onnx::NodeProto&) {
  unary(imp, [&](TVal v) {
    TVal pos = imp.emit(Op::GREATER, {v, full_like(imp, v, 0)});
    TVal neg = imp.emit(Op::GREATER, {full_like(imp, v, 0), v});
    return imp.emit(Op::SELECT, {pos, full_like(imp, v, 1), imp.emit(Op::SELECT, {neg, full_like(imp, v, -1), full_like(imp, v, 0)})});
  });
}

void lower_Relu(Importer& imp, const onnx::NodeProto&) {
  unary(imp, [&](TVal v) {
    return imp.clamp(v, 0, is_float(v.dtype()) ? kInf : static_cast<double>(int_max(v.dtype())));
  });
}

void lower_LeakyRelu(Importer& imp, const onnx::NodeProto&) {
  const double alpha = imp.attr_float("alpha", 0.01f);
  unary(imp, [&](TVal v) {
    require_float(imp, v);
    TVal scaled = imp.mul(v, full_like(imp, v, alpha));
    TVal pos = imp.emit(Op::GREATER_EQUAL, {v, full_like(imp, v, 0)});
    return imp.emit(Op::SELECT, {pos, v, scaled});
  });
}

void lower_PRelu(Importer& imp, const onnx::NodeProto&) {
  std::vector<int64_t> perm;
  Shape shape;
  auto ops = imp.elementwise_operands({0, 1}, &perm, &shape);
  TVal x = ops[0];
  if (x.shape() != shape) {
    // The slope is larger than x in some dimension: broadcast x explicitly.
    imp.fail("the slope " + shape_str(imp.in(1).shape) + " broadcasts beyond the input " + shape_str(imp.in(0).shape), ErrorCode::kInvalidArgument);
  }
  TVal pos = imp.emit(Op::GREATER_EQUAL, {x, full_like(imp, x, 0)});
  imp.set_out(0, imp.emit(Op::SELECT, {pos, x, imp.mul(x, ops[1])}), perm, imp.in(0).onnx_type);
}

void lower_Elu(Importer& imp, const onnx::NodeProto&) {
  const double alpha = imp.attr_float("alpha", 1.f);
  unary(imp, [&](TVal v) {
    require_float(imp, v);
    TVal neg = imp.mul(imp.sub(imp.emit(Op::EXP, {v}), full_like(imp, v, 1)), full_like(imp, v, alpha));
    return imp.emit(Op::SELECT, {imp.emit(Op::GREATER, {v, full_like(imp, v, 0)}), v, neg});
  });
}

// log(1 + exp(x)) = max(x, 0) + log(1 + exp(-|x|)), which does not overflow.
TVal softplus_of(Importer& imp, const TVal& v) {
  TVal e = imp.emit(Op::EXP, {imp.emit(Op::NEGATE, {imp.emit(Op::ABS, {v}), imp.scalar(v.dtype(), 0, 1), imp.scalar(v.dtype(), 0, 1)})});
  return imp.add(imp.clamp(v, 0, kInf), imp.emit(Op::LOG, {imp.add(e, full_like(imp, v, 1))}));
}

void lower_Softplus(Importer& imp, const onnx::NodeProto&) {
  unary(imp, [&](TVal v) {
    require_float(imp, v);
    return softplus_of(imp, v);
  });
}

// Mish (opset 18): x * tanh(softplus(x)), as torch.nn.Mish exports it from opset 18 (and as its
// earlier exports write it out); the CPU backend runs the chain as one element-wise loop.
void lower_Mish(Importer& imp, const onnx::NodeProto&) {
  unary(imp, [&](TVal v) {
    require_float(imp, v);
    return imp.mul(v, imp.emit(Op::TANH, {softplus_of(imp, v)}));
  });
}

void lower_Softsign(Importer& imp, const onnx::NodeProto&) {
  unary(imp, [&](TVal v) {
    require_float(imp, v);
    return imp.mul(v, imp.emit(Op::RECIPROCAL, {imp.add(imp.emit(Op::ABS, {v}), full_like(imp, v, 1))}));
  });
}

void lower_HardSigmoid(Importer& imp, const onnx::NodeProto&) {
  const double alpha = imp.attr_float("alpha", 0.2f), beta = imp.attr_float("beta", 0.5f);
  unary(imp, [&](TVal v) {
    require_float(imp, v);
    return imp.clamp(imp.add(imp.mul(v, full_like(imp, v, alpha)), full_like(imp, v, beta)), 0, 1);
  });
}

void lower_HardSwish(Importer& imp, const onnx::NodeProto&) {
  unary(imp, [&](TVal v) {
    require_float(imp, v);
    TVal hs = imp.clamp(imp.add(imp.mul(v, full_like(imp, v, 1.0 / 6.0)), full_like(imp, v, 0.5)), 0, 1);
    return imp.mul(v, hs);
  });
}

void lower_Clip(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  const DType dt = x.v.dtype();
  const bool fp = is_float(dt);
  double lo = fp ? -kInf : static_cast<double>(int_min(dt)), hi = fp ? kInf : static_cast<double>(int_max(dt));
  if (imp.opset() < 11) {
    lo = imp.attr_float("min", static_cast<float>(lo));
    hi = imp.attr_float("max", static_cast<float>(hi));
    imp.set_out(0, imp.clamp(x.v, lo, hi), x.perm, x.onnx_type);
    return;
  }
  TVal v = x.v;
  bool runtime_bound = false;
  for (int i : {1, 2}) {
    if (!imp.has_input(i)) continue;
    if (imp.is_const(i)) {
      double b = imp.const_doubles(i, i == 1 ? "min" : "max").at(0);
      (i == 1 ? lo : hi) = b;
    } else {
      runtime_bound = true;
    }
  }
  if (lo > hi) {
    // ONNX: when min > max every value becomes max.
    imp.set_out(0, imp.emit(Op::MAXIMUM, {imp.mul(v, full_like(imp, v, 0)), full_like(imp, v, hi)}), x.perm, x.onnx_type);
    return;
  }
  v = imp.clamp(v, lo, hi);
  if (runtime_bound) {
    for (int i : {1, 2}) {
      if (!imp.has_input(i) || imp.is_const(i)) continue;
      TVal b = imp.to_rank(imp.plain(imp.in(i)), v.rank());
      v = imp.emit(i == 1 ? Op::MAXIMUM : Op::MINIMUM, {v, b});
    }
  }
  imp.set_out(0, v, x.perm, x.onnx_type);
}

void lower_Gelu(Importer& imp, const onnx::NodeProto&) {
  const std::string approx = imp.attr_str("approximate", "none");
  unary(imp, [&](TVal v) {
    require_float(imp, v);
    TVal inner;
    if (approx == "tanh") {
      TVal x3 = imp.mul(imp.mul(v, v), v);
      TVal t = imp.mul(imp.add(v, imp.mul(x3, full_like(imp, v, 0.044715))), full_like(imp, v, std::sqrt(2.0 / M_PI)));
      inner = imp.emit(Op::TANH, {t});
    } else if (approx == "none") {
      inner = imp.emit(Op::ERF, {imp.mul(v, full_like(imp, v, M_SQRT1_2))});
    } else {
      imp.fail("approximate = '" + approx + "' is not one of none, tanh", ErrorCode::kInvalidArgument);
    }
    return imp.mul(imp.mul(v, full_like(imp, v, 0.5)), imp.add(inner, full_like(imp, v, 1)));
  });
}

void lower_Softmax(Importer& imp, const onnx::NodeProto&) { softmax(imp, false); }
void lower_LogSoftmax(Importer& imp, const onnx::NodeProto&) { softmax(imp, true); }

void lower_ReduceSum(Importer& imp, const onnx::NodeProto&) { reduction(imp, Red::kSum); }
void lower_ReduceMean(Importer& imp, const onnx::NodeProto&) { reduction(imp, Red::kMean); }
void lower_ReduceMax(Importer& imp, const onnx::NodeProto&) { reduction(imp, Red::kMax); }
void lower_ReduceMin(Importer& imp, const onnx::NodeProto&) { reduction(imp, Red::kMin); }
void lower_ReduceProd(Importer& imp, const onnx::NodeProto&) { reduction(imp, Red::kProd); }
void lower_ReduceL1(Importer& imp, const onnx::NodeProto&) { reduction(imp, Red::kL1); }
void lower_ReduceL2(Importer& imp, const onnx::NodeProto&) { reduction(imp, Red::kL2); }
void lower_ReduceSumSquare(Importer& imp, const onnx::NodeProto&) { reduction(imp, Red::kSumSquare); }
void lower_ReduceLogSum(Importer& imp, const onnx::NodeProto&) { reduction(imp, Red::kLogSum); }
void lower_ReduceLogSumExp(Importer& imp, const onnx::NodeProto&) { reduction(imp, Red::kLogSumExp); }

namespace {
void arg_reduce(Importer& imp, bool min) {
  const OVal& x = imp.in(0);
  const int64_t r = static_cast<int64_t>(x.shape.size());
  const int64_t axis = norm_axis(imp, imp.attr_int("axis", 0), r);
  const bool keepdims = imp.attr_int("keepdims", 1) != 0;
  const bool last = imp.attr_int("select_last_index", 0) != 0;
  const int64_t ta = tosa_axis(x.perm, axis);
  TVal v = x.v;
  if (min) v = is_float(v.dtype()) ? imp.emit(Op::NEGATE, {v, imp.scalar(v.dtype(), 0, 1), imp.scalar(v.dtype(), 0, 1)})
                                   : imp.sub(full_like(imp, v, 0), v);
  if (last) v = imp.emit(Op::REVERSE, {v}, {{"axis", ta}});
  TVal idx = imp.emit(Op::ARGMAX, {v}, {{"axis", ta}});
  if (last) idx = imp.sub(full_like(imp, idx, static_cast<double>(x.shape[static_cast<size_t>(axis)] - 1)), idx);
  // ARGMAX drops the axis; put it back as size 1 to share the reduction epilogue.
  Shape kept = x.v.shape();
  kept[static_cast<size_t>(ta)] = 1;
  idx = imp.reshape(idx, kept);
  finish_reduce(imp, x, idx, {axis}, keepdims, kOInt64);
}
}  // namespace

void lower_ArgMax(Importer& imp, const onnx::NodeProto&) { arg_reduce(imp, false); }

// Hardmax: 1 at the first maximum along `axis`, 0 elsewhere (opset 13): ARGMAX, then EQUAL of
// the index with a constant 0..n-1 along the axis (both broadcast), SELECT of 1 and 0.
void lower_Hardmax(Importer& imp, const onnx::NodeProto&) {
  if (imp.opset() < 13)
    imp.fail("Hardmax before opset 13 (the input coerced to 2-D around `axis`) is not supported; re-export with opset 13 or later");
  const OVal& x = imp.in(0);
  if (!is_float(x.v.dtype())) imp.fail("Hardmax needs a floating-point input", ErrorCode::kInvalidArgument);
  const int64_t r = static_cast<int64_t>(x.shape.size());
  const int64_t axis = norm_axis(imp, imp.attr_int("axis", -1), r);
  const int64_t ta = tosa_axis(x.perm, axis);
  TVal idx = imp.emit(Op::ARGMAX, {x.v}, {{"axis", ta}});
  Shape kept = x.v.shape();
  const int64_t n = kept[static_cast<size_t>(ta)];
  kept[static_cast<size_t>(ta)] = 1;
  idx = imp.reshape(idx, kept);
  Shape along(kept.size(), 1);
  along[static_cast<size_t>(ta)] = n;
  std::vector<int64_t> iota(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) iota[static_cast<size_t>(i)] = i;
  TVal positions = imp.const_tensor(Tensor::from_ints({DType::kInt32, along}, iota));
  TVal hit = imp.emit(Op::EQUAL, {idx, positions});
  const int rank = static_cast<int>(kept.size());
  TVal y = imp.emit(Op::SELECT, {hit, imp.scalar(x.v.dtype(), 1, rank), imp.scalar(x.v.dtype(), 0, rank)});
  imp.set_out(0, y, x.perm, x.onnx_type);
}
void lower_ArgMin(Importer& imp, const onnx::NodeProto&) { arg_reduce(imp, true); }

void lower_BatchNormalization(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  const bool training = imp.attr_int("training_mode", 0) != 0;
  if (!training && (imp.wants_output(1) || imp.wants_output(2))) imp.fail("the running mean/variance outputs exist only in training mode");
  require_float(imp, x.v);
  if (training) {
    // Normalized by the batch's own statistics (mean and population variance over every axis but
    // the channel); the running statistics move towards them by (1 - momentum).
    const double eps = imp.attr_float("epsilon", 1e-5f), momentum = imp.attr_float("momentum", 0.9f);
    TVal v = imp.plain(x);
    const Shape xs = x.shape;
    std::vector<int64_t> perm{1, 0};
    for (size_t d = 2; d < xs.size(); ++d) perm.push_back(static_cast<int64_t>(d));
    const int64_t c = xs[1], m = shape_elements(xs) / c;
    TVal rows = imp.reshape(imp.transpose(v, perm), {c, m});
    const double inv = 1.0 / static_cast<double>(m);
    TVal mean = imp.mul(imp.reduce(Op::REDUCE_SUM, rows, 1), imp.scalar(v.dtype(), inv, 2));  // [C, 1]
    TVal d = imp.sub(rows, mean);
    TVal var = imp.mul(imp.reduce(Op::REDUCE_SUM, imp.mul(d, d), 1), imp.scalar(v.dtype(), inv, 2));
    TVal a = imp.mul(imp.reshape(imp.plain(imp.in(1)), {c, 1}), imp.emit(Op::RSQRT, {imp.add(var, imp.scalar(v.dtype(), eps, 2))}));
    TVal y = imp.add(imp.mul(d, a), imp.reshape(imp.plain(imp.in(2)), {c, 1}));
    Shape ps;
    for (int64_t p : perm) ps.push_back(xs[static_cast<size_t>(p)]);
    imp.set_out(0, imp.transpose(imp.reshape(y, ps), inverse_perm(perm)), {}, x.onnx_type);
    auto running = [&](int i, const TVal& batch) {
      TVal r = imp.reshape(imp.plain(imp.in(i)), {c, 1});
      return imp.reshape(imp.add(imp.mul(r, imp.scalar(v.dtype(), momentum, 2)), imp.mul(batch, imp.scalar(v.dtype(), 1 - momentum, 2))), {c});
    };
    if (imp.wants_output(1)) imp.set_out(1, running(3, mean), {}, x.onnx_type);
    if (imp.wants_output(2)) imp.set_out(2, running(4, var), {}, x.onnx_type);
    return;
  }
  const double eps = imp.attr_float("epsilon", 1e-5f);
  // y = x * a + b with a = scale / sqrt(var + eps), b = bias - mean * a (constants fold).
  TVal scale = imp.plain(imp.in(1)), bias = imp.plain(imp.in(2)), mean = imp.plain(imp.in(3)), var = imp.plain(imp.in(4));
  TVal a = imp.mul(scale, imp.emit(Op::RSQRT, {imp.add(var, imp.scalar(var.dtype(), eps, var.rank()))}));
  TVal b = imp.sub(bias, imp.mul(mean, a));
  TVal y = imp.add(imp.mul(x.v, channel_vector(imp, x, a)), channel_vector(imp, x, b));
  imp.set_out(0, y, x.perm, x.onnx_type);
}

void lower_InstanceNormalization(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  require_float(imp, x.v);
  const double eps = imp.attr_float("epsilon", 1e-5f);
  const size_t r = x.shape.size();
  TVal v = x.v;
  int64_t count = 1;
  TVal mean = v;
  for (size_t d = 2; d < r; ++d) {
    mean = imp.reduce(Op::REDUCE_SUM, mean, tosa_axis(x.perm, static_cast<int64_t>(d)));
    count *= x.shape[d];
  }
  mean = imp.mul(mean, full_like(imp, mean, 1.0 / static_cast<double>(count)));
  TVal dv = imp.sub(v, mean);
  TVal var = imp.mul(dv, dv);
  for (size_t d = 2; d < r; ++d) var = imp.reduce(Op::REDUCE_SUM, var, tosa_axis(x.perm, static_cast<int64_t>(d)));
  var = imp.mul(var, full_like(imp, var, 1.0 / static_cast<double>(count)));
  TVal y = imp.mul(dv, imp.emit(Op::RSQRT, {imp.add(var, full_like(imp, var, eps))}));
  y = imp.add(imp.mul(y, channel_vector(imp, x, imp.plain(imp.in(1)))), channel_vector(imp, x, imp.plain(imp.in(2))));
  imp.set_out(0, y, x.perm, x.onnx_type);
}

void lower_LayerNormalization(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  require_float(imp, x.v);
  const int64_t r = static_cast<int64_t>(x.shape.size());
  const int64_t axis = norm_axis(imp, imp.attr_int("axis", -1), r);
  const double eps = imp.attr_float("epsilon", 1e-5f);
  // Rows normalized alone: where x is carried with only axes before `axis` permuted, the norm is
  // taken in that layout and keeps it (no TRANSPOSE; see lower_MatMul).
  bool keep = !x.perm.empty();
  for (int64_t d = axis; d < r && keep; ++d) keep = x.perm[static_cast<size_t>(d)] == d;
  const std::vector<int64_t> layout = keep ? x.perm : std::vector<int64_t>{};
  TVal v = keep ? x.v : imp.plain(x);
  int64_t count = 1;
  TVal mean = v;
  for (int64_t d = axis; d < r; ++d) {
    mean = imp.reduce(Op::REDUCE_SUM, mean, d);
    count *= x.shape[static_cast<size_t>(d)];
  }
  mean = imp.mul(mean, full_like(imp, mean, 1.0 / static_cast<double>(count)));
  TVal dv = imp.sub(v, mean);
  TVal var = imp.mul(dv, dv);
  for (int64_t d = axis; d < r; ++d) var = imp.reduce(Op::REDUCE_SUM, var, d);
  var = imp.mul(var, full_like(imp, var, 1.0 / static_cast<double>(count)));
  TVal inv = imp.emit(Op::RSQRT, {imp.add(var, full_like(imp, var, eps))});
  TVal y = imp.mul(dv, inv);
  y = imp.mul(y, imp.to_rank(imp.plain(imp.in(1)), static_cast<int>(r)));
  if (imp.has_input(2)) y = imp.add(y, imp.to_rank(imp.plain(imp.in(2)), static_cast<int>(r)));
  imp.set_out(0, y, layout, x.onnx_type);
  imp.set_out(1, mean, layout, x.onnx_type);  // [d0..d(axis-1), 1, ..., 1]
  imp.set_out(2, inv, layout, x.onnx_type);
}

void lower_MeanVarianceNormalization(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  require_float(imp, x.v);
  const int64_t r = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> axes = imp.attr_ints("axes").value_or(std::vector<int64_t>{0, 2, 3});
  int64_t count = 1;
  TVal mean = x.v;
  for (int64_t& a : axes) {
    a = norm_axis(imp, a, r, "axes");
    mean = imp.reduce(Op::REDUCE_SUM, mean, tosa_axis(x.perm, a));
    count *= x.shape[static_cast<size_t>(a)];
  }
  mean = imp.mul(mean, full_like(imp, mean, 1.0 / static_cast<double>(count)));
  TVal dv = imp.sub(x.v, mean);
  TVal var = imp.mul(dv, dv);
  for (int64_t a : axes) var = imp.reduce(Op::REDUCE_SUM, var, tosa_axis(x.perm, a));
  var = imp.mul(var, full_like(imp, var, 1.0 / static_cast<double>(count)));
  // ONNX: (x - mean) / (sqrt(var) + 1e-9).
  TVal den = imp.add(sqrt_of(imp, var), full_like(imp, var, 1e-9));
  imp.set_out(0, imp.mul(dv, imp.emit(Op::RECIPROCAL, {den})), x.perm, x.onnx_type);
}

void lower_IsNaN(Importer& imp, const onnx::NodeProto&) {
  unary(imp, [&](TVal v) { require_float(imp, v); return imp.emit(Op::LOGICAL_NOT, {imp.emit(Op::EQUAL, {v, v})}); }, kOBool);
}

void lower_IsInf(Importer& imp, const onnx::NodeProto&) {
  const bool pos = imp.attr_int("detect_positive", 1) != 0, neg = imp.attr_int("detect_negative", 1) != 0;
  unary(imp, [&](TVal v) {
    require_float(imp, v);
    TVal p = imp.emit(Op::EQUAL, {v, full_like(imp, v, kInf)});
    TVal n = imp.emit(Op::EQUAL, {v, full_like(imp, v, -kInf)});
    if (pos && neg) return imp.emit(Op::LOGICAL_OR, {p, n});
    if (pos) return p;
    if (neg) return n;
    return imp.emit(Op::LOGICAL_AND, {p, n});  // all false
  }, kOBool);
}

void lower_Tan(Importer& imp, const onnx::NodeProto&) {
  unary(imp, [&](TVal v) { require_float(imp, v); return imp.mul(imp.emit(Op::SIN, {v}), imp.emit(Op::RECIPROCAL, {imp.emit(Op::COS, {v})})); });
}

// ---- Inverse trigonometric and hyperbolic functions -------------------------------------------------
//
// TOSA 1.0 has SIN and COS but no inverses, so they are built from arithmetic:
//   atan: reduced to |t| <= tan(pi/8) (t = |x|; above tan(3pi/8) use pi/2 + atan(-1/t), above tan(pi/8)
//         pi/4 + atan((t-1)/(t+1))), then an odd polynomial of degree 9 (Cephes's atanf coefficients,
//         relative error about 1e-7 in float32), the sign restored last;
//   asin(x) = 2 atan(x / (1 + sqrt(1 - x^2))),  acos(x) = 2 atan(sqrt(1 - x^2) / (1 + x)),
//   asinh(x) = sign(x) log(|x| + sqrt(x^2 + 1)),  acosh(x) = log(x + sqrt(x^2 - 1)),
//   atanh(x) = log((1 + x) / (1 - x)) / 2.
// Out-of-domain inputs give NaN as ONNX Runtime's do (POW of a negative base, LOG of a negative).
namespace {
TVal atan_of(Importer& imp, const TVal& x) {
  auto c = [&](double v) { return full_like(imp, x, v); };
  TVal t = imp.emit(Op::ABS, {x});
  TVal big = imp.emit(Op::GREATER, {t, c(2.414213562373095)});
  TVal mid = imp.emit(Op::GREATER, {t, c(0.4142135623730950)});
  TVal r_big = imp.emit(Op::NEGATE, {imp.emit(Op::RECIPROCAL, {t}), imp.scalar(x.dtype(), 0, 1), imp.scalar(x.dtype(), 0, 1)});
  TVal r_mid = imp.mul(imp.sub(t, c(1)), imp.emit(Op::RECIPROCAL, {imp.add(t, c(1))}));
  TVal r = imp.emit(Op::SELECT, {big, r_big, imp.emit(Op::SELECT, {mid, r_mid, t})});
  TVal base = imp.emit(Op::SELECT, {big, c(1.5707963267948966), imp.emit(Op::SELECT, {mid, c(0.7853981633974483), c(0)})});
  TVal z = imp.mul(r, r);
  TVal p = c(8.05374449538e-2);
  p = imp.add(imp.mul(p, z), c(-1.38776856032e-1));
  p = imp.add(imp.mul(p, z), c(1.99777106478e-1));
  p = imp.add(imp.mul(p, z), c(-3.33329491539e-1));
  TVal y = imp.add(base, imp.add(imp.mul(imp.mul(p, z), r), r));
  TVal neg = imp.emit(Op::GREATER, {c(0), x});
  return imp.emit(Op::SELECT, {neg, imp.emit(Op::NEGATE, {y, imp.scalar(x.dtype(), 0, 1), imp.scalar(x.dtype(), 0, 1)}), y});
}
TVal div_of(Importer& imp, const TVal& a, const TVal& b) { return imp.mul(a, imp.emit(Op::RECIPROCAL, {b})); }
}  // namespace

void lower_Atan(Importer& imp, const onnx::NodeProto&) {
  unary(imp, [&](TVal v) { require_float(imp, v); return atan_of(imp, v); });
}
void lower_Asin(Importer& imp, const onnx::NodeProto&) {
  unary(imp, [&](TVal v) {
    require_float(imp, v);
    TVal s = sqrt_of(imp, imp.sub(full_like(imp, v, 1), imp.mul(v, v)));
    return imp.mul(full_like(imp, v, 2), atan_of(imp, div_of(imp, v, imp.add(full_like(imp, v, 1), s))));
  });
}
void lower_Acos(Importer& imp, const onnx::NodeProto&) {
  unary(imp, [&](TVal v) {
    require_float(imp, v);
    TVal s = sqrt_of(imp, imp.sub(full_like(imp, v, 1), imp.mul(v, v)));
    return imp.mul(full_like(imp, v, 2), atan_of(imp, div_of(imp, s, imp.add(full_like(imp, v, 1), v))));
  });
}
void lower_Asinh(Importer& imp, const onnx::NodeProto&) {
  unary(imp, [&](TVal v) {
    require_float(imp, v);
    TVal a = imp.emit(Op::ABS, {v});
    TVal y = imp.emit(Op::LOG, {imp.add(a, sqrt_of(imp, imp.add(imp.mul(a, a), full_like(imp, v, 1))))});
    TVal neg = imp.emit(Op::GREATER, {full_like(imp, v, 0), v});
    return imp.emit(Op::SELECT, {neg, imp.emit(Op::NEGATE, {y, imp.scalar(v.dtype(), 0, 1), imp.scalar(v.dtype(), 0, 1)}), y});
  });
}
void lower_Acosh(Importer& imp, const onnx::NodeProto&) {
  unary(imp, [&](TVal v) {
    require_float(imp, v);
    return imp.emit(Op::LOG, {imp.add(v, sqrt_of(imp, imp.sub(imp.mul(v, v), full_like(imp, v, 1))))});
  });
}
void lower_Atanh(Importer& imp, const onnx::NodeProto&) {
  unary(imp, [&](TVal v) {
    require_float(imp, v);
    TVal one = full_like(imp, v, 1);
    return imp.mul(full_like(imp, v, 0.5), imp.emit(Op::LOG, {div_of(imp, imp.add(one, v), imp.sub(one, v))}));
  });
}

// BitShift on unsigned integers (computed in int32): LOGICAL_LEFT_SHIFT / LOGICAL_RIGHT_SHIFT;
// a left shift out of an 8/16-bit type wraps where the value leaves the graph or is cast.
void lower_BitShift(Importer& imp, const onnx::NodeProto&) {
  const std::string dir = imp.attr_str("direction", "");
  if (dir != "LEFT" && dir != "RIGHT") imp.fail("direction must be \"LEFT\" or \"RIGHT\", got \"" + dir + "\"", ErrorCode::kInvalidArgument);
  if (!is_unsigned_onnx(imp.in(0).onnx_type))
    imp.fail(std::string("BitShift is defined on unsigned integers, got ") + onnx_type_name(imp.in(0).onnx_type), ErrorCode::kInvalidArgument);
  std::vector<int64_t> perm;
  Shape shape;
  auto ops = imp.elementwise_operands({0, 1}, &perm, &shape);
  TVal a = imp.cast(ops[0], DType::kInt32), b = imp.cast(ops[1], DType::kInt32);
  imp.set_out(0, imp.emit(dir == "LEFT" ? Op::LOGICAL_LEFT_SHIFT : Op::LOGICAL_RIGHT_SHIFT, {a, b}), perm, imp.in(0).onnx_type);
}

namespace {
TVal exp_neg(Importer& imp, const TVal& v) {
  return imp.emit(Op::EXP, {imp.emit(Op::NEGATE, {v, imp.scalar(v.dtype(), 0, 1), imp.scalar(v.dtype(), 0, 1)})});
}
}  // namespace

void lower_Sinh(Importer& imp, const onnx::NodeProto&) {
  unary(imp, [&](TVal v) { require_float(imp, v); return imp.mul(imp.sub(imp.emit(Op::EXP, {v}), exp_neg(imp, v)), full_like(imp, v, 0.5)); });
}

void lower_Cosh(Importer& imp, const onnx::NodeProto&) {
  unary(imp, [&](TVal v) { require_float(imp, v); return imp.mul(imp.add(imp.emit(Op::EXP, {v}), exp_neg(imp, v)), full_like(imp, v, 0.5)); });
}

void lower_ThresholdedRelu(Importer& imp, const onnx::NodeProto&) {
  const double alpha = imp.attr_float("alpha", 1.f);
  unary(imp, [&](TVal v) {
    require_float(imp, v);
    return imp.emit(Op::SELECT, {imp.emit(Op::GREATER, {v, full_like(imp, v, alpha)}), v, full_like(imp, v, 0)});
  });
}

void lower_Celu(Importer& imp, const onnx::NodeProto&) {
  const double alpha = imp.attr_float("alpha", 1.f);
  unary(imp, [&](TVal v) {
    require_float(imp, v);
    // max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
    TVal e = imp.sub(imp.emit(Op::EXP, {imp.mul(v, full_like(imp, v, 1.0 / alpha))}), full_like(imp, v, 1));
    TVal neg = imp.clamp(imp.mul(e, full_like(imp, v, alpha)), -kInf, 0);
    return imp.add(imp.clamp(v, 0, kInf), neg);
  });
}

void lower_Mod(Importer& imp, const onnx::NodeProto&) {
  const bool fmod = imp.attr_int("fmod", 0) != 0;
  std::vector<int64_t> perm;
  Shape shape;
  auto ops = imp.elementwise_operands({0, 1}, &perm, &shape);
  TVal a = ops[0], b = ops[1];
  TVal r;
  if (is_float(a.dtype())) {
    if (!fmod) imp.fail("Mod of floating-point values requires fmod = 1", ErrorCode::kInvalidArgument);
    // a - trunc(a / b) * b
    TVal q = imp.mul(a, imp.emit(Op::RECIPROCAL, {b}));
    TVal pos = imp.emit(Op::GREATER_EQUAL, {q, full_like(imp, q, 0)});
    TVal t = imp.emit(Op::SELECT, {pos, imp.emit(Op::FLOOR, {q}), imp.emit(Op::CEIL, {q})});
    r = imp.sub(a, imp.mul(t, b));
  } else {
    const DType narrow = a.dtype();
    a = imp.cast(a, DType::kInt32);
    b = imp.cast(b, DType::kInt32);
    r = imp.sub(a, imp.mul(imp.emit(Op::INTDIV, {a, b}), b));  // sign of the dividend (C's %)
    if (!fmod) {
      // Python's %: the sign of the divisor.
      TVal zero = full_like(imp, r, 0);
      TVal rneg = imp.emit(Op::GREATER, {zero, r}), bneg = imp.emit(Op::GREATER, {zero, b});
      TVal nz = imp.emit(Op::LOGICAL_NOT, {imp.emit(Op::EQUAL, {r, zero})});
      TVal fix = imp.emit(Op::LOGICAL_AND, {nz, imp.emit(Op::LOGICAL_XOR, {rneg, bneg})});
      r = imp.emit(Op::SELECT, {fix, imp.add(r, b), r});
    }
    r = imp.cast(r, narrow);
  }
  imp.set_out(0, r, perm, imp.in(0).onnx_type);
}

// ---- quantization -----------------------------------------------------------------------------------

namespace {
// The quantization axis; only checked when the scale is per-axis (ONNX ignores it otherwise).
int64_t quant_axis(Importer& imp, const OVal& x) {
  if (shape_elements(imp.in(1).shape) == 1) return 0;
  return norm_axis(imp, imp.attr_int("axis", 1), static_cast<int64_t>(x.shape.size()));
}

// Scale / zero point operand i of a (De)QuantizeLinear, shaped to broadcast against x along `axis`.
TVal quant_param(Importer& imp, const OVal& x, int i, int64_t axis, DType dt) {
  const OVal& p = imp.in(i);
  TVal v = imp.cast(imp.plain(p), dt);
  if (shape_elements(p.shape) == 1) return imp.reshape(v, Shape(x.shape.size(), 1));
  Shape s(x.shape.size(), 1);
  s[static_cast<size_t>(axis)] = shape_elements(p.shape);
  v = imp.reshape(v, s);
  return x.perm.empty() ? v : imp.transpose(v, x.perm);
}
}  // namespace

void lower_QuantizeLinear(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  require_float(imp, x.v);
  int zp_type = kOUint8;  // ONNX's default without a zero point
  if (imp.has_input(2)) zp_type = imp.in(2).onnx_type;
  if (zp_type != kOInt8 && zp_type != kOInt16 && zp_type != kOUint8 && zp_type != kOUint16)
    imp.fail(std::string("quantization to ") + onnx_type_name(zp_type) + " is not supported (int8, uint8, int16, uint16 are)");
  // Signed results are int8/int16 values; unsigned ones are computed in int32 (0..255 / 0..65535)
  // and leave the graph as uint8/uint16 bits (RESCALE's output_unsigned).
  const bool is_u = zp_type == kOUint8 || zp_type == kOUint16;
  const int64_t lo = is_u ? 0 : (zp_type == kOInt8 ? -128 : -32768);
  const int64_t hi = zp_type == kOInt8 ? 127 : zp_type == kOUint8 ? 255 : zp_type == kOInt16 ? 32767 : 65535;
  const int64_t axis = quant_axis(imp, x);
  TVal scale = quant_param(imp, x, 1, axis, x.v.dtype());
  // y = saturate(round_half_even(x / scale) + zero_point): CAST rounds half to even (and
  // saturates at int32), the zero point is added in int32, then the result is clamped.
  TVal v = imp.cast(imp.mul(x.v, imp.emit(Op::RECIPROCAL, {scale})), DType::kInt32);
  if (imp.has_input(2)) v = imp.add(v, quant_param(imp, x, 2, axis, DType::kInt32));
  v = imp.clamp(v, static_cast<double>(lo), static_cast<double>(hi));
  if (!is_u) v = imp.cast(v, zp_type == kOInt8 ? DType::kInt8 : DType::kInt16);
  imp.set_out(0, v, x.perm, zp_type);
}

void lower_DequantizeLinear(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  if (x.onnx_type != kOInt8 && x.onnx_type != kOInt16 && x.onnx_type != kOInt32 && x.onnx_type != kOUint8 &&
      x.onnx_type != kOUint16)
    imp.fail(std::string("dequantization of ") + onnx_type_name(x.onnx_type) + " is not supported (int8, uint8, int16, uint16, int32 are)");
  const int64_t axis = quant_axis(imp, x);
  TVal v = imp.cast(x.v, DType::kFp32);
  if (imp.has_input(2)) v = imp.sub(v, quant_param(imp, x, 2, axis, DType::kFp32));
  v = imp.mul(v, quant_param(imp, x, 1, axis, DType::kFp32));
  imp.set_out(0, v, x.perm, kOFloat);
}

namespace {

// x / d rounded as a float32 division would round it, from TOSA's operators (no division, no
// fused multiply-add): q0 = x * (1/d) can be an ulp off, which moves a quotient near k + 0.5 to
// the other integer (ONNX's DynamicQuantizeLinear test has -2.5 / (5/255) = -127.49999 in float32,
// -127.5 through the reciprocal). The residual x - q0 * d is formed exactly with Dekker's
// product (Veltkamp split into 12-bit halves) and corrects q0 by r / d. Requires |q0 * 4097| finite.
TVal correctly_rounded_quotient(Importer& imp, const TVal& x, const TVal& d, const TVal& inv) {
  const int rank = static_cast<int>(x.shape().size());
  TVal q0 = imp.mul(x, inv);
  auto split = [&](const TVal& a, int r) {
    TVal c = imp.mul(a, imp.scalar(DType::kFp32, 4097.0, r));
    TVal hi = imp.sub(c, imp.sub(c, a));
    return std::pair<TVal, TVal>{hi, imp.sub(a, hi)};
  };
  auto [qh, ql] = split(q0, rank);
  auto [dh, dl] = split(d, static_cast<int>(d.shape().size()));
  TVal p = imp.mul(q0, d);
  // e = q0 * d - p exactly: ((qh*dh - p) + qh*dl + ql*dh) + ql*dl.
  TVal e = imp.add(imp.add(imp.add(imp.sub(imp.mul(qh, dh), p), imp.mul(qh, dl)), imp.mul(ql, dh)), imp.mul(ql, dl));
  TVal r = imp.sub(imp.sub(x, p), e);  // x - p is exact (p is within a few ulp of x)
  return imp.add(q0, imp.mul(r, inv));
}

}  // namespace

// DynamicQuantizeLinear: uint8 quantization of x with the scale and zero point of its range
// (extended to include 0): scale = (max - min) / 255, zero_point = saturate(round(-min / scale)),
// y = saturate(round(x / scale) + zero_point), rounding half to even.
void lower_DynamicQuantizeLinear(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  require_float(imp, x.v);
  if (x.v.dtype() != DType::kFp32) imp.fail("the input must be float32", ErrorCode::kInvalidArgument);
  const int64_t n = shape_elements(x.shape);
  TVal flat = imp.reshape(x.v, {n});
  TVal mn = imp.emit(Op::MINIMUM, {imp.reduce(Op::REDUCE_MIN, flat, 0), imp.scalar(DType::kFp32, 0, 1)});
  TVal mx = imp.emit(Op::MAXIMUM, {imp.reduce(Op::REDUCE_MAX, flat, 0), imp.scalar(DType::kFp32, 0, 1)});
  TVal scale = correctly_rounded_quotient(imp, imp.sub(mx, mn), imp.scalar(DType::kFp32, 255.0, 1),
                                          imp.scalar(DType::kFp32, 1.0 / 255.0, 1));
  TVal inv = imp.emit(Op::RECIPROCAL, {scale});
  TVal neg_min = imp.emit(Op::NEGATE, {mn, imp.scalar(DType::kFp32, 0, 1), imp.scalar(DType::kFp32, 0, 1)});
  TVal zp = imp.clamp(imp.cast(correctly_rounded_quotient(imp, neg_min, scale, inv), DType::kInt32), 0, 255);
  const Shape ones(x.v.shape().size(), 1);
  TVal q = correctly_rounded_quotient(imp, x.v, imp.reshape(scale, ones), imp.reshape(inv, ones));
  TVal y = imp.clamp(imp.add(imp.cast(q, DType::kInt32), imp.reshape(zp, ones)), 0, 255);
  imp.set_out(0, y, x.perm, kOUint8);
  imp.set_out(1, imp.reshape(scale, {}), {}, kOFloat);
  imp.set_out(2, imp.reshape(zp, {}), {}, kOUint8);
}

// ---- Losses of inference graphs ------------------------------------------------------------------
//
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opset 12/13) over input [N, C, d1, ...]
// and integer targets [N, d1, ...]: the value at each target class is picked with a one-hot mask
// (EQUAL of the target with 0..C-1 along the class axis, SELECT, REDUCE_SUM over it), weighted by
// weight[target] (0 where target == ignore_index), negated, then reduced as `reduction` says:
// "none" keeps [N, d1, ...], "sum" sums, "mean" divides the sum by the sum of the weights used.
namespace {

TVal nll_loss(Importer& imp, const TVal& x, const OVal& target, const OVal* weight) {
  const Shape xs = x.shape();
  if (xs.size() < 2) imp.fail("the input must be [N, C, d1, ...] (rank >= 2)", ErrorCode::kInvalidArgument);
  const int rank = static_cast<int>(xs.size());
  const int64_t classes = xs[1];
  Shape ts = xs;
  ts.erase(ts.begin() + 1);
  if (target.shape != ts)
    imp.fail("target has shape " + shape_str(target.shape) + ", expected " + shape_str(ts) + " for input " + shape_str(xs),
             ErrorCode::kInvalidArgument);
  TVal t = imp.plain(target);
  if (is_float(t.dtype())) imp.fail("target must hold integer class indices", ErrorCode::kInvalidArgument);
  if (t.dtype() != DType::kInt32) t = imp.cast(t, DType::kInt32);
  Shape kept = xs;
  kept[1] = 1;
  t = imp.reshape(t, kept);
  Shape along(static_cast<size_t>(rank), 1);
  along[1] = classes;
  std::vector<int64_t> iota(static_cast<size_t>(classes));
  for (int64_t i = 0; i < classes; ++i) iota[static_cast<size_t>(i)] = i;
  TVal onehot = imp.emit(Op::EQUAL, {t, imp.const_tensor(Tensor::from_ints({DType::kInt32, along}, iota))});
  TVal zero = imp.scalar(x.dtype(), 0, rank);
  TVal picked = imp.reduce(Op::REDUCE_SUM, imp.emit(Op::SELECT, {onehot, x, zero}), 1);  // [N, 1, d...]
  TVal w;  // weight of each element: weight[target], 0 where ignored
  if (weight) {
    if (weight->shape != Shape{classes}) imp.fail("weight must have C = " + std::to_string(classes) + " values", ErrorCode::kInvalidArgument);
    TVal wc = imp.reshape(imp.plain(*weight), along);
    w = imp.reduce(Op::REDUCE_SUM, imp.emit(Op::SELECT, {onehot, wc, zero}), 1);
  } else {
    w = imp.scalar(x.dtype(), 1, rank);
  }
  if (const auto* a = imp.attr("ignore_index")) {
    (void)a;
    const int64_t ignore = imp.attr_int("ignore_index", 0);
    TVal keep = imp.emit(Op::LOGICAL_NOT, {imp.emit(Op::EQUAL, {t, imp.scalar(DType::kInt32, static_cast<double>(ignore), rank)})});
    if (!weight) w = imp.emit(Op::SELECT, {keep, imp.scalar(x.dtype(), 1, rank), zero});
    else w = imp.emit(Op::SELECT, {keep, w, zero});
  }
  TVal neg = imp.emit(Op::NEGATE, {picked, imp.scalar(x.dtype(), 0, 1), imp.scalar(x.dtype(), 0, 1)});
  TVal loss = imp.mul(neg, w);  // [N, 1, d...]
  const std::string reduction = imp.attr_str("reduction", "mean");
  if (reduction == "none") return imp.reshape(loss, ts);
  if (reduction != "sum" && reduction != "mean")
    imp.fail("reduction '" + reduction + "' is not one of none, sum, mean", ErrorCode::kInvalidArgument);
  const int64_t count = shape_elements(kept);
  auto total = [&](const TVal& v) {
    TVal flat = v.shape() == kept ? imp.reshape(v, {1, count}) : imp.reshape(v, {1, 1});
    return imp.reduce(Op::REDUCE_SUM, flat, 1);  // [1, 1]
  };
  TVal sum = total(loss);
  if (reduction == "mean") {
    // The sum of the weights used; with neither weights nor ignore_index, the element count.
    TVal denom = w.shape() == kept ? total(w) : imp.scalar(x.dtype(), static_cast<double>(count), 2);
    sum = imp.mul(sum, imp.emit(Op::RECIPROCAL, {denom}));
  }
  return imp.reshape(sum, {});
}

// log(softmax(x)) along axis 1: x - max - log(sum(exp(x - max))).
TVal log_softmax_axis1(Importer& imp, const TVal& x) {
  TVal s = imp.sub(x, imp.reduce(Op::REDUCE_MAX, x, 1));
  return imp.sub(s, imp.emit(Op::LOG, {imp.reduce(Op::REDUCE_SUM, imp.emit(Op::EXP, {s}), 1)}));
}

}  // namespace

void lower_NegativeLogLikelihoodLoss(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  if (!is_float(x.v.dtype())) imp.fail("the input must be floating point", ErrorCode::kInvalidArgument);
  TVal loss = nll_loss(imp, imp.plain(x), imp.in(1), imp.has_input(2) ? &imp.in(2) : nullptr);
  imp.set_out(0, loss, {}, x.onnx_type);
}

void lower_SoftmaxCrossEntropyLoss(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  if (!is_float(x.v.dtype())) imp.fail("the scores must be floating point", ErrorCode::kInvalidArgument);
  TVal logp = log_softmax_axis1(imp, imp.plain(x));
  TVal loss = nll_loss(imp, logp, imp.in(1), imp.has_input(2) ? &imp.in(2) : nullptr);
  imp.set_out(0, loss, {}, x.onnx_type);
  if (imp.wants_output(1)) imp.set_out(1, logp, {}, x.onnx_type);
}

// ---- Selu, Shrink, Round, CumSum, OneHot, LRN, TopK -----------------------------------------------

void lower_Selu(Importer& imp, const onnx::NodeProto&) {
  const double alpha = imp.attr_float("alpha", 1.67326319217681884765625f);
  const double gamma = imp.attr_float("gamma", 1.05070102214813232421875f);
  unary(imp, [&](TVal v) {
    require_float(imp, v);
    TVal neg = imp.mul(imp.sub(imp.emit(Op::EXP, {v}), full_like(imp, v, 1)), full_like(imp, v, alpha));
    TVal y = imp.emit(Op::SELECT, {imp.emit(Op::GREATER, {v, full_like(imp, v, 0)}), v, neg});
    return imp.mul(y, full_like(imp, v, gamma));
  });
}

void lower_Shrink(Importer& imp, const onnx::NodeProto&) {
  const double lambd = imp.attr_float("lambd", 0.5f), bias = imp.attr_float("bias", 0.0f);
  unary(imp, [&](TVal v) {
    require_float(imp, v);
    TVal low = imp.emit(Op::GREATER, {full_like(imp, v, -lambd), v});
    TVal high = imp.emit(Op::GREATER, {v, full_like(imp, v, lambd)});
    return imp.emit(Op::SELECT, {low, imp.add(v, full_like(imp, v, bias)),
                                 imp.emit(Op::SELECT, {high, imp.sub(v, full_like(imp, v, bias)), full_like(imp, v, 0)})});
  });
}

// Round half to even: floor, then up where the fraction is above one half, or exactly one half
// with an odd floor.
void lower_Round(Importer& imp, const onnx::NodeProto&) {
  unary(imp, [&](TVal v) {
    require_float(imp, v);
    TVal f = imp.emit(Op::FLOOR, {v});
    TVal d = imp.sub(v, f);
    TVal half = full_like(imp, v, 0.5);
    TVal odd = imp.emit(Op::EQUAL, {imp.sub(f, imp.mul(imp.emit(Op::FLOOR, {imp.mul(f, half)}), full_like(imp, v, 2))),
                                    full_like(imp, v, 1)});
    TVal up = imp.emit(Op::LOGICAL_OR, {imp.emit(Op::GREATER, {d, half}),
                                        imp.emit(Op::LOGICAL_AND, {imp.emit(Op::EQUAL, {d, half}), odd})});
    return imp.emit(Op::SELECT, {up, imp.add(f, full_like(imp, v, 1)), f});
  });
}

// Running sums along an axis of static length, in the order ONNX adds (each prefix is the previous
// one plus the next slice), so integer and float results are those of the sequential sum.
void lower_CumSum(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  const int64_t r = static_cast<int64_t>(x.shape.size());
  auto ax = imp.const_ints(1, "axis");
  if (ax.size() != 1) imp.fail("axis must hold one value", ErrorCode::kInvalidArgument);
  const int64_t axis = norm_axis(imp, ax[0], r);
  const bool exclusive = imp.attr_int("exclusive", 0) != 0, reverse = imp.attr_int("reverse", 0) != 0;
  const int64_t ta = tosa_axis(x.perm, axis);
  const Shape vs = x.v.shape();
  const int64_t n = vs[static_cast<size_t>(ta)];
  constexpr int64_t kMaxUnrolled = 256;
  if (n > kMaxUnrolled)
    imp.fail("CumSum along an axis of " + std::to_string(n) + " elements: at most " + std::to_string(kMaxUnrolled) +
             " are unrolled (TOSA has no scan operator)");
  auto piece = [&](int64_t k) {
    std::vector<int64_t> start(vs.size(), 0), size(vs.begin(), vs.end());
    start[static_cast<size_t>(ta)] = k;
    size[static_cast<size_t>(ta)] = 1;
    return imp.slice(x.v, start, size);
  };
  std::vector<TVal> out(static_cast<size_t>(n));
  TVal acc;
  for (int64_t step = 0; step < n; ++step) {
    const int64_t k = reverse ? n - 1 - step : step;
    TVal p = piece(k);
    if (exclusive) out[static_cast<size_t>(k)] = step == 0 ? imp.sub(p, p) : acc;
    acc = step == 0 ? p : imp.add(acc, p);
    if (!exclusive) out[static_cast<size_t>(k)] = acc;
  }
  TVal y = n == 1 ? out[0] : imp.emit(Op::CONCAT, out, {{"axis", ta}});
  imp.set_out(0, y, x.perm, x.onnx_type);
}

void lower_OneHot(Importer& imp, const onnx::NodeProto&) {
  const OVal& idx = imp.in(0);
  auto depth_v = imp.const_doubles(1, "depth");
  if (depth_v.size() != 1 || depth_v[0] < 1) imp.fail("depth must be one positive value", ErrorCode::kInvalidArgument);
  const int64_t depth = static_cast<int64_t>(depth_v[0]);
  const OVal& vals = imp.in(2);
  if (shape_elements(vals.shape) != 2) imp.fail("values must hold [off_value, on_value]", ErrorCode::kInvalidArgument);
  const int64_t r = static_cast<int64_t>(idx.shape.size()) + 1;
  int64_t axis = imp.attr_int("axis", -1);
  if (axis < -r || axis >= r) imp.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r), ErrorCode::kInvalidArgument);
  if (axis < 0) axis += r;
  TVal i = imp.plain(idx);
  if (is_float(i.dtype())) i = imp.emit_as(Op::CAST, DType::kInt32, {imp.emit(Op::FLOOR, {i})});
  else if (i.dtype() != DType::kInt32) i = imp.cast(i, DType::kInt32);
  Shape kept = idx.shape;
  kept.insert(kept.begin() + axis, 1);
  i = imp.reshape(i, kept);
  // Negative indices count from the end of the depth.
  const int rank = static_cast<int>(r);
  i = imp.emit(Op::SELECT, {imp.emit(Op::GREATER, {imp.scalar(DType::kInt32, 0, rank), i}),
                            imp.add(i, imp.scalar(DType::kInt32, static_cast<double>(depth), rank)), i});
  Shape along(static_cast<size_t>(r), 1);
  along[static_cast<size_t>(axis)] = depth;
  std::vector<int64_t> iota(static_cast<size_t>(depth));
  for (int64_t k = 0; k < depth; ++k) iota[static_cast<size_t>(k)] = k;
  TVal hit = imp.emit(Op::EQUAL, {i, imp.const_tensor(Tensor::from_ints({DType::kInt32, along}, iota))});
  const Shape one(static_cast<size_t>(r), 1);
  TVal vv = imp.reshape(imp.plain(vals), {2});
  TVal off = imp.reshape(imp.slice(vv, {0}, {1}), one), on = imp.reshape(imp.slice(vv, {1}, {1}), one);
  imp.set_out(0, imp.emit(Op::SELECT, {hit, on, off}), {}, vals.onnx_type);
}

// Local response normalization across channels (axis 1):
// y = x / (bias + alpha / size * sum of x^2 over the channel window) ^ beta, the window sum as a
// MATMUL of the squares by a constant band matrix.
void lower_LRN(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  require_float(imp, x.v);
  const double alpha = imp.attr_float("alpha", 1e-4f), beta = imp.attr_float("beta", 0.75f), bias = imp.attr_float("bias", 1.0f);
  const int64_t size = imp.attr_int("size", 0);
  if (size < 1) imp.fail("size must be >= 1", ErrorCode::kInvalidArgument);
  const int64_t r = static_cast<int64_t>(x.shape.size());
  if (r < 2) imp.fail("the input must be [N, C, ...]", ErrorCode::kInvalidArgument);
  std::vector<int64_t> to_last;  // ONNX layout -> channels last
  to_last.push_back(0);
  for (int64_t d = 2; d < r; ++d) to_last.push_back(d);
  to_last.push_back(1);
  TVal t = imp.transpose(imp.plain(x), to_last);
  const Shape ts = t.shape();
  const int64_t c = x.shape[1], rows = shape_elements(ts) / c;
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  std::vector<double> band(static_cast<size_t>(c * c), 0.0);  // [c', c]: c' in c's window
  for (int64_t o = 0; o < c; ++o)
    for (int64_t k = std::max<int64_t>(0, o - before); k <= std::min<int64_t>(c - 1, o + after); ++k)
      band[static_cast<size_t>(k * c + o)] = 1.0;
  TVal sq = imp.reshape(imp.mul(t, t), {1, rows, c});
  TVal zp = imp.scalar(t.dtype(), 0, 1);
  TVal sum = imp.emit(Op::MATMUL, {sq, imp.const_tensor(Tensor::from_doubles({t.dtype(), {1, c, c}}, band)), zp, zp});
  TVal base = imp.add(imp.mul(sum, imp.scalar(t.dtype(), alpha / static_cast<double>(size), 3)), imp.scalar(t.dtype(), bias, 3));
  TVal scale = imp.emit(Op::POW, {base, imp.scalar(t.dtype(), -beta, 3)});
  TVal y = imp.mul(imp.reshape(t, {1, rows, c}), scale);
  std::vector<int64_t> back(static_cast<size_t>(r));
  for (size_t i = 0; i < to_last.size(); ++i) back[static_cast<size_t>(to_last[i])] = static_cast<int64_t>(i);
  imp.set_out(0, imp.transpose(imp.reshape(y, ts), back), {}, x.onnx_type);
}

// The k largest (or smallest) values along an axis and their indices, by k rounds of ARGMAX with
// the chosen element masked out (ties: the lower index first, as ONNX sorts them).
void lower_TopK(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  require_float(imp, x.v);
  auto kv = imp.const_ints(1, "K");
  if (kv.size() != 1) imp.fail("K must hold one value", ErrorCode::kInvalidArgument);
  const int64_t k = kv[0];
  const int64_t r = static_cast<int64_t>(x.shape.size());
  const int64_t axis = norm_axis(imp, imp.attr_int("axis", -1), r);
  const bool largest = imp.attr_int("largest", 1) != 0;
  const int64_t n = x.shape[static_cast<size_t>(axis)];
  if (k < 1 || k > n) imp.fail("K = " + std::to_string(k) + " is outside [1, " + std::to_string(n) + "]", ErrorCode::kInvalidArgument);
  constexpr int64_t kMaxRounds = 64;
  if (k > kMaxRounds) imp.fail("K = " + std::to_string(k) + ": at most " + std::to_string(kMaxRounds) + " values are selected (TOSA has no sort)");
  TVal cur = imp.plain(x);
  const int rank = static_cast<int>(r);
  TVal zero = imp.scalar(cur.dtype(), 0, 1);
  if (!largest) cur = imp.emit(Op::NEGATE, {cur, zero, zero});
  Shape kept = x.shape;
  kept[static_cast<size_t>(axis)] = 1;
  Shape along(static_cast<size_t>(r), 1);
  along[static_cast<size_t>(axis)] = n;
  std::vector<int64_t> iota(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) iota[static_cast<size_t>(i)] = i;
  TVal positions = imp.const_tensor(Tensor::from_ints({DType::kInt32, along}, iota));
  std::vector<TVal> values, indices;
  for (int64_t round = 0; round < k; ++round) {
    TVal idx = imp.reshape(imp.emit(Op::ARGMAX, {cur}, {{"axis", axis}}), kept);
    TVal hit = imp.emit(Op::EQUAL, {idx, positions});
    TVal val = imp.reduce(Op::REDUCE_SUM, imp.emit(Op::SELECT, {hit, cur, imp.scalar(cur.dtype(), 0, rank)}), axis);
    values.push_back(largest ? val : imp.emit(Op::NEGATE, {val, zero, zero}));
    indices.push_back(idx);
    if (round + 1 < k) cur = imp.emit(Op::SELECT, {hit, imp.scalar(cur.dtype(), -INFINITY, rank), cur});
  }
  auto joined = [&](const std::vector<TVal>& v) { return v.size() == 1 ? v[0] : imp.emit(Op::CONCAT, v, {{"axis", axis}}); };
  imp.set_out(0, joined(values), {}, x.onnx_type);
  if (imp.wants_output(1)) imp.set_out(1, joined(indices), {}, kOInt64);
}


// Det of [..., n, n] for n <= 5: Laplace expansion along the first row, the minors of every column
// subset computed once (2^n of them), each a sum of products of the [...] entry tensors.
void lower_Det(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  const size_t r = x.shape.size();
  if (r < 2 || x.shape[r - 1] != x.shape[r - 2]) imp.fail("the input must be [..., n, n]", ErrorCode::kInvalidArgument);
  const int64_t n = x.shape[r - 1];
  if (n > 5) imp.fail("Det of " + std::to_string(n) + "x" + std::to_string(n) + " matrices is not supported (Laplace expansion up to 5x5)");
  TVal v = imp.plain(x);
  require_float(imp, v);
  const int64_t batch = shape_elements(x.shape) / (n * n);
  v = imp.reshape(v, {batch, n * n});
  auto entry = [&](int64_t i, int64_t j) { return imp.slice(v, {0, i * n + j}, {batch, 1}); };
  // minor[mask]: the determinant of rows n - popcount(mask) .. n - 1 and the columns in mask.
  std::map<int64_t, TVal> minor;
  for (int64_t mask = 1; mask < (int64_t{1} << n); ++mask) {
    const int64_t size = __builtin_popcountll(static_cast<unsigned long long>(mask));
    const int64_t row = n - size;
    TVal acc;
    int sign = 1;
    for (int64_t j = 0; j < n; ++j) {
      if (!(mask & (int64_t{1} << j))) continue;
      TVal term = entry(row, j);
      if (size > 1) term = imp.mul(term, minor.at(mask & ~(int64_t{1} << j)));
      if (!acc.type.rank()) acc = sign > 0 ? term : imp.emit(Op::NEGATE, {term, imp.scalar(term.dtype(), 0, 1), imp.scalar(term.dtype(), 0, 1)});
      else acc = sign > 0 ? imp.add(acc, term) : imp.sub(acc, term);
      sign = -sign;
    }
    minor[mask] = acc;
  }
  Shape out(x.shape.begin(), x.shape.end() - 2);
  imp.set_out(0, imp.reshape(minor.at((int64_t{1} << n) - 1), out), {}, x.onnx_type);
}

}  // namespace weft::onnxfe
