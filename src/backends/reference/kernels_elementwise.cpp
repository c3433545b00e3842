// Reference kernels of the TOSA 1.0 elementwise operators: activation (CLAMP ERF SIGMOID TANH),
// elementwise binary, TABLE, elementwise unary, SELECT, comparisons and data conversion (CAST,
// RESCALE). Each follows its pseudocode in the specification. Floating-point elements are computed
// in float and rounded to their type on store (float has enough precision for a single correctly
// rounded +,-,*,/ of fp16/bf16/fp8 operands). The executor may run unverified graphs, so every kernel
// checks the types and shapes it relies on before touching memory.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <type_traits>

#include "backends/reference/broadcast.h"
#include "backends/reference/kernel_util.h"
#include "backends/reference/kernels.h"
#include "backends/reference/parallel.h"
#include "backends/reference/scale.h"
#include "weft/ops.h"

namespace weft::ref {

namespace {

// Value type an element is computed in: float for floating-point types, else the storage type.
template <DType T>
using Elem = std::conditional_t<is_float_dtype(T), float, typename Storage<T>::type>;

template <DType T>
inline Elem<T> ld(const void* base, int64_t i) {
  if constexpr (is_float_dtype(T)) {
    return load_float<T>(base, i);
  } else {
    return static_cast<const typename Storage<T>::type*>(base)[i];
  }
}

template <DType T>
inline void st(void* base, int64_t i, Elem<T> v) {
  if constexpr (is_float_dtype(T)) {
    store_float<T>(base, i, v);
  } else {
    static_cast<typename Storage<T>::type*>(base)[i] = v;
  }
}

template <DType T>
using DT = std::integral_constant<DType, T>;

// Calls f(DT<T>{}) when t is one of Ts, else fails naming the operator's supported types.
template <DType... Ts, class F>
void dispatch_among(const KernelArgs& args, DType t, F&& f) {
  bool done = ((t == Ts ? (f(DT<Ts>{}), true) : false) || ...);
  if (!done) args.fail(std::string("unsupported element type ") + dtype_name(t));
}

void check_arity(const KernelArgs& args, size_t n_in) {
  if (args.in.size() != n_in || args.out.size() != 1) {
    args.fail("expected " + std::to_string(n_in) + " inputs and 1 output");
  }
}

void check_dtype(const KernelArgs& args, const Tensor& t, DType want, const char* what) {
  if (t.dtype() != want) {
    args.fail(std::string(what) + " must have element type " + dtype_name(want) + ", got " + t.type().str());
  }
}

void check_same_shape(const KernelArgs& args, const Tensor& in, const Tensor& out) {
  if (in.shape() != out.shape()) {
    args.fail("output shape " + shape_str(out.shape()) + " differs from input shape " +
              shape_str(in.shape()));
  }
}

void check_broadcast(const KernelArgs& args, const Tensor& in, const Tensor& out, const char* what) {
  if (!broadcasts_to(in.shape(), out.shape())) {
    args.fail(std::string("ERROR_IF: ") + what + " shape " + shape_str(in.shape()) +
              " does not broadcast to output shape " + shape_str(out.shape()));
  }
}

// ERROR_IF(shape != broadcast_shape(...)): each output dimension is the largest of the inputs' (they
// are equal or 1), so an output dimension that no input has is rejected as well.
void check_broadcast_result(const KernelArgs& args, const Tensor& out,
                            std::initializer_list<const Tensor*> ins) {
  for (size_t d = 0; d < out.shape().size(); ++d) {
    int64_t dim = 1;
    for (const Tensor* t : ins) dim = std::max(dim, t->shape()[d]);
    if (dim != out.shape()[d]) {
      args.fail("ERROR_IF: output shape " + shape_str(out.shape()) +
                " is not the broadcast shape of the inputs");
    }
  }
}

// ---- Generic loops ----

// Elementwise work is memory-bound and cheap per element: only large tensors are split across the
// executor's threads (each element is written by exactly one thread, so results do not depend on
// the thread count). A REQUIRE failing in a worker is rethrown on the calling thread.
constexpr int64_t kMinElementsPerThread = int64_t{1} << 16;

template <class F>
void for_chunks(const KernelArgs& args, int64_t n, F&& fn) {
  if (n < 2 * kMinElementsPerThread) {
    if (n > 0) fn(int64_t{0}, n);
    return;
  }
  parallel_for(args.ctx.threads(), n, fn, kMinElementsPerThread);
}

// output[i] = f(input1[i]) with in type TI and out type TO; shapes must be equal.
template <DType TI, DType TO, class F>
void unary_loop(KernelArgs& args, F&& f) {
  const Tensor& in = args.input(0);
  Tensor& out = args.output(0);
  check_dtype(args, in, TI, "input");
  check_dtype(args, out, TO, "output");
  check_same_shape(args, in, out);
  const void* a = in.bytes();
  void* o = out.mutable_bytes();
  for_chunks(args, out.num_elements(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) st<TO>(o, i, f(ld<TI>(a, i)));
  });
}

// output = f(input1, input2) with broadcasting; inputs of type TI, output TO.
template <DType TI, DType TO, class F>
void binary_loop(KernelArgs& args, F&& f) {
  const Tensor& in1 = args.input(0);
  const Tensor& in2 = args.input(1);
  Tensor& out = args.output(0);
  check_dtype(args, in1, TI, "input1");
  check_dtype(args, in2, TI, "input2");
  check_dtype(args, out, TO, "output");
  check_broadcast(args, in1, out, "input1");
  check_broadcast(args, in2, out, "input2");
  check_broadcast_result(args, out, {&in1, &in2});
  const void* a = in1.bytes();
  const void* b = in2.bytes();
  void* o = out.mutable_bytes();
  if (in1.shape() == out.shape() && in2.shape() == out.shape()) {
    for_chunks(args, out.num_elements(), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) st<TO>(o, i, f(ld<TI>(a, i), ld<TI>(b, i)));
    });
    return;
  }
  for_chunks(args, out.num_elements(), [&](int64_t begin, int64_t end) {
    broadcast_runs<2>(out.shape(), {&in1.shape(), &in2.shape()}, begin, end,
                      [&](int64_t i, int64_t len, const std::array<int64_t, 2>& base, const std::array<int64_t, 2>& step) {
                        // The common stretches as loops with constant steps (which the compiler
                        // vectorizes): both inputs along, or one of them a repeated value.
                        const int64_t a0 = base[0], b0 = base[1];
                        if (step[0] == 1 && step[1] == 1) {
                          for (int64_t j = 0; j < len; ++j) st<TO>(o, i + j, f(ld<TI>(a, a0 + j), ld<TI>(b, b0 + j)));
                        } else if (step[0] == 1 && step[1] == 0) {
                          const auto bv = ld<TI>(b, b0);
                          for (int64_t j = 0; j < len; ++j) st<TO>(o, i + j, f(ld<TI>(a, a0 + j), bv));
                        } else if (step[0] == 0 && step[1] == 1) {
                          const auto av = ld<TI>(a, a0);
                          for (int64_t j = 0; j < len; ++j) st<TO>(o, i + j, f(av, ld<TI>(b, b0 + j)));
                        } else {
                          for (int64_t j = 0; j < len; ++j)
                            st<TO>(o, i + j, f(ld<TI>(a, a0 + j * step[0]), ld<TI>(b, b0 + j * step[1])));
                        }
                      });
  });
}

// Integer helpers of the pseudocode. They compute in int64 and REQUIRE the result fits in_t.
template <class S>
inline S add_s(const KernelArgs& args, S a, S b) {
  const int64_t c = static_cast<int64_t>(a) + static_cast<int64_t>(b);
  if (c < std::numeric_limits<S>::min() || c > std::numeric_limits<S>::max()) {
    args.fail("REQUIRE failed: apply_add_s result " + std::to_string(c) + " fits the element type");
  }
  return static_cast<S>(c);
}

template <class S>
inline S sub_s(const KernelArgs& args, S a, S b) {
  const int64_t c = static_cast<int64_t>(a) - static_cast<int64_t>(b);
  if (c < std::numeric_limits<S>::min() || c > std::numeric_limits<S>::max()) {
    args.fail("REQUIRE failed: apply_sub_s result " + std::to_string(c) + " fits the element type");
  }
  return static_cast<S>(c);
}

// apply_max_s / apply_min_s for floats: NaN handling per nan_mode (compare_nan).
inline float fmax_s(float a, float b, bool propagate) {
  if (std::isnan(a) || std::isnan(b)) {
    if (propagate) return std::numeric_limits<float>::quiet_NaN();
    return std::isnan(a) ? b : a;
  }
  return a >= b ? a : b;
}
inline float fmin_s(float a, float b, bool propagate) {
  if (std::isnan(a) || std::isnan(b)) {
    if (propagate) return std::numeric_limits<float>::quiet_NaN();
    return std::isnan(a) ? b : a;
  }
  return a < b ? a : b;
}

bool nan_propagate(const KernelArgs& args) {
  const int64_t v = args.node.attr_int("nan_mode");
  if (v == static_cast<int64_t>(NanMode::kPropagate)) return true;
  if (v == static_cast<int64_t>(NanMode::kIgnore)) return false;
  args.fail("invalid nan_mode value " + std::to_string(v));
}

// Reads a [1] (or rank-0) tensor operand as int64 / float, checking its type.
int64_t scalar_int(const KernelArgs& args, size_t i, DType t, const char* what) {
  const Tensor& z = args.input(i);
  if (z.dtype() != t || z.num_elements() != 1) {
    args.fail(std::string(what) + " must be a [1] tensor of " + dtype_name(t) + ", got " + z.type().str());
  }
  return z.at_int(0);
}

// Shift-amount REQUIRE shared by the three shift operators: 0 <= shift <= bits-1.
template <class S>
inline void require_shift(const KernelArgs& args, S v) {
  constexpr int bits = static_cast<int>(sizeof(S) * 8);
  if (v < 0 || v > bits - 1) {
    args.fail("REQUIRE failed: shift amount " + std::to_string(v) + " in [0, " + std::to_string(bits - 1) +
              "] for i" + std::to_string(bits));
  }
}

template <class F>
void float_unary(KernelArgs& args, F&& f) {
  check_arity(args, 1);
  dispatch_among<DType::kFp16, DType::kBf16, DType::kFp32>(args, args.input(0).dtype(), [&](auto t) {
    unary_loop<decltype(t)::value, decltype(t)::value>(args, f);
  });
}

// ADD / SUB / MAXIMUM / MINIMUM style: same in and out type.
template <DType... Ts, class F>
void same_type_binary(KernelArgs& args, F&& f) {
  check_arity(args, 2);
  dispatch_among<Ts...>(args, args.input(0).dtype(), [&](auto t) {
    constexpr DType T = decltype(t)::value;
    binary_loop<T, T>(args, [&](Elem<T> a, Elem<T> b) -> Elem<T> { return f(t, a, b); });
  });
}

// Comparison: in type T, bool output.
template <class F>
void comparison(KernelArgs& args, F&& f) {
  check_arity(args, 2);
  dispatch_among<DType::kInt32, DType::kFp16, DType::kBf16, DType::kFp32>(
      args, args.input(0).dtype(), [&](auto t) {
        constexpr DType T = decltype(t)::value;
        binary_loop<T, DType::kBool>(args, [&](Elem<T> a, Elem<T> b) -> uint8_t { return f(a, b) ? 1 : 0; });
      });
}

// Round-to-odd conversion of an exactly representable double to float: when the result is then
// rounded again to fp16/bf16/fp8 (which have at most 11 significant bits, far below float's 24), the
// two roundings give the correctly rounded result, avoiding double-rounding errors for i32 inputs.
float to_float_round_odd(double d) {
  float f = static_cast<float>(d);
  if (static_cast<double>(f) == d || std::isinf(f)) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  bits |= 1u;
  std::memcpy(&f, &bits, sizeof bits);
  return f;
}

}  // namespace

// ============================== Activation ==============================

void kernel_CLAMP(KernelArgs& args) {
  check_arity(args, 1);
  const bool propagate = nan_propagate(args);
  const Tensor& min_t = args.node.attr_tensor("min_val");
  const Tensor& max_t = args.node.attr_tensor("max_val");
  const DType t = args.input(0).dtype();
  if (min_t.dtype() != t || max_t.dtype() != t || min_t.num_elements() != 1 || max_t.num_elements() != 1) {
    args.fail(std::string("min_val and max_val must be scalars of ") + dtype_name(t));
  }
  dispatch_among<DType::kInt8, DType::kInt16, DType::kFp16, DType::kBf16, DType::kFp32>(
      args, t, [&](auto tc) {
        constexpr DType T = decltype(tc)::value;
        const Elem<T> lo = ld<T>(min_t.bytes(), 0);
        const Elem<T> hi = ld<T>(max_t.bytes(), 0);
        if constexpr (is_float_dtype(T)) {
          if (std::isnan(lo) || std::isnan(hi)) args.fail("ERROR_IF: min_val and max_val must not be NaN");
          if (hi < lo) args.fail("ERROR_IF: max_val < min_val");
          // apply_clip_s: max_s(value, min) then min_s(.., max); IGNORE turns a NaN input into min_val.
          unary_loop<T, T>(args, [&](float v) { return fmin_s(fmax_s(v, lo, propagate), hi, propagate); });
        } else {
          if (hi < lo) args.fail("ERROR_IF: max_val < min_val");
          unary_loop<T, T>(args, [&](Elem<T> v) -> Elem<T> { return v < lo ? lo : (v > hi ? hi : v); });
        }
      });
}

void kernel_ERF(KernelArgs& args) {
  float_unary(args, [](float x) { return std::erf(x); });
}

void kernel_SIGMOID(KernelArgs& args) {
  // sigmoid(x) = 1 / (1 + e^-x), evaluated in double so the float result is accurate at both tails.
  float_unary(args,
              [](float x) { return static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(x)))); });
}

void kernel_TANH(KernelArgs& args) {
  float_unary(args, [](float x) { return std::tanh(x); });
}

// ============================== Elementwise binary ==============================

void kernel_ADD(KernelArgs& args) {
  same_type_binary<DType::kInt32, DType::kFp16, DType::kBf16, DType::kFp32>(
      args, [&](auto t, auto a, auto b) {
        if constexpr (is_float_dtype(decltype(t)::value))
          return a + b;
        else
          return add_s(args, a, b);
      });
}

void kernel_SUB(KernelArgs& args) {
  same_type_binary<DType::kInt32, DType::kFp16, DType::kBf16, DType::kFp32>(
      args, [&](auto t, auto a, auto b) {
        if constexpr (is_float_dtype(decltype(t)::value))
          return a - b;
        else
          return sub_s(args, a, b);
      });
}

void kernel_ARITHMETIC_RIGHT_SHIFT(KernelArgs& args) {
  const bool round = args.node.attr_bool("round");
  same_type_binary<DType::kInt8, DType::kInt16, DType::kInt32>(args, [&](auto, auto a, auto b) {
    using S = decltype(a);
    require_shift(args, b);
    const int32_t a32 = a, b32 = b;
    int32_t result = a32 >> b32;
    // round: add the last bit shifted out (apply_arith_rshift(value1, value2 - 1) & 1).
    if (round && b32 > 0 && ((a32 >> (b32 - 1)) & 1) != 0) result += 1;
    return static_cast<S>(result);
  });
}

void kernel_BITWISE_AND(KernelArgs& args) {
  same_type_binary<DType::kInt8, DType::kInt16, DType::kInt32>(
      args, [](auto, auto a, auto b) { return static_cast<decltype(a)>(a & b); });
}

void kernel_BITWISE_OR(KernelArgs& args) {
  same_type_binary<DType::kInt8, DType::kInt16, DType::kInt32>(
      args, [](auto, auto a, auto b) { return static_cast<decltype(a)>(a | b); });
}

void kernel_BITWISE_XOR(KernelArgs& args) {
  same_type_binary<DType::kInt8, DType::kInt16, DType::kInt32>(
      args, [](auto, auto a, auto b) { return static_cast<decltype(a)>(a ^ b); });
}

void kernel_INTDIV(KernelArgs& args) {
  same_type_binary<DType::kInt32>(args, [&](auto, int32_t a, int32_t b) {
    if (b == 0) args.fail("REQUIRE failed: INTDIV divisor != 0");
    // apply_intdiv_s: int64 division truncating toward zero, REQUIRE the quotient fits.
    const int64_t c = static_cast<int64_t>(a) / b;
    if (c > std::numeric_limits<int32_t>::max()) args.fail("REQUIRE failed: INTDIV quotient fits i32");
    return static_cast<int32_t>(c);
  });
}

void kernel_LOGICAL_AND(KernelArgs& args) {
  same_type_binary<DType::kBool>(args,
                                 [](auto, uint8_t a, uint8_t b) -> uint8_t { return (a && b) ? 1 : 0; });
}

void kernel_LOGICAL_OR(KernelArgs& args) {
  same_type_binary<DType::kBool>(args,
                                 [](auto, uint8_t a, uint8_t b) -> uint8_t { return (a || b) ? 1 : 0; });
}

void kernel_LOGICAL_XOR(KernelArgs& args) {
  same_type_binary<DType::kBool>(
      args, [](auto, uint8_t a, uint8_t b) -> uint8_t { return ((a != 0) != (b != 0)) ? 1 : 0; });
}

void kernel_LOGICAL_LEFT_SHIFT(KernelArgs& args) {
  same_type_binary<DType::kInt8, DType::kInt16, DType::kInt32>(args, [&](auto, auto a, auto b) {
    using S = decltype(a);
    using U = std::make_unsigned_t<S>;
    require_shift(args, b);
    // Bits shifted past the top are lost (the shift happens in the unsigned pattern of in_out_t).
    return static_cast<S>(static_cast<U>(static_cast<U>(a) << b));
  });
}

void kernel_LOGICAL_RIGHT_SHIFT(KernelArgs& args) {
  same_type_binary<DType::kInt8, DType::kInt16, DType::kInt32>(args, [&](auto, auto a, auto b) {
    using S = decltype(a);
    using U = std::make_unsigned_t<S>;
    require_shift(args, b);
    // The value is zero-extended from its own width: i8 -1 >> 1 == 0x7f.
    return static_cast<S>(static_cast<U>(static_cast<U>(a) >> b));
  });
}

void kernel_MAXIMUM(KernelArgs& args) {
  const bool propagate = nan_propagate(args);
  same_type_binary<DType::kInt32, DType::kFp16, DType::kBf16, DType::kFp32>(
      args, [&](auto t, auto a, auto b) {
        if constexpr (is_float_dtype(decltype(t)::value))
          return fmax_s(a, b, propagate);
        else
          return a >= b ? a : b;
      });
}

void kernel_MINIMUM(KernelArgs& args) {
  const bool propagate = nan_propagate(args);
  same_type_binary<DType::kInt32, DType::kFp16, DType::kBf16, DType::kFp32>(
      args, [&](auto t, auto a, auto b) {
        if constexpr (is_float_dtype(decltype(t)::value))
          return fmin_s(a, b, propagate);
        else
          return a < b ? a : b;
      });
}

void kernel_MUL(KernelArgs& args) {
  check_arity(args, 3);
  const int64_t shift = scalar_int(args, 2, DType::kInt8, "shift");
  args.require(0 <= shift && shift <= 63, "0 <= shift <= 63");
  const DType t = args.input(0).dtype();
  args.require(t == DType::kInt32 || shift == 0, "shift == 0 unless in_t is i32");
  dispatch_among<DType::kInt8, DType::kInt16, DType::kInt32, DType::kFp16, DType::kBf16, DType::kFp32>(
      args, t, [&](auto tc) {
        constexpr DType TI = decltype(tc)::value;
        if constexpr (is_float_dtype(TI)) {
          binary_loop<TI, TI>(args, [](float a, float b) { return a * b; });
        } else if constexpr (TI == DType::kInt32) {
          if (shift == 0) {
            // Low 32 bits of the product.
            binary_loop<TI, DType::kInt32>(args, [](int32_t a, int32_t b) {
              return static_cast<int32_t>(static_cast<uint32_t>(a) * static_cast<uint32_t>(b));
            });
          } else {
            // (product + (1 << (shift - 1))) >> shift, written as floor(product / 2^shift) plus bit
            // shift-1 of the product: the same value without the int64 overflow at shift 63.
            binary_loop<TI, DType::kInt32>(args, [&](int32_t a, int32_t b) {
              const int64_t prod = static_cast<int64_t>(a) * b;
              const int64_t p = (prod >> shift) + ((prod >> (shift - 1)) & 1);
              if (p < std::numeric_limits<int32_t>::min() || p > std::numeric_limits<int32_t>::max()) {
                args.fail("REQUIRE failed: MUL rounded product " + std::to_string(p) + " fits i32");
              }
              return static_cast<int32_t>(p);
            });
          }
        } else {
          // i8 / i16 inputs: the product always fits the i32 output.
          binary_loop<TI, DType::kInt32>(
              args, [](Elem<TI> a, Elem<TI> b) { return static_cast<int32_t>(a) * static_cast<int32_t>(b); });
        }
      });
}

void kernel_POW(KernelArgs& args) {
  same_type_binary<DType::kFp16, DType::kBf16, DType::kFp32>(args, [&](auto, float a, float b) {
    if (std::isnan(a) || std::isnan(b)) args.fail("REQUIRE failed: POW operands are not NaN");
    if (!std::isfinite(a) || !std::isfinite(b)) args.fail("REQUIRE failed: POW operands are finite");
    if (!(a >= 0)) args.fail("REQUIRE failed: POW input1 >= 0");
    if (!(a > 0 || b > 0)) args.fail("REQUIRE failed: POW input1 > 0 || input2 > 0");
    return static_cast<float>(std::pow(static_cast<double>(a), static_cast<double>(b)));
  });
}

void kernel_TABLE(KernelArgs& args) {
  check_arity(args, 2);
  const Tensor& table = args.input(1);
  const DType t = args.input(0).dtype();
  if (t == DType::kInt8) {
    check_dtype(args, table, DType::kInt8, "table");
    args.require(table.rank() == 1 && table.num_elements() == 256, "length(table) == 256 for i8");
    const int8_t* tab = table.data<int8_t>();
    unary_loop<DType::kInt8, DType::kInt8>(args, [&](int8_t v) { return tab[static_cast<int>(v) + 128]; });
  } else if (t == DType::kInt16) {
    check_dtype(args, table, DType::kInt16, "table");
    args.require(table.rank() == 1 && table.num_elements() == 513, "length(table) == 513 for i16");
    const int16_t* tab = table.data<int16_t>();
    // apply_lookup_s: the top 9 bits (offset by 32768) pick an entry, the low 7 interpolate
    // linearly towards the next one; the result has 16 + 7 significant bits.
    unary_loop<DType::kInt16, DType::kInt32>(args, [&](int16_t v) {
      const int32_t index = (static_cast<int32_t>(v) + 32768) >> 7;
      const int32_t fraction = static_cast<int32_t>(v) & 0x7f;
      const int32_t base = tab[index];
      const int32_t slope = static_cast<int32_t>(tab[index + 1]) - base;
      if (slope < std::numeric_limits<int16_t>::min() || slope > std::numeric_limits<int16_t>::max()) {
        args.fail("REQUIRE failed: TABLE slope " + std::to_string(slope) + " fits i16");
      }
      return base * 128 + slope * fraction;
    });
  } else {
    args.fail(std::string("unsupported element type ") + dtype_name(t));
  }
}

// ============================== Elementwise unary ==============================

void kernel_ABS(KernelArgs& args) {
  check_arity(args, 1);
  dispatch_among<DType::kInt32, DType::kFp16, DType::kBf16, DType::kFp32>(
      args, args.input(0).dtype(), [&](auto tc) {
        constexpr DType T = decltype(tc)::value;
        if constexpr (is_float_dtype(T)) {
          unary_loop<T, T>(args, [](float v) { return std::fabs(v); });  // -0 -> +0, NaN stays NaN
        } else {
          unary_loop<T, T>(args, [&](int32_t v) { return v < 0 ? sub_s<int32_t>(args, 0, v) : v; });
        }
      });
}

void kernel_BITWISE_NOT(KernelArgs& args) {
  check_arity(args, 1);
  dispatch_among<DType::kInt8, DType::kInt16, DType::kInt32>(args, args.input(0).dtype(), [&](auto tc) {
    constexpr DType T = decltype(tc)::value;
    unary_loop<T, T>(args, [](Elem<T> v) { return static_cast<Elem<T>>(~v); });
  });
}

void kernel_CEIL(KernelArgs& args) {
  float_unary(args, [](float x) { return std::ceil(x); });
}

void kernel_CLZ(KernelArgs& args) {
  check_arity(args, 1);
  dispatch_among<DType::kInt32>(args, args.input(0).dtype(), [&](auto) {
    unary_loop<DType::kInt32, DType::kInt32>(args, [](int32_t v) {
      const uint32_t u = static_cast<uint32_t>(v);
      return u == 0 ? 32 : __builtin_clz(u);
    });
  });
}

void kernel_COS(KernelArgs& args) {
  float_unary(args, [](float x) { return static_cast<float>(std::cos(static_cast<double>(x))); });
}

void kernel_EXP(KernelArgs& args) {
  float_unary(args, [](float x) { return std::exp(x); });
}

void kernel_FLOOR(KernelArgs& args) {
  float_unary(args, [](float x) { return std::floor(x); });
}

void kernel_LOG(KernelArgs& args) {
  float_unary(args, [](float x) { return std::log(x); });
}

void kernel_LOGICAL_NOT(KernelArgs& args) {
  check_arity(args, 1);
  dispatch_among<DType::kBool>(args, args.input(0).dtype(), [&](auto) {
    unary_loop<DType::kBool, DType::kBool>(args, [](uint8_t v) -> uint8_t { return v ? 0 : 1; });
  });
}

void kernel_NEGATE(KernelArgs& args) {
  check_arity(args, 3);
  const DType t = args.input(0).dtype();
  dispatch_among<DType::kInt8, DType::kInt16, DType::kInt32, DType::kFp16, DType::kBf16, DType::kFp32>(
      args, t, [&](auto tc) {
        constexpr DType T = decltype(tc)::value;
        if constexpr (is_float_dtype(T)) {
          for (size_t k : {size_t{1}, size_t{2}}) {
            const Tensor& z = args.input(k);
            if (z.dtype() != T || z.num_elements() != 1)
              args.fail("zero points must be [1] tensors of in_out_t");
            if (ld<T>(z.bytes(), 0) != 0.0f) args.fail("ERROR_IF: zero points must be 0 for non-i8 NEGATE");
          }
          // With zero points 0 the pseudocode reads 0 - x, but the chapter's floating-point table
          // requires NEGATE(+0) = -0 and NEGATE(-0) = +0, which is IEEE negation.
          unary_loop<T, T>(args, [](float v) { return -v; });
        } else {
          const int64_t izp = scalar_int(args, 1, T, "input1_zp");
          const int64_t ozp = scalar_int(args, 2, T, "output_zp");
          if (T != DType::kInt8 && (izp != 0 || ozp != 0)) {
            args.fail("ERROR_IF: input1_zp and output_zp must be 0 unless in_out_t is i8");
          }
          using S = Elem<T>;
          const int32_t zi = static_cast<int32_t>(izp), zo = static_cast<int32_t>(ozp);
          unary_loop<T, T>(args, [&](S v) -> S {
            // acc_t is i32: value - zp, 0 - value, + output_zp each REQUIRE no i32 overflow.
            int32_t acc = sub_s<int32_t>(args, v, zi);
            acc = sub_s<int32_t>(args, 0, acc);
            acc = add_s<int32_t>(args, acc, zo);
            const int32_t lo = std::numeric_limits<S>::min(), hi = std::numeric_limits<S>::max();
            return static_cast<S>(acc < lo ? lo : (acc > hi ? hi : acc));
          });
        }
      });
}

void kernel_RECIPROCAL(KernelArgs& args) {
  float_unary(args, [](float x) { return 1.0f / x; });
}

void kernel_RSQRT(KernelArgs& args) {
  float_unary(args, [](float x) { return static_cast<float>(1.0 / std::sqrt(static_cast<double>(x))); });
}

void kernel_SIN(KernelArgs& args) {
  float_unary(args, [](float x) { return static_cast<float>(std::sin(static_cast<double>(x))); });
}

// ============================== Selection / comparison ==============================

void kernel_SELECT(KernelArgs& args) {
  check_arity(args, 3);
  const Tensor& c = args.input(0);
  const Tensor& a = args.input(1);
  const Tensor& b = args.input(2);
  Tensor& out = args.output(0);
  check_dtype(args, c, DType::kBool, "input1");
  dispatch_among<DType::kBool, DType::kInt8, DType::kInt16, DType::kInt32, DType::kFp16, DType::kBf16,
                 DType::kFp32>(args, a.dtype(), [&](auto tc) {
    constexpr DType T = decltype(tc)::value;
    check_dtype(args, b, T, "input3");
    check_dtype(args, out, T, "output");
    check_broadcast(args, c, out, "input1");
    check_broadcast(args, a, out, "input2");
    check_broadcast(args, b, out, "input3");
    check_broadcast_result(args, out, {&c, &a, &b});
    // Elements are copied as stored bits (no float round trip), so NaN payloads and -0 survive.
    using S = typename Storage<T>::type;
    const uint8_t* cp = c.data<uint8_t>();
    const S* ap = a.data<S>();
    const S* bp = b.data<S>();
    S* op = out.mutable_data<S>();
    for_chunks(args, out.num_elements(), [&](int64_t begin, int64_t end) {
      broadcast_for_range<3>(out.shape(), {&c.shape(), &a.shape(), &b.shape()}, begin, end,
                             [&](int64_t i, const std::array<int64_t, 3>& idx) {
                               op[i] = cp[idx[0]] ? ap[idx[1]] : bp[idx[2]];
                             });
    });
  });
}

// Float comparisons are IEEE: any NaN operand gives false, and +0 == -0.
void kernel_EQUAL(KernelArgs& args) {
  comparison(args, [](auto a, auto b) { return a == b; });
}

void kernel_GREATER(KernelArgs& args) {
  comparison(args, [](auto a, auto b) { return a > b; });
}

void kernel_GREATER_EQUAL(KernelArgs& args) {
  comparison(args, [](auto a, auto b) { return a >= b; });
}

// ============================== Data conversion ==============================

void kernel_CAST(KernelArgs& args) {
  check_arity(args, 1);
  const DType ti = args.input(0).dtype();
  const DType to = args.output(0).dtype();
  if (ti == DType::kInt4 || ti == DType::kInt48 || ti == DType::kShape || to == DType::kInt4 ||
      to == DType::kInt48 || to == DType::kShape) {
    args.fail(std::string("unsupported CAST from ") + dtype_name(ti) + " to " + dtype_name(to));
  }
  dispatch(ti, [&](auto tic) {
    constexpr DType TI = decltype(tic)::value;
    if constexpr (TI != DType::kInt4 && TI != DType::kInt48 && TI != DType::kShape) {
      dispatch(to, [&](auto toc) {
        constexpr DType TO = decltype(toc)::value;
        if constexpr (TO != DType::kInt4 && TO != DType::kInt48 && TO != DType::kShape) {
          using SO = Elem<TO>;
          if constexpr (TO == DType::kBool) {
            unary_loop<TI, TO>(args, [](Elem<TI> v) -> uint8_t { return v != 0 ? 1 : 0; });
          } else if constexpr (is_float_dtype(TO)) {
            if constexpr (is_float_dtype(TI)) {
              // Float to float: the input is exact in float, so the store rounds exactly once
              // (fp8 outputs use the non-saturating OCP conversion: overflow gives NaN / inf).
              unary_loop<TI, TO>(args, [](float v) { return v; });
            } else {
              // bool -> 0.0/1.0; integers rounded to nearest once (round-to-odd intermediate).
              unary_loop<TI, TO>(args, [](Elem<TI> v) {
                const double d = static_cast<double>(static_cast<int64_t>(v));  // exact
                if constexpr (TO == DType::kFp32)
                  return static_cast<float>(d);
                else
                  return to_float_round_odd(d);
              });
            }
          } else {
            // Integer outputs.
            constexpr double lo = static_cast<double>(std::numeric_limits<SO>::min());
            constexpr double hi = static_cast<double>(std::numeric_limits<SO>::max());
            if constexpr (is_float_dtype(TI)) {
              // Round to nearest, ties to even, then saturate. NaN has no defined result in the
              // specification ("unpredictable"); Weft writes 0.
              unary_loop<TI, TO>(args, [](float v) -> SO {
                if (std::isnan(v)) return 0;
                const double r = std::nearbyint(static_cast<double>(v));
                return static_cast<SO>(r < lo ? lo : (r > hi ? hi : r));
              });
            } else if constexpr (TI == DType::kBool) {
              unary_loop<TI, TO>(args, [](uint8_t v) -> SO { return v ? 1 : 0; });
            } else {
              // Sign extension when widening, keeping the low bits when narrowing.
              unary_loop<TI, TO>(args, [](Elem<TI> v) -> SO {
                using U = std::make_unsigned_t<SO>;
                return static_cast<SO>(static_cast<U>(static_cast<int64_t>(v)));
              });
            }
          }
        }
      });
    }
  });
}

void kernel_RESCALE(KernelArgs& args) {
  check_arity(args, 5);
  const Tensor& in = args.input(0);
  const Tensor& mult = args.input(1);
  const Tensor& shift = args.input(2);
  Tensor& out = args.output(0);
  const bool scale32 = args.node.attr_bool("scale32");
  const int64_t rm = args.node.attr_int("rounding_mode");
  const bool per_channel = args.node.attr_bool("per_channel");
  const bool in_u = args.node.attr_bool("input_unsigned");
  const bool out_u = args.node.attr_bool("output_unsigned");
  const DType ti = in.dtype(), to = out.dtype();
  if (ti != DType::kInt8 && ti != DType::kInt16 && ti != DType::kInt32 && ti != DType::kInt48) {
    args.fail(std::string("unsupported input type ") + dtype_name(ti));
  }
  if (to != DType::kInt8 && to != DType::kInt16 && to != DType::kInt32) {
    args.fail(std::string("unsupported output type ") + dtype_name(to));
  }
  if (rm != static_cast<int64_t>(RoundingMode::kSingle) &&
      rm != static_cast<int64_t>(RoundingMode::kInexact) &&
      rm != static_cast<int64_t>(RoundingMode::kDouble)) {
    args.fail("invalid rounding_mode value " + std::to_string(rm));
  }
  // INEXACT_ROUND permits any result within the error bound; the exact SINGLE_ROUND result meets it.
  const bool double_round = rm == static_cast<int64_t>(RoundingMode::kDouble);
  check_same_shape(args, in, out);
  check_dtype(args, mult, scale32 ? DType::kInt32 : DType::kInt16, "multiplier");
  check_dtype(args, shift, DType::kInt8, "shift");
  if (per_channel && in.rank() < 1) args.fail("ERROR_IF: per_channel needs rank(input) >= 1");
  const int64_t nc = per_channel ? in.shape().back() : 1;
  if (mult.num_elements() != nc || shift.num_elements() != nc) {
    args.fail("multiplier and shift must have " + std::to_string(nc) + " elements");
  }
  // Zero points, read as stored (two's complement) and extended per input_unsigned/output_unsigned.
  int64_t izp = scalar_int(args, 3, ti, "input_zp");
  int64_t ozp = scalar_int(args, 4, to, "output_zp");
  const int in_bits = bit_width(ti), out_bits = bit_width(to);
  if (in_u) izp &= (int64_t{1} << in_bits) - 1;
  if (out_u) ozp &= (int64_t{1} << out_bits) - 1;
  // ERROR_IF rules of the pseudocode (the verifier checks them too; repeated for unverified graphs).
  if (ti != DType::kInt8 && !(ti == DType::kInt16 && in_u) && izp != 0) {
    args.fail("ERROR_IF: input_zp must be 0 unless in_t is i8 or unsigned i16");
  }
  if (to != DType::kInt8 && !(to == DType::kInt16 && out_u) && ozp != 0) {
    args.fail("ERROR_IF: output_zp must be 0 unless out_t is i8 or unsigned i16");
  }
  if (ti == DType::kInt16 && in_u && izp != 0 && izp != 32768)
    args.fail("ERROR_IF: unsigned i16 input_zp must be 0 or 32768");
  if (to == DType::kInt16 && out_u && ozp != 0 && ozp != 32768) {
    args.fail("ERROR_IF: unsigned i16 output_zp must be 0 or 32768");
  }
  if (scale32 && ti == DType::kInt48) args.fail("ERROR_IF: scale32 is not allowed for i48 input");
  if (!scale32 && double_round) args.fail("ERROR_IF: DOUBLE_ROUND needs scale32");
  if (in_u && out_u) args.fail("ERROR_IF: input_unsigned and output_unsigned both set");
  if (to == DType::kInt32 && in_u) args.fail("ERROR_IF: input_unsigned with i32 output");
  if ((ti == DType::kInt32 || ti == DType::kInt48) && (in_u || out_u)) {
    args.fail("ERROR_IF: unsigned modes are not allowed for i32/i48 input");
  }
  if (to == DType::kInt32 && out_u) args.fail("ERROR_IF: output_unsigned with i32 output");

  // Per-channel scale parameters.
  std::vector<int32_t> m(static_cast<size_t>(nc));
  std::vector<int32_t> s(static_cast<size_t>(nc));
  for (int64_t c = 0; c < nc; ++c) {
    m[static_cast<size_t>(c)] = static_cast<int32_t>(mult.at_int(c));
    s[static_cast<size_t>(c)] = static_cast<int32_t>(shift.at_int(c));
  }
  const int64_t out_lo = out_u ? 0 : int_min(to);
  const int64_t out_hi = out_u ? (int64_t{1} << out_bits) - 1 : int_max(to);
  const int64_t in_mask = (int64_t{1} << in_bits) - 1;
  const int64_t n = in.num_elements();
  try {
    // Typed loop per (in_t, out_t) pair: these run on every layer of quantized models.
    dispatch_among<DType::kInt8, DType::kInt16, DType::kInt32, DType::kInt48>(args, ti, [&](auto tic) {
      using SI = typename Storage<decltype(tic)::value>::type;
      dispatch_among<DType::kInt8, DType::kInt16, DType::kInt32>(args, to, [&](auto toc) {
        using SO = typename Storage<decltype(toc)::value>::type;
        const SI* ip = in.data<SI>();
        SO* op = out.mutable_data<SO>();
        for_chunks(args, n, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) {
            int64_t value = ip[i];
            if (in_u) value &= in_mask;  // zero_extend from the input's width
            value -= izp;
            const size_t c = per_channel ? static_cast<size_t>(i % nc) : 0;
            const int64_t result =
                scale32 ? apply_scale_32(value, m[c], s[c], double_round) : apply_scale_16(value, m[c], s[c]);
            // apply_add_s<int32_t>(result, output_zp): REQUIRE no i32 overflow.
            const int64_t biased = result + ozp;
            if (biased < std::numeric_limits<int32_t>::min() ||
                biased > std::numeric_limits<int32_t>::max()) {
              scale_require_failed("result + output_zp fits i32");
            }
            const int64_t clipped = biased < out_lo ? out_lo : (biased > out_hi ? out_hi : biased);
            // Unsigned outputs keep their bit pattern in the signed storage type (255 -> int8 -1).
            op[i] = static_cast<SO>(static_cast<std::make_unsigned_t<SO>>(clipped));
          }
        });
      });
    });
  } catch (const Error& e) {
    args.fail(e.message());
  }
}

}  // namespace weft::ref
