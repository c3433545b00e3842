// MATMUL: hand-computed cases, every type row against the pseudocode loop, odd sizes through the
// fast path with 1 and 3 threads, zero points and failures.
#include "reference/tensor/tensor_test_util.h"

namespace weft::testing {
namespace {

Tensor oracle_matmul(const Tensor& a, const Tensor& b, int64_t azp, int64_t bzp, DType out_t,
                     bool* overflow = nullptr) {
  const int64_t N = a.shape()[0], H = a.shape()[1], C = a.shape()[2], W = b.shape()[2];
  OracleAcc A{out_t};
  std::vector<double> out;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t w = 0; w < W; ++w) {
        double acc = 0;
        for (int64_t c = 0; c < C; ++c) {
          double v1 = a.at_double((n * H + h) * C + c) - static_cast<double>(azp);
          double v2 = b.at_double((n * C + c) * W + w) - static_cast<double>(bzp);
          acc = A.add(acc, A.mul(v1, v2));
        }
        out.push_back(acc);
      }
  if (overflow) *overflow = A.overflow;
  return from_values(out_t, {N, H, W}, out);
}

struct MatmulRow {
  DType in, out;
};
const MatmulRow kRows[] = {
    {DType::kInt8, DType::kInt32},   {DType::kInt16, DType::kInt48}, {DType::kFp8E4M3, DType::kFp16},
    {DType::kFp8E5M2, DType::kFp16}, {DType::kFp16, DType::kFp16},   {DType::kFp16, DType::kFp32},
    {DType::kBf16, DType::kFp32},    {DType::kFp32, DType::kFp32},
};

TEST(Matmul, HandComputedFp32) {
  // [1 2; 3 4] x [5 6; 7 8] = [19 22; 43 50]
  Tensor a = F32({1, 2, 2}, {1, 2, 3, 4});
  Tensor b = F32({1, 2, 2}, {5, 6, 7, 8});
  Tensor z = F32({1}, {0});
  expect_tensor_eq(run_t(Op::MATMUL, {a, b, z, z}, {}, {DType::kFp32, {1, 2, 2}}),
                   F32({1, 2, 2}, {19, 22, 43, 50}));
}

TEST(Matmul, HandComputedInt8ZeroPointsAndBatches) {
  // Batch 0: A = [10 11] - 10 = [0 1]; B = [[3],[4]] - 2 = [[1],[2]] -> 2.
  // Batch 1: A = [12 9] - 10 = [2 -1]; B = [[-128],[127]] - 2 = [[-130],[125]] -> -260 - 125 = -385.
  Tensor a = I(DType::kInt8, {2, 1, 2}, {10, 11, 12, 9});
  Tensor b = I(DType::kInt8, {2, 2, 1}, {3, 4, -128, 127});
  Tensor out = run_t(Op::MATMUL, {a, b, scalar1(DType::kInt8, 10), scalar1(DType::kInt8, 2)}, {},
                     {DType::kInt32, {2, 1, 1}});
  expect_tensor_eq(out, I(DType::kInt32, {2, 1, 1}, {2, -385}));
}

TEST(Matmul, HandComputedInt16Int48) {
  // 32767 * 32767 * 2 = 2147352578 > int32 max: needs the int48 accumulator.
  Tensor a = I(DType::kInt16, {1, 1, 2}, {32767, 32767});
  Tensor b = I(DType::kInt16, {1, 2, 1}, {32767, 32767});
  Tensor z = scalar1(DType::kInt16, 0);
  expect_tensor_eq(run_t(Op::MATMUL, {a, b, z, z}, {}, {DType::kInt48, {1, 1, 1}}),
                   I(DType::kInt48, {1, 1, 1}, {2147352578}));
}

TEST(Matmul, EveryTypeRowMatchesOracle) {
  std::mt19937 rng(31);
  for (const MatmulRow& r : kRows) {
    SCOPED_TRACE(std::string(dtype_name(r.in)) + " -> " + dtype_name(r.out));
    Tensor a = random_tensor(rng, r.in, {2, 5, 7});
    Tensor b = random_tensor(rng, r.in, {2, 7, 3});
    const int64_t azp = r.in == DType::kInt8 ? -20 : 0, bzp = r.in == DType::kInt8 ? 33 : 0;
    Tensor want = oracle_matmul(a, b, azp, bzp, r.out);
    expect_tensor_eq(run_t(Op::MATMUL, {a, b, scalar1(r.in, azp), scalar1(r.in, bzp)}, {}, want.type()),
                     want);
  }
}

TEST(Matmul, FastPathOddSizesAcrossThreads) {
  std::mt19937 rng(32);
  const int64_t shapes[][4] = {{1, 1, 1, 1},    {1, 37, 19, 23}, {3, 9, 64, 17},
                               {1, 130, 70, 9}, {2, 4, 300, 33}, {2, 3, 50, 40}};
  for (const auto& s : shapes) {
    for (DType t : {DType::kFp32, DType::kInt8, DType::kInt16}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " " + std::to_string(s[1]) + "x" + std::to_string(s[2]) +
                   "x" + std::to_string(s[3]));
      const DType out_t = t == DType::kFp32   ? DType::kFp32
                          : t == DType::kInt8 ? DType::kInt32
                                              : DType::kInt48;
      Tensor a = random_tensor(rng, t, {s[0], s[1], s[2]});
      Tensor b = random_tensor(rng, t, {s[0], s[2], s[3]});
      const int64_t zp = t == DType::kInt8 ? 17 : 0;
      Tensor want = oracle_matmul(a, b, zp, zp, out_t);
      std::vector<Tensor> ops = {a, b, scalar1(t, zp), scalar1(t, zp)};
      Tensor one = run_t(Op::MATMUL, ops, {}, want.type(), 1);
      expect_tensor_eq(one, want);
      EXPECT_TRUE(one.identical(run_t(Op::MATMUL, ops, {}, want.type(), 3)));
    }
  }
}

TEST(Matmul, EmptyReductionGivesZeros) {
  for (int64_t H : {2, 9}) {  // both the streaming and the packed path
    Tensor a = Tensor::zeros({DType::kFp32, {1, H, 0}});
    Tensor b = Tensor::zeros({DType::kFp32, {1, 0, 3}});
    Tensor z = F32({1}, {0});
    Tensor got = run_t(Op::MATMUL, {a, b, z, z}, {}, {DType::kFp32, {1, H, 3}});
    expect_tensor_eq(got, Tensor::zeros({DType::kFp32, {1, H, 3}}));
  }
}

TEST(Matmul, AccumulatorOverflowFails) {
  // int8 with zero points -128: each product 255 * 255; C = 33100 pushes the sum past int32.
  const int64_t C = 33100;
  Tensor a = Tensor::from_ints({DType::kInt8, {1, 1, C}}, std::vector<int64_t>(C, 127));
  Tensor b = Tensor::from_ints({DType::kInt8, {1, C, 1}}, std::vector<int64_t>(C, 127));
  Tensor z = scalar1(DType::kInt8, -128);
  EXPECT_THROW(run_t(Op::MATMUL, {a, b, z, z}, {}, {DType::kInt32, {1, 1, 1}}), Error);
}

TEST(Matmul, RejectsBadOperands) {
  Tensor a = F32({1, 2, 2}, {1, 2, 3, 4});
  Tensor b = F32({1, 2, 2}, {5, 6, 7, 8});
  Tensor z = F32({1}, {0});
  EXPECT_THROW(run_t(Op::MATMUL, {a, b, z, z}, {}, {DType::kFp32, {1, 2, 3}}), Error);
  EXPECT_THROW(
      run_t(Op::MATMUL, {a, F32({1, 3, 2}, {0, 0, 0, 0, 0, 0}), z, z}, {}, {DType::kFp32, {1, 2, 2}}), Error);
  EXPECT_THROW(run_t(Op::MATMUL, {a, b, F32({1}, {1}), z}, {}, {DType::kFp32, {1, 2, 2}}), Error);
  Tensor a16 = I(DType::kInt16, {1, 1, 1}, {1});
  EXPECT_THROW(run_t(Op::MATMUL, {a16, a16, scalar1(DType::kInt16, 1), scalar1(DType::kInt16, 0)}, {},
                     {DType::kInt48, {1, 1, 1}}),
               Error);
  // fp32 inputs with an fp16 output is not a row.
  EXPECT_THROW(run_t(Op::MATMUL, {a, b, z, z}, {}, {DType::kFp16, {1, 2, 2}}), Error);
}

}  // namespace
}  // namespace weft::testing
