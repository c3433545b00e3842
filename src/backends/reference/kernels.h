// Reference kernels: one function per TOSA operator, named kernel_<OP>, each implementing the
// TOSA 1.0 pseudocode exactly. The executor (interpreter.cpp) allocates outputs and dispatches
// through a table built from op_list.inc, so a missing kernel is a link error.
#pragma once

#include <chrono>
#include <optional>

#include <map>
#include <span>
#include <string>
#include <vector>

#include "weft/error.h"
#include "weft/graph.h"
#include "weft/interpreter.h"
#include "weft/tensor.h"

namespace weft::ref {

// Services a kernel may need from the executor.
class ExecContext {
 public:
  virtual ~ExecContext() = default;
  // Runs graph `name` of the module on `inputs` (COND_IF / WHILE_LOOP bodies).
  virtual std::vector<Tensor> run_graph(const std::string& name, const std::vector<Tensor>& inputs) = 0;
  // TOSA variables by name (VARIABLE declares, VARIABLE_READ / VARIABLE_WRITE use).
  virtual Tensor* find_variable(const std::string& name) = 0;
  virtual void declare_variable(const std::string& name, Tensor initial) = 0;
  virtual int threads() const = 0;
  // Bounds of a run (ContextOptions / InterpreterOptions): loop iterations per WHILE_LOOP (0: no
  // bound) and a deadline (none: no bound). Loops check both each iteration.
  virtual int64_t max_loop_iterations() const { return 0; }
  virtual std::optional<std::chrono::steady_clock::time_point> deadline() const { return std::nullopt; }
};

struct KernelArgs {
  const Graph& graph;
  const Node& node;
  int node_index;
  std::span<const Tensor* const> in;  // one per node.inputs entry
  std::vector<Tensor>& out;       // one per node.outputs entry, pre-allocated (zero-filled, writable)
  ExecContext& ctx;

  const Tensor& input(size_t i) const {
    if (i >= in.size()) fail("operand " + std::to_string(i) + " missing (the node has " + std::to_string(in.size()) + ")");
    return *in[i];
  }
  Tensor& output(size_t i) { return out.at(i); }
  // Error(kRuntime) located at this node, e.g. for a failed REQUIRE.
  [[noreturn]] void fail(const std::string& message) const;
  // REQUIRE(cond) of the pseudocode.
  void require(bool cond, const char* what) const {
    if (!cond) fail(std::string("REQUIRE failed: ") + what);
  }
};

using KernelFn = void (*)(KernelArgs&);

#define WEFT_OP(NAME, SPIRV_OPCODE, GROUP) void kernel_##NAME(KernelArgs& args);
#include "weft/op_list.inc"
#undef WEFT_OP

KernelFn kernel_for(Op op);

// The ExecContext of one execution of a module: sub-graphs of the module, its TOSA variables (kept
// between runs) and the thread count. One per Interpreter or runtime Context; not thread-safe.
class ModuleContext : public ExecContext {
 public:
  ModuleContext(const Module& module, int threads) : module_(module), threads_(threads) {}
  int64_t max_loop_iterations() const override { return max_loop_iterations_; }
  std::optional<std::chrono::steady_clock::time_point> deadline() const override { return deadline_; }
  void set_limits(int64_t max_loop_iterations, double deadline_ms) {
    max_loop_iterations_ = max_loop_iterations;
    deadline_ms_ = deadline_ms;
  }
  // Starts the deadline clock of one run.
  void start_run() {
    deadline_.reset();
    if (deadline_ms_ > 0)
      deadline_ = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double, std::milli>(deadline_ms_));
  }
  double deadline_ms() const { return deadline_ms_; }
  std::vector<Tensor> run_graph(const std::string& name, const std::vector<Tensor>& inputs) override;
  Tensor* find_variable(const std::string& name) override;
  void declare_variable(const std::string& name, Tensor initial) override;
  int threads() const override { return threads_; }
  void reset_variables();  // every variable back to its initial value

 private:
  const Module& module_;
  int threads_;
  int64_t max_loop_iterations_ = 0;
  double deadline_ms_ = 0;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  int depth_ = 0;
  std::map<std::string, Tensor> variables_;
  std::map<std::string, Tensor> variable_initial_;
};

// CONST, IDENTITY and RESHAPE: their kernels share an existing buffer (output(0) is replaced by a
// view) instead of writing into a pre-allocated output.
bool forwards_buffer(Op op);

// Operators whose kernels compute output[i] from input[i] (and broadcast operands) only, reading
// element i before writing it: the output may overwrite an input of the same type and shape.
bool runs_in_place(Op op);

// Operators whose kernels write every element of their outputs when they succeed (the element-wise
// families and the copies: CONCAT, PAD, REVERSE, SLICE, TILE, TRANSPOSE): the runtime need not
// zero their planned storage first. The others (reductions into accumulators, convolutions, ...)
// get zeroed outputs.
bool writes_every_output(Op op);

// Executes graph `g` on `inputs` (in its input order) with fresh buffers for every value, released
// after their last use; returns the outputs in order. Used for entry graphs by the Interpreter and
// for COND_IF / WHILE_LOOP bodies everywhere. `profile`, when set, receives one record per node.
std::vector<Tensor> execute_graph(const Graph& g, const std::vector<Tensor>& inputs, ExecContext& ctx,
                                  std::vector<NodeProfile>* profile = nullptr);

}  // namespace weft::ref
