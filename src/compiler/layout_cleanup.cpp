#include "compiler/layout_cleanup.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include "compiler/uses.h"

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

// For a RESHAPE from shape `from` to shape `to` that only splits axes: for each axis of `from`,
// the consecutive axes of `to` it becomes (a merge read the other way round). nullopt when the
// RESHAPE is not of that form.
std::optional<std::vector<std::vector<int64_t>>> split_groups(const Shape& from, const Shape& to) {
  std::vector<std::vector<int64_t>> groups(from.size());
  size_t k = 0;
  for (size_t i = 0; i < from.size(); ++i) {
    int64_t prod = 1;
    do {
      if (k >= to.size() || to[k] < 1) return std::nullopt;
      groups[i].push_back(to[k]);
      prod *= to[k++];
    } while (prod < from[i]);
    if (prod != from[i]) return std::nullopt;
  }
  // (Axes of size 1 left at the end belong to the last group.)
  while (!groups.empty() && k < to.size() && to[k] == 1) groups.back().push_back(to[k++]);
  if (k != to.size()) return std::nullopt;
  return groups;
}

// NHWC -> NCHW, the importer's layout TRANSPOSE around operators it keeps in ONNX's layout, and
// its inverse.
const std::vector<int64_t> kToNchw = {0, 3, 1, 2};
const std::vector<int64_t> kToNhwc = {0, 2, 3, 1};

// Operators whose result's element i depends only on element i of each operand (after
// broadcasting), so that a TRANSPOSE of the result is the operator applied to TRANSPOSEd operands.
bool elementwise(Op op) {
  const std::string_view group = op_def(op).group;
  return group == "activation" || group == "elementwise-unary" || group == "elementwise-binary" || op == Op::CAST;
}

// The shape of a TRANSPOSE by `perms` of `s`.
Shape permuted(const Shape& s, const std::vector<int64_t>& perms) {
  Shape r(perms.size());
  for (size_t j = 0; j < perms.size(); ++j) r[j] = s[static_cast<size_t>(perms[j])];
  return r;
}

// Whether a TRANSPOSE by `perms` of a tensor of shape `s` keeps its elements in memory order (its
// axes other than those of size 1 stay in order): then a RESHAPE does the same.
bool order_kept(const Shape& s, const std::vector<int64_t>& perms) {
  int64_t last = -1;
  for (int64_t a : perms) {
    if (s[static_cast<size_t>(a)] == 1) continue;
    if (a < last) return false;
    last = a;
  }
  return true;
}

// Whether a TRANSPOSE by `perms` can move in front of node `m` (of graph `g`), `v` being the one
// operand it would move onto: `m` is element-wise with `v` at the result's full shape and every
// other operand of that rank a constant that a RESHAPE can permute (a per-channel scale or bias;
// lower-rank operands such as MUL's shift stay as they are), or a PAD by constant amounts.
bool movable_past(const Graph& g, const Node& m, ValueId v, const std::vector<int64_t>& perms) {
  if (m.outputs.size() != 1) return false;
  const TensorType& rt = g.value(m.outputs[0]).type;
  if (rt.rank() != static_cast<int>(perms.size())) return false;
  if (m.op == Op::PAD) return m.inputs.size() >= 2 && m.inputs[0] == v && !shape_values(g, m.inputs[1]).empty();
  if (g.value(v).type.shape != rt.shape) return false;
  if (!elementwise(m.op)) return false;
  for (ValueId in : m.inputs) {
    if (in == v || g.value(in).type.rank() != rt.rank()) continue;
    const int p = g.value(in).producer;
    if (p < 0 || g.node(p).op != Op::CONST || !order_kept(g.value(in).type.shape, perms)) return false;
  }
  return true;
}

// The operand of element-wise or PAD node `m` that a TRANSPOSE would move onto: PAD's input, or
// the one input of the result's shape that is not a constant (every such input is that value);
// kNoValue where there is none.
ValueId moving_operand(const Graph& g, const Node& m) {
  if (m.outputs.size() != 1 || m.inputs.empty()) return kNoValue;
  if (m.op == Op::PAD) return m.inputs[0];
  const Shape& rs = g.value(m.outputs[0]).type.shape;
  ValueId found = kNoValue;
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    const ValueId in = m.inputs[i];
    const int p = g.value(in).producer;
    if (g.value(in).type.shape != rs || (p >= 0 && g.node(p).op == Op::CONST)) continue;
    if (found != kNoValue && found != in) return kNoValue;
    found = in;
  }
  return found;
}

// Whether every reader of NCHW value `v` of `g` would take it in NHWC if it were a TRANSPOSE
// [0, 3, 1, 2] of an NHWC value: a TRANSPOSE [0, 2, 3, 1] (the pair cancels), a RESHAPE that
// only splits axes read by one TRANSPOSE (rule C), or an element-wise / PAD node that alone reads
// `v` once and whose result is such a value itself (rule E).
bool readers_take_nhwc(const Graph& g, const Uses& uses, ValueId v, int depth = 0) {
  const std::vector<int>& readers = uses.readers[static_cast<size_t>(v)];
  // (Below the first value, each is an element-wise result that its one reader alone needs.)
  if (uses.is_output[static_cast<size_t>(v)] || readers.empty() || depth > 16 || (depth > 0 && readers.size() != 1))
    return false;
  for (int r : readers) {
    const Node& m = g.node(r);
    if (m.op == Op::TRANSPOSE && m.attr_ints("perms") == kToNhwc) continue;
    if (m.op == Op::RESHAPE && m.outputs.size() == 1) {
      const ValueId s = m.outputs[0];
      const auto& rr = uses.readers[static_cast<size_t>(s)];
      if (!uses.is_output[static_cast<size_t>(s)] && rr.size() == 1 && g.node(rr[0]).op == Op::TRANSPOSE &&
          split_groups(g.value(v).type.shape, g.value(s).type.shape))
        continue;
      return false;
    }
    if (moving_operand(g, m) == v && movable_past(g, m, v, kToNhwc) && readers_take_nhwc(g, uses, m.outputs[0], depth + 1))
      continue;
    return false;
  }
  return true;
}

}  // namespace

int sink_layout_transposes(Graph& g) {
  Graph out(g.name());
  std::vector<ValueId> map(g.values().size(), kNoValue);
  // back[w]: the value of `g` that value w of `out` stands for (kNoValue for new intermediates).
  std::vector<ValueId> back;
  auto bind = [&](ValueId v, ValueId w) {
    map[static_cast<size_t>(v)] = w;
    if (back.size() <= static_cast<size_t>(w)) back.resize(static_cast<size_t>(w) + 1, kNoValue);
    back[static_cast<size_t>(w)] = v;
  };
  for (ValueId in : g.inputs()) bind(in, out.add_input(g.value(in).name, g.value(in).type));
  const Uses uses(g);
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
          bind(n.outputs[0], emit(Op::TRANSPOSE, {r2n}, {{"perms", kToNchw}}, rt, base));
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
          bind(n.outputs[0],
               emit(Op::SLICE, {x, shape_const(st), shape_const(sz)}, {}, g.value(n.outputs[0]).type, g.value(n.outputs[0]).name));
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
        const bool shuffle = p == kToNchw && q == std::vector<int64_t>{0, 2, 1, 3, 4};
        // The RESHAPE's axes as consecutive groups, one per axis of the TRANSPOSE's result.
        const auto split = shuffle || q.size() != ss.size() || p.size() != ts.size() ? std::nullopt : split_groups(ts, ss);
        if (split) {
          const std::vector<std::vector<int64_t>>& groups = *split;
          // Position in the RESHAPE's result of (axis i of the TRANSPOSE's result, part j), and in
          // x's split: x's axes in order, axis p[i] split as axis i was.
          std::vector<std::vector<int64_t>> at_x(ts.size());
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
          bind(n.outputs[0], emit(Op::TRANSPOSE, {split_x}, {{"perms", perms}}, g.value(n.outputs[0]).type, base));
          ++rewrites;
          continue;
        }
      }
    }
    // Rule D: TRANSPOSE(x, p) -> RESHAPE merging its axes into [N, C, H, W], where every reader
    // takes the result in NHWC (readers_take_nhwc), becomes TRANSPOSE(x, p') -> RESHAPE to
    // [N, H, W, C] -> TRANSPOSE to NCHW. The readers' TRANSPOSEs then cancel against the last one
    // or move onto it (rules C and E), and p' keeps C innermost: MaxViT's window and grid
    // departitions, whose result the next block reads through NCHW batch norms and partitions.
    if (n.op == Op::RESHAPE && single_out && g.value(n.outputs[0]).type.rank() == 4) {
      const int t = producer_of(out, n.inputs[0], Op::TRANSPOSE);
      const TensorType rt = g.value(n.outputs[0]).type;
      const auto merged = t >= 0 ? split_groups(rt.shape, out.value(out.node(t).outputs[0]).type.shape) : std::nullopt;
      if (merged && readers_take_nhwc(g, uses, n.outputs[0])) {
        const std::vector<int64_t> p = out.node(t).attr_ints("perms");
        const ValueId x = out.node(t).inputs[0];
        const DType dt = rt.dtype;
        // The TRANSPOSE's axes with the groups in the order N, H, W, C.
        std::vector<size_t> first(5, 0);
        for (size_t i = 0; i < 4; ++i) first[i + 1] = first[i] + (*merged)[i].size();
        std::vector<int64_t> pp;
        for (size_t grp : kToNhwc)
          for (size_t a = first[grp]; a < first[grp + 1]; ++a) pp.push_back(p[a]);
        bool identity = true;
        for (size_t k = 0; k < pp.size(); ++k) identity = identity && pp[k] == static_cast<int64_t>(k);
        const std::string base = g.value(n.outputs[0]).name;
        ValueId y = x;
        if (!identity)
          y = emit(Op::TRANSPOSE, {x}, {{"perms", pp}}, {dt, permuted(out.value(x).type.shape, pp)}, fresh(base + "_nhwc_order"));
        const Shape nhwc = permuted(rt.shape, kToNhwc);
        y = emit(Op::RESHAPE, {y, shape_const(std::vector<int64_t>(nhwc.begin(), nhwc.end()))}, {}, {dt, nhwc}, fresh(base + "_nhwc"));
        bind(n.outputs[0], emit(Op::TRANSPOSE, {y}, {{"perms", kToNchw}}, rt, base));
        ++rewrites;
        continue;
      }
    }
    // Rule E: TRANSPOSE(q) of element-wise / PAD nodes, each result read by the next alone, down
    // from a TRANSPOSE that q undoes: the same nodes applied to that TRANSPOSE's input, their
    // constant operands RESHAPEd (per-channel scales and biases) and PAD's amounts permuted.
    // MaxViT's batch norms and downsampling pads between an NCHW result (rule D) and the NHWC
    // convolutions after them.
    if (n.op == Op::TRANSPOSE && single_out) {
      const std::vector<int64_t> q = n.attr_ints("perms");
      std::vector<std::pair<int, ValueId>> chain;  // (node of `out`, the operand the TRANSPOSE moves onto)
      ValueId v = n.inputs[0];
      int top = -1;
      for (;;) {
        const int pn = out.value(v).producer;
        if (pn < 0) break;
        const Node& m = out.node(pn);
        if (m.op == Op::TRANSPOSE && transposes_cancel(m, n)) {
          top = pn;
          break;
        }
        const ValueId gv = static_cast<size_t>(v) < back.size() ? back[static_cast<size_t>(v)] : kNoValue;
        if (gv == kNoValue || uses.is_output[static_cast<size_t>(gv)] || uses.readers[static_cast<size_t>(gv)].size() != 1)
          break;
        const ValueId w = moving_operand(out, m);
        if (w == kNoValue || !movable_past(out, m, w, q)) break;
        chain.push_back({pn, w});
        v = w;
      }
      if (top >= 0 && !chain.empty()) {
        ValueId cur = out.node(top).inputs[0];
        for (size_t c = chain.size(); c-- > 0;) {
          Node m = out.node(chain[c].first);  // a copy: `out` grows below
          const TensorType mt = out.value(m.outputs[0]).type;
          for (size_t k = 0; k < m.inputs.size(); ++k) {
            const ValueId in = m.inputs[k];
            if (in == chain[c].second) {
              m.inputs[k] = cur;
            } else if (m.op == Op::PAD && k == 1) {
              const std::vector<int64_t> pads = shape_values(out, in);
              std::vector<int64_t> moved(pads.size());
              for (size_t j = 0; j < q.size(); ++j) {
                moved[2 * j] = pads[2 * static_cast<size_t>(q[j])];
                moved[2 * j + 1] = pads[2 * static_cast<size_t>(q[j]) + 1];
              }
              m.inputs[k] = shape_const(moved);
            } else if (out.value(in).type.rank() == mt.rank()) {
              const TensorType ct = out.value(in).type;
              const Shape cs = permuted(ct.shape, q);
              m.inputs[k] = emit(Op::RESHAPE, {in, shape_const(std::vector<int64_t>(cs.begin(), cs.end()))}, {}, {ct.dtype, cs},
                                 fresh(out.value(in).name + "_t"));
            }
          }
          const std::string name = c == 0 ? g.value(n.outputs[0]).name : fresh(out.value(m.outputs[0]).name + "_t");
          const ValueId id = out.add_value(name, {mt.dtype, permuted(mt.shape, q)});
          m.outputs = {id};
          out.add_node(std::move(m));
          cur = id;
        }
        bind(n.outputs[0], cur);
        ++rewrites;
        continue;
      }
    }
    for (ValueId& v : n.outputs) {
      ValueId nv = out.add_value(g.value(v).name, g.value(v).type);
      bind(v, nv);
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
