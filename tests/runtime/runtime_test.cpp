// The runtime: results equal the reference interpreter's bit for bit (including in-place and
// aliased values, repeated runs with new inputs), the memory plan never lets live values overlap,
// bindings (borrowed inputs, caller-owned outputs) and their errors, several contexts at once.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include "runtime/memory_plan.h"
#include "weft/interpreter.h"
#include "weft/npy.h"
#include "weft/runtime.h"
#include "weft/text.h"
#include "weft/verify.h"
#include "weft/vgf.h"

namespace weft {
namespace {

// These tests check the runtime's planning and binding bit for bit against the interpreter, so
// they run every node on the reference backend; tests/backends/ covers the other backends.
const BackendOptions kReference{.backends = {"reference"}};
// Load options with the reference backend only (a function: GCC 12 warns, wrongly, that a braced
// temporary LoadOptions may be used uninitialized).
LoadOptions reference_only() {
  LoadOptions o;
  o.backend = kReference;
  return o;
}

Tensor random_tensor(TensorType t, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(-2.0, 2.0);
  std::vector<double> v(static_cast<size_t>(t.num_elements()));
  for (double& x : v) x = d(rng);
  return Tensor::from_doubles(t, v);
}

Tensor f32_scalar1(double v) { return Tensor::from_doubles({DType::kFp32, {1}}, std::vector<double>{v}); }

// A random DAG of elementwise operators, reshapes and identities over f32[4,8] / f32[8,4] values,
// with some values used by several nodes, graph outputs that are views, inputs or constants.
Module random_elementwise_module(uint32_t seed, int nodes) {
  std::mt19937 rng(seed);
  GraphBuilder b("main");
  const TensorType t48{DType::kFp32, {4, 8}};
  std::vector<ValueId> pool = {b.input("x", t48), b.input("y", t48)};
  ValueId c = b.constant("c", random_tensor(t48, seed + 1));
  pool.push_back(c);
  ValueId shift = b.constant("shift", Tensor::from_ints({DType::kInt8, {1}}, std::vector<int64_t>{0}));
  ValueId s84 = b.constant_shape("s84", {8, 4});
  ValueId s48 = b.constant_shape("s48", {4, 8});
  ValueId zp = b.constant("zp", f32_scalar1(0));
  auto pick = [&] { return pool[std::uniform_int_distribution<size_t>(0, pool.size() - 1)(rng)]; };
  for (int i = 0; i < nodes; ++i) {
    ValueId a = pick(), x = pick();
    ValueId r;
    switch (std::uniform_int_distribution<int>(0, 10)(rng)) {
      case 0: r = b.op(Op::ADD, {a, x}); break;
      case 1: r = b.op(Op::SUB, {a, x}); break;
      case 2: r = b.op(Op::MUL, {a, x, shift}); break;
      case 3: r = b.op(Op::MAXIMUM, {a, x}, {{"nan_mode", int64_t{1}}}); break;
      case 4:
        r = b.op(Op::CLAMP, {a}, {{"min_val", Tensor::from_doubles({DType::kFp32, {}}, std::vector<double>{-1})},
                                  {"max_val", Tensor::from_doubles({DType::kFp32, {}}, std::vector<double>{1.5})}});
        break;
      case 5: r = b.op(Op::TANH, {a}); break;
      case 6: r = b.op(Op::NEGATE, {a, zp, zp}); break;
      case 7: r = b.op(Op::RESHAPE, {b.op(Op::RESHAPE, {a, s84}), s48}); break;  // a view of a view
      case 8: r = b.op(Op::IDENTITY, {a}); break;
      case 9: {
        // Rows of two values joined again: contiguous SLICEs, views of their sources.
        ValueId top = b.op(Op::SLICE, {a, b.constant_shape("", {0, 0}), b.constant_shape("", {1, 8})});
        ValueId rest = b.op(Op::SLICE, {x, b.constant_shape("", {1, 0}), b.constant_shape("", {3, 8})});
        r = b.op(Op::CONCAT, {top, rest}, {{"axis", int64_t{0}}});
        break;
      }
      default: r = b.op(Op::SIGMOID, {a}); break;
    }
    pool.push_back(r);
  }
  b.output(pool.back());
  b.output(pool[pool.size() / 2]);
  b.output(pool[0]);  // an input as an output
  b.output(c);        // a constant as an output
  b.output(b.op(Op::RESHAPE, {pool[pool.size() - 2], s84}, {}, "view_out"));
  return Module(b.finish());
}

void expect_identical(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].identical(b[i])) << "output " << i;
}

TEST(Runtime, RandomGraphsMatchTheInterpreterAcrossRuns) {
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Module m = random_elementwise_module(seed, 40);
    auto model = Model::from_module(m, kReference);
    Interpreter interp(model->module());
    Context ctx(model);
    for (uint32_t run = 0; run < 3; ++run) {
      std::vector<Tensor> in = {random_tensor({DType::kFp32, {4, 8}}, seed * 10 + run),
                                random_tensor({DType::kFp32, {4, 8}}, seed * 10 + run + 5)};
      expect_identical(ctx.run(in), interp.run(in));
    }
  }
}

// A SLICE that is one contiguous run of its input (leading axes of size 1, trailing axes whole) is
// a view of the input's storage, also a slice of such a view and a view that is a graph output;
// the input read after it stays intact, and results equal the interpreter's. A SLICE that is not
// contiguous stays a copy (the only SLICE with a profile record: views have none).
TEST(Runtime, ContiguousSlicesAreViewsOfTheirInput) {
  GraphBuilder b("main");
  ValueId x = b.input("x", {DType::kFp32, {3, 4, 8}});
  ValueId s1 = b.op(Op::SLICE, {x, b.constant_shape("", {1, 0, 0}), b.constant_shape("", {1, 4, 8})});
  ValueId s2 = b.op(Op::SLICE, {s1, b.constant_shape("", {0, 1, 0}), b.constant_shape("", {1, 2, 8})});
  ValueId t = b.op(Op::SIGMOID, {s2});
  ValueId u = b.op(Op::ADD, {x, x});
  ValueId n = b.op(Op::SLICE, {x, b.constant_shape("", {0, 0, 2}), b.constant_shape("", {3, 4, 3})});
  for (ValueId v : {t, u, n, s2}) b.output(v);
  Module m(b.finish());
  auto model = Model::from_module(m, kReference);
  Interpreter interp(model->module());
  Context ctx(model);
  ctx.set_profiling(true);
  for (uint32_t run = 0; run < 3; ++run) {
    std::vector<Tensor> in = {random_tensor({DType::kFp32, {3, 4, 8}}, 70 + run)};
    expect_identical(ctx.run(in), interp.run(in));
    int slices = 0;
    for (const KernelProfile& k : ctx.profile()) slices += k.pattern == "SLICE";
    EXPECT_EQ(slices, 1);
  }
  // A view is made again only when its input moves: the same buffer with new contents is seen
  // through the views kept from the run before, a buffer elsewhere gets new ones.
  Tensor in = random_tensor({DType::kFp32, {3, 4, 8}}, 80);
  expect_identical(ctx.run({in}), interp.run(std::vector<Tensor>{in}));
  float* p = in.mutable_data<float>();
  for (int64_t i = 0; i < in.num_elements(); ++i) p[i] = -0.5f * p[i] + 0.25f;
  expect_identical(ctx.run({in}), interp.run(std::vector<Tensor>{in}));
  const Tensor moved = in.clone();
  p[5] = 7.0f;  // (the clone keeps the old value)
  expect_identical(ctx.run({moved}), interp.run(std::vector<Tensor>{moved}));
  expect_identical(ctx.run({in}), interp.run(std::vector<Tensor>{in}));
}

// Whole runs skip the view units while the inputs' storage and the outputs' stay where they were
// (Context::Impl's `steady`). An output that a view reads moves whenever run(inputs) hands the last
// results to the caller, and so does the view: each run's results are its own, also while the
// caller keeps the earlier ones.
TEST(Runtime, ViewsOfAnOutputFollowItsStorageFromRunToRun) {
  GraphBuilder b("main");
  ValueId x = b.input("x", {DType::kFp32, {2, 6}});
  ValueId u = b.op(Op::ADD, {x, x});
  ValueId r = b.op(Op::RESHAPE, {u, b.constant_shape("", {3, 4})});
  ValueId s = b.op(Op::SLICE, {r, b.constant_shape("", {1, 0}), b.constant_shape("", {1, 4})});
  for (ValueId v : {u, r, s}) b.output(v);
  Module m(b.finish());
  auto model = Model::from_module(m, kReference);
  Interpreter interp(model->module());
  Context ctx(model);
  // One input buffer, new contents each run (the inputs do not move; the outputs do).
  Tensor in = random_tensor({DType::kFp32, {2, 6}}, 90);
  auto refill = [&](uint32_t seed) {
    const Tensor t = random_tensor({DType::kFp32, {2, 6}}, seed);
    std::memcpy(in.mutable_data<float>(), t.data<float>(), t.byte_size());
  };
  std::vector<std::vector<Tensor>> kept, want;
  for (uint32_t run = 0; run < 5; ++run) {
    refill(90 + run);
    kept.push_back(ctx.run({in}));
    want.push_back(interp.run(std::vector<Tensor>{in.clone()}));
    expect_identical(kept.back(), want.back());
  }
  for (uint32_t run = 0; run < 5; ++run) {  // released at once: the output storage is reused
    refill(95 + run);
    expect_identical(ctx.run({in}), interp.run(std::vector<Tensor>{in.clone()}));
  }
  for (uint32_t run = 0; run < 5; ++run) expect_identical(kept[run], want[run]);
}

TEST(Runtime, PlanSharesMemoryAndNeverOverlapsLiveValues) {
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    Module m = random_elementwise_module(seed, 60);
    const Graph& g = m.main();
    runtime::MemoryPlan plan = runtime::plan_memory(g);
    EXPECT_LE(plan.arena_bytes, plan.intermediate_bytes);
    // Lifetimes from the graph: [producer, last reader] of each arena value.
    std::vector<int> first(g.values().size(), -1), last(g.values().size(), -1);
    for (int ni = 0; ni < static_cast<int>(g.nodes().size()); ++ni) {
      for (ValueId o : g.node(ni).outputs) first[static_cast<size_t>(o)] = last[static_cast<size_t>(o)] = ni;
      for (ValueId v : g.node(ni).inputs) last[static_cast<size_t>(v)] = std::max(last[static_cast<size_t>(v)], ni);
    }
    for (size_t a = 0; a < g.values().size(); ++a) {
      for (size_t c = a + 1; c < g.values().size(); ++c) {
        const auto& pa = plan.values[a];
        const auto& pc = plan.values[c];
        if (pa.place != runtime::Place::kArena || pc.place != runtime::Place::kArena) continue;
        bool mem_overlap = pa.offset < pc.offset + pc.bytes && pc.offset < pa.offset + pa.bytes;
        if (!mem_overlap) continue;
        // Sharing is allowed only if the lifetimes are disjoint, or one is written in place over
        // the other at the node where the other is last read.
        bool disjoint = last[a] < first[c] || last[c] < first[a];
        bool in_place = (last[a] == first[c] && plan.in_place[static_cast<size_t>(first[c])]) ||
                        (last[c] == first[a] && plan.in_place[static_cast<size_t>(first[a])]);
        EXPECT_TRUE(disjoint || in_place) << "values " << g.values()[a].name << " and " << g.values()[c].name;
      }
    }
  }
}

TEST(Runtime, ElementwiseChainRunsInPlaceInOneSlot) {
  GraphBuilder b;
  const TensorType t{DType::kFp32, {256}};
  ValueId v = b.input("x", t);
  for (int i = 0; i < 10; ++i) v = b.op(i % 2 ? Op::TANH : Op::SIGMOID, {v});
  b.output(b.op(Op::SIGMOID, {v}, {}, "y"));
  auto model = Model::from_module(Module(b.finish()), kReference);
  const MemoryStats& s = model->memory_stats();
  EXPECT_EQ(s.intermediates, 10);
  EXPECT_EQ(s.intermediate_bytes, 10u * 1024u);
  EXPECT_EQ(s.arena_bytes, 1024u);  // every intermediate reuses the first one's slice
  EXPECT_EQ(s.in_place_nodes, 9);
  Interpreter interp(model->module());
  Context ctx(model);
  Tensor x = random_tensor(t, 3);
  expect_identical(ctx.run({x}), interp.run(std::vector<Tensor>{x}));
}

// A tiny model whose intermediate cannot fit in memory: TILE of f32[1,1] to [2^20, 2^20] (4 TiB),
// then a SLICE back to [1,1]. Valid TOSA (under the verifier's element limit); refused when the
// context is created, naming the tensor, before anything is allocated.
TEST(Runtime, ContextRefusesMoreMemoryThanItMayUse) {
  GraphBuilder b;
  ValueId x = b.input("x", TensorType{DType::kFp32, {1, 1}});
  ValueId big = b.op(Op::TILE, {x, b.constant_shape("m", {1 << 20, 1 << 20})}, {}, "huge_tile");
  b.output(b.op(Op::SLICE, {big, b.constant_shape("start", {0, 0}), b.constant_shape("size", {1, 1})}, {}, "y"));
  auto model = Model::from_module(Module(b.finish()), kReference);
  try {
    Context ctx(model);
    FAIL() << "a 4 TiB intermediate was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
    EXPECT_NE(e.message().find("this machine's"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("'huge_tile' f32[1048576,1048576] (4398046511104 bytes)"), std::string::npos)
        << e.message();
  }
  // An explicit limit, on a model that fits the machine: refused above it, accepted at it.
  GraphBuilder c;
  ValueId v = c.input("x", TensorType{DType::kFp32, {256}});
  v = c.op(Op::TANH, {v}, {}, "t");
  c.output(c.op(Op::SIGMOID, {v}, {}, "y"));
  auto small = Model::from_module(Module(c.finish()), kReference);
  const size_t need = small->memory_stats().arena_bytes + small->memory_stats().output_bytes;
  try {
    Context ctx(small, {.max_memory_bytes = need - 1});
    FAIL() << "the limit was not applied";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("the limit of " + std::to_string(need - 1) + " bytes"), std::string::npos)
        << e.message();
    EXPECT_NE(e.message().find("'t' f32[256] (1024 bytes)"), std::string::npos) << e.message();
  }
  Context ok(small, {.max_memory_bytes = need});
  EXPECT_EQ(ok.run({Tensor::zeros(TensorType{DType::kFp32, {256}})}).size(), 1u);
  // Buffers past the machine's memory are refused before anything is touched.
  EXPECT_THROW(Buffer::allocate(physical_memory_bytes() + 1), Error);
}

TEST(Runtime, BundledExampleMatchesTheInterpreterAndItsExpectedOutput) {
  const std::string dir = WEFT_SOURCE_DIR "/examples/tiny_cnn/";
  auto model = Model::load(dir + "tiny_cnn.weft", reference_only());
  ASSERT_EQ(model->inputs().size(), 1u);
  EXPECT_EQ(model->inputs()[0].name, "image");
  EXPECT_EQ(model->outputs()[0].type.str(), "f32[1,10]");
  Tensor image = read_npy(dir + "image.npy");
  Context ctx(model, {.threads = 2});
  ctx.set_input("image", image);
  ctx.run();
  Interpreter interp(model->module());
  EXPECT_TRUE(ctx.output("logits").identical(interp.run(std::vector<Tensor>{image})[0]));
  Tensor expected = read_npy(dir + "expected_logits.npy");
  for (int64_t i = 0; i < expected.num_elements(); ++i)
    EXPECT_NEAR(ctx.output(0).at_double(i), expected.at_double(i), 1e-4) << i;
}

TEST(Runtime, CompiledVgfRunsLikeTheTextModel) {
  const std::string dir = WEFT_SOURCE_DIR "/examples/tiny_cnn/";
  auto text_model = Model::load(dir + "tiny_cnn.weft", reference_only());
  const std::string path = (std::filesystem::temp_directory_path() / "weft_runtime_test.vgf").string();
  vgf::save(vgf::from_module(text_model->module()), path);
  auto vgf_model = Model::load(path, reference_only());
  ASSERT_EQ(vgf_model->inputs().size(), 1u);
  EXPECT_EQ(vgf_model->inputs()[0].name, "image");
  EXPECT_EQ(vgf_model->outputs()[0].name, "logits");
  EXPECT_EQ(vgf_model->memory_stats().constant_bytes, text_model->memory_stats().constant_bytes);
  Tensor image = read_npy(dir + "image.npy");
  Context a(text_model), b(vgf_model);
  EXPECT_TRUE(a.run({image})[0].identical(b.run({image})[0]));
  std::filesystem::remove(path);
}

TEST(Runtime, CallerOwnedOutputsAreWrittenInPlace) {
  Module m = random_elementwise_module(7, 20);
  auto model = Model::from_module(m, kReference);
  Context ctx(model);
  std::vector<float> out0(32, -1.f), view_out(32, -1.f), const_out(32, -1.f);
  ctx.bind_output(model->outputs()[0].name, out0.data(), out0.size() * 4);
  ctx.bind_output("view_out", view_out.data(), view_out.size() * 4);
  ctx.bind_output("c", const_out.data(), const_out.size() * 4);
  std::vector<Tensor> in = {random_tensor({DType::kFp32, {4, 8}}, 1), random_tensor({DType::kFp32, {4, 8}}, 2)};
  ctx.set_input("x", in[0]);
  ctx.set_input("y", in[1]);
  ctx.run();
  Interpreter interp(model->module());
  auto want = interp.run(in);
  EXPECT_EQ(ctx.output(0).bytes(), reinterpret_cast<const uint8_t*>(out0.data()));
  EXPECT_EQ(std::memcmp(out0.data(), want[0].bytes(), 128), 0);
  EXPECT_EQ(std::memcmp(view_out.data(), want[4].bytes(), 128), 0);
  EXPECT_EQ(std::memcmp(const_out.data(), want[3].bytes(), 128), 0);
  EXPECT_TRUE(ctx.output(2).identical(in[0]));
  // Back to runtime-allocated memory: the caller's array is left alone from then on.
  ctx.bind_output(model->outputs()[0].name, nullptr, 0);
  std::fill(out0.begin(), out0.end(), 7.f);
  ctx.run();
  EXPECT_EQ(out0[0], 7.f);
  EXPECT_TRUE(ctx.output(0).identical(want[0]));
}

// The copies (CONCAT, PAD, SLICE, TRANSPOSE, TILE, REVERSE) and the element-wise operators write
// into arena memory that earlier values left dirty, without zeroing it first: every element must
// still come out as the interpreter computes it, run after run with new inputs.
TEST(Runtime, LayoutCopiesOverwriteDirtyArenaMemory) {
  Module m = parse_weft(R"(
graph @main(%x: f32[2,3,4], %y: f32[2,3,4]) -> (%out) {
  %shift: i8[1] = CONST() {values = [0]}
  %a: f32[2,3,4] = MUL(%x, %y, %shift)
  %b: f32[2,3,4] = SUB(%a, %x)
  %t: f32[4,3,2] = TRANSPOSE(%b) {perms = [2, 1, 0]}
  %r: f32[4,3,2] = REVERSE(%t) {axis = 1}
  %pads: shape[6] = CONST_SHAPE() {values = [1, 0, 0, 2, 1, 1]}
  %pc: f32[1] = CONST() {values = [-3]}
  %p: f32[5,5,4] = PAD(%r, %pads, %pc)
  %st: shape[3] = CONST_SHAPE() {values = [1, 1, 1]}
  %sz: shape[3] = CONST_SHAPE() {values = [3, 4, 2]}
  %s: f32[3,4,2] = SLICE(%p, %st, %sz)
  %m: shape[3] = CONST_SHAPE() {values = [1, 1, 2]}
  %l: f32[3,4,4] = TILE(%s, %m)
  %e: f32[3,4,4] = EXP(%l)
  %c: f32[3,4,8] = CONCAT(%l, %e) {axis = 2}
  %out: f32[3,4,8] = ABS(%c)
  return %out
}
)");
  auto model = Model::from_module(m, kReference);
  Context ctx(model);
  Interpreter interp(model->module());
  for (uint32_t seed = 1; seed <= 6; seed += 2) {
    std::vector<Tensor> in = {random_tensor({DType::kFp32, {2, 3, 4}}, seed),
                              random_tensor({DType::kFp32, {2, 3, 4}}, seed + 1)};
    EXPECT_TRUE(ctx.run(in)[0].identical(interp.run(in)[0])) << "seed " << seed;
  }
}

// run(inputs) hands the runtime's output buffers to the caller instead of copying them: what it
// returned must survive later runs, output() must show the last run, and caller-bound memory is
// still copied (the caller's array is rewritten by the next run).
// Shape operands (CONST_SHAPE: RESHAPE's shape, PAD's padding, SLICE's start and size) and constants
// are set up by a context's first run only, in storage of their own: later runs, whose arena
// values overwrite each other, still read the right shapes (bit-identical to the interpreter on
// every run, with different inputs and each run's results dropped).
TEST(Runtime, ConstantsAndShapesSetByTheFirstRunStayValid) {
  GraphBuilder b;
  const TensorType t{DType::kFp32, {2, 3, 4}};
  ValueId x = b.input("x", t);
  ValueId y = b.input("y", t);
  ValueId w = b.constant("w", random_tensor(t, 9));
  ValueId a = b.op(Op::ADD, {x, w});
  ValueId r = b.op(Op::RESHAPE, {a, b.constant_shape("s1", {6, 4})});
  ValueId p = b.op(Op::PAD, {r, b.constant_shape("pads", {1, 0, 2, 1}),
                             b.constant("pv", Tensor::from_doubles({DType::kFp32, {1}}, std::vector<double>{0.5}))});
  ValueId sl = b.op(Op::SLICE, {p, b.constant_shape("st", {1, 1}), b.constant_shape("sz", {6, 4})});
  ValueId m = b.op(Op::TANH, {b.op(Op::ADD, {sl, b.op(Op::RESHAPE, {y, b.constant_shape("s2", {6, 4})})})});
  b.output(b.op(Op::RESHAPE, {m, b.constant_shape("s3", {2, 3, 4})}));
  Module mod(b.finish());
  auto model = Model::from_module(mod, kReference);
  Context ctx(model);
  Interpreter interp(model->module());
  for (uint32_t run = 0; run < 4; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    std::vector<Tensor> in = {random_tensor(t, 20 + run), random_tensor(t, 40 + run)};
    const auto want = interp.run(in);
    const std::vector<Tensor> got = ctx.run(in);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_TRUE(got[0].identical(want[0]));
  }
}

TEST(Runtime, ReturnedOutputsSurviveLaterRuns) {
  Module m = random_elementwise_module(7, 20);
  auto model = Model::from_module(m, kReference);
  Context ctx(model);
  Interpreter interp(model->module());
  std::vector<Tensor> in1 = {random_tensor({DType::kFp32, {4, 8}}, 1), random_tensor({DType::kFp32, {4, 8}}, 2)};
  std::vector<Tensor> in2 = {random_tensor({DType::kFp32, {4, 8}}, 3), random_tensor({DType::kFp32, {4, 8}}, 4)};
  const auto want1 = interp.run(in1), want2 = interp.run(in2);
  std::vector<Tensor> r1 = ctx.run(in1);
  ASSERT_EQ(r1.size(), want1.size());
  EXPECT_EQ(ctx.output(0).bytes(), r1[0].bytes());  // handed over, not copied
  std::vector<Tensor> r2 = ctx.run(in2);
  for (size_t j = 0; j < r1.size(); ++j) {
    EXPECT_TRUE(r1[j].identical(want1[j])) << j;
    EXPECT_TRUE(r2[j].identical(want2[j])) << j;
    EXPECT_TRUE(ctx.output(j).identical(want2[j])) << j;
  }
  EXPECT_NE(r1[0].bytes(), r2[0].bytes());
  // A returned buffer the caller has dropped is written again (no allocation per run); one it holds
  // is not.
  const uint8_t* p1 = r1[0].bytes();
  r1.clear();
  std::vector<Tensor> r3 = ctx.run(in1);
  EXPECT_EQ(r3[0].bytes(), p1);
  EXPECT_TRUE(r3[0].identical(want1[0]));
  EXPECT_TRUE(r2[0].identical(want2[0]));
  std::vector<Tensor> r4 = ctx.run(in2);
  EXPECT_NE(r4[0].bytes(), r2[0].bytes());
  EXPECT_NE(r4[0].bytes(), r3[0].bytes());
  EXPECT_TRUE(r2[0].identical(want2[0]));
  EXPECT_TRUE(r3[0].identical(want1[0]));
  EXPECT_TRUE(r4[0].identical(want2[0]));
  std::vector<float> bound(32, -1.f);
  ctx.bind_output(model->outputs()[0].name, bound.data(), bound.size() * 4);
  std::vector<Tensor> r5 = ctx.run(in1);
  EXPECT_NE(r5[0].bytes(), reinterpret_cast<const uint8_t*>(bound.data()));
  ctx.run(in2);
  EXPECT_TRUE(r5[0].identical(want1[0]));
  EXPECT_EQ(std::memcmp(bound.data(), want2[0].bytes(), 128), 0);
}

TEST(Runtime, BindingErrorsNameTheOperandAndKeepThePreviousBinding) {
  auto model = Model::from_module(random_elementwise_module(3, 5), kReference);
  Context ctx(model);
  try {
    ctx.run();
    FAIL() << "ran without inputs";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("inputs not bound: x f32[4,8], y f32[4,8]"), std::string::npos) << e.what();
  }
  Tensor good = random_tensor({DType::kFp32, {4, 8}}, 1);
  ctx.set_input("x", good);
  ctx.set_input("y", good);
  try {
    ctx.set_input("x", random_tensor({DType::kFp32, {8, 4}}, 1));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("input 'x' expects f32[4,8], got f32[8,4]"), std::string::npos);
  }
  try {
    ctx.set_input("nope", good);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("no input named 'nope'; its inputs are: x f32[4,8], y f32[4,8]"),
              std::string::npos)
        << e.what();
  }
  float small[4];
  EXPECT_THROW(ctx.bind_output(model->outputs()[0].name, small, sizeof small), Error);
  EXPECT_THROW(ctx.output(99), Error);
  ctx.run();  // the good bindings are still in place
  Interpreter interp(model->module());
  EXPECT_TRUE(ctx.output(0).identical(interp.run(std::vector<Tensor>{good, good})[0]));
}

TEST(Runtime, LoadErrorsNameTheFile) {
  try {
    Model::load("/no/such/model.onnx");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/no/such/model.onnx"), std::string::npos);
  }
  EXPECT_THROW(Model::load("/no/such/model.weft"), Error);
}

TEST(Runtime, ControlFlowAndVariables) {
  Module m = parse_weft(R"(
graph @main(%p: bool[1], %x: f32[3]) -> (%y, %count) {
  %y: f32[3] = COND_IF(%p, %x) {then_graph = @double, else_graph = @neg}
  VARIABLE() {name = "n", var_shape = [1], type = FP32, initial_value = [0]}
  %old: f32[1] = VARIABLE_READ() {name = "n"}
  %one: f32[1] = CONST() {values = [1]}
  %count: f32[1] = ADD(%old, %one)
  VARIABLE_WRITE(%count) {name = "n"}
  return %y, %count
}
graph @double(%a: f32[3]) -> (%r) {
  %r: f32[3] = ADD(%a, %a)
  return %r
}
graph @neg(%a: f32[3]) -> (%r) {
  %z: f32[1] = CONST() {values = [0]}
  %r: f32[3] = NEGATE(%a, %z, %z)
  return %r
}
)",
                        "<cf>");
  auto model = Model::from_module(std::move(m), kReference);
  Context ctx(model);
  Tensor x = Tensor::from_doubles({DType::kFp32, {3}}, std::vector<double>{1, -2, 3});
  Tensor yes = Tensor::from_ints({DType::kBool, {1}}, std::vector<int64_t>{1});
  Tensor no = Tensor::from_ints({DType::kBool, {1}}, std::vector<int64_t>{0});
  auto r1 = ctx.run({yes, x});
  EXPECT_EQ(r1[0].to_doubles(), (std::vector<double>{2, -4, 6}));
  EXPECT_EQ(r1[1].to_doubles(), (std::vector<double>{1}));
  auto r2 = ctx.run({no, x});
  EXPECT_EQ(r2[0].to_doubles(), (std::vector<double>{-1, 2, -3}));
  EXPECT_EQ(r2[1].to_doubles(), (std::vector<double>{2}));
  ctx.reset_variables();
  EXPECT_EQ(ctx.run({no, x})[1].to_doubles(), (std::vector<double>{1}));
  Context other(model);  // variables belong to the context
  EXPECT_EQ(other.run({no, x})[1].to_doubles(), (std::vector<double>{1}));
}

TEST(Runtime, FourContextsOfOneModelRunConcurrently) {
  auto model = Model::from_module(random_elementwise_module(11, 80), kReference);
  Interpreter interp(model->module());
  std::vector<std::vector<Tensor>> inputs, expected;
  for (uint32_t i = 0; i < 4; ++i) {
    inputs.push_back({random_tensor({DType::kFp32, {4, 8}}, 100 + i), random_tensor({DType::kFp32, {4, 8}}, 200 + i)});
    expected.push_back(interp.run(inputs.back()));
  }
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Context ctx(model);
      for (int run = 0; run < 50; ++run) {
        auto out = ctx.run(inputs[static_cast<size_t>(t)]);
        for (size_t k = 0; k < out.size(); ++k)
          if (!out[k].identical(expected[static_cast<size_t>(t)][k])) ++mismatches[static_cast<size_t>(t)];
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches, (std::vector<int>{0, 0, 0, 0}));
}

}  // namespace
}  // namespace weft
