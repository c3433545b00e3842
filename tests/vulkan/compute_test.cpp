// ComputeKernel with storage/uniform buffers: results against CPU loops, aliases, limits, the
// pipeline cache (in memory and on disk).
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "vk_test_util.h"

namespace {

using weft::DType;
using weft::Error;
using weft::ErrorCode;
namespace vk = weft::vk;
using vk_test::buffer;
using vk_test::glsl;

const char* kSaxpy = R"(
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { float a; float b; uint n; } p;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < p.n) y[i] = p.a * x[i] + p.b;
}
)";

struct SaxpyPush {
  float a, b;
  uint32_t n;
};

vk::DispatchDesc saxpy_desc(uint32_t n, float a, float b, bool map = true) {
  vk::DispatchDesc d;
  d.name = "saxpy";
  d.spirv = glsl(kSaxpy);
  d.resources = {buffer(false, 0, 0, 0, {n}), buffer(true, 0, 0, 1, {n})};
  d.push_constants = vk_test::bytes_of(SaxpyPush{a, b, n});
  d.groups = {(n + 63) / 64, 1, 1};
  d.map_device_memory = map;
  return d;
}

void expect_saxpy(vk::ComputeKernel& k, uint32_t n, float a, float b, float seed) {
  std::vector<float> x(n), y(n, -12345.0f);
  for (uint32_t i = 0; i < n; ++i) x[i] = std::sin(seed + 0.37f * static_cast<float>(i)) * 10.0f;
  k.run({x.data()}, {y.data()});
  for (uint32_t i = 0; i < n; ++i) {
    float want = a * x[i] + b;
    ASSERT_NEAR(y[i], want, 1e-5f * (1.0f + std::fabs(want))) << "element " << i;
  }
}

TEST(VulkanCompute, SaxpyMatchesCpu) {
  WEFT_VK_REQUIRE_DEVICE();
  auto dev = vk::open_device();
  for (bool map : {true, false}) {
    SCOPED_TRACE(map ? "mapped device memory" : "staging buffers");
    const uint32_t n = 1000;
    vk::ComputeKernel k(dev, saxpy_desc(n, 2.5f, -1.25f, map));
    expect_saxpy(k, n, 2.5f, -1.25f, 0.0f);
    // Recorded once, run again with other data.
    expect_saxpy(k, n, 2.5f, -1.25f, 1.0f);
    EXPECT_GT(k.last_total_ms(), 0.0);
    if (vk::stats(*dev).timestamps)
      EXPECT_GE(k.last_gpu_ms(), 0.0);
    else
      EXPECT_EQ(k.last_gpu_ms(), -1.0);
    EXPECT_EQ(k.desc().name, "saxpy");
  }
}

TEST(VulkanCompute, TwoInputsAndDescriptorSetOne) {
  WEFT_VK_REQUIRE_DEVICE();
  const char* src = R"(
#version 450
layout(local_size_x = 32) in;
layout(set = 0, binding = 3) readonly buffer A { int a[]; };
layout(set = 1, binding = 0) readonly buffer B { float b[]; };
layout(set = 1, binding = 5) writeonly buffer C { float c[]; };
layout(push_constant) uniform P { uint n; } p;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < p.n) c[i] = float(a[i]) + b[i];
}
)";
  const uint32_t n = 77;  // 308 bytes, not a multiple of the workgroup
  for (bool map : {true, false}) {
    vk::DispatchDesc d;
    d.name = "add_int_float";
    d.spirv = glsl(src);
    d.resources = {buffer(false, 0, 0, 3, {7, 11}, DType::kInt32), buffer(false, 1, 1, 0, {n}),
                   buffer(true, 0, 1, 5, {n})};
    d.push_constants = vk_test::bytes_of(n);
    d.groups = {(n + 31) / 32, 1, 1};
    d.map_device_memory = map;
    vk::ComputeKernel k(vk::open_device(), d);
    std::vector<int32_t> a(n);
    std::vector<float> b(n), c(n);
    for (uint32_t i = 0; i < n; ++i) a[i] = static_cast<int32_t>(i * 3) - 100, b[i] = 0.5f * static_cast<float>(i);
    k.run({a.data(), b.data()}, {c.data()});
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(c[i], static_cast<float>(a[i]) + b[i]) << i;
  }
}

TEST(VulkanCompute, InPlaceAliasUploadsOnceAndReadsBack) {
  WEFT_VK_REQUIRE_DEVICE();
  const char* src = R"(
#version 450
layout(local_size_x = 16) in;
layout(set = 0, binding = 0) buffer D { float d[]; };
void main() { d[gl_GlobalInvocationID.x] *= 2.0; }
)";
  for (bool map : {true, false}) {
    vk::DispatchDesc d;
    d.name = "double_in_place";
    d.spirv = glsl(src);
    // Input 0 and output 0 share (set 0, binding 0): one buffer, uploaded once.
    d.resources = {buffer(false, 0, 0, 0, {4, 16}), buffer(true, 0, 0, 0, {4, 16})};
    d.groups = {4, 1, 1};
    d.map_device_memory = map;
    vk::ComputeKernel k(vk::open_device(), d);
    std::vector<float> in(64), out(64);
    for (int i = 0; i < 64; ++i) in[i] = static_cast<float>(i) - 20.5f;
    k.run({in.data()}, {out.data()});
    for (int i = 0; i < 64; ++i) ASSERT_EQ(out[i], 2.0f * in[i]) << i;
    // Not doubled twice: every run uploads the input again.
    k.run({in.data()}, {out.data()});
    for (int i = 0; i < 64; ++i) ASSERT_EQ(out[i], 2.0f * in[i]) << i;
  }
}

TEST(VulkanCompute, UniformBufferZeroSizeTensorAndZeroedOutputs) {
  WEFT_VK_REQUIRE_DEVICE();
  const char* src = R"(
#version 450
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) uniform U { vec4 v; } u;
layout(set = 0, binding = 2) readonly buffer E { float e[]; };
layout(set = 0, binding = 3) writeonly buffer Y { float y[]; };
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i % 2u == 0u) y[i] = x[i] * u.v.x - u.v.y;  // odd elements are never written
}
)";
  for (bool map : {true, false}) {
    vk::DispatchDesc d;
    d.name = "uniform";
    d.spirv = glsl(src);
    d.resources = {buffer(false, 0, 0, 0, {16}),
                   buffer(false, 1, 0, 1, {4}, DType::kFp32, VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER),
                   buffer(false, 2, 0, 2, {0, 3}), buffer(true, 0, 0, 3, {16})};
    d.groups = {2, 1, 1};
    d.map_device_memory = map;
    vk::ComputeKernel k(vk::open_device(), d);
    std::vector<float> x(16), v = {3.0f, 1.0f, 0.0f, 0.0f};
    for (int i = 0; i < 16; ++i) x[i] = static_cast<float>(i);
    for (int round = 0; round < 2; ++round) {
      std::vector<float> y(16, 99.0f);
      k.run({x.data(), v.data(), nullptr}, {y.data()});
      for (int i = 0; i < 16; ++i) ASSERT_EQ(y[i], i % 2 == 0 ? x[i] * v[0] - v[1] : 0.0f) << i;
      for (int i = 0; i < 16; i += 2) x[i] = 0.5f;
      v[1] = -2.0f;
    }
  }
}

// Kernels on one shared device, run from several threads at once (one thread per kernel).
TEST(VulkanCompute, KernelsRunFromSeveralThreads) {
  WEFT_VK_REQUIRE_DEVICE();
  auto dev = vk::open_device();
  std::vector<std::thread> threads;
  std::vector<std::string> failures(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      try {
        const uint32_t n = 200 + 50 * t;
        const float a = 1.5f + t, b = -0.5f * t;
        vk::ComputeKernel k(dev, saxpy_desc(n, a, b, t % 2 == 0));
        std::vector<float> x(n), y(n);
        for (int round = 0; round < 10; ++round) {
          for (uint32_t i = 0; i < n; ++i) x[i] = static_cast<float>(i * (round + 1) % 97) - 40.0f;
          k.run({x.data()}, {y.data()});
          for (uint32_t i = 0; i < n; ++i)
            if (std::fabs(y[i] - (a * x[i] + b)) > 1e-4f * (1 + std::fabs(a * x[i] + b))) {
              failures[t] = "thread " + std::to_string(t) + " element " + std::to_string(i);
              return;
            }
        }
      } catch (const std::exception& e) {
        failures[t] = e.what();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& f : failures) EXPECT_EQ(f, "");
}

TEST(VulkanCompute, MissingHostMemoryIsAnError) {
  WEFT_VK_REQUIRE_DEVICE();
  vk::ComputeKernel k(vk::open_device(), saxpy_desc(8, 1, 0));
  std::vector<float> y(8);
  try {
    k.run({}, {y.data()});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(e.message().find("input 0"), std::string::npos) << e.message();
  }
}

void expect_error(const vk::DispatchDesc& d, ErrorCode code, const std::vector<std::string>& parts) {
  try {
    vk::ComputeKernel k(vk::open_device(), d);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const auto& p : parts) EXPECT_NE(e.message().find(p), std::string::npos) << "'" << p << "' in " << e.message();
  }
}

TEST(VulkanCompute, LimitsAreChecked) {
  WEFT_VK_REQUIRE_DEVICE();
  auto dev = vk::open_device();
  const vk::DeviceInfo& info = vk::info(*dev);

  vk::DispatchDesc d = saxpy_desc(64, 1, 0);
  d.groups = {info.max_workgroup_count[0] + 1, 1, 1};
  expect_error(d, ErrorCode::kUnsupported,
               {"kernel 'saxpy'", "maxComputeWorkGroupCount[0] = " + std::to_string(info.max_workgroup_count[0])});
  d = saxpy_desc(64, 1, 0);
  d.groups = {1, 1, info.max_workgroup_count[2] + 1};
  expect_error(d, ErrorCode::kUnsupported, {"kernel 'saxpy'", "maxComputeWorkGroupCount[2]"});

  d = saxpy_desc(64, 1, 0);
  d.push_constants.resize(info.max_push_constants_size + 4);
  expect_error(d, ErrorCode::kUnsupported, {"kernel 'saxpy'", "maxPushConstantsSize"});

  // The module's LocalSize, patched past the device's limit.
  d = saxpy_desc(64, 1, 0);
  bool patched = false;
  for (size_t i = 5; i < d.spirv.size(); i += d.spirv[i] >> 16)
    if ((d.spirv[i] & 0xffff) == 16 && d.spirv[i + 2] == 17) d.spirv[i + 3] = info.max_workgroup_size[0] + 1, patched = true;
  ASSERT_TRUE(patched);
  expect_error(d, ErrorCode::kUnsupported, {"kernel 'saxpy'", "maxComputeWorkGroupSize[0]"});

  d = saxpy_desc(64, 1, 0);
  d.entry_point = "nope";
  expect_error(d, ErrorCode::kInvalidArgument, {"kernel 'saxpy'", "entry point 'nope'", "'main'"});

  d = saxpy_desc(64, 1, 0);
  d.spirv = {1, 2, 3};
  expect_error(d, ErrorCode::kInvalidArgument, {"not a SPIR-V module"});

  d = saxpy_desc(64, 1, 0);
  d.resources[1].kind = weft::custom::ResourceKind::kTensorArm;
  expect_error(d, ErrorCode::kUnsupported, {"output 0", "VK_ARM_tensors"});

  d = saxpy_desc(64, 1, 0);
  d.resources[1].tensor.shape = {32};  // at input 0's binding, with another size
  d.resources[1].binding = 0;
  expect_error(d, ErrorCode::kInvalidArgument, {"share a binding"});

  {
    vk_test::ScopedEnv env("WEFT_VULKAN_TIMEOUT_MS", "soon");
    expect_error(saxpy_desc(64, 1, 0), ErrorCode::kInvalidArgument, {"WEFT_VULKAN_TIMEOUT_MS"});
  }

  // One storage buffer more than a shader stage may bind: named before any pipeline layout is made.
  const uint32_t most = info.max_stage_storage_buffers;
  ASSERT_GE(most, 4u);  // Vulkan's minimum
  if (most < 1024) {
    std::string src = "#version 450\nlayout(local_size_x = 1) in;\n";
    for (uint32_t i = 0; i <= most; ++i)
      src += "layout(set = 0, binding = " + std::to_string(i) + ") buffer B" + std::to_string(i) + " { float v" +
             std::to_string(i) + "[]; };\n";
    src += "void main() {\n";
    for (uint32_t i = 1; i <= most; ++i) src += "  v0[0] += v" + std::to_string(i) + "[0];\n";
    src += "}\n";
    d = vk::DispatchDesc{};
    d.name = "many";
    d.spirv = glsl(src.c_str());
    for (uint32_t i = 0; i <= most; ++i) d.resources.push_back(buffer(i == 0, i == 0 ? 0 : i - 1, 0, i, {1}));
    expect_error(d, ErrorCode::kUnsupported,
                 {"kernel 'many' binds " + std::to_string(most + 1) + " storage buffers, above "
                  "maxPerStageDescriptorStorageBuffers = " + std::to_string(most)});
  }
}

// The pipeline cache: kernels with the same shader and layout share one VkPipeline; the
// VkPipelineCache is written to WEFT_CACHE_DIR and read back by a device opened later.
TEST(VulkanCompute, PipelineCacheInMemoryAndOnDisk) {
  WEFT_VK_REQUIRE_DEVICE();
  namespace fs = std::filesystem;
  fs::path dir = fs::path(std::getenv("WEFT_CACHE_DIR") ? std::getenv("WEFT_CACHE_DIR") : "/tmp") / "pipeline-test";
  fs::remove_all(dir);
  {
    auto dev = vk::open_device("", {.exclusive = true, .cache_dir = dir.string()});
    vk::DeviceStats s = vk::stats(*dev);
    EXPECT_EQ(s.disk_cache_status, "absent");
    EXPECT_EQ(s.pipelines_created, 0u);
    vk::ComputeKernel k1(dev, saxpy_desc(100, 2, 1));
    s = vk::stats(*dev);
    EXPECT_EQ(s.pipelines_created, 1u);
    EXPECT_EQ(s.pipeline_cache_hits, 0u);
    EXPECT_GE(s.disk_cache_saves, 1u);
    ASSERT_TRUE(fs::exists(s.disk_cache_file)) << s.disk_cache_file;
    // At least VkPipelineCacheHeaderVersionOne of this device (lavapipe stores nothing else).
    ASSERT_GE(fs::file_size(s.disk_cache_file), 32u);
    uint32_t header[4] = {};
    std::ifstream(s.disk_cache_file, std::ios::binary).read(reinterpret_cast<char*>(header), sizeof header);
    EXPECT_GE(header[0], 32u);
    EXPECT_EQ(header[1], 1u);  // VK_PIPELINE_CACHE_HEADER_VERSION_ONE
    EXPECT_EQ(header[2], vk::info(*dev).vendor_id);
    EXPECT_EQ(header[3], vk::info(*dev).device_id);
    EXPECT_EQ(fs::path(s.disk_cache_file).parent_path(), dir);
    EXPECT_EQ(fs::path(s.disk_cache_file).filename().string().rfind("vulkan-pipelines-", 0), 0u);

    // Same shader and layout, other sizes and push constant values: the same pipeline.
    vk::ComputeKernel k2(dev, saxpy_desc(300, -1, 4));
    EXPECT_EQ(vk::pipeline_cache_hits(*dev), 1u);
    EXPECT_EQ(vk::stats(*dev).pipelines_created, 1u);
    expect_saxpy(k1, 100, 2, 1, 0.5f);
    expect_saxpy(k2, 300, -1, 4, 0.25f);
    // Another entry point name or layout is another pipeline.
    vk::DispatchDesc other = saxpy_desc(100, 2, 1);
    other.push_constants.resize(16);  // another push constant range: another pipeline layout
    vk::ComputeKernel k3(dev, other);
    EXPECT_EQ(vk::stats(*dev).pipelines_created, 2u);
  }
  // A device opened afterwards loads the file (within one process: a fresh exclusive device).
  std::string file;
  {
    auto dev = vk::open_device("", {.exclusive = true, .cache_dir = dir.string()});
    vk::DeviceStats s = vk::stats(*dev);
    file = s.disk_cache_file;
    EXPECT_EQ(s.disk_cache_status, "loaded");
    EXPECT_EQ(s.disk_cache_bytes_loaded, fs::file_size(file));
    vk::ComputeKernel k(dev, saxpy_desc(50, 3, 3));
    expect_saxpy(k, 50, 3, 3, 2.0f);
  }
  // A corrupt file is ignored, and replaced.
  {
    std::ofstream(file, std::ios::binary | std::ios::trunc) << "definitely not a pipeline cache, but long enough";
    auto dev = vk::open_device("", {.exclusive = true, .cache_dir = dir.string()});
    vk::DeviceStats s = vk::stats(*dev);
    EXPECT_EQ(s.disk_cache_status.rfind("ignored: ", 0), 0u) << s.disk_cache_status;
    EXPECT_EQ(s.disk_cache_bytes_loaded, 0u);
    vk::ComputeKernel k(dev, saxpy_desc(50, 3, 3));
    expect_saxpy(k, 50, 3, 3, 2.0f);
  }
  {
    auto dev = vk::open_device("", {.exclusive = true, .cache_dir = dir.string()});
    EXPECT_EQ(vk::stats(*dev).disk_cache_status, "loaded");
  }
  // No temporary files left behind.
  for (const auto& e : fs::directory_iterator(dir)) EXPECT_EQ(e.path().string(), file);
  // Disabled.
  auto off = vk::open_device("", {.exclusive = true, .cache_dir = "off"});
  EXPECT_EQ(vk::stats(*off).disk_cache_status, "disabled");
  EXPECT_EQ(vk::stats(*off).disk_cache_file, "");
  vk::ComputeKernel k(off, saxpy_desc(10, 1, 1));
  expect_saxpy(k, 10, 1, 1, 0.0f);
}

}  // namespace
