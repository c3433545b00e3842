// The Vulkan backend's data-layout, scatter/gather and image operators against the reference
// backend: CONCAT, PAD, REVERSE, SLICE, TILE, TRANSPOSE, GATHER, SCATTER, RESIZE over every type
// of the PRO-INT / PRO-FP rows (bool, int8, int16, int32, fp16, fp32; int48 as RESIZE's output),
// ranks 1..6 with odd and size-1 dimensions, and the attribute variants.
//
// Tolerance: data movement is exact for every type (tol 0: the shaders copy bits). RESIZE is exact
// for integers; float bilinear interpolates in fp32 as the reference does (same operation order,
// unfused), but the GPU's division ry / scale_n may differ from the CPU's in the last bit: 1e-6 for
// fp32 (a few ulp), 1e-3 for fp16 (one ulp of the rounded fp16 result: at most 2^-10 = 9.8e-4 for
// values up to 1).
//
// Each test builds one module per type holding many independent variants (one output each), to
// keep the number of models (and lavapipe pipeline compilations) small.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "vk_ops_util.h"
#include "weft/graph.h"
#include "weft/runtime.h"

namespace weft::vk_test {
namespace {

const DType kAllTypes[] = {DType::kBool, DType::kInt8, DType::kInt16, DType::kInt32, DType::kFp16, DType::kFp32};
const DType kNumericTypes[] = {DType::kInt8, DType::kInt16, DType::kInt32, DType::kFp16, DType::kFp32};

// One shape per rank 1..6 with odd and size-1 dimensions, and shapes whose rows are multiples of
// 16 bytes (the widened-copy path).
const std::vector<Shape> kShapes = {{7},          {3, 5},       {2, 1, 5},          {2, 3, 1, 4},
                                    {1, 2, 3, 2, 3}, {2, 1, 3, 1, 2, 3}, {4, 16},  {3, 2, 32}, {2, 2, 4, 8}};

// A module under construction with its inputs' random feeds.
struct Net {
  explicit Net(uint32_t seed) : rng(seed) {}
  std::mt19937 rng;
  GraphBuilder b{"main"};
  std::vector<Tensor> feeds;
  int names = 0;

  std::string fresh(const char* base) { return base + std::to_string(names++); }
  ValueId input(DType t, Shape s) {
    TensorType tt{t, std::move(s)};
    ValueId v = b.input(fresh("in"), tt);
    // Integers over their whole range (every bit matters), floats in [-1, 1].
    feeds.push_back(is_float(t) ? random_tensor(tt, rng) : random_tensor(tt, rng, -1e18, 1e18));
    return v;
  }
  ValueId shape(std::vector<int64_t> v) { return b.constant_shape(fresh("shape"), std::move(v)); }
  ValueId scalar1(DType t, double v) {
    TensorType tt{t, {1}};
    return b.constant(fresh("c"), is_float(t) ? Tensor::from_doubles(tt, std::vector<double>{v})
                                              : Tensor::from_ints(tt, std::vector<int64_t>{static_cast<int64_t>(v)}));
  }
  void out(ValueId v) { b.output(v); }
  std::string check(double tol = 0.0, int vulkan_min = -1) {
    Module m(b.finish());
    return check_vs_reference(m, feeds, tol, vulkan_min);
  }
};

std::vector<int64_t> iota(size_t n, int64_t from = 0) {
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), from);
  return v;
}

// ---------------------------------------------------------------------------------------------

TEST(VulkanLayout, TransposeAllRanksAndTypes) {
  for (DType t : kAllTypes) {
    SCOPED_TRACE(dtype_name(t));
    Net net(1);
    for (const Shape& s : kShapes) {
      const size_t r = s.size();
      ValueId x = net.input(t, s);
      std::vector<int64_t> rev(r), rot = iota(r, 1);
      for (size_t i = 0; i < r; ++i) rev[i] = static_cast<int64_t>(r - 1 - i);
      if (r > 0) rot.back() = 0;  // [1, 2, ..., r-1, 0]
      net.out(net.b.op(Op::TRANSPOSE, {x}, {{"perms", rev}}));
      if (r > 2) net.out(net.b.op(Op::TRANSPOSE, {x}, {{"perms", rot}}));
      // Identity permutation: a plain copy.
      net.out(net.b.op(Op::TRANSPOSE, {x}, {{"perms", iota(r)}}));
    }
    net.check();
  }
}

TEST(VulkanLayout, TransposeEveryPermutationOfRank3) {
  for (DType t : {DType::kInt8, DType::kFp16, DType::kFp32}) {
    SCOPED_TRACE(dtype_name(t));
    Net net(2);
    ValueId x = net.input(t, {3, 4, 5});
    ValueId y = net.input(t, {2, 1, 8});
    std::vector<int64_t> p = {0, 1, 2};
    do {
      net.out(net.b.op(Op::TRANSPOSE, {x}, {{"perms", p}}));
      net.out(net.b.op(Op::TRANSPOSE, {y}, {{"perms", p}}));
    } while (std::next_permutation(p.begin(), p.end()));
    net.check();
  }
}

// Transposes of the tiled path (both swapped dimensions at least 16 long): partial 32 x 32 tiles,
// NCHW -> NHWC and back, batch dimensions around the swapped pair.
TEST(VulkanLayout, TransposeTiled) {
  for (DType t : kAllTypes) {
    SCOPED_TRACE(dtype_name(t));
    Net net(15);
    ValueId x = net.input(t, {3, 40, 50});
    net.out(net.b.op(Op::TRANSPOSE, {x}, {{"perms", std::vector<int64_t>{0, 2, 1}}}));
    net.out(net.b.op(Op::TRANSPOSE, {x}, {{"perms", std::vector<int64_t>{2, 0, 1}}}));
    ValueId y = net.input(t, {2, 17, 5, 33});
    net.out(net.b.op(Op::TRANSPOSE, {y}, {{"perms", std::vector<int64_t>{0, 2, 3, 1}}}));
    ValueId z = net.input(t, {2, 5, 33, 17});
    net.out(net.b.op(Op::TRANSPOSE, {z}, {{"perms", std::vector<int64_t>{0, 3, 1, 2}}}));
    ValueId w = net.input(t, {2, 1, 3, 20, 2, 18});
    net.out(net.b.op(Op::TRANSPOSE, {w}, {{"perms", std::vector<int64_t>{4, 1, 5, 2, 0, 3}}}));
    ValueId v = net.input(t, {64, 32});
    net.out(net.b.op(Op::TRANSPOSE, {v}, {{"perms", std::vector<int64_t>{1, 0}}}));
    net.check();
  }
}

TEST(VulkanLayout, SliceAllRanksAndTypes) {
  for (DType t : kAllTypes) {
    SCOPED_TRACE(dtype_name(t));
    Net net(3);
    for (const Shape& s : kShapes) {
      const size_t r = s.size();
      ValueId x = net.input(t, s);
      // Trim one from each side of every dimension longer than 2, one from the front of length 2.
      std::vector<int64_t> start(r), size(r);
      for (size_t i = 0; i < r; ++i) {
        start[i] = s[i] >= 2 ? 1 : 0;
        size[i] = s[i] - start[i] - (s[i] > 2 ? 1 : 0);
      }
      net.out(net.b.op(Op::SLICE, {x, net.shape(start), net.shape(size)}));
      // Along the outermost dimension only (one contiguous run).
      std::vector<int64_t> start0(r, 0);
      std::vector<int64_t> size0(s.begin(), s.end());
      if (s[0] > 1) start0[0] = s[0] / 2, size0[0] = s[0] - s[0] / 2;
      net.out(net.b.op(Op::SLICE, {x, net.shape(start0), net.shape(size0)}));
      // The last element along the innermost dimension.
      std::vector<int64_t> start1(r, 0), size1(s.begin(), s.end());
      start1[r - 1] = s[r - 1] - 1, size1[r - 1] = 1;
      net.out(net.b.op(Op::SLICE, {x, net.shape(start1), net.shape(size1)}));
    }
    net.check();
  }
}

// ShuffleNet's channel shuffle and split (NHWC, as the ONNX importer writes it): x [1, H, W, C]
// RESHAPE [1, H, W, 2, C/2], TRANSPOSE [0, 1, 2, 4, 3], RESHAPE [1, H, W, C], then two SLICEs of
// C/2 channels. The TRANSPOSE gets no dispatch of its own: each SLICE copies its channels straight
// from x ("TRANSPOSE+SLICE" in the profile), bit for bit the reference's result. Where x is a
// CONCAT of two equal pieces along the channels that nothing else reads (the block's two branches),
// the CONCAT is not written either: each SLICE reads both pieces ("CONCAT+TRANSPOSE+SLICE",
// ly_map2). Kept apart: a TRANSPOSE whose result is also an output, one read by a SLICE that cuts a
// channel pair; a CONCAT whose result is also an output, or of three pieces.
TEST(VulkanLayout, ChannelShuffleSplitReadsTheShuffleInPlace) {
  struct Case {
    DType t;
    int64_t H, W, C;
    bool cut_pair, shuffle_out;
    bool folded;
    int pieces;           // x is a CONCAT of this many inputs (0: x is an input)
    bool concat_out;      // the CONCAT's result is an output too
    bool concat_folded;
  };
  for (const Case& c :
       {Case{DType::kFp32, 5, 3, 8, false, false, true, 0, false, false},
        Case{DType::kFp16, 4, 4, 116, false, false, true, 0, false, false},
        Case{DType::kInt8, 2, 3, 12, false, false, true, 0, false, false},
        Case{DType::kFp32, 3, 3, 8, true, false, false, 0, false, false},
        Case{DType::kFp32, 3, 3, 8, false, true, false, 0, false, false},
        Case{DType::kFp32, 5, 3, 8, false, false, true, 2, false, true},
        Case{DType::kFp16, 4, 4, 116, false, false, true, 2, false, true},
        Case{DType::kInt8, 2, 3, 12, false, false, true, 2, false, true},
        Case{DType::kFp32, 3, 3, 8, false, false, true, 2, true, false},
        Case{DType::kFp32, 3, 3, 12, false, false, true, 3, false, false}}) {
    SCOPED_TRACE(std::string(dtype_name(c.t)) + " C " + std::to_string(c.C) + (c.cut_pair ? " cut" : "") +
                 (c.shuffle_out ? " out" : "") + " pieces " + std::to_string(c.pieces) + (c.concat_out ? " concat out" : ""));
    Net net(16);
    const int64_t H = c.H, W = c.W, C = c.C;
    auto reshape = [&](ValueId v, std::vector<int64_t> to) { return net.b.op(Op::RESHAPE, {v, net.shape(std::move(to))}); };
    ValueId x;
    if (c.pieces == 0) {
      x = net.input(c.t, {1, H, W, C});
    } else {
      std::vector<ValueId> pieces;
      for (int i = 0; i < c.pieces; ++i) pieces.push_back(net.input(c.t, {1, H, W, C / c.pieces}));
      x = net.b.op(Op::CONCAT, pieces, {{"axis", int64_t{3}}});
      if (c.concat_out) net.out(x);
    }
    ValueId t = net.b.op(Op::TRANSPOSE, {reshape(x, {1, H, W, 2, C / 2})}, {{"perms", std::vector<int64_t>{0, 1, 2, 4, 3}}});
    ValueId shuffled = reshape(t, {1, H, W, C});
    const int64_t first = c.cut_pair ? 1 : 0;
    net.out(net.b.op(Op::SLICE, {shuffled, net.shape({0, 0, 0, first}), net.shape({1, H, W, C / 2})}));
    net.out(net.b.op(Op::SLICE, {shuffled, net.shape({0, 1, 0, C / 2}), net.shape({1, H - 1, W, C / 2})}));
    if (c.shuffle_out) net.out(shuffled);
    Module m(net.b.finish());
    check_vs_reference(m, net.feeds, 0.0);
    Context ctx(Model::from_module(m, vulkan_first()));
    ctx.set_profiling(true);
    ctx.run(net.feeds);
    int transposes = 0, folded = 0, concats = 0, both = 0;
    for (const KernelProfile& k : ctx.profile()) {
      transposes += k.device && k.pattern == "TRANSPOSE";
      folded += k.device && k.pattern == "TRANSPOSE+SLICE";
      concats += k.device && k.pattern == "CONCAT";
      both += k.device && k.pattern == "CONCAT+TRANSPOSE+SLICE";
    }
    EXPECT_EQ(transposes, c.folded ? 0 : 1);
    EXPECT_EQ(folded, c.folded && !c.concat_folded ? 2 : 0);
    EXPECT_EQ(both, c.concat_folded ? 2 : 0);
    EXPECT_EQ(concats, c.pieces > 0 && !c.concat_folded ? 1 : 0);
  }
}

// torch.roll as exporters write it: an axis cut in two SLICEs and CONCATenated the other way round
// (Swin's shifted windows roll H, then W). A SLICE that only the CONCAT reads, cut along the
// CONCAT's axis alone, gets no dispatch: the CONCAT reads its rows in place ("SLICE+CONCAT", one
// ly_concat). Kept apart: a SLICE that is also an output, one that also cuts another axis, and rows
// that are no whole number of 4-byte units (fp16 with an odd row: the per-input copies).
TEST(VulkanLayout, RollReadsItsHalvesInPlace) {
  struct Case {
    DType t;
    int64_t H, W, C;
    int shift;
    bool slice_out, cut_other;
    int slices, rolls;  // SLICE dispatches left, CONCATs that read SLICEs in place
  };
  for (const Case& c : {Case{DType::kFp32, 7, 7, 8, 3, false, false, 0, 2}, Case{DType::kFp16, 6, 5, 6, 2, false, false, 0, 2},
                        Case{DType::kInt8, 4, 4, 4, 1, false, false, 0, 2}, Case{DType::kFp32, 5, 6, 4, 2, true, false, 1, 2},
                        Case{DType::kFp32, 5, 6, 4, 2, false, true, 2, 1}, Case{DType::kFp16, 3, 3, 1, 1, false, false, 4, 0}}) {
    SCOPED_TRACE(std::string(dtype_name(c.t)) + " " + std::to_string(c.H) + "x" + std::to_string(c.W) + "x" +
                 std::to_string(c.C) + (c.slice_out ? " slice out" : "") + (c.cut_other ? " cut other" : ""));
    Net net(17);
    const int64_t H = c.H, W = c.W, C = c.C, s = c.shift;
    ValueId x = net.input(c.t, {1, H, W, C});
    auto slice = [&](ValueId v, std::vector<int64_t> start, std::vector<int64_t> size) {
      return net.b.op(Op::SLICE, {v, net.shape(std::move(start)), net.shape(std::move(size))});
    };
    // roll by s along H: rows H-s.. first, then 0..H-s.
    ValueId a = slice(x, {0, H - s, 0, 0}, {1, s, W, C});
    ValueId b = slice(x, {0, 0, 0, 0}, {1, H - s, W, C});
    if (c.slice_out) net.out(a);
    ValueId rh = net.b.op(Op::CONCAT, {a, b}, {{"axis", int64_t{1}}});
    // then along W (with cut_other, both halves also drop the last row: an output of H - 1 rows).
    const int64_t rows = c.cut_other ? H - 1 : H;
    ValueId d = slice(rh, {0, 0, W - s, 0}, {1, rows, s, C});
    ValueId e = slice(rh, {0, 0, 0, 0}, {1, rows, W - s, C});
    net.out(net.b.op(Op::CONCAT, {d, e}, {{"axis", int64_t{2}}}));
    Module m(net.b.finish());
    check_vs_reference(m, net.feeds, 0.0);
    Context ctx(Model::from_module(m, vulkan_first()));
    ctx.set_profiling(true);
    ctx.run(net.feeds);
    int slices = 0, rolls = 0;
    std::string seen;
    for (const KernelProfile& k : ctx.profile()) {
      if (!k.device) continue;
      seen += k.pattern + " ";
      slices += k.pattern == "SLICE";
      rolls += k.pattern == "SLICE+CONCAT";
    }
    EXPECT_EQ(slices, c.slices) << seen;
    EXPECT_EQ(rolls, c.rolls) << seen;
  }
}

TEST(VulkanLayout, TileAllRanksAndTypes) {
  for (DType t : kAllTypes) {
    SCOPED_TRACE(dtype_name(t));
    Net net(4);
    for (const Shape& s : kShapes) {
      const size_t r = s.size();
      ValueId x = net.input(t, s);
      std::vector<int64_t> m(r);
      for (size_t i = 0; i < r; ++i) m[i] = i % 2 == 0 ? 2 : 1;
      m[r - 1] = 3;
      net.out(net.b.op(Op::TILE, {x, net.shape(m)}));
      // Only the outermost dimension repeats; all ones is a copy.
      std::vector<int64_t> m0(r, 1);
      m0[0] = 2;
      net.out(net.b.op(Op::TILE, {x, net.shape(m0)}));
      net.out(net.b.op(Op::TILE, {x, net.shape(std::vector<int64_t>(r, 1))}));
    }
    net.check();
  }
}

TEST(VulkanLayout, ReverseEveryAxis) {
  for (DType t : kAllTypes) {
    SCOPED_TRACE(dtype_name(t));
    Net net(5);
    for (const Shape& s : kShapes) {
      ValueId x = net.input(t, s);
      for (size_t a = 0; a < s.size(); ++a) net.out(net.b.op(Op::REVERSE, {x}, {{"axis", static_cast<int64_t>(a)}}));
    }
    net.check();
  }
}

TEST(VulkanLayout, PadAllRanksAndTypes) {
  for (DType t : kAllTypes) {
    SCOPED_TRACE(dtype_name(t));
    Net net(6);
    const double value = t == DType::kBool ? 1 : is_float(t) ? -2.5 : -77;
    for (const Shape& s : kShapes) {
      const size_t r = s.size();
      ValueId x = net.input(t, s);
      std::vector<int64_t> p(2 * r);
      for (size_t i = 0; i < r; ++i) p[2 * i] = static_cast<int64_t>(i % 2), p[2 * i + 1] = static_cast<int64_t>(i % 3);
      net.out(net.b.op(Op::PAD, {x, net.shape(p), net.scalar1(t, value)}));
      // Only the outermost dimension; only the innermost; none.
      std::vector<int64_t> p0(2 * r, 0), p1(2 * r, 0);
      p0[0] = 2, p0[1] = 1;
      p1[2 * r - 2] = 3, p1[2 * r - 1] = 2;
      net.out(net.b.op(Op::PAD, {x, net.shape(p0), net.scalar1(t, value)}));
      net.out(net.b.op(Op::PAD, {x, net.shape(p1), net.scalar1(t, value)}));
      net.out(net.b.op(Op::PAD, {x, net.shape(std::vector<int64_t>(2 * r, 0)), net.scalar1(t, value)}));
    }
    net.check();
  }
}

// Padding in multiples of 16 bytes (the widened path with a repeated pad pattern) and an NHWC
// spatial pad.
TEST(VulkanLayout, PadWidened) {
  for (DType t : {DType::kInt8, DType::kInt16, DType::kFp16, DType::kFp32}) {
    SCOPED_TRACE(dtype_name(t));
    Net net(7);
    ValueId x = net.input(t, {3, 32});
    net.out(net.b.op(Op::PAD, {x, net.shape({1, 2, 16, 32}), net.scalar1(t, 5)}));
    ValueId y = net.input(t, {1, 5, 6, 16});
    net.out(net.b.op(Op::PAD, {y, net.shape({0, 0, 1, 1, 2, 1, 0, 0}), net.scalar1(t, -3)}));
    net.check();
  }
}

TEST(VulkanLayout, ConcatEveryAxis) {
  for (DType t : kAllTypes) {
    SCOPED_TRACE(dtype_name(t));
    Net net(8);
    for (const Shape& s : kShapes) {
      for (size_t a = 0; a < s.size(); ++a) {
        // Three inputs with axis lengths s[a], 1, 2; the first one twice.
        Shape s1 = s, s2 = s;
        s1[a] = 1, s2[a] = 2;
        ValueId x = net.input(t, s), y = net.input(t, s1), z = net.input(t, s2);
        net.out(net.b.op(Op::CONCAT, {x, y, z, x}, {{"axis", static_cast<int64_t>(a)}}));
      }
    }
    // A single input.
    ValueId w = net.input(t, {2, 3});
    net.out(net.b.op(Op::CONCAT, {w}, {{"axis", int64_t{1}}}));
    net.check();
  }
}

// DenseNet's channel concatenations: many NHWC inputs (more than the eight one dispatch takes), the
// same value more than once, rows of whole 4-byte units (fp32, int16 pairs, int8 quadruples) and of
// other sizes (int8 of 3 channels: the per-input copies).
TEST(VulkanLayout, ConcatOfManyInputs) {
  for (DType t : {DType::kFp32, DType::kInt16, DType::kInt8}) {
    for (int64_t c : {4, 3}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " channels " + std::to_string(c));
      Net net(9);
      std::vector<ValueId> xs;
      for (int i = 0; i < 19; ++i) xs.push_back(net.input(t, {2, 5, 3, i % 3 == 0 ? 2 * c : c}));
      xs.push_back(xs[4]);
      net.out(net.b.op(Op::CONCAT, xs, {{"axis", int64_t{3}}}));
      net.check();
    }
  }
}

// ---------------------------------------------------------------------------------------------

// Random indices in [0, k) (GATHER); per batch distinct ones (SCATTER, unique).
Tensor indices(std::mt19937& rng, int64_t n, int64_t w, int64_t k, bool unique) {
  std::vector<int64_t> v;
  for (int64_t b = 0; b < n; ++b) {
    std::vector<int64_t> p = iota(static_cast<size_t>(k));
    std::shuffle(p.begin(), p.end(), rng);
    for (int64_t i = 0; i < w; ++i) v.push_back(unique ? p[i] : std::uniform_int_distribution<int64_t>(0, k - 1)(rng));
  }
  return Tensor::from_ints({DType::kInt32, {n, w}}, v);
}

struct GatherCase {
  int64_t n, k, c, w;
};
const GatherCase kGatherCases[] = {{1, 5, 1, 3}, {2, 7, 3, 9}, {3, 4, 8, 2}, {2, 3, 16, 5}, {1, 6, 5, 6}};

TEST(VulkanLayout, Gather) {
  for (DType t : kNumericTypes) {
    SCOPED_TRACE(dtype_name(t));
    Net net(9);
    for (const GatherCase& g : kGatherCases) {
      ValueId values = net.input(t, {g.n, g.k, g.c});
      ValueId idx = net.b.input(net.fresh("idx"), {DType::kInt32, {g.n, g.w}});
      net.feeds.push_back(indices(net.rng, g.n, g.w, g.k, false));
      net.out(net.b.op(Op::GATHER, {values, idx}));
    }
    net.check();
  }
}

TEST(VulkanLayout, Scatter) {
  for (DType t : kNumericTypes) {
    SCOPED_TRACE(dtype_name(t));
    Net net(10);
    for (const GatherCase& g : kGatherCases) {
      const int64_t w = std::min(g.w, g.k);
      ValueId values = net.input(t, {g.n, g.k, g.c});
      ValueId idx = net.b.input(net.fresh("idx"), {DType::kInt32, {g.n, w}});
      net.feeds.push_back(indices(net.rng, g.n, w, g.k, true));
      ValueId in = net.input(t, {g.n, w, g.c});
      net.out(net.b.op(Op::SCATTER, {values, idx, in}));
    }
    net.check();
  }
}

// ONNX's Gather with run-time indices as the importer writes it: SELECT(GREATER(0, i), ADD(i, K), i)
// in front of the GATHER (negative indices count from the end). Where only the GATHER reads the
// wrap, its three operators get no dispatch ("SELECT+GATHER", ly_gather wrapping the index itself);
// where the SELECT's result is also an output, all four run as written. Indices in [-K, K).
TEST(VulkanLayout, GatherWrapsNegativeIndicesItself) {
  for (bool select_out : {false, true}) {
    SCOPED_TRACE(select_out ? "SELECT also an output" : "wrap read by the GATHER only");
    Net net(21);
    const int64_t K = 11, C = 6, W = 9;
    ValueId values = net.input(DType::kFp32, {1, K, C});
    ValueId i = net.b.input(net.fresh("idx"), {DType::kInt32, {1, W}});
    net.feeds.push_back(Tensor::from_ints({DType::kInt32, {1, W}}, std::vector<int64_t>{0, -1, 5, -11, 10, -6, 3, -2, 7}));
    auto int_scalar = [&](int64_t v) {
      return net.b.constant(net.fresh("c"), Tensor::from_ints({DType::kInt32, {1, 1}}, std::vector<int64_t>{v}));
    };
    ValueId neg = net.b.op(Op::GREATER, {int_scalar(0), i});
    ValueId wrapped = net.b.op(Op::SELECT, {neg, net.b.op(Op::ADD, {i, int_scalar(K)}), i});
    if (select_out) net.out(wrapped);
    net.out(net.b.op(Op::GATHER, {values, wrapped}));
    Module m(net.b.finish());
    check_vs_reference(m, net.feeds, 0.0);
    Context ctx(Model::from_module(m, vulkan_first()));
    ctx.set_profiling(true);
    ctx.run(net.feeds);
    std::string seen;
    for (const KernelProfile& k : ctx.profile())
      if (k.device) seen += k.pattern + " ";
    EXPECT_EQ(seen, select_out ? "GREATER ADD SELECT GATHER " : "SELECT+GATHER ");
  }
}

// Indices TOSA forbids (the reference stops with an error): on Vulkan, GATHER gives zero rows for
// indices outside [0, K), SCATTER skips them, and of duplicate SCATTER indices the last (largest w)
// wins. Checked on the Vulkan backend alone.
TEST(VulkanLayout, InvalidIndicesStayInBounds) {
  GraphBuilder b("main");
  ValueId values = b.input("values", {DType::kInt32, {1, 3, 2}});
  ValueId idx = b.input("idx", {DType::kInt32, {1, 4}});
  ValueId in = b.input("in", {DType::kInt32, {1, 4, 2}});
  b.output(b.op(Op::GATHER, {values, idx}));
  b.output(b.op(Op::SCATTER, {values, idx, in}));
  Module m(b.finish());
  auto model = Model::from_module(m, BackendOptions{.backends = {"vulkan"}});
  Context ctx(model);
  const std::vector<Tensor> feeds = {Tensor::from_ints({DType::kInt32, {1, 3, 2}}, std::vector<int64_t>{1, 2, 3, 4, 5, 6}),
                                     Tensor::from_ints({DType::kInt32, {1, 4}}, std::vector<int64_t>{2, -1, 2, 7}),
                                     Tensor::from_ints({DType::kInt32, {1, 4, 2}}, std::vector<int64_t>{10, 11, 20, 21, 30, 31, 40, 41})};
  std::vector<Tensor> out = ctx.run(feeds);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].to_ints(), (std::vector<int64_t>{5, 6, 0, 0, 5, 6, 0, 0}));
  EXPECT_EQ(out[1].to_ints(), (std::vector<int64_t>{1, 2, 3, 4, 30, 31}));
}

// ---------------------------------------------------------------------------------------------

struct ResizeCase {
  Shape in;  // [N, IH, IW, C]
  std::vector<int64_t> scale, offset, border;
};
// Upscale by 2; non-integer up with offsets and a negative border; downscale; a 1x1 image grown by
// its border; the largest scale numerator (int16 bilinear reaches int48 range); half-pixel 2x.
const ResizeCase kResizeCases[] = {
    {{1, 3, 4, 2}, {2, 1, 2, 1}, {0, 0}, {0, 0}},          {{2, 3, 5, 3}, {4, 3, 5, 2}, {-1, 1}, {0, -1}},
    {{1, 7, 9, 1}, {1, 2, 2, 5}, {0, 1}, {0, 0}},          {{1, 1, 1, 3}, {3, 1, 3, 1}, {0, 0}, {2, 2}},
    {{1, 2, 3, 2}, {2048, 1024, 16, 8}, {0, 0}, {0, 0}},   {{1, 3, 5, 2}, {4, 2, 4, 2}, {-1, -1}, {1, 1}}};

void resize_sweep(DType t, double tol) {
  for (ResizeMode mode : {ResizeMode::kNearest, ResizeMode::kBilinear}) {
    SCOPED_TRACE(std::string(dtype_name(t)) + (mode == ResizeMode::kNearest ? " nearest" : " bilinear"));
    Net net(11);
    for (const ResizeCase& c : kResizeCases) {
      ValueId x = net.input(t, c.in);
      net.out(net.b.op(Op::RESIZE, {x, net.shape(c.scale), net.shape(c.offset), net.shape(c.border)},
                       {{"mode", static_cast<int64_t>(mode)}}));
    }
    net.check(tol);
  }
}

TEST(VulkanLayout, ResizeInt8) { resize_sweep(DType::kInt8, 0.0); }
TEST(VulkanLayout, ResizeInt16) { resize_sweep(DType::kInt16, 0.0); }
TEST(VulkanLayout, ResizeFp32) { resize_sweep(DType::kFp32, 1e-6); }
TEST(VulkanLayout, ResizeFp16) { resize_sweep(DType::kFp16, 1e-3); }

// ---------------------------------------------------------------------------------------------

// A chain of layout operators in one region: intermediates stay on the device.
TEST(VulkanLayout, ChainInOneRegion) {
  Net net(12);
  ValueId x = net.input(DType::kFp32, {2, 5, 6, 3});
  ValueId t = net.b.op(Op::TRANSPOSE, {x}, {{"perms", std::vector<int64_t>{0, 3, 1, 2}}});
  ValueId p = net.b.op(Op::PAD, {t, net.shape({0, 0, 0, 1, 1, 1, 2, 0}), net.scalar1(DType::kFp32, 0.5)});
  ValueId s = net.b.op(Op::SLICE, {p, net.shape({1, 0, 1, 1}), net.shape({1, 4, 5, 6})});
  ValueId r = net.b.op(Op::REVERSE, {s}, {{"axis", int64_t{2}}});
  ValueId c = net.b.op(Op::CONCAT, {r, s}, {{"axis", int64_t{0}}});
  net.out(net.b.op(Op::TILE, {c, net.shape({1, 2, 1, 1})}));
  net.check();
}

// Device throughput (GPU timestamps of the dispatches, best of 50 runs) on a real GPU, one case
// per process:
//   for i in $(seq 0 17); do
//     weft_test_vulkan_ops_layout --gtest_also_run_disabled_tests --gtest_filter="*Throughput*/$i"; done
// (on an H200, kernels of the third and later large models of one process ran at a third of the
// bandwidth of the first ones, whatever they were). Prints GB/s counting the bytes of the input
// and the output once.
struct ThroughputCase {
  std::string name;
  std::function<ValueId(Net&, ValueId)> build;
  Shape in;
  DType t;
};

std::vector<ThroughputCase> throughput_cases() {
  auto perm = [](std::vector<int64_t> p) {
    return [p](Net& n, ValueId x) { return n.b.op(Op::TRANSPOSE, {x}, {{"perms", p}}); };
  };
  return {
      {"copy (transpose 012) fp32 [64,512,512]", perm({0, 1, 2}), {64, 512, 512}, DType::kFp32},
      {"gather fp32 [16,4096,256] by [16,4096]",
       [](Net& n, ValueId x) {
         ValueId idx = n.b.input(n.fresh("idx"), {DType::kInt32, {16, 4096}});
         n.feeds.push_back(indices(n.rng, 16, 4096, 4096, false));
         return n.b.op(Op::GATHER, {x, idx});
       },
       {16, 4096, 256}, DType::kFp32},
      {"transpose 021 fp32 [64,512,512]", perm({0, 2, 1}), {64, 512, 512}, DType::kFp32},
      {"transpose 0231 fp32 NCHW->NHWC [8,64,256,256]", perm({0, 2, 3, 1}), {8, 64, 256, 256}, DType::kFp32},
      {"transpose 1023 fp16 [64,16,128,64]", perm({1, 0, 2, 3}), {64, 16, 128, 64}, DType::kFp16},
      {"transpose 021 int8 [64,512,512]", perm({0, 2, 1}), {64, 512, 512}, DType::kInt8},
      {"slice fp32 [64,512,512] -> [63,512,512]",
       [](Net& n, ValueId x) { return n.b.op(Op::SLICE, {x, n.shape({1, 0, 0}), n.shape({63, 512, 512})}); },
       {64, 512, 512}, DType::kFp32},
      {"concat fp32 axis 0 [64,512,512] x2",
       [](Net& n, ValueId x) { return n.b.op(Op::CONCAT, {x, x}, {{"axis", int64_t{0}}}); }, {64, 512, 512},
       DType::kFp32},
      {"transpose 102 fp32 [64,512,512]", perm({1, 0, 2}), {64, 512, 512}, DType::kFp32},
      {"slice fp32 [64,512,512] -> [64,500,512]",
       [](Net& n, ValueId x) { return n.b.op(Op::SLICE, {x, n.shape({0, 6, 0}), n.shape({64, 500, 512})}); },
       {64, 512, 512}, DType::kFp32},
      {"slice fp32 [64,512,512] -> [64,500,500]",
       [](Net& n, ValueId x) { return n.b.op(Op::SLICE, {x, n.shape({0, 6, 6}), n.shape({64, 500, 500})}); },
       {64, 512, 512}, DType::kFp32},
      {"pad fp32 NHWC [4,256,256,64] by 1",
       [](Net& n, ValueId x) {
         return n.b.op(Op::PAD, {x, n.shape({0, 0, 1, 1, 1, 1, 0, 0}), n.scalar1(DType::kFp32, 0)});
       },
       {4, 256, 256, 64}, DType::kFp32},
      {"concat fp32 axis 3 of [4,256,256,32] x2",
       [](Net& n, ValueId x) { return n.b.op(Op::CONCAT, {x, x}, {{"axis", int64_t{3}}}); }, {4, 256, 256, 32},
       DType::kFp32},
      {"tile fp32 [4,256,256,32] x[1,1,1,2]",
       [](Net& n, ValueId x) { return n.b.op(Op::TILE, {x, n.shape({1, 1, 1, 2})}); }, {4, 256, 256, 32},
       DType::kFp32},
      {"reverse fp32 axis 2 [64,512,512]",
       [](Net& n, ValueId x) { return n.b.op(Op::REVERSE, {x}, {{"axis", int64_t{2}}}); }, {64, 512, 512},
       DType::kFp32},
      {"resize bilinear 2x fp32 [4,256,256,32]",
       [](Net& n, ValueId x) {
         return n.b.op(Op::RESIZE, {x, n.shape({4, 2, 4, 2}), n.shape({-1, -1}), n.shape({1, 1})},
                       {{"mode", static_cast<int64_t>(ResizeMode::kBilinear)}});
       },
       {4, 256, 256, 32}, DType::kFp32},
  };
}

class VulkanLayoutThroughput : public ::testing::TestWithParam<int> {};

TEST_P(VulkanLayoutThroughput, Case) {
  // Eight instances of the operator on the same input per run, each result read by a one-element
  // SLICE so that it stays on the device (only the instances' dispatches are timed); 50 runs, so
  // that the GPU's clocks come up.
  constexpr int kCopies = 8;
  const ThroughputCase c = throughput_cases().at(static_cast<size_t>(GetParam()));
  Net net(14);
  ValueId x = net.input(c.t, c.in);
  size_t bytes = 0;
  std::set<std::string> timed;
  for (int i = 0; i < kCopies; ++i) {
    ValueId y = c.build(net, x);
    const TensorType& yt = net.b.graph().value(y).type;
    timed.insert("%" + net.b.graph().value(y).name);  // node_label's form of the output's name
    bytes = net.b.graph().value(x).type.byte_size() + yt.byte_size();
    net.out(net.b.op(Op::SLICE, {y, net.shape(std::vector<int64_t>(yt.shape.size(), 0)),
                                 net.shape(std::vector<int64_t>(yt.shape.size(), 1))}));
  }
  Module m(net.b.finish());
  auto model = Model::from_module(m, vulkan_first());
  Context ctx(model);
  ctx.set_profiling(true);
  double best = 1e30;
  for (int i = 0; i < 50; ++i) {
    ctx.run(net.feeds);
    double us = 0;
    for (const KernelProfile& k : ctx.profile())
      if (k.device && timed.count(k.node)) us += k.microseconds;
    best = std::min(best, us / kCopies);
  }
  std::printf("%-48s %9.1f us %8.1f GB/s\n", c.name.c_str(), best, static_cast<double>(bytes) / best / 1e3);
}

INSTANTIATE_TEST_SUITE_P(DISABLED_Throughput, VulkanLayoutThroughput,
                         ::testing::Range(0, static_cast<int>(throughput_cases().size())));

// What the lowering declines falls back to the reference: a PAD whose pad value is not a constant.
TEST(VulkanLayout, PadWithRuntimeValueFallsBack) {
  Net net(13);
  ValueId x = net.input(DType::kFp32, {2, 3});
  ValueId v = net.input(DType::kFp32, {1});
  net.out(net.b.op(Op::PAD, {x, net.shape({1, 0, 0, 2}), v}));
  const std::string ex = net.check(0.0, 0);
  EXPECT_EQ(vulkan_nodes(ex), 0) << ex;
}

}  // namespace
}  // namespace weft::vk_test
