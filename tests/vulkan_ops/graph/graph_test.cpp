// Whole graphs on the Vulkan backend: regions and their boundaries with CPU-run operators (the
// transfers between them), RESHAPE / IDENTITY as aliases or copies, constants, several contexts of
// one model, and device time in the profile.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <thread>

#include "device/vulkan/vulkan.h"
#include "vk_ops_util.h"

namespace weft::vk_test {
namespace {

const TensorType kF32{DType::kFp32, {2, 3, 8}};

ValueId shift0(GraphBuilder& b) {
  return b.constant("shift", Tensor::from_ints({DType::kInt8, {1}}, std::vector<int64_t>{0}));
}

TEST(VulkanGraph, CpuFallbackInTheMiddleSplitsTheRegionAndTransfers) {
  // ADD -> CAST to bf16 (no shader stores bf16: the CPU runs it) -> CAST back -> MUL: two Vulkan
  // regions around the CPU casts, with a download and an upload between them.
  std::mt19937 rng(5);
  GraphBuilder b;
  ValueId x = b.input("x", kF32), y = b.input("y", kF32);
  ValueId s = b.op(Op::ADD, {x, y});
  ValueId h = b.op_multi(Op::CAST, {s}, {}, {"h"}, {TensorType{DType::kBf16, kF32.shape}})[0];
  ValueId f = b.op_multi(Op::CAST, {h}, {}, {"f"}, {kF32})[0];
  ValueId m = b.op(Op::MUL, {f, x, shift0(b)});
  b.output(b.op(Op::SUB, {m, y}, {}, "out"));
  Module mod(b.finish());
  const std::string ex = check_vs_reference(mod, {random_tensor(kF32, rng), random_tensor(kF32, rng)}, 1e-6, 3);
  EXPECT_NE(ex.find("vulkan ADD"), std::string::npos) << ex;
  EXPECT_NE(ex.find("vulkan ELEMENTWISE[2 ops]"), std::string::npos) << ex;  // MUL and SUB, one dispatch
  EXPECT_NE(ex.find("not on vulkan: no Vulkan shader handles bf16 tensors"), std::string::npos) << ex;
}

// With the default priority (no backend named) TOSA operators go to Vulkan only when its default
// device is a GPU; a CPU implementation (lavapipe, the only device in CI) takes them only when
// "vulkan" is named. Decided from the device list, so that the device is not opened for nothing.
TEST(VulkanGraph, DefaultPriorityKeepsTosaOffACpuDevice) {
  const std::vector<vk::DeviceInfo> devices = vk::list_devices();
  const uint32_t i = vk::select_device("");
  GraphBuilder b;
  ValueId x = b.input("x", kF32), y = b.input("y", kF32);
  b.output(b.op(Op::ADD, {x, y}, {}, "out"));
  Module mod(b.finish());
  auto by_default = Model::from_module(mod, BackendOptions{});
  auto named = Model::from_module(mod, vulkan_first());
  bool default_on_vulkan = false, named_on_vulkan = false;
  for (const KernelPlacement& k : by_default->placement()) default_on_vulkan |= k.backend == "vulkan";
  for (const KernelPlacement& k : named->placement()) named_on_vulkan |= k.backend == "vulkan";
  EXPECT_TRUE(named_on_vulkan) << named->explain();
  if (devices[i].type == "CPU") {
    EXPECT_FALSE(default_on_vulkan) << devices[i].name << "\n" << by_default->explain();
  }
}

TEST(VulkanGraph, ReshapesAreAliasesInsideAndCopiesAtTheBoundary) {
  std::mt19937 rng(6);
  GraphBuilder b;
  ValueId x = b.input("x", kF32);
  // An input reshaped straight to an output (both host tensors: a copy), and a reshape between two
  // operators (an alias), and an IDENTITY of an intermediate that is also an output.
  ValueId r0 = b.op(Op::RESHAPE, {x, b.constant_shape("s0", {6, 8})}, {}, "r0");
  ValueId e = b.op(Op::EXP, {x});
  ValueId r1 = b.op(Op::RESHAPE, {e, b.constant_shape("s1", {48})});
  ValueId n = b.op(Op::NEGATE, {r1, b.constant("z0", Tensor::from_doubles({DType::kFp32, {1}}, std::vector<double>{0})),
                                b.constant("z1", Tensor::from_doubles({DType::kFp32, {1}}, std::vector<double>{0}))});
  ValueId i = b.op(Op::IDENTITY, {n}, {}, "i");
  b.output(r0);
  b.output(i);
  b.output(n);
  Module m(b.finish());
  check_vs_reference(m, {random_tensor(kF32, rng)}, 1e-5, 5);
}

TEST(VulkanGraph, ConstantsAndRepeatedRunsAndSeveralContexts) {
  std::mt19937 rng(7);
  GraphBuilder b;
  ValueId x = b.input("x", kF32);
  ValueId w = b.constant("w", random_tensor(kF32, rng));
  ValueId c = b.constant("c", random_tensor({DType::kFp32, {1, 1, 8}}, rng));
  ValueId a = b.op(Op::MUL, {x, w, shift0(b)});
  b.output(b.op(Op::ADD, {a, c}, {}, "y"));
  Module m(b.finish());
  auto vk = Model::from_module(m, vulkan_first());
  auto ref = Model::from_module(m, reference_only());
  std::vector<std::thread> threads;
  std::vector<int> failures(3, 0);
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 r(100 + t);
      Context cv(vk), cr(ref);
      for (int run = 0; run < 4; ++run) {
        std::vector<Tensor> in = {random_tensor(kF32, r)};
        if (!close(cv.run(in)[0], cr.run(in)[0], 1e-6)) ++failures[t];
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 3; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

TEST(VulkanGraph, ProfileHasDeviceTimePerDispatch) {
  std::mt19937 rng(8);
  GraphBuilder b;
  ValueId x = b.input("x", kF32);
  ValueId e = b.op(Op::EXP, {x});
  b.output(b.op(Op::REDUCE_SUM, {e}, {{"axis", int64_t{0}}}, "y"));  // (EXP, SIGMOID would be one loop)
  Module m(b.finish());
  auto model = Model::from_module(m, vulkan_first());
  Context ctx(model);
  ctx.set_profiling(true);
  ctx.run({random_tensor(kF32, rng)});
  int region = 0, device = 0;
  for (const KernelProfile& k : ctx.profile()) {
    if (k.backend != "vulkan") continue;
    if (k.device) {
      ++device;
      EXPECT_TRUE(k.pattern == "EXP" || k.pattern == "REDUCE_SUM") << k.pattern;
      EXPECT_GE(k.microseconds, 0.0);
    } else {
      ++region;
    }
  }
  EXPECT_EQ(region, 1);
  EXPECT_TRUE(device == 0 || device == 2) << device;  // 0 only on a queue without timestamps
}

}  // namespace
}  // namespace weft::vk_test

namespace weft::vk_test {
namespace {

TEST(VulkanGraph, TensorsLargerThanTheDevicesBufferRangeStayOnTheCpu) {
  // A shader binds each tensor whole: one beyond maxStorageBufferRange (128 MiB on lavapipe) is
  // declined with the limit named, and the model still loads (the CPU runs that node). Nothing runs.
  const uint64_t range = vk::info(*vk::open_device()).max_storage_buffer_range;
  const int64_t elements = 40'000'000;  // 160 MB of fp32
  if (range >= static_cast<uint64_t>(elements) * 4) GTEST_SKIP() << "the device binds " << range << " bytes";
  GraphBuilder b;
  ValueId x = b.input("x", {DType::kFp32, {elements}});
  b.output(b.op(Op::EXP, {x}, {}, "y"));
  auto m = Model::from_module(Module(b.finish()), vulkan_first());
  const std::string ex = m->explain();
  EXPECT_EQ(vulkan_nodes(ex), 0) << ex;
  EXPECT_NE(ex.find("exceeds maxStorageBufferRange"), std::string::npos) << ex;
}

}  // namespace
}  // namespace weft::vk_test

namespace weft::vk_test {
namespace {

// The device patterns of one profiled run of `model` on `in`; empty where the queue has no timestamps.
std::vector<std::string> device_patterns(const std::shared_ptr<const Model>& model, const std::vector<Tensor>& in) {
  Context ctx(model);
  ctx.set_profiling(true);
  ctx.run(in);
  std::vector<std::string> p;
  for (const KernelProfile& k : ctx.profile())
    if (k.backend == "vulkan" && k.device) p.push_back(k.pattern);
  return p;
}

// The fp16 mode's CASTs at a region's boundary run in the host's copies (fp32 rounded to fp16 on the
// way in, widened on the way out), not as dispatches: bit for bit the reference's narrowed graph,
// with values that round to infinity, to subnormals and to ties, an element count that is not a
// multiple of the host's vector width, and an fp16 intermediate that is an output as well as read.
TEST(VulkanGraph, Fp16ModeCastsAtTheBoundaryRunOnTheHost) {
  const TensorType t{DType::kFp32, {3, 5, 37}};
  std::mt19937 rng(11);
  GraphBuilder b;
  ValueId x = b.input("x", t), y = b.input("y", t);
  ValueId a = b.op(Op::ADD, {x, y}, {}, "a");
  b.output(b.op(Op::MUL, {a, x, shift0(b)}, {}, "m"));
  b.output(a);
  Module mod(b.finish());
  std::vector<Tensor> in = {random_tensor(t, rng, -70000, 70000), random_tensor(t, rng, -2, 2)};
  const std::vector<double> special = {65519.0, 65520.0, -65536.0, 1e-6, -3e-8, 1.0 + 1.0 / 2048, 0.0, -0.0,
                                       std::numeric_limits<double>::infinity(), std::nan("")};
  for (size_t i = 0; i < special.size(); ++i) {
    in[0].mutable_data<float>()[7 * i + 3] = static_cast<float>(special[i]);
    in[1].mutable_data<float>()[7 * i + 3] = 0.0f;
  }
  BackendOptions vk = vulkan_first(), ref = reference_only();
  vk.precision = ref.precision = Precision::kFp16;
  auto on_vk = Model::from_module(mod, vk);
  auto on_ref = Model::from_module(mod, ref);
  EXPECT_EQ(vulkan_nodes(on_vk->explain()), 6) << on_vk->explain();  // 2 + 2 CASTs, ADD, MUL
  Context cv(on_vk), cr(on_ref);
  const std::vector<Tensor> got = cv.run(in), want = cr.run(in);
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(close(got[i], want[i], 0.0)) << "output " << i;
  const std::vector<std::string> patterns = device_patterns(on_vk, in);
  if (patterns.empty()) GTEST_SKIP() << "no timestamps on this device's queue: dispatches not listed";
  EXPECT_EQ(std::count(patterns.begin(), patterns.end(), "CAST"), 0);
  EXPECT_EQ(patterns.size(), 1u) << "ADD and MUL as one element-wise dispatch, nothing else";
}

// A CAST whose fp32 input another node of the region reads too stays a dispatch (the device needs
// the fp32 tensor), as does one whose fp32 result the region reads.
TEST(VulkanGraph, BoundaryCastsStayWhereTheRegionReadsTheFp32Side) {
  std::mt19937 rng(12);
  GraphBuilder b;
  ValueId x = b.input("x", kF32);
  const TensorType h{DType::kFp16, kF32.shape};
  ValueId xh = b.op_multi(Op::CAST, {x}, {}, {"xh"}, {h})[0];
  ValueId ax = b.op(Op::ABS, {x}, {}, "ax");
  ValueId e = b.op(Op::ADD, {xh, xh}, {}, "e");
  ValueId ef = b.op_multi(Op::CAST, {e}, {}, {"ef"}, {kF32})[0];
  b.output(b.op(Op::SUB, {ef, ax}, {}, "out"));
  b.output(ef);
  Module mod(b.finish());
  const std::vector<Tensor> in = {random_tensor(kF32, rng)};
  check_vs_reference(mod, in, 0.0);
  const std::vector<std::string> patterns = device_patterns(Model::from_module(mod, vulkan_first()), in);
  if (patterns.empty()) GTEST_SKIP() << "no timestamps on this device's queue: dispatches not listed";
  EXPECT_EQ(std::count(patterns.begin(), patterns.end(), "CAST"), 2) << ::testing::PrintToString(patterns);
}

}  // namespace
}  // namespace weft::vk_test
