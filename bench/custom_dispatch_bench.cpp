// One custom-operator dispatch on a Vulkan device: the GridSample example shader
// (examples/custom_ops/grid_sample) lowered through the registration, run by vk::ComputeKernel.
//
//   build/bench/custom_dispatch_bench [--benchmark_filter=...]        (WEFT_VULKAN_DEVICE selects)
//
// Per size it reports the wall time of one run() (upload + dispatch + download, what a CPU-run
// neighbour sees) and, as counters, the dispatch alone from timestamp queries (gpu_ms) and the
// transfers' share. bench/custom_dispatch_torch.py times torch.nn.functional.grid_sample on the
// same sizes (CPU or CUDA) for the ratio.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <random>

#include "device/vulkan/vulkan.h"
#include "weft/custom.h"

namespace weft {
namespace {

// The ops file of the source tree this was built from, else the one under the working directory
// (a copy of the tree on another machine).
std::string ops_file() {
  const std::string built = std::string(WEFT_SOURCE_DIR) + "/examples/custom_ops/grid_sample/ops.json";
  return std::filesystem::exists(built) ? built : "examples/custom_ops/grid_sample/ops.json";
}

struct Case {
  vk::ComputeKernel kernel;
  std::vector<float> x, grid, y;
};

Case make_case(int64_t h, int64_t w, int64_t c) {
  static bool registered = [] {
    custom::register_ops_file(ops_file());
    return true;
  }();
  (void)registered;
  std::optional<custom::OpSpec> spec = custom::find_op("weft.examples", "grid_sample_bilinear");
  if (!spec) throw std::runtime_error("grid_sample_bilinear is not registered");
  const std::vector<TensorType> ins{{DType::kFp32, {1, h, w, c}}, {DType::kFp32, {1, h, w, 2}}};
  custom::Lowered l = custom::lower(*spec, ins, {}, {.node = "grid_sample"});
  std::vector<custom::BoundResource> res = custom::check_contract(l.payload, ins, l.outputs, {.node = "grid_sample"});
  vk::DispatchDesc d;
  d.name = "grid_sample";
  d.spirv = l.payload.spirv;
  d.entry_point = l.payload.entry_point;
  d.resources = std::move(res);
  d.push_constants = l.payload.push_constant_data;
  d.groups = *l.payload.dispatch;
  Case k{vk::ComputeKernel(vk::open_device(), std::move(d)), {}, {}, {}};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.1f, 1.1f);
  k.x.resize(static_cast<size_t>(h * w * c));
  k.grid.resize(static_cast<size_t>(h * w * 2));
  k.y.resize(k.x.size());
  for (float& v : k.x) v = u(rng);
  for (float& v : k.grid) v = u(rng);
  return k;
}

void BM_GridSampleDispatch(benchmark::State& state) {
  const int64_t hw = state.range(0), c = state.range(1);
  Case k = make_case(hw, hw, c);
  double gpu = 0;
  for (auto _ : state) {
    k.kernel.run({k.x.data(), k.grid.data()}, {k.y.data()});
    gpu += k.kernel.last_gpu_ms();
  }
  state.counters["gpu_ms"] = benchmark::Counter(gpu / static_cast<double>(state.iterations()));
  state.counters["bytes_moved"] =
      benchmark::Counter(static_cast<double>((k.x.size() + k.grid.size() + k.y.size()) * sizeof(float)));
  state.SetLabel(vk::info(*k.kernel.device()).name);
}
BENCHMARK(BM_GridSampleDispatch)->Args({20, 3})->Args({128, 32})->Args({256, 64})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace weft

BENCHMARK_MAIN();
