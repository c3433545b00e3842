#include "iospec/yaml_util.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <regex>

namespace weft::iospec::detail {

namespace {

enum class PlainKind { kNull, kBool, kInt, kFloat, kString };

const std::regex kIntPattern("[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+");
const std::regex kDecimalPattern("[-+]?[0-9]+");
const std::regex kFloatPattern(
    "[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?\\.(inf|Inf|INF)|\\.(nan|NaN|NAN)");

bool full_match(const std::string& s, const std::regex& pattern) { return std::regex_match(s, pattern); }

// The YAML 1.2 core schema's reading of a plain scalar.
PlainKind plain_kind(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return PlainKind::kNull;
  if (s == "true" || s == "True" || s == "TRUE" || s == "false" || s == "False" || s == "FALSE") return PlainKind::kBool;
  if (full_match(s, kIntPattern)) return PlainKind::kInt;
  if (full_match(s, kFloatPattern))
    return PlainKind::kFloat;
  return PlainKind::kString;
}

bool is_plain(const YAML::Node& n) { return n.Tag() == "?"; }

void check_tag(const YamlContext& ctx, const YAML::Node& n, int fallback_line, const std::string& path) {
  const std::string& tag = n.Tag();
  if (tag != "?" && tag != "!" && !tag.empty())
    fail_at(ctx, n, fallback_line, path, "YAML tags are not supported here (got '" + tag + "')");
}

const char* kind_word(PlainKind k) {
  switch (k) {
    case PlainKind::kNull: return "null";
    case PlainKind::kBool: return "a boolean";
    case PlainKind::kInt: return "an integer";
    case PlainKind::kFloat: return "a number";
    case PlainKind::kString: return "a string";
  }
  return "?";
}

// Quoted for messages, in YAML's double-quoted form.
std::string quoted(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    r += c;
  }
  return r + "\"";
}

}  // namespace

int line_of(const YAML::Node& n, int fallback) {
  if (!n.IsDefined()) return fallback;
  // A missing value's mark is the next token's: the key's line is better.
  if (n.IsNull() && fallback > 0) return fallback;
  const YAML::Mark m = n.Mark();
  if (m.is_null() || m.line < 0) return fallback;
  return m.line + 1;
}

void fail_at(const YamlContext& ctx, int line, const std::string& operand, const std::string& message) {
  throw Error(ctx.code, message, Location{.file = ctx.source, .line = line, .operand = operand});
}

void fail_at(const YamlContext& ctx, const YAML::Node& n, int fallback_line, const std::string& operand,
             const std::string& message) {
  fail_at(ctx, line_of(n, fallback_line), operand, message);
}

std::string join_path(const std::string& a, const std::string& b) { return a.empty() ? b : a + "." + b; }

std::string show(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "nothing";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  if (is_plain(n)) return "'" + n.Scalar() + "'";
  return quoted(n.Scalar());
}

YAML::Node load_document(std::string_view text, const YamlContext& ctx) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(std::string(text));
  } catch (const YAML::Exception& e) {
    const int line = e.mark.is_null() ? 0 : e.mark.line + 1;
    throw Error(ErrorCode::kParse, "YAML syntax: " + e.msg, Location{.file = ctx.source, .line = line});
  }
  if (docs.size() > 1)
    throw Error(ErrorCode::kParse, "expected one YAML document, got " + std::to_string(docs.size()),
                Location{.file = ctx.source, .line = line_of(docs[1], 0)});
  if (docs.empty()) return YAML::Node();
  return docs[0];
}

int64_t as_int(const YamlContext& ctx, const YAML::Node& n, int fallback_line, const std::string& path) {
  check_tag(ctx, n, fallback_line, path);
  if (!n.IsDefined() || n.IsNull()) fail_at(ctx, n, fallback_line, path, "missing value: expected an integer");
  if (!n.IsScalar() || !is_plain(n)) fail_at(ctx, n, fallback_line, path, "expected an integer, got " + show(n));
  const std::string& s = n.Scalar();
  if (!full_match(s, kDecimalPattern)) {
    const PlainKind k = plain_kind(s);
    fail_at(ctx, n, fallback_line, path,
            std::string("expected a decimal integer, got ") + show(n) +
                (k == PlainKind::kString ? "" : std::string(" (") + kind_word(k) + ")"));
  }
  int64_t v = 0;
  const char* b = s.data() + (s[0] == '+' ? 1 : 0);
  auto [p, ec] = std::from_chars(b, s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size())
    fail_at(ctx, n, fallback_line, path, "integer out of range: " + s);
  return v;
}

double as_float(const YamlContext& ctx, const YAML::Node& n, int fallback_line, const std::string& path) {
  check_tag(ctx, n, fallback_line, path);
  if (!n.IsDefined() || n.IsNull()) fail_at(ctx, n, fallback_line, path, "missing value: expected a number");
  if (!n.IsScalar() || !is_plain(n)) fail_at(ctx, n, fallback_line, path, "expected a number, got " + show(n));
  const std::string& s = n.Scalar();
  const PlainKind k = plain_kind(s);
  if (k != PlainKind::kInt && k != PlainKind::kFloat)
    fail_at(ctx, n, fallback_line, path, "expected a number, got " + show(n));
  std::string body = s;
  bool neg = false;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    neg = body[0] == '-';
    body.erase(0, 1);
  }
  if (body == ".inf" || body == ".Inf" || body == ".INF")
    return neg ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  if (body == ".nan" || body == ".NaN" || body == ".NAN") return std::numeric_limits<double>::quiet_NaN();
  if (body.rfind("0x", 0) == 0 || body.rfind("0o", 0) == 0)
    fail_at(ctx, n, fallback_line, path, "expected a decimal number, got " + show(n));
  double v = 0;
  auto [p, ec] = std::from_chars(body.data(), body.data() + body.size(), v);
  if (ec != std::errc() || p != body.data() + body.size())
    fail_at(ctx, n, fallback_line, path, "number out of range: " + s);
  return neg ? -v : v;
}

bool as_bool(const YamlContext& ctx, const YAML::Node& n, int fallback_line, const std::string& path) {
  check_tag(ctx, n, fallback_line, path);
  if (!n.IsDefined() || n.IsNull()) fail_at(ctx, n, fallback_line, path, "missing value: expected true or false");
  if (n.IsScalar() && is_plain(n)) {
    const std::string& s = n.Scalar();
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
  }
  fail_at(ctx, n, fallback_line, path, "expected true or false, got " + show(n));
}

std::string as_name(const YamlContext& ctx, const YAML::Node& n, int fallback_line, const std::string& path,
                    const char* what) {
  check_tag(ctx, n, fallback_line, path);
  if (!n.IsDefined() || n.IsNull()) {
    // A quoted empty string is a (rejected) string, a plain empty one is null.
    if (n.IsDefined() && n.Tag() == "!")
      fail_at(ctx, n, fallback_line, path, std::string(what) + " must be a non-empty string");
    fail_at(ctx, n, fallback_line, path, std::string(what) + " must be a non-empty string, got nothing");
  }
  if (!n.IsScalar()) fail_at(ctx, n, fallback_line, path, std::string(what) + " must be a string, got " + show(n));
  const std::string& s = n.Scalar();
  if (is_plain(n)) {
    const PlainKind k = plain_kind(s);
    if (k != PlainKind::kString)
      fail_at(ctx, n, fallback_line, path,
              std::string(what) + " must be a string, but " + show(n) + " reads as " + kind_word(k) +
                  " in YAML; quote it: " + quoted(s));
  }
  if (s.empty()) fail_at(ctx, n, fallback_line, path, std::string(what) + " must be a non-empty string");
  return s;
}

MapReader::MapReader(const YamlContext& ctx, const YAML::Node& map, int fallback_line, std::string path,
                     const char* what, std::optional<std::vector<std::string>> allowed, bool null_ok)
    : ctx_(ctx), path_(std::move(path)), line_(fallback_line > 0 ? fallback_line : line_of(map, 0)) {
  if (map.IsDefined()) check_tag(ctx, map, fallback_line, path_);
  if (!map.IsDefined() || map.IsNull()) {
    if (null_ok) return;
    fail_at(ctx, line_, path_, std::string("expected ") + what + " (a mapping), got nothing");
  }
  if (!map.IsMap()) fail_at(ctx, line_, path_, std::string("expected ") + what + " (a mapping), got " + show(map));
  for (auto it = map.begin(); it != map.end(); ++it) {
    MapEntry e;
    e.key_node = it->first;
    e.value = it->second;
    e.line = line_of(it->first, line_);
    if (!e.key_node.IsScalar())
      fail_at(ctx, e.line, path_, std::string("keys of ") + what + " must be names, got " + show(e.key_node));
    e.key = as_name(ctx, e.key_node, line_, join_path(path_, e.key_node.Scalar()), "a key");
    if (allowed && std::find(allowed->begin(), allowed->end(), e.key) == allowed->end()) {
      std::string list;
      for (const std::string& a : *allowed) list += (list.empty() ? "" : ", ") + a;
      fail_at(ctx, e.line, join_path(path_, e.key),
              "unknown key '" + e.key + "' in " + what + " (expected: " + list + ")");
    }
    for (const MapEntry& prev : entries_) {
      if (prev.key == e.key)
        fail_at(ctx, e.line, join_path(path_, e.key),
                "duplicate key '" + e.key + "' in " + what + " (first at line " + std::to_string(prev.line) + ")");
    }
    entries_.push_back(std::move(e));
  }
}

const MapEntry* MapReader::find(std::string_view key) const {
  for (const MapEntry& e : entries_) {
    if (e.key == key) return &e;
  }
  return nullptr;
}

const MapEntry& MapReader::require(std::string_view key) const {
  if (const MapEntry* e = find(key)) return *e;
  fail_at(ctx_, line_, join_path(path_, std::string(key)), "missing key '" + std::string(key) + "'");
}

}  // namespace weft::iospec::detail
