// Data-layout kernels: CONCAT, PAD, RESHAPE, REVERSE, SLICE, TILE, TRANSPOSE, GATHER, SCATTER,
// CONST, IDENTITY, CONST_SHAPE. The movement kernels are checked on every supported type with
// values every type represents exactly; the expected outputs are written as the input element
// each output position reads (worked out by hand from the pseudocode).
#include <cmath>
#include <functional>
#include <limits>

#include "reference/ref_test_util.h"

namespace weft::testing {
namespace {

const DType kAllMoveTypes[] = {DType::kBool,    DType::kInt8, DType::kInt16, DType::kInt32, DType::kFp8E4M3,
                               DType::kFp8E5M2, DType::kFp16, DType::kBf16,  DType::kFp32};

// n distinct-enough values representable in every type (bool: alternating; others: -3..4).
std::vector<double> sample(DType t, int64_t n, int salt = 0) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i)
    v.push_back(t == DType::kBool ? double((i + salt) % 2) : double((i + salt) % 8 - 3));
  return v;
}

// Expected tensor: element j is src[pick[j]] (pick -1: the value `fill`).
Tensor pick_from(DType t, Shape s, const std::vector<double>& src, const std::vector<int>& pick,
                 double fill = 0) {
  std::vector<double> v;
  for (int p : pick) v.push_back(p < 0 ? fill : src[static_cast<size_t>(p)]);
  return T(t, std::move(s), v);
}

void expect_runtime_error(const std::function<void()>& f) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime) << e.what();
  }
}

TEST(Concat, AllTypesBothAxes) {
  for (DType t : kAllMoveTypes) {
    SCOPED_TRACE(dtype_name(t));
    std::vector<double> a = sample(t, 4), b = sample(t, 2, 5);
    Tensor ta = T(t, {2, 2}, a), tb = T(t, {2, 1}, b);
    // axis 1: rows [a0 a1 b0] [a2 a3 b1]
    Tensor got =
        run1(Op::CONCAT, {Operand::input(ta), Operand::input(tb)}, {{"axis", int64_t{1}}}, {t, {2, 3}});
    expect_tensor_eq(got, T(t, {2, 3}, {a[0], a[1], b[0], a[2], a[3], b[1]}));
    // axis 0 with three inputs: [a; b^T-shaped; a]
    Tensor tc = T(t, {1, 2}, b);
    got = run1(Op::CONCAT, {Operand::input(ta), Operand::input(tc), Operand::input(ta)},
               {{"axis", int64_t{0}}}, {t, {5, 2}});
    expect_tensor_eq(got, T(t, {5, 2}, {a[0], a[1], a[2], a[3], b[0], b[1], a[0], a[1], a[2], a[3]}));
  }
}

TEST(Concat, EmptyInputAndMismatch) {
  Tensor a = F32({1, 2}, {1, 2}), e = F32({0, 2}, {});
  expect_tensor_eq(run1(Op::CONCAT, {Operand::input(e), Operand::input(a)}, {{"axis", int64_t{0}}},
                        {DType::kFp32, {1, 2}}),
                   a);
  EXPECT_THROW(run1(Op::CONCAT, {Operand::input(a), Operand::input(a)}, {{"axis", int64_t{0}}},
                    {DType::kFp32, {3, 2}}),
               Error);
}

TEST(Pad, AllTypes) {
  for (DType t : kAllMoveTypes) {
    SCOPED_TRACE(dtype_name(t));
    std::vector<double> a = sample(t, 2, 1);
    const double pc = t == DType::kBool ? 1 : -2;
    // [1,2] padded [[1,0],[0,1]] -> [2,3]: row 0 all pad, row 1 = a0 a1 pad.
    Tensor got = run1(
        Op::PAD,
        {Operand::input(T(t, {1, 2}, a)), Operand::shape({1, 0, 0, 1}), Operand::constant(T(t, {1}, {pc}))},
        {}, {t, {2, 3}});
    expect_tensor_eq(got, pick_from(t, {2, 3}, a, {-1, -1, -1, 0, 1, -1}, pc));
  }
}

TEST(Pad, Rank3NegativeZeroConstAndErrors) {
  // pad_const -0.0 keeps its sign; [1,1,2] with padding [0,0, 1,1, 0,1] -> [1,3,3].
  Tensor got = run1(Op::PAD,
                    {Operand::input(F32({1, 1, 2}, {5, 6})), Operand::shape({0, 0, 1, 1, 0, 1}),
                     Operand::constant(F32({1}, {-0.0}))},
                    {}, {DType::kFp32, {1, 3, 3}});
  expect_tensor_eq(got, F32({1, 3, 3}, {-0.0, -0.0, -0.0, 5, 6, -0.0, -0.0, -0.0, -0.0}));
  EXPECT_THROW(
      run1(Op::PAD,
           {Operand::input(F32({2}, {1, 2})), Operand::shape({-1, 2}), Operand::constant(F32({1}, {0}))}, {},
           {DType::kFp32, {3}}),
      Error);
  EXPECT_THROW(
      run1(Op::PAD,
           {Operand::input(F32({2}, {1, 2})), Operand::shape({1, 1}), Operand::constant(F32({1}, {0}))}, {},
           {DType::kFp32, {5}}),
      Error);
}

TEST(Pad, AllSidesRank2) {
  // [[1,2],[3,4]] with padding [1,1, 2,1] and pad_const 9 -> [4,5].
  Tensor got = run1(Op::PAD,
                    {Operand::input(I(DType::kInt32, {2, 2}, {1, 2, 3, 4})), Operand::shape({1, 1, 2, 1}),
                     Operand::constant(I(DType::kInt32, {1}, {9}))},
                    {}, {DType::kInt32, {4, 5}});
  expect_tensor_eq(got, I(DType::kInt32, {4, 5}, {9, 9, 9, 9, 9,  //
                                                  9, 9, 1, 2, 9,  //
                                                  9, 9, 3, 4, 9,  //
                                                  9, 9, 9, 9, 9}));
  // Padding an empty dimension gives only pad values.
  got =
      run1(Op::PAD,
           {Operand::input(F32({1, 0}, {})), Operand::shape({0, 1, 1, 1}), Operand::constant(F32({1}, {-1}))},
           {}, {DType::kFp32, {2, 2}});
  expect_tensor_eq(got, F32({2, 2}, {-1, -1, -1, -1}));
}

// Padding that leaves the trailing dimensions alone (NHWC padded along H and W, or along N and H
// only: rows of C or of W * C values), rows longer than the kernel's 4096-value run of pad values,
// and every side at once, each against the padded tensor built element by element here.
TEST(Pad, TrailingUnpaddedDimensionsAndLongRows) {
  struct Case {
    Shape in;
    std::vector<int64_t> padding;
  };
  for (const Case& c : {Case{{1, 3, 4, 5}, {0, 0, 1, 2, 2, 1, 0, 0}}, Case{{2, 3, 4, 5}, {1, 0, 0, 2, 0, 0, 0, 0}},
                        Case{{5000}, {4100, 4200}}, Case{{2, 4500}, {1, 1, 0, 0}}, Case{{2, 3, 4}, {1, 1, 2, 0, 1, 3}}}) {
    SCOPED_TRACE(shape_str(c.in));
    const int rank = static_cast<int>(c.in.size());
    Shape out_shape(c.in);
    for (int i = 0; i < rank; ++i) out_shape[static_cast<size_t>(i)] += c.padding[2 * i] + c.padding[2 * i + 1];
    int64_t n_in = 1, n_out = 1;
    for (int64_t d : c.in) n_in *= d;
    for (int64_t d : out_shape) n_out *= d;
    std::vector<double> a(static_cast<size_t>(n_in));
    for (int64_t i = 0; i < n_in; ++i) a[static_cast<size_t>(i)] = static_cast<double>(i % 1000) + 0.5;
    const double pc = -7.25;
    std::vector<double> want(static_cast<size_t>(n_out));
    for (int64_t o = 0; o < n_out; ++o) {
      int64_t rem = o, src = 0, stride = 1;
      bool pad = false;
      for (int i = rank - 1; i >= 0; --i) {
        const int64_t ext = out_shape[static_cast<size_t>(i)], j = rem % ext - c.padding[2 * i];
        rem /= ext;
        if (j < 0 || j >= c.in[static_cast<size_t>(i)]) pad = true;
        src += j * stride;
        stride *= c.in[static_cast<size_t>(i)];
      }
      want[static_cast<size_t>(o)] = pad ? pc : a[static_cast<size_t>(src)];
    }
    Tensor got = run1(Op::PAD, {Operand::input(F32(c.in, a)), Operand::shape(c.padding), Operand::constant(F32({1}, {pc}))},
                      {}, {DType::kFp32, out_shape});
    expect_tensor_eq(got, F32(out_shape, want));
  }
}

TEST(Reshape, AllTypesShareTheBuffer) {
  for (DType t : kAllMoveTypes) {
    SCOPED_TRACE(dtype_name(t));
    std::vector<double> a = sample(t, 6);
    Tensor in = T(t, {2, 3}, a);
    Tensor got = run1(Op::RESHAPE, {Operand::input(in), Operand::shape({3, 1, 2})}, {}, {t, {3, 1, 2}});
    expect_tensor_eq(got, T(t, {3, 1, 2}, a));
    EXPECT_TRUE(got.buffer().same_storage(in.buffer()));
  }
  // Rank 0 <-> rank 1.
  Tensor s = run1(Op::RESHAPE, {Operand::input(F32({1}, {7})), Operand::shape({})}, {}, {DType::kFp32, {}});
  expect_tensor_eq(s, F32({}, {7}));
  EXPECT_THROW(
      run1(Op::RESHAPE, {Operand::input(F32({2}, {1, 2})), Operand::shape({3})}, {}, {DType::kFp32, {3}}),
      Error);
}

TEST(Reverse, AllTypesEachAxis) {
  for (DType t : kAllMoveTypes) {
    SCOPED_TRACE(dtype_name(t));
    std::vector<double> a = sample(t, 6);
    Tensor in = T(t, {2, 3}, a);
    expect_tensor_eq(run1(Op::REVERSE, {Operand::input(in)}, {{"axis", int64_t{1}}}, {t, {2, 3}}),
                     pick_from(t, {2, 3}, a, {2, 1, 0, 5, 4, 3}));
    expect_tensor_eq(run1(Op::REVERSE, {Operand::input(in)}, {{"axis", int64_t{0}}}, {t, {2, 3}}),
                     pick_from(t, {2, 3}, a, {3, 4, 5, 0, 1, 2}));
  }
  EXPECT_THROW(
      run1(Op::REVERSE, {Operand::input(F32({2}, {1, 2}))}, {{"axis", int64_t{1}}}, {DType::kFp32, {2}}),
      Error);
}

TEST(Slice, AllTypes) {
  for (DType t : kAllMoveTypes) {
    SCOPED_TRACE(dtype_name(t));
    std::vector<double> a = sample(t, 8);
    // [2,4] start [1,1] size [1,2] -> elements (1,1),(1,2) = 5, 6.
    Tensor got =
        run1(Op::SLICE, {Operand::input(T(t, {2, 4}, a)), Operand::shape({1, 1}), Operand::shape({1, 2})}, {},
             {t, {1, 2}});
    expect_tensor_eq(got, pick_from(t, {1, 2}, a, {5, 6}));
  }
}

TEST(Slice, Rank3AndOutOfRange) {
  std::vector<double> a;
  for (int i = 0; i < 24; ++i) a.push_back(i);
  // [2,3,4] start [1,0,2] size [1,3,2]: offsets 12 + 4*y + 2 + x.
  Tensor got = run1(Op::SLICE,
                    {Operand::input(F32({2, 3, 4}, a)), Operand::shape({1, 0, 2}), Operand::shape({1, 3, 2})},
                    {}, {DType::kFp32, {1, 3, 2}});
  expect_tensor_eq(got, F32({1, 3, 2}, {14, 15, 18, 19, 22, 23}));
  EXPECT_THROW(
      run1(Op::SLICE, {Operand::input(F32({4}, {1, 2, 3, 4})), Operand::shape({3}), Operand::shape({2})}, {},
           {DType::kFp32, {2}}),
      Error);
  EXPECT_THROW(
      run1(Op::SLICE, {Operand::input(F32({4}, {1, 2, 3, 4})), Operand::shape({-1}), Operand::shape({2})}, {},
           {DType::kFp32, {2}}),
      Error);
  // ERROR_IF(size <= 0): an empty slice is rejected.
  EXPECT_THROW(
      run1(Op::SLICE, {Operand::input(F32({4}, {1, 2, 3, 4})), Operand::shape({1}), Operand::shape({0})}, {},
           {DType::kFp32, {0}}),
      Error);
}

TEST(Tile, AllTypes) {
  for (DType t : kAllMoveTypes) {
    SCOPED_TRACE(dtype_name(t));
    std::vector<double> a = sample(t, 3);
    // [1,3] x [2,2] -> [2,6]: every row is a0 a1 a2 a0 a1 a2.
    Tensor got = run1(Op::TILE, {Operand::input(T(t, {1, 3}, a)), Operand::shape({2, 2})}, {}, {t, {2, 6}});
    expect_tensor_eq(got, pick_from(t, {2, 6}, a, {0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2}));
  }
  EXPECT_THROW(
      run1(Op::TILE, {Operand::input(F32({2}, {1, 2})), Operand::shape({2})}, {}, {DType::kFp32, {5}}),
      Error);
}

TEST(Tile, ColumnRepeatAndRank3) {
  // [2,1] x [1,3] -> [[a0,a0,a0],[a1,a1,a1]].
  expect_tensor_eq(run1(Op::TILE, {Operand::input(F32({2, 1}, {4, -5})), Operand::shape({1, 3})}, {},
                        {DType::kFp32, {2, 3}}),
                   F32({2, 3}, {4, 4, 4, -5, -5, -5}));
  // [1,2,1] x [2,1,2] -> [2,2,2]: out[i][j][k] = in[0][j][0].
  expect_tensor_eq(
      run1(Op::TILE, {Operand::input(I(DType::kInt16, {1, 2, 1}, {7, 8})), Operand::shape({2, 1, 2})}, {},
           {DType::kInt16, {2, 2, 2}}),
      I(DType::kInt16, {2, 2, 2}, {7, 7, 8, 8, 7, 7, 8, 8}));
}

TEST(Transpose, AllTypesAndRank3) {
  for (DType t : kAllMoveTypes) {
    SCOPED_TRACE(dtype_name(t));
    std::vector<double> a = sample(t, 6);
    // [2,3] -> [3,2]: out[i][j] = in[j][i].
    Tensor got = run1(Op::TRANSPOSE, {Operand::input(T(t, {2, 3}, a))},
                      {{"perms", std::vector<int64_t>{1, 0}}}, {t, {3, 2}});
    expect_tensor_eq(got, pick_from(t, {3, 2}, a, {0, 3, 1, 4, 2, 5}));
  }
  std::vector<double> a;
  for (int i = 0; i < 24; ++i) a.push_back(i);
  // in [2,3,4], perms [2,0,1] -> out [4,2,3]; out[i][j][k] = in[j][k][i] = 12j + 4k + i.
  Tensor got = run1(Op::TRANSPOSE, {Operand::input(F32({2, 3, 4}, a))},
                    {{"perms", std::vector<int64_t>{2, 0, 1}}}, {DType::kFp32, {4, 2, 3}});
  std::vector<double> want;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k) want.push_back(12 * j + 4 * k + i);
  expect_tensor_eq(got, F32({4, 2, 3}, want));
  // NHWC [1,2,2,3] -> NCHW [1,3,2,2] with perms [0,3,1,2]: out[0][c][h][w] = in[0][h][w][c] = 6h + 3w + c.
  std::vector<double> nhwc;
  for (int i = 0; i < 12; ++i) nhwc.push_back(i);
  std::vector<double> nchw;
  for (int c = 0; c < 3; ++c)
    for (int h = 0; h < 2; ++h)
      for (int w = 0; w < 2; ++w) nchw.push_back(6 * h + 3 * w + c);
  expect_tensor_eq(run1(Op::TRANSPOSE, {Operand::input(T(DType::kInt16, {1, 2, 2, 3}, nhwc))},
                        {{"perms", std::vector<int64_t>{0, 3, 1, 2}}}, {DType::kInt16, {1, 3, 2, 2}}),
                   T(DType::kInt16, {1, 3, 2, 2}, nchw));
  EXPECT_THROW(run1(Op::TRANSPOSE, {Operand::input(F32({1, 2}, {1, 2}))},
                    {{"perms", std::vector<int64_t>{0, 0}}}, {DType::kFp32, {1, 2}}),
               Error);
}

const DType kGatherTypes[] = {DType::kInt8,    DType::kInt16, DType::kInt32, DType::kFp8E4M3,
                              DType::kFp8E5M2, DType::kFp16,  DType::kBf16,  DType::kFp32};

TEST(Gather, AllTypes) {
  for (DType t : kGatherTypes) {
    SCOPED_TRACE(dtype_name(t));
    std::vector<double> v = sample(t, 8);  // values [N=2,K=2,C=2]
    Tensor idx = I(DType::kInt32, {2, 3}, {1, 0, 1, 0, 0, 1});
    Tensor got =
        run1(Op::GATHER, {Operand::input(T(t, {2, 2, 2}, v)), Operand::input(idx)}, {}, {t, {2, 3, 2}});
    // row (n, k) starts at 4n + 2k.
    expect_tensor_eq(got, pick_from(t, {2, 3, 2}, v, {2, 3, 0, 1, 2, 3, 4, 5, 4, 5, 6, 7}));
  }
}

TEST(Gather, RequireIndexInRange) {
  Tensor vals = F32({1, 2, 1}, {1, 2});
  for (int64_t bad : {-1, 2}) {
    expect_runtime_error([&] {
      run1(Op::GATHER, {Operand::input(vals), Operand::input(I(DType::kInt32, {1, 1}, {bad}))}, {},
           {DType::kFp32, {1, 1, 1}});
    });
  }
}

TEST(Scatter, AllTypes) {
  for (DType t : kGatherTypes) {
    SCOPED_TRACE(dtype_name(t));
    std::vector<double> vin = sample(t, 6);    // [N=1,K=3,C=2]
    std::vector<double> in = sample(t, 4, 5);  // [N=1,W=2,C=2]
    Tensor idx = I(DType::kInt32, {1, 2}, {2, 0});
    Tensor got =
        run1(Op::SCATTER,
             {Operand::input(T(t, {1, 3, 2}, vin)), Operand::input(idx), Operand::input(T(t, {1, 2, 2}, in))},
             {}, {t, {1, 3, 2}});
    // k=0 <- w=1, k=1 unchanged, k=2 <- w=0.
    expect_tensor_eq(got, T(t, {1, 3, 2}, {in[2], in[3], vin[2], vin[3], in[0], in[1]}));
  }
}

TEST(Scatter, RequireRangeAndSingleWrite) {
  Tensor vin = F32({1, 2, 1}, {1, 2}), in = F32({1, 2, 1}, {3, 4});
  expect_runtime_error([&] {
    run1(Op::SCATTER,
         {Operand::input(vin), Operand::input(I(DType::kInt32, {1, 2}, {0, 0})), Operand::input(in)}, {},
         {DType::kFp32, {1, 2, 1}});
  });
  expect_runtime_error([&] {
    run1(Op::SCATTER,
         {Operand::input(vin), Operand::input(I(DType::kInt32, {1, 2}, {0, 2})), Operand::input(in)}, {},
         {DType::kFp32, {1, 2, 1}});
  });
  // The same k in different batches is fine.
  Tensor vin2 = F32({2, 1, 1}, {1, 2}), in2 = F32({2, 1, 1}, {7, 8});
  expect_tensor_eq(
      run1(Op::SCATTER,
           {Operand::input(vin2), Operand::input(I(DType::kInt32, {2, 1}, {0, 0})), Operand::input(in2)}, {},
           {DType::kFp32, {2, 1, 1}}),
      F32({2, 1, 1}, {7, 8}));
}

TEST(Const, SharesStorageAcrossRuns) {
  Tensor weights = F32({2, 2}, {1, 2, 3, 4});
  GraphBuilder b("main");
  ValueId c = b.constant("w", weights);
  b.output(c);
  Module m(b.finish());
  InterpreterOptions opt;
  opt.verify = false;
  Interpreter interp(m, opt);
  for (int run = 0; run < 2; ++run) {
    auto out = interp.run(std::vector<Tensor>{});
    ASSERT_EQ(out.size(), 1u);
    expect_tensor_eq(out[0], weights);
    EXPECT_TRUE(out[0].buffer().same_storage(weights.buffer()));
  }
}

TEST(Const, AllTypesViaRun) {
  for (DType t : {DType::kInt4, DType::kInt8, DType::kInt16, DType::kInt32, DType::kInt48, DType::kBool,
                  DType::kFp8E4M3, DType::kFp8E5M2, DType::kFp16, DType::kBf16, DType::kFp32}) {
    SCOPED_TRACE(dtype_name(t));
    Tensor v = T(t, {3}, sample(t, 3));
    Tensor got = run1(Op::CONST, {}, {{"values", v}}, v.type());
    expect_tensor_eq(got, v);
    EXPECT_TRUE(got.buffer().same_storage(v.buffer()));
  }
  EXPECT_THROW(run1(Op::CONST, {}, {{"values", F32({2}, {1, 2})}}, {DType::kFp32, {3}}), Error);
}

TEST(Identity, SharesInput) {
  for (DType t : {DType::kInt4, DType::kInt8, DType::kInt48, DType::kBool, DType::kFp16, DType::kFp32}) {
    Tensor in = T(t, {2}, sample(t, 2));
    Tensor got = run1(Op::IDENTITY, {Operand::input(in)}, {}, in.type());
    expect_tensor_eq(got, in);
    EXPECT_TRUE(got.buffer().same_storage(in.buffer()));
  }
  EXPECT_THROW(run1(Op::IDENTITY, {Operand::input(F32({2}, {1, 2}))}, {}, {DType::kFp16, {2}}), Error);
}

TEST(ConstShape, Values) {
  Tensor got =
      run1(Op::CONST_SHAPE, {}, {{"values", std::vector<int64_t>{3, -1, 1LL << 40}}}, {DType::kShape, {3}});
  EXPECT_EQ(got.to_ints(), (std::vector<int64_t>{3, -1, 1LL << 40}));
  Tensor empty = run1(Op::CONST_SHAPE, {}, {{"values", std::vector<int64_t>{}}}, {DType::kShape, {0}});
  EXPECT_EQ(empty.num_elements(), 0);
  EXPECT_THROW(run1(Op::CONST_SHAPE, {}, {{"values", std::vector<int64_t>{1}}}, {DType::kShape, {2}}), Error);
}

}  // namespace
}  // namespace weft::testing
