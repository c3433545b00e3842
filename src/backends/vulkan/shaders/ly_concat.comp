#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// CONCAT of up to eight inputs in one dispatch (a CONCAT of more inputs takes several). Every
// tensor is viewed as rows: OUTER rows (the dimensions before the axis), each input row of L_k
// 4-byte units (its extent along the axis times the dimensions after it), the output row of ROW
// units. This dispatch writes units [BASE, BASE + L_0 + ... + L_{N-1}) of every output row from
// inputs 0..N-1 in order: each invocation copies one unit, finding its input by the prefix sums of
// the L_k. Input k's row o starts at unit o * S_k + O_k of its buffer: S_k = L_k and O_k = 0 for
// a whole input, a longer row and an offset for a SLICE of a wider tensor read in place (the
// SLICE gets no dispatch: torch.roll's halves; backend.cpp, fold_concat_slices). Unused input
// bindings are bound to input 0 and never read.
layout(local_size_x = 64) in;

layout(constant_id = 0) const int N = 1;      // inputs in this dispatch (1..8)
layout(constant_id = 1) const int OUTER = 1;  // rows
layout(constant_id = 2) const int ROW = 1;    // output row length (units)
layout(constant_id = 3) const int BASE = 0;   // first output unit of a row this dispatch writes
layout(constant_id = 4) const int L0 = 0;
layout(constant_id = 5) const int L1 = 0;
layout(constant_id = 6) const int L2 = 0;
layout(constant_id = 7) const int L3 = 0;
layout(constant_id = 8) const int L4 = 0;
layout(constant_id = 9) const int L5 = 0;
layout(constant_id = 10) const int L6 = 0;
layout(constant_id = 11) const int L7 = 0;
layout(constant_id = 12) const int S0 = 0;  // input row strides (units)
layout(constant_id = 13) const int S1 = 0;
layout(constant_id = 14) const int S2 = 0;
layout(constant_id = 15) const int S3 = 0;
layout(constant_id = 16) const int S4 = 0;
layout(constant_id = 17) const int S5 = 0;
layout(constant_id = 18) const int S6 = 0;
layout(constant_id = 19) const int S7 = 0;
layout(constant_id = 20) const int O0 = 0;  // input offsets (units)
layout(constant_id = 21) const int O1 = 0;
layout(constant_id = 22) const int O2 = 0;
layout(constant_id = 23) const int O3 = 0;
layout(constant_id = 24) const int O4 = 0;
layout(constant_id = 25) const int O5 = 0;
layout(constant_id = 26) const int O6 = 0;
layout(constant_id = 27) const int O7 = 0;

layout(std430, set = 0, binding = 0) restrict readonly buffer In0 { uint in0[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer In1 { uint in1[]; };
layout(std430, set = 0, binding = 2) restrict readonly buffer In2 { uint in2[]; };
layout(std430, set = 0, binding = 3) restrict readonly buffer In3 { uint in3[]; };
layout(std430, set = 0, binding = 4) restrict readonly buffer In4 { uint in4[]; };
layout(std430, set = 0, binding = 5) restrict readonly buffer In5 { uint in5[]; };
layout(std430, set = 0, binding = 6) restrict readonly buffer In6 { uint in6[]; };
layout(std430, set = 0, binding = 7) restrict readonly buffer In7 { uint in7[]; };
layout(std430, set = 0, binding = 8) writeonly buffer Out { uint outp[]; };

const int P1 = L0;
const int P2 = P1 + L1;
const int P3 = P2 + L2;
const int P4 = P3 + L3;
const int P5 = P4 + L4;
const int P6 = P5 + L5;
const int P7 = P6 + L6;
const int SLAB = P7 + L7;

void main() {
  const uint id = flat_id();
  if (id >= uint(OUTER) * uint(SLAB)) return;
  const int o = int(id / uint(SLAB));
  const int j = int(id % uint(SLAB));
  uint v;
  if (j < P1) v = in0[o * S0 + O0 + j];
  else if (j < P2) v = in1[o * S1 + O1 + (j - P1)];
  else if (j < P3) v = in2[o * S2 + O2 + (j - P2)];
  else if (j < P4) v = in3[o * S3 + O3 + (j - P3)];
  else if (j < P5) v = in4[o * S4 + O4 + (j - P4)];
  else if (j < P6) v = in5[o * S5 + O5 + (j - P5)];
  else if (j < P7) v = in6[o * S6 + O6 + (j - P6)];
  else v = in7[o * S7 + O7 + (j - P7)];
  outp[o * ROW + BASE + j] = v;
}
