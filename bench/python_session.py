#!/usr/bin/env python3
"""What one `session.run` costs from Python, against the same model run from C++ and by ONNX Runtime.

For each tiny model (exported here with the onnx package, nothing committed):
  - weft (Python):   weft.load(model).session().run(feeds), timed in a loop from Python;
  - weft (C++):      Context::run on the same file (build/bench/runtime_bench BM_ContextRunFile);
  - ORT (node):      onnxruntime-node's session.run from JavaScript (scripts/onnx/ort_run.js --bench),
                     the peer's own language binding around the same kind of call.
Each figure is the best of --rounds rounds (the median per-call time of a round); the table gives
the Python overhead (Python - C++) and the ratios.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_session.py [--rounds 5] [--calls 20000]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "build", "python"))
import weft  # noqa: E402


def make_models(folder):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    models = {}
    # add4: one Add of two f32[4] (nothing but the call itself).
    g = helper.make_graph([helper.make_node("Add", ["x", "y"], ["z"])], "add4",
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in ("x", "y")],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, [4])])
    models["add4"] = g
    # tiny_cnn: 3x3 conv (3 -> 8) on 1x3x8x8, ReLU, global average pool, a 10-way linear layer.
    w = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b")
    fw = numpy_helper.from_array(rng.standard_normal((10, 8)).astype(np.float32), "fw")
    fb = numpy_helper.from_array(rng.standard_normal(10).astype(np.float32), "fb")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "fw", "fb"], ["z"], transB=1)]
    models["tiny_cnn"] = helper.make_graph(nodes, "tiny_cnn",
                                           [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                                           [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 10])],
                                           initializer=[w, b, fw, fb])
    paths = {}
    for name, graph in models.items():
        path = os.path.join(folder, name + ".onnx")
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
        paths[name] = path
    return paths


def python_us(path, calls):
    model = weft.load(path)
    feeds = {i.name: np.zeros(i.shape, i.numpy_dtype) for i in model.inputs}
    session = model.session()
    for _ in range(200):
        session.run(feeds)
    per = []
    chunk = 1000
    for _ in range(max(1, calls // chunk)):
        t0 = time.perf_counter_ns()
        for _ in range(chunk):
            session.run(feeds)
        per.append((time.perf_counter_ns() - t0) / chunk / 1000.0)
    return float(np.median(per))


def cpp_us(path):
    exe = os.path.join(REPO, "build", "bench", "runtime_bench")
    r = subprocess.run([exe, "--benchmark_filter=BM_ContextRunFile", "--benchmark_format=json",
                        "--benchmark_repetitions=3"], capture_output=True, text=True,
                       env=dict(os.environ, WEFT_BENCH_MODEL=path), check=True)
    runs = [b for b in json.loads(r.stdout)["benchmarks"] if b.get("run_type") == "iteration"]
    scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3}
    return min(b["real_time"] * scale[b["time_unit"]] for b in runs)


def ort_us(path, folder, calls):
    model = weft.load(path)
    args = ["node", os.path.join(REPO, "scripts", "onnx", "ort_run.js"), path, "--threads", "1",
            "--bench", str(calls)]
    for i in model.inputs:
        f = os.path.join(folder, f"{os.path.basename(path)}.{i.name}.npy")
        np.save(f, np.zeros(i.shape, i.numpy_dtype))
        args += ["--input", f"{i.name}={f}"]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        return None
    m = re.search(r"median_ms=([0-9.]+)", r.stdout)
    return float(m.group(1)) * 1000.0 if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--no-ort", action="store_true", help="leave ONNX Runtime out")
    args = ap.parse_args()
    have_ort = not args.no_ort
    if have_ort:
        have_ort = subprocess.run(["bash", os.path.join(REPO, "scripts", "onnx", "setup_ort.sh")],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
    with tempfile.TemporaryDirectory() as folder:
        paths = make_models(folder)
        print("%-10s %12s %12s %12s %10s %14s" % ("model", "python_us", "cpp_us", "ort_node_us", "py/cpp",
                                                  "py_overhead_us"))
        for name, path in paths.items():
            py, cpp, ort = [], [], []
            for _ in range(args.rounds):  # alternating rounds
                py.append(python_us(path, args.calls))
                cpp.append(cpp_us(path))
                if have_ort:
                    o = ort_us(path, folder, args.calls)
                    if o is not None:
                        ort.append(o)
            p, c = min(py), min(cpp)
            o = min(ort) if ort else float("nan")
            print("%-10s %12.2f %12.2f %12.2f %10.2f %14.2f" % (name, p, c, o, p / c, p - c), flush=True)


if __name__ == "__main__":
    main()
