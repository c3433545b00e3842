// Who reads each value of a graph: the one table the rewrites (canonicalize, narrow) and the
// backends' folds consult before they take a value's only reader for granted.
#pragma once

#include <vector>

#include "weft/graph.h"

namespace weft::compiler {

// The nodes reading each value (a node once per input that reads it) and which values are graph
// outputs.
struct Uses {
  std::vector<std::vector<int>> readers;
  std::vector<char> is_output;
  explicit Uses(const Graph& g) : readers(g.values().size()), is_output(g.values().size(), 0) {
    for (size_t i = 0; i < g.nodes().size(); ++i)
      for (ValueId v : g.node(static_cast<int>(i)).inputs) readers[static_cast<size_t>(v)].push_back(static_cast<int>(i));
    for (ValueId o : g.outputs()) is_output[static_cast<size_t>(o)] = 1;
  }
  // Whether node `node` is v's one reader (reading it once) and v is no graph output.
  bool only(ValueId v, int node) const {
    return !is_output[static_cast<size_t>(v)] && readers[static_cast<size_t>(v)] == std::vector<int>{node};
  }
};

}  // namespace weft::compiler
