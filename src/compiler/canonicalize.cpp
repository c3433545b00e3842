#include "compiler/canonicalize.h"

#include <algorithm>

#include "compiler/layout_cleanup.h"

namespace weft::compiler {
namespace {

// Whether `v` is produced by a CONST whose every element equals `want`.
bool const_all(const Graph& g, ValueId v, double want) {
  const int p = g.value(v).producer;
  if (p < 0 || g.node(p).op != Op::CONST) return false;
  const Tensor& t = g.node(p).attr_tensor("values");
  if (!is_float(t.dtype()) || t.num_elements() == 0) return false;
  for (int64_t i = 0; i < t.num_elements(); ++i)
    if (t.at_double(i) != want) return false;
  return true;
}

}  // namespace

CanonicalizeStats canonicalize(Graph& g) {
  CanonicalizeStats stats;
  std::vector<int> readers(g.values().size(), 0);
  for (const Node& n : g.nodes())
    for (ValueId v : n.inputs) ++readers[static_cast<size_t>(v)];
  for (ValueId o : g.outputs()) ++readers[static_cast<size_t>(o)];
  auto is_const = [&](ValueId v) {
    const int p = g.value(v).producer;
    return p >= 0 && g.node(p).op == Op::CONST;
  };
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    Node& n = g.mutable_node(static_cast<int>(i));
    if ((n.op == Op::ADD || n.op == Op::MUL) && n.inputs.size() >= 2 && is_const(n.inputs[0]) && !is_const(n.inputs[1])) {
      std::swap(n.inputs[0], n.inputs[1]);
      ++stats.commuted;
    }
  }
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    Node& r = g.mutable_node(static_cast<int>(i));
    if (r.op != Op::RECIPROCAL || r.inputs.size() != 1) continue;
    const ValueId s = r.inputs[0];
    const int p = g.value(s).producer;
    if (p < 0 || readers[static_cast<size_t>(s)] != 1) continue;
    const Node& pw = g.node(p);
    if (pw.op != Op::POW || !const_all(g, pw.inputs[1], 0.5)) continue;
    // POW broadcasts its exponent; RSQRT keeps x's shape, which must then be the result's.
    if (g.value(pw.inputs[0]).type != g.value(r.outputs[0]).type) continue;
    r.op = Op::RSQRT;
    r.inputs = {pw.inputs[0]};
    ++stats.rsqrt;
  }
  if (stats.rsqrt > 0) g = prune_graph(g);
  return stats;
}

}  // namespace weft::compiler
