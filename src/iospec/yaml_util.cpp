#include "iospec/yaml_util.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>

#include <yaml-cpp/eventhandler.h>

namespace weft::iospec::detail {

namespace {

enum class PlainKind { kNull, kBool, kInt, kFloat, kString };

// The core schema's patterns, matched by hand: std::regex recurses once per character and
// overflows the stack on a long scalar (tens of thousands of digits).
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_octal(char c) { return c >= '0' && c <= '7'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// How many characters from `at` on satisfy `ok`.
size_t run_of(const std::string& s, size_t at, bool (*ok)(char)) {
  size_t i = at;
  while (i < s.size() && ok(s[i])) ++i;
  return i - at;
}

size_t sign_len(const std::string& s) { return !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0; }

// [-+]?[0-9]+
bool is_decimal(const std::string& s) {
  const size_t i = sign_len(s);
  return i < s.size() && run_of(s, i, is_digit) == s.size() - i;
}

// [-+]?[0-9]+ | 0o[0-7]+ | 0x[0-9a-fA-F]+
bool is_core_int(const std::string& s) {
  if (is_decimal(s)) return true;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x'))
    return run_of(s, 2, s[1] == 'o' ? is_octal : is_hex) == s.size() - 2;
  return false;
}

// [-+]?(\.[0-9]+ | [0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? | [-+]?\.(inf|Inf|INF) | \.(nan|NaN|NAN)
bool is_core_float(const std::string& s) {
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return true;
  size_t i = sign_len(s);
  const std::string body = s.substr(i);
  if (body == ".inf" || body == ".Inf" || body == ".INF") return true;
  const size_t whole = run_of(s, i, is_digit);
  i += whole;
  if (i < s.size() && s[i] == '.') {
    const size_t fraction = run_of(s, i + 1, is_digit);
    if (whole == 0 && fraction == 0) return false;
    i += 1 + fraction;
  } else if (whole == 0) {
    return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    const size_t exponent = run_of(s, i, is_digit);
    if (exponent == 0) return false;
    i += exponent;
  }
  return i == s.size();
}

// The YAML 1.2 core schema's reading of a plain scalar.
PlainKind plain_kind(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return PlainKind::kNull;
  if (s == "true" || s == "True" || s == "TRUE" || s == "false" || s == "False" || s == "FALSE") return PlainKind::kBool;
  if (is_core_int(s)) return PlainKind::kInt;
  if (is_core_float(s)) return PlainKind::kFloat;
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

namespace {

// Counts the documents of a stream (and where the second one's root node is) from the parser's
// events, without building nodes. yaml-cpp's LoadAll() never returns on a token that starts no node,
// such as a ',' outside a flow collection (jbeder/yaml-cpp#1040, in Debian 12's 0.7): the document
// parser reports an empty document there without consuming the token, again and again, and LoadAll
// collects them until memory runs out. A document that starts where the previous one did is that
// case; the scan stops there with `stuck` set.
class DocumentScan : public YAML::EventHandler {
 public:
  int documents = 0;
  YAML::Mark second_root = YAML::Mark::null_mark();
  std::optional<YAML::Mark> stuck;

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (documents > 0 && mark.pos <= last_start_.pos) stuck = mark;
    last_start_ = mark;
    ++documents;
    root_seen_ = false;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { node(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { node(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string&) override {
    node(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    node(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    node(mark);
  }
  void OnMapEnd() override {}

 private:
  void node(const YAML::Mark& mark) {
    if (!root_seen_ && documents == 2) second_root = mark;
    root_seen_ = true;
  }
  YAML::Mark last_start_ = YAML::Mark::null_mark();
  bool root_seen_ = false;
};

}  // namespace

YAML::Node load_document(std::string_view text, const YamlContext& ctx) {
  const std::string input(text);
  DocumentScan scan;
  YAML::Node doc;
  try {
    std::istringstream stream(input);
    YAML::Parser parser(stream);
    while (!scan.stuck && parser.HandleNextDocument(scan)) {
    }
    if (scan.stuck) {
      const YAML::Mark& m = *scan.stuck;
      const char c = m.pos >= 0 && static_cast<size_t>(m.pos) < input.size() ? input[m.pos] : '\0';
      const std::string what = c > ' ' && c < 0x7f ? "'" + std::string(1, c) + "'" : std::string("token");
      throw Error(ErrorCode::kParse,
                  "YAML syntax: unexpected " + what + " at column " + std::to_string(m.column + 1) +
                      ", where no value can start",
                  Location{.file = ctx.source, .line = m.line + 1});
    }
    if (scan.documents == 1) doc = YAML::Load(input);  // the same parse, now safe
  } catch (const YAML::Exception& e) {
    const int line = e.mark.is_null() ? 0 : e.mark.line + 1;
    throw Error(ErrorCode::kParse, "YAML syntax: " + e.msg, Location{.file = ctx.source, .line = line});
  }
  if (scan.documents > 1)
    throw Error(ErrorCode::kParse, "expected one YAML document, got " + std::to_string(scan.documents),
                Location{.file = ctx.source, .line = scan.second_root.is_null() ? 0 : scan.second_root.line + 1});
  return doc;
}

int64_t as_int(const YamlContext& ctx, const YAML::Node& n, int fallback_line, const std::string& path) {
  check_tag(ctx, n, fallback_line, path);
  if (!n.IsDefined() || n.IsNull()) fail_at(ctx, n, fallback_line, path, "missing value: expected an integer");
  if (!n.IsScalar() || !is_plain(n)) fail_at(ctx, n, fallback_line, path, "expected an integer, got " + show(n));
  const std::string& s = n.Scalar();
  if (!is_decimal(s)) {
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
