// Lookups over the operator table (op_table.cpp) and the attribute enumerations.
#include <array>
#include <string>
#include <unordered_map>

#include "weft/error.h"
#include "weft/ops.h"

namespace weft {

namespace {
constexpr std::array<const char*, 13> kProfileNames = {
    "PRO-INT", "PRO-FP", "EXT-INT16", "EXT-INT4", "EXT-BF16", "EXT-FP8E4M3", "EXT-FP8E5M2",
    "EXT-FFT", "EXT-VARIABLE", "EXT-CONTROLFLOW", "EXT-DYNAMIC", "EXT-DOUBLEROUND", "EXT-INEXACTROUND"};

struct EnumTable {
  AttrKind kind;
  std::array<const char*, 8> names;  // index = value - 1
};
constexpr EnumTable kEnums[] = {
    {AttrKind::kAccType, {"INT32", "FP16", "FP32", "INT48"}},
    {AttrKind::kNanMode, {"PROPAGATE", "IGNORE"}},
    {AttrKind::kResizeMode, {"NEAREST_NEIGHBOR", "BILINEAR"}},
    {AttrKind::kRoundingMode, {"SINGLE_ROUND", "INEXACT_ROUND", "DOUBLE_ROUND"}},
    {AttrKind::kVarType, {"BOOLEAN", "INT8", "INT16", "INT32", "FP16", "BF16", "FP32"}},
};
}  // namespace

std::string profile_set_str(ProfileSet s) {
  std::string r;
  for (size_t i = 0; i < kProfileNames.size(); ++i) {
    if (s & (1u << i)) {
      if (!r.empty()) r += "+";
      r += kProfileNames[i];
    }
  }
  return r;
}

std::optional<ProfileSet> parse_profile(std::string_view name) {
  for (size_t i = 0; i < kProfileNames.size(); ++i) {
    if (name == kProfileNames[i]) return 1u << i;
  }
  return std::nullopt;
}

int OpDef::attr_index(std::string_view n) const {
  for (size_t i = 0; i < attrs.size(); ++i) {
    if (n == attrs[i].name) return static_cast<int>(i);
  }
  return -1;
}
int OpDef::input_index(std::string_view n) const {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (n == inputs[i].name) return static_cast<int>(i);
  }
  return -1;
}
int OpDef::type_var_index(std::string_view n) const {
  for (size_t i = 0; i < type_vars.size(); ++i) {
    if (n == type_vars[i]) return static_cast<int>(i);
  }
  return -1;
}

std::optional<Op> op_from_name(std::string_view name) {
  static const std::unordered_map<std::string, Op> by_name = [] {
    std::unordered_map<std::string, Op> m;
    for (const OpDef& d : all_op_defs()) m.emplace(d.name, d.op);
    return m;
  }();
  if (name.substr(0, 5) == "tosa.") name.remove_prefix(5);
  auto it = by_name.find(std::string(name));
  if (it == by_name.end()) return std::nullopt;
  return it->second;
}

const char* enum_value_name(AttrKind kind, int64_t value) {
  for (const EnumTable& e : kEnums) {
    if (e.kind != kind) continue;
    if (value < 1 || value > static_cast<int64_t>(e.names.size())) return nullptr;
    return e.names[static_cast<size_t>(value - 1)];
  }
  return nullptr;
}

std::optional<int64_t> parse_enum_value(AttrKind kind, std::string_view name) {
  for (const EnumTable& e : kEnums) {
    if (e.kind != kind) continue;
    for (size_t i = 0; i < e.names.size(); ++i) {
      if (e.names[i] && name == e.names[i]) return static_cast<int64_t>(i + 1);
    }
  }
  return std::nullopt;
}

DType acc_type_dtype(AccType t) {
  switch (t) {
    case AccType::kInt32: return DType::kInt32;
    case AccType::kFp16: return DType::kFp16;
    case AccType::kFp32: return DType::kFp32;
    case AccType::kInt48: return DType::kInt48;
  }
  throw Error(ErrorCode::kInvalidArgument, "invalid acc_type value " + std::to_string(static_cast<int64_t>(t)));
}

std::optional<AccType> dtype_acc_type(DType t) {
  switch (t) {
    case DType::kInt32: return AccType::kInt32;
    case DType::kFp16: return AccType::kFp16;
    case DType::kFp32: return AccType::kFp32;
    case DType::kInt48: return AccType::kInt48;
    default: return std::nullopt;
  }
}

DType var_type_dtype(VarType t) {
  switch (t) {
    case VarType::kBool: return DType::kBool;
    case VarType::kInt8: return DType::kInt8;
    case VarType::kInt16: return DType::kInt16;
    case VarType::kInt32: return DType::kInt32;
    case VarType::kFp16: return DType::kFp16;
    case VarType::kBf16: return DType::kBf16;
    case VarType::kFp32: return DType::kFp32;
  }
  throw Error(ErrorCode::kInvalidArgument, "invalid var_t value " + std::to_string(static_cast<int64_t>(t)));
}

}  // namespace weft
