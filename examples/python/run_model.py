#!/usr/bin/env python3
"""Runs the bundled example model from Python and compares with its expected output.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/run_model.py
"""
import os
import sys

import numpy as np
import weft

here = os.path.dirname(os.path.abspath(__file__))
example = os.path.join(here, "..", "tiny_cnn")
model = weft.load(os.path.join(example, "tiny_cnn.weft"))
for info in model.inputs:
    print("input ", info.name, info.dtype, info.shape)
for info in model.outputs:
    print("output", info.name, info.dtype, info.shape)
logits = model.session(threads=1).run({"image": np.load(os.path.join(example, "image.npy"))})["logits"]
expected = np.load(os.path.join(example, "expected_logits.npy"))
print("logits", np.round(logits, 4))
print("max difference from expected_logits.npy:", float(np.abs(logits - expected).max()))
sys.exit(0 if np.allclose(logits, expected, atol=1e-4) else 1)
