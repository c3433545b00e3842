// The expression language of custom operator registrations (custom.h, above OpSpec): integer and
// float arithmetic over the node's shapes and attributes.
//
//   expr    := term (('+' | '-') term)*
//   term    := unary (('*' | '/' | '%') unary)*
//   unary   := '-' unary | primary
//   primary := number | '(' expr ')' | ('ceil_div' | 'min' | 'max') '(' expr ',' expr ')'
//            | ('in' | 'out') digits ('[' '-'? digits ']' | '.' 'rank')
//            | 'attr' '.' name ('|' '-'? number)?
//
// Integers are int64 (overflow is an error); an operation with a float operand is done in double.
// Integer '/' rounds toward negative infinity and '%' takes the divisor's sign (a == (a/b)*b + a%b).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "custom/registry_internal.h"

namespace weft::custom {

namespace {

using detail::ExactValue;

ExactValue make_int(int64_t v) { return ExactValue{false, v, 0}; }
ExactValue make_float(double v) { return ExactValue{true, 0, v}; }

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

std::string plural(size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t floor_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

class Parser {
 public:
  // env == nullptr: syntax only (every value is 0 and nothing is evaluated).
  Parser(std::string_view text, const ExprEnv* env, const std::string& what) : s_(text), env_(env), what_(what) {}

  ExactValue parse() {
    skip();
    if (pos_ >= s_.size()) fail(pos_, "empty expression");
    ExactValue v = expr();
    skip();
    if (pos_ < s_.size()) {
      if (s_[pos_] == ')') fail(pos_, "unbalanced ')'");
      fail(pos_, "unexpected " + describe(pos_) + " (expected an operator or the end)");
    }
    return v;
  }

 private:
  [[noreturn]] void fail(size_t at, const std::string& rule) const {
    std::string m = what_.empty() ? "" : what_ + ": ";
    m += std::string(s_) + ": " + rule + " at column " + std::to_string(at + 1);
    throw Error(ErrorCode::kInvalidArgument, std::move(m));
  }
  std::string describe(size_t at) const {
    if (at >= s_.size()) return "end of expression";
    const char c = s_[at];
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) return "character";
    return std::string("'") + c + "'";
  }

  void skip() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
  }
  bool accept(char c) {
    skip();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c, const std::string& context) {
    skip();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return;
    }
    fail(pos_, std::string("expected '") + c + "' " + context + ", found " + describe(pos_));
  }
  std::string ident() {
    skip();
    size_t b = pos_;
    if (pos_ >= s_.size() || !is_ident_start(s_[pos_])) return {};
    while (pos_ < s_.size() && is_ident_char(s_[pos_])) ++pos_;
    return std::string(s_.substr(b, pos_ - b));
  }

  // ---- arithmetic ----
  ExactValue binary(char op, const ExactValue& a, const ExactValue& b, size_t at) {
    if (!env_) return {};
    if ((op == '/' || op == '%') && (b.is_float ? b.f == 0.0 : b.i == 0)) fail(at, "division by zero");
    if (a.is_float || b.is_float) {
      const double x = a.as_double(), y = b.as_double();
      switch (op) {
        case '+': return make_float(x + y);
        case '-': return make_float(x - y);
        case '*': return make_float(x * y);
        case '/': return make_float(x / y);
        default: return make_float(x - y * std::floor(x / y));  // '%', the divisor's sign
      }
    }
    int64_t r = 0;
    bool overflow = false;
    switch (op) {
      case '+': overflow = __builtin_add_overflow(a.i, b.i, &r); break;
      case '-': overflow = __builtin_sub_overflow(a.i, b.i, &r); break;
      case '*': overflow = __builtin_mul_overflow(a.i, b.i, &r); break;
      case '/':
        overflow = a.i == std::numeric_limits<int64_t>::min() && b.i == -1;
        if (!overflow) r = floor_div(a.i, b.i);
        break;
      default:
        r = b.i == -1 ? 0 : floor_mod(a.i, b.i);
        break;
    }
    if (overflow) fail(at, "integer overflow");
    return make_int(r);
  }

  ExactValue expr() {
    ExactValue v = term();
    for (;;) {
      skip();
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) {
        const size_t at = pos_;
        const char op = s_[pos_++];
        ExactValue r = term();
        v = binary(op, v, r, at);
      } else {
        return v;
      }
    }
  }
  ExactValue term() {
    ExactValue v = unary();
    for (;;) {
      skip();
      if (pos_ < s_.size() && (s_[pos_] == '*' || s_[pos_] == '/' || s_[pos_] == '%')) {
        const size_t at = pos_;
        const char op = s_[pos_++];
        ExactValue r = unary();
        v = binary(op, v, r, at);
      } else {
        return v;
      }
    }
  }
  ExactValue unary() {
    skip();
    if (pos_ < s_.size() && s_[pos_] == '-') {
      const size_t at = pos_++;
      ExactValue v = unary();
      if (!env_) return {};
      if (v.is_float) return make_float(-v.f);
      if (v.i == std::numeric_limits<int64_t>::min()) fail(at, "integer overflow");
      return make_int(-v.i);
    }
    return primary();
  }

  // A number literal at pos_ (digits, optional fraction, optional exponent; or '.' digits).
  ExactValue number() {
    const size_t b = pos_;
    bool is_float = false;
    while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '.') {
      is_float = true;
      ++pos_;
      while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      size_t e = pos_ + 1;
      if (e < s_.size() && (s_[e] == '+' || s_[e] == '-')) ++e;
      if (e < s_.size() && is_digit(s_[e])) {
        is_float = true;
        pos_ = e;
        while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
      }
    }
    const std::string_view t = s_.substr(b, pos_ - b);
    if (t == ".") fail(b, "expected a number after '.'");
    if (pos_ < s_.size() && is_ident_char(s_[pos_])) fail(pos_, "unexpected " + describe(pos_) + " after a number");
    if (is_float) {
      double d = 0;
      auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), d);
      if (ec != std::errc() || p != t.data() + t.size() || !std::isfinite(d)) fail(b, "float literal out of range");
      return make_float(d);
    }
    int64_t i = 0;
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), i);
    if (ec != std::errc() || p != t.data() + t.size()) fail(b, "integer literal out of range");
    return make_int(i);
  }

  ExactValue primary() {
    skip();
    if (pos_ >= s_.size()) fail(pos_, "unexpected end of expression (expected a value)");
    const size_t at = pos_;
    const char c = s_[pos_];
    if (c == '(') {
      ++pos_;
      ExactValue v = expr();
      expect(')', "to close the '(' at column " + std::to_string(at + 1));
      return v;
    }
    if (is_digit(c) || c == '.') return number();
    if (!is_ident_start(c)) fail(at, "unexpected " + describe(at) + " (expected a value)");
    const std::string name = ident();
    if (name == "ceil_div" || name == "min" || name == "max") return function(name, at);
    if (name == "attr") return attribute(at);
    const bool in = name.size() > 2 && name.compare(0, 2, "in") == 0;
    const bool out = name.size() > 3 && name.compare(0, 3, "out") == 0;
    if (in || out) {
      const std::string digits = name.substr(in ? 2 : 3);
      bool all_digits = true;
      for (char d : digits) all_digits = all_digits && is_digit(d);
      if (all_digits) return dimension(name, !in, digits, at);
    }
    skip();
    if (pos_ < s_.size() && s_[pos_] == '(')
      fail(at, "unknown function '" + name + "' (known: ceil_div, min, max)");
    fail(at, "unknown name '" + name + "' (known: in<i>[<d>], in<i>.rank, out<i>[<d>], out<i>.rank, attr.<name>)");
  }

  ExactValue function(const std::string& name, size_t at) {
    expect('(', "after " + name);
    ExactValue a = expr();
    expect(',', "between the arguments of " + name);
    ExactValue b = expr();
    expect(')', "after the arguments of " + name + " (it takes 2)");
    if (!env_) return {};
    const bool f = a.is_float || b.is_float;
    if (name == "min" || name == "max") {
      const bool first = name == "min" ? (a.as_double() <= b.as_double()) : (a.as_double() >= b.as_double());
      if (!f) return make_int(name == "min" ? std::min(a.i, b.i) : std::max(a.i, b.i));
      return make_float(first ? a.as_double() : b.as_double());
    }
    // ceil_div
    if (b.is_float ? b.f == 0.0 : b.i == 0) fail(at, "division by zero in ceil_div");
    if (f) return make_float(std::ceil(a.as_double() / b.as_double()));
    if (a.i == std::numeric_limits<int64_t>::min() && b.i == -1) fail(at, "integer overflow");
    int64_t q = floor_div(a.i, b.i);
    if (q * b.i != a.i) ++q;
    return make_int(q);
  }

  ExactValue dimension(const std::string& name, bool output, const std::string& digits, size_t at) {
    if (digits.size() > 1 && digits[0] == '0') fail(at, "'" + name + "': no leading zeros in the index");
    int64_t index = 0;
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec != std::errc()) fail(at, "'" + name + "': index out of range");
    skip();
    bool rank = false;
    int64_t d = 0;
    size_t dim_at = pos_;
    if (accept('.')) {
      const size_t r = pos_;
      if (ident() != "rank") {
        pos_ = r;
        skip();
        fail(pos_, "expected 'rank' after '" + name + ".'");
      }
      rank = true;
    } else if (accept('[')) {
      skip();
      dim_at = pos_;
      const bool neg = accept('-');
      skip();
      const size_t b = pos_;
      while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
      if (b == pos_) fail(pos_, "expected an integer dimension index after '" + name + "['");
      auto [q, e2] = std::from_chars(s_.data() + b, s_.data() + pos_, d);
      if (e2 != std::errc()) fail(b, "dimension index out of range");
      if (neg) d = -d;
      expect(']', "after the dimension index");
    } else {
      fail(pos_, "expected '[' or '.rank' after '" + name + "'");
    }
    if (!env_) return {};
    const std::vector<Shape>& shapes = output ? env_->outputs : env_->inputs;
    if (index >= static_cast<int64_t>(shapes.size())) {
      if (output)
        fail(at, name + ": output " + std::to_string(index) + " is not known here (" +
                     plural(shapes.size(), "output shape") + " known; an output's shape may use earlier outputs only)");
      fail(at, name + ": input " + std::to_string(index) + " out of range (the node has " +
                   plural(shapes.size(), "input") + ")");
    }
    const Shape& shape = shapes[static_cast<size_t>(index)];
    const int64_t r = static_cast<int64_t>(shape.size());
    if (rank) return make_int(r);
    const int64_t k = d < 0 ? d + r : d;
    if (k < 0 || k >= r)
      fail(dim_at, name + "[" + std::to_string(d) + "]: index " + std::to_string(d) + " out of range for rank " +
                       std::to_string(r));
    return make_int(shape[static_cast<size_t>(k)]);
  }

  ExactValue attribute(size_t at) {
    expect('.', "after 'attr'");
    skip();
    const size_t name_at = pos_;
    const std::string name = ident();
    if (name.empty()) fail(name_at, "expected an attribute name after 'attr.'");
    std::optional<ExactValue> fallback;
    if (accept('|')) {
      const bool neg = accept('-');
      skip();
      if (pos_ >= s_.size() || !(is_digit(s_[pos_]) || s_[pos_] == '.'))
        fail(pos_, "expected a number literal as the default of attr." + name);
      ExactValue v = number();
      if (neg) {
        if (v.is_float) v.f = -v.f;
        else v.i = -v.i;
      }
      fallback = v;
    }
    if (!env_) return {};
    auto it = env_->attrs.find(name);
    if (it == env_->attrs.end()) {
      if (fallback) return *fallback;
      fail(at, "attribute '" + name + "' is not set (write attr." + name + "|<default> when it may be absent)");
    }
    auto f = env_->attr_is_float.find(name);
    if (f != env_->attr_is_float.end() && f->second) return make_float(it->second);
    const double v = it->second;
    if (!(v >= -9.2233720368547758e18 && v < 9.2233720368547758e18))
      fail(at, "attribute '" + name + "' is out of the int64 range");
    return make_int(static_cast<int64_t>(std::llround(v)));
  }

  std::string_view s_;
  const ExprEnv* env_;
  const std::string& what_;
  size_t pos_ = 0;
};

}  // namespace

namespace detail {

ExactValue eval_exact(std::string_view expr, const ExprEnv& env, const std::string& what) {
  return Parser(expr, &env, what).parse();
}

void check_expr_syntax(std::string_view expr, const std::string& what) { Parser(expr, nullptr, what).parse(); }

}  // namespace detail

ExprValue eval_expr(std::string_view expr, const ExprEnv& env, const std::string& what) {
  const ExactValue v = detail::eval_exact(expr, env, what);
  return ExprValue{v.as_double(), v.is_float};
}

}  // namespace weft::custom
