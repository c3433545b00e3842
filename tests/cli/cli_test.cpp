// End-to-end tests of the `weft` tool: runs the built binary (WEFT_CLI) in a temporary directory
// and checks exit codes and output for every command and each error path.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/run_cli.h"
#include "common/temp_dir.h"
#include "weft/npy.h"
#include "weft/ops.h"

namespace weft {
namespace {

namespace fs = std::filesystem;

const std::string kExampleDir = std::string(WEFT_SOURCE_DIR) + "/examples/tiny_cnn";

// Temporary directories of this suite are named weft_cli_test.XXXXXX.
class TempDir : public test::TempDir {
 public:
  TempDir() : test::TempDir("weft_cli_test") {}
};

using Result = test::CliResult;
using test::slurp;

// Runs `weft <args>` in `dir` (args are passed to the shell as written).
Result weft(const TempDir& dir, const std::string& args) { return test::run_weft(dir, args); }

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE((haystack).find(needle), std::string::npos) << "missing '" << (needle) << "' in:\n" << (haystack)
#define EXPECT_LACKS(haystack, needle)                                                             \
  EXPECT_EQ((haystack).find(needle), std::string::npos) << "unexpected '" << (needle) << "' in:\n" \
                                                        << (haystack)

// Copies the example model (text + weights + image) into `dir`.
void copy_example(const TempDir& dir) {
  for (const char* f :
       {"tiny_cnn.weft", "tiny_cnn.conv_w.npy", "tiny_cnn.fc_w.npy", "image.npy", "expected_logits.npy"}) {
    fs::copy_file(kExampleDir + "/" + f, dir.file(f), fs::copy_options::overwrite_existing);
  }
}

// A model that needs no kernel but IDENTITY: out = in, 2x15 values (summarised when printed).
constexpr const char* kIdentityModel = R"(graph @main(%x: f32[2,15], %flag: bool[3]) -> (%y, %f) {
  %y: f32[2,15] = IDENTITY(%x)
  %f: bool[3] = IDENTITY(%flag)
  return %y, %f
}
)";

void write_identity_inputs(const TempDir& dir) {
  std::vector<double> v(30);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i) - 10.5;
  write_npy(dir.file("x.npy"), Tensor::from_doubles({DType::kFp32, {2, 15}}, v));
  write_npy(dir.file("flag.npy"), Tensor::from_ints({DType::kBool, {3}}, std::vector<int64_t>{1, 0, 1}));
}

// ---- global options and usage errors -------------------------------------------------------------

TEST(Cli, VersionAndHelp) {
  TempDir d;
  Result v = weft(d, "--version");
  EXPECT_EQ(v.rc, 0);
  EXPECT_HAS(v.out, "weft 0.1.0");
  Result h = weft(d, "--help");
  EXPECT_EQ(h.rc, 0);
  for (const char* c : {"run", "check", "fmt", "ops", "Exit status"}) EXPECT_HAS(h.out, c);
  for (const char* c : {"run", "check", "fmt", "ops"}) {
    Result ch = weft(d, std::string(c) + " --help");
    EXPECT_EQ(ch.rc, 0) << c;
    EXPECT_HAS(ch.out, std::string("Usage: weft ") + c);
    Result hc = weft(d, std::string("help ") + c);
    EXPECT_EQ(hc.rc, 0) << c;
    EXPECT_EQ(hc.out, ch.out);
  }
  Result run_help = weft(d, "run -h");
  EXPECT_HAS(run_help.out, "--input NAME=FILE.npy");
  EXPECT_HAS(run_help.out, "--threads N");
}

TEST(Cli, UsageErrors) {
  TempDir d;
  Result none = weft(d, "");
  EXPECT_EQ(none.rc, 2);
  EXPECT_HAS(none.err, "Usage: weft");
  struct Case {
    const char* args;
    const char* needle;
  } cases[] = {
      {"frobnicate", "unknown command 'frobnicate'"},
      {"--frob", "unknown option '--frob'"},
      {"help nope", "unknown command 'nope'"},
      {"run", "needs a model file"},
      {"run a.weft b.weft", "takes one model"},
      {"run m.weft --bogus", "unknown option '--bogus'"},
      {"run m.weft --input", "--input needs a value"},
      {"run m.weft --input image", "expects NAME=FILE.npy, got 'image'"},
      {"run m.weft --input =x.npy", "expects NAME=FILE.npy"},
      {"run m.weft --output logits=", "expects NAME=FILE.npy"},
      {"run m.weft --threads abc", "--threads expects a non-negative integer"},
      {"run m.weft --max-memory 12Q", "--max-memory expects a number of bytes with an optional suffix"},
      {"run m.weft --max-memory 0", "--max-memory must be at least 1 byte"},
      {"run m.weft --threads=-1", "--threads expects a non-negative integer"},
      {"run m.weft --print=yes", "takes no value"},
      {"run m.weft -i a=1.npy -i a=2.npy", "input 'a' is given twice"},
      {"check", "needs a model file"},
      {"check a b", "takes one model"},
      {"check m.weft --fast", "unknown option '--fast'"},
      {"fmt", "needs a model file"},
      {"fmt m.weft --check -o out.weft", "either --check or -o"},
      {"fmt m.weft -o", "-o needs a value"},
      {"ops extra", "unexpected argument 'extra'"},
      {"ops --op", "--op needs a value"},
      {"ops --op NOPE", "unknown operator 'NOPE'"},
      {"ops --op conv", "did you mean CONV2D"},
  };
  for (const Case& c : cases) {
    Result r = weft(d, c.args);
    EXPECT_EQ(r.rc, 2) << c.args << "\n" << r.all();
    EXPECT_HAS(r.err, "weft: error: ");
    EXPECT_HAS(r.err, c.needle);
    EXPECT_TRUE(r.out.empty()) << c.args << ": " << r.out;
  }
}

TEST(Cli, MissingModelFileIsAModelError) {
  TempDir d;
  for (const char* cmd : {"run", "check", "fmt"}) {
    Result r = weft(d, std::string(cmd) + " no_such_model.weft");
    EXPECT_EQ(r.rc, 1) << cmd << "\n" << r.all();
    EXPECT_HAS(r.err, "weft: error: ");
    EXPECT_HAS(r.err, "no_such_model.weft");
  }
}

// ---- weft ops --------------------------------------------------------------------------------------

TEST(Cli, OpsTable) {
  TempDir d;
  Result r = weft(d, "ops");
  EXPECT_EQ(r.rc, 0) << r.err;
  for (const char* s : {"TOSA 1.0 operators", "backends: reference", "CONV2D", "MATMUL", "WHILE_LOOP",
                        "fp32 with fp32 accumulate", "in_t=f32", "PRO-FP", "EXT-BF16", "PRO-INT or PRO-FP",
                        "input_list: tensor list", "input1: in_t[shape1]", "output: out_t[shape]"}) {
    EXPECT_HAS(r.out, s);
  }
  // Every operator of the table is listed.
  for (const OpDef& def : all_op_defs()) EXPECT_HAS(r.out, "\n" + std::string(def.name) + "  (");
}

TEST(Cli, OpsSingleOperator) {
  TempDir d;
  for (const char* name : {"CONV2D", "conv2d", "tosa.CONV2D"}) {
    Result r = weft(d, std::string("ops --op ") + name);
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_HAS(r.out, "CONV2D  (tensor");
    EXPECT_HAS(r.out, "weight: weight_t[OC,KH,KW,IC]");
    EXPECT_HAS(r.out, "pad: i32[4]");
    EXPECT_HAS(r.out, "acc_type: acc_type");
    EXPECT_HAS(r.out, "signed 8x4 with int32 accumulate");
    EXPECT_HAS(r.out, "in_t=i8 weight_t=i4 out_t=i32 acc_t=i32");
    EXPECT_HAS(r.out, "EXT-INT4");
    EXPECT_HAS(r.out, "backends: reference");
    EXPECT_LACKS(r.out, "MATMUL");
  }
  Result clamp = weft(d, "ops --op=CLAMP");
  EXPECT_EQ(clamp.rc, 0);
  EXPECT_HAS(clamp.out, "min_val: in_out_t scalar");
  Result reshape = weft(d, "ops --op RESHAPE");
  EXPECT_HAS(reshape.out, "shape: shape_t[rank(shape)]");
  Result transpose = weft(d, "ops --op TRANSPOSE");
  EXPECT_HAS(transpose.out, "perms: i32[rank(input)]");
}

// ---- weft check ------------------------------------------------------------------------------------

TEST(Cli, CheckExample) {
  TempDir d;
  Result r = weft(d, "check '" + kExampleDir + "/tiny_cnn.weft'");
  ASSERT_EQ(r.rc, 0) << r.all();
  for (const char* s :
       {"tiny_cnn.weft: ok", "entry graph: @main", "inputs:\n  %image: f32[1,8,8,3]",
        "outputs:\n  %logits: f32[1,10]", "CONV2D       1", "CONST        5", "RESHAPE      2", "nodes: 14",
        "constant bytes: 3052 (3.0 KiB)", "graphs: 1", "profiles: all"}) {
    EXPECT_HAS(r.out, s);
  }
}

TEST(Cli, CheckListsEveryDiagnostic) {
  TempDir d;
  // Two independent type errors: the verifier reports both.
  d.write("bad.weft", R"(graph @main(%a: f32[2,3], %b: i32[2,3]) -> (%s, %t) {
  %s: f32[2,3] = ADD(%a, %b)
  %t: f32[4] = ABS(%a)
  return %s, %t
}
)");
  Result r = weft(d, "check bad.weft");
  EXPECT_EQ(r.rc, 1) << r.all();
  EXPECT_HAS(r.err, "weft: error: bad.weft is invalid: ");
  EXPECT_HAS(r.err, "2 diagnostics");
  EXPECT_HAS(r.err, "node '%s'");
  EXPECT_HAS(r.err, "node '%t'");
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(Cli, CheckParseError) {
  TempDir d;
  d.write("garbage.weft", "graph @main(%x f32[2]) -> (%x) {\n return %x\n}\n");
  Result r = weft(d, "check garbage.weft");
  EXPECT_EQ(r.rc, 1);
  EXPECT_HAS(r.err, "weft: error: garbage.weft:1:");
  EXPECT_HAS(r.err, "[parse]");
}

// ---- weft fmt --------------------------------------------------------------------------------------

TEST(Cli, FmtPrintsSavesAndChecks) {
  TempDir d;
  copy_example(d);
  Result p = weft(d, "fmt tiny_cnn.weft");
  ASSERT_EQ(p.rc, 0) << p.all();
  EXPECT_HAS(p.out, "graph @main(%image: f32[1,8,8,3])");
  EXPECT_HAS(p.out, "file(\"tiny_cnn.conv_w.npy\")");
  EXPECT_HAS(p.out, "CONV2D(");

  Result s = weft(d, "fmt tiny_cnn.weft -o canon.weft");
  ASSERT_EQ(s.rc, 0) << s.all();
  EXPECT_TRUE(s.out.empty());
  EXPECT_EQ(slurp(d.file("canon.weft")), p.out);
  Result c = weft(d, "fmt --check canon.weft");
  EXPECT_EQ(c.rc, 0) << c.all();
  EXPECT_TRUE(c.all().empty()) << c.all();

  // A comment and extra spaces: same module, not canonical.
  d.write("messy.weft", "# hand written\n" + p.out);
  Result m = weft(d, "fmt --check messy.weft");
  EXPECT_EQ(m.rc, 1);
  EXPECT_HAS(m.err, "messy.weft is not in canonical form (first difference at line 1)");
  // The canonical form of the messy file is the canonical file.
  Result mp = weft(d, "fmt messy.weft");
  EXPECT_EQ(mp.out, p.out);
}

TEST(Cli, FmtParseError) {
  TempDir d;
  d.write("bad.weft", "graph @main(\n");
  Result r = weft(d, "fmt bad.weft");
  EXPECT_EQ(r.rc, 1);
  EXPECT_HAS(r.err, "weft: error: bad.weft:");
}

// ---- weft run --------------------------------------------------------------------------------------

TEST(Cli, RunExampleMatchesNumpy) {
  TempDir d;
  copy_example(d);
  Result r = weft(d, "run tiny_cnn.weft --input image=image.npy --output logits=out.npy --threads 2");
  ASSERT_EQ(r.rc, 0) << r.all();
  EXPECT_TRUE(r.out.empty()) << "nothing is printed when --output is given without --print:\n" << r.out;
  Tensor got = read_npy(d.file("out.npy"));
  Tensor want = read_npy(d.file("expected_logits.npy"));
  ASSERT_EQ(got.type().str(), "f32[1,10]");
  ASSERT_EQ(want.type().str(), "f32[1,10]");
  for (int64_t i = 0; i < 10; ++i) EXPECT_NEAR(got.at_double(i), want.at_double(i), 1e-4) << "logit " << i;

  // Printed by default when no --output is given, and with --print alongside --output.
  Result p = weft(d, "run tiny_cnn.weft --input=image=image.npy");
  ASSERT_EQ(p.rc, 0) << p.all();
  EXPECT_HAS(p.out, "%logits: f32[1,10]\n[[");
  EXPECT_HAS(p.out, "min ");
  EXPECT_HAS(p.out, "max ");
  EXPECT_HAS(p.out, "mean ");
  EXPECT_LACKS(p.out, "...");
  Result both = weft(d, "run tiny_cnn.weft -i %image=image.npy -o logits=again.npy --print");
  EXPECT_EQ(both.rc, 0) << both.all();
  EXPECT_EQ(both.out, p.out);
  EXPECT_TRUE(read_npy(d.file("again.npy")).identical(got));
}

// .tosa files everywhere a model goes: compile writes one, run/check/import/compile read it.
TEST(Cli, TosaFilesEverywhere) {
  TempDir d;
  copy_example(d);
  Result c = weft(d, "compile tiny_cnn.weft -o m.tosa");
  ASSERT_EQ(c.rc, 0) << c.all();
  EXPECT_HAS(c.out, "m.tosa: TOSA 1.0 FlatBuffer");
  ASSERT_EQ(weft(d, "run tiny_cnn.weft --input image=image.npy --output logits=a.npy").rc, 0);
  Result r = weft(d, "run m.tosa --input image=image.npy --output logits=b.npy");
  ASSERT_EQ(r.rc, 0) << r.all();
  EXPECT_TRUE(read_npy(d.file("a.npy")).identical(read_npy(d.file("b.npy"))));
  EXPECT_EQ(weft(d, "check m.tosa").rc, 0);
  Result i = weft(d, "import m.tosa -o back.weft");
  ASSERT_EQ(i.rc, 0) << i.all();
  EXPECT_EQ(weft(d, "compile m.tosa -o m.vgf").rc, 0);
  Result n = weft(d, "compile tiny_cnn.weft --type-narrowing full_preserve_io -o half.tosa");
  ASSERT_EQ(n.rc, 0) << n.all();
  EXPECT_HAS(n.out, "narrowed to fp16 (full_preserve_io)");
  Result h = weft(d, "run half.tosa --input image=image.npy --output logits=h.npy");
  ASSERT_EQ(h.rc, 0) << h.all();
  for (int64_t k = 0; k < 10; ++k)
    EXPECT_NEAR(read_npy(d.file("h.npy")).at_double(k), read_npy(d.file("a.npy")).at_double(k), 0.02) << k;
  EXPECT_HAS(weft(d, "compile tiny_cnn.weft --type-narrowing half -o x.tosa").err, "--type-narrowing expects none, full");
  // Not a TOSA file: the identifier is checked first, the file named.
  Result bad = weft(d, "check image.npy.tosa");
  EXPECT_EQ(bad.rc, 1);
  std::filesystem::copy_file(d.file("image.npy"), d.file("fake.tosa"));
  Result fake = weft(d, "check fake.tosa");
  EXPECT_EQ(fake.rc, 1);
  EXPECT_HAS(fake.err, "fake.tosa");
  EXPECT_HAS(fake.err, "file identifier 'TOSA' is missing");
  EXPECT_HAS(weft(d, "conformance").err, "needs a test folder");
  // A CUSTOM node of another domain that is not a shader stays in the graph: a .tosa file keeps it,
  // a VGF cannot hold it.
  d.write("c.weft", "graph @main(%x: f32[4]) -> (%y) {\n  %y: f32[4] = CUSTOM(%x) {operator_name = \"foo\", "
                    "domain_name = \"my.domain\", implementation_attrs = \"opaque bytes\"}\n  return %y\n}\n");
  ASSERT_EQ(weft(d, "compile c.weft -o c.tosa").rc, 0);
  Result back = weft(d, "import c.tosa -o -");
  EXPECT_HAS(back.out, "implementation_attrs = \"opaque bytes\"");
  Result vgf = weft(d, "compile c.weft -o c.vgf");
  EXPECT_EQ(vgf.rc, 1);
  EXPECT_HAS(vgf.err, "c.weft");
  EXPECT_HAS(vgf.err, "of domain 'my.domain' carries no shader payload");
}

TEST(Cli, RunInputErrors) {
  TempDir d;
  copy_example(d);
  Result memory = weft(d, "run tiny_cnn.weft --input image=image.npy --max-memory 1K");
  EXPECT_EQ(memory.rc, 1);
  EXPECT_HAS(memory.err, "tiny_cnn.weft");
  EXPECT_HAS(memory.err, "more than the limit of 1024 bytes");
  EXPECT_HAS(memory.err, "the largest tensors: '");
  EXPECT_EQ(weft(d, "run tiny_cnn.weft --input image=image.npy --max-memory 64M").rc, 0);

  Result missing = weft(d, "run tiny_cnn.weft");
  EXPECT_EQ(missing.rc, 1);
  EXPECT_HAS(missing.err, "missing input image");
  EXPECT_HAS(missing.err, "image: f32[1,8,8,3]");
  EXPECT_HAS(missing.err, "--input NAME=FILE.npy");

  Result unknown = weft(d, "run tiny_cnn.weft --input image=image.npy --input img=image.npy");
  EXPECT_EQ(unknown.rc, 1);
  EXPECT_HAS(unknown.err, "no input named 'img'");
  EXPECT_HAS(unknown.err, "image: f32[1,8,8,3]");

  Result bad_out = weft(d, "run tiny_cnn.weft --input image=image.npy --output probs=p.npy");
  EXPECT_EQ(bad_out.rc, 1);
  EXPECT_HAS(bad_out.err, "no output named 'probs'");
  EXPECT_HAS(bad_out.err, "logits: f32[1,10]");
  EXPECT_FALSE(fs::exists(d.file("p.npy")));

  write_npy(d.file("small.npy"), Tensor::zeros({DType::kFp32, {1, 4, 4, 3}}));
  Result shape = weft(d, "run tiny_cnn.weft --input image=small.npy");
  EXPECT_EQ(shape.rc, 1);
  EXPECT_HAS(shape.err, "input 'image': small.npy holds f32[1,4,4,3], the model expects f32[1,8,8,3]");

  write_npy(d.file("ints.npy"), Tensor::zeros({DType::kInt32, {1, 8, 8, 3}}));
  Result type = weft(d, "run tiny_cnn.weft --input image=ints.npy");
  EXPECT_EQ(type.rc, 1);
  EXPECT_HAS(type.err, "ints.npy");
  EXPECT_HAS(type.err, "expected f32");
  EXPECT_HAS(type.err, "operand 'image'");

  Result absent = weft(d, "run tiny_cnn.weft --input image=absent.npy");
  EXPECT_EQ(absent.rc, 1);
  EXPECT_HAS(absent.err, "absent.npy");
  EXPECT_HAS(absent.err, "[io]");

  d.write("junk.npy", "not an npy file at all");
  Result junk = weft(d, "run tiny_cnn.weft --input image=junk.npy");
  EXPECT_EQ(junk.rc, 1);
  EXPECT_HAS(junk.err, "junk.npy: operand 'image': not an .npy file");
}

TEST(Cli, RunExplainsThePartition) {
  TempDir d;
  copy_example(d);
  Result r = weft(d, "run tiny_cnn.weft --input image=image.npy --explain");
  EXPECT_EQ(r.rc, 0) << r.all();
  EXPECT_HAS(r.out, "onednn reference)");  // the priority line: vulkan (when a device exists), onednn, reference
  EXPECT_HAS(r.out, "onednn CONV2D+CLAMP: %conv, %relu");
  EXPECT_HAS(r.out, "onednn MATMUL+BIAS: %fc, %biased");
  EXPECT_HAS(r.out, "%logits: f32[1,10]");  // and it still runs

  // The reference backend first: nothing is fused and oneDNN is never asked.
  Result ref = weft(d, "run tiny_cnn.weft --input image=image.npy --explain --backend reference");
  EXPECT_EQ(ref.rc, 0) << ref.all();
  EXPECT_HAS(ref.out, "(backends in priority order: reference)");
  EXPECT_HAS(ref.out, "reference CONV2D: %conv");
  EXPECT_EQ(ref.out.find("onednn"), std::string::npos) << ref.out;

  // compile --explain prints the same report and still writes the container.
  Result c = weft(d, "compile tiny_cnn.weft -o m.vgf --explain");
  EXPECT_EQ(c.rc, 0) << c.all();
  EXPECT_HAS(c.out, "onednn CONV2D+CLAMP: %conv, %relu");
  EXPECT_TRUE(fs::exists(d.file("m.vgf")));
}

TEST(Cli, RunBackendsGiveTheSameResultsWithinFp32Tolerance) {
  TempDir d;
  copy_example(d);
  ASSERT_EQ(weft(d, "run tiny_cnn.weft --input image=image.npy -o logits=a.npy").rc, 0);
  ASSERT_EQ(weft(d, "run tiny_cnn.weft --input image=image.npy -o logits=b.npy --backend reference -t 2").rc, 0);
  ASSERT_EQ(weft(d, "run tiny_cnn.weft --input image=image.npy -o logits=c.npy --scratchpad library --nan-exact").rc, 0);
  Tensor a = read_npy(d.file("a.npy")), b = read_npy(d.file("b.npy")), c = read_npy(d.file("c.npy"));
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    EXPECT_NEAR(a.at_double(i), b.at_double(i), 1e-5) << i;
    EXPECT_NEAR(c.at_double(i), b.at_double(i), 1e-5) << i;
  }
}

TEST(Cli, RunRepeatAndProfile) {
  TempDir d;
  copy_example(d);
  Result r = weft(d, "run tiny_cnn.weft --input image=image.npy -o logits=a.npy --repeat 3 --profile");
  EXPECT_EQ(r.rc, 0) << r.all();
  EXPECT_HAS(r.out, "latency: median_ms=");
  EXPECT_HAS(r.out, " runs=3 threads=1");
  EXPECT_HAS(r.out, "profile: 3 kernels, ");
  EXPECT_HAS(r.out, "onednn    CONV2D+CLAMP");
  EXPECT_HAS(r.out, "slowest kernels:");
  EXPECT_HAS(r.out, "onednn MATMUL+BIAS (%fc)");  // named by the group's main node
  EXPECT_EQ(r.out.find("CONST_SHAPE"), std::string::npos) << r.out;  // constants cost nothing
  EXPECT_TRUE(fs::exists(d.file("a.npy")));

  // --profile-kernels: the length of the slowest-kernels list (and --profile implied).
  auto listed = [](const std::string& out) {
    const size_t at = out.find("slowest kernels:\n");
    if (at == std::string::npos) return -1;
    int lines = 0;
    for (size_t i = out.find('\n', at) + 1; i < out.size() && out.compare(i, 2, "  ") == 0; i = out.find('\n', i) + 1) ++lines;
    return lines;
  };
  Result one = weft(d, "run tiny_cnn.weft --input image=image.npy --repeat 2 --profile-kernels 1");
  EXPECT_EQ(one.rc, 0) << one.all();
  EXPECT_EQ(listed(one.out), 1) << one.out;
  Result all = weft(d, "run tiny_cnn.weft --input image=image.npy --repeat 2 --profile-kernels all");
  EXPECT_EQ(all.rc, 0) << all.all();
  EXPECT_EQ(listed(all.out), 3) << all.out;
  Result bad = weft(d, "run tiny_cnn.weft --input image=image.npy --profile-kernels some");
  EXPECT_EQ(bad.rc, 2) << bad.all();
  EXPECT_HAS(bad.err, "--profile-kernels expects a count or 'all', got 'some'");
}

TEST(Cli, RunBackendOptionErrors) {
  TempDir d;
  copy_example(d);
  Result unknown = weft(d, "run tiny_cnn.weft --input image=image.npy --backend onednn,gpu");
  EXPECT_EQ(unknown.rc, 1);
  EXPECT_HAS(unknown.err, "unknown backend 'gpu' (this build has: vulkan, onednn, reference; 'cpu' selects those on the CPU)");
  Result mixed = weft(d, "run tiny_cnn.weft --input image=image.npy --backend cpu,vulkan");
  EXPECT_EQ(mixed.rc, 1);
  EXPECT_HAS(mixed.err, "backend 'cpu' stands for the CPU backends in their default order and rules, and cannot be "
                        "listed with other backends (got 'cpu,vulkan')");
  Result cpu = weft(d, "run tiny_cnn.weft --input image=image.npy --backend cpu --explain");
  EXPECT_EQ(cpu.rc, 0) << cpu.all();
  EXPECT_HAS(cpu.out, "(backends in priority order: onednn reference)");
  Result twice = weft(d, "run tiny_cnn.weft --input image=image.npy --backend reference,reference");
  EXPECT_EQ(twice.rc, 1);
  EXPECT_HAS(twice.err, "backend 'reference' is listed twice");
  Result empty = weft(d, "run tiny_cnn.weft --input image=image.npy --backend onednn,");
  EXPECT_EQ(empty.rc, 2);
  EXPECT_HAS(empty.err, "--backend expects names separated by commas");
  Result two = weft(d, "run tiny_cnn.weft --input image=image.npy --backend onednn --backend reference");
  EXPECT_EQ(two.rc, 2);
  EXPECT_HAS(two.err, "--backend is given twice");
  Result repeat = weft(d, "run tiny_cnn.weft --input image=image.npy --repeat 0");
  EXPECT_EQ(repeat.rc, 2);
  EXPECT_HAS(repeat.err, "--repeat expects a positive integer, got '0'");
  Result scratch = weft(d, "run tiny_cnn.weft --input image=image.npy --scratchpad heap");
  EXPECT_EQ(scratch.rc, 2);
  EXPECT_HAS(scratch.err, "--scratchpad expects 'arena' or 'library', got 'heap'");
  Result precision = weft(d, "run tiny_cnn.weft --input image=image.npy --precision bf16");
  EXPECT_EQ(precision.rc, 2);
  EXPECT_HAS(precision.err, "--precision expects 'fp32' or 'fp16', got 'bf16'");
  Result half = weft(d, "run tiny_cnn.weft --input image=image.npy -o logits=h.npy --precision fp16 --explain");
  EXPECT_EQ(half.rc, 0) << half.all();
  EXPECT_HAS(half.out, "note: precision fp16: ");
  EXPECT_EQ(read_npy(d.file("h.npy")).dtype(), DType::kFp32);
  Result compile = weft(d, "compile tiny_cnn.weft -o m.vgf --backend reference");
  EXPECT_EQ(compile.rc, 2);
  EXPECT_HAS(compile.err, "--backend only matters with --explain");
  Result backends = weft(d, "ops --backends");
  EXPECT_EQ(backends.rc, 0);
  EXPECT_HAS(backends.out, "onednn\n    oneDNN (Debian libdnnl)");
  EXPECT_HAS(backends.out, "reference\n    Weft's reference kernels");
}

TEST(Cli, OpsShowWhichBackendRunsEachTypeRow) {
  TempDir d;
  Result conv = weft(d, "ops --op CONV2D");
  EXPECT_EQ(conv.rc, 0);
  // The Vulkan backend (lavapipe here) runs every row whose types a shader stores; oneDNN the fp32 and
  // int8 rows; bf16/fp8/int4 rows only the reference kernels.
  EXPECT_HAS(conv.out, "in_t=f32 weight_t=f32 out_t=f32 acc_t=f32        PRO-FP       backends: vulkan,onednn,reference");
  EXPECT_HAS(conv.out, "in_t=i8 weight_t=i8 out_t=i32 acc_t=i32          PRO-INT      backends: vulkan,onednn,reference");
  EXPECT_HAS(conv.out, "in_t=i16 weight_t=i8 out_t=i48 acc_t=i48         EXT-INT16    backends: vulkan,reference");
  EXPECT_HAS(conv.out, "in_t=bf16 weight_t=bf16 out_t=bf16 acc_t=f32     EXT-BF16     backends: reference");
  Result erf = weft(d, "ops --op ERF");
  EXPECT_EQ(erf.rc, 0);
  EXPECT_EQ(erf.out.find("onednn"), std::string::npos) << erf.out;  // no oneDNN primitive for ERF
}

TEST(Cli, RunUnwritableOutput) {
  TempDir d;
  copy_example(d);
  Result r = weft(d, "run tiny_cnn.weft --input image=image.npy --output logits=no/such/dir/x.npy");
  EXPECT_EQ(r.rc, 1);
  EXPECT_HAS(r.err, "no/such/dir/x.npy");
  EXPECT_HAS(r.err, "[io]");
}

TEST(Cli, RunInvalidModel) {
  TempDir d;
  d.write("bad.weft", R"(graph @main(%a: f32[2,3]) -> (%t) {
  %t: f32[4] = ABS(%a)
  return %t
}
)");
  write_npy(d.file("a.npy"), Tensor::zeros({DType::kFp32, {2, 3}}));
  Result r = weft(d, "run bad.weft --input a=a.npy");
  EXPECT_EQ(r.rc, 1);
  EXPECT_HAS(r.err, "weft: error: ");
  EXPECT_HAS(r.err, "[verify]");
}

TEST(Cli, RunPrintsSummarisedValuesOfEveryOutput) {
  TempDir d;
  d.write("id.weft", kIdentityModel);
  write_identity_inputs(d);
  Result r = weft(d, "run id.weft --input x=x.npy --input flag=flag.npy");
  ASSERT_EQ(r.rc, 0) << r.all();
  // 30 elements: summarised to 3 edge items per axis.
  EXPECT_HAS(r.out,
             "%y: f32[2,15]\n[[-10.5,  -9.5,  -8.5, ...,   1.5,   2.5,   3.5],\n [  4.5,   5.5,   6.5, ...,  "
             "16.5,  17.5,  18.5]]");
  EXPECT_HAS(r.out, "min -10.5  max 18.5  mean 4");
  EXPECT_HAS(r.out, "%f: bool[3]\n[ True, False,  True]");
  // Outputs written with --output read back identically.
  Result w = weft(d, "run id.weft -i x=x.npy -i flag=flag.npy -o y=y.npy -o f=f.npy");
  ASSERT_EQ(w.rc, 0) << w.all();
  EXPECT_TRUE(read_npy(d.file("y.npy")).identical(read_npy(d.file("x.npy"))));
  EXPECT_TRUE(read_npy(d.file("f.npy")).identical(read_npy(d.file("flag.npy"))));
}

// The first Python that can import numpy ($WEFT_PYTHON, python3, then the system python3).
std::string find_python() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("WEFT_PYTHON"); env && *env) candidates.emplace_back(env);
  candidates.emplace_back("python3");
  candidates.emplace_back("/usr/bin/python3");
  for (const std::string& py : candidates) {
    if (std::system(("'" + py + "' -c 'import numpy' >/dev/null 2>&1").c_str()) == 0) return py;
  }
  return "";
}

TEST(Cli, ExampleIsCanonicalAndReproducible) {
  TempDir d;
  Result c = weft(d, "fmt --check '" + kExampleDir + "/tiny_cnn.weft'");
  EXPECT_EQ(c.rc, 0) << c.all();
  // Re-running the generator in a scratch copy gives the committed files byte for byte.
  std::string py = find_python();
  ASSERT_FALSE(py.empty()) << "no python3 with numpy found (tried $WEFT_PYTHON, python3, /usr/bin/python3); "
                              "numpy is a required test dependency: run scripts/setup.sh";
  fs::copy_file(kExampleDir + "/make_example.py", d.file("make_example.py"));
  std::string cmd = "'" + py + "' '" + d.file("make_example.py") + "' >'" + d.file("gen.log") + "' 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(d.file("gen.log"));
  for (const char* f :
       {"tiny_cnn.weft", "tiny_cnn.conv_w.npy", "tiny_cnn.fc_w.npy", "image.npy", "expected_logits.npy"}) {
    EXPECT_EQ(slurp(d.file(f)), slurp(kExampleDir + "/" + f))
        << f << " is out of date: re-run make_example.py";
  }
}

TEST(Cli, DemoScriptCommandsWork) {
  // scripts/demo.sh runs exactly these commands from the source tree.
  TempDir d;
  Result c = weft(d, "check '" + kExampleDir + "/tiny_cnn.weft'");
  EXPECT_EQ(c.rc, 0) << c.all();
  Result k = weft(d, "compile '" + kExampleDir + "/tiny_cnn.weft' -o tiny_cnn.vgf");
  EXPECT_EQ(k.rc, 0) << k.all();
  EXPECT_HAS(k.out, "tiny_cnn.vgf: VGF 0.4.3, 1 module");
  Result r = weft(d, "run tiny_cnn.vgf --input image='" + kExampleDir + "/image.npy' --print --stats");
  EXPECT_EQ(r.rc, 0) << r.all();
  EXPECT_HAS(r.out, "%logits: f32[1,10]");
  // With the default backends, fused kernels leave fewer intermediates; the reference backend
  // plans every node's result.
  EXPECT_HAS(r.out, "memory plan: arena ");
  Result ref = weft(d, "run tiny_cnn.vgf --input image='" + kExampleDir + "/image.npy' --stats --backend reference");
  EXPECT_EQ(ref.rc, 0) << ref.all();
  EXPECT_HAS(ref.out, "memory plan: arena 1280 bytes peak for 5 intermediates of 2384 bytes in all and kernel workspaces of up to 0 bytes");
}

TEST(Cli, VgfAndTextModelsGiveTheSameOutputs) {
  TempDir d;
  copy_example(d);
  ASSERT_EQ(weft(d, "compile tiny_cnn.weft -o m.vgf").rc, 0);
  ASSERT_EQ(weft(d, "run tiny_cnn.weft --input image=image.npy --output logits=a.npy").rc, 0);
  ASSERT_EQ(weft(d, "run m.vgf --input image=image.npy --output logits=b.npy").rc, 0);
  EXPECT_TRUE(read_npy(d.file("a.npy")).identical(read_npy(d.file("b.npy"))));
  // Running a .vgf without its inputs lists them, as for .weft.
  Result missing = weft(d, "run m.vgf");
  EXPECT_EQ(missing.rc, 1);
  EXPECT_HAS(missing.err, "missing input image");
  // A damaged container is refused before anything runs, naming the file.
  std::string bytes = slurp(d.file("m.vgf"));
  std::ofstream(d.file("cut.vgf"), std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  Result cut = weft(d, "run cut.vgf --input image=image.npy");
  EXPECT_EQ(cut.rc, 1);
  EXPECT_HAS(cut.err, "cut.vgf");
}

TEST(Cli, SpirvCompileDisassembleAssembleValidate) {
  TempDir d;
  copy_example(d);
  Result k = weft(d, "compile tiny_cnn.weft --emit spirv -o m.spv");
  ASSERT_EQ(k.rc, 0) << k.all();
  EXPECT_HAS(k.out, "2 graph constants");
  EXPECT_TRUE(fs::exists(d.file("m.spv.constants/0.npy")));
  Result dis = weft(d, "spirv dis m.spv -o m.spvasm");
  ASSERT_EQ(dis.rc, 0) << dis.all();
  std::string text = slurp(d.file("m.spvasm"));
  EXPECT_HAS(text, "OpExtInst %tensor_float_1x8x8x4 %tosa CONV2D");
  EXPECT_HAS(text, "OpGraphEntryPointARM");
  Result as = weft(d, "spirv as m.spvasm -o again.spv");
  ASSERT_EQ(as.rc, 0) << as.all();
  EXPECT_EQ(slurp(d.file("again.spv")), slurp(d.file("m.spv")));
  Result val = weft(d, "spirv val m.spv");
  EXPECT_EQ(val.rc, 0) << val.all();
  EXPECT_HAS(val.out, "m.spv: valid");
  // Remove the graph's last OpGraphSetOutputARM: the validator names the rule.
  std::string broken = text;
  size_t at = broken.find("OpGraphSetOutputARM");
  ASSERT_NE(at, std::string::npos);
  size_t line_start = broken.rfind('\n', at) + 1;
  broken.erase(line_start, broken.find('\n', at) + 1 - line_start);
  d.write("broken.spvasm", broken);
  Result bad = weft(d, "spirv val broken.spvasm");
  EXPECT_EQ(bad.rc, 1);
  EXPECT_HAS(bad.err, "error[graph.");
  Result usage = weft(d, "spirv frob m.spv");
  EXPECT_EQ(usage.rc, 2);
}

}  // namespace
}  // namespace weft
