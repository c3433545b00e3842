#include "backends/onednn/gemv.h"

#include "backends/onednn/lanes.h"

namespace weft::backend::cpu {
namespace {

// A panel's 16 results into y[c0, min(c0 + 16, n)).
template <int W>
__attribute__((always_inline)) inline void store_panel(float* y, int64_t c0, int64_t n, const Float16<W>& a) {
  if (c0 + 16 <= n) {
    a.store(y + c0);
  } else if (c0 < n) {
    float t[16];
    a.store(t);
    std::memcpy(y + c0, t, static_cast<size_t>(n - c0) * sizeof(float));
  }
}

}  // namespace

// Each of the three keeps sixteen sums per output (gemv_rows: over k = i mod 16) or one per output
// column, as Float16: the same bits from every copy.
template <int W>
WEFT_CPU_BODY void gemv_rows_body(const float* w, int64_t ldw, const float* x, int64_t k, int64_t n0, int64_t n1,
                                  float* y) {
  using F = Float16<W>;
  const int64_t kv = k / 16 * 16;
  int64_t n = n0;
  // Four rows at a time: each x vector loaded once serves four weight streams.
  for (; n + 4 <= n1; n += 4) {
    const float* r0 = w + n * ldw;
    const float* r1 = r0 + ldw;
    const float* r2 = r1 + ldw;
    const float* r3 = r2 + ldw;
    F a0 = F::zero(), a1 = F::zero(), a2 = F::zero(), a3 = F::zero();
    for (int64_t i = 0; i < kv; i += 16) {
      const F xv = F::load(x + i);
      a0.add_product(F::load(r0 + i), xv);
      a1.add_product(F::load(r1 + i), xv);
      a2.add_product(F::load(r2 + i), xv);
      a3.add_product(F::load(r3 + i), xv);
    }
    float s0 = a0.sum(), s1 = a1.sum(), s2 = a2.sum(), s3 = a3.sum();
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
    F a = F::zero();
    for (int64_t i = 0; i < kv; i += 16) a.add_product(F::load(r + i), F::load(x + i));
    float s = a.sum();
    for (int64_t i = kv; i < k; ++i) s += r[i] * x[i];
    y[n] = s;
  }
}
WEFT_CPU_DISPATCH(gemv_rows, (const float* w, int64_t ldw, const float* x, int64_t k, int64_t n0, int64_t n1, float* y),
                  (w, ldw, x, k, n0, n1, y))

template <int W>
WEFT_CPU_BODY void gemv_cols_body(const float* wt, int64_t ldn, const float* x, int64_t k, int64_t n0, int64_t n1,
                                  float* y) {
  using F = Float16<W>;
  int64_t n = n0;
  // Four panels of 16 columns at a time: four independent accumulator chains.
  for (; n + 64 <= n1; n += 64) {
    F a0 = F::zero(), a1 = F::zero(), a2 = F::zero(), a3 = F::zero();
    const float* w = wt + n;
    for (int64_t i = 0; i < k; ++i, w += ldn) {
      const F xv = F::splat(x[i]);
      a0.add_product(F::load(w), xv);
      a1.add_product(F::load(w + 16), xv);
      a2.add_product(F::load(w + 32), xv);
      a3.add_product(F::load(w + 48), xv);
    }
    a0.store(y + n);
    a1.store(y + n + 16);
    a2.store(y + n + 32);
    a3.store(y + n + 48);
  }
  for (; n < n1; n += 16) {
    F a = F::zero();
    const float* w = wt + n;
    for (int64_t i = 0; i < k; ++i, w += ldn) a.add_product(F::load(w), F::splat(x[i]));
    store_panel(y, n, n1, a);
  }
}
WEFT_CPU_DISPATCH(gemv_cols,
                  (const float* wt, int64_t ldn, const float* x, int64_t k, int64_t n0, int64_t n1, float* y),
                  (wt, ldn, x, k, n0, n1, y))

template <int W>
WEFT_CPU_BODY void gemv_panels_body(const float* wp, const float* x, int64_t k, int64_t p0, int64_t p1, int64_t n,
                                    float* y) {
  using F = Float16<W>;
  int64_t p = p0;
  const int64_t panel = 16 * k;
  // Four panels at a time: four long sequential streams and four independent accumulator chains.
  for (; p + 4 <= p1; p += 4) {
    F a0 = F::zero(), a1 = F::zero(), a2 = F::zero(), a3 = F::zero();
    const float* w = wp + p * panel;
    for (int64_t i = 0; i < k; ++i, w += 16) {
      const F xv = F::splat(x[i]);
      a0.add_product(F::load(w), xv);
      a1.add_product(F::load(w + panel), xv);
      a2.add_product(F::load(w + 2 * panel), xv);
      a3.add_product(F::load(w + 3 * panel), xv);
    }
    store_panel(y, p * 16, n, a0);
    store_panel(y, (p + 1) * 16, n, a1);
    store_panel(y, (p + 2) * 16, n, a2);
    store_panel(y, (p + 3) * 16, n, a3);
  }
  for (; p < p1; ++p) {
    F a = F::zero();
    const float* w = wp + p * panel;
    for (int64_t i = 0; i < k; ++i, w += 16) a.add_product(F::load(w), F::splat(x[i]));
    store_panel(y, p * 16, n, a);
  }
}
WEFT_CPU_DISPATCH(gemv_panels,
                  (const float* wp, const float* x, int64_t k, int64_t p0, int64_t p1, int64_t n, float* y),
                  (wp, x, k, p0, p1, n, y))

}  // namespace weft::backend::cpu
