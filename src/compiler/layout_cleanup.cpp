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
    if (!live_node[i]) continue;
    Node n = g.nodes()[i];
    for (ValueId& v : n.inputs) v = map[static_cast<size_t>(v)];
    for (ValueId& v : n.outputs) {
      ValueId nv = out.add_value(g.value(v).name, g.value(v).type);
      map[static_cast<size_t>(v)] = nv;
      v = nv;
    }
    out.add_node(std::move(n));
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

}  // namespace weft::compiler
