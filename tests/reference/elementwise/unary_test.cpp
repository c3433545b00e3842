// CLAMP ERF SIGMOID TANH, the elementwise unary operators, TABLE, SELECT and the comparisons.
#include <cstring>

#include "reference/elementwise/elementwise_test_util.h"

namespace weft::testing {
namespace {

constexpr DType kFloatTypes[] = {DType::kFp16, DType::kBf16, DType::kFp32};

Attrs clamp_attrs(DType t, double lo, double hi, NanMode m) {
  return {{"min_val", Tensor::from_doubles({t, {}}, std::vector<double>{lo})},
          {"max_val", Tensor::from_doubles({t, {}}, std::vector<double>{hi})},
          {"nan_mode", static_cast<int64_t>(m)}};
}

TEST(ElementwiseUnary, Clamp) {
  expect_tensor_eq(un(Op::CLAMP, I(DType::kInt8, {4}, {-128, -5, 3, 127}), DType::kInt8,
                      clamp_attrs(DType::kInt8, -4, 100, NanMode::kPropagate)),
                   I(DType::kInt8, {4}, {-4, -4, 3, 100}));
  expect_tensor_eq(un(Op::CLAMP, I(DType::kInt16, {3}, {-32768, 0, 32767}), DType::kInt16,
                      clamp_attrs(DType::kInt16, -1000, 1000, NanMode::kPropagate)),
                   I(DType::kInt16, {3}, {-1000, 0, 1000}));
  for (DType t : kFloatTypes) {
    Tensor in = T(t, {5}, {-kInf, -2, 0.5, kInf, kNaN});
    // PROPAGATE keeps NaN; IGNORE: max_s(NaN, min) = min, then min_s(min, max) = min.
    expect_tensor_eq(un(Op::CLAMP, in, t, clamp_attrs(t, -1, 1, NanMode::kPropagate)),
                     T(t, {5}, {-1, -1, 0.5, 1, kNaN}));
    expect_tensor_eq(un(Op::CLAMP, in, t, clamp_attrs(t, -1, 1, NanMode::kIgnore)),
                     T(t, {5}, {-1, -1, 0.5, 1, -1}));
  }
  expect_runtime_error(
      [] {
        un(Op::CLAMP, F32({1}, {0}), DType::kFp32, clamp_attrs(DType::kFp32, 1, -1, NanMode::kPropagate));
      },
      "max_val < min_val");
  expect_runtime_error(
      [] {
        un(Op::CLAMP, F32({1}, {0}), DType::kFp32, clamp_attrs(DType::kFp32, kNaN, 1, NanMode::kPropagate));
      },
      "NaN");
  expect_runtime_error(
      [] {
        un(Op::CLAMP, I(DType::kInt8, {1}, {0}), DType::kInt8,
           clamp_attrs(DType::kInt8, 5, 4, NanMode::kPropagate));
      },
      "max_val < min_val");
}

TEST(ElementwiseUnary, Activations) {
  for (DType t : kFloatTypes) {
    SCOPED_TRACE(dtype_name(t));
    const double tol = t == DType::kFp32 ? 1e-6 : (t == DType::kFp16 ? 1e-3 : 1e-2);
    expect_tensor_eq(un(Op::SIGMOID, T(t, {5}, {0, -kInf, kInf, 2, kNaN}), t),
                     T(t, {5}, {0.5, 0, 1, 1 / (1 + std::exp(-2.0)), kNaN}), tol);
    expect_tensor_eq(un(Op::TANH, T(t, {5}, {0, -kInf, kInf, 0.5, kNaN}), t),
                     T(t, {5}, {0, -1, 1, std::tanh(0.5), kNaN}), tol);
    expect_tensor_eq(un(Op::ERF, T(t, {5}, {0, -kInf, kInf, 1, kNaN}), t),
                     T(t, {5}, {0, -1, 1, std::erf(1.0), kNaN}), tol);
    // Odd functions keep the sign of zero.
    expect_tensor_eq(un(Op::TANH, T(t, {1}, {-0.0}), t), T(t, {1}, {-0.0}));
    expect_tensor_eq(un(Op::ERF, T(t, {1}, {-0.0}), t), T(t, {1}, {-0.0}));
  }
}

TEST(ElementwiseUnary, FloatMath) {
  for (DType t : kFloatTypes) {
    SCOPED_TRACE(dtype_name(t));
    const double tol = t == DType::kFp32 ? 1e-6 : (t == DType::kFp16 ? 1e-3 : 1e-2);
    expect_tensor_eq(un(Op::CEIL, T(t, {5}, {-0.5, 1.25, -2, kInf, kNaN}), t),
                     T(t, {5}, {-0.0, 2, -2, kInf, kNaN}));
    expect_tensor_eq(un(Op::FLOOR, T(t, {5}, {-0.5, 1.25, 0.5, -kInf, kNaN}), t),
                     T(t, {5}, {-1, 1, 0, -kInf, kNaN}));
    expect_tensor_eq(un(Op::EXP, T(t, {4}, {0, -kInf, kInf, kNaN}), t), T(t, {4}, {1, 0, kInf, kNaN}));
    expect_tensor_eq(un(Op::EXP, T(t, {1}, {1}), t), T(t, {1}, {std::exp(1.0)}), tol * 3);
    expect_tensor_eq(un(Op::LOG, T(t, {5}, {1, 0, -1, kInf, -0.0}), t),
                     T(t, {5}, {0, -kInf, kNaN, kInf, -kInf}));
    expect_tensor_eq(un(Op::RECIPROCAL, T(t, {5}, {2, 0, -0.0, kInf, -4}), t),
                     T(t, {5}, {0.5, kInf, -kInf, 0, -0.25}));
    // Special values per the chapter tables: RSQRT(-0) = -inf, RSQRT(-inf) = NaN, LOG(-inf) = NaN.
    expect_tensor_eq(un(Op::RSQRT, T(t, {7}, {4, 0, kInf, -1, 0.25, -0.0, -kInf}), t),
                     T(t, {7}, {0.5, kInf, 0, kNaN, 2, -kInf, kNaN}));
    expect_tensor_eq(un(Op::LOG, T(t, {2}, {-kInf, kNaN}), t), T(t, {2}, {kNaN, kNaN}));
    expect_tensor_eq(un(Op::COS, T(t, {2}, {-0.0, -kInf}), t), T(t, {2}, {1, kNaN}));
    expect_tensor_eq(un(Op::RECIPROCAL, T(t, {2}, {-kInf, kNaN}), t), T(t, {2}, {-0.0, kNaN}));
    expect_tensor_eq(un(Op::SIN, T(t, {4}, {0, -0.0, kInf, 1}), t), T(t, {4}, {0, -0.0, kNaN, std::sin(1.0)}),
                     0);
    expect_tensor_eq(un(Op::COS, T(t, {3}, {0, kInf, 1}), t), T(t, {3}, {1, kNaN, std::cos(1.0)}), tol);
    expect_tensor_eq(un(Op::ABS, T(t, {5}, {-0.0, -3, kNaN, -kInf, 2}), t),
                     T(t, {5}, {0.0, 3, kNaN, kInf, 2}));
  }
  // fp32 subnormal reciprocal overflows to inf; exact ops on a subnormal keep it.
  expect_tensor_eq(un(Op::RECIPROCAL, F32({1}, {0x1p-140}), DType::kFp32), F32({1}, {kInf}));
  expect_tensor_eq(un(Op::ABS, F32({1}, {-0x1p-140}), DType::kFp32), F32({1}, {0x1p-140}));
  expect_tensor_eq(un(Op::FLOOR, F32({1}, {0x1p-140}), DType::kFp32), F32({1}, {0}));
}

TEST(ElementwiseUnary, SinIsRoundedToType) {
  // sin(1) = 0.8414709848...: the fp16 result is the nearest fp16 value 0.84130859375 (0x3ABB).
  Tensor got = un(Op::SIN, T(DType::kFp16, {1}, {1}), DType::kFp16);
  EXPECT_EQ(got.data<uint16_t>()[0], 0x3ABB);
}

TEST(ElementwiseUnary, IntegerUnary) {
  expect_tensor_eq(un(Op::ABS, I(DType::kInt32, {4}, {-5, 5, 0, kI32Max}), DType::kInt32),
                   I(DType::kInt32, {4}, {5, 5, 0, kI32Max}));
  expect_runtime_error([] { un(Op::ABS, I(DType::kInt32, {1}, {kI32Min}), DType::kInt32); }, "apply_sub_s");
  for (DType t : {DType::kInt8, DType::kInt16, DType::kInt32}) {
    expect_tensor_eq(un(Op::BITWISE_NOT, I(t, {3}, {0, -1, 5}), t), I(t, {3}, {-1, 0, -6}));
  }
  expect_tensor_eq(un(Op::BITWISE_NOT, I(DType::kInt8, {1}, {-128}), DType::kInt8),
                   I(DType::kInt8, {1}, {127}));
  expect_tensor_eq(un(Op::CLZ, I(DType::kInt32, {6}, {0, 1, -1, kI32Max, 0x10000, kI32Min}), DType::kInt32),
                   I(DType::kInt32, {6}, {32, 31, 0, 1, 15, 0}));
  expect_tensor_eq(un(Op::LOGICAL_NOT, I(DType::kBool, {2}, {0, 1}), DType::kBool),
                   I(DType::kBool, {2}, {1, 0}));
}

Tensor negate(const Tensor& x, int64_t izp, int64_t ozp) {
  const DType t = x.dtype();
  return run1(
      Op::NEGATE,
      {Operand::input(x), Operand::input(T(t, {1}, {double(izp)})), Operand::input(T(t, {1}, {double(ozp)}))},
      {}, {t, x.shape()});
}

TEST(ElementwiseUnary, Negate) {
  // i8 with zero points: -(10 - 3) + (-2) = -9; -(-128 - 0) + 0 = 128 -> clipped to 127;
  // -(127 - (-128)) + 127 = -128; -(-100 - 100) + 100 = 300 -> 127.
  expect_tensor_eq(negate(I(DType::kInt8, {1}, {10}), 3, -2), I(DType::kInt8, {1}, {-9}));
  expect_tensor_eq(negate(I(DType::kInt8, {2}, {-128, 0}), 0, 0), I(DType::kInt8, {2}, {127, 0}));
  expect_tensor_eq(negate(I(DType::kInt8, {1}, {127}), -128, 127), I(DType::kInt8, {1}, {-128}));
  expect_tensor_eq(negate(I(DType::kInt8, {1}, {-100}), 100, 100), I(DType::kInt8, {1}, {127}));
  // i16 (acc i32): -(-32768) = 32768 clips to 32767.
  expect_tensor_eq(negate(I(DType::kInt16, {2}, {-32768, 5}), 0, 0), I(DType::kInt16, {2}, {32767, -5}));
  expect_tensor_eq(negate(I(DType::kInt32, {2}, {kI32Max, -7}), 0, 0), I(DType::kInt32, {2}, {-kI32Max, 7}));
  // i32: 0 - INT_MIN overflows acc_t = i32: REQUIRE.
  expect_runtime_error([] { negate(I(DType::kInt32, {1}, {kI32Min}), 0, 0); }, "apply_sub_s");
  expect_runtime_error([] { negate(I(DType::kInt16, {1}, {1}), 1, 0); }, "input1_zp and output_zp must be 0");
  expect_runtime_error([] { negate(F32({1}, {1}), 0, 1); }, "zero");
  for (DType t : kFloatTypes) {
    expect_tensor_eq(negate(T(t, {5}, {1.5, 0.0, -0.0, kInf, kNaN}), 0, 0),
                     T(t, {5}, {-1.5, -0.0, 0.0, -kInf, kNaN}));
  }
}

TEST(ElementwiseUnary, TableInt8) {
  // table[i] = 127 - i (as i8 wrap is not needed: values in [-128, 127]); result = table[v + 128].
  std::vector<int64_t> tab(256);
  for (int i = 0; i < 256; ++i) tab[i] = 127 - i;
  Tensor got = run1(Op::TABLE,
                    {Operand::input(I(DType::kInt8, {4}, {-128, -1, 0, 127})),
                     Operand::constant(I(DType::kInt8, {256}, tab))},
                    {}, {DType::kInt8, {4}});
  expect_tensor_eq(got, I(DType::kInt8, {4}, {127, 0, -1, -128}));
  expect_runtime_error(
      [] {
        run1(Op::TABLE,
             {Operand::input(I(DType::kInt8, {1}, {0})),
              Operand::constant(I(DType::kInt8, {255}, std::vector<int64_t>(255)))},
             {}, {DType::kInt8, {1}});
      },
      "length(table)");
}

TEST(ElementwiseUnary, TableInt16) {
  // table[i] = 10 * i - 2560 (slopes of 10). For v: index = (v + 32768) >> 7, fraction = v & 0x7f,
  // result = table[index] * 128 + (table[index + 1] - table[index]) * fraction.
  std::vector<int64_t> tab(513);
  for (int i = 0; i < 513; ++i) tab[i] = 10 * i - 2560;
  // v = -32768: index 0, fraction 0 -> -2560*128 = -327680.
  // v = 0: index 256, fraction 0 -> 0.   v = 1: index 256, fraction 1 -> 0 + 10 = 10.
  // v = -1: index 255 (32767 >> 7), fraction 127 -> -10*128 + 10*127 = -10.
  // v = 32767: index 511, fraction 127 -> 2550*128 + 10*127 = 327670.
  Tensor got = run1(Op::TABLE,
                    {Operand::input(I(DType::kInt16, {5}, {-32768, 0, 1, -1, 32767})),
                     Operand::constant(I(DType::kInt16, {513}, tab))},
                    {}, {DType::kInt32, {5}});
  expect_tensor_eq(got, I(DType::kInt32, {5}, {-327680, 0, 10, -10, 327670}));
  // A slope outside i16 (table[0] = -32768, table[1] = 32767) is a REQUIRE failure.
  std::vector<int64_t> bad(513, 0);
  bad[0] = -32768;
  bad[1] = 32767;
  expect_runtime_error(
      [&] {
        run1(Op::TABLE,
             {Operand::input(I(DType::kInt16, {1}, {-32768})),
              Operand::constant(I(DType::kInt16, {513}, bad))},
             {}, {DType::kInt32, {1}});
      },
      "slope");
  expect_runtime_error(
      [] {
        run1(Op::TABLE,
             {Operand::input(I(DType::kInt16, {1}, {0})),
              Operand::constant(I(DType::kInt16, {256}, std::vector<int64_t>(256)))},
             {}, {DType::kInt32, {1}});
      },
      "length(table)");
}

TEST(ElementwiseSelect, EveryTypeAndBroadcast) {
  for (const TypeSupport& row : op_def(Op::SELECT).types) {
    const DType t = row.types[0];
    SCOPED_TRACE(dtype_name(t));
    // cond [2,1] broadcast against [1,2] operands -> [2,2]: row 0 takes input2, row 1 input3.
    Tensor c = I(DType::kBool, {2, 1}, {1, 0});
    Tensor a = T(t, {1, 2}, {1, 0}), b = T(t, {1, 2}, {0, 1});
    Tensor got = run1(Op::SELECT, {Operand::input(c), Operand::input(a), Operand::input(b)}, {}, {t, {2, 2}});
    expect_tensor_eq(got, T(t, {2, 2}, {1, 0, 0, 1}));
  }
  // NaN and -0 pass through unchanged.
  Tensor got = run1(Op::SELECT,
                    {Operand::input(I(DType::kBool, {2}, {1, 0})), Operand::input(F32({2}, {kNaN, 1})),
                     Operand::input(F32({2}, {2, -0.0}))},
                    {}, {DType::kFp32, {2}});
  expect_tensor_eq(got, F32({2}, {kNaN, -0.0}));
}

TEST(ElementwiseCompare, EveryTypeAndSpecials) {
  for (Op op : {Op::EQUAL, Op::GREATER, Op::GREATER_EQUAL}) {
    for (const TypeSupport& row : op_def(op).types) {
      const DType t = row.types[0];
      SCOPED_TRACE(std::string(op_name(op)) + " " + dtype_name(t));
      Tensor a = T(t, {3}, {1, 2, 3}), b = T(t, {3}, {2, 2, 2});
      std::vector<int64_t> want = op == Op::EQUAL     ? std::vector<int64_t>{0, 1, 0}
                                  : op == Op::GREATER ? std::vector<int64_t>{0, 0, 1}
                                                      : std::vector<int64_t>{0, 1, 1};
      expect_tensor_eq(bin(op, a, b, DType::kBool), I(DType::kBool, {3}, want));
    }
  }
  // NaN compares false everywhere; +0 == -0; infinities order.
  Tensor a = F32({4}, {kNaN, 0.0, kInf, 1}), b = F32({4}, {kNaN, -0.0, 1e38, kNaN});
  expect_tensor_eq(bin(Op::EQUAL, a, b, DType::kBool), I(DType::kBool, {4}, {0, 1, 0, 0}));
  expect_tensor_eq(bin(Op::GREATER, a, b, DType::kBool), I(DType::kBool, {4}, {0, 0, 1, 0}));
  expect_tensor_eq(bin(Op::GREATER_EQUAL, a, b, DType::kBool), I(DType::kBool, {4}, {0, 1, 1, 0}));
  expect_tensor_eq(
      bin(Op::GREATER, I(DType::kInt32, {2}, {kI32Min, kI32Max}), I(DType::kInt32, {1}, {0}), DType::kBool),
      I(DType::kBool, {2}, {0, 1}));
}

}  // namespace
}  // namespace weft::testing
