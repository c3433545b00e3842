// The CPU backend as it runs on a machine without AVX-512: this binary runs with oneDNN capped at
// AVX2 (ONEDNN_MAX_CPU_ISA=AVX2, set by tests/CMakeLists.txt), so fp32 matmuls by constant weights
// take Weft's AVX2 GEMM (src/backends/onednn/gemm.h) instead of oneDNN's gemm:jit. Checked against
// the reference backend on ragged shapes and every post-op, and for results that do not depend on
// the thread count.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "backends/onednn/gemm.h"
#include "common/scoped_env.h"
#include "onednn/onednn_test_util.h"

namespace weft::onednn_test {
namespace {

// Skips unless this process runs as an AVX2-only machine would.
#define REQUIRE_AVX2_CAP()                                                                             \
  do {                                                                                                 \
    const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");                                               \
    if (!backend::cpu::gemm_avx2_supported()) GTEST_SKIP() << "this CPU has no AVX2 + FMA";            \
    if (!cap || std::strcmp(cap, "AVX2") != 0) GTEST_SKIP() << "run with ONEDNN_MAX_CPU_ISA=AVX2 (ctest does)"; \
  } while (0)

// `m` on 1 and 2 threads, each run checked against the reference backend (`pattern` on oneDNN):
// the results, and whether a kernel named `impl` ran.
struct ThreadRuns {
  std::vector<Tensor> out[2];
  bool ran[2] = {false, false};
  bool same_bits() const {
    return out[0].size() == 1 && out[1].size() == 1 &&
           std::memcmp(out[0][0].bytes(), out[1][0].bytes(), out[0][0].byte_size()) == 0;
  }
};
ThreadRuns run_on_1_and_2_threads(const Module& m, const std::vector<Tensor>& feeds, const std::string& pattern,
                                  const std::string& impl) {
  ThreadRuns r;
  for (int threads : {1, 2}) {
    auto model = check_vs_reference(m, feeds, {pattern}, kTolAccumulate, true, threads);
    Context ctx(model, {.threads = threads});
    ctx.set_profiling(true);
    r.out[threads - 1] = ctx.run(feeds);
    for (const KernelProfile& k : ctx.profile()) r.ran[threads - 1] |= k.implementation == impl;
  }
  return r;
}

// A k x k CONV2D of `oc` outputs over a random input of shape `in` (weights in [-0.3, 0.3]; the
// bottom and right padding widened to fit the stride), plus a residual ADD if asked, then ReLU: on
// 1 and 2 threads as run_on_1_and_2_threads, `impl` the kernel looked for.
ThreadRuns run_conv(uint32_t seed, const Shape& in, int64_t oc, int64_t k, int64_t stride, int64_t dil,
                    std::vector<int64_t> pad, bool residual, const std::string& impl) {
  Net net(seed);
  ValueId x = net.input(in, -2, 2);
  pad[1] = fit_conv_pad(in[1], pad[0], pad[1], k, dil, stride);
  pad[3] = fit_conv_pad(in[2], pad[2], pad[3], k, dil, stride);
  ValueId y = net.conv2d(x, net.weight({oc, k, k, in[3]}, -0.3, 0.3), net.weight({oc}), pad, {stride, stride},
                         {dil, dil});
  if (residual) y = net.add(y, net.input(net.type(y).shape));
  return run_on_1_and_2_threads(net.finish({net.relu(y)}), net.feeds,
                                residual ? "CONV2D+ADD+CLAMP" : "CONV2D+CLAMP", impl);
}

// Each in-register activation against its definition in double precision, over [-100, 100] in
// steps of 1/512, special values and a ragged tail. Bounds: absolute 3e-7 * |x| + 1e-7 * |y| for the
// GELUs (erf within 4e-7), 4 ulp of the result for sigmoid and swish, 3e-7 absolute for tanh, and
// for hard-swish 2 ulp plus the rounding of x / 6 (which near x = -3 dominates a small result).
TEST(WeftGemmAvx2, ActivationsMatchTheirDefinitions) {
  if (!backend::cpu::gemm_avx2_supported()) GTEST_SKIP() << "this CPU has no AVX2 + FMA";
  using K = backend::cpu::EpilogueOp::Kind;
  std::vector<float> x;
  for (double v = -100.0; v <= 100.0; v += 1.0 / 512) x.push_back(static_cast<float>(v));
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 3.9f, 4.0f, 4.1f, -4.1f, 87.0f, -87.0f, 89.0f, -89.0f, 1e30f, -1e30f})
    x.push_back(v);
  x.push_back(std::numeric_limits<float>::infinity());
  x.push_back(-std::numeric_limits<float>::infinity());
  x.push_back(std::numeric_limits<float>::quiet_NaN());
  const double c = std::sqrt(2.0 / 3.14159265358979323846);
  auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  struct Act {
    K kind;
    const char* name;
    std::function<double(double)> f;
    std::function<double(double, double)> bound;  // (x, exact)
  };
  const double ulp = std::ldexp(1.0, -23);
  const std::vector<Act> acts = {
      {K::kGeluErf, "gelu_erf", [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); },
       [](double v, double y) { return 3e-7 * std::abs(v) + 1e-7 * std::abs(y) + 1e-37; }},
      {K::kGeluTanh, "gelu_tanh", [c](double v) { return 0.5 * v * (1.0 + std::tanh(c * (v + 0.044715 * v * v * v))); },
       [](double v, double y) { return 3e-7 * std::abs(v) + 1e-7 * std::abs(y) + 1e-37; }},
      {K::kSigmoid, "sigmoid", sig, [ulp](double, double y) { return 4 * ulp * std::abs(y) + 1e-37; }},
      {K::kSwish, "swish", [sig](double v) { return v * sig(v); },
       [ulp](double, double y) { return 4 * ulp * std::abs(y) + 1e-37; }},
      {K::kTanh, "tanh", [](double v) { return std::tanh(v); }, [](double, double) { return 3e-7; }},
      {K::kHardSwish, "hard_swish", [](double v) { return v * std::min(std::max(v / 6 + 0.5, 0.0), 1.0); },
       [ulp](double v, double y) { return 2 * ulp * std::abs(y) + ulp * v * v / 6 + 1e-37; }},
  };
  for (const Act& a : acts) {
    SCOPED_TRACE(a.name);
    std::vector<float> y = x;
    backend::cpu::activation_avx2(a.kind, y.data(), static_cast<int64_t>(y.size()));
    int bad = 0;
    for (size_t i = 0; i < x.size() && bad < 5; ++i) {
      const double v = x[i], want = a.f(v);
      if (std::isnan(want)) {
        // -inf * 0 in the GELUs and swish, NaN in: NaN as the reference computes it.
        bad += !std::isnan(y[i]);
        EXPECT_TRUE(std::isnan(y[i])) << "x = " << v << ": " << y[i];
        continue;
      }
      const double err = std::isinf(want) && y[i] == want ? 0.0 : std::abs(y[i] - want);
      const bool ok = err <= a.bound(v, want) || (std::abs(want) < 1e-36 && std::abs(y[i]) < 1e-36);
      bad += !ok;
      EXPECT_TRUE(ok) << "x = " << v << ": " << y[i] << " vs " << want << " (error " << err << ")";
    }
  }
}

struct Case {
  int64_t m, k, n;
  std::string pattern;
  std::function<ValueId(Net&, ValueId, int64_t m, int64_t n)> after;
  bool transposed_b = false;
  int64_t batches = 1;
};

TEST(WeftGemmAvx2, MatchesTheReferenceAndTheThreadCount) {
  REQUIRE_AVX2_CAP();
  const std::vector<Case> cases = {
      {2, 5, 3, "MATMUL", [](Net&, ValueId v, int64_t, int64_t) { return v; }},
      {7, 17, 33, "MATMUL+BIAS", [](Net& t, ValueId v, int64_t, int64_t n) { return t.add(v, t.weight({1, 1, n})); }},
      // K over one block of 256 (C carried between k blocks), rows not a multiple of 6, a partial panel.
      {13, 300, 31, "MATMUL+BIAS+GELU",
       [](Net& t, ValueId v, int64_t, int64_t n) { return t.gelu_erf(t.add(v, t.weight({1, 1, n}))); }},
      {50, 513, 40, "MATMUL+BIAS+ADD",
       [](Net& t, ValueId v, int64_t m, int64_t n) { return t.add(t.add(v, t.weight({1, 1, n})), t.input({1, m, n})); }},
      {6, 16, 16, "MATMUL+BIAS+CLAMP", [](Net& t, ValueId v, int64_t, int64_t n) { return t.relu(t.add(t.weight({1, 1, n}), v)); }},
      {61, 64, 48, "MATMUL+BIAS+CLAMP",
       [](Net& t, ValueId v, int64_t, int64_t n) { return t.clamp(t.add(v, t.weight({1, 1, n})), -0.5, 0.75); }},
      {20, 40, 24, "MATMUL+BIAS+SCALE+SHIFT",
       [](Net& t, ValueId v, int64_t, int64_t n) {
         return t.add(t.mul(t.add(v, t.weight({1, 1, n})), t.weight({1, 1, n}, 0.5, 2)), t.scalar(1.5, 3));
       }},
      {9, 33, 20, "MATMUL+BIAS+SIGMOID",
       [](Net& t, ValueId v, int64_t, int64_t n) { return t.unary(Op::SIGMOID, t.add(v, t.weight({1, 1, n}))); }},
      {128, 256, 100, "MATMUL+SWISH", [](Net& t, ValueId v, int64_t, int64_t) { return t.swish(v); }},
      {12, 24, 20, "MATMUL+TANH", [](Net& t, ValueId v, int64_t, int64_t) { return t.unary(Op::TANH, v); }},
      // Weights read through a TRANSPOSE (Gemm transB = 1).
      {10, 70, 19, "TRANSPOSE+MATMUL+BIAS", [](Net& t, ValueId v, int64_t, int64_t n) { return t.add(v, t.weight({1, 1, n})); },
       true},
      // Batched, weights per batch, a residual of the result's shape.
      {11, 40, 21, "MATMUL+BIAS+ADD",
       [](Net& t, ValueId v, int64_t m, int64_t n) { return t.add(t.add(v, t.weight({1, 1, n})), t.input({3, m, n})); },
       false, 3},
  };
  uint32_t seed = 4100;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.pattern + " M" + std::to_string(c.m) + " K" + std::to_string(c.k) + " N" + std::to_string(c.n));
    Net net(seed++);
    ValueId a = net.input({c.batches, c.m, c.k}, -2, 2);
    ValueId b = c.transposed_b ? net.transpose(net.weight({c.batches, c.n, c.k}, -0.3, 0.3), {0, 2, 1})
                               : net.weight({c.batches, c.k, c.n}, -0.3, 0.3);
    Module m = net.finish({c.after(net, net.matmul(a, b), c.m, c.n)});
    const ThreadRuns r = run_on_1_and_2_threads(m, net.feeds, c.pattern, "weft_gemm:avx2");
    EXPECT_TRUE(r.ran[0] && r.ran[1]) << "no kernel ran on weft_gemm:avx2";
    EXPECT_TRUE(r.same_bits()) << "1 and 2 threads differ";
  }
}

// A NaN and infinities in A reach the outputs they feed, through CLAMP as TOSA's (NaN stays NaN).
TEST(WeftGemmAvx2, NonFiniteInputsPropagate) {
  REQUIRE_AVX2_CAP();
  Net net(4200);
  ValueId a = net.input({1, 8, 20});
  Module m = net.finish({net.clamp(net.add(net.matmul(a, net.weight({1, 20, 18})), net.weight({1, 1, 18})), -1, 1)});
  float* x = net.feeds[0].mutable_data<float>();
  x[3] = std::numeric_limits<float>::quiet_NaN();            // row 0
  x[2 * 20 + 5] = std::numeric_limits<float>::infinity();    // row 2
  check_vs_reference(m, net.feeds, {"MATMUL+BIAS+CLAMP"}, kTolAccumulate);
  auto model = Model::from_module(m, kOneDnn);
  std::vector<Tensor> got = run_model(model, net.feeds);
  const float* y = got[0].data<float>();
  for (int j = 0; j < 18; ++j) EXPECT_TRUE(std::isnan(y[j])) << "column " << j;
}

// A's rows read through a transposed view (k not contiguous) stay on oneDNN.
TEST(WeftGemmAvx2, TransposedARunsOnOneDnn) {
  REQUIRE_AVX2_CAP();
  Net net(4300);
  ValueId a = net.transpose(net.input({1, 24, 9}), {0, 2, 1});
  Module m = net.finish({net.matmul(a, net.weight({1, 24, 20}))});
  auto model = check_vs_reference(m, net.feeds, {"TRANSPOSE+MATMUL"}, kTolAccumulate);
  Context ctx(model, {.threads = 1});
  ctx.set_profiling(true);
  ctx.run(net.feeds);
  for (const KernelProfile& k : ctx.profile()) EXPECT_NE(k.implementation, "weft_gemm:avx2");
}

// Grouped convolutions of 4 channels per group (ResNeXt's first stage), which oneDNN's AVX2
// convolutions cannot run directly, on Weft's kernel: against the reference backend, with the same
// bits on 1 and 2 threads. Groups of 8, and channel counts that are not a multiple of 8, stay on
// oneDNN.
TEST(WeftGroupedConvAvx2, MatchesTheReferenceAndTheThreadCount) {
  REQUIRE_AVX2_CAP();
  struct Case {
    Shape in;
    int64_t groups, ocg, k, stride;
    int post;  // 0: none, 1: ReLU, 2: residual ADD then CLAMP
    bool weft;
  };
  const std::vector<Case> cases = {{{1, 14, 14, 128}, 32, 4, 3, 1, 1, true},
                                   {{2, 9, 11, 48}, 12, 4, 3, 2, 0, true},
                                   {{1, 10, 12, 40}, 10, 4, 5, 1, 2, true},
                                   {{1, 6, 7, 16}, 4, 4, 1, 1, 1, true},
                                   {{1, 9, 9, 48}, 6, 8, 3, 1, 1, false},
                                   {{1, 8, 8, 12}, 3, 4, 3, 1, 0, false}};
  uint32_t seed = 4300;
  for (const Case& c : cases) {
    SCOPED_TRACE(vec_str(c.in) + " groups " + std::to_string(c.groups) + " k " + std::to_string(c.k));
    Net net(seed++);
    ValueId x = net.input(c.in, -2, 2);
    ValueId y = grouped_conv(net, x, c.groups, c.ocg, c.k, c.stride);
    std::string pattern = "GROUPED_CONV2D";
    if (c.post == 1) {
      y = net.relu(y);
      pattern += "+CLAMP";
    } else if (c.post == 2) {
      Shape rs = net.type(y).shape;
      y = net.clamp(net.add(y, net.input(rs)), -1.5, 2);
      pattern += "+ADD+CLAMP";
    }
    const ThreadRuns r = run_on_1_and_2_threads(net.finish({y}), net.feeds, pattern, "weft_grouped_conv:avx2");
    EXPECT_EQ(r.ran[0], c.weft);
    EXPECT_EQ(r.ran[1], c.weft);
    if (c.weft) {
      EXPECT_TRUE(r.same_bits()) << "1 and 2 threads differ";  // (oneDNN's im2col GEMM may not)
    }
  }
}

// Atrous convolutions whose padding reaches past what oneDNN's AVX2 kernels take (DeepLabV3's ASPP
// and its dilated ResNet stage in small) run as one GEMM per tap: against the reference backend,
// the same bits on 1 and 2 threads, and the kernel named in the profile.
TEST(WeftTapConvAvx2, MatchesTheReferenceAndTheThreadCount) {
  REQUIRE_AVX2_CAP();
  struct Case {
    Shape in;
    int64_t oc, k, stride, dil;
    bool residual;
  };
  const std::vector<Case> cases = {{{1, 10, 10, 32}, 20, 3, 1, 6, false},   // every tap's columns ragged
                                   {{2, 9, 11, 40}, 24, 3, 1, 5, true},     // batch 2, a residual ADD
                                   {{1, 12, 12, 64}, 16, 3, 1, 12, false},  // the outer taps meet 0 .. 0 rows
                                   {{1, 11, 9, 48}, 8, 3, 2, 4, false},     // strided
                                   {{1, 13, 11, 40}, 16, 3, 2, 5, true}};   // strided, first columns rounded up
  uint32_t seed = 4400;
  for (const Case& c : cases) {
    SCOPED_TRACE(vec_str(c.in) + " dilation " + std::to_string(c.dil) + " stride " + std::to_string(c.stride));
    const int64_t p = c.dil * (c.k / 2);
    const ThreadRuns r =
        run_conv(seed++, c.in, c.oc, c.k, c.stride, c.dil, {p, p, p, p}, c.residual, "weft_tap_conv:avx2");
    EXPECT_TRUE(r.ran[0] && r.ran[1]) << "no kernel ran on weft_tap_conv:avx2";
    EXPECT_TRUE(r.same_bits()) << "1 and 2 threads differ";
  }
}

// 3 x 3 convolutions of stride 1 run as Winograd's F(2 x 2, 3 x 3) (gemm.h): against the
// reference backend (the direct sum, within kTolAccumulate), with the same bits on 1 and 2
// threads. The cases cover ragged tiles at the right and bottom edges, input and output channels
// that are not multiples of 8 or 16, dilation (tiles per residue), asymmetric and no padding,
// batch 2, a residual ADD, and one block whose panels the two threads split. Too few tiles, a
// stride of 2 and 8 input channels stay on oneDNN, a dilation over a third of the output on the
// per-tap GEMM.
TEST(WeftWinogradConvAvx2, MatchesTheReferenceAndTheThreadCount) {
  REQUIRE_AVX2_CAP();
  struct Case {
    Shape in;
    int64_t oc, stride, dil;
    std::vector<int64_t> pad;
    bool residual, weft;
  };
  const std::vector<Case> cases = {
      {{1, 12, 12, 32}, 24, 1, 1, {1, 1, 1, 1}, false, true},     // one block; 16 + 8 output channels
      {{1, 13, 11, 20}, 40, 1, 1, {1, 1, 1, 1}, true, true},      // odd sizes: half tiles at both edges
      {{2, 16, 18, 48}, 16, 1, 1, {0, 0, 0, 0}, false, true},     // batch 2, no padding
      {{1, 19, 17, 40}, 33, 1, 2, {2, 2, 2, 2}, true, true},      // dilation 2, odd residues
      {{1, 30, 22, 24}, 64, 1, 3, {3, 3, 1, 5}, false, true},     // dilation 3, asymmetric padding
      {{1, 40, 40, 16}, 16, 1, 1, {1, 1, 1, 1}, false, true},     // several blocks of 96 tiles
      {{1, 7, 7, 64}, 64, 1, 1, {1, 1, 1, 1}, false, false},      // 16 tiles: oneDNN
      {{1, 14, 14, 32}, 32, 2, 1, {1, 1, 1, 1}, false, false},    // stride 2: oneDNN
      {{1, 14, 14, 8}, 32, 1, 1, {1, 1, 1, 1}, false, false},     // 8 input channels: oneDNN
      {{1, 20, 20, 32}, 32, 1, 7, {7, 7, 7, 7}, false, false}};   // 3 x dilation > 20: the per-tap GEMM
  uint32_t seed = 4500;
  for (const Case& c : cases) {
    SCOPED_TRACE(vec_str(c.in) + " -> " + std::to_string(c.oc) + " stride " + std::to_string(c.stride) + " dilation " +
                 std::to_string(c.dil));
    const ThreadRuns r =
        run_conv(seed++, c.in, c.oc, 3, c.stride, c.dil, c.pad, c.residual, "weft_winograd_conv:avx2");
    EXPECT_EQ(r.ran[0], c.weft);
    EXPECT_EQ(r.ran[1], c.weft);
    if (c.weft) {
      EXPECT_TRUE(r.same_bits()) << "1 and 2 threads differ";
    }
  }
}

// WEFT_CPU_WINOGRAD=off keeps such a convolution on oneDNN; any value but on / off is an error
// that names the variable.
TEST(WeftWinogradConvAvx2, TheVariableTurnsItOffAndABadValueIsAnError) {
  REQUIRE_AVX2_CAP();
  Net net(4600);
  ValueId x = net.input({1, 12, 12, 32});
  ValueId y = net.conv2d(x, net.weight({32, 3, 3, 32}, -0.3, 0.3), net.weight({32}), {1, 1, 1, 1}, {1, 1}, {1, 1});
  const Module m = net.finish({net.relu(y)});
  {
    const test::ScopedEnv off("WEFT_CPU_WINOGRAD", "off");
    const ThreadRuns r = run_on_1_and_2_threads(m, net.feeds, "CONV2D+CLAMP", "weft_winograd_conv:avx2");
    EXPECT_FALSE(r.ran[0] || r.ran[1]);
  }
  const test::ScopedEnv bad("WEFT_CPU_WINOGRAD", "fast");
  try {
    auto model = Model::from_module(m, kOneDnn);
    Context ctx(model);
    ctx.run(net.feeds);
    ADD_FAILURE() << "WEFT_CPU_WINOGRAD=fast was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("WEFT_CPU_WINOGRAD must be 'on' or 'off', not 'fast'"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace weft::onednn_test
