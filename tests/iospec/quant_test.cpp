// Quantization detection: integer inputs dequantized by CAST -> [SUB zero point] -> MUL scale or read
// by a per-tensor RESCALE; integer outputs made by MUL (1 / scale) -> CAST -> [ADD zero point] ->
// saturation -> CAST, or by a per-tensor RESCALE. Graphs built as the ONNX frontend lowers
// QuantizeLinear / DequantizeLinear, and one through the frontend itself.
#define ONNX_NAMESPACE onnx
#define ONNX_ML 1
#include <gtest/gtest.h>

#include "frontends/onnx/onnx_builder.h"
#include "iospec/iospec_helpers.h"
#include "weft/iospec.h"

namespace weft::iospec {
namespace {

const Shape kShape{16};

ValueId cast(GraphBuilder& b, ValueId v, DType to, const std::string& name) {
  return b.op_multi(Op::CAST, {v}, {}, {name}, {TensorType{to, b.graph().value(v).type.shape}})[0];
}
ValueId f32c(GraphBuilder& b, const std::string& name, std::vector<double> v) {
  return b.constant(name, Tensor::from_doubles({DType::kFp32, {static_cast<int64_t>(v.size())}}, v));
}
ValueId intc(GraphBuilder& b, const std::string& name, DType t, std::vector<int64_t> v) {
  return b.constant(name, Tensor::from_ints({t, {static_cast<int64_t>(v.size())}}, v));
}
ValueId shift0(GraphBuilder& b) {
  static int n = 0;
  return intc(b, "shift" + std::to_string(n++), DType::kInt8, {0});
}

// q: i8 -> CAST f32 -> [SUB zp] -> MUL scale -> y (f32 output).
Module dequantize_module(std::vector<double> scale, std::optional<double> zp, bool scale_first = false) {
  GraphBuilder b;
  ValueId q = b.input("q", {DType::kInt8, kShape});
  ValueId v = cast(b, q, DType::kFp32, "qf");
  if (zp) v = b.op(Op::SUB, {v, f32c(b, "zp", {*zp})});
  ValueId s = f32c(b, "scale", scale);
  b.output(b.op(Op::MUL, scale_first ? std::vector<ValueId>{s, v, shift0(b)} : std::vector<ValueId>{v, s, shift0(b)},
                {}, "y"));
  return Module(b.finish());
}

TEST(IospecQuant, DequantizedInput) {
  IoSpec s = generate(dequantize_module({0.05}, 3.0));
  EXPECT_EQ(s.inputs[0].quantization, (Quantization{0.05, 3.0}));  // 0.05f reads back as 0.05
  EXPECT_EQ(s.outputs[0].quantization, Quantization{});            // a float output
  s = generate(dequantize_module({0.25}, std::nullopt, /*scale_first=*/true));
  EXPECT_EQ(s.inputs[0].quantization, (Quantization{0.25, 0.0}));
  const std::string yaml = to_yaml(generate(dequantize_module({0.05}, -3.0)));
  EXPECT_NE(yaml.find("    quantization:\n      scale: 0.05\n      zero_pt: -3.0\n"), std::string::npos) << yaml;
}

TEST(IospecQuant, PerChannelIsNotDetected) {
  std::vector<double> scales(16, 0.5);
  EXPECT_EQ(generate(dequantize_module(scales, 1.0)).inputs[0].quantization, Quantization{});
}

TEST(IospecQuant, FloatInputHasNone) {
  GraphBuilder b;
  ValueId x = b.input("x", {DType::kFp32, kShape});
  b.output(b.op(Op::MUL, {x, f32c(b, "s", {0.5}), shift0(b)}, {}, "y"));
  EXPECT_EQ(generate(Module(b.finish())).inputs[0].quantization, Quantization{});
}

TEST(IospecQuant, DisagreeingReadingsGiveNone) {
  GraphBuilder b;
  ValueId q = b.input("q", {DType::kInt8, kShape});
  ValueId v = cast(b, q, DType::kFp32, "qf");
  ValueId y1 = b.op(Op::MUL, {v, f32c(b, "s1", {0.5}), shift0(b)});
  ValueId y2 = b.op(Op::MUL, {v, f32c(b, "s2", {0.25}), shift0(b)});
  b.output(b.op(Op::ADD, {y1, y2}, {}, "y"));
  EXPECT_EQ(generate(Module(b.finish())).inputs[0].quantization, Quantization{});
}

// x (f32) -> MUL 1/scale -> CAST i32 -> ADD zp -> MAXIMUM -128 -> MINIMUM 127 -> CAST i8.
TEST(IospecQuant, QuantizedOutput) {
  const float scale = 0.007843138f;
  GraphBuilder b;
  ValueId x = b.input("x", {DType::kFp32, kShape});
  ValueId v = b.op(Op::MUL, {x, f32c(b, "inv_scale", {static_cast<double>(1.0f / scale)}), shift0(b)});
  v = cast(b, v, DType::kInt32, "qi");
  v = b.op(Op::ADD, {v, intc(b, "zp", DType::kInt32, {-5})});
  v = b.op(Op::MAXIMUM, {v, intc(b, "lo", DType::kInt32, {-128})});
  v = b.op(Op::MINIMUM, {intc(b, "hi", DType::kInt32, {127}), v});
  b.output(cast(b, v, DType::kInt8, "q"));
  const IoSpec s = generate(Module(b.finish()));
  EXPECT_EQ(s.outputs[0].quantization, (Quantization{0.007843138, -5.0}));
  EXPECT_EQ(s.inputs[0].quantization, Quantization{});
  EXPECT_NE(to_yaml(s).find("      scale: 0.007843138\n      zero_pt: -5.0\n"), std::string::npos) << to_yaml(s);
}

// x -> MUL 2 -> CAST i8 -> CLAMP -> output; no zero point.
TEST(IospecQuant, QuantizedOutputWithClamp) {
  GraphBuilder b;
  ValueId x = b.input("x", {DType::kFp32, kShape});
  ValueId v = cast(b, b.op(Op::MUL, {f32c(b, "inv", {2.0}), x, shift0(b)}), DType::kInt8, "qi");
  b.output(b.op(Op::CLAMP, {v},
                {{"min_val", Tensor::from_ints({DType::kInt8, {}}, std::vector<int64_t>{-127})},
                 {"max_val", Tensor::from_ints({DType::kInt8, {}}, std::vector<int64_t>{127})}},
                "q"));
  EXPECT_EQ(generate(Module(b.finish())).outputs[0].quantization, (Quantization{0.5, 0.0}));
}

TEST(IospecQuant, IntegerOutputWithoutChain) {
  GraphBuilder b;
  ValueId x = b.input("x", {DType::kInt32, kShape});
  b.output(b.op(Op::ADD, {x, intc(b, "one", DType::kInt32, {1})}, {}, "y"));
  const IoSpec s = generate(Module(b.finish()));
  EXPECT_EQ(s.inputs[0].quantization, Quantization{});
  EXPECT_EQ(s.outputs[0].quantization, Quantization{});
}

ValueId rescale(GraphBuilder& b, ValueId in, DType out, ValueId mult, ValueId shift, ValueId in_zp, ValueId out_zp,
                bool scale32, bool per_channel, const std::string& name) {
  return b.op_multi(Op::RESCALE, {in, mult, shift, in_zp, out_zp},
                    {{"scale32", scale32}, {"per_channel", per_channel}}, {name},
                    {TensorType{out, b.graph().value(in).type.shape}})[0];
}

// i8 input -> RESCALE (x 16384 >> 15 = 0.5, input_zp 2) -> i32 -> RESCALE (x 2^30 >> 31 = 0.5,
// output_zp -3) -> i8 output.
TEST(IospecQuant, Rescale) {
  GraphBuilder b;
  ValueId q = b.input("q", {DType::kInt8, kShape});
  ValueId wide = rescale(b, q, DType::kInt32, intc(b, "m1", DType::kInt16, {16384}), intc(b, "s1", DType::kInt8, {15}),
                         intc(b, "izp1", DType::kInt8, {2}), intc(b, "ozp1", DType::kInt32, {0}), false, false, "wide");
  b.output(rescale(b, wide, DType::kInt8, intc(b, "m2", DType::kInt32, {1073741824}),
                   intc(b, "s2", DType::kInt8, {31}), intc(b, "izp2", DType::kInt32, {0}),
                   intc(b, "ozp2", DType::kInt8, {-3}), true, false, "out"));
  const IoSpec s = generate(Module(b.finish()));
  EXPECT_EQ(s.inputs[0].quantization, (Quantization{0.5, 2.0}));
  EXPECT_EQ(s.outputs[0].quantization, (Quantization{2.0, -3.0}));
}

TEST(IospecQuant, PerChannelRescaleIsNotDetected) {
  GraphBuilder b;
  ValueId q = b.input("q", {DType::kInt8, kShape});
  std::vector<int64_t> mults(16, 16384), shifts(16, 15);
  ValueId wide = rescale(b, q, DType::kInt32, intc(b, "m1", DType::kInt16, mults), intc(b, "s1", DType::kInt8, shifts),
                         intc(b, "izp1", DType::kInt8, {2}), intc(b, "ozp1", DType::kInt32, {0}), false, true, "wide");
  b.output(cast(b, wide, DType::kFp32, "y"));
  EXPECT_EQ(generate(Module(b.finish())).inputs[0].quantization, Quantization{});
}

// The ONNX frontend's own lowering: DequantizeLinear -> Relu -> QuantizeLinear.
TEST(IospecQuant, ThroughTheOnnxFrontend) {
  using namespace weft::test::onnxb;
  ModelBuilder mb(13);
  mb.input("x", kInt8, {1, 16}).output("q", kInt8);
  mb.init_f("x_scale", {}, {0.25f}).init_i8("x_zp", {}, {-3});
  mb.init_f("q_scale", {}, {0.02f}).init_i8("q_zp", {}, {-4});
  mb.node("DequantizeLinear", {"x", "x_scale", "x_zp"}, {"xf"});
  mb.node("Relu", {"xf"}, {"r"});
  mb.node("QuantizeLinear", {"r", "q_scale", "q_zp"}, {"q"});
  const IoSpec s = generate(mb.import());
  ASSERT_EQ(s.inputs.size(), 1u);
  EXPECT_EQ(s.inputs[0].precision, 8);
  EXPECT_EQ(s.inputs[0].quantization, (Quantization{0.25, -3.0}));
  EXPECT_EQ(s.outputs[0].quantization, (Quantization{0.02, -4.0}));
  EXPECT_EQ(s.simple_sequences[0], (Sequence{"main_seq", {"q"}, {"x"}}));

  // Per-axis parameters: none.
  ModelBuilder pa(13);
  pa.input("x", kInt8, {2, 3}).output("y");
  pa.init_f("s", {3}, {0.5f, 2.f, 0.125f}).init_i8("zp", {3}, {1, 0, -128});
  attr_i(pa.node("DequantizeLinear", {"x", "s", "zp"}, {"y"}), "axis", 1);
  EXPECT_EQ(generate(pa.import()).inputs[0].quantization, Quantization{});
}

}  // namespace
}  // namespace weft::iospec
