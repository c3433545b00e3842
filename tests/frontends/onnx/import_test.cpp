// The ONNX frontend's public API: importing from bytes and files, --shape options, the list of
// supported operators, and every error path's code and message.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "common/temp_dir.h"
#include "frontends/onnx/onnx_builder.h"
#include "weft/npy.h"
#include "weft/runtime.h"

namespace weft {
namespace {

using namespace test::onnxb;

// Runs `f`, expecting a weft::Error with `code`; returns what() ("" when nothing was thrown).
template <class F>
std::string error_of(F&& f, ErrorCode code) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << error_code_name(e.code()) << ": " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no weft::Error was thrown";
  return "";
}

// Runs `f`; returns the what() of the weft::Error it throws, whatever its code ("" when none).
template <class F>
std::string what_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "missing '" << (needle) << "' in: " << (haystack)

// x [batch, 3, 4, 4] -> Relu -> y
ModelBuilder dynamic_model() {
  ModelBuilder mb(13);
  mb.input_dims("x", kFloat, {std::string("batch"), int64_t{3}, int64_t{4}, int64_t{4}}).output("y");
  mb.node("Relu", {"x"}, {"y"});
  return mb;
}

TEST(OnnxImport, SupportedOpsAreSortedAndCoverTheCore) {
  const auto ops = onnx_supported_ops();
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
  EXPECT_EQ(std::adjacent_find(ops.begin(), ops.end()), ops.end());
  for (const char* op : {"Conv", "ConvTranspose", "Gemm", "MatMul", "Resize", "QuantizeLinear", "Where", "Slice", "If",
                         "Loop", "Scan"})
    EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op;
  EXPECT_EQ(std::find(ops.begin(), ops.end(), "NonZero"), ops.end());
  EXPECT_EQ(std::find(ops.begin(), ops.end(), "SequenceConstruct"), ops.end());
}

TEST(OnnxImport, UnsupportedOperatorNamesNodeOpDomainOpset) {
  ModelBuilder mb(17);
  mb.input("x", kFloat, {2, 3}).output("y", kInt64);
  mb.node("NonZero", {"x"}, {"y"}, "find_nonzero");
  const std::string msg = error_of([&] { mb.import(); }, ErrorCode::kUnsupported);
  EXPECT_HAS(msg, "find_nonzero");
  EXPECT_HAS(msg, "NonZero");
  EXPECT_HAS(msg, "ai.onnx");
  EXPECT_HAS(msg, "opset 17");
  EXPECT_HAS(msg, "custom operator");
  EXPECT_HAS(msg, "--list-ops");
  EXPECT_HAS(msg, "test.onnx");
}

TEST(OnnxImport, UnsupportedOperatorWithoutNameUsesItsOutput) {
  ModelBuilder mb(13);
  mb.input("x", kFloat, {4}).output("y");
  mb.node("NonZero", {"x"}, {"y"});
  const std::string msg = error_of([&] { mb.import(); }, ErrorCode::kUnsupported);
  EXPECT_HAS(msg, "y (NonZero, domain ai.onnx, opset 13)");
}

TEST(OnnxImport, ForeignDomainIsNamed) {
  ModelBuilder mb(17);
  auto* os = mb.model().add_opset_import();
  os->set_domain("com.microsoft");
  os->set_version(1);
  mb.input("x", kFloat, {1, 4}).output("y");
  mb.node("FastGelu", {"x"}, {"y"}, "fg", "com.microsoft");
  const std::string msg = error_of([&] { mb.import(); }, ErrorCode::kUnsupported);
  EXPECT_HAS(msg, "com.microsoft");
  EXPECT_HAS(msg, "FastGelu");
  EXPECT_HAS(msg, "fg");
  EXPECT_HAS(msg, "not an ONNX standard operator");
  EXPECT_HAS(msg, "custom operator");
}

TEST(OnnxImport, DynamicDimensionNeedsShape) {
  const std::string msg = error_of([&] { dynamic_model().import(); }, ErrorCode::kInvalidArgument);
  EXPECT_HAS(msg, "graph input 'x'");
  EXPECT_HAS(msg, "'batch'");
  EXPECT_HAS(msg, "--shape x=Nx3x4x4");
}

TEST(OnnxImport, InputShapesResolveDynamicDimensions) {
  OnnxImportOptions opt;
  opt.input_shapes["x"] = {2, 3, 4, 4};
  Module m = dynamic_model().import(opt);
  const Graph& g = m.main();
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.value(g.inputs()[0]).type, (TensorType{DType::kFp32, {2, 3, 4, 4}}));
  EXPECT_EQ(g.value(g.outputs()[0]).type, (TensorType{DType::kFp32, {2, 3, 4, 4}}));
  std::vector<float> x = ramp(96, 301);
  std::vector<float> want(x);
  for (auto& v : want) v = std::max(v, 0.0f);
  auto out = run_module(std::move(m), {f32({2, 3, 4, 4}, x)});
  expect_near(out[0], {2, 3, 4, 4}, want, 0.0);
}

TEST(OnnxImport, ShapeForUnknownInputIsRejected) {
  OnnxImportOptions opt;
  opt.input_shapes["x"] = {1, 3, 4, 4};
  opt.input_shapes["image"] = {1, 3, 4, 4};
  const std::string msg = error_of([&] { dynamic_model().import(opt); }, ErrorCode::kInvalidArgument);
  EXPECT_HAS(msg, "--shape names 'image', which is not an input of the model");
}

TEST(OnnxImport, ShapeDisagreeingWithStaticDimIsRejected) {
  OnnxImportOptions opt;
  opt.input_shapes["x"] = {1, 5, 4, 4};
  std::string msg = error_of([&] { dynamic_model().import(opt); }, ErrorCode::kInvalidArgument);
  EXPECT_HAS(msg, "disagrees with the model's dimension 1 (3)");
  EXPECT_HAS(msg, "x");
  opt.input_shapes["x"] = {1, 3, 16};
  msg = error_of([&] { dynamic_model().import(opt); }, ErrorCode::kInvalidArgument);
  EXPECT_HAS(msg, "has rank 3 but the model declares rank 4");
}

TEST(OnnxImport, ShapeMayRestateStaticDims) {
  ModelBuilder mb(13);
  mb.input("x", kFloat, {1, 3}).output("y");
  mb.node("Neg", {"x"}, {"y"});
  OnnxImportOptions opt;
  opt.input_shapes["x"] = {1, 3};
  Module m = mb.import(opt);
  EXPECT_EQ(m.main().value(m.main().inputs()[0]).type.shape, (Shape{1, 3}));
}

TEST(OnnxImport, GarbageBytesAreAParseError) {
  const std::string msg = error_of([] { import_onnx_bytes("not an onnx model at all", "junk.onnx"); }, ErrorCode::kParse);
  EXPECT_HAS(msg, "junk.onnx");
  EXPECT_HAS(msg, "not a valid ONNX model");
}

TEST(OnnxImport, DoubleInputIsUnsupported) {
  ModelBuilder mb(13);
  mb.input("x", kDouble, {2}).output("y", kDouble);
  mb.node("Relu", {"x"}, {"y"});
  const std::string msg = error_of([&] { mb.import(); }, ErrorCode::kUnsupported);
  EXPECT_HAS(msg, "graph input 'x'");
  EXPECT_HAS(msg, "float64");
}

TEST(OnnxImport, MissingFileIsAnIoError) {
  test::TempDir dir("weft_onnx_test");
  const std::string path = dir.file("absent.onnx");
  std::string msg = error_of([&] { import_onnx(path); }, ErrorCode::kIo);
  EXPECT_HAS(msg, path);
  msg = error_of([&] { Model::load(path); }, ErrorCode::kIo);
  EXPECT_HAS(msg, "absent.onnx");
}

TEST(OnnxImport, NoDefaultOpsetIsRejected) {
  ModelBuilder mb(13);
  mb.model().mutable_opset_import(0)->set_domain("com.example");
  mb.input("x", kFloat, {2}).output("y");
  mb.node("Relu", {"x"}, {"y"});
  const std::string msg = error_of([&] { mb.import(); }, ErrorCode::kInvalidArgument);
  EXPECT_HAS(msg, "no opset of the default ONNX domain");
}

TEST(OnnxImport, OutputNotProducedIsNamed) {
  ModelBuilder mb(13);
  mb.input("x", kFloat, {2}).output("nowhere");
  mb.node("Relu", {"x"}, {"y"});
  const std::string msg = error_of([&] { mb.import(); }, ErrorCode::kInvalidArgument);
  EXPECT_HAS(msg, "graph output 'nowhere' is not a graph input, an initializer or an output of a node");
}

TEST(OnnxImport, FromFileAndModelLoadWithShapes) {
  test::TempDir dir("weft_onnx_test");
  const std::string path = dir.file("dyn.onnx");
  dynamic_model().save(path);
  OnnxImportOptions opt;
  opt.input_shapes["x"] = {1, 3, 4, 4};
  Module m = import_onnx(path, opt);
  EXPECT_EQ(m.main().value(m.main().inputs()[0]).type.shape, (Shape{1, 3, 4, 4}));
  // read_model / Model::load pass LoadOptions::onnx through.
  LoadOptions load;
  load.onnx = opt;
  auto model = Model::load(path, load);
  ASSERT_EQ(model->inputs().size(), 1u);
  EXPECT_EQ(model->inputs()[0].name, "x");
  EXPECT_EQ(model->inputs()[0].type.shape, (Shape{1, 3, 4, 4}));
  Context ctx(model);
  std::vector<float> x(48, -1.0f);
  x[5] = 2.5f;
  auto out = ctx.run({f32({1, 3, 4, 4}, x)});
  std::vector<float> want(48, 0.0f);
  want[5] = 2.5f;
  expect_near(out[0], {1, 3, 4, 4}, want, 0.0);
  // Without the shape the file's error names the file and the input.
  const std::string msg = error_of([&] { read_model(path); }, ErrorCode::kInvalidArgument);
  EXPECT_HAS(msg, "dyn.onnx");
  EXPECT_HAS(msg, "--shape x=Nx3x4x4");
}

TEST(OnnxImport, SliceEndsBeyondInt32UseExactInt64Values) {
  // int64 constants are carried as int32, but operands read at import time (Slice's ends here)
  // keep their exact int64 values: INT64_MAX means "to the end".
  ModelBuilder mb(13);
  mb.input("x", kFloat, {2, 6}).output("y");
  mb.init_i64("starts", {1}, {1}).init_i64("ends", {1}, {INT64_MAX}).init_i64("axes", {1}, {1});
  mb.node("Slice", {"x", "starts", "ends", "axes"}, {"y"});
  std::vector<float> x(12);
  for (int i = 0; i < 12; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i);
  auto out = run_module(mb.import(), {f32({2, 6}, x)});
  expect_near(out[0], {2, 5}, {1, 2, 3, 4, 5, 7, 8, 9, 10, 11}, 0.0);
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// An initializer with a declared shape and raw bytes, used by an Identity.
test::onnxb::ModelBuilder declared(const std::vector<int64_t>& dims, const std::string& raw) {
  test::onnxb::ModelBuilder mb(13);
  mb.output("y");
  auto* t = mb.graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(test::onnxb::kFloat);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(raw);
  mb.node("Identity", {"w"}, {"y"});
  return mb;
}

// A declared size is checked against the data present before anything is allocated: a 16-byte
// initializer that claims [16384, 16384] (1 GiB) or [65536, 65536] (16 GiB) is refused at once.
TEST(OnnxImportHostile, DeclaredSizesAreCheckedBeforeAllocating) {
  test::TempDir dir("weft_onnx_hostile");
  declared({16384, 16384}, std::string(16, '\0')).save(dir.file("bomb.onnx"));
  std::string msg = what_of([&] { import_onnx(dir.file("bomb.onnx")); });
  EXPECT_HAS(msg, "initializer 'w': holds 4 values, its shape [16384,16384] needs 268435456");
  declared({65536, 65536}, std::string(16, '\0')).save(dir.file("bomb2.onnx"));
  msg = what_of([&] { import_onnx(dir.file("bomb2.onnx")); });
  EXPECT_HAS(msg, "has more than 2147483647 elements");
}

// External data comes from inside the model's folder only (ONNX Runtime's rule).
TEST(OnnxImportHostile, ExternalDataIsConfinedToTheModelsFolder) {
  test::TempDir dir("weft_onnx_hostile");
  std::filesystem::create_directories(dir.file("model"));
  {
    std::ofstream(dir.file("secret.bin"), std::ios::binary) << std::string(16, 'x');
    std::ofstream(dir.file("model/w.bin"), std::ios::binary) << std::string(16, '\0');
  }
  std::filesystem::create_symlink(dir.file("secret.bin"), dir.file("model/link.bin"));
  auto model_with = [&](const std::string& location, const std::string& name) {
    test::onnxb::ModelBuilder mb = declared({4}, "");
    onnx::TensorProto* t = mb.graph()->mutable_initializer(0);
    t->clear_raw_data();
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* kv = t->add_external_data();
    kv->set_key("location");
    kv->set_value(location);
    mb.save(dir.file("model/" + name));
    return dir.file("model/" + name);
  };
  for (const std::string& bad : {std::string("../secret.bin"), dir.file("secret.bin"), std::string("link.bin"),
                                 std::string("sub/../../secret.bin")}) {
    SCOPED_TRACE(bad);
    std::string msg;
    try {
      import_onnx(model_with(bad, "bad.onnx"));
    } catch (const Error& e) {
      msg = e.what();
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    }
    EXPECT_HAS(msg, "is not a file inside the model's folder");
  }
  Module ok = import_onnx(model_with("w.bin", "ok.onnx"));
  EXPECT_EQ(ok.main().nodes().size(), 1u);
  // Offsets and lengths that are not numbers, or that run past the file, are errors.
  test::onnxb::ModelBuilder mb = declared({4}, "");
  onnx::TensorProto* t = mb.graph()->mutable_initializer(0);
  t->clear_raw_data();
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = t->add_external_data();
  kv->set_key("location");
  kv->set_value("w.bin");
  kv = t->add_external_data();
  kv->set_key("offset");
  kv->set_value("12abc");
  mb.save(dir.file("model/off.onnx"));
  std::string msg = what_of([&] { import_onnx(dir.file("model/off.onnx")); });
  EXPECT_HAS(msg, "'offset' must be a non-negative decimal number");
  kv->set_value("8");
  mb.save(dir.file("model/off.onnx"));
  msg = what_of([&] { import_onnx(dir.file("model/off.onnx")); });
  EXPECT_HAS(msg, "external data holds 8 bytes, its shape [4] needs 16");
}

// External data is mapped, not read: a tensor stored as-is at an aligned offset uses the file's
// pages; a misaligned one is copied. Backends that reorder a mapped weight release its pages,
// and the model still computes from it (they are read from the file again when touched).
TEST(OnnxImport, ExternalDataIsMappedAndReleasedAfterReorder) {
  constexpr int64_t M = 4, K = 256, N = 512;
  std::vector<float> w(static_cast<size_t>(K * N)), w2(static_cast<size_t>(N)), x(static_cast<size_t>(M * K));
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 7919) % 23) / 23.0f - 0.5f;
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = static_cast<float>(i % 7) * 0.125f;
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 11) / 11.0f;
  test::TempDir dir("weft_onnx_test");
  {
    std::ofstream f(dir.file("weights.bin"), std::ios::binary);
    f << std::string(4096, '\0');
    f.write(reinterpret_cast<const char*>(w.data()), static_cast<std::streamsize>(w.size() * sizeof(float)));
    f << std::string(2, '\0');  // w2 at an offset that is not a multiple of 4
    f.write(reinterpret_cast<const char*>(w2.data()), static_cast<std::streamsize>(w2.size() * sizeof(float)));
  }
  ModelBuilder mb(13);
  mb.input("x", kFloat, {M, K}).output("y");
  auto external = [&](const std::string& name, std::vector<int64_t> dims, size_t offset, size_t bytes) {
    auto* t = mb.graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(kFloat);
    for (int64_t d : dims) t->add_dims(d);
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    for (auto [k, v] : {std::pair<std::string, std::string>{"location", "weights.bin"},
                        {"offset", std::to_string(offset)}, {"length", std::to_string(bytes)}}) {
      auto* kv = t->add_external_data();
      kv->set_key(k);
      kv->set_value(v);
    }
  };
  const size_t w_bytes = w.size() * sizeof(float);
  external("w", {K, N}, 4096, w_bytes);
  external("w2", {N}, 4096 + w_bytes + 2, w2.size() * sizeof(float));
  mb.node("MatMul", {"x", "w"}, {"h"});
  mb.node("Add", {"h", "w2"}, {"y"});
  const std::string path = dir.file("ext.onnx");
  mb.save(path);

  const Module m = import_onnx(path);
  int mapped = 0, copied = 0;
  for (const Node& n : m.main().nodes()) {
    if (n.op != Op::CONST) continue;
    const Tensor& t = n.attr_tensor("values");
    if (t.num_elements() == K * N) mapped += t.buffer().file_backed();
    if (t.num_elements() == N) copied += !t.buffer().file_backed() && t.buffer().writable();
  }
  EXPECT_EQ(mapped, 1) << "the aligned weight was not used from the mapping";
  EXPECT_EQ(copied, 1) << "the misaligned weight was not copied";

  auto model = Model::load(path);
  Context ctx(model);
  std::vector<float> want(static_cast<size_t>(M * N));
  for (int64_t r = 0; r < M; ++r)
    for (int64_t c = 0; c < N; ++c) {
      double acc = w2[static_cast<size_t>(c)];
      for (int64_t k = 0; k < K; ++k)
        acc += double(x[static_cast<size_t>(r * K + k)]) * w[static_cast<size_t>(k * N + c)];
      want[static_cast<size_t>(r * N + c)] = static_cast<float>(acc);
    }
  for (int run = 0; run < 2; ++run) expect_near(ctx.run({f32({M, K}, x)})[0], {M, N}, want, 1e-4);
  // The reference interpreter reads the constant in place after the release: the same bytes.
  auto exact = Model::load(path, LoadOptions{.backend = {.backends = {"reference"}}});
  Context ref(exact);
  expect_near(ref.run({f32({M, K}, x)})[0], {M, N}, want, 1e-4);
}

// Embedded initializers of 1 MiB and more are reloadable: a model loaded from the file drops the
// bytes of those that no kernel reads when it runs once the backends have copied them (weights
// reordered by oneDNN), reads them back from the file for another thread count and for module(),
// keeps those a kernel reads in place, and refuses (naming the file) when the file changed since.
TEST(OnnxImport, EmbeddedWeightsLeaveMemoryOnceCopiedAndComeBackFromTheFile) {
  constexpr int64_t M = 4, K = 512, N = 768;
  std::vector<float> w(static_cast<size_t>(K * N)), u(w.size()), x(static_cast<size_t>(M * K)), v(w.size());
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 7919) % 23) / 23.0f - 0.5f;
  for (size_t i = 0; i < u.size(); ++i) u[i] = static_cast<float>(i % 13) * 0.25f;
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 11) / 11.0f;
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 5);
  auto raw = [](const std::vector<float>& f) { return std::string(reinterpret_cast<const char*>(f.data()), f.size() * 4); };
  ModelBuilder mb(13);
  mb.input("x", kFloat, {M, K}).input("v", kFloat, {K, N}).output("y").output("z");
  for (auto [name, data] : {std::pair<const char*, const std::vector<float>*>{"w", &w}, {"u", &u}}) {
    auto* t = mb.graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(kFloat);
    t->add_dims(K);
    t->add_dims(N);
    t->set_raw_data(raw(*data));
  }
  mb.node("MatMul", {"x", "w"}, {"y"});  // w: reordered by oneDNN, then read by nobody
  mb.node("Add", {"v", "u"}, {"z"});     // u: read in place by every run
  test::TempDir dir("weft_onnx_test");
  const std::string path = dir.file("embedded.onnx");
  mb.save(path);

  std::vector<float> want_y(static_cast<size_t>(M * N)), want_z(v.size());
  for (int64_t r = 0; r < M; ++r)
    for (int64_t c = 0; c < N; ++c) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += double(x[static_cast<size_t>(r * K + k)]) * w[static_cast<size_t>(k * N + c)];
      want_y[static_cast<size_t>(r * N + c)] = static_cast<float>(acc);
    }
  for (size_t i = 0; i < v.size(); ++i) want_z[i] = v[i] + u[i];
  const LoadOptions cpu{.backend = {.backends = {"onednn", "reference"}}};
  auto check = [&](const std::shared_ptr<const Model>& model, int threads) {
    Context ctx(model, {.threads = threads});
    auto out = ctx.run({f32({M, K}, x), f32({K, N}, v)});
    expect_near(out[0], {M, N}, want_y, 1e-4);
    expect_near(out[1], {K, N}, want_z, 0);
  };

  auto model = Model::load(path, cpu);
  EXPECT_EQ(model->memory_stats().released_constant_bytes, w.size() * 4) << "only w leaves memory";
  check(model, 1);
  check(model, 2);  // prepared from w read back from the file
  check(model, 1);
  // module() brings every constant back, as the file holds it, and keeps them.
  int seen = 0;
  for (const Node& n : model->module().main().nodes()) {
    if (n.op != Op::CONST || n.attr_tensor("values").num_elements() != K * N) continue;
    const Tensor& t = n.attr_tensor("values");
    const bool is_w = std::memcmp(t.bytes(), w.data(), 64) == 0;
    EXPECT_EQ(std::memcmp(t.bytes(), (is_w ? w : u).data(), t.byte_size()), 0) << "constant " << n.outputs.at(0);
    ++seen;
  }
  EXPECT_EQ(seen, 2);
  check(model, 3);

  // A module given by the caller keeps its constants: the caller may read them.
  EXPECT_EQ(Model::from_module(import_onnx(path), cpu.backend)->memory_stats().released_constant_bytes, 0u);

  // On Vulkan both constants are uploaded once and never read from the host again: both leave.
  bool vulkan = false;
  for (const BackendInfo& b : backends()) vulkan |= b.name == "vulkan" && b.unavailable.empty();
  if (vulkan) {
    auto on_gpu = Model::load(path, {.backend = {.backends = {"vulkan", "reference"}}});
    EXPECT_EQ(on_gpu->memory_stats().released_constant_bytes, 2 * w.size() * 4) << "w and u leave memory";
    check(on_gpu, 1);
    check(on_gpu, 2);  // prepared again from both read back from the file
  } else {
    std::cout << "[ INFO     ] no Vulkan device: the Vulkan backend's release is not checked\n";
  }

  // The file changes after the load: the dropped bytes cannot come back, and nothing reads others.
  auto before = Model::load(path, cpu);
  ASSERT_GT(before->memory_stats().released_constant_bytes, 0u);
  std::vector<float> w2 = w;
  w2[0] += 1;
  ModelBuilder changed = mb;
  changed.graph()->mutable_initializer(0)->set_raw_data(raw(w2));
  changed.save(path);
  std::filesystem::last_write_time(path, std::filesystem::last_write_time(path) + std::chrono::seconds(5));
  std::string msg = error_of([&] { Context c(before, {.threads = 2}); }, ErrorCode::kIo);
  EXPECT_HAS(msg, path);
  EXPECT_HAS(msg, "changed since the model was loaded");
  msg = error_of([&] { (void)before->module(); }, ErrorCode::kIo);
  EXPECT_HAS(msg, "changed since the model was loaded");
  check(before, 1);  // its kernels hold their own copies

  // A file protobuf reads by merging two graph fields (the second one empty here): the walk that
  // finds the bytes' places does not guess, and nothing is released.
  const std::string merged = dir.file("merged.onnx");
  {
    std::ofstream f(merged, std::ios::binary);
    f << mb.bytes() << std::string("\x3a\x00", 2);  // field 7 (graph), length 0
  }
  auto two_graphs = Model::load(merged, cpu);
  EXPECT_EQ(two_graphs->memory_stats().released_constant_bytes, 0u);
  check(two_graphs, 1);
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

int count_ops(const Module& m, Op op) {
  return static_cast<int>(std::count_if(m.main().nodes().begin(), m.main().nodes().end(), [&](const Node& n) { return n.op == op; }));
}

// ConstantOfShape(shape) with a float value, its shape an int64 initializer.
test::onnxb::ModelBuilder constant_of_shape(const std::vector<int64_t>& dims, float value) {
  test::onnxb::ModelBuilder mb(13);
  mb.output("y");
  mb.init_i64("s", {static_cast<int64_t>(dims.size())}, dims);
  auto& n = mb.node("ConstantOfShape", {"s"}, {"y"}, "fill");
  auto* a = n.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(test::onnxb::kFloat);
  a->mutable_t()->add_dims(1);
  a->mutable_t()->add_float_data(value);
  return mb;
}

// Constant folding has a budget: within it a ConstantOfShape is a constant, past it the same
// values come from a run-time TILE of one element, so a tiny file cannot make `weft check`
// allocate what it asks for.
TEST(OnnxImportHostile, ConstantOfShapePastTheFoldingBudgetStaysARunTimeNode) {
  Module folded = constant_of_shape({64, 64}, 1.5f).import();
  EXPECT_EQ(count_ops(folded, Op::TILE), 0);
  OnnxImportOptions small;
  small.max_folded_bytes = 1024;
  Module tiled = constant_of_shape({64, 64}, 1.5f).import(small);
  EXPECT_EQ(count_ops(tiled, Op::TILE), 1);
  auto a = test::onnxb::run_module(std::move(folded), {});
  auto b = test::onnxb::run_module(std::move(tiled), {});
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].shape(), (Shape{64, 64}));
  EXPECT_EQ(b[0].shape(), (Shape{64, 64}));
  EXPECT_EQ(a[0].to_doubles(), std::vector<double>(4096, 1.5));
  EXPECT_EQ(b[0].to_doubles(), a[0].to_doubles());
  // 64 GiB asked for by a 60-byte model: imported (and checked) without folding it.
  Module huge = constant_of_shape({65536, 65536, 4}, 0.0f).import();
  EXPECT_EQ(count_ops(huge, Op::TILE), 1);
}

// Expand of a constant goes through the same budget.
TEST(OnnxImportHostile, ExpandPastTheFoldingBudgetStaysARunTimeNode) {
  test::onnxb::ModelBuilder mb(13);
  mb.output("y");
  mb.init_f("x", {1}, {2.0f}).init_i64("s", {2}, {65536, 65536});
  mb.node("Expand", {"x", "s"}, {"y"});
  Module m = mb.import();
  EXPECT_EQ(count_ops(m, Op::TILE), 1);
  EXPECT_EQ(m.main().value(m.main().outputs()[0]).type.shape, (Shape{65536, 65536}));
}

// Range has no TOSA operator: a result past the budget is refused, naming the budget and its
// option; lengths that overflow are refused without undefined arithmetic.
TEST(OnnxImportHostile, RangePastTheFoldingBudgetIsRefused) {
  auto range = [](int64_t start, int64_t limit, int64_t delta) {
    test::onnxb::ModelBuilder mb(13);
    mb.output("y", test::onnxb::kInt64);
    mb.init_i64("a", {}, {start}).init_i64("b", {}, {limit}).init_i64("d", {}, {delta});
    mb.node("Range", {"a", "b", "d"}, {"y"}, "r");
    return mb;
  };
  std::string msg = error_of([&] { range(0, int64_t{1} << 40, 1).import(); }, ErrorCode::kUnsupported);
  EXPECT_HAS(msg, "Range's result");
  EXPECT_HAS(msg, "past the constant-folding budget of 268435456 bytes");
  EXPECT_HAS(msg, "--max-fold-bytes");
  EXPECT_HAS(msg, "r (Range");
  msg = error_of([&] { range(INT64_MIN, INT64_MAX, 1).import(); }, ErrorCode::kInvalidArgument);
  EXPECT_HAS(msg, "more than 2^62 elements");
  Module ok = range(0, 10, 3).import();
  auto out = test::onnxb::run_module(std::move(ok), {});
  EXPECT_EQ(out[0].to_ints(), (std::vector<int64_t>{0, 3, 6, 9}));
}

// A value that stayed a run-time node because of the budget, and is then needed at import time,
// says so in the error.
TEST(OnnxImportHostile, CompileTimeValuesLeftUnfoldedNameTheBudget) {
  test::onnxb::ModelBuilder mb(13);
  mb.input("x", test::onnxb::kFloat, {1}).output("y");
  mb.init_i64("s", {1}, {4});
  auto& n = mb.node("ConstantOfShape", {"s"}, {"ones"}, "ones");
  auto* a = n.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(test::onnxb::kInt64);
  a->mutable_t()->add_dims(1);
  a->mutable_t()->add_int64_data(1);
  mb.node("Reshape", {"x", "ones"}, {"y"}, "reshape");
  OnnxImportOptions tiny;
  tiny.max_folded_bytes = 8;
  const std::string msg = error_of([&] { mb.import(tiny); }, ErrorCode::kUnsupported);
  EXPECT_HAS(msg, "must be known when the model is compiled");
  EXPECT_HAS(msg, "constant folding stopped where node 'ones");
  EXPECT_HAS(msg, "budget of 8 bytes");
  // With the default budget the same model imports.
  EXPECT_NO_THROW(mb.import());
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// Found by fuzz/onnx_fuzz.cpp: a node reading a name nothing defines crashed ONNX's own shape
// inference (a segfault in `weft check` on a 60-byte file). The structure is now checked first.
TEST(OnnxImportHostile, UndefinedValuesAreErrorsBeforeShapeInference) {
  {
    test::onnxb::ModelBuilder mb(15);
    mb.output("y", test::onnxb::kInt64);
    mb.node("Shape", {"x"}, {"y"});
    const std::string msg = error_of([&] { mb.import(); }, ErrorCode::kInvalidArgument);
    EXPECT_HAS(msg, "test.onnx: node 'y (Shape)': input 'x' is not a graph input, an initializer or an output of an earlier node");
  }
  {  // Out of topological order.
    test::onnxb::ModelBuilder mb(15);
    mb.input("x", test::onnxb::kFloat, {2}).output("z");
    mb.node("Neg", {"y"}, {"z"}, "second");
    mb.node("Neg", {"x"}, {"y"}, "first");
    EXPECT_HAS(error_of([&] { mb.import(); }, ErrorCode::kInvalidArgument), "node 'second (Neg)': input 'y'");
  }
  {  // A node without an op_type.
    test::onnxb::ModelBuilder mb(15);
    mb.input("x", test::onnxb::kFloat, {2}).output("y");
    mb.node("", {"x"}, {"y"}, "nameless");
    EXPECT_HAS(error_of([&] { mb.import(); }, ErrorCode::kInvalidArgument), "node 'nameless ()': the node has no op_type");
  }
  {  // A graph output nothing produces.
    test::onnxb::ModelBuilder mb(15);
    mb.input("x", test::onnxb::kFloat, {2}).output("y").output("w");
    mb.node("Neg", {"x"}, {"y"});
    EXPECT_HAS(error_of([&] { mb.import(); }, ErrorCode::kInvalidArgument), "graph output 'w' is not a graph input");
  }
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// Found by the fuzzer: per-channel operators on an input without a channel dimension wrote past a
// shape vector. They are errors naming the rule now.
TEST(OnnxImportHostile, PerChannelOperatorsNeedAChannelDimension) {
  test::onnxb::ModelBuilder mb(13);
  mb.input("x", test::onnxb::kFloat, {4}).output("y");
  mb.init_f("s", {1}, {1.0f}).init_f("b", {1}, {0.0f});
  mb.node("InstanceNormalization", {"x", "s", "b"}, {"y"}, "norm");
  EXPECT_HAS(error_of([&] { mb.import(); }, ErrorCode::kInvalidArgument), "has no channel dimension");
  test::onnxb::ModelBuilder wrong(13);
  wrong.input("x", test::onnxb::kFloat, {1, 3, 2, 2}).output("y");
  wrong.init_f("s", {2}, {1.0f, 1.0f}).init_f("b", {2}, {0.0f, 0.0f});
  wrong.node("InstanceNormalization", {"x", "s", "b"}, {"y"}, "norm");
  EXPECT_HAS(error_of([&] { wrong.import(); }, ErrorCode::kInvalidArgument), "has 2 values for 3 channels");
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// Reproducers of what fuzz/onnx_fuzz.cpp found (each crashed or hit undefined behaviour under
// ASan+UBSan before): each is now an error naming the node and the rule.
TEST(OnnxImportHostile, FuzzerReproducersAreErrors) {
  {  // A node with fewer inputs than its schema requires (variadic Sum with none).
    test::onnxb::ModelBuilder mb(13);
    mb.output("y");
    mb.node("Sum", {}, {"y"}, "sum");
    EXPECT_HAS(error_of([&] { mb.import(); }, ErrorCode::kInvalidArgument), "the node breaks ONNX's schema of Sum at opset 13");
    // At an opset newer than the linked libonnx knows, the lowering's own check.
    test::onnxb::ModelBuilder newer(99);
    newer.output("y");
    newer.node("Sum", {}, {"y"}, "sum");
    EXPECT_HAS(error_of([&] { newer.import(); }, ErrorCode::kInvalidArgument), "needs at least one input");
  }
  {  // An axis of a scalar.
    test::onnxb::ModelBuilder mb(13);
    mb.output("y");
    mb.init_f("x", {}, {1.0f});
    attr_i(mb.node("Split", {"x"}, {"y"}, "split"), "axis", 0);
    EXPECT_HAS(error_of([&] { mb.import(); }, ErrorCode::kInvalidArgument), "the input is a scalar (rank 0) and has no axes");
  }
  {  // MatMul of a scalar.
    test::onnxb::ModelBuilder mb(13);
    mb.input("a", test::onnxb::kFloat, {}).input("b", test::onnxb::kFloat, {2, 2}).output("y");
    mb.node("MatMul", {"a", "b"}, {"y"}, "mm");
    EXPECT_HAS(error_of([&] { mb.import(); }, ErrorCode::kInvalidArgument), "MatMul operands must have rank >= 1");
  }
  {  // ConvTranspose attributes of the wrong length.
    test::onnxb::ModelBuilder mb(13);
    mb.input("x", test::onnxb::kFloat, {1, 1, 2, 2}).output("y");
    mb.init_f("w", {1, 1, 1, 1}, {1.0f});
    attr_ints(mb.node("ConvTranspose", {"x", "w"}, {"y"}, "deconv"), "strides", {2});
    EXPECT_HAS(error_of([&] { mb.import(); }, ErrorCode::kInvalidArgument), "strides has 1 values; a 2-D ConvTranspose needs 2");
  }
  {  // A Reshape target whose element count overflows int64.
    test::onnxb::ModelBuilder mb(13);
    mb.input("x", test::onnxb::kFloat, {4}).output("y");
    mb.init_i64("s", {2}, {220, INT64_MAX});
    mb.node("Reshape", {"x", "s"}, {"y"}, "reshape");
    EXPECT_HAS(error_of([&] { mb.import(); }, ErrorCode::kInvalidArgument), "has more than 2^62 elements");
  }
}

TEST(OnnxImport, InputsFeedingShapesCanBeBoundAtCompileTime) {
  // Reshape's shape given as a graph input: the import says how to bind it, and with the input
  // bound (--bind shape=FILE.npy) the model compiles with one input left.
  ModelBuilder mb(17);
  mb.input("x", kFloat, {2, 6}).input("shape", kInt64, {2}).output("y", kFloat);
  mb.node("Reshape", {"x", "shape"}, {"y"}, "reshape");
  try {
    mb.import();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.location().operand, "shape");
    EXPECT_HAS(std::string(e.what()), "--bind shape=FILE.npy");
  }
  OnnxImportOptions o;
  o.bindings["shape"] = Tensor::from_ints({DType::kInt48, {2}}, std::vector<int64_t>{3, 4});
  Module m = mb.import(o);
  ASSERT_EQ(m.main().inputs().size(), 1u);
  EXPECT_EQ(m.main().value(m.main().outputs()[0]).type.shape, (Shape{3, 4}));
  std::vector<double> xs(12);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<double>(i);
  auto out = run_module(m, {Tensor::from_doubles({DType::kFp32, {2, 6}}, xs)});
  EXPECT_EQ(out[0].to_doubles(), xs);

  // Wrong shape, wrong kind of value, unknown name: errors that say which.
  OnnxImportOptions bad;
  bad.bindings["shape"] = Tensor::from_ints({DType::kInt48, {3}}, std::vector<int64_t>{3, 2, 2});
  EXPECT_HAS(error_of([&] { mb.import(bad); }, ErrorCode::kInvalidArgument), "the value has shape [3]");
  bad.bindings["shape"] = Tensor::from_doubles({DType::kFp32, {2}}, std::vector<double>{3, 4});
  EXPECT_HAS(error_of([&] { mb.import(bad); }, ErrorCode::kInvalidArgument), "a f32 value cannot be bound to an ONNX int64 input");
  OnnxImportOptions unknown;
  unknown.bindings["shap"] = Tensor::from_ints({DType::kInt48, {2}}, std::vector<int64_t>{3, 4});
  EXPECT_HAS(error_of([&] { mb.import(unknown); }, ErrorCode::kNotFound), "its inputs are: x, shape");
}

TEST(OnnxImport, Float64IsNarrowedOnlyWhenAsked) {
  ModelBuilder mb(17);
  mb.input("x", kDouble, {3}).output("y", kDouble);
  auto* c = mb.graph()->add_initializer();
  c->set_name("c");
  c->set_data_type(kDouble);
  c->add_dims(3);
  for (double v : {0.5, 1.0 / 3.0, -2.0}) c->add_double_data(v);
  mb.node("Add", {"x", "c"}, {"y"}, "add");
  EXPECT_HAS(error_of([&] { mb.import(); }, ErrorCode::kUnsupported), "--narrow-float64");
  OnnxImportOptions o;
  o.narrow_float64 = true;
  Module m = mb.import(o);
  EXPECT_EQ(m.main().value(m.main().inputs()[0]).type, (TensorType{DType::kFp32, {3}}));
  ASSERT_EQ(m.notes().size(), 1u);
  EXPECT_HAS(m.notes()[0], "float64 narrowed to float32");
  EXPECT_HAS(m.notes()[0], "inputs x; outputs y; 1 float64 constants and casts");
  auto model = Model::from_module(m);
  EXPECT_HAS(model->explain(), "note: float64 narrowed to float32");
  Context ctx(model);
  auto out = ctx.run({Tensor::from_doubles({DType::kFp32, {3}}, std::vector<double>{1, 2, 3})});
  EXPECT_EQ(out[0].to_doubles(), (std::vector<double>{1.5, static_cast<double>(2.0f + static_cast<float>(1.0 / 3.0)), 1}));
}

TEST(OnnxImport, SymbolicDimensionsMakeADynamicModelSpecializedPerShape) {
  ModelBuilder mb(17);
  mb.input_dims("x", kFloat, {std::string("batch"), int64_t{3}}).output("y", kFloat);
  mb.init_f("b", {3}, {1.0f, 2.0f, 3.0f});
  mb.node("Add", {"x", "b"}, {"y"}, "add");
  const std::string path = (std::filesystem::temp_directory_path() / "weft_dynamic_test.onnx").string();
  mb.save(path);
  auto model = Model::load(path);
  ASSERT_TRUE(model->is_dynamic());
  EXPECT_EQ(model->inputs()[0].type.shape, (Shape{-1, 3}));
  EXPECT_EQ(model->inputs()[0].type.str(), "f32[?,3]");
  EXPECT_EQ(model->specializations(), 0u);
  Context ctx(model);
  auto rows = [](int64_t n) {
    std::vector<double> v(static_cast<size_t>(n * 3));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
    return Tensor::from_doubles({DType::kFp32, {n, 3}}, v);
  };
  for (int64_t n : {2, 5, 2}) {
    SCOPED_TRACE(n);
    auto out = ctx.run({rows(n)});
    ASSERT_EQ(out[0].shape(), (Shape{n, 3}));
    for (int64_t i = 0; i < n * 3; ++i) EXPECT_EQ(out[0].at_double(i), static_cast<double>(i + 1 + i % 3));
  }
  EXPECT_EQ(model->specializations(), 2u);  // batch 2 again reused its specialization
  EXPECT_HAS(model->explain(), "specialized per input shape signature on first use (2 so far)");
  // Caller memory for the output, a run of the size it fits.
  std::vector<float> mem(6, -1.0f);
  ctx.bind_output("y", mem.data(), mem.size() * sizeof(float));
  ctx.set_input("x", rows(2));
  ctx.run();
  EXPECT_EQ(mem[5], 5.0f + 1.0f + 2.0f);
  // A fixed dimension that differs, or another rank: errors naming the input.
  EXPECT_HAS(error_of([&] { ctx.set_input("x", Tensor::zeros({DType::kFp32, {2, 4}})); }, ErrorCode::kInvalidArgument),
             "input 'x' expects f32[?,3] (? = any size), got f32[2,4]");
  EXPECT_HAS(error_of([&] { ctx.set_input("x", Tensor::zeros({DType::kFp32, {6}})); }, ErrorCode::kInvalidArgument),
             "got f32[6]");
  // Given shapes make a static model, as before.
  LoadOptions fixed;
  fixed.onnx.input_shapes["x"] = {4, 3};
  EXPECT_FALSE(Model::load(path, fixed)->is_dynamic());
  std::filesystem::remove(path);
}

TEST(OnnxImport, DropoutInTrainingModeWithRatioZeroIsTheIdentity) {
  ModelBuilder mb(13);
  mb.input("x", kFloat, {4}).output("y", kFloat);
  mb.init_f("ratio", {}, {0.0f});
  auto* t = mb.graph()->add_initializer();  // training_mode = true, as torchvision's swin_t exports it
  t->set_name("training");
  t->set_data_type(kBool);
  t->add_int32_data(1);
  mb.node("Dropout", {"x", "ratio", "training"}, {"y"}, "drop");
  Module m = mb.import();
  auto out = run_module(m, {Tensor::from_doubles({DType::kFp32, {4}}, std::vector<double>{1, -2, 3, -4})});
  EXPECT_EQ(out[0].to_doubles(), (std::vector<double>{1, -2, 3, -4}));
  // Any other ratio drops random elements: a clear error.
  mb.graph()->mutable_initializer(0)->set_float_data(0, 0.5f);
  EXPECT_HAS(error_of([&] { mb.import(); }, ErrorCode::kUnsupported), "training_mode = true with ratio 0.5");
}


// Models written by torch 2.11's dynamo-based exporter (torch.export + onnxscript, opset 20, the
// exporter's defaults), which Debian's torch 1.13 cannot produce: a 2-layer nn.TransformerEncoder,
// one nn.MultiheadAttention and a small torchvision VisionTransformer (the MultiheadAttention of
// torch 2.x exports empty slices into Concat). Files from scripts/onnx/export_models.py
// --exporter dynamo --opset 0 --models small, with the seeded input and torch's output.
TEST(OnnxImport, Torch211DynamoExportsMatchTorch) {
  const std::string dir = std::string(WEFT_SOURCE_DIR) + "/tests/frontends/onnx/data/torch2_11_dynamo/";
  for (const char* name : {"transformer_encoder", "mha", "vit_tiny"}) {
    SCOPED_TRACE(name);
    auto model = Model::load(dir + name + ".onnx");
    Context ctx(model);
    std::vector<Tensor> out = ctx.run({read_npy(dir + name + ".input.npy")});
    const Tensor want = read_npy(dir + name + ".torch.npy");
    ASSERT_EQ(out.size(), 1u);
    ASSERT_EQ(out[0].shape(), want.shape());
    double scale = 0, err = 0;
    for (int64_t i = 0; i < want.num_elements(); ++i) {
      scale = std::max(scale, std::fabs(want.at_double(i)));
      err = std::max(err, std::fabs(out[0].at_double(i) - want.at_double(i)));
    }
    EXPECT_LT(err, 1e-5 * std::max(scale, 1e-3)) << "max abs error " << err << " at scale " << scale;
  }
}


// A layer norm written out as models in the wild write it (ReduceMean, Sub, Pow 2, ReduceMean, Add
// eps, Sqrt, Div, Mul gamma, Add beta) is one LAYER_NORM region on the CPU backend: the frontend's
// canonical form turns 1 / sqrt(v) into RSQRT(v), the form the matcher knows.
TEST(OnnxImport, HandWrittenLayerNormIsOneRegion) {
  ModelBuilder mb(13);
  mb.input("x", kFloat, {1, 4, 16}).output("y");
  mb.init_f("two", {}, {2.0f}).init_f("eps", {}, {1e-5f});
  std::vector<float> w(16), bb(16);
  for (int i = 0; i < 16; ++i) {
    w[static_cast<size_t>(i)] = 1.0f + 0.05f * static_cast<float>(i);
    bb[static_cast<size_t>(i)] = 0.1f * static_cast<float>(i % 3);
  }
  mb.init_f("w", {16}, w).init_f("b", {16}, bb);
  attr_ints(mb.node("ReduceMean", {"x"}, {"mean"}), "axes", {-1});
  mb.node("Sub", {"x", "mean"}, {"d"});
  mb.node("Pow", {"d", "two"}, {"sq"});
  attr_ints(mb.node("ReduceMean", {"sq"}, {"var"}), "axes", {-1});
  mb.node("Add", {"var", "eps"}, {"ve"});
  mb.node("Sqrt", {"ve"}, {"sd"});
  mb.node("Div", {"d", "sd"}, {"n"});
  mb.node("Mul", {"n", "w"}, {"nw"});
  mb.node("Add", {"nw", "b"}, {"y"});
  auto model = Model::from_module(mb.import());
#ifdef WEFT_WITH_ONEDNN
  EXPECT_HAS(model->explain(), "onednn LAYER_NORM");
#endif
  std::vector<float> x(64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.7f * static_cast<float>(i)) * 3.0f + 0.5f;
  Context ctx(model);
  auto out = ctx.run({f32({1, 4, 16}, x)});
  for (int r = 0; r < 4; ++r) {
    double mean = 0, var = 0;
    for (int i = 0; i < 16; ++i) mean += x[static_cast<size_t>(r * 16 + i)] / 16.0;
    for (int i = 0; i < 16; ++i) var += std::pow(x[static_cast<size_t>(r * 16 + i)] - mean, 2) / 16.0;
    for (int i = 0; i < 16; ++i) {
      const double want = (x[static_cast<size_t>(r * 16 + i)] - mean) / std::sqrt(var + 1e-5) * w[static_cast<size_t>(i)] +
                          bb[static_cast<size_t>(i)];
      EXPECT_NEAR(out[0].at_double(r * 16 + i), want, 1e-5) << r << "," << i;
    }
  }
}


// A large initializer stored as raw_data is borrowed from the parsed model (not copied), and a
// Gemm's transB over it stays a TRANSPOSE the matmul reads in place: no transposed copy at import
// and none at prepare (the loading half of CPU speed: alexnet's 234 MB loaded in 0.3 s, 0.35 GB).
TEST(OnnxImport, LargeInitializersAreBorrowedAndTransposedWeightsReadInPlace) {
  constexpr int64_t K = 512, N = 1024;
  ModelBuilder mb(13);
  mb.input("x", kFloat, {1, K}).output("y");
  std::vector<float> w(static_cast<size_t>(N * K)), bias(static_cast<size_t>(N)), x(static_cast<size_t>(K));
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 7919) % 23) / 23.0f - 0.5f;
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = static_cast<float>(i % 5) * 0.25f;
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 11) / 11.0f;
  auto* t = mb.graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(kFloat);
  t->add_dims(N);
  t->add_dims(K);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(float)));
  mb.init_f("b", {N}, bias);
  attr_i(mb.node("Gemm", {"x", "w", "b"}, {"y"}), "transB", 1);
  test::TempDir dir("weft_onnx_test");
  const std::string path = dir.file("fc.onnx");
  mb.save(path);

  const Module m = import_onnx(path);
  bool found = false;
  for (const Node& n : m.main().nodes())
    if (n.op == Op::CONST && n.attr_tensor("values").num_elements() == N * K) {
      found = true;
      EXPECT_FALSE(n.attr_tensor("values").buffer().writable()) << "the weights were copied, not borrowed";
    }
  EXPECT_TRUE(found);

  auto model = Model::load(path);
  EXPECT_HAS(model->explain(), "TRANSPOSE+MATMUL+BIAS");
  Context ctx(model);
  auto out = ctx.run({f32({1, K}, x)});
  std::vector<float> want(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) {
    double acc = bias[static_cast<size_t>(n)];
    for (int64_t k = 0; k < K; ++k) acc += double(w[static_cast<size_t>(n * K + k)]) * x[static_cast<size_t>(k)];
    want[static_cast<size_t>(n)] = static_cast<float>(acc);
  }
  expect_near(out[0], {1, N}, want, 1e-4);
}


// Found by the ONNX fuzzer: a Transpose of a scalar with a non-empty perm wrote past the end of
// the inverse permutation (the length check sat inside a loop over the rank, which is 0).
TEST(OnnxImport, TransposePermLongerThanTheRankIsRefused) {
  for (const std::vector<int64_t>& perm : {std::vector<int64_t>{1}, std::vector<int64_t>{0, 1, 2}}) {
    ModelBuilder mb(13);
    mb.input("x", kFloat, perm.size() == 1 ? std::vector<int64_t>{} : std::vector<int64_t>{2, 3}).output("y");
    attr_ints(mb.node("Transpose", {"x"}, {"y"}), "perm", perm);
    const std::string msg = error_of([&] { mb.import(); }, ErrorCode::kInvalidArgument);
    EXPECT_HAS(msg, "is not a permutation of the");
  }
}

}  // namespace
}  // namespace weft
