// CONV2D: hand-computed cases, every type row against a naive oracle written from the pseudocode,
// the fast paths (odd sizes, padding, stride, dilation, 1x1, threads) and the REQUIRE/shape failures.
#include <cmath>
#include <limits>

#include "reference/tensor/tensor_test_util.h"

namespace weft::testing {
namespace {

// The CONV2D pseudocode as written: for_each(n, oy, ox, oc) { for_each(ky, kx, ic) ... }.
Tensor oracle_conv2d(const Tensor& in, const Tensor& w, const Tensor& bias, int64_t izp, int64_t wzp,
                     std::vector<int64_t> pad, std::vector<int64_t> stride, std::vector<int64_t> dil,
                     DType acc_t, DType out_t, bool* overflow = nullptr) {
  const int64_t N = in.shape()[0], IH = in.shape()[1], IW = in.shape()[2], IC = in.shape()[3];
  const int64_t OC = w.shape()[0], KH = w.shape()[1], KW = w.shape()[2];
  const int64_t OH = (IH - 1 + pad[0] + pad[1] - (KH - 1) * dil[0]) / stride[0] + 1;
  const int64_t OW = (IW - 1 + pad[2] + pad[3] - (KW - 1) * dil[1]) / stride[1] + 1;
  const int64_t BC = bias.shape()[0];
  std::vector<double> out;
  OracleAcc A{acc_t};
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox)
        for (int64_t oc = 0; oc < OC; ++oc) {
          double acc = 0;
          const int64_t iy = oy * stride[0] - pad[0], ix = ox * stride[1] - pad[2];
          for (int64_t ky = 0; ky < KH; ++ky)
            for (int64_t kx = 0; kx < KW; ++kx)
              for (int64_t ic = 0; ic < IC; ++ic) {
                const int64_t y = iy + ky * dil[0], x = ix + kx * dil[1];
                if (0 <= y && y < IH && 0 <= x && x < IW) {
                  double value = in.at_double(((n * IH + y) * IW + x) * IC + ic) - static_cast<double>(izp);
                  double weight =
                      w.at_double(((oc * KH + ky) * KW + kx) * IC + ic) - static_cast<double>(wzp);
                  acc = A.add(acc, A.mul(value, weight));
                }
              }
          out.push_back(oracle_finish(out_t, acc, bias.at_double(BC == 1 ? 0 : oc)));
        }
  if (overflow) *overflow = A.overflow;
  return from_values(out_t, {N, OH, OW, OC}, out);
}

Attrs attrs2d(std::vector<int64_t> pad, std::vector<int64_t> stride, std::vector<int64_t> dil, DType acc) {
  return conv_attrs(std::move(pad), std::move(stride), std::move(dil), acc_enum(acc));
}

TEST(Conv2d, HandComputedFp32) {
  // input 1x3x3x1 = 1..9, weight 1x2x2x1 = [1,0;0,-1] (x[y][x] - x[y+1][x+1]), bias 0.5, no pad.
  Tensor in = F32({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor w = F32({1, 2, 2, 1}, {1, 0, 0, -1});
  Tensor b = F32({1}, {0.5});
  Tensor z = F32({1}, {0});
  Tensor out = run_t(Op::CONV2D, {in, w, b, z, z}, attrs2d({0, 0, 0, 0}, {1, 1}, {1, 1}, DType::kFp32),
                     {DType::kFp32, {1, 2, 2, 1}});
  expect_tensor_eq(out, F32({1, 2, 2, 1}, {1 - 5 + 0.5, 2 - 6 + 0.5, 4 - 8 + 0.5, 5 - 9 + 0.5}));
}

TEST(Conv2d, HandComputedPaddingStrideTwoChannels) {
  // input 1x2x2x2: pixel (y,x) has channels [v, 10v] with v = 1,2,3,4; weight 2x1x1x2:
  // oc0 = [1, 0] (channel 0), oc1 = [0, 1] (channel 1); pad 1 top/left, stride 2:
  // OH = (2 - 1 + 1 - 0) / 2 + 1 = 2; outputs read input positions (-1,-1),(-1,1),(1,-1),(1,1):
  // only (1,1) lies inside -> [0,0],[0,0],[0,0],[4,40]; bias [1, 2] per channel.
  Tensor in = F32({1, 2, 2, 2}, {1, 10, 2, 20, 3, 30, 4, 40});
  Tensor w = F32({2, 1, 1, 2}, {1, 0, 0, 1});
  Tensor b = F32({2}, {1, 2});
  Tensor z = F32({1}, {0});
  Tensor out = run_t(Op::CONV2D, {in, w, b, z, z}, attrs2d({1, 0, 1, 0}, {2, 2}, {1, 1}, DType::kFp32),
                     {DType::kFp32, {1, 2, 2, 2}});
  expect_tensor_eq(out, F32({1, 2, 2, 2}, {1, 2, 1, 2, 1, 2, 5, 42}));
}

TEST(Conv2d, HandComputedInt8ZeroPoints) {
  // input [1x1x2x1] = [10, 20], izp 10 -> values [0, 10]; weight 1x1x2x1 = [3, 5], wzp 1 -> [2, 4].
  // acc = 0*2 + 10*4 = 40; bias -7 -> 33.
  Tensor in = I(DType::kInt8, {1, 1, 2, 1}, {10, 20});
  Tensor w = I(DType::kInt8, {1, 1, 2, 1}, {3, 5});
  Tensor b = I(DType::kInt32, {1}, {-7});
  Tensor out = run_t(Op::CONV2D, {in, w, b, scalar1(DType::kInt8, 10), scalar1(DType::kInt8, 1)},
                     attrs2d({0, 0, 0, 0}, {1, 1}, {1, 1}, DType::kInt32), {DType::kInt32, {1, 1, 1, 1}});
  expect_tensor_eq(out, I(DType::kInt32, {1, 1, 1, 1}, {33}));
}

TEST(Conv2d, HandComputedDilation) {
  // input 1x1x5x1 = [1,2,3,4,5], weight 1x1x2x1 = [1, 1], dilation 3: out[x] = in[x] + in[x+3].
  // OW = (5 - 1 - 3) / 1 + 1 = 2 -> [1+4, 2+5].
  Tensor in = I(DType::kInt8, {1, 1, 5, 1}, {1, 2, 3, 4, 5});
  Tensor w = I(DType::kInt8, {1, 1, 2, 1}, {1, 1});
  Tensor b = I(DType::kInt32, {1}, {0});
  Tensor z = scalar1(DType::kInt8, 0);
  Tensor out = run_t(Op::CONV2D, {in, w, b, z, z}, attrs2d({0, 0, 0, 0}, {1, 1}, {1, 3}, DType::kInt32),
                     {DType::kInt32, {1, 1, 2, 1}});
  expect_tensor_eq(out, I(DType::kInt32, {1, 1, 2, 1}, {5, 7}));
}

TEST(Conv2d, HandComputedInt16Int48) {
  // 16x8 with int48 accumulate: 30000 * 100 + 30000 * 100 = 6e6; bias 2^40 stays exact.
  Tensor in = I(DType::kInt16, {1, 1, 1, 2}, {30000, 30000});
  Tensor w = I(DType::kInt8, {1, 1, 1, 2}, {100, 100});
  Tensor b = I(DType::kInt48, {1}, {int64_t{1} << 40});
  Tensor out = run_t(Op::CONV2D, {in, w, b, scalar1(DType::kInt16, 0), scalar1(DType::kInt8, 0)},
                     attrs2d({0, 0, 0, 0}, {1, 1}, {1, 1}, DType::kInt48), {DType::kInt48, {1, 1, 1, 1}});
  expect_tensor_eq(out, I(DType::kInt48, {1, 1, 1, 1}, {6000000 + (int64_t{1} << 40)}));
}

TEST(Conv2d, Fp16AccumulateRoundsEveryStep) {
  // fp16 accumulate: 2048 + 1 + 1 in fp16 is 2048 (each +1 is a tie that rounds to even), while fp32
  // accumulate gives 2050 (representable in fp16).
  Tensor in = T(DType::kFp16, {1, 1, 1, 3}, {2048, 1, 1});
  Tensor w = T(DType::kFp16, {1, 1, 1, 3}, {1, 1, 1});
  Tensor b = T(DType::kFp16, {1}, {0});
  Tensor z = T(DType::kFp16, {1}, {0});
  Tensor o16 = run_t(Op::CONV2D, {in, w, b, z, z}, attrs2d({0, 0, 0, 0}, {1, 1}, {1, 1}, DType::kFp16),
                     {DType::kFp16, {1, 1, 1, 1}});
  Tensor o32 = run_t(Op::CONV2D, {in, w, b, z, z}, attrs2d({0, 0, 0, 0}, {1, 1}, {1, 1}, DType::kFp32),
                     {DType::kFp16, {1, 1, 1, 1}});
  expect_tensor_eq(o16, T(DType::kFp16, {1, 1, 1, 1}, {2048}));
  expect_tensor_eq(o32, T(DType::kFp16, {1, 1, 1, 1}, {2050}));
}

TEST(Conv2d, PaddedTapsAreSkippedEvenForInfiniteWeights) {
  // A padded tap is not multiplied (tosa_extra_multiplies is false): inf weights on padded taps
  // must not turn the result into NaN. Input 1x1x1x1 = 2, weight 1x1x3x1 = [inf, 3, -inf], pad 1
  // left/right: OW = 1 - 1 + 2 - 2 + 1 = 1 and only the middle tap is in range -> 6.
  const double inf = std::numeric_limits<double>::infinity();
  Tensor in = F32({1, 1, 1, 1}, {2});
  Tensor w = F32({1, 1, 3, 1}, {inf, 3, -inf});
  Tensor b = F32({1}, {0});
  Tensor z = F32({1}, {0});
  Tensor out = run_t(Op::CONV2D, {in, w, b, z, z}, attrs2d({0, 0, 1, 1}, {1, 1}, {1, 1}, DType::kFp32),
                     {DType::kFp32, {1, 1, 1, 1}});
  expect_tensor_eq(out, F32({1, 1, 1, 1}, {6}));
}

// Every type row, random data with padding, stride and dilation, against the oracle (exact).
TEST(Conv2d, EveryTypeRowMatchesOracle) {
  std::mt19937 rng(11);
  for (const ConvTypes& r : conv_type_rows()) {
    SCOPED_TRACE(row_name(r));
    Tensor in = random_tensor(rng, r.in, {2, 5, 6, 3});
    Tensor w = random_tensor(rng, r.w, {4, 3, 2, 3});
    Tensor b = random_tensor(rng, r.out, {4}, 2.0, -1000, 1000);
    const int64_t izp = r.in == DType::kInt8 ? 7 : 0, wzp = r.w == DType::kInt8 ? -5 : 0;
    std::vector<int64_t> pad{1, 1, 0, 1}, stride{2, 1}, dil{1, 2};
    Tensor want = oracle_conv2d(in, w, b, izp, wzp, pad, stride, dil, r.acc, r.out);
    Tensor got = run_t(Op::CONV2D, {in, w, b, scalar1(r.in, izp), scalar1(r.w, wzp)},
                       attrs2d(pad, stride, dil, r.acc), want.type());
    expect_tensor_eq(got, want);
  }
}

TEST(Conv2d, BiasBroadcast) {
  std::mt19937 rng(12);
  for (DType t : {DType::kInt8, DType::kFp32}) {
    const DType out_t = t == DType::kInt8 ? DType::kInt32 : DType::kFp32;
    Tensor in = random_tensor(rng, t, {1, 4, 4, 2});
    Tensor w = random_tensor(rng, t, {3, 2, 2, 2});
    Tensor b = random_tensor(rng, out_t, {1}, 2.0, -50, 50);
    Tensor want = oracle_conv2d(in, w, b, 0, 0, {0, 0, 0, 0}, {1, 1}, {1, 1}, out_t, out_t);
    Tensor got = run_t(Op::CONV2D, {in, w, b, scalar1(t, 0), scalar1(t, 0)},
                       attrs2d({0, 0, 0, 0}, {1, 1}, {1, 1}, out_t), want.type());
    expect_tensor_eq(got, want);
  }
}

struct FastCase {
  int64_t N, IH, IW, IC, OC, KH, KW;
  std::vector<int64_t> pad, stride, dil;
};

// The fast paths (im2col + GEMM for fp32 and int8, direct rows for 1x1) on odd sizes; results must
// be bit-identical to the oracle and identical across thread counts.
TEST(Conv2d, FastPathsMatchOracleAcrossThreads) {
  const std::vector<FastCase> cases = {
      {1, 9, 11, 5, 7, 3, 3, {1, 1, 1, 1}, {1, 1}, {1, 1}},
      {2, 13, 7, 3, 17, 3, 3, {1, 1, 1, 1}, {2, 2}, {1, 1}},
      {1, 12, 12, 6, 9, 3, 3, {2, 2, 2, 2}, {1, 1}, {2, 2}},
      {1, 7, 9, 33, 21, 1, 1, {0, 0, 0, 0}, {1, 1}, {1, 1}},  // 1x1: input rows used directly
      {1, 9, 9, 16, 10, 1, 1, {0, 0, 0, 0}, {2, 2}, {1, 1}},  // 1x1 stride 2
      {1, 15, 15, 3, 8, 7, 7, {3, 3, 3, 3}, {2, 2}, {1, 1}},  // stem-like 7x7/2
      {3, 4, 5, 1, 1, 2, 3, {0, 1, 1, 1}, {1, 2}, {2, 1}},
  };
  std::mt19937 rng(13);
  for (const FastCase& c : cases) {
    for (DType t : {DType::kFp32, DType::kInt8}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " IC " + std::to_string(c.IC) + " OC " +
                   std::to_string(c.OC) + " K " + std::to_string(c.KH));
      const DType out_t = t == DType::kInt8 ? DType::kInt32 : DType::kFp32;
      Tensor in = random_tensor(rng, t, {c.N, c.IH, c.IW, c.IC});
      Tensor w = random_tensor(rng, t, {c.OC, c.KH, c.KW, c.IC});
      Tensor b = random_tensor(rng, out_t, {c.OC}, 1.0, -3000, 3000);
      const int64_t izp = t == DType::kInt8 ? -3 : 0, wzp = t == DType::kInt8 ? 4 : 0;
      Tensor want = oracle_conv2d(in, w, b, izp, wzp, c.pad, c.stride, c.dil, out_t, out_t);
      std::vector<Tensor> ops = {in, w, b, scalar1(t, izp), scalar1(t, wzp)};
      Attrs a = attrs2d(c.pad, c.stride, c.dil, out_t);
      Tensor one = run_t(Op::CONV2D, ops, a, want.type(), 1);
      Tensor three = run_t(Op::CONV2D, ops, a, want.type(), 3);
      expect_tensor_eq(one, want);
      EXPECT_TRUE(one.identical(three));
    }
  }
}

TEST(Conv2d, ThreadsZeroMeansHardware) {
  std::mt19937 rng(14);
  Tensor in = random_tensor(rng, DType::kInt8, {1, 6, 6, 4});
  Tensor w = random_tensor(rng, DType::kInt8, {5, 3, 3, 4});
  Tensor b = random_tensor(rng, DType::kInt32, {5}, 1.0, -10, 10);
  Tensor z = scalar1(DType::kInt8, 0);
  Attrs a = attrs2d({1, 1, 1, 1}, {1, 1}, {1, 1}, DType::kInt32);
  Tensor want = oracle_conv2d(in, w, b, 0, 0, {1, 1, 1, 1}, {1, 1}, {1, 1}, DType::kInt32, DType::kInt32);
  expect_tensor_eq(run_t(Op::CONV2D, {in, w, b, z, z}, a, want.type(), 0), want);
}

TEST(Conv2d, NonFiniteValuesFollowSpecOrder) {
  // NaN/inf in the input and weights: the exact path must still equal the oracle (NaN matches NaN).
  std::mt19937 rng(15);
  Tensor in = random_tensor(rng, DType::kFp32, {1, 5, 5, 2});
  Tensor w = random_tensor(rng, DType::kFp32, {3, 3, 3, 2});
  std::vector<double> wv = w.to_doubles();
  wv[0] = std::numeric_limits<double>::infinity();
  wv[7] = -std::numeric_limits<double>::infinity();
  w = F32(w.shape(), wv);
  std::vector<double> iv = in.to_doubles();
  iv[12] = std::numeric_limits<double>::quiet_NaN();
  in = F32(in.shape(), iv);
  Tensor b = random_tensor(rng, DType::kFp32, {3});
  Tensor z = F32({1}, {0});
  Tensor want = oracle_conv2d(in, w, b, 0, 0, {1, 1, 1, 1}, {1, 1}, {1, 1}, DType::kFp32, DType::kFp32);
  expect_tensor_eq(
      run_t(Op::CONV2D, {in, w, b, z, z}, attrs2d({1, 1, 1, 1}, {1, 1}, {1, 1}, DType::kFp32), want.type()),
      want);
}

TEST(Conv2d, Int32AccumulatorOverflowFails) {
  // 16x8 into int32 is not a row, so overflow int32 with int8: 128*128 per product (zp -128 / -128
  // makes 127 - (-128) = 255): 255 * 255 * K with K = 33100 > 2^31.
  const int64_t K = 33100;
  Tensor in = Tensor::from_ints({DType::kInt8, {1, 1, 1, K}}, std::vector<int64_t>(K, 127));
  Tensor w = Tensor::from_ints({DType::kInt8, {1, 1, 1, K}}, std::vector<int64_t>(K, 127));
  Tensor b = I(DType::kInt32, {1}, {0});
  try {
    run_t(Op::CONV2D, {in, w, b, scalar1(DType::kInt8, -128), scalar1(DType::kInt8, -128)},
          attrs2d({0, 0, 0, 0}, {1, 1}, {1, 1}, DType::kInt32), {DType::kInt32, {1, 1, 1, 1}});
    FAIL() << "expected an overflow error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
    EXPECT_NE(std::string(e.what()).find("overflow"), std::string::npos) << e.what();
  }
}

TEST(Conv2d, LargeIntSumWithinRangeUsesCheckedPathExactly) {
  // The bound K * max|x| * max|w| exceeds int32 but the actual partial sums alternate in sign and
  // stay small: the checked path must give the exact result, no error.
  const int64_t K = 40000;
  std::vector<int64_t> xv(K), wv(K, 127);
  for (int64_t i = 0; i < K; ++i) xv[static_cast<size_t>(i)] = (i % 2) ? -127 : 127;
  Tensor in = Tensor::from_ints({DType::kInt8, {1, 1, 1, K}}, xv);
  Tensor w = Tensor::from_ints({DType::kInt8, {1, 1, 1, K}}, wv);
  Tensor b = I(DType::kInt32, {1}, {5});
  Tensor z = scalar1(DType::kInt8, 0);
  Tensor out = run_t(Op::CONV2D, {in, w, b, z, z}, attrs2d({0, 0, 0, 0}, {1, 1}, {1, 1}, DType::kInt32),
                     {DType::kInt32, {1, 1, 1, 1}});
  expect_tensor_eq(out, I(DType::kInt32, {1, 1, 1, 1}, {5}));
}

TEST(Conv2d, EmptyReductionGivesBias) {
  // IC = 0: every sum is empty, so each output is static_cast<out_t>(0) + bias.
  for (DType t : {DType::kFp32, DType::kInt8}) {
    const DType out_t = t == DType::kInt8 ? DType::kInt32 : DType::kFp32;
    Tensor in = Tensor::zeros({t, {1, 2, 2, 0}});
    Tensor w = Tensor::zeros({t, {2, 1, 1, 0}});
    Tensor b = from_values(out_t, {2}, {3, -4});
    Tensor out = run_t(Op::CONV2D, {in, w, b, scalar1(t, 0), scalar1(t, 0)},
                       attrs2d({0, 0, 0, 0}, {1, 1}, {1, 1}, out_t), {out_t, {1, 2, 2, 2}});
    expect_tensor_eq(out, from_values(out_t, {1, 2, 2, 2}, {3, -4, 3, -4, 3, -4, 3, -4}));
  }
}

TEST(Conv2d, BiasOverflowFails) {
  Tensor in = I(DType::kInt8, {1, 1, 1, 1}, {1});
  Tensor w = I(DType::kInt8, {1, 1, 1, 1}, {1});
  Tensor b = I(DType::kInt32, {1}, {INT32_MAX});
  Tensor z = scalar1(DType::kInt8, 0);
  EXPECT_THROW(run_t(Op::CONV2D, {in, w, b, z, z}, attrs2d({0, 0, 0, 0}, {1, 1}, {1, 1}, DType::kInt32),
                     {DType::kInt32, {1, 1, 1, 1}}),
               Error);
}

TEST(Conv2d, RejectsBadOperands) {
  Tensor in = F32({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor w = F32({1, 2, 2, 1}, {1, 0, 0, -1});
  Tensor b = F32({1}, {0});
  Tensor z = F32({1}, {0});
  Attrs a = attrs2d({0, 0, 0, 0}, {1, 1}, {1, 1}, DType::kFp32);
  // Output shape inconsistent with the input.
  EXPECT_THROW(run_t(Op::CONV2D, {in, w, b, z, z}, a, {DType::kFp32, {1, 3, 2, 1}}), Error);
  // Non-zero zero point for a float type.
  EXPECT_THROW(run_t(Op::CONV2D, {in, w, b, F32({1}, {1}), z}, a, {DType::kFp32, {1, 2, 2, 1}}), Error);
  // Non-zero weight zero point for int4 weights.
  Tensor i8 = I(DType::kInt8, {1, 1, 1, 1}, {1});
  Tensor w4 = I(DType::kInt4, {1, 1, 1, 1}, {1});
  EXPECT_THROW(run_t(Op::CONV2D,
                     {i8, w4, I(DType::kInt32, {1}, {0}), scalar1(DType::kInt8, 0), scalar1(DType::kInt4, 1)},
                     attrs2d({0, 0, 0, 0}, {1, 1}, {1, 1}, DType::kInt32), {DType::kInt32, {1, 1, 1, 1}}),
               Error);
  // Wrong accumulator for the types (fp32 with int32 accumulate).
  EXPECT_THROW(run_t(Op::CONV2D, {in, w, b, z, z}, attrs2d({0, 0, 0, 0}, {1, 1}, {1, 1}, DType::kInt32),
                     {DType::kFp32, {1, 2, 2, 1}}),
               Error);
  // Bias with the wrong channel count, negative pad, zero stride.
  EXPECT_THROW(run_t(Op::CONV2D, {in, w, F32({2}, {0, 0}), z, z}, a, {DType::kFp32, {1, 2, 2, 1}}), Error);
  EXPECT_THROW(run_t(Op::CONV2D, {in, w, b, z, z}, attrs2d({-1, 0, 0, 0}, {1, 1}, {1, 1}, DType::kFp32),
                     {DType::kFp32, {1, 1, 2, 1}}),
               Error);
  EXPECT_THROW(run_t(Op::CONV2D, {in, w, b, z, z}, attrs2d({0, 0, 0, 0}, {0, 1}, {1, 1}, DType::kFp32),
                     {DType::kFp32, {1, 2, 2, 1}}),
               Error);
  // Weight IC differs from input IC.
  EXPECT_THROW(run_t(Op::CONV2D, {in, F32({1, 2, 2, 2}, {0, 0, 0, 0, 0, 0, 0, 0}), b, z, z}, a,
                     {DType::kFp32, {1, 2, 2, 1}}),
               Error);
}

}  // namespace
}  // namespace weft::testing
