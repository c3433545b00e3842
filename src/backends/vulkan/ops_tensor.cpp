// Vulkan backend: lowering of the TOSA tensor operators (see lower.h): CONV2D, CONV3D,
// DEPTHWISE_CONV2D, TRANSPOSE_CONV2D, MATMUL, AVG_POOL2D and MAX_POOL2D, every type row with a shader
// type (PRO-FP fp32 / fp16 with fp16 or fp32 accumulation, PRO-INT int8 x int8 -> int32, EXT-INT16
// int16 x int8 / int16 -> int48), with the partitioner's composites: a PAD (or a SLICE cropping the
// end of H / W) folded in front, and after convolutions and MATMUL up to four fused post-ops (bias,
// residual add, CLAMP, SIGMOID, TANH, swish, GELU); and grouped convolutions (Region::kGroupedConv:
// the SLICEs, per-group CONV2Ds and CONCAT TOSA has to write one as) as a single convolution.
//
// Kernels (shaders/tc_*):
//   tc_gemm_f2 / f4 / f8   tiled fp32 / fp16 GEMM (32, 64 or 128 square output tiles, chosen per shape):
//                          MATMUL, and CONV2D / CONV3D / TRANSPOSE_CONV2D as implicit GEMM (1x1
//                          convolutions read the input as the A matrix directly);
//   tc_gemm_i32 / i64      the same for integers (int32 / int48 accumulators);
//   tc_gemm128_coop        fp16 MATMUL and convolutions with cooperative matrices (Caps::coop_matrix_f16),
//                          128 x 128 tiles moved as 16-byte vectors, where the operands allow and the
//                          grid fills the GPU;
//   tc_gemm256_coop        the same with 256 x 128 tiles and one shared-memory stage, for large grids;
//   tc_gemm64_coop         the same with 64 x 64 tiles, for smaller grids (batch-1 layers);
//   tc_matmul_coop         64 x 64 tiles with scalar loads, for the large fp16 GEMMs without vectors;
//   tc_splitk              the second pass of a float GEMM split over K (grids too small for the GPU);
//   tc_conv                direct convolution (one output per invocation): DEPTHWISE_CONV2D, grouped
//                          convolutions (one dispatch for every group), and the convolutions the tiled
//                          kernel does not fit (few output channels, padded taps with weights that are
//                          not known to be finite);
//   tc_pool                MAX_POOL2D / AVG_POOL2D.
//
// Exactness: integer results are bit-exact: an int32 accumulation is used only when a bound computed
// from the zero points, the (constant) weights and bias proves that no partial sum overflows, where
// the reference would REQUIRE; otherwise the node is declined. Float accumulations keep the
// reference's order (k ascending; fp32 may differ by fused multiply-adds, and by the order of the
// partial sums where a GEMM is split over K); fp16 accumulation is rounded after every step as in
// the reference (bit-exact, never split), except on devices with cooperative matrices: there every
// fp16 GEMM accumulates in fp32 (the tensor cores' accumulator; one rule for every kernel, so that
// a result does not depend on which tile a shape picked), more accurate than the fp16 accumulator.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "backends/vulkan/lower.h"
#include "compiler/strided_view.h"

namespace weft::vkb {
namespace {

using backend::Composite;
using backend::PostOp;

// lavapipe aborts an invocation whose loops run more than 65535 iterations: every per-invocation
// loop is bounded by this.
constexpr int64_t kLoopLimit = 65535;

// ---- Graph helpers ------------------------------------------------------------------------------

const TensorType& type_of(const Graph& g, ValueId v) { return g.value(v).type; }

std::string str(int64_t v) { return std::to_string(v); }

// Specialization constants by id (ids not set are 0).
struct Spec {
  std::vector<int32_t> v;
  void set(int id, int64_t x) {
    if (v.size() <= static_cast<size_t>(id)) v.resize(static_cast<size_t>(id) + 1, 0);
    v[static_cast<size_t>(id)] = static_cast<int32_t>(x);
  }
};

// A zero-point operand: a constant (REQUIRE: 0 unless int8), or a reason.
std::string zero_point(const Graph& g, ValueId v, DType t, const char* name, int64_t& zp) {
  const std::optional<double> z = const_scalar(g, v);
  if (!z) return std::string(name) + " is not a constant";
  if (is_float(t)) {
    if (*z != 0.0) return std::string(name) + " of a float operation is not 0 (the reference REQUIREs 0)";
    zp = 0;
    return {};
  }
  zp = *const_int(g, v);
  if (zp != 0 && t != DType::kInt8)
    return std::string(name) + " of " + dtype_name(t) + " is not 0 (the reference REQUIREs 0)";
  return {};
}

// max |x - zp| over the values of integer type t.
int64_t int_span(DType t, int64_t zp) { return std::max(int_max(t) - zp, zp - int_min(t)); }

// ---- Fused post-ops (tc_epilogue.glsl) ------------------------------------------------------------

enum EpKind : int32_t {
  kEpNone = 0,
  kEpBias,
  kEpResidual,
  kEpClamp,
  kEpClampIgnore,
  kEpSigmoid,
  kEpTanh,
  kEpSwish,
  kEpGelu,
  kEpHardSwish,
  kEpGeluTanh,
  kEpScale,
  kEpShift,
  kEpColumnScale,
  kEpColumnShift,
  kEpMask
};

struct Epilogue {
  int32_t kind[4] = {kEpNone, kEpNone, kEpNone, kEpNone};
  float p[4][3] = {};
  ValueId bias = kNoValue, residual = kNoValue;
  ValueId result = kNoValue;  // the value the composite writes
  // Per-column constants of kScale / kShift post-ops (one value per output channel), in post-op
  // order. They travel in the bias binding after `cols` bias values (column_block): the j-th at
  // offset (j + 1) * cols, which the post-op carries as its parameter.
  std::vector<ValueId> columns;
  int64_t cols = 0;
  // kEpMask: the mask (in the residual binding) indexed as mask_runs says.
  int32_t mask_bc = 0, mask_c = 0;
};

// How a tensor of shape `mask` that broadcasts to `result` (same rank, each axis equal or 1) is
// indexed from a flat index o of the result: viewed as [A, Bm, C] against the mask's [A, 1, C], its
// element (o / (Bm C)) C + o % C. {Bm * C, C}, or nullopt where the broadcast axes are not one run
// (a mask [B, 1, S, 1]) or the sizes pass int32. Covers attention's [B,1,1,S], [B,1,S,S], [1,1,S,S].
std::optional<std::pair<int32_t, int32_t>> mask_runs(const Shape& result, const Shape& mask) {
  if (mask.size() != result.size()) return std::nullopt;
  int64_t c = 1, bm = 1;
  int i = static_cast<int>(result.size()) - 1;
  for (; i >= 0 && mask[static_cast<size_t>(i)] == result[static_cast<size_t>(i)]; --i) c *= result[static_cast<size_t>(i)];
  for (; i >= 0 && mask[static_cast<size_t>(i)] == 1; --i) bm *= result[static_cast<size_t>(i)];
  for (; i >= 0 && mask[static_cast<size_t>(i)] == result[static_cast<size_t>(i)]; --i) {
  }
  if (i >= 0 || shape_elements(result) > std::numeric_limits<int32_t>::max()) return std::nullopt;
  return std::make_pair(static_cast<int32_t>(bm * c), static_cast<int32_t>(c));
}

// The single-element constant among the first two operands of binary node n.
std::optional<double> scalar_operand(const Graph& g, const Node& n) {
  for (int i = 0; i < 2; ++i)
    if (auto s = const_scalar(g, n.inputs[static_cast<size_t>(i)])) return s;
  return std::nullopt;
}

// `base`: the value the post-ops apply to (kNoValue: the anchor's result; a grouped convolution's is
// its CONCAT's). `columns_ok`: the caller packs per-column constants into the bias binding
// (convolutions and MATMUL; not the element-wise chain, whose bias binding is the graph's).
std::string plan_epilogue(const Graph& g, const Composite& c, Epilogue& ep, ValueId base = kNoValue,
                          bool columns_ok = true) {
  const Node& a = g.node(c.anchor);
  if (base == kNoValue) base = a.outputs[0];
  ep.result = base;
  if ((!c.a_view.empty() || !c.b_view.empty()) && a.op != Op::MATMUL)
    return "strided operand views are read only by MATMUL";
  if (!c.out_view.empty() && (a.op != Op::MATMUL || !c.post_ops.empty()))
    return "only a MATMUL without fused operations writes through a strided view of its result";
  if (c.post_ops.empty()) return {};
  const TensorType& rt = type_of(g, base);
  // Behind a post_reshape (a RESHAPE keeping the last dimension: the ONNX importer's 3-D MatMul
  // back to 4-D), operands and the result have the reshaped shape but the same elements in the
  // same order: the epilogue reads the residual and writes the result at the matmul's flat index.
  auto same_layout = [&](const TensorType& t) {
    return c.post_reshape >= 0 ? t.dtype == rt.dtype && t.shape.size() >= 1 && t.shape.back() == rt.shape.back() &&
                                     shape_elements(t.shape) == shape_elements(rt.shape)
                               : t == rt;
  };
  if (!is_float(rt.dtype)) return "integer results take no fused operations (the reference rounds and checks each one)";
  if (c.post_ops.size() > 4) return "more than 4 fused operations after " + std::string(op_name(a.op));
  for (size_t i = 0; i < c.post_ops.size(); ++i) {
    const PostOp& p = c.post_ops[i];
    const Node& n = g.node(p.node);
    int32_t& kind = ep.kind[i];
    float* par = ep.p[i];
    switch (p.kind) {
      case PostOp::Kind::kBias: {
        const TensorType& bt = type_of(g, p.operand);
        if (a.op != Op::MATMUL && a.op != Op::MUL && a.op != Op::ADD && a.op != Op::SUB)
          return "a bias add is fused only after MATMUL and in element-wise chains";
        if (ep.bias != kNoValue || bt.dtype != rt.dtype || shape_elements(bt.shape) != rt.shape.back())
          return "the fused bias is not one " + std::string(dtype_name(rt.dtype)) + " per output column";
        ep.bias = p.operand;
        kind = kEpBias;
        ep.result = n.outputs[0];
        break;
      }
      case PostOp::Kind::kResidual:
        if (ep.residual != kNoValue || !same_layout(type_of(g, p.operand)))
          return "the fused residual add is not of the result's type";
        ep.residual = p.operand;
        kind = kEpResidual;
        ep.result = n.outputs[0];
        break;
      case PostOp::Kind::kMask: {
        const TensorType& mt = type_of(g, p.operand);
        const auto runs = mask_runs(type_of(g, n.outputs[0]).shape, mt.shape);
        if (ep.residual != kNoValue || mt.dtype != rt.dtype || !runs)
          return "the fused broadcast add is not one run of broadcast axes of the result's type";
        ep.residual = p.operand;
        ep.mask_bc = runs->first;
        ep.mask_c = runs->second;
        kind = kEpMask;
        ep.result = n.outputs[0];
        break;
      }
      case PostOp::Kind::kClamp: {
        const Tensor& lo = n.attr_tensor("min_val");
        const Tensor& hi = n.attr_tensor("max_val");
        const double l = lo.at_double(0), h = hi.at_double(0);
        if (std::isnan(l) || std::isnan(h) || h < l) return "CLAMP bounds are NaN or max < min (the reference fails)";
        kind = n.attr_int("nan_mode") == static_cast<int64_t>(NanMode::kIgnore) ? kEpClampIgnore : kEpClamp;
        par[0] = static_cast<float>(l);
        par[1] = static_cast<float>(h);
        ep.result = n.outputs[0];
        break;
      }
      case PostOp::Kind::kSigmoid:
        kind = kEpSigmoid;
        ep.result = n.outputs[0];
        break;
      case PostOp::Kind::kTanh:
        kind = kEpTanh;
        ep.result = n.outputs[0];
        break;
      case PostOp::Kind::kSwish:
        kind = kEpSwish;
        ep.result = g.node(p.mul).outputs[0];
        break;
      case PostOp::Kind::kGeluErf: {
        // MUL(x, c1) -> ERF -> ADD(., c2) -> MUL(x, .) -> MUL(., c3): the constants as the graph has them.
        if (p.more.size() != 4) return "unexpected GELU pattern";
        auto c1 = scalar_operand(g, n), c2 = scalar_operand(g, g.node(p.more[1])),
             c3 = scalar_operand(g, g.node(p.more[3]));
        if (!c1 || !c2 || !c3) return "the GELU's constants are not scalars";
        kind = kEpGelu;
        par[0] = static_cast<float>(*c1);
        par[1] = static_cast<float>(*c3);
        par[2] = static_cast<float>(*c2);
        ep.result = g.node(p.more.back()).outputs[0];
        break;
      }
      case PostOp::Kind::kHardSwish: {
        // MUL(x, c1) -> ADD(., c2) -> CLAMP [0, 1] -> MUL(x, .): the constants as the graph has them.
        if (p.more.size() != 3) return "unexpected hard-swish pattern";
        auto c1 = scalar_operand(g, n), c2 = scalar_operand(g, g.node(p.more[0]));
        if (!c1 || !c2) return "the hard-swish's constants are not scalars";
        kind = kEpHardSwish;
        par[0] = static_cast<float>(*c1);
        par[1] = static_cast<float>(*c2);
        ep.result = g.node(p.more.back()).outputs[0];
        break;
      }
      case PostOp::Kind::kGeluTanh: {
        // more: cube, MUL c1, ADD x, MUL c0, TANH, ADD 1, outer MUL, final MUL (0.5 on one of the last two).
        if (p.more.size() != 8) return "unexpected GELU (tanh) pattern";
        auto c1 = scalar_operand(g, g.node(p.more[1])), c0 = scalar_operand(g, g.node(p.more[3]));
        auto half = scalar_operand(g, g.node(p.more[6]));
        if (!half) half = scalar_operand(g, g.node(p.more[7]));
        if (!c0 || !c1 || !half) return "the GELU's constants are not scalars";
        kind = kEpGeluTanh;
        par[0] = static_cast<float>(*c0);
        par[1] = static_cast<float>(*c1);
        par[2] = static_cast<float>(*half);
        ep.result = g.node(p.more.back()).outputs[0];
        break;
      }
      case PostOp::Kind::kScale:
      case PostOp::Kind::kShift: {
        const bool scale = p.kind == PostOp::Kind::kScale;
        ep.result = n.outputs[0];
        if (const std::optional<double> s = const_scalar(g, p.operand)) {
          kind = scale ? kEpScale : kEpShift;
          par[0] = static_cast<float>(*s);
          break;
        }
        const Tensor* t = const_tensor(g, p.operand);
        const int64_t cols = rt.shape.empty() ? 1 : rt.shape.back();
        if (!t || t->dtype() != rt.dtype || t->num_elements() != cols)
          return "the fused operation's constant is neither one value nor one per output column";
        if (!columns_ok) return "a per-channel constant is fused only after a convolution or MATMUL";
        ep.cols = cols;
        ep.columns.push_back(p.operand);
        const int64_t offset = static_cast<int64_t>(ep.columns.size()) * cols;
        if (offset >= (int64_t{1} << 24)) return "too many output columns for a fused per-channel constant";
        kind = scale ? kEpColumnScale : kEpColumnShift;
        par[0] = static_cast<float>(offset);
        break;
      }
    }
  }
  if (!same_layout(type_of(g, ep.result))) return "the fused operations change the result's type";
  if (c.outputs.size() != 1 || c.outputs[0] != ep.result) return "the composite's result is not its last operation's";
  return {};
}

// tc_gemm's convolution geometry for a plain GEMM (unused there, but kept valid: no zero divisors).
void gemm_geometry_defaults(Spec& s) {
  for (int id = 19; id <= 38; ++id) s.set(id, id == 31 || id == 32 ? 0 : 1);
  for (int id = 56; id <= 58; ++id) s.set(id, 0);
}

// The bias binding of a kernel whose epilogue has per-column constants: `cols` bias values (`bias`:
// `bias_elems` = 1 or `cols` elements, spread over the columns; null: zeros) and then each of
// ep.columns, all of type `t`.
std::vector<uint8_t> column_block(const Graph& g, const Epilogue& ep, const uint8_t* bias, int64_t bias_elems, DType t) {
  const size_t es = storage_size(t), cols = static_cast<size_t>(ep.cols);
  std::vector<uint8_t> out((1 + ep.columns.size()) * cols * es, 0);
  if (bias)
    for (size_t i = 0; i < cols; ++i) std::memcpy(out.data() + i * es, bias + (bias_elems == 1 ? 0 : i) * es, es);
  for (size_t j = 0; j < ep.columns.size(); ++j)
    std::memcpy(out.data() + (j + 1) * cols * es, const_tensor(g, ep.columns[j])->bytes(), cols * es);
  return out;
}

// column_block of a constant bias tensor (null: none) as prepared data.
Arg column_arg(Lowering& l, const Epilogue& ep, const Tensor* bias, DType t) {
  return l.data(column_block(l.graph, ep, bias ? bias->bytes() : nullptr, bias ? bias->num_elements() : 0, t));
}

void epilogue_spec(Spec& s, const Epilogue& ep) {
  for (int i = 0; i < 4; ++i) {
    s.set(40 + i, ep.kind[i]);
    for (int j = 0; j < 3; ++j) s.set(44 + 3 * i + j, f32_bits(ep.p[i][j]));
    if (ep.kind[i] == kEpMask) {  // integers (tc_epilogue.glsl: EP_MASK)
      s.set(44 + 3 * i, ep.mask_bc);
      s.set(45 + 3 * i, ep.mask_c);
    }
  }
}

// ---- Input window: a PAD or SLICE folded in front of a convolution or pooling ----------------------

struct Window {
  ValueId src = kNoValue;  // the tensor the kernel reads
  int64_t SH = 1, SW = 1;  // its H and W
  int64_t PT = 0, PL = 0;  // where it starts inside the operator's input
  int32_t fill = 0;        // the PAD's value (float bits for float types)
};

std::string plan_window(const Graph& g, const Composite& c, Window& w) {
  const Node& n = g.node(c.anchor);
  const Shape& in = type_of(g, n.inputs[0]).shape;
  w.src = n.inputs[0];
  w.SH = in[in.size() - 3];
  w.SW = in[in.size() - 2];
  if (c.pad < 0) return {};
  const Node& p = g.node(c.pad);
  if (p.outputs[0] != n.inputs[0] || in.size() != 4) return "unexpected operation folded in front";
  const Shape& src = type_of(g, p.inputs[0]).shape;
  if (p.op == Op::PAD) {
    auto pads = const_shape(g, p.inputs[1]);
    if (!pads || pads->size() != 8) return "PAD's padding is not a constant";
    const std::vector<int64_t>& q = *pads;
    if (q[0] || q[1] || q[6] || q[7] || *std::min_element(q.begin(), q.end()) < 0)
      return "PAD in front pads N or C, or by a negative amount (only H and W fold into the window)";
    const DType t = type_of(g, p.inputs[0]).dtype;
    auto v = const_scalar(g, p.inputs[2]);
    if (!v) return "PAD's pad_const is not a constant";
    w.fill = is_float(t) ? f32_bits(static_cast<float>(*v)) : static_cast<int32_t>(*const_int(g, p.inputs[2]));
    w.PT = q[2];
    w.PL = q[4];
  } else if (p.op == Op::SLICE) {
    auto start = const_shape(g, p.inputs[1]), size = const_shape(g, p.inputs[2]);
    if (!start || !size || start->size() != 4 || size->size() != 4) return "SLICE's start / size are not constants";
    for (int64_t s0 : *start)
      if (s0 != 0) return "SLICE in front does not start at 0 (only crops of the end of H and W fold)";
    if ((*size)[0] != src[0] || (*size)[3] != src[3]) return "SLICE in front crops N or C";
  } else {
    return std::string(op_name(p.op)) + " in front is not folded";
  }
  w.src = p.inputs[0];
  w.SH = src[1];
  w.SW = src[2];
  return {};
}

// ---- Tiled GEMM selection ---------------------------------------------------------------------

struct Tile {
  const char* shader;
  int64_t bm, bn, bk;
};

// The tc_gemm variant for an M x N (x batch) problem: the largest square tile that still leaves
// enough workgroups to fill a large GPU (128: >= 256 groups, 64: >= 128) without wasting more than
// an eighth (128) or a quarter (64) of its outputs on ragged edges (N = 64 channels in a 128-wide
// tile), and, where the device gives its compute units, whose last wave of 128 tiles is at least
// 85% full; else 32. On an H100, fp32: ConvNeXt-T b32 14.90 -> 13.48 ms of GPU time (its N = 96 /
// 192 MATMULs had taken the 128 tile at 25% waste, and grids of 588 and 312 workgroups left their
// last wave of 264 slots 22% and 18% full), BERT b32 and MobileNetV2 b32 unchanged, ResNet-50 b32
// 12.02 -> 11.98; the 4096^3 and 2048^3 MATMULs keep the 128 tile (1024 and 256 groups).
// `short_k` (a convolution whose reduction is under 512): not the 128 tile. On an H100, fp32, GPU
// time with such convolutions on the 64 tile: ResNet-50 b32 12.96 -> 12.03 ms (its K = 64 to 256
// residual 1x1 convolutions), MobileNetV2 b32 2.165 -> 2.080, DenseNet-121 b32 within its noise
// (20.1-22.5 ms); MATMULs take it under K = 256 (ConvNeXt-T's K = 96 / 192 MLP-up layers), since
// BERT b32's K = 256 projections were slower on the 64 tile (1.426 -> 1.442 ms). Integers: 64.
// A long reduction (K >= 1024) whose 64-tile grid is a quarter wave or more but under 128 groups
// takes the 64 tile too where the device gives its compute units and K slices (pick_split) can make
// a wave of it: the 32 tile runs at about half the 64 tile's rate (H100, fp32: 11.7 against 21
// TFLOP/s). FCN-ResNet-50 and DeepLabV3-ResNet-50 at batch 1 run their dilated layer 3 / 4 and head
// convolutions at 28 x 28 (784 rows, 256 to 512 columns, K = 2048 to 18432): their head took 1.27
// ms on the 32 tile; the 64 tile everywhere gave 3.74 against 4.99 ms host to host (FCN) and 4.30 -
// 4.49 against 5.82 - 5.86 (DeepLabV3). Batch-1 classifiers' last stages (ResNet-50's 49 and 196
// pixels, BERT b1's 128 rows) have smaller grids and keep the 32 tile.
// WEFT_VULKAN_GEMM_TILE=32|64|128 forces a float tile (tests, tuning).
// Workgroups of a SIMT float tile that one compute unit holds at once, as measured on an H100: two
// of the 128 tile (128 registers per invocation), four of the smaller ones (47-63).
int64_t tile_groups_per_unit(const Tile& t) { return t.bm >= 128 ? 2 : 4; }

Tile pick_tile(int64_t M, int64_t N, int64_t K, int64_t batch, int acc, bool short_k = false, uint32_t compute_units = 0) {
  if (acc == 2) return {"tc_gemm_i32", 64, 64, 16};
  if (acc == 3) return {"tc_gemm_i64", 64, 64, 16};
  static const Tile kTiles[] = {{"tc_gemm_f2", 32, 32, 32}, {"tc_gemm_f4", 64, 64, 16}, {"tc_gemm_f8", 128, 128, 8}};
  if (const char* e = std::getenv("WEFT_VULKAN_GEMM_TILE")) {
    for (const Tile& t : kTiles)
      if (std::atoi(e) == t.bm) return t;
  }
  // `waste`: the share of the tiles' outputs past the edges it allows.
  auto fits = [&](int64_t t, int64_t min_groups, double waste) {
    const int64_t gm = (M + t - 1) / t, gn = (N + t - 1) / t;
    return gm * gn * batch >= min_groups && double(M) * double(N) >= (1.0 - waste) * double(gm * gn) * double(t * t);
  };
  // Where the device says how many compute units it has: the 128 tile's grid fills its last wave
  // to at least 85%.
  auto full_waves = [&]() {
    if (compute_units == 0) return true;
    const int64_t groups = ((M + 127) / 128) * ((N + 127) / 128) * batch,
                  slots = tile_groups_per_unit(kTiles[2]) * int64_t{compute_units};
    return double(groups) >= 0.85 * double((groups + slots - 1) / slots * slots);
  };
  if (!short_k && fits(128, 256, 0.125) && full_waves()) return kTiles[2];
  if (fits(64, 128, 0.25)) return kTiles[1];
  if (compute_units > 0 && acc == 0 && K >= 1024 && fits(64, 32, 0.25)) {
    const int64_t groups = ((M + 63) / 64) * ((N + 63) / 64) * batch;
    if (groups * std::min<int64_t>(K / 128, 16) >= 2 * int64_t{compute_units}) return kTiles[1];
  }
  return kTiles[0];
}

// Loop iterations of one tiled-GEMM invocation: a K step each (the fp16-accumulating path also
// loops over the step's k).
int64_t gemm_steps(int64_t K, const Tile& t, int acc) {
  return acc == 1 && std::string_view(t.shader) != "tc_matmul_coop" ? K : (K + t.bk - 1) / t.bk;
}

std::string check_groups(int64_t x, int64_t y, int64_t z, const Caps& caps) {
  if (x > caps.max_groups[0] || y > caps.max_groups[1] || z > caps.max_groups[2])
    return "needs " + str(x) + " x " + str(y) + " x " + str(z) + " workgroups, more than the device allows";
  return {};
}

std::string check_flat(int64_t invocations, const Caps& caps) {
  const int64_t groups = (invocations + 63) / 64;
  if (groups > static_cast<int64_t>(caps.max_groups[0]) * caps.max_groups[1])
    return "needs " + str(groups) + " workgroups, more than the device allows";
  return {};
}

// Whether the cooperative-matrix kernel runs fp16 GEMMs on this device (four subgroups of 32).
bool use_coop(const Caps& caps) {
  return caps.coop_matrix_f16 && caps.subgroup_size == 32 && caps.max_shared_bytes >= 16384 && caps.max_invocations >= 128;
}

// The fp16 GEMM kernel on a device with cooperative matrices, for an M x N (x batch) problem.
// Where the operands move in 8-half vectors (`vectors`) and K >= 64: tc_gemm128_coop where M and N
// are both at least kWideSide and its grid has at least kFullGrid workgroups, else tc_gemm64_coop
// from kSmallGrid workgroups. The 128 tile wins only on large square-ish products (H100, fp16
// sweep: 4096^3 140 against 131 TFLOP/s, 2048^3 128 against 118); everywhere else the 64 tile was
// as fast or faster (4096 x 768 x 768 79 -> 97, 6272 x 512 x 4608 103 -> 117, and 2x where N = 64
// left half of the 128 tile idle: 25088 x 64 x 576 36 -> 71), and whole models gained: ResNet-50
// b32 in the fp16 mode 8.27 -> 5.38 ms of GPU time, BERT b32 0.794 -> 0.668, MobileNetV2 b32
// 2.82 -> 2.30 (the 128 tile had been taken from 96 workgroups of any shape). tc_gemm64_coop (tensor cores
// even where a batch-1 layer leaves part of the GPU idle; from 64 workgroups rather than 32, since
// below that the SIMT tiles, which fuse more post-ops, were faster: GPU time in the fp16 mode on an
// H100, MobileNetV2 b1 0.497 -> 0.463 ms, MobileNetV3-L 0.675 -> 0.642, MnasNet 0.527 -> 0.475,
// EfficientNet-B0 0.922 -> 0.887, ResNet-50 0.906 -> 0.899) or on any grid from K = kSplitK, where
// pick_split multiplies a small grid by K slices (ConvNeXt-T's last stages, M = 49 or 196 rows and K
// up to 3072, had run on the SIMT tiles: 1.33 -> 1.13 ms of GPU time in the fp16 mode on an H100;
// ResNet-50 b1 1.31 -> 1.03, MobileNetV3-L 0.82 -> 0.78). Not for K < 64: MobileNetV2's 1x1
// convolutions of 16 to 32 channels ran faster on the SIMT tiles (batch 32 in the fp16 mode: 3.48 ms
// of GPU time with them on tc_gemm128_coop, 2.83 on the SIMT tiles). Otherwise tc_matmul_coop (scalar loads) from
// kFullGrid workgroups, or only from kHugeGrid where B is constant and the SIMT tile reads it
// widened to fp32 (`widened_b`: convolution weights); else the SIMT tile (split over K where the
// grid is small: matrix-vector shapes). On an H200: MobileNetV2 / ResNet-50 at batch 1 took
// 0.87 / 2.52 ms of GPU time with tc_matmul_coop from 96 groups, 0.71 / 1.75 ms with widened SIMT
// tiles; a 1024^3 MATMUL (fp16 B) 0.10 ms with tc_matmul_coop, 0.18 ms with SIMT.
// Where M and N are at least kWideSide and the 256 x 128 tile makes two waves of workgroups (from
// the device's compute units; 256 where it gives none), tc_gemm256_coop: each subgroup multiplies
// a 64 x 64 part, twice the products per fragment read from shared memory of the 128 tile's 64 x 32
// (H200, fp16 sweep, same session: 4096^3 148.6 -> 172.7 TFLOP/s, 8192^3 154.9 -> 181.3,
// 4096 x 3072 x 768 116.4 -> 122.3; on fewer than two waves it lost: 2048^3 132.2 -> 98.7,
// 4096 x 768 x 3072 (96 groups) 105.0 -> 86.3).
// WEFT_VULKAN_COOP=256|128|64|0 forces the tile (tests, tuning): 256, 128 and 64 where the kernel applies.
Tile pick_fp16_tile(int64_t M, int64_t N, int64_t K, int64_t batch, bool vectors, bool widened_b, const Caps& caps,
                    bool b_nk = false) {
  constexpr int64_t kSmallGrid = 64, kFullGrid = 96, kHugeGrid = 1024, kSplitK = 512, kWideSide = 2048;
  // Shared memory of the vector tiles (tc_gemm_wide.glsl): two stages of A and B plus the result
  // staging; B staged as [n][k] (b_nk) takes BN rows of A's pitch instead of BK rows of its own.
  const bool wide = vectors && K >= 64 && caps.max_invocations >= 256 && caps.max_shared_bytes >= (b_nk ? 49152 : 46080);
  const bool vec64 = vectors && K >= 64 && caps.max_shared_bytes >= (b_nk ? 24576 : 23552);
  auto grid = [&](int64_t bm, int64_t bn) { return ((M + bm - 1) / bm) * ((N + bn - 1) / bn) * batch; };
  const char* e = std::getenv("WEFT_VULKAN_COOP");
  const int forced = e ? std::atoi(e) : -1;
  // The 256 x 128 tile (one 8-warp workgroup per SM at 210-255 registers) from two waves of it.
  const int64_t waves2 = caps.compute_units > 0 ? 2 * int64_t{caps.compute_units} : 256;
  if (wide && (forced == 256 || (forced < 0 && M >= kWideSide && N >= kWideSide && grid(256, 128) >= waves2)))
    return {"tc_gemm256_coop", 256, 128, 32};
  if (wide && (forced == 128 || (forced < 0 && M >= kWideSide && N >= kWideSide && grid(128, 128) >= kFullGrid)))
    return {"tc_gemm128_coop", 128, 128, 32};
  if (vec64 && (forced == 64 || (forced < 0 && (grid(64, 64) >= kSmallGrid || K >= kSplitK))))
    return {"tc_gemm64_coop", 64, 64, 32};
  if (forced == 64 || (forced < 0 && grid(64, 64) >= (widened_b ? kHugeGrid : kFullGrid))) return {"tc_matmul_coop", 64, 64, 32};
  return pick_tile(M, N, K, batch, 0, false, caps.compute_units);
}

// Whether `t` is one of the SIMT float tiles (tc_gemm_f2/f4/f8): vector staging (VEC) and the
// scaled input (A_SCALE, binding 6) are theirs.
bool simt_float_tile(const Tile& t) {
  const std::string_view sh(t.shader);
  return sh == "tc_gemm_f2" || sh == "tc_gemm_f4" || sh == "tc_gemm_f8";
}

// The tiled GEMMs' workgroup size (tc_gemm.glsl's WG): 128 invocations for the 64 x 64
// cooperative-matrix tiles, else 256, more than Vulkan's guaranteed maxComputeWorkGroupInvocations
// (128); and their storage buffers: A, B, bias, residual, output, the float tiles' partial sums, the
// SIMT float tiles' A_SCALE factors (7), more than Vulkan's guaranteed
// maxPerStageDescriptorStorageBuffers (4). "" when the device allows it, else why not.
std::string check_tile_limits(const Tile& t, const Caps& caps) {
  const std::string_view sh(t.shader);
  const uint32_t need = sh == "tc_matmul_coop" || sh == "tc_gemm64_coop" ? 128 : 256;
  if (caps.max_invocations < need)
    return "the tiled GEMM's " + str(need) + " invocations per workgroup exceed maxComputeWorkGroupInvocations = " +
           str(caps.max_invocations) + " of Vulkan device '" + caps.device + "'";
  const bool integer = sh == "tc_gemm_i32" || sh == "tc_gemm_i64";
  const uint32_t buffers = integer ? 5 : simt_float_tile(t) ? 7 : 6;
  if (caps.max_storage_buffers < buffers)
    return std::string("the tiled GEMM ") + t.shader + "'s " + str(buffers) +
           " storage buffers exceed maxPerStageDescriptorStorageBuffers = " + str(caps.max_storage_buffers) +
           " of Vulkan device '" + caps.device + "'";
  return {};
}

// K slices for a float GEMM whose grid leaves a large GPU mostly idle (batch-1 layers with few
// output pixels and a long reduction): enough slices for ~256 workgroups, each summing >= 128 k.
// Slices of 128 rather than 256 (so from K = 256 on): on an H100 the fp16 mode of ResNet-50 b1
// went from 1.31 to 1.23 ms of GPU time and EfficientNet-B0's from 1.19 to 1.04; fp32 ConvNeXt-T
// and ResNet-50 unchanged (1.47, 1.16 ms).
// Not with fp16 accumulation (its rounding follows the order of k). WEFT_VULKAN_GEMM_SPLIT=n forces n.
// Where the device gives its compute units, a grid of up to half a wave (`per_unit` workgroups of
// the tile per unit) over K >= 512 is split into as many whole waves' worth of slices as fit, each
// summing >= 256 k. The 64 tile that pick_tile takes for a long reduction (32 to 127 groups,
// K >= 1024; `wave_slices`) gets slices for one whole wave of it, each summing >= 256 k.
int64_t pick_split(int64_t groups, int64_t K, int acc, const Caps& caps, int64_t batch, int64_t per_unit,
                   bool wave_slices = false) {
  if (acc != 0) return 1;
  int64_t split = 1;
  const int64_t slots = int64_t{caps.compute_units} * per_unit;
  if (const char* e = std::getenv("WEFT_VULKAN_GEMM_SPLIT")) {
    split = std::max<int64_t>(1, std::atoi(e));
  } else if (slots > 0 && wave_slices && K >= 1024 && groups >= 32 && groups < 128) {
    // pick_tile's long reductions on the 64 tile: slices for one whole wave. H100, fp32, 784 x 512
    // x 18432 (104 groups): 3 slices 0.727 ms, 5 0.569, 8 0.603, 12 0.572; x 4608: 0.190 / 0.154 /
    // 0.164 / 0.160 ms.
    split = std::min<int64_t>({std::max<int64_t>(slots / groups, 1), K / 256, 16});
  } else if (K >= 256 && groups < 128) {
    split = std::min<int64_t>({(256 + groups - 1) / groups, K / 128, 16});
  } else if (slots > 0 && K >= 512 && 2 * groups <= slots) {
    split = std::min<int64_t>({slots / groups, K / 256, 16});
  }
  return std::max<int64_t>(1, std::min<int64_t>(split, caps.max_groups[2] / std::max<int64_t>(batch, 1)));
}

// The K slices of an M x N x K (x batch) GEMM on `tile` (pick_split, less any empty slice) and
// their length.
std::pair<int64_t, int64_t> gemm_split(const Tile& tile, int acc, int64_t M, int64_t N, int64_t K, int64_t batch,
                                       const Caps& caps) {
  const int64_t gx = (N + tile.bn - 1) / tile.bn, gy = (M + tile.bm - 1) / tile.bm;
  int64_t split = pick_split(gx * gy * batch, K, acc, caps, batch, tile_groups_per_unit(tile),
                             tile.bm == 64 && simt_float_tile(tile));
  const int64_t kslice = ((K + split - 1) / split + tile.bk - 1) / tile.bk * tile.bk;
  if (split > 1) split = (K + kslice - 1) / kslice;  // no empty slice
  return {split, kslice};
}

// The second pass of a split GEMM in place of tc_splitk (tc_splitk_ln): given the GEMM's spec
// constants, the partial sums and the GEMM's bias and residual bindings.
using SecondPass = std::function<void(const Spec& gemm, const Arg& part, const Arg& bias, const Arg& res)>;

// One tiled GEMM (tc_gemm_* / tc_matmul_coop with the spec constants of tc_gemm.glsl already set
// but the split ones), split over K when pick_split says so: the slices' partial sums go to a
// scratch buffer and tc_splitk (or `second`) adds them and finishes the outputs.
void emit_gemm(Lowering& l, const Tile& tile, int acc, int64_t M, int64_t N, int64_t K, int64_t batch, Spec s,
               const Arg& a, const Arg& b, const Arg& bias, const Arg& res, const Arg& out,
               const std::optional<Arg>& a_scale = std::nullopt, const SecondPass& second = nullptr) {
  const int64_t gx = (N + tile.bn - 1) / tile.bn, gy = (M + tile.bm - 1) / tile.bm;
  const auto [split, kslice] = gemm_split(tile, acc, M, N, K, batch, l.caps);
  if (second && split < 2) l.fail(std::string("internal: a fused second pass for a GEMM that is not split over K"));
  s.set(59, split);
  s.set(60, kslice);
  s.set(61, batch);
  // fp32 operands staged as vectors (tc_gemm.glsl's VEC) where the SIMT tile reads them contiguous
  // and 16-byte aligned: A along k (strided or a plain 1x1 convolution), B along n.
  const bool simt = simt_float_tile(tile);
  if (acc == 0 && simt) {
    s.set(64, 0);  // every id up to 64 now has a value (unset ones 0)
    const auto v = [&](int id) { return id < static_cast<int>(s.v.size()) ? static_cast<int64_t>(s.v[static_cast<size_t>(id)]) : 0; };
    const int32_t f32 = code(DType::kFp32), f16 = code(DType::kFp16);
    const bool a4 = (v(0) == f32 || v(0) == f16) && K % 4 == 0 &&
                    (v(18) == 0 ? v(62) % 4 == 0 && v(9) % 4 == 0 && v(8) % 4 == 0 && v(66) % 4 == 0
                                : v(18) == 1 && v(19) % 4 == 0);
    const bool b4 = (v(1) == f32 || v(1) == f16) && v(12) == 1 && v(63) % 4 == 0 && v(11) % 4 == 0 && v(10) % 4 == 0 && v(68) % 4 == 0 &&
                    N % 4 == 0;
    s.set(64, (a4 ? 1 : 0) | (b4 ? 2 : 0));
  }
  const auto groups = [](int64_t x, int64_t y, int64_t z) {
    return std::array<uint32_t, 3>{static_cast<uint32_t>(x), static_cast<uint32_t>(y), static_cast<uint32_t>(z)};
  };
  if (acc >= 2) {  // integer kernels: no split, no partial-sum binding
    l.dispatch(tile.shader, std::move(s.v), {a, b, bias, res, out}, groups(gx, gy, batch));
    return;
  }
  // The SIMT float tiles declare the scaled-input factor at binding 6 (A_SCALE; `a` when unused).
  if (a_scale && !simt) l.fail(std::string("internal: a scaled input on ") + tile.shader);
  const Arg part = split == 1 ? l.scratch(4, true) : l.scratch(static_cast<size_t>(split * batch * M * N) * sizeof(float), true);
  std::vector<Arg> args = {a, b, bias, res, out, part};
  if (simt) args.push_back(a_scale ? *a_scale : a);
  if (split == 1) {
    l.dispatch(tile.shader, std::move(s.v), std::move(args), groups(gx, gy, batch));
    return;
  }
  l.dispatch(tile.shader, s.v, std::move(args), groups(gx, gy, batch * split));
  const Arg part_in{Arg::Kind::kScratch, kNoValue, part.index, false};
  if (second) {
    second(s, part_in, bias, res);
    return;
  }
  l.dispatch("tc_splitk", std::move(s.v), {part_in, bias, res, out}, l.grid(static_cast<uint64_t>(batch * M * N)));
}

// Accumulator codes of the kernels: 0 fp32, 1 fp16, 2 int32, 3 int64 (int48).
int acc_code(DType acc) {
  switch (acc) {
    case DType::kFp16: return 1;
    case DType::kInt32: return 2;
    case DType::kInt48: return 3;
    default: return 0;
  }
}

DType acc_of(const Node& n) {
  switch (static_cast<AccType>(n.attr_int("acc_type"))) {
    case AccType::kInt32: return DType::kInt32;
    case AccType::kInt48: return DType::kInt48;
    case AccType::kFp16: return DType::kFp16;
    default: return DType::kFp32;
  }
}

// ---- Convolutions ---------------------------------------------------------------------------------

struct ConvPlan {
  // Geometry in the reference's terms (ConvGeom); V* is the operator's input (after a folded PAD).
  int64_t N = 1, VD = 1, VH = 1, VW = 1, IC = 1, OD = 1, OH = 1, OW = 1, OC = 1, KD = 1, KH = 1, KW = 1;
  int64_t pad_d = 0, pad_y = 0, pad_x = 0, sd = 1, sy = 1, sx = 1, dd = 1, dy = 1, dx = 1, mult = 1;
  bool transpose = false, depthwise = false;
  Window win;
  Epilogue ep;
  DType in_t{}, w_t{}, out_t{};
  int acc = 0;
  int64_t izp = 0, wzp = 0;
  bool bias_bcast = false;
  bool gemm = false;
  bool plain = false;     // gemm: a 1x1 convolution with unit strides and no padding, A read as [pixels][IC]
  bool scale_in = false;  // c.scale_in: A's elements multiplied by the factor (tc_gemm's A_SCALE)
  int64_t groups = 1;  // a grouped convolution (Region::kGroupedConv): IC and OC are the whole tensors'
  Tile tile{};
  int64_t taps() const { return KD * KH * KW; }
  int64_t K() const { return taps() * (depthwise ? 1 : IC / groups); }
  int64_t pixels() const { return N * OD * OH * OW; }
};

// Whether the integer accumulation of a convolution is exact: |partial sums| <= K * max|x - zp| *
// max|w - zp| and |acc + bias| below that plus max|bias| must fit acc_t, or the reference's REQUIREs
// could fire. `weights` / `biases`: the constant operands (a null weight: any value of its type).
std::string check_int_accumulation(const ConvPlan& p, const std::vector<const Tensor*>& weights,
                                   const std::vector<const Tensor*>& biases) {
  int64_t max_w = 0;
  for (const Tensor* wc : weights) {
    if (!wc) {
      max_w = int_span(p.w_t, p.wzp);
      break;
    }
    for (int64_t i = 0; i < wc->num_elements(); ++i) max_w = std::max(max_w, std::abs(wc->at_int(i) - p.wzp));
  }
  int64_t max_b = 0;
  for (const Tensor* bc : biases) {
    if (!bc) return "an integer convolution's bias is not a constant (its addition could overflow)";
    for (int64_t i = 0; i < bc->num_elements(); ++i) max_b = std::max(max_b, std::abs(bc->at_int(i)));
  }
  const double bound =
      static_cast<double>(p.K()) * static_cast<double>(int_span(p.in_t, p.izp)) * static_cast<double>(max_w) +
      static_cast<double>(max_b);
  const int64_t limit = p.acc == 2 ? std::numeric_limits<int32_t>::max() : (int64_t{1} << 47) - 1;
  if (bound > static_cast<double>(limit))
    return "the accumulator could reach " + str(static_cast<int64_t>(bound)) + ", beyond " + dtype_name(p.out_t) +
           " (the reference checks every addition)";
  return {};
}

// A grouped convolution (Region::kGroupedConv: G SLICEs of the source's channels, a CONV2D per group,
// the CONCAT of their results, post-ops on the concatenation) as one dispatch of the direct kernel
// over the whole source (tc_conv with GROUPS = G; weights and biases stacked at prepare).
std::string plan_grouped_conv(const Graph& g, const Composite& c, const Caps& caps, ConvPlan& p) {
  const Node& n = g.node(c.anchor);
  const int64_t G = static_cast<int64_t>(c.group_convs.size());
  if (n.op != Op::CONV2D || G < 2 || c.group_concat < 0 || c.source == kNoValue || c.pad >= 0)
    return "unexpected grouped convolution composite";
  const ValueId cat = g.node(c.group_concat).outputs[0];
  const TensorType& st = type_of(g, c.source);
  const TensorType& wt = type_of(g, n.inputs[1]);
  const TensorType& ct = type_of(g, cat);
  if (st.rank() != 4 || wt.rank() != 4 || ct.rank() != 4) return "unexpected grouped convolution shapes";
  p.groups = G;
  p.in_t = st.dtype;
  p.w_t = wt.dtype;
  p.out_t = ct.dtype;
  p.acc = acc_code(acc_of(n));
  p.N = st.shape[0], p.VH = st.shape[1], p.VW = st.shape[2], p.IC = st.shape[3];
  p.KH = wt.shape[1], p.KW = wt.shape[2];
  const int64_t OCg = wt.shape[0], ICg = wt.shape[3];
  p.OC = G * OCg, p.OH = ct.shape[1], p.OW = ct.shape[2];
  if (p.IC != G * ICg || ct.shape[3] != p.OC || ct.shape[0] != p.N)
    return "the groups' channels do not add up to the source's and the CONCAT's";
  const auto& pad = n.attr_ints("pad");
  const auto& stride = n.attr_ints("stride");
  const auto& dl = n.attr_ints("dilation");
  p.pad_y = pad[0], p.pad_x = pad[2], p.sy = stride[0], p.sx = stride[1], p.dy = dl[0], p.dx = dl[1];
  p.win.src = c.source;
  p.win.SH = p.VH;
  p.win.SW = p.VW;
  std::vector<const Tensor*> weights, biases;
  for (int64_t k = 0; k < G; ++k) {
    const Node& cn = g.node(c.group_convs[static_cast<size_t>(k)]);
    const std::string group = "group " + str(k);
    if (cn.op != Op::CONV2D || type_of(g, cn.inputs[1]) != wt || type_of(g, cn.outputs[0]).dtype != p.out_t)
      return "the CONV2Ds of the groups differ";
    // The group reads channels [k * ICg, (k + 1) * ICg) of the source, whole in N, H and W.
    const int sl = g.value(cn.inputs[0]).producer;
    const auto start = sl >= 0 && g.node(sl).op == Op::SLICE ? const_shape(g, g.node(sl).inputs[1]) : std::nullopt;
    const auto size = sl >= 0 && g.node(sl).op == Op::SLICE ? const_shape(g, g.node(sl).inputs[2]) : std::nullopt;
    if (!start || !size || g.node(sl).inputs[0] != c.source ||
        *start != std::vector<int64_t>{0, 0, 0, k * ICg} ||
        *size != std::vector<int64_t>{p.N, p.VH, p.VW, ICg})
      return "the input of " + group + " is not the SLICE of its channels of the source";
    weights.push_back(const_tensor(g, cn.inputs[1]));
    biases.push_back(const_tensor(g, cn.inputs[2]));
    if (!weights.back()) return "the weights of " + group + " are not a constant";
    if (!biases.back()) return "the bias of " + group + " is not a constant";
    const TensorType& bt = biases.back()->type();
    if (bt.rank() != 1 || (bt.shape[0] != OCg && bt.shape[0] != 1) || bt.dtype != p.out_t)
      return "the bias of " + group + " has neither 1 nor " + str(OCg) + " elements of the output type";
    int64_t izp = 0, wzp = 0;
    if (std::string r = zero_point(g, cn.inputs[3], p.in_t, "input_zp", izp); !r.empty()) return r;
    if (std::string r = zero_point(g, cn.inputs[4], p.w_t, "weight_zp", wzp); !r.empty()) return r;
    if (izp != 0 || wzp != 0)
      return "the zero points of a grouped convolution must be 0 (" + group + ": input_zp " + str(izp) +
             ", weight_zp " + str(wzp) + ")";
  }
  if (std::string r = plan_epilogue(g, c, p.ep, cat); !r.empty()) return r;
  if (!is_float(p.in_t))
    if (std::string r = check_int_accumulation(p, weights, biases); !r.empty()) return r;
  if (p.taps() * (ICg + 1) > kLoopLimit)
    return "direct convolution of " + str(p.taps()) + " taps x " + str(ICg) + " channels per output is too long";
  if (caps.max_invocations < 64)
    return "the direct kernel's 64 invocations per workgroup exceed maxComputeWorkGroupInvocations = " +
           str(caps.max_invocations) + " of Vulkan device '" + caps.device + "'";
  return check_flat(p.pixels() * p.OC, caps);
}

std::string plan_conv(const Graph& g, const Composite& c, const Caps& caps, ConvPlan& p) {
  if (c.region == Composite::Region::kGroupedConv) return plan_grouped_conv(g, c, caps, p);
  const Node& n = g.node(c.anchor);
  const Shape& in = type_of(g, n.inputs[0]).shape;
  const Shape& w = type_of(g, n.inputs[1]).shape;
  const Shape& out = type_of(g, n.outputs[0]).shape;
  p.in_t = type_of(g, n.inputs[0]).dtype;
  p.w_t = type_of(g, n.inputs[1]).dtype;
  p.out_t = type_of(g, n.outputs[0]).dtype;
  p.acc = acc_code(acc_of(n));
  if (n.op == Op::CONV3D) {
    const auto& pad = n.attr_ints("pad");
    const auto& st = n.attr_ints("stride");
    const auto& dl = n.attr_ints("dilation");
    p.N = in[0], p.VD = in[1], p.VH = in[2], p.VW = in[3], p.IC = in[4];
    p.OC = w[0], p.KD = w[1], p.KH = w[2], p.KW = w[3];
    p.OD = out[1], p.OH = out[2], p.OW = out[3];
    p.pad_d = pad[0], p.pad_y = pad[2], p.pad_x = pad[4];
    p.sd = st[0], p.sy = st[1], p.sx = st[2], p.dd = dl[0], p.dy = dl[1], p.dx = dl[2];
  } else {
    p.N = in[0], p.VH = in[1], p.VW = in[2], p.IC = in[3];
    p.OH = out[1], p.OW = out[2], p.OC = out[3];
    const auto& st = n.attr_ints("stride");
    p.sy = st[0], p.sx = st[1];
    if (n.op == Op::TRANSPOSE_CONV2D) {
      const auto& op = n.attr_ints("out_pad");
      p.transpose = true;
      p.KH = w[1], p.KW = w[2];
      p.pad_y = op[0], p.pad_x = op[2];
    } else {
      const auto& pad = n.attr_ints("pad");
      const auto& dl = n.attr_ints("dilation");
      p.pad_y = pad[0], p.pad_x = pad[2], p.dy = dl[0], p.dx = dl[1];
      if (n.op == Op::DEPTHWISE_CONV2D) {
        p.depthwise = true;
        p.KH = w[0], p.KW = w[1], p.mult = w[3];
      } else {
        p.KH = w[1], p.KW = w[2];
      }
    }
  }
  if (std::string r = zero_point(g, n.inputs[3], p.in_t, "input_zp", p.izp); !r.empty()) return r;
  if (std::string r = zero_point(g, n.inputs[4], p.w_t, "weight_zp", p.wzp); !r.empty()) return r;
  const TensorType& bt = type_of(g, n.inputs[2]);
  if (bt.rank() != 1 || (bt.shape[0] != p.OC && bt.shape[0] != 1) || bt.dtype != p.out_t)
    return "the bias has neither 1 nor OC elements of the output type";
  p.bias_bcast = bt.shape[0] == 1 && p.OC != 1;
  if (std::string r = plan_window(g, c, p.win); !r.empty()) return r;
  if (c.scale_in >= 0) p.win.src = c.scale_in_source;  // A is x; the factor applies as it is loaded
  if (std::string r = plan_epilogue(g, c, p.ep); !r.empty()) return r;
  if (!p.ep.columns.empty()) {
    if (!const_tensor(g, n.inputs[2])) return "a per-channel constant is fused only where the bias is a constant";
    p.bias_bcast = false;  // spread over the columns in front of the per-channel constants
  }

  const Tensor* wc = const_tensor(g, n.inputs[1]);
  if (!is_float(p.in_t))
    if (std::string r = check_int_accumulation(p, {wc}, {const_tensor(g, n.inputs[2])}); !r.empty()) return r;

  // The tiled kernel adds 0 * w for taps outside the input, the reference skips them: equal unless
  // a weight is inf / NaN. Taps can fall outside with the convolution's own padding and in every
  // transposed convolution (a folded PAD's border is real data).
  bool skips = p.transpose;
  if (!p.transpose)
    for (int64_t q : n.attr_ints("pad")) skips |= q > 0;
  bool finite = !is_float(p.in_t) || !skips;
  if (!finite && wc) {
    finite = true;
    for (int64_t i = 0; i < wc->num_elements() && finite; ++i) finite = std::isfinite(wc->at_double(i));
  }
  p.gemm = !p.depthwise && finite && p.OC >= 4;
  if (p.gemm) {
    p.tile = pick_tile(p.pixels(), p.OC, p.K(), 1, p.acc, p.K() < 512, caps.compute_units);
    // Not where a squeeze-and-excitation MUL folds in front (scale_in): only the SIMT tiles scale A
    // as it loads, and the MUL apart plus the cooperative tile cost more than the fused SIMT GEMM
    // (MobileNetV3-L's 1x1 convolutions after an SE block in the fp16 mode on an H100: 0.022 ms of
    // MULs + 0.090 ms as CONV2D+ADD on tc_gemm64_coop, against 0.052 ms fused on the SIMT tile;
    // whole-model GPU time, MobileNetV3-L 0.687 -> 0.675 ms, EfficientNet-B0 0.970 -> 0.922).
    if (p.in_t == DType::kFp16 && p.w_t == DType::kFp16 && use_coop(caps) && c.scale_in < 0) {
      // Vectors: eight channels of one tap are contiguous (IC % 8), weights become [K][OC] (OC % 8).
      const bool vectors = !p.transpose && p.groups == 1 && p.IC % 8 == 0 && p.OC % 8 == 0 && wc != nullptr;
      p.acc = 0;
      p.tile = pick_fp16_tile(p.pixels(), p.OC, p.K(), 1, vectors, wc != nullptr, caps);
    }
    // A device below the tile's workgroup size or storage buffers runs the direct kernel (64
    // invocations, 5 buffers) instead.
    if (!check_tile_limits(p.tile, caps).empty()) p.gemm = false;
  }
  p.plain = p.gemm && !p.transpose && p.taps() == 1 && c.pad < 0 && p.sy == 1 && p.sx == 1 && p.sd == 1 &&
            p.pad_d == 0 && p.pad_y == 0 && p.pad_x == 0 && p.OH == p.VH && p.OW == p.VW && p.OD == p.VD;
  if (c.scale_in >= 0) {
    if (!p.plain || !simt_float_tile(p.tile) || !is_float(p.in_t) ||
        type_of(g, c.scale_in_source).dtype != p.in_t)
      return "a MUL by a factor per image and channel folds only into a 1x1 float convolution on the SIMT GEMM tiles";
    p.scale_in = true;
  }
  if (p.gemm) {
    if (gemm_steps(p.K(), p.tile, p.acc) > kLoopLimit) return "reduction of " + str(p.K()) + " elements is too long";
    return check_groups((p.OC + p.tile.bn - 1) / p.tile.bn, (p.pixels() + p.tile.bm - 1) / p.tile.bm, 1, caps);
  }
  if (p.taps() * (p.depthwise ? 2 : p.IC + 1) > kLoopLimit)
    return "direct convolution of " + str(p.taps()) + " taps x " + str(p.IC) + " channels per output is too long";
  return check_flat(p.pixels() * p.OC, caps);
}

std::string check_conv(const Graph& g, const Composite& c, const Caps& caps) {
  ConvPlan p;
  return plan_conv(g, c, caps, p);
}

// The weights as the tiled kernel's B matrix [K][OC]: [OC][K] transposed (floats keep their
// storage type, or become fp32 with `widen`; integers become int16 with the zero point subtracted).
std::vector<uint8_t> weights_k_oc(const Tensor& w, int64_t OC, int64_t K, int64_t wzp, bool integer, bool widen) {
  const size_t es = integer ? 2 : widen ? 4 : storage_size(w.dtype());
  std::vector<uint8_t> out(static_cast<size_t>(OC * K) * es);
  const uint8_t* src = w.bytes();
  for (int64_t oc = 0; oc < OC; ++oc) {
    for (int64_t k = 0; k < K; ++k) {
      const size_t to = static_cast<size_t>(k * OC + oc) * es;
      if (integer) {
        const int16_t v = static_cast<int16_t>(w.at_int(oc * K + k) - wzp);
        std::memcpy(out.data() + to, &v, 2);
      } else if (widen) {
        const float v = static_cast<float>(w.at_double(oc * K + k));
        std::memcpy(out.data() + to, &v, 4);
      } else {
        std::memcpy(out.data() + to, src + static_cast<size_t>(oc * K + k) * es, es);
      }
    }
  }
  return out;
}

// A grouped convolution's weights for tc_conv: the groups' [OCg][KH][KW][ICg] stacked along the
// output channels and reordered to [KH][KW][ICg][G * OCg]; and their biases stacked to [G * OCg] (a
// group's single broadcast bias repeated). Element bytes are copied as stored.
void grouped_operands(const Graph& g, const Composite& c, const ConvPlan& p, std::vector<uint8_t>& w,
                      std::vector<uint8_t>& b) {
  const int64_t G = p.groups, OCg = p.OC / G, ICg = p.IC / G, taps = p.taps();
  const size_t wes = storage_size(p.w_t), bes = storage_size(p.out_t);
  w.assign(static_cast<size_t>(taps * ICg * p.OC) * wes, 0);
  b.assign(static_cast<size_t>(p.OC) * bes, 0);
  for (int64_t k = 0; k < G; ++k) {
    const Node& cn = g.node(c.group_convs[static_cast<size_t>(k)]);
    const Tensor& wk = *const_tensor(g, cn.inputs[1]);
    const Tensor& bk = *const_tensor(g, cn.inputs[2]);
    for (int64_t o = 0; o < OCg; ++o) {
      const int64_t oc = k * OCg + o;
      for (int64_t t = 0; t < taps; ++t)
        for (int64_t ci = 0; ci < ICg; ++ci)
          std::memcpy(w.data() + static_cast<size_t>((t * ICg + ci) * p.OC + oc) * wes,
                      wk.bytes() + static_cast<size_t>((o * taps + t) * ICg + ci) * wes, wes);
      std::memcpy(b.data() + static_cast<size_t>(oc) * bes,
                  bk.bytes() + static_cast<size_t>(bk.num_elements() == 1 ? 0 : o) * bes, bes);
    }
  }
}

void lower_conv(Lowering& l, const Composite& c) {
  ConvPlan p;
  if (std::string r = plan_conv(l.graph, c, l.caps, p); !r.empty()) l.fail(r);
  const Node& n = l.n();
  if (p.pixels() == 0 || p.OC == 0) return;
  const ValueId x = p.win.src, w = n.inputs[1], bias = n.inputs[2];
  Arg w_arg = l.in(w), bias_arg = l.in(bias);
  if (p.groups > 1) {
    std::vector<uint8_t> wb, bb;
    grouped_operands(l.graph, c, p, wb, bb);
    w_arg = l.data(std::move(wb));
    if (!p.ep.columns.empty()) bb = column_block(l.graph, p.ep, bb.data(), p.OC, p.out_t);
    bias_arg = l.data(std::move(bb));
  } else if (!p.ep.columns.empty()) {
    bias_arg = column_arg(l, p.ep, l.constant(bias), p.out_t);
  }
  const Arg residual = l.in(p.ep.residual != kNoValue ? p.ep.residual : x);
  const bool integer = !is_float(p.in_t);
  Spec s;
  epilogue_spec(s, p.ep);
  if (p.gemm) {
    Arg b = l.in(w);
    int64_t b_k = 1, b_n = p.K(), b_zp = p.wzp;
    DType b_t = p.w_t;
    if (const Tensor* wc = l.constant(w)) {
      // fp16 weights for the SIMT tiles are widened to fp32 once here (exact): on an H200 those
      // tiles ran fp16 operands at half their fp32 speed, converting every element they stage.
      const bool widen = p.w_t == DType::kFp16 && std::string_view(p.tile.shader).find("_coop") == std::string_view::npos;
      b = l.data(weights_k_oc(*wc, p.OC, p.K(), p.wzp, integer, widen));
      b_k = p.OC, b_n = 1, b_zp = 0;
      if (integer) b_t = DType::kInt16;
      if (widen) b_t = DType::kFp32;
    }
    // A 1x1 convolution with unit strides and no padding reads the input as A [pixels][IC].
    const bool plain = p.plain;
    if (p.scale_in) {
      s.set(74, 1);
      s.set(75, p.OD * p.OH * p.OW);  // A rows (pixels) per image
    }
    s.set(0, code(p.in_t));
    s.set(1, code(b_t));
    s.set(2, code(p.out_t));
    s.set(3, code(type_of(l.graph, p.ep.residual != kNoValue ? p.ep.residual : x).dtype));
    s.set(4, code(p.out_t));
    s.set(5, p.pixels());
    s.set(6, p.OC);
    s.set(7, p.K());
    s.set(8, 0);
    s.set(9, p.IC);
    s.set(10, 0);
    s.set(11, b_k);
    s.set(12, b_n);
    s.set(13, p.izp);
    s.set(14, b_zp);
    s.set(15, p.acc == 1);
    s.set(16, 1);
    s.set(17, p.bias_bcast);
    s.set(18, plain ? 0 : p.transpose ? 2 : 1);
    s.set(19, p.IC);
    s.set(20, p.KD);
    s.set(21, p.KH);
    s.set(22, p.KW);
    s.set(23, p.OD);
    s.set(24, p.OH);
    s.set(25, p.OW);
    s.set(26, p.VD);
    s.set(27, p.VH);
    s.set(28, p.VW);
    s.set(29, p.win.SH);
    s.set(30, p.win.SW);
    s.set(31, p.win.PT);
    s.set(32, p.win.PL);
    s.set(33, p.sd);
    s.set(34, p.sy);
    s.set(35, p.sx);
    s.set(36, p.dd);
    s.set(37, p.dy);
    s.set(38, p.dx);
    s.set(39, p.win.fill);
    s.set(56, p.pad_d);
    s.set(57, p.pad_y);
    s.set(58, p.pad_x);
    emit_gemm(l, p.tile, p.acc, p.pixels(), p.OC, p.K(), 1, std::move(s), l.in(x), b, bias_arg, residual,
              l.out(p.ep.result), p.scale_in ? std::optional<Arg>(l.in(c.scale_in_factor)) : std::nullopt);
    return;
  }
  s.set(0, code(p.in_t));
  s.set(1, code(p.w_t));
  s.set(2, code(p.out_t));
  s.set(3, code(type_of(l.graph, p.ep.residual != kNoValue ? p.ep.residual : x).dtype));
  s.set(4, code(p.out_t));
  s.set(5, p.acc);
  s.set(6, p.depthwise ? 2 : p.transpose ? 1 : 0);
  s.set(7, p.IC);
  s.set(8, p.OC);
  s.set(9, p.mult);
  s.set(10, p.KD);
  s.set(11, p.KH);
  s.set(12, p.KW);
  s.set(13, p.OD);
  s.set(14, p.OH);
  s.set(15, p.OW);
  s.set(16, p.VD);
  s.set(17, p.VH);
  s.set(18, p.VW);
  s.set(19, p.win.SH);
  s.set(20, p.win.SW);
  s.set(21, p.win.PT);
  s.set(22, p.win.PL);
  s.set(23, p.sd);
  s.set(24, p.sy);
  s.set(25, p.sx);
  s.set(26, p.dd);
  s.set(27, p.dy);
  s.set(28, p.dx);
  s.set(29, p.pad_d);
  s.set(30, p.pad_y);
  s.set(31, p.pad_x);
  s.set(32, p.win.fill);
  s.set(33, p.izp);
  s.set(34, p.wzp);
  s.set(35, p.bias_bcast);
  // Depthwise, float accumulation, stride and dilation 1 along x: XB outputs along x per invocation
  // (tc_conv's depthwise_rows). On an H100, ConvNeXt-T's eighteen 7 x 7 layers took 0.270 ms of GPU
  // time with one output per invocation, 0.129 with two, 0.146 with four, 0.181 with eight;
  // MobileNetV2's and EfficientNet-B0's 3 x 3 / 5 x 5 layers 0.105 / 0.131 ms with one, 0.087 /
  // 0.112 with four (two: within 1%).
  const int64_t xb = p.depthwise && p.acc <= 1 && p.sx == 1 && p.dx == 1 && !p.transpose
                         ? std::min<int64_t>(p.KW >= 7 ? 2 : 4, p.OW)
                         : 1;
  const int64_t invocations = p.pixels() / p.OW * ((p.OW + xb - 1) / xb) * p.OC;
  s.set(36, invocations);
  s.set(37, p.groups);
  s.set(38, xb);
  l.dispatch("tc_conv", std::move(s.v), {l.in(x), w_arg, bias_arg, residual, l.out(p.ep.result)},
             l.grid(static_cast<uint64_t>(invocations)));
}

// ---- MATMUL ---------------------------------------------------------------------------------------

struct MatmulPlan {
  int64_t N = 0, H = 0, C = 0, W = 0;
  // The operands as read: the value bound and its view ([N, H, C] and [N, C, W] strides, offset).
  ValueId a_src = kNoValue, b_src = kNoValue;
  compiler::StridedView av, bv;
  // The destination: contiguous, or (out_view) a strided view of the RESHAPE / TRANSPOSE chain's result.
  std::optional<compiler::StridedView> dv;
  DType in_t{}, out_t{};
  int acc = 0;
  int64_t azp = 0, bzp = 0;
  Epilogue ep;
  Tile tile{};
  bool b_nk = false;  // tc_gemm_wide.glsl's B_NK: B read as vectors along k
  bool gemv = false;  // tc_gemv (a matrix-vector product) instead of the tile
};

std::string plan_matmul(const Graph& g, const Composite& c, const Caps& caps, MatmulPlan& p) {
  const Node& n = g.node(c.anchor);
  const Shape& a = type_of(g, n.inputs[0]).shape;
  const Shape& b = type_of(g, n.inputs[1]).shape;
  p.N = a[0], p.H = a[1], p.C = a[2], p.W = b[2];
  // Operands reached through TRANSPOSE / RESHAPE / SLICE chains are read in place (attention's
  // head split, K^T, a fused QKV projection's slices), as strides and an offset of the source.
  auto view = [&](const std::vector<int>& chain, ValueId v, ValueId& src, compiler::StridedView& out) {
    src = chain.empty() ? v : g.node(chain.front()).inputs[0];
    auto sv = chain.empty() ? std::optional<compiler::StridedView>(compiler::StridedView::contiguous(type_of(g, v).shape))
                            : compiler::forward_chain(g, chain, true);
    if (!sv || sv->dims.size() != 3) return false;
    out = *sv;
    return true;
  };
  if (!view(c.a_view, n.inputs[0], p.a_src, p.av) || !view(c.b_view, n.inputs[1], p.b_src, p.bv))
    return "a MATMUL operand view that is not three strided dimensions";
  if (p.av.strides[2] != 1) return "A read through a view whose reduction axis is not contiguous";
  if (!c.out_view.empty()) {
    p.dv = compiler::backward_chain(g, c.out_view, true);
    if (!p.dv || p.dv->dims.size() != 3 || p.dv->strides[2] != 1 || p.dv->offset != 0)
      return "a MATMUL destination view that is not three strided dimensions with contiguous columns";
    for (int64_t st : {p.dv->strides[0], p.dv->strides[1], p.dv->outer})
      if (st < 0 || st > std::numeric_limits<int32_t>::max()) return "a MATMUL destination view beyond 32-bit shader indexing";
  }
  for (const compiler::StridedView* v : {&p.av, &p.bv}) {
    std::vector<int64_t> strides = v->strides;
    strides.push_back(v->outer);
    for (int64_t st : strides)
      if (st < 0 || st > std::numeric_limits<int32_t>::max() || v->offset > std::numeric_limits<int32_t>::max())
        return "a MATMUL operand view beyond 32-bit shader indexing";
  }
  p.in_t = type_of(g, n.inputs[0]).dtype;
  p.out_t = type_of(g, n.outputs[0]).dtype;
  if (std::string r = zero_point(g, n.inputs[2], p.in_t, "A_zp", p.azp); !r.empty()) return r;
  if (std::string r = zero_point(g, n.inputs[3], p.in_t, "B_zp", p.bzp); !r.empty()) return r;
  if (std::string r = plan_epilogue(g, c, p.ep); !r.empty()) return r;
  if (p.dv) p.ep.result = g.node(c.out_view.back()).outputs[0];
  if (is_float(p.in_t)) {
    p.acc = p.out_t == DType::kFp16 ? 1 : 0;  // out_t is acc_t
  } else {
    p.acc = p.out_t == DType::kInt32 ? 2 : 3;
    int64_t max_b = int_span(p.in_t, p.bzp);
    if (const Tensor* bc = const_tensor(g, n.inputs[1])) {
      max_b = 0;
      for (int64_t i = 0; i < bc->num_elements(); ++i) max_b = std::max(max_b, std::abs(bc->at_int(i) - p.bzp));
    }
    const double bound =
        static_cast<double>(p.C) * static_cast<double>(int_span(p.in_t, p.azp)) * static_cast<double>(max_b);
    if (bound > static_cast<double>(int_max(p.out_t)))
      return "the accumulator could reach " + str(static_cast<int64_t>(bound)) + ", beyond " + dtype_name(p.out_t) +
             " (the reference checks every addition)";
  }
  p.tile = pick_tile(p.H, p.W, p.C, p.N, p.acc, p.C < 256, caps.compute_units);
  if (p.in_t == DType::kFp16 && use_coop(caps)) {
    // Vectors of eight halves: A along k; B along n, or along k where B is a transposed view with
    // k contiguous (attention's K^T: the 64 x 64 / 128 x 128 tiles then stage it as [n][k]).
    const bool b_along_n = p.bv.strides[2] == 1 && p.W % 8 == 0;
    const bool b_along_k = !b_along_n && p.bv.strides[1] == 1;
    bool vectors = p.C % 8 == 0 && (b_along_n || b_along_k);
    for (int64_t v : {p.av.strides[0], p.av.strides[1], p.av.offset, p.av.outer, p.bv.strides[0],
                      b_along_n ? p.bv.strides[1] : p.bv.strides[2], p.bv.offset, p.bv.outer})
      vectors = vectors && v % 8 == 0;
    p.acc = 0;
    p.tile = pick_fp16_tile(p.H, p.W, p.C, p.N, vectors, const_tensor(g, p.b_src) != nullptr, caps, b_along_k);
    const std::string_view sh(p.tile.shader);
    p.b_nk = vectors && b_along_k && (sh == "tc_gemm128_coop" || sh == "tc_gemm64_coop" || sh == "tc_gemm256_coop");
  }
  // A batch-1 product of up to four rows whose B has k contiguous (a Linear layer's weights read as
  // W^T in place) reads B once as 16-byte vectors (tc_gemv): on an H100, fp32, VGG-11's 25088 x
  // 4096 classifier layer took 1.76 ms on the 32 tile, AlexNet's 9216 x 4096 1.14 ms.
  p.gemv = p.N == 1 && p.H <= 4 && p.W >= 256 && p.C >= 256 && p.acc == 0 && !p.dv &&
           (p.in_t == DType::kFp32 || p.in_t == DType::kFp16) && p.bv.strides[1] == 1 && p.C % 4 == 0 &&
           p.av.offset % 4 == 0 && p.av.strides[1] % 4 == 0 && p.bv.offset % 4 == 0 && p.bv.strides[2] % 4 == 0 &&
           caps.max_invocations >= 256 && caps.max_shared_bytes >= 12288;
  if (p.gemv) return check_groups((p.W + 7) / 8, 1, 1, caps);
  if (std::string r = check_tile_limits(p.tile, caps); !r.empty()) return r;
  if (gemm_steps(p.C, p.tile, p.acc) > kLoopLimit) return "reduction of " + str(p.C) + " elements is too long";
  return check_groups((p.W + p.tile.bn - 1) / p.tile.bn, (p.H + p.tile.bm - 1) / p.tile.bm, p.N, caps);
}

std::string check_matmul(const Graph& g, const Composite& c, const Caps& caps) {
  MatmulPlan p;
  return plan_matmul(g, c, caps, p);
}

// lower_matmul, with the split GEMM's second pass given by `second` (lower_matmul_layer_norm).
void emit_matmul(Lowering& l, const Composite& c, const SecondPass& second) {
  MatmulPlan p;
  if (std::string r = plan_matmul(l.graph, c, l.caps, p); !r.empty()) l.fail(r);
  if (p.N * p.H * p.W == 0) return;
  const ValueId a = p.a_src, b = p.b_src;
  const ValueId bias = p.ep.bias != kNoValue ? p.ep.bias : a, res = p.ep.residual != kNoValue ? p.ep.residual : a;
  Spec s;
  epilogue_spec(s, p.ep);
  // A constant fp16 B for the SIMT tiles is widened to fp32 once here (exact), as convolution
  // weights are (see lower_conv): BERT's batch-1 projections.
  Arg b_arg = l.in(b);
  DType b_t = p.in_t;
  const bool gemv = p.gemv && !second;  // (a fused second pass needs the split tile)
  if (const Tensor* bc = l.constant(b); bc && !gemv && p.in_t == DType::kFp16 &&
                                        std::string_view(p.tile.shader).find("_coop") == std::string_view::npos) {
    std::vector<float> wide(static_cast<size_t>(bc->num_elements()));
    for (size_t i = 0; i < wide.size(); ++i) wide[i] = static_cast<float>(bc->at_double(static_cast<int64_t>(i)));
    b_arg = l.data_of(wide);
    b_t = DType::kFp32;
  }
  s.set(0, code(p.in_t));
  s.set(1, code(b_t));
  s.set(2, code(p.ep.columns.empty() ? type_of(l.graph, bias).dtype : p.out_t));  // column_block's type
  s.set(3, code(type_of(l.graph, res).dtype));
  s.set(4, code(p.out_t));
  s.set(5, p.H);
  s.set(6, p.W);
  s.set(7, p.C);
  s.set(8, p.av.strides[0]);
  s.set(9, p.av.strides[1]);
  s.set(10, p.bv.strides[0]);
  s.set(11, p.bv.strides[1]);
  s.set(12, p.bv.strides[2]);
  s.set(62, p.av.offset);
  s.set(63, p.bv.offset);
  s.set(65, p.av.split > 1 ? p.av.split : 0);  // a split batch axis (attention's heads of a batch)
  s.set(66, p.av.outer);
  s.set(67, p.bv.split > 1 ? p.bv.split : 0);
  s.set(68, p.bv.outer);
  if (p.b_nk) s.set(76, 1);
  if (p.dv) {
    s.set(69, 1);
    s.set(70, p.dv->strides[0]);
    s.set(71, p.dv->strides[1]);
    s.set(72, p.dv->split > 1 ? p.dv->split : 0);
    s.set(73, p.dv->outer);
  }
  s.set(13, p.azp);
  s.set(14, p.bzp);
  s.set(15, p.acc == 1);
  gemm_geometry_defaults(s);
  const Arg bias_arg = p.ep.columns.empty() ? l.in(bias)
                                             : column_arg(l, p.ep, p.ep.bias != kNoValue ? l.constant(p.ep.bias) : nullptr, p.out_t);
  if (gemv) {
    l.dispatch("tc_gemv", std::move(s.v), {l.in(a), b_arg, bias_arg, l.in(res), l.out(p.ep.result)},
               {static_cast<uint32_t>((p.W + 7) / 8), 1, 1});
    return;
  }
  emit_gemm(l, p.tile, p.acc, p.H, p.W, p.C, p.N, std::move(s), l.in(a), b_arg, bias_arg, l.in(res),
            second ? l.scratch(4, true) : l.out(p.ep.result), std::nullopt, second);
}

void lower_matmul(Lowering& l, const Composite& c) { emit_matmul(l, c, nullptr); }

// ---- Pooling ---------------------------------------------------------------------------------------

struct PoolPlan {
  int64_t N = 1, VH = 1, VW = 1, C = 1, OH = 1, OW = 1, KY = 1, KX = 1, SY = 1, SX = 1, PT = 0, PL = 0;
  bool avg = false;
  DType t{};
  int acc = 0;
  bool nan_ignore = false;
  int64_t izp = 0, ozp = 0;
  Window win;
};

std::string plan_pool(const Graph& g, const Composite& c, const Caps& caps, PoolPlan& p) {
  const Node& n = g.node(c.anchor);
  if (!c.post_ops.empty()) return "fused operations after pooling are not lowered";
  const Shape& in = type_of(g, n.inputs[0]).shape;
  const Shape& out = type_of(g, n.outputs[0]).shape;
  const auto& k = n.attr_ints("kernel");
  const auto& st = n.attr_ints("stride");
  const auto& pad = n.attr_ints("pad");
  p.N = in[0], p.VH = in[1], p.VW = in[2], p.C = in[3], p.OH = out[1], p.OW = out[2];
  p.KY = k[0], p.KX = k[1], p.SY = st[0], p.SX = st[1], p.PT = pad[0], p.PL = pad[2];
  p.t = type_of(g, n.inputs[0]).dtype;
  p.avg = n.op == Op::AVG_POOL2D;
  if (p.avg) {
    p.acc = acc_code(acc_of(n));
    if (std::string r = zero_point(g, n.inputs[1], p.t, "input_zp", p.izp); !r.empty()) return r;
    if (std::string r = zero_point(g, n.inputs[2], p.t, "output_zp", p.ozp); !r.empty()) return r;
    // The int32 sum of (x - input_zp) over a window never overflows (the reference REQUIREs it).
    if (!is_float(p.t) && static_cast<double>(p.KY * p.KX) * static_cast<double>(int_span(p.t, p.izp)) >
                              static_cast<double>(std::numeric_limits<int32_t>::max()))
      return "an AVG_POOL2D window sum could overflow int32";
  } else {
    p.nan_ignore = n.attr_int("nan_mode") == static_cast<int64_t>(NanMode::kIgnore);
  }
  if (std::string r = plan_window(g, c, p.win); !r.empty()) return r;
  if (p.KY * p.KX > kLoopLimit) return "a pooling window of " + str(p.KY * p.KX) + " elements is too large";
  return check_flat(p.N * p.OH * p.OW * p.C, caps);
}

std::string check_pool(const Graph& g, const Composite& c, const Caps& caps) {
  PoolPlan p;
  return plan_pool(g, c, caps, p);
}

void lower_pool(Lowering& l, const Composite& c) {
  PoolPlan p;
  if (std::string r = plan_pool(l.graph, c, l.caps, p); !r.empty()) l.fail(r);
  const int64_t total = p.N * p.OH * p.OW * p.C;
  if (total == 0) return;
  if (p.avg && is_float(p.t) && p.acc == 0 && p.OH == 1 && p.OW == 1 && p.KY == p.VH && p.KX == p.VW && p.PT == 0 &&
      p.PL == 0 && p.win.src == l.n().inputs[0]) {
    // A global average pooling (squeeze-and-excitation blocks): one invocation per output would
    // loop over the whole image (RegNetY-400MF's 17 pools took 1.43 of 2.51 ms on an H200); as a
    // parallel fp32 sum divided by the count it runs at memory speed. Same accumulator type as
    // the reference; the summation order differs.
    emit_mean(l, p.t, l.in(p.win.src), l.out(l.n().outputs[0]), p.N, p.VH * p.VW, p.C);
    return;
  }
  Spec s;
  s.set(0, code(p.t));
  s.set(1, p.avg);
  s.set(2, p.acc == 1);
  s.set(3, p.nan_ignore);
  s.set(4, p.C);
  s.set(5, p.OH);
  s.set(6, p.OW);
  s.set(7, p.VH);
  s.set(8, p.VW);
  s.set(9, p.win.SH);
  s.set(10, p.win.SW);
  s.set(11, p.win.PT);
  s.set(12, p.win.PL);
  s.set(13, p.KY);
  s.set(14, p.KX);
  s.set(15, p.SY);
  s.set(16, p.SX);
  s.set(17, p.PT);
  s.set(18, p.PL);
  s.set(19, p.win.fill);
  s.set(20, p.izp);
  s.set(21, p.ozp);
  s.set(22, total);
  s.set(23, is_float(p.t) ? 0 : int_min(p.t));
  s.set(24, is_float(p.t) ? 0 : int_max(p.t));
  l.dispatch("tc_pool", std::move(s.v), {l.in(p.win.src), l.out(l.n().outputs[0])},
             l.grid(static_cast<uint64_t>(total)));
}

// ---- Fused attention (mx_attention.comp; fp16 on cooperative matrices: mx_attention_coop.comp) -----

struct AttentionPlan {
  MatmulPlan qk, pv;
  int64_t BH = 0, LQ = 0, LK = 0, D = 0;
  float scale = 1.0f;
  bool has_scale = false;
  int mask = 0;  // mx_attention's MASK: 0 none, 1 added after the scale, 2 before it
  int32_t mask_bc = 1, mask_c = 1;  // how score o reads the mask: (o / mask_bc) * mask_c + o % mask_c
  bool coop = false;  // mx_attention_coop (fp16 on cooperative matrices) rather than mx_attention
  int64_t SP = 0, PP = 0;  // mx_attention_coop's shared row pitches (floats, 8-half vectors)
};

// Whether mx_attention_coop takes the attention `p` plans: its fragments are 16 x 16 (rows of 16
// bytes, loaded from memory in place; a partial last block of queries or keys is staged in shared
// memory, zero-padded), it holds a block's scores whole in shared memory and its softmax keeps up to
// 32 of a row's scores per invocation (eight per row).
std::string plan_coop_attention(AttentionPlan& p, const Caps& caps) {
  const int64_t lkp = (p.LK + 15) / 16 * 16;
  if (p.D % 16 != 0 || p.D > 128 || lkp > 256)
    return "the fused kernel needs a head size (" + str(p.D) + ") that is a multiple of 16 of at most 128 and at most 256 keys (" +
           str(p.LK) + ")";
  const compiler::StridedView &q = p.qk.av, &k = p.qk.bv, &v = p.pv.bv;
  auto rows8 = [](const compiler::StridedView& w, int64_t row) {
    return w.offset % 8 == 0 && w.strides[0] % 8 == 0 && row % 8 == 0 && (w.split <= 1 || w.outer % 8 == 0);
  };
  if (!rows8(q, q.strides[1]) || k.strides[1] != 1 || !rows8(k, k.strides[2]) || v.strides[2] != 1 ||
      !rows8(v, v.strides[1]))
    return "the fused kernel reads Q, K and V in 16-byte rows along the head (d contiguous, offsets and strides "
           "multiples of 8)";
  p.SP = std::max(lkp, p.D) + 4;
  p.PP = lkp / 8 + 1;
  // Ss and Ps, then the staged partial blocks Tq, Tk and Tv (16 rows of D halves, or one vector).
  const int64_t block = 16 * p.D * 2;
  const int64_t shared = 16 * p.SP * 4 + 16 * p.PP * 16 + (p.LQ % 16 != 0 ? block : 16) + 2 * (p.LK % 16 != 0 ? block : 16);
  if (shared > static_cast<int64_t>(caps.max_shared_bytes))
    return "the fused kernel needs " + str(shared) + " bytes of shared memory for " + str(p.LK) + " keys, the device has " +
           str(caps.max_shared_bytes);
  return check_groups((p.LQ + 15) / 16, p.BH, 1, caps);
}

// Whether every reader of `v` is one of `nodes` (ascending) and `v` is no graph output.
bool read_only_by(const Graph& g, ValueId v, const std::vector<int>& nodes) {
  for (ValueId o : g.outputs())
    if (o == v) return false;
  for (int ni = 0; ni < static_cast<int>(g.nodes().size()); ++ni) {
    const Node& n = g.node(ni);
    if (std::find(n.inputs.begin(), n.inputs.end(), v) != n.inputs.end() &&
        !std::binary_search(nodes.begin(), nodes.end(), ni))
      return false;
  }
  return true;
}

std::string plan_attention(const Graph& g, const Composite& qk, const Composite& sm, const Composite& pv,
                           const std::vector<int>& aliases, const Caps& caps, AttentionPlan& p) {
  if (qk.anchor < 0 || pv.anchor < 0 || g.node(qk.anchor).op != Op::MATMUL || g.node(pv.anchor).op != Op::MATMUL ||
      sm.region != Composite::Region::kSoftmax)
    return "not MATMUL, SOFTMAX, MATMUL";
  if (!pv.post_ops.empty()) return "the second MATMUL has fused operations";
  int scales = 0, masks = 0;
  for (const PostOp& op : qk.post_ops) {
    scales += op.kind == PostOp::Kind::kScale;
    // A mask of the scores' own shape (a causal [1,1,S,S] with one head, a per-head bias) is a
    // residual post-op to the GEMM: here it is a mask read at the score's own index.
    masks += op.kind == PostOp::Kind::kMask || op.kind == PostOp::Kind::kResidual;
  }
  if (scales > 1 || masks > 1 || scales + masks != static_cast<int>(qk.post_ops.size()))
    return "the scores take fused operations other than one SCALE and one ADD (a mask)";
  if (std::string r = plan_matmul(g, qk, caps, p.qk); !r.empty()) return r;
  if (std::string r = plan_matmul(g, pv, caps, p.pv); !r.empty()) return r;
  const DType t = p.qk.in_t;
  if ((t != DType::kFp32 && t != DType::kFp16) || p.qk.out_t != t || p.pv.in_t != t || p.pv.out_t != t)
    return "attention is fused for fp32 and fp16 operands and results of one type";
  // fp16 on cooperative matrices runs mx_attention_coop: the SIMT kernel had been slower there than
  // the two tensor-core GEMMs and the softmax (H100, BERT b32 0.67 -> 0.74 ms of device time).
  p.coop = t == DType::kFp16 && use_coop(caps);
  for (const PostOp& op : qk.post_ops) {
    if (op.kind == PostOp::Kind::kMask || op.kind == PostOp::Kind::kResidual) {
      p.mask = p.has_scale ? 1 : 2;  // (plan_matmul checked its shape: p.qk.ep)
      // A residual: every score its own element, index (o / 1) * 1 + o % 1 = o.
      if (op.kind == PostOp::Kind::kMask) p.mask_bc = p.qk.ep.mask_bc, p.mask_c = p.qk.ep.mask_c;
      continue;
    }
    const std::optional<double> f = const_scalar(g, op.operand);
    if (!f) return "the scores' SCALE is not one value";
    p.scale = static_cast<float>(*f);
    p.has_scale = true;
  }
  if (p.mask == 2 && !p.has_scale) p.mask = 1;  // (no scale: "after" it)
  // The softmax reads the scores over their last axis, and the second MATMUL reads its result as
  // [batch, queries, keys] in memory order; RESHAPEs (`aliases`, same bytes) may stand between them.
  auto follow = [&](ValueId v) {
    for (bool moved = true; moved;) {
      moved = false;
      for (int a : aliases)
        if (g.node(a).inputs[0] == v) {
          if (!read_only_by(g, v, {a})) return kNoValue;
          v = g.node(a).outputs[0];
          moved = true;
          break;
        }
    }
    return v;
  };
  p.BH = p.qk.N, p.LQ = p.qk.H, p.LK = p.qk.W, p.D = p.qk.C;
  const ValueId scores = p.qk.ep.result, probs = sm.outputs.size() == 1 ? sm.outputs[0] : kNoValue;
  const TensorType& st = type_of(g, sm.source);
  if (sm.source != follow(scores) || sm.axis != st.rank() - 1 || st.shape.back() != p.LK ||
      shape_elements(st.shape) != p.BH * p.LQ * p.LK || probs == kNoValue || type_of(g, probs) != st)
    return "the SOFTMAX is not over the scores' last axis";
  if (p.pv.a_src != follow(probs) || p.pv.N != p.BH || p.pv.H != p.LQ || p.pv.C != p.LK || p.pv.W != p.D)
    return "the second MATMUL does not multiply the probabilities by a [keys, head] matrix";
  const compiler::StridedView& pa = p.pv.av;
  if (pa.offset != 0 || pa.split > 1 || pa.strides != std::vector<int64_t>{p.LQ * p.LK, p.LK, 1})
    return "the second MATMUL reads the probabilities through a reordering view";
  // (follow checked the values between.)
  if (!read_only_by(g, sm.source, sm.nodes) || !read_only_by(g, p.pv.a_src, pv.nodes))
    return "the scores or probabilities are read elsewhere";
  if (p.LQ < 1 || p.LK < 1) return "no queries or keys";
  if (p.coop) {
    if (std::string r = plan_coop_attention(p, caps); !r.empty())
      return "fp16 attention runs on the cooperative-matrix GEMMs: " + r;
    return {};
  }
  if (p.D % 32 != 0 || p.D > 128) return "head size " + str(p.D) + " is not a multiple of 32 up to 128";
  if ((p.LK + 31) / 32 > kLoopLimit) return str(p.LK) + " keys: too many tiles for the shader's loop bound";
  if (caps.max_invocations < 128) return "the device runs fewer than 128 invocations per workgroup";
  const int64_t shared = p.D * (17 * 8 + 9 * 16 + 32 * 4) + 32 * 17 * 8 + 32 * 8 * 4;  // mx_attention.comp
  if (shared > static_cast<int64_t>(caps.max_shared_bytes))
    return "needs " + str(shared) + " bytes of shared memory, the device has " + str(caps.max_shared_bytes);
  return check_groups((p.LQ + 31) / 32, p.BH, 1, caps);
}

}  // namespace

std::string check_attention(const Graph& g, const Composite& qk, const Composite& sm, const Composite& pv,
                            const std::vector<int>& aliases, const Caps& caps) {
  if (const char* e = std::getenv("WEFT_VULKAN_ATTENTION"); e && std::string_view(e) == "off") return "WEFT_VULKAN_ATTENTION=off";
  AttentionPlan p;
  return plan_attention(g, qk, sm, pv, aliases, caps, p);
}

void lower_attention(Lowering& l, const Composite& qk, const Composite& sm, const Composite& pv,
                     const std::vector<int>& aliases) {
  AttentionPlan p;
  if (std::string r = plan_attention(l.graph, qk, sm, pv, aliases, l.caps, p); !r.empty()) l.fail(r);
  const compiler::StridedView &q = p.qk.av, &k = p.qk.bv, &v = p.pv.bv;
  const std::optional<compiler::StridedView>& o = p.pv.dv;
  auto split = [](const compiler::StridedView& w) { return w.split > 1 ? w.split : 0; };
  const ValueId mask = p.mask != 0 ? p.qk.ep.residual : p.qk.a_src;  // (bound but not read without one)
  const std::vector<Arg> args = {l.in(p.qk.a_src), l.in(p.qk.b_src), l.in(p.pv.b_src), l.out(p.pv.ep.result), l.in(mask)};
  Spec s;
  // A view from id `at` on: its offset, the strides named by `axes`, split and outer.
  auto put = [&](int at, const compiler::StridedView& w, std::initializer_list<int> axes) {
    s.set(at++, w.offset);
    for (int i : axes) s.set(at++, w.strides[static_cast<size_t>(i)]);
    s.set(at++, split(w));
    s.set(at, w.outer);
  };
  // Constants 0..5 are the same in both kernels.
  s.set(0, code(p.qk.in_t));
  s.set(1, p.LQ);
  s.set(2, p.LK);
  s.set(3, p.D);
  s.set(4, f32_bits(p.scale));
  s.set(5, p.has_scale ? 1 : 0);
  if (p.coop) {
    put(6, q, {0, 1});   // Q: batch and row strides (d contiguous)
    put(11, k, {0, 2});  // K^T: batch and key strides (d contiguous)
    put(16, v, {0, 1});  // V: batch and key strides (d contiguous)
    s.set(21, o ? o->strides[0] : p.LQ * p.D);
    s.set(22, o ? o->strides[1] : p.D);
    s.set(23, o ? split(*o) : 0);
    s.set(24, o ? o->outer : 0);
    s.set(25, p.mask);
    s.set(26, p.mask_bc);
    s.set(27, p.mask_c);
    s.set(28, p.SP);
    s.set(29, p.PP);
    l.dispatch("mx_attention_coop", std::move(s.v), args,
               {static_cast<uint32_t>((p.LQ + 15) / 16), static_cast<uint32_t>(p.BH), 1});
    return;
  }
  put(6, q, {0, 1});      // Q: batch and row strides (d contiguous)
  put(11, k, {0, 1, 2});  // K^T: batch, d and key strides
  put(17, v, {0, 1, 2});  // V: batch, key and d strides
  s.set(23, o ? o->strides[0] : p.LQ * p.D);
  s.set(24, o ? o->strides[1] : p.D);
  s.set(25, o ? split(*o) : 0);
  s.set(26, o ? o->outer : 0);
  // 4-element vectors along the head dimension where it is contiguous and every offset aligned.
  auto aligned = [](const compiler::StridedView& w, int64_t row) {
    bool ok = w.offset % 4 == 0 && w.strides[0] % 4 == 0 && row % 4 == 0;
    return ok && (w.split <= 1 || w.outer % 4 == 0);
  };
  const bool kvec = k.strides[1] == 1 && aligned(k, k.strides[2]);
  const bool vvec = v.strides[2] == 1 && aligned(v, v.strides[1]);
  s.set(27, (kvec ? 1 : 0) | (vvec ? 2 : 0));
  s.set(28, p.mask);
  s.set(29, p.mask_bc);
  s.set(30, p.mask_c);
  l.dispatch("mx_attention", std::move(s.v), args, {static_cast<uint32_t>((p.LQ + 31) / 32), static_cast<uint32_t>(p.BH), 1});
}

// ---- A split GEMM's second pass fused with the layer norm after it (tc_splitk_ln.comp) -------------

std::string check_matmul_layer_norm(const Graph& g, const Composite& mm, const Composite& ln, const Caps& caps) {
  if (const char* e = std::getenv("WEFT_VULKAN_GEMM_LN"); e && std::string_view(e) == "off") return "WEFT_VULKAN_GEMM_LN=off";
  if (mm.anchor < 0 || g.node(mm.anchor).op != Op::MATMUL || ln.region != Composite::Region::kLayerNorm)
    return "not a MATMUL and a LAYER_NORM";
  MatmulPlan p;
  if (std::string r = plan_matmul(g, mm, caps, p); !r.empty()) return r;
  if (std::string r = check_layer_norm(g, ln, caps); !r.empty()) return r;
  if (p.acc != 0 || p.dv) return "the GEMM accumulates in fp16 or writes through a view";
  if (gemm_split(p.tile, p.acc, p.H, p.W, p.C, p.N, caps).first < 2) return "the GEMM is not split over K";
  const TensorType& t = type_of(g, ln.source);
  if (ln.source != p.ep.result || t.shape.back() != p.W) return "the LAYER_NORM does not normalize the GEMM's rows";
  if (!read_only_by(g, ln.source, ln.nodes)) return "the GEMM's result is read elsewhere or is a graph output";
  // (tc_splitk_ln reads each row once: it must stay in registers.)
  if (p.W > row_norm_max_cached(caps)) return "rows of " + str(p.W) + " are too long for one workgroup's registers";
  return {};
}

void lower_matmul_layer_norm(Lowering& l, const Composite& mm, const Composite& ln) {
  if (std::string r = check_matmul_layer_norm(l.graph, mm, ln, l.caps); !r.empty()) l.fail(r);
  emit_matmul(l, mm, [&](const Spec& gemm, const Arg& part, const Arg& bias, const Arg& res) {
    RowNorm rn = row_norm(l, ln);
    Spec s;
    for (size_t i = 0; i < rn.spec.size(); ++i) s.set(static_cast<int>(i), rn.spec[i]);
    for (int id = 40; id <= 55; ++id) s.set(id, gemm.v[static_cast<size_t>(id)]);  // the GEMM's post-ops
    s.set(80, gemm.v[2]);  // T_BIAS
    s.set(81, gemm.v[3]);  // T_RES
    s.set(82, gemm.v[59]);  // SPLIT
    s.set(83, gemm.v[61] * gemm.v[5] * gemm.v[6]);  // batch * M * N
    l.dispatch("tc_splitk_ln", std::move(s.v), {part, l.out(ln.outputs[0]), rn.affine, bias, res},
               l.grid(rn.rows * static_cast<uint64_t>(rn.local), static_cast<uint32_t>(rn.local)));
  });
}

// ---- A depthwise convolution and the layer norm of its channels (tc_dwconv_ln.comp) ----------------

struct DwLnPlan {
  ConvPlan conv;
  int64_t lanes = 0, rows = 0, xb = 1, groups = 0;
};

std::string plan_depthwise_layer_norm(const Graph& g, const Composite& dw, const Composite& ln, const Caps& caps,
                                      DwLnPlan& d) {
  if (const char* e = std::getenv("WEFT_VULKAN_DW_LN"); e && std::string_view(e) == "off") return "WEFT_VULKAN_DW_LN=off";
  if (dw.anchor < 0 || g.node(dw.anchor).op != Op::DEPTHWISE_CONV2D || ln.region != Composite::Region::kLayerNorm)
    return "not a DEPTHWISE_CONV2D and a LAYER_NORM";
  ConvPlan& p = d.conv;
  if (std::string r = plan_conv(g, dw, caps, p); !r.empty()) return r;
  if (std::string r = check_layer_norm(g, ln, caps); !r.empty()) return r;
  if (!dw.post_ops.empty() || p.scale_in) return "the depthwise convolution has fused operations";
  if (!is_float(p.in_t) || p.acc != 0) return "the convolution does not accumulate floats in fp32";
  if (p.mult != 1 || p.KD != 1 || p.sx != 1 || p.dx != 1)
    return "the convolution has a channel multiplier, or a stride or dilation along x";
  const ValueId mid = g.node(dw.anchor).outputs[0];
  if (ln.source != mid) return "the LAYER_NORM does not normalize the convolution's channels";
  if (!read_only_by(g, mid, ln.nodes)) return "the convolution's result is read elsewhere or is a graph output";
  if (!caps.subgroup_arithmetic || caps.subgroup_size < 4 || (caps.subgroup_size & (caps.subgroup_size - 1)) != 0)
    return "the fused kernel needs subgroup arithmetic with a power-of-two subgroup size";
  // Only where the convolution's outputs are few for the device (up to 4096 per compute unit): there
  // the two kernels apart wait on their launches and on each other, and one dispatch gains. Where
  // they fill it, the two apart run at a higher rate. On an H100 (132 SMs), ConvNeXt-T's four stages
  // at batch 1 (75 K to 301 K outputs, fp16 mode), GPU ms of the fused kernel against the two apart:
  // 0.039 / 0.048, 0.033 / 0.047, 0.105 / 0.133, 0.033 / 0.040; at batch 32 (1.2 M to 9.6 M):
  // 0.642 / 0.608, 0.327 / 0.310, 0.509 / 0.508, 0.111 / 0.102.
  const int64_t sg = caps.subgroup_size, C = p.OC;
  const int64_t units = caps.compute_units > 0 ? int64_t{caps.compute_units} : 16;
  if (p.pixels() * C > 4096 * units)
    return "the convolution's " + str(p.pixels() * C) +
           " outputs fill the device (more than 4096 per compute unit): the two kernels apart run faster";
  // One channel per invocation where a workgroup holds the pixel's channels, else the fewest that
  // fit; a row group is a whole number of subgroups.
  const int64_t most = std::min<int64_t>(caps.max_invocations, 1024);
  int64_t cpl = 1;
  auto lanes_for = [&](int64_t k) { return sg * ((C + sg * k - 1) / (sg * k)); };
  while (cpl <= 8 && lanes_for(cpl) > most) ++cpl;
  if (cpl > 8) return str(C) + " channels are more than the fused kernel holds in registers (" + str(8 * most) + ")";
  d.lanes = lanes_for(cpl);
  d.rows = std::max<int64_t>(1, std::min<int64_t>(128, most) / d.lanes);
  // Two pixels per row group where that still leaves two workgroups per compute unit.
  const int64_t two = p.N * p.OH * ((p.OW + 1) / 2);
  d.xb = p.OW >= 2 && (two + d.rows - 1) / d.rows >= 2 * units ? 2 : 1;
  d.groups = p.N * p.OH * ((p.OW + d.xb - 1) / d.xb);
  if (p.taps() * 2 > kLoopLimit) return "a depthwise kernel of " + str(p.taps()) + " taps is too long";
  if (p.pixels() * C > std::numeric_limits<int32_t>::max()) return "too large for 32-bit shader indexing";
  return check_flat((d.groups + d.rows - 1) / d.rows * 64, caps);
}

std::string check_depthwise_layer_norm(const Graph& g, const Composite& dw, const Composite& ln, const Caps& caps) {
  DwLnPlan d;
  return plan_depthwise_layer_norm(g, dw, ln, caps, d);
}

void lower_depthwise_layer_norm(Lowering& l, const Composite& dw, const Composite& ln) {
  DwLnPlan d;
  if (std::string r = plan_depthwise_layer_norm(l.graph, dw, ln, l.caps, d); !r.empty()) l.fail(r);
  const ConvPlan& p = d.conv;
  if (p.pixels() == 0 || p.OC == 0) return;
  const Node& n = l.graph.node(dw.anchor);
  const RowNorm rn = row_norm(l, ln);
  Spec s;
  s.set(0, code(p.in_t));
  s.set(1, code(p.w_t));
  s.set(2, code(p.out_t));
  s.set(3, code(l.type(ln.outputs[0]).dtype));
  s.set(4, p.OC);
  s.set(5, p.KH);
  s.set(6, p.KW);
  s.set(7, p.OH);
  s.set(8, p.OW);
  s.set(9, p.VH);
  s.set(10, p.VW);
  s.set(11, p.win.SH);
  s.set(12, p.win.SW);
  s.set(13, p.win.PT);
  s.set(14, p.win.PL);
  s.set(15, p.sy);
  s.set(16, p.dy);
  s.set(17, p.pad_y);
  s.set(18, p.pad_x);
  s.set(19, p.win.fill);
  s.set(20, p.bias_bcast);
  s.set(21, d.groups);
  s.set(22, d.lanes);
  s.set(23, d.rows);
  s.set(24, d.xb);
  // (WEFT_VULKAN_DW_LN=tree: sums by the shared-memory tree alone, the path of a device whose
  // subgroups at run time differ from the size it reports; for tests.)
  const char* mode = std::getenv("WEFT_VULKAN_DW_LN");
  s.set(25, mode && std::string_view(mode) == "tree" ? 0 : static_cast<int64_t>(l.caps.subgroup_size));
  s.set(26, rn.spec[6]);  // EPS_BITS
  s.set(27, rn.spec[7]);  // INV_N_BITS
  s.set(28, d.lanes * d.rows);
  const uint64_t workgroups = static_cast<uint64_t>((d.groups + d.rows - 1) / d.rows);
  const uint32_t local = static_cast<uint32_t>(d.lanes * d.rows);
  l.dispatch("tc_dwconv_ln", std::move(s.v), {l.in(p.win.src), l.in(n.inputs[1]), l.in(n.inputs[2]), rn.affine, l.out(ln.outputs[0])},
             l.grid(workgroups * local, local));
}

// ---- Squeeze-and-excitation's two 1x1 convolutions (tc_se_mlp.comp) -------------------------------

namespace {

// A CONV2D composite that is a 1x1 convolution of a [N, 1, 1, C] tensor (squeeze-and-excitation's
// pooled features), float with fp32 accumulation, nothing folded in front of it.
std::string plan_se_conv(const Graph& g, const Composite& c, const Caps& caps, ConvPlan& p) {
  if (c.anchor < 0 || g.node(c.anchor).op != Op::CONV2D || c.region != Composite::Region::kNone) return "not a CONV2D";
  if (std::string r = plan_conv(g, c, caps, p); !r.empty()) return r;
  if (c.pad >= 0 || p.scale_in || p.groups != 1) return "a convolution with a folded PAD, input scale or groups";
  if (p.VH != 1 || p.VW != 1 || p.OH != 1 || p.OW != 1 || p.KH != 1 || p.KW != 1)
    return "not a 1x1 convolution of a 1 x 1 image";
  if (!is_float(p.in_t) || p.acc != 0 || p.izp != 0 || p.wzp != 0) return "not a float convolution accumulating in fp32";
  return {};
}

// Weights read by one workgroup: above this many elements, the two convolutions apart (their weights
// read by many workgroups) are faster.
int64_t se_weight_limit() {
  if (const char* e = std::getenv("WEFT_VULKAN_SE_WEIGHTS")) return std::atoll(e);
  return 131072;
}

struct SePlan {
  ConvPlan c1, c2;
  int64_t local = 0;
};

std::string plan_se_mlp(const Graph& g, const Composite& a, const Composite& b, const Caps& caps, SePlan& p) {
  // Opt-in: on an H200 (fp16 mode, batch 1, two alternating rounds, conv2's weights transposed)
  // it gained 3-11% on EfficientNet-B0 and RegNetY-400MF and 2-4% on MobileNetV3-Large but lost
  // 3-4% on MaxViT-T, whose larger SE blocks (up to 1024 -> 64 -> 1024) ran slower in one
  // workgroup than as two or three dispatches spread wide (docs/vulkan.md).
  if (const char* e = std::getenv("WEFT_VULKAN_SE"); !e || std::string_view(e) != "on")
    return "squeeze-and-excitation fusion is opt-in (WEFT_VULKAN_SE=on)";
  if (std::string r = plan_se_conv(g, a, caps, p.c1); !r.empty()) return "the first convolution: " + r;
  if (std::string r = plan_se_conv(g, b, caps, p.c2); !r.empty()) return "the second convolution: " + r;
  const Epilogue &e1 = p.c1.ep, &e2 = p.c2.ep;
  for (int32_t k : e1.kind)
    if (k == kEpBias || k == kEpResidual || k == kEpColumnScale || k == kEpColumnShift || k == kEpMask)
      return "the first convolution's fused operations read other tensors";
  for (int32_t k : e2.kind)
    if (k == kEpBias || k == kEpResidual || k == kEpMask) return "the second convolution adds another tensor";
  const ValueId h = e1.result;
  if (g.node(b.anchor).inputs[0] != h || p.c2.win.src != h) return "the second convolution does not read the first's result";
  if (!read_only_by(g, h, b.nodes)) return "the first convolution's result is read elsewhere or is a graph output";
  if (p.c2.IC != p.c1.OC || p.c2.N != p.c1.N) return "the convolutions' shapes do not chain";
  if (!caps.subgroup_arithmetic) return "the fused kernel needs subgroup arithmetic";
  const int64_t weights = p.c1.IC * p.c1.OC + p.c2.IC * p.c2.OC;
  if (weights > se_weight_limit())
    return str(weights) + " weights are more than one workgroup reads fast (" + str(se_weight_limit()) + ")";
  // One workgroup per image: where the images outnumber the compute units, the two apart spread
  // wider.
  const int64_t units = caps.compute_units > 0 ? int64_t{caps.compute_units} : 16;
  if (p.c1.N > units) return str(p.c1.N) + " images, more than the device's " + str(units) + " compute units";
  const int64_t shared = 2 * std::max(p.c1.IC, p.c1.OC) * 4;
  if (shared > static_cast<int64_t>(caps.max_shared_bytes))
    return "needs " + str(shared) + " bytes of shared memory, the device has " + str(caps.max_shared_bytes);
  p.local = max_local(caps, 1024);
  return check_groups(p.c1.N, 1, 1, caps);
}

}  // namespace

std::string check_se_mlp(const Graph& g, const Composite& a, const Composite& b, const Caps& caps) {
  SePlan p;
  return plan_se_mlp(g, a, b, caps, p);
}

void lower_se_mlp(Lowering& l, const Composite& a, const Composite& b) {
  SePlan p;
  if (std::string r = plan_se_mlp(l.graph, a, b, l.caps, p); !r.empty()) l.fail(r);
  const ConvPlan &c1 = p.c1, &c2 = p.c2;
  if (c1.N == 0 || c1.IC == 0 || c1.OC == 0 || c2.OC == 0) return;
  const Node &n1 = l.graph.node(a.anchor), &n2 = l.graph.node(b.anchor);
  Spec s;
  epilogue_spec(s, c1.ep);
  for (int id = 40; id <= 55; ++id) s.set(id + 20, s.v[static_cast<size_t>(id)]);  // conv1's post-ops at 60..75
  epilogue_spec(s, c2.ep);
  s.set(0, code(c1.in_t));
  s.set(1, code(c1.w_t));
  s.set(2, code(type_of(l.graph, n1.inputs[2]).dtype));
  s.set(3, code(c1.out_t));
  s.set(4, code(c2.w_t));
  s.set(5, code(c2.ep.columns.empty() ? type_of(l.graph, n2.inputs[2]).dtype : c2.out_t));
  s.set(6, code(c1.in_t));
  s.set(7, code(c2.out_t));
  s.set(8, c1.IC);
  s.set(9, c1.OC);
  s.set(10, c2.OC);
  s.set(11, c1.bias_bcast);
  s.set(12, c2.bias_bcast);
  s.set(13, std::max(c1.IC, c1.OC));
  s.set(20, p.local);
  const Arg bias2 = c2.ep.columns.empty() ? l.in(n2.inputs[2]) : column_arg(l, c2.ep, l.constant(n2.inputs[2]), c2.out_t);
  // Constant conv2 weights [C2][1][1][R] go up transposed, [R][C2] (W2T in the shader).
  Arg w2 = l.in(n2.inputs[1]);
  if (const Tensor* w = l.constant(n2.inputs[1]); w && w->num_elements() == c2.OC * c1.OC) {
    const size_t es = w->byte_size() / static_cast<size_t>(w->num_elements());
    const uint8_t* src = w->bytes();
    std::vector<uint8_t> t(w->byte_size());
    for (int64_t o = 0; o < c2.OC; ++o)
      for (int64_t r = 0; r < c1.OC; ++r)
        std::memcpy(t.data() + static_cast<size_t>(r * c2.OC + o) * es, src + static_cast<size_t>(o * c1.OC + r) * es,
                    es);
    w2 = l.data(std::move(t));
    s.set(14, 1);
  }
  l.dispatch("tc_se_mlp", std::move(s.v),
             {l.in(n1.inputs[0]), l.in(n1.inputs[1]), l.in(n1.inputs[2]), w2, bias2, l.in(n1.inputs[0]),
              l.out(c2.ep.result)},
             {static_cast<uint32_t>(c1.N), 1, 1});
}

// ---- Element-wise chains (ew_chain.comp) -----------------------------------------------------------

std::string check_ew_chain(const Graph& g, const Composite& c, const Caps&) {
  const Node& n = g.node(c.anchor);
  const TensorType& rt = type_of(g, n.outputs[0]);
  if (n.op != Op::MUL && n.op != Op::ADD && n.op != Op::SUB)
    return "element-wise chains are fused only from MUL, ADD or SUB by a per-channel constant";
  if (rt.dtype != DType::kFp32 && rt.dtype != DType::kFp16) return "element-wise chains are fused for fp32 and fp16 only";
  if (c.post_ops.empty() || c.pad >= 0) return "not an element-wise chain";
  if (c.concat_in >= 0) return "a CONCAT in front of an element-wise chain is not fused (it runs on its own)";
  if (type_of(g, n.inputs[0]) != rt) return "the chain's first operand is broadcast";
  const TensorType& ct = type_of(g, n.inputs[1]);
  if (!const_tensor(g, n.inputs[1]) || ct.dtype != rt.dtype || rt.shape.empty() ||
      shape_elements(ct.shape) != rt.shape.back() || ct.shape.back() != rt.shape.back())
    return "the chain's second operand is not a constant per channel (last dimension)";
  if (n.op == Op::MUL) {
    const auto shift = const_int(g, n.inputs.at(2));
    if (!shift || *shift != 0) return "MUL's shift must be a constant 0";
  }
  if (!fits_int32(rt)) return "too large for 32-bit shader indexing";
  Epilogue ep;
  return plan_epilogue(g, c, ep, kNoValue, false);
}

void lower_ew_chain(Lowering& l, const Composite& c) {
  if (std::string r = check_ew_chain(l.graph, c, l.caps); !r.empty()) l.fail(r);
  const Node& n = l.n();
  Epilogue ep;
  plan_epilogue(l.graph, c, ep, kNoValue, false);
  const TensorType& rt = l.type(n.outputs[0]);
  const ValueId bias = ep.bias != kNoValue ? ep.bias : n.inputs[0], res = ep.residual != kNoValue ? ep.residual : n.inputs[0];
  Spec s;
  epilogue_spec(s, ep);
  s.set(0, code(rt.dtype));
  s.set(1, code(type_of(l.graph, bias).dtype));
  s.set(2, code(type_of(l.graph, res).dtype));
  s.set(3, n.op == Op::MUL ? 0 : n.op == Op::ADD ? 1 : 2);
  s.set(4, rt.shape.back());
  const int64_t total = shape_elements(rt.shape);
  s.set(5, total);
  l.dispatch("ew_chain", std::move(s.v), {l.in(n.inputs[0]), l.in(n.inputs[1]), l.in(bias), l.in(res), l.out(ep.result)},
             l.grid(static_cast<uint64_t>(total)));
}

void register_tensor(std::map<Op, OpLowering>& t) {
  for (Op op : {Op::CONV2D, Op::CONV3D, Op::DEPTHWISE_CONV2D, Op::TRANSPOSE_CONV2D})
    t[op] = OpLowering{nullptr, check_conv, lower_conv};
  t[Op::MATMUL] = OpLowering{nullptr, check_matmul, lower_matmul};
  t[Op::AVG_POOL2D] = OpLowering{nullptr, check_pool, lower_pool};
  t[Op::MAX_POOL2D] = OpLowering{nullptr, check_pool, lower_pool};
}

}  // namespace weft::vkb
