// A backend that takes whole regions (Backend::Grouping::kRegions), registered at run time: the
// partitioner merges each run of consecutive units it gets into one REGION composite with several
// outputs, the runtime plans and runs it as one step, and the results equal the reference's.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>

#include "backends/backend.h"
#include "backends/reference/kernels.h"
#include "weft/graph.h"
#include "weft/runtime.h"

namespace weft {
namespace {

using backend::Composite;
using backend::ExecArgs;
using backend::Support;

// Runs its region as a sub-graph on the reference executor: a stand-in for a backend that compiles
// a region as a whole.
class SubgraphKernel final : public backend::Kernel {
 public:
  SubgraphKernel(const Graph& g, const Composite& c) {
    std::map<ValueId, ValueId> map;
    for (ValueId v : c.inputs) map[v] = sub_.add_input(g.value(v).name, g.value(v).type);
    for (int ni : c.nodes) {
      Node n = g.node(ni);
      for (ValueId& v : n.inputs) v = map.at(v);
      for (ValueId& v : n.outputs) v = map[v] = sub_.add_value(g.value(v).name, g.value(v).type);
      sub_.add_node(std::move(n));
    }
    for (ValueId v : c.outputs) sub_.add_output(map.at(v));
  }
  void execute(ExecArgs& a) const override {
    std::vector<Tensor> ins;
    for (const Tensor* t : a.in) ins.push_back(*t);
    std::vector<Tensor> outs = ref::execute_graph(sub_, ins, a.ctx);
    ++runs;
    for (size_t k = 0; k < outs.size(); ++k) std::memcpy(a.out[k].mutable_bytes(), outs[k].bytes(), outs[k].byte_size());
  }
  mutable int runs = 0;

 private:
  Graph sub_;
};

class RegionBackend final : public backend::Backend {
 public:
  explicit RegionBackend(std::set<Op> ops) : ops_(std::move(ops)) {}
  std::string_view name() const override { return "regiontest"; }
  std::string_view description() const override { return "test backend taking whole regions"; }
  Grouping grouping() const override { return Grouping::kRegions; }
  bool runs_row(const OpDef& def, const TypeSupport&) const override { return ops_.count(def.op) > 0; }
  Support supports(const Module&, const Graph& g, const Composite& c) const override {
    if (!c.single()) return Support::no("takes single operators and merges them itself");
    return ops_.count(g.node(c.anchor).op) ? Support::yes() : Support::no("no kernel for " + c.pattern);
  }
  std::unique_ptr<backend::Kernel> prepare(const Module&, const Graph& g, const Composite& c,
                                           const backend::PrepareOptions&) const override {
    ++prepared;
    EXPECT_EQ(c.region, Composite::Region::kSubgraph);
    return std::make_unique<SubgraphKernel>(g, c);
  }
  mutable int prepared = 0;

 private:
  std::set<Op> ops_;
};

// x, y -> a = ADD(x, y); b = MUL(a, x); c = ERF(b); d = SUB(c, a); e = TANH(d); outputs b, e.
Module chain() {
  GraphBuilder b;
  const TensorType t{DType::kFp32, {2, 3}};
  ValueId x = b.input("x", t), y = b.input("y", t);
  ValueId shift = b.constant("shift", Tensor::from_ints({DType::kInt8, {1}}, std::vector<int64_t>{0}));
  ValueId a = b.op(Op::ADD, {x, y}, {}, "a");
  ValueId m = b.op(Op::MUL, {a, x, shift}, {}, "b");
  ValueId c = b.op(Op::ERF, {m}, {}, "c");
  ValueId d = b.op(Op::SUB, {c, a}, {}, "d");
  ValueId e = b.op(Op::TANH, {d}, {}, "e");
  b.output(m);
  b.output(e);
  return Module(b.finish());
}

TEST(RegionBackend, RunsOfUnitsMergeIntoRegionsWithSeveralOutputs) {
  RegionBackend rb({Op::ADD, Op::MUL, Op::SUB, Op::TANH, Op::CONST});
  backend::register_backend(rb);
  struct Unregister {
    const backend::Backend& b;
    ~Unregister() { backend::unregister_backend(b); }
  } guard{rb};
  EXPECT_THROW(backend::register_backend(rb), Error);  // the name is taken

  Module m = chain();
  auto model = Model::from_module(m, {.backends = {"regiontest"}});
  const std::string ex = model->explain();
  // The constant moved ahead and joined the first run; ERF cuts the chain.
  EXPECT_NE(ex.find("regiontest REGION[3 nodes]: %shift, %a, %b"), std::string::npos) << ex;
  EXPECT_NE(ex.find("reference ERF: %c"), std::string::npos) << ex;
  EXPECT_NE(ex.find("not on regiontest: no kernel for ERF"), std::string::npos) << ex;
  EXPECT_NE(ex.find("regiontest REGION[2 nodes]: %d, %e"), std::string::npos) << ex;
  EXPECT_EQ(rb.prepared, 2);

  auto ref = Model::from_module(m, {.backends = {"reference"}});
  const TensorType t{DType::kFp32, {2, 3}};
  std::vector<Tensor> in = {Tensor::from_doubles(t, std::vector<double>{0.1, -0.2, 0.3, 0.4, -0.5, 0.6}),
                            Tensor::from_doubles(t, std::vector<double>{1, 2, -3, 0.5, 0.25, -1})};
  Context ctx(model), rctx(ref);
  for (int run = 0; run < 2; ++run) {
    auto got = ctx.run(in);
    auto want = rctx.run(in);
    ASSERT_EQ(got.size(), 2u);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i].identical(want[i])) << "output " << i;
  }
  // %a leaves the first region for SUB and %c enters the second: those two are planned in the
  // arena (%b and %e are outputs); %shift and %d live inside their regions and get no storage.
  EXPECT_EQ(model->memory_stats().intermediates, 2);
}

TEST(RegionBackend, WithoutRegionBackendsNothingIsMerged) {
  auto model = Model::from_module(chain(), {.backends = {"reference"}});
  EXPECT_EQ(model->explain().find("REGION"), std::string::npos);
}

}  // namespace
}  // namespace weft
