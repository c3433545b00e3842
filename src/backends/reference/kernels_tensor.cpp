// Reference kernels of the TOSA 1.0 tensor operators that are not convolutions: ARGMAX,
// AVG_POOL2D, MAX_POOL2D, FFT2D, RFFT2D. (The convolutions and MATMUL are in kernels_conv.cpp.)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "backends/reference/kernel_util.h"
#include "backends/reference/kernels.h"
#include "backends/reference/parallel.h"
#include "weft/ops.h"

namespace weft::ref {
namespace {

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

const std::vector<int64_t>& int_list(const KernelArgs& args, const char* name, size_t length) {
  const std::vector<int64_t>& v = args.node.attr_ints(name);
  if (v.size() != length) {
    args.fail(std::string("attribute ") + name + " needs " + std::to_string(length) + " values, got " +
              std::to_string(v.size()));
  }
  return v;
}

NanMode nan_mode(const KernelArgs& args) {
  int64_t v = args.node.attr_int("nan_mode");
  if (v != static_cast<int64_t>(NanMode::kPropagate) && v != static_cast<int64_t>(NanMode::kIgnore)) {
    args.fail("invalid nan_mode value " + std::to_string(v));
  }
  return static_cast<NanMode>(v);
}

// minimum_s<in_t>() for floating-point types: -infinity, except fp8e4m3 (no infinities): -448.
float float_minimum(DType t) {
  return t == DType::kFp8E4M3 ? -448.0f : -std::numeric_limits<float>::infinity();
}

// apply_max_s<in_t>(a, b, nan_mode) for floating-point values (exactly representable in float).
inline float apply_max_float(float a, float b, NanMode mode) {
  if (std::isnan(a) || std::isnan(b)) {
    if (mode == NanMode::kPropagate) return std::numeric_limits<float>::quiet_NaN();
    return std::isnan(a) ? b : a;
  }
  return a >= b ? a : b;
}

// Element access for generic (all-type) kernels: floats as float, integers as int64.
template <DType T>
inline int64_t load_int(const void* base, int64_t i) {
  using S = typename Storage<T>::type;
  return static_cast<int64_t>(static_cast<const S*>(base)[i]);
}
template <DType T>
inline void store_int(void* base, int64_t i, int64_t v) {
  using S = typename Storage<T>::type;
  static_cast<S*>(base)[i] = static_cast<S>(v);
}

// ---- apply_scale_32 / reciprocal_scale (TOSA 1.0 scale_helpers), with their REQUIREs ----

int32_t apply_scale_32_checked(const KernelArgs& args, int32_t value, int32_t multiplier, int8_t shift) {
  args.require(multiplier >= 0, "multiplier >= 0");
  args.require(2 <= shift && shift <= 62, "2 <= shift <= 62");
  const int64_t half = int64_t{1} << (shift - 1);
  args.require(value >= -half && value < half, "value within the range of apply_scale_32's shift");
  int64_t result = static_cast<int64_t>(value) * multiplier + half;
  result >>= shift;  // arithmetic shift (C++20)
  return static_cast<int32_t>(result);
}

struct Scale {
  int32_t multiplier;
  int8_t shift;
};

Scale reciprocal_scale(uint32_t value) {
  // k = 32 - count_leading_zeros(value - 1): (1 << k) / 2 < value <= (1 << k)
  int32_t k = 0;
  for (uint32_t v = value - 1; v != 0; v >>= 1) ++k;
  int64_t numerator = ((int64_t{1} << 30) + 1) << k;
  return {static_cast<int32_t>(numerator / value), static_cast<int8_t>(30 + k)};
}

// ---- Pool geometry ----

struct PoolGeom {
  int64_t N, IH, IW, C, OH, OW, KY, KX, SY, SX, PT, PL;
};

PoolGeom pool_geometry(KernelArgs& args) {
  const Tensor& in = args.input(0);
  const Tensor& out = args.output(0);
  if (in.rank() != 4 || out.rank() != 4) args.fail("input and output must have rank 4");
  const auto& kernel = int_list(args, "kernel", 2);
  const auto& stride = int_list(args, "stride", 2);
  const auto& pad = int_list(args, "pad", 4);
  PoolGeom g{in.shape()[0], in.shape()[1], in.shape()[2], in.shape()[3], out.shape()[1], out.shape()[2],
             kernel[0],     kernel[1],     stride[0],     stride[1],     pad[0],         pad[2]};
  if (g.KY < 1 || g.KX < 1) args.fail("kernel size must be >= 1");
  if (g.SY < 1 || g.SX < 1) args.fail("stride values must be >= 1");
  if (pad[0] < 0 || pad[1] < 0 || pad[2] < 0 || pad[3] < 0) args.fail("pad values must be >= 0");
  if (pad[2] >= g.KX || pad[3] >= g.KX || pad[0] >= g.KY || pad[1] >= g.KY) {
    args.fail("padding must be smaller than the kernel size");
  }
  // OH = (IH + pads - kernel) / stride + 1; exact divisibility is an ERROR_IF the verifier reports.
  const int64_t span_y = g.IH + pad[0] + pad[1] - g.KY, span_x = g.IW + pad[2] + pad[3] - g.KX;
  if (out.shape()[0] != g.N || out.shape()[3] != g.C || span_y < 0 || span_x < 0 ||
      g.OH != span_y / g.SY + 1 || g.OW != span_x / g.SX + 1) {
    args.fail("output shape " + out.type().str() + " is inconsistent with input " + in.type().str() +
              " and kernel/stride/pad");
  }
  return g;
}

// Fixed-size NaN-aware window loop: calls visit(y, x) for the in-range taps of (oy, ox), in the
// spec's (ky, kx) order.
template <class F>
inline void for_window(const PoolGeom& g, int64_t oy, int64_t ox, F&& visit) {
  const int64_t iy = oy * g.SY - g.PT, ix = ox * g.SX - g.PL;
  for (int64_t ky = 0; ky < g.KY; ++ky) {
    const int64_t y = iy + ky;
    if (y < 0 || y >= g.IH) continue;
    for (int64_t kx = 0; kx < g.KX; ++kx) {
      const int64_t x = ix + kx;
      if (x < 0 || x >= g.IW) continue;
      visit(y, x);
    }
  }
}

int64_t pool_zero_point(const KernelArgs& args, size_t index, DType t, const char* name) {
  const Tensor& z = args.input(index);
  if (z.dtype() != t || z.rank() != 1 || z.num_elements() != 1) {
    args.fail(std::string(name) + " must be a [1] tensor of " + dtype_name(t) + ", got " + z.type().str());
  }
  if (is_float(t)) {
    if (z.at_double(0) != 0.0)
      args.fail(std::string("REQUIRE failed: ") + name + " == 0 for " + dtype_name(t));
    return 0;
  }
  int64_t v = z.at_int(0);
  if (t != DType::kInt8 && v != 0)
    args.fail(std::string("REQUIRE failed: ") + name + " == 0 for " + dtype_name(t));
  return v;
}

// ---- FFT helpers ----

bool power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// cos/sin of 2*pi*k/n for k in [0, n), exact at the multiples of a quarter turn so that terms the
// specification treats as sin(a) == 0 contribute exact zeros.
struct Twiddles {
  std::vector<double> c, s;
  explicit Twiddles(int64_t n) : c(static_cast<size_t>(n)), s(static_cast<size_t>(n)) {
    for (int64_t k = 0; k < n; ++k) {
      if ((4 * k) % n == 0) {
        const int64_t q = (4 * k) / n;  // quarter turns: 0..3
        const double cq[4] = {1, 0, -1, 0}, sq[4] = {0, 1, 0, -1};
        c[static_cast<size_t>(k)] = cq[q];
        s[static_cast<size_t>(k)] = sq[q];
      } else {
        const double a = 2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(n);
        c[static_cast<size_t>(k)] = std::cos(a);
        s[static_cast<size_t>(k)] = std::sin(a);
      }
    }
  }
};

// One batch of the 2-D DFT: out[oy][ox] = sum_{iy,ix} x[iy][ix] * exp(-i*sign*2*pi*(iy*oy/H + ix*ox/W))
// for ox < out_w, computed separably (rows, then columns) in double precision. The angle indices are
// reduced modulo H and W exactly as in the pseudocode.
void dft2d(int64_t H, int64_t W, int64_t out_w, const float* xr, const float* xi, double sign,
           const Twiddles& th, const Twiddles& tw, float* out_r, float* out_i) {
  std::vector<double> rr(static_cast<size_t>(H * out_w)), ri(static_cast<size_t>(H * out_w));
  for (int64_t iy = 0; iy < H; ++iy) {
    for (int64_t ox = 0; ox < out_w; ++ox) {
      double sr = 0.0, si = 0.0;
      for (int64_t ix = 0; ix < W; ++ix) {
        const size_t k = static_cast<size_t>((ix * ox) % W);
        const double c = tw.c[k], s = sign * tw.s[k];
        const double vr = xr[iy * W + ix], vi = xi ? xi[iy * W + ix] : 0.0;
        sr += vr * c + vi * s;
        si += -vr * s + vi * c;
      }
      rr[static_cast<size_t>(iy * out_w + ox)] = sr;
      ri[static_cast<size_t>(iy * out_w + ox)] = si;
    }
  }
  for (int64_t oy = 0; oy < H; ++oy) {
    for (int64_t ox = 0; ox < out_w; ++ox) {
      double sr = 0.0, si = 0.0;
      for (int64_t iy = 0; iy < H; ++iy) {
        const size_t k = static_cast<size_t>((iy * oy) % H);
        const double c = th.c[k], s = sign * th.s[k];
        const double vr = rr[static_cast<size_t>(iy * out_w + ox)],
                     vi = ri[static_cast<size_t>(iy * out_w + ox)];
        sr += vr * c + vi * s;
        si += -vr * s + vi * c;
      }
      out_r[oy * out_w + ox] = static_cast<float>(sr);
      out_i[oy * out_w + ox] = static_cast<float>(si);
    }
  }
}

}  // namespace

void kernel_ARGMAX(KernelArgs& args) {
  const Tensor& in = args.input(0);
  Tensor& out = args.output(0);
  check_type_row(args, {in.dtype(), out.dtype()});
  const int64_t axis = args.node.attr_int("axis");
  const int rank = in.rank();
  if (rank < 1 || axis < 0 || axis >= rank)
    args.fail("axis " + std::to_string(axis) + " out of range for " + in.type().str());
  Shape expect;
  for (int i = 0; i < rank; ++i) {
    if (i != axis) expect.push_back(in.shape()[static_cast<size_t>(i)]);
  }
  if (out.shape() != expect)
    args.fail("output shape " + out.type().str() + " must be the input shape without the axis");
  const NanMode mode = nan_mode(args);
  int64_t outer = 1, inner = 1;
  const int64_t len = in.shape()[static_cast<size_t>(axis)];
  for (int i = 0; i < axis; ++i) outer *= in.shape()[static_cast<size_t>(i)];
  for (int i = static_cast<int>(axis) + 1; i < rank; ++i) inner *= in.shape()[static_cast<size_t>(i)];
  args.require(len - 1 <= std::numeric_limits<int32_t>::max(), "i <= maximum<out_t>");
  int32_t* o = out.mutable_data<int32_t>();
  dispatch(in.dtype(), [&](auto tag) {
    constexpr DType T = decltype(tag)::value;
    const void* base = in.bytes();
    for (int64_t l = 0; l < outer; ++l) {
      for (int64_t r = 0; r < inner; ++r) {
        int32_t max_index = 0;
        if constexpr (is_float_dtype(T)) {
          float max_value =
              mode == NanMode::kIgnore ? std::numeric_limits<float>::quiet_NaN() : float_minimum(T);
          for (int64_t i = 0; i < len; ++i) {
            const float value = load_float<T>(base, (l * len + i) * inner + r);
            const float result = apply_max_float(value, max_value, mode);
            // Compared as values: signed zeros are equal, NaN differs from everything.
            if (result != max_value && !(std::isnan(result) && std::isnan(max_value))) {
              max_value = result;
              max_index = static_cast<int32_t>(i);
            }
          }
        } else if constexpr (T == DType::kInt8 || T == DType::kInt16) {
          int64_t max_value = int_min(T);
          for (int64_t i = 0; i < len; ++i) {
            const int64_t value = load_int<T>(base, (l * len + i) * inner + r);
            const int64_t result = value >= max_value ? value : max_value;
            if (result != max_value) {
              max_value = result;
              max_index = static_cast<int32_t>(i);
            }
          }
        }
        o[l * inner + r] = max_index;
      }
    }
  });
}

void kernel_MAX_POOL2D(KernelArgs& args) {
  const Tensor& in = args.input(0);
  Tensor& out = args.output(0);
  const DType t = in.dtype();
  if (out.dtype() != t) args.fail("input and output types differ");
  check_type_row(args, {t});
  const PoolGeom g = pool_geometry(args);
  const NanMode mode = nan_mode(args);
  dispatch(t, [&](auto tag) {
    constexpr DType T = decltype(tag)::value;
    if constexpr (is_float_dtype(T) || T == DType::kInt8 || T == DType::kInt16) {
      const void* src = in.bytes();
      void* dst = out.mutable_bytes();
      parallel_for(
          args.ctx.threads(), g.N * g.OH,
          [&](int64_t r0, int64_t r1) {
            for (int64_t row = r0; row < r1; ++row) {
              const int64_t n = row / g.OH, oy = row % g.OH;
              for (int64_t ox = 0; ox < g.OW; ++ox) {
                const int64_t o = (row * g.OW + ox) * g.C;
                for (int64_t c = 0; c < g.C; ++c) {
                  if constexpr (is_float_dtype(T)) {
                    float acc =
                        mode == NanMode::kIgnore ? std::numeric_limits<float>::quiet_NaN() : float_minimum(T);
                    for_window(g, oy, ox, [&](int64_t y, int64_t x) {
                      acc = apply_max_float(acc, load_float<T>(src, ((n * g.IH + y) * g.IW + x) * g.C + c),
                                            mode);
                    });
                    store_float<T>(dst, o + c, acc);
                  } else {
                    int64_t acc = int_min(T);
                    for_window(g, oy, ox, [&](int64_t y, int64_t x) {
                      acc = std::max(acc, load_int<T>(src, ((n * g.IH + y) * g.IW + x) * g.C + c));
                    });
                    store_int<T>(dst, o + c, acc);
                  }
                }
              }
            }
          },
          4);
    }
  });
}

void kernel_AVG_POOL2D(KernelArgs& args) {
  const Tensor& in = args.input(0);
  Tensor& out = args.output(0);
  const DType t = in.dtype();
  if (out.dtype() != t) args.fail("input and output types differ");
  const int64_t acc_attr = args.node.attr_int("acc_type");
  DType acc_t;
  switch (acc_attr) {
    case static_cast<int64_t>(AccType::kInt32):
      acc_t = DType::kInt32;
      break;
    case static_cast<int64_t>(AccType::kInt48):
      acc_t = DType::kInt48;
      break;
    case static_cast<int64_t>(AccType::kFp16):
      acc_t = DType::kFp16;
      break;
    case static_cast<int64_t>(AccType::kFp32):
      acc_t = DType::kFp32;
      break;
    default:
      args.fail("invalid acc_type value " + std::to_string(acc_attr));
  }
  check_type_row(args, {t, acc_t});
  const PoolGeom g = pool_geometry(args);
  const int64_t izp = pool_zero_point(args, 1, t, "input_zp");
  const int64_t ozp = pool_zero_point(args, 2, t, "output_zp");
  dispatch(t, [&](auto tag) {
    constexpr DType T = decltype(tag)::value;
    if constexpr (is_float_dtype(T) || T == DType::kInt8 || T == DType::kInt16) {
      const void* src = in.bytes();
      void* dst = out.mutable_bytes();
      parallel_for(
          args.ctx.threads(), g.N * g.OH,
          [&](int64_t r0, int64_t r1) {
            for (int64_t row = r0; row < r1; ++row) {
              const int64_t n = row / g.OH, oy = row % g.OH;
              for (int64_t ox = 0; ox < g.OW; ++ox) {
                const int64_t o = (row * g.OW + ox) * g.C;
                for (int64_t c = 0; c < g.C; ++c) {
                  int64_t count = 0;
                  if constexpr (is_float_dtype(T)) {
                    // acc_t arithmetic: fp32 natively, fp16 rounded after every addition.
                    float acc = 0.0f;
                    for_window(g, oy, ox, [&](int64_t y, int64_t x) {
                      ++count;
                      acc = round_to(acc_t, acc + load_float<T>(src, ((n * g.IH + y) * g.IW + x) * g.C + c));
                    });
                    args.require(count > 0, "a pooling window with at least one input value");
                    // output_val = acc / static_cast<in_out_t>(count): the divisor is rounded to in_out_t,
                    // the quotient computed in acc_t (the wider type), then written as in_out_t.
                    const float divisor = round_to(T, static_cast<float>(count));
                    store_float<T>(dst, o + c, round_to(T, round_to(acc_t, acc / divisor)));
                  } else {
                    int64_t acc = 0;
                    for_window(g, oy, ox, [&](int64_t y, int64_t x) {
                      ++count;
                      acc += load_int<T>(src, ((n * g.IH + y) * g.IW + x) * g.C + c) - izp;
                      args.require(acc >= INT32_MIN && acc <= INT32_MAX, "accumulator within int32");
                    });
                    args.require(count > 0, "a pooling window with at least one input value");
                    const Scale s = reciprocal_scale(static_cast<uint32_t>(count));
                    int64_t v =
                        apply_scale_32_checked(args, static_cast<int32_t>(acc), s.multiplier, s.shift);
                    v += ozp;
                    v = std::clamp<int64_t>(v, int_min(T), int_max(T));
                    store_int<T>(dst, o + c, v);
                  }
                }
              }
            }
          },
          4);
    }
  });
}

void kernel_FFT2D(KernelArgs& args) {
  const Tensor& xr = args.input(0);
  const Tensor& xi = args.input(1);
  check_type_row(args, {xr.dtype()});
  if (xi.dtype() != xr.dtype() || args.output(0).dtype() != xr.dtype() ||
      args.output(1).dtype() != xr.dtype()) {
    args.fail("all operands must be fp32");
  }
  if (xr.rank() != 3 || xi.shape() != xr.shape() || args.output(0).shape() != xr.shape() ||
      args.output(1).shape() != xr.shape()) {
    args.fail("inputs and outputs must all have the shape [N,H,W], got " + xr.type().str());
  }
  const int64_t N = xr.shape()[0], H = xr.shape()[1], W = xr.shape()[2];
  if (!power_of_two(H) || !power_of_two(W)) args.fail("H and W must be powers of two");
  const double sign = args.node.attr_bool("inverse") ? -1.0 : 1.0;
  const Twiddles th(H), tw(W);
  const float* pr = xr.data<float>();
  const float* pi = xi.data<float>();
  float* orr = args.output(0).mutable_data<float>();
  float* oi = args.output(1).mutable_data<float>();
  parallel_for(args.ctx.threads(), N, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      const int64_t off = n * H * W;
      dft2d(H, W, W, pr + off, pi + off, sign, th, tw, orr + off, oi + off);
    }
  });
}

void kernel_RFFT2D(KernelArgs& args) {
  const Tensor& xr = args.input(0);
  check_type_row(args, {xr.dtype()});
  if (args.output(0).dtype() != xr.dtype() || args.output(1).dtype() != xr.dtype())
    args.fail("all operands must be fp32");
  if (xr.rank() != 3) args.fail("input must have shape [N,H,W], got " + xr.type().str());
  const int64_t N = xr.shape()[0], H = xr.shape()[1], W = xr.shape()[2];
  if (!power_of_two(H) || !power_of_two(W)) args.fail("H and W must be powers of two");
  const Shape expect{N, H, W / 2 + 1};
  if (args.output(0).shape() != expect || args.output(1).shape() != expect) {
    args.fail("outputs must have the shape " + shape_str(expect));
  }
  const Twiddles th(H), tw(W);
  const float* pr = xr.data<float>();
  float* orr = args.output(0).mutable_data<float>();
  float* oi = args.output(1).mutable_data<float>();
  const int64_t ow = W / 2 + 1;
  parallel_for(args.ctx.threads(), N, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      dft2d(H, W, ow, pr + n * H * W, nullptr, 1.0, th, tw, orr + n * H * ow, oi + n * H * ow);
    }
  });
}

}  // namespace weft::ref
