#include "core/half_copy.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "weft/dtype.h"

namespace weft {
namespace {

// The array conversions against the scalar ones, element for element: every fp16 bit pattern one
// way, and the other way the rounding cases (ties, the overflow boundary, subnormals, zeros of both
// signs, infinities, NaN) plus random floats of every exponent, at lengths that leave every tail.
TEST(HalfCopy, ArraysConvertAsTheScalarConversions) {
  std::vector<uint16_t> halves(65536);
  for (size_t i = 0; i < halves.size(); ++i) halves[i] = static_cast<uint16_t>(i);
  std::vector<float> wide(halves.size());
  fp16_to_fp32_array(halves.data(), wide.data(), halves.size());
  for (size_t i = 0; i < halves.size(); ++i) {
    const float want = fp16_to_float(halves[i]);
    if (std::isnan(want)) EXPECT_TRUE(std::isnan(wide[i])) << "fp16 bits " << i;
    else EXPECT_EQ(std::bit_cast<uint32_t>(wide[i]), std::bit_cast<uint32_t>(want)) << "fp16 bits " << i;
  }

  std::vector<float> f = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.99f, 65520.0f, -65520.0f, 1e6f,
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(), std::ldexp(1.0f, -24), std::ldexp(1.0f, -25),
                          std::ldexp(3.0f, -25), std::ldexp(1.0f, -14), std::ldexp(1.0f, -15) * 1.5f,
                          1.0f + std::ldexp(1.0f, -11), 1.0f + 3 * std::ldexp(1.0f, -11), 1e-30f, -1e-30f};
  // Every fp16 value and the midpoints next to it (ties round to the even neighbour).
  for (uint32_t h = 0; h < 0x7C00; h += 7) {
    const float v = fp16_to_float(static_cast<uint16_t>(h));
    const float next = fp16_to_float(static_cast<uint16_t>(h + 1));
    f.push_back(v);
    f.push_back(-(v + (next - v) / 2));
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 4000; ++i) f.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{23}, f.size()}) {
    std::vector<uint16_t> got(n + 1, 0xABCD);
    fp32_to_fp16_array(f.data(), got.data(), n);
    EXPECT_EQ(got[n], 0xABCD) << "wrote past " << n << " elements";
    for (size_t i = 0; i < n; ++i) {
      const uint16_t want = float_to_fp16(f[i]);
      if (std::isnan(f[i])) EXPECT_TRUE(std::isnan(fp16_to_float(got[i]))) << "element " << i;
      else EXPECT_EQ(got[i], want) << "element " << i << " (" << f[i] << ")";
    }
  }
}

}  // namespace
}  // namespace weft
