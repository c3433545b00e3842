// Weft's SPIR-V grammar tables: every instruction, operand kind and enumerant of the core grammar
// and the extended instruction sets of src/spirv/grammar/ (generated at build time by
// scripts/gen_spirv_tables.py), and the TOSA.001000.1 extended instruction set (derived from the
// operator table in src/tosa/op_table.cpp). tests/spirv checks them against ../shared/reference.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "weft/ops.h"

namespace weft::spirv {

inline constexpr uint32_t kMagic = 0x07230203;
inline constexpr uint32_t kVersion16 = 0x00010600;
inline constexpr const char* kTosaSetName = "TOSA.001000.1";
// Arm.ExperimentalMLOperations: custom operators as CALL <opcode>; decoded as CUSTOM nodes of this domain.
inline constexpr const char* kMlOpsSetName = "Arm.ExperimentalMLOperations.1";
inline constexpr const char* kMlOpsDomain = "Arm.ExperimentalMLOperations";

// Every opcode of the core grammar (kOpUndef = 1, ..., aliases included), generated from
// src/spirv/grammar/spirv.core.grammar.json.
enum Opcode : uint16_t {
#include "spirv/grammar_opcodes.inc"
};

// Enumerant values Weft emits.
enum : uint32_t {
  kCapShader = 1,
  kCapFloat16 = 9,
  kCapInt64 = 11,
  kCapInt16 = 22,
  kCapInt8 = 39,
  kCapTensorsARM = 4174,
  kCapGraphARM = 4191,
  kCapFloat8EXT = 4212,
  kCapBFloat16TypeKHR = 5116,
  kCapVulkanMemoryModel = 5345,
  kAddressingLogical = 0,
  kMemoryModelVulkan = 3,
  kStorageUniformConstant = 0,
  kDecorationBinding = 33,
  kDecorationDescriptorSet = 34,
  kFPEncodingBFloat16KHR = 0,
  kFPEncodingFloat8E4M3EXT = 4214,
  kFPEncodingFloat8E5M2EXT = 4215,
};

// Operand kinds: every "kind" of the core grammar (kIdRef, kLiteralFloat, kImageOperands, ...).
enum class OperandKind : uint8_t {
#include "spirv/grammar_kinds.inc"
};
// The grammar's categories: an Id or Literal takes one word (a LiteralString or a context-dependent
// number more); a ValueEnum one word naming one enumerant; a BitEnum one word of flags, each set
// bit an enumerant whose parameters follow in bit order; a Composite the words of its bases.
enum class KindCategory : uint8_t { kId, kLiteral, kValueEnum, kBitEnum, kComposite };
enum class Quantifier : uint8_t { kOne, kOptional, kMany };  // "", "?", "*"

struct OperandDef {
  OperandKind kind;
  Quantifier quantifier;
  const char* name;  // grammar's operand name ("" if none)
};

// An instruction of the core grammar or of an extended instruction set (opcode: the instruction
// number). `capabilities`: the grammar's "capabilities" (any one of them enables it).
struct InstDef {
  const char* name;  // "OpGraphInputARM", "DebugGraph"
  uint16_t opcode;
  std::span<const OperandDef> operands;
  std::span<const uint32_t> capabilities;
};

// An enumerant of an enum operand kind; `params` are the extra operands it introduces
// (Decoration Binding -> one LiteralInteger).
struct EnumDef {
  const char* name;
  uint32_t value;
  std::span<const OperandDef> params;
  std::span<const uint32_t> capabilities;
};

// Another name of an opcode or an enumerant (OpSDotKHR, StorageUniform16).
struct NameAlias {
  const char* name;
  uint32_t value;
};

struct KindDef {
  const char* name;
  KindCategory category;
  std::span<const EnumDef> enumerants;  // by value
  std::span<const NameAlias> aliases;
  std::span<const OperandKind> bases;  // a composite's parts, in order
};

// An extended instruction set of the grammar files (GLSL.std.450, NonSemantic.Graph.DebugInfo.1,
// Arm.ExperimentalMLOperations.1, Arm.MotionEngine.100); TOSA.001000.1 comes from the operator table.
struct ExtInstSetDef {
  const char* name;  // as OpExtInstImport names it
  std::span<const InstDef> instructions;
};

std::span<const InstDef> core_instructions();
const InstDef* find_instruction(uint16_t opcode);         // nullptr if the grammar has none
const InstDef* find_instruction(std::string_view name);   // "OpTypeInt"; aliases too
size_t operand_kind_count();  // OperandKind values are 0 .. count - 1
const KindDef& kind_def(OperandKind kind);
KindCategory kind_category(OperandKind kind);
std::span<const EnumDef> enumerants(OperandKind kind);    // empty for non-enum kinds
const EnumDef* find_enumerant(OperandKind kind, uint32_t value);
const EnumDef* find_enumerant(OperandKind kind, std::string_view name);  // aliases too
const char* operand_kind_name(OperandKind kind);          // "IdRef", "Capability", ...
std::optional<OperandKind> find_operand_kind(std::string_view name);

std::span<const ExtInstSetDef> ext_inst_sets();
const ExtInstSetDef* find_ext_inst_set(std::string_view import_name);  // nullptr: not in the grammars
const InstDef* find_ext_instruction(const ExtInstSetDef& set, uint32_t number);
const InstDef* find_ext_instruction(const ExtInstSetDef& set, std::string_view name);

// ---- TOSA.001000.1 ----
// Operand order of an extended instruction: the operator's attributes (OpDef::attrs order), then
// its inputs (OpDef::inputs order; a tensor list last, variadic), as the instruction set defines.
// The operator for an instruction number; nullopt if out of range.
std::optional<Op> tosa_op_from_opcode(uint32_t instruction);
// Name of each operand in order (attributes then inputs), as in the extinst grammar.
struct TosaOperand {
  const char* name;
  bool is_attribute;
  int index;  // into OpDef::attrs or OpDef::inputs
  bool variadic;
};
std::span<const TosaOperand> tosa_operands(Op op);  // empty span for ops with no instruction

}  // namespace weft::spirv
