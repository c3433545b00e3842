// The validator's corpus: tests/spirv/corpus/valid/*.spvasm must validate cleanly; each
// tests/spirv/corpus/invalid/<rule>[_N].spvasm must give a diagnostic of the rule its first line
// names. Directives (comment lines anywhere in the file):
//   ; expect: <rule-id>          required, the rule that must be reported
//   ; message: <substring>       optional, a substring of that diagnostic's message
//   ; patch: <offset> <value>    after assembling, set word <offset> (decimal or 0x hex)
//   ; truncate: <words>          after assembling (and patching), keep only the first <words>
//   ; target-env: <env>          validate (and assemble) for that environment (default universal1.6)
//   ; strict                     validate with Weft's strict rules
// Patches and truncation let binary-level rules (header, word counts, bounds) have corpus files.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "weft/spirv.h"

namespace weft::spirv {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(WEFT_SOURCE_DIR) / "tests/spirv/corpus";

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<fs::path> corpus_files(const char* dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(kCorpus / dir)) {
    if (e.path().extension() == ".spvasm") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

struct CorpusCase {
  std::string expect;
  std::string message;
  std::vector<std::pair<size_t, uint32_t>> patches;
  std::optional<size_t> truncate;
  ValidateOptions options;
  std::vector<uint32_t> words;
};

std::string directive(const std::string& line, const std::string& key) {
  std::string prefix = "; " + key + ":";
  if (line.rfind(prefix, 0) != 0) return {};
  std::string v = line.substr(prefix.size());
  v.erase(0, v.find_first_not_of(' '));
  v.erase(v.find_last_not_of(" \r") + 1);
  return v;
}

CorpusCase load_case(const fs::path& path) {
  CorpusCase c;
  std::string text = read_text(path);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (auto v = directive(line, "expect"); !v.empty()) c.expect = v;
    if (auto v = directive(line, "message"); !v.empty()) c.message = v;
    if (auto v = directive(line, "truncate"); !v.empty()) c.truncate = std::stoul(v, nullptr, 0);
    if (auto v = directive(line, "target-env"); !v.empty()) c.options.target_env = v;
    if (line == "; strict") c.options.strict = true;
    if (auto v = directive(line, "patch"); !v.empty()) {
      std::istringstream ps(v);
      std::string off, val;
      ps >> off >> val;
      c.patches.emplace_back(std::stoul(off, nullptr, 0), static_cast<uint32_t>(std::stoul(val, nullptr, 0)));
    }
  }
  c.words = assemble(text, path.string(), target_environment_version(c.options.target_env).value_or(0x00010600));
  for (auto [off, val] : c.patches) {
    if (off >= c.words.size()) throw std::runtime_error("patch offset past the end in " + path.string());
    c.words[off] = val;
  }
  if (c.truncate && *c.truncate < c.words.size()) c.words.resize(*c.truncate);
  return c;
}

bool is_listed_rule(const std::string& id) {
  for (const RuleInfo& r : validation_rules()) {
    if (id == r.id) return true;
  }
  return false;
}

std::string all_str(const std::vector<Diagnostic>& diags) {
  std::string s;
  for (const Diagnostic& d : diags) s += d.str() + "\n";
  return s;
}

TEST(ValidateCorpus, ValidModulesHaveNoDiagnostics) {
  auto files = corpus_files("valid");
  EXPECT_GE(files.size(), 6u);
  for (const fs::path& p : files) {
    SCOPED_TRACE(p.filename().string());
    std::vector<uint32_t> words = assemble(read_text(p), p.string());
    std::vector<Diagnostic> diags = validate(words, ValidateOptions{.strict = true});
    EXPECT_TRUE(diags.empty()) << all_str(diags);
  }
}

TEST(ValidateCorpus, InvalidModulesReportTheirRule) {
  auto files = corpus_files("invalid");
  ASSERT_FALSE(files.empty());
  for (const fs::path& p : files) {
    SCOPED_TRACE(p.filename().string());
    CorpusCase c;
    try {
      c = load_case(p);
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    ASSERT_FALSE(c.expect.empty()) << "no '; expect: <rule>' line";
    EXPECT_TRUE(is_listed_rule(c.expect)) << c.expect << " is not in validation_rules()";
    std::string stem = p.stem().string();
    EXPECT_EQ(stem.substr(0, stem.find('_')), c.expect) << "file name must start with the rule id";
    std::vector<Diagnostic> diags = validate(c.words, c.options);
    auto it = std::find_if(diags.begin(), diags.end(), [&](const Diagnostic& d) {
      return d.rule == c.expect && d.message.find(c.message) != std::string::npos;
    });
    ASSERT_NE(it, diags.end()) << "expected [" << c.expect << "] with '" << c.message << "', got:\n" << all_str(diags);
    for (const Diagnostic& d : diags) EXPECT_TRUE(is_listed_rule(d.rule)) << d.str();
    // Instruction-level diagnostics carry the offset and the disassembly of that instruction.
    if (it->offset != 0) {
      EXPECT_FALSE(it->instruction.empty()) << it->str();
      EXPECT_LT(it->offset, c.words.size());
    }
    EXPECT_NE(it->str().find("error[" + c.expect + "] @" + std::to_string(it->offset) + ": "), std::string::npos);
  }
}

TEST(ValidateCorpus, EveryRuleHasAnInvalidModule) {
  std::set<std::string> covered;
  for (const fs::path& p : corpus_files("invalid")) {
    std::string stem = p.stem().string();
    covered.insert(stem.substr(0, stem.find('_')));
  }
  for (const RuleInfo& r : validation_rules()) {
    EXPECT_TRUE(covered.count(r.id)) << "no tests/spirv/corpus/invalid/" << r.id << ".spvasm";
  }
}

TEST(ValidateCorpus, RulesAreUniqueAndDescribed) {
  std::set<std::string> ids;
  for (const RuleInfo& r : validation_rules()) {
    EXPECT_TRUE(ids.insert(r.id).second) << "duplicate rule " << r.id;
    EXPECT_GT(std::string(r.description).size(), 10u) << r.id;
    EXPECT_EQ(std::string(r.id).find('_'), std::string::npos) << r.id << ": rule ids use '-' and '.'";
  }
}

// Random word mutations of every valid module: diagnostics only, never a crash or a throw.
TEST(ValidateCorpus, MutatedValidModulesNeverCrash) {
  std::mt19937 rng(42);
  for (const fs::path& p : corpus_files("valid")) {
    SCOPED_TRACE(p.filename().string());
    const std::vector<uint32_t> base = assemble(read_text(p), p.string());
    for (int iter = 0; iter < 400; ++iter) {
      std::vector<uint32_t> w = base;
      size_t at = 5 + rng() % (w.size() - 5);
      switch (rng() % 3) {
        case 0: w[at] = rng() % 8 == 0 ? rng() : rng() % 64; break;
        case 1: w[at] ^= 1u << (rng() % 32); break;
        default: w.erase(w.begin() + static_cast<ptrdiff_t>(at)); break;
      }
      for (const Diagnostic& d : validate(w)) ASSERT_TRUE(is_listed_rule(d.rule)) << d.str();
    }
  }
}

// ---- the CLI: `weft spirv val` exit codes ----

int run_cli(const std::string& args, std::string* err) {
  fs::path log = fs::temp_directory_path() / ("weft_val_cli_" + std::to_string(::getpid()) + ".log");
  std::string cmd = std::string(WEFT_CLI) + " " + args + " >/dev/null 2>" + log.string();
  int status = std::system(cmd.c_str());
  *err = read_text(log);
  fs::remove(log);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(ValidateCli, ExitCodes) {
  std::string err;
  EXPECT_EQ(run_cli("spirv val " + (kCorpus / "valid/single_add.spvasm").string(), &err), 0) << err;
  EXPECT_EQ(run_cli("spirv val " + (kCorpus / "invalid/graph.output-required.spvasm").string(), &err), 1);
  EXPECT_NE(err.find("error[graph.output-required]"), std::string::npos) << err;
  fs::path rules = fs::temp_directory_path() / ("weft_val_rules_" + std::to_string(::getpid()) + ".txt");
  ASSERT_EQ(std::system((std::string(WEFT_CLI) + " spirv val --rules >" + rules.string()).c_str()), 0);
  std::string listing = read_text(rules);
  fs::remove(rules);
  for (const RuleInfo& r : validation_rules()) EXPECT_NE(listing.find(r.id), std::string::npos) << r.id;
}

}  // namespace
}  // namespace weft::spirv
