// Cross-check of the operator table (op_table.cpp) against the TOSA.001000.1 SPIR-V extended
// instruction grammar in ../shared/reference/: names, opcodes and operand order (attributes in
// table order, then inputs).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "weft/ops.h"

namespace weft {
namespace {

const char* const kGrammarPath = WEFT_SOURCE_DIR "/../shared/reference/extinst.tosa.001000.1.grammar.json";

nlohmann::json load_grammar() {
  std::ifstream in(kGrammarPath);
  return nlohmann::json::parse(in);
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

TEST(OpTableGrammar, InstructionsMatchTheTable) {
  if (!std::filesystem::exists(kGrammarPath)) GTEST_SKIP() << "grammar not found at " << kGrammarPath;
  nlohmann::json grammar = load_grammar();
  ASSERT_TRUE(grammar.contains("instructions"));
  const auto& instructions = grammar["instructions"];
  ASSERT_FALSE(instructions.empty());

  std::set<std::string> seen;
  for (const auto& inst : instructions) {
    std::string name = inst.at("opname").get<std::string>();
    int opcode = inst.at("opcode").get<int>();
    SCOPED_TRACE(name);
    seen.insert(name);
    std::optional<Op> op = op_from_name(name);
    ASSERT_TRUE(op.has_value()) << "grammar instruction " << name << " is not in the operator table";
    const OpDef& d = op_def(*op);
    EXPECT_EQ(d.spirv_opcode, opcode);

    // The table's operand order: attributes, then inputs (a tensor list last).
    std::vector<std::string> table;
    for (const AttrDef& a : d.attrs) table.push_back(a.name);
    for (const ArgDef& a : d.inputs) table.push_back(a.name);
    std::vector<std::string> spirv;
    std::vector<bool> named;
    for (const auto& operand : inst.at("operands")) {
      named.push_back(operand.contains("name"));
      spirv.push_back(operand.value("name", std::string("?")));
      // A variadic operand ("*") is the table's tensor list.
      if (operand.value("quantifier", std::string()) == "*") {
        EXPECT_TRUE(d.has_list_input()) << "variadic operand " << spirv.back() << " is not a tensor list";
      }
    }
    ASSERT_EQ(spirv.size(), table.size()) << "grammar: " << join(spirv) << "\ntable:   " << join(table);
    for (size_t i = 0; i < spirv.size(); ++i) {
      if (named[i]) {
        EXPECT_EQ(spirv[i], table[i]) << "operand " << i;
      }
    }
  }

  // The other direction: every operator with an opcode is in the grammar, and opcodes are unique.
  std::map<int, std::string> by_opcode;
  for (const OpDef& d : all_op_defs()) {
    if (d.spirv_opcode < 0) continue;
    EXPECT_TRUE(seen.count(d.name)) << d.name << " has opcode " << d.spirv_opcode
                                    << " but is not in the grammar";
    auto [it, inserted] = by_opcode.emplace(d.spirv_opcode, d.name);
    EXPECT_TRUE(inserted) << d.name << " and " << it->second << " share opcode " << d.spirv_opcode;
  }
  EXPECT_EQ(by_opcode.size(), instructions.size());
}

// The table is internally consistent in the ways the verifier relies on.
TEST(OpTableGrammar, TableIsConsistentForTheVerifier) {
  for (const OpDef& d : all_op_defs()) {
    SCOPED_TRACE(d.name);
    EXPECT_LE(d.type_vars.size(), 4u);  // TypeSupport::types has four entries
    for (size_t i = 0; i < d.inputs.size(); ++i) {
      // Only the last operand may be a tensor list.
      if (d.inputs[i].kind == ArgKind::kTensorList) {
        EXPECT_EQ(i + 1, d.inputs.size());
      }
    }
    for (const AttrDef& a : d.attrs) {
      if (a.kind == AttrKind::kScalar || a.kind == AttrKind::kTensor) {
        EXPECT_GE(d.type_var_index(a.elem), 0)
            << "attribute " << a.name << " uses unknown type variable " << a.elem;
      }
    }
    // Profile gating needs at least one alternative per row.
    for (const TypeSupport& row : d.types) {
      bool any_alternative = row.any_of[0] != 0;
      EXPECT_TRUE(any_alternative) << row.mode << " is enabled by no profile";
    }
  }
}

}  // namespace
}  // namespace weft
