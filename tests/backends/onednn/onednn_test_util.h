// Shared helpers of the oneDNN-versus-reference tests: a graph builder with seeded random
// constants and inputs, the check that a pattern really went to the oneDNN backend (a test that
// silently fell back to the reference backend would compare the reference with itself), and the
// comparison of both backends' outputs within a documented fp32 tolerance.
//
// Tolerance: an output matches when every element satisfies
//     |onednn - reference| <= tol * max(1, max |reference|)
// (max over the whole output tensor). Each test names its `tol`:
//   0      data movement and single-rounding arithmetic (TRANSPOSE, CONCAT, MAX_POOL2D, ABS,
//          CLAMP, MAXIMUM/MINIMUM, ADD/SUB/MUL): both sides produce the same correctly rounded value;
//   1e-5   transcendental element-wise ops (oneDNN uses polynomial approximations of exp, tanh,
//          logistic, pow within a few ulp), reductions and averages (different summation order),
//          softmax;
//   1e-4   convolutions, matmuls and layer normalization (up to a few hundred products summed in a
//          different order, with FMA, plus fused activations on top).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "weft/graph.h"
#include "weft/runtime.h"

namespace weft::onednn_test {

inline const BackendOptions kOneDnn{.backends = {"onednn"}};
inline const BackendOptions kReference{.backends = {"reference"}};

constexpr double kExact = 0.0;
constexpr double kTolElementwise = 1e-5;
constexpr double kTolAccumulate = 1e-4;

inline TensorType f32(Shape s) { return {DType::kFp32, std::move(s)}; }
inline Tensor scalar0(double v) { return Tensor::from_doubles(f32({}), std::vector<double>{v}); }
// One value shaped [1,...,1] of `rank` (a broadcast constant operand of a binary operator).
inline Tensor ones_shaped(double v, int rank) {
  return Tensor::from_doubles(f32(Shape(static_cast<size_t>(rank), 1)), std::vector<double>{v});
}

// Builds a graph around a GraphBuilder; inputs get seeded random feeds, weights seeded random
// constants.
class Net {
 public:
  explicit Net(uint32_t seed) : rng_(seed) {}

  GraphBuilder b{"main"};
  std::vector<Tensor> feeds;  // one per input, in input order

  Tensor random(Shape s, double lo = -1.0, double hi = 1.0) {
    std::uniform_real_distribution<double> d(lo, hi);
    std::vector<double> v(static_cast<size_t>(shape_elements(s)));
    for (double& x : v) x = d(rng_);
    return Tensor::from_doubles(f32(std::move(s)), v);
  }
  ValueId input(Shape s, double lo = -1.0, double hi = 1.0) {
    ValueId v = b.input("in" + std::to_string(feeds.size()), f32(s));
    feeds.push_back(random(std::move(s), lo, hi));
    return v;
  }
  ValueId weight(Shape s, double lo = -1.0, double hi = 1.0) { return b.constant(fresh("w"), random(std::move(s), lo, hi)); }
  ValueId constant(Tensor t) { return b.constant(fresh("c"), std::move(t)); }
  ValueId scalar(double v, int rank) { return constant(ones_shaped(v, rank)); }
  ValueId zp() {
    if (zp_ == kNoValue) zp_ = b.constant("zp", Tensor::from_doubles(f32({1}), std::vector<double>{0}));
    return zp_;
  }
  ValueId shift() {
    if (shift_ == kNoValue) shift_ = b.constant("shift", Tensor::from_ints({DType::kInt8, {1}}, std::vector<int64_t>{0}));
    return shift_;
  }
  const TensorType& type(ValueId v) const { return b.graph().value(v).type; }

  // ---- Operators ----
  ValueId conv2d(ValueId x, ValueId w, ValueId bias, std::vector<int64_t> pad, std::vector<int64_t> stride,
                 std::vector<int64_t> dil) {
    return b.op(Op::CONV2D, {x, w, bias, zp(), zp()},
                {{"pad", std::move(pad)}, {"stride", std::move(stride)}, {"dilation", std::move(dil)},
                 {"acc_type", static_cast<int64_t>(AccType::kFp32)}});
  }
  ValueId depthwise(ValueId x, ValueId w, ValueId bias, std::vector<int64_t> pad, std::vector<int64_t> stride,
                    std::vector<int64_t> dil) {
    return b.op(Op::DEPTHWISE_CONV2D, {x, w, bias, zp(), zp()},
                {{"pad", std::move(pad)}, {"stride", std::move(stride)}, {"dilation", std::move(dil)},
                 {"acc_type", static_cast<int64_t>(AccType::kFp32)}});
  }
  ValueId transpose_conv(ValueId x, ValueId w, ValueId bias, std::vector<int64_t> out_pad, std::vector<int64_t> stride) {
    return b.op(Op::TRANSPOSE_CONV2D, {x, w, bias, zp(), zp()},
                {{"out_pad", std::move(out_pad)}, {"stride", std::move(stride)},
                 {"acc_type", static_cast<int64_t>(AccType::kFp32)}});
  }
  ValueId max_pool(ValueId x, std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> p) {
    return b.op(Op::MAX_POOL2D, {x}, {{"kernel", std::move(k)}, {"stride", std::move(s)}, {"pad", std::move(p)}});
  }
  ValueId avg_pool(ValueId x, std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> p) {
    return b.op(Op::AVG_POOL2D, {x, zp(), zp()},
                {{"kernel", std::move(k)}, {"stride", std::move(s)}, {"pad", std::move(p)},
                 {"acc_type", static_cast<int64_t>(AccType::kFp32)}});
  }
  // PAD of an NHWC tensor's H and W by [top, bottom, left, right] with `value`.
  ValueId pad_hw(ValueId x, std::vector<int64_t> tblr, double value) {
    ValueId s = b.constant_shape(fresh("padding"), {0, 0, tblr[0], tblr[1], tblr[2], tblr[3], 0, 0});
    ValueId c = constant(Tensor::from_doubles(f32({1}), std::vector<double>{value}));
    return b.op(Op::PAD, {x, s, c});
  }
  ValueId pad(ValueId x, std::vector<int64_t> padding, double value) {
    ValueId s = b.constant_shape(fresh("padding"), std::move(padding));
    ValueId c = constant(Tensor::from_doubles(f32({1}), std::vector<double>{value}));
    return b.op(Op::PAD, {x, s, c});
  }
  ValueId matmul(ValueId a, ValueId bb) { return b.op(Op::MATMUL, {a, bb, zp(), zp()}); }
  ValueId clamp(ValueId x, double lo, double hi) {
    return b.op(Op::CLAMP, {x}, {{"min_val", scalar0(lo)}, {"max_val", scalar0(hi)}});
  }
  ValueId relu(ValueId x) { return clamp(x, 0.0, std::numeric_limits<float>::max()); }
  ValueId unary(Op op, ValueId x) { return b.op(op, {x}); }
  ValueId add(ValueId x, ValueId y) { return b.op(Op::ADD, {x, y}); }
  ValueId sub(ValueId x, ValueId y) { return b.op(Op::SUB, {x, y}); }
  ValueId mul(ValueId x, ValueId y) { return b.op(Op::MUL, {x, y, shift()}); }
  ValueId binary(Op op, ValueId x, ValueId y) { return op == Op::MUL ? mul(x, y) : b.op(op, {x, y}); }
  ValueId reduce(Op op, ValueId x, int64_t axis) { return b.op(op, {x}, {{"axis", axis}}); }
  ValueId transpose(ValueId x, std::vector<int64_t> perms) { return b.op(Op::TRANSPOSE, {x}, {{"perms", std::move(perms)}}); }
  ValueId reshape(ValueId x, std::vector<int64_t> to) {
    ValueId s = b.constant_shape(fresh("shape"), std::move(to));
    return b.op(Op::RESHAPE, {x, s});
  }
  ValueId concat(std::vector<ValueId> xs, int64_t axis) { return b.op(Op::CONCAT, std::move(xs), {{"axis", axis}}); }
  // swish(x) = x * sigmoid(x), as exported: SIGMOID then MUL(x, sigmoid).
  ValueId swish(ValueId x) { return mul(x, unary(Op::SIGMOID, x)); }
  // GELU (erf form) as the ONNX frontend lowers it: x * 0.5 * (1 + erf(x / sqrt(2))).
  ValueId gelu_erf(ValueId x) {
    const int r = type(x).rank();
    ValueId e = unary(Op::ERF, mul(x, scalar(0.70710678118654752, r)));
    return mul(mul(x, add(e, scalar(1.0, r))), scalar(0.5, r));
  }

  Module finish(std::vector<ValueId> outputs) {
    for (ValueId v : outputs) b.output(v);
    return Module(b.finish());
  }
  std::string fresh(const std::string& base) { return base + std::to_string(counter_++); }

 private:
  std::mt19937 rng_;
  int counter_ = 0;
  ValueId zp_ = kNoValue, shift_ = kNoValue;
};

// The smallest pad_b >= want that makes (in - 1 + pad_a + pad_b - (k - 1) * dil) a multiple of
// stride, as TOSA's idiv_check demands of convolutions.
inline int64_t fit_conv_pad(int64_t in, int64_t pad_a, int64_t want, int64_t k, int64_t dil, int64_t stride) {
  int64_t pb = want;
  while ((in - 1 + pad_a + pb - (k - 1) * dil) % stride != 0) ++pb;
  return pb;
}

// A grouped convolution as the ONNX importer writes it: the input's channels sliced into `groups`,
// one CONV2D per group, the results concatenated along the channels.
inline ValueId grouped_conv(Net& net, ValueId x, int64_t groups, int64_t oc_per_group, int64_t k, int64_t stride,
                     std::vector<int64_t> order = {}) {
  const Shape in = net.type(x).shape;
  const int64_t cg = in[3] / groups;
  if (order.empty())
    for (int64_t g = 0; g < groups; ++g) order.push_back(g);
  std::vector<ValueId> parts;
  for (int64_t g : order) {
    ValueId st = net.b.constant_shape(net.fresh("start"), {0, 0, 0, g * cg});
    ValueId sz = net.b.constant_shape(net.fresh("size"), {in[0], in[1], in[2], cg});
    ValueId sl = net.b.op(Op::SLICE, {x, st, sz});
    const int64_t p = k / 2;
    std::vector<int64_t> pad{p, p, p, p};
    pad[1] = fit_conv_pad(in[1], pad[0], pad[1], k, 1, stride);
    pad[3] = fit_conv_pad(in[2], pad[2], pad[3], k, 1, stride);
    parts.push_back(net.conv2d(sl, net.weight({oc_per_group, k, k, cg}), net.weight({oc_per_group}), pad,
                               {stride, stride}, {1, 1}));
  }
  return net.concat(parts, 3);
}
// Likewise (in + pad_a + pad_b - k) for pooling.
inline int64_t fit_pool_pad(int64_t in, int64_t pad_a, int64_t want, int64_t k, int64_t stride) {
  int64_t pb = want;
  while ((in + pad_a + pb - k) % stride != 0) ++pb;
  return pb;
}

// Every element within tol * max(1, max|want|) of `want` (NaN matches NaN).
inline ::testing::AssertionResult close(const Tensor& got, const Tensor& want, double tol) {
  if (got.type() != want.type())
    return ::testing::AssertionFailure() << "type " << got.type().str() << " vs reference " << want.type().str();
  double scale = 1.0;
  for (int64_t i = 0; i < want.num_elements(); ++i)
    if (std::isfinite(want.at_double(i))) scale = std::max(scale, std::abs(want.at_double(i)));
  const double bound = tol * scale;
  int64_t bad = 0, worst = -1;
  double worst_err = -1;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const double g = got.at_double(i), w = want.at_double(i);
    double err;
    if (std::isnan(w) || std::isnan(g)) err = std::isnan(w) && std::isnan(g) ? 0.0 : std::numeric_limits<double>::infinity();
    else if (g == w) err = 0.0;  // also equal infinities
    else err = std::abs(g - w);
    if (err > bound) ++bad;
    if (err > worst_err) {
      worst_err = err;
      worst = i;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << want.num_elements() << " elements differ by more than "
                                       << bound << " (tol " << tol << " x scale " << scale << "); worst: element "
                                       << worst << " onednn " << got.at_double(worst) << " vs reference "
                                       << want.at_double(worst) << " (error " << worst_err << ")";
}

// Checks that each of `patterns` is a unit on the oneDNN backend, and with `all_on_onednn` that
// the reference backend runs no kernel at all (only constants and views).
inline void expect_offloaded(const Model& model, const std::vector<std::string>& patterns, bool all_on_onednn = true) {
  const std::string ex = model.explain();
  for (const std::string& p : patterns) {
    EXPECT_NE(ex.find(" onednn " + p + ":"), std::string::npos) << "no unit 'onednn " << p << "' in:\n" << ex;
  }
  if (all_on_onednn) {
    EXPECT_NE(ex.find("  reference: 0 kernels"), std::string::npos) << "the reference backend runs kernels:\n" << ex;
  }
}

inline std::vector<Tensor> run_model(const std::shared_ptr<const Model>& model, const std::vector<Tensor>& feeds,
                                     int threads = 1) {
  Context ctx(model, {.threads = threads});
  return ctx.run(feeds);
}

// Builds the module for oneDNN and for the reference backend, checks the expected units went to
// oneDNN, runs both and compares every output. Returns the oneDNN model for further checks.
inline std::shared_ptr<const Model> check_vs_reference(const Module& m, const std::vector<Tensor>& feeds,
                                                       const std::vector<std::string>& patterns, double tol,
                                                       bool all_on_onednn = true, int threads = 1) {
  auto dnn = Model::from_module(m, kOneDnn);
  auto ref = Model::from_module(m, kReference);
  expect_offloaded(*dnn, patterns, all_on_onednn);
  std::vector<Tensor> got = run_model(dnn, feeds, threads);
  std::vector<Tensor> want = run_model(ref, feeds);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i)
    EXPECT_TRUE(close(got[i], want[i], tol)) << "output " << i;
  return dnn;
}

inline std::string vec_str(const std::vector<int64_t>& v) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < v.size(); ++i) s << (i ? "," : "") << v[i];
  s << "]";
  return s.str();
}

}  // namespace weft::onednn_test
