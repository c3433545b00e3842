#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// GATHER: output[n, w, :] = values[n, indices[n, w], :]. Rows of C elements are moved as CU units of
// UNIT bytes (the lowering picks the widest unit dividing a row); one invocation per output unit.
// With WRAP, a negative index counts from the end (k + K): ONNX Gather's SELECT(GREATER(0, i),
// ADD(i, K), i) in front of the GATHER, folded into it by the backend.
// TOSA REQUIREs 0 <= index < K (the reference interpreter stops with an error); an index outside
// the range yields a row of zero bits here, so the shader never reads out of bounds.
layout(local_size_x = 64) in;

layout(constant_id = 0) const int UNIT = 4;   // bytes per unit: 1, 2, 4, 8 or 16
layout(constant_id = 1) const int TOTAL = 0;  // N * W * CU
layout(constant_id = 2) const int K = 1;
layout(constant_id = 3) const int W = 1;
layout(constant_id = 4) const int CU = 1;     // units per row
layout(constant_id = 5) const int WRAP = 0;   // 1: k < 0 reads row k + K

layout(std430, set = 0, binding = 0) restrict readonly buffer Val1 { int8_t val1[]; };
layout(std430, set = 0, binding = 0) restrict readonly buffer Val2 { int16_t val2[]; };
layout(std430, set = 0, binding = 0) restrict readonly buffer Val4 { uint val4[]; };
layout(std430, set = 0, binding = 0) restrict readonly buffer Val8 { uvec2 val8[]; };
layout(std430, set = 0, binding = 0) restrict readonly buffer Val16 { uvec4 val16[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer Idx { int idx[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out1 { int8_t out1[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out2 { int16_t out2[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out4 { uint out4[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out8 { uvec2 out8[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out16 { uvec4 out16[]; };

void main() {
  const uint id = flat_id();
  if (id >= uint(TOTAL)) return;
  const int u = int(id) % CU, row = int(id) / CU;  // row = n * W + w
  const int n = row / W;
  int k = idx[row];
  if (WRAP != 0 && k < 0) k += K;
  const bool ok = k >= 0 && k < K;
  const int src = ((n * K + k) * CU + u);
  if (UNIT == 1) {
    int8_t v = int8_t(0);
    if (ok) v = val1[src];
    out1[id] = v;
  } else if (UNIT == 2) {
    int16_t v = int16_t(0);
    if (ok) v = val2[src];
    out2[id] = v;
  } else if (UNIT == 4) {
    uint v = 0u;
    if (ok) v = val4[src];
    out4[id] = v;
  } else if (UNIT == 8) {
    uvec2 v = uvec2(0u);
    if (ok) v = val8[src];
    out8[id] = v;
  } else {
    uvec4 v = uvec4(0u);
    if (ok) v = val16[src];
    out16[id] = v;
  }
}
