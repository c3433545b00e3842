#include "backends/onednn/gemv.h"

#include "backends/onednn/lanes.h"

namespace weft::backend::cpu {
namespace {

__attribute__((always_inline)) inline float sum_lanes(const Lanes& v) {
  float s = 0;
  for (int i = 0; i < 16; ++i) s += v[i];
  return s;
}

// A panel's 16 results into y[c0, min(c0 + 16, n)).
__attribute__((always_inline)) inline void store_panel(float* y, int64_t c0, int64_t n, const Lanes& a) {
  if (c0 + 16 <= n) {
    store_lanes(y + c0, a);
  } else if (c0 < n) {
    float t[16];
    store_lanes(t, a);
    std::memcpy(y + c0, t, static_cast<size_t>(n - c0) * sizeof(float));
  }
}

}  // namespace

WEFT_CPU_CLONES
void gemv_rows(const float* w, int64_t ldw, const float* x, int64_t k, int64_t n0, int64_t n1, float* y) {
  const int64_t kv = k / 16 * 16;
  int64_t n = n0;
  // Four rows at a time: each x vector loaded once serves four weight streams.
  for (; n + 4 <= n1; n += 4) {
    const float* r0 = w + n * ldw;
    const float* r1 = r0 + ldw;
    const float* r2 = r1 + ldw;
    const float* r3 = r2 + ldw;
    Lanes a0 = {}, a1 = {}, a2 = {}, a3 = {};
    for (int64_t i = 0; i < kv; i += 16) {
      const Lanes xv = load_lanes(x + i);
      a0 += load_lanes(r0 + i) * xv;
      a1 += load_lanes(r1 + i) * xv;
      a2 += load_lanes(r2 + i) * xv;
      a3 += load_lanes(r3 + i) * xv;
    }
    float s0 = sum_lanes(a0), s1 = sum_lanes(a1), s2 = sum_lanes(a2), s3 = sum_lanes(a3);
    for (int64_t i = kv; i < k; ++i) {
      s0 += r0[i] * x[i];
      s1 += r1[i] * x[i];
      s2 += r2[i] * x[i];
      s3 += r3[i] * x[i];
    }
    y[n] = s0;
    y[n + 1] = s1;
    y[n + 2] = s2;
    y[n + 3] = s3;
  }
  for (; n < n1; ++n) {
    const float* r = w + n * ldw;
    Lanes a = {};
    for (int64_t i = 0; i < kv; i += 16) a += load_lanes(r + i) * load_lanes(x + i);
    float s = sum_lanes(a);
    for (int64_t i = kv; i < k; ++i) s += r[i] * x[i];
    y[n] = s;
  }
}

WEFT_CPU_CLONES
void gemv_cols(const float* wt, int64_t ldn, const float* x, int64_t k, int64_t n0, int64_t n1, float* y) {
  int64_t n = n0;
  // Four panels of 16 columns at a time: four independent accumulator chains.
  for (; n + 64 <= n1; n += 64) {
    Lanes a0 = {}, a1 = {}, a2 = {}, a3 = {};
    const float* w = wt + n;
    for (int64_t i = 0; i < k; ++i, w += ldn) {
      const Lanes xv = Lanes{} + x[i];
      a0 += load_lanes(w) * xv;
      a1 += load_lanes(w + 16) * xv;
      a2 += load_lanes(w + 32) * xv;
      a3 += load_lanes(w + 48) * xv;
    }
    store_lanes(y + n, a0);
    store_lanes(y + n + 16, a1);
    store_lanes(y + n + 32, a2);
    store_lanes(y + n + 48, a3);
  }
  for (; n < n1; n += 16) {
    Lanes a = {};
    const float* w = wt + n;
    for (int64_t i = 0; i < k; ++i, w += ldn) a += load_lanes(w) * (Lanes{} + x[i]);
    if (n + 16 <= n1) {
      store_lanes(y + n, a);
    } else {
      float t[16];
      store_lanes(t, a);
      std::memcpy(y + n, t, static_cast<size_t>(n1 - n) * sizeof(float));
    }
  }
}

WEFT_CPU_CLONES
void gemv_panels(const float* wp, const float* x, int64_t k, int64_t p0, int64_t p1, int64_t n, float* y) {
  int64_t p = p0;
  const int64_t panel = 16 * k;
  // Four panels at a time: four long sequential streams and four independent accumulator chains.
  for (; p + 4 <= p1; p += 4) {
    Lanes a0 = {}, a1 = {}, a2 = {}, a3 = {};
    const float* w = wp + p * panel;
    for (int64_t i = 0; i < k; ++i, w += 16) {
      const Lanes xv = Lanes{} + x[i];
      a0 += load_lanes(w) * xv;
      a1 += load_lanes(w + panel) * xv;
      a2 += load_lanes(w + 2 * panel) * xv;
      a3 += load_lanes(w + 3 * panel) * xv;
    }
    store_panel(y, p * 16, n, a0);
    store_panel(y, (p + 1) * 16, n, a1);
    store_panel(y, (p + 2) * 16, n, a2);
    store_panel(y, (p + 3) * 16, n, a3);
  }
  for (; p < p1; ++p) {
    Lanes a = {};
    const float* w = wp + p * panel;
    for (int64_t i = 0; i < k; ++i, w += 16) a += load_lanes(w) * (Lanes{} + x[i]);
    store_panel(y, p * 16, n, a);
  }
}

std::string gemv_isa() {
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq"))
    return "avx512";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "avx2";
  return "sse2";
#else
  return "generic";
#endif
}

}  // namespace weft::backend::cpu
