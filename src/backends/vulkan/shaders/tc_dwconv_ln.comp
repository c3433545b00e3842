#version 450
// A DEPTHWISE_CONV2D and the LAYER_NORM region over its channels that alone reads its result, as one
// dispatch (ops_tensor.cpp, lower_depthwise_layer_norm): ConvNeXt's block, a 7 x 7 depthwise
// convolution and the layer norm of each pixel's channels. The convolution's result never reaches
// memory.
//
// A row group of LANES invocations (a multiple of the subgroup size, at most 1024) owns XB
// consecutive output pixels along x of one output row; invocation `lane` computes channels
// lane + j * LANES of each (one channel where a workgroup holds them all).
// The convolution is tc_conv's depthwise_rows (channel multiplier 1, float accumulation, stride and
// dilation 1 along x): taps in the reference's order, taps outside the input skipped, each input row
// segment loaded once for the XB outputs, and the value rounded to the convolution's result type
// (T_MID) with its bias added, exactly as tc_conv would have stored it. The layer norm is
// mx_rownorm's MODE 1 on those values, kept in registers: mean = sum * INV_N, d = x - mean,
// var = sum(d * d) * INV_N, y = d * inversesqrt(var + EPS) * gamma[c] + beta[c] (binding 3: gamma[C]
// then beta[C] as fp32). Sums go by invocation, then over the subgroup (subgroupAdd), then over the
// row group's subgroups through shared memory; where the subgroups at run time are not SG wide, by a
// tree in shared memory.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

layout(constant_id = 0) const int T_IN = DT_F32;
layout(constant_id = 1) const int T_W = DT_F32;
layout(constant_id = 2) const int T_MID = DT_F32;  // the convolution's result and bias type
layout(constant_id = 3) const int T_OUT = DT_F32;  // the layer norm's result type
layout(constant_id = 4) const int C = 1;           // channels (the row length)
layout(constant_id = 5) const int KH = 1;
layout(constant_id = 6) const int KW = 1;
layout(constant_id = 7) const int OH = 1;
layout(constant_id = 8) const int OW = 1;
layout(constant_id = 9) const int VH = 1;  // the convolution's input (after a folded PAD)
layout(constant_id = 10) const int VW = 1;
layout(constant_id = 11) const int SH = 1;  // the source tensor inside it, at PT, PL
layout(constant_id = 12) const int SW = 1;
layout(constant_id = 13) const int PT = 0;
layout(constant_id = 14) const int PL = 0;
layout(constant_id = 15) const int STR_Y = 1;
layout(constant_id = 16) const int DIL_Y = 1;
layout(constant_id = 17) const int PAD_Y = 0;
layout(constant_id = 18) const int PAD_X = 0;
layout(constant_id = 19) const int FILL = 0;  // folded PAD value (float bits)
layout(constant_id = 20) const int BIAS_BCAST = 0;
layout(constant_id = 21) const int GROUPS = 1;  // row groups: N * OH * ceil(OW / XB)
layout(constant_id = 22) const int LANES = 32;  // invocations per row group (a multiple of SG)
layout(constant_id = 23) const int ROWS = 1;    // row groups per workgroup
layout(constant_id = 24) const int XB = 1;      // output pixels per row group (1 or 2)
layout(constant_id = 25) const int SG = 32;     // the subgroup size LANES was chosen for (0: the tree)
layout(constant_id = 26) const int EPS_BITS = 0;
layout(constant_id = 27) const int INV_N_BITS = 0;
layout(local_size_x_id = 28) in;  // LANES * ROWS

TENSOR_RO(0, x, T_IN)
TENSOR_RO(1, w, T_W)
TENSOR_RO(2, bias, T_MID)
layout(std430, set = 0, binding = 3) restrict readonly buffer Affine { float affine[]; };
TENSOR(4, outp, T_OUT)

const int CPL_MAX = 8;  // channels per invocation (the lowering keeps C <= CPL_MAX * LANES)
const int CPL = (C + LANES - 1) / LANES;
// The power of two at or above LANES (the shared-memory tree's first stride is half of it).
const int POW2 = LANES <= 32 ? 32 : LANES <= 64 ? 64 : LANES <= 128 ? 128 : LANES <= 256 ? 256 : LANES <= 512 ? 512 : 1024;

shared float s_red[LANES * ROWS];

// The sum of v over the LANES invocations of row group `slot`; every invocation calls it.
float row_sum(float v, uint slot, uint lane) {
  if (gl_SubgroupSize == uint(SG)) {  // uniform
    const float s = subgroupAdd(v);
    if (LANES == SG) return s;
    const uint per = uint(LANES / max(SG, 1));  // (SG 0: this branch is never taken)
    if (gl_SubgroupInvocationID == 0u) s_red[slot * per + lane / uint(max(SG, 1))] = s;
    barrier();
    float t = 0.0;
    for (uint i = 0u; i < per; ++i) t += s_red[slot * per + i];
    barrier();  // s_red is reused by the next sum
    return t;
  }
  const uint at = slot * uint(LANES);
  s_red[at + lane] = v;
  barrier();
  for (uint s = uint(POW2) / 2u; s > 0u; s >>= 1u) {
    if (lane < s && lane + s < uint(LANES)) {
      v += s_red[at + lane + s];
      s_red[at + lane] = v;
    }
    barrier();
  }
  const float r = s_red[at];
  barrier();
  return r;
}

float r16(float v) { return rte16(v); }

void main() {
  const uint slot = gl_LocalInvocationID.x / uint(LANES), lane = gl_LocalInvocationID.x % uint(LANES);
  const uint grp = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * uint(ROWS) + slot;
  // A row group past the last still takes part in the sums (their barriers) and writes nothing.
  const bool live = grp < uint(GROUPS);
  const int r = int(min(grp, uint(GROUPS) - 1u));
  const int OWB = (OW + XB - 1) / XB;
  const int ox0 = (r % OWB) * XB;
  const int oy = (r / OWB) % OH, n = r / OWB / OH;

  // The channels of this invocation, clamped into range: an invocation past C computes a copy of
  // the last channel (no divergent branch around the loads) and its values are masked below.
  precise float v[CPL_MAX * 2];
  [[unroll]] for (int i = 0; i < CPL_MAX * 2; ++i) v[i] = 0.0;
  for (int ky = 0; ky < KH; ++ky) {
    const int y = oy * STR_Y - PAD_Y + ky * DIL_Y;
    if (y < 0 || y >= VH) continue;  // uniform over the row group
    const int sy = y - PT;
    // Every channel's row segment is loaded before any is used (the loads overlap).
    [[unroll]] for (int j = 0; j < CPL_MAX; ++j) {
      if (j >= CPL) break;
      const int c = min(int(lane) + j * LANES, C - 1);
      float xv[XB + KW - 1];
      bool ok[XB + KW - 1];
      [[unroll]] for (int i = 0; i < XB + KW - 1; ++i) {
        const int xx = ox0 - PAD_X + i, sx = xx - PL;
        ok[i] = xx >= 0 && xx < VW;
        const bool in_source = ok[i] && sy >= 0 && sy < SH && sx >= 0 && sx < SW;
        xv[i] = in_source ? x_ldf(uint(((n * SH + sy) * SW + sx) * C + c)) : intBitsToFloat(FILL);
      }
      const int wb = c + ky * KW * C;
      [[unroll]] for (int kx = 0; kx < KW; ++kx) {
        const float wv = w_ldf(uint(wb + kx * C));
        [[unroll]] for (int b = 0; b < XB; ++b)
          if (ok[b + kx]) v[j * XB + b] = v[j * XB + b] + xv[b + kx] * wv;  // (a skipped tap otherwise)
      }
    }
  }
  [[unroll]] for (int j = 0; j < CPL_MAX; ++j) {
    if (j >= CPL) break;
    const int c = int(lane) + j * LANES;
    const float bb = bias_ldf(BIAS_BCAST != 0 ? 0u : uint(min(c, C - 1)));
    [[unroll]] for (int b = 0; b < XB; ++b)
      v[j * XB + b] = c >= C ? 0.0 : T_MID == DT_F16 ? r16(r16(v[j * XB + b]) + bb) : v[j * XB + b] + bb;
  }

  const float inv_n = intBitsToFloat(INV_N_BITS);
  [[unroll]] for (int b = 0; b < XB; ++b) {
    float s = 0.0;
    [[unroll]] for (int j = 0; j < CPL_MAX; ++j)
      if (j < CPL) s += v[j * XB + b];  // channels past C hold 0
    const float mean = row_sum(s, slot, lane) * inv_n;
    float q = 0.0;
    [[unroll]] for (int j = 0; j < CPL_MAX; ++j)
      if (j < CPL && int(lane) + j * LANES < C) {
        v[j * XB + b] -= mean;
        q += v[j * XB + b] * v[j * XB + b];
      }
    const float rstd = inversesqrt(row_sum(q, slot, lane) * inv_n + intBitsToFloat(EPS_BITS));
    const int ox = ox0 + b;
    if (!live || ox >= OW) continue;
    const uint base = uint(((n * OH + oy) * OW + ox) * C);
    [[unroll]] for (int j = 0; j < CPL_MAX; ++j) {
      const int c = int(lane) + j * LANES;
      if (j < CPL && c < C) outp_stf(base + uint(c), v[j * XB + b] * rstd * affine[c] + affine[C + c]);
    }
  }
}
