// Rank-0 tensors are written to SPIR-V as [1] (SPV_ARM_tensors: Rank > 0). The lifted module must
// compute the same values as the original (checked with the reference interpreter), pass upstream
// Rank rules in Weft's validator, and refuse what cannot be lifted with the node named.
#include <gtest/gtest.h>

#include "spirv/lift_rank0.h"
#include "weft/graph.h"
#include "weft/interpreter.h"
#include "weft/spirv.h"

namespace weft::spirv {
namespace {

Tensor f32(Shape shape, std::vector<double> v) { return Tensor::from_doubles(TensorType{DType::kFp32, std::move(shape)}, v); }

// x: f32[4] -> ARGMAX (rank 0) ; s: f32[] * 2 (rank 0) ; RESHAPE x[0:1] to [] then + s.
Module scalar_model() {
  GraphBuilder b;
  ValueId x = b.input("x", TensorType{DType::kFp32, {4}});
  ValueId s = b.input("s", TensorType{DType::kFp32, {}});
  ValueId idx = b.op(Op::ARGMAX, {x}, {{"axis", int64_t{0}}, {"nan_mode", int64_t{1}}}, "idx");
  ValueId two = b.constant("two", f32({}, {2}));
  ValueId shift = b.constant("shift", Tensor::from_ints(TensorType{DType::kInt8, {1}}, std::vector<int64_t>{0}));
  ValueId s2 = b.op(Op::MUL, {s, two, shift}, {}, "s2");
  ValueId first = b.op(Op::SLICE, {x, b.constant_shape("start", {0}), b.constant_shape("size", {1})}, {}, "first");
  ValueId scalar = b.op(Op::RESHAPE, {first, b.constant_shape("empty", {})}, {}, "scalar");
  ValueId sum = b.op(Op::ADD, {scalar, s2}, {}, "sum");
  b.output(idx);
  b.output(sum);
  return Module(b.finish());
}

TEST(LiftRank0, LiftedModuleComputesTheSameValues) {
  Module m = scalar_model();
  std::optional<Module> lifted = lift_rank0(m);
  ASSERT_TRUE(lifted.has_value());
  for (const Value& v : lifted->main().values()) {
    if (v.type.dtype != DType::kShape) {
      EXPECT_GT(v.type.rank(), 0) << v.name;
    }
  }
  EXPECT_EQ(lifted->main().value(lifted->main().outputs()[0]).type.shape, (Shape{1}));
  std::vector<Tensor> out = Interpreter(m).run(std::vector<Tensor>{f32({4}, {1, 7, 3, 7}), f32({}, {0.25})});
  std::vector<Tensor> out1 = Interpreter(*lifted).run(std::vector<Tensor>{f32({4}, {1, 7, 3, 7}), f32({1}, {0.25})});
  ASSERT_EQ(out.size(), out1.size());
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out1[i].shape(), (Shape{1}));
    EXPECT_EQ(out[i].to_doubles(), out1[i].to_doubles()) << i;
  }
  EXPECT_EQ(out[0].at_int(0), 1);  // first of the maxima
  EXPECT_DOUBLE_EQ(out[1].at_double(0), 1.5);
}

TEST(LiftRank0, EncodedModuleHasNoRankZeroAndDecodesLifted) {
  Module m = scalar_model();
  Binary bin = encode(m);
  EXPECT_TRUE(validate(bin.words).empty());
  Module back = decode(bin.words, bin.constants);
  EXPECT_EQ(back.main().value(back.main().inputs()[1]).type.shape, (Shape{1}));
}

TEST(LiftRank0, ModulesWithoutRankZeroAreLeftAlone) {
  GraphBuilder b;
  ValueId x = b.input("x", TensorType{DType::kFp32, {2}});
  b.output(b.op(Op::ABS, {x}, {}, "y"));
  EXPECT_FALSE(lift_rank0(Module(b.finish())).has_value());
}

}  // namespace
}  // namespace weft::spirv
