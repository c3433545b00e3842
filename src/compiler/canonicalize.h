// Algebraic canonical forms, so that the partitioner's matchers see one form of a computation
// whoever wrote the graph. Each rewrite keeps the function (up to the rounding of the operators
// involved) and graph outputs keep their values.
#pragma once

#include "weft/graph.h"

namespace weft::compiler {

struct CanonicalizeStats {
  int rsqrt = 0;  // RECIPROCAL(POW(x, 0.5)) -> RSQRT(x)
};

// Rewrites `g` in place; nodes left without users are pruned.
//  - RECIPROCAL(POW(x, 0.5)) -> RSQRT(x) when the POW's result is read only there (a division by
//    a square root as frameworks export it: x / sqrt(var + eps) in hand-written layer norms,
//    torch.rsqrt exported as Sqrt and Div; TOSA has RSQRT but no square root).
CanonicalizeStats canonicalize(Graph& g);

}  // namespace weft::compiler
