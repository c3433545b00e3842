// SPIR-V graph modules: encode, decode and both of a 250-operator graph (50 blocks of CONV2D 3x3
// with bias and zero points, ADD of a per-channel constant, CLAMP, RESHAPE to [1,64,8] and back);
// the validator's cost against module size (it must stay linear: Complexity reports the fit).
#include <benchmark/benchmark.h>

#include <random>

#include "weft/graph.h"
#include "weft/spirv.h"

namespace {

using namespace weft;

Tensor random_tensor(TensorType t, std::mt19937& rng) {
  std::uniform_real_distribution<double> dist(-0.5, 0.5);
  std::vector<double> v(static_cast<size_t>(t.num_elements()));
  for (double& x : v) x = dist(rng);
  return Tensor::from_doubles(std::move(t), v);
}

Module chain(int blocks) {
  std::mt19937 rng(1);
  GraphBuilder b;
  const TensorType act{DType::kFp32, {1, 8, 8, 8}};
  ValueId x = b.input("image", act);
  const Tensor zero = Tensor::from_doubles(TensorType{DType::kFp32, {1}}, std::vector<double>{0});
  const Tensor lo = Tensor::from_doubles(TensorType{DType::kFp32, {}}, std::vector<double>{0});
  const Tensor hi = Tensor::from_doubles(TensorType{DType::kFp32, {}}, std::vector<double>{6});
  for (int i = 0; i < blocks; ++i) {
    const std::string p = "b" + std::to_string(i) + ".";
    ValueId w = b.constant(p + "w", random_tensor(TensorType{DType::kFp32, {8, 3, 3, 8}}, rng));
    ValueId bias = b.constant(p + "bias", random_tensor(TensorType{DType::kFp32, {8}}, rng));
    ValueId zp = b.constant(p + "zp", zero);
    ValueId conv = b.op(Op::CONV2D, {x, w, bias, zp, zp},
                        {{"pad", std::vector<int64_t>{1, 1, 1, 1}},
                         {"stride", std::vector<int64_t>{1, 1}},
                         {"dilation", std::vector<int64_t>{1, 1}},
                         {"acc_type", static_cast<int64_t>(AccType::kFp32)}},
                        p + "conv");
    ValueId shift = b.constant(p + "shift", random_tensor(TensorType{DType::kFp32, {1, 1, 1, 8}}, rng));
    ValueId add = b.op(Op::ADD, {conv, shift}, {}, p + "add");
    ValueId relu = b.op(Op::CLAMP, {add}, {{"min_val", lo}, {"max_val", hi}}, p + "relu");
    ValueId flat = b.op(Op::RESHAPE, {relu, b.constant_shape(p + "flat_shape", {1, 64, 8})}, {}, p + "flat");
    x = b.op(Op::RESHAPE, {flat, b.constant_shape(p + "shape", {1, 8, 8, 8})}, {}, p + "out");
  }
  b.output(x);
  return Module(b.finish());
}

const Module& model() {
  static const Module m = chain(50);  // 250 operators
  return m;
}

void BM_Encode(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(spirv::encode(model()));
}

void BM_Decode(benchmark::State& state) {
  const spirv::Binary bin = spirv::encode(model());
  state.counters["words"] = static_cast<double>(bin.words.size());
  for (auto _ : state) benchmark::DoNotOptimize(spirv::decode(bin.words, bin.constants));
}

void BM_EncodeDecode(benchmark::State& state) {
  for (auto _ : state) {
    spirv::Binary bin = spirv::encode(model());
    benchmark::DoNotOptimize(spirv::decode(bin.words, bin.constants));
  }
}

// Graphs of 5 x N operators.
void BM_ValidateGraph(benchmark::State& state) {
  const spirv::Binary bin = spirv::encode(Module(chain(static_cast<int>(state.range(0)))));
  for (auto _ : state) benchmark::DoNotOptimize(spirv::validate(bin.words));
  state.SetComplexityN(static_cast<int64_t>(bin.words.size()));
  state.counters["words"] = static_cast<double>(bin.words.size());
}

// N integer constants (what ValidateBinary.ManyInstructionsAreLinear builds).
void BM_ValidateConstants(benchmark::State& state) {
  std::string text = "OpCapability Shader\nOpMemoryModel Logical GLSL450\n%uint = OpTypeInt 32 0\n";
  for (int64_t k = 0; k < state.range(0); ++k) text += "%c" + std::to_string(k) + " = OpConstant %uint " + std::to_string(k) + "\n";
  const std::vector<uint32_t> words = spirv::assemble(text);
  for (auto _ : state) benchmark::DoNotOptimize(spirv::validate(words));
  state.SetComplexityN(state.range(0));
}

// N graph definitions of a graph type with 1000 outputs (ValidateBinary.ManyGraphsOfAWideTypeAreLinear).
void BM_ValidateWideGraphs(benchmark::State& state) {
  std::string text =
      "OpCapability Shader\nOpCapability VulkanMemoryModel\nOpCapability TensorsARM\nOpCapability GraphARM\n"
      "OpExtension \"SPV_ARM_graph\"\nOpExtension \"SPV_ARM_tensors\"\nOpMemoryModel Logical Vulkan\n"
      "%uint = OpTypeInt 32 0\n%c0 = OpConstant %uint 0\n%c1 = OpConstant %uint 1\n%c2 = OpConstant %uint 2\n"
      "%arr = OpTypeArray %uint %c1\n%shape = OpConstantComposite %arr %c2\n%t = OpTypeTensorARM %uint %c1 %shape\n"
      "%gt = OpTypeGraphARM 0";
  for (int k = 0; k < 1000; ++k) text += " %t";
  text += "\n%v = OpGraphConstantARM %t 0\n";
  for (int64_t k = 0; k < state.range(0); ++k)
    text += "%g" + std::to_string(k) + " = OpGraphARM %gt\nOpGraphSetOutputARM %v %c0\nOpGraphEndARM\n";
  const std::vector<uint32_t> words = spirv::assemble(text);
  const spirv::ValidateOptions strict{.strict = true};
  for (auto _ : state) benchmark::DoNotOptimize(spirv::validate(words, strict));
  state.SetComplexityN(state.range(0));
}

BENCHMARK(BM_ValidateGraph)->RangeMultiplier(4)->Range(16, 1024)->Unit(benchmark::kMicrosecond)->Complexity();
BENCHMARK(BM_ValidateConstants)->RangeMultiplier(4)->Range(1 << 10, 1 << 18)->Unit(benchmark::kMicrosecond)->Complexity();
BENCHMARK(BM_ValidateWideGraphs)->RangeMultiplier(4)->Range(64, 16384)->Unit(benchmark::kMicrosecond)->Complexity();
BENCHMARK(BM_Encode)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Decode)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EncodeDecode)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
