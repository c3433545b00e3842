// Reference kernels of the TOSA 1.0 convolution family and MATMUL: CONV2D, CONV3D,
// DEPTHWISE_CONV2D, TRANSPOSE_CONV2D, MATMUL.
//
// Semantics follow the pseudocode exactly (accumulation in acc_t, skipped out-of-range taps,
// REQUIRE on integer overflow, bias added in out_t). Speed comes from doing the same arithmetic in a
// better memory order, never from changing it:
//  * Operands are first converted to a compute domain: float (exact for every fp type) or int16
//    with the zero point already subtracted (apply_sub_s in acc_t can never overflow here).
//  * CONV2D/CONV3D/TRANSPOSE_CONV2D become "im2col + GEMM": each output pixel gathers its taps in the
//    spec's (kd, ky, kx, ic) order into a row (zeros where a tap falls outside the input) and is
//    multiplied by the weights packed as [K][OC] panels. Every output still accumulates its products
//    one by one in the spec's order, so fp32 results are bit-identical to the naive loop. Padded taps
//    add an exact +-0 product, which leaves the accumulator unchanged unless a weight is inf/NaN (then
//    0 * w would be NaN): such weights, fp16 accumulation (rounded after every step) and integer
//    problems whose worst case could overflow the accumulator use the direct per-output loop instead.
//  * Integer accumulation is order independent, so the fast path is exact whenever a bound on
//    |sum| proves no intermediate overflow (the case for every realistic network).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/reference/kernel_util.h"
#include "backends/reference/kernels.h"
#include "backends/reference/parallel.h"
#include "weft/ops.h"

namespace weft::ref {
namespace {

// ---------------------------------------------------------------------------------------------
// Common checks

// Fails unless (types...) is one of the op's type-support rows.
void check_type_row(const KernelArgs& args, std::initializer_list<DType> types) {
  const OpDef& d = op_def(args.node.op);
  for (const TypeSupport& row : d.types) {
    bool match = true;
    size_t i = 0;
    for (DType t : types) match = match && row.types[i++] == t;
    if (match) return;
  }
  std::string s;
  for (DType t : types) s += std::string(s.empty() ? "" : ", ") + dtype_name(t);
  args.fail("unsupported type combination (" + s + ")");
}

DType acc_dtype(const KernelArgs& args) {
  int64_t v = args.node.attr_int("acc_type");
  switch (v) {
    case static_cast<int64_t>(AccType::kInt32):
      return DType::kInt32;
    case static_cast<int64_t>(AccType::kInt48):
      return DType::kInt48;
    case static_cast<int64_t>(AccType::kFp16):
      return DType::kFp16;
    case static_cast<int64_t>(AccType::kFp32):
      return DType::kFp32;
    default:
      args.fail("invalid acc_type value " + std::to_string(v));
  }
}

// A zero-point operand: a one-element tensor of `type`. Only int8 may be non-zero.
int64_t zero_point(const KernelArgs& args, size_t index, DType type, const char* name) {
  const Tensor& z = args.input(index);
  if (z.dtype() != type || z.rank() != 1 || z.num_elements() != 1) {
    args.fail(std::string(name) + " must be a [1] tensor of " + dtype_name(type) + ", got " + z.type().str());
  }
  if (is_float(type)) {
    if (z.at_double(0) != 0.0)
      args.fail(std::string("REQUIRE failed: ") + name + " == 0 for " + dtype_name(type));
    return 0;
  }
  int64_t v = z.at_int(0);
  if (type != DType::kInt8 && v != 0) {
    args.fail(std::string("REQUIRE failed: ") + name + " == 0 for " + dtype_name(type));
  }
  return v;
}

const std::vector<int64_t>& int_list(const KernelArgs& args, const char* name, size_t length) {
  const std::vector<int64_t>& v = args.node.attr_ints(name);
  if (v.size() != length) {
    args.fail(std::string("attribute ") + name + " needs " + std::to_string(length) + " values, got " +
              std::to_string(v.size()));
  }
  return v;
}

void check_rank(const KernelArgs& args, const Tensor& t, int rank, const char* what) {
  if (t.rank() != rank)
    args.fail(std::string(what) + " must have rank " + std::to_string(rank) + ", got " + t.type().str());
}

// ---------------------------------------------------------------------------------------------
// Compute-domain operands

// Floating-point operand as floats (every fp type converts exactly). fp32 data is used in place.
struct FloatData {
  std::vector<float> store;
  const float* p = nullptr;
};

FloatData to_floats(const Tensor& t) {
  FloatData r;
  if (t.dtype() == DType::kFp32) {
    r.p = t.data<float>();
    return r;
  }
  const int64_t n = t.num_elements();
  r.store.resize(static_cast<size_t>(n));
  dispatch(t.dtype(), [&](auto tag) {
    constexpr DType T = decltype(tag)::value;
    if constexpr (is_float_dtype(T)) {
      for (int64_t i = 0; i < n; ++i) r.store[static_cast<size_t>(i)] = load_float<T>(t.bytes(), i);
    }
  });
  r.p = r.store.data();
  return r;
}

// Integer operand (int4/int8/int16 storage) minus its zero point, as int16: int8 - int8 lies in
// [-255, 255] and int16 operands have a zero point of 0. `max_abs` receives max |value|.
std::vector<int16_t> to_i16_minus_zp(const Tensor& t, int64_t zp, int64_t& max_abs) {
  const int64_t n = t.num_elements();
  std::vector<int16_t> r(static_cast<size_t>(n));
  int64_t m = 0;
  if (t.dtype() == DType::kInt16) {
    const int16_t* s = t.data<int16_t>();
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = s[i] - zp;
      r[static_cast<size_t>(i)] = static_cast<int16_t>(v);
      m = std::max(m, v < 0 ? -v : v);
    }
  } else {  // int8 / int4: one int8 per element
    const int8_t* s = t.data<int8_t>();
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = s[i] - zp;
      r[static_cast<size_t>(i)] = static_cast<int16_t>(v);
      m = std::max(m, v < 0 ? -v : v);
    }
  }
  max_abs = m;
  return r;
}

inline float round16(float x) { return fp16_to_float(float_to_fp16(x)); }

// Accumulation policies for floating-point acc_t: fp32 uses float arithmetic directly; fp16 rounds
// the product and the running sum to fp16 after every step (float holds each exact operand and,
// with 24 >= 2*11+2 bits, rounding the float result to fp16 equals the correctly rounded fp16 op).
struct AccF32 {
  static float mul(float a, float b) { return a * b; }
  static float add(float a, float b) { return a + b; }
};
struct AccF16 {
  static float mul(float a, float b) { return round16(a * b); }
  static float add(float a, float b) { return round16(a + b); }
};

// ---------------------------------------------------------------------------------------------
// Output finalisation: out = static_cast<out_t>(acc); out = apply_add_s<out_t>(out, bias[...]).

struct FloatOutput {
  DType out_t;
  std::vector<float> bias;  // as floats (exact)
  void* base;
  void store(const KernelArgs& args, int64_t index, int64_t bias_index, float acc) const {
    if (out_t == DType::kFp32) {  // the common case: both roundings are the identity
      static_cast<float*>(base)[index] = acc + bias[static_cast<size_t>(bias_index)];
      return;
    }
    float o = round_to(out_t, acc);
    o = round_to(out_t, o + bias[static_cast<size_t>(bias_index)]);
    dispatch(out_t, [&](auto tag) {
      constexpr DType T = decltype(tag)::value;
      if constexpr (is_float_dtype(T)) store_float<T>(base, index, o);
    });
  }
};

struct IntOutput {
  DType out_t;  // int32 or int48 (stored in int64)
  std::vector<int64_t> bias;
  int64_t lo, hi;
  void* base;
  void store(const KernelArgs& args, int64_t index, int64_t bias_index, int64_t acc) const {
    int64_t o = acc + bias[static_cast<size_t>(bias_index)];
    if (o < lo || o > hi)
      args.fail("REQUIRE failed: bias addition overflows " + std::string(dtype_name(out_t)));
    if (out_t == DType::kInt32)
      static_cast<int32_t*>(base)[index] = static_cast<int32_t>(o);
    else
      static_cast<int64_t*>(base)[index] = o;
  }
};

std::vector<float> bias_floats(const Tensor& b) {
  FloatData f = to_floats(b);
  return std::vector<float>(f.p, f.p + b.num_elements());
}

// ---------------------------------------------------------------------------------------------
// GEMM: C[m][n] = sum_k A[m][k] * B[k][n], k ascending for every output (the spec's order).
// B is packed in panels of NR columns, [panel][k][NR], zero-padded past N.

// Rows per register tile (MR) and columns per weight panel (NR), measured on x86-64 SSE2 code from
// GCC's vectoriser: float is fastest at 8x8 (16 vector accumulators), int16 -> int32/int64 at 8x4.
template <class TA>
constexpr int kMR = 8;
template <class TA>
constexpr int kNR = std::is_same_v<TA, float> ? 8 : 4;

// Depth of one k block of the GEMM.
constexpr int64_t kKC = 512;

template <class TB, int NR>
struct PackedB {
  std::vector<TB> data;
  int64_t K = 0, N = 0, panels = 0;
  // Packs B given by element(k, n).
  template <class F>
  void pack(int64_t k_count, int64_t n_count, F&& element) {
    K = k_count;
    N = n_count;
    panels = (N + NR - 1) / NR;
    data.assign(static_cast<size_t>(panels * K * NR), TB{});
    for (int64_t j = 0; j < panels; ++j) {
      for (int64_t k = 0; k < K; ++k) {
        TB* dst = data.data() + (j * K + k) * NR;
        for (int r = 0; r < NR && j * NR + r < N; ++r) dst[r] = element(k, j * NR + r);
      }
    }
  }
  const TB* panel(int64_t j) const { return data.data() + j * K * NR; }
};

// One MR x NR tile over k in [k0, k1); `acc` holds the running sums (continued across k blocks).
template <int MR, int NR, class TA, class TB, class TC>
inline void micro_tile(const TA* const* rows, const TB* panel, int64_t k0, int64_t k1, TC* c, int64_t ldc) {
  TC acc[MR][NR];
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < NR; ++j) acc[i][j] = k0 == 0 ? TC{} : c[i * ldc + j];
  }
  for (int64_t k = k0; k < k1; ++k) {
    const TB* b = panel + k * NR;
    for (int i = 0; i < MR; ++i) {
      const TC a = static_cast<TC>(rows[i][k]);
      for (int j = 0; j < NR; ++j) acc[i][j] += a * static_cast<TC>(b[j]);
    }
  }
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < NR; ++j) c[i * ldc + j] = acc[i][j];
  }
}

// C (m rows, ldc = panels * NR, fully overwritten) for rows[0..m).
template <int NR, class TA, class TB, class TC>
void gemm_rows(const TA* const* rows, int64_t m, const PackedB<TB, NR>& b, TC* c) {
  const int64_t ldc = b.panels * NR;
  if (b.K == 0) {  // empty sums: acc = 0
    std::fill(c, c + m * ldc, TC{});
    return;
  }
  // Blocks of k keep the B panel slice hot in cache; the sums carry over so the order is unchanged.
  for (int64_t k0 = 0; k0 < b.K; k0 += kKC) {
    const int64_t k1 = std::min(b.K, k0 + kKC);
    for (int64_t j = 0; j < b.panels; ++j) {
      const TB* panel = b.panel(j);
      int64_t i = 0;
      for (; i + kMR<TA> <= m; i += kMR<TA>)
        micro_tile<kMR<TA>, NR>(rows + i, panel, k0, k1, c + i * ldc + j * NR, ldc);
      for (; i < m; ++i) micro_tile<1, NR>(rows + i, panel, k0, k1, c + i * ldc + j * NR, ldc);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Convolution geometry shared by CONV2D (as a 3-D convolution with depth 1), CONV3D and
// TRANSPOSE_CONV2D: which input pixel a tap of an output pixel reads, or -1 for none.

struct ConvGeom {
  int64_t N = 1, ID = 1, IH = 1, IW = 1, IC = 1;
  int64_t OD = 1, OH = 1, OW = 1, OC = 1;
  int64_t KD = 1, KH = 1, KW = 1;
  int64_t pad_d = 0, pad_y = 0, pad_x = 0;  // leading pads (TRANSPOSE_CONV2D: out_pad_top/left)
  int64_t sd = 1, sy = 1, sx = 1;
  int64_t dd = 1, dy = 1, dx = 1;
  bool transpose = false;

  int64_t taps() const { return KD * KH * KW; }
  int64_t K() const { return taps() * IC; }
  int64_t pixels() const { return N * OD * OH * OW; }
  // Direct use of input rows: a 1x1x1 convolution with unit strides and no padding.
  bool identity_rows() const {
    return !transpose && taps() == 1 && sd == 1 && sy == 1 && sx == 1 && pad_d == 0 && pad_y == 0 &&
           pad_x == 0 && OD == ID && OH == IH && OW == IW;
  }

  // Fills src[tap] with the input pixel index ([N,ID,IH,IW] flattened) or -1, for output pixel p.
  void sources(int64_t p, int64_t* src) const {
    int64_t ox = p % OW, t = p / OW;
    int64_t oy = t % OH;
    t /= OH;
    int64_t od = t % OD, n = t / OD;
    int64_t tap = 0;
    for (int64_t kd = 0; kd < KD; ++kd) {
      for (int64_t ky = 0; ky < KH; ++ky) {
        for (int64_t kx = 0; kx < KW; ++kx, ++tap) {
          int64_t d, y, x;
          if (!transpose) {
            d = od * sd - pad_d + kd * dd;
            y = oy * sy - pad_y + ky * dy;
            x = ox * sx - pad_x + kx * dx;
          } else {
            // TRANSPOSE_CONV2D: y = oy - out_pad_top - ky must be a multiple of the stride in range.
            d = 0;
            int64_t yy = oy - pad_y - ky, xx = ox - pad_x - kx;
            if (yy < 0 || yy >= IH * sy || xx < 0 || xx >= IW * sx || yy % sy != 0 || xx % sx != 0) {
              src[tap] = -1;
              continue;
            }
            y = yy / sy;
            x = xx / sx;
          }
          bool ok = 0 <= d && d < ID && 0 <= y && y < IH && 0 <= x && x < IW;
          src[tap] = ok ? ((n * ID + d) * IH + y) * IW + x : -1;
        }
      }
    }
  }
};

// Rows per GEMM block: enough that every weight panel read is reused by many rows, few enough that
// the rows' slice of one k block (kKC columns) stays in the L2 cache (~128 KiB).
template <class TA>
int64_t block_rows(int64_t K) {
  const int64_t cols = std::clamp<int64_t>(K, 1, kKC);
  int64_t m = static_cast<int64_t>(128 * 1024 / (static_cast<size_t>(cols) * sizeof(TA)));
  m = std::clamp<int64_t>(m, kMR<TA>, 256);
  return m / kMR<TA> * kMR<TA>;
}

// Fast path: im2col + GEMM. TA is the compute-domain element (float / int16), TC the accumulator
// (float / int32 / int64); `finish(pixel, oc, acc)` writes one output.
template <int NR, class TA, class TC, class Finish>
void conv_gemm(const ConvGeom& g, const TA* input, const TA* weight /* [OC][K] */, int threads,
               Finish&& finish) {
  const int64_t K = g.K(), taps = g.taps(), IC = g.IC, OC = g.OC;
  PackedB<TA, NR> b;
  b.pack(K, OC, [&](int64_t k, int64_t oc) { return weight[oc * K + k]; });
  const int64_t MB = block_rows<TA>(K);
  const int64_t blocks = (g.pixels() + MB - 1) / MB;
  const bool direct_rows = g.identity_rows();
  parallel_for(
      threads, blocks,
      [&](int64_t b0, int64_t b1) {
        std::vector<TA> patch(direct_rows ? 0 : static_cast<size_t>(MB * K));
        std::vector<const TA*> rows(static_cast<size_t>(MB));
        std::vector<int64_t> src(static_cast<size_t>(taps));
        std::vector<TC> c(static_cast<size_t>(MB * b.panels * NR));
        const int64_t ldc = b.panels * NR;
        for (int64_t blk = b0; blk < b1; ++blk) {
          const int64_t p0 = blk * MB, m = std::min(MB, g.pixels() - p0);
          for (int64_t i = 0; i < m; ++i) {
            if (direct_rows) {
              rows[static_cast<size_t>(i)] = input + (p0 + i) * IC;
              continue;
            }
            TA* row = patch.data() + i * K;
            g.sources(p0 + i, src.data());
            for (int64_t t = 0; t < taps; ++t) {
              if (src[static_cast<size_t>(t)] < 0)
                std::fill(row + t * IC, row + (t + 1) * IC, TA{});
              else
                std::memcpy(row + t * IC, input + src[static_cast<size_t>(t)] * IC,
                            static_cast<size_t>(IC) * sizeof(TA));
            }
            rows[static_cast<size_t>(i)] = row;
          }
          gemm_rows<NR>(rows.data(), m, b, c.data());
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t oc = 0; oc < OC; ++oc) finish(p0 + i, oc, c[static_cast<size_t>(i * ldc + oc)]);
          }
        }
      },
      1);
}

// Exact per-output loop for floating-point accumulators (fp16 acc, or weights with inf/NaN).
template <class Acc, class Finish>
void conv_direct_float(const ConvGeom& g, const float* input, const float* weight, int threads,
                       Finish&& finish) {
  const int64_t K = g.K(), taps = g.taps(), IC = g.IC;
  parallel_for(
      threads, g.pixels(),
      [&](int64_t p0, int64_t p1) {
        std::vector<int64_t> src(static_cast<size_t>(taps));
        for (int64_t p = p0; p < p1; ++p) {
          g.sources(p, src.data());
          for (int64_t oc = 0; oc < g.OC; ++oc) {
            float acc = 0.0f;
            const float* w = weight + oc * K;
            for (int64_t t = 0; t < taps; ++t) {
              int64_t s = src[static_cast<size_t>(t)];
              if (s < 0) continue;
              const float* x = input + s * IC;
              for (int64_t ic = 0; ic < IC; ++ic) acc = Acc::add(acc, Acc::mul(x[ic], w[t * IC + ic]));
            }
            finish(p, oc, acc);
          }
        }
      },
      1);
}

// Exact per-output loop for integer accumulators with the REQUIRE of every apply_add_s.
template <class Finish>
void conv_direct_int(const KernelArgs& args, const ConvGeom& g, const int16_t* input, const int16_t* weight,
                     int64_t acc_lo, int64_t acc_hi, int threads, Finish&& finish) {
  const int64_t K = g.K(), taps = g.taps(), IC = g.IC;
  parallel_for(
      threads, g.pixels(),
      [&](int64_t p0, int64_t p1) {
        std::vector<int64_t> src(static_cast<size_t>(taps));
        for (int64_t p = p0; p < p1; ++p) {
          g.sources(p, src.data());
          for (int64_t oc = 0; oc < g.OC; ++oc) {
            int64_t acc = 0;
            const int16_t* w = weight + oc * K;
            for (int64_t t = 0; t < taps; ++t) {
              int64_t s = src[static_cast<size_t>(t)];
              if (s < 0) continue;
              const int16_t* x = input + s * IC;
              for (int64_t ic = 0; ic < IC; ++ic) {
                acc += static_cast<int64_t>(x[ic]) * w[t * IC + ic];
                if (acc < acc_lo || acc > acc_hi) args.fail("REQUIRE failed: accumulator overflow");
              }
            }
            finish(p, oc, acc);
          }
        }
      },
      1);
}

bool all_finite(const float* p, int64_t n) {
  bool ok = true;
  for (int64_t i = 0; i < n; ++i) ok &= std::isfinite(p[i]);
  return ok;
}

// Runs a convolution described by `g` on operands input/weight/bias/zp (indices 0..4) into output 0.
// `weight_layout_oc_k`: the weight tensor is [OC][taps][IC] in the spec's tap order.
void run_conv(KernelArgs& args, const ConvGeom& g) {
  const Tensor& in = args.input(0);
  const Tensor& w = args.input(1);
  const Tensor& bias = args.input(2);
  Tensor& out = args.output(0);
  const DType in_t = in.dtype(), w_t = w.dtype(), out_t = out.dtype(), acc_t = acc_dtype(args);
  check_type_row(args, {in_t, w_t, out_t, acc_t});
  if (bias.dtype() != out_t) args.fail("bias must be of the output type " + std::string(dtype_name(out_t)));
  check_rank(args, bias, 1, "bias");
  const int64_t BC = bias.shape()[0];
  if (BC != g.OC && BC != 1) args.fail("bias has " + std::to_string(BC) + " channels; expected 1 or OC");
  const int64_t izp = zero_point(args, 3, in_t, "input_zp");
  const int64_t wzp = zero_point(args, 4, w_t, "weight_zp");
  const int threads = args.ctx.threads();
  const int64_t K = g.K();
  if (g.pixels() == 0 || g.OC == 0) return;

  if (is_float(in_t)) {
    FloatData x = to_floats(in), wt = to_floats(w);
    FloatOutput fo{out_t, bias_floats(bias), out.mutable_bytes()};
    auto finish = [&](int64_t p, int64_t oc, float acc) {
      fo.store(args, p * g.OC + oc, BC == 1 ? 0 : oc, acc);
    };
    if (acc_t == DType::kFp16) {
      conv_direct_float<AccF16>(g, x.p, wt.p, threads, finish);
    } else if (!all_finite(wt.p, w.num_elements())) {
      conv_direct_float<AccF32>(g, x.p, wt.p, threads, finish);
    } else {
      conv_gemm<kNR<float>, float, float>(g, x.p, wt.p, threads, finish);
    }
    return;
  }

  int64_t max_x = 0, max_w = 0;
  std::vector<int16_t> x = to_i16_minus_zp(in, izp, max_x);
  std::vector<int16_t> wt = to_i16_minus_zp(w, wzp, max_w);
  IntOutput io{out_t, bias.to_ints(), int_min(out_t), int_max(out_t), out.mutable_bytes()};
  auto finish = [&](int64_t p, int64_t oc, int64_t acc) {
    io.store(args, p * g.OC + oc, BC == 1 ? 0 : oc, acc);
  };
  const int64_t acc_hi = int_max(acc_t), acc_lo = int_min(acc_t);
  // |partial sum| <= K * max|x| * max|w|: if that fits, no apply_add_s can overflow in any order.
  const double bound = static_cast<double>(K) * static_cast<double>(max_x) * static_cast<double>(max_w);
  if (bound > static_cast<double>(acc_hi)) {
    conv_direct_int(args, g, x.data(), wt.data(), acc_lo, acc_hi, threads, finish);
  } else if (acc_t == DType::kInt32) {
    conv_gemm<kNR<int16_t>, int16_t, int32_t>(
        g, x.data(), wt.data(), threads, [&](int64_t p, int64_t oc, int32_t acc) { finish(p, oc, acc); });
  } else {
    conv_gemm<kNR<int16_t>, int16_t, int64_t>(g, x.data(), wt.data(), threads, finish);
  }
}

// OUT == idiv(IN - 1 + pads - (K - 1) * dilation, stride) + 1 (the kernels accept a floor division;
// exact divisibility is an ERROR_IF the verifier reports).
bool conv_out_ok(int64_t out, int64_t in, int64_t pad_sum, int64_t k, int64_t stride, int64_t dilation) {
  int64_t span = in - 1 + pad_sum - (k - 1) * dilation;
  return span >= 0 && out == span / stride + 1;
}

// ---------------------------------------------------------------------------------------------
// DEPTHWISE_CONV2D: for each output pixel, taps in (ky, kx) order, channels innermost (vectorisable).

template <class Acc, class Store>
void depthwise_float(const ConvGeom& g, int64_t C, int64_t M, const float* x, const float* w, int threads,
                     Store&& store) {
  const int64_t CM = C * M;
  parallel_for(
      threads, g.pixels(),
      [&](int64_t p0, int64_t p1) {
        std::vector<int64_t> src(static_cast<size_t>(g.taps()));
        std::vector<float> acc(static_cast<size_t>(CM));
        for (int64_t p = p0; p < p1; ++p) {
          g.sources(p, src.data());
          std::fill(acc.begin(), acc.end(), 0.0f);
          float* a = acc.data();
          for (int64_t t = 0; t < g.taps(); ++t) {
            int64_t s = src[static_cast<size_t>(t)];
            if (s < 0) continue;
            const float* xi = x + s * C;
            const float* wt = w + t * CM;
            if (M == 1) {
              for (int64_t c = 0; c < C; ++c) a[c] = Acc::add(a[c], Acc::mul(xi[c], wt[c]));
            } else {
              for (int64_t c = 0; c < C; ++c) {
                for (int64_t m = 0; m < M; ++m)
                  a[c * M + m] = Acc::add(a[c * M + m], Acc::mul(xi[c], wt[c * M + m]));
              }
            }
          }
          for (int64_t o = 0; o < CM; ++o) store(p, o, a[o]);
        }
      },
      1);
}

template <class TC, bool kChecked, class Store>
void depthwise_int(const KernelArgs& args, const ConvGeom& g, int64_t C, int64_t M, const int16_t* x,
                   const int16_t* w, int64_t lo, int64_t hi, int threads, Store&& store) {
  const int64_t CM = C * M;
  parallel_for(
      threads, g.pixels(),
      [&](int64_t p0, int64_t p1) {
        std::vector<int64_t> src(static_cast<size_t>(g.taps()));
        std::vector<TC> acc(static_cast<size_t>(CM));
        for (int64_t p = p0; p < p1; ++p) {
          g.sources(p, src.data());
          std::fill(acc.begin(), acc.end(), TC{0});
          TC* a = acc.data();
          for (int64_t t = 0; t < g.taps(); ++t) {
            int64_t s = src[static_cast<size_t>(t)];
            if (s < 0) continue;
            const int16_t* xi = x + s * C;
            const int16_t* wt = w + t * CM;
            if (!kChecked && M == 1) {
              for (int64_t c = 0; c < C; ++c) a[c] += static_cast<TC>(xi[c]) * static_cast<TC>(wt[c]);
            } else {
              for (int64_t c = 0; c < C; ++c) {
                for (int64_t m = 0; m < M; ++m) {
                  a[c * M + m] += static_cast<TC>(xi[c]) * static_cast<TC>(wt[c * M + m]);
                  if (kChecked && (a[c * M + m] < lo || a[c * M + m] > hi)) {
                    args.fail("REQUIRE failed: accumulator overflow");
                  }
                }
              }
            }
          }
          for (int64_t o = 0; o < CM; ++o) store(p, o, static_cast<int64_t>(a[o]));
        }
      },
      1);
}

// ---------------------------------------------------------------------------------------------
// MATMUL

template <class Acc>
void matmul_direct_float(int64_t N, int64_t H, int64_t C, int64_t W, const float* a, const float* b,
                         int threads, float* out_acc) {
  parallel_for(
      threads, N * H,
      [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          int64_t n = r / H;
          const float* ar = a + r * C;
          for (int64_t w = 0; w < W; ++w) {
            float acc = 0.0f;
            for (int64_t c = 0; c < C; ++c) acc = Acc::add(acc, Acc::mul(ar[c], b[(n * C + c) * W + w]));
            out_acc[r * W + w] = acc;
          }
        }
      },
      1);
}

// Per batch: pack B[n] into panels, then row blocks of A[n] in parallel. A batch with few rows (a
// matrix-vector product such as a classifier) streams B's rows instead: packing would cost as much
// as the product. Both keep c ascending for every output.
template <int NR, class TA, class TC, class Store>
void matmul_gemm(int64_t N, int64_t H, int64_t C, int64_t W, const TA* a, const TA* b, int threads,
                 Store&& store) {
  if (H < kMR<TA>) {
    parallel_for(
        threads, N * H,
        [&](int64_t r0, int64_t r1) {
          std::vector<TC> acc(static_cast<size_t>(W));
          for (int64_t r = r0; r < r1; ++r) {
            const TA* ar = a + r * C;
            const TA* bn = b + (r / H) * C * W;
            std::fill(acc.begin(), acc.end(), TC{});
            TC* o = acc.data();
            for (int64_t c = 0; c < C; ++c) {
              const TC x = static_cast<TC>(ar[c]);
              const TA* brow = bn + c * W;
              for (int64_t w = 0; w < W; ++w) o[w] += x * static_cast<TC>(brow[w]);
            }
            for (int64_t w = 0; w < W; ++w) store(r * W + w, o[w]);
          }
        },
        1);
    return;
  }
  for (int64_t n = 0; n < N; ++n) {
    PackedB<TA, NR> pb;
    const TA* bn = b + n * C * W;
    pb.pack(C, W, [&](int64_t k, int64_t w) { return bn[k * W + w]; });
    const int64_t MB = block_rows<TA>(C);
    const int64_t blocks = (H + MB - 1) / MB;
    parallel_for(
        threads, blocks,
        [&](int64_t b0, int64_t b1) {
          std::vector<const TA*> rows(static_cast<size_t>(MB));
          const int64_t ldc = pb.panels * NR;
          std::vector<TC> c(static_cast<size_t>(MB * ldc));
          for (int64_t blk = b0; blk < b1; ++blk) {
            const int64_t h0 = blk * MB, m = std::min(MB, H - h0);
            for (int64_t i = 0; i < m; ++i) rows[static_cast<size_t>(i)] = a + (n * H + h0 + i) * C;
            gemm_rows<NR>(rows.data(), m, pb, c.data());
            for (int64_t i = 0; i < m; ++i) {
              for (int64_t w = 0; w < W; ++w)
                store((n * H + h0 + i) * W + w, c[static_cast<size_t>(i * ldc + w)]);
            }
          }
        },
        1);
  }
}

}  // namespace

void kernel_CONV2D(KernelArgs& args) {
  const Tensor& in = args.input(0);
  const Tensor& w = args.input(1);
  const Tensor& out = args.output(0);
  check_rank(args, in, 4, "input");
  check_rank(args, w, 4, "weight");
  check_rank(args, out, 4, "output");
  const auto& pad = int_list(args, "pad", 4);
  const auto& stride = int_list(args, "stride", 2);
  const auto& dil = int_list(args, "dilation", 2);
  ConvGeom g;
  g.N = in.shape()[0], g.IH = in.shape()[1], g.IW = in.shape()[2], g.IC = in.shape()[3];
  g.OC = w.shape()[0], g.KH = w.shape()[1], g.KW = w.shape()[2];
  g.OH = out.shape()[1], g.OW = out.shape()[2];
  g.pad_y = pad[0], g.pad_x = pad[2];
  g.sy = stride[0], g.sx = stride[1], g.dy = dil[0], g.dx = dil[1];
  if (pad[0] < 0 || pad[1] < 0 || pad[2] < 0 || pad[3] < 0) args.fail("pad values must be >= 0");
  if (g.sy < 1 || g.sx < 1) args.fail("stride values must be >= 1");
  if (g.dy < 1 || g.dx < 1) args.fail("dilation values must be >= 1");
  if (w.shape()[3] != g.IC)
    args.fail("weight IC " + std::to_string(w.shape()[3]) + " != input IC " + std::to_string(g.IC));
  if (out.shape()[0] != g.N || out.shape()[3] != g.OC || g.KH < 1 || g.KW < 1 ||
      !conv_out_ok(g.OH, g.IH, pad[0] + pad[1], g.KH, g.sy, g.dy) ||
      !conv_out_ok(g.OW, g.IW, pad[2] + pad[3], g.KW, g.sx, g.dx)) {
    args.fail("output shape " + out.type().str() + " is inconsistent with input " + in.type().str() +
              ", weight " + w.type().str() + " and pad/stride/dilation");
  }
  run_conv(args, g);
}

void kernel_CONV3D(KernelArgs& args) {
  const Tensor& in = args.input(0);
  const Tensor& w = args.input(1);
  const Tensor& out = args.output(0);
  check_rank(args, in, 5, "input");
  check_rank(args, w, 5, "weight");
  check_rank(args, out, 5, "output");
  const auto& pad = int_list(args, "pad", 6);
  const auto& stride = int_list(args, "stride", 3);
  const auto& dil = int_list(args, "dilation", 3);
  ConvGeom g;
  g.N = in.shape()[0], g.ID = in.shape()[1], g.IH = in.shape()[2], g.IW = in.shape()[3], g.IC = in.shape()[4];
  g.OC = w.shape()[0], g.KD = w.shape()[1], g.KH = w.shape()[2], g.KW = w.shape()[3];
  g.OD = out.shape()[1], g.OH = out.shape()[2], g.OW = out.shape()[3];
  g.pad_d = pad[0], g.pad_y = pad[2], g.pad_x = pad[4];
  g.sd = stride[0], g.sy = stride[1], g.sx = stride[2];
  g.dd = dil[0], g.dy = dil[1], g.dx = dil[2];
  for (int64_t p : pad) {
    if (p < 0) args.fail("pad values must be >= 0");
  }
  if (g.sd < 1 || g.sy < 1 || g.sx < 1) args.fail("stride values must be >= 1");
  if (g.dd < 1 || g.dy < 1 || g.dx < 1) args.fail("dilation values must be >= 1");
  if (w.shape()[4] != g.IC)
    args.fail("weight IC " + std::to_string(w.shape()[4]) + " != input IC " + std::to_string(g.IC));
  if (out.shape()[0] != g.N || out.shape()[4] != g.OC || g.KD < 1 || g.KH < 1 || g.KW < 1 ||
      !conv_out_ok(g.OD, g.ID, pad[0] + pad[1], g.KD, g.sd, g.dd) ||
      !conv_out_ok(g.OH, g.IH, pad[2] + pad[3], g.KH, g.sy, g.dy) ||
      !conv_out_ok(g.OW, g.IW, pad[4] + pad[5], g.KW, g.sx, g.dx)) {
    args.fail("output shape " + out.type().str() + " is inconsistent with input " + in.type().str() +
              ", weight " + w.type().str() + " and pad/stride/dilation");
  }
  run_conv(args, g);
}

void kernel_TRANSPOSE_CONV2D(KernelArgs& args) {
  const Tensor& in = args.input(0);
  const Tensor& w = args.input(1);
  const Tensor& out = args.output(0);
  check_rank(args, in, 4, "input");
  check_rank(args, w, 4, "weight");
  check_rank(args, out, 4, "output");
  const auto& out_pad = int_list(args, "out_pad", 4);
  const auto& stride = int_list(args, "stride", 2);
  ConvGeom g;
  g.transpose = true;
  g.N = in.shape()[0], g.IH = in.shape()[1], g.IW = in.shape()[2], g.IC = in.shape()[3];
  g.OC = w.shape()[0], g.KH = w.shape()[1], g.KW = w.shape()[2];
  g.OH = out.shape()[1], g.OW = out.shape()[2];
  g.pad_y = out_pad[0], g.pad_x = out_pad[2];
  g.sy = stride[0], g.sx = stride[1];
  if (g.KH < 1 || g.KW < 1) args.fail("kernel dimensions must be >= 1");
  if (out_pad[0] <= -g.KH || out_pad[1] <= -g.KH) args.fail("out_pad top/bottom must be > -KH");
  if (out_pad[2] <= -g.KW || out_pad[3] <= -g.KW) args.fail("out_pad left/right must be > -KW");
  if (g.sy < 1 || g.sx < 1) args.fail("stride values must be >= 1");
  if (w.shape()[3] != g.IC)
    args.fail("weight IC " + std::to_string(w.shape()[3]) + " != input IC " + std::to_string(g.IC));
  if (out.shape()[0] != g.N || out.shape()[3] != g.OC ||
      g.OH != (g.IH - 1) * g.sy + out_pad[0] + out_pad[1] + g.KH ||
      g.OW != (g.IW - 1) * g.sx + out_pad[2] + out_pad[3] + g.KW) {
    args.fail("output shape " + out.type().str() + " is inconsistent with input " + in.type().str() +
              ", weight " + w.type().str() + " and out_pad/stride");
  }
  run_conv(args, g);
}

void kernel_DEPTHWISE_CONV2D(KernelArgs& args) {
  const Tensor& in = args.input(0);
  const Tensor& w = args.input(1);
  const Tensor& bias = args.input(2);
  Tensor& out = args.output(0);
  check_rank(args, in, 4, "input");
  check_rank(args, w, 4, "weight");
  check_rank(args, out, 4, "output");
  check_rank(args, bias, 1, "bias");
  const auto& pad = int_list(args, "pad", 4);
  const auto& stride = int_list(args, "stride", 2);
  const auto& dil = int_list(args, "dilation", 2);
  ConvGeom g;
  g.N = in.shape()[0], g.IH = in.shape()[1], g.IW = in.shape()[2], g.IC = in.shape()[3];
  g.KH = w.shape()[0], g.KW = w.shape()[1];
  const int64_t C = g.IC, M = w.shape()[3];
  g.OH = out.shape()[1], g.OW = out.shape()[2], g.OC = C * M;
  g.pad_y = pad[0], g.pad_x = pad[2];
  g.sy = stride[0], g.sx = stride[1], g.dy = dil[0], g.dx = dil[1];
  if (pad[0] < 0 || pad[1] < 0 || pad[2] < 0 || pad[3] < 0) args.fail("pad values must be >= 0");
  if (g.sy < 1 || g.sx < 1) args.fail("stride values must be >= 1");
  if (g.dy < 1 || g.dx < 1) args.fail("dilation values must be >= 1");
  if (w.shape()[2] != C)
    args.fail("weight C " + std::to_string(w.shape()[2]) + " != input C " + std::to_string(C));
  if (out.shape()[0] != g.N || out.shape()[3] != C * M || g.KH < 1 || g.KW < 1 ||
      !conv_out_ok(g.OH, g.IH, pad[0] + pad[1], g.KH, g.sy, g.dy) ||
      !conv_out_ok(g.OW, g.IW, pad[2] + pad[3], g.KW, g.sx, g.dx)) {
    args.fail("output shape " + out.type().str() + " is inconsistent with input " + in.type().str() +
              ", weight " + w.type().str() + " and pad/stride/dilation");
  }
  const DType in_t = in.dtype(), w_t = w.dtype(), out_t = out.dtype(), acc_t = acc_dtype(args);
  check_type_row(args, {in_t, w_t, out_t, acc_t});
  if (bias.dtype() != out_t) args.fail("bias must be of the output type " + std::string(dtype_name(out_t)));
  const int64_t BC = bias.shape()[0];
  if (BC != C * M && BC != 1) args.fail("bias has " + std::to_string(BC) + " channels; expected 1 or C*M");
  const int64_t izp = zero_point(args, 3, in_t, "input_zp");
  const int64_t wzp = zero_point(args, 4, w_t, "weight_zp");
  const int threads = args.ctx.threads();
  if (g.pixels() == 0 || C * M == 0) return;

  if (is_float(in_t)) {
    FloatData x = to_floats(in), wt = to_floats(w);
    FloatOutput fo{out_t, bias_floats(bias), out.mutable_bytes()};
    auto store = [&](int64_t p, int64_t o, float acc) {
      fo.store(args, p * C * M + o, BC == 1 ? 0 : o, acc);
    };
    if (acc_t == DType::kFp16)
      depthwise_float<AccF16>(g, C, M, x.p, wt.p, threads, store);
    else
      depthwise_float<AccF32>(g, C, M, x.p, wt.p, threads, store);
    return;
  }
  int64_t max_x = 0, max_w = 0;
  std::vector<int16_t> x = to_i16_minus_zp(in, izp, max_x);
  std::vector<int16_t> wt = to_i16_minus_zp(w, wzp, max_w);
  IntOutput io{out_t, bias.to_ints(), int_min(out_t), int_max(out_t), out.mutable_bytes()};
  auto store = [&](int64_t p, int64_t o, int64_t acc) {
    io.store(args, p * C * M + o, BC == 1 ? 0 : o, acc);
  };
  const int64_t hi = int_max(acc_t), lo = int_min(acc_t);
  const double bound =
      static_cast<double>(g.taps()) * static_cast<double>(max_x) * static_cast<double>(max_w);
  if (bound > static_cast<double>(hi)) {
    depthwise_int<int64_t, true>(args, g, C, M, x.data(), wt.data(), lo, hi, threads, store);
  } else if (acc_t == DType::kInt32) {
    depthwise_int<int32_t, false>(args, g, C, M, x.data(), wt.data(), lo, hi, threads, store);
  } else {
    depthwise_int<int64_t, false>(args, g, C, M, x.data(), wt.data(), lo, hi, threads, store);
  }
}

void kernel_MATMUL(KernelArgs& args) {
  const Tensor& a = args.input(0);
  const Tensor& b = args.input(1);
  Tensor& out = args.output(0);
  check_rank(args, a, 3, "A");
  check_rank(args, b, 3, "B");
  check_rank(args, out, 3, "output");
  const int64_t N = a.shape()[0], H = a.shape()[1], C = a.shape()[2], W = b.shape()[2];
  if (b.shape()[0] != N || b.shape()[1] != C) {
    args.fail("B " + b.type().str() + " does not match A " + a.type().str() + " ([N,C,W] after [N,H,C])");
  }
  if (out.shape() != Shape{N, H, W}) {
    args.fail("output shape " + out.type().str() + " is inconsistent with A " + a.type().str() + " and B " +
              b.type().str());
  }
  const DType in_t = a.dtype(), out_t = out.dtype();
  if (b.dtype() != in_t) args.fail("A and B must have the same element type");
  check_type_row(args, {in_t, out_t});
  const int64_t azp = zero_point(args, 2, in_t, "A_zp");
  const int64_t bzp = zero_point(args, 3, in_t, "B_zp");
  const int threads = args.ctx.threads();
  if (out.num_elements() == 0) return;

  if (is_float(in_t)) {
    FloatData x = to_floats(a), y = to_floats(b);
    void* base = out.mutable_bytes();
    auto store = [&](int64_t i, float acc) {
      dispatch(out_t, [&](auto tag) {
        constexpr DType T = decltype(tag)::value;
        if constexpr (is_float_dtype(T)) store_float<T>(base, i, acc);  // acc is already in out_t
      });
    };
    if (out_t == DType::kFp16) {
      std::vector<float> acc(static_cast<size_t>(N * H * W));
      matmul_direct_float<AccF16>(N, H, C, W, x.p, y.p, threads, acc.data());
      for (int64_t i = 0; i < N * H * W; ++i) store(i, acc[static_cast<size_t>(i)]);
    } else {
      float* o = out.mutable_data<float>();
      matmul_gemm<kNR<float>, float, float>(N, H, C, W, x.p, y.p, threads,
                                            [&](int64_t i, float acc) { o[i] = acc; });
    }
    return;
  }
  int64_t max_a = 0, max_b = 0;
  std::vector<int16_t> x = to_i16_minus_zp(a, azp, max_a);
  std::vector<int16_t> y = to_i16_minus_zp(b, bzp, max_b);
  const int64_t hi = int_max(out_t), lo = int_min(out_t);
  const double bound = static_cast<double>(C) * static_cast<double>(max_a) * static_cast<double>(max_b);
  if (bound > static_cast<double>(hi)) {
    // Exact order with the REQUIRE of every apply_add_s.
    void* base = out.mutable_bytes();
    parallel_for(
        threads, N * H,
        [&](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; ++r) {
            const int64_t n = r / H;
            for (int64_t w = 0; w < W; ++w) {
              int64_t acc = 0;
              for (int64_t c = 0; c < C; ++c) {
                acc += static_cast<int64_t>(x[static_cast<size_t>(r * C + c)]) *
                       y[static_cast<size_t>((n * C + c) * W + w)];
                if (acc < lo || acc > hi) args.fail("REQUIRE failed: accumulator overflow");
              }
              if (out_t == DType::kInt32)
                static_cast<int32_t*>(base)[r * W + w] = static_cast<int32_t>(acc);
              else
                static_cast<int64_t*>(base)[r * W + w] = acc;
            }
          }
        },
        1);
  } else if (out_t == DType::kInt32) {
    int32_t* o = out.mutable_data<int32_t>();
    matmul_gemm<kNR<int16_t>, int16_t, int32_t>(N, H, C, W, x.data(), y.data(), threads,
                                                [&](int64_t i, int32_t acc) { o[i] = acc; });
  } else {
    int64_t* o = out.mutable_data<int64_t>();
    matmul_gemm<kNR<int16_t>, int16_t, int64_t>(N, H, C, W, x.data(), y.data(), threads,
                                                [&](int64_t i, int64_t acc) { o[i] = acc; });
  }
}

}  // namespace weft::ref
