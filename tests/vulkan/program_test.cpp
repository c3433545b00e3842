// vk::Program: several dispatches in one submission, intermediates kept on the device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "vk_test_util.h"
#include "weft/dtype.h"

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

// Inputs and outputs of several megabytes are copied to and from staging memory by several threads:
// every element arrives, whatever the split (an element count that is no multiple of the chunks).
TEST(VulkanProgram, LargeInputsAndOutputsCrossWhole) {
  WEFT_VK_REQUIRE_DEVICE();
  const uint32_t n = 4'000'003;  // 16 MB per tensor (65535 workgroups of 64 at most)
  std::vector<float> x(n);
  for (uint32_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 1000) * 0.5f - 7.0f;
  vk::Program prog(vk::open_device(), chain(n, Role::kOutput));
  std::vector<float> t(n, -1.0f), z(n, -1.0f);
  prog.run({x.data()}, {t.data(), z.data()});
  for (uint32_t i = 0; i < n; ++i) {
    ASSERT_EQ(t[i], 2.0f * x[i] + 1.0f) << i;
    ASSERT_EQ(z[i], (2.0f * x[i] + 1.0f) * x[i]) << i;
  }
}

// Staged inputs and outputs of a megabyte and more move straight between the caller's memory and the
// device where it can import host memory (VK_EXT_external_memory_host; lavapipe can): the caller's
// buffers need no alignment (the pages around them are imported, and only their bytes are copied),
// the bytes around an output stay as they were, and the results match the staging path's.
TEST(VulkanProgram, LargeStagedTransfersImportTheCallersMemory) {
  WEFT_VK_REQUIRE_DEVICE();
  vk_test::ScopedEnv opt_in("WEFT_VULKAN_HOST_IMPORT", "1");  // read when the device opens: a fresh one below
  const uint32_t n = 600'001;  // 2.4 MB per tensor
  vk::ProgramDesc d = chain(n, Role::kOutput);
  d.map_device_memory = false;  // staged, as on a discrete GPU
  vk::Program prog(vk::open_device("", {.exclusive = true}), d);
  const bool imports = vk::stats(*prog.device()).host_import;
  if (!imports) GTEST_LOG_(INFO) << "this device cannot import host memory: the staging path is checked instead";
  // Unaligned on purpose: one float into larger vectors, whose neighbours must not change.
  std::vector<float> xs(n + 2), ts(n + 2, -3.0f), zs(n + 2, -5.0f);
  for (uint32_t i = 0; i < n + 2; ++i) xs[i] = static_cast<float>(i % 977) * 0.25f - 11.0f;
  for (int run = 0; run < 2; ++run) {
    prog.run({xs.data() + 1}, {ts.data() + 1, zs.data() + 1});
    for (uint32_t i = 0; i < n; ++i) {
      const float x = xs[i + 1];
      ASSERT_EQ(ts[i + 1], 2.0f * x + 1.0f) << i;
      ASSERT_EQ(zs[i + 1], (2.0f * x + 1.0f) * x) << i;
    }
    EXPECT_EQ(ts[0], -3.0f);
    EXPECT_EQ(ts[n + 1], -3.0f);
    EXPECT_EQ(zs[0], -5.0f);
    EXPECT_EQ(zs[n + 1], -5.0f);
    const vk::ProgramStats s = prog.stats();
    EXPECT_EQ(s.bytes_uploaded, n * sizeof(float));
    EXPECT_EQ(s.bytes_downloaded, 2 * n * sizeof(float));
    EXPECT_EQ(s.bytes_imported, imports ? 3 * n * sizeof(float) : 0u);
    for (uint32_t i = 0; i < n + 2; ++i) xs[i] = -xs[i];  // the next run reads the new values
  }
  // A small program on the same device stages its transfers (below the import threshold).
  vk::ProgramDesc small = chain(1000, Role::kInternal);
  small.map_device_memory = false;
  vk::Program little(prog.device(), small);
  std::vector<float> x(1000, 1.5f), z(1000);
  little.run({x.data()}, {z.data()});
  EXPECT_EQ(z[999], 6.0f);
  EXPECT_EQ(little.stats().bytes_imported, 0u);
}

// A staged output of 2 MB and more is downloaded in chunks (devices with synchronization2), each
// copied out by the host as soon as its event says it has arrived: every element arrives, on every
// run (the events are reset between runs, so a later run never copies a chunk before the GPU has
// written it), timed or not, and a small output of the same program takes the single copy.
TEST(VulkanProgram, LargeStagedOutputsArriveChunkByChunk) {
  WEFT_VK_REQUIRE_DEVICE();
  const uint32_t n = 1'500'007;  // 6 MB per tensor: 12 chunks of 512 KB
  vk::ProgramDesc d = chain(n, Role::kOutput);
  d.map_device_memory = false;  // staged, as on a discrete GPU
  vk::Program prog(vk::open_device(), d);
  std::vector<float> x(n), t(n), z(n);
  for (int run = 0; run < 8; ++run) {
    for (uint32_t i = 0; i < n; ++i) x[i] = static_cast<float>((i + 7 * run) % 1013) * 0.5f - 9.0f;
    std::fill(t.begin(), t.end(), -1.0f);
    std::fill(z.begin(), z.end(), -1.0f);
    prog.run({x.data()}, {t.data(), z.data()}, run % 2 == 1);
    for (uint32_t i = 0; i < n; ++i) {
      ASSERT_EQ(t[i], 2.0f * x[i] + 1.0f) << "run " << run << " element " << i;
      ASSERT_EQ(z[i], (2.0f * x[i] + 1.0f) * x[i]) << "run " << run << " element " << i;
    }
    EXPECT_EQ(prog.stats().bytes_downloaded, 2 * n * sizeof(float));
  }
  vk::ProgramDesc small = chain(1000, Role::kOutput);
  small.map_device_memory = false;
  vk::Program little(prog.device(), small);
  std::vector<float> xs(1000, 1.5f), ts(1000), zs(1000);
  little.run({xs.data()}, {ts.data(), zs.data()});
  EXPECT_EQ(ts[999], 4.0f);
  EXPECT_EQ(zs[999], 6.0f);
}

// h = -x on fp16 buffers (exact: the result needs no rounding on the device).
const char* kNegateHalf = R"(
#version 450
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float16_t x[]; };
layout(set = 0, binding = 1) writeonly buffer H { float16_t h[]; };
layout(push_constant) uniform P { uint n; } p;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < p.n) h[i] = float16_t(-float(x[i]));
}
)";

// Slots with a host cast: the caller's fp32 input rounded to fp16 on its way into staging memory,
// the fp16 result widened on its way out (whole, and in the chunked download of a 3 MB output), on
// every run, with host import asked for (such slots are never imported: the sizes differ). The
// device counts its own bytes.
TEST(VulkanProgram, HostCastSlotsConvertInTheCopies) {
  WEFT_VK_REQUIRE_DEVICE();
  vk_test::ScopedEnv opt_in("WEFT_VULKAN_HOST_IMPORT", "1");
  using Cast = vk::ProgramSlot::HostCast;
  for (const uint32_t n : {1'500'007u, 1001u}) {
    vk::ProgramDesc d;
    d.name = "negate_half";
    d.map_device_memory = false;  // staged, as on a discrete GPU
    d.slots = {{Role::kInput, n * 2u, "x"}, {Role::kOutput, n * 2u, "h"}};
    d.slots[0].host_cast = Cast::kFp32ToFp16;
    d.slots[1].host_cast = Cast::kFp16ToFp32;
    vk::ProgramDispatch a;
    a.desc.name = "negate";
    a.desc.spirv = glsl(kNegateHalf);
    a.desc.resources = {vk_test::buffer(false, 0, 0, 0, {n}, weft::DType::kFp16),
                        vk_test::buffer(true, 0, 0, 1, {n}, weft::DType::kFp16)};
    a.desc.push_constants = vk_test::bytes_of(n);
    a.desc.groups = {(n + 63) / 64, 1, 1};
    a.slot_of_resource = {0, 1};
    d.dispatches = {std::move(a)};
    vk::Program prog(vk::open_device("", {.exclusive = true}), d);
    std::vector<float> x(n), h(n);
    for (int run = 0; run < 3; ++run) {
      for (uint32_t i = 0; i < n; ++i) x[i] = (static_cast<float>((i * 7919u + run) % 100003u) - 50000.0f) * 1.37e-3f;
      x[5] = 70000.0f;  // rounds to infinity
      x[6] = 1e-7f;     // to a subnormal
      std::fill(h.begin(), h.end(), 123.0f);
      prog.run({x.data()}, {h.data()}, run == 1);
      for (uint32_t i = 0; i < n; ++i)
        ASSERT_EQ(h[i], -weft::fp16_to_float(weft::float_to_fp16(x[i]))) << "n " << n << " run " << run << " element " << i;
      EXPECT_EQ(prog.stats().bytes_uploaded, n * 2u);
      EXPECT_EQ(prog.stats().bytes_downloaded, n * 2u);
      EXPECT_EQ(prog.stats().bytes_imported, 0u);
    }
  }
}

// Runs without timestamps (the runtime's unprofiled runs) give the same results and no dispatch
// times; timed runs before and after them still have theirs.
TEST(VulkanProgram, UntimedRunsSkipTheTimestamps) {
  WEFT_VK_REQUIRE_DEVICE();
  const uint32_t n = 300;
  std::vector<float> x(n);
  for (uint32_t i = 0; i < n; ++i) x[i] = static_cast<float>(i) * 0.25f - 9.0f;
  vk::Program prog(vk::open_device(), chain(n, Role::kInternal));
  for (bool timed : {true, false, false, true}) {
    SCOPED_TRACE(timed ? "timed" : "untimed");
    std::vector<float> z(n, -1.0f);
    prog.run({x.data()}, {z.data()}, timed);
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(z[i], (2.0f * x[i] + 1.0f) * x[i]) << i;
    if (!timed) {
      EXPECT_TRUE(prog.last_dispatch_ms().empty());
      EXPECT_EQ(prog.last_gpu_ms(), -1);
    } else if (vk::stats(*prog.device()).timestamps) {
      EXPECT_EQ(prog.last_dispatch_ms().size(), 2u);
    }
  }
  EXPECT_EQ(prog.stats().runs, 4u);
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
  {
    vk::ProgramDesc d = chain(16, Role::kInternal);
    d.slots[2].host_cast = vk::ProgramSlot::HostCast::kFp32ToFp16;  // an output cannot be rounded on its way in
    expect_invalid(d, "converts between fp32 and fp16 on the host");
  }
}

}  // namespace

// y = x * S + c[i], with S a specialization constant and c a constant slot uploaded once.
const char* kSpecAxpy = R"(
#version 450
layout(local_size_x = 64) in;
layout(constant_id = 0) const float S = 1.0;
layout(constant_id = 1) const uint N = 1;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer C { float c[]; };
layout(set = 0, binding = 2) writeonly buffer Y { float y[]; };
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < N) y[i] = x[i] * S + c[i];
}
)";

// A chain of `steps` dispatches x -> t1 -> t2 -> ... -> y, each y = x * scale[k] + c; intermediates
// internal (they share the arena: only two are alive at a time).
vk::ProgramDesc spec_chain(uint32_t n, int steps, const std::vector<float>& scale, const std::vector<float>& c) {
  vk::ProgramDesc p;
  p.name = "spec_chain";
  const size_t bytes = n * sizeof(float);
  p.slots.push_back({Role::kInput, bytes, "x"});
  vk::ProgramSlot cs{Role::kConstant, bytes, "c"};
  cs.data.resize(bytes);
  std::memcpy(cs.data.data(), c.data(), bytes);
  p.slots.push_back(std::move(cs));
  for (int k = 1; k < steps; ++k) p.slots.push_back({Role::kInternal, bytes, "t" + std::to_string(k)});
  p.slots.push_back({Role::kOutput, bytes, "y"});
  for (int k = 0; k < steps; ++k) {
    vk::ProgramDispatch d;
    d.desc.name = "step" + std::to_string(k);
    d.desc.spirv = glsl(kSpecAxpy);
    d.desc.resources = {vk_test::buffer(false, 0, 0, 0, {n}), vk_test::buffer(false, 1, 0, 1, {n}),
                        vk_test::buffer(true, 0, 0, 2, {n})};
    uint32_t bits;
    std::memcpy(&bits, &scale[k], 4);
    d.desc.spec_constants = {bits, n};
    d.desc.groups = {(n + 63) / 64, 1, 1};
    const uint32_t in = k == 0 ? 0 : static_cast<uint32_t>(1 + k), out = static_cast<uint32_t>(2 + k);
    d.slot_of_resource = {in, 1, out};
    d.zero_outputs = false;
    p.dispatches.push_back(std::move(d));
  }
  return p;
}

TEST(VulkanProgram, SpecializationConstantsConstantSlotsAndTheArena) {
  WEFT_VK_REQUIRE_DEVICE();
  const uint32_t n = 777;
  const int steps = 6;
  std::vector<float> x(n), c(n), scale = {2.0f, -1.0f, 0.5f, 3.0f, 1.5f, -2.0f};
  for (uint32_t i = 0; i < n; ++i) x[i] = std::cos(0.03f * i), c[i] = 0.001f * static_cast<float>(i);
  for (bool map : {true, false}) {
    SCOPED_TRACE(map ? "mapped" : "staged");
    vk::ProgramDesc d = spec_chain(n, steps, scale, c);
    d.map_device_memory = map;
    vk::Program prog(vk::open_device(), d);
    for (int run = 0; run < 2; ++run) {
      std::vector<float> y(n);
      prog.run({x.data()}, {y.data()});
      for (uint32_t i = 0; i < n; ++i) {
        float want = x[i];
        for (int k = 0; k < steps; ++k) want = want * scale[k] + c[i];
        ASSERT_NEAR(y[i], want, 1e-4f * (1.0f + std::fabs(want))) << i;
      }
    }
    vk::ProgramStats s = prog.stats();
    EXPECT_EQ(s.bytes_uploaded, n * sizeof(float));  // the constant is not uploaded per run
    EXPECT_EQ(s.constant_bytes, n * sizeof(float));
    // Five intermediates, at most two alive at once: the arena holds two.
    EXPECT_EQ(s.internal_bytes, 5 * ((n * 4 + 3) / 4 * 4));
    EXPECT_LE(s.arena_bytes, 2 * ((n * 4 + 255) / 256 * 256));
    // Every step depends on the previous one: a barrier between each pair (reusing arena memory adds
    // no extra one), plus the final one for the host.
    EXPECT_LE(s.barriers, static_cast<size_t>(steps + 2));
    const std::vector<double> ms = prog.last_dispatch_ms();
    if (!ms.empty()) {
      EXPECT_EQ(ms.size(), static_cast<size_t>(steps));
      for (double t : ms) EXPECT_GE(t, 0.0);
    }
  }
}

TEST(VulkanProgram, AConstantSlotCannotBeWritten) {
  WEFT_VK_REQUIRE_DEVICE();
  const uint32_t n = 16;
  std::vector<float> c(n, 1.0f);
  vk::ProgramDesc d = spec_chain(n, 2, {1.0f, 1.0f}, c);
  d.dispatches[1].slot_of_resource = {2, 0, 1};  // writes the constant slot 1
  try {
    vk::Program prog(vk::open_device(), d);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("writes constant slot 1 (c)"), std::string::npos) << e.what();
  }
}
