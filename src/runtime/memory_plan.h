// The memory planner: where every value of an entry graph lives during a run. Intermediates share
// one arena, placed by liveness (two values overlap in memory only if their lifetimes do not), and
// elementwise operators write in place over an input that dies at that node.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "weft/graph.h"

namespace weft::runtime {

enum class Place : uint8_t {
  kInput,     // a graph input: the caller's tensor
  kConstant,  // a CONST node's values, used in place
  kAlias,     // a view of another value's storage (IDENTITY, RESHAPE): no storage of its own
  kArena,     // a slice of the context's arena at `offset`
  kOutput,    // a graph output: its own buffer (runtime-allocated or the caller's)
  kDynamic,   // computed by a kernel that allocates its result (none planned today; reserved)
};

struct ValuePlan {
  Place place = Place::kArena;
  size_t offset = 0;  // kArena: byte offset in the arena (64-byte aligned)
  size_t bytes = 0;   // storage size of the value
  int output_index = -1;  // kOutput: index into the graph's outputs
};

struct MemoryPlan {
  std::vector<ValuePlan> values;     // per ValueId of the graph
  std::vector<bool> in_place;        // per node: its output reuses a dying input's slice
  size_t arena_bytes = 0;            // peak: the arena's size
  size_t intermediate_bytes = 0;     // sum of the sizes of all arena values
  int intermediates = 0;             // number of arena values
  int in_place_nodes = 0;
};

inline constexpr size_t kArenaAlignment = 64;

// Plans `g` (nodes in topological order, as the verifier guarantees).
MemoryPlan plan_memory(const Graph& g);

}  // namespace weft::runtime
