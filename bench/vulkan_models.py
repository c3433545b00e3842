#!/usr/bin/env python3
"""Weft's Vulkan backend against PyTorch on the same GPU: model latency at batch 1 and 32, and a
large fp16 matmul's TFLOP/s against the device's peak.

    python3 bench/vulkan_models.py [--weft build/weft] [--models DIR] [--names mobilenet_v2,resnet50,bert_encoder]
        [--batches 1,32] [--iters 50] [--rounds 1] [--no-compile] [--no-graph] [--precision fp32,fp16] [--gemm f32,f16]
        [--profile DIR] [--matmul 4096] [--peak-tflops 989.4] [--json FILE]

Models: DIR/NAME.onnx (batch 1) and DIR/NAME.bB.onnx with their saved inputs, as written by
scripts/onnx/export_models.py [--batch B] (export them on a machine with Debian's torch 1.13; this
script only needs the files, the weft CLI and a CUDA build of PyTorch + torchvision to rebuild the
same architectures for the PyTorch side: the weights differ, the work does not).

Each side runs a warm-up and then --iters timed inferences; the median is reported. With --rounds R
every measurement of a row is taken R times, Weft and its peers in turn, and each figure is the
best of its R medians (a GPU that moves between clock states skews a single round, on either side).
  weft        `weft run NAME.onnx --backend vulkan,reference --repeat N`: host input -> host output
              (upload, one command-buffer submission per Vulkan region, download), unprofiled.
  eager       PyTorch eager fp32 on CUDA (cuDNN defaults, i.e. TF32 convolutions allowed), timed
              host -> host as Weft is (x.cuda(), model, .cpu()), and device-resident (input already on
              the GPU, output left there; CUDA-event timing) for reference.
  compile     torch.compile(model) (inductor, default mode), same two timings.
  graph       PyTorch with its whole forward captured in a CUDA graph (torch.cuda.CUDAGraph), the
              fair peer of one recorded command buffer, strict fp32 (allow_tf32 off) and with TF32
              allowed; host -> host (copy into the static input, replay, copy out) and replay alone.
  ratio       weft / eager, weft / graph and weft / compile, host -> host (< 1: Weft is faster).
With --precision fp32,fp16 Weft also runs each model with `--precision fp16` (the reduced-precision
mode), compared with the TF32 graph; its accuracy is the largest absolute difference from the
exported fp32 PyTorch output (NAME.torch.npy) over the largest magnitude of that output. The TF32
peer's own accuracy, the same measure between its TF32 and strict-fp32 outputs, is printed beside it.
With --precision fp16-model Weft also runs NAME[.bB].fp16.onnx, the model exported in half
precision (scripts/onnx/export_models.py --half: fp16 input, weights and output), as it is; its
accuracy is measured against that export's fp32 output (NAME.fp16.torch.npy), and its time is held
against the TF32 graph like the reduced-precision mode's.
With --gemm f32,f16 a GEMM sweep (the models' shapes and square sizes, GEMM_SHAPES) compares
Weft's MATMUL dispatch time with cuBLAS (torch.matmul, TF32 off).
With --profile DIR each model's `weft run --profile` output (per-operator GPU time from Vulkan
timestamp queries) is written to DIR/NAME.bB.txt.

Matmul: C[1,M,N] = A[1,M,K] x B[1,K,N], fp16 inputs with fp32 accumulate and output (TOSA's "fp16
with fp32 accumulate" MATMUL), M = N = K = --matmul. Weft's time is the dispatch's GPU time from
timestamp queries; PyTorch's is torch.matmul on fp16 CUDA tensors (fp16 output, cuBLAS) timed
with CUDA events. TFLOP/s = 2*M*N*K / time; fraction = TFLOP/s / --peak-tflops (the H100 SXM's
dense fp16 tensor-core peak by default).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "scripts", "onnx"))
import export_models  # noqa: E402


WEFT_OUT = os.path.join(tempfile.gettempdir(), "weft_out.npy")


def weft_latency(weft, onnx_path, input_arg, iters, profile_path=None, precision="fp32"):
    """Median ms of an unprofiled run (profiling adds a timestamp query per dispatch); with
    profile_path, a second, profiled run writes `weft run --profile`'s report there. The output
    is left in WEFT_OUT."""
    cmd = [weft, "run", onnx_path, "--input", input_arg, "--backend", "vulkan,reference", "--repeat", str(iters),
           "--precision", precision, "--output", "%s=%s" % (export_models.OUTPUT_NAME, WEFT_OUT)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("weft failed on %s: %s" % (onnx_path, p.stderr.strip()[-1500:]))
    m = re.search(r"median_ms=([0-9.]+)", p.stdout)
    if profile_path:
        q = subprocess.run(cmd + ["--profile"], capture_output=True, text=True)
        with open(profile_path, "w") as f:
            f.write(q.stdout if q.returncode == 0 else q.stderr)
    return float(m.group(1)), p.stdout


def torch_latency(model, x_host, iters, torch):
    """(host->host median ms, device-resident median ms)."""
    import time
    with torch.no_grad():
        xd = x_host.cuda()
        for _ in range(5):
            model(xd)
        torch.cuda.synchronize()
        host = []
        for _ in range(iters):
            t0 = time.perf_counter()
            y = model(x_host.cuda()).cpu()
            host.append((time.perf_counter() - t0) * 1e3)
        dev = []
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for _ in range(iters):
            start.record()
            model(xd)
            end.record()
            torch.cuda.synchronize()
            dev.append(start.elapsed_time(end))
    del y
    return statistics.median(host), statistics.median(dev)


def graph_latency(model, x_host, iters, torch, tf32):
    """PyTorch with its whole forward captured in one CUDA graph (torch.cuda.CUDAGraph), the fair
    peer of one recorded command buffer: host->host median ms (copy into the graph's static input,
    replay, copy the static output back) and device-resident median ms (replay alone). `tf32`
    allows TF32 in matmuls and convolutions; otherwise both run strict fp32."""
    import time
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    try:
        with torch.no_grad():
            static_x = x_host.cuda()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):  # warm-up outside the graph (cuDNN picks its algorithms)
                for _ in range(3):
                    model(static_x)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_y = model(static_x)
            for _ in range(5):
                graph.replay()
            torch.cuda.synchronize()
            host = []
            for _ in range(iters):
                t0 = time.perf_counter()
                static_x.copy_(x_host)
                graph.replay()
                y = static_y.cpu()
                host.append((time.perf_counter() - t0) * 1e3)
            dev = []
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            for _ in range(iters):
                start.record()
                graph.replay()
                end.record()
                torch.cuda.synchronize()
                dev.append(start.elapsed_time(end))
        del y, graph
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
    return statistics.median(host), statistics.median(dev)


def rel_error(out, ref):
    """Largest absolute difference over the largest magnitude of the reference."""
    out, ref = np.asarray(out, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    return float(np.abs(out - ref).max() / max(np.abs(ref).max(), 1e-30))


def tf32_error(model, x_host, torch):
    """The TF32 peer's accuracy: its output against the same model's strict-fp32 output."""
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    try:
        outs = []
        for tf32 in (False, True):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            torch.backends.cudnn.allow_tf32 = tf32
            with torch.no_grad():
                outs.append(model(x_host.cuda()).float().cpu().numpy())
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
    return rel_error(outs[1], outs[0])


def one_gemm(weft, m, n, k, dtype, iters, torch):
    """C[1,M,N] = A[1,M,K] x B[1,K,N] ("f32" or "f16" inputs; Weft's output fp32) on Weft's Vulkan
    backend (GPU time of the dispatch from timestamp queries) and with torch.matmul (cuBLAS, CUDA
    events) on the same inputs. Returns weft_ms, cublas_ms, Weft's relative error on a few rows
    against float64 (16 rows spread over M, every column), and Weft's profile text; raises with Weft's error if it fails."""
    np_t = np.float16 if dtype == "f16" else np.float32
    d = tempfile.mkdtemp()
    rng = np.random.default_rng(0)
    a = rng.standard_normal((1, m, k)).astype(np_t)
    b = rng.standard_normal((1, k, n)).astype(np_t)
    np.save(os.path.join(d, "a.npy"), a)
    np.save(os.path.join(d, "b.npy"), b)
    model = os.path.join(d, "mm.weft")
    with open(model, "w") as f:
        f.write("graph @main(%%a: %s[1,%d,%d], %%b: %s[1,%d,%d]) -> (%%c) {\n" % (dtype, m, k, dtype, k, n))
        f.write("  %%zp: %s[1] = CONST() {values = [0]}\n" % dtype)
        f.write("  %%c: f32[1,%d,%d] = MATMUL(%%a, %%b, %%zp, %%zp)\n  return %%c\n}\n" % (m, n))
    p = subprocess.run([weft, "run", model, "--input", "a=" + os.path.join(d, "a.npy"), "--input",
                        "b=" + os.path.join(d, "b.npy"), "--output", "c=" + os.path.join(d, "c.npy"),
                        "--backend", "vulkan,reference", "--repeat", str(iters), "--profile"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("weft matmul failed: " + p.stderr.strip()[-1500:])
    mt = re.search(r"device time \(timestamp queries\): ([0-9.]+) ms", p.stdout)
    weft_ms = float(mt.group(1)) if mt else float("nan")
    c = np.load(os.path.join(d, "c.npy"))
    rows = np.unique(np.linspace(0, m - 1, 16).astype(int))  # spread over the tiles, every column
    ref = a[0, rows].astype(np.float64) @ b[0].astype(np.float64)
    rel = float(np.max(np.abs(c[0, rows] - ref)) / np.max(np.abs(ref)))
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    for _ in range(3):
        torch.matmul(ta, tb)
    torch.cuda.synchronize()
    times = []
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(iters):
        start.record()
        torch.matmul(ta, tb)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return weft_ms, statistics.median(times), rel, p.stdout


def gemm_sweep(weft, shapes, dtype, iters, torch):
    """one_gemm over `shapes`, TF32 off (fp32: strict on both sides; fp16: fp32 accumulate, Weft's
    output fp32, cuBLAS's fp16)."""
    rows = []
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        for (m, n, k) in shapes:
            try:
                weft_ms, t_ms, rel, _ = one_gemm(weft, m, n, k, dtype, iters, torch)
            except RuntimeError as e:
                rows.append({"m": m, "n": n, "k": k, "dtype": dtype, "error": str(e)[-300:]})
                continue
            flops = 2.0 * m * n * k
            rows.append({"m": m, "n": n, "k": k, "dtype": dtype, "weft_ms": weft_ms, "cublas_ms": t_ms,
                         "weft_tflops": flops / weft_ms / 1e9, "cublas_tflops": flops / t_ms / 1e9, "weft_rel_error": rel})
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
    return rows


# GEMM shapes (M, N, K) of the benchmark models (BERT-base at sequence 128, batch 1 and 32; the
# BERT-style test encoder's batch-32 QKV, output, FFN-up and FFN-down projections; ResNet-50's late 1x1
# convolutions as implicit GEMMs at batch 32) and square sizes.
GEMM_SHAPES = [(128, 768, 768), (128, 3072, 768), (128, 768, 3072), (4096, 768, 768), (4096, 3072, 768),
               (4096, 768, 3072), (4096, 768, 256), (4096, 256, 256), (4096, 1024, 256), (4096, 256, 1024),
               (1568, 2048, 512), (1568, 512, 2048), (1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096)]


def matmul_bench(weft, n, iters, torch):
    """The fp16 n x n x n matmul of the --matmul line (cuBLAS with its defaults)."""
    return one_gemm(weft, n, n, n, "f16", iters, torch)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--weft", default=os.path.join(REPO, "build", "weft"))
    ap.add_argument("--models", default=os.path.join(REPO, "build", "models"))
    ap.add_argument("--names", default="mobilenet_v2,resnet50,bert_encoder")
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=1,
                    help="alternating rounds of every measurement of a row (Weft and its peers in turn); each "
                         "figure is the best median of its rounds (a GPU that moves between clock states "
                         "between calls skews a single round)")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--no-graph", action="store_true", help="skip the CUDA-graph peers (fp32 and TF32)")
    ap.add_argument("--precision", default="fp32",
                    help="Weft's precision modes, comma-separated (fp32, fp16, fp16-model: the --half export); "
                         "fp16 and fp16-model are held against the TF32 graph")
    ap.add_argument("--gemm", default="", help="GEMM sweep against cuBLAS: comma-separated dtypes (f32, f16)")
    ap.add_argument("--profile")
    ap.add_argument("--matmul", type=int, default=4096, help="matmul size (0: skip)")
    ap.add_argument("--peak-tflops", type=float, default=989.4)
    ap.add_argument("--json")
    args = ap.parse_args(argv)

    import torch
    torch.manual_seed(0)
    results = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "models": [], "matmul": None}
    results["rounds"] = max(1, args.rounds)
    print("device: %s, torch %s%s" % (results["device"], results["torch"],
                                      ", best of %d alternating rounds" % args.rounds if args.rounds > 1 else ""),
          flush=True)
    if args.profile:
        os.makedirs(args.profile, exist_ok=True)

    for name in [n for n in args.names.split(",") if n]:
        model = export_models.build_model(name).eval().cuda()
        compiled = None if args.no_compile else torch.compile(model)
        for batch in [int(b) for b in args.batches.split(",")]:
            files = export_models.model_files(args.models, name, batch)
            if not os.path.exists(files["onnx"]):
                print("%s batch %d: %s missing (export it first)" % (name, batch, files["onnx"]), flush=True)
                continue
            x = np.load(files["input"])
            xt = torch.from_numpy(x)
            tag = os.path.basename(files["onnx"])[: -len(".onnx")]
            prof = os.path.join(args.profile, tag + ".txt") if args.profile else None
            input_arg = "%s=%s" % (export_models.MODELS[name][0], files["input"])
            ref = np.load(files["torch"]) if os.path.exists(files["torch"]) else None
            precisions = [p for p in args.precision.split(",") if p]
            row = {"model": name, "batch": batch}

            def keep(key, ms):  # the best median over the rounds
                row[key] = min(row.get(key, ms), ms)

            for rnd in range(max(1, args.rounds)):
                first = rnd == 0
                for p in precisions:
                    key = "weft_ms" if p == "fp32" else "weft_%s_ms" % p
                    ptag = None if not first or prof is None else (
                        prof if p == "fp32" else prof[: -len(".txt")] + "." + p + ".txt")
                    if p == "fp16-model":
                        # The model exported in half precision (export_models.py --half), run as it is.
                        hf = export_models.model_files(args.models, name, batch, half=True)
                        if not os.path.exists(hf["onnx"]):
                            if first:
                                print("%s batch %d: %s missing (export it with --half)" % (name, batch, hf["onnx"]),
                                      flush=True)
                            continue
                        ms, _ = weft_latency(args.weft, hf["onnx"], "%s=%s" % (export_models.MODELS[name][0], hf["input"]),
                                             args.iters, ptag, "fp32")
                        keep(key, ms)
                        if first:
                            row[key[: -len("_ms")] + "_error"] = rel_error(np.load(WEFT_OUT), np.load(hf["torch"]))
                        continue
                    ms, _ = weft_latency(args.weft, files["onnx"], input_arg, args.iters, ptag, p)
                    keep(key, ms)
                    if first and ref is not None:
                        row[key[: -len("_ms")] + "_error"] = rel_error(np.load(WEFT_OUT), ref)
                eager_host, eager_dev = torch_latency(model, xt, args.iters, torch)
                keep("eager_ms", eager_host)
                keep("eager_dev_ms", eager_dev)
                if not args.no_graph:
                    g32_host, g32_dev = graph_latency(model, xt, args.iters, torch, tf32=False)
                    gtf_host, gtf_dev = graph_latency(model, xt, args.iters, torch, tf32=True)
                    keep("graph_fp32_ms", g32_host)
                    keep("graph_fp32_dev_ms", g32_dev)
                    keep("graph_tf32_ms", gtf_host)
                    keep("graph_tf32_dev_ms", gtf_dev)
                if compiled is not None:
                    comp_host, comp_dev = torch_latency(compiled, xt, args.iters, torch)
                    keep("compile_ms", comp_host)
                    keep("compile_dev_ms", comp_dev)
            weft_ms = row.get("weft_ms", row[next(k for k in row if k.startswith("weft_") and k.endswith("_ms"))])
            eager_host, eager_dev = row["eager_ms"], row["eager_dev_ms"]
            results["models"].append(row)
            line = "%-14s b%-3d weft %8.3f ms | eager %8.3f ms (on-device %8.3f) ratio %.2f" % (
                name, batch, weft_ms, eager_host, eager_dev, weft_ms / eager_host)
            if not args.no_graph:
                line += " | graph fp32 %8.3f ms ratio %.2f | graph tf32 %8.3f ms ratio %.2f" % (
                    row["graph_fp32_ms"], weft_ms / row["graph_fp32_ms"], row["graph_tf32_ms"],
                    weft_ms / row["graph_tf32_ms"])
            for p in precisions:
                if p == "fp32" or "weft_%s_ms" % p not in row:
                    continue
                if "tf32_error" not in row:
                    row["tf32_error"] = tf32_error(model, xt, torch)
                line += " | weft %s %8.3f ms (err %.1e)" % (p, row["weft_%s_ms" % p], row.get("weft_%s_error" % p, -1))
                if not args.no_graph:
                    line += " / graph tf32 ratio %.2f (tf32 err %.1e)" % (
                        row["weft_%s_ms" % p] / row["graph_tf32_ms"], row["tf32_error"])
            if compiled is not None:
                line += " | compile %8.3f ms (on-device %8.3f) ratio %.2f" % (
                    row["compile_ms"], row["compile_dev_ms"], weft_ms / row["compile_ms"])
            print(line, flush=True)

    if args.matmul:
        n = args.matmul
        weft_ms, torch_ms, rel, _ = matmul_bench(args.weft, n, 20, torch)
        flops = 2.0 * n * n * n
        w_tf, t_tf = flops / weft_ms / 1e9, flops / torch_ms / 1e9
        results["matmul"] = {"n": n, "weft_ms": weft_ms, "weft_tflops": w_tf, "torch_ms": torch_ms,
                             "torch_tflops": t_tf, "peak_tflops": args.peak_tflops, "weft_rel_error": rel}
        print("matmul fp16 %dx%dx%d: weft %.3f ms = %.1f TFLOP/s (%.1f%% of %.0f peak, rel err %.1e) | "
              "torch %.3f ms = %.1f TFLOP/s (%.1f%%)" % (n, n, n, weft_ms, w_tf, 100 * w_tf / args.peak_tflops,
                                                         args.peak_tflops, rel, torch_ms, t_tf,
                                                         100 * t_tf / args.peak_tflops), flush=True)
    results["gemm"] = []
    for dtype in [d for d in args.gemm.split(",") if d]:
        for r in gemm_sweep(args.weft, GEMM_SHAPES, dtype, 20, torch):
            results["gemm"].append(r)
            if "error" in r:
                print("gemm %s %dx%dx%d: weft failed: %s" % (dtype, r["m"], r["n"], r["k"], r["error"]), flush=True)
            else:
                print("gemm %s M%-5d N%-5d K%-5d weft %8.3f ms %7.1f TFLOP/s | cuBLAS %8.3f ms %7.1f TFLOP/s | "
                      "ratio %.2f (rel err %.1e)" % (dtype, r["m"], r["n"], r["k"], r["weft_ms"], r["weft_tflops"],
                                                     r["cublas_ms"], r["cublas_tflops"], r["weft_ms"] / r["cublas_ms"],
                                                     r["weft_rel_error"]), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
