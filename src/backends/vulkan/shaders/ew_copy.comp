#version 450
// A copy of N 32-bit words (RESHAPE / IDENTITY between two tensors that must stay separate: a region
// input to a region output, or two region outputs). Buffers are padded to whole words.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 64) in;
layout(constant_id = 0) const int N = 1;
layout(std430, set = 0, binding = 0) restrict readonly buffer Src { uint src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst { uint dst[]; };
void main() {
  uint i = flat_id();
  if (i < uint(N)) dst[i] = src[i];
}
