// Per-run overhead of the runtime: a tiny graph (one ADD of two f32[4], and a chain of 16
// elementwise nodes) run through a prepared Context, next to the reference Interpreter on the same
// module (which allocates every intermediate per run). Both compute the same results.
//
// BM_ContextRunFile runs the model file named by $WEFT_BENCH_MODEL (any format Model::load reads)
// on zero inputs, for bench/python_session.py's comparison of one run from C++ and from Python.
//
//   build/bench/runtime_bench
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "weft/graph.h"
#include "weft/interpreter.h"
#include "weft/runtime.h"

namespace {

using weft::DType;
using weft::Op;
using weft::Tensor;
using weft::TensorType;

weft::Module tiny(int chain) {
  weft::GraphBuilder b;
  const TensorType t{DType::kFp32, {4}};
  auto x = b.input("x", t);
  auto y = b.input("y", t);
  auto v = b.op(Op::ADD, {x, y});
  for (int i = 1; i < chain; ++i) v = b.op(i % 2 ? Op::TANH : Op::ADD, i % 2 ? std::vector{v} : std::vector{v, x});
  b.output(v);
  return weft::Module(b.finish());
}

std::vector<Tensor> inputs() {
  const TensorType t{DType::kFp32, {4}};
  return {Tensor::from_doubles(t, std::vector<double>{1, 2, 3, 4}),
          Tensor::from_doubles(t, std::vector<double>{0.5, -1, 2, 0})};
}

void BM_ContextRun(benchmark::State& state) {
  auto model = weft::Model::from_module(tiny(static_cast<int>(state.range(0))));
  weft::Context ctx(model);
  auto in = inputs();
  ctx.set_input(0, in[0]);
  ctx.set_input(1, in[1]);
  for (auto _ : state) {
    ctx.run();
    benchmark::DoNotOptimize(ctx.output(0).bytes());
  }
}
BENCHMARK(BM_ContextRun)->Arg(1)->Arg(16);

void BM_InterpreterRun(benchmark::State& state) {
  weft::Module m = tiny(static_cast<int>(state.range(0)));
  weft::Interpreter interp(m);
  auto in = inputs();
  for (auto _ : state) benchmark::DoNotOptimize(interp.run(in));
}
BENCHMARK(BM_InterpreterRun)->Arg(1)->Arg(16);

void BM_ContextRunFile(benchmark::State& state) {
  const char* path = std::getenv("WEFT_BENCH_MODEL");
  if (!path || !*path) {
    state.SkipWithError("set WEFT_BENCH_MODEL to a model file");
    return;
  }
  auto model = weft::Model::load(path);
  weft::Context ctx(model);
  std::vector<Tensor> in;
  for (size_t i = 0; i < model->inputs().size(); ++i) {
    in.push_back(Tensor::zeros(model->inputs()[i].type));
    ctx.set_input(i, in.back());
  }
  for (auto _ : state) {
    ctx.run();
    benchmark::DoNotOptimize(ctx.output(0).bytes());
  }
}
BENCHMARK(BM_ContextRunFile);

}  // namespace

BENCHMARK_MAIN();
