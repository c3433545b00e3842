// REDUCE_* kernels: every type row of the operator table, NaN modes, accumulator rounding and
// the int32 overflow REQUIRE of apply_add_s.
#include <cmath>
#include <limits>

#include "reference/ref_test_util.h"

namespace weft::testing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Attrs axis_attr(int64_t axis) { return {{"axis", int64_t{axis}}}; }
Attrs axis_nan(int64_t axis, NanMode m) {
  return {{"axis", int64_t{axis}}, {"nan_mode", static_cast<int64_t>(m)}};
}

TEST(ReduceBool, AllAndAnyOverEachAxis) {
  // [[1,1,0],[1,1,1]]
  Tensor in = I(DType::kBool, {2, 3}, {1, 1, 0, 1, 1, 1});
  expect_tensor_eq(run1(Op::REDUCE_ALL, {Operand::input(in)}, axis_attr(1), {DType::kBool, {2, 1}}),
                   I(DType::kBool, {2, 1}, {0, 1}));
  expect_tensor_eq(run1(Op::REDUCE_ALL, {Operand::input(in)}, axis_attr(0), {DType::kBool, {1, 3}}),
                   I(DType::kBool, {1, 3}, {1, 1, 0}));
  Tensor in2 = I(DType::kBool, {2, 3}, {0, 0, 0, 0, 1, 0});
  expect_tensor_eq(run1(Op::REDUCE_ANY, {Operand::input(in2)}, axis_attr(1), {DType::kBool, {2, 1}}),
                   I(DType::kBool, {2, 1}, {0, 1}));
  expect_tensor_eq(run1(Op::REDUCE_ANY, {Operand::input(in2)}, axis_attr(0), {DType::kBool, {1, 3}}),
                   I(DType::kBool, {1, 3}, {0, 1, 0}));
}

TEST(ReduceBool, MiddleAxisOfRank3) {
  // shape [2,2,2]; reduce axis 1 pairs element (a, r) with (a, 1, r).
  Tensor in = I(DType::kBool, {2, 2, 2}, {1, 0, 1, 1, 0, 0, 1, 0});
  expect_tensor_eq(run1(Op::REDUCE_ALL, {Operand::input(in)}, axis_attr(1), {DType::kBool, {2, 1, 2}}),
                   I(DType::kBool, {2, 1, 2}, {1, 0, 0, 0}));
  expect_tensor_eq(run1(Op::REDUCE_ANY, {Operand::input(in)}, axis_attr(1), {DType::kBool, {2, 1, 2}}),
                   I(DType::kBool, {2, 1, 2}, {1, 1, 1, 0}));
}

TEST(ReduceMinMax, IntegerTypesWithExtremes) {
  for (DType t : {DType::kInt8, DType::kInt16, DType::kInt32}) {
    SCOPED_TRACE(dtype_name(t));
    const int64_t lo = int_min(t), hi = int_max(t);
    Tensor in = I(t, {2, 3}, {lo, 5, -7, 3, hi, -1});
    expect_tensor_eq(
        run1(Op::REDUCE_MAX, {Operand::input(in)}, axis_nan(1, NanMode::kPropagate), {t, {2, 1}}),
        I(t, {2, 1}, {5, hi}));
    expect_tensor_eq(
        run1(Op::REDUCE_MIN, {Operand::input(in)}, axis_nan(1, NanMode::kPropagate), {t, {2, 1}}),
        I(t, {2, 1}, {lo, -1}));
    expect_tensor_eq(run1(Op::REDUCE_MAX, {Operand::input(in)}, axis_nan(0, NanMode::kIgnore), {t, {1, 3}}),
                     I(t, {1, 3}, {3, hi, -1}));
    expect_tensor_eq(run1(Op::REDUCE_MIN, {Operand::input(in)}, axis_nan(0, NanMode::kIgnore), {t, {1, 3}}),
                     I(t, {1, 3}, {lo, 5, -7}));
    // A slice of only the extreme values: the accumulator's start value must not leak in.
    Tensor ext = I(t, {1, 2}, {lo, lo});
    expect_tensor_eq(
        run1(Op::REDUCE_MAX, {Operand::input(ext)}, axis_nan(1, NanMode::kPropagate), {t, {1, 1}}),
        I(t, {1, 1}, {lo}));
  }
}

TEST(ReduceMinMax, FloatTypesNanModes) {
  for (DType t : {DType::kFp16, DType::kBf16, DType::kFp32}) {
    SCOPED_TRACE(dtype_name(t));
    // rows: [1, NaN, -2], [NaN, NaN, NaN], [-inf, 0.5, inf]
    Tensor in = T(t, {3, 3}, {1, kNaN, -2, kNaN, kNaN, kNaN, -kInf, 0.5, kInf});
    // PROPAGATE: any NaN gives NaN.
    expect_tensor_eq(
        run1(Op::REDUCE_MAX, {Operand::input(in)}, axis_nan(1, NanMode::kPropagate), {t, {3, 1}}),
        T(t, {3, 1}, {kNaN, kNaN, kInf}));
    expect_tensor_eq(
        run1(Op::REDUCE_MIN, {Operand::input(in)}, axis_nan(1, NanMode::kPropagate), {t, {3, 1}}),
        T(t, {3, 1}, {kNaN, kNaN, -kInf}));
    // IGNORE: NaNs skipped; an all-NaN slice stays NaN (acc starts at NaN).
    expect_tensor_eq(run1(Op::REDUCE_MAX, {Operand::input(in)}, axis_nan(1, NanMode::kIgnore), {t, {3, 1}}),
                     T(t, {3, 1}, {1, kNaN, kInf}));
    expect_tensor_eq(run1(Op::REDUCE_MIN, {Operand::input(in)}, axis_nan(1, NanMode::kIgnore), {t, {3, 1}}),
                     T(t, {3, 1}, {-2, kNaN, -kInf}));
    // Column reduction: [1,NaN,-inf] [NaN,NaN,0.5] [-2,NaN,inf]
    expect_tensor_eq(run1(Op::REDUCE_MAX, {Operand::input(in)}, axis_nan(0, NanMode::kIgnore), {t, {1, 3}}),
                     T(t, {1, 3}, {1, 0.5, kInf}));
    expect_tensor_eq(run1(Op::REDUCE_MIN, {Operand::input(in)}, axis_nan(0, NanMode::kIgnore), {t, {1, 3}}),
                     T(t, {1, 3}, {-kInf, 0.5, -2}));
  }
}

TEST(ReduceSum, Int32AndRequireNoOverflow) {
  const int64_t hi = std::numeric_limits<int32_t>::max(), lo = std::numeric_limits<int32_t>::min();
  Tensor in = I(DType::kInt32, {2, 3}, {1, 2, 3, hi, -1, 1});
  expect_tensor_eq(run1(Op::REDUCE_SUM, {Operand::input(in)}, axis_attr(1), {DType::kInt32, {2, 1}}),
                   I(DType::kInt32, {2, 1}, {6, hi}));
  Tensor in2 = I(DType::kInt32, {2, 3}, {1, 2, 3, -4, 5, 6});
  expect_tensor_eq(run1(Op::REDUCE_SUM, {Operand::input(in2)}, axis_attr(0), {DType::kInt32, {1, 3}}),
                   I(DType::kInt32, {1, 3}, {-3, 7, 9}));
  // Partial sums must stay in range (apply_add_s REQUIREs, no wrap-around).
  for (std::vector<int64_t> v : {std::vector<int64_t>{hi, 1}, {lo, -1}, {hi, 1, -1}}) {
    Tensor bad = I(DType::kInt32, {static_cast<int64_t>(v.size())}, v);
    try {
      run1(Op::REDUCE_SUM, {Operand::input(bad)}, axis_attr(0), {DType::kInt32, {1}});
      ADD_FAILURE() << "no overflow error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kRuntime);
    }
  }
  Tensor edge = I(DType::kInt32, {2}, {lo, hi});
  expect_tensor_eq(run1(Op::REDUCE_SUM, {Operand::input(edge)}, axis_attr(0), {DType::kInt32, {1}}),
                   I(DType::kInt32, {1}, {-1}));
}

TEST(ReduceSum, FloatAccumulators) {
  // fp16 accumulates in fp16: 2048 + 1 = 2049 rounds (tie to even) to 2048, twice.
  expect_tensor_eq(run1(Op::REDUCE_SUM, {Operand::input(T(DType::kFp16, {3}, {2048, 1, 1}))}, axis_attr(0),
                        {DType::kFp16, {1}}),
                   T(DType::kFp16, {1}, {2048}));
  // bf16 accumulates in fp32: 256 + 1 + 1 = 258 (representable in bf16), where a bf16 accumulator
  // would have stayed at 256.
  expect_tensor_eq(run1(Op::REDUCE_SUM, {Operand::input(T(DType::kBf16, {3}, {256, 1, 1}))}, axis_attr(0),
                        {DType::kBf16, {1}}),
                   T(DType::kBf16, {1}, {258}));
  // fp32: 2^24 + 1 + 1: the first +1 is lost (tie to even), the second too.
  expect_tensor_eq(
      run1(Op::REDUCE_SUM, {Operand::input(F32({3}, {16777216, 1, 1}))}, axis_attr(0), {DType::kFp32, {1}}),
      F32({1}, {16777216}));
  for (DType t : {DType::kFp16, DType::kBf16, DType::kFp32}) {
    SCOPED_TRACE(dtype_name(t));
    Tensor in = T(t, {2, 2}, {1.5, -0.25, 2, kNaN});
    expect_tensor_eq(run1(Op::REDUCE_SUM, {Operand::input(in)}, axis_attr(1), {t, {2, 1}}),
                     T(t, {2, 1}, {1.25, kNaN}));
    expect_tensor_eq(run1(Op::REDUCE_SUM, {Operand::input(in)}, axis_attr(0), {t, {1, 2}}),
                     T(t, {1, 2}, {3.5, kNaN}));
    // inf + -inf = NaN
    expect_tensor_eq(run1(Op::REDUCE_SUM, {Operand::input(T(t, {2}, {kInf, -kInf}))}, axis_attr(0), {t, {1}}),
                     T(t, {1}, {kNaN}));
  }
}

TEST(ReduceProduct, FloatTypes) {
  for (DType t : {DType::kFp16, DType::kBf16, DType::kFp32}) {
    SCOPED_TRACE(dtype_name(t));
    Tensor in = T(t, {2, 3}, {2, -3, 0.5, -0.0, 4, 1});
    expect_tensor_eq(run1(Op::REDUCE_PRODUCT, {Operand::input(in)}, axis_attr(1), {t, {2, 1}}),
                     T(t, {2, 1}, {-3, -0.0}));
    expect_tensor_eq(run1(Op::REDUCE_PRODUCT, {Operand::input(in)}, axis_attr(0), {t, {1, 3}}),
                     T(t, {1, 3}, {-0.0, -12, 0.5}));
  }
  // fp16 products round to fp16 each step: (1+2^-10)^2 = 1 + 2^-9 + 2^-20 -> 1 + 2^-9.
  const double e = 1.0 + std::ldexp(1.0, -10);
  expect_tensor_eq(run1(Op::REDUCE_PRODUCT, {Operand::input(T(DType::kFp16, {2}, {e, e}))}, axis_attr(0),
                        {DType::kFp16, {1}}),
                   T(DType::kFp16, {1}, {1.0 + std::ldexp(1.0, -9)}));
  // 300 * 300 = 90000 overflows fp16 (max 65504) to inf.
  expect_tensor_eq(run1(Op::REDUCE_PRODUCT, {Operand::input(T(DType::kFp16, {2}, {300, 300}))}, axis_attr(0),
                        {DType::kFp16, {1}}),
                   T(DType::kFp16, {1}, {kInf}));
  // bf16 has fp32's range: 90000 rounds to 90112 (bf16 spacing is 512 in [65536, 131072)).
  expect_tensor_eq(run1(Op::REDUCE_PRODUCT, {Operand::input(T(DType::kBf16, {2}, {300, 300}))}, axis_attr(0),
                        {DType::kBf16, {1}}),
                   T(DType::kBf16, {1}, {90112}));
}

TEST(Reduce, BadAxisAndShapeFail) {
  Tensor in = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_THROW(run1(Op::REDUCE_SUM, {Operand::input(in)}, axis_attr(2), {DType::kFp32, {2, 1}}), Error);
  EXPECT_THROW(run1(Op::REDUCE_SUM, {Operand::input(in)}, axis_attr(1), {DType::kFp32, {2, 3}}), Error);
  EXPECT_THROW(
      run1(Op::REDUCE_MAX, {Operand::input(in)}, axis_nan(-1, NanMode::kPropagate), {DType::kFp32, {2, 1}}),
      Error);
}

}  // namespace
}  // namespace weft::testing
