#version 450
// Fused attention: O = softmax(scale * Q K^T + mask) V in one dispatch, for the three members the
// partitioner leaves behind attention written out as MATMUL(Q, K^T) [+ SCALE] [+ MASK, before or
// after the scale], the SOFTMAX region over the keys, and MATMUL(P, V) (ops_tensor.cpp,
// lower_attention). Q, K^T, V and O are strided views of the tensors the projections wrote (the
// heads split out in place, as the MATMUL kernels read them); S and P never reach memory. The
// mask is an additive tensor broadcast to the scores ([B,1,1,S] padding, [1,1,S,S] causal), read
// as tc_epilogue.glsl's EP_MASK reads it.
//
// A workgroup of 128 invocations owns BQ = 32 query rows of one batch (gl_WorkGroupID.y) and walks
// the keys in tiles of BKV = 32 (flash-attention style, online softmax): per tile it stages K^T
// ([d][j]) and V ([j][d]) in shared memory, computes its 32 x 32 scores (invocation: 2 rows x 4 keys),
// takes each row's running maximum m through shared memory, rescales its output rows by
// exp(m_old - m_new), and adds exp(s - m_new) V (invocation: 2 rows x D/8 columns). At the end each
// row is multiplied by 1 / sum, as the decomposed softmax's RECIPROCAL and MUL do.
//
// Arithmetic is fp32. fp16 data is widened on load; the scores are rounded to fp16 after the
// product and after the scale, as the MATMUL and MUL they replace store them, and the result once
// on store. The softmax and the second product are not rounded in between (the decomposed graph
// rounds P to fp16): an fp16 result may differ from the unfused one by an fp16 rounding.
// A NaN or +inf score makes its row NaN, and so does a row of -inf scores only (1 / 0 * 0), as in
// the decomposed graph.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#define WG 128
#define BQ 32
#define BKV 32
layout(local_size_x = WG) in;

layout(constant_id = 0) const int T = DT_F32;  // Q, K, V and O storage
layout(constant_id = 1) const int LQ = 1;      // query rows per batch
layout(constant_id = 2) const int LK = 1;      // keys per batch
layout(constant_id = 3) const int D = 32;      // head size: a multiple of 32, at most 128
layout(constant_id = 4) const int SCALE_BITS = 0x3f800000;  // the SCALE post-op's factor (1.0: none)
layout(constant_id = 5) const int HAS_SCALE = 0;
// Q [batch][q][d] (d contiguous): element at Q_OFF + batch offset + q * Q_ROW + d.
layout(constant_id = 6) const int Q_OFF = 0;
layout(constant_id = 7) const int Q_BATCH = 0;
layout(constant_id = 8) const int Q_ROW = 0;
layout(constant_id = 9) const int Q_SPLIT = 0;
layout(constant_id = 10) const int Q_OUTER = 0;
// K^T [batch][d][j]: element at K_OFF + batch offset + d * K_D + j * K_J.
layout(constant_id = 11) const int K_OFF = 0;
layout(constant_id = 12) const int K_BATCH = 0;
layout(constant_id = 13) const int K_D = 0;
layout(constant_id = 14) const int K_J = 0;
layout(constant_id = 15) const int K_SPLIT = 0;
layout(constant_id = 16) const int K_OUTER = 0;
// V [batch][j][d]: element at V_OFF + batch offset + j * V_J + d * V_D.
layout(constant_id = 17) const int V_OFF = 0;
layout(constant_id = 18) const int V_BATCH = 0;
layout(constant_id = 19) const int V_J = 0;
layout(constant_id = 20) const int V_D = 0;
layout(constant_id = 21) const int V_SPLIT = 0;
layout(constant_id = 22) const int V_OUTER = 0;
// O [batch][q][d] (d contiguous): element at batch offset + q * O_ROW + d.
layout(constant_id = 23) const int O_BATCH = 0;
layout(constant_id = 24) const int O_ROW = 0;
layout(constant_id = 25) const int O_SPLIT = 0;
layout(constant_id = 26) const int O_OUTER = 0;
// Bit 0: K^T read as 4-element vectors along d (K_D == 1; K_OFF, K_BATCH, K_OUTER and K_J multiples
// of 4); bit 1: V likewise (V_D == 1; V_OFF, V_BATCH, V_OUTER and V_J multiples of 4). The next
// tile's vectors are then loaded into registers while the current one is computed.
layout(constant_id = 27) const int VEC = 0;
// The additive mask: 0 none, 1 added after the scale, 2 before it. Score (b, q, j), flat index
// o = (b LQ + q) LK + j, adds mask[(o / MASK_BC) * MASK_C + o % MASK_C].
layout(constant_id = 28) const int MASK = 0;
layout(constant_id = 29) const int MASK_BC = 1;
layout(constant_id = 30) const int MASK_C = 1;

TENSOR_RO(0, qv, T)
TENSOR_RO(1, kv, T)
TENSOR_RO(2, vv, T)
TENSOR(3, ov, T)
TENSOR_RO(4, mv, T)
layout(std430, set = 0, binding = 1) restrict readonly buffer KF4 { vec4 k_f4[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer KH4 { uvec2 k_h4[]; };  // fp16: 4 halves
layout(std430, set = 0, binding = 2) restrict readonly buffer VF4 { vec4 v_f4[]; };
layout(std430, set = 0, binding = 2) restrict readonly buffer VH4 { uvec2 v_h4[]; };
vec4 k_vec4(int i) {
  if (T != DT_F16) return k_f4[i / 4];
  const uvec2 h = k_h4[i / 4];
  return vec4(unpackHalf2x16(h.x), unpackHalf2x16(h.y));
}
vec4 v_vec4(int i) {
  if (T != DT_F16) return v_f4[i / 4];
  const uvec2 h = v_h4[i / 4];
  return vec4(unpackHalf2x16(h.x), unpackHalf2x16(h.y));
}

const int DC = D / 32;  // runs of 4 output columns per invocation (at most 4)
const int NV = D / 16;  // vectors of K (and of V) per invocation per tile (at most 8)
// Shared memory (D = 64: 28.5 KB): Q^T with rows of BQ + 2 floats, K^T with rows of BKV + 4
// (vec4 reads along the keys), V as [j][d], P^T as [j][q] (rows of BQ + 2), the row exchanges.
shared vec2 Qs[D * (BQ / 2 + 1)];
shared vec4 Ks[D * (BKV / 4 + 1)];
shared vec4 Vs[BKV * D / 4];
shared vec2 Ps[BKV * (BQ / 2 + 1)];
shared float Red[BQ * 8];

float r16(float x) { return T == DT_F16 ? rte16(x) : x; }

// The NaN-propagating maximum (the decomposed softmax's REDUCE_MAX).
float max_nan(float a, float b) { return (isnan(a) || isnan(b)) ? a + b : max(a, b); }

void main() {
  const int lid = int(gl_LocalInvocationIndex);
  const int tq = lid / 8, tk = lid % 8;  // rows 2 tq, 2 tq + 1; keys / column runs by tk
  const int b = int(gl_WorkGroupID.y), q0 = int(gl_WorkGroupID.x) * BQ;
  const int qbase = Q_OFF + split_batch_offset(b, Q_SPLIT, Q_BATCH, Q_OUTER);
  const int kbase = K_OFF + split_batch_offset(b, K_SPLIT, K_BATCH, K_OUTER);
  const int vbase = V_OFF + split_batch_offset(b, V_SPLIT, V_BATCH, V_OUTER);
  const float NEG_INF = uintBitsToFloat(0xff800000u);
  const float scale = intBitsToFloat(SCALE_BITS);

  // Q^T of this block (rows past LQ read as 0 and are never stored).
  for (int e = lid; e < BQ * D; e += WG) {
    const int q = e / D, d = e % D;
    const float x = q0 + q < LQ ? qv_ldf(uint(qbase + (q0 + q) * Q_ROW + d)) : 0.0;
    Qs[d * (BQ / 2 + 1) + q / 2][q % 2] = x;
  }

  float m[2] = {NEG_INF, NEG_INF};  // running row maxima
  float l[2] = {0.0, 0.0};          // this invocation's share of the running row sums
  // The output rows' accumulators, as named variables: an array indexed in loops could end up in
  // local memory (it did on NVIDIA, at a quarter of the speed).
  vec4 acc00 = vec4(0.0), acc01 = vec4(0.0), acc02 = vec4(0.0), acc03 = vec4(0.0);
  vec4 acc10 = vec4(0.0), acc11 = vec4(0.0), acc12 = vec4(0.0), acc13 = vec4(0.0);

  // Vector staging: K vector i of this invocation is key kj = (lid + 128 i) % 32, dims 4 kd .. 4 kd + 3
  // with kd = (lid + 128 i) / 32 (neighbouring invocations: neighbouring keys, so that the transposed
  // stores hit different banks); V vector i is key vj = (lid + 128 i) / (D / 4), dims 4 vd .. with
  // vd = (lid + 128 i) % (D / 4) (neighbouring invocations read neighbouring memory).
  vec4 kr[8], vr[8];
  const bool kvec = (VEC & 1) != 0, vvec = (VEC & 2) != 0;
  [[unroll]] for (int i = 0; i < 8; ++i) kr[i] = vr[i] = vec4(0.0);
#define PREFETCH(j0)                                                             \
  [[unroll]] for (int i = 0; i < 8; ++i) {                                       \
    if (i >= NV) continue;                                                       \
    const int e = lid + WG * i;                                                  \
    const int kj = e % BKV, kd = e / BKV, vj = e / (D / 4), vd = e % (D / 4);    \
    if (kvec) kr[i] = (j0) + kj < LK ? k_vec4(kbase + (j0 + kj) * K_J + 4 * kd) : vec4(0.0); \
    if (vvec) vr[i] = (j0) + vj < LK ? v_vec4(vbase + (j0 + vj) * V_J + 4 * vd) : vec4(0.0); \
  }
  PREFETCH(0)

  for (int j0 = 0; j0 < LK; j0 += BKV) {
    barrier();  // the previous tile's K, V and P are consumed (and Q is staged)
    [[unroll]] for (int i = 0; i < 8; ++i) {
      if (i >= NV) continue;
      const int e = lid + WG * i;
      const int kj = e % BKV, kd = e / BKV, vj = e / (D / 4), vd = e % (D / 4);
      if (kvec) [[unroll]] for (int c = 0; c < 4; ++c) Ks[(4 * kd + c) * (BKV / 4 + 1) + kj / 4][kj % 4] = kr[i][c];
      if (vvec) Vs[vj * (D / 4) + vd] = vr[i];
    }
    if (!kvec || !vvec) {
      for (int e = lid; e < BKV * D; e += WG) {
        const int j = e / D, d = e % D;
        const bool live = j0 + j < LK;
        if (!kvec) Ks[d * (BKV / 4 + 1) + j / 4][j % 4] = live ? kv_ldf(uint(kbase + d * K_D + (j0 + j) * K_J)) : 0.0;
        if (!vvec) Vs[(j * D + d) / 4][d % 4] = live ? vv_ldf(uint(vbase + (j0 + j) * V_J + d * V_D)) : 0.0;
      }
    }
    barrier();
    if (j0 + BKV < LK) PREFETCH(j0 + BKV)  // in flight while this tile is computed

    // Scores: rows 2 tq + r, keys j0 + 4 tk + i.
    vec4 s[2] = {vec4(0.0), vec4(0.0)};
    [[unroll]] for (int d = 0; d < D; ++d) {
      const vec2 qd = Qs[d * (BQ / 2 + 1) + tq];
      const vec4 kd = Ks[d * (BKV / 4 + 1) + tk];
      s[0] = fma(vec4(qd.x), kd, s[0]);
      s[1] = fma(vec4(qd.y), kd, s[1]);
    }
    float tmax[2];
    [[unroll]] for (int r = 0; r < 2; ++r) {
      tmax[r] = NEG_INF;
      const int q = q0 + 2 * tq + r;
      [[unroll]] for (int i = 0; i < 4; ++i) {
        const int j = j0 + 4 * tk + i;
        float mk = 0.0;
        if (MASK != 0 && q < LQ && j < LK) {
          const uint o = uint((b * LQ + q) * LK + j);
          mk = mv_ldf((o / uint(MASK_BC)) * uint(MASK_C) + o % uint(MASK_C));
        }
        float x = r16(s[r][i]);
        if (MASK == 2) x = r16(x + mk);
        if (HAS_SCALE != 0) x = r16(x * scale);
        if (MASK == 1) x = r16(x + mk);
        if (j >= LK) x = NEG_INF;  // past the last key: weight 0
        s[r][i] = x;
        tmax[r] = max_nan(tmax[r], x);
      }
      Red[(2 * tq + r) * 8 + tk] = tmax[r];
    }
    barrier();
    [[unroll]] for (int r = 0; r < 2; ++r) {
      float mt = NEG_INF;
      [[unroll]] for (int t = 0; t < 8; ++t) mt = max_nan(mt, Red[(2 * tq + r) * 8 + t]);
      const float mn = max_nan(m[r], mt);
      // exp(-inf - -inf) is NaN: a row whose keys so far were all -inf has nothing to rescale.
      const float alpha = m[r] == NEG_INF ? 0.0 : exp(m[r] - mn);
      m[r] = mn;
      l[r] *= alpha;
      if (r == 0) {
        acc00 *= alpha, acc01 *= alpha, acc02 *= alpha, acc03 *= alpha;
      } else {
        acc10 *= alpha, acc11 *= alpha, acc12 *= alpha, acc13 *= alpha;
      }
      [[unroll]] for (int i = 0; i < 4; ++i) {
        // A -inf score weighs 0 even while the row's maximum is still -inf.
        const float p = s[r][i] == NEG_INF ? 0.0 : exp(s[r][i] - mn);
        l[r] += p;
        Ps[(4 * tk + i) * (BQ / 2 + 1) + tq][r] = p;
      }
    }
    barrier();

    // Output rows 2 tq + r, columns 32 c + 4 tk + i.
    // (Keys past LK have p = 0 and V rows of 0.)
    [[unroll]] for (int j = 0; j < BKV; ++j) {
      const vec2 p = Ps[j * (BQ / 2 + 1) + tq];
#define PV_STEP(c)                                   \
  {                                                  \
    const vec4 v = Vs[j * (D / 4) + 8 * c + tk];     \
    acc0##c = fma(vec4(p.x), v, acc0##c);            \
    acc1##c = fma(vec4(p.y), v, acc1##c);            \
  }
      PV_STEP(0)
      if (DC > 1) PV_STEP(1)
      if (DC > 2) PV_STEP(2)
      if (DC > 3) PV_STEP(3)
    }
  }

  // Row sums: the eight invocations of a row each hold a share.
  barrier();
  [[unroll]] for (int r = 0; r < 2; ++r) Red[(2 * tq + r) * 8 + tk] = l[r];
  barrier();
  [[unroll]] for (int r = 0; r < 2; ++r) {
    const int q = q0 + 2 * tq + r;
    if (q >= LQ) continue;
    float sum = 0.0;
    [[unroll]] for (int t = 0; t < 8; ++t) sum += Red[(2 * tq + r) * 8 + t];
    const float inv = 1.0 / sum;
    const int obase = split_batch_offset(b, O_SPLIT, O_BATCH, O_OUTER) + q * O_ROW;
    [[unroll]] for (int c = 0; c < 4; ++c) {
      if (c >= DC) continue;
      const vec4 a = r == 0 ? (c == 0 ? acc00 : c == 1 ? acc01 : c == 2 ? acc02 : acc03)
                            : (c == 0 ? acc10 : c == 1 ? acc11 : c == 2 ? acc12 : acc13);
      [[unroll]] for (int i = 0; i < 4; ++i) ov_stf(uint(obase + 32 * c + 4 * tk + i), a[i] * inv);
    }
  }
}
