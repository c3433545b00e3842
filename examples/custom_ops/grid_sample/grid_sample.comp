#version 450
// Bilinear grid sampling, exactly as torch.nn.functional.grid_sample and ONNX GridSample compute it
// with mode = bilinear, padding_mode = zeros; align_corners comes from a push constant.
//
// Resources (Weft's custom-op resource contract: dense, scalar-contiguous fp32 buffers):
//   binding 0: X    [N, H, W, C]        NHWC, read
//   binding 1: grid [N, Hout, Wout, 2]  (x, y) normalised to [-1, 1], read
//   binding 2: Y    [N, Hout, Wout, C]  NHWC, written
// One invocation per output pixel: gl_GlobalInvocationID = (x, y, n); it loops over the channels.
// The dispatch is rounded up to whole workgroups, hence the bounds check.
layout(local_size_x = 8, local_size_y = 8, local_size_z = 1) in;

layout(std430, set = 0, binding = 0) readonly buffer InputX { float data[]; } x_buf;
layout(std430, set = 0, binding = 1) readonly buffer InputGrid { float data[]; } grid_buf;
layout(std430, set = 0, binding = 2) writeonly buffer OutputY { float data[]; } y_buf;

// Seven 4-byte push constants at offset 0, in this order.
layout(push_constant) uniform Params {
  int N;
  int H;
  int W;
  int C;
  int Hout;
  int Wout;
  int align_corners;  // 0 or 1
} pc;

// torch's grid_sampler_unnormalize: [-1, 1] -> pixel coordinates.
//   align_corners: -1 and 1 are the centres of the corner pixels;
//   otherwise:     -1 and 1 are the outer edges of the corner pixels.
float unnormalize(float coord, int size) {
  if (pc.align_corners != 0) {
    return ((coord + 1.0) / 2.0) * float(size - 1);
  }
  return ((coord + 1.0) * float(size) - 1.0) / 2.0;
}

float fetch(int n, int y, int x, int c) {
  return x_buf.data[((n * pc.H + y) * pc.W + x) * pc.C + c];
}

void main() {
  const int ox = int(gl_GlobalInvocationID.x);
  const int oy = int(gl_GlobalInvocationID.y);
  const int n = int(gl_GlobalInvocationID.z);
  if (ox >= pc.Wout || oy >= pc.Hout || n >= pc.N) {
    return;
  }
  const int g = ((n * pc.Hout + oy) * pc.Wout + ox) * 2;
  const int out_base = ((n * pc.Hout + oy) * pc.Wout + ox) * pc.C;
  const float ix = unnormalize(grid_buf.data[g], pc.W);
  const float iy = unnormalize(grid_buf.data[g + 1], pc.H);

  // Every tap lies outside the input (or the coordinate is NaN): zero padding gives 0. This also
  // keeps the float -> int conversions below in range.
  if (!(ix > -1.0 && ix < float(pc.W) && iy > -1.0 && iy < float(pc.H))) {
    for (int c = 0; c < pc.C; ++c) {
      y_buf.data[out_base + c] = 0.0;
    }
    return;
  }

  // The four taps and their weights, as torch computes them (north-west = floor).
  const float ix_nw = floor(ix);
  const float iy_nw = floor(iy);
  const float ix_se = ix_nw + 1.0;
  const float iy_se = iy_nw + 1.0;
  const float nw = (ix_se - ix) * (iy_se - iy);
  const float ne = (ix - ix_nw) * (iy_se - iy);
  const float sw = (ix_se - ix) * (iy - iy_nw);
  const float se = (ix - ix_nw) * (iy - iy_nw);

  const int x0 = int(ix_nw);
  const int y0 = int(iy_nw);
  const int x1 = x0 + 1;
  const int y1 = y0 + 1;
  // padding_mode = zeros: a tap outside the input contributes nothing.
  const bool x0_in = x0 >= 0 && x0 < pc.W;
  const bool x1_in = x1 >= 0 && x1 < pc.W;
  const bool y0_in = y0 >= 0 && y0 < pc.H;
  const bool y1_in = y1 >= 0 && y1 < pc.H;

  for (int c = 0; c < pc.C; ++c) {
    float acc = 0.0;
    if (y0_in && x0_in) acc += fetch(n, y0, x0, c) * nw;
    if (y0_in && x1_in) acc += fetch(n, y0, x1, c) * ne;
    if (y1_in && x0_in) acc += fetch(n, y1, x0, c) * sw;
    if (y1_in && x1_in) acc += fetch(n, y1, x1, c) * se;
    y_buf.data[out_base + c] = acc;
  }
}
