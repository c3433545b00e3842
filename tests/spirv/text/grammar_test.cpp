// Cross-check of Weft's SPIR-V tables (src/spirv/grammar.h, core_tables.inc) against the Khronos
// grammars in ../shared/reference/: instructions (opcode, operand kinds, quantifiers, names),
// enumerants (values, parameters), the named constants the encoder uses, and the TOSA.001000.1
// instruction set (names, numbers, operand order).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "spirv/grammar.h"
#include "weft/ops.h"

namespace weft::spirv {
namespace {

const char* const kCoreGrammar = WEFT_SOURCE_DIR "/../shared/reference/spirv.core.grammar.json";
const char* const kTosaGrammar = WEFT_SOURCE_DIR "/../shared/reference/extinst.tosa.001000.1.grammar.json";

nlohmann::json load(const char* path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

#define LOAD_OR_SKIP(var, path)                                                   \
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "grammar not found: " << path; \
  const nlohmann::json var = load(path)

const char* quantifier_text(Quantifier q) {
  switch (q) {
    case Quantifier::kOne: return "";
    case Quantifier::kOptional: return "?";
    case Quantifier::kMany: return "*";
  }
  return "!";
}

// Operand names as the table generator stores them (one line, no quotes).
std::string table_name(std::string s) {
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  std::erase(s, '\'');
  std::erase(s, '"');
  return s;
}

uint32_t enumerant_value(const nlohmann::json& e) {
  const nlohmann::json& v = e.at("value");
  return v.is_string() ? static_cast<uint32_t>(std::stoul(v.get<std::string>(), nullptr, 0)) : v.get<uint32_t>();
}

// Compares a table operand list with a grammar one; `what` names it in failures.
void expect_same_operands(std::span<const OperandDef> table, const nlohmann::json& grammar, const std::string& what) {
  ASSERT_EQ(table.size(), grammar.size()) << what << ": operand count";
  for (size_t i = 0; i < table.size(); ++i) {
    const nlohmann::json& g = grammar[i];
    EXPECT_EQ(operand_kind_name(table[i].kind), g.at("kind").get<std::string>()) << what << " operand " << i;
    EXPECT_EQ(quantifier_text(table[i].quantifier), g.value("quantifier", std::string())) << what << " operand " << i;
    EXPECT_EQ(table[i].name, table_name(g.value("name", std::string()))) << what << " operand " << i;
  }
}

// The enum operand kinds Weft models.
std::vector<OperandKind> enum_kinds() {
  std::vector<OperandKind> kinds;
  for (int k = 0; k <= static_cast<int>(OperandKind::kFPEncoding); ++k) {
    if (!enumerants(static_cast<OperandKind>(k)).empty()) kinds.push_back(static_cast<OperandKind>(k));
  }
  return kinds;
}

TEST(SpirvGrammar, CoreInstructionsMatchTheGrammar) {
  LOAD_OR_SKIP(grammar, kCoreGrammar);
  std::map<std::string, const nlohmann::json*> by_name;
  for (const nlohmann::json& inst : grammar.at("instructions")) by_name[inst.at("opname")] = &inst;
  ASSERT_FALSE(core_instructions().empty());
  std::set<uint16_t> opcodes;
  for (const InstDef& d : core_instructions()) {
    SCOPED_TRACE(d.name);
    auto it = by_name.find(d.name);
    ASSERT_NE(it, by_name.end()) << d.name << " is not in the grammar";
    const nlohmann::json& g = *it->second;
    EXPECT_EQ(d.opcode, g.at("opcode").get<int>());
    expect_same_operands(d.operands, g.value("operands", nlohmann::json::array()), d.name);
    EXPECT_TRUE(opcodes.insert(d.opcode).second) << "opcode " << d.opcode << " twice";
    EXPECT_EQ(find_instruction(d.opcode), &d);
    EXPECT_EQ(find_instruction(std::string_view(d.name)), &d);
  }
  EXPECT_EQ(find_instruction(uint16_t{9999}), nullptr);
  EXPECT_EQ(find_instruction(std::string_view("OpFoo")), nullptr);
}

TEST(SpirvGrammar, NamedOpcodesAndEnumerantsMatchTheGrammar) {
  LOAD_OR_SKIP(grammar, kCoreGrammar);
  std::map<std::string, int> opcode;
  for (const nlohmann::json& inst : grammar.at("instructions")) opcode[inst.at("opname")] = inst.at("opcode");
  const std::pair<uint16_t, const char*> opcodes[] = {
      {kOpNop, "OpNop"}, {kOpSource, "OpSource"}, {kOpSourceExtension, "OpSourceExtension"}, {kOpName, "OpName"},
      {kOpMemberName, "OpMemberName"}, {kOpString, "OpString"}, {kOpLine, "OpLine"}, {kOpExtension, "OpExtension"},
      {kOpExtInstImport, "OpExtInstImport"}, {kOpExtInst, "OpExtInst"}, {kOpMemoryModel, "OpMemoryModel"},
      {kOpEntryPoint, "OpEntryPoint"}, {kOpExecutionMode, "OpExecutionMode"}, {kOpCapability, "OpCapability"},
      {kOpTypeVoid, "OpTypeVoid"}, {kOpTypeBool, "OpTypeBool"}, {kOpTypeInt, "OpTypeInt"},
      {kOpTypeFloat, "OpTypeFloat"}, {kOpTypeArray, "OpTypeArray"}, {kOpTypeRuntimeArray, "OpTypeRuntimeArray"},
      {kOpTypeStruct, "OpTypeStruct"}, {kOpTypePointer, "OpTypePointer"}, {kOpConstantTrue, "OpConstantTrue"},
      {kOpConstantFalse, "OpConstantFalse"}, {kOpConstant, "OpConstant"},
      {kOpConstantComposite, "OpConstantComposite"}, {kOpConstantNull, "OpConstantNull"},
      {kOpVariable, "OpVariable"}, {kOpDecorate, "OpDecorate"}, {kOpMemberDecorate, "OpMemberDecorate"},
      {kOpCompositeExtract, "OpCompositeExtract"}, {kOpNoLine, "OpNoLine"},
      {kOpModuleProcessed, "OpModuleProcessed"}, {kOpTypeTensorARM, "OpTypeTensorARM"},
      {kOpGraphConstantARM, "OpGraphConstantARM"}, {kOpGraphEntryPointARM, "OpGraphEntryPointARM"},
      {kOpGraphARM, "OpGraphARM"}, {kOpGraphInputARM, "OpGraphInputARM"},
      {kOpGraphSetOutputARM, "OpGraphSetOutputARM"}, {kOpGraphEndARM, "OpGraphEndARM"},
      {kOpTypeGraphARM, "OpTypeGraphARM"}};
  for (auto [value, name] : opcodes) {
    EXPECT_EQ(opcode.at(name), value) << name;
    ASSERT_NE(find_instruction(value), nullptr) << name;
    EXPECT_STREQ(find_instruction(value)->name, name);
  }
  // The encoder's enumerant constants, by kind and grammar name.
  std::map<std::pair<std::string, std::string>, uint32_t> values;
  for (const nlohmann::json& k : grammar.at("operand_kinds")) {
    if (!k.contains("enumerants")) continue;
    for (const nlohmann::json& e : k.at("enumerants")) values[{k.at("kind"), e.at("enumerant")}] = enumerant_value(e);
  }
  const std::tuple<uint32_t, const char*, const char*> constants[] = {
      {kCapShader, "Capability", "Shader"}, {kCapFloat16, "Capability", "Float16"},
      {kCapInt64, "Capability", "Int64"}, {kCapInt16, "Capability", "Int16"}, {kCapInt8, "Capability", "Int8"},
      {kCapTensorsARM, "Capability", "TensorsARM"}, {kCapGraphARM, "Capability", "GraphARM"},
      {kCapFloat8EXT, "Capability", "Float8EXT"}, {kCapBFloat16TypeKHR, "Capability", "BFloat16TypeKHR"},
      {kCapVulkanMemoryModel, "Capability", "VulkanMemoryModel"},
      {kAddressingLogical, "AddressingModel", "Logical"}, {kMemoryModelVulkan, "MemoryModel", "Vulkan"},
      {kStorageUniformConstant, "StorageClass", "UniformConstant"}, {kDecorationBinding, "Decoration", "Binding"},
      {kDecorationDescriptorSet, "Decoration", "DescriptorSet"},
      {kFPEncodingBFloat16KHR, "FPEncoding", "BFloat16KHR"},
      {kFPEncodingFloat8E4M3EXT, "FPEncoding", "Float8E4M3EXT"},
      {kFPEncodingFloat8E5M2EXT, "FPEncoding", "Float8E5M2EXT"}};
  for (auto [value, kind, name] : constants) EXPECT_EQ(values.at({kind, name}), value) << kind << " " << name;
  EXPECT_EQ(grammar.at("magic_number").get<std::string>(), "0x07230203");
  EXPECT_EQ(kMagic, 0x07230203u);
}

TEST(SpirvGrammar, EnumerantsMatchTheGrammar) {
  LOAD_OR_SKIP(grammar, kCoreGrammar);
  std::map<std::string, const nlohmann::json*> kinds;
  for (const nlohmann::json& k : grammar.at("operand_kinds")) kinds[k.at("kind")] = &k;
  std::set<std::string> modelled;  // operand kinds Weft can parse, so enumerant parameters of these kinds
  for (int k = 0; k <= static_cast<int>(OperandKind::kFPEncoding); ++k)
    modelled.insert(operand_kind_name(static_cast<OperandKind>(k)));
  std::vector<OperandKind> enums = enum_kinds();
  EXPECT_EQ(enums.size(), 9u);
  for (OperandKind kind : enums) {
    std::string kind_name = operand_kind_name(kind);
    SCOPED_TRACE(kind_name);
    ASSERT_TRUE(kinds.count(kind_name));
    const nlohmann::json& g = *kinds[kind_name];
    EXPECT_EQ(g.at("category").get<std::string>(), "ValueEnum");
    std::map<std::string, const nlohmann::json*> by_name;
    for (const nlohmann::json& e : g.at("enumerants")) by_name.emplace(e.at("enumerant"), &e);
    std::set<std::string> table_names;
    for (const EnumDef& e : enumerants(kind)) {
      ASSERT_TRUE(by_name.count(e.name)) << e.name << " is not in the grammar";
      const nlohmann::json& ge = *by_name[e.name];
      EXPECT_EQ(e.value, enumerant_value(ge)) << e.name;
      expect_same_operands(e.params, ge.value("parameters", nlohmann::json::array()), kind_name + " " + e.name);
      EXPECT_TRUE(table_names.insert(e.name).second) << e.name << " twice";
      EXPECT_EQ(find_enumerant(kind, std::string_view(e.name)), &e);
      const EnumDef* by_value = find_enumerant(kind, e.value);
      ASSERT_NE(by_value, nullptr);
      EXPECT_EQ(by_value->value, e.value);
    }
    // Every grammar enumerant whose parameters Weft can parse is in the table.
    for (const auto& [name, ge] : by_name) {
      bool parseable = true;
      for (const nlohmann::json& p : ge->value("parameters", nlohmann::json::array()))
        parseable = parseable && modelled.count(p.at("kind").get<std::string>());
      if (parseable) {
        EXPECT_TRUE(table_names.count(name)) << name << " is missing from the table";
      }
    }
  }
  EXPECT_TRUE(enumerants(OperandKind::kIdRef).empty());
  EXPECT_EQ(find_enumerant(OperandKind::kCapability, uint32_t{0xfffffff0}), nullptr);
}

TEST(SpirvGrammar, TosaInstructionSetMatchesTheGrammar) {
  LOAD_OR_SKIP(grammar, kTosaGrammar);
  std::set<Op> seen;
  uint32_t max_opcode = 0;
  for (const nlohmann::json& inst : grammar.at("instructions")) {
    std::string name = inst.at("opname");
    uint32_t opcode = inst.at("opcode");
    SCOPED_TRACE(name);
    max_opcode = std::max(max_opcode, opcode);
    std::optional<Op> op = tosa_op_from_opcode(opcode);
    ASSERT_TRUE(op.has_value()) << "no operator for instruction " << opcode;
    EXPECT_EQ(op_name(*op), name);
    EXPECT_EQ(op_def(*op).spirv_opcode, static_cast<int>(opcode));
    seen.insert(*op);
    std::span<const TosaOperand> operands = tosa_operands(*op);
    const nlohmann::json& g = inst.at("operands");
    ASSERT_EQ(operands.size(), g.size());
    const OpDef& d = op_def(*op);
    for (size_t i = 0; i < operands.size(); ++i) {
      const TosaOperand& t = operands[i];
      EXPECT_EQ(g[i].at("kind").get<std::string>(), "IdRef");
      EXPECT_EQ(t.name, g[i].at("name").get<std::string>()) << "operand " << i;
      EXPECT_EQ(t.variadic, g[i].value("quantifier", std::string()) == "*") << "operand " << i;
      // The operand points at the table entry of the same name: attributes first, then inputs.
      EXPECT_EQ(t.is_attribute, i < d.attrs.size());
      ASSERT_GE(t.index, 0);
      EXPECT_STREQ(t.is_attribute ? d.attrs[static_cast<size_t>(t.index)].name : d.inputs[static_cast<size_t>(t.index)].name,
                   t.name);
    }
  }
  EXPECT_FALSE(tosa_op_from_opcode(max_opcode + 1).has_value());
  EXPECT_FALSE(tosa_op_from_opcode(0xffffffffu).has_value());
  // Operators without an instruction (CUSTOM, control flow, variables, IDENTITY) have no operands.
  for (const OpDef& d : all_op_defs()) {
    if (seen.count(d.op)) continue;
    EXPECT_LT(d.spirv_opcode, 0) << d.name;
    EXPECT_TRUE(tosa_operands(d.op).empty()) << d.name;
  }
}

}  // namespace
}  // namespace weft::spirv
