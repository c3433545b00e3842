#version 450
// 2x2 average pooling through the texture unit: one bilinear sample per output texel.
//
// Resources (Weft's custom-op resource contract, packed image view: [1, H, W, 4] fp32 tensors are
// W x H images of VK_FORMAT_R32G32B32A32_SFLOAT texels, channels in the format):
//   binding 0: src  [1, H, W, 4]      COMBINED_IMAGE_SAMPLER, linear filter, clamp_to_edge
//   binding 1: dst  [1, H/2, W/2, 4]  STORAGE_IMAGE (rgba32f), written
// No push constants: the sizes come from the image descriptors.
//
// Output texel (x, y) samples src at the normalised point ((2x + 1) / W, (2y + 1) / H): the corner
// shared by texels (2x, 2y), (2x + 1, 2y), (2x, 2y + 1) and (2x + 1, 2y + 1), whose centres are at
// ((2x + 0.5) / W, ...) and ((2x + 1.5) / W, ...). Bilinear filtering weighs each of them by exactly
// 0.5 * 0.5, so the sample is their average. The dispatch is rounded up to whole workgroups, hence
// the bounds check.
layout(local_size_x = 8, local_size_y = 8, local_size_z = 1) in;

layout(set = 0, binding = 0) uniform sampler2D src;
layout(set = 0, binding = 1, rgba32f) uniform writeonly image2D dst;

void main() {
  const ivec2 p = ivec2(gl_GlobalInvocationID.xy);
  const ivec2 out_size = imageSize(dst);
  if (p.x >= out_size.x || p.y >= out_size.y) {
    return;
  }
  const vec2 in_size = vec2(textureSize(src, 0));
  const vec2 uv = vec2(2 * p + 1) / in_size;
  // Compute shaders have no implicit derivatives: sample level 0 explicitly.
  imageStore(dst, p, textureLod(src, uv, 0.0));
}
