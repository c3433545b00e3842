// fp32 -> fp16 narrowing (compiler/narrow.h), the modes of Arm's model converter's --type-narrowing.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/narrow.h"
#include "weft/interpreter.h"
#include "weft/npy.h"
#include "weft/runtime.h"
#include "weft/verify.h"

namespace weft {
namespace {

using compiler::Narrowing;

const std::string kExample = std::string(WEFT_SOURCE_DIR) + "/examples/tiny_cnn/";

Tensor cast(const Tensor& t, DType to) {
  Tensor out = Tensor::zeros(TensorType{to, t.shape()});
  for (int64_t i = 0; i < t.num_elements(); ++i)
    store_from_double(to, out.mutable_bytes() + i * storage_size(to),
                      load_as_double(t.dtype(), t.buffer().data() + i * storage_size(t.dtype())));
  return out;
}

double max_diff(const Tensor& a, const Tensor& b) {
  double d = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i)
    d = std::max(d, std::fabs(load_as_double(a.dtype(), a.buffer().data() + i * storage_size(a.dtype())) -
                              load_as_double(b.dtype(), b.buffer().data() + i * storage_size(b.dtype()))));
  return d;
}

TEST(Narrow, TheFourModesOnTheBundledExample) {
  const Module original = read_model(kExample + "tiny_cnn.weft");
  const Tensor image = read_npy(kExample + "image.npy");
  Interpreter reference(original);
  const Tensor expected = reference.run({image})[0];
  for (Narrowing mode : {Narrowing::kFull, Narrowing::kPartial, Narrowing::kFullPreserveIo}) {
    SCOPED_TRACE(compiler::narrowing_name(mode));
    Module m = original;
    const compiler::NarrowStats st = compiler::narrow_fp32_to_fp16(m, mode);
    EXPECT_GT(st.values, 10u);
    EXPECT_GT(st.constant_elements, 700u);
    const Graph& g = m.main();
    const Node* conv = nullptr;
    for (const Node& n : g.nodes()) {
      if (n.op == Op::CONV2D) conv = &n;
      for (ValueId v : n.outputs)
        if (g.value(v).type.dtype == DType::kFp32) {
          EXPECT_EQ(n.op, Op::CAST) << g.value(v).name;
        }
    }
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(conv->attr_int("acc_type"),
              static_cast<int64_t>(mode == Narrowing::kPartial ? AccType::kFp32 : AccType::kFp16));
    const bool io = mode == Narrowing::kFullPreserveIo;
    EXPECT_EQ(g.value(g.inputs()[0]).type.dtype, io ? DType::kFp32 : DType::kFp16);
    EXPECT_EQ(g.value(g.outputs()[0]).type.dtype, io ? DType::kFp32 : DType::kFp16);
    EXPECT_EQ(g.value(g.outputs()[0]).name, "logits");
    EXPECT_EQ(st.casts, io ? 2u : 0u);
    Interpreter interp(m);
    const Tensor got = interp.run({io ? image : cast(image, DType::kFp16)})[0];
    EXPECT_LT(max_diff(got, expected), 0.02);  // fp16 keeps about 3 decimal digits
  }
}

// The runtime's reduced-precision mode (BackendOptions::precision = kFp16): fp16 inside with the
// convolutions' fp32 accumulators kept and fp32 at the boundary, the two choices the converter's
// modes hold apart; the model's interface is unchanged and explain() says what was narrowed.
TEST(Narrow, RuntimePrecisionModeKeepsAccumulatorsAndTheBoundary) {
  const Module original = read_model(kExample + "tiny_cnn.weft");
  const Tensor image = read_npy(kExample + "image.npy");
  Interpreter reference(original);
  const Tensor expected = reference.run({image})[0];

  Module m = original;
  const compiler::NarrowStats st = compiler::narrow_fp32_to_fp16(m, /*fp32_accumulators=*/true, /*preserve_io=*/true);
  EXPECT_GT(st.accumulators_kept, 0u);
  EXPECT_EQ(st.casts, 2u);
  for (const Node& n : m.main().nodes())
    if (n.op == Op::CONV2D) {
      EXPECT_EQ(n.attr_int("acc_type"), static_cast<int64_t>(AccType::kFp32));
    }

  LoadOptions opts;
  opts.backend.backends = {"reference"};
  opts.backend.precision = Precision::kFp16;
  auto model = Model::load(kExample + "tiny_cnn.weft", opts);
  EXPECT_EQ(model->inputs()[0].type.dtype, DType::kFp32);
  EXPECT_EQ(model->outputs()[0].type.dtype, DType::kFp32);
  EXPECT_EQ(model->outputs()[0].name, "logits");
  EXPECT_NE(model->explain().find("precision fp16: "), std::string::npos) << model->explain();
  Context ctx(model);
  const Tensor got = ctx.run({image})[0];
  EXPECT_EQ(got.dtype(), DType::kFp32);
  const double diff = max_diff(got, expected);
  EXPECT_GT(diff, 0.0);   // it did run in fp16
  EXPECT_LT(diff, 0.02);  // fp16 keeps about 3 decimal digits

  auto exact = Model::load(kExample + "tiny_cnn.weft", LoadOptions{.backend = {.backends = {"reference"}}});
  EXPECT_EQ(exact->explain().find("precision fp16"), std::string::npos);
}

TEST(Narrow, CastsThatBecomeNoOpsConstantsThatSaturateAndCustomOperators) {
  GraphBuilder b;
  ValueId x = b.input("x", TensorType{DType::kFp16, {3}});
  ValueId wide = b.op_multi(Op::CAST, {x}, {}, {"wide"}, {TensorType{DType::kFp32, {3}}})[0];  // fp16 -> fp32
  Tensor big = Tensor::from_doubles(TensorType{DType::kFp32, {3}}, std::vector<double>{1e6, -1e6, 0.5});
  b.output(b.op(Op::ADD, {wide, b.constant("k", big)}, {}, "y"));
  Module m(b.finish());
  const compiler::NarrowStats st = compiler::narrow_fp32_to_fp16(m, Narrowing::kFull);
  EXPECT_EQ(m.main().node(0).op, Op::IDENTITY);
  EXPECT_EQ(st.saturated, 2u);
  const Tensor& k = m.main().node(1).attr_tensor("values");
  EXPECT_EQ(load_as_double(DType::kFp16, k.buffer().data()), 65504.0);

  // A custom operator's fp32 operands are its shader's contract: refused, and the module unchanged.
  GraphBuilder c;
  ValueId in = c.input("in", TensorType{DType::kFp32, {4}});
  std::vector<ValueId> outs = c.op_multi(Op::CUSTOM, {in},
                                         {{"operator_name", std::string("op")}, {"domain_name", std::string("d")},
                                          {"implementation_attrs", std::string("")}},
                                         {"out"}, {TensorType{DType::kFp32, {4}}});
  c.output(outs[0]);
  Module with_custom(c.finish());
  const Module before = with_custom;
  try {
    compiler::narrow_fp32_to_fp16(with_custom, Narrowing::kFull);
    FAIL() << "a custom operator's fp32 operand was narrowed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("custom operator"), std::string::npos) << e.what();
  }
  EXPECT_EQ(with_custom.main().value(0).type.dtype, DType::kFp32);
  EXPECT_TRUE(compiler::parse_narrowing("full_preserve_io").has_value());
  EXPECT_FALSE(compiler::parse_narrowing("half").has_value());
}

// F.normalize as the ONNX import writes it, x * 1 / max(sqrt(sum(x * x)), eps) with eps = 1e-12:
// fp16 has no 1e-12, and a bound of 0 (or a subnormal) makes a zero row 0 * inf = NaN where fp32
// gives 0 (Swin V2's padded window tokens). The bound becomes 2^-14; bounds of 0 and bounds in
// fp16's normal range stay as they are.
TEST(Narrow, ClampGuardsBelowTheFp16RangeStayGuards) {
  GraphBuilder b;
  ValueId x = b.input("x", {DType::kFp32, {3, 4}});
  ValueId sh = b.constant("sh", Tensor::from_doubles({DType::kInt8, {1}}, std::vector<double>{0}));
  auto clamp = [&](ValueId v, double lo, const std::string& name) {
    return b.op(Op::CLAMP, {v},
                {{"min_val", Tensor::from_doubles({DType::kFp32, {}}, std::vector<double>{lo})},
                 {"max_val", Tensor::from_doubles({DType::kFp32, {}}, std::vector<double>{INFINITY})},
                 {"nan_mode", static_cast<int64_t>(NanMode::kPropagate)}},
                name);
  };
  ValueId sq = b.op(Op::MUL, {x, x, sh}, {}, "sq");
  ValueId sum = b.op(Op::REDUCE_SUM, {sq}, {{"axis", int64_t{1}}}, "sum");
  ValueId half = b.constant("half", Tensor::from_doubles({DType::kFp32, {1, 1}}, std::vector<double>{0.5}));
  ValueId norm = b.op(Op::POW, {sum, half}, {}, "norm");
  ValueId guarded = clamp(norm, 1e-12, "guarded");
  ValueId inv = b.op(Op::RECIPROCAL, {guarded}, {}, "inv");
  b.output(b.op(Op::MUL, {x, inv, sh}, {}, "y"));
  b.output(clamp(x, 0.0, "relu"));
  b.output(clamp(x, 1e-3, "floor"));
  Module m(b.finish());
  const compiler::NarrowStats st = compiler::narrow_fp32_to_fp16(m, /*fp32_accumulators=*/true, /*preserve_io=*/true);
  EXPECT_EQ(st.bounds_raised, 1u);
  EXPECT_NE(compiler::narrow_summary(st).find("1 CLAMP bounds below fp16's normal range raised"), std::string::npos)
      << compiler::narrow_summary(st);
  std::vector<double> bounds;
  for (const Node& n : m.main().nodes())
    if (n.op == Op::CLAMP) bounds.push_back(load_as_double(DType::kFp16, n.attr_tensor("min_val").buffer().data()));
  ASSERT_EQ(bounds.size(), 3u);
  EXPECT_EQ(bounds[0], std::ldexp(1.0, -14));
  EXPECT_EQ(bounds[1], 0.0);
  EXPECT_EQ(bounds[2], load_as_double(DType::kFp16, Tensor::from_doubles({DType::kFp16, {}}, std::vector<double>{1e-3})
                                                         .buffer()
                                                         .data()));
  // Rows: all zero (its norm is 0), ordinary, and tiny (squares of 1e-3 are fp16 subnormals).
  const Tensor in = Tensor::from_doubles({DType::kFp32, {3, 4}},
                                         std::vector<double>{0, 0, 0, 0, 3, -4, 0, 0, 1e-3, 1e-3, -1e-3, 1e-3});
  Interpreter interp(m);
  const Tensor y = interp.run({in})[0];
  const std::vector<double> want{0, 0, 0, 0, 0.6, -0.8, 0, 0, 0.5, 0.5, -0.5, 0.5};
  for (int64_t i = 0; i < 12; ++i) {
    const double v = load_as_double(DType::kFp32, y.buffer().data() + 4 * i);
    EXPECT_TRUE(std::isfinite(v)) << "element " << i;
    EXPECT_NEAR(v, want[static_cast<size_t>(i)], 0.02) << "element " << i;
  }
}

// A layer norm as the ONNX import writes it, d * RSQRT(mean(d * d) + eps) with HF BERT's eps =
// 1e-12: fp16 rounds it to 0, and a row of equal values (variance 0) gave 0 * inf = NaN. The
// epsilon becomes 2^-24; a tiny constant that no RSQRT reads, and an eps fp16 holds, stay.
TEST(Narrow, NormEpsilonsBelowTheFp16RangeStayNonzero) {
  GraphBuilder b;
  ValueId x = b.input("x", {DType::kFp32, {2, 8}});
  ValueId sh = b.constant("sh", Tensor::from_doubles({DType::kInt8, {1}}, std::vector<double>{0}));
  auto k = [&](const std::string& name, double v) {
    return b.constant(name, Tensor::from_doubles({DType::kFp32, {1, 1}}, std::vector<double>{v}));
  };
  auto mean = [&](ValueId v, const std::string& s) {
    return b.op(Op::MUL, {b.op(Op::REDUCE_SUM, {v}, {{"axis", int64_t{1}}}, "sum" + s), k("inv_n" + s, 0.125), sh}, {}, "mean" + s);
  };
  ValueId d = b.op(Op::SUB, {x, mean(x, "1")}, {}, "d");
  ValueId var = mean(b.op(Op::MUL, {d, d, sh}, {}, "dd"), "2");
  b.output(b.op(Op::MUL, {d, b.op(Op::RSQRT, {b.op(Op::ADD, {var, k("eps", 1e-12)}, {}, "var_eps")}, {}, "r"), sh}, {}, "y"));
  b.output(b.op(Op::ADD, {x, k("tiny", 1e-12)}, {}, "plus_tiny"));  // no RSQRT reads it: rounds to 0
  b.output(b.op(Op::RSQRT, {b.op(Op::ADD, {var, k("eps5", 1e-5)}, {}, "var_eps5")}, {}, "r5"));  // fp16 holds 1e-5
  Module m(b.finish());
  const compiler::NarrowStats st = compiler::narrow_fp32_to_fp16(m, /*fp32_accumulators=*/true, /*preserve_io=*/true);
  EXPECT_EQ(st.epsilons_raised, 1u);
  EXPECT_NE(compiler::narrow_summary(st).find("1 epsilons before an RSQRT below fp16's range raised"), std::string::npos)
      << compiler::narrow_summary(st);
  for (const Node& n : m.main().nodes()) {
    if (n.op != Op::CONST || n.outputs.empty()) continue;
    const std::string& name = m.main().value(n.outputs[0]).name;
    const double v = load_as_double(DType::kFp16, n.attr_tensor("values").buffer().data());
    if (name == "eps") {
      EXPECT_EQ(v, std::ldexp(1.0, -24));
    } else if (name == "tiny") {
      EXPECT_EQ(v, 0.0);
    } else if (name == "eps5") {
      EXPECT_NEAR(v, 1e-5, 6e-8);  // (an fp16 subnormal: steps of 2^-24)
    }
  }
  // Row 0 all 3 (variance 0), row 1 spread.
  const Tensor in = Tensor::from_doubles({DType::kFp32, {2, 8}},
                                         std::vector<double>{3, 3, 3, 3, 3, 3, 3, 3, -2, -1, 0, 1, 2, 3, 4, 5});
  Interpreter interp(m);
  const Tensor y = interp.run({in})[0];
  for (int64_t i = 0; i < 16; ++i) {
    const double v = load_as_double(DType::kFp32, y.buffer().data() + 4 * i);
    EXPECT_TRUE(std::isfinite(v)) << "element " << i;
    const double want = i < 8 ? 0.0 : (static_cast<double>(i - 8) - 3.5) / std::sqrt(5.25);
    EXPECT_NEAR(v, want, 0.01) << "element " << i;
  }
}

}  // namespace
}  // namespace weft
