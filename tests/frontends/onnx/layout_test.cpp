// Layout and folding of the ONNX frontend: a CNN keeps NHWC inside and transposes only at its input
// boundary, transposes that cancel vanish, and shape arithmetic folds to constants.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "frontends/onnx/onnx_builder.h"
#include "weft/interpreter.h"

namespace weft {
namespace {

using namespace test::onnxb;

// x [1,3,8,8] -> Conv(3x3, pad 1) -> Relu -> Conv(3x3, pad 1) -> Add(residual: the Relu output)
// -> GlobalAveragePool -> Flatten -> Gemm(transB) -> y [1,5]
struct Cnn {
  Shape xs{1, 3, 8, 8}, w1s{4, 3, 3, 3}, w2s{4, 4, 3, 3};
  std::vector<float> w1 = ramp(108, 201), b1 = ramp(4, 202), w2 = ramp(144, 203), b2 = ramp(4, 204);
  std::vector<float> fc = ramp(20, 205), fcb = ramp(5, 206);

  ModelBuilder build() const {
    ModelBuilder mb(13);
    mb.input("x", kFloat, xs).output("y");
    mb.init_f("w1", w1s, w1).init_f("b1", {4}, b1).init_f("w2", w2s, w2).init_f("b2", {4}, b2);
    mb.init_f("fc", {5, 4}, fc).init_f("fcb", {5}, fcb);
    attr_ints(mb.node("Conv", {"x", "w1", "b1"}, {"c1"}), "pads", {1, 1, 1, 1});
    mb.node("Relu", {"c1"}, {"r1"});
    attr_ints(mb.node("Conv", {"r1", "w2", "b2"}, {"c2"}), "pads", {1, 1, 1, 1});
    mb.node("Add", {"c2", "r1"}, {"a"});
    mb.node("GlobalAveragePool", {"a"}, {"g"});
    mb.node("Flatten", {"g"}, {"f"});
    attr_i(mb.node("Gemm", {"f", "fc", "fcb"}, {"y"}), "transB", 1);
    return mb;
  }

  std::vector<float> reference(const std::vector<float>& x) const {
    ConvParams p;
    p.pads = {1, 1, 1, 1};
    Shape s1, s2;
    auto r1 = ref_conv(x, xs, w1, w1s, b1, p, &s1);
    for (auto& v : r1) v = std::max(v, 0.0f);
    auto c2 = ref_conv(r1, s1, w2, w2s, b2, p, &s2);
    std::vector<double> pooled(4, 0.0);
    for (size_t i = 0; i < c2.size(); ++i) pooled[i / 64] += static_cast<double>(c2[i]) + r1[i];
    std::vector<float> y;
    for (int j = 0; j < 5; ++j) {
      double s = fcb[static_cast<size_t>(j)];
      for (int k = 0; k < 4; ++k) s += pooled[static_cast<size_t>(k)] / 64.0 * fc[static_cast<size_t>(j * 4 + k)];
      y.push_back(static_cast<float>(s));
    }
    return y;
  }
};

TEST(OnnxLayout, CnnHasOneTransposeAtTheInput) {
  Cnn cnn;
  Module m = cnn.build().import();
  EXPECT_EQ(count_ops(m, Op::TRANSPOSE), 1);
  // The one TRANSPOSE reads the graph input and makes it NHWC.
  const Graph& g = m.main();
  for (const Node& n : g.nodes()) {
    if (n.op != Op::TRANSPOSE) continue;
    ASSERT_EQ(n.inputs.size(), 1u);
    EXPECT_EQ(n.inputs[0], g.inputs()[0]);
    EXPECT_EQ(n.attr_ints("perms"), (std::vector<int64_t>{0, 2, 3, 1}));
  }
  EXPECT_EQ(count_ops(m, Op::CONV2D), 2);
  // Inputs and outputs keep ONNX's names and shapes.
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.value(g.inputs()[0]).name, "x");
  EXPECT_EQ(g.value(g.inputs()[0]).type, (TensorType{DType::kFp32, {1, 3, 8, 8}}));
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.value(g.outputs()[0]).name, "y");
  EXPECT_EQ(g.value(g.outputs()[0]).type, (TensorType{DType::kFp32, {1, 5}}));

  // And it computes the model: through the runtime and through the interpreter.
  const auto x = ramp(192, 207);
  const auto want = cnn.reference(x);
  auto out = run_module(m, {f32(cnn.xs, x)});
  expect_near(out[0], {1, 5}, want);
  Interpreter interp(m);
  auto out2 = interp.run(std::vector<Tensor>{f32(cnn.xs, x)});
  expect_near(out2[0], {1, 5}, want);
}

TEST(OnnxLayout, CancellingTransposesLeaveNoTranspose) {
  ModelBuilder mb(13);
  mb.input("x", kFloat, {1, 2, 3, 4}).output("y");
  attr_ints(mb.node("Transpose", {"x"}, {"t"}), "perm", {0, 2, 3, 1});
  attr_ints(mb.node("Transpose", {"t"}, {"y"}), "perm", {0, 3, 1, 2});
  Module m = mb.import();
  EXPECT_EQ(count_ops(m, Op::TRANSPOSE), 0);
  const Graph& g = m.main();
  EXPECT_EQ(g.value(g.outputs()[0]).type, (TensorType{DType::kFp32, {1, 2, 3, 4}}));
  const auto x = ramp(24, 211);
  auto out = run_module(m, {f32({1, 2, 3, 4}, x)});
  expect_near(out[0], {1, 2, 3, 4}, x, 0.0);
}

TEST(OnnxLayout, SingleTransposeIsEmittedOnceAtTheOutput) {
  // One real Transpose: its data moves once, at the output boundary.
  ModelBuilder mb(13);
  mb.input("x", kFloat, {2, 3, 4}).output("y");
  attr_ints(mb.node("Transpose", {"x"}, {"y"}), "perm", {2, 0, 1});
  Module m = mb.import();
  EXPECT_EQ(count_ops(m, Op::TRANSPOSE), 1);
  std::vector<float> x(24);
  for (int i = 0; i < 24; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i);
  std::vector<float> want;
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) want.push_back(x[static_cast<size_t>((i * 3 + j) * 4 + k)]);
  auto out = run_module(m, {f32({2, 3, 4}, x)});
  expect_near(out[0], {4, 2, 3}, want, 0.0);
}

TEST(OnnxLayout, BroadcastOperandsMeetAConvOutputInItsLayout) {
  // c = Conv(x) [1,3,4,5] (NHWC inside); y = Where(c > row, c * col, row) with row [5] (W) and
  // col [4,1] (H) broadcast against it.
  const Shape xs{1, 2, 4, 5}, ws{3, 2, 1, 1};
  const auto x = ramp(40, 231), w = ramp(6, 232), row = ramp(5, 233), col = ramp(4, 234);
  ModelBuilder mb(13);
  mb.input("x", kFloat, xs).init_f("w", ws, w).init_f("row", {5}, row).init_f("col", {4, 1}, col).output("y");
  mb.node("Conv", {"x", "w"}, {"c"});
  mb.node("Greater", {"c", "row"}, {"g"});
  mb.node("Mul", {"c", "col"}, {"m"});
  mb.node("Where", {"g", "m", "row"}, {"y"});
  Module m = mb.import();
  EXPECT_EQ(count_ops(m, Op::TRANSPOSE), 2);  // the input and the output boundary
  Shape cs;
  const auto c = ref_conv(x, xs, w, ws, {}, {}, &cs);
  std::vector<float> want;
  for (int o = 0; o < 3; ++o)
    for (int h = 0; h < 4; ++h)
      for (int q = 0; q < 5; ++q) {
        const float v = c[static_cast<size_t>((o * 4 + h) * 5 + q)];
        want.push_back(v > row[static_cast<size_t>(q)] ? v * col[static_cast<size_t>(h)] : row[static_cast<size_t>(q)]);
      }
  auto out = run_module(m, {f32(xs, x)});
  expect_near(out[0], {1, 3, 4, 5}, want);
}

TEST(OnnxLayout, LegacySoftmaxFlattensFromAxisOnAConvOutput) {
  // Before opset 13, Softmax(axis=1) normalizes over C*H*W together.
  const Shape xs{1, 2, 2, 3}, ws{2, 2, 1, 1};
  const auto x = ramp(12, 241), w = ramp(4, 242);
  ModelBuilder mb(11);
  mb.input("x", kFloat, xs).init_f("w", ws, w).output("y");
  mb.node("Conv", {"x", "w"}, {"c"});
  attr_i(mb.node("Softmax", {"c"}, {"y"}), "axis", 1);
  Shape cs;
  const auto c = ref_conv(x, xs, w, ws, {}, {}, &cs);
  double mx = -1e30, sum = 0;
  for (float v : c) mx = std::max<double>(mx, v);
  for (float v : c) sum += std::exp(v - mx);
  std::vector<float> want;
  for (float v : c) want.push_back(static_cast<float>(std::exp(v - mx) / sum));
  auto out = run_module(mb.import(), {f32(xs, x)});
  expect_near(out[0], xs, want);
}

TEST(OnnxLayout, ResidualFromTheGraphInputTransposesItOnce) {
  // x feeds both a Conv and the residual Add: its NHWC form should be made once.
  const Shape xs{1, 2, 3, 3}, ws{2, 2, 3, 3};
  const auto x = ramp(18, 251), w = ramp(36, 252);
  ModelBuilder mb(13);
  mb.input("x", kFloat, xs).init_f("w", ws, w).output("y");
  attr_ints(mb.node("Conv", {"x", "w"}, {"c"}), "pads", {1, 1, 1, 1});
  mb.node("Add", {"c", "x"}, {"a"});
  mb.node("GlobalAveragePool", {"a"}, {"y"});
  Module m = mb.import();
  ConvParams p;
  p.pads = {1, 1, 1, 1};
  Shape cs;
  const auto c = ref_conv(x, xs, w, ws, {}, p, &cs);
  std::vector<float> want(2, 0.f);
  for (size_t i = 0; i < c.size(); ++i) want[i / 9] += (c[i] + x[i]) / 9.f;
  expect_near(run_module(m, {f32(xs, x)})[0], {1, 2, 1, 1}, want);
  int of_input = 0;
  for (const Node& n : m.main().nodes())
    if (n.op == Op::TRANSPOSE && n.inputs[0] == m.main().inputs()[0] && n.attr_ints("perms") == std::vector<int64_t>{0, 2, 3, 1})
      ++of_input;
  EXPECT_EQ(of_input, 1);
  EXPECT_EQ(count_ops(m, Op::TRANSPOSE), 1);
}

TEST(OnnxLayout, ConvToTokensNeedsNoTransposeInside) {
  // ViT-style patch embedding: Conv -> Transpose(0,2,3,1) -> Reshape [1, H*W, C]. The transpose
  // asks for exactly the NHWC layout the Conv already produced.
  const Shape xs{1, 2, 4, 4}, ws{3, 2, 2, 2};
  const auto x = ramp(32, 261), w = ramp(24, 262), b = ramp(3, 263);
  ModelBuilder mb(13);
  mb.input("x", kFloat, xs).init_f("w", ws, w).init_f("b", {3}, b).init_i64("tok", {3}, {1, 4, 3}).output("y");
  attr_ints(mb.node("Conv", {"x", "w", "b"}, {"c"}), "strides", {2, 2});
  attr_ints(mb.node("Transpose", {"c"}, {"t"}), "perm", {0, 2, 3, 1});
  mb.node("Reshape", {"t", "tok"}, {"y"});
  Module m = mb.import();
  EXPECT_EQ(count_ops(m, Op::TRANSPOSE), 1);  // the input boundary only
  ConvParams p;
  p.strides = {2, 2};
  Shape cs;
  const auto c = ref_conv(x, xs, w, ws, b, p, &cs);
  std::vector<float> want;
  for (int hw = 0; hw < 4; ++hw)
    for (int o = 0; o < 3; ++o) want.push_back(c[static_cast<size_t>(o * 4 + hw)]);
  expect_near(run_module(m, {f32(xs, x)})[0], {1, 4, 3}, want);
}

TEST(OnnxLayout, ArgMaxOverChannelsOfAConvOutput) {
  const Shape xs{1, 2, 2, 3}, ws{4, 2, 1, 1};
  const auto x = ramp(12, 271), w = ramp(8, 272);
  ModelBuilder mb(13);
  mb.input("x", kFloat, xs).init_f("w", ws, w).output("k", kInt64).output("d", kInt64);
  mb.node("Conv", {"x", "w"}, {"c"});
  attr_i(mb.node("ArgMax", {"c"}, {"k"}), "axis", 1);
  auto& n = mb.node("ArgMax", {"c"}, {"d"});
  attr_i(n, "axis", 1);
  attr_i(n, "keepdims", 0);
  Shape cs;
  const auto c = ref_conv(x, xs, w, ws, {}, {}, &cs);
  std::vector<int64_t> want;
  for (int hw = 0; hw < 6; ++hw) {
    int best = 0;
    for (int o = 1; o < 4; ++o)
      if (c[static_cast<size_t>(o * 6 + hw)] > c[static_cast<size_t>(best * 6 + hw)]) best = o;
    want.push_back(best);
  }
  auto out = run_module(mb.import(), {f32(xs, x)});
  expect_ints(out[0], {1, 1, 2, 3}, want);
  expect_ints(out[1], {1, 2, 3}, want);
}

// torch's seq-first blocks at batch > 1 (nn.MultiheadAttention inside a batch-first model: ViT):
// x [B, S, E] is transposed to [S, B, E] for a projection and back for the residual, layer norm and
// MLP. A MatMul by a matrix and a LayerNormalization over the last axis treat rows alone, so they
// run in the carried layout and the transposes cancel: no TRANSPOSE in the graph, and the numbers
// of the same block written batch-first (through the reference interpreter, bit for bit).
TEST(OnnxLayout, SeqFirstRowOperationsKeepTheCarriedLayout) {
  const int64_t B = 2, S = 3, E = 4, F = 5;
  auto build = [&](bool seq_first) {
    ModelBuilder mb(17);
    mb.input("x", kFloat, {B, S, E}).output("y").output("mean");
    mb.init_f("w1", {E, E}, ramp(E * E, 271)).init_f("b1", {E}, ramp(E, 272));
    mb.init_f("g", {E}, ramp(E, 273)).init_f("beta", {E}, ramp(E, 274));
    mb.init_f("w2", {E, F}, ramp(E * F, 275)).init_f("b2", {F}, ramp(F, 276));
    std::string in = "x";
    if (seq_first) attr_ints(mb.node("Transpose", {"x"}, {"xt"}), "perm", {1, 0, 2}), in = "xt";
    mb.node("MatMul", {in, "w1"}, {"p"});
    mb.node("Add", {"p", "b1"}, {"pb"});
    std::string proj = "pb";
    if (seq_first) attr_ints(mb.node("Transpose", {"pb"}, {"pt"}), "perm", {1, 0, 2}), proj = "pt";
    mb.node("Add", {proj, "x"}, {"r"});
    std::string normed_in = "r";
    if (seq_first) attr_ints(mb.node("Transpose", {"r"}, {"rt"}), "perm", {1, 0, 2}), normed_in = "rt";
    auto& ln = mb.node("LayerNormalization", {normed_in, "g", "beta"}, {"n", seq_first ? "mt" : "mean"});
    attr_i(ln, "axis", -1);
    mb.node("MatMul", {"n", "w2"}, {"h"});
    mb.node("Add", {"h", "b2"}, {seq_first ? "yt" : "y"});
    if (seq_first) {
      attr_ints(mb.node("Transpose", {"yt"}, {"y"}), "perm", {1, 0, 2});
      attr_ints(mb.node("Transpose", {"mt"}, {"mean"}), "perm", {1, 0, 2});
    }
    return mb.import();
  };
  const Module seq = build(true), batch = build(false);
  EXPECT_EQ(count_ops(seq, Op::TRANSPOSE), 0);
  const Tensor x = f32({B, S, E}, ramp(B * S * E, 277));
  const std::vector<Tensor> a = Interpreter(seq).run({x}), b = Interpreter(batch).run({x});
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  for (size_t o = 0; o < 2; ++o) {
    EXPECT_EQ(a[o].type(), b[o].type());
    EXPECT_TRUE(a[o].identical(b[o])) << o;
  }
}

TEST(OnnxFolding, ShapeGatherUnsqueezeConcatReshapeFoldsToOneReshape) {
  // y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])): [2,3,4] -> [2,12].
  ModelBuilder mb(13);
  mb.input("x", kFloat, {2, 3, 4}).output("y");
  mb.init_i64("zero", {}, {0}).init_i64("axes0", {1}, {0}).init_i64("minus1", {1}, {-1});
  mb.node("Shape", {"x"}, {"s"});
  mb.node("Gather", {"s", "zero"}, {"d0"});
  mb.node("Unsqueeze", {"d0", "axes0"}, {"d0u"});
  attr_i(mb.node("Concat", {"d0u", "minus1"}, {"shape"}), "axis", 0);
  mb.node("Reshape", {"x", "shape"}, {"y"});
  Module m = mb.import();
  EXPECT_EQ(count_ops(m, Op::RESHAPE), 1);
  EXPECT_EQ(count_ops(m, Op::GATHER), 0);
  EXPECT_EQ(count_ops(m, Op::CONCAT), 0);
  std::set<Op> ops;
  for (const Node& n : m.main().nodes()) ops.insert(n.op);
  EXPECT_EQ(ops, (std::set<Op>{Op::RESHAPE, Op::CONST_SHAPE}));
  const Graph& g = m.main();
  EXPECT_EQ(g.value(g.outputs()[0]).type, (TensorType{DType::kFp32, {2, 12}}));
  const auto x = ramp(24, 221);
  auto out = run_module(m, {f32({2, 3, 4}, x)});
  expect_near(out[0], {2, 12}, x, 0.0);
}

TEST(OnnxFolding, ShapeSliceConcatReshapeFolds) {
  // Reshape(x, Concat([-1], Shape(x)[-1:])) : [2,3,4] -> [6,4], the slice ending at INT64_MAX.
  ModelBuilder mb(13);
  mb.input("x", kFloat, {2, 3, 4}).output("y");
  mb.init_i64("st", {1}, {-1}).init_i64("en", {1}, {INT64_MAX}).init_i64("minus1", {1}, {-1});
  mb.node("Shape", {"x"}, {"s"});
  mb.node("Slice", {"s", "st", "en"}, {"last"});
  attr_i(mb.node("Concat", {"minus1", "last"}, {"shape"}), "axis", 0);
  mb.node("Reshape", {"x", "shape"}, {"y"});
  Module m = mb.import();
  EXPECT_EQ(count_ops(m, Op::RESHAPE), 1);
  EXPECT_EQ(count_ops(m, Op::SLICE), 0);
  EXPECT_EQ(count_ops(m, Op::CONCAT), 0);
  EXPECT_EQ(m.main().value(m.main().outputs()[0]).type.shape, (Shape{6, 4}));
}

TEST(OnnxFolding, ConstantSubgraphFoldsIntoOneConstant) {
  // (c * 2 + 1) on constants folds at import time: the graph keeps one ADD with a CONST.
  ModelBuilder mb(13);
  mb.input("x", kFloat, {3}).output("y");
  mb.init_f("c", {3}, {1.f, -2.f, 0.5f}).init_f("two", {}, {2.f}).init_f("one", {}, {1.f});
  mb.node("Mul", {"c", "two"}, {"c2"});
  mb.node("Add", {"c2", "one"}, {"c3"});
  mb.node("Add", {"x", "c3"}, {"y"});
  Module m = mb.import();
  EXPECT_EQ(count_ops(m, Op::MUL), 0);
  EXPECT_EQ(count_ops(m, Op::ADD), 1);
  auto out = run_module(m, {f32({3}, {10.f, 20.f, 30.f})});
  expect_near(out[0], {3}, {13.f, 17.f, 32.f}, 0.0);
}

}  // namespace
}  // namespace weft
