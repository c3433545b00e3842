#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// FFT2D / RFFT2D as a separable direct DFT in fp32, one invocation per output, two passes (the
// reference's order, in double there):
//   PASS 0 (rows):    R[n,iy,ox] = sum_ix x[n,iy,ix] * exp(-i*SIGN*2*pi*ix*ox/W), ox < OW
//   PASS 1 (columns): y[n,oy,ox] = sum_iy R[n,iy,ox] * exp(-i*SIGN*2*pi*iy*oy/H)
// with OW = W (FFT2D) or W/2 + 1 (RFFT2D, no imaginary input: HAS_IMAG 0). Angles are reduced
// modulo W and H exactly (powers of two) and read from a table made in double on the host
// (binding 4: cos W, sin W, cos H, sin H; exact at the quarter turns).

layout(constant_id = 0) const int PASS = 0;
layout(constant_id = 1) const int N = 1;
layout(constant_id = 2) const int H = 1;
layout(constant_id = 3) const int W = 1;
layout(constant_id = 4) const int OW = 1;
layout(constant_id = 5) const int SIGN = 1;
layout(constant_id = 6) const int HAS_IMAG = 1;
layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) restrict readonly buffer InR { float in_r[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer InI { float in_i[]; };
layout(std430, set = 0, binding = 2) writeonly buffer OutR { float out_r[]; };
layout(std430, set = 0, binding = 3) writeonly buffer OutI { float out_i[]; };
layout(std430, set = 0, binding = 4) restrict readonly buffer Tw { float tw[]; };

void main() {
  const uint t = flat_id();
  if (t >= uint(N) * uint(H) * uint(OW)) return;
  const uint ox = t % uint(OW);
  const uint y = (t / uint(OW)) % uint(H);  // PASS 0: iy, PASS 1: oy
  const uint n = t / (uint(OW) * uint(H));
  const uint len = PASS == 0 ? uint(W) : uint(H);
  const uint base = PASS == 0 ? (n * uint(H) + y) * uint(W) : n * uint(H) * uint(OW) + ox;
  const uint step = PASS == 0 ? 1u : uint(OW);
  const uint freq = PASS == 0 ? ox : y;
  const uint tw0 = PASS == 0 ? 0u : 2u * uint(W);
  float sr = 0.0, si = 0.0;
  for (uint j = 0u; j < len; ++j) {
    const uint k = (j * freq) & (len - 1u);
    const float c = tw[tw0 + k], s = float(SIGN) * tw[tw0 + len + k];
    const float vr = in_r[base + j * step];
    const float vi = HAS_IMAG != 0 ? in_i[base + j * step] : 0.0;
    sr += vr * c + vi * s;
    si += vi * c - vr * s;
  }
  out_r[t] = sr;
  out_i[t] = si;
}
