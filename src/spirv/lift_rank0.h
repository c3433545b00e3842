// Rank-0 tensors in SPIR-V: SPV_ARM_tensors requires Rank > 0 (spirv-val: "Rank ... must define a
// value greater than 0"; MLIR's arm.tensor type: "do not support rank zero"), so the encoder
// writes a module whose rank-0 tensors are lifted to rank 1, shape [1] (docs/spirv.md).
#pragma once

#include <optional>

#include "weft/graph.h"

namespace weft::spirv {

// The module with every rank-0 tensor value (graph inputs and outputs, CONST values, operator
// results) of shape [1] instead; nullopt when it has none. Operators whose result rank depends on
// their input's are rewritten to keep their meaning: a RESHAPE to [] reshapes to [1]; an ARGMAX of
// a rank-1 input reshapes it to [1, N] first and reduces axis 1. The result is verified.
// Throws Error(kUnsupported) naming the node where a rank-0 result cannot be lifted so.
std::optional<Module> lift_rank0(const Module& module);

}  // namespace weft::spirv
