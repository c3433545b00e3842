#include <gtest/gtest.h>

#include <cmath>

#include "weft/dtype.h"
#include "weft/tensor.h"

namespace weft {
namespace {

TEST(DType, NamesRoundTrip) {
  for (int i = 0; i < kNumDTypes; ++i) {
    auto t = static_cast<DType>(i);
    EXPECT_EQ(parse_dtype(dtype_name(t)), t);
    EXPECT_EQ(parse_dtype(dtype_spec_name(t)), t);
  }
  EXPECT_FALSE(parse_dtype("f64").has_value());
}

TEST(DType, Fp16RoundsToNearestEven) {
  EXPECT_EQ(float_to_fp16(1.0f), 0x3C00);
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7C00);  // halfway to 2^16 rounds to even -> inf
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -25)), 0x0000);  // tie -> even (zero)
  EXPECT_EQ(float_to_fp16(-0.0f), 0x8000);
  EXPECT_TRUE(std::isnan(fp16_to_float(float_to_fp16(NAN))));
  // 1 + 2^-11 is halfway between 1 and 1+2^-10: ties to even -> 1.
  EXPECT_EQ(float_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(float_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
}

TEST(DType, Bf16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(bf16_to_float(0x3F80), 1.0f);
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);  // tie -> even
  EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(NAN))));
  EXPECT_EQ(float_to_bf16(INFINITY), 0x7F80);
}

TEST(DType, Fp8Formats) {
  EXPECT_EQ(fp8e4m3_to_float(0x7E), 448.0f);  // max finite
  EXPECT_TRUE(std::isnan(fp8e4m3_to_float(0x7F)));
  EXPECT_EQ(float_to_fp8e4m3(448.0f), 0x7E);
  EXPECT_EQ(fp8e4m3_to_float(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_EQ(fp8e5m2_to_float(0x7B), 57344.0f);
  EXPECT_TRUE(std::isinf(fp8e5m2_to_float(0x7C)));
  for (int i = 0; i < 256; ++i) {
    float f = fp8e4m3_to_float(static_cast<uint8_t>(i));
    if (!std::isnan(f)) { EXPECT_EQ(float_to_fp8e4m3(f), i) << i; }
    float g = fp8e5m2_to_float(static_cast<uint8_t>(i));
    if (!std::isnan(g)) { EXPECT_EQ(float_to_fp8e5m2(g), i) << i; }
  }
}

TEST(DType, IntegerStorageWraps) {
  int64_t v = 0;
  store_from_int(DType::kInt48, &v, (int64_t{1} << 47));
  EXPECT_EQ(v, -(int64_t{1} << 47));
  int8_t b = 0;
  store_from_int(DType::kInt4, &b, 9);
  EXPECT_EQ(b, -7);
  EXPECT_EQ(int_min(DType::kInt4), -8);
  EXPECT_EQ(int_max(DType::kInt48), (int64_t{1} << 47) - 1);
}

TEST(Tensor, SharesBuffersWithoutCopy) {
  Tensor a = Tensor::from_doubles({DType::kFp32, {2, 2}}, std::vector<double>{1, 2, 3, 4});
  Tensor b = a;
  EXPECT_TRUE(a.buffer().same_storage(b.buffer()));
  Tensor c = a.clone();
  EXPECT_FALSE(a.buffer().same_storage(c.buffer()));
  EXPECT_TRUE(a.identical(c));
  EXPECT_EQ(c.at_double(3), 4.0);
}

TEST(Tensor, RejectsMismatchedBuffer) {
  EXPECT_THROW(Tensor(TensorType{DType::kFp32, {3}}, Buffer::allocate(8)), Error);
  EXPECT_THROW(shape_elements({-1, 2}), Error);
}

}  // namespace
}  // namespace weft
