// Shape and type inference (src/tosa/infer.cpp): one inferred case per operator and every ERROR_IF
// rule that inference decides statically.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "weft/graph.h"
#include "weft/verify.h"

namespace weft {

// Readable TensorType values in gtest failure messages.
void PrintTo(const TensorType& t, std::ostream* os) { *os << t.str(); }

namespace {

// Runs `f` and checks that it throws a kVerify Error whose message contains `substr`.
template <class F>
::testing::AssertionResult FailsWith(F&& f, std::string_view substr) {
  try {
    f();
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kVerify) {
      return ::testing::AssertionFailure() << "code " << error_code_name(e.code()) << ": " << e.what();
    }
    if (e.message().find(substr) == std::string::npos) {
      return ::testing::AssertionFailure() << "message \"" << e.message() << "\" lacks \"" << substr << "\"";
    }
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "unexpected exception: " << e.what();
  }
  return ::testing::AssertionFailure() << "nothing was thrown";
}

AttrValue I(int64_t v) { return AttrValue(v); }
AttrValue L(std::vector<int64_t> v) { return AttrValue(std::move(v)); }
AttrValue S(std::string v) { return AttrValue(std::move(v)); }
AttrValue Acc(AccType t) { return AttrValue(static_cast<int64_t>(t)); }
Tensor scalar(DType t, double v) { return Tensor::from_doubles({t, {}}, std::vector<double>{v}); }

constexpr DType kBool = DType::kBool;
constexpr DType kI8 = DType::kInt8;
constexpr DType kI16 = DType::kInt16;
constexpr DType kI32 = DType::kInt32;
constexpr DType kI48 = DType::kInt48;
constexpr DType kF16 = DType::kFp16;
constexpr DType kF32 = DType::kFp32;

class InferTest : public ::testing::Test {
 protected:
  std::string fresh(const char* base) { return std::string(base) + std::to_string(counter_++); }
  ValueId in(DType t, Shape s) { return b.input(fresh("in"), {t, std::move(s)}); }
  ValueId cst(DType t, Shape s, std::vector<double> v) {
    return b.constant(fresh("c"), Tensor::from_doubles({t, std::move(s)}, v));
  }
  ValueId zp(DType t, double v = 0) { return cst(t, {1}, {v}); }
  ValueId shp(std::vector<int64_t> v) { return b.constant_shape(fresh("s"), std::move(v)); }
  TensorType type(ValueId v) const { return b.graph().value(v).type; }
  TensorType op(Op o, std::vector<ValueId> ins, Attrs a = {}) {
    return type(b.op(o, std::move(ins), std::move(a)));
  }
  std::vector<TensorType> multi(Op o, std::vector<ValueId> ins, Attrs a = {}) {
    std::vector<TensorType> r;
    for (ValueId v : b.op_multi(o, std::move(ins), std::move(a), {})) r.push_back(type(v));
    return r;
  }

  GraphBuilder b;
  int counter_ = 0;
};

// ---- Operand checks shared by every operator ----

TEST_F(InferTest, OperandCountRankKindAndDims) {
  ValueId x = in(kF32, {2, 3});
  EXPECT_TRUE(FailsWith([&] { op(Op::ADD, {x}); }, "expects 2 operands"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::MAX_POOL2D, {x}, {{"kernel", L({1, 1})}, {"stride", L({1, 1})}, {"pad", L({0, 0, 0, 0})}});
      },
      "has rank 2, must be 4"));
  ValueId s = shp({3, 2});
  EXPECT_TRUE(FailsWith([&] { op(Op::ABS, {s}); }, "must be a tensor"));
  EXPECT_TRUE(FailsWith([&] { op(Op::RESHAPE, {x, x}); }, "must be a shape_t value"));
  ValueId empty = in(kF32, {2, 0});
  EXPECT_TRUE(FailsWith([&] { op(Op::ABS, {empty}); }, "every tensor dimension must be >= 1"));
  ValueId r7 = in(kF32, {1, 1, 1, 1, 1, 1, 1});
  EXPECT_TRUE(FailsWith([&] { op(Op::ABS, {r7}); }, "has rank 7"));
}

TEST_F(InferTest, ErrorsCarryGraphNodeAndOperand) {
  ValueId x = in(kF32, {2, 3});
  try {
    op(Op::REVERSE, {x}, {{"axis", I(2)}});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kVerify);
    EXPECT_EQ(e.location().graph, "main");
    EXPECT_EQ(e.location().operand, "axis");
    EXPECT_EQ(e.message().rfind("REVERSE: ", 0), 0u) << e.message();
  }
  // A node already in the graph (added with explicit output types) is labelled by its output.
  std::vector<ValueId> bad =
      b.op_multi(Op::REVERSE, {x}, {{"axis", I(5)}}, {"bad"}, {TensorType{kF32, {2, 3}}});
  const Node& bad_node = b.graph().node(b.graph().value(bad[0]).producer);
  try {
    infer_output_types(b.graph(), bad_node, nullptr);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.location().node, "%bad");
    EXPECT_EQ(e.location().operand, "axis");
  }
  // A valid node in the graph infers its declared type.
  ValueId y = b.op(Op::ABS, {x}, {}, "y");
  const Graph& g = b.graph();
  const Node& node = g.node(g.value(y).producer);
  EXPECT_EQ(infer_output_types(g, node, nullptr), (std::vector<TensorType>{TensorType{kF32, {2, 3}}}));
}

// ---- Tensor operators ----

TEST_F(InferTest, Argmax) {
  ValueId x = in(kF32, {2, 3, 4});
  EXPECT_EQ(op(Op::ARGMAX, {x}, {{"axis", I(1)}}), (TensorType{kI32, {2, 4}}));
  EXPECT_EQ(op(Op::ARGMAX, {in(kI8, {5})}, {{"axis", I(0)}}), (TensorType{kI32, {}}));
  EXPECT_TRUE(FailsWith([&] { op(Op::ARGMAX, {x}, {{"axis", I(3)}}); }, "axis = 3 must satisfy"));
  EXPECT_TRUE(FailsWith([&] { op(Op::ARGMAX, {x}, {{"axis", I(-1)}}); }, "axis = -1"));
  EXPECT_TRUE(FailsWith([&] { op(Op::ARGMAX, {in(kI32, {4})}, {{"axis", I(0)}}); }, "fit no row"));
}

TEST_F(InferTest, AvgPool2d) {
  auto pool = [&](ValueId x, DType t, double in_zp, std::vector<int64_t> k, std::vector<int64_t> s,
                  std::vector<int64_t> p) {
    return op(Op::AVG_POOL2D, {x, zp(t, in_zp), zp(t)},
              {{"kernel", L(k)}, {"stride", L(s)}, {"pad", L(p)}, {"acc_type", Acc(AccType::kInt32)}});
  };
  ValueId x8 = in(kI8, {1, 8, 8, 3});
  EXPECT_EQ(pool(x8, kI8, 5, {2, 2}, {2, 2}, {0, 0, 0, 0}), (TensorType{kI8, {1, 4, 4, 3}}));
  EXPECT_EQ(pool(x8, kI8, 0, {3, 3}, {1, 1}, {1, 1, 1, 1}), (TensorType{kI8, {1, 8, 8, 3}}));
  ValueId xf = in(kF32, {1, 8, 8, 3});
  EXPECT_TRUE(FailsWith([&] { pool(xf, kF32, 1, {2, 2}, {2, 2}, {0, 0, 0, 0}); }, "input_zp = "));
  EXPECT_TRUE(FailsWith([&] { pool(x8, kI8, 0, {0, 2}, {2, 2}, {0, 0, 0, 0}); }, "kernel_y = 0"));
  EXPECT_TRUE(FailsWith([&] { pool(x8, kI8, 0, {2, 2}, {2, 0}, {0, 0, 0, 0}); }, "stride_x = 0"));
  EXPECT_TRUE(FailsWith([&] { pool(x8, kI8, 0, {2, 2}, {2, 2}, {0, 0, -1, 0}); }, "pad_left = -1"));
  EXPECT_TRUE(FailsWith(
      [&] {
        pool(x8, kI8, 0, {2, 2}, {1, 1}, {2, 0, 0, 0});
      },
      "pad_top = 2 must be less than kernel_y"));
  ValueId x7 = in(kI8, {1, 7, 8, 3});
  EXPECT_TRUE(FailsWith(
      [&] {
        pool(x7, kI8, 0, {2, 2}, {2, 2}, {0, 0, 0, 0});
      },
      "not a multiple of stride_y"));
  EXPECT_TRUE(FailsWith([&] { pool(x8, kI8, 0, {2, 2, 2}, {2, 2}, {0, 0, 0, 0}); }, "must have 2"));
}

TEST_F(InferTest, MaxPool2d) {
  ValueId x = in(kF32, {1, 4, 6, 2});
  Attrs a{{"kernel", L({2, 3})}, {"stride", L({2, 3})}, {"pad", L({0, 0, 0, 0})}};
  EXPECT_EQ(op(Op::MAX_POOL2D, {x}, a), (TensorType{kF32, {1, 2, 2, 2}}));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::MAX_POOL2D, {x}, {{"kernel", L({2, 2})}, {"stride", L({1, 1})}, {"pad", L({0, 0, 2, 0})}});
      },
      "pad_left = 2 must be less than kernel_x"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::MAX_POOL2D, {x}, {{"kernel", L({5, 1})}, {"stride", L({1, 1})}, {"pad", L({0, 0, 0, 0})}});
      },
      "must be >= 1"));
}

class ConvTest : public InferTest {
 protected:
  TensorType conv2d(ValueId x, ValueId w, ValueId bias, DType in_t, DType w_t, std::vector<int64_t> pad,
                    std::vector<int64_t> stride, std::vector<int64_t> dil, double in_zp = 0,
                    double w_zp = 0) {
    return op(
        Op::CONV2D, {x, w, bias, zp(in_t, in_zp), zp(w_t, w_zp)},
        {{"pad", L(pad)}, {"stride", L(stride)}, {"dilation", L(dil)}, {"acc_type", Acc(AccType::kFp32)}});
  }
};

TEST_F(ConvTest, Conv2d) {
  ValueId x = in(kF32, {1, 8, 8, 3});
  ValueId w = in(kF32, {16, 3, 3, 3});
  ValueId bias = in(kF32, {16});
  EXPECT_EQ(conv2d(x, w, bias, kF32, kF32, {1, 1, 1, 1}, {1, 1}, {1, 1}), (TensorType{kF32, {1, 8, 8, 16}}));
  // (8 - 1 + 1 + 0 - 2) / 2 + 1 = 4
  EXPECT_EQ(conv2d(x, w, bias, kF32, kF32, {1, 0, 1, 0}, {2, 2}, {1, 1}), (TensorType{kF32, {1, 4, 4, 16}}));
  // dilation 2: (8 - 1 - 4) / 1 + 1 = 4
  EXPECT_EQ(conv2d(x, w, in(kF32, {1}), kF32, kF32, {0, 0, 0, 0}, {1, 1}, {2, 2}),
            (TensorType{kF32, {1, 4, 4, 16}}));
  ValueId x8 = in(kI8, {1, 5, 5, 2});
  ValueId w8 = in(kI8, {4, 1, 1, 2});
  EXPECT_EQ(conv2d(x8, w8, in(kI32, {4}), kI8, kI8, {0, 0, 0, 0}, {1, 1}, {1, 1}, -3, 7),
            (TensorType{kI32, {1, 5, 5, 4}}));

  EXPECT_TRUE(FailsWith(
      [&] {
        conv2d(x, in(kF32, {16, 3, 3, 4}), bias, kF32, kF32, {0, 0, 0, 0}, {1, 1}, {1, 1});
      },
      "weight IC = 4 differs from input IC = 3"));
  EXPECT_TRUE(FailsWith(
      [&] {
        conv2d(x, w, in(kF32, {5}), kF32, kF32, {0, 0, 0, 0}, {1, 1}, {1, 1});
      },
      "BC = 5"));
  EXPECT_TRUE(FailsWith(
      [&] {
        conv2d(x, w, bias, kF32, kF32, {0, 0, 0, 0}, {2, 2}, {1, 1});
      },
      "(IH - 1 + pad_top + pad_bottom - (KH - 1) * dilation_y) = 5 is not a multiple of stride_y = 2"));
  EXPECT_TRUE(FailsWith(
      [&] {
        conv2d(x, w, bias, kF32, kF32, {0, 0, 0, 0}, {1, 1}, {1, 0});
      },
      "dilation_x = 0"));
  EXPECT_TRUE(FailsWith(
      [&] {
        conv2d(x, w, bias, kF32, kF32, {0, -1, 0, 0}, {1, 1}, {1, 1});
      },
      "pad_bottom = -1"));
  EXPECT_TRUE(FailsWith(
      [&] {
        conv2d(x, w, bias, kF32, kF32, {0, 0, 0, 0}, {0, 1}, {1, 1});
      },
      "stride_y = 0"));
  EXPECT_TRUE(FailsWith(
      [&] {
        conv2d(x, w, bias, kF32, kF32, {0, 0, 0, 0}, {1, 1}, {1, 1}, 1, 0);
      },
      "input_zp = "));
  EXPECT_TRUE(FailsWith(
      [&] {
        conv2d(x, w, bias, kF32, kF32, {0, 0, 0, 0}, {1, 1}, {1, 1}, 0, 2);
      },
      "weight_zp = "));
  ValueId small = in(kF32, {1, 2, 2, 3});
  EXPECT_TRUE(FailsWith(
      [&] {
        conv2d(small, in(kF32, {1, 5, 5, 3}), in(kF32, {1}), kF32, kF32, {0, 0, 0, 0}, {1, 1}, {1, 1});
      },
      "output size OH"));
  EXPECT_TRUE(FailsWith(
      [&] {
        conv2d(x, w, bias, kF32, kF32, {0, 0}, {1, 1}, {1, 1});
      },
      "'pad' has 2 values"));
  // Zero point operands have shape [1] and the input's element type.
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::CONV2D, {x, w, bias, cst(kF32, {2}, {0, 0}), zp(kF32)},
           {{"pad", L({0, 0, 0, 0})},
            {"stride", L({1, 1})},
            {"dilation", L({1, 1})},
            {"acc_type", Acc(AccType::kFp32)}});
      },
      "must have shape [1]"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::CONV2D, {x, w, bias, zp(kF16), zp(kF32)},
           {{"pad", L({0, 0, 0, 0})},
            {"stride", L({1, 1})},
            {"dilation", L({1, 1})},
            {"acc_type", Acc(AccType::kFp32)}});
      },
      "in_t = fp32_t"));
}

TEST_F(ConvTest, Conv3d) {
  ValueId x = in(kF32, {1, 4, 8, 8, 3});
  ValueId w = in(kF32, {8, 2, 3, 3, 3});
  auto conv3d = [&](std::vector<int64_t> pad, std::vector<int64_t> stride, std::vector<int64_t> dil,
                    ValueId bias) {
    return op(
        Op::CONV3D, {x, w, bias, zp(kF32), zp(kF32)},
        {{"pad", L(pad)}, {"stride", L(stride)}, {"dilation", L(dil)}, {"acc_type", Acc(AccType::kFp32)}});
  };
  EXPECT_EQ(conv3d({0, 0, 0, 0, 0, 0}, {1, 1, 1}, {1, 1, 1}, in(kF32, {8})),
            (TensorType{kF32, {1, 3, 6, 6, 8}}));
  // OD = (4 - 1 + 1 + 1 - 1) / 2 + 1 = 3
  EXPECT_EQ(conv3d({1, 1, 1, 1, 1, 1}, {2, 1, 1}, {1, 1, 1}, in(kF32, {1})),
            (TensorType{kF32, {1, 3, 8, 8, 8}}));
  EXPECT_TRUE(FailsWith(
      [&] {
        conv3d({0, 0, 0, 0, 0, 0}, {3, 1, 1}, {1, 1, 1}, in(kF32, {8}));
      },
      "(ID - 1 + pad_d0 + pad_d1 - (KD - 1) * dilation_d) = 2 is not a multiple of stride_d = 3"));
  EXPECT_TRUE(FailsWith(
      [&] {
        conv3d({0, 0, 0, 0, 0, 0}, {1, 1, 1}, {0, 1, 1}, in(kF32, {8}));
      },
      "dilation_d = 0"));
  EXPECT_TRUE(FailsWith(
      [&] {
        conv3d({-1, 0, 0, 0, 0, 0}, {1, 1, 1}, {1, 1, 1}, in(kF32, {8}));
      },
      "pad_d0 = -1"));
  EXPECT_TRUE(FailsWith([&] { conv3d({0, 0, 0, 0, 0, 0}, {1, 1, 1}, {1, 1, 1}, in(kF32, {3})); }, "BC = 3"));
}

TEST_F(ConvTest, DepthwiseConv2d) {
  ValueId x = in(kF32, {1, 8, 8, 4});
  ValueId w = in(kF32, {3, 3, 4, 2});
  auto dw = [&](ValueId weight, ValueId bias) {
    return op(Op::DEPTHWISE_CONV2D, {x, weight, bias, zp(kF32), zp(kF32)},
              {{"pad", L({0, 0, 0, 0})},
               {"stride", L({1, 1})},
               {"dilation", L({1, 1})},
               {"acc_type", Acc(AccType::kFp32)}});
  };
  EXPECT_EQ(dw(w, in(kF32, {8})), (TensorType{kF32, {1, 6, 6, 8}}));
  EXPECT_TRUE(FailsWith(
      [&] {
        dw(in(kF32, {3, 3, 3, 2}), in(kF32, {6}));
      },
      "weight C = 3 differs from input C = 4"));
  EXPECT_TRUE(FailsWith([&] { dw(w, in(kF32, {4})); }, "C*M = 8"));
}

TEST_F(ConvTest, TransposeConv2d) {
  ValueId x = in(kF32, {1, 4, 4, 2});
  ValueId w = in(kF32, {3, 3, 3, 2});
  auto tc = [&](ValueId weight, std::vector<int64_t> out_pad, std::vector<int64_t> stride, ValueId bias) {
    return op(Op::TRANSPOSE_CONV2D, {x, weight, bias, zp(kF32), zp(kF32)},
              {{"out_pad", L(out_pad)}, {"stride", L(stride)}, {"acc_type", Acc(AccType::kFp32)}});
  };
  // OH = (4 - 1) * 2 + 0 + 0 + 3 = 9; OW = (4 - 1) * 1 - 1 + 0 + 3 = 5
  EXPECT_EQ(tc(w, {0, 0, -1, 0}, {2, 1}, in(kF32, {3})), (TensorType{kF32, {1, 9, 5, 3}}));
  EXPECT_TRUE(FailsWith(
      [&] {
        tc(w, {-3, 0, 0, 0}, {1, 1}, in(kF32, {3}));
      },
      "out_pad_top = -3 must be > -KH"));
  EXPECT_TRUE(FailsWith(
      [&] {
        tc(w, {0, 0, 0, -3}, {1, 1}, in(kF32, {3}));
      },
      "out_pad_right = -3 must be > -KW"));
  EXPECT_TRUE(FailsWith([&] { tc(w, {0, 0, 0, 0}, {1, 0}, in(kF32, {3})); }, "stride_x = 0"));
  EXPECT_TRUE(FailsWith([&] { tc(w, {0, 0, 0, 0}, {1, 1}, in(kF32, {2})); }, "BC = 2"));
  EXPECT_TRUE(FailsWith([&] { tc(in(kF32, {3, 3, 3, 5}), {0, 0, 0, 0}, {1, 1}, in(kF32, {3})); }, "IC = 5"));
}

TEST_F(InferTest, Fft2dAndRfft2d) {
  ValueId re = in(kF32, {2, 8, 16});
  ValueId im = in(kF32, {2, 8, 16});
  std::vector<TensorType> expected(2, TensorType{kF32, {2, 8, 16}});
  EXPECT_EQ(multi(Op::FFT2D, {re, im}, {{"inverse", AttrValue(true)}}), expected);
  EXPECT_TRUE(FailsWith(
      [&] {
        multi(Op::FFT2D, {in(kF32, {1, 6, 8}), in(kF32, {1, 6, 8})});
      },
      "H = 6 must be a power of two"));
  EXPECT_TRUE(FailsWith(
      [&] {
        multi(Op::FFT2D, {in(kF32, {1, 8, 12}), in(kF32, {1, 8, 12})});
      },
      "W = 12 must be a power of two"));
  EXPECT_TRUE(FailsWith(
      [&] {
        multi(Op::FFT2D, {re, in(kF32, {2, 8, 8})});
      },
      "must have the shape of input_real"));

  std::vector<TensorType> rexpected(2, TensorType{kF32, {2, 8, 9}});
  EXPECT_EQ(multi(Op::RFFT2D, {re}), rexpected);
  EXPECT_EQ(multi(Op::RFFT2D, {in(kF32, {1, 1, 1})}),
            std::vector<TensorType>(2, TensorType{kF32, {1, 1, 1}}));
  EXPECT_TRUE(FailsWith([&] { multi(Op::RFFT2D, {in(kF32, {1, 8, 10})}); }, "W = 10 must be a power of two"));
}

TEST_F(InferTest, Matmul) {
  ValueId a = in(kI8, {2, 3, 4});
  ValueId bm = in(kI8, {2, 4, 5});
  EXPECT_EQ(op(Op::MATMUL, {a, bm, zp(kI8, 3), zp(kI8, -2)}), (TensorType{kI32, {2, 3, 5}}));
  EXPECT_EQ(op(Op::MATMUL, {in(kI16, {1, 2, 2}), in(kI16, {1, 2, 2}), zp(kI16), zp(kI16)}),
            (TensorType{kI48, {1, 2, 2}}));
  ValueId af = in(kF32, {2, 3, 4});
  EXPECT_EQ(op(Op::MATMUL, {af, in(kF32, {2, 4, 1}), zp(kF32), zp(kF32)}), (TensorType{kF32, {2, 3, 1}}));
  // fp16 inputs may accumulate into fp16 or fp32: the output type cannot be inferred.
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::MATMUL, {in(kF16, {1, 2, 2}), in(kF16, {1, 2, 2}), zp(kF16), zp(kF16)});
      },
      "must be given explicitly"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::MATMUL, {a, in(kI8, {3, 4, 5}), zp(kI8), zp(kI8)});
      },
      "B N = 3 differs from A N = 2"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::MATMUL, {a, in(kI8, {2, 3, 5}), zp(kI8), zp(kI8)});
      },
      "B C = 3 differs from A C = 4"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::MATMUL, {af, in(kF32, {2, 4, 1}), zp(kF32, 1), zp(kF32)});
      },
      "A_zp = "));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::MATMUL, {af, in(kF32, {2, 4, 1}), zp(kF32), zp(kF32, 2)});
      },
      "B_zp = "));
}

// ---- Activation and elementwise operators ----

TEST_F(InferTest, Clamp) {
  ValueId x = in(kF32, {2, 3});
  EXPECT_EQ(op(Op::CLAMP, {x}, {{"min_val", scalar(kF32, 0)}, {"max_val", scalar(kF32, 6)}}),
            (TensorType{kF32, {2, 3}}));
  ValueId xi = in(kI8, {4});
  EXPECT_EQ(op(Op::CLAMP, {xi}, {{"min_val", scalar(kI8, -5)}, {"max_val", scalar(kI8, -5)}}),
            (TensorType{kI8, {4}}));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::CLAMP, {xi}, {{"min_val", scalar(kI8, 3)}, {"max_val", scalar(kI8, 2)}});
      },
      "max_val = 2 is less than min_val = 3"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::CLAMP, {x}, {{"min_val", scalar(kF32, NAN)}, {"max_val", scalar(kF32, 1)}});
      },
      "NaN"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::CLAMP, {x}, {{"min_val", scalar(kF32, 1)}, {"max_val", scalar(kF32, 0.5)}});
      },
      "is less than min_val"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::CLAMP, {x}, {{"min_val", scalar(kF16, 0)}, {"max_val", scalar(kF32, 1)}});
      },
      "min_val must be one value of in_out_t = fp32_t"));
}

TEST_F(InferTest, UnaryActivations) {
  for (Op o : {Op::ERF, Op::SIGMOID, Op::TANH}) {
    EXPECT_EQ(op(o, {in(kF16, {3, 1})}), (TensorType{kF16, {3, 1}})) << op_name(o);
  }
}

TEST_F(InferTest, ElementwiseBinaryBroadcast) {
  struct Case {
    Op op;
    DType t;
  };
  const Case cases[] = {{Op::ADD, kF32},
                        {Op::SUB, kI32},
                        {Op::MAXIMUM, kF16},
                        {Op::MINIMUM, kI32},
                        {Op::POW, kF32},
                        {Op::INTDIV, kI32},
                        {Op::BITWISE_AND, kI8},
                        {Op::BITWISE_OR, kI16},
                        {Op::BITWISE_XOR, kI32},
                        {Op::ARITHMETIC_RIGHT_SHIFT, kI8},
                        {Op::LOGICAL_LEFT_SHIFT, kI16},
                        {Op::LOGICAL_RIGHT_SHIFT, kI32},
                        {Op::LOGICAL_AND, kBool},
                        {Op::LOGICAL_OR, kBool},
                        {Op::LOGICAL_XOR, kBool}};
  for (const Case& c : cases) {
    EXPECT_EQ(op(c.op, {in(c.t, {2, 1, 3}), in(c.t, {1, 4, 3})}), (TensorType{c.t, {2, 4, 3}}))
        << op_name(c.op);
    EXPECT_EQ(op(c.op, {in(c.t, {}), in(c.t, {})}), (TensorType{c.t, {}})) << op_name(c.op);
  }
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::ADD, {in(kF32, {2, 3}), in(kF32, {3})});
      },
      "broadcast_shape requires equal ranks"));
  EXPECT_TRUE(FailsWith([&] { op(Op::ADD, {in(kF32, {2, 3}), in(kF32, {2, 4})}); }, "cannot be broadcast"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::SUB, {in(kF32, {2}), in(kI32, {2})});
      },
      "in_out_t = fp32_t (from 'input1')"));
}

TEST_F(InferTest, Mul) {
  EXPECT_EQ(op(Op::MUL, {in(kI8, {2, 3}), in(kI8, {2, 1}), zp(kI8, 0)}), (TensorType{kI32, {2, 3}}));
  EXPECT_EQ(op(Op::MUL, {in(kI16, {2}), in(kI16, {2}), zp(kI8, 0)}), (TensorType{kI32, {2}}));
  EXPECT_EQ(op(Op::MUL, {in(kI32, {2}), in(kI32, {1}), zp(kI8, 31)}), (TensorType{kI32, {2}}));
  EXPECT_EQ(op(Op::MUL, {in(kF16, {2}), in(kF16, {2}), zp(kI8, 0)}), (TensorType{kF16, {2}}));
  // A shift that is not a constant is accepted: it is checked when running.
  EXPECT_EQ(op(Op::MUL, {in(kI32, {2}), in(kI32, {2}), in(kI8, {1})}), (TensorType{kI32, {2}}));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::MUL, {in(kI32, {2}), in(kI32, {2}), zp(kI8, 64)});
      },
      "shift = 64 must be in [0, 63]"));
  EXPECT_TRUE(FailsWith([&] { op(Op::MUL, {in(kI32, {2}), in(kI32, {2}), zp(kI8, -1)}); }, "shift = -1"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::MUL, {in(kI8, {2}), in(kI8, {2}), zp(kI8, 1)});
      },
      "must be 0 when in_t is i8_t"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::MUL, {in(kI32, {2}), in(kI32, {2}), zp(kI16, 0)});
      },
      "must have element type i8_t"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::MUL, {in(kI32, {2}), in(kI32, {2}), cst(kI8, {2}, {0, 0})});
      },
      "must have shape [1]"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::MUL, {in(kI32, {2, 2}), in(kI32, {3, 2}), zp(kI8, 0)});
      },
      "cannot be broadcast"));
}

TEST_F(InferTest, Table) {
  EXPECT_EQ(op(Op::TABLE, {in(kI8, {2, 3}), in(kI8, {256})}), (TensorType{kI8, {2, 3}}));
  EXPECT_EQ(op(Op::TABLE, {in(kI16, {5}), in(kI16, {513})}), (TensorType{kI32, {5}}));
  EXPECT_TRUE(FailsWith([&] { op(Op::TABLE, {in(kI8, {2}), in(kI8, {255})}); }, "TABLE_SIZE = 256"));
  EXPECT_TRUE(FailsWith([&] { op(Op::TABLE, {in(kI16, {2}), in(kI16, {256})}); }, "TABLE_SIZE = 513"));
  EXPECT_TRUE(FailsWith([&] { op(Op::TABLE, {in(kI8, {2}), in(kI16, {513})}); }, "fit no row"));
}

TEST_F(InferTest, ElementwiseUnary) {
  for (Op o : {Op::ABS, Op::CEIL, Op::COS, Op::EXP, Op::FLOOR, Op::LOG, Op::RECIPROCAL, Op::RSQRT, Op::SIN}) {
    EXPECT_EQ(op(o, {in(kF32, {2, 5})}), (TensorType{kF32, {2, 5}})) << op_name(o);
  }
  EXPECT_EQ(op(Op::BITWISE_NOT, {in(kI16, {7})}), (TensorType{kI16, {7}}));
  EXPECT_EQ(op(Op::CLZ, {in(kI32, {})}), (TensorType{kI32, {}}));
  EXPECT_EQ(op(Op::LOGICAL_NOT, {in(kBool, {1, 2})}), (TensorType{kBool, {1, 2}}));
  EXPECT_EQ(op(Op::IDENTITY, {in(kI48, {3})}), (TensorType{kI48, {3}}));
}

TEST_F(InferTest, Negate) {
  EXPECT_EQ(op(Op::NEGATE, {in(kI8, {4}), zp(kI8, 3), zp(kI8, -1)}), (TensorType{kI8, {4}}));
  EXPECT_EQ(op(Op::NEGATE, {in(kF32, {4}), zp(kF32), zp(kF32)}), (TensorType{kF32, {4}}));
  EXPECT_TRUE(FailsWith([&] { op(Op::NEGATE, {in(kF32, {4}), zp(kF32, 1), zp(kF32)}); }, "input1_zp = "));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::NEGATE, {in(kI16, {4}), zp(kI16), zp(kI16, 2)});
      },
      "output_zp = 2 but must be 0"));
}

TEST_F(InferTest, Select) {
  EXPECT_EQ(op(Op::SELECT, {in(kBool, {2, 1}), in(kF32, {1, 3}), in(kF32, {2, 3})}),
            (TensorType{kF32, {2, 3}}));
  EXPECT_EQ(op(Op::SELECT, {in(kBool, {1}), in(kI8, {1}), in(kI8, {4})}), (TensorType{kI8, {4}}));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::SELECT, {in(kI8, {2}), in(kF32, {2}), in(kF32, {2})});
      },
      "must have element type bool_t"));
  EXPECT_TRUE(FailsWith([&] { op(Op::SELECT, {in(kBool, {2}), in(kF32, {2}), in(kF32, {3})}); }, "input3"));
}

TEST_F(InferTest, Comparisons) {
  for (Op o : {Op::EQUAL, Op::GREATER, Op::GREATER_EQUAL}) {
    EXPECT_EQ(op(o, {in(kI32, {2, 1}), in(kI32, {1, 3})}), (TensorType{kBool, {2, 3}})) << op_name(o);
    EXPECT_EQ(op(o, {in(kF16, {2}), in(kF16, {2})}), (TensorType{kBool, {2}})) << op_name(o);
  }
  EXPECT_TRUE(FailsWith([&] { op(Op::EQUAL, {in(kI8, {2}), in(kI8, {2})}); }, "fit no row"));
  EXPECT_TRUE(FailsWith([&] { op(Op::GREATER, {in(kI32, {2}), in(kI32, {3})}); }, "cannot be broadcast"));
}

// ---- Reductions ----

TEST_F(InferTest, Reductions) {
  struct Case {
    Op op;
    DType t;
  };
  const Case cases[] = {{Op::REDUCE_ALL, kBool}, {Op::REDUCE_ANY, kBool},    {Op::REDUCE_MAX, kI8},
                        {Op::REDUCE_MIN, kI16},  {Op::REDUCE_PRODUCT, kF32}, {Op::REDUCE_SUM, kI32}};
  for (const Case& c : cases) {
    EXPECT_EQ(op(c.op, {in(c.t, {2, 3, 4})}, {{"axis", I(1)}}), (TensorType{c.t, {2, 1, 4}}))
        << op_name(c.op);
    EXPECT_TRUE(FailsWith(
        [&] {
          op(c.op, {in(c.t, {2, 3})}, {{"axis", I(2)}});
        },
        "axis = 2 must satisfy 0 <= axis < rank(shape1)"))
        << op_name(c.op);
  }
  EXPECT_TRUE(FailsWith([&] { op(Op::REDUCE_SUM, {in(kF32, {})}, {{"axis", I(0)}}); }, "has rank 0"));
}

// ---- Data layout ----

TEST_F(InferTest, Concat) {
  EXPECT_EQ(op(Op::CONCAT, {in(kF32, {2, 3}), in(kF32, {4, 3}), in(kF32, {1, 3})}, {{"axis", I(0)}}),
            (TensorType{kF32, {7, 3}}));
  EXPECT_EQ(op(Op::CONCAT, {in(kBool, {2, 3})}, {{"axis", I(1)}}), (TensorType{kBool, {2, 3}}));
  EXPECT_TRUE(FailsWith([&] { op(Op::CONCAT, {}, {{"axis", I(0)}}); }, "at least one tensor"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::CONCAT, {in(kF32, {2, 3}), in(kF32, {2, 3})}, {{"axis", I(2)}});
      },
      "axis = 2"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::CONCAT, {in(kF32, {2, 3}), in(kF32, {2, 4})}, {{"axis", I(0)}});
      },
      "input1[1] [2,4] differs from input1[0] [2,3] in dimension 1"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::CONCAT, {in(kF32, {2, 3}), in(kF32, {2, 3, 1})}, {{"axis", I(0)}});
      },
      "input1[1] has rank 3"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::CONCAT, {in(kF32, {2, 3}), in(kF16, {2, 3})}, {{"axis", I(0)}});
      },
      "in_out_t"));
}

TEST_F(InferTest, Pad) {
  ValueId x = in(kF32, {2, 3});
  EXPECT_EQ(op(Op::PAD, {x, shp({1, 1, 0, 2}), zp(kF32, 1.5)}), (TensorType{kF32, {4, 5}}));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::PAD, {x, shp({1, -1, 0, 0}), zp(kF32)});
      },
      "negative value for dimension 0"));
  EXPECT_TRUE(FailsWith([&] { op(Op::PAD, {x, shp({1, 1}), zp(kF32)}); }, "must have 2 * rank(shape1) = 4"));
  EXPECT_TRUE(FailsWith([&] { op(Op::PAD, {x, shp({0, 0, 0, 0}), cst(kF32, {2}, {0, 0})}); }, "pad_const"));
  // A shape operand that is not a CONST_SHAPE leaves the output shape unknown.
  ValueId dyn = b.input("dynamic_padding", {DType::kShape, {4}});
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::PAD, {x, dyn, zp(kF32)});
      },
      "'padding' (%dynamic_padding) is not produced by CONST_SHAPE"));
}

TEST_F(InferTest, Reshape) {
  ValueId x = in(kI16, {2, 3, 4});
  EXPECT_EQ(op(Op::RESHAPE, {x, shp({6, 4})}), (TensorType{kI16, {6, 4}}));
  EXPECT_EQ(op(Op::RESHAPE, {in(kF32, {1, 1}), shp({})}), (TensorType{kF32, {}}));
  EXPECT_EQ(op(Op::RESHAPE, {in(kF32, {}), shp({1, 1, 1})}), (TensorType{kF32, {1, 1, 1}}));
  EXPECT_TRUE(FailsWith([&] { op(Op::RESHAPE, {x, shp({5, 5})}); }, "tensor_size(shape1) = 24"));
  EXPECT_TRUE(FailsWith([&] { op(Op::RESHAPE, {x, shp({24, 0})}); }, "dimension < 1"));
  EXPECT_TRUE(FailsWith([&] { op(Op::RESHAPE, {x, shp({24, -1})}); }, "dimension < 1"));
  EXPECT_TRUE(FailsWith([&] { op(Op::RESHAPE, {x, shp({2, 3, 4, 1, 1, 1, 1})}); }, "MAX_RANK"));
  ValueId dyn = b.input("dyn_shape", {DType::kShape, {2}});
  EXPECT_TRUE(FailsWith([&] { op(Op::RESHAPE, {x, dyn}); }, "not produced by CONST_SHAPE"));
}

TEST_F(InferTest, Reverse) {
  EXPECT_EQ(op(Op::REVERSE, {in(kI8, {2, 3})}, {{"axis", I(1)}}), (TensorType{kI8, {2, 3}}));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::REVERSE, {in(kI8, {2, 3})}, {{"axis", I(-1)}});
      },
      "axis = -1 must satisfy 0 <= axis < rank(shape)"));
}

TEST_F(InferTest, Slice) {
  ValueId x = in(kF32, {4, 5});
  EXPECT_EQ(op(Op::SLICE, {x, shp({1, 2}), shp({2, 3})}), (TensorType{kF32, {2, 3}}));
  EXPECT_EQ(op(Op::SLICE, {x, shp({0, 0}), shp({4, 5})}), (TensorType{kF32, {4, 5}}));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::SLICE, {x, shp({-1, 0}), shp({2, 2})});
      },
      "start[0] = -1 must be >= 0"));
  EXPECT_TRUE(FailsWith([&] { op(Op::SLICE, {x, shp({0, 0}), shp({2, 0})}); }, "size[1] = 0 must be > 0"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::SLICE, {x, shp({3, 0}), shp({2, 1})});
      },
      "start[0] + size[0] = 3 + 2 exceeds shape1[0] = 4"));
  EXPECT_TRUE(FailsWith([&] { op(Op::SLICE, {x, shp({0}), shp({2, 1})}); }, "length(start) = 1"));
  EXPECT_TRUE(FailsWith([&] { op(Op::SLICE, {x, shp({0, 0}), shp({1, 1, 1})}); }, "length(size) = 3"));
}

TEST_F(InferTest, Tile) {
  ValueId x = in(kBool, {2, 3});
  EXPECT_EQ(op(Op::TILE, {x, shp({2, 1})}), (TensorType{kBool, {4, 3}}));
  EXPECT_TRUE(FailsWith([&] { op(Op::TILE, {x, shp({2})}); }, "must have rank(shape1) = 2"));
  EXPECT_TRUE(FailsWith([&] { op(Op::TILE, {x, shp({2, 0})}); }, "multiples[1] = 0 must be >= 1"));
}

TEST_F(InferTest, Transpose) {
  ValueId x = in(kF32, {2, 3, 4});
  EXPECT_EQ(op(Op::TRANSPOSE, {x}, {{"perms", L({2, 0, 1})}}), (TensorType{kF32, {4, 2, 3}}));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::TRANSPOSE, {x}, {{"perms", L({0, 0, 1})}});
      },
      "is not a permutation: 0 is repeated"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::TRANSPOSE, {x}, {{"perms", L({0, 3, 1})}});
      },
      "value 3 is not in [0, rank(shape1) - 1]"));
  EXPECT_TRUE(FailsWith([&] { op(Op::TRANSPOSE, {x}, {{"perms", L({0, -1, 1})}}); }, "value -1"));
  EXPECT_TRUE(FailsWith([&] { op(Op::TRANSPOSE, {x}, {{"perms", L({1, 0})}}); }, "perms has 2 values"));
}

// ---- Scatter/gather and image ----

TEST_F(InferTest, GatherScatter) {
  ValueId values = in(kF16, {2, 5, 3});
  ValueId indices = in(kI32, {2, 4});
  EXPECT_EQ(op(Op::GATHER, {values, indices}), (TensorType{kF16, {2, 4, 3}}));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::GATHER, {values, in(kI32, {3, 4})});
      },
      "indices N = 3 differs from values N = 2"));
  EXPECT_EQ(op(Op::SCATTER, {values, indices, in(kF16, {2, 4, 3})}), (TensorType{kF16, {2, 5, 3}}));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::SCATTER, {values, indices, in(kF16, {2, 3, 3})});
      },
      "input W = 3 differs from indices W = 4"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::SCATTER, {values, indices, in(kF16, {2, 4, 2})});
      },
      "input C = 2 differs from values_in C = 3"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::SCATTER, {values, in(kI32, {1, 4}), in(kF16, {2, 4, 3})});
      },
      "indices N = 1"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::SCATTER, {values, indices, in(kF32, {2, 4, 3})});
      },
      "in_out_t = fp16_t"));
}

TEST_F(InferTest, Resize) {
  ValueId x8 = in(kI8, {1, 4, 4, 1});
  auto resize = [&](ValueId x, std::vector<int64_t> scale, std::vector<int64_t> offset,
                    std::vector<int64_t> border, ResizeMode mode) {
    return op(Op::RESIZE, {x, shp(scale), shp(offset), shp(border)},
              {{"mode", I(static_cast<int64_t>(mode))}});
  };
  // OH = ((4 - 1) * 2 - 0 + 0) / 1 + 1 = 7; the integer output type depends on the mode.
  EXPECT_EQ(resize(x8, {2, 1, 2, 1}, {0, 0}, {0, 0}, ResizeMode::kBilinear),
            (TensorType{kI32, {1, 7, 7, 1}}));
  EXPECT_EQ(resize(x8, {2, 1, 2, 1}, {0, 0}, {0, 0}, ResizeMode::kNearest), (TensorType{kI8, {1, 7, 7, 1}}));
  EXPECT_EQ(resize(in(kI16, {1, 4, 4, 1}), {2, 1, 2, 1}, {0, 0}, {0, 0}, ResizeMode::kBilinear),
            (TensorType{kI48, {1, 7, 7, 1}}));
  // Half-pixel upscale by 2: [OH,OW] = 2 * [IH,IW] with scale 4/2, offset -1, border 1.
  EXPECT_EQ(resize(in(kF32, {1, 3, 5, 2}), {4, 2, 4, 2}, {-1, -1}, {1, 1}, ResizeMode::kBilinear),
            (TensorType{kF32, {1, 6, 10, 2}}));
  // Downscale by 2: ((5 - 1) * 1 - 0 + 0) / 2 + 1 = 3.
  EXPECT_EQ(resize(in(kI8, {1, 5, 5, 1}), {1, 2, 1, 2}, {0, 0}, {0, 0}, ResizeMode::kNearest),
            (TensorType{kI8, {1, 3, 3, 1}}));
  EXPECT_TRUE(FailsWith(
      [&] {
        resize(x8, {0, 1, 2, 1}, {0, 0}, {0, 0}, ResizeMode::kNearest);
      },
      "scale values must be > 0"));
  EXPECT_TRUE(FailsWith(
      [&] {
        resize(x8, {4096, 1, 2, 1}, {0, 0}, {0, 0}, ResizeMode::kNearest);
      },
      "must be <= 2048"));
  EXPECT_TRUE(FailsWith(
      [&] {
        resize(x8, {1, 16, 1, 1}, {0, 0}, {0, 0}, ResizeMode::kNearest);
      },
      "scale_y_d must be < 16 * scale_y_n"));
  EXPECT_TRUE(FailsWith(
      [&] {
        resize(x8, {2, 1, 2, 1}, {-3, 0}, {0, 0}, ResizeMode::kNearest);
      },
      "offset_y = -3"));
  EXPECT_TRUE(FailsWith(
      [&] {
        resize(x8, {2, 1, 2, 1}, {0, 32}, {0, 0}, ResizeMode::kNearest);
      },
      "offset_x = 32"));
  EXPECT_TRUE(FailsWith(
      [&] {
        resize(x8, {2, 1, 2, 1}, {0, 0}, {2, 0}, ResizeMode::kNearest);
      },
      "border_y = 2"));
  EXPECT_TRUE(FailsWith(
      [&] {
        resize(x8, {2, 1, 2, 1}, {0, 0}, {0, -33}, ResizeMode::kNearest);
      },
      "border_x = -33"));
  EXPECT_TRUE(FailsWith(
      [&] {
        resize(x8, {2, 4, 2, 1}, {0, 0}, {0, 0}, ResizeMode::kNearest);
      },
      "(IH - 1) * scale_y_n - offset_y + border_y = 6 is not a multiple of scale_y_d = 4"));
  EXPECT_TRUE(FailsWith(
      [&] {
        resize(in(kF32, {1, 9000, 2, 1}), {2, 1, 1, 1}, {0, 0}, {0, 0}, ResizeMode::kNearest);
      },
      "must be < 16384"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::RESIZE, {x8, shp({2, 1, 2}), shp({0, 0}), shp({0, 0})}, {{"mode", I(1)}});
      },
      "must have 4 components"));
}

// ---- Type conversion ----

TEST_F(InferTest, CastNeedsExplicitOutputType) {
  ValueId x = in(kF32, {2, 3});
  EXPECT_TRUE(FailsWith([&] { op(Op::CAST, {x}); }, "the output type of CAST must be given explicitly"));
  EXPECT_TRUE(FailsWith([&] { op(Op::CAST, {in(kI48, {2})}); }, "fit no row"));
  // With an explicit type the builder does not infer.
  auto outs = b.op_multi(Op::CAST, {x}, {}, {"y"}, {TensorType{kI8, {2, 3}}});
  EXPECT_EQ(type(outs[0]), (TensorType{kI8, {2, 3}}));
}

class RescaleTest : public InferTest {
 protected:
  TensorType rescale(ValueId x, DType in_t, DType out_t, double in_zp, double out_zp, Attrs attrs,
                     int64_t nc = 1, DType mul_t = kI32) {
    std::vector<double> ones(static_cast<size_t>(nc), 1.0);
    return op(Op::RESCALE,
              {x, cst(mul_t, {nc}, ones), cst(kI8, {nc}, ones), zp(in_t, in_zp), zp(out_t, out_zp)},
              std::move(attrs));
  }
  static Attrs attrs(bool scale32, bool per_channel = false, bool in_u = false, bool out_u = false,
                     RoundingMode r = RoundingMode::kSingle) {
    return {{"scale32", AttrValue(scale32)},
            {"per_channel", AttrValue(per_channel)},
            {"input_unsigned", AttrValue(in_u)},
            {"output_unsigned", AttrValue(out_u)},
            {"rounding_mode", I(static_cast<int64_t>(r))}};
  }
};

TEST_F(RescaleTest, OutputTypeFromOutputZeroPoint) {
  ValueId x = in(kI32, {2, 3});
  EXPECT_EQ(rescale(x, kI32, kI8, 0, -5, attrs(true)), (TensorType{kI8, {2, 3}}));
  EXPECT_EQ(rescale(x, kI32, kI16, 0, 0, attrs(true, true, false, false, RoundingMode::kDouble), 3),
            (TensorType{kI16, {2, 3}}));
  EXPECT_EQ(rescale(in(kI8, {4}), kI8, kI16, 100, 0, attrs(false), 1, kI16), (TensorType{kI16, {4}}));
  // uint16 output with zero point 32768 (stored as the i16_t bits of 32768).
  EXPECT_EQ(rescale(in(kI8, {4}), kI8, kI16, 0, -32768, attrs(true, false, false, true)),
            (TensorType{kI16, {4}}));
  EXPECT_EQ(rescale(in(kI48, {4}), kI48, kI32, 0, 0, attrs(false), 1, kI16), (TensorType{kI32, {4}}));
}

TEST_F(RescaleTest, ErrorIfRules) {
  ValueId x32 = in(kI32, {2, 3});
  ValueId x16 = in(kI16, {2, 3});
  ValueId x8 = in(kI8, {2, 3});
  EXPECT_TRUE(FailsWith([&] { rescale(x32, kI32, kI8, 0, 0, attrs(true), 1, kI16); },
                        "mul_t must be i32_t when scale32 = true"));
  EXPECT_TRUE(FailsWith([&] { rescale(x32, kI32, kI8, 0, 0, attrs(false), 1, kI32); },
                        "mul_t must be i16_t when scale32 = false"));
  EXPECT_TRUE(FailsWith([&] { rescale(x32, kI32, kI8, 0, 0, attrs(true, true), 2); }, "NC = 3"));
  EXPECT_TRUE(FailsWith([&] { rescale(x32, kI32, kI8, 0, 0, attrs(true, false), 3); }, "NC = 1"));
  EXPECT_TRUE(FailsWith([&] { rescale(x32, kI32, kI8, 4, 0, attrs(true)); }, "input_zp = 4 but must be 0"));
  EXPECT_TRUE(FailsWith([&] { rescale(x8, kI8, kI16, 0, 7, attrs(true)); }, "output_zp = 7 but must be 0"));
  EXPECT_TRUE(FailsWith([&] { rescale(x16, kI16, kI8, 5, 0, attrs(true, false, true, false)); },
                        "must be 0 or 32768"));
  EXPECT_TRUE(FailsWith([&] { rescale(in(kI48, {2}), kI48, kI8, 0, 0, attrs(true)); },
                        "scale32 must be false when in_t is i48_t"));
  EXPECT_TRUE(FailsWith(
      [&] { rescale(x8, kI8, kI8, 0, 0, attrs(false, false, false, false, RoundingMode::kDouble), 1, kI16); },
      "DOUBLE_ROUND requires scale32"));
  EXPECT_TRUE(FailsWith([&] { rescale(x8, kI8, kI8, 0, 0, attrs(true, false, true, true)); },
                        "must not both be true"));
  EXPECT_TRUE(FailsWith([&] { rescale(x8, kI8, kI32, 0, 0, attrs(true, false, true, false)); },
                        "input_unsigned must be false when out_t is i32_t"));
  EXPECT_TRUE(FailsWith([&] { rescale(x32, kI32, kI8, 0, 0, attrs(true, false, false, true)); },
                        "output_unsigned must be false when in_t is i32_t"));
  EXPECT_TRUE(FailsWith([&] { rescale(x32, kI32, kI8, 0, 0, attrs(true, false, true, false)); },
                        "input_unsigned must be false when in_t is i32_t"));
  EXPECT_TRUE(FailsWith([&] { rescale(x8, kI8, kI32, 0, 0, attrs(true, false, false, true)); },
                        "output_unsigned must be false when out_t is i32_t"));
  EXPECT_TRUE(FailsWith([&] { rescale(in(kI8, {}), kI8, kI8, 0, 0, attrs(true, true)); },
                        "per_channel requires rank(input) >= 1"));
}

// ---- Data nodes, custom, control flow, variables ----

TEST_F(InferTest, ConstAndConstShape) {
  Node c;
  c.op = Op::CONST;
  c.attrs = make_attrs(Op::CONST,
                       {{"values", Tensor::from_ints({kI16, {2, 2}}, std::vector<int64_t>{1, 2, 3, 4})}});
  EXPECT_EQ(infer_output_types(b.graph(), c, nullptr), (std::vector<TensorType>{TensorType{kI16, {2, 2}}}));
  Node s;
  s.op = Op::CONST_SHAPE;
  s.attrs = make_attrs(Op::CONST_SHAPE, {{"values", L({4, 5, 6})}});
  EXPECT_EQ(infer_output_types(b.graph(), s, nullptr),
            (std::vector<TensorType>{TensorType{DType::kShape, {3}}}));
  Node bad;
  bad.op = Op::CONST;
  bad.attrs = make_attrs(Op::CONST, {{"values", Tensor()}});
  EXPECT_TRUE(FailsWith([&] { infer_output_types(b.graph(), bad, nullptr); }, "hold no data"));
  // The builder's helpers produce the same types.
  EXPECT_EQ(type(cst(kF32, {3}, {1, 2, 3})), (TensorType{kF32, {3}}));
  EXPECT_EQ(type(shp({1, 2})), (TensorType{DType::kShape, {2}}));
}

TEST_F(InferTest, CustomNeedsExplicitOutputTypes) {
  ValueId x = in(kF32, {2});
  Attrs a{{"operator_name", S("my_op")}, {"domain_name", S("acme")}, {"implementation_attrs", S("")}};
  EXPECT_TRUE(FailsWith([&] { b.op_multi(Op::CUSTOM, {x}, a, {"y"}); },
                        "the output types of CUSTOM must be given explicitly"));
  auto outs = b.op_multi(Op::CUSTOM, {x}, a, {"y"}, {TensorType{kF32, {2}}});
  EXPECT_EQ(type(outs[0]), (TensorType{kF32, {2}}));
}

class ControlFlowTest : public InferTest {
 protected:
  // A graph `name` whose single output is the IDENTITY of its single input of type `t`.
  static Graph identity_graph(const std::string& name, TensorType t) {
    GraphBuilder g(name);
    ValueId x = g.input("x", t);
    g.output(g.op(Op::IDENTITY, {x}));
    return g.finish();
  }
  Module m;
};

TEST_F(ControlFlowTest, CondIf) {
  TensorType t{kF32, {2, 2}};
  m.add_graph(identity_graph("then", t));
  m.add_graph(identity_graph("else", t));
  m.add_graph(identity_graph("else_i8", TensorType{kI8, {2, 2}}));
  b.set_module(&m);
  ValueId cond = in(kBool, {});
  ValueId x = in(kF32, {2, 2});
  Attrs a{{"then_graph", S("then")}, {"else_graph", S("else")}};
  EXPECT_EQ(multi(Op::COND_IF, {cond, x}, a), std::vector<TensorType>{t});
  EXPECT_TRUE(FailsWith(
      [&] {
        multi(Op::COND_IF, {in(kBool, {2}), x}, a);
      },
      "condition bool[2] must hold exactly one value"));
  EXPECT_TRUE(FailsWith([&] { multi(Op::COND_IF, {in(kI8, {1}), x}, a); }, "must have element type bool_t"));
  EXPECT_TRUE(FailsWith(
      [&] {
        multi(Op::COND_IF, {cond, in(kF32, {2, 3})}, a);
      },
      "the inputs of then_graph 'then'"));
  EXPECT_TRUE(FailsWith([&] { multi(Op::COND_IF, {cond, x, x}, a); }, "input_list has 2 tensors"));
  EXPECT_TRUE(FailsWith(
      [&] {
        multi(Op::COND_IF, {cond, x}, {{"then_graph", S("then")}, {"else_graph", S("nope")}});
      },
      "else_graph 'nope' is not a graph of the module"));
  Attrs mixed{{"then_graph", S("then")}, {"else_graph", S("else_i8")}};
  EXPECT_TRUE(FailsWith([&] { multi(Op::COND_IF, {cond, x}, mixed); }, "the inputs of else_graph 'else_i8'"));
  b.set_module(nullptr);
  EXPECT_TRUE(FailsWith([&] { multi(Op::COND_IF, {cond, x}, a); }, "no module was given"));
}

TEST_F(ControlFlowTest, CondIfBranchOutputsMustAgree) {
  // Same inputs, different outputs: then returns f32[2], else returns bool[2].
  GraphBuilder e("else_cmp");
  ValueId x = e.input("x", {kF32, {2}});
  e.output(e.op(Op::EQUAL, {x, x}));
  m.add_graph(identity_graph("then", {kF32, {2}}));
  m.add_graph(e.finish());
  b.set_module(&m);
  EXPECT_TRUE(FailsWith(
      [&] {
        multi(Op::COND_IF, {in(kBool, {1}), in(kF32, {2})},
              {{"then_graph", S("then")}, {"else_graph", S("else_cmp")}});
      },
      "the outputs of else_graph 'else_cmp'"));
}

TEST_F(ControlFlowTest, WhileLoop) {
  TensorType t{kI32, {1}};
  GraphBuilder c("cond");
  ValueId i = c.input("i", t);
  ValueId limit = c.constant("limit", Tensor::from_ints(t, std::vector<int64_t>{10}));
  c.output(c.op(Op::GREATER, {limit, i}));
  m.add_graph(c.finish());
  GraphBuilder body("body");
  ValueId j = body.input("i", t);
  ValueId one = body.constant("one", Tensor::from_ints(t, std::vector<int64_t>{1}));
  body.output(body.op(Op::ADD, {j, one}));
  m.add_graph(body.finish());
  m.add_graph(identity_graph("not_bool", t));
  GraphBuilder widen("widen");
  ValueId k = widen.input("i", t);
  widen.output(widen.op(Op::TILE, {k, widen.constant_shape("m", {2})}));
  m.add_graph(widen.finish());
  b.set_module(&m);

  ValueId x = in(kI32, {1});
  EXPECT_EQ(multi(Op::WHILE_LOOP, {x}, {{"cond_graph", S("cond")}, {"body_graph", S("body")}}),
            std::vector<TensorType>{t});
  EXPECT_TRUE(FailsWith(
      [&] {
        multi(Op::WHILE_LOOP, {x}, {{"cond_graph", S("not_bool")}, {"body_graph", S("body")}});
      },
      "must output one bool_t tensor of one element"));
  EXPECT_TRUE(FailsWith(
      [&] {
        multi(Op::WHILE_LOOP, {x}, {{"cond_graph", S("cond")}, {"body_graph", S("widen")}});
      },
      "the outputs of body_graph 'widen'"));
  EXPECT_TRUE(FailsWith(
      [&] {
        multi(Op::WHILE_LOOP, {in(kI32, {2})}, {{"cond_graph", S("cond")}, {"body_graph", S("body")}});
      },
      "the inputs of cond_graph 'cond'"));
  EXPECT_TRUE(FailsWith(
      [&] {
        multi(Op::WHILE_LOOP, {x}, {{"cond_graph", S("missing")}, {"body_graph", S("body")}});
      },
      "cond_graph 'missing' is not a graph of the module"));
}

TEST_F(InferTest, Variables) {
  auto declare = [&](const std::string& name, std::vector<int64_t> shape, VarType t, Tensor init) {
    return b.op_multi(Op::VARIABLE, {},
                      {{"name", S(name)},
                       {"var_shape", L(std::move(shape))},
                       {"type", I(static_cast<int64_t>(t))},
                       {"initial_value", std::move(init)}},
                      {});
  };
  EXPECT_TRUE(declare("state", {2, 2}, VarType::kFp32, Tensor::zeros({kF32, {2, 2}})).empty());
  EXPECT_TRUE(declare("counter", {1}, VarType::kInt8, Tensor()).empty());  // no initial value
  EXPECT_EQ(type(b.op(Op::VARIABLE_READ, {}, {{"name", S("state")}})), (TensorType{kF32, {2, 2}}));
  EXPECT_EQ(type(b.op(Op::VARIABLE_READ, {}, {{"name", S("counter")}})), (TensorType{kI8, {1}}));
  EXPECT_TRUE(b.op_multi(Op::VARIABLE_WRITE, {in(kF32, {2, 2})}, {{"name", S("state")}}, {}).empty());

  EXPECT_TRUE(FailsWith(
      [&] {
        b.op_multi(Op::VARIABLE_WRITE, {in(kF32, {2, 3})}, {{"name", S("state")}}, {});
      },
      "does not match variable 'state' declared as f32[2,2]"));
  EXPECT_TRUE(FailsWith(
      [&] {
        b.op_multi(Op::VARIABLE_WRITE, {in(kF32, {2, 2})}, {{"name", S("other")}}, {});
      },
      "no VARIABLE declares 'other'"));
  EXPECT_TRUE(FailsWith(
      [&] {
        b.op(Op::VARIABLE_READ, {}, {{"name", S("missing")}});
      },
      "no VARIABLE declares 'missing'"));
  EXPECT_TRUE(FailsWith(
      [&] {
        declare("v1", {2, 2}, static_cast<VarType>(9), Tensor());
      },
      "not a var_t value"));
  EXPECT_TRUE(FailsWith([&] { declare("v3", {2, 0}, VarType::kFp32, Tensor()); }, "dimension < 1"));
}

TEST_F(InferTest, ShapeArithmeticDoesNotOverflow) {
  ValueId x = in(kF32, {2, 3});
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::TILE, {x, shp({int64_t{1} << 62, 1})});
      },
      "outside the tensor size range"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::TILE, {x, shp({int64_t{1} << 61, 1})});
      },
      "with more than 2^44 elements"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::PAD, {x, shp({INT64_MAX, 0, 0, 0}), zp(kF32)});
      },
      "outside the tensor size range"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::RESHAPE, {x, shp({int64_t{1} << 40, int64_t{1} << 40})});
      },
      "more elements"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::ABS, {in(kF32, {int64_t{1} << 40, int64_t{1} << 40})});
      },
      "more than 2^44 elements"));
  ValueId img = in(kF32, {1, 8, 8, 3});
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::CONV2D, {img, in(kF32, {1, 3, 3, 3}), in(kF32, {1}), zp(kF32), zp(kF32)},
           {{"pad", L({0, 0, 0, 0})},
            {"stride", L({1, 1})},
            {"dilation", L({INT64_MAX, 1})},
            {"acc_type", Acc(AccType::kFp32)}});
      },
      "output size OH is outside the tensor size range"));
  EXPECT_TRUE(FailsWith(
      [&] {
        op(Op::TRANSPOSE_CONV2D, {img, in(kF32, {1, 3, 3, 3}), in(kF32, {1}), zp(kF32), zp(kF32)},
           {{"out_pad", L({0, 0, 0, 0})}, {"stride", L({INT64_MAX, 1})}, {"acc_type", Acc(AccType::kFp32)}});
      },
      "output size OH is outside the tensor size range"));
}

TEST_F(InferTest, EveryOperatorRejectsAMalformedNode) {
  // A node with no operands and integer zeros for every attribute is malformed for every operator
  // (wrong operand count, or an attribute of the wrong kind): each reports a kVerify error that names
  // the operator, none falls through to an internal error or a crash.
  for (const OpDef& d : all_op_defs()) {
    Node n;
    n.op = d.op;
    n.attrs.resize(d.attrs.size(), AttrValue(int64_t{0}));
    EXPECT_TRUE(FailsWith([&] { infer_output_types(b.graph(), n, nullptr); }, std::string(d.name) + ": "))
        << d.name;
  }
}

}  // namespace
}  // namespace weft
