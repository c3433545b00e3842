#!/usr/bin/env python3
"""Generates the grid_sample custom-operator example: ONNX models whose GridSample node Weft runs as
the Vulkan compute shader grid_sample.comp, a .weft model with the same operator as a CUSTOM node,
their inputs, and the outputs torch computes.

    python3 examples/custom_ops/grid_sample/make_example.py [OUTDIR]

OUTDIR defaults to this folder. It writes (deterministic: fixed seed):

    grid_sample.onnx     F.grid_sample(x, grid, bilinear, zeros, align_corners=False), opset 16
    grid_sample_ac.onnx  the same with align_corners=True
    x.npy                f32[1,3,16,20]  NCHW input of the ONNX models
    grid.npy             f32[1,12,10,2]  sampling grid, values in [-1.2, 1.2]
    expected.npy         f32[1,3,12,10]  torch's output, align_corners=False
    expected_ac.npy      f32[1,3,12,10]  torch's output, align_corners=True
    grid_sample.weft     NHWC model: CUSTOM(x, grid) -> f32[1,12,10,3]
    x_nhwc.npy           f32[1,16,20,3]  x permuted to NHWC, input of grid_sample.weft
    expected_nhwc.npy    f32[1,12,10,3]  expected.npy permuted to NHWC

Needs torch (1.13 or later), onnx and numpy, e.g. Debian's /usr/bin/python3.
"""
import argparse
import os

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))

N, C, H, W = 1, 3, 16, 20
HOUT, WOUT = 12, 10
OPSET = 16


class GridSample(torch.nn.Module):
    def __init__(self, align_corners):
        super().__init__()
        self.align_corners = align_corners

    def forward(self, x, grid):
        return F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros",
                             align_corners=self.align_corners)


def make_inputs():
    rng = np.random.default_rng(20260311)
    x = rng.uniform(-1.0, 1.0, size=(N, C, H, W)).astype(np.float32)
    # In [-1.2, 1.2]: about a sixth of the samples per axis fall (partly) outside the input and
    # meet the zero padding.
    grid = rng.uniform(-1.2, 1.2, size=(N, HOUT, WOUT, 2)).astype(np.float32)
    # A few exact points: the corners and the centre of the normalised square, and two samples
    # entirely outside the input.
    special = [(-1.0, -1.0), (1.0, -1.0), (-1.0, 1.0), (1.0, 1.0), (0.0, 0.0),
               (-1.2, 0.3), (0.5, 1.2)]
    for i, (gx, gy) in enumerate(special):
        grid[0, 0, i] = (gx, gy)
    return x, grid


WEFT = """graph @main(%x: f32[1,16,20,3], %grid: f32[1,12,10,2]) -> (%y) {
  %y: f32[1,12,10,3] = CUSTOM(%x, %grid) {operator_name = "grid_sample_bilinear", domain_name = "weft.examples", implementation_attrs = ""}
  return %y
}
"""


def export(module, x, grid, path):
    torch.onnx.export(module, (torch.from_numpy(x), torch.from_numpy(grid)), path,
                      opset_version=OPSET, input_names=["x", "grid"], output_names=["y"],
                      do_constant_folding=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", nargs="?", default=HERE, help="output folder (default: %(default)s)")
    out = parser.parse_args().outdir
    os.makedirs(out, exist_ok=True)

    x, grid = make_inputs()
    xt, gt = torch.from_numpy(x), torch.from_numpy(grid)
    with torch.no_grad():
        expected = GridSample(False)(xt, gt).numpy()
        expected_ac = GridSample(True)(xt, gt).numpy()
    export(GridSample(False), x, grid, os.path.join(out, "grid_sample.onnx"))
    export(GridSample(True), x, grid, os.path.join(out, "grid_sample_ac.onnx"))

    np.save(os.path.join(out, "x.npy"), x)
    np.save(os.path.join(out, "grid.npy"), grid)
    np.save(os.path.join(out, "expected.npy"), expected)
    np.save(os.path.join(out, "expected_ac.npy"), expected_ac)
    np.save(os.path.join(out, "x_nhwc.npy"), np.ascontiguousarray(x.transpose(0, 2, 3, 1)))
    np.save(os.path.join(out, "expected_nhwc.npy"), np.ascontiguousarray(expected.transpose(0, 2, 3, 1)))
    with open(os.path.join(out, "grid_sample.weft"), "w") as f:
        f.write(WEFT)
    print(f"grid_sample: wrote {out}; zero outputs (fully padded samples): "
          f"{int((expected == 0).all(axis=1).sum())} of {HOUT * WOUT}")


if __name__ == "__main__":
    main()
