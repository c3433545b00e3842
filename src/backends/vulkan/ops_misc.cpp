// Vulkan backend: lowering of the misc operators (see lower.h): the reductions and ARGMAX
// (shaders/mx_reduce.comp), the fused softmax and layer-normalization regions (mx_rownorm.comp),
// TABLE (mx_table.comp), RESCALE (mx_rescale.comp) and FFT2D / RFFT2D (mx_dft.comp).
//
// Exactness: integer and boolean results, REDUCE_MAX / REDUCE_MIN and ARGMAX (NaN modes, first index,
// the sign of a zero) match the reference bit for bit. Float REDUCE_SUM / REDUCE_PRODUCT accumulate
// in fp32 in a tree order (fp16 too, where the reference rounds every partial result to fp16), the
// regions compute in fp32, and the DFT sums in fp32 (the reference uses double): those match within
// a tolerance. REQUIREs that depend on the data (int32 REDUCE_SUM overflow, RESCALE's value ranges)
// cannot be checked on the device: TOSA leaves such results unpredictable, the reference stops.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "backends/vulkan/lower.h"

namespace weft::vkb {
namespace {

using backend::Composite;

// Per-invocation loop bound of the reduction shader (lavapipe aborts beyond 65535 iterations).
constexpr int64_t kMaxIter = 4096;
// Longest row the row shader takes: rows of more than 256 * 16 elements are not kept in registers
// and read in three loops of K / 256 iterations each, which stay under 65535.
constexpr int64_t kMaxRow = int64_t{1} << 22;
// Longest FFT side (each output is a loop over one side; TOSA's MAX_KERNEL is 8192).
constexpr int64_t kMaxFftSide = 16384;

std::string op_str(const Graph& g, const Composite& c) { return op_name(g.node(c.anchor).op); }

// A tensor around `axis` as [outer, k, inner].
struct AxisView {
  int64_t outer = 1, k = 1, inner = 1;
};
AxisView axis_view(const Shape& s, int64_t axis) {
  AxisView v;
  for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) {
    if (i < axis) v.outer *= s[static_cast<size_t>(i)];
    else if (i == axis) v.k = s[static_cast<size_t>(i)];
    else v.inner *= s[static_cast<size_t>(i)];
  }
  return v;
}

Arg read_of(Arg a) {
  a.write = false;
  return a;
}

// ---- Reductions and ARGMAX (mx_reduce) ----------------------------------------------------------

enum RedOp : int32_t { kAll = 0, kAny = 1, kMax = 2, kMin = 3, kProduct = 4, kSum = 5, kArgmax = 6 };

RedOp red_op(Op op) {
  switch (op) {
    case Op::REDUCE_ALL: return kAll;
    case Op::REDUCE_ANY: return kAny;
    case Op::REDUCE_MAX: return kMax;
    case Op::REDUCE_MIN: return kMin;
    case Op::REDUCE_PRODUCT: return kProduct;
    case Op::REDUCE_SUM: return kSum;
    default: return kArgmax;
  }
}

bool has_nan_mode(RedOp op) { return op == kMax || op == kMin || op == kArgmax; }

// Emits the passes reducing `in` (element type `t`, viewed as v) into `out` (type `out_t`).
void emit_reduction(Lowering& l, RedOp op, DType t, DType out_t, bool nan_ignore, Arg in, Arg out, AxisView v,
                    int32_t divisor = 0) {
  const bool flt = is_float(t);
  const bool track = op == kMax || op == kMin || op == kArgmax;
  int32_t t_in = code(t);
  Arg in_idx = in;  // binding 1 is read only by later passes; bound to the input otherwise
  bool later = false;
  int64_t k = v.k;
  for (;;) {
    // A workgroup per task along a contiguous axis that is long enough; else an invocation per task.
    int64_t group = 1, local = 64, chunk;
    if (v.inner == 1 && k >= 32) {
      local = std::clamp<int64_t>(pow2_at_least((k + 7) / 8), 32, max_local(l.caps));
      group = local;
      chunk = local * kMaxIter;
      // More workgroups when there are few rows: at least 16 elements per invocation.
      while (chunk > local * 16 && v.outer * ((k + chunk - 1) / chunk) < 512) chunk /= 2;
    } else {
      chunk = std::min(k, kMaxIter);
      while (chunk > 64 && v.outer * v.inner * ((k + chunk - 1) / chunk) < 16384) chunk = (chunk + 1) / 2;
    }
    const int64_t p = (k + chunk - 1) / chunk;
    const bool final = p == 1;
    const uint64_t tasks = static_cast<uint64_t>(v.outer * p * v.inner);
    Arg vals = out, idx = out;
    int32_t t_out = code(out_t);
    if (final) {
      idx = l.scratch(4, true);  // binding 3 is not written by a final pass
    } else {
      t_out = flt ? code(DType::kFp32) : code(DType::kInt32);
      vals = l.scratch(tasks * 4, true);
      idx = l.scratch(track ? tasks * 4 : 4, true);
    }
    l.dispatch("mx_reduce",
               {op, t_in, t_out, nan_ignore ? 1 : 0, static_cast<int32_t>(v.outer), static_cast<int32_t>(k),
                static_cast<int32_t>(v.inner), static_cast<int32_t>(chunk), static_cast<int32_t>(p),
                static_cast<int32_t>(group), later ? 1 : 0, final ? 1 : 0, static_cast<int32_t>(local),
                final ? divisor : 0},
               {in, in_idx, vals, idx}, l.grid(tasks * static_cast<uint64_t>(group), static_cast<uint32_t>(local)));
    if (final) return;
    in = read_of(vals);
    in_idx = track ? read_of(idx) : in;
    t_in = t_out;
    later = true;
    k = p;
  }
}

std::string check_softmax(const Graph& g, const Composite& c, const Caps& caps);
void lower_region(Lowering& l, const Composite& c);

std::string check_reduce(const Graph& g, const Composite& c, const Caps& caps) {
  const Op op = g.node(c.anchor).op;
  if ((c.region == Composite::Region::kSoftmax || c.region == Composite::Region::kLogSoftmax) && op == Op::REDUCE_MAX)
    return check_softmax(g, c, caps);
  if (c.region == Composite::Region::kLayerNorm && op == Op::REDUCE_SUM) return check_layer_norm(g, c, caps);
  if (!c.single()) return op_str(g, c) + " fused as " + c.pattern + ": only the softmax and layer-norm regions fuse";
  if (std::string w = check_tensors(g, c.anchor); !w.empty()) return op_str(g, c) + ": " + w;
  const Node& n = g.node(c.anchor);
  const TensorType& t = g.value(n.inputs[0]).type;
  const int64_t axis = n.attr_int("axis");
  if (axis < 0 || axis >= t.rank()) return op_str(g, c) + ": axis " + std::to_string(axis) + " out of range";
  if (has_nan_mode(red_op(op))) {
    const int64_t m = n.attr_int("nan_mode");
    if (m != static_cast<int64_t>(NanMode::kPropagate) && m != static_cast<int64_t>(NanMode::kIgnore))
      return op_str(g, c) + ": invalid nan_mode " + std::to_string(m);
  }
  return {};
}

void lower_reduce(Lowering& l, const Composite& c) {
  if (c.region != Composite::Region::kNone) return lower_region(l, c);
  const Node& n = l.n();
  const RedOp op = red_op(n.op);
  const TensorType& t = l.type(n.inputs[0]);
  const bool ignore = has_nan_mode(op) && n.attr_int("nan_mode") == static_cast<int64_t>(NanMode::kIgnore);
  emit_reduction(l, op, t.dtype, l.type(n.outputs[0]).dtype, ignore, l.in(n.inputs[0]), l.out(n.outputs[0]),
                 axis_view(t.shape, n.attr_int("axis")));
}

}  // namespace

int64_t pow2_at_least(int64_t v) {
  int64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

// The largest power-of-two workgroup, up to `most`, the device allows (maxComputeWorkGroupInvocations
// is at least 128 on every Vulkan device).
int64_t max_local(const Caps& caps, int64_t most) {
  int64_t w = most;
  while (w > 32 && w > static_cast<int64_t>(caps.max_invocations)) w /= 2;
  return w;
}

void emit_mean(Lowering& l, DType t, Arg in, Arg out, int64_t outer, int64_t k, int64_t inner) {
  emit_reduction(l, kSum, t, t, false, in, out, AxisView{outer, k, inner}, static_cast<int32_t>(k));
}

namespace {

// ---- Softmax and layer-norm regions (mx_rownorm) -------------------------------------------------

std::string check_row(const Graph& g, const Composite& c, const char* what) {
  if (c.pad >= 0 || !c.post_ops.empty() || !c.a_view.empty() || !c.b_view.empty() || !c.out_view.empty())
    return std::string(what) + " with fused extras (" + c.pattern + ") is not supported";
  const TensorType& t = g.value(c.source).type;
  if (t.dtype != DType::kFp32 && t.dtype != DType::kFp16)
    return std::string(what) + " on " + dtype_name(t.dtype) + ": only fp32 and fp16";
  if (!fits_int32(t)) return std::string(what) + " on " + t.str() + ": too large for 32-bit shader indexing";
  if (c.axis < 0 || c.axis >= t.rank()) return std::string(what) + ": axis " + std::to_string(c.axis) + " out of range";
  if (c.outputs.size() != 1 || g.value(c.outputs[0]).type != t)
    return std::string(what) + ": the region's result must have the source's type";
  const int64_t k = t.shape[static_cast<size_t>(c.axis)];
  if (k > kMaxRow)
    return std::string(what) + " over " + std::to_string(k) + " elements along an axis: rows longer than " +
           std::to_string(kMaxRow) + " exceed the shader's loop bound";
  for (int ni : c.nodes)
    for (ValueId v : g.node(ni).outputs)
      if (g.value(v).type.dtype != t.dtype)
        return std::string(what) + ": node " + g.node_label(ni) + " changes the element type";
  return {};
}

std::string check_softmax(const Graph& g, const Composite& c, const Caps&) {
  return check_row(g, c, c.region == Composite::Region::kLogSoftmax ? "LOG_SOFTMAX" : "SOFTMAX");
}

}  // namespace

std::string check_layer_norm(const Graph& g, const Composite& c, const Caps&) {
  const std::string what = c.region == Composite::Region::kRmsNorm  ? "RMS_NORM"
                           : c.region == Composite::Region::kL2Norm ? "L2_NORM"
                                                                    : "LAYER_NORM";
  if (std::string w = check_row(g, c, what.c_str()); !w.empty()) return w;
  const TensorType& t = g.value(c.source).type;
  if (c.axis != t.rank() - 1) return what + " along axis " + std::to_string(c.axis) + ": only the last axis";
  for (ValueId v : {c.gamma, c.beta}) {
    if (v == kNoValue) continue;
    const Tensor* k = const_tensor(g, v);
    if (!k || k->num_elements() != t.shape.back())
      return what + ": gamma and beta must be constants of " + std::to_string(t.shape.back()) + " elements";
  }
  return {};
}

int64_t row_norm_max_cached(const Caps& caps) { return 16 * max_local(caps); }

RowNorm row_norm(Lowering& l, const Composite& c) {
  const TensorType& t = l.type(c.source);
  const AxisView v = axis_view(t.shape, c.axis);
  const bool softmax = c.region == Composite::Region::kSoftmax || c.region == Composite::Region::kLogSoftmax;
  // About four elements per invocation; 32 (a warp) to 256 invocations per row.
  const int64_t local = std::clamp<int64_t>(pow2_at_least((v.k + 3) / 4), 32, max_local(l.caps));
  Arg affine;
  float inv_n = 0.f;
  if (softmax) {
    affine = l.data(std::vector<uint8_t>(4, 0));  // binding 2 is unused
  } else {
    std::vector<float> a(static_cast<size_t>(2 * v.k));
    const Tensor* gamma = c.gamma == kNoValue ? nullptr : l.constant(c.gamma);
    const Tensor* beta = c.beta == kNoValue ? nullptr : l.constant(c.beta);
    for (int64_t i = 0; i < v.k; ++i) {
      a[static_cast<size_t>(i)] = gamma ? static_cast<float>(gamma->at_double(i)) : 1.f;
      a[static_cast<size_t>(v.k + i)] = beta ? static_cast<float>(beta->at_double(i)) : 0.f;
    }
    affine = l.data_of(a);
    inv_n = c.inv_n != 0 ? static_cast<float>(c.inv_n) : static_cast<float>(1.0 / static_cast<double>(v.k));
  }
  const int32_t mode = c.region == Composite::Region::kSoftmax      ? 0
                       : c.region == Composite::Region::kLogSoftmax ? 3
                       : c.region == Composite::Region::kRmsNorm    ? 2
                       : c.region == Composite::Region::kL2Norm     ? 4
                                                                    : 1;
  std::vector<int32_t> spec = {mode, code(t.dtype), static_cast<int32_t>(v.outer), static_cast<int32_t>(v.k),
                               static_cast<int32_t>(v.inner), static_cast<int32_t>(local),
                               f32_bits(static_cast<float>(c.epsilon)), f32_bits(inv_n)};
  return {std::move(spec), affine, static_cast<uint64_t>(v.outer * v.inner), local, v.k};
}

void lower_row_norm(Lowering& l, const Composite& c) {
  RowNorm rn = row_norm(l, c);
  std::vector<int32_t>& spec = rn.spec;
  const Arg affine = rn.affine;
  const uint64_t rows = rn.rows;
  const int64_t local = rn.local;
  // Where there are rows enough for 256 workgroups, rows that one subgroup holds in registers (16
  // values per invocation) run several to a workgroup, each reduced with subgroup operations: no
  // shared memory, no barriers. On an H100: BERT's softmax at batch 32 (16384 rows of 128) 0.055 ->
  // 0.027 ms of GPU time, ConvNeXt-T's layer norms 0.117 -> 0.112 ms. With fewer rows the packed
  // workgroups leave SMs idle (ConvNeXt-T's layer norms with every row count: 0.146 ms).
  const int64_t sg = l.caps.subgroup_size;
  const int64_t per_group = sg > 0 ? std::max<int64_t>(1, std::min<int64_t>(128, max_local(l.caps)) / sg) : 1;
  if (l.caps.subgroup_arithmetic && sg >= 8 && rn.k <= 16 * sg && rows >= static_cast<uint64_t>(256 * per_group)) {
    spec[5] = static_cast<int32_t>(sg);
    spec.push_back(static_cast<int32_t>(per_group));
    spec.push_back(static_cast<int32_t>(per_group * sg));
    const uint64_t groups = (rows + static_cast<uint64_t>(per_group) - 1) / static_cast<uint64_t>(per_group);
    l.dispatch("mx_rownorm_sg", std::move(spec), {l.in(c.source), l.out(c.outputs[0]), affine},
               l.grid(groups * static_cast<uint64_t>(per_group * sg), static_cast<uint32_t>(per_group * sg)));
    return;
  }
  l.dispatch("mx_rownorm", std::move(spec), {l.in(c.source), l.out(c.outputs[0]), affine},
             l.grid(rows * static_cast<uint64_t>(local), static_cast<uint32_t>(local)));
}

namespace {

void lower_region(Lowering& l, const Composite& c) { lower_row_norm(l, c); }

// ---- TABLE (mx_table) -----------------------------------------------------------------------------

std::string check_table(const Graph& g, const Composite& c, const Caps&) {
  if (!c.single()) return "TABLE does not fuse (" + c.pattern + ")";
  if (std::string w = check_tensors(g, c.anchor); !w.empty()) return "TABLE: " + w;
  const Node& n = g.node(c.anchor);
  const DType t = g.value(n.inputs[0]).type.dtype;
  const Tensor* tab = const_tensor(g, n.inputs[1]);
  if (t == DType::kInt8) {
    if (g.value(n.inputs[1]).type != TensorType{DType::kInt8, {256}}) return "TABLE: an int8 table needs 256 int8 entries";
    return {};
  }
  if (t != DType::kInt16) return std::string("TABLE on ") + dtype_name(t) + ": only int8 and int16";
  if (g.value(n.inputs[1]).type != TensorType{DType::kInt16, {513}})
    return "TABLE: an int16 table needs 513 int16 entries";
  // apply_lookup_s REQUIREs every slope table[i + 1] - table[i] to fit int16: checked here on the
  // constant table (a failing one is left to the reference, which reports it).
  if (!tab) return "TABLE int16 with a table that is not a constant: the slope REQUIRE cannot be checked";
  for (int64_t i = 0; i + 1 < 513; ++i) {
    const int64_t slope = tab->at_int(i + 1) - tab->at_int(i);
    if (slope < int_min(DType::kInt16) || slope > int_max(DType::kInt16))
      return "TABLE int16: slope at entry " + std::to_string(i) + " does not fit int16 (REQUIRE)";
  }
  return {};
}

void lower_table(Lowering& l, const Composite&) {
  const Node& n = l.n();
  const TensorType& t = l.type(n.inputs[0]);
  const Tensor* tab = l.constant(n.inputs[1]);
  Arg table = l.in(n.inputs[1]);
  if (tab) table = l.data(std::vector<uint8_t>(tab->bytes(), tab->bytes() + tab->byte_size()));
  const uint64_t count = static_cast<uint64_t>(t.num_elements());
  l.dispatch("mx_table", {code(t.dtype), static_cast<int32_t>(count)}, {l.in(n.inputs[0]), table, l.out(n.outputs[0])},
             l.grid(count));
}

// ---- RESCALE (mx_rescale) -------------------------------------------------------------------------

struct RescaleParams {
  std::vector<int32_t> pairs;  // (multiplier, shift) per channel
  int64_t izp = 0, ozp = 0, out_lo = 0, out_hi = 0, in_mask = 0;
  bool double_round = false;
};

// The constant parameters of RESCALE node `n`, or the reason it does not run (every ERROR_IF and
// parameter REQUIRE of the reference, so that failing graphs are left to the reference to report).
std::string rescale_params(const Graph& g, const Node& n, RescaleParams& p) {
  const TensorType& in = g.value(n.inputs[0]).type;
  const TensorType& out = g.value(n.outputs[0]).type;
  const DType ti = in.dtype, to = out.dtype;
  if (ti != DType::kInt8 && ti != DType::kInt16 && ti != DType::kInt32 && ti != DType::kInt48)
    return std::string("RESCALE from ") + dtype_name(ti) + ": only int8/16/32/48 inputs";
  if (to != DType::kInt8 && to != DType::kInt16 && to != DType::kInt32)
    return std::string("RESCALE to ") + dtype_name(to) + ": only int8/16/32 outputs";
  const Tensor* mult = const_tensor(g, n.inputs[1]);
  const Tensor* shift = const_tensor(g, n.inputs[2]);
  const Tensor* izp = const_tensor(g, n.inputs[3]);
  const Tensor* ozp = const_tensor(g, n.inputs[4]);
  if (!mult || !shift || !izp || !ozp) return "RESCALE: multiplier, shift and zero points must be constants";
  const bool scale32 = n.attr_bool("scale32");
  const int64_t rm = n.attr_int("rounding_mode");
  const bool per_channel = n.attr_bool("per_channel");
  const bool in_u = n.attr_bool("input_unsigned"), out_u = n.attr_bool("output_unsigned");
  if (rm != static_cast<int64_t>(RoundingMode::kSingle) && rm != static_cast<int64_t>(RoundingMode::kInexact) &&
      rm != static_cast<int64_t>(RoundingMode::kDouble))
    return "RESCALE: invalid rounding_mode " + std::to_string(rm);
  // INEXACT_ROUND allows any result within the bound; the exact SINGLE_ROUND result is one.
  p.double_round = rm == static_cast<int64_t>(RoundingMode::kDouble);
  if (per_channel && in.rank() < 1) return "RESCALE: per_channel needs rank >= 1 (ERROR_IF)";
  const int64_t nc = per_channel ? in.shape.back() : 1;
  if (mult->dtype() != (scale32 ? DType::kInt32 : DType::kInt16) || shift->dtype() != DType::kInt8 ||
      mult->num_elements() != nc || shift->num_elements() != nc || izp->num_elements() != 1 ||
      ozp->num_elements() != 1)
    return "RESCALE: multiplier / shift / zero points of the wrong type or length";
  const int in_bits = bit_width(ti), out_bits = bit_width(to);
  p.izp = izp->at_int(0);
  p.ozp = ozp->at_int(0);
  if (in_u) p.izp &= (int64_t{1} << in_bits) - 1;
  if (out_u) p.ozp &= (int64_t{1} << out_bits) - 1;
  if (ti != DType::kInt8 && !(ti == DType::kInt16 && in_u) && p.izp != 0)
    return "RESCALE: input_zp must be 0 unless in_t is i8 or unsigned i16 (ERROR_IF)";
  if (to != DType::kInt8 && !(to == DType::kInt16 && out_u) && p.ozp != 0)
    return "RESCALE: output_zp must be 0 unless out_t is i8 or unsigned i16 (ERROR_IF)";
  if (ti == DType::kInt16 && in_u && p.izp != 0 && p.izp != 32768)
    return "RESCALE: unsigned i16 input_zp must be 0 or 32768 (ERROR_IF)";
  if (to == DType::kInt16 && out_u && p.ozp != 0 && p.ozp != 32768)
    return "RESCALE: unsigned i16 output_zp must be 0 or 32768 (ERROR_IF)";
  if (scale32 && ti == DType::kInt48) return "RESCALE: scale32 with i48 input (ERROR_IF)";
  if (!scale32 && p.double_round) return "RESCALE: DOUBLE_ROUND needs scale32 (ERROR_IF)";
  if (in_u && out_u) return "RESCALE: input_unsigned and output_unsigned both set (ERROR_IF)";
  if (to == DType::kInt32 && (in_u || out_u)) return "RESCALE: unsigned modes with i32 output (ERROR_IF)";
  if ((ti == DType::kInt32 || ti == DType::kInt48) && (in_u || out_u))
    return "RESCALE: unsigned modes with i32/i48 input (ERROR_IF)";
  for (int64_t c = 0; c < nc; ++c) {
    const int64_t m = mult->at_int(c), s = shift->at_int(c);
    if (m < 0) return "RESCALE: a negative multiplier (REQUIRE multiplier >= 0)";
    if (s < 2 || s > 62) return "RESCALE: shift " + std::to_string(s) + " outside [2, 62] (REQUIRE)";
    p.pairs.push_back(static_cast<int32_t>(m));
    p.pairs.push_back(static_cast<int32_t>(s));
  }
  p.out_lo = out_u ? 0 : int_min(to);
  p.out_hi = out_u ? (int64_t{1} << out_bits) - 1 : int_max(to);
  p.in_mask = in_u ? (int64_t{1} << in_bits) - 1 : 0;
  return {};
}

std::string check_rescale(const Graph& g, const Composite& c, const Caps&) {
  if (!c.single()) return "RESCALE does not fuse (" + c.pattern + ")";
  if (std::string w = check_tensors(g, c.anchor); !w.empty()) return "RESCALE: " + w;
  RescaleParams p;
  return rescale_params(g, g.node(c.anchor), p);
}

void lower_rescale(Lowering& l, const Composite&) {
  const Node& n = l.n();
  RescaleParams p;
  if (std::string w = rescale_params(l.graph, n, p); !w.empty()) l.fail(w);
  const TensorType& t = l.type(n.inputs[0]);
  const uint64_t count = static_cast<uint64_t>(t.num_elements());
  l.dispatch("mx_rescale",
             {code(t.dtype), code(l.type(n.outputs[0]).dtype), static_cast<int32_t>(count),
              static_cast<int32_t>(p.pairs.size() / 2), p.double_round ? 1 : 0, static_cast<int32_t>(p.in_mask),
              static_cast<int32_t>(p.izp), static_cast<int32_t>(p.ozp), static_cast<int32_t>(p.out_lo),
              static_cast<int32_t>(p.out_hi)},
             {l.in(n.inputs[0]), l.data_of(p.pairs), l.out(n.outputs[0])}, l.grid(count));
}

// ---- FFT2D / RFFT2D (mx_dft) ----------------------------------------------------------------------

bool power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

std::string check_fft(const Graph& g, const Composite& c, const Caps&) {
  const std::string what = op_str(g, c);
  if (!c.single()) return what + " does not fuse (" + c.pattern + ")";
  if (std::string w = check_tensors(g, c.anchor); !w.empty()) return what + ": " + w;
  const Node& n = g.node(c.anchor);
  for (ValueId v : n.inputs)
    if (g.value(v).type.dtype != DType::kFp32 || g.value(v).type.rank() != 3) return what + ": only fp32 [N,H,W]";
  const Shape& s = g.value(n.inputs[0]).type.shape;
  if (!power_of_two(s[1]) || !power_of_two(s[2])) return what + ": H and W must be powers of two (ERROR_IF)";
  if (s[1] > kMaxFftSide || s[2] > kMaxFftSide)
    return what + " of " + shape_str(s) + ": sides above " + std::to_string(kMaxFftSide) + " exceed the shader's loop bound";
  return {};
}

// cos / sin of 2*pi*k/n for k < n in double, exact at the quarter turns (as the reference).
void twiddles(int64_t n, std::vector<float>& out) {
  std::vector<float> s(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    double cv, sv;
    if ((4 * k) % n == 0) {
      const int64_t q = 4 * k / n;
      const double cq[4] = {1, 0, -1, 0}, sq[4] = {0, 1, 0, -1};
      cv = cq[q];
      sv = sq[q];
    } else {
      const double a = 2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(n);
      cv = std::cos(a);
      sv = std::sin(a);
    }
    out.push_back(static_cast<float>(cv));
    s[static_cast<size_t>(k)] = static_cast<float>(sv);
  }
  out.insert(out.end(), s.begin(), s.end());
}

void lower_fft(Lowering& l, const Composite&) {
  const Node& n = l.n();
  const bool real = n.op == Op::RFFT2D;
  const Shape& s = l.type(n.inputs[0]).shape;
  const int64_t N = s[0], H = s[1], W = s[2], OW = real ? W / 2 + 1 : W;
  const int32_t sign = !real && n.attr_bool("inverse") ? -1 : 1;
  std::vector<float> tw;
  twiddles(W, tw);
  twiddles(H, tw);
  const Arg table = l.data_of(tw);
  const uint64_t count = static_cast<uint64_t>(N * H * OW);
  const Arg rr = l.scratch(count * 4, true), ri = l.scratch(count * 4, true);
  auto spec = [&](int32_t pass, int32_t has_imag) {
    return std::vector<int32_t>{pass, static_cast<int32_t>(N), static_cast<int32_t>(H), static_cast<int32_t>(W),
                                static_cast<int32_t>(OW), sign, has_imag};
  };
  const Arg xr = l.in(n.inputs[0]), xi = real ? xr : l.in(n.inputs[1]);
  l.dispatch("mx_dft", spec(0, real ? 0 : 1), {xr, xi, rr, ri, table}, l.grid(count));
  l.dispatch("mx_dft", spec(1, 1), {read_of(rr), read_of(ri), l.out(n.outputs[0]), l.out(n.outputs[1]), table},
             l.grid(count));
}

}  // namespace

void register_misc(std::map<Op, OpLowering>& t) {
  for (Op op : {Op::REDUCE_ALL, Op::REDUCE_ANY, Op::REDUCE_MAX, Op::REDUCE_MIN, Op::REDUCE_PRODUCT, Op::REDUCE_SUM,
                Op::ARGMAX})
    t[op] = {nullptr, check_reduce, lower_reduce};
  t[Op::TABLE] = {nullptr, check_table, lower_table};
  t[Op::RESCALE] = {nullptr, check_rescale, lower_rescale};
  t[Op::FFT2D] = {nullptr, check_fft, lower_fft};
  t[Op::RFFT2D] = {nullptr, check_fft, lower_fft};
}

}  // namespace weft::vkb
