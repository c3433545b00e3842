// The SPIR-V text form (docs/spirv.md, "Text form"): a disassembler and an assembler in the style
// of spirv-dis / spirv-as.
//
// Conventions beyond spirv-dis that make assemble(disassemble(w)) == w exact for any valid stream:
//  - The "; SPIR-V" comment block, when it opens the text, is read back: Version, Generator and
//    Schema set those header words, Bound raises the bound (the bound is max(Bound, max id + 1)).
//  - An OpConstant literal whose bits are not the canonical encoding of a value of its type (high
//    bits that are not zero or a sign extension) prints as its raw bits, `0x` + hex digits; the
//    assembler reads a hex literal without `p` exponent as raw bits (`0x1.8p+128` is a hex float).
//  - An instruction whose operands do not parse prints as `OpUnknown(<opcode>) <words...>`, which
//    the assembler turns back into the same words.
#include "spirv/text.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "spirv/binary.h"
#include "spirv/grammar.h"
#include "weft/error.h"
#include "weft/ops.h"

namespace weft::spirv {
namespace {

// ======================================================================================
// Literal numbers
// ======================================================================================

// What an OpConstant literal needs to know about its result type.
struct ScalarType {
  enum class Kind : uint8_t { kOther, kInt, kFloat };
  Kind kind = Kind::kOther;
  uint32_t width = 0;
  bool is_signed = false;            // kInt
  std::optional<uint32_t> encoding;  // kFloat: the FPEncoding operand, if any
};
using ScalarTypes = std::unordered_map<uint32_t, ScalarType>;

// The scalar type an OpTypeInt / OpTypeFloat declares; `operands` are the words after the first.
std::optional<ScalarType> declared_scalar_type(uint16_t opcode, std::span<const uint32_t> operands) {
  if (opcode == kOpTypeInt && operands.size() == 3)
    return ScalarType{ScalarType::Kind::kInt, operands[1], operands[2] != 0, std::nullopt};
  if (opcode == kOpTypeFloat && (operands.size() == 2 || operands.size() == 3)) {
    std::optional<uint32_t> encoding;
    if (operands.size() == 3) encoding = operands[2];
    return ScalarType{ScalarType::Kind::kFloat, operands[1], false, encoding};
  }
  return std::nullopt;
}

// Words of a literal of `width` bits, as parse_operands counts them.
size_t literal_words(uint32_t width) { return width > 32 ? (width + 31) / 32 : 1; }

uint64_t low_mask(uint32_t bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }

std::string hex_digits(uint64_t v, int digits) {
  std::string s(static_cast<size_t>(digits), '0');
  for (int i = digits - 1; i >= 0 && v; --i, v >>= 4) s[static_cast<size_t>(i)] = "0123456789abcdef"[v & 15];
  return s;
}

// The raw bits of a literal: "0x" and 8 hex digits per word, most significant word first.
std::string raw_literal(std::span<const uint32_t> words) {
  std::string s = "0x";
  for (size_t i = words.size(); i-- > 0;) s += hex_digits(words[i], 8);
  return s;
}

bool is_hex_prefixed(std::string_view s) { return s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'); }

// Parses "0x" + hex digits into at most `max_bits` bits.
std::optional<uint64_t> parse_hex_bits(std::string_view s, uint32_t max_bits) {
  if (!is_hex_prefixed(s)) return std::nullopt;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data() + 2, s.data() + s.size(), v, 16);
  if (ec != std::errc() || end != s.data() + s.size() || (v & ~low_mask(max_bits)) != 0) return std::nullopt;
  return v;
}

// The inverse of raw_literal: "0x" + at most 8 * count hex digits -> `count` words, low word first.
std::optional<std::vector<uint32_t>> parse_raw_words(std::string_view s, size_t count) {
  if (!is_hex_prefixed(s)) return std::nullopt;
  s.remove_prefix(2);
  while (s.size() > 1 && s[0] == '0') s.remove_prefix(1);
  if (s.size() > 8 * count) return std::nullopt;
  std::vector<uint32_t> words(count, 0);
  for (size_t i = 0; i < count && !s.empty(); ++i) {
    std::string_view chunk = s.substr(s.size() > 8 ? s.size() - 8 : 0);
    auto [end, ec] = std::from_chars(chunk.data(), chunk.data() + chunk.size(), words[i], 16);
    if (ec != std::errc() || end != chunk.data() + chunk.size()) return std::nullopt;
    s.remove_suffix(chunk.size());
  }
  return words;
}

// A decimal integer, -?[0-9]+ (nullopt for anything else); `overflow` if beyond 64 bits.
struct Decimal {
  uint64_t magnitude = 0;
  bool negative = false;
  bool overflow = false;
  bool fits(uint64_t max) const { return !overflow && !(negative && magnitude != 0) && magnitude <= max; }
};
std::optional<Decimal> parse_decimal(std::string_view s) {
  Decimal d;
  d.negative = !s.empty() && s[0] == '-';
  if (d.negative) s.remove_prefix(1);
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  d.overflow = std::from_chars(s.data(), s.data() + s.size(), d.magnitude, 10).ec != std::errc();
  return d;
}

// ---- Floating-point formats: fp16, bf16, fp32, fp64, fp8 E4M3 / E5M2 ----
struct FloatFormat {
  int exp_bits;
  int mant_bits;
  bool ieee;  // all-ones exponent: Inf / NaN. E4M3 (false): no Inf, only S.1111.111 is NaN.

  int bits() const { return 1 + exp_bits + mant_bits; }
  int bias() const { return (1 << (exp_bits - 1)) - 1; }
  uint64_t exp_ones() const { return (uint64_t{1} << exp_bits) - 1; }
  uint64_t mant_mask() const { return (uint64_t{1} << mant_bits) - 1; }
  uint64_t max_finite() const {
    return ieee ? ((exp_ones() - 1) << mant_bits) | mant_mask() : (exp_ones() << mant_bits) | (mant_mask() - 1);
  }
  bool is_fp32() const { return exp_bits == 8 && mant_bits == 23; }
  bool is_fp64() const { return exp_bits == 11 && mant_bits == 52; }
};

std::optional<FloatFormat> float_format(const ScalarType& t) {
  if (t.kind != ScalarType::Kind::kFloat) return std::nullopt;
  if (!t.encoding) {
    if (t.width == 16) return FloatFormat{5, 10, true};
    if (t.width == 32) return FloatFormat{8, 23, true};
    if (t.width == 64) return FloatFormat{11, 52, true};
    return std::nullopt;
  }
  if (*t.encoding == kFPEncodingBFloat16KHR && t.width == 16) return FloatFormat{8, 7, true};
  if (*t.encoding == kFPEncodingFloat8E4M3EXT && t.width == 8) return FloatFormat{4, 3, false};
  if (*t.encoding == kFPEncodingFloat8E5M2EXT && t.width == 8) return FloatFormat{5, 2, true};
  return std::nullopt;
}

bool float_is_finite(const FloatFormat& f, uint64_t bits) {
  uint64_t e = (bits >> f.mant_bits) & f.exp_ones();
  uint64_t m = bits & f.mant_mask();
  return f.ieee ? e != f.exp_ones() : !(e == f.exp_ones() && m == f.mant_mask());
}

double float_value(const FloatFormat& f, uint64_t bits) {  // finite bits only
  uint64_t e = (bits >> f.mant_bits) & f.exp_ones();
  uint64_t m = bits & f.mant_mask();
  double v = e == 0 ? std::ldexp(static_cast<double>(m), 1 - f.bias() - f.mant_bits)
                    : std::ldexp(static_cast<double>(m | (uint64_t{1} << f.mant_bits)),
                                 static_cast<int>(e) - f.bias() - f.mant_bits);
  return (bits >> (f.bits() - 1)) & 1 ? -v : v;
}

// Rounds a finite double to the format (nearest, ties to even); nullopt if it overflows.
std::optional<uint64_t> round_to_format(const FloatFormat& f, double d) {
  uint64_t sign = std::signbit(d) ? uint64_t{1} << (f.bits() - 1) : 0;
  double a = std::fabs(d);
  if (a == 0) return sign;
  int emin = 1 - f.bias();
  int x = std::ilogb(a);
  bool subnormal = x < emin;
  // The significand in units of the last place; scaling by a power of two is exact.
  auto r = static_cast<uint64_t>(std::nearbyint(std::ldexp(a, f.mant_bits - (subnormal ? emin : x))));
  // A carry out of the significand moves into the exponent field by itself.
  uint64_t magnitude = subnormal ? r : (static_cast<uint64_t>(x + f.bias() - 1) << f.mant_bits) + r;
  if (magnitude > f.max_finite()) return std::nullopt;
  return sign | magnitude;
}

// NaN and infinity as hex floats, like spirv-dis: 0x1.8p+128 (fp32 quiet NaN), -0x1p+16 (fp16 -Inf).
std::string format_special_float(const FloatFormat& f, uint64_t bits) {
  int digits = (f.mant_bits + 3) / 4;
  std::string frac = hex_digits((bits & f.mant_mask()) << (4 * digits - f.mant_bits), digits);
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  std::string s = (bits >> (f.bits() - 1)) & 1 ? "-0x1" : "0x1";
  if (!frac.empty()) s += "." + frac;
  return s + "p+" + std::to_string(f.bias() + 1);
}

// Decimal float literal -> bits (correctly rounded for fp32 / fp64, via double for narrower ones).
std::optional<uint64_t> parse_decimal_float(const FloatFormat& f, std::string_view s) {
  std::string_view digits = !s.empty() && s[0] == '-' ? s.substr(1) : s;
  if (digits.empty() || !(std::isdigit(static_cast<unsigned char>(digits[0])) || digits[0] == '.'))
    return std::nullopt;  // "inf", "nan": write those as hex floats
  const char* end = s.data() + s.size();
  if (f.is_fp32()) {
    float v = 0;
    auto [p, ec] = std::from_chars(s.data(), end, v, std::chars_format::general);
    if (ec != std::errc() || p != end) return std::nullopt;
    return std::bit_cast<uint32_t>(v);
  }
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), end, v, std::chars_format::general);
  if (ec != std::errc() || p != end || !std::isfinite(v)) return std::nullopt;
  if (f.is_fp64()) return std::bit_cast<uint64_t>(v);
  return round_to_format(f, v);
}

// Hex float literal ([-]0x1.8p+128) -> bits. The all-ones exponent builds the bits directly (NaN
// payloads, infinities); other values are rounded like decimals.
std::optional<uint64_t> parse_hex_float(const FloatFormat& f, std::string_view s) {
  bool negative = !s.empty() && s[0] == '-';
  std::string_view body = negative ? s.substr(1) : s;
  if (!is_hex_prefixed(body)) return std::nullopt;
  body.remove_prefix(2);
  size_t p = body.find_first_of("pP");
  if (p == std::string_view::npos) return std::nullopt;
  std::string_view mantissa = body.substr(0, p);
  std::string_view exponent = body.substr(p + 1);
  if (!exponent.empty() && exponent[0] == '+') exponent.remove_prefix(1);
  int exp = 0;
  auto [ep, eec] = std::from_chars(exponent.data(), exponent.data() + exponent.size(), exp);
  if (eec != std::errc() || ep != exponent.data() + exponent.size()) return std::nullopt;
  uint64_t sign = negative ? uint64_t{1} << (f.bits() - 1) : 0;
  size_t dot = mantissa.find('.');
  std::string_view whole = mantissa.substr(0, dot);
  std::string_view frac = dot == std::string_view::npos ? std::string_view() : mantissa.substr(dot + 1);
  if (exp == f.bias() + 1 && whole == "1") {
    // 1.<frac> at the all-ones exponent field: the fraction digits are the mantissa bits.
    if (frac.size() > 16) return std::nullopt;
    uint64_t bits = 0;
    if (!frac.empty()) {
      auto [fp, fec] = std::from_chars(frac.data(), frac.data() + frac.size(), bits, 16);
      if (fec != std::errc() || fp != frac.data() + frac.size()) return std::nullopt;
    }
    int shift = 4 * static_cast<int>(frac.size()) - f.mant_bits;
    if (shift > 0) {
      if (bits & low_mask(static_cast<uint32_t>(shift))) return std::nullopt;  // more bits than the mantissa
      bits >>= shift;
    } else {
      bits <<= -shift;
    }
    return sign | (f.exp_ones() << f.mant_bits) | bits;
  }
  const char* first = body.data();
  const char* end = body.data() + body.size();
  if (f.is_fp32()) {
    float v = 0;
    auto [q, ec] = std::from_chars(first, end, v, std::chars_format::hex);
    if (ec != std::errc() || q != end || !std::isfinite(v)) return std::nullopt;
    return sign | std::bit_cast<uint32_t>(v);
  }
  double v = 0;
  auto [q, ec] = std::from_chars(first, end, v, std::chars_format::hex);
  if (ec != std::errc() || q != end || !std::isfinite(v)) return std::nullopt;
  if (f.is_fp64()) return sign | std::bit_cast<uint64_t>(v);
  std::optional<uint64_t> bits = round_to_format(f, v);
  if (!bits) return std::nullopt;
  return sign | *bits;
}

// The shortest decimal that reads back to the same bits; NaN / Inf as hex floats.
std::string format_float(const FloatFormat& f, uint64_t bits) {
  if (!float_is_finite(f, bits)) return format_special_float(f, bits);
  double v = float_value(f, bits);
  char buf[64];
  if (f.is_fp32()) return std::string(buf, std::to_chars(buf, buf + sizeof buf, static_cast<float>(v)).ptr);
  if (f.is_fp64()) return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
  // Narrow formats: the fewest significant digits that read back, unless the exact value is no
  // longer (448 rather than 4.5e+02 for fp8).
  std::string exact(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
  for (int precision = 1; precision < 17; ++precision) {
    std::string s(buf, std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, precision).ptr);
    if (parse_decimal_float(f, s) == bits) return s.size() < exact.size() ? s : exact;
  }
  return exact;
}

const char* type_description(const ScalarType& t) {
  if (t.kind == ScalarType::Kind::kInt) return t.is_signed ? "signed integer" : "unsigned integer";
  if (t.kind == ScalarType::Kind::kFloat) return "float";
  return "non-numeric";
}

// Whether `s` (no sign) is written like a number: decimal, or hex float after "0x".
bool looks_like_float(std::string_view s) {
  bool hex = is_hex_prefixed(s);
  if (hex) s.remove_prefix(2);
  auto c = s.empty() ? 0 : static_cast<unsigned char>(s[0]);
  if (!(c == '.' || (hex ? std::isxdigit(c) : std::isdigit(c)))) return false;
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, hex ? std::chars_format::hex : std::chars_format::general);
  return p == s.data() + s.size() && (ec == std::errc() || ec == std::errc::result_out_of_range);
}

// Prints an OpConstant literal of type `t` (words as in the instruction, low word first).
std::string format_literal(const ScalarType& t, std::span<const uint32_t> words) {
  uint64_t raw = words.empty() ? 0 : words[0];
  if (words.size() == 2) raw |= uint64_t{words[1]} << 32;
  bool sized = words.size() == literal_words(t.width) && t.width >= 1 && t.width <= 64;
  uint32_t raw_bits = 32 * static_cast<uint32_t>(words.size());
  if (sized && t.kind == ScalarType::Kind::kInt) {
    uint64_t v = raw & low_mask(t.width);
    if (!t.is_signed) {
      if (v == raw) return std::to_string(v);
    } else {
      int64_t s = t.width < 64 && (v >> (t.width - 1)) & 1 ? static_cast<int64_t>(v | ~low_mask(t.width))
                                                           : static_cast<int64_t>(v);
      if ((static_cast<uint64_t>(s) & low_mask(raw_bits)) == raw) return std::to_string(s);
    }
  } else if (std::optional<FloatFormat> f = float_format(t); f && sized) {
    if (f->bits() == 64 || (raw >> f->bits()) == 0) return format_float(*f, raw);
  }
  return raw_literal(words);
}

// Parses an OpConstant literal of type `t` into `count` words; throws Error(kParse) without a
// location (the assembler adds it).
std::vector<uint32_t> parse_literal(const ScalarType& t, std::string_view s, size_t count) {
  auto fail = [&](const std::string& why) -> std::vector<uint32_t> {
    throw Error(ErrorCode::kParse, why);
  };
  auto words_of = [&](uint64_t v) {
    std::vector<uint32_t> w{static_cast<uint32_t>(v)};
    if (count == 2) w.push_back(static_cast<uint32_t>(v >> 32));
    return w;
  };
  std::string type = std::to_string(t.width) + "-bit " + type_description(t);
  if (s.find_first_of("pP") == std::string_view::npos || !float_format(t)) {
    if (std::optional<std::vector<uint32_t>> raw = parse_raw_words(s, count)) return *raw;
    if (is_hex_prefixed(s)) fail("hex literal '" + std::string(s) + "' does not fit the " + type + " literal (" +
                                 std::to_string(count) + " word" + (count == 1 ? "" : "s") + ")");
  }
  if (std::optional<FloatFormat> f = float_format(t)) {
    std::string_view body = !s.empty() && s[0] == '-' ? s.substr(1) : s;
    bool hex = is_hex_prefixed(body);
    std::optional<uint64_t> bits = hex ? parse_hex_float(*f, s) : parse_decimal_float(*f, s);
    if (bits) return words_of(*bits);
    if (looks_like_float(body)) return fail("literal " + std::string(s) + " out of range for " + type);
    return fail("expected a " + type + " literal (decimal, or hex float like 0x1.8p+128), got '" +
                std::string(s) + "'");
  }
  if (t.kind == ScalarType::Kind::kInt && t.width >= 1 && t.width <= 64) {
    std::optional<Decimal> d = parse_decimal(s);
    if (!d) return fail("expected a " + type + " literal, got '" + std::string(s) + "'");
    uint64_t max = t.is_signed ? low_mask(t.width - 1) + (d->negative ? 1 : 0) : (d->negative ? 0 : low_mask(t.width));
    if (d->overflow || d->magnitude > max) {
      std::string range = t.is_signed ? "-" + std::to_string(low_mask(t.width - 1) + 1) + " to " +
                                            std::to_string(low_mask(t.width - 1))
                                      : "0 to " + std::to_string(low_mask(t.width));
      return fail("literal " + std::string(s) + " out of range for " + type + " (" + range + ")");
    }
    uint64_t v = d->negative ? ~d->magnitude + 1 : d->magnitude;  // two's complement, sign-extended
    return words_of(v & low_mask(32 * static_cast<uint32_t>(count)));
  }
  // A type Weft has no number syntax for: its raw bits (above), or one plain unsigned word.
  if (count != 1)
    return fail("expected the raw bits of the " + type + " literal (0x and up to " + std::to_string(8 * count) +
                " hex digits), got '" + std::string(s) + "'");
  std::optional<Decimal> d = parse_decimal(s);
  if (!d || !d->fits(0xffffffffu))
    return fail("expected a 32-bit literal word for a " + type + " type, got '" + std::string(s) + "'");
  return words_of(d->magnitude);
}

// ======================================================================================
// Names and strings
// ======================================================================================

std::string quote(std::string_view s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

bool is_decimal(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Keeps [A-Za-z0-9_], replaces anything else by '_'.
std::string name_chars(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) c = '_';
  }
  return out;
}

// A name for an id: name_chars, and a leading '_' for a name of only digits (it would read back
// as a numeric id).
std::string sanitize(std::string_view s) {
  std::string out = name_chars(s);
  return is_decimal(out) ? "_" + out : out;
}

const char* int_type_name(uint32_t width) {
  switch (width) {
    case 8: return "char";
    case 16: return "short";
    case 32: return "int";
    case 64: return "long";
    default: return nullptr;
  }
}

std::string scalar_type_name(const ScalarType& t) {
  if (t.kind == ScalarType::Kind::kInt) {
    const char* root = int_type_name(t.width);
    std::string prefix = t.is_signed ? "" : "u";
    return root ? prefix + root : prefix + "int" + std::to_string(t.width);
  }
  if (!t.encoding) {
    if (t.width == 16) return "half";
    if (t.width == 32) return "float";
    if (t.width == 64) return "double";
    return "fp" + std::to_string(t.width);
  }
  if (*t.encoding == kFPEncodingBFloat16KHR) return "bfloat16";
  if (*t.encoding == kFPEncodingFloat8E4M3EXT) return "fp8e4m3";
  if (*t.encoding == kFPEncodingFloat8E5M2EXT) return "fp8e5m2";
  const EnumDef* e = find_enumerant(OperandKind::kFPEncoding, *t.encoding);
  return "fp" + std::to_string(t.width) + "_" + (e ? e->name : std::to_string(*t.encoding));
}

// A literal as part of a name: uint_4, int_n1, float_0_5, float_1e10, half_0x1p16.
std::string literal_name(std::string_view value) {
  std::string s;
  for (char c : value) {
    if (c == '-') s += 'n';
    else if (c != '+') s += c;
  }
  return name_chars(s);
}

std::string header_version(uint32_t v) {
  if ((v & 0xff0000ffu) != 0) return raw_literal(std::span(&v, 1));
  return std::to_string((v >> 16) & 0xff) + "." + std::to_string((v >> 8) & 0xff);
}

std::string header_generator(uint32_t g) {
  uint32_t tool = g >> 16;
  return (tool == 0 ? std::string("Khronos") : std::to_string(tool)) + "; " + std::to_string(g & 0xffff);
}

// A bit-enum operand as spirv-dis prints it: the set flags' names joined by '|', or the name of
// the zero enumerant ("None").
std::string bit_enum_text(OperandKind kind, uint32_t v) {
  if (v == 0) {
    const EnumDef* none = find_enumerant(kind, uint32_t{0});
    return none ? none->name : "0";
  }
  std::string s;
  for (int bit = 0; bit < 32; ++bit) {
    uint32_t flag = uint32_t{1} << bit;
    if (!(v & flag)) continue;
    const EnumDef* e = find_enumerant(kind, flag);
    s += (s.empty() ? "" : "|") + (e ? std::string(e->name) : std::to_string(flag));
  }
  return s;
}

constexpr int kResultColumn = 15;  // "%name = " ends here, as in spirv-dis

}  // namespace

// ======================================================================================
// Disassembler
// ======================================================================================

struct Disassembler::Impl {
  // One instruction as printed: "%result = " (empty if none), the rest, and the offset.
  struct Line {
    uint32_t offset;
    std::string result;
    std::string body;
  };
  // One instruction with its parsed operands (or why they do not parse).
  struct Decoded {
    Instruction inst;
    std::vector<ParsedOperand> operands;
    std::string error;  // non-empty: printed as OpUnknown
    std::optional<ScalarType> literal_type;  // the result type's, for OpConstant-like literals
    uint32_t result = 0;
    bool has_result = false;
    bool tosa = false;  // OpExtInst of a TOSA.001000.1 import declared before it
    const ExtInstSetDef* ext_set = nullptr;  // OpExtInst of a set whose grammar Weft has
  };

  std::vector<uint32_t> words;
  DisassembleOptions options;
  Header header;
  std::vector<Line> lines;
  std::unordered_map<uint32_t, std::string> names;  // id -> friendly name (without '%')

  std::string id(uint32_t v) const {
    auto it = names.find(v);
    return "%" + (it != names.end() ? it->second : std::to_string(v));
  }

  std::string line_text(const Line& l) const {
    std::string s = l.result.empty() ? l.body : l.result + " = " + l.body;
    if (options.offsets) s += " ; @" + std::to_string(l.offset);
    return s;
  }

  void build();
  void name_ids(const std::vector<Decoded>& decoded);
  std::string render(const Decoded& d) const;
};

namespace {
// The bytes after a literal string's terminator must be zero: others could not be printed.
std::string string_padding_error(const Instruction& inst, const std::vector<ParsedOperand>& operands) {
  for (const ParsedOperand& op : operands) {
    if (op.kind != OperandKind::kLiteralString) continue;
    uint32_t last = inst.word(op.first_word + op.num_words - 1);
    int terminator = 0;
    while ((last >> (8 * terminator)) & 0xff) ++terminator;
    if (terminator < 3 && (last >> (8 * (terminator + 1))) != 0)
      return "nonzero padding after the terminator of the string at word " + std::to_string(op.first_word);
  }
  return {};
}

}  // namespace

void Disassembler::Impl::build() {
  Stream stream = split_instructions(words);
  header = stream.header;
  // Parse every instruction; OpConstant widths come from the types declared before it.
  ScalarTypes types;
  ParseState state;
  std::vector<Decoded> decoded;
  decoded.reserve(stream.instructions.size());
  for (const Instruction& inst : stream.instructions) {
    Decoded d{inst, {}, {}, std::nullopt, 0, false, false};
    try {
      d.operands = parse_operands(inst, &state);
    } catch (const Error& e) {
      d.error = e.message();
    }
    if (d.error.empty()) d.error = string_padding_error(inst, d.operands);
    if (d.error.empty()) {
      for (const ParsedOperand& op : d.operands) {
        uint32_t w = inst.word(op.first_word);
        if (op.kind == OperandKind::kIdResult) {
          d.result = w;
          d.has_result = true;
        }
        if (op.kind == OperandKind::kIdResultType) {
          auto it = types.find(w);
          if (it != types.end()) d.literal_type = it->second;
        }
      }
      if (auto t = declared_scalar_type(inst.opcode(), inst.words.subspan(1))) {
        types[d.result] = *t;
      } else if (d.has_result) {
        types.erase(d.result);  // redefined as something else (invalid, but printable)
      }
      if (inst.opcode() == kOpExtInst || inst.opcode() == kOpExtInstWithForwardRefsKHR) {
        if (const ParseState::ExtSet* set = state.ext_set(inst.word(3))) {
          d.tosa = set->tosa;
          d.ext_set = set->grammar;
        }
      }
      state.record(inst, d.operands);
    }
    decoded.push_back(std::move(d));
  }
  if (options.friendly_names) name_ids(decoded);
  lines.reserve(decoded.size());
  for (const Decoded& d : decoded) {
    Line l{d.inst.offset, d.error.empty() && d.has_result ? id(d.result) : "", render(d)};
    lines.push_back(std::move(l));
  }
}

void Disassembler::Impl::name_ids(const std::vector<Decoded>& decoded) {
  std::unordered_set<std::string> used;
  std::unordered_map<std::string, int> last_suffix;  // per base name, so that n clashes cost O(n)
  auto assign = [&](uint32_t target, const std::string& base) {
    if (base.empty() || names.count(target)) return;
    std::string name = base;
    for (int& n = last_suffix[base]; used.count(name);) name = base + "_" + std::to_string(++n);
    used.insert(name);
    names[target] = name;
  };
  auto name_of = [&](uint32_t v) {
    auto it = names.find(v);
    return it != names.end() ? it->second : std::to_string(v);
  };
  // 1. OpName, the first one for each id.
  for (const Decoded& d : decoded) {
    if (d.error.empty() && d.inst.opcode() == kOpName) assign(d.inst.word(1), sanitize(read_string(d.inst, 2, nullptr)));
  }
  // 2. Names derived from what the instruction declares, in stream order.
  std::unordered_map<uint32_t, uint64_t> int_constants;               // OpConstant of an integer type
  std::unordered_map<uint32_t, std::span<const uint32_t>> composites;  // OpConstantComposite constituents
  for (const Decoded& d : decoded) {
    if (!d.error.empty() || !d.has_result) continue;
    const Instruction& inst = d.inst;
    std::span<const uint32_t> w = inst.words;
    std::string base;
    switch (inst.opcode()) {
      case kOpTypeVoid: base = "void"; break;
      case kOpTypeBool: base = "bool"; break;
      case kOpTypeInt:
      case kOpTypeFloat:
        if (auto t = declared_scalar_type(inst.opcode(), w.subspan(1))) base = scalar_type_name(*t);
        break;
      case kOpTypeArray: base = "_arr_" + name_of(w[2]) + "_" + name_of(w[3]); break;
      case kOpTypeRuntimeArray: base = "_runtimearr_" + name_of(w[2]); break;
      case kOpTypeStruct: base = "_struct_" + std::to_string(d.result); break;
      case kOpTypePointer: {
        const EnumDef* sc = find_enumerant(OperandKind::kStorageClass, w[2]);
        base = "_ptr_" + std::string(sc ? sc->name : std::to_string(w[2])) + "_" + name_of(w[3]);
        break;
      }
      case kOpTypeGraphARM: base = "graph_type"; break;
      case kOpTypeTensorARM: {
        // tensor_<element>[_<d0>x<d1>... | _r<rank>]
        base = "tensor_" + name_of(w[2]);
        auto shape = w.size() > 4 ? composites.find(w[4]) : composites.end();
        bool dims_known = shape != composites.end();
        std::string dims;
        if (dims_known) {
          for (uint32_t c : shape->second) {
            auto v = int_constants.find(c);
            if (v == int_constants.end()) {
              dims_known = false;
              break;
            }
            dims += (dims.empty() ? "" : "x") + std::to_string(v->second);
          }
        }
        if (dims_known && !dims.empty()) {
          base += "_" + dims;
        } else if (w.size() > 3) {
          auto rank = int_constants.find(w[3]);
          if (rank != int_constants.end()) base += "_r" + std::to_string(rank->second);
        }
        break;
      }
      case kOpConstant:
        if (d.literal_type) {
          std::string value = format_literal(*d.literal_type, w.subspan(3));
          if (d.literal_type->kind == ScalarType::Kind::kInt && is_decimal(value))
            int_constants[d.result] = std::stoull(value);
          base = name_of(w[1]) + "_" + literal_name(value);
        }
        break;
      case kOpConstantTrue: base = "true"; break;
      case kOpConstantFalse: base = "false"; break;
      case kOpConstantComposite: composites[d.result] = w.subspan(3); break;
      case kOpGraphConstantARM: base = "graph_constant_" + std::to_string(w[3]); break;
      case kOpExtInstImport: {
        std::string set = read_string(inst, 2, nullptr);
        base = set == kTosaSetName ? "tosa" : sanitize(set);
        break;
      }
      default: break;
    }
    assign(d.result, base);
  }
}

std::string Disassembler::Impl::render(const Decoded& d) const {
  const Instruction& inst = d.inst;
  if (!d.error.empty()) {
    std::string s = "OpUnknown(" + std::to_string(inst.opcode()) + ")";
    for (size_t i = 1; i < inst.size(); ++i) s += " " + raw_literal(inst.words.subspan(i, 1));
    return s + " ; " + d.error;
  }
  const InstDef* def = find_instruction(inst.opcode());
  std::string s = def->name;
  for (const ParsedOperand& op : d.operands) {
    std::span<const uint32_t> w = inst.words.subspan(op.first_word, op.num_words);
    if (op.kind == OperandKind::kIdResult) continue;
    s += " ";
    switch (op.kind) {
      case OperandKind::kLiteralInteger:
        if (w.size() == 2) {  // a 64-bit OpSwitch case
          s += std::to_string(uint64_t{w[1]} << 32 | w[0]);
        } else {
          s += std::to_string(w[0]);
        }
        continue;
      case OperandKind::kLiteralFloat:
        s += format_literal(ScalarType{ScalarType::Kind::kFloat, 32, false, std::nullopt}, w);
        continue;
      case OperandKind::kLiteralString: s += quote(read_string(inst, op.first_word, nullptr)); continue;
      case OperandKind::kLiteralContextDependentNumber:
        s += d.literal_type ? format_literal(*d.literal_type, w) : raw_literal(w);
        continue;
      case OperandKind::kLiteralExtInstInteger: {
        std::optional<Op> tosa = d.tosa ? tosa_op_from_opcode(w[0]) : std::nullopt;
        const InstDef* ext = d.ext_set ? find_ext_instruction(*d.ext_set, w[0]) : nullptr;
        s += tosa ? std::string(op_name(*tosa)) : ext ? std::string(ext->name) : std::to_string(w[0]);
        continue;
      }
      case OperandKind::kLiteralSpecConstantOpInteger: {
        const InstDef* op_def = w[0] <= 0xffff ? find_instruction(static_cast<uint16_t>(w[0])) : nullptr;
        s += op_def ? std::string(op_def->name + 2) : std::to_string(w[0]);  // "IAdd", as spirv-dis
        continue;
      }
      default: break;
    }
    switch (kind_category(op.kind)) {
      case KindCategory::kId: s += id(w[0]); break;
      case KindCategory::kValueEnum: {
        const EnumDef* e = find_enumerant(op.kind, w[0]);
        s += e ? std::string(e->name) : std::to_string(w[0]);
        break;
      }
      case KindCategory::kBitEnum: s += bit_enum_text(op.kind, w[0]); break;
      default: s += std::to_string(w[0]); break;
    }
  }
  return s;
}

Disassembler::Disassembler(std::span<const uint32_t> words, const DisassembleOptions& options)
    : impl_(std::make_unique<Impl>()) {
  impl_->words.assign(words.begin(), words.end());
  impl_->options = options;
  impl_->build();
}

Disassembler::~Disassembler() = default;

std::string Disassembler::listing() const {
  const Impl& m = *impl_;
  std::string out;
  if (m.options.header) {
    out += "; SPIR-V\n";
    out += "; Version: " + header_version(m.header.version) + "\n";
    out += "; Generator: " + header_generator(m.header.generator) + "\n";
    out += "; Bound: " + std::to_string(m.header.bound) + "\n";
    out += "; Schema: " + std::to_string(m.header.schema) + "\n";
  }
  for (const Impl::Line& l : m.lines) {
    int prefix = l.result.empty() ? 0 : static_cast<int>(l.result.size()) + 3;
    out.append(static_cast<size_t>(std::max(0, kResultColumn - prefix)), ' ');
    out += m.line_text(l);
    out += '\n';
  }
  return out;
}

std::string Disassembler::instruction(uint32_t offset) const {
  const auto& lines = impl_->lines;
  auto it = std::lower_bound(lines.begin(), lines.end(), offset,
                             [](const Impl::Line& l, uint32_t o) { return l.offset < o; });
  if (it == lines.end() || it->offset != offset) return "";
  return impl_->line_text(*it);
}

std::string Disassembler::id_name(uint32_t id) const { return impl_->id(id); }

std::string disassemble(std::span<const uint32_t> words, const DisassembleOptions& options) {
  return Disassembler(words, options).listing();
}

// ======================================================================================
// Assembler
// ======================================================================================

namespace {

struct Token {
  enum class Kind : uint8_t { kId, kWord, kString, kEquals, kEnd };
  Kind kind;
  std::string text;  // kId: the name without '%'; kString: the unescaped contents; kWord: as written
  int line;
  int column;
  int end_line;  // just after the token
  int end_column;
};

class Lexer {
 public:
  Lexer(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  std::vector<Token> tokens() {
    std::vector<Token> out;
    while (true) {
      skip_space_and_comments();
      int line = line_, column = column_;
      if (at_ >= text_.size()) {
        out.push_back({Token::Kind::kEnd, "", line, column, line, column});
        return out;
      }
      char c = text_[at_];
      Token t{Token::Kind::kWord, "", line, column, 0, 0};
      if (c == '=') {
        advance();
        t.kind = Token::Kind::kEquals;
        t.text = "=";
      } else if (c == '"') {
        t.kind = Token::Kind::kString;
        t.text = string_body(line, column);
      } else if (c == '%') {
        advance();
        t.kind = Token::Kind::kId;
        t.text = word();
        if (t.text.empty())
          throw Error(ErrorCode::kParse, "expected an id like %name after '%'",
                      Location{.file = std::string(source_), .line = line, .column = column});
      } else {
        t.text = word();
      }
      t.end_line = line_;
      t.end_column = column_;
      out.push_back(std::move(t));
    }
  }

 private:
  static bool is_word_char(char c) {
    return !(c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == ';' || c == '"' ||
             c == '=' || c == '%');
  }
  void advance() {
    if (text_[at_] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    ++at_;
  }
  void skip_space_and_comments() {
    while (at_ < text_.size()) {
      char c = text_[at_];
      if (c == ';') {
        while (at_ < text_.size() && text_[at_] != '\n') advance();
      } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
        advance();
      } else {
        return;
      }
    }
  }
  std::string word() {
    size_t start = at_;
    while (at_ < text_.size() && is_word_char(text_[at_])) advance();
    return std::string(text_.substr(start, at_ - start));
  }
  // A quoted string; `\x` stands for x.
  std::string string_body(int line, int column) {
    advance();  // opening quote
    std::string s;
    while (at_ < text_.size() && text_[at_] != '"') {
      if (text_[at_] == '\\') {
        advance();
        if (at_ >= text_.size()) break;
      }
      s += text_[at_];
      advance();
    }
    if (at_ >= text_.size())
      throw Error(ErrorCode::kParse, "unterminated string (no closing '\"')",
                  Location{.file = std::string(source_), .line = line, .column = column});
    advance();  // closing quote
    return s;
  }

  std::string_view text_;
  std::string_view source_;
  size_t at_ = 0;
  int line_ = 1;
  int column_ = 1;
};

// The "; SPIR-V" comment block at the start of the text, when present.
struct TextHeader {
  std::optional<uint32_t> version, generator, bound, schema;
};

class Assembler {
 public:
  Assembler(std::string_view text, std::string_view source, uint32_t default_version)
      : text_(text), source_(source), default_version_(default_version) {}

  std::vector<uint32_t> run() {
    TextHeader header = read_header();
    tokens_ = Lexer(text_, source_).tokens();
    assign_ids();
    out_ = {kMagic, header.version.value_or(default_version_), header.generator.value_or(0), 0, header.schema.value_or(0)};
    while (peek().kind != Token::Kind::kEnd) instruction();
    uint64_t bound = std::max<uint64_t>(header.bound.value_or(0), uint64_t{max_id_} + 1);
    out_[3] = static_cast<uint32_t>(std::min<uint64_t>(bound, 0xffffffffu));
    return std::move(out_);
  }

 private:
  // ---- errors ----
  Location at(int line, int column) const { return Location{.file = std::string(source_), .line = line, .column = column}; }
  [[noreturn]] void fail(const Token& t, const std::string& message) const {
    throw Error(ErrorCode::kParse, message, at(t.line, t.column));
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case Token::Kind::kId: return "'%" + t.text + "'";
      case Token::Kind::kString: return "a string";
      case Token::Kind::kEquals: return "'='";
      case Token::Kind::kEnd: return "the end of the input";
      case Token::Kind::kWord: break;
    }
    return "'" + t.text + "'";
  }

  // ---- header comment block ----
  TextHeader read_header() const {
    TextHeader h;
    size_t pos = 0;
    int line = 1;
    bool in_block = false;
    while (pos < text_.size()) {
      size_t eol = text_.find('\n', pos);
      std::string_view raw = text_.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
      size_t first = raw.find_first_not_of(" \t\r");
      std::string_view l = first == std::string_view::npos ? std::string_view() : raw.substr(first);
      while (!l.empty() && (l.back() == '\r' || l.back() == ' ' || l.back() == '\t')) l.remove_suffix(1);
      if (!in_block) {
        if (!l.empty()) {
          if (l != "; SPIR-V") return h;
          in_block = true;
        }
      } else {
        if (l.empty() || l[0] != ';') return h;
        std::string_view body = l.substr(1);
        size_t colon = body.find(':');
        if (colon != std::string_view::npos) {
          std::string_view key = body.substr(0, colon);
          key.remove_prefix(std::min(key.find_first_not_of(' '), key.size()));
          std::string_view value = body.substr(colon + 1);
          size_t vstart = value.find_first_not_of(' ');
          value = vstart == std::string_view::npos ? std::string_view() : value.substr(vstart);
          int column = static_cast<int>(first + 1 + (value.data() - l.data()));
          header_field(h, key, value, line, column);
        }
      }
      if (eol == std::string_view::npos) break;
      pos = eol + 1;
      ++line;
    }
    return h;
  }

  void header_field(TextHeader& h, std::string_view key, std::string_view value, int line, int column) const {
    auto number = [&](std::string_view s, uint64_t max) -> std::optional<uint32_t> {
      std::optional<uint64_t> v = parse_hex_bits(s, 32);
      if (auto d = parse_decimal(s); !v && d && d->fits(max)) v = d->magnitude;
      if (!v || *v > max) return std::nullopt;
      return static_cast<uint32_t>(*v);
    };
    auto bad = [&](const char* expected) {
      throw Error(ErrorCode::kParse, "malformed header comment: " + std::string(key) + " expects " + expected +
                                         ", got '" + std::string(value) + "'",
                  at(line, column));
    };
    if (key == "Version") {
      size_t dot = value.find('.');
      if (dot == std::string_view::npos) {
        if (!is_hex_prefixed(value) || !(h.version = number(value, 0xffffffffu))) bad("<major>.<minor>");
      } else {
        auto major = number(value.substr(0, dot), 255), minor = number(value.substr(dot + 1), 255);
        if (!major || !minor) bad("<major>.<minor>");
        h.version = *major << 16 | *minor << 8;
      }
    } else if (key == "Generator") {
      size_t semi = value.find(';');
      if (semi == std::string_view::npos) {
        if (!(h.generator = number(value, 0xffffffffu))) bad("<tool>; <version>");
        return;
      }
      std::string_view tool = value.substr(0, semi);
      std::string_view version = value.substr(semi + 1);
      version.remove_prefix(std::min(version.find_first_not_of(' '), version.size()));
      std::optional<uint32_t> tool_id = tool == "Khronos" ? std::optional<uint32_t>(0) : number(tool, 0xffff);
      std::optional<uint32_t> v = number(version, 0xffff);
      if (!tool_id || !v) bad("<tool>; <version>");
      h.generator = *tool_id << 16 | *v;
    } else if (key == "Bound") {
      if (!(h.bound = number(value, 0xffffffffu))) bad("a number");
    } else if (key == "Schema") {
      if (!(h.schema = number(value, 0xffffffffu))) bad("a number");
    }
  }

  // ---- ids: numeric names keep their number, other names get the lowest free ids ----
  void assign_ids() {
    std::unordered_set<uint32_t> taken;
    for (const Token& t : tokens_) {
      if (t.kind != Token::Kind::kId || !is_decimal(t.text)) continue;
      auto d = parse_decimal(t.text);
      if (!d->fits(0xffffffffu)) fail(t, "id %" + t.text + " out of range (at most 4294967295)");
      auto v = static_cast<uint32_t>(d->magnitude);
      ids_[t.text] = v;
      taken.insert(v);
    }
    uint32_t next = 1;
    for (const Token& t : tokens_) {
      if (t.kind != Token::Kind::kId || ids_.count(t.text)) continue;
      while (taken.count(next)) ++next;
      if (next >= 0xffffffffu) fail(t, "too many ids");
      ids_[t.text] = next++;
    }
    for (const auto& [name, v] : ids_) max_id_ = std::max(max_id_, v);
  }

  // ---- tokens ----
  const Token& peek(size_t ahead = 0) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
  const Token& take() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    last_ = &t;
    return t;
  }
  static bool is_instruction_name(std::string_view s) {
    return s.size() > 2 && s[0] == 'O' && s[1] == 'p' && s[2] >= 'A' && s[2] <= 'Z';
  }
  // The next token begins another instruction (or ends the input): the current one has no more operands.
  bool at_instruction_start() const {
    const Token& t = peek();
    return t.kind == Token::Kind::kEnd || (t.kind == Token::Kind::kId && peek(1).kind == Token::Kind::kEquals) ||
           (t.kind == Token::Kind::kWord && is_instruction_name(t.text));
  }

  // ---- instructions ----
  struct Current {
    const InstDef* def;
    const Token* result;
    uint32_t result_type = 0;
    std::vector<uint32_t> operands;  // the words after the first
    std::string string;              // the (last) string operand: OpExtInstImport's set name
    bool done = false;               // the operands that followed replaced the rest of the grammar's list
  };

  void instruction() {
    const Token* result = nullptr;
    if (peek().kind == Token::Kind::kId && peek(1).kind == Token::Kind::kEquals) {
      result = &take();
      take();
    }
    const Token& name = take();
    if (name.kind != Token::Kind::kWord || !is_instruction_name(name.text))
      fail(name, "expected an instruction like OpTypeInt or %name = OpTypeInt, got " + describe(name));
    if (name.text.starts_with("OpUnknown(")) return unknown_instruction(name, result);
    const InstDef* def = find_instruction(name.text);
    if (!def) fail(name, "unknown instruction '" + name.text + "'");
    bool has_result = std::any_of(def->operands.begin(), def->operands.end(),
                                  [](const OperandDef& o) { return o.kind == OperandKind::kIdResult; });
    if (has_result && !result)
      fail(name, std::string(def->name) + " has a result: write %name = " + def->name);
    if (!has_result && result) fail(*result, std::string(def->name) + " has no result id");
    Current cur{def, result};
    operand_list(cur, def->operands);
    if (!at_instruction_start())
      fail(peek(), "too many operands for " + std::string(def->name) + ": unexpected " + describe(peek()));
    emit(def->opcode, cur.operands, name);
    // What later instructions need: defined ids, scalar types, extended instruction sets.
    if (result) {
      uint32_t r = ids_.at(result->text);
      defined_.insert(r);
      if (auto t = declared_scalar_type(def->opcode, cur.operands)) {
        types_[r] = *t;
      } else {
        types_.erase(r);
        auto rt = cur.result_type ? types_.find(cur.result_type) : types_.end();
        if (rt != types_.end() && rt->second.width > 32) value_widths_[r] = rt->second.width;
      }
      if (def->opcode == kOpExtInstImport) sets_[r] = cur.string;
    }
  }

  // OpUnknown(<opcode>) <words...>: the words as they are (numbers or ids).
  void unknown_instruction(const Token& name, const Token* result) {
    std::string_view s = name.text;
    auto d = s.ends_with(")") ? parse_decimal(s.substr(10, s.size() - 11)) : std::nullopt;
    if (!d || !d->fits(0xffff)) fail(name, "expected OpUnknown(<opcode 0 to 65535>), got '" + name.text + "'");
    std::vector<uint32_t> words;
    if (result) words.push_back(ids_.at(result->text));
    while (!at_instruction_start()) {
      const Token& t = take();
      if (t.kind == Token::Kind::kId) {
        words.push_back(ids_.at(t.text));
      } else {
        words.push_back(literal_integer(t, "a word (number) of OpUnknown"));
      }
    }
    emit(static_cast<uint16_t>(d->magnitude), words, name);
  }

  void emit(uint16_t opcode, const std::vector<uint32_t>& operands, const Token& name) {
    if (operands.size() + 1 > 0xffff)
      fail(name, name.text + " has " + std::to_string(operands.size() + 1) +
                     " words; a SPIR-V instruction holds at most 65535");
    InstructionWriter w(out_, opcode);
    w.words(operands);
    w.finish();
  }

  void operand_list(Current& cur, std::span<const OperandDef> defs) {
    for (const OperandDef& def : defs) {
      if (cur.done) return;
      if (def.kind == OperandKind::kIdResult) {
        cur.operands.push_back(ids_.at(cur.result->text));
        continue;
      }
      switch (def.quantifier) {
        case Quantifier::kOne:
          if (at_instruction_start()) missing(cur, def);
          operand(cur, def);
          break;
        case Quantifier::kOptional:
          if (!at_instruction_start()) operand(cur, def);
          break;
        case Quantifier::kMany:
          while (!at_instruction_start()) operand(cur, def);
          break;
      }
    }
  }

  [[noreturn]] void missing(const Current& cur, const OperandDef& def) const {
    std::string what = operand_kind_name(def.kind);
    if (def.name[0]) what += std::string(" '") + def.name + "'";
    throw Error(ErrorCode::kParse, "too few operands for " + std::string(cur.def->name) + ": expected " + what,
                at(last_->end_line, last_->end_column));
  }

  uint32_t id_operand(const Token& t) {
    if (t.kind != Token::Kind::kId) fail(t, "expected an id like %name, got " + describe(t));
    return ids_.at(t.text);
  }

  uint32_t literal_integer(const Token& t, const std::string& what) {
    std::optional<uint64_t> v;
    bool number = false;
    if (t.kind == Token::Kind::kWord) {
      v = parse_hex_bits(t.text, 32);
      std::optional<Decimal> d = parse_decimal(t.text);
      if (d && d->fits(0xffffffffu)) v = d->magnitude;
      number = is_hex_prefixed(t.text) || d;
    }
    if (!v && number) fail(t, "literal " + t.text + " out of range for " + what + " (0 to 4294967295)");
    if (!v) fail(t, "expected " + what + ", got " + describe(t));
    return static_cast<uint32_t>(*v);
  }

  void operand(Current& cur, const OperandDef& def) { operand(cur, def.kind); }

  void operand(Current& cur, OperandKind kind) {
    const KindDef& k = kind_def(kind);
    if (k.category == KindCategory::kComposite) {  // its parts, one token each
      for (size_t i = 0; i < k.bases.size(); ++i) {
        if (i > 0 && at_instruction_start())
          throw Error(ErrorCode::kParse, std::string("too few operands for ") + cur.def->name + ": " + k.name +
                                             " needs " + std::to_string(k.bases.size()) + " parts",
                      at(last_->end_line, last_->end_column));
        operand(cur, k.bases[i]);
      }
      return;
    }
    const Token& t = take();
    switch (kind) {
      case OperandKind::kIdResult: return;  // handled by operand_list
      case OperandKind::kIdResultType:
        cur.result_type = id_operand(t);
        cur.operands.push_back(cur.result_type);
        return;
      case OperandKind::kLiteralInteger: literal_integer_operand(cur, t); return;
      case OperandKind::kLiteralFloat: {
        if (t.kind != Token::Kind::kWord) fail(t, "expected a 32-bit float, got " + describe(t));
        try {
          std::vector<uint32_t> w = parse_literal(ScalarType{ScalarType::Kind::kFloat, 32, false, std::nullopt}, t.text, 1);
          cur.operands.push_back(w[0]);
        } catch (const Error& e) {
          throw e.with_context(at(t.line, t.column));
        }
        return;
      }
      case OperandKind::kLiteralString:
        if (t.kind != Token::Kind::kString) fail(t, "expected a string in double quotes, got " + describe(t));
        append_string(cur.operands, t.text);
        cur.string = t.text;
        return;
      case OperandKind::kLiteralContextDependentNumber: context_number(cur, t); return;
      case OperandKind::kLiteralExtInstInteger: ext_inst_number(cur, t); return;
      case OperandKind::kLiteralSpecConstantOpInteger: spec_constant_op(cur, t); return;
      default: break;
    }
    switch (k.category) {
      case KindCategory::kId: cur.operands.push_back(id_operand(t)); return;
      case KindCategory::kValueEnum: enumerant(cur, kind, t); return;
      case KindCategory::kBitEnum: bit_enumerant(cur, kind, t); return;
      default: cur.operands.push_back(literal_integer(t, std::string("a ") + k.name)); return;
    }
  }

  // A LiteralInteger; OpSwitch's case literals take the selector's width (64-bit: two words).
  void literal_integer_operand(Current& cur, const Token& t) {
    if (cur.def->opcode == kOpSwitch && !cur.operands.empty()) {
      auto it = value_widths_.find(cur.operands[0]);
      if (it != value_widths_.end() && it->second > 32) {
        std::optional<uint64_t> v = parse_hex_bits(t.text, 64);
        if (std::optional<Decimal> d = parse_decimal(t.text); d && d->fits(~uint64_t{0})) v = d->magnitude;
        if (!v || t.kind != Token::Kind::kWord) fail(t, "expected a 64-bit case literal, got " + describe(t));
        cur.operands.push_back(static_cast<uint32_t>(*v));
        cur.operands.push_back(static_cast<uint32_t>(*v >> 32));
        return;
      }
    }
    cur.operands.push_back(literal_integer(t, "a LiteralInteger"));
  }

  // OpSpecConstantOp's operation: an opcode name with or without "Op" (as spirv-dis prints it), or
  // a number; then that instruction's operands less its result type and id.
  void spec_constant_op(Current& cur, const Token& t) {
    const InstDef* op = nullptr;
    if (t.kind == Token::Kind::kWord) {
      if (auto d = parse_decimal(t.text); d && d->fits(0xffff)) {
        op = find_instruction(static_cast<uint16_t>(d->magnitude));
      } else {
        op = find_instruction(std::string_view(t.text));
        if (!op) op = find_instruction("Op" + t.text);
      }
    }
    if (!op) fail(t, "expected the opcode of OpSpecConstantOp's operation (IAdd, 128, ...), got " + describe(t));
    cur.operands.push_back(op->opcode);
    for (const OperandDef& d : op->operands) {
      if (d.kind == OperandKind::kIdResult || d.kind == OperandKind::kIdResultType) continue;
      operand_list(cur, std::span(&d, 1));
    }
    cur.done = true;
  }

  void bit_enumerant(Current& cur, OperandKind kind, const Token& t) {
    std::string kind_name = operand_kind_name(kind);
    if (t.kind != Token::Kind::kWord) fail(t, "expected " + kind_name + " flags (A|B or a number), got " + describe(t));
    uint32_t mask = 0;
    if (auto d = parse_decimal(t.text); d || is_hex_prefixed(t.text)) {
      mask = literal_integer(t, "a " + kind_name + " mask");
    } else {
      std::string_view rest = t.text;
      while (true) {
        size_t bar = rest.find('|');
        std::string_view part = rest.substr(0, bar);
        const EnumDef* e = find_enumerant(kind, part);
        if (!e) fail(t, "unknown " + kind_name + " '" + std::string(part) + "'");
        mask |= e->value;
        if (bar == std::string_view::npos) break;
        rest.remove_prefix(bar + 1);
      }
    }
    cur.operands.push_back(mask);
    for (int bit = 0; bit < 32; ++bit) {
      uint32_t flag = uint32_t{1} << bit;
      if (!(mask & flag)) continue;
      const EnumDef* e = find_enumerant(kind, flag);
      if (!e) fail(t, "unknown " + kind_name + " bit " + std::to_string(flag));
      operand_list(cur, e->params);
    }
  }

  void context_number(Current& cur, const Token& t) {
    if (t.kind != Token::Kind::kWord) fail(t, "expected a number, got " + describe(t));
    if (!defined_.count(cur.result_type)) {
      // The width is unknown: only one raw word (what the disassembler prints in that case).
      if (std::optional<std::vector<uint32_t>> raw = parse_raw_words(t.text, 1)) {
        cur.operands.push_back((*raw)[0]);
        return;
      }
      fail(t, "the type of this literal (the result type of " + std::string(cur.def->name) +
                  ") must be declared earlier in the text");
    }
    auto it = types_.find(cur.result_type);
    ScalarType type = it != types_.end() ? it->second : ScalarType{};
    try {
      std::vector<uint32_t> w = parse_literal(type, t.text, literal_words(type.width));
      cur.operands.insert(cur.operands.end(), w.begin(), w.end());
    } catch (const Error& e) {
      throw e.with_context(at(t.line, t.column));
    }
  }

  void ext_inst_number(Current& cur, const Token& t) {
    // The instruction set is the operand just before (OpExtInst's Set).
    auto set = cur.operands.empty() ? sets_.end() : sets_.find(cur.operands.back());
    bool tosa = set != sets_.end() && set->second == kTosaSetName;
    const ExtInstSetDef* grammar = set != sets_.end() ? find_ext_inst_set(set->second) : nullptr;
    if (t.kind == Token::Kind::kWord && tosa && !parse_decimal(t.text)) {
      std::optional<Op> op = op_from_name(t.text);
      if (!op) fail(t, "unknown " + std::string(kTosaSetName) + " instruction '" + t.text + "'");
      if (op_def(*op).spirv_opcode < 0)
        fail(t, std::string(op_name(*op)) + " has no " + kTosaSetName + " instruction");
      cur.operands.push_back(static_cast<uint32_t>(op_def(*op).spirv_opcode));
      return;
    }
    if (grammar) {  // a set with a grammar: its instruction by name or number, then its operands
      const InstDef* ext = nullptr;
      if (t.kind == Token::Kind::kWord) {
        if (auto d = parse_decimal(t.text); d && d->fits(0xffffffffu)) {
          ext = find_ext_instruction(*grammar, static_cast<uint32_t>(d->magnitude));
        } else {
          ext = find_ext_instruction(*grammar, std::string_view(t.text));
        }
      }
      if (!ext) fail(t, "unknown " + std::string(grammar->name) + " instruction " + describe(t));
      cur.operands.push_back(ext->opcode);
      operand_list(cur, ext->operands);
      cur.done = true;
      return;
    }
    cur.operands.push_back(literal_integer(t, tosa ? "a TOSA operator name or instruction number"
                                                   : "an extended instruction number"));
  }

  void enumerant(Current& cur, OperandKind kind, const Token& t) {
    std::string kind_name = operand_kind_name(kind);
    if (t.kind != Token::Kind::kWord) fail(t, "expected a " + kind_name + " name, got " + describe(t));
    const EnumDef* e = nullptr;
    if (auto d = parse_decimal(t.text)) {
      if (d->fits(0xffffffffu)) e = find_enumerant(kind, static_cast<uint32_t>(d->magnitude));
      if (!e) fail(t, "unknown " + kind_name + " " + t.text);
    } else {
      e = find_enumerant(kind, t.text);
      if (!e) fail(t, "unknown " + kind_name + " '" + t.text + "'");
    }
    cur.operands.push_back(e->value);
    operand_list(cur, e->params);
  }

  std::string_view text_;
  std::string_view source_;
  uint32_t default_version_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  const Token* last_ = nullptr;
  std::unordered_map<std::string, uint32_t> ids_;
  uint32_t max_id_ = 0;
  std::unordered_set<uint32_t> defined_;                // result ids seen so far
  ScalarTypes types_;                                   // scalar types declared so far
  std::unordered_map<uint32_t, std::string> sets_;      // OpExtInstImport id -> set name
  std::unordered_map<uint32_t, uint32_t> value_widths_;  // values of scalar types wider than 32 bits
  std::vector<uint32_t> out_;
};

}  // namespace

std::vector<uint32_t> assemble(std::string_view text, std::string_view source_name, uint32_t default_version) {
  return Assembler(text, source_name, default_version).run();
}

}  // namespace weft::spirv
