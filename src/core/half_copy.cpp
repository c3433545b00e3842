#include "core/half_copy.h"

#include <immintrin.h>

#include "weft/dtype.h"

namespace weft {
namespace {

bool has_f16c() {
  static const bool yes = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
  return yes;
}

// Eight elements at a time; the tail (n % 8) by the scalar conversions, which round alike.
__attribute__((target("avx,f16c"))) size_t to_fp16_f16c(const float* src, uint16_t* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  return i;
}

__attribute__((target("avx,f16c"))) size_t to_fp32_f16c(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  return i;
}

}  // namespace

void fp32_to_fp16_array(const float* src, uint16_t* dst, size_t n) {
  size_t i = has_f16c() ? to_fp16_f16c(src, dst, n) : 0;
  for (; i < n; ++i) dst[i] = float_to_fp16(src[i]);
}

void fp16_to_fp32_array(const uint16_t* src, float* dst, size_t n) {
  size_t i = has_f16c() ? to_fp32_f16c(src, dst, n) : 0;
  for (; i < n; ++i) dst[i] = fp16_to_float(src[i]);
}

}  // namespace weft
