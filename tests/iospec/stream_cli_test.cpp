// `weft iospec` and `weft stream` end to end through the built tool (WEFT_CLI): the specification's
// latched example as a script, scripts with sequence violations and malformed lines (errors on
// stderr with line numbers, the following lines still run), values from .npy files, quantized inputs,
// --check and usage errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/run_cli.h"
#include "common/temp_dir.h"
#include "weft/npy.h"
#include "weft/tensor.h"

namespace weft {
namespace {

class TempDir : public test::TempDir {
 public:
  TempDir() : test::TempDir("weft_stream_cli_test") {}
};

test::CliResult weft(const TempDir& dir, const std::string& args) { return test::run_weft(dir, args); }

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE((haystack).find(needle), std::string::npos) << "missing '" << (needle) << "' in:\n" << (haystack)

// The specification's model: A = B + C.
constexpr const char* kAddModel = R"(graph @main(%B: f32[1], %C: f32[1]) -> (%A) {
  %A: f32[1] = ADD(%B, %C)
  return %A
}
)";

constexpr const char* kAdd3Model = R"(graph @main(%B: f32[3], %C: f32[3]) -> (%A) {
  %A: f32[3] = ADD(%B, %C)
  return %A
}
)";

// y = (float(q) - 3) * 0.5: an int8 input with scale 0.5 and zero point 3.
constexpr const char* kQuantModel = R"(graph @main(%q: i8[3]) -> (%y) {
  %qf: f32[3] = CAST(%q)
  %zp: f32[1] = CONST() {values = [3]}
  %scale: f32[1] = CONST() {values = [0.5]}
  %shift: i8[1] = CONST() {values = [0]}
  %d: f32[3] = SUB(%qf, %zp)
  %y: f32[3] = MUL(%d, %scale, %shift)
  return %y
}
)";

// The specification's transaction sequence with a latched C.
constexpr const char* kSpecScript = R"(# the IOSpec specification's latched example
write C = 1   # latched
write B = 1
read A
write B = 2
read A
write B = 3
read A
write C = 2
write B = 4
read A
)";

TEST(StreamCli, SpecLatchedExample) {
  TempDir dir;
  dir.write("m.weft", kAddModel);
  dir.write("s.txt", kSpecScript);
  auto g = weft(dir, "iospec m.weft --latched C -o m.iospec.yaml");
  ASSERT_EQ(g.rc, 0) << g.all();
  EXPECT_EQ(g.out, "");
  EXPECT_HAS(test::slurp(dir.file("m.iospec.yaml")), "latched_seq");
  auto r = weft(dir, "stream m.weft --iospec m.iospec.yaml --script s.txt");
  EXPECT_EQ(r.rc, 0) << r.all();
  EXPECT_EQ(r.out, "read A = 2\nread A = 3\nread A = 4\nread A = 6\n");
  EXPECT_EQ(r.err, "");
  // The same script from stdin.
  auto in = weft(dir, "stream m.weft --iospec m.iospec.yaml < s.txt");
  EXPECT_EQ(in.rc, 0) << in.all();
  EXPECT_EQ(in.out, r.out);
  auto dash = weft(dir, "stream m.weft --iospec=m.iospec.yaml --script - --backend reference < s.txt");
  EXPECT_EQ(dash.rc, 0) << dash.all();
  EXPECT_EQ(dash.out, r.out);
}

TEST(StreamCli, IospecPrintsAndChecks) {
  TempDir dir;
  dir.write("m.weft", kAddModel);
  dir.write("m3.weft", kAdd3Model);
  auto p = weft(dir, "iospec m.weft --latched C");
  ASSERT_EQ(p.rc, 0) << p.all();
  EXPECT_HAS(p.out, "simple_sequences:");
  EXPECT_HAS(p.out, "latched_seq");
  dir.write("p.yaml", p.out);
  auto ok = weft(dir, "iospec m.weft --check p.yaml");
  EXPECT_EQ(ok.rc, 0) << ok.all();
  EXPECT_EQ(ok.out, "p.yaml: matches m.weft\n");
  auto bad = weft(dir, "iospec m3.weft --check p.yaml");
  EXPECT_EQ(bad.rc, 1) << bad.all();
  EXPECT_HAS(bad.err, "weft: error: ");
  EXPECT_HAS(bad.err, "p.yaml");
  auto usage = weft(dir, "iospec m.weft --check p.yaml -o q.yaml");
  EXPECT_EQ(usage.rc, 2) << usage.all();
  auto twice = weft(dir, "iospec m.weft --latched C --latched C");
  EXPECT_EQ(twice.rc, 2) << twice.all();
  auto not_input = weft(dir, "iospec m.weft --latched Q");
  EXPECT_EQ(not_input.rc, 1) << not_input.all();
  auto help = weft(dir, "iospec --help");
  EXPECT_EQ(help.rc, 0);
  EXPECT_HAS(help.out, "Usage: weft iospec");
}

TEST(StreamCli, ViolationsAreReportedAndTheScriptGoesOn) {
  TempDir dir;
  dir.write("m.weft", kAdd3Model);
  ASSERT_EQ(weft(dir, "iospec m.weft -o m.yaml").rc, 0);
  write_npy(dir.file("b.npy"), Tensor::from_doubles({DType::kFp32, {3}}, std::vector<double>{4, 5, 6}));
  dir.write("s.txt",
            "write C = 1\n"             // 1: out of order
            "write B = [1, 2, 3]\n"     // 2
            "read A\n"                  // 3: C still missing
            "write C = 10\n"            // 4
            "write B = 1\n"             // 5: before A was read
            "read A\n"                  // 6
            "\n"                        // 7
            "bogus A\n"                 // 8: unknown verb
            "write B = abc\n"           // 9: not a number
            "write B = [1, 2]\n"        // 10: wrong length
            "write Z = 1\n"             // 11: unknown name
            "write B = @b.npy\n"        // 12
            "write C = 0.25\n"          // 13
            "read C\n"                  // 14: an input
            "read A\n"                  // 15
            "write B = [1, 2,]\n"       // 16: empty item
            "write B = @missing.npy\n"  // 17
            "write B = 2\n"             // 18
            "write C = -2\n"            // 19
            "read A\n");                // 20
  auto r = weft(dir, "stream m.weft --iospec m.yaml --script s.txt");
  EXPECT_EQ(r.rc, 1) << r.all();
  EXPECT_EQ(r.out, "read A = [11, 12, 13]\nread A = [4.25, 5.25, 6.25]\nread A = [0, 0, 0]\n");
  const std::vector<std::string> errors = {
      "error: line 1: sequence error: expected input 'B' (main_seq, input 1 of 2), got 'C'\n",
      "error: line 3: sequence error: output 'A' is not available: main_seq still needs input 'C'\n",
      "error: line 5: sequence error: input 'B' written again before output 'A' was read\n",
      "error: line 8: unknown transaction 'bogus' (expected 'write NAME = VALUE' or 'read NAME')\n",
      "error: line 9: 'abc' is not a number\n",
      "error: line 10: input 'B' takes 3 values, got 2\n",
      "error: line 11: the IOSpec has no input named 'Z'; its inputs are: B, C\n",
      "error: line 14: 'C' is an input of the IOSpec, not an output; its outputs are: A\n",
      "error: line 16: empty item 3 in list '[1, 2,]'\n",
      "error: line 17: ",
  };
  size_t pos = 0;
  for (const std::string& e : errors) {
    const size_t at = r.err.find(e, pos);
    EXPECT_NE(at, std::string::npos) << "missing (in order) '" << e << "' in:\n" << r.err;
    if (at != std::string::npos) pos = at + e.size();
  }
  EXPECT_HAS(r.err, "missing.npy");
  size_t lines = 0;
  for (char c : r.err) lines += c == '\n';
  EXPECT_EQ(lines, errors.size()) << r.err;
}

TEST(StreamCli, VerboseEchoesWrites) {
  TempDir dir;
  dir.write("m.weft", kAddModel);
  dir.write("s.txt", kSpecScript);
  ASSERT_EQ(weft(dir, "iospec m.weft --latched=C -o m.yaml").rc, 0);
  auto r = weft(dir, "stream m.weft --iospec m.yaml --script s.txt --verbose");
  EXPECT_EQ(r.rc, 0) << r.all();
  EXPECT_EQ(r.out,
            "write C = 1\nwrite B = 1\nread A = 2\nwrite B = 2\nread A = 3\nwrite B = 3\nread A = 4\n"
            "write C = 2\nwrite B = 4\nread A = 6\n");
}

TEST(StreamCli, QuantizedInput) {
  TempDir dir;
  dir.write("q.weft", kQuantModel);
  ASSERT_EQ(weft(dir, "iospec q.weft -o q.yaml").rc, 0);
  // A script in a sub-folder: @files are relative to it.
  std::filesystem::create_directory(dir.file("sub"));
  write_npy(dir.file("sub/raw.npy"), Tensor::from_ints({DType::kInt8, {3}}, std::vector<int64_t>{3, 4, 5}));
  write_npy(dir.file("sub/real.npy"), Tensor::from_doubles({DType::kFp32, {3}}, std::vector<double>{0.5, -1, 2}));
  dir.write("sub/s.txt",
            "write q = [1, 1.25, 100]\n"  // 2 + 3, 2 (half to even) + 3, clamped to 127
            "read y\n"
            "write q = @raw.npy\n"  // already quantized: written as is
            "read y\n"
            "write q = @real.npy\n"  // real values: quantized
            "read y\n");
  auto r = weft(dir, "stream q.weft --iospec q.yaml --script sub/s.txt");
  EXPECT_EQ(r.rc, 0) << r.all();
  EXPECT_EQ(r.out, "read y = [1, 1, 62]\nread y = [0, 0.5, 1]\nread y = [0.5, -1, 2]\n");
}

TEST(StreamCli, UsageAndLoadErrors) {
  TempDir dir;
  dir.write("m.weft", kAddModel);
  auto no_spec = weft(dir, "stream m.weft");
  EXPECT_EQ(no_spec.rc, 2) << no_spec.all();
  EXPECT_HAS(no_spec.err, "--iospec");
  auto unknown = weft(dir, "stream m.weft --iospec x.yaml --frobnicate");
  EXPECT_EQ(unknown.rc, 2) << unknown.all();
  auto missing = weft(dir, "stream m.weft --iospec missing.yaml --script s.txt");
  EXPECT_EQ(missing.rc, 1) << missing.all();
  EXPECT_HAS(missing.err, "missing.yaml");
  ASSERT_EQ(weft(dir, "iospec m.weft -o m.yaml").rc, 0);
  auto no_script = weft(dir, "stream m.weft --iospec m.yaml --script nope.txt");
  EXPECT_EQ(no_script.rc, 1) << no_script.all();
  EXPECT_HAS(no_script.err, "nope.txt");
  auto help = weft(dir, "stream -h");
  EXPECT_EQ(help.rc, 0);
  EXPECT_HAS(help.out, "Usage: weft stream");
}

}  // namespace
}  // namespace weft
