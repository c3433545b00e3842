#!/usr/bin/python3
"""Generates ONNX's backend node test cases (onnx.backend.test.cmd_tools generate-data).

    scripts/onnx/gen_node_tests.py [DIR] [--force]

Writes DIR/node/test_*/{model.onnx,test_data_set_N/{input,output}_K.pb} (DIR defaults to
build/onnx-node-tests under the repository root) and prints the number of node cases. Nothing is
regenerated while DIR/STAMP names the installed onnx and numpy versions; otherwise the cases are
written to a temporary sibling directory first and swapped in, so an interrupted run never leaves
a half-written DIR that looks current.

Needs Debian's onnx + numpy, which live in /usr/bin/python3 only (not in pyenv's python3): when
started by another interpreter that lacks onnx, the script re-executes itself with /usr/bin/python3.
"""
import argparse
import os
import shutil
import sys
import time

SYSTEM_PYTHON = "/usr/bin/python3"
STAMP = "STAMP"
# Bump when the layout or the generation procedure changes, to invalidate existing trees.
GENERATOR_REVISION = "1"


def import_onnx_or_reexec():
    try:
        import numpy  # noqa: F401
        import onnx  # noqa: F401
    except ImportError:
        if os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON) and os.path.exists(SYSTEM_PYTHON):
            os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(__file__)] + sys.argv[1:])
        sys.exit(f"gen_node_tests.py: onnx/numpy not importable by {sys.executable} (need Debian's python3-onnx)")


def restore_numpy_aliases():
    # onnx 1.12's test cases still use aliases that numpy 1.24 removed.
    import numpy as np
    for name, value in (("float", float), ("int", int), ("bool", bool), ("object", object),
                        ("complex", complex), ("str", str), ("long", int), ("unicode", str)):
        if name not in np.__dict__:
            setattr(np, name, value)


def stamp_text():
    import numpy
    import onnx
    return f"onnx {onnx.__version__} numpy {numpy.__version__} generator {GENERATOR_REVISION}\n"


def count_cases(out_dir):
    node_dir = os.path.join(out_dir, "node")
    if not os.path.isdir(node_dir):
        return 0
    return sum(1 for d in os.listdir(node_dir) if os.path.isfile(os.path.join(node_dir, d, "model.onnx")))


def main():
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", nargs="?", default=os.path.join(repo, "build", "onnx-node-tests"))
    parser.add_argument("--force", action="store_true", help="regenerate even when the stamp is current")
    args = parser.parse_args()

    import_onnx_or_reexec()
    out_dir = os.path.abspath(args.dir)
    want = stamp_text()
    stamp_path = os.path.join(out_dir, STAMP)
    if not args.force and os.path.isfile(stamp_path):
        with open(stamp_path) as f:
            if f.read() == want:
                print(f"{count_cases(out_dir)} node cases in {out_dir} (current: {want.strip()})")
                return 0

    restore_numpy_aliases()
    from onnx.backend.test import cmd_tools

    tmp_dir = f"{out_dir}.tmp-{os.getpid()}"
    shutil.rmtree(tmp_dir, ignore_errors=True)
    os.makedirs(tmp_dir)
    start = time.monotonic()
    try:
        cmd_tools.generate_data(argparse.Namespace(output=tmp_dir, op_type=None))
        n = count_cases(tmp_dir)
        if n == 0:
            raise RuntimeError("generate-data wrote no node cases")
        with open(os.path.join(tmp_dir, STAMP), "w") as f:
            f.write(want)
    except BaseException:
        shutil.rmtree(tmp_dir, ignore_errors=True)
        raise
    if os.path.exists(out_dir):
        old = f"{out_dir}.old-{os.getpid()}"
        os.rename(out_dir, old)
        os.rename(tmp_dir, out_dir)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.makedirs(os.path.dirname(out_dir), exist_ok=True)
        os.rename(tmp_dir, out_dir)
    print(f"{n} node cases written to {out_dir} in {time.monotonic() - start:.1f}s ({want.strip()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
