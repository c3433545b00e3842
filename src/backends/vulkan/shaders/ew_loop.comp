#version 450
// A group of float element-wise operators in one pass (backend::Composite::Region::kElementwise,
// pattern ELEMENTWISE[n ops]): each invocation computes one element of every step in graph order,
// the values used only inside the group kept in registers and never written. An unrolled LSTM cell,
// Mish's ten operators or a hand-written activation are one dispatch instead of one per operator.
// Bindings 0-11 are the inputs, 12-14 the results read outside the group.
//
// The program is specialization constants, so that the driver folds every switch and keeps the
// steps' values in registers: per step s, OP_s (ew_ops.glsl's codes) and its operands A_s / B_s:
//   0 .. 23    the result of step k (an earlier one)
//   100 + k    input binding k, of the result's shape (element i)
//   200 + k    input binding k, one value per index of the last axis (element i % C)
//   300 + k    input binding k, one value (element 0)
//   400        an immediate: its float bits in P1_s for B, in P2_s for A (a one-element constant)
// Input k is read from element IN_OFF_k on (a contiguous SLICE folded into the group reads its
// source in place). P0_s / P1_s / P2_s are otherwise the operator's parameters as ew.comp takes them (CLAMP's bounds
// and NaN mode, MAXIMUM / MINIMUM's NaN mode). Arithmetic is fp32 through ew_ops.glsl's functions,
// as ew.comp computes each operator alone; with fp16 values each step's result is rounded to fp16,
// as the operator's own store would round it, so the group gives its operators' results one by one.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 64) in;

#include "ew_ops.glsl"

layout(constant_id = 0) const int T = DT_F32;  // every value of the group
layout(constant_id = 1) const int TOTAL = 0;   // elements of the result
layout(constant_id = 2) const int C = 1;       // the last axis (column operands)
layout(constant_id = 3) const int NSTEPS = 0;
layout(constant_id = 4) const int OUT0 = -1;   // the step written to output binding 12 + k (-1: none)
layout(constant_id = 5) const int OUT1 = -1;
layout(constant_id = 6) const int OUT2 = -1;
#define MAX_STEPS 24
#define STEP_CONSTANTS(s)                                     \
  layout(constant_id = 10 + 6 * s) const int OP_##s = 0;     \
  layout(constant_id = 11 + 6 * s) const int A_##s = 0;      \
  layout(constant_id = 12 + 6 * s) const int B_##s = 0;      \
  layout(constant_id = 13 + 6 * s) const int P0_##s = 0;     \
  layout(constant_id = 14 + 6 * s) const int P1_##s = 0;     \
  layout(constant_id = 15 + 6 * s) const int P2_##s = 0;
STEP_CONSTANTS(0) STEP_CONSTANTS(1) STEP_CONSTANTS(2) STEP_CONSTANTS(3) STEP_CONSTANTS(4) STEP_CONSTANTS(5)
STEP_CONSTANTS(6) STEP_CONSTANTS(7) STEP_CONSTANTS(8) STEP_CONSTANTS(9) STEP_CONSTANTS(10) STEP_CONSTANTS(11)
STEP_CONSTANTS(12) STEP_CONSTANTS(13) STEP_CONSTANTS(14) STEP_CONSTANTS(15) STEP_CONSTANTS(16) STEP_CONSTANTS(17)
STEP_CONSTANTS(18) STEP_CONSTANTS(19) STEP_CONSTANTS(20) STEP_CONSTANTS(21) STEP_CONSTANTS(22) STEP_CONSTANTS(23)
#define IN_OFFSET(k) layout(constant_id = 160 + k) const int IN_OFF_##k = 0;
IN_OFFSET(0) IN_OFFSET(1) IN_OFFSET(2) IN_OFFSET(3) IN_OFFSET(4) IN_OFFSET(5)
IN_OFFSET(6) IN_OFFSET(7) IN_OFFSET(8) IN_OFFSET(9) IN_OFFSET(10) IN_OFFSET(11)

TENSOR_RO(0, in0, T)
TENSOR_RO(1, in1, T)
TENSOR_RO(2, in2, T)
TENSOR_RO(3, in3, T)
TENSOR_RO(4, in4, T)
TENSOR_RO(5, in5, T)
TENSOR_RO(6, in6, T)
TENSOR_RO(7, in7, T)
TENSOR_RO(8, in8, T)
TENSOR_RO(9, in9, T)
TENSOR_RO(10, in10, T)
TENSOR_RO(11, in11, T)
TENSOR(12, out0, T)
TENSOR(13, out1, T)
TENSOR(14, out2, T)

float r[MAX_STEPS];

float load_in(int k, uint e) {
  switch (k) {
    case 0: return in0_ldf(e + uint(IN_OFF_0));
    case 1: return in1_ldf(e + uint(IN_OFF_1));
    case 2: return in2_ldf(e + uint(IN_OFF_2));
    case 3: return in3_ldf(e + uint(IN_OFF_3));
    case 4: return in4_ldf(e + uint(IN_OFF_4));
    case 5: return in5_ldf(e + uint(IN_OFF_5));
    case 6: return in6_ldf(e + uint(IN_OFF_6));
    case 7: return in7_ldf(e + uint(IN_OFF_7));
    case 8: return in8_ldf(e + uint(IN_OFF_8));
    case 9: return in9_ldf(e + uint(IN_OFF_9));
    case 10: return in10_ldf(e + uint(IN_OFF_10));
    default: return in11_ldf(e + uint(IN_OFF_11));
  }
}

// Operand `src` (the encoding above) of element i, column col; `imm`: the immediate's bits.
float operand(int src, int imm, uint i, uint col) {
  if (src < 100) return r[src];
  if (src < 200) return load_in(src - 100, i);
  if (src < 300) return load_in(src - 200, col);
  if (src < 400) return load_in(src - 300, 0u);
  return intBitsToFloat(imm);
}

float run_step(int op, int a, int b, int p0, int p1, int p2, uint i, uint col) {
  precise float y;
  if (op < OP_ADD) y = ew_unary_f(op, operand(a, p2, i, col), p0, p1, p2);
  else y = ew_binary_f(op, operand(a, p2, i, col), operand(b, p1, i, col), p0);
  return T == DT_F16 ? rte16(y) : y;
}

#define STEP(s) \
  if (s < NSTEPS) r[s] = run_step(OP_##s, A_##s, B_##s, P0_##s, P1_##s, P2_##s, i, col);

void main() {
  const uint i = flat_id();
  if (i >= uint(TOTAL)) return;
  const uint col = i % uint(C);
  STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7) STEP(8) STEP(9) STEP(10) STEP(11)
  STEP(12) STEP(13) STEP(14) STEP(15) STEP(16) STEP(17) STEP(18) STEP(19) STEP(20) STEP(21) STEP(22) STEP(23)
  if (OUT0 >= 0) out0_stf(i, r[OUT0]);
  if (OUT1 >= 0) out1_stf(i, r[OUT1]);
  if (OUT2 >= 0) out2_stf(i, r[OUT2]);
}
