// Shared by the tensor-operator shaders (tc_*.comp): fp16 rounding helpers, the activation
// functions of fused post-ops, and the epilogue that applies a composite's post-ops (PostOp in
// src/backends/backend.h) to one result before it is stored.
//
// The including shader declares, before including this file:
//   TENSOR(.., bias, T_BIAS)  the per-column operand of a kBias post-op (MATMUL) / conv bias, and
//                             behind it any per-column constants of scale / shift post-ops;
//   TENSOR(.., res, T_RES)    the residual operand (same shape and index as the output), or a
//                             broadcast operand (EP_MASK).
//
// Post-ops run in fp32 on the result already rounded as the anchor's own output, and the final
// value is rounded once when stored (the reference rounds after each operator: for fp32 results
// that differs by a few ulp, for fp16 by at most about one fp16 ulp per fused operator).
// Specialization constants 40..55 describe up to four post-ops (ops/tensor.cpp: EpilogueSpec).

#define EP_NONE 0
#define EP_BIAS 1          // + bias[column]
#define EP_RESIDUAL 2      // + res[flat index]
#define EP_CLAMP 3         // clamp to [p0, p1]; a NaN stays NaN (nan_mode PROPAGATE)
#define EP_CLAMP_IGNORE 4  // clamp to [p0, p1]; a NaN becomes p0 (nan_mode IGNORE)
#define EP_SIGMOID 5
#define EP_TANH 6
#define EP_SWISH 7         // x * sigmoid(x)
#define EP_GELU 8          // (x * (p2 + erf(x * p0))) * p1  (p0 ~ 1/sqrt(2), p1 ~ 0.5, p2 ~ 1)
#define EP_HARDSWISH 9     // x * clamp(x * p0 + p1, 0, 1)  (p0 ~ 1/6, p1 ~ 0.5); NaN stays NaN
#define EP_GELU_TANH 10    // (x * p2) * (1 + tanh((x + x^3 * p1) * p0))  (p0 ~ sqrt(2/pi), p1 ~ 0.044715, p2 ~ 0.5)
#define EP_SCALE 11        // x * p0
#define EP_SHIFT 12        // x + p0
#define EP_COL_SCALE 13    // x * bias[p0 + column]  (a per-channel constant packed behind the bias)
#define EP_COL_SHIFT 14    // x + bias[p0 + column]
#define EP_MASK 15         // x + res[(idx / p0) * p1 + idx % p1]  (p0, p1 integers: a broadcast
                           // operand viewed as [A, 1, C] against the result's [A, Bm, C], p0 = Bm C, p1 = C)

layout(constant_id = 40) const int EP_K0 = EP_NONE;
layout(constant_id = 41) const int EP_K1 = EP_NONE;
layout(constant_id = 42) const int EP_K2 = EP_NONE;
layout(constant_id = 43) const int EP_K3 = EP_NONE;
layout(constant_id = 44) const int EP_P00 = 0;  // parameters as float bits: op i, parameter j at 44 + 3i + j
layout(constant_id = 45) const int EP_P01 = 0;
layout(constant_id = 46) const int EP_P02 = 0;
layout(constant_id = 47) const int EP_P10 = 0;
layout(constant_id = 48) const int EP_P11 = 0;
layout(constant_id = 49) const int EP_P12 = 0;
layout(constant_id = 50) const int EP_P20 = 0;
layout(constant_id = 51) const int EP_P21 = 0;
layout(constant_id = 52) const int EP_P22 = 0;
layout(constant_id = 53) const int EP_P30 = 0;
layout(constant_id = 54) const int EP_P31 = 0;
layout(constant_id = 55) const int EP_P32 = 0;

// x rounded to fp16 (round to nearest even) and back.
float r16(float x) { return rte16(x); }

float tc_sigmoid(float x) { return 1.0 / (1.0 + exp(-x)); }

// tanh without the inf/inf of (e^2x - 1) / (e^2x + 1) at large |x|.
float tc_tanh(float x) {
  float t = exp(-2.0 * abs(x));
  return sign(x) * ((1.0 - t) / (1.0 + t));
}

// erf with an absolute error below 1.2e-7 (Numerical Recipes' Chebyshev fit of erfc).
float tc_erf(float x) {
  float z = abs(x);
  float t = 1.0 / (1.0 + 0.5 * z);
  float p = -z * z - 1.26551223 +
            t * (1.00002368 +
                 t * (0.37409196 +
                      t * (0.09678418 +
                           t * (-0.18628806 +
                                t * (0.27886807 +
                                     t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  float r = 1.0 - t * exp(p);
  return x < 0.0 ? -r : r;
}

float ep_apply(int kind, float p0, float p1, float p2, float v, uint idx, uint col) {
  if (kind == EP_BIAS) return v + bias_ldf(col);
  if (kind == EP_RESIDUAL) return v + res_ldf(idx);
  if (kind == EP_CLAMP || kind == EP_CLAMP_IGNORE) {
    if (isnan(v)) return kind == EP_CLAMP ? v : p0;
    return min(max(v, p0), p1);
  }
  if (kind == EP_SIGMOID) return tc_sigmoid(v);
  if (kind == EP_TANH) return tc_tanh(v);
  if (kind == EP_SWISH) return v * tc_sigmoid(v);
  if (kind == EP_GELU) return (v * (p2 + tc_erf(v * p0))) * p1;
  if (kind == EP_HARDSWISH) return isnan(v) ? v : v * min(max(v * p0 + p1, 0.0), 1.0);
  if (kind == EP_GELU_TANH) return (v * p2) * (1.0 + tc_tanh((v + ((v * v) * v) * p1) * p0));
  if (kind == EP_SCALE) return v * p0;
  if (kind == EP_SHIFT) return v + p0;
  if (kind == EP_COL_SCALE) return v * bias_ldf(col + uint(p0));
  if (kind == EP_COL_SHIFT) return v + bias_ldf(col + uint(p0));
  return v;
}

// The post-ops applied to value v of output element `idx` in column `col` (EP_MASK's parameters
// are integers, not float bits).
float epilogue(float v, uint idx, uint col) {
#define EP_STEP(K, P0, P1, P2)                                                                        \
  if (K == EP_MASK)                                                                                 \
    v += res_ldf((idx / uint(P0)) * uint(P1) + idx % uint(P1));                                     \
  else if (K != EP_NONE)                                                                            \
    v = ep_apply(K, intBitsToFloat(P0), intBitsToFloat(P1), intBitsToFloat(P2), v, idx, col);
  EP_STEP(EP_K0, EP_P00, EP_P01, EP_P02)
  EP_STEP(EP_K1, EP_P10, EP_P11, EP_P12)
  EP_STEP(EP_K2, EP_P20, EP_P21, EP_P22)
  EP_STEP(EP_K3, EP_P30, EP_P31, EP_P32)
#undef EP_STEP
  return v;
}
