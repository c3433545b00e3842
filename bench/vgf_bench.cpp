// Load time of a VGF container holding 100 MiB of constants (four f32[1,2560,2560] weights of a
// chain of ADDs). vgf::load() maps the file and checks every table; the constants stay in the
// mapping, so the load time does not depend on their size (target: well under 50 ms) and the
// process's resident memory does not grow by them ("rss_growth_MiB"). For comparison: the same
// load with SPIR-V validation off, the load plus a first touch of every constant page, and
// writing the file.
//
//   build/bench/vgf_bench        (the file goes to $TMPDIR or /tmp and is removed at exit)
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "weft/graph.h"
#include "weft/vgf.h"

namespace {

using weft::DType;
using weft::Op;
using weft::Tensor;
using weft::TensorType;

constexpr int kWeights = 4;
const TensorType kType{DType::kFp32, {1, 2560, 2560}};  // 25 MiB each

weft::Module big_model() {
  weft::GraphBuilder b;
  auto v = b.input("x", kType);
  for (int i = 0; i < kWeights; ++i) {
    Tensor w = Tensor::zeros(kType);
    float* p = w.mutable_data<float>();
    for (int64_t j = 0; j < w.num_elements(); j += 1024) p[j] = static_cast<float>(i + 1);
    v = b.op(Op::ADD, {v, b.constant("w" + std::to_string(i), w)});
  }
  b.output(v);
  return weft::Module(b.finish());
}

const std::string& model_path() {
  static const std::string path = [] {
    const char* t = std::getenv("TMPDIR");
    std::string p = std::string(t && *t ? t : "/tmp") + "/weft_vgf_bench_" + std::to_string(::getpid()) + ".vgf";
    weft::vgf::save(weft::vgf::from_module(big_model()), p);
    std::atexit([] { std::remove(model_path().c_str()); });
    return p;
  }();
  return path;
}

double rss_mib() {
  std::ifstream f("/proc/self/statm");
  long size = 0, resident = 0;
  f >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

void report(benchmark::State& state, const weft::vgf::Container& c, double rss_growth) {
  size_t bytes = 0;
  for (const auto& k : c.constants) bytes += k.data.size();
  state.counters["constant_MiB"] = static_cast<double>(bytes) / (1024.0 * 1024.0);
  state.counters["rss_growth_MiB"] = rss_growth;
}

void BM_Load(benchmark::State& state) {
  const std::string& path = model_path();
  weft::vgf::ReadOptions opt;
  opt.validate_modules = state.range(0) != 0;
  double growth = 0;
  weft::vgf::Container last;
  for (auto _ : state) {
    double before = rss_mib();
    weft::vgf::Container c = weft::vgf::load(path, opt);
    growth = rss_mib() - before;
    benchmark::DoNotOptimize(c.constants.data());
    last = std::move(c);
  }
  report(state, last, growth);
}
BENCHMARK(BM_Load)->Arg(1)->Arg(0)->ArgName("validate")->Unit(benchmark::kMicrosecond)->UseRealTime();

// Load, then read one byte of every page of every constant (page faults from the page cache).
void BM_LoadAndTouchConstants(benchmark::State& state) {
  const std::string& path = model_path();
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  weft::vgf::Container last;
  for (auto _ : state) {
    weft::vgf::Container c = weft::vgf::load(path);
    unsigned sum = 0;
    for (const auto& k : c.constants) {
      for (size_t i = 0; i < k.data.size(); i += page) sum += k.data.data()[i];
    }
    benchmark::DoNotOptimize(sum);
    last = std::move(c);
  }
  report(state, last, 0);
}
BENCHMARK(BM_LoadAndTouchConstants)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Save(benchmark::State& state) {
  weft::vgf::Container c = weft::vgf::load(model_path());
  const std::string out = model_path() + ".out.vgf";
  for (auto _ : state) weft::vgf::save(c, out);
  std::remove(out.c_str());
  report(state, c, 0);
}
BENCHMARK(BM_Save)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
