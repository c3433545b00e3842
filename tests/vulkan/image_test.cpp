// ComputeKernel with images: packed texels [H,W,C] / [1,H,W,C] of R32 / R32G32 / R32G32B32A32_SFLOAT,
// sampled (COMBINED_IMAGE_SAMPLER) and storage images, against CPU results.
#include <cmath>
#include <iostream>

#include "vk_test_util.h"

namespace {

using weft::Error;
using weft::ErrorCode;
using weft::custom::ResourceKind;
namespace vk = weft::vk;
using vk_test::glsl;
using vk_test::image;

// Output texel o samples the input at input-texel coordinate o / 2: even o hits texel centers,
// odd o the midpoints between them (with both odd: the corner of 2x2 texels).
const char* kResample = R"(
#version 450
layout(local_size_x = 8, local_size_y = 8) in;
layout(set = 0, binding = 0) uniform sampler2D src;
layout(set = 0, binding = 1, rgba32f) writeonly uniform image2D dst;
layout(push_constant) uniform P { ivec2 out_size; vec2 in_size; } p;
void main() {
  ivec2 o = ivec2(gl_GlobalInvocationID.xy);
  if (any(greaterThanEqual(o, p.out_size))) return;
  vec2 uv = (vec2(o) * 0.5 + 0.5) / p.in_size;
  imageStore(dst, o, textureLod(src, uv, 0.0));
}
)";

struct ResamplePush {
  int32_t out_w, out_h;
  float in_w, in_h;
};

TEST(VulkanImage, SampledRgbaLinearAtCentersAndMidpoints) {
  WEFT_VK_REQUIRE_DEVICE();
  const int W = 8, H = 4, C = 4, OW = 2 * W - 1, OH = 2 * H - 1;
  vk::DispatchDesc d;
  d.name = "resample";
  d.spirv = glsl(kResample);
  auto in = image(false, 0, ResourceKind::kSampledImage, 0, 0, vk_test::kRGBA32, {1, H, W, C});
  in.filter = "linear";
  in.address_mode = "clamp_to_edge";
  d.resources = {in, image(true, 0, ResourceKind::kStorageImage, 0, 1, vk_test::kRGBA32, {1, OH, OW, C})};
  d.push_constants = vk_test::bytes_of(ResamplePush{OW, OH, float(W), float(H)});
  d.groups = {(OW + 7) / 8, (OH + 7) / 8, 1};
  vk::ComputeKernel k(vk::open_device(), d);

  // Dense [1,H,W,C] bytes: texel (x, y) channel c at ((y * W) + x) * C + c.
  std::vector<float> src(H * W * C), dst(OH * OW * C, -1.0f);
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x)
      for (int c = 0; c < C; ++c)
        src[(y * W + x) * C + c] = static_cast<float>(x * x) * 0.5f + static_cast<float>(y * 10 + c * 100) +
                                   (c == 3 ? static_cast<float>((x * 7 + y * 3) % 5) : 0.0f);
  k.run({src.data()}, {dst.data()});
  auto at = [&](int x, int y, int c) { return src[(y * W + x) * C + c]; };
  for (int oy = 0; oy < OH; ++oy)
    for (int ox = 0; ox < OW; ++ox)
      for (int c = 0; c < C; ++c) {
        int x0 = ox / 2, y0 = oy / 2, x1 = std::min(x0 + 1, W - 1), y1 = std::min(y0 + 1, H - 1);
        float fx = ox % 2 ? 0.5f : 0.0f, fy = oy % 2 ? 0.5f : 0.0f;
        float want = (1 - fy) * ((1 - fx) * at(x0, y0, c) + fx * at(x1, y0, c)) +
                     fy * ((1 - fx) * at(x0, y1, c) + fx * at(x1, y1, c));
        float got = dst[(oy * OW + ox) * C + c];
        ASSERT_NEAR(got, want, 1e-4f * (1 + std::fabs(want))) << "texel " << ox << "," << oy << " channel " << c;
        if (ox % 2 == 0 && oy % 2 == 0) {
          ASSERT_EQ(got, at(x0, y0, c));  // texel centers exactly
        }
      }
  // A corner midpoint is the mean of the 2x2 texels around it.
  EXPECT_NEAR(dst[(1 * OW + 1) * C + 0], (at(0, 0, 0) + at(1, 0, 0) + at(0, 1, 0) + at(1, 1, 0)) / 4, 1e-4f);
}

// C = 1: a storage image read with imageLoad, written to a buffer; a non-square extent catches
// swapped width and height.
TEST(VulkanImage, StorageImageOneChannel) {
  WEFT_VK_REQUIRE_DEVICE();
  const char* src = R"(
#version 450
layout(local_size_x = 4, local_size_y = 4) in;
layout(set = 0, binding = 2, r32f) readonly uniform image2D img;
layout(set = 0, binding = 0) writeonly buffer Out { float o[]; };
void main() {
  ivec2 p = ivec2(gl_GlobalInvocationID.xy);
  ivec2 size = imageSize(img);
  if (p.x >= size.x || p.y >= size.y) return;
  o[p.y * size.x + p.x] = imageLoad(img, p).r * 2.0;
}
)";
  const int W = 5, H = 3;
  for (bool rank4 : {false, true}) {
    vk::DispatchDesc d;
    d.name = "load_r32f";
    d.spirv = glsl(src);
    weft::Shape shape = rank4 ? weft::Shape{1, H, W, 1} : weft::Shape{H, W, 1};
    d.resources = {image(false, 0, ResourceKind::kStorageImage, 0, 2, vk_test::kR32, shape),
                   vk_test::buffer(true, 0, 0, 0, {H * W})};
    d.groups = {2, 1, 1};
    vk::ComputeKernel k(vk::open_device(), d);
    std::vector<float> in(H * W), out(H * W);
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x) in[y * W + x] = static_cast<float>(y * 100 + x);
    k.run({in.data()}, {out.data()});
    for (int i = 0; i < H * W; ++i) ASSERT_EQ(out[i], 2.0f * in[i]) << i;
  }
}

// C = 2: a sampled R32G32 image with nearest filtering read outside [0, 1] (the address mode
// decides), written to an R32G32 storage image.
TEST(VulkanImage, SampledTwoChannelsAddressModes) {
  WEFT_VK_REQUIRE_DEVICE();
  const char* src = R"(
#version 450
layout(local_size_x = 4, local_size_y = 4) in;
layout(set = 0, binding = 0) uniform sampler2D src;
layout(set = 0, binding = 1, rg32f) writeonly uniform image2D dst;
void main() {
  ivec2 p = ivec2(gl_GlobalInvocationID.xy);
  ivec2 size = imageSize(dst);
  if (p.x >= size.x || p.y >= size.y) return;
  vec2 uv = (vec2(p.x + size.x, p.y) + 0.5) / vec2(size);  // one image width to the right
  imageStore(dst, p, vec4(textureLod(src, uv, 0.0).rg, 0.0, 0.0));
}
)";
  const int W = 6, H = 3, C = 2;
  std::vector<float> in(H * W * C);
  for (int i = 0; i < H * W * C; ++i) in[i] = static_cast<float>(i) + 0.25f;
  auto dev = vk::open_device();
  for (std::string mode : {"repeat", "clamp_to_edge", "clamp_to_border", "mirrored_repeat"}) {
    SCOPED_TRACE(mode);
    vk::DispatchDesc d;
    d.name = "wrap_rg32f";
    d.spirv = glsl(src);
    auto r = image(false, 0, ResourceKind::kSampledImage, 0, 0, vk_test::kRG32, {H, W, C});
    r.filter = "nearest";
    r.address_mode = mode;
    d.resources = {r, image(true, 0, ResourceKind::kStorageImage, 0, 1, vk_test::kRG32, {H, W, C})};
    d.groups = {2, 1, 1};
    vk::ComputeKernel k(dev, d);
    std::vector<float> out(H * W * C, -7.0f);
    k.run({in.data()}, {out.data()});
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x)
        for (int c = 0; c < C; ++c) {
          float want = 0.0f;  // clamp_to_border: transparent black
          if (mode == "repeat") want = in[(y * W + x) * C + c];
          if (mode == "clamp_to_edge") want = in[(y * W + W - 1) * C + c];
          if (mode == "mirrored_repeat") want = in[(y * W + (W - 1 - x)) * C + c];
          ASSERT_EQ(out[(y * W + x) * C + c], want) << x << "," << y << "," << c;
        }
  }
  // The sampler is not part of the pipeline: all four kernels share one.
  EXPECT_GE(vk::pipeline_cache_hits(*dev), 3u);
}

TEST(VulkanImage, BadImageResources) {
  WEFT_VK_REQUIRE_DEVICE();
  vk::DispatchDesc d;
  d.name = "bad";
  d.spirv = glsl(kResample);
  auto in = image(false, 0, ResourceKind::kSampledImage, 0, 0, vk_test::kRGBA32, {1, 4, 8, 4});
  auto out = image(true, 0, ResourceKind::kStorageImage, 0, 1, vk_test::kRGBA32, {1, 4, 8, 4});
  auto fails = [&](std::vector<weft::custom::BoundResource> rs, ErrorCode code, std::string part) {
    d.resources = std::move(rs);
    try {
      vk::ComputeKernel k(vk::open_device(), d);
      ADD_FAILURE() << "expected an error with " << part;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(e.message().find(part), std::string::npos) << e.message();
    }
  };
  auto bad_filter = in;
  bad_filter.filter = "cubic";
  fails({bad_filter, out}, ErrorCode::kInvalidArgument, "filter 'cubic'");
  auto bad_address = in;
  bad_address.address_mode = "wrap";
  fails({bad_address, out}, ErrorCode::kInvalidArgument, "address mode 'wrap'");
  auto sampled_out = out;
  sampled_out.kind = ResourceKind::kSampledImage;
  sampled_out.descriptor_type = VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER;
  fails({in, sampled_out}, ErrorCode::kInvalidArgument, "cannot be an output");
  auto wrong_channels = in;
  wrong_channels.channels = 2;
  fails({wrong_channels, out}, ErrorCode::kInvalidArgument, "2 channels");
  auto wrong_size = in;
  wrong_size.width = 7;
  fails({wrong_size, out}, ErrorCode::kInvalidArgument, "texels");
  // Storage images of R32G32B32_SFLOAT (C = 3): the device decides; when it cannot, the error
  // names the device, the format and the feature.
  auto dev = vk::open_device();
  auto rgb = image(true, 0, ResourceKind::kStorageImage, 0, 1, vk_test::kRGB32, {4, 8, 3});
  try {
    d.resources = {in, rgb};
    vk::ComputeKernel k(dev, d);
    std::cout << "note: " << vk::info(*dev).name << " supports VK_FORMAT_R32G32B32_SFLOAT storage images\n";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << e.what();
    EXPECT_NE(e.message().find(vk::info(*dev).name), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("VK_FORMAT_R32G32B32_SFLOAT"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("VK_FORMAT_FEATURE_STORAGE_IMAGE_BIT"), std::string::npos) << e.message();
  }
}

}  // namespace
