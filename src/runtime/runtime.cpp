// Models and execution contexts: everything is prepared when a Context is created (the arena, a
// view of every planned value, the output buffers, per-node operand tables), so that run() only
// zero-fills outputs and calls the kernels.
#include "weft/runtime.h"
#include "weft/custom.h"

#include <cstring>
#include <filesystem>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <set>
#include <unordered_map>
#include <map>
#include <mutex>

#include "backends/backend.h"
#include "backends/reference/kernels.h"
#include "backends/reference/parallel.h"
#include "compiler/canonicalize.h"
#include "compiler/narrow.h"
#include "frontends/onnx/importer.h"
#include "compiler/partition.h"
#include "runtime/memory_plan.h"
#include "weft/onnx.h"
#include "weft/text.h"
#include "weft/tosa_file.h"
#include "weft/verify.h"
#include "core/reloadable.h"
#include "weft/vgf.h"

namespace weft {

struct Model::Impl {
  Module module;
  std::string source;  // file the model came from ("" for in-memory modules)
  std::vector<IoInfo> inputs, outputs;
  // Copies is_unsigned / is_int64 from the declared interface onto the inputs and outputs, by name.
  void mark_unsigned(const std::vector<IoInfo>& ins, const std::vector<IoInfo>& outs) {
    auto mark = [](std::vector<IoInfo>& list, const std::vector<IoInfo>& from) {
      for (IoInfo& io : list)
        for (const IoInfo& f : from)
          if (f.name == io.name) {
            io.is_unsigned = f.is_unsigned;
            io.is_int64 = f.is_int64;
          }
    };
    mark(inputs, ins);
    mark(outputs, outs);
  }
  compiler::Partition partition;
  BackendOptions backend_options;
  // Kernels depend on the thread count (oneDNN fixes a primitive's decomposition when it is
  // created), so they are prepared once per thread count and shared by the contexts using it.
  struct Prepared {
    std::vector<std::unique_ptr<backend::Kernel>> kernels;  // per unit
    std::vector<bool> is_view;                                // per unit: constant or view (never profiled)
    std::vector<bool> is_constant;                            // per unit: a CONST or CONST_SHAPE (fixed)
    runtime::MemoryPlan plan;                                 // one step per unit
  };
  mutable std::mutex mu;
  mutable std::map<int, std::shared_ptr<const Prepared>> prepared;  // by thread count
  // Reloadable constants (src/core/reloadable.h) of the main graph's CONST nodes. A model that
  // imported its module itself (`drops_constants`: nobody else holds a view of them) drops those
  // that no kernel reads when it runs, and reads them back before anything else reads them:
  // preparing another thread count, module().
  mutable std::atomic<bool> drops_constants{false};
  mutable bool scanned_constants = false;
  mutable std::vector<core::ReloadBlock*> reloadable;

  mutable backend::PreparedCache prepared_cache;                     // shared by those (weights)
  MemoryStats stats;  // of the 1-thread preparation

  std::shared_ptr<const Prepared> prepare(int threads) const;

  const Graph& graph() const { return module.main(); }

  // An ONNX model whose inputs have dimensions known only when it runs: each input shape
  // signature is imported, verified, partitioned and prepared once, then cached.
  struct Dynamic {
    std::string path;
    LoadOptions options;
    mutable std::mutex mu;
    mutable std::map<std::vector<Shape>, std::shared_ptr<const Model>> specialized;
  };
  std::unique_ptr<Dynamic> dynamic;
  // The model specialized to input shapes `shapes` (one per input), imported on first use.
  std::shared_ptr<const Model> specialize(const std::vector<Shape>& shapes) const;
  const std::string& graph_name() const {
    static const std::string kMain = "main";
    return dynamic ? kMain : graph().name();
  }
};

namespace {

std::string names_of(const std::vector<IoInfo>& infos) {
  std::string r;
  for (const IoInfo& i : infos) r += (r.empty() ? "" : ", ") + i.name + " " + i.type.str();
  return r.empty() ? "(none)" : r;
}

size_t index_of(const std::vector<IoInfo>& infos, std::string_view name, const char* what, const Model::Impl& m) {
  for (size_t i = 0; i < infos.size(); ++i)
    if (infos[i].name == name) return i;
  throw Error(ErrorCode::kNotFound,
              std::string("the model has no ") + what + " named '" + std::string(name) + "'; its " + what +
                  "s are: " + names_of(infos),
              {.file = m.source, .graph = m.graph_name()});
}

}  // namespace

std::shared_ptr<const Model> Model::from_module(Module module, const BackendOptions& options) {
  // The caller may hold copies of the module's tensors: its constants stay in memory.
  return build(std::move(module), options, false);
}

std::shared_ptr<const Model> Model::build(Module module, const BackendOptions& options, bool drops_constants) {
  // Custom shader nodes: registered payloads filled in, GLSL compiled, payloads and resource
  // contracts checked (a no-op for modules without CUSTOM nodes).
  custom::prepare_module(module, "");
  verify_or_throw(module);
  if (options.precision == Precision::kFp16) {
    // The reduced-precision mode: the whole module narrowed before partitioning, so every backend
    // sees fp16 operators (and the Vulkan backend's fp16 kernels: cooperative matrices, half the
    // memory traffic); inputs and outputs stay fp32.
    const compiler::NarrowStats st = compiler::narrow_fp32_to_fp16(module, /*fp32_accumulators=*/true,
                                                                    /*preserve_io=*/true);
    module.add_note("precision fp16: narrowed " + compiler::narrow_summary(st));
  }
  const std::vector<const backend::Backend*> priority = compiler::resolve_backends(options.backends);
  if (!priority.empty() && priority.front()->reads_split_views()) {
    // q/k/v projections of a batch as one wider GEMM, whose slices the leading backend reads in place.
    Graph& main = module.main();
    if (const int merged = compiler::merge_sibling_matmuls(main, /*through_reshapes=*/true); merged > 0)
      module.add_note("merged " + std::to_string(merged) + " batched sibling MATMUL" + (merged == 1 ? "" : "s") +
                      " into wider ones (" + std::string(priority.front()->name()) + " reads their slices in place)");
    if (const int copied = compiler::unshare_view_chains(main); copied > 0)
      module.add_note("gave " + std::to_string(copied) + " SLICE" + (copied == 1 ? "" : "s") +
                      " of a shared RESHAPE / TRANSPOSE chain a copy of it (" + std::string(priority.front()->name()) +
                      " reads each as a strided view)");
  }
  auto impl = std::make_unique<Model::Impl>();
  impl->module = std::move(module);
  impl->drops_constants = drops_constants;
  const Graph& g = impl->graph();
  for (ValueId v : g.inputs()) impl->inputs.push_back({g.value(v).name, g.value(v).type});
  for (ValueId v : g.outputs()) impl->outputs.push_back({g.value(v).name, g.value(v).type});

  // Partition, then prepare every unit's kernel (primitives, reordered weights) for one thread;
  // contexts with other thread counts prepare theirs when they are created.
  impl->partition = compiler::partition_graph(impl->module, g, priority,
                                              {.nan_exact = options.nan_exact,
                                               .default_priority = compiler::default_rules(options.backends)});
  impl->backend_options = options;
  auto one = impl->prepare(1);
  MemoryStats& s = impl->stats;
  s.arena_bytes = one->plan.arena_bytes;
  s.intermediate_bytes = one->plan.intermediate_bytes;
  s.intermediates = one->plan.intermediates;
  s.in_place_nodes = one->plan.in_place_nodes;
  s.workspace_bytes = one->plan.workspace_bytes;
  for (const auto& k : one->kernels) s.prepared_bytes += k->prepared_bytes();
  for (const IoInfo& o : impl->outputs) s.output_bytes += o.type.byte_size();
  s.constant_bytes = g.constant_bytes();
  for (core::ReloadBlock* b : impl->reloadable)
    if (core::evicted(*b)) s.released_constant_bytes += core::block_bytes(*b);
  return std::shared_ptr<const Model>(new Model(std::move(impl)));
}

namespace {

// Which reloadable constants no kernel reads when it runs, decided unit by unit as they are
// prepared (units come in execution order, so every reader of a value is prepared after its
// producer). A constant's readers are the units taking its CONST's output or a view of it; each
// one that did not release_resident() it while being prepared keeps it for good. Once its last
// reader is prepared it leaves memory (where the model drops constants), so that the weights are
// not all held twice at the end of a preparation: the copies grow as the originals go.
class ConstantRelease {
 public:
  ConstantRelease(const Graph& g, const compiler::Partition& partition, const std::vector<core::ReloadBlock*>& blocks,
                  bool drops)
      : blocks_(blocks), drops_(drops) {
    if (blocks_.empty()) return;
    for (size_t j = 0; j < partition.units.size(); ++j)
      for (ValueId v : partition.units[j].composite.inputs) readers_[v].push_back(j);
    for (ValueId v : g.outputs()) outputs_.insert(v);
  }

  // Before a unit is prepared: the constants it takes, dropped after an earlier preparation, are
  // read back one by one as their readers come (an Error naming the file if it changed since).
  void before(const std::vector<ValueId>& inputs) {
    for (ValueId in : inputs)
      if (auto it = shares_.find(in); it != shares_.end())
        for (core::ReloadBlock* b : it->second) core::make_resident(*b);
  }

  void prepared(const runtime::Step& st, const Node& anchor) {
    if (blocks_.empty()) return;
    std::vector<core::ReloadBlock*> released;
    for (core::ReloadBlock* b : blocks_)
      if (core::take_released(*b)) released.push_back(b);
    if (st.constant) {
      if (anchor.op != Op::CONST) return;
      if (const Tensor* t = std::get_if<Tensor>(&anchor.attrs.at(0)))
        if (core::ReloadBlock* b = core::reload_block(t->buffer())) share(st.outputs, {b});
      return;
    }
    std::vector<core::ReloadBlock*> seen;  // through this unit's inputs, once per reading
    for (ValueId in : st.inputs)
      if (auto it = shares_.find(in); it != shares_.end())
        for (core::ReloadBlock* b : it->second) {
          seen.push_back(b);
          // A view reads nothing; any other kernel that did not release the bytes reads them.
          if (!st.forwards && std::find(released.begin(), released.end(), b) == released.end()) core::keep(*b);
        }
    if (st.forwards && !seen.empty()) share(st.outputs, seen);
    for (core::ReloadBlock* b : seen)
      if (--pending_[b] == 0 && drops_) core::evict(*b);
  }

 private:
  // `outs` share the bytes of `blocks`: their readers are to come.
  void share(const std::vector<ValueId>& outs, const std::vector<core::ReloadBlock*>& blocks) {
    for (ValueId out : outs) {
      auto& list = shares_[out];
      list.insert(list.end(), blocks.begin(), blocks.end());
      const auto it = readers_.find(out);
      for (core::ReloadBlock* b : blocks) {
        if (outputs_.count(out)) core::keep(*b);  // copied out by every run
        if (it != readers_.end()) pending_[b] += static_cast<int>(it->second.size());
      }
    }
    for (core::ReloadBlock* b : blocks)
      if (pending_[b] == 0 && drops_) core::evict(*b);  // read by nobody
  }

  const std::vector<core::ReloadBlock*>& blocks_;
  const bool drops_;
  std::unordered_map<ValueId, std::vector<size_t>> readers_;  // per value: units taking it (repeats kept)
  std::unordered_map<ValueId, std::vector<core::ReloadBlock*>> shares_;
  std::unordered_map<core::ReloadBlock*, int> pending_;  // readings to come
  std::set<ValueId> outputs_;
};

}  // namespace

std::shared_ptr<const Model::Impl::Prepared> Model::Impl::prepare(int threads) const {
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = prepared.find(threads); it != prepared.end()) return it->second;
  auto p = std::make_shared<Prepared>();
  const Graph& g = graph();
  backend::PrepareOptions prep{
      .library_scratchpad = backend_options.library_scratchpad,
      .threads = threads,
      .cache = &prepared_cache,
      .device = backend_options.device};
  if (!scanned_constants) {
    // Reloadable constants: those of the main graph's CONST nodes are candidates; one in any other
    // attribute or graph (a sub-graph the executor reads) stays.
    std::set<core::ReloadBlock*> seen, kept;
    for (const Graph& graph : module.graphs())
      for (const Node& n : graph.nodes())
        for (const AttrValue& a : n.attrs)
          if (const Tensor* t = std::get_if<Tensor>(&a))
            if (core::ReloadBlock* b = core::reload_block(t->buffer())) {
              if (&graph == &g && n.op == Op::CONST) {
                if (seen.insert(b).second) reloadable.push_back(b);
              } else {
                kept.insert(b);
              }
            }
    for (core::ReloadBlock* b : kept) core::keep(*b);
    scanned_constants = true;
  }
  for (core::ReloadBlock* b : reloadable) core::take_released(*b);  // stale marks
  ConstantRelease release(g, partition, reloadable, drops_constants);
  std::vector<runtime::Step> steps;
  for (const compiler::Unit& u : partition.units) {
    release.before(u.composite.inputs);
    auto kernel = u.backend->prepare(module, g, u.composite, prep);
    const Node& anchor = g.node(u.composite.anchor);
    runtime::Step st;
    st.inputs = u.composite.inputs;
    st.outputs = u.composite.outputs;
    // CONST shares its tensor; CONST_SHAPE writes its values into storage of its own (set up by the
    // context, never the arena), so both are fixed after a first run.
    st.constant = u.composite.single() && (anchor.op == Op::CONST || anchor.op == Op::CONST_SHAPE);
    st.forwards = !st.constant && kernel->forwards_buffer();
    st.in_place_ok = kernel->in_place_ok();
    st.in_place_input = kernel->in_place_input();
    st.workspace_bytes = kernel->workspace_bytes();
    release.prepared(st, anchor);
    p->is_view.push_back(st.constant || st.forwards);
    p->is_constant.push_back(st.constant);
    steps.push_back(std::move(st));
    p->kernels.push_back(std::move(kernel));
  }
  p->plan = runtime::plan_memory(g, steps);
  prepared[threads] = p;
  return p;
}

std::vector<BackendInfo> backends() {
  std::vector<BackendInfo> out;
  for (const backend::Backend* b : backend::all_backends())
    out.push_back({std::string(b->name()), std::string(b->description()), b->unavailable_reason()});
  return out;
}

Module read_model(const std::string& path, const LoadOptions& options) {
  std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".weft") return load_weft(path);
  if (ext == ".onnx") return import_onnx(path, options.onnx);
  if (ext == ".vgf") {
    // The container is checked as a whole (layout, tables, module validation) before anything
    // is decoded; constants stay in the mapped file and the module's tensors point into it. The
    // whole sequence decodes into one module: GRAPH segments' operators, COMPUTE segments as the
    // CUSTOM nodes they were made from.
    vgf::Container c = vgf::load(path);
    if (options.on_warning)
      for (const std::string& w : c.warnings) options.on_warning(path + ": " + w);
    return vgf::to_module(c, path);
  }
  if (ext == ".tosa") return tosa_file::read(path);
  throw Error(ErrorCode::kUnsupported,
              "unknown model file type '" + ext + "' (Weft reads .weft, .vgf, .tosa and .onnx models)", {.file = path});
}


std::shared_ptr<const Model> Model::Impl::specialize(const std::vector<Shape>& shapes) const {
  std::lock_guard<std::mutex> lock(dynamic->mu);
  auto it = dynamic->specialized.find(shapes);
  if (it != dynamic->specialized.end()) return it->second;
  LoadOptions o = dynamic->options;
  for (size_t i = 0; i < inputs.size(); ++i) o.onnx.input_shapes[inputs[i].name] = shapes[i];
  Module module = read_model(dynamic->path, o);
  std::shared_ptr<const Model> model;
  try {
    model = Model::build(std::move(module), o.backend, /*drops_constants=*/true);
  } catch (const Error& e) {
    throw e.with_context({.file = dynamic->path});
  }
  const_cast<Impl&>(*model->impl_).source = dynamic->path;
  const_cast<Impl&>(*model->impl_).mark_unsigned(inputs, outputs);
  dynamic->specialized.emplace(shapes, model);
  return model;
}

std::shared_ptr<const Model> Model::load(const std::string& path, const LoadOptions& options) {
  const bool onnx = std::filesystem::path(path).extension() == ".onnx";
  // An ONNX file is parsed once: its interface, then (unless dynamic) its import, which borrows
  // the initializers from the parsed model.
  std::shared_ptr<onnxfe::ParsedOnnx> proto;
  OnnxInterface io;
  if (onnx) {
    proto = onnxfe::parse_onnx_file(path);
    io = onnxfe::interface_of(*proto->model, path);
    // Dimensions the model leaves open and --shape does not give: a dynamic model, specialized
    // per input shape signature when it runs.
    bool open = false;
    for (const auto& in : io.inputs) {
      if (options.onnx.bindings.count(in.name)) continue;
      auto given = options.onnx.input_shapes.find(in.name);
      if (given != options.onnx.input_shapes.end()) continue;
      if (!in.has_shape) open = true;
      for (int64_t d : in.shape) open |= d < 0;
    }
    if (open) {
      auto impl = std::make_unique<Impl>();
      impl->source = path;
      impl->backend_options = options.backend;
      impl->dynamic = std::make_unique<Impl::Dynamic>();
      impl->dynamic->path = path;
      impl->dynamic->options = options;
      for (const auto& in : io.inputs) {
        if (options.onnx.bindings.count(in.name)) continue;
        auto given = options.onnx.input_shapes.find(in.name);
        Shape shape = given != options.onnx.input_shapes.end() ? given->second : in.shape;
        impl->inputs.push_back({in.name, TensorType{in.dtype, shape}, in.is_unsigned, in.is_int64});
      }
      for (const auto& out : io.outputs)
        impl->outputs.push_back({out.name, TensorType{out.dtype, out.shape}, out.is_unsigned, out.is_int64});
      return std::shared_ptr<const Model>(new Model(std::move(impl)));
    }
  }
  Module module = onnx ? onnxfe::import_parsed(std::move(proto), path, options.onnx) : read_model(path, options);
  try {
    // The module was read here and nobody else holds its tensors: constants the backends copied
    // may be dropped and read from the file again.
    auto model = Model::build(std::move(module), options.backend, /*drops_constants=*/true);
    const_cast<Impl&>(*model->impl_).source = path;
    if (onnx) {
      std::vector<IoInfo> ins, outs;
      for (const auto& v : io.inputs) ins.push_back({v.name, {v.dtype, v.shape}, v.is_unsigned, v.is_int64});
      for (const auto& v : io.outputs) outs.push_back({v.name, {v.dtype, v.shape}, v.is_unsigned, v.is_int64});
      const_cast<Impl&>(*model->impl_).mark_unsigned(ins, outs);
    }
    return model;
  } catch (const Error& e) {
    throw e.with_context({.file = path});
  }
}

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::~Model() = default;
const Module& Model::module() const {
  if (impl_->dynamic)
    throw Error(ErrorCode::kInvalidArgument,
                "the model has input dimensions known only when it runs: it has one module per input shape (give "
                "static shapes with --shape / LoadOptions::onnx.input_shapes for a single module)",
                {.file = impl_->source});
  if (impl_->drops_constants) {
    // Whoever asks may read any constant from now on: dropped ones come back and none is dropped again.
    // (build() prepared the 1-thread set, which found them all.)
    std::lock_guard<std::mutex> lock(impl_->mu);
    for (core::ReloadBlock* b : impl_->reloadable) core::keep(*b);
    impl_->drops_constants = false;
  }
  return impl_->module;
}
bool Model::is_dynamic() const { return impl_->dynamic != nullptr; }
size_t Model::specializations() const {
  if (!impl_->dynamic) return 1;
  std::lock_guard<std::mutex> lock(impl_->dynamic->mu);
  return impl_->dynamic->specialized.size();
}
const std::vector<IoInfo>& Model::inputs() const { return impl_->inputs; }
const std::vector<IoInfo>& Model::outputs() const { return impl_->outputs; }
size_t Model::input_index(std::string_view name) const { return index_of(impl_->inputs, name, "input", *impl_); }
size_t Model::output_index(std::string_view name) const { return index_of(impl_->outputs, name, "output", *impl_); }
const MemoryStats& Model::memory_stats() const { return impl_->stats; }
std::string Model::explain() const {
  if (impl_->dynamic) {
    std::lock_guard<std::mutex> lock(impl_->dynamic->mu);
    std::string out = "dynamic model '" + impl_->source + "': inputs ";
    for (size_t i = 0; i < impl_->inputs.size(); ++i)
      out += (i ? ", " : "") + impl_->inputs[i].name + " " + impl_->inputs[i].type.str();
    out += "; specialized per input shape signature on first use (" + std::to_string(impl_->dynamic->specialized.size()) +
           " so far)\n";
    for (const auto& [shapes, model] : impl_->dynamic->specialized) {
      out += "specialization for";
      for (const Shape& sh : shapes) out += " " + shape_str(sh);
      out += ":\n" + model->explain();
    }
    return out;
  }
  std::string out;
  for (const std::string& n : impl_->module.notes()) out += "note: " + n + "\n";
  return out + compiler::explain(impl_->graph(), impl_->partition);
}

std::vector<KernelPlacement> Model::placement() const {
  if (impl_->dynamic) {
    // The latest specialization's (none before the first run).
    std::lock_guard<std::mutex> lock(impl_->dynamic->mu);
    return impl_->dynamic->specialized.empty() ? std::vector<KernelPlacement>{}
                                               : impl_->dynamic->specialized.rbegin()->second->placement();
  }
  const Graph& g = impl_->graph();
  std::vector<KernelPlacement> out;
  for (const compiler::Unit& u : impl_->partition.units) {
    const backend::Composite& c = u.composite;
    const Op op = g.node(c.anchor).op;
    if (c.single() && compiler::is_view_or_const(op)) continue;
    KernelPlacement k{.backend = std::string(u.backend->name()), .pattern = c.pattern, .declined = u.declined};
    for (int n : c.nodes) k.nodes.push_back(g.node_label(n));
    out.push_back(std::move(k));
  }
  return out;
}

std::vector<std::string> Model::backend_priority() const {
  if (impl_->dynamic) {
    std::lock_guard<std::mutex> lock(impl_->dynamic->mu);
    return impl_->dynamic->specialized.empty() ? impl_->backend_options.backends
                                               : impl_->dynamic->specialized.begin()->second->backend_priority();
  }
  std::vector<std::string> out;
  for (const backend::Backend* b : impl_->partition.priority) out.emplace_back(b->name());
  return out;
}

// ---- Context ----

struct Context::Impl {
  std::shared_ptr<const Model> model;
  const Model::Impl& m;
  const Graph& g;
  int threads;
  std::shared_ptr<const Model::Impl::Prepared> prep;
  const runtime::MemoryPlan& plan;
  ref::ModuleContext exec;
  Buffer arena;
  std::vector<Tensor> views;            // per value: its planned storage (arena slice, constant, output)
  std::vector<Tensor> input_values;     // per graph input: the bound tensor
  std::vector<bool> input_bound;
  std::vector<Tensor> output_storage;   // per graph output: where results are delivered
  std::vector<bool> output_caller;      // per graph output: its storage is the caller's (bind_output)
  std::vector<bool> output_handed_out;  // per graph output: run(inputs) returned its storage; the
                                        // next run writes to another buffer
  std::vector<std::vector<Tensor>> handed;  // per graph output: the last buffers handed out (at most
                                            // 2); one the caller has dropped is written again
  std::vector<const Tensor*> current;   // per value: the tensor holding it in the current run
  std::vector<std::vector<Tensor>> unit_outs;           // per unit: the kernel's output vector
  std::vector<std::vector<const Tensor*>> unit_ins;     // per unit: the kernel's input pointers
  // Per unit that forwards a view (RESHAPE, IDENTITY, a contiguous SLICE): its inputs' storage when
  // it last ran, and whether the first input was writable. A view is a function of where its input
  // lives, so while that is unchanged (the arena, a constant, an input bound again to the same
  // buffer) the view it made is still right and the unit is skipped: an unrolled LSTM has about
  // 1,500 views among 2,300 units, and making them again cost a third of its run.
  std::vector<std::vector<const uint8_t*>> view_from;
  std::vector<bool> view_from_writable;
  // The same test for a whole run at once ("steady"): `steady_inputs` holds the graph inputs'
  // storage (data, writable) when the last run completed, and `outputs_moved` whether an output a
  // view unit reads (`views_read_outputs`; run(inputs) hands each run's outputs to the caller and
  // writes the next run elsewhere) has been given other storage since. While neither changed, every
  // view unit's inputs live where they did (views are made of the arena, constants, inputs, outputs
  // and each other), so the run passes over the view units (`view_unit`) without looking at each
  // one's inputs: those checks were cache misses on per-unit bookkeeping, about 15% of the unrolled
  // LSTM's run.
  std::vector<std::pair<const uint8_t*, bool>> steady_inputs;
  bool outputs_moved = true;
  bool views_read_outputs = false;
  std::vector<char> view_unit;
  bool profiling = false;
  // A run has completed: the CONST and CONST_SHAPE units' outputs (the constants' own storage, never
  // the arena) are in place and are not executed again. RegNetY-400MF has 2499 such units against
  // 120 kernels; re-running them cost 0.7 ms of its 5.9 ms per run on one thread.
  bool constants_set = false;
  std::vector<KernelProfile> profile;

  Impl(std::shared_ptr<const Model> mdl, ContextOptions o)
      : model(std::move(mdl)), m(model->impl()), g(m.graph()), threads(ref::resolve_threads(o.threads)),
        prep(m.prepare(threads)), plan(prep->plan), exec(m.module, threads) {
    exec.set_limits(o.max_loop_iterations, o.deadline_ms);
    check_memory(o.max_memory_bytes);
    const size_t nv = g.values().size();
    arena = Buffer::allocate(plan.arena_bytes);
    views.resize(nv);
    current.assign(nv, nullptr);
    input_values.resize(g.inputs().size());
    input_bound.assign(g.inputs().size(), false);
    output_storage.resize(g.outputs().size());
    for (size_t j = 0; j < g.outputs().size(); ++j) output_storage[j] = Tensor::zeros(g.value(g.outputs()[j]).type);
    output_caller.assign(g.outputs().size(), false);
    output_handed_out.assign(g.outputs().size(), false);
    handed.resize(g.outputs().size());
    std::shared_ptr<const void> arena_owner(arena.data(), [keep = arena](const void*) {});
    for (size_t v = 0; v < nv; ++v) {
      const runtime::ValuePlan& p = plan.values[v];
      const TensorType& t = g.values()[v].type;
      if (p.place == runtime::Place::kArena) {
        uint8_t* base = const_cast<uint8_t*>(arena.data()) + p.offset;
        views[v] = Tensor(t, Buffer::wrap_mutable(arena_owner, base, p.bytes));
      } else if (p.place == runtime::Place::kOutput) {
        views[v] = output_storage[static_cast<size_t>(p.output_index)];
      }
      current[v] = &views[v];
    }
    for (const Node& n : g.nodes()) {
      const size_t o = static_cast<size_t>(n.outputs.empty() ? 0 : n.outputs[0]);
      if (n.op == Op::CONST) views[o] = n.attr_tensor("values");
      if (n.op == Op::CONST_SHAPE && plan.values[o].place == runtime::Place::kConstant)
        views[o] = Tensor::zeros(g.values()[o].type);  // filled by its unit in the first run
    }
    const auto& units = m.partition.units;
    unit_outs.resize(units.size());
    unit_ins.resize(units.size());
    view_from.resize(units.size());
    view_from_writable.assign(units.size(), false);
    view_unit.resize(units.size());
    for (size_t u = 0; u < units.size(); ++u) {
      view_unit[u] = prep->kernels[u]->forwards_buffer();
      if (view_unit[u])
        for (ValueId v : units[u].composite.inputs)
          views_read_outputs |= plan.values[static_cast<size_t>(v)].place == runtime::Place::kOutput;
    }
    for (size_t u = 0; u < units.size(); ++u) {
      unit_ins[u].resize(units[u].composite.inputs.size());
      unit_outs[u].resize(units[u].composite.outputs.size());
    }
  }

  // The arena and the output buffers against the limit, before either is allocated.
  void check_memory(size_t limit) const {
    const bool machine = limit == 0;
    if (machine) limit = physical_memory_bytes();
    size_t outputs = 0;
    for (ValueId v : g.outputs()) outputs += g.value(v).type.byte_size();
    const size_t need = plan.arena_bytes + outputs;
    if (need <= limit && need >= outputs) return;
    // The largest tensors, so the user can see what asks for the memory.
    std::vector<std::pair<size_t, ValueId>> sizes;
    for (size_t v = 0; v < plan.values.size(); ++v)
      if (plan.values[v].place == runtime::Place::kArena || plan.values[v].place == runtime::Place::kOutput)
        sizes.push_back({g.values()[v].type.byte_size(), static_cast<ValueId>(v)});
    std::sort(sizes.begin(), sizes.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::string largest;
    for (size_t i = 0; i < std::min<size_t>(3, sizes.size()); ++i)
      largest += std::string(i ? ", " : "") + "'" + g.value(sizes[i].second).name + "' " +
                 g.value(sizes[i].second).type.str() + " (" + std::to_string(sizes[i].first) + " bytes)";
    throw Error(ErrorCode::kRuntime,
                "running the model needs " + std::to_string(plan.arena_bytes) + " bytes of intermediates and " +
                    std::to_string(outputs) + " bytes of outputs, more than " +
                    (machine ? "this machine's " + std::to_string(limit) + " bytes of memory"
                             : "the limit of " + std::to_string(limit) +
                                   " bytes (ContextOptions::max_memory_bytes, weft run --max-memory)") +
                    (largest.empty() ? "" : "; the largest tensors: " + largest),
                {.file = m.source, .graph = g.name()});
  }

  void check_input(size_t i, const Tensor& t) const {
    const IoInfo& info = m.inputs.at(i);
    if (t.type() != info.type)
      throw Error(ErrorCode::kInvalidArgument, "input '" + info.name + "' expects " + info.type.str() + ", got " +
                                                   t.type().str(),
                  {.file = m.source, .graph = g.name(), .operand = info.name});
    if (!t.valid())
      throw Error(ErrorCode::kInvalidArgument, "input '" + info.name + "' has no data",
                  {.file = m.source, .graph = g.name(), .operand = info.name});
  }

  // Output j is delivered into `storage` from now on, and so is the value computed straight into it.
  void rebind_output(size_t j, Tensor storage) {
    output_storage[j] = std::move(storage);
    output_handed_out[j] = false;
    outputs_moved |= views_read_outputs;
    const size_t v = static_cast<size_t>(g.outputs()[j]);
    if (plan.values[v].place == runtime::Place::kOutput && plan.values[v].output_index == static_cast<int>(j))
      views[v] = output_storage[j];
  }

  void run() {
    std::string missing;
    for (size_t i = 0; i < input_bound.size(); ++i)
      if (!input_bound[i]) missing += (missing.empty() ? "" : ", ") + m.inputs[i].name + " " + m.inputs[i].type.str();
    if (!missing.empty())
      throw Error(ErrorCode::kInvalidArgument, "inputs not bound: " + missing, {.file = m.source, .graph = g.name()});
    const auto& units = m.partition.units;
    uint8_t* arena_base = arena.size() ? const_cast<uint8_t*>(arena.data()) : nullptr;
    // Storage the caller still holds (run(inputs) returned it) is not written again. A buffer handed
    // out earlier that the caller has released (`results = ctx.run(inputs)` in a loop) is reused:
    // no allocation and no page faults per run (DeepLabV3's 22 MB output).
    for (size_t j = 0; j < output_handed_out.size(); ++j) {
      if (!output_handed_out[j]) continue;
      std::vector<Tensor>& h = handed[j];
      auto free_one = std::find_if(h.begin(), h.end(), [](const Tensor& t) { return t.buffer().unique(); });
      if (free_one != h.end()) {
        Tensor t = std::move(*free_one);
        h.erase(free_one);
        rebind_output(j, std::move(t));
      } else {
        rebind_output(j, Tensor::zeros(output_storage[j].type()));
      }
    }
    if (profiling) profile.clear();
    for (size_t i = 0; i < g.inputs().size(); ++i) current[static_cast<size_t>(g.inputs()[i])] = &input_values[i];
    bool steady = !outputs_moved && steady_inputs.size() == input_values.size();
    for (size_t i = 0; steady && i < input_values.size(); ++i)
      steady = steady_inputs[i].first == input_values[i].bytes() &&
               steady_inputs[i].second == input_values[i].buffer().writable();
    steady_inputs.clear();  // (set again once this run completes)
    outputs_moved = false;
    exec.start_run();
    const std::optional<std::chrono::steady_clock::time_point> deadline = exec.deadline();
    for (size_t ui = 0; ui < units.size(); ++ui) {
      if (steady && view_unit[ui]) continue;
      if (constants_set && prep->is_constant[ui]) continue;
      if (deadline && std::chrono::steady_clock::now() > *deadline)
        throw Error(ErrorCode::kRuntime,
                    "the run passed its deadline of " + std::to_string(exec.deadline_ms()) +
                        " ms (ContextOptions::deadline_ms, weft run --deadline-ms) before unit " + std::to_string(ui),
                    {.file = m.source, .graph = g.name(), .node = g.node_label(units[ui].composite.anchor)});
      const backend::Composite& c = units[ui].composite;
      const backend::Kernel& kernel = *prep->kernels[ui];
      std::vector<Tensor>& outs = unit_outs[ui];
      const bool forwards = kernel.forwards_buffer();
      std::vector<const Tensor*>& ins = unit_ins[ui];
      for (size_t j = 0; j < ins.size(); ++j) ins[j] = current[static_cast<size_t>(c.inputs[j])];
      if (forwards) {
        std::vector<const uint8_t*>& from = view_from[ui];
        bool same = from.size() == ins.size() && !ins.empty() && ins[0]->buffer().writable() == view_from_writable[ui];
        for (size_t j = 0; same && j < ins.size(); ++j) same = from[j] == ins[j]->bytes();
        if (same) continue;  // outs (and current[] of its outputs) still hold the view made then
        from.clear();  // set again once the view is made
        for (Tensor& t : outs) t = Tensor();
      } else {
        for (size_t k = 0; k < outs.size(); ++k) {
          const Tensor& view = views[static_cast<size_t>(c.outputs[k])];
          if (!outs[k].buffer().same_storage(view.buffer()) || outs[k].type() != view.type()) outs[k] = view;
          if (kernel.needs_zeroed_outputs() && !plan.in_place[ui] && outs[k].byte_size() > 0)
            std::memset(outs[k].mutable_bytes(), 0, outs[k].byte_size());
        }
      }
      backend::ExecArgs args{ins, outs, arena_base ? arena_base + plan.workspace[ui] : nullptr,
                             kernel.workspace_bytes(), threads, exec, profiling};
      try {
        if (profiling && !prep->is_view[ui]) {
          auto t0 = std::chrono::steady_clock::now();
          kernel.execute(args);
          auto t1 = std::chrono::steady_clock::now();
          profile.push_back({std::string(units[ui].backend->name()), c.pattern, g.node_label(c.anchor),
                             std::chrono::duration<double, std::micro>(t1 - t0).count(), false,
                             kernel.implementation()});
          kernel.device_profile(profile);
        } else {
          kernel.execute(args);
        }
      } catch (const Error& e) {
        // Kernels that do not know their node (library backends) get it here.
        throw e.with_context({.file = m.source, .graph = g.name(), .node = g.node_label(c.anchor)});
      }
      for (size_t k = 0; k < outs.size(); ++k) {
        const size_t o = static_cast<size_t>(c.outputs[k]);
        if (!outs[k].valid() || outs[k].type() != g.values()[o].type)
          throw Error(ErrorCode::kInternal, "kernel left output " + std::to_string(k) + " unset or mistyped",
                      {.graph = g.name(), .node = g.node_label(c.anchor)});
        current[o] = &outs[k];
      }
      if (forwards && !ins.empty()) {
        std::vector<const uint8_t*>& from = view_from[ui];
        from.resize(ins.size());
        for (size_t j = 0; j < ins.size(); ++j) from[j] = ins[j]->bytes();
        view_from_writable[ui] = ins[0]->buffer().writable();
      }
    }
    constants_set = true;
    for (const Tensor& t : input_values) steady_inputs.emplace_back(t.bytes(), t.buffer().writable());
    // Outputs not computed straight into their storage (graph inputs, constants, views, results
    // of control flow) are copied there.
    for (size_t j = 0; j < g.outputs().size(); ++j) {
      const Tensor* t = current[static_cast<size_t>(g.outputs()[j])];
      Tensor& dst = output_storage[j];
      if (t->bytes() != dst.bytes() && dst.byte_size() > 0) std::memcpy(dst.mutable_bytes(), t->bytes(), dst.byte_size());
    }
  }
};

// A context of a dynamic model: inputs are held until run(), which picks (or prepares) the
// specialized model and a context of it for the bound inputs' shapes; contexts are kept per
// signature, so a repeated shape reuses its arena and prepared kernels.
struct Context::Dyn {
  std::shared_ptr<const Model> model;
  ContextOptions options;
  std::vector<Tensor> inputs;
  std::vector<bool> bound;
  std::map<std::string, std::pair<void*, size_t>> output_bindings;
  bool profiling = false;
  std::map<std::vector<Shape>, std::unique_ptr<Context>> contexts;
  uint64_t bindings_generation = 1;            // bumped by bind_output
  std::map<const Context*, uint64_t> c_generation;  // the generation each context's bindings have
  Context* current = nullptr;

  void check(size_t i, const Tensor& t) const {
    const IoInfo& info = model->inputs().at(i);
    bool ok = t.dtype() == info.type.dtype && t.rank() == info.type.rank();
    for (size_t d = 0; ok && d < info.type.shape.size(); ++d)
      ok = info.type.shape[d] < 0 || info.type.shape[d] == t.shape()[d];
    if (!ok)
      throw Error(ErrorCode::kInvalidArgument,
                  "input '" + info.name + "' expects " + info.type.str() + " (? = any size), got " + t.type().str(),
                  {.file = model->impl().source, .operand = info.name});
    if (!t.valid())
      throw Error(ErrorCode::kInvalidArgument, "input '" + info.name + "' has no data",
                  {.file = model->impl().source, .operand = info.name});
  }
  void run() {
    std::string missing;
    std::vector<Shape> sig;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!bound[i]) missing += (missing.empty() ? "" : ", ") + model->inputs()[i].name + " " + model->inputs()[i].type.str();
      else sig.push_back(inputs[i].shape());
    }
    if (!missing.empty())
      throw Error(ErrorCode::kInvalidArgument, "inputs not bound: " + missing, {.file = model->impl().source});
    auto it = contexts.find(sig);
    if (it == contexts.end()) {
      auto ctx = std::make_unique<Context>(model->impl().specialize(sig), options);
      ctx->set_profiling(profiling);
      it = contexts.emplace(sig, std::move(ctx)).first;
    }
    Context& c = *it->second;
    for (size_t i = 0; i < inputs.size(); ++i) c.set_input(i, inputs[i]);
    // Output bindings go to the specialization that runs (again only when they changed since
    // it last ran: a repeated shape then costs what a static model's run does).
    if (bindings_generation != c_generation[&c]) {
      for (const IoInfo& o : c.model().outputs()) {
        auto b = output_bindings.find(o.name);
        c.bind_output(o.name, b == output_bindings.end() ? nullptr : b->second.first,
                      b == output_bindings.end() ? 0 : b->second.second);
      }
      c_generation[&c] = bindings_generation;
    }
    current = &c;
    c.run();
  }
  const Context& last(const char* what) const {
    if (!current)
      throw Error(ErrorCode::kInvalidArgument, std::string("no run yet: the dynamic model's ") + what +
                                                   " are known once it has run with inputs of some shape");
    return *current;
  }
};

Context::Context(std::shared_ptr<const Model> model, ContextOptions options) {
  if (!model) throw Error(ErrorCode::kInvalidArgument, "Context needs a model (got a null pointer)");
  // Thread pools (Weft's and oneDNN's OpenMP one) are sized by this: a count far beyond the
  // machine only costs memory and can exhaust the process's threads.
  if (options.max_loop_iterations < 0 || !(options.deadline_ms >= 0))
    throw Error(ErrorCode::kInvalidArgument, "max_loop_iterations and deadline_ms must be >= 0 (0: no bound)");
  if (options.threads < 0 || options.threads > kMaxContextThreads)
    throw Error(ErrorCode::kInvalidArgument,
                "threads = " + std::to_string(options.threads) + " is outside [0, " + std::to_string(kMaxContextThreads) +
                    "] (0: every hardware thread; this machine has " +
                    std::to_string(std::max(1u, std::thread::hardware_concurrency())) + ")");
  if (model->impl().dynamic) {
    dyn_ = std::make_unique<Dyn>();
    dyn_->model = std::move(model);
    dyn_->options = options;
    dyn_->inputs.resize(dyn_->model->inputs().size());
    dyn_->bound.assign(dyn_->model->inputs().size(), false);
    return;
  }
  impl_ = std::make_unique<Impl>(std::move(model), options);
}

Context::~Context() = default;
const Model& Context::model() const { return dyn_ ? *dyn_->model : *impl_->model; }

namespace {
// Error(kInvalidArgument) unless index < count ("input" / "output" names the list).
void check_index(size_t index, size_t count, const char* what) {
  if (index >= count)
    throw Error(ErrorCode::kInvalidArgument, std::string(what) + " index " + std::to_string(index) +
                                                 " out of range (the model has " + std::to_string(count) + " " + what + "s)");
}
}  // namespace

void Context::set_input(size_t index, const Tensor& value) {
  if (dyn_) {
    check_index(index, dyn_->inputs.size(), "input");
    dyn_->check(index, value);
    dyn_->inputs[index] = value;
    dyn_->bound[index] = true;
    return;
  }
  check_index(index, impl_->input_values.size(), "input");
  impl_->check_input(index, value);
  impl_->input_values[index] = value;
  impl_->input_bound[index] = true;
}

void Context::set_input(std::string_view name, const Tensor& value) { set_input(model().input_index(name), value); }

void Context::bind_output(std::string_view name, void* data, size_t bytes) {
  if (dyn_) {
    // Checked against the output's size when a run of some shape uses it.
    const std::string n(model().outputs()[model().output_index(name)].name);
    if (data == nullptr && bytes == 0) dyn_->output_bindings.erase(n);
    else dyn_->output_bindings[n] = {data, bytes};
    ++dyn_->bindings_generation;
    return;
  }
  const size_t j = model().output_index(name);
  const IoInfo& info = model().outputs()[j];
  Tensor storage;
  if (data == nullptr && bytes == 0) {
    storage = Tensor::zeros(info.type);
  } else {
    if (data == nullptr || bytes != info.type.byte_size())
      throw Error(ErrorCode::kInvalidArgument,
                  "output '" + info.name + "' (" + info.type.str() + ") needs " + std::to_string(info.type.byte_size()) +
                      " bytes of memory, got " + std::to_string(bytes) + (data ? "" : " at a null pointer"),
                  {.operand = info.name});
    storage = Tensor(info.type, Buffer::wrap_mutable(nullptr, data, bytes));
  }
  impl_->rebind_output(j, std::move(storage));
  impl_->output_caller[j] = data != nullptr;
}

void Context::run() {
  if (dyn_) return dyn_->run();
  impl_->run();
}

std::vector<Tensor> Context::run(const std::vector<Tensor>& inputs) {
  const size_t want = model().inputs().size();
  if (inputs.size() != want)
    throw Error(ErrorCode::kInvalidArgument,
                "the model takes " + std::to_string(want) + " inputs, got " + std::to_string(inputs.size()));
  // Every input checked before any is bound: a failed call leaves the bindings as they were.
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (dyn_) dyn_->check(i, inputs[i]);
    else impl_->check_input(i, inputs[i]);
  }
  for (size_t i = 0; i < inputs.size(); ++i) set_input(i, inputs[i]);
  run();
  std::vector<Tensor> out;
  for (size_t j = 0; j < model().outputs().size(); ++j) {
    // The runtime's own output buffer is handed over rather than copied (BERT at batch 32: 4 MB
    // per run); the next run allocates another. The caller's bound memory is copied.
    if (!dyn_ && !impl_->output_caller[j]) {
      out.push_back(impl_->output_storage[j]);
      impl_->output_handed_out[j] = true;
      std::vector<Tensor>& h = impl_->handed[j];
      if (h.size() >= 2) h.erase(h.begin());  // the oldest stays the caller's alone
      h.push_back(impl_->output_storage[j]);
    } else {
      out.push_back(output(j).clone());
    }
  }
  return out;
}

const Tensor& Context::output(size_t index) const {
  if (dyn_) return dyn_->last("outputs").output(index);
  check_index(index, impl_->output_storage.size(), "output");
  return impl_->output_storage[index];
}

const Tensor& Context::output(std::string_view name) const { return output(model().output_index(name)); }

void Context::reset_variables() {
  if (dyn_) {
    for (auto& [sig, c] : dyn_->contexts) c->reset_variables();
    return;
  }
  impl_->exec.reset_variables();
}

void Context::set_profiling(bool on) {
  if (dyn_) {
    dyn_->profiling = on;
    for (auto& [sig, c] : dyn_->contexts) c->set_profiling(on);
    return;
  }
  impl_->profiling = on;
  impl_->profile.clear();
}
const std::vector<KernelProfile>& Context::profile() const {
  if (dyn_) {
    static const std::vector<KernelProfile> kNone;
    return dyn_->current ? dyn_->current->profile() : kNone;
  }
  return impl_->profile;
}

}  // namespace weft
