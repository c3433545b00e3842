// Test helper of the compiler passes' tests: how many nodes of `op` a graph has.
#pragma once

#include "weft/graph.h"

namespace weft::compiler {

inline int count(const Graph& g, Op op) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.op == op;
  return n;
}

}  // namespace weft::compiler
