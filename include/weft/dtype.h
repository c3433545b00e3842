// Element types of TOSA 1.0 tensors and their storage in Weft's memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace weft {

// Storage: every element occupies storage_size() bytes, little-endian.
//  bool: 1 byte (0 or 1); int4: one int8 per element, value in [-8, 7];
//  int48: int64 holding a sign-extended 48-bit value; fp16/bf16/fp8: raw bits;
//  shape: int64 (TOSA shape_t components, tensor_size_t).
enum class DType : uint8_t {
  kBool,
  kInt4,
  kInt8,
  kInt16,
  kInt32,
  kInt48,
  kFp8E4M3,
  kFp8E5M2,
  kFp16,
  kBf16,
  kFp32,
  kShape,
};
inline constexpr int kNumDTypes = 12;

size_t storage_size(DType t);
// Canonical short name used by the text form: bool i4 i8 i16 i32 i48 f8e4m3 f8e5m2 f16 bf16 f32 shape
const char* dtype_name(DType t);
// TOSA specification name: bool_t, i8_t, fp16_t ...
const char* dtype_spec_name(DType t);
std::optional<DType> parse_dtype(std::string_view name);  // accepts both name forms

bool is_float(DType t);    // fp8, fp16, bf16, fp32
bool is_integer(DType t);  // int4..int48 (not bool, not shape)
int bit_width(DType t);    // logical width: bool 1, int4 4, int48 48, shape 64 ...
int64_t int_min(DType t);  // for integer types
int64_t int_max(DType t);

// ---- Floating-point conversions (round to nearest, ties to even) ----
float fp16_to_float(uint16_t bits);
uint16_t float_to_fp16(float f);
float bf16_to_float(uint16_t bits);
uint16_t float_to_bf16(float f);
float fp8e4m3_to_float(uint8_t bits);
uint8_t float_to_fp8e4m3(float f);  // saturating to max finite is NOT done: overflow -> NaN (no inf)
float fp8e5m2_to_float(uint8_t bits);
uint8_t float_to_fp8e5m2(float f);

// Round a float to the value set of `t` (identity for fp32). For fp types only.
float round_to(DType t, float f);

// Read/write one element as double or int64 (used by generic code: printers, tests).
double load_as_double(DType t, const void* p);
int64_t load_as_int(DType t, const void* p);
void store_from_double(DType t, void* p, double v);  // rounds for fp types, truncates for ints
void store_from_int(DType t, void* p, int64_t v);    // wraps to the storage width

}  // namespace weft
