#!/usr/bin/env python3
"""Generates every custom-operator example into OUTDIR/<name>/ (grid_sample, image_downsample, cnn)
by running each example's make_example.py with this interpreter.

    python3 examples/custom_ops/make_all.py OUTDIR [NAME ...]

The generated ONNX models, .npy inputs and expected outputs are not kept in the source tree; the
ops files (ops.json) and shaders stay here, and the commands in each README.md refer to them.
Needs torch (1.13 or later), onnx and numpy, e.g. Debian's /usr/bin/python3. Deterministic.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = ["grid_sample", "image_downsample", "cnn"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", help="output folder; each example goes to OUTDIR/<name>/")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"examples to generate: {', '.join(EXAMPLES)} (default: all)")
    args = parser.parse_args()
    for name in args.names:
        if name not in EXAMPLES:
            parser.error(f"unknown example '{name}' (known: {', '.join(EXAMPLES)})")
    for name in args.names or EXAMPLES:
        out = os.path.join(os.path.abspath(args.outdir), name)
        os.makedirs(out, exist_ok=True)
        script = os.path.join(HERE, name, "make_example.py")
        result = subprocess.run([sys.executable, script, out])
        if result.returncode != 0:
            sys.exit(f"make_all.py: {script} failed (exit status {result.returncode})")


if __name__ == "__main__":
    main()
