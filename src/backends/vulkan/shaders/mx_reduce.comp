#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// Every TOSA reduction (REDUCE_ALL/ANY/MAX/MIN/PRODUCT/SUM) and ARGMAX along one axis, one pass.
//
// The input is viewed as [OUTER, K, INNER] around the axis. The axis is cut into P chunks of CHUNK
// elements; a task is one (outer, chunk, inner) triple and reduces its chunk into one partial,
// written at the task's flat index t = (o * P + p) * INNER + r, i.e. into [OUTER, P, INNER]. With
// P == 1 that is the final output; otherwise the lowering runs this shader again over the partials
// (K' = P), until one chunk is left. A task is run either by one invocation (G == 1: a sequential
// loop, coalesced across `inner`) or by a whole workgroup (G == LOCAL: strided loads along a
// contiguous axis, then a shared-memory tree). Per-invocation loops stay short (the lowering bounds
// CHUNK / G) because lavapipe aborts invocations that loop more than 65535 times.
//
// MAX, MIN and ARGMAX carry the index of the element they hold, and an element replaces the held
// one when it is strictly better or equally good and earlier: that makes the combination
// associative and reproduces the sequential reference bit for bit, including which of +0/-0 a
// REDUCE_MAX returns and the first index of ARGMAX. NaN ranks above everything with nan_mode
// PROPAGATE and below everything with IGNORE (an all-NaN slice gives NaN / index 0, as TOSA says).
// Float SUM and PRODUCT accumulate in fp32 (also for fp16 data); the summation order differs from
// the reference's sequential one. A global average pooling is a SUM whose final pass divides.

#define OP_ALL 0
#define OP_ANY 1
#define OP_MAX 2
#define OP_MIN 3
#define OP_PRODUCT 4
#define OP_SUM 5
#define OP_ARGMAX 6

layout(constant_id = 0) const int OP = OP_SUM;
layout(constant_id = 1) const int T_IN = DT_F32;   // this pass's input values
layout(constant_id = 2) const int T_OUT = DT_F32;  // this pass's output values (ARGMAX final: DT_I32)
layout(constant_id = 3) const int NAN_IGNORE = 0;
layout(constant_id = 4) const int OUTER = 1;
layout(constant_id = 5) const int K = 1;
layout(constant_id = 6) const int INNER = 1;
layout(constant_id = 7) const int CHUNK = 1;
layout(constant_id = 8) const int P = 1;
layout(constant_id = 9) const int G = 1;        // invocations per task: 1 or LOCAL
layout(constant_id = 10) const int IN_IDX = 0;  // the input carries indexes (binding 1): a later pass
layout(constant_id = 11) const int FINAL = 1;   // writes the operator's output (else partials)
layout(constant_id = 12) const int LOCAL = 64;
// Final SUM pass: the sum divided by DIVISOR (> 0), correctly rounded (a global AVG_POOL2D: TOSA's
// acc / count, the count rounded to fp16 first for fp16 data).
layout(constant_id = 13) const int DIVISOR = 0;
layout(local_size_x_id = 12) in;

TENSOR_RO(0, X, T_IN)
layout(std430, set = 0, binding = 1) restrict readonly buffer XIdx { int xidx[]; };
TENSOR(2, Y, T_OUT)
layout(std430, set = 0, binding = 3) writeonly buffer YIdx { int yidx[]; };

const bool FLT = T_IN == DT_F32 || T_IN == DT_F16;
const bool TRACK = OP == OP_MAX || OP == OP_MIN || OP == OP_ARGMAX;  // carries an index
const int EMPTY = 0x7fffffff;  // index of a state that holds no element yet

shared float s_f[LOCAL];
shared int s_i[LOCAL];
shared int s_x[LOCAL];

// Whether element (bf, bi, bx) replaces the held (af, ai, ax) for a tracking op (value as float
// or int per FLT, bx / ax the element indexes).
bool better(float af, int ai, int ax, float bf, int bi, int bx) {
  if (bx == EMPTY) return false;
  if (ax == EMPTY) return true;
  if (FLT) {
    const bool an = isnan(af), bn = isnan(bf);
    if (an || bn) {
      if (an && bn) return bx < ax;
      // PROPAGATE: a NaN wins; IGNORE: a NaN loses.
      return NAN_IGNORE != 0 ? an : bn;
    }
    if (bf == af) return bx < ax;
    return OP == OP_MIN ? bf < af : bf > af;
  }
  if (bi == ai) return bx < ax;
  return OP == OP_MIN ? bi < ai : bi > ai;
}

// Folds element (bf, bi, bx) into the state (f, i, x).
void fold(inout float f, inout int i, inout int x, float bf, int bi, int bx) {
  if (TRACK) {
    if (better(f, i, x, bf, bi, bx)) {
      f = bf;
      i = bi;
      x = bx;
    }
  } else if (OP == OP_ALL) {
    i = (i != 0 && bi != 0) ? 1 : 0;
  } else if (OP == OP_ANY) {
    i = (i != 0 || bi != 0) ? 1 : 0;
  } else if (OP == OP_PRODUCT) {
    f = f * bf;
  } else if (FLT) {
    f = f + bf;
  } else {
    i = i + bi;  // int32 REDUCE_SUM: TOSA REQUIREs no overflow; wraps here
  }
}

void main() {
  const uint total = uint(OUTER) * uint(P) * uint(INNER);
  uint t, lane;
  if (G == 1) {
    t = flat_id();
    lane = 0;
  } else {
    t = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    lane = gl_LocalInvocationID.x;
  }
  if (t >= total) return;  // uniform over the workgroup when G == LOCAL
  const uint r = t % uint(INNER);
  const uint p = (t / uint(INNER)) % uint(P);
  const uint o = t / (uint(INNER) * uint(P));
  const uint k0 = p * uint(CHUNK);
  const uint k1 = min(uint(K), k0 + uint(CHUNK));

  float f = OP == OP_PRODUCT ? 1.0 : 0.0;
  int i = OP == OP_ALL ? 1 : 0;
  int x = EMPTY;
  for (uint k = k0 + lane; k < k1; k += uint(G)) {
    const uint e = (o * uint(K) + k) * uint(INNER) + r;
    float bf = 0.0;
    int bi = 0;
    if (FLT) bf = X_ldf(e);
    else bi = X_ldi(e);
    fold(f, i, x, bf, bi, IN_IDX != 0 ? xidx[e] : int(k));
  }

  if (G != 1) {
    // Only the parts of the state this operator uses go through shared memory.
    if (FLT) s_f[lane] = f;
    else s_i[lane] = i;
    if (TRACK) s_x[lane] = x;
    barrier();
    for (uint s = uint(LOCAL) / 2u; s > 0u; s >>= 1u) {
      if (lane < s) {
        fold(f, i, x, FLT ? s_f[lane + s] : 0.0, FLT ? 0 : s_i[lane + s], TRACK ? s_x[lane + s] : 0);
        if (FLT) s_f[lane] = f;
        else s_i[lane] = i;
        if (TRACK) s_x[lane] = x;
      }
      barrier();
    }
    if (lane != 0u) return;
  }

  if (FINAL != 0 && OP == OP_ARGMAX) {
    // An empty state cannot reach here (K >= 1); an all-NaN IGNORE slice holds index 0.
    Y_sti(t, x);
  } else {
    if (FINAL != 0 && OP == OP_SUM && FLT && DIVISOR > 0) {
      const float d = T_OUT == DT_F16 ? rte16(float(DIVISOR)) : float(DIVISOR);
      float q = f / d;
      // One correction step gives the correctly rounded quotient (as tc_pool's).
      if (!isinf(q) && !isnan(q)) q = q + fma(-q, d, f) / d;
      f = q;
    }
    if (FLT) Y_stf(t, f);
    else Y_sti(t, i);
    if (FINAL == 0 && TRACK) yidx[t] = x;
  }
}
