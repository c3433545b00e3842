// The backend interface. A backend says which groups of nodes it can run (a single operator, or a
// composite such as [pad] + conv2d + [residual add] + [activation] that the partitioner matched),
// prepares a kernel for each group once (creating library primitives, transforming weights) and
// executes it many times on buffers and a workspace that the runtime owns.
//
// The reference interpreter is a backend behind the same interface; it runs every single node and
// is the fallback of every partition.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <span>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/reference/kernels.h"
#include "weft/graph.h"
#include "weft/runtime.h"
#include "weft/tensor.h"

namespace weft::backend {

// The operators the partitioner builds composites around (besides the softmax and layer-norm
// regions): convolutions, pooling and matmul. Backends use it to tell anchors from single ops.
inline bool is_fusion_anchor(Op op) {
  switch (op) {
    case Op::CONV2D:
    case Op::CONV3D:
    case Op::DEPTHWISE_CONV2D:
    case Op::TRANSPOSE_CONV2D:
    case Op::MAX_POOL2D:
    case Op::AVG_POOL2D:
    case Op::MATMUL:
      return true;
    default:
      return false;
  }
}

// An operation fused after a composite's anchor.
struct PostOp {
  // kGeluErf: x * 0.5 * (1 + erf(x / sqrt(2))) as exported by PyTorch and lowered by Weft's
  // ONNX frontend: MUL(x, 1/sqrt(2)) -> ERF -> ADD 1 -> MUL(x, .) -> MUL 0.5.
  // kHardSwish: x * clamp(x * 1/6 + 1/2, 0, 1) as the ONNX frontend lowers HardSwish:
  // MUL(x, 1/6) -> ADD 0.5 -> CLAMP [0, 1] -> MUL(x, .).
  // kGeluTanh: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), GELU's tanh approximation
  // written out (GPT-2's gelu_new, nn.GELU(approximate="tanh") exported): x^3 as MUL(MUL(x, x), x),
  // then MUL 0.044715, ADD x, MUL sqrt(2/pi), TANH, ADD 1, and the product with x and 0.5 in either
  // order (MUL(MUL(x, 0.5), .) or MUL(MUL(x, .), 0.5)).
  // kScale: MUL by a float constant (`operand`; the MUL's shift is 0) holding one value, attention's
  // 1 / sqrt(d) after Q K^T, or one value per index of the result's last axis (the output channel;
  // 1 along every other axis), ConvNeXt's layer scale: exact as a post-op (one fp32 product, as the
  // MUL rounds it).
  // kShift: ADD of such a constant (`operand`) that is not a bias (hard-sigmoid's + 0.5 after its
  // scale, a per-channel shift after a per-channel scale): one fp32 sum, as the ADD.
  // kMask: ADD of a float tensor (`operand`) of the result's type and rank that is broadcast along
  // some axes (each axis equal to the result's or 1) and is neither a bias, a per-column constant
  // nor a residual of the full shape: attention's additive mask, [B,1,1,S] for padding or [1,1,S,S]
  // for causality, added to the scores. One fp32 sum, as the ADD.
  enum class Kind {
    kBias, kResidual, kClamp, kSigmoid, kTanh, kSwish, kGeluErf, kHardSwish, kGeluTanh, kScale, kShift, kMask
  };
  Kind kind;
  int node = -1;        // the ADD, CLAMP, SIGMOID or TANH (kSwish: the SIGMOID; kGeluErf, kHardSwish: the first MUL;
                        // kGeluTanh: the MUL(x, x))
  int mul = -1;         // kSwish: the MUL of the SIGMOID's input by its result
  std::vector<int> more;  // kGeluErf: the ERF, ADD, MUL and MUL after `node`; kHardSwish: the ADD, CLAMP and MUL;
                          // kGeluTanh: the other seven nodes and, last, the final MUL
  ValueId operand = kNoValue;  // kBias / kResidual / kShift / kMask: the ADD's other operand; kScale: the MUL's constant
};

// A group of nodes the partitioner found together. Nodes are listed in graph order; every value
// they produce that is not in `outputs` is used only inside the group. `inputs` are the values the
// group reads from outside (graph inputs, constants, other groups' results), in first-use order.
struct Composite {
  // A region: a decomposed operator recognised as a whole (the anchor is its first node).
  //   kSoftmax: REDUCE_MAX -> SUB -> EXP -> REDUCE_SUM -> RECIPROCAL -> MUL over `axis`.
  //   kLogSoftmax: REDUCE_MAX -> d = SUB -> EXP -> REDUCE_SUM -> LOG -> SUB(d, log) over `axis`
  //   (ONNX's LogSoftmax as the importer lowers it, and the same written by hand).
  //   kLayerNorm: mean, centred square, variance + epsilon, RSQRT, scale by `gamma`, add `beta`
  //   over the last axis (gamma / beta kNoValue when absent).
  //   kRmsNorm: x * x, REDUCE_SUM over the last axis, * 1/N, + epsilon, RSQRT, x times it, scale by
  //   `gamma`, add `beta` (T5's and LLaMA's RMS norm; gamma / beta kNoValue when absent). Anchored
  //   at the MUL(x, x).
  //   kL2Norm: x * x, REDUCE_SUM over the last axis, POW 0.5, CLAMP from below at `epsilon` (to
  //   +inf), RECIPROCAL, x times it, scale by `gamma`, add `beta`: F.normalize(x, dim=-1), x /
  //   max(||x||, eps), as the ONNX import writes it (Swin V2's cosine attention). Anchored at the
  //   MUL(x, x).
  //   kSubgraph: a run of units merged for a backend that takes whole regions (Grouping::kRegions):
  //   any nodes, several outputs possible.
  //   kGroupedConv: a grouped convolution as TOSA has to write it (it has no group attribute):
  //   G >= 2 SLICEs of `source` along its channels (equal, contiguous, in order), a CONV2D on each
  //   (`group_convs`, same attributes and shapes, constant weights), and a CONCAT of their results
  //   along the channels (`group_concat`), then `post_ops` on the concatenation.
  //   kElementwise: element-wise operators (`region_nodes`, graph order, connected through their
  //   values) whose results all have one type, each of them one the backend named fusable
  //   (Backend::loop_fusable): one pass over the elements, the values used only inside the group
  //   never written. `outputs` are the members' results read outside the group or by the graph,
  //   possibly several.
  //   kSliceCopies: SLICEs of a TRANSPOSE's result (through RESHAPEs), each copied straight from
  //   the TRANSPOSE's input, or from the two pieces of a CONCAT in front of it
  //   (compiler::fold_transpose: ShuffleNet's channel shuffle and the split after it); neither the
  //   TRANSPOSE nor the CONCAT is written. `anchor` is the TRANSPOSE, `outputs` the SLICEs' results
  //   in node order; the unit runs at its first SLICE (`run_at`).
  enum class Region { kNone, kSoftmax, kLayerNorm, kSubgraph, kGroupedConv, kElementwise, kSliceCopies, kRmsNorm,
                      kLogSoftmax, kL2Norm };
  Region region = Region::kNone;
  int axis = -1;
  double epsilon = 0;
  double inv_n = 0;  // kLayerNorm, kRmsNorm: the mean's 1/N constant as the graph holds it (fp16: rounded)
  ValueId source = kNoValue;  // the region's data input
  ValueId gamma = kNoValue, beta = kNoValue;
  std::vector<int> region_nodes;
  std::vector<int> group_convs;  // kGroupedConv: the CONV2D of each group, in channel order
  int group_concat = -1;         // kGroupedConv: the CONCAT

  std::string pattern;            // e.g. "PAD+CONV2D+ADD+CLAMP"; the op name for single nodes
  int anchor = -1;                // the main node (the only node of a single)
  int pad = -1;                   // PAD in front of a convolution or pooling (or SLICE before a conv)
  // CONV2D: a MUL in front by a factor per image and input channel ([N,1,1,C], the other operand
  // of the convolution's input type): squeeze-and-excitation's x * s read as the convolution's
  // input (`scale_in_source` is x, `scale_in_factor` s). -1 when absent.
  int scale_in = -1;
  ValueId scale_in_source = kNoValue, scale_in_factor = kNoValue;
  // An element-wise chain (a MUL / ADD / SUB by a per-channel constant, then post-ops): a CONCAT
  // along the last axis in front, read by the chain alone. The chain reads the CONCAT's inputs
  // (its pieces, in order) and the concatenation is never written. -1 when absent.
  int concat_in = -1;
  // MATMUL: RESHAPE/TRANSPOSE/SLICE chains from a source value into operand A / B (source side first);
  // the operand is read as a strided view of the source (compiler/strided_view.h).
  std::vector<int> a_view, b_view;
  // MATMUL: a RESHAPE/TRANSPOSE chain after it that it writes through (strided destination);
  // the composite's output is then the chain's result.
  std::vector<int> out_view;
  // MATMUL: a RESHAPE of its result that keeps the last dimension (the ONNX importer's 3-D
  // MatMul -> 4-D), with post_ops applied after it; the kernel writes the matmul's result (same
  // bytes) and applies the post-ops as if on the matmul's shape. -1 when absent. It stands before
  // post_ops[post_reshape_at] (0: right after the MATMUL; later: after a bias, the residual read in
  // the reshaped shape, the same elements in the same order).
  int post_reshape = -1;
  size_t post_reshape_at = 0;
  // Operations applied to the anchor's result, in order: a bias (ADD of a constant broadcast
  // along the last dimension), a residual (ADD of a tensor of the result's type), activations.
  std::vector<PostOp> post_ops;

  // kSubgraph: the units merged into the region, in execution order (each a single node or a fused
  // composite as the backend accepted it), so that the backend can lower fused groups as such.
  std::vector<Composite> members;

  std::vector<int> nodes;         // all members, ascending
  // External inputs. A single node: its inputs exactly (in operand order, repeats kept). A
  // composite: every value read from outside, once, in order of first use.
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;   // values read outside (single nodes: all their outputs)

  // Where the unit runs among the graph's nodes when not at its last node (-1): a unit whose
  // results are needed before its last node and whose inputs are all there by then.
  int run_at = -1;

  bool single() const { return nodes.size() == 1; }
  int last() const { return nodes.back(); }
  // The node position the unit runs at (units execute in this order).
  int position() const { return run_at >= 0 ? run_at : last(); }
  // Index of `v` in inputs, or -1.
  int input_index(ValueId v) const {
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i] == v) return static_cast<int>(i);
    return -1;
  }
};

// Whether a backend runs a composite; `reason` says why not in one line. An empty reason means the
// composite is not the backend's kind of work at all (the Vulkan backend and a CPU operator): the
// partitioner's explanations leave it out.
struct Support {
  bool ok = false;
  std::string reason;
  static Support yes() { return {true, {}}; }
  static Support no(std::string why) { return {false, std::move(why)}; }
};

// Prepared data a model's kernels share across preparations (one per thread count): e.g. a
// constant reordered into a library's layout is made once and reused. Owned by the model; a backend
// stores what it likes under keys of its own. Not thread-safe (preparation is serialized).
class PreparedCache {
 public:
  std::shared_ptr<void> find(const std::string& key) const {
    auto it = items_.find(key);
    return it == items_.end() ? nullptr : it->second;
  }
  void put(const std::string& key, std::shared_ptr<void> value) { items_[key] = std::move(value); }

 private:
  std::map<std::string, std::shared_ptr<void>> items_;
};

struct PrepareOptions {
  bool library_scratchpad = false;  // oneDNN: let the library own its scratch memory (for measurements)
  int threads = 1;                  // the thread count the kernel will run with (ExecArgs::threads)
  PreparedCache* cache = nullptr;   // shared prepared data (may be null)
  std::string device;               // Vulkan: the device selector ("" = WEFT_VULKAN_DEVICE or the best one)
};

// What a kernel gets for one execution.
struct ExecArgs {
  std::span<const Tensor* const> in;  // one per Composite::inputs entry
  std::vector<Tensor>& out;           // one per Composite::outputs entry (planned storage, writable)
  uint8_t* workspace = nullptr;       // kernel's working memory from the runtime's arena
  size_t workspace_bytes = 0;
  int threads = 1;
  ref::ExecContext& ctx;
  bool profiling = false;             // the run is profiled: device_profile() will be asked for
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  // Working memory the kernel needs per execution (taken from the context's arena).
  virtual size_t workspace_bytes() const { return 0; }
  // Bytes the kernel holds from prepare (reordered weights, ...).
  virtual size_t prepared_bytes() const { return 0; }
  // Whether out must be zero-filled before execute (the reference kernels accumulate into it).
  virtual bool needs_zeroed_outputs() const { return false; }
  // Whether the output may share storage with a same-typed input that dies here.
  virtual bool in_place_ok() const { return false; }
  // With in_place_ok: the one input (index into Composite::inputs) the output may share; -1 = any.
  virtual int in_place_input() const { return -1; }
  // Whether out is replaced by a view of an input (CONST, IDENTITY, RESHAPE) instead of written.
  virtual bool forwards_buffer() const { return false; }
  virtual void execute(ExecArgs& args) const = 0;
  // Device-side timing of the last execute (KernelProfile::device records, e.g. one per GPU dispatch);
  // appended to the run's profile after the kernel's own record when profiling is on.
  virtual void device_profile(std::vector<KernelProfile>& out) const { (void)out; }
  // The implementation the kernel runs, in its library's words (KernelProfile::implementation).
  virtual std::string implementation() const { return {}; }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view description() const = 0;
  // "" when usable on this machine; otherwise why not (e.g. the CPU lacks an instruction set).
  virtual std::string unavailable_reason() const { return {}; }
  // True when the default priority may list the backend without asking unavailable_reason(), a
  // costly probe, because takes_by_default() already declines everything except the nodes only it
  // runs (whose supports() then probes). The Vulkan backend where the drivers installed can only be
  // CPU implementations: lavapipe is then loaded only for a custom shader operator.
  virtual bool defers_probe() const { return false; }
  // True for a backend that runs on a device other than the host CPU (Vulkan): the backend
  // selection "cpu" leaves it out (compiler::resolve_backends).
  virtual bool on_device() const { return false; }
  // How the backend groups work. kOperators: one kernel per composite (the RFC's library
  // backend, oneDNN). kRegions: after assignment, every run of consecutive units the backend got
  // is merged into one Region::kSubgraph composite and prepared as a whole (a GPU backend that
  // records a command buffer per region, a compiler that fuses across operators).
  enum class Grouping { kOperators, kRegions };
  virtual Grouping grouping() const { return Grouping::kOperators; }
  // Whether its GEMMs read a split batch view in place (compiler/strided_view.h: attention's heads
  // of a batch sliced out of one wider projection). When the leading backend does, the model's
  // batched sibling MATMULs are merged before partitioning (compiler::merge_sibling_matmuls);
  // where it does not, the slices would be copies.
  virtual bool reads_split_views() const { return false; }
  // Whether it runs operator `def` with the types of `row` of the operator table at all (alone or
  // as the main node of a fused group); per-node conditions (constant weights, zero points,
  // broadcasting, ...) are left to supports(). `weft ops` prints this per row.
  virtual bool runs_row(const OpDef& def, const TypeSupport& row) const = 0;
  // Whether this backend runs `c` of graph `g` (the module is given for sub-graphs).
  virtual Support supports(const Module& m, const Graph& g, const Composite& c) const = 0;
  // Whether `c` on this backend gives NaN results exactly as TOSA says (nan_mode PROPAGATE /
  // IGNORE of CLAMP, MAXIMUM, MINIMUM, pooling and reductions; NaN through EXP). Asked only when
  // the user wants exact NaN semantics (BackendOptions::nan_exact); a backend answering false
  // then does not get `c`. Library kernels often clamp or max a NaN away, as frameworks do.
  virtual Support nan_exact(const Graph& g, const Composite& c) const { return Support::yes(); }
  // Whether the backend takes `c` when the user named no backends (the default priority). A GPU
  // backend whose only device is a CPU implementation (lavapipe) leaves TOSA operators to the CPU
  // backends, which run them faster, and takes them only when listed explicitly.
  virtual bool takes_by_default(const Graph& g, const Composite& c) const { return true; }
  // Whether node `ni` of `g` can be a member of a Region::kElementwise group on this backend: an
  // element-wise operator whose operands are each of its result's shape, one value, or one value
  // per index of its last axis. The partitioner groups such nodes when this backend is also the one
  // that would run each of them alone, and asks supports() for the group.
  virtual bool loop_fusable(const Graph& g, int ni) const { return false; }
  // The most operators one of this backend's loops takes (the partitioner's own bound is 48).
  virtual size_t loop_max_steps() const { return 48; }
  // Builds the kernel of `c`: everything that does not depend on the run's data is done here once.
  // Throws Error naming the node when something fails.
  virtual std::unique_ptr<Kernel> prepare(const Module& m, const Graph& g, const Composite& c,
                                          const PrepareOptions& options) const = 0;
};

// Every backend of this build, in default priority order (fastest first; backends registered at
// run time before the reference backend, which is always last).
std::vector<const Backend*> all_backends();
// Adds a backend defined outside the library (tests, plugins) under its name, ahead of the
// reference backend; it must outlive every model using it. Throws Error(kInvalidArgument) when
// the name is taken. Thread-safe.
void register_backend(const Backend& b);
// Removes a registration made by register_backend (no-op when absent).
void unregister_backend(const Backend& b);
// nullptr when there is no backend of that name.
const Backend* find_backend(std::string_view name);

// The backends with their own registration function (defined beside each backend).
const Backend& reference_backend();
#ifdef WEFT_WITH_ONEDNN
const Backend& onednn_backend();
#endif
const Backend& vulkan_backend();

}  // namespace weft::backend
