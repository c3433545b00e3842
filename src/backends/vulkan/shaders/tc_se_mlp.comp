#version 450
// Squeeze-and-excitation's two small convolutions in one dispatch: on a pooled [N, 1, 1, C0] input,
// h = act1(conv1(x) + b1) ([N, 1, 1, R]) and y = act2(conv2(h) + b2) ([N, 1, 1, C2]), both 1x1. Apart
// they were two or three dispatches of a few microseconds each (a split-K GEMM and its second pass,
// then a GEMM), which at batch 1 the GPU mostly waits on. Opt-in (WEFT_VULKAN_SE=on): on an H200 it
// was faster on EfficientNet's, RegNet's and MobileNetV3's SE blocks and slower on MaxViT's larger
// ones (ops_tensor.cpp, plan_se_mlp).
//
// One workgroup per image, as large as the device allows (up to 1024 invocations). It stages x in
// shared memory; each subgroup then computes four outputs of conv1 at a time (its invocations stride
// over the input channels, subgroupAdd sums them) and stores h in shared memory; each invocation
// then computes outputs of conv2 alone (R is short). Subgroups are taken as the device runs them
// (gl_SubgroupID, gl_SubgroupSize), so any subgroup width works. fp32 accumulation; the sums are
// ordered differently from the reference's (fp32 results within a few ulp of it per product).
//
// Each result is finished as tc_gemm's `finish` does: rounded to its convolution's result type with
// the bias added, post-ops in fp32, rounded once when stored. conv1's post-ops are activations only
// (A_K*, the epilogue's kinds and parameters at ids 60..75); conv2's are the usual epilogue (ids
// 40..55, with per-channel constants behind its bias).
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

layout(local_size_x_id = 20) in;

layout(constant_id = 0) const int T_X = DT_F32;
layout(constant_id = 1) const int T_W1 = DT_F32;
layout(constant_id = 2) const int T_B1 = DT_F32;
layout(constant_id = 3) const int T_H = DT_F32;    // conv1's result type
layout(constant_id = 4) const int T_W2 = DT_F32;
layout(constant_id = 5) const int T_BIAS = DT_F32;  // conv2's bias (and the per-channel constants behind it)
layout(constant_id = 6) const int T_RES = DT_F32;   // (bound, never read: conv2 takes no residual)
layout(constant_id = 7) const int T_OUT = DT_F32;
layout(constant_id = 8) const int C0 = 1;   // conv1's input channels
layout(constant_id = 9) const int R = 1;    // conv1's output channels, conv2's input channels
layout(constant_id = 10) const int C2 = 1;  // conv2's output channels
layout(constant_id = 11) const int B1_BCAST = 0;  // a bias of one element
layout(constant_id = 12) const int B2_BCAST = 0;
layout(constant_id = 13) const int MAX_C = 1;     // max(C0, R): shared memory per vector
// conv2's weights transposed at preparation, [R][C2] (constant weights): neighbouring invocations,
// each computing one output, then read neighbouring weights. Row by row ([C2][R], as the
// convolution holds them) each load of a subgroup touched as many cache lines as it has lanes.
layout(constant_id = 14) const int W2T = 0;

layout(constant_id = 60) const int A_K0 = 0;
layout(constant_id = 61) const int A_K1 = 0;
layout(constant_id = 62) const int A_K2 = 0;
layout(constant_id = 63) const int A_K3 = 0;
layout(constant_id = 64) const int A_P00 = 0;
layout(constant_id = 65) const int A_P01 = 0;
layout(constant_id = 66) const int A_P02 = 0;
layout(constant_id = 67) const int A_P10 = 0;
layout(constant_id = 68) const int A_P11 = 0;
layout(constant_id = 69) const int A_P12 = 0;
layout(constant_id = 70) const int A_P20 = 0;
layout(constant_id = 71) const int A_P21 = 0;
layout(constant_id = 72) const int A_P22 = 0;
layout(constant_id = 73) const int A_P30 = 0;
layout(constant_id = 74) const int A_P31 = 0;
layout(constant_id = 75) const int A_P32 = 0;

TENSOR_RO(0, x, T_X)
TENSOR_RO(1, w1, T_W1)
TENSOR_RO(2, b1, T_B1)
TENSOR_RO(3, w2, T_W2)
TENSOR_RO(4, bias, T_BIAS)
TENSOR_RO(5, res, T_RES)
TENSOR(6, outp, T_OUT)

#include "tc_epilogue.glsl"

shared float xs[MAX_C];
shared float hs[MAX_C];

// conv1's post-ops: activations (no operand), in order.
float act1(float v) {
#define A_STEP(K, P0, P1, P2) \
  if (K != EP_NONE) v = ep_apply(K, intBitsToFloat(P0), intBitsToFloat(P1), intBitsToFloat(P2), v, 0u, 0u);
  A_STEP(A_K0, A_P00, A_P01, A_P02)
  A_STEP(A_K1, A_P10, A_P11, A_P12)
  A_STEP(A_K2, A_P20, A_P21, A_P22)
  A_STEP(A_K3, A_P30, A_P31, A_P32)
#undef A_STEP
  return v;
}

void main() {
  const uint n = gl_WorkGroupID.x;
  const uint lid = gl_LocalInvocationIndex, wg = gl_WorkGroupSize.x;
  const uint sg = gl_SubgroupID, sgs = gl_NumSubgroups, lane = gl_SubgroupInvocationID, width = gl_SubgroupSize;
  for (uint c = lid; c < uint(C0); c += wg) xs[c] = x_ldf(n * uint(C0) + c);
  barrier();
  // conv1: each subgroup four outputs at a time (their weight rows' loads in flight together).
  for (uint r0 = sg * 4u; r0 < uint(R); r0 += sgs * 4u) {
    vec4 acc = vec4(0.0);
    for (uint c = lane; c < uint(C0); c += width) {
      const float xc = xs[c];
      [[unroll]] for (uint u = 0u; u < 4u; ++u)
        if (r0 + u < uint(R)) acc[u] += xc * w1_ldf((r0 + u) * uint(C0) + c);
    }
    [[unroll]] for (uint u = 0u; u < 4u; ++u) {
      float v = subgroupAdd(acc[u]);
      const uint r = r0 + u;
      if (subgroupElect() && r < uint(R)) {
        const float bb = b1_ldf(B1_BCAST != 0 ? 0u : r);
        v = T_H == DT_F16 ? r16(r16(v) + bb) : v + bb;
        v = act1(v);
        hs[r] = T_H == DT_F16 ? r16(v) : v;
      }
    }
  }
  barrier();
  // conv2: one output per invocation (R is short), four partial sums so that loads overlap.
  for (uint o = lid; o < uint(C2); o += wg) {
    vec4 acc = vec4(0.0);
    // Weight (o, r) at o * R + r, or at r * C2 + o when transposed.
    const uint base = W2T != 0 ? o : o * uint(R), step = W2T != 0 ? uint(C2) : 1u;
    uint r = 0u;
    for (; r + 4u <= uint(R); r += 4u) {
      [[unroll]] for (uint u = 0u; u < 4u; ++u) acc[u] += hs[r + u] * w2_ldf(base + (r + u) * step);
    }
    for (; r < uint(R); ++r) acc[0] += hs[r] * w2_ldf(base + r * step);
    float v = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    const float bb = bias_ldf(B2_BCAST != 0 ? 0u : o);
    v = T_OUT == DT_F16 ? r16(r16(v) + bb) : v + bb;
    const uint at = n * uint(C2) + o;
    outp_stf(at, epilogue(v, at, o));
  }
}
