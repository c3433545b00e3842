#version 450
// Fused fp16 attention on cooperative matrices: O = softmax(scale * Q K^T + mask) V in one dispatch,
// for the same three members as mx_attention.comp (ops_tensor.cpp, lower_attention), on devices with
// cooperative matrices (Caps::coop_matrix_f16: 16x16x16 fp16 x fp16 + fp32, subgroups of 32).
//
// A workgroup of four subgroups of 32 owns 16 query rows of one batch (gl_WorkGroupID.x: the row
// block, .y: the batch). Every key is seen at once, so the softmax is exact (no running maximum, no
// rescaling):
//   1. Each subgroup loads Q's 16 x D block into D / 16 fragments straight from memory and computes
//      the scores of every fourth block of 16 keys: Q K^T over D / 16 fragments of K^T (read in
//      place, column-major: K's rows are the keys, d contiguous), stored as fp32 into Ss (16 x LK).
//   2. Eight invocations per row take the scores as the decomposed graph forms them (rounded to fp16
//      after the product, the mask and the scale, in the graph's order), then its softmax as
//      mx_rownorm computes it in fp32 (m = max, e = exp(x - m), p = e * (1 / sum e)), and write p
//      rounded to fp16 into Ps, as the SOFTMAX stores it.
//   3. Each subgroup accumulates every fourth 16-column fragment of O = P V in fp32 (P from Ps, V
//      read in place, row-major); O goes through Ss and is stored rounded to fp16, as the second
//      MATMUL stores it.
// So the result is the decomposed graph's on the cooperative-matrix GEMMs up to the order of the
// fp32 sums. A NaN or +inf score makes its row NaN, as does a row of -inf scores only.
//
// Query and key counts that are not multiples of 16 (ViT's 197 tokens): the grid has LQ / 16 row
// blocks rounded up, and the keys are counted to LKP, LK rounded up to 16. Before step 1 the
// workgroup copies the last, partial block of keys of K and of V (and, in the last row block, the
// partial block of Q) into shared memory, zero beyond the real rows, and the fragments of those
// blocks are loaded from there; nothing past a real row is read from memory. The padded keys' scores are -inf in the softmax (probability 0; their V rows are
// zero, so no NaN enters P V), the padded queries' rows are computed and not stored.
//
// The lowering checks: fp16 Q, K, V, O and mask; D a multiple of 16 of at most 128, LKP at most
// 256; Q and K^T / V with d contiguous, their offsets, batch strides (and outer strides) and row /
// key strides multiples of 8 halves (16-byte fragment rows); SP = max(LKP, D) + 4 floats of shared
// memory per score row, PP = LKP / 8 + 1 16-byte vectors per probability row; 128 invocations.
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 128) in;  // four subgroups of 32

layout(constant_id = 0) const int T = DT_F16;  // storage of Q, K, V, O and the mask (fp16)
layout(constant_id = 1) const int LQ = 16;     // query rows per batch
layout(constant_id = 2) const int LK = 16;     // keys per batch
layout(constant_id = 3) const int D = 16;      // head size (a multiple of 16, at most 128)
layout(constant_id = 4) const int SCALE_BITS = 0x3f800000;
layout(constant_id = 5) const int HAS_SCALE = 0;
// Q [batch][q][d]: element at Q_OFF + batch offset + q * Q_ROW + d.
layout(constant_id = 6) const int Q_OFF = 0;
layout(constant_id = 7) const int Q_BATCH = 0;
layout(constant_id = 8) const int Q_ROW = 0;
layout(constant_id = 9) const int Q_SPLIT = 0;
layout(constant_id = 10) const int Q_OUTER = 0;
// K^T [batch][d][j]: element at K_OFF + batch offset + j * K_J + d (d contiguous).
layout(constant_id = 11) const int K_OFF = 0;
layout(constant_id = 12) const int K_BATCH = 0;
layout(constant_id = 13) const int K_J = 0;
layout(constant_id = 14) const int K_SPLIT = 0;
layout(constant_id = 15) const int K_OUTER = 0;
// V [batch][j][d]: element at V_OFF + batch offset + j * V_J + d (d contiguous).
layout(constant_id = 16) const int V_OFF = 0;
layout(constant_id = 17) const int V_BATCH = 0;
layout(constant_id = 18) const int V_J = 0;
layout(constant_id = 19) const int V_SPLIT = 0;
layout(constant_id = 20) const int V_OUTER = 0;
// O [batch][q][d] (d contiguous): element at batch offset + q * O_ROW + d.
layout(constant_id = 21) const int O_BATCH = 0;
layout(constant_id = 22) const int O_ROW = 0;
layout(constant_id = 23) const int O_SPLIT = 0;
layout(constant_id = 24) const int O_OUTER = 0;
// The additive mask: 0 none, 1 added after the scale, 2 before it; score (b, q, j), flat index
// o = (b LQ + q) LK + j, adds mask[(o / MASK_BC) * MASK_C + o % MASK_C].
layout(constant_id = 25) const int MASK = 0;
layout(constant_id = 26) const int MASK_BC = 1;
layout(constant_id = 27) const int MASK_C = 1;
layout(constant_id = 28) const int SP = 20;  // Ss row pitch in floats: max(LKP, D) + 4
layout(constant_id = 29) const int PP = 3;   // Ps row pitch in 8-half vectors: LKP / 8 + 1

// Q, K and V as 8-half vectors (fragment loads count offsets and strides in them).
layout(std430, set = 0, binding = 0) restrict readonly buffer QVec { uvec4 q_v[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer KVec { uvec4 k_v[]; };
layout(std430, set = 0, binding = 2) restrict readonly buffer VVec { uvec4 v_v[]; };
TENSOR(3, ov, T)
TENSOR_RO(4, mv, T)

const int DF = D / 16;  // fragments along the head (at most 8)
const int LKP = (LK + 15) / 16 * 16;  // the key count rounded up to 16
const int NP = LKP / 16;  // key pairs per softmax invocation (LKP / 2 pairs over 8 invocations; at most 16)
const int QT = (LQ % 16 + 15) / 16, KT = (LK % 16 + 15) / 16;  // 1 where the last block is partial
const int TV = 2 * DF;  // 8-half vectors per row of a staged block
shared float Ss[16 * SP];
shared uint Ps[16 * PP * 4];
// The partial blocks (one vector where there is none): Q's last 16 rows, K's and V's last 16 keys,
// [row][d] as 8-half vectors, zero beyond the real rows.
shared uvec4 Tq[1 + QT * (16 * TV - 1)];
shared uvec4 Tk[1 + KT * (16 * TV - 1)];
shared uvec4 Tv[1 + KT * (16 * TV - 1)];

float max_nan(float a, float b) { return (isnan(a) || isnan(b)) ? a + b : max(a, b); }

void main() {
  const int lid = int(gl_LocalInvocationIndex), sg = int(gl_SubgroupID);
  const int b = int(gl_WorkGroupID.y), q0 = int(gl_WorkGroupID.x) * 16;
  const int qbase = Q_OFF + split_batch_offset(b, Q_SPLIT, Q_BATCH, Q_OUTER) + q0 * Q_ROW;
  const int kbase = K_OFF + split_batch_offset(b, K_SPLIT, K_BATCH, K_OUTER);
  const int vbase = V_OFF + split_batch_offset(b, V_SPLIT, V_BATCH, V_OUTER);
  const float NEG_INF = uintBitsToFloat(0xff800000u);
  const float scale = intBitsToFloat(SCALE_BITS);

  // 0. The partial blocks into shared memory (uniform: every invocation takes the same branches).
  const bool qtail = QT != 0 && q0 + 16 > LQ;
  if (KT != 0) {
    for (int e = lid; e < 16 * TV; e += 128) {
      const int j = LKP - 16 + e / TV, d = 8 * (e % TV);
      Tk[e] = j < LK ? k_v[(kbase + j * K_J + d) / 8] : uvec4(0u);
      Tv[e] = j < LK ? v_v[(vbase + j * V_J + d) / 8] : uvec4(0u);
    }
  }
  if (qtail) {
    for (int e = lid; e < 16 * TV; e += 128) {
      const int r = e / TV, d = 8 * (e % TV);
      Tq[e] = q0 + r < LQ ? q_v[(qbase + r * Q_ROW + d) / 8] : uvec4(0u);
    }
  }
  if (KT != 0 || qtail) barrier();

  // 1. Scores: subgroup sg takes the key blocks sg, sg + 4, ...
  fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> qf[8];
  [[unroll]] for (int c = 0; c < 8; ++c) {
    if (c >= DF) continue;
    if (qtail)
      coopMatLoadNV(qf[c], Tq, uint(2 * c), uint(TV), false);
    else
      coopMatLoadNV(qf[c], q_v, uint((qbase + 16 * c) / 8), uint(Q_ROW / 8), false);
  }
  for (int j0 = 16 * sg; j0 < LKP; j0 += 64) {
    const bool ktail = KT != 0 && j0 == LKP - 16;
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> s = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
    [[unroll]] for (int c = 0; c < 8; ++c) {
      if (c >= DF) continue;
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> kf;
      if (ktail)
        coopMatLoadNV(kf, Tk, uint(2 * c), uint(TV), true);
      else
        coopMatLoadNV(kf, k_v, uint((kbase + j0 * K_J + 16 * c) / 8), uint(K_J / 8), true);
      s = coopMatMulAddNV(qf[c], kf, s);
    }
    coopMatStoreNV(s, Ss, uint(j0), uint(SP), false);
  }
  barrier();

  // 2. Softmax: eight invocations per row (r = lid / 8, within one subgroup); invocation g takes
  // the key pairs c = g + 8 i (keys 2c, 2c + 1), all loaded before any is used. A padded key's
  // score is -inf; a padded query row (never stored) reads no mask.
  {
    const int r = lid / 8, g = lid % 8, q = q0 + r;
    vec2 x[16];
    float m = NEG_INF;
    [[unroll]] for (int i = 0; i < 16; ++i) {
      if (i >= NP) continue;
      const int j = 2 * (g + 8 * i);
      x[i] = vec2(Ss[r * SP + j], Ss[r * SP + j + 1]);
      vec2 mk = vec2(0.0);
      if (MASK != 0 && q < LQ) {
        const uint o = uint((b * LQ + q) * LK + j);
        if (j < LK) mk.x = mv_ldf((o / uint(MASK_BC)) * uint(MASK_C) + o % uint(MASK_C));
        if (j + 1 < LK) mk.y = mv_ldf(((o + 1u) / uint(MASK_BC)) * uint(MASK_C) + (o + 1u) % uint(MASK_C));
      }
      [[unroll]] for (int t = 0; t < 2; ++t) {
        float y = rte16(x[i][t]);
        if (MASK == 2) y = rte16(y + mk[t]);
        if (HAS_SCALE != 0) y = rte16(y * scale);
        if (MASK == 1) y = rte16(y + mk[t]);
        if (KT != 0 && j + t >= LK) y = NEG_INF;
        x[i][t] = y;
        m = max_nan(m, y);
      }
    }
    m = max_nan(m, subgroupShuffleXor(m, 1u));
    m = max_nan(m, subgroupShuffleXor(m, 2u));
    m = max_nan(m, subgroupShuffleXor(m, 4u));
    float sum = 0.0;
    [[unroll]] for (int i = 0; i < 16; ++i) {
      if (i >= NP) continue;
      x[i] = exp(x[i] - m);
      sum += x[i].x + x[i].y;
    }
    sum += subgroupShuffleXor(sum, 1u);
    sum += subgroupShuffleXor(sum, 2u);
    sum += subgroupShuffleXor(sum, 4u);
    const float inv = 1.0 / sum;
    [[unroll]] for (int i = 0; i < 16; ++i) {
      if (i >= NP) continue;
      Ps[r * PP * 4 + g + 8 * i] = packHalf2x16(vec2(rte16(x[i].x * inv), rte16(x[i].y * inv)));
    }
  }
  barrier();

  // 3. O = P V: subgroup sg takes the head fragments sg, sg + 4.
  [[unroll]] for (int c0 = 0; c0 < 8; c0 += 4) {
    const int c = c0 + sg;
    if (c >= DF) continue;
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> o = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
    for (int j0 = 0; j0 < LKP; j0 += 16) {
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> pf, vf;
      coopMatLoadNV(pf, Ps, uint(j0 / 2), uint(PP * 4), false);
      if (KT != 0 && j0 == LKP - 16)
        coopMatLoadNV(vf, Tv, uint(2 * c), uint(TV), false);
      else
        coopMatLoadNV(vf, v_v, uint((vbase + j0 * V_J + 16 * c) / 8), uint(V_J / 8), false);
      o = coopMatMulAddNV(pf, vf, o);
    }
    coopMatStoreNV(o, Ss, uint(16 * c), uint(SP), false);  // (the scores are consumed: barrier above)
  }
  barrier();
  const int obase = split_batch_offset(b, O_SPLIT, O_BATCH, O_OUTER) + q0 * O_ROW;
  const int rows = min(16, LQ - q0);
  for (int e = lid; e < rows * D; e += 128) {
    const int row = e / D, d = e % D;
    ov_stf(uint(obase + row * O_ROW + d), Ss[row * SP + d]);
  }
}
