// ADD SUB MUL INTDIV MAXIMUM MINIMUM POW, shifts, bitwise and logical binary operators, broadcasting.
#include "reference/elementwise/elementwise_test_util.h"

namespace weft::testing {
namespace {

// Every TypeSupport row of the arithmetic binary operators, on values exact in every type.
TEST(ElementwiseBinary, EveryTableRowAddSubMaxMinMul) {
  struct Case {
    Op op;
    std::vector<double> want;
  };
  // a = {1, -2, 3.5 (3 for ints)}, b = {2, 4, -0.5 (-1 for ints)}
  for (Op op : {Op::ADD, Op::SUB, Op::MAXIMUM, Op::MINIMUM, Op::MUL}) {
    for (const TypeSupport& row : op_def(op).types) {
      const DType in = row.types[0];
      const DType out = op == Op::MUL ? row.types[1] : in;
      const bool fl = is_float(in);
      std::vector<double> a = {1, -2, fl ? 3.5 : 3}, b = {2, 4, fl ? -0.5 : -1};
      std::vector<double> want(3);
      for (int i = 0; i < 3; ++i) {
        switch (op) {
          case Op::ADD:
            want[i] = a[i] + b[i];
            break;
          case Op::SUB:
            want[i] = a[i] - b[i];
            break;
          case Op::MAXIMUM:
            want[i] = std::max(a[i], b[i]);
            break;
          case Op::MINIMUM:
            want[i] = std::min(a[i], b[i]);
            break;
          default:
            want[i] = a[i] * b[i];
            break;
        }
      }
      std::vector<Operand> ops = {Operand::input(T(in, {3}, a)), Operand::input(T(in, {3}, b))};
      if (op == Op::MUL) ops.push_back(Operand::input(I(DType::kInt8, {1}, {0})));
      Tensor got = run1(op, ops, {}, {out, {3}});
      SCOPED_TRACE(std::string(op_name(op)) + " " + row.mode);
      expect_tensor_eq(got, T(out, {3}, want));
    }
  }
}

TEST(ElementwiseBinary, BroadcastPatterns) {
  // [2,1,4] + [1,3,1] -> [2,3,4]; out[i][j][k] = a[i][0][k] + b[0][j][0].
  std::vector<double> a(8), b(3), want(24);
  for (int i = 0; i < 8; ++i) a[i] = 100 * i;
  for (int j = 0; j < 3; ++j) b[j] = j + 1;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) want[(i * 3 + j) * 4 + k] = a[i * 4 + k] + b[j];
  expect_tensor_eq(bin(Op::ADD, F32({2, 1, 4}, a), F32({1, 3, 1}, b), DType::kFp32), F32({2, 3, 4}, want));
  // Same, i32 and the operands swapped (SUB is not commutative): b - a.
  std::vector<int64_t> ai(a.begin(), a.end()), bi(b.begin(), b.end()), wi(24);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) wi[(i * 3 + j) * 4 + k] = bi[j] - ai[i * 4 + k];
  expect_tensor_eq(
      bin(Op::SUB, I(DType::kInt32, {1, 3, 1}, bi), I(DType::kInt32, {2, 1, 4}, ai), DType::kInt32),
      I(DType::kInt32, {2, 3, 4}, wi));
  // Rank 0 operands, and a [1,1] operand broadcast against [2,2].
  expect_tensor_eq(bin(Op::ADD, F32({}, {1.5}), F32({}, {2}), DType::kFp32), F32({}, {3.5}));
  expect_tensor_eq(bin(Op::SUB, F32({2, 2}, {1, 2, 3, 4}), F32({1, 1}, {-2}), DType::kFp32, {}),
                   F32({2, 2}, {3, 4, 5, 6}));
}

TEST(ElementwiseBinary, BroadcastRank4BiasAndMulInt8) {
  // NCHW-style bias [1,2,1,1] over [2,2,2,3] and a [2,1,1,3] operand: out[n][c][h][w] = a[...] * k[n][w] +
  // bias[c].
  std::vector<int64_t> a(24), k(6), want(24);
  for (int i = 0; i < 24; ++i) a[i] = i - 12;
  for (int i = 0; i < 6; ++i) k[i] = i % 2 ? -3 : 2;
  const int64_t bias[2] = {100, -100};
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 2; ++c)
      for (int h = 0; h < 2; ++h)
        for (int w = 0; w < 3; ++w) {
          const int i = ((n * 2 + c) * 2 + h) * 3 + w;
          want[i] = a[i] * k[n * 3 + w] + bias[c];
        }
  Tensor prod =
      run1(Op::MUL,
           {Operand::input(I(DType::kInt8, {2, 2, 2, 3}, a)),
            Operand::input(I(DType::kInt8, {2, 1, 1, 3}, k)), Operand::input(I(DType::kInt8, {1}, {0}))},
           {}, {DType::kInt32, {2, 2, 2, 3}});
  Tensor got = bin(Op::ADD, prod, I(DType::kInt32, {1, 2, 1, 1}, {100, -100}), DType::kInt32);
  expect_tensor_eq(got, I(DType::kInt32, {2, 2, 2, 3}, want));
}

TEST(ElementwiseBinary, BroadcastShapeMismatchIsRejected) {
  // Output [2,3] from [1,3] and [1,3]: broadcast_shape is [1,3], so the ERROR_IF rejects it.
  expect_runtime_error(
      [] {
        run1(Op::ADD, {Operand::input(F32({1, 3}, {1, 2, 3})), Operand::input(F32({1, 3}, {1, 2, 3}))}, {},
             {DType::kFp32, {2, 3}});
      },
      "broadcast shape");
  expect_runtime_error(
      [] {
        run1(Op::ADD, {Operand::input(F32({2}, {1, 2})), Operand::input(F32({3}, {1, 2, 3}))}, {},
             {DType::kFp32, {3}});
      },
      "broadcast");
}

TEST(ElementwiseBinary, AddSubIntegerOverflowRequire) {
  // apply_add_s / apply_sub_s REQUIRE the int64 result to fit i32 (no wrap-around).
  expect_tensor_eq(
      bin(Op::ADD, I(DType::kInt32, {2}, {kI32Max, kI32Min}), I(DType::kInt32, {2}, {0, 0}), DType::kInt32),
      I(DType::kInt32, {2}, {kI32Max, kI32Min}));
  expect_runtime_error(
      [] { bin(Op::ADD, I(DType::kInt32, {1}, {kI32Max}), I(DType::kInt32, {1}, {1}), DType::kInt32); },
      "apply_add_s");
  expect_runtime_error(
      [] { bin(Op::SUB, I(DType::kInt32, {1}, {kI32Min}), I(DType::kInt32, {1}, {1}), DType::kInt32); },
      "apply_sub_s");
}

TEST(ElementwiseBinary, FloatRoundingAndSpecials) {
  // fp16: 1 + 2^-11 is halfway between 1 and 1 + 2^-10 -> ties to even gives 1;
  // 1 + 3*2^-11 is halfway between 1+2^-10 and 1+2^-9 -> even mantissa 1+2^-9.
  expect_tensor_eq(
      bin(Op::ADD, T(DType::kFp16, {2}, {1, 1}), T(DType::kFp16, {2}, {0x1p-11, 0x1.8p-10}), DType::kFp16),
      T(DType::kFp16, {2}, {1, 1 + 0x1p-9}));
  // fp16 overflow: 65504 + 65504 = inf; bf16 keeps 8 significant bits: 256 + 1 = 256 (tie to even).
  expect_tensor_eq(bin(Op::ADD, T(DType::kFp16, {1}, {65504}), T(DType::kFp16, {1}, {65504}), DType::kFp16),
                   T(DType::kFp16, {1}, {kInf}));
  expect_tensor_eq(bin(Op::ADD, T(DType::kBf16, {1}, {256}), T(DType::kBf16, {1}, {1}), DType::kBf16),
                   T(DType::kBf16, {1}, {256}));
  // inf - inf = NaN, -0 + -0 = -0, 0 * -1 = -0, subnormal fp32 product kept.
  expect_tensor_eq(bin(Op::SUB, F32({1}, {kInf}), F32({1}, {kInf}), DType::kFp32), F32({1}, {kNaN}));
  expect_tensor_eq(bin(Op::ADD, F32({1}, {-0.0}), F32({1}, {-0.0}), DType::kFp32), F32({1}, {-0.0}));
  Tensor shift0 = I(DType::kInt8, {1}, {0});
  expect_tensor_eq(run1(Op::MUL,
                        {Operand::input(F32({2}, {0.0, 0x1p-100})), Operand::input(F32({2}, {-1, 0x1p-40})),
                         Operand::input(shift0)},
                        {}, {DType::kFp32, {2}}),
                   F32({2}, {-0.0, 0x1p-140}));
}

TEST(ElementwiseBinary, MaxMinNanModes) {
  Tensor a = F32({4}, {kNaN, 1, kNaN, -0.0}), b = F32({4}, {2, kNaN, kNaN, 0.0});
  // PROPAGATE: any NaN operand gives NaN. IGNORE: the other operand (NaN only if both are NaN).
  // Zeros: apply_max_s returns a when a >= b, so max(-0, +0) = -0 and min(-0, +0) = +0 (b).
  expect_tensor_eq(bin(Op::MAXIMUM, a, b, DType::kFp32, nan_mode(NanMode::kPropagate)),
                   F32({4}, {kNaN, kNaN, kNaN, -0.0}));
  expect_tensor_eq(bin(Op::MAXIMUM, a, b, DType::kFp32, nan_mode(NanMode::kIgnore)),
                   F32({4}, {2, 1, kNaN, -0.0}));
  expect_tensor_eq(bin(Op::MINIMUM, a, b, DType::kFp32, nan_mode(NanMode::kPropagate)),
                   F32({4}, {kNaN, kNaN, kNaN, 0.0}));
  expect_tensor_eq(bin(Op::MINIMUM, a, b, DType::kFp32, nan_mode(NanMode::kIgnore)),
                   F32({4}, {2, 1, kNaN, 0.0}));
  for (DType t : {DType::kFp16, DType::kBf16}) {
    expect_tensor_eq(
        bin(Op::MAXIMUM, T(t, {2}, {kNaN, -kInf}), T(t, {2}, {3, kInf}), t, nan_mode(NanMode::kIgnore)),
        T(t, {2}, {3, kInf}));
  }
  expect_tensor_eq(bin(Op::MAXIMUM, I(DType::kInt32, {2}, {kI32Min, 5}), I(DType::kInt32, {2}, {kI32Max, -5}),
                       DType::kInt32, nan_mode(NanMode::kPropagate)),
                   I(DType::kInt32, {2}, {kI32Max, 5}));
  expect_tensor_eq(bin(Op::MINIMUM, I(DType::kInt32, {2}, {kI32Min, 5}), I(DType::kInt32, {2}, {kI32Max, -5}),
                       DType::kInt32, nan_mode(NanMode::kPropagate)),
                   I(DType::kInt32, {2}, {kI32Min, -5}));
}

Tensor mul(const Tensor& a, const Tensor& b, int64_t shift, DType out) {
  return run1(Op::MUL, {Operand::input(a), Operand::input(b), Operand::input(I(DType::kInt8, {1}, {shift}))},
              {}, {out, broadcast_shape(a.shape(), b.shape())});
}

TEST(ElementwiseBinary, MulIntegers) {
  // i8/i16 products are exact in i32.
  expect_tensor_eq(
      mul(I(DType::kInt8, {3}, {-128, 127, -128}), I(DType::kInt8, {3}, {-128, 127, 127}), 0, DType::kInt32),
      I(DType::kInt32, {3}, {16384, 16129, -16256}));
  expect_tensor_eq(
      mul(I(DType::kInt16, {2}, {-32768, 32767}), I(DType::kInt16, {2}, {-32768, -32768}), 0, DType::kInt32),
      I(DType::kInt32, {2}, {1073741824, -1073709056}));
  // i32, shift 0: low 32 bits. 65536^2 = 2^32 -> 0; INT_MIN * -1 = 2^31 -> INT_MIN; 46341^2 = 2147488281 ->
  // -2147479015.
  expect_tensor_eq(mul(I(DType::kInt32, {3}, {65536, kI32Min, 46341}),
                       I(DType::kInt32, {3}, {65536, -1, 46341}), 0, DType::kInt32),
                   I(DType::kInt32, {3}, {0, kI32Min, -2147479015}));
  // i32 with shift: (p + 2^(shift-1)) >> shift, an arithmetic (floor) shift.
  //  3*5=15, shift 1: 16>>1 = 8;  -15, shift 1: -14>>1 = -7;  -15, shift 2: -13>>2 = floor(-3.25) = -4;
  //  7*1, shift 1: 8>>1 = 4 (3.5 rounds up); -7, shift 1: -6>>1 = -3 (-3.5 rounds up).
  expect_tensor_eq(mul(I(DType::kInt32, {3}, {3, -3, 7}), I(DType::kInt32, {3}, {5, 5, 1}), 1, DType::kInt32),
                   I(DType::kInt32, {3}, {8, -7, 4}));
  expect_tensor_eq(mul(I(DType::kInt32, {2}, {-3, -7}), I(DType::kInt32, {2}, {5, 1}), 2, DType::kInt32),
                   I(DType::kInt32, {2}, {-4, -2}));
  // shift 63: INT_MIN^2 = 2^62; (2^62 + 2^62) >> 63 = 1 (the int64 sum would overflow if computed naively).
  // INT_MAX * INT_MIN = -2^62 + 2^31; adding 2^62 gives 2^31, >> 63 = 0.
  expect_tensor_eq(mul(I(DType::kInt32, {2}, {kI32Min, kI32Max}), I(DType::kInt32, {2}, {kI32Min, kI32Min}),
                       63, DType::kInt32),
                   I(DType::kInt32, {2}, {1, 0}));
}

TEST(ElementwiseBinary, MulRequires) {
  // Rounded product must fit i32: INT_MAX^2 >> 1 does not.
  expect_runtime_error(
      [] { mul(I(DType::kInt32, {1}, {kI32Max}), I(DType::kInt32, {1}, {kI32Max}), 1, DType::kInt32); },
      "fits i32");
  expect_runtime_error([] { mul(I(DType::kInt32, {1}, {1}), I(DType::kInt32, {1}, {1}), 64, DType::kInt32); },
                       "shift <= 63");
  expect_runtime_error([] { mul(I(DType::kInt32, {1}, {1}), I(DType::kInt32, {1}, {1}), -1, DType::kInt32); },
                       "shift <= 63");
  expect_runtime_error([] { mul(I(DType::kInt8, {1}, {1}), I(DType::kInt8, {1}, {1}), 1, DType::kInt32); },
                       "shift == 0");
  expect_runtime_error([] { mul(F32({1}, {1}), F32({1}, {1}), 2, DType::kFp32); }, "shift == 0");
}

TEST(ElementwiseBinary, IntDiv) {
  // Truncation toward zero.
  expect_tensor_eq(bin(Op::INTDIV, I(DType::kInt32, {5}, {7, -7, 7, -7, kI32Min}),
                       I(DType::kInt32, {5}, {2, 2, -2, -2, 1}), DType::kInt32),
                   I(DType::kInt32, {5}, {3, -3, -3, 3, kI32Min}));
  expect_runtime_error(
      [] { bin(Op::INTDIV, I(DType::kInt32, {1}, {1}), I(DType::kInt32, {1}, {0}), DType::kInt32); },
      "divisor != 0");
  expect_runtime_error(
      [] { bin(Op::INTDIV, I(DType::kInt32, {1}, {kI32Min}), I(DType::kInt32, {1}, {-1}), DType::kInt32); },
      "fits i32");
}

TEST(ElementwiseBinary, Pow) {
  for (DType t : {DType::kFp16, DType::kBf16, DType::kFp32}) {
    expect_tensor_eq(bin(Op::POW, T(t, {4}, {2, 4, 0, 9}), T(t, {4}, {3, 0.5, 2, 0}), t),
                     T(t, {4}, {8, 2, 0, 1}));
  }
  expect_runtime_error([] { bin(Op::POW, F32({1}, {-2}), F32({1}, {2}), DType::kFp32); }, "input1 >= 0");
  expect_runtime_error([] { bin(Op::POW, F32({1}, {0}), F32({1}, {0}), DType::kFp32); }, "input2 > 0");
  expect_runtime_error([] { bin(Op::POW, F32({1}, {kNaN}), F32({1}, {1}), DType::kFp32); }, "NaN");
  expect_runtime_error([] { bin(Op::POW, F32({1}, {2}), F32({1}, {kInf}), DType::kFp32); }, "finite");
}

Attrs round_attr(bool r) { return {{"round", r}}; }

TEST(ElementwiseBinary, ArithmeticRightShift) {
  // i8: -7 >> 1 = -4 (floor); rounding adds bit 0 of -7 (1) -> -3. 7 >> 1 = 3, rounded 4.
  // -128 >> 7 = -1; bit 6 of -128 (0b10000000) is 0, so rounding keeps -1. 127 >> 7 = 0, bit 6 = 1 -> 1.
  Tensor a8 = I(DType::kInt8, {5}, {-7, 7, -128, 127, 5}), s8 = I(DType::kInt8, {5}, {1, 1, 7, 7, 0});
  expect_tensor_eq(bin(Op::ARITHMETIC_RIGHT_SHIFT, a8, s8, DType::kInt8, round_attr(false)),
                   I(DType::kInt8, {5}, {-4, 3, -1, 0, 5}));
  expect_tensor_eq(bin(Op::ARITHMETIC_RIGHT_SHIFT, a8, s8, DType::kInt8, round_attr(true)),
                   I(DType::kInt8, {5}, {-3, 4, -1, 1, 5}));
  // i16: -32768 >> 15 = -1; i32: INT_MIN >> 31 = -1, INT_MAX >> 31 rounded = 0 + bit 30 (1) = 1.
  expect_tensor_eq(bin(Op::ARITHMETIC_RIGHT_SHIFT, I(DType::kInt16, {2}, {-32768, 32767}),
                       I(DType::kInt16, {2}, {15, 15}), DType::kInt16, round_attr(true)),
                   I(DType::kInt16, {2}, {-1, 1}));
  expect_tensor_eq(bin(Op::ARITHMETIC_RIGHT_SHIFT, I(DType::kInt32, {3}, {kI32Min, kI32Max, -6}),
                       I(DType::kInt32, {3}, {31, 31, 2}), DType::kInt32, round_attr(true)),
                   I(DType::kInt32, {3}, {-1, 1, -1}));  // -6 >> 2 = -2, bit 1 of -6 (..11010) is 1 -> -1
  for (auto [t, bad] : {std::pair{DType::kInt8, 8}, {DType::kInt16, 16}, {DType::kInt32, 32}}) {
    expect_runtime_error(
        [t = t, bad = bad] {
          bin(Op::ARITHMETIC_RIGHT_SHIFT, I(t, {1}, {1}), I(t, {1}, {bad}), t, round_attr(false));
        },
        "shift amount");
    expect_runtime_error(
        [t = t] { bin(Op::ARITHMETIC_RIGHT_SHIFT, I(t, {1}, {1}), I(t, {1}, {-1}), t, round_attr(false)); },
        "shift amount");
  }
}

TEST(ElementwiseBinary, LogicalShifts) {
  // Left: bits past the top are dropped: i8 0x40 << 1 = 0x80 = -128, 3 << 7 = 0x180 -> 0x80.
  expect_tensor_eq(bin(Op::LOGICAL_LEFT_SHIFT, I(DType::kInt8, {3}, {0x40, 3, -1}),
                       I(DType::kInt8, {3}, {1, 7, 0}), DType::kInt8),
                   I(DType::kInt8, {3}, {-128, -128, -1}));
  expect_tensor_eq(
      bin(Op::LOGICAL_LEFT_SHIFT, I(DType::kInt16, {1}, {3}), I(DType::kInt16, {1}, {15}), DType::kInt16),
      I(DType::kInt16, {1}, {-32768}));
  expect_tensor_eq(bin(Op::LOGICAL_LEFT_SHIFT, I(DType::kInt32, {2}, {1, -1}), I(DType::kInt32, {2}, {31, 4}),
                       DType::kInt32),
                   I(DType::kInt32, {2}, {kI32Min, -16}));
  // Right: zero-extended from the element's own width: i8 -1 >> 1 = 0x7f, i16 -1 >> 15 = 1.
  expect_tensor_eq(bin(Op::LOGICAL_RIGHT_SHIFT, I(DType::kInt8, {2}, {-1, -128}),
                       I(DType::kInt8, {2}, {1, 7}), DType::kInt8),
                   I(DType::kInt8, {2}, {127, 1}));
  expect_tensor_eq(
      bin(Op::LOGICAL_RIGHT_SHIFT, I(DType::kInt16, {1}, {-1}), I(DType::kInt16, {1}, {15}), DType::kInt16),
      I(DType::kInt16, {1}, {1}));
  expect_tensor_eq(bin(Op::LOGICAL_RIGHT_SHIFT, I(DType::kInt32, {2}, {kI32Min, -1}),
                       I(DType::kInt32, {2}, {31, 0}), DType::kInt32),
                   I(DType::kInt32, {2}, {1, -1}));
  for (Op op : {Op::LOGICAL_LEFT_SHIFT, Op::LOGICAL_RIGHT_SHIFT}) {
    expect_runtime_error(
        [op] { bin(op, I(DType::kInt8, {1}, {1}), I(DType::kInt8, {1}, {8}), DType::kInt8); }, "shift");
    expect_runtime_error(
        [op] { bin(op, I(DType::kInt16, {1}, {1}), I(DType::kInt16, {1}, {16}), DType::kInt16); }, "shift");
    expect_runtime_error(
        [op] { bin(op, I(DType::kInt32, {1}, {1}), I(DType::kInt32, {1}, {32}), DType::kInt32); }, "shift");
    expect_runtime_error(
        [op] { bin(op, I(DType::kInt32, {1}, {1}), I(DType::kInt32, {1}, {-1}), DType::kInt32); }, "shift");
  }
}

TEST(ElementwiseBinary, Bitwise) {
  for (DType t : {DType::kInt8, DType::kInt16, DType::kInt32}) {
    Tensor a = I(t, {3}, {0x0c, -1, 0x55}), b = I(t, {3}, {0x0a, 0x33, -0x56});  // -0x56 = ...10101010
    expect_tensor_eq(bin(Op::BITWISE_AND, a, b, t), I(t, {3}, {0x08, 0x33, 0x00}));
    expect_tensor_eq(bin(Op::BITWISE_OR, a, b, t), I(t, {3}, {0x0e, -1, -1}));
    expect_tensor_eq(bin(Op::BITWISE_XOR, a, b, t), I(t, {3}, {0x06, ~int64_t{0x33}, -1}));
  }
}

TEST(ElementwiseBinary, LogicalBinary) {
  Tensor a = I(DType::kBool, {4}, {0, 0, 1, 1}), b = I(DType::kBool, {4}, {0, 1, 0, 1});
  expect_tensor_eq(bin(Op::LOGICAL_AND, a, b, DType::kBool), I(DType::kBool, {4}, {0, 0, 0, 1}));
  expect_tensor_eq(bin(Op::LOGICAL_OR, a, b, DType::kBool), I(DType::kBool, {4}, {0, 1, 1, 1}));
  expect_tensor_eq(bin(Op::LOGICAL_XOR, a, b, DType::kBool), I(DType::kBool, {4}, {0, 1, 1, 0}));
  // Broadcast a [1] operand.
  expect_tensor_eq(bin(Op::LOGICAL_AND, a, I(DType::kBool, {1}, {1}), DType::kBool), a);
}

TEST(ElementwiseBinary, UnsupportedTypeIsRejected) {
  expect_runtime_error(
      [] { bin(Op::ADD, I(DType::kInt8, {1}, {1}), I(DType::kInt8, {1}, {1}), DType::kInt8); },
      "unsupported element type");
  expect_runtime_error([] { bin(Op::ADD, F32({1}, {1}), I(DType::kInt32, {1}, {1}), DType::kFp32); },
                       "input2");
}

}  // namespace
}  // namespace weft::testing

namespace weft::testing {
namespace {

// Runs input1 `op` input2 with `threads` interpreter threads.
Tensor run_threads(Op op, const Tensor& a, const Tensor& b, int threads) {
  GraphBuilder g("main");
  ValueId x = g.input("x", a.type()), y = g.input("y", b.type());
  auto outs = g.op_multi(op, {x, y}, {}, {"out"}, {{a.dtype(), broadcast_shape(a.shape(), b.shape())}});
  g.output(outs.at(0));
  Module m(g.finish());
  InterpreterOptions opt;
  opt.threads = threads;
  Interpreter interp(m, opt);
  return interp.run(std::vector<Tensor>{a, b}).at(0);
}

TEST(ElementwiseBinary, LargeBroadcastSplitAcrossThreads) {
  // 3*5*7*1301 = 136605 elements: above the threading threshold; with 3 threads the chunk starts fall
  // in the middle of rows, which exercises the start decomposition of broadcast_for_range.
  const int64_t N = 3, C = 5, H = 7, W = 1301;
  std::vector<int64_t> av(N * H * W), bv(C * W), want(N * C * H * W);
  for (size_t i = 0; i < av.size(); ++i) av[i] = static_cast<int64_t>(i) * 3;
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = -static_cast<int64_t>(i) * 1000;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) {
          want[((n * C + c) * H + h) * W + w] = av[(n * H + h) * W + w] + bv[c * W + w];
        }
  Tensor a = I(DType::kInt32, {N, 1, H, W}, av), b = I(DType::kInt32, {1, C, 1, W}, bv);
  Tensor expected = I(DType::kInt32, {N, C, H, W}, want);
  for (int threads : {1, 3}) {
    SCOPED_TRACE(threads);
    EXPECT_TRUE(run_threads(Op::ADD, a, b, threads).identical(expected));
  }
  // Same-shape path, and a REQUIRE failing inside a worker thread surfaces as the usual error.
  std::vector<int64_t> ones(want.size(), 1);
  Tensor one = I(DType::kInt32, {N, C, H, W}, ones);
  std::vector<int64_t> plus1(want);
  for (int64_t& v : plus1) v += 1;
  EXPECT_TRUE(run_threads(Op::ADD, expected, one, 3).identical(I(DType::kInt32, {N, C, H, W}, plus1)));
  std::vector<int64_t> big(want.size(), 0);
  big.back() = kI32Max;
  expect_runtime_error(
      [&] {
        run_threads(Op::ADD, I(DType::kInt32, {N, C, H, W}, big), one, 3);
      },
      "apply_add_s");
}

}  // namespace
}  // namespace weft::testing
