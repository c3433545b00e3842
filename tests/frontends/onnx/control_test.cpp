// ONNX control flow: If, Loop and Scan. Conditions and trip counts known at import time are inlined
// or unrolled; those known only at run time become COND_IF and WHILE_LOOP graphs of the module.
// Every case runs and compares values computed by hand.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "frontends/onnx/onnx_builder.h"
#include "weft/runtime.h"
#include "weft/vgf.h"

namespace weft {
namespace {

using namespace test::onnxb;

// An If node "choose" of the main graph: condition `cond`, result "y", the two branches.
void if_node(ModelBuilder& mb, const std::vector<std::string>& cond, SubGraphBuilder& then_b, SubGraphBuilder& else_b) {
  auto& n = mb.node("If", cond, {"y"}, "choose");
  attr_graph(n, "then_branch", then_b.graph());
  attr_graph(n, "else_branch", else_b.graph());
}

template <class F>
Error error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no weft::Error was thrown";
  return Error(ErrorCode::kInternal, "none");
}

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "missing '" << (needle) << "' in: " << (haystack)

int count_in_module(const Module& m, Op op) {
  int n = 0;
  for (const Graph& g : m.graphs())
    for (const Node& node : g.nodes()) n += node.op == op;
  return n;
}

Tensor scalar_i32(int64_t v) { return i32({}, {v}); }
Tensor scalar_bool(bool v) { return boolean({}, {v ? 1 : 0}); }

// ---- If ------------------------------------------------------------------------------------------

// c: bool[], x: f32[3]; sq = x * x computed outside; then: sq + w (w an outer initializer);
// else: x - sq.
ModelBuilder if_model(const std::string& cond_name = "c", bool cond_is_input = true) {
  ModelBuilder mb(13);
  if (cond_is_input) mb.input(cond_name, kBool, {});
  mb.input("x", kFloat, {3}).output("y");
  mb.init_f("w", {3}, {10, 20, 30});
  mb.node("Mul", {"x", "x"}, {"sq"});
  SubGraphBuilder then_b("then_body"), else_b("else_body");
  then_b.node("Add", {"sq", "w"}, {"t"});
  then_b.output("t");
  else_b.node("Sub", {"x", "sq"}, {"e"});
  else_b.output("e");
  if_node(mb, {cond_name}, then_b, else_b);
  return mb;
}

TEST(OnnxControlFlow, IfWithRunTimeConditionBecomesCondIfAndRunsBothBranches) {
  Module m = if_model().import();
  EXPECT_EQ(count_ops(m, Op::COND_IF), 1);
  ASSERT_EQ(m.graphs().size(), 3u);  // main and the two branches
  // Both branches take the run-time values either reads (sq, x) as explicit inputs, in one list;
  // w stays a constant inside.
  const Graph* then_g = m.find_graph(m.main().node(m.main().nodes().size() - 1).attr_str("then_graph"));
  ASSERT_NE(then_g, nullptr);
  ASSERT_EQ(then_g->inputs().size(), 2u);
  EXPECT_EQ(then_g->value(then_g->inputs()[0]).name, "sq");
  EXPECT_EQ(then_g->value(then_g->inputs()[1]).name, "x");
  int consts = 0;
  for (const Node& n : then_g->nodes()) consts += n.op == Op::CONST;
  EXPECT_EQ(consts, 1);
  const Tensor x = f32({3}, {1, -2, 0.5f});
  auto model = Model::from_module(std::move(m));
  Context ctx(model);
  expect_near(ctx.run({scalar_bool(true), x})[0], {3}, {1 + 10, 4 + 20, 0.25f + 30});
  expect_near(ctx.run({scalar_bool(false), x})[0], {3}, {1 - 1, -2 - 4, 0.5f - 0.25f});
}

TEST(OnnxControlFlow, IfWithConstantConditionInlinesTheTakenBranch) {
  // The condition folds: Less(1, 2) is true.
  ModelBuilder mb = if_model("cond", false);
  mb.init_f("one", {}, {1}).init_f("two", {}, {2});
  auto* nodes = mb.graph()->mutable_node();
  onnx::NodeProto less;
  less.set_op_type("Less");
  less.add_input("one");
  less.add_input("two");
  less.add_output("cond");
  *nodes->Add() = less;
  // Less must come before the If: move it to the front.
  for (int i = nodes->size() - 1; i > 0; --i) nodes->SwapElements(i, i - 1);
  Module m = mb.import();
  EXPECT_EQ(count_in_module(m, Op::COND_IF), 0);
  EXPECT_EQ(m.graphs().size(), 1u);
  expect_near(run_module(std::move(m), {f32({3}, {1, -2, 0.5f})})[0], {3}, {11, 24, 30.25f});

  // A false initializer takes the else branch.
  ModelBuilder mf = if_model("cond", false);
  mf.init_bool("cond", {}, {0});
  Module e = mf.import();
  EXPECT_EQ(count_in_module(e, Op::COND_IF), 0);
  expect_near(run_module(std::move(e), {f32({3}, {1, -2, 0.5f})})[0], {3}, {0, -6, 0.25f});
}

TEST(OnnxControlFlow, IfBranchesMustGiveOutputsOfOneType) {
  // Shapes differ: valid ONNX, but no COND_IF can carry it.
  {
    ModelBuilder mb(13);
    mb.input("c", kBool, {}).input("x", kFloat, {3}).output("y");
    mb.init_f("two", {2}, {1, 2});
    SubGraphBuilder then_b("then_body"), else_b("else_body");
    then_b.node("Identity", {"x"}, {"t"});
    then_b.output("t");
    else_b.node("Identity", {"two"}, {"e"});
    else_b.output("e");
    if_node(mb, {"c"}, then_b, else_b);
    Error e = error_of([&] { mb.import(); });
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_HAS(e.what(), "choose (If");
    EXPECT_HAS(e.what(), "f32[3] from then_branch but f32[2] from else_branch");
    EXPECT_HAS(e.what(), "COND_IF");
    // Bound at compile time, the condition picks one branch and the shapes no longer meet.
    OnnxImportOptions bound;
    bound.bindings["c"] = scalar_bool(false);
    Module m = mb.import(bound);
    expect_near(run_module(std::move(m), {f32({3}, {0, 0, 0})})[0], {2}, {1, 2});
  }
  // Element types differ: invalid ONNX.
  {
    ModelBuilder mb(13);
    mb.input("c", kBool, {}).input("x", kFloat, {3}).output("y");
    SubGraphBuilder then_b("then_body"), else_b("else_body");
    then_b.node("Identity", {"x"}, {"t"});
    then_b.output("t");
    attr_i(else_b.node("Cast", {"x"}, {"e"}), "to", kInt32);
    else_b.output("e", kInt32);
    if_node(mb, {"c"}, then_b, else_b);
    Error e = error_of([&] { mb.import(); });
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_HAS(e.what(), "choose (If");
    EXPECT_HAS(e.what(), "same element type");
  }
}


// ---- Loop ----------------------------------------------------------------------------------------

// Loop(M, cond, x) -> (acc, scans). body(i, c, v): v1 = v + float(i); scan = v1 * x (x of the main
// graph); the condition passes through.
ModelBuilder loop_with_scan(int64_t trips, bool trips_is_input = false) {
  ModelBuilder mb(13);
  if (trips_is_input) mb.input("M", kInt64, {});
  mb.input("x", kFloat, {2}).output("acc").output("scans");
  if (!trips_is_input) mb.init_i64("M", {}, {trips});
  mb.init_bool("cond", {}, {1});
  SubGraphBuilder body("loop_body");
  body.input("i", kInt64, {}, true).input("c_in", kBool, {}, true).input("v", kFloat);
  attr_i(body.node("Cast", {"i"}, {"fi"}), "to", kFloat);
  body.node("Add", {"v", "fi"}, {"v1"});
  body.node("Identity", {"c_in"}, {"c_out"});
  body.node("Mul", {"v1", "x"}, {"scan"});
  body.output("c_out", kBool).output("v1").output("scan");
  auto& n = mb.node("Loop", {"M", "cond", "x"}, {"acc", "scans"}, "loop");
  attr_graph(n, "body", body.graph());
  return mb;
}

TEST(OnnxControlFlow, LoopWithConstantTripCountIsUnrolledAndStacksItsScanOutput) {
  Module m = loop_with_scan(4).import();
  EXPECT_EQ(count_in_module(m, Op::WHILE_LOOP), 0);
  EXPECT_EQ(m.graphs().size(), 1u);
  const std::vector<float> x{0.5f, -1.0f};
  auto out = run_module(std::move(m), {f32({2}, x)});
  ASSERT_EQ(out.size(), 2u);
  std::vector<float> v = x, scans;
  for (int i = 0; i < 4; ++i) {
    for (size_t k = 0; k < 2; ++k) v[k] += static_cast<float>(i);
    for (size_t k = 0; k < 2; ++k) scans.push_back(v[k] * x[k]);
  }
  expect_near(out[0], {2}, v);
  expect_near(out[1], {4, 2}, scans);
}

TEST(OnnxControlFlow, LoopTooLongToUnrollWithScanOutputsIsRefused) {
  Error e = error_of([&] { loop_with_scan(100000).import(); });
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_HAS(e.what(), "loop (Loop");
  EXPECT_HAS(e.what(), "100000 iterations");
  EXPECT_HAS(e.what(), "65536");
  EXPECT_HAS(e.what(), "scan outputs");
}

TEST(OnnxControlFlow, LoopWithScanOutputsNeedsItsTripCountAtCompileTime) {
  ModelBuilder mb = loop_with_scan(0, true);
  Error e = error_of([&] { mb.import(); });
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_EQ(e.location().operand, "M");
  EXPECT_HAS(e.what(), "--bind M=");
  EXPECT_HAS(e.what(), "scan output");
  // Bound, it unrolls.
  OnnxImportOptions bound;
  bound.bindings["M"] = scalar_i32(2);
  auto out = run_module(mb.import(bound), {f32({2}, {1, 2})});
  expect_near(out[0], {2}, {2, 3});
  expect_near(out[1], {2, 2}, {1, 4, 2, 6});
}

// Loop(M, "", x) -> acc with M given at run time: body(i, c, v) = v + x * float(i).
ModelBuilder loop_run_time_trips() {
  ModelBuilder mb(13);
  mb.input("M", kInt64, {}).input("x", kFloat, {2}).output("acc");
  SubGraphBuilder body("loop_body");
  body.input("i", kInt64, {}, true).input("c_in", kBool, {}, true).input("v", kFloat);
  attr_i(body.node("Cast", {"i"}, {"fi"}), "to", kFloat);
  body.node("Mul", {"x", "fi"}, {"t"});
  body.node("Add", {"v", "t"}, {"v1"});
  body.node("Identity", {"c_in"}, {"c_out"});
  body.output("c_out", kBool).output("v1");
  attr_graph(mb.node("Loop", {"M", "", "x"}, {"acc"}, "loop"), "body", body.graph());
  return mb;
}

TEST(OnnxControlFlow, LoopWithRunTimeTripCountBecomesAWhileLoop) {
  Module m = loop_run_time_trips().import();
  EXPECT_EQ(count_ops(m, Op::WHILE_LOOP), 1);
  EXPECT_EQ(m.graphs().size(), 3u);  // main, condition, body
  auto model = Model::from_module(std::move(m));
  Context ctx(model);
  const std::vector<float> x{1.5f, -2.0f};
  for (int64_t trips : {0, 1, 4, 7}) {
    const float factor = 1.0f + static_cast<float>(trips * (trips - 1) / 2);
    auto out = ctx.run({scalar_i32(trips), f32({2}, x)});
    expect_near(out[0], {2}, {x[0] * factor, x[1] * factor});
  }
}

// A while loop: Loop("", x_sum < 100, x); body doubles v while the sum stays below 100 (limit, an
// outer initializer), so the number of iterations depends on the data.
TEST(OnnxControlFlow, LoopWithRunTimeConditionRunsUntilTheBodySaysStop) {
  ModelBuilder mb(13);
  mb.input("x", kFloat, {2}).output("y");
  mb.init_f("limit", {}, {100});
  attr_i(mb.node("ReduceSum", {"x"}, {"s0"}), "keepdims", 0);
  mb.node("Less", {"s0", "limit"}, {"c0"});
  SubGraphBuilder body("loop_body");
  body.input("i", kInt64, {}, true).input("c_in", kBool, {}, true).input("v", kFloat);
  body.node("Add", {"v", "v"}, {"v1"});
  attr_i(body.node("ReduceSum", {"v1"}, {"s"}), "keepdims", 0);
  body.node("Less", {"s", "limit"}, {"c_out"});
  body.output("c_out", kBool).output("v1");
  attr_graph(mb.node("Loop", {"", "c0", "x"}, {"y"}, "doubling"), "body", body.graph());
  Module m = mb.import();
  EXPECT_EQ(count_ops(m, Op::WHILE_LOOP), 1);
  auto model = Model::from_module(std::move(m));
  Context ctx(model);
  // 3 -> 6 -> 12 -> 24 -> 48 -> 96 -> 192: six doublings.
  expect_near(ctx.run({f32({2}, {1, 2})})[0], {2}, {64, 128});
  // Already past the limit: no iteration.
  expect_near(ctx.run({f32({2}, {200, 0})})[0], {2}, {200, 0});
}

// Trip count and condition known, but the body's condition computed at run time: the unrolling
// stops at the first iteration and the Loop becomes a WHILE_LOOP after all; with a scan output, an
// error (its length would be known only when the model runs).
TEST(OnnxControlFlow, LoopWhoseBodyDecidesAtRunTime) {
  auto model_of = [](bool with_scan) {
    ModelBuilder mb(13);
    mb.input("x", kFloat, {2}).output("y");
    if (with_scan) mb.output("all");
    mb.init_f("limit", {}, {100}).init_i64("M", {}, {3}).init_bool("go", {}, {1});
    SubGraphBuilder body("loop_body");
    body.input("i", kInt64, {}, true).input("c_in", kBool, {}, true).input("v", kFloat);
    body.node("Add", {"v", "v"}, {"v1"});
    attr_i(body.node("ReduceSum", {"v1"}, {"s"}), "keepdims", 0);
    body.node("Less", {"s", "limit"}, {"c_out"});
    body.output("c_out", kBool).output("v1");
    if (with_scan) body.output("v1");
    attr_graph(mb.node("Loop", {"M", "go", "x"}, with_scan ? std::vector<std::string>{"y", "all"}
                                                           : std::vector<std::string>{"y"}, "doubling"),
               "body", body.graph());
    return mb;
  };
  Module m = model_of(false).import();
  EXPECT_EQ(count_ops(m, Op::WHILE_LOOP), 1);
  auto model = Model::from_module(std::move(m));
  Context ctx(model);
  expect_near(ctx.run({f32({2}, {1, 2})})[0], {2}, {8, 16});       // three iterations, M stops it
  expect_near(ctx.run({f32({2}, {20, 20})})[0], {2}, {80, 80});    // 80 -> 160: the body stops it
  Error e = error_of([&] { model_of(true).import(); });
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_HAS(e.what(), "doubling (Loop");
  EXPECT_HAS(e.what(), "condition output 'c_out' is computed at run time");
  EXPECT_HAS(e.what(), "1 scan output");
}

// An error inside a body names the node there, the sub-graph, the iteration and the Loop.
TEST(OnnxControlFlow, ErrorsInsideABodyNameTheEnclosingNode) {
  ModelBuilder mb(13);
  mb.input("x", kFloat, {2}).output("y");
  mb.init_i64("M", {}, {2});
  SubGraphBuilder body("loop_body");
  body.input("i", kInt64, {}, true).input("c_in", kBool, {}, true).input("v", kFloat);
  body.node("NonZero", {"v"}, {"v1"}, "det");
  body.node("Identity", {"c_in"}, {"c_out"});
  body.output("c_out", kBool).output("v1");
  attr_graph(mb.node("Loop", {"M", "", "x"}, {"y"}, "outer"), "body", body.graph());
  Error e = error_of([&] { mb.import(); });
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_HAS(e.location().node, "det (NonZero, domain ai.onnx, opset 13) in body 'loop_body' (iteration 0) of outer (Loop");
  EXPECT_HAS(e.what(), "operator NonZero is not supported");
}

// A WHILE_LOOP whose body holds an If on the iteration's parity: the If, computed at run time
// inside the body graph, becomes a COND_IF there, reading the body's v and the main graph's x.
TEST(OnnxControlFlow, IfInsideARunTimeLoopBody) {
  ModelBuilder mb(13);
  mb.input("M", kInt64, {}).input("x", kFloat, {2}).output("acc");
  mb.init_i64("two", {}, {2}).init_i64("zero", {}, {0});
  SubGraphBuilder body("loop_body");
  body.input("i", kInt64, {}, true).input("c_in", kBool, {}, true).input("v", kFloat);
  body.node("Mod", {"i", "two"}, {"r"});
  body.node("Equal", {"r", "zero"}, {"even"});
  SubGraphBuilder then_b("add"), else_b("sub");
  then_b.node("Add", {"v", "x"}, {"a"});
  then_b.output("a");
  else_b.node("Sub", {"v", "x"}, {"b"});
  else_b.output("b");
  auto& n = body.node("If", {"even"}, {"v1"}, "parity");
  attr_graph(n, "then_branch", then_b.graph());
  attr_graph(n, "else_branch", else_b.graph());
  body.node("Identity", {"c_in"}, {"c_out"});
  body.output("c_out", kBool).output("v1");
  attr_graph(mb.node("Loop", {"M", "", "x"}, {"acc"}, "loop"), "body", body.graph());
  Module m = mb.import();
  EXPECT_EQ(count_ops(m, Op::WHILE_LOOP), 1);
  EXPECT_EQ(count_in_module(m, Op::COND_IF), 1);
  EXPECT_EQ(m.graphs().size(), 5u);
  auto model = Model::from_module(std::move(m));
  Context ctx(model);
  const std::vector<float> x{1.0f, 0.25f};
  for (int64_t trips : {0, 1, 2, 5}) {
    std::vector<float> v = x;
    for (int64_t i = 0; i < trips; ++i)
      for (size_t k = 0; k < 2; ++k) v[k] += i % 2 == 0 ? x[k] : -x[k];
    expect_near(ctx.run({scalar_i32(trips), f32({2}, x)})[0], {2}, v);
  }
}

TEST(OnnxControlFlow, RunTimeLoopMustKeepTheTypesOfItsValues) {
  ModelBuilder mb(13);
  mb.input("M", kInt64, {}).input("x", kFloat, {2}).output("acc");
  SubGraphBuilder body("loop_body");
  body.input("i", kInt64, {}, true).input("c_in", kBool, {}, true).input("v", kFloat);
  attr_i(body.node("Concat", {"v", "v"}, {"v1"}), "axis", 0);
  body.node("Identity", {"c_in"}, {"c_out"});
  body.output("c_out", kBool).output("v1");
  attr_graph(mb.node("Loop", {"M", "", "x"}, {"acc"}, "growing"), "body", body.graph());
  Error e = error_of([&] { mb.import(); });
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_HAS(e.what(), "growing (Loop");
  EXPECT_HAS(e.what(), "enters the body as f32[2] and leaves it as f32[4]");
  EXPECT_HAS(e.what(), "WHILE_LOOP");
  // With the trip count bound, the loop unrolls and the value may grow.
  OnnxImportOptions bound;
  bound.bindings["M"] = scalar_i32(2);
  expect_near(run_module(mb.import(bound), {f32({2}, {1, 2})})[0], {8}, {1, 2, 1, 2, 1, 2, 1, 2});
}

// SPIR-V has no control flow instructions: writing a VGF names the node and says what to do.
TEST(OnnxControlFlow, RunTimeControlFlowCannotBeWrittenToAVgf) {
  Module m = if_model().import();
  Error e = error_of([&] { vgf::from_module(m); });
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_HAS(e.what(), "node 'choose'");
  EXPECT_HAS(e.what(), "COND_IF has no TOSA.001000.1 instruction");
  EXPECT_HAS(e.what(), "--bind");
  // The WHILE_LOOP's rank-0 counter does not get in the way of the same message.
  Module w = loop_run_time_trips().import();
  e = error_of([&] { vgf::from_module(w); });
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_HAS(e.what(), "node 'loop'");
  EXPECT_HAS(e.what(), "WHILE_LOOP has no TOSA.001000.1 instruction");
  // Bound, the same models become plain graphs that a VGF carries.
  OnnxImportOptions bound;
  bound.bindings["c"] = scalar_bool(true);
  EXPECT_NO_THROW(vgf::from_module(if_model().import(bound)));
  OnnxImportOptions trips;
  trips.bindings["M"] = scalar_i32(3);
  EXPECT_NO_THROW(vgf::from_module(loop_run_time_trips().import(trips)));
}

// ---- Scan ----------------------------------------------------------------------------------------

// Scan (opset 11) over x [2, 3] along axis 1, read in reverse; the state s sums the columns. Two scan
// outputs of the running sum: y stacked along axis 1 forward, z along axis 0 in reverse.
TEST(OnnxControlFlow, ScanHonoursAxesAndDirections) {
  ModelBuilder mb(11);
  mb.input("s0", kFloat, {2}).input("x", kFloat, {2, 3}).output("s").output("y").output("z");
  SubGraphBuilder body("scan_body");
  body.input("s_in", kFloat).input("col", kFloat);
  body.node("Add", {"s_in", "col"}, {"s_out"});
  body.node("Identity", {"s_out"}, {"y_t"});
  body.node("Identity", {"s_out"}, {"z_t"});
  body.output("s_out").output("y_t").output("z_t");
  auto& n = mb.node("Scan", {"s0", "x"}, {"s", "y", "z"}, "scan");
  attr_graph(n, "body", body.graph());
  attr_i(n, "num_scan_inputs", 1);
  attr_ints(n, "scan_input_axes", {1});
  attr_ints(n, "scan_input_directions", {1});
  attr_ints(n, "scan_output_axes", {-1, 0});
  attr_ints(n, "scan_output_directions", {0, 1});
  Module m = mb.import();
  EXPECT_EQ(m.graphs().size(), 1u);
  const std::vector<float> s0{1, 2}, x{1, 2, 3, 10, 20, 30};  // x rows: [1 2 3], [10 20 30]
  auto out = run_module(std::move(m), {f32({2}, s0), f32({2, 3}, x)});
  ASSERT_EQ(out.size(), 3u);
  // Steps read columns 2, 1, 0: sums after each step.
  const std::vector<std::vector<float>> steps{{1 + 3, 2 + 30}, {1 + 3 + 2, 2 + 30 + 20}, {1 + 6, 2 + 60}};
  expect_near(out[0], {2}, steps[2]);
  expect_near(out[1], {2, 3}, {steps[0][0], steps[1][0], steps[2][0], steps[0][1], steps[1][1], steps[2][1]});
  expect_near(out[2], {3, 2}, {steps[2][0], steps[2][1], steps[1][0], steps[1][1], steps[0][0], steps[0][1]});
}

// Opset 8: a batch axis 0 on every state and scan input, sequence_lens first (empty here).
TEST(OnnxControlFlow, Scan8RunsTheBodyPerBatchEntry) {
  ModelBuilder mb(8);
  mb.input("s0", kFloat, {2, 1}).input("x", kFloat, {2, 3, 1}).output("s").output("y");
  SubGraphBuilder body("scan_body");
  body.input("s_in", kFloat).input("v", kFloat);
  body.node("Mul", {"s_in", "v"}, {"s_out"});
  body.node("Identity", {"s_out"}, {"y_t"});
  body.output("s_out").output("y_t");
  auto& n = mb.node("Scan", {"", "s0", "x"}, {"s", "y"}, "scan");
  attr_graph(n, "body", body.graph());
  attr_i(n, "num_scan_inputs", 1);
  attr_ints(n, "directions", {1});
  auto out = run_module(mb.import(), {f32({2, 1}, {1, 2}), f32({2, 3, 1}, {2, 3, 4, -1, 0.5f, 2})});
  ASSERT_EQ(out.size(), 2u);
  // Batch 0 reads 4, 3, 2 from 1; batch 1 reads 2, 0.5, -1 from 2.
  expect_near(out[0], {2, 1}, {24, -2});
  expect_near(out[1], {2, 3, 1}, {4, 12, 24, 4, 2, -2});
}

TEST(OnnxControlFlow, ScanRejectsMismatchedSequenceLengths) {
  ModelBuilder mb(11);
  mb.input("a", kFloat, {3}).input("b", kFloat, {4}).output("y");
  SubGraphBuilder body("scan_body");
  body.input("p", kFloat).input("q", kFloat);
  body.node("Add", {"p", "q"}, {"r"});
  body.output("r");
  auto& n = mb.node("Scan", {"a", "b"}, {"y"}, "pairs");
  attr_graph(n, "body", body.graph());
  attr_i(n, "num_scan_inputs", 2);
  Error e = error_of([&] { mb.import(); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_HAS(e.what(), "pairs (Scan");
  EXPECT_HAS(e.what(), "sequence length");
}

}  // namespace
}  // namespace weft
