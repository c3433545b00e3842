#!/usr/bin/env python3
"""Runs the ecosystem's own tools over what Weft wrote: every *.vgf under the given folders goes
through Arm's `vgf_dump -i` (the container's sections verify and parse), and every module in it
is extracted with `vgf_dump --dump-spirv N` and validated by Khronos' `spirv-val` (GRAPH modules
for --target-env vulkan1.3, as SPIRV-Tools' own graph tests use; COMPUTE modules likewise); every
*.spv is validated directly. `<case>.refused` files (models Weft declined to write, with the
reason) are counted and listed by reason.

    upstream_check.py [--tools DIR] [--min-files N] FOLDER...

DIR defaults to ../shared/tools/bin beside the repository; without the tools the script says so
and exits 0 (a user's clone has no ../shared). Exit status 1 when any file is rejected, or when
fewer than N files were found (a producer that silently wrote nothing).
"""
import argparse
import collections
import os
import subprocess
import sys
import tempfile


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    return p.returncode, p.stdout


def module_count(vgf_dump, path):
    import json
    rc, out = run([vgf_dump, "-i", path])
    if rc != 0:
        return None, out
    try:
        return len(json.loads(out)["modules"]), ""
    except (ValueError, KeyError) as e:
        return None, "vgf_dump printed no JSON with modules: %s" % e


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tools", default=os.path.normpath(os.path.join(here, "../../../shared/tools/bin")))
    ap.add_argument("--min-files", type=int, default=1)
    ap.add_argument("folders", nargs="+")
    a = ap.parse_args()
    vgf_dump, spirv_val = os.path.join(a.tools, "vgf_dump"), os.path.join(a.tools, "spirv-val")
    if not (os.access(vgf_dump, os.X_OK) and os.access(spirv_val, os.X_OK)):
        print("upstream_check: SKIP: vgf_dump / spirv-val not found in %s (../shared is absent)" % a.tools)
        return 0

    vgfs, spvs, refused = [], [], []
    for folder in a.folders:
        for root, _, files in os.walk(folder):
            for f in sorted(files):
                p = os.path.join(root, f)
                if f.endswith(".vgf"):
                    vgfs.append(p)
                elif f.endswith(".spv"):
                    spvs.append(p)
                elif f.endswith(".refused"):
                    refused.append(p)
    failures = []
    modules = 0
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "m.spv")
        for p in vgfs:
            n, err = module_count(vgf_dump, p)
            if n is None:
                failures.append((p, "vgf_dump rejects it: " + err.strip()[:400]))
                continue
            for i in range(n):
                rc, err = run([vgf_dump, "-i", p, "--dump-spirv", str(i), "-o", out])
                if rc != 0:
                    continue  # GLSL/HLSL or a placeholder: nothing to validate
                modules += 1
                rc, err = run([spirv_val, "--target-env", "vulkan1.3", out])
                if rc != 0:
                    failures.append(("%s module %d" % (p, i), "spirv-val: " + err.strip()[:400]))
        for p in spvs:
            modules += 1
            rc, err = run([spirv_val, "--target-env", "vulkan1.3", p])
            if rc != 0:
                failures.append((p, "spirv-val: " + err.strip()[:400]))

    reasons = collections.Counter()
    for p in refused:
        with open(p) as f:
            reasons[f.read().strip().split(": ")[-1][:120]] += 1
    print("upstream_check: %d containers accepted by vgf_dump, %d SPIR-V modules by spirv-val, %d rejected; "
          "%d models refused by Weft at compile time" % (len(vgfs) - sum(1 for f, _ in failures if f.endswith(".vgf")),
                                                         modules - sum(1 for f, _ in failures if "module" in f or f.endswith(".spv")),
                                                         len(failures), len(refused)))
    for reason, n in reasons.most_common():
        print("  refused (%d): %s" % (n, reason))
    for f, why in failures:
        print("REJECTED %s: %s" % (f, why))
    if len(vgfs) + len(spvs) < a.min_files:
        print("upstream_check: only %d files found, expected at least %d" % (len(vgfs) + len(spvs), a.min_files))
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
