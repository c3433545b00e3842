// AVG_POOL2D, MAX_POOL2D and ARGMAX: hand-computed cases (integer rounding of the average, NaN
// modes, signed zeros, ties), every type row against loops written from the pseudocode, failures.
#include <cmath>
#include <limits>

#include "reference/tensor/tensor_test_util.h"

namespace weft::testing {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

Attrs pool_attrs(std::vector<int64_t> kernel, std::vector<int64_t> stride, std::vector<int64_t> pad) {
  return {{"kernel", std::move(kernel)}, {"stride", std::move(stride)}, {"pad", std::move(pad)}};
}
Attrs avg_attrs(std::vector<int64_t> kernel, std::vector<int64_t> stride, std::vector<int64_t> pad,
                DType acc) {
  Attrs a = pool_attrs(std::move(kernel), std::move(stride), std::move(pad));
  a.push_back({"acc_type", static_cast<int64_t>(acc_enum(acc))});
  return a;
}
Attrs with_nan(Attrs a, NanMode m) {
  a.push_back({"nan_mode", static_cast<int64_t>(m)});
  return a;
}

// ---- Test-side copies of the scale helpers, written from scale_helpers.tosac ----
int64_t oracle_apply_scale_32(int64_t value, int64_t multiplier, int64_t shift) {
  int64_t round = int64_t{1} << (shift - 1);
  int64_t result = value * multiplier + round;
  return result >> shift;
}
void oracle_reciprocal_scale(int64_t value, int64_t& multiplier, int64_t& shift) {
  int64_t clz = 0;
  for (int64_t bit = 31; bit >= 0 && !(((value - 1) >> bit) & 1); --bit) ++clz;
  int64_t k = 32 - clz;
  int64_t numerator = ((int64_t{1} << 30) + 1) << k;
  multiplier = numerator / value;
  shift = 30 + k;
}

Tensor oracle_avg_pool(const Tensor& in, int64_t izp, int64_t ozp, const std::vector<int64_t>& k,
                       const std::vector<int64_t>& s, const std::vector<int64_t>& p, DType acc_t) {
  const DType t = in.dtype();
  const int64_t N = in.shape()[0], IH = in.shape()[1], IW = in.shape()[2], C = in.shape()[3];
  const int64_t OH = (IH + p[0] + p[1] - k[0]) / s[0] + 1, OW = (IW + p[2] + p[3] - k[1]) / s[1] + 1;
  OracleAcc A{acc_t};
  std::vector<double> out;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox)
        for (int64_t c = 0; c < C; ++c) {
          double acc = 0;
          int64_t count = 0;
          for (int64_t ky = 0; ky < k[0]; ++ky)
            for (int64_t kx = 0; kx < k[1]; ++kx) {
              int64_t y = oy * s[0] - p[0] + ky, x = ox * s[1] - p[2] + kx;
              if (0 <= y && y < IH && 0 <= x && x < IW) {
                ++count;
                acc = A.add(acc, in.at_double(((n * IH + y) * IW + x) * C + c) - static_cast<double>(izp));
              }
            }
          if (is_float(t)) {
            float divisor = round_to(t, static_cast<float>(count));
            out.push_back(round_to(t, round_to(acc_t, static_cast<float>(acc / divisor))));
          } else {
            int64_t m, sh;
            oracle_reciprocal_scale(count, m, sh);
            int64_t v = oracle_apply_scale_32(static_cast<int64_t>(acc), m, sh) + ozp;
            out.push_back(static_cast<double>(std::min(std::max(v, int_min(t)), int_max(t))));
          }
        }
  return from_values(t, {N, OH, OW, C}, out);
}

double oracle_max_s(double a, double b, NanMode mode) {
  if (std::isnan(a) || std::isnan(b)) return mode == NanMode::kPropagate ? kNaN : (std::isnan(a) ? b : a);
  return a >= b ? a : b;
}

double type_minimum(DType t) {
  if (is_float(t)) return t == DType::kFp8E4M3 ? -448.0 : -kInf;
  return static_cast<double>(int_min(t));
}

Tensor oracle_max_pool(const Tensor& in, const std::vector<int64_t>& k, const std::vector<int64_t>& s,
                       const std::vector<int64_t>& p, NanMode mode) {
  const DType t = in.dtype();
  const int64_t N = in.shape()[0], IH = in.shape()[1], IW = in.shape()[2], C = in.shape()[3];
  const int64_t OH = (IH + p[0] + p[1] - k[0]) / s[0] + 1, OW = (IW + p[2] + p[3] - k[1]) / s[1] + 1;
  std::vector<double> out;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox)
        for (int64_t c = 0; c < C; ++c) {
          double acc = (is_float(t) && mode == NanMode::kIgnore) ? kNaN : type_minimum(t);
          for (int64_t ky = 0; ky < k[0]; ++ky)
            for (int64_t kx = 0; kx < k[1]; ++kx) {
              int64_t y = oy * s[0] - p[0] + ky, x = ox * s[1] - p[2] + kx;
              if (y >= 0 && y < IH && x >= 0 && x < IW) {
                acc = oracle_max_s(acc, in.at_double(((n * IH + y) * IW + x) * C + c), mode);
              }
            }
          out.push_back(acc);
        }
  return from_values(t, {N, OH, OW, C}, out);
}

// ---- AVG_POOL2D ----

TEST(AvgPool2d, HandComputedInt8Rounding) {
  // One 2x2 window: sums 10 and -10 over count 4. reciprocal_scale(4) = (1073741825, 32):
  // (10 * 1073741825 + 2^31) >> 32 = 3 (2.5 rounds up) and (-10 * 1073741825 + 2^31) >> 32 = -3
  // (the multiplier is slightly above 2^30, so -2.5 rounds down).
  Tensor in = I(DType::kInt8, {1, 2, 2, 2}, {1, -1, 2, -2, 3, -3, 4, -4});
  Tensor z = scalar1(DType::kInt8, 0);
  Tensor out = run_t(Op::AVG_POOL2D, {in, z, z}, avg_attrs({2, 2}, {1, 1}, {0, 0, 0, 0}, DType::kInt32),
                     {DType::kInt8, {1, 1, 1, 2}});
  expect_tensor_eq(out, I(DType::kInt8, {1, 1, 1, 2}, {3, -3}));
}

TEST(AvgPool2d, HandComputedPaddingCountsOnlyInputs) {
  // 1x1x3x1 = [1, 2, 4] (+ input_zp 0), kernel 1x3, pad 1 left/right, stride 1: windows
  // [pad,1,2] -> 3/2, [1,2,4] -> 7/3, [2,4,pad] -> 6/2. reciprocal_scale(2) = (1073741825, 31),
  // reciprocal_scale(3) = (1431655766, 32): 3/2 -> 2, 7/3 -> 2, 6/2 -> 3. output_zp 120 then
  // clips: 122, 122, 123 -> 122, 122, 123 (within int8); with output_zp 126 -> 127, 127, 127 clip.
  Tensor in = I(DType::kInt8, {1, 1, 3, 1}, {1, 2, 4});
  Tensor z = scalar1(DType::kInt8, 0);
  Attrs a = avg_attrs({1, 3}, {1, 1}, {0, 0, 1, 1}, DType::kInt32);
  expect_tensor_eq(
      run_t(Op::AVG_POOL2D, {in, z, scalar1(DType::kInt8, 120)}, a, {DType::kInt8, {1, 1, 3, 1}}),
      I(DType::kInt8, {1, 1, 3, 1}, {122, 122, 123}));
  expect_tensor_eq(
      run_t(Op::AVG_POOL2D, {in, z, scalar1(DType::kInt8, 126)}, a, {DType::kInt8, {1, 1, 3, 1}}),
      I(DType::kInt8, {1, 1, 3, 1}, {127, 127, 127}));
}

TEST(AvgPool2d, HandComputedInputZeroPoint) {
  // [10, 14] - 10 = [0, 4] -> 2; output_zp -5 -> -3.
  Tensor in = I(DType::kInt8, {1, 1, 2, 1}, {10, 14});
  Tensor out = run_t(Op::AVG_POOL2D, {in, scalar1(DType::kInt8, 10), scalar1(DType::kInt8, -5)},
                     avg_attrs({1, 2}, {1, 1}, {0, 0, 0, 0}, DType::kInt32), {DType::kInt8, {1, 1, 1, 1}});
  expect_tensor_eq(out, I(DType::kInt8, {1, 1, 1, 1}, {-3}));
}

TEST(AvgPool2d, Fp16AccumulateVersusFp32) {
  // [2048, 1, 1, 0]: fp16 accumulate keeps 2048 (ties to even) -> 512; fp32 accumulate 2050 / 4 = 512.5.
  Tensor in = T(DType::kFp16, {1, 1, 4, 1}, {2048, 1, 1, 0});
  Tensor z = T(DType::kFp16, {1}, {0});
  expect_tensor_eq(run_t(Op::AVG_POOL2D, {in, z, z}, avg_attrs({1, 4}, {1, 1}, {0, 0, 0, 0}, DType::kFp16),
                         {DType::kFp16, {1, 1, 1, 1}}),
                   T(DType::kFp16, {1, 1, 1, 1}, {512}));
  expect_tensor_eq(run_t(Op::AVG_POOL2D, {in, z, z}, avg_attrs({1, 4}, {1, 1}, {0, 0, 0, 0}, DType::kFp32),
                         {DType::kFp16, {1, 1, 1, 1}}),
                   T(DType::kFp16, {1, 1, 1, 1}, {512.5}));
}

TEST(AvgPool2d, Fp8DivisorIsCastToInputType) {
  // static_cast<fp8e4m3>(17) = 16 (ties to even). Sixteen 1s and one 3: acc = 19 (fp16 exact);
  // 19 / 16 = 1.1875, a tie between 1.125 and 1.25 in fp8e4m3 -> 1.25.
  std::vector<double> v(17, 1.0);
  v[8] = 3.0;
  Tensor in = T(DType::kFp8E4M3, {1, 1, 17, 1}, v);
  Tensor z = T(DType::kFp8E4M3, {1}, {0});
  expect_tensor_eq(run_t(Op::AVG_POOL2D, {in, z, z}, avg_attrs({1, 17}, {1, 1}, {0, 0, 0, 0}, DType::kFp16),
                         {DType::kFp8E4M3, {1, 1, 1, 1}}),
                   T(DType::kFp8E4M3, {1, 1, 1, 1}, {1.25}));
}

TEST(AvgPool2d, EveryTypeRowMatchesOracle) {
  struct Row {
    DType t, acc;
  };
  const Row rows[] = {{DType::kInt8, DType::kInt32},   {DType::kInt16, DType::kInt32},
                      {DType::kFp8E4M3, DType::kFp16}, {DType::kFp8E5M2, DType::kFp16},
                      {DType::kFp16, DType::kFp16},    {DType::kFp16, DType::kFp32},
                      {DType::kBf16, DType::kFp32},    {DType::kFp32, DType::kFp32}};
  std::mt19937 rng(41);
  for (const Row& r : rows) {
    SCOPED_TRACE(std::string(dtype_name(r.t)) + " acc " + dtype_name(r.acc));
    Tensor in = random_tensor(rng, r.t, {2, 7, 9, 3});
    const int64_t izp = r.t == DType::kInt8 ? -7 : 0, ozp = r.t == DType::kInt8 ? 9 : 0;
    for (auto [k, s, p] :
         std::vector<std::tuple<std::vector<int64_t>, std::vector<int64_t>, std::vector<int64_t>>>{
             {{3, 3}, {2, 2}, {1, 1, 1, 1}},
             {{2, 3}, {1, 2}, {0, 1, 2, 0}},
             {{7, 9}, {1, 1}, {0, 0, 0, 0}}}) {
      Tensor want = oracle_avg_pool(in, izp, ozp, k, s, p, r.acc);
      std::vector<Tensor> ops = {in, scalar1(r.t, izp), scalar1(r.t, ozp)};
      Tensor one = run_t(Op::AVG_POOL2D, ops, avg_attrs(k, s, p, r.acc), want.type(), 1);
      expect_tensor_eq(one, want);
      EXPECT_TRUE(one.identical(run_t(Op::AVG_POOL2D, ops, avg_attrs(k, s, p, r.acc), want.type(), 3)));
    }
  }
}

TEST(AvgPool2d, Rejects) {
  Tensor in = F32({1, 2, 2, 1}, {1, 2, 3, 4});
  Tensor z = F32({1}, {0});
  // pad >= kernel, output shape mismatch, non-zero float zero point, wrong accumulator.
  EXPECT_THROW(run_t(Op::AVG_POOL2D, {in, z, z}, avg_attrs({2, 2}, {1, 1}, {2, 0, 0, 0}, DType::kFp32),
                     {DType::kFp32, {1, 3, 1, 1}}),
               Error);
  EXPECT_THROW(run_t(Op::AVG_POOL2D, {in, z, z}, avg_attrs({2, 2}, {1, 1}, {0, 0, 0, 0}, DType::kFp32),
                     {DType::kFp32, {1, 2, 1, 1}}),
               Error);
  EXPECT_THROW(run_t(Op::AVG_POOL2D, {in, F32({1}, {1}), z},
                     avg_attrs({2, 2}, {1, 1}, {0, 0, 0, 0}, DType::kFp32), {DType::kFp32, {1, 1, 1, 1}}),
               Error);
  EXPECT_THROW(run_t(Op::AVG_POOL2D, {in, z, z}, avg_attrs({2, 2}, {1, 1}, {0, 0, 0, 0}, DType::kInt32),
                     {DType::kFp32, {1, 1, 1, 1}}),
               Error);
  Tensor i16 = I(DType::kInt16, {1, 1, 1, 1}, {5});
  EXPECT_THROW(run_t(Op::AVG_POOL2D, {i16, scalar1(DType::kInt16, 1), scalar1(DType::kInt16, 0)},
                     avg_attrs({1, 1}, {1, 1}, {0, 0, 0, 0}, DType::kInt32), {DType::kInt16, {1, 1, 1, 1}}),
               Error);
}

// ---- MAX_POOL2D ----

TEST(MaxPool2d, HandComputedNanModes) {
  // Channels: c0 = [1, NaN, 3], c1 = [NaN, NaN, NaN] over a 1x3 window.
  Tensor in = F32({1, 1, 3, 2}, {1, kNaN, kNaN, kNaN, 3, kNaN});
  Attrs a = pool_attrs({1, 3}, {1, 1}, {0, 0, 0, 0});
  expect_tensor_eq(
      run_t(Op::MAX_POOL2D, {in}, with_nan(a, NanMode::kPropagate), {DType::kFp32, {1, 1, 1, 2}}),
      F32({1, 1, 1, 2}, {kNaN, kNaN}));
  expect_tensor_eq(run_t(Op::MAX_POOL2D, {in}, with_nan(a, NanMode::kIgnore), {DType::kFp32, {1, 1, 1, 2}}),
                   F32({1, 1, 1, 2}, {3, kNaN}));
}

TEST(MaxPool2d, HandComputedSignedZeroKeepsFirst) {
  // apply_max_s(acc, value) keeps acc when acc >= value: [-0, +0] -> -0 and [+0, -0] -> +0.
  Tensor in = F32({1, 1, 2, 2}, {-0.0, 0.0, 0.0, -0.0});
  expect_tensor_eq(
      run_t(Op::MAX_POOL2D, {in}, pool_attrs({1, 2}, {1, 1}, {0, 0, 0, 0}), {DType::kFp32, {1, 1, 1, 2}}),
      F32({1, 1, 1, 2}, {-0.0, 0.0}));
}

TEST(MaxPool2d, HandComputedInt8PaddingIgnored) {
  // All values negative; padding does not contribute a 0.  1x2x2x1 = [-5, -3; -9, -7], kernel 2x2,
  // pad 1 bottom/right, stride 1: windows {-5,-3,-9,-7} -> -3, {-3,-7} -> -3, {-9,-7} -> -7, {-7} -> -7.
  Tensor in = I(DType::kInt8, {1, 2, 2, 1}, {-5, -3, -9, -7});
  expect_tensor_eq(
      run_t(Op::MAX_POOL2D, {in}, pool_attrs({2, 2}, {1, 1}, {0, 1, 0, 1}), {DType::kInt8, {1, 2, 2, 1}}),
      I(DType::kInt8, {1, 2, 2, 1}, {-3, -3, -7, -7}));
}

TEST(MaxPool2d, EveryTypeMatchesOracle) {
  std::mt19937 rng(42);
  for (DType t : {DType::kInt8, DType::kInt16, DType::kFp8E4M3, DType::kFp8E5M2, DType::kFp16, DType::kBf16,
                  DType::kFp32}) {
    for (NanMode mode : {NanMode::kPropagate, NanMode::kIgnore}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + (mode == NanMode::kIgnore ? " ignore" : " propagate"));
      Tensor in = random_tensor(rng, t, {2, 9, 6, 3});
      if (is_float(t)) {
        std::vector<double> v = in.to_doubles();
        for (size_t i = 0; i < v.size(); i += 7) v[i] = kNaN;
        v[5] = kInf;
        v[11] = -kInf;
        in = T(t, in.shape(), v);
      }
      std::vector<int64_t> k{3, 2}, s{2, 1}, p{1, 1, 1, 0};
      Tensor want = oracle_max_pool(in, k, s, p, mode);
      Tensor one = run_t(Op::MAX_POOL2D, {in}, with_nan(pool_attrs(k, s, p), mode), want.type(), 1);
      expect_tensor_eq(one, want);
      EXPECT_TRUE(
          one.identical(run_t(Op::MAX_POOL2D, {in}, with_nan(pool_attrs(k, s, p), mode), want.type(), 3)));
    }
  }
}

TEST(MaxPool2d, Rejects) {
  Tensor in = F32({1, 2, 2, 1}, {1, 2, 3, 4});
  EXPECT_THROW(
      run_t(Op::MAX_POOL2D, {in}, pool_attrs({2, 2}, {1, 1}, {0, 0, 0, 0}), {DType::kFp32, {1, 2, 2, 1}}),
      Error);
  EXPECT_THROW(
      run_t(Op::MAX_POOL2D, {in}, pool_attrs({0, 2}, {1, 1}, {0, 0, 0, 0}), {DType::kFp32, {1, 1, 1, 1}}),
      Error);
  EXPECT_THROW(
      run_t(Op::MAX_POOL2D, {in}, pool_attrs({2, 2}, {1, 1}, {0, 0, 0, 0}), {DType::kFp16, {1, 1, 1, 1}}),
      Error);
  EXPECT_THROW(run_t(Op::MAX_POOL2D, {I(DType::kInt32, {1, 1, 1, 1}, {1})},
                     pool_attrs({1, 1}, {1, 1}, {0, 0, 0, 0}), {DType::kInt32, {1, 1, 1, 1}}),
               Error);
}

// ---- ARGMAX ----

Tensor oracle_argmax(const Tensor& in, int64_t axis, NanMode mode) {
  const Shape& s = in.shape();
  int64_t outer = 1, inner = 1, len = s[static_cast<size_t>(axis)];
  for (int64_t i = 0; i < axis; ++i) outer *= s[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < s.size(); ++i) inner *= s[i];
  Shape os;
  for (size_t i = 0; i < s.size(); ++i) {
    if (static_cast<int64_t>(i) != axis) os.push_back(s[i]);
  }
  std::vector<int64_t> out;
  for (int64_t l = 0; l < outer; ++l)
    for (int64_t r = 0; r < inner; ++r) {
      double max_value = (is_float(in.dtype()) && mode == NanMode::kIgnore) ? kNaN : type_minimum(in.dtype());
      int64_t max_index = 0;
      for (int64_t i = 0; i < len; ++i) {
        double value = in.at_double((l * len + i) * inner + r);
        double result = oracle_max_s(value, max_value, mode);
        if (result != max_value && !(std::isnan(result) && std::isnan(max_value))) {
          max_value = result;
          max_index = i;
        }
      }
      out.push_back(max_index);
    }
  return Tensor::from_ints({DType::kInt32, os}, out);
}

Attrs argmax_attrs(int64_t axis, NanMode m) {
  return {{"axis", axis}, {"nan_mode", static_cast<int64_t>(m)}};
}

TEST(Argmax, HandComputedTiesAndNans) {
  // Rows: [1, 3, 3] -> 1 (first of ties); [1, NaN, 5, NaN] style rows in the float cases below.
  expect_tensor_eq(run_t(Op::ARGMAX, {I(DType::kInt8, {1, 3}, {1, 3, 3})},
                         argmax_attrs(1, NanMode::kPropagate), {DType::kInt32, {1}}),
                   I(DType::kInt32, {1}, {1}));
  // Every value equal to the type minimum: index 0.
  expect_tensor_eq(run_t(Op::ARGMAX, {I(DType::kInt16, {3}, {-32768, -32768, -32768})},
                         argmax_attrs(0, NanMode::kPropagate), {DType::kInt32, {}}),
                   I(DType::kInt32, {}, {0}));
  Tensor f = F32({4, 4}, {1, kNaN, 5, kNaN,           // propagate -> 1 (first NaN), ignore -> 2
                          kNaN, kNaN, kNaN, kNaN,     // propagate -> 0, ignore -> 0
                          -0.0, 0.0, -1, -0.0,        // signed zeros are equal: 0 in both modes
                          -kInf, -kInf, -kInf, -5});  // -inf equals the start value: 3 in both modes
  expect_tensor_eq(run_t(Op::ARGMAX, {f}, argmax_attrs(1, NanMode::kPropagate), {DType::kInt32, {4}}),
                   I(DType::kInt32, {4}, {1, 0, 0, 3}));
  expect_tensor_eq(run_t(Op::ARGMAX, {f}, argmax_attrs(1, NanMode::kIgnore), {DType::kInt32, {4}}),
                   I(DType::kInt32, {4}, {2, 0, 0, 3}));
}

TEST(Argmax, EveryTypeAndAxisMatchesOracle) {
  std::mt19937 rng(43);
  for (DType t : {DType::kInt8, DType::kInt16, DType::kFp8E4M3, DType::kFp8E5M2, DType::kFp16, DType::kBf16,
                  DType::kFp32}) {
    Tensor in = random_tensor(rng, t, {3, 5, 4}, 4.0, -3, 3);  // narrow ranges make ties common
    if (is_float(t)) {
      std::vector<double> v = in.to_doubles();
      for (size_t i = 3; i < v.size(); i += 9) v[i] = kNaN;
      in = T(t, in.shape(), v);
    }
    for (int64_t axis = 0; axis < 3; ++axis) {
      for (NanMode mode : {NanMode::kPropagate, NanMode::kIgnore}) {
        SCOPED_TRACE(std::string(dtype_name(t)) + " axis " + std::to_string(axis));
        Tensor want = oracle_argmax(in, axis, mode);
        expect_tensor_eq(run_t(Op::ARGMAX, {in}, argmax_attrs(axis, mode), want.type()), want);
      }
    }
  }
}

TEST(Argmax, Rejects) {
  Tensor in = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_THROW(run_t(Op::ARGMAX, {in}, argmax_attrs(2, NanMode::kPropagate), {DType::kInt32, {2}}), Error);
  EXPECT_THROW(run_t(Op::ARGMAX, {in}, argmax_attrs(1, NanMode::kPropagate), {DType::kInt32, {3}}), Error);
  EXPECT_THROW(run_t(Op::ARGMAX, {in}, argmax_attrs(1, NanMode::kPropagate), {DType::kInt8, {2}}), Error);
  EXPECT_THROW(run_t(Op::ARGMAX, {in}, argmax_attrs(1, static_cast<NanMode>(7)), {DType::kInt32, {2}}),
               Error);
}

}  // namespace
}  // namespace weft::testing
