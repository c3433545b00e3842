// Vulkan versus the reference backend: reductions, ARGMAX, TABLE, RESCALE, FFT2D / RFFT2D and the
// fused softmax and layer-normalization regions (src/backends/vulkan/ops_misc.cpp).
//
// Tolerances (vk_ops_util.h: |vulkan - reference| <= tol * max(1, max |reference|)):
//   exact (0)  integers, bool, REDUCE_MAX / REDUCE_MIN / ARGMAX of every type (also compared bit for
//              bit here: the sign of a zero, NaN positions), TABLE, RESCALE;
//   1e-4       fp32 REDUCE_SUM / REDUCE_PRODUCT (fp32 sums in another order) and layer norm (two
//              row sums and RSQRT in one pass versus the decomposed graph's fp32 steps);
//   1e-5       fp32 softmax (outputs <= 1; exp within a few ulp, one row sum in another order);
//   fp16       SUM: exact, on inputs whose partial sums are all exact in fp16 (the reference rounds
//              every partial sum to fp16, acc_t = fp16, the shader accumulates in fp32: on general
//              data the difference is the reference's own rounding error, about sqrt(K) fp16 ulps
//              of the largest partial sum); PRODUCT: 1e-3 * max(2, sqrt(K)) for the same reason
//              (every partial product rounded to fp16), on factors near 1; softmax: 2e-3 (the
//              decomposed graph rounds after every node);
//   DFT        2e-7 * (H + W) relative to the largest output: each output sums W then H fp32
//              products (the reference sums in double); seen: 5e-7 relative at 32x64.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../vk_ops_util.h"
#include "compiler/narrow.h"
#include "weft/graph.h"
#include "weft/runtime.h"

namespace weft::vk_test {
namespace {

struct ReduceCase {
  Shape shape;
  int64_t axis;
};

// Ranks 1..6, size-1 axes and dimensions, strided and contiguous axes (a workgroup per output from
// 32 elements: 45, 300, 1000), an axis longer than a workgroup (1000), and axes that need more than
// one pass (5000 contiguous, 1500 strided).
const std::vector<ReduceCase>& reduce_cases() {
  static const std::vector<ReduceCase> c = {
      {{7}, 0},         {{1}, 0},          {{3, 1}, 1},          {{4, 5}, 0},
      {{4, 5}, 1},      {{2, 3, 4}, 1},    {{2, 1, 3, 5}, 2},    {{1, 2, 3, 2, 3}, 4},
      {{2, 1, 2, 3, 1, 4}, 3}, {{40, 33}, 0}, {{2, 3, 45}, 2},   {{2, 300}, 1},
      {{3, 1000}, 1},   {{5000}, 0},       {{1500, 3}, 0},
  };
  return c;
}

TensorType tt(DType d, Shape s) { return {d, std::move(s)}; }

Module single(Op op, const std::vector<TensorType>& ins, Attrs attrs, std::vector<Tensor> consts = {}) {
  GraphBuilder b;
  std::vector<ValueId> args;
  for (size_t i = 0; i < ins.size(); ++i) args.push_back(b.input("x" + std::to_string(i), ins[i]));
  for (size_t i = 0; i < consts.size(); ++i) args.push_back(b.constant("c" + std::to_string(i), consts[i]));
  b.output(b.op(op, args, std::move(attrs)));
  return Module(b.finish());
}

// Runs `m` on both sides and compares every output byte for byte (NaN matches any NaN).
void check_bits(const Module& m, const std::vector<Tensor>& inputs) {
  auto a = Model::from_module(m, vulkan_first());
  auto b = Model::from_module(m, reference_only());
  int expect = 0;
  for (const Node& n : m.main().nodes()) expect += n.op != Op::CONST && n.op != Op::CONST_SHAPE;
  EXPECT_GE(vulkan_nodes(a->explain()), expect) << a->explain();
  Context ca(a), cb(b);
  auto oa = ca.run(inputs);
  auto ob = cb.run(inputs);
  ASSERT_EQ(oa.size(), ob.size());
  for (size_t o = 0; o < oa.size(); ++o) {
    ASSERT_EQ(oa[o].type(), ob[o].type());
    const bool flt = is_float(ob[o].dtype());
    const size_t w = storage_size(ob[o].dtype());
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < ob[o].num_elements(); ++i) {
      if (flt && std::isnan(oa[o].at_double(i)) && std::isnan(ob[o].at_double(i))) continue;
      if (std::memcmp(oa[o].bytes() + i * w, ob[o].bytes() + i * w, w) != 0) {
        if (first < 0) first = i;
        ++bad;
      }
    }
    EXPECT_EQ(bad, 0) << "output " << o << ": first difference at " << first << ": vulkan "
                      << oa[o].at_double(first < 0 ? 0 : first) << " reference "
                      << ob[o].at_double(first < 0 ? 0 : first);
  }
}

// Floats drawn from values with ties (+-0, small integers), infinities and NaN (probability
// p_nan), and uniform values.
Tensor special_floats(const TensorType& t, std::mt19937& rng, double p_nan) {
  const double inf = std::numeric_limits<double>::infinity();
  const double pool[] = {-0.0, 0.0, 1.0, -1.0, 2.0, -2.0, inf, -inf};
  std::uniform_real_distribution<double> u(0, 1), val(-3, 3);
  std::uniform_int_distribution<int> pick(0, 7);
  std::vector<double> v(static_cast<size_t>(t.num_elements()));
  for (double& x : v) {
    const double r = u(rng);
    if (r < p_nan) x = std::numeric_limits<double>::quiet_NaN();
    else if (r < 0.4) x = pool[pick(rng)];
    else x = val(rng);
  }
  return Tensor::from_doubles(t, v);
}

Tensor bools(const TensorType& t, std::mt19937& rng, double p_true) {
  std::bernoulli_distribution d(p_true);
  std::vector<int64_t> v(static_cast<size_t>(t.num_elements()));
  for (int64_t& x : v) x = d(rng) ? 1 : 0;
  return Tensor::from_ints(t, v);
}

std::string trace(const ReduceCase& c) { return shape_str(c.shape) + " axis " + std::to_string(c.axis); }

// ---- Reductions ----------------------------------------------------------------------------------

TEST(VulkanMisc, ReduceAllAny) {
  std::mt19937 rng(100);
  for (Op op : {Op::REDUCE_ALL, Op::REDUCE_ANY})
    for (const ReduceCase& c : reduce_cases()) {
      const int64_t k = c.shape[static_cast<size_t>(c.axis)];
      // Probabilities that give both results along this axis.
      const double p = op == Op::REDUCE_ALL ? 1.0 - 0.7 / static_cast<double>(k) : 0.7 / static_cast<double>(k);
      SCOPED_TRACE(std::string(op_name(op)) + " " + trace(c));
      const TensorType t = tt(DType::kBool, c.shape);
      check_vs_reference(single(op, {t}, {{"axis", c.axis}}), {bools(t, rng, p)}, 0.0);
    }
}

TEST(VulkanMisc, ReduceMaxMinIntegers) {
  std::mt19937 rng(200);
  for (Op op : {Op::REDUCE_MAX, Op::REDUCE_MIN})
    for (DType d : {DType::kInt8, DType::kInt16, DType::kInt32})
      for (const ReduceCase& c : reduce_cases()) {
        SCOPED_TRACE(std::string(op_name(op)) + " " + dtype_name(d) + " " + trace(c));
        const TensorType t = tt(d, c.shape);
        check_bits(single(op, {t}, {{"axis", c.axis}}), {random_tensor(t, rng, -1e18, 1e18)});
      }
}

TEST(VulkanMisc, ReduceMaxMinFloatNanModes) {
  std::mt19937 rng(300);
  for (Op op : {Op::REDUCE_MAX, Op::REDUCE_MIN})
    for (DType d : {DType::kFp16, DType::kFp32})
      for (NanMode mode : {NanMode::kPropagate, NanMode::kIgnore})
        for (const ReduceCase& c : reduce_cases()) {
          SCOPED_TRACE(std::string(op_name(op)) + " " + dtype_name(d) + (mode == NanMode::kIgnore ? " IGNORE " : " PROPAGATE ") +
                       trace(c));
          const TensorType t = tt(d, c.shape);
          const int64_t k = c.shape[static_cast<size_t>(c.axis)];
          const double p_nan = k <= 8 ? 0.2 : 0.5 / static_cast<double>(k);
          check_bits(single(op, {t}, {{"axis", c.axis}, {"nan_mode", static_cast<int64_t>(mode)}}),
                     {special_floats(t, rng, p_nan)});
        }
}

TEST(VulkanMisc, ReduceSum) {
  std::mt19937 rng(400);
  for (DType d : {DType::kInt32, DType::kFp16, DType::kFp32})
    for (const ReduceCase& c : reduce_cases()) {
      SCOPED_TRACE(std::string(dtype_name(d)) + " " + trace(c));
      const TensorType t = tt(d, c.shape);
      Tensor x;
      if (d == DType::kInt32) {
        // +-100000 over at most 5000 elements stays within int32 (TOSA REQUIREs no overflow).
        x = random_tensor(t, rng, -100000, 100000);
      } else if (d == DType::kFp16) {
        // Multiples of 1/4 in [-1, 1]: every partial sum (far below 512) is exact in fp16, so the
        // reference's fp16 accumulation and the shader's fp32 one agree exactly in any order.
        std::uniform_int_distribution<int> q(-4, 4);
        std::vector<double> v(static_cast<size_t>(t.num_elements()));
        for (double& e : v) e = q(rng) / 4.0;
        x = Tensor::from_doubles(t, v);
      } else {
        x = random_tensor(t, rng);
      }
      check_vs_reference(single(Op::REDUCE_SUM, {t}, {{"axis", c.axis}}), {x}, d == DType::kFp32 ? 1e-4 : 0.0);
    }
}

TEST(VulkanMisc, ReduceProduct) {
  std::mt19937 rng(500);
  for (DType d : {DType::kFp16, DType::kFp32})
    for (const ReduceCase& c : reduce_cases()) {
      SCOPED_TRACE(std::string(dtype_name(d)) + " " + trace(c));
      const TensorType t = tt(d, c.shape);
      const double k = static_cast<double>(c.shape[static_cast<size_t>(c.axis)]);
      const double tol = d == DType::kFp16 ? 1e-3 * std::max(2.0, std::sqrt(k)) : 1e-4;
      // Short axes: signs and magnitudes around 1; long ones: factors near 1 (no under/overflow).
      const Tensor x = k <= 40 ? random_tensor(t, rng, -2, 2) : random_tensor(t, rng, 0.95, 1.05);
      check_vs_reference(single(Op::REDUCE_PRODUCT, {t}, {{"axis", c.axis}}), {x}, tol);
    }
}

TEST(VulkanMisc, Argmax) {
  std::mt19937 rng(600);
  for (DType d : {DType::kInt8, DType::kInt16, DType::kFp16, DType::kFp32})
    for (NanMode mode : {NanMode::kPropagate, NanMode::kIgnore}) {
      if (!is_float(d) && mode == NanMode::kIgnore) continue;
      for (const ReduceCase& c : reduce_cases()) {
        SCOPED_TRACE(std::string(dtype_name(d)) + (mode == NanMode::kIgnore ? " IGNORE " : " PROPAGATE ") + trace(c));
        const TensorType t = tt(d, c.shape);
        const int64_t k = c.shape[static_cast<size_t>(c.axis)];
        // Integers: a narrow range, so that the maximum repeats and the first index matters.
        const Tensor x = is_float(d) ? special_floats(t, rng, k <= 8 ? 0.2 : 0.5 / static_cast<double>(k))
                                     : random_tensor(t, rng, -20, 20);
        check_bits(single(Op::ARGMAX, {t}, {{"axis", c.axis}, {"nan_mode", static_cast<int64_t>(mode)}}), {x});
      }
    }
}

// ---- TABLE ----------------------------------------------------------------------------------------

TEST(VulkanMisc, TableInt8) {
  std::mt19937 rng(700);
  const TensorType tab_t = tt(DType::kInt8, {256});
  for (const Shape& s : std::vector<Shape>{{}, {1}, {300}, {2, 3, 5}, {1, 2, 1, 3, 2, 5}}) {
    SCOPED_TRACE(shape_str(s));
    const TensorType t = tt(DType::kInt8, s);
    check_vs_reference(single(Op::TABLE, {t}, {}, {random_tensor(tab_t, rng, -1e18, 1e18)}),
                       {random_tensor(t, rng, -1e18, 1e18)}, 0.0);
  }
  // A table that is a graph input (bound as a buffer instead of uploaded data).
  const TensorType t = tt(DType::kInt8, {4, 70});
  check_vs_reference(single(Op::TABLE, {t, tab_t}, {}),
                     {random_tensor(t, rng, -1e18, 1e18), random_tensor(tab_t, rng, -1e18, 1e18)}, 0.0);
}

TEST(VulkanMisc, TableInt16) {
  std::mt19937 rng(800);
  for (const Shape& s : std::vector<Shape>{{}, {5}, {3, 257}, {2, 1, 4, 3}}) {
    SCOPED_TRACE(shape_str(s));
    // A random walk: adjacent entries differ by less than 2^15 (the slope REQUIRE).
    std::uniform_int_distribution<int64_t> step(-3000, 3000);
    std::vector<int64_t> tab(513);
    int64_t v = 0;
    for (int64_t& e : tab) e = v = std::clamp<int64_t>(v + step(rng), -32768, 32767);
    const TensorType t = tt(DType::kInt16, s);
    check_vs_reference(single(Op::TABLE, {t}, {}, {Tensor::from_ints(tt(DType::kInt16, {513}), tab)}),
                       {random_tensor(t, rng, -1e18, 1e18)}, 0.0);
  }
}

TEST(VulkanMisc, TableInt16SlopeOutOfRangeIsDeclined) {
  std::vector<int64_t> tab(513, 0);
  tab[100] = 32767;
  tab[101] = -32768;  // slope -65535: the reference reports the REQUIRE
  const Module m = single(Op::TABLE, {tt(DType::kInt16, {4})}, {}, {Tensor::from_ints(tt(DType::kInt16, {513}), tab)});
  auto a = Model::from_module(m, vulkan_first());
  EXPECT_EQ(vulkan_nodes(a->explain()), 0) << a->explain();
  EXPECT_NE(a->explain().find("slope"), std::string::npos) << a->explain();
}

// ---- RESCALE --------------------------------------------------------------------------------------

struct RescaleCase {
  DType in, out;
  bool scale32, per_channel, in_u, out_u;
  RoundingMode rm;
};

TEST(VulkanMisc, Rescale) {
  using R = RoundingMode;
  const DType i8 = DType::kInt8, i16 = DType::kInt16, i32 = DType::kInt32, i48 = DType::kInt48;
  const std::vector<RescaleCase> cases = {
      {i8, i8, true, false, false, false, R::kSingle},   {i8, i8, true, true, false, false, R::kDouble},
      {i8, i16, true, true, false, false, R::kSingle},   {i8, i32, true, false, false, false, R::kDouble},
      {i16, i8, true, true, false, false, R::kSingle},   {i16, i16, true, false, false, false, R::kDouble},
      {i16, i32, true, true, false, false, R::kSingle},  {i32, i8, true, true, false, false, R::kDouble},
      {i32, i8, true, false, false, false, R::kSingle},  {i32, i16, true, true, false, false, R::kSingle},
      {i32, i32, true, false, false, false, R::kDouble}, {i32, i32, true, true, false, false, R::kInexact},
      {i48, i8, false, true, false, false, R::kSingle},  {i48, i16, false, false, false, false, R::kSingle},
      {i48, i32, false, true, false, false, R::kSingle}, {i8, i8, false, true, false, false, R::kSingle},
      {i16, i16, false, false, false, false, R::kSingle}, {i32, i8, false, true, false, false, R::kSingle},
      // Unsigned inputs and outputs (u8, u16 with zero point 32768).
      {i8, i8, true, false, true, false, R::kSingle},    {i8, i16, true, true, true, false, R::kDouble},
      {i16, i8, true, false, true, false, R::kSingle},   {i8, i8, true, true, false, true, R::kSingle},
      {i16, i16, true, false, false, true, R::kDouble},  {i16, i8, true, true, false, true, R::kSingle},
  };
  std::mt19937 rng(900);
  const Shape shape = {2, 3, 7};
  int index = 0;
  for (const RescaleCase& c : cases) {
    SCOPED_TRACE("case " + std::to_string(index++) + ": " + dtype_name(c.in) + (c.in_u ? "(u)" : "") + " -> " +
                 dtype_name(c.out) + (c.out_u ? "(u)" : "") + (c.scale32 ? " scale32" : " scale16") +
                 (c.per_channel ? " per-channel" : " per-tensor") + " rounding " + std::to_string(static_cast<int>(c.rm)));
    const int64_t nc = c.per_channel ? shape.back() : 1;
    // Input magnitude bits (after the zero point) and the shift range keeping the REQUIREs of
    // apply_scale_32 (|value| < 2^(shift-1)) and apply_scale_16 (result fits int32).
    const int in_bits = c.in == i8 ? 9 : c.in == i16 ? 17 : c.in == i32 ? 31 : 40;
    const int mul_bits = c.scale32 ? 31 : 15;
    std::uniform_int_distribution<int64_t> mult(int64_t{1} << (mul_bits - 2), (int64_t{1} << (mul_bits - 1)) - 1);
    // Outputs of about out-width +-3 bits: some clamp, most do not. DOUBLE_ROUND matters above 31.
    const int out_bits = c.out == i8 ? 8 : c.out == i16 ? 16 : 31;
    const int lo = std::max({2, in_bits + 1, in_bits + mul_bits - 1 - out_bits - 3});
    std::uniform_int_distribution<int64_t> sh(lo, std::min(62, lo + 8));
    std::vector<int64_t> m(static_cast<size_t>(nc)), s(static_cast<size_t>(nc));
    for (int64_t i = 0; i < nc; ++i) m[static_cast<size_t>(i)] = mult(rng), s[static_cast<size_t>(i)] = sh(rng);
    // Zero points as stored: unsigned ones by their bit pattern (u8 130 = -126, u16 32768 = -32768).
    int64_t izp = 0, ozp = 0;
    if (c.in == i8) izp = c.in_u ? 130 - 256 : -7;
    if (c.in == i16 && c.in_u) izp = -32768;
    if (c.out == i8) ozp = c.out_u ? 120 : 5;
    if (c.out == i16 && c.out_u) ozp = -32768;
    const TensorType t = tt(c.in, shape);
    const Tensor x = c.in == i48 ? random_tensor(t, rng, -1099511627776.0, 1099511627775.0) : random_tensor(t, rng, -1e18, 1e18);
    const Module mod = single(
        Op::RESCALE, {t},
        {{"scale32", c.scale32}, {"rounding_mode", static_cast<int64_t>(c.rm)}, {"per_channel", c.per_channel},
         {"input_unsigned", c.in_u}, {"output_unsigned", c.out_u}},
        {Tensor::from_ints(tt(c.scale32 ? i32 : i16, {nc}), m), Tensor::from_ints(tt(i8, {nc}), s),
         Tensor::from_ints(tt(c.in, {1}), std::vector<int64_t>{izp}), Tensor::from_ints(tt(c.out, {1}), std::vector<int64_t>{ozp})});
    check_vs_reference(mod, {x}, 0.0);
  }
}

// ---- FFT2D / RFFT2D -------------------------------------------------------------------------------

TEST(VulkanMisc, Fft2d) {
  std::mt19937 rng(1000);
  for (const Shape& s : std::vector<Shape>{{1, 1, 1}, {2, 4, 8}, {1, 16, 2}, {3, 8, 8}, {1, 32, 64}})
    for (bool inverse : {false, true}) {
      SCOPED_TRACE(shape_str(s) + (inverse ? " inverse" : ""));
      const TensorType t = tt(DType::kFp32, s);
      GraphBuilder b;
      ValueId xr = b.input("xr", t), xi = b.input("xi", t);
      auto outs = b.op_multi(Op::FFT2D, {xr, xi}, {{"inverse", inverse}}, {"yr", "yi"});
      b.output(outs[0]);
      b.output(outs[1]);
      check_vs_reference(Module(b.finish()), {random_tensor(t, rng), random_tensor(t, rng)},
                         2e-7 * static_cast<double>(s[1] + s[2]));
    }
}

TEST(VulkanMisc, Rfft2d) {
  std::mt19937 rng(1100);
  for (const Shape& s : std::vector<Shape>{{1, 1, 1}, {1, 1, 2}, {2, 4, 8}, {1, 8, 32}, {2, 64, 16}}) {
    SCOPED_TRACE(shape_str(s));
    const TensorType t = tt(DType::kFp32, s);
    GraphBuilder b;
    ValueId x = b.input("x", t);
    auto outs = b.op_multi(Op::RFFT2D, {x}, {}, {"yr", "yi"});
    b.output(outs[0]);
    b.output(outs[1]);
    check_vs_reference(Module(b.finish()), {random_tensor(t, rng)}, 2e-7 * static_cast<double>(s[1] + s[2]));
  }
}

// ---- Softmax and layer-norm regions ----------------------------------------------------------------

// As the ONNX frontend lowers Softmax: REDUCE_MAX -> SUB -> EXP -> REDUCE_SUM -> RECIPROCAL -> MUL.
Module softmax_module(DType d, const Shape& s, int64_t axis) {
  GraphBuilder b;
  ValueId x = b.input("x", tt(d, s));
  ValueId shift = b.constant("shift", Tensor::from_ints(tt(DType::kInt8, {1}), std::vector<int64_t>{0}));
  ValueId mx = b.op(Op::REDUCE_MAX, {x}, {{"axis", axis}});
  ValueId e = b.op(Op::EXP, {b.op(Op::SUB, {x, mx})});
  ValueId sum = b.op(Op::REDUCE_SUM, {e}, {{"axis", axis}});
  b.output(b.op(Op::MUL, {e, b.op(Op::RECIPROCAL, {sum}), shift}));
  return Module(b.finish());
}

TEST(VulkanMisc, SoftmaxRegion) {
  struct Case {
    DType d;
    Shape shape;
    int64_t axis;
  };
  // Last axis (the fast path, rows of 1 to 5000: cached in registers up to 4096) and other axes.
  const std::vector<Case> cases = {
      {DType::kFp32, {2, 3, 4, 17}, 3}, {DType::kFp32, {1, 4, 8, 128}, 3}, {DType::kFp32, {2, 5, 3, 4}, 1},
      {DType::kFp32, {6, 33}, 1},       {DType::kFp32, {3, 7, 2}, 0},      {DType::kFp32, {4, 1}, 1},
      {DType::kFp32, {2, 5000}, 1},     {DType::kFp32, {3, 768}, 1},       {DType::kFp16, {2, 3, 4, 17}, 3},
      {DType::kFp16, {2, 12, 64}, 2},   {DType::kFp16, {5, 3, 2}, 1},
      // Rows enough for several rows per workgroup, one subgroup each (mx_rownorm_sg: from 4096 rows
      // with lavapipe's subgroups of 8, 1024 with 32), the last workgroup partly past the end.
      {DType::kFp32, {2, 2100, 40}, 2}, {DType::kFp16, {4200, 17}, 1},
  };
  std::mt19937 rng(1200);
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(dtype_name(c.d)) + " " + shape_str(c.shape) + " axis " + std::to_string(c.axis));
    const std::string ex = check_vs_reference(softmax_module(c.d, c.shape, c.axis), {random_tensor(tt(c.d, c.shape), rng, -5, 5)},
                                              c.d == DType::kFp16 ? 2e-3 : 1e-5);
    EXPECT_NE(ex.find("SOFTMAX"), std::string::npos) << ex;
  }
}

TEST(VulkanMisc, SoftmaxRegionNanAndInfinity) {
  // A row with a NaN, one with +inf, one of -inf only, and a normal one: the decomposed graph gives
  // NaN rows for the first three, and so must the fused region.
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const TensorType t = tt(DType::kFp32, {4, 3});
  const Tensor x = Tensor::from_doubles(t, std::vector<double>{1, nan, 2, 0, inf, 1, -inf, -inf, -inf, 0.5, -1, 3});
  check_vs_reference(softmax_module(DType::kFp32, {4, 3}, 1), {x}, 1e-5);
}

// As the ONNX frontend lowers LogSoftmax: REDUCE_MAX -> d = SUB -> EXP -> REDUCE_SUM -> LOG -> SUB(d, .).
Module log_softmax_module(DType d, const Shape& s, int64_t axis) {
  GraphBuilder b;
  ValueId x = b.input("x", tt(d, s));
  ValueId diff = b.op(Op::SUB, {x, b.op(Op::REDUCE_MAX, {x}, {{"axis", axis}})});
  ValueId sum = b.op(Op::REDUCE_SUM, {b.op(Op::EXP, {diff})}, {{"axis", axis}});
  b.output(b.op(Op::SUB, {diff, b.op(Op::LOG, {sum})}));
  return Module(b.finish());
}

// One LOG_SOFTMAX dispatch (mx_rownorm MODE 3): rows cached in registers and reloaded, other axes,
// several rows per subgroup workgroup, fp16; rows with a NaN, +inf or only -inf are NaN as in the
// decomposed graph.
TEST(VulkanMisc, LogSoftmaxRegion) {
  struct Case {
    DType d;
    Shape shape;
    int64_t axis;
  };
  const std::vector<Case> cases = {
      {DType::kFp32, {2, 3, 4, 17}, 3}, {DType::kFp32, {2, 5, 3, 4}, 1}, {DType::kFp32, {3, 7, 2}, 0},
      {DType::kFp32, {2, 5000}, 1},     {DType::kFp32, {2, 2100, 40}, 2}, {DType::kFp16, {2, 12, 64}, 2},
      {DType::kFp16, {4200, 17}, 1},
  };
  std::mt19937 rng(1250);
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(dtype_name(c.d)) + " " + shape_str(c.shape) + " axis " + std::to_string(c.axis));
    const std::string ex = check_vs_reference(log_softmax_module(c.d, c.shape, c.axis),
                                              {random_tensor(tt(c.d, c.shape), rng, -5, 5)}, c.d == DType::kFp16 ? 2e-3 : 1e-6);
    EXPECT_NE(ex.find("LOG_SOFTMAX"), std::string::npos) << ex;
  }
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor x = Tensor::from_doubles(tt(DType::kFp32, {4, 3}), std::vector<double>{1, nan, 2, 0, inf, 1, -inf, -inf, -inf, 0.5, -1, 3});
  check_vs_reference(log_softmax_module(DType::kFp32, {4, 3}, 1), {x}, 1e-6);
}

// The common part of the row-norm graphs below: input x over `shape`, MUL with its shift, scalar
// constants of x's rank, and the per-channel affine tail [* gamma [+ beta]].
struct RowNormGraph {
  GraphBuilder b;
  Shape shape;
  int rank;
  ValueId x, shift;
  explicit RowNormGraph(const Shape& s) : shape(s), rank(static_cast<int>(s.size())) {
    x = b.input("x", tt(DType::kFp32, s));
    shift = b.constant("shift", Tensor::from_ints(tt(DType::kInt8, {1}), std::vector<int64_t>{0}));
  }
  ValueId scalar(const std::string& name, double v) {
    return b.constant(name, Tensor::from_doubles(tt(DType::kFp32, Shape(static_cast<size_t>(rank), 1)), std::vector<double>{v}));
  }
  ValueId mul(ValueId a, ValueId k) { return b.op(Op::MUL, {a, k, shift}); }
  ValueId sum_last(ValueId v) { return b.op(Op::REDUCE_SUM, {v}, {{"axis", int64_t{rank - 1}}}); }
  Module finish(ValueId y, bool gamma, bool beta, std::mt19937& rng) {
    Shape cs(static_cast<size_t>(rank), 1);
    cs.back() = shape.back();
    if (gamma) y = mul(y, b.constant("gamma", random_tensor(tt(DType::kFp32, cs), rng, 0.5, 1.5)));
    if (beta) y = b.op(Op::ADD, {y, b.constant("beta", random_tensor(tt(DType::kFp32, cs), rng))});
    b.output(y);
    return Module(b.finish());
  }
};

// As the ONNX frontend lowers LayerNormalization over the last axis.
Module layer_norm_module(const Shape& s, double eps, bool gamma, bool beta, std::mt19937& rng) {
  RowNormGraph n(s);
  const double inv_n = 1.0 / static_cast<double>(s.back());
  ValueId mean = n.mul(n.sum_last(n.x), n.scalar("inv_n", inv_n));
  ValueId d = n.b.op(Op::SUB, {n.x, mean});
  ValueId var = n.mul(n.sum_last(n.mul(d, d)), n.scalar("inv_n2", inv_n));
  return n.finish(n.mul(d, n.b.op(Op::RSQRT, {n.b.op(Op::ADD, {var, n.scalar("eps", eps)})})), gamma, beta, rng);
}

TEST(VulkanMisc, LayerNormRegion) {
  struct Case {
    Shape shape;
    double eps;
    bool gamma, beta;
  };
  const std::vector<Case> cases = {
      {{2, 5, 16}, 1e-5, true, true},   {{1, 2, 3, 24}, 1e-6, true, true}, {{4, 7}, 1e-5, true, false},
      {{3, 9, 10}, 1e-3, false, false}, {{1, 8, 768}, 1e-12, true, true}, {{2, 5000}, 1e-5, true, true},
      {{3, 1}, 1e-5, true, true},       {{4200, 24}, 1e-5, true, true}, {{2, 2050, 96}, 1e-6, true, false},
  };
  std::mt19937 rng(1300);
  for (const Case& c : cases) {
    SCOPED_TRACE(shape_str(c.shape) + " eps " + std::to_string(c.eps) + (c.gamma ? " gamma" : "") + (c.beta ? " beta" : ""));
    const Module m = layer_norm_module(c.shape, c.eps, c.gamma, c.beta, rng);
    const std::string ex = check_vs_reference(m, {random_tensor(tt(DType::kFp32, c.shape), rng, -3, 5)}, 1e-4);
    EXPECT_NE(ex.find("LAYER_NORM"), std::string::npos) << ex;
  }
}

// x * x summed over the last axis, then RMS norm as T5 and LLaMA export it, x * rsqrt(mean + 1e-6),
// or (l2) F.normalize as the ONNX import writes it, x * 1 / max(sqrt(sum), 1e-12); then
// [* gamma [+ beta]], constants per channel.
Module row_norm_module(const Shape& shape, bool l2, bool gamma, bool beta, std::mt19937& rng) {
  RowNormGraph n(shape);
  ValueId sum = n.sum_last(n.mul(n.x, n.x));
  ValueId y;
  if (l2) {
    ValueId guarded = n.b.op(Op::CLAMP, {n.b.op(Op::POW, {sum, n.scalar("half", 0.5)})},
                             {{"min_val", Tensor::from_doubles(tt(DType::kFp32, {}), std::vector<double>{1e-12})},
                              {"max_val", Tensor::from_doubles(tt(DType::kFp32, {}), std::vector<double>{INFINITY})}});
    y = n.mul(n.x, n.b.op(Op::RECIPROCAL, {guarded}));
  } else {
    ValueId ms = n.mul(sum, n.scalar("inv_n", 1.0 / static_cast<double>(shape.back())));
    y = n.mul(n.x, n.b.op(Op::RSQRT, {n.b.op(Op::ADD, {ms, n.scalar("eps", 1e-6)})}));
  }
  return n.finish(y, gamma, beta, rng);
}

struct RowNormCase {
  Shape shape;
  bool gamma, beta, fp16;
};

// Runs each case of row_norm_module(l2) in fp32 or narrowed to fp16 against the reference and
// expects one `unit`. With `zero_row`, the input's first row is all zeros.
void check_row_norms(const std::vector<RowNormCase>& cases, bool l2, const char* unit, uint32_t seed, bool zero_row) {
  std::mt19937 rng(seed);
  for (const RowNormCase& c : cases) {
    SCOPED_TRACE(shape_str(c.shape) + (c.gamma ? " gamma" : "") + (c.beta ? " beta" : "") + (c.fp16 ? " fp16" : ""));
    Module m = row_norm_module(c.shape, l2, c.gamma, c.beta, rng);
    if (c.fp16) compiler::narrow_fp32_to_fp16(m, compiler::Narrowing::kFull);
    const DType t = c.fp16 ? DType::kFp16 : DType::kFp32;
    Tensor in = random_tensor(tt(t, c.shape), rng, -3, 5);
    if (zero_row) std::memset(in.mutable_bytes(), 0, static_cast<size_t>(c.shape.back()) * storage_size(t));
    const std::string ex = check_vs_reference(m, {in}, c.fp16 ? 3e-2 : 1e-4);
    EXPECT_NE(ex.find(unit), std::string::npos) << ex;
  }
}

// RMS norm in fp32 and narrowed to fp16: one RMS_NORM dispatch (mx_rownorm MODE 2, the cached and
// the reloading rows, the subgroup rows), against the reference's operator-by-operator result.
TEST(VulkanMisc, RmsNormRegion) {
  check_row_norms({{{2, 5, 16}, true, false, false},
                   {{1, 3, 4, 20}, true, true, false},
                   {{3, 9, 13}, false, false, false},
                   {{2, 5000}, true, false, false},
                   {{4200, 24}, true, false, false},
                   {{1, 8, 768}, true, false, true}},
                  false, "RMS_NORM", 1310, false);
}

// F.normalize(x, dim=-1) in fp32 and narrowed to fp16 (eps = 1e-12 becomes 2^-14 there): one
// L2_NORM dispatch (mx_rownorm MODE 4, the same row forms), a row of zeros 0 as in the graph.
TEST(VulkanMisc, L2NormRegion) {
  check_row_norms({{{2, 5, 16}, false, false, false},
                   {{1, 3, 4, 20}, true, true, false},
                   {{2, 5000}, true, false, false},
                   {{4200, 24}, false, false, false},
                   {{49, 3, 64, 32}, false, false, true}},
                  true, "L2_NORM", 1320, true);
}

// The same regions narrowed to fp16 (the runtime's reduced-precision mode, compiler/narrow.h): the
// matcher takes constants rounded to fp16 (1/768 is not one), and the region, computed in fp32 and
// rounded once, stays within fp16's rounding of the reference, which rounds after every operator.
TEST(VulkanMisc, LayerNormRegionInFp16) {
  std::mt19937 rng(1301);
  for (const Shape& shape : {Shape{1, 8, 768}, Shape{2, 5, 16}}) {
    SCOPED_TRACE(shape_str(shape));
    Module m = layer_norm_module(shape, 1e-5, true, true, rng);
    compiler::narrow_fp32_to_fp16(m, compiler::Narrowing::kFull);
    const std::string ex = check_vs_reference(m, {random_tensor(tt(DType::kFp16, shape), rng, -3, 5)}, 3e-2);
    EXPECT_NE(ex.find("LAYER_NORM"), std::string::npos) << ex;
  }
}

}  // namespace
}  // namespace weft::vk_test
