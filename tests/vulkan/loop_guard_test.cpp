// The loop guard (device/vulkan/loop_guard.h): the rewritten shaders validate, and on lavapipe a
// shader whose loops llvmpipe cut short fails with an error instead of returning wrong numbers,
// while loops under the limit run exactly as before.
#include <spirv-tools/libspirv.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "device/vulkan/loop_guard.h"
#include "vk_test_util.h"

namespace {

using weft::Error;
using weft::ErrorCode;
namespace vk = weft::vk;
namespace detail = weft::vk::detail;

// Counts loop iterations three ways: one loop of n0 (mode 0), n0 x n1 nested (mode 1), or odd lanes
// n0 in one loop and even lanes n1 in another (mode 2: the subgroup runs both loops).
const char* kLoops = R"(
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer D { uint data[]; };
layout(push_constant) uniform P { uint n0; uint n1; uint mode; } p;
void main() {
  uint i = gl_GlobalInvocationID.x;
  uint c = 0;
  if (p.mode == 0) {
    for (uint k = 0; k < p.n0; ++k) c++;
  } else if (p.mode == 1) {
    for (uint a = 0; a < p.n0; ++a)
      for (uint b = 0; b < p.n1; ++b) c++;
  } else if ((i & 1u) == 1u) {
    for (uint k = 0; k < p.n0; ++k) c += data[64 + (k & 7u)] + 1;
  } else {
    for (uint k = 0; k < p.n1; ++k) c += data[64 + (k & 7u)] + 1;
  }
  data[i] = c;
}
)";

// A do-while whose exit is decided in its continue block, a `continue` statement and an early return.
const char* kDoWhile = R"(
#version 450
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) buffer D { uint data[]; };
layout(push_constant) uniform P { uint n; } p;
uint count(uint n) {
  uint c = 0, k = 0;
  do {
    k++;
    if ((k & 3u) == 1u) continue;
    c++;
  } while (k < n);
  return c;
}
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i >= 8u) return;
  data[i] = count(p.n);
}
)";

const char* kNoLoop = R"(
#version 450
layout(local_size_x = 4) in;
layout(set = 0, binding = 0) buffer D { uint data[]; };
void main() { data[gl_GlobalInvocationID.x] += 1u; }
)";

std::string validate(const std::vector<uint32_t>& words, spv_target_env env) {
  spvtools::SpirvTools tools(env);
  std::string log;
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t& pos, const char* m) {
    log += "word " + std::to_string(pos.index) + ": " + m + "\n";
  });
  return tools.Validate(words) ? "" : log;
}

TEST(LoopGuard, RewrittenShadersValidate) {
  for (const char* source : {kLoops, kDoWhile}) {
    for (uint32_t env : {uint32_t{shaderc_env_version_vulkan_1_1}, uint32_t{shaderc_env_version_vulkan_1_2}}) {
      const std::vector<uint32_t> spirv = vk_test::glsl(source, "loops.comp", env);
      ASSERT_TRUE(detail::has_loops(spirv));
      auto guarded = detail::add_loop_guard(spirv, "main", 1024, 3);
      ASSERT_TRUE(guarded.has_value());
      EXPECT_EQ(guarded->set, 0u);
      EXPECT_EQ(guarded->binding, 3u);  // past the dispatch's bindings
      EXPECT_GE(guarded->spirv[1], 0x00010300u);
      const spv_target_env target = env == shaderc_env_version_vulkan_1_2 ? SPV_ENV_VULKAN_1_2 : SPV_ENV_VULKAN_1_1;
      EXPECT_EQ(validate(guarded->spirv, target), "");
      // And by current upstream spirv-val, where ../shared has it.
      const std::string upstream = std::string(WEFT_SOURCE_DIR) + "/../shared/tools/bin/spirv-val";
      if (std::filesystem::exists(upstream)) {
        const std::string file = std::filesystem::temp_directory_path() / ("weft_loop_guard_" + std::to_string(env) + ".spv");
        std::ofstream(file, std::ios::binary)
            .write(reinterpret_cast<const char*>(guarded->spirv.data()), std::streamsize(guarded->spirv.size() * 4));
        const std::string cmd = "'" + upstream + "' --target-env " +
                                (target == SPV_ENV_VULKAN_1_2 ? "vulkan1.2" : "vulkan1.1") + " '" + file + "'";
        EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
        std::filesystem::remove(file);
      }
    }
  }
  const std::vector<uint32_t> plain = vk_test::glsl(kNoLoop);
  EXPECT_FALSE(detail::has_loops(plain));
  EXPECT_FALSE(detail::add_loop_guard(plain, "other_entry", 1024).has_value());
  EXPECT_FALSE(detail::add_loop_guard(std::vector<uint32_t>{0x07230203, 0x10000}, "main", 1024).has_value());
}

struct Outcome {
  std::vector<uint32_t> data;
  std::string error;  // "" when the run succeeded
};

Outcome run_loops(const std::shared_ptr<vk::Device>& dev, const char* source, std::vector<uint32_t> push, uint32_t count) {
  vk::DispatchDesc d;
  d.name = "loops";
  d.spirv = vk_test::glsl(source);
  d.resources = {vk_test::buffer(false, 0, 0, 0, {count}, weft::DType::kInt32),
                 vk_test::buffer(true, 0, 0, 0, {count}, weft::DType::kInt32)};
  d.push_constants.resize(push.size() * 4);
  if (!push.empty()) std::memcpy(d.push_constants.data(), push.data(), d.push_constants.size());
  d.timeout_ms = 120000;
  vk::ComputeKernel k(dev, d);
  Outcome r;
  std::vector<uint32_t> in(count, 0);
  r.data.assign(count, 0xdeadbeef);
  try {
    k.run({in.data()}, {r.data.data()});
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
    r.error = e.message();
  }
  return r;
}

TEST(LoopGuard, LavapipeLoopsCutShortAreErrors) {
  WEFT_VK_REQUIRE_DEVICE();
  auto dev = vk::open_device("", {.cache_dir = "off"});
  if (vk::info(*dev).driver_name != "llvmpipe")
    GTEST_SKIP() << "the loop limit is llvmpipe's; this device is " << vk::info(*dev).name;
  struct Case {
    uint32_t n0, n1, mode;
    bool cut;
    uint32_t odd, even;  // results expected when not cut
  };
  const Case cases[] = {
      {65534, 0, 0, false, 65534, 65534},  // 65535 passes: the last one leaves the loop itself
      {65535, 0, 0, true, 0, 0},           // llvmpipe ends the loop at the pass that would have left it
      {70000, 0, 0, true, 0, 0},           // ... and here 4465 iterations early
      {200, 300, 1, false, 60000, 60000},  // 200 + 200 x 301 passes
      {255, 256, 1, true, 0, 0},           // 255 + 255 x 257 passes: llvmpipe returns 65026, not 65280
      {30000, 30000, 2, false, 30000, 30000},
      {40000, 40000, 2, true, 0, 0},       // each lane loops 40000 times, but the subgroup 80004 passes
      {20000, 20000, 2, false, 20000, 20000},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("n0 = " + std::to_string(c.n0) + ", n1 = " + std::to_string(c.n1) + ", mode " +
                 std::to_string(c.mode));
    Outcome r = run_loops(dev, kLoops, {c.n0, c.n1, c.mode}, 72);
    if (c.cut) {
      EXPECT_NE(r.error.find("Vulkan dispatch of 'loops'"), std::string::npos) << r.error;
      EXPECT_NE(r.error.find("llvmpipe ended a loop of the shader"), std::string::npos) << r.error;
      EXPECT_EQ(r.data[0], 0xdeadbeefu) << "outputs were returned";
    } else {
      ASSERT_EQ(r.error, "");
      for (uint32_t i = 0; i < 64; ++i) ASSERT_EQ(r.data[i], i % 2 ? c.odd : c.even) << i;
    }
  }
  // A function's do-while with `continue`: 3 of every 4 iterations count.
  Outcome ok = run_loops(dev, kDoWhile, {40000}, 8);
  ASSERT_EQ(ok.error, "");
  EXPECT_EQ(ok.data[0], 30000u);
  Outcome cut = run_loops(dev, kDoWhile, {100000}, 8);
  EXPECT_NE(cut.error.find("llvmpipe ended a loop of the shader"), std::string::npos) << cut.error;
  // Shaders without loops are not rewritten and run as always.
  Outcome plain = run_loops(dev, kNoLoop, {}, 4);
  ASSERT_EQ(plain.error, "");
  EXPECT_EQ(plain.data, (std::vector<uint32_t>{1, 1, 1, 1}));
}

}  // namespace
