// The IOSpec target (word size, padding granule, core) and the padding rule.
#include <climits>
#include <fstream>
#include <sstream>

#include "iospec/internal.h"
#include "weft/io.h"
#include "iospec/yaml_util.h"

namespace weft::iospec {

namespace detail {

std::optional<int> precision_of(DType t) {
  switch (t) {
    case DType::kBool: return 8;  // stored and carried as one byte per element
    case DType::kInt4: return 4;
    case DType::kInt8:
    case DType::kFp8E4M3:
    case DType::kFp8E5M2: return 8;
    case DType::kInt16:
    case DType::kFp16:
    case DType::kBf16: return 16;
    case DType::kInt32:
    case DType::kFp32: return 32;
    case DType::kInt48:
    case DType::kShape: return std::nullopt;
  }
  return std::nullopt;
}

bool valid_precision(int64_t p) { return p >= 1 && p <= 64 && 64 % p == 0; }

Padding pad(int64_t length, int precision, const Target& target) {
  const __int128 g = static_cast<__int128>(target.word_bits) * target.granule_words;
  if (g <= 0 || length < 0 || precision <= 0)
    throw Error(ErrorCode::kInvalidArgument, "invalid padding arguments");
  const __int128 bits = static_cast<__int128>(length) * precision;
  const __int128 padded_bits = (bits + g - 1) / g * g;
  if (padded_bits % precision != 0)
    throw Error(ErrorCode::kInvalidArgument,
                "a granule of " + std::to_string(static_cast<int64_t>(g)) + " bits does not hold whole " +
                    std::to_string(precision) + "-bit elements");
  if (padded_bits % 64 != 0)
    throw Error(ErrorCode::kInvalidArgument,
                std::to_string(length) + " " + std::to_string(precision) + "-bit elements pad to " +
                    std::to_string(static_cast<int64_t>(padded_bits)) + " bits (granules of " +
                    std::to_string(static_cast<int64_t>(g)) + " bits), not a whole number of 64-bit words");
  const __int128 padded = padded_bits / precision;
  if (padded > INT64_MAX) throw Error(ErrorCode::kInvalidArgument, "padded length out of range");
  return Padding{static_cast<int64_t>(padded), static_cast<int64_t>(padded_bits / 64)};
}

std::string describe_target(const Target& target) {
  return "the target (" + std::to_string(target.word_bits) + "-bit words, granules of " +
         std::to_string(target.granule_words) + " word" + (target.granule_words == 1 ? "" : "s") + " = " +
         std::to_string(static_cast<int64_t>(target.word_bits) * target.granule_words) + " bits)";
}

std::string list_str(const std::vector<std::string>& names) {
  std::string s = "[";
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  return s + "]";
}

std::string read_text_file(const std::string& path, const char* what) {
  return read_file_bytes(path, kMaxConfigBytes, what);
}

}  // namespace detail

Target parse_target(std::string_view yaml, const std::string& source) {
  using namespace detail;
  YamlContext ctx{source, ErrorCode::kInvalidArgument};
  YAML::Node doc = load_document(yaml, ctx);
  MapReader map(ctx, doc, 1, "", "a target", std::vector<std::string>{"word_bits", "granule_words", "core_id"},
                /*null_ok=*/true);
  Target t;
  auto read = [&](const char* key, int* out, int64_t min, const char* rule, bool multiple_of_8) {
    const MapEntry* e = map.find(key);
    if (!e) return;
    const int64_t v = as_int(ctx, e->value, e->line, key);
    if (v < min || v > INT_MAX || (multiple_of_8 && v % 8 != 0))
      fail_at(ctx, e->value, e->line, key, std::string(key) + " must be " + rule + ", got " + std::to_string(v));
    *out = static_cast<int>(v);
  };
  read("word_bits", &t.word_bits, 8, "a positive multiple of 8", true);
  read("granule_words", &t.granule_words, 1, ">= 1", false);
  read("core_id", &t.core_id, 0, ">= 0", false);
  return t;
}

Target read_target(const std::string& path) { return parse_target(detail::read_text_file(path, "target file"), path); }

}  // namespace weft::iospec
