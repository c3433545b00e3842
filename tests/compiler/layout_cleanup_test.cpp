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

}  // namespace weft::compiler
