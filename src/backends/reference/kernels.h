// Reference kernels: one function per TOSA operator, named kernel_<OP>, each implementing the
// TOSA 1.0 pseudocode exactly. The executor (interpreter.cpp) allocates outputs and dispatches
// through a table built from op_list.inc, so a missing kernel is a link error.
#pragma once

#include <string>
#include <vector>

#include "weft/error.h"
#include "weft/graph.h"
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
};

struct KernelArgs {
  const Graph& graph;
  const Node& node;
  int node_index;
  std::vector<const Tensor*> in;  // one per node.inputs entry
  std::vector<Tensor>& out;       // one per node.outputs entry, pre-allocated (zero-filled, writable)
  ExecContext& ctx;

  const Tensor& input(size_t i) const { return *in.at(i); }
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

}  // namespace weft::ref
