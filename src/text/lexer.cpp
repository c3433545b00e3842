#include "text/lexer.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

namespace weft::text {
namespace {

bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_start(char c) { return is_alpha(c) || c == '_'; }
// Words may contain '-' and '.' so that profile names (PRO-INT) and tosa.CONV2D are single tokens.
bool is_ident_char(char c) { return is_alpha(c) || is_digit(c) || c == '_' || c == '.' || c == '-'; }
int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

[[noreturn]] void fail_at(const std::string& file, int line, int column, const std::string& message) {
  throw Error(ErrorCode::kParse, message, Location{.file = file, .line = line, .column = column});
}

std::string shorten(std::string_view s) {
  if (s.size() <= 40) return std::string(s);
  return std::string(s.substr(0, 37)) + "...";
}

}  // namespace

bool is_name_char(char c) {
  return is_alpha(c) || is_digit(c) || c == '_' || c == '.' || c == '-' || c == ':' || c == '/';
}

void Lexer::fail(const std::string& message, int line, int column) const {
  fail_at(file_, line, column, message);
}

void Lexer::advance(size_t n) {
  for (size_t i = 0; i < n && pos_ < src_.size(); ++i, ++pos_) {
    if (src_[pos_] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
  }
}

void Lexer::skip_space_and_comments() {
  while (pos_ < src_.size()) {
    char c = src_[pos_];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      advance(1);
    } else if (c == '#') {
      while (pos_ < src_.size() && src_[pos_] != '\n') advance(1);
    } else {
      break;
    }
  }
}

size_t Lexer::lex_quoted(size_t start, int line, int column) {
  // start is the index of the opening quote. Strings do not span lines, so that a missing quote is
  // reported where the string starts instead of swallowing the rest of the file.
  size_t i = start + 1;
  while (i < src_.size()) {
    char c = src_[i];
    if (c == '"') return i + 1;
    if (c == '\n') break;
    if (c == '\\') {
      if (i + 1 >= src_.size() || src_[i + 1] == '\n') break;
      i += 2;
      continue;
    }
    ++i;
  }
  fail("unterminated string: expected '\"' before the end of the line", line, column);
}

Token Lexer::next() {
  skip_space_and_comments();
  Token t;
  t.line = line_;
  t.column = column_;
  if (pos_ >= src_.size()) {
    t.kind = TokKind::kEof;
    t.text = src_.substr(src_.size());
    return t;
  }
  const size_t start = pos_;
  const char c = src_[pos_];
  const char c1 = pos_ + 1 < src_.size() ? src_[pos_ + 1] : '\0';
  auto single = [&](TokKind k) {
    t.kind = k;
    t.text = src_.substr(start, 1);
    advance(1);
    return t;
  };
  switch (c) {
    case '(': return single(TokKind::kLParen);
    case ')': return single(TokKind::kRParen);
    case '[': return single(TokKind::kLBracket);
    case ']': return single(TokKind::kRBracket);
    case '{': return single(TokKind::kLBrace);
    case '}': return single(TokKind::kRBrace);
    case ',': return single(TokKind::kComma);
    case ':': return single(TokKind::kColon);
    case '=': return single(TokKind::kEqual);
    default: break;
  }
  if (c == '-' && c1 == '>') {
    t.kind = TokKind::kArrow;
    t.text = src_.substr(start, 2);
    advance(2);
    return t;
  }
  const bool sign = (c == '-' || c == '+') && (is_digit(c1) || c1 == '.' || is_alpha(c1));
  if (sign || is_digit(c) || (c == '.' && is_digit(c1))) {
    // A permissive run; the exact number grammar is checked when the token is converted, so that
    // "1.2.3" is reported as a bad number rather than as two tokens.
    size_t i = start + 1;
    const size_t body = sign ? start + 1 : start;
    const bool hex =
        body + 1 < src_.size() && src_[body] == '0' && (src_[body + 1] == 'x' || src_[body + 1] == 'X');
    while (i < src_.size()) {
      char d = src_[i];
      if (is_alpha(d) || is_digit(d) || d == '_' || d == '.') {
        ++i;
      } else if ((d == '+' || d == '-') && !hex && (src_[i - 1] == 'e' || src_[i - 1] == 'E')) {
        ++i;
      } else {
        break;
      }
    }
    t.kind = TokKind::kNumber;
    t.text = src_.substr(start, i - start);
    advance(i - start);
    return t;
  }
  if (is_ident_start(c)) {
    size_t i = start + 1;
    while (i < src_.size() && is_ident_char(src_[i])) ++i;
    t.kind = TokKind::kIdent;
    t.text = src_.substr(start, i - start);
    advance(i - start);
    return t;
  }
  if (c == '%' || c == '@') {
    t.kind = c == '%' ? TokKind::kValue : TokKind::kGraph;
    size_t end;
    if (c1 == '"') {
      end = lex_quoted(start + 1, line_, column_ + 1);
    } else {
      end = start + 1;
      while (end < src_.size() && is_name_char(src_[end])) ++end;
      // A trailing ':' separates the name from its type ("%x: f32[2]").
      while (end > start + 1 && src_[end - 1] == ':') --end;
      if (end == start + 1) {
        fail(std::string("expected a name after '") + c + "'", line_, column_);
      }
    }
    t.text = src_.substr(start, end - start);
    advance(end - start);
    return t;
  }
  if (c == '"') {
    size_t end = lex_quoted(start, line_, column_);
    t.kind = TokKind::kString;
    t.text = src_.substr(start, end - start);
    advance(end - start);
    return t;
  }
  char buf[40];
  auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) {
    std::snprintf(buf, sizeof buf, "unexpected character '%c'", c);
  } else {
    std::snprintf(buf, sizeof buf, "unexpected byte 0x%02x", u);
  }
  fail(buf, line_, column_);
}

const char* kind_name(TokKind k) {
  switch (k) {
    case TokKind::kEof: return "end of input";
    case TokKind::kIdent: return "a word";
    case TokKind::kValue: return "a value name";
    case TokKind::kGraph: return "a graph name";
    case TokKind::kNumber: return "a number";
    case TokKind::kString: return "a string";
    case TokKind::kLParen: return "'('";
    case TokKind::kRParen: return "')'";
    case TokKind::kLBracket: return "'['";
    case TokKind::kRBracket: return "']'";
    case TokKind::kLBrace: return "'{'";
    case TokKind::kRBrace: return "'}'";
    case TokKind::kComma: return "','";
    case TokKind::kColon: return "':'";
    case TokKind::kEqual: return "'='";
    case TokKind::kArrow: return "'->'";
  }
  return "a token";
}

std::string describe(const Token& t) {
  if (t.kind == TokKind::kEof) return "end of input";
  if (t.kind == TokKind::kString) return "string " + shorten(t.text);
  return "'" + shorten(t.text) + "'";
}

namespace {
std::string decode_quoted(std::string_view q, const std::string& file, int line, int column) {
  // q includes both quotes; column is that of the opening quote.
  std::string out;
  for (size_t i = 1; i + 1 < q.size(); ++i) {
    char c = q[i];
    if (c != '\\') {
      out += c;
      continue;
    }
    const int col = column + static_cast<int>(i);
    char e = i + 2 < q.size() ? q[i + 1] : '\0';
    switch (e) {
      case '"':
        out += '"';
        ++i;
        break;
      case '\\':
        out += '\\';
        ++i;
        break;
      case 'n':
        out += '\n';
        ++i;
        break;
      case 't':
        out += '\t';
        ++i;
        break;
      case 'x': {
        int h1 = i + 2 + 1 < q.size() ? hex_value(q[i + 2]) : -1;
        int h2 = i + 3 + 1 < q.size() ? hex_value(q[i + 3]) : -1;
        if (h1 < 0 || h2 < 0) fail_at(file, line, col, "expected two hex digits after '\\x' in string");
        out += static_cast<char>(h1 * 16 + h2);
        i += 3;
        break;
      }
      default:
        fail_at(file, line, col,
                std::string("unknown escape '\\") + (e ? std::string(1, e) : std::string()) +
                    "' in string (expected \\\" \\\\ \\n \\t or \\xHH)");
    }
  }
  return out;
}
}  // namespace

std::string token_name(const Token& t, const std::string& file) {
  std::string_view body = t.text.substr(1);
  if (!body.empty() && body[0] == '"') return decode_quoted(body, file, t.line, t.column + 1);
  return std::string(body);
}

std::string decode_string(const Token& t, const std::string& file) {
  return decode_quoted(t.text, file, t.line, t.column);
}

std::string quote_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string format_name(char sigil, std::string_view name) {
  bool plain = !name.empty() && name.back() != ':';
  for (char c : name) plain = plain && is_name_char(c);
  std::string out(1, sigil);
  if (plain) return out.append(name);
  return out + quote_string(name);
}

// ---- Elements ----

namespace {

// Bits that parsing "nan" stores: NaNs with exactly these bits print as "nan", others as 0x bits.
uint64_t canonical_nan_bits(DType t) {
  uint64_t bits = 0;
  store_from_double(t, &bits, static_cast<double>(std::numeric_limits<float>::quiet_NaN()));
  return bits;
}

uint64_t load_bits(DType t, const uint8_t* p) {
  uint64_t bits = 0;
  std::memcpy(&bits, p, storage_size(t));
  return bits;
}

void append_hex_bits(std::string& out, DType t, uint64_t bits) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%0*llx", static_cast<int>(2 * storage_size(t)),
                static_cast<unsigned long long>(bits));
  out += buf;
}

// The parser's path from decimal text to stored bits for floating types: text -> float (correctly
// rounded by from_chars) -> the element type (store_from_double rounds ties to even). The printer
// searches for the shortest text that takes this same path back to the same bits.
bool decimal_to_float(std::string_view s, float& f) {
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  auto r = std::from_chars(s.data(), s.data() + s.size(), f, std::chars_format::general);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || s.empty()) return false;
  if (negative) f = -f;
  return true;
}

}  // namespace

void append_element(std::string& out, DType t, const uint8_t* p) {
  char buf[64];
  if (t == DType::kBool) {
    out += *p ? "true" : "false";
    return;
  }
  if (!is_float(t)) {
    auto r = std::to_chars(buf, buf + sizeof buf, load_as_int(t, p));
    out.append(buf, r.ptr);
    return;
  }
  const uint64_t bits = load_bits(t, p);
  const auto f = static_cast<float>(load_as_double(t, p));
  if (std::isnan(f)) {
    if (bits == canonical_nan_bits(t)) {
      out += "nan";
    } else {
      append_hex_bits(out, t, bits);
    }
    return;
  }
  if (t == DType::kFp32) {
    auto r = std::to_chars(buf, buf + sizeof buf, f);  // shortest round trip
    out.append(buf, r.ptr);
    return;
  }
  // Narrow types: the shortest decimal of the float value is exact but long ("0.099975586" for the
  // fp16 nearest to 0.1); find the fewest significant digits that still come back to these bits,
  // then let the double's shortest form choose between fixed and exponent notation ("65500", not
  // "6.55e+04"). The digits are the same decimal number either way, so it parses back identically.
  for (int precision = 1; precision <= 9; ++precision) {
    auto r = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific, precision - 1);
    std::string_view digits(buf, static_cast<size_t>(r.ptr - buf));
    float back;
    if (!decimal_to_float(digits, back)) continue;
    uint64_t again = 0;
    store_from_double(t, &again, static_cast<double>(back));
    if (again != bits) continue;
    double d = 0;
    std::from_chars(digits.data(), digits.data() + digits.size(), d);
    char buf2[64];
    auto r2 = std::to_chars(buf2, buf2 + sizeof buf2, d);
    std::string_view pretty(buf2, static_cast<size_t>(r2.ptr - buf2));
    uint64_t check = 0;
    if (decimal_to_float(pretty, back)) store_from_double(t, &check, static_cast<double>(back));
    out += check == bits && pretty.size() <= digits.size() ? pretty : digits;
    return;
  }
  append_hex_bits(out, t, bits);  // not reached for finite values; keeps the bits regardless
}

int64_t parse_int(const Token& tok, int64_t lo, int64_t hi, const std::string& file, const char* what) {
  if (tok.kind != TokKind::kNumber) {
    fail_at(file, tok.line, tok.column, std::string("expected ") + what + ", found " + describe(tok));
  }
  std::string_view s = tok.text;
  if (s.size() > 1 && s[0] == '+') s.remove_prefix(1);
  int64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec == std::errc::result_out_of_range) {
    fail_at(file, tok.line, tok.column, std::string(what) + " " + std::string(tok.text) + " is out of range");
  }
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) {
    fail_at(file, tok.line, tok.column, std::string("expected ") + what + ", found " + describe(tok));
  }
  if (v < lo || v > hi) {
    fail_at(file, tok.line, tok.column,
            std::string(what) + " " + std::to_string(v) + " is out of range [" + std::to_string(lo) + ", " +
                std::to_string(hi) + "]");
  }
  return v;
}

void parse_element(const Token& tok, DType t, uint8_t* p, const std::string& file) {
  auto bad = [&](const std::string& why) { fail_at(file, tok.line, tok.column, why); };
  if (t == DType::kBool) {
    if (tok.kind == TokKind::kIdent && (tok.text == "true" || tok.text == "false")) {
      *p = tok.text == "true" ? 1 : 0;
      return;
    }
    if (tok.kind == TokKind::kNumber && (tok.text == "0" || tok.text == "1")) {
      *p = tok.text == "1" ? 1 : 0;
      return;
    }
    bad("expected a bool value (true or false), found " + describe(tok));
  }
  if (!is_float(t)) {
    if (tok.kind != TokKind::kNumber)
      bad(std::string("expected an ") + dtype_name(t) + " value, found " + describe(tok));
    std::string what = std::string(dtype_name(t)) + " value";
    store_from_int(t, p, parse_int(tok, int_min(t), int_max(t), file, what.c_str()));
    return;
  }
  const std::string tname = dtype_name(t);
  std::string_view s = tok.text;
  if (tok.kind == TokKind::kIdent && (s == "inf" || s == "nan")) {
    // Words without a sign are lexed as identifiers.
  } else if (tok.kind != TokKind::kNumber) {
    bad("expected a " + tname + " value, found " + describe(tok));
  }
  bool negative = false;
  std::string_view body = s;
  if (!body.empty() && (body[0] == '-' || body[0] == '+')) {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  if (body.size() > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X')) {
    if (s[0] == '-' || s[0] == '+') bad("raw bit patterns (0x...) take no sign: " + describe(tok));
    uint64_t bits = 0;
    auto r = std::from_chars(body.data() + 2, body.data() + body.size(), bits, 16);
    if (r.ec != std::errc() || r.ptr != body.data() + body.size()) bad("bad number " + describe(tok));
    const size_t width = storage_size(t) * 8;
    if (width < 64 && (bits >> width) != 0) bad("raw bits " + std::string(s) + " do not fit in " + tname);
    std::memcpy(p, &bits, storage_size(t));
    return;
  }
  float f;
  if (body == "inf") {
    f = negative ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  } else if (body == "nan") {
    f = negative ? -std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::quiet_NaN();
  } else {
    auto r = std::from_chars(body.data(), body.data() + body.size(), f, std::chars_format::general);
    if (r.ec == std::errc::result_out_of_range)
      bad("number " + std::string(s) + " is out of range for " + tname);
    if (r.ec != std::errc() || r.ptr != body.data() + body.size() || body.empty())
      bad("bad number " + describe(tok));
    if (negative) f = -f;
  }
  store_from_double(t, p, static_cast<double>(f));
}

}  // namespace weft::text
