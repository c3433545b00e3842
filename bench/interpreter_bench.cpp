// Speed of the reference interpreter's CONV2D on a ResNet-50 stage-1 shape: a 3x3 convolution
// 1x56x56x64 -> 64 channels, pad 1, stride 1, in fp32 and in int8 (int32 accumulate), at 1 and 2
// threads, next to a naive 7-deep loop written straight from the TOSA pseudocode (the "peer") so
// the two can be compared. Counter GFLOP/s counts 2 operations per multiply-accumulate.
//
//   build/bench/interpreter_bench
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "weft/graph.h"
#include "weft/interpreter.h"

namespace {

using weft::DType;
using weft::Op;
using weft::Tensor;
using weft::TensorType;

constexpr int64_t kN = 1, kH = 56, kW = 56, kIC = 64, kOC = 64, kK = 3, kPad = 1;
constexpr double kFlops = 2.0 * kN * kH * kW * kOC * kK * kK * kIC;

Tensor random_tensor(DType t, weft::Shape shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> v(static_cast<size_t>(weft::shape_elements(shape)));
  if (t == DType::kFp32) {
    std::uniform_real_distribution<double> d(-1.0, 1.0);
    for (double& x : v) x = d(rng);
  } else {
    std::uniform_int_distribution<int> d(-128, 127);
    for (double& x : v) x = d(rng);
  }
  return Tensor::from_doubles({t, std::move(shape)}, v);
}

struct ConvCase {
  weft::Module module;
  std::vector<Tensor> feeds;
};

ConvCase make_case(DType in_t) {
  const bool fp = in_t == DType::kFp32;
  const DType out_t = fp ? DType::kFp32 : DType::kInt32;
  // Every operand is a graph input (fed each run; buffers are shared, not copied).
  weft::GraphBuilder b("main");
  std::vector<Tensor> feeds = {random_tensor(in_t, {kN, kH, kW, kIC}, 1),
                               random_tensor(in_t, {kOC, kK, kK, kIC}, 2), random_tensor(out_t, {kOC}, 3),
                               Tensor::from_ints({in_t, {1}}, std::vector<int64_t>{fp ? 0 : 5}),
                               Tensor::from_ints({in_t, {1}}, std::vector<int64_t>{fp ? 0 : -3})};
  auto x = b.input("x", feeds[0].type());
  auto w = b.input("w", feeds[1].type());
  auto bias = b.input("b", feeds[2].type());
  auto izp = b.input("izp", feeds[3].type());
  auto wzp = b.input("wzp", feeds[4].type());
  auto y = b.op_multi(Op::CONV2D, {x, w, bias, izp, wzp},
                      {{"pad", std::vector<int64_t>{kPad, kPad, kPad, kPad}},
                       {"stride", std::vector<int64_t>{1, 1}},
                       {"dilation", std::vector<int64_t>{1, 1}},
                       {"acc_type", int64_t(fp ? weft::AccType::kFp32 : weft::AccType::kInt32)}},
                      {"y"}, {TensorType{out_t, {kN, kH, kW, kOC}}})[0];
  b.output(y);
  return {weft::Module(b.finish()), feeds};
}

void run_interpreter(benchmark::State& state, DType in_t) {
  ConvCase c = make_case(in_t);
  weft::InterpreterOptions opt;
  opt.threads = static_cast<int>(state.range(0));
  opt.verify = false;
  weft::Interpreter interp(c.module, opt);
  for (auto _ : state) {
    auto out = interp.run(c.feeds);
    benchmark::DoNotOptimize(out);
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(kFlops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.SetItemsProcessed(state.iterations() * kN * kH * kW * kOC);  // output elements
}

void BM_Conv2dFp32(benchmark::State& state) { run_interpreter(state, DType::kFp32); }
void BM_Conv2dInt8(benchmark::State& state) { run_interpreter(state, DType::kInt8); }
BENCHMARK(BM_Conv2dFp32)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Conv2dInt8)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// The naive peer: the CONV2D pseudocode as plain loops over NHWC / [OC,KH,KW,IC] arrays (no repacking,
// bounds test per tap), single-threaded, at the same size.
template <class In, class Acc>
void naive_conv(const std::vector<In>& in, const std::vector<In>& w, const std::vector<Acc>& bias, Acc izp,
                Acc wzp, std::vector<Acc>& out) {
  for (int64_t n = 0; n < kN; ++n)
    for (int64_t oy = 0; oy < kH; ++oy)
      for (int64_t ox = 0; ox < kW; ++ox)
        for (int64_t oc = 0; oc < kOC; ++oc) {
          Acc acc = 0;
          for (int64_t ky = 0; ky < kK; ++ky)
            for (int64_t kx = 0; kx < kK; ++kx)
              for (int64_t ic = 0; ic < kIC; ++ic) {
                int64_t y = oy - kPad + ky, x = ox - kPad + kx;
                if (0 <= y && y < kH && 0 <= x && x < kW) {
                  Acc v = static_cast<Acc>(in[static_cast<size_t>(((n * kH + y) * kW + x) * kIC + ic)]) - izp;
                  Acc wt =
                      static_cast<Acc>(w[static_cast<size_t>(((oc * kK + ky) * kK + kx) * kIC + ic)]) - wzp;
                  acc += v * wt;
                }
              }
          out[static_cast<size_t>(((n * kH + oy) * kW + ox) * kOC + oc)] =
              acc + bias[static_cast<size_t>(oc)];
        }
}

template <class In, class Acc>
void run_naive(benchmark::State& state, Acc izp, Acc wzp) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> d(-100, 100);
  std::vector<In> in(static_cast<size_t>(kN * kH * kW * kIC)), w(static_cast<size_t>(kOC * kK * kK * kIC));
  std::vector<Acc> bias(static_cast<size_t>(kOC)), out(static_cast<size_t>(kN * kH * kW * kOC));
  for (In& v : in) v = static_cast<In>(d(rng));
  for (In& v : w) v = static_cast<In>(d(rng));
  for (Acc& v : bias) v = static_cast<Acc>(d(rng));
  for (auto _ : state) {
    naive_conv<In, Acc>(in, w, bias, izp, wzp, out);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(kFlops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.SetItemsProcessed(state.iterations() * kN * kH * kW * kOC);
}

void BM_NaiveConv2dFp32(benchmark::State& state) { run_naive<float, float>(state, 0.0f, 0.0f); }
void BM_NaiveConv2dInt8(benchmark::State& state) { run_naive<int8_t, int32_t>(state, 5, -3); }
BENCHMARK(BM_NaiveConv2dFp32)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_NaiveConv2dInt8)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
