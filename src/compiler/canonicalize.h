// Algebraic canonical forms, so that the partitioner's matchers see one form of a computation
// whoever wrote the graph. Each rewrite keeps the function (up to the rounding of the operators
// involved) and graph outputs keep their values.
#pragma once

#include "weft/graph.h"

namespace weft::compiler {

struct CanonicalizeStats {
  int rsqrt = 0;     // RECIPROCAL(POW(x, 0.5)) -> RSQRT(x)
  int commuted = 0;  // ADD / MUL(constant, x) -> (x, constant)
};

// Rewrites `g` in place; nodes left without users are pruned.
//  - RECIPROCAL(POW(x, 0.5)) -> RSQRT(x) when the POW's result is read only there (a division by
//    a square root as frameworks export it: x / sqrt(var + eps) in hand-written layer norms,
//    torch.rsqrt exported as Sqrt and Div; TOSA has RSQRT but no square root).
//  - ADD(c, x) and MUL(c, x) with c a constant and x not -> ADD(x, c), MUL(x, c): both are exactly
//    commutative (also in floating point) and broadcast both ways, and the fusions look for the
//    constant second (ConvNeXt's layer scale is exported as Mul(gamma, x)).
CanonicalizeStats canonicalize(Graph& g);

}  // namespace weft::compiler
