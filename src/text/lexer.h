// Tokens of the .weft text form (docs/text-format.md, "Lexical rules"), and the small helpers the
// parser and the printer share: name quoting, string escapes and element formatting. Private to
// src/text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "weft/dtype.h"
#include "weft/error.h"

namespace weft::text {

enum class TokKind : uint8_t {
  kEof,
  kIdent,   // words: operator names, dtypes, enum values, true/false/inf/nan, keywords
  kValue,   // %name or %"quoted name"
  kGraph,   // @name or @"quoted name"
  kNumber,  // 12, -1.5e3, -inf, 0x7fc00001 (validated when converted to an element type)
  kString,  // "..." (text keeps the quotes and escapes; decode with decode_string)
  kLParen,
  kRParen,
  kLBracket,
  kRBracket,
  kLBrace,
  kRBrace,
  kComma,
  kColon,
  kEqual,
  kArrow,  // ->
};

struct Token {
  TokKind kind = TokKind::kEof;
  // A view into the parsed text: the whole token, sigils and quotes included.
  std::string_view text;
  int line = 0;
  int column = 0;
};

// Produces tokens on demand so that the first error in reading order is the one reported.
class Lexer {
 public:
  Lexer(std::string_view src, const std::string& file) : src_(src), file_(file) {}
  // Throws Error(kParse) on characters that start no token and on unterminated strings.
  Token next();
  const std::string& file() const { return file_; }

 private:
  void skip_space_and_comments();
  void advance(size_t n);
  [[noreturn]] void fail(const std::string& message, int line, int column) const;
  size_t lex_quoted(size_t start, int line, int column);  // returns the index after the closing quote

  std::string_view src_;
  const std::string& file_;
  size_t pos_ = 0;
  int line_ = 1;
  int column_ = 1;
};

// "'{'", "'CONV2D'", "end of input" ... for "found X" in messages (long tokens are shortened).
std::string describe(const Token& t);
const char* kind_name(TokKind k);  // "'('", "a value name" ...

// Name of a %value / @graph token without its sigil, quotes decoded. Throws on bad escapes.
std::string token_name(const Token& t, const std::string& file);
// Contents of a string token, escapes decoded.
std::string decode_string(const Token& t, const std::string& file);

// Characters allowed in unquoted names (after % or @).
bool is_name_char(char c);
// `sigil` + name, quoted with escapes when the name is empty, has other characters or ends with ':'.
std::string format_name(char sigil, std::string_view name);
// "..." with \" \\ \n \t and \xHH for other control bytes.
std::string quote_string(std::string_view s);

// Canonical text of one element of a tensor stored at `p` (ints in decimal, bools true/false,
// floats as the shortest decimal that parses back to the same bits, non-canonical NaNs as 0x bits).
void append_element(std::string& out, DType t, const uint8_t* p);
// Parses a number / word token into one element of type `t` at `p`. Throws Error(kParse) at the
// token on malformed numbers and values out of range for `t`.
void parse_element(const Token& tok, DType t, uint8_t* p, const std::string& file);
// A plain integer token (dims, int attributes) in [lo, hi].
int64_t parse_int(const Token& tok, int64_t lo, int64_t hi, const std::string& file, const char* what);

}  // namespace weft::text
