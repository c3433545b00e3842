// compiler::canonicalize: one form for computations frameworks write in several.
#include <gtest/gtest.h>

#include <cmath>

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

}  // namespace
}  // namespace weft::compiler
