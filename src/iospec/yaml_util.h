// Strict reading of YAML documents for the IOSpec and target files: every mapping read through
// MapReader (unknown and duplicate keys rejected), scalars typed by the YAML 1.2 core schema with
// yaml-cpp's marks turned into Location lines. Internal to src/iospec.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weft/error.h"

namespace weft::iospec::detail {

// Where a document came from and which code its rule violations carry (syntax errors are kParse).
struct YamlContext {
  std::string source;
  ErrorCode code = ErrorCode::kVerify;
};

// 1-based line of `n`, or `fallback` when the node has no mark or is null (an empty value).
int line_of(const YAML::Node& n, int fallback = 0);

[[noreturn]] void fail_at(const YamlContext& ctx, int line, const std::string& operand, const std::string& message);
[[noreturn]] void fail_at(const YamlContext& ctx, const YAML::Node& n, int fallback_line, const std::string& operand,
                          const std::string& message);

// "a.b" (or "b" when a is empty).
std::string join_path(const std::string& a, const std::string& b);

// How a node reads in a message: a scalar as written ('abc', or "abc" if it was quoted), "a list",
// "a mapping", "nothing".
std::string show(const YAML::Node& n);

// The single document of `text`; a null node for an empty one. Syntax errors and several documents
// are Error(kParse) at their line.
YAML::Node load_document(std::string_view text, const YamlContext& ctx);

// Typed scalars (plain ones for numbers and booleans; a quoted "16" is a string, not a number).
int64_t as_int(const YamlContext& ctx, const YAML::Node& n, int fallback_line, const std::string& path);
double as_float(const YamlContext& ctx, const YAML::Node& n, int fallback_line, const std::string& path);
bool as_bool(const YamlContext& ctx, const YAML::Node& n, int fallback_line, const std::string& path);
// A name: a non-empty string; a plain scalar that YAML reads as null, a boolean or a number is
// rejected with a hint to quote it.
std::string as_name(const YamlContext& ctx, const YAML::Node& n, int fallback_line, const std::string& path,
                    const char* what);

struct MapEntry {
  std::string key;
  YAML::Node key_node;
  YAML::Node value;
  int line = 0;  // the key's line
};

// The entries of a mapping, in document order, with string keys and no duplicates. When `allowed`
// is given, other keys are rejected. A null node reads as an empty mapping only if `null_ok`.
// `fallback_line` (the line of the mapping's key, if any) is the line of errors about the whole
// mapping ("missing key"); 0 = the mapping's own.
class MapReader {
 public:
  MapReader(const YamlContext& ctx, const YAML::Node& map, int fallback_line, std::string path,
            const char* what, std::optional<std::vector<std::string>> allowed = std::nullopt,
            bool null_ok = false);

  const std::vector<MapEntry>& entries() const { return entries_; }
  const MapEntry* find(std::string_view key) const;
  // The entry, or Error "missing key" at the mapping's line.
  const MapEntry& require(std::string_view key) const;
  int line() const { return line_; }
  const std::string& path() const { return path_; }
  const YamlContext& context() const { return ctx_; }

 private:
  const YamlContext& ctx_;
  std::string path_;
  int line_ = 0;
  std::vector<MapEntry> entries_;
};

}  // namespace weft::iospec::detail
