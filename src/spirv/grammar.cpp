// Weft's SPIR-V grammar tables: the core instructions and enumerants (core_tables.inc, generated
// from the Khronos grammar) and the TOSA.001000.1 instruction set, derived from the operator table.
#include "spirv/grammar.h"

#include <algorithm>
#include <array>
#include <vector>

namespace weft::spirv {
namespace {

#include "spirv/core_tables.inc"

template <class T, size_t N>
std::span<const T> span_of(const T (&a)[N]) {
  return std::span<const T>(a, N);
}

}  // namespace

std::span<const InstDef> core_instructions() { return span_of(kCoreInstructions); }

const InstDef* find_instruction(uint16_t opcode) {
  for (const InstDef& d : kCoreInstructions)
    if (d.opcode == opcode) return &d;
  return nullptr;
}

const InstDef* find_instruction(std::string_view name) {
  for (const InstDef& d : kCoreInstructions)
    if (name == d.name) return &d;
  return nullptr;
}

std::span<const EnumDef> enumerants(OperandKind kind) {
  switch (kind) {
    case OperandKind::kCapability: return span_of(kCapability_Enumerants);
    case OperandKind::kAddressingModel: return span_of(kAddressingModel_Enumerants);
    case OperandKind::kMemoryModel: return span_of(kMemoryModel_Enumerants);
    case OperandKind::kExecutionModel: return span_of(kExecutionModel_Enumerants);
    case OperandKind::kExecutionMode: return span_of(kExecutionMode_Enumerants);
    case OperandKind::kStorageClass: return span_of(kStorageClass_Enumerants);
    case OperandKind::kDecoration: return span_of(kDecoration_Enumerants);
    case OperandKind::kSourceLanguage: return span_of(kSourceLanguage_Enumerants);
    case OperandKind::kFPEncoding: return span_of(kFPEncoding_Enumerants);
    default: return {};
  }
}

const EnumDef* find_enumerant(OperandKind kind, uint32_t value) {
  for (const EnumDef& e : enumerants(kind))
    if (e.value == value) return &e;
  return nullptr;
}

const EnumDef* find_enumerant(OperandKind kind, std::string_view name) {
  for (const EnumDef& e : enumerants(kind))
    if (name == e.name) return &e;
  return nullptr;
}

const char* operand_kind_name(OperandKind kind) {
  switch (kind) {
    case OperandKind::kIdResultType: return "IdResultType";
    case OperandKind::kIdResult: return "IdResult";
    case OperandKind::kIdRef: return "IdRef";
    case OperandKind::kLiteralInteger: return "LiteralInteger";
    case OperandKind::kLiteralString: return "LiteralString";
    case OperandKind::kLiteralContextDependentNumber: return "LiteralContextDependentNumber";
    case OperandKind::kLiteralExtInstInteger: return "LiteralExtInstInteger";
    case OperandKind::kCapability: return "Capability";
    case OperandKind::kAddressingModel: return "AddressingModel";
    case OperandKind::kMemoryModel: return "MemoryModel";
    case OperandKind::kExecutionModel: return "ExecutionModel";
    case OperandKind::kExecutionMode: return "ExecutionMode";
    case OperandKind::kStorageClass: return "StorageClass";
    case OperandKind::kDecoration: return "Decoration";
    case OperandKind::kSourceLanguage: return "SourceLanguage";
    case OperandKind::kFPEncoding: return "FPEncoding";
  }
  return "?";
}

// ---- TOSA.001000.1: read off the operator table once ----
namespace {

struct TosaTables {
  std::vector<std::optional<Op>> by_instruction;            // instruction number -> operator
  std::array<std::vector<TosaOperand>, kNumOps> operands;  // per operator: attributes, then inputs
};

const TosaTables& tosa_tables() {
  static const TosaTables tables = [] {
    TosaTables t;
    for (const OpDef& d : all_op_defs()) {
      if (d.spirv_opcode < 0) continue;
      size_t n = static_cast<size_t>(d.spirv_opcode);
      if (t.by_instruction.size() <= n) t.by_instruction.resize(n + 1);
      t.by_instruction[n] = d.op;
      std::vector<TosaOperand>& ops = t.operands[static_cast<size_t>(d.op)];
      for (size_t i = 0; i < d.attrs.size(); ++i) ops.push_back({d.attrs[i].name, true, static_cast<int>(i), false});
      for (size_t i = 0; i < d.inputs.size(); ++i)
        ops.push_back({d.inputs[i].name, false, static_cast<int>(i), d.inputs[i].kind == ArgKind::kTensorList});
    }
    return t;
  }();
  return tables;
}

}  // namespace

std::optional<Op> tosa_op_from_opcode(uint32_t instruction) {
  const TosaTables& t = tosa_tables();
  if (instruction >= t.by_instruction.size()) return std::nullopt;
  return t.by_instruction[instruction];
}

std::span<const TosaOperand> tosa_operands(Op op) {
  return tosa_tables().operands[static_cast<size_t>(op)];
}

}  // namespace weft::spirv
