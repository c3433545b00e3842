// Strided views through TRANSPOSE / RESHAPE chains: hand-checked cases, and brute force — every
// element's address in a view equals the address the same element has when the chain is actually
// executed (by index math, and by the reference interpreter on an iota tensor); a view is refused
// exactly when no strides can express the element mapping.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "compiler/strided_view.h"
#include "weft/graph.h"
#include "weft/interpreter.h"

namespace weft {
namespace {

using compiler::StridedView;

int64_t flat_index(const Shape& dims, const std::vector<int64_t>& idx) {
  int64_t f = 0;
  for (size_t i = 0; i < dims.size(); ++i) f = f * dims[i] + idx[i];
  return f;
}

// Calls fn(idx, flat) for every multi-index of `dims` in row-major order.
template <class Fn>
void for_each_index(const Shape& dims, Fn fn) {
  const int64_t n = shape_elements(dims);
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    fn(idx, k);
    for (size_t i = dims.size(); i-- > 0;) {
      if (++idx[i] < dims[i]) break;
      idx[i] = 0;
    }
  }
}

int64_t address(const StridedView& v, const std::vector<int64_t>& idx) {
  int64_t a = 0;
  for (size_t i = 0; i < idx.size(); ++i) a += idx[i] * v.strides[i];
  return a;
}

// The view addresses element k (row-major) at addr[k], for every k.
void expect_addresses(const StridedView& v, const std::vector<int64_t>& addr) {
  ASSERT_EQ(v.dims.size(), v.strides.size());
  ASSERT_EQ(shape_elements(v.dims), static_cast<int64_t>(addr.size()));
  int bad = 0;
  for_each_index(v.dims, [&](const std::vector<int64_t>& idx, int64_t k) {
    if (address(v, idx) != addr[static_cast<size_t>(k)] && bad++ < 5)
      ADD_FAILURE() << "element " << k << " of " << shape_str(v.dims) << ": view address " << address(v, idx)
                    << ", actual " << addr[static_cast<size_t>(k)];
  });
}

// Whether some strides (and no offset) address element k of `dims` at addr[k] for all k.
bool expressible(const Shape& dims, const std::vector<int64_t>& addr) {
  if (addr.empty()) return true;
  if (addr[0] != 0) return false;
  StridedView v{dims, std::vector<int64_t>(dims.size(), 0)};
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 2) continue;
    std::vector<int64_t> unit(dims.size(), 0);
    unit[i] = 1;
    v.strides[i] = addr[static_cast<size_t>(flat_index(dims, unit))];
  }
  bool ok = true;
  for_each_index(dims, [&](const std::vector<int64_t>& idx, int64_t k) { ok &= address(v, idx) == addr[static_cast<size_t>(k)]; });
  return ok;
}

// Addresses (in the contiguous source of shape `src`) of the elements of TRANSPOSE(src, perms),
// by the TOSA definition: output[index] = input[tmp] with tmp[perms[i]] = index[i].
std::vector<int64_t> transposed_addresses(const Shape& src, const std::vector<int64_t>& perms) {
  Shape out;
  for (int64_t p : perms) out.push_back(src[static_cast<size_t>(p)]);
  std::vector<int64_t> addr(static_cast<size_t>(shape_elements(out)));
  for_each_index(out, [&](const std::vector<int64_t>& idx, int64_t k) {
    std::vector<int64_t> tmp(src.size());
    for (size_t i = 0; i < perms.size(); ++i) tmp[static_cast<size_t>(perms[i])] = idx[i];
    addr[static_cast<size_t>(k)] = flat_index(src, tmp);
  });
  return addr;
}

// Every shape with 24 elements used by the exhaustive and random tests.
const std::vector<Shape>& shapes24() {
  static const std::vector<Shape> s = {{24},      {2, 12},      {12, 2},       {4, 6},       {6, 4},       {3, 8},
                                       {2, 3, 4}, {4, 3, 2},    {2, 2, 6},     {3, 2, 4},    {2, 2, 2, 3}, {1, 2, 3, 4},
                                       {2, 1, 12}, {3, 1, 2, 1, 4}, {1, 24, 1}, {2, 3, 2, 2}, {4, 1, 6}};
  return s;
}

// ---------------------------------------------------------------------------------------------
// Hand-checked cases

TEST(StridedView, Contiguous) {
  StridedView v = StridedView::contiguous({2, 3, 4});
  EXPECT_EQ(v.dims, (Shape{2, 3, 4}));
  EXPECT_EQ(v.strides, (std::vector<int64_t>{12, 4, 1}));
  EXPECT_TRUE(v.is_contiguous());
  StridedView scalar = StridedView::contiguous({});
  EXPECT_TRUE(scalar.dims.empty());
  EXPECT_TRUE(scalar.strides.empty());
  EXPECT_TRUE(scalar.is_contiguous());
  EXPECT_EQ(StridedView::contiguous({2, 0, 3}).strides, (std::vector<int64_t>{3, 3, 1}));
  EXPECT_EQ(StridedView::contiguous({5}).strides, (std::vector<int64_t>{1}));
}

TEST(StridedView, IsContiguousIgnoresSizeOneDims) {
  EXPECT_TRUE((StridedView{{2, 1, 3}, {3, 99, 1}}.is_contiguous()));
  EXPECT_TRUE((StridedView{{1}, {7}}.is_contiguous()));
  EXPECT_FALSE((StridedView{{2, 3}, {1, 2}}.is_contiguous()));
  EXPECT_FALSE((StridedView{{2, 3}, {4, 1}}.is_contiguous()));  // padded rows
}

TEST(StridedView, TransposeView) {
  StridedView v = compiler::transpose_view(StridedView::contiguous({2, 3, 4}), {2, 0, 1});
  EXPECT_EQ(v.dims, (Shape{4, 2, 3}));
  EXPECT_EQ(v.strides, (std::vector<int64_t>{1, 12, 4}));
  EXPECT_FALSE(v.is_contiguous());
  expect_addresses(v, transposed_addresses({2, 3, 4}, {2, 0, 1}));
  // Transposing back gives the contiguous view.
  StridedView back = compiler::transpose_view(v, {1, 2, 0});
  EXPECT_EQ(back.dims, (Shape{2, 3, 4}));
  EXPECT_EQ(back.strides, (std::vector<int64_t>{12, 4, 1}));
  EXPECT_TRUE(back.is_contiguous());
}

TEST(StridedView, ReshapeOfContiguousMergesAndSplits) {
  auto merged = compiler::reshape_view(StridedView::contiguous({2, 3, 4}), {6, 4});
  ASSERT_TRUE(merged);
  EXPECT_EQ(merged->dims, (Shape{6, 4}));
  EXPECT_EQ(merged->strides, (std::vector<int64_t>{4, 1}));
  auto split = compiler::reshape_view(*merged, {2, 3, 2, 2});
  ASSERT_TRUE(split);
  EXPECT_EQ(split->strides, (std::vector<int64_t>{12, 4, 2, 1}));
  auto flat = compiler::reshape_view(*split, {24});
  ASSERT_TRUE(flat);
  EXPECT_EQ(flat->strides, (std::vector<int64_t>{1}));
}

TEST(StridedView, ReshapeWithSizeOneDims) {
  auto v = compiler::reshape_view(StridedView::contiguous({2, 3}), {1, 2, 1, 3, 1});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->dims, (Shape{1, 2, 1, 3, 1}));
  EXPECT_EQ(v->strides[1], 3);
  EXPECT_EQ(v->strides[3], 1);
  EXPECT_TRUE(v->is_contiguous());
  std::vector<int64_t> iota(6);
  std::iota(iota.begin(), iota.end(), 0);
  expect_addresses(*v, iota);
  // And removing them again, also from a transposed view.
  StridedView t = compiler::transpose_view(*v, {3, 1, 0, 2, 4});  // [3,2,1,1,1]
  auto squeezed = compiler::reshape_view(t, {3, 2});
  ASSERT_TRUE(squeezed);
  EXPECT_EQ(squeezed->strides, (std::vector<int64_t>{1, 3}));
  expect_addresses(*squeezed, transposed_addresses({2, 3}, {1, 0}));
}

// ShuffleNet's channel shuffle then one half of the channels (the next block's split): X [1,3,5,8]
// -> [1,3,5,2,4] -> TRANSPOSE [0,1,2,4,3] -> [1,3,5,8] (not a strided view: [4,2] with strides
// [1,4] merged) -> SLICE of channels [4, 8). As a view over the unmerged dimensions, every element
// of the slice is where the shuffle put it; a slice that cuts a merged run, or a reshape that
// splits, has no such view.
TEST(StridedView, SliceOfAMergedShuffle) {
  const StridedView t = compiler::transpose_view(*compiler::reshape_view(StridedView::contiguous({1, 3, 5, 8}), {1, 3, 5, 2, 4}),
                                                 {0, 1, 2, 4, 3});
  ASSERT_FALSE(compiler::reshape_view(t, {1, 3, 5, 8}));
  auto half = compiler::slice_merged_view(t, {1, 3, 5, 8}, {0, 0, 0, 4}, {1, 3, 5, 4});
  ASSERT_TRUE(half);
  EXPECT_EQ(half->dims, (Shape{1, 3, 5, 2, 2}));
  std::vector<int64_t> addr;
  for_each_index({1, 3, 5, 4}, [&](const std::vector<int64_t>& idx, int64_t) {
    const int64_t shuffled = 4 + idx[3], source = (shuffled % 2) * 4 + shuffled / 2;
    addr.push_back((idx[1] * 5 + idx[2]) * 8 + source - 2);  // (relative to the offset)
  });
  EXPECT_EQ(half->offset, 2);
  expect_addresses(*half, addr);
  // A window of rows and columns too.
  auto window = compiler::slice_merged_view(t, {1, 3, 5, 8}, {0, 1, 2, 2}, {1, 2, 3, 4});
  ASSERT_TRUE(window);
  addr.clear();
  for_each_index({1, 2, 3, 4}, [&](const std::vector<int64_t>& idx, int64_t) {
    const int64_t shuffled = 2 + idx[3], source = (shuffled % 2) * 4 + shuffled / 2;
    addr.push_back(((1 + idx[1]) * 5 + 2 + idx[2]) * 8 + source - 57);
  });
  EXPECT_EQ(window->offset, 57);
  expect_addresses(*window, addr);
  EXPECT_FALSE(compiler::slice_merged_view(t, {1, 3, 5, 8}, {0, 0, 0, 3}, {1, 3, 5, 4}));  // cuts a pair
  EXPECT_FALSE(compiler::slice_merged_view(t, {1, 3, 5, 8}, {0, 0, 0, 0}, {1, 3, 5, 3}));  // odd size
  EXPECT_FALSE(compiler::slice_merged_view(t, {1, 3, 10, 4}, {0, 0, 0, 0}, {1, 3, 10, 4}));  // splits W
}

TEST(StridedView, ReshapeAfterTranspose) {
  // [2,3,4] -> perms [2,0,1] -> [4,2,3] strides [1,12,4]: the last two dims are mergeable.
  StridedView t = compiler::transpose_view(StridedView::contiguous({2, 3, 4}), {2, 0, 1});
  const std::vector<int64_t> addr = transposed_addresses({2, 3, 4}, {2, 0, 1});
  auto merged = compiler::reshape_view(t, {4, 6});
  ASSERT_TRUE(merged);
  EXPECT_EQ(merged->strides, (std::vector<int64_t>{1, 4}));
  expect_addresses(*merged, addr);
  auto both = compiler::reshape_view(t, {2, 2, 6});  // split the first, merge the others
  ASSERT_TRUE(both);
  EXPECT_EQ(both->strides, (std::vector<int64_t>{2, 1, 4}));
  expect_addresses(*both, addr);
}

TEST(StridedView, MergingTransposedDimsNeedsACopy) {
  // [2,3,4] -> perms [0,2,1] -> [2,4,3] strides [12,1,4]: the last two dims cannot be merged.
  StridedView t = compiler::transpose_view(StridedView::contiguous({2, 3, 4}), {0, 2, 1});
  EXPECT_FALSE(compiler::reshape_view(t, {2, 12}));
  EXPECT_FALSE(compiler::reshape_view(t, {24}));
  EXPECT_FALSE(compiler::reshape_view(t, {8, 3}));
  EXPECT_FALSE(compiler::reshape_view(t, {2, 3, 4}));  // same dims as the source, other order of elements
  // Splitting or keeping dims is fine.
  auto kept = compiler::reshape_view(t, {1, 2, 4, 3});
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->strides[1], 12);
  EXPECT_EQ(kept->strides[2], 1);
  EXPECT_EQ(kept->strides[3], 4);
  auto split = compiler::reshape_view(t, {2, 2, 2, 3});
  ASSERT_TRUE(split);
  EXPECT_EQ(split->strides, (std::vector<int64_t>{12, 2, 1, 4}));
}

TEST(StridedView, ZeroSizedReshapeIsContiguous) {
  auto v = compiler::reshape_view(StridedView{{0, 3}, {1, 5}}, {3, 0});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->dims, (Shape{3, 0}));
  EXPECT_EQ(v->strides, StridedView::contiguous({3, 0}).strides);
}

// Exhaustive over 24-element shapes: reshape_view of every transposition of every shape, to every
// shape, is correct when given and refused only when no strides express the mapping.
TEST(StridedView, ReshapeOfTransposedViewsIsExactAndComplete) {
  int given = 0, refused = 0;
  for (const Shape& src : shapes24()) {
    std::vector<int64_t> perms(src.size());
    std::iota(perms.begin(), perms.end(), 0);
    do {
      StridedView t = compiler::transpose_view(StridedView::contiguous(src), perms);
      const std::vector<int64_t> addr = transposed_addresses(src, perms);
      expect_addresses(t, addr);
      for (const Shape& to : shapes24()) {
        SCOPED_TRACE(shape_str(src) + " perms " + shape_str(perms) + " -> " + shape_str(to));
        auto r = compiler::reshape_view(t, to);
        if (r) {
          ++given;
          EXPECT_EQ(r->dims, to);
          expect_addresses(*r, addr);
        } else {
          ++refused;
          EXPECT_FALSE(expressible(to, addr)) << "refused although expressible";
        }
      }
      if (HasFailure()) return;
    } while (std::next_permutation(perms.begin(), perms.end()));
  }
  EXPECT_GT(given, 1000);
  EXPECT_GT(refused, 1000);
}

// ---------------------------------------------------------------------------------------------
// Chains on graphs

TEST(StridedView, ApplyNode) {
  GraphBuilder b("main");
  ValueId x = b.input("x", {DType::kFp32, {2, 3, 4}});
  ValueId t = b.op(Op::TRANSPOSE, {x}, {{"perms", std::vector<int64_t>{0, 2, 1}}}, "t");
  ValueId r = b.op(Op::RESHAPE, {t, b.constant_shape("s", {2, 12})}, {}, "r");
  ValueId h = b.op(Op::TANH, {x}, {}, "h");
  b.output(r);
  b.output(h);
  Module m(b.finish());
  const Graph& g = m.main();
  const StridedView c = StridedView::contiguous({2, 3, 4});
  auto tv = compiler::apply_node(g, g.node(0), c);
  ASSERT_TRUE(tv);
  EXPECT_EQ(tv->dims, (Shape{2, 4, 3}));
  EXPECT_EQ(tv->strides, (std::vector<int64_t>{12, 1, 4}));
  EXPECT_FALSE(compiler::apply_node(g, g.node(2), *tv));  // the reshape needs a copy
  auto rv = compiler::apply_node(g, g.node(2), StridedView::contiguous({2, 4, 3}));
  ASSERT_TRUE(rv);
  EXPECT_EQ(rv->strides, (std::vector<int64_t>{12, 1}));
  EXPECT_FALSE(compiler::apply_node(g, g.node(3), c));  // not a view op
  EXPECT_FALSE(compiler::forward_chain(g, {}));
  EXPECT_FALSE(compiler::backward_chain(g, {}));
  EXPECT_FALSE(compiler::forward_chain(g, {0, 2}));
  EXPECT_FALSE(compiler::forward_chain(g, {0, 3}));
}

TEST(StridedView, ForwardChainAttentionHeads) {
  // x f32[1,8,2,4] -> TRANSPOSE [0,2,1,3] -> [1,2,8,4] -> RESHAPE [2,8,4]: heads as a batch.
  GraphBuilder b("main");
  ValueId x = b.input("x", {DType::kFp32, {1, 8, 2, 4}});
  ValueId t = b.op(Op::TRANSPOSE, {x}, {{"perms", std::vector<int64_t>{0, 2, 1, 3}}}, "t");
  ValueId s = b.constant_shape("s", {2, 8, 4});
  b.output(b.op(Op::RESHAPE, {t, s}, {}, "r"));
  Module m(b.finish());
  auto v = compiler::forward_chain(m.main(), {0, 2});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->dims, (Shape{2, 8, 4}));
  EXPECT_EQ(v->strides, (std::vector<int64_t>{4, 8, 1}));
}

TEST(StridedView, BackwardChainMergingHeads) {
  // M f32[2,8,4] -> RESHAPE [1,2,8,4] -> TRANSPOSE [0,2,1,3] -> RESHAPE [8,8] = Y: M[h,s,d] lands
  // at Y[s, h*4+d].
  GraphBuilder b("main");
  ValueId mv = b.input("m", {DType::kFp32, {2, 8, 4}});
  ValueId r1 = b.op(Op::RESHAPE, {mv, b.constant_shape("s1", {1, 2, 8, 4})}, {}, "r1");  // nodes 0, 1
  ValueId t = b.op(Op::TRANSPOSE, {r1}, {{"perms", std::vector<int64_t>{0, 2, 1, 3}}}, "t");  // node 2
  b.output(b.op(Op::RESHAPE, {t, b.constant_shape("s2", {8, 8})}, {}, "y"));  // nodes 3, 4
  Module m(b.finish());
  auto v = compiler::backward_chain(m.main(), {1, 2, 4});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->dims, (Shape{2, 8, 4}));
  EXPECT_EQ(v->strides, (std::vector<int64_t>{4, 8, 1}));
}

// Heads of a batch: [B, S, H, D] -> TRANSPOSE [0,2,1,3] -> RESHAPE [B*H, S, D]. The merged axis
// steps by D within a batch and by S*H*D between batches: no stride expresses it, a split axis does
// (only when asked for). Every element's address is checked against the index math, forward and
// backward (the attention output going back to [B, S, H*D]).
TEST(StridedView, ChainsSplitTheBatchOfHeads) {
  const int64_t B = 3, S = 4, H = 2, D = 5;
  auto split_address = [](const StridedView& v, int64_t i, int64_t s, int64_t d) {
    return v.offset + (i / v.split) * v.outer + (i % v.split) * v.strides[0] + s * v.strides[1] + d * v.strides[2];
  };
  {
    GraphBuilder b("main");
    ValueId x = b.input("x", {DType::kFp32, {B, S, H, D}});
    ValueId t = b.op(Op::TRANSPOSE, {x}, {{"perms", std::vector<int64_t>{0, 2, 1, 3}}}, "t");  // node 0
    b.output(b.op(Op::RESHAPE, {t, b.constant_shape("s", {B * H, S, D})}, {}, "r"));  // nodes 1, 2
    Module m(b.finish());
    EXPECT_FALSE(compiler::forward_chain(m.main(), {0, 2}));
    auto v = compiler::forward_chain(m.main(), {0, 2}, true);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->dims, (Shape{B * H, S, D}));
    EXPECT_EQ(v->split, H);
    EXPECT_FALSE(v->is_contiguous());
    for (int64_t bh = 0; bh < B * H; ++bh)
      for (int64_t s0 = 0; s0 < S; ++s0)
        for (int64_t d = 0; d < D; ++d)  // x[b, s, h, d]
          ASSERT_EQ(split_address(*v, bh, s0, d), ((bh / H * S + s0) * H + bh % H) * D + d) << bh << " " << s0 << " " << d;
    // Nothing but an identity reshape applies to a split view.
    EXPECT_TRUE(compiler::reshape_view(*v, {B * H, S, D}, true));
    EXPECT_FALSE(compiler::reshape_view(*v, {B * H, S * D}, true));
    EXPECT_FALSE(compiler::apply_node(m.main(), m.main().node(0), *v, true));
  }
  {
    GraphBuilder b("main");
    ValueId mv = b.input("m", {DType::kFp32, {B * H, S, D}});
    ValueId r1 = b.op(Op::RESHAPE, {mv, b.constant_shape("s1", {B, H, S, D})}, {}, "r1");  // nodes 0, 1
    ValueId t = b.op(Op::TRANSPOSE, {r1}, {{"perms", std::vector<int64_t>{0, 2, 1, 3}}}, "t");  // node 2
    b.output(b.op(Op::RESHAPE, {t, b.constant_shape("s2", {B, S, H * D})}, {}, "y"));  // nodes 3, 4
    Module m(b.finish());
    EXPECT_FALSE(compiler::backward_chain(m.main(), {1, 2, 4}));
    auto v = compiler::backward_chain(m.main(), {1, 2, 4}, true);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->dims, (Shape{B * H, S, D}));
    for (int64_t bh = 0; bh < B * H; ++bh)
      for (int64_t s0 = 0; s0 < S; ++s0)
        for (int64_t d = 0; d < D; ++d)  // y[b, s, h * D + d]
          ASSERT_EQ(split_address(*v, bh, s0, d), (bh / H * S + s0) * H * D + bh % H * D + d) << bh << " " << s0 << " " << d;
  }
}

// torch's seq-first attention at batch B > 1 (nn.MultiheadAttention as torch 2.x exports it): the
// packed projection P [S, B, 3E] becomes q, k, v by [S, B, 3, E] -> [3, S, B, 1, E] -> slice t ->
// [S, B, E], then [S, B*H, D] (B and H merged: strides 3E and D, no view), [B*H, S, D] and
// [B, H, S, D]. The end is a strided view of P; with allow_split the chain that stops at
// [B*H, S, D] is a split view. The out-projection's input goes the other way: [B, H, S, D] ->
// [S, B, H, D] -> [S*B, E] is a view of the [S*B, E] result.
TEST(StridedView, ChainsThroughSeqFirstHeads) {
  const int64_t S = 5, B = 3, H = 2, D = 4, E = H * D;
  for (int64_t t = 0; t < 3; ++t) {
    GraphBuilder b("main");
    ValueId p = b.input("p", {DType::kFp32, {S, B, 3 * E}});
    std::vector<int> chain;
    auto step = [&](ValueId v) {
      chain.push_back(b.graph().value(v).producer);
      return v;
    };
    ValueId v = step(b.op(Op::RESHAPE, {p, b.constant_shape("s0", {1, S, B, 3, E})}));
    v = step(b.op(Op::TRANSPOSE, {v}, {{"perms", std::vector<int64_t>{3, 1, 2, 0, 4}}}));
    v = step(b.op(Op::RESHAPE, {v, b.constant_shape("s1", {3, S, B, E})}));
    v = step(b.op(Op::SLICE, {v, b.constant_shape("st", {t, 0, 0, 0}), b.constant_shape("sz", {1, S, B, E})}));
    v = step(b.op(Op::RESHAPE, {v, b.constant_shape("s2", {S, B * H, D})}));
    v = step(b.op(Op::TRANSPOSE, {v}, {{"perms", std::vector<int64_t>{1, 0, 2}}}));
    ValueId heads = v;
    b.output(step(b.op(Op::RESHAPE, {v, b.constant_shape("s3", {B, H, S, D})})));
    b.output(heads);
    Module m(b.finish());
    const Graph& g = m.main();
    auto full = compiler::forward_chain(g, chain);
    ASSERT_TRUE(full) << t;
    EXPECT_EQ(full->dims, (Shape{B, H, S, D}));
    EXPECT_EQ(full->strides, (std::vector<int64_t>{3 * E, D, B * 3 * E, 1}));
    EXPECT_EQ(full->offset, t * E);
    const std::vector<int> to_heads(chain.begin(), chain.end() - 1);
    EXPECT_FALSE(compiler::forward_chain(g, to_heads));
    auto split = compiler::forward_chain(g, to_heads, true);
    ASSERT_TRUE(split);
    EXPECT_EQ(split->dims, (Shape{B * H, S, D}));
    EXPECT_EQ(split->split, H);
    EXPECT_EQ(split->outer, 3 * E);
    EXPECT_EQ(split->strides, (std::vector<int64_t>{D, B * 3 * E, 1}));
    EXPECT_EQ(split->offset, t * E);
  }
  GraphBuilder b("main");
  ValueId o = b.input("o", {DType::kFp32, {B, H, S, D}});
  ValueId tr = b.op(Op::TRANSPOSE, {o}, {{"perms", std::vector<int64_t>{2, 0, 1, 3}}});  // node 0
  b.output(b.op(Op::RESHAPE, {tr, b.constant_shape("s", {S * B, E})}));             // nodes 1, 2
  Module m(b.finish());
  auto w = compiler::backward_chain(m.main(), {0, 2});
  ASSERT_TRUE(w);
  EXPECT_EQ(w->strides, (std::vector<int64_t>{E, D, B * E, 1}));
}

TEST(StridedView, BackwardChainThatNeedsACopy) {
  // M [6,4] -> RESHAPE [2,3,4] -> TRANSPOSE [1,0,2] -> Y [3,2,4]: M's rows are not evenly spaced
  // in Y, so no view of M writes Y; the suffix from the TRANSPOSE alone is a view.
  GraphBuilder b("main");
  ValueId mv = b.input("m", {DType::kFp32, {6, 4}});
  ValueId r = b.op(Op::RESHAPE, {mv, b.constant_shape("s", {2, 3, 4})}, {}, "r");  // nodes 0, 1
  b.output(b.op(Op::TRANSPOSE, {r}, {{"perms", std::vector<int64_t>{1, 0, 2}}}, "y"));  // node 2
  Module m(b.finish());
  EXPECT_FALSE(compiler::backward_chain(m.main(), {1, 2}));
  auto v = compiler::backward_chain(m.main(), {2});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->dims, (Shape{2, 3, 4}));
  EXPECT_EQ(v->strides, (std::vector<int64_t>{4, 8, 1}));
  // Forward, the same chain is a view of M.
  auto f = compiler::forward_chain(m.main(), {1, 2});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->strides, (std::vector<int64_t>{4, 12, 1}));
}

// Random chains of TRANSPOSE / RESHAPE over 24 int32 elements, executed by the reference
// interpreter on an iota input. For every sub-chain [i, j]: forward_chain gives the addresses (in
// value i) of value j+1's elements, backward_chain the addresses (in value j+1) of value i's
// elements. Each is given whenever every value on the way is expressible with strides, and refused
// whenever the end is not; a chain whose end is and whose middle is not (axes with unrelated strides
// merged and split again) is given where its parts never have to be cut unevenly (`through` counts
// those given, `missed` those not: no strides exist for some value between, and the parts of one
// axis cannot be carried over to it).
TEST(StridedView, RandomChainsMatchTheInterpreter) {
  std::mt19937 rng(20240611);
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  int fwd_given = 0, fwd_refused = 0, bwd_given = 0, bwd_refused = 0, through = 0, missed = 0;
  for (int trial = 0; trial < 250 && !HasFailure(); ++trial) {
    GraphBuilder b("main");
    const Shape src = shapes24()[pick(shapes24().size())];
    std::vector<ValueId> values = {b.input("x", {DType::kInt32, src})};
    std::vector<int> chain;
    std::string desc = shape_str(src);
    const size_t len = 1 + pick(5);
    for (size_t s = 0; s < len; ++s) {
      const Shape cur = b.graph().value(values.back()).type.shape;
      ValueId v;
      if (pick(2) == 0) {
        std::vector<int64_t> perms(cur.size());
        std::iota(perms.begin(), perms.end(), 0);
        std::shuffle(perms.begin(), perms.end(), rng);
        v = b.op(Op::TRANSPOSE, {values.back()}, {{"perms", perms}});
        desc += " T" + shape_str(perms);
      } else {
        const Shape to = shapes24()[pick(shapes24().size())];
        ValueId cs = b.constant_shape("s" + std::to_string(s), to);
        v = b.op(Op::RESHAPE, {values.back(), cs});
        desc += " R" + shape_str(to);
      }
      chain.push_back(static_cast<int>(b.graph().nodes().size()) - 1);
      values.push_back(v);
      b.output(v);
    }
    SCOPED_TRACE(desc);
    Module m(b.finish());
    const Graph& g = m.main();
    Interpreter interp(m);
    std::vector<int64_t> iota(24);
    std::iota(iota.begin(), iota.end(), 0);
    std::vector<Tensor> outs = interp.run({Tensor::from_ints({DType::kInt32, src}, iota)});
    ASSERT_EQ(outs.size(), len);
    // data[k][q]: which source element sits at position q of value k; pos[k][e]: where source
    // element e sits in value k.
    std::vector<std::vector<int64_t>> data = {iota}, pos;
    for (const Tensor& t : outs) data.push_back(t.to_ints());
    for (const auto& d : data) {
      std::vector<int64_t> p(24);
      for (size_t q = 0; q < 24; ++q) p[static_cast<size_t>(d[q])] = static_cast<int64_t>(q);
      pos.push_back(p);
    }
    auto shape_of = [&](size_t k) { return g.value(values[k]).type.shape; };
    // Addresses, in value `in`, of the elements of value `of`.
    auto addresses = [&](size_t of, size_t in) {
      std::vector<int64_t> a(24);
      for (size_t q = 0; q < 24; ++q) a[q] = pos[in][static_cast<size_t>(data[of][q])];
      return a;
    };
    for (size_t i = 0; i < len; ++i) {
      for (size_t j = i; j < len; ++j) {
        SCOPED_TRACE("sub-chain " + std::to_string(i) + ".." + std::to_string(j));
        const std::vector<int> sub(chain.begin() + static_cast<long>(i), chain.begin() + static_cast<long>(j) + 1);
        // Forward: value j+1 as a view of value i.
        bool steps_ok = true;
        for (size_t k = i + 1; k <= j; ++k) steps_ok &= expressible(shape_of(k), addresses(k, i));
        const bool fwd_ok = expressible(shape_of(j + 1), addresses(j + 1, i));
        auto f = compiler::forward_chain(g, sub);
        if (steps_ok && fwd_ok) {
          EXPECT_TRUE(f.has_value());
        }
        if (!fwd_ok) {
          EXPECT_FALSE(f.has_value());
        }
        through += f && !steps_ok;
        missed += fwd_ok && !f;
        if (f) {
          EXPECT_EQ(f->dims, shape_of(j + 1));
          expect_addresses(*f, addresses(j + 1, i));
          ++fwd_given;
        } else {
          ++fwd_refused;
        }
        // Backward: value i inside value j+1.
        bool back_steps_ok = true;
        for (size_t k = i + 1; k <= j; ++k) back_steps_ok &= expressible(shape_of(k), addresses(k, j + 1));
        const bool bwd_ok = expressible(shape_of(i), addresses(i, j + 1));
        auto bv = compiler::backward_chain(g, sub);
        if (back_steps_ok && bwd_ok) {
          EXPECT_TRUE(bv.has_value());
        }
        if (!bwd_ok) {
          EXPECT_FALSE(bv.has_value());
        }
        through += bv && !back_steps_ok;
        missed += bwd_ok && !bv;
        if (bv) {
          EXPECT_EQ(bv->dims, shape_of(i));
          expect_addresses(*bv, addresses(i, j + 1));
          ++bwd_given;
        } else {
          ++bwd_refused;
        }
      }
    }
  }
  EXPECT_GT(fwd_given, 100);
  EXPECT_GT(fwd_refused, 10);
  EXPECT_GT(bwd_given, 100);
  EXPECT_GT(bwd_refused, 10);
  EXPECT_GT(through, 0);
  std::printf("forward %d given, %d refused; backward %d given, %d refused; %d through values that are no view, %d missed\n",
              fwd_given, fwd_refused, bwd_given, bwd_refused, through, missed);
}

}  // namespace
TEST(StridedView, SliceKeepsStridesAndMovesTheOffset) {
  // [4,6] contiguous; rows 1..2, columns 2..4: element [i,j] is at 6*(1+i) + (2+j).
  StridedView v = compiler::slice_view(StridedView::contiguous({4, 6}), {1, 2}, {2, 3});
  EXPECT_EQ(v.dims, (Shape{2, 3}));
  EXPECT_EQ(v.strides, (std::vector<int64_t>{6, 1}));
  EXPECT_EQ(v.offset, 8);
  // A transpose and a reshape keep the offset.
  StridedView t = compiler::transpose_view(v, {1, 0});
  EXPECT_EQ(t.offset, 8);
  auto r = compiler::reshape_view(compiler::slice_view(StridedView::contiguous({2, 12}), {0, 6}, {2, 6}), {2, 2, 3});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->offset, 6);
  EXPECT_EQ(r->strides, (std::vector<int64_t>{12, 3, 1}));
}

}  // namespace weft
