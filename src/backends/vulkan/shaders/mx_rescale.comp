#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// RESCALE, one invocation per element, in the exact 64-bit arithmetic of the TOSA 1.0 pseudocode
// (apply_scale_32 / apply_scale_16 of scale_helpers.tosac):
//   value = in (zero-extended from 8/16 bits when input_unsigned) - input_zp
//   result = int32((value * multiplier + round) >> shift), round = 1 << (shift - 1), with
//            DOUBLE_ROUND and shift > 31 moved 2^30 away from zero (the second rounding step)
//   out = clamp(result + output_zp, OUT_LO, OUT_HI), stored with its bit pattern (unsigned outputs
//         in the signed storage type).
// Binding 1 holds (multiplier, shift) int32 pairs, one per channel (the last dimension) or one.
// The REQUIREs on the value's range are the caller's to meet (TOSA leaves the result unpredictable).

layout(constant_id = 0) const int T_IN = DT_I8;
layout(constant_id = 1) const int T_OUT = DT_I8;
layout(constant_id = 2) const int N = 1;
layout(constant_id = 3) const int NC = 1;
layout(constant_id = 4) const int DOUBLE_ROUND = 0;
layout(constant_id = 5) const int IN_MASK = 0;  // 0xff / 0xffff with input_unsigned, else 0
layout(constant_id = 6) const int IZP = 0;
layout(constant_id = 7) const int OZP = 0;
layout(constant_id = 8) const int OUT_LO = -128;
layout(constant_id = 9) const int OUT_HI = 127;
layout(local_size_x = 64) in;

TENSOR_RO(0, X, T_IN)
layout(std430, set = 0, binding = 1) restrict readonly buffer Params { int params[]; };
TENSOR(2, Y, T_OUT)

void main() {
  const uint i = flat_id();
  if (i >= uint(N)) return;
  int64_t value = X_ldl(i);
  if (IN_MASK != 0) value &= int64_t(IN_MASK);
  value -= int64_t(IZP);
  const uint c = NC == 1 ? 0u : i % uint(NC);
  const int64_t multiplier = int64_t(params[2u * c]);
  const int shift = params[2u * c + 1u];
  int64_t round = int64_t(1) << (shift - 1);
  // +2^30 for value >= 0, -2^30 below, branch-free (lavapipe mis-evaluates the int64 compare value >= 0 here).
  if (DOUBLE_ROUND != 0 && shift > 31) round += (int64_t(1) << 30) - ((value >> 63) & (int64_t(1) << 31));
  const int result = int((value * multiplier + round) >> shift);
  const int64_t biased = int64_t(result) + int64_t(OZP);
  Y_stl(i, clamp(biased, int64_t(OUT_LO), int64_t(OUT_HI)));
}
