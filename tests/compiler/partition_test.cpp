// The partitioner: for given graphs and backend capabilities, the exact assignment of every node
// (composite patterns, members, roles, external inputs and outputs, the backend and why preferred
// backends declined), the execution order of the units, backend resolution and the explain report.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "compiler/partition.h"
#include "compiler/strided_view.h"
#include "weft/graph.h"

namespace weft {
namespace {

using backend::Backend;
using backend::Composite;
using backend::PostOp;
using backend::Support;
using compiler::Partition;
using compiler::Unit;

// ---------------------------------------------------------------------------------------------
// A fake backend whose answers follow a small capability description: the op names it runs as
// single nodes, and a predicate over the fused groups it runs. Every call of supports() is logged.

class FakeBackend final : public Backend {
 public:
  struct Caps {
    std::set<std::string> singles;                              // op names run alone
    std::function<bool(const Composite&)> fuses = nullptr;       // null = no fused groups at all
    std::set<std::string> nan_inexact;                          // patterns whose NaN results differ
    std::set<std::string> loop_ops;                             // op names it runs in element-wise loops
  };
  FakeBackend(std::string name, Caps caps) : name_(std::move(name)), caps_(std::move(caps)) {}

  std::string_view name() const override { return name_; }
  std::string_view description() const override { return "a test backend"; }
  bool runs_row(const OpDef&, const TypeSupport&) const override { return true; }
  Support nan_exact(const Graph&, const Composite& c) const override {
    return caps_.nan_inexact.count(c.pattern) ? Support::no("NaN differs in " + c.pattern) : Support::yes();
  }
  bool loop_fusable(const Graph& g, int ni) const override { return caps_.loop_ops.count(std::string(op_name(g.node(ni).op))) > 0; }
  Support supports(const Module&, const Graph&, const Composite& c) const override {
    calls.push_back(c.pattern);
    if (c.single()) return caps_.singles.count(c.pattern) ? Support::yes() : Support::no("no kernel for " + c.pattern);
    return caps_.fuses && caps_.fuses(c) ? Support::yes() : Support::no("cannot fuse " + c.pattern);
  }
  std::unique_ptr<backend::Kernel> prepare(const Module&, const Graph&, const Composite&,
                                           const backend::PrepareOptions&) const override {
    throw Error(ErrorCode::kInternal, "the partitioner must not prepare kernels");
  }

  mutable std::vector<std::string> calls;  // patterns passed to supports(), in order

 private:
  std::string name_;
  Caps caps_;
};

bool any_composite(const Composite&) { return true; }

const Backend* ref() { return &backend::reference_backend(); }

// ---------------------------------------------------------------------------------------------
// Graph construction.

TensorType f32t(Shape s) { return {DType::kFp32, std::move(s)}; }
Tensor filled(Shape s, double v) {
  std::vector<double> d(static_cast<size_t>(shape_elements(s)), v);
  return Tensor::from_doubles(f32t(std::move(s)), d);
}
Tensor scalar0(double v) { return Tensor::from_doubles(f32t({}), std::vector<double>{v}); }

class Net {
 public:
  GraphBuilder b{"main"};

  ValueId input(const std::string& name, Shape s) { return b.input(name, f32t(std::move(s))); }
  ValueId constant(const std::string& name, Shape s, double v = 0.5) { return b.constant(name, filled(std::move(s), v)); }
  ValueId zp() {
    if (zp_ == kNoValue) zp_ = b.constant("zp", filled({1}, 0));
    return zp_;
  }
  ValueId shift() {
    if (shift_ == kNoValue) shift_ = b.constant("shift", Tensor::from_ints({DType::kInt8, {1}}, std::vector<int64_t>{0}));
    return shift_;
  }
  // 1x1 convolution with `oc` output channels; creates <name>_w, <name>_b (and the shared zp).
  ValueId conv(ValueId x, int64_t oc, const std::string& name) {
    const int64_t ic = b.graph().value(x).type.shape.at(3);
    ValueId w = b.constant(name + "_w", filled({oc, 1, 1, ic}, 0.25));
    ValueId bias = b.constant(name + "_b", filled({oc}, 0.1));
    ValueId z = zp();
    return b.op(Op::CONV2D, {x, w, bias, z, z},
                {{"pad", std::vector<int64_t>{0, 0, 0, 0}},
                 {"stride", std::vector<int64_t>{1, 1}},
                 {"dilation", std::vector<int64_t>{1, 1}},
                 {"acc_type", static_cast<int64_t>(AccType::kFp32)}},
                name);
  }
  // Pads H and W of an NHWC tensor by 1; creates <name>_s (CONST_SHAPE) and <name>_c (CONST).
  ValueId pad(ValueId x, const std::string& name) {
    ValueId s = b.constant_shape(name + "_s", {0, 0, 1, 1, 1, 1, 0, 0});
    ValueId c = b.constant(name + "_c", filled({1}, 0));
    return b.op(Op::PAD, {x, s, c}, {}, name);
  }
  ValueId clamp(ValueId x, const std::string& name) {
    return b.op(Op::CLAMP, {x}, {{"min_val", scalar0(0)}, {"max_val", scalar0(6)}}, name);
  }
  ValueId unary(Op op, ValueId x, const std::string& name) { return b.op(op, {x}, {}, name); }
  ValueId add(ValueId x, ValueId y, const std::string& name) { return b.op(Op::ADD, {x, y}, {}, name); }
  ValueId mul(ValueId x, ValueId y, const std::string& name) {
    ValueId s = shift();
    return b.op(Op::MUL, {x, y, s}, {}, name);
  }
  // Creates <name>_s (CONST_SHAPE).
  ValueId reshape(ValueId x, std::vector<int64_t> to, const std::string& name) {
    ValueId s = b.constant_shape(name + "_s", std::move(to));
    return b.op(Op::RESHAPE, {x, s}, {}, name);
  }
  ValueId transpose(ValueId x, std::vector<int64_t> perms, const std::string& name) {
    return b.op(Op::TRANSPOSE, {x}, {{"perms", std::move(perms)}}, name);
  }
  ValueId matmul(ValueId a, ValueId c, const std::string& name) {
    ValueId z = zp();
    return b.op(Op::MATMUL, {a, c, z, z}, {}, name);
  }
  void output(ValueId v) { b.output(v); }
  Module finish() { return Module(b.finish()); }

 private:
  ValueId zp_ = kNoValue, shift_ = kNoValue;
};

// ---------------------------------------------------------------------------------------------
// Inspection helpers.

// The node's label without the value sigil: "conv" for the node producing %conv.
std::string label(const Graph& g, int ni) {
  std::string l = g.node_label(ni);
  return l.rfind('%', 0) == 0 ? l.substr(1) : l;
}

int node_of(const Graph& g, const std::string& name) {
  for (int i = 0; i < static_cast<int>(g.nodes().size()); ++i)
    if (label(g, i) == name) return i;
  ADD_FAILURE() << "no node labelled " << name;
  return -1;
}
ValueId val(const Graph& g, const std::string& name) { return g.value_id(name); }
std::vector<ValueId> vals(const Graph& g, const std::vector<std::string>& names) {
  std::vector<ValueId> out;
  for (const std::string& n : names) out.push_back(g.value_id(n));
  return out;
}
std::vector<int> nodes_of(const Graph& g, const std::vector<std::string>& labels) {
  std::vector<int> out;
  for (const std::string& l : labels) out.push_back(node_of(g, l));
  return out;
}

bool is_constant_node(const Graph& g, int ni) {
  return g.node(ni).op == Op::CONST || g.node(ni).op == Op::CONST_SHAPE;
}

// "backend PATTERN [label,label,...]" per unit that is not a lone constant, in execution order.
std::vector<std::string> summary(const Graph& g, const Partition& p) {
  std::vector<std::string> out;
  for (const Unit& u : p.units) {
    const Composite& c = u.composite;
    if (c.single() && is_constant_node(g, c.anchor)) continue;
    std::string s = std::string(u.backend->name()) + " " + c.pattern + " [";
    for (size_t k = 0; k < c.nodes.size(); ++k) s += (k ? "," : "") + label(g, c.nodes[k]);
    out.push_back(s + "]");
  }
  return out;
}

// The unit that holds the node labelled `label`.
const Unit& unit_of(const Graph& g, const Partition& p, const std::string& name) {
  const int ni = node_of(g, name);
  const int u = p.unit_of_node.at(static_cast<size_t>(ni));
  return p.units.at(static_cast<size_t>(u));
}

// Every lone constant (CONST / CONST_SHAPE) runs on `b` as a single with exactly `declined`.
void expect_constants_on(const Graph& g, const Partition& p, const Backend* b,
                         const std::vector<std::string>& declined_for_const,
                         const std::vector<std::string>& declined_for_const_shape) {
  int seen = 0;
  for (const Unit& u : p.units) {
    const Composite& c = u.composite;
    if (!is_constant_node(g, c.anchor)) continue;
    ++seen;
    EXPECT_TRUE(c.single()) << g.node_label(c.anchor);
    EXPECT_EQ(u.backend, b) << g.node_label(c.anchor);
    EXPECT_EQ(u.declined, g.node(c.anchor).op == Op::CONST ? declined_for_const : declined_for_const_shape)
        << g.node_label(c.anchor);
  }
  EXPECT_GT(seen, 0);
}

// Structural invariants every partition must satisfy (checked on every graph of this file):
// every node in exactly one unit; unit_of_node consistent; members ascending; singles carry their
// node's inputs and outputs exactly; composites read from outside exactly `inputs` (once each, in
// first-use order) and expose only their last node's result, with interior values used only
// inside; units in a valid execution order; declines name only preferred backends, in priority
// order, once each; the chosen backend accepts the unit.
void check_invariants(const Module& m, const Graph& g, const Partition& p) {
  const size_t nn = g.nodes().size();
  ASSERT_EQ(p.unit_of_node.size(), nn);
  std::vector<int> owner(nn, -1);
  for (size_t u = 0; u < p.units.size(); ++u) {
    const Composite& c = p.units[u].composite;
    ASSERT_FALSE(c.nodes.empty()) << "unit " << u;
    EXPECT_TRUE(std::is_sorted(c.nodes.begin(), c.nodes.end())) << "unit " << u;
    EXPECT_EQ(std::adjacent_find(c.nodes.begin(), c.nodes.end()), c.nodes.end()) << "unit " << u;
    EXPECT_NE(std::find(c.nodes.begin(), c.nodes.end(), c.anchor), c.nodes.end()) << "unit " << u;
    for (int ni : c.nodes) {
      ASSERT_GE(ni, 0);
      ASSERT_LT(static_cast<size_t>(ni), nn);
      EXPECT_EQ(owner[static_cast<size_t>(ni)], -1) << "node " << g.node_label(ni) << " in two units";
      owner[static_cast<size_t>(ni)] = static_cast<int>(u);
    }
  }
  for (size_t ni = 0; ni < nn; ++ni) {
    EXPECT_NE(owner[ni], -1) << "node " << g.node_label(static_cast<int>(ni)) << " in no unit";
    EXPECT_EQ(p.unit_of_node[ni], owner[ni]) << "node " << g.node_label(static_cast<int>(ni));
  }

  std::vector<std::vector<int>> consumers(g.values().size());
  for (size_t ni = 0; ni < nn; ++ni)
    for (ValueId v : g.node(static_cast<int>(ni)).inputs) consumers[static_cast<size_t>(v)].push_back(static_cast<int>(ni));
  std::set<ValueId> graph_outputs(g.outputs().begin(), g.outputs().end());

  std::set<ValueId> available(g.inputs().begin(), g.inputs().end());
  for (size_t u = 0; u < p.units.size(); ++u) {
    const Unit& unit = p.units[u];
    const Composite& c = unit.composite;
    SCOPED_TRACE("unit #" + std::to_string(u) + " " + c.pattern);
    if (c.single()) {
      EXPECT_EQ(c.anchor, c.nodes[0]);
      EXPECT_EQ(c.pattern, op_name(g.node(c.anchor).op));
      EXPECT_EQ(c.inputs, g.node(c.anchor).inputs);
      EXPECT_EQ(c.outputs, g.node(c.anchor).outputs);
    } else {
      std::set<ValueId> produced;
      for (int ni : c.nodes)
        for (ValueId o : g.node(ni).outputs) produced.insert(o);
      std::vector<ValueId> want_inputs;
      for (int ni : c.nodes)
        for (ValueId v : g.node(ni).inputs)
          if (!produced.count(v) && std::find(want_inputs.begin(), want_inputs.end(), v) == want_inputs.end())
            want_inputs.push_back(v);
      EXPECT_EQ(c.inputs, want_inputs);
      ASSERT_EQ(c.outputs.size(), 1u);
      EXPECT_EQ(c.outputs[0], g.node(c.last()).outputs[0]);
      for (ValueId v : produced) {
        if (v == c.outputs[0]) continue;
        EXPECT_FALSE(graph_outputs.count(v)) << "interior value " << g.value(v).name << " is a graph output";
        for (int user : consumers[static_cast<size_t>(v)])
          EXPECT_TRUE(std::binary_search(c.nodes.begin(), c.nodes.end(), user))
              << "interior value " << g.value(v).name << " read by " << g.node_label(user);
      }
    }
    // Execution order: everything read is a graph input or an earlier unit's output.
    for (ValueId v : c.inputs) EXPECT_TRUE(available.count(v)) << "input " << g.value(v).name << " not yet produced";
    for (ValueId v : c.outputs) available.insert(v);

    // Backend and declines.
    ASSERT_NE(unit.backend, nullptr);
    auto pos = std::find(p.priority.begin(), p.priority.end(), unit.backend);
    ASSERT_NE(pos, p.priority.end());
    size_t last_idx = 0;
    bool first = true;
    for (const std::string& d : unit.declined) {
      auto it = std::find_if(p.priority.begin(), pos, [&](const Backend* b) { return d.rfind(std::string(b->name()) + ": ", 0) == 0; });
      ASSERT_NE(it, pos) << "decline '" << d << "' names no preferred backend";
      const size_t idx = static_cast<size_t>(it - p.priority.begin());
      if (!first) {
        EXPECT_GT(idx, last_idx) << "declines out of priority order or repeated";
      }
      first = false;
      last_idx = idx;
    }
    EXPECT_TRUE(unit.backend->supports(m, g, c).ok) << "the chosen backend refuses its own unit";
  }
  for (ValueId v : g.outputs()) EXPECT_TRUE(available.count(v)) << "graph output " << g.value(v).name << " never produced";

  // Units are ordered by their last node.
  for (size_t u = 1; u < p.units.size(); ++u)
    EXPECT_LT(p.units[u - 1].composite.last(), p.units[u].composite.last());
}

Partition partition(const Module& m, const std::vector<const Backend*>& priority) {
  Partition p = compiler::partition_graph(m, m.main(), priority);
  check_invariants(m, m.main(), p);
  return p;
}

// ---------------------------------------------------------------------------------------------
// 1. PAD + CONV2D + CLAMP

Module pad_conv_clamp() {
  Net n;
  ValueId x = n.input("x", {1, 4, 4, 2});
  ValueId p = n.pad(x, "pad");
  ValueId c = n.conv(p, 3, "conv");
  n.output(n.clamp(c, "clamp"));
  return n.finish();
}

TEST(Partition, PadConvClampFusesIntoOneUnit) {
  Module m = pad_conv_clamp();
  const Graph& g = m.main();
  FakeBackend fake("fake", {{}, any_composite});
  Partition p = partition(m, {&fake, ref()});
  EXPECT_EQ(p.priority, (std::vector<const Backend*>{&fake, ref()}));
  EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fake PAD+CONV2D+CLAMP [pad,conv,clamp]"}));
  const Unit& u = unit_of(g, p, "conv");
  const Composite& c = u.composite;
  EXPECT_EQ(c.anchor, node_of(g, "conv"));
  EXPECT_EQ(c.pad, node_of(g, "pad"));
  EXPECT_TRUE(c.a_view.empty());
  EXPECT_TRUE(c.b_view.empty());
  ASSERT_EQ(c.post_ops.size(), 1u);
  EXPECT_EQ(c.post_ops[0].kind, PostOp::Kind::kClamp);
  EXPECT_EQ(c.post_ops[0].node, node_of(g, "clamp"));
  EXPECT_EQ(c.post_ops[0].mul, -1);
  EXPECT_EQ(c.post_ops[0].operand, kNoValue);
  EXPECT_EQ(c.nodes, nodes_of(g, {"pad", "conv", "clamp"}));
  // Read from outside once each, in first-use order (the zero point is read twice by the conv).
  EXPECT_EQ(c.inputs, vals(g, {"x", "pad_s", "pad_c", "conv_w", "conv_b", "zp"}));
  EXPECT_EQ(c.input_index(val(g, "zp")), 5);
  EXPECT_EQ(c.input_index(val(g, "conv")), -1);
  EXPECT_EQ(c.outputs, vals(g, {"clamp"}));
  EXPECT_TRUE(u.declined.empty());
  expect_constants_on(g, p, ref(), {"fake: no kernel for CONST"}, {"fake: no kernel for CONST_SHAPE"});
}

TEST(Partition, NanExactSkipsVariantsWhoseNanResultsDiffer) {
  // With exact NaN semantics asked for, a variant the backend computes with other NaN results is
  // declined like an unsupported one: here the CLAMP (nan_mode) cannot be fused, so the backend
  // takes PAD+CONV2D and the CLAMP goes to the reference backend, with the reason.
  Module m = pad_conv_clamp();
  const Graph& g = m.main();
  FakeBackend fake("fake", {{"CONV2D", "PAD", "CLAMP"}, any_composite, {"PAD+CONV2D+CLAMP", "CONV2D+CLAMP", "CLAMP"}});
  Partition loose = compiler::partition_graph(m, g, {&fake, ref()});
  EXPECT_EQ(summary(g, loose), (std::vector<std::string>{"fake PAD+CONV2D+CLAMP [pad,conv,clamp]"}));
  Partition exact = compiler::partition_graph(m, g, {&fake, ref()}, {.nan_exact = true});
  EXPECT_EQ(summary(g, exact), (std::vector<std::string>{"fake PAD+CONV2D [pad,conv]", "reference CLAMP [clamp]"}));
  const Unit& u = unit_of(g, exact, "clamp");
  EXPECT_EQ(u.declined, (std::vector<std::string>{"fake: NaN differs in CLAMP (exact NaN semantics were asked for)"}));
}

TEST(Partition, VariantsAreOfferedLargestFirst) {
  Module m = pad_conv_clamp();
  FakeBackend fake("fake", {});
  compiler::partition_graph(m, m.main(), {&fake, ref()});
  // Pass 1 offers the conv's variants (with the pad prefix first, then without; post-ops longest
  // first; the single last), pass 2 every node alone in graph order.
  EXPECT_EQ(fake.calls, (std::vector<std::string>{"PAD+CONV2D+CLAMP", "PAD+CONV2D", "CONV2D+CLAMP", "CONV2D",
                                                   "CONST_SHAPE", "CONST", "PAD", "CONST", "CONST", "CONST",
                                                   "CONV2D", "CLAMP"}));
}

TEST(Partition, BackendRefusingPadFusionGetsConvClampAndPadAlone) {
  Module m = pad_conv_clamp();
  const Graph& g = m.main();
  FakeBackend fake("fake", {{"PAD"}, [](const Composite& c) { return c.pad < 0; }});
  Partition p = partition(m, {&fake, ref()});
  EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fake PAD [pad]", "fake CONV2D+CLAMP [conv,clamp]"}));
  const Composite& c = unit_of(g, p, "conv").composite;
  EXPECT_EQ(c.pad, -1);
  EXPECT_EQ(c.anchor, node_of(g, "conv"));
  EXPECT_EQ(c.inputs, vals(g, {"pad", "conv_w", "conv_b", "zp"}));
  EXPECT_EQ(c.outputs, vals(g, {"clamp"}));
  const Unit& pu = unit_of(g, p, "pad");
  EXPECT_EQ(pu.composite.inputs, vals(g, {"x", "pad_s", "pad_c"}));
  EXPECT_EQ(pu.composite.outputs, vals(g, {"pad"}));
  EXPECT_TRUE(pu.declined.empty());
  EXPECT_TRUE(unit_of(g, p, "conv").declined.empty());
}

TEST(Partition, PadTheFusingBackendCannotRunFallsBackAlone) {
  Module m = pad_conv_clamp();
  const Graph& g = m.main();
  FakeBackend fake("fake", {{}, [](const Composite& c) { return c.pad < 0; }});
  Partition p = partition(m, {&fake, ref()});
  EXPECT_EQ(summary(g, p), (std::vector<std::string>{"reference PAD [pad]", "fake CONV2D+CLAMP [conv,clamp]"}));
  EXPECT_EQ(unit_of(g, p, "pad").declined, (std::vector<std::string>{"fake: no kernel for PAD"}));
}

TEST(Partition, BackendRefusingConvLeavesEverythingToReference) {
  Module m = pad_conv_clamp();
  const Graph& g = m.main();
  FakeBackend fake("fake", {});
  Partition p = partition(m, {&fake, ref()});
  EXPECT_EQ(summary(g, p),
            (std::vector<std::string>{"reference PAD [pad]", "reference CONV2D [conv]", "reference CLAMP [clamp]"}));
  EXPECT_EQ(unit_of(g, p, "pad").declined, (std::vector<std::string>{"fake: no kernel for PAD"}));
  // The anchor's decline is the reason given for its largest variant.
  EXPECT_EQ(unit_of(g, p, "conv").declined, (std::vector<std::string>{"fake: cannot fuse PAD+CONV2D+CLAMP"}));
  EXPECT_EQ(unit_of(g, p, "clamp").declined, (std::vector<std::string>{"fake: no kernel for CLAMP"}));
  EXPECT_EQ(unit_of(g, p, "conv").composite.inputs, vals(g, {"pad", "conv_w", "conv_b", "zp", "zp"}));
  expect_constants_on(g, p, ref(), {"fake: no kernel for CONST"}, {"fake: no kernel for CONST_SHAPE"});
}

TEST(Partition, SecondBackendTakesWhatTheFirstDeclines) {
  Module m = pad_conv_clamp();
  const Graph& g = m.main();
  FakeBackend a("fakeA", {});
  FakeBackend b("fakeB", {{"PAD"}, [](const Composite& c) { return c.pad < 0; }});
  Partition p = partition(m, {&a, &b, ref()});
  EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fakeB PAD [pad]", "fakeB CONV2D+CLAMP [conv,clamp]"}));
  EXPECT_EQ(unit_of(g, p, "pad").declined, (std::vector<std::string>{"fakeA: no kernel for PAD"}));
  EXPECT_EQ(unit_of(g, p, "conv").declined, (std::vector<std::string>{"fakeA: cannot fuse PAD+CONV2D+CLAMP"}));
  expect_constants_on(g, p, ref(), {"fakeA: no kernel for CONST", "fakeB: no kernel for CONST"},
                      {"fakeA: no kernel for CONST_SHAPE", "fakeB: no kernel for CONST_SHAPE"});
}

TEST(Partition, PreferredBackendRunningTheAnchorAloneWinsOverALaterFusion) {
  // fakeA runs CONV2D only as a single node; fakeB would fuse everything. Priority decides: the
  // conv stays alone on fakeA, its neighbours go where they can.
  Module m = pad_conv_clamp();
  const Graph& g = m.main();
  FakeBackend a("fakeA", {{"CONV2D"}, nullptr});
  FakeBackend b("fakeB", {{"PAD", "CLAMP"}, any_composite});
  Partition p = partition(m, {&a, &b, ref()});
  EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fakeB PAD [pad]", "fakeA CONV2D [conv]", "fakeB CLAMP [clamp]"}));
  EXPECT_TRUE(unit_of(g, p, "conv").declined.empty());
  EXPECT_EQ(unit_of(g, p, "pad").declined, (std::vector<std::string>{"fakeA: no kernel for PAD"}));
  EXPECT_EQ(unit_of(g, p, "clamp").declined, (std::vector<std::string>{"fakeA: no kernel for CLAMP"}));
}

TEST(Partition, PadIsFusedIntoPoolingToo) {
  Net n;
  ValueId x = n.input("x", {1, 4, 4, 2});
  ValueId pd = n.pad(x, "pad");
  ValueId pool = n.b.op(Op::MAX_POOL2D, {pd},
                        {{"kernel", std::vector<int64_t>{2, 2}},
                         {"stride", std::vector<int64_t>{2, 2}},
                         {"pad", std::vector<int64_t>{0, 0, 0, 0}}},
                        "pool");
  n.output(n.clamp(pool, "clamp"));  // pooling takes no post-ops
  Module m = n.finish();
  const Graph& g = m.main();
  FakeBackend fake("fake", {{"CLAMP"}, any_composite});
  Partition p = partition(m, {&fake, ref()});
  EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fake PAD+MAX_POOL2D [pad,pool]", "fake CLAMP [clamp]"}));
  EXPECT_EQ(unit_of(g, p, "pool").composite.pad, node_of(g, "pad"));
  EXPECT_TRUE(unit_of(g, p, "pool").composite.post_ops.empty());
}

// ---------------------------------------------------------------------------------------------
// 2. Residual ADD

TEST(Partition, ResidualAddAndClampAreFused) {
  for (bool swapped : {false, true}) {
    SCOPED_TRACE(swapped ? "ADD(y, conv)" : "ADD(conv, y)");
    Net n;
    ValueId x = n.input("x", {1, 4, 4, 2});
    ValueId y = n.input("y", {1, 4, 4, 3});
    ValueId c = n.conv(x, 3, "conv");
    ValueId a = swapped ? n.add(y, c, "res") : n.add(c, y, "res");
    n.output(n.clamp(a, "relu"));
    Module m = n.finish();
    const Graph& g = m.main();
    FakeBackend fake("fake", {{}, any_composite});
    Partition p = partition(m, {&fake, ref()});
    EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fake CONV2D+ADD+CLAMP [conv,res,relu]"}));
    const Composite& u = unit_of(g, p, "conv").composite;
    EXPECT_EQ(u.pad, -1);
    ASSERT_EQ(u.post_ops.size(), 2u);
    EXPECT_EQ(u.post_ops[0].kind, PostOp::Kind::kResidual);
    EXPECT_EQ(u.post_ops[0].node, node_of(g, "res"));
    EXPECT_EQ(u.post_ops[0].operand, y);
    EXPECT_EQ(u.post_ops[1].kind, PostOp::Kind::kClamp);
    EXPECT_EQ(u.post_ops[1].node, node_of(g, "relu"));
    EXPECT_EQ(u.inputs, vals(g, {"x", "conv_w", "conv_b", "zp", "y"}));
    EXPECT_EQ(u.outputs, vals(g, {"relu"}));
  }
}

TEST(Partition, ConvResultWithTwoConsumersTakesNoPostOps) {
  Net n;
  ValueId x = n.input("x", {1, 4, 4, 2});
  ValueId y = n.input("y", {1, 4, 4, 3});
  ValueId c = n.conv(x, 3, "conv");
  n.output(n.clamp(n.add(c, y, "res"), "relu"));
  n.output(n.unary(Op::TANH, c, "side"));
  Module m = n.finish();
  const Graph& g = m.main();
  FakeBackend fake("fake", {{"CONV2D", "ADD", "CLAMP", "TANH"}, any_composite});
  Partition p = partition(m, {&fake, ref()});
  EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fake CONV2D [conv]", "fake ADD [res]", "fake CLAMP [relu]",
                                                      "fake TANH [side]"}));
  // Only the single was offered for the conv.
  EXPECT_EQ(fake.calls.at(0), "CONV2D");
}

TEST(Partition, ConvReadTwiceByOneAddIsNotAResidual) {
  Net n;
  ValueId x = n.input("x", {1, 4, 4, 2});
  ValueId c = n.conv(x, 3, "conv");
  n.output(n.add(c, c, "twice"));
  Module m = n.finish();
  const Graph& g = m.main();
  FakeBackend fake("fake", {{"CONV2D", "ADD"}, any_composite});
  Partition p = partition(m, {&fake, ref()});
  EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fake CONV2D [conv]", "fake ADD [twice]"}));
}

TEST(Partition, BroadcastAddAfterConvIsAPerChannelShift) {
  // A constant broadcast along channels is a bias only for MATMUL; after a conv it is a per-channel
  // SHIFT post-op (one fp32 sum, as the ADD), and the CLAMP after it joins too.
  Net n;
  ValueId x = n.input("x", {1, 4, 4, 2});
  ValueId c = n.conv(x, 3, "conv");
  ValueId cb = n.constant("cb", {1, 1, 1, 3});
  n.output(n.clamp(n.add(c, cb, "badd"), "relu"));
  Module m = n.finish();
  const Graph& g = m.main();
  FakeBackend fake("fake", {{"CONV2D", "ADD", "CLAMP"}, any_composite});
  Partition p = partition(m, {&fake, ref()});
  EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fake CONV2D+SHIFT+CLAMP [conv,badd,relu]"}));
}

TEST(Partition, OnlyOneResidualAddIsFused) {
  Net n;
  ValueId x = n.input("x", {1, 4, 4, 2});
  ValueId y = n.input("y", {1, 4, 4, 3});
  ValueId z = n.input("z", {1, 4, 4, 3});
  ValueId c = n.conv(x, 3, "conv");
  n.output(n.add(n.add(c, y, "res1"), z, "res2"));
  Module m = n.finish();
  const Graph& g = m.main();
  FakeBackend fake("fake", {{"ADD"}, any_composite});
  Partition p = partition(m, {&fake, ref()});
  EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fake CONV2D+ADD [conv,res1]", "fake ADD [res2]"}));
}

TEST(Partition, ResidualFromALaterConvOrdersUnitsByTheirLastNode) {
  // conv1's residual partner is conv2+clamp, which comes later in the graph: conv1's unit must run
  // after conv2's.
  Net n;
  ValueId x = n.input("x", {1, 4, 4, 2});
  ValueId c1 = n.conv(x, 3, "c1");
  ValueId r2 = n.clamp(n.conv(x, 3, "c2"), "r2");
  n.output(n.add(c1, r2, "sum"));
  Module m = n.finish();
  const Graph& g = m.main();
  FakeBackend fake("fake", {{}, any_composite});
  Partition p = partition(m, {&fake, ref()});
  EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fake CONV2D+CLAMP [c2,r2]", "fake CONV2D+ADD [c1,sum]"}));
  const Composite& u1 = unit_of(g, p, "c1").composite;
  EXPECT_EQ(u1.inputs, vals(g, {"x", "c1_w", "c1_b", "zp", "r2"}));
  ASSERT_EQ(u1.post_ops.size(), 1u);
  EXPECT_EQ(u1.post_ops[0].operand, r2);
  EXPECT_LT(p.unit_of_node[static_cast<size_t>(node_of(g, "r2"))], p.unit_of_node[static_cast<size_t>(node_of(g, "sum"))]);
}

TEST(Partition, DepthwiseAndTransposeConvAnchorsTakePostOps) {
  Net n;
  ValueId x = n.input("x", {1, 4, 4, 2});
  ValueId z = n.zp();
  ValueId dw_w = n.constant("dw_w", {1, 1, 2, 1});
  ValueId dw_b = n.constant("dw_b", {2});
  const Attrs conv_attrs = {{"pad", std::vector<int64_t>{0, 0, 0, 0}},
                            {"stride", std::vector<int64_t>{1, 1}},
                            {"dilation", std::vector<int64_t>{1, 1}},
                            {"acc_type", static_cast<int64_t>(AccType::kFp32)}};
  ValueId px = n.pad(x, "pad");
  ValueId dw = n.b.op(Op::DEPTHWISE_CONV2D, {px, dw_w, dw_b, z, z}, conv_attrs, "dw");
  ValueId act = n.clamp(dw, "act");
  ValueId tw = n.constant("tw", {2, 1, 1, 2});
  ValueId tb = n.constant("tb", {2});
  ValueId tpad = n.pad(act, "tpad");  // TRANSPOSE_CONV2D takes no pad prefix
  ValueId tc = n.b.op(Op::TRANSPOSE_CONV2D, {tpad, tw, tb, z, z},
                      {{"out_pad", std::vector<int64_t>{0, 0, 0, 0}},
                       {"stride", std::vector<int64_t>{1, 1}},
                       {"acc_type", static_cast<int64_t>(AccType::kFp32)}},
                      "tc");
  n.output(n.unary(Op::TANH, tc, "tanh"));
  Module m = n.finish();
  const Graph& g = m.main();
  FakeBackend fake("fake", {{"PAD"}, any_composite});
  Partition p = partition(m, {&fake, ref()});
  EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fake PAD+DEPTHWISE_CONV2D+CLAMP [pad,dw,act]", "fake PAD [tpad]",
                                                      "fake TRANSPOSE_CONV2D+TANH [tc,tanh]"}));
  EXPECT_EQ(unit_of(g, p, "tc").composite.post_ops.at(0).kind, PostOp::Kind::kTanh);
}

// ---------------------------------------------------------------------------------------------
// 3. Swish

TEST(Partition, SwishIsFused) {
  for (bool swapped : {false, true}) {
    SCOPED_TRACE(swapped ? "MUL(sigmoid, conv)" : "MUL(conv, sigmoid)");
    Net n;
    ValueId x = n.input("x", {1, 4, 4, 2});
    ValueId c = n.conv(x, 3, "conv");
    ValueId s = n.unary(Op::SIGMOID, c, "sig");
    n.output(swapped ? n.mul(s, c, "swish") : n.mul(c, s, "swish"));
    Module m = n.finish();
    const Graph& g = m.main();
    FakeBackend fake("fake", {{}, any_composite});
    Partition p = partition(m, {&fake, ref()});
    EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fake CONV2D+SWISH [conv,sig,swish]"}));
    const Composite& u = unit_of(g, p, "conv").composite;
    ASSERT_EQ(u.post_ops.size(), 1u);
    EXPECT_EQ(u.post_ops[0].kind, PostOp::Kind::kSwish);
    EXPECT_EQ(u.post_ops[0].node, node_of(g, "sig"));
    EXPECT_EQ(u.post_ops[0].mul, node_of(g, "swish"));
    EXPECT_EQ(u.post_ops[0].operand, kNoValue);
    EXPECT_EQ(u.inputs, vals(g, {"x", "conv_w", "conv_b", "zp", "shift"}));
    EXPECT_EQ(u.outputs, vals(g, {"swish"}));
  }
}

TEST(Partition, SwishThenClampAndResidualThenSwish) {
  Net n;
  ValueId x = n.input("x", {1, 4, 4, 2});
  ValueId y = n.input("y", {1, 4, 4, 3});
  ValueId c = n.conv(x, 3, "conv");
  ValueId sw = n.mul(c, n.unary(Op::SIGMOID, c, "sig"), "swish");
  n.output(n.clamp(sw, "clamp"));
  ValueId c2 = n.conv(x, 3, "conv2");
  ValueId r2 = n.add(c2, y, "res2");
  n.output(n.mul(n.unary(Op::SIGMOID, r2, "sig2"), r2, "swish2"));
  Module m = n.finish();
  const Graph& g = m.main();
  FakeBackend fake("fake", {{}, any_composite});
  Partition p = partition(m, {&fake, ref()});
  EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fake CONV2D+SWISH+CLAMP [conv,sig,swish,clamp]",
                                                      "fake CONV2D+ADD+SWISH [conv2,res2,sig2,swish2]"}));
  const Composite& u2 = unit_of(g, p, "conv2").composite;
  ASSERT_EQ(u2.post_ops.size(), 2u);
  EXPECT_EQ(u2.post_ops[1].kind, PostOp::Kind::kSwish);
  EXPECT_EQ(u2.post_ops[1].node, node_of(g, "sig2"));
  EXPECT_EQ(u2.post_ops[1].mul, node_of(g, "swish2"));
}

TEST(Partition, SigmoidAndTanhAreActivations) {
  Net n;
  ValueId x = n.input("x", {1, 4, 4, 2});
  ValueId c = n.conv(x, 3, "conv");
  n.output(n.unary(Op::TANH, n.unary(Op::SIGMOID, c, "sig"), "tanh"));
  Module m = n.finish();
  const Graph& g = m.main();
  FakeBackend fake("fake", {{}, any_composite});
  Partition p = partition(m, {&fake, ref()});
  EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fake CONV2D+SIGMOID+TANH [conv,sig,tanh]"}));
  const Composite& u = unit_of(g, p, "conv").composite;
  ASSERT_EQ(u.post_ops.size(), 2u);
  EXPECT_EQ(u.post_ops[0].kind, PostOp::Kind::kSigmoid);
  EXPECT_EQ(u.post_ops[1].kind, PostOp::Kind::kTanh);
}

TEST(Partition, SwishWhoseSigmoidIsAlsoAGraphOutputIsNotFused) {
  Net n;
  ValueId x = n.input("x", {1, 4, 4, 2});
  ValueId c = n.conv(x, 3, "conv");
  ValueId s = n.unary(Op::SIGMOID, c, "sig");
  n.output(n.mul(c, s, "swish"));
  n.output(s);
  Module m = n.finish();
  const Graph& g = m.main();
  FakeBackend fake("fake", {{"CONV2D", "SIGMOID", "MUL"}, any_composite});
  Partition p = partition(m, {&fake, ref()});
  EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fake CONV2D [conv]", "fake SIGMOID [sig]", "fake MUL [swish]"}));
}

TEST(Partition, MulBySigmoidOfAnotherValueIsNotSwish) {
  Net n;
  ValueId x = n.input("x", {1, 4, 4, 2});
  ValueId y = n.input("y", {1, 4, 4, 3});
  ValueId c = n.conv(x, 3, "conv");
  n.output(n.mul(c, n.unary(Op::SIGMOID, y, "sig"), "gate"));
  Module m = n.finish();
  const Graph& g = m.main();
  FakeBackend fake("fake", {{"CONV2D", "SIGMOID", "MUL"}, any_composite});
  Partition p = partition(m, {&fake, ref()});
  EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fake CONV2D [conv]", "fake SIGMOID [sig]", "fake MUL [gate]"}));
}

// ---------------------------------------------------------------------------------------------
// 4. MATMUL with view chains and bias

struct AttentionOpts {
  bool r1_is_output = false;  // the first RESHAPE's value also leaves the graph
  bool t_is_output = false;   // the TRANSPOSE's value also leaves the graph
};
// q f32[8,8] -> RESHAPE [1,8,2,4] (r1) -> TRANSPOSE [0,2,1,3] (t) -> RESHAPE [2,8,4] (r2) = A;
// B = k f32[2,4,5]; MATMUL (mm); ADD of a const [1,1,5] (biased).
Module attention(AttentionOpts o = {}) {
  Net n;
  ValueId q = n.input("q", {8, 8});
  ValueId k = n.input("k", {2, 4, 5});
  ValueId r1 = n.reshape(q, {1, 8, 2, 4}, "r1");
  ValueId t = n.transpose(r1, {0, 2, 1, 3}, "t");
  ValueId r2 = n.reshape(t, {2, 8, 4}, "r2");
  ValueId mm = n.matmul(r2, k, "mm");
  ValueId bias = n.constant("bias", {1, 1, 5});
  n.output(n.add(mm, bias, "biased"));
  if (o.r1_is_output) n.output(r1);
  if (o.t_is_output) n.output(t);
  return n.finish();
}

TEST(Partition, AttentionStyleOperandChainAndBiasAreFused) {
  Module m = attention();
  const Graph& g = m.main();
  FakeBackend fake("fake", {{}, any_composite});
  Partition p = partition(m, {&fake, ref()});
  EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fake TRANSPOSE+MATMUL+BIAS [r1,t,r2,mm,biased]"}));
  const Composite& u = unit_of(g, p, "mm").composite;
  EXPECT_EQ(u.anchor, node_of(g, "mm"));
  EXPECT_EQ(u.pad, -1);
  EXPECT_EQ(u.a_view, nodes_of(g, {"r1", "t", "r2"}));
  EXPECT_TRUE(u.b_view.empty());
  ASSERT_EQ(u.post_ops.size(), 1u);
  EXPECT_EQ(u.post_ops[0].kind, PostOp::Kind::kBias);
  EXPECT_EQ(u.post_ops[0].node, node_of(g, "biased"));
  EXPECT_EQ(u.post_ops[0].operand, val(g, "bias"));
  EXPECT_EQ(u.inputs, vals(g, {"q", "r1_s", "r2_s", "k", "zp", "bias"}));
  EXPECT_EQ(u.outputs, vals(g, {"biased"}));
  // The absorbed chain is a strided view of q.
  auto v = compiler::forward_chain(g, u.a_view);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->dims, (Shape{2, 8, 4}));
  EXPECT_EQ(v->strides, (std::vector<int64_t>{4, 8, 1}));
}

TEST(Partition, BackendRefusingViewsGetsMatmulBiasAndTheChainAlone) {
  Module m = attention();
  const Graph& g = m.main();
  FakeBackend fake("fake", {{"RESHAPE", "TRANSPOSE"}, [](const Composite& c) { return c.a_view.empty() && c.b_view.empty(); }});
  Partition p = partition(m, {&fake, ref()});
  EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fake RESHAPE [r1]", "fake TRANSPOSE [t]", "fake RESHAPE [r2]",
                                                      "fake MATMUL+BIAS [mm,biased]"}));
  EXPECT_EQ(unit_of(g, p, "mm").composite.inputs, vals(g, {"r2", "k", "zp", "bias"}));
  EXPECT_EQ(fake.calls.at(0), "TRANSPOSE+MATMUL+BIAS");
  EXPECT_EQ(fake.calls.at(1), "TRANSPOSE+MATMUL");
  EXPECT_EQ(fake.calls.at(2), "MATMUL+BIAS");
}

TEST(Partition, ChainValueUsedElsewhereEndsTheChain) {
  {
    SCOPED_TRACE("the TRANSPOSE's value is a graph output: only a RESHAPE is left, not absorbed");
    Module m = attention({.t_is_output = true});
    const Graph& g = m.main();
    FakeBackend fake("fake", {{"RESHAPE", "TRANSPOSE"}, any_composite});
    Partition p = partition(m, {&fake, ref()});
    EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fake RESHAPE [r1]", "fake TRANSPOSE [t]", "fake RESHAPE [r2]",
                                                        "fake MATMUL+BIAS [mm,biased]"}));
    EXPECT_TRUE(unit_of(g, p, "mm").composite.a_view.empty());
  }
  {
    SCOPED_TRACE("the first RESHAPE's value is a graph output: the chain starts at the TRANSPOSE");
    Module m = attention({.r1_is_output = true});
    const Graph& g = m.main();
    FakeBackend fake("fake", {{"RESHAPE", "TRANSPOSE"}, any_composite});
    Partition p = partition(m, {&fake, ref()});
    EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fake RESHAPE [r1]", "fake TRANSPOSE+MATMUL+BIAS [t,r2,mm,biased]"}));
    const Composite& u = unit_of(g, p, "mm").composite;
    EXPECT_EQ(u.a_view, nodes_of(g, {"t", "r2"}));
    EXPECT_EQ(u.inputs, vals(g, {"r1", "r2_s", "k", "zp", "bias"}));
  }
  {
    SCOPED_TRACE("the TRANSPOSE's value is read by another node");
    Net n;
    ValueId q = n.input("q", {1, 8, 2, 4});
    ValueId k = n.input("k", {2, 4, 5});
    ValueId t = n.transpose(q, {0, 2, 1, 3}, "t");
    ValueId mm = n.matmul(n.reshape(t, {2, 8, 4}, "r2"), k, "mm");
    n.output(mm);
    n.output(n.unary(Op::TANH, t, "other"));
    Module m = n.finish();
    const Graph& g = m.main();
    FakeBackend fake("fake", {{"RESHAPE", "TRANSPOSE", "MATMUL", "TANH"}, any_composite});
    Partition p = partition(m, {&fake, ref()});
    EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fake TRANSPOSE [t]", "fake RESHAPE [r2]", "fake MATMUL [mm]",
                                                        "fake TANH [other]"}));
  }
}

TEST(Partition, ReshapeOnlyChainIsNotAbsorbed) {
  Net n;
  ValueId q = n.input("q", {64});
  ValueId k = n.input("k", {1, 8, 5});
  ValueId a = n.reshape(n.reshape(q, {8, 8}, "r1"), {1, 8, 8}, "r2");
  ValueId mm = n.matmul(a, k, "mm");
  n.output(n.add(mm, n.constant("bias", {1, 1, 5}), "biased"));
  Module m = n.finish();
  const Graph& g = m.main();
  FakeBackend fake("fake", {{"RESHAPE"}, any_composite});
  Partition p = partition(m, {&fake, ref()});
  EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fake RESHAPE [r1]", "fake RESHAPE [r2]", "fake MATMUL+BIAS [mm,biased]"}));
  EXPECT_TRUE(unit_of(g, p, "mm").composite.a_view.empty());
}

TEST(Partition, CopyNeedingReshapeEndsTheChain) {
  {
    SCOPED_TRACE("TRANSPOSE -> RESHAPE that needs a copy -> TRANSPOSE: only the last two are a view");
    Net n;
    ValueId s = n.input("s", {2, 4, 3});
    ValueId k = n.input("k", {3, 2, 5});
    ValueId t1 = n.transpose(s, {0, 2, 1}, "t1");  // [2,3,4], strides [12,1,3]
    ValueId r = n.reshape(t1, {3, 2, 4}, "r");       // merges dims of strides 12 and 1: a copy
    ValueId t2 = n.transpose(r, {0, 2, 1}, "t2");    // [3,4,2]
    n.output(n.matmul(t2, k, "mm"));
    Module m = n.finish();
    const Graph& g = m.main();
    FakeBackend fake("fake", {{"TRANSPOSE"}, any_composite});
    Partition p = partition(m, {&fake, ref()});
    EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fake TRANSPOSE [t1]", "fake TRANSPOSE+MATMUL [r,t2,mm]"}));
    const Composite& u = unit_of(g, p, "mm").composite;
    EXPECT_EQ(u.a_view, nodes_of(g, {"r", "t2"}));
    EXPECT_EQ(u.inputs, vals(g, {"t1", "r_s", "k", "zp"}));
  }
  {
    SCOPED_TRACE("TRANSPOSE -> RESHAPE that needs a copy: nothing is absorbed");
    Net n;
    ValueId s = n.input("s", {2, 4, 3});
    ValueId k = n.input("k", {1, 4, 5});
    ValueId t = n.transpose(s, {0, 2, 1}, "t");   // [2,3,4]
    ValueId r = n.reshape(t, {1, 6, 4}, "r");     // needs a copy
    n.output(n.matmul(r, k, "mm"));
    Module m = n.finish();
    const Graph& g = m.main();
    FakeBackend fake("fake", {{"TRANSPOSE", "RESHAPE", "MATMUL"}, any_composite});
    Partition p = partition(m, {&fake, ref()});
    EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fake TRANSPOSE [t]", "fake RESHAPE [r]", "fake MATMUL [mm]"}));
    // No composite variant existed: the anchor was offered alone only.
    EXPECT_EQ(fake.calls.at(0), "MATMUL");
  }
}

TEST(Partition, TransposedBOperand) {
  Net n;
  ValueId a = n.input("a", {2, 8, 4});
  ValueId kt = n.input("kt", {2, 5, 4});
  ValueId k = n.transpose(kt, {0, 2, 1}, "k");
  n.output(n.clamp(n.matmul(a, k, "mm"), "clamp"));
  Module m = n.finish();
  const Graph& g = m.main();
  FakeBackend fake("fake", {{}, any_composite});
  Partition p = partition(m, {&fake, ref()});
  EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fake TRANSPOSE+MATMUL+CLAMP [k,mm,clamp]"}));
  const Composite& u = unit_of(g, p, "mm").composite;
  EXPECT_TRUE(u.a_view.empty());
  EXPECT_EQ(u.b_view, nodes_of(g, {"k"}));
  EXPECT_EQ(u.inputs, vals(g, {"kt", "a", "zp"}));
}

TEST(Partition, MatmulBiasRules) {
  struct Case {
    const char* what;
    std::function<void(Net&, ValueId mm, ValueId y)> tail;
    std::vector<std::string> want;
  };
  const std::vector<Case> cases = {
      {"bias, residual and clamp",
       [](Net& n, ValueId mm, ValueId y) {
         n.output(n.clamp(n.add(y, n.add(n.constant("bias", {1, 1, 5}), mm, "biased"), "res"), "clamp"));
       },
       {"fake MATMUL+BIAS+ADD+CLAMP [mm,biased,res,clamp]"}},
      {"a per-column constant after a residual is a shift, not a bias",
       [](Net& n, ValueId mm, ValueId y) { n.output(n.add(n.add(mm, y, "res"), n.constant("bias", {1, 1, 5}), "biased")); },
       {"fake MATMUL+ADD+SHIFT [mm,res,biased]"}},
      {"a per-column constant after an activation is a shift, not a bias",
       [](Net& n, ValueId mm, ValueId) { n.output(n.add(n.clamp(mm, "clamp"), n.constant("bias", {1, 1, 5}), "biased")); },
       {"fake MATMUL+CLAMP+SHIFT [mm,clamp,biased]"}},
      {"a constant varying along rows is no bias but a broadcast add (a mask)",
       [](Net& n, ValueId mm, ValueId) { n.output(n.add(mm, n.constant("bias", {1, 8, 5}), "biased")); },
       {"fake MATMUL+MASK [mm,biased]"}},
      {"a broadcast input is no bias but a mask",
       [](Net& n, ValueId mm, ValueId) { n.output(n.add(mm, n.input("bias", {1, 1, 5}), "biased")); },
       {"fake MATMUL+MASK [mm,biased]"}},
      {"a mask and a residual are not both fused (one tensor read per element)",
       [](Net& n, ValueId mm, ValueId y) { n.output(n.add(n.add(mm, y, "res"), n.input("m", {2, 1, 5}), "masked")); },
       {"fake MATMUL+ADD [mm,res]", "fake ADD [masked]"}},
      {"a full-size constant is a residual",
       [](Net& n, ValueId mm, ValueId) { n.output(n.add(mm, n.constant("bias", {2, 8, 5}), "biased")); },
       {"fake MATMUL+ADD [mm,biased]"}},
      {"two biases: the second is a shift",
       [](Net& n, ValueId mm, ValueId) {
         n.output(n.add(n.add(mm, n.constant("bias", {1, 1, 5}), "biased"), n.constant("bias2", {1, 1, 5}), "biased2"));
       },
       {"fake MATMUL+BIAS+SHIFT [mm,biased,biased2]"}},
      {"a per-column factor is a scale; one varying along rows is not",
       [](Net& n, ValueId mm, ValueId) {
         n.output(n.mul(n.mul(mm, n.constant("s", {1, 1, 5}), "scaled"), n.constant("s2", {1, 8, 5}), "scaled2"));
       },
       {"fake MATMUL+SCALE [mm,scaled]", "fake MUL [scaled2]"}},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.what);
    Net n;
    ValueId a = n.input("a", {2, 8, 4});
    ValueId bb = n.input("b", {2, 4, 5});
    ValueId y = n.input("y", {2, 8, 5});
    ValueId mm = n.matmul(a, bb, "mm");
    tc.tail(n, mm, y);
    Module m = n.finish();
    const Graph& g = m.main();
    FakeBackend fake("fake", {{"MATMUL", "ADD", "MUL"}, any_composite});
    Partition p = partition(m, {&fake, ref()});
    EXPECT_EQ(summary(g, p), tc.want);
  }
}

// ---------------------------------------------------------------------------------------------
// 5. Priority and backend resolution

TEST(Partition, ReferenceFirstTakesEverythingAlone) {
  for (int which = 0; which < 2; ++which) {
    Module m = which == 0 ? pad_conv_clamp() : attention();
    const Graph& g = m.main();
    FakeBackend fake("fake", {{"PAD", "CONV2D", "CLAMP", "RESHAPE", "TRANSPOSE", "MATMUL", "ADD", "CONST", "CONST_SHAPE"},
                              any_composite});
    Partition p = partition(m, {ref(), &fake});
    ASSERT_EQ(p.units.size(), g.nodes().size());
    for (const Unit& u : p.units) {
      EXPECT_EQ(u.backend, ref()) << u.composite.pattern;
      EXPECT_TRUE(u.composite.single()) << u.composite.pattern;
      EXPECT_TRUE(u.declined.empty()) << u.composite.pattern;
    }
    EXPECT_TRUE(fake.calls.empty()) << "a later backend was consulted";
  }
}

TEST(Partition, ReferenceRefusesFusedGroups) {
  Module m = pad_conv_clamp();
  const Graph& g = m.main();
  Composite c;
  c.anchor = node_of(g, "conv");
  c.nodes = nodes_of(g, {"conv", "clamp"});
  c.pattern = "CONV2D+CLAMP";
  backend::Support s = ref()->supports(m, g, c);
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.reason, "runs single operators, not fused groups");
}

TEST(Partition, NoBackendsOrNoHomeForANodeIsAnError) {
  Module m = pad_conv_clamp();
  try {
    compiler::partition_graph(m, m.main(), {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(e.message(), "no backends to partition for");
  }
  FakeBackend fake("fake", {{"CONST", "CONST_SHAPE", "CONV2D", "CLAMP"}, nullptr});
  try {
    compiler::partition_graph(m, m.main(), {&fake});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_EQ(e.message(), "no backend runs PAD: fake: no kernel for PAD");
    EXPECT_NE(std::string(e.what()).find("node '%pad'"), std::string::npos) << e.what();
  }
}

TEST(ResolveBackends, UnknownNameListsTheKnownBackends) {
  try {
    compiler::resolve_backends({"no-such-backend"});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    std::string known;
    for (const Backend* b : backend::all_backends()) known += (known.empty() ? "" : ", ") + std::string(b->name());
    EXPECT_EQ(e.message(),
              "unknown backend 'no-such-backend' (this build has: " + known + "; 'cpu' selects those on the CPU)");
    EXPECT_NE(e.message().find("reference"), std::string::npos);
  }
}

TEST(ResolveBackends, DuplicateNameIsAnError) {
  try {
    compiler::resolve_backends({"reference", "reference"});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(e.message(), "backend 'reference' is listed twice");
  }
}

TEST(ResolveBackends, ReferenceAloneAndDefaultOrder) {
  EXPECT_EQ(compiler::resolve_backends({"reference"}), (std::vector<const Backend*>{ref()}));
  // Default: every available backend, in registry order, ending with the reference.
  std::vector<const Backend*> all = compiler::resolve_backends({});
  std::vector<const Backend*> want;
  for (const Backend* b : backend::all_backends())
    if (b->unavailable_reason().empty()) want.push_back(b);
  EXPECT_EQ(all, want);
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.back(), ref());
  EXPECT_EQ(backend::find_backend("reference"), ref());
  EXPECT_EQ(backend::find_backend("no-such-backend"), nullptr);
}

// "cpu": the default list without the backends that run on a device (Vulkan), in the same order,
// partitioned by the default rules; it stands alone.
TEST(ResolveBackends, CpuIsTheDefaultListWithoutDeviceBackends) {
  std::vector<const Backend*> want;
  for (const Backend* b : compiler::resolve_backends({}))
    if (!b->on_device()) want.push_back(b);
  EXPECT_EQ(compiler::resolve_backends({"cpu"}), want);
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(want.back(), ref());
  const Backend* vulkan = backend::find_backend("vulkan");
  if (vulkan) {
    EXPECT_TRUE(vulkan->on_device());
  }
  EXPECT_FALSE(ref()->on_device());
  EXPECT_TRUE(compiler::default_rules({}));
  EXPECT_TRUE(compiler::default_rules({"cpu"}));
  EXPECT_FALSE(compiler::default_rules({"reference"}));
  for (const std::vector<std::string>& names :
       {std::vector<std::string>{"cpu", "reference"}, std::vector<std::string>{"reference", "cpu"}}) {
    try {
      compiler::resolve_backends(names);
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_EQ(e.message(), "backend 'cpu' stands for the CPU backends in their default order and rules, and cannot "
                             "be listed with other backends (got '" + names[0] + "," + names[1] + "')");
    }
  }
}

TEST(ResolveBackends, ReferenceIsAppendedWhenMissing) {
  int checked = 0;
  for (const Backend* b : backend::all_backends()) {
    if (b == ref() || !b->unavailable_reason().empty()) continue;
    EXPECT_EQ(compiler::resolve_backends({std::string(b->name())}), (std::vector<const Backend*>{b, ref()}));
    // Naming the reference first keeps the given order.
    EXPECT_EQ(compiler::resolve_backends({"reference", std::string(b->name())}), (std::vector<const Backend*>{ref(), b}));
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "this build has no backend besides the reference";
}

// ---------------------------------------------------------------------------------------------
// 6. Graph outputs are never interior

TEST(Partition, GraphOutputsAreNeverInterior) {
  {
    SCOPED_TRACE("the conv result is a graph output: CLAMP not fused");
    Net n;
    ValueId x = n.input("x", {1, 4, 4, 2});
    ValueId c = n.conv(x, 3, "conv");
    n.output(n.clamp(c, "clamp"));
    n.output(c);
    Module m = n.finish();
    const Graph& g = m.main();
    FakeBackend fake("fake", {{"CONV2D", "CLAMP"}, any_composite});
    Partition p = partition(m, {&fake, ref()});
    EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fake CONV2D [conv]", "fake CLAMP [clamp]"}));
  }
  {
    SCOPED_TRACE("an activation in the middle is a graph output: the chain ends there");
    Net n;
    ValueId x = n.input("x", {1, 4, 4, 2});
    ValueId cl = n.clamp(n.conv(x, 3, "conv"), "clamp");
    n.output(n.unary(Op::TANH, cl, "tanh"));
    n.output(cl);
    Module m = n.finish();
    const Graph& g = m.main();
    FakeBackend fake("fake", {{"TANH"}, any_composite});
    Partition p = partition(m, {&fake, ref()});
    EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fake CONV2D+CLAMP [conv,clamp]", "fake TANH [tanh]"}));
    EXPECT_EQ(unit_of(g, p, "conv").composite.outputs, vals(g, {"clamp"}));
  }
  {
    SCOPED_TRACE("the PAD result is a graph output: PAD not fused");
    Net n;
    ValueId x = n.input("x", {1, 4, 4, 2});
    ValueId pd = n.pad(x, "pad");
    n.output(n.clamp(n.conv(pd, 3, "conv"), "clamp"));
    n.output(pd);
    Module m = n.finish();
    const Graph& g = m.main();
    FakeBackend fake("fake", {{"PAD"}, any_composite});
    Partition p = partition(m, {&fake, ref()});
    EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fake PAD [pad]", "fake CONV2D+CLAMP [conv,clamp]"}));
  }
  {
    SCOPED_TRACE("a residual ADD's result is a graph output and feeds a CLAMP");
    Net n;
    ValueId x = n.input("x", {1, 4, 4, 2});
    ValueId y = n.input("y", {1, 4, 4, 3});
    ValueId r = n.add(n.conv(x, 3, "conv"), y, "res");
    n.output(n.clamp(r, "clamp"));
    n.output(r);
    Module m = n.finish();
    const Graph& g = m.main();
    FakeBackend fake("fake", {{"CLAMP"}, any_composite});
    Partition p = partition(m, {&fake, ref()});
    EXPECT_EQ(summary(g, p), (std::vector<std::string>{"fake CONV2D+ADD [conv,res]", "fake CLAMP [clamp]"}));
  }
}

// ---------------------------------------------------------------------------------------------
// 7. Execution order on a larger graph mixing everything (the invariants are checked by
// partition() for every graph of this file).

TEST(Partition, MixedGraphIsInExecutionOrderUnderEveryPriority) {
  Net n;
  ValueId x = n.input("x", {1, 4, 4, 2});
  ValueId y = n.input("y", {1, 4, 4, 3});
  ValueId x0 = n.input("x0", {1, 2, 2, 2});
  ValueId c1 = n.clamp(n.conv(n.pad(x0, "pad1"), 3, "c1"), "a1");
  ValueId c2 = n.add(n.conv(x, 3, "c2"), c1, "res2");
  ValueId sw = n.mul(c2, n.unary(Op::SIGMOID, c2, "sig"), "swish");
  ValueId sum = n.add(sw, y, "sum");
  ValueId flat = n.reshape(sum, {1, 16, 3}, "flat");
  ValueId t = n.transpose(flat, {0, 2, 1}, "t");  // [1,3,16]
  ValueId mm = n.matmul(t, n.input("w", {1, 16, 4}), "mm");
  n.output(n.unary(Op::TANH, n.add(mm, n.constant("bias", {1, 1, 4}), "biased"), "out"));
  n.output(c1);
  Module m = n.finish();
  const Graph& g = m.main();
  // fakeA: no pad prefix, at most one post-op, no clamp; fakeB: everything.
  FakeBackend a("fakeA", {{"ADD", "TANH"}, [](const Composite& c) {
                            if (c.pad >= 0 || c.post_ops.size() > 1) return false;
                            for (const PostOp& po : c.post_ops)
                              if (po.kind == PostOp::Kind::kClamp) return false;
                            return true;
                          }});
  FakeBackend b("fakeB", {{"PAD", "CONV2D", "CLAMP", "SIGMOID", "MUL", "RESHAPE"}, any_composite});
  Partition p = partition(m, {&a, &b, ref()});
  EXPECT_EQ(summary(g, p), (std::vector<std::string>{
                               "fakeB PAD+CONV2D+CLAMP [pad1,c1,a1]",
                               "fakeA CONV2D+ADD [c2,res2]",
                               "fakeB SIGMOID [sig]",
                               "fakeB MUL [swish]",
                               "fakeA ADD [sum]",
                               "fakeA TRANSPOSE+MATMUL+BIAS [flat,t,mm,biased]",
                               "fakeA TANH [out]",
                           }));
  EXPECT_EQ(unit_of(g, p, "c1").declined, (std::vector<std::string>{"fakeA: cannot fuse PAD+CONV2D+CLAMP"}));
  EXPECT_EQ(unit_of(g, p, "sig").declined, (std::vector<std::string>{"fakeA: no kernel for SIGMOID"}));
  // Every other priority order also yields a valid partition (checked by partition()).
  partition(m, {&b, &a, ref()});
  partition(m, {&a, ref()});
  partition(m, {&b, ref()});
  partition(m, {ref()});
}

// ---------------------------------------------------------------------------------------------
// 8. explain

TEST(Explain, FusedUnitAndSummary) {
  Module m = pad_conv_clamp();
  const Graph& g = m.main();
  FakeBackend fake("fake", {{}, any_composite});
  Partition p = partition(m, {&fake, ref()});
  const std::string s = compiler::explain(g, p);
  EXPECT_EQ(s,
            "partition of graph 'main' (backends in priority order: fake reference)\n"
            "  fake: 1 kernels covering 3 nodes\n"
            "      1 x PAD+CONV2D+CLAMP\n"
            "  reference: 0 kernels covering 0 nodes, 5 constants and views (no computation)\n"
            "units in execution order:\n"
            "  #5 fake PAD+CONV2D+CLAMP: %pad, %conv, %clamp\n");
}

TEST(Explain, DeclinedUnitsSayWhy) {
  Module m = pad_conv_clamp();
  const Graph& g = m.main();
  FakeBackend fake("fake", {});
  Partition p = partition(m, {&fake, ref()});
  const std::string s = compiler::explain(g, p);
  const std::vector<std::string> lines = {
      "partition of graph 'main' (backends in priority order: fake reference)\n",
      "  fake: 0 kernels covering 0 nodes\n",
      "  reference: 3 kernels covering 3 nodes, 5 constants and views (no computation)\n",
      "      1 x CLAMP\n      1 x CONV2D\n      1 x PAD\n",
      "units in execution order:\n",
      "  #2 reference PAD: %pad\n      not on fake: no kernel for PAD\n",
      "  #6 reference CONV2D: %conv\n      not on fake: cannot fuse PAD+CONV2D+CLAMP\n",
      "  #7 reference CLAMP: %clamp\n      not on fake: no kernel for CLAMP\n",
  };
  size_t at = 0;
  for (const std::string& l : lines) {
    size_t f = s.find(l, at);
    EXPECT_NE(f, std::string::npos) << "missing (in order): " << l << "\nin:\n" << s;
    if (f != std::string::npos) at = f + l.size();
  }
  // Constants and views are not listed, nor their declines.
  EXPECT_EQ(s.find("CONST"), std::string::npos) << s;
  EXPECT_EQ(at, s.size()) << s;
}

TEST(Explain, SeveralDeclinesAndPatternCounts) {
  Net n;
  ValueId x = n.input("x", {1, 4, 4, 2});
  n.output(n.clamp(n.conv(x, 3, "c1"), "a1"));
  n.output(n.clamp(n.conv(x, 3, "c2"), "a2"));
  n.output(n.unary(Op::TANH, x, "t"));
  Module m = n.finish();
  const Graph& g = m.main();
  FakeBackend a("fakeA", {});
  FakeBackend b("fakeB", {{}, any_composite});
  Partition p = partition(m, {&a, &b, ref()});
  const std::string s = compiler::explain(g, p);
  EXPECT_NE(s.find("  fakeA: 0 kernels covering 0 nodes\n"
                   "  fakeB: 2 kernels covering 4 nodes\n"
                   "      2 x CONV2D+CLAMP\n"
                   "  reference: 1 kernels covering 1 nodes, 5 constants and views (no computation)\n"
                   "      1 x TANH\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("  #3 fakeB CONV2D+CLAMP: %c1, %a1\n      not on fakeA: cannot fuse CONV2D+CLAMP\n"), std::string::npos) << s;
  EXPECT_NE(s.find("  #7 reference TANH: %t\n      not on fakeA: no kernel for TANH\n      not on fakeB: no kernel for TANH\n"),
            std::string::npos)
      << s;
}

// Pass 1b: the element-wise nodes left after pass 1 that a backend runs in loops become one
// ELEMENTWISE unit on it, with every result read outside (here a graph output in the middle) as an
// output, and an operator that backend has no single kernel for (RECIPROCAL) joining the loop.
// A backend preferred to the loop's keeps what it runs alone (TANH): the loop then forms on each
// side of it. A group the backend declines runs as single nodes.
TEST(Partition, ElementwiseGroupsFormOnTheLoopBackendOnly) {
  Net n;
  ValueId x = n.input("x", {1, 8}), y = n.input("y", {1, 8});
  ValueId a = n.add(x, y, "a");
  ValueId m = n.mul(n.unary(Op::TANH, a, "t"), x, "m");
  ValueId q = n.add(n.unary(Op::RECIPROCAL, m, "r"), a, "q");
  n.output(q);
  n.output(a);
  Module mod = n.finish();
  const Graph& g = mod.main();
  FakeBackend loops("loops", {{"ADD", "MUL", "TANH"}, any_composite, {}, {"ADD", "MUL", "TANH", "RECIPROCAL"}});
  {
    Partition p = compiler::partition_graph(mod, g, {&loops, ref()});
    EXPECT_EQ(summary(g, p), (std::vector<std::string>{"loops ELEMENTWISE[5 ops] [a,t,m,r,q]"}));
    const Composite& c = unit_of(g, p, "t").composite;
    EXPECT_EQ(c.region, Composite::Region::kElementwise);
    EXPECT_EQ(c.outputs, vals(g, {"a", "q"}));
    EXPECT_EQ(c.inputs, (std::vector<ValueId>{x, y, val(g, "shift")}));
  }
  {
    FakeBackend tanh_first("tanh_first", {{"TANH"}});
    Partition p = compiler::partition_graph(mod, g, {&tanh_first, &loops, ref()});
    EXPECT_EQ(summary(g, p), (std::vector<std::string>{"loops ADD [a]", "tanh_first TANH [t]",
                                                       "loops ELEMENTWISE[3 ops] [m,r,q]"}));
  }
  {
    FakeBackend no_groups("no_groups", {{"ADD", "MUL", "TANH"}, nullptr, {}, {"ADD", "MUL", "TANH", "RECIPROCAL"}});
    Partition p = compiler::partition_graph(mod, g, {&no_groups, ref()});
    EXPECT_EQ(summary(g, p), (std::vector<std::string>{"no_groups ADD [a]", "no_groups TANH [t]", "no_groups MUL [m]",
                                                       "reference RECIPROCAL [r]", "no_groups ADD [q]"}));
  }
}

}  // namespace
}  // namespace weft
