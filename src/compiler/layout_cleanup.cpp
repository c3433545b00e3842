#include "compiler/layout_cleanup.h"

#include <algorithm>

namespace weft::compiler {

namespace {

// TRANSPOSE b (perm q) applied to TRANSPOSE a (perm p): b's result[i] = a's result[q[i]] =
// x[p[q[i]]], the identity when p[q[i]] == i for every i.
bool transposes_cancel(const Node& a, const Node& b) {
  const std::vector<int64_t>& p = a.attr_ints("perms");
  const std::vector<int64_t>& q = b.attr_ints("perms");
  if (p.size() != q.size()) return false;
  for (size_t i = 0; i < q.size(); ++i) {
    if (q[i] < 0 || static_cast<size_t>(q[i]) >= p.size() || p[static_cast<size_t>(q[i])] != static_cast<int64_t>(i))
      return false;
  }
  return true;
}

}  // namespace

void copy_node(const Graph& from, int i, Graph& to, std::vector<ValueId>& map) {
  Node n = from.node(i);
  for (ValueId& v : n.inputs) v = map[static_cast<size_t>(v)];
  for (ValueId& v : n.outputs) {
    const ValueId nv = to.add_value(from.value(v).name, from.value(v).type);
    map[static_cast<size_t>(v)] = nv;
    v = nv;
  }
  to.add_node(std::move(n));
}

Graph prune_graph(const Graph& g) {
  std::vector<char> live_value(g.values().size(), 0), live_node(g.nodes().size(), 0);
  for (ValueId o : g.outputs()) live_value[static_cast<size_t>(o)] = 1;
  for (int i = static_cast<int>(g.nodes().size()) - 1; i >= 0; --i) {
    const Node& n = g.node(i);
    bool live = false;
    for (ValueId o : n.outputs) live = live || live_value[static_cast<size_t>(o)];
    // Nodes without outputs (VARIABLE, VARIABLE_WRITE) have effects: they stay.
    if (!live && !n.outputs.empty()) continue;
    live_node[static_cast<size_t>(i)] = 1;
    for (ValueId v : n.inputs) live_value[static_cast<size_t>(v)] = 1;
  }
  Graph out(g.name());
  std::vector<ValueId> map(g.values().size(), kNoValue);
  for (ValueId in : g.inputs()) map[static_cast<size_t>(in)] = out.add_input(g.value(in).name, g.value(in).type);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    if (live_node[i]) copy_node(g, static_cast<int>(i), out, map);
  }
  std::vector<ValueId> outs;
  for (ValueId o : g.outputs()) outs.push_back(map[static_cast<size_t>(o)]);
  out.set_outputs(outs);
  return out;
}

LayoutCleanupStats cancel_layout_pairs(Graph& g) {
  LayoutCleanupStats stats;
  // replacement[v]: the value v's readers should read instead (v itself when none).
  std::vector<ValueId> replacement(g.values().size());
  for (size_t v = 0; v < replacement.size(); ++v) replacement[v] = static_cast<ValueId>(v);
  const std::vector<ValueId>& outs = g.outputs();
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    Node& b = g.mutable_node(static_cast<int>(i));
    for (ValueId& in : b.inputs) in = replacement[static_cast<size_t>(in)];
    if ((b.op != Op::TRANSPOSE && b.op != Op::RESHAPE) || b.inputs.empty() || b.outputs.size() != 1) continue;
    const Value& mid = g.value(b.inputs[0]);
    if (mid.producer < 0) continue;
    const Node& a = g.node(mid.producer);
    if (a.op != b.op || a.inputs.empty()) continue;
    const ValueId source = a.inputs[0];
    const ValueId result = b.outputs[0];
    const bool identity = b.op == Op::TRANSPOSE ? transposes_cancel(a, b) : g.value(source).type == g.value(result).type;
    if (!identity || g.value(source).type != g.value(result).type) continue;
    // A graph output keeps its own value (its name is the model's interface).
    if (std::find(outs.begin(), outs.end(), result) != outs.end()) continue;
    replacement[static_cast<size_t>(result)] = source;
    ++stats.pairs_removed;
  }
  if (stats.pairs_removed == 0) return stats;
  const size_t before = g.nodes().size();
  g = prune_graph(g);
  stats.nodes_removed = static_cast<int>(before - g.nodes().size());
  return stats;
}

namespace {

std::vector<int64_t> shape_values(const Graph& g, ValueId v) {
  const int p = g.value(v).producer;
  if (p < 0 || g.node(p).op != Op::CONST_SHAPE) return {};
  return g.node(p).attr_ints("values");
}

// The node producing `v` in `g` if it is of op `op`; else -1.
int producer_of(const Graph& g, ValueId v, Op op) {
  const int p = g.value(v).producer;
  return p >= 0 && g.node(p).op == op ? p : -1;
}

}  // namespace

int sink_layout_transposes(Graph& g) {
  Graph out(g.name());
  std::vector<ValueId> map(g.values().size(), kNoValue);
  for (ValueId in : g.inputs()) map[static_cast<size_t>(in)] = out.add_input(g.value(in).name, g.value(in).type);
  int rewrites = 0;
  // Names of new values: unused in the old graph and in the new one so far.
  auto fresh = [&](const std::string& base) {
    std::string name = base;
    for (int k = 1; g.find_value(name) || out.find_value(name); ++k) name = base + "_" + std::to_string(k);
    return name;
  };
  auto shape_const = [&](const std::vector<int64_t>& v) {
    Node c;
    c.op = Op::CONST_SHAPE;
    c.attrs = make_attrs(Op::CONST_SHAPE, {{"values", v}});
    ValueId id = out.add_value(fresh("sunk_shape"), {DType::kShape, {static_cast<int64_t>(v.size())}});
    c.outputs = {id};
    out.add_node(std::move(c));
    return id;
  };
  auto emit = [&](Op op, std::vector<ValueId> inputs, Attrs attrs, const TensorType& t, const std::string& name) {
    Node n;
    n.op = op;
    n.inputs = std::move(inputs);
    n.attrs = make_attrs(op, attrs);
    ValueId id = out.add_value(name, t);
    n.outputs = {id};
    out.add_node(std::move(n));
    return id;
  };
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    Node n = g.nodes()[i];
    for (ValueId& v : n.inputs) v = map[static_cast<size_t>(v)];
    const bool single_out = n.outputs.size() == 1;
    // Rule A, a channel shuffle written through NCHW (the ONNX importer's layout):
    //   TRANSPOSE(x NHWC, [0,3,1,2]) -> RESHAPE [N,a,b,H,W] -> TRANSPOSE [0,2,1,3,4] -> RESHAPE [N,C,H,W]
    // is the shuffle in NHWC, then one TRANSPOSE to NCHW (which rule B below and the pair
    // cancellation then usually remove):
    //   RESHAPE(x, [N,H,W,a,b]) -> TRANSPOSE [0,1,2,4,3] -> RESHAPE [N,H,W,C] -> TRANSPOSE [0,3,1,2]
    if (n.op == Op::RESHAPE && single_out && g.value(n.outputs[0]).type.rank() == 4) {
      const int t2 = producer_of(out, n.inputs[0], Op::TRANSPOSE);
      const int r1 = t2 >= 0 ? producer_of(out, out.node(t2).inputs[0], Op::RESHAPE) : -1;
      const int t1 = r1 >= 0 ? producer_of(out, out.node(r1).inputs[0], Op::TRANSPOSE) : -1;
      if (t1 >= 0 && out.node(t2).attr_ints("perms") == std::vector<int64_t>{0, 2, 1, 3, 4} &&
          out.node(t1).attr_ints("perms") == std::vector<int64_t>{0, 3, 1, 2}) {
        const ValueId x = out.node(t1).inputs[0];
        // Copies: `out` grows below (its value and node vectors reallocate).
        const TensorType xt = out.value(x).type;
        const Shape split = out.value(out.node(r1).outputs[0]).type.shape;  // [N, a, b, H, W]
        const TensorType& rt = g.value(n.outputs[0]).type;                    // [N, C, H, W]
        if (xt.rank() == 4 && split.size() == 5 && split[0] == xt.shape[0] && split[3] == xt.shape[1] &&
            split[4] == xt.shape[2] && split[1] * split[2] == xt.shape[3] && rt.shape == Shape{xt.shape[0], xt.shape[3], xt.shape[1], xt.shape[2]}) {
          const int64_t N = xt.shape[0], H = xt.shape[1], W = xt.shape[2], C = xt.shape[3], a = split[1], b = split[2];
          const std::string base = g.value(n.outputs[0]).name;
          ValueId r1n = emit(Op::RESHAPE, {x, shape_const({N, H, W, a, b})}, {}, {xt.dtype, {N, H, W, a, b}}, fresh(base + "_nhwc_split"));
          ValueId t2n = emit(Op::TRANSPOSE, {r1n}, {{"perms", std::vector<int64_t>{0, 1, 2, 4, 3}}}, {xt.dtype, {N, H, W, b, a}},
                             fresh(base + "_nhwc_shuffled"));
          ValueId r2n = emit(Op::RESHAPE, {t2n, shape_const({N, H, W, C})}, {}, {xt.dtype, {N, H, W, C}}, fresh(base + "_nhwc"));
          map[static_cast<size_t>(n.outputs[0])] =
              emit(Op::TRANSPOSE, {r2n}, {{"perms", std::vector<int64_t>{0, 3, 1, 2}}}, rt, base);
          ++rewrites;
          continue;
        }
      }
    }
    // Rule B: TRANSPOSE(p) -> SLICE -> TRANSPOSE(p^-1) is a SLICE of the first TRANSPOSE's input
    // with the window permuted.
    if (n.op == Op::TRANSPOSE && single_out) {
      const int sl = producer_of(out, n.inputs[0], Op::SLICE);
      const int ta = sl >= 0 ? producer_of(out, out.node(sl).inputs[0], Op::TRANSPOSE) : -1;
      if (ta >= 0 && transposes_cancel(out.node(ta), n)) {
        const std::vector<int64_t> p = out.node(ta).attr_ints("perms");  // a copy: `out` grows below
        const std::vector<int64_t> start = shape_values(out, out.node(sl).inputs[1]);
        const std::vector<int64_t> size = shape_values(out, out.node(sl).inputs[2]);
        if (start.size() == p.size() && size.size() == p.size()) {
          std::vector<int64_t> st(p.size()), sz(p.size());
          for (size_t k = 0; k < p.size(); ++k) {
            st[static_cast<size_t>(p[k])] = start[k];
            sz[static_cast<size_t>(p[k])] = size[k];
          }
          const ValueId x = out.node(ta).inputs[0];
          map[static_cast<size_t>(n.outputs[0])] = emit(Op::SLICE, {x, shape_const(st), shape_const(sz)}, {},
                                                        g.value(n.outputs[0]).type, g.value(n.outputs[0]).name);
          ++rewrites;
          continue;
        }
      }
    }
    // Rule C: TRANSPOSE(x, p) -> RESHAPE that only splits axes -> TRANSPOSE(q) is a RESHAPE of x
    // splitting the same axes (where they sit in x) and one TRANSPOSE: one copy instead of two.
    // MaxViT's window partition of an NCHW tensor (the importer's TRANSPOSE from NHWC, RESHAPE
    // [N, C, h, 7, w, 7], TRANSPOSE to [N, h, w, 7, 7, C]); a hand-written pixel shuffle. The
    // channel shuffle is left to rule A, which also moves its halves' slices.
    if (n.op == Op::TRANSPOSE && single_out) {
      const int r = producer_of(out, n.inputs[0], Op::RESHAPE);
      const int t = r >= 0 ? producer_of(out, out.node(r).inputs[0], Op::TRANSPOSE) : -1;
      if (t >= 0) {
        const std::vector<int64_t> p = out.node(t).attr_ints("perms"), q = n.attr_ints("perms");
        const ValueId x = out.node(t).inputs[0];
        const Shape ts = out.value(out.node(t).outputs[0]).type.shape, ss = out.value(out.node(r).outputs[0]).type.shape;
        const bool shuffle = p == std::vector<int64_t>{0, 3, 1, 2} && q == std::vector<int64_t>{0, 2, 1, 3, 4};
        // The RESHAPE's axes as consecutive groups, one per axis of the TRANSPOSE's result.
        std::vector<std::vector<int64_t>> groups(ts.size());
        bool split = !shuffle && q.size() == ss.size() && p.size() == ts.size();
        size_t k = 0;
        for (size_t i = 0; split && i < ts.size(); ++i) {
          int64_t prod = 1;
          do {
            if (k >= ss.size() || ss[k] < 1) {
              split = false;
              break;
            }
            groups[i].push_back(ss[k]);
            prod *= ss[k++];
          } while (prod < ts[i]);
          split = split && prod == ts[i];
        }
        if (split && k == ss.size()) {
          // Position in the RESHAPE's result of (axis i of the TRANSPOSE's result, part j), and in
          // x's split: x's axes in order, axis p[i] split as axis i was.
          std::vector<std::vector<int64_t>> at_s(ts.size()), at_x(ts.size());
          std::vector<std::pair<size_t, size_t>> part(ss.size());
          for (size_t i = 0, pos = 0; i < ts.size(); ++i)
            for (size_t j = 0; j < groups[i].size(); ++j, ++pos) part[pos] = {i, j};
          std::vector<size_t> pinv(p.size());
          for (size_t i = 0; i < p.size(); ++i) pinv[static_cast<size_t>(p[i])] = i;
          Shape xs_split;
          for (size_t a = 0; a < p.size(); ++a) {
            const size_t i = pinv[a];
            for (int64_t d : groups[i]) {
              at_x[i].push_back(static_cast<int64_t>(xs_split.size()));
              xs_split.push_back(d);
            }
          }
          std::vector<int64_t> perms(q.size());
          for (size_t m = 0; m < q.size(); ++m) {
            const auto [i, j] = part[static_cast<size_t>(q[m])];
            perms[m] = at_x[i][j];
          }
          const TensorType xt = out.value(x).type;  // a copy: `out` grows below
          const std::string base = g.value(n.outputs[0]).name;
          const ValueId split_x = emit(Op::RESHAPE, {x, shape_const(std::vector<int64_t>(xs_split.begin(), xs_split.end()))},
                                       {}, {xt.dtype, xs_split}, fresh(base + "_split"));
          map[static_cast<size_t>(n.outputs[0])] =
              emit(Op::TRANSPOSE, {split_x}, {{"perms", perms}}, g.value(n.outputs[0]).type, base);
          ++rewrites;
          continue;
        }
      }
    }
    for (ValueId& v : n.outputs) {
      ValueId nv = out.add_value(g.value(v).name, g.value(v).type);
      map[static_cast<size_t>(v)] = nv;
      v = nv;
    }
    out.add_node(std::move(n));
  }
  if (rewrites == 0) return 0;
  std::vector<ValueId> outs;
  for (ValueId o : g.outputs()) outs.push_back(map[static_cast<size_t>(o)]);
  out.set_outputs(outs);
  g = prune_graph(out);
  return rewrites;
}

}  // namespace weft::compiler
