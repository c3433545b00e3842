// Internals shared by the registration code (registry.cpp), the expression evaluator (expr.cpp) and
// lower() (lower.cpp). Not part of the public API.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weft/custom.h"

namespace weft::custom::detail {

// An expression's value with integers kept exact (ExprValue holds a double).
struct ExactValue {
  bool is_float = false;
  int64_t i = 0;  // when !is_float
  double f = 0;   // when is_float
  double as_double() const { return is_float ? f : static_cast<double>(i); }
};
ExactValue eval_exact(std::string_view expr, const ExprEnv& env, const std::string& what);
// Checks the syntax of an expression (names, functions, literals, parentheses) without evaluating
// it; errors as eval_expr's.
void check_expr_syntax(std::string_view expr, const std::string& what);

// "custom operator <domain_name>::<operator_name>", as messages name an operator.
std::string op_label(const OpSpec& spec);

// How validation errors name fields: the prefix ("custom_ops[2]" for an ops file entry, the
// operator's label for the C++ API) and whether fields are named as the ops file spells them.
struct FieldNames {
  std::string prefix;
  bool file = false;
  std::string field(const std::string& api_name, const std::string& file_name) const;
};

// Validates everything that needs no file and no compiler (names, resources, expressions' syntax,
// push constants, attribute lists). Throws Error(kInvalidArgument) with location.file = origin.
void validate_spec(const OpSpec& spec, const std::string& origin, const FieldNames& names);
// True when the spec carries SPIR-V words already (language "SPIR-V", `spirv` non-empty).
bool is_compiled(const OpSpec& spec);
// Reads source_file (relative to base_dir) and compiles/validates the shader with compile_shader;
// on success spec.language = "SPIR-V" and spec.spirv holds the words (source and source_file are
// kept, for messages). The workgroup size must match the shader's LocalSize when it has one.
void compile_spec(OpSpec& spec, const std::string& origin, const std::string& base_dir, const FieldNames& names);

std::optional<ShaderLanguage> parse_language(std::string_view name);
// An element type name of the ops file: dtype.h's names ("f32", "fp32_t") and "fp32", "fp16", ...
std::optional<DType> parse_dtype_name(std::string_view name);

}  // namespace weft::custom::detail
