#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// The layout family's tiled transpose: the ly_map case in which the destination's contiguous
// dimension A is strided in the source while another dimension B is the source's contiguous one
// (NCHW <-> NHWC, [.., X, Y] -> [.., Y, X]). A workgroup moves a 32 x 32 tile of (a, b) through
// shared memory so that both the reads (along b) and the writes (along a) are contiguous. The other
// dimensions (up to four, outermost first) are the batch: per batch coordinate c, the source moves
// by c * Sd and the destination by c * Td. Elements of 1, 2 or 4 bytes (ES).
layout(local_size_x = 32, local_size_y = 8) in;

layout(constant_id = 0) const int ES = 4;       // element bytes: 1, 2 or 4
layout(constant_id = 1) const int GROUPS = 0;   // batch * TILES_A * TILES_B
layout(constant_id = 2) const int DA = 1;       // extent of A (destination stride 1)
layout(constant_id = 3) const int DB = 1;       // extent of B (source stride 1)
layout(constant_id = 4) const int SA = 1;       // source stride of A
layout(constant_id = 5) const int TB = 1;       // destination stride of B
layout(constant_id = 6) const int SRC_BASE = 0;
layout(constant_id = 7) const int DST_BASE = 0;
#define BATCH(d, id)                               \
  layout(constant_id = id) const int D##d = 1;     \
  layout(constant_id = id + 1) const int S##d = 0; \
  layout(constant_id = id + 2) const int T##d = 0;
BATCH(0, 8)
BATCH(1, 11)
BATCH(2, 14)
BATCH(3, 17)

const int TILES_A = (DA + 31) / 32;
const int TILES_B = (DB + 31) / 32;

layout(std430, set = 0, binding = 0) restrict readonly buffer Src1 { uint8_t src1[]; };
layout(std430, set = 0, binding = 0) restrict readonly buffer Src2 { uint16_t src2[]; };
layout(std430, set = 0, binding = 0) restrict readonly buffer Src4 { uint src4[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst1 { uint8_t dst1[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst2 { uint16_t dst2[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst4 { uint dst4[]; };

shared uint tile[32][33];  // [a][b], padded against bank conflicts

#define STEP(d)              \
  {                          \
    const int c = g % D##d;  \
    g /= D##d;               \
    src += c * S##d;         \
    dst += c * T##d;         \
  }

void main() {
  int g = int(gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x);
  if (g >= GROUPS) return;  // uniform over the workgroup: before any barrier
  const int a0 = (g % TILES_A) * 32;
  g /= TILES_A;
  const int b0 = (g % TILES_B) * 32;
  g /= TILES_B;
  int src = SRC_BASE, dst = DST_BASE;
  STEP(3) STEP(2) STEP(1) STEP(0)
  const int lx = int(gl_LocalInvocationID.x), ly = int(gl_LocalInvocationID.y);

  // Read rows a of the tile, lanes along b (contiguous in the source).
  [[unroll]] for (int r = 0; r < 32; r += 8) {
    const int a = a0 + ly + r, b = b0 + lx;
    if (a < DA && b < DB) {
      const int i = src + a * SA + b;
      uint v;  // a branch, not ?: (a select would load every view, out of bounds)
      if (ES == 1)
        v = uint(src1[i]);
      else if (ES == 2)
        v = uint(src2[i]);
      else
        v = src4[i];
      tile[ly + r][lx] = v;
    }
  }
  barrier();
  // Write rows b, lanes along a (contiguous in the destination).
  [[unroll]] for (int r = 0; r < 32; r += 8) {
    const int a = a0 + lx, b = b0 + ly + r;
    if (a < DA && b < DB) {
      const int i = dst + b * TB + a;
      const uint v = tile[lx][ly + r];
      if (ES == 1)
        dst1[i] = uint8_t(v);
      else if (ES == 2)
        dst2[i] = uint16_t(v);
      else
        dst4[i] = v;
    }
  }
}
