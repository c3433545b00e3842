#!/usr/bin/python3
"""Runs the exported ONNX models with Weft and ONNX Runtime and compares both with PyTorch.

    /usr/bin/python3 scripts/onnx/compare_models.py [--out build/models] [--models a,b]
        [--weft build/weft] [--threads N] [--rtol 1e-4] [--json FILE] [--force] [--no-weft]

For each model: exports it if its files are missing (export_models.py), runs ONNX Runtime
(ort_run.js, CPU) and Weft (`weft run NAME.onnx --input ... --output output=...`) on the saved
input, and prints max abs / max rel error of Weft vs ORT, Weft vs PyTorch and ORT vs PyTorch.

Relative error (norm-wise, infinity norm):  rel(a, ref) = max_i |a_i - ref_i| / max_i |ref_i|.
An element-wise |a_i - ref_i| / |ref_i| is meaningless at the near-zero values every ReLU,
LayerNorm or logit tensor has: fp32 kernels that sum in a different order (convolutions, matmuls)
make absolute errors proportional to the tensor's scale, not to each element. So "agrees to
1e-4 relative" here means: the largest deviation is at most 1e-4 of the reference's largest
magnitude. (If the reference is all zeros, rel is the abs error itself.)

Exit status 1 if Weft fails to run on a model, its output's shape differs from ORT's, or its
relative error against ORT exceeds --rtol (default 1e-4), or NaN appears; also when ORT or the
export fails (Weft cannot be checked then). With --no-weft only ORT vs PyTorch is measured.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import export_models  # noqa: E402  (numpy only at import time; torch is not needed here)


def errors(a, ref):
    """(max abs error, norm-wise relative error) of `a` against `ref`; raises on shape mismatch."""
    if a.shape != ref.shape:
        raise ValueError("shape %s vs %s" % (list(a.shape), list(ref.shape)))
    a = a.astype(np.float64)
    ref = ref.astype(np.float64)
    if a.size == 0:
        return 0.0, 0.0
    if not (np.isfinite(a).all() and np.isfinite(ref).all()):
        return float("nan"), float("nan")
    abs_err = float(np.max(np.abs(a - ref)))
    scale = float(np.max(np.abs(ref)))
    return abs_err, (abs_err / scale if scale > 0 else abs_err)


def run_cmd(cmd, timeout):
    """Runs `cmd`; returns (ok, seconds, stdout, stderr, description of the failure)."""
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError as e:
        return False, 0.0, "", "", "cannot run %s: %s" % (cmd[0], e)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        return False, time.perf_counter() - t0, out, err, "timed out after %d s" % timeout
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        return False, dt, p.stdout, p.stderr, "exit status %d" % p.returncode
    return True, dt, p.stdout, p.stderr, ""


def fmt(x):
    if x is None:
        return "-"
    if x != x:  # NaN
        return "nan"
    return "%.2e" % x


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO, "build", "models"),
                    help="model directory (default <repo>/build/models)")
    ap.add_argument("--models", default="all", help="comma-separated subset of: " + ",".join(export_models.MODELS))
    ap.add_argument("--weft", default=os.path.join(REPO, "build", "weft"), help="the weft CLI (default <repo>/build/weft)")
    ap.add_argument("--threads", type=int, default=1, help="threads for ORT (intra-op) and Weft (default 1)")
    ap.add_argument("--rtol", type=float, default=1e-4, help="max Weft-vs-ORT relative error (default 1e-4)")
    ap.add_argument("--json", help="also write the results to this JSON file")
    ap.add_argument("--force", action="store_true", help="re-export the models first")
    ap.add_argument("--no-weft", action="store_true", help="only run ORT and compare it with PyTorch")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds allowed per run (default 1800)")
    args = ap.parse_args(argv)

    names = export_models.parse_model_list(args.models)
    os.makedirs(args.out, exist_ok=True)
    failed = False

    # 1. Exports (only what is missing, unless --force).
    missing = [n for n in names if args.force or not all(
        os.path.exists(p) for p in export_models.model_files(args.out, n).values())]
    if missing:
        cmd = [sys.executable, os.path.join(HERE, "export_models.py"), "--out", args.out,
               "--models", ",".join(missing)] + (["--force"] if args.force else [])
        print("exporting: " + ", ".join(missing), flush=True)
        if subprocess.run(cmd).returncode != 0:
            print("export failed for some models (see above)", file=sys.stderr)
            failed = True

    # 2. ONNX Runtime.
    if subprocess.run(["bash", os.path.join(HERE, "setup_ort.sh")], stdout=subprocess.DEVNULL).returncode != 0:
        print("setup_ort.sh failed", file=sys.stderr)
        return 1
    if not args.no_weft and not os.path.exists(args.weft):
        print("weft CLI not found at %s (build it, pass --weft PATH, or use --no-weft)" % args.weft, file=sys.stderr)
        return 1

    results = []
    for name in names:
        files = export_models.model_files(args.out, name)
        input_name = export_models.MODELS[name][0]
        out_name = export_models.OUTPUT_NAME
        row = {"model": name, "onnx_mb": None, "ort_s": None, "weft_s": None,
               "weft_vs_ort": None, "weft_vs_torch": None, "ort_vs_torch": None, "status": "ok", "error": ""}
        results.append(row)
        if not all(os.path.exists(p) for p in files.values()):
            row.update(status="FAIL", error="not exported")
            failed = True
            continue
        row["onnx_mb"] = round(os.path.getsize(files["onnx"]) / 1e6, 1)
        torch_out = np.load(files["torch"])
        base = os.path.join(args.out, name)

        ort_path = base + ".ort.npy"
        if os.path.exists(ort_path):
            os.remove(ort_path)
        ok, dt, _, err, why = run_cmd(
            ["node", os.path.join(HERE, "ort_run.js"), files["onnx"], "--input", "%s=%s" % (input_name, files["input"]),
             "--output", "%s=%s" % (out_name, ort_path), "--threads", str(args.threads)], args.timeout)
        row["ort_s"] = round(dt, 2)
        ort_out = None
        if not ok:
            row.update(status="FAIL", error="ORT %s" % why)
            print("%s: ORT failed (%s):\n%s" % (name, why, err.rstrip()), file=sys.stderr)
            failed = True
        else:
            ort_out = np.load(ort_path)
            try:
                row["ort_vs_torch"] = errors(ort_out, torch_out)
            except ValueError as e:
                row.update(status="FAIL", error="ORT vs PyTorch: %s" % e)
                failed = True

        if args.no_weft:
            continue
        weft_path = base + ".weft.npy"
        if os.path.exists(weft_path):
            os.remove(weft_path)
        ok, dt, _, err, why = run_cmd(
            [args.weft, "run", files["onnx"], "--input", "%s=%s" % (input_name, files["input"]),
             "--output", "%s=%s" % (out_name, weft_path), "--threads", str(args.threads)], args.timeout)
        row["weft_s"] = round(dt, 2)
        if not ok or not os.path.exists(weft_path):
            why = why or "no output file written"
            row.update(status="FAIL", error="Weft %s" % why)
            print("%s: Weft failed (%s):\n%s" % (name, why, err.rstrip()), file=sys.stderr)
            failed = True
            continue
        weft_out = np.load(weft_path)
        try:
            row["weft_vs_torch"] = errors(weft_out, torch_out)
            if ort_out is not None:
                row["weft_vs_ort"] = errors(weft_out, ort_out)
        except ValueError as e:
            row.update(status="FAIL", error="Weft output %s" % e)
            failed = True
            continue
        ref64_path = base + ".torch64.npy"
        if os.path.exists(ref64_path):
            # A float64 reference (export_models.py --float64-reference): how far each float32
            # runtime is from it.
            ref64 = np.load(ref64_path)
            row["weft_vs_f64"] = errors(weft_out, ref64)
            if ort_out is not None:
                row["ort_vs_f64"] = errors(ort_out, ref64)
        if row["weft_vs_ort"] is not None and not row["weft_vs_ort"][1] <= args.rtol:  # NaN fails too
            # Two float32 runtimes that both round may differ by more than rtol on a deep model whose
            # float32 result itself is that far from exact. With a float64 reference, Weft passes
            # when it is no farther from it than ORT (or within rtol of it).
            w64, o64 = row.get("weft_vs_f64"), row.get("ort_vs_f64")
            if w64 is not None and o64 is not None and w64[1] <= max(args.rtol, o64[1]):
                row.update(status="ok", error="Weft vs ORT rel %s > %g, but Weft is %s from float64, ORT %s"
                           % (fmt(row["weft_vs_ort"][1]), args.rtol, fmt(w64[1]), fmt(o64[1])))
            else:
                row.update(status="FAIL", error="Weft vs ORT rel %s > %g" % (fmt(row["weft_vs_ort"][1]), args.rtol))
                failed = True

    # 3. Table.
    head = ("model", "MB", "weft-ort abs", "rel", "weft-torch abs", "rel", "ort-torch abs", "rel", "ort s", "weft s", "status")
    lines = [head]
    for r in results:
        cells = [r["model"], "-" if r["onnx_mb"] is None else "%.1f" % r["onnx_mb"]]
        for key in ("weft_vs_ort", "weft_vs_torch", "ort_vs_torch"):
            cells += [fmt(None), fmt(None)] if r[key] is None else [fmt(r[key][0]), fmt(r[key][1])]
        cells += ["-" if r["ort_s"] is None else "%.1f" % r["ort_s"], "-" if r["weft_s"] is None else "%.1f" % r["weft_s"]]
        cells.append(r["status"] + (": " + r["error"] if r["error"] else ""))
        lines.append(cells)
    widths = [max(len(str(l[i])) for l in lines) for i in range(len(head) - 1)]
    for l in lines:
        print("  ".join(str(c).ljust(w) for c, w in zip(l[:-1], widths)) + "  " + l[-1])
    print("rel = max|a-b| / max|ref| over the tensor; gate: Weft vs ORT rel <= %g (or, with a float64 reference, "
          "Weft no farther from it than ORT); threads %d" % (args.rtol, args.threads))
    for r in results:
        if r.get("weft_vs_f64") is not None:
            print("%s vs float64 reference: Weft rel %s, ORT rel %s" % (r["model"], fmt(r["weft_vs_f64"][1]),
                  fmt(r["ort_vs_f64"][1]) if r.get("ort_vs_f64") is not None else "-"))

    if args.json:
        doc = {"rtol": args.rtol, "threads": args.threads, "weft": None if args.no_weft else args.weft,
               "relative_error": "max|a-b| / max|ref|", "models": []}
        for r in results:
            d = dict(r)
            for key in ("weft_vs_ort", "weft_vs_torch", "ort_vs_torch", "weft_vs_f64", "ort_vs_f64"):
                if key not in r:
                    continue
                # NaN (non-finite outputs) is written as null; such a row has status FAIL.
                d[key] = None if r[key] is None else {
                    "max_abs": r[key][0] if r[key][0] == r[key][0] else None,
                    "max_rel": r[key][1] if r[key][1] == r[key][1] else None}
            doc["models"].append(d)
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
