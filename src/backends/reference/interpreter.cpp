// The reference executor: runs graphs node by node, keeping every value alive only while needed.
#include "weft/interpreter.h"

#include <chrono>
#include <map>

#include "backends/reference/kernels.h"
#include "weft/verify.h"

namespace weft {
namespace ref {

void KernelArgs::fail(const std::string& message) const {
  throw Error(ErrorCode::kRuntime, std::string(op_name(node.op)) + ": " + message,
              {.graph = graph.name(), .node = graph.node_label(node_index)});
}

KernelFn kernel_for(Op op) {
  static constexpr KernelFn kTable[] = {
#define WEFT_OP(NAME, SPIRV_OPCODE, GROUP) &kernel_##NAME,
#include "weft/op_list.inc"
#undef WEFT_OP
  };
  return kTable[static_cast<size_t>(op)];
}

// Runs `g` node by node: fresh zero-filled outputs per node, each value released after its last use.
std::vector<Tensor> execute_graph(const Graph& g, const std::vector<Tensor>& inputs, ExecContext& ctx,
                                  std::vector<NodeProfile>* profile) {
  if (inputs.size() != g.inputs().size()) {
    throw Error(ErrorCode::kInvalidArgument, "graph '" + g.name() + "' takes " + std::to_string(g.inputs().size()) +
                                                 " inputs, got " + std::to_string(inputs.size()),
                {.graph = g.name()});
  }
  std::vector<Tensor> vals(g.values().size());
  // Remaining uses of each value, so intermediates are released as soon as they are dead.
  std::vector<int> uses(g.values().size(), 0);
  for (const Node& n : g.nodes()) {
    for (ValueId v : n.inputs) ++uses[static_cast<size_t>(v)];
  }
  for (ValueId v : g.outputs()) ++uses[static_cast<size_t>(v)];
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = g.value(g.inputs()[i]);
    if (inputs[i].type() != v.type) {
      throw Error(ErrorCode::kInvalidArgument,
                  "input '" + v.name + "' expects " + v.type.str() + ", got " + inputs[i].type().str(),
                  {.graph = g.name(), .operand = v.name});
    }
    vals[static_cast<size_t>(g.inputs()[i])] = inputs[i];
  }
  for (int ni = 0; ni < static_cast<int>(g.nodes().size()); ++ni) {
    const Node& n = g.node(ni);
    std::vector<Tensor> outs;
    outs.reserve(n.outputs.size());
    // Ops that forward an existing buffer (constants, identity, reshape) get empty outputs to
    // fill by sharing; everything else writes into fresh zero-filled tensors.
    const bool forwards = forwards_buffer(n.op);
    for (ValueId o : n.outputs) outs.push_back(forwards ? Tensor() : Tensor::zeros(g.value(o).type));
    std::vector<const Tensor*> ins;
    ins.reserve(n.inputs.size());
    for (ValueId v : n.inputs) {
      const Tensor& t = vals[static_cast<size_t>(v)];
      if (!t.valid()) {
        throw Error(ErrorCode::kInternal, "value '%" + g.value(v).name + "' used before it was computed",
                    {.graph = g.name(), .node = g.node_label(ni)});
      }
      ins.push_back(&t);
    }
    KernelArgs args{g, n, ni, ins, outs, ctx};
    auto t0 = std::chrono::steady_clock::now();
    kernel_for(n.op)(args);
    if (profile) {
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      profile->push_back({g.node_label(ni), n.op, us});
    }
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      if (!outs[k].valid() || outs[k].type() != g.value(n.outputs[k]).type) {
        throw Error(ErrorCode::kInternal, "kernel left output " + std::to_string(k) + " unset or mistyped",
                    {.graph = g.name(), .node = g.node_label(ni)});
      }
      vals[static_cast<size_t>(n.outputs[k])] = std::move(outs[k]);
    }
    for (ValueId v : n.inputs) {
      if (--uses[static_cast<size_t>(v)] == 0) vals[static_cast<size_t>(v)] = Tensor();
    }
  }
  std::vector<Tensor> result;
  result.reserve(g.outputs().size());
  for (ValueId v : g.outputs()) result.push_back(vals[static_cast<size_t>(v)]);
  return result;
}

}  // namespace ref

namespace ref {

std::vector<Tensor> ModuleContext::run_graph(const std::string& name, const std::vector<Tensor>& inputs) {
  const Graph* g = module_.find_graph(name);
  if (!g) throw Error(ErrorCode::kNotFound, "module has no graph '" + name + "'");
  if (depth_ > 256) throw Error(ErrorCode::kRuntime, "graph nesting deeper than 256 (recursion?)", {.graph = name});
  ++depth_;
  try {
    auto r = execute_graph(*g, inputs, *this, nullptr);
    --depth_;
    return r;
  } catch (...) {
    --depth_;
    throw;
  }
}

Tensor* ModuleContext::find_variable(const std::string& name) {
  auto it = variables_.find(name);
  return it == variables_.end() ? nullptr : &it->second;
}

void ModuleContext::declare_variable(const std::string& name, Tensor initial) {
  // Declared once: a VARIABLE node re-executed on a later run keeps the current value.
  if (variables_.count(name)) return;
  variable_initial_.emplace(name, initial.clone());
  variables_.emplace(name, std::move(initial));
}

void ModuleContext::reset_variables() {
  for (auto& [name, t] : variables_) t = variable_initial_.at(name).clone();
}

bool forwards_buffer(Op op) { return op == Op::CONST || op == Op::IDENTITY || op == Op::RESHAPE; }

bool runs_in_place(Op op) {
  if (op == Op::TABLE) return false;  // the table operand is not elementwise
  const std::string_view group = op_def(op).group;
  return group == "activation" || group == "elementwise-binary" || group == "elementwise-unary";
}

bool writes_every_output(Op op) {
  switch (op) {
    case Op::CONCAT:
    case Op::PAD:
    case Op::REVERSE:
    case Op::SLICE:
    case Op::TILE:
    case Op::TRANSPOSE: return true;
    default: return runs_in_place(op);
  }
}

}  // namespace ref

struct Interpreter::State {
  const Module& module;
  ref::ModuleContext ctx;
  bool profiling = false;
  std::vector<NodeProfile> profile;

  State(const Module& m, InterpreterOptions o) : module(m), ctx(m, o.threads) {
    ctx.set_limits(o.max_loop_iterations, o.deadline_ms);
  }
};

Interpreter::Interpreter(const Module& module, InterpreterOptions options)
    : state_(std::make_unique<State>(module, options)) {
  if (options.verify) verify_or_throw(module);
}

Interpreter::~Interpreter() = default;

std::vector<Tensor> Interpreter::run(const std::vector<Tensor>& inputs) {
  state_->profile.clear();
  state_->ctx.start_run();
  return ref::execute_graph(state_->module.main(), inputs, state_->ctx,
                            state_->profiling ? &state_->profile : nullptr);
}

std::map<std::string, Tensor> Interpreter::run(const std::map<std::string, Tensor>& inputs) {
  const Graph& g = state_->module.main();
  std::vector<Tensor> ordered;
  for (ValueId id : g.inputs()) {
    const Value& v = g.value(id);
    auto it = inputs.find(v.name);
    if (it == inputs.end()) {
      throw Error(ErrorCode::kInvalidArgument, "missing input '" + v.name + "' (" + v.type.str() + ")",
                  {.graph = g.name(), .operand = v.name});
    }
    ordered.push_back(it->second);
  }
  for (const auto& [name, t] : inputs) {
    auto id = g.find_value(name);
    bool is_input = false;
    if (id) {
      for (ValueId in : g.inputs()) is_input |= in == *id;
    }
    if (!is_input) {
      throw Error(ErrorCode::kInvalidArgument, "the model has no input named '" + name + "'",
                  {.graph = g.name(), .operand = name});
    }
  }
  auto outs = run(ordered);
  std::map<std::string, Tensor> r;
  for (size_t i = 0; i < outs.size(); ++i) r.emplace(g.value(g.outputs()[i]).name, std::move(outs[i]));
  return r;
}

void Interpreter::reset_variables() { state_->ctx.reset_variables(); }

void Interpreter::set_profiling(bool on) { state_->profiling = on; }
const std::vector<NodeProfile>& Interpreter::profile() const { return state_->profile; }

}  // namespace weft
