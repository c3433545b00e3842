#!/usr/bin/env python3
"""Generates the cnn custom-operator example: an NCHW CNN exported to ONNX with two custom-shader
nodes in the middle (a GridSample warp and a custom-domain ChannelGate, back to back), its input,
and the output torch computes.

    x f32[1,3,24,24]
      -> Conv2d(3, 8, 3, padding 1) -> ReLU                       f32[1,8,24,24]
      -> GridSample(features, grid)  constant affine warp grid     f32[1,8,20,20]   (shader)
           bilinear, zeros, align_corners=False; grid [1,20,20,2]
           = F.affine_grid(rotation by 10 degrees, shrink to 0.9)
      -> weft.examples::ChannelGate(features, s)  x*sigmoid(s[c])  f32[1,8,20,20]   (shader)
      -> Conv2d(8, 4, 3, padding 1)                                f32[1,4,20,20] -> y

    python3 examples/custom_ops/cnn/make_example.py [OUTDIR]

OUTDIR defaults to this folder. It writes (deterministic: fixed seeds):

    cnn.onnx      opset 16 + custom domain "weft.examples" version 1; inputs: x; outputs: y
    input.npy     f32[1,3,24,24]
    expected.npy  f32[1,4,20,20]  torch eager output

Needs torch (1.13 or later), onnx and numpy, e.g. Debian's /usr/bin/python3.
"""
import argparse
import math
import os
import warnings

import numpy as np
import onnx
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))

IN_H = IN_W = 24
OUT_H = OUT_W = 20  # the warp resamples to a different size: Hout/Wout come from the grid
FEATURES = 8
OPSET = 16
CUSTOM_DOMAIN = "weft.examples"


class ChannelGate(torch.autograd.Function):
    """y = x * sigmoid(s[c]) for NCHW x and s of shape [C]; exported as weft.examples::ChannelGate."""

    @staticmethod
    def forward(ctx, x, s):
        return x * torch.sigmoid(s).view(1, -1, 1, 1)

    @staticmethod
    def symbolic(g, x, s):
        return g.op(f"{CUSTOM_DOMAIN}::ChannelGate", x, s)


class WarpCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, FEATURES, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(FEATURES, 4, 3, padding=1)
        # The features rotated by 10 degrees and shrunk to 0.9 of their size: the grid maps output
        # to input coordinates, so it applies the inverse scale (1 / 0.9); the output's corners
        # sample outside the input and get the zero padding.
        angle, scale = math.radians(10.0), 1.0 / 0.9
        cos, sin = scale * math.cos(angle), scale * math.sin(angle)
        theta = torch.tensor([[[cos, -sin, 0.0], [sin, cos, 0.0]]], dtype=torch.float32)
        grid = F.affine_grid(theta, size=(1, FEATURES, OUT_H, OUT_W), align_corners=False)
        self.register_buffer("grid", grid)  # [1, OUT_H, OUT_W, 2]: an initializer in the ONNX model
        self.register_buffer("gate", torch.linspace(-2.0, 2.0, FEATURES))  # s, [C]

    def forward(self, x):
        f = torch.relu(self.conv1(x))
        f = F.grid_sample(f, self.grid, mode="bilinear", padding_mode="zeros", align_corners=False)
        f = ChannelGate.apply(f, self.gate)
        return self.conv2(f)


def set_static_shape(value_info, shape):
    dims = value_info.type.tensor_type.shape.dim
    del dims[:]
    for d in shape:
        dims.add().dim_value = d


def fix_shapes(path, output_shape):
    """torch's exporter cannot infer the output shape of a custom-domain node, so the ChannelGate
    output and everything after it (the graph output) get symbolic dimensions. Gives them their
    static shapes, and checks with ONNX's strict shape inference that they agree with the rest."""
    model = onnx.load(path)
    gate = next(n for n in model.graph.node if n.op_type == "ChannelGate")
    del model.graph.value_info[:]
    vi = onnx.helper.make_tensor_value_info(gate.output[0], onnx.TensorProto.FLOAT,
                                            [1, FEATURES, OUT_H, OUT_W])
    model.graph.value_info.append(vi)
    set_static_shape(model.graph.output[0], output_shape)
    onnx.checker.check_model(model)
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    onnx.save(model, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", nargs="?", default=HERE, help="output folder (default: %(default)s)")
    out = parser.parse_args().outdir
    os.makedirs(out, exist_ok=True)

    torch.manual_seed(20260313)
    net = WarpCNN().eval()
    x = np.random.default_rng(20260313).uniform(-1.0, 1.0, size=(1, 3, IN_H, IN_W)).astype(np.float32)
    xt = torch.from_numpy(x)
    with torch.no_grad():
        expected = net(xt).numpy()
        with warnings.catch_warnings():  # "shape inference of weft.examples::ChannelGate is missing"
            warnings.simplefilter("ignore")
            torch.onnx.export(net, (xt,), os.path.join(out, "cnn.onnx"), opset_version=OPSET,
                              input_names=["x"], output_names=["y"], do_constant_folding=True,
                              custom_opsets={CUSTOM_DOMAIN: 1})
    fix_shapes(os.path.join(out, "cnn.onnx"), expected.shape)
    np.save(os.path.join(out, "input.npy"), x)
    np.save(os.path.join(out, "expected.npy"), expected)
    print(f"cnn: wrote {out}; output {list(expected.shape)}")


if __name__ == "__main__":
    main()
