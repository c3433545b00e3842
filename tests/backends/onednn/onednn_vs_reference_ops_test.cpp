// oneDNN versus the reference backend: the single operators the backend runs (element-wise
// activations, binary operators with the broadcasts it accepts, reductions on every axis, CONCAT,
// TRANSPOSE); the cases it declines falling back to the reference backend with the reason in the
// explain text; and the runtime behaviour of oneDNN kernels (threads, repeated runs with cached
// primitives and prepared weights, several contexts of one model, library-owned scratch memory).
#include <functional>
#include <thread>
#include <cmath>
#include <cstring>
#include <limits>

#include <numeric>

#include "backends/onednn/gemm.h"
#include "backends/onednn/lanes.h"
#include "backends/onednn/onednn_test_util.h"

namespace weft::onednn_test {
namespace {

// The instruction set Weft's own loops run with here (kernel names end in it: "weft_loop[3]:avx2").
std::string loop_isa() { return backend::cpu::cpu_level_name(); }

const std::vector<Shape> kShapes = {{2, 3, 4, 5}, {7}, {3, 17}, {1, 33, 2}, {2, 1, 6, 8}};

// ---- Element-wise unary ---------------------------------------------------------------------------

TEST(OneDnnVsReference, UnaryActivations) {
  struct Case {
    Op op;
    double lo, hi, tol;
  };
  const std::vector<Case> cases = {
      {Op::SIGMOID, -8, 8, kTolElementwise}, {Op::TANH, -4, 4, kTolElementwise}, {Op::EXP, -6, 4, kTolElementwise},
      {Op::ABS, -3, 3, kExact},              {Op::RSQRT, 0.01, 9, kTolElementwise},  // positive inputs only
      {Op::LOG, 1e-3, 50, kTolElementwise},
  };
  uint32_t seed = 2000;
  for (const Case& c : cases)
    for (const Shape& s : kShapes) {
      SCOPED_TRACE(std::string(op_name(c.op)) + " " + shape_str(s));
      Net net(seed++);
      ValueId x = net.input(s, c.lo, c.hi);
      Module m = net.finish({net.unary(c.op, x)});
      check_vs_reference(m, net.feeds, {op_name(c.op)}, c.tol);
    }
}

// SIGMOID and TANH of small fp32 tensors run on Weft's loop (the GEMM epilogue's functions, its AVX2
// or, on AVX-512 CPUs, its 16-lane copy; no oneDNN call): against double over [-30, 30] in steps of 1/256, tiny values (tanh's odd polynomial
// below |x| = 0.625) and special values, within 4e-7 relative (+1e-37 absolute); NaN stays NaN,
// +-inf saturate. Under the default priority even a tiny one runs there (not on the reference
// backend), and a large one on oneDNN's primitive.
TEST(OneDnnVsReference, SmallActivationsRunOnWeftsLoop) {
  if (!backend::cpu::gemm_avx2_supported()) GTEST_SKIP() << "this CPU has no AVX2 + FMA";
  std::vector<float> x;
  for (double v = -30.0; v <= 30.0; v += 1.0 / 256) x.push_back(static_cast<float>(v));
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-7f, -3e-5f, 1e-3f, 0.6249f, 0.6251f, -0.6249f, 87.0f, -87.0f,
                  89.0f, -89.0f, 1e30f, -1e30f})
    x.push_back(v);
  const float inf = std::numeric_limits<float>::infinity();
  x.insert(x.end(), {inf, -inf, std::numeric_limits<float>::quiet_NaN()});
  for (auto kind : {backend::cpu::EpilogueOp::Kind::kSigmoid, backend::cpu::EpilogueOp::Kind::kTanh}) {
    const bool sig = kind == backend::cpu::EpilogueOp::Kind::kSigmoid;
    std::vector<float> y = x;
    backend::cpu::activation_avx2(kind, y.data(), static_cast<int64_t>(y.size()));
    int bad = 0;
    for (size_t i = 0; i < x.size() && bad < 5; ++i) {
      const double xi = x[i];
      if (std::isnan(xi)) {
        bad += !std::isnan(y[i]);
        EXPECT_TRUE(std::isnan(y[i])) << (sig ? "sigmoid" : "tanh") << "(NaN) = " << y[i];
        continue;
      }
      const double want = sig ? 1.0 / (1.0 + std::exp(-xi)) : std::tanh(xi);
      const double err = std::abs(y[i] - want);
      const bool ok = err <= 4e-7 * std::abs(want) + 1e-37;
      bad += !ok;
      EXPECT_TRUE(ok) << (sig ? "sigmoid(" : "tanh(") << xi << ") = " << y[i] << " vs " << want << " (relative error "
                      << err / std::abs(want) << ")";
    }
  }
  // The AVX-512 copy (16 lanes) gives the AVX2 copy's bits, for the four functions it has, on every
  // length of tail.
  if (backend::cpu::cpu_level() == backend::cpu::CpuLevel::kAvx512) {
    using K = backend::cpu::EpilogueOp::Kind;
    std::vector<float> wide = x;
    for (float v : x) wide.push_back(std::abs(v) * 1.5f + 1e-30f);  // positive arguments for LOG
    for (auto kind : {K::kSigmoid, K::kTanh, K::kExp, K::kLog})
      for (size_t n : {wide.size(), wide.size() - 1, size_t{15}, size_t{17}, size_t{1}}) {
        std::vector<float> a(wide.begin(), wide.begin() + static_cast<long>(n)), b = a;
        backend::cpu::activation_avx2(kind, a.data(), static_cast<int64_t>(n));
        backend::cpu::activation_avx512(kind, b.data(), static_cast<int64_t>(n));
        EXPECT_EQ(std::memcmp(a.data(), b.data(), n * sizeof(float)), 0) << static_cast<int>(kind) << " over " << n;
      }
  }
  for (const Shape& s : {Shape{1, 1, 48}, Shape{4, 64, 128}}) {
    SCOPED_TRACE(shape_str(s));
    Net net(2100);
    ValueId v = net.input(s, -6, 6);
    Module m = net.finish({net.unary(Op::TANH, v)});
    auto model = Model::from_module(m, BackendOptions{});  // the default priority
    Context ctx(model);
    ctx.set_profiling(true);
    const std::vector<Tensor> out = ctx.run(net.feeds);
    Context ref(Model::from_module(m, kReference));
    EXPECT_TRUE(close(out[0], ref.run(net.feeds)[0], kTolElementwise));
    ASSERT_FALSE(ctx.profile().empty());
    EXPECT_EQ(ctx.profile()[0].backend, "onednn");
    const std::string copy =
        backend::cpu::cpu_level() == backend::cpu::CpuLevel::kAvx512 ? "weft_activation:avx512" : "weft_activation:avx2";
    EXPECT_EQ(ctx.profile()[0].implementation == copy, shape_elements(s) <= 16384) << ctx.profile()[0].implementation;
  }
}

// A SLICE of contiguous rows of at least 16 elements, up to 64K elements (a bidirectional LSTM's
// per-direction half of its input projection), is a row copy (weft_view_copy) rather than a oneDNN
// reorder; shorter rows and larger slices stay on the reorder. Results are exact either way.
TEST(OneDnnVsReference, SlicesOfContiguousRowsAreRowCopies) {
  struct Case {
    Shape in;
    std::vector<int64_t> start, size;
    bool rows;
  };
  for (const Case& c : {Case{{1, 32, 384}, {0, 0, 192}, {1, 32, 192}, true}, Case{{2, 5, 7, 40}, {1, 1, 2, 8}, {1, 3, 4, 16}, true},
                        Case{{1, 32, 384}, {0, 0, 4}, {1, 32, 8}, false}, Case{{2, 300, 256}, {0, 0, 0}, {2, 300, 128}, false}}) {
    SCOPED_TRACE(shape_str(c.in));
    Net net(2400);
    ValueId x = net.input(c.in);
    ValueId start = net.b.constant_shape("start", c.start);
    ValueId size = net.b.constant_shape("size", c.size);
    Module m = net.finish({net.b.op(Op::SLICE, {x, start, size})});
    Context ctx(Model::from_module(m, BackendOptions{.backends = {"onednn", "reference"}}));
    ctx.set_profiling(true);
    const std::vector<Tensor> out = ctx.run(net.feeds);
    EXPECT_TRUE(out[0].identical(Context(Model::from_module(m, kReference)).run(net.feeds)[0]));
    ASSERT_EQ(ctx.profile().size(), 1u);
    EXPECT_EQ(ctx.profile()[0].backend, "onednn");
    EXPECT_EQ(ctx.profile()[0].implementation == "weft_view_copy", c.rows) << ctx.profile()[0].implementation;
  }
}

// Tiny operators (an unrolled recurrent cell's SLICEs of a few dozen values) stay on the reference
// backend's loops under the default rules: with no backends named, and with "cpu" (the CPU backends,
// as a machine without a GPU runs them; never the Vulkan backend). A list naming oneDNN gives it
// everything it takes, as asked.
TEST(OneDnnVsReference, TinyOperatorsStayOnTheReferenceUnderTheDefaultRulesAndCpu) {
  Net net(2300);
  ValueId x = net.input({1, 4, 12});
  ValueId start = net.b.constant_shape("start", {0, 0, 3});
  ValueId size = net.b.constant_shape("size", {1, 4, 6});
  Module m = net.finish({net.b.op(Op::SLICE, {x, start, size})});  // not one contiguous run: a copy
  auto backend_of_slice = [&](const BackendOptions& options) {
    auto model = Model::from_module(m, options);
    Context ctx(model);
    ctx.set_profiling(true);
    EXPECT_TRUE(close(ctx.run(net.feeds)[0], Context(Model::from_module(m, kReference)).run(net.feeds)[0], 0.0));
    EXPECT_EQ(ctx.profile().size(), 1u);
    return ctx.profile().empty() ? std::string() : ctx.profile()[0].backend;
  };
  EXPECT_EQ(backend_of_slice(BackendOptions{}), "reference");
  EXPECT_EQ(backend_of_slice(BackendOptions{.backends = {"cpu"}}), "reference");
  EXPECT_EQ(backend_of_slice(BackendOptions{.backends = {"onednn", "reference"}}), "onednn");
  const std::string ex = Model::from_module(m, BackendOptions{.backends = {"cpu"}})->explain();
  EXPECT_NE(ex.find("(backends in priority order: onednn reference)"), std::string::npos) << ex;
}

// The loop's EXP and LOG steps (gemm.cpp's exp8 and log8, Cephes' polynomials) against double:
// e^x over [-87, 88.7] and ln x over every binade from the smallest subnormal to the largest float
// (16 values each), within 2 ulp (2.4e-7 relative); and their special values: e^x is +inf above
// 88.73 and 0 below -87.34 (flushed, not subnormal), ln of +-0 is -inf, of +inf +inf, of a negative
// or NaN NaN.
TEST(OneDnnVsReference, LoopExpAndLogWithinTwoUlp) {
  if (!backend::cpu::gemm_avx2_supported()) GTEST_SKIP() << "this CPU has no AVX2 + FMA";
  using K = backend::cpu::EpilogueOp::Kind;
  std::vector<float> xe;
  for (double v = -87.0; v <= 88.7; v += 1.0 / 64) xe.push_back(static_cast<float>(v));
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-7f, 0.34657359f}) xe.push_back(v);
  std::vector<float> xl;
  for (int e = -149; e < 128; ++e)
    for (int k = 0; k < 16; ++k) xl.push_back(std::ldexp(1.0f + static_cast<float>(k) / 16.0f + 1.0f / 4096.0f, e));
  for (float v : {1.0f, 0.99999994f, 1.0000001f, 0.70710677f, 0.7071068f, 1.4142135f, 2.0f, 0.5f})
    xl.push_back(v);
  for (auto [kind, x] : {std::pair{K::kExp, xe}, std::pair{K::kLog, xl}}) {
    const bool ex = kind == K::kExp;
    std::vector<float> y = x;
    backend::cpu::activation_avx2(kind, y.data(), static_cast<int64_t>(y.size()));
    int bad = 0;
    for (size_t i = 0; i < x.size() && bad < 5; ++i) {
      const double want = ex ? std::exp(static_cast<double>(x[i])) : std::log(static_cast<double>(x[i]));
      const double err = std::abs(y[i] - want);
      const bool ok = std::isfinite(want) && err <= 2.4e-7 * std::abs(want) + (ex ? 0.0 : 1e-45);
      bad += !ok;
      EXPECT_TRUE(ok) << (ex ? "exp(" : "log(") << x[i] << ") = " << y[i] << " vs " << want << " (relative error "
                      << err / std::abs(want) << ")";
    }
  }
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> e = {89.0f, 1e30f, inf, -88.0f, -1e30f, -inf, nan};
  backend::cpu::activation_avx2(K::kExp, e.data(), static_cast<int64_t>(e.size()));
  EXPECT_EQ(e[0], inf);
  EXPECT_EQ(e[1], inf);
  EXPECT_EQ(e[2], inf);
  EXPECT_EQ(e[3], 0.0f);
  EXPECT_EQ(e[4], 0.0f);
  EXPECT_EQ(e[5], 0.0f);
  EXPECT_TRUE(std::isnan(e[6]));
  std::vector<float> l = {0.0f, -0.0f, inf, -1.0f, -inf, -1e-40f, nan, 1e-45f};
  backend::cpu::activation_avx2(K::kLog, l.data(), static_cast<int64_t>(l.size()));
  EXPECT_EQ(l[0], -inf);
  EXPECT_EQ(l[1], -inf);
  EXPECT_EQ(l[2], inf);
  for (int i = 3; i < 7; ++i) EXPECT_TRUE(std::isnan(l[static_cast<size_t>(i)])) << "log(" << i << ") = " << l[static_cast<size_t>(i)];
  EXPECT_NEAR(l[7], std::log(static_cast<double>(1e-45f)), 2e-5);  // the smallest subnormal
}

// ADD, SUB and MUL of small fp32 tensors of one shape, or by a single value on either side, run on
// Weft's loop under the default priority (no oneDNN call, no reference broadcast setup), bit for bit
// the reference's results; a real broadcast ([1, 48] by [4, 1]) and a large tensor do not.
TEST(OneDnnVsReference, SmallBinariesRunOnWeftsLoopBitForBit) {
  struct Case {
    Shape a, b;
    bool loop;
  };
  for (Op op : {Op::ADD, Op::SUB, Op::MUL})
    for (const Case& c : {Case{{1, 1, 48}, {1, 1, 48}, true}, Case{{1, 1, 48}, {1, 1, 1}, true},
                          Case{{1, 1, 1}, {1, 1, 48}, true}, Case{{4, 48}, {4, 1}, false},
                          Case{{4, 96, 128}, {4, 96, 128}, false}}) {
      SCOPED_TRACE(std::string(op_name(op)) + " " + shape_str(c.a) + " " + shape_str(c.b));
      Net net(2200);
      ValueId a = net.input(c.a, -3, 3), b = net.input(c.b, -3, 3);
      Module m = net.finish({net.binary(op, a, b)});
      Context ctx(Model::from_module(m, BackendOptions{}));  // the default priority
      ctx.set_profiling(true);
      const std::vector<Tensor> out = ctx.run(net.feeds);
      Context ref(Model::from_module(m, kReference));
      if (c.loop) EXPECT_TRUE(out[0].identical(ref.run(net.feeds)[0]));
      else EXPECT_TRUE(close(out[0], ref.run(net.feeds)[0], kExact));
      bool loop = false;
      for (const KernelProfile& k : ctx.profile()) loop |= k.implementation == "weft_binary";
      EXPECT_EQ(loop, c.loop);
    }
}

TEST(OneDnnVsReference, Clamp) {
  // ReLU (0..FLT_MAX, oneDNN's relu), ReLU6, a symmetric and a negative-only range.
  const std::vector<std::pair<double, double>> bounds = {
      {0.0, std::numeric_limits<float>::max()}, {0.0, 6.0}, {-0.5, 0.5}, {-2.0, -1.0},
      {0.0, std::numeric_limits<double>::infinity()}, {-std::numeric_limits<double>::infinity(), 0.25}};
  uint32_t seed = 2100;
  for (auto [lo, hi] : bounds)
    for (const Shape& s : kShapes) {
      SCOPED_TRACE("CLAMP " + std::to_string(lo) + ".." + std::to_string(hi) + " " + shape_str(s));
      Net net(seed++);
      ValueId x = net.input(s, -8, 8);
      Module m = net.finish({net.clamp(x, lo, hi)});
      check_vs_reference(m, net.feeds, {"CLAMP"}, kExact);
    }
}

// ---- Binary -----------------------------------------------------------------------------------------

TEST(OneDnnVsReference, BinarySameShapeAndBroadcasts) {
  // The second operand full-size, or broadcast along all but the last dimension, all but
  // dimension 1, or everything (a scalar); commutative operators also with the small operand first.
  // Constants and runtime tensors alike. Single roundings: exact.
  const std::vector<Shape> fulls = {{2, 3, 4, 5}, {6, 7}, {3, 4, 5}};
  auto smalls = [](const Shape& f) {
    std::vector<Shape> out = {f};
    Shape last(f.size(), 1), dim1(f.size(), 1), scalar(f.size(), 1);
    last.back() = f.back();
    dim1[1] = f[1];
    out.push_back(last);
    if (dim1 != last) out.push_back(dim1);
    out.push_back(scalar);
    return out;
  };
  uint32_t seed = 2200;
  int cases = 0;
  for (Op op : {Op::ADD, Op::SUB, Op::MUL, Op::MAXIMUM, Op::MINIMUM})
    for (const Shape& f : fulls)
      for (const Shape& sm : smalls(f))
        for (bool small_first : {false, true}) {
          if (small_first && (op == Op::SUB || sm == f)) continue;  // SUB: oneDNN broadcasts only the second
          const bool as_const = seed % 3 == 0;
          SCOPED_TRACE(std::string(op_name(op)) + " " + shape_str(f) + " with " + shape_str(sm) +
                       (small_first ? " first" : " second") + (as_const ? " (constant)" : ""));
          Net net(seed++);
          ValueId x = net.input(f, -3, 3);
          ValueId y = as_const ? net.weight(sm, -3, 3) : net.input(sm, -3, 3);
          ValueId r = small_first ? net.binary(op, y, x) : net.binary(op, x, y);
          Module m = net.finish({r});
          check_vs_reference(m, net.feeds, {op_name(op)}, kExact);
          ++cases;
        }
  EXPECT_GE(cases, 60);
}

// A second operand that is 1 on a leading run of dimensions and whole after it (Swin's relative
// position bias [1, H, N, N] over its windows' scores [nW, H, N, N]) runs as oneDNN's fast
// per-last-dimension broadcast of both collapsed to [outer, inner]; with fused operations after it
// (CLAMP) the binary stays alone. A broadcast in the middle ([1, 4, 1, 5, 5] over [1, 4, 3, 5, 5]:
// Swin's shift mask) stays on Weft's loop. Exact.
TEST(OneDnnVsReference, BinaryBroadcastOverLeadingDimensionsCollapses) {
  struct Case {
    Op op;
    Shape full, small;
    bool small_first, clamp, on_onednn;
  };
  uint32_t seed = 2240;
  for (const Case& c : {Case{Op::ADD, {6, 3, 5, 7}, {1, 3, 5, 7}, false, false, true},
                        Case{Op::ADD, {6, 3, 5, 7}, {1, 3, 5, 7}, true, false, true},
                        Case{Op::MUL, {2, 4, 3, 5}, {1, 1, 3, 5}, false, false, true},
                        Case{Op::SUB, {1, 4, 3, 5, 5}, {1, 1, 3, 5, 5}, false, false, true},
                        Case{Op::ADD, {6, 3, 5, 7}, {1, 3, 5, 7}, false, true, true},
                        Case{Op::ADD, {1, 4, 3, 5, 5}, {1, 4, 1, 5, 5}, false, false, false}}) {
    SCOPED_TRACE(std::string(op_name(c.op)) + " " + shape_str(c.full) + " with " + shape_str(c.small) +
                 (c.small_first ? " first" : "") + (c.clamp ? " then CLAMP" : ""));
    Net net(seed++);
    ValueId x = net.input(c.full, -3, 3), y = net.input(c.small, -3, 3);
    ValueId r = c.small_first ? net.binary(c.op, y, x) : net.binary(c.op, x, y);
    if (c.clamp) r = net.clamp(r, 0, 1);
    Module m = net.finish({r});
    auto dnn = check_vs_reference(m, net.feeds, c.on_onednn ? std::vector<std::string>{op_name(c.op)} : std::vector<std::string>{},
                                  kExact, c.on_onednn);
    if (!c.on_onednn) {
      EXPECT_NE(dnn->explain().find("oneDNN 2.6 runs this broadcast on its slow reference path"), std::string::npos)
          << dnn->explain();
    }
  }
}

TEST(OneDnnVsReference, RankOneAndRankFiveOperators) {
  {
    SCOPED_TRACE("rank 1: [7] + [1]");
    Net net(2250);
    ValueId x = net.input({7}), y = net.input({1});
    check_vs_reference(net.finish({net.add(x, y)}), net.feeds, {"ADD"}, kExact);
  }
  {
    SCOPED_TRACE("rank 5 broadcasts");
    Net net(2251);
    ValueId a = net.input({2, 3, 2, 2, 4}), b = net.input({1, 1, 1, 1, 4}), c = net.input({1, 3, 1, 1, 1});
    check_vs_reference(net.finish({net.mul(net.sub(a, b), c)}), net.feeds, {"SUB", "MUL"}, kExact);
  }
  {
    SCOPED_TRACE("rank 5 TRANSPOSE, REDUCE_SUM");
    Net net(2252);
    ValueId t = net.input({2, 3, 2, 2, 4});
    Module m = net.finish({net.transpose(t, {4, 0, 3, 1, 2}), net.reduce(Op::REDUCE_SUM, t, 4)});
    check_vs_reference(m, net.feeds, {"TRANSPOSE", "REDUCE_SUM"}, kTolElementwise);
  }
}

TEST(OneDnnVsReference, ElementwiseChainsByPerChannelConstantsFuse) {
  // DenseNet's pre-activation batch norm + ReLU: MUL by a per-channel scale, ADD a shift, CLAMP:
  // one oneDNN binary with post-ops, on NHWC (4-D) and plain (3-D) tensors, and with a residual.
  struct Case {
    Shape shape;
    bool residual;
    std::string pattern;
  };
  // (On plain 3-D tensors oneDNN 2.6 has only its reference kernel for the fused chain, which is
  // declined: the pieces still run on oneDNN, and still match.)
  const std::vector<Case> cases = {{{1, 7, 9, 16}, false, "MUL+BIAS+CLAMP"},
                                   {{2, 5, 24}, false, ""},
                                   {{1, 6, 6, 8}, true, "MUL+BIAS+ADD"}};
  uint32_t seed = 2260;
  for (const Case& c : cases) {
    SCOPED_TRACE(shape_str(c.shape));
    Net net(seed++);
    ValueId x = net.input(c.shape);
    Shape ch(c.shape.size(), 1);
    ch.back() = c.shape.back();
    ValueId y = net.add(net.mul(x, net.weight(ch)), net.weight(ch));
    if (c.residual) y = net.add(y, net.input(c.shape));
    else y = net.clamp(y, 0, std::numeric_limits<double>::infinity());
    if (c.pattern.empty()) {
      check_vs_reference(net.finish({y}), net.feeds, {}, kTolElementwise);
      continue;
    }
    auto dnn = check_vs_reference(net.finish({y}), net.feeds, {c.pattern}, kTolElementwise);
    EXPECT_EQ(dnn->placement().size(), 1u) << dnn->explain();
  }
}

// A CONCAT along the channels read only by such a chain (DenseNet's features going into each
// layer's BN + ReLU): the chain reads the pieces, and the concatenation is never written. Bit for
// bit the reference's result (each operation rounded as the operator rounds it; NaN through CLAMP),
// on one thread and on two, with pieces whose widths leave vector tails.
TEST(OneDnnVsReference, ConcatInFrontOfAChannelChainReadsThePieces) {
  const double inf = std::numeric_limits<double>::infinity();
  uint32_t seed = 2280;
  for (int threads : {1, 2}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    {  // NHWC, MUL -> ADD -> CLAMP, three pieces (16 + 5 + 35 channels: 2400 rows, two threads
     // when asked), a NaN in one of them
      Net net(seed++);
      ValueId a = net.input({1, 48, 50, 16}), b = net.input({1, 48, 50, 5}), c = net.input({1, 48, 50, 35});
      for (int i : {0, 1}) net.feeds[static_cast<size_t>(i)].mutable_data<float>()[7] = std::numeric_limits<float>::quiet_NaN();
      ValueId cat = net.concat({a, b, c}, 3);
      ValueId y = net.clamp(net.add(net.mul(cat, net.weight({1, 1, 1, 56})), net.weight({1, 1, 1, 56})), 0, inf);
      auto dnn = check_vs_reference(net.finish({y}), net.feeds, {"CONCAT+MUL+BIAS+CLAMP"}, 0.0, true, threads);
      EXPECT_EQ(dnn->placement().size(), 1u) << dnn->explain();
    }
    {  // 3-D, SUB then a per-channel scale and shift (the chain's other steps), two pieces
      Net net(seed++);
      ValueId a = net.input({2, 5, 19}), b = net.input({2, 5, 13});
      ValueId y = net.sub(net.concat({a, b}, 2), net.weight({1, 1, 32}));
      y = net.add(net.mul(y, net.weight({1, 1, 32})), net.weight({1, 1, 32}));
      check_vs_reference(net.finish({y}), net.feeds, {"CONCAT+SUB+SCALE+SHIFT"}, 0.0, true, threads);
    }
  }
  {  // an activation the loop does not have: the CONCAT still joins the chain before it
    Net net(seed++);
    ValueId cat = net.concat({net.input({1, 4, 4, 8}), net.input({1, 4, 4, 8})}, 3);
    ValueId y = net.unary(Op::SIGMOID, net.add(net.mul(cat, net.weight({1, 1, 1, 16})), net.weight({1, 1, 1, 16})));
    check_vs_reference(net.finish({y}), net.feeds, {"CONCAT+MUL+BIAS", "SIGMOID"}, kTolElementwise);
  }
  {  // the concatenation is also an output, or along another axis: it is written, on its own
    Net net(seed++);
    ValueId cat = net.concat({net.input({1, 4, 4, 8}), net.input({1, 4, 4, 8})}, 3);
    ValueId y = net.clamp(net.add(net.mul(cat, net.weight({1, 1, 1, 16})), net.weight({1, 1, 1, 16})), 0, inf);
    auto dnn = check_vs_reference(net.finish({y, cat}), net.feeds, {"MUL+BIAS+CLAMP"}, kTolElementwise, false);
    EXPECT_EQ(dnn->explain().find("CONCAT+"), std::string::npos) << dnn->explain();
    Net net2(seed++);
    ValueId cat2 = net2.concat({net2.input({1, 2, 4, 8}), net2.input({1, 3, 4, 8})}, 1);
    ValueId y2 = net2.clamp(net2.add(net2.mul(cat2, net2.weight({1, 1, 1, 8})), net2.weight({1, 1, 1, 8})), 0, inf);
    auto dnn2 = check_vs_reference(net2.finish({y2}), net2.feeds, {"MUL+BIAS+CLAMP"}, kTolElementwise, false);
    EXPECT_EQ(dnn2->explain().find("CONCAT+"), std::string::npos) << dnn2->explain();
  }
}

TEST(OneDnnVsReference, BinaryBothOperandsTheSameValue) {
  // x * x, x + x, max(x, x): one value bound to both primitive arguments.
  uint32_t seed = 2300;
  for (Op op : {Op::ADD, Op::SUB, Op::MUL, Op::MAXIMUM}) {
    SCOPED_TRACE(op_name(op));
    Net net(seed++);
    ValueId x = net.input({4, 9});
    Module m = net.finish({net.binary(op, x, x)});
    check_vs_reference(m, net.feeds, {op_name(op)}, kExact);
  }
}

TEST(OneDnnVsReference, RandomElementwiseDagsWithInPlaceReuse) {
  // Random DAGs of the element-wise operators over f32[2,4,8] values, with values read by several
  // nodes, broadcast constants oneDNN takes ([1,1,8], [1,4,1], [1,1,1]) and one it declines
  // ([2,1,1]), so that oneDNN and reference kernels alternate and the memory planner lets outputs
  // overwrite dying inputs (in place) on both backends.
  const Shape full = {2, 4, 8};
  const std::vector<Shape> smalls = {{1, 1, 8}, {1, 4, 1}, {1, 1, 1}, {2, 1, 1}};
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Net net(4000 + seed);
    std::mt19937 rng(seed);
    auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
    std::vector<ValueId> pool = {net.input(full, -2, 2), net.input(full, -2, 2)};
    std::vector<double> bound = {2, 2};  // |value| bound, to keep products finite
    for (int i = 0; i < 30; ++i) {
      size_t ia = pick(pool.size()), ib = pick(pool.size());
      ValueId a = pool[ia], b = pool[ib];
      double ba = bound[ia], bb = bound[ib];
      ValueId r;
      double br;
      switch (pick(10)) {
        case 0: r = net.add(a, b); br = ba + bb; break;
        case 1: r = net.sub(a, b); br = ba + bb; break;
        case 2:
          if (ba * bb > 50) {
            b = net.clamp(b, -1, 1);
            bb = 1;
          }
          r = net.mul(a, b);
          br = ba * bb;
          break;
        case 3: r = net.b.op(Op::MAXIMUM, {a, b}); br = std::max(ba, bb); break;
        case 4: r = net.b.op(Op::MINIMUM, {a, b}); br = std::max(ba, bb); break;
        case 5: r = net.unary(Op::TANH, a); br = 1; break;
        case 6: r = net.unary(Op::SIGMOID, a); br = 1; break;
        case 7: r = net.clamp(a, -1.5, 1.0); br = 1.5; break;
        case 8: r = net.unary(Op::ABS, a); br = ba; break;
        default: {
          const Shape& s = smalls[pick(smalls.size())];
          ValueId c = net.weight(s, -2, 2);
          r = pick(2) ? net.add(a, c) : net.mul(c, a);
          br = ba * 2 + 2;
          break;
        }
      }
      pool.push_back(r);
      bound.push_back(br);
    }
    Module m = net.finish({pool.back(), pool[pool.size() / 2], pool[pool.size() - 3]});
    auto dnn = check_vs_reference(m, net.feeds, {}, kTolAccumulate, /*all_on_onednn=*/false);
    const std::string ex = dnn->explain();
    EXPECT_EQ(ex.find("onednn: 0 kernels"), std::string::npos) << ex;
  }
}

// ---- Reductions -------------------------------------------------------------------------------------

TEST(OneDnnVsReference, ReductionsOnEveryAxis) {
  // MAX/MIN pick a stored value (exact); SUM and PRODUCT round in a different order (1e-5).
  const std::vector<Shape> shapes = {{2, 3, 4, 5}, {9}, {5, 1, 7}, {3, 16}};
  uint32_t seed = 2400;
  for (Op op : {Op::REDUCE_SUM, Op::REDUCE_MAX, Op::REDUCE_MIN, Op::REDUCE_PRODUCT})
    for (const Shape& s : shapes)
      for (int64_t axis = 0; axis < static_cast<int64_t>(s.size()); ++axis) {
        if (s[static_cast<size_t>(axis)] == 1) continue;  // a size-1 axis: nothing to reduce
        SCOPED_TRACE(std::string(op_name(op)) + " " + shape_str(s) + " axis " + std::to_string(axis));
        Net net(seed++);
        // Products of values in [0.5, 1.5] stay well scaled over up to 16 factors.
        ValueId x = op == Op::REDUCE_PRODUCT ? net.input(s, 0.5, 1.5) : net.input(s, -4, 4);
        Module m = net.finish({net.reduce(op, x, axis)});
        const bool exact = op == Op::REDUCE_MAX || op == Op::REDUCE_MIN;
        if (op == Op::REDUCE_SUM && axis + 1 < static_cast<int64_t>(s.size())) {
          // oneDNN 2.6 has only its slow reference kernel there: Weft's own kernel runs it.
          auto dnn = check_vs_reference(m, net.feeds, {}, kExact, /*all_on_onednn=*/false);
          EXPECT_NE(dnn->explain().find("not the innermost"), std::string::npos) << dnn->explain();
          continue;
        }
        check_vs_reference(m, net.feeds, {op_name(op)}, exact ? kExact : kTolElementwise);
      }
}

TEST(OneDnnVsReference, ReduceProductWithMixedSigns) {
  Net net(2450);
  ValueId x = net.input({3, 6, 4}, -1.5, 1.5);
  Module m = net.finish({net.reduce(Op::REDUCE_PRODUCT, x, 1)});
  check_vs_reference(m, net.feeds, {"REDUCE_PRODUCT"}, kTolElementwise);
}

// ---- CONCAT and TRANSPOSE -------------------------------------------------------------------------

// CONCAT is left to Weft's memcpy kernel (oneDNN 2.6's simple concat was 20x slower on NHWC
// channel concatenations); between oneDNN kernels the results are unchanged on every axis.
TEST(OneDnnVsReference, ConcatOnEveryAxisRunsOnWeftsKernel) {
  uint32_t seed = 2500;
  const Shape base = {2, 3, 4, 5};
  for (int64_t axis = 0; axis < 4; ++axis)
    for (int count : {2, 3}) {
      SCOPED_TRACE("axis " + std::to_string(axis) + ", " + std::to_string(count) + " inputs");
      Net net(seed++);
      std::vector<ValueId> xs;
      for (int i = 0; i < count; ++i) {
        Shape s = base;
        s[static_cast<size_t>(axis)] = 1 + i * 2;  // 1, 3, 5 along the axis
        xs.push_back(i == 1 && count == 3 ? net.weight(s) : net.input(s));  // a constant in the middle
      }
      for (ValueId& x : xs) x = net.unary(Op::TANH, x);
      Module m = net.finish({net.unary(Op::TANH, net.concat(xs, axis))});
      auto dnn = check_vs_reference(m, net.feeds, {"TANH"}, kTolElementwise, /*all_on_onednn=*/false);
      EXPECT_NE(dnn->explain().find(" reference CONCAT:"), std::string::npos) << dnn->explain();
    }
  for (int64_t axis = 0; axis < 2; ++axis) {
    SCOPED_TRACE("rank 2, axis " + std::to_string(axis));
    Net net(seed++);
    ValueId a = net.input(axis == 0 ? Shape{3, 17} : Shape{17, 3});
    ValueId b = net.input(axis == 0 ? Shape{5, 17} : Shape{17, 5});
    Module m = net.finish({net.concat({a, b, a}, axis)});  // one value twice
    check_vs_reference(m, net.feeds, {}, kExact, /*all_on_onednn=*/false);
  }
}

TEST(OneDnnVsReference, TransposePermutations) {
  const std::vector<std::vector<int64_t>> perms3 = {{0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  const std::vector<std::vector<int64_t>> perms4 = {{0, 2, 1, 3}, {0, 3, 1, 2}, {0, 2, 3, 1}, {3, 2, 1, 0},
                                                    {1, 0, 3, 2}, {2, 3, 0, 1}, {0, 1, 3, 2}};
  uint32_t seed = 2600;
  for (const auto& p : perms3) {
    SCOPED_TRACE("perms " + vec_str(p));
    Net net(seed++);
    ValueId x = net.input({3, 5, 7});
    check_vs_reference(net.finish({net.transpose(x, p)}), net.feeds, {"TRANSPOSE"}, kExact);
  }
  for (const auto& p : perms4) {
    SCOPED_TRACE("perms " + vec_str(p));
    Net net(seed++);
    ValueId x = net.input({2, 3, 4, 6});
    check_vs_reference(net.finish({net.transpose(x, p)}), net.feeds, {"TRANSPOSE"}, kExact);
  }
}

// ShuffleNet's channel shuffle and split (NHWC, as the ONNX importer writes it): x [1, H, W, C]
// RESHAPE [1, H, W, 2, C/2], TRANSPOSE [0, 1, 2, 4, 3], RESHAPE [1, H, W, C], then two SLICEs of
// C/2 channels (the second also cut along H). One unit copies each SLICE straight from x
// ("TRANSPOSE+SLICE"), or, where x is a CONCAT of two equal pieces that nothing else reads, from the
// pieces ("CONCAT+TRANSPOSE+SLICE"): bit for bit the reference's results. The first SLICE's result
// is read (by a REVERSE) before the second SLICE and its CONST_SHAPEs come in graph order, as in
// ShuffleNet, so the unit runs at its first SLICE. Kept apart: a TRANSPOSE whose result is also an
// output, one read by a SLICE that cuts a channel pair; a CONCAT whose result is also an output, or
// of three pieces.
TEST(OneDnnVsReference, ChannelShuffleSplitCopiesStraightFromThePieces) {
  struct Case {
    DType t;
    int64_t H, W, C;
    bool cut_pair, shuffle_out;
    bool folded;
    int pieces;       // x is a CONCAT of this many inputs (0: x is an input)
    bool concat_out;  // the CONCAT's result is an output too
    bool concat_folded;
  };
  uint32_t seed = 2650;
  for (const Case& c :
       {Case{DType::kFp32, 5, 3, 8, false, false, true, 0, false, false},
        Case{DType::kFp16, 4, 4, 116, false, false, true, 0, false, false},
        Case{DType::kFp32, 5, 3, 8, false, false, true, 2, false, true},
        Case{DType::kFp32, 6, 7, 116, false, false, true, 2, false, true},
        Case{DType::kFp16, 4, 4, 116, false, false, true, 2, false, true},
        Case{DType::kInt8, 2, 3, 12, false, false, true, 2, false, true},
        Case{DType::kInt32, 3, 2, 36, false, false, true, 2, false, true},
        Case{DType::kFp32, 3, 3, 8, true, false, false, 0, false, false},
        Case{DType::kFp32, 3, 3, 8, false, true, false, 0, false, false},
        Case{DType::kFp32, 3, 3, 8, false, false, true, 2, true, false},
        Case{DType::kFp32, 3, 3, 12, false, false, true, 3, false, false}}) {
    SCOPED_TRACE(std::string(dtype_name(c.t)) + " C " + std::to_string(c.C) + (c.cut_pair ? " cut" : "") +
                 (c.shuffle_out ? " out" : "") + " pieces " + std::to_string(c.pieces) + (c.concat_out ? " concat out" : ""));
    Net net(seed++);
    const int64_t H = c.H, W = c.W, C = c.C;
    auto input = [&](Shape s) {
      ValueId v = net.b.input("in" + std::to_string(net.feeds.size()), {c.t, s});
      std::vector<double> vals(static_cast<size_t>(shape_elements(s)));
      for (size_t i = 0; i < vals.size(); ++i) vals[i] = static_cast<double>((i * 37 + net.feeds.size() * 11) % 101) - 50;
      net.feeds.push_back(Tensor::from_doubles({c.t, s}, vals));
      return v;
    };
    ValueId x;
    if (c.pieces == 0) {
      x = input({1, H, W, C});
    } else {
      std::vector<ValueId> pieces;
      for (int i = 0; i < c.pieces; ++i) pieces.push_back(input({1, H, W, C / c.pieces}));
      x = net.concat(pieces, 3);
    }
    ValueId shuffled = net.reshape(net.transpose(net.reshape(x, {1, H, W, 2, C / 2}), {0, 1, 2, 4, 3}), {1, H, W, C});
    const int64_t first = c.cut_pair ? 1 : 0;
    ValueId a = net.b.op(Op::SLICE, {shuffled, net.b.constant_shape(net.fresh("start"), {0, 0, 0, first}),
                                     net.b.constant_shape(net.fresh("size"), {1, H, W, C / 2})});
    ValueId a2 = net.b.op(Op::REVERSE, {a}, {{"axis", int64_t{2}}});
    ValueId b = net.b.op(Op::SLICE, {shuffled, net.b.constant_shape(net.fresh("start"), {0, 1, 0, C / 2}),
                                     net.b.constant_shape(net.fresh("size"), {1, H - 1, W, C / 2})});
    std::vector<ValueId> outs = {a2, b};
    if (c.shuffle_out) outs.push_back(shuffled);
    if (c.concat_out) outs.push_back(x);
    const Module m = net.finish(outs);
    auto dnn = Model::from_module(m, kOneDnn);
    auto ref = Model::from_module(m, kReference);
    const std::vector<Tensor> got = run_model(dnn, net.feeds), want = run_model(ref, net.feeds);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(got[i].byte_size() == want[i].byte_size() &&
                    std::memcmp(got[i].bytes(), want[i].bytes(), got[i].byte_size()) == 0,
                true)
          << "output " << i;
    const std::string ex = dnn->explain();
    auto count = [&](const std::string& unit) {
      int n = 0;
      for (size_t at = ex.find(unit); at != std::string::npos; at = ex.find(unit, at + 1)) ++n;
      return n;
    };
    EXPECT_EQ(count(" TRANSPOSE: "), c.folded ? 0 : 1) << ex;
    EXPECT_EQ(count(" onednn TRANSPOSE+SLICE: "), c.folded && !c.concat_folded ? 1 : 0) << ex;
    EXPECT_EQ(count(" onednn CONCAT+TRANSPOSE+SLICE: "), c.concat_folded ? 1 : 0) << ex;
    EXPECT_EQ(count(" CONCAT: "), c.pieces > 0 && !c.concat_folded ? 1 : 0) << ex;
  }
}

// ---- Fallback to the reference backend ----------------------------------------------------------

TEST(OneDnnFallback, Int32AddRunsOnReferenceWithTheReason) {
  GraphBuilder b("main");
  const TensorType t{DType::kInt32, {2, 3}};
  ValueId x = b.input("x", t), y = b.input("y", t);
  b.output(b.op(Op::ADD, {x, y}));
  Module m(b.finish());
  auto dnn = Model::from_module(m, kOneDnn);
  const std::string ex = dnn->explain();
  EXPECT_NE(ex.find(" reference ADD:"), std::string::npos) << ex;
  EXPECT_NE(ex.find("not on onednn: ADD on i32: only fp32 is offloaded"), std::string::npos) << ex;
  EXPECT_NE(ex.find("onednn: 0 kernels"), std::string::npos) << ex;
  Tensor a = Tensor::from_ints(t, std::vector<int64_t>{1, -2, 3, 100000, 5, -6});
  Tensor c = Tensor::from_ints(t, std::vector<int64_t>{10, 20, -30, 7, 0, 6});
  Tensor got = run_model(dnn, {a, c})[0];
  EXPECT_EQ(got.to_ints(), (std::vector<int64_t>{11, 18, -27, 100007, 5, 0}));
}

TEST(OneDnnFallback, DeclinedOperatorsNameTheirReason) {
  struct Case {
    std::string name, unit, reason;
    std::function<Module(Net&)> build;
  };
  const std::vector<Case> cases = {
      {"SUB broadcasting its first operand", " reference SUB:",
       "not on onednn: SUB broadcasting both operands (oneDNN broadcasts only the second)",
       [](Net& n) {
         ValueId a = n.input({1, 1, 1, 5}), x = n.input({2, 3, 4, 5});
         return n.finish({n.sub(a, x)});
       }},
      {"a broadcast oneDNN runs slowly", " reference ADD:", "not on onednn: ADD broadcasting [1,3,4,1] to [2,3,4,5]",
       [](Net& n) {
         ValueId x = n.input({2, 3, 4, 5}), a = n.input({1, 3, 4, 1});
         return n.finish({n.add(x, a)});
       }},
      {"both operands broadcast", " reference MUL:", "not on onednn: MUL broadcasting both operands",
       [](Net& n) {
         ValueId x = n.input({2, 1, 5}), a = n.input({1, 3, 1});
         return n.finish({n.mul(x, a)});
       }},
      {"CONV2D with runtime weights", " reference CONV2D:",
       "not on onednn: weights are not a constant (prepared weights need one)",
       [](Net& n) {
         ValueId x = n.input({1, 6, 6, 3}), w = n.input({4, 3, 3, 3});
         return n.finish({n.conv2d(x, w, n.weight({4}), {1, 1, 1, 1}, {1, 1}, {1, 1})});
       }},
      {"TRANSPOSE_CONV2D with out_pad > 0", " reference TRANSPOSE_CONV2D:",
       "not on onednn: TRANSPOSE_CONV2D with out_pad > 0 (output padding) is not offloaded",
       [](Net& n) {
         ValueId x = n.input({1, 4, 4, 3});
         return n.finish({n.transpose_conv(x, n.weight({2, 3, 3, 3}), n.weight({2}), {1, 0, 0, 1}, {2, 2})});
       }},
      {"an operator without a oneDNN primitive", " reference ERF:", "not on onednn: ERF has no oneDNN primitive here",
       [](Net& n) { return n.finish({n.unary(Op::ERF, n.input({3, 4}))}); }},
  };
  uint32_t seed = 2700;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Net net(seed++);
    Module m = c.build(net);
    auto dnn = check_vs_reference(m, net.feeds, {}, kExact, /*all_on_onednn=*/false);
    const std::string ex = dnn->explain();
    EXPECT_NE(ex.find(c.unit), std::string::npos) << ex;
    EXPECT_NE(ex.find(c.reason), std::string::npos) << ex;
  }
}

TEST(OneDnnFallback, MixedGraphInterleavesBackends) {
  // conv (onednn) -> FLOOR (reference) -> ADD (onednn) -> ERF (reference) -> softmax (onednn).
  Net net(2800);
  ValueId x = net.input({1, 6, 6, 4});
  ValueId c = net.conv2d(x, net.weight({8, 3, 3, 4}), net.weight({8}), {1, 1, 1, 1}, {1, 1}, {1, 1});
  ValueId ng = net.unary(Op::FLOOR, c);
  ValueId a = net.add(ng, net.weight({1, 1, 1, 8}));
  ValueId e = net.unary(Op::ERF, a);
  ValueId mx = net.reduce(Op::REDUCE_MAX, e, 3);
  ValueId ex = net.unary(Op::EXP, net.sub(e, mx));
  ValueId y = net.mul(ex, net.unary(Op::RECIPROCAL, net.reduce(Op::REDUCE_SUM, ex, 3)));
  Module m = net.finish({y, c});
  auto dnn = check_vs_reference(m, net.feeds, {"CONV2D", "ADD", "SOFTMAX"}, kTolAccumulate, /*all_on_onednn=*/false);
  const std::string explain = dnn->explain();
  EXPECT_NE(explain.find(" reference FLOOR:"), std::string::npos) << explain;
  EXPECT_NE(explain.find(" reference ERF:"), std::string::npos) << explain;
}

// ---- Runtime behaviour ----------------------------------------------------------------------------

// A small CNN + classifier with every kind of prepared kernel: convolutions with fused ops,
// depthwise, pooling, a matmul with constant weights and a softmax.
Module small_network(Net& net) {
  ValueId x = net.input({2, 20, 20, 8});
  ValueId c1 = net.relu(net.conv2d(net.pad_hw(x, {1, 1, 1, 1}, 0.0), net.weight({16, 3, 3, 8}, -0.5, 0.5),
                                   net.weight({16}), {0, 0, 0, 0}, {1, 1}, {1, 1}));
  ValueId d1 = net.clamp(net.depthwise(c1, net.weight({3, 3, 16, 2}, -0.5, 0.5), net.weight({32}), {0, 1, 0, 1},
                                       {2, 2}, {1, 1}),
                         0.0, 6.0);
  ValueId c2 = net.conv2d(d1, net.weight({32, 1, 1, 32}, -0.3, 0.3), net.weight({32}), {0, 0, 0, 0}, {1, 1}, {1, 1});
  ValueId r = net.swish(net.add(c2, d1));
  ValueId p = net.avg_pool(r, {10, 10}, {1, 1}, {0, 0, 0, 0});  // [2,1,1,32]
  ValueId f = net.reshape(p, {1, 2, 32});
  ValueId logits = net.add(net.matmul(f, net.weight({1, 32, 10})), net.weight({1, 1, 10}));
  ValueId mx = net.reduce(Op::REDUCE_MAX, logits, 2);
  ValueId e = net.unary(Op::EXP, net.sub(logits, mx));
  ValueId prob = net.mul(e, net.unary(Op::RECIPROCAL, net.reduce(Op::REDUCE_SUM, e, 2)));
  return net.finish({prob, r});
}

const std::vector<std::string> kSmallNetworkPatterns = {"PAD+CONV2D+CLAMP", "DEPTHWISE_CONV2D+CLAMP",
                                                        "CONV2D+ADD+SWISH", "AVG_POOL2D", "MATMUL+BIAS", "SOFTMAX"};

TEST(OneDnnRuntime, TwoThreadsMatchOneThreadAndTheReference) {
  Net net(2900);
  Module m = small_network(net);
  auto dnn = check_vs_reference(m, net.feeds, kSmallNetworkPatterns, kTolAccumulate, true, /*threads=*/2);
  std::vector<Tensor> one = run_model(dnn, net.feeds, 1);
  std::vector<Tensor> two = run_model(dnn, net.feeds, 2);
  ASSERT_EQ(one.size(), two.size());
  for (size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(close(two[i], one[i], kTolAccumulate)) << "output " << i;
}

TEST(OneDnnRuntime, RepeatedRunsOfOneContextAreIdentical) {
  // Cached primitives and prepared weights: run A, A, B, A; every A identical; B different.
  Net net(2910);
  Module m = small_network(net);
  auto dnn = Model::from_module(m, kOneDnn);
  expect_offloaded(*dnn, kSmallNetworkPatterns);
  EXPECT_GT(dnn->memory_stats().prepared_bytes, 0u);  // reordered weights kept from prepare
  Net other(2911);
  std::vector<Tensor> b_feeds = {other.random({2, 20, 20, 8})};
  for (int threads : {1, 2}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    Context ctx(dnn, {.threads = threads});
    std::vector<Tensor> a1 = ctx.run(net.feeds);
    std::vector<Tensor> a2 = ctx.run(net.feeds);
    std::vector<Tensor> b = ctx.run(b_feeds);
    std::vector<Tensor> a3 = ctx.run(net.feeds);
    for (size_t i = 0; i < a1.size(); ++i) {
      EXPECT_TRUE(a1[i].identical(a2[i])) << "output " << i;
      EXPECT_TRUE(a1[i].identical(a3[i])) << "output " << i;
      EXPECT_FALSE(a1[i].identical(b[i])) << "output " << i;
    }
  }
}

TEST(OneDnnRuntime, TwoContextsOfOneModelAreIdentical) {
  Net net(2920);
  Module m = small_network(net);
  auto dnn = Model::from_module(m, kOneDnn);
  Context c1(dnn), c2(dnn);
  std::vector<Tensor> r1 = c1.run(net.feeds);
  std::vector<Tensor> r2 = c2.run(net.feeds);
  std::vector<Tensor> r1b = c1.run(net.feeds);  // interleaved with the other context
  ASSERT_EQ(r1.size(), r2.size());
  for (size_t i = 0; i < r1.size(); ++i) {
    EXPECT_TRUE(r1[i].identical(r2[i])) << "output " << i;
    EXPECT_TRUE(r1[i].identical(r1b[i])) << "output " << i;
  }
}

TEST(OneDnnRuntime, ContextsOnConcurrentThreadsMatchSerialRuns) {
  // A Model is shared by contexts that run at the same time on different threads: primitives and
  // prepared weights are shared, scratch memory comes from each context's own arena.
  Net net(2940);
  Module m = small_network(net);
  auto dnn = Model::from_module(m, kOneDnn);
  std::vector<Tensor> serial = run_model(dnn, net.feeds);
  std::vector<std::vector<Tensor>> results(2);
  std::vector<std::thread> workers;
  for (size_t t = 0; t < results.size(); ++t) {
    workers.emplace_back([&, t] {
      Context ctx(dnn);
      for (int run = 0; run < 4; ++run) results[t] = ctx.run(net.feeds);
    });
  }
  for (std::thread& w : workers) w.join();
  for (size_t t = 0; t < results.size(); ++t) {
    ASSERT_EQ(results[t].size(), serial.size());
    for (size_t i = 0; i < serial.size(); ++i) EXPECT_TRUE(results[t][i].identical(serial[i])) << "thread " << t << " output " << i;
  }
}

TEST(OneDnnRuntime, LibraryScratchpadGivesTheSameResults) {
  Net net(2930);
  Module m = small_network(net);
  auto arena = Model::from_module(m, kOneDnn);
  BackendOptions lib = kOneDnn;
  lib.library_scratchpad = true;
  auto library = Model::from_module(m, lib);
  expect_offloaded(*library, kSmallNetworkPatterns);
  std::vector<Tensor> x = run_model(arena, net.feeds), y = run_model(library, net.feeds);
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_TRUE(close(y[i], x[i], kTolAccumulate)) << "output " << i;
}


// ---- NaN ------------------------------------------------------------------------------------------

Tensor with_nans(const Tensor& t, int every, int offset = 0) {
  std::vector<double> v = t.to_doubles();
  for (size_t i = static_cast<size_t>(offset); i < v.size(); i += static_cast<size_t>(every))
    v[i] = std::numeric_limits<double>::quiet_NaN();
  return Tensor::from_doubles(t.type(), v);
}

// ---- Fused element-wise loops (Region::kElementwise) ----------------------------------------------

// The kernels a profiled run of `m` (default priority) executed, as "PATTERN implementation".
std::vector<std::string> kernels_run(Context& ctx) {
  std::vector<std::string> out;
  for (const KernelProfile& k : ctx.profile()) out.push_back(k.pattern + " " + k.implementation);
  return out;
}

// An LSTM cell's update, c' = sigmoid(f) * c + sigmoid(i) * tanh(g) and h = sigmoid(o) * tanh(c'):
// two chains that start apart, meet at c' and go on to h, both results read outside. It runs as one
// loop of 9 steps under the default priority, at a size of one partial block, of several blocks
// with a ragged end, and past 64K elements on two threads, within the activation loop's tolerance.
TEST(OneDnnVsReference, LstmCellRunsAsOneElementwiseLoop) {
  if (!backend::cpu::gemm_avx2_supported()) GTEST_SKIP() << "this CPU has no AVX2 + FMA (SIGMOID / TANH steps)";
  for (const Shape& s : {Shape{1, 1, 48}, Shape{1, 3, 37}, Shape{2, 130, 260}})
    for (int threads : {1, 2}) {
      SCOPED_TRACE(shape_str(s) + " on " + std::to_string(threads) + " threads");
      Net net(2300);
      ValueId i = net.input(s, -4, 4), f = net.input(s, -4, 4), g = net.input(s, -4, 4), o = net.input(s, -4, 4),
              c = net.input(s, -2, 2);
      ValueId c2 = net.add(net.mul(net.unary(Op::SIGMOID, f), c),
                           net.mul(net.unary(Op::SIGMOID, i), net.unary(Op::TANH, g)));
      ValueId h = net.mul(net.unary(Op::SIGMOID, o), net.unary(Op::TANH, c2));
      Module m = net.finish({h, c2});
      Context ctx(Model::from_module(m, BackendOptions{}), ContextOptions{.threads = threads});
      ctx.set_profiling(true);
      const std::vector<Tensor> got = ctx.run(net.feeds);
      EXPECT_EQ(kernels_run(ctx), std::vector<std::string>{"ELEMENTWISE[9 ops] weft_loop[9]:" + loop_isa()});
      Context ref(Model::from_module(m, kReference));
      const std::vector<Tensor> want = ref.run(net.feeds);
      for (size_t k = 0; k < 2; ++k) EXPECT_TRUE(close(got[k], want[k], kTolElementwise)) << "output " << k;
    }
}

// Mish as the ONNX importer lowers x * tanh(softplus(x)): softplus as max(x, 0) + log(1 + exp(-|x|))
// (ABS, NEGATE, EXP, ADD, LOG, CLAMP, ADD), then TANH and MUL, plus a residual: one loop of 10 steps
// under the default priority, within the activation loop's tolerance of the reference; NEGATE
// flips the sign bit (-0 and NaN included) bit for bit.
TEST(OneDnnVsReference, MishRunsAsOneElementwiseLoop) {
  if (!backend::cpu::gemm_avx2_supported()) GTEST_SKIP() << "this CPU has no AVX2 + FMA (EXP / LOG / TANH steps)";
  for (const Shape& s : {Shape{1, 3, 37}, Shape{2, 130, 260}}) {
    SCOPED_TRACE(shape_str(s));
    Net net(2305);
    ValueId x = net.input(s, -20, 20), r = net.input(s, -1, 1);
    ValueId z = net.scalar(0.0, 1);
    ValueId e = net.unary(Op::EXP, net.b.op(Op::NEGATE, {net.unary(Op::ABS, x), z, z}));
    ValueId sp = net.add(net.clamp(x, 0.0, std::numeric_limits<float>::infinity()),
                         net.unary(Op::LOG, net.add(e, net.scalar(1.0, 3))));
    Module m = net.finish({net.add(net.mul(x, net.unary(Op::TANH, sp)), r)});
    Context ctx(Model::from_module(m, BackendOptions{}));
    ctx.set_profiling(true);
    const std::vector<Tensor> got = ctx.run(net.feeds);
    EXPECT_EQ(kernels_run(ctx), std::vector<std::string>{"ELEMENTWISE[10 ops] weft_loop[10]:" + loop_isa()});
    Context ref(Model::from_module(m, kReference));
    EXPECT_TRUE(close(got[0], ref.run(net.feeds)[0], kTolElementwise));
  }
  Net net(2306);
  ValueId x = net.input({2, 40}, -2, 2);
  ValueId z = net.scalar(0.0, 1);
  Module m = net.finish({net.add(net.b.op(Op::NEGATE, {x, z, z}), net.scalar(0.0, 2))});
  Tensor feed = with_nans(net.feeds[0], 7);
  float* f = feed.mutable_data<float>();
  f[1] = 0.0f;
  f[2] = -0.0f;
  Context ctx(Model::from_module(m, kOneDnn));
  ctx.set_profiling(true);
  const std::vector<Tensor> got = ctx.run({feed});
  EXPECT_EQ(kernels_run(ctx), std::vector<std::string>{"ELEMENTWISE[2 ops] weft_loop[2]:" + loop_isa()});
  Context ref(Model::from_module(m, kReference));
  EXPECT_TRUE(got[0].identical(ref.run({feed})[0]));
}

// Every exact step kind in one loop, bit for bit the reference's: ADD of one value, SUB, MUL by one
// value per last-axis index, MAXIMUM (PROPAGATE) and MINIMUM (IGNORE) of NaN-holding inputs, CLAMP
// under both modes, ABS and RECIPROCAL (of zeros too), with an intermediate also read outside.
TEST(OneDnnVsReference, ExactElementwiseLoopStepsMatchTheReferenceBitForBit) {
  const int64_t propagate = static_cast<int64_t>(NanMode::kPropagate), ignore = static_cast<int64_t>(NanMode::kIgnore);
  for (const Shape& s : {Shape{2, 3, 37}, Shape{1, 1, 16}, Shape{3, 70, 400}}) {
    SCOPED_TRACE(shape_str(s));
    Net net(2310);
    ValueId x = net.input(s, -3, 3), y = net.input(s, -3, 3);
    Shape col(s.size(), 1);
    col.back() = s.back();
    ValueId r = net.add(x, net.scalar(0.375, static_cast<int>(s.size())));
    r = net.sub(r, y);
    r = net.mul(r, net.weight(col, -2, 2));
    ValueId mx = net.b.op(Op::MAXIMUM, {r, y}, {{"nan_mode", propagate}});
    ValueId mn = net.b.op(Op::MINIMUM, {mx, x}, {{"nan_mode", ignore}});
    ValueId c1 = net.b.op(Op::CLAMP, {mn}, {{"min_val", scalar0(-1)}, {"max_val", scalar0(1)}, {"nan_mode", ignore}});
    ValueId c2 = net.b.op(Op::CLAMP, {net.unary(Op::ABS, r)},
                          {{"min_val", scalar0(0)}, {"max_val", scalar0(0.5)}, {"nan_mode", propagate}});
    ValueId q = net.unary(Op::RECIPROCAL, net.sub(c1, c2));
    Module m = net.finish({q, mx});
    net.feeds[0] = with_nans(net.feeds[0], 11);
    net.feeds[1] = with_nans(net.feeds[1], 13, 3);
    Context ctx(Model::from_module(m, kOneDnn));
    ctx.set_profiling(true);
    const std::vector<Tensor> got = ctx.run(net.feeds);
    EXPECT_EQ(kernels_run(ctx), std::vector<std::string>{"ELEMENTWISE[10 ops] weft_loop[10]:" + loop_isa()});
    Context ref(Model::from_module(m, kReference));
    const std::vector<Tensor> want = ref.run(net.feeds);
    for (size_t k = 0; k < 2; ++k) EXPECT_TRUE(got[k].identical(want[k])) << "output " << k;
  }
}

// A group stays convex and runs where its last node is: y = x + 1 feeds a TANH of another shape
// (through RESHAPEs) whose result comes back into z = (y + x) * t. The MUL cannot join y's group
// (the TANH would have to run in the middle of it), and y + x can only join it if the group ran
// before the TANH, which it does not (it runs at its last node): so no group forms, and the results
// are right. A node the loop does not take (ERF) splits a chain in two groups.
TEST(OneDnnVsReference, ElementwiseGroupsStayConvexAndSplitAtForeignNodes) {
  {
    Net net(2320);
    ValueId x = net.input({4, 8});
    ValueId y = net.add(x, net.scalar(1, 2));
    ValueId t = net.reshape(net.unary(Op::TANH, net.reshape(y, {32})), {4, 8});
    ValueId z = net.mul(net.add(y, x), t);
    auto dnn = check_vs_reference(net.finish({z}), net.feeds, {}, kTolElementwise, false);
    EXPECT_EQ(dnn->explain().find("ELEMENTWISE"), std::string::npos) << dnn->explain();
  }
  {
    Net net(2321);
    ValueId x = net.input({2, 50});
    ValueId a = net.mul(net.add(x, net.scalar(0.5, 2)), x);
    ValueId e = net.unary(Op::ERF, a);
    ValueId z = net.sub(net.mul(e, x), a);
    auto dnn = check_vs_reference(net.finish({z}), net.feeds, {"ELEMENTWISE[2 ops]"}, kTolElementwise, false);
    const std::string ex = dnn->explain();
    EXPECT_NE(ex.find("2 x ELEMENTWISE[2 ops]"), std::string::npos) << ex;
    EXPECT_NE(ex.find("reference ERF"), std::string::npos) << ex;
  }
}

struct NanCase {
  std::string pattern;
  std::function<ValueId(Net&, ValueId, ValueId)> build;
};

// Runs each case with NaN in both inputs (every 11th element of x, every 13th of y from 3).
void check_nan_cases(const std::vector<NanCase>& cases, uint32_t seed) {
  for (const NanCase& c : cases) {
    SCOPED_TRACE(c.pattern);
    Net net(seed++);
    ValueId x = net.input({2, 4, 6, 3});
    ValueId y = net.input({2, 4, 6, 3});
    Module m = net.finish({c.build(net, x, y)});
    net.feeds[0] = with_nans(net.feeds[0], 11);
    net.feeds[1] = with_nans(net.feeds[1], 13, 3);
    check_vs_reference(m, net.feeds, {c.pattern}, kTolAccumulate);
  }
}

TEST(OneDnnNaN, ArithmeticActivationsAndAccumulationsPropagateNaN) {
  // NaN inputs give NaN at the same positions on both backends wherever arithmetic carries them.
  const std::vector<NanCase> cases = {
      {"ADD", [](Net& n, ValueId x, ValueId y) { return n.add(x, y); }},
      {"SUB", [](Net& n, ValueId x, ValueId y) { return n.sub(x, y); }},
      {"MUL", [](Net& n, ValueId x, ValueId y) { return n.mul(x, y); }},
      {"TANH", [](Net& n, ValueId x, ValueId) { return n.unary(Op::TANH, x); }},
      {"SIGMOID", [](Net& n, ValueId x, ValueId) { return n.unary(Op::SIGMOID, x); }},
      {"RSQRT", [](Net& n, ValueId x, ValueId) { return n.unary(Op::RSQRT, n.unary(Op::ABS, x)); }},
      {"MATMUL", [](Net& n, ValueId x, ValueId) { return n.matmul(n.reshape(x, {2, 24, 3}), n.weight({2, 3, 5})); }},
      {"CONV2D+GELU", [](Net& n, ValueId x, ValueId) {
         return n.gelu_erf(n.conv2d(x, n.weight({4, 1, 1, 3}), n.weight({4}), {0, 0, 0, 0}, {1, 1}, {1, 1}));
       }},
      {"CONV2D+SWISH", [](Net& n, ValueId x, ValueId) {
         return n.swish(n.conv2d(x, n.weight({4, 1, 1, 3}), n.weight({4}), {0, 0, 0, 0}, {1, 1}, {1, 1}));
       }},
      {"CONV2D+TANH", [](Net& n, ValueId x, ValueId) {
         return n.unary(Op::TANH, n.conv2d(x, n.weight({4, 1, 1, 3}), n.weight({4}), {0, 0, 0, 0}, {1, 1}, {1, 1}));
       }},
      {"LAYER_NORM", [](Net& n, ValueId x, ValueId) {
         ValueId mean = n.mul(n.reduce(Op::REDUCE_SUM, x, 3), n.scalar(1.0 / 3, 4));
         ValueId d = n.sub(x, mean);
         ValueId var = n.mul(n.reduce(Op::REDUCE_SUM, n.mul(d, d), 3), n.scalar(1.0 / 3, 4));
         return n.mul(d, n.unary(Op::RSQRT, n.add(var, n.scalar(1e-5, 4))));
       }},
      {"ABS", [](Net& n, ValueId x, ValueId) { return n.unary(Op::ABS, x); }},
      {"LOG", [](Net& n, ValueId x, ValueId) { return n.unary(Op::LOG, x); }},  // (negative x: NaN on both)
      {"REDUCE_SUM", [](Net& n, ValueId x, ValueId) { return n.reduce(Op::REDUCE_SUM, x, 3); }},
      {"TRANSPOSE", [](Net& n, ValueId x, ValueId) { return n.transpose(x, {3, 1, 2, 0}); }},
      {"AVG_POOL2D", [](Net& n, ValueId x, ValueId) { return n.avg_pool(x, {2, 2}, {2, 2}, {0, 0, 0, 0}); }},
      {"CONV2D", [](Net& n, ValueId x, ValueId) {
         return n.conv2d(x, n.weight({4, 3, 3, 3}), n.weight({4}), {1, 1, 1, 1}, {1, 1}, {1, 1});
       }},
  };
  check_nan_cases(cases, 3000);
}

// The operators with a nan_mode attribute. oneDNN's max/min/clip/relu/pooling/reduction kernels
// neither propagate NaN (as PROPAGATE, the default, requires) nor consistently ignore it (as
// IGNORE requires): e.g. MAXIMUM(x, NaN) = x, CLAMP(-0.5, 0.5) of NaN = -0.5, ReLU of NaN = 0.
Module nan_mode_case(Net& net, int which, int64_t mode, std::string& name) {
  ValueId x = net.input({2, 4, 6, 3});
  ValueId y = net.input({2, 4, 6, 3});
  ValueId r = kNoValue;
  switch (which) {
    case 0: name = "MAXIMUM"; r = net.b.op(Op::MAXIMUM, {x, y}, {{"nan_mode", mode}}); break;
    case 1: name = "MINIMUM"; r = net.b.op(Op::MINIMUM, {x, y}, {{"nan_mode", mode}}); break;
    case 2:
      name = "CLAMP";
      r = net.b.op(Op::CLAMP, {x}, {{"min_val", scalar0(-0.5)}, {"max_val", scalar0(0.5)}, {"nan_mode", mode}});
      break;
    case 3:
      name = "CLAMP";  // ReLU
      r = net.b.op(Op::CLAMP, {x},
                   {{"min_val", scalar0(0)}, {"max_val", scalar0(std::numeric_limits<float>::max())}, {"nan_mode", mode}});
      break;
    case 4:
      name = "MAX_POOL2D";
      r = net.b.op(Op::MAX_POOL2D, {x},
                   {{"kernel", std::vector<int64_t>{2, 2}}, {"stride", std::vector<int64_t>{2, 2}},
                    {"pad", std::vector<int64_t>{0, 0, 0, 0}}, {"nan_mode", mode}});
      break;
    case 5: name = "REDUCE_MAX"; r = net.b.op(Op::REDUCE_MAX, {x}, {{"axis", int64_t{2}}, {"nan_mode", mode}}); break;
    case 6: name = "REDUCE_MIN"; r = net.b.op(Op::REDUCE_MIN, {x}, {{"axis", int64_t{2}}, {"nan_mode", mode}}); break;
    default: {
      name = "CONV2D+CLAMP";  // fused ReLU
      ValueId c = net.conv2d(x, net.weight({4, 1, 1, 3}), net.weight({4}), {0, 0, 0, 0}, {1, 1}, {1, 1});
      r = net.b.op(Op::CLAMP, {c},
                   {{"min_val", scalar0(0)}, {"max_val", scalar0(std::numeric_limits<float>::max())}, {"nan_mode", mode}});
      break;
    }
  }
  Module m = net.finish({r});
  net.feeds[0] = with_nans(net.feeds[0], 7);
  net.feeds[1] = with_nans(net.feeds[1], 5, 2);
  return m;
}

// EXP of NaN is +inf on oneDNN and its softmax turns a row holding a NaN into 0s; max/min/clamp/
// reductions ignore nan_mode (MAX_POOL2D runs on Weft's own loop, which follows it). By default the oneDNN backend still takes them (as ONNX
// Runtime's kernels, it lets ReLU and max turn a NaN into a number). With nan_exact, every such
// node stays on the reference backend, with the reason, and the results equal the reference's.
std::vector<std::pair<std::string, std::function<Module(Net&)>>> nan_sensitive_cases() {
  std::vector<std::pair<std::string, std::function<Module(Net&)>>> cases;
  for (int64_t mode : {static_cast<int64_t>(NanMode::kPropagate), static_cast<int64_t>(NanMode::kIgnore)}) {
    for (int which = 0; which < 8; ++which) {
      if (which == 4) continue;  // MAX_POOL2D follows nan_mode on oneDNN too (MaxPoolFollowsNanModeBitForBit)
      cases.push_back({"nan_mode " + std::to_string(mode) + " case " + std::to_string(which), [=](Net& net) {
                         std::string name;
                         return nan_mode_case(net, which, mode, name);
                       }});
    }
  }
  cases.push_back({"EXP", [](Net& net) {
                     ValueId x = net.input({2, 4, 6, 3});
                     Module m = net.finish({net.unary(Op::EXP, x)});
                     net.feeds[0] = with_nans(net.feeds[0], 11);
                     return m;
                   }});
  cases.push_back({"SOFTMAX", [](Net& net) {
                     ValueId x = net.input({2, 4, 6, 3});
                     ValueId e = net.unary(Op::EXP, net.sub(x, net.reduce(Op::REDUCE_MAX, x, 3)));
                     Module m = net.finish({net.mul(e, net.unary(Op::RECIPROCAL, net.reduce(Op::REDUCE_SUM, e, 3)))});
                     net.feeds[0] = with_nans(net.feeds[0], 11);
                     return m;
                   }});
  return cases;
}

TEST(OneDnnNaN, NanExactKeepsNanSensitiveNodesOnTheReferenceBackend) {
  uint32_t seed = 3100;
  for (const auto& [name, build] : nan_sensitive_cases()) {
    SCOPED_TRACE(name);
    Net net(seed++);
    Module m = build(net);
    auto exact = Model::from_module(m, {.backends = {"onednn"}, .nan_exact = true});
    auto ref = Model::from_module(m, kReference);
    const std::string ex = exact->explain();
    EXPECT_NE(ex.find("(exact NaN semantics were asked for)"), std::string::npos) << ex;
    std::vector<Tensor> got = run_model(exact, net.feeds), want = run_model(ref, net.feeds);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(close(got[i], want[i], kTolAccumulate)) << ex;
  }
}

TEST(OneDnnNaN, ByDefaultNanSensitiveNodesStillGoToOneDnn) {
  // The default favours fused kernels: the same graphs are offloaded (the deviation is documented
  // in docs/backends.md), and finite inputs give the reference's results.
  uint32_t seed = 3300;
  for (const auto& [name, build] : nan_sensitive_cases()) {
    SCOPED_TRACE(name);
    Net net(seed++);
    Module m = build(net);
    auto fast = Model::from_module(m, kOneDnn);
    const std::string ex = fast->explain();
    EXPECT_EQ(ex.find("exact NaN"), std::string::npos) << ex;
    EXPECT_NE(ex.find("  reference: 0 kernels"), std::string::npos) << ex;
    for (Tensor& t : net.feeds) t = net.random(t.shape());  // finite data
    auto ref = Model::from_module(m, kReference);
    std::vector<Tensor> got = run_model(fast, net.feeds), want = run_model(ref, net.feeds);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(close(got[i], want[i], kTolAccumulate)) << ex;
  }
}


// Bilinear RESIZE with half-pixel sampling at an exact size ratio is oneDNN's linear resampling
// (segmentation heads' 8x upsampling); other samplings (align_corners' offset) stay on the reference.
TEST(OneDnnVsReference, HalfPixelBilinearResize) {
  struct Case {
    Shape x;
    int64_t oh, ow;
  };
  // (Outputs above the 512 elements that oneDNN leaves to the reference backend.)
  const Case cases[] = {{{1, 28, 28, 21}, 224, 224}, {{2, 7, 9, 5}, 14, 27}, {{1, 16, 12, 16}, 8, 6}, {{1, 5, 5, 8}, 15, 10}};
  uint32_t seed = 500;
  for (const Case& k : cases) {
    SCOPED_TRACE(shape_str(k.x) + " -> " + std::to_string(k.oh) + "x" + std::to_string(k.ow));
    Net net(seed++);
    ValueId x = net.input(k.x);
    const int64_t ih = k.x[1], iw = k.x[2];
    // TOSA's half-pixel form with doubled scales: scale 2*out / 2*in, offset in - out.
    const int64_t gh = std::gcd(k.oh, ih), gw = std::gcd(k.ow, iw);
    const int64_t nh = k.oh / gh, dh = ih / gh, nw = k.ow / gw, dw = iw / gw;
    ValueId sc = net.b.constant_shape("scale", {2 * nh, 2 * dh, 2 * nw, 2 * dw});
    ValueId off = net.b.constant_shape("offset", {dh - nh, dw - nw});
    ValueId bd = net.b.constant_shape("border", {(k.oh - 1) * 2 * dh - (ih - 1) * 2 * nh + (dh - nh),
                                                  (k.ow - 1) * 2 * dw - (iw - 1) * 2 * nw + (dw - nw)});
    ValueId y = net.b.op(Op::RESIZE, {x, sc, off, bd}, {{"mode", static_cast<int64_t>(ResizeMode::kBilinear)}});
    Module m = net.finish({y});
    check_vs_reference(m, net.feeds, {"RESIZE"}, 1e-6);
  }
  // align_corners (offset 0, scale (out - 1) / (in - 1)): declined.
  Net net(600);
  ValueId x = net.input({1, 4, 4, 64});
  ValueId y = net.b.op(Op::RESIZE,
                       {x, net.b.constant_shape("scale", {7, 3, 7, 3}), net.b.constant_shape("offset", {0, 0}),
                        net.b.constant_shape("border", {0, 0})},
                       {{"mode", static_cast<int64_t>(ResizeMode::kBilinear)}});
  auto dnn = Model::from_module(net.finish({y}), BackendOptions{.backends = {"onednn", "reference"}});
  EXPECT_NE(dnn->explain().find("reference RESIZE"), std::string::npos) << dnn->explain();
}

}  // namespace
}  // namespace weft::onednn_test
