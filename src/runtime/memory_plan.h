// The memory planner: where every value of an entry graph lives during a run. Intermediates share
// one arena, placed by liveness (two values overlap in memory only if their lifetimes do not), and
// elementwise operators write in place over an input that dies at that node.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/interval_pack.h"
#include "weft/graph.h"

namespace weft::runtime {

enum class Place : uint8_t {
  kInput,     // a graph input: the caller's tensor
  kConstant,  // a CONST node's values, used in place
  kAlias,     // a view of another value's storage (IDENTITY, RESHAPE): no storage of its own
  kArena,     // a slice of the context's arena at `offset`
  kOutput,    // a graph output: its own buffer (runtime-allocated or the caller's)
  kInternal,  // lives only inside a fused kernel (an interior value of a composite): no storage
};

struct ValuePlan {
  Place place = Place::kArena;
  size_t offset = 0;  // kArena: byte offset in the arena (64-byte aligned)
  size_t bytes = 0;   // storage size of the value
  int output_index = -1;  // kOutput: index into the graph's outputs
};

// One kernel execution: a node, or a fused group of nodes, run at its position in `steps` order.
struct Step {
  std::vector<ValueId> inputs;   // values read (repeats allowed)
  std::vector<ValueId> outputs;  // values written; every other value of a fused group is kInternal
  bool constant = false;         // CONST: the output is the node's data, used in place
  bool forwards = false;         // IDENTITY / RESHAPE: the output is a view of inputs[0]
  bool in_place_ok = false;      // the single output may overwrite a same-typed input dying here
  int in_place_input = -1;       // with in_place_ok: only inputs[in_place_input] (-1: any input)
  size_t workspace_bytes = 0;    // working memory needed during this step only
};

struct MemoryPlan {
  std::vector<ValuePlan> values;     // per ValueId of the graph
  std::vector<bool> in_place;        // per step: its output reuses a dying input's slice
  std::vector<size_t> workspace;     // per step: arena offset of its working memory
  size_t workspace_bytes = 0;        // largest single workspace
  size_t arena_bytes = 0;            // peak: the arena's size
  size_t intermediate_bytes = 0;     // sum of the sizes of all arena values
  int intermediates = 0;             // number of arena values
  int in_place_nodes = 0;
};

inline constexpr size_t kArenaAlignment = 64;

// Interval packing (pack_intervals, core/interval_pack.h) is the planner's placement rule.
using weft::Interval;
using weft::pack_intervals;

// Plans `steps` of graph `g` (in an order where every value is written before it is read).
MemoryPlan plan_memory(const Graph& g, const std::vector<Step>& steps);
// One step per node of `g` (topological order, as the verifier guarantees), with the reference
// kernels' rules: elementwise operators may run in place.
MemoryPlan plan_memory(const Graph& g);
std::vector<Step> node_steps(const Graph& g);

}  // namespace weft::runtime
