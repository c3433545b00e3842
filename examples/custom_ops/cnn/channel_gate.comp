#version 450
// ChannelGate: y[n, h, w, c] = x[n, h, w, c] * sigmoid(s[c]).
//
// Resources (Weft's custom-op resource contract: dense, scalar-contiguous fp32 buffers):
//   binding 0: X [N, H, W, C]  NHWC, read
//   binding 1: s [C]           per-channel gate logits, read
//   binding 2: Y [N, H, W, C]  NHWC, written
// One invocation per element: gl_GlobalInvocationID = (c, w, n * H + h). The dispatch is rounded
// up to whole workgroups, hence the bounds check.
layout(local_size_x = 8, local_size_y = 8, local_size_z = 1) in;

layout(std430, set = 0, binding = 0) readonly buffer InputX { float data[]; } x_buf;
layout(std430, set = 0, binding = 1) readonly buffer InputS { float data[]; } s_buf;
layout(std430, set = 0, binding = 2) writeonly buffer OutputY { float data[]; } y_buf;

// Four 4-byte push constants at offset 0, in this order.
layout(push_constant) uniform Params {
  int N;
  int H;
  int W;
  int C;
} pc;

void main() {
  const int c = int(gl_GlobalInvocationID.x);
  const int w = int(gl_GlobalInvocationID.y);
  const int nh = int(gl_GlobalInvocationID.z);  // n * H + h
  if (c >= pc.C || w >= pc.W || nh >= pc.N * pc.H) {
    return;
  }
  const int i = (nh * pc.W + w) * pc.C + c;
  const float gate = 1.0 / (1.0 + exp(-s_buf.data[c]));
  y_buf.data[i] = x_buf.data[i] * gate;
}
