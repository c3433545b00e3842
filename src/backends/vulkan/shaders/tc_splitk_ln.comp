#version 450
// The second pass of a split-K GEMM fused with the LAYER_NORM region that alone reads its result
// (ops_tensor.cpp, lower_matmul_layer_norm): a workgroup per row of the GEMM's output adds the
// SPLIT partial sums of each element in slice order, applies the GEMM's fused post-ops and rounds
// the value to the result's type, exactly as tc_splitk would have stored it, and then normalizes
// the row as mx_rownorm does (MODE 1; the row body is mx_rownorm.glsl, reading the finished values
// through ROW_LOAD). The GEMM's result never reaches memory: one dispatch less, and no round trip.
//
// Bindings: 0 the partial sums [SPLIT][TOTAL] (fp32), 1 the normalized output, 2 gamma and beta
// (mx_rownorm's affine), 3 the GEMM's bias, 4 its residual or mask. Specialization constants:
// mx_rownorm.glsl's 0..7 (K: the GEMM's N), tc_epilogue.glsl's 40..55, and 80..83 below.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 80) const int T_BIAS = DT_F32;
layout(constant_id = 81) const int T_RES = DT_F32;
layout(constant_id = 82) const int SPLIT = 1;
layout(constant_id = 83) const int TOTAL = 1;  // elements of the GEMM's output (batch * M * N)

layout(std430, set = 0, binding = 0) restrict readonly buffer PartB { float part[]; };
TENSOR_RO(3, bias, T_BIAS)
TENSOR_RO(4, res, T_RES)

#include "tc_epilogue.glsl"

// The GEMM's output element e (row-major [rows][N], INNER == 1), as tc_splitk stores it; defined
// after the body, whose T (the result's type) and K (the row length, the GEMM's N) it reads.
float gemm_value(uint e);
#define ROW_LOAD(i) gemm_value(i)

#include "mx_rownorm.glsl"

float gemm_value(uint e) {
  float v = 0.0;
  for (int s = 0; s < SPLIT; ++s) v += part[uint(s) * uint(TOTAL) + e];
  v = epilogue(v, e, e % uint(K));
  return T == DT_F16 ? r16(v) : v;
}
