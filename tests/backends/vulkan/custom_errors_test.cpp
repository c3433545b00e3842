// Bad input around custom shader nodes, through `weft compile` / `weft run`: every failure stops
// compilation with an error that names the file, the node and the rule.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "common/run_cli.h"
#include "common/temp_dir.h"
#include "device/vulkan/vulkan.h"
#include "vulkan_fixture.h"
#include "weft/npy.h"
#include "weft/tensor.h"

namespace weft {
namespace {

const std::string kExamples = std::string(WEFT_SOURCE_DIR) + "/examples/custom_ops";

void write(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
}

// A .weft model with one CUSTOM node reading a [1,8,8,C] tensor.
std::string weft_model(int channels, const std::string& payload) {
  const std::string c = std::to_string(channels);
  return "graph @main(%img: f32[1,8,8," + c + "]) -> (%y) {\n  %y: f32[1,4,4," + c +
         "] = CUSTOM(%img) {operator_name = \"downsample2x\", domain_name = \"weft.examples\", implementation_attrs = \"" +
         payload + "\"} loc(\"half\")\n  return %y\n}\n";
}

#define EXPECT_HAS(text, needle) EXPECT_NE((text).find(needle), std::string::npos) << "missing '" << (needle) << "' in:\n" << (text)

TEST(CustomErrors, ThreeChannelImageIsRejectedWithBothWaysOut) {
  test::TempDir dir("weft_custom_err");
  write(dir.file("m.weft"), weft_model(3, ""));
  test::CliResult r = test::run_weft(dir, "compile m.weft --custom-ops '" + kExamples +
                                              "/image_downsample/ops.json' -o m.vgf");
  EXPECT_EQ(r.rc, 1) << r.all();
  EXPECT_HAS(r.err, "m.weft");
  EXPECT_HAS(r.err, "half");
  EXPECT_HAS(r.err, "input_0");
  EXPECT_HAS(r.err, "pad the tensor to 4 channels");
  EXPECT_HAS(r.err, "tensor/buffer");
  EXPECT_FALSE(std::filesystem::exists(dir.file("m.vgf")));
}

TEST(CustomErrors, CheckValidatesShaderNodes) {
  test::TempDir dir("weft_custom_err");
  write(dir.file("m.weft"), weft_model(3, ""));
  const std::string ops = " --custom-ops '" + kExamples + "/image_downsample/ops.json'";
  test::CliResult r = test::run_weft(dir, "check m.weft");  // no registration: nothing to check yet
  EXPECT_EQ(r.rc, 0) << r.all();
  EXPECT_HAS(r.out, "custom shader nodes: 0 checked (payload and resource contract), 1 without a shader payload");
  r = test::run_weft(dir, "check m.weft" + ops);
  EXPECT_EQ(r.rc, 1) << r.all();
  EXPECT_HAS(r.err, "pad the tensor to 4 channels");
  write(dir.file("m4.weft"), weft_model(4, ""));
  r = test::run_weft(dir, "check m4.weft" + ops);
  EXPECT_EQ(r.rc, 0) << r.all();
  EXPECT_HAS(r.out, "custom shader nodes: 1 checked");
}

TEST(CustomErrors, InvalidPayloadStopsCompilation) {
  test::TempDir dir("weft_custom_err");
  // Two workgroup sizes instead of three; the .weft string escapes the JSON quotes.
  write(dir.file("m.weft"), weft_model(4, "{\\\"entry_point\\\": \\\"main\\\", \\\"workgroup_sizes\\\": [8, 8]}"));
  test::CliResult r = test::run_weft(dir, "compile m.weft -o m.vgf");
  EXPECT_EQ(r.rc, 1) << r.all();
  EXPECT_HAS(r.err, "m.weft");
  EXPECT_HAS(r.err, "half");
  EXPECT_HAS(r.err, "workgroup_sizes");
  EXPECT_HAS(r.err, "exactly 3");
  EXPECT_FALSE(std::filesystem::exists(dir.file("m.vgf")));
}

TEST(CustomErrors, ShaderCompileErrorShowsTheLine) {
  test::TempDir dir("weft_custom_err");
  write(dir.file("bad.comp"),
        "#version 450\nlayout(local_size_x = 8, local_size_y = 8) in;\nvoid main() {\n  float x = undefined_name;\n}\n");
  write(dir.file("ops.json"), R"({"custom_ops": [{
    "operator_name": "downsample2x", "domain_name": "weft.examples",
    "shader": {"language": "GLSL", "file": "bad.comp"},
    "workgroup_size": [8, 8, 1],
    "inputs": [{"type": "Buffer"}],
    "outputs": [{"type": "Buffer", "shape": ["in0[0]", "4", "4", "in0[3]"]}],
    "invocations": ["4", "4", "1"]}]})");
  write(dir.file("m.weft"), weft_model(4, ""));
  test::CliResult r = test::run_weft(dir, "compile m.weft --custom-ops ops.json -o m.vgf");
  EXPECT_EQ(r.rc, 1) << r.all();
  EXPECT_HAS(r.err, "ops.json");
  EXPECT_HAS(r.err, "bad.comp:4:");  // the compiler's file:line
  EXPECT_HAS(r.err, "undefined_name");
}

// A machine without a Vulkan driver: the shader node's error says which backend is missing and why.
TEST(CustomErrors, MissingVulkanDriverIsNamed) {
  test::TempDir dir("weft_custom_err");
  write(dir.file("m.weft"), weft_model(4, ""));
  ::setenv("VK_ICD_FILENAMES", "/nonexistent-driver.json", 1);  // inherited by the weft process only
  test::CliResult r = test::run_weft(dir, "check m.weft --custom-ops '" + kExamples + "/image_downsample/ops.json'");
  EXPECT_EQ(r.rc, 0) << r.all();  // checking needs no device
  r = test::run_weft(dir, "run m.weft --custom-ops '" + kExamples + "/image_downsample/ops.json' --input img=img.npy");
  test::CliResult devices = test::run_weft(dir, "devices");
  ::unsetenv("VK_ICD_FILENAMES");
  EXPECT_EQ(r.rc, 1) << r.all();
  EXPECT_HAS(r.err, "vulkan (unavailable on this machine): no Vulkan driver found");
  EXPECT_HAS(r.err, "mesa-vulkan-drivers");
  EXPECT_EQ(devices.rc, 1);
  EXPECT_HAS(devices.err, "no Vulkan driver found");
}

// A shader that loops as often as its input says: on lavapipe, a loop llvmpipe ends early is an
// error naming the node, not a wrong answer (device/vulkan/loop_guard.h).
class CustomLoops : public test::VulkanDeviceTest {};

TEST_F(CustomLoops, LoopCutShortByLavapipeNamesTheNode) {
  if (vk::list_devices()[0].driver_name != "llvmpipe") GTEST_SKIP() << "the loop limit is llvmpipe's";
  test::TempDir dir("weft_custom_loop");
  write(dir.file("sum.comp"), R"(#version 450
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
void main() {
  uint i = gl_GlobalInvocationID.x;
  uint n = uint(x[0]);
  float acc = 0.0;
  for (uint k = 0; k < n; ++k) acc += x[(i + k) % 8u];
  y[i] = acc;
}
)");
  write(dir.file("ops.json"), R"({"custom_ops": [{
    "operator_name": "repeat_sum", "domain_name": "weft.test",
    "shader": {"language": "GLSL", "file": "sum.comp"},
    "workgroup_size": [8, 1, 1],
    "inputs": [{"type": "Buffer", "binding": 0}],
    "outputs": [{"type": "Buffer", "binding": 1, "shape": ["8"], "dtype": "fp32"}],
    "invocations": ["8", "1", "1"]}]})");
  write(dir.file("m.weft"),
        "graph @main(%x: f32[8]) -> (%y) {\n  %y: f32[8] = CUSTOM(%x) {operator_name = \"repeat_sum\", "
        "domain_name = \"weft.test\", implementation_attrs = \"\"} loc(\"long_sum\")\n  return %y\n}\n");
  auto input = [&](double n) {
    std::vector<double> v(8, 1.0);
    v[0] = n;
    write_npy(dir.file("x.npy"), Tensor::from_doubles(TensorType{DType::kFp32, {8}}, v));
  };
  const std::string run = "run m.weft --custom-ops ops.json --backend vulkan --input x=x.npy --output y=y.npy";
  input(1000);
  test::CliResult ok = test::run_weft(dir, run);
  ASSERT_EQ(ok.rc, 0) << ok.all();
  const Tensor y = read_npy(dir.file("y.npy"));
  EXPECT_EQ(y.num_elements(), 8);
  std::filesystem::remove(dir.file("y.npy"));
  input(100000);
  test::CliResult cut = test::run_weft(dir, run);
  EXPECT_EQ(cut.rc, 1) << cut.all();
  EXPECT_HAS(cut.err, "long_sum");
  EXPECT_HAS(cut.err, "llvmpipe ended a loop of the shader");
  EXPECT_FALSE(std::filesystem::exists(dir.file("y.npy")));
}

TEST(CustomErrors, UnregisteredCustomNodeHasNowhereToRun) {
  test::TempDir dir("weft_custom_err");
  write(dir.file("m.weft"), weft_model(4, ""));
  test::CliResult r = test::run_weft(dir, "run m.weft --input img=img.npy");
  EXPECT_EQ(r.rc, 1) << r.all();
  EXPECT_HAS(r.err, "no backend runs CUSTOM");
  EXPECT_HAS(r.err, "no CPU implementation of custom operator weft.examples::downsample2x");
}

}  // namespace
}  // namespace weft
