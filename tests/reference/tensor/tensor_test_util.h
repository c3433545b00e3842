// Shared helpers of the tensor-operator kernel tests: random tensors of any type, a runner with a
// thread count, and the accumulator arithmetic of the pseudocode for the in-test oracles.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "reference/ref_test_util.h"
#include "weft/graph.h"
#include "weft/interpreter.h"
#include "weft/ops.h"

namespace weft::testing {

// Like run_op, with every operand a graph input and a chosen thread count.
inline std::vector<Tensor> run_threads(Op op, const std::vector<Tensor>& operands, const Attrs& attrs,
                                       const std::vector<TensorType>& out_types, int threads) {
  GraphBuilder b("main");
  std::vector<ValueId> ins;
  for (size_t i = 0; i < operands.size(); ++i)
    ins.push_back(b.input("in" + std::to_string(i), operands[i].type()));
  std::vector<std::string> names;
  for (size_t i = 0; i < out_types.size(); ++i) names.push_back("out" + std::to_string(i));
  for (ValueId v : b.op_multi(op, ins, attrs, names, out_types)) b.output(v);
  Module m(b.finish());
  InterpreterOptions opt;
  opt.verify = false;
  opt.threads = threads;
  Interpreter interp(m, opt);
  return interp.run(operands);
}

inline Tensor run_t(Op op, const std::vector<Tensor>& operands, const Attrs& attrs, TensorType out,
                    int threads = 1) {
  return run_threads(op, operands, attrs, {std::move(out)}, threads).at(0);
}

// Random values of `t`: integers over their range (or [lo, hi] when given), floats uniform in
// [-scale, scale] rounded to the type.
inline Tensor random_tensor(std::mt19937& rng, DType t, Shape shape, double scale = 2.0, int64_t lo = 0,
                            int64_t hi = -1) {
  const int64_t n = shape_elements(shape);
  if (is_float(t)) {
    std::uniform_real_distribution<double> d(-scale, scale);
    std::vector<double> v(static_cast<size_t>(n));
    for (double& x : v) x = d(rng);
    return Tensor::from_doubles({t, std::move(shape)}, v);
  }
  if (hi < lo) {
    lo = int_min(t);
    hi = int_max(t);
  }
  std::uniform_int_distribution<int64_t> d(lo, hi);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t& x : v) x = d(rng);
  return Tensor::from_ints({t, std::move(shape)}, v);
}

inline Tensor scalar1(DType t, int64_t v) { return Tensor::from_ints({t, {1}}, std::vector<int64_t>{v}); }

// The acc_t arithmetic of the pseudocode for the oracles: integers in int64 with the REQUIRE range
// check of apply_add_s; floating point in double, rounded to acc_t after every operation.
struct OracleAcc {
  DType acc_t;
  bool overflow = false;
  double mul(double a, double b) const {
    return is_float(acc_t) ? round_to(acc_t, static_cast<float>(a * b)) : a * b;
  }
  double add(double a, double b) {
    if (is_float(acc_t)) return round_to(acc_t, static_cast<float>(a + b));
    double r = a + b;
    if (r < static_cast<double>(int_min(acc_t)) || r > static_cast<double>(int_max(acc_t))) overflow = true;
    return r;
  }
};

// out = static_cast<out_t>(acc); out = apply_add_s<out_t>(out, bias).
inline double oracle_finish(DType out_t, double acc, double bias) {
  if (is_float(out_t)) {
    float o = round_to(out_t, static_cast<float>(acc));
    return round_to(out_t, o + static_cast<float>(bias));
  }
  return acc + bias;
}

inline Tensor from_values(DType t, Shape s, const std::vector<double>& v) {
  if (is_float(t)) return Tensor::from_doubles({t, std::move(s)}, v);
  std::vector<int64_t> iv(v.begin(), v.end());
  return Tensor::from_ints({t, std::move(s)}, iv);
}

inline Attrs conv_attrs(std::vector<int64_t> pad, std::vector<int64_t> stride, std::vector<int64_t> dilation,
                        AccType acc) {
  return {{"pad", std::move(pad)},
          {"stride", std::move(stride)},
          {"dilation", std::move(dilation)},
          {"acc_type", static_cast<int64_t>(acc)}};
}

// The type-support rows of the convolution family: in_t, weight_t, out_t, acc_t.
struct ConvTypes {
  DType in, w, out, acc;
};
inline const std::vector<ConvTypes>& conv_type_rows() {
  static const std::vector<ConvTypes> rows = {
      {DType::kInt8, DType::kInt8, DType::kInt32, DType::kInt32},
      {DType::kInt8, DType::kInt4, DType::kInt32, DType::kInt32},
      {DType::kInt16, DType::kInt8, DType::kInt48, DType::kInt48},
      {DType::kFp8E4M3, DType::kFp8E4M3, DType::kFp16, DType::kFp16},
      {DType::kFp8E5M2, DType::kFp8E5M2, DType::kFp16, DType::kFp16},
      {DType::kFp16, DType::kFp16, DType::kFp16, DType::kFp16},
      {DType::kFp16, DType::kFp16, DType::kFp16, DType::kFp32},
      {DType::kBf16, DType::kBf16, DType::kBf16, DType::kFp32},
      {DType::kFp32, DType::kFp32, DType::kFp32, DType::kFp32},
  };
  return rows;
}

inline std::string row_name(const ConvTypes& r) {
  return std::string(dtype_name(r.in)) + "x" + dtype_name(r.w) + "->" + dtype_name(r.out) + " acc " +
         dtype_name(r.acc);
}

inline AccType acc_enum(DType t) { return *dtype_acc_type(t); }

}  // namespace weft::testing
