// oneDNN versus the reference backend: MATMUL (batched, constant and runtime B, fused bias,
// residual and activations, GELU in the erf form the ONNX frontend emits, operands read through
// TRANSPOSE/RESHAPE chains as strided views) and the decomposed regions the partitioner recognises
// as a whole: softmax and layer normalization. Tolerances as documented in onednn_test_util.h.
#include <cmath>
#include <cstring>
#include <functional>

#include "backends/onednn/onednn_test_util.h"
#include "compiler/canonicalize.h"

namespace weft::onednn_test {
namespace {

struct MatmulShape {
  int64_t n, h, c, w;
  std::string str() const {
    return "N" + std::to_string(n) + " H" + std::to_string(h) + " C" + std::to_string(c) + " W" + std::to_string(w);
  }
};

const std::vector<MatmulShape> kMatmulShapes = {{1, 7, 5, 9}, {3, 4, 6, 5}, {1, 1, 17, 3}, {3, 13, 1, 8}, {1, 33, 64, 31}};

TEST(OneDnnVsReference, MatmulConstantB) {
  uint32_t seed = 1000;
  for (const MatmulShape& s : kMatmulShapes) {
    SCOPED_TRACE(s.str());
    Net net(seed++);
    ValueId a = net.input({s.n, s.h, s.c});
    Module m = net.finish({net.matmul(a, net.weight({s.n, s.c, s.w}))});
    check_vs_reference(m, net.feeds, {"MATMUL"}, kTolAccumulate);
  }
}

TEST(OneDnnVsReference, MatmulRuntimeB) {
  uint32_t seed = 1010;
  for (const MatmulShape& s : kMatmulShapes) {
    SCOPED_TRACE(s.str());
    Net net(seed++);
    ValueId a = net.input({s.n, s.h, s.c});
    ValueId b = net.input({s.n, s.c, s.w});
    Module m = net.finish({net.matmul(a, b)});
    check_vs_reference(m, net.feeds, {"MATMUL"}, kTolAccumulate);
  }
}

TEST(OneDnnVsReference, MatmulBiasAndActivations) {
  // bias: ADD of a constant [1,1,W] (on either side of the ADD); then activations.
  struct Case {
    std::string pattern;
    std::function<ValueId(Net&, ValueId)> after;
  };
  const std::vector<Case> cases = {
      {"MATMUL+BIAS", [](Net&, ValueId v) { return v; }},
      {"MATMUL+BIAS+CLAMP", [](Net& n, ValueId v) { return n.relu(v); }},
      {"MATMUL+BIAS+CLAMP", [](Net& n, ValueId v) { return n.clamp(v, -1.0, 6.0); }},
      {"MATMUL+BIAS+SIGMOID", [](Net& n, ValueId v) { return n.unary(Op::SIGMOID, v); }},
      {"MATMUL+BIAS+TANH", [](Net& n, ValueId v) { return n.unary(Op::TANH, v); }},
      {"MATMUL+BIAS+SWISH", [](Net& n, ValueId v) { return n.swish(v); }},
      {"MATMUL+BIAS+GELU", [](Net& n, ValueId v) { return n.gelu_erf(v); }},
  };
  uint32_t seed = 1020;
  for (const Case& c : cases)
    for (bool const_b : {true, false})
      for (int64_t n : {1, 3}) {
        SCOPED_TRACE(c.pattern + (const_b ? " const B" : " runtime B") + " N" + std::to_string(n));
        Net net(seed++);
        ValueId a = net.input({n, 6, 10}, -2, 2);
        ValueId b = const_b ? net.weight({n, 10, 12}) : net.input({n, 10, 12});
        ValueId mm = net.matmul(a, b);
        ValueId bias = net.weight({1, 1, 12});
        ValueId biased = seed % 2 ? net.add(mm, bias) : net.add(bias, mm);
        Module m = net.finish({c.after(net, biased)});
        check_vs_reference(m, net.feeds, {c.pattern}, kTolAccumulate);
      }
}

// Activations as models write them by hand fuse once the import's canonical forms
// (compiler::canonicalize) have run: HF BERT's GELU halving x first, hard-swish as
// x * relu6(x + 3) / 6 with ReLU6 in two clamps, CLIP's quick GELU, a layer norm through
// torch.var's second mean.
TEST(OneDnnVsReference, HandWrittenActivationsFuseAfterCanonicalForms) {
  struct Case {
    std::string pattern;
    std::function<ValueId(Net&, ValueId)> after;
  };
  const std::vector<Case> cases = {
      {"MATMUL+BIAS+GELU",
       [](Net& n, ValueId v) {
         ValueId e = n.unary(Op::ERF, n.mul(v, n.scalar(0.70710678118654752, 3)));
         return n.mul(n.mul(v, n.scalar(0.5, 3)), n.add(e, n.scalar(1.0, 3)));
       }},
      {"MATMUL+BIAS+HARDSWISH",
       [](Net& n, ValueId v) {
         ValueId r6 = n.clamp(n.relu(n.add(v, n.scalar(3.0, 3))), 0.0, 6.0);
         return n.mul(n.mul(v, r6), n.scalar(1.0 / 6.0, 3));
       }},
      {"MATMUL+BIAS+GELU",  // x * (0.5 + 0.5 erf(x / sqrt 2))
       [](Net& n, ValueId v) {
         ValueId e = n.unary(Op::ERF, n.mul(v, n.scalar(0.70710678118654752, 3)));
         return n.mul(v, n.add(n.mul(e, n.scalar(0.5, 3)), n.scalar(0.5, 3)));
       }},
      {"MATMUL+BIAS+SWISH",  // SiLU written x / (1 + exp(-x))
       [](Net& n, ValueId v) {
         ValueId z = n.scalar(0.0, 1);
         ValueId ex = n.unary(Op::EXP, n.b.op(Op::NEGATE, {v, z, z}));
         return n.mul(v, n.unary(Op::RECIPROCAL, n.add(ex, n.scalar(1.0, 3))));
       }},
      {"MATMUL+BIAS+GELU_TANH",  // GPT-2's tanh GELU with the constant first: 0.044715 * x * x * x
       [](Net& n, ValueId v) {
         ValueId cube = n.mul(n.mul(n.mul(n.scalar(0.044715, 3), v), v), v);
         ValueId t = n.unary(Op::TANH, n.mul(n.add(v, cube), n.scalar(0.7978845608028654, 3)));
         return n.mul(n.mul(v, n.scalar(0.5, 3)), n.add(t, n.scalar(1.0, 3)));
       }},
      {"MATMUL+BIAS+GELU_TANH",  // BLOOM's: x * 0.5 * (1 + tanh(0.79788456 * x * (1 + 0.044715 * x * x)))
       [](Net& n, ValueId v) {
         ValueId inner = n.add(n.scalar(1.0, 3), n.mul(n.mul(n.scalar(0.044715, 3), v), v));
         ValueId t = n.unary(Op::TANH, n.mul(n.mul(n.scalar(0.79788456, 3), v), inner));
         return n.mul(n.mul(v, n.scalar(0.5, 3)), n.add(n.scalar(1.0, 3), t));
       }},
      {"MATMUL+BIAS+SCALE+SWISH+SCALE",  // CLIP's quick GELU, x * sigmoid(1.702 x)
       [](Net& n, ValueId v) { return n.mul(v, n.unary(Op::SIGMOID, n.mul(v, n.scalar(1.702, 3)))); }},
      {"LAYER_NORM",
       [](Net& n, ValueId v) {
         auto mean = [&] { return n.mul(n.reduce(Op::REDUCE_SUM, v, 2), n.scalar(1.0 / 12, 3)); };
         ValueId d = n.sub(v, mean());
         ValueId d2 = n.sub(v, mean());  // torch.var's own mean
         ValueId var = n.mul(n.reduce(Op::REDUCE_SUM, n.mul(d2, d2), 2), n.scalar(1.0 / 12, 3));
         return n.mul(d, n.unary(Op::RSQRT, n.add(var, n.scalar(1e-5, 3))));
       }},
  };
  uint32_t seed = 1050;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.pattern);
    Net net(seed++);
    ValueId a = net.input({1, 6, 10}, -3, 3);
    ValueId biased = net.add(net.matmul(a, net.weight({1, 10, 12})), net.weight({1, 1, 12}));
    Module m = net.finish({c.after(net, biased)});
    compiler::canonicalize(m.main());
    check_vs_reference(m, net.feeds, {c.pattern}, kTolAccumulate);
  }
}

TEST(OneDnnVsReference, MatmulResidualAdd) {
  Net net(1100);
  ValueId a = net.input({2, 5, 8});
  ValueId r = net.input({2, 5, 7});
  ValueId mm = net.matmul(a, net.weight({2, 8, 7}));
  Module m = net.finish({net.add(net.add(mm, net.weight({1, 1, 7})), r)});
  check_vs_reference(m, net.feeds, {"MATMUL+BIAS+ADD"}, kTolAccumulate);
}

TEST(OneDnnVsReference, MatmulResidualConstantAndSelfProduct) {
  {
    SCOPED_TRACE("ADD of a constant of the result's type: a residual read from a constant");
    Net net(1101);
    ValueId a = net.input({1, 5, 8});
    Module m = net.finish({net.add(net.matmul(a, net.weight({1, 8, 7})), net.weight({1, 5, 7}))});
    check_vs_reference(m, net.feeds, {"MATMUL+ADD"}, kTolAccumulate);
  }
  {
    SCOPED_TRACE("x @ x: one value as both operands");
    Net net(1102);
    ValueId x = net.input({2, 5, 5});
    check_vs_reference(net.finish({net.matmul(x, x)}), net.feeds, {"MATMUL"}, kTolAccumulate);
  }
}

TEST(OneDnnVsReference, GeluAfterMatmulAndBiasTransformerFfn) {
  // x [1,S,D] reshaped to a matmul, bias, GELU, second matmul, bias: the FFN of a transformer.
  Net net(1110);
  ValueId x = net.input({1, 16, 32}, -2, 2);
  ValueId h = net.add(net.matmul(x, net.weight({1, 32, 64}, -0.3, 0.3)), net.weight({1, 1, 64}));
  ValueId g = net.gelu_erf(h);
  ValueId y = net.add(net.matmul(g, net.weight({1, 64, 32}, -0.3, 0.3)), net.weight({1, 1, 32}));
  Module m = net.finish({y});
  check_vs_reference(m, net.feeds, {"MATMUL+BIAS+GELU", "MATMUL+BIAS"}, kTolAccumulate);
}

TEST(OneDnnVsReference, PostOpsBehindTheReshapeOfAMatmulFuse) {
  // ConvNeXt's pointwise layers as the ONNX importer writes them: an NHWC tensor reshaped to
  // [1, H*W, C], MATMUL, reshaped back to [1, H, W, N], then bias + GELU (and a residual add).
  for (int residual = 0; residual < 2; ++residual) {
    SCOPED_TRACE(residual ? "bias + residual" : "bias + GELU");
    Net net(1115 + static_cast<uint32_t>(residual));
    ValueId x = net.input({1, 6, 5, 24}, -2, 2);
    ValueId r = residual ? net.input({1, 6, 5, 40}) : kNoValue;
    ValueId m2 = net.matmul(net.reshape(x, {1, 30, 24}), net.weight({1, 24, 40}, -0.3, 0.3));
    ValueId h = net.add(net.weight({1, 1, 1, 40}), net.reshape(m2, {1, 6, 5, 40}));
    ValueId y = residual ? net.add(h, r) : net.gelu_erf(h);
    Module m = net.finish({y});
    check_vs_reference(m, net.feeds, {residual ? "MATMUL+RESHAPE+BIAS+ADD" : "MATMUL+RESHAPE+BIAS+GELU"},
                       kTolAccumulate);
  }
}

TEST(OneDnnVsReference, ResidualAddBehindAReshapeAfterTheBiasFuses) {
  // torch 2.x's ViT: the out-projection's [1, S, E] result plus bias, reshaped to the residual
  // stream's [S, 1, E], then the residual add: one matmul with the bias and a sum post-op.
  Net net(1116);
  ValueId x = net.input({1, 9, 16}, -2, 2);
  ValueId r = net.input({9, 1, 24});
  ValueId h = net.add(net.matmul(x, net.weight({1, 16, 24}, -0.3, 0.3)), net.weight({1, 1, 24}));
  Module m = net.finish({net.add(r, net.reshape(h, {9, 1, 24}))});
  check_vs_reference(m, net.feeds, {"MATMUL+BIAS+RESHAPE+ADD"}, kTolAccumulate);
}

TEST(OneDnnVsReference, PerChannelLayerScaleFusesAfterTheMatmul) {
  // ConvNeXt's block end: pointwise MATMUL behind the importer's RESHAPE, bias, the layer scale
  // gamma [1,1,1,C] (a per-channel MUL) and the residual add: one matmul with binary post-ops.
  Net net(1117);
  ValueId x = net.input({1, 6, 5, 24}, -2, 2);
  ValueId r = net.input({1, 6, 5, 40});
  ValueId m2 = net.matmul(net.reshape(x, {1, 30, 24}), net.weight({1, 24, 40}, -0.3, 0.3));
  ValueId h = net.add(net.reshape(m2, {1, 6, 5, 40}), net.weight({1, 1, 1, 40}));
  ValueId y = net.add(net.mul(h, net.weight({1, 1, 1, 40}, 1e-3, 1.0)), r);
  Module m = net.finish({y});
  check_vs_reference(m, net.feeds, {"MATMUL+RESHAPE+BIAS+SCALE+ADD"}, kTolAccumulate);
}

TEST(OneDnnVsReference, MatmulAttentionStyleTransposedOperands) {
  // q, k, v [1,S,H,D] -> TRANSPOSE [0,2,1,3] -> RESHAPE [H,S,D]; k additionally as [H,D,S] through
  // TRANSPOSE [0,2,3,1]. scores = q k^T (both operands strided views), then scores v.
  const int64_t S = 6, H = 3, D = 8;
  for (bool const_k : {false, true}) {
    SCOPED_TRACE(const_k ? "constant k" : "runtime k");
    Net net(1120 + (const_k ? 1u : 0u));
    ValueId q = net.input({1, S, H, D});
    ValueId k = const_k ? net.weight({1, S, H, D}) : net.input({1, S, H, D});
    ValueId v = net.input({1, S, H, D});
    ValueId qh = net.reshape(net.transpose(q, {0, 2, 1, 3}), {H, S, D});
    ValueId kt = net.reshape(net.transpose(k, {0, 2, 3, 1}), {H, D, S});
    ValueId scores = net.matmul(qh, kt);
    ValueId vh = net.reshape(net.transpose(v, {0, 2, 1, 3}), {H, S, D});
    ValueId out = net.matmul(scores, vh);
    Module m = net.finish({out});
    check_vs_reference(m, net.feeds, {"TRANSPOSE+MATMUL"}, kTolAccumulate);
    // Both matmuls read their transposed operands in place: no TRANSPOSE kernel of its own.
    auto dnn = Model::from_module(m, kOneDnn);
    EXPECT_EQ(dnn->explain().find(" onednn TRANSPOSE:"), std::string::npos) << dnn->explain();
  }
}

TEST(OneDnnVsReference, MatmulAttentionHeadsSplitByReshape) {
  // As exported: x [1,S,H*D] -> RESHAPE [1,S,H,D] -> TRANSPOSE -> RESHAPE [H,S,D] (or [H,D,S]); the
  // whole RESHAPE/TRANSPOSE/RESHAPE chain is one strided view.
  const int64_t S = 5, H = 4, D = 6;
  Net net(1125);
  ValueId q = net.input({1, S, H * D});
  ValueId k = net.input({1, S, H * D});
  ValueId qh = net.reshape(net.transpose(net.reshape(q, {1, S, H, D}), {0, 2, 1, 3}), {H, S, D});
  ValueId kt = net.reshape(net.transpose(net.reshape(k, {1, S, H, D}), {0, 2, 3, 1}), {H, D, S});
  Module m = net.finish({net.matmul(qh, kt)});
  auto dnn = check_vs_reference(m, net.feeds, {"TRANSPOSE+MATMUL"}, kTolAccumulate);
  EXPECT_NE(dnn->explain().find("onednn: 1 kernels covering 7 nodes"), std::string::npos) << dnn->explain();
}

TEST(OneDnnVsReference, MatmulOtherTransposedOperands) {
  {
    SCOPED_TRACE("A: batch and rows swapped, TRANSPOSE [1,0,2]");
    Net net(1126);
    ValueId x = net.input({4, 3, 6});
    Module m = net.finish({net.matmul(net.transpose(x, {1, 0, 2}), net.weight({3, 6, 2}))});
    check_vs_reference(m, net.feeds, {"TRANSPOSE+MATMUL"}, kTolAccumulate);
  }
  {
    SCOPED_TRACE("B: a constant [N,W,C] read transposed");
    Net net(1127);
    ValueId x = net.input({2, 3, 6});
    Module m = net.finish({net.matmul(x, net.transpose(net.weight({2, 5, 6}), {0, 2, 1}))});
    check_vs_reference(m, net.feeds, {"TRANSPOSE+MATMUL"}, kTolAccumulate);
  }
}

TEST(OneDnnVsReference, MatmulTransposedAWithBiasAndActivation) {
  // A^T chain on A only ([N,C,H] -> TRANSPOSE [0,2,1]), constant B, bias and ReLU.
  Net net(1130);
  ValueId at = net.input({2, 9, 5});
  ValueId a = net.transpose(at, {0, 2, 1});
  ValueId y = net.relu(net.add(net.matmul(a, net.weight({2, 9, 4})), net.weight({1, 1, 4})));
  Module m = net.finish({y});
  check_vs_reference(m, net.feeds, {"TRANSPOSE+MATMUL+BIAS+CLAMP"}, kTolAccumulate);
}

// ---- Softmax ----------------------------------------------------------------------------------

// REDUCE_MAX -> SUB -> EXP -> REDUCE_SUM -> RECIPROCAL -> MUL over `axis`, as the ONNX frontend
// lowers Softmax.
ValueId softmax(Net& net, ValueId x, int64_t axis) {
  ValueId mx = net.reduce(Op::REDUCE_MAX, x, axis);
  ValueId e = net.unary(Op::EXP, net.sub(x, mx));
  ValueId s = net.reduce(Op::REDUCE_SUM, e, axis);
  return net.mul(e, net.unary(Op::RECIPROCAL, s));
}

TEST(OneDnnVsReference, SoftmaxRegion) {
  struct Case {
    Shape shape;
    int64_t axis;
  };
  const std::vector<Case> cases = {{{2, 3, 4, 17}, 3}, {{1, 4, 8, 8}, 3}, {{2, 5, 3, 4}, 1}, {{6, 33}, 1}, {{3, 7, 2}, 0}};
  uint32_t seed = 1200;
  for (const Case& c : cases) {
    SCOPED_TRACE(shape_str(c.shape) + " axis " + std::to_string(c.axis));
    Net net(seed++);
    ValueId x = net.input(c.shape, -5, 5);
    Module m = net.finish({softmax(net, x, c.axis)});
    check_vs_reference(m, net.feeds, {"SOFTMAX"}, kTolElementwise);
  }
}

// Log-softmax as the ONNX importer lowers LogSoftmax (d - log(sum(exp(d))), d = x - max) is one
// unit, oneDNN's logsoftmax, on every axis; a LOG read by anything else keeps the nodes apart.
TEST(OneDnnVsReference, LogSoftmaxRegion) {
  struct Case {
    Shape shape;
    int64_t axis;
  };
  const std::vector<Case> cases = {{{2, 3, 4, 17}, 3}, {{2, 5, 3, 4}, 1}, {{6, 33}, 1}, {{3, 7, 2}, 0}};
  uint32_t seed = 1250;
  for (const Case& c : cases) {
    SCOPED_TRACE(shape_str(c.shape) + " axis " + std::to_string(c.axis));
    Net net(seed++);
    ValueId x = net.input(c.shape, -30, 30);
    ValueId d = net.sub(x, net.reduce(Op::REDUCE_MAX, x, c.axis));
    ValueId ls = net.unary(Op::LOG, net.reduce(Op::REDUCE_SUM, net.unary(Op::EXP, d), c.axis));
    Module m = net.finish({net.sub(d, ls)});
    check_vs_reference(m, net.feeds, {"LOG_SOFTMAX"}, kTolElementwise);
  }
  Net net(1260);
  ValueId x = net.input({4, 9}, -3, 3);
  ValueId d = net.sub(x, net.reduce(Op::REDUCE_MAX, x, 1));
  ValueId ls = net.unary(Op::LOG, net.reduce(Op::REDUCE_SUM, net.unary(Op::EXP, d), 1));
  Module m = net.finish({net.sub(d, ls), ls});
  auto dnn = check_vs_reference(m, net.feeds, {"REDUCE_MAX", "EXP", "REDUCE_SUM", "LOG"}, kTolElementwise, false);
  EXPECT_EQ(dnn->explain().find("LOG_SOFTMAX"), std::string::npos) << dnn->explain();
}

TEST(OneDnnVsReference, AttentionScoresSoftmax) {
  // matmul -> scale -> softmax -> matmul: the regions and composites chain on oneDNN.
  Net net(1210);
  ValueId q = net.input({4, 6, 8});
  ValueId k = net.input({4, 8, 6});
  ValueId v = net.input({4, 6, 8});
  ValueId scores =
      net.add(net.mul(net.mul(net.matmul(q, k), net.scalar(0.35355339, 3)), net.scalar(1.25, 3)), net.scalar(-0.75, 3));
  ValueId out = net.matmul(softmax(net, scores, 2), v);
  Module m = net.finish({out});
  check_vs_reference(m, net.feeds, {"MATMUL", "SOFTMAX", "MATMUL+SCALE+SCALE+SHIFT"}, kTolAccumulate);
}

// ---- Layer normalization --------------------------------------------------------------------------

// As the ONNX frontend lowers LayerNormalization over the last axis: mean = REDUCE_SUM * 1/N,
// d = x - mean, var = REDUCE_SUM(d * d) * 1/N, y = d * RSQRT(var + eps) [* gamma] [+ beta].
ValueId layer_norm(Net& net, ValueId x, double eps, ValueId gamma, ValueId beta) {
  const TensorType& t = net.type(x);
  const int r = t.rank();
  const int64_t axis = r - 1;
  const double inv_n = 1.0 / static_cast<double>(t.shape.back());
  ValueId mean = net.mul(net.reduce(Op::REDUCE_SUM, x, axis), net.scalar(inv_n, r));
  ValueId d = net.sub(x, mean);
  ValueId var = net.mul(net.reduce(Op::REDUCE_SUM, net.mul(d, d), axis), net.scalar(inv_n, r));
  ValueId inv = net.unary(Op::RSQRT, net.add(var, net.scalar(eps, r)));
  ValueId y = net.mul(d, inv);
  if (gamma != kNoValue) y = net.mul(y, gamma);
  if (beta != kNoValue) y = net.add(y, beta);
  return y;
}

TEST(OneDnnVsReference, LayerNormRegion) {
  struct Case {
    Shape shape;
    double eps;
    bool gamma, beta;
  };
  const std::vector<Case> cases = {
      {{2, 5, 16}, 1e-5, true, true}, {{1, 2, 3, 24}, 1e-6, true, true}, {{4, 7}, 1e-5, true, false},
      {{3, 9, 10}, 1e-3, false, false}, {{1, 8, 768}, 1e-12, true, true},
  };
  uint32_t seed = 1300;
  for (const Case& c : cases) {
    SCOPED_TRACE(shape_str(c.shape) + " eps " + std::to_string(c.eps) + (c.gamma ? " gamma" : "") + (c.beta ? " beta" : ""));
    Net net(seed++);
    ValueId x = net.input(c.shape, -3, 5);
    Shape cs(c.shape.size(), 1);
    cs.back() = c.shape.back();
    ValueId gamma = c.gamma ? net.weight(cs, 0.5, 1.5) : kNoValue;
    ValueId beta = c.beta ? net.weight(cs) : kNoValue;
    Module m = net.finish({layer_norm(net, x, c.eps, gamma, beta)});
    check_vs_reference(m, net.feeds, {"LAYER_NORM"}, kTolAccumulate);
  }
}

struct RowNormCase {
  Shape shape;
  double eps;
  bool gamma, beta;
};

// Per case: x * x summed over the last axis, then RMS norm (x * rsqrt(mean + eps)) or, with `l2`,
// F.normalize as the ONNX import writes it (x * 1 / max(sqrt(sum), eps); with eps > 0 the first
// row all zeros: its norm is 0, the guard gives 0 * (1 / eps) = 0); [* gamma [+ beta]]; plus a
// residual ADD of x. One `unit` and an ADD, the same bits on 1 and 2 threads.
void check_row_norms(const std::vector<RowNormCase>& cases, bool l2, const char* unit, uint32_t seed) {
  for (const RowNormCase& c : cases) {
    SCOPED_TRACE(shape_str(c.shape) + " eps " + std::to_string(c.eps) + (c.gamma ? " gamma" : "") + (c.beta ? " beta" : ""));
    Net net(seed++);
    ValueId x = net.input(c.shape, -3, 5);
    const int r = static_cast<int>(c.shape.size());
    ValueId sum = net.reduce(Op::REDUCE_SUM, net.mul(x, x), r - 1);
    ValueId y;
    if (l2) {
      if (c.eps > 0) {
        Tensor& f = net.feeds.back();
        std::memset(f.mutable_bytes(), 0, static_cast<size_t>(c.shape.back()) * 4);
      }
      ValueId norm = net.b.op(Op::POW, {sum, net.scalar(0.5, r)});
      y = net.mul(x, net.unary(Op::RECIPROCAL, net.clamp(norm, c.eps, INFINITY)));
    } else {
      ValueId ms = net.mul(sum, net.scalar(1.0 / static_cast<double>(c.shape.back()), r));
      y = net.mul(x, net.unary(Op::RSQRT, net.add(ms, net.scalar(c.eps, r))));
    }
    Shape cs(c.shape.size(), 1);
    cs.back() = c.shape.back();
    if (c.gamma) y = net.mul(y, net.weight(cs, 0.5, 1.5));
    if (c.beta) y = net.add(y, net.weight(cs));
    Module m = net.finish({net.add(y, x)});
    auto dnn = check_vs_reference(m, net.feeds, {unit, "ADD"}, kTolAccumulate);
    const std::vector<Tensor> one = run_model(dnn, net.feeds, 1), two = run_model(dnn, net.feeds, 2);
    EXPECT_TRUE(one[0].identical(two[0]));
  }
}

// RMS norm as T5 and LLaMA export it: x * rsqrt(mean(x * x) + eps) [* gamma [+ beta]], x also
// read by a residual ADD. One RMS_NORM unit (Weft's own kernel).
TEST(OneDnnVsReference, RmsNormRegion) {
  check_row_norms({{{2, 5, 16}, 1e-6, true, false},
                   {{1, 3, 4, 20}, 1e-5, true, true},
                   {{3, 9, 13}, 1e-3, false, false},
                   {{1, 8, 768}, 1e-6, true, false},
                   {{70, 5}, 1e-5, true, true}},
                  false, "RMS_NORM", 1360);
}

// F.normalize(x, dim=-1): one L2_NORM unit (the same row kernel's L2 form), a zero row 0.
TEST(OneDnnVsReference, L2NormRegion) {
  check_row_norms({{{2, 5, 16}, 1e-12, false, false},
                   {{49, 3, 64, 32}, 1e-12, false, false},
                   {{3, 9, 13}, 1e-3, true, false},
                   {{1, 8, 768}, 1e-6, true, true},
                   {{70, 5}, 0.0, false, false}},
                  true, "L2_NORM", 1370);
}

TEST(OneDnnVsReference, LayerNormWithRuntimeBetaKeepsTheAddOutside) {
  // beta that is not a constant is not part of the region: the ADD runs on its own (on oneDNN,
  // broadcast along the last dimension).
  Net net(1350);
  ValueId x = net.input({2, 6, 12}, -3, 5);
  ValueId beta = net.input({1, 1, 12});
  ValueId y = net.add(layer_norm(net, x, 1e-5, net.weight({1, 1, 12}, 0.5, 1.5), kNoValue), beta);
  Module m = net.finish({y});
  check_vs_reference(m, net.feeds, {"LAYER_NORM", "ADD"}, kTolAccumulate);
}

TEST(OneDnnVsReference, TransformerBlockEndToEnd) {
  // LayerNorm -> QKV-free self attention (q = k = v = x) -> residual -> LayerNorm -> FFN (GELU).
  const int64_t S = 8, D = 16;
  Net net(1400);
  ValueId x = net.input({1, S, D}, -2, 2);
  Shape cs = {1, 1, D};
  ValueId ln1 = layer_norm(net, x, 1e-5, net.weight(cs, 0.5, 1.5), net.weight(cs));
  ValueId q = net.add(net.matmul(ln1, net.weight({1, D, D}, -0.4, 0.4)), net.weight(cs));
  ValueId kt = net.transpose(net.add(net.matmul(ln1, net.weight({1, D, D}, -0.4, 0.4)), net.weight(cs)), {0, 2, 1});
  ValueId p = softmax(net, net.mul(net.matmul(q, kt), net.scalar(0.25, 3)), 2);
  ValueId att = net.add(net.matmul(p, ln1), x);
  ValueId ln2 = layer_norm(net, att, 1e-5, net.weight(cs, 0.5, 1.5), net.weight(cs));
  ValueId h = net.gelu_erf(net.add(net.matmul(ln2, net.weight({1, D, 2 * D}, -0.3, 0.3)), net.weight({1, 1, 2 * D})));
  ValueId y = net.add(net.add(net.matmul(h, net.weight({1, 2 * D, D}, -0.3, 0.3)), net.weight(cs)), att);
  Module m = net.finish({y});
  check_vs_reference(m, net.feeds, {"LAYER_NORM", "SOFTMAX", "MATMUL+BIAS+GELU", "MATMUL+BIAS+ADD", "TRANSPOSE+MATMUL+SCALE"},
                     kTolAccumulate);
}


// Batch-1 matmuls by constant weights (classifier heads, fully connected layers) run on Weft's
// matrix-vector kernel: weights given as [K, N] (transposed into rows once) or as a TRANSPOSE of
// [N, K] (Gemm transB = 1; read in place), the row read through a strided view, every post-op,
// K and N off the kernel's 16-lane and 4-row blocks, one and two threads. Up to K = 256 the kernel
// reads the weights as [K, N] panels of 16 columns (weft_gemv_cols), up to K = 2048 as packed
// [K][16] panels (weft_gemv_panels: N off the four-panel blocks too), deeper ones by rows.
// The copy of Weft's own loops that WEFT_CPU_ISA selects on this CPU ("avx2" or "sse2"), or "" when
// the variable is unset (any copy).
std::string capped_isa() {
  const char* cap = std::getenv("WEFT_CPU_ISA");
  if (cap == nullptr || (std::string_view(cap) != "avx2" && std::string_view(cap) != "sse2")) return "";
  __builtin_cpu_init();
  return std::string_view(cap) == "avx2" && __builtin_cpu_supports("x86-64-v3") != 0 ? "avx2" : "sse2";
}

TEST(OneDnnVsReference, BatchOneMatmulRunsOnTheGemvKernel) {
  struct Case {
    int64_t k, n;
    bool transposed_b, strided_a;
    std::string pattern;
    std::function<ValueId(Net&, ValueId)> after;
  };
  const std::vector<Case> cases = {
      {17, 3, false, false, "MATMUL", [](Net&, ValueId v) { return v; }},
      {64, 1000, true, false, "TRANSPOSE+MATMUL+BIAS", [](Net& n, ValueId v) { return n.add(v, n.weight({1, 1, 1000})); }},
      {1000, 37, true, true, "TRANSPOSE+MATMUL+BIAS+CLAMP",
       [](Net& n, ValueId v) { return n.relu(n.add(n.weight({1, 1, 37}), v)); }},
      {300, 129, false, false, "MATMUL+BIAS+GELU", [](Net& n, ValueId v) { return n.gelu_erf(n.add(v, n.weight({1, 1, 129}))); }},
      {33, 20, false, true, "TRANSPOSE+MATMUL+ADD+SIGMOID",
       [](Net& n, ValueId v) { return n.unary(Op::SIGMOID, n.add(v, n.input({1, 1, 20}))); }},
      {48, 8, true, false, "TRANSPOSE+MATMUL+TANH", [](Net& n, ValueId v) { return n.unary(Op::TANH, v); }},
      {48, 9, false, false, "MATMUL+SWISH", [](Net& n, ValueId v) { return n.swish(v); }},
      {40, 24, false, false, "MATMUL+BIAS+SCALE+SHIFT",
       [](Net& n, ValueId v) { return n.add(n.mul(n.add(v, n.weight({1, 1, 24})), n.scalar(0.125, 3)), n.scalar(1.5, 3)); }},
      {40, 27, false, false, "MATMUL+BIAS+SCALE+ADD",  // a per-column factor (the addend has the result's shape)
       [](Net& n, ValueId v) { return n.add(n.mul(n.add(v, n.weight({1, 1, 27})), n.weight({1, 1, 27}, 0.5, 2)), n.weight({1, 1, 27})); }},
      {2049, 70, true, false, "TRANSPOSE+MATMUL+BIAS", [](Net& n, ValueId v) { return n.add(v, n.weight({1, 1, 70})); }},
      {2500, 13, false, true, "TRANSPOSE+MATMUL", [](Net&, ValueId v) { return v; }},
      {2048, 90, true, false, "TRANSPOSE+MATMUL+CLAMP", [](Net& n, ValueId v) { return n.relu(v); }},
      {512, 60, false, false, "MATMUL+BIAS", [](Net& n, ValueId v) { return n.add(v, n.weight({1, 1, 60})); }},  // a partial panel among four
  };
  uint32_t seed = 1200;
  for (const Case& c : cases)
    for (int threads : {1, 2}) {
      SCOPED_TRACE(c.pattern + " K" + std::to_string(c.k) + " N" + std::to_string(c.n) + " threads " + std::to_string(threads));
      Net net(seed++);
      ValueId a = c.strided_a ? net.transpose(net.input({1, c.k, 1}, -2, 2), {0, 2, 1}) : net.input({1, 1, c.k}, -2, 2);
      ValueId b = c.transposed_b ? net.transpose(net.weight({1, c.n, c.k}, -0.3, 0.3), {0, 2, 1}) : net.weight({1, c.k, c.n}, -0.3, 0.3);
      ValueId y = c.after(net, net.matmul(a, b));
      Module m = net.finish({y});
      auto model = check_vs_reference(m, net.feeds, {c.pattern}, kTolAccumulate, false, threads);
      Context ctx(model, {.threads = threads});
      ctx.set_profiling(true);
      ctx.run(net.feeds);
      // Under WEFT_CPU_ISA=avx2 or sse2 (ctest's backends_onednn_as_avx2 / _as_sse2) the kernel must
      // name the copy the cap selects.
      const std::string want =
          std::string(c.k <= 256 ? "weft_gemv_cols:" : c.k <= 2048 ? "weft_gemv_panels:" : "weft_gemv:") + capped_isa();
      bool gemv = false;
      for (const KernelProfile& k : ctx.profile()) gemv |= k.implementation.rfind(want, 0) == 0;
      EXPECT_TRUE(gemv) << "no kernel ran on " << want;
    }
}


// GELU's tanh form written out (0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))), with the
// product by x and 0.5 in either order, fuses as eltwise_gelu_tanh: after a batched matmul and on
// the batch-1 GEMV kernel.
TEST(OneDnnVsReference, GeluTanhFormFusesAfterMatmul) {
  auto gelu_tanh = [](Net& n, ValueId x, bool half_first) {
    const int r = n.type(x).rank();
    ValueId cube = n.mul(n.mul(x, x), x);
    ValueId inner = n.mul(n.add(x, n.mul(cube, n.scalar(0.044715, r))), n.scalar(0.7978845608028654, r));
    ValueId one_plus = n.add(n.unary(Op::TANH, inner), n.scalar(1.0, r));
    return half_first ? n.mul(n.mul(x, n.scalar(0.5, r)), one_plus) : n.mul(n.mul(x, one_plus), n.scalar(0.5, r));
  };
  uint32_t seed = 1250;
  for (int64_t rows : {1, 9})
    for (bool half_first : {true, false}) {
      SCOPED_TRACE("rows " + std::to_string(rows) + (half_first ? ", MUL(MUL(x, 0.5), .)" : ", MUL(MUL(x, .), 0.5)"));
      Net net(seed++);
      ValueId a = net.input({1, rows, 20}, -2, 2);
      ValueId h = net.add(net.matmul(a, net.weight({1, 20, 24}, -0.5, 0.5)), net.weight({1, 1, 24}));
      Module m = net.finish({gelu_tanh(net, h, half_first)});
      check_vs_reference(m, net.feeds, {"MATMUL+BIAS+GELU_TANH"}, kTolAccumulate);
    }
}

}  // namespace
// Attention with one fused q/k/v projection: q, k and v are SLICEs of one [S, 3*D] tensor, each
// reshaped into heads and transposed. The whole SLICE -> RESHAPE -> TRANSPOSE -> RESHAPE chain is
// a strided view with an offset, so both attention matmuls read the projection in place: no
// SLICE or TRANSPOSE runs on its own.
TEST(OneDnnVsReference, MatmulReadsSlicedHeadsInPlace) {
  const int64_t S = 10, H = 3, dh = 4, D = H * dh;
  Net net(1201);
  ValueId qkv = net.input({1, S, 3 * D});
  auto head = [&](int64_t which, std::vector<int64_t> perms) {
    ValueId st = net.b.constant_shape("start" + std::to_string(which), {0, 0, which * D});
    ValueId sz = net.b.constant_shape("size" + std::to_string(which), {1, S, D});
    ValueId x = net.b.op(Op::SLICE, {qkv, st, sz});
    x = net.transpose(net.reshape(x, {1, S, H, dh}), std::move(perms));  // [1,H,S,dh] or [1,H,dh,S]
    const Shape& t = net.type(x).shape;
    return net.reshape(x, {H, t[2], t[3]});
  };
  ValueId scores = net.matmul(head(0, {0, 2, 1, 3}), head(1, {0, 2, 3, 1}));  // [H,S,S]
  ValueId out = net.matmul(scores, head(2, {0, 2, 1, 3}));                    // [H,S,dh]
  Module m = net.finish({out});
  auto dnn = check_vs_reference(m, net.feeds, {"TRANSPOSE+MATMUL"}, kTolAccumulate);
  const std::string ex = dnn->explain();
  EXPECT_EQ(ex.find(" SLICE:"), std::string::npos) << ex;
  EXPECT_EQ(ex.find(" TRANSPOSE:"), std::string::npos) << ex;
}

// The heads of attention going back: [H,S,dh] -> RESHAPE [1,H,S,dh] -> TRANSPOSE [1,S,H,dh] ->
// RESHAPE [1,S,H*dh]. The matmul writes its result through the chain (strided destination), so no
// TRANSPOSE runs on its own; the last RESHAPE stays a free alias.
TEST(OneDnnVsReference, MatmulWritesThroughATransposeChain) {
  const int64_t S = 9, H = 3, dh = 5;
  for (bool batch_one : {false, true}) {
    SCOPED_TRACE(batch_one ? "one head" : "three heads");
    const int64_t heads = batch_one ? 1 : H;
    Net net(1301 + (batch_one ? 1 : 0));
    ValueId p = net.input({heads, S, S});
    ValueId v = net.input({heads, S, dh});
    ValueId ctx = net.matmul(p, v);  // [heads,S,dh]
    ValueId t = net.transpose(net.reshape(ctx, {1, heads, S, dh}), {0, 2, 1, 3});
    Module m = net.finish({net.reshape(t, {1, S, heads * dh})});
    auto dnn = check_vs_reference(m, net.feeds, {"MATMUL+TRANSPOSE"}, kTolAccumulate, /*all_on_onednn=*/false);
    const std::string ex = dnn->explain();
    EXPECT_EQ(ex.find(" TRANSPOSE:"), std::string::npos) << ex;
  }
}

}  // namespace weft::onednn_test
