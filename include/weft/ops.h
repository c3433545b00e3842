// The TOSA 1.0 operator table: the one place where operators, their operands, attributes and
// allowed type combinations are declared. The IR, the text form, the verifier, the interpreter
// and (later) the SPIR-V encoder and backends all read it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "weft/dtype.h"

namespace weft {

enum class Op : uint16_t {
#define WEFT_OP(NAME, SPIRV_OPCODE, GROUP) NAME,
#include "weft/op_list.inc"
#undef WEFT_OP
};

inline constexpr int kNumOps = 0
#define WEFT_OP(NAME, SPIRV_OPCODE, GROUP) +1
#include "weft/op_list.inc"
#undef WEFT_OP
    ;

inline constexpr int kMaxRank = 6;  // TOSA level 8K

// Profiles and extensions, as bits. A TypeSupport row lists alternatives; each alternative is a
// set of bits that must all be enabled.
enum ProfileBit : uint32_t {
  kProInt = 1u << 0,
  kProFp = 1u << 1,
  kExtInt16 = 1u << 2,
  kExtInt4 = 1u << 3,
  kExtBf16 = 1u << 4,
  kExtFp8E4M3 = 1u << 5,
  kExtFp8E5M2 = 1u << 6,
  kExtFft = 1u << 7,
  kExtVariable = 1u << 8,
  kExtControlFlow = 1u << 9,
  kExtDynamic = 1u << 10,
  kExtDoubleRound = 1u << 11,
  kExtInexactRound = 1u << 12,
};
using ProfileSet = uint32_t;
inline constexpr ProfileSet kAllProfiles = (1u << 13) - 1;
std::string profile_set_str(ProfileSet s);  // "PRO-INT+EXT-INT16"
std::optional<ProfileSet> parse_profile(std::string_view name);  // "PRO-INT", "EXT-BF16", ...

enum class ArgKind : uint8_t { kTensor, kTensorList, kShape };

// Rank bounds: values >= 0 are literal; kRankMax = MAX_RANK, kRankMaxMinus1 = MAX_RANK - 1.
inline constexpr int8_t kRankMax = -1;
inline constexpr int8_t kRankMaxMinus1 = -2;
inline constexpr int8_t kRankAny = -3;  // tensor lists: no bound

struct ArgDef {
  const char* name;
  ArgKind kind;
  const char* elem;   // a type variable of the op ("in_t"), a fixed type ("bool_t", "i8_t"), or "" for shapes
  const char* shape;  // the spec's shape expression, e.g. "[N,IH,IW,C]" (documentation, error messages)
  int8_t min_rank;
  int8_t max_rank;
};

enum class AttrKind : uint8_t {
  kInt,           // i32_t scalar (axis)
  kBool,          // bool_t
  kIntList,       // i32_t list: kernel, stride, pad, dilation, perms, var_shape
  kAccType,       // acc_type_t
  kNanMode,       // nan_propagation_mode_t
  kResizeMode,    // resize_mode_t
  kRoundingMode,  // rounding_mode_t
  kVarType,       // var_t
  kScalar,        // one value of the type variable `elem` (CLAMP min_val / max_val), stored as a rank-0 Tensor
  kTensor,        // tensor values of the type variable `elem` (CONST values, VARIABLE initial_value)
  kShapeValues,   // shape_t values (CONST_SHAPE values), stored as an int list
  kString,        // String (CUSTOM names, VARIABLE name)
  kGraph,         // tosa_graph_t: the name of another graph of the module
};

struct AttrDef {
  const char* name;
  AttrKind kind;
  const char* elem;  // kScalar/kTensor: type variable
  int length;        // kIntList: fixed length, or kLenRankOfInput0 (perms) / kLenAny
};
inline constexpr int kLenRankOfInput0 = -1;
inline constexpr int kLenAny = -2;

struct TypeSupport {
  const char* mode;          // "signed 8x8 with int32 accumulate"
  ProfileSet any_of[3];      // alternatives, 0 terminates
  DType types[4];            // one per OpDef::type_vars entry
};

struct OpDef {
  Op op;
  const char* name;        // "CONV2D"
  int spirv_opcode;        // TOSA.001000.1 instruction number, -1 if not an extended instruction
  const char* group;       // spec chapter: "tensor", "activation", ...
  std::span<const ArgDef> inputs;   // in spec order; a tensor list, if any, is last
  std::span<const AttrDef> attrs;   // in spec order (the SPIR-V encoding also uses this order)
  std::span<const ArgDef> outputs;
  std::span<const char* const> type_vars;  // "in_t", "out_t", ...
  std::span<const TypeSupport> types;      // empty: any types (CUSTOM, control flow)

  bool has_list_input() const { return !inputs.empty() && inputs.back().kind == ArgKind::kTensorList; }
  bool has_list_output() const { return !outputs.empty() && outputs.back().kind == ArgKind::kTensorList; }
  int attr_index(std::string_view name) const;   // -1 if absent
  int input_index(std::string_view name) const;  // -1 if absent
  int type_var_index(std::string_view name) const;
};

const OpDef& op_def(Op op);
std::span<const OpDef> all_op_defs();
std::optional<Op> op_from_name(std::string_view name);  // "CONV2D" (also accepts "tosa.CONV2D")
inline const char* op_name(Op op) { return op_def(op).name; }

// ---- Attribute enumerations (values as in the TOSA specification) ----
enum class AccType : int64_t { kInt32 = 1, kFp16 = 2, kFp32 = 3, kInt48 = 4 };
enum class NanMode : int64_t { kPropagate = 1, kIgnore = 2 };
enum class ResizeMode : int64_t { kNearest = 1, kBilinear = 2 };
enum class RoundingMode : int64_t { kSingle = 1, kInexact = 2, kDouble = 3 };
enum class VarType : int64_t { kBool = 1, kInt8 = 2, kInt16 = 3, kInt32 = 4, kFp16 = 5, kBf16 = 6, kFp32 = 7 };

// Name of an enumerated attribute value ("FP32", "PROPAGATE"); nullptr if out of range.
const char* enum_value_name(AttrKind kind, int64_t value);
std::optional<int64_t> parse_enum_value(AttrKind kind, std::string_view name);
DType acc_type_dtype(AccType t);
std::optional<AccType> dtype_acc_type(DType t);
DType var_type_dtype(VarType t);

}  // namespace weft
