// The body of mx_rownorm.comp, mx_rownorm_sg.comp (SUBGROUP_ROWS) and tc_splitk_ln.comp (ROW_LOAD).
//
// The fused softmax, layer-normalization and RMS-normalization regions (backend::Composite::Region), one workgroup per
// row; with SUBGROUP_ROWS, ROWS rows per workgroup of LOCAL invocations each, LOCAL being the
// device's subgroup size, reduced with subgroup operations instead of shared memory and barriers
// (where the subgroups at run time are not LOCAL wide, each row reduces through shared memory).
// The input is viewed as [OUTER, K, INNER] around the axis; a row is one (outer, inner) pair, its K elements INNER apart. Arithmetic is fp32 (fp16 data is widened on load and rounded once on
// store). When the row fits CACHE values per invocation it is read from memory once and kept in
// registers; otherwise every phase reloads it (per-invocation loops stay under lavapipe's 65535
// iterations: the lowering bounds K / LOCAL).
//
//   softmax (MODE 0), the graph REDUCE_MAX -> SUB -> EXP -> REDUCE_SUM -> RECIPROCAL -> MUL:
//     m = max(x) (a NaN propagates), e = exp(x - m), y = e * (1 / sum(e)). A row holding a NaN or
//     +inf, or only -inf, becomes NaN as in the decomposed graph (NaN - m, inf - inf).
//   log-softmax (MODE 3), REDUCE_MAX -> d = SUB -> EXP -> REDUCE_SUM -> LOG -> SUB(d, log):
//     m = max(x), d = x - m, y = d - log(sum(exp(d))); NaN, +inf and all -inf rows as in MODE 0.
//   layer norm (MODE 1), REDUCE_SUM * 1/N -> SUB -> (d * d) REDUCE_SUM * 1/N -> + eps -> RSQRT -> MUL
//     [-> MUL gamma -> ADD beta]: mean = sum(x) * INV_N, d = x - mean, var = sum(d * d) * INV_N,
//     y = d * inversesqrt(var + EPS) * gamma[k] + beta[k] (binding 2: gamma[K] then beta[K] as fp32;
//     the lowering writes 1 / 0 where the graph has none).
//   RMS norm (MODE 2), (x * x) REDUCE_SUM * 1/N -> + eps -> RSQRT -> MUL x [-> MUL gamma -> ADD beta]:
//     ms = sum(x * x) * INV_N, y = x * inversesqrt(ms + EPS) * gamma[k] + beta[k].
//   L2 norm (MODE 4), (x * x) REDUCE_SUM -> POW 0.5 -> CLAMP [EPS, inf] -> RECIPROCAL -> MUL x
//     [-> MUL gamma -> ADD beta] (F.normalize): n = sqrt(sum(x * x)), y = x * (1 / max(n, EPS)) *
//     gamma[k] + beta[k]; a NaN norm stays NaN (the CLAMP propagates it), a zero row gives 0.

layout(constant_id = 0) const int MODE = 0;
layout(constant_id = 1) const int T = DT_F32;
layout(constant_id = 2) const int OUTER = 1;
layout(constant_id = 3) const int K = 1;
layout(constant_id = 4) const int INNER = 1;
layout(constant_id = 5) const int LOCAL = 64;
layout(constant_id = 6) const int EPS_BITS = 0;
layout(constant_id = 7) const int INV_N_BITS = 0;
#if defined(SUBGROUP_ROWS)
layout(constant_id = 8) const int ROWS = 1;  // rows per workgroup
layout(local_size_x_id = 9) in;              // LOCAL * ROWS
#else
const int ROWS = 1;
layout(local_size_x_id = 5) in;
#endif

TENSOR_RO(0, X, T)
// Element i of the input; tc_splitk_ln.comp defines it (the GEMM's finished output) before including.
#if !defined(ROW_LOAD)
#define ROW_LOAD(i) X_ldf(i)
#endif
TENSOR(1, Y, T)
layout(std430, set = 0, binding = 2) restrict readonly buffer Affine { float affine[]; };

const int CACHE = 16;
const bool CACHED = K <= LOCAL * CACHE;

shared float s_red[LOCAL * ROWS];

float max_nan(float a, float b) { return (isnan(a) || isnan(b)) ? a + b : max(a, b); }

// The sum (maximum == false) or NaN-propagating max of v over the LOCAL invocations of row slot
// `slot` of the workgroup (`lane` is the invocation's place in it). Every invocation calls it.
float reduce_group(float v, bool maximum, uint slot, uint lane) {
#if defined(SUBGROUP_ROWS)
  if (gl_SubgroupSize == uint(LOCAL)) {  // uniform: one subgroup per row
    if (!maximum) return subgroupAdd(v);
    const float m = subgroupMax(isnan(v) ? uintBitsToFloat(0xff800000u) : v);
    return subgroupAny(isnan(v)) ? uintBitsToFloat(0x7fc00000u) : m;
  }
#endif
  const uint at = slot * uint(LOCAL);
  s_red[at + lane] = v;
  barrier();
  for (uint s = uint(LOCAL) / 2u; s > 0u; s >>= 1u) {
    if (lane < s) {
      v = maximum ? max_nan(v, s_red[at + lane + s]) : v + s_red[at + lane + s];
      s_red[at + lane] = v;
    }
    barrier();
  }
  const float r = s_red[at];
  barrier();  // s_red is reused by the next reduction
  return r;
}

void main() {
  const uint slot = gl_LocalInvocationID.x / uint(LOCAL), lane = gl_LocalInvocationID.x % uint(LOCAL);
  const uint row = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * uint(ROWS) + slot;
  const uint rows = uint(OUTER) * uint(INNER);
  if (ROWS == 1 && row >= rows) return;  // uniform over the workgroup
  // With several rows per workgroup, a slot past the last row still takes part in the reductions
  // (their barriers): it reads the last row again and writes nothing.
  const bool live = ROWS == 1 || row < rows;
  const uint r = min(row, rows - 1u);
  const uint base = (r / uint(INNER)) * uint(K) * uint(INNER) + r % uint(INNER);

  float v[CACHE];
  if (CACHED) {
    [[unroll]] for (int j = 0; j < CACHE; ++j) {
      const uint k = lane + uint(j * LOCAL);
      v[j] = k < uint(K) ? ROW_LOAD(base + k * uint(INNER)) : 0.0;
    }
  }

  if (MODE == 0 || MODE == 3) {
    const float NEG_INF = uintBitsToFloat(0xff800000u);
    float m = NEG_INF;
    if (CACHED) {
      [[unroll]] for (int j = 0; j < CACHE; ++j)
        if (lane + uint(j * LOCAL) < uint(K)) m = max_nan(m, v[j]);
    } else {
      for (uint k = lane; k < uint(K); k += uint(LOCAL)) m = max_nan(m, ROW_LOAD(base + k * uint(INNER)));
    }
    m = reduce_group(m, true, slot, lane);
    float s = 0.0;
    if (CACHED) {
      [[unroll]] for (int j = 0; j < CACHE; ++j)
        if (lane + uint(j * LOCAL) < uint(K)) {
          // MODE 3 keeps d = x - m for the result, MODE 0 its exponential
          const float d = v[j] - m, e = exp(d);
          v[j] = MODE == 3 ? d : e;
          s += e;
        }
    } else {
      for (uint k = lane; k < uint(K); k += uint(LOCAL)) s += exp(ROW_LOAD(base + k * uint(INNER)) - m);
    }
    if (MODE == 3) {
      const float ls = log(reduce_group(s, false, slot, lane));
      if (CACHED) {
        [[unroll]] for (int j = 0; j < CACHE; ++j) {
          const uint k = lane + uint(j * LOCAL);
          if (live && k < uint(K)) Y_stf(base + k * uint(INNER), v[j] - ls);
        }
      } else {
        for (uint k = lane; live && k < uint(K); k += uint(LOCAL)) {
          const uint e = base + k * uint(INNER);
          Y_stf(e, (ROW_LOAD(e) - m) - ls);
        }
      }
      return;
    }
    const float inv = 1.0 / reduce_group(s, false, slot, lane);
    if (CACHED) {
      [[unroll]] for (int j = 0; j < CACHE; ++j) {
        const uint k = lane + uint(j * LOCAL);
        if (live && k < uint(K)) Y_stf(base + k * uint(INNER), v[j] * inv);
      }
    } else {
      for (uint k = lane; live && k < uint(K); k += uint(LOCAL)) {
        const uint e = base + k * uint(INNER);
        Y_stf(e, exp(ROW_LOAD(e) - m) * inv);
      }
    }
  } else {
    // MODE 1 centres the row on its mean; MODE 2 (RMS) and MODE 4 (L2) normalize it as it is.
    const float inv_n = intBitsToFloat(INV_N_BITS);
    float s = 0.0;
    if (MODE == 1) {
      if (CACHED) {
        [[unroll]] for (int j = 0; j < CACHE; ++j) s += v[j];  // out-of-row slots hold 0
      } else {
        for (uint k = lane; k < uint(K); k += uint(LOCAL)) s += ROW_LOAD(base + k * uint(INNER));
      }
    }
    const float mean = MODE == 1 ? reduce_group(s, false, slot, lane) * inv_n : 0.0;
    float q = 0.0;
    if (CACHED) {
      [[unroll]] for (int j = 0; j < CACHE; ++j)
        if (lane + uint(j * LOCAL) < uint(K)) {
          v[j] -= mean;
          q += v[j] * v[j];
        }
    } else {
      for (uint k = lane; k < uint(K); k += uint(LOCAL)) {
        const float d = ROW_LOAD(base + k * uint(INNER)) - mean;
        q += d * d;
      }
    }
    float rstd;
    if (MODE == 4) {
      const float norm = sqrt(reduce_group(q, false, slot, lane));
      rstd = 1.0 / (isnan(norm) ? norm : max(norm, intBitsToFloat(EPS_BITS)));
    } else {
      rstd = inversesqrt(reduce_group(q, false, slot, lane) * inv_n + intBitsToFloat(EPS_BITS));
    }
    if (CACHED) {
      [[unroll]] for (int j = 0; j < CACHE; ++j) {
        const uint k = lane + uint(j * LOCAL);
        if (live && k < uint(K)) Y_stf(base + k * uint(INNER), v[j] * rstd * affine[k] + affine[uint(K) + k]);
      }
    } else {
      for (uint k = lane; live && k < uint(K); k += uint(LOCAL)) {
        const uint e = base + k * uint(INNER);
        Y_stf(e, (ROW_LOAD(e) - mean) * rstd * affine[k] + affine[uint(K) + k]);
      }
    }
  }
}
