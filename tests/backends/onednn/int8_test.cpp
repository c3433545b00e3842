// int8 convolutions and matmuls on oneDNN against the reference backend: results must be
// identical (bit for bit), and nodes whose accumulators could leave fp32's exact integer range are
// declined with a reason.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "weft/graph.h"
#include "weft/runtime.h"

namespace weft {
namespace {

const BackendOptions kOneDnnFirst{.backends = {"onednn", "reference"}};
const BackendOptions kRefOnly{.backends = {"reference"}};

Tensor random_int(DType t, Shape s, int64_t lo, int64_t hi, std::mt19937& rng) {
  std::uniform_int_distribution<int64_t> d(lo, hi);
  std::vector<int64_t> v(static_cast<size_t>(shape_elements(s)));
  for (int64_t& x : v) x = d(rng);
  return Tensor::from_ints({t, std::move(s)}, v);
}
Tensor scalar_i8(int64_t v) { return Tensor::from_ints({DType::kInt8, {1}}, std::vector<int64_t>{v}); }

// oneDNN's int8 path is exact only with VNNI; elsewhere the backend declines int8 nodes (with
// this reason) and the offload expectations below cannot hold.
bool no_vnni(const std::string& explanation) { return explanation.find("this CPU has no VNNI") != std::string::npos; }

// Runs `m` on both backends; expects identical outputs and returns the oneDNN-first explanation.
std::string expect_identical(const Module& m, const std::vector<Tensor>& in) {
  auto a = Model::from_module(m, kOneDnnFirst);
  auto b = Model::from_module(m, kRefOnly);
  Context ca(a), cb(b);
  auto oa = ca.run(in);
  auto ob = cb.run(in);
  EXPECT_EQ(oa.size(), ob.size());
  for (size_t i = 0; i < oa.size() && i < ob.size(); ++i) EXPECT_TRUE(oa[i].identical(ob[i])) << "output " << i;
  return a->explain();
}

struct ConvCase {
  int64_t n, h, w, ic, oc, k, stride, pad_t, pad_b, pad_l, pad_r, zp;
};

TEST(OneDnnInt8, Conv2dMatchesReferenceExactly) {
  std::mt19937 rng(7);
  const ConvCase cases[] = {
      {1, 8, 8, 8, 16, 3, 1, 1, 1, 1, 1, 0},   {2, 9, 7, 8, 16, 3, 2, 1, 1, 2, 2, -7},
      {1, 6, 6, 3, 5, 1, 1, 0, 0, 0, 0, 12},   {1, 11, 5, 17, 4, 5, 1, 2, 2, 2, 2, -128},
      {1, 7, 9, 4, 32, 3, 2, 0, 0, 0, 0, 127},
  };
  for (const ConvCase& c : cases) {
    SCOPED_TRACE("conv " + std::to_string(c.h) + "x" + std::to_string(c.w) + " k" + std::to_string(c.k) + " zp " +
                 std::to_string(c.zp));
    GraphBuilder b;
    ValueId x = b.input("x", {DType::kInt8, {c.n, c.h, c.w, c.ic}});
    ValueId w = b.constant("w", random_int(DType::kInt8, {c.oc, c.k, c.k, c.ic}, -128, 127, rng));
    ValueId bias = b.constant("b", random_int(DType::kInt32, {c.oc}, -5000, 5000, rng));
    ValueId izp = b.constant("izp", scalar_i8(c.zp));
    ValueId wzp = b.constant("wzp", scalar_i8(0));
    b.output(b.op(Op::CONV2D, {x, w, bias, izp, wzp},
                  {{"pad", std::vector<int64_t>{c.pad_t, c.pad_b, c.pad_l, c.pad_r}},
                   {"stride", std::vector<int64_t>{c.stride, c.stride}},
                   {"dilation", std::vector<int64_t>{1, 1}},
                   {"acc_type", int64_t{static_cast<int64_t>(AccType::kInt32)}}},
                  "y"));
    Module m(b.finish());
    std::string ex = expect_identical(m, {random_int(DType::kInt8, {c.n, c.h, c.w, c.ic}, -128, 127, rng)});
    if (no_vnni(ex)) GTEST_SKIP() << "int8 offload needs VNNI:\n" << ex;
    EXPECT_NE(ex.find("onednn CONV2D: %y"), std::string::npos) << ex;
  }
}

TEST(OneDnnInt8, DepthwiseAndPadByTheZeroPointFuse) {
  std::mt19937 rng(11);
  GraphBuilder b;
  ValueId x = b.input("x", {DType::kInt8, {1, 9, 7, 8}});
  ValueId izp = b.constant("izp", scalar_i8(-7));
  ValueId wzp = b.constant("wzp", scalar_i8(0));
  ValueId pads = b.constant_shape("pads", {0, 0, 1, 2, 0, 1, 0, 0});
  ValueId xp = b.op(Op::PAD, {x, pads, izp}, {}, "xp");
  ValueId w = b.constant("w", random_int(DType::kInt8, {16, 3, 3, 8}, -128, 127, rng));
  ValueId bias = b.constant("b", random_int(DType::kInt32, {16}, -5000, 5000, rng));
  const Attrs conv = {{"pad", std::vector<int64_t>{0, 0, 0, 0}},
                      {"stride", std::vector<int64_t>{1, 1}},
                      {"dilation", std::vector<int64_t>{1, 1}},
                      {"acc_type", int64_t{static_cast<int64_t>(AccType::kInt32)}}};
  b.output(b.op(Op::CONV2D, {xp, w, bias, izp, wzp}, conv, "y"));
  ValueId dw = b.constant("dw", random_int(DType::kInt8, {3, 3, 8, 2}, -128, 127, rng));
  ValueId db = b.constant("db", random_int(DType::kInt32, {16}, -5000, 5000, rng));
  Attrs dconv = conv;
  dconv[0].second = std::vector<int64_t>{1, 1, 1, 1};
  b.output(b.op(Op::DEPTHWISE_CONV2D, {x, dw, db, izp, wzp}, dconv, "z"));
  Module m(b.finish());
  std::string ex = expect_identical(m, {random_int(DType::kInt8, {1, 9, 7, 8}, -128, 127, rng)});
  if (no_vnni(ex)) GTEST_SKIP() << "int8 offload needs VNNI:\n" << ex;
  EXPECT_NE(ex.find("onednn PAD+CONV2D: %xp, %y"), std::string::npos) << ex;
  EXPECT_NE(ex.find("onednn DEPTHWISE_CONV2D: %z"), std::string::npos) << ex;
}

TEST(OneDnnInt8, MatmulWithConstantAndRuntimeB) {
  std::mt19937 rng(3);
  for (int64_t zp : {0, 3, -100}) {
    SCOPED_TRACE("zp " + std::to_string(zp));
    GraphBuilder b;
    ValueId a = b.input("a", {DType::kInt8, {2, 6, 40}});
    ValueId rb = b.input("rb", {DType::kInt8, {2, 40, 5}});
    ValueId cb = b.constant("cb", random_int(DType::kInt8, {2, 40, 5}, -128, 127, rng));
    ValueId azp = b.constant("azp", scalar_i8(zp));
    ValueId bzp = b.constant("bzp", scalar_i8(0));
    b.output(b.op(Op::MATMUL, {a, cb, azp, bzp}, {}, "y"));
    b.output(b.op(Op::MATMUL, {a, rb, azp, bzp}, {}, "z"));
    Module m(b.finish());
    std::string ex = expect_identical(m, {random_int(DType::kInt8, {2, 6, 40}, -128, 127, rng),
                                          random_int(DType::kInt8, {2, 40, 5}, -128, 127, rng)});
    if (no_vnni(ex)) GTEST_SKIP() << "int8 offload needs VNNI:\n" << ex;
    EXPECT_NE(ex.find("onednn MATMUL: %y"), std::string::npos) << ex;
    EXPECT_NE(ex.find("onednn MATMUL: %z"), std::string::npos) << ex;
  }
}

TEST(OneDnnInt8, AccumulatorsBeyondTwoToThe24StayOnTheReferenceBackend) {
  // 3x3x512 weights of -128: |sum| can reach 4608 * 128 * 128 = 75.5M > 2^24.
  GraphBuilder b;
  ValueId x = b.input("x", {DType::kInt8, {1, 4, 4, 512}});
  std::vector<int64_t> big(static_cast<size_t>(2 * 3 * 3 * 512), -128);
  ValueId w = b.constant("w", Tensor::from_ints({DType::kInt8, {2, 3, 3, 512}}, big));
  ValueId bias = b.constant("b", Tensor::from_ints({DType::kInt32, {2}}, std::vector<int64_t>{0, 0}));
  ValueId zp = b.constant("zp", scalar_i8(0));
  b.output(b.op(Op::CONV2D, {x, w, bias, zp, zp},
                {{"pad", std::vector<int64_t>{1, 1, 1, 1}},
                 {"stride", std::vector<int64_t>{1, 1}},
                 {"dilation", std::vector<int64_t>{1, 1}},
                 {"acc_type", int64_t{static_cast<int64_t>(AccType::kInt32)}}},
                "y"));
  Module m(b.finish());
  std::vector<int64_t> ones(16 * 512, -128);
  std::string ex = expect_identical(m, {Tensor::from_ints({DType::kInt8, {1, 4, 4, 512}}, ones)});
  if (no_vnni(ex)) GTEST_SKIP() << "int8 offload needs VNNI:\n" << ex;
  EXPECT_NE(ex.find("reference CONV2D: %y"), std::string::npos) << ex;
  EXPECT_NE(ex.find("not on onednn: int8 accumulators may reach"), std::string::npos) << ex;
  EXPECT_NE(ex.find("> 2^24"), std::string::npos) << ex;
}

TEST(OneDnnInt8, NonZeroWeightZeroPointIsDeclined) {
  std::mt19937 rng(5);
  GraphBuilder b;
  ValueId a = b.input("a", {DType::kInt8, {1, 4, 8}});
  ValueId cb = b.constant("cb", random_int(DType::kInt8, {1, 8, 3}, -128, 127, rng));
  ValueId azp = b.constant("azp", scalar_i8(0));
  ValueId bzp = b.constant("bzp", scalar_i8(2));
  b.output(b.op(Op::MATMUL, {a, cb, azp, bzp}, {}, "y"));
  Module m(b.finish());
  std::string ex = expect_identical(m, {random_int(DType::kInt8, {1, 4, 8}, -128, 127, rng)});
  if (no_vnni(ex)) GTEST_SKIP() << "int8 offload needs VNNI:\n" << ex;
  EXPECT_NE(ex.find("not on onednn: int8: the B zero point must be 0"), std::string::npos) << ex;
}

}  // namespace
}  // namespace weft
