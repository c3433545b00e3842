// The partitioner: matches composites (pad + convolution + residual add + activation, transposed
// operands + matmul + bias + activation, ...) in an entry graph and assigns every node to a backend
// by the user's priority, falling back to later backends (the reference backend runs everything).
#pragma once

#include <string>
#include <vector>

#include "backends/backend.h"
#include "weft/graph.h"

namespace weft::compiler {

// One unit of execution: a composite and the backend that runs it.
struct Unit {
  backend::Composite composite;
  const backend::Backend* backend = nullptr;
  // Why the backends preferred over `backend` did not take it ("name: reason" per backend).
  std::vector<std::string> declined;
};

struct Partition {
  std::vector<const backend::Backend*> priority;
  std::vector<Unit> units;        // in execution order (each runs at its last node's position)
  std::vector<int> unit_of_node;  // per node of the graph
};

// Backend names -> backends. Empty = every available backend in default order; {"cpu"} = those of
// them that run on the host CPU (oneDNN, the reference), in the same order. Unknown names, "cpu"
// among other names and backends unavailable on this machine are errors naming the backends there
// are. The reference backend is appended when missing, so that every node has a home.
std::vector<const backend::Backend*> resolve_backends(const std::vector<std::string>& names);

// Whether a partition for these backend names follows the default rules (PartitionOptions::
// default_priority): no names, or "cpu" (the CPU backends as a machine without a GPU has them).
// Any other list is a priority the user chose, honoured as given.
bool default_rules(const std::vector<std::string>& names);

struct PartitionOptions {
  bool nan_exact = false;  // only give a backend what it computes with TOSA's exact NaN semantics
  // The default rules apply (the user named no backends, or "cpu": default_rules): backends are
  // asked takes_by_default() too.
  bool default_priority = false;
};

// Partitions graph `g` of `m`. Deterministic for a given graph, priority list and options.
Partition partition_graph(const Module& m, const Graph& g, const std::vector<const backend::Backend*>& priority,
                          const PartitionOptions& options = {});

// Human-readable report: a summary per backend, then one line per unit (backend, pattern, nodes)
// and, for each unit not on the first backend, why the preferred backends declined it.
std::string explain(const Graph& g, const Partition& p);
// Operators that compute nothing (constants and views); explain and placement leave them out.
bool is_view_or_const(Op op);

}  // namespace weft::compiler
