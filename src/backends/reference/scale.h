// Scaling helpers of the TOSA 1.0 specification library (pseudocode/library/scale_helpers.tosac),
// used by RESCALE. A failed REQUIRE throws Error(kRuntime) without a location; kernels add theirs.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "weft/error.h"

namespace weft::ref {

[[noreturn]] inline void scale_require_failed(const std::string& what) {
  throw Error(ErrorCode::kRuntime, "REQUIRE failed: " + what);
}

// apply_scale_32: (value * multiplier + round) >> shift with round = 1 << (shift - 1); with
// double_round and shift > 31 the rounding constant moves by 2^30 away from zero (the second
// rounding step of the two-step implementations). The shift is arithmetic (floor).
inline int32_t apply_scale_32(int64_t value, int32_t multiplier, int32_t shift, bool double_round = false) {
  if (multiplier < 0) scale_require_failed("apply_scale_32 multiplier >= 0");
  if (shift < 2 || shift > 62) scale_require_failed("apply_scale_32 2 <= shift <= 62");
  const int64_t half = int64_t{1} << (shift - 1);
  if (value < -half || value >= half) {
    scale_require_failed("apply_scale_32 value in [-(1 << (shift - 1)), 1 << (shift - 1))");
  }
  int64_t round = half;
  if (double_round && shift > 31) round += (value >= 0) ? (int64_t{1} << 30) : -(int64_t{1} << 30);
  // |value| < 2^31 (int32 argument) and multiplier < 2^31: the product fits in 62 bits.
  if (value < std::numeric_limits<int32_t>::min() || value > std::numeric_limits<int32_t>::max()) {
    scale_require_failed("apply_scale_32 value fits int32");
  }
  const int64_t result = (value * multiplier + round) >> shift;
  return static_cast<int32_t>(result);
}

// apply_scale_16: int48 value, int16 multiplier; REQUIREs that the result fits int32.
inline int32_t apply_scale_16(int64_t value, int32_t multiplier, int32_t shift) {
  if (multiplier < 0 || multiplier > std::numeric_limits<int16_t>::max()) {
    scale_require_failed("apply_scale_16 multiplier >= 0");
  }
  if (shift < 2 || shift > 62) scale_require_failed("apply_scale_16 2 <= shift <= 62");
  const int64_t round = int64_t{1} << (shift - 1);
  // |value| < 2^47 and multiplier < 2^15: the product fits in 62 bits.
  const int64_t result = (value * multiplier + round) >> shift;
  if (result < std::numeric_limits<int32_t>::min() || result > std::numeric_limits<int32_t>::max()) {
    scale_require_failed("apply_scale_16 result fits int32");
  }
  return static_cast<int32_t>(result);
}

}  // namespace weft::ref
