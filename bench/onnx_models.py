#!/usr/bin/python3
"""Model latency at batch 1: Weft against ONNX Runtime 1.30 (CPU), side by side, same threads.

    /usr/bin/python3 bench/onnx_models.py [--weft build/weft] [--out build/models]
        [--models mobilenet_v2,resnet50,efficientnet_b0,bert_encoder] [--threads 1,2]
        [--iters 50] [--rounds 3] [--profile DIR] [--json FILE] [--baseline OTHER_WEFT]
        [--no-library-scratch] [--load] [--cpu-isa avx2]

--models broad: the test models and torchvision's broad set (export_models.BROAD), exported on
first use (a few minutes; nothing committed).

For each model and thread count, both runtimes load the model once, run 3 (ORT) / 1 (Weft)
warm-up inferences and then --iters timed inferences on the model's saved input; each reports
the median latency of its timed inferences. Both sides are measured --rounds times, alternating
(ORT, Weft default, Weft with oneDNN's own scratchpad, ORT, ...), and the best median of each is
kept, so that a burst of load on the machine does not decide a ratio.

  ratio = Weft median / ORT median      (< 1: Weft is faster)
  scratch ratio = Weft (arena scratchpad) / Weft (oneDNN-owned scratchpad)

The models are those of scripts/onnx/export_models.py (exported when missing; PyTorch random
weights, opset 17); ONNX Runtime is npm onnxruntime-node, installed by scripts/onnx/setup_ort.sh
and driven by scripts/onnx/ort_run.js (graph optimizations all on, inter-op threads 1).
With --profile DIR, each model's `weft run --profile-kernels all` output (where the time goes per
fused pattern and backend, and every kernel with its implementation) is written to
DIR/<model>.t<threads>.txt, ONNX Runtime's own per-node profile to DIR/<model>.t<threads>.ort.json,
and the two joined per ONNX node (bench/profile_join.py: Weft ms, ORT ms, the difference, the rows
where Weft loses most first) to DIR/<model>.t<threads>.nodes.txt.

With --cpu-isa avx2, every process the bench starts (Weft, the baseline and ONNX Runtime alike)
runs with build/bench/libweft_cpu_avx2.so preloaded (bench/cpu_avx2/cpu_avx2.cpp): the kernel's
CPUID faulting hides AVX-512, AMX and AVX-VNNI from them, so that oneDNN, MLAS and Weft's own
kernels all take the paths they take on an AVX2 + FMA CPU. It needs CPUID faulting (/proc/cpuinfo
flag cpuid_fault; Intel CPUs, and VMs that pass it through) and stops with the reason where there
is none. Before the table, one `weft run --profile-kernels all` checks that every kernel, oneDNN's
and Weft's own, is an AVX2 one.

With --load, the cost of loading instead: each side runs once per round as a fresh process
(`weft run` / `ort_run.js` with one inference, one thread), timed from start to exit, with its
peak resident memory (the child's ru_maxrss from wait4); best of --rounds alternating rounds.
  load ratio = Weft seconds / ORT seconds, memory ratio = Weft peak / ORT peak
With --load --external-data, both load the models rewritten with their initializers in an external
data file (scripts/onnx/external_data.py; offsets aligned as ONNX Runtime's saver aligns them), as
exporters write models too large for one protobuf.
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
ONNX_SCRIPTS = os.path.join(REPO, "scripts", "onnx")
sys.path.insert(0, ONNX_SCRIPTS)
import export_models  # noqa: E402
import profile_join  # noqa: E402

DEFAULT_MODELS = "mobilenet_v2,resnet50,efficientnet_b0,bert_encoder"
# The CPU comparison: the CPU backends with the default rules, as a machine without a GPU runs them.
# Without it, `weft run` puts a GPU's Vulkan backend first on machines that have one; naming
# onednn,reference instead would hand oneDNN every tiny operator (an unrolled LSTM 5x slower).
CPU_BACKENDS = "cpu"


def median_ms(cmd, what):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("%s failed (exit %d): %s\n%s" % (what, p.returncode, " ".join(cmd), p.stderr.strip()))
    m = re.search(r"median_ms=([0-9.]+)", p.stdout)
    if not m:
        raise SystemExit("%s printed no median_ms: %s" % (what, p.stdout.strip()))
    return float(m.group(1)), p.stdout


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--weft", default=os.path.join(REPO, "build", "weft"))
    ap.add_argument("--out", default=os.path.join(REPO, "build", "models"), help="where the models are (exported if missing)")
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    ap.add_argument("--iters", type=int, default=50, help="timed inferences per measurement (default 50)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating measurements per side (default 3)")
    ap.add_argument("--profile", help="write each model's `weft run --profile` to this directory")
    ap.add_argument("--json", help="also write the results to this JSON file")
    ap.add_argument("--baseline", help="another weft CLI (e.g. a build before a change), measured in the same "
                                       "alternating rounds: its column and its ratio to ORT are printed too")
    ap.add_argument("--load", action="store_true",
                    help="measure load + one inference as a fresh process (seconds, peak memory) instead of latency")
    ap.add_argument("--external-data", action="store_true",
                    help="with --load: the models with their weights in an external data file")
    ap.add_argument("--no-library-scratch", action="store_true",
                    help="skip the measurement with oneDNN's own scratchpad (faster runs)")
    ap.add_argument("--cpu-isa", choices=["native", "avx2"], default="native",
                    help="avx2: run every process on a CPU that presents AVX2 + FMA only (CPUID faulting)")
    ap.add_argument("--cpu-isa-lib", help="the preload library for --cpu-isa avx2 "
                                          "(default: bench/libweft_cpu_avx2.so beside the weft CLI)")
    args = ap.parse_args(argv)

    names = export_models.parse_model_list(args.models)
    threads = [int(t) for t in args.threads.split(",") if t.strip()]
    if not os.path.exists(args.weft):
        raise SystemExit("weft CLI not found at %s (run scripts/build.sh or pass --weft)" % args.weft)
    missing = [n for n in names if not all(os.path.exists(p) for p in export_models.model_files(args.out, n).values())]
    if missing:
        print("exporting: " + ", ".join(missing), flush=True)
        subprocess.run([sys.executable, os.path.join(ONNX_SCRIPTS, "export_models.py"), "--out", args.out,
                        "--models", ",".join(missing)], check=True)
    subprocess.run(["bash", os.path.join(ONNX_SCRIPTS, "setup_ort.sh")], stdout=subprocess.DEVNULL, check=True)
    if args.profile:
        os.makedirs(args.profile, exist_ok=True)
    if args.cpu_isa == "avx2":
        present_avx2_cpu(args, names[0])

    if args.load:
        return load_table(args, names)

    rows = []
    print("%-18s %7s %10s %10s %7s %13s %8s%s" % ("model", "threads", "ORT ms", "Weft ms", "ratio", "Weft lib-scr",
                                                "scratch", "  baseline ms  ratio" if args.baseline else ""))
    for name in names:
        files = export_models.model_files(args.out, name)
        binding = "%s=%s" % (export_models.MODELS[name][0], files["input"])
        for t in threads:
            ort_cmd = ["node", os.path.join(ONNX_SCRIPTS, "ort_run.js"), files["onnx"], "--input", binding,
                       "--threads", str(t), "--bench", str(args.iters)]
            weft_cmd = [args.weft, "run", files["onnx"], "--input", binding, "--backend", CPU_BACKENDS, "--threads", str(t),
                        "--repeat", str(args.iters), "-o",
                        "%s=%s" % (export_models.OUTPUT_NAME, os.path.join(args.out, name + ".bench.npy"))]
            ort, weft, weft_lib, base = [], [], [], []
            for _ in range(args.rounds):
                ort.append(median_ms(ort_cmd, "ORT")[0])
                weft.append(median_ms(weft_cmd, "Weft")[0])
                if not args.no_library_scratch:
                    weft_lib.append(median_ms(weft_cmd + ["--scratchpad", "library"], "Weft (library scratchpad)")[0])
                if args.baseline:
                    try:
                        base.append(median_ms([args.baseline] + weft_cmd[1:], "Weft (baseline)")[0])
                    except SystemExit as e:  # the baseline may not run the model at all
                        print("baseline: %s" % str(e).splitlines()[-1][:200], flush=True)
                        base.append(float("nan"))
            nan = float("nan")
            row = {"model": name, "threads": t, "ort_ms": min(ort), "weft_ms": min(weft),
                   "weft_library_scratch_ms": min(weft_lib) if weft_lib else nan,
                   "ort_all": ort, "weft_all": weft, "weft_library_scratch_all": weft_lib}
            row["ratio"] = row["weft_ms"] / row["ort_ms"]
            row["scratch_ratio"] = row["weft_ms"] / row["weft_library_scratch_ms"]
            extra = ""
            if base:
                row["baseline_ms"], row["baseline_all"] = min(base), base
                row["baseline_ratio"] = row["baseline_ms"] / row["ort_ms"]
                extra = "  %11.3f %6.2f" % (row["baseline_ms"], row["baseline_ratio"])
            rows.append(row)
            print("%-18s %7d %10.3f %10.3f %7.2f %13.3f %8.3f%s" % (name, t, row["ort_ms"], row["weft_ms"], row["ratio"],
                                                                  row["weft_library_scratch_ms"], row["scratch_ratio"],
                                                                  extra), flush=True)
            if args.profile:
                write_profiles(args.profile, "%s.t%d" % (name, t), files["onnx"], weft_cmd, ort_cmd)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"iters": args.iters, "rounds": args.rounds, "weft": args.weft, "results": rows}, f, indent=2)
    worst = max(r["ratio"] for r in rows)
    print("worst Weft/ORT ratio: %.2f (%s)" % (worst, "Weft at or below ORT everywhere" if worst <= 1.0 else "ORT faster somewhere"))
    return 0


def write_profiles(directory, stem, model, weft_cmd, ort_cmd):
    """DIR/STEM.txt: `weft run --profile-kernels all`; DIR/STEM.ort.json: ORT's per-node profile;
    DIR/STEM.nodes.txt: the two per node, where Weft loses first (bench/profile_join.py)."""
    weft_txt = os.path.join(directory, stem + ".txt")
    _, out = median_ms(weft_cmd + ["--profile-kernels", "all"], "Weft --profile")
    with open(weft_txt, "w") as f:
        f.write(out)
    prefix = os.path.join(directory, stem + ".ort")
    for old in glob.glob(prefix + "_*.json"):
        os.remove(old)
    median_ms(ort_cmd + ["--profile", prefix], "ORT --profile")
    written = glob.glob(prefix + "_*.json")  # ORT appends the date to the prefix
    if len(written) != 1:
        raise SystemExit("ORT --profile %s wrote %d files" % (prefix, len(written)))
    os.replace(written[0], prefix + ".json")
    with open(os.path.join(directory, stem + ".nodes.txt"), "w") as f:
        f.write(profile_join.render(profile_join.join(model, weft_txt, prefix + ".json")))


def present_avx2_cpu(args, probe_model):
    """Preloads the CPUID mask into every later child process and checks that it took effect."""
    lib = os.path.abspath(args.cpu_isa_lib or os.path.join(os.path.dirname(os.path.abspath(args.weft)), "bench",
                                                            "libweft_cpu_avx2.so"))
    if not os.path.exists(lib):
        raise SystemExit("--cpu-isa avx2: %s not found (build the target weft_cpu_avx2 or pass --cpu-isa-lib)" % lib)
    os.environ["LD_PRELOAD"] = lib + ((" " + os.environ["LD_PRELOAD"]) if os.environ.get("LD_PRELOAD") else "")
    files = export_models.model_files(args.out, probe_model)
    p = subprocess.run([args.weft, "run", files["onnx"], "--input", "%s=%s" % (export_models.MODELS[probe_model][0],
                        files["input"]), "--backend", CPU_BACKENDS, "--threads", "1", "--profile-kernels", "all", "-o", "%s=%s" % (
                        export_models.OUTPUT_NAME, os.path.join(args.out, probe_model + ".bench.npy"))],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("--cpu-isa avx2: %s" % (p.stderr.strip() or "weft exited with %d" % p.returncode))
    wide = sorted(set(re.findall(r"\b\w*(?:avx512|amx)\w*\b", p.stdout)))
    if wide:
        raise SystemExit("--cpu-isa avx2: %s still ran %s kernels under %s" % (probe_model, ", ".join(wide), lib))
    print("CPU presented as AVX2 + FMA only (%s); %s's kernels: %s" % (
        os.path.basename(lib), probe_model, ", ".join(sorted(set(re.findall(r"\b\w*avx2\w*\b", p.stdout)))) or "none named"),
        flush=True)


def process_cost(cmd, what):
    """Seconds from start to exit and peak resident memory (bytes) of one run of `cmd`."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    seconds = time.perf_counter() - t0
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit("%s failed (%d): %s" % (what, p.returncode, err.strip()[-1500:]))
    return seconds, usage.ru_maxrss * 1024  # Linux reports kilobytes


def load_table(args, names):
    rows = []
    print("%-18s %9s %9s %9s %7s %9s %9s %7s" % ("model", "file MB", "ORT s", "Weft s", "ratio", "ORT MB", "Weft MB",
                                                "ratio"))
    for name in names:
        files = export_models.model_files(args.out, name)
        if args.external_data:
            # In a child process: this one stays small, since the peaks measured are those of children
            # forked from it (ru_maxrss counts the parent's pages a child starts with).
            files["onnx"] = subprocess.run([sys.executable, os.path.join(ONNX_SCRIPTS, "external_data.py"), files["onnx"],
                                            os.path.join(args.out, "external")], check=True, capture_output=True,
                                           text=True).stdout.strip()
        binding = "%s=%s" % (export_models.MODELS[name][0], files["input"])
        out = os.path.join(args.out, name + ".load.npy")
        ort_cmd = ["node", os.path.join(ONNX_SCRIPTS, "ort_run.js"), files["onnx"], "--input", binding, "--threads", "1",
                   "--output", "%s=%s" % (export_models.OUTPUT_NAME, out)]
        weft_cmd = [args.weft, "run", files["onnx"], "--input", binding, "--backend", CPU_BACKENDS, "--threads", "1", "-o",
                    "%s=%s" % (export_models.OUTPUT_NAME, out)]
        ort, weft = [], []
        for _ in range(args.rounds):
            ort.append(process_cost(ort_cmd, "ORT"))
            weft.append(process_cost(weft_cmd, "Weft"))
        row = {"model": name, "file_bytes": sum(os.path.getsize(f) for f in [files["onnx"], os.path.splitext(files["onnx"])[0] + ".data"]
                                                if os.path.exists(f)), "ort_s": min(s for s, _ in ort),
               "weft_s": min(s for s, _ in weft), "ort_peak_bytes": min(m for _, m in ort),
               "weft_peak_bytes": min(m for _, m in weft)}
        row["load_ratio"] = row["weft_s"] / row["ort_s"]
        row["memory_ratio"] = row["weft_peak_bytes"] / row["ort_peak_bytes"]
        rows.append(row)
        print("%-18s %9.1f %9.3f %9.3f %7.2f %9.1f %9.1f %7.2f" % (
            name, row["file_bytes"] / 1e6, row["ort_s"], row["weft_s"], row["load_ratio"], row["ort_peak_bytes"] / 1e6,
            row["weft_peak_bytes"] / 1e6, row["memory_ratio"]), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rounds": args.rounds, "weft": args.weft, "load": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
