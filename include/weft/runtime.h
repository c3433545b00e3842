// The runtime: load a model once, create execution contexts, bind inputs and outputs, run many times.
//
//   auto model = weft::Model::load("model.vgf");            // or .weft, .onnx
//   weft::Context ctx(model, {.threads = 4});                // prepares everything once
//   ctx.set_input("image", image);                           // borrowed, not copied
//   ctx.run();
//   const weft::Tensor& logits = ctx.output("logits");      // valid until the next run
//
// A Model is immutable and may be shared by any number of Contexts; each Context owns its arena,
// its bindings and its TOSA variables, so contexts of one model run concurrently from different
// threads. A single Context is not thread-safe.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "weft/graph.h"
#include "weft/onnx.h"
#include "weft/tensor.h"

namespace weft {

// How a model's fp32 operators compute.
//   kFp32  as the model says (the default).
//   kFp16  reduced precision, for GPUs: every fp32 tensor, weight and operator becomes fp16, with
//          fp32 accumulators where TOSA gives the choice (convolutions, AVG_POOL2D) and fp32 inputs
//          and outputs (a CAST after each input, before each output); the GPU kernels also
//          accumulate MATMULs in fp32. Results differ from fp32 by fp16's rounding (about 1e-3
//          relative; weights beyond +-65504 saturate). Model::explain() says what changed. oneDNN
//          takes no fp16 operators, so on a machine without a GPU they run on the reference loops.
enum class Precision { kFp32, kFp16 };

// Where a model's operators run. Each backend runs what it supports; the rest falls to the next
// backend in the list and finally to the reference backend, which runs everything.
struct BackendOptions {
  // Backend names in priority order, e.g. {"vulkan", "onednn", "reference"}. Empty: every backend
  // available on this machine, fastest first (see backend_names()); the Vulkan backend then takes
  // TOSA operators only when its device is a GPU (a CPU implementation such as lavapipe is slower
  // than the CPU backends; name "vulkan" to use it anyway), and custom shader operators always,
  // and tiny operators (an unrolled LSTM's thousands) stay on the reference backend's loops rather
  // than costing a oneDNN call each. {"cpu"}: the backends that run on the host CPU, with those
  // same default rules (what a machine without a GPU runs). Any other list is honoured as given:
  // each backend takes whatever it can, in the order named.
  std::vector<std::string> backends;
  // oneDNN: let the library allocate its own scratch memory instead of taking it from the
  // context's arena (for measuring the difference; the arena is the default).
  bool library_scratchpad = false;
  // Keep every node whose NaN (or -inf) results a backend would not give exactly as TOSA
  // specifies (nan_mode of CLAMP/MAXIMUM/MINIMUM/MAX_POOL2D/REDUCE_MAX/REDUCE_MIN, where oneDNN
  // also starts a max from -FLT_MAX rather than -inf; NaN through EXP and softmax) off that backend. Off by default: oneDNN, like ONNX Runtime's kernels, lets
  // ReLU/clamp/max turn a NaN into a number, and fused ReLUs are worth more than that.
  bool nan_exact = false;
  // The Vulkan device that runs shader nodes: an index from `weft devices` or part of the device's
  // name ("llvmpipe", "H100"). "" = the WEFT_VULKAN_DEVICE environment variable, else the first
  // discrete GPU, then integrated, virtual and CPU devices.
  std::string device;
  // fp32 as written, or the reduced-precision mode (see Precision).
  Precision precision = Precision::kFp32;
};

// How model files are read and placed: .onnx files are imported with `onnx` (static input
// shapes, ...); operators are assigned to backends by `backend`.
struct LoadOptions {
  OnnxImportOptions onnx;
  BackendOptions backend;
  // Receives what a model file holds that is accepted but worth telling (a VGF module whose
  // entry_point is not its graph's name, ...), each prefixed with the file name. Null: dropped.
  std::function<void(const std::string&)> on_warning;
};

struct BackendInfo {
  std::string name;
  std::string description;
  std::string unavailable;  // "" when usable here, else why not
};
// Every backend of this build, in default priority order.
std::vector<BackendInfo> backends();

// One kernel execution of a run, when profiling is on.
struct KernelProfile {
  std::string backend;
  std::string pattern;   // "CONV2D+CLAMP", "ADD", ...
  std::string node;      // label of the group's main node
  double microseconds = 0;
  // A record of device time inside the kernel before it (a GPU backend's region: one record per
  // dispatch, from timestamp queries); not part of the run's kernel time, which the region's own
  // record already holds.
  bool device = false;
  // The library's own name for the implementation it chose, where it has one (oneDNN's
  // "brgconv:avx2", "jit:uni", "ref:any", ...): a slow choice shows here.
  std::string implementation;
};

// The module of a model file, by extension: .weft (text form), .vgf (the container's single GRAPH
// segment; its constants stay in the mapped file) or .onnx (imported and lowered to TOSA).
// Errors name the file.
Module read_model(const std::string& path, const LoadOptions& options = {});

// Where one kernel of the partition runs (Model::placement; the data behind Model::explain).
struct KernelPlacement {
  std::string backend;
  std::string pattern;               // "CONV2D+CLAMP", "CUSTOM", ...
  std::vector<std::string> nodes;    // labels of the nodes it covers
  // Why the backends preferred over `backend` did not take it: "name: reason" per backend.
  std::vector<std::string> declined;
};

struct IoInfo {
  std::string name;
  TensorType type;
  // The values are unsigned integers carried in the bits of `type` (an ONNX model's uint8 in i8,
  // uint16 in i16, uint32/uint64 in i32 with values up to 2^31 - 1). Readers and writers of
  // arrays (the CLI's .npy files, Python) use the unsigned types for them.
  bool is_unsigned = false;
  // An ONNX int64 value carried as int32 (values in the int32 range): Python takes int64 arrays
  // for it (range-checked) and returns int64 arrays.
  bool is_int64 = false;
};

// What the memory planner decided for the entry graph.
struct MemoryStats {
  size_t arena_bytes = 0;         // peak: the size of each context's arena
  size_t intermediate_bytes = 0;  // sum of every intermediate's size (what one buffer each would take)
  int intermediates = 0;
  int in_place_nodes = 0;         // elementwise nodes that overwrite a dying input
  size_t output_bytes = 0;        // runtime-allocated output buffers
  size_t constant_bytes = 0;      // constants, used in place (mapped or shared, never copied)
  size_t workspace_bytes = 0;     // largest kernel workspace (part of the arena)
  size_t prepared_bytes = 0;      // weights that backends transformed once at load (reordered, ...)
  // Constants of an ONNX file's own bytes that left memory once the backends had copied them: no
  // kernel reads them when it runs. They are read from the file again when needed (module(), a
  // context with another thread count); module() keeps them from then on.
  size_t released_constant_bytes = 0;
};

class Model {
 public:
  // Loads .weft (text form), .vgf (container) or .onnx (imported) by extension. Verifies and plans
  // the model. Throws weft::Error naming the file on any problem; nothing is run.
  static std::shared_ptr<const Model> load(const std::string& path, const LoadOptions& options = {});
  // From an in-memory module (verified, partitioned and prepared here).
  static std::shared_ptr<const Model> from_module(Module module, const BackendOptions& options = {});

  ~Model();
  const Module& module() const;
  const std::vector<IoInfo>& inputs() const;
  const std::vector<IoInfo>& outputs() const;
  // Index of an input / output by name; throws Error(kNotFound) listing the names there are.
  size_t input_index(std::string_view name) const;
  size_t output_index(std::string_view name) const;
  const MemoryStats& memory_stats() const;
  // Which node runs where, and for every node not on the first backend, why (weft run --explain).
  std::string explain() const;
  // The same as data: every kernel in execution order (constants and views, which run nothing,
  // left out), and the backends in priority order.
  std::vector<KernelPlacement> placement() const;
  std::vector<std::string> backend_priority() const;
  // An ONNX model loaded with input dimensions left open (symbolic in the file, not given with
  // --shape): its inputs() and outputs() show them as -1 ("?"), and each run with a new input
  // shape signature imports, plans and prepares the model for those shapes once, then reuses it.
  // module() is then an error (there is one module per signature).
  bool is_dynamic() const;
  size_t specializations() const;  // signatures prepared so far (1 for a static model)

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  explicit Model(std::unique_ptr<Impl> impl);
  // from_module's work; `drops_constants`: the module was read by load() and nobody else holds
  // its tensors, so constants the backends copied may leave memory (read from the file again).
  static std::shared_ptr<const Model> build(Module module, const BackendOptions& options, bool drops_constants);
  std::unique_ptr<Impl> impl_;
};

inline constexpr int kMaxContextThreads = 1024;

struct ContextOptions {
  // Threads for every kernel of a run (oneDNN's and Weft's own); 0 = all hardware threads; at most
  // kMaxContextThreads (Error kInvalidArgument beyond).
  int threads = 1;
  // Bounds of a run, checked by every WHILE_LOOP each iteration (and the deadline between the
  // kernels of a run): an error naming the loop (Error kRuntime) instead of a run that never ends.
  // 0: no bound (TOSA sets none).
  int64_t max_loop_iterations = 0;
  double deadline_ms = 0;
  // What the context may allocate for itself: its arena (the planned peak of intermediates and
  // kernel workspaces) and the output buffers the runtime provides. More is refused when the
  // context is created (Error kRuntime naming the largest tensors), before anything is allocated.
  // 0: the machine's physical memory.
  size_t max_memory_bytes = 0;
};

class Context {
 public:
  // Prepares everything a run needs: the arena, views of every planned value, output buffers.
  explicit Context(std::shared_ptr<const Model> model, ContextOptions options = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const Model& model() const;

  // Binds an input. The tensor's buffer is borrowed (no copy) and must stay unchanged while runs
  // use it. Its type must equal the model's; otherwise Error(kInvalidArgument) and the previous
  // binding stays.
  void set_input(std::string_view name, const Tensor& value);
  void set_input(size_t index, const Tensor& value);
  // Makes the runtime write output `name` into caller memory of exactly the output's byte size
  // (data must stay valid while bound). bind_output(name, nullptr, 0) returns to a
  // runtime-allocated buffer.
  void bind_output(std::string_view name, void* data, size_t bytes);

  // Runs the entry graph. Throws Error(kInvalidArgument) naming the inputs not bound yet, and
  // Error(kRuntime) naming the node when an operator's REQUIRE fails.
  void run();
  // Convenience: binds `inputs` in the model's input order, runs, returns copies of the outputs.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);

  // The outputs of the last run: views of the context's (or the caller's) output memory, valid
  // until the next run; clone() to keep them.
  const Tensor& output(std::string_view name) const;
  const Tensor& output(size_t index) const;

  // TOSA variables back to their initial values.
  void reset_variables();

  // Per-kernel timing of each run (off by default). profile() holds the last run's records in
  // execution order; views and constants, which cost nothing, are left out.
  void set_profiling(bool on);
  const std::vector<KernelProfile>& profile() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  struct Dyn;  // a dynamic model's context (Model::is_dynamic)
  std::unique_ptr<Dyn> dyn_;
};

}  // namespace weft
