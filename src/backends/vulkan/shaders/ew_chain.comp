#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// A chain of element-wise operators as one pass (Composite of the partitioner's element-wise
// chains): x OP c[channel], c a constant with one value per index of the last dimension (a batch
// norm's scale or shift), then the composite's post-ops through the shared epilogue (bias, residual,
// clamp, activations). DenseNet's pre-activation BN + ReLU is MUL + BIAS + CLAMP: one dispatch
// instead of three. Float data (fp32, fp16: the operator's result rounded to fp16 before the
// post-ops, as the reference rounds it).
layout(local_size_x = 64) in;

layout(constant_id = 0) const int T = DT_F32;  // x, c and the result
layout(constant_id = 1) const int T_BIAS = DT_F32;
layout(constant_id = 2) const int T_RES = DT_F32;
layout(constant_id = 3) const int OP = 0;      // 0: x * c, 1: x + c, 2: x - c
layout(constant_id = 4) const int C = 1;       // the last dimension
layout(constant_id = 5) const int TOTAL = 0;   // elements

TENSOR_RO(0, x, T)
TENSOR_RO(1, cst, T)
TENSOR_RO(2, bias, T_BIAS)
TENSOR_RO(3, res, T_RES)
TENSOR(4, outp, T)

#include "tc_epilogue.glsl"

void main() {
  const uint i = flat_id();
  if (i >= uint(TOTAL)) return;
  const uint col = i % uint(C);
  const float a = x_ldf(i), b = cst_ldf(col);
  precise float v = OP == 0 ? a * b : (OP == 1 ? a + b : a - b);
  if (T == DT_F16) v = r16(v);
  outp_stf(i, epilogue(v, i, col));
}
