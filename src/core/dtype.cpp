#include "weft/dtype.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>

#include "weft/error.h"

namespace weft {
namespace {

struct DTypeInfo {
  const char* name;
  const char* spec_name;
  size_t size;
  int bits;
};

constexpr std::array<DTypeInfo, kNumDTypes> kInfo = {{
    {"bool", "bool_t", 1, 1},
    {"i4", "i4_t", 1, 4},
    {"i8", "i8_t", 1, 8},
    {"i16", "i16_t", 2, 16},
    {"i32", "i32_t", 4, 32},
    {"i48", "i48_t", 8, 48},
    {"f8e4m3", "fp8e4m3_t", 1, 8},
    {"f8e5m2", "fp8e5m2_t", 1, 8},
    {"f16", "fp16_t", 2, 16},
    {"bf16", "bf16_t", 2, 16},
    {"f32", "fp32_t", 4, 32},
    {"shape", "shape_t", 8, 64},
}};

const DTypeInfo& info(DType t) { return kInfo.at(static_cast<size_t>(t)); }

// Rounds |a| (finite, > 0) to a binary format with `mbits` mantissa bits and minimum normal
// exponent `emin`, ties to even. Returns the rounded magnitude (exact in double).
double round_magnitude(double a, int mbits, int emin) {
  int ex;
  std::frexp(a, &ex);  // a = m * 2^ex, m in [0.5, 1)
  int e = ex - 1;      // a in [2^e, 2^(e+1))
  if (e < emin) e = emin;
  double quantum = std::ldexp(1.0, e - mbits);
  return std::nearbyint(a / quantum) * quantum;
}

// Encodes a float into a small binary floating format (sign, ebits, mbits).
// `ieee_inf`: the top exponent encodes inf/NaN (fp16, bf16, e5m2). Otherwise (e4m3) only
// the all-ones pattern is NaN and values above max_finite overflow to NaN.
uint32_t encode_small(float f, int ebits, int mbits, bool ieee_inf, double max_finite) {
  const int bias = (1 << (ebits - 1)) - 1;
  const int emin = 1 - bias;
  const uint32_t sign = std::signbit(f) ? 1u << (ebits + mbits) : 0u;
  const uint32_t exp_all = (1u << ebits) - 1;
  if (std::isnan(f)) {
    return sign | (exp_all << mbits) | ((1u << mbits) - 1) | (ieee_inf ? (1u << (mbits - 1)) : 0u);
  }
  double a = std::fabs(static_cast<double>(f));
  if (std::isinf(a)) {
    if (ieee_inf) return sign | (exp_all << mbits);
    return sign | (exp_all << mbits) | ((1u << mbits) - 1);
  }
  if (a == 0.0) return sign;
  double r = round_magnitude(a, mbits, emin);
  if (r > max_finite) {
    if (ieee_inf) return sign | (exp_all << mbits);
    return sign | (exp_all << mbits) | ((1u << mbits) - 1);
  }
  if (r == 0.0) return sign;
  int ex;
  std::frexp(r, &ex);
  int e = ex - 1;
  if (e < emin) {  // subnormal
    auto mant = static_cast<uint32_t>(std::ldexp(r, mbits - emin));
    return sign | mant;
  }
  auto mant = static_cast<uint32_t>(std::ldexp(r, mbits - e)) - (1u << mbits);
  return sign | (static_cast<uint32_t>(e + bias) << mbits) | mant;
}

float decode_small(uint32_t bits, int ebits, int mbits, bool ieee_inf) {
  const int bias = (1 << (ebits - 1)) - 1;
  const uint32_t exp_all = (1u << ebits) - 1;
  bool neg = (bits >> (ebits + mbits)) & 1u;
  uint32_t e = (bits >> mbits) & exp_all;
  uint32_t m = bits & ((1u << mbits) - 1);
  double v;
  if (e == exp_all && ieee_inf) {
    v = m ? std::nan("") : INFINITY;
  } else if (e == exp_all && !ieee_inf && m == (1u << mbits) - 1) {
    v = std::nan("");
  } else if (e == 0) {
    v = std::ldexp(static_cast<double>(m), 1 - bias - mbits);
  } else {
    v = std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -mbits), static_cast<int>(e) - bias);
  }
  return static_cast<float>(neg ? -v : v);
}

struct Fp8Tables {
  std::array<float, 256> e4m3;
  std::array<float, 256> e5m2;
  Fp8Tables() {
    for (uint32_t i = 0; i < 256; ++i) {
      e4m3[i] = decode_small(i, 4, 3, false);
      e5m2[i] = decode_small(i, 5, 2, true);
    }
  }
};
const Fp8Tables& fp8_tables() {
  static const Fp8Tables t;
  return t;
}

}  // namespace

size_t storage_size(DType t) { return info(t).size; }
const char* dtype_name(DType t) { return info(t).name; }
const char* dtype_spec_name(DType t) { return info(t).spec_name; }
int bit_width(DType t) { return info(t).bits; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (name == kInfo[i].name || name == kInfo[i].spec_name) return static_cast<DType>(i);
  }
  return std::nullopt;
}

bool is_float(DType t) {
  return t == DType::kFp8E4M3 || t == DType::kFp8E5M2 || t == DType::kFp16 || t == DType::kBf16 ||
         t == DType::kFp32;
}
bool is_integer(DType t) {
  return t == DType::kInt4 || t == DType::kInt8 || t == DType::kInt16 || t == DType::kInt32 ||
         t == DType::kInt48;
}
int64_t int_min(DType t) {
  if (t == DType::kBool) return 0;
  if (t == DType::kShape) return INT64_MIN;
  return -(int64_t{1} << (bit_width(t) - 1));
}
int64_t int_max(DType t) {
  if (t == DType::kBool) return 1;
  if (t == DType::kShape) return INT64_MAX;
  return (int64_t{1} << (bit_width(t) - 1)) - 1;
}

float fp16_to_float(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return static_cast<float>(h);
}
uint16_t float_to_fp16(float f) {
  auto h = static_cast<_Float16>(f);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}
float bf16_to_float(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }
uint16_t float_to_bf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return static_cast<uint16_t>((u >> 16) | 0x40);  // keep sign, force quiet
  u += 0x7FFF + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}
float fp8e4m3_to_float(uint8_t bits) { return fp8_tables().e4m3[bits]; }
uint8_t float_to_fp8e4m3(float f) { return static_cast<uint8_t>(encode_small(f, 4, 3, false, 448.0)); }
float fp8e5m2_to_float(uint8_t bits) { return fp8_tables().e5m2[bits]; }
uint8_t float_to_fp8e5m2(float f) { return static_cast<uint8_t>(encode_small(f, 5, 2, true, 57344.0)); }

float round_to(DType t, float f) {
  switch (t) {
    case DType::kFp16: return fp16_to_float(float_to_fp16(f));
    case DType::kBf16: return bf16_to_float(float_to_bf16(f));
    case DType::kFp8E4M3: return fp8e4m3_to_float(float_to_fp8e4m3(f));
    case DType::kFp8E5M2: return fp8e5m2_to_float(float_to_fp8e5m2(f));
    default: return f;
  }
}

double load_as_double(DType t, const void* p) {
  switch (t) {
    case DType::kFp32: { float f; std::memcpy(&f, p, 4); return f; }
    case DType::kFp16: { uint16_t b; std::memcpy(&b, p, 2); return fp16_to_float(b); }
    case DType::kBf16: { uint16_t b; std::memcpy(&b, p, 2); return bf16_to_float(b); }
    case DType::kFp8E4M3: return fp8e4m3_to_float(*static_cast<const uint8_t*>(p));
    case DType::kFp8E5M2: return fp8e5m2_to_float(*static_cast<const uint8_t*>(p));
    default: return static_cast<double>(load_as_int(t, p));
  }
}

int64_t load_as_int(DType t, const void* p) {
  switch (t) {
    case DType::kBool: return *static_cast<const uint8_t*>(p) ? 1 : 0;
    case DType::kInt4:
    case DType::kInt8: return *static_cast<const int8_t*>(p);
    case DType::kInt16: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case DType::kInt32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::kInt48:
    case DType::kShape: { int64_t v; std::memcpy(&v, p, 8); return v; }
    default: return static_cast<int64_t>(load_as_double(t, p));
  }
}

void store_from_double(DType t, void* p, double v) {
  switch (t) {
    case DType::kFp32: { float f = static_cast<float>(v); std::memcpy(p, &f, 4); return; }
    case DType::kFp16: { uint16_t b = float_to_fp16(static_cast<float>(v)); std::memcpy(p, &b, 2); return; }
    case DType::kBf16: { uint16_t b = float_to_bf16(static_cast<float>(v)); std::memcpy(p, &b, 2); return; }
    case DType::kFp8E4M3: *static_cast<uint8_t*>(p) = float_to_fp8e4m3(static_cast<float>(v)); return;
    case DType::kFp8E5M2: *static_cast<uint8_t*>(p) = float_to_fp8e5m2(static_cast<float>(v)); return;
    default:
      if (std::isnan(v)) throw Error(ErrorCode::kInvalidArgument, "NaN cannot be stored in an integer tensor");
      store_from_int(t, p, static_cast<int64_t>(v));
  }
}

void store_from_int(DType t, void* p, int64_t v) {
  switch (t) {
    case DType::kBool: *static_cast<uint8_t*>(p) = v != 0; return;
    case DType::kInt4: {
      int64_t w = ((v & 0xF) ^ 0x8) - 0x8;  // wrap to 4 bits, sign-extend
      *static_cast<int8_t*>(p) = static_cast<int8_t>(w);
      return;
    }
    case DType::kInt8: *static_cast<int8_t*>(p) = static_cast<int8_t>(v); return;
    case DType::kInt16: { auto w = static_cast<int16_t>(v); std::memcpy(p, &w, 2); return; }
    case DType::kInt32: { auto w = static_cast<int32_t>(v); std::memcpy(p, &w, 4); return; }
    case DType::kInt48: {
      int64_t w = static_cast<int64_t>(static_cast<uint64_t>(v) << 16) >> 16;
      std::memcpy(p, &w, 8);
      return;
    }
    case DType::kShape: std::memcpy(p, &v, 8); return;
    default: store_from_double(t, p, static_cast<double>(v));
  }
}

}  // namespace weft
