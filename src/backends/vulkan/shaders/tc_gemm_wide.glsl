// The body of tc_gemm128_coop and tc_gemm64_coop (included by tc_gemm.glsl under COOP_WIDE, after
// its specialization constants, bindings, finish(), conv_row(), conv_tap() and conv_source()): out = A x B over a BM x BN tile with
// cooperative matrices, SGM x SGN subgroups of 32 each computing FM x FN fragments of 16 x 16.
//
// Staging: per K step of 32, A's BM x 32 block as [m][k] and B's 32 x BN block as [k][n] in
// shared memory, rows padded by one vector (8 halves) against bank conflicts; two stages, so that
// one barrier per step suffices (a stage is written while the other is read). Every invocation
// moves AV vectors of A and BV of B per step, loaded into registers two steps ahead (two register
// sets: a step's loads are in flight while the two steps before it are multiplied). A vector is
// eight consecutive k of one row of A (for a convolution: eight input channels of one tap of one
// output pixel, as IC is a multiple of 8) or eight consecutive n of one row of B; vectors wholly
// outside the operands (rows >= M, k >= K, n >= N, taps in the padding) load as zeros or the
// folded PAD's fill. With B_NK, B's vectors are eight consecutive k of one column n, staged as
// [n][k] like A (its stage then holds BN rows of the A pitch).

#ifndef NSTAGE
#define NSTAGE 2               // shared-memory stages (1: write and read one stage, two barriers a step)
#endif
#define FM (BM / SGM / 16)     // fragments per subgroup along m
#define FN (BN / SGN / 16)     // and along n
#define AP (BK / 8 + 1)        // A's row pitch in shared memory, in vectors
#define BP (BN / 8 + 1)        // B's row pitch
#define A_STAGE (BM * AP)
#define B_STAGE (B_NK != 0 ? BN * AP : BK * BP)
#define AV (BM * BK / 8 / WG)  // vectors of A per invocation and step
#define BV (BK * BN / 8 / WG)  // and of B
#define A_PASS (WG / (BK / 8)) // rows of A per pass of the workgroup
#define B_PASS (WG / (BN / 8)) // rows (k) of B per pass
shared uvec4 As[NSTAGE * A_STAGE];
shared uvec4 Bs[NSTAGE * B_STAGE];

// Per A row this invocation stages (convolutions): the output pixel's batch and window origin.
int row_n[AV], row_d[AV], row_y[AV], row_x[AV];
bool row_ok[AV];

uvec4 fill_vector() {
  const uint h = packHalf2x16(vec2(intBitsToFloat(FILL))) & 0xffffu;
  const uint w = h | (h << 16);
  return uvec4(w);
}

// Loads step `step` (K columns kbeg + BK * step on) of both operands into registers: vectors
// wholly outside the operands (rows >= M, k >= kend, n >= N, taps in the padding) as zeros or the
// folded PAD's fill.
void load_step(int kbeg, int step, int kend, int batch, int m0, int n0, int aq, int ar, int bq, int bk,
               out uvec4 ra[AV], out uvec4 rb[BV]) {
  const int k = kbeg + step * BK + aq * 8;
  int ic = 0, kd = 0, ky = 0, kx = 0;
  if (CONV != 0) conv_tap(k, ic, kd, ky, kx);
  [[unroll]] for (int p = 0; p < AV; ++p) {
    uvec4 v = uvec4(0);
    if (row_ok[p] && (FULL_K || k < kend)) {
      if (CONV == 0) {
        v = a_v[uint(A_OFF + a_batch(batch) + (m0 + ar + A_PASS * p) * A_ROW + k) / 8u];
      } else {
        const int src = conv_source(row_n[p], row_d[p], row_y[p], row_x[p], kd, ky, kx, ic);
        if (src >= 0) v = a_v[uint(src) / 8u];
        else if (src == -2) v = fill_vector();
      }
    }
    ra[p] = v;
  }
  if (B_NK != 0) {
    [[unroll]] for (int p = 0; p < BV; ++p) {
      const int n = n0 + ar + A_PASS * p;
      rb[p] = (FULL_K || k < kend) && (FULL_N || n < N) ? b_v[uint(B_OFF + b_batch(batch) + n * B_N + k) / 8u] : uvec4(0);
    }
  } else {
    [[unroll]] for (int p = 0; p < BV; ++p) {
      const int kb = kbeg + step * BK + bk + B_PASS * p, n = n0 + bq * 8;
      rb[p] = (FULL_K || kb < kend) && (FULL_N || n < N) ? b_v[uint(B_OFF + b_batch(batch) + kb * B_K + n) / 8u] : uvec4(0);
    }
  }
}

// Writes a step's registers into stage `st` of shared memory.
void store_step(int st, int aq, int ar, int bq, int bk, uvec4 ra[AV], uvec4 rb[BV]) {
  [[unroll]] for (int p = 0; p < AV; ++p) As[st * A_STAGE + (ar + A_PASS * p) * AP + aq] = ra[p];
  if (B_NK != 0) [[unroll]] for (int p = 0; p < BV; ++p) Bs[st * B_STAGE + (ar + A_PASS * p) * AP + aq] = rb[p];
  else [[unroll]] for (int p = 0; p < BV; ++p) Bs[st * B_STAGE + (bk + B_PASS * p) * BP + bq] = rb[p];
}

// Multiplies the step in stage `st` into this subgroup's accumulators.
void multiply(int st, int qm, int qn, inout fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[FM][FN]) {
  [[unroll]] for (int kk = 0; kk < BK; kk += 16) {
    fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa[FM], fb[FN];
#if NSTAGE == 1
    // (The 64 x 64 parts: B's fragments first, then A's one at a time, to stay within 255 registers.)
    [[unroll]] for (int j = 0; j < FN; ++j) {
      if (B_NK != 0) coopMatLoadNV(fb[j], Bs, uint(st * B_STAGE + (qn + 16 * j) * AP + kk / 8), uint(AP), true);
      else coopMatLoadNV(fb[j], Bs, uint(st * B_STAGE + kk * BP + (qn + 16 * j) / 8), uint(BP), false);
    }
    [[unroll]] for (int i = 0; i < FM; ++i) {
      coopMatLoadNV(fa[i], As, uint(st * A_STAGE + (qm + 16 * i) * AP + kk / 8), uint(AP), false);
      [[unroll]] for (int j = 0; j < FN; ++j) acc[i][j] = coopMatMulAddNV(fa[i], fb[j], acc[i][j]);
    }
#else
    [[unroll]] for (int i = 0; i < FM; ++i)
      coopMatLoadNV(fa[i], As, uint(st * A_STAGE + (qm + 16 * i) * AP + kk / 8), uint(AP), false);
    [[unroll]] for (int j = 0; j < FN; ++j) {
      if (B_NK != 0) coopMatLoadNV(fb[j], Bs, uint(st * B_STAGE + (qn + 16 * j) * AP + kk / 8), uint(AP), true);
      else coopMatLoadNV(fb[j], Bs, uint(st * B_STAGE + kk * BP + (qn + 16 * j) / 8), uint(BP), false);
    }
    [[unroll]] for (int i = 0; i < FM; ++i)
      [[unroll]] for (int j = 0; j < FN; ++j) acc[i][j] = coopMatMulAddNV(fa[i], fb[j], acc[i][j]);
#endif
  }
}

void main() {
  const uint lid = gl_LocalInvocationIndex;
  const int n0 = int(gl_WorkGroupID.x) * BN, m0 = int(gl_WorkGroupID.y) * BM;
  const int batch = int(gl_WorkGroupID.z) / SPLIT, slice = int(gl_WorkGroupID.z) % SPLIT;
  const int kbeg = SPLIT > 1 ? slice * KSLICE : 0, kend = SPLIT > 1 ? min(K, kbeg + KSLICE) : K;
  // A: rows ar + A_PASS p, k vector aq; B: k rows bk + B_PASS p, n vector bq.
  const int aq = int(lid % uint(BK / 8)), ar = int(lid / uint(BK / 8));
  const int bq = int(lid % uint(BN / 8)), bk = int(lid / uint(BN / 8));
  // B_NK: B columns bnr + A_PASS p, k vector aq (the same split as A's rows).

  [[unroll]] for (int p = 0; p < AV; ++p) {
    const int m = m0 + ar + A_PASS * p;
    row_ok[p] = FULL_M || m < M;
    if (CONV != 0) conv_row(m, row_n[p], row_d[p], row_y[p], row_x[p]);
  }

  const int sg = int(gl_SubgroupID);
  const int qm = (sg / SGN) * (16 * FM), qn = (sg % SGN) * (16 * FN);  // this subgroup's part of the tile
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[FM][FN];
  [[unroll]] for (int i = 0; i < FM; ++i)
    [[unroll]] for (int j = 0; j < FN; ++j) acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);

  const int steps = (kend - kbeg + BK - 1) / BK;
  // Two register sets, so that each step's loads are issued two steps before its stage is written:
  // iteration s issues step s + 2 into the set step s came in (stored to shared memory already),
  // multiplies step s from its stage and stores step s + 1 into the other stage. The loop runs two
  // steps per pass, so that each set is named statically (no indexing of register arrays). The two
  // halves of each pass are written out rather than calls of one function with the sets as inout
  // arrays: that form (tried, H100) took the 128 tile from ~158 to 176-184 registers and ran
  // 4096^3 at 144 instead of 174 TFLOP/s, BERT b32's fp16 GPU time 0.615 -> 0.679 ms.
  uvec4 ra0[AV], rb0[BV], ra1[AV], rb1[BV];
  load_step(kbeg, 0, kend, batch, m0, n0, aq, ar, bq, bk, ra0, rb0);
  store_step(0, aq, ar, bq, bk, ra0, rb0);
  if (steps > 1) load_step(kbeg, 1, kend, batch, m0, n0, aq, ar, bq, bk, ra1, rb1);
  barrier();
#if NSTAGE == 2
  for (int s = 0; s < steps; s += 2) {
    if (s + 2 < steps) load_step(kbeg, s + 2, kend, batch, m0, n0, aq, ar, bq, bk, ra0, rb0);
    multiply(0, qm, qn, acc);
    if (s + 1 < steps) store_step(1, aq, ar, bq, bk, ra1, rb1);
    barrier();
    if (s + 1 >= steps) break;
    if (s + 3 < steps) load_step(kbeg, s + 3, kend, batch, m0, n0, aq, ar, bq, bk, ra1, rb1);
    multiply(1, qm, qn, acc);
    if (s + 2 < steps) store_step(0, aq, ar, bq, bk, ra0, rb0);
    barrier();
  }
#else
  // One stage: each step is written after the step before has been multiplied (a barrier either side).
  for (int s = 0; s < steps; s += 2) {
    if (s + 2 < steps) load_step(kbeg, s + 2, kend, batch, m0, n0, aq, ar, bq, bk, ra0, rb0);
    multiply(0, qm, qn, acc);
    barrier();
    if (s + 1 >= steps) break;
    store_step(0, aq, ar, bq, bk, ra1, rb1);
    barrier();
    if (s + 3 < steps) load_step(kbeg, s + 3, kend, batch, m0, n0, aq, ar, bq, bk, ra1, rb1);
    multiply(0, qm, qn, acc);
    barrier();
    if (s + 2 >= steps) break;
    store_step(0, aq, ar, bq, bk, ra0, rb0);
    barrier();
  }
#endif

  // Each 16 x 16 result goes through this subgroup's slice of Cs to the epilogue (one copy of its
  // code: the fragment is picked by an unrolled comparison, the loop itself is not unrolled).
  const uint lane = gl_SubgroupInvocationID;
  [[dont_unroll]] for (int f = 0; f < FM * FN; ++f) {
    [[unroll]] for (int i = 0; i < FM; ++i)
      [[unroll]] for (int j = 0; j < FN; ++j)
        if (i * FN + j == f) coopMatStoreNV(acc[i][j], Cs, uint(sg * 256), 16u, false);
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    [[dont_unroll]] for (uint e = lane; e < 256u; e += gl_SubgroupSize) {
      const int m = m0 + qm + 16 * (f / FN) + int(e / 16u), n = n0 + qn + 16 * (f % FN) + int(e % 16u);
      if ((FULL_M || m < M) && (FULL_N || n < N)) finish(batch, slice, m, n, Cs[sg * 256 + int(e)]);
    }
    subgroupBarrier();
  }
}
