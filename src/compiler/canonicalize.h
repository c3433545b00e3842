// Algebraic canonical forms, so that the partitioner's matchers see one form of a computation
// whoever wrote the graph. Each rewrite keeps the function (up to the rounding of the operators
// involved) and graph outputs keep their values.
#pragma once

#include "weft/graph.h"

namespace weft::compiler {

struct CanonicalizeStats {
  int rsqrt = 0;     // RECIPROCAL(POW(x, 0.5)) -> RSQRT(x)
  int commuted = 0;  // ADD / MUL(constant, x) -> (x, constant)
  int reshapes = 0;  // RESHAPE(RESHAPE(x)) -> RESHAPE(x)
  int merged_matmuls = 0;  // MATMULs folded into a sibling's wider one
  int column_scales = 0;   // MULs of a column range moved in front of its SLICE
  int constant_adds = 0;   // ADD(ADD(x, c1) [-> RESHAPE], c2) -> [RESHAPE] ADD(x, c1 + c2)
  int common = 0;          // nodes merged into an identical one (same operator, inputs, attributes)
  int identities = 0;      // MUL(x, 1) dropped, CLAMP(CLAMP(x)) merged
  int activations = 0;     // GELU, sigmoid, hard-swish and quick GELU written by hand, in the matched form
  int tiles = 0;           // TILEs that only broadcast an operand of an element-wise operator, dropped
  int padding_taps = 0;    // convolutions whose kernel lost the taps that only ever read padding
};

// What the rewrites below did, for `--explain` ("3 repeated computations merged, 4 hand-written
// activations put in the fused form, ..."); empty when none that a reader would look for ran (the
// commuting and the RESHAPE merge are left out).
std::string canonical_summary(const CanonicalizeStats& s);

// Rewrites `g` in place; nodes left without users are pruned.
//  - RECIPROCAL(POW(x, 0.5)) -> RSQRT(x) when the POW's result is read only there (a division by
//    a square root as frameworks export it: x / sqrt(var + eps) in hand-written layer norms,
//    torch.rsqrt exported as Sqrt and Div; TOSA has RSQRT but no square root).
//  - RESHAPE(RESHAPE(x)) -> RESHAPE(x) where the inner result is read only there and x is not
//    itself a RESHAPE, TRANSPOSE or SLICE result: the same elements in the same order, and one
//    RESHAPE between a 3-D MatMul's bias and a residual ADD is what the partitioner's post-op chain
//    passes (torch 2.x's ViT: Gemm -> [S, E] -> [S, 1, E] -> ADD). Inside a view chain two steps
//    can be a strided view where the merged one is not, so those stay.
//  - ADD(c, x) and MUL(c, x) with c a constant and x not -> ADD(x, c), MUL(x, c): both are exactly
//    commutative (also in floating point) and broadcast both ways, and the fusions look for the
//    constant second (ConvNeXt's layer scale is exported as Mul(gamma, x)).
//  - A node identical to an earlier one (same operator, same inputs after the merges before it,
//    same attributes and result types) is dropped and its readers read the earlier result; small
//    constants (up to 64 elements) with the same bytes count as identical. torch.var computes the
//    mean that the layer norm around it computed already, and exporters repeat scalars per node:
//    one computation each, so that the layer-norm matcher sees d = x - mean read three times. Exact
//    (the same operation on the same values). Graph outputs, effects (VARIABLE*), sub-graphs
//    (COND_IF, WHILE_LOOP), CUSTOM nodes and RESHAPEs (free; see the sibling merge) are left alone.
//  - MUL(x, 1) -> x, 1 a one-element constant (x * 1 is x, NaN and -0 included; the importer
//    leaves one where a Div(1, s) became RECIPROCAL(s) * 1; a per-channel factor of ones, a layer
//    norm's gamma as initialised, stays: the fusions take it as the affine part), and CLAMP(CLAMP(x, a, b), c, d) -> CLAMP(x, max(a, c), min(b, d))
//    where the ranges meet and both handle NaN alike (ReLU6 exported as Relu then Clip).
//  - GELU as HF BERT writes it, x * 0.5 * (1 + erf(x / sqrt 2)) = MUL(MUL(x, 0.5), 1 + erf), or
//    as x * (0.5 + 0.5 * erf(...)) -> MUL(MUL(x, 1 + erf), 0.5), nn.GELU's exported order (equal
//    but where halving is inexact: subnormals, overflow); 1 / (1 + exp(-x)) -> SIGMOID(x) (SiLU
//    written x / (1 + exp(-x)) then matches as swish); hard-swish as written by hand (timm, YOLOv5), x * clamp(x + 3, 0, 6) / 6
//    with the 1/6 last or on the clamp -> x * clamp(x * 1/6 + 0.5, 0, 1), the importer's HardSwish
//    (the same function, each element within the rounding of the steps); x * sigmoid(beta * x),
//    beta a constant other than 1 (CLIP's quick GELU, 1.702) -> t * sigmoid(t) * (1 / beta) with
//    t = beta * x (within a few roundings). The GEMM, convolution and element-wise fusions then take
//    each as one activation (quick GELU as SCALE+SWISH+SCALE).
//  - ADD(ADD(x, c1) [-> RESHAPE], c2), c1 and c2 constants of x's float type, x not broadcast and
//    the values between read only there -> [RESHAPE(x) ->] ADD(x, c), c = c1 + c2 computed once
//    (c1 read through the RESHAPE, which must not cut across an axis group it is broadcast on).
//    Swin's shifted windows add the relative-position bias [1, H, N, N] to the scores [nW, H, N, N],
//    reshape them to [1, nW, H, N, N] and add the shift mask [1, nW, 1, N, N]: one ADD of a
//    [1, nW, H, N, N] constant instead, which a GEMM takes as one post-op (and the fused attention
//    as its mask) and oneDNN runs without a broadcast in the middle. Each element rounds once
//    where it rounded twice: x + (c1 + c2) against (x + c1) + c2, equal where either constant is 0
//    there (Swin's mask is 0 or -100, and a score shifted by -100 vanishes in the softmax).
//  - MATMULs that read the same A with constant B's of the same K (attention's query, key and
//    value projections written as three Linear layers), each with its own constant bias ADD or all
//    without one -> one MATMUL over the B's concatenated along N (and one ADD of the concatenated
//    biases), whose column ranges are SLICEd out. Every output element is the same sum in the same
//    order; the wider GEMM fills a GPU that three 128 x 256 ones left mostly idle, and the slices
//    are strided views to the attention MATMULs that read them (the form of a fused in_proj, as
//    nn.MultiheadAttention exports it). The concatenated weights are a new constant.
//    The 3-D MatMuls of a batch > 1, which the importer writes as RESHAPE -> MATMUL -> RESHAPE,
//    are left alone here: a backend that cannot read the slices' strided views in place (oneDNN
//    with attention's split batch axis) would copy them, and the BERT encoder at batch 4 ran 3%
//    slower so.
//  - MUL(SLICE(y) [-> RESHAPEs / TRANSPOSEs], s), s one value, where the SLICE takes a range of
//    y's last axis (whole along the others) and every other reader of y is a SLICE of a disjoint
//    range -> the SLICE (and the views) of MUL(y, c), c holding s on that range and 1 elsewhere:
//    attention's query scaled by 1/sqrt(d) after it is sliced out of a packed in_proj
//    (nn.MultiheadAttention's export: ViT, nn.TransformerEncoder), or a key scaled after its
//    TRANSPOSE. (torch 2.11 slices q, k, v along the first axis of a transposed [3, S, 1, 1, E]
//    view instead: not this form.) Every element is the same product (x * 1 is x exactly),
//    the per-column MUL fuses into the projection GEMM as a post-op, and the query stays a strided
//    view of the projection that the attention reads in place (no copy, no separate MUL).
//  - OP(x, u(TILE(v))) with OP an element-wise ADD / SUB / MUL / MAXIMUM / MINIMUM, x of the
//    result's shape, TILE a pure broadcast (v is the result's shape with some axes 1) and u a chain
//    of up to 8 element-wise functions of one operand (RECIPROCAL, EXP, CLAMP, ...), each value
//    read only by the next -> OP(x, u(v)), which broadcasts v itself: ONNX's Expand in front of a
//    division (F.normalize exports x / expand(clamp(norm, eps)): Swin V2's cosine attention, 24
//    such TILEs). Bit for bit the same (u computes each element from the same value) with one
//    pass less and u on the small tensor.
//  - CONV2D / DEPTHWISE_CONV2D with a constant kernel read only there, whose outer taps along H or
//    W read only padding for every output position (an atrous convolution whose dilation is at
//    least the input's extent: DeepLabV3's ASPP at dilations 24 and 36 on a 14 x 14 or 28 x 28
//    map) -> the same convolution with those taps cut from the kernel and the padding and dilation
//    adjusted (a kernel axis of one tap gets dilation 1): a 3 x 3 that is really a 1 x 1 runs as
//    one. Exact: TOSA's convolutions skip a tap whose input position is outside the input (no
//    product with padding is formed), so the sum has the same terms; backends may add them in
//    another order.
CanonicalizeStats canonicalize(Graph& g);
// The convolution-tap pruning of canonicalize() on its own; returns how many kernels it cut.
int prune_padding_taps(Graph& g);

// The last rewrite of canonicalize() on its own; returns how many MULs it moved.
int fold_slice_scales(Graph& g);

// The node merge and the identity removal of canonicalize() on their own; each returns how many
// nodes it merged (computations: the constants merged along are not counted) or dropped.
int merge_common_nodes(Graph& g);
int drop_identities(Graph& g);
int canonical_activations(Graph& g);

// The constant-ADD fold of canonicalize() on its own; returns how many ADD pairs became one.
int fold_constant_adds(Graph& g);

// The sibling-MATMUL merge on its own (canonicalize() runs it without `through_reshapes`). With
// `through_reshapes`, also the batched form x [B, S, K] -> RESHAPE [1, B*S, K] -> MATMUL ->
// RESHAPE [B, S, N] (-> ADD): the siblings reshaping the same x become one RESHAPE, MATMUL over
// the concatenated B's, RESHAPE [B, S, N_total] (and ADD), and each member's result a SLICE of
// that. Model::from_module asks for it when the leading backend reads split-batch views in place
// (Backend::reads_split_views: the Vulkan GEMMs). Returns how many MATMULs were folded into another.
int merge_sibling_matmuls(Graph& g, bool through_reshapes);

// Gives each SLICE of a RESHAPE / TRANSPOSE chain's result its own copy of the chain, where every
// reader of that result is a SLICE feeding a MATMUL operand through views alone (torch 2.x's
// nn.MultiheadAttention: q, k and v taken from one transposed [3, S, B, 1, E] view of the packed
// projection). Each chain is then private to one MATMUL operand, which a backend that reads strided
// views (Backend::reads_split_views) reads in place: the shared TRANSPOSE is never written. Where a
// backend copied the views instead, each copy would move the whole chain, so Model::build asks for
// it only for such backends. Returns how many chain copies it made.
int unshare_view_chains(Graph& g);

}  // namespace weft::compiler
