#!/usr/bin/env python3
"""Generates the image_downsample custom-operator example: a .weft model in which an image-backed
CUSTOM node (downsample2x.comp, 2x2 average pooling by bilinear texture sampling) feeds a TOSA
CLAMP, its input image, and the output torch computes.

    python3 examples/custom_ops/image_downsample/make_example.py [OUTDIR]

OUTDIR defaults to this folder. It writes (deterministic: fixed seed):

    downsample.weft  img f32[1,32,48,4] -> CUSTOM downsample2x -> f32[1,16,24,4] -> CLAMP [0, 1] -> y
    img.npy          f32[1,32,48,4]  input image (NHWC, 4 channels = RGBA texels), values in [-0.5, 1.5]
    expected.npy     f32[1,16,24,4]  clamp(avg_pool2d(img, 2), 0, 1), computed by torch

Needs torch and numpy, e.g. Debian's /usr/bin/python3.
"""
import argparse
import os

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))

H, W, C = 32, 48, 4

WEFT = f"""graph @main(%img: f32[1,{H},{W},{C}]) -> (%y) {{
  %half: f32[1,{H // 2},{W // 2},{C}] = CUSTOM(%img) {{operator_name = "downsample2x", domain_name = "weft.examples", implementation_attrs = ""}}
  %y: f32[1,{H // 2},{W // 2},{C}] = CLAMP(%half) {{min_val = 0, max_val = 1, nan_mode = PROPAGATE}}
  return %y
}}
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", nargs="?", default=HERE, help="output folder (default: %(default)s)")
    out = parser.parse_args().outdir
    os.makedirs(out, exist_ok=True)

    rng = np.random.default_rng(20260312)
    # Slightly outside [0, 1] so that the CLAMP after the custom node changes some values.
    img = rng.uniform(-0.5, 1.5, size=(1, H, W, C)).astype(np.float32)
    with torch.no_grad():
        nchw = torch.from_numpy(img).permute(0, 3, 1, 2)
        pooled = F.avg_pool2d(nchw, kernel_size=2, stride=2)
        expected = torch.clamp(pooled, 0.0, 1.0).permute(0, 2, 3, 1).contiguous().numpy()

    np.save(os.path.join(out, "img.npy"), img)
    np.save(os.path.join(out, "expected.npy"), expected)
    with open(os.path.join(out, "downsample.weft"), "w") as f:
        f.write(WEFT)
    print(f"image_downsample: wrote {out}; clamped outputs: "
          f"{int(((expected == 0) | (expected == 1)).sum())} of {expected.size}")


if __name__ == "__main__":
    main()
