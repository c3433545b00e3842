// vk::Program: several dispatches in one submission, intermediates kept on the device.
#include <gtest/gtest.h>

#include <cmath>

#include "vk_test_util.h"

namespace {

using weft::Error;
using weft::ErrorCode;
using weft::custom::ResourceKind;
namespace vk = weft::vk;
using Role = vk::ProgramSlot::Role;
using vk_test::glsl;
using vk_test::image;

// t = 2 * x + 1
const char* kScale = R"(
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer T { float t[]; };
layout(push_constant) uniform P { uint n; } p;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < p.n) t[i] = 2.0 * x[i] + 1.0;
}
)";
// z = t * x
const char* kMul = R"(
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer T { float t[]; };
layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(set = 0, binding = 2) writeonly buffer Z { float z[]; };
layout(push_constant) uniform P { uint n; } p;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < p.n) z[i] = t[i] * x[i];
}
)";

// Slots: 0 x (input), 1 t, 2 z (output).
vk::ProgramDesc chain(uint32_t n, Role t_role) {
  vk::ProgramDesc p;
  p.name = "chain";
  const size_t bytes = n * sizeof(float);
  p.slots = {{Role::kInput, bytes, "x"}, {t_role, bytes, "t"}, {Role::kOutput, bytes, "z"}};
  vk::ProgramDispatch a;
  a.desc.name = "scale";
  a.desc.spirv = glsl(kScale);
  a.desc.resources = {vk_test::buffer(false, 0, 0, 0, {n}), vk_test::buffer(true, 0, 0, 1, {n})};
  a.desc.push_constants = vk_test::bytes_of(n);
  a.desc.groups = {(n + 63) / 64, 1, 1};
  a.slot_of_resource = {0, 1};
  vk::ProgramDispatch b;
  b.desc.name = "mul";
  b.desc.spirv = glsl(kMul);
  b.desc.resources = {vk_test::buffer(false, 0, 0, 0, {n}), vk_test::buffer(false, 1, 0, 1, {n}),
                      vk_test::buffer(true, 0, 0, 2, {n})};
  b.desc.push_constants = vk_test::bytes_of(n);
  b.desc.groups = {(n + 63) / 64, 1, 1};
  b.slot_of_resource = {1, 0, 2};
  p.dispatches = {std::move(a), std::move(b)};
  return p;
}

TEST(VulkanProgram, TwoDispatchesChainedThroughAnInternalSlot) {
  WEFT_VK_REQUIRE_DEVICE();
  const uint32_t n = 1000;
  std::vector<float> x(n), want(n);
  for (uint32_t i = 0; i < n; ++i) {
    x[i] = std::sin(0.01f * static_cast<float>(i)) * 3.0f;
    want[i] = (2.0f * x[i] + 1.0f) * x[i];
  }
  for (bool map : {true, false}) {
    SCOPED_TRACE(map ? "mapped" : "staged");
    vk::ProgramDesc d = chain(n, Role::kInternal);
    d.map_device_memory = map;
    vk::Program prog(vk::open_device(), d);
    for (int run = 0; run < 3; ++run) {
      std::vector<float> z(n, -7.0f);
      prog.run({x.data()}, {z.data()});
      for (uint32_t i = 0; i < n; ++i) ASSERT_NEAR(z[i], want[i], 1e-5f) << i;
    }
    vk::ProgramStats s = prog.stats();
    // Only x goes up and z comes down: the intermediate t never crosses.
    EXPECT_EQ(s.bytes_uploaded, n * sizeof(float));
    EXPECT_EQ(s.bytes_downloaded, n * sizeof(float));
    EXPECT_EQ(s.runs, 3u);
    EXPECT_EQ(s.images, 0u);
  }
}

TEST(VulkanProgram, AnOutputReadByALaterDispatchIsDownloadedToo) {
  WEFT_VK_REQUIRE_DEVICE();
  const uint32_t n = 100;
  std::vector<float> x(n), t(n), z(n);
  for (uint32_t i = 0; i < n; ++i) x[i] = static_cast<float>(i) - 50.0f;
  vk::Program prog(vk::open_device(), chain(n, Role::kOutput));
  prog.run({x.data()}, {t.data(), z.data()});  // outputs in slot order: t, z
  for (uint32_t i = 0; i < n; ++i) {
    ASSERT_EQ(t[i], 2.0f * x[i] + 1.0f) << i;
    ASSERT_EQ(z[i], (2.0f * x[i] + 1.0f) * x[i]) << i;
  }
  EXPECT_EQ(prog.stats().bytes_uploaded, n * sizeof(float));
  EXPECT_EQ(prog.stats().bytes_downloaded, 2 * n * sizeof(float));
}

// The first dispatch writes a buffer that the second reads as a storage image (filled from the
// slot's buffer on the device) and writes another image, copied back into its output slot.
TEST(VulkanProgram, ImageResourceInsideAProgram) {
  WEFT_VK_REQUIRE_DEVICE();
  const char* fill = R"(
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer T { float t[]; };
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < x.length()) t[i] = x[i] * 3.0;
}
)";
  const char* shift = R"(
#version 450
layout(local_size_x = 4, local_size_y = 4) in;
layout(set = 0, binding = 0, rgba32f) readonly uniform image2D src;
layout(set = 0, binding = 1, rgba32f) writeonly uniform image2D dst;
void main() {
  ivec2 p = ivec2(gl_GlobalInvocationID.xy);
  ivec2 size = imageSize(src);
  if (p.x >= size.x || p.y >= size.y) return;
  imageStore(dst, p, imageLoad(src, p) + vec4(1.0, 2.0, 3.0, 4.0));
}
)";
  const uint32_t H = 5, W = 7, C = 4, n = H * W * C;
  const size_t bytes = n * sizeof(float);
  vk::ProgramDesc p;
  p.name = "image_chain";
  p.slots = {{Role::kInput, bytes, "x"}, {Role::kInternal, bytes, "t"}, {Role::kOutput, bytes, "y"}};
  vk::ProgramDispatch a;
  a.desc.name = "fill";
  a.desc.spirv = glsl(fill);
  a.desc.resources = {vk_test::buffer(false, 0, 0, 0, {n}), vk_test::buffer(true, 0, 0, 1, {n})};
  a.desc.groups = {(n + 63) / 64, 1, 1};
  a.slot_of_resource = {0, 1};
  vk::ProgramDispatch b;
  b.desc.name = "shift";
  b.desc.spirv = glsl(shift);
  b.desc.resources = {image(false, 0, ResourceKind::kStorageImage, 0, 0, vk_test::kRGBA32, {H, W, C}),
                      image(true, 0, ResourceKind::kStorageImage, 0, 1, vk_test::kRGBA32, {H, W, C})};
  b.desc.groups = {2, 2, 1};
  b.slot_of_resource = {1, 2};
  p.dispatches = {std::move(a), std::move(b)};
  vk::Program prog(vk::open_device(), p);
  std::vector<float> x(n), y(n);
  for (uint32_t i = 0; i < n; ++i) x[i] = static_cast<float>(i) * 0.5f;
  for (int run = 0; run < 2; ++run) {
    std::fill(y.begin(), y.end(), -1.0f);
    prog.run({x.data()}, {y.data()});
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(y[i], x[i] * 3.0f + static_cast<float>(i % C + 1)) << i;
  }
  EXPECT_EQ(prog.stats().images, 2u);
  EXPECT_EQ(prog.stats().bytes_uploaded, bytes);
  EXPECT_EQ(prog.stats().bytes_downloaded, bytes);
}

TEST(VulkanProgram, MalformedSlotMappings) {
  WEFT_VK_REQUIRE_DEVICE();
  auto expect_invalid = [](vk::ProgramDesc d, const std::string& needle) {
    try {
      vk::Program prog(vk::open_device(), std::move(d));
      ADD_FAILURE() << "no error, wanted " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  {
    vk::ProgramDesc d = chain(16, Role::kInternal);
    std::swap(d.dispatches[0], d.dispatches[1]);  // mul reads t before scale writes it
    expect_invalid(d, "before anything writes it");
  }
  {
    vk::ProgramDesc d = chain(16, Role::kInternal);
    d.dispatches[0].slot_of_resource = {0, 0};  // writes the external input
    expect_invalid(d, "writes external input");
  }
  {
    vk::ProgramDesc d = chain(16, Role::kInternal);
    d.slots[1].bytes = 8;
    expect_invalid(d, "bytes");
  }
}

}  // namespace
