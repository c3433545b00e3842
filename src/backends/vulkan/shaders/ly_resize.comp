#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// RESIZE of an [N, IH, IW, C] image to [N, OH, OW, C] as the TOSA 1.0 pseudocode, one invocation per
// output element. The source position of output row oy is y = oy * SY_D + OFF_Y in units of 1/SY_N
// input rows: iy = floor(y / SY_N), remainder ry; likewise x. Integer inputs (int8, int16) use the
// integer weights (SY_N - ry) and ry, so bilinear results are scaled by SY_N * SX_N (int32 / int48
// outputs; int64 arithmetic); nearest takes the upper neighbour when 2 * ry >= SY_N (for floats the
// same test as dy >= 0.5, exactly). Floating-point inputs interpolate with dy = ry / SY_N in fp32
// and round once to the output type. The lowering checks the spec's ERROR_IF conditions, which keep
// every neighbour inside the image.
layout(local_size_x = 64) in;

layout(constant_id = 0) const int T_IN = DT_F32;
layout(constant_id = 1) const int T_OUT = DT_F32;
layout(constant_id = 2) const int BILINEAR = 0;
layout(constant_id = 3) const int TOTAL = 0;  // N * OH * OW * C
layout(constant_id = 4) const int C = 1;
layout(constant_id = 5) const int IH = 1;
layout(constant_id = 6) const int IW = 1;
layout(constant_id = 7) const int OH = 1;
layout(constant_id = 8) const int OW = 1;
layout(constant_id = 9) const int SY_N = 1;
layout(constant_id = 10) const int SY_D = 1;
layout(constant_id = 11) const int SX_N = 1;
layout(constant_id = 12) const int SX_D = 1;
layout(constant_id = 13) const int OFF_Y = 0;
layout(constant_id = 14) const int OFF_X = 0;

TENSOR_RO(0, inp, T_IN)
TENSOR(1, outp, T_OUT)

const bool INT_MODE = T_IN == DT_I8 || T_IN == DT_I16;

// floor(a / b) for b > 0.
int floor_div(int a, int b) {
  const int q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

void main() {
  const uint id = flat_id();
  if (id >= uint(TOTAL)) return;
  int r = int(id);
  const int c = r % C;
  r /= C;
  const int ox = r % OW;
  r /= OW;
  const int oy = r % OH;
  const int n = r / OH;

  const int y = oy * SY_D + OFF_Y, x = ox * SX_D + OFF_X;
  const int iy = floor_div(y, SY_N), ix = floor_div(x, SX_N);
  const int ry = y - iy * SY_N, rx = x - ix * SX_N;
  const int iy0 = max(iy, 0), iy1 = min(iy + 1, IH - 1);
  const int ix0 = max(ix, 0), ix1 = min(ix + 1, IW - 1);
  const int row0 = (n * IH + iy0) * IW, row1 = (n * IH + iy1) * IW;
  const uint a00 = uint((row0 + ix0) * C + c), a01 = uint((row0 + ix1) * C + c);
  const uint a10 = uint((row1 + ix0) * C + c), a11 = uint((row1 + ix1) * C + c);

  if (BILINEAR == 0) {
    // Nearest: the same element for every type; integers stay exact through ldl/stl.
    const uint a = 2 * ry >= SY_N ? (2 * rx >= SX_N ? a11 : a10) : (2 * rx >= SX_N ? a01 : a00);
    if (INT_MODE)
      outp_stl(id, inp_ldl(a));
    else
      outp_stf(id, inp_ldf(a));
  } else if (INT_MODE) {
    const int64_t wy1 = int64_t(ry), wy0 = int64_t(SY_N - ry);
    const int64_t wx1 = int64_t(rx), wx0 = int64_t(SX_N - rx);
    const int64_t v = inp_ldl(a00) * wy0 * wx0 + inp_ldl(a01) * wy0 * wx1 + inp_ldl(a10) * wy1 * wx0 +
                      inp_ldl(a11) * wy1 * wx1;
    outp_stl(id, v);
  } else {
    const float dy = float(ry) / float(SY_N), dx = float(rx) / float(SX_N);
    // The reference's order of operations, unfused.
    precise float v = inp_ldf(a00) * (1.0 - dy) * (1.0 - dx);
    v += inp_ldf(a01) * (1.0 - dy) * dx;
    v += inp_ldf(a10) * dy * (1.0 - dx);
    v += inp_ldf(a11) * dy * dx;
    outp_stf(id, v);
  }
}
