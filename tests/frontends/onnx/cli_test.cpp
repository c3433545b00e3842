// The `weft` tool on ONNX models: import, run (.onnx directly and via the imported .weft), int64
// inputs, --shape, check and --list-ops. Runs the built binary (WEFT_CLI) in a temporary directory.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/run_cli.h"
#include "common/temp_dir.h"
#include "frontends/onnx/onnx_builder.h"
#include "weft/npy.h"

namespace weft {
namespace {

using namespace test::onnxb;

using Result = test::CliResult;
using test::slurp;

// Runs `weft <args>` in `dir`.
inline Result weft_cli(const test::TempDir& dir, const std::string& args) { return test::run_weft(dir, args); }

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "missing '" << (needle) << "' in: " << (haystack)

// A NumPy 1.0 file of little-endian int64 ('<i8'), written byte by byte.
void write_int64_npy(const std::string& path, const std::vector<int64_t>& shape, const std::vector<int64_t>& values) {
  std::string dims;
  for (int64_t d : shape) dims += std::to_string(d) + ", ";
  if (shape.size() > 1) dims.resize(dims.size() - 2);
  else if (shape.size() == 1) dims.resize(dims.size() - 1);
  std::string header = "{'descr': '<i8', 'fortran_order': False, 'shape': (" + dims + "), }";
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  for (int64_t v : values) {
    char b[8];
    std::memcpy(b, &v, 8);  // little-endian host
    bytes.append(b, 8);
  }
  std::ofstream(path, std::ios::binary) << bytes;
}

// x [1,2,4,4] -> Conv 3x3 pad 1 (3 channels) -> Relu -> y
struct ConvModel {
  Shape xs{1, 2, 4, 4}, ws{3, 2, 3, 3};
  std::vector<float> w = ramp(54, 401), b = ramp(3, 402);
  void save(const std::string& path) const {
    ModelBuilder mb(13);
    mb.input("x", kFloat, xs).init_f("w", ws, w).init_f("b", {3}, b).output("y");
    attr_ints(mb.node("Conv", {"x", "w", "b"}, {"c"}), "pads", {1, 1, 1, 1});
    mb.node("Relu", {"c"}, {"y"});
    mb.save(path);
  }
  std::vector<float> reference(const std::vector<float>& x) const {
    ConvParams p;
    p.pads = {1, 1, 1, 1};
    Shape ys;
    auto y = ref_conv(x, xs, w, ws, b, p, &ys);
    for (auto& v : y) v = std::max(v, 0.0f);
    return y;
  }
};

// ids int64 [3] -> Gather(emb [5,2]) -> y [3,2]
void save_embedding(const std::string& path) {
  ModelBuilder mb(13);
  mb.input("ids", kInt64, {3}).init_f("emb", {5, 2}, {0, 1, 10, 11, 20, 21, 30, 31, 40, 41}).output("y");
  mb.node("Gather", {"emb", "ids"}, {"y"});
  mb.save(path);
}

TEST(OnnxCli, ImportedWeftAndOnnxRunToTheSameBytes) {
  test::TempDir dir("weft_onnx_cli_test");
  ConvModel cm;
  cm.save(dir.file("m.onnx"));
  const auto x = ramp(32, 403);
  write_npy(dir.file("x.npy"), f32(cm.xs, x));

  Result r = weft_cli(dir, "import m.onnx -o m.weft");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_HAS(slurp(dir.file("m.weft")), "CONV2D");
  r = weft_cli(dir, "run m.weft --input x=x.npy --output y=y_weft.npy");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = weft_cli(dir, "run m.onnx --input x=x.npy --output y=y_onnx.npy");
  ASSERT_EQ(r.rc, 0) << r.err;

  const std::string a = slurp(dir.file("y_weft.npy")), b = slurp(dir.file("y_onnx.npy"));
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, b);
  Tensor y = read_npy(dir.file("y_onnx.npy"));
  expect_near(y, {1, 3, 4, 4}, cm.reference(x));

  // check verifies the .onnx model and exits 0.
  r = weft_cli(dir, "check m.onnx");
  EXPECT_EQ(r.rc, 0) << r.err;
}

TEST(OnnxCli, Int64InputIsConvertedAndRangeChecked) {
  test::TempDir dir("weft_onnx_cli_test");
  save_embedding(dir.file("emb.onnx"));
  write_int64_npy(dir.file("ids.npy"), {3}, {4, -5, 2});
  ASSERT_EQ(read_npy(dir.file("ids.npy")).to_ints(), (std::vector<int64_t>{4, -5, 2}));  // the file is well formed

  Result r = weft_cli(dir, "run emb.onnx --input ids=ids.npy --output y=y.npy");
  ASSERT_EQ(r.rc, 0) << r.err;
  expect_near(read_npy(dir.file("y.npy")), {3, 2}, {40, 41, 0, 1, 20, 21}, 0.0);

  write_int64_npy(dir.file("big.npy"), {3}, {1, int64_t{1} << 40, 2});
  r = weft_cli(dir, "run emb.onnx --input ids=big.npy --output y=y2.npy");
  EXPECT_EQ(r.rc, 1);
  EXPECT_HAS(r.err, "input 'ids'");
  EXPECT_HAS(r.err, "1099511627776");
  EXPECT_HAS(r.err, "int32 range");
}

// uint8 in and out: '|u1' files, carried as int8 bits inside; a signed file is refused by name.
TEST(OnnxCli, Uint8FilesInAndOut) {
  test::TempDir dir("weft_onnx_cli_test");
  {
    ModelBuilder mb(13);
    mb.input("x", kUint8, {4}).output("y", kUint8);
    mb.node("Add", {"x", "x"}, {"y"});
    mb.save(dir.file("u8.onnx"));
  }
  std::string header = "{'descr': '|u1', 'fortran_order': False, 'shape': (4,), }";
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size());
  bytes += '\0';
  bytes += header;
  for (int v : {1, 100, 200, 255}) bytes += static_cast<char>(v);
  std::ofstream(dir.file("x.npy"), std::ios::binary) << bytes;

  Result r = weft_cli(dir, "run u8.onnx --input x=x.npy --output y=y.npy");
  ASSERT_EQ(r.rc, 0) << r.err;
  Tensor y = read_npy_unsigned(dir.file("y.npy"), DType::kInt8);
  std::vector<int64_t> got;
  for (int64_t i = 0; i < 4; ++i) got.push_back(y.at_int(i) & 0xFF);
  EXPECT_EQ(got, (std::vector<int64_t>{2, 200, 144, 254}));  // modulo 256, as ONNX's uint8 Add
  std::ifstream f(dir.file("y.npy"), std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_HAS(text, "'descr': '|u1'");

  write_int64_npy(dir.file("wrong.npy"), {4}, {1, 2, 3, 4});
  r = weft_cli(dir, "run u8.onnx --input x=wrong.npy --output y=y2.npy");
  EXPECT_EQ(r.rc, 1);
  EXPECT_HAS(r.err, "x");
  EXPECT_HAS(r.err, "unsigned");
}

TEST(OnnxCli, ShapeOption) {
  test::TempDir dir("weft_onnx_cli_test");
  ModelBuilder mb(13);
  mb.input_dims("x", kFloat, {std::string("batch"), int64_t{3}}).output("y");
  mb.node("Neg", {"x"}, {"y"});
  mb.save(dir.file("dyn.onnx"));

  Result r = weft_cli(dir, "run dyn.onnx --shape bad");
  EXPECT_EQ(r.rc, 2);
  EXPECT_HAS(r.err, "--shape expects NAME=DIMS");
  r = weft_cli(dir, "run dyn.onnx --shape x=0x3");
  EXPECT_EQ(r.rc, 2);
  EXPECT_HAS(r.err, "is not a positive integer");

  r = weft_cli(dir, "import dyn.onnx -o d.weft");
  EXPECT_EQ(r.rc, 1);
  EXPECT_HAS(r.err, "--shape x=Nx3");
  r = weft_cli(dir, "import dyn.onnx -o d.weft --shape x=2x3 --shape y=2x3");
  EXPECT_EQ(r.rc, 1);
  EXPECT_HAS(r.err, "not an input of the model");

  write_npy(dir.file("x.npy"), f32({2, 3}, {1, -2, 3, -4, 5, -6}));
  r = weft_cli(dir, "run dyn.onnx --shape x=2x3 --input x=x.npy --output y=y.npy");
  ASSERT_EQ(r.rc, 0) << r.err;
  expect_near(read_npy(dir.file("y.npy")), {2, 3}, {-1, 2, -3, 4, -5, 6}, 0.0);
  r = weft_cli(dir, "check dyn.onnx --shape x=4x3");
  EXPECT_EQ(r.rc, 0) << r.err;
}

// --max-fold-bytes: a Range whose result is past the budget is refused, naming the option, and
// the same model runs once the budget is raised. The flag's value is checked.
TEST(OnnxCli, MaxFoldBytesOption) {
  test::TempDir dir("weft_onnx_cli_test");
  ModelBuilder mb(13);
  mb.input("x", kFloat, {1}).output("y");
  mb.init_f("a", {}, {0.0f}).init_f("b", {}, {4096.0f}).init_f("d", {}, {1.0f});
  mb.node("Range", {"a", "b", "d"}, {"r"}, "range");
  mb.node("Add", {"r", "x"}, {"y"});
  mb.save(dir.file("range.onnx"));
  Result r = weft_cli(dir, "check range.onnx --max-fold-bytes 1024");
  EXPECT_EQ(r.rc, 1);
  EXPECT_HAS(r.err, "range.onnx");
  EXPECT_HAS(r.err, "Range's result f32[4096]");
  EXPECT_HAS(r.err, "budget of 1024 bytes");
  r = weft_cli(dir, "check range.onnx --max-fold-bytes 16384");
  EXPECT_EQ(r.rc, 0) << r.err;
  r = weft_cli(dir, "import range.onnx -o - --max-fold-bytes 1k");
  EXPECT_EQ(r.rc, 2);
  EXPECT_HAS(r.err, "--max-fold-bytes expects a number of bytes");
}

TEST(OnnxCli, ListOpsAndUnsupportedModel) {
  test::TempDir dir("weft_onnx_cli_test");
  Result r = weft_cli(dir, "import --list-ops");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::string want;
  for (const std::string& op : onnx_supported_ops()) want += op + "\n";
  EXPECT_EQ(r.out, want);

  ModelBuilder mb(17);
  mb.input("x", kFloat, {4}).output("y", kInt64);
  mb.node("NonZero", {"x"}, {"y"}, "nz");
  mb.save(dir.file("nz.onnx"));
  r = weft_cli(dir, "import nz.onnx -o nz.weft");
  EXPECT_EQ(r.rc, 1);
  EXPECT_HAS(r.err, "nz (NonZero, domain ai.onnx, opset 17)");
}

// An If on a condition given at run time: `weft run` takes either branch; a VGF cannot carry the
// COND_IF (the error names the node and says to bind the condition), and with the condition bound
// the taken branch is inlined and the VGF is written.
TEST(OnnxCli, IfRunsBothWaysAndBindsForAVgf) {
  test::TempDir dir("weft_onnx_cli_test");
  ModelBuilder mb(13);
  mb.input("c", kBool, {}).input("x", kFloat, {2}).output("y");
  SubGraphBuilder then_b("then_body"), else_b("else_body");
  then_b.node("Add", {"x", "x"}, {"t"});
  then_b.output("t");
  else_b.node("Neg", {"x"}, {"e"});
  else_b.output("e");
  auto& n = mb.node("If", {"c"}, {"y"}, "pick");
  attr_graph(n, "then_branch", then_b.graph());
  attr_graph(n, "else_branch", else_b.graph());
  mb.save(dir.file("if.onnx"));
  write_npy(dir.file("x.npy"), f32({2}, {1.5f, -2}));
  write_npy(dir.file("yes.npy"), boolean({}, {1}));
  write_npy(dir.file("no.npy"), boolean({}, {0}));

  Result r = weft_cli(dir, "run if.onnx --input c=yes.npy --input x=x.npy --output y=a.npy");
  ASSERT_EQ(r.rc, 0) << r.err;
  expect_near(read_npy(dir.file("a.npy")), {2}, {3, -4});
  r = weft_cli(dir, "run if.onnx --input c=no.npy --input x=x.npy --output y=b.npy");
  ASSERT_EQ(r.rc, 0) << r.err;
  expect_near(read_npy(dir.file("b.npy")), {2}, {-1.5f, 2});

  r = weft_cli(dir, "compile if.onnx -o if.vgf");
  EXPECT_EQ(r.rc, 1);
  EXPECT_HAS(r.err, "node 'pick'");
  EXPECT_HAS(r.err, "COND_IF has no TOSA.001000.1 instruction");
  EXPECT_HAS(r.err, "--bind");
  r = weft_cli(dir, "compile if.onnx --bind c=no.npy -o if.vgf");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = weft_cli(dir, "run if.vgf --input x=x.npy --output y=v.npy");
  ASSERT_EQ(r.rc, 0) << r.err;
  expect_near(read_npy(dir.file("v.npy")), {2}, {-1.5f, 2});
}

}  // namespace
}  // namespace weft
