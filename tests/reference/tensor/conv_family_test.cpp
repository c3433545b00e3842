// CONV3D, DEPTHWISE_CONV2D and TRANSPOSE_CONV2D: hand-computed cases, every type row against naive
// oracles written from the pseudocode, thread-count independence and shape failures.
#include "reference/tensor/tensor_test_util.h"

namespace weft::testing {
namespace {

Tensor oracle_conv3d(const Tensor& in, const Tensor& w, const Tensor& bias, int64_t izp, int64_t wzp,
                     const std::vector<int64_t>& pad, const std::vector<int64_t>& st,
                     const std::vector<int64_t>& dl, DType acc_t, DType out_t) {
  const int64_t N = in.shape()[0], ID = in.shape()[1], IH = in.shape()[2], IW = in.shape()[3],
                IC = in.shape()[4];
  const int64_t OC = w.shape()[0], KD = w.shape()[1], KH = w.shape()[2], KW = w.shape()[3];
  const int64_t OD = (ID - 1 + pad[0] + pad[1] - (KD - 1) * dl[0]) / st[0] + 1;
  const int64_t OH = (IH - 1 + pad[2] + pad[3] - (KH - 1) * dl[1]) / st[1] + 1;
  const int64_t OW = (IW - 1 + pad[4] + pad[5] - (KW - 1) * dl[2]) / st[2] + 1;
  const int64_t BC = bias.shape()[0];
  OracleAcc A{acc_t};
  std::vector<double> out;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t od = 0; od < OD; ++od)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox)
          for (int64_t oc = 0; oc < OC; ++oc) {
            double acc = 0;
            const int64_t id = od * st[0] - pad[0], iy = oy * st[1] - pad[2], ix = ox * st[2] - pad[4];
            for (int64_t kd = 0; kd < KD; ++kd)
              for (int64_t ky = 0; ky < KH; ++ky)
                for (int64_t kx = 0; kx < KW; ++kx)
                  for (int64_t ic = 0; ic < IC; ++ic) {
                    const int64_t d = id + kd * dl[0], y = iy + ky * dl[1], x = ix + kx * dl[2];
                    if (0 <= x && x < IW && 0 <= y && y < IH && 0 <= d && d < ID) {
                      double v = in.at_double((((n * ID + d) * IH + y) * IW + x) * IC + ic) -
                                 static_cast<double>(izp);
                      double wt = w.at_double((((oc * KD + kd) * KH + ky) * KW + kx) * IC + ic) -
                                  static_cast<double>(wzp);
                      acc = A.add(acc, A.mul(v, wt));
                    }
                  }
            out.push_back(oracle_finish(out_t, acc, bias.at_double(BC == 1 ? 0 : oc)));
          }
  return from_values(out_t, {N, OD, OH, OW, OC}, out);
}

Tensor oracle_depthwise(const Tensor& in, const Tensor& w, const Tensor& bias, int64_t izp, int64_t wzp,
                        const std::vector<int64_t>& pad, const std::vector<int64_t>& st,
                        const std::vector<int64_t>& dl, DType acc_t, DType out_t) {
  const int64_t N = in.shape()[0], IH = in.shape()[1], IW = in.shape()[2], C = in.shape()[3];
  const int64_t KH = w.shape()[0], KW = w.shape()[1], M = w.shape()[3];
  const int64_t OH = (IH - 1 + pad[0] + pad[1] - (KH - 1) * dl[0]) / st[0] + 1;
  const int64_t OW = (IW - 1 + pad[2] + pad[3] - (KW - 1) * dl[1]) / st[1] + 1;
  const int64_t BC = bias.shape()[0];
  OracleAcc A{acc_t};
  std::vector<double> out(static_cast<size_t>(N * OH * OW * C * M));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox)
        for (int64_t c = 0; c < C; ++c)
          for (int64_t m = 0; m < M; ++m) {
            double acc = 0;
            const int64_t iy = oy * st[0] - pad[0], ix = ox * st[1] - pad[2];
            for (int64_t ky = 0; ky < KH; ++ky)
              for (int64_t kx = 0; kx < KW; ++kx) {
                const int64_t y = iy + ky * dl[0], x = ix + kx * dl[1];
                if (0 <= y && y < IH && 0 <= x && x < IW) {
                  double v = in.at_double(((n * IH + y) * IW + x) * C + c) - static_cast<double>(izp);
                  double wt = w.at_double(((ky * KW + kx) * C + c) * M + m) - static_cast<double>(wzp);
                  acc = A.add(acc, A.mul(v, wt));
                }
              }
            out[static_cast<size_t>(((n * OH + oy) * OW + ox) * C * M + c * M + m)] =
                oracle_finish(out_t, acc, bias.at_double(BC == 1 ? 0 : c * M + m));
          }
  return from_values(out_t, {N, OH, OW, C * M}, out);
}

Tensor oracle_transpose(const Tensor& in, const Tensor& w, const Tensor& bias, int64_t izp, int64_t wzp,
                        const std::vector<int64_t>& out_pad, const std::vector<int64_t>& st, DType acc_t,
                        DType out_t) {
  const int64_t N = in.shape()[0], IH = in.shape()[1], IW = in.shape()[2], IC = in.shape()[3];
  const int64_t OC = w.shape()[0], KH = w.shape()[1], KW = w.shape()[2];
  const int64_t OH = (IH - 1) * st[0] + out_pad[0] + out_pad[1] + KH;
  const int64_t OW = (IW - 1) * st[1] + out_pad[2] + out_pad[3] + KW;
  const int64_t BC = bias.shape()[0];
  OracleAcc A{acc_t};
  std::vector<double> out;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox)
        for (int64_t oc = 0; oc < OC; ++oc) {
          double acc = 0;
          const int64_t iy = oy - out_pad[0], ix = ox - out_pad[2];
          for (int64_t ky = 0; ky < KH; ++ky)
            for (int64_t kx = 0; kx < KW; ++kx)
              for (int64_t ic = 0; ic < IC; ++ic) {
                const int64_t y = iy - ky, x = ix - kx;
                if (0 <= y && y < IH * st[0] && 0 <= x && x < IW * st[1] && y % st[0] == 0 &&
                    x % st[1] == 0) {
                  double v = in.at_double(((n * IH + y / st[0]) * IW + x / st[1]) * IC + ic) -
                             static_cast<double>(izp);
                  double wt = w.at_double(((oc * KH + ky) * KW + kx) * IC + ic) - static_cast<double>(wzp);
                  acc = A.add(acc, A.mul(v, wt));
                }
              }
          out.push_back(oracle_finish(out_t, acc, bias.at_double(BC == 1 ? 0 : oc)));
        }
  return from_values(out_t, {N, OH, OW, OC}, out);
}

Attrs attrs3d(std::vector<int64_t> pad, std::vector<int64_t> st, std::vector<int64_t> dl, DType acc) {
  return conv_attrs(std::move(pad), std::move(st), std::move(dl), acc_enum(acc));
}

Attrs attrs_tc(std::vector<int64_t> out_pad, std::vector<int64_t> st, DType acc) {
  return {{"out_pad", std::move(out_pad)},
          {"stride", std::move(st)},
          {"acc_type", static_cast<int64_t>(acc_enum(acc))}};
}

// ---- CONV3D ----

TEST(Conv3d, HandComputed) {
  // input 1x2x1x1x1 = [3, 5] along depth, weight 1x2x1x1x1 = [2, -1]: 3*2 + 5*(-1) = 1; bias 10.
  Tensor in = F32({1, 2, 1, 1, 1}, {3, 5});
  Tensor w = F32({1, 2, 1, 1, 1}, {2, -1});
  Tensor z = F32({1}, {0});
  Tensor out =
      run_t(Op::CONV3D, {in, w, F32({1}, {10}), z, z},
            attrs3d({0, 0, 0, 0, 0, 0}, {1, 1, 1}, {1, 1, 1}, DType::kFp32), {DType::kFp32, {1, 1, 1, 1, 1}});
  expect_tensor_eq(out, F32({1, 1, 1, 1, 1}, {11}));
}

TEST(Conv3d, EveryTypeRowMatchesOracle) {
  std::mt19937 rng(21);
  for (const ConvTypes& r : conv_type_rows()) {
    SCOPED_TRACE(row_name(r));
    Tensor in = random_tensor(rng, r.in, {1, 4, 5, 3, 2});
    Tensor w = random_tensor(rng, r.w, {3, 2, 2, 2, 2});
    Tensor b = random_tensor(rng, r.out, {3}, 2.0, -100, 100);
    const int64_t izp = r.in == DType::kInt8 ? -9 : 0, wzp = r.w == DType::kInt8 ? 2 : 0;
    std::vector<int64_t> pad{1, 0, 0, 1, 1, 1}, st{1, 2, 1}, dl{2, 1, 1};
    Tensor want = oracle_conv3d(in, w, b, izp, wzp, pad, st, dl, r.acc, r.out);
    std::vector<Tensor> ops = {in, w, b, scalar1(r.in, izp), scalar1(r.w, wzp)};
    expect_tensor_eq(run_t(Op::CONV3D, ops, attrs3d(pad, st, dl, r.acc), want.type()), want);
    EXPECT_TRUE(run_t(Op::CONV3D, ops, attrs3d(pad, st, dl, r.acc), want.type(), 3)
                    .identical(run_t(Op::CONV3D, ops, attrs3d(pad, st, dl, r.acc), want.type(), 1)));
  }
}

TEST(Conv3d, RejectsInconsistentOutput) {
  Tensor in = F32({1, 2, 1, 1, 1}, {3, 5});
  Tensor w = F32({1, 2, 1, 1, 1}, {2, -1});
  Tensor z = F32({1}, {0});
  EXPECT_THROW(
      run_t(Op::CONV3D, {in, w, z, z, z}, attrs3d({0, 0, 0, 0, 0, 0}, {1, 1, 1}, {1, 1, 1}, DType::kFp32),
            {DType::kFp32, {1, 2, 1, 1, 1}}),
      Error);
  EXPECT_THROW(run_t(Op::CONV3D, {in, w, z, z, z}, attrs3d({0, 0, 0, 0}, {1, 1, 1}, {1, 1, 1}, DType::kFp32),
                     {DType::kFp32, {1, 1, 1, 1, 1}}),
               Error);
}

// ---- DEPTHWISE_CONV2D ----

TEST(DepthwiseConv2d, HandComputedMultiplier) {
  // input 1x1x2x2 (C=2): pixel0 = [1, 2], pixel1 = [3, 4]; weight 1x2x2x2 (KW=2, M=2), w[kx][c][m]:
  // kx0: c0 [1, 10], c1 [100, 100]; kx1: c0 [2, 20], c1 [50, 60].
  // [c0,m0] = 1*1 + 3*2 = 7; [c0,m1] = 1*10 + 3*20 = 70; [c1,m0] = 2*100 + 4*50 = 400;
  // [c1,m1] = 2*100 + 4*60 = 440; plus bias [0, 1, 2, 3] indexed by c*M+m.
  Tensor in = I(DType::kInt8, {1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor w8 = I(DType::kInt8, {1, 2, 2, 2}, {1, 10, 100, 100, 2, 20, 50, 60});
  Tensor b = I(DType::kInt32, {4}, {0, 1, 2, 3});
  Tensor z = scalar1(DType::kInt8, 0);
  Tensor out =
      run_t(Op::DEPTHWISE_CONV2D, {in, w8, b, z, z},
            conv_attrs({0, 0, 0, 0}, {1, 1}, {1, 1}, AccType::kInt32), {DType::kInt32, {1, 1, 1, 4}});
  expect_tensor_eq(out, I(DType::kInt32, {1, 1, 1, 4}, {7, 71, 402, 443}));
}

TEST(DepthwiseConv2d, EveryTypeRowMatchesOracle) {
  std::mt19937 rng(22);
  for (const ConvTypes& r : conv_type_rows()) {
    for (int64_t M : {1, 3}) {
      SCOPED_TRACE(row_name(r) + " M " + std::to_string(M));
      Tensor in = random_tensor(rng, r.in, {2, 7, 7, 5});
      Tensor w = random_tensor(rng, r.w, {3, 3, 5, M});
      Tensor b = random_tensor(rng, r.out, {M == 1 ? 5 : 1}, 2.0, -100, 100);
      const int64_t izp = r.in == DType::kInt8 ? 13 : 0, wzp = r.w == DType::kInt8 ? -1 : 0;
      std::vector<int64_t> pad{1, 1, 2, 0}, st{2, 1}, dl{1, 2};
      Tensor want = oracle_depthwise(in, w, b, izp, wzp, pad, st, dl, r.acc, r.out);
      std::vector<Tensor> ops = {in, w, b, scalar1(r.in, izp), scalar1(r.w, wzp)};
      Attrs a = conv_attrs(pad, st, dl, acc_enum(r.acc));
      Tensor one = run_t(Op::DEPTHWISE_CONV2D, ops, a, want.type(), 1);
      expect_tensor_eq(one, want);
      EXPECT_TRUE(one.identical(run_t(Op::DEPTHWISE_CONV2D, ops, a, want.type(), 3)));
    }
  }
}

TEST(DepthwiseConv2d, RejectsBadShapes) {
  Tensor in = F32({1, 3, 3, 2}, std::vector<double>(18, 1.0));
  Tensor w = F32({2, 2, 2, 1}, std::vector<double>(8, 1.0));
  Tensor z = F32({1}, {0});
  Attrs a = conv_attrs({0, 0, 0, 0}, {1, 1}, {1, 1}, AccType::kFp32);
  EXPECT_THROW(run_t(Op::DEPTHWISE_CONV2D, {in, w, F32({1}, {0}), z, z}, a, {DType::kFp32, {1, 2, 2, 3}}),
               Error);
  EXPECT_THROW(
      run_t(Op::DEPTHWISE_CONV2D, {in, F32({2, 2, 3, 1}, std::vector<double>(12, 1.0)), F32({1}, {0}), z, z},
            a, {DType::kFp32, {1, 2, 2, 3}}),
      Error);
  EXPECT_THROW(
      run_t(Op::DEPTHWISE_CONV2D, {in, w, F32({3}, {0, 0, 0}), z, z}, a, {DType::kFp32, {1, 2, 2, 2}}),
      Error);
}

// ---- TRANSPOSE_CONV2D ----

TEST(TransposeConv2d, HandComputedStride2) {
  // input 1x1x2x1 = [1, 2], weight 1x1x2x1 = [10, 1], stride 2, no out_pad:
  // OW = (2 - 1) * 2 + 2 = 4; out[ox] = sum_kx in[(ox - kx) / 2] * w[kx] where (ox - kx) is even:
  // ox0: kx0 -> 1*10 = 10; ox1: kx1 -> 1*1 = 1; ox2: kx0 -> 2*10 = 20; ox3: kx1 -> 2*1 = 2.
  Tensor in = F32({1, 1, 2, 1}, {1, 2});
  Tensor w = F32({1, 1, 2, 1}, {10, 1});
  Tensor z = F32({1}, {0});
  Tensor out = run_t(Op::TRANSPOSE_CONV2D, {in, w, F32({1}, {0.5}), z, z},
                     attrs_tc({0, 0, 0, 0}, {1, 2}, DType::kFp32), {DType::kFp32, {1, 1, 4, 1}});
  expect_tensor_eq(out, F32({1, 1, 4, 1}, {10.5, 1.5, 20.5, 2.5}));
}

TEST(TransposeConv2d, HandComputedNegativeOutPad) {
  // Same as above with out_pad left -1, right 0: OW = 2 + (-1) + 0 + 2 = 3 and ox shifts by one:
  // out[ox] = previous out[ox + 1] -> [1, 20, 2] (+ bias 0).
  Tensor in = F32({1, 1, 2, 1}, {1, 2});
  Tensor w = F32({1, 1, 2, 1}, {10, 1});
  Tensor z = F32({1}, {0});
  Tensor out = run_t(Op::TRANSPOSE_CONV2D, {in, w, z, z, z}, attrs_tc({0, 0, -1, 0}, {1, 2}, DType::kFp32),
                     {DType::kFp32, {1, 1, 3, 1}});
  expect_tensor_eq(out, F32({1, 1, 3, 1}, {1, 20, 2}));
}

TEST(TransposeConv2d, EveryTypeRowMatchesOracle) {
  std::mt19937 rng(23);
  for (const ConvTypes& r : conv_type_rows()) {
    SCOPED_TRACE(row_name(r));
    Tensor in = random_tensor(rng, r.in, {2, 3, 4, 3});
    Tensor w = random_tensor(rng, r.w, {5, 3, 2, 3});
    Tensor b = random_tensor(rng, r.out, {5}, 2.0, -100, 100);
    const int64_t izp = r.in == DType::kInt8 ? 4 : 0, wzp = r.w == DType::kInt8 ? 3 : 0;
    for (auto [out_pad, st] : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
             {{0, 0, 0, 0}, {1, 1}}, {{1, -2, 2, -1}, {2, 3}}, {{0, 1, 0, 0}, {3, 2}}}) {
      Tensor want = oracle_transpose(in, w, b, izp, wzp, out_pad, st, r.acc, r.out);
      std::vector<Tensor> ops = {in, w, b, scalar1(r.in, izp), scalar1(r.w, wzp)};
      Tensor one = run_t(Op::TRANSPOSE_CONV2D, ops, attrs_tc(out_pad, st, r.acc), want.type(), 1);
      expect_tensor_eq(one, want);
      EXPECT_TRUE(
          one.identical(run_t(Op::TRANSPOSE_CONV2D, ops, attrs_tc(out_pad, st, r.acc), want.type(), 3)));
    }
  }
}

TEST(TransposeConv2d, RejectsBadOutPadAndShape) {
  Tensor in = F32({1, 1, 2, 1}, {1, 2});
  Tensor w = F32({1, 1, 2, 1}, {10, 1});
  Tensor z = F32({1}, {0});
  // out_pad_left <= -KW.
  EXPECT_THROW(run_t(Op::TRANSPOSE_CONV2D, {in, w, z, z, z}, attrs_tc({0, 0, -2, 0}, {1, 2}, DType::kFp32),
                     {DType::kFp32, {1, 1, 2, 1}}),
               Error);
  EXPECT_THROW(run_t(Op::TRANSPOSE_CONV2D, {in, w, z, z, z}, attrs_tc({0, 0, 0, 0}, {1, 2}, DType::kFp32),
                     {DType::kFp32, {1, 1, 5, 1}}),
               Error);
}

}  // namespace
}  // namespace weft::testing
