#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// SCATTER in three passes over one owner table (an int per [n, k] row of values_out, scratch):
//   PASS 0: owner[n, k] = -1;
//   PASS 1: for every (n, w) whose index k is in [0, K): owner[n, k] = max(owner[n, k], w) (atomic);
//   PASS 2: values_out[n, k, :] = owner >= 0 ? input[n, owner, :] : values_in[n, k, :].
// TOSA REQUIREs indices in [0, K) and each [n, k] written at most once (the reference stops with an
// error otherwise). Here an out-of-range index writes nothing, and of duplicate indices the largest
// w wins (what a sequential loop would leave), so the result is deterministic and never out of
// bounds. Rows move as CU units of UNIT bytes. Every pass binds the same five buffers.
layout(local_size_x = 64) in;

layout(constant_id = 0) const int PASS = 0;
layout(constant_id = 1) const int UNIT = 4;   // bytes per unit: 1, 2, 4, 8 or 16
layout(constant_id = 2) const int TOTAL = 0;  // invocations: N * K, N * W, N * K * CU
layout(constant_id = 3) const int K = 1;
layout(constant_id = 4) const int W = 1;
layout(constant_id = 5) const int CU = 1;     // units per row

layout(std430, set = 0, binding = 0) buffer Owner { int owner[]; };
layout(std430, set = 0, binding = 1) readonly buffer Idx { int idx[]; };
layout(std430, set = 0, binding = 2) readonly buffer Vin1 { int8_t vin1[]; };
layout(std430, set = 0, binding = 2) readonly buffer Vin2 { int16_t vin2[]; };
layout(std430, set = 0, binding = 2) readonly buffer Vin4 { uint vin4[]; };
layout(std430, set = 0, binding = 2) readonly buffer Vin8 { uvec2 vin8[]; };
layout(std430, set = 0, binding = 2) readonly buffer Vin16 { uvec4 vin16[]; };
layout(std430, set = 0, binding = 3) readonly buffer In1 { int8_t in1[]; };
layout(std430, set = 0, binding = 3) readonly buffer In2 { int16_t in2[]; };
layout(std430, set = 0, binding = 3) readonly buffer In4 { uint in4[]; };
layout(std430, set = 0, binding = 3) readonly buffer In8 { uvec2 in8[]; };
layout(std430, set = 0, binding = 3) readonly buffer In16 { uvec4 in16[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Out1 { int8_t out1[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Out2 { int16_t out2[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Out4 { uint out4[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Out8 { uvec2 out8[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Out16 { uvec4 out16[]; };

void main() {
  const uint id = flat_id();
  if (id >= uint(TOTAL)) return;
  if (PASS == 0) {
    owner[id] = -1;
  } else if (PASS == 1) {
    const int k = idx[id];
    if (k >= 0 && k < K) atomicMax(owner[(int(id) / W) * K + k], int(id) % W);
  } else {
    const int u = int(id) % CU, row = int(id) / CU;  // row = n * K + k
    const int w = owner[row];
    const bool from_input = w >= 0;
    const int src = ((row / K) * W + w) * CU + u;
    if (UNIT == 1) {
      int8_t v;
      if (from_input) v = in1[src]; else v = vin1[id];
      out1[id] = v;
    } else if (UNIT == 2) {
      int16_t v;
      if (from_input) v = in2[src]; else v = vin2[id];
      out2[id] = v;
    } else if (UNIT == 4) {
      uint v;
      if (from_input) v = in4[src]; else v = vin4[id];
      out4[id] = v;
    } else if (UNIT == 8) {
      uvec2 v;
      if (from_input) v = in8[src]; else v = vin8[id];
      out8[id] = v;
    } else {
      uvec4 v;
      if (from_input) v = in16[src]; else v = vin16[id];
      out16[id] = v;
    }
  }
}
