// Host <-> device transfers of the Vulkan backend: one ABS over f32[n] (a single cheap dispatch) run
// through a Context, so the time is the upload of n floats, the dispatch and the download. The input
// lives in anonymous memory (what an application's arrays are) or in a private read-only file mapping
// (what `weft run` gives a large .npy).
//
//   build/bench/vulkan_transfer_bench                                   # staging copies (the default)
//   WEFT_VULKAN_HOST_IMPORT=1 build/bench/vulkan_transfer_bench         # the caller's memory imported
//
// Compare the two runs per size: that is what importing the caller's memory
// (VK_EXT_external_memory_host, docs/vulkan.md) saves or costs on the device. On lavapipe neither
// stages: device memory is mapped directly.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>

#include "weft/graph.h"
#include "weft/npy.h"
#include "weft/runtime.h"

namespace {

using weft::DType;
using weft::Tensor;
using weft::TensorType;

void BM_AbsRoundTrip(benchmark::State& state) {
  const int64_t n = state.range(0) << 18;  // range(0) MiB of floats
  const bool mapped = state.range(1) != 0;
  const TensorType t{DType::kFp32, {n}};
  weft::GraphBuilder b;
  b.output(b.op(weft::Op::ABS, {b.input("x", t)}));
  std::shared_ptr<const weft::Model> model;
  try {
    model = weft::Model::from_module(weft::Module(b.finish()), {.backends = {"vulkan"}});
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i)] = static_cast<double>(i % 1000) - 500.0;
  Tensor x = Tensor::from_doubles(t, values);
  const std::string path = (std::filesystem::temp_directory_path() / "weft_transfer_bench.npy").string();
  if (mapped) {
    weft::write_npy(path, x);
    x = weft::read_npy(path);  // large files are mapped, not read
  }
  weft::Context ctx(model);
  std::vector<Tensor> out = ctx.run({x});
  for (auto _ : state) {
    out = ctx.run({x});
    benchmark::DoNotOptimize(out[0].bytes());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * n * 8);
  if (mapped) std::remove(path.c_str());
}
BENCHMARK(BM_AbsRoundTrip)
    ->ArgsProduct({{1, 4, 16, 64}, {0, 1}})
    ->ArgNames({"MiB", "mapped"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
