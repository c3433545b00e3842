#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// TABLE, one invocation per element (binding 1: the table, of the input's type).
//   int8:  out = table[in + 128] (int8 -> int8, 256 entries);
//   int16: apply_lookup_s: the top 9 bits of in + 32768 pick entry `index`, the low 7 bits
//          interpolate towards entry index + 1: out = table[index] * 128 + slope * fraction (int16 ->
//          int32, 513 entries). TOSA REQUIREs every slope to fit int16; the lowering checks the
//          constant table.

layout(constant_id = 0) const int T_IN = DT_I8;
layout(constant_id = 1) const int N = 1;
layout(local_size_x = 64) in;

TENSOR_RO(0, X, T_IN)
TENSOR_RO(1, TAB, T_IN)
TENSOR(2, Y, (T_IN == DT_I8 ? DT_I8 : DT_I32))

void main() {
  const uint i = flat_id();
  if (i >= uint(N)) return;
  const int v = X_ldi(i);
  if (T_IN == DT_I8) {
    Y_sti(i, TAB_ldi(uint(v + 128)));
  } else {
    const uint index = uint(v + 32768) >> 7;
    const int fraction = v & 0x7f;
    const int base = TAB_ldi(index);
    Y_sti(i, base * 128 + (TAB_ldi(index + 1u) - base) * fraction);
  }
}
