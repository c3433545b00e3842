#include "backends/onednn/gemm.h"

#include <algorithm>
#include <cstring>
#include <limits>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define WEFT_GEMM_X86 1
#define WEFT_AVX2 __attribute__((target("avx2,fma")))
#endif

namespace weft::backend::cpu {

PackedB pack_b(const float* b, int64_t batches, int64_t k, int64_t n, int64_t sb, int64_t sk, int64_t sn) {
  PackedB p;
  p.batches = batches;
  p.k = k;
  p.n = n;
  p.data.assign(static_cast<size_t>(batches * p.panels() * k * PackedB::kPanel), 0.0f);
  for (int64_t t = 0; t < batches; ++t)
    for (int64_t q = 0; q < p.panels(); ++q) {
      float* dst = p.data.data() + (t * p.panels() + q) * k * PackedB::kPanel;
      const int64_t cols = std::min(PackedB::kPanel, n - q * PackedB::kPanel);
      for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < cols; ++j)
          dst[i * PackedB::kPanel + j] = b[t * sb + i * sk + (q * PackedB::kPanel + j) * sn];
    }
  return p;
}

void winograd_plan(WinogradConv& s) {
  // Per residue r of the dilation, tiles start every 2 d outputs; a tile's second output is d on.
  auto origins = [](int64_t size, int64_t d) {
    std::vector<int64_t> o;
    for (int64_t r = 0; r < std::min(d, size); ++r)
      for (int64_t v = r; v < size; v += 2 * d) o.push_back(v);
    return o;
  };
  s.rows = origins(s.oh, s.dy);
  s.cols = origins(s.ow, s.dx);
  // Each block streams all 16 weight matrices through the GEMMs, so blocks are as long as keeps a
  // block's transformed input and products (16 * block * (ic + oc) floats) within about 12 MB:
  // whole 6-row GEMM blocks, 24 to 96 tiles.
  s.block = std::clamp<int64_t>(196608 / (s.ic_padded() + s.oc) / 6 * 6, 24, 96);
}

int64_t winograd_scratch_floats(const WinogradConv& s) { return 16 * s.block * (s.ic_padded() + s.oc); }

PackedB pack_winograd_weights(const float* w, int64_t oc, int64_t ic) {
  PackedB p;
  p.batches = 16;
  p.k = ic;
  p.n = oc;
  p.data.assign(static_cast<size_t>(16 * p.panels() * ic * PackedB::kPanel), 0.0f);
  for (int64_t o = 0; o < oc; ++o)
    for (int64_t i = 0; i < ic; ++i) {
      double g[3][3], gg[4][3];
      for (int64_t ky = 0; ky < 3; ++ky)
        for (int64_t kx = 0; kx < 3; ++kx) g[ky][kx] = w[((o * 3 + ky) * 3 + kx) * ic + i];
      // G g: G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1] on the rows, then the same on the columns.
      for (int c = 0; c < 3; ++c) {
        gg[0][c] = g[0][c];
        gg[1][c] = 0.5 * (g[0][c] + g[1][c] + g[2][c]);
        gg[2][c] = 0.5 * (g[0][c] - g[1][c] + g[2][c]);
        gg[3][c] = g[2][c];
      }
      for (int r = 0; r < 4; ++r) {
        const double u[4] = {gg[r][0], 0.5 * (gg[r][0] + gg[r][1] + gg[r][2]), 0.5 * (gg[r][0] - gg[r][1] + gg[r][2]),
                             gg[r][2]};
        for (int c = 0; c < 4; ++c) {
          const int64_t batch = r * 4 + c, panel = o / PackedB::kPanel;
          p.data[static_cast<size_t>(((batch * p.panels() + panel) * ic + i) * PackedB::kPanel + o % PackedB::kPanel)] =
              static_cast<float>(u[c]);
        }
      }
    }
  return p;
}

#if defined(WEFT_GEMM_X86)

bool gemm_avx2_supported() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

namespace {

// erf(x) for 8 floats: x P(x^2) / Q(x^2) on x clamped to [-4, 4] (erf(4) is 1 in fp32), a
// minimax rational fit (the coefficients of Eigen's and XLA's fast float erf); within 3.4e-7 of
// the exact erf over all floats (checked by the CPU backend tests against std::erf).
WEFT_AVX2 inline __m256 erf8(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-4.0f)), _mm256_set1_ps(4.0f));
  const __m256 x2 = _mm256_mul_ps(x, x);
  __m256 p = _mm256_set1_ps(-2.72614225801306e-10f);
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(2.77068142495902e-08f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-2.10102402082508e-06f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-5.69250639462346e-05f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-7.34990630326855e-04f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-2.95459980854025e-03f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-1.60960333262415e-02f));
  __m256 q = _mm256_set1_ps(-1.45660718464996e-05f);
  q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(-2.13374055278905e-04f));
  q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(-1.68282697438203e-03f));
  q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(-7.37332916720468e-03f));
  q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(-1.42647390514189e-02f));
  return _mm256_div_ps(_mm256_mul_ps(x, p), q);
}

WEFT_AVX2 inline __m256 gelu8(__m256 x) {
  const __m256 e = erf8(_mm256_mul_ps(x, _mm256_set1_ps(0.70710678118654752f)));
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

// Cephes' expf: ln2 in two parts (the first exact in few bits) and the polynomial of e^r on
// |r| <= ln2 / 2, highest power first (e^r = 1 + r + r^2 P(r)).
constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
constexpr float kExpPoly[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                               4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

// exp8, log8, sigmoid8 and tanh8 (activation_math.inc, at 8 floats).
#define VF __m256
#define VM __m256
#define VFN WEFT_AVX2 inline
#define VW(name) name##8
#define V(op) _mm256_##op
#define VROUND(x) _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VCMP(a, b, pred) _mm256_cmp_ps(a, b, pred)
#define VSEL(m, a, b) _mm256_blendv_ps(a, b, m)
#define VKEEP(m, x) _mm256_and_ps(m, x)
#define VDROP(m, x) _mm256_andnot_ps(m, x)
#define VF_OF(i) _mm256_castsi256_ps(i)
#define VI_OF(f) _mm256_castps_si256(f)
#define VAND_I(a, b) _mm256_and_si256(a, b)
#define VOR_I(a, b) _mm256_or_si256(a, b)
#define VABS(x) _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x)
#include "backends/onednn/activation_math.inc"  // (undefines the vocabulary at its end)

// The epilogue's activation `kind` on 8 floats (the kinds without an operand).
WEFT_AVX2 inline __m256 activate8(EpilogueOp::Kind kind, __m256 y) {
  switch (kind) {
    case EpilogueOp::Kind::kGeluErf: return gelu8(y);
    case EpilogueOp::Kind::kSigmoid: return sigmoid8(y);
    case EpilogueOp::Kind::kTanh: return tanh8(y);
    case EpilogueOp::Kind::kSwish: return _mm256_mul_ps(y, sigmoid8(y));
    case EpilogueOp::Kind::kExp: return exp8(y);
    case EpilogueOp::Kind::kLog: return log8(y);
    case EpilogueOp::Kind::kHardSwish: {
      // y / 6 + 1/2 rounded twice, as the reference computes it (a multiply by 1/6 loses the
      // small values of t near y = -3 to cancellation).
      const __m256 t = _mm256_add_ps(_mm256_div_ps(y, _mm256_set1_ps(6.0f)), _mm256_set1_ps(0.5f));
      return _mm256_mul_ps(y, _mm256_min_ps(_mm256_set1_ps(1.0f), _mm256_max_ps(_mm256_setzero_ps(), t)));
    }
    case EpilogueOp::Kind::kGeluTanh: {
      const __m256 y3 = _mm256_mul_ps(_mm256_mul_ps(y, y), y);
      const __m256 u = _mm256_mul_ps(_mm256_set1_ps(0.7978845608f), _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), y3, y));
      return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), y), _mm256_add_ps(_mm256_set1_ps(1.0f), tanh8(u)));
    }
    default: return y;
  }
}

// Eight floats from p, those at and past `valid` (< 8) read as 0 without touching memory.
WEFT_AVX2 inline __m256 load8(const float* p, int64_t valid) {
  if (valid >= 8) return _mm256_loadu_ps(p);
  if (valid <= 0) return _mm256_setzero_ps();
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_maskload_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(valid)), lane));
}

// CLAMP as TOSA's: NaN stays NaN (max / min return their second operand when one is NaN).
WEFT_AVX2 inline __m256 clamp8(__m256 y, __m256 lo, __m256 hi) { return _mm256_min_ps(hi, _mm256_max_ps(lo, y)); }

// The epilogue ops on 8 results of row i, columns [j0, j0 + 8) (those at and past `cols` are not
// read from the ops' operands).
WEFT_AVX2 inline __m256 epilogue8(const EpilogueOp* ops, int nops, __m256 y, int64_t i, int64_t j0, int64_t cols) {
  for (int o = 0; o < nops; ++o) {
    const EpilogueOp& op = ops[o];
    switch (op.kind) {
      case EpilogueOp::Kind::kAddColumns: y = _mm256_add_ps(y, load8(op.v + j0, cols)); break;
      case EpilogueOp::Kind::kMulColumns: y = _mm256_mul_ps(y, load8(op.v + j0, cols)); break;
      case EpilogueOp::Kind::kAddMatrix: y = _mm256_add_ps(y, load8(op.v + i * op.ld + j0, cols)); break;
      case EpilogueOp::Kind::kClamp: y = clamp8(y, _mm256_set1_ps(op.lo), _mm256_set1_ps(op.hi)); break;
      default: y = activate8(op.kind, y); break;
    }
  }
  return y;
}

// An MR x 16 block of C over kc steps of k: 2 * MR accumulators in ymm registers (MR = 6 uses 12
// of the 16), each k step two 8-float loads of the B panel and MR broadcasts of A. `first`: the
// block starts from 0, else from what C holds (the previous k block's partial sums). `ops` (after
// the last k block): applied before the store; (i0, j0) is the block's first row and column of
// the result. `cols` < 16 goes through a 16-float row buffer so that nothing past C's last column
// is read or written.
template <int MR>
WEFT_AVX2 void block(const float* a, int64_t lda, const float* bp, int64_t kc, float* c, int64_t ldc, int64_t cols,
                     bool first, const EpilogueOp* ops, int nops, int64_t i0, int64_t j0) {
  __m256 acc[MR][2];
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
    if (first) {
      acc[i][0] = _mm256_setzero_ps();
      acc[i][1] = _mm256_setzero_ps();
    } else {
      acc[i][0] = load8(c + i * ldc, cols);
      acc[i][1] = load8(c + i * ldc + 8, cols - 8);
    }
  }
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_loadu_ps(bp + k * PackedB::kPanel);
    const __m256 b1 = _mm256_loadu_ps(bp + k * PackedB::kPanel + 8);
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      const __m256 ai = _mm256_broadcast_ss(a + i * lda + k);
      acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
    }
  }
  if (nops > 0) {
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      acc[i][0] = epilogue8(ops, nops, acc[i][0], i0 + i, j0, cols);
      acc[i][1] = epilogue8(ops, nops, acc[i][1], i0 + i, j0 + 8, cols - 8);
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
    if (cols == PackedB::kPanel) {
      _mm256_storeu_ps(c + i * ldc, acc[i][0]);
      _mm256_storeu_ps(c + i * ldc + 8, acc[i][1]);
    } else {
      alignas(32) float row[16];
      _mm256_store_ps(row, acc[i][0]);
      _mm256_store_ps(row + 8, acc[i][1]);
      std::memcpy(c + i * ldc, row, static_cast<size_t>(cols) * sizeof(float));
    }
  }
}

// block<MR> by its row count.
using BlockFn = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, int64_t, bool, const EpilogueOp*,
                         int, int64_t, int64_t);
constexpr BlockFn kBlocks[7] = {nullptr, block<1>, block<2>, block<3>, block<4>, block<5>, block<6>};

}  // namespace

WEFT_AVX2 void gemm_avx2(const float* a, int64_t lda, int64_t m0, int64_t m1, const PackedB& b, int64_t batch,
                         int64_t p0, int64_t p1, float* c, int64_t ldc, const EpilogueOp* ops, int nops, bool accumulate) {
  // K in blocks of 256: a panel's block of B (16 KB) stays in L1 while it meets every row.
  constexpr int64_t kKc = 256;
  const int64_t K = b.k;
  for (int64_t k0 = 0; k0 < K; k0 += kKc) {
    const int64_t kc = std::min(kKc, K - k0);
    const bool first = k0 == 0 && !accumulate, last = k0 + kc == K;
    const int n_ops = last ? nops : 0;
    for (int64_t p = p0; p < p1; ++p) {
      const float* bp = b.panel(batch, p) + k0 * PackedB::kPanel;
      const int64_t cols = std::min(PackedB::kPanel, b.n - p * PackedB::kPanel);
      float* cp = c + p * PackedB::kPanel;
      // Rows in blocks of 6, the last block of what remains (1 to 6 rows).
      for (int64_t i = m0; i < m1; i += 6)
        kBlocks[std::min<int64_t>(6, m1 - i)](a + i * lda + k0, lda, bp, kc, cp + i * ldc, ldc, cols, first, ops, n_ops,
                                              i, p * PackedB::kPanel);
    }
  }
}

std::vector<float> pack_grouped_conv4(const float* w, int64_t c, int64_t kh, int64_t kw) {
  // w: [c][kh][kw][4] (output channel o of group o / 4 reading that group's 4 inputs); packed:
  // [c / 8][kh * kw][4 (input k)][8 (output lanes)].
  const int64_t taps = kh * kw;
  std::vector<float> p(static_cast<size_t>(c * taps * 4));
  for (int64_t o = 0; o < c; ++o)
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t k = 0; k < 4; ++k)
        p[static_cast<size_t>((((o / 8) * taps + t) * 4 + k) * 8 + o % 8)] = w[(o * taps + t) * 4 + k];
  return p;
}

// Each 8-lane vector holds two groups' four outputs (one group per 128-bit half). Input vector
// x = the same two groups' four inputs; vpermilps with k in every position of a half gives each
// output lane its group's input k, so one FMA per (tap, k) adds w[o][tap][k] * x[group][k] to all
// eight outputs: the grouped convolution's own products, none of another group's. Four partial
// sums (one per k) keep four FMA chains in flight; they are added at the end.
WEFT_AVX2 void grouped_conv4_avx2(const GroupedConv4& s, const float* x, const float* wp, float* y, int64_t r0,
                                  int64_t r1, const EpilogueOp* ops, int nops) {
  const int64_t taps = s.kh * s.kw, vecs = s.c / 8;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t b = r / s.oh, oy = r % s.oh, iy0 = oy * s.sy - s.pt;
    // The taps inside the input (TOSA skips the others).
    int64_t ky0 = 0, ky1 = s.kh;
    while (ky0 < ky1 && iy0 + ky0 * s.dy < 0) ++ky0;
    while (ky1 > ky0 && iy0 + (ky1 - 1) * s.dy >= s.h) --ky1;
    const float* xb = x + b * s.h * s.w * s.c;
    for (int64_t ox = 0; ox < s.ow; ++ox) {
      const int64_t ix0 = ox * s.sx - s.pl;
      int64_t kx0 = 0, kx1 = s.kw;
      while (kx0 < kx1 && ix0 + kx0 * s.dx < 0) ++kx0;
      while (kx1 > kx0 && ix0 + (kx1 - 1) * s.dx >= s.w) --kx1;
      const int64_t pixel = r * s.ow + ox;
      for (int64_t v = 0; v < vecs; ++v) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t ky = ky0; ky < ky1; ++ky) {
          const float* xr = xb + (iy0 + ky * s.dy) * s.w * s.c + v * 8;
          const float* wr = wp + (v * taps + ky * s.kw) * 32;
          for (int64_t kx = kx0; kx < kx1; ++kx) {
            const __m256 xv = _mm256_loadu_ps(xr + (ix0 + kx * s.dx) * s.c);
            const float* wt = wr + kx * 32;
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(wt), _mm256_permute_ps(xv, 0x00), a0);
            a1 = _mm256_fmadd_ps(_mm256_loadu_ps(wt + 8), _mm256_permute_ps(xv, 0x55), a1);
            a2 = _mm256_fmadd_ps(_mm256_loadu_ps(wt + 16), _mm256_permute_ps(xv, 0xaa), a2);
            a3 = _mm256_fmadd_ps(_mm256_loadu_ps(wt + 24), _mm256_permute_ps(xv, 0xff), a3);
          }
        }
        const __m256 sum = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
        _mm256_storeu_ps(y + pixel * s.c + v * 8, epilogue8(ops, nops, sum, pixel, v * 8, 8));
      }
    }
  }
}

WEFT_AVX2 void tap_conv_avx2(const TapConv& s, const float* x, const PackedB* taps, float* y, int64_t r0, int64_t r1,
                             const EpilogueOp* ops, int nops) {
  const int64_t panels = taps[0].panels();
  std::memset(y + r0 * s.ow * s.oc, 0, static_cast<size_t>((r1 - r0) * s.ow * s.oc) * sizeof(float));
  // Tap by tap over all the rows (a tap's weights meet every row while they are in cache).
  for (int64_t ky = 0; ky < s.kh; ++ky)
    for (int64_t kx = 0; kx < s.kw; ++kx) {
      // The output columns whose input column ox * sx - pl + kx * dx is inside the input (TOSA
      // skips the other taps).
      const int64_t first = s.pl - kx * s.dx, last = s.w - 1 + s.pl - kx * s.dx;
      const int64_t lo = first <= 0 ? 0 : (first + s.sx - 1) / s.sx;
      const int64_t hi = last < 0 ? 0 : std::min(s.ow, last / s.sx + 1);
      if (lo >= hi) continue;
      // Whole rows whose input pixels are evenly spaced from one output row to the next (stride 1,
      // "same" width): consecutive rows are one GEMM.
      const bool whole = lo == 0 && hi == s.ow && s.sy * s.w == s.ow * s.sx;
      const PackedB& b = taps[ky * s.kw + kx];
      for (int64_t r = r0; r < r1;) {
        const int64_t n = r / s.oh, iy = r % s.oh * s.sy - s.pt + ky * s.dy;
        if (iy < 0 || iy >= s.h) {
          ++r;
          continue;
        }
        int64_t end = r + 1;
        if (whole)
          while (end < r1 && end / s.oh == n && end % s.oh * s.sy - s.pt + ky * s.dy < s.h) ++end;
        const float* a = x + ((n * s.h + iy) * s.w + lo * s.sx - s.pl + kx * s.dx) * s.ic;
        gemm_avx2(a, s.sx * s.ic, 0, whole ? (end - r) * s.ow : hi - lo, b, 0, 0, panels, y + (r * s.ow + lo) * s.oc,
                  s.oc, nullptr, 0, /*accumulate=*/true);
        r = end;
      }
    }
  for (int64_t i = r0 * s.ow; i < r1 * s.ow; ++i)
    for (int64_t j = 0; j < s.oc; j += 8) {
      float* p = y + i * s.oc + j;
      const int64_t cols = std::min<int64_t>(8, s.oc - j);
      const __m256 v = epilogue8(ops, nops, load8(p, cols), i, j, cols);
      if (cols == 8) {
        _mm256_storeu_ps(p, v);
      } else {
        alignas(32) float t[8];
        _mm256_store_ps(t, v);
        std::memcpy(p, t, static_cast<size_t>(cols) * sizeof(float));
      }
    }
}

WEFT_AVX2 void winograd_conv_avx2(const WinogradConv& s, const float* x, const PackedB& u, float* y, int64_t t0,
                                  int64_t t1, int64_t p0, int64_t p1, const EpilogueOp* ops, int nops, float* scratch) {
  const int64_t icp = s.ic_padded(), R = static_cast<int64_t>(s.rows.size()), C = static_cast<int64_t>(s.cols.size()),
                B = s.block;
  float* const vbuf = scratch;                // [16][B][icp]
  float* const mbuf = scratch + 16 * B * icp;  // [16][B][oc]
  // Tile t's image and first output row and column.
  auto origin = [&](int64_t t, int64_t& img, int64_t& oy, int64_t& ox) {
    img = t / (R * C);
    oy = s.rows[static_cast<size_t>(t / C % R)];
    ox = s.cols[static_cast<size_t>(t % C)];
  };
  // The lanes of the last eight output channels that exist (all eight where oc is a multiple of 8).
  const __m256i tail = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>((s.oc - 1) % 8 + 1)),
                                          _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  for (int64_t b0 = t0; b0 < t1; b0 += B) {
    const int64_t nb = std::min(B, t1 - b0);
    // V[4 i + j][t] = (B^T d B)[i][j] over the tile's 4 x 4 patch d (B^T = [1 0 -1 0; 0 1 1 0;
    // 0 -1 1 0; 0 1 0 -1]), eight input channels at a time.
    for (int64_t t = 0; t < nb; ++t) {
      int64_t img, oy, ox;
      origin(b0 + t, img, oy, ox);
      const float* src[4][4];
      for (int64_t a = 0; a < 4; ++a)
        for (int64_t b = 0; b < 4; ++b) {
          const int64_t iy = oy + a * s.dy - s.pt, ix = ox + b * s.dx - s.pl;
          src[a][b] = iy >= 0 && iy < s.h && ix >= 0 && ix < s.w ? x + ((img * s.h + iy) * s.w + ix) * s.ic : nullptr;
        }
      float* dst = vbuf + t * icp;
      for (int64_t c = 0; c < icp; c += 8) {
        __m256 d[4][4], e[4][4];
        for (int a = 0; a < 4; ++a)
          for (int b = 0; b < 4; ++b) d[a][b] = src[a][b] ? load8(src[a][b] + c, s.ic - c) : _mm256_setzero_ps();
        for (int b = 0; b < 4; ++b) {
          e[0][b] = _mm256_sub_ps(d[0][b], d[2][b]);
          e[1][b] = _mm256_add_ps(d[1][b], d[2][b]);
          e[2][b] = _mm256_sub_ps(d[2][b], d[1][b]);
          e[3][b] = _mm256_sub_ps(d[1][b], d[3][b]);
        }
        for (int a = 0; a < 4; ++a) {
          float* v = dst + (a * 4) * B * icp + c;
          _mm256_storeu_ps(v, _mm256_sub_ps(e[a][0], e[a][2]));
          _mm256_storeu_ps(v + B * icp, _mm256_add_ps(e[a][1], e[a][2]));
          _mm256_storeu_ps(v + 2 * B * icp, _mm256_sub_ps(e[a][2], e[a][1]));
          _mm256_storeu_ps(v + 3 * B * icp, _mm256_sub_ps(e[a][1], e[a][3]));
        }
      }
    }
    // M[xi] = V[xi] U[xi]: [nb][ic] x [ic][oc].
    for (int64_t xi = 0; xi < 16; ++xi)
      gemm_avx2(vbuf + xi * B * icp, icp, 0, nb, u, xi, p0, p1, mbuf + xi * B * s.oc, s.oc);
    // Y = A^T M A (A^T = [1 1 1 0; 0 1 -1 -1]), then the epilogue, eight output channels at a time.
    for (int64_t t = 0; t < nb; ++t) {
      int64_t img, oy, ox;
      origin(b0 + t, img, oy, ox);
      const bool down = oy + s.dy < s.oh, right = ox + s.dx < s.ow;
      const int64_t pix = (img * s.oh + oy) * s.ow + ox;
      const int64_t pixels[4] = {pix, pix + s.dx, pix + s.dy * s.ow, pix + s.dy * s.ow + s.dx};
      const bool inside[4] = {true, right, down, down && right};
      const float* src = mbuf + t * s.oc;
      for (int64_t c = p0 * PackedB::kPanel; c < std::min(s.oc, p1 * PackedB::kPanel); c += 8) {
        const int64_t cols = s.oc - c;
        __m256 m[4][4], f[2][4];
        for (int a = 0; a < 4; ++a)
          for (int b = 0; b < 4; ++b) m[a][b] = load8(src + (a * 4 + b) * B * s.oc + c, cols);
        for (int b = 0; b < 4; ++b) {
          f[0][b] = _mm256_add_ps(_mm256_add_ps(m[0][b], m[1][b]), m[2][b]);
          f[1][b] = _mm256_sub_ps(_mm256_sub_ps(m[1][b], m[2][b]), m[3][b]);
        }
        const __m256 out[4] = {_mm256_add_ps(_mm256_add_ps(f[0][0], f[0][1]), f[0][2]),
                               _mm256_sub_ps(_mm256_sub_ps(f[0][1], f[0][2]), f[0][3]),
                               _mm256_add_ps(_mm256_add_ps(f[1][0], f[1][1]), f[1][2]),
                               _mm256_sub_ps(_mm256_sub_ps(f[1][1], f[1][2]), f[1][3])};
        for (int q = 0; q < 4; ++q) {
          if (!inside[q]) continue;
          const __m256 v = epilogue8(ops, nops, out[q], pixels[q], c, cols);
          float* p = y + pixels[q] * s.oc + c;
          if (cols >= 8)
            _mm256_storeu_ps(p, v);
          else
            _mm256_maskstore_ps(p, tail, v);
        }
      }
    }
  }
}

WEFT_AVX2 void activation_avx2(EpilogueOp::Kind kind, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, activate8(kind, _mm256_loadu_ps(y + i)));
  if (i < n) {
    alignas(32) float t[8] = {};
    std::memcpy(t, y + i, static_cast<size_t>(n - i) * sizeof(float));
    _mm256_store_ps(t, activate8(kind, _mm256_load_ps(t)));
    std::memcpy(y + i, t, static_cast<size_t>(n - i) * sizeof(float));
  }
}

bool swish_avx512_supported() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}

// GCC 12 warns inside its own avx512fintrin.h (the masked builtins' `__Y` from _mm512_undefined_ps /
// _mm512_undefined_epi32) when they are inlined into a target("avx512f") function: a false positive.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

// x sigmoid(x) for 16 floats. t = -x clamped to [-88, 88] (NaN becomes -88, and the product with x
// keeps it NaN); e^t = 2^n e^r with t = n ln2 + r (ln2 in two parts), e^r from Cephes' polynomial
// (as exp8), 2^n by scalef; 1 / (1 + e^t) from the 14-bit reciprocal estimate and one Newton step.
// Within 4e-7 relative of x / (1 + e^-x) in double (OneDnnConv.SwishPassMatchesItsDefinition).
// x = +inf gives +inf; x = -inf gives NaN and any x below -88 gives -0, as MUL(x, SIGMOID(x)) does
// once the sigmoid has underflowed.
__attribute__((target("avx512f"))) static inline __m512 swish16(__m512 x) {
  const __m512 t = _mm512_min_ps(_mm512_max_ps(_mm512_sub_ps(_mm512_setzero_ps(), x), _mm512_set1_ps(-88.0f)),
                                 _mm512_set1_ps(88.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(t, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), t);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kExpPoly[0]);
#pragma GCC unroll 5
  for (int i = 1; i < 6; ++i) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpPoly[i]));
  const __m512 er = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0f));
  const __m512 d = _mm512_add_ps(_mm512_set1_ps(1.0f), _mm512_scalef_ps(er, n));
  const __m512 r0 = _mm512_rcp14_ps(d);
  const __m512 inv = _mm512_fmadd_ps(r0, _mm512_fnmadd_ps(d, r0, _mm512_set1_ps(1.0f)), r0);
  // Below -88 the sigmoid is under fp32's normal range: x * 0 there (-0, or NaN for -inf).
  const __mmask16 tiny = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-88.0f), _CMP_LT_OQ);
  return _mm512_mask_mul_ps(_mm512_mul_ps(x, inv), tiny, x, _mm512_setzero_ps());
}

// exp16, log16, sigmoid16 and tanh16 (activation_math.inc, at 16 floats): the same bits as the
// 8-float functions.
#define VF __m512
#define VM __mmask16
#define VFN __attribute__((target("avx512f"))) static inline
#define VW(name) name##16
#define V(op) _mm512_##op
#define VROUND(x) _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VCMP(a, b, pred) _mm512_cmp_ps_mask(a, b, pred)
#define VSEL(m, a, b) _mm512_mask_blend_ps(m, a, b)
#define VKEEP(m, x) _mm512_maskz_mov_ps(m, x)
#define VDROP(m, x) _mm512_maskz_mov_ps(static_cast<__mmask16>(~(m)), x)
#define VF_OF(i) _mm512_castsi512_ps(i)
#define VI_OF(f) _mm512_castps_si512(f)
#define VAND_I(a, b) _mm512_and_si512(a, b)
#define VOR_I(a, b) _mm512_or_si512(a, b)
#define VABS(x) _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff)))
#include "backends/onednn/activation_math.inc"  // (undefines the vocabulary at its end)

// f over n floats in place, 16 at a time (f inlined into each copy of the loop).
template <__m512 (*f)(__m512)>
__attribute__((target("avx512f"))) static void apply16(float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, f(_mm512_loadu_ps(y + i)));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(y + i, m, f(_mm512_maskz_loadu_ps(m, y + i)));
  }
}

__attribute__((target("avx512f"))) void activation_avx512(EpilogueOp::Kind kind, float* y, int64_t n) {
  switch (kind) {
    case EpilogueOp::Kind::kSigmoid: return apply16<sigmoid16>(y, n);
    case EpilogueOp::Kind::kTanh: return apply16<tanh16>(y, n);
    case EpilogueOp::Kind::kExp: return apply16<exp16>(y, n);
    case EpilogueOp::Kind::kLog: return apply16<log16>(y, n);
    default: return activation_avx2(kind, y, n);
  }
}

__attribute__((target("avx512f"))) void swish_avx512(float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, swish16(_mm512_loadu_ps(y + i)));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(y + i, m, swish16(_mm512_maskz_loadu_ps(m, y + i)));
  }
}

#pragma GCC diagnostic pop

#else

// Not x86-64 with GCC: the *_supported() functions say no, so the backend never calls the others.
bool gemm_avx2_supported() { return false; }
bool swish_avx512_supported() { return false; }
void swish_avx512(float*, int64_t) {}
void gemm_avx2(const float*, int64_t, int64_t, int64_t, const PackedB&, int64_t, int64_t, int64_t, float*, int64_t,
               const EpilogueOp*, int, bool) {}
void activation_avx2(EpilogueOp::Kind, float*, int64_t) {}
void activation_avx512(EpilogueOp::Kind, float*, int64_t) {}
std::vector<float> pack_grouped_conv4(const float*, int64_t, int64_t, int64_t) { return {}; }
void grouped_conv4_avx2(const GroupedConv4&, const float*, const float*, float*, int64_t, int64_t, const EpilogueOp*,
                        int) {}
void tap_conv_avx2(const TapConv&, const float*, const PackedB*, float*, int64_t, int64_t, const EpilogueOp*, int) {}
void winograd_conv_avx2(const WinogradConv&, const float*, const PackedB&, float*, int64_t, int64_t, int64_t,
                        int64_t, const EpilogueOp*, int, float*) {}

#endif

}  // namespace weft::backend::cpu
