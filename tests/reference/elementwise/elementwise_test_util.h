// Shared helpers of the elementwise kernel tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "reference/ref_test_util.h"
#include "weft/ops.h"

namespace weft::testing {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr int64_t kI32Min = std::numeric_limits<int32_t>::min();
inline constexpr int64_t kI32Max = std::numeric_limits<int32_t>::max();

inline Shape broadcast_shape(const Shape& a, const Shape& b) {
  Shape s(a.size());
  for (size_t i = 0; i < a.size(); ++i) s[i] = std::max(a[i], b[i]);
  return s;
}

// Binary operator with both operands as graph inputs; output shape = broadcast shape.
inline Tensor bin(Op op, const Tensor& a, const Tensor& b, DType out, const Attrs& attrs = {}) {
  return run1(op, {Operand::input(a), Operand::input(b)}, attrs,
              {out, broadcast_shape(a.shape(), b.shape())});
}

inline Tensor un(Op op, const Tensor& a, DType out, const Attrs& attrs = {}) {
  return run1(op, {Operand::input(a)}, attrs, {out, a.shape()});
}

// Expects fn() to throw weft::Error with code kRuntime whose message mentions `needle`.
inline void expect_runtime_error(const std::function<void()>& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "expected a runtime error mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

inline Attrs nan_mode(NanMode m) { return {{"nan_mode", static_cast<int64_t>(m)}}; }

}  // namespace weft::testing
