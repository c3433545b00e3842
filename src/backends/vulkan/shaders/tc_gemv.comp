#version 450
// Matrix-vector products: batch-1 MATMULs of up to MAXM rows whose B is read with k contiguous (a
// Linear layer's weights [N][K], as ONNX Gemm(transB = 1) stores them, read as B = W^T in place).
// Such a product is bound by reading B once; the tiled kernels (tc_gemm.glsl) stage B in k x n
// blocks for a single row of A and read it at a fraction of the memory's speed (VGG-11's first
// classifier layer, 25088 x 4096 weights: 1.76 ms on the 32 tile of an H100).
//
// A workgroup of 256 invocations owns COLS = 8 columns, one per team of 32 invocations. Per step
// the workgroup stages KC elements of every row of A in shared memory; each team reads its
// column's KC weights as 4-element vectors (neighbouring invocations, neighbouring vectors: one
// contiguous 512-byte run per load), four loads in flight per invocation, and multiplies them with
// the staged rows. The team's 32 partial sums per row are added in shared memory at the end and
// the result finished as tc_gemm's `finish` does (bias, post-ops, store). fp32 accumulation; the
// sums are ordered differently from the reference's k-ascending order (fp32 results within a few
// ulp of it per product summed).
//
// Specialization constants share tc_gemm.glsl's ids; the lowering checks K % 4 == 0 and that A's
// and B's offsets and row strides are multiples of 4 (16-byte vectors).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#define WG 256
#define TEAM 32
#define COLS (WG / TEAM)
#define KC 512
#define MAXM 4
layout(local_size_x = WG) in;

layout(constant_id = 0) const int T_A = DT_F32;
layout(constant_id = 1) const int T_B = DT_F32;
layout(constant_id = 2) const int T_BIAS = DT_F32;
layout(constant_id = 3) const int T_RES = DT_F32;
layout(constant_id = 4) const int T_OUT = DT_F32;
layout(constant_id = 5) const int M = 1;  // rows of A (at most MAXM)
layout(constant_id = 6) const int N = 1;  // columns
layout(constant_id = 7) const int K = 1;  // reduction length (a multiple of 4)
layout(constant_id = 9) const int A_ROW = 0;  // A: row m, element k at A_OFF + m * A_ROW + k
layout(constant_id = 12) const int B_N = 1;   // B: column n, element k at B_OFF + n * B_N + k
layout(constant_id = 16) const int OUT_BIAS = 0;
layout(constant_id = 17) const int BIAS_BCAST = 0;
layout(constant_id = 62) const int A_OFF = 0;
layout(constant_id = 63) const int B_OFF = 0;

TENSOR_RO(0, a, T_A)
TENSOR_RO(1, b, T_B)
layout(std430, set = 0, binding = 0) restrict readonly buffer AV4 { vec4 a_v4[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer BV4 { vec4 b_v4[]; };
layout(std430, set = 0, binding = 0) restrict readonly buffer AH4 { uvec2 a_h4[]; };  // fp16: 4 halves
layout(std430, set = 0, binding = 1) restrict readonly buffer BH4 { uvec2 b_h4[]; };
TENSOR_RO(2, bias, T_BIAS)
TENSOR_RO(3, res, T_RES)
TENSOR(4, outp, T_OUT)

#include "tc_epilogue.glsl"

// Four consecutive elements starting at element i (a multiple of 4), widened to fp32.
vec4 a_vec4(int i) {
  if (T_A != DT_F16) return a_v4[i / 4];
  const uvec2 h = a_h4[i / 4];
  return vec4(unpackHalf2x16(h.x), unpackHalf2x16(h.y));
}
vec4 b_vec4(int i) {
  if (T_B != DT_F16) return b_v4[i / 4];
  const uvec2 h = b_h4[i / 4];
  return vec4(unpackHalf2x16(h.x), unpackHalf2x16(h.y));
}

shared vec4 As[MAXM * KC / 4];  // 8 KB
shared float Red[MAXM * WG];    // 4 KB

void main() {
  const int lid = int(gl_LocalInvocationIndex);
  const int team = lid / TEAM, t = lid % TEAM;
  const int n = int(gl_WorkGroupID.x) * COLS + team;
  const bool live = n < N;
  const int bbase = B_OFF + (live ? n : 0) * B_N;
  float acc[MAXM];
  [[unroll]] for (int m = 0; m < MAXM; ++m) acc[m] = 0.0;

  for (int k0 = 0; k0 < K; k0 += KC) {
    const int q_end = min(KC, K - k0) / 4;  // vectors of this step
    barrier();  // the previous step's rows are consumed
    for (int e = lid; e < M * q_end; e += WG) {
      const int m = e / q_end, q = e % q_end;
      As[m * (KC / 4) + q] = a_vec4(A_OFF + m * A_ROW + k0 + 4 * q);
    }
    barrier();
    if (live) {
      for (int q = t; q < q_end; q += 4 * TEAM) {
        vec4 w[4];
        [[unroll]] for (int u = 0; u < 4; ++u) {
          const int qq = q + TEAM * u;
          w[u] = qq < q_end ? b_vec4(bbase + k0 + 4 * qq) : vec4(0.0);
        }
        [[unroll]] for (int u = 0; u < 4; ++u) {
          const int qq = q + TEAM * u;
          if (qq < q_end) {
            [[unroll]] for (int m = 0; m < MAXM; ++m)
              if (m < M) acc[m] += dot(w[u], As[m * (KC / 4) + qq]);
          }
        }
      }
    }
  }

  [[unroll]] for (int m = 0; m < MAXM; ++m) Red[m * WG + lid] = acc[m];
  for (int s = TEAM / 2; s > 0; s /= 2) {
    barrier();
    if (t < s) {
      [[unroll]] for (int m = 0; m < MAXM; ++m) Red[m * WG + lid] += Red[m * WG + lid + s];
    }
  }
  barrier();
  if (t != 0 || !live) return;
  [[unroll]] for (int m = 0; m < MAXM; ++m) {
    if (m >= M) continue;
    float v = Red[m * WG + lid];
    const uint o = uint(m * N + n);
    if (OUT_BIAS != 0) {
      const float bb = bias_ldf(BIAS_BCAST != 0 ? 0u : uint(n));
      v = T_OUT == DT_F16 ? r16(r16(v) + bb) : v + bb;
    }
    outp_stf(o, epilogue(v, o, uint(n)));
  }
}
