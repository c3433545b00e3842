#include "backends/onednn/pool.h"

#include <algorithm>
#include <cstring>
#include <limits>

// The vectors travel by value only between always-inlined helpers (GCC's ABI note does not apply).
#pragma GCC diagnostic ignored "-Wpsabi"

namespace weft::backend::cpu {
namespace {

// One vector width per instruction set (lanes.h): each loop below is instantiated at the width its
// target function runs natively (a 16-float vector on AVX2 is lowered lane by lane once masks are
// involved: 25x slower than this).

// The taps of one output pixel inside the input: rows [y0, y1), columns [x0, x1).
struct Window {
  int64_t y0, y1, x0, x1;
};

// Channels [c, c + N * B) of one output pixel, B vectors at once (independent chains: a max's
// latency, not its throughput, bounds one chain). Every lane starts at -inf and takes a tap only
// when it is greater: a NaN compares false and is skipped, and of equal values the first stays.
// `seen` marks NaN taps (PROPAGATE) or number taps (IGNORE): the lane is NaN where a NaN was seen,
// or where no number was.
template <int N, int B, bool Propagate>
__attribute__((always_inline)) inline void max_lanes(const float* image, int64_t IW, int64_t C, const Window& w,
                                                     float* dst) {
  using F = VecF<N>;
  using M = VecI<N>;
  F acc[B];
  M seen[B];
#pragma GCC unroll 4
  for (int b = 0; b < B; ++b) {
    acc[b] = F{} - std::numeric_limits<float>::infinity();
    seen[b] = M{};
  }
  for (int64_t y = w.y0; y < w.y1; ++y) {
    const float* p = image + (y * IW + w.x0) * C;
    for (int64_t x = w.x0; x < w.x1; ++x, p += C)
#pragma GCC unroll 4
      for (int b = 0; b < B; ++b) {
        const F v = load_vec<N>(p + N * b);
        acc[b] = acc[b] < v ? v : acc[b];
        seen[b] |= Propagate ? v != v : v == v;
      }
  }
  const M qnan = (M)(F{} + std::numeric_limits<float>::quiet_NaN());
#pragma GCC unroll 4
  for (int b = 0; b < B; ++b) {
    const M bad = Propagate ? seen[b] : ~seen[b];
    const F out = (F)((((M)acc[b]) & ~bad) | (qnan & bad));
    std::memcpy(dst + N * b, &out, sizeof out);
  }
}

template <bool Propagate>
__attribute__((always_inline)) inline float max_one(const float* p, int64_t IW, int64_t C, const Window& w) {
  float acc = -std::numeric_limits<float>::infinity();
  bool seen = false;
  for (int64_t y = w.y0; y < w.y1; ++y)
    for (int64_t x = w.x0; x < w.x1; ++x) {
      const float v = p[(y * IW + x) * C];
      acc = acc < v ? v : acc;
      seen |= Propagate ? v != v : v == v;
    }
  return seen == Propagate ? std::numeric_limits<float>::quiet_NaN() : acc;
}

// Every output pixel of output rows [r0, r1) (of N * OH): pixel(image, window, ys, xs, dst) with the
// pixel's image, its window inside the source, the window's first row and column (padding
// included: may be negative) and its C outputs. (A functor, not a lambda: it is inlined into the
// target-specific clones below with their vector width.)
template <class Shape, class Pixel>
__attribute__((always_inline)) inline void for_pixels(const Shape& s, const float* in, int64_t r0, int64_t r1,
                                                      float* out, const Pixel& pixel) {
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t n = r / s.OH, oy = r % s.OH;
    const int64_t ys = oy * s.SY - s.pad_top;
    Window w{std::max<int64_t>(ys, 0), std::min(ys + s.KY, s.IH), 0, 0};
    const float* image = in + n * s.IH * s.IW * s.C;
    float* dst_row = out + r * s.OW * s.C;
    for (int64_t ox = 0; ox < s.OW; ++ox) {
      const int64_t xs = ox * s.SX - s.pad_left;
      w.x0 = std::max<int64_t>(xs, 0);
      w.x1 = std::min(xs + s.KX, s.IW);
      pixel(image, w, ys, xs, dst_row + ox * s.C);
    }
  }
}

template <int N, bool Propagate>
struct MaxPixel {
  int64_t IW, C;
  __attribute__((always_inline)) void operator()(const float* image, const Window& w, int64_t, int64_t,
                                                 float* dst) const {
    int64_t c = 0;
    for (; c + 4 * N <= C; c += 4 * N) max_lanes<N, 4, Propagate>(image + c, IW, C, w, dst + c);
    for (; c + N <= C; c += N) max_lanes<N, 1, Propagate>(image + c, IW, C, w, dst + c);
    for (; c < C; ++c) dst[c] = max_one<Propagate>(image + c, IW, C, w);
  }
};

template <int N, bool Propagate>
__attribute__((always_inline)) inline void rows(const MaxPoolShape& s, const float* in, int64_t r0, int64_t r1,
                                                float* out) {
  for_pixels(s, in, r0, r1, out, MaxPixel<N, Propagate>{s.IW, s.C});
}

template <int N>
__attribute__((always_inline)) inline void rows_any(const MaxPoolShape& s, bool propagate_nan, const float* in,
                                                    int64_t r0, int64_t r1, float* out) {
  if (propagate_nan) rows<N, true>(s, in, r0, r1, out);
  else rows<N, false>(s, in, r0, r1, out);
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define WEFT_POOL_X86 1
__attribute__((target("avx512f"))) void rows_avx512(const MaxPoolShape& s, bool p, const float* in, int64_t r0,
                                                    int64_t r1, float* out) {
  rows_any<16>(s, p, in, r0, r1, out);
}
__attribute__((target("avx2"))) void rows_avx2(const MaxPoolShape& s, bool p, const float* in, int64_t r0, int64_t r1,
                                               float* out) {
  rows_any<8>(s, p, in, r0, r1, out);
}
#endif
void rows_baseline(const MaxPoolShape& s, bool p, const float* in, int64_t r0, int64_t r1, float* out) {
  rows_any<4>(s, p, in, r0, r1, out);
}

// Channels [c, c + N * B) of one output pixel of an average pool: each lane sums its taps in the
// window's row-major order, then divides by `count` (the IEEE quotient, as the reference).
template <int N, int B>
__attribute__((always_inline)) inline void avg_lanes(const float* image, int64_t IW, int64_t C, const Window& w,
                                                     float count, float* dst) {
  using F = VecF<N>;
  F acc[B];
#pragma GCC unroll 4
  for (int b = 0; b < B; ++b) acc[b] = F{};
  for (int64_t y = w.y0; y < w.y1; ++y) {
    const float* p = image + (y * IW + w.x0) * C;
    for (int64_t x = w.x0; x < w.x1; ++x, p += C)
#pragma GCC unroll 4
      for (int b = 0; b < B; ++b) acc[b] += load_vec<N>(p + N * b);
  }
#pragma GCC unroll 4
  for (int b = 0; b < B; ++b) {
    const F out = acc[b] / count;
    std::memcpy(dst + N * b, &out, sizeof out);
  }
}

inline float avg_one(const float* p, int64_t IW, int64_t C, const Window& w, float count) {
  float acc = 0.0f;
  for (int64_t y = w.y0; y < w.y1; ++y)
    for (int64_t x = w.x0; x < w.x1; ++x) acc += p[(y * IW + x) * C];
  return acc / count;
}

// The number of positions of [start, start + k) inside [lo, hi).
inline int64_t overlap(int64_t start, int64_t k, int64_t lo, int64_t hi) {
  return std::max<int64_t>(0, std::min(start + k, hi) - std::max(start, lo));
}

template <int N>
struct AvgPixel {
  const AvgPoolShape& s;
  __attribute__((always_inline)) void operator()(const float* image, const Window& w, int64_t ys, int64_t xs,
                                                 float* dst) const {
    const float count = static_cast<float>(overlap(ys, s.KY, -s.extra_top, s.IH + s.extra_bottom) *
                                           overlap(xs, s.KX, -s.extra_left, s.IW + s.extra_right));
    int64_t c = 0;
    for (; c + 4 * N <= s.C; c += 4 * N) avg_lanes<N, 4>(image + c, s.IW, s.C, w, count, dst + c);
    for (; c + N <= s.C; c += N) avg_lanes<N, 1>(image + c, s.IW, s.C, w, count, dst + c);
    for (; c < s.C; ++c) dst[c] = avg_one(image + c, s.IW, s.C, w, count);
  }
};

template <int N>
__attribute__((always_inline)) inline void avg_rows(const AvgPoolShape& s, const float* in, int64_t r0, int64_t r1,
                                                    float* out) {
  for_pixels(s, in, r0, r1, out, AvgPixel<N>{s});
}

#ifdef WEFT_POOL_X86
__attribute__((target("avx512f"))) void avg_avx512(const AvgPoolShape& s, const float* in, int64_t r0, int64_t r1,
                                                   float* out) {
  avg_rows<16>(s, in, r0, r1, out);
}
__attribute__((target("avx2"))) void avg_avx2(const AvgPoolShape& s, const float* in, int64_t r0, int64_t r1,
                                              float* out) {
  avg_rows<8>(s, in, r0, r1, out);
}
#endif
void avg_baseline(const AvgPoolShape& s, const float* in, int64_t r0, int64_t r1, float* out) {
  avg_rows<4>(s, in, r0, r1, out);
}

}  // namespace

void max_pool_rows(const MaxPoolShape& s, bool propagate_nan, const float* in, int64_t r0, int64_t r1, float* out,
                   CpuLevel isa) {
#ifdef WEFT_POOL_X86
  if (isa == CpuLevel::kAvx512) return rows_avx512(s, propagate_nan, in, r0, r1, out);
  if (isa == CpuLevel::kAvx2) return rows_avx2(s, propagate_nan, in, r0, r1, out);
#else
  (void)isa;
#endif
  rows_baseline(s, propagate_nan, in, r0, r1, out);
}

void avg_pool_rows(const AvgPoolShape& s, const float* in, int64_t r0, int64_t r1, float* out, CpuLevel isa) {
#ifdef WEFT_POOL_X86
  if (isa == CpuLevel::kAvx512) return avg_avx512(s, in, r0, r1, out);
  if (isa == CpuLevel::kAvx2) return avg_avx2(s, in, r0, r1, out);
#else
  (void)isa;
#endif
  avg_baseline(s, in, r0, r1, out);
}

}  // namespace weft::backend::cpu
