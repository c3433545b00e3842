// Weft's SPIR-V grammar tables: the core instructions and enumerants a graph module uses, and the
// TOSA.001000.1 extended instruction set (derived from the operator table in src/tosa/op_table.cpp).
// The core tables live in core_tables.inc, generated from the Khronos grammar by
// scripts/gen_spirv_tables.py and checked against ../shared/reference by tests/spirv.
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

// Opcodes Weft emits or reads (numbers from the SPIR-V core grammar).
enum Opcode : uint16_t {
  kOpNop = 0,
  kOpSource = 3,
  kOpSourceExtension = 4,
  kOpName = 5,
  kOpMemberName = 6,
  kOpString = 7,
  kOpLine = 8,
  kOpExtension = 10,
  kOpExtInstImport = 11,
  kOpExtInst = 12,
  kOpMemoryModel = 14,
  kOpEntryPoint = 15,
  kOpExecutionMode = 16,
  kOpCapability = 17,
  kOpTypeVoid = 19,
  kOpTypeBool = 20,
  kOpTypeInt = 21,
  kOpTypeFloat = 22,
  kOpTypeArray = 28,
  kOpTypeRuntimeArray = 29,
  kOpTypeStruct = 30,
  kOpTypePointer = 32,
  kOpConstantTrue = 41,
  kOpConstantFalse = 42,
  kOpConstant = 43,
  kOpConstantComposite = 44,
  kOpConstantNull = 46,
  kOpVariable = 59,
  kOpDecorate = 71,
  kOpMemberDecorate = 72,
  kOpCompositeExtract = 81,
  kOpNoLine = 317,
  kOpModuleProcessed = 330,
  kOpTypeTensorARM = 4163,
  kOpGraphConstantARM = 4181,
  kOpGraphEntryPointARM = 4182,
  kOpGraphARM = 4183,
  kOpGraphInputARM = 4184,
  kOpGraphSetOutputARM = 4185,
  kOpGraphEndARM = 4186,
  kOpTypeGraphARM = 4190,
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

// Operand kinds (the grammar's "kind" strings).
enum class OperandKind : uint8_t {
  kIdResultType,
  kIdResult,
  kIdRef,
  kLiteralInteger,
  kLiteralString,
  kLiteralContextDependentNumber,  // OpConstant value: width from the result type (1 or 2 words)
  kLiteralExtInstInteger,          // OpExtInst instruction number
  kCapability,
  kAddressingModel,
  kMemoryModel,
  kExecutionModel,
  kExecutionMode,
  kStorageClass,
  kDecoration,
  kSourceLanguage,
  kFPEncoding,
};
enum class Quantifier : uint8_t { kOne, kOptional, kMany };  // "", "?", "*"

struct OperandDef {
  OperandKind kind;
  Quantifier quantifier;
  const char* name;  // grammar's operand name ("" if none)
};

struct InstDef {
  const char* name;  // "OpGraphInputARM"
  uint16_t opcode;
  std::span<const OperandDef> operands;
};

// An enumerant of a value-enum operand kind; `params` are the extra operands it introduces
// (Decoration Binding -> one LiteralInteger).
struct EnumDef {
  const char* name;
  uint32_t value;
  std::span<const OperandDef> params;
};

std::span<const InstDef> core_instructions();
const InstDef* find_instruction(uint16_t opcode);         // nullptr if Weft does not know it
const InstDef* find_instruction(std::string_view name);   // "OpTypeInt"
std::span<const EnumDef> enumerants(OperandKind kind);    // empty for non-enum kinds
const EnumDef* find_enumerant(OperandKind kind, uint32_t value);
const EnumDef* find_enumerant(OperandKind kind, std::string_view name);
const char* operand_kind_name(OperandKind kind);          // "IdRef", "Capability", ...

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
