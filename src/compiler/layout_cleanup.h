// Removes layout round trips: a TRANSPOSE whose input is a TRANSPOSE with the inverse permutation
// (or a RESHAPE of a RESHAPE back to the original shape) is the identity, so its users read the
// first one's input instead. Lowering puts explicit NCHW->NHWC / NHWC->NCHW permutes around every
// custom shader node (the resource contract is explicit); between two adjacent shader regions (or a
// shader and an NHWC convolution) they cancel here. An optimisation only: the graph means the same.
#pragma once

#include <vector>

#include "weft/graph.h"

namespace weft::compiler {

struct LayoutCleanupStats {
  int pairs_removed = 0;  // identity pairs whose second node was bypassed
  int nodes_removed = 0;  // nodes left without users and dropped
};

// The graph without nodes whose results nothing needs (nodes without outputs, which have effects,
// stay). Node order is kept.
Graph prune_graph(const Graph& g);
// Appends a copy of node `i` of `from` to `to`: its inputs read through `map` (value of `from` ->
// value of `to`), its outputs added to `to` under their names and recorded in `map`.
void copy_node(const Graph& from, int i, Graph& to, std::vector<ValueId>& map);

// Rewrites `g` in place (node order kept; values that become unused stay as values without
// producers only if they were graph values before — dead nodes are removed).
LayoutCleanupStats cancel_layout_pairs(Graph& g);

// Moves layout TRANSPOSEs past the operators around them where the same result needs fewer
// copies: a channel shuffle written through NCHW (TRANSPOSE to NCHW, RESHAPE splitting C,
// TRANSPOSE swapping the halves, RESHAPE merging) becomes the shuffle in NHWC followed by one
// TRANSPOSE, TRANSPOSE -> SLICE -> inverse TRANSPOSE becomes one SLICE with the window
// permuted, and TRANSPOSE -> RESHAPE that only splits axes -> TRANSPOSE becomes a RESHAPE of the
// first TRANSPOSE's input and one TRANSPOSE (MaxViT's window partition through NCHW). Run before
// cancel_layout_pairs. Returns the number of rewrites; the graph means the
// same (graph outputs keep their names).
int sink_layout_transposes(Graph& g);

}  // namespace weft::compiler
