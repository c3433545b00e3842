#version 450
// Second pass of a split-K tiled GEMM (tc_gemm.glsl with SPLIT > 1): adds the SPLIT partial sums of
// each output in slice order, then finishes it as the GEMM would have: the convolution bias (rounded
// as the reference), the fused post-ops, the store. Specialization constants share tc_gemm's ids.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64) in;

layout(constant_id = 2) const int T_BIAS = DT_F32;
layout(constant_id = 3) const int T_RES = DT_F32;
layout(constant_id = 4) const int T_OUT = DT_F32;
layout(constant_id = 5) const int M = 1;
layout(constant_id = 6) const int N = 1;
layout(constant_id = 16) const int OUT_BIAS = 0;
layout(constant_id = 17) const int BIAS_BCAST = 0;
layout(constant_id = 59) const int SPLIT = 1;
layout(constant_id = 61) const int NBATCH = 1;
layout(constant_id = 69) const int OUT_VIEW = 0;  // a strided destination (tc_gemm.glsl's out_index)
layout(constant_id = 70) const int OUT_BATCH = 0;
layout(constant_id = 71) const int OUT_ROW = 0;
layout(constant_id = 72) const int OUT_SPLIT = 0;
layout(constant_id = 73) const int OUT_OUTER = 0;

layout(std430, set = 0, binding = 0) restrict readonly buffer PartB { float part[]; };
TENSOR_RO(1, bias, T_BIAS)
TENSOR_RO(2, res, T_RES)
TENSOR(3, outp, T_OUT)

#include "tc_epilogue.glsl"

void main() {
  const uint o = flat_id();
  const uint total = uint(NBATCH * M * N);
  if (o >= total) return;
  float v = 0.0;
  for (int s = 0; s < SPLIT; ++s) v += part[uint(s) * total + o];
  const uint n = o % uint(N);
  if (OUT_BIAS != 0) {
    const float bb = bias_ldf(BIAS_BCAST != 0 ? 0u : n);
    v = T_OUT == DT_F16 ? r16(r16(v) + bb) : v + bb;
  }
  uint at = o;
  if (OUT_VIEW != 0) {
    const int b = int(o / uint(M * N)), m = int((o / uint(N)) % uint(M));
    at = uint(split_batch_offset(b, OUT_SPLIT, OUT_BATCH, OUT_OUTER) + m * OUT_ROW) + n;
  }
  outp_stf(at, epilogue(v, o, n));
}
