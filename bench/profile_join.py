#!/usr/bin/python3
"""Weft's per-kernel profile and ONNX Runtime's per-node profile of one ONNX model, side by side.

    /usr/bin/python3 bench/profile_join.py MODEL.onnx WEFT_PROFILE.txt ORT_PROFILE.json [--top N]

WEFT_PROFILE.txt is the output of `weft run MODEL.onnx ... --profile-kernels all` (every kernel:
its mean ms per run, the ONNX node it is anchored at, its implementation); ORT_PROFILE.json is
the Chrome trace that `node scripts/onnx/ort_run.js MODEL.onnx ... --profile PREFIX` writes (one
"<node>_kernel_time" event per node and run; the median over runs is taken, warm-ups included).
bench/onnx_models.py --profile DIR writes both and this table for every model it runs.

Both runtimes fuse, and name a fused unit differently: Weft by the first node of its unit (the
convolution of CONV2D+ADD+CLAMP), ONNX Runtime by its own rules (after its NCHWc layout
transformation a fused convolution is named after the output of the unit's last node, plus
"_nchwc"; a fused matrix product after its first node plus "/MatMulAddFusion"). Each ORT node is
therefore walked back to the ONNX node that anchors it: its own name if that is a node of the model,
else the producer of the tensor its name is made from; then, unless Weft has a unit anchored at
that node, from an element-wise node up through its inputs to the first node Weft anchors a unit
at, or the convolution or matrix product it follows (for a residual ADD, the input computed last,
which is the one both runtimes fuse with). ORT nodes of its
own making that name no model node (layout reorders, fused LayerNorm and Gelu kernels) are summed
per operator on rows of their own, "ort: <op> nodes".

Rows are sorted by Weft's time minus ORT's, largest first: the top rows are where Weft loses.
"""
import argparse
import collections
import json
import re
import statistics
import sys

# Nodes a runtime fuses into the convolution or matrix product before them.
FOLLOWERS = {"Relu", "Clip", "Add", "Sum", "Sigmoid", "Mul", "HardSigmoid", "HardSwish", "BatchNormalization",
             "LeakyRelu", "Tanh", "Div", "Sub", "Elu", "Gelu", "Erf"}
ANCHORS = {"Conv", "ConvTranspose", "Gemm", "MatMul", "FusedConv", "QLinearConv", "ConvInteger", "MatMulInteger"}

WEFT_KERNEL = re.compile(r"^\s+([0-9.]+) ms\s+(\S+) (\S+) \((.*?)\)(?: \[(.*)\])?\s*$")


def read_weft(path):
    """[(ms, backend, pattern, anchor node, implementation)] from `weft run --profile-kernels all`."""
    rows, inside = [], False
    with open(path) as f:
        for line in f:
            if line.startswith("slowest kernels:"):
                inside = True
                continue
            if inside:
                m = WEFT_KERNEL.match(line)
                if not m:
                    if line.strip() and not line.startswith(" "):
                        inside = False
                    continue
                rows.append((float(m.group(1)), m.group(2), m.group(3), m.group(4), m.group(5) or ""))
    if not rows:
        raise SystemExit("%s: no kernel lines (run `weft run ... --profile-kernels all`)" % path)
    return rows


def read_ort(path):
    """{ORT node name: (median ms per run, op name)} from ORT's profile JSON."""
    with open(path) as f:
        events = json.load(f)
    times, ops = collections.defaultdict(list), {}
    for e in events:
        if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time"):
            continue
        name = e["name"][: -len("_kernel_time")]
        times[name].append(e["dur"] / 1000.0)
        ops[name] = e.get("args", {}).get("op_name", "?")
    if not times:
        raise SystemExit("%s: no node events (was the session profiled?)" % path)
    return {n: (statistics.median(v), ops[n]) for n, v in times.items()}


class Graph:
    def __init__(self, model_path):
        import onnx
        m = onnx.load(model_path, load_external_data=False)
        self.nodes = {}
        self.producer = {}  # tensor -> (topological index, node)
        for i, n in enumerate(m.graph.node):
            self.nodes[n.name] = (i, n)
            for o in n.output:
                self.producer[o] = (i, n)

    def anchor(self, node, units=()):
        """The node `node` is fused after: itself if a Weft unit is anchored there (`units`), else up
        through element-wise nodes to the first Weft anchor, convolution or matrix product."""
        start, seen = node, 0
        while node.name not in units and node.op_type in FOLLOWERS and seen < 16:
            ins = [self.producer[t] for t in node.input if t in self.producer]
            if not ins:
                break
            _, node = max(ins, key=lambda p: p[0])  # the input computed last
            seen += 1
            if node.op_type in ANCHORS or node.name in units:
                return node
        return node if node.name in units or node.op_type in ANCHORS else start

    def ort_anchor(self, name, units=()):
        """The model node an ORT node name stands for, or None."""
        if name in self.nodes:
            return self.anchor(self.nodes[name][1], units)
        # A name ORT derived from a node's or a tensor's: strip its suffixes ("_nchwc", "_token_12") and
        # trailing path parts ("/MatMulAddFusion"), nearest match first.
        base = name
        while base:
            base = re.sub(r"(_nchwc|_token_\d+)+$", "", base).rstrip("/")
            if base in self.producer:
                return self.anchor(self.producer[base][1], units)
            if base in self.nodes:
                return self.anchor(self.nodes[base][1], units)
            if "/" not in base:
                return None
            base = base[: base.rindex("/")]
        return None


def join(model_path, weft_path, ort_path):
    g = Graph(model_path)
    table = collections.OrderedDict()  # key -> [weft ms, weft what, ort ms, ort what]

    def row(key):
        return table.setdefault(key, [0.0, [], 0.0, []])

    weft = read_weft(weft_path)
    units = {node for _, _, _, node, _ in weft}
    for ms, backend, pattern, node, impl in weft:
        r = row(node if node in g.nodes else "weft: " + node)
        r[0] += ms
        r[1].append(pattern + (" [%s]" % impl if impl else "") + ("" if backend == "onednn" else " (%s)" % backend))
    unmatched = collections.Counter()
    for name, (ms, op) in read_ort(ort_path).items():
        a = g.ort_anchor(name, units)
        if a is None:  # a node of ORT's own (a layout reorder, a fused LayerNorm, ...): one row per op
            unmatched[op] += 1
        r = row(a.name if a is not None else "ort: %s nodes" % op)
        r[2] += ms
        if a is not None:
            r[3].append(op)
    for op, count in unmatched.items():
        table["ort: %s nodes" % op][3].append("%d x %s" % (count, op))
    return table


def render(table, top=0):
    rows = sorted(table.items(), key=lambda kv: kv[1][0] - kv[1][2], reverse=True)
    tw, to = sum(r[0] for _, r in rows), sum(r[2] for _, r in rows)
    out = ["%-58s %9s %9s %9s  %s" % ("node (Weft's anchor)", "Weft ms", "ORT ms", "diff", "Weft unit / ORT ops")]
    for key, (w, wh, o, oh) in rows[:top] if top else rows:
        what = "; ".join(wh) + " / " + ",".join(oh)
        out.append("%-58s %9.3f %9.3f %+9.3f  %s" % (key[-58:], w, o, w - o, what))
    out.append("%-58s %9.3f %9.3f %+9.3f  (%d rows)" % ("total in kernels", tw, to, tw - to, len(rows)))
    return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("weft_profile")
    ap.add_argument("ort_profile")
    ap.add_argument("--top", type=int, default=0, help="print only the N rows where Weft loses most")
    args = ap.parse_args(argv)
    sys.stdout.write(render(join(args.model, args.weft_profile, args.ort_profile), args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
