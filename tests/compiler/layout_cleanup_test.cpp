// compiler::cancel_layout_pairs: TRANSPOSE/RESHAPE round trips disappear, everything else stays.
#include <gtest/gtest.h>

#include "compiler/layout_cleanup.h"
#include "compiler/count_ops.h"
#include "weft/interpreter.h"
#include "weft/verify.h"

namespace weft::compiler {
namespace {

// x -> TRANSPOSE(p) -> TRANSPOSE(q) -> ABS -> out
Graph two_transposes(std::vector<int64_t> p, std::vector<int64_t> q, bool second_is_output = false) {
  GraphBuilder b;
  ValueId x = b.input("x", {DType::kFp32, {1, 3, 4, 5}});
  ValueId t1 = b.op(Op::TRANSPOSE, {x}, {{"perms", p}}, "t1");
  ValueId t2 = b.op(Op::TRANSPOSE, {t1}, {{"perms", q}}, "t2");
  if (second_is_output) {
    b.output(t2);
  } else {
    b.output(b.op(Op::ABS, {t2}, {}, "y"));
  }
  return b.finish();
}

TEST(LayoutCleanup, InversePermutesCancel) {
  Graph g = two_transposes({0, 2, 3, 1}, {0, 3, 1, 2});
  LayoutCleanupStats s = cancel_layout_pairs(g);
  EXPECT_EQ(s.pairs_removed, 1);
  EXPECT_EQ(s.nodes_removed, 2);
  EXPECT_EQ(count(g, Op::TRANSPOSE), 0);
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.node(0).inputs[0], g.inputs()[0]);  // ABS reads x directly
  EXPECT_TRUE(verify_module(Module(g)).empty());
}

TEST(LayoutCleanup, NonInversePermutesStay) {
  Graph g = two_transposes({0, 2, 3, 1}, {0, 2, 3, 1});
  LayoutCleanupStats s = cancel_layout_pairs(g);
  EXPECT_EQ(s.pairs_removed, 0);
  EXPECT_EQ(count(g, Op::TRANSPOSE), 2);
}

TEST(LayoutCleanup, FirstTransposeWithOtherReadersStays) {
  GraphBuilder b;
  ValueId x = b.input("x", {DType::kFp32, {1, 3, 4, 5}});
  ValueId t1 = b.op(Op::TRANSPOSE, {x}, {{"perms", std::vector<int64_t>{0, 2, 3, 1}}}, "t1");
  ValueId t2 = b.op(Op::TRANSPOSE, {t1}, {{"perms", std::vector<int64_t>{0, 3, 1, 2}}}, "t2");
  b.output(b.op(Op::ABS, {t2}, {}, "y"));
  b.output(b.op(Op::EXP, {t1}, {}, "z"));
  Graph g = b.finish();
  LayoutCleanupStats s = cancel_layout_pairs(g);
  EXPECT_EQ(s.pairs_removed, 1);
  EXPECT_EQ(count(g, Op::TRANSPOSE), 1);  // t1 still feeds EXP
  EXPECT_TRUE(verify_module(Module(g)).empty());
}

TEST(LayoutCleanup, GraphOutputKeepsItsValue) {
  Graph g = two_transposes({0, 2, 3, 1}, {0, 3, 1, 2}, /*second_is_output=*/true);
  LayoutCleanupStats s = cancel_layout_pairs(g);
  EXPECT_EQ(s.pairs_removed, 0);
  EXPECT_EQ(count(g, Op::TRANSPOSE), 2);
}

TEST(LayoutCleanup, ReshapeRoundTripCancels) {
  GraphBuilder b;
  ValueId x = b.input("x", {DType::kFp32, {1, 1, 4, 5}});
  ValueId s1 = b.constant_shape("s1", {1, 4, 5, 1});
  ValueId s2 = b.constant_shape("s2", {1, 1, 4, 5});
  ValueId r1 = b.op(Op::RESHAPE, {x, s1}, {}, "r1");
  ValueId r2 = b.op(Op::RESHAPE, {r1, s2}, {}, "r2");
  b.output(b.op(Op::ABS, {r2}, {}, "y"));
  Graph g = b.finish();
  LayoutCleanupStats s = cancel_layout_pairs(g);
  EXPECT_EQ(s.pairs_removed, 1);
  EXPECT_EQ(count(g, Op::RESHAPE), 0);
  EXPECT_TRUE(verify_module(Module(g)).empty());
}

}  // namespace
// ShuffleNet's channel shuffle as the ONNX importer writes it: NHWC features transposed to NCHW,
// reshaped [N, 2, C/2, H, W], the two halves swapped, merged back, then each half sliced off and
// transposed back to NHWC for the next convolution.
TEST(LayoutCleanup, ChannelShuffleThroughNchwBecomesOneTransposeInNhwc) {
  GraphBuilder b;
  const int64_t N = 1, H = 3, W = 2, C = 8;
  ValueId x = b.input("x", {DType::kFp32, {N, H, W, C}});
  ValueId t1 = b.op(Op::TRANSPOSE, {x}, {{"perms", std::vector<int64_t>{0, 3, 1, 2}}}, "t1");
  ValueId r1 = b.op(Op::RESHAPE, {t1, b.constant_shape("s1", {N, 2, C / 2, H, W})}, {}, "r1");
  ValueId t2 = b.op(Op::TRANSPOSE, {r1}, {{"perms", std::vector<int64_t>{0, 2, 1, 3, 4}}}, "t2");
  ValueId r2 = b.op(Op::RESHAPE, {t2, b.constant_shape("s2", {N, C, H, W})}, {}, "r2");
  for (int half = 0; half < 2; ++half) {
    ValueId sl = b.op(Op::SLICE, {r2, b.constant_shape("st" + std::to_string(half), {0, half * C / 2, 0, 0}),
                                  b.constant_shape("sz" + std::to_string(half), {N, C / 2, H, W})},
                      {}, "slice" + std::to_string(half));
    b.output(b.op(Op::TRANSPOSE, {sl}, {{"perms", std::vector<int64_t>{0, 2, 3, 1}}}, "half" + std::to_string(half)));
  }
  Graph g = b.finish();
  std::vector<double> xs(static_cast<size_t>(N * H * W * C));
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<double>(i);
  const Tensor input = Tensor::from_doubles({DType::kFp32, {N, H, W, C}}, xs);
  const std::vector<Tensor> before = Interpreter(Module(g)).run({input});
  EXPECT_EQ(count(g, Op::TRANSPOSE), 4);
  EXPECT_EQ(sink_layout_transposes(g), 3);  // the shuffle, and each half's slice sandwich
  cancel_layout_pairs(g);
  EXPECT_EQ(count(g, Op::TRANSPOSE), 1);  // the shuffle itself, in NHWC
  EXPECT_TRUE(verify_module(Module(g)).empty());
  const std::vector<Tensor> after = Interpreter(Module(g)).run({input});
  ASSERT_EQ(after.size(), 2u);
  for (size_t k = 0; k < 2; ++k) EXPECT_EQ(after[k].to_doubles(), before[k].to_doubles()) << k;
  EXPECT_EQ(g.value(g.outputs()[0]).name, "half0");  // outputs keep their names
}

// MaxViT's window partition of NCHW features and a hand-written pixel shuffle, as the importer
// writes them (a TRANSPOSE from NHWC first): each TRANSPOSE -> split RESHAPE -> TRANSPOSE becomes a
// RESHAPE of the NHWC input and one TRANSPOSE. A RESHAPE that merges axes keeps both copies.
TEST(LayoutCleanup, TransposeSplitTransposeBecomesOneTranspose) {
  GraphBuilder b;
  auto nchw = [&](ValueId v, const std::string& name) {
    return b.op(Op::TRANSPOSE, {v}, {{"perms", std::vector<int64_t>{0, 3, 1, 2}}}, name);
  };
  // Windows of 2 x 2 over a 4 x 6 map of 3 channels: [1, 3, 2, 2, 3, 2] -> [1, 2, 3, 2, 2, 3].
  ValueId x = b.input("x", {DType::kFp32, {1, 4, 6, 3}});
  ValueId w1 = b.op(Op::RESHAPE, {nchw(x, "x_nchw"), b.constant_shape("ws", {1, 3, 2, 2, 3, 2})}, {}, "win_split");
  ValueId w2 = b.op(Op::TRANSPOSE, {w1}, {{"perms", std::vector<int64_t>{0, 2, 4, 3, 5, 1}}}, "windows");
  b.output(b.op(Op::RESHAPE, {w2, b.constant_shape("wm", {1, 6, 4, 3})}, {}, "win_tokens"));
  // Pixel shuffle by 2 of 8 channels on 2 x 3: [1, 2, 2, 2, 2, 3] -> [1, 2, 2, 2, 3, 2] -> [1, 2, 4, 6].
  ValueId y = b.input("y", {DType::kFp32, {1, 2, 3, 8}});
  ValueId p1 = b.op(Op::RESHAPE, {nchw(y, "y_nchw"), b.constant_shape("ps", {1, 2, 2, 2, 2, 3})}, {}, "ps_split");
  ValueId p2 = b.op(Op::TRANSPOSE, {p1}, {{"perms", std::vector<int64_t>{0, 1, 4, 2, 5, 3}}}, "ps_perm");
  b.output(b.op(Op::RESHAPE, {p2, b.constant_shape("pm", {1, 2, 4, 6})}, {}, "shuffled"));
  // Kept: the RESHAPE merges H and W.
  ValueId z = b.input("z", {DType::kFp32, {1, 2, 3, 4}});
  ValueId m1 = b.op(Op::RESHAPE, {nchw(z, "z_nchw"), b.constant_shape("ms", {1, 4, 6})}, {}, "merged");
  b.output(b.op(Op::TRANSPOSE, {m1}, {{"perms", std::vector<int64_t>{0, 2, 1}}}, "tokens"));
  Graph g = b.finish();
  auto ramp = [](Shape s) {
    std::vector<double> v(static_cast<size_t>(shape_elements(s)));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
    return Tensor::from_doubles({DType::kFp32, std::move(s)}, v);
  };
  const std::vector<Tensor> inputs = {ramp({1, 4, 6, 3}), ramp({1, 2, 3, 8}), ramp({1, 2, 3, 4})};
  const std::vector<Tensor> before = Interpreter(Module(g)).run(inputs);
  EXPECT_EQ(count(g, Op::TRANSPOSE), 6);
  EXPECT_EQ(sink_layout_transposes(g), 2);
  EXPECT_EQ(count(g, Op::TRANSPOSE), 4);  // one per partition, two for the merge
  EXPECT_TRUE(verify_module(Module(g)).empty());
  const std::vector<Tensor> after = Interpreter(Module(g)).run(inputs);
  ASSERT_EQ(after.size(), 3u);
  for (size_t k = 0; k < 3; ++k) EXPECT_EQ(after[k].to_doubles(), before[k].to_doubles()) << k;
  EXPECT_EQ(g.value(g.outputs()[0]).name, "win_tokens");
}


// MaxViT's window departition as the importer writes it: windows [N, h, w, p, p, C] transposed
// to NCHW [N, C, h, p, w, p] and merged to [N, C, H, W]. Its readers take it back to NHWC: the
// residual's TRANSPOSE, a batch norm (MUL, ADD by per-channel constants) before a TRANSPOSE, a PAD
// before one, and the next partition (a split RESHAPE and a TRANSPOSE). Rule D gives the merge in
// NHWC first; the readers' TRANSPOSEs then cancel or move onto it (rules C and E).
TEST(LayoutCleanup, DepartitionThroughNchwStaysInNhwc) {
  GraphBuilder b;
  const int64_t h = 3, w = 2, p = 2, C = 3, H = h * p, W = w * p;
  auto to_nhwc = [&](ValueId v, const std::string& name) {
    return b.op(Op::TRANSPOSE, {v}, {{"perms", std::vector<int64_t>{0, 2, 3, 1}}}, name);
  };
  auto per_channel = [&](const std::string& name, double base) {
    std::vector<double> v;
    for (int64_t c = 0; c < C; ++c) v.push_back(base + 0.25 * static_cast<double>(c));
    return b.constant(name, Tensor::from_doubles({DType::kFp32, {1, C, 1, 1}}, v));
  };
  ValueId x = b.input("x", {DType::kFp32, {1, h, w, p, p, C}});
  ValueId t = b.op(Op::TRANSPOSE, {x}, {{"perms", std::vector<int64_t>{0, 5, 1, 3, 2, 4}}}, "dep_t");
  ValueId z = b.op(Op::RESHAPE, {t, b.constant_shape("dep_s", {1, C, H, W})}, {}, "departed");
  b.output(b.op(Op::ABS, {to_nhwc(z, "residual")}, {}, "residual_abs"));
  ValueId sh = b.constant("sh", Tensor::from_doubles({DType::kInt8, {1}}, std::vector<double>{0}));
  ValueId scaled = b.op(Op::MUL, {z, per_channel("bn_scale", 0.5), sh}, {}, "bn_mul");
  b.output(to_nhwc(b.op(Op::ADD, {scaled, per_channel("bn_shift", -1.0)}, {}, "bn_add"), "normed"));
  ValueId pad_value = b.constant("pad_value", Tensor::from_doubles({DType::kFp32, {1}}, std::vector<double>{0}));
  ValueId padded = b.op(Op::PAD, {z, b.constant_shape("pads", {0, 0, 0, 0, 1, 0, 0, 1}), pad_value}, {}, "padded");
  b.output(to_nhwc(padded, "padded_nhwc"));
  // The grid partition: H = 2 x 3 (the windows split it 3 x 2), W = 2 x 2.
  ValueId gs = b.op(Op::RESHAPE, {z, b.constant_shape("grid_s", {1, C, 2, 3, 2, 2})}, {}, "grid_split");
  ValueId gt = b.op(Op::TRANSPOSE, {gs}, {{"perms", std::vector<int64_t>{0, 2, 4, 3, 5, 1}}}, "grid_t");
  b.output(b.op(Op::RESHAPE, {gt, b.constant_shape("grid_m", {1, 4, 6, C})}, {}, "grid"));
  Graph g = b.finish();
  std::vector<double> xs(static_cast<size_t>(h * w * p * p * C));
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<double>(i) - 20.0;
  const std::vector<Tensor> inputs = {Tensor::from_doubles({DType::kFp32, {1, h, w, p, p, C}}, xs)};
  const std::vector<Tensor> before = Interpreter(Module(g)).run(inputs);
  EXPECT_EQ(count(g, Op::TRANSPOSE), 5);
  // The departition (D), the batch norm's and the PAD's TRANSPOSEs (E), the partition (C).
  EXPECT_EQ(sink_layout_transposes(g), 4);
  cancel_layout_pairs(g);
  EXPECT_TRUE(verify_module(Module(g)).empty());
  // The departition and the partition, each keeping C innermost; no layout TRANSPOSE is left.
  ASSERT_EQ(count(g, Op::TRANSPOSE), 2);
  for (const Node& n : g.nodes())
    if (n.op == Op::TRANSPOSE) {
      EXPECT_EQ(n.attr_ints("perms").back(), static_cast<int64_t>(n.attr_ints("perms").size()) - 1);
    }
  const std::vector<Tensor> after = Interpreter(Module(g)).run(inputs);
  ASSERT_EQ(after.size(), before.size());
  for (size_t k = 0; k < after.size(); ++k) {
    EXPECT_EQ(after[k].type(), before[k].type()) << k;
    EXPECT_EQ(after[k].to_doubles(), before[k].to_doubles()) << k;
  }
  EXPECT_EQ(g.value(g.outputs()[1]).name, "normed");
}

// Rule D only where every reader takes the result in NHWC: a reader that needs NCHW (the graph
// output itself, or an element-wise node whose result is also read elsewhere) keeps the graph.
TEST(LayoutCleanup, DepartitionWithAnNchwReaderStays) {
  for (int variant = 0; variant < 2; ++variant) {
    GraphBuilder b;
    ValueId x = b.input("x", {DType::kFp32, {1, 2, 2, 2, 2, 3}});
    ValueId t = b.op(Op::TRANSPOSE, {x}, {{"perms", std::vector<int64_t>{0, 5, 1, 3, 2, 4}}}, "dep_t");
    ValueId z = b.op(Op::RESHAPE, {t, b.constant_shape("dep_s", {1, 3, 4, 4})}, {}, "departed");
    b.output(b.op(Op::TRANSPOSE, {z}, {{"perms", std::vector<int64_t>{0, 2, 3, 1}}}, "residual"));
    if (variant == 0) {
      b.output(z);
    } else {
      ValueId a = b.op(Op::ABS, {z}, {}, "abs");
      b.output(b.op(Op::TRANSPOSE, {a}, {{"perms", std::vector<int64_t>{0, 2, 3, 1}}}, "abs_nhwc"));
      b.output(b.op(Op::CEIL, {a}, {}, "abs_nchw"));
    }
    Graph g = b.finish();
    const int transposes = count(g, Op::TRANSPOSE);
    EXPECT_EQ(sink_layout_transposes(g), 0) << variant;
    EXPECT_EQ(count(g, Op::TRANSPOSE), transposes) << variant;
  }
}

}  // namespace weft::compiler
