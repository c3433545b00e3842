// compiler::canonicalize: one form for computations frameworks write in several.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "compiler/canonicalize.h"
#include "compiler/count_ops.h"
#include "weft/interpreter.h"
#include "weft/verify.h"

namespace weft::compiler {
namespace {

// x -> POW(x, e) -> RECIPROCAL -> out; with `second_reader`, the POW's result is also an output.
Graph reciprocal_of_pow(double e, bool second_reader = false) {
  GraphBuilder b;
  ValueId x = b.input("x", {DType::kFp32, {2, 3}});
  ValueId half = b.constant("e", Tensor::from_doubles({DType::kFp32, {1, 1}}, std::vector<double>{e}));
  ValueId p = b.op(Op::POW, {x, half}, {}, "sqrt");
  b.output(b.op(Op::RECIPROCAL, {p}, {}, "y"));
  if (second_reader) b.output(p);
  return b.finish();
}

TEST(Canonicalize, ReciprocalOfSquareRootBecomesRsqrt) {
  Graph g = reciprocal_of_pow(0.5);
  const Tensor x = Tensor::from_doubles({DType::kFp32, {2, 3}}, std::vector<double>{0.25, 1, 2, 4, 9, 1e-6});
  const std::vector<Tensor> before = Interpreter(Module(g)).run({x});
  const CanonicalizeStats s = canonicalize(g);
  EXPECT_EQ(s.rsqrt, 1);
  EXPECT_EQ(count(g, Op::POW), 0);
  EXPECT_EQ(count(g, Op::RECIPROCAL), 0);
  ASSERT_EQ(count(g, Op::RSQRT), 1);
  EXPECT_TRUE(verify_module(Module(g)).empty());
  const std::vector<Tensor> after = Interpreter(Module(g)).run({x});
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const double want = 1.0 / std::sqrt(x.at_double(i));
    EXPECT_NEAR(after[0].at_double(i), want, 2e-6 * want) << i;
    EXPECT_NEAR(after[0].at_double(i), before[0].at_double(i), 2e-6 * want) << i;
  }
}

TEST(Canonicalize, OtherExponentsAndSharedSquareRootsStay) {
  for (double e : {2.0, 0.25, -0.5}) {
    Graph g = reciprocal_of_pow(e);
    EXPECT_EQ(canonicalize(g).rsqrt, 0) << e;
    EXPECT_EQ(count(g, Op::POW), 1) << e;
  }
  Graph g = reciprocal_of_pow(0.5, /*second_reader=*/true);  // the square root is also needed
  EXPECT_EQ(canonicalize(g).rsqrt, 0);
  EXPECT_EQ(count(g, Op::POW), 1);
  EXPECT_EQ(count(g, Op::RECIPROCAL), 1);
}

TEST(Canonicalize, ConstantFirstAddAndMulAreCommuted) {
  GraphBuilder b;
  ValueId x = b.input("x", {DType::kFp32, {1, 2, 3}});
  ValueId g = b.constant("g", Tensor::from_doubles({DType::kFp32, {1, 1, 3}}, std::vector<double>{0.5, -2, 3}));
  ValueId shift = b.constant("s", Tensor::from_ints({DType::kInt8, {1}}, std::vector<int64_t>{0}));
  ValueId m = b.op(Op::MUL, {g, x, shift}, {}, "m");
  ValueId a = b.op(Op::ADD, {g, m}, {}, "a");
  ValueId c = b.op(Op::ADD, {g, g}, {}, "cc");  // both constant: left alone
  ValueId s2 = b.op(Op::SUB, {g, a}, {}, "sub");  // not commutative: left alone
  b.output(s2);
  b.output(c);
  Graph gr = b.finish();
  const Tensor in = Tensor::from_doubles({DType::kFp32, {1, 2, 3}}, std::vector<double>{1, 2, 3, -4, 5, 0.25});
  const std::vector<Tensor> before = Interpreter(Module(gr)).run({in});
  EXPECT_EQ(canonicalize(gr).commuted, 2);
  auto is_const = [&](ValueId v) { return gr.value(v).producer >= 0 && gr.node(gr.value(v).producer).op == Op::CONST; };
  for (const Node& n : gr.nodes()) {
    if (n.op == Op::MUL || (n.op == Op::ADD && n.inputs[0] != n.inputs[1])) {
      EXPECT_FALSE(is_const(n.inputs[0])) << op_name(n.op);
      EXPECT_TRUE(is_const(n.inputs[1])) << op_name(n.op);
    }
    if (n.op == Op::SUB) {
      EXPECT_TRUE(is_const(n.inputs[0]));
    }
  }
  const std::vector<Tensor> after = Interpreter(Module(gr)).run({in});
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) EXPECT_TRUE(after[i].identical(before[i])) << i;
}

// Swin's shifted-window scores: x [nW, H, N, N] + bias c1, RESHAPEd to `mid`, + mask c2, RESHAPEd
// back. With `shared`, the first sum is also a graph output.
Graph shifted_window_scores(const Shape& c1s, const Shape& mid, const Shape& c2s, DType t = DType::kFp32,
                            bool shared = false) {
  GraphBuilder b;
  const Shape xs = {4, 3, 5, 5};
  ValueId x = b.input("x", {t, xs});
  std::vector<double> c1(static_cast<size_t>(shape_elements(c1s))), c2(static_cast<size_t>(shape_elements(c2s)));
  for (size_t i = 0; i < c1.size(); ++i) c1[i] = std::sin(double(i) * 1.3) * 3;
  for (size_t i = 0; i < c2.size(); ++i) c2[i] = (i * 7) % 3 == 0 ? -100.0 : 0.0;
  ValueId a = b.op(Op::ADD, {x, b.constant("bias", Tensor::from_doubles({t, c1s}, c1))}, {}, "biased");
  ValueId r = b.op(Op::RESHAPE, {a, b.constant_shape("mid", mid)}, {}, "windows");
  ValueId m = b.op(Op::ADD, {r, b.constant("mask", Tensor::from_doubles({t, c2s}, c2))}, {}, "masked");
  b.output(b.op(Op::RESHAPE, {m, b.constant_shape("back", xs)}, {}, "scores"));
  if (shared) b.output(a);
  return b.finish();
}

TEST(Canonicalize, ConstantAddsThroughAReshapeBecomeOne) {
  std::vector<double> xv(4 * 3 * 5 * 5);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::cos(double(i) * 0.7) * 5;
  for (DType t : {DType::kFp32, DType::kFp16}) {
    for (const Shape& mask : {Shape{1, 4, 1, 5, 5}, Shape{1, 1, 3, 1, 5}, Shape{1}}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " mask rank " + std::to_string(mask.size()));
      const Shape c2s = mask.size() == 1 ? Shape{1, 1, 1, 1, 1} : mask;
      Graph g = shifted_window_scores({1, 3, 5, 5}, {1, 4, 3, 5, 5}, c2s, t);
      const Tensor x = Tensor::from_doubles({t, {4, 3, 5, 5}}, xv);
      const std::vector<Tensor> before = Interpreter(Module(g)).run({x});
      // The mask as it broadcasts over the scores, to tell exact elements from the others.
      const Graph plain = shifted_window_scores({1, 3, 5, 5}, {1, 4, 3, 5, 5}, c2s, t);
      EXPECT_EQ(canonicalize(g).constant_adds, 1);
      EXPECT_EQ(count(g, Op::ADD), 1);
      ASSERT_TRUE(verify_module(Module(g)).empty());
      Shape sum = {1, 1, 3, 5, 5};  // the bias as it reads over the windows
      for (size_t k = 0; k < sum.size(); ++k) sum[k] = std::max(sum[k], c2s[k]);
      for (const Node& n : g.nodes()) {
        if (n.op == Op::ADD) {
          EXPECT_EQ(g.value(n.inputs[1]).type.shape, sum);
        }
      }
      const std::vector<Tensor> after = Interpreter(Module(g)).run({x});
      ASSERT_EQ(after.size(), 1u);
      // Where the mask is 0 the sum is the same bits; where it is -100 it rounds once, not twice.
      const Tensor& c2 = plain.node(plain.value(plain.value_id("mask")).producer).attr_tensor("values");
      int exact = 0;
      for (int64_t i = 0; i < x.num_elements(); ++i) {
        const int64_t at[4] = {i / 75, i / 25 % 3, i / 5 % 5, i % 5};  // window, head, row, column
        int64_t ci = 0;
        for (size_t k = 1; k < 5; ++k) ci = ci * c2s[k] + (c2s[k] == 1 ? 0 : at[k - 1]);
        if (c2.at_double(ci) == 0) {
          EXPECT_EQ(after[0].at_double(i), before[0].at_double(i)) << i;
          ++exact;
        } else {
          EXPECT_NEAR(after[0].at_double(i), before[0].at_double(i), t == DType::kFp16 ? 0.07 : 1e-5) << i;
        }
      }
      if (shape_elements(c2s) > 1) {
        EXPECT_GT(exact, 0);
      }
    }
  }
}

TEST(Canonicalize, ConstantAddsStayApartWhereTheFoldWouldChangeMeaning) {
  // The bias varies along windows but not heads, and the RESHAPE merges the two: no shape over the
  // merged axis reads it.
  Graph g = shifted_window_scores({4, 1, 5, 5}, {12, 5, 5}, {1, 1, 5});
  EXPECT_EQ(canonicalize(g).constant_adds, 0);
  EXPECT_EQ(count(g, Op::ADD), 2);
  // The first sum is read elsewhere too.
  g = shifted_window_scores({1, 3, 5, 5}, {1, 4, 3, 5, 5}, {1, 4, 1, 5, 5}, DType::kFp32, /*shared=*/true);
  EXPECT_EQ(canonicalize(g).constant_adds, 0);
  EXPECT_EQ(count(g, Op::ADD), 2);
  // The bias broadcast over a whole merged group (windows and heads) folds.
  g = shifted_window_scores({1, 1, 5, 5}, {12, 5, 5}, {1, 1, 5});
  EXPECT_EQ(canonicalize(g).constant_adds, 1);
  EXPECT_EQ(count(g, Op::ADD), 1);
}

// Values of a [2, 3, 8] input spread over [-6, 6] (both sides of the hard-swish knees, GELU's tail).
Tensor spread_input(DType t = DType::kFp32) {
  std::vector<double> v(48);
  for (size_t i = 0; i < v.size(); ++i) v[i] = -6.0 + 12.0 * static_cast<double>(i) / 47.0 + 0.01 * std::sin(double(i));
  return Tensor::from_doubles({t, {2, 3, 8}}, v);
}

ValueId scalar_const(GraphBuilder& b, const std::string& name, double v, int rank = 3) {
  return b.constant(name, Tensor::from_doubles({DType::kFp32, Shape(static_cast<size_t>(rank), 1)}, std::vector<double>{v}));
}
ValueId shift0(GraphBuilder& b, const std::string& name) {
  return b.constant(name, Tensor::from_ints({DType::kInt8, {1}}, std::vector<int64_t>{0}));
}

TEST(Canonicalize, SummaryNamesWhatRan) {
  CanonicalizeStats s;
  EXPECT_EQ(canonical_summary(s), "");
  s.commuted = 3;  // (not worth a line)
  s.reshapes = 2;
  EXPECT_EQ(canonical_summary(s), "");
  s.common = 1;
  s.activations = 4;
  s.constant_adds = 5;
  EXPECT_EQ(canonical_summary(s), "1 repeated computation merged, 4 hand-written activations put in the fused form, "
                                  "5 pairs of constant ADDs folded into one");
}

TEST(Canonicalize, BroadcastTilesInFrontOfElementwiseOperatorsGo) {
  // F.normalize as imported: x * RECIPROCAL(TILE(CLAMP(norm, eps))), the TILE ONNX's Expand.
  // (The TILEs' multiples are equal constants, merged into one CONST_SHAPE: that is no reader of
  // a TILE's result, so it does not matter here.)
  GraphBuilder b;
  ValueId x = b.input("x", {DType::kFp32, {2, 3, 8}});
  auto guarded_norm = [&](const std::string& s) {
    ValueId sum = b.op(Op::REDUCE_SUM, {b.op(Op::MUL, {x, x, shift0(b, "sq_sh" + s)}, {}, "sq" + s)},
                       {{"axis", int64_t{2}}}, "sum" + s);
    return b.op(Op::CLAMP, {sum},
                {{"min_val", Tensor::from_doubles({DType::kFp32, {}}, std::vector<double>{1e-12 * std::stoi(s)})},
                 {"max_val", Tensor::from_doubles({DType::kFp32, {}}, std::vector<double>{INFINITY})},
                 {"nan_mode", static_cast<int64_t>(NanMode::kPropagate)}},
                "clamp" + s);  // (eps differs per copy, so that the copies are not merged)
  };
  ValueId t1 = b.op(Op::TILE, {guarded_norm("1"), b.constant_shape("m1", {1, 1, 8})}, {}, "tile1");
  b.output(b.op(Op::MUL, {x, b.op(Op::RECIPROCAL, {t1}, {}, "inv1"), shift0(b, "sh1")}, {}, "y1"));
  // The TILE straight into the second operand of a SUB, and into the first of an ADD.
  ValueId t2 = b.op(Op::TILE, {guarded_norm("2"), b.constant_shape("m2", {1, 1, 8})}, {}, "tile2");
  b.output(b.op(Op::SUB, {x, t2}, {}, "y2"));
  ValueId t3 = b.op(Op::TILE, {guarded_norm("3"), b.constant_shape("m3", {1, 1, 8})}, {}, "tile3");
  b.output(b.op(Op::ADD, {b.op(Op::EXP, {t3}, {}, "e3"), x}, {}, "y3"));
  // Kept: a TILE that repeats more than an axis of 1, a TILE whose result is also a graph output,
  // and a TILE read by an operator whose other operand is smaller than the result.
  ValueId half = b.op(Op::SLICE, {x, b.constant_shape("s0", {0, 0, 0}), b.constant_shape("s1", {2, 3, 4})}, {}, "half");
  ValueId rep = b.op(Op::TILE, {half, b.constant_shape("m4", {1, 1, 2})}, {}, "repeat");
  b.output(b.op(Op::MUL, {x, rep, shift0(b, "sh4")}, {}, "y4"));
  ValueId t5 = b.op(Op::TILE, {guarded_norm("5"), b.constant_shape("m5", {1, 1, 8})}, {}, "tile5");
  b.output(b.op(Op::MUL, {x, t5, shift0(b, "sh5")}, {}, "y5"));
  b.output(t5);
  ValueId col = b.op(Op::REDUCE_SUM, {x}, {{"axis", int64_t{1}}}, "col");  // [2, 1, 8]
  ValueId t6 = b.op(Op::TILE, {guarded_norm("6"), b.constant_shape("m6", {1, 1, 8})}, {}, "tile6");
  b.output(b.op(Op::MUL, {col, t6, shift0(b, "sh6")}, {}, "y6"));
  Graph g = b.finish();
  ASSERT_TRUE(verify_module(Module(g)).empty());
  const Tensor in = spread_input();
  const std::vector<Tensor> before = Interpreter(Module(g)).run({in});
  const CanonicalizeStats st = canonicalize(g);
  EXPECT_EQ(st.tiles, 3);
  EXPECT_EQ(count(g, Op::TILE), 3);  // repeat, tile5, tile6
  EXPECT_NE(canonical_summary(st).find("3 broadcast TILEs left to their element-wise readers"), std::string::npos)
      << canonical_summary(st);
  ASSERT_TRUE(verify_module(Module(g)).empty());
  const std::vector<Tensor> after = Interpreter(Module(g)).run({in});
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) EXPECT_TRUE(after[i].identical(before[i])) << i;
}

TEST(Canonicalize, ConvolutionTapsThatReadOnlyPaddingAreCut) {
  // Atrous convolutions on a 6 x 7 map (DeepLabV3's ASPP in small): x is [1, 6, 7, 3].
  GraphBuilder b;
  ValueId x = b.input("x", {DType::kFp32, {1, 6, 7, 3}});
  ValueId z = b.constant("zp", Tensor::from_doubles({DType::kFp32, {1}}, std::vector<double>{0}));
  auto kernel = [&](const std::string& name, Shape s) {
    std::vector<double> v(static_cast<size_t>(shape_elements(s)));
    for (size_t i = 0; i < v.size(); ++i) v[i] = 0.25 * std::sin(0.7 * static_cast<double>(i) + 0.3);
    return b.constant(name, Tensor::from_doubles({DType::kFp32, std::move(s)}, v));
  };
  auto conv = [&](const std::string& name, ValueId w, std::vector<int64_t> pad, std::vector<int64_t> stride,
                  std::vector<int64_t> dil, bool depthwise = false) {
    ValueId bias = b.constant(name + "_b", Tensor::from_doubles({DType::kFp32, {4}}, std::vector<double>{0.1, -0.2, 0.3, 0}));
    return b.op(depthwise ? Op::DEPTHWISE_CONV2D : Op::CONV2D, {x, w, bias, z, z},
                {{"pad", pad}, {"stride", stride}, {"dilation", dil}, {"acc_type", static_cast<int64_t>(AccType::kFp32)}},
                name);
  };
  // Every outer tap reads padding only (dilation 8 >= 6 and 7): a 1 x 1 convolution.
  b.output(conv("c1", kernel("w1", {4, 3, 3, 3}), {8, 8, 8, 8}, {1, 1}, {8, 8}));
  // Along H (dilation 4 < 6) every tap reads the input somewhere; along W only the middle one: 3 x 1.
  b.output(conv("c2", kernel("w2", {4, 3, 3, 3}), {4, 4, 8, 8}, {1, 1}, {4, 8}));
  // Stride 2, output rows 0..2: along H the first tap reads rows -5, -3, -1 only; the others stay.
  b.output(conv("c3", kernel("w3", {4, 3, 3, 3}), {5, 4, 0, 0}, {2, 1}, {5, 1}));
  // Depthwise ([KH, KW, C, M] kernel; C = 3, M = 1 makes 3 outputs: bias of 3).
  ValueId dbias = b.constant("c4_b", Tensor::from_doubles({DType::kFp32, {3}}, std::vector<double>{0.5, 0, -0.5}));
  b.output(b.op(Op::DEPTHWISE_CONV2D, {x, kernel("w4", {3, 3, 3, 1}), dbias, z, z},
                {{"pad", std::vector<int64_t>{8, 8, 8, 8}}, {"stride", std::vector<int64_t>{1, 1}},
                 {"dilation", std::vector<int64_t>{8, 8}}, {"acc_type", static_cast<int64_t>(AccType::kFp32)}},
                "c4"));
  // Kept: every tap live (3 x 3, padding 1), and a kernel that a second convolution reads too.
  b.output(conv("c5", kernel("w5", {4, 3, 3, 3}), {1, 1, 1, 1}, {1, 1}, {1, 1}));
  ValueId shared = kernel("w6", {4, 3, 3, 3});
  b.output(conv("c6", shared, {8, 8, 8, 8}, {1, 1}, {8, 8}));
  b.output(conv("c7", shared, {1, 1, 1, 1}, {1, 1}, {1, 1}));
  Graph g = b.finish();
  ASSERT_TRUE(verify_module(Module(g)).empty());
  std::vector<double> xv(126);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::cos(0.37 * static_cast<double>(i)) * (1.0 + 0.01 * static_cast<double>(i));
  const Tensor in = Tensor::from_doubles({DType::kFp32, {1, 6, 7, 3}}, xv);
  const std::vector<Tensor> before = Interpreter(Module(g)).run({in});
  const CanonicalizeStats st = canonicalize(g);
  EXPECT_EQ(st.padding_taps, 4);
  EXPECT_NE(canonical_summary(st).find("4 convolution kernels cut to the taps that read their input"), std::string::npos)
      << canonical_summary(st);
  ASSERT_TRUE(verify_module(Module(g)).empty());
  // The convolutions by the graph output they produce (c1 .. c7 in order).
  auto find = [&](const std::string& name) -> const Node& {
    return g.node(g.value(g.outputs()[static_cast<size_t>(std::stoi(name.substr(1)) - 1)]).producer);
  };
  auto kernel_shape = [&](const std::string& name) { return g.value(find(name).inputs[1]).type.shape; };
  EXPECT_EQ(kernel_shape("c1"), (Shape{4, 1, 1, 3}));
  EXPECT_EQ(find("c1").attr_ints("pad"), (std::vector<int64_t>{0, 0, 0, 0}));
  EXPECT_EQ(find("c1").attr_ints("dilation"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(kernel_shape("c2"), (Shape{4, 3, 1, 3}));
  EXPECT_EQ(find("c2").attr_ints("pad"), (std::vector<int64_t>{4, 4, 0, 0}));
  EXPECT_EQ(find("c2").attr_ints("dilation"), (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(kernel_shape("c3"), (Shape{4, 2, 3, 3}));
  EXPECT_EQ(find("c3").attr_ints("pad"), (std::vector<int64_t>{0, 4, 0, 0}));
  EXPECT_EQ(kernel_shape("c4"), (Shape{1, 1, 3, 1}));
  EXPECT_EQ(kernel_shape("c5"), (Shape{4, 3, 3, 3}));
  EXPECT_EQ(kernel_shape("c6"), (Shape{4, 3, 3, 3}));
  // The same sums of the same products: bit for bit on the reference interpreter.
  const std::vector<Tensor> after = Interpreter(Module(g)).run({in});
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) EXPECT_TRUE(after[i].identical(before[i])) << i;
}

TEST(Canonicalize, RepeatedComputationsAreMergedOnce) {
  // torch.var's own mean beside the layer norm's: REDUCE_SUM(x) -> MUL 1/N twice, SUB twice; the
  // 1/N constants are separate CONST nodes of the same bytes.
  GraphBuilder b;
  ValueId x = b.input("x", {DType::kFp32, {2, 3, 8}});
  ValueId outs[2];
  for (int k = 0; k < 2; ++k) {
    const std::string s = std::to_string(k);
    ValueId sum = b.op(Op::REDUCE_SUM, {x}, {{"axis", int64_t{2}}}, "sum" + s);
    ValueId mean = b.op(Op::MUL, {sum, scalar_const(b, "inv_n" + s, 0.125), shift0(b, "sh" + s)}, {}, "mean" + s);
    outs[k] = b.op(Op::SUB, {x, mean}, {}, "d" + s);
  }
  ValueId sq = b.op(Op::MUL, {outs[1], outs[1], shift0(b, "sh2")}, {}, "sq");
  b.output(b.op(Op::ADD, {outs[0], sq}, {}, "y"));
  ValueId kept = b.op(Op::REDUCE_SUM, {x}, {{"axis", int64_t{2}}}, "kept");  // a graph output: stays
  b.output(kept);
  Graph g = b.finish();
  const Tensor in = spread_input();
  const std::vector<Tensor> before = Interpreter(Module(g)).run({in});
  EXPECT_EQ(merge_common_nodes(g), 3);  // sum, mean and d of the second copy (its constants go too)
  EXPECT_EQ(count(g, Op::REDUCE_SUM), 2);   // one mean, one graph output
  EXPECT_EQ(count(g, Op::SUB), 1);
  ASSERT_TRUE(verify_module(Module(g)).empty());
  const std::vector<Tensor> after = Interpreter(Module(g)).run({in});
  for (size_t i = 0; i < after.size(); ++i) EXPECT_TRUE(after[i].identical(before[i])) << i;
  // Different attributes (axis) or different constants are different computations.
  GraphBuilder b2;
  ValueId x2 = b2.input("x", {DType::kFp32, {2, 3, 8}});
  ValueId s1 = b2.op(Op::REDUCE_SUM, {x2}, {{"axis", int64_t{2}}}, "s1");
  ValueId s2 = b2.op(Op::REDUCE_SUM, {x2}, {{"axis", int64_t{1}}}, "s2");
  ValueId m1 = b2.op(Op::MUL, {x2, scalar_const(b2, "c1", 0.5), shift0(b2, "z1")}, {}, "m1");
  ValueId m2 = b2.op(Op::MUL, {x2, scalar_const(b2, "c2", 0.25), shift0(b2, "z2")}, {}, "m2");
  b2.output(b2.op(Op::ADD, {m1, m2}, {}, "mm"));
  b2.output(s1);
  b2.output(s2);
  Graph g2 = b2.finish();
  EXPECT_EQ(merge_common_nodes(g2), 0);  // only the second shift constant, which is no computation
  EXPECT_EQ(count(g2, Op::CONST), 3);
  EXPECT_EQ(count(g2, Op::MUL), 2);
  EXPECT_EQ(count(g2, Op::REDUCE_SUM), 2);
}

TEST(Canonicalize, MultiplicationsByOneAndNestedClampsGo) {
  GraphBuilder b;
  ValueId x = b.input("x", {DType::kFp32, {2, 3, 8}});
  ValueId one = b.op(Op::MUL, {x, scalar_const(b, "one", 1.0), shift0(b, "z")}, {}, "times_one");
  auto clamp = [&](ValueId v, double lo, double hi, const std::string& name, NanMode mode = NanMode::kPropagate) {
    return b.op(Op::CLAMP, {v},
                {{"min_val", Tensor::from_doubles({DType::kFp32, {}}, std::vector<double>{lo})},
                 {"max_val", Tensor::from_doubles({DType::kFp32, {}}, std::vector<double>{hi})},
                 {"nan_mode", static_cast<int64_t>(mode)}},
                name);
  };
  const double inf = std::numeric_limits<double>::infinity();
  ValueId relu6 = clamp(clamp(one, 0, inf, "relu"), 0, 6, "clip");  // -> one CLAMP [0, 6]
  ValueId apart = clamp(clamp(x, 3, inf, "lo3"), -inf, 2, "hi2");    // disjoint ranges: both stay
  ValueId modes = clamp(clamp(x, 0, inf, "relu_p"), 0, 6, "clip_i", NanMode::kIgnore);  // NaN handled apart
  // A per-channel factor of ones (a layer norm's gamma as initialised) is the affine part: it stays.
  ValueId gamma = b.op(Op::MUL, {x, b.constant("gamma", Tensor::from_doubles({DType::kFp32, {1, 1, 8}}, std::vector<double>(8, 1.0))), shift0(b, "z2")}, {}, "affine");
  b.output(b.op(Op::ADD, {b.op(Op::ADD, {relu6, apart}, {}, "y0"), gamma}, {}, "y"));
  b.output(modes);
  Graph g = b.finish();
  const Tensor in = spread_input();
  const std::vector<Tensor> before = Interpreter(Module(g)).run({in});
  EXPECT_EQ(drop_identities(g), 2);
  EXPECT_EQ(count(g, Op::MUL), 1);
  EXPECT_EQ(count(g, Op::CLAMP), 5);
  ASSERT_TRUE(verify_module(Module(g)).empty());
  const std::vector<Tensor> after = Interpreter(Module(g)).run({in});
  for (size_t i = 0; i < after.size(); ++i) EXPECT_TRUE(after[i].identical(before[i])) << i;
}

// GELU as HF BERT writes it (MUL(MUL(x, 0.5), 1 + erf(x / sqrt 2)), the halving first on either
// side), hard-swish as timm and YOLOv5 write it (x * clamp(x + 3, 0, 6) / 6, the 1/6 last or on the
// clamp): each becomes the form the fusions match, with the same values.
TEST(Canonicalize, HandWrittenGeluAndHardSwishTakeTheMatchedForm) {
  for (int variant = 0; variant < 4; ++variant) {
    SCOPED_TRACE(variant);
    GraphBuilder b;
    ValueId x = b.input("x", {DType::kFp32, {2, 3, 8}});
    ValueId y;
    if (variant < 2) {
      ValueId half = b.op(Op::MUL, {x, scalar_const(b, "half", 0.5), shift0(b, "z0")}, {}, "half_x");
      ValueId e = b.op(Op::ERF, {b.op(Op::MUL, {x, scalar_const(b, "k", 0.70710678118654752), shift0(b, "z1")}, {}, "scaled")}, {}, "erf");
      ValueId a = b.op(Op::ADD, {e, scalar_const(b, "one", 1.0)}, {}, "one_plus");
      y = variant == 0 ? b.op(Op::MUL, {half, a, shift0(b, "z2")}, {}, "gelu") : b.op(Op::MUL, {a, half, shift0(b, "z2")}, {}, "gelu");
    } else {
      ValueId cl = b.op(Op::CLAMP, {b.op(Op::ADD, {x, scalar_const(b, "three", 3.0)}, {}, "x3")},
                        {{"min_val", Tensor::from_doubles({DType::kFp32, {}}, std::vector<double>{0})},
                         {"max_val", Tensor::from_doubles({DType::kFp32, {}}, std::vector<double>{6})},
                         {"nan_mode", static_cast<int64_t>(NanMode::kPropagate)}},
                        "relu6");
      ValueId sixth = scalar_const(b, "sixth", 1.0 / 6.0);
      y = variant == 2 ? b.op(Op::MUL, {b.op(Op::MUL, {x, cl, shift0(b, "z0")}, {}, "xr"), sixth, shift0(b, "z1")}, {}, "hs")
                       : b.op(Op::MUL, {x, b.op(Op::MUL, {cl, sixth, shift0(b, "z0")}, {}, "gate"), shift0(b, "z1")}, {}, "hs");
    }
    b.output(b.op(Op::ADD, {y, x}, {}, "out"));
    Graph g = b.finish();
    const Tensor in = spread_input();
    const std::vector<Tensor> before = Interpreter(Module(g)).run({in});
    EXPECT_EQ(canonical_activations(g), 1);
    ASSERT_TRUE(verify_module(Module(g)).empty());
    // The matched chains: MUL(x, 1/sqrt 2) -> ERF -> ADD 1 -> MUL(x, .) -> MUL 0.5, and
    // MUL(x, 1/6) -> ADD 0.5 -> CLAMP [0, 1] -> MUL(x, .).
    const ValueId xv = g.inputs()[0];
    auto reader_of = [&](ValueId v, Op op) {
      for (const Node& n : g.nodes())
        if (n.op == op && std::find(n.inputs.begin(), n.inputs.end(), v) != n.inputs.end()) return &n;
      return static_cast<const Node*>(nullptr);
    };
    if (variant < 2) {
      const Node* e = reader_of(xv, Op::MUL);
      ASSERT_NE(e, nullptr);
      const Node* erf = reader_of(e->outputs[0], Op::ERF);
      ASSERT_NE(erf, nullptr);
      const Node* one = reader_of(erf->outputs[0], Op::ADD);
      ASSERT_NE(one, nullptr);
      const Node* xa = reader_of(one->outputs[0], Op::MUL);
      ASSERT_NE(xa, nullptr);
      EXPECT_TRUE(xa->inputs[0] == xv || xa->inputs[1] == xv);
      const Node* fin = reader_of(xa->outputs[0], Op::MUL);
      ASSERT_NE(fin, nullptr);
      EXPECT_EQ(g.node(g.value(fin->inputs[1]).producer).attr_tensor("values").at_double(0), 0.5);
      for (int64_t i = 0; i < in.num_elements(); ++i) EXPECT_EQ(Interpreter(Module(g)).run({in})[0].at_double(i), before[0].at_double(i)) << i;
    } else {
      EXPECT_EQ(count(g, Op::CLAMP), 1);
      for (const Node& n : g.nodes())
        if (n.op == Op::CLAMP) {
          EXPECT_EQ(n.attr_tensor("min_val").at_double(0), 0.0);
          EXPECT_EQ(n.attr_tensor("max_val").at_double(0), 1.0);
          const Node& add = g.node(g.value(n.inputs[0]).producer);
          ASSERT_EQ(add.op, Op::ADD);
          EXPECT_EQ(g.node(g.value(add.inputs[1]).producer).attr_tensor("values").at_double(0), 0.5);
        }
      const std::vector<Tensor> after = Interpreter(Module(g)).run({in});
      for (int64_t i = 0; i < in.num_elements(); ++i) {
        const double v = in.at_double(i), want = v * std::clamp(v + 3.0, 0.0, 6.0) / 6.0 + v;
        EXPECT_NEAR(after[0].at_double(i), want, 4e-7 * (1 + std::abs(want))) << i;
        EXPECT_NEAR(after[0].at_double(i), before[0].at_double(i), 4e-7 * (1 + std::abs(want))) << i;
      }
    }
  }
  {  // GELU as x * (0.5 + 0.5 * erf(x / sqrt 2)) -> the matched chain, the same values
    GraphBuilder b;
    ValueId x = b.input("x", {DType::kFp32, {2, 3, 8}});
    ValueId e = b.op(Op::ERF, {b.op(Op::MUL, {x, scalar_const(b, "k", 0.70710678118654752), shift0(b, "z0")}, {}, "scaled")}, {}, "erf");
    ValueId h = b.op(Op::ADD, {b.op(Op::MUL, {e, scalar_const(b, "half", 0.5), shift0(b, "z1")}, {}, "half_erf"), scalar_const(b, "half2", 0.5)}, {}, "gate");
    b.output(b.op(Op::MUL, {x, h, shift0(b, "z2")}, {}, "gelu"));
    Graph g = b.finish();
    const Tensor in = spread_input();
    const std::vector<Tensor> before = Interpreter(Module(g)).run({in});
    EXPECT_EQ(canonical_activations(g), 1);
    ASSERT_TRUE(verify_module(Module(g)).empty());
    int one_plus_erf = 0;
    for (const Node& n : g.nodes())
      if (n.op == Op::ADD && g.value(n.inputs[0]).producer >= 0 && g.node(g.value(n.inputs[0]).producer).op == Op::ERF)
        one_plus_erf += g.node(g.value(n.inputs[1]).producer).attr_tensor("values").at_double(0) == 1.0;
    EXPECT_EQ(one_plus_erf, 1);
    const std::vector<Tensor> after = Interpreter(Module(g)).run({in});
    for (int64_t i = 0; i < in.num_elements(); ++i) EXPECT_EQ(after[0].at_double(i), before[0].at_double(i)) << i;
  }
  {  // SiLU written x / (1 + exp(-x)): the logistic part becomes SIGMOID(x)
    GraphBuilder b;
    ValueId x = b.input("x", {DType::kFp32, {2, 3, 8}});
    ValueId zp = b.constant("zp", Tensor::from_doubles({DType::kFp32, {1}}, std::vector<double>{0}));
    ValueId ex = b.op(Op::EXP, {b.op(Op::NEGATE, {x, zp, zp}, {}, "neg")}, {}, "exp");
    ValueId r = b.op(Op::RECIPROCAL, {b.op(Op::ADD, {ex, scalar_const(b, "one", 1.0)}, {}, "den")}, {}, "rec");
    b.output(b.op(Op::MUL, {x, r, shift0(b, "z0")}, {}, "silu"));
    Graph g = b.finish();
    const Tensor in = spread_input();
    EXPECT_EQ(canonical_activations(g), 1);
    ASSERT_TRUE(verify_module(Module(g)).empty());
    EXPECT_EQ(count(g, Op::SIGMOID), 1);
    EXPECT_EQ(count(g, Op::EXP), 0);
    const std::vector<Tensor> after = Interpreter(Module(g)).run({in});
    for (int64_t i = 0; i < in.num_elements(); ++i) {
      const double v = in.at_double(i), want = v / (1.0 + std::exp(-v));
      EXPECT_NEAR(after[0].at_double(i), want, 1e-6 * (1 + std::abs(want))) << i;
    }
  }
  {  // CLIP's quick GELU, x * sigmoid(1.702 x) -> (t * sigmoid(t)) * (1 / 1.702), t = 1.702 x
    GraphBuilder b;
    ValueId x = b.input("x", {DType::kFp32, {2, 3, 8}});
    ValueId t = b.op(Op::MUL, {scalar_const(b, "beta", 1.702), x, shift0(b, "z0")}, {}, "t");
    b.output(b.op(Op::MUL, {x, b.op(Op::SIGMOID, {t}, {}, "sig"), shift0(b, "z1")}, {}, "qgelu"));
    Graph g = b.finish();
    const Tensor in = spread_input();
    const std::vector<Tensor> before = Interpreter(Module(g)).run({in});
    EXPECT_EQ(canonical_activations(g), 1);
    ASSERT_TRUE(verify_module(Module(g)).empty());
    int sigmoid_of_t = 0;  // the swish form: MUL(t, SIGMOID(t))
    for (const Node& n : g.nodes())
      if (n.op == Op::MUL && g.value(n.inputs[1]).producer >= 0 && g.node(g.value(n.inputs[1]).producer).op == Op::SIGMOID)
        sigmoid_of_t += g.node(g.value(n.inputs[1]).producer).inputs[0] == n.inputs[0];
    EXPECT_EQ(sigmoid_of_t, 1);
    const std::vector<Tensor> after = Interpreter(Module(g)).run({in});
    for (int64_t i = 0; i < in.num_elements(); ++i) {
      const double v = in.at_double(i), want = v / (1.0 + std::exp(-1.702 * v));
      EXPECT_NEAR(after[0].at_double(i), want, 1e-6 * (1 + std::abs(want))) << i;
      EXPECT_NEAR(after[0].at_double(i), before[0].at_double(i), 1e-6 * (1 + std::abs(want))) << i;
    }
  }
  for (double k : {0.044715, 0.05}) {  // c * x * x * x -> x * x * x * c, for GELU's tanh constant only
    GraphBuilder b;
    ValueId x = b.input("x", {DType::kFp32, {2, 3, 8}});
    ValueId cx = b.op(Op::MUL, {scalar_const(b, "c", k), x, shift0(b, "z0")}, {}, "cx");
    ValueId cxx = b.op(Op::MUL, {cx, x, shift0(b, "z1")}, {}, "cxx");
    b.output(b.op(Op::MUL, {x, cxx, shift0(b, "z2")}, {}, "cube"));
    Graph g = b.finish();
    const Tensor in = spread_input();
    EXPECT_EQ(canonical_activations(g), k == 0.044715 ? 1 : 0);
    ASSERT_TRUE(verify_module(Module(g)).empty());
    if (k != 0.044715) continue;
    const ValueId xv = g.inputs()[0];
    int squares = 0;
    for (const Node& n : g.nodes()) squares += n.op == Op::MUL && n.inputs[0] == xv && n.inputs[1] == xv;
    EXPECT_EQ(squares, 1);
    const Node& last = g.node(g.value(g.outputs()[0]).producer);
    EXPECT_EQ(g.node(g.value(last.inputs[1]).producer).op, Op::CONST);
    const std::vector<Tensor> after = Interpreter(Module(g)).run({in});
    for (int64_t i = 0; i < in.num_elements(); ++i) {
      const double v = in.at_double(i), want = k * v * v * v;
      EXPECT_NEAR(after[0].at_double(i), want, 4e-7 * std::abs(want) + 1e-30) << i;
    }
  }
  // GELU's tanh argument factored, k1 * x * (1 + k2 * x * x) (BLOOM: (k2 x) x; HF's FastGELU
  // written with (x x) k2 here), becomes (x + x * x * x * k2) * k1; a k2 of 0.05 is left alone.
  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE("factored " + std::to_string(variant));
    const double k2v = variant == 2 ? 0.05 : 0.044715;
    GraphBuilder b;
    ValueId x = b.input("x", {DType::kFp32, {2, 3, 8}});
    ValueId k1x = b.op(Op::MUL, {scalar_const(b, "k1", 0.79788456), x, shift0(b, "z0")}, {}, "k1x");
    ValueId xx = variant == 1 ? b.op(Op::MUL, {b.op(Op::MUL, {x, x, shift0(b, "z1")}, {}, "xx0"), scalar_const(b, "k2", k2v), shift0(b, "z2")}, {}, "xx")
                              : b.op(Op::MUL, {b.op(Op::MUL, {scalar_const(b, "k2", k2v), x, shift0(b, "z1")}, {}, "k2x"), x, shift0(b, "z2")}, {}, "xx");
    ValueId one_plus = b.op(Op::ADD, {scalar_const(b, "one", 1.0), xx}, {}, "one_plus");
    b.output(b.op(Op::MUL, {k1x, one_plus, shift0(b, "z3")}, {}, "arg"));
    Graph g = b.finish();
    const Tensor in = spread_input();
    EXPECT_EQ(canonical_activations(g), variant == 2 ? 0 : 1);
    ASSERT_TRUE(verify_module(Module(g)).empty());
    if (variant == 2) continue;
    const Node& last = g.node(g.value(g.outputs()[0]).producer);  // MUL(ADD(x, cube * k2), k1)
    ASSERT_EQ(last.op, Op::MUL);
    const Node& add = g.node(g.value(last.inputs[0]).producer);
    ASSERT_EQ(add.op, Op::ADD);
    EXPECT_EQ(add.inputs[0], g.inputs()[0]);
    const std::vector<Tensor> after = Interpreter(Module(g)).run({in});
    for (int64_t i = 0; i < in.num_elements(); ++i) {
      const double v = in.at_double(i), want = 0.79788456 * v * (1 + 0.044715 * v * v);
      EXPECT_NEAR(after[0].at_double(i), want, 4e-7 * std::abs(want) + 1e-30) << i;
    }
  }
  // Not the form: a clip to [0, 5], a GELU whose erf reads another value.
  GraphBuilder b;
  ValueId x = b.input("x", {DType::kFp32, {2, 3, 8}});
  ValueId cl = b.op(Op::CLAMP, {b.op(Op::ADD, {x, scalar_const(b, "three", 3.0)}, {}, "x3")},
                    {{"min_val", Tensor::from_doubles({DType::kFp32, {}}, std::vector<double>{0})},
                     {"max_val", Tensor::from_doubles({DType::kFp32, {}}, std::vector<double>{5})},
                     {"nan_mode", static_cast<int64_t>(NanMode::kPropagate)}},
                    "clip5");
  ValueId hs = b.op(Op::MUL, {b.op(Op::MUL, {x, cl, shift0(b, "z0")}, {}, "xr"), scalar_const(b, "sixth", 1.0 / 6.0), shift0(b, "z1")}, {}, "hs");
  ValueId other = b.input("o", {DType::kFp32, {2, 3, 8}});
  ValueId half = b.op(Op::MUL, {x, scalar_const(b, "half", 0.5), shift0(b, "z2")}, {}, "half_x");
  ValueId e = b.op(Op::ERF, {b.op(Op::MUL, {other, scalar_const(b, "k", 0.70710678118654752), shift0(b, "z3")}, {}, "scaled")}, {}, "erf");
  ValueId gl = b.op(Op::MUL, {half, b.op(Op::ADD, {e, scalar_const(b, "one", 1.0)}, {}, "one_plus"), shift0(b, "z4")}, {}, "gelu");
  b.output(b.op(Op::ADD, {hs, gl}, {}, "out"));
  Graph g = b.finish();
  EXPECT_EQ(canonical_activations(g), 0);
}

// x [1, M, K] -> MATMUL with constant B_i [1, K, N_i] (-> ADD of a constant [1, 1, N_i] bias) for
// each i, every result an output. `ks` gives each B's K (a different K is not a sibling) and
// `biased` which ones have a bias.
Graph sibling_matmuls(const std::vector<int64_t>& ns, const std::vector<int64_t>& ks, const std::vector<bool>& biased) {
  constexpr int64_t M = 5, K = 6;
  GraphBuilder b;
  ValueId x = b.input("x", {DType::kFp32, {1, M, K}});
  ValueId zp = b.constant("zp", Tensor::from_doubles({DType::kFp32, {1}}, std::vector<double>{0}));
  for (size_t i = 0; i < ns.size(); ++i) {
    const int64_t n = ns[i], k = ks[i];
    std::vector<double> w(static_cast<size_t>(k * n)), bias(static_cast<size_t>(n));
    for (size_t j = 0; j < w.size(); ++j) w[j] = std::sin(double(j * 7 + i * 3)) * 0.5;
    for (size_t j = 0; j < bias.size(); ++j) bias[j] = double(j) * 0.25 - double(i);
    ValueId a = x;
    if (k != K) a = b.op(Op::SLICE, {x, b.constant_shape("s" + std::to_string(i), {0, 0, 0}), b.constant_shape("z" + std::to_string(i), {1, M, k})}, {}, "xs" + std::to_string(i));
    ValueId wv = b.constant("w" + std::to_string(i), Tensor::from_doubles({DType::kFp32, {1, k, n}}, w));
    ValueId y = b.op(Op::MATMUL, {a, wv, zp, zp}, {}, "mm" + std::to_string(i));
    if (biased[i]) y = b.op(Op::ADD, {y, b.constant("b" + std::to_string(i), Tensor::from_doubles({DType::kFp32, {1, 1, n}}, bias))}, {}, "y" + std::to_string(i));
    b.output(y);
  }
  return b.finish();
}

Tensor sibling_input() {
  std::vector<double> v(30);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::cos(double(i)) * 2;
  return Tensor::from_doubles({DType::kFp32, {1, 5, 6}}, v);
}

TEST(Canonicalize, SiblingMatmulsWithBiasesBecomeOneWiderMatmulAndSlices) {
  Graph g = sibling_matmuls({4, 4, 3}, {6, 6, 6}, {true, true, true});
  const std::vector<Tensor> before = Interpreter(Module(g)).run({sibling_input()});
  EXPECT_EQ(canonicalize(g).merged_matmuls, 2);
  EXPECT_TRUE(verify_module(Module(g)).empty());
  ASSERT_EQ(count(g, Op::MATMUL), 1);
  EXPECT_EQ(count(g, Op::ADD), 1);
  EXPECT_EQ(count(g, Op::SLICE), 3);
  for (const Node& n : g.nodes())
    if (n.op == Op::MATMUL) {
      EXPECT_EQ(g.value(n.outputs[0]).type.shape, (Shape{1, 5, 11}));
    }
  // The outputs keep their names and, each element being the same sum in the same order, their bits.
  const std::vector<Tensor> after = Interpreter(Module(g)).run({sibling_input()});
  ASSERT_EQ(after.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(g.value(g.outputs()[i]).name, "y" + std::to_string(i));
    EXPECT_TRUE(after[i].identical(before[i])) << i;
  }
}

TEST(Canonicalize, SiblingMatmulsMergeOnlyWhenAlike) {
  {  // no biases at all: merged too
    Graph g = sibling_matmuls({2, 3}, {6, 6}, {false, false});
    const std::vector<Tensor> before = Interpreter(Module(g)).run({sibling_input()});
    EXPECT_EQ(canonicalize(g).merged_matmuls, 1);
    EXPECT_EQ(count(g, Op::ADD), 0);
    const std::vector<Tensor> after = Interpreter(Module(g)).run({sibling_input()});
    for (size_t i = 0; i < 2; ++i) EXPECT_TRUE(after[i].identical(before[i])) << i;
  }
  {  // one with a bias, one without: left alone
    Graph g = sibling_matmuls({2, 3}, {6, 6}, {true, false});
    EXPECT_EQ(canonicalize(g).merged_matmuls, 0);
    EXPECT_EQ(count(g, Op::MATMUL), 2);
  }
  {  // different A (a slice of x) and K: left alone
    Graph g = sibling_matmuls({2, 3}, {6, 4}, {true, true});
    EXPECT_EQ(canonicalize(g).merged_matmuls, 0);
    EXPECT_EQ(count(g, Op::MATMUL), 2);
  }
  {  // the batch > 1 form, RESHAPE after each MATMUL: left alone (the slices would be copies)
    GraphBuilder b;
    ValueId x = b.input("x", {DType::kFp32, {1, 4, 6}});
    ValueId zp = b.constant("zp", Tensor::from_doubles({DType::kFp32, {1}}, std::vector<double>{0}));
    for (int i = 0; i < 2; ++i) {
      ValueId w = b.constant("w" + std::to_string(i), Tensor::from_doubles({DType::kFp32, {1, 6, 3}}, std::vector<double>(18, 0.5 / (i + 1))));
      ValueId y = b.op(Op::MATMUL, {x, w, zp, zp}, {}, "mm" + std::to_string(i));
      b.output(b.op(Op::RESHAPE, {y, b.constant_shape("shape" + std::to_string(i), {2, 2, 3})}, {}, "r" + std::to_string(i)));
    }
    Graph g = b.finish();
    EXPECT_EQ(canonicalize(g).merged_matmuls, 0);
    EXPECT_EQ(count(g, Op::MATMUL), 2);
  }
}

// The batched form: x [2, 3, 6] -> RESHAPE [1, 6, 6] -> MATMUL -> RESHAPE [2, 3, N_i] -> ADD, each.
// Merged only when asked (through_reshapes), bit for bit as before.
TEST(Canonicalize, BatchedSiblingMatmulsMergeThroughTheirReshapesWhenAsked) {
  auto build = [](bool other_k) {
    GraphBuilder b;
    ValueId x = b.input("x", {DType::kFp32, {2, 3, 6}});
    ValueId zp = b.constant("zp", Tensor::from_doubles({DType::kFp32, {1}}, std::vector<double>{0}));
    const std::vector<int64_t> ns = {4, 2, 3};
    for (size_t i = 0; i < ns.size(); ++i) {
      const std::string s = std::to_string(i);
      const int64_t n = ns[i], k = other_k && i == 2 ? 3 : 6;
      std::vector<double> w(static_cast<size_t>(k * n)), bias(static_cast<size_t>(n));
      for (size_t j = 0; j < w.size(); ++j) w[j] = std::sin(double(j * 5 + i)) * 0.5;
      for (size_t j = 0; j < bias.size(); ++j) bias[j] = double(j) * 0.5 - double(i);
      ValueId a = b.op(Op::RESHAPE, {x, b.constant_shape("in" + s, {1, 6, 6})}, {}, "flat" + s);
      if (k != 6) a = b.op(Op::SLICE, {a, b.constant_shape("st" + s, {0, 0, 0}), b.constant_shape("sz" + s, {1, 6, k})}, {}, "part" + s);
      ValueId y = b.op(Op::MATMUL, {a, b.constant("w" + s, Tensor::from_doubles({DType::kFp32, {1, k, n}}, w)), zp, zp}, {}, "mm" + s);
      y = b.op(Op::RESHAPE, {y, b.constant_shape("out" + s, {2, 3, n})}, {}, "r" + s);
      b.output(b.op(Op::ADD, {y, b.constant("b" + s, Tensor::from_doubles({DType::kFp32, {1, 1, n}}, bias))}, {}, "y" + s));
    }
    return b.finish();
  };
  std::vector<double> in(36);
  for (size_t i = 0; i < in.size(); ++i) in[i] = std::cos(double(i) * 0.7) * 2;
  const Tensor x = Tensor::from_doubles({DType::kFp32, {2, 3, 6}}, in);
  {
    Graph g = build(false);
    EXPECT_EQ(canonicalize(g).merged_matmuls, 0);  // the import-time form leaves them
    const std::vector<Tensor> before = Interpreter(Module(g)).run({x});
    EXPECT_EQ(merge_sibling_matmuls(g, /*through_reshapes=*/true), 2);
    EXPECT_TRUE(verify_module(Module(g)).empty());
    EXPECT_EQ(count(g, Op::MATMUL), 1);
    EXPECT_EQ(count(g, Op::RESHAPE), 2);
    EXPECT_EQ(count(g, Op::ADD), 1);
    EXPECT_EQ(count(g, Op::SLICE), 3);
    for (const Node& n : g.nodes())
      if (n.op == Op::ADD) {
        EXPECT_EQ(g.value(n.outputs[0]).type.shape, (Shape{2, 3, 9}));
      }
    const std::vector<Tensor> after = Interpreter(Module(g)).run({x});
    ASSERT_EQ(after.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(g.value(g.outputs()[i]).name, "y" + std::to_string(i));
      EXPECT_TRUE(after[i].identical(before[i])) << i;
    }
  }
  {  // the third reads a slice of the reshaped x (another A, another K): the first two merge
    Graph g = build(true);
    const std::vector<Tensor> before = Interpreter(Module(g)).run({x});
    EXPECT_EQ(merge_sibling_matmuls(g, /*through_reshapes=*/true), 1);
    EXPECT_EQ(count(g, Op::MATMUL), 2);
    const std::vector<Tensor> after = Interpreter(Module(g)).run({x});
    for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(after[i].identical(before[i])) << i;
  }
}

// nn.MultiheadAttention's export: y [S, 1, 3E] (the packed projection plus its bias) SLICEd into
// q, k, v along the last axis, q RESHAPEd to heads and scaled by one value (and in one variant k
// TRANSPOSEd and scaled too). The scale moves in front
// of the SLICEs as a per-column MUL of y (s on q's columns, 1 elsewhere), bit for bit the same
// results (NaN and infinities in k and v included). Kept: a second reader of q's columns, y or the
// unscaled q as an output, a scale of more than one value. A q that leaves out y's last row folds
// too: that row of q's columns is scaled, and nothing reads it.
TEST(Canonicalize, ScaleOfASlicedQueryMovesInFrontOfTheSlice) {
  enum Variant { kFold, kSecondReader, kYOutput, kWideScale, kCutRows, kScaleK, kQOutput };
  for (Variant v : {kFold, kSecondReader, kYOutput, kWideScale, kCutRows, kScaleK, kQOutput}) {
    SCOPED_TRACE(static_cast<int>(v));
    const int64_t S = 5, E = 8;
    GraphBuilder b;
    ValueId x = b.input("x", {DType::kFp32, {S, 1, 3 * E}});
    std::vector<double> bias(3 * E);
    for (int64_t i = 0; i < 3 * E; ++i) bias[static_cast<size_t>(i)] = 0.25 * static_cast<double>(i) - 2;
    ValueId y = b.op(Op::ADD, {x, b.constant("bias", Tensor::from_doubles({DType::kFp32, {1, 1, 3 * E}}, bias))}, {}, "y");
    ValueId shift = b.constant("shift", Tensor::from_ints({DType::kInt8, {1}}, std::vector<int64_t>{0}));
    int names = 0;
    auto slice = [&](int64_t first, int64_t rows) {
      const std::string n = std::to_string(names++);
      return b.op(Op::SLICE, {y, b.constant_shape("start" + n, {0, 0, first}), b.constant_shape("size" + n, {rows, 1, E})});
    };
    auto scale = [&](ValueId t, double s) {
      return b.op(Op::MUL, {t, b.constant("s" + std::to_string(t), Tensor::from_doubles({DType::kFp32, {1, 1, 1}},
                                                                                         std::vector<double>{s})),
                            shift});
    };
    ValueId q = slice(0, v == kCutRows ? S - 1 : S);
    ValueId qh = b.op(Op::RESHAPE, {q, b.constant_shape("heads", {v == kCutRows ? S - 1 : S, 2, E / 2})});
    ValueId qs = v == kWideScale ? b.op(Op::MUL, {qh, b.constant("s4", Tensor::from_doubles({DType::kFp32, {1, 1, E / 2}},
                                                                                             std::vector<double>(E / 2, 0.125))),
                                                  shift})
                                 : scale(qh, 0.125);
    ValueId k = slice(E, S), vv = slice(2 * E, S);
    if (v == kScaleK) {  // the key transposed, then scaled
      k = scale(b.op(Op::TRANSPOSE, {k}, {{"perms", std::vector<int64_t>{1, 0, 2}}}), 0.5);
      k = b.op(Op::TRANSPOSE, {k}, {{"perms", std::vector<int64_t>{1, 0, 2}}});
    }
    b.output(b.op(Op::TRANSPOSE, {qs}, {{"perms", std::vector<int64_t>{1, 0, 2}}}));
    b.output(b.op(Op::ADD, {k, vv}));
    if (v == kSecondReader) b.output(b.op(Op::ABS, {slice(0, S)}));
    if (v == kYOutput) b.output(y);
    if (v == kQOutput) b.output(qh);  // the unscaled heads are needed too
    Graph g = b.finish();
    std::vector<double> xs(static_cast<size_t>(S * 3 * E));
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(static_cast<double>(i)) * 3;
    xs[3 * E + E + 1] = std::nan("");
    xs[2 * E + 3] = std::numeric_limits<double>::infinity();
    const Tensor in = Tensor::from_doubles({DType::kFp32, {S, 1, 3 * E}}, xs);
    const std::vector<Tensor> before = Interpreter(Module(g)).run({in});
    const int muls = count(g, Op::MUL);
    const int moved = fold_slice_scales(g);
    EXPECT_TRUE(verify_module(Module(g)).empty());
    const bool folds = v == kFold || v == kScaleK || v == kCutRows;
    EXPECT_EQ(moved, folds ? (v == kScaleK ? 2 : 1) : 0);
    EXPECT_EQ(count(g, Op::MUL), folds ? 1 : muls);
    const std::vector<Tensor> after = Interpreter(Module(g)).run({in});
    ASSERT_EQ(after.size(), before.size());
    for (size_t o = 0; o < after.size(); ++o) {
      ASSERT_EQ(after[o].type(), before[o].type());
      EXPECT_EQ(std::memcmp(after[o].bytes(), before[o].bytes(), after[o].byte_size()), 0) << "output " << o;
    }
  }
}

// torch 2.x's nn.MultiheadAttention: the packed projection y [S, B, 3E] viewed as [S, B, 3, E],
// [1, S, B, 3, E], TRANSPOSEd to [3, S, B, 1, E] and squeezed; q, k and v are SLICEs of that along
// its first axis, split into heads ([B*H, S, D]: at B = 2 the heads of a batch are a split view of
// y), and SDPA's export scales q and K^T by sqrt(1/sqrt(d)) each.
// fold_slice_scales moves both scales in front of the views as one per-column MUL of y (bit for
// bit the same scores), and unshare_view_chains gives k's and v's SLICEs their own copies of the
// shared views, so each MATMUL operand is a private view chain of y. Kept: a reader of q's part
// of the transposed view besides the query (an output here).
TEST(Canonicalize, TorchTwoAttentionScalesFoldThroughThePackedTranspose) {
  for (int variant = 0; variant < 3; ++variant) {
    const bool extra_reader = variant == 1;
    const int64_t S = 5, E = 8, H = 2, D = 4, B = variant == 2 ? 2 : 1;
    SCOPED_TRACE(extra_reader ? "q's rows also an output" : B > 1 ? "attention at batch 2" : "attention only");
    GraphBuilder b;
    ValueId x = b.input("x", {DType::kFp32, {S, B, 3 * E}});
    std::vector<double> bias(3 * E);
    for (int64_t i = 0; i < 3 * E; ++i) bias[static_cast<size_t>(i)] = 0.125 * static_cast<double>(i) - 1;
    ValueId y = b.op(Op::ADD, {x, b.constant("bias", Tensor::from_doubles({DType::kFp32, {1, 1, 3 * E}}, bias))}, {}, "y");
    ValueId shift = b.constant("shift", Tensor::from_ints({DType::kInt8, {1}}, std::vector<int64_t>{0}));
    ValueId zp = b.constant("zp", Tensor::from_doubles({DType::kFp32, {1}}, std::vector<double>{0}));
    ValueId t = b.op(Op::RESHAPE, {y, b.constant_shape("unflatten", {S, B, 3, E})});
    t = b.op(Op::RESHAPE, {t, b.constant_shape("unsqueeze", {1, S, B, 3, E})});
    t = b.op(Op::TRANSPOSE, {t}, {{"perms", std::vector<int64_t>{3, 1, 2, 0, 4}}});
    t = b.op(Op::RESHAPE, {t, b.constant_shape("squeeze", {3, S, B, E})});
    const double s = std::sqrt(1.0 / std::sqrt(static_cast<double>(D)));
    auto part = [&](int64_t i) {
      const std::string n = std::to_string(i);
      ValueId p = b.op(Op::SLICE, {t, b.constant_shape("start" + n, {i, 0, 0, 0}), b.constant_shape("size" + n, {1, S, B, E})});
      p = b.op(Op::RESHAPE, {p, b.constant_shape("heads" + n, {S, B * H, D})});
      return b.op(Op::TRANSPOSE, {p}, {{"perms", std::vector<int64_t>{1, 0, 2}}});  // [B*H, S, D]
    };
    auto scale = [&](ValueId v) {
      return b.op(Op::MUL, {v, b.constant("s" + std::to_string(v), Tensor::from_doubles({DType::kFp32, {1, 1, 1}},
                                                                                         std::vector<double>{s})),
                            shift});
    };
    ValueId q = scale(part(0));
    ValueId kt = scale(b.op(Op::TRANSPOSE, {part(1)}, {{"perms", std::vector<int64_t>{0, 2, 1}}}));  // [B*H, D, S]
    ValueId v = part(2);
    ValueId scores = b.op(Op::MATMUL, {q, kt, zp, zp});
    b.output(b.op(Op::MATMUL, {scores, v, zp, zp}));
    if (extra_reader) b.output(b.op(Op::ABS, {b.op(Op::SLICE, {t, b.constant_shape("start_x", {0, 0, 0, 0}),
                                                                b.constant_shape("size_x", {1, S, B, E})})}));
    Graph g = b.finish();
    std::vector<double> xs(static_cast<size_t>(S * B * 3 * E));
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(static_cast<double>(i) * 1.3) * 2;
    xs[2 * E + 5] = std::numeric_limits<double>::infinity();  // a value of v
    const Tensor in = Tensor::from_doubles({DType::kFp32, {S, B, 3 * E}}, xs);
    const std::vector<Tensor> before = Interpreter(Module(g)).run({in});
    auto same = [&](const char* step) {
      EXPECT_TRUE(verify_module(Module(g)).empty()) << step;
      const std::vector<Tensor> after = Interpreter(Module(g)).run({in});
      ASSERT_EQ(after.size(), before.size()) << step;
      for (size_t o = 0; o < after.size(); ++o) EXPECT_TRUE(after[o].identical(before[o])) << step << " output " << o;
    };
    EXPECT_EQ(fold_slice_scales(g), extra_reader ? 0 : 2);
    same("fold_slice_scales");
    EXPECT_EQ(count(g, Op::MUL), extra_reader ? 2 : 1);
    for (const Node& n : g.nodes()) {
      if (n.op != Op::MUL || extra_reader) continue;
      EXPECT_EQ(g.node(g.value(n.inputs[0]).producer).op, Op::ADD);  // the per-column MUL right after the bias
      EXPECT_EQ(g.value(n.inputs[1]).type.shape, (Shape{1, 1, 3 * E}));
    }
    // Each of q, k, v's SLICEs (and the extra reader's, which feeds no MATMUL) reads the one
    // transposed view; k and v get copies when only MATMULs are fed. (At batch 2 the heads of a
    // batch are merged in a middle axis before their TRANSPOSE: [S, B*H, D] is no strided view of y,
    // but the chain to the MATMUL operand [B*H, S, D] as a whole is a split one.)
    const int transposes = count(g, Op::TRANSPOSE), copies = extra_reader ? 0 : 2;
    EXPECT_EQ(unshare_view_chains(g), copies);
    same("unshare_view_chains");
    EXPECT_EQ(count(g, Op::TRANSPOSE), transposes + copies);
    if (copies > 0) {
      std::vector<int> readers(g.values().size(), 0);
      for (const Node& n : g.nodes())
        for (ValueId i : n.inputs) ++readers[static_cast<size_t>(i)];
      for (const Node& n : g.nodes()) {
        if (n.op == Op::TRANSPOSE || n.op == Op::RESHAPE) {
          EXPECT_LE(readers[static_cast<size_t>(n.outputs[0])], 1);
        }
      }
    }
  }
}

// A scale behind RESHAPEs alone (attention's 1/sqrt(d) after Q K^T reshaped back to 4-D) stays a
// MUL by one value: it covers all of the MATMUL's result, a post-op of it already.
TEST(Canonicalize, ScaleBehindReshapesAloneStays) {
  GraphBuilder b;
  ValueId q = b.input("q", {DType::kFp32, {2, 3, 4}});
  ValueId k = b.input("k", {DType::kFp32, {2, 4, 3}});
  ValueId zp = b.constant("zp", Tensor::from_doubles({DType::kFp32, {1}}, std::vector<double>{0}));
  ValueId s = b.op(Op::MATMUL, {q, k, zp, zp});
  s = b.op(Op::RESHAPE, {s, b.constant_shape("four", {1, 2, 3, 3})});
  b.output(b.op(Op::MUL, {s, b.constant("scale", Tensor::from_doubles({DType::kFp32, {1, 1, 1, 1}}, std::vector<double>{0.5})),
                          b.constant("shift", Tensor::from_ints({DType::kInt8, {1}}, std::vector<int64_t>{0}))}));
  Graph g = b.finish();
  EXPECT_EQ(fold_slice_scales(g), 0);
  EXPECT_EQ(count(g, Op::MUL), 1);
}

// RESHAPE(RESHAPE(x)) is one RESHAPE where the inner result has no other reader.
TEST(Canonicalize, ReshapeOfAReshapeBecomesOne) {
  for (bool second_reader : {false, true}) {
    GraphBuilder b;
    ValueId x = b.input("x", {DType::kFp32, {2, 6}});
    ValueId m = b.op(Op::RESHAPE, {x, b.constant_shape("a", {12})});
    b.output(b.op(Op::RESHAPE, {m, b.constant_shape("c", {3, 1, 4})}, {}, "y"));
    if (second_reader) b.output(b.op(Op::ABS, {m}));
    Graph g = b.finish();
    const CanonicalizeStats st = canonicalize(g);
    EXPECT_EQ(st.reshapes, second_reader ? 0 : 1);
    EXPECT_EQ(count(g, Op::RESHAPE), second_reader ? 2 : 1);
    EXPECT_TRUE(verify_module(Module(g)).empty());
    std::vector<double> xs(12);
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<double>(i) - 3.5;
    const Tensor in = Tensor::from_doubles({DType::kFp32, {2, 6}}, xs);
    const std::vector<Tensor> out = Interpreter(Module(g)).run({in});
    EXPECT_EQ(out[0].type().shape, (Shape{3, 1, 4}));
    for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(out[0].at_double(i), xs[static_cast<size_t>(i)]);
  }
}

}  // namespace
}  // namespace weft::compiler
