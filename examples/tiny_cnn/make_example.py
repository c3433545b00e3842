#!/usr/bin/env python3
"""Generates the tiny_cnn example: a small real CNN in Weft's text form, its weights, an input image
and the logits numpy computes for that image (float64 arithmetic, independent of Weft's kernels).

    image f32[1,8,8,3]
      -> CONV2D 3x3, pad 1, 4 output channels, + bias    f32[1,8,8,4]
      -> CLAMP(0, inf) (ReLU)                             f32[1,8,8,4]
      -> MAX_POOL2D 2x2, stride 2                         f32[1,4,4,4]
      -> RESHAPE to [1,1,64]
      -> MATMUL with a [1,64,10] weight, ADD bias         f32[1,1,10]
      -> RESHAPE to [1,10]                                logits

Run from anywhere (needs numpy, e.g. /usr/bin/python3 with Debian's python3-numpy):
    python3 examples/tiny_cnn/make_example.py
It rewrites tiny_cnn.weft, tiny_cnn.conv_w.npy, tiny_cnn.fc_w.npy, image.npy and expected_logits.npy
beside itself. The output is deterministic (fixed seed), so re-running it changes nothing.
"""
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def decimals(a, n):
    """Rounds to n decimals (float64): inline constants are written with these few digits, and
    both Weft's parser and the reference below turn them into the same float32 values."""
    return np.round(a, n)


def fmt(values):
    return "[" + ", ".join(str(int(v)) if v == int(v) else repr(float(v)) for v in values) + "]"


def conv2d_nhwc(x, w, b, pad):
    """Direct float64 convolution: x [N,H,W,C], w [OC,KH,KW,C], stride 1, dilation 1."""
    n, h, wd, c = x.shape
    oc, kh, kw, _ = w.shape
    xp = np.zeros((n, h + 2 * pad, wd + 2 * pad, c), dtype=np.float64)
    xp[:, pad:pad + h, pad:pad + wd, :] = x
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    out = np.zeros((n, oh, ow, oc), dtype=np.float64)
    for y in range(oh):
        for xx in range(ow):
            patch = xp[:, y:y + kh, xx:xx + kw, :]  # [N,KH,KW,C]
            out[:, y, xx, :] = np.einsum("nhwc,ohwc->no", patch, w) + b
    return out


def max_pool_2x2(x):
    n, h, w, c = x.shape
    return x.reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


def main():
    rng = np.random.default_rng(20261122)
    image = rng.uniform(-1.0, 1.0, size=(1, 8, 8, 3)).astype(np.float32)
    conv_w = (rng.standard_normal((4, 3, 3, 3)) * 0.4).astype(np.float32)
    conv_b = decimals(rng.uniform(-0.2, 0.2, size=4), 2)
    fc_w = (rng.standard_normal((1, 64, 10)) * 0.3).astype(np.float32)
    fc_b = decimals(rng.uniform(-0.5, 0.5, size=10), 2)

    # Reference computation in float64 from the exact float32 values Weft will see.
    conv_b32, fc_b32 = conv_b.astype(np.float32), fc_b.astype(np.float32)
    conv = conv2d_nhwc(image.astype(np.float64), conv_w.astype(np.float64), conv_b32.astype(np.float64), 1)
    relu = np.maximum(conv, 0.0)
    pool = max_pool_2x2(relu)
    flat = pool.reshape(1, 64)
    logits = flat @ fc_w[0].astype(np.float64) + fc_b32.astype(np.float64)

    np.save(os.path.join(HERE, "image.npy"), image)
    np.save(os.path.join(HERE, "tiny_cnn.conv_w.npy"), conv_w)
    np.save(os.path.join(HERE, "tiny_cnn.fc_w.npy"), fc_w)
    # float32: Weft reads no float64 files; the 1e-4 comparison tolerance is far above f32 rounding.
    np.save(os.path.join(HERE, "expected_logits.npy"), logits.astype(np.float32))

    # Written in canonical form (`weft fmt --check` passes), hence no comment in the file.
    text = f"""graph @main(%image: f32[1,8,8,3]) -> (%logits) {{
  %conv_w: f32[4,3,3,3] = CONST() {{values = file("tiny_cnn.conv_w.npy")}}
  %conv_b: f32[4] = CONST() {{values = {fmt(conv_b)}}}
  %zp: f32[1] = CONST() {{values = [0]}}
  %conv: f32[1,8,8,4] = CONV2D(%image, %conv_w, %conv_b, %zp, %zp) {{pad = [1, 1, 1, 1], stride = [1, 1], dilation = [1, 1], acc_type = FP32, local_bound = false}}
  %relu: f32[1,8,8,4] = CLAMP(%conv) {{min_val = 0, max_val = inf, nan_mode = PROPAGATE}}
  %pool: f32[1,4,4,4] = MAX_POOL2D(%relu) {{kernel = [2, 2], stride = [2, 2], pad = [0, 0, 0, 0], nan_mode = PROPAGATE}}
  %flat_shape: shape[3] = CONST_SHAPE() {{values = [1, 1, 64]}}
  %flat: f32[1,1,64] = RESHAPE(%pool, %flat_shape)
  %fc_w: f32[1,64,10] = CONST() {{values = file("tiny_cnn.fc_w.npy")}}
  %fc: f32[1,1,10] = MATMUL(%flat, %fc_w, %zp, %zp)
  %fc_b: f32[1,1,10] = CONST() {{values = {fmt(fc_b)}}}
  %biased: f32[1,1,10] = ADD(%fc, %fc_b)
  %logits_shape: shape[2] = CONST_SHAPE() {{values = [1, 10]}}
  %logits: f32[1,10] = RESHAPE(%biased, %logits_shape)
  return %logits
}}
"""
    with open(os.path.join(HERE, "tiny_cnn.weft"), "w") as f:
        f.write(text)
    print("logits:", np.array2string(logits[0], precision=5))


if __name__ == "__main__":
    main()
