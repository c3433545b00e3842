// oneDNN versus the reference backend: convolutions (CONV2D, DEPTHWISE_CONV2D, TRANSPOSE_CONV2D)
// over sweeps of kernel sizes, strides, paddings (symmetric and not), dilations, channel counts
// (odd ones included), batches and non-square inputs; the fused composites in front (PAD) and
// behind (residual ADD, CLAMP as ReLU / ReLU6, SIGMOID, TANH, swish, GELU); pooling with its own
// padding and with a fused PAD. Each case asserts that the pattern ran on oneDNN (explain) and that
// its outputs match the reference within the tolerance documented in onednn_test_util.h.
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "backends/onednn/gemm.h"
#include "common/scoped_env.h"
#include "backends/onednn/pool.h"
#include "backends/onednn/onednn_test_util.h"

namespace weft::onednn_test {
namespace {

// ---- CONV2D -------------------------------------------------------------------------------------

struct ConvSpec {
  int64_t n, ih, iw, ic, oc, kh, kw, sh, sw, dh, dw;
  std::vector<int64_t> pad;  // [t, b, l, r]; b and r are raised to satisfy idiv_check
  bool bias1 = false;        // bias of shape [1] (broadcast to every output channel)
  std::string str() const {
    return "N" + std::to_string(n) + " " + std::to_string(ih) + "x" + std::to_string(iw) + " IC" +
           std::to_string(ic) + " OC" + std::to_string(oc) + " k" + std::to_string(kh) + "x" + std::to_string(kw) +
           " s" + std::to_string(sh) + "," + std::to_string(sw) + " d" + std::to_string(dh) + "," +
           std::to_string(dw) + " pad" + vec_str(pad) + (bias1 ? " bias[1]" : "");
  }
};

ConvSpec fitted(ConvSpec c) {
  c.pad[1] = fit_conv_pad(c.ih, c.pad[0], c.pad[1], c.kh, c.dh, c.sh);
  c.pad[3] = fit_conv_pad(c.iw, c.pad[2], c.pad[3], c.kw, c.dw, c.sw);
  return c;
}

// CONV2D alone; returns the conv's output.
ValueId build_conv(Net& net, ValueId x, const ConvSpec& c) {
  ValueId w = net.weight({c.oc, c.kh, c.kw, c.ic});
  ValueId bias = net.weight({c.bias1 ? 1 : c.oc});
  return net.conv2d(x, w, bias, c.pad, {c.sh, c.sw}, {c.dh, c.dw});
}

TEST(OneDnnVsReference, Conv2dSweep) {
  // 3 kernels x 2 strides x 2 dilations x 3 paddings; channels, batch and input size rotate.
  const std::vector<std::pair<int64_t, int64_t>> channels = {{3, 5}, {17, 8}, {5, 17}, {1, 3}, {16, 32}, {8, 1}, {4, 4}};
  const std::vector<std::pair<int64_t, int64_t>> sizes = {{9, 13}, {12, 10}, {11, 9}, {10, 16}};
  int i = 0;
  for (int64_t k : {1, 3, 5})
    for (int64_t s : {1, 2})
      for (int64_t d : {1, 2})
        for (int padmode = 0; padmode < 3; ++padmode, ++i) {
          std::vector<int64_t> pad = padmode == 0   ? std::vector<int64_t>{0, 0, 0, 0}
                                     : padmode == 1 ? std::vector<int64_t>{k / 2 * d, k / 2 * d, k / 2 * d, k / 2 * d}
                                                    : std::vector<int64_t>{1, 0, 0, 2};  // asymmetric
          auto [ic, oc] = channels[static_cast<size_t>(i) % channels.size()];
          auto [ih, iw] = sizes[static_cast<size_t>(i) % sizes.size()];
          ConvSpec c = fitted({1 + i % 2, ih, iw, ic, oc, k, k, s, s, d, d, pad, i % 3 == 2});
          SCOPED_TRACE(c.str());
          Net net(100 + static_cast<uint32_t>(i));
          ValueId x = net.input({c.n, c.ih, c.iw, c.ic});
          Module m = net.finish({build_conv(net, x, c)});
          check_vs_reference(m, net.feeds, {"CONV2D"}, kTolAccumulate);
        }
}

TEST(OneDnnVsReference, Conv2dNonSquareKernelsStridesAndDilations) {
  const std::vector<ConvSpec> specs = {
      {1, 8, 11, 6, 7, 3, 1, 1, 1, 1, 1, {1, 1, 0, 0}},  {2, 7, 12, 5, 9, 1, 5, 1, 2, 1, 1, {0, 0, 2, 2}},
      {1, 13, 9, 3, 4, 3, 5, 2, 1, 1, 2, {0, 1, 3, 0}},  {1, 10, 10, 2, 6, 5, 3, 1, 2, 2, 1, {2, 3, 1, 0}},
      {2, 9, 14, 7, 3, 2, 4, 2, 3, 1, 1, {0, 0, 1, 2}, true}, {1, 16, 6, 4, 5, 7, 1, 3, 1, 1, 1, {3, 3, 0, 0}},
      // wider layers, where oneDNN picks blocked weight layouts and vectorised kernels
      {1, 14, 14, 64, 48, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}},    {2, 8, 8, 96, 33, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}},
      {1, 15, 15, 32, 64, 3, 3, 2, 2, 1, 1, {1, 1, 1, 1}},
  };
  uint32_t seed = 200;
  for (ConvSpec c : specs) {
    c = fitted(c);
    SCOPED_TRACE(c.str());
    Net net(seed++);
    ValueId x = net.input({c.n, c.ih, c.iw, c.ic});
    Module m = net.finish({build_conv(net, x, c)});
    check_vs_reference(m, net.feeds, {"CONV2D"}, kTolAccumulate);
  }
}

TEST(OneDnnVsReference, Conv2dPaddingWiderThanTheKernelAndDilationThree) {
  Net net(240);
  ValueId x = net.input({1, 7, 7, 3});
  Module m = net.finish({net.conv2d(x, net.weight({4, 3, 3, 3}), net.weight({4}), {3, 3, 4, 4}, {1, 1}, {1, 1}),
                         net.conv2d(x, net.weight({4, 3, 3, 3}), net.weight({4}), {0, 0, 3, 3}, {1, 1}, {3, 3})});
  check_vs_reference(m, net.feeds, {"CONV2D"}, kTolAccumulate);
}

TEST(OneDnnVsReference, Conv2dWithRuntimeBias) {
  // A bias that is a graph input of OC values is read at run time.
  Net net(250);
  ValueId x = net.input({1, 8, 8, 5});
  ValueId bias = net.input({6});
  ValueId y = net.conv2d(x, net.weight({6, 3, 3, 5}), bias, {1, 1, 1, 1}, {1, 1}, {1, 1});
  Module m = net.finish({y});
  check_vs_reference(m, net.feeds, {"CONV2D"}, kTolAccumulate);
}

// Regression: a CONV2D whose bias is a runtime tensor of one value (BC = 1, valid TOSA) made
// Model::from_module throw from inside the partitioner. It now falls back to the reference backend
// with the reason.
TEST(OneDnnVsReference, Conv2dWithRuntimeBroadcastBiasFallsBack) {
  Net net(251);
  ValueId x = net.input({1, 6, 6, 3});
  ValueId bias = net.input({1});
  ValueId y = net.conv2d(x, net.weight({4, 3, 3, 3}), bias, {1, 1, 1, 1}, {1, 1}, {1, 1});
  Module m = net.finish({y});
  std::shared_ptr<const Model> dnn;
  ASSERT_NO_THROW(dnn = Model::from_module(m, kOneDnn));
  EXPECT_NE(dnn->explain().find("not on onednn: a bias of one value broadcast over the channels must be a constant"),
            std::string::npos)
      << dnn->explain();
  auto ref = Model::from_module(m, kReference);
  EXPECT_TRUE(close(run_model(dnn, net.feeds)[0], run_model(ref, net.feeds)[0], kTolAccumulate));
}

TEST(OneDnnVsReference, PadConv2dFusion) {
  struct Case {
    std::vector<int64_t> pad_op, conv_pad;
    int64_t k, s, d;
  };
  const std::vector<Case> cases = {
      {{1, 1, 1, 1}, {0, 0, 0, 0}, 3, 1, 1},  // the usual "same" padding as a separate PAD
      {{0, 1, 0, 1}, {0, 0, 0, 0}, 3, 2, 1},  // TF-style asymmetric SAME for stride 2
      {{2, 0, 1, 3}, {1, 0, 0, 1}, 3, 1, 1},  // PAD and the conv's own padding add up
      {{2, 2, 2, 2}, {0, 0, 0, 0}, 5, 1, 1},
      {{2, 2, 2, 2}, {0, 0, 0, 0}, 3, 1, 2},  // dilated
  };
  uint32_t seed = 300;
  for (const Case& c : cases) {
    SCOPED_TRACE("PAD " + vec_str(c.pad_op) + " conv pad " + vec_str(c.conv_pad) + " k" + std::to_string(c.k) +
                 " s" + std::to_string(c.s) + " d" + std::to_string(c.d));
    Net net(seed++);
    const int64_t ih = 10, iw = 9;
    ValueId x = net.input({2, ih, iw, 4});
    ValueId p = net.pad_hw(x, c.pad_op, 0.0);
    std::vector<int64_t> cp = c.conv_pad;
    cp[1] = fit_conv_pad(ih + c.pad_op[0] + c.pad_op[1], cp[0], cp[1], c.k, c.d, c.s);
    cp[3] = fit_conv_pad(iw + c.pad_op[2] + c.pad_op[3], cp[2], cp[3], c.k, c.d, c.s);
    ValueId y = net.conv2d(p, net.weight({7, c.k, c.k, 4}), net.weight({7}), cp, {c.s, c.s}, {c.d, c.d});
    Module m = net.finish({y});
    check_vs_reference(m, net.feeds, {"PAD+CONV2D"}, kTolAccumulate);
  }
}

TEST(OneDnnVsReference, PadThatCannotFuseStaysOnReferenceAndConvOnOneDnn) {
  // A non-zero pad value, and a PAD of the channel dimension, cannot become the conv's padding:
  // the PAD runs alone (on the reference backend: oneDNN has no PAD primitive here).
  for (int variant = 0; variant < 2; ++variant) {
    SCOPED_TRACE(variant == 0 ? "pad value 0.5" : "PAD of C");
    Net net(310 + static_cast<uint32_t>(variant));
    ValueId x = net.input({1, 7, 7, 3});
    ValueId p = variant == 0 ? net.pad_hw(x, {1, 1, 1, 1}, 0.5) : net.pad(x, {0, 0, 1, 1, 1, 1, 0, 2}, 0.0);
    const int64_t ic = variant == 0 ? 3 : 5;
    ValueId y = net.relu(net.conv2d(p, net.weight({4, 3, 3, ic}), net.weight({4}), {0, 0, 0, 0}, {1, 1}, {1, 1}));
    Module m = net.finish({y});
    auto dnn = check_vs_reference(m, net.feeds, {"CONV2D+CLAMP"}, kTolAccumulate, /*all_on_onednn=*/false);
    EXPECT_NE(dnn->explain().find(" reference PAD:"), std::string::npos) << dnn->explain();
  }
}

TEST(OneDnnVsReference, Conv2dResidualAddAndClamp) {
  // conv + residual ADD + ReLU (CLAMP 0..FLT_MAX) and ReLU6 (CLAMP 0..6), the residual on either
  // side of the ADD, with and without a fused PAD in front.
  uint32_t seed = 400;
  for (bool relu6 : {false, true})
    for (bool residual_first : {false, true})
      for (bool with_pad : {false, true}) {
        SCOPED_TRACE(std::string(relu6 ? "relu6" : "relu") + (residual_first ? " ADD(r, conv)" : " ADD(conv, r)") +
                     (with_pad ? " with PAD" : ""));
        Net net(seed++);
        ValueId x = net.input({2, 8, 9, 6});
        ValueId r = net.input({2, 8, 9, 10}, -4.0, 4.0);
        ValueId in = with_pad ? net.pad_hw(x, {1, 1, 1, 1}, 0.0) : x;
        std::vector<int64_t> pad = with_pad ? std::vector<int64_t>{0, 0, 0, 0} : std::vector<int64_t>{1, 1, 1, 1};
        ValueId c = net.conv2d(in, net.weight({10, 3, 3, 6}, -2, 2), net.weight({10}), pad, {1, 1}, {1, 1});
        ValueId a = residual_first ? net.add(r, c) : net.add(c, r);
        ValueId y = relu6 ? net.clamp(a, 0.0, 6.0) : net.relu(a);
        Module m = net.finish({y});
        check_vs_reference(m, net.feeds, {std::string(with_pad ? "PAD+" : "") + "CONV2D+ADD+CLAMP"}, kTolAccumulate);
      }
}

TEST(OneDnnVsReference, Conv2dResidualOfItsOwnInput) {
  // ResNet block shape: y = relu(x + conv(x)); the conv's input is also the residual operand.
  Net net(410);
  ValueId x = net.input({1, 6, 6, 8});
  ValueId c = net.conv2d(x, net.weight({8, 3, 3, 8}), net.weight({8}), {1, 1, 1, 1}, {1, 1}, {1, 1});
  Module m = net.finish({net.relu(net.add(x, c))});
  check_vs_reference(m, net.feeds, {"CONV2D+ADD+CLAMP"}, kTolAccumulate);
}

TEST(OneDnnVsReference, Conv2dResidualFromAConstantAndThroughAFusedPad) {
  {
    SCOPED_TRACE("ADD(constant, conv)");
    Net net(411);
    ValueId x = net.input({1, 5, 5, 3});
    ValueId c = net.conv2d(x, net.weight({4, 3, 3, 3}), net.weight({4}), {1, 1, 1, 1}, {1, 1}, {1, 1});
    check_vs_reference(net.finish({net.add(net.weight({1, 5, 5, 4}), c)}), net.feeds, {"CONV2D+ADD"}, kTolAccumulate);
  }
  {
    SCOPED_TRACE("relu(x + conv(PAD(x))): the PAD's source is also the residual");
    Net net(412);
    ValueId x = net.input({2, 6, 7, 5});
    ValueId c = net.conv2d(net.pad_hw(x, {1, 1, 2, 2}, 0.0), net.weight({5, 3, 5, 5}), net.weight({5}), {0, 0, 0, 0},
                           {1, 1}, {1, 1});
    check_vs_reference(net.finish({net.relu(net.add(c, x))}), net.feeds, {"PAD+CONV2D+ADD+CLAMP"}, kTolAccumulate);
  }
}

TEST(OneDnnVsReference, Conv2dActivations) {
  struct Case {
    std::string pattern;
    std::function<ValueId(Net&, ValueId)> act;
  };
  const std::vector<Case> cases = {
      {"CONV2D+SIGMOID", [](Net& n, ValueId v) { return n.unary(Op::SIGMOID, v); }},
      {"CONV2D+TANH", [](Net& n, ValueId v) { return n.unary(Op::TANH, v); }},
      {"CONV2D+SWISH", [](Net& n, ValueId v) { return n.swish(v); }},
      {"CONV2D+SWISH", [](Net& n, ValueId v) { return n.mul(n.unary(Op::SIGMOID, v), v); }},  // MUL(sig, x)
      {"CONV2D+GELU", [](Net& n, ValueId v) { return n.gelu_erf(v); }},
      {"CONV2D+CLAMP", [](Net& n, ValueId v) { return n.clamp(v, -0.5, 0.75); }},
      {"CONV2D+CLAMP+TANH", [](Net& n, ValueId v) { return n.unary(Op::TANH, n.relu(v)); }},
      {"CONV2D+SWISH+CLAMP", [](Net& n, ValueId v) { return n.clamp(n.swish(v), 0.0, 6.0); }},
  };
  uint32_t seed = 420;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.pattern);
    Net net(seed++);
    ValueId x = net.input({1, 9, 7, 5});
    ValueId conv = net.conv2d(x, net.weight({6, 3, 3, 5}), net.weight({6}), {1, 1, 1, 1}, {2, 1}, {1, 1});
    Module m = net.finish({c.act(net, conv)});
    check_vs_reference(m, net.feeds, {c.pattern}, kTolAccumulate);
  }
}

TEST(OneDnnVsReference, Conv2dResidualThenSwish) {
  Net net(440);
  ValueId x = net.input({1, 5, 5, 4});
  ValueId r = net.input({1, 5, 5, 4});
  ValueId c = net.conv2d(x, net.weight({4, 1, 1, 4}), net.weight({1}), {0, 0, 0, 0}, {1, 1}, {1, 1});
  Module m = net.finish({net.swish(net.add(c, r))});
  check_vs_reference(m, net.feeds, {"CONV2D+ADD+SWISH"}, kTolAccumulate);
}

// ---- DEPTHWISE_CONV2D -------------------------------------------------------------------------

TEST(OneDnnVsReference, DepthwiseConv2dSweep) {
  int i = 0;
  for (int64_t mult : {1, 2})
    for (int64_t k : {3, 5})
      for (int64_t s : {1, 2})
        for (int64_t d : {1, 2}) {
          const int64_t c = i % 4 == 0 ? 8 : (i % 4 == 1 ? 5 : (i % 4 == 2 ? 17 : 64));
          const int64_t ih = 11 + i % 2, iw = 10 + i % 3;
          std::vector<int64_t> pad = i % 2 == 0 ? std::vector<int64_t>{k / 2 * d, k / 2 * d, k / 2 * d, k / 2 * d}
                                                : std::vector<int64_t>{0, 1, 2, 0};
          pad[1] = fit_conv_pad(ih, pad[0], pad[1], k, d, s);
          pad[3] = fit_conv_pad(iw, pad[2], pad[3], k, d, s);
          const bool bias1 = i % 4 == 3;
          SCOPED_TRACE("C" + std::to_string(c) + " M" + std::to_string(mult) + " k" + std::to_string(k) + " s" +
                       std::to_string(s) + " d" + std::to_string(d) + " pad" + vec_str(pad) + (bias1 ? " bias[1]" : ""));
          Net net(500 + static_cast<uint32_t>(i++));
          ValueId x = net.input({1 + i % 2, ih, iw, c});
          ValueId y = net.depthwise(x, net.weight({k, k, c, mult}), net.weight({bias1 ? 1 : c * mult}), pad, {s, s},
                                    {d, d});
          Module m = net.finish({y});
          check_vs_reference(m, net.feeds, {"DEPTHWISE_CONV2D"}, kTolAccumulate);
        }
}

TEST(OneDnnVsReference, DepthwiseConv2dFusions) {
  // MobileNet-style PAD + depthwise + ReLU6, and depthwise + residual + swish.
  {
    Net net(530);
    ValueId x = net.input({1, 12, 12, 16});
    ValueId p = net.pad_hw(x, {0, 1, 0, 1}, 0.0);
    ValueId y = net.clamp(net.depthwise(p, net.weight({3, 3, 16, 1}), net.weight({16}), {0, 0, 0, 0}, {2, 2}, {1, 1}),
                          0.0, 6.0);
    check_vs_reference(net.finish({y}), net.feeds, {"PAD+DEPTHWISE_CONV2D+CLAMP"}, kTolAccumulate);
  }
  {
    Net net(531);
    ValueId x = net.input({2, 6, 7, 3});
    ValueId r = net.input({2, 6, 7, 6});
    ValueId dw = net.depthwise(x, net.weight({3, 3, 3, 2}), net.weight({6}), {1, 1, 1, 1}, {1, 1}, {1, 1});
    check_vs_reference(net.finish({net.swish(net.add(dw, r))}), net.feeds, {"DEPTHWISE_CONV2D+ADD+SWISH"},
                       kTolAccumulate);
  }
}

// ---- TRANSPOSE_CONV2D -------------------------------------------------------------------------

TEST(OneDnnVsReference, TransposeConv2dSweep) {
  // out_pad 0 and negative values (which crop the output); positive out_pad is not offloaded.
  const std::vector<std::vector<int64_t>> out_pads = {{0, 0, 0, 0}, {-1, 0, -1, 0}, {0, -1, -2, -1}, {-2, -2, 0, -1}};
  int i = 0;
  for (int64_t s : {1, 2})
    for (int64_t k : {2, 3, 4})
      for (const auto& op : out_pads) {
        if (-op[0] >= k || -op[1] >= k || -op[2] >= k || -op[3] >= k) continue;  // ERROR_IF(out_pad <= -K)
        const int64_t ic = i % 2 ? 5 : 8, oc = i % 3 ? 3 : 16;
        const int64_t sw = i % 4 == 1 ? 1 : s;  // some different strides per axis
        const bool bias1 = i % 5 == 4;
        SCOPED_TRACE("k" + std::to_string(k) + " s" + std::to_string(s) + "," + std::to_string(sw) + " out_pad" +
                     vec_str(op) + " IC" + std::to_string(ic) + " OC" + std::to_string(oc) + (bias1 ? " bias[1]" : ""));
        Net net(600 + static_cast<uint32_t>(i++));
        ValueId x = net.input({1 + i % 2, 5, 6, ic});
        ValueId y = net.transpose_conv(x, net.weight({oc, k, k, ic}), net.weight({bias1 ? 1 : oc}), op, {s, sw});
        Module m = net.finish({y});
        check_vs_reference(m, net.feeds, {"TRANSPOSE_CONV2D"}, kTolAccumulate);
      }
  EXPECT_GE(i, 15);
}

TEST(OneDnnVsReference, SingleChannelDepthwiseMultiplierThreeAndTransposeConvStrideThree) {
  Net net(640);
  ValueId x = net.input({1, 7, 7, 1});
  Module m = net.finish({net.depthwise(x, net.weight({3, 3, 1, 3}), net.weight({3}), {1, 1, 1, 1}, {1, 1}, {1, 1}),
                         net.transpose_conv(x, net.weight({1, 3, 3, 1}), net.weight({1}), {0, 0, -1, 0}, {3, 3})});
  check_vs_reference(m, net.feeds, {"DEPTHWISE_CONV2D", "TRANSPOSE_CONV2D"}, kTolAccumulate);
}

TEST(OneDnnVsReference, TransposeConv2dNonSquareKernelAndActivation) {
  Net net(650);
  ValueId x = net.input({1, 4, 7, 6});
  ValueId t = net.transpose_conv(x, net.weight({5, 3, 2, 6}), net.weight({5}), {-1, -1, 0, 0}, {2, 3});
  Module m = net.finish({net.relu(t)});
  check_vs_reference(m, net.feeds, {"TRANSPOSE_CONV2D+CLAMP"}, kTolAccumulate);
}

// ---- Pooling ------------------------------------------------------------------------------------

TEST(OneDnnVsReference, PoolingSweep) {
  // MAX_POOL2D (exact: a max of stored values) and AVG_POOL2D (TOSA divides by the number of
  // valid elements, excluding padding) over kernels, strides and paddings (pad < kernel).
  int i = 0;
  for (Op op : {Op::MAX_POOL2D, Op::AVG_POOL2D})
    for (std::vector<int64_t> k : {std::vector<int64_t>{2, 2}, {3, 3}, {3, 2}, {1, 1}, {5, 5}})
      for (int64_t s : {1, 2})
        for (int padmode = 0; padmode < 3; ++padmode) {
          std::vector<int64_t> p = {0, 0, 0, 0};
          if (padmode == 1) p = {k[0] / 2, k[0] / 2, k[1] / 2, k[1] / 2};
          if (padmode == 2) p = {k[0] > 1 ? 1 : 0, 0, 0, k[1] > 1 ? 1 : 0};
          const int64_t ih = 9 + i % 3, iw = 8 + i % 4;
          p[1] = fit_pool_pad(ih, p[0], p[1], k[0], s);
          p[3] = fit_pool_pad(iw, p[2], p[3], k[1], s);
          if (p[0] >= k[0] || p[1] >= k[0] || p[2] >= k[1] || p[3] >= k[1]) continue;  // ERROR_IF(pad >= kernel)
          SCOPED_TRACE(std::string(op_name(op)) + " k" + vec_str(k) + " s" + std::to_string(s) + " pad" + vec_str(p) +
                       " in " + std::to_string(ih) + "x" + std::to_string(iw));
          Net net(700 + static_cast<uint32_t>(i++));
          ValueId x = net.input({1 + i % 2, ih, iw, i % 2 ? 3 : 16});
          ValueId y = op == Op::MAX_POOL2D ? net.max_pool(x, k, {s, s}, p) : net.avg_pool(x, k, {s, s}, p);
          Module m = net.finish({y});
          check_vs_reference(m, net.feeds, {op_name(op)}, op == Op::MAX_POOL2D ? kExact : kTolElementwise);
        }
  EXPECT_GE(i, 40);
}

// Whether two fp32 tensors hold the same bits, NaNs aside (both NaN, whatever their payload).
::testing::AssertionResult same_bits(const Tensor& got, const Tensor& want) {
  if (got.type() != want.type()) return ::testing::AssertionFailure() << "type " << got.type().str();
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const float gf = got.data<float>()[i], wf = want.data<float>()[i];
    if (std::isnan(gf) && std::isnan(wf)) continue;
    uint32_t g, w;
    std::memcpy(&g, &gf, 4);
    std::memcpy(&w, &wf, 4);
    if (g != w) return ::testing::AssertionFailure() << "element " << i << ": " << gf << " vs reference " << wf;
  }
  return ::testing::AssertionSuccess();
}

// An NHWC input for MAX_POOL2D with NaNs every 7th value, equal values of both zero signs, and a
// 3 x 3 block of NaN in the first and last channel (a window of NaN only).
Tensor pool_input_with_nans(Net& net, Shape s) {
  Tensor t = net.random(s, -1.0, 1.0);
  float* f = t.mutable_data<float>();
  const int64_t n = t.num_elements(), C = s[3], W = s[2];
  for (int64_t i = 3; i < n; i += 7) f[i] = std::numeric_limits<float>::quiet_NaN();
  for (int64_t i = 0; i + 1 < n; i += 11) {
    f[i] = (i / 11) % 2 ? -0.0f : 0.0f;  // pairs of zeros along the channels and the window
    f[i + 1] = (i / 11) % 2 ? 0.0f : -0.0f;
  }
  for (int64_t y = 1; y <= 3; ++y)
    for (int64_t x = 1; x <= 3; ++x)
      for (int64_t c : {int64_t{0}, C - 1}) f[(y * W + x) * C + c] = std::numeric_limits<float>::quiet_NaN();
  return t;
}

// MAX_POOL2D runs on Weft's vector loop (pool.h) and follows TOSA's apply_max_s: PROPAGATE makes a
// window with a NaN NaN, IGNORE skips NaNs (NaN only for a window of NaN), and of equal values the
// first in the window stays (-0 before +0). So it stays on oneDNN with nan_exact, and its results
// are the reference's bit for bit. Channel counts cover the four-vector, one-vector and scalar
// parts at every vector width (4, 8, 16 floats).
TEST(OneDnnVsReference, MaxPoolFollowsNanModeBitForBit) {
  uint32_t seed = 745;
  for (int64_t mode : {static_cast<int64_t>(NanMode::kPropagate), static_cast<int64_t>(NanMode::kIgnore)})
    for (int64_t C : {3, 8, 20, 72, 136})
      for (bool pad_node : {false, true}) {
        SCOPED_TRACE("nan_mode " + std::to_string(mode) + " C " + std::to_string(C) + (pad_node ? " PAD" : ""));
        Net net(seed++);
        ValueId x = net.input({2, 9, 11, C});
        ValueId src = pad_node ? net.pad_hw(x, {1, 0, 1, 0}, -std::numeric_limits<double>::infinity()) : x;
        const std::vector<int64_t> own = pad_node ? std::vector<int64_t>{0, 1, 0, 1} : std::vector<int64_t>{1, 1, 1, 1};
        ValueId y = net.b.op(Op::MAX_POOL2D, {src},
                             {{"kernel", std::vector<int64_t>{3, 3}}, {"stride", std::vector<int64_t>{2, 2}},
                              {"pad", own}, {"nan_mode", mode}});
        Module m = net.finish({y});
        net.feeds[0] = pool_input_with_nans(net, net.feeds[0].shape());
        const Tensor want = run_model(Model::from_module(m, kReference), net.feeds)[0];
        // IGNORE with a fused PAD (its -inf skipped, not compared) is exact only where no window is all NaN.
        const bool exact_fused = !(pad_node && mode == static_cast<int64_t>(NanMode::kIgnore));
        for (bool nan_exact : {false, true}) {
          auto model = Model::from_module(m, {.backends = {"onednn"}, .nan_exact = nan_exact});
          const std::string ex = model->explain();
          const std::string pattern = pad_node ? " onednn PAD+MAX_POOL2D:" : " onednn MAX_POOL2D:";
          if (nan_exact && !exact_fused) {
            EXPECT_EQ(ex.find(pattern), std::string::npos) << ex;
            continue;
          }
          EXPECT_NE(ex.find(pattern), std::string::npos) << ex;
          for (int threads : {1, 2}) {
            Context ctx(model, {.threads = threads});
            ctx.set_profiling(true);
            const Tensor got = ctx.run(net.feeds)[0];
            bool weft_loop = false;
            for (const KernelProfile& k : ctx.profile()) weft_loop |= k.implementation.rfind("weft_max_pool:", 0) == 0;
            EXPECT_TRUE(weft_loop);
            if (exact_fused) {
              EXPECT_TRUE(same_bits(got, want)) << "threads " << threads;
            }
          }
        }
        if (mode == static_cast<int64_t>(NanMode::kIgnore) && !pad_node) {
          EXPECT_TRUE(std::isnan(want.data<float>()[(1 * 6 + 1) * C])) << "the all-NaN window";  // (n 0, y 1, x 1)
        }
      }
}

// Each vector width this CPU runs (AVX-512, AVX2, SSE2) gives the same bits as the reference.
TEST(OneDnnVsReference, MaxPoolEveryVectorWidthGivesTheReferenceBits) {
  using backend::cpu::CpuLevel;
  std::vector<CpuLevel> isas = {CpuLevel::kBaseline};
  if (backend::cpu::cpu_level() != CpuLevel::kBaseline) isas.push_back(CpuLevel::kAvx2);
  if (backend::cpu::cpu_level() == CpuLevel::kAvx512) isas.push_back(CpuLevel::kAvx512);
  uint32_t seed = 747;
  for (int64_t mode : {static_cast<int64_t>(NanMode::kPropagate), static_cast<int64_t>(NanMode::kIgnore)})
    for (int64_t C : {5, 24, 100}) {
      SCOPED_TRACE("nan_mode " + std::to_string(mode) + " C " + std::to_string(C));
      Net net(seed++);
      ValueId x = net.input({1, 8, 12, C});
      ValueId y = net.b.op(Op::MAX_POOL2D, {x},
                           {{"kernel", std::vector<int64_t>{3, 2}}, {"stride", std::vector<int64_t>{1, 3}},
                            {"pad", std::vector<int64_t>{2, 0, 1, 1}}, {"nan_mode", mode}});
      Module m = net.finish({y});
      net.feeds[0] = pool_input_with_nans(net, net.feeds[0].shape());
      const Tensor want = run_model(Model::from_module(m, kReference), net.feeds)[0];
      const backend::cpu::MaxPoolShape s{1, 8, 12, C, want.shape()[1], want.shape()[2], 3, 2, 1, 3, 2, 1};
      for (CpuLevel isa : isas) {
        SCOPED_TRACE(backend::cpu::cpu_level_name(isa));
        Tensor got = Tensor::zeros(want.type());
        backend::cpu::max_pool_rows(s, mode == static_cast<int64_t>(NanMode::kPropagate), net.feeds[0].data<float>(), 0,
                                    s.N * s.OH, got.mutable_data<float>(), isa);
        EXPECT_TRUE(same_bits(got, want));
      }
    }
}

TEST(OneDnnVsReference, PoolingStrideLargerThanTheKernel) {
  Net net(740);
  ValueId x = net.input({1, 11, 11, 4});
  ValueId z = net.input({2, 10, 10, 4});
  Module m = net.finish({net.max_pool(x, {2, 2}, {3, 3}, {0, 0, 0, 0}), net.avg_pool(z, {2, 2}, {3, 3}, {1, 0, 1, 0})});
  check_vs_reference(m, net.feeds, {"MAX_POOL2D", "AVG_POOL2D"}, kTolElementwise);
}

TEST(OneDnnVsReference, GlobalAveragePool) {
  Net net(750);
  ValueId x = net.input({2, 7, 7, 32});
  Module m = net.finish({net.avg_pool(x, {7, 7}, {1, 1}, {0, 0, 0, 0})});
  check_vs_reference(m, net.feeds, {"AVG_POOL2D"}, kTolElementwise);
}

TEST(OneDnnVsReference, PadMaxPoolFusion) {
  // PAD with -inf (or the lowest float, as some exporters write it) in front of MAX_POOL2D.
  uint32_t seed = 760;
  for (double fill : {-std::numeric_limits<double>::infinity(), static_cast<double>(std::numeric_limits<float>::lowest())})
    for (const auto& pads : {std::vector<int64_t>{1, 1, 1, 1}, std::vector<int64_t>{0, 1, 1, 0}}) {
      SCOPED_TRACE("fill " + std::to_string(fill) + " PAD " + vec_str(pads));
      Net net(seed++);
      ValueId x = net.input({1, 8, 8, 5});
      ValueId p = net.pad_hw(x, pads, fill);
      const int64_t h = 8 + pads[0] + pads[1], w = 8 + pads[2] + pads[3];
      std::vector<int64_t> own = {0, fit_pool_pad(h, 0, 0, 3, 2), 0, fit_pool_pad(w, 0, 0, 3, 2)};
      Module m = net.finish({net.max_pool(p, {3, 3}, {2, 2}, own)});
      check_vs_reference(m, net.feeds, {"PAD+MAX_POOL2D"}, kExact);
    }
}

// Regression: PAD(-inf) + MAX_POOL2D was fused even when the PAD was as wide as the kernel, so
// that whole windows lay in the padding (TOSA: -inf there). Such a PAD now stays a node of its own.
// oneDNN's max pooling starts from -FLT_MAX, so a window of -inf values still gives -FLT_MAX on
// it; with nan_exact (exact NaN/infinity semantics) the pool stays on the reference backend too.
TEST(OneDnnVsReference, PadMaxPoolWindowsEntirelyInThePadding) {
  Net net(765);
  ValueId x = net.input({1, 6, 6, 3});
  ValueId p = net.pad_hw(x, {2, 0, 2, 0}, -std::numeric_limits<double>::infinity());
  Module m = net.finish({net.max_pool(p, {2, 2}, {2, 2}, {0, 0, 0, 0})});
  auto dnn = Model::from_module(m, kOneDnn);
  const std::string ex = dnn->explain();
  EXPECT_NE(ex.find(" reference PAD:"), std::string::npos) << ex;
  EXPECT_NE(ex.find(" onednn MAX_POOL2D:"), std::string::npos) << ex;
  auto exact = Model::from_module(m, {.backends = {"onednn"}, .nan_exact = true});
  auto ref = Model::from_module(m, kReference);
  Tensor want = run_model(ref, net.feeds)[0];
  EXPECT_TRUE(std::isinf(want.at_double(0)) && want.at_double(0) < 0);
  EXPECT_TRUE(close(run_model(exact, net.feeds)[0], want, kExact)) << exact->explain();
}

TEST(OneDnnVsReference, PadMaxPoolWithZeroFillIsNotFused) {
  // A zero PAD changes the max of negative windows: it must not become the pool's padding.
  Net net(770);
  ValueId x = net.input({1, 6, 6, 4}, -2.0, -1.0);  // all negative: the padded zeros win at the borders
  ValueId p = net.pad_hw(x, {1, 1, 1, 1}, 0.0);
  Module m = net.finish({net.max_pool(p, {2, 2}, {2, 2}, {0, 0, 0, 0})});
  auto dnn = check_vs_reference(m, net.feeds, {"MAX_POOL2D"}, kExact, /*all_on_onednn=*/false);
  EXPECT_NE(dnn->explain().find(" reference PAD:"), std::string::npos) << dnn->explain();
}

TEST(OneDnnVsReference, PadAvgPoolFusion) {
  // A zero PAD in front of AVG_POOL2D: its zeros count in the average (unlike the pool's own pad).
  Net net(780);
  ValueId x = net.input({2, 7, 7, 6});
  ValueId p = net.pad_hw(x, {1, 1, 1, 1}, 0.0);
  Module m = net.finish({net.avg_pool(p, {3, 3}, {2, 2}, {0, 0, 0, 0})});
  check_vs_reference(m, net.feeds, {"PAD+AVG_POOL2D"}, kTolElementwise);
}

// AVG_POOL2D runs on Weft's vector loop (pool.h): the reference's sums in the window's order and its
// division, so its results are the reference's bit for bit, at 1 and 2 threads and at every vector
// width this CPU runs. Cases: the pool's own asymmetric padding (taps that neither add nor count),
// a fused zero PAD, asymmetric too (zeros that count), strides 1 and 2, channel counts covering the
// four-vector, one-vector and scalar parts, and infinities and NaN among the inputs.
TEST(OneDnnVsReference, AvgPoolGivesTheReferenceBits) {
  using backend::cpu::CpuLevel;
  std::vector<CpuLevel> isas = {CpuLevel::kBaseline};
  if (backend::cpu::cpu_level() != CpuLevel::kBaseline) isas.push_back(CpuLevel::kAvx2);
  if (backend::cpu::cpu_level() == CpuLevel::kAvx512) isas.push_back(CpuLevel::kAvx512);
  uint32_t seed = 790;
  for (int64_t C : {3, 20, 72, 136})
    for (int64_t stride : {1, 2})
      for (bool pad_node : {false, true}) {
        SCOPED_TRACE("C " + std::to_string(C) + " stride " + std::to_string(stride) + (pad_node ? " PAD" : ""));
        Net net(seed++);
        const int64_t H = 9, W = 11;
        ValueId x = net.input({2, H, W, C});
        const std::vector<int64_t> extra = pad_node ? std::vector<int64_t>{2, 0, 0, 2} : std::vector<int64_t>{0, 0, 0, 0};
        ValueId src = pad_node ? net.pad_hw(x, extra, 0.0) : x;
        const int64_t vh = H + extra[0] + extra[1], vw = W + extra[2] + extra[3];
        std::vector<int64_t> own = pad_node ? std::vector<int64_t>{0, 0, 0, 0} : std::vector<int64_t>{2, 0, 1, 1};
        own[1] = fit_pool_pad(vh, own[0], own[1], 3, stride);
        own[3] = fit_pool_pad(vw, own[2], own[3], 3, stride);
        Module m = net.finish({net.avg_pool(src, {3, 3}, {stride, stride}, own)});
        float* f = net.feeds[0].mutable_data<float>();
        f[5] = std::numeric_limits<float>::infinity();
        f[net.feeds[0].num_elements() / 2] = -std::numeric_limits<float>::infinity();
        f[net.feeds[0].num_elements() - 4] = std::numeric_limits<float>::quiet_NaN();
        const Tensor want = run_model(Model::from_module(m, kReference), net.feeds)[0];
        auto model = Model::from_module(m, kOneDnn);
        const std::string ex = model->explain();
        EXPECT_NE(ex.find(pad_node ? " onednn PAD+AVG_POOL2D:" : " onednn AVG_POOL2D:"), std::string::npos) << ex;
        for (int threads : {1, 2}) {
          Context ctx(model, {.threads = threads});
          ctx.set_profiling(true);
          const Tensor got = ctx.run(net.feeds)[0];
          bool weft_loop = false;
          for (const KernelProfile& k : ctx.profile()) weft_loop |= k.implementation.rfind("weft_avg_pool:", 0) == 0;
          EXPECT_TRUE(weft_loop);
          EXPECT_TRUE(same_bits(got, want)) << "threads " << threads;
        }
        const backend::cpu::AvgPoolShape s{2, H, W, C, want.shape()[1], want.shape()[2], 3, 3, stride, stride,
                                           own[0] + extra[0], own[2] + extra[2], extra[0], extra[1], extra[2], extra[3]};
        for (CpuLevel isa : isas) {
          SCOPED_TRACE(backend::cpu::cpu_level_name(isa));
          Tensor got = Tensor::zeros(want.type());
          backend::cpu::avg_pool_rows(s, net.feeds[0].data<float>(), 0, s.N * s.OH, got.mutable_data<float>(), isa);
          EXPECT_TRUE(same_bits(got, want));
        }
      }
}

// A 3x3 convolution of x f32[1,9,9,8] (12 output channels; `bias_elems` 12 or 1) or a depthwise one
// (8 channels), padded to keep 9x9.
ValueId small_conv(Net& net, ValueId x, bool depthwise, int64_t bias_elems) {
  return depthwise ? net.depthwise(x, net.weight({3, 3, 8, 1}), net.weight({8}), {1, 1, 1, 1}, {1, 1}, {1, 1})
                   : net.conv2d(x, net.weight({12, 3, 3, 8}), net.weight({bias_elems}), {1, 1, 1, 1}, {1, 1}, {1, 1});
}

TEST(OneDnnVsReference, HardSwishAndPerChannelScaleShiftAfterConvolutionsFuse) {
  // HardSwish as the ONNX frontend lowers it: x * clamp(x * 1/6 + 0.5, 0, 1) (MobileNetV3).
  for (int depthwise = 0; depthwise < 2; ++depthwise) {
    SCOPED_TRACE(depthwise ? "DEPTHWISE_CONV2D" : "CONV2D");
    Net net(1400 + static_cast<uint32_t>(depthwise));
    ValueId c = small_conv(net, net.input({1, 9, 9, 8}, -3, 3), depthwise, 12);
    ValueId hs = net.mul(c, net.clamp(net.add(net.mul(c, net.scalar(1.0 / 6.0, 4)), net.scalar(0.5, 4)), 0, 1));
    check_vs_reference(net.finish({hs}), net.feeds, {depthwise ? "DEPTHWISE_CONV2D+HARDSWISH" : "CONV2D+HARDSWISH"},
                       kTolAccumulate);
  }
  // A batch norm left behind a convolution (x * s[c] + t[c]) and a clamp: binary post-ops broadcast
  // along the channel, after a convolution with a one-element bias and after a depthwise one.
  for (int depthwise = 0; depthwise < 2; ++depthwise) {
    SCOPED_TRACE(depthwise ? "DEPTHWISE_CONV2D, per-channel" : "CONV2D, per-channel");
    Net net(1410 + static_cast<uint32_t>(depthwise));
    ValueId c = small_conv(net, net.input({1, 9, 9, 8}, -3, 3), depthwise, 1);
    const int64_t oc = depthwise ? 8 : 12;
    ValueId y = net.clamp(net.add(net.mul(c, net.weight({1, 1, 1, oc}, 0.5, 2)), net.weight({1, 1, 1, oc})), -1, 1);
    check_vs_reference(net.finish({y}), net.feeds,
                       {depthwise ? "DEPTHWISE_CONV2D+SCALE+SHIFT+CLAMP" : "CONV2D+SCALE+SHIFT+CLAMP"}, kTolAccumulate);
  }
}

// ---- Grouped convolutions (SLICE per group -> CONV2D -> CONCAT) ----------------------------------

TEST(OneDnnVsReference, GroupedConvolutionRunsAsOne) {
  struct Case {
    Shape in;
    int64_t groups, ocg, k, stride;
    bool relu;
  };
  // ResNeXt's 32 groups of 4 and RegNet's groups of 8, strided, 1x1 and odd channel counts.
  const std::vector<Case> cases = {{{1, 14, 14, 128}, 32, 4, 3, 1, true},
                                   {{2, 9, 11, 48}, 6, 8, 3, 2, false},
                                   {{1, 7, 7, 12}, 3, 5, 1, 1, true},
                                   {{1, 8, 8, 6}, 2, 3, 5, 2, false}};
  uint32_t seed = 1200;
  for (const Case& c : cases) {
    SCOPED_TRACE(vec_str(c.in) + " groups " + std::to_string(c.groups));
    Net net(seed++);
    ValueId x = net.input(c.in);
    ValueId y = grouped_conv(net, x, c.groups, c.ocg, c.k, c.stride);
    if (c.relu) y = net.clamp(y, 0, std::numeric_limits<double>::infinity());
    Module m = net.finish({y});
    auto dnn = check_vs_reference(m, net.feeds, {c.relu ? "GROUPED_CONV2D+CLAMP" : "GROUPED_CONV2D"}, kTolAccumulate);
    int kernels = 0;
    for (const KernelPlacement& k : dnn->placement()) kernels += k.pattern.find("CONV2D") != std::string::npos;
    EXPECT_EQ(kernels, 1) << dnn->explain();
  }
}

TEST(OneDnnVsReference, GroupsOutOfOrderStayPerGroupConvolutions) {
  // Groups concatenated in another order than their slices are not a grouped convolution: each
  // group stays its own CONV2D (and the results still match).
  Net net(1300);
  ValueId x = net.input({1, 6, 6, 8});
  Module m = net.finish({grouped_conv(net, x, 4, 2, 3, 1, {1, 0, 2, 3})});
  auto dnn = check_vs_reference(m, net.feeds, {"CONV2D"}, kTolAccumulate, /*all_on_onednn=*/false);  // CONCAT: Weft's
  EXPECT_EQ(dnn->explain().find("GROUPED"), std::string::npos) << dnn->explain();
}


// ---- CONV3D -------------------------------------------------------------------------------------

// NDHWC convolutions (video models' r3d / r2plus1d shapes in small): strides, dilations and
// asymmetric pads per axis, with the residual ADD and ReLU fused behind.
TEST(OneDnnVsReference, Conv3dWithResidualAndRelu) {
  struct Spec {
    Shape x;  // [N, D, H, W, C]
    int64_t oc, kd, kh, kw;
    std::vector<int64_t> stride, dil, pad;  // pad [d0, d1, t, b, l, r]
  };
  const Spec specs[] = {
      {{1, 4, 9, 9, 3}, 8, 3, 3, 3, {1, 1, 1}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}},
      {{2, 6, 8, 10, 5}, 4, 1, 3, 3, {1, 2, 2}, {1, 1, 1}, {0, 0, 1, 0, 1, 0}},
      {{1, 7, 7, 7, 4}, 6, 3, 1, 1, {2, 1, 1}, {2, 1, 1}, {2, 2, 0, 0, 0, 0}},
  };
  uint32_t seed = 300;
  for (const Spec& sp : specs) {
    SCOPED_TRACE("x " + shape_str(sp.x) + " k" + std::to_string(sp.kd) + "x" + std::to_string(sp.kh) + "x" +
                 std::to_string(sp.kw) + " s" + vec_str(sp.stride) + " d" + vec_str(sp.dil) + " pad" + vec_str(sp.pad));
    Net net(seed++);
    ValueId x = net.input(sp.x);
    ValueId w = net.weight({sp.oc, sp.kd, sp.kh, sp.kw, sp.x[4]});
    ValueId y = net.b.op(Op::CONV3D, {x, w, net.weight({sp.oc}), net.zp(), net.zp()},
                         {{"pad", sp.pad}, {"stride", sp.stride}, {"dilation", sp.dil},
                          {"acc_type", static_cast<int64_t>(AccType::kFp32)}});
    ValueId r = net.input(net.type(y).shape);
    Module m = net.finish({net.relu(net.add(y, r))});
    check_vs_reference(m, net.feeds, {"CONV3D+ADD+CLAMP"}, kTolAccumulate);
  }
}

// The swish pass run after a convolution instead of oneDNN's post-op (cpu::swish_avx512, on CPUs
// with AVX-512) against x / (1 + e^-x) in double: over [-100, 100] in steps of 1/512, special values
// and every tail length of a 16-wide vector. Within 4e-7 relative (+1e-37 absolute); x = -inf and NaN
// give NaN, +inf stays +inf, and x below -88 gives a zero, as MUL(x, SIGMOID(x)).
TEST(OneDnnConv, SwishPassMatchesItsDefinition) {
  if (!backend::cpu::swish_avx512_supported()) GTEST_SKIP() << "this CPU has no AVX-512F";
  std::vector<float> x;
  for (double v = -100.0; v <= 100.0; v += 1.0 / 512) x.push_back(static_cast<float>(v));
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 87.0f, -87.0f, 88.5f, -88.5f, 89.0f, -89.0f, 1e30f, -1e30f})
    x.push_back(v);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (size_t tail = 0; tail < 16; ++tail) {
    std::vector<float> v = x;
    v.resize(v.size() - tail);
    v.insert(v.end(), {inf, -inf, nan});
    std::vector<float> y = v;
    backend::cpu::swish_avx512(y.data(), static_cast<int64_t>(y.size()));
    int bad = 0;
    for (size_t i = 0; i < v.size() && bad < 5; ++i) {
      const double xi = v[i];
      if (std::isnan(xi) || xi == -inf) {
        bad += !std::isnan(y[i]);
        EXPECT_TRUE(std::isnan(y[i])) << "x = " << xi << ": " << y[i];
        continue;
      }
      if (xi == inf) {
        bad += y[i] != inf;
        EXPECT_EQ(y[i], inf);
        continue;
      }
      const double want = xi / (1.0 + std::exp(-xi));
      const double err = std::abs(y[i] - want);
      const bool ok = err <= 4e-7 * std::abs(want) + 1e-37 || (xi < -88.0 && y[i] == 0.0f);
      bad += !ok;
      EXPECT_TRUE(ok) << "x = " << xi << ": " << y[i] << " vs " << want << " (error " << err << ")";
    }
  }
}

}  // namespace
// A SLICE cropping the end of H/W in front of a strided conv (what the ONNX frontend emits when
// TOSA's exact-division rule would otherwise fail, e.g. ResNet's stride-2 1x1 downsampling convs)
// folds into negative right padding; a SLICE starting elsewhere does not (it runs alone, as a copy).
TEST(OneDnnVsReference, EndCropSliceFoldsIntoTheConvolution) {
  struct Case {
    Shape in;
    std::vector<int64_t> start, size;
    int64_t k, s;
    std::string want;
  };
  const std::vector<Case> cases = {
      {{1, 56, 56, 16}, {0, 0, 0, 0}, {1, 55, 55, 16}, 1, 2, " onednn SLICE+CONV2D:"},
      {{2, 10, 10, 8}, {0, 0, 0, 0}, {2, 9, 9, 8}, 3, 2, " onednn SLICE+CONV2D:"},
      {{1, 9, 9, 8}, {0, 1, 0, 0}, {1, 7, 9, 8}, 3, 2, " onednn SLICE:"},  // alone: a strided copy
  };
  uint32_t seed = 900;
  for (const Case& c : cases) {
    SCOPED_TRACE(vec_str(c.size));
    Net net(seed++);
    ValueId x = net.input(c.in);
    ValueId st = net.b.constant_shape("start", c.start);
    ValueId sz = net.b.constant_shape("size", c.size);
    ValueId sl = net.b.op(Op::SLICE, {x, st, sz});
    ValueId y = net.conv2d(sl, net.weight({12, c.k, c.k, c.in[3]}), net.weight({12}), {0, 0, 0, 0}, {c.s, c.s}, {1, 1});
    Module m = net.finish({y});
    auto dnn = check_vs_reference(m, net.feeds, {}, kTolAccumulate, /*all_on_onednn=*/false);
    EXPECT_NE(dnn->explain().find(c.want), std::string::npos) << dnn->explain();
  }
}

}  // namespace weft::onednn_test

namespace weft::onednn_test {
namespace {

// The implementation names of one profiled run of `model` on `threads` threads.
std::vector<std::string> implementations(const std::shared_ptr<const Model>& model, const std::vector<Tensor>& feeds,
                                         int threads) {
  Context ctx(model, {.threads = threads});
  ctx.set_profiling(true);
  ctx.run(feeds);
  std::vector<std::string> names;
  for (const KernelProfile& k : ctx.profile()) names.push_back(k.implementation);
  return names;
}

// A convolution split over its output channels (large weights on the brgemm kernel; forced here
// with WEFT_ONEDNN_CONV_SPLIT): each part's block lands in its own channels, with the fused PAD,
// strides, dilations, a bias of one value and a CLAMP, on one and two threads. A convolution with a
// residual, or whose output channels do not split into blocks of 16, is not split. (Capped at AVX2,
// the 3 x 3 convolutions of stride 1 would run as Winograd's: WEFT_CPU_WINOGRAD=off keeps them
// on oneDNN.)
TEST(OneDnnVsReference, Conv2dSplitOverOutputChannels) {
  const test::ScopedEnv split("WEFT_ONEDNN_CONV_SPLIT", "4"), direct("WEFT_CPU_WINOGRAD", "off");
  struct Case {
    ConvSpec spec;
    bool pad_node, residual;
    bool split;
  };
  const std::vector<Case> cases = {
      {{2, 9, 11, 24, 64, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}}, false, false, true},
      {{1, 12, 10, 20, 128, 3, 3, 2, 2, 2, 2, {2, 2, 2, 2}}, false, false, true},
      {{1, 8, 8, 16, 64, 3, 3, 1, 1, 1, 1, {0, 0, 0, 0}, true}, true, false, true},
      {{1, 8, 8, 16, 64, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}}, false, true, false},
      {{1, 8, 8, 16, 40, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}}, false, false, false},
  };
  uint32_t seed = 900;
  for (const Case& c : cases) {
    const ConvSpec s = fitted(c.spec);
    SCOPED_TRACE(s.str() + (c.pad_node ? " PAD" : "") + (c.residual ? " residual" : ""));
    Net net(seed++);
    ValueId x = net.input({s.n, s.ih, s.iw, s.ic});
    ValueId in = c.pad_node ? net.pad_hw(x, {1, 1, 1, 1}, 0.0) : x;
    ValueId y = build_conv(net, in, s);
    std::string pattern = std::string(c.pad_node ? "PAD+" : "") + "CONV2D";
    if (c.residual) {
      y = net.add(y, net.input(net.type(y).shape, -2.0, 2.0));
      pattern += "+ADD";
    }
    y = net.clamp(y, -0.5, 1.5);
    Module m = net.finish({y});
    for (int threads : {1, 2}) {
      auto model = check_vs_reference(m, net.feeds, {pattern + "+CLAMP"}, kTolAccumulate, true, threads);
      const std::vector<std::string> names = implementations(model, net.feeds, threads);
      ASSERT_EQ(names.size(), 1u);
      EXPECT_EQ(names[0].size() > 3 && names[0].compare(names[0].size() - 3, 3, " x4") == 0, c.split) << names[0];
    }
  }
}

}  // namespace
}  // namespace weft::onednn_test
