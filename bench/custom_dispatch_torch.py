#!/usr/bin/env python3
"""The peer of bench/custom_dispatch_bench.cpp: torch.nn.functional.grid_sample (bilinear, zeros,
align_corners=False) on the same sizes, on the CPU (Debian's torch) or CUDA when available.

    /usr/bin/python3 bench/custom_dispatch_torch.py [--device cpu|cuda] [--iters N]

Prints one line per size: median ms of the op alone, and for CUDA also with the host<->device
copies that Weft's run() includes (inputs up, output down), so the two can be compared like for like.
"""
import argparse
import statistics
import time

import torch
import torch.nn.functional as F


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--iters", type=int, default=50)
    args = ap.parse_args()
    dev = torch.device(args.device)
    torch.manual_seed(7)
    for hw, c in [(20, 3), (128, 32), (256, 64)]:
        x_host = torch.rand(1, c, hw, hw) * 2.2 - 1.1
        g_host = torch.rand(1, hw, hw, 2) * 2.2 - 1.1
        x, g = x_host.to(dev), g_host.to(dev)
        op_times, full_times = [], []
        for i in range(args.iters + 5):
            if dev.type == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            y = F.grid_sample(x, g, mode="bilinear", padding_mode="zeros", align_corners=False)
            if dev.type == "cuda":
                torch.cuda.synchronize()
            t1 = time.perf_counter()
            if dev.type == "cuda":
                y2 = F.grid_sample(x_host.to(dev), g_host.to(dev), mode="bilinear", padding_mode="zeros",
                                   align_corners=False).cpu()
                t2 = time.perf_counter()
            else:
                t2 = t1 + (t1 - t0)
            if i >= 5:
                op_times.append((t1 - t0) * 1e3)
                full_times.append((t2 - t1) * 1e3)
        print(f"grid_sample {hw}x{hw}x{c} on {dev.type}: op {statistics.median(op_times):.4f} ms"
              + (f", with transfers {statistics.median(full_times):.4f} ms" if dev.type == "cuda" else ""))


if __name__ == "__main__":
    main()
