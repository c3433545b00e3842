// Lowering TOSA operators to compute dispatches for the Vulkan backend.
//
// A region the partitioner gave the Vulkan backend is a list of member composites (single nodes, or
// an anchor with a folded PAD and fused epilogues). Each member is lowered by its operator's entry in
// the lowering table (ops_table()) into one or more dispatches of the shaders embedded in libweft
// (src/backends/vulkan/shaders/*.comp, compiled at build time by glslc). The backend turns the
// dispatches into one vk::Program: one command buffer recorded at prepare, intermediates in one
// device arena, constants uploaded once.
//
// Shader conventions (shaders/common.glsl):
//   - every buffer is a storage buffer at set 0, binding = its position in the dispatch's args;
//   - shapes, strides and attributes are specialization constants, ids 0.. in the order of `spec`
//     (int32 each; floats are passed as their bits, see f32_bits);
//   - a tensor's element type is a specialization constant holding a ShaderType code, and the
//     TENSOR() macro of common.glsl declares typed views of the binding with load/store helpers;
//   - the workgroup size is fixed in the shader (local_size_x = 64 unless the shader says otherwise);
//     grid() spreads large invocation counts over y (maxComputeWorkGroupCount[0] may be 65535), and
//     the shader recovers the flat index with flat_id() from common.glsl.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.h"
#include "compiler/strided_view.h"
#include "weft/graph.h"

namespace weft::vkb {

// Element storage codes shared with the shaders (DT_* in common.glsl).
enum class ShaderType : int32_t { kBool = 0, kI8 = 1, kI16 = 2, kI32 = 3, kI48 = 4, kF16 = 5, kF32 = 6 };
// The shader storage of `t`; nullopt for types no shader handles (int4, bf16, fp8, shape).
std::optional<ShaderType> shader_type(DType t);
inline int32_t code(DType t) { return static_cast<int32_t>(*shader_type(t)); }
inline int32_t f32_bits(float f) {
  int32_t i;
  std::memcpy(&i, &f, 4);
  return i;
}

// What the device offers that decides support and the choice of kernels.
struct Caps {
  std::string device;                 // the device's name, for messages
  uint32_t max_groups[3] = {65535, 65535, 65535};
  uint32_t max_invocations = 128;     // maxComputeWorkGroupInvocations (Vulkan's minimum: 128)
  uint32_t max_shared_bytes = 16384;  // maxComputeSharedMemorySize
  uint32_t max_storage_buffers = 4;   // maxPerStageDescriptorStorageBuffers (Vulkan's minimum: 4)
  uint64_t max_buffer_bytes = 134217728;  // maxStorageBufferRange: the largest tensor a shader binds
  uint32_t subgroup_size = 0;         // 0: unknown
  bool subgroup_arithmetic = false;   // subgroup arithmetic and vote operations in compute shaders
  // Cooperative matrices with a 16x16x16 fp16 x fp16 + fp32 subgroup shape. Debian 12's glslang knows
  // only GL_NV_cooperative_matrix (not GL_KHR_cooperative_matrix), so shaders use the NV extension and
  // the device must expose VK_NV_cooperative_matrix (NVIDIA GPUs do).
  bool coop_matrix_f16 = false;
  bool fp16_arith = false;            // shaderFloat16
  uint32_t compute_units = 0;         // SMs / CUs where the driver says (0: unknown)
};

// A buffer argument of a dispatch (see Lowering).
struct Arg {
  enum class Kind { kValue, kScratch, kData } kind = Kind::kValue;
  ValueId value = kNoValue;  // kValue
  uint32_t index = 0;        // kScratch / kData: which one
  bool write = false;
};

// One dispatch as lowered (turned into a vk::ProgramDispatch by the backend).
struct Dispatch {
  std::string shader;                // embedded shader name (file name without .comp)
  std::vector<int32_t> spec;         // specialization constants 0..n-1
  std::vector<Arg> args;             // binding i = args[i]
  std::array<uint32_t, 3> groups{1, 1, 1};
  std::vector<uint8_t> push;         // push-constant block (usually empty)
  std::string label;                 // profile/error label (default: the node's label)
};

// The lowering of one region: collects dispatches, scratch buffers and constant data.
class Lowering {
 public:
  Lowering(const Graph& g, const Caps& caps) : graph(g), caps(caps) {}
  const Graph& graph;
  const Caps& caps;

  // The node being lowered (set by the backend before calling an OpLowering).
  int node = -1;
  const Node& n() const { return graph.node(node); }
  const TensorType& type(ValueId v) const { return graph.value(v).type; }
  // The data of `v` when a CONST node produces it, else nullptr.
  const Tensor* constant(ValueId v) const;

  Arg in(ValueId v) const { return {Arg::Kind::kValue, v, 0, false}; }
  Arg out(ValueId v) const { return {Arg::Kind::kValue, v, 0, true}; }
  // Device-only working memory for this member's dispatches (e.g. a partial-sum buffer). The first
  // dispatch using it must write what later ones read; it is not zeroed.
  Arg scratch(size_t bytes, bool write);
  // Read-only data uploaded once at prepare (reordered weights, tables, per-channel parameters).
  Arg data(std::vector<uint8_t> bytes);
  template <typename T>
  Arg data_of(const std::vector<T>& v) {
    std::vector<uint8_t> b(v.size() * sizeof(T));
    if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
    return data(std::move(b));
  }

  // Emits a dispatch of `shader` (label defaults to the node's).
  void dispatch(std::string shader, std::vector<int32_t> spec, std::vector<Arg> args, std::array<uint32_t, 3> groups,
                std::vector<uint8_t> push = {});
  // Workgroup counts for `invocations` invocations of workgroups of `local` (x only; spills into y).
  std::array<uint32_t, 3> grid(uint64_t invocations, uint32_t local = 64) const;

  // Error(kUnsupported) located at the node (for conditions found only while lowering).
  [[noreturn]] void fail(const std::string& why) const;

  // Results (read by the backend).
  std::vector<Dispatch> dispatches;
  std::vector<size_t> scratch_bytes;
  std::vector<std::vector<uint8_t>> data_blobs;
};

// An operator's entry in the lowering table.
struct OpLowering {
  // Whether the backend runs the row's types at all (drives Backend::runs_row and `weft ops`);
  // null: every row whose types all have a ShaderType.
  bool (*row)(const OpDef& def, const TypeSupport& row) = nullptr;
  // "" when composite `c` (a single node, or anchored at this operator with pad / post_ops) runs;
  // else a one-line reason naming the rule. Composites with parts it does not fuse get a reason.
  std::string (*check)(const Graph& g, const backend::Composite& c, const Caps& caps) = nullptr;
  // Emits the dispatches of `c` (l.node = c.anchor).
  void (*lower)(Lowering& l, const backend::Composite& c) = nullptr;
};

// The table: one entry per operator the backend runs, filled by each family's register function.
const std::map<Op, OpLowering>& ops_table();

// The most storage buffers one embedded shader binds (its distinct Binding decorations; every
// buffer of Weft's shaders is a storage buffer of set 0).
uint32_t most_shader_buffers();
// "" when every dispatch that lowering composite `c` emits binds at most caps.max_storage_buffers
// storage buffers, else the first kernel that binds more, with its count and the limit (or the
// error lowering `c` raised). The lowering is tried only on a device that allows fewer buffers
// than some embedded shader binds: elsewhere nothing can exceed the limit.
std::string check_storage_buffers(const Graph& g, const backend::Composite& c, const Caps& caps);

// Families (one file each).
void register_elementwise(std::map<Op, OpLowering>& t);  // ops_elementwise.cpp
void register_layout(std::map<Op, OpLowering>& t);       // ops_layout.cpp
void register_tensor(std::map<Op, OpLowering>& t);       // ops_tensor.cpp
void register_misc(std::map<Op, OpLowering>& t);         // ops_misc.cpp

// The SPIR-V of embedded shader `name`; throws Error(kInternal) for an unknown name.
const std::vector<uint32_t>& shader_spirv(std::string_view name);

// Helpers shared by families.
// The data of `v` when a CONST node produces it, else nullptr.
const Tensor* const_tensor(const Graph& g, ValueId v);
// A single-element CONST `v` as an integer / a double, else nullopt.
std::optional<int64_t> const_int(const Graph& g, ValueId v);
std::optional<double> const_scalar(const Graph& g, ValueId v);
// The values of a shape operand when a CONST_SHAPE node produces it, else nullopt.
std::optional<std::vector<int64_t>> const_shape(const Graph& g, ValueId v);
// Row-major strides of `s` (elements).
std::vector<int64_t> strides_of(const Shape& s);
// Whether every dimension and the element count fit the shaders' int32 indexing.
bool fits_int32(const TensorType& t);
// "" when every tensor the node reads or writes has a ShaderType and fits int32 indexing.
std::string check_tensors(const Graph& g, int node);
// A chain of element-wise operators (a MUL / ADD / SUB by a per-channel constant with post-ops, as
// the partitioner groups them) as one pass (ops_tensor.cpp, shaders/ew_chain.comp).
std::string check_ew_chain(const Graph& g, const backend::Composite& c, const Caps& caps);
void lower_ew_chain(Lowering& l, const backend::Composite& c);
// Whether node `ni` can be a step of an element-wise group run by ew_loop.comp
// (Backend::loop_fusable; ops_elementwise.cpp).
bool loop_step(const Graph& g, int ni);
// An input of an element-wise group read in place from `src` at element `offset`: a contiguous
// SLICE the region builder folded into the group (it gets no dispatch).
struct LoopInputView {
  ValueId src = kNoValue;
  int64_t offset = 0;
};
void lower_ew_loop(Lowering& l, const backend::Composite& c, const std::map<ValueId, LoopInputView>& views = {});
inline constexpr size_t kLoopMaxSteps = 24;  // ew_loop.comp's MAX_STEPS
// Attention as the partitioner leaves it, consecutive members of a region: MATMUL(Q, K^T) [+ SCALE by
// one value], the SOFTMAX region over its last axis, and MATMUL(P, V) (operands and the destination
// read / written as strided views), with RESHAPE members (`aliases`, their nodes) between them,
// fused into one dispatch (ops_tensor.cpp, shaders/mx_attention.comp). check_attention gives ""
// when they fuse, else the reason; WEFT_VULKAN_ATTENTION=off keeps them apart (for measurements).
std::string check_attention(const Graph& g, const backend::Composite& qk, const backend::Composite& softmax,
                            const backend::Composite& pv, const std::vector<int>& aliases, const Caps& caps);
void lower_attention(Lowering& l, const backend::Composite& qk, const backend::Composite& softmax,
                     const backend::Composite& pv, const std::vector<int>& aliases);
// A copy of the elements a strided view `v` of value `src` addresses, in the view's row-major order,
// into value `dst` (contiguous; as many elements): a TRANSPOSE folded into the SLICEs that read its
// result (ShuffleNet's channel shuffle and split; see backend.cpp), one ly_map (ops_layout.cpp).
// With `src2` (same type as `src`), dimension `select` of the view (extent 2, its stride unused)
// picks the source: the view then reads a CONCAT of two equal pieces that is never written (ly_map2).
void lower_view_copy(Lowering& l, ValueId src, const compiler::StridedView& v, ValueId dst, ValueId src2 = kNoValue,
                     int select = -1);
// CONCAT as rows of 4-byte units (ly_concat.comp): `outer` rows (the dimensions before the axis),
// the output row of `row` units, input k's row of lengths[k] units, `step_bytes` bytes per step
// along the axis. nullopt where some row is no whole number of units (or the output exceeds int32).
struct ConcatRows {
  int64_t outer = 1, row = 0, step_bytes = 0;
  std::vector<int64_t> lengths;
};
std::optional<ConcatRows> concat_rows(const Graph& g, const Node& n);
// Input k of the CONCAT read in place from `src`: its row o at unit o * stride + offset (a SLICE of
// `src` along the CONCAT's axis only, which then needs no dispatch). src == kNoValue: the input itself.
struct ConcatInputView {
  ValueId src = kNoValue;
  int64_t stride = 0, offset = 0;  // in 4-byte units
};
// The CONCAT `n` as ly_concat dispatches, inputs read through `views` (by input index; shorter or
// empty: the inputs themselves); false (nothing emitted) where concat_rows gives nullopt.
bool lower_concat_views(Lowering& l, const Node& n, const std::vector<ConcatInputView>& views);
// The GATHER l.n() as ly_gather reading its indices from `indices`; with `wrap`, a negative index
// counts from the end of the gathered axis (k + K), as ONNX's Gather defines it.
void lower_gather_indices(Lowering& l, ValueId indices, bool wrap);
// A softmax or layer-norm region as mx_rownorm runs it (ops_misc.cpp): its specialization constants
// 0..7 (mx_rownorm.glsl), the affine binding (gamma then beta as fp32; unused by softmax), the rows,
// the invocations per row and the row length.
struct RowNorm {
  std::vector<int32_t> spec;
  Arg affine;
  uint64_t rows = 0;
  int64_t local = 0, k = 0;
};
RowNorm row_norm(Lowering& l, const backend::Composite& c);
// A softmax, layer-norm or RMS-norm region as its own dispatch (mx_rownorm, or mx_rownorm_sg for
// many short rows).
void lower_row_norm(Lowering& l, const backend::Composite& c);
// The longest row row_norm's kernel holds in registers (mx_rownorm.glsl's CACHED), and the check of
// a layer-norm or RMS-norm region (ops_misc.cpp).
int64_t row_norm_max_cached(const Caps& caps);
std::string check_layer_norm(const Graph& g, const backend::Composite& c, const Caps& caps);
// A MATMUL composite followed by the LAYER_NORM region that alone reads its result (over its last
// axis), run as the GEMM and one second pass that finishes each row and normalizes it (ops_tensor.cpp,
// shaders/tc_splitk_ln.comp) where the GEMM is split over K (batch-1 projections: it has a second
// pass anyway). check_matmul_layer_norm gives "" when they fuse, else the reason;
// WEFT_VULKAN_GEMM_LN=off keeps them apart (for measurements).
std::string check_matmul_layer_norm(const Graph& g, const backend::Composite& mm, const backend::Composite& ln,
                                    const Caps& caps);
void lower_matmul_layer_norm(Lowering& l, const backend::Composite& mm, const backend::Composite& ln);
// A DEPTHWISE_CONV2D composite followed by the LAYER_NORM region over its channels that alone reads
// its result (ConvNeXt's block), as one dispatch (ops_tensor.cpp, shaders/tc_dwconv_ln.comp).
// check_depthwise_layer_norm gives "" when they fuse, else the reason; WEFT_VULKAN_DW_LN=off keeps
// them apart (for measurements), =tree sums without subgroup operations (for tests).
std::string check_depthwise_layer_norm(const Graph& g, const backend::Composite& dw, const backend::Composite& ln,
                                       const Caps& caps);
void lower_depthwise_layer_norm(Lowering& l, const backend::Composite& dw, const backend::Composite& ln);
// Squeeze-and-excitation's two 1x1 convolutions on a pooled [N, 1, 1, C] tensor (CONV2D composites,
// the first's result read by the second alone), as one dispatch (ops_tensor.cpp,
// shaders/tc_se_mlp.comp), with WEFT_VULKAN_SE=on (opt-in: measured faster on some models and
// slower on others, see ops_tensor.cpp). check_se_mlp gives "" when they fuse, else the reason.
std::string check_se_mlp(const Graph& g, const backend::Composite& a, const backend::Composite& b, const Caps& caps);
void lower_se_mlp(Lowering& l, const backend::Composite& a, const backend::Composite& b);
// The smallest power of two >= v, and the largest power-of-two workgroup up to `most` the device allows
// (ops_misc.cpp).
int64_t pow2_at_least(int64_t v);
int64_t max_local(const Caps& caps, int64_t most = 256);
// The mean of `in` (float type `t`, viewed as [outer, k, inner]) over k into `out` [outer, inner]:
// an fp32 sum in parallel passes (mx_reduce), divided by k (rounded to fp16 for fp16) in the last.
void emit_mean(Lowering& l, DType t, Arg in, Arg out, int64_t outer, int64_t k, int64_t inner);

}  // namespace weft::vkb
