// Helpers for kernel tests: run one operator on given tensors through the interpreter.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "weft/graph.h"
#include "weft/interpreter.h"

namespace weft::testing {

// An operand: a tensor fed as a graph input, a CONST tensor, or a CONST_SHAPE value.
struct Operand {
  enum Kind { kInput, kConst, kShape } kind = kInput;
  Tensor tensor;
  std::vector<int64_t> shape_values;
  static Operand input(Tensor t) { return {kInput, std::move(t), {}}; }
  static Operand constant(Tensor t) { return {kConst, std::move(t), {}}; }
  static Operand shape(std::vector<int64_t> v) { return {kShape, {}, std::move(v)}; }
};

inline Tensor F32(Shape s, std::vector<double> v) { return Tensor::from_doubles({DType::kFp32, std::move(s)}, v); }
inline Tensor T(DType t, Shape s, std::vector<double> v) { return Tensor::from_doubles({t, std::move(s)}, v); }
inline Tensor I(DType t, Shape s, std::vector<int64_t> v) { return Tensor::from_ints({t, std::move(s)}, v); }

// Builds a one-operator graph and runs it with the reference interpreter. `out_types` may be
// empty to use the verifier's inference. `verify` runs the full verifier first.
inline std::vector<Tensor> run_op(Op op, const std::vector<Operand>& operands, const Attrs& attrs,
                                  const std::vector<TensorType>& out_types = {}, bool verify = false) {
  GraphBuilder b("main");
  std::vector<ValueId> ins;
  std::vector<Tensor> feeds;
  for (size_t i = 0; i < operands.size(); ++i) {
    const Operand& o = operands[i];
    std::string name = "in" + std::to_string(i);
    switch (o.kind) {
      case Operand::kInput:
        ins.push_back(b.input(name, o.tensor.type()));
        feeds.push_back(o.tensor);
        break;
      case Operand::kConst: ins.push_back(b.constant(name, o.tensor)); break;
      case Operand::kShape: ins.push_back(b.constant_shape(name, o.shape_values)); break;
    }
  }
  std::vector<std::string> names;
  size_t n_out = out_types.empty() ? 0 : out_types.size();
  for (size_t i = 0; i < n_out; ++i) names.push_back("out" + std::to_string(i));
  auto outs = b.op_multi(op, ins, attrs, names, out_types);
  for (ValueId v : outs) b.output(v);
  Module m(b.finish());
  InterpreterOptions opt;
  opt.verify = verify;
  Interpreter interp(m, opt);
  return interp.run(feeds);
}

inline Tensor run1(Op op, const std::vector<Operand>& operands, const Attrs& attrs, TensorType out_type) {
  return run_op(op, operands, attrs, {std::move(out_type)}).at(0);
}

// Expects `got` to equal `want` element by element (bitwise for integer types; for floats,
// NaN matches NaN and values must be equal unless `tol` > 0).
inline void expect_tensor_eq(const Tensor& got, const Tensor& want, double tol = 0.0) {
  ASSERT_EQ(got.type(), want.type()) << got.type().str() << " vs " << want.type().str();
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    double g = got.at_double(i), w = want.at_double(i);
    if (std::isnan(w)) {
      EXPECT_TRUE(std::isnan(g)) << "element " << i << ": got " << g << ", want NaN";
    } else if (tol > 0) {
      EXPECT_NEAR(g, w, tol) << "element " << i;
    } else {
      EXPECT_EQ(g, w) << "element " << i;
      if (w == 0.0 && is_float(want.dtype())) {
        EXPECT_EQ(std::signbit(g), std::signbit(w)) << "sign of zero, element " << i;
      }
    }
  }
}

}  // namespace weft::testing
