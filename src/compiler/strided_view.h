// Strided views: a tensor's elements addressed as base + sum(index[i] * strides[i]). A chain of
// TRANSPOSE and RESHAPE nodes over a contiguous tensor is often such a view of it, so a kernel that
// takes strided operands (oneDNN's matmul, reorders) can read the original memory directly and the
// chain costs nothing. Used by the partitioner (to decide what to absorb) and by backends.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "weft/graph.h"

namespace weft::compiler {

struct StridedView {
  Shape dims;
  std::vector<int64_t> strides;  // in elements
  int64_t offset = 0;            // of element [0,...,0] from the base, in elements (after a SLICE)

  static StridedView contiguous(const Shape& dims);
  bool is_contiguous() const;
};

// The view after a TRANSPOSE with `perms`.
StridedView transpose_view(const StridedView& v, const std::vector<int64_t>& perms);
// The view of the same elements (in row-major order) with shape `to`, or nullopt when that is not
// expressible with strides (it would need a copy).
std::optional<StridedView> reshape_view(const StridedView& v, const Shape& to);
// The view of SLICE(start, size) of `v`.
StridedView slice_view(const StridedView& v, const std::vector<int64_t>& start, const Shape& size);
// Applies TRANSPOSE, RESHAPE or SLICE node `n` of `g` to `v`; nullopt for other ops, a
// copy-needing reshape, or a SLICE whose start is not a constant.
std::optional<StridedView> apply_node(const Graph& g, const Node& n, const StridedView& v);
// The view of the value entering `chain` (node indices, in order, each consuming the previous
// one's output) as seen at the chain's end, starting from contiguous memory.
std::optional<StridedView> forward_chain(const Graph& g, const std::vector<int>& chain);
// For a chain from value M to value Y: where M's elements live inside Y's contiguous memory,
// i.e. the view of M that writes Y. nullopt when not expressible (a SLICE never is: it drops
// elements).
std::optional<StridedView> backward_chain(const Graph& g, const std::vector<int>& chain);

}  // namespace weft::compiler
