// The tensor operators on the Vulkan backend against the reference backend: CONV2D, CONV3D,
// DEPTHWISE_CONV2D, TRANSPOSE_CONV2D, MATMUL, AVG_POOL2D and MAX_POOL2D for every type row of
// PRO-FP / PRO-INT (and EXT-INT16) with a shader type, over strides, dilations, paddings, odd
// channel counts and batches > 1, through the tiled kernels (each tile size), the direct kernel, and
// the fused composites (PAD / SLICE in front, bias, residual, CLAMP, SIGMOID, TANH, swish, GELU).
//
// Tolerances (x max(1, max |reference|)):
//   0     integers (bit-exact), MAX_POOL2D, and fp16 accumulation (rounded after every step in
//         the reference's order, like the reference);
//   1e-5  fp32 through the direct kernel and pooling (the same order; GLSL's division is corrected
//         to the rounded quotient) and fp32 convolutions / matmuls of the tiled kernel (fused
//         multiply-adds round differently: at most a few ulp of partial sums of a few hundred terms);
//   2e-3  fp16 results of an fp32 accumulation (one fp16 ulp is ~1e-3: a differently rounded fp32
//         sum can round to the neighbouring fp16 value);
//   4e-3  fp16 results with fused post-ops (the reference rounds to fp16 after each operator, the
//         fused kernel once at the end).
#include <algorithm>
#include <cstdlib>
#include <limits>
#include <random>

#include "backends/backend.h"
#include "common/scoped_env.h"
#include "backends/vulkan/lower.h"
#include "compiler/narrow.h"
#include "device/vulkan/vulkan.h"
#include "vk_ops_util.h"

namespace weft::vk_test {
namespace {

constexpr double kF32 = 1e-5;
constexpr double kF16 = 2e-3;
constexpr double kF16Fused = 4e-3;

// Builds a graph with random inputs / constants and typed operators.
class Net {
 public:
  explicit Net(uint32_t seed) : rng_(seed) {}
  GraphBuilder b;
  std::vector<Tensor> feeds;

  ValueId input(TensorType t, double lo = -1, double hi = 1) {
    ValueId v = b.input("in" + std::to_string(feeds.size()), t);
    feeds.push_back(random_tensor(t, rng_, lo, hi));
    return v;
  }
  ValueId input_tensor(Tensor t) {
    ValueId v = b.input("in" + std::to_string(feeds.size()), t.type());
    feeds.push_back(std::move(t));
    return v;
  }
  ValueId weight(TensorType t, double lo = -1, double hi = 1) {
    return b.constant(fresh("w"), random_tensor(t, rng_, lo, hi));
  }
  ValueId constant(Tensor t) { return b.constant(fresh("c"), std::move(t)); }
  ValueId scalar(DType t, double v, int rank = 1) {
    const Shape s(static_cast<size_t>(rank), 1);
    return constant(is_float(t) ? Tensor::from_doubles({t, s}, std::vector<double>{v})
                                : Tensor::from_ints({t, s}, std::vector<int64_t>{static_cast<int64_t>(v)}));
  }
  const TensorType& type(ValueId v) const { return b.graph().value(v).type; }

  // CONV2D / DEPTHWISE_CONV2D / CONV3D with the output type given by acc (bias of that type).
  ValueId conv(Op op, ValueId x, ValueId w, ValueId bias, std::vector<int64_t> pad, std::vector<int64_t> stride,
               std::vector<int64_t> dil, DType acc, int64_t izp = 0, int64_t wzp = 0) {
    const TensorType xt = type(x);  // a copy: adding constants below may move the graph's values
    const TensorType wt = type(w);
    const DType out_t = type(bias).dtype;
    Shape out;
    if (op == Op::CONV3D) {
      out = {xt.shape[0], 0, 0, 0, wt.shape[0]};
      for (int i = 0; i < 3; ++i)
        out[1 + i] =
            (xt.shape[1 + i] - 1 + pad[2 * i] + pad[2 * i + 1] - (wt.shape[1 + i] - 1) * dil[i]) / stride[i] + 1;
    } else {
      const bool dw = op == Op::DEPTHWISE_CONV2D;
      const int64_t kh = dw ? wt.shape[0] : wt.shape[1], kw = dw ? wt.shape[1] : wt.shape[2];
      const int64_t oc = dw ? wt.shape[2] * wt.shape[3] : wt.shape[0];
      out = {xt.shape[0], (xt.shape[1] - 1 + pad[0] + pad[1] - (kh - 1) * dil[0]) / stride[0] + 1,
             (xt.shape[2] - 1 + pad[2] + pad[3] - (kw - 1) * dil[1]) / stride[1] + 1, oc};
    }
    return b.op_multi(
        op, {x, w, bias, scalar(xt.dtype, static_cast<double>(izp)), scalar(wt.dtype, static_cast<double>(wzp))},
        {{"pad", std::move(pad)},
         {"stride", std::move(stride)},
         {"dilation", std::move(dil)},
         {"acc_type", acc_attr(acc)}},
        {fresh("conv")}, {TensorType{out_t, out}})[0];
  }
  ValueId transpose_conv(ValueId x, ValueId w, ValueId bias, std::vector<int64_t> out_pad, std::vector<int64_t> stride,
                         DType acc, int64_t izp = 0, int64_t wzp = 0) {
    const TensorType xt = type(x);  // a copy: adding constants below may move the graph's values
    const TensorType wt = type(w);
    const Shape out{xt.shape[0], (xt.shape[1] - 1) * stride[0] + out_pad[0] + out_pad[1] + wt.shape[1],
                    (xt.shape[2] - 1) * stride[1] + out_pad[2] + out_pad[3] + wt.shape[2], wt.shape[0]};
    return b.op_multi(
        Op::TRANSPOSE_CONV2D,
        {x, w, bias, scalar(xt.dtype, static_cast<double>(izp)), scalar(wt.dtype, static_cast<double>(wzp))},
        {{"out_pad", std::move(out_pad)}, {"stride", std::move(stride)}, {"acc_type", acc_attr(acc)}}, {fresh("tconv")},
        {TensorType{type(bias).dtype, out}})[0];
  }
  ValueId matmul(ValueId a, ValueId bb, DType out_t, int64_t azp = 0, int64_t bzp = 0) {
    const Shape& as = type(a).shape;
    const DType t = type(a).dtype;
    return b.op_multi(Op::MATMUL, {a, bb, scalar(t, static_cast<double>(azp)), scalar(t, static_cast<double>(bzp))}, {},
                      {fresh("mm")}, {TensorType{out_t, {as[0], as[1], type(bb).shape[2]}}})[0];
  }
  ValueId pool(Op op, ValueId x, std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> p,
               DType acc = DType::kFp32, int64_t izp = 0, int64_t ozp = 0, NanMode nan = NanMode::kPropagate) {
    const TensorType xt = type(x);  // a copy: adding constants below may move the graph's values
    const Shape out{xt.shape[0], (xt.shape[1] + p[0] + p[1] - k[0]) / s[0] + 1,
                    (xt.shape[2] + p[2] + p[3] - k[1]) / s[1] + 1, xt.shape[3]};
    Attrs attrs{{"kernel", std::move(k)}, {"stride", std::move(s)}, {"pad", std::move(p)}};
    std::vector<ValueId> ins{x};
    if (op == Op::AVG_POOL2D) {
      attrs.push_back({"acc_type", acc_attr(acc)});
      ins.push_back(scalar(xt.dtype, static_cast<double>(izp)));
      ins.push_back(scalar(xt.dtype, static_cast<double>(ozp)));
    } else {
      attrs.push_back({"nan_mode", static_cast<int64_t>(nan)});
    }
    return b.op_multi(op, ins, attrs, {fresh("pool")}, {TensorType{xt.dtype, out}})[0];
  }
  // PAD of an NHWC tensor's H and W by [top, bottom, left, right] with `value`.
  ValueId pad_hw(ValueId x, std::vector<int64_t> tblr, double value) {
    ValueId s = b.constant_shape(fresh("padding"), {0, 0, tblr[0], tblr[1], tblr[2], tblr[3], 0, 0});
    return b.op(Op::PAD, {x, s, scalar(type(x).dtype, value)});
  }
  ValueId slice(ValueId x, std::vector<int64_t> start, std::vector<int64_t> size) {
    ValueId a = b.constant_shape(fresh("start"), std::move(start));
    ValueId c = b.constant_shape(fresh("size"), std::move(size));
    return b.op(Op::SLICE, {x, a, c});
  }
  ValueId clamp(ValueId x, double lo, double hi) {
    const DType t = type(x).dtype;
    return b.op(Op::CLAMP, {x},
                {{"min_val", Tensor::from_doubles({t, {}}, std::vector<double>{lo})},
                 {"max_val", Tensor::from_doubles({t, {}}, std::vector<double>{hi})}});
  }
  ValueId add(ValueId x, ValueId y) { return b.op(Op::ADD, {x, y}); }
  ValueId mul(ValueId x, ValueId y) { return b.op(Op::MUL, {x, y, shift()}); }
  ValueId unary(Op op, ValueId x) { return b.op(op, {x}); }
  ValueId reshape(ValueId x, std::vector<int64_t> to) { return b.op(Op::RESHAPE, {x, b.constant_shape(fresh("shape"), std::move(to))}); }
  ValueId swish(ValueId x) { return mul(x, unary(Op::SIGMOID, x)); }
  ValueId gelu_erf(ValueId x) {
    const DType t = type(x).dtype;
    const int r = type(x).rank();
    ValueId e = unary(Op::ERF, mul(x, scalar(t, 0.70710678118654752, r)));
    return mul(mul(x, add(e, scalar(t, 1.0, r))), scalar(t, 0.5, r));
  }

  // Softmax over the last axis as the ONNX frontend lowers it.
  ValueId softmax(ValueId x) {
    const int64_t axis = type(x).rank() - 1;
    ValueId mx = b.op(Op::REDUCE_MAX, {x}, {{"axis", axis}});
    ValueId e = unary(Op::EXP, b.op(Op::SUB, {x, mx}));
    ValueId sum = b.op(Op::REDUCE_SUM, {e}, {{"axis", axis}});
    return mul(e, unary(Op::RECIPROCAL, sum));
  }

  Module finish(std::vector<ValueId> outputs) {
    for (ValueId v : outputs) b.output(v);
    return Module(b.finish());
  }

 private:
  static int64_t acc_attr(DType acc) {
    switch (acc) {
      case DType::kInt32: return static_cast<int64_t>(AccType::kInt32);
      case DType::kInt48: return static_cast<int64_t>(AccType::kInt48);
      case DType::kFp16: return static_cast<int64_t>(AccType::kFp16);
      default: return static_cast<int64_t>(AccType::kFp32);
    }
  }
  ValueId shift() {
    if (shift_ == kNoValue)
      shift_ = b.constant("shift", Tensor::from_ints({DType::kInt8, {1}}, std::vector<int64_t>{0}));
    return shift_;
  }
  std::string fresh(const std::string& base) { return base + std::to_string(counter_++); }
  std::mt19937 rng_;
  int counter_ = 0;
  ValueId shift_ = kNoValue;
};

// Sets an environment variable for a scope: WEFT_VULKAN_GEMM_TILE / WEFT_VULKAN_GEMM_SPLIT force the
// tiled kernel's tile and K split; WEFT_VULKAN_NO_COOP keeps fp16 GEMMs off the cooperative-matrix
// kernel (which accumulates in fp32) where a test expects the reference's fp16 accumulation exactly
// or exercises the tiled kernel itself.
using weft::test::ScopedEnv;

// The explain text places `pattern` as one unit (it names the composite's pattern).
void expect_pattern(const std::string& explain, const std::string& pattern) {
  EXPECT_NE(explain.find(pattern), std::string::npos) << "no unit " << pattern << " in:\n" << explain;
}

// A type row of the convolutions: input / weight / output (= bias) types and the accumulator.
struct ConvRow {
  DType in, w, out, acc;
  const char* name;
};
const ConvRow kConvRows[] = {
    {DType::kFp32, DType::kFp32, DType::kFp32, DType::kFp32, "fp32"},
    {DType::kFp16, DType::kFp16, DType::kFp16, DType::kFp32, "fp16 acc fp32"},
    {DType::kFp16, DType::kFp16, DType::kFp16, DType::kFp16, "fp16 acc fp16"},
    {DType::kInt8, DType::kInt8, DType::kInt32, DType::kInt32, "int8"},
    {DType::kInt16, DType::kInt8, DType::kInt48, DType::kInt48, "int16x8"},
};

double tol_of(const ConvRow& r, bool fused = false) {
  if (!is_float(r.out)) return 0;
  if (r.out == DType::kFp32) return kF32;
  if (fused) return kF16Fused;
  return r.acc == DType::kFp16 ? 0.0 : kF16;
}

// Zero points exercised per input type (int8 may be non-zero; others must be 0).
int64_t zp_for(DType t, int64_t v) { return t == DType::kInt8 ? v : 0; }

// Value range of operands: floats [-1, 1], integers over most of their range.
double lo_of(DType t) { return is_float(t) ? -1.0 : t == DType::kInt16 ? -3000.0 : -128.0; }
double hi_of(DType t) { return is_float(t) ? 1.0 : t == DType::kInt16 ? 3000.0 : 127.0; }

struct ConvCase {
  int64_t n, h, w, ic, oc, kh, kw;
  std::vector<int64_t> pad, stride, dil;
  bool bias_bcast;
};

// CONV2D: tiled (OC >= 4) and direct (OC < 4) kernels, 1x1 (plain GEMM), strides, dilations,
// asymmetric padding, odd channel counts, batch 2, a broadcast bias.
TEST(VulkanTensor, Conv2dEveryRowMatchesReference) {
  ScopedEnv no_coop("WEFT_VULKAN_NO_COOP", "1");
  const std::vector<ConvCase> cases = {
      {2, 7, 9, 5, 16, 3, 3, {1, 1, 0, 2}, {2, 2}, {1, 1}, false},
      {1, 6, 5, 8, 12, 1, 1, {0, 0, 0, 0}, {1, 1}, {1, 1}, false},  // 1x1: A is the input
      {1, 9, 8, 3, 3, 3, 2, {2, 2, 1, 1}, {1, 1}, {2, 2}, false},   // OC 3: direct kernel
      {2, 5, 6, 7, 5, 2, 3, {0, 1, 1, 0}, {1, 2}, {1, 1}, true},    // one bias for every channel
      {1, 5, 5, 6, 9, 1, 1, {0, 0, 0, 0}, {2, 2}, {1, 1}, false},   // 1x1 strided: gathered
  };
  uint32_t seed = 1;
  for (const ConvRow& row : kConvRows) {
    for (const ConvCase& cc : cases) {
      SCOPED_TRACE(std::string(row.name) + " case " + std::to_string(seed));
      Net net(seed++);
      const int64_t izp = zp_for(row.in, -7), wzp = zp_for(row.w, 3);
      ValueId x = net.input({row.in, {cc.n, cc.h, cc.w, cc.ic}}, lo_of(row.in), hi_of(row.in));
      ValueId w = net.weight({row.w, {cc.oc, cc.kh, cc.kw, cc.ic}}, lo_of(row.w), hi_of(row.w));
      ValueId bias = net.weight({row.out, {cc.bias_bcast ? 1 : cc.oc}}, is_float(row.out) ? -1 : -1000,
                                is_float(row.out) ? 1 : 1000);
      ValueId y = net.conv(Op::CONV2D, x, w, bias, cc.pad, cc.stride, cc.dil, row.acc, izp, wzp);
      check_vs_reference(net.finish({y}), net.feeds, tol_of(row));
    }
  }
}

// Batch-1 Linear layers (B = W^T read in place from [N][K] weights: k contiguous) of up to four
// rows run as matrix-vector products (tc_gemv, named in the profile): K not a multiple of the
// kernel's 512-element step, N not a multiple of its 8 columns per workgroup, a bias and CLAMP
// fused, fp16 operands with an fp32 result. Five rows, or B with n contiguous, stay on the tiles.
TEST(VulkanTensor, BatchOneLinearLayersRunAsMatrixVectorProducts) {
  struct Case {
    DType in;
    int64_t M, K, N;
    bool transposed, post, gemv;
  };
  uint32_t seed = 950;
  for (const Case& c : {Case{DType::kFp32, 1, 1000, 300, true, true, true}, Case{DType::kFp32, 3, 2052, 264, true, false, true},
                        Case{DType::kFp16, 1, 516, 1000, true, true, true}, Case{DType::kFp32, 4, 256, 256, true, true, true},
                        Case{DType::kFp32, 5, 1000, 300, true, false, false},
                        Case{DType::kFp32, 1, 1000, 300, false, false, false}}) {
    SCOPED_TRACE(std::string(dtype_name(c.in)) + " " + std::to_string(c.M) + "x" + std::to_string(c.K) + "x" +
                 std::to_string(c.N) + (c.transposed ? " W^T" : ""));
    Net net(seed++);
    ValueId a = net.input({c.in, {1, c.M, c.K}});
    ValueId b = c.transposed ? net.b.op(Op::TRANSPOSE, {net.weight({c.in, {1, c.N, c.K}})},
                                        {{"perms", std::vector<int64_t>{0, 2, 1}}})
                             : net.weight({c.in, {1, c.K, c.N}});
    ValueId y = net.matmul(a, b, DType::kFp32);
    if (c.post) y = net.clamp(net.add(y, net.weight({DType::kFp32, {1, 1, c.N}})), 0.0, 6.0);
    const Module m = net.finish({y});
    check_vs_reference(m, net.feeds, kF32);
    Context ctx(Model::from_module(m, vulkan_first()));
    ctx.set_profiling(true);
    ctx.run(net.feeds);
    int gemv = 0;
    for (const KernelProfile& k : ctx.profile()) gemv += k.device && k.implementation == "tc_gemv";
    EXPECT_EQ(gemv, c.gemv ? 1 : 0);
  }
}

// Every float tile size of the tiled kernel over several tiles with ragged edges.
TEST(VulkanTensor, Conv2dAndMatmulEveryTileSize) {
  ScopedEnv no_coop("WEFT_VULKAN_NO_COOP", "1");
  for (const char* tile : {"32", "64", "128"}) {
    SCOPED_TRACE(std::string("tile ") + tile);
    ScopedEnv force("WEFT_VULKAN_GEMM_TILE", tile);
    {
      Net net(11);
      ValueId x = net.input({DType::kFp32, {2, 9, 10, 7}});
      ValueId w = net.weight({DType::kFp32, {136, 3, 3, 7}});
      ValueId bias = net.weight({DType::kFp32, {136}});
      ValueId y = net.conv(Op::CONV2D, x, w, bias, {1, 1, 1, 1}, {1, 1}, {1, 1}, DType::kFp32);
      check_vs_reference(net.finish({y}), net.feeds, kF32);
    }
    {
      Net net(12);
      ValueId a = net.input({DType::kFp16, {2, 133, 37}});
      ValueId b = net.input({DType::kFp16, {2, 37, 140}});
      check_vs_reference(net.finish({net.matmul(a, b, DType::kFp32)}), net.feeds, kF32);
    }
    // fp32 with K and N multiples of 4: both operands staged as 4-float vectors (ragged M and N
    // edges, batches), also split over K; a 1x1 convolution reads its input as A the same way.
    for (const char* split : {"1", "3"}) {
      SCOPED_TRACE(std::string("split ") + split);
      ScopedEnv force_split("WEFT_VULKAN_GEMM_SPLIT", split);
      Net net(13);
      ValueId a = net.input({DType::kFp32, {3, 133, 44}});
      ValueId b = net.input({DType::kFp32, {3, 44, 140}});
      check_vs_reference(net.finish({net.matmul(a, b, DType::kFp32)}), net.feeds, kF32);
    }
    {  // a gathered convolution with IC % 4 == 0: padding, stride, dilation, a folded PAD's fill
      Net net(15);
      ValueId x = net.input({DType::kFp32, {2, 12, 11, 8}});
      ValueId p = net.pad_hw(x, {1, 2, 2, 0}, 0.5);
      ValueId y = net.conv(Op::CONV2D, p, net.weight({DType::kFp32, {68, 3, 3, 8}}), net.weight({DType::kFp32, {68}}),
                           {1, 1, 1, 1}, {2, 1}, {1, 2}, DType::kFp32);
      const std::string ex = check_vs_reference(net.finish({y}), net.feeds, kF32);
      expect_pattern(ex, "PAD+CONV2D");
    }
    {
      Net net(14);
      ValueId x = net.input({DType::kFp32, {1, 11, 13, 24}});
      ValueId y = net.conv(Op::CONV2D, x, net.weight({DType::kFp32, {36, 1, 1, 24}}), net.weight({DType::kFp32, {36}}),
                           {0, 0, 0, 0}, {1, 1}, {1, 1}, DType::kFp32);
      check_vs_reference(net.finish({y}), net.feeds, kF32);
    }
  }
}

// Split-K (forced): the partial sums of every slice are added by a second pass that applies the
// bias and the fused post-ops; batches of MATMUL keep their own partial sums.
TEST(VulkanTensor, SplitKGemm) {
  ScopedEnv force("WEFT_VULKAN_GEMM_SPLIT", "3");
  {
    Net net(13);
    ValueId x = net.input({DType::kFp32, {1, 6, 5, 24}});
    ValueId p = net.pad_hw(x, {1, 1, 1, 1}, 0.0);
    ValueId w = net.weight({DType::kFp32, {20, 3, 3, 24}});
    ValueId bias = net.weight({DType::kFp32, {20}});
    ValueId y = net.conv(Op::CONV2D, p, w, bias, {0, 0, 0, 0}, {1, 1}, {1, 1}, DType::kFp32);
    ValueId z = net.clamp(net.add(y, net.input(net.type(y))), -0.5, 0.5);
    const std::string ex = check_vs_reference(net.finish({z}), net.feeds, kF32);
    expect_pattern(ex, "PAD+CONV2D+ADD+CLAMP");
  }
  for (DType t : {DType::kFp32, DType::kFp16}) {
    Net net(14);
    ValueId a = net.input({t, {3, 10, 100}});
    ValueId b = net.input({t, {3, 100, 21}});
    check_vs_reference(net.finish({net.matmul(a, b, DType::kFp32)}), net.feeds, kF32);
  }
}

// A MATMUL reading a transposed operand: the strided-view composite is declined, the TRANSPOSE and
// the plain MATMUL run as separate Vulkan units.
// MATMUL operands reached through TRANSPOSE / RESHAPE / SLICE chains are read in place as strided
// views: attention's head split (q, v: [S, H*D] -> [H, S, D]), K^T, and the slices of a fused QKV
// projection (an offset). A view whose reduction axis is not contiguous in A is declined.
TEST(VulkanTensor, MatmulReadsOperandViewsInPlace) {
  ScopedEnv no_coop("WEFT_VULKAN_NO_COOP", "1");
  {
    Net net(15);
    ValueId x = net.input({DType::kFp32, {1, 12, 9}});
    ValueId a = net.b.op(Op::TRANSPOSE, {x}, {{"perms", std::vector<int64_t>{0, 2, 1}}});
    ValueId b = net.weight({DType::kFp32, {1, 12, 10}});
    ValueId y = net.matmul(a, b, DType::kFp32);
    const Module m = net.finish({y});
    check_vs_reference(m, net.feeds, kF32);
    const Graph& g = m.main();
    backend::Composite c;
    c.anchor = g.value(y).producer;
    c.a_view = {g.value(a).producer};
    c.nodes = {c.a_view[0], c.anchor};
    c.inputs = {x, b};
    c.outputs = {y};
    const backend::Support s = backend::vulkan_backend().supports(m, g, c);
    EXPECT_FALSE(s.ok);
    EXPECT_NE(s.reason.find("reduction axis is not contiguous"), std::string::npos) << s.reason;
  }
  {
    const int64_t S = 10, H = 3, D = 8;
    Net net(17);
    ValueId qkv = net.input({DType::kFp32, {1, S, 3 * H * D}});
    auto head = [&](int which, std::vector<int64_t> perms, std::vector<int64_t> to) {
      ValueId part = net.slice(qkv, {0, 0, which * H * D}, {1, S, H * D});
      ValueId r = net.reshape(part, {S, H, D});
      return net.reshape(net.b.op(Op::TRANSPOSE, {r}, {{"perms", std::move(perms)}}), std::move(to));
    };
    ValueId q = head(0, {1, 0, 2}, {H, S, D});
    ValueId kt = head(1, {1, 2, 0}, {H, D, S});
    ValueId v = head(2, {1, 0, 2}, {H, S, D});
    ValueId scores = net.matmul(q, kt, DType::kFp32);  // [H, S, S]
    ValueId out = net.matmul(scores, v, DType::kFp32);  // [H, S, D]
    const std::string ex = check_vs_reference(net.finish({out}), net.feeds, kF32);
    // Both matmuls read their operands in place: no SLICE, RESHAPE or TRANSPOSE runs on its own.
    expect_pattern(ex, "regions made of: 2 x TRANSPOSE+MATMUL\n");
  }
  // Batches of heads: [B, S, H*D] -> [B, H, S, D] -> [B*H, S, D] has no single batch stride (b and h
  // step by S*H*D and D): the split batch axis, two batch strides in the GEMM. D = 8 stages vectors,
  // D = 6 scalars; SLICEs of a fused projection give the offsets.
  for (int64_t D : {8, 6}) {
    SCOPED_TRACE("D " + std::to_string(D));
    const int64_t B = 3, S = 10, H = 2;
    Net net(18);
    ValueId qkv = net.input({DType::kFp32, {B, S, 3 * H * D}});
    auto head = [&](int which, std::vector<int64_t> perms, std::vector<int64_t> to) {
      ValueId part = net.slice(qkv, {0, 0, which * H * D}, {B, S, H * D});
      ValueId r = net.reshape(part, {B, S, H, D});
      return net.reshape(net.b.op(Op::TRANSPOSE, {r}, {{"perms", std::move(perms)}}), std::move(to));
    };
    ValueId q = head(0, {0, 2, 1, 3}, {B * H, S, D});
    ValueId kt = head(1, {0, 2, 3, 1}, {B * H, D, S});
    ValueId v = head(2, {0, 2, 1, 3}, {B * H, S, D});
    ValueId scores = net.matmul(q, kt, DType::kFp32);  // [B*H, S, S]
    ValueId out = net.matmul(scores, v, DType::kFp32);  // [B*H, S, D]
    const std::string ex = check_vs_reference(net.finish({out}), net.feeds, kF32);
    expect_pattern(ex, "regions made of: 2 x TRANSPOSE+MATMUL\n");
  }
}

// Attention's three projections of a batch, as the ONNX importer writes them (x [B, S, E] ->
// RESHAPE [1, B*S, E] -> MATMUL -> RESHAPE [B, S, H*D] -> ADD bias, each), become one wider GEMM
// when Vulkan leads (Backend::reads_split_views), and the heads are read from its slices in place:
// no SLICE, RESHAPE or TRANSPOSE runs on its own.
TEST(VulkanTensor, BatchedSiblingProjectionsMergeIntoOneGemm) {
  ScopedEnv no_coop("WEFT_VULKAN_NO_COOP", "1");
  const int64_t B = 2, S = 6, E = 12, H = 2, D = 4;
  Net net(21);
  ValueId x = net.input({DType::kFp32, {B, S, E}});
  auto head = [&](std::vector<int64_t> perms, std::vector<int64_t> to) {
    ValueId flat = net.reshape(x, {1, B * S, E});
    ValueId p = net.matmul(flat, net.weight({DType::kFp32, {1, E, H * D}}), DType::kFp32);
    ValueId y = net.b.op(Op::ADD, {net.reshape(p, {B, S, H * D}), net.weight({DType::kFp32, {1, 1, H * D}})});
    ValueId r = net.reshape(y, {B, S, H, D});
    return net.reshape(net.b.op(Op::TRANSPOSE, {r}, {{"perms", std::move(perms)}}), std::move(to));
  };
  ValueId q = head({0, 2, 1, 3}, {B * H, S, D});
  ValueId kt = head({0, 2, 3, 1}, {B * H, D, S});
  ValueId v = head({0, 2, 1, 3}, {B * H, S, D});
  ValueId scores = net.matmul(q, kt, DType::kFp32);
  ValueId out = net.matmul(scores, v, DType::kFp32);
  const Module m = net.finish({out});
  // 3 SLICEs, 3 x (RESHAPE, TRANSPOSE, RESHAPE) and 2 attention MATMULs around one projection
  // (RESHAPE, MATMUL, RESHAPE, ADD).
  const std::string ex = check_vs_reference(m, net.feeds, kF32, 18);
  EXPECT_NE(ex.find("note: merged 2 batched sibling MATMULs into wider ones"), std::string::npos) << ex;
  expect_pattern(ex, "regions made of: 2 x TRANSPOSE+MATMUL, 1 x MATMUL+RESHAPE+BIAS\n");
  // The CPU backends leading: left as three GEMMs (oneDNN would copy the split views).
  const std::string cpu = Model::from_module(m, reference_only())->explain();
  EXPECT_EQ(cpu.find("merged"), std::string::npos) << cpu;
}

// A MATMUL without post-ops writes straight through the RESHAPE / TRANSPOSE chain after it: the
// heads going back to [B, S, H*D] (a split batch axis when B > 1), also when split over K (the
// second pass stores through the view) and on the integer kernel.
TEST(VulkanTensor, MatmulWritesThroughTheHeadMerge) {
  ScopedEnv no_coop("WEFT_VULKAN_NO_COOP", "1");
  struct Case {
    int64_t B, S, H, D, K;
    const char* split;
    DType t;
  };
  for (const Case& c : {Case{1, 10, 3, 8, 12, "1", DType::kFp32}, Case{3, 10, 2, 6, 12, "1", DType::kFp32},
                        Case{2, 5, 2, 4, 600, "3", DType::kFp32}, Case{2, 7, 3, 5, 9, "1", DType::kInt8}}) {
    SCOPED_TRACE("B " + std::to_string(c.B) + " K " + std::to_string(c.K) + " split " + c.split);
    ScopedEnv force_split("WEFT_VULKAN_GEMM_SPLIT", c.split);
    Net net(19);
    const bool i8 = c.t == DType::kInt8;
    ValueId p = net.input({c.t, {c.B * c.H, c.S, c.K}}, i8 ? -100 : -1, i8 ? 100 : 1);
    ValueId v = net.input({c.t, {c.B * c.H, c.K, c.D}}, i8 ? -100 : -1, i8 ? 100 : 1);
    ValueId m = net.matmul(p, v, i8 ? DType::kInt32 : DType::kFp32);  // [B*H, S, D]
    ValueId r = net.reshape(m, {c.B, c.H, c.S, c.D});
    ValueId t = net.b.op(Op::TRANSPOSE, {r}, {{"perms", std::vector<int64_t>{0, 2, 1, 3}}});
    ValueId y = net.reshape(t, {c.B, c.S, c.H * c.D});
    const std::string ex = check_vs_reference(net.finish({y}), net.feeds, i8 ? 0.0 : kF32);
    expect_pattern(ex, "regions made of: 1 x MATMUL+TRANSPOSE\n");
  }
}

// Attention's heads split out of one QKV tensor [B, S, pad + 3 H D] in place (SLICE, RESHAPE,
// TRANSPOSE, RESHAPE each): Q and V as [B*H, S, D], K^T as [B*H, D, S].
struct Heads {
  ValueId q, kt, v;
};
Heads split_heads(Net& net, ValueId qkv, int64_t B, int64_t S, int64_t H, int64_t D, int64_t pad = 0) {
  const int64_t E = H * D;
  auto head = [&](int which, std::vector<int64_t> perms, std::vector<int64_t> to) {
    ValueId part = net.slice(qkv, {0, 0, pad + which * E}, {B, S, E});
    ValueId r = net.reshape(part, {B, S, H, D});
    return net.reshape(net.b.op(Op::TRANSPOSE, {r}, {{"perms", std::move(perms)}}), std::move(to));
  };
  Heads h;
  h.q = head(0, {0, 2, 1, 3}, {B * H, S, D});
  h.kt = head(1, {0, 2, 3, 1}, {B * H, D, S});
  h.v = head(2, {0, 2, 1, 3}, {B * H, S, D});
  return h;
}

// Attention written out (heads split from one QKV tensor, Q K^T, SCALE, softmax, P V, heads merged
// back) runs as one dispatch (mx_attention): query and key counts that are not multiples of the 32-row
// tiles, batches of heads (split batch axes), head sizes 32 and 64, K^T and V read as vectors or (an
// unaligned slice offset) element by element, fp16 without cooperative matrices. A head size that is
// not a multiple of 32 keeps the three units.
TEST(VulkanTensor, AttentionRunsAsOneDispatch) {
  ScopedEnv no_coop("WEFT_VULKAN_NO_COOP", "1");
  struct Case {
    int64_t B, S, H, D, pad;  // pad: extra columns in front of the QKV tensor (slice offsets)
    bool scale;
    DType t;
    bool fused;
  };
  for (const Case& c : {Case{2, 40, 2, 32, 0, true, DType::kFp32, true}, Case{1, 7, 3, 64, 0, false, DType::kFp32, true},
                        Case{1, 70, 1, 32, 1, true, DType::kFp32, true}, Case{2, 33, 2, 32, 0, true, DType::kFp16, true},
                        Case{1, 9, 2, 24, 0, true, DType::kFp32, false}}) {
    SCOPED_TRACE("B " + std::to_string(c.B) + " S " + std::to_string(c.S) + " D " + std::to_string(c.D) + " " +
                 dtype_name(c.t));
    const int64_t B = c.B, S = c.S, H = c.H, D = c.D, E = H * D;
    Net net(29);
    ValueId qkv = net.input({c.t, {B, S, c.pad + 3 * E}}, -2, 2);
    const auto [q, kt, v] = split_heads(net, qkv, B, S, H, D, c.pad);
    ValueId scores = net.reshape(net.matmul(q, kt, c.t), {B, H, S, S});
    if (c.scale) scores = net.mul(scores, net.scalar(c.t, 1.0 / std::sqrt(static_cast<double>(D)), 4));
    ValueId p = net.reshape(net.softmax(scores), {B * H, S, S});
    ValueId o = net.reshape(net.matmul(p, v, c.t), {B, H, S, D});
    ValueId y = net.reshape(net.b.op(Op::TRANSPOSE, {o}, {{"perms", std::vector<int64_t>{0, 2, 1, 3}}}), {B, S, E});
    const Module m = net.finish({y});
    check_vs_reference(m, net.feeds, c.t == DType::kFp16 ? kF16Fused : kF32);
    auto model = Model::from_module(m, vulkan_first());
    Context ctx(model);
    ctx.set_profiling(true);
    ctx.run(net.feeds);
    int attention = 0, softmax = 0;
    for (const KernelProfile& k : ctx.profile()) {
      attention += k.device && k.pattern == "ATTENTION";
      softmax += k.device && k.pattern == "SOFTMAX";
    }
    EXPECT_EQ(attention, c.fused ? 1 : 0);
    EXPECT_EQ(softmax, c.fused ? 0 : 1);
  }
  // WEFT_VULKAN_ATTENTION=off keeps the three units (the same result).
  ScopedEnv off("WEFT_VULKAN_ATTENTION", "off");
  Net net(30);
  ValueId q = net.input({DType::kFp32, {2, 5, 32}}), kt = net.input({DType::kFp32, {2, 32, 6}}),
          v = net.input({DType::kFp32, {2, 6, 32}});
  const Module m = net.finish({net.matmul(net.softmax(net.matmul(q, kt, DType::kFp32)), v, DType::kFp32)});
  check_vs_reference(m, net.feeds, kF32);
  Context ctx(Model::from_module(m, vulkan_first()));
  ctx.set_profiling(true);
  ctx.run(net.feeds);
  for (const KernelProfile& k : ctx.profile()) EXPECT_NE(k.pattern, "ATTENTION");
}

// torch's seq-first attention at batch > 1 (nn.MultiheadAttention as torch 2.x exports it; ViT at
// batch 32): q, k and v are slices of [S, B, 3E] -> [3, S, B, 1, E], each merged to [S, B*H, D]
// (batch and heads: no strided view), transposed to [B*H, S, D] and split to [B, H, S, D] again, a
// strided view of the projection as a whole; the heads go back through [S, B, H, D] -> [S*B, E].
// All of it one dispatch (mx_attention) that reads the projection in place, as at batch 1.
TEST(VulkanTensor, SeqFirstAttentionAtBatchAboveOneRunsAsOneDispatch) {
  ScopedEnv no_coop("WEFT_VULKAN_NO_COOP", "1");
  const int64_t S = 20, B = 3, H = 2, D = 32, E = H * D;
  Net net(32);
  ValueId proj = net.input({DType::kFp32, {S, B, 3 * E}});
  ValueId packed = net.reshape(net.b.op(Op::TRANSPOSE, {net.reshape(proj, {1, S, B, 3, E})},
                                        {{"perms", std::vector<int64_t>{3, 1, 2, 0, 4}}}),
                               {3, S, B, E});
  auto head = [&](int64_t t) {
    ValueId x = net.reshape(net.slice(packed, {t, 0, 0, 0}, {1, S, B, E}), {S, B * H, D});
    return net.reshape(net.b.op(Op::TRANSPOSE, {x}, {{"perms", std::vector<int64_t>{1, 0, 2}}}), {B, H, S, D});
  };
  ValueId q = net.reshape(head(0), {B * H, S, D});
  ValueId kt = net.reshape(net.b.op(Op::TRANSPOSE, {head(1)}, {{"perms", std::vector<int64_t>{0, 1, 3, 2}}}), {B * H, D, S});
  ValueId v = net.reshape(head(2), {B * H, S, D});
  ValueId scores = net.mul(net.reshape(net.matmul(q, kt, DType::kFp32), {B, H, S, S}),
                           net.scalar(DType::kFp32, 1.0 / std::sqrt(static_cast<double>(D)), 4));
  ValueId p = net.reshape(net.softmax(scores), {B * H, S, S});
  ValueId o = net.reshape(net.matmul(p, v, DType::kFp32), {B, H, S, D});
  ValueId y = net.reshape(net.b.op(Op::TRANSPOSE, {o}, {{"perms", std::vector<int64_t>{2, 0, 1, 3}}}), {S * B, E});
  const Module m = net.finish({y});
  check_vs_reference(m, net.feeds, kF32);
  Context ctx(Model::from_module(m, vulkan_first()));
  ctx.set_profiling(true);
  ctx.run(net.feeds);
  std::string seen;
  int attention = 0, others = 0;
  for (const KernelProfile& k : ctx.profile()) {
    if (!k.device) continue;
    seen += k.pattern + " ";
    (k.pattern.ends_with("ATTENTION") ? attention : others) += 1;
  }
  EXPECT_EQ(attention, 1) << seen;
  EXPECT_EQ(others, 0) << seen;
}

// Attention with an additive mask broadcast to the scores, as exporters write it (BERT's padding
// mask [B,1,1,S] of 0 / -10000, a causal [1,1,S,S], a per-batch [B,1,S,S]; added after the scale
// or before it): one dispatch (mx_attention) that reads the mask in place. With one head, a causal or
// per-batch mask has the scores' own shape (the GEMM's residual, not a broadcast): fused the same way. Where attention is not
// fused (head size 24), the Q K^T GEMM adds the mask in its epilogue (MATMUL+RESHAPE+SCALE+MASK).
// A broadcast that is not one run of axes ([B,1,S,1]) stays a separate ADD; all match the reference.
TEST(VulkanTensor, MaskedAttentionRunsAsOneDispatch) {
  ScopedEnv no_coop("WEFT_VULKAN_NO_COOP", "1");
  enum Mask { kPadding, kCausal, kPerBatch, kColumn };
  struct Case {
    int64_t B, S, H, D;
    Mask mask;
    bool mask_first;
    DType t;
    const char* fused;  // the pattern that runs the scores: ATTENTION or the GEMM's (its end)
  };
  for (const Case& c : {Case{2, 40, 2, 32, kPadding, false, DType::kFp32, "ATTENTION"},
                        Case{1, 37, 2, 64, kCausal, false, DType::kFp32, "ATTENTION"},
                        Case{1, 40, 1, 64, kCausal, true, DType::kFp32, "ATTENTION"},
                        Case{2, 24, 1, 32, kPerBatch, false, DType::kFp32, "ATTENTION"},
                        Case{3, 9, 2, 32, kPerBatch, true, DType::kFp32, "ATTENTION"},
                        Case{2, 33, 2, 32, kPadding, false, DType::kFp16, "ATTENTION"},
                        Case{2, 9, 2, 24, kPadding, false, DType::kFp32, "MATMUL+RESHAPE+SCALE+MASK"},
                        Case{2, 9, 2, 32, kColumn, false, DType::kFp32, "MATMUL+RESHAPE+SCALE"}}) {
    SCOPED_TRACE("B " + std::to_string(c.B) + " S " + std::to_string(c.S) + " D " + std::to_string(c.D) + " mask " +
                 std::to_string(c.mask) + " " + dtype_name(c.t));
    const int64_t B = c.B, S = c.S, H = c.H, D = c.D, E = H * D;
    Net net(31);
    ValueId qkv = net.input({c.t, {B, S, 3 * E}}, -2, 2);
    // The mask: 0 where a key is seen, -10000 where not (every row keeps its first key).
    const Shape ms = c.mask == kPadding ? Shape{B, 1, 1, S}
                     : c.mask == kCausal ? Shape{1, 1, S, S}
                     : c.mask == kPerBatch ? Shape{B, 1, S, S}
                                           : Shape{B, 1, S, 1};
    std::vector<double> mv(static_cast<size_t>(shape_elements(ms)));
    for (size_t i = 0; i < mv.size(); ++i) {
      const int64_t j = static_cast<int64_t>(i) % ms[3], q = (static_cast<int64_t>(i) / ms[3]) % ms[2];
      const bool hidden = c.mask == kPadding ? j >= S - 1 - static_cast<int64_t>(i) / S % 3 && j > 0
                          : c.mask == kCausal ? j > q
                                              : (i * 7919) % 5 == 0 && j > 0;
      mv[i] = hidden ? -10000.0 : 0.0;
    }
    ValueId mask = net.input_tensor(Tensor::from_doubles({c.t, ms}, mv));
    const auto [q, kt, v] = split_heads(net, qkv, B, S, H, D);
    ValueId scores = net.reshape(net.matmul(q, kt, c.t), {B, H, S, S});
    ValueId scale = net.scalar(c.t, 1.0 / std::sqrt(static_cast<double>(D)), 4);
    scores = c.mask_first ? net.mul(net.add(scores, mask), scale) : net.add(net.mul(scores, scale), mask);
    ValueId p = net.reshape(net.softmax(scores), {B * H, S, S});
    ValueId o = net.reshape(net.matmul(p, v, c.t), {B, H, S, D});
    ValueId y = net.reshape(net.b.op(Op::TRANSPOSE, {o}, {{"perms", std::vector<int64_t>{0, 2, 1, 3}}}), {B, S, E});
    const Module m = net.finish({y});
    check_vs_reference(m, net.feeds, c.t == DType::kFp16 ? kF16Fused : kF32);
    Context ctx(Model::from_module(m, vulkan_first()));
    ctx.set_profiling(true);
    ctx.run(net.feeds);
    int fused = 0, adds = 0;
    for (const KernelProfile& k : ctx.profile()) {
      const std::string_view pat(k.pattern), want(c.fused);  // (after the views' TRANSPOSE+)
      fused += k.device && pat.size() >= want.size() && pat.substr(pat.size() - want.size()) == want;
      adds += k.device && k.pattern == "ADD";
    }
    std::string seen;
    for (const KernelProfile& k : ctx.profile()) seen += k.pattern + (k.device ? " (device) " : " ");
    EXPECT_EQ(fused, 1) << seen;
    EXPECT_EQ(adds, c.mask == kColumn ? 1 : 0) << seen;
  }
}

// fp16 attention on a device with cooperative matrices (mx_attention_coop): one dispatch where the
// head size is a multiple of 16, there are at most 256 keys and Q, K, V are read in 16-byte rows
// (head sizes 32, 64 and 128; a padding mask added before the scale, a causal mask after it, no
// scale; several row blocks and batches of heads; query and key counts that are not multiples of 16
// down to a single partial block, and 250 keys); otherwise the three units on the cooperative-matrix
// GEMMs (a slice offset of one half, 260 keys, head size 24). Results within fp16 rounding
// of the reference and of the three units (WEFT_VULKAN_ATTENTION=off). lavapipe has no cooperative
// matrices: skipped there (the SIMT kernel's fp16 cases above run instead).
TEST(VulkanTensor, CooperativeMatrixAttention) {
  {
    ScopedEnv force("WEFT_VULKAN_COOP", "64");
    Net net(40);
    ValueId a = net.input({DType::kFp16, {1, 64, 64}}), b = net.input({DType::kFp16, {1, 64, 64}});
    Context ctx(Model::from_module(net.finish({net.matmul(a, b, DType::kFp16)}), vulkan_first()));
    ctx.set_profiling(true);
    ctx.run(net.feeds);
    bool coop = false;
    for (const KernelProfile& k : ctx.profile())
      coop |= k.device && k.implementation.ends_with("_coop");
    if (!coop) GTEST_SKIP() << "the Vulkan device runs no cooperative-matrix kernels";
  }
  enum Mask { kNone, kPaddingBeforeScale, kCausalAfterScale };
  struct Case {
    int64_t B, S, H, D, pad;
    Mask mask;
    bool scale;
    bool fused;
  };
  for (const Case& c : {Case{2, 32, 2, 64, 0, kPaddingBeforeScale, true, true}, Case{1, 48, 3, 32, 0, kNone, false, true},
                        Case{1, 64, 2, 128, 0, kCausalAfterScale, true, true}, Case{2, 16, 2, 32, 8, kNone, true, true},
                        Case{1, 32, 2, 32, 1, kNone, true, false}, Case{1, 40, 2, 32, 0, kNone, true, true},
                        Case{1, 37, 2, 64, 0, kPaddingBeforeScale, true, true},
                        Case{2, 5, 2, 32, 0, kCausalAfterScale, true, true}, Case{1, 250, 1, 32, 0, kNone, true, true},
                        Case{1, 260, 1, 32, 0, kNone, true, false}, Case{1, 20, 2, 24, 0, kNone, true, false}}) {
    SCOPED_TRACE("B " + std::to_string(c.B) + " S " + std::to_string(c.S) + " H " + std::to_string(c.H) + " D " +
                 std::to_string(c.D) + " pad " + std::to_string(c.pad) + " mask " + std::to_string(c.mask));
    const int64_t B = c.B, S = c.S, H = c.H, D = c.D, E = H * D;
    Net net(41);
    ValueId qkv = net.input({DType::kFp16, {B, S, c.pad + 3 * E}});
    const auto [q, kt, v] = split_heads(net, qkv, B, S, H, D, c.pad);
    ValueId scores = net.reshape(net.matmul(q, kt, DType::kFp16), {B, H, S, S});
    ValueId scale = net.scalar(DType::kFp16, 1.0 / std::sqrt(static_cast<double>(D)), 4);
    if (c.mask != kNone) {
      const Shape ms = c.mask == kPaddingBeforeScale ? Shape{B, 1, 1, S} : Shape{1, 1, S, S};
      std::vector<double> mv(static_cast<size_t>(shape_elements(ms)));
      for (size_t i = 0; i < mv.size(); ++i) {
        const int64_t j = static_cast<int64_t>(i) % S, row = static_cast<int64_t>(i) / S;
        mv[i] = (c.mask == kPaddingBeforeScale ? j >= S - 3 - row : j > row % S) ? -10000.0 : 0.0;
      }
      ValueId mask = net.input_tensor(Tensor::from_doubles({DType::kFp16, ms}, mv));
      scores = c.mask == kPaddingBeforeScale ? net.mul(net.add(scores, mask), scale) : net.add(net.mul(scores, scale), mask);
    } else if (c.scale) {
      scores = net.mul(scores, scale);
    }
    ValueId p = net.reshape(net.softmax(scores), {B * H, S, S});
    ValueId o = net.reshape(net.matmul(p, v, DType::kFp16), {B, H, S, D});
    ValueId y = net.reshape(net.b.op(Op::TRANSPOSE, {o}, {{"perms", std::vector<int64_t>{0, 2, 1, 3}}}), {B, S, E});
    const Module m = net.finish({y});
    check_vs_reference(m, net.feeds, kF16Fused);
    Context ctx(Model::from_module(m, vulkan_first()));
    ctx.set_profiling(true);
    const std::vector<Tensor> fused = ctx.run(net.feeds);
    int coop = 0, softmax = 0;
    for (const KernelProfile& k : ctx.profile()) {
      coop += k.device && k.pattern == "ATTENTION" && k.implementation == "mx_attention_coop";
      softmax += k.device && k.pattern == "SOFTMAX";
    }
    EXPECT_EQ(coop, c.fused ? 1 : 0);
    EXPECT_EQ(softmax, c.fused ? 0 : 1);
    ScopedEnv off("WEFT_VULKAN_ATTENTION", "off");
    Context apart(Model::from_module(m, vulkan_first()));
    EXPECT_TRUE(close(fused.at(0), apart.run(net.feeds).at(0), 2e-3));
  }
}

// LayerNormalization of fp32 `h` over its last axis as the ONNX frontend lowers it (REDUCE_SUM * 1/N,
// SUB, the centred square's mean, + eps, RSQRT, MUL), with random gamma and beta.
ValueId layer_norm_last(Net& net, ValueId h, double eps) {
  const DType t = DType::kFp32;
  const int rank = static_cast<int>(net.type(h).rank());
  const int64_t n = net.type(h).shape.back();
  const Attrs axis{{"axis", int64_t{rank - 1}}};
  auto scalar = [&](double v) { return net.scalar(t, v, rank); };
  ValueId mean = net.mul(net.b.op(Op::REDUCE_SUM, {h}, axis), scalar(1.0 / static_cast<double>(n)));
  ValueId d = net.b.op(Op::SUB, {h, mean});
  ValueId var = net.mul(net.b.op(Op::REDUCE_SUM, {net.mul(d, d)}, axis), scalar(1.0 / static_cast<double>(n)));
  ValueId y = net.mul(d, net.unary(Op::RSQRT, net.add(var, scalar(eps))));
  Shape affine(static_cast<size_t>(rank), 1);
  affine.back() = n;
  return net.add(net.mul(y, net.weight({t, affine}, 0.5, 1.5)), net.weight({t, affine}));
}

// A GEMM split over K and the layer norm of its rows (BERT's output projections at batch 1: MATMUL,
// bias, residual, LAYER_NORM as the ONNX frontend writes it) run as the GEMM and one second pass
// (tc_splitk_ln): bit for bit the result of the two kept apart (WEFT_VULKAN_GEMM_LN=off), within
// rounding of the reference. Not fused: a GEMM that is not split (also an fp16 MATMUL on the SIMT
// tiles, which accumulate in fp16 and do not split; the cooperative-matrix tiles accumulate in fp32
// and do), and one whose result is also a graph output.
TEST(VulkanTensor, SplitGemmAndLayerNormRunAsOnePass) {
  ScopedEnv no_coop("WEFT_VULKAN_NO_COOP", "1");
  struct Case {
    int64_t M, K, N;
    const char* split;
    bool fp16, also_output, fused;
  };
  for (const Case& c : {Case{6, 600, 40, "3", false, false, true}, Case{70, 300, 96, "2", false, false, true},
                        Case{5, 256, 24, "2", true, false, false}, Case{6, 600, 40, "1", false, false, false},
                        Case{6, 600, 40, "3", false, true, false}}) {
    SCOPED_TRACE("M " + std::to_string(c.M) + " K " + std::to_string(c.K) + " N " + std::to_string(c.N) + " split " +
                 c.split + (c.fp16 ? " fp16" : "") + (c.also_output ? " (result also an output)" : ""));
    ScopedEnv split("WEFT_VULKAN_GEMM_SPLIT", c.split);
    Net net(41);
    const DType t = DType::kFp32;
    ValueId x = net.input({t, {1, c.M, c.K}}, -1, 1);
    ValueId res = net.input({t, {1, c.M, c.N}}, -1, 1);
    ValueId h = net.add(net.add(net.matmul(x, net.weight({t, {1, c.K, c.N}}, -0.1, 0.1), t), net.weight({t, {1, 1, c.N}})), res);
    ValueId y = layer_norm_last(net, h, 1e-5);
    std::vector<ValueId> outs{y};
    if (c.also_output) outs.push_back(h);
    Module m = net.finish(outs);
    const std::vector<Tensor>& feeds = net.feeds;
    // As the reduced-precision mode narrows (fp16 tensors, fp32 accumulators, fp32 inputs and outputs).
    if (c.fp16) compiler::narrow_fp32_to_fp16(m, /*fp32_accumulators=*/true, /*preserve_io=*/true);
    check_vs_reference(m, feeds, c.fp16 ? 3e-2 : kF32);
    auto run = [&](const char* ln) {
      ScopedEnv env("WEFT_VULKAN_GEMM_LN", ln);
      Context ctx(Model::from_module(m, vulkan_first()));
      ctx.set_profiling(true);
      std::vector<Tensor> out = ctx.run(feeds);
      int fused = 0, apart = 0;
      for (const KernelProfile& k : ctx.profile()) {
        const std::string_view pat(k.pattern);
        fused += k.device && pat.size() > 11 && pat.substr(pat.size() - 11) == "+LAYER_NORM";
        apart += k.device && pat == "LAYER_NORM";
      }
      EXPECT_EQ(fused > 0, std::string_view(ln) == "on" && c.fused) << ln;  // (the GEMM's and the second pass's)
      EXPECT_EQ(apart, std::string_view(ln) == "on" && c.fused ? 0 : 1) << ln;
      return out;
    };
    const std::vector<Tensor> on = run("on"), off = run("off");
    ASSERT_EQ(on.size(), off.size());
    for (size_t i = 0; i < on.size(); ++i) EXPECT_TRUE(close(on[i], off[i], 0.0)) << "output " << i;
  }
}

// The compute units the fusion rules count with: the device's where the driver says (an H100 or
// H200: 132), else the 16 they assume (lavapipe reports none).
int64_t fusion_compute_units() {
  const uint32_t units = vk::features(*vk::open_device()).compute_units;
  return units > 0 ? int64_t{units} : 16;
}

// A depthwise convolution and the layer norm of its channels (ConvNeXt's block: DEPTHWISE_CONV2D,
// then LAYER_NORM over the last axis as the ONNX frontend lowers it) run as one dispatch
// (tc_dwconv_ln), within rounding of the reference and of the two kept apart (WEFT_VULKAN_DW_LN=off):
// two pixels per row group with an odd width (a partial last group); one pixel; a row group that is
// not a power of two, with idle invocations (36 channels); more channels than a workgroup has
// invocations (two per invocation); a stride and dilation along y; the reduced-precision mode (the
// convolution's result rounded to fp16 as the two kept apart store it); the sums without subgroup
// operations (=tree). Not fused: a convolution whose result is also a graph output, one strided along
// x, and one with more outputs than 4096 per compute unit (sized from the device's unit count).
TEST(VulkanTensor, DepthwiseConvAndLayerNormRunAsOneDispatch) {
  // A square 128-channel image just over 4096 outputs per unit.
  const int64_t big = static_cast<int64_t>(std::sqrt(4096.0 * static_cast<double>(fusion_compute_units()) / 128.0)) + 1;
  struct Case {
    int64_t h, w, c, k;
    std::vector<int64_t> stride, dil;
    bool fp16, also_output, fused;
    const char* mode;
  };
  for (const Case& c : {Case{14, 13, 96, 7, {1, 1}, {1, 1}, false, false, true, "on"},
                        Case{5, 3, 36, 7, {1, 1}, {1, 1}, false, false, true, "on"},
                        Case{4, 5, 1100, 3, {1, 1}, {1, 1}, false, false, true, "on"},
                        Case{9, 8, 24, 3, {2, 1}, {2, 1}, false, false, true, "on"},
                        Case{14, 13, 96, 7, {1, 1}, {1, 1}, true, false, true, "on"},
                        Case{14, 13, 96, 7, {1, 1}, {1, 1}, false, false, true, "tree"},
                        Case{5, 3, 36, 7, {1, 1}, {1, 1}, false, false, true, "tree"},
                        Case{14, 13, 96, 7, {1, 1}, {1, 1}, false, true, false, "on"},
                        Case{9, 9, 24, 3, {1, 2}, {1, 1}, false, false, false, "on"},
                        Case{big, big, 128, 3, {1, 1}, {1, 1}, false, false, false, "on"}}) {
    SCOPED_TRACE(std::to_string(c.h) + "x" + std::to_string(c.w) + "x" + std::to_string(c.c) + " k " +
                 std::to_string(c.k) + " stride " + std::to_string(c.stride[0]) + "," + std::to_string(c.stride[1]) +
                 (c.fp16 ? " fp16" : "") + (c.also_output ? " (result also an output)" : "") + " " + c.mode);
    Net net(43);
    const DType t = DType::kFp32;
    const int64_t p = c.k / 2;
    ValueId x = net.input({t, {1, c.h, c.w, c.c}}, -1, 1);
    ValueId h = net.conv(Op::DEPTHWISE_CONV2D, x, net.weight({t, {c.k, c.k, c.c, 1}}, -0.5, 0.5),
                         net.weight({t, {c.c}}), {p, p, p, p}, c.stride, c.dil, t);
    ValueId y = layer_norm_last(net, h, 1e-6);
    std::vector<ValueId> outs{y};
    if (c.also_output) outs.push_back(h);
    Module m = net.finish(outs);
    const std::vector<Tensor>& feeds = net.feeds;
    if (c.fp16) compiler::narrow_fp32_to_fp16(m, /*fp32_accumulators=*/true, /*preserve_io=*/true);
    ScopedEnv mode("WEFT_VULKAN_DW_LN", c.mode);
    check_vs_reference(m, feeds, c.fp16 ? 3e-2 : kF32);
    auto run = [&](const char* v) {
      ScopedEnv env("WEFT_VULKAN_DW_LN", v);
      Context ctx(Model::from_module(m, vulkan_first()));
      ctx.set_profiling(true);
      std::vector<Tensor> out = ctx.run(feeds);
      int fused = 0, apart = 0;
      for (const KernelProfile& k : ctx.profile()) {
        fused += k.device && k.pattern == "DEPTHWISE_CONV2D+LAYER_NORM";
        apart += k.device && k.pattern == "LAYER_NORM";
      }
      const bool want = std::string_view(v) != "off" && c.fused;
      EXPECT_EQ(fused, want ? 1 : 0) << v;
      EXPECT_EQ(apart, want ? 0 : 1) << v;
      return out;
    };
    const std::vector<Tensor> on = run(c.mode), off = run("off");
    ASSERT_EQ(on.size(), off.size());
    for (size_t i = 0; i < on.size(); ++i) EXPECT_TRUE(close(on[i], off[i], c.fp16 ? 2e-3 : 1e-5)) << "output " << i;
  }
}

// Squeeze-and-excitation: the global pool's [N, 1, 1, C] result through a 1x1 CONV2D to R channels
// and an activation, a 1x1 CONV2D back to C and a gate; the two convolutions run as one dispatch
// (tc_se_mlp). EfficientNet's and MaxViT's form (SiLU, sigmoid) and MobileNetV3's (ReLU, hard
// sigmoid as SCALE + SHIFT + CLAMP); channel counts that are not multiples of a subgroup; several
// images; the fp16 mode. Kept apart: the first convolution's activation also an output, weights over
// the limit, more images than compute units (the device's; 16 assumed on lavapipe), and unless
// WEFT_VULKAN_SE=on.
TEST(VulkanTensor, SqueezeExcitationConvolutionsRunAsOneDispatch) {
  const int64_t too_many = fusion_compute_units() + 1;
  struct Case {
    int64_t n, c, r;
    bool mobilenet, fp16, also_output;
    const char* limit;
    bool fused;
  };
  for (const Case& c : {Case{1, 24, 6, false, false, false, "", true}, Case{2, 300, 75, false, false, false, "", true},
                        Case{1, 40, 10, true, false, false, "", true}, Case{1, 96, 24, false, true, false, "", true},
                        Case{3, 72, 18, true, true, false, "", true}, Case{1, 24, 6, true, false, true, "", false},
                        Case{1, 24, 6, false, false, false, "200", false}, Case{too_many, 24, 6, false, false, false, "", false}}) {
    SCOPED_TRACE(std::to_string(c.n) + " x " + std::to_string(c.c) + " -> " + std::to_string(c.r) +
                 (c.mobilenet ? " relu / hard sigmoid" : " swish / sigmoid") + (c.fp16 ? " fp16" : "") +
                 (c.also_output ? " (first activation also an output)" : "") + (*c.limit ? std::string(" limit ") + c.limit : ""));
    Net net(47);
    const DType t = DType::kFp32;
    ValueId x = net.input({t, {c.n, 5, 4, c.c}}, -2, 2);
    ValueId pooled = net.pool(Op::AVG_POOL2D, x, {5, 4}, {1, 1}, {0, 0, 0, 0});
    ValueId h = net.conv(Op::CONV2D, pooled, net.weight({t, {c.r, 1, 1, c.c}}, -0.5, 0.5), net.weight({t, {c.r}}),
                         {0, 0, 0, 0}, {1, 1}, {1, 1}, t);
    ValueId a = c.mobilenet ? net.clamp(h, 0, 6) : net.mul(h, net.b.op(Op::SIGMOID, {h}));
    ValueId g = net.conv(Op::CONV2D, a, net.weight({t, {c.c, 1, 1, c.r}}, -0.5, 0.5), net.weight({t, {c.c}}),
                         {0, 0, 0, 0}, {1, 1}, {1, 1}, t);
    ValueId gate = c.mobilenet ? net.clamp(net.add(net.mul(g, net.scalar(t, 1.0 / 6, 4)), net.scalar(t, 0.5, 4)), 0, 1)
                               : net.b.op(Op::SIGMOID, {g});
    std::vector<ValueId> outs{net.mul(x, gate)};
    if (c.also_output) outs.push_back(a);
    Module m = net.finish(outs);
    const std::vector<Tensor>& feeds = net.feeds;
    if (c.fp16) compiler::narrow_fp32_to_fp16(m, /*fp32_accumulators=*/true, /*preserve_io=*/true);
    std::optional<ScopedEnv> limit;
    if (*c.limit) limit.emplace("WEFT_VULKAN_SE_WEIGHTS", c.limit);
    {
      ScopedEnv on("WEFT_VULKAN_SE", "on");
      check_vs_reference(m, feeds, c.fp16 ? 3e-2 : kF32);
    }
    auto run = [&](const char* v) {
      std::optional<ScopedEnv> env;
      if (v) env.emplace("WEFT_VULKAN_SE", v);
      Context ctx(Model::from_module(m, vulkan_first()));
      ctx.set_profiling(true);
      std::vector<Tensor> out = ctx.run(feeds);
      int fused = 0, convs = 0;
      for (const KernelProfile& k : ctx.profile()) {
        if (!k.device) continue;
        // (The fused unit's pattern is both convolutions' patterns: "CONV2D+SWISH+CONV2D+SIGMOID".)
        const bool conv = k.pattern.rfind("CONV2D", 0) == 0, both = conv && k.pattern.find("+CONV2D") != std::string::npos;
        fused += both;
        convs += conv && !both;
      }
      const bool want = v && std::string_view(v) == "on" && c.fused;
      EXPECT_EQ(fused, want ? 1 : 0) << (v ? v : "unset");
      if (want) {
        EXPECT_EQ(convs, 0) << v;
      }
      return out;
    };
    const std::vector<Tensor> on = run("on"), off = run("off");
    run(nullptr);  // unset: apart (the fusion is opt-in)
    ASSERT_EQ(on.size(), off.size());
    for (size_t i = 0; i < on.size(); ++i) EXPECT_TRUE(close(on[i], off[i], c.fp16 ? 2e-3 : 1e-5)) << "output " << i;
  }
}

// Integer results take no fused operations: CONV2D + CLAMP on int32 is declined as a composite.
TEST(VulkanTensor, IntegerPostOpsDeclined) {
  Net net(16);
  ValueId x = net.input({DType::kInt8, {1, 4, 4, 3}}, -128, 127);
  ValueId w = net.weight({DType::kInt8, {4, 1, 1, 3}}, -128, 127);
  ValueId bias = net.weight({DType::kInt32, {4}}, -10, 10);
  ValueId y = net.conv(Op::CONV2D, x, w, bias, {0, 0, 0, 0}, {1, 1}, {1, 1}, DType::kInt32);
  ValueId z = net.b.op(Op::CLAMP, {y},
                       {{"min_val", Tensor::from_ints({DType::kInt32, {}}, std::vector<int64_t>{-100})},
                        {"max_val", Tensor::from_ints({DType::kInt32, {}}, std::vector<int64_t>{100})}});
  const Module m = net.finish({z});
  const Graph& g = m.main();
  backend::Composite c;
  c.anchor = g.value(y).producer;
  c.post_ops = {{backend::PostOp::Kind::kClamp, g.value(z).producer}};
  c.nodes = {c.anchor, c.post_ops[0].node};
  c.inputs = g.node(c.anchor).inputs;
  c.outputs = {z};
  const backend::Support s = backend::vulkan_backend().supports(m, g, c);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("integer results take no fused operations"), std::string::npos) << s.reason;
}

// Padded taps with inf / NaN weights: the direct kernel skips them exactly as the reference does.
// Weights given as an input (not constant) take the direct kernel when taps can be skipped and the
// tiled kernel (reading the weights strided) when they cannot.
TEST(VulkanTensor, Conv2dNonFiniteAndNonConstantWeights) {
  {
    Net net(21);
    ValueId x = net.input({DType::kFp32, {1, 5, 5, 4}});
    std::mt19937 rng(3);
    Tensor wt = random_tensor({DType::kFp32, {6, 3, 3, 4}}, rng);
    std::vector<double> wv(wt.num_elements());
    for (int64_t i = 0; i < wt.num_elements(); ++i) wv[i] = wt.at_double(i);
    wv[0] = std::numeric_limits<double>::infinity();
    wv[40] = std::numeric_limits<double>::quiet_NaN();
    ValueId w = net.constant(Tensor::from_doubles(wt.type(), wv));
    ValueId bias = net.weight({DType::kFp32, {6}});
    ValueId y = net.conv(Op::CONV2D, x, w, bias, {1, 1, 1, 1}, {1, 1}, {1, 1}, DType::kFp32);
    check_vs_reference(net.finish({y}), net.feeds, kF32);
  }
  for (bool padded : {true, false}) {
    Net net(22);
    ValueId x = net.input({DType::kFp32, {2, 6, 7, 5}});
    ValueId w = net.input({DType::kFp32, {8, 3, 3, 5}});
    ValueId bias = net.input({DType::kFp32, {8}});
    const std::vector<int64_t> pad = padded ? std::vector<int64_t>{1, 1, 1, 1} : std::vector<int64_t>{0, 0, 0, 0};
    ValueId y = net.conv(Op::CONV2D, x, w, bias, pad, {1, 1}, {1, 1}, DType::kFp32);
    check_vs_reference(net.finish({y}), net.feeds, kF32);
  }
  {  // int8 with non-constant weights: the tiled kernel subtracts the weight zero point itself
    Net net(23);
    ValueId x = net.input({DType::kInt8, {1, 5, 6, 4}}, -128, 127);
    ValueId w = net.input({DType::kInt8, {6, 2, 2, 4}}, -128, 127);
    ValueId bias = net.weight({DType::kInt32, {6}}, -1000, 1000);
    ValueId y = net.conv(Op::CONV2D, x, w, bias, {1, 0, 0, 1}, {1, 1}, {1, 1}, DType::kInt32, 5, -9);
    check_vs_reference(net.finish({y}), net.feeds, 0);
  }
}

TEST(VulkanTensor, Conv3dEveryRowMatchesReference) {
  ScopedEnv no_coop("WEFT_VULKAN_NO_COOP", "1");
  uint32_t seed = 100;
  for (const ConvRow& row : kConvRows) {
    for (int64_t oc : {6, 2}) {  // tiled, direct
      SCOPED_TRACE(std::string(row.name) + " OC " + std::to_string(oc));
      Net net(seed++);
      ValueId x = net.input({row.in, {2, 4, 5, 6, 3}}, lo_of(row.in), hi_of(row.in));
      ValueId w = net.weight({row.w, {oc, 2, 3, 2, 3}}, lo_of(row.w), hi_of(row.w));
      ValueId bias = net.weight({row.out, {oc}}, is_float(row.out) ? -1 : -1000, is_float(row.out) ? 1 : 1000);
      ValueId y = net.conv(Op::CONV3D, x, w, bias, {1, 0, 1, 1, 0, 1}, {1, 2, 1}, {2, 1, 2}, row.acc, zp_for(row.in, 4),
                           zp_for(row.w, -2));
      check_vs_reference(net.finish({y}), net.feeds, tol_of(row));
    }
  }
}

TEST(VulkanTensor, DepthwiseConv2dEveryRowMatchesReference) {
  struct Case {
    int64_t n, h, w, c, m, kh, kw;
    std::vector<int64_t> pad, stride, dil;
  };
  const std::vector<Case> cases = {
      {1, 8, 7, 5, 1, 3, 3, {1, 1, 1, 1}, {1, 1}, {1, 1}},
      {2, 9, 9, 3, 2, 3, 3, {1, 1, 1, 1}, {2, 2}, {1, 1}},  // channel multiplier 2, stride 2
      {1, 7, 8, 4, 1, 2, 3, {2, 1, 0, 3}, {1, 2}, {2, 1}},  // dilation, asymmetric padding
      // Stride and dilation 1 along x: four outputs along x per invocation (depthwise_rows), also
      // where OW leaves a partial block; strided / dilated along y.
      {1, 9, 10, 6, 1, 7, 7, {3, 3, 3, 3}, {1, 1}, {1, 1}},
      {2, 8, 9, 4, 2, 3, 5, {1, 2, 0, 2}, {2, 1}, {2, 1}},
  };
  uint32_t seed = 200;
  for (const ConvRow& row : kConvRows) {
    for (const Case& cc : cases) {
      SCOPED_TRACE(std::string(row.name) + " case " + std::to_string(seed));
      Net net(seed++);
      ValueId x = net.input({row.in, {cc.n, cc.h, cc.w, cc.c}}, lo_of(row.in), hi_of(row.in));
      ValueId w = net.weight({row.w, {cc.kh, cc.kw, cc.c, cc.m}}, lo_of(row.w), hi_of(row.w));
      ValueId bias = net.weight({row.out, {cc.c * cc.m}}, is_float(row.out) ? -1 : -1000, is_float(row.out) ? 1 : 1000);
      ValueId y = net.conv(Op::DEPTHWISE_CONV2D, x, w, bias, cc.pad, cc.stride, cc.dil, row.acc, zp_for(row.in, 9),
                           zp_for(row.w, -4));
      check_vs_reference(net.finish({y}), net.feeds, tol_of(row));
    }
  }
}

// Taps outside the input are skipped, not multiplied by 0: with an infinite weight on a border tap
// the padded outputs stay finite, as in the reference (also four outputs per invocation).
TEST(VulkanTensor, DepthwiseSkipsTapsInThePadding) {
  for (int64_t sx : {1, 2}) {
    SCOPED_TRACE("stride " + std::to_string(sx));
    Net net(260);
    ValueId x = net.input({DType::kFp32, {1, 6, 11, 3}});
    std::vector<double> wv(7 * 7 * 3, 0.25);
    wv[0] = std::numeric_limits<double>::infinity();  // tap (0, 0) of channel 0
    ValueId w = net.constant(Tensor::from_doubles({DType::kFp32, {7, 7, 3, 1}}, wv));
    ValueId bias = net.weight({DType::kFp32, {3}});
    ValueId y = net.conv(Op::DEPTHWISE_CONV2D, x, w, bias, {3, 3, 3, 3}, {1, sx}, {1, 1}, DType::kFp32);
    check_vs_reference(net.finish({y}), net.feeds, kF32);
  }
}

TEST(VulkanTensor, TransposeConv2dEveryRowMatchesReference) {
  ScopedEnv no_coop("WEFT_VULKAN_NO_COOP", "1");
  struct Case {
    int64_t n, h, w, ic, oc, kh, kw;
    std::vector<int64_t> out_pad, stride;
  };
  const std::vector<Case> cases = {
      {1, 4, 5, 3, 8, 3, 3, {0, 0, 0, 0}, {2, 2}},
      {2, 3, 4, 5, 6, 2, 3, {1, -1, 0, 2}, {1, 3}},  // negative and positive out_pad
      {1, 5, 3, 4, 2, 3, 2, {-1, 0, 1, 0}, {2, 1}},  // OC 2: direct kernel
  };
  uint32_t seed = 300;
  for (const ConvRow& row : kConvRows) {
    for (const Case& cc : cases) {
      SCOPED_TRACE(std::string(row.name) + " case " + std::to_string(seed));
      Net net(seed++);
      ValueId x = net.input({row.in, {cc.n, cc.h, cc.w, cc.ic}}, lo_of(row.in), hi_of(row.in));
      ValueId w = net.weight({row.w, {cc.oc, cc.kh, cc.kw, cc.ic}}, lo_of(row.w), hi_of(row.w));
      ValueId bias = net.weight({row.out, {cc.oc}}, is_float(row.out) ? -1 : -1000, is_float(row.out) ? 1 : 1000);
      ValueId y = net.transpose_conv(x, w, bias, cc.out_pad, cc.stride, row.acc, zp_for(row.in, -3), zp_for(row.w, 6));
      check_vs_reference(net.finish({y}), net.feeds, tol_of(row));
    }
  }
}

TEST(VulkanTensor, MatmulEveryRowMatchesReference) {
  ScopedEnv no_coop("WEFT_VULKAN_NO_COOP", "1");
  struct Row {
    DType in, out;
    const char* name;
  };
  const Row rows[] = {{DType::kFp32, DType::kFp32, "fp32"},
                      {DType::kFp16, DType::kFp32, "fp16 -> fp32"},
                      {DType::kFp16, DType::kFp16, "fp16 -> fp16 (fp16 accumulate)"},
                      {DType::kInt8, DType::kInt32, "int8"},
                      {DType::kInt16, DType::kInt48, "int16"}};
  // The last shape (few outputs, a long reduction) is split over K on float rows.
  const std::vector<std::array<int64_t, 4>> shapes = {
      {1, 1, 7, 5}, {2, 33, 17, 45}, {3, 5, 64, 1}, {1, 70, 3, 66}, {1, 8, 600, 40}};
  uint32_t seed = 400;
  for (const Row& r : rows) {
    for (const auto& s : shapes) {
      for (bool const_b : {false, true}) {
        SCOPED_TRACE(std::string(r.name) + " [" + std::to_string(s[0]) + "," + std::to_string(s[1]) + "," +
                     std::to_string(s[2]) + "]x[.," + std::to_string(s[3]) + "] B " + (const_b ? "constant" : "input"));
        Net net(seed++);
        const double lo = is_float(r.in) ? -1 : r.in == DType::kInt16 ? -30000 : -128;
        const double hi = -lo - (is_float(r.in) ? 0 : 1);
        ValueId a = net.input({r.in, {s[0], s[1], s[2]}}, lo, hi);
        ValueId b =
            const_b ? net.weight({r.in, {s[0], s[2], s[3]}}, lo, hi) : net.input({r.in, {s[0], s[2], s[3]}}, lo, hi);
        ValueId y = net.matmul(a, b, r.out, zp_for(r.in, 17), zp_for(r.in, -30));
        const double tol = r.out == DType::kFp32 ? kF32 : r.out == DType::kFp16 ? 0.0 : 0.0;
        check_vs_reference(net.finish({y}), net.feeds, tol);
      }
    }
  }
}

TEST(VulkanTensor, PoolsEveryRowMatchesReference) {
  struct Case {
    std::vector<int64_t> k, s, p;
  };
  const std::vector<Case> cases = {
      {{3, 3}, {2, 2}, {1, 1, 1, 1}}, {{2, 3}, {1, 2}, {0, 1, 2, 0}}, {{1, 1}, {1, 1}, {0, 0, 0, 0}}};
  uint32_t seed = 500;
  for (DType t : {DType::kFp32, DType::kFp16, DType::kInt8, DType::kInt16}) {
    for (const Case& cc : cases) {
      const Shape s{2, 7, 9, 5};
      // Output sizes must divide exactly: (H + pads - k) % stride == 0.
      const int64_t oh_span = s[1] + cc.p[0] + cc.p[1] - cc.k[0], ow_span = s[2] + cc.p[2] + cc.p[3] - cc.k[1];
      if (oh_span % cc.s[0] != 0 || ow_span % cc.s[1] != 0) continue;
      SCOPED_TRACE(std::string(dtype_name(t)) + " case " + std::to_string(seed));
      {
        Net net(seed++);
        ValueId x = net.input({t, s}, lo_of(t), hi_of(t));
        check_vs_reference(net.finish({net.pool(Op::MAX_POOL2D, x, cc.k, cc.s, cc.p)}), net.feeds, 0);
      }
      std::vector<DType> accs = {DType::kInt32};
      if (t == DType::kFp32) accs = {DType::kFp32};
      if (t == DType::kFp16) accs = {DType::kFp16, DType::kFp32};
      for (DType acc : accs) {
        Net net(seed++);
        ValueId x = net.input({t, s}, lo_of(t), hi_of(t));
        ValueId y = net.pool(Op::AVG_POOL2D, x, cc.k, cc.s, cc.p, acc, zp_for(t, -5), zp_for(t, 11));
        check_vs_reference(net.finish({y}), net.feeds, t == DType::kFp32 ? kF32 : 0.0);
      }
    }
  }
}

TEST(VulkanTensor, MaxPoolNanModes) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> v(2 * 4 * 4 * 3);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 7) % 11) - 5.0;
  v[0] = nan;
  v[5] = nan;
  v[13] = nan;
  v[40] = -0.0;
  for (size_t i = 48; i < 60; ++i) v[i] = nan;  // whole windows of NaN
  for (NanMode mode : {NanMode::kPropagate, NanMode::kIgnore}) {
    for (DType t : {DType::kFp32, DType::kFp16}) {
      Net net(600);
      ValueId x = net.input_tensor(Tensor::from_doubles({t, {2, 4, 4, 3}}, v));
      ValueId y = net.pool(Op::MAX_POOL2D, x, {2, 2}, {2, 2}, {0, 0, 0, 0}, DType::kFp32, 0, 0, mode);
      check_vs_reference(net.finish({y}), net.feeds, 0);
    }
  }
}

// ---- Fused composites -------------------------------------------------------------------------

TEST(VulkanTensor, PadConvResidualClamp) {
  for (const ConvRow& row : {kConvRows[0], kConvRows[1]}) {
    for (bool tiled : {true, false}) {
      SCOPED_TRACE(std::string(row.name) + (tiled ? " tiled" : " direct"));
      Net net(700);
      const int64_t oc = tiled ? 8 : 3;
      ValueId x = net.input({row.in, {2, 6, 5, 4}});
      ValueId p = net.pad_hw(x, {1, 2, 2, 0}, 0.25);  // a non-zero fill: real taps
      ValueId w = net.weight({row.w, {oc, 3, 3, 4}});
      ValueId bias = net.weight({row.out, {oc}});
      ValueId y = net.conv(Op::CONV2D, p, w, bias, {1, 0, 0, 1}, {1, 1}, {1, 1}, row.acc);
      ValueId r = net.input(net.type(y));
      ValueId z = net.clamp(net.add(y, r), -0.5, 0.75);
      const std::string ex = check_vs_reference(net.finish({z}), net.feeds, tol_of(row, true));
      expect_pattern(ex, "PAD+CONV2D+ADD+CLAMP");
    }
  }
}

// GELU only in fp32: the partitioner matches its constants within 1e-6, which fp16 cannot hold.
TEST(VulkanTensor, ConvActivations) {
  for (const char* act : {"SIGMOID", "TANH", "SWISH", "GELU"}) {
    for (const ConvRow& row : {kConvRows[0], kConvRows[1]}) {
      const std::string a = act;
      if (a == "GELU" && row.out != DType::kFp32) continue;
      SCOPED_TRACE(a + " " + row.name);
      Net net(710);
      ValueId x = net.input({row.in, {1, 5, 6, 7}});
      ValueId w = net.weight({row.w, {10, 3, 3, 7}});
      ValueId bias = net.weight({row.out, {10}});
      ValueId y = net.conv(Op::CONV2D, x, w, bias, {1, 1, 1, 1}, {1, 1}, {1, 1}, row.acc);
      ValueId z = a == "SIGMOID" ? net.unary(Op::SIGMOID, y)
                  : a == "TANH"  ? net.unary(Op::TANH, y)
                  : a == "SWISH" ? net.swish(y)
                                 : net.gelu_erf(y);
      const std::string ex = check_vs_reference(net.finish({z}), net.feeds, tol_of(row, true));
      expect_pattern(ex, "CONV2D+" + a);
    }
  }
}

// MATMUL with a bias, a residual and an activation, in each float tile size.
TEST(VulkanTensor, MatmulBiasActivations) {
  ScopedEnv no_coop("WEFT_VULKAN_NO_COOP", "1");
  for (DType t : {DType::kFp32, DType::kFp16}) {
    for (const char* tile : {"32", "64", "128"}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " tile " + tile);
      ScopedEnv force("WEFT_VULKAN_GEMM_TILE", tile);
      Net net(720);
      ValueId a = net.input({t, {1, 37, 24}});
      ValueId b = net.weight({t, {1, 24, 70}});
      ValueId bias = net.weight({t, {1, 1, 70}});
      ValueId y = net.add(net.matmul(a, b, t), bias);
      std::string pattern = "MATMUL+BIAS+GELU";
      if (t == DType::kFp32) {
        y = net.gelu_erf(y);
      } else {
        y = net.unary(Op::TANH, net.add(y, net.input(net.type(y))));
        pattern = "MATMUL+BIAS+ADD+TANH";
      }
      const std::string ex = check_vs_reference(net.finish({y}), net.feeds, t == DType::kFp32 ? kF32 : kF16Fused);
      expect_pattern(ex, pattern);
    }
  }
}

// Element-wise chains by a per-channel constant run as one pass: DenseNet's pre-activation BN + ReLU
// (MUL + BIAS + CLAMP), a layer scale with its residual (ConvNeXt: MUL + ADD), SUB + SIGMOID (the
// partitioner groups fp32 chains); a chain whose constant is not per channel runs operator by operator.
TEST(VulkanTensor, ElementwiseChainsRunAsOnePass) {
  {
    const DType t = DType::kFp32;
    const double tol = kF32;
    {
      Net net(760);
      ValueId x = net.input({t, {1, 7, 6, 40}}, -3, 3);
      ValueId y = net.clamp(net.add(net.mul(x, net.weight({t, {1, 1, 1, 40}})), net.weight({t, {1, 1, 1, 40}})), 0.0, 1e30);
      expect_pattern(check_vs_reference(net.finish({y}), net.feeds, tol), "MUL+BIAS+CLAMP");
    }
    {
      Net net(761);
      ValueId x = net.input({t, {2, 5, 24}});
      ValueId y = net.add(net.mul(x, net.weight({t, {1, 1, 24}})), net.input({t, {2, 5, 24}}));
      expect_pattern(check_vs_reference(net.finish({y}), net.feeds, tol), "MUL+ADD");
    }
    {
      Net net(762);
      ValueId x = net.input({t, {3, 17}}, -4, 4);
      ValueId y = net.unary(Op::SIGMOID, net.b.op(Op::SUB, {x, net.weight({t, {1, 17}})}));
      expect_pattern(check_vs_reference(net.finish({y}), net.feeds, tol), "SUB+SIGMOID");
    }
  }
  {  // the constant is per row, not per channel: MUL and CLAMP each on their own
    Net net(763);
    ValueId x = net.input({DType::kFp32, {4, 6}});
    ValueId y = net.clamp(net.mul(x, net.weight({DType::kFp32, {4, 1}})), -0.5, 0.5);
    const std::string ex = check_vs_reference(net.finish({y}), net.feeds, kF32);
    EXPECT_EQ(ex.find("MUL+CLAMP"), std::string::npos) << ex;
  }
}

// Hard-swish (x * clamp(x / 6 + 1/2, 0, 1), as the ONNX frontend lowers HardSwish) after a
// convolution and GELU's tanh form written out (both orders of the outer product) after a matmul
// run in the GEMM's epilogue, with the graph's constants.
TEST(VulkanTensor, HardSwishAndGeluTanhEpilogues) {
  ScopedEnv no_coop("WEFT_VULKAN_NO_COOP", "1");
  const DType t = DType::kFp32;
  {
    Net net(727);
    ValueId x = net.input({t, {1, 9, 9, 8}}, -4, 4);
    ValueId c = net.conv(Op::CONV2D, x, net.weight({t, {12, 3, 3, 8}}, -0.5, 0.5), net.weight({t, {12}}), {1, 1, 1, 1},
                         {1, 1}, {1, 1}, t);
    ValueId a = net.clamp(net.add(net.mul(c, net.scalar(t, 1.0 / 6.0, 4)), net.scalar(t, 0.5, 4)), 0.0, 1.0);
    const std::string ex = check_vs_reference(net.finish({net.mul(c, a)}), net.feeds, kF32);
    expect_pattern(ex, "CONV2D+HARDSWISH");
  }
  for (bool half_first : {true, false}) {
    SCOPED_TRACE(half_first ? "MUL(MUL(x, 0.5), .)" : "MUL(MUL(x, .), 0.5)");
    Net net(728 + static_cast<uint32_t>(half_first));
    ValueId a = net.input({t, {1, 37, 24}}, -2, 2);
    ValueId h = net.add(net.matmul(a, net.weight({t, {1, 24, 40}}, -0.5, 0.5), t), net.weight({t, {1, 1, 40}}));
    ValueId cube = net.mul(net.mul(h, h), h);
    ValueId inner = net.mul(net.add(h, net.mul(cube, net.scalar(t, 0.044715, 3))), net.scalar(t, 0.7978845608028654, 3));
    ValueId one_plus = net.add(net.unary(Op::TANH, inner), net.scalar(t, 1.0, 3));
    ValueId y = half_first ? net.mul(net.mul(h, net.scalar(t, 0.5, 3)), one_plus)
                           : net.mul(net.mul(h, one_plus), net.scalar(t, 0.5, 3));
    const std::string ex = check_vs_reference(net.finish({y}), net.feeds, kF32);
    expect_pattern(ex, "MATMUL+BIAS+GELU_TANH");
  }
}

// A product with a one-element constant after a matmul (attention's 1 / sqrt(d) after Q K^T, behind
// the importer's RESHAPE at batch > 1) and after a convolution, and a sum with one (hard-sigmoid's
// + 0.5): post-ops of the GEMM, one fp32 product / sum as the MUL / ADD computes it.
TEST(VulkanTensor, ScaleEpilogue) {
  ScopedEnv no_coop("WEFT_VULKAN_NO_COOP", "1");
  const DType t = DType::kFp32;
  {
    Net net(731);
    ValueId q = net.input({t, {8, 16, 12}}), k = net.input({t, {8, 12, 16}});
    ValueId s = net.reshape(net.matmul(q, k, t), {2, 4, 16, 16});
    const std::string ex = check_vs_reference(net.finish({net.mul(s, net.scalar(t, 0.28867513, 4))}), net.feeds, kF32);
    expect_pattern(ex, "MATMUL+RESHAPE+SCALE");
  }
  {
    Net net(732);
    ValueId x = net.input({t, {1, 7, 7, 8}}, -2, 2);
    ValueId c = net.conv(Op::CONV2D, x, net.weight({t, {12, 1, 1, 8}}, -0.5, 0.5), net.weight({t, {12}}), {0, 0, 0, 0},
                         {1, 1}, {1, 1}, t);
    const std::string ex = check_vs_reference(net.finish({net.clamp(net.mul(c, net.scalar(t, -1.5, 4)), 0.0, 6.0)}), net.feeds, kF32);
    expect_pattern(ex, "CONV2D+SCALE+CLAMP");
  }
  {  // hard-sigmoid as the ONNX importer lowers it: MUL 1/6, ADD 0.5 (a one-element constant: SHIFT), CLAMP
    Net net(733);
    ValueId x = net.input({t, {1, 5, 6, 8}}, -2, 2);
    ValueId c = net.conv(Op::CONV2D, x, net.weight({t, {12, 1, 1, 8}}, -0.5, 0.5), net.weight({t, {12}}), {0, 0, 0, 0},
                         {1, 1}, {1, 1}, t);
    ValueId hs = net.clamp(net.add(net.mul(c, net.scalar(t, 1.0 / 6.0, 4)), net.scalar(t, 0.5, 4)), 0.0, 1.0);
    const std::string ex = check_vs_reference(net.finish({hs}), net.feeds, kF32);
    expect_pattern(ex, "CONV2D+SCALE+SHIFT+CLAMP");
  }
}

// A product with, or a sum of, a constant holding one value per output channel ([1,..,1,C]:
// ConvNeXt's layer scale, a batch norm left behind a convolution): the constants travel behind the
// bias in the bias binding. MATMUL behind the importer's RESHAPE with bias and residual (fp32 and
// fp16), MATMUL without a bias and split over K, a 3x3 convolution with a one-element bias, a
// depthwise one (the direct kernel), and a grouped one.
TEST(VulkanTensor, PerChannelScaleAndShiftEpilogue) {
  ScopedEnv no_coop("WEFT_VULKAN_NO_COOP", "1");
  for (DType t : {DType::kFp32, DType::kFp16}) {
    SCOPED_TRACE(std::string("ConvNeXt block end, ") + std::string(dtype_name(t)));
    Net net(734);
    ValueId x = net.input({t, {1, 6, 5, 24}}, -2, 2);
    ValueId m = net.matmul(net.reshape(x, {1, 30, 24}), net.weight({t, {1, 24, 40}}, -0.3, 0.3), t);
    ValueId h = net.add(net.reshape(m, {1, 6, 5, 40}), net.weight({t, {1, 1, 1, 40}}));
    ValueId y = net.add(net.mul(h, net.weight({t, {1, 1, 1, 40}}, 1e-3, 1.0)), net.input({t, {1, 6, 5, 40}}));
    const std::string ex = check_vs_reference(net.finish({y}), net.feeds, t == DType::kFp32 ? kF32 : kF16Fused);
    expect_pattern(ex, "MATMUL+RESHAPE+BIAS+SCALE+ADD");
  }
  for (const char* split : {"1", "4"}) {
    SCOPED_TRACE(std::string("MATMUL+SCALE+SHIFT, split ") + split);
    ScopedEnv force_split("WEFT_VULKAN_GEMM_SPLIT", split);
    const DType t = DType::kFp32;
    Net net(735);
    ValueId a = net.input({t, {2, 9, 512}}, -1, 1);
    ValueId mm = net.matmul(a, net.weight({t, {2, 512, 33}}, -0.1, 0.1), t);
    ValueId y = net.add(net.mul(mm, net.weight({t, {1, 1, 33}}, 0.5, 2.0)), net.weight({t, {1, 1, 33}}));
    const std::string ex = check_vs_reference(net.finish({y}), net.feeds, kF32);
    expect_pattern(ex, "MATMUL+SCALE+SHIFT");
  }
  for (int depthwise = 0; depthwise < 2; ++depthwise) {
    SCOPED_TRACE(depthwise ? "DEPTHWISE_CONV2D" : "CONV2D, one-element bias");
    const DType t = DType::kFp32;
    Net net(736 + static_cast<uint32_t>(depthwise));
    ValueId x = net.input({t, {1, 9, 9, 8}}, -2, 2);
    const int64_t oc = depthwise ? 8 : 12;
    ValueId c = depthwise ? net.conv(Op::DEPTHWISE_CONV2D, x, net.weight({t, {3, 3, 8, 1}}), net.weight({t, {8}}),
                                     {1, 1, 1, 1}, {1, 1}, {1, 1}, t)
                          : net.conv(Op::CONV2D, x, net.weight({t, {12, 3, 3, 8}}, -0.5, 0.5), net.weight({t, {1}}),
                                     {1, 1, 1, 1}, {1, 1}, {1, 1}, t);
    ValueId y = net.clamp(net.add(net.mul(c, net.weight({t, {1, 1, 1, oc}}, 0.5, 2.0)), net.weight({t, {1, 1, 1, oc}})),
                          -1.0, 1.0);
    const std::string ex = check_vs_reference(net.finish({y}), net.feeds, kF32);
    expect_pattern(ex, depthwise ? "DEPTHWISE_CONV2D+SCALE+SHIFT+CLAMP" : "CONV2D+SCALE+SHIFT+CLAMP");
  }
}

// Squeeze-and-excitation's x * s (s per image and channel, [N,1,1,C], either operand order) in
// front of a 1x1 convolution is applied as the GEMM loads A: one dispatch instead of a MUL pass.
// fp32 with vector staging (IC % 4 == 0) and scalar (IC = 6), fp16, each tile, split over K, a
// batch of images with their own factors; the product is rounded as the MUL's.
TEST(VulkanTensor, ScaledInputOfAOneByOneConvolution) {
  ScopedEnv no_coop("WEFT_VULKAN_NO_COOP", "1");
  struct Case {
    DType t;
    int64_t n, hw, ic, oc;
    const char* tile;
    const char* split;
    bool factor_first, residual;
  };
  const std::vector<Case> cases = {
      {DType::kFp32, 2, 7, 16, 24, "64", "1", true, true},   {DType::kFp32, 1, 9, 6, 12, "32", "1", false, false},
      {DType::kFp32, 2, 5, 40, 36, "128", "1", true, false}, {DType::kFp32, 1, 3, 600, 8, "32", "3", true, true},
      {DType::kFp16, 2, 6, 16, 20, "64", "1", true, false},
  };
  uint32_t seed = 760;
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(dtype_name(c.t)) + " N" + std::to_string(c.n) + " IC" + std::to_string(c.ic) + " tile " +
                 c.tile + " split " + c.split);
    ScopedEnv tile("WEFT_VULKAN_GEMM_TILE", c.tile);
    ScopedEnv split("WEFT_VULKAN_GEMM_SPLIT", c.split);
    Net net(seed++);
    ValueId x = net.input({c.t, {c.n, c.hw, c.hw, c.ic}}, -2, 2);
    ValueId f = net.input({c.t, {c.n, 1, 1, c.ic}}, 0, 1);
    ValueId scaled = c.factor_first ? net.mul(f, x) : net.mul(x, f);
    ValueId y = net.conv(Op::CONV2D, scaled, net.weight({c.t, {c.oc, 1, 1, c.ic}}, -0.5, 0.5), net.weight({c.t, {c.oc}}),
                         {0, 0, 0, 0}, {1, 1}, {1, 1}, DType::kFp32);
    if (c.residual) y = net.add(y, net.input(net.type(y)));
    const std::string ex = check_vs_reference(net.finish({y}), net.feeds, c.t == DType::kFp32 ? kF32 : kF16Fused);
    expect_pattern(ex, c.residual ? "MUL+CONV2D+ADD" : "MUL+CONV2D");
  }
}

// Bias, GELU and a residual add behind the RESHAPE the ONNX importer puts after a 3-D MatMul (BERT
// at batch 32, ConvNeXt's pointwise layers): one dispatch, the epilogue at the matmul's flat index.
TEST(VulkanTensor, MatmulPostOpsBehindTheReshape) {
  ScopedEnv no_coop("WEFT_VULKAN_NO_COOP", "1");
  for (int residual = 0; residual < 2; ++residual) {
    SCOPED_TRACE(residual ? "bias + residual" : "bias + GELU");
    Net net(725 + static_cast<uint32_t>(residual));
    const DType t = DType::kFp32;
    ValueId x = net.input({t, {2, 6, 5, 24}});
    ValueId m = net.matmul(net.reshape(x, {1, 60, 24}), net.weight({t, {1, 24, 40}}, -0.3, 0.3), t);
    ValueId h = net.add(net.weight({t, {1, 1, 1, 40}}), net.reshape(m, {2, 6, 5, 40}));
    ValueId y = residual ? net.add(h, net.input({t, {2, 6, 5, 40}})) : net.gelu_erf(h);
    const std::string ex = check_vs_reference(net.finish({y}), net.feeds, kF32);
    expect_pattern(ex, residual ? "MATMUL+RESHAPE+BIAS+ADD" : "MATMUL+RESHAPE+BIAS+GELU");
  }
}

// torch 2.x's ViT: bias on the out-projection's [1, S, E] result, then a RESHAPE to the residual
// stream's [S, 1, E] and the residual add: one dispatch (the RESHAPE between post-ops).
TEST(VulkanTensor, ResidualAddBehindAReshapeAfterTheBias) {
  ScopedEnv no_coop("WEFT_VULKAN_NO_COOP", "1");
  Net net(727);
  const DType t = DType::kFp32;
  ValueId x = net.input({t, {1, 9, 16}});
  ValueId h = net.add(net.matmul(x, net.weight({t, {1, 16, 24}}, -0.3, 0.3), t), net.weight({t, {1, 1, 24}}));
  ValueId y = net.add(net.input({t, {9, 1, 24}}), net.reshape(h, {9, 1, 24}));
  const std::string ex = check_vs_reference(net.finish({y}), net.feeds, kF32);
  expect_pattern(ex, "MATMUL+BIAS+RESHAPE+ADD");
}

TEST(VulkanTensor, DepthwiseClampAndSlicedConv) {
  {
    Net net(730);
    ValueId x = net.input({DType::kFp32, {1, 9, 9, 6}});
    ValueId p = net.pad_hw(x, {1, 1, 1, 1}, 0.0);
    ValueId w = net.weight({DType::kFp32, {3, 3, 6, 1}});
    ValueId bias = net.weight({DType::kFp32, {6}});
    ValueId y = net.conv(Op::DEPTHWISE_CONV2D, p, w, bias, {0, 0, 0, 0}, {2, 2}, {1, 1}, DType::kFp32);
    const std::string ex = check_vs_reference(net.finish({net.clamp(y, 0.0, 6.0)}), net.feeds, kF32);
    expect_pattern(ex, "PAD+DEPTHWISE_CONV2D+CLAMP");
  }
  {  // SLICE cropping the end of H and W folds into the window
    Net net(731);
    ValueId x = net.input({DType::kFp32, {1, 8, 9, 4}});
    ValueId s = net.slice(x, {0, 0, 0, 0}, {1, 7, 7, 4});
    ValueId w = net.weight({DType::kFp32, {6, 3, 3, 4}});
    ValueId bias = net.weight({DType::kFp32, {6}});
    ValueId y = net.conv(Op::CONV2D, s, w, bias, {0, 0, 0, 0}, {2, 2}, {1, 1}, DType::kFp32);
    const std::string ex = check_vs_reference(net.finish({y}), net.feeds, kF32);
    expect_pattern(ex, "SLICE+CONV2D");
  }
}

// Global average pooling (a window over the whole image, as squeeze-and-excitation blocks pool) runs
// as a parallel sum divided by the count: fp32 and fp16 data (fp32 accumulation), one image and a
// batch, images of 1 to 3136 pixels, with infinities and NaN carried as the reference carries them;
// fp16 accumulation and padded windows keep the direct kernel.
TEST(VulkanTensor, GlobalAveragePoolMatchesReference) {
  struct Case {
    DType t, acc;
    Shape shape;
    std::vector<int64_t> pad;
  };
  const std::vector<Case> cases = {
      {DType::kFp32, DType::kFp32, {1, 56, 56, 48}, {0, 0, 0, 0}}, {DType::kFp32, DType::kFp32, {3, 7, 7, 33}, {0, 0, 0, 0}},
      {DType::kFp32, DType::kFp32, {2, 1, 1, 5}, {0, 0, 0, 0}},    {DType::kFp16, DType::kFp32, {1, 14, 14, 40}, {0, 0, 0, 0}},
      {DType::kFp16, DType::kFp16, {1, 9, 9, 8}, {0, 0, 0, 0}},    {DType::kFp32, DType::kFp32, {1, 6, 6, 8}, {1, 1, 1, 1}},
  };
  uint32_t seed = 745;
  for (const Case& c : cases)
    for (bool specials : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(c.t)) + " acc " + dtype_name(c.acc) + " " + shape_str(c.shape) +
                   (specials ? " with inf / NaN" : ""));
      Net net(seed++);
      ValueId x = net.input({c.t, c.shape});
      if (specials) {
        Tensor& f = net.feeds.back();
        f = f.clone();
        const int64_t n = f.num_elements();
        auto put = [&](int64_t i, double v) {
          if (c.t == DType::kFp32) f.mutable_data<float>()[i] = static_cast<float>(v);
          else f.mutable_data<uint16_t>()[i] = v > 0 ? 0x7C00 : v < 0 ? 0xFC00 : 0x7E00;
        };
        put(0, std::numeric_limits<double>::infinity());
        put(n / 2, std::numeric_limits<double>::quiet_NaN());
        put(n - 1, -std::numeric_limits<double>::infinity());
      }
      const int64_t kh = c.shape[1] + c.pad[0] + c.pad[1], kw = c.shape[2] + c.pad[2] + c.pad[3];
      ValueId y = net.pool(Op::AVG_POOL2D, x, {kh, kw}, {1, 1}, c.pad, c.acc);
      check_vs_reference(net.finish({y}), net.feeds, c.t == DType::kFp32 ? kF32 : kF16);
    }
}

TEST(VulkanTensor, PadPoolsCountThePadding) {
  for (Op op : {Op::AVG_POOL2D, Op::MAX_POOL2D}) {
    for (DType t : {DType::kFp32, DType::kInt8}) {
      SCOPED_TRACE(std::string(op_name(op)) + " " + dtype_name(t));
      Net net(740);
      ValueId x = net.input({t, {1, 6, 7, 3}}, lo_of(t), hi_of(t));
      ValueId p = net.pad_hw(x, {1, 0, 2, 0}, t == DType::kInt8 ? -3 : 0.5);
      ValueId y = net.pool(op, p, {3, 3}, {2, 2}, {0, 0, 0, 0}, t == DType::kInt8 ? DType::kInt32 : DType::kFp32,
                           zp_for(t, 2), zp_for(t, -1));
      const std::string ex = check_vs_reference(net.finish({y}), net.feeds, t == DType::kFp32 ? kF32 : 0.0);
      expect_pattern(ex, std::string("PAD+") + op_name(op));
    }
  }
}

TEST(VulkanTensor, IntegerCompositesAndDeclines) {
  {  // int8 PAD + CONV2D folds (the PAD's value is a real input value, not the zero point)
    Net net(750);
    ValueId x = net.input({DType::kInt8, {1, 5, 5, 3}}, -128, 127);
    ValueId p = net.pad_hw(x, {1, 1, 1, 1}, 7);
    ValueId w = net.weight({DType::kInt8, {5, 3, 3, 3}}, -128, 127);
    ValueId bias = net.weight({DType::kInt32, {5}}, -500, 500);
    ValueId y = net.conv(Op::CONV2D, p, w, bias, {0, 0, 0, 0}, {1, 1}, {1, 1}, DType::kInt32, 3, 1);
    const std::string ex = check_vs_reference(net.finish({y}), net.feeds, 0);
    expect_pattern(ex, "PAD+CONV2D");
  }
  {  // a non-constant zero point is declined: the node runs on the reference backend
    Net net(751);
    ValueId a = net.input({DType::kInt8, {1, 4, 6}}, -128, 127);
    ValueId b = net.input({DType::kInt8, {1, 6, 5}}, -128, 127);
    ValueId zp = net.input({DType::kInt8, {1}}, -5, 5);
    ValueId y = net.b.op_multi(Op::MATMUL, {a, b, zp, net.scalar(DType::kInt8, 0)}, {}, {"y"},
                               {TensorType{DType::kInt32, {1, 4, 5}}})[0];
    const std::string ex = check_vs_reference(net.finish({y}), net.feeds, 0, 0);
    EXPECT_NE(ex.find("A_zp is not a constant"), std::string::npos) << ex;
  }
}

// The shapes of the cooperative-matrix kernel (fp16 MATMUL and the tiled fp16 convolutions, where
// Caps::coop_matrix_f16; elsewhere the tiled kernel runs them): edges that are not multiples of 16
// or 64, batches, an epilogue, a K split. Tolerances allow for its fp32 accumulation of fp16
// products against the reference's fp16 accumulation (fp16 -> fp16 MATMUL, short reductions).
TEST(VulkanTensor, CooperativeMatrixShapes) {
  for (const auto& s : std::vector<std::array<int64_t, 4>>{{2, 70, 40, 33}, {1, 16, 16, 16}, {3, 5, 24, 130}}) {
    for (DType out : {DType::kFp32, DType::kFp16}) {
      SCOPED_TRACE("MATMUL " + std::to_string(s[1]) + "x" + std::to_string(s[2]) + "x" + std::to_string(s[3]) + " -> " +
                   dtype_name(out));
      Net net(800);
      ValueId a = net.input({DType::kFp16, {s[0], s[1], s[2]}});
      ValueId b = net.input({DType::kFp16, {s[0], s[2], s[3]}});
      check_vs_reference(net.finish({net.matmul(a, b, out)}), net.feeds, out == DType::kFp32 ? kF32 : kF16Fused);
    }
  }
  {  // few outputs, a long reduction: split over K
    Net net(801);
    ValueId a = net.input({DType::kFp16, {1, 16, 1024}});
    ValueId b = net.weight({DType::kFp16, {1, 1024, 64}});
    check_vs_reference(net.finish({net.matmul(a, b, DType::kFp32)}), net.feeds, kF32);
  }
  {  // 3x3 convolution with padding, bias, residual and CLAMP
    Net net(802);
    ValueId x = net.input({DType::kFp16, {2, 9, 7, 12}});
    ValueId w = net.weight({DType::kFp16, {40, 3, 3, 12}});
    ValueId bias = net.weight({DType::kFp16, {40}});
    ValueId y = net.conv(Op::CONV2D, x, w, bias, {1, 1, 1, 1}, {1, 1}, {1, 1}, DType::kFp32);
    ValueId z = net.clamp(net.add(y, net.input(net.type(y))), -1.0, 1.5);
    const std::string ex = check_vs_reference(net.finish({z}), net.feeds, kF16Fused);
    expect_pattern(ex, "CONV2D+ADD+CLAMP");
  }
}

// The vector-staged cooperative-matrix kernels (tc_gemm256_coop, tc_gemm128_coop, tc_gemm64_coop: K, N, IC and OC
// multiples of 8) at their edges, with each tile forced in turn (WEFT_VULKAN_COOP; on a device
// without cooperative matrices every variant runs the SIMT tiles, and the widened fp16 weights):
// ragged M, batches, B read through a transpose, a strided padded convolution, a 1x1 convolution
// read in place, a K split.
TEST(VulkanTensor, VectorCooperativeMatrixShapes) {
  for (const char* tile : {"256", "128", "64", "0"}) {
    ScopedEnv force("WEFT_VULKAN_COOP", tile);
    SCOPED_TRACE(std::string("WEFT_VULKAN_COOP=") + tile);
    for (const auto& s : std::vector<std::array<int64_t, 4>>{{3, 130, 48, 24}, {1, 257, 72, 136}, {1, 16, 1024, 64}}) {
      for (DType out : {DType::kFp32, DType::kFp16}) {
        // (fp16 results only for short reductions: the reference's fp16 accumulator drifts over 1024)
        if (out == DType::kFp16 && s[2] > 128) continue;
        SCOPED_TRACE("MATMUL " + std::to_string(s[0]) + "x" + std::to_string(s[1]) + "x" + std::to_string(s[2]) +
                     "x" + std::to_string(s[3]) + " -> " + dtype_name(out));
        Net net(820);
        ValueId a = net.input({DType::kFp16, {s[0], s[1], s[2]}});
        ValueId b = net.weight({DType::kFp16, {s[0], s[2], s[3]}});
        check_vs_reference(net.finish({net.matmul(a, b, out)}), net.feeds, out == DType::kFp32 ? kF32 : kF16Fused);
      }
    }
    // B as a transposed view of a [batch, N, K] input (attention's K^T): vectors along k, staged
    // as [n][k] (B_NK), N not a multiple of 8.
    for (const auto& s : std::vector<std::array<int64_t, 4>>{{2, 40, 64, 20}, {3, 130, 136, 72}}) {
      SCOPED_TRACE("MATMUL by a transposed B " + std::to_string(s[0]) + "x" + std::to_string(s[1]) + "x" +
                   std::to_string(s[2]) + "x" + std::to_string(s[3]));
      Net net(823);
      ValueId a = net.input({DType::kFp16, {s[0], s[1], s[2]}});
      ValueId bt = net.input({DType::kFp16, {s[0], s[3], s[2]}});
      ValueId b = net.b.op(Op::TRANSPOSE, {bt}, {{"perms", std::vector<int64_t>{0, 2, 1}}});
      ValueId y = net.matmul(a, b, DType::kFp32);
      expect_pattern(check_vs_reference(net.finish({y}), net.feeds, kF32), "TRANSPOSE+MATMUL");
    }
    {  // 3x3, stride 2, padding, bias, CLAMP; fp32 accumulator, fp16 result
      Net net(821);
      ValueId x = net.input({DType::kFp16, {2, 13, 11, 16}});
      ValueId w = net.weight({DType::kFp16, {24, 3, 3, 16}});
      ValueId bias = net.weight({DType::kFp16, {24}});
      ValueId y = net.clamp(net.conv(Op::CONV2D, x, w, bias, {1, 1, 1, 1}, {2, 2}, {1, 1}, DType::kFp32), 0.0, 6.0);
      expect_pattern(check_vs_reference(net.finish({y}), net.feeds, kF16Fused), "CONV2D+CLAMP");
    }
    {  // 1x1 convolution read as A [pixels][IC], residual
      Net net(822);
      ValueId x = net.input({DType::kFp16, {1, 9, 10, 32}});
      ValueId w = net.weight({DType::kFp16, {40, 1, 1, 32}});
      ValueId bias = net.weight({DType::kFp16, {40}});
      ValueId y = net.conv(Op::CONV2D, x, w, bias, {0, 0, 0, 0}, {1, 1}, {1, 1}, DType::kFp32);
      ValueId z = net.add(y, net.input(net.type(y)));
      expect_pattern(check_vs_reference(net.finish({z}), net.feeds, kF16Fused), "CONV2D+ADD");
    }
  }
}

// ---- Grouped convolutions (Region::kGroupedConv) ---------------------------------------------------

// A grouped convolution as the ONNX importer writes one (TOSA has no group attribute): `groups`
// SLICEs of x's channels, a CONV2D per group (ocg output channels, k x k), the CONCAT of their
// results along the channels.
ValueId grouped_conv(Net& net, ValueId x, const ConvRow& row, int64_t groups, int64_t ocg, int64_t k,
                     std::vector<int64_t> pad, std::vector<int64_t> stride, int64_t izp = 0) {
  const Shape in = net.type(x).shape;  // a copy: adding constants below may move the graph's values
  const int64_t cg = in[3] / groups;
  std::vector<ValueId> parts;
  for (int64_t g = 0; g < groups; ++g) {
    ValueId sl = net.slice(x, {0, 0, 0, g * cg}, {in[0], in[1], in[2], cg});
    ValueId w = net.weight({row.w, {ocg, k, k, cg}}, lo_of(row.w), hi_of(row.w));
    ValueId bias = net.weight({row.out, {ocg}}, is_float(row.out) ? -1 : -1000, is_float(row.out) ? 1 : 1000);
    parts.push_back(net.conv(Op::CONV2D, sl, w, bias, pad, stride, {1, 1}, row.acc, izp));
  }
  return net.b.op(Op::CONCAT, parts, {{"axis", int64_t{3}}});
}

// Runs `m` on Vulkan and on the reference backend and compares the outputs; the whole graph must be
// one Vulkan unit named `pattern` that records a single dispatch.
void expect_one_dispatch(const Module& m, const std::vector<Tensor>& feeds, double tol, const std::string& pattern) {
  auto a = Model::from_module(m, vulkan_first());
  auto b = Model::from_module(m, reference_only());
  const std::string ex = a->explain();
  const std::vector<KernelPlacement> units = a->placement();
  ASSERT_EQ(units.size(), 1u) << ex;
  EXPECT_EQ(units[0].backend, "vulkan") << ex;
  EXPECT_EQ(units[0].pattern, pattern) << ex;
  Context ca(a), cb(b);
  ca.set_profiling(true);
  auto oa = ca.run(feeds);
  auto ob = cb.run(feeds);
  ASSERT_EQ(oa.size(), ob.size());
  for (size_t i = 0; i < oa.size(); ++i) EXPECT_TRUE(close(oa[i], ob[i], tol)) << "output " << i << "\n" << ex;
  int dispatches = 0;
  for (const KernelProfile& k : ca.profile()) {
    if (!k.device) continue;
    ++dispatches;
    EXPECT_EQ(k.pattern, pattern);
  }
  EXPECT_EQ(dispatches, 1) << ex;
}

// ResNeXt's 32 groups of 4 channels, RegNet's groups of 8, strided, 1x1, 5x5 with odd channel
// counts, batch 2, with and without a fused CLAMP (ReLU, ReLU6), a residual ADD: one dispatch each.
TEST(VulkanTensor, GroupedConv2dRunsAsOneDispatch) {
  struct Case {
    Shape in;
    int64_t groups, ocg, k;
    std::vector<int64_t> pad, stride;
    double clamp_hi;  // 0: no CLAMP
    bool residual;
  };
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<Case> cases = {
      {{1, 14, 14, 128}, 32, 4, 3, {1, 1, 1, 1}, {1, 1}, inf, false},  // ResNeXt-50's first stage, ReLU
      {{1, 14, 14, 128}, 32, 4, 3, {1, 1, 1, 1}, {1, 1}, 0, false},
      {{1, 14, 14, 128}, 32, 4, 3, {1, 0, 1, 0}, {2, 2}, inf, false},  // strided: 7x7
      {{1, 7, 7, 12}, 3, 5, 1, {0, 0, 0, 0}, {1, 1}, 0, false},        // 1x1
      {{1, 7, 7, 12}, 3, 5, 1, {0, 0, 0, 0}, {1, 1}, 6, false},        // 1x1, ReLU6
      {{2, 9, 11, 48}, 6, 8, 3, {1, 1, 1, 1}, {2, 2}, 6, false},       // RegNet's groups of 8, batch 2
      {{2, 6, 5, 16}, 4, 4, 3, {1, 1, 1, 1}, {1, 1}, 0, false},        // batch 2
      {{1, 8, 8, 6}, 2, 3, 5, {2, 1, 2, 1}, {2, 2}, inf, false},       // 5x5, odd channel counts
      {{1, 8, 8, 16}, 4, 4, 3, {1, 1, 1, 1}, {1, 1}, inf, true},       // + residual + ReLU
  };
  uint32_t seed = 900;
  for (const Case& cc : cases) {
    SCOPED_TRACE("case " + std::to_string(seed));
    Net net(seed++);
    ValueId x = net.input({DType::kFp32, cc.in});
    ValueId y = grouped_conv(net, x, kConvRows[0], cc.groups, cc.ocg, cc.k, cc.pad, cc.stride);
    std::string pattern = "GROUPED_CONV2D";
    if (cc.residual) {
      y = net.add(y, net.input(net.type(y)));
      pattern += "+ADD";
    }
    if (cc.clamp_hi != 0) {
      y = net.clamp(y, 0.0, cc.clamp_hi);
      pattern += "+CLAMP";
    }
    expect_one_dispatch(net.finish({y}), net.feeds, kF32, pattern);
  }
  {  // a per-channel scale after it: packed behind the stacked biases
    Net net(seed);
    ValueId x = net.input({DType::kFp32, {1, 8, 8, 16}});
    ValueId y = grouped_conv(net, x, kConvRows[0], 4, 4, 3, {1, 1, 1, 1}, {1, 1});
    y = net.mul(y, net.weight({DType::kFp32, {1, 1, 1, 16}}, 0.5, 2.0));
    expect_one_dispatch(net.finish({y}), net.feeds, kF32, "GROUPED_CONV2D+SCALE");
  }
}

// The type rows of the direct kernel, grouped (zero points 0): fp32, fp16 with fp32 and with fp16
// accumulation, int8 (bit-exact). Not int16 x int8: CONCAT has no int48 row.
TEST(VulkanTensor, GroupedConv2dEveryRow) {
  uint32_t seed = 950;
  for (const ConvRow& row : kConvRows) {
    if (row.out == DType::kInt48) continue;
    SCOPED_TRACE(row.name);
    Net net(seed++);
    ValueId x = net.input({row.in, {2, 6, 7, 16}}, lo_of(row.in), hi_of(row.in));
    ValueId y = grouped_conv(net, x, row, 4, 3, 3, {1, 1, 1, 1}, {1, 1});
    expect_one_dispatch(net.finish({y}), net.feeds, tol_of(row), "GROUPED_CONV2D");
  }
}

// What the Vulkan backend declines as one grouped convolution, with its reason: an int8 input zero
// point other than 0 (each group then runs as its own CONV2D, on Vulkan too). A hard-swish after it
// (once declined) now fuses into its epilogue.
TEST(VulkanTensor, GroupedConv2dDeclinesAndHardSwishFuses) {
  {
    Net net(980);
    ValueId x = net.input({DType::kInt8, {1, 5, 5, 8}}, -128, 127);
    ValueId y = grouped_conv(net, x, kConvRows[3], 2, 4, 3, {1, 1, 1, 1}, {1, 1}, -7);
    const Module m = net.finish({y});
    const std::string ex = check_vs_reference(m, net.feeds, 0);
    EXPECT_EQ(ex.find("GROUPED"), std::string::npos) << ex;
    // The composite as the partitioner offers it.
    const Graph& g = m.main();
    backend::Composite c;
    c.region = backend::Composite::Region::kGroupedConv;
    c.group_concat = g.value(y).producer;
    for (ValueId part : g.node(c.group_concat).inputs) {
      const int conv = g.value(part).producer;
      const int sl = g.value(g.node(conv).inputs[0]).producer;
      c.group_convs.push_back(conv);
      c.region_nodes.push_back(sl);
      c.region_nodes.push_back(conv);
      c.source = g.node(sl).inputs[0];
    }
    c.region_nodes.push_back(c.group_concat);
    c.anchor = c.group_convs[0];
    c.nodes = c.region_nodes;
    std::sort(c.nodes.begin(), c.nodes.end());
    for (int ni : c.nodes)
      for (ValueId v : g.node(ni).inputs) {
        const int p = g.value(v).producer;
        if ((p < 0 || std::find(c.nodes.begin(), c.nodes.end(), p) == c.nodes.end()) &&
            std::find(c.inputs.begin(), c.inputs.end(), v) == c.inputs.end())
          c.inputs.push_back(v);
      }
    c.outputs = {y};
    c.pattern = "GROUPED_CONV2D";
    const backend::Support s = backend::vulkan_backend().supports(m, g, c);
    EXPECT_FALSE(s.ok);
    EXPECT_NE(s.reason.find("zero points of a grouped convolution must be 0"), std::string::npos) << s.reason;
  }
  {
    Net net(981);
    ValueId x = net.input({DType::kFp32, {1, 6, 6, 16}});
    ValueId y = grouped_conv(net, x, kConvRows[0], 4, 4, 3, {1, 1, 1, 1}, {1, 1});
    // x * clamp(x * 1/6 + 1/2, 0, 1), as the ONNX frontend lowers HardSwish
    ValueId h = net.clamp(net.add(net.mul(y, net.scalar(DType::kFp32, 1.0 / 6.0, 4)), net.scalar(DType::kFp32, 0.5, 4)),
                          0.0, 1.0);
    // The hard-swish fuses into the grouped convolution's epilogue.
    const std::string ex = check_vs_reference(net.finish({net.mul(y, h)}), net.feeds, kF32);
    expect_pattern(ex, "1 x GROUPED_CONV2D+HARDSWISH");
  }
}


// The composite of the one node producing `out`, as the partitioner offers a single node.
backend::Composite single_node_composite(const Graph& g, ValueId out) {
  backend::Composite c;
  c.anchor = g.value(out).producer;
  c.nodes = {c.anchor};
  c.pattern = op_name(g.node(c.anchor).op);
  c.inputs = g.node(c.anchor).inputs;
  c.outputs = {out};
  return c;
}

// Capabilities of a device that allows `invocations` per workgroup and `buffers` storage buffers
// per shader stage (the rest at Vulkan's minimums).
vkb::Caps caps_with(const std::string& device, uint32_t invocations, uint32_t buffers) {
  vkb::Caps c;
  c.device = device;
  c.max_invocations = invocations;
  c.max_storage_buffers = buffers;
  return c;
}

// The tiled GEMMs run 256 invocations per workgroup (128 with cooperative matrices), above the 128
// that Vulkan guarantees, and bind 7 storage buffers (SIMT float tiles), above the 4 it guarantees:
// a device allowing fewer gets a declined MATMUL naming the limit, and convolutions fall back to the
// direct kernel (64 invocations, 5 buffers). No device is needed: the checks read the capabilities
// given.
TEST(VulkanTensorCaps, TiledGemmsRespectMaxWorkgroupInvocationsAndStorageBuffers) {
  GraphBuilder b("main");
  ValueId a = b.input("a", {DType::kFp32, {1, 64, 64}});
  ValueId w = b.constant("w", Tensor::zeros({DType::kFp32, {1, 64, 64}}));
  ValueId zp = b.constant("zp", Tensor::zeros({DType::kFp32, {1}}));
  ValueId y = b.op(Op::MATMUL, {a, w, zp, zp});
  ValueId x = b.input("x", {DType::kFp32, {1, 16, 16, 8}});
  ValueId cw = b.constant("cw", Tensor::zeros({DType::kFp32, {16, 3, 3, 8}}));
  ValueId cb = b.constant("cb", Tensor::zeros({DType::kFp32, {16}}));
  ValueId cz = b.constant("cz", Tensor::zeros({DType::kFp32, {1}}));
  ValueId z = b.op(Op::CONV2D, {x, cw, cb, cz, cz},
                   {{"pad", std::vector<int64_t>{1, 1, 1, 1}}, {"stride", std::vector<int64_t>{1, 1}},
                    {"dilation", std::vector<int64_t>{1, 1}}, {"acc_type", static_cast<int64_t>(AccType::kFp32)}});
  b.output(y);
  b.output(z);
  const Graph g = b.finish();
  auto composite = [&](ValueId out) { return single_node_composite(g, out); };
  const vkb::Caps small = caps_with("a device with 128 invocations", 128, 7);
  const vkb::Caps large = caps_with("a device with 128 invocations", 1024, 7);
  const vkb::Caps few = caps_with("a device with 6 storage buffers", 1024, 6);
  const auto& table = vkb::ops_table();
  const std::string declined = table.at(Op::MATMUL).check(g, composite(y), small);
  EXPECT_NE(declined.find("maxComputeWorkGroupInvocations = 128"), std::string::npos) << declined;
  EXPECT_EQ(table.at(Op::MATMUL).check(g, composite(y), large), "");
  EXPECT_EQ(table.at(Op::CONV2D).check(g, composite(z), small), "");  // the direct kernel
  const std::string buffers = table.at(Op::MATMUL).check(g, composite(y), few);
  EXPECT_NE(buffers.find("the tiled GEMM tc_gemm_f"), std::string::npos) << buffers;
  EXPECT_NE(buffers.find("7 storage buffers exceed maxPerStageDescriptorStorageBuffers = 6 of Vulkan device "
                         "'a device with 6 storage buffers'"),
            std::string::npos)
      << buffers;
  EXPECT_EQ(table.at(Op::CONV2D).check(g, composite(z), few), "");  // the direct kernel
}

// Every kernel checked against maxPerStageDescriptorStorageBuffers, on any limit: the lowering is
// tried where the device allows fewer buffers than some shader binds, and the kernel that binds more
// is named. No device is needed.
TEST(VulkanTensorCaps, KernelsBindingMoreStorageBuffersThanTheDeviceAllowsAreDeclined) {
  Net net(983);
  ValueId x = net.input({DType::kFp32, {1, 6, 6, 8}});
  ValueId z = net.conv(Op::CONV2D, x, net.weight({DType::kFp32, {8, 3, 3, 8}}), net.weight({DType::kFp32, {8}}),
                       {1, 1, 1, 1}, {1, 1}, {1, 1}, DType::kFp32);
  ValueId y = net.add(z, x);
  const Module m = net.finish({y});
  const Graph& g = m.main();
  auto single = [&](ValueId out) { return single_node_composite(g, out); };
  EXPECT_GE(vkb::most_shader_buffers(), 7u);  // the SIMT GEMM tiles' 7, at least
  const vkb::Caps four = caps_with("a device with 4 storage buffers", 1024, 4);
  const vkb::Caps five = caps_with("a device with 4 storage buffers", 1024, 5);
  const auto& table = vkb::ops_table();
  // The convolution's check passes (the direct kernel needs no more invocations or tiles)...
  EXPECT_EQ(table.at(Op::CONV2D).check(g, single(z), four), "");
  // ... but its kernel binds input, weights, bias, a per-channel table and the output.
  EXPECT_EQ(vkb::check_storage_buffers(g, single(z), four),
            "kernel tc_conv binds 5 storage buffers, above maxPerStageDescriptorStorageBuffers = 4 of Vulkan device "
            "'a device with 4 storage buffers'");
  EXPECT_EQ(vkb::check_storage_buffers(g, single(z), five), "");
  EXPECT_EQ(vkb::check_storage_buffers(g, single(y), four), "");
  const vkb::Caps large = caps_with("a large device", 1024, vkb::most_shader_buffers());
  EXPECT_EQ(vkb::check_storage_buffers(g, single(z), large), "");
}

// A device that allows few storage buffers, tried on lavapipe with WEFT_VULKAN_MAX_STORAGE_BUFFERS
// (ctest runs this twice, at 4 and at 6; tests/CMakeLists.txt). At 4 the convolutions' kernels (5
// buffers) are declined with the reason in the explanation and run on the CPU; at 6 they run on
// Vulkan, and squeeze-and-excitation's two convolutions, whose fused kernel binds 7, run apart.
// Results match the reference either way.
TEST(VulkanFewStorageBuffers, DeclinedKernelsRunElsewhereAndFusionsFallApart) {
  const char* cap = std::getenv("WEFT_VULKAN_MAX_STORAGE_BUFFERS");
  if (!cap) GTEST_SKIP() << "runs with WEFT_VULKAN_MAX_STORAGE_BUFFERS set (ctest: vulkan_ops_tensor_4_buffers, _6_buffers)";
  const int limit = std::atoi(cap);
  ScopedEnv se("WEFT_VULKAN_SE", "on");
  Net net(984);
  const DType t = DType::kFp32;
  ValueId x = net.input({t, {1, 5, 4, 24}}, -2, 2);
  ValueId pooled = net.pool(Op::AVG_POOL2D, x, {5, 4}, {1, 1}, {0, 0, 0, 0});
  ValueId h = net.conv(Op::CONV2D, pooled, net.weight({t, {6, 1, 1, 24}}, -0.5, 0.5), net.weight({t, {6}}), {0, 0, 0, 0},
                       {1, 1}, {1, 1}, t);
  ValueId a = net.mul(h, net.b.op(Op::SIGMOID, {h}));
  ValueId gate = net.b.op(Op::SIGMOID, {net.conv(Op::CONV2D, a, net.weight({t, {24, 1, 1, 6}}, -0.5, 0.5),
                                                 net.weight({t, {24}}), {0, 0, 0, 0}, {1, 1}, {1, 1}, t)});
  const Module m = net.finish({net.mul(x, gate)});
  const std::string ex = check_vs_reference(m, net.feeds, kF32, /*vulkan_min=*/1);
  const std::string reason = "kernel tc_conv binds 5 storage buffers, above maxPerStageDescriptorStorageBuffers = 4";
  if (limit == 4) {
    EXPECT_NE(ex.find(reason), std::string::npos) << ex;
  } else {
    EXPECT_EQ(ex.find(reason), std::string::npos) << ex;
  }
  Context ctx(Model::from_module(m, vulkan_first()));
  ctx.set_profiling(true);
  ctx.run(net.feeds);
  int convs = 0;
  for (const KernelProfile& k : ctx.profile()) {
    if (!k.device) continue;
    EXPECT_EQ(k.pattern.find("+CONV2D"), std::string::npos) << k.pattern;  // never the fused kernel
    convs += k.pattern.rfind("CONV2D", 0) == 0;
  }
  EXPECT_EQ(convs, limit >= 5 ? 2 : 0);
}

}  // namespace
}  // namespace weft::vk_test
