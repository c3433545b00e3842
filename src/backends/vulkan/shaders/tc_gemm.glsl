// Tiled GEMM body of the tc_gemm_* shaders and of tc_matmul_coop (the including .comp file sets
// the tile with TM, TN, BK and the arithmetic with ACC_FLOAT / ACC_I32 / ACC_I64 / COOP):
//
//   out[b][m][n] = sum_k A[b][m][k] * B[b][k][n]      (k ascending for every output)
//
// for MATMUL (A, B strided) and for the convolutions as implicit GEMM (CONV2D, CONV3D,
// TRANSPOSE_CONV2D): A is then the im2col matrix of the input, gathered on the fly (row m = output
// pixel, column k = (kd, ky, kx, ic) in the weights' order), and B the weights as [K][OC].
//
// A workgroup computes a BM x BN tile of the output. K advances in steps of BK: each step is staged
// in shared memory (A as [k][m], B as [k][n]) and the next step's global loads are issued into
// registers before the current one is multiplied. Out-of-range elements load as 0.
//   - tc_gemm_*: 16 x 16 invocations, each owning TM x TN outputs in runs of CW = min(TM, 4)
//     consecutive rows / columns: invocation (tx, ty) has rows c * 16 CW + ty * CW + i and columns
//     c * 16 CW + tx * CW + j, so that its operands come from shared memory as CW-vectors and the
//     vectors of neighbouring invocations are contiguous. With WARP_TILES (tc_gemm_f8) each subgroup
//     owns a 32 x 64 block instead (tile_row / tile_col below). Float results reach the epilogue
//     through shared memory, 16 rows at a time, or with EPI_DIRECT (tc_gemm_f4) straight from the
//     registers.
//   - COOP (tc_matmul_coop): four subgroups of 32, each multiplying a 32 x 32 quarter of the 64 x 64
//     tile with 16 x 16 x 16 fp16 cooperative matrices accumulating in fp32.
//
// Convolution taps outside the (virtual) input contribute 0 * w: the lowering picks this kernel only
// where that equals the reference's skipped tap (finite weights, or no skipped taps). A PAD folded
// in front (virtual input larger than the source) reads its fill value there, as the PAD would
// have written it.
//
// Accumulation: ACC_FLOAT in fp32, or with ACC16 rounded to fp16 after every product and sum as
// the reference does for acc_t = fp16 (same order, so the same result); ACC_I32 / ACC_I64 exactly
// in int32 / int64 from operands minus their zero points (the lowering proves that no partial sum
// overflows). COOP accumulates in fp32 whatever ACC16 says.

#if defined(COOP_WIDE)
#define WG (32 * SGM * SGN)
#define ACC_FLOAT
#elif defined(COOP)
#define WG 128
#define BM 64
#define BN 64
#define ACC_FLOAT
#else
#define WG 256
#define BM (16 * TM)
#define BN (16 * TN)
#endif
layout(local_size_x = WG) in;

layout(constant_id = 0) const int T_A = DT_F32;
layout(constant_id = 1) const int T_B = DT_F32;
layout(constant_id = 2) const int T_BIAS = DT_F32;
layout(constant_id = 3) const int T_RES = DT_F32;
layout(constant_id = 4) const int T_OUT = DT_F32;
layout(constant_id = 5) const int M = 1;  // rows (per batch)
layout(constant_id = 6) const int N = 1;  // columns
layout(constant_id = 7) const int K = 1;  // reduction length
layout(constant_id = 8) const int A_BATCH = 0;  // A strides (CONV == 0): batch, row; k is contiguous
layout(constant_id = 9) const int A_ROW = 0;
layout(constant_id = 10) const int B_BATCH = 0;  // B strides: batch, k, n
layout(constant_id = 11) const int B_K = 0;
layout(constant_id = 12) const int B_N = 1;
// A batch axis that is two axes merged (attention's batch and heads, read in place as [B*H, ...]):
// with A_SPLIT > 1, A's batch b starts at (b / A_SPLIT) * A_OUTER + (b % A_SPLIT) * A_BATCH. Same for B.
layout(constant_id = 65) const int A_SPLIT = 0;
layout(constant_id = 66) const int A_OUTER = 0;
layout(constant_id = 67) const int B_SPLIT = 0;
layout(constant_id = 68) const int B_OUTER = 0;
// OUT_VIEW: the result is written through a strided view of the tensor a RESHAPE / TRANSPOSE chain
// after the MATMUL makes (attention's heads going back to [B, S, H*dh]): batch b's row m, column n
// at OUT_BATCH-strided (split like A's) b + m * OUT_ROW + n.
layout(constant_id = 69) const int OUT_VIEW = 0;
layout(constant_id = 70) const int OUT_BATCH = 0;
layout(constant_id = 71) const int OUT_ROW = 0;
layout(constant_id = 72) const int OUT_SPLIT = 0;
layout(constant_id = 73) const int OUT_OUTER = 0;
uint out_index(int b, int m, int n) {
  if (OUT_VIEW == 0) return uint((b * M + m) * N + n);
  return uint(split_batch_offset(b, OUT_SPLIT, OUT_BATCH, OUT_OUTER) + m * OUT_ROW + n);
}
int a_batch(int b) { return split_batch_offset(b, A_SPLIT, A_BATCH, A_OUTER); }
int b_batch(int b) { return split_batch_offset(b, B_SPLIT, B_BATCH, B_OUTER); }
layout(constant_id = 13) const int A_ZP = 0;  // integer zero points, subtracted on load
layout(constant_id = 14) const int B_ZP = 0;
layout(constant_id = 15) const int ACC16 = 0;       // ACC_FLOAT: fp16 accumulation
layout(constant_id = 16) const int OUT_BIAS = 0;    // a convolution's bias: out = round(round(acc) + bias[n])
layout(constant_id = 17) const int BIAS_BCAST = 0;  // the bias has one element
layout(constant_id = 18) const int CONV = 0;  // 0: A strided; 1: convolution gather; 2: transposed convolution
layout(constant_id = 19) const int IC = 1;
layout(constant_id = 20) const int KD = 1;
layout(constant_id = 21) const int KH = 1;
layout(constant_id = 22) const int KW = 1;
layout(constant_id = 23) const int OD = 1;
layout(constant_id = 24) const int OH = 1;
layout(constant_id = 25) const int OW = 1;
layout(constant_id = 26) const int VD = 1;  // the convolution's input (after a folded PAD / SLICE)
layout(constant_id = 27) const int VH = 1;
layout(constant_id = 28) const int VW = 1;
layout(constant_id = 29) const int SH = 1;  // the source tensor read (H, W; its depth is VD)
layout(constant_id = 30) const int SW = 1;
layout(constant_id = 31) const int PT = 0;  // where the source starts inside the virtual input
layout(constant_id = 32) const int PL = 0;
layout(constant_id = 33) const int STR_D = 1;
layout(constant_id = 34) const int STR_Y = 1;
layout(constant_id = 35) const int STR_X = 1;
layout(constant_id = 36) const int DIL_D = 1;
layout(constant_id = 37) const int DIL_Y = 1;
layout(constant_id = 38) const int DIL_X = 1;
layout(constant_id = 39) const int FILL = 0;  // the folded PAD's value (float bits for float inputs)
// 40..55: tc_epilogue.glsl
layout(constant_id = 56) const int PAD_D = 0;  // leading padding (TRANSPOSE_CONV2D: out_pad top / left)
layout(constant_id = 57) const int PAD_Y = 0;
layout(constant_id = 58) const int PAD_X = 0;
// Split K (float kernels): gl_WorkGroupID.z = batch * SPLIT + slice; with SPLIT > 1 each slice sums
// KSLICE elements of k (a multiple of BK) into `part` [SPLIT][NBATCH][M][N], and tc_splitk adds the
// slices and finishes the outputs.
layout(constant_id = 59) const int SPLIT = 1;
layout(constant_id = 60) const int KSLICE = 0;
layout(constant_id = 61) const int NBATCH = 1;
// MATMUL operands read through a strided view of their source (a TRANSPOSE / RESHAPE / SLICE chain
// the partitioner absorbed): the element offset of A's and B's first element.
layout(constant_id = 62) const int A_OFF = 0;
layout(constant_id = 63) const int B_OFF = 0;
// fp32 and fp16 operands staged as 4-element vectors (SIMT tiles; fp16 read as four halves and
// widened; the lowering checks alignment, in elements):
//   bit 0: A, a strided MATMUL operand or a plain 1x1 convolution (k contiguous; A_OFF, A_ROW,
//          A_BATCH, A_OUTER and K multiples of 4) or a gathered convolution (IC a multiple of 4);
//   bit 1: B (n contiguous; B_OFF, B_K, B_BATCH, B_OUTER and N multiples of 4).
// Every invocation then loads one vector of each per K step.
layout(constant_id = 64) const int VEC = 0;
// A_SCALE (SIMT float tiles, CONV == 0: a 1x1 convolution read as A [pixels][IC]): A's element
// (m, k) is multiplied by ascale[(m / A_SCALE_ROWS) * K + k] as it is loaded, squeeze-and-excitation's
// x * s folded in front of the convolution (rounded to fp16 for fp16 inputs, as the MUL rounds).
layout(constant_id = 74) const int A_SCALE = 0;
layout(constant_id = 75) const int A_SCALE_ROWS = 1;
// B_NK (tc_gemm128_coop / tc_gemm64_coop, MATMUL): B is read with k contiguous (B_K == 1, n at
// stride B_N: attention's K^T read in place from K), as 8-half vectors along k, staged as [n][k]
// and loaded into the matrix fragments column-major.
layout(constant_id = 76) const int B_NK = 0;

TENSOR_RO(0, a, T_A)
TENSOR_RO(1, b, T_B)
layout(std430, set = 0, binding = 0) restrict readonly buffer AV4 { vec4 a_v4[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer BV4 { vec4 b_v4[]; };
layout(std430, set = 0, binding = 0) restrict readonly buffer AH4 { uvec2 a_h4[]; };  // fp16 operands: 4 halves
layout(std430, set = 0, binding = 1) restrict readonly buffer BH4 { uvec2 b_h4[]; };
// Four consecutive elements of A / B starting at element i (a multiple of 4), widened to fp32.
vec4 a_vec4(uint i) {
  if (T_A != DT_F16) return a_v4[i / 4u];
  const uvec2 h = a_h4[i / 4u];
  return vec4(unpackHalf2x16(h.x), unpackHalf2x16(h.y));
}
vec4 b_vec4(uint i) {
  if (T_B != DT_F16) return b_v4[i / 4u];
  const uvec2 h = b_h4[i / 4u];
  return vec4(unpackHalf2x16(h.x), unpackHalf2x16(h.y));
}
TENSOR_RO(2, bias, T_BIAS)
TENSOR_RO(3, res, T_RES)
TENSOR(4, outp, T_OUT)
#if defined(ACC_FLOAT)
layout(std430, set = 0, binding = 5) buffer PartB { float part[]; };
#endif

#include "tc_epilogue.glsl"
#if defined(ACC_FLOAT) && !defined(COOP) && !defined(COOP_WIDE)
TENSOR_RO(6, ascale, T_A)
// A's element (m, k) of a scaled 1x1 convolution input.
float a_scaled(float v, int m, int k) {
  const float x = v * ascale_ldf(uint((m / A_SCALE_ROWS) * K + k));
  return T_A == DT_F16 ? r16(x) : x;
}
#endif

#define A_LOADS (BM * BK / WG)  // A elements each invocation stages per K step
#define B_LOADS (BN * BK / WG)
#define A_ROWS (WG / BK)        // rows of A staged per pass of the workgroup
#define B_ROWS (WG / BN)

#if defined(COOP_WIDE)
#define SH_T float16_t
#elif defined(COOP)
#define SH_T float16_t
#define AS_STRIDE (BM + 8)  // row pitches: multiples of 8 halves (16 bytes) for the matrix loads
#define BS_STRIDE (BN + 8)
#define AS_SIZE (BK * AS_STRIDE)
// A step of A ([k][m]) then of B ([k][n]).
shared SH_T Sm[AS_SIZE + BK * BS_STRIDE];
#else
#if TM != TN
#error tc_gemm needs square thread tiles
#endif
#if TM >= 4
#define CW 4
#else
#define CW TM
#endif
#define CH (TM / CW)  // runs of CW rows (columns) per invocation
#if defined(ACC_FLOAT)
#define SH_T float
#define ACC_T float
#if CW == 4
#define SV vec4
#else
#define SV vec2
#endif
#else
#define SH_T int
#if defined(ACC_I32)
#define ACC_T int
#else
#define ACC_T int64_t
#endif
#if CW == 4
#define SV ivec4
#else
#define SV ivec2
#endif
#endif
#define AS_STRIDE (BM + CW)  // padded: fewer bank conflicts in the transposing stores
#define BS_STRIDE BN
#define AS_SIZE (BK * AS_STRIDE)
// A step of A ([k][m]) then of B ([k][n]), as CW-vectors; in tc_gemm_f*, float results then pass
// through it on their way to the epilogue (16 rows of the tile at a time).
#if defined(ACC_FLOAT)
#define SM_SIZE (AS_SIZE + BK * BS_STRIDE > 16 * BN ? AS_SIZE + BK * BS_STRIDE : 16 * BN)
#else
#define SM_SIZE (AS_SIZE + BK * BS_STRIDE)
#endif
shared SV Sm[SM_SIZE / CW];
#endif

// Element i of operand A / B in the accumulation domain (integers minus their zero point).
SH_T a_value(uint i) {
#if defined(ACC_FLOAT)
  return SH_T(a_ldf(i));
#else
  return a_ldi(i) - A_ZP;
#endif
}
SH_T b_value(uint i) {
#if defined(ACC_FLOAT)
  return SH_T(b_ldf(i));
#else
  return b_ldi(i) - B_ZP;
#endif
}
SH_T fill_value() {
#if defined(ACC_FLOAT)
  return SH_T(intBitsToFloat(FILL));
#else
  return FILL - A_ZP;
#endif
}

#if defined(ACC_FLOAT)
// Output element (m, n) of this batch from its float accumulator: the convolution bias, the fused
// post-ops, the store (or this slice's partial sum).
void finish(int batch, int slice, int m, int n, float v) {
  const uint o = uint((batch * M + m) * N + n);
  if (SPLIT > 1) {
    part[uint(slice * NBATCH * M * N) + o] = v;
    return;
  }
  if (OUT_BIAS != 0) {
    // out = static_cast<out_t>(acc); out = apply_add_s<out_t>(out, bias[n])
    const float bb = bias_ldf(BIAS_BCAST != 0 ? 0u : uint(n));
    v = T_OUT == DT_F16 ? r16(r16(v) + bb) : v + bb;
  }
  outp_stf(out_index(batch, m, n), epilogue(v, o, uint(n)));
}
#endif

// Row m of a convolution's im2col matrix (an output pixel): its batch and window origin.
void conv_row(int m, out int n, out int d0, out int y0, out int x0) {
  const int ox = m % OW, t = m / OW;
  const int oy = t % OH, t2 = t / OH;
  const int od = t2 % OD;
  n = t2 / OD;
  d0 = od * STR_D - PAD_D;
  y0 = CONV == 1 ? oy * STR_Y - PAD_Y : oy - PAD_Y;
  x0 = CONV == 1 ? ox * STR_X - PAD_X : ox - PAD_X;
}

// Column k of a convolution's im2col matrix: its input channel and kernel tap (weights' order).
void conv_tap(int k, out int ic, out int kd, out int ky, out int kx) {
  ic = k % IC;
  const int tap = k / IC;
  kx = tap % KW;
  ky = (tap / KW) % KH;
  kd = tap / (KW * KH);
}

// The source element that output row (batch n, window origin d0 / y0 / x0) reads at tap (kd, ky,
// kx), channel ic: its index (>= 0); -1 outside the virtual input (the tap contributes 0); -2 in a
// folded PAD's border (the fill value).
int conv_source(int n, int d0, int y0, int x0, int kd, int ky, int kx, int ic) {
  int d, y, x;
  bool ok = true;
  if (CONV == 1) {
    d = d0 + kd * DIL_D;
    y = y0 + ky * DIL_Y;
    x = x0 + kx * DIL_X;
  } else {
    // Transposed: output oy receives input y when oy = y * stride + out_pad_top + ky.
    d = 0;
    const int yy = y0 - ky, xx = x0 - kx;
    ok = yy >= 0 && xx >= 0 && yy % STR_Y == 0 && xx % STR_X == 0;
    y = yy / STR_Y;
    x = xx / STR_X;
  }
  if (!ok || d < 0 || d >= VD || y < 0 || y >= VH || x < 0 || x >= VW) return -1;
  const int sy = y - PT, sx = x - PL;
  if (sy < 0 || sy >= SH || sx < 0 || sx >= SW) return -2;
  return (((n * VD + d) * SH + sy) * SW + sx) * IC + ic;
}

#if !defined(COOP) && !defined(COOP_WIDE)
// Where an invocation's outputs sit in the tile: invocation (slot s, column group t) owns rows
// tile_row(s, i), i < TM, and columns tile_col(t, j), j < TN, in runs of CW.
//   - default: s = lid / 16, t = lid % 16; runs c * 16 CW apart.
//   - WARP_TILES (TM == TN == 8): each subgroup of 32 owns a 32 x 64 block (the 8 subgroups 4 x 2),
//     its lanes 4 x 8, each with 2 x 2 runs of 4 x 4 (16 rows / 32 columns apart): per k a subgroup
//     reads 32 A and 64 B values from shared memory instead of 16 and 128.
#if defined(WARP_TILES)
int tile_row(int s, int i) { return (s / 4) * 32 + (s % 4) * 4 + (i / 4) * 16 + i % 4; }
int tile_col(int t, int j) { return (t / 8) * 64 + (t % 8) * 4 + (j / 4) * 32 + j % 4; }
int tile_slot(uint lid) { return int(lid / 64u) * 4 + int(lid % 32u) / 8; }
int tile_group(uint lid) { return int((lid / 32u) % 2u) * 8 + int(lid % 8u); }
#else
int tile_row(int s, int i) { return (i / CW) * 16 * CW + s * CW + i % CW; }
int tile_col(int t, int j) { return (j / CW) * 16 * CW + t * CW + j % CW; }
int tile_slot(uint lid) { return int(lid / 16u); }
int tile_group(uint lid) { return int(lid % 16u); }
#endif
#endif

// Whole tiles and whole K steps (from the specialization constants; a K slice is a multiple of BK):
// the loads' and the epilogue's bounds checks then fold away.
const bool FULL_M = M % BM == 0, FULL_N = N % BN == 0, FULL_K = K % BK == 0;

#if defined(COOP_WIDE)
#include "tc_gemm_wide.glsl"
#else
// Per staged row of A (convolutions): the output pixel's batch and window origin.
int row_n[A_LOADS], row_d[A_LOADS], row_y[A_LOADS], row_x[A_LOADS];
bool row_ok[A_LOADS];

void main() {
  const uint lid = gl_LocalInvocationIndex;
  const int n0 = int(gl_WorkGroupID.x) * BN, m0 = int(gl_WorkGroupID.y) * BM;
  const int batch = int(gl_WorkGroupID.z) / SPLIT, slice = int(gl_WorkGroupID.z) % SPLIT;
  const int kbeg = SPLIT > 1 ? slice * KSLICE : 0, kend = SPLIT > 1 ? min(K, kbeg + KSLICE) : K;
  // This invocation stages A elements (k = ak, rows ar + A_ROWS p) and B elements
  // (k = bk + B_ROWS p, column bn).
  const int ak = int(lid % uint(BK)), ar = int(lid / uint(BK));
  const int bn = int(lid % uint(BN)), bk = int(lid / uint(BN));

  [[unroll]] for (int p = 0; p < A_LOADS; ++p) {
    const int m = m0 + ar + A_ROWS * p;
    row_ok[p] = FULL_M || m < M;
    if (CONV != 0) conv_row(m, row_n[p], row_d[p], row_y[p], row_x[p]);
  }

#if defined(COOP)
  const int sg = int(gl_SubgroupID);
  const int qm = (sg / 2) * 32, qn = (sg % 2) * 32;  // this subgroup's quarter of the tile
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[2][2];
  [[unroll]] for (int i = 0; i < 2; ++i)
    [[unroll]] for (int j = 0; j < 2; ++j) acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
#else
  const int ty = tile_slot(lid), tx = tile_group(lid);
  // This invocation's runs of rows (columns) in shared memory, in CW-vectors: computed once, so that
  // the K loop's shared reads are a constant offset from them.
  int arow[CH], bcol[CH];
  [[unroll]] for (int c = 0; c < CH; ++c) {
    arow[c] = tile_row(ty, c * CW) / CW;
    bcol[c] = tile_col(tx, c * CW) / CW;
  }
  ACC_T acc[TM][TN];
  [[unroll]] for (int i = 0; i < TM; ++i)
    [[unroll]] for (int j = 0; j < TN; ++j) acc[i][j] = ACC_T(0);
#endif

  SH_T ra[A_LOADS], rb[B_LOADS];
#if defined(ACC_FLOAT) && !defined(COOP)
  const bool va = (VEC & 1) != 0, vb = (VEC & 2) != 0;
  // Vector staging: A row var, k = vak .. vak + 3; B row vbk, columns vbn .. vbn + 3.
  const int vak = int(lid % uint(BK / 4)) * 4, var_ = int(lid / uint(BK / 4));
  const int vbn = int(lid % uint(BN / 4)) * 4, vbk = int(lid / uint(BN / 4));
  vec4 ra4 = vec4(0), rb4 = vec4(0);
  // Convolutions (IC a multiple of 4): the four k of a vector are four channels of one tap.
  int vrow_n = 0, vrow_d = 0, vrow_y = 0, vrow_x = 0;
  if (va && CONV != 0) conv_row(m0 + var_, vrow_n, vrow_d, vrow_y, vrow_x);
#else
  const bool va = false, vb = false;
#endif

  // Iteration s loads step s + 1 into registers while step s is multiplied from shared memory
  // (s = -1 only loads the first step: one copy of the load code).
  const int steps = (kend - kbeg + BK - 1) / BK;
  for (int s = -1; s < steps; ++s) {
    if (s + 1 < steps) {
      // Global -> registers: A (gathered for convolutions) and B for the step at k0.
      const int k0 = kbeg + (s + 1) * BK, k = k0 + ak;
      int ic = 0, kd = 0, ky = 0, kx = 0;
      if (CONV != 0) conv_tap(k, ic, kd, ky, kx);
#if defined(ACC_FLOAT) && !defined(COOP)
      if (va) {
        const int m = m0 + var_, kv = k0 + vak;
        ra4 = vec4(0);
        if ((FULL_M || m < M) && (FULL_K || kv < kend)) {
          if (CONV == 0) {
            ra4 = a_vec4(uint(A_OFF + a_batch(batch) + m * A_ROW + kv));
            if (A_SCALE != 0) {
              const uint si = uint((m / A_SCALE_ROWS) * K + kv);
              ra4 *= vec4(ascale_ldf(si), ascale_ldf(si + 1u), ascale_ldf(si + 2u), ascale_ldf(si + 3u));
              if (T_A == DT_F16) ra4 = vec4(r16(ra4.x), r16(ra4.y), r16(ra4.z), r16(ra4.w));  // as the MUL rounds
            }
          } else {
            int vic, vkd, vky, vkx;
            conv_tap(kv, vic, vkd, vky, vkx);
            const int src = conv_source(vrow_n, vrow_d, vrow_y, vrow_x, vkd, vky, vkx, vic);
            if (src >= 0) ra4 = a_vec4(uint(src));
            else if (src == -2) ra4 = vec4(fill_value());
          }
        }
      }
      if (vb) {
        const int kb = k0 + vbk, n = n0 + vbn;
        rb4 = (FULL_K || kb < kend) && (FULL_N || n < N) ? b_vec4(uint(B_OFF + b_batch(batch) + kb * B_K + n)) : vec4(0);
      }
#endif
      if (!va) [[unroll]] for (int p = 0; p < A_LOADS; ++p) {
        SH_T v = SH_T(0);
        if (row_ok[p] && (FULL_K || k < kend)) {
          if (CONV == 0) {
            v = a_value(uint(A_OFF + a_batch(batch) + (m0 + ar + A_ROWS * p) * A_ROW + k));
#if defined(ACC_FLOAT) && !defined(COOP)
            if (A_SCALE != 0) v = SH_T(a_scaled(float(v), m0 + ar + A_ROWS * p, k));
#endif
          } else {
            const int src = conv_source(row_n[p], row_d[p], row_y[p], row_x[p], kd, ky, kx, ic);
            if (src >= 0) v = a_value(uint(src));
            else if (src == -2) v = fill_value();
          }
        }
        ra[p] = v;
      }
      if (!vb) [[unroll]] for (int p = 0; p < B_LOADS; ++p) {
        const int kb = k0 + bk + B_ROWS * p, n = n0 + bn;
        rb[p] = (FULL_K || kb < kend) && (FULL_N || n < N) ? b_value(uint(B_OFF + b_batch(batch) + kb * B_K + n * B_N)) : SH_T(0);
      }
    }
    if (s >= 0) {
#if defined(COOP)
      [[unroll]] for (int kk = 0; kk < BK; kk += 16) {
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa[2], fb[2];
        // A is staged [k][m]: a column-major M x K matrix.
        [[unroll]] for (int i = 0; i < 2; ++i)
          coopMatLoadNV(fa[i], Sm, uint(kk * AS_STRIDE + qm + 16 * i), uint(AS_STRIDE), true);
        [[unroll]] for (int j = 0; j < 2; ++j)
          coopMatLoadNV(fb[j], Sm, uint(AS_SIZE + kk * BS_STRIDE + qn + 16 * j), uint(BS_STRIDE), false);
        [[unroll]] for (int i = 0; i < 2; ++i)
          [[unroll]] for (int j = 0; j < 2; ++j) acc[i][j] = coopMatMulAddNV(fa[i], fb[j], acc[i][j]);
      }
#else
#if defined(ACC_FLOAT)
      if (ACC16 != 0) {
        // fp16 accumulation, rounded after every product and sum (a slow path: not unrolled over k).
        [[dont_unroll]] for (int kk = 0; kk < BK; ++kk) {
          SV av[CH], bv[CH];
          [[unroll]] for (int c = 0; c < CH; ++c) {
            av[c] = Sm[kk * (AS_STRIDE / CW) + arow[c]];
            bv[c] = Sm[(AS_SIZE + kk * BS_STRIDE) / CW + bcol[c]];
          }
          [[unroll]] for (int i = 0; i < TM; ++i)
            [[unroll]] for (int j = 0; j < TN; ++j) {
              // precise: no fused multiply-add (or fp16 FMA) may merge the two roundings.
              precise float p = r16(float(av[i / CW][i % CW]) * float(bv[j / CW][j % CW]));
              precise float s = acc[i][j] + p;
              acc[i][j] = r16(s);
            }
        }
      } else
#endif
      {
        [[unroll]] for (int kk = 0; kk < BK; ++kk) {
          SV av[CH], bv[CH];
          [[unroll]] for (int c = 0; c < CH; ++c) {
            av[c] = Sm[kk * (AS_STRIDE / CW) + arow[c]];
            bv[c] = Sm[(AS_SIZE + kk * BS_STRIDE) / CW + bcol[c]];
          }
          [[unroll]] for (int i = 0; i < TM; ++i) {
            [[unroll]] for (int j = 0; j < TN; ++j) {
#if defined(ACC_FLOAT)
              acc[i][j] = fma(av[i / CW][i % CW], bv[j / CW][j % CW], acc[i][j]);
#else
              acc[i][j] += ACC_T(av[i / CW][i % CW] * bv[j / CW][j % CW]);
#endif
            }
          }
        }
      }
#endif
    }
    barrier();
    if (s + 1 < steps) {
#if defined(COOP)
      [[unroll]] for (int p = 0; p < A_LOADS; ++p) Sm[ak * AS_STRIDE + ar + A_ROWS * p] = ra[p];
      [[unroll]] for (int p = 0; p < B_LOADS; ++p) Sm[AS_SIZE + (bk + B_ROWS * p) * BS_STRIDE + bn] = rb[p];
#else
#if defined(ACC_FLOAT)
      if (va) {
        [[unroll]] for (int j = 0; j < 4; ++j) {
          const int i = (vak + j) * AS_STRIDE + var_;
          Sm[i / CW][i % CW] = ra4[j];
        }
      }
      if (vb) {
        const int i = AS_SIZE + vbk * BS_STRIDE + vbn;
        [[unroll]] for (int j = 0; j < 4; j += CW) {
#if CW == 4
          Sm[i / CW] = rb4;
#else
          Sm[(i + j) / CW] = SV(rb4[j], rb4[j + 1]);
#endif
        }
      }
#endif
      if (!va) [[unroll]] for (int p = 0; p < A_LOADS; ++p) {
        const int i = ak * AS_STRIDE + ar + A_ROWS * p;
        Sm[i / CW][i % CW] = ra[p];
      }
      if (!vb) [[unroll]] for (int p = 0; p < B_LOADS; ++p) {
        const int i = AS_SIZE + (bk + B_ROWS * p) * BS_STRIDE + bn;
        Sm[i / CW][i % CW] = rb[p];
      }
#endif
      barrier();
    }
  }

#if defined(COOP)
  // Each 16 x 16 result goes through this subgroup's slice of Cs to the epilogue (one copy of its
  // code: the fragment is picked by an unrolled comparison, the loop itself is not unrolled).
  const uint lane = gl_SubgroupInvocationID;
  [[dont_unroll]] for (int f = 0; f < 4; ++f) {
    [[unroll]] for (int i = 0; i < 2; ++i)
      [[unroll]] for (int j = 0; j < 2; ++j)
        if (i * 2 + j == f) coopMatStoreNV(acc[i][j], Cs, uint(sg * 256), 16u, false);
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    [[dont_unroll]] for (uint e = lane; e < 256u; e += gl_SubgroupSize) {
      const int m = m0 + qm + 16 * (f / 2) + int(e / 16u), n = n0 + qn + 16 * (f % 2) + int(e % 16u);
      if (m < M && n < N) finish(batch, slice, m, n, Cs[sg * 256 + int(e)]);
    }
    subgroupBarrier();
  }
#elif defined(ACC_FLOAT) && defined(EPI_DIRECT)
  [[unroll]] for (int i = 0; i < TM; ++i)
    [[unroll]] for (int j = 0; j < TN; ++j) {
      const int m = m0 + tile_row(ty, i), n = n0 + tile_col(tx, j);
      if (m < M && n < N) finish(batch, slice, m, n, acc[i][j]);
    }
#elif defined(ACC_FLOAT)
  // Pass p stages row p of every invocation's outputs (16 rows of the tile) in shared memory, so
  // that the epilogue is one copy of its code (not TM x TN) and neighbouring invocations store
  // neighbouring columns.
  [[dont_unroll]] for (int p = 0; p < TM; ++p) {
    barrier();
    [[unroll]] for (int i = 0; i < TM; ++i) {
      if (i == p) {
        [[unroll]] for (int c = 0; c < CH; ++c) {
          SV v;
          [[unroll]] for (int j = 0; j < CW; ++j) v[j] = acc[i][c * CW + j];
          Sm[ty * (BN / CW) + bcol[c]] = v;
        }
      }
    }
    barrier();
    [[dont_unroll]] for (int e = int(lid); e < 16 * BN; e += WG) {
      const int m = m0 + tile_row(e / BN, p), n = n0 + e % BN;
      if (m < M && n < N) finish(batch, slice, m, n, Sm[e / CW][e % CW]);
    }
  }
#else
  [[unroll]] for (int i = 0; i < TM; ++i) {
    [[unroll]] for (int j = 0; j < TN; ++j) {
      const int m = m0 + tile_row(ty, i), n = n0 + tile_col(tx, j);
      if (m < M && n < N) {
        int64_t v = int64_t(acc[i][j]);
        if (OUT_BIAS != 0) v += bias_ldl(BIAS_BCAST != 0 ? 0u : uint(n));
        outp_stl(out_index(batch, m, n), v);
      }
    }
  }
#endif
}
#endif  // COOP_WIDE
