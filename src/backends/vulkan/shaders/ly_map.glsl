// The body of ly_map.comp and ly_map2.comp (TWO_SOURCES). The layout family's generic index-mapping copy (TRANSPOSE, SLICE, TILE, REVERSE, PAD, CONCAT,
// and SCATTER's copy of values_in): every invocation writes one unit of UNIT bytes (a whole number
// of elements; the lowering widens units over contiguous runs) at a position of a rank-6 iteration
// space. Per dimension d (0 outermost), coordinate c in [0, Dd) maps to
//   destination unit DST_BASE + sum c * Td,
//   source unit      SRC_BASE + sum i * Sd, where i = c                 (Md = 0; Sd may be negative),
//                                              i = c % Ld            (Md = 1: TILE),
//                                              i = c + Od, checked 0 <= i < Ld (Md = 2: PAD);
// a position whose coordinates fail a check gets the pad pattern P0..P3 (the pad element repeated
// over the unit) instead of a source read. The lowering merges dimensions that are contiguous on
// both sides, so most copies run on one or two dimensions of 16-byte units.
// ly_map2 (TWO_SOURCES) reads two sources of one shape (bindings 0 and 2): a dimension with Md = 3
// selects the source by its coordinate (0 or 1) and adds nothing to the source position (a CONCAT
// of two equal pieces read through a view, ShuffleNet's channel shuffle; see backend.cpp).
layout(local_size_x = 64) in;

layout(constant_id = 0) const int UNIT = 4;  // bytes per unit: 1, 2, 4, 8 or 16
layout(constant_id = 1) const int TOTAL = 0;  // units in the iteration space
layout(constant_id = 2) const int SRC_BASE = 0;
layout(constant_id = 3) const int DST_BASE = 0;
layout(constant_id = 4) const int P0 = 0;
layout(constant_id = 5) const int P1 = 0;
layout(constant_id = 6) const int P2 = 0;
layout(constant_id = 7) const int P3 = 0;

#define DIM(d, id)                                   \
  layout(constant_id = id) const int D##d = 1;       \
  layout(constant_id = id + 1) const int S##d = 0;   \
  layout(constant_id = id + 2) const int T##d = 0;   \
  layout(constant_id = id + 3) const int M##d = 0;   \
  layout(constant_id = id + 4) const int O##d = 0;   \
  layout(constant_id = id + 5) const int L##d = 1;
DIM(0, 8)
DIM(1, 14)
DIM(2, 20)
DIM(3, 26)
DIM(4, 32)
DIM(5, 38)

layout(std430, set = 0, binding = 0) restrict readonly buffer Src1 { int8_t src1[]; };
layout(std430, set = 0, binding = 0) restrict readonly buffer Src2 { int16_t src2[]; };
layout(std430, set = 0, binding = 0) restrict readonly buffer Src4 { uint src4[]; };
layout(std430, set = 0, binding = 0) restrict readonly buffer Src8 { uvec2 src8[]; };
layout(std430, set = 0, binding = 0) restrict readonly buffer Src16 { uvec4 src16[]; };
#if defined(TWO_SOURCES)
layout(std430, set = 0, binding = 2) restrict readonly buffer SrcB1 { int8_t srcb1[]; };
layout(std430, set = 0, binding = 2) restrict readonly buffer SrcB2 { int16_t srcb2[]; };
layout(std430, set = 0, binding = 2) restrict readonly buffer SrcB4 { uint srcb4[]; };
layout(std430, set = 0, binding = 2) restrict readonly buffer SrcB8 { uvec2 srcb8[]; };
layout(std430, set = 0, binding = 2) restrict readonly buffer SrcB16 { uvec4 srcb16[]; };
#define READ(n, at) (second ? srcb##n[at] : src##n[at])  // (both sources have the same size: either read is in bounds)
#else
#define READ(n, at) src##n[at]
#endif
layout(std430, set = 0, binding = 1) writeonly buffer Dst1 { int8_t dst1[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst2 { int16_t dst2[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst4 { uint dst4[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst8 { uvec2 dst8[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst16 { uvec4 dst16[]; };

#define STEP(d)                                   \
  {                                               \
    const int c = rem % D##d;                     \
    rem /= D##d;                                  \
    int i = c;                                    \
    if (M##d == 1) {                              \
      i = c % L##d;                               \
    } else if (M##d == 3) {                       \
      second = second || c == 1;                  \
      i = 0;                                      \
    } else if (M##d == 2) {                       \
      i = c + O##d;                               \
      inside = inside && uint(i) < uint(L##d);    \
    }                                             \
    src += i * S##d;                              \
    dst += c * T##d;                              \
  }

void main() {
  const uint id = flat_id();
  if (id >= uint(TOTAL)) return;
  int rem = int(id);
  int src = SRC_BASE, dst = DST_BASE;
  bool inside = true, second = false;
  STEP(5) STEP(4) STEP(3) STEP(2) STEP(1) STEP(0)
  // An explicit branch, not ?: (which may compile to a select that reads out of bounds).
  if (UNIT == 1) {
    int8_t v = int8_t(P0);
    if (inside) v = READ(1, src);
    dst1[dst] = v;
  } else if (UNIT == 2) {
    int16_t v = int16_t(P0);
    if (inside) v = READ(2, src);
    dst2[dst] = v;
  } else if (UNIT == 4) {
    uint v = uint(P0);
    if (inside) v = READ(4, src);
    dst4[dst] = v;
  } else if (UNIT == 8) {
    uvec2 v = uvec2(P0, P1);
    if (inside) v = READ(8, src);
    dst8[dst] = v;
  } else {
    uvec4 v = uvec4(P0, P1, P2, P3);
    if (inside) v = READ(16, src);
    dst16[dst] = v;
  }
}
