// A shader that never finishes: run() gives up after the kernel's timeout, marks the device lost,
// and the process stays usable (the Device and kernel are destroyed without hanging, and a fresh
// device works).
//
// lavapipe cannot run a shader forever: llvmpipe ends every shader invocation's loops after 65535
// passes (gallivm's guard against runaway shaders; the loop guard turns that into an error, see
// loop_guard_test.cpp). There the test sizes the dispatch
// of the endless loop to about 8x the timeout instead (calibrated on a small dispatch), so the
// work still in flight after the timeout drains within seconds. On other drivers the loop is
// endless, and the device is left lost and leaked.
//
// Keep this file last in weft_test_vulkan (files run in name order): a lost device stays leaked
// until the process exits. The test uses an exclusive Device so the shared one stays usable.
#include <algorithm>
#include <array>
#include <chrono>

#include "vk_test_util.h"

namespace {

using weft::Error;
using weft::ErrorCode;
namespace vk = weft::vk;

// Loops until data[0] == p.stop; the test never makes it so (the push constant keeps the compiler
// from proving anything), and the final x is used, so the loop cannot be dropped.
const char* kSpin = R"(
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer D { uint data[]; };
layout(push_constant) uniform P { uint stop; } p;
void main() {
  uint x = data[1] + gl_GlobalInvocationID.x;
  while (data[0] != p.stop) x = x * 1664525u + 1013904223u;
  if (x == 12345u) data[1] = x;
}
)";

const char* kCopy = R"(
#version 450
layout(local_size_x = 4) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
void main() { y[gl_GlobalInvocationID.x] = x[gl_GlobalInvocationID.x] + 1.0; }
)";

vk::DispatchDesc copy_desc() {
  vk::DispatchDesc d;
  d.name = "plus_one";
  d.spirv = vk_test::glsl(kCopy);
  d.resources = {vk_test::buffer(false, 0, 0, 0, {4}), vk_test::buffer(true, 0, 0, 1, {4})};
  d.groups = {1, 1, 1};
  return d;
}

TEST(VulkanTimeout, StuckShaderTimesOutAndLosesTheDevice) {
  WEFT_VK_REQUIRE_DEVICE();
  auto dev = vk::open_device("", {.exclusive = true, .cache_dir = "off"});
  // Works before.
  {
    vk::ComputeKernel k(dev, copy_desc());
    std::vector<float> x = {1, 2, 3, 4}, y(4);
    k.run({x.data()}, {y.data()});
    EXPECT_EQ(y, (std::vector<float>{2, 3, 4, 5}));
  }
  vk::DispatchDesc d;
  d.name = "spin";
  d.spirv = vk_test::glsl(kSpin);
  d.resources = {vk_test::buffer(false, 0, 0, 0, {2}, weft::DType::kInt32),
                 vk_test::buffer(true, 0, 0, 0, {2}, weft::DType::kInt32)};
  d.push_constants = vk_test::bytes_of(uint32_t{1});
  std::vector<int32_t> data = {0, 0}, out(2);
  if (vk::info(*dev).driver_name == "llvmpipe") {
    // The loop ends after 65535 iterations here: time 16 workgroups, then size the dispatch.
    d.groups = {16, 1, 1};
    d.timeout_ms = 120000;
    // There the loop guard reports the cut loop as an error (loop_guard_test.cpp); the time counts.
    vk::ComputeKernel calibrate(dev, d);
    auto t0 = std::chrono::steady_clock::now();
    try {
      calibrate.run({data.data()}, {out.data()});
      ADD_FAILURE() << "the loop guard did not report the loop that llvmpipe ended";
    } catch (const Error& e) {
      EXPECT_NE(e.message().find("llvmpipe ended a loop"), std::string::npos) << e.message();
    }
    double ms = std::max(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(), 0.01);
    d.groups[0] = static_cast<uint32_t>(std::clamp(16.0 * 4000.0 / ms, 64.0, 65535.0));
  } else {
    d.groups = {1, 1, 1};
  }
  d.timeout_ms = 500;  // per kernel (WEFT_VULKAN_TIMEOUT_MS sets the default)
  auto spin = std::make_unique<vk::ComputeKernel>(dev, d);
  auto start = std::chrono::steady_clock::now();
  try {
    spin->run({data.data()}, {out.data()});
    FAIL() << "the spinning shader finished: data = " << out[0] << ", " << out[1];
  } catch (const Error& e) {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
    EXPECT_NE(e.message().find("Vulkan dispatch of 'spin' did not finish within 500 ms"), std::string::npos)
        << e.message();
    EXPECT_NE(e.message().find("infinite loop"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("no longer used"), std::string::npos) << e.message();
    // How long giving up took is reported, not asserted: a busy machine stretches it. A run() that
    // hung instead of timing out is caught by ctest's per-test timeout.
    RecordProperty("seconds_to_give_up", std::to_string(s));
  }
  EXPECT_TRUE(vk::is_lost(*dev));
  EXPECT_TRUE(vk::stats(*dev).lost);
  // Every later use of the device fails at once, naming the cause.
  try {
    spin->run({data.data()}, {out.data()});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
    EXPECT_NE(e.message().find("no longer usable"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("'spin' did not finish"), std::string::npos) << e.message();
  }
  try {
    vk::ComputeKernel k(dev, copy_desc());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("no longer usable"), std::string::npos) << e.message();
  }
  // Destroying the kernel and the lost device returns (their Vulkan objects are leaked).
  spin.reset();
  dev.reset();
  // The shared device is unaffected (on lavapipe it runs once the work still in flight has
  // drained: all devices share llvmpipe's thread pool).
  vk::DispatchDesc c = copy_desc();
  c.timeout_ms = 120000;
  vk::ComputeKernel k(vk::open_device(), c);
  std::vector<float> x = {5, 6, 7, 8}, y(4);
  k.run({x.data()}, {y.data()});
  EXPECT_EQ(y, (std::vector<float>{6, 7, 8, 9}));
}

}  // namespace
