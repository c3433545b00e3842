// Static checks of TOSA graphs: shape and type inference and every ERROR_IF condition of the
// TOSA 1.0 specification that can be decided before running.
#pragma once

#include <vector>

#include "weft/error.h"
#include "weft/graph.h"

namespace weft {

// Output types of `node` (its inputs and attrs set; its outputs are ignored) inside graph `g`.
// Shape-valued inputs are read from their CONST_SHAPE producers. `module` resolves sub-graphs of
// COND_IF / WHILE_LOOP (may be null when the node has none).
// Throws Error(kVerify) naming the node, the operand and the rule.
std::vector<TensorType> infer_output_types(const Graph& g, const Node& node, const Module* module);

// Checks one node completely: operand counts and kinds, ranks, types against the op's type
// support for `profiles`, attribute kinds and values, ERROR_IF rules, and that declared output
// types equal the inferred ones. Appends diagnostics to `errors`.
void verify_node(const Module* module, const Graph& g, int node_index, ProfileSet profiles,
                 std::vector<Error>& errors);

// Checks a whole module: graph structure (values defined once, used after definition, no
// cycles, outputs produced, sub-graph references resolve with matching signatures) and every
// node. Returns all diagnostics (empty = valid).
std::vector<Error> verify_module(const Module& module);
// Throws the first diagnostic of verify_module, with a count of the others in its message.
void verify_or_throw(const Module& module);

// The value of a shape_t operand when it is produced by CONST_SHAPE (nullopt otherwise).
std::optional<std::vector<int64_t>> constant_shape_value(const Graph& g, ValueId v);
// The values of a tensor produced by CONST (nullptr otherwise).
const Tensor* constant_tensor_value(const Graph& g, ValueId v);

}  // namespace weft
