// Cross-check of Weft's SPIR-V tables (src/spirv/grammar.h, generated from src/spirv/grammar/) against the Khronos
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

// Every operand kind of the tables, in declaration order.
std::vector<OperandKind> all_kinds() {
  std::vector<OperandKind> kinds;
  for (size_t k = 0; k < operand_kind_count(); ++k) {
    kinds.push_back(static_cast<OperandKind>(k));
    EXPECT_EQ(find_operand_kind(operand_kind_name(kinds.back())), kinds.back());
  }
  return kinds;
}

const char* category_text(KindCategory c) {
  switch (c) {
    case KindCategory::kId: return "Id";
    case KindCategory::kLiteral: return "Literal";
    case KindCategory::kValueEnum: return "ValueEnum";
    case KindCategory::kBitEnum: return "BitEnum";
    case KindCategory::kComposite: return "Composite";
  }
  return "?";
}

TEST(SpirvGrammar, CoreInstructionsMatchTheGrammar) {
  LOAD_OR_SKIP(grammar, kCoreGrammar);
  std::map<std::string, const nlohmann::json*> by_name;
  for (const nlohmann::json& inst : grammar.at("instructions")) by_name[inst.at("opname")] = &inst;
  EXPECT_EQ(core_instructions().size(), grammar.at("instructions").size());
  std::set<uint16_t> opcodes;
  for (const InstDef& d : core_instructions()) {
    SCOPED_TRACE(d.name);
    auto it = by_name.find(d.name);
    ASSERT_NE(it, by_name.end()) << d.name << " is not in the grammar";
    const nlohmann::json& g = *it->second;
    EXPECT_EQ(d.opcode, g.at("opcode").get<int>());
    expect_same_operands(d.operands, g.value("operands", nlohmann::json::array()), d.name);
    for (const nlohmann::json& alias : g.value("aliases", nlohmann::json::array()))
      EXPECT_EQ(find_instruction(std::string_view(alias.get<std::string>())), &d) << alias;
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

TEST(SpirvGrammar, EveryOperandKindAndEnumerantMatchesTheGrammar) {
  LOAD_OR_SKIP(grammar, kCoreGrammar);
  const nlohmann::json& kinds = grammar.at("operand_kinds");
  std::vector<OperandKind> table = all_kinds();
  ASSERT_EQ(table.size(), kinds.size());
  for (size_t i = 0; i < table.size(); ++i) {
    const nlohmann::json& g = kinds[i];
    OperandKind kind = table[i];
    std::string kind_name = operand_kind_name(kind);
    SCOPED_TRACE(kind_name);
    EXPECT_EQ(kind_name, g.at("kind").get<std::string>());
    EXPECT_EQ(category_text(kind_category(kind)), g.at("category").get<std::string>());
    if (g.contains("bases")) {
      const KindDef& k = kind_def(kind);
      ASSERT_EQ(k.bases.size(), g.at("bases").size());
      for (size_t b = 0; b < k.bases.size(); ++b) EXPECT_EQ(operand_kind_name(k.bases[b]), g.at("bases")[b]);
    }
    if (!g.contains("enumerants")) {
      EXPECT_TRUE(enumerants(kind).empty());
      continue;
    }
    // Every grammar enumerant is in the table, by value (the canonical name) and by every name.
    std::set<uint32_t> values;
    for (const nlohmann::json& ge : g.at("enumerants")) {
      uint32_t v = enumerant_value(ge);
      std::string name = ge.at("enumerant");
      const EnumDef* by_value = find_enumerant(kind, v);
      ASSERT_NE(by_value, nullptr) << name;
      EXPECT_EQ(by_value->value, v);
      const EnumDef* by_name = find_enumerant(kind, std::string_view(name));
      EXPECT_EQ(by_name, by_value) << name;
      for (const nlohmann::json& alias : ge.value("aliases", nlohmann::json::array()))
        EXPECT_EQ(find_enumerant(kind, std::string_view(alias.get<std::string>())), by_value) << alias;
      if (values.insert(v).second) {
        EXPECT_EQ(by_value->name, name);
        expect_same_operands(by_value->params, ge.value("parameters", nlohmann::json::array()),
                             kind_name + " " + name);
      }
    }
    EXPECT_EQ(enumerants(kind).size(), values.size());
  }
  EXPECT_TRUE(enumerants(OperandKind::kIdRef).empty());
  EXPECT_EQ(find_enumerant(OperandKind::kCapability, uint32_t{0xfffffff0}), nullptr);
  EXPECT_EQ(find_enumerant(OperandKind::kCapability, std::string_view("NoSuchCapability")), nullptr);
}

TEST(SpirvGrammar, ExtendedInstructionSetsMatchTheirGrammars) {
  const std::pair<const char*, const char*> sets[] = {
      {"NonSemantic.Graph.DebugInfo.1", "extinst.nonsemantic.graph.debuginfo.grammar.json"},
      {"Arm.ExperimentalMLOperations.1", "extinst.arm.experimental-ml-operations.grammar.json"},
      {"Arm.MotionEngine.100", "extinst.arm.motion-engine.100.grammar.json"}};
  for (auto [name, file] : sets) {
    SCOPED_TRACE(name);
    std::string path = WEFT_SOURCE_DIR "/../shared/reference/" + std::string(file);
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "grammar not found: " << path;
    const nlohmann::json g = load(path.c_str());
    const ExtInstSetDef* set = find_ext_inst_set(name);
    ASSERT_NE(set, nullptr);
    ASSERT_EQ(set->instructions.size(), g.at("instructions").size());
    for (const nlohmann::json& inst : g.at("instructions")) {
      const InstDef* d = find_ext_instruction(*set, inst.at("opcode").get<uint32_t>());
      ASSERT_NE(d, nullptr) << inst.at("opname");
      EXPECT_EQ(d->name, inst.at("opname").get<std::string>());
      EXPECT_EQ(find_ext_instruction(*set, std::string_view(d->name)), d);
      expect_same_operands(d->operands, inst.value("operands", nlohmann::json::array()), d->name);
    }
  }
  EXPECT_NE(find_ext_inst_set("GLSL.std.450"), nullptr);
  EXPECT_EQ(find_ext_inst_set(kTosaSetName), nullptr);  // from the operator table instead
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
