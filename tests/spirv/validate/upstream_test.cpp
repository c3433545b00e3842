// Agreement with upstream spirv-val (SPIRV-Tools) on tests/spirv/upstream/: modules equivalent to
// SPIRV-Tools' own SPV_ARM_graph, SPV_ARM_tensors, NonSemantic.Graph.DebugInfo and
// Arm.ExperimentalMLOperations validation tests, each labelled with upstream's verdict.
//   ; target-env: <env>      the environment the upstream test validates for
//   ; verdict: valid|invalid  upstream spirv-val's verdict
//   ; weft-rule: <rule>       (invalid cases) the Weft rule that flags the same defect
// Weft must give the same verdict and, for invalid modules, report the defect under that rule.
// Where ../shared/tools/bin holds the upstream tools, the recorded verdicts are checked against
// them too (so that the corpus cannot drift from what upstream says).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/temp_dir.h"
#include "weft/spirv.h"

namespace weft::spirv {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(WEFT_SOURCE_DIR) / "tests/spirv/upstream";
const fs::path kTools = fs::path(WEFT_SOURCE_DIR) / "../shared/tools/bin";

struct Case {
  fs::path path;
  std::string group, env, verdict, rule;
  std::string text;
};

std::string header_field(const std::string& text, const std::string& key) {
  std::istringstream lines(text);
  std::string prefix = "; " + key + ": ";
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix, 0) == 0) return line.substr(prefix.size());
  }
  return {};
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const auto& group : fs::directory_iterator(kCorpus)) {
    if (!group.is_directory()) continue;
    for (const auto& e : fs::directory_iterator(group.path())) {
      if (e.path().extension() != ".spvasm") continue;
      std::ifstream f(e.path());
      std::stringstream ss;
      ss << f.rdbuf();
      Case c{e.path(), group.path().filename().string(), "", "", "", ss.str()};
      c.env = header_field(c.text, "target-env");
      c.verdict = header_field(c.text, "verdict");
      c.rule = header_field(c.text, "weft-rule");
      out.push_back(std::move(c));
    }
  }
  std::sort(out.begin(), out.end(), [](const Case& a, const Case& b) { return a.path < b.path; });
  return out;
}

TEST(UpstreamAgreement, SameVerdictAndDefectAsSpirvVal) {
  std::vector<Case> all = cases();
  ASSERT_GE(all.size(), 150u) << "the corpus is missing from " << kCorpus;
  struct Row {
    int valid = 0, invalid = 0, agree = 0;
  };
  std::map<std::string, Row> table;
  for (const Case& c : all) {
    SCOPED_TRACE(c.path.string());
    ASSERT_TRUE(c.verdict == "valid" || c.verdict == "invalid") << "no '; verdict:' line";
    ASSERT_TRUE(target_environment_version(c.env).has_value()) << "unknown target-env '" << c.env << "'";
    Row& row = table[c.group];
    (c.verdict == "valid" ? row.valid : row.invalid)++;
    std::vector<uint32_t> words = assemble(c.text, c.path.string(), *target_environment_version(c.env));
    std::vector<Diagnostic> diags = validate(words, ValidateOptions{.target_env = c.env});
    std::string all_diags;
    for (const Diagnostic& d : diags) all_diags += d.str() + "\n";
    if (c.verdict == "valid") {
      EXPECT_TRUE(diags.empty()) << "upstream accepts this module; Weft says:\n" << all_diags;
      if (diags.empty()) row.agree++;
      continue;
    }
    ASSERT_FALSE(c.rule.empty()) << "no '; weft-rule:' line";
    bool flagged = std::any_of(diags.begin(), diags.end(), [&](const Diagnostic& d) { return d.rule == c.rule; });
    EXPECT_TRUE(flagged) << "upstream rejects this module; expected [" << c.rule << "], Weft says:\n" << all_diags;
    if (flagged) row.agree++;
  }
  std::cout << "agreement with upstream spirv-val (verdict, and the same defect for invalid modules):\n";
  for (const auto& [group, row] : table) {
    std::cout << "  " << group << ": " << row.agree << "/" << row.valid + row.invalid << " (" << row.valid
              << " valid, " << row.invalid << " invalid)\n";
  }
}

// The recorded verdicts are what the upstream tools say today.
TEST(UpstreamAgreement, RecordedVerdictsMatchTheUpstreamTools) {
  if (!fs::exists(kTools / "spirv-val") || !fs::exists(kTools / "spirv-as"))
    GTEST_SKIP() << "upstream tools not found in " << kTools << " (../shared is absent)";
  weft::test::TempDir tmp("weft_upstream");
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.path.string());
    std::string spv = tmp.file("m.spv");
    std::string as = (kTools / "spirv-as").string() + " --target-env " + c.env + " " + c.path.string() + " -o " + spv +
                     " >/dev/null 2>&1";
    ASSERT_EQ(std::system(as.c_str()), 0) << as;
    std::string val = (kTools / "spirv-val").string() + " --target-env " + c.env + " " + spv + " >/dev/null 2>&1";
    int status = std::system(val.c_str());
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status) == 0 ? "valid" : "invalid", c.verdict);
  }
}

// Weft's text form is spirv-as's: the disassembly of every corpus module (numeric ids) assembles
// with upstream spirv-as --preserve-numeric-ids to the same words (the generator word aside: each
// assembler writes its own).
TEST(UpstreamAgreement, DisassemblyAssemblesWithSpirvAs) {
  if (!fs::exists(kTools / "spirv-as")) GTEST_SKIP() << "upstream tools not found in " << kTools;
  weft::test::TempDir tmp("weft_upstream_text");
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.path.string());
    std::vector<uint32_t> words = assemble(c.text, c.path.string(), *target_environment_version(c.env));
    {
      std::ofstream f(tmp.file("m.spvasm"));
      f << disassemble(words, DisassembleOptions{.friendly_names = false});
    }
    std::string cmd = (kTools / "spirv-as").string() + " --target-env " + c.env + " --preserve-numeric-ids " +
                      tmp.file("m.spvasm") + " -o " + tmp.file("u.spv") + " >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::vector<uint32_t> theirs = read_file(tmp.file("u.spv"));
    ASSERT_EQ(theirs.size(), words.size());
    theirs[2] = words[2];
    EXPECT_EQ(theirs, words);
  }
}

}  // namespace
}  // namespace weft::spirv
