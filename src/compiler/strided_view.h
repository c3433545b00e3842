// Strided views: a tensor's elements addressed as base + sum(index[i] * strides[i]). A chain of
// TRANSPOSE and RESHAPE nodes over a contiguous tensor is often such a view of it, so a kernel that
// takes strided operands (oneDNN's matmul, reorders) can read the original memory directly and the
// chain costs nothing. Used by the partitioner (to decide what to absorb) and by backends.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "weft/graph.h"

namespace weft::compiler {

struct StridedView {
  Shape dims;
  std::vector<int64_t> strides;  // in elements
  int64_t offset = 0;            // of element [0,...,0] from the base, in elements (after a SLICE)
  // split > 1: dims[0] is two axes merged that one stride cannot address (attention's batch and
  // heads, [B, H, S, dh] read as [B*H, S, dh]): index i of dims[0] is at (i / split) * outer +
  // (i % split) * strides[0]. Only reshape_view (merging the first two axes, and only as a last
  // step: nothing applies to a split view but an identity reshape) and the chains below make it.
  int64_t split = 0, outer = 0;

  static StridedView contiguous(const Shape& dims);
  bool is_contiguous() const;
};

// The view after a TRANSPOSE with `perms`.
StridedView transpose_view(const StridedView& v, const std::vector<int64_t>& perms);
// The view of the same elements (in row-major order) with shape `to`, or nullopt when that is not
// expressible with strides (it would need a copy). With `allow_split`, merging the first two axes
// where strides cannot gives a split view (StridedView::split), for consumers that address one.
std::optional<StridedView> reshape_view(const StridedView& v, const Shape& to, bool allow_split = false);
// The view of SLICE(start, size) of `v`.
StridedView slice_view(const StridedView& v, const std::vector<int64_t>& start, const Shape& size);
// SLICE(start, size) of RESHAPE(v, to) where strides cannot express the reshape itself: `to`
// merges runs of v's dimensions (ShuffleNet's channel shuffle merges [C/2, 2] with strides
// [1, C/2] back into C), and each merged run is sliced on its outermost dimension only (start and
// size multiples of the product of the run's inner dimensions; the inner ones whole). The result
// keeps v's rank: its dimensions in row-major order are the slice's elements in row-major order, so
// a copy over them into contiguous memory writes the slice. nullopt otherwise (a split view too).
std::optional<StridedView> slice_merged_view(const StridedView& v, const Shape& to, const std::vector<int64_t>& start,
                                             const Shape& size);
// Applies TRANSPOSE, RESHAPE or SLICE node `n` of `g` to `v`; nullopt for other ops, a
// copy-needing reshape, or a SLICE whose start is not a constant.
std::optional<StridedView> apply_node(const Graph& g, const Node& n, const StridedView& v, bool allow_split = false);
// Where SLICE node `n`'s result is one contiguous run of its input (every axis before the first
// sliced one has size 1, every axis after it is whole: an LSTM's gates split out of one vector),
// the run's offset in elements, so that the result can be a view of the input's storage; nullopt
// otherwise, or when start / size are not constants.
std::optional<int64_t> contiguous_slice_offset(const Graph& g, const Node& n);
// The view of the value entering `chain` (node indices, in order, each consuming the previous
// one's output) as seen at the chain's end, starting from contiguous memory. A value on the way
// need not be a strided view itself: each axis is then carried as several strided parts (torch's
// seq-first heads, [S, B, E] -> [S, B*H, D] -> [B*H, S, D]: B and H merged with unrelated
// strides), and the end must have one part per axis (two on the first with `allow_split`).
std::optional<StridedView> forward_chain(const Graph& g, const std::vector<int>& chain, bool allow_split = false);
// For a chain from value M to value Y: where M's elements live inside Y's contiguous memory,
// i.e. the view of M that writes Y. nullopt when not expressible (a SLICE never is: it drops
// elements). Values on the way as in forward_chain.
std::optional<StridedView> backward_chain(const Graph& g, const std::vector<int>& chain, bool allow_split = false);

// ShuffleNet's channel shuffle followed by the next block's split, as one copy per half: a
// TRANSPOSE whose result only SLICEs read (through RESHAPEs), each SLICE a strided view of the
// TRANSPOSE's input (slice_merged_view where a RESHAPE after the TRANSPOSE merges what strides
// cannot). Each SLICE's result is then a copy over its view of that input, and the TRANSPOSE is
// never written. Where the input is (through RESHAPEs) a CONCAT of two equal pieces along the last
// axis and every view takes both pieces by one dimension of extent 2 whose stride is a piece's
// width, the views address the pieces themselves (`select` chooses the piece) and the CONCAT is
// never written either.
struct SliceCopy {
  int slice = -1;     // the SLICE node whose result the copy writes (contiguously)
  StridedView view;   // of sources[0]; with select >= 0 of sources[select index]
  int select = -1;    // the view's dimension (extent 2, stride 0) that picks sources[0] or sources[1]
};
struct TransposeFold {
  int transpose = -1;
  int concat = -1;               // the CONCAT read in pieces, or -1
  std::vector<ValueId> sources;  // the TRANSPOSE's input (before its RESHAPEs), or the CONCAT's two pieces
  std::vector<int> views;        // the RESHAPE / IDENTITY nodes folded with it, ascending
  std::vector<SliceCopy> copies; // one per SLICE, ascending by node
};
// The fold of TRANSPOSE node `t`, or nullopt. `readers[v]` lists the nodes reading value v;
// `joinable(n)` says whether node n (a reader on the way, or the CONCAT and RESHAPEs before the
// TRANSPOSE) may be folded with it; `escapes(v)` whether value v is needed outside the fold (an
// output), which keeps a RESHAPE's, the TRANSPOSE's or the CONCAT's result from being folded.
std::optional<TransposeFold> fold_transpose(const Graph& g, int t, const std::vector<std::vector<int>>& readers,
                                            const std::function<bool(int)>& joinable,
                                            const std::function<bool(ValueId)>& escapes);

}  // namespace weft::compiler
