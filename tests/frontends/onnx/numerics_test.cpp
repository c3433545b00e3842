// Numerics of the ONNX frontend: small models built in C++, imported, run with the runtime and
// compared with values computed here by plain loops over the ONNX (NCHW) definitions.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>

#include "frontends/onnx/onnx_builder.h"

namespace weft {
namespace {

using namespace test::onnxb;

size_t idx4(const Shape& s, int64_t a, int64_t b, int64_t c, int64_t d) {
  return static_cast<size_t>(((a * s[1] + b) * s[2] + c) * s[3] + d);
}

// ---- Conv ------------------------------------------------------------------------------------------

struct ConvCase {
  Shape xs, ws;
  bool bias;
  ConvParams p;
};

void check_conv(const ConvCase& cc, int seed) {
  SCOPED_TRACE("x " + shape_str(cc.xs) + " w " + shape_str(cc.ws) + " group " + std::to_string(cc.p.group));
  const auto x = ramp(shape_elements(cc.xs), seed), w = ramp(shape_elements(cc.ws), seed + 1);
  const auto b = cc.bias ? ramp(cc.ws[0], seed + 2) : std::vector<float>{};
  ModelBuilder mb;
  mb.input("x", kFloat, cc.xs).init_f("w", cc.ws, w).output("y");
  std::vector<std::string> ins{"x", "w"};
  if (cc.bias) {
    mb.init_f("b", {cc.ws[0]}, b);
    ins.push_back("b");
  }
  auto& n = mb.node("Conv", ins, {"y"}, "conv");
  attr_ints(n, "pads", cc.p.pads);
  attr_ints(n, "strides", cc.p.strides);
  attr_ints(n, "dilations", cc.p.dilations);
  attr_i(n, "group", cc.p.group);
  Shape ys;
  const auto want = ref_conv(x, cc.xs, w, cc.ws, b, cc.p, &ys);
  auto out = run_module(mb.import(), {f32(cc.xs, x)});
  ASSERT_EQ(out.size(), 1u);
  expect_near(out[0], ys, want);
}

TEST(OnnxNumerics, ConvPadsStridesDilations) {
  ConvCase c{{1, 3, 7, 8}, {4, 3, 3, 3}, true, {}};
  c.p.pads = {1, 2, 0, 1};
  c.p.strides = {2, 1};
  c.p.dilations = {1, 2};
  check_conv(c, 1);
  // Asymmetric strides the other way, no bias, a window that leaves trailing rows unread.
  ConvCase d{{2, 2, 6, 9}, {3, 2, 2, 3}, false, {}};
  d.p.pads = {0, 1, 1, 0};
  d.p.strides = {3, 2};
  d.p.dilations = {2, 1};
  check_conv(d, 7);
}

TEST(OnnxNumerics, ConvDepthwiseGroupEqualsChannels) {
  ConvCase c{{1, 4, 6, 6}, {4, 1, 3, 3}, true, {}};
  c.p.group = 4;
  c.p.pads = {1, 1, 1, 1};
  c.p.strides = {2, 2};
  check_conv(c, 11);
  // Channel multiplier 2: output channel o reads input channel o / 2.
  ConvCase m{{1, 3, 5, 5}, {6, 1, 3, 3}, true, {}};
  m.p.group = 3;
  m.p.pads = {1, 0, 1, 2};
  check_conv(m, 13);
}

TEST(OnnxNumerics, ConvGroupTwo) {
  ConvCase c{{1, 4, 5, 5}, {6, 2, 3, 3}, true, {}};
  c.p.group = 2;
  c.p.pads = {0, 1, 1, 0};
  check_conv(c, 21);
}

// ---- ConvTranspose -------------------------------------------------------------------------------

// x [N,C,H,W], w [C,OC/g,KH,KW]; pads top, left, bottom, right; output_padding on the end.
std::vector<float> ref_conv_transpose(const std::vector<float>& x, const Shape& xs, const std::vector<float>& w,
                                      const Shape& ws, const std::vector<float>& b, int64_t group,
                                      const std::vector<int64_t>& strides, const std::vector<int64_t>& pads,
                                      const std::vector<int64_t>& opad, Shape* ys) {
  const int64_t n = xs[0], c = xs[1], h = xs[2], wd = xs[3];
  const int64_t ocg = ws[1], kh = ws[2], kw = ws[3], oc = ocg * group, cg = c / group;
  const int64_t oh = strides[0] * (h - 1) + opad[0] + kh - pads[0] - pads[2];
  const int64_t ow = strides[1] * (wd - 1) + opad[1] + kw - pads[1] - pads[3];
  *ys = {n, oc, oh, ow};
  std::vector<double> y(static_cast<size_t>(n * oc * oh * ow));
  for (int64_t in = 0; in < n; ++in)
    for (int64_t o = 0; o < oc; ++o)
      for (int64_t i = 0; i < oh * ow; ++i) y[static_cast<size_t>((in * oc + o) * oh * ow + i)] = b[static_cast<size_t>(o)];
  for (int64_t in = 0; in < n; ++in)
    for (int64_t ci = 0; ci < c; ++ci) {
      const int64_t g = ci / cg;
      for (int64_t iy = 0; iy < h; ++iy)
        for (int64_t ix = 0; ix < wd; ++ix)
          for (int64_t oo = 0; oo < ocg; ++oo)
            for (int64_t ky = 0; ky < kh; ++ky)
              for (int64_t kx = 0; kx < kw; ++kx) {
                const int64_t oy = iy * strides[0] - pads[0] + ky, ox = ix * strides[1] - pads[1] + kx;
                if (oy < 0 || oy >= oh || ox < 0 || ox >= ow) continue;
                const int64_t o = g * ocg + oo;
                y[static_cast<size_t>(((in * oc + o) * oh + oy) * ow + ox)] +=
                    static_cast<double>(x[idx4(xs, in, ci, iy, ix)]) * w[idx4(ws, ci, oo, ky, kx)];
              }
    }
  return std::vector<float>(y.begin(), y.end());
}

void check_conv_transpose(const Shape& xs, const Shape& ws, int64_t group, const std::vector<int64_t>& strides,
                          const std::vector<int64_t>& pads, const std::vector<int64_t>& opad, int seed) {
  SCOPED_TRACE("x " + shape_str(xs) + " w " + shape_str(ws));
  const int64_t oc = ws[1] * group;
  const auto x = ramp(shape_elements(xs), seed), w = ramp(shape_elements(ws), seed + 1), b = ramp(oc, seed + 2);
  ModelBuilder mb;
  mb.input("x", kFloat, xs).init_f("w", ws, w).init_f("b", {oc}, b).output("y");
  auto& n = mb.node("ConvTranspose", {"x", "w", "b"}, {"y"});
  attr_ints(n, "strides", strides);
  attr_ints(n, "pads", pads);
  attr_ints(n, "output_padding", opad);
  attr_i(n, "group", group);
  Shape ys;
  const auto want = ref_conv_transpose(x, xs, w, ws, b, group, strides, pads, opad, &ys);
  auto out = run_module(mb.import(), {f32(xs, x)});
  expect_near(out[0], ys, want);
}

TEST(OnnxNumerics, ConvTransposeStride2PadsOutputPadding) {
  // [1,2,3,3] -> [1,3,7,6]: pads crop the first row and last column, output_padding adds a row.
  check_conv_transpose({1, 2, 3, 3}, {2, 3, 3, 3}, 1, {2, 2}, {1, 0, 0, 1}, {1, 0}, 31);
  check_conv_transpose({1, 4, 3, 2}, {4, 2, 2, 2}, 2, {2, 2}, {0, 0, 0, 0}, {1, 1}, 37);
}

// auto_pad / output_shape: the ONNX spec (ConvTranspose-11/22) splits
//   total = stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - output_shape
// as pads[start] = total / 2 for SAME_UPPER (the extra one at the end), total - total / 2 otherwise;
// SAME_* without output_shape uses output_shape = in * stride.
Tensor run_conv_transpose_auto(const std::string& auto_pad, bool with_output_shape, const std::vector<float>& x,
                               const std::vector<float>& w) {
  ModelBuilder mb(13);
  mb.input("x", kFloat, {1, 1, 3, 3}).init_f("w", {1, 1, 3, 3}, w).output("y");
  auto& n = mb.node("ConvTranspose", {"x", "w"}, {"y"});
  attr_ints(n, "strides", {2, 2});
  if (auto_pad != "NOTSET") attr_s(n, "auto_pad", auto_pad);
  if (with_output_shape) attr_ints(n, "output_shape", {6, 6});
  return run_module(mb.import(), {f32({1, 1, 3, 3}, x)})[0];
}

TEST(OnnxNumerics, ConvTransposeAutoPadSame) {
  const auto x = ramp(9, 33), w = ramp(9, 34);
  Shape ys;
  // total = 2 * 2 + 3 - 6 = 1: SAME_UPPER pads (0 | 1), SAME_LOWER pads (1 | 0).
  const auto upper = ref_conv_transpose(x, {1, 1, 3, 3}, w, {1, 1, 3, 3}, {0.f}, 1, {2, 2}, {0, 0, 1, 1}, {0, 0}, &ys);
  ASSERT_EQ(ys, (Shape{1, 1, 6, 6}));
  const auto lower = ref_conv_transpose(x, {1, 1, 3, 3}, w, {1, 1, 3, 3}, {0.f}, 1, {2, 2}, {1, 1, 0, 0}, {0, 0}, &ys);
  expect_near(run_conv_transpose_auto("SAME_UPPER", false, x, w), ys, upper);
  expect_near(run_conv_transpose_auto("SAME_LOWER", false, x, w), ys, lower);
}

TEST(OnnxNumerics, ConvTransposeOutputShapeSplitsPadsLikeAutoPad) {
  const auto x = ramp(9, 33), w = ramp(9, 34);
  Shape ys;
  const auto upper = ref_conv_transpose(x, {1, 1, 3, 3}, w, {1, 1, 3, 3}, {0.f}, 1, {2, 2}, {0, 0, 1, 1}, {0, 0}, &ys);
  const auto lower = ref_conv_transpose(x, {1, 1, 3, 3}, w, {1, 1, 3, 3}, {0.f}, 1, {2, 2}, {1, 1, 0, 0}, {0, 0}, &ys);
  // The same SAME_UPPER model with its output_shape spelled out must not change; with auto_pad
  // NOTSET the spec's "else" branch puts the extra padding at the start.
  const Tensor same_upper = run_conv_transpose_auto("SAME_UPPER", false, x, w);
  const Tensor same_upper_os = run_conv_transpose_auto("SAME_UPPER", true, x, w);
  const Tensor notset_os = run_conv_transpose_auto("NOTSET", true, x, w);
  ASSERT_EQ(same_upper_os.shape(), ys);
  ASSERT_EQ(notset_os.shape(), ys);
  expect_near(same_upper_os, ys, upper);
  expect_near(notset_os, ys, lower);
}

// ---- pooling ---------------------------------------------------------------------------------------

struct PoolCase {
  bool max;
  Shape xs;
  std::vector<int64_t> k, s, pads;  // pads: top, left, bottom, right
  bool ceil_mode;
  bool count_include_pad;
};

// ONNX Runtime's definition: windows clipped to the padded input; with count_include_pad the
// divisor counts the padding, never the ceil-mode overhang beyond it.
std::vector<float> ref_pool(const std::vector<float>& x, const PoolCase& pc, Shape* ys) {
  const Shape& xs = pc.xs;
  int64_t out[2];
  for (int d = 0; d < 2; ++d) {
    const int64_t in = xs[2 + d], span = in + pc.pads[d] + pc.pads[d + 2] - pc.k[d];
    int64_t o = (pc.ceil_mode ? (span + pc.s[d] - 1) / pc.s[d] : span / pc.s[d]) + 1;
    if (pc.ceil_mode && (o - 1) * pc.s[d] >= in + pc.pads[d]) --o;
    out[d] = o;
  }
  *ys = {xs[0], xs[1], out[0], out[1]};
  std::vector<float> y;
  for (int64_t n = 0; n < xs[0]; ++n)
    for (int64_t c = 0; c < xs[1]; ++c)
      for (int64_t oy = 0; oy < out[0]; ++oy)
        for (int64_t ox = 0; ox < out[1]; ++ox) {
          const int64_t hs = oy * pc.s[0] - pc.pads[0], ws = ox * pc.s[1] - pc.pads[1];
          const int64_t he = std::min(hs + pc.k[0], xs[2] + pc.pads[2]), we = std::min(ws + pc.k[1], xs[3] + pc.pads[3]);
          const int64_t pool_size = (he - hs) * (we - ws);
          double acc = pc.max ? -std::numeric_limits<double>::infinity() : 0.0;
          int64_t valid = 0;
          for (int64_t iy = std::max<int64_t>(hs, 0); iy < std::min(he, xs[2]); ++iy)
            for (int64_t ix = std::max<int64_t>(ws, 0); ix < std::min(we, xs[3]); ++ix) {
              const double v = x[idx4(xs, n, c, iy, ix)];
              acc = pc.max ? std::max(acc, v) : acc + v;
              ++valid;
            }
          if (!pc.max) acc /= static_cast<double>(pc.count_include_pad ? pool_size : valid);
          y.push_back(static_cast<float>(acc));
        }
  return y;
}

void check_pool(const PoolCase& pc, int seed) {
  SCOPED_TRACE(std::string(pc.max ? "MaxPool" : "AveragePool") + " x " + shape_str(pc.xs) + " pads " +
               shape_str(pc.pads) + " ceil " + std::to_string(pc.ceil_mode) + " count_include_pad " +
               std::to_string(pc.count_include_pad));
  const auto x = ramp(shape_elements(pc.xs), seed);
  ModelBuilder mb;
  mb.input("x", kFloat, pc.xs).output("y");
  auto& n = mb.node(pc.max ? "MaxPool" : "AveragePool", {"x"}, {"y"});
  attr_ints(n, "kernel_shape", pc.k);
  attr_ints(n, "strides", pc.s);
  attr_ints(n, "pads", pc.pads);
  attr_i(n, "ceil_mode", pc.ceil_mode);
  if (!pc.max) attr_i(n, "count_include_pad", pc.count_include_pad);
  Shape ys;
  const auto want = ref_pool(x, pc, &ys);
  auto out = run_module(mb.import(), {f32(pc.xs, x)});
  expect_near(out[0], ys, want);
}

TEST(OnnxNumerics, MaxPoolCeilModeAndPads) {
  check_pool({true, {1, 2, 5, 5}, {2, 2}, {2, 2}, {0, 0, 0, 0}, true, false}, 41);   // 3x3, last window half outside
  check_pool({true, {1, 2, 5, 5}, {3, 3}, {2, 2}, {1, 1, 1, 1}, false, false}, 42);  // padded
  check_pool({true, {1, 1, 6, 7}, {3, 2}, {2, 2}, {1, 0, 0, 1}, true, false}, 43);   // ceil + asymmetric pads
}

TEST(OnnxNumerics, AveragePoolCountIncludePad) {
  // Same padded pool, padding counted in the divisor (always 9) or not.
  check_pool({false, {1, 2, 5, 5}, {3, 3}, {2, 2}, {1, 1, 1, 1}, false, true}, 51);
  check_pool({false, {1, 2, 5, 5}, {3, 3}, {2, 2}, {1, 1, 1, 1}, false, false}, 51);
  // The two must really differ at the border.
  const auto x = ramp(50, 51);
  Shape ys;
  auto a = ref_pool(x, {false, {1, 2, 5, 5}, {3, 3}, {2, 2}, {1, 1, 1, 1}, false, true}, &ys);
  auto b = ref_pool(x, {false, {1, 2, 5, 5}, {3, 3}, {2, 2}, {1, 1, 1, 1}, false, false}, &ys);
  EXPECT_NE(a[0], b[0]);
}

TEST(OnnxNumerics, AveragePoolCeilMode) {
  // Overhang beyond the input, nothing declared: divisor = the valid count.
  check_pool({false, {1, 1, 6, 6}, {3, 3}, {2, 2}, {0, 0, 0, 0}, true, false}, 61);
  // count_include_pad with ceil_mode: the declared padding counts, the overhang past it does not
  // (the last window along each axis covers one input, one pad and one overhang element: divisor 2).
  check_pool({false, {1, 1, 6, 6}, {3, 3}, {2, 2}, {1, 1, 1, 1}, true, true}, 62);
  check_pool({false, {1, 1, 6, 6}, {3, 3}, {2, 2}, {1, 1, 1, 1}, true, false}, 62);
}

TEST(OnnxNumerics, Conv1DAndAveragePool1D) {
  // x [1,2,7] -> Conv1D (k 3, pads 1|2, stride 2) -> AveragePool1D (k 2, stride 1, pads 1|0).
  const auto x = ramp(14, 171), w = ramp(18, 172), b = ramp(3, 173);
  ModelBuilder mb(13);
  mb.input("x", kFloat, {1, 2, 7}).init_f("w", {3, 2, 3}, w).init_f("b", {3}, b).output("c").output("p");
  auto& n = mb.node("Conv", {"x", "w", "b"}, {"c"});
  attr_ints(n, "pads", {1, 2});
  attr_ints(n, "strides", {2});
  auto& pn = mb.node("AveragePool", {"c"}, {"p"});
  attr_ints(pn, "kernel_shape", {2});
  attr_ints(pn, "pads", {1, 0});
  // The same as 2-D with H = 1.
  ConvParams p;
  p.pads = {0, 1, 0, 2};
  p.strides = {1, 2};
  Shape cs;
  const auto c = ref_conv(x, {1, 2, 1, 7}, w, {3, 2, 1, 3}, b, p, &cs);
  ASSERT_EQ(cs, (Shape{1, 3, 1, 4}));
  std::vector<float> pool;
  for (int o = 0; o < 3; ++o)
    for (int i = 0; i < 4; ++i)
      pool.push_back(i == 0 ? c[static_cast<size_t>(o * 4)] : (c[static_cast<size_t>(o * 4 + i - 1)] + c[static_cast<size_t>(o * 4 + i)]) / 2);
  auto out = run_module(mb.import(), {f32({1, 2, 7}, x)});
  expect_near(out[0], {1, 3, 4}, c);
  expect_near(out[1], {1, 3, 4}, pool);
}

// ---- Gemm / MatMul ---------------------------------------------------------------------------------

TEST(OnnxNumerics, GemmTransposesAlphaBeta) {
  // A [4,3] (transA) at run time, B [5,4] (transB) and C [5] constant: Y [3,5].
  const auto a = ramp(12, 71), b = ramp(20, 72), c = ramp(5, 73);
  ModelBuilder mb;
  mb.input("a", kFloat, {4, 3}).init_f("b", {5, 4}, b).init_f("c", {5}, c).output("y");
  auto& n = mb.node("Gemm", {"a", "b", "c"}, {"y"});
  attr_i(n, "transA", 1);
  attr_i(n, "transB", 1);
  attr_f(n, "alpha", 0.5f);
  attr_f(n, "beta", 2.0f);
  std::vector<float> want;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) {
      double s = 0;
      for (int k = 0; k < 4; ++k) s += static_cast<double>(a[static_cast<size_t>(k * 3 + i)]) * b[static_cast<size_t>(j * 4 + k)];
      want.push_back(static_cast<float>(0.5 * s + 2.0 * c[static_cast<size_t>(j)]));
    }
  auto out = run_module(mb.import(), {f32({4, 3}, a)});
  expect_near(out[0], {3, 5}, want);
}

TEST(OnnxNumerics, GemmRuntimeOperandsColumnBias) {
  // Both operands at run time, C [3,1] broadcast along N, beta 0.25, no transposes.
  const auto a = ramp(12, 74), b = ramp(20, 75), c = ramp(3, 76);
  ModelBuilder mb;
  mb.input("a", kFloat, {3, 4}).input("b", kFloat, {4, 5}).init_f("c", {3, 1}, c).output("y");
  auto& n = mb.node("Gemm", {"a", "b", "c"}, {"y"});
  attr_f(n, "beta", 0.25f);
  std::vector<float> want;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) {
      double s = 0;
      for (int k = 0; k < 4; ++k) s += static_cast<double>(a[static_cast<size_t>(i * 4 + k)]) * b[static_cast<size_t>(k * 5 + j)];
      want.push_back(static_cast<float>(s + 0.25 * c[static_cast<size_t>(i)]));
    }
  auto out = run_module(mb.import(), {f32({3, 4}, a), f32({4, 5}, b)});
  expect_near(out[0], {3, 5}, want);
}

// A model exported in half precision (PyTorch's model.half()): fp16 input, Gemm with fp16 weights
// and bias, then a MatMul by an fp16 constant. Each product is an fp16 MATMUL (the importer keeps
// ONNX's fp16 result type); the result is within fp16 rounding of the products computed exactly
// and rounded to fp16 after each layer.
TEST(OnnxNumerics, HalfPrecisionGemmAndMatMul) {
  std::vector<double> x(3 * 16), w(16 * 8), b(8), m(8 * 4);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37 * static_cast<double>(i));
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::cos(0.21 * static_cast<double>(i)) * 0.5;
  for (size_t i = 0; i < b.size(); ++i) b[i] = 0.1 * static_cast<double>(i) - 0.3;
  for (size_t i = 0; i < m.size(); ++i) m[i] = std::sin(0.13 * static_cast<double>(i) + 1.0);
  const Tensor xh = Tensor::from_doubles({DType::kFp16, {3, 16}}, x);
  ModelBuilder mb;
  mb.input("x", kFloat16, {3, 16}).init_f16("w", {16, 8}, w).init_f16("b", {8}, b).init_f16("m", {8, 4}, m).output("y", kFloat16);
  mb.node("Gemm", {"x", "w", "b"}, {"h"});
  mb.node("MatMul", {"h", "m"}, {"y"});
  auto half = [](double v) { return Tensor::from_doubles({DType::kFp16, {1}}, std::vector<double>{v}).at_double(0); };
  std::vector<double> h(3 * 8), want(3 * 4);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 8; ++j) {
      double s = 0;
      for (int k = 0; k < 16; ++k) s += xh.at_double(i * 16 + k) * half(w[static_cast<size_t>(k * 8 + j)]);
      h[static_cast<size_t>(i * 8 + j)] = half(half(s) + half(b[static_cast<size_t>(j)]));
    }
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) {
      double s = 0;
      for (int k = 0; k < 8; ++k) s += h[static_cast<size_t>(i * 8 + k)] * half(m[static_cast<size_t>(k * 4 + j)]);
      want[static_cast<size_t>(i * 4 + j)] = s;
    }
  auto out = run_module(mb.import(), {xh});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].dtype(), DType::kFp16);
  ASSERT_EQ(out[0].shape(), (Shape{3, 4}));
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(out[0].at_double(static_cast<int64_t>(i)), want[i], 2e-2 * std::max(1.0, std::abs(want[i]))) << "element " << i;
}

// Batched matmul with numpy broadcasting of the batch dims (both operands at run time).
void check_matmul(const Shape& as, const Shape& bs, const Shape& ys, int seed) {
  SCOPED_TRACE(shape_str(as) + " x " + shape_str(bs));
  const auto a = ramp(shape_elements(as), seed), b = ramp(shape_elements(bs), seed + 1);
  ModelBuilder mb;
  mb.input("a", kFloat, as).input("b", kFloat, bs).output("y");
  mb.node("MatMul", {"a", "b"}, {"y"});
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  Shape batch(ys.begin(), ys.end() - 2);
  Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  ab.insert(ab.begin(), batch.size() - ab.size(), 1);
  bb.insert(bb.begin(), batch.size() - bb.size(), 1);
  std::vector<float> want;
  const int64_t nb = shape_elements(batch);
  for (int64_t f = 0; f < nb; ++f) {
    // Batch coordinates of f, then the flat batch offsets into a and b (size-1 dims broadcast).
    int64_t rem = f, oa = 0, ob = 0, sa = 1, sb = 1;
    for (int64_t d = static_cast<int64_t>(batch.size()) - 1; d >= 0; --d) {
      const int64_t coord = rem % batch[static_cast<size_t>(d)];
      rem /= batch[static_cast<size_t>(d)];
      oa += (ab[static_cast<size_t>(d)] == 1 ? 0 : coord) * sa;
      ob += (bb[static_cast<size_t>(d)] == 1 ? 0 : coord) * sb;
      sa *= ab[static_cast<size_t>(d)];
      sb *= bb[static_cast<size_t>(d)];
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q)
          s += static_cast<double>(a[static_cast<size_t>(oa * m * k + i * k + q)]) * b[static_cast<size_t>(ob * k * n + q * n + j)];
        want.push_back(static_cast<float>(s));
      }
  }
  auto out = run_module(mb.import(), {f32(as, a), f32(bs, b)});
  expect_near(out[0], ys, want);
}

TEST(OnnxNumerics, MatMulBatchBroadcasting) {
  check_matmul({2, 3, 4, 5}, {5, 6}, {2, 3, 4, 6}, 81);
  check_matmul({1, 4, 5}, {3, 5, 6}, {3, 4, 6}, 83);
  check_matmul({2, 1, 2, 3}, {3, 3, 4}, {2, 3, 2, 4}, 85);
}

TEST(OnnxNumerics, MatMulWithVectors) {
  const auto a = ramp(24, 87), v = ramp(4, 88), b = ramp(40, 89);
  ModelBuilder mb(13);
  mb.input("a", kFloat, {2, 3, 4}).input("v", kFloat, {4}).input("b", kFloat, {2, 4, 5}).output("av").output("vb");
  mb.node("MatMul", {"a", "v"}, {"av"});  // [2,3,4] x [4] -> [2,3]
  mb.node("MatMul", {"v", "b"}, {"vb"});  // [4] x [2,4,5] -> [2,5]
  std::vector<float> av, vb;
  for (int i = 0; i < 6; ++i) {
    double s = 0;
    for (int k = 0; k < 4; ++k) s += static_cast<double>(a[static_cast<size_t>(i * 4 + k)]) * v[static_cast<size_t>(k)];
    av.push_back(static_cast<float>(s));
  }
  for (int bt = 0; bt < 2; ++bt)
    for (int j = 0; j < 5; ++j) {
      double s = 0;
      for (int k = 0; k < 4; ++k) s += static_cast<double>(v[static_cast<size_t>(k)]) * b[static_cast<size_t>((bt * 4 + k) * 5 + j)];
      vb.push_back(static_cast<float>(s));
    }
  auto out = run_module(mb.import(), {f32({2, 3, 4}, a), f32({4}, v), f32({2, 4, 5}, b)});
  expect_near(out[0], {2, 3}, av);
  expect_near(out[1], {2, 5}, vb);
}

// ---- Softmax ---------------------------------------------------------------------------------------

TEST(OnnxNumerics, SoftmaxAxis) {
  const Shape xs{2, 3, 4};
  auto x = ramp(24, 91);
  for (auto& v : x) v *= 4.0f;
  for (int64_t axis : {1, -1, 0}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    ModelBuilder mb(13);
    mb.input("x", kFloat, xs).output("y");
    attr_i(mb.node("Softmax", {"x"}, {"y"}), "axis", axis);
    const int64_t ax = axis < 0 ? axis + 3 : axis;
    std::vector<float> want(24);
    int64_t stride[3] = {12, 4, 1};
    for (int64_t f = 0; f < 24; ++f) {
      const int64_t coord = (f / stride[ax]) % xs[static_cast<size_t>(ax)];
      const int64_t base = f - coord * stride[ax];
      double mx = -1e30, sum = 0;
      for (int64_t j = 0; j < xs[static_cast<size_t>(ax)]; ++j) mx = std::max<double>(mx, x[static_cast<size_t>(base + j * stride[ax])]);
      for (int64_t j = 0; j < xs[static_cast<size_t>(ax)]; ++j) sum += std::exp(x[static_cast<size_t>(base + j * stride[ax])] - mx);
      want[static_cast<size_t>(f)] = static_cast<float>(std::exp(x[static_cast<size_t>(f)] - mx) / sum);
    }
    auto out = run_module(mb.import(), {f32(xs, x)});
    expect_near(out[0], xs, want);
  }
}

// Mish (opset 18), x * tanh(log(1 + e^x)), against the formula in double, from -100 to 100 (e^x
// overflows fp32 past 88: the lowering's max(x, 0) + log(1 + e^-|x|) does not).
TEST(OnnxNumerics, MishOverTheWholeRange) {
  std::vector<float> x;
  for (int i = 0; i <= 400; ++i) x.push_back(-100.0f + 0.5f * static_cast<float>(i));
  std::vector<float> want;
  for (float v : x) {
    const double sp = v > 0 ? v + std::log1p(std::exp(-static_cast<double>(v))) : std::log1p(std::exp(static_cast<double>(v)));
    want.push_back(static_cast<float>(v * std::tanh(sp)));
  }
  const Shape xs{1, static_cast<int64_t>(x.size())};
  ModelBuilder mb(18);
  mb.input("x", kFloat, xs).output("y");
  mb.node("Mish", {"x"}, {"y"});
  auto out = run_module(mb.import(), {f32(xs, x)});
  expect_near(out[0], xs, want);
}

// ---- Slice -----------------------------------------------------------------------------------------

TEST(OnnxNumerics, SliceNegativeAndLargeSteps) {
  const Shape xs{4, 6};
  std::vector<float> x(24);
  for (int i = 0; i < 24; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i);
  ModelBuilder mb(13);
  mb.input("x", kFloat, xs).output("y1").output("y2").output("y3");
  // y1 = x[::-1, 1::2] (ends INT64_MIN: through the first row)
  mb.init_i64("s1", {2}, {-1, 1}).init_i64("e1", {2}, {INT64_MIN, 6}).init_i64("a1", {2}, {0, 1}).init_i64("t1", {2}, {-1, 2});
  mb.node("Slice", {"x", "s1", "e1", "a1", "t1"}, {"y1"});
  // y2 = x[:, 5:0:-2]
  mb.init_i64("s2", {1}, {5}).init_i64("e2", {1}, {0}).init_i64("a2", {1}, {-1}).init_i64("t2", {1}, {-2});
  mb.node("Slice", {"x", "s2", "e2", "a2", "t2"}, {"y2"});
  // y3 = x[1:4:2, 0:100:4]
  mb.init_i64("s3", {2}, {1, 0}).init_i64("e3", {2}, {4, 100}).init_i64("t3", {2}, {2, 4});
  mb.node("Slice", {"x", "s3", "e3", "", "t3"}, {"y3"});
  auto out = run_module(mb.import(), {f32(xs, x)});
  ASSERT_EQ(out.size(), 3u);
  auto pick = [&](std::vector<int> rows, std::vector<int> cols) {
    std::vector<float> v;
    for (int r : rows)
      for (int c : cols) v.push_back(x[static_cast<size_t>(r * 6 + c)]);
    return v;
  };
  expect_near(out[0], {4, 3}, pick({3, 2, 1, 0}, {1, 3, 5}));
  expect_near(out[1], {4, 3}, pick({0, 1, 2, 3}, {5, 3, 1}));
  expect_near(out[2], {2, 2}, pick({1, 3}, {0, 4}));
}

// Swin's patch merging, x[:, :, 1::2, 0::3] of a convolution's output (carried as NHWC): axes whose
// length is a multiple of the step are split whole, [length / step, step], and sliced once: no PAD.
TEST(OnnxNumerics, SliceStepsThatDivideTheAxisNeedNoPad) {
  const Shape xs{1, 2, 4, 6};
  std::vector<float> x(48);
  for (int i = 0; i < 48; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i);
  ModelBuilder mb(13);
  mb.input("x", kFloat, xs).output("y");
  mb.init_f("w", {2, 2, 1, 1}, {1, 0, 0, 1});  // the identity: c is x, held as NHWC
  mb.node("Conv", {"x", "w"}, {"c"});
  mb.init_i64("s", {2}, {1, 0}).init_i64("e", {2}, {4, 6}).init_i64("a", {2}, {2, 3}).init_i64("t", {2}, {2, 3});
  mb.node("Slice", {"c", "s", "e", "a", "t"}, {"y"});
  Module m = mb.import();
  EXPECT_EQ(count_ops(m, Op::PAD), 0);
  EXPECT_EQ(count_ops(m, Op::SLICE), 1);
  std::vector<float> want;
  for (int c = 0; c < 2; ++c)
    for (int i : {1, 3})
      for (int j : {0, 3}) want.push_back(x[static_cast<size_t>((c * 4 + i) * 6 + j)]);
  expect_near(run_module(std::move(m), {f32(xs, x)})[0], {1, 2, 2, 2}, want);
}

// ---- Gather ----------------------------------------------------------------------------------------

TEST(OnnxNumerics, GatherConstantIndices) {
  const Shape xs{3, 4};
  const auto x = ramp(12, 101);
  ModelBuilder mb(13);
  mb.input("x", kFloat, xs).output("y").output("z");
  mb.init_i64("idx", {2, 2}, {-1, 0, 1, -3});
  attr_i(mb.node("Gather", {"x", "idx"}, {"y"}), "axis", 1);
  mb.init_i64("last", {}, {-1});  // a scalar index: the row dimension disappears
  attr_i(mb.node("Gather", {"x", "last"}, {"z"}), "axis", 0);
  auto out = run_module(mb.import(), {f32(xs, x)});
  const int cols[4] = {3, 0, 1, 1};
  std::vector<float> want;
  for (int i = 0; i < 3; ++i)
    for (int c : cols) want.push_back(x[static_cast<size_t>(i * 4 + c)]);
  expect_near(out[0], {3, 2, 2}, want);
  expect_near(out[1], {4}, std::vector<float>(x.begin() + 8, x.end()));
}

TEST(OnnxNumerics, GatherRuntimeIndices) {
  // An embedding lookup: int64 ids at run time (carried as int32), negative ids count from the end.
  const auto emb = ramp(15, 103);
  ModelBuilder mb(13);
  mb.input("ids", kInt64, {2, 2}).init_f("emb", {5, 3}, emb).output("y");
  mb.node("Gather", {"emb", "ids"}, {"y"});
  Module m = mb.import();
  ASSERT_EQ(m.main().value(m.main().inputs()[0]).type, (TensorType{DType::kInt32, {2, 2}}));
  auto out = run_module(std::move(m), {i32({2, 2}, {0, -1, 4, -5})});
  std::vector<float> want;
  for (int r : {0, 4, 4, 0})
    for (int c = 0; c < 3; ++c) want.push_back(emb[static_cast<size_t>(r * 3 + c)]);
  expect_near(out[0], {2, 2, 3}, want);
}

// ---- Pad -------------------------------------------------------------------------------------------

TEST(OnnxNumerics, PadReflectAndEdge) {
  const Shape xs{1, 2, 3, 4};
  const auto x = ramp(24, 111);
  const std::vector<int64_t> pads{0, 0, 1, 2, 0, 0, 2, 1};  // H: 1 before, 2 after; W: 2 before, 1 after
  for (const char* mode : {"reflect", "edge"}) {
    SCOPED_TRACE(mode);
    ModelBuilder mb(13);
    mb.input("x", kFloat, xs).init_i64("pads", {8}, pads).output("y");
    attr_s(mb.node("Pad", {"x", "pads"}, {"y"}), "mode", mode);
    const bool reflect = std::string(mode) == "reflect";
    auto src = [&](int64_t i, int64_t len) {
      if (reflect) return i < 0 ? -i : (i >= len ? 2 * (len - 1) - i : i);
      return std::clamp<int64_t>(i, 0, len - 1);
    };
    std::vector<float> want;
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t h = -1; h < 3 + 2; ++h)
        for (int64_t w = -2; w < 4 + 1; ++w) want.push_back(x[idx4(xs, 0, c, src(h, 3), src(w, 4))]);
    auto out = run_module(mb.import(), {f32(xs, x)});
    expect_near(out[0], {1, 2, 6, 7}, want);
  }
}

// ---- Resize ----------------------------------------------------------------------------------------

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// The source coordinate of output index o as the exact fraction num / den.
void source_coord(const std::string& coord, int64_t o, int64_t in, int64_t out, int64_t* num, int64_t* den) {
  if (coord == "asymmetric") {
    *num = o * in;
    *den = out;
  } else if (coord == "align_corners") {
    *num = o * (in - 1);
    *den = std::max<int64_t>(out - 1, 1);
  } else {  // half_pixel
    *num = (2 * o + 1) * in - out;
    *den = 2 * out;
  }
}

std::vector<float> ref_resize(const std::vector<float>& x, const Shape& xs, const Shape& ys, const std::string& mode,
                              const std::string& coord, const std::string& nearest) {
  std::vector<float> y;
  auto nearest_index = [&](int64_t o, int64_t in, int64_t out) {
    int64_t num, den;
    source_coord(coord, o, in, out, &num, &den);
    int64_t q = floor_div(num, den);
    const int64_t r = num - q * den;
    if (nearest == "round_prefer_floor" && 2 * r > den) ++q;
    if (nearest == "round_prefer_ceil" && 2 * r >= den) ++q;
    if (nearest == "ceil" && r > 0) ++q;
    return std::clamp<int64_t>(q, 0, in - 1);
  };
  auto linear = [&](int64_t o, int64_t in, int64_t out, int64_t* i0, int64_t* i1, double* f) {
    int64_t num, den;
    source_coord(coord, o, in, out, &num, &den);
    double c = std::clamp(static_cast<double>(num) / static_cast<double>(den), 0.0, static_cast<double>(in - 1));
    *i0 = static_cast<int64_t>(std::floor(c));
    *i1 = std::min(*i0 + 1, in - 1);
    *f = c - static_cast<double>(*i0);
  };
  for (int64_t n = 0; n < xs[0]; ++n)
    for (int64_t c = 0; c < xs[1]; ++c)
      for (int64_t oy = 0; oy < ys[2]; ++oy)
        for (int64_t ox = 0; ox < ys[3]; ++ox) {
          if (mode == "nearest") {
            y.push_back(x[idx4(xs, n, c, nearest_index(oy, xs[2], ys[2]), nearest_index(ox, xs[3], ys[3]))]);
          } else {
            int64_t y0, y1, x0, x1;
            double fy, fx;
            linear(oy, xs[2], ys[2], &y0, &y1, &fy);
            linear(ox, xs[3], ys[3], &x0, &x1, &fx);
            const double top = x[idx4(xs, n, c, y0, x0)] * (1 - fx) + x[idx4(xs, n, c, y0, x1)] * fx;
            const double bot = x[idx4(xs, n, c, y1, x0)] * (1 - fx) + x[idx4(xs, n, c, y1, x1)] * fx;
            y.push_back(static_cast<float>(top * (1 - fy) + bot * fy));
          }
        }
  return y;
}

void check_resize(const std::string& mode, const std::string& coord, const std::string& nearest, const Shape& ys,
                  bool by_scales) {
  SCOPED_TRACE(mode + " " + coord + " " + nearest + " -> " + shape_str(ys));
  const Shape xs{1, 2, 2, 3};
  const auto x = ramp(12, 121);
  ModelBuilder mb(13);
  mb.input("x", kFloat, xs).output("y");
  std::vector<std::string> ins{"x", ""};
  if (by_scales) {
    mb.init_f("scales", {4}, {1.f, 1.f, static_cast<float>(ys[2]) / 2.f, static_cast<float>(ys[3]) / 3.f});
    ins.push_back("scales");
  } else {
    mb.init_i64("sizes", {4}, ys);
    ins.push_back("");
    ins.push_back("sizes");
  }
  auto& n = mb.node("Resize", ins, {"y"});
  attr_s(n, "mode", mode);
  attr_s(n, "coordinate_transformation_mode", coord);
  if (mode == "nearest") attr_s(n, "nearest_mode", nearest);
  const auto want = ref_resize(x, xs, ys, mode, coord, nearest);
  auto out = run_module(mb.import(), {f32(xs, x)});
  expect_near(out[0], ys, want);
}

TEST(OnnxNumerics, ResizeNearest) {
  // [2,3] -> [3,5]: asymmetric/floor samples rows 0,0,1 and columns 0,0,1,1,2.
  check_resize("nearest", "asymmetric", "floor", {1, 2, 3, 5}, false);
  check_resize("nearest", "asymmetric", "floor", {1, 2, 4, 6}, true);
  // half_pixel, round_prefer_floor: row 1 samples 0.5 exactly and must round down.
  check_resize("nearest", "half_pixel", "round_prefer_floor", {1, 2, 3, 5}, false);
  const auto x = ramp(12, 121);
  auto r = ref_resize(x, {1, 2, 2, 3}, {1, 2, 3, 5}, "nearest", "asymmetric", "floor");
  EXPECT_EQ(r[5 * 2 + 4], x[1 * 3 + 2]);  // hand check of the reference: (2,4) <- (1,2)
}

TEST(OnnxNumerics, ResizeNearestOtherRoundingModes) {
  check_resize("nearest", "half_pixel", "round_prefer_ceil", {1, 2, 3, 5}, false);
  check_resize("nearest", "half_pixel", "ceil", {1, 2, 3, 5}, false);
  check_resize("nearest", "asymmetric", "round_prefer_ceil", {1, 2, 5, 7}, false);
  check_resize("nearest", "align_corners", "round_prefer_floor", {1, 2, 3, 5}, false);
}

TEST(OnnxNumerics, ResizeLinear) {
  check_resize("linear", "align_corners", "", {1, 2, 3, 5}, false);
  check_resize("linear", "half_pixel", "", {1, 2, 4, 6}, true);
  check_resize("linear", "asymmetric", "", {1, 2, 3, 5}, false);
  check_resize("linear", "half_pixel", "", {1, 2, 3, 5}, false);
}

// ---- layout-sensitive tensor ops after a Conv --------------------------------------------------------

TEST(OnnxNumerics, ConcatAndSplitOnChannelsAfterConv) {
  // conv [1,3,4,4] (NHWC inside) joined with the NCHW input x on the channel axis, then split 2+3.
  const Shape xs{1, 2, 4, 4}, ws{3, 2, 1, 1};
  const auto x = ramp(32, 131), w = ramp(6, 132), b = ramp(3, 133);
  ModelBuilder mb(13);
  mb.input("x", kFloat, xs).init_f("w", ws, w).init_f("b", {3}, b).init_i64("split", {2}, {2, 3});
  mb.output("cat").output("s0").output("s1");
  mb.node("Conv", {"x", "w", "b"}, {"c"});
  attr_i(mb.node("Concat", {"c", "x"}, {"cat"}), "axis", 1);
  attr_i(mb.node("Split", {"cat", "split"}, {"s0", "s1"}), "axis", 1);
  Shape cs;
  const auto c = ref_conv(x, xs, w, ws, b, {}, &cs);
  std::vector<float> cat(c);
  cat.insert(cat.end(), x.begin(), x.end());  // N = 1: channel blocks are contiguous
  auto out = run_module(mb.import(), {f32(xs, x)});
  ASSERT_EQ(out.size(), 3u);
  expect_near(out[0], {1, 5, 4, 4}, cat);
  expect_near(out[1], {1, 2, 4, 4}, std::vector<float>(cat.begin(), cat.begin() + 32));
  expect_near(out[2], {1, 3, 4, 4}, std::vector<float>(cat.begin() + 32, cat.end()));
}

void check_reduce_mean_of_conv(int opset) {
  SCOPED_TRACE("opset " + std::to_string(opset));
  const Shape xs{1, 2, 3, 3}, ws{3, 2, 2, 2};
  const auto x = ramp(18, 141), w = ramp(24, 142), b = ramp(3, 143);
  ModelBuilder mb(opset);
  mb.input("x", kFloat, xs).init_f("w", ws, w).init_f("b", {3}, b).output("y");
  mb.node("Conv", {"x", "w", "b"}, {"c"});
  if (opset >= 18) {
    mb.init_i64("axes", {2}, {2, 3});
    attr_i(mb.node("ReduceMean", {"c", "axes"}, {"y"}), "keepdims", 0);
  } else {
    auto& n = mb.node("ReduceMean", {"c"}, {"y"});
    attr_ints(n, "axes", {2, 3});
    attr_i(n, "keepdims", 0);
  }
  Shape cs;
  const auto c = ref_conv(x, xs, w, ws, b, {}, &cs);
  ASSERT_EQ(cs, (Shape{1, 3, 2, 2}));
  std::vector<float> want;
  for (int o = 0; o < 3; ++o) want.push_back((c[o * 4] + c[o * 4 + 1] + c[o * 4 + 2] + c[o * 4 + 3]) / 4.0f);
  auto out = run_module(mb.import(), {f32(xs, x)});
  expect_near(out[0], {1, 3}, want);
}

TEST(OnnxNumerics, SplitNumOutputsUneven) {
  // Opset 18: num_outputs 3 over a length-7 axis gives 3, 3, 1.
  std::vector<float> x(14);
  for (int i = 0; i < 14; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i);
  ModelBuilder mb(18);
  mb.input("x", kFloat, {2, 7}).output("a").output("b").output("c");
  auto& n = mb.node("Split", {"x"}, {"a", "b", "c"});
  attr_i(n, "axis", -1);
  attr_i(n, "num_outputs", 3);
  auto out = run_module(mb.import(), {f32({2, 7}, x)});
  ASSERT_EQ(out.size(), 3u);
  expect_near(out[0], {2, 3}, {0, 1, 2, 7, 8, 9}, 0.0);
  expect_near(out[1], {2, 3}, {3, 4, 5, 10, 11, 12}, 0.0);
  expect_near(out[2], {2, 1}, {6, 13}, 0.0);
}

TEST(OnnxNumerics, ReduceMeanKeepdims0OverSpatialAxesOfConv) {
  check_reduce_mean_of_conv(17);
  check_reduce_mean_of_conv(18);
}

// ---- Where / Expand / Cast -------------------------------------------------------------------------

TEST(OnnxNumerics, WhereBroadcasts) {
  // cond [2,1,3] (bool, run time), a [2,4,3] (run time), b [3] (constant) -> [2,4,3].
  const auto a = ramp(24, 151), b = ramp(3, 152);
  const std::vector<int64_t> cond{1, 0, 1, 0, 0, 1};
  ModelBuilder mb(13);
  mb.input("cond", kBool, {2, 1, 3}).input("a", kFloat, {2, 4, 3}).init_f("b", {3}, b).output("y");
  mb.node("Where", {"cond", "a", "b"}, {"y"});
  std::vector<float> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k)
        want.push_back(cond[static_cast<size_t>(i * 3 + k)] ? a[static_cast<size_t>((i * 4 + j) * 3 + k)] : b[static_cast<size_t>(k)]);
  auto out = run_module(mb.import(), {boolean({2, 1, 3}, cond), f32({2, 4, 3}, a)});
  expect_near(out[0], {2, 4, 3}, want);
}

TEST(OnnxNumerics, Expand) {
  const std::vector<float> x{1.5f, -2.f, 3.25f};
  ModelBuilder mb(13);
  mb.input("x", kFloat, {3, 1}).init_i64("big", {3}, {2, 3, 4}).init_i64("small", {3}, {2, 1, 1});
  mb.output("y").output("z");
  mb.node("Expand", {"x", "big"}, {"y"});
  mb.node("Expand", {"x", "small"}, {"z"});  // a target smaller than x in some dims: x's dims win
  std::vector<float> y;
  for (int i = 0; i < 2; ++i)
    for (float v : x)
      for (int k = 0; k < 4; ++k) y.push_back(v);
  auto out = run_module(mb.import(), {f32({3, 1}, x)});
  expect_near(out[0], {2, 3, 4}, y);
  expect_near(out[1], {2, 3, 1}, {1.5f, -2.f, 3.25f, 1.5f, -2.f, 3.25f});
}

TEST(OnnxNumerics, CastFloatToInt32Truncates) {
  const std::vector<float> x{-1.7f, -0.5f, 0.5f, 1.7f, 2.5f, -2.5f, 3.0f, -3.99f};
  ModelBuilder mb(13);
  mb.input("x", kFloat, {8}).output("y", kInt32);
  attr_i(mb.node("Cast", {"x"}, {"y"}), "to", kInt32);
  auto out = run_module(mb.import(), {f32({8}, x)});
  ASSERT_EQ(out[0].dtype(), DType::kInt32);
  expect_ints(out[0], {8}, {-1, 0, 0, 1, 2, -2, 3, -3});
}

// ---- quantization ----------------------------------------------------------------------------------

const std::vector<float> kQuantX{0.25f, 0.75f, -0.25f, 1.25f, 100.f, -100.f, 0.f, -0.75f, 63.0f, -64.5f};

std::vector<int64_t> run_quantize(int32_t zp) {
  ModelBuilder mb(13);
  mb.input("x", kFloat, {2, 5}).init_f("scale", {}, {0.5f}).init_i8("zp", {}, {zp}).output("y", kInt8);
  mb.node("QuantizeLinear", {"x", "scale", "zp"}, {"y"});
  auto out = run_module(mb.import(), {f32({2, 5}, kQuantX)});
  EXPECT_EQ(out[0].dtype(), DType::kInt8);
  EXPECT_EQ(out[0].shape(), (Shape{2, 5}));
  return out[0].to_ints();
}

// ONNX: y = saturate(round_half_even(x / scale) + zero_point), computed here from x / 0.5.
std::vector<int64_t> ref_quantize(int32_t zp) {
  std::vector<int64_t> y;
  for (float v : kQuantX)
    y.push_back(std::clamp<int64_t>(static_cast<int64_t>(std::nearbyint(static_cast<double>(v) * 2.0)) + zp, -128, 127));
  return y;
}

TEST(OnnxNumerics, QuantizeLinearInt8RoundHalfEvenSaturates) {
  // x / 0.5 = 0.5, 1.5, -0.5, 2.5 (ties to even), 200 / -200 (saturate), 0, -1.5, 126, -129.
  EXPECT_EQ(ref_quantize(0), (std::vector<int64_t>{0, 2, 0, 2, 127, -128, 0, -2, 126, -128}));
  EXPECT_EQ(run_quantize(0), ref_quantize(0));
  // An even zero point keeps the parity of the ties.
  EXPECT_EQ(run_quantize(-2), (std::vector<int64_t>{-2, 0, -2, 0, 127, -128, -2, -4, 124, -128}));
}

TEST(OnnxNumerics, QuantizeLinearOddZeroPointRoundsBeforeAdding) {
  // With zero point 1: rint(0.5) + 1 = 1, rint(1.5) + 1 = 3, rint(-0.5) + 1 = 1, rint(2.5) + 1 = 3.
  const auto want = ref_quantize(1);
  EXPECT_EQ(want, (std::vector<int64_t>{1, 3, 1, 3, 127, -128, 1, -1, 127, -128}));
  const auto got = run_quantize(1);
  EXPECT_EQ(got, want);
}

TEST(OnnxNumerics, DequantizeLinearInt8) {
  ModelBuilder mb(13);
  mb.input("q", kInt8, {1, 5}).init_f("scale", {}, {0.25f}).init_i8("zp", {}, {-3}).output("y");
  mb.node("DequantizeLinear", {"q", "scale", "zp"}, {"y"});
  // Per-axis (axis 1 of [2,3]): scale and zero point per column.
  mb.input("p", kInt8, {2, 3}).init_f("scales", {3}, {0.5f, 2.f, 0.125f}).init_i8("zps", {3}, {1, 0, -128}).output("z");
  attr_i(mb.node("DequantizeLinear", {"p", "scales", "zps"}, {"z"}), "axis", 1);
  auto out = run_module(mb.import(), {Tensor::from_ints({DType::kInt8, {1, 5}}, std::vector<int64_t>{-128, -1, 0, 5, 127}),
                                      Tensor::from_ints({DType::kInt8, {2, 3}}, std::vector<int64_t>{-128, 127, -128, 127, -5, 127})});
  expect_near(out[0], {1, 5}, {-31.25f, 0.5f, 0.75f, 2.0f, 32.5f});
  expect_near(out[1], {2, 3}, {-64.5f, 254.f, 0.f, 63.f, -10.f, 31.875f});
}

TEST(OnnxNumerics, PerTensorQuantizationOfRank1Tensors) {
  // Per-tensor (scalar scale) Quantize/DequantizeLinear of a 1-D tensor with the default axis (1):
  // ONNX uses axis only for per-axis quantization, so this is valid (QDQ models dequantize 1-D
  // int32 biases exactly like this).
  ModelBuilder mb(13);
  mb.input("x", kFloat, {4}).init_f("s", {}, {0.5f}).init_i8("zp", {}, {0}).output("q", kInt8);
  mb.node("QuantizeLinear", {"x", "s", "zp"}, {"q"});
  mb.node("DequantizeLinear", {"q", "s", "zp"}, {"y"});
  mb.output("y");
  Module m = mb.import();
  auto out = run_module(std::move(m), {f32({4}, {1.25f, -0.3f, 100.f, 0.75f})});
  expect_ints(out[0], {4}, {2, -1, 127, 2});
  expect_near(out[1], {4}, {1.0f, -0.5f, 63.5f, 1.0f});
}


// ---- Unsigned integers ----------------------------------------------------------------------------

// ORT's default QDQ form: uint8 in, DequantizeLinear, Relu, QuantizeLinear, uint8 out. The graph's
// boundary carries uint8 as int8 bits (RESCALE's unsigned flags), values 128..255 included.
TEST(OnnxNumerics, Uint8QdqBoundaryKeepsUnsignedValues) {
  ModelBuilder mb(13);
  mb.input("x", kUint8, {2, 3}).init_f("sc", {}, {0.5f}).init_f("sc2", {}, {0.25f}).output("y", kUint8).output("s", kUint8);
  auto zp = [&](const char* name, int32_t v) {
    auto* t = mb.graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(kUint8);
    t->add_int32_data(v);
  };
  zp("zp", 128);
  zp("zp2", 10);
  mb.node("DequantizeLinear", {"x", "sc", "zp"}, {"f"});
  mb.node("Relu", {"f"}, {"r"});
  mb.node("QuantizeLinear", {"r", "sc2", "zp2"}, {"y"});
  mb.node("Add", {"x", "x"}, {"s"});  // wraps modulo 256
  Module m = mb.import();
  ASSERT_EQ(m.main().value(m.main().inputs()[0]).type.dtype, DType::kInt8);
  EXPECT_GE(count_ops(m, Op::RESCALE), 3);  // one widening, one narrowing per output
  const std::vector<int64_t> x = {0, 100, 128, 130, 200, 255};
  std::vector<int64_t> bits;
  for (int64_t v : x) bits.push_back(static_cast<int8_t>(static_cast<uint8_t>(v)));
  auto out = run_module(std::move(m), {Tensor::from_ints({DType::kInt8, {2, 3}}, bits)});
  ASSERT_EQ(out.size(), 2u);
  for (size_t i = 0; i < x.size(); ++i) {
    const double r = std::max(0.0, (static_cast<double>(x[i]) - 128) * 0.5);
    const int64_t want_y = std::clamp<int64_t>(static_cast<int64_t>(std::nearbyint(r / 0.25)) + 10, 0, 255);
    EXPECT_EQ(out[0].at_int(static_cast<int64_t>(i)) & 0xFF, want_y) << i;
    EXPECT_EQ(out[1].at_int(static_cast<int64_t>(i)) & 0xFF, (2 * x[i]) % 256) << i;
  }
}

TEST(OnnxNumerics, Uint16InputsWidenAndNarrowExactly) {
  ModelBuilder mb(13);
  mb.input("a", kUint16, {4}).input("b", kUint16, {4}).output("y", kUint16).output("m", kUint16);
  mb.node("Sub", {"a", "b"}, {"y"});  // wraps modulo 65536
  mb.node("Max", {"a", "b"}, {"m"});
  const std::vector<int64_t> a = {0, 40000, 65535, 7}, b = {1, 30000, 65535, 9};
  auto bits = [](const std::vector<int64_t>& v) {
    std::vector<int64_t> r;
    for (int64_t x : v) r.push_back(static_cast<int16_t>(static_cast<uint16_t>(x)));
    return Tensor::from_ints({DType::kInt16, {4}}, r);
  };
  auto out = run_module(mb.import(), {bits(a), bits(b)});
  for (int64_t i = 0; i < 4; ++i) {
    const size_t k = static_cast<size_t>(i);
    EXPECT_EQ(out[0].at_int(i) & 0xFFFF, (a[k] - b[k] + 65536) % 65536) << i;
    EXPECT_EQ(out[1].at_int(i) & 0xFFFF, std::max(a[k], b[k])) << i;
  }
}

TEST(OnnxNumerics, Uint32InitializerPastInt32IsRefusedByName) {
  ModelBuilder mb(13);
  mb.input("a", kUint32, {1}).output("y", kUint32);
  auto* t = mb.graph()->add_initializer();
  t->set_name("big");
  t->set_data_type(kUint32);
  t->add_dims(1);
  t->add_uint64_data(3000000000u);
  mb.node("Add", {"a", "big"}, {"y"});
  try {
    mb.import();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("big"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("does not fit int32"), std::string::npos) << e.what();
  }
}

TEST(OnnxNumerics, BitShiftOnUint8) {
  ModelBuilder mb(13);
  mb.input("x", kUint8, {3}).input("s", kUint8, {3}).output("l", kUint8).output("r", kUint8);
  attr_s(mb.node("BitShift", {"x", "s"}, {"l"}), "direction", "LEFT");
  attr_s(mb.node("BitShift", {"x", "s"}, {"r"}), "direction", "RIGHT");
  auto u8 = [](std::vector<int64_t> v) {
    for (auto& x : v) x = static_cast<int8_t>(static_cast<uint8_t>(x));
    return Tensor::from_ints({DType::kInt8, {3}}, v);
  };
  auto out = run_module(mb.import(), {u8({16, 200, 255}), u8({1, 2, 7})});
  const int64_t l[] = {32, (200 << 2) & 0xFF, (255 << 7) & 0xFF}, r[] = {8, 50, 1};
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(out[0].at_int(i) & 0xFF, l[i]) << i;
    EXPECT_EQ(out[1].at_int(i) & 0xFF, r[i]) << i;
  }
}

// ---- Inverse trigonometric functions (built from arithmetic; TOSA has none) ------------------------

TEST(OnnxNumerics, InverseTrigonometryMatchesLibm) {
  struct Fn {
    const char* op;
    double (*ref)(double);
    double lo, hi;
  };
  const Fn fns[] = {{"Atan", [](double v) { return std::atan(v); }, -50, 50},
                    {"Asin", [](double v) { return std::asin(v); }, -1, 1},
                    {"Acos", [](double v) { return std::acos(v); }, -1, 1},
                    {"Asinh", [](double v) { return std::asinh(v); }, -100, 100},
                    {"Acosh", [](double v) { return std::acosh(v); }, 1, 100},
                    {"Atanh", [](double v) { return std::atanh(v); }, -0.999, 0.999}};
  for (const Fn& f : fns) {
    SCOPED_TRACE(f.op);
    const int64_t n = 401;
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = static_cast<float>(f.lo + (f.hi - f.lo) * static_cast<double>(i) / (n - 1));
    ModelBuilder mb;
    mb.input("x", kFloat, {n}).output("y");
    mb.node(f.op, {"x"}, {"y"});
    auto out = run_module(mb.import(), {f32({n}, x)});
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double want = f.ref(static_cast<double>(x[static_cast<size_t>(i)]));
      const double err = std::fabs(out[0].at_double(i) - want) / std::max(1.0, std::fabs(want));
      worst = std::max(worst, err);
    }
    EXPECT_LT(worst, 2e-6);
  }
}


// ---- 3-D windows ------------------------------------------------------------------------------------

// Plain-loop references over NCDHW: a grouped, dilated, strided, padded 3-D convolution, and
// 3-D pools (max, or average counting the padding or not; ceil_mode).
std::vector<float> ref_conv3d(const std::vector<float>& x, const Shape& xs, const std::vector<float>& w, const Shape& ws,
                              const std::vector<int64_t>& pads, const std::vector<int64_t>& st, const std::vector<int64_t>& dl,
                              int64_t group, Shape* ys) {
  const int64_t n = xs[0], c = xs[1], oc = ws[0], cg = c / group, ocg = oc / group;
  int64_t o[3];
  for (int k = 0; k < 3; ++k) o[k] = (xs[2 + k] + pads[k] + pads[3 + k] - ((ws[2 + k] - 1) * dl[k] + 1)) / st[k] + 1;
  *ys = {n, oc, o[0], o[1], o[2]};
  std::vector<float> y(static_cast<size_t>(n * oc * o[0] * o[1] * o[2]), 0.f);
  auto X = [&](int64_t a, int64_t b, int64_t d, int64_t h, int64_t ww) {
    return x[static_cast<size_t>((((a * c + b) * xs[2] + d) * xs[3] + h) * xs[4] + ww)];
  };
  for (int64_t a = 0; a < n; ++a)
    for (int64_t m = 0; m < oc; ++m)
      for (int64_t d = 0; d < o[0]; ++d)
        for (int64_t h = 0; h < o[1]; ++h)
          for (int64_t q = 0; q < o[2]; ++q) {
            double acc = 0;
            const int64_t g = m / ocg;
            for (int64_t ci = 0; ci < cg; ++ci)
              for (int64_t kd = 0; kd < ws[2]; ++kd)
                for (int64_t kh = 0; kh < ws[3]; ++kh)
                  for (int64_t kw = 0; kw < ws[4]; ++kw) {
                    const int64_t id = d * st[0] - pads[0] + kd * dl[0], ih = h * st[1] - pads[1] + kh * dl[1],
                                  iw = q * st[2] - pads[2] + kw * dl[2];
                    if (id < 0 || id >= xs[2] || ih < 0 || ih >= xs[3] || iw < 0 || iw >= xs[4]) continue;
                    acc += static_cast<double>(X(a, g * cg + ci, id, ih, iw)) *
                           w[static_cast<size_t>((((m * cg + ci) * ws[2] + kd) * ws[3] + kh) * ws[4] + kw)];
                  }
            y[static_cast<size_t>((((a * oc + m) * o[0] + d) * o[1] + h) * o[2] + q)] = static_cast<float>(acc);
          }
  return y;
}

TEST(OnnxNumerics, Conv3DPadsStridesDilationsGroups) {
  const Shape xs{1, 4, 6, 7, 5}, ws{6, 2, 3, 2, 3};
  const std::vector<int64_t> pads{1, 0, 2, 0, 1, 1}, st{2, 1, 2}, dl{1, 2, 1};
  const auto x = ramp(shape_elements(xs), 31), w = ramp(shape_elements(ws), 32);
  ModelBuilder mb;
  mb.input("x", kFloat, xs).init_f("w", ws, w).output("y");
  auto& n = mb.node("Conv", {"x", "w"}, {"y"});
  attr_ints(n, "pads", pads);
  attr_ints(n, "strides", st);
  attr_ints(n, "dilations", dl);
  attr_i(n, "group", 2);
  Module m = mb.import();
  EXPECT_EQ(count_ops(m, Op::CONV3D), 2);
  Shape ys;
  const auto want = ref_conv3d(x, xs, w, ws, pads, st, dl, 2, &ys);
  auto out = run_module(std::move(m), {f32(xs, x)});
  expect_near(out[0], ys, want, 1e-4);
}

struct Pool3Case {
  bool max, count_pad, ceil;
  std::vector<int64_t> k, st, pads;
};

std::vector<float> ref_pool3d(const std::vector<float>& x, const Shape& xs, const Pool3Case& pc, Shape* ys) {
  int64_t o[3];
  for (int a = 0; a < 3; ++a) {
    const int64_t span = xs[2 + a] + pc.pads[a] + pc.pads[3 + a] - pc.k[a];
    o[a] = (pc.ceil ? (span + pc.st[a] - 1) / pc.st[a] : span / pc.st[a]) + 1;
    if (pc.ceil && (o[a] - 1) * pc.st[a] >= xs[2 + a] + pc.pads[a]) --o[a];
  }
  *ys = {xs[0], xs[1], o[0], o[1], o[2]};
  std::vector<float> y;
  for (int64_t nc = 0; nc < xs[0] * xs[1]; ++nc)
    for (int64_t d = 0; d < o[0]; ++d)
      for (int64_t h = 0; h < o[1]; ++h)
        for (int64_t q = 0; q < o[2]; ++q) {
          double best = -INFINITY, sum = 0;
          int64_t valid = 0, counted = 0;
          for (int64_t kd = 0; kd < pc.k[0]; ++kd)
            for (int64_t kh = 0; kh < pc.k[1]; ++kh)
              for (int64_t kw = 0; kw < pc.k[2]; ++kw) {
                const int64_t id = d * pc.st[0] - pc.pads[0] + kd, ih = h * pc.st[1] - pc.pads[1] + kh,
                              iw = q * pc.st[2] - pc.pads[2] + kw;
                const bool in_pads = id < xs[2] + pc.pads[3] && ih < xs[3] + pc.pads[4] && iw < xs[4] + pc.pads[5];
                if (in_pads) ++counted;
                if (id < 0 || id >= xs[2] || ih < 0 || ih >= xs[3] || iw < 0 || iw >= xs[4]) continue;
                const double v = x[static_cast<size_t>(((nc * xs[2] + id) * xs[3] + ih) * xs[4] + iw)];
                best = std::max(best, v);
                sum += v;
                ++valid;
              }
          y.push_back(static_cast<float>(pc.max ? best : sum / static_cast<double>(pc.count_pad ? counted : valid)));
        }
  return y;
}

TEST(OnnxNumerics, Pool3DMaxAndAverageWithPadsStridesCeil) {
  const Shape xs{2, 3, 5, 6, 7};
  const auto x = ramp(shape_elements(xs), 41);
  const Pool3Case cases[] = {
      {true, false, false, {2, 3, 3}, {2, 2, 1}, {1, 1, 0, 0, 1, 2}},
      {false, false, false, {3, 2, 3}, {1, 2, 2}, {1, 0, 1, 1, 1, 1}},
      {false, true, false, {3, 3, 2}, {2, 1, 2}, {1, 1, 1, 1, 0, 1}},
      {true, false, true, {2, 2, 3}, {2, 2, 2}, {0, 0, 0, 0, 0, 0}},
      {false, false, true, {3, 2, 2}, {2, 2, 2}, {1, 0, 0, 1, 0, 0}},
  };
  for (const Pool3Case& pc : cases) {
    SCOPED_TRACE(std::string(pc.max ? "MaxPool" : "AveragePool") + (pc.count_pad ? " count_include_pad" : "") +
                 (pc.ceil ? " ceil_mode" : ""));
    ModelBuilder mb;
    mb.input("x", kFloat, xs).output("y");
    auto& n = mb.node(pc.max ? "MaxPool" : "AveragePool", {"x"}, {"y"});
    attr_ints(n, "kernel_shape", pc.k);
    attr_ints(n, "strides", pc.st);
    attr_ints(n, "pads", pc.pads);
    if (pc.ceil) attr_i(n, "ceil_mode", 1);
    if (pc.count_pad) attr_i(n, "count_include_pad", 1);
    Shape ys;
    const auto want = ref_pool3d(x, xs, pc, &ys);
    auto out = run_module(mb.import(), {f32(xs, x)});
    expect_near(out[0], ys, want, 1e-5);
  }
}

TEST(OnnxNumerics, GlobalPoolsOver3SpatialDimensions) {
  const Shape xs{1, 3, 2, 3, 4};
  const auto x = ramp(shape_elements(xs), 43);
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    SCOPED_TRACE(op);
    ModelBuilder mb;
    mb.input("x", kFloat, xs).output("y");
    mb.node(op, {"x"}, {"y"});
    std::vector<float> want;
    for (int64_t c = 0; c < 3; ++c) {
      double sum = 0, best = -INFINITY;
      for (int64_t i = 0; i < 24; ++i) {
        sum += x[static_cast<size_t>(c * 24 + i)];
        best = std::max<double>(best, x[static_cast<size_t>(c * 24 + i)]);
      }
      want.push_back(static_cast<float>(std::string(op) == "GlobalMaxPool" ? best : sum / 24));
    }
    auto out = run_module(mb.import(), {f32(xs, x)});
    expect_near(out[0], {1, 3, 1, 1, 1}, want, 1e-5);
  }
}


// ---- Resize through interpolation matrices -----------------------------------------------------------

// Linear antialiased downscaling by 2 (opset 18): a triangle filter stretched to 4 taps,
// (1, 3, 3, 1) / 8 over x[2i-1 .. 2i+2] with edge replication; and axes naming only the last axis.
TEST(OnnxNumerics, ResizeLinearAntialiasOverOneAxis) {
  ModelBuilder mb(18);
  mb.input("x", kFloat, {1, 2, 8}).init_f("scales", {1}, {0.5f}).output("y");
  auto& n = mb.node("Resize", {"x", "", "scales"}, {"y"});
  attr_s(n, "mode", "linear");
  attr_i(n, "antialias", 1);
  attr_ints(n, "axes", {2});
  std::vector<float> x(16);
  for (size_t i = 0; i < 16; ++i) x[i] = static_cast<float>((i * 7) % 11) - 3.f;
  std::vector<float> want;
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t i = 0; i < 4; ++i) {
      auto at = [&](int64_t j) { return x[static_cast<size_t>(r * 8 + std::clamp<int64_t>(j, 0, 7))]; };
      want.push_back((at(2 * i - 1) + 3 * at(2 * i) + 3 * at(2 * i + 1) + at(2 * i + 2)) / 8);
    }
  Module m = mb.import();
  EXPECT_EQ(count_ops(m, Op::RESIZE), 0);
  EXPECT_EQ(count_ops(m, Op::MATMUL), 1);
  auto out = run_module(std::move(m), {f32({1, 2, 8}, x)});
  expect_near(out[0], {1, 2, 4}, want, 1e-6);
}


// ---- DFT (constant cosine / sine matrices) ----------------------------------------------------------

// A real signal of 6 samples zero-padded to dft_length 10, one-sided (6 bins), along axis 1 of
// [2, 6, 1]: against the defining sum.
TEST(OnnxNumerics, DftRealPaddedOnesided) {
  ModelBuilder mb(17);
  mb.input("x", kFloat, {2, 6, 1}).init_i64("len", {}, {10}).output("y");
  attr_i(mb.node("DFT", {"x", "len"}, {"y"}), "onesided", 1);
  const auto x = ramp(12, 51);
  std::vector<float> want;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t k = 0; k < 6; ++k) {
      double re = 0, im = 0;
      for (int64_t t = 0; t < 6; ++t) {
        const double a = 2 * M_PI * static_cast<double>(t * k) / 10;
        re += x[static_cast<size_t>(b * 6 + t)] * std::cos(a);
        im -= x[static_cast<size_t>(b * 6 + t)] * std::sin(a);
      }
      want.push_back(static_cast<float>(re));
      want.push_back(static_cast<float>(im));
    }
  auto out = run_module(mb.import(), {f32({2, 6, 1}, x)});
  expect_near(out[0], {2, 6, 2}, want, 1e-5);
}


// DynamicQuantizeLinear divides as float32 does: scale = (max - min) / 255 and x / scale are
// correctly rounded quotients (TOSA has only RECIPROCAL, whose product can be an ulp off and then
// rounds a near-tie to the other integer). Values are planted at (k + 0.5) * scale.
TEST(OnnxNumerics, DynamicQuantizeLinearRoundsLikeFloat32Division) {
  constexpr int64_t kN = 4096;
  ModelBuilder mb(13);
  mb.input("x", kFloat, {kN}).output("y", kUint8).output("s").output("z", kUint8);
  mb.node("DynamicQuantizeLinear", {"x"}, {"y", "s", "z"});
  Module m = mb.import();
  std::vector<float> x(kN);
  uint32_t seed = 12345;
  for (auto& v : x) {
    seed = seed * 1664525u + 1013904223u;
    v = (static_cast<float>(seed >> 8) / 16777216.0f - 0.37f) * 7.3f;
  }
  auto quotient = [](float a, float b) {
    volatile float q = a / b;  // IEEE float32 division, rounded once
    return static_cast<float>(q);
  };
  auto range_scale = [&] {
    const float mn = std::min(0.0f, *std::min_element(x.begin(), x.end()));
    const float mx = std::max(0.0f, *std::max_element(x.begin(), x.end()));
    return std::pair<float, float>{mn, quotient(mx - mn, 255.0f)};
  };
  const float s0 = range_scale().second;
  for (int64_t k = 0; k < 200; ++k) x[static_cast<size_t>(k)] = (static_cast<float>(k) - 100.0f + 0.5f) * s0;
  const auto [mn, scale] = range_scale();
  const int64_t zp = std::clamp<int64_t>(static_cast<int64_t>(std::nearbyint(quotient(-mn, scale))), 0, 255);
  auto out = run_module(std::move(m), {f32({kN}, x)});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(static_cast<float>(out[1].at_double(0)), scale);
  EXPECT_EQ(out[2].at_int(0) & 0xFF, zp);
  int64_t differ = 0;
  for (int64_t i = 0; i < kN; ++i) {
    const float q = quotient(x[static_cast<size_t>(i)], scale);
    const int64_t want = std::clamp<int64_t>(static_cast<int64_t>(std::nearbyint(q)) + zp, 0, 255);
    differ += (out[0].at_int(i) & 0xFF) != want;
  }
  EXPECT_EQ(differ, 0);
}

}  // namespace
}  // namespace weft
