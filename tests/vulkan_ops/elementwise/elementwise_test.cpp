// The element-wise operators on the Vulkan backend against the reference backend: every operator of
// the element-wise, activation and comparison chapters and CAST, for every type row of the operator
// table that the shaders store (bool, int8/16/32, fp16, fp32), over shapes with and without
// broadcasting. Integers and bool must match bit for bit; floats within a tolerance per operator:
//   1e-6 (x max(1,|ref|)) single-rounding fp32 arithmetic (ADD/SUB/MUL, RECIPROCAL: GLSL's 1/x is
//        within 2.5 ulp), comparisons exact;
//   1e-5 transcendental functions (Vulkan's exp/log/pow/inversesqrt are within a few ulp);
//   2e-3 sin/cos (Vulkan only bounds their absolute error, 2^-11) and every fp16 result (one fp16
//        ulp is ~1e-3 relative, and the GPU's fp32 intermediate may round the other way).
#include <limits>
#include <random>

#include "vk_ops_util.h"

namespace weft::vk_test {
namespace {

struct Range {
  double lo, hi;
};

// Input values each operator accepts without violating a REQUIRE (whose result TOSA leaves
// unpredictable, so the backends need not agree).
Range input_range(Op op, DType t, size_t operand) {
  const bool fl = is_float(t);
  switch (op) {
    case Op::LOG:
    case Op::RSQRT: return {0.05, 8};
    case Op::RECIPROCAL: return {0.1, 4};
    case Op::POW: return operand == 0 ? Range{0.1, 3} : Range{-2, 2};
    case Op::EXP: return {-8, 8};
    case Op::SIGMOID:
    case Op::TANH:
    case Op::ERF: return {-6, 6};
    case Op::SIN:
    case Op::COS: return {-3.1, 3.1};
    case Op::INTDIV: return operand == 0 ? Range{-100000, 100000} : Range{1, 300};
    case Op::ARITHMETIC_RIGHT_SHIFT:
    case Op::LOGICAL_LEFT_SHIFT:
    case Op::LOGICAL_RIGHT_SHIFT:
      return operand == 0 ? Range{-1e18, 1e18} : Range{0, static_cast<double>(bit_width(t) - 1)};
    case Op::ADD:
    case Op::SUB:
    case Op::ABS:
    case Op::NEGATE:
      return fl ? Range{-10, 10} : Range{-1e9, 1e9};  // no int32 overflow
    case Op::MUL: return fl ? Range{-10, 10} : (t == DType::kInt32 ? Range{-40000, 40000} : Range{-1e18, 1e18});
    case Op::CAST: return fl ? Range{-300, 300} : Range{-1e18, 1e18};
    default: return fl ? Range{-10, 10} : Range{-1e18, 1e18};
  }
}

double tolerance(Op op, DType out) {
  if (out == DType::kFp16) return 2e-3;
  switch (op) {
    case Op::SIN:
    case Op::COS: return 2e-3;
    case Op::EXP:
    case Op::LOG:
    case Op::POW:
    case Op::RSQRT:
    case Op::SIGMOID:
    case Op::TANH:
    case Op::ERF: return 1e-5;
    default: return 1e-6;
  }
}

bool stored(DType t) {
  return t == DType::kBool || t == DType::kInt8 || t == DType::kInt16 || t == DType::kInt32 || t == DType::kFp16 ||
         t == DType::kFp32;
}

DType arg_type(const OpDef& def, const TypeSupport& row, const ArgDef& a) {
  const int var = def.type_var_index(a.elem);
  if (var >= 0) return row.types[var];
  return *parse_dtype(a.elem);
}

// Output shape and per-operand shapes: same shape, and broadcasts of the second / third operand.
struct ShapeCase {
  Shape out;
  std::vector<Shape> operands;  // one per tensor operand (extra entries ignored)
};
const std::vector<ShapeCase> kShapes = {
    {{7}, {{7}, {7}, {7}}},
    {{2, 3, 5}, {{2, 3, 5}, {2, 3, 5}, {2, 3, 5}}},
    {{3, 4, 5}, {{3, 4, 5}, {1, 4, 1}, {3, 1, 5}}},
    {{2, 1, 3, 2, 2, 3}, {{1, 1, 3, 1, 2, 1}, {2, 1, 3, 2, 2, 3}, {1, 1, 1, 1, 1, 1}}},
    {{1, 67, 33}, {{1, 67, 33}, {1, 1, 33}, {1, 67, 1}}},
};

struct Built {
  Module module;
  std::vector<Tensor> feeds;
};

Built build(Op op, const TypeSupport& row, const ShapeCase& sc, std::mt19937& rng) {
  const OpDef& def = op_def(op);
  GraphBuilder b;
  Built r;
  std::vector<ValueId> ins;
  size_t tensor_index = 0;
  for (size_t k = 0; k < def.inputs.size(); ++k) {
    const ArgDef& a = def.inputs[k];
    const DType t = arg_type(def, row, a);
    if (std::string_view(a.shape) == "[1]") {
      // Parameters: MUL's shift (0 except a rounded int32 case), NEGATE's zero points.
      int64_t v = 0;
      if (op == Op::NEGATE && t == DType::kInt8) v = k == 1 ? 5 : -3;
      if (op == Op::MUL && t == DType::kInt32 && sc.out.size() == 3) v = 7;
      ins.push_back(b.constant("p" + std::to_string(k), Tensor::from_ints({t, {1}}, std::vector<int64_t>{v})));
      continue;
    }
    Shape s = sc.operands[std::min(tensor_index, sc.operands.size() - 1)];
    if (def.inputs.size() == 1 || op == Op::NEGATE || op == Op::CLAMP || op == Op::CAST) s = sc.out;
    const Range rg = input_range(op, t, tensor_index);
    TensorType tt{t, s};
    ins.push_back(b.input("in" + std::to_string(tensor_index), tt));
    r.feeds.push_back(random_tensor(tt, rng, rg.lo, rg.hi));
    ++tensor_index;
  }
  Attrs attrs;
  const DType t0 = arg_type(def, row, def.inputs[0]);
  if (op == Op::CLAMP) {
    const bool fl = is_float(t0);
    attrs.push_back({"min_val", fl ? Tensor::from_doubles({t0, {}}, std::vector<double>{-2.5})
                                   : Tensor::from_ints({t0, {}}, std::vector<int64_t>{-20})});
    attrs.push_back({"max_val", fl ? Tensor::from_doubles({t0, {}}, std::vector<double>{4.0})
                                   : Tensor::from_ints({t0, {}}, std::vector<int64_t>{70})});
  }
  if (op == Op::ARITHMETIC_RIGHT_SHIFT) attrs.push_back({"round", sc.out.size() % 2 == 1});
  if (op == Op::CAST) {
    const DType to = row.types[1];
    b.output(b.op_multi(op, ins, attrs, {"y"}, {TensorType{to, sc.out}})[0]);
  } else {
    b.output(b.op(op, ins, attrs, "y"));
  }
  r.module = Module(b.finish());
  return r;
}

bool elementwise_family(Op op) {
  const std::string_view g = op_def(op).group;
  if (op == Op::TABLE) return false;  // a lookup (misc family)
  return g == "activation" || g == "elementwise-binary" || g == "elementwise-unary" ||
         g == "elementwise-ternary" || g == "comparison" || op == Op::CAST;
}

TEST(VulkanElementwise, EveryOperatorTypeRowAndShapeMatchesReference) {
  std::mt19937 rng(1234);
  int cases = 0;
  for (const OpDef& def : all_op_defs()) {
    if (!elementwise_family(def.op)) continue;
    for (const TypeSupport& row : def.types) {
      bool ok = true;
      for (size_t v = 0; v < def.type_vars.size(); ++v) ok &= stored(row.types[v]);
      if (!ok) continue;
      for (const ShapeCase& sc : kShapes) {
        SCOPED_TRACE(std::string(def.name) + " " + row.mode + " " + shape_str(sc.out));
        Built m = build(def.op, row, sc, rng);
        const DType out = m.module.main().value(m.module.main().outputs()[0]).type.dtype;
        check_vs_reference(m.module, m.feeds, tolerance(def.op, out), 1);
        ++cases;
      }
    }
  }
  EXPECT_GT(cases, 300);
}

TEST(VulkanElementwise, NanModesAndSpecialValues) {
  // NaN through MAXIMUM / MINIMUM / CLAMP per nan_mode, infinities through comparisons and CAST.
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const std::vector<double> xs = {nan, 1.0, -inf, inf, -0.0, 3.5, nan, -2.0};
  const std::vector<double> ys = {1.0, nan, 2.0, -1.0, 0.0, 3.5, nan, -7.0};
  for (int64_t mode : {int64_t(NanMode::kPropagate), int64_t(NanMode::kIgnore)})
    for (Op op : {Op::MAXIMUM, Op::MINIMUM, Op::CLAMP, Op::EQUAL, Op::GREATER, Op::GREATER_EQUAL}) {
      SCOPED_TRACE(std::string(op_name(op)) + " nan_mode " + std::to_string(mode));
      GraphBuilder b;
      const TensorType t{DType::kFp32, {8}};
      ValueId x = b.input("x", t);
      ValueId y = op == Op::CLAMP ? kNoValue : b.input("y", t);
      Attrs attrs;
      if (op == Op::CLAMP) {
        attrs = {{"min_val", Tensor::from_doubles({DType::kFp32, {}}, std::vector<double>{-1})},
                 {"max_val", Tensor::from_doubles({DType::kFp32, {}}, std::vector<double>{2})},
                 {"nan_mode", mode}};
        b.output(b.op(op, {x}, attrs, "z"));
      } else {
        if (op == Op::MAXIMUM || op == Op::MINIMUM) attrs = {{"nan_mode", mode}};
        b.output(b.op(op, {x, y}, attrs, "z"));
      }
      Module m(b.finish());
      std::vector<Tensor> feeds = {Tensor::from_doubles(t, xs)};
      if (op != Op::CLAMP) feeds.push_back(Tensor::from_doubles(t, ys));
      check_vs_reference(m, feeds, 0.0, 1);
    }
  // fp32 -> int8/int32 CAST saturates, rounds half to even and maps NaN to 0.
  for (DType to : {DType::kInt8, DType::kInt16, DType::kInt32}) {
    GraphBuilder b;
    const TensorType t{DType::kFp32, {9}};
    ValueId x = b.input("x", t);
    b.output(b.op_multi(Op::CAST, {x}, {}, {"y"}, {TensorType{to, {9}}})[0]);
    Module m(b.finish());
    const std::vector<double> v = {nan, 2.5, 3.5, -2.5, 1e10, -1e10, 127.5, -128.5, 0.49999997};
    check_vs_reference(m, {Tensor::from_doubles(t, v)}, 0.0, 1);
  }
}

TEST(VulkanElementwise, ChainsStayOnTheDeviceAsOneRegion) {
  // x*y + x, sigmoid, a comparison and a SELECT: one region, one submission, intermediates in the arena.
  std::mt19937 rng(99);
  GraphBuilder b;
  const TensorType t{DType::kFp32, {4, 33}};
  ValueId x = b.input("x", t), y = b.input("y", t);
  ValueId shift = b.constant("s", Tensor::from_ints({DType::kInt8, {1}}, std::vector<int64_t>{0}));
  ValueId p = b.op(Op::MUL, {x, y, shift});
  ValueId q = b.op(Op::ADD, {p, x});
  ValueId s = b.op(Op::SIGMOID, {q});
  ValueId c = b.op(Op::GREATER, {s, y});
  b.output(b.op(Op::SELECT, {c, s, x}, {}, "out"));
  b.output(q);
  Module m(b.finish());
  const std::string ex =
      check_vs_reference(m, {random_tensor(t, rng, -2, 2), random_tensor(t, rng, -1, 1)}, 1e-5, 5);
  EXPECT_NE(ex.find("vulkan REGION[5 nodes]"), std::string::npos) << ex;
}

// ---- Element-wise groups (Region::kElementwise): ew_loop.comp ---------------------------------------

// Mish as the ONNX importer lowers it (ABS, NEGATE, EXP, ADD 1, LOG, CLAMP, ADD, TANH, MUL) plus a
// residual ADD: one ELEMENTWISE[10 ops] dispatch, fp32 and fp16, within the transcendental tolerance
// of the reference's operator-by-operator result (fp16: each step rounded to fp16 as the operator's
// store rounds it).
TEST(VulkanElementwise, MishRunsAsOneLoop) {
  std::mt19937 rng(300);
  for (DType d : {DType::kFp32, DType::kFp16})
    for (const Shape& s : {Shape{3, 37}, Shape{2, 64, 96}}) {
      SCOPED_TRACE(std::string(dtype_name(d)) + " " + shape_str(s));
      const TensorType t{d, s};
      const int r = static_cast<int>(s.size());
      GraphBuilder b;
      ValueId x = b.input("x", t), res = b.input("r", t);
      auto k = [&](const std::string& name, double v) {
        return b.constant(name, Tensor::from_doubles({d, Shape(static_cast<size_t>(r), 1)}, std::vector<double>{v}));
      };
      ValueId z = b.constant("z", Tensor::from_doubles({d, {1}}, std::vector<double>{0}));
      ValueId shift = b.constant("s", Tensor::from_ints({DType::kInt8, {1}}, std::vector<int64_t>{0}));
      ValueId e = b.op(Op::EXP, {b.op(Op::NEGATE, {b.op(Op::ABS, {x}), z, z})});
      ValueId lg = b.op(Op::LOG, {b.op(Op::ADD, {e, k("one", 1.0)})});
      ValueId relu = b.op(Op::CLAMP, {x},
                          {{"min_val", Tensor::from_doubles({d, {}}, std::vector<double>{0})},
                           {"max_val", Tensor::from_doubles({d, {}}, std::vector<double>{d == DType::kFp16 ? 65504.0 : 3.4e38})},
                           {"nan_mode", int64_t(NanMode::kPropagate)}});
      ValueId th = b.op(Op::TANH, {b.op(Op::ADD, {relu, lg})});
      b.output(b.op(Op::ADD, {b.op(Op::MUL, {x, th, shift}), res}, {}, "y"));
      const std::string ex = check_vs_reference(Module(b.finish()), {random_tensor(t, rng, -12, 12), random_tensor(t, rng, -1, 1)},
                                                d == DType::kFp16 ? 2e-3 : 1e-5);
      EXPECT_NE(ex.find("vulkan ELEMENTWISE[10 ops]"), std::string::npos) << ex;
    }
}

// Every operand form and exact step in one group, bit for bit the reference's in fp32 (ADD, SUB, MUL,
// MAXIMUM and MINIMUM under both NaN modes, CLAMP, ABS, NEGATE with NaN, -0 and infinities): inputs
// of the result's shape, one value per last-axis index and one value (graph inputs, bound), a
// constant immediate on either side, an intermediate also read outside (two results). fp16 within
// one fp16 rounding.
TEST(VulkanElementwise, ExactGroupStepsMatchTheReferenceBitForBit) {
  std::mt19937 rng(301);
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (DType d : {DType::kFp32, DType::kFp16}) {
    SCOPED_TRACE(dtype_name(d));
    const TensorType t{d, {5, 33}};
    GraphBuilder b;
    ValueId x = b.input("x", t), y = b.input("y", t), col = b.input("col", {d, {1, 33}}), one = b.input("one", {d, {1, 1}});
    ValueId z = b.constant("z", Tensor::from_doubles({d, {1}}, std::vector<double>{0}));
    ValueId shift = b.constant("s", Tensor::from_ints({DType::kInt8, {1}}, std::vector<int64_t>{0}));
    ValueId k = b.constant("k", Tensor::from_doubles({d, {1, 1}}, std::vector<double>{0.375}));
    ValueId v = b.op(Op::SUB, {k, x});                       // immediate as A
    v = b.op(Op::ADD, {v, y});
    v = b.op(Op::MUL, {v, col, shift});                      // per column
    ValueId mx = b.op(Op::MAXIMUM, {v, y}, {{"nan_mode", int64_t(NanMode::kPropagate)}});
    ValueId mn = b.op(Op::MINIMUM, {mx, x}, {{"nan_mode", int64_t(NanMode::kIgnore)}});
    ValueId c = b.op(Op::CLAMP, {mn},
                     {{"min_val", Tensor::from_doubles({d, {}}, std::vector<double>{-1.5})},
                      {"max_val", Tensor::from_doubles({d, {}}, std::vector<double>{2})},
                      {"nan_mode", int64_t(NanMode::kIgnore)}});
    ValueId w = b.op(Op::NEGATE, {b.op(Op::ABS, {b.op(Op::MUL, {c, one, shift})}), z, z});
    b.output(b.op(Op::SUB, {w, b.op(Op::MUL, {mx, k, shift})}, {}, "out"));  // immediate as B
    b.output(mx);
    std::vector<double> xs(165), ys(165);
    std::uniform_real_distribution<double> u(-3, 3);
    for (size_t i = 0; i < 165; ++i) xs[i] = u(rng), ys[i] = u(rng);
    for (size_t i = 0; i < 165; i += 7) xs[i] = i % 3 == 0 ? nan : i % 3 == 1 ? -0.0 : inf;
    for (size_t i = 2; i < 165; i += 11) ys[i] = i % 2 ? nan : -inf;
    const Tensor xt = Tensor::from_doubles(t, xs), yt = Tensor::from_doubles(t, ys);
    const std::string ex = check_vs_reference(Module(b.finish()),
                                              {xt, yt, random_tensor({d, {1, 33}}, rng, -2, 2), random_tensor({d, {1, 1}}, rng, 0.5, 2)},
                                              d == DType::kFp16 ? 1e-3 : 0.0);
    EXPECT_NE(ex.find("vulkan ELEMENTWISE[11 ops]"), std::string::npos) << ex;
  }
}

// An LSTM cell's update (two results read outside, c' and h) is one dispatch. Its four gates are
// SLICEs of one projection: contiguous ones ([1, 192] cut in four) get no dispatch, the loop reads
// the projection at each slice's offset; strided ones ([2, 192]) are copied first. A chain longer
// than ew_loop.comp's 24 steps is cut into groups of at most 24 (Backend::loop_max_steps).
TEST(VulkanElementwise, LstmCellIsOneLoopAndLongChainsRunApart) {
  std::mt19937 rng(302);
  const TensorType t{DType::kFp32, {2, 48}};
  for (int64_t batch : {1, 2}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    const TensorType gt{DType::kFp32, {batch, 48}};
    GraphBuilder b;
    ValueId proj = b.input("proj", {DType::kFp32, {batch, 192}}), c = b.input("c", gt);
    auto gate = [&](int k) {
      ValueId start = b.constant_shape("start" + std::to_string(k), {0, 48 * k});
      ValueId size = b.constant_shape("size" + std::to_string(k), {batch, 48});
      return b.op(Op::SLICE, {proj, start, size});
    };
    ValueId i = gate(0), f = gate(1), g = gate(2), o = gate(3);
    ValueId shift = b.constant("s", Tensor::from_ints({DType::kInt8, {1}}, std::vector<int64_t>{0}));
    auto mul = [&](ValueId p, ValueId q) { return b.op(Op::MUL, {p, q, shift}); };
    ValueId c2 = b.op(Op::ADD, {mul(b.op(Op::SIGMOID, {f}), c), mul(b.op(Op::SIGMOID, {i}), b.op(Op::TANH, {g}))}, {}, "c2");
    b.output(mul(b.op(Op::SIGMOID, {o}), b.op(Op::TANH, {c2})));
    b.output(c2);
    const Module m(b.finish());
    const std::vector<Tensor> in = {random_tensor({DType::kFp32, {batch, 192}}, rng, -4, 4), random_tensor(gt, rng, -4, 4)};
    const std::string ex = check_vs_reference(m, in, 1e-5);
    EXPECT_NE(ex.find("1 x ELEMENTWISE[9 ops]"), std::string::npos) << ex;
    Context ctx(Model::from_module(m, vulkan_first()));
    ctx.set_profiling(true);
    ctx.run(in);
    int slices = 0, dispatches = 0;
    for (const KernelProfile& k : ctx.profile())
      if (k.device) ++dispatches, slices += k.pattern == "SLICE";
    if (dispatches > 0) {
      EXPECT_EQ(slices, batch == 1 ? 0 : 4);  // (0: a queue without timestamps)
    }
  }
  GraphBuilder b;
  ValueId v = b.input("x", t);
  ValueId k = b.constant("k", Tensor::from_doubles({DType::kFp32, {1, 1}}, std::vector<double>{0.5}));
  for (int s = 0; s < 30; ++s) v = b.op(s % 2 ? Op::ADD : Op::SUB, {v, k});
  b.output(v);
  const std::string ex = check_vs_reference(Module(b.finish()), {random_tensor(t, rng, -4, 4)}, 0.0);
  EXPECT_NE(ex.find("1 x ELEMENTWISE[24 ops], 1 x ELEMENTWISE[6 ops]"), std::string::npos) << ex;
}

// More workgroups than maxComputeWorkGroupCount[0] (65535 on lavapipe and many GPUs; 2^31 - 1 on
// NVIDIA): the grid spreads over y. Every element must be written (found by the TOSA conformance
// suite: past 65535 * 65 elements, nothing was).
TEST(VulkanElementwise, GridsWiderThanOneRowOfWorkgroups) {
  std::mt19937 rng(5);
  GraphBuilder b;
  const TensorType t{DType::kFp32, {65535 * 64 + 4097}};
  b.output(b.op(Op::ABS, {b.input("x", t)}, {}, "y"));
  check_vs_reference(Module(b.finish()), {random_tensor(t, rng, -2, 2)}, 0);
}

}  // namespace
}  // namespace weft::vk_test
