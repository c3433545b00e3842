// CAST and RESCALE (with the apply_scale_32 / apply_scale_16 helpers of scale.h).
#include "backends/reference/scale.h"
#include "reference/elementwise/elementwise_test_util.h"

namespace weft::testing {
namespace {

Tensor cast(const Tensor& x, DType out) { return un(Op::CAST, x, out); }

TEST(ElementwiseCast, EveryTableRowOnSmallValues) {
  // 0, 1 and (for non-bool pairs) -3 / 5 are exact in every type of the table.
  for (const TypeSupport& row : op_def(Op::CAST).types) {
    const DType in = row.types[0], out = row.types[1];
    SCOPED_TRACE(row.mode);
    if (in == DType::kBool || out == DType::kBool) {
      // Non-zero integers become true.
      std::vector<double> v = in == DType::kBool ? std::vector<double>{0, 1} : std::vector<double>{0, -3};
      std::vector<double> w = in == DType::kBool ? std::vector<double>{0, 1} : std::vector<double>{0, 1};
      expect_tensor_eq(cast(T(in, {2}, v), out), T(out, {2}, w));
    } else {
      expect_tensor_eq(cast(T(in, {3}, {0, -3, 5}), out), T(out, {3}, {0, -3, 5}));
    }
  }
}

TEST(ElementwiseCast, IntegerToInteger) {
  // Narrowing keeps the low bits; widening sign-extends.
  expect_tensor_eq(cast(I(DType::kInt16, {3}, {300, -129, -32768}), DType::kInt8),
                   I(DType::kInt8, {3}, {44, 127, 0}));
  expect_tensor_eq(cast(I(DType::kInt32, {3}, {70000, kI32Min, -1}), DType::kInt16),
                   I(DType::kInt16, {3}, {4464, 0, -1}));
  expect_tensor_eq(cast(I(DType::kInt32, {2}, {kI32Max, 384}), DType::kInt8),
                   I(DType::kInt8, {2}, {-1, -128}));
  expect_tensor_eq(cast(I(DType::kInt8, {2}, {-128, 127}), DType::kInt32),
                   I(DType::kInt32, {2}, {-128, 127}));
  expect_tensor_eq(cast(I(DType::kInt16, {1}, {-32768}), DType::kInt32), I(DType::kInt32, {1}, {-32768}));
  expect_tensor_eq(cast(I(DType::kInt32, {3}, {kI32Min, 0, 256}), DType::kBool),
                   I(DType::kBool, {3}, {1, 0, 1}));
  expect_tensor_eq(cast(I(DType::kBool, {2}, {1, 0}), DType::kInt16), I(DType::kInt16, {2}, {1, 0}));
}

TEST(ElementwiseCast, FloatToIntegerRoundsToEvenAndSaturates) {
  expect_tensor_eq(cast(F32({9}, {2.5, 3.5, -2.5, -0.5, 0.49999997, 127.5, 300, -300, -kInf}), DType::kInt8),
                   I(DType::kInt8, {9}, {2, 4, -2, 0, 0, 127, 127, -128, -128}));
  // 2147483520 is the largest float below 2^31 (exact); 2^31 and above saturate.
  expect_tensor_eq(cast(F32({4}, {2147483520.0, 2147483648.0, -2147483648.0, -3e9}), DType::kInt32),
                   I(DType::kInt32, {4}, {2147483520, kI32Max, kI32Min, kI32Min}));
  expect_tensor_eq(cast(T(DType::kFp16, {3}, {65504, -65504, 1.5}), DType::kInt16),
                   I(DType::kInt16, {3}, {32767, -32768, 2}));
  expect_tensor_eq(cast(T(DType::kBf16, {2}, {kInf, -1.5}), DType::kInt32),
                   I(DType::kInt32, {2}, {kI32Max, -2}));
  // NaN -> integer is "unpredictable" in the specification; Weft defines it as 0.
  expect_tensor_eq(cast(F32({1}, {kNaN}), DType::kInt32), I(DType::kInt32, {1}, {0}));
}

TEST(ElementwiseCast, IntegerToFloatRoundsOnce) {
  // 2^24 + 2^16 + 1 to bf16 (8 significant bits, ulp 2^17 here): above the midpoint 2^24 + 2^16, so the
  // correct result is 2^24 + 2^17. Rounding through fp32 first would give the tie 2^24 + 2^16 and then 2^24.
  expect_tensor_eq(cast(I(DType::kInt32, {1}, {16777216 + 65536 + 1}), DType::kBf16),
                   T(DType::kBf16, {1}, {16777216 + 131072}));
  // fp16: 65504 is the max; 65520 and above round to inf; 2049 is a tie between 2048 and 2050 -> 2048.
  expect_tensor_eq(cast(I(DType::kInt32, {4}, {65504, 65519, 65520, 2049}), DType::kFp16),
                   T(DType::kFp16, {4}, {65504, 65504, kInf, 2048}));
  expect_tensor_eq(cast(I(DType::kInt32, {2}, {kI32Min, kI32Max}), DType::kFp32),
                   F32({2}, {-2147483648.0, 2147483648.0}));
  expect_tensor_eq(cast(I(DType::kInt16, {1}, {-32768}), DType::kBf16), T(DType::kBf16, {1}, {-32768}));
}

TEST(ElementwiseCast, FloatToFloat) {
  // fp32 -> fp16: overflow to inf, subnormal kept, below half the smallest subnormal -> signed zero.
  expect_tensor_eq(cast(F32({5}, {65520, 0x1p-24, -0x1p-26, kNaN, -0.0}), DType::kFp16),
                   T(DType::kFp16, {5}, {kInf, 0x1p-24, -0.0, kNaN, -0.0}));
  // bf16 near 3e38: ulp 2^120, 3e38 / 2^120 = 225.7 -> 226 * 2^120; 1 + 2^-8 is a tie -> 1.
  expect_tensor_eq(cast(F32({2}, {3e38, 1.00390625}), DType::kBf16), T(DType::kBf16, {2}, {0x1.c4p127, 1.0}));
  // fp8e4m3: max 448; beyond the range the non-saturating mode gives NaN. fp8e5m2: max 57344, then inf.
  expect_tensor_eq(cast(F32({3}, {448, 1000, -0.0}), DType::kFp8E4M3),
                   T(DType::kFp8E4M3, {3}, {448, kNaN, -0.0}));
  expect_tensor_eq(cast(F32({3}, {57344, 1e6, -1e6}), DType::kFp8E5M2),
                   T(DType::kFp8E5M2, {3}, {57344, kInf, -kInf}));
  expect_tensor_eq(cast(T(DType::kFp16, {2}, {0x1p-9, 0.3125}), DType::kFp8E4M3),
                   T(DType::kFp8E4M3, {2}, {0x1p-9, 0.3125}));
  // Widening conversions are exact.
  expect_tensor_eq(cast(T(DType::kFp8E4M3, {3}, {448, -0x1p-9, kNaN}), DType::kFp32),
                   F32({3}, {448, -0x1p-9, kNaN}));
  expect_tensor_eq(cast(T(DType::kFp8E5M2, {2}, {57344, -kInf}), DType::kFp16),
                   T(DType::kFp16, {2}, {57344, -kInf}));
  expect_tensor_eq(cast(T(DType::kFp16, {2}, {0x1p-24, 65504}), DType::kFp32), F32({2}, {0x1p-24, 65504}));
  expect_tensor_eq(cast(T(DType::kBf16, {1}, {-3.3895314e38}), DType::kFp32), F32({1}, {-3.3895314e38}));
}

// ---- apply_scale helpers, by hand from scale_helpers.tosac ----

TEST(ElementwiseScale, ApplyScale32) {
  using weft::ref::apply_scale_32;
  // Identity: multiplier 2^30, shift 30.
  EXPECT_EQ(apply_scale_32(-128, 1 << 30, 30), -128);
  // The REQUIRE bounds value to [-2^(shift-1), 2^(shift-1)): at shift 30, 2^29 - 1 is the largest.
  EXPECT_EQ(apply_scale_32((1 << 29) - 1, 1 << 30, 30), (1 << 29) - 1);
  EXPECT_THROW(apply_scale_32(1 << 29, 1 << 30, 30), Error);
  EXPECT_EQ(apply_scale_32(kI32Max, 1 << 30, 32), 536870912);  // (2^31-1)/4 = 2^29 - 0.25 -> 2^29
  // Scale 0.5 (shift 31): x.5 rounds toward +inf: 1 -> 1, -1 -> 0, 3 -> 2, -3 -> -1.
  EXPECT_EQ(apply_scale_32(1, 1 << 30, 31), 1);
  EXPECT_EQ(apply_scale_32(-1, 1 << 30, 31), 0);
  EXPECT_EQ(apply_scale_32(3, 1 << 30, 31), 2);
  EXPECT_EQ(apply_scale_32(-3, 1 << 30, 31), -1);
  // Scale 0.25 (shift 32). Single: (v * 2^30 + 2^31) >> 32. Double: the round constant moves 2^30 away
  // from zero: v = 1 -> (2^30 + 2^31 + 2^30) >> 32 = 1 (single gives 0); v = 5 (1.25): single 1, double 2;
  // v = -6 (-1.5): single (-6 + 2) * 2^30 >> 32 = -1, double (-6 + 1) * 2^30 >> 32 = floor(-1.25) = -2.
  EXPECT_EQ(apply_scale_32(1, 1 << 30, 32, false), 0);
  EXPECT_EQ(apply_scale_32(1, 1 << 30, 32, true), 1);
  EXPECT_EQ(apply_scale_32(5, 1 << 30, 32, false), 1);
  EXPECT_EQ(apply_scale_32(5, 1 << 30, 32, true), 2);
  EXPECT_EQ(apply_scale_32(-6, 1 << 30, 32, false), -1);
  EXPECT_EQ(apply_scale_32(-6, 1 << 30, 32, true), -2);
  EXPECT_EQ(apply_scale_32(-1, 1 << 30, 32, true), 0);  // round = 2^31 - 2^30: (-2^30 + 2^30) >> 32 = 0
  // Double rounding only changes shifts > 31: shift 31 is the same as single.
  EXPECT_EQ(apply_scale_32(-3, 1 << 30, 31, true), -1);
  // A typical requantization multiplier: 0x5A827999 (~0.7071 * 2^31), shift 31+4 (scale ~0.0442):
  // 1000 * 1518500249 = 1518500249000; + 2^34 = 1535680118184; >> 35 = 44 (1535680118184 / 34359738368
  // = 44.69).
  EXPECT_EQ(apply_scale_32(1000, 0x5A827999, 35), 44);
  EXPECT_THROW(apply_scale_32(1, -1, 30), Error);
  EXPECT_THROW(apply_scale_32(1, 1, 1), Error);
  EXPECT_THROW(apply_scale_32(1, 1, 63), Error);
  EXPECT_THROW(apply_scale_32(2, 1, 2), Error);  // value must be in [-2, 2) for shift 2
  EXPECT_EQ(apply_scale_32(-2, 1, 2), 0);        // (-2 + 2) >> 2
}

TEST(ElementwiseScale, ApplyScale16) {
  using weft::ref::apply_scale_16;
  EXPECT_EQ(apply_scale_16(1000, 3, 2), 750);  // (3000 + 2) >> 2
  EXPECT_EQ(apply_scale_16(-5, 1, 2), -1);     // (-5 + 2) >> 2 = floor(-0.75)
  EXPECT_EQ(apply_scale_16(-6, 1, 2), -1);     // -1.5 rounds up
  EXPECT_EQ(apply_scale_16(6, 1, 2), 2);       // 1.5 rounds up
  EXPECT_EQ(apply_scale_16(int64_t{1} << 46, 1 << 14, 30), int64_t{1} << 30);
  EXPECT_THROW(apply_scale_16(int64_t{1} << 40, 1 << 14, 14), Error);  // result 2^40 does not fit i32
  EXPECT_THROW(apply_scale_16(1, -1, 14), Error);
  EXPECT_THROW(apply_scale_16(1, 1, 63), Error);
}

// ---- RESCALE ----

struct Rescale {
  bool scale32 = true;
  RoundingMode mode = RoundingMode::kSingle;
  bool per_channel = false, in_u = false, out_u = false;
  std::vector<int64_t> mult = {1 << 30}, shift = {30};
  int64_t izp = 0, ozp = 0;

  Tensor run(const Tensor& x, DType out) const {
    const int64_t nc = static_cast<int64_t>(mult.size());
    Attrs attrs = {{"scale32", scale32},
                   {"rounding_mode", static_cast<int64_t>(mode)},
                   {"per_channel", per_channel},
                   {"input_unsigned", in_u},
                   {"output_unsigned", out_u}};
    return run1(Op::RESCALE,
                {Operand::input(x), Operand::constant(I(scale32 ? DType::kInt32 : DType::kInt16, {nc}, mult)),
                 Operand::constant(I(DType::kInt8, {nc}, shift)), Operand::constant(I(x.dtype(), {1}, {izp})),
                 Operand::constant(I(out, {1}, {ozp}))},
                attrs, {out, x.shape()});
  }
};

TEST(ElementwiseRescale, EveryTableRowIdentity) {
  for (const TypeSupport& row : op_def(Op::RESCALE).types) {
    const DType in = row.types[0], out = row.types[1];
    SCOPED_TRACE(row.mode);
    Rescale r;
    if (in == DType::kInt48) {
      r.scale32 = false;
      r.mult = {1 << 14};
      r.shift = {14};
    }
    // -100 and 100 fit every type; the extremes of the input saturate to the output range. With
    // shift 30 apply_scale_32 REQUIREs |value| < 2^29, so i32 inputs use the extremes of that range.
    // apply_scale_16 (i48) REQUIREs the result to fit i32, so i48 uses the i32 extremes.
    const int64_t lo = in == DType::kInt32   ? -(int64_t{1} << 29)
                       : in == DType::kInt48 ? kI32Min
                                             : int_min(in);
    const int64_t hi = in == DType::kInt32   ? (int64_t{1} << 29) - 1
                       : in == DType::kInt48 ? kI32Max
                                             : int_max(in);
    auto clip = [&](int64_t v) { return std::clamp(v, int_min(out), int_max(out)); };
    expect_tensor_eq(r.run(I(in, {4}, {-100, 100, lo, hi}), out),
                     I(out, {4}, {-100, 100, clip(lo), clip(hi)}));
  }
}

TEST(ElementwiseRescale, RoundingModes) {
  Rescale r;
  r.mult = {1 << 30};
  r.shift = {32};  // scale 0.25
  // v:      1     5     -6     -1    2 (0.5)
  // single: 0     1     -1     0     1
  // double: 1     2     -2     0     1
  Tensor x = I(DType::kInt32, {5}, {1, 5, -6, -1, 2});
  expect_tensor_eq(r.run(x, DType::kInt32), I(DType::kInt32, {5}, {0, 1, -1, 0, 1}));
  r.mode = RoundingMode::kInexact;  // the exact single-round result is within INEXACT_ROUND's bound
  expect_tensor_eq(r.run(x, DType::kInt32), I(DType::kInt32, {5}, {0, 1, -1, 0, 1}));
  r.mode = RoundingMode::kDouble;
  expect_tensor_eq(r.run(x, DType::kInt32), I(DType::kInt32, {5}, {1, 2, -2, 0, 1}));
  r.scale32 = false;
  r.mult = {1 << 14};
  expect_runtime_error([&] { r.run(x, DType::kInt32); }, "DOUBLE_ROUND");
}

TEST(ElementwiseRescale, ZeroPointsAndSaturation) {
  Rescale r;
  r.shift = {31};  // scale 0.5
  r.izp = -2;
  r.ozp = 5;
  // (10 - (-2)) * 0.5 + 5 = 11; (-128 + 2) * 0.5 + 5 = -58; (127 + 2) * 0.5 = 64.5 -> 65, + 5 = 70.
  expect_tensor_eq(r.run(I(DType::kInt8, {3}, {10, -128, 127}), DType::kInt8),
                   I(DType::kInt8, {3}, {11, -58, 70}));
  // Saturation: identity scale, input_zp -128: 127 - (-128) = 255 -> 127.
  Rescale s;
  s.izp = -128;
  expect_tensor_eq(s.run(I(DType::kInt8, {2}, {127, -128}), DType::kInt8), I(DType::kInt8, {2}, {127, 0}));
  // i16 out clip: 32767 * 2 with multiplier 2^31-1... use shift 29 (scale 2): -32768 * 2 -> -32768.
  Rescale d;
  d.shift = {29};
  expect_tensor_eq(d.run(I(DType::kInt16, {2}, {-32768, 100}), DType::kInt16),
                   I(DType::kInt16, {2}, {-32768, 200}));
  // Scale 2 on i32: -2^28 (the lowest value the shift-29 REQUIRE allows) -> -2^29.
  expect_tensor_eq(d.run(I(DType::kInt32, {1}, {-(int64_t{1} << 28)}), DType::kInt32),
                   I(DType::kInt32, {1}, {-(int64_t{1} << 29)}));
  expect_runtime_error([&] { d.run(I(DType::kInt32, {1}, {int64_t{1} << 28}), DType::kInt32); }, "value in");
}

TEST(ElementwiseRescale, UnsignedModes) {
  // Input u16 (stored in i16): 0xFFFF = 65535, zp 32768 (stored as -32768): 65535 - 32768 = 32767;
  // 0 - 32768 = -32768; 0x8000 (stored -32768) - 32768 = 0.
  Rescale r;
  r.in_u = true;
  r.izp = -32768;
  expect_tensor_eq(r.run(I(DType::kInt16, {3}, {-1, 0, -32768}), DType::kInt16),
                   I(DType::kInt16, {3}, {32767, -32768, 0}));
  // Input u8: 255 (stored -1) - zp 128 (stored -128) = 127; 0 - 128 = -128.
  Rescale u8;
  u8.in_u = true;
  u8.izp = -128;
  expect_tensor_eq(u8.run(I(DType::kInt8, {2}, {-1, 0}), DType::kInt8), I(DType::kInt8, {2}, {127, -128}));
  // Output u8 (stored in i8): -128 + zp 128 = 0; 127 + 128 = 255 (stored -1); -100 + 0... saturates at 0.
  Rescale o;
  o.out_u = true;
  o.ozp = -128;  // 128 as u8
  expect_tensor_eq(o.run(I(DType::kInt8, {3}, {-128, 127, 0}), DType::kInt8),
                   I(DType::kInt8, {3}, {0, -1, -128}));
  Rescale o2;
  o2.out_u = true;
  expect_tensor_eq(o2.run(I(DType::kInt16, {3}, {-5, 300, 200}), DType::kInt8),
                   I(DType::kInt8, {3}, {0, -1, -56}));  // -5 -> 0; 300 -> 255 (stored -1); 200 (stored -56)
}

TEST(ElementwiseRescale, PerChannelAndInt48) {
  Rescale r;
  r.per_channel = true;
  r.mult = {1 << 30, 1 << 30, 3 << 28};
  r.shift = {30, 31, 30};  // scales 1, 0.5, 0.75
  // Channel = last index. 6*0.75 = 4.5 -> 5; -6*0.75 = -4.5 -> -4 (half rounds up); -3*0.5 = -1.5 -> -1.
  expect_tensor_eq(r.run(I(DType::kInt8, {2, 3}, {4, 4, 6, -4, -3, -6}), DType::kInt8),
                   I(DType::kInt8, {2, 3}, {4, 2, 5, -4, -1, -4}));
  // i48 input with apply_scale_16: 2^40 * 2^14 >> 16 = 2^38 does not fit i32: REQUIRE.
  Rescale w;
  w.scale32 = false;
  w.mult = {3};
  w.shift = {2};
  expect_tensor_eq(w.run(I(DType::kInt48, {4}, {1000, -5, -6, 6}), DType::kInt32),
                   I(DType::kInt32, {4}, {750, -4, -4, 5}));
  w.mult = {1 << 14};
  w.shift = {16};
  expect_runtime_error([&] { w.run(I(DType::kInt48, {1}, {int64_t{1} << 40}), DType::kInt32); },
                       "fits int32");
  // 2^32 * 2^14 >> 16 = 2^30 fits i32, then clips to the i16 range.
  expect_tensor_eq(w.run(I(DType::kInt48, {2}, {int64_t{1} << 32, -(int64_t{1} << 32)}), DType::kInt16),
                   I(DType::kInt16, {2}, {32767, -32768}));
}

TEST(ElementwiseRescale, RequiresAndErrorIfs) {
  Rescale r;
  r.mult = {-1};
  expect_runtime_error([&] { r.run(I(DType::kInt8, {1}, {1}), DType::kInt8); }, "multiplier >= 0");
  r.mult = {1};
  r.shift = {1};
  expect_runtime_error([&] { r.run(I(DType::kInt8, {1}, {1}), DType::kInt8); }, "shift <= 62");
  r.shift = {3};  // value must be in [-4, 4)
  expect_runtime_error([&] { r.run(I(DType::kInt8, {1}, {4}), DType::kInt8); }, "value in");
  Rescale z;
  z.izp = 1;
  expect_runtime_error([&] { z.run(I(DType::kInt32, {1}, {1}), DType::kInt32); }, "input_zp");
  Rescale uz;
  uz.in_u = true;
  uz.izp = 5;
  expect_runtime_error([&] { uz.run(I(DType::kInt16, {1}, {1}), DType::kInt8); }, "0 or 32768");
  Rescale both;
  both.in_u = both.out_u = true;
  expect_runtime_error([&] { both.run(I(DType::kInt8, {1}, {1}), DType::kInt8); }, "both");
  Rescale s48;
  expect_runtime_error([&] { s48.run(I(DType::kInt48, {1}, {1}), DType::kInt32); }, "scale32");
  Rescale pc;
  pc.per_channel = true;
  pc.mult = {1 << 30, 1 << 30};
  pc.shift = {30, 30};
  expect_runtime_error(
      [&] {
        pc.run(I(DType::kInt8, {2, 3}, std::vector<int64_t>(6)), DType::kInt8);
      },
      "elements");
}

}  // namespace
}  // namespace weft::testing
