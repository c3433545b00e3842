// Weft's SPIR-V grammar tables: everything of the grammar files in src/spirv/grammar/ (generated
// into grammar_tables.inc at build time) and the TOSA.001000.1 instruction set, derived from the
// operator table.
#include "spirv/grammar.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace weft::spirv {
namespace {

#include "spirv/grammar_tables.inc"

static_assert(std::size(kKinds) <= 256, "OperandKind is a uint8_t");

// Name -> opcode of every core instruction and alias.
const std::unordered_map<std::string_view, uint16_t>& instruction_names() {
  static const auto names = [] {
    std::unordered_map<std::string_view, uint16_t> m;
    for (const InstDef& d : kCoreInstructions) m.emplace(d.name, d.opcode);
    for (size_t i = 0; i < kNumInstructionAliases; ++i)
      m.emplace(kInstructionAliases[i].name, static_cast<uint16_t>(kInstructionAliases[i].value));
    return m;
  }();
  return names;
}

template <class T>
const T* by_number(std::span<const T> table, uint32_t v, uint32_t (*key)(const T&)) {
  auto it = std::lower_bound(table.begin(), table.end(), v, [&](const T& d, uint32_t x) { return key(d) < x; });
  return it != table.end() && key(*it) == v ? &*it : nullptr;
}

uint32_t inst_key(const InstDef& d) { return d.opcode; }
uint32_t enum_key(const EnumDef& e) { return e.value; }

}  // namespace

std::span<const InstDef> core_instructions() { return kCoreInstructions; }

const InstDef* find_instruction(uint16_t opcode) {
  return by_number<InstDef>(kCoreInstructions, opcode, inst_key);
}

const InstDef* find_instruction(std::string_view name) {
  const auto& names = instruction_names();
  auto it = names.find(name);
  return it == names.end() ? nullptr : find_instruction(it->second);
}

size_t operand_kind_count() { return std::size(kKinds); }
const KindDef& kind_def(OperandKind kind) {
  const auto k = static_cast<size_t>(kind);
  if (k >= std::size(kKinds)) throw std::out_of_range("operand kind " + std::to_string(k) + " is not in the grammar");
  return kKinds[k];
}
KindCategory kind_category(OperandKind kind) { return kind_def(kind).category; }
std::span<const EnumDef> enumerants(OperandKind kind) { return kind_def(kind).enumerants; }

const EnumDef* find_enumerant(OperandKind kind, uint32_t value) {
  return by_number<EnumDef>(enumerants(kind), value, enum_key);
}

const EnumDef* find_enumerant(OperandKind kind, std::string_view name) {
  const KindDef& k = kind_def(kind);
  for (const EnumDef& e : k.enumerants)
    if (name == e.name) return &e;
  for (const NameAlias& a : k.aliases)
    if (name == a.name) return find_enumerant(kind, a.value);
  return nullptr;
}

const char* operand_kind_name(OperandKind kind) {
  return static_cast<size_t>(kind) < std::size(kKinds) ? kKinds[static_cast<size_t>(kind)].name : "?";
}

std::optional<OperandKind> find_operand_kind(std::string_view name) {
  for (size_t i = 0; i < std::size(kKinds); ++i)
    if (name == kKinds[i].name) return static_cast<OperandKind>(i);
  return std::nullopt;
}

std::span<const ExtInstSetDef> ext_inst_sets() { return kExtInstSets; }

const ExtInstSetDef* find_ext_inst_set(std::string_view import_name) {
  for (const ExtInstSetDef& s : kExtInstSets)
    if (import_name == s.name) return &s;
  return nullptr;
}

const InstDef* find_ext_instruction(const ExtInstSetDef& set, uint32_t number) {
  return by_number<InstDef>(set.instructions, number, inst_key);
}

const InstDef* find_ext_instruction(const ExtInstSetDef& set, std::string_view name) {
  for (const InstDef& d : set.instructions)
    if (name == d.name) return &d;
  return nullptr;
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
