// The shipped custom-operator examples (examples/custom_ops/), end to end on a Vulkan device
// (lavapipe in CI): ONNX and .weft models with shader nodes, imported, compiled to a VGF with
// COMPUTE segments, loaded and run, compared with PyTorch's outputs (torch.nn.functional.grid_sample,
// avg_pool2d, the CNN in eager mode) that examples/custom_ops/make_all.py wrote at test time.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "common/run_cli.h"
#include "common/temp_dir.h"
#include "backends/vulkan/vulkan_fixture.h"
#include "device/vulkan/vulkan.h"
#include "weft/custom.h"
#include "weft/npy.h"
#include "weft/onnx.h"
#include "weft/runtime.h"
#include "weft/text.h"
#include "weft/vgf.h"

namespace weft {
namespace {

const std::string kData = std::string(WEFT_BINARY_DIR) + "/custom-examples";
const std::string kExamples = std::string(WEFT_SOURCE_DIR) + "/examples/custom_ops";

std::string data(const std::string& example, const std::string& file) { return kData + "/" + example + "/" + file; }
std::string ops(const std::string& example) { return kExamples + "/" + example + "/ops.json"; }

double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.type(), b.type());
  if (a.type() != b.type()) return INFINITY;
  double m = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) m = std::max(m, std::abs(a.at_double(i) - b.at_double(i)));
  return m;
}

int count_ops(const Graph& g, Op op) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.op == op;
  return n;
}

class CustomExamples : public test::VulkanDeviceTest {
 protected:
  void SetUp() override {
    test::VulkanDeviceTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(std::filesystem::exists(data("grid_sample", "x.npy")))
        << "example data missing: run examples/custom_ops/make_all.py " << kData << " (the ctest fixture does)";
    custom::clear_ops();
  }
  void TearDown() override { custom::clear_ops(); }

  // Load options (a function, not a braced temporary: GCC 12 warns, wrongly, about those).
  static LoadOptions gpu_first() {
    LoadOptions o;
    o.backend.backends = {"vulkan", "onednn", "reference"};
    return o;
  }
};

TEST_F(CustomExamples, GridSampleOnnxMatchesTorch) {
  custom::register_ops_file(ops("grid_sample"));
  for (const char* model : {"grid_sample.onnx", "grid_sample_ac.onnx"}) {
    SCOPED_TRACE(model);
    auto m = Model::load(data("grid_sample", model), gpu_first());
    // The GridSample node became one shader node, run by the Vulkan backend together with the
    // layout transposes around it (TOSA operators on Vulkan: one region).
    EXPECT_EQ(count_ops(m->module().main(), Op::CUSTOM), 1);
    EXPECT_NE(m->explain().find("vulkan: 1 kernels covering 3 nodes"), std::string::npos) << m->explain();
    Context ctx(m);
    std::vector<Tensor> out = ctx.run({read_npy(data("grid_sample", "x.npy")), read_npy(data("grid_sample", "grid.npy"))});
    const char* expected = std::string(model) == "grid_sample.onnx" ? "expected.npy" : "expected_ac.npy";
    EXPECT_LT(max_abs_diff(out[0], read_npy(data("grid_sample", expected))), 1e-5);
  }
}

TEST_F(CustomExamples, GridSampleWeftModelIsNhwcWithoutPermutes) {
  custom::register_ops_file(ops("grid_sample"));
  auto m = Model::load(data("grid_sample", "grid_sample.weft"), gpu_first());
  EXPECT_EQ(count_ops(m->module().main(), Op::TRANSPOSE), 0);  // TOSA graphs are NHWC already
  Context ctx(m);
  std::vector<Tensor> out =
      ctx.run({read_npy(data("grid_sample", "x_nhwc.npy")), read_npy(data("grid_sample", "grid.npy"))});
  EXPECT_LT(max_abs_diff(out[0], read_npy(data("grid_sample", "expected_nhwc.npy"))), 1e-5);
}

TEST_F(CustomExamples, ImageBackedDownsampleMatchesAvgPool) {
  custom::register_ops_file(ops("image_downsample"));
  auto m = Model::load(data("image_downsample", "downsample.weft"), gpu_first());
  // The payload says: a C=4 sampled image in, a storage image out.
  const Node* custom_node = nullptr;
  for (const Node& n : m->module().main().nodes())
    if (n.op == Op::CUSTOM) custom_node = &n;
  ASSERT_NE(custom_node, nullptr);
  custom::Payload p = custom::parse_payload(custom_node->attr_str("implementation_attrs"));
  ASSERT_EQ(p.inputs.size(), 1u);
  EXPECT_EQ(p.inputs[0].descriptor_type, "VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER");
  EXPECT_EQ(p.inputs[0].vkformat, "VK_FORMAT_R32G32B32A32_SFLOAT");
  EXPECT_EQ(p.outputs[0].descriptor_type, "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE");
  Context ctx(m);
  std::vector<Tensor> out = ctx.run({read_npy(data("image_downsample", "img.npy"))});
  EXPECT_LT(max_abs_diff(out[0], read_npy(data("image_downsample", "expected.npy"))), 1e-5);
}

TEST_F(CustomExamples, CnnPermutesAroundAdjacentShaderNodesCancel) {
  custom::register_ops_file(ops("cnn"));
  // With the explicit contract kept: NCHW->NHWC before and NHWC->NCHW after each shader node.
  Module kept = import_onnx(data("cnn", "cnn.onnx"), {.cancel_layout_pairs = false});
  Module clean = import_onnx(data("cnn", "cnn.onnx"));
  EXPECT_EQ(count_ops(kept.main(), Op::CUSTOM), 2);
  EXPECT_EQ(count_ops(clean.main(), Op::CUSTOM), 2);
  EXPECT_GE(count_ops(kept.main(), Op::TRANSPOSE), 4);
  // Left: the model's own boundaries (NCHW input to the first conv, the last conv to the NCHW output).
  EXPECT_EQ(count_ops(clean.main(), Op::TRANSPOSE), 2);
  // The second shader node reads the first one's result directly.
  const Graph& g = clean.main();
  std::vector<int> customs;
  for (int i = 0; i < static_cast<int>(g.nodes().size()); ++i)
    if (g.node(i).op == Op::CUSTOM) customs.push_back(i);
  ASSERT_EQ(customs.size(), 2u);
  EXPECT_EQ(g.value(g.node(customs[1]).inputs[0]).producer, customs[0]);

  const Tensor input = read_npy(data("cnn", "input.npy")), expected = read_npy(data("cnn", "expected.npy"));
  for (bool cancel : {false, true}) {
    SCOPED_TRACE(cancel ? "permutes cancelled" : "permutes kept");
    auto m = Model::from_module(cancel ? clean : kept, gpu_first().backend);
    Context ctx(m);
    EXPECT_LT(max_abs_diff(ctx.run({input})[0], expected), 1e-4);
  }
}

// The two adjacent shader nodes (GridSample, then ChannelGate reading its result) are one Vulkan
// region: one program, one submission, the intermediate kept on the device. With the CPU first for
// TOSA operators the region is just the two shader nodes; with Vulkan first the convolutions join it
// and the whole model is one program.
TEST_F(CustomExamples, CnnAdjacentShaderNodesRunAsOneVulkanRegion) {
  custom::register_ops_file(ops("cnn"));
  LoadOptions cpu_first;
  cpu_first.backend.backends = {"onednn", "vulkan", "reference"};
  const Tensor input = read_npy(data("cnn", "input.npy")), expected = read_npy(data("cnn", "expected.npy"));
  for (bool gpu : {false, true}) {
    SCOPED_TRACE(gpu ? "vulkan first" : "onednn first");
    auto m = Model::load(data("cnn", "cnn.onnx"), gpu ? gpu_first() : cpu_first);
    const std::string ex = m->explain();
    EXPECT_NE(ex.find(gpu ? "vulkan REGION[7 nodes]: " : "vulkan REGION[2 nodes]: "), std::string::npos) << ex;
    EXPECT_EQ(ex.find("vulkan CUSTOM"), std::string::npos) << ex;  // no shader node on its own
    Context ctx(m);
    for (int run = 0; run < 3; ++run) EXPECT_LT(max_abs_diff(ctx.run({input})[0], expected), 1e-4);
  }
}

TEST_F(CustomExamples, VgfHasComputeSegmentsBetweenGraphSegments) {
  custom::register_ops_file(ops("cnn"));
  Module m = import_onnx(data("cnn", "cnn.onnx"));
  custom::prepare_module(m, "cnn.onnx");
  vgf::Container c = vgf::from_module(m);
  std::vector<vgf::ModuleType> kinds;
  for (const vgf::Segment& s : c.sequence.segments) kinds.push_back(s.type);
  const std::vector<vgf::ModuleType> want{vgf::ModuleType::kGraph, vgf::ModuleType::kCompute, vgf::ModuleType::kCompute,
                                          vgf::ModuleType::kGraph};
  EXPECT_EQ(kinds, want);
  const vgf::Segment& gs = c.sequence.segments[1];
  EXPECT_EQ(c.modules[gs.module_index].type, vgf::ModuleType::kCompute);
  ASSERT_EQ(gs.dispatch_shape.size(), 3u);
  for (uint32_t d : gs.dispatch_shape) EXPECT_GE(d, 1u);
  ASSERT_EQ(gs.push_constant_ranges.size(), 1u);
  EXPECT_EQ(gs.push_constant_ranges[0].size, 7u * 4);  // N, H, W, C, Hout, Wout, align_corners

  test::TempDir dir("weft_custom_vgf");
  vgf::save(c, dir.file("cnn.vgf"));
  auto model = Model::load(dir.file("cnn.vgf"), gpu_first());
  Context ctx(model);
  EXPECT_LT(max_abs_diff(ctx.run({read_npy(data("cnn", "input.npy"))})[0], read_npy(data("cnn", "expected.npy"))), 1e-4);
}

TEST_F(CustomExamples, CliCompileThenRun) {
  test::TempDir dir("weft_custom_cli");
  test::CliResult r = test::run_weft(dir, "compile '" + data("grid_sample", "grid_sample.onnx") + "' --custom-ops '" +
                                              ops("grid_sample") + "' -o gs.vgf");
  ASSERT_EQ(r.rc, 0) << r.all();
  r = test::run_weft(dir, "run gs.vgf --backend vulkan,onednn,reference --input x='" + data("grid_sample", "x.npy") +
                              "' --input grid='" + data("grid_sample", "grid.npy") + "' --output y=y.npy");
  ASSERT_EQ(r.rc, 0) << r.all();
  EXPECT_LT(max_abs_diff(read_npy(dir.file("y.npy")), read_npy(data("grid_sample", "expected.npy"))), 1e-5);
  // The .vgf carries the compiled shader: no --custom-ops needed to run it.
  r = test::run_weft(dir, "dump gs.vgf");
  ASSERT_EQ(r.rc, 0) << r.all();
  EXPECT_NE(r.out.find("\"COMPUTE\""), std::string::npos);
}

TEST_F(CustomExamples, CliDevicesAndBadDevice) {
  test::TempDir dir("weft_custom_dev");
  test::CliResult r = test::run_weft(dir, "devices");
  ASSERT_EQ(r.rc, 0) << r.all();
  EXPECT_NE(r.out.find("* 0"), std::string::npos) << r.out;
  r = test::run_weft(dir, "run '" + data("grid_sample", "grid_sample.onnx") + "' --custom-ops '" + ops("grid_sample") +
                              "' --device no-such-gpu --input x='" + data("grid_sample", "x.npy") + "' --input grid='" +
                              data("grid_sample", "grid.npy") + "'");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("no-such-gpu"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(vk::list_devices()[0].name), std::string::npos) << r.err;  // lists the devices there are
}

// Without the Vulkan backend a shader node has nowhere to run: the error says why for each backend.
TEST_F(CustomExamples, NoVulkanBackendIsAClearError) {
  custom::register_ops_file(ops("grid_sample"));
  try {
    LoadOptions reference;
    reference.backend.backends = {"reference"};
    Model::load(data("grid_sample", "grid_sample.onnx"), reference);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no CPU implementation of custom operator weft.examples::grid_sample_bilinear"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace weft
