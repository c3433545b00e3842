// `weft compile --iospec`: the artifact and its IOSpec from one command; bad IOSpec options stop it
// before anything is written.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/run_cli.h"
#include "common/temp_dir.h"
#include "weft/iospec.h"

namespace weft {
namespace {

void write(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
}

// The specification's first example: A = B + C over 60 16-bit elements.
const char* const kAdd = R"(graph @main(%B: f16[60], %C: f16[60]) -> (%A) {
  %A: f16[60] = ADD(%B, %C)
  return %A
}
)";

TEST(IospecCompile, WritesTheArtifactAndTheSpecsExample) {
  test::TempDir dir("weft_iospec_compile");
  write(dir.file("add.weft"), kAdd);
  test::CliResult r = test::run_weft(dir, "compile add.weft -o add.vgf --iospec add.iospec.yaml");
  ASSERT_EQ(r.rc, 0) << r.all();
  EXPECT_NE(r.out.find("add.iospec.yaml: IOSpec, 2 inputs, 1 outputs, 1 sequence"), std::string::npos) << r.out;
  ASSERT_TRUE(std::filesystem::exists(dir.file("add.vgf")));
  iospec::IoSpec spec = iospec::load_yaml(dir.file("add.iospec.yaml"));
  ASSERT_EQ(spec.inputs.size(), 2u);
  // The specification's numbers: length 60, precision 16 -> padded_length 64, 16 64-bit words.
  EXPECT_EQ(spec.inputs[0].length, 60);
  EXPECT_EQ(spec.inputs[0].padded_length, 64);
  EXPECT_EQ(spec.inputs[0].length_64b_words, 16);
  EXPECT_EQ(spec.inputs[0].precision, 16);
  ASSERT_EQ(spec.simple_sequences.size(), 1u);
  EXPECT_EQ(spec.simple_sequences[0].inputs, (std::vector<std::string>{"B", "C"}));
  EXPECT_EQ(spec.simple_sequences[0].outputs, (std::vector<std::string>{"A"}));

  // `weft iospec --check` accepts it against the compiled container.
  r = test::run_weft(dir, "iospec add.vgf --check add.iospec.yaml");
  EXPECT_EQ(r.rc, 0) << r.all();
}

TEST(IospecCompile, LatchedInputGetsItsOwnSequence) {
  test::TempDir dir("weft_iospec_compile");
  write(dir.file("add.weft"), kAdd);
  test::CliResult r = test::run_weft(dir, "compile add.weft -o add.vgf --iospec s.yaml --latched C");
  ASSERT_EQ(r.rc, 0) << r.all();
  iospec::IoSpec spec = iospec::load_yaml(dir.file("s.yaml"));
  ASSERT_EQ(spec.simple_sequences.size(), 2u);
  EXPECT_EQ(spec.simple_sequences[0].name, "main_seq");
  EXPECT_EQ(spec.simple_sequences[0].inputs, (std::vector<std::string>{"B"}));
  EXPECT_EQ(spec.simple_sequences[1].name, "latched_seq");
  EXPECT_EQ(spec.simple_sequences[1].inputs, (std::vector<std::string>{"C"}));
  EXPECT_TRUE(spec.simple_sequences[1].outputs.empty());
  EXPECT_TRUE(spec.find_input("C")->latched);
}

TEST(IospecCompile, BadLatchedNameWritesNothing) {
  test::TempDir dir("weft_iospec_compile");
  write(dir.file("add.weft"), kAdd);
  test::CliResult r = test::run_weft(dir, "compile add.weft -o add.vgf --iospec s.yaml --latched D");
  EXPECT_EQ(r.rc, 1) << r.all();
  EXPECT_NE(r.err.find("add.weft"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'D'"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("add.vgf")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("s.yaml")));
  r = test::run_weft(dir, "compile add.weft -o add.vgf --latched C");
  EXPECT_EQ(r.rc, 2) << r.all();  // --latched without --iospec is a usage error
}

}  // namespace
}  // namespace weft
