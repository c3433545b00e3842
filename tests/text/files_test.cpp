// save_weft / load_weft: large constants out of line in .npy files beside the .weft file,
// memory-mapped on load, kept (not rewritten) when unchanged, and file errors located in the text.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "weft/npy.h"
#include "weft/text.h"

namespace weft {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "weft_text_XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

ino_t inode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return st.st_ino;
}

Tensor ramp(TensorType t) {
  std::vector<double> v(static_cast<size_t>(t.num_elements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i % 251) * 0.5 - 60;
  return Tensor::from_doubles(t, v);
}

// A module with a large f32 weight (mapped on load), a constant with an awkward name, a small
// inline constant and a VARIABLE with a large initial value.
Module model() {
  GraphBuilder b;
  ValueId x = b.input("x", TensorType{DType::kFp32, {128, 256}});
  ValueId w = b.constant("w", ramp(TensorType{DType::kFp32, {128, 256}}));
  ValueId odd = b.constant("a/b:c", ramp(TensorType{DType::kInt8, {20}}));
  ValueId small = b.constant("small", ramp(TensorType{DType::kBf16, {2, 2}}));
  Node var;
  var.op = Op::VARIABLE;
  var.attrs = make_attrs(Op::VARIABLE, {{"name", std::string("state")},
                                        {"var_shape", std::vector<int64_t>{10, 10}},
                                        {"type", static_cast<int64_t>(VarType::kFp16)},
                                        {"initial_value", ramp(TensorType{DType::kFp16, {10, 10}})}});
  b.graph().add_node(std::move(var));
  auto y = b.op_multi(Op::ADD, {x, w}, {}, {"y"}, {TensorType{DType::kFp32, {128, 256}}});
  b.output(y[0]);
  b.output(odd);
  b.output(small);
  return Module(b.finish());
}

const Node& producer(const Graph& g, const std::string& value) {
  return g.node(g.value(g.value_id(value)).producer);
}

TEST(TextFiles, SaveWritesLargeConstantsBesideTheFileAndLoadMapsThem) {
  TempDir dir;
  Module m = model();
  save_weft(m, dir / "model.weft");
  const std::string text = read_file(dir / "model.weft");
  EXPECT_NE(text.find("%w: f32[128,256] = CONST() {values = file(\"model.w.npy\")}"), std::string::npos)
      << text;
  EXPECT_NE(text.find("%a/b:c: i8[20] = CONST() {values = file(\"model.a_b_c.npy\")}"), std::string::npos)
      << text;
  EXPECT_NE(text.find("initial_value = file(\"model.state.npy\")"), std::string::npos) << text;
  EXPECT_NE(text.find("%small: bf16[2,2] = CONST() {values = [-60, -59.5, -59, -58.5]}"), std::string::npos)
      << text;
  EXPECT_TRUE(fs::exists(dir / "model.w.npy"));
  EXPECT_TRUE(fs::exists(dir / "model.a_b_c.npy"));
  EXPECT_TRUE(fs::exists(dir / "model.state.npy"));
  EXPECT_TRUE(producer(m.main(), "w").data_file.empty());  // save_weft does not change the module

  Module loaded = load_weft(dir / "model.weft");
  const Node& w = producer(loaded.main(), "w");
  EXPECT_EQ(w.data_file, "model.w.npy");
  EXPECT_TRUE(w.attr_tensor("values").identical(producer(m.main(), "w").attr_tensor("values")));
  EXPECT_FALSE(w.attr_tensor("values").buffer().writable()) << "large constants are memory-mapped";
  EXPECT_TRUE(producer(loaded.main(), "a/b:c")
                  .attr_tensor("values")
                  .identical(producer(m.main(), "a/b:c").attr_tensor("values")));
  const Node& var = loaded.main().node(3);
  ASSERT_EQ(var.op, Op::VARIABLE);
  EXPECT_EQ(var.data_file, "model.state.npy");
  EXPECT_TRUE(var.attr_tensor("initial_value").identical(m.main().node(3).attr_tensor("initial_value")));
  // Printing the loaded module keeps the references: the text is unchanged.
  EXPECT_EQ(print_weft(loaded), text);
}

TEST(TextFiles, UnchangedFilesAreNotRewritten) {
  TempDir dir;
  save_weft(model(), dir / "model.weft");
  const ino_t before = inode_of(dir / "model.w.npy");
  Module loaded = load_weft(dir / "model.weft");
  save_weft(loaded, dir / "model.weft");
  EXPECT_EQ(inode_of(dir / "model.w.npy"), before);
  EXPECT_TRUE(producer(loaded.main(), "w")
                  .attr_tensor("values")
                  .identical(producer(model().main(), "w").attr_tensor("values")));

  // A changed constant with the same data_file is written again (through a new file, so the
  // mapping held by `loaded` stays intact).
  Module changed = load_weft(dir / "model.weft");
  Node& w = changed.main().mutable_node(changed.main().value(changed.main().value_id("w")).producer);
  w.attrs[0] = Tensor::zeros(TensorType{DType::kFp32, {128, 256}});
  save_weft(changed, dir / "model.weft");
  EXPECT_NE(inode_of(dir / "model.w.npy"), before);
  Module again = load_weft(dir / "model.weft");
  EXPECT_EQ(producer(again.main(), "w").attr_tensor("values").at_double(5), 0.0);
  EXPECT_EQ(producer(loaded.main(), "w").attr_tensor("values").at_double(5), -57.5);

  // Saving elsewhere writes the referenced file there too, under the same name.
  TempDir other;
  save_weft(loaded, other / "copy.weft");
  EXPECT_TRUE(fs::exists(other / "model.w.npy"));
  EXPECT_FALSE(fs::exists(other / "copy.w.npy"));
  Module copy = load_weft(other / "copy.weft");
  EXPECT_EQ(print_weft(copy), print_weft(loaded));
}

TEST(TextFiles, SameValueNameInTwoGraphsGetsTwoFiles) {
  TempDir dir;
  auto graph_with_w = [](const std::string& name, double scale) {
    GraphBuilder b(name);
    Tensor t = ramp(TensorType{DType::kInt16, {40}});
    if (scale != 1) t = Tensor::from_doubles(t.type(), std::vector<double>(40, scale));
    b.output(b.constant("w", t));
    return b.finish();
  };
  Module m(graph_with_w("main", 1));
  m.add_graph(graph_with_w("other", 3));
  save_weft(m, dir / "two.weft");
  const std::string text = read_file(dir / "two.weft");
  EXPECT_NE(text.find("file(\"two.w.npy\")"), std::string::npos) << text;
  EXPECT_NE(text.find("file(\"two.w_1.npy\")"), std::string::npos) << text;
  Module loaded = load_weft(dir / "two.weft");
  EXPECT_EQ(loaded.graphs()[1].node(0).attr_tensor("values").at_int(7), 3);
  EXPECT_EQ(loaded.graphs()[0].node(0).attr_tensor("values").at_int(7), -56);  // 7 * 0.5 - 60, truncated
}

TEST(TextFiles, InlineLimitIsAnOption) {
  TempDir dir;
  PrintOptions all_inline;
  all_inline.inline_limit = 1 << 20;
  save_weft(model(), dir / "big.weft", all_inline);
  EXPECT_EQ(read_file(dir / "big.weft").find("file("), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "big.w.npy"));
  Module loaded = load_weft(dir / "big.weft");
  EXPECT_TRUE(producer(loaded.main(), "w").data_file.empty());
  EXPECT_EQ(print_weft(loaded), read_file(dir / "big.weft"));
}

void expect_file_error(const std::string& dir, const std::string& text, const std::string& message_part) {
  const std::string path = (fs::path(dir) / "bad.weft").string();
  write_file(path, text);
  try {
    load_weft(path);
    ADD_FAILURE() << "loaded without error";
  } catch (const Error& e) {
    EXPECT_EQ(e.location().file, path) << e.what();
    EXPECT_EQ(e.location().line, 2) << e.what();
    EXPECT_EQ(e.location().column, 34) << e.what();  // the 'file' word
    EXPECT_NE(e.message().find(message_part), std::string::npos) << e.what();
  }
}

TEST(TextFiles, FileErrorsAreLocatedAtTheReference) {
  TempDir dir;
  write_npy(dir / "three.npy", ramp(TensorType{DType::kFp32, {3}}));
  write_npy(dir / "ints.npy", ramp(TensorType{DType::kInt32, {4}}));
  write_file(dir / "junk.npy", "not an npy file at all");
  auto text = [](const std::string& file) {
    return "graph @main() -> (%c) {\n  %c: f32[4] = CONST() {values = file(\"" + file +
           "\")}\n  return %c\n}\n";
  };
  expect_file_error(dir.path().string(), text("missing.npy"), "file(\"missing.npy\")");
  expect_file_error(dir.path().string(), text("three.npy"),
                    "file(\"three.npy\") holds f32[3] but %c is f32[4]");
  expect_file_error(dir.path().string(), text("ints.npy"),
                    "cannot read values of %c from file(\"ints.npy\")");
  expect_file_error(dir.path().string(), text("junk.npy"),
                    "cannot read values of %c from file(\"junk.npy\")");

  try {
    load_weft(dir / "nothing-here.weft");
    ADD_FAILURE() << "loaded a missing file";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_EQ(e.location().file, dir / "nothing-here.weft");
  }
}

TEST(TextFiles, ParseResolvesFilesAgainstBaseDir) {
  TempDir dir;
  write_npy(dir / "v.npy", ramp(TensorType{DType::kFp16, {2, 3}}));
  Module m = parse_weft(
      "graph @main() -> (%c) {\n  %c: f16[2,3] = CONST() {values = file(\"v.npy\")}\n  return %c\n}\n",
      "mem.weft", dir.path().string());
  const Node& c = m.main().node(0);
  EXPECT_EQ(c.data_file, "v.npy");
  EXPECT_EQ(c.attr_tensor("values").at_double(4), -58.0);
  // Small constants print inline even when they came from a file.
  EXPECT_NE(print_weft(m).find("values = [-60, -59.5, -59, -58.5, -58, -57.5]"), std::string::npos);
}

}  // namespace
}  // namespace weft
