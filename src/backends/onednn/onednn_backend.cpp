// The oneDNN backend: convolutions (plain, depthwise, transposed) with a fused PAD in front and
// residual adds and activations behind, matmuls reading transposed operands in place (strided
// views) with fused bias and activations, pooling, element-wise activations, binary operators
// with broadcasting, concat, transpose (reorder) and reductions.
//
// Everything that does not depend on a run's data is done once in prepare(): primitive
// descriptors and primitives are created, constant weights are reordered into the layout the
// primitive prefers and kept. Scratch memory is user-managed: each kernel reports its
// scratchpad size as its workspace and the runtime hands it a slice of the context's arena.
// Activations stay in Weft's plain NHWC / row-major layouts, so oneDNN and Weft kernels can be
// mixed freely within one graph.
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include <oneapi/dnnl/dnnl.hpp>

#include "backends/backend.h"
#include "backends/onednn/channel_chain.h"
#include "backends/onednn/elementwise_loop.h"
#include "backends/onednn/gemm.h"
#include "backends/onednn/gemv.h"
#include "backends/onednn/lanes.h"
#include "backends/onednn/pool.h"
#include "backends/onednn/view_copy.h"
#include "backends/reference/parallel.h"
#include "compiler/strided_view.h"
#include "compiler/uses.h"

namespace weft::backend {
namespace {

namespace dn = dnnl;
using dt = dn::memory::data_type;
using tag = dn::memory::format_tag;
using compiler::StridedView;

dn::engine& engine() {
  static dn::engine e(dn::engine::kind::cpu, 0);
  return e;
}
dn::stream& stream() {
  thread_local dn::stream s(engine());
  return s;
}

// oneDNN's int8 kernels without VNNI multiply-add pairs into int16 and can saturate.
bool dnnl_int8_exact_isa() {
  // cpu_isa values are bit sets, each a superset of the ISAs it extends.
  const auto isa = static_cast<unsigned>(dn::get_effective_cpu_isa());
  auto has = [&](dn::cpu_isa want) { return (isa & static_cast<unsigned>(want)) == static_cast<unsigned>(want); };
  return has(dn::cpu_isa::avx512_core_vnni) || has(dn::cpu_isa::avx2_vnni);
}

std::optional<dt> dnnl_type(DType d) {
  switch (d) {
    case DType::kFp32: return dt::f32;
    case DType::kInt8: return dt::s8;
    case DType::kInt32: return dt::s32;
    default: return std::nullopt;
  }
}

dn::memory::dims dims_of(const Shape& s) { return dn::memory::dims(s.begin(), s.end()); }

dn::memory::desc strided_md(const StridedView& v, dt type) {
  return dn::memory::desc(dims_of(v.dims), type, dn::memory::dims(v.strides.begin(), v.strides.end()));
}
dn::memory::desc plain_md(const TensorType& t) {
  return strided_md(StridedView::contiguous(t.shape.empty() ? Shape{1} : t.shape), *dnnl_type(t.dtype));
}
// An NHWC tensor described to oneDNN as logical NCHW (NDHWC as NCDHW for 3-D windows).
dn::memory::desc nhwc_md(const TensorType& t) {
  const Shape& s = t.shape;
  if (s.size() == 5) return dn::memory::desc({s[0], s[4], s[1], s[2], s[3]}, *dnnl_type(t.dtype), tag::ndhwc);
  return dn::memory::desc({s[0], s[3], s[1], s[2]}, *dnnl_type(t.dtype), tag::nhwc);
}

const Node* producer(const Graph& g, ValueId v) {
  int p = g.value(v).producer;
  return p < 0 ? nullptr : &g.node(p);
}
const Tensor* constant(const Graph& g, ValueId v) {
  const Node* p = producer(g, v);
  return p && p->op == Op::CONST ? &p->attr_tensor("values") : nullptr;
}
bool const_zero(const Graph& g, ValueId v) {
  const Tensor* t = constant(g, v);
  if (!t) return false;
  for (int64_t i = 0; i < t->num_elements(); ++i)
    if (t->at_double(i) != 0) return false;
  return true;
}
std::vector<int64_t> const_shape(const Graph& g, ValueId v) {
  const Node* p = producer(g, v);
  if (!p || p->op != Op::CONST_SHAPE) return {};
  return p->attr_ints("values");
}

const TensorType& type_of(const Graph& g, ValueId v) { return g.value(v).type; }

std::optional<int32_t> const_scalar_int(const Graph& g, ValueId v) {
  const Tensor* t = constant(g, v);
  if (!t || t->num_elements() != 1) return std::nullopt;
  return static_cast<int32_t>(t->at_int(0));
}


// ---- Kernels ------------------------------------------------------------------------------------

// Where each primitive argument comes from at execution: an input of the composite (as a strided
// view of its memory), its output, or memory prepared once.
struct Arg {
  int id;                  // DNNL_ARG_*
  dn::memory::desc md;
  int input = -1;          // index into ExecArgs::in
  bool output = false;     // ExecArgs::out[0]
  std::shared_ptr<dn::memory> prepared;  // weights, bias: owned by the kernel
  int64_t offset = 0;      // bytes from the input's start (a strided view after a SLICE)
};

// A kernel that runs on at most the threads prepare() gave it (thread_cap: memory-bound operators
// measured slower on more), whatever ExecArgs::threads asks for.
class CappedKernel : public Kernel {
 public:
  void set_max_threads(int n) { max_threads_ = n; }

 protected:
  int thread_count(const ExecArgs& a) const { return std::min(a.threads, max_threads_); }

 private:
  int max_threads_ = 1 << 20;
};

class OneDnnKernel final : public CappedKernel {
 public:
  OneDnnKernel(dn::primitive prim, std::vector<Arg> args, size_t scratch, bool library_scratch, bool in_place,
               size_t prepared)
      : prim_(std::move(prim)), args_(std::move(args)), scratch_(scratch), library_scratch_(library_scratch),
        in_place_(in_place), prepared_(prepared) {}

  size_t workspace_bytes() const override { return library_scratch_ ? 0 : scratch_; }
  size_t prepared_bytes() const override { return prepared_; }
  bool in_place_ok() const override { return in_place_; }
  int in_place_input() const override { return residual_ >= 0 ? residual_ : -1; }

  void execute(ExecArgs& a) const override {
    if (residual_ >= 0) {
      const Tensor& r = *a.in[static_cast<size_t>(residual_)];
      if (r.bytes() != a.out[0].bytes()) std::memcpy(a.out[0].mutable_bytes(), r.bytes(), r.byte_size());
    }
    const int threads = thread_count(a);
    if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
    std::unordered_map<int, dn::memory> map;
    map.reserve(args_.size() + 1);
    for (const Arg& arg : args_) {
      if (arg.prepared) {
        map.emplace(arg.id, *arg.prepared);
      } else if (arg.output) {
        map.emplace(arg.id, dn::memory(arg.md, engine(), a.out[0].mutable_bytes()));
      } else {
        map.emplace(arg.id, dn::memory(arg.md, engine(),
                                       const_cast<uint8_t*>(a.in[static_cast<size_t>(arg.input)]->bytes()) + arg.offset));
      }
    }
    if (!library_scratch_ && scratch_ > 0)
      map.emplace(DNNL_ARG_SCRATCHPAD, dn::memory(scratch_md_, engine(), a.workspace));
    try {
      prim_.execute(stream(), map);
      stream().wait();
    } catch (const dn::error& e) {
      throw Error(ErrorCode::kRuntime, std::string("oneDNN failed to run ") + impl_ + ": " + e.what());
    }
    if (swish_after_) {  // the last post-op, as a pass of Weft's own (see append_post_ops)
      float* y = reinterpret_cast<float*>(a.out[0].mutable_bytes());
      const int64_t n = a.out[0].num_elements(), block = 4096;
      ref::parallel_for(threads, (n + block - 1) / block, [&](int64_t b0, int64_t b1) {
        const int64_t e0 = b0 * block, e1 = std::min(n, b1 * block);
        cpu::swish_avx512(y + e0, e1 - e0);
      });
    }
  }

  void set_scratch_md(const dn::memory::desc& md) { scratch_md_ = md; }
  void set_swish_after(bool on) { swish_after_ = on; }
  void set_impl(std::string impl) { impl_ = std::move(impl); }
  std::string implementation() const override { return impl_; }
  const std::string& impl() const { return impl_; }
  void set_residual(int input, bool in_place) {
    residual_ = input;
    in_place_ = in_place;
  }
  const std::vector<Arg>& args() const { return args_; }

 private:
  dn::primitive prim_;
  std::vector<Arg> args_;
  size_t scratch_;
  bool library_scratch_;
  bool in_place_;
  size_t prepared_;
  dn::memory::desc scratch_md_;
  int residual_ = -1;
  bool swish_after_ = false;  // apply swish to the output after the primitive (cpu::swish_avx512)
  std::string impl_;  // oneDNN's implementation name, e.g. "brgconv:avx512_core"
};

// supports() builds the primitive descriptors to ask oneDNN, but transforms no weights.
thread_local bool g_dry_run = false;

// The primitive of `pd`, or an empty one in a dry run: supports() needs the descriptor (its
// implementation, its scratchpad) but not the JIT-compiled kernel.
template <class Prim, class Pd>
dn::primitive build(const Pd& pd) {
  return g_dry_run ? dn::primitive() : dn::primitive(Prim(pd));
}

// Reorders constant `src` (described by `from`) into a new buffer laid out as `to`. The result is
// shared through `cache` by every preparation of the model that asks for the same layout (the
// preparations for other thread counts), so weights are not held twice.
// `offset`: where `from`'s first byte lies in `src` (a block of it).
std::shared_ptr<dn::memory> reorder_constant(const Tensor& src, const dn::memory::desc& from, const dn::memory::desc& to,
                                             PreparedCache* cache, size_t offset = 0) {
  if (g_dry_run) return nullptr;
  std::string key;
  if (cache) {
    const dnnl_memory_desc_t& f = from.data;
    const dnnl_memory_desc_t& t = to.data;
    key = "onednn:" + std::to_string(reinterpret_cast<uintptr_t>(src.bytes() + offset));
    key.append(reinterpret_cast<const char*>(&f), sizeof f);
    key.append(reinterpret_cast<const char*>(&t), sizeof t);
    if (auto hit = cache->find(key)) {
      src.buffer().release_resident();  // this kernel does not read the constant either
      return std::static_pointer_cast<dn::memory>(hit);
    }
  }
  auto out = std::make_shared<dn::memory>(to, engine());
  dn::memory in(from, engine(), const_cast<uint8_t*>(src.bytes()) + offset);
  dn::reorder(in, *out).execute(stream(), in, *out);
  stream().wait();
  if (cache) cache->put(key, out);
  src.buffer().release_resident();  // a weight mapped from a file is not held twice
  return out;
}

dn::primitive_attr base_attr(const PrepareOptions& o) {
  dn::primitive_attr attr;
  attr.set_scratchpad_mode(o.library_scratchpad ? dn::scratchpad_mode::library : dn::scratchpad_mode::user);
  return attr;
}

// `residual`: input index a sum post-op adds (copied to dst before running unless dst is it).
std::unique_ptr<Kernel> finish(dn::primitive prim, const dn::primitive_desc_base& pd, std::vector<Arg> args,
                               const PrepareOptions& o, bool in_place = false, int residual = -1,
                               bool swish_after = false) {
  size_t prepared = 0;
  for (const Arg& a : args)
    if (a.prepared) prepared += a.prepared->get_desc().get_size();
  if (g_dry_run) args.clear();  // supports(): only the descriptors were wanted
  dn::memory::desc smd = pd.scratchpad_desc();
  auto k = std::make_unique<OneDnnKernel>(std::move(prim), std::move(args), smd.get_size(), o.library_scratchpad,
                                          in_place, prepared);
  k->set_scratch_md(smd);
  k->set_impl(pd.impl_info_str());
  k->set_swish_after(swish_after);
  if (residual >= 0) {
    // In place over the residual only when no other operand of the primitive reads it.
    bool shared = false;
    for (const Arg& a : k->args())
      if (a.input == residual) shared = true;
    k->set_residual(residual, !shared);
  }
  return k;
}

// ---- Post-ops -----------------------------------------------------------------------------------

std::optional<std::pair<float, float>> clamp_bounds(const Node& n) {
  const Tensor& lo = n.attr_tensor("min_val");
  const Tensor& hi = n.attr_tensor("max_val");
  if (lo.dtype() != DType::kFp32) return std::nullopt;
  return std::make_pair(static_cast<float>(lo.at_double(0)), static_cast<float>(hi.at_double(0)));
}

// Appends the composite's post-ops (after `skip_bias` if the primitive takes the bias itself).
// Residual operands become binary post-op arguments read from the composite's inputs.
// `swish_after` (convolutions): where given and the CPU has AVX-512, a swish that is the last
// post-op is left out and *swish_after set: the kernel applies cpu::swish_avx512 to the output after
// the primitive. oneDNN 2.6's swish post-op took 0.35 ms over EfficientNet-B0's first expansion
// (1.2 M values) where the convolution took 0.23 (docs/backends.md).
void append_post_ops(const Graph& g, const Composite& c, dn::post_ops& ops, std::vector<Arg>& args,
                     const dn::memory::desc& dst_md, bool nhwc, int* residual_input, bool* swish_after = nullptr) {
  for (const PostOp& p : c.post_ops) {
    const Node& n = g.node(p.node);
    switch (p.kind) {
      case PostOp::Kind::kBias: {
        // matmul: bias as a binary add broadcast over all but the last dimension.
        // One value per index of the last dimension, broadcast over the others (of the
        // destination's rank, which differs from the bias's behind a post_reshape).
        const TensorType& bt = type_of(g, p.operand);
        dn::memory::dims dims(dst_md.dims().size(), 1);
        dims.back() = bt.shape.back();
        dn::memory::desc md = plain_md(TensorType{DType::kFp32, Shape(dims.begin(), dims.end())});
        ops.append_binary(dn::algorithm::binary_add, md);
        args.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(ops.len() - 1) | DNNL_ARG_SRC_1, md, c.input_index(p.operand)});
        break;
      }
      case PostOp::Kind::kResidual: {
        // A sum post-op: the primitive adds what dst holds. The kernel puts the residual there
        // first, unless the memory planner already placed dst over the residual (in place). oneDNN
        // picks its faster brgemm convolutions for sum but not for a full-tensor binary add
        // (ResNet-50's 16 residual convs: 12.4 ms against 14.3 ms on one thread).
        ops.append_sum(1.f);
        *residual_input = c.input_index(p.operand);
        break;
      }
      case PostOp::Kind::kClamp: {
        auto [lo, hi] = *clamp_bounds(n);
        if (lo == 0 && hi >= std::numeric_limits<float>::max())
          ops.append_eltwise(1.f, dn::algorithm::eltwise_relu, 0.f, 0.f);
        else
          ops.append_eltwise(1.f, dn::algorithm::eltwise_clip_v2, lo, hi);
        break;
      }
      case PostOp::Kind::kSigmoid: ops.append_eltwise(1.f, dn::algorithm::eltwise_logistic, 0.f, 0.f); break;
      case PostOp::Kind::kTanh: ops.append_eltwise(1.f, dn::algorithm::eltwise_tanh, 0.f, 0.f); break;
      case PostOp::Kind::kSwish:
        if (swish_after && &p == &c.post_ops.back() && dst_md.data_type() == dn::memory::data_type::f32 &&
            cpu::swish_avx512_supported()) {
          *swish_after = true;
          break;
        }
        ops.append_eltwise(1.f, dn::algorithm::eltwise_swish, 1.f, 0.f);
        break;
      case PostOp::Kind::kGeluErf: ops.append_eltwise(1.f, dn::algorithm::eltwise_gelu_erf, 0.f, 0.f); break;
      // oneDNN 2.6's hardswish is x * relu6(x + 3) / 6, the same function (its alpha and beta are ignored).
      case PostOp::Kind::kHardSwish: ops.append_eltwise(1.f, dn::algorithm::eltwise_hardswish, 0.f, 0.f); break;
      case PostOp::Kind::kGeluTanh: ops.append_eltwise(1.f, dn::algorithm::eltwise_gelu_tanh, 0.f, 0.f); break;
      // A binary multiply / add by the constant (one rounding, as the MUL / ADD), not
      // eltwise_linear: oneDNN 2.6's matmul dropped the beta of a linear post-op that followed
      // another (MATMUL+SCALE+SHIFT; the LRN node test failed with it).
      // A per-channel constant is broadcast along the channel: oneDNN's logical dimension 1 of a
      // convolution's NCHW, the last of a matmul's.
      case PostOp::Kind::kScale:
      case PostOp::Kind::kShift: {
        dn::memory::dims dims(dst_md.dims().size(), 1);
        const int64_t values = shape_elements(type_of(g, p.operand).shape);
        if (values > 1) dims[nhwc ? 1 : dims.size() - 1] = values;
        dn::memory::desc md = plain_md(TensorType{DType::kFp32, Shape(dims.begin(), dims.end())});
        ops.append_binary(p.kind == PostOp::Kind::kScale ? dn::algorithm::binary_mul : dn::algorithm::binary_add, md);
        args.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(ops.len() - 1) | DNNL_ARG_SRC_1, md, c.input_index(p.operand)});
        break;
      }
      case PostOp::Kind::kMask:
        throw Error(ErrorCode::kInternal, "oneDNN was given a broadcast ADD post-op, which post_ops_supported declines");
    }
  }
}

// The attributes of a convolution or matmul: scratchpad mode, the int8 input zero point (from
// constant `zp`, kNoValue for fp32) and the composite's post-ops.
dn::primitive_attr compute_attr(const Graph& g, const Composite& c, const PrepareOptions& o, ValueId zp,
                                const dn::memory::desc& dst_md, bool nhwc, std::vector<Arg>& args, int* residual,
                                bool* swish_after = nullptr) {
  dn::primitive_attr attr = base_attr(o);
  if (zp != kNoValue) {
    const int32_t z = *const_scalar_int(g, zp);
    if (z != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {z});
  }
  dn::post_ops ops;
  append_post_ops(g, c, ops, args, dst_md, nhwc, residual, swish_after);
  attr.set_post_ops(ops);
  return attr;
}

Support post_ops_supported(const Graph& g, const Composite& c) {
  for (const PostOp& p : c.post_ops) {
    // (The ADD then runs on its own, with its broadcast.)
    if (p.kind == PostOp::Kind::kMask) return Support::no("a broadcast ADD (an attention mask) is not fused on the CPU");
    if (p.kind == PostOp::Kind::kClamp && !clamp_bounds(g.node(p.node)))
      return Support::no("CLAMP bounds of a non-fp32 type cannot be fused");
    if (p.operand != kNoValue && type_of(g, p.operand).dtype != DType::kFp32)
      return Support::no("only fp32 operands of fused adds and products are fused");
  }
  return Support::yes();
}

// ---- int8 ---------------------------------------------------------------------------------------
//
// oneDNN's int8 convolutions and matmuls accumulate in int32 but pass the sum through fp32 on its
// way to an int32 destination (bias, scales and conversion happen in fp32). The result is exact
// when every |sum| stays within 2^24, where fp32 holds integers exactly. With constant weights that
// bound is computed per output channel at partition time; a node whose bound is larger stays on
// the reference backend, which is exact for all inputs. Zero points: the input's is passed to
// oneDNN, the weights' must be 0.

constexpr double kExactInt = 16777216.0;  // 2^24

std::optional<std::array<int64_t, 4>> fusable_pad(const Graph& g, const Node& pad, double fill);
std::optional<std::array<int64_t, 2>> end_crop(const Graph& g, const Node& slice);


// max |x - zp| for int8 x.
double int8_span(int32_t zp) { return std::max(127.0 - zp, 128.0 + zp); }

// The largest |accumulator| an int8 conv/matmul can reach: per output channel `oc`, the sum of
// |w| over its reduction, times the largest |input - zp|, plus |bias|. `w_index(oc, k)` walks the
// K weights of channel oc.
template <class F>
double int8_bound(int64_t channels, int64_t k, F&& weight, const Tensor* bias, int32_t zp) {
  double worst = 0;
  for (int64_t oc = 0; oc < channels; ++oc) {
    double sum = 0;
    for (int64_t i = 0; i < k; ++i) sum += std::abs(weight(oc, i));
    double b = bias ? std::abs(bias->at_double(bias->num_elements() == 1 ? 0 : oc)) : 0;
    worst = std::max(worst, sum * int8_span(zp) + b);
  }
  return worst;
}

Support int8_conv_supported(const Graph& g, const Composite& c) {
  const Node& n = g.node(c.anchor);
  if (!dnnl_int8_exact_isa()) return Support::no("int8 " + std::string(op_name(n.op)) + ": this CPU has no VNNI, where oneDNN's int8 kernels can saturate");
  if (type_of(g, n.inputs[1]).dtype != DType::kInt8) return Support::no("only int8 weights (not int4) are offloaded");
  const Tensor* w = constant(g, n.inputs[1]);
  const Tensor* bias = constant(g, n.inputs[2]);
  if (!w) return Support::no("weights are not a constant (the exactness bound and prepared weights need one)");
  if (!bias) return Support::no("int8: the bias must be a constant");
  auto zp = const_scalar_int(g, n.inputs[3]);
  if (!zp) return Support::no("input zero point must be a constant");
  if (!const_zero(g, n.inputs[4])) return Support::no("int8: the weight zero point must be 0");
  if (n.op == Op::TRANSPOSE_CONV2D) return Support::no("int8 TRANSPOSE_CONV2D is not offloaded");
  if (!c.post_ops.empty()) return Support::no("int8 results (int32) take no fused operations");
  // Padding counts as the input zero point (it adds nothing), so a PAD by that value folds in.
  if (c.pad >= 0 && g.node(c.pad).op == Op::SLICE) {
    if (!end_crop(g, g.node(c.pad))) return Support::no("SLICE is not a crop of the end of H and W");
  } else if (c.pad >= 0 && !fusable_pad(g, g.node(c.pad), *zp)) {
    return Support::no("PAD is not a padding of H and W only by the input zero point");
  }
  const Shape& ws = w->shape();
  double bound;
  if (n.op == Op::DEPTHWISE_CONV2D) {
    // [KH,KW,C,M]: output channel c*M+m reduces over KH*KW.
    const int64_t KH = ws[0], KW = ws[1], C = ws[2], M = ws[3];
    bound = int8_bound(C * M, KH * KW, [&](int64_t oc, int64_t i) {
      return static_cast<double>(w->at_int(((i / KW) * KW + i % KW) * C * M + oc)); }, bias, *zp);
  } else {
    const int64_t K = ws[1] * ws[2] * ws[3];
    bound = int8_bound(ws[0], K, [&](int64_t oc, int64_t i) { return static_cast<double>(w->at_int(oc * K + i)); }, bias, *zp);
  }
  if (bound > kExactInt)
    return Support::no("int8 accumulators may reach " + std::to_string(static_cast<int64_t>(bound)) +
                       " > 2^24, beyond what oneDNN's fp32 epilogue keeps exact");
  return Support::yes();
}

// ---- Convolution and pooling --------------------------------------------------------------------

struct Window {
  dn::memory::dims strides, dilates, pad_l, pad_r, kernel;
};

// PAD in front of a convolution or pooling: its H/W pads (NHWC) when they can be folded into the
// primitive's padding, i.e. it pads only H and W, by >= 0, with `fill`.
std::optional<std::array<int64_t, 4>> fusable_pad(const Graph& g, const Node& pad, double fill) {
  std::vector<int64_t> p = const_shape(g, pad.inputs[1]);
  if (p.size() != 8 || p[0] || p[1] || p[6] || p[7]) return std::nullopt;
  for (int64_t x : p)
    if (x < 0) return std::nullopt;
  const Tensor* c = constant(g, pad.inputs[2]);
  if (!c || c->num_elements() != 1) return std::nullopt;
  double v = c->at_double(0);
  if (!(v == fill || (std::isinf(fill) && std::isinf(v) && v < 0) || (std::isinf(fill) && v <= -3.0e38)))
    return std::nullopt;
  return std::array<int64_t, 4>{p[2], p[3], p[4], p[5]};
}

// SLICE of an NHWC tensor starting at 0 and keeping N and C: the rows / columns it drops at the
// end of H and W, which a convolution takes as (negative) right padding.
std::optional<std::array<int64_t, 2>> end_crop(const Graph& g, const Node& slice) {
  std::vector<int64_t> start = const_shape(g, slice.inputs[1]), size = const_shape(g, slice.inputs[2]);
  const Shape& in = type_of(g, slice.inputs[0]).shape;
  if (start.size() != 4 || size.size() != 4 || in.size() != 4) return std::nullopt;
  for (int64_t s0 : start)
    if (s0 != 0) return std::nullopt;
  if (size[0] != in[0] || size[3] != in[3]) return std::nullopt;
  return std::array<int64_t, 2>{in[1] - size[1], in[2] - size[2]};
}

Support conv_supported(const Graph& g, const Composite& c) {
  const Node& n = g.node(c.anchor);
  const TensorType& in = type_of(g, n.inputs[0]);
  if (in.dtype == DType::kInt8 && n.op == Op::CONV3D) return Support::no("int8 CONV3D is not offloaded");
  if (in.dtype == DType::kInt8) return int8_conv_supported(g, c);
  if (in.dtype != DType::kFp32) return Support::no(std::string(op_name(n.op)) + " on " + std::string(dtype_name(in.dtype)) + " input: only fp32 and int8 convolutions are offloaded");
  if (!constant(g, n.inputs[1])) return Support::no("weights are not a constant (prepared weights need one)");
  if (!const_zero(g, n.inputs[3]) || !const_zero(g, n.inputs[4])) return Support::no("zero points must be constant 0");
  if (n.op == Op::TRANSPOSE_CONV2D) {
    for (int64_t p : n.attr_ints("out_pad"))
      if (p > 0) return Support::no("TRANSPOSE_CONV2D with out_pad > 0 (output padding) is not offloaded");
  }
  const TensorType& bias = type_of(g, n.inputs[2]);
  const int64_t oc = type_of(g, n.outputs[0]).shape.back();
  if (bias.shape[0] != oc && !(bias.shape[0] == 1 && constant(g, n.inputs[2])))
    return Support::no("a bias of one value broadcast over the channels must be a constant");
  if (c.pad >= 0 && g.node(c.pad).op == Op::SLICE) {
    if (!end_crop(g, g.node(c.pad))) return Support::no("SLICE is not a crop of the end of H and W");
  } else if (c.pad >= 0 && !fusable_pad(g, g.node(c.pad), 0.0)) {
    return Support::no("PAD is not a zero padding of H and W only");
  }
  return post_ops_supported(g, c);
}

bool weft_gemm_isa();
std::unique_ptr<Kernel> prepare_tap_conv(const Graph& g, const Composite& c, const PrepareOptions& o);
std::unique_ptr<Kernel> prepare_winograd_conv(const Graph& g, const Composite& c, const PrepareOptions& o);
bool winograd_allowed();

// ---- Convolutions with large weights, split over the output channels -----------------------------
//
// oneDNN 2.6's AVX-512 brgemm convolution streams all of a convolution's weights once per block of
// output rows. Where they exceed the last-level cache, that is a stream from memory: on a 2-core Zen
// 5 VM (32 MiB L3) FCN's 3 x 3 head, 2048 -> 512 channels at 28 x 28 (37.7 MB of weights), ran at 92
// GFLOP/s against 130 for 512 -> 512 (9.4 MB). Run as four convolutions of 128 output channels
// each, every part's weights stay in the L3: 158 -> 127 ms on one thread, 114 -> 78 ms on two (ONNX
// Runtime: 131 and 71). Two parts (18.9 MB each) gained nothing, so a part gets at most a third of
// the L3. On a Xeon whose L3 (300 MiB) holds the weights the split lost (1 thread 119-197 -> 242-248
// ms, 2 threads 86-102 -> 126-136), and on AVX2's jit:avx2 it changed nothing: hence brgconv, and
// weights larger than the L3. Each part writes its own dense NHWC block (a strided destination
// makes oneDNN fall back to its reference loop) in the kernel's workspace, copied into the output's
// channels after it.

// The size of the last-level cache (L3) as the kernel reports it (sysfs; glibc's sysconf reads
// CPUID, which in a VM may describe the host: 320 MiB where sysfs says 32); 0 if unknown.
size_t last_level_cache_bytes() {
  static const size_t bytes = [] {
    size_t best = 0;
    for (int i = 0; i < 8; ++i) {
      const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
      std::ifstream level(dir + "level"), size(dir + "size");
      int l = 0;
      std::string text;
      if (!(level >> l) || !(size >> text) || l != 3 || text.empty()) continue;
      size_t v = 0, k = 0;
      while (k < text.size() && text[k] >= '0' && text[k] <= '9') v = v * 10 + static_cast<size_t>(text[k++] - '0');
      const char unit = k < text.size() ? text[k] : ' ';
      best = std::max(best, unit == 'K' ? v << 10 : unit == 'M' ? v << 20 : unit == 'G' ? v << 30 : v);
    }
    return best;
  }();
  return bytes;
}

class SplitConvKernel final : public CappedKernel {
 public:
  struct Part {
    dn::primitive prim;
    std::shared_ptr<dn::memory> weights, bias;
    dn::memory::desc scratch_md;
  };
  SplitConvKernel(std::vector<Part> parts, dn::memory::desc src_md, dn::memory::desc part_md, int input,
                  int64_t pixels, int64_t oc, std::string impl, bool library_scratch)
      : parts_(std::move(parts)), src_md_(src_md), part_md_(part_md), input_(input), pixels_(pixels), oc_(oc),
        impl_(std::move(impl)), library_scratch_(library_scratch) {
    for (const Part& p : parts_) {
      scratch_ = std::max(scratch_, p.scratch_md.get_size());
      prepared_ += p.weights ? p.weights->get_desc().get_size() : 0;
    }
  }
  size_t workspace_bytes() const override { return block_bytes() + (library_scratch_ ? 0 : scratch_); }
  size_t prepared_bytes() const override { return prepared_; }
  std::string implementation() const override { return impl_; }

  void execute(ExecArgs& a) const override {
    const int threads = thread_count(a);
    if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
    const int64_t ocp = oc_ / static_cast<int64_t>(parts_.size());
    float* block = reinterpret_cast<float*>(a.workspace);
    float* y = reinterpret_cast<float*>(a.out[0].mutable_bytes());
    dn::memory src(src_md_, engine(), const_cast<uint8_t*>(a.in[static_cast<size_t>(input_)]->bytes()));
    dn::memory dst(part_md_, engine(), block);
    for (size_t k = 0; k < parts_.size(); ++k) {
      const Part& p = parts_[k];
      std::unordered_map<int, dn::memory> map = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, *p.weights},
                                                 {DNNL_ARG_BIAS, *p.bias}, {DNNL_ARG_DST, dst}};
      if (!library_scratch_ && scratch_ > 0)
        map.emplace(DNNL_ARG_SCRATCHPAD, dn::memory(p.scratch_md, engine(), a.workspace + block_bytes()));
      try {
        p.prim.execute(stream(), map);
        stream().wait();
      } catch (const dn::error& e) {
        throw Error(ErrorCode::kRuntime, std::string("oneDNN failed to run ") + impl_ + ": " + e.what());
      }
      ref::parallel_for(threads, pixels_, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r)
          std::memcpy(y + r * oc_ + static_cast<int64_t>(k) * ocp, block + r * ocp, static_cast<size_t>(ocp) * sizeof(float));
      });
    }
  }

 private:
  size_t block_bytes() const { return (static_cast<size_t>(pixels_ * oc_ / static_cast<int64_t>(parts_.size())) * sizeof(float) + 63) / 64 * 64; }
  std::vector<Part> parts_;
  dn::memory::desc src_md_, part_md_;
  int input_;
  int64_t pixels_, oc_;
  std::string impl_;
  bool library_scratch_;
  size_t scratch_ = 0, prepared_ = 0;
};

// The parts of a CONV2D (fp32, constant weights and bias, no post-op reading another tensor) whose
// oneDNN implementation `impl` is the brgemm convolution and whose weights exceed the last-level
// cache: as few parts as keep each within a third of it (a power of two dividing the output
// channels in multiples of 16). WEFT_ONEDNN_CONV_SPLIT=n forces n parts on any such convolution
// (tests; 1: never split); nullptr where it is not split.
std::unique_ptr<Kernel> prepare_split_conv(const Graph& g, const Composite& c, const PrepareOptions& o,
                                           const std::string& impl, const dn::memory::desc& src_md,
                                           const dn::primitive_attr& attr, const dn::memory::dims& strides,
                                           const dn::memory::dims& dil, const dn::memory::dims& pad_l,
                                           const dn::memory::dims& pad_r) {
  const Node& n = g.node(c.anchor);
  const Tensor& w = *constant(g, n.inputs[1]);
  const Tensor* bias = constant(g, n.inputs[2]);
  const Shape& ws = w.shape();  // [OC, KH, KW, IC]
  const TensorType& yt = type_of(g, c.outputs[0]);
  const int64_t oc = ws[0];
  if (!bias || yt.shape.size() != 4 || yt.shape[3] != oc) return nullptr;
  int64_t parts = 1;
  if (const char* e = std::getenv("WEFT_ONEDNN_CONV_SPLIT")) {
    parts = std::atoi(e);
  } else if (const size_t llc = last_level_cache_bytes();
             impl.rfind("brgconv:", 0) == 0 && llc > 0 && w.byte_size() > llc) {
    while (w.byte_size() / static_cast<size_t>(parts) > llc / 3) parts *= 2;
  }
  if (parts < 2 || oc % (16 * parts) != 0) return nullptr;
  const int64_t ocp = oc / parts, N = yt.shape[0], OH = yt.shape[1], OW = yt.shape[2];
  const dn::memory::desc part_md({N, ocp, OH, OW}, dt::f32, tag::nhwc);
  const dn::memory::desc w_user({ocp, ws[3], ws[1], ws[2]}, dt::f32, tag::ohwi);
  const dn::memory::desc w_any({ocp, ws[3], ws[1], ws[2]}, dt::f32, tag::any);
  const dn::memory::desc b_md({ocp}, dt::f32, tag::x);
  std::vector<SplitConvKernel::Part> out;
  std::string part_impl;
  for (int64_t k = 0; k < parts; ++k) {
    dn::convolution_forward::desc d(dn::prop_kind::forward_inference, dn::algorithm::convolution_direct, src_md, w_any,
                                    b_md, part_md, strides, dil, pad_l, pad_r);
    dn::convolution_forward::primitive_desc pd(d, attr, engine());
    part_impl = pd.impl_info_str();
    SplitConvKernel::Part p;
    p.prim = build<dn::convolution_forward>(pd);
    p.scratch_md = pd.scratchpad_desc();
    const size_t block = static_cast<size_t>(ocp * ws[1] * ws[2] * ws[3]) * sizeof(float);
    p.weights = reorder_constant(w, w_user, pd.weights_desc(), o.cache, static_cast<size_t>(k) * block);
    if (!g_dry_run) {
      p.bias = std::make_shared<dn::memory>(b_md, engine());
      for (int64_t i = 0; i < ocp; ++i)
        static_cast<float*>(p.bias->get_data_handle())[i] =
            static_cast<float>(bias->at_double(bias->num_elements() == 1 ? 0 : k * ocp + i));
    }
    out.push_back(std::move(p));
  }
  ValueId src = c.pad >= 0 ? g.node(c.pad).inputs[0] : n.inputs[0];
  return std::make_unique<SplitConvKernel>(std::move(out), src_md, part_md, c.input_index(src), N * OH * OW, oc,
                                           part_impl + " x" + std::to_string(parts), o.library_scratchpad);
}

std::unique_ptr<Kernel> prepare_conv(const Graph& g, const Composite& c, const PrepareOptions& o) {
  const Node& n = g.node(c.anchor);
  ValueId src = c.pad >= 0 ? g.node(c.pad).inputs[0] : n.inputs[0];
  const TensorType& st = type_of(g, src);
  const TensorType& ot = type_of(g, c.outputs[0]);
  const TensorType& conv_out = type_of(g, n.outputs[0]);
  const Tensor& w = *constant(g, n.inputs[1]);
  const Shape& ws = w.shape();
  const int64_t oc = conv_out.shape.back();
  if (auto k = prepare_winograd_conv(g, c, o)) return k;

  dn::memory::dims strides = {n.attr_ints("stride")[0], n.attr_ints("stride")[1]};
  dn::memory::dims dil = {0, 0}, pad_l, pad_r;
  dn::memory::desc w_user, w_any;
  const bool int8 = st.dtype == DType::kInt8;
  const dt wt = int8 ? dt::s8 : dt::f32, bt = int8 ? dt::s32 : dt::f32;
  if (n.op == Op::CONV3D) {
    // NDHWC input, [OC, KD, KH, KW, IC] weights ("odhwi"); pad [d0, d1, t, b, l, r].
    const auto& st3 = n.attr_ints("stride");
    const auto& dl3 = n.attr_ints("dilation");
    const auto& p = n.attr_ints("pad");
    strides = {st3[0], st3[1], st3[2]};
    dil = {dl3[0] - 1, dl3[1] - 1, dl3[2] - 1};
    pad_l = {p[0], p[2], p[4]};
    pad_r = {p[1], p[3], p[5]};
    w_user = dn::memory::desc({ws[0], ws[4], ws[1], ws[2], ws[3]}, wt, tag::odhwi);
    w_any = dn::memory::desc({ws[0], ws[4], ws[1], ws[2], ws[3]}, wt, tag::any);
  } else if (n.op == Op::TRANSPOSE_CONV2D) {
    const auto& op = n.attr_ints("out_pad");
    pad_l = {-op[0], -op[2]};
    pad_r = {-op[1], -op[3]};
  } else {
    const auto& p = n.attr_ints("pad");
    pad_l = {p[0], p[2]};
    pad_r = {p[1], p[3]};
    dil = {n.attr_ints("dilation")[0] - 1, n.attr_ints("dilation")[1] - 1};
    if (c.pad >= 0 && g.node(c.pad).op == Op::SLICE) {
      auto crop = *end_crop(g, g.node(c.pad));
      pad_r[0] -= crop[0];
      pad_r[1] -= crop[1];
    } else if (c.pad >= 0) {
      auto zp = const_scalar_int(g, n.inputs[3]);
      auto extra = *fusable_pad(g, g.node(c.pad), st.dtype == DType::kInt8 && zp ? *zp : 0.0);
      pad_l[0] += extra[0];
      pad_r[0] += extra[1];
      pad_l[1] += extra[2];
      pad_r[1] += extra[3];
    }
  }
  if (n.op == Op::CONV3D) {
    // weights described above
  } else if (n.op == Op::DEPTHWISE_CONV2D) {
    // [KH,KW,C,M] -> groups C, M outputs per group: dims {C, M, 1, KH, KW}.
    const int64_t KH = ws[0], KW = ws[1], C = ws[2], M = ws[3];
    w_user = dn::memory::desc({C, M, 1, KH, KW}, wt, {M, 1, 1, KW * C * M, C * M});
    w_any = dn::memory::desc({C, M, 1, KH, KW}, wt, tag::any);
  } else {
    // [OC,KH,KW,IC] -> dims {OC, IC, KH, KW} in "ohwi" order.
    w_user = dn::memory::desc({ws[0], ws[3], ws[1], ws[2]}, wt, tag::ohwi);
    w_any = dn::memory::desc({ws[0], ws[3], ws[1], ws[2]}, wt, tag::any);
  }
  dn::memory::desc src_md = nhwc_md(st), dst_md = nhwc_md(conv_out);
  dn::memory::desc b_md({oc}, bt, tag::x);

  std::vector<Arg> args;
  int residual = -1;
  bool swish_after = false;
  dn::primitive_attr attr =
      compute_attr(g, c, o, int8 ? n.inputs[3] : kNoValue, dst_md, true, args, &residual, &swish_after);

  // Bias: expanded to OC entries when given as one broadcast value.
  const Tensor* bias_const = constant(g, n.inputs[2]);
  std::shared_ptr<dn::memory> bias_mem = std::make_shared<dn::memory>(b_md, engine());
  bool bias_runtime = false;
  if (bias_const) {
    for (int64_t i = 0; i < oc; ++i) {
      const int64_t j = bias_const->num_elements() == 1 ? 0 : i;
      if (int8)
        static_cast<int32_t*>(bias_mem->get_data_handle())[i] = static_cast<int32_t>(bias_const->at_int(j));
      else
        static_cast<float*>(bias_mem->get_data_handle())[i] = static_cast<float>(bias_const->at_double(j));
    }
  } else {
    bias_runtime = type_of(g, n.inputs[2]).shape[0] == oc;
    if (!bias_runtime) throw Error(ErrorCode::kUnsupported, "a broadcast bias must be constant", {.node = g.node_label(c.anchor)});
  }

  // Convolution and deconvolution take the same descriptor arguments.
  dn::primitive prim;
  dn::memory::desc w_pref;
  dn::primitive_desc_base pd_base;  // a handle: copying the derived descriptor in keeps it alive
  auto create = [&](auto kind, dn::algorithm alg) {
    using Prim = decltype(kind);
    typename Prim::desc d(dn::prop_kind::forward_inference, alg, src_md, w_any, b_md, dst_md, strides, dil, pad_l, pad_r);
    typename Prim::primitive_desc pd(d, attr, engine());
    w_pref = pd.weights_desc();
    prim = build<Prim>(pd);
    pd_base = pd;
  };
  if (n.op == Op::TRANSPOSE_CONV2D)
    create(dn::deconvolution_forward(), dn::algorithm::deconvolution_direct);
  else
    create(dn::convolution_forward(), dn::algorithm::convolution_direct);
  // Capped at AVX2, oneDNN has no direct kernel for some convolutions (padding wider than the
  // kernel reaches: atrous convolutions) and runs im2col + GEMM over every tap, padding included.
  // Weft's GEMM per tap adds only the taps inside the input. (Few input channels make each tap's
  // GEMM too short to pay: AlexNet's 11 x 11 over 3 channels stays on oneDNN.)
  if (n.op == Op::CONV2D && !int8 && c.pad < 0 && ws[3] >= 32 && weft_gemm_isa() &&
      std::string(pd_base.impl_info_str()).find("gemm:jit") != std::string::npos)
    if (auto k = prepare_tap_conv(g, c, o)) return k;
  if (n.op == Op::CONV2D && !int8 && args.empty() && residual < 0 && !swish_after && !bias_runtime)
    if (auto k = prepare_split_conv(g, c, o, pd_base.impl_info_str(), src_md, attr, strides, dil, pad_l, pad_r))
      return k;
  args.push_back({DNNL_ARG_SRC, src_md, c.input_index(src)});
  args.push_back({DNNL_ARG_WEIGHTS, w_pref, -1, false, reorder_constant(w, w_user, w_pref, o.cache)});
  if (bias_runtime)
    args.push_back({DNNL_ARG_BIAS, b_md, c.input_index(n.inputs[2])});
  else
    args.push_back({DNNL_ARG_BIAS, b_md, -1, false, bias_mem});
  args.push_back({DNNL_ARG_DST, nhwc_md(ot), -1, true});
  return finish(std::move(prim), pd_base, std::move(args), o, false, residual, swish_after);
}

// ---- Grouped convolutions (Region::kGroupedConv) ------------------------------------------------
//
// TOSA has no group attribute, so a grouped convolution arrives as G SLICEs of the input's
// channels, G CONV2Ds and a CONCAT (ResNeXt-50: 549 CONV2Ds, 515 SLICEs, 16 CONCATs). oneDNN runs
// it as one grouped convolution: the G weights stacked as dims {G, OCg, ICg, KH, KW}, the biases
// stacked, post-ops applied to the concatenation.

Support grouped_conv_supported(const Graph& g, const Composite& c) {
  const Node& n = g.node(c.anchor);
  const TensorType& in = type_of(g, c.source);
  if (in.dtype != DType::kFp32)
    return Support::no("grouped convolution on " + std::string(dtype_name(in.dtype)) + ": only fp32 runs as one");
  if (!const_zero(g, n.inputs[3]) || !const_zero(g, n.inputs[4])) return Support::no("zero points must be constant 0");
  return post_ops_supported(g, c);
}

std::unique_ptr<Kernel> prepare_grouped_conv(const Graph& g, const Composite& c, const PrepareOptions& o) {
  const Node& n = g.node(c.anchor);
  const TensorType& st = type_of(g, c.source);
  const TensorType& cat = type_of(g, g.node(c.group_concat).outputs[0]);
  const TensorType& ot = type_of(g, c.outputs[0]);
  const Shape& ws = type_of(g, n.inputs[1]).shape;  // [OCg, KH, KW, ICg]
  const int64_t G = static_cast<int64_t>(c.group_convs.size()), OCg = ws[0], KH = ws[1], KW = ws[2], ICg = ws[3];
  const auto& p = n.attr_ints("pad");
  dn::memory::dims strides = {n.attr_ints("stride")[0], n.attr_ints("stride")[1]};
  dn::memory::dims dil = {n.attr_ints("dilation")[0] - 1, n.attr_ints("dilation")[1] - 1};
  dn::memory::dims pad_l = {p[0], p[2]}, pad_r = {p[1], p[3]};

  // The groups' weights one after another ([G*OCg, KH, KW, ICg], each group's OHWI block),
  // made once per model and shared by its preparations.
  Tensor stacked;
  if (!g_dry_run) {
    const std::string key = "onednn:grouped:" + std::to_string(reinterpret_cast<uintptr_t>(constant(g, n.inputs[1])->bytes()));
    std::shared_ptr<void> hit = o.cache ? o.cache->find(key) : nullptr;
    if (!hit) {
      auto t = std::make_shared<Tensor>(Tensor::zeros(TensorType{DType::kFp32, {G * OCg, KH, KW, ICg}}));
      const size_t block = static_cast<size_t>(OCg * KH * KW * ICg) * sizeof(float);
      for (int64_t k = 0; k < G; ++k)
        std::memcpy(t->mutable_bytes() + static_cast<size_t>(k) * block,
                    constant(g, g.node(c.group_convs[static_cast<size_t>(k)]).inputs[1])->bytes(), block);
      hit = t;
      if (o.cache) o.cache->put(key, hit);
    }
    stacked = *std::static_pointer_cast<Tensor>(hit);
  }
  const dn::memory::desc w_user({G, OCg, ICg, KH, KW}, dt::f32, {OCg * KH * KW * ICg, KH * KW * ICg, 1, KW * ICg, ICg});
  const dn::memory::desc w_any({G, OCg, ICg, KH, KW}, dt::f32, tag::any);
  const dn::memory::desc src_md = nhwc_md(st), dst_md = nhwc_md(cat);
  const dn::memory::desc b_md({G * OCg}, dt::f32, tag::x);
  auto bias = std::make_shared<dn::memory>(b_md, engine());
  for (int64_t k = 0; k < G; ++k) {
    const Tensor& b = *constant(g, g.node(c.group_convs[static_cast<size_t>(k)]).inputs[2]);
    for (int64_t i = 0; i < OCg; ++i)
      static_cast<float*>(bias->get_data_handle())[k * OCg + i] =
          static_cast<float>(b.at_double(b.num_elements() == 1 ? 0 : i));
  }

  std::vector<Arg> args;
  int residual = -1;
  bool swish_after = false;
  dn::primitive_attr attr = compute_attr(g, c, o, kNoValue, dst_md, true, args, &residual, &swish_after);
  dn::convolution_forward::desc d(dn::prop_kind::forward_inference, dn::algorithm::convolution_direct, src_md, w_any,
                                  b_md, dst_md, strides, dil, pad_l, pad_r);
  dn::convolution_forward::primitive_desc pd(d, attr, engine());
  const dn::memory::desc w_pref = pd.weights_desc();
  args.push_back({DNNL_ARG_SRC, src_md, c.input_index(c.source)});
  args.push_back({DNNL_ARG_WEIGHTS, w_pref, -1, false, reorder_constant(stacked, w_user, w_pref, o.cache)});
  args.push_back({DNNL_ARG_BIAS, b_md, -1, false, bias});
  args.push_back({DNNL_ARG_DST, nhwc_md(ot), -1, true});
  return finish(build<dn::convolution_forward>(pd), pd, std::move(args), o, false, residual, swish_after);
}

Support pool_supported(const Graph& g, const Composite& c) {
  const Node& n = g.node(c.anchor);
  const TensorType& in = type_of(g, n.inputs[0]);
  if (in.dtype != DType::kFp32) return Support::no(std::string(op_name(n.op)) + " on " + std::string(dtype_name(in.dtype)) + ": only fp32 pooling is offloaded");
  if (n.op == Op::AVG_POOL2D) {
    if (!const_zero(g, n.inputs[1]) || !const_zero(g, n.inputs[2])) return Support::no("zero points must be constant 0");
    if (c.pad >= 0) {
      for (int64_t p : n.attr_ints("pad"))
        if (p) return Support::no("PAD before an AVG_POOL2D that pads itself");
      if (!fusable_pad(g, g.node(c.pad), 0.0)) return Support::no("PAD is not a zero padding of H and W only");
    }
  } else if (c.pad >= 0) {
    auto extra = fusable_pad(g, g.node(c.pad), -std::numeric_limits<double>::infinity());
    if (!extra) return Support::no("PAD before MAX_POOL2D does not pad H and W with -inf");
    // A window entirely in the padding is -inf in TOSA but -FLT_MAX in oneDNN: keep every window
    // overlapping the data, as TOSA requires of the pool's own padding (pad < kernel).
    const auto& k = n.attr_ints("kernel");
    const auto& p = n.attr_ints("pad");
    for (int i = 0; i < 4; ++i)
      if ((*extra)[static_cast<size_t>(i)] + p[static_cast<size_t>(i)] >= k[static_cast<size_t>(i / 2)])
        return Support::no("PAD + MAX_POOL2D padding as wide as the kernel (windows entirely in the padding)");
  }
  return Support::yes();
}

// MAX_POOL2D and fp32 AVG_POOL2D on Weft's vector loops (pool.h) rather than oneDNN's pooling
// primitive, on every CPU; `rows(in, r0, r1, out)` computes output rows [r0, r1) of `rows_total`.
// - MAX_POOL2D: GoogLeNet's 13 max pools on one thread of an Intel Xeon presented with AVX2 only:
//   oneDNN's jit:avx2 14.5 ms, ONNX Runtime's MLAS 2.5 ms in the same run; this loop 0.8 ms (another
//   run on the same kind of machine). On this project's Zen 5 it is level with oneDNN at AVX-512 and
//   at AVX2. It follows nan_mode, so it stays on this backend when exact NaN semantics are asked for.
// - AVG_POOL2D: the reference's sums and division, bit for bit. oneDNN's pooling primitive did not
//   get faster with a second thread: Inception-v3's nine 3 x 3 PAD + AVG_POOL2D took 0.92 ms on one
//   thread and 0.99 on two on this project's Zen 5.
template <class Rows>
class PoolLoopKernel final : public CappedKernel {
 public:
  PoolLoopKernel(const char* name, int64_t rows_total, int64_t row_outputs, int input, Rows rows)
      : impl_(std::string(name) + ":" + cpu::cpu_level_name()), rows_total_(rows_total),
        row_outputs_(row_outputs), input_(input), rows_(std::move(rows)) {}
  std::string implementation() const override { return impl_; }
  void execute(ExecArgs& a) const override {
    const float* in = a.in[static_cast<size_t>(input_)]->data<float>();
    float* out = a.out[0].mutable_data<float>();
    // At least ~32K outputs per thread: below that a fork costs more than the loop.
    const int64_t min_rows = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, row_outputs_));
    ref::parallel_for(thread_count(a), rows_total_, [&](int64_t r0, int64_t r1) { rows_(in, r0, r1, out); },
                      min_rows);
  }

 private:
  std::string impl_;
  int64_t rows_total_, row_outputs_;
  int input_;
  Rows rows_;
};

template <class Rows>
std::unique_ptr<Kernel> pool_loop(const char* name, int64_t rows_total, int64_t row_outputs, int input, Rows rows) {
  return std::make_unique<PoolLoopKernel<Rows>>(name, rows_total, row_outputs, input, std::move(rows));
}

std::unique_ptr<Kernel> prepare_pool(const Graph& g, const Composite& c, const PrepareOptions& o) {
  const Node& n = g.node(c.anchor);
  ValueId src = c.pad >= 0 ? g.node(c.pad).inputs[0] : n.inputs[0];
  const auto& k = n.attr_ints("kernel");
  const auto& s = n.attr_ints("stride");
  const auto& p = n.attr_ints("pad");
  dn::memory::dims pad_l = {p[0], p[2]}, pad_r = {p[1], p[3]};
  dn::algorithm alg = n.op == Op::MAX_POOL2D ? dn::algorithm::pooling_max : dn::algorithm::pooling_avg_exclude_padding;
  if (c.pad >= 0) {
    auto extra = *fusable_pad(g, g.node(c.pad), n.op == Op::MAX_POOL2D ? -std::numeric_limits<double>::infinity() : 0.0);
    pad_l[0] += extra[0];
    pad_r[0] += extra[1];
    pad_l[1] += extra[2];
    pad_r[1] += extra[3];
    if (n.op == Op::AVG_POOL2D) alg = dn::algorithm::pooling_avg_include_padding;  // the PAD's zeros count
  }
  if (n.op == Op::MAX_POOL2D) {
    const auto& is = type_of(g, src).shape;
    const auto& os = type_of(g, n.outputs[0]).shape;
    const cpu::MaxPoolShape shape{is[0], is[1], is[2], is[3], os[1], os[2], k[0], k[1], s[0], s[1], pad_l[0], pad_l[1]};
    const bool propagate = n.attr_int("nan_mode") == static_cast<int64_t>(NanMode::kPropagate);
    return pool_loop("weft_max_pool", shape.N * shape.OH, shape.OW * shape.C, c.input_index(src),
                     [shape, propagate, isa = cpu::cpu_level()](const float* in, int64_t r0, int64_t r1, float* out) {
                       cpu::max_pool_rows(shape, propagate, in, r0, r1, out, isa);
                     });
  }
  if (n.op == Op::AVG_POOL2D && static_cast<AccType>(n.attr_int("acc_type")) == AccType::kFp32) {
    const auto& is = type_of(g, src).shape;
    const auto& os = type_of(g, n.outputs[0]).shape;
    std::array<int64_t, 4> extra{};  // the fused PAD's rows and columns, which count
    if (c.pad >= 0) extra = *fusable_pad(g, g.node(c.pad), 0.0);
    const cpu::AvgPoolShape shape{is[0], is[1], is[2], is[3], os[1], os[2], k[0], k[1], s[0], s[1],
                                  pad_l[0], pad_l[1], extra[0], extra[1], extra[2], extra[3]};
    return pool_loop("weft_avg_pool", shape.N * shape.OH, shape.OW * shape.C, c.input_index(src),
                     [shape, isa = cpu::cpu_level()](const float* in, int64_t r0, int64_t r1, float* out) {
                       cpu::avg_pool_rows(shape, in, r0, r1, out, isa);
                     });
  }
  dn::memory::desc src_md = nhwc_md(type_of(g, src)), dst_md = nhwc_md(type_of(g, n.outputs[0]));
  dn::pooling_forward::desc d(dn::prop_kind::forward_inference, alg, src_md, dst_md, {s[0], s[1]}, {k[0], k[1]}, pad_l,
                              pad_r);
  auto pd = dn::pooling_forward::primitive_desc(d, base_attr(o), engine());
  std::vector<Arg> args = {{DNNL_ARG_SRC, src_md, c.input_index(src)}, {DNNL_ARG_DST, dst_md, -1, true}};
  return finish(build<dn::pooling_forward>(pd), pd, std::move(args), o);
}

// ---- Matmul -------------------------------------------------------------------------------------

Support matmul_supported(const Graph& g, const Composite& c) {
  const Node& n = g.node(c.anchor);
  const TensorType& a = type_of(g, n.inputs[0]);
  // Attention's heads of a batch ([B, H, S, dh] as [B*H, S, dh]) have no single batch stride: the
  // memory descriptors here are 3-D, so those TRANSPOSEs stay separate.
  for (const std::vector<int>* chain : {&c.a_view, &c.b_view, &c.out_view}) {
    if (chain->empty()) continue;
    auto v = chain == &c.out_view ? compiler::backward_chain(g, *chain, true) : compiler::forward_chain(g, *chain, true);
    if (v && v->split > 1) return Support::no("a MATMUL operand read through a split batch axis (heads of a batch) is not offloaded");
  }
  if (a.dtype == DType::kInt8) {
    if (!dnnl_int8_exact_isa()) return Support::no("int8 MATMUL: this CPU has no VNNI, where oneDNN's int8 kernels can saturate");
    auto zp = const_scalar_int(g, n.inputs[2]);
    if (!zp) return Support::no("input zero point must be a constant");
    if (!const_zero(g, n.inputs[3])) return Support::no("int8: the B zero point must be 0");
    if (!c.post_ops.empty()) return Support::no("int8 results (int32) take no fused operations");
    const Shape& bs = type_of(g, n.inputs[1]).shape;  // [N, C, W]
    const Tensor* b = c.b_view.empty() ? constant(g, n.inputs[1]) : nullptr;
    double bound = b ? int8_bound(bs[0] * bs[2], bs[1], [&](int64_t ch, int64_t k) {
                         const int64_t batch = ch / bs[2], w = ch % bs[2];
                         return static_cast<double>(b->at_int((batch * bs[1] + k) * bs[2] + w)); }, nullptr, *zp)
                     : 128.0 * static_cast<double>(bs[1]) * int8_span(*zp);
    if (bound > kExactInt)
      return Support::no("int8 accumulators may reach " + std::to_string(static_cast<int64_t>(bound)) +
                         " > 2^24, beyond what oneDNN's fp32 epilogue keeps exact");
    return Support::yes();
  }
  if (a.dtype != DType::kFp32) return Support::no(std::string("MATMUL on ") + std::string(dtype_name(a.dtype)) + ": only fp32 and int8 matmuls are offloaded");
  if (!const_zero(g, n.inputs[2]) || !const_zero(g, n.inputs[3])) return Support::no("zero points must be constant 0");
  return post_ops_supported(g, c);
}

// ---- Batch-1 matmuls with constant weights: Weft's matrix-vector kernel (gemv.h) --------------

// A fp32 post-op applied to each result element in the GEMV kernel (the result is one row).
struct GemvPostOp {
  PostOp::Kind kind;
  std::vector<float> column;  // kBias: the addend, kScale: the factor, kShift: the addend; one per output column
  float lo = 0, hi = 0;       // kClamp
  int input = -1;             // kResidual: the composite's input holding the addend
};

class GemvKernel final : public CappedKernel {
 public:
  // y[n] = sum_k x[k] * w[n * ldw + k]: `weights` keeps the memory `w` points into alive.
  GemvKernel(std::shared_ptr<const void> weights, const float* w, int64_t ldw, int64_t k, int64_t n, int a_input,
             int64_t a_offset, int64_t a_stride, std::vector<GemvPostOp> post, size_t prepared)
      : weights_(std::move(weights)), w_(w), ldw_(ldw), k_(k), n_(n), a_input_(a_input), a_offset_(a_offset),
        a_stride_(a_stride), post_(std::move(post)), prepared_(prepared),
        impl_(std::string("weft_gemv:") + cpu::cpu_level_name()) {}

  size_t workspace_bytes() const override { return a_stride_ == 1 ? 0 : static_cast<size_t>(k_) * sizeof(float); }
  size_t prepared_bytes() const override { return prepared_; }
  std::string implementation() const override { return impl_; }

  // Weights packed in panels of 16 columns (gemv_panels).
  void set_panels() {
    panels_ = true;
    impl_ = std::string("weft_gemv_panels:") + cpu::cpu_level_name();
  }

  // Weights transposed ([k][ldn], gemv_cols) instead of one row per output column.
  void set_columns(int64_t ldn) {
    columns_ = true;
    ldw_ = ldn;
    impl_ = std::string("weft_gemv_cols:") + cpu::cpu_level_name();
  }

  void execute(ExecArgs& a) const override {
    const float* x = a.in[static_cast<size_t>(a_input_)]->data<float>() + a_offset_;
    if (a_stride_ != 1) {  // a strided operand (a transposed view): gathered once per run
      float* g = reinterpret_cast<float*>(a.workspace);
      for (int64_t i = 0; i < k_; ++i) g[i] = x[i * a_stride_];
      x = g;
    }
    float* y = a.out[0].mutable_data<float>();
    // Blocks of 16 columns (gemv_cols) or 4 rows (gemv_rows), at least ~64K multiply-adds per thread.
    const int64_t width = columns_ || panels_ ? 16 : 4;
    const int64_t blocks = (n_ + width - 1) / width;
    const int64_t min_blocks = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, width * k_));
    ref::parallel_for(thread_count(a), blocks, [&](int64_t b0, int64_t b1) {
      const int64_t n0 = b0 * width, n1 = std::min(n_, b1 * width);
      if (panels_) cpu::gemv_panels(w_, x, k_, b0, b1, n_, y);
      else if (columns_) cpu::gemv_cols(w_, ldw_, x, k_, n0, n1, y);
      else cpu::gemv_rows(w_, ldw_, x, k_, n0, n1, y);
      for (const GemvPostOp& p : post_) apply(p, a, y, n0, n1);
    }, min_blocks);
  }

 private:
  static void apply(const GemvPostOp& p, const ExecArgs& a, float* y, int64_t n0, int64_t n1) {
    switch (p.kind) {
      case PostOp::Kind::kBias:
      case PostOp::Kind::kShift:
        for (int64_t i = n0; i < n1; ++i) y[i] += p.column[static_cast<size_t>(i)];
        break;
      case PostOp::Kind::kResidual: {
        const float* r = a.in[static_cast<size_t>(p.input)]->data<float>();
        for (int64_t i = n0; i < n1; ++i) y[i] += r[i];
        break;
      }
      case PostOp::Kind::kClamp:
        for (int64_t i = n0; i < n1; ++i) y[i] = std::min(std::max(y[i], p.lo), p.hi);
        break;
      case PostOp::Kind::kSigmoid:
        for (int64_t i = n0; i < n1; ++i) y[i] = 1.0f / (1.0f + std::exp(-y[i]));
        break;
      case PostOp::Kind::kTanh:
        for (int64_t i = n0; i < n1; ++i) y[i] = std::tanh(y[i]);
        break;
      case PostOp::Kind::kSwish:
        for (int64_t i = n0; i < n1; ++i) y[i] = y[i] / (1.0f + std::exp(-y[i]));
        break;
      case PostOp::Kind::kGeluErf:
        for (int64_t i = n0; i < n1; ++i) y[i] = 0.5f * y[i] * (1.0f + std::erf(y[i] * 0.70710678118654752f));
        break;
      case PostOp::Kind::kHardSwish:
        for (int64_t i = n0; i < n1; ++i) y[i] = y[i] * std::min(std::max(y[i] / 6.0f + 0.5f, 0.0f), 1.0f);
        break;
      case PostOp::Kind::kGeluTanh:
        for (int64_t i = n0; i < n1; ++i)
          y[i] = 0.5f * y[i] * (1.0f + std::tanh(0.7978845608f * (y[i] + 0.044715f * y[i] * y[i] * y[i])));
        break;
      case PostOp::Kind::kScale:
        for (int64_t i = n0; i < n1; ++i) y[i] *= p.column[static_cast<size_t>(i)];
        break;
      case PostOp::Kind::kMask:  // never: row_post_ops gives no kernel for it
        break;
    }
  }

  std::shared_ptr<const void> weights_;
  const float* w_;
  int64_t ldw_, k_, n_;
  int a_input_;
  int64_t a_offset_, a_stride_;
  std::vector<GemvPostOp> post_;
  size_t prepared_;
  std::string impl_;
  bool columns_ = false;
  bool panels_ = false;
};

// Depths up to which a GEMV reads its weights transposed (gemv_cols): below it the horizontal sums
// of gemv_rows cost more than the products (an LSTM step's 48-deep product: 0.7 us a call).
constexpr int64_t kGemvColumnsDepth = 256;
// Depths up to which a GEMV packs its weights in panels of 16 columns, [k][16] each (gemv_panels),
// rather than reading rows: one sequential stream per panel where rows of a few KB are as many short
// streams, whose prefetch restarts every row. Classifier heads at batch 1, one thread on a Zen 5,
// in the model (weights no longer cached): MobileNetV2's and MnasNet's 1280 x 1000 0.33-0.34 ->
// 0.21-0.23 ms, ResNet-50's 2048 x 1000 0.46-0.58 -> 0.31-0.35 ms. Deeper rows (VGG's and AlexNet's
// 4096- to 25088-deep layers) are long streams already and are read in place.
constexpr int64_t kGemvPanelsDepth = 2048;

// The composite's post-ops for a result of `rows` x `cols` written row-major, as the GEMV and
// GEMM kernels apply them; nullopt where one does not fit (a constant neither scalar nor one per
// column, a residual other than the result's shape, CLAMP bounds that are not fp32).
std::optional<std::vector<GemvPostOp>> row_post_ops(const Graph& g, const Composite& c, int64_t rows, int64_t cols) {
  std::vector<GemvPostOp> post;
  for (const PostOp& p : c.post_ops) {
    GemvPostOp q{p.kind, {}, 0, 0, -1};
    if (p.kind == PostOp::Kind::kMask) return std::nullopt;
    if (p.kind == PostOp::Kind::kBias || p.kind == PostOp::Kind::kScale || p.kind == PostOp::Kind::kShift) {
      // One value, or one per output column, spread over the columns.
      const Tensor* t = constant(g, p.operand);
      if (!t || t->dtype() != DType::kFp32 || (t->num_elements() != cols && t->num_elements() != 1)) return std::nullopt;
      q.column.resize(static_cast<size_t>(cols));
      for (int64_t i = 0; i < cols; ++i) q.column[static_cast<size_t>(i)] = t->data<float>()[t->num_elements() == 1 ? 0 : i];
    } else if (p.kind == PostOp::Kind::kResidual) {
      const TensorType& rt = type_of(g, p.operand);
      if (rt.dtype != DType::kFp32 || shape_elements(rt.shape) != rows * cols || rt.shape.back() != cols) return std::nullopt;
      q.input = c.input_index(p.operand);
    } else if (p.kind == PostOp::Kind::kClamp) {
      auto bounds = clamp_bounds(g.node(p.node));
      if (!bounds) return std::nullopt;
      std::tie(q.lo, q.hi) = *bounds;
    }
    post.push_back(std::move(q));
  }
  return post;
}

// The GEMV kernel for `c` when it is a fp32 matmul of one row (batch 1, M = 1) by constant weights
// written straight to its output; nullptr otherwise. Weights whose rows (one per output column)
// are contiguous in k, as Gemm's transB = 1 and MatMul over a transposed initializer leave them,
// are read in place; others are transposed into that layout once (shared through `o.cache`).
std::unique_ptr<Kernel> prepare_gemv(const Graph& g, const Composite& c, const PrepareOptions& o) {
  const Node& n = g.node(c.anchor);
  if (type_of(g, n.inputs[0]).dtype != DType::kFp32 || !c.out_view.empty()) return nullptr;
  const Shape& as = type_of(g, n.inputs[0]).shape;  // [1, 1, K]
  const Shape& bs = type_of(g, n.inputs[1]).shape;  // [1, K, N]
  if (as.size() != 3 || bs.size() != 3 || as[0] != 1 || as[1] != 1 || bs[0] != 1) return nullptr;
  const ValueId b_src = c.b_view.empty() ? n.inputs[1] : g.node(c.b_view.front()).inputs[0];
  const Tensor* b = constant(g, b_src);
  if (!b || b->dtype() != DType::kFp32) return nullptr;
  const int64_t k = bs[1], cols = bs[2];
  StridedView bv = c.b_view.empty() ? StridedView::contiguous(bs) : *compiler::forward_chain(g, c.b_view);
  const ValueId a_src = c.a_view.empty() ? n.inputs[0] : g.node(c.a_view.front()).inputs[0];
  StridedView av = c.a_view.empty() ? StridedView::contiguous(as) : *compiler::forward_chain(g, c.a_view);
  auto post_ops = row_post_ops(g, c, 1, cols);
  if (!post_ops) return nullptr;
  std::vector<GemvPostOp> post = std::move(*post_ops);
  const int64_t a_stride = av.strides[2];
  const int64_t sk = bv.strides[1], sn = bv.strides[2];
  if (g_dry_run)
    return std::make_unique<GemvKernel>(nullptr, nullptr, 0, k, cols, c.input_index(a_src), av.offset, a_stride,
                                        std::move(post), 0);
  const float* base = b->data<float>() + bv.offset;
  if (k > kGemvPanelsDepth && sk == 1) {
    // In place: the constant's buffer is shared (a copy of the Tensor holds it alive).
    auto hold = std::make_shared<Tensor>(*b);
    return std::make_unique<GemvKernel>(hold, base, sn, k, cols, c.input_index(a_src), av.offset, a_stride,
                                        std::move(post), 0);
  }
  // The weights repacked once into `size` floats (zeros where `at` puts nothing), weight (i, j) at
  // at(i, j); shared through `o.cache`, the constant's own pages released.
  auto pack = [&](const char* layout, int64_t size, auto at) {
    const std::string key = std::string(layout) + ":" + std::to_string(reinterpret_cast<uintptr_t>(base)) + ":" +
                            std::to_string(sk) + ":" + std::to_string(sn) + ":" + std::to_string(k) + ":" +
                            std::to_string(cols);
    std::shared_ptr<std::vector<float>> packed;
    if (o.cache) packed = std::static_pointer_cast<std::vector<float>>(o.cache->find(key));
    if (!packed) {
      packed = std::make_shared<std::vector<float>>(static_cast<size_t>(size), 0.0f);
      float* dst = packed->data();
      for (int64_t j = 0; j < cols; ++j)
        for (int64_t i = 0; i < k; ++i) dst[at(i, j)] = base[i * sk + j * sn];
      if (o.cache) o.cache->put(key, packed);
    }
    b->buffer().release_resident();  // read from `packed` only
    return packed;
  };
  if (k <= kGemvColumnsDepth) {
    const int64_t ldn = (cols + 15) / 16 * 16;
    auto packed = pack("gemv_cols", k * ldn, [&](int64_t i, int64_t j) { return i * ldn + j; });
    auto kernel = std::make_unique<GemvKernel>(packed, packed->data(), ldn, k, cols, c.input_index(a_src), av.offset,
                                               a_stride, std::move(post), packed->size() * sizeof(float));
    kernel->set_columns(ldn);
    return kernel;
  }
  if (k <= kGemvPanelsDepth) {
    auto packed = pack("gemv_panels", (cols + 15) / 16 * 16 * k,
                       [&](int64_t i, int64_t j) { return ((j / 16) * k + i) * 16 + j % 16; });
    auto kernel = std::make_unique<GemvKernel>(packed, packed->data(), 16, k, cols, c.input_index(a_src), av.offset,
                                               a_stride, std::move(post), packed->size() * sizeof(float));
    kernel->set_panels();
    return kernel;
  }
  auto packed = pack("gemv", k * cols, [&](int64_t i, int64_t j) { return j * k + i; });
  return std::make_unique<GemvKernel>(packed, packed->data(), k, k, cols, c.input_index(a_src), av.offset, a_stride,
                                      std::move(post), packed->size() * sizeof(float));
}

// ---- fp32 matmuls by constant weights where oneDNN has no brgemm: Weft's GEMM (gemm.h) ----------

// Whether fp32 matmuls by constant weights take Weft's AVX2 GEMM: oneDNN's effective instruction
// set is below AVX-512 (oneDNN 2.6 has no brgemm matmul there and runs `gemm:jit`) while this CPU
// has AVX2 and FMA. ONEDNN_MAX_CPU_ISA=AVX2 on an AVX-512 machine therefore takes it too.
bool weft_gemm_isa() {
  static const bool yes = [] {
    const auto isa = static_cast<unsigned>(dn::get_effective_cpu_isa());
    auto has = [&](dn::cpu_isa want) { return (isa & static_cast<unsigned>(want)) == static_cast<unsigned>(want); };
    return !has(dn::cpu_isa::avx512_core) && has(dn::cpu_isa::avx2) && cpu::gemm_avx2_supported();
  }();
  return yes;
}

// `post` as the AVX2 kernels' epilogue (gemm.h) in `ops` (room for post.size()); a residual is
// read from its input in `a`, in rows of `ld` floats. Returns how many ops it wrote.
int epilogue_ops(const std::vector<GemvPostOp>& post, const ExecArgs& a, int64_t ld, cpu::EpilogueOp* ops) {
  for (size_t o = 0; o < post.size(); ++o) {
    const GemvPostOp& q = post[o];
    switch (q.kind) {
      case PostOp::Kind::kBias:
      case PostOp::Kind::kShift: ops[o] = {cpu::EpilogueOp::Kind::kAddColumns, q.column.data()}; break;
      case PostOp::Kind::kScale: ops[o] = {cpu::EpilogueOp::Kind::kMulColumns, q.column.data()}; break;
      case PostOp::Kind::kResidual:
        ops[o] = {cpu::EpilogueOp::Kind::kAddMatrix, a.in[static_cast<size_t>(q.input)]->data<float>(), ld};
        break;
      case PostOp::Kind::kClamp: ops[o] = {cpu::EpilogueOp::Kind::kClamp, nullptr, 0, q.lo, q.hi}; break;
      case PostOp::Kind::kGeluErf: ops[o] = {cpu::EpilogueOp::Kind::kGeluErf}; break;
      case PostOp::Kind::kSigmoid: ops[o] = {cpu::EpilogueOp::Kind::kSigmoid}; break;
      case PostOp::Kind::kTanh: ops[o] = {cpu::EpilogueOp::Kind::kTanh}; break;
      case PostOp::Kind::kSwish: ops[o] = {cpu::EpilogueOp::Kind::kSwish}; break;
      case PostOp::Kind::kHardSwish: ops[o] = {cpu::EpilogueOp::Kind::kHardSwish}; break;
      case PostOp::Kind::kGeluTanh: ops[o] = {cpu::EpilogueOp::Kind::kGeluTanh}; break;
      case PostOp::Kind::kMask: break;  // never: row_post_ops gives no kernel for it
    }
  }
  return static_cast<int>(post.size());
}

class GemmKernel final : public CappedKernel {
 public:
  static constexpr size_t kMaxOps = 8;

  // out[t][i][j] = sum_k a[t * a_batch + i * lda + k] * B[t][k][j] for `batches` x M rows, then
  // the post-ops.
  GemmKernel(std::shared_ptr<const cpu::PackedB> b, int64_t batches, int64_t m, int a_input, int64_t a_offset,
             int64_t a_batch, int64_t lda, std::vector<GemvPostOp> post)
      : b_(std::move(b)), batches_(batches), m_(m), a_input_(a_input), a_offset_(a_offset), a_batch_(a_batch),
        lda_(lda), post_(std::move(post)) {
    // Rows in chunks of whole 6-row blocks, at most 48 per chunk, as even as that allows.
    const int64_t chunks = (m_ + 47) / 48;
    rows_ = (m_ + chunks - 1) / chunks;
    rows_ = std::min<int64_t>(m_, (rows_ + 5) / 6 * 6);
  }

  size_t prepared_bytes() const override { return b_ ? b_->data.size() * sizeof(float) : 0; }
  std::string implementation() const override { return "weft_gemm:avx2"; }

  void execute(ExecArgs& a) const override {
    const float* x = a.in[static_cast<size_t>(a_input_)]->data<float>() + a_offset_;
    float* y = a.out[0].mutable_data<float>();
    const int64_t n = b_->n, panels = b_->panels(), chunks = (m_ + rows_ - 1) / rows_;
    // The post-ops, applied in registers.
    std::array<cpu::EpilogueOp, kMaxOps> ops;
    const int nops = epilogue_ops(post_, a, n, ops.data());
    // Work items: one 16-column panel of one row chunk of one batch, those of one panel
    // consecutive (its weights stay in cache). Each output is computed whole by one item, so the
    // result does not depend on the thread count.
    const int64_t min_items = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, rows_ * 16 * b_->k));
    ref::parallel_for(thread_count(a), batches_ * panels * chunks, [&](int64_t i0, int64_t i1) {
      std::array<cpu::EpilogueOp, kMaxOps> batch_ops = ops;
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t t = i / (panels * chunks), p = i / chunks % panels;
        const int64_t r0 = (i % chunks) * rows_, r1 = std::min(m_, r0 + rows_);
        float* yt = y + t * m_ * n;
        for (int o = 0; o < nops; ++o)  // a residual's rows of this batch
          if (ops[static_cast<size_t>(o)].kind == cpu::EpilogueOp::Kind::kAddMatrix)
            batch_ops[static_cast<size_t>(o)].v = ops[static_cast<size_t>(o)].v + t * m_ * n;
        cpu::gemm_avx2(x + t * a_batch_, lda_, r0, r1, *b_, t, p, p + 1, yt, n, batch_ops.data(), nops);
      }
    }, min_items);
  }

 private:
  std::shared_ptr<const cpu::PackedB> b_;
  int64_t batches_, m_, rows_ = 0;
  int a_input_;
  int64_t a_offset_, a_batch_, lda_;
  std::vector<GemvPostOp> post_;
};

// Weft's GEMM for `c` where weft_gemm_isa() and `c` is a fp32 matmul by constant weights (as the
// ONNX frontend writes a Linear layer: [1, rows, K] x [1, K, N]; or batched), A's k contiguous,
// written straight to its output; nullptr otherwise (oneDNN runs it). The weights are packed once
// (shared through `o.cache`) and the constant's resident pages released.
std::unique_ptr<Kernel> prepare_weft_gemm(const Graph& g, const Composite& c, const PrepareOptions& o) {
  if (!weft_gemm_isa()) return nullptr;
  const Node& n = g.node(c.anchor);
  if (type_of(g, n.inputs[0]).dtype != DType::kFp32 || !c.out_view.empty()) return nullptr;
  const Shape& as = type_of(g, n.inputs[0]).shape;  // [batches, M, K]
  const Shape& bs = type_of(g, n.inputs[1]).shape;  // [batches, K, N]
  if (as.size() != 3 || bs.size() != 3 || as[0] != bs[0] || as[0] < 1 || as[1] < 1 || bs[1] < 1 || bs[2] < 1)
    return nullptr;
  const ValueId b_src = c.b_view.empty() ? n.inputs[1] : g.node(c.b_view.front()).inputs[0];
  const Tensor* b = constant(g, b_src);
  if (!b || b->dtype() != DType::kFp32) return nullptr;
  const int64_t batches = as[0], m = as[1], k = bs[1], cols = bs[2];
  const ValueId a_src = c.a_view.empty() ? n.inputs[0] : g.node(c.a_view.front()).inputs[0];
  StridedView av = c.a_view.empty() ? StridedView::contiguous(as) : *compiler::forward_chain(g, c.a_view);
  if (av.strides[2] != 1) return nullptr;
  auto post = row_post_ops(g, c, batches * m, cols);
  if (!post || post->size() > GemmKernel::kMaxOps) return nullptr;
  auto kernel = [&](std::shared_ptr<const cpu::PackedB> packed) {
    return std::make_unique<GemmKernel>(std::move(packed), batches, m, c.input_index(a_src), av.offset, av.strides[0],
                                        av.strides[1], std::move(*post));
  };
  if (g_dry_run) return kernel(nullptr);
  StridedView bv = c.b_view.empty() ? StridedView::contiguous(bs) : *compiler::forward_chain(g, c.b_view);
  const float* base = b->data<float>() + bv.offset;
  const int64_t sb = bv.strides[0], sk = bv.strides[1], sn = bv.strides[2];
  const std::string key = "gemm:" + std::to_string(reinterpret_cast<uintptr_t>(base)) + ":" + std::to_string(sb) + ":" +
                          std::to_string(sk) + ":" + std::to_string(sn) + ":" + std::to_string(batches) + ":" +
                          std::to_string(k) + ":" + std::to_string(cols);
  std::shared_ptr<cpu::PackedB> packed;
  if (o.cache) packed = std::static_pointer_cast<cpu::PackedB>(o.cache->find(key));
  if (!packed) {
    packed = std::make_shared<cpu::PackedB>(cpu::pack_b(base, batches, k, cols, sb, sk, sn));
    if (o.cache) o.cache->put(key, packed);
  }
  b->buffer().release_resident();  // read from `packed` only
  return kernel(std::move(packed));
}

// ---- Weft's own convolutions where oneDNN is capped below AVX-512 ---------------------------

// Weft's own convolution kernels (gemm.h) over output rows: the bias and the composite's post-ops
// are the epilogue (a residual read in rows of `ld` floats), and whole rows are split between
// threads, so the result does not depend on the thread count.
class ConvRowsKernel final : public CappedKernel {
 public:
  static constexpr size_t kMaxOps = 9;  // the bias, then up to 8 post-ops
  using Rows = std::function<void(const float* x, float* y, int64_t r0, int64_t r1, const cpu::EpilogueOp* ops,
                                  int nops)>;

  ConvRowsKernel(std::string impl, Rows rows, int64_t count, int64_t min_rows, int64_t ld, std::vector<float> bias,
                 int input, std::vector<GemvPostOp> post, size_t prepared)
      : impl_(std::move(impl)), rows_(std::move(rows)), count_(count), min_rows_(min_rows), ld_(ld),
        bias_(std::move(bias)), input_(input), post_(std::move(post)), prepared_(prepared) {}

  size_t prepared_bytes() const override { return prepared_; }
  std::string implementation() const override { return impl_; }

  void execute(ExecArgs& a) const override {
    const float* x = a.in[static_cast<size_t>(input_)]->data<float>();
    float* y = a.out[0].mutable_data<float>();
    std::array<cpu::EpilogueOp, kMaxOps> ops;
    ops[0] = {cpu::EpilogueOp::Kind::kAddColumns, bias_.data()};
    const int nops = 1 + epilogue_ops(post_, a, ld_, ops.data() + 1);
    ref::parallel_for(thread_count(a), count_,
                      [&](int64_t r0, int64_t r1) { rows_(x, y, r0, r1, ops.data(), nops); }, min_rows_);
  }

 private:
  std::string impl_;
  Rows rows_;
  int64_t count_, min_rows_, ld_;
  std::vector<float> bias_;
  int input_;
  std::vector<GemvPostOp> post_;
  size_t prepared_;
};

// Weft's kernel for a grouped convolution of 4 input and 4 output channels per group (ResNeXt's
// 32 x 4d first stage) where weft_gemm_isa(): oneDNN 2.6's AVX2 convolutions need groups of 8
// channels and ran these as im2col + GEMM. nullptr otherwise (oneDNN runs it).
std::unique_ptr<Kernel> prepare_weft_grouped_conv(const Graph& g, const Composite& c, const PrepareOptions& o) {
  if (!weft_gemm_isa()) return nullptr;
  const Node& n = g.node(c.anchor);
  const Shape& ws = type_of(g, n.inputs[1]).shape;  // [OCg, KH, KW, ICg]
  const Shape& xs = type_of(g, c.source).shape;
  const Shape& ys = type_of(g, c.outputs[0]).shape;
  const int64_t G = static_cast<int64_t>(c.group_convs.size()), C = G * 4;
  if (ws.size() != 4 || ws[0] != 4 || ws[3] != 4 || xs.size() != 4 || ys.size() != 4 || xs[3] != C || ys[3] != C ||
      C % 8 != 0 || ys[0] != xs[0])
    return nullptr;
  const auto& p = n.attr_ints("pad");
  const auto& st = n.attr_ints("stride");
  const auto& dl = n.attr_ints("dilation");
  cpu::GroupedConv4 s{.n = xs[0], .h = xs[1], .w = xs[2], .c = C, .oh = ys[1], .ow = ys[2], .kh = ws[1], .kw = ws[2],
                      .sy = st[0], .sx = st[1], .dy = dl[0], .dx = dl[1], .pt = p[0], .pl = p[2]};
  auto post = row_post_ops(g, c, s.n * s.oh * s.ow, C);
  if (!post || post->size() + 1 > ConvRowsKernel::kMaxOps) return nullptr;
  std::vector<float> bias(static_cast<size_t>(C));
  for (int64_t k = 0; k < G; ++k) {
    const Tensor& b = *constant(g, g.node(c.group_convs[static_cast<size_t>(k)]).inputs[2]);
    for (int64_t i = 0; i < 4; ++i)
      bias[static_cast<size_t>(k * 4 + i)] = static_cast<float>(b.at_double(b.num_elements() == 1 ? 0 : i));
  }
  std::shared_ptr<std::vector<float>> packed;
  if (!g_dry_run) {
    const std::string key = "grouped4:" + std::to_string(reinterpret_cast<uintptr_t>(constant(g, n.inputs[1])->bytes()));
    if (o.cache) packed = std::static_pointer_cast<std::vector<float>>(o.cache->find(key));
    if (!packed) {
      // The groups' [4, KH, KW, 4] kernels one after another: [C, KH, KW, 4].
      const int64_t block = 4 * s.kh * s.kw * 4;
      std::vector<float> stacked(static_cast<size_t>(G * block));
      for (int64_t k = 0; k < G; ++k)
        std::memcpy(stacked.data() + k * block, constant(g, g.node(c.group_convs[static_cast<size_t>(k)]).inputs[1])->bytes(),
                    static_cast<size_t>(block) * sizeof(float));
      packed = std::make_shared<std::vector<float>>(cpu::pack_grouped_conv4(stacked.data(), C, s.kh, s.kw));
      if (o.cache) o.cache->put(key, packed);
    }
  }
  const size_t bytes = packed ? packed->size() * sizeof(float) : 0;
  // Whole output rows per work item; a row is ow * c * taps * 4 multiply-adds.
  const int64_t per_row = std::max<int64_t>(1, s.ow * C * s.kh * s.kw * 4);
  auto rows = [packed, s](const float* x, float* y, int64_t r0, int64_t r1, const cpu::EpilogueOp* ops, int nops) {
    cpu::grouped_conv4_avx2(s, x, packed->data(), y, r0, r1, ops, nops);
  };
  return std::make_unique<ConvRowsKernel>("weft_grouped_conv:avx2", rows, s.n * s.oh, std::max<int64_t>(1, 262144 / per_row),
                                          C, std::move(bias), c.input_index(c.source), std::move(*post), bytes);
}

// ---- Convolutions as one GEMM per tap where oneDNN capped at AVX2 falls back to im2col -----------

std::unique_ptr<Kernel> prepare_tap_conv(const Graph& g, const Composite& c, const PrepareOptions& o) {
  const Node& n = g.node(c.anchor);
  const Shape& xs = type_of(g, n.inputs[0]).shape;  // [N, H, W, IC]
  const Shape& ys = type_of(g, n.outputs[0]).shape;  // [N, OH, OW, OC]
  const Tensor* w = constant(g, n.inputs[1]);
  const Tensor* bias_const = constant(g, n.inputs[2]);
  if (!w || !bias_const || w->dtype() != DType::kFp32 || xs.size() != 4 || ys.size() != 4 ||
      type_of(g, c.outputs[0]).shape != ys)
    return nullptr;
  const Shape& ws = w->shape();  // [OC, KH, KW, IC]
  const auto& p = n.attr_ints("pad");
  const auto& st = n.attr_ints("stride");
  const auto& dl = n.attr_ints("dilation");
  cpu::TapConv s{.n = xs[0], .h = xs[1], .w = xs[2], .ic = xs[3], .oh = ys[1], .ow = ys[2], .oc = ys[3], .kh = ws[1],
                 .kw = ws[2], .sy = st[0], .sx = st[1], .dy = dl[0], .dx = dl[1], .pt = p[0], .pl = p[2]};
  auto post = row_post_ops(g, c, s.n * s.oh * s.ow, s.oc);
  if (!post || post->size() + 1 > ConvRowsKernel::kMaxOps) return nullptr;
  std::vector<float> bias(static_cast<size_t>(s.oc));
  for (int64_t i = 0; i < s.oc; ++i)
    bias[static_cast<size_t>(i)] = static_cast<float>(bias_const->at_double(bias_const->num_elements() == 1 ? 0 : i));
  std::shared_ptr<std::vector<cpu::PackedB>> taps;
  if (!g_dry_run) {
    const std::string key = "tapconv:" + std::to_string(reinterpret_cast<uintptr_t>(w->bytes()));
    if (o.cache) taps = std::static_pointer_cast<std::vector<cpu::PackedB>>(o.cache->find(key));
    if (!taps) {
      // Tap t's weights: element (ic, oc) at w[oc][t][ic].
      taps = std::make_shared<std::vector<cpu::PackedB>>();
      const int64_t ntaps = s.kh * s.kw;
      for (int64_t t = 0; t < ntaps; ++t)
        taps->push_back(cpu::pack_b(w->data<float>() + t * s.ic, 1, s.ic, s.oc, 0, 1, ntaps * s.ic));
      if (o.cache) o.cache->put(key, taps);
    }
    w->buffer().release_resident();  // read from `taps` only
  }
  size_t bytes = 0;
  if (taps)
    for (const cpu::PackedB& t : *taps) bytes += t.data.size() * sizeof(float);
  auto rows = [taps, s](const float* x, float* y, int64_t r0, int64_t r1, const cpu::EpilogueOp* ops, int nops) {
    cpu::tap_conv_avx2(s, x, taps->data(), y, r0, r1, ops, nops);
  };
  return std::make_unique<ConvRowsKernel>("weft_tap_conv:avx2", rows, s.n * s.oh, 1, s.oc, std::move(bias),
                                          c.input_index(n.inputs[0]), std::move(*post), bytes);
}

// ---- 3 x 3 convolutions of stride 1 by Winograd's F(2 x 2, 3 x 3) where oneDNN is capped at AVX2 ----

// Weft's Winograd convolution (gemm.h): work items of a block of tiles by a group of output-channel
// panels, split between the threads in contiguous runs; each thread's working memory is its slice of
// the kernel's workspace (from the runtime's arena).
class WinogradKernel final : public CappedKernel {
 public:
  WinogradKernel(cpu::WinogradConv s, std::shared_ptr<const cpu::PackedB> u, int64_t groups, int threads,
                 std::vector<float> bias, int input, std::vector<GemvPostOp> post)
      : s_(std::move(s)), u_(std::move(u)), groups_(groups), bias_(std::move(bias)), input_(input),
        post_(std::move(post)) {
    items_ = (s_.tiles() + s_.block - 1) / s_.block * groups_;
    slots_ = std::clamp<int64_t>(threads, 1, items_);
  }

  size_t prepared_bytes() const override { return u_ ? u_->data.size() * sizeof(float) : 0; }
  size_t workspace_bytes() const override {
    return static_cast<size_t>(slots_ * cpu::winograd_scratch_floats(s_)) * sizeof(float);
  }
  std::string implementation() const override { return "weft_winograd_conv:avx2"; }

  void execute(ExecArgs& a) const override {
    const float* x = a.in[static_cast<size_t>(input_)]->data<float>();
    float* y = a.out[0].mutable_data<float>();
    std::array<cpu::EpilogueOp, ConvRowsKernel::kMaxOps> ops;
    ops[0] = {cpu::EpilogueOp::Kind::kAddColumns, bias_.data()};
    const int nops = 1 + epilogue_ops(post_, a, s_.oc, ops.data() + 1);
    const int64_t slots = std::clamp<int64_t>(thread_count(a), 1, slots_), per = cpu::winograd_scratch_floats(s_);
    const int64_t panels = u_->panels();
    float* scratch = reinterpret_cast<float*>(a.workspace);
    ref::parallel_for(static_cast<int>(slots), slots, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t)
        for (int64_t i = items_ * t / slots; i < items_ * (t + 1) / slots; ++i) {
          const int64_t b = i / groups_, g = i % groups_;
          cpu::winograd_conv_avx2(s_, x, *u_, y, b * s_.block, std::min(s_.tiles(), (b + 1) * s_.block),
                                  g * panels / groups_, (g + 1) * panels / groups_, ops.data(), nops, scratch + t * per);
        }
    });
  }

 private:
  cpu::WinogradConv s_;
  std::shared_ptr<const cpu::PackedB> u_;
  int64_t groups_, items_ = 0, slots_ = 1;
  std::vector<float> bias_;
  int input_;
  std::vector<GemvPostOp> post_;
};

// Whether WEFT_CPU_WINOGRAD allows the Winograd convolution ("off": oneDNN's direct convolutions,
// whose sums follow the taps; anything else is an error naming the variable).
bool winograd_allowed() {
  const char* e = std::getenv("WEFT_CPU_WINOGRAD");
  if (!e || *e == '\0' || std::string_view(e) == "on") return true;
  if (std::string_view(e) == "off") return false;
  throw Error(ErrorCode::kInvalidArgument, std::string("WEFT_CPU_WINOGRAD must be 'on' or 'off', not '") + e + "'");
}

// Weft's Winograd convolution (gemm.h) for a fp32 3 x 3 CONV2D of stride 1 with constant weights
// and bias, at least 16 input and output channels, where weft_gemm_isa(): it does 16 multiplies
// per 2 x 2 outputs where oneDNN's `jit:avx2` does 36. nullptr otherwise (oneDNN runs it).
std::unique_ptr<Kernel> prepare_winograd_conv(const Graph& g, const Composite& c, const PrepareOptions& o) {
  const Node& n = g.node(c.anchor);
  if (n.op != Op::CONV2D || c.pad >= 0 || !weft_gemm_isa() || !winograd_allowed()) return nullptr;
  const Shape& xs = type_of(g, n.inputs[0]).shape;  // [N, H, W, IC]
  const Shape& ys = type_of(g, n.outputs[0]).shape;  // [N, OH, OW, OC]
  const Tensor* w = constant(g, n.inputs[1]);
  const Tensor* bias_const = constant(g, n.inputs[2]);
  if (!w || !bias_const || w->dtype() != DType::kFp32 || type_of(g, n.inputs[0]).dtype != DType::kFp32 ||
      xs.size() != 4 || ys.size() != 4 || type_of(g, c.outputs[0]).shape != ys)
    return nullptr;
  const Shape& ws = w->shape();  // [OC, KH, KW, IC]
  const auto& st = n.attr_ints("stride");
  if (ws[1] != 3 || ws[2] != 3 || st[0] != 1 || st[1] != 1 || ws[3] < 16 || ws[0] < 16) return nullptr;
  // Each block of tiles streams all 16 transformed weight matrices (16 / 9 of the weights) through
  // its GEMMs, 2 multiply-adds per float and tile: below 32 tiles (ResNet-50's last stage, 7 x 7
  // outputs: 16) that stream outweighs the saved multiplies, and oneDNN's kernel is faster.
  const int64_t tiles = xs[0] * ((ys[1] + 1) / 2) * ((ys[2] + 1) / 2);
  if (tiles < 32) return nullptr;
  // A wide dilation puts the outer taps outside the input for most outputs (DeepLabV3's atrous
  // pyramid: 24 and 36 over 28 x 28), where the per-tap GEMM skips them and this would not.
  const auto& dl = n.attr_ints("dilation");
  if (3 * dl[0] > ys[1] || 3 * dl[1] > ys[2]) return nullptr;
  const auto& p = n.attr_ints("pad");
  cpu::WinogradConv s{.n = xs[0], .h = xs[1], .w = xs[2], .ic = xs[3], .oh = ys[1], .ow = ys[2], .oc = ys[3],
                      .dy = dl[0], .dx = dl[1], .pt = p[0], .pl = p[2]};
  cpu::winograd_plan(s);
  auto post = row_post_ops(g, c, s.n * s.oh * s.ow, s.oc);
  if (!post || post->size() + 1 > ConvRowsKernel::kMaxOps) return nullptr;
  std::vector<float> bias(static_cast<size_t>(s.oc));
  for (int64_t i = 0; i < s.oc; ++i)
    bias[static_cast<size_t>(i)] = static_cast<float>(bias_const->at_double(bias_const->num_elements() == 1 ? 0 : i));
  std::shared_ptr<cpu::PackedB> u;
  if (!g_dry_run) {
    const std::string key = "winograd:" + std::to_string(reinterpret_cast<uintptr_t>(w->bytes()));
    if (o.cache) u = std::static_pointer_cast<cpu::PackedB>(o.cache->find(key));
    if (!u) {
      u = std::make_shared<cpu::PackedB>(cpu::pack_winograd_weights(w->data<float>(), s.oc, s.ic));
      if (o.cache) o.cache->put(key, u);
    }
    w->buffer().release_resident();  // read from `u` only
  }
  // Work items: blocks of tiles by groups of output-channel panels. Where the blocks are fewer than
  // the threads, each block's panels are split between them (each thread transforms the block's
  // input itself); the outputs are the same bits either way.
  const int64_t blocks = (s.tiles() + s.block - 1) / s.block, panels = (s.oc + cpu::PackedB::kPanel - 1) / cpu::PackedB::kPanel;
  const int64_t groups = std::clamp<int64_t>((o.threads + blocks - 1) / blocks, 1, panels);
  return std::make_unique<WinogradKernel>(std::move(s), std::move(u), groups, std::max(1, o.threads), std::move(bias),
                                          c.input_index(n.inputs[0]), std::move(*post));
}

std::unique_ptr<Kernel> prepare_matmul(const Graph& g, const Composite& c, const PrepareOptions& o) {
  if (auto k = prepare_gemv(g, c, o)) return k;
  if (auto k = prepare_weft_gemm(g, c, o)) return k;
  const Node& n = g.node(c.anchor);
  auto operand = [&](const std::vector<int>& chain, ValueId v) -> std::pair<ValueId, StridedView> {
    if (chain.empty()) return {v, StridedView::contiguous(type_of(g, v).shape)};
    return {g.node(chain.front()).inputs[0], *compiler::forward_chain(g, chain)};
  };
  auto [a_src, a_view] = operand(c.a_view, n.inputs[0]);
  auto [b_src, b_view] = operand(c.b_view, n.inputs[1]);
  const bool int8 = type_of(g, n.inputs[0]).dtype == DType::kInt8;
  const dt et = int8 ? dt::s8 : dt::f32;
  const TensorType& mt = type_of(g, n.outputs[0]);
  // With an output chain, the result is written through it: strided, into the chain's result.
  StridedView d_view = c.out_view.empty() ? StridedView::contiguous(mt.shape) : *compiler::backward_chain(g, c.out_view);
  if (a_view.dims[0] == 1 && b_view.dims[0] == 1) {
    // One batch: a 2-D matmul. oneDNN 2.6 then lays constant weights out in its blocked brgemm
    // format (3-D [1,K,N] weights stay plain); ViT-B/16's MLP matmuls: 14.2 -> see docs/backends.md.
    for (StridedView* v : {&a_view, &b_view, &d_view}) {
      v->dims.erase(v->dims.begin());
      v->strides.erase(v->strides.begin());
    }
  }
  dn::memory::desc a_md = strided_md(a_view, et), b_md = strided_md(b_view, et);
  dn::memory::desc dst_md = strided_md(d_view, *dnnl_type(mt.dtype));
  const Tensor* b_const = c.b_view.empty() ? constant(g, b_src) : nullptr;
  dn::memory::desc b_any = b_const ? dn::memory::desc(dims_of(b_view.dims), et, tag::any) : b_md;

  std::vector<Arg> args;
  int residual = -1;
  dn::primitive_attr attr = compute_attr(g, c, o, int8 ? n.inputs[2] : kNoValue, dst_md, false, args, &residual);
  dn::matmul::desc d(a_md, b_any, dst_md);
  auto pd = dn::matmul::primitive_desc(d, attr, engine());
  const int64_t elem = static_cast<int64_t>(storage_size(type_of(g, n.inputs[0]).dtype));
  args.push_back({DNNL_ARG_SRC, a_md, c.input_index(a_src), false, nullptr, a_view.offset * elem});
  if (b_const)
    args.push_back({DNNL_ARG_WEIGHTS, pd.weights_desc(), -1, false, reorder_constant(*b_const, b_md, pd.weights_desc(), o.cache)});
  else
    args.push_back({DNNL_ARG_WEIGHTS, b_md, c.input_index(b_src), false, nullptr, b_view.offset * elem});
  args.push_back({DNNL_ARG_DST, dst_md, -1, true});
  return finish(build<dn::matmul>(pd), pd, std::move(args), o, false, residual);
}

// ---- Single operators ---------------------------------------------------------------------------

struct EltwiseOp {
  dn::algorithm alg;
  float alpha = 0, beta = 0;
};

// The element-wise primitive of `op`; CLAMP needs its node for the bounds (without one, any
// CLAMP answers, for capability listings).
std::optional<EltwiseOp> eltwise_of(Op op, const Node* node) {
  switch (op) {
    case Op::SIGMOID: return EltwiseOp{dn::algorithm::eltwise_logistic};
    case Op::TANH: return EltwiseOp{dn::algorithm::eltwise_tanh};
    case Op::EXP: return EltwiseOp{dn::algorithm::eltwise_exp};
    case Op::ABS: return EltwiseOp{dn::algorithm::eltwise_abs};
    case Op::LOG: return EltwiseOp{dn::algorithm::eltwise_log};
    case Op::RSQRT: return EltwiseOp{dn::algorithm::eltwise_pow, 1.f, -0.5f};
    case Op::CLAMP: {
      if (!node) return EltwiseOp{dn::algorithm::eltwise_clip_v2};
      auto b = clamp_bounds(*node);
      if (!b) return std::nullopt;
      if (b->first == 0 && b->second >= std::numeric_limits<float>::max()) return EltwiseOp{dn::algorithm::eltwise_relu};
      return EltwiseOp{dn::algorithm::eltwise_clip_v2, b->first, b->second};
    }
    default: return std::nullopt;
  }
}

std::optional<dn::algorithm> binary_of(Op op) {
  switch (op) {
    case Op::ADD: return dn::algorithm::binary_add;
    case Op::SUB: return dn::algorithm::binary_sub;
    case Op::MUL: return dn::algorithm::binary_mul;
    case Op::MAXIMUM: return dn::algorithm::binary_max;
    case Op::MINIMUM: return dn::algorithm::binary_min;
    default: return std::nullopt;
  }
}

std::optional<dn::algorithm> reduction_of(Op op) {
  switch (op) {
    case Op::REDUCE_SUM: return dn::algorithm::reduction_sum;
    case Op::REDUCE_MAX: return dn::algorithm::reduction_max;
    case Op::REDUCE_MIN: return dn::algorithm::reduction_min;
    case Op::REDUCE_PRODUCT: return dn::algorithm::reduction_mul;
    default: return std::nullopt;
  }
}

// Operators with a primitive of their own (run one node at a time).
bool single_op(Op op) {
  return eltwise_of(op, nullptr) || binary_of(op) || reduction_of(op) || op == Op::CONCAT || op == Op::TRANSPOSE ||
         op == Op::SLICE || op == Op::RESIZE;
}

// Whether a bilinear RESIZE samples where oneDNN's linear resampling does: per axis, the output /
// input size ratio is exactly scale_n / scale_d and the offset is TOSA's half-pixel one,
// (scale_d - scale_n) / 2, so that input = (output + 1/2) * in / out - 1/2. oneDNN and TOSA both
// replicate the edge row where that reaches outside the input.
bool resize_is_half_pixel_linear(const Graph& g, const Node& n) {
  if (static_cast<ResizeMode>(n.attr_int("mode")) != ResizeMode::kBilinear) return false;
  const std::vector<int64_t> sc = const_shape(g, n.inputs[1]), off = const_shape(g, n.inputs[2]);
  const Shape& in = type_of(g, n.inputs[0]).shape;
  const Shape& out = type_of(g, n.outputs[0]).shape;
  if (sc.size() != 4 || off.size() != 2 || in.size() != 4) return false;
  for (int a = 0; a < 2; ++a) {
    const int64_t sn = sc[static_cast<size_t>(2 * a)], sd = sc[static_cast<size_t>(2 * a + 1)];
    const int64_t i = in[static_cast<size_t>(1 + a)], o = out[static_cast<size_t>(1 + a)];
    if (sn * i != o * sd || 2 * off[static_cast<size_t>(a)] != sd - sn) return false;
  }
  return true;
}
// Operators that are the main node of a fused group (they may also run alone).
bool anchor_op(Op op) { return is_fusion_anchor(op); }

// Non-anchor operations of at most this many output elements are left to the reference backend
// (see OneDnnBackend::supports).
constexpr int64_t kTinyElements = 512;

bool broadcasts_to(const Shape& s, const Shape& to) {
  if (s.size() != to.size()) return false;
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] != to[i] && s[i] != 1) return false;
  return true;
}

// Broadcasts oneDNN 2.6's optimized binary kernels handle on plain layouts: none, a scalar, one
// value per index of the last dimension, or one per index of dimension 1.
bool fast_broadcast(const Shape& s, const Shape& to) {
  if (s == to) return true;
  const size_t r = s.size();
  bool scalar = true, last_only = true, dim1_only = true;
  for (size_t i = 0; i < r; ++i) {
    scalar &= s[i] == 1;
    last_only &= i + 1 == r ? s[i] == to[i] : s[i] == 1;
    dim1_only &= i == 1 ? s[i] == to[i] : s[i] == 1;
  }
  return scalar || last_only || dim1_only;
}

// Where `s` is 1 on a leading run of `to`'s dimensions and equal to it after (Swin's relative
// position bias [1, H, N, N] over the windows' scores [nW, H, N, N]): the [outer, inner] both
// collapse to, so that the broadcast is oneDNN's fast per-last-dimension one. nullopt otherwise.
std::optional<std::pair<int64_t, int64_t>> leading_broadcast(const Shape& s, const Shape& to) {
  if (s.size() != to.size() || s.empty()) return std::nullopt;
  size_t k = 0;
  while (k < s.size() && s[k] == 1) ++k;
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < k; ++i) outer *= to[i];
  for (size_t i = k; i < s.size(); ++i) {
    if (s[i] != to[i]) return std::nullopt;
    inner *= to[i];
  }
  if (k == 0 || k == s.size() || outer == 1) return std::nullopt;
  return std::make_pair(outer, inner);
}

bool small_binary(const Graph& g, const Node& n);  // (below, with SmallBinaryKernel)

Support single_supported(const Graph& g, const Composite& c) {
  const Node& n = g.node(c.anchor);
  const std::string name(op_name(n.op));
  if (n.op == Op::CONST || n.op == Op::CONST_SHAPE || n.op == Op::IDENTITY || n.op == Op::RESHAPE)
    return Support::no(name + " is a constant or a view of memory: the runtime binds it, no kernel runs");
  if (!single_op(n.op)) return Support::no(name + " has no oneDNN primitive here");
  if (n.op == Op::CONCAT)
    return Support::no("CONCAT is a copy of contiguous chunks, which Weft's kernel does with memcpy: oneDNN 2.6's "
                       "concat (simple:any) took 0.95 ms for DenseNet-121's 6-input 56x56 channel concatenation, "
                       "Weft's 0.04 ms");
  for (ValueId v : n.inputs) {
    const TensorType& t = type_of(g, v);
    if (t.dtype == DType::kShape) continue;
    if (n.op == Op::MUL && v == n.inputs[2]) continue;  // shift: int8, zero for fp32
    if (t.dtype != DType::kFp32) return Support::no(name + " on " + std::string(dtype_name(t.dtype)) + ": only fp32 is offloaded");
    if (t.rank() == 0) return Support::no(name + " on a rank-0 tensor");
  }
  const TensorType& out = type_of(g, n.outputs[0]);
  if (out.num_elements() == 0) return Support::no(name + " with an empty result");
  if (n.op == Op::CLAMP && !eltwise_of(n.op, &n)) return Support::no("CLAMP bounds");
  if (n.op == Op::REDUCE_SUM && n.attr_int("axis") + 1 < type_of(g, n.inputs[0]).rank())
    return Support::no("REDUCE_SUM over an axis that is not the innermost: oneDNN 2.6 has only its reference "
                       "kernel for it (ShuffleNet's 1x7x7x1024 ReduceMean: 0.81 ms there, 0.005 ms in Weft's kernel)");
  if (n.op == Op::SLICE && !compiler::apply_node(g, n, StridedView::contiguous(type_of(g, n.inputs[0]).shape)))
    return Support::no("SLICE start is not a constant");
  if (n.op == Op::RESIZE && !resize_is_half_pixel_linear(g, n))
    return Support::no("RESIZE other than bilinear with half-pixel sampling at exactly output/input size ratio "
                       "(oneDNN's linear resampling)");
  if (auto b = binary_of(n.op); b && !small_binary(g, n)) {  // (small ones run on Weft's loop, any side broadcast)
    const Shape& s0 = type_of(g, n.inputs[0]).shape;
    const Shape& s1 = type_of(g, n.inputs[1]).shape;
    const bool commutes = n.op != Op::SUB;
    if (!(s0 == out.shape && broadcasts_to(s1, out.shape)) && !(commutes && s1 == out.shape && broadcasts_to(s0, out.shape)))
      return Support::no(name + " broadcasting both operands (oneDNN broadcasts only the second)");
    const Shape& small = s0 == out.shape ? s1 : s0;
    if (!fast_broadcast(small, out.shape) && !leading_broadcast(small, out.shape))
      return Support::no(name + " broadcasting " + shape_str(small) + " to " + shape_str(out.shape) +
                         ": oneDNN 2.6 runs this broadcast on its slow reference path (Weft's kernel is faster)");
  }
  return Support::yes();
}

// SIGMOID or TANH of a small fp32 tensor with Weft's loop (gemm.cpp's activation_avx2 / _avx512, the
// GEMM epilogue's functions) instead of a oneDNN primitive, whose call costs about 1 us however little
// it computes: an unrolled LSTM's gate activations are hundreds of 48 to 144 values each.
class ActivationKernel final : public Kernel {
 public:
  ActivationKernel(cpu::EpilogueOp::Kind kind, int64_t n)
      : kind_(kind), n_(n), wide_(cpu::cpu_level() == cpu::CpuLevel::kAvx512) {}
  bool in_place_ok() const override { return true; }
  std::string implementation() const override { return wide_ ? "weft_activation:avx512" : "weft_activation:avx2"; }
  void execute(ExecArgs& a) const override {
    const float* x = a.in[0]->data<float>();
    float* y = a.out[0].mutable_data<float>();
    if (y != x) std::memcpy(y, x, static_cast<size_t>(n_) * sizeof(float));
    if (wide_) cpu::activation_avx512(kind_, y, n_);
    else cpu::activation_avx2(kind_, y, n_);
  }

 private:
  cpu::EpilogueOp::Kind kind_;
  int64_t n_;
  bool wide_;  // activation_avx512 (AVX-512F CPUs, unless WEFT_CPU_ISA caps them)
};

// Elements up to which SIGMOID / TANH run as ActivationKernel (one thread; above, oneDNN's
// primitive on every thread).
constexpr int64_t kSmallActivation = 16384;

// Whether SIGMOID / TANH node `n` runs as ActivationKernel.
bool small_activation(const Graph& g, const Node& n) {
  return (n.op == Op::SIGMOID || n.op == Op::TANH) && cpu::gemm_avx2_supported() &&
         type_of(g, n.outputs[0]).dtype == DType::kFp32 && type_of(g, n.outputs[0]).num_elements() <= kSmallActivation;
}

// ADD, SUB or MUL (shift 0) of two small fp32 tensors of one shape, or with one operand a single
// value, on a plain loop: bit for bit the reference's result (one IEEE rounding per element) without
// a oneDNN primitive call or the reference's per-call broadcast setup (an unrolled LSTM's state
// updates: hundreds of 48-value products and sums per run).
class SmallBinaryKernel final : public Kernel {
 public:
  SmallBinaryKernel(Op op, int64_t n, bool a_one, bool b_one) : op_(op), n_(n), a_one_(a_one), b_one_(b_one) {}
  bool in_place_ok() const override { return true; }
  std::string implementation() const override { return "weft_binary"; }
  void execute(ExecArgs& a) const override {
    const float* x = a.in[0]->data<float>();
    const float* w = a.in[1]->data<float>();
    float* y = a.out[0].mutable_data<float>();
    switch (op_) {
      case Op::ADD: run(x, w, y, [](float p, float q) { return p + q; }); break;
      case Op::SUB: run(x, w, y, [](float p, float q) { return p - q; }); break;
      default: run(x, w, y, [](float p, float q) { return p * q; }); break;
    }
  }

 private:
  template <typename F>
  void run(const float* x, const float* w, float* y, F f) const {
    if (a_one_) {
      const float x0 = x[0];
      for (int64_t i = 0; i < n_; ++i) y[i] = f(x0, w[i]);
    } else if (b_one_) {
      const float w0 = w[0];
      for (int64_t i = 0; i < n_; ++i) y[i] = f(x[i], w0);
    } else {
      for (int64_t i = 0; i < n_; ++i) y[i] = f(x[i], w[i]);
    }
  }
  Op op_;
  int64_t n_;
  bool a_one_, b_one_;
};

// Whether ADD / SUB / MUL node `n` runs as SmallBinaryKernel: fp32 throughout, at most
// kSmallActivation values, operands of the result's shape or single values (not both single).
bool small_binary(const Graph& g, const Node& n) {
  if (n.op != Op::ADD && n.op != Op::SUB && n.op != Op::MUL) return false;
  if (n.op == Op::MUL && const_scalar_int(g, n.inputs[2]).value_or(1) != 0) return false;
  const TensorType& out = type_of(g, n.outputs[0]);
  if (out.dtype != DType::kFp32 || out.num_elements() > kSmallActivation || out.num_elements() == 0) return false;
  int singles = 0;
  for (int i = 0; i < 2; ++i) {
    const TensorType& t = type_of(g, n.inputs[static_cast<size_t>(i)]);
    if (t.dtype != DType::kFp32) return false;
    if (t.shape != out.shape) {
      if (t.num_elements() != 1) return false;
      ++singles;
    }
  }
  return singles < 2;
}

// Each output written in one pass from the sources (view_copy.h); one thread: these copies are
// small and memory-bound (ShuffleNet's are 10-100 KB).
class SliceCopiesKernel final : public Kernel {
 public:
  SliceCopiesKernel(std::vector<cpu::ViewCopy> copies, int src0, int src1)
      : copies_(std::move(copies)), src0_(src0), src1_(src1) {}
  std::string implementation() const override { return "weft_view_copy"; }
  void execute(ExecArgs& a) const override {
    const uint8_t* s0 = a.in[static_cast<size_t>(src0_)]->bytes();
    const uint8_t* s1 = src1_ >= 0 ? a.in[static_cast<size_t>(src1_)]->bytes() : nullptr;
    for (size_t k = 0; k < copies_.size(); ++k) cpu::run_view_copy(copies_[k], s0, s1, a.out[k].mutable_bytes());
  }

 private:
  std::vector<cpu::ViewCopy> copies_;
  int src0_, src1_;
};

std::unique_ptr<Kernel> prepare_single(const Graph& g, const Composite& c, const PrepareOptions& o) {
  const Node& n = g.node(c.anchor);
  const TensorType& out = type_of(g, n.outputs[0]);
  if (small_binary(g, n))
    return std::make_unique<SmallBinaryKernel>(n.op, out.num_elements(), type_of(g, n.inputs[0]).shape != out.shape,
                                               type_of(g, n.inputs[1]).shape != out.shape);
  if (small_activation(g, n))
    return std::make_unique<ActivationKernel>(n.op == Op::SIGMOID ? cpu::EpilogueOp::Kind::kSigmoid : cpu::EpilogueOp::Kind::kTanh,
                                              out.num_elements());
  // A SLICE made of contiguous rows of at least 16 elements, up to 64K elements in all (the
  // per-direction halves of a bidirectional LSTM's input projection, [1, 32, 384] -> [1, 32, 192]):
  // a row copy on one thread, where a oneDNN reorder cost 2 us per call for 6144 floats.
  if (n.op == Op::SLICE && out.num_elements() <= 65536) {
    const StridedView v = *compiler::apply_node(g, n, StridedView::contiguous(type_of(g, n.inputs[0]).shape));
    const cpu::ViewCopy copy = cpu::simplify({v.dims, v.strides, v.offset, -1, storage_size(out.dtype)});
    if (v.split == 0 && copy.dims.size() <= cpu::kMaxViewRank && copy.strides.back() == 1 && copy.dims.back() >= 16)
      return std::make_unique<SliceCopiesKernel>(std::vector<cpu::ViewCopy>{copy}, 0, -1);
  }
  dn::memory::desc dst_md = plain_md(out);
  dn::primitive_attr attr = base_attr(o);
  if (auto e = eltwise_of(n.op, &n)) {
    dn::eltwise_forward::desc d(dn::prop_kind::forward_inference, e->alg, dst_md, e->alpha, e->beta);
    auto pd = dn::eltwise_forward::primitive_desc(d, attr, engine());
    return finish(build<dn::eltwise_forward>(pd), pd, {{DNNL_ARG_SRC, dst_md, 0}, {DNNL_ARG_DST, dst_md, -1, true}}, o, true);
  }
  if (auto b = binary_of(n.op)) {
    int i0 = 0, i1 = 1;
    if (type_of(g, n.inputs[0]).shape != out.shape) std::swap(i0, i1);  // the full-shape operand goes first
    const TensorType& t0 = type_of(g, n.inputs[static_cast<size_t>(i0)]);
    const TensorType& t1 = type_of(g, n.inputs[static_cast<size_t>(i1)]);
    dn::memory::desc m0 = plain_md(t0), m1 = plain_md(t1);
    if (!fast_broadcast(t1.shape, out.shape)) {
      // (single_supported: a leading broadcast) both as [outer, inner], the second [1, inner].
      const auto [outer, inner] = *leading_broadcast(t1.shape, out.shape);
      const dn::memory::data_type dt = *dnnl_type(out.dtype);
      m0 = dst_md = dn::memory::desc({outer, inner}, dt, tag::ab);
      m1 = dn::memory::desc({1, inner}, dt, tag::ab);
    } else if (out.rank() == 4 && (t1.shape == out.shape || t1.shape == Shape{1, 1, 1, out.shape[3]})) {
      // A per-channel operand of an NHWC tensor (squeeze-and-excitation scales, biases): described
      // as NCHW-logical nhwc memory it is oneDNN's per-channel broadcast, its fast path.
      m0 = nhwc_md(t0);
      m1 = nhwc_md(t1);
      dst_md = nhwc_md(out);
    }
    dn::binary::desc d(*b, m0, m1, dst_md);
    auto pd = dn::binary::primitive_desc(d, attr, engine());
    return finish(build<dn::binary>(pd), pd, {{DNNL_ARG_SRC_0, m0, i0}, {DNNL_ARG_SRC_1, m1, i1}, {DNNL_ARG_DST, dst_md, -1, true}}, o,
                  true);
  }
  if (auto r = reduction_of(n.op)) {
    dn::memory::desc src_md = plain_md(type_of(g, n.inputs[0]));
    dn::reduction::desc d(*r, src_md, dst_md, 0.f, 0.f);
    auto pd = dn::reduction::primitive_desc(d, attr, engine());
    return finish(build<dn::reduction>(pd), pd, {{DNNL_ARG_SRC, src_md, 0}, {DNNL_ARG_DST, dst_md, -1, true}}, o);
  }
  if (n.op == Op::TRANSPOSE || n.op == Op::SLICE) {
    // A copy out of a strided view of the input: transposed, or a SLICE's window (offset + strides).
    StridedView v = *compiler::apply_node(g, n, StridedView::contiguous(type_of(g, n.inputs[0]).shape));
    dn::memory::desc src_md = strided_md(v, dt::f32);
    auto pd = dn::reorder::primitive_desc(engine(), src_md, engine(), dst_md, attr);
    const int64_t offset = v.offset * static_cast<int64_t>(sizeof(float));
    return finish(build<dn::reorder>(pd), pd, {{DNNL_ARG_SRC, src_md, 0, false, nullptr, offset}, {DNNL_ARG_DST, dst_md, -1, true}},
                  o);
  }
  if (n.op == Op::RESIZE) {
    dn::memory::desc src_md = nhwc_md(type_of(g, n.inputs[0]));
    dn::memory::desc out_md = nhwc_md(out);
    dn::resampling_forward::desc d(dn::prop_kind::forward_inference, dn::algorithm::resampling_linear, src_md, out_md);
    auto pd = dn::resampling_forward::primitive_desc(d, attr, engine());
    return finish(build<dn::resampling_forward>(pd), pd, {{DNNL_ARG_SRC, src_md, 0}, {DNNL_ARG_DST, out_md, -1, true}}, o);
  }
  if (n.op == Op::CONCAT) {
    const int axis = static_cast<int>(n.attr_int("axis"));
    std::vector<dn::memory::desc> srcs;
    std::vector<Arg> args;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      srcs.push_back(plain_md(type_of(g, n.inputs[i])));
      args.push_back({DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), srcs.back(), static_cast<int>(i)});
    }
    auto pd = dn::concat::primitive_desc(dst_md, axis, srcs, engine(), attr);
    args.push_back({DNNL_ARG_DST, dst_md, -1, true});
    return finish(build<dn::concat>(pd), pd, std::move(args), o);
  }
  throw Error(ErrorCode::kInternal, "oneDNN backend asked to prepare " + std::string(op_name(n.op)),
              {.node = g.node_label(c.anchor)});
}

// ---- Element-wise chains: a binary operator by a per-channel constant, then post-ops --------------
//
// One binary primitive with binary and eltwise post-ops: DenseNet's pre-activation BN + ReLU (MUL
// by scale, ADD shift, CLAMP) is one pass over the concatenated features instead of three.

Support binary_chain_supported(const Graph& g, const Composite& c) {
  Composite alone = c;
  alone.post_ops.clear();
  alone.nodes = {c.anchor};
  Support s = single_supported(g, alone);
  if (!s.ok) return s;
  const Node& n = g.node(c.anchor);
  const Shape &s0 = type_of(g, n.inputs[0]).shape, &s1 = type_of(g, n.inputs[1]).shape;
  const Shape& out = type_of(g, n.outputs[0]).shape;
  if (!fast_broadcast(s0 == out ? s1 : s0, out))  // (a leading broadcast collapses only without post-ops)
    return Support::no(std::string(op_name(n.op)) + " broadcasting " + shape_str(s0 == out ? s1 : s0) + " to " +
                       shape_str(out) + " with fused operations after it");
  return post_ops_supported(g, c);
}

std::unique_ptr<Kernel> prepare_binary_chain(const Graph& g, const Composite& c, const PrepareOptions& o) {
  const Node& n = g.node(c.anchor);
  const TensorType& t0 = type_of(g, n.inputs[0]);
  const TensorType& t1 = type_of(g, n.inputs[1]);
  const TensorType& out = type_of(g, c.outputs[0]);
  // 4-D NHWC tensors as oneDNN's logical NCHW with nhwc strides: a per-channel operand is then
  // its fast broadcast; other ranks plain (the operand varies along the last dimension).
  const bool nhwc = t0.rank() == 4;
  auto md = [&](const TensorType& t) { return nhwc ? nhwc_md(t) : plain_md(t); };
  dn::memory::desc m0 = md(t0), m1 = md(t1), dst_md = md(out);
  dn::primitive_attr attr = base_attr(o);
  dn::post_ops ops;
  std::vector<Arg> args;
  int residual = -1;
  for (const PostOp& p : c.post_ops) {
    if (p.kind == PostOp::Kind::kBias) {
      const dn::memory::desc bmd = md(type_of(g, p.operand));
      ops.append_binary(dn::algorithm::binary_add, bmd);
      args.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(ops.len() - 1) | DNNL_ARG_SRC_1, bmd, c.input_index(p.operand)});
      continue;
    }
    if (p.kind == PostOp::Kind::kResidual) {
      ops.append_sum(1.f);
      residual = c.input_index(p.operand);
      continue;
    }
    Composite one = c;
    one.post_ops = {p};
    int unused = -1;
    append_post_ops(g, one, ops, args, dst_md, nhwc, &unused);
  }
  attr.set_post_ops(ops);
  dn::binary::desc d(*binary_of(n.op), m0, m1, dst_md);
  auto pd = dn::binary::primitive_desc(d, attr, engine());
  args.insert(args.begin(), {{DNNL_ARG_SRC_0, m0, c.input_index(n.inputs[0])}, {DNNL_ARG_SRC_1, m1, c.input_index(n.inputs[1])}});
  args.push_back({DNNL_ARG_DST, dst_md, -1, true});
  return finish(build<dn::binary>(pd), pd, std::move(args), o, residual < 0, residual);
}

// ---- A CONCAT in front of an element-wise chain: the chain reads the pieces ----------------------
//
// Weft's own loop (channel_chain.h), not a oneDNN primitive: oneDNN's binary takes one source. The
// concatenation is never written, and the chain's one pass replaces the CONCAT's copy and the
// binary's pass over the copy.

class ChannelChainKernel final : public CappedKernel {
 public:
  ChannelChainKernel(std::vector<int> pieces, std::vector<int64_t> widths, int64_t channels, int64_t rows,
                     std::vector<cpu::ChannelStep> steps)
      : pieces_(std::move(pieces)), widths_(std::move(widths)), channels_(channels), rows_(rows), steps_(std::move(steps)) {
    for (const cpu::ChannelStep& st : steps_) prepared_ += st.v.size() * sizeof(float);
  }
  size_t prepared_bytes() const override { return prepared_; }
  std::string implementation() const override { return std::string("weft_channel_chain:") + cpu::cpu_level_name(); }

  void execute(ExecArgs& a) const override {
    std::vector<const float*> src;
    src.reserve(pieces_.size());
    for (int i : pieces_) src.push_back(a.in[static_cast<size_t>(i)]->data<float>());
    float* out = a.out[0].mutable_data<float>();
    // At least ~64K elements per thread.
    const int64_t min_rows = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, channels_));
    ref::parallel_for(thread_count(a), rows_, [&](int64_t r0, int64_t r1) {
      cpu::channel_chain_rows(src, widths_, channels_, steps_, r0, r1, out);
    }, min_rows);
  }

 private:
  std::vector<int> pieces_;
  std::vector<int64_t> widths_;
  int64_t channels_, rows_;
  std::vector<cpu::ChannelStep> steps_;
  size_t prepared_ = 0;
};

// The per-channel values of constant `v` (one, or one per channel) for `channels` channels; empty
// when `v` is not such an fp32 constant.
std::vector<float> channel_values(const Graph& g, ValueId v, int64_t channels) {
  const Tensor* t = constant(g, v);
  if (!t || t->dtype() != DType::kFp32 || (t->num_elements() != 1 && t->num_elements() != channels)) return {};
  std::vector<float> out(static_cast<size_t>(channels));
  for (int64_t i = 0; i < channels; ++i) out[static_cast<size_t>(i)] = static_cast<float>(t->at_double(t->num_elements() == 1 ? 0 : i));
  return out;
}

// The chain's steps, or why it cannot run as one (`why` set, steps empty).
std::vector<cpu::ChannelStep> channel_steps(const Graph& g, const Composite& c, std::string& why) {
  const Node& n = g.node(c.anchor);
  const TensorType& rt = type_of(g, n.outputs[0]);
  const int64_t channels = rt.shape.empty() ? 0 : rt.shape.back();
  std::vector<cpu::ChannelStep> steps;
  auto fail = [&](std::string w) {
    why = std::move(w);
    return std::vector<cpu::ChannelStep>{};
  };
  if (rt.dtype != DType::kFp32) return fail("a CONCAT in front of an element-wise chain is fused for fp32 only");
  if (n.inputs[0] != g.node(c.concat_in).outputs[0]) return fail("the chain does not read the CONCAT as its first operand");
  cpu::ChannelStep first{n.op == Op::MUL ? cpu::ChannelStep::Kind::kMul
                                         : n.op == Op::ADD ? cpu::ChannelStep::Kind::kAdd : cpu::ChannelStep::Kind::kSub,
                         channel_values(g, n.inputs[1], channels)};
  if (first.v.empty()) return fail("the chain's second operand is not an fp32 constant per channel");
  if (n.op == Op::MUL && const_scalar_int(g, n.inputs.at(2)).value_or(1) != 0) return fail("MUL's shift must be a constant 0");
  steps.push_back(std::move(first));
  for (const PostOp& p : c.post_ops) {
    switch (p.kind) {
      case PostOp::Kind::kBias:
      case PostOp::Kind::kShift:
      case PostOp::Kind::kScale: {
        cpu::ChannelStep st{p.kind == PostOp::Kind::kScale ? cpu::ChannelStep::Kind::kMul : cpu::ChannelStep::Kind::kAdd,
                            channel_values(g, p.operand, channels)};
        if (st.v.empty()) return fail("a post-op's operand is not an fp32 constant per channel");
        steps.push_back(std::move(st));
        break;
      }
      case PostOp::Kind::kClamp: {
        auto b = clamp_bounds(g.node(p.node));
        if (!b) return fail("CLAMP's bounds are not fp32");
        steps.push_back({cpu::ChannelStep::Kind::kClamp, {}, b->first, b->second});
        break;
      }
      default:
        return fail("only per-channel MUL / ADD and CLAMP are fused behind a CONCAT");
    }
  }
  return steps;
}

Support channel_chain_supported(const Graph& g, const Composite& c) {
  const Node& cat = g.node(c.concat_in);
  const TensorType& ct = type_of(g, cat.outputs[0]);
  for (ValueId v : cat.inputs) {
    const TensorType& t = type_of(g, v);
    if (t.dtype != DType::kFp32 || t.rank() != ct.rank() ||
        !std::equal(t.shape.begin(), t.shape.end() - 1, ct.shape.begin()))
      return Support::no("the CONCAT's inputs are not fp32 pieces of its result along the last axis");
  }
  std::string why;
  channel_steps(g, c, why);
  return why.empty() ? Support::yes() : Support::no(why);
}

std::unique_ptr<Kernel> prepare_channel_chain(const Graph& g, const Composite& c) {
  std::string why;
  std::vector<cpu::ChannelStep> steps = channel_steps(g, c, why);
  if (!why.empty()) throw Error(ErrorCode::kUnsupported, why, {.graph = g.name(), .node = g.node_label(c.anchor)});
  const Node& cat = g.node(c.concat_in);
  const TensorType& rt = type_of(g, c.outputs[0]);
  std::vector<int> pieces;
  std::vector<int64_t> widths;
  for (ValueId v : cat.inputs) {
    pieces.push_back(c.input_index(v));
    widths.push_back(type_of(g, v).shape.back());
  }
  const int64_t channels = rt.shape.back();
  return std::make_unique<ChannelChainKernel>(std::move(pieces), std::move(widths), channels,
                                              channels == 0 ? 0 : rt.num_elements() / channels, std::move(steps));
}

// ---- Fused element-wise loops (Region::kElementwise) --------------------------------------------

// The loop step node `n` becomes, if it is one (fp32 throughout; MUL with shift 0; CLAMP's bounds
// fp32; SIGMOID / TANH where the CPU has AVX2 + FMA for activation_avx2).
std::optional<cpu::LoopStep::Kind> loop_kind(const Graph& g, const Node& n) {
  using K = cpu::LoopStep::Kind;
  switch (n.op) {
    case Op::ADD: return K::kAdd;
    case Op::SUB: return K::kSub;
    case Op::MUL:
      if (const_scalar_int(g, n.inputs.at(2)).value_or(1) != 0) return std::nullopt;
      return K::kMul;
    case Op::MAXIMUM: return K::kMax;
    case Op::MINIMUM: return K::kMin;
    case Op::CLAMP:
      if (!clamp_bounds(n)) return std::nullopt;
      return K::kClamp;
    case Op::ABS: return K::kAbs;
    case Op::NEGATE:
      // float NEGATE: its zero points are 0
      for (size_t z = 1; z < n.inputs.size(); ++z)
        if (!const_zero(g, n.inputs[z])) return std::nullopt;
      return K::kNegate;
    case Op::RECIPROCAL: return K::kReciprocal;
    case Op::SIGMOID:
    case Op::TANH:
    case Op::EXP:
    case Op::LOG:
      if (!cpu::gemm_avx2_supported()) return std::nullopt;
      return n.op == Op::SIGMOID ? K::kSigmoid : n.op == Op::TANH ? K::kTanh : n.op == Op::EXP ? K::kExp : K::kLog;
    default: return std::nullopt;
  }
}

// How operand `v` is read by a loop over `rt`: all of it, one value, or one per last-axis index.
std::optional<cpu::LoopOperand::From> loop_operand_form(const Graph& g, ValueId v, const TensorType& rt) {
  const TensorType& t = type_of(g, v);
  if (t.dtype != DType::kFp32 || t.rank() != rt.rank() || rt.rank() == 0) return std::nullopt;
  if (t.shape == rt.shape) return cpu::LoopOperand::From::kFull;
  if (t.num_elements() == 1) return cpu::LoopOperand::From::kOne;
  if (t.shape.back() == rt.shape.back() && t.num_elements() == t.shape.back()) return cpu::LoopOperand::From::kColumn;
  return std::nullopt;
}

// Whether node `ni` can be a loop step (OneDnnBackend::loop_fusable).
bool loop_node(const Graph& g, int ni) {
  const Node& n = g.node(ni);
  if (n.outputs.size() != 1 || !loop_kind(g, n)) return false;
  const TensorType& rt = type_of(g, n.outputs[0]);
  if (rt.dtype != DType::kFp32 || rt.num_elements() == 0) return false;
  const size_t operands = cpu::is_binary(*loop_kind(g, n)) ? 2 : 1;
  for (size_t i = 0; i < operands; ++i)
    if (!loop_operand_form(g, n.inputs[i], rt)) return false;
  return true;
}

// The loop of group `c`, or why it cannot be one (`why` set).
cpu::LoopProgram loop_program(const Graph& g, const Composite& c, std::string& why) {
  cpu::LoopProgram p;
  const TensorType& rt = type_of(g, g.node(c.anchor).outputs[0]);
  p.elements = rt.num_elements();
  p.columns = rt.rank() ? std::max<int64_t>(1, rt.shape.back()) : 1;
  std::map<ValueId, int> step_of;
  for (int ni : c.region_nodes) {
    const Node& n = g.node(ni);
    if (!loop_node(g, ni) || type_of(g, n.outputs[0]) != rt) {
      why = std::string(op_name(n.op)) + " (" + g.node_label(ni) + ") is not an fp32 loop step over " + rt.str();
      return {};
    }
    cpu::LoopStep st;
    st.kind = *loop_kind(g, n);
    const size_t operands = cpu::is_binary(st.kind) ? 2 : 1;
    for (size_t i = 0; i < operands; ++i) {
      const ValueId v = n.inputs[i];
      cpu::LoopOperand o;
      if (auto it = step_of.find(v); it != step_of.end()) {
        o.index = it->second;
      } else {
        o.from = *loop_operand_form(g, v, rt);
        o.index = c.input_index(v);
        if (o.index < 0) {
          why = "operand of " + g.node_label(ni) + " is neither a member's result nor an input of the group";
          return {};
        }
      }
      (i == 0 ? st.a : st.b) = o;
    }
    if (st.kind == cpu::LoopStep::Kind::kClamp) std::tie(st.lo, st.hi) = *clamp_bounds(n);
    for (const AttrDef& a : op_def(n.op).attrs)
      if (a.kind == AttrKind::kNanMode) st.propagate = n.attr_int(a.name) == static_cast<int64_t>(NanMode::kPropagate);
    step_of[n.outputs[0]] = static_cast<int>(p.steps.size());
    p.steps.push_back(st);
  }
  for (ValueId o : c.outputs) {
    auto it = step_of.find(o);
    if (it == step_of.end()) {
      why = "a result of the group is not computed by it";
      return {};
    }
    p.outputs.push_back(it->second);
  }
  cpu::plan_loop(p);
  if (p.slots() > cpu::kMaxLoopSlots || c.inputs.size() > 3 * size_t{cpu::kMaxLoopSlots}) {
    why = "the group has more than " + std::to_string(cpu::kMaxLoopSlots) + " steps and broadcast operands";
    return {};
  }
  return p;
}

// Weft's own loop (elementwise_loop.h): one pass over the elements for the whole group.
class ElementwiseLoopKernel final : public CappedKernel {
 public:
  explicit ElementwiseLoopKernel(cpu::LoopProgram p) : p_(std::move(p)) {
    for (const cpu::LoopStep& s : p_.steps)
      for (const cpu::LoopOperand* o : {&s.a, &s.b})
        if ((o == &s.a || cpu::is_binary(s.kind)) && o->from != cpu::LoopOperand::From::kStep) {
          if (static_cast<size_t>(o->index) >= reads_.size()) reads_.resize(static_cast<size_t>(o->index) + 1, false);
          reads_[static_cast<size_t>(o->index)] = true;
        }
  }
  std::string implementation() const override {
    return "weft_loop[" + std::to_string(p_.steps.size()) + "]:" + cpu::cpu_level_name();
  }
  void execute(ExecArgs& a) const override {
    // A group's inputs are its members' operands (at most three each: MUL's shift) and its results
    // at most one per member; loop_program bounds the members by kMaxLoopSlots.
    const float* in[3 * cpu::kMaxLoopSlots];
    float* out[cpu::kMaxLoopSlots];
    for (size_t i = 0; i < a.in.size(); ++i)
      in[i] = i < reads_.size() && reads_[i] ? a.in[i]->data<float>() : nullptr;
    for (size_t k = 0; k < a.out.size(); ++k) out[k] = a.out[k].mutable_data<float>();
    // Blocks of 64; at least 64K elements per thread.
    const int64_t blocks = (p_.elements + 63) / 64;
    ref::parallel_for(thread_count(a), blocks, [&](int64_t b0, int64_t b1) {
      cpu::run_loop(p_, in, out, b0 * 64, std::min(p_.elements, b1 * 64));
    }, 1024);
  }

 private:
  cpu::LoopProgram p_;
  std::vector<bool> reads_;
};

Support elementwise_supported(const Graph& g, const Composite& c) {
  std::string why;
  loop_program(g, c, why);
  return why.empty() ? Support::yes() : Support::no(why);
}

std::unique_ptr<Kernel> prepare_elementwise(const Graph& g, const Composite& c) {
  std::string why;
  cpu::LoopProgram p = loop_program(g, c, why);
  if (!why.empty()) throw Error(ErrorCode::kUnsupported, why, {.graph = g.name(), .node = g.node_label(c.anchor)});
  return std::make_unique<ElementwiseLoopKernel>(std::move(p));
}

// ---- Slice copies (Region::kSliceCopies) ----------------------------------------------------------

// The copies of a kSliceCopies composite, one per output (in Composite::outputs order), from the
// fold the partitioner found (recomputed over the composite's own nodes); `why` says why not.
std::vector<cpu::ViewCopy> slice_copies_of(const Graph& g, const Composite& c, std::string& why) {
  const compiler::Uses uses(g);
  const std::set<int> members(c.nodes.begin(), c.nodes.end());
  const std::optional<compiler::TransposeFold> f = compiler::fold_transpose(
      g, c.anchor, uses.readers, [&](int n) { return members.count(n) > 0; }, [](ValueId) { return false; });
  if (!f || f->copies.size() != c.outputs.size()) {
    why = "the SLICEs are not strided views of the TRANSPOSE's input";
    return {};
  }
  const TensorType& t = type_of(g, f->sources[0]);
  const size_t bytes = storage_size(t.dtype);
  if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8) {
    why = c.pattern + " on " + std::string(dtype_name(t.dtype)) + ": elements of " + std::to_string(bytes) + " bytes";
    return {};
  }
  std::vector<cpu::ViewCopy> out;
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    const compiler::SliceCopy& sc = f->copies[k];
    if (g.node(sc.slice).outputs[0] != c.outputs[k]) {
      why = "the composite's outputs are not its SLICEs' results in node order";
      return {};
    }
    out.push_back(cpu::simplify({sc.view.dims, sc.view.strides, sc.view.offset, sc.select, bytes}));
    if (out.back().dims.size() > cpu::kMaxViewRank) {
      why = "a SLICE's view of the TRANSPOSE's input has more than " + std::to_string(cpu::kMaxViewRank) + " dimensions";
      return {};
    }
  }
  return out;
}

Support slice_copies_supported(const Graph& g, const Composite& c) {
  std::string why;
  slice_copies_of(g, c, why);
  return why.empty() ? Support::yes() : Support::no(why);
}

std::unique_ptr<Kernel> prepare_slice_copies(const Graph& g, const Composite& c) {
  std::string why;
  std::vector<cpu::ViewCopy> copies = slice_copies_of(g, c, why);
  if (!why.empty()) throw Error(ErrorCode::kUnsupported, why, {.graph = g.name(), .node = g.node_label(c.anchor)});
  const Node& t = g.node(c.anchor);
  int src0 = -1, src1 = -1;
  bool pieces = false;
  for (const cpu::ViewCopy& v : copies) pieces |= v.select >= 0;
  if (pieces) {
    // The CONCAT's two pieces: the composite's only member CONCAT.
    for (int ni : c.nodes)
      if (g.node(ni).op == Op::CONCAT) {
        src0 = c.input_index(g.node(ni).inputs[0]);
        src1 = c.input_index(g.node(ni).inputs[1]);
      }
  } else {
    src0 = c.input_index(t.inputs[0]);
  }
  if (src0 < 0 || (pieces && src1 < 0))
    throw Error(ErrorCode::kInternal, "slice copies: the sources are not inputs of the composite",
                {.graph = g.name(), .node = g.node_label(c.anchor)});
  return std::make_unique<SliceCopiesKernel>(std::move(copies), src0, src1);
}

// ---- Regions: softmax, layer, RMS and L2 normalization --------------------------------------------

// The norms by a row's sum of squares, which oneDNN 2.x's layer normalization does not have. RMS
// normalization over the last axis (Region::kRmsNorm): per row, ms = sum(x * x) * inv_n in fp32
// (eight interleaved partial sums), then y = x * (1 / sqrt(ms + eps)) * gamma + beta. Rows split over threads; each row is computed
// whole by one, so the result does not depend on the thread count.
//
// With `l2` the same kernel is the L2 normalization (Region::kL2Norm, F.normalize): y = x * (1 /
// max(sqrt(sum(x * x)), eps)) * gamma + beta, a NaN norm kept (std::max keeps its first operand
// when the comparison is false), a zero row 0.
class RowNormKernel final : public Kernel {
 public:
  RowNormKernel(int input, int64_t rows, int64_t n, float inv_n, float eps, std::vector<float> gamma, std::vector<float> beta,
                bool l2 = false)
      : input_(input), rows_(rows), n_(n), inv_n_(inv_n), eps_(eps), gamma_(std::move(gamma)), beta_(std::move(beta)), l2_(l2) {}
  size_t prepared_bytes() const override { return (gamma_.size() + beta_.size()) * sizeof(float); }
  std::string implementation() const override { return l2_ ? "weft_l2_norm" : "weft_rms_norm"; }
  void execute(ExecArgs& a) const override {
    const float* x = a.in[static_cast<size_t>(input_)]->data<float>();
    float* y = a.out[0].mutable_data<float>();
    const int64_t min_rows = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, n_));
    ref::parallel_for(a.threads, rows_, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* xr = x + r * n_;
        float* yr = y + r * n_;
        // Eight partial sums (element i into sum i % 8), then added pairwise: a fixed order that
        // the compiler keeps in vector registers.
        float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int64_t i = 0;
        for (; i + 8 <= n_; i += 8)
          for (int j = 0; j < 8; ++j) part[j] += xr[i + j] * xr[i + j];
        for (int j = 0; i < n_; ++i, ++j) part[j] += xr[i] * xr[i];
        const float q = ((part[0] + part[4]) + (part[1] + part[5])) + ((part[2] + part[6]) + (part[3] + part[7]));
        const float rstd = l2_ ? 1.f / std::max(std::sqrt(q), eps_) : 1.f / std::sqrt(q * inv_n_ + eps_);
        for (int64_t i = 0; i < n_; ++i) yr[i] = xr[i] * rstd * gamma_[static_cast<size_t>(i)] + beta_[static_cast<size_t>(i)];
      }
    }, min_rows);
  }

 private:
  int input_;
  int64_t rows_, n_;
  float inv_n_, eps_;
  std::vector<float> gamma_, beta_;
  bool l2_;
};

Support region_supported(const Graph& g, const Composite& c) {
  const TensorType& t = type_of(g, c.source);
  if (t.dtype != DType::kFp32) return Support::no(c.pattern + " on " + std::string(dtype_name(t.dtype)) + ": only fp32");
  return Support::yes();
}

std::unique_ptr<Kernel> prepare_region(const Graph& g, const Composite& c, const PrepareOptions& o) {
  const TensorType& t = type_of(g, c.source);
  if (c.region == Composite::Region::kRmsNorm || c.region == Composite::Region::kL2Norm) {
    const int64_t n = t.shape.back();
    auto channel = [&](ValueId v, float fill) {
      std::vector<float> p(static_cast<size_t>(n), fill);
      if (const Tensor* k = v == kNoValue ? nullptr : constant(g, v))
        for (int64_t i = 0; i < n; ++i) p[static_cast<size_t>(i)] = static_cast<float>(k->at_double(i));
      return p;
    };
    return std::make_unique<RowNormKernel>(c.input_index(c.source), t.num_elements() / n, n, c.inv_n != 0 ? static_cast<float>(c.inv_n) : 1.f / static_cast<float>(n),
                                           static_cast<float>(c.epsilon), channel(c.gamma, 1.f), channel(c.beta, 0.f),
                                           c.region == Composite::Region::kL2Norm);
  }
  dn::memory::desc md = plain_md(t);
  dn::primitive_attr attr = base_attr(o);
  if (c.region == Composite::Region::kSoftmax) {
    dn::softmax_forward::desc d(dn::prop_kind::forward_inference, md, c.axis);
    auto pd = dn::softmax_forward::primitive_desc(d, attr, engine());
    return finish(build<dn::softmax_forward>(pd), pd, {{DNNL_ARG_SRC, md, c.input_index(c.source)}, {DNNL_ARG_DST, md, -1, true}}, o);
  }
  if (c.region == Composite::Region::kLogSoftmax) {
    dn::logsoftmax_forward::desc d(dn::prop_kind::forward_inference, md, c.axis);
    auto pd = dn::logsoftmax_forward::primitive_desc(d, attr, engine());
    return finish(build<dn::logsoftmax_forward>(pd), pd,
                  {{DNNL_ARG_SRC, md, c.input_index(c.source)}, {DNNL_ARG_DST, md, -1, true}}, o);
  }
  const int64_t n = t.shape.back();
  dn::memory::desc cmd({n}, dt::f32, tag::x);
  auto channel = [&](ValueId v, float fill) {
    auto m = std::make_shared<dn::memory>(cmd, engine());
    float* p = static_cast<float*>(m->get_data_handle());
    const Tensor* k = v == kNoValue ? nullptr : constant(g, v);
    for (int64_t i = 0; i < n; ++i) p[i] = k ? static_cast<float>(k->at_double(i)) : fill;
    return m;
  };
  dn::layer_normalization_forward::desc d(dn::prop_kind::forward_inference, md, static_cast<float>(c.epsilon),
                                          dn::normalization_flags::use_scale | dn::normalization_flags::use_shift);
  auto pd = dn::layer_normalization_forward::primitive_desc(d, attr, engine());
  std::vector<Arg> args = {{DNNL_ARG_SRC, md, c.input_index(c.source)},
                           {DNNL_ARG_SCALE, cmd, -1, false, channel(c.gamma, 1.f)},
                           {DNNL_ARG_SHIFT, cmd, -1, false, channel(c.beta, 0.f)},
                           {DNNL_ARG_DST, md, -1, true}};
  return finish(build<dn::layer_normalization_forward>(pd), pd, std::move(args), o);
}

// ---- The backend --------------------------------------------------------------------------------

// Memory-bound operators (element-wise, binary, average pooling, reductions, transpose) up to 4M
// elements run on one thread: measured with DNNL_VERBOSE on EfficientNet-B0's squeeze-and-
// excitation scales on this 2-core machine, oneDNN's binary took 0.0074 ms on one thread and
// 0.028 ms on two for 1x1152x7x7, 0.055 vs 0.104 ms for 1x96x56x56, 0.142 vs 0.159 ms for
// 1x32x112x112: splitting them costs more than it gains.
int thread_cap(const Graph& g, const Composite& c) {
  const Op op = g.node(c.anchor).op;
  // MAX_POOL2D measured faster on two threads (SqueezeNet 0.30 vs 0.43 ms), AVG_POOL2D (global
  // squeeze-and-excitation pools) slower: EfficientNet-B0 7.5 vs 8.6 ms in all.
  if (anchor_op(op) && op != Op::AVG_POOL2D) return 1 << 20;
  if (c.region != Composite::Region::kNone && c.region != Composite::Region::kElementwise) return 1 << 20;
  // Weft's own loop over a CONCAT's pieces forks on the OpenMP team cheaply: DenseNet-121's 58
  // chains took 1.55 ms on one thread and 0.97 ms on two.
  if (c.concat_in >= 0) return 1 << 20;
  int64_t elements = 0;
  for (ValueId v : c.inputs)
    if (type_of(g, v).dtype != DType::kShape) elements += type_of(g, v).num_elements();
  for (ValueId v : c.outputs) elements += type_of(g, v).num_elements();
  return elements < (1 << 22) ? 1 : 1 << 20;
}

class OneDnnBackend final : public Backend {
 public:
  std::string_view name() const override { return "onednn"; }
  std::string_view description() const override {
    return "oneDNN (Debian libdnnl) for fp32 convolutions, matmuls, pooling, element-wise, concat, transpose "
           "and reductions; prepared primitives and weights, scratch memory from the runtime's arena";
  }
  bool runs_row(const OpDef& def, const TypeSupport& row) const override {
    if (!anchor_op(def.op) && !single_op(def.op)) return false;
    // int8 x int8 -> int32 convolutions and matmuls (exactness is checked per node).
    const bool int8_row = def.op == Op::CONV2D || def.op == Op::DEPTHWISE_CONV2D || def.op == Op::MATMUL;
    bool fp32 = true, int8 = int8_row;
    for (size_t i = 0; i < def.type_vars.size(); ++i) {
      const std::string_view var = def.type_vars[i];
      const DType t = row.types[i];
      if (t != DType::kFp32 && !(def.op == Op::MUL && var == "i8_t")) fp32 = false;  // MUL's shift is i8
      if (var == "in_t" || var == "weight_t") int8 &= t == DType::kInt8;
      else int8 &= t == DType::kInt32;
    }
    return fp32 || int8;
  }
  Support supports(const Module&, const Graph& g, const Composite& c) const override {
    const Node& n = g.node(c.anchor);
    // oneDNN has no per-image, per-channel scale of a convolution's source: the MUL runs apart.
    if (c.scale_in >= 0) return Support::no("a MUL by a factor per image and channel in front of a convolution is not fused");
    Support s;
    if (c.region == Composite::Region::kGroupedConv) s = grouped_conv_supported(g, c);
    else if (c.region == Composite::Region::kElementwise) s = elementwise_supported(g, c);
    else if (c.region == Composite::Region::kSliceCopies) s = slice_copies_supported(g, c);
    else if (c.region != Composite::Region::kNone) s = region_supported(g, c);
    else switch (n.op) {
      case Op::CONV2D:
      case Op::CONV3D:
      case Op::DEPTHWISE_CONV2D:
      case Op::TRANSPOSE_CONV2D: s = conv_supported(g, c); break;
      case Op::MAX_POOL2D:
      case Op::AVG_POOL2D: s = pool_supported(g, c); break;
      case Op::MATMUL: s = matmul_supported(g, c); break;
      default:
        if (c.single()) s = single_supported(g, c);
        else if (c.concat_in >= 0) s = channel_chain_supported(g, c);
        else if (binary_of(n.op) && !c.post_ops.empty()) s = binary_chain_supported(g, c);
        else s = Support::no("no fused form for " + c.pattern);
    }
    if (!s.ok) return s;
    // A bad WEFT_CPU_WINOGRAD is the caller's error on every machine, not a reason to fall back.
    if (n.op == Op::CONV2D) winograd_allowed();
    // Last word: oneDNN itself must accept the primitive on this machine.
    g_dry_run = true;
    try {
      auto k = prepare_impl(g, c, PrepareOptions{});
      const auto* dk = dynamic_cast<const OneDnnKernel*>(k.get());
      const std::string impl = dk ? dk->impl() : k->implementation();
      const Op op = g.node(c.anchor).op;
      if (impl.rfind("ref", 0) == 0 && c.region == Composite::Region::kNone && (anchor_op(op) || binary_of(op))) {
        g_dry_run = false;
        // oneDNN's reference convolutions, matmuls, pooling and binary kernels are naive loops
        // (measured 10-60x slower than its JIT kernels, e.g. a convolution reading NCHW into NHWC,
        // or a binary broadcast along a middle axis). Its reference reductions and softmax are
        // kept: they measured faster than Weft's kernels (BERT: 22 REDUCE_SUMs 0.93 ms vs 1.7 ms).
        return Support::no("oneDNN has only its reference implementation (" + impl + ") for this " + c.pattern);
      }
    } catch (const dn::error& e) {
      g_dry_run = false;
      return Support::no(std::string("oneDNN has no implementation for this ") + c.pattern + ": " + e.what());
    } catch (const Error& e) {
      g_dry_run = false;
      return Support::no(e.message());
    }
    g_dry_run = false;
    return Support::yes();
  }
  // In the default priority (the user named no backends): a oneDNN primitive call costs about 1 us
  // however little it computes, the reference kernel's plain loop a quarter of that on a few
  // hundred elements. Measured on 60-op chains of SIGMOID / TANH / MUL / ADD / CONCAT+SLICE over
  // [1, N] (one thread): N = 64: 61 us oneDNN, 15 us reference; 256: 68 / 46; 1024: 100 / 173. So
  // tiny non-anchor operations (unrolled recurrent cells are thousands of them) are left to the
  // reference backend. Naming onednn in the backend list offloads them anyway.
  // The size that counts is the largest operand: a reduction of 32K elements to 128 is not tiny.
  // A SLICE copies only its result: an unrolled LSTM's per-step SLICE of the input projections
  // ([1, 32, 192] -> [1, 1, 192]) took 2.5 us as a oneDNN reorder and 0.3 us on the reference.
  bool takes_by_default(const Graph& g, const Composite& c) const override {
    const Node& n = g.node(c.anchor);
    if (anchor_op(n.op) || c.region != Composite::Region::kNone || c.outputs.empty()) return true;
    if (c.single() && (small_activation(g, n) || small_binary(g, n))) return true;  // no primitive call: cheaper than the reference
    // One contiguous run of its input: a view on the reference backend, no copy at all.
    if (c.single() && compiler::contiguous_slice_offset(g, n)) return false;
    int64_t largest = 0;
    for (const std::vector<ValueId>* vs : {&c.inputs, &c.outputs})
      for (ValueId v : *vs)
        if (type_of(g, v).dtype != DType::kShape && !(n.op == Op::SLICE && vs == &c.inputs))
          largest = std::max(largest, shape_elements(type_of(g, v).shape));
    return largest > kTinyElements;
  }

  bool loop_fusable(const Graph& g, int ni) const override { return loop_node(g, ni); }

  Support nan_exact(const Graph& g, const Composite& c) const override {
    if (c.region == Composite::Region::kSoftmax || c.region == Composite::Region::kLogSoftmax)
      return Support::no("oneDNN's softmax turns a row with a NaN into 0s");
    for (int ni : c.nodes) {
      const Node& n = g.node(ni);
      if (n.op == Op::EXP) return Support::no("oneDNN's EXP of NaN is +inf");
      // Found by the TOSA conformance suite (rsqrt_55_f32_fs): x^-0.5 of -0 is +inf, RSQRT's is -inf.
      if (n.op == Op::RSQRT) return Support::no("oneDNN's RSQRT (pow with exponent -0.5) of -0 is +inf, not -inf");
      // Weft's max pool loop follows nan_mode; a fused PAD's -inf is skipped instead of compared,
      // which differs where every tap of a window is NaN and nan_mode is IGNORE.
      if (n.op == Op::MAX_POOL2D &&
          (c.pad < 0 || n.attr_int("nan_mode") == static_cast<int64_t>(NanMode::kPropagate)))
        continue;
      for (const AttrDef& a : op_def(n.op).attrs)
        if (a.kind == AttrKind::kNanMode)
          return Support::no(std::string(op_name(n.op)) + " on oneDNN does not honour nan_mode");
    }
    return Support::yes();
  }
  std::unique_ptr<Kernel> prepare(const Module&, const Graph& g, const Composite& c,
                                  const PrepareOptions& options) const override {
    // oneDNN (OpenMP) sizes a primitive's work decomposition by the calling thread's OpenMP
    // thread count when the primitive is created, and runs with that many threads.
    const int threads = std::min(std::max(1, options.threads), thread_cap(g, c));
    omp_set_num_threads(threads);
    try {
      auto k = prepare_impl(g, c, options);
      if (auto* ck = dynamic_cast<CappedKernel*>(k.get())) ck->set_max_threads(threads);
      // (ActivationKernel: one thread.)
      return k;
    } catch (const dn::error& e) {
      throw Error(ErrorCode::kRuntime, std::string("oneDNN could not prepare ") + c.pattern + ": " + e.what(),
                  {.graph = g.name(), .node = g.node_label(c.anchor)});
    }
  }

 private:
  static std::unique_ptr<Kernel> prepare_impl(const Graph& g, const Composite& c, const PrepareOptions& o) {
    if (c.region == Composite::Region::kGroupedConv) {
      if (auto k = prepare_weft_grouped_conv(g, c, o)) return k;
      return prepare_grouped_conv(g, c, o);
    }
    if (c.region == Composite::Region::kElementwise) return prepare_elementwise(g, c);
    if (c.region == Composite::Region::kSliceCopies) return prepare_slice_copies(g, c);
    if (c.region != Composite::Region::kNone) return prepare_region(g, c, o);
    switch (g.node(c.anchor).op) {
      case Op::CONV2D:
      case Op::CONV3D:
      case Op::DEPTHWISE_CONV2D:
      case Op::TRANSPOSE_CONV2D: return prepare_conv(g, c, o);
      case Op::MAX_POOL2D:
      case Op::AVG_POOL2D: return prepare_pool(g, c, o);
      case Op::MATMUL: return prepare_matmul(g, c, o);
      default:
        if (c.concat_in >= 0) return prepare_channel_chain(g, c);
        if (!c.single()) return prepare_binary_chain(g, c, o);
        return prepare_single(g, c, o);
    }
  }
};

}  // namespace

const Backend& onednn_backend() {
  static const OneDnnBackend b;
  return b;
}

}  // namespace weft::backend
