// Small helpers shared by the reference kernels.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backends/reference/kernels.h"
#include "weft/dtype.h"

namespace weft::ref {

// Storage type of each DType (see dtype.h): the C++ type elements are kept in.
template <DType T> struct Storage;
template <> struct Storage<DType::kBool> { using type = uint8_t; };
template <> struct Storage<DType::kInt4> { using type = int8_t; };
template <> struct Storage<DType::kInt8> { using type = int8_t; };
template <> struct Storage<DType::kInt16> { using type = int16_t; };
template <> struct Storage<DType::kInt32> { using type = int32_t; };
template <> struct Storage<DType::kInt48> { using type = int64_t; };
template <> struct Storage<DType::kFp8E4M3> { using type = uint8_t; };
template <> struct Storage<DType::kFp8E5M2> { using type = uint8_t; };
template <> struct Storage<DType::kFp16> { using type = uint16_t; };
template <> struct Storage<DType::kBf16> { using type = uint16_t; };
template <> struct Storage<DType::kFp32> { using type = float; };
template <> struct Storage<DType::kShape> { using type = int64_t; };

// Floating-point elements are computed in float and rounded to their type on store.
template <DType T>
inline float load_float(const void* base, int64_t i) {
  using S = typename Storage<T>::type;
  S s;
  std::memcpy(&s, static_cast<const uint8_t*>(base) + i * static_cast<int64_t>(sizeof(S)), sizeof(S));
  if constexpr (T == DType::kFp32) return s;
  else if constexpr (T == DType::kFp16) return fp16_to_float(s);
  else if constexpr (T == DType::kBf16) return bf16_to_float(s);
  else if constexpr (T == DType::kFp8E4M3) return fp8e4m3_to_float(s);
  else if constexpr (T == DType::kFp8E5M2) return fp8e5m2_to_float(s);
  else return static_cast<float>(s);
}

template <DType T>
inline void store_float(void* base, int64_t i, float v) {
  using S = typename Storage<T>::type;
  S s;
  if constexpr (T == DType::kFp32) s = v;
  else if constexpr (T == DType::kFp16) s = float_to_fp16(v);
  else if constexpr (T == DType::kBf16) s = float_to_bf16(v);
  else if constexpr (T == DType::kFp8E4M3) s = float_to_fp8e4m3(v);
  else if constexpr (T == DType::kFp8E5M2) s = float_to_fp8e5m2(v);
  else static_assert(T == DType::kFp32, "store_float is for floating-point types");
  std::memcpy(static_cast<uint8_t*>(base) + i * static_cast<int64_t>(sizeof(S)), &s, sizeof(S));
}

// Calls f(std::integral_constant<DType, T>{}) for the runtime type t.
template <class F>
decltype(auto) dispatch(DType t, F&& f) {
  switch (t) {
    case DType::kBool: return f(std::integral_constant<DType, DType::kBool>{});
    case DType::kInt4: return f(std::integral_constant<DType, DType::kInt4>{});
    case DType::kInt8: return f(std::integral_constant<DType, DType::kInt8>{});
    case DType::kInt16: return f(std::integral_constant<DType, DType::kInt16>{});
    case DType::kInt32: return f(std::integral_constant<DType, DType::kInt32>{});
    case DType::kInt48: return f(std::integral_constant<DType, DType::kInt48>{});
    case DType::kFp8E4M3: return f(std::integral_constant<DType, DType::kFp8E4M3>{});
    case DType::kFp8E5M2: return f(std::integral_constant<DType, DType::kFp8E5M2>{});
    case DType::kFp16: return f(std::integral_constant<DType, DType::kFp16>{});
    case DType::kBf16: return f(std::integral_constant<DType, DType::kBf16>{});
    case DType::kFp32: return f(std::integral_constant<DType, DType::kFp32>{});
    case DType::kShape: return f(std::integral_constant<DType, DType::kShape>{});
  }
  throw Error(ErrorCode::kInternal, "bad dtype");
}

constexpr bool is_float_dtype(DType t) {
  return t == DType::kFp8E4M3 || t == DType::kFp8E5M2 || t == DType::kFp16 || t == DType::kBf16 ||
         t == DType::kFp32;
}

}  // namespace weft::ref
