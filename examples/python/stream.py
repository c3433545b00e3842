#!/usr/bin/env python3
"""A = B + C streamed as a target would: the IOSpec of the specification's example, C latched.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/stream.py
"""
import os
import sys
import tempfile

import numpy as np
import weft

with tempfile.TemporaryDirectory() as tmp:
    src = os.path.join(tmp, "add.weft")
    with open(src, "w") as f:
        f.write("graph @main(%B: f16[60], %C: f16[60]) -> (%A) {\n  %A: f16[60] = ADD(%B, %C)\n  return %A\n}\n")
    weft.compile(src, os.path.join(tmp, "add.vgf"), iospec=os.path.join(tmp, "add.yaml"), latched=["C"])
    print(open(os.path.join(tmp, "add.yaml")).read())
    stream = weft.Stream(weft.load(os.path.join(tmp, "add.vgf")), os.path.join(tmp, "add.yaml"))
    c = np.full(60, 0.25, np.float16)
    stream.write("C", c)  # latched: written once
    ok = True
    for k in range(3):
        b = np.arange(60, dtype=np.float16) * k
        print("next:", stream.expected())
        stream.write("B", b)
        a = stream.read("A")
        ok &= bool(np.array_equal(a, b + c))
        print(f"round {k}: A[:4] = {a[:4]}")
    try:
        stream.read("A")  # nothing new was written: refused, the session unchanged
    except weft.Error as e:
        print("refused:", e.message)
sys.exit(0 if ok else 1)
