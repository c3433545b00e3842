// The Vulkan backend: runs TOSA operators as compute shaders (embedded GLSL, lowered per operator by
// the table of lower.h) and tosa.CUSTOM nodes that carry their own Vulkan shader, on any Vulkan device
// with the storage types the shaders declare.
//
// It takes whole regions (Grouping::kRegions): every run of consecutive units it accepted is one
// vk::Program: one command buffer recorded at prepare, one submission per run. Within a region:
//   - every value is a slot: region inputs are uploaded, region outputs downloaded, the rest live in
//     one device arena packed by lifetime (the memory planner's interval packing);
//   - values that CONST nodes produce are uploaded once, at prepare, like the data the lowerings make
//     (reordered weights, tables, per-channel parameters);
//   - RESHAPE and IDENTITY are aliases (no dispatch) unless both ends must be separate host tensors;
//   - barriers only where a dispatch touches memory an unordered earlier access used.
// CPU-run neighbours read and write ordinary host memory: the runtime's transfers are the region's
// uploads and downloads.
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <set>

#include "backends/backend.h"
#include "backends/vulkan/lower.h"
#include "compiler/uses.h"
#include "device/vulkan/vulkan.h"
#include "weft/custom.h"

namespace weft::backend {
namespace {

using vkb::Arg;
using vkb::Caps;

struct Checked {
  custom::Payload payload;
  std::vector<custom::BoundResource> resources;
};

// The payload of CUSTOM node `node`, validated, with its resources bound by the contract.
Checked check_node(const Graph& g, int node) {
  const Node& n = g.node(node);
  const Location where{.graph = g.name(), .node = g.node_label(node), .operand = "implementation_attrs"};
  Checked c;
  c.payload = custom::parse_payload(n.attr_str("implementation_attrs"), where);
  if (c.payload.language != custom::ShaderLanguage::kSpirv || c.payload.spirv.empty())
    throw Error(ErrorCode::kUnsupported,
                "the shader is not compiled (shader_language \"" + std::string(custom::language_name(c.payload.language)) +
                    "\"); weft compile turns GLSL/HLSL into SPIR-V",
                where);
  if (!c.payload.dispatch) throw Error(ErrorCode::kUnsupported, "the payload has no dispatch shape (weft_dispatch)", where);
  std::vector<TensorType> ins, outs;
  for (ValueId v : n.inputs) ins.push_back(g.value(v).type);
  for (ValueId v : n.outputs) outs.push_back(g.value(v).type);
  c.resources = custom::check_contract(c.payload, ins, outs, where);
  return c;
}

Caps caps_of(const vk::Device& d) {
  Caps c;
  const vk::DeviceInfo& info = vk::info(d);
  const vk::DeviceFeatures& f = vk::features(d);
  c.device = info.name;
  for (int i = 0; i < 3; ++i) c.max_groups[i] = info.max_workgroup_count[i];
  c.max_invocations = info.max_workgroup_invocations;
  c.max_shared_bytes = f.max_shared_memory;
  c.max_storage_buffers = f.max_storage_buffers;
  c.max_buffer_bytes = info.max_storage_buffer_range;
  c.subgroup_size = f.subgroup_size;
  c.subgroup_arithmetic = f.subgroup_arithmetic;
  c.coop_matrix_f16 = f.coop_matrix_f16 && std::getenv("WEFT_VULKAN_NO_COOP") == nullptr;
  c.fp16_arith = f.float16;
  c.compute_units = f.compute_units;
  return c;
}

bool is_alias_op(Op op) { return op == Op::RESHAPE || op == Op::IDENTITY; }

// What the profile says of one dispatch: the member's pattern ("CONV2D+CLAMP"), its node's label and
// the shader that runs it (KernelProfile::implementation: "tc_gemm64_coop"; none for custom shaders).
struct DispatchName {
  std::string pattern, node, shader;
};

// One region's dispatches as a vk::Program, with the mapping of its external slots to the runtime's
// tensors. GPU time per dispatch is reported through device_profile().
class VulkanKernel final : public Kernel {
 public:
  VulkanKernel(std::shared_ptr<vk::Device> device, vk::ProgramDesc desc, std::vector<size_t> input_args,
               std::vector<DispatchName> dispatch_names)
      : program_(std::move(device), std::move(desc)),
        input_args_(std::move(input_args)),
        names_(std::move(dispatch_names)) {}
  void execute(ExecArgs& a) const override {
    std::vector<const void*> in;
    std::vector<void*> out;
    for (size_t i : input_args_) in.push_back(a.in[i]->bytes());
    for (Tensor& t : a.out) out.push_back(t.mutable_bytes());
    // Contexts of one model share the prepared program (its staging memory): one run at a time.
    std::lock_guard<std::mutex> lock(mu_);
    program_.run(in, out, a.profiling);  // per-dispatch timestamps only when profiled
    last_ms_ = program_.last_dispatch_ms();
  }
  void device_profile(std::vector<KernelProfile>& out) const override {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < last_ms_.size() && i < names_.size(); ++i)
      out.push_back({"vulkan", names_[i].pattern, names_[i].node, last_ms_[i] * 1000.0, true, names_[i].shader});
  }
  size_t prepared_bytes() const override {
    vk::ProgramStats s = program_.stats();
    return s.arena_bytes + s.constant_bytes;
  }

 private:
  mutable std::mutex mu_;
  mutable vk::Program program_;
  std::vector<size_t> input_args_;  // per external-input slot: its index in Composite::inputs
  std::vector<DispatchName> names_;  // per dispatch
  mutable std::vector<double> last_ms_;
};

// Builds the Program of a region: value classes (aliases), slots, dispatches.
class RegionBuilder {
 public:
  RegionBuilder(const Graph& g, const Composite& c, const Caps& caps) : g_(g), c_(c), low_(g, caps) {}

  vk::ProgramDesc build(std::vector<size_t>& input_args, std::vector<DispatchName>& names) {
    std::vector<const Composite*> members;
    if (c_.region == Composite::Region::kSubgraph && !c_.members.empty())
      for (const Composite& m : c_.members) members.push_back(&m);
    else
      members.push_back(&c_);
    p_.name = c_.single() || c_.region != Composite::Region::kSubgraph
                  ? g_.node_label(c_.anchor)
                  : g_.node_label(c_.nodes.front()) + ".." + g_.node_label(c_.nodes.back());

    // Value classes: RESHAPE / IDENTITY join their input's class unless that would put two external
    // values (region inputs, constants, region outputs) in one class; those get a copy instead.
    for (ValueId v : c_.inputs) {
      Info& i = info_[v];
      if (const Tensor* t = low_.constant(v)) i.constant = t;
      else i.input = true;
    }
    for (ValueId v : c_.outputs) info_[v].output = true;
    for (const Composite* m : members) {
      if (!m->single() || !is_alias_op(g_.node(m->anchor).op)) continue;
      const Node& n = g_.node(m->anchor);
      ValueId rx = find(n.inputs[0]), ry = find(n.outputs[0]);
      if (info_[rx].externals() + info_[ry].externals() <= 1) {
        parent_[ry] = rx;
        Info& a = info_[rx];
        const Info& b = info_[ry];
        a.input |= b.input;
        a.output |= b.output;
        if (!a.constant) a.constant = b.constant;
      } else {
        copies_.insert(m->anchor);
      }
    }
    fold_boundary_casts(members);
    // Output slots first, in Composite::outputs order (the runtime's order).
    for (ValueId v : c_.outputs) slot(v);
    fold_transposes(members);
    // A CONCAT of folded SLICEs and an element-wise group reading SLICEs in place bind a buffer per
    // piece: on a device with fewer storage buffers than the shaders can bind, every member is
    // lowered as supports() tried it (vkb::check_storage_buffers).
    if (low_.caps.max_storage_buffers >= vkb::most_shader_buffers()) {
      fold_concat_slices(members);
      fold_loop_slices(members);
    }
    fold_gather_wraps(members);

    for (size_t mi = 0; mi < members.size(); ++mi) {
      const Composite* m = members[mi];
      // Attention's Q K^T, softmax and P V as one dispatch where the three follow each other.
      if (size_t end = attention_end(members, mi)) {
        low_.node = members[end]->anchor;
        pattern_ = "ATTENTION";
        const Mark mark = this->mark();
        vkb::lower_attention(low_, *m, *members[attention_softmax_], *members[end], attention_aliases_);
        if (fits(mark)) {
          flush();
          mi = end;
          continue;
        }
      }
      // Two consecutive units as one dispatch, where the second alone reads the first's result: a
      // split GEMM with the layer norm of its rows as its second pass, a depthwise convolution with
      // the layer norm of its channels, squeeze-and-excitation's two 1x1 convolutions.
      struct PairFusion {
        Op op;  // the first unit's anchor
        std::string (*check)(const Graph&, const Composite&, const Composite&, const vkb::Caps&);
        void (*lower)(vkb::Lowering&, const Composite&, const Composite&);
      };
      static constexpr PairFusion kPairFusions[] = {
          {Op::MATMUL, vkb::check_matmul_layer_norm, vkb::lower_matmul_layer_norm},
          {Op::DEPTHWISE_CONV2D, vkb::check_depthwise_layer_norm, vkb::lower_depthwise_layer_norm},
          {Op::CONV2D, vkb::check_se_mlp, vkb::lower_se_mlp}};
      const PairFusion* fusion = nullptr;
      if (mi + 1 < members.size() && m->anchor >= 0)
        for (const PairFusion& f : kPairFusions)
          if (!fusion && g_.node(m->anchor).op == f.op && f.check(g_, *m, *members[mi + 1], low_.caps).empty()) fusion = &f;
      if (fusion) {
        const Composite& next = *members[mi + 1];
        low_.node = next.anchor;
        pattern_ = (m->pattern.empty() ? std::string(op_name(fusion->op)) : m->pattern) + "+" +
                   (next.pattern.empty() ? std::string(op_name(g_.node(next.anchor).op)) : next.pattern);
        const Mark mark = this->mark();
        fusion->lower(low_, *m, next);
        if (fits(mark)) {
          flush();
          ++mi;
          continue;
        }
      }
      const Node& n = g_.node(m->anchor);
      low_.node = m->anchor;
      pattern_ = m->pattern.empty() ? std::string(op_name(n.op)) : m->pattern;
      if (n.op == Op::CUSTOM) {
        add_custom(m->anchor);
        continue;
      }
      if (folded_.count(m->anchor)) continue;  // read in place (fold_transposes, fold_concat_slices)
      if (auto cv = concat_views_.find(m->anchor); cv != concat_views_.end()) {
        pattern_ = "SLICE+CONCAT";
        if (!vkb::lower_concat_views(low_, n, cv->second))  // (fold_concat_slices checked the rows)
          throw Error(ErrorCode::kInternal, "internal: CONCAT with folded SLICEs has no row form",
                      Location{.graph = g_.name(), .node = g_.node_label(m->anchor)});
        flush();
        continue;
      }
      if (auto f = slice_folds_.find(m->anchor); f != slice_folds_.end()) {
        pattern_ = f->second.src2 != kNoValue ? "CONCAT+TRANSPOSE+SLICE" : "TRANSPOSE+SLICE";
        vkb::lower_view_copy(low_, f->second.src, f->second.view, n.outputs[0], f->second.src2, f->second.select);
        flush();
        continue;
      }
      if (is_alias_op(n.op)) {
        if (copies_.count(m->anchor)) {
          const size_t words = (g_.value(n.outputs[0]).type.byte_size() + 3) / 4;
          low_.dispatch("ew_copy", {static_cast<int32_t>(words)}, {low_.in(n.inputs[0]), low_.out(n.outputs[0])},
                        low_.grid(words));
          flush();
        }
        continue;
      }
      if (auto gw = gather_wraps_.find(m->anchor); gw != gather_wraps_.end()) {
        pattern_ = "SELECT+GATHER";
        vkb::lower_gather_indices(low_, gw->second, true);
        flush();
        continue;
      }
      if (auto lv = loop_views_.find(m->anchor); lv != loop_views_.end()) {
        vkb::lower_ew_loop(low_, *m, lv->second);
        flush();
        continue;
      }
      auto it = vkb::ops_table().find(n.op);
      if (it == vkb::ops_table().end())
        throw Error(ErrorCode::kUnsupported, "the Vulkan backend has no kernel for " + std::string(op_name(n.op)),
                    Location{.graph = g_.name(), .node = g_.node_label(m->anchor)});
      it->second.lower(low_, *m);
      flush();
    }
    // A region of Weft's own shaders (bounded loops) may legitimately run long on a CPU driver: the
    // stuck-shader timeout guards custom shaders only, unless WEFT_VULKAN_TIMEOUT_MS asks otherwise.
    if (!has_custom_) p_.default_timeout_ms = kTosaTimeoutMs;
    input_args = std::move(input_args_);
    names = std::move(names_);
    return std::move(p_);
  }

 private:
  // A SLICE read through a folded TRANSPOSE: its source and the view of it it copies; with src2,
  // the source is a folded CONCAT's two pieces and view dimension `select` picks the piece.
  struct SliceFold {
    ValueId src, src2;
    compiler::StridedView view;
    int select;
  };
  struct Info {
    bool input = false, output = false;
    const Tensor* constant = nullptr;
    int externals() const { return int(input) + int(output) + int(constant != nullptr); }
  };

  // Where members[at] starts attention (Q K^T, softmax, P V with RESHAPEs between; see
  // vkb::check_attention): the index of its P V member (the softmax's and the RESHAPEs' kept in
  // attention_softmax_ / attention_aliases_), else 0.
  size_t attention_end(const std::vector<const Composite*>& members, size_t at) {
    const Composite& qk = *members[at];
    if (qk.single() || g_.node(qk.anchor).op != Op::MATMUL) return 0;
    attention_aliases_.clear();
    size_t j = at + 1;
    auto skip_aliases = [&] {
      while (j < members.size() && members[j]->single() && is_alias_op(g_.node(members[j]->anchor).op) &&
             !copies_.count(members[j]->anchor))
        attention_aliases_.push_back(members[j++]->anchor);
    };
    skip_aliases();
    if (j >= members.size() || members[j]->region != Composite::Region::kSoftmax) return 0;
    attention_softmax_ = j++;
    skip_aliases();
    if (j >= members.size()) return 0;
    return vkb::check_attention(g_, qk, *members[attention_softmax_], *members[j], attention_aliases_, low_.caps).empty() ? j : 0;
  }

  // The members that are one node, by that node.
  static std::map<int, const Composite*> single_members(const std::vector<const Composite*>& members) {
    std::map<int, const Composite*> single;
    for (const Composite* m : members)
      if (m->single()) single[m->anchor] = m;
    return single;
  }

  // A TRANSPOSE whose result only SLICEs of this region read (through RESHAPEs) gets no dispatch:
  // each SLICE copies its elements straight from the TRANSPOSE's input, or from the two pieces of a
  // CONCAT in front of it that gets no dispatch either (compiler::fold_transpose; lower_view_copy).
  // ShuffleNet's channel shuffle followed by the next block's split: one copy per half instead of
  // the branches concatenated, the whole tensor transposed and then split.
  void fold_transposes(const std::vector<const Composite*>& members) {
    const std::map<int, const Composite*> single = single_members(members);
    const std::vector<std::vector<int>> readers = compiler::Uses(g_).readers;
    auto joinable = [&](int n) { return single.count(n) && !copies_.count(n); };
    auto escapes = [&](ValueId v) { return info_[find(v)].output; };
    for (const auto& [t, unused] : single) {
      if (g_.node(t).op != Op::TRANSPOSE) continue;
      const std::optional<compiler::TransposeFold> f = compiler::fold_transpose(g_, t, readers, joinable, escapes);
      if (!f) continue;
      folded_.insert(t);
      if (f->concat >= 0) folded_.insert(f->concat);
      for (const compiler::SliceCopy& c : f->copies)
        slice_folds_[c.slice] = {f->sources[0], f->sources.size() > 1 ? f->sources[1] : kNoValue, c.view, c.select};
    }
  }

  // A SLICE whose result only a CONCAT of this region reads, cut along the CONCAT's axis alone, gets
  // no dispatch: the CONCAT reads its rows in place from the SLICE's input (ly_concat's row strides
  // and offsets). torch.roll as exported (the two halves of an axis sliced and concatenated in the
  // other order: Swin's shifted windows) becomes one copy.
  void fold_concat_slices(const std::vector<const Composite*>& members) {
    const std::map<int, const Composite*> single = single_members(members);
    std::vector<int> readers(g_.values().size(), 0);
    for (const Node& n : g_.nodes())
      for (ValueId v : n.inputs) ++readers[static_cast<size_t>(v)];
    for (const auto& [c, unused] : single) {
      const Node& n = g_.node(c);
      if (n.op != Op::CONCAT || folded_.count(c)) continue;
      const std::optional<vkb::ConcatRows> rows = vkb::concat_rows(g_, n);
      if (!rows) continue;
      const size_t axis = static_cast<size_t>(n.attr_int("axis"));
      std::vector<vkb::ConcatInputView> views(n.inputs.size());
      bool any = false;
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const ValueId v = n.inputs[k];
        const int p = g_.value(v).producer;
        if (p < 0 || !single.count(p) || g_.node(p).op != Op::SLICE || folded_.count(p) || slice_folds_.count(p) ||
            find(v) != v || info_[v].externals() > 0 ||
            static_cast<int>(std::count(n.inputs.begin(), n.inputs.end(), v)) != readers[static_cast<size_t>(v)])
          continue;
        const Node& sl = g_.node(p);
        const int sp = g_.value(sl.inputs[1]).producer;
        if (sp < 0 || g_.node(sp).op != Op::CONST_SHAPE) continue;
        const std::vector<int64_t>& start = g_.node(sp).attr_ints("values");
        const Shape& src = g_.value(sl.inputs[0]).type.shape;
        const Shape& size = g_.value(v).type.shape;
        bool rows_only = start.size() == src.size() && size.size() == src.size();
        for (size_t d = 0; d < src.size() && rows_only; ++d)
          rows_only = d == axis || (start[d] == 0 && size[d] == src[d]);
        if (!rows_only) continue;
        const int64_t stride_bytes = src[axis] * rows->step_bytes, offset_bytes = start[axis] * rows->step_bytes;
        if (stride_bytes % 4 != 0 || offset_bytes % 4 != 0 ||
            rows->outer * (stride_bytes / 4) > std::numeric_limits<int32_t>::max())
          continue;
        views[k] = {sl.inputs[0], stride_bytes / 4, offset_bytes / 4};
        any = true;
      }
      if (!any) continue;
      for (size_t k = 0; k < n.inputs.size(); ++k)
        if (views[k].src != kNoValue) folded_.insert(g_.value(n.inputs[k]).producer);
      concat_views_[c] = std::move(views);
    }
  }

  // A contiguous SLICE whose result only an element-wise group of this region reads gets no
  // dispatch: the group's ew_loop reads the SLICE's input from the slice's first element on. An
  // unrolled LSTM's or GRU's gates are slices of one projection per step (644 SLICE dispatches of
  // a two-layer bidirectional LSTM over 32 steps, 512 of them such).
  void fold_loop_slices(const std::vector<const Composite*>& members) {
    const std::map<int, const Composite*> single = single_members(members);
    const std::vector<std::vector<int>> readers = compiler::Uses(g_).readers;
    for (const Composite* m : members) {
      if (m->region != Composite::Region::kElementwise) continue;
      const std::set<int> inside(m->nodes.begin(), m->nodes.end());
      for (ValueId v : m->inputs) {
        const int p = g_.value(v).producer;
        if (p < 0 || !single.count(p) || g_.node(p).op != Op::SLICE || folded_.count(p) || slice_folds_.count(p) ||
            find(v) != v || info_[v].externals() > 0)
          continue;
        bool only_here = true;
        for (int r : readers[static_cast<size_t>(v)]) only_here = only_here && inside.count(r) > 0;
        const std::optional<int64_t> off = compiler::contiguous_slice_offset(g_, g_.node(p));
        if (!only_here || !off || *off > std::numeric_limits<int32_t>::max()) continue;
        folded_.insert(p);
        loop_views_[m->anchor][v] = {g_.node(p).inputs[0], *off};
      }
    }
  }

  // ONNX's Gather with run-time indices arrives as SELECT(GREATER(0, i), ADD(i, K), i) -> GATHER
  // (a negative index counts from the end of the axis of K rows). Where nothing else reads the
  // SELECT, the GREATER or the ADD, those three get no dispatch: ly_gather reads i and wraps it
  // (a transformer's embedding lookup: three small dispatches fewer).
  void fold_gather_wraps(const std::vector<const Composite*>& members) {
    const std::map<int, const Composite*> single = single_members(members);
    const std::vector<std::vector<int>> readers = compiler::Uses(g_).readers;
    // The single-node member producing v with operator `op`, not folded otherwise; -1 if none.
    auto producer = [&](ValueId v, Op op) {
      const int p = g_.value(v).producer;
      return p >= 0 && single.count(p) && g_.node(p).op == op && !folded_.count(p) && !slice_folds_.count(p) ? p : -1;
    };
    // Whether `v` is read by node `by` alone, and nowhere outside the region.
    auto only_for = [&](ValueId v, int by) {
      const auto& r = readers[static_cast<size_t>(v)];
      auto in = info_.find(v);
      return find(v) == v && (in == info_.end() || in->second.externals() == 0) &&
             std::all_of(r.begin(), r.end(), [&](int x) { return x == by; });
    };
    auto const_is = [&](ValueId v, int64_t want) {
      const Tensor* t = low_.constant(v);
      return t && t->dtype() == DType::kInt32 && t->num_elements() == 1 && t->at_double(0) == static_cast<double>(want);
    };
    for (const Composite* m : members) {
      const Node& n = g_.node(m->anchor);
      if (!m->single() || n.op != Op::GATHER || folded_.count(m->anchor)) continue;
      const int sel = producer(n.inputs[1], Op::SELECT);
      if (sel < 0 || !only_for(n.inputs[1], m->anchor)) continue;
      const Node& s = g_.node(sel);
      const ValueId i = s.inputs[2];
      const int gt = producer(s.inputs[0], Op::GREATER), add = producer(s.inputs[1], Op::ADD);
      if (gt < 0 || add < 0 || !only_for(s.inputs[0], sel) || !only_for(s.inputs[1], sel)) continue;
      const Node& gn = g_.node(gt);
      const Node& an = g_.node(add);
      const int64_t K = g_.value(n.inputs[0]).type.shape[1];
      if (!(const_is(gn.inputs[0], 0) && gn.inputs[1] == i)) continue;
      if (!((an.inputs[0] == i && const_is(an.inputs[1], K)) || (an.inputs[1] == i && const_is(an.inputs[0], K)))) continue;
      folded_.insert(sel);
      folded_.insert(gt);
      folded_.insert(add);
      gather_wraps_[m->anchor] = i;
    }
  }

  // The fp16 mode's CASTs at the region's boundary (fp32 input -> fp16, fp16 result -> fp32 output)
  // get no dispatch: the host converts while it copies into or out of staging memory
  // (vk::ProgramSlot::HostCast), which also halves the bytes moved. An input CAST folds where no
  // other node of the region reads its fp32 input and its fp16 result is not external; an output
  // CAST where its fp16 operand is produced in the region, is not external itself, and no node of
  // the region reads the fp32 result. The CAST's rounding (to nearest even) is the host's.
  void fold_boundary_casts(const std::vector<const Composite*>& members) {
    const std::map<int, const Composite*> single = single_members(members);
    const std::vector<std::vector<int>> readers = compiler::Uses(g_).readers;
    const std::set<int> region(c_.nodes.begin(), c_.nodes.end());
    // Whether no node of the region other than `but` reads a value of v's class.
    auto read_only_by = [&](ValueId v, int but) {
      const ValueId r = find(v);
      for (size_t x = 0; x < readers.size(); ++x) {
        if (find(static_cast<ValueId>(x)) != r) continue;
        for (int n : readers[x])
          if (n != but && region.count(n)) return false;
      }
      return true;
    };
    // Whether v's class has no member but v.
    auto alone = [&](ValueId v) {
      if (find(v) != v) return false;
      for (const auto& [x, p] : parent_)
        if (x != v && find(x) == v) return false;
      return true;
    };
    auto ext = [&](ValueId v) { return info_[find(v)].externals(); };
    for (const auto& [ni, m] : single) {
      const Node& n = g_.node(ni);
      if (n.op != Op::CAST || folded_.count(ni)) continue;
      const ValueId x = n.inputs[0], y = n.outputs[0];
      const DType xt = g_.value(x).type.dtype, yt = g_.value(y).type.dtype;
      if (xt == DType::kFp32 && yt == DType::kFp16 && alone(x) && info_[x].input && !info_[x].constant &&
          ext(y) == 0 && read_only_by(x, ni)) {
        host_in_[find(y)] = x;
        folded_.insert(ni);
      } else if (xt == DType::kFp16 && yt == DType::kFp32 && alone(y) && info_[y].output && ext(x) == 0 &&
                 g_.value(x).producer >= 0 && region.count(g_.value(x).producer) && read_only_by(y, -1)) {
        parent_[find(x)] = y;
        host_out_[y] = x;
        folded_.insert(ni);
      }
    }
  }

  ValueId find(ValueId v) {
    auto it = parent_.find(v);
    if (it == parent_.end() || it->second == v) return v;
    ValueId r = find(it->second);
    parent_[v] = r;
    return r;
  }

  uint32_t slot(ValueId v) {
    const ValueId r = find(v);
    auto it = slot_of_.find(r);
    if (it != slot_of_.end()) return it->second;
    const Info& i = info_[r];
    vk::ProgramSlot s;
    s.bytes = g_.value(v).type.byte_size();
    s.name = g_.value(v).name;
    if (auto in = host_in_.find(r); in != host_in_.end()) {  // fold_boundary_casts
      s.role = vk::ProgramSlot::Role::kInput;
      s.host_cast = vk::ProgramSlot::HostCast::kFp32ToFp16;
      s.name = g_.value(in->second).name;
      input_args_.push_back(static_cast<size_t>(std::find(c_.inputs.begin(), c_.inputs.end(), in->second) - c_.inputs.begin()));
    } else if (auto out = host_out_.find(r); out != host_out_.end()) {
      s.role = vk::ProgramSlot::Role::kOutput;
      s.host_cast = vk::ProgramSlot::HostCast::kFp16ToFp32;
      s.bytes = g_.value(out->second).type.byte_size();
    } else if (i.constant) {
      s.role = vk::ProgramSlot::Role::kConstant;
      s.data.assign(i.constant->bytes(), i.constant->bytes() + i.constant->byte_size());
    } else if (i.input) {
      s.role = vk::ProgramSlot::Role::kInput;
      // The runtime's tensor: the first Composite::inputs entry of the class.
      size_t at = 0;
      while (at < c_.inputs.size() && find(c_.inputs[at]) != r) ++at;
      input_args_.push_back(at);
    } else if (i.output) {
      s.role = vk::ProgramSlot::Role::kOutput;
    } else {
      s.role = vk::ProgramSlot::Role::kInternal;
    }
    const uint32_t id = static_cast<uint32_t>(p_.slots.size());
    p_.slots.push_back(std::move(s));
    slot_of_.emplace(r, id);
    return id;
  }

  uint32_t slot(const Arg& a) {
    if (a.kind == Arg::Kind::kValue) return slot(a.value);
    auto& map = a.kind == Arg::Kind::kScratch ? scratch_slot_ : data_slot_;
    auto it = map.find(a.index);
    if (it != map.end()) return it->second;
    vk::ProgramSlot s;
    if (a.kind == Arg::Kind::kScratch) {
      s.bytes = low_.scratch_bytes.at(a.index);
      s.name = "scratch of " + g_.node_label(low_.node);
    } else {
      s.role = vk::ProgramSlot::Role::kConstant;
      s.data = std::move(low_.data_blobs.at(a.index));
      s.bytes = s.data.size();
      s.name = "data of " + g_.node_label(low_.node);
    }
    const uint32_t id = static_cast<uint32_t>(p_.slots.size());
    p_.slots.push_back(std::move(s));
    map.emplace(a.index, id);
    return id;
  }

  // Where the lowering stood before a fusion of several members was tried.
  struct Mark {
    size_t scratch, data;
  };
  Mark mark() const { return {low_.scratch_bytes.size(), low_.data_blobs.size()}; }
  // Whether the dispatches lowered since `m` bind no more storage buffers than the device allows;
  // if not they are dropped, and the members are lowered apart (as supports() tried each of them).
  bool fits(const Mark& m) {
    for (size_t i = flushed_; i < low_.dispatches.size(); ++i)
      if (low_.dispatches[i].args.size() > low_.caps.max_storage_buffers) {
        low_.dispatches.resize(flushed_);
        low_.scratch_bytes.resize(m.scratch);
        low_.data_blobs.resize(m.data);
        return false;
      }
    return true;
  }

  // Turns the lowering's new dispatches into program dispatches.
  void flush() {
    for (; flushed_ < low_.dispatches.size(); ++flushed_) {
      const vkb::Dispatch& d = low_.dispatches[flushed_];
      vk::ProgramDispatch pd;
      pd.desc.name = d.label + " (" + d.shader + ")";
      pd.desc.spirv = vkb::shader_spirv(d.shader);
      pd.desc.spec_constants.assign(d.spec.begin(), d.spec.end());
      pd.desc.push_constants = d.push;
      pd.desc.groups = d.groups;
      pd.zero_outputs = false;
      pd.guard_loops = false;  // TOSA shaders bound their loops under lavapipe's limit (ops_tensor.cpp)
      for (size_t i = 0; i < d.args.size(); ++i) {
        const Arg& a = d.args[i];
        custom::BoundResource r;
        r.output = a.write;
        r.index = static_cast<uint32_t>(i);
        r.kind = custom::ResourceKind::kBuffer;
        r.descriptor_type = 7;  // VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
        r.binding = static_cast<uint32_t>(i);
        const uint32_t s = slot(a);
        r.tensor = a.kind == Arg::Kind::kValue ? g_.value(a.value).type
                                               : TensorType{DType::kInt8, {static_cast<int64_t>(p_.slots[s].bytes)}};
        pd.desc.resources.push_back(std::move(r));
        pd.slot_of_resource.push_back(s);
      }
      p_.dispatches.push_back(std::move(pd));
      names_.push_back({pattern_, d.label, d.shader});
    }
  }

  void add_custom(int node) {
    has_custom_ = true;
    const Node& n = g_.node(node);
    Checked checked = check_node(g_, node);
    vk::ProgramDispatch d;
    d.desc.name = g_.node_label(node);
    d.desc.spirv = std::move(checked.payload.spirv);
    d.desc.entry_point = checked.payload.entry_point;
    d.desc.resources = std::move(checked.resources);
    d.desc.push_constants = std::move(checked.payload.push_constant_data);
    d.desc.groups = *checked.payload.dispatch;
    for (const custom::BoundResource& r : d.desc.resources) {
      const std::vector<ValueId>& vals = r.output ? n.outputs : n.inputs;
      d.slot_of_resource.push_back(slot(vals.at(r.index)));
    }
    p_.dispatches.push_back(std::move(d));
    names_.push_back({"CUSTOM", g_.node_label(node), {}});
  }

  const Graph& g_;
  const Composite& c_;
  vkb::Lowering low_;
  size_t attention_softmax_ = 0;
  std::vector<int> attention_aliases_;
  std::map<int, std::vector<vkb::ConcatInputView>> concat_views_;  // fold_concat_slices
  std::map<int, std::map<ValueId, vkb::LoopInputView>> loop_views_;  // fold_loop_slices
  std::map<int, ValueId> gather_wraps_;  // fold_gather_wraps: GATHER -> the indices it wraps itself
  // fold_boundary_casts: the class of an input CAST's fp16 result -> its fp32 input; an output
  // CAST's fp32 result (its class's root, joined by the fp16 operand) -> that operand.
  std::map<ValueId, ValueId> host_in_, host_out_;
  vk::ProgramDesc p_;
  std::map<ValueId, ValueId> parent_;
  std::map<ValueId, Info> info_;
  std::set<int> copies_;
  std::map<ValueId, uint32_t> slot_of_;
  std::map<uint32_t, uint32_t> scratch_slot_, data_slot_;
  std::vector<size_t> input_args_;
  std::vector<DispatchName> names_;
  // Members that get no dispatch: TRANSPOSEs read in place by their SLICEs (fold_transposes), SLICEs
  // read in place by a CONCAT (fold_concat_slices) or an element-wise group (fold_loop_slices),
  // a GATHER's index wrap (fold_gather_wraps), or CASTs the host's copies do (fold_boundary_casts)
  std::set<int> folded_;
  std::map<int, SliceFold> slice_folds_;
  size_t flushed_ = 0;
  bool has_custom_ = false;
  std::string pattern_;  // the member being lowered ("CONV2D+CLAMP", "SOFTMAX"): the profile's name
  static constexpr uint32_t kTosaTimeoutMs = 600000;
};

class VulkanBackend final : public Backend {
 public:
  std::string_view name() const override { return "vulkan"; }
  std::string_view description() const override {
    return "Vulkan compute: TOSA operators as compute shaders and custom shader operators (tosa.CUSTOM), on any "
           "Vulkan 1.1 device with 8/16-bit storage and int64";
  }
  std::string unavailable_reason() const override {
    std::call_once(once_, [this] {
      try {
        if (vk::list_devices().empty()) reason_ = "no Vulkan device found";
      } catch (const Error& e) {
        reason_ = e.message();
      }
    });
    return reason_;
  }
  bool defers_probe() const override { return !vk::gpu_driver_possible(); }
  Grouping grouping() const override { return Grouping::kRegions; }
  bool on_device() const override { return true; }
  bool reads_split_views() const override { return true; }
  bool loop_fusable(const Graph& g, int ni) const override { return vkb::loop_step(g, ni); }
  size_t loop_max_steps() const override { return vkb::kLoopMaxSteps; }
  bool takes_by_default(const Graph& g, const Composite& c) const override {
    if (g.node(c.anchor).op == Op::CUSTOM) return true;
    if (!vk::gpu_driver_possible()) return false;  // only CPU devices could be there: not even opened
    // TOSA operators go to a CPU implementation of Vulkan only when asked for by name. Decided
    // from the device list, so that lavapipe is not opened only to learn that it is a CPU (a
    // CPU-only `weft run` of the BERT encoder: 0.17 s / 121 MB -> 0.11 s / 117 MB); a GPU is then
    // opened for its capabilities.
    try {
      const std::vector<vk::DeviceInfo> devices = vk::list_devices();
      const uint32_t i = vk::select_device("");
      if (i < devices.size() && devices[i].type == "CPU") return false;
    } catch (const Error&) {
      return false;
    }
    std::string why;
    return default_caps(why) != nullptr;
  }
  bool runs_row(const OpDef& def, const TypeSupport& row) const override {
    if (def.op == Op::CUSTOM || is_alias_op(def.op)) return true;
    auto it = vkb::ops_table().find(def.op);
    if (it == vkb::ops_table().end()) return false;
    if (it->second.row) return it->second.row(def, row);
    for (size_t i = 0; i < def.type_vars.size(); ++i)
      if (row.types[i] != DType::kShape && !vkb::shader_type(row.types[i])) return false;
    return true;
  }
  Support supports(const Module&, const Graph& g, const Composite& c) const override {
    const Op op = g.node(c.anchor).op;
    if (op == Op::CONST || op == Op::CONST_SHAPE) return Support::no("");  // forwarded in place on the CPU
    if (op == Op::CUSTOM) {
      if (!c.single()) return Support::no("");
      std::string why = unavailable_reason();
      if (!why.empty()) return Support::no(why);
      try {
        check_node(g, c.anchor);
      } catch (const Error& e) {
        return Support::no(e.message());
      }
      return Support::yes();
    }
    if (!is_alias_op(op) && !vkb::ops_table().count(op))
      return Support::no("no Vulkan kernel for " + std::string(op_name(op)));
    std::string why = unavailable_reason();
    if (!why.empty()) return Support::no(why);
    const Caps* caps = default_caps(why);
    if (!caps) return Support::no(why);
    for (int ni : c.nodes) {
      const Op o = g.node(ni).op;
      if (o == Op::CONST || o == Op::CONST_SHAPE) continue;
      std::string t = vkb::check_tensors(g, ni);
      if (!t.empty()) return Support::no(t);
      // Every tensor is bound whole as one storage buffer (rounded up to 4 bytes).
      for (const std::vector<ValueId>* vs : {&g.node(ni).inputs, &g.node(ni).outputs})
        for (ValueId v : *vs) {
          const TensorType& tt = g.value(v).type;
          if (tt.dtype != DType::kShape && (tt.byte_size() + 3) / 4 * 4 > caps->max_buffer_bytes)
            return Support::no("tensor " + tt.str() + " (" + std::to_string(tt.byte_size()) +
                               " bytes) exceeds maxStorageBufferRange = " + std::to_string(caps->max_buffer_bytes) +
                               " of Vulkan device '" + caps->device + "'");
        }
    }
    if (is_alias_op(op)) return c.single() ? Support::yes() : Support::no("");
    std::string r = vkb::ops_table().at(op).check(g, c, *caps);
    if (r.empty()) r = vkb::check_storage_buffers(g, c, *caps);
    return r.empty() ? Support::yes() : Support::no(r);
  }
  std::unique_ptr<Kernel> prepare(const Module&, const Graph& g, const Composite& c,
                                  const PrepareOptions& options) const override {
    try {
      std::shared_ptr<vk::Device> device = vk::open_device(options.device);
      const Caps caps = caps_of(*device);
      if (std::string missing = vk::features(*device).missing(); !missing.empty()) {
        bool tosa = false;
        for (int ni : c.nodes) tosa |= g.node(ni).op != Op::CUSTOM;
        if (tosa)
          throw Error(ErrorCode::kUnsupported, "Vulkan device '" + caps.device + "' lacks " + missing +
                                                   ", which the TOSA shaders need");
      }
      std::vector<size_t> input_args;
      std::vector<DispatchName> names;
      RegionBuilder builder(g, c, caps);
      vk::ProgramDesc p = builder.build(input_args, names);
      auto kernel = std::make_unique<VulkanKernel>(std::move(device), std::move(p), std::move(input_args), std::move(names));
      // The constants are on the device now and the kernel never reads the host's bytes again: a
      // weight borrowed from the model file may leave memory (Buffer::release_resident).
      for (ValueId v : c.inputs)
        if (const Tensor* t = vkb::const_tensor(g, v)) t->buffer().release_resident();
      return kernel;
    } catch (const Error& e) {
      throw e.with_context({.graph = g.name(), .node = g.node_label(c.anchor)});
    }
  }

 private:
  // The default device's capabilities (what supports() decides by; prepare() re-checks the chosen
  // device). Null with `why` set when the device cannot be opened or lacks the shaders' types.
  const Caps* default_caps(std::string& why) const {
    std::call_once(caps_once_, [this] {
      try {
        auto d = vk::open_device();
        caps_ = caps_of(*d);
        std::string missing = vk::features(*d).missing();
        if (!missing.empty()) caps_reason_ = "Vulkan device '" + caps_.device + "' lacks " + missing;
      } catch (const Error& e) {
        caps_reason_ = e.message();
      }
    });
    why = caps_reason_;
    return caps_reason_.empty() ? &caps_ : nullptr;
  }

  mutable std::once_flag once_, caps_once_;
  mutable std::string reason_, caps_reason_;
  mutable Caps caps_;
};

}  // namespace

const Backend& vulkan_backend() {
  static const VulkanBackend b;
  return b;
}

}  // namespace weft::backend
