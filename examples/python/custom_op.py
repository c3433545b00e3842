"""A torch.library operator with a Vulkan shader, end to end: defined in torch with a CPU
reference implementation, given a GLSL compute shader with weft.torch.register_custom_op, exported
inside a torch module by weft.torch.compile, and run by Weft (the shader on Vulkan; lavapipe on a
machine without a GPU). Prints the largest difference from torch's own CPU result.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/custom_op.py
"""
import sys

import torch
import torch.library

import weft
import weft.torch

# 1. The operator in torch: RMS normalization over the channels of an NCHW tensor.
lib = torch.library.Library("weft_example", "DEF")
lib.define("channel_rms_norm(Tensor x, float eps) -> Tensor")


def channel_rms_norm_cpu(x, eps):
    return x * torch.rsqrt(x.pow(2).mean(dim=1, keepdim=True) + eps)


lib.impl("channel_rms_norm", channel_rms_norm_cpu, "CPU")

# 2. Its shader: one invocation per pixel, reading the tensor channels-last (NHWC), so that a
#    pixel's channels are adjacent. Weft puts the NCHW <-> NHWC permutes around the node.
SHADER = """
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { int pixels; int channels; float eps; } pc;
void main() {
  uint p = gl_GlobalInvocationID.x;
  if (p >= uint(pc.pixels)) return;
  uint base = p * uint(pc.channels);
  float sum = 0.0;
  for (int c = 0; c < pc.channels; ++c) sum += x[base + c] * x[base + c];
  float r = inversesqrt(sum / float(pc.channels) + pc.eps);
  for (int c = 0; c < pc.channels; ++c) y[base + c] = x[base + c] * r;
}
"""

weft.torch.register_custom_op(
    "weft_example::channel_rms_norm",
    shader={"source": SHADER},
    workgroup_size=[64, 1, 1],
    inputs=[{"layout": "NHWC"}],
    outputs=[{"layout": "NHWC", "shape": ["in0[0]", "in0[1]", "in0[2]", "in0[3]"]}],
    push_constants=[
        {"name": "pixels", "value": "in0[0] * in0[1] * in0[2]"},
        {"name": "channels", "value": "in0[3]"},
        {"name": "eps", "value": "attr.eps"},
    ],
    invocations=["in0[0] * in0[1] * in0[2]"],
)


# 3. A module that uses it between two convolutions.
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(16, 8, 1)

    def forward(self, x):
        y = torch.ops.weft_example.channel_rms_norm(self.conv1(x), 1e-5)
        return torch.relu(self.conv2(y))


def main():
    torch.manual_seed(0)
    net = Net().eval()
    x = torch.randn(1, 3, 32, 32)
    try:
        compiled = weft.torch.compile(net, x)
    except weft.Error as e:
        if e.code == "unsupported" and "Vulkan" in str(e):
            print(f"skipped: no Vulkan device here ({e})")
            return 0
        raise
    y = compiled(x)
    with torch.no_grad():
        reference = net(x)
    diff = (y - reference).abs().max().item()
    explanation = compiled.explain()
    shader_kernels = [k for k in explanation.kernels if k.pattern == "CUSTOM"]
    print(f"kernels per backend: {explanation.by_backend()}")
    print(f"shader kernels: {[k.nodes for k in shader_kernels]} on {[k.backend for k in shader_kernels]}")
    print(f"output {tuple(y.shape)}, max |weft - torch| = {diff:.3g}")
    return 0 if diff < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
