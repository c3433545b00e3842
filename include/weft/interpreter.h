// The reference interpreter: executes a module with the exact semantics of the TOSA 1.0
// pseudocode. It is Weft's correctness oracle and the fallback backend.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "weft/graph.h"
#include "weft/tensor.h"

namespace weft {

struct InterpreterOptions {
  int threads = 1;          // worker threads for heavy kernels (conv, matmul); 0 = hardware
  bool verify = true;       // run verify_or_throw on construction
  // Bounds of a run (ContextOptions has the same): WHILE_LOOP iterations and a deadline; 0: none.
  int64_t max_loop_iterations = 0;
  double deadline_ms = 0;
};

// Per-node execution record (filled when profiling is on).
struct NodeProfile {
  std::string node;
  Op op;
  double microseconds = 0;
};

// An implementation of a tosa.CUSTOM operator for the reference interpreter. `outputs` are
// pre-allocated with the types declared in the graph; `implementation_attrs` is the node's payload.
using CustomKernel = std::function<void(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs,
                                        const std::string& implementation_attrs)>;
// Registers (or replaces) the kernel for (domain_name, operator_name). Thread-safe.
void register_custom_kernel(const std::string& domain_name, const std::string& operator_name, CustomKernel kernel);
// Removes a registration; returns false if there was none.
bool unregister_custom_kernel(const std::string& domain_name, const std::string& operator_name);

class Interpreter {
 public:
  // Keeps a reference to `module`; it must outlive the interpreter.
  explicit Interpreter(const Module& module, InterpreterOptions options = {});
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Inputs in the entry graph's input order; outputs in its output order.
  // Throws Error(kInvalidArgument) naming the input on count/type mismatches, and
  // Error(kRuntime) naming the node when an operator's REQUIRE condition fails.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  // Inputs by name (all required); outputs by name.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs);

  // TOSA variables keep their values between runs; this restores their initial values.
  void reset_variables();

  void set_profiling(bool on);
  const std::vector<NodeProfile>& profile() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace weft
