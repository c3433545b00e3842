#!/usr/bin/python3
"""Runs the exported ONNX models on Weft's Vulkan backend and checks them against Weft's CPU backends
and PyTorch.

    /usr/bin/python3 scripts/onnx/vulkan_models.py [--out build/models] [--models a,b] [--batch 1]
        [--weft build/weft] [--device SEL] [--rtol 1e-4] [--min-share 0.95] [--json FILE]

For each model (exported by export_models.py when missing): `weft run NAME.onnx --backend
vulkan,reference` and `weft run NAME.onnx --backend onednn,reference` on the saved input, then

    rel(vulkan, cpu)    = max|vulkan - cpu| / max|cpu|       must be <= --rtol
    rel(vulkan, torch)  = max|vulkan - torch| / max|torch|   must be <= --rtol
    share               = nodes the Vulkan backend runs / nodes that compute (from --explain)
                                                             must be >= --min-share

so a model that silently fell back to the CPU fails. Exit status 1 when any model fails; the
table shows why (and the backends' reasons for every node left on the CPU are printed).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import export_models  # noqa: E402

DEFAULT_MODELS = "squeezenet1_1,mobilenet_v2,resnet18,efficientnet_b0,bert_encoder"


def rel_error(a, ref):
    if a.shape != ref.shape:
        raise ValueError("shape %s vs %s" % (list(a.shape), list(ref.shape)))
    a = a.astype(np.float64)
    ref = ref.astype(np.float64)
    if not (np.isfinite(a).all() and np.isfinite(ref).all()):
        return float("nan")
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    err = float(np.max(np.abs(a - ref))) if ref.size else 0.0
    return err / scale if scale > 0 else err


def shares(explain):
    """(nodes on vulkan, nodes on every backend) from the explain summary lines."""
    counts = {}
    for m in re.finditer(r"^  (\w+): (\d+) kernels covering (\d+) nodes", explain, re.M):
        counts[m.group(1)] = int(m.group(3))
    return counts.get("vulkan", 0), sum(counts.values())


def run(cmd, timeout):
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, time.perf_counter() - t0, "timed out after %d s" % timeout
    if p.returncode != 0:
        return None, time.perf_counter() - t0, "exit status %d: %s" % (p.returncode, p.stderr.strip()[-2000:])
    return p.stdout, time.perf_counter() - t0, ""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO, "build", "models"))
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--weft", default=os.path.join(REPO, "build", "weft"))
    ap.add_argument("--device", default="", help="Vulkan device selector (default: weft's choice)")
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--min-share", type=float, default=0.95)
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--json")
    args = ap.parse_args(argv)

    names = export_models.parse_model_list(args.models)
    os.makedirs(args.out, exist_ok=True)
    missing = [n for n in names if not all(os.path.exists(p) for p in
                                           export_models.model_files(args.out, n, args.batch).values())]
    if missing:
        cmd = [sys.executable, os.path.join(HERE, "export_models.py"), "--out", args.out, "--models",
               ",".join(missing), "--batch", str(args.batch)]
        if subprocess.run(cmd).returncode != 0:
            print("export failed", file=sys.stderr)
            return 1

    rows, failed = [], False
    for name in names:
        files = export_models.model_files(args.out, name, args.batch)
        base = files["onnx"][: -len(".onnx")]
        inp = "%s=%s" % (export_models.MODELS[name][0], files["input"])
        out_name = export_models.OUTPUT_NAME
        row = {"model": name, "status": "ok", "error": ""}
        rows.append(row)
        dev = ["--device", args.device] if args.device else []
        vk_out, cpu_out = base + ".vulkan.npy", base + ".cpu.npy"
        for path in (vk_out, cpu_out):
            if os.path.exists(path):
                os.remove(path)
        text, dt, why = run([args.weft, "run", files["onnx"], "--input", inp, "--output", "%s=%s" % (out_name, vk_out),
                             "--backend", "vulkan,reference", "--explain"] + dev, args.timeout)
        row["vulkan_s"] = round(dt, 1)
        if text is None:
            row.update(status="FAIL", error="vulkan run " + why)
            failed = True
            continue
        on_vk, total = shares(text)
        row["share"] = on_vk / total if total else 0.0
        text_cpu, dt, why = run([args.weft, "run", files["onnx"], "--input", inp, "--output",
                                 "%s=%s" % (out_name, cpu_out), "--backend", "onednn,reference"], args.timeout)
        row["cpu_s"] = round(dt, 1)
        if text_cpu is None:
            row.update(status="FAIL", error="cpu run " + why)
            failed = True
            continue
        a, c, t = np.load(vk_out), np.load(cpu_out), np.load(files["torch"])
        try:
            row["vs_cpu"] = rel_error(a, c)
            row["vs_torch"] = rel_error(a, t)
        except ValueError as e:
            row.update(status="FAIL", error=str(e))
            failed = True
            continue
        problems = []
        if not row["vs_cpu"] <= args.rtol:
            problems.append("rel vs CPU %.2e > %g" % (row["vs_cpu"], args.rtol))
        if not row["vs_torch"] <= args.rtol:
            problems.append("rel vs PyTorch %.2e > %g" % (row["vs_torch"], args.rtol))
        if row["share"] < args.min_share:
            problems.append("only %d of %d nodes on Vulkan" % (on_vk, total))
            print("%s: nodes left on the CPU:\n%s" % (name, "\n".join(
                l for l in text.splitlines() if l.startswith("      not on") or " reference " in l)), file=sys.stderr)
        if problems:
            row.update(status="FAIL", error="; ".join(problems))
            failed = True

    print("%-16s %8s %10s %10s %9s %7s  %s" % ("model", "share", "vs cpu", "vs torch", "vulkan s", "cpu s", "status"))
    for r in rows:
        print("%-16s %8s %10s %10s %9s %7s  %s" % (
            r["model"], "%.3f" % r["share"] if "share" in r else "-",
            "%.2e" % r["vs_cpu"] if "vs_cpu" in r else "-", "%.2e" % r["vs_torch"] if "vs_torch" in r else "-",
            r.get("vulkan_s", "-"), r.get("cpu_s", "-"), r["status"] + (": " + r["error"] if r["error"] else "")))
    print("rel = max|a-b| / max|ref|; gates: rel <= %g, Vulkan share >= %g; batch %d" % (args.rtol, args.min_share,
                                                                                          args.batch))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rtol": args.rtol, "batch": args.batch, "models": rows}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
