// Lowerings of ONNX's convolution, pooling, matrix-multiplication and resize operators. Spatial
// operators run on NHWC values; their weights are transposed once (folded at import time).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <onnx/onnx_pb.h>

#include "frontends/onnx/importer.h"
#include "frontends/onnx/lower.h"

namespace weft::onnxfe {

TVal rescale_to(Importer& imp, const TVal& acc, const std::vector<double>& scales, int64_t out_zp, DType out, int64_t in_zp);

namespace {

const std::vector<int64_t> kNhwc = {0, 2, 3, 1};
const std::vector<int64_t> kNwc = {0, 2, 1};

// One spatial dimension of a window operator, fitted to TOSA's exact output-size rule.
struct Axis {
  int64_t in = 0, k = 1, stride = 1, dil = 1;
  int64_t pb = 0, pe = 0;  // padding that TOSA applies
  int64_t crop = 0;        // trailing input rows/columns that no window reads
  int64_t out = 0;
};

Axis fit_axis(Importer& imp, int64_t in, int64_t k, int64_t stride, int64_t dil, int64_t pb, int64_t pe,
              const std::string& auto_pad, bool ceil_mode, const char* dim) {
  Axis a;
  a.in = in;
  a.k = k;
  a.stride = stride;
  a.dil = dil;
  if (stride < 1 || dil < 1 || k < 1) imp.fail(std::string("kernel, strides and dilations must be >= 1 (") + dim + ")", ErrorCode::kInvalidArgument);
  const int64_t keff = (k - 1) * dil + 1;
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    const int64_t out = (in + stride - 1) / stride;
    const int64_t total = std::max<int64_t>(0, (out - 1) * stride + keff - in);
    pb = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    pe = total - pb;
  } else if (auto_pad == "VALID") {
    pb = pe = 0;
  } else if (auto_pad != "NOTSET" && !auto_pad.empty()) {
    imp.fail("auto_pad '" + auto_pad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", ErrorCode::kInvalidArgument);
  }
  if (pb < 0 || pe < 0) imp.fail(std::string("negative pads are not supported (") + dim + ")", ErrorCode::kInvalidArgument);
  const int64_t span = in + pb + pe - keff;
  if (span < 0) imp.fail(std::string("the kernel (") + std::to_string(keff) + ") is larger than the padded input (" + std::to_string(in + pb + pe) + ") along " + dim, ErrorCode::kInvalidArgument);
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  // With ceil_mode the last window must start inside the input or the leading padding.
  if (ceil_mode && (out - 1) * stride >= in + pb) --out;
  a.out = out;
  a.pb = pb;
  // TOSA requires (in + pb + pe - keff) to be an exact multiple of the stride.
  int64_t need = (out - 1) * stride + keff - in - pb;
  if (need < 0) {
    a.crop = -need;
    need = 0;
  }
  a.pe = need;
  return a;
}

// Pads / strides / dilations / kernel attributes of a 2-D window operator over NHWC input
// [N, H, W, C]. Input of rank 3 ([N, C, W]) is treated as H = 1.
struct Window {
  Axis h, w;
  bool one_d = false;
};

Window window_attrs(Importer& imp, const Shape& nchw, const std::vector<int64_t>& kernel, bool ceil_mode) {
  Window win;
  const size_t sp = nchw.size() - 2;
  if (sp != 1 && sp != 2) imp.fail("only 1-D and 2-D windows are supported (the input has " + std::to_string(sp) + " spatial dimensions)");
  win.one_d = sp == 1;
  auto strides = imp.attr_ints("strides").value_or(std::vector<int64_t>(sp, 1));
  auto dil = imp.attr_ints("dilations").value_or(std::vector<int64_t>(sp, 1));
  auto pads = imp.attr_ints("pads").value_or(std::vector<int64_t>(2 * sp, 0));
  const std::string auto_pad = imp.attr_str("auto_pad", "NOTSET");
  if (strides.size() != sp || dil.size() != sp || pads.size() != 2 * sp || kernel.size() != sp)
    imp.fail("kernel_shape, strides, dilations and pads must have one (pads: two) value per spatial dimension (" + std::to_string(sp) + ")", ErrorCode::kInvalidArgument);
  if (win.one_d) {
    win.h = fit_axis(imp, 1, 1, 1, 1, 0, 0, "NOTSET", false, "H");
    win.w = fit_axis(imp, nchw[2], kernel[0], strides[0], dil[0], pads[0], pads[1], auto_pad, ceil_mode, "W");
  } else {
    win.h = fit_axis(imp, nchw[2], kernel[0], strides[0], dil[0], pads[0], pads[2], auto_pad, ceil_mode, "H");
    win.w = fit_axis(imp, nchw[3], kernel[1], strides[1], dil[1], pads[1], pads[3], auto_pad, ceil_mode, "W");
  }
  return win;
}

// The input as NHWC [N, H, W, C], cropped where no window reads.
TVal nhwc_input(Importer& imp, const OVal& x, const Window& win) {
  TVal v;
  if (win.one_d) {
    v = imp.in_layout(x, kNwc);  // [N, W, C]
    v = imp.reshape(v, {x.shape[0], 1, x.shape[2], x.shape[1]});
  } else {
    v = imp.in_layout(x, kNhwc);
  }
  if (win.h.crop || win.w.crop) {
    Shape s = v.shape();
    v = imp.slice(v, {0, 0, 0, 0}, {s[0], s[1] - win.h.crop, s[2] - win.w.crop, s[3]});
  }
  return v;
}

// Sets output 0 from an NHWC result.
void set_nhwc_out(Importer& imp, const TVal& y, const Window& win, int onnx_type) {
  if (win.one_d) {
    const Shape& s = y.shape();
    imp.set_out(0, imp.reshape(y, {s[0], s[2], s[3]}), kNwc, onnx_type);
  } else {
    imp.set_out(0, y, kNhwc, onnx_type);
  }
}

AttrValue acc_for(DType in) {
  if (in == DType::kInt8) return static_cast<int64_t>(AccType::kInt32);
  if (in == DType::kInt16) return static_cast<int64_t>(AccType::kInt48);
  return static_cast<int64_t>(AccType::kFp32);
}

std::vector<int64_t> pad_attr(const Window& w) { return {w.h.pb, w.h.pe, w.w.pb, w.w.pe}; }

// ---- 3-D windows (Conv, MaxPool, AveragePool over [N, C, D, H, W]) ----------------------------------
//
// Convolutions become TOSA CONV3D over NDHWC; pools are decomposed into two 2-D pools (TOSA has no
// 3-D pool): first over (H, W) with N*D as the batch, then over D with (H'*W') as the width. A
// window is a box, so the maximum of maxima is the maximum, and an average of averages over valid
// elements is the average over the valid box (each stage divides by its own valid count).
const std::vector<int64_t> kNdhwc = {0, 2, 3, 4, 1};

struct Window3 {
  Axis d, h, w;
};

Window3 window3_attrs(Importer& imp, const Shape& ncdhw, const std::vector<int64_t>& kernel, bool ceil_mode) {
  auto strides = imp.attr_ints("strides").value_or(std::vector<int64_t>(3, 1));
  auto dil = imp.attr_ints("dilations").value_or(std::vector<int64_t>(3, 1));
  auto pads = imp.attr_ints("pads").value_or(std::vector<int64_t>(6, 0));
  const std::string auto_pad = imp.attr_str("auto_pad", "NOTSET");
  if (strides.size() != 3 || dil.size() != 3 || pads.size() != 6 || kernel.size() != 3)
    imp.fail("kernel_shape, strides, dilations and pads must have one (pads: two) value per spatial dimension (3)", ErrorCode::kInvalidArgument);
  Window3 w;
  w.d = fit_axis(imp, ncdhw[2], kernel[0], strides[0], dil[0], pads[0], pads[3], auto_pad, ceil_mode, "D");
  w.h = fit_axis(imp, ncdhw[3], kernel[1], strides[1], dil[1], pads[1], pads[4], auto_pad, ceil_mode, "H");
  w.w = fit_axis(imp, ncdhw[4], kernel[2], strides[2], dil[2], pads[2], pads[5], auto_pad, ceil_mode, "W");
  return w;
}

TVal ndhwc_input(Importer& imp, const OVal& x, const Window3& win) {
  TVal v = imp.in_layout(x, kNdhwc);
  if (win.d.crop || win.h.crop || win.w.crop) {
    const Shape s = v.shape();
    v = imp.slice(v, {0, 0, 0, 0, 0}, {s[0], s[1] - win.d.crop, s[2] - win.h.crop, s[3] - win.w.crop, s[4]});
  }
  return v;
}

// A convolution's group attribute and kernel, checked against the input's channels and the weights.
struct ConvGeometry {
  int64_t group, c, oc;
  std::vector<int64_t> kernel;
};
ConvGeometry conv_geometry(Importer& imp, const OVal& x, const OVal& w) {
  ConvGeometry g{imp.attr_int("group", 1), x.shape[1], w.shape[0], std::vector<int64_t>(w.shape.begin() + 2, w.shape.end())};
  if (g.group < 1 || g.c % g.group || g.oc % g.group || w.shape[1] * g.group != g.c)
    imp.fail("group " + std::to_string(g.group) + " does not fit input channels " + std::to_string(g.c) + " and weights " + shape_str(w.shape),
             ErrorCode::kInvalidArgument);
  if (auto ks = imp.attr_ints("kernel_shape"); ks && *ks != g.kernel)
    imp.fail("kernel_shape " + shape_str(*ks) + " disagrees with the weights " + shape_str(w.shape), ErrorCode::kInvalidArgument);
  return g;
}

void conv3d(Importer& imp, const OVal& x, const OVal& w, int bias_at) {
  const auto [group, c, oc, kernel] = conv_geometry(imp, x, w);
  const Window3 win = window3_attrs(imp, x.shape, kernel, false);
  TVal in = ndhwc_input(imp, x, win);
  const DType dt = in.dtype();
  if (!is_float(dt)) imp.fail("3-D convolution of integer data is not supported (floating point only)");
  TVal wt = imp.transpose(imp.plain(w), {0, 2, 3, 4, 1});  // [OC, KD, KH, KW, C/g]
  TVal bias = bias_at >= 0 && imp.has_input(bias_at) ? imp.plain(imp.in(bias_at)) : imp.const_tensor(Tensor::zeros({dt, {oc}}));
  Attrs attrs{{"pad", std::vector<int64_t>{win.d.pb, win.d.pe, win.h.pb, win.h.pe, win.w.pb, win.w.pe}},
              {"stride", std::vector<int64_t>{win.d.stride, win.h.stride, win.w.stride}},
              {"dilation", std::vector<int64_t>{win.d.dil, win.h.dil, win.w.dil}},
              {"acc_type", acc_for(dt)}};
  TVal zp = imp.scalar(dt, 0, 1);
  TVal y;
  if (group == 1) {
    y = imp.emit(Op::CONV3D, {in, wt, bias, zp, zp}, attrs);
  } else {
    // One CONV3D per group (TOSA has no grouped or depthwise 3-D convolution).
    const int64_t cg = c / group, ocg = oc / group;
    const Shape is = in.shape(), ws = wt.shape();
    std::vector<TVal> parts;
    for (int64_t g = 0; g < group; ++g) {
      TVal xi = imp.slice(in, {0, 0, 0, 0, g * cg}, {is[0], is[1], is[2], is[3], cg});
      TVal wi = imp.slice(wt, {g * ocg, 0, 0, 0, 0}, {ocg, ws[1], ws[2], ws[3], ws[4]});
      parts.push_back(imp.emit(Op::CONV3D, {xi, wi, imp.slice(bias, {g * ocg}, {ocg}), zp, zp}, attrs));
    }
    y = imp.emit(Op::CONCAT, parts, {{"axis", int64_t{4}}});
  }
  imp.set_out(0, y, kNdhwc, x.onnx_type);
}

// One 2-D pooling stage over NHWC `in` with explicit window geometry; padding TOSA cannot express
// inside the pool (counted in the average, or not smaller than the kernel) is added explicitly.
TVal pool2d_stage(Importer& imp, TVal in, bool max, bool count_pad, Axis h, Axis w) {
  const DType dt = in.dtype();
  if (count_pad || h.pb >= h.k || h.pe >= h.k || w.pb >= w.k || w.pe >= w.k) {
    const double fill = max ? (is_float(dt) ? -std::numeric_limits<double>::infinity() : static_cast<double>(int_min(dt))) : 0.0;
    in = imp.emit(Op::PAD, {in, imp.shape_const({0, 0, h.pb, h.pe, w.pb, w.pe, 0, 0}), imp.scalar(dt, fill, 1)});
    h.pb = h.pe = w.pb = w.pe = 0;
  }
  Attrs attrs{{"kernel", std::vector<int64_t>{h.k, w.k}}, {"stride", std::vector<int64_t>{h.stride, w.stride}},
              {"pad", std::vector<int64_t>{h.pb, h.pe, w.pb, w.pe}}};
  if (max) return imp.emit(Op::MAX_POOL2D, {in}, attrs);
  attrs.emplace_back("acc_type", acc_for(dt));
  return imp.emit(Op::AVG_POOL2D, {in, imp.scalar(dt, 0, 1), imp.scalar(dt, 0, 1)}, attrs);
}

void pool3d(Importer& imp, bool max) {
  const OVal& x = imp.in(0);
  std::vector<int64_t> kernel = imp.attr_ints("kernel_shape").value_or(std::vector<int64_t>{});
  const bool ceil_mode = imp.attr_int("ceil_mode", 0) != 0;
  const Window3 win = window3_attrs(imp, x.shape, kernel, ceil_mode);
  if (win.d.dil != 1 || win.h.dil != 1 || win.w.dil != 1)
    imp.fail("pooling with dilations other than 1 is not supported (TOSA pools have no dilation)");
  const bool count_pad = !max && imp.attr_int("count_include_pad", 0) != 0;
  if (count_pad && ceil_mode) imp.fail("AveragePool with count_include_pad = 1 and ceil_mode = 1 over 3 spatial dimensions is not supported");
  TVal in = ndhwc_input(imp, x, win);
  const Shape s = in.shape();  // [N, D, H, W, C]
  TVal hw = pool2d_stage(imp, imp.reshape(in, {s[0] * s[1], s[2], s[3], s[4]}), max, count_pad, win.h, win.w);
  const int64_t ho = hw.shape()[1], wo = hw.shape()[2];
  Axis one;
  one.in = one.out = ho * wo;
  TVal dd = pool2d_stage(imp, imp.reshape(hw, {s[0], s[1], ho * wo, s[4]}), max, count_pad, win.d, one);
  imp.set_out(0, imp.reshape(dd, {s[0], dd.shape()[1], ho, wo, s[4]}), kNdhwc, x.onnx_type);
}

// Conv and QLinearConv share everything but the operand positions and the epilogue.
struct ConvOperands {
  int x, w, b;
  bool quant;            // QLinearConv: zero points at 2 and 5, scales, a requantized output
  bool integer = false;  // ConvInteger: zero points at 2 and 3, the int32 accumulator is the output
};

// An 8-bit quantized operand in int8: uint8 values (computed as int32 0..255) move down by 128,
// and so does their zero point, which leaves (value - zero point) unchanged.
TVal signed8(Importer& imp, const TVal& v, int onnx_type, int64_t* zp) {
  if (onnx_type == kOUint8) {
    *zp -= 128;
    return imp.cast(imp.sub(imp.cast(v, DType::kInt32), imp.scalar(DType::kInt32, 128, v.rank())), DType::kInt8);
  }
  if (v.dtype() != DType::kInt8)
    imp.fail(std::string("8-bit quantized operands must be int8 or uint8, got ") + onnx_type_name(onnx_type));
  return v;
}

void conv(Importer& imp, const ConvOperands& ops) {
  const OVal& x = imp.in(ops.x);
  const OVal& w = imp.in(ops.w);
  if (x.shape.size() != w.shape.size()) imp.fail("the input " + shape_str(x.shape) + " and the weights " + shape_str(w.shape) + " differ in rank", ErrorCode::kInvalidArgument);
  if (x.shape.size() < 3) imp.fail("the input must have a channel and at least one spatial dimension", ErrorCode::kInvalidArgument);
  if (x.shape.size() == 5) {
    if (ops.quant || ops.integer) imp.fail("quantized 3-D convolution is not supported");
    conv3d(imp, x, w, ops.b);
    return;
  }
  const auto [group, c, oc, kernel] = conv_geometry(imp, x, w);
  Window win = window_attrs(imp, x.shape, kernel, false);
  TVal in = nhwc_input(imp, x, win);
  TVal wt = imp.plain(w);  // [OC, C/g, (KH,) KW]
  int64_t in_zp = 0, w_zp = 0;
  if (ops.quant || ops.integer) {
    const int xz = 2, wz_at = ops.quant ? 5 : 3;
    if (imp.has_input(xz)) {
      auto z = imp.const_ints(xz, "x_zero_point");
      if (z.size() != 1) imp.fail("x_zero_point must be one value (per-tensor)");
      in_zp = z[0];
    }
    if (imp.has_input(wz_at)) {
      auto wz = imp.const_ints(wz_at, "w_zero_point");
      for (int64_t z : wz)
        if (z != wz[0]) imp.fail("per-channel weight zero points that differ are not supported (TOSA has one weight_zp)");
      w_zp = wz.at(0);
    }
    in = signed8(imp, in, x.onnx_type, &in_zp);
    wt = signed8(imp, wt, w.onnx_type, &w_zp);
  }
  const DType dt = in.dtype();
  if (win.one_d) wt = imp.reshape(wt, {oc, w.shape[1], 1, w.shape[2]});
  const int64_t kh = wt.shape()[2], kw = wt.shape()[3];
  const bool has_bias = ops.b >= 0 && imp.has_input(ops.b);
  TVal bias = has_bias ? imp.plain(imp.in(ops.b)) : imp.scalar(ops.quant || ops.integer ? DType::kInt32 : dt, 0, 1);
  if (!has_bias) bias = imp.const_tensor(Tensor::zeros({bias.dtype(), {oc}}));
  const DType wdt = wt.dtype();
  TVal izp = imp.scalar(dt, static_cast<double>(in_zp), 1), wzp = imp.scalar(wdt, static_cast<double>(w_zp), 1);
  Attrs attrs{{"pad", pad_attr(win)}, {"stride", std::vector<int64_t>{win.h.stride, win.w.stride}},
              {"dilation", std::vector<int64_t>{win.h.dil, win.w.dil}}, {"acc_type", acc_for(dt)}};
  TVal y;
  if (group == 1) {
    y = imp.emit(Op::CONV2D, {in, imp.transpose(wt, {0, 2, 3, 1}), bias, izp, wzp}, attrs);
  } else if (group == c && w.shape[1] == 1) {
    const int64_t m = oc / c;
    TVal wd = imp.transpose(imp.reshape(wt, {c, m, kh, kw}), {2, 3, 0, 1});  // [KH, KW, C, M]
    y = imp.emit(Op::DEPTHWISE_CONV2D, {in, wd, bias, izp, wzp}, attrs);
  } else {
    const int64_t cg = c / group, ocg = oc / group;
    std::vector<TVal> parts;
    const Shape is = in.shape();
    for (int64_t g = 0; g < group; ++g) {
      TVal xi = imp.slice(in, {0, 0, 0, g * cg}, {is[0], is[1], is[2], cg});
      TVal wi = imp.transpose(imp.slice(wt, {g * ocg, 0, 0, 0}, {ocg, cg, kh, kw}), {0, 2, 3, 1});
      TVal bi = bias.shape()[0] == 1 ? bias : imp.slice(bias, {g * ocg}, {ocg});
      parts.push_back(imp.emit(Op::CONV2D, {xi, wi, bi, izp, wzp}, attrs));
    }
    y = imp.emit(Op::CONCAT, parts, {{"axis", int64_t{3}}});
  }
  if (ops.quant) {
    auto xs = imp.const_doubles(1, "x_scale"), ws = imp.const_doubles(4, "w_scale"), ys = imp.const_doubles(6, "y_scale");
    std::vector<double> scales;
    for (double s : ws) scales.push_back(xs.at(0) * s / ys.at(0));
    int64_t yzp = imp.has_input(7) ? imp.const_ints(7, "y_zero_point").at(0) : 0;
    const int yt = imp.has_input(7) ? imp.in(7).onnx_type : kOUint8;
    if (yt != kOInt8 && yt != kOUint8) imp.fail("y_zero_point must be int8 or uint8");
    if (yt == kOUint8) yzp -= 128;
    y = rescale_to(imp, y, scales, yzp, DType::kInt8, 0);
    if (yt == kOUint8) y = imp.add(imp.cast(y, DType::kInt32), imp.scalar(DType::kInt32, 128, y.rank()));
    set_nhwc_out(imp, y, win, yt);
    return;
  }
  if (ops.integer) {
    set_nhwc_out(imp, y, win, kOInt32);
    return;
  }
  set_nhwc_out(imp, y, win, x.onnx_type);
}

// MaxPool with its Indices output (2-D): TOSA's MAX_POOL2D gives no positions, so the window is
// unrolled: for each kernel tap, the strided view of the (-inf padded) input it reads; the maximum
// over taps, and the index of the first tap that holds it (ONNX Runtime's choice on ties), as the
// flat position in the NCHW input (storage_order 0) or its column-major form (storage_order 1).
void maxpool_with_indices(Importer& imp) {
  const OVal& x = imp.in(0);
  if (x.shape.size() != 4) imp.fail("the Indices output is supported for 2-D MaxPool ([N, C, H, W] input)");
  const std::vector<int64_t> kernel = imp.attr_ints("kernel_shape").value_or(std::vector<int64_t>{});
  const bool ceil_mode = imp.attr_int("ceil_mode", 0) != 0;
  const Window win = window_attrs(imp, x.shape, kernel, ceil_mode);
  const bool column_major = imp.attr_int("storage_order", 0) != 0;
  const int64_t dh = win.h.dil, dw = win.w.dil;
  TVal v = imp.plain(x);
  const DType dt = v.dtype();
  const int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], w = x.shape[3];
  const int64_t ho = win.h.out, wo = win.w.out, sh = win.h.stride, sw = win.w.stride;
  // Padded so that every tap's strided view [a, a + ho*sh) x [b, b + wo*sw) lies inside.
  const int64_t hp = std::max(win.h.pb + h, (win.h.k - 1) * dh + ho * sh), wp = std::max(win.w.pb + w, (win.w.k - 1) * dw + wo * sw);
  const double low = is_float(dt) ? -std::numeric_limits<double>::infinity() : static_cast<double>(int_min(dt));
  TVal p = imp.emit(Op::PAD, {v, imp.shape_const({0, 0, 0, 0, win.h.pb, hp - win.h.pb - h, win.w.pb, wp - win.w.pb - w}), imp.scalar(dt, low, 1)});
  TVal best, best_idx;
  for (int64_t a = 0; a < win.h.k; ++a)
    for (int64_t b = 0; b < win.w.k; ++b) {
      TVal t = imp.slice(p, {0, 0, a * dh, b * dw}, {n, c, ho * sh, wo * sw});
      t = imp.reshape(t, {n, c, ho, sh, wo, sw});
      t = imp.reshape(imp.slice(t, {0, 0, 0, 0, 0, 0}, {n, c, ho, 1, wo, 1}), {n, c, ho, wo});
      // The flat input position this tap reads at each output; padding taps never win (-inf).
      std::vector<int64_t> pos(static_cast<size_t>(n * c * ho * wo));
      for (int64_t q = 0; q < n * c; ++q)
        for (int64_t i = 0; i < ho; ++i)
          for (int64_t j = 0; j < wo; ++j) {
            const int64_t r = std::clamp<int64_t>(i * sh + a * dh - win.h.pb, 0, h - 1), cc = std::clamp<int64_t>(j * sw + b * dw - win.w.pb, 0, w - 1);
            pos[static_cast<size_t>((q * ho + i) * wo + j)] = q * h * w + (column_major ? cc * h + r : r * w + cc);
          }
      TVal idx = imp.const_tensor(Tensor::from_ints({DType::kInt32, {n, c, ho, wo}}, pos));
      if (!best.type.rank()) {
        best = t;
        best_idx = idx;
      } else {
        TVal better = imp.emit(Op::GREATER, {t, best});  // strictly: the first maximum keeps its index
        best_idx = imp.emit(Op::SELECT, {better, idx, best_idx});
        best = imp.emit(Op::MAXIMUM, {best, t});
      }
    }
  imp.set_out(0, best, {}, x.onnx_type);
  imp.set_out(1, best_idx, {}, kOInt64);
}

// Pooling over the NHWC input. `global` takes the whole spatial extent.
void pool(Importer& imp, bool max, bool global) {
  const OVal& x = imp.in(0);
  if (x.shape.size() < 3) imp.fail("the input must have a channel and at least one spatial dimension", ErrorCode::kInvalidArgument);
  if (imp.wants_output(1)) {
    if (!max || global) imp.fail("only MaxPool has an Indices output");
    maxpool_with_indices(imp);
    return;
  }
  if (global && x.shape.size() > 4) {
    // Any number of spatial dimensions: a reduction over them, channels last.
    const size_t r = x.shape.size();
    std::vector<int64_t> perm{0};
    for (size_t k = 2; k < r; ++k) perm.push_back(static_cast<int64_t>(k));
    perm.push_back(1);
    TVal v = imp.in_layout(x, perm);
    const int64_t n = shape_elements(x.shape) / (x.shape[0] * x.shape[1]);
    v = imp.reshape(v, {x.shape[0], n, x.shape[1]});
    TVal y = imp.reduce(max ? Op::REDUCE_MAX : Op::REDUCE_SUM, v, 1);
    if (!max) {
      if (!is_float(y.dtype())) imp.fail("GlobalAveragePool of integer data is not supported");
      y = imp.mul(y, imp.scalar(y.dtype(), 1.0 / static_cast<double>(n), 3));
    }
    Shape os{x.shape[0]};
    for (size_t k = 2; k < r; ++k) os.push_back(1);
    os.push_back(x.shape[1]);
    imp.set_out(0, imp.reshape(y, os), perm, x.onnx_type);
    return;
  }
  if (!global && x.shape.size() == 5) {
    pool3d(imp, max);
    return;
  }
  std::vector<int64_t> kernel;
  bool ceil_mode = false;
  Window win;
  if (global) {
    kernel.assign(x.shape.begin() + 2, x.shape.end());
    win.one_d = x.shape.size() == 3;
    win.h = fit_axis(imp, win.one_d ? 1 : x.shape[2], win.one_d ? 1 : kernel[0], 1, 1, 0, 0, "NOTSET", false, "H");
    win.w = fit_axis(imp, x.shape.back(), kernel.back(), 1, 1, 0, 0, "NOTSET", false, "W");
  } else {
    kernel = imp.attr_ints("kernel_shape").value_or(std::vector<int64_t>{});
    ceil_mode = imp.attr_int("ceil_mode", 0) != 0;
    win = window_attrs(imp, x.shape, kernel, ceil_mode);
    if ((win.h.dil != 1 || win.w.dil != 1) && max && x.shape.size() == 4) {
      // TOSA's MAX_POOL2D has no dilation: the window unrolled per tap, as for the Indices output.
      maxpool_with_indices(imp);
      return;
    }
    if (win.h.dil != 1 || win.w.dil != 1) imp.fail("AveragePool with dilations, and 1-D MaxPool with dilations, are not supported (TOSA pools have no dilation)");
  }
  TVal in = nhwc_input(imp, x, win);
  // uint8 values (computed in int32) pool in int16, which TOSA's pools take.
  const bool u8 = in.dtype() == DType::kInt32 && x.onnx_type == kOUint8;
  if (u8) in = imp.cast(in, DType::kInt16);
  const DType dt = in.dtype();
  const bool count_pad = !max && imp.attr_int("count_include_pad", 0) != 0;
  // Padding TOSA cannot express inside the pool (counted in the average, or not smaller than the
  // kernel) is added explicitly.
  const int64_t ipt = win.h.pb, ipl = win.w.pb;
  int64_t ext_b = 0, ext_r = 0;  // ceil-mode overhang beyond the declared pads stays implicit
  const auto pads = imp.attr_ints("pads").value_or(std::vector<int64_t>(4, 0));
  const bool explicit_pad = count_pad || win.h.pb >= win.h.k || win.h.pe >= win.h.k || win.w.pb >= win.w.k || win.w.pe >= win.w.k;
  if (explicit_pad && (ipt || ipl || win.h.pe || win.w.pe)) {
    int64_t dpb = 0, dpr = 0;  // declared bottom/right pads
    if (global || imp.attr_str("auto_pad", "NOTSET") != "NOTSET") {
      dpb = win.h.pe;
      dpr = win.w.pe;
    } else if (win.one_d) {
      dpr = std::min(pads.at(1), win.w.pe);
    } else {
      dpb = std::min(pads.at(2), win.h.pe);
      dpr = std::min(pads.at(3), win.w.pe);
    }
    ext_b = win.h.pe - dpb;
    ext_r = win.w.pe - dpr;
    const double fill = max ? (is_float(dt) ? -std::numeric_limits<double>::infinity() : static_cast<double>(int_min(dt))) : 0.0;
    in = imp.emit(Op::PAD, {in, imp.shape_const({0, 0, ipt, dpb, ipl, dpr, 0, 0}), imp.scalar(dt, fill, 1)});
    win.h.pb = win.w.pb = 0;
    win.h.pe = ext_b;
    win.w.pe = ext_r;
    if (ext_b >= win.h.k || ext_r >= win.w.k) imp.fail("ceil_mode overhang as large as the kernel is not supported");
  }
  Attrs attrs{{"kernel", std::vector<int64_t>{win.h.k, win.w.k}}, {"stride", std::vector<int64_t>{win.h.stride, win.w.stride}},
              {"pad", pad_attr(win)}};
  TVal y;
  if (max) {
    y = imp.emit(Op::MAX_POOL2D, {in}, attrs);
  } else {
    attrs.emplace_back("acc_type", acc_for(dt));
    y = imp.emit(Op::AVG_POOL2D, {in, imp.scalar(dt, 0, 1), imp.scalar(dt, 0, 1)}, attrs);
  }
  if (u8) y = imp.cast(y, DType::kInt32);
  set_nhwc_out(imp, y, win, x.onnx_type);
}

// [.., M, K] x [.., K, N] with numpy broadcasting of the batch dimensions, as MATMUL on rank 3.
TVal matmul(Importer& imp, TVal a, TVal b, int64_t a_zp, int64_t b_zp, Shape* out_shape) {
  if (a.rank() == 0 || b.rank() == 0)
    imp.fail("MatMul operands must have rank >= 1, got " + shape_str(a.shape()) + " x " + shape_str(b.shape()), ErrorCode::kInvalidArgument);
  const bool a1 = a.rank() == 1, b1 = b.rank() == 1;
  if (a1) a = imp.reshape(a, {1, a.shape()[0]});
  if (b1) b = imp.reshape(b, {b.shape()[0], 1});
  const Shape as = a.shape(), bs = b.shape();
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  if (bs[bs.size() - 2] != k) imp.fail("inner dimensions differ: " + shape_str(as) + " x " + shape_str(bs), ErrorCode::kInvalidArgument);
  Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  const size_t br = std::max(ab.size(), bb.size());
  ab.insert(ab.begin(), br - ab.size(), 1);
  bb.insert(bb.begin(), br - bb.size(), 1);
  Shape batch(br);
  for (size_t i = 0; i < br; ++i) {
    if (ab[i] != bb[i] && ab[i] != 1 && bb[i] != 1) imp.fail("batch dimensions cannot be broadcast: " + shape_str(as) + " x " + shape_str(bs), ErrorCode::kInvalidArgument);
    batch[i] = std::max(ab[i], bb[i]);
  }
  const int64_t nb = shape_elements(batch);
  TVal zpa = imp.scalar(a.dtype(), static_cast<double>(a_zp), 1), zpb = imp.scalar(b.dtype(), static_cast<double>(b_zp), 1);
  TVal y;
  if (shape_elements(bb) == 1) {
    // B is shared by every batch: fold the batch into M.
    y = imp.emit(Op::MATMUL, {imp.reshape(a, {1, shape_elements(ab) * m, k}), imp.reshape(b, {1, k, n}), zpa, zpb});
  } else {
    auto tile_to = [&](TVal v, const Shape& own, int64_t r0, int64_t r1) {
      Shape full = own;
      full.push_back(r0);
      full.push_back(r1);
      v = imp.reshape(v, full);
      std::vector<int64_t> mult(full.size(), 1);
      bool any = false;
      for (size_t i = 0; i < br; ++i)
        if (own[i] != batch[i]) { mult[i] = batch[i]; any = true; }
      if (any) v = imp.emit(Op::TILE, {v, imp.shape_const(mult)});
      return imp.reshape(v, {nb, r0, r1});
    };
    y = imp.emit(Op::MATMUL, {tile_to(a, ab, m, k), tile_to(b, bb, k, n), zpa, zpb});
  }
  Shape os = batch;
  if (!a1) os.push_back(m);
  if (!b1) os.push_back(n);
  if (a1 && b1 && os.empty()) os = {};
  *out_shape = os;
  return y;
}

// Fraction p/q close to x with q <= max_q (continued fractions).
std::pair<int64_t, int64_t> rational(double x, int64_t max_q) {
  int64_t p0 = 0, q0 = 1, p1 = 1, q1 = 0;
  double v = x;
  for (int i = 0; i < 40; ++i) {
    const double a = std::floor(v);
    const int64_t ai = static_cast<int64_t>(a);
    const int64_t p2 = ai * p1 + p0, q2 = ai * q1 + q0;
    if (q2 > max_q) break;
    p0 = p1; q0 = q1; p1 = p2; q1 = q2;
    if (std::fabs(static_cast<double>(p1) / static_cast<double>(q1) - x) < 1e-9 * x) break;
    const double frac = v - a;
    if (frac < 1e-12) break;
    v = 1.0 / frac;
  }
  return {p1, q1};
}

}  // namespace

void lower_Conv(Importer& imp, const onnx::NodeProto&) { conv(imp, {0, 1, 2, false}); }
void lower_QLinearConv(Importer& imp, const onnx::NodeProto&) { conv(imp, {0, 3, 8, true}); }
void lower_ConvInteger(Importer& imp, const onnx::NodeProto&) { conv(imp, {0, 1, -1, false, true}); }

namespace {
// ConvTranspose as a convolution, for what TRANSPOSE_CONV2D cannot say (3-D, dilations): the input
// with stride - 1 zeros between neighbours, padded by (kernel extent - 1 - pad) on each side (plus
// output_padding at the end; a negative amount crops), convolved (CONV3D, stride 1, the same
// dilation) with the kernel reversed in space and its channel axes swapped. A 2-D one is a 3-D one
// of depth 1.
void conv_transpose_as_conv(Importer& imp, const OVal& x, const OVal& w) {
  const size_t sp = x.shape.size() - 2;
  const int64_t group = imp.attr_int("group", 1);
  const int64_t c = x.shape[1];
  if (group < 1 || c % group || w.shape[0] != c)
    imp.fail("group " + std::to_string(group) + " does not fit input channels " + std::to_string(c) + " and weights " + shape_str(w.shape), ErrorCode::kInvalidArgument);
  const int64_t ocg = w.shape[1], oc = ocg * group, cg = c / group;
  auto get = [&](const char* name, std::vector<int64_t> dflt, size_t n) {
    auto v = imp.attr_ints(name).value_or(dflt);
    if (v.size() != n)
      imp.fail(std::string(name) + " has " + std::to_string(v.size()) + " values; this ConvTranspose needs " + std::to_string(n), ErrorCode::kInvalidArgument);
    return v;
  };
  auto strides = get("strides", std::vector<int64_t>(sp, 1), sp), dil = get("dilations", std::vector<int64_t>(sp, 1), sp);
  auto pads = get("pads", std::vector<int64_t>(2 * sp, 0), 2 * sp), opad = get("output_padding", std::vector<int64_t>(sp, 0), sp);
  const std::string auto_pad = imp.attr_str("auto_pad", "NOTSET");
  for (size_t d = 0; d < sp; ++d) {
    if (strides[d] < 1 || dil[d] < 1) imp.fail("strides and dilations must be >= 1", ErrorCode::kInvalidArgument);
    const int64_t in = x.shape[2 + d], keff = dil[d] * (w.shape[2 + d] - 1) + 1;
    int64_t target = -1;
    if (auto os = imp.attr_ints("output_shape")) {
      if (os->size() != sp && os->size() != sp + 2) imp.fail("output_shape must have one value per spatial dimension", ErrorCode::kInvalidArgument);
      target = (*os)[os->size() - sp + d];
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      target = in * strides[d];
    }
    if (target >= 0) {
      const int64_t total = strides[d] * (in - 1) + opad[d] + keff - target;
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      pads[d] = auto_pad == "SAME_UPPER" ? half : total - half;
      pads[sp + d] = total - pads[d];
    } else if (auto_pad == "VALID") {
      pads[d] = pads[sp + d] = 0;
    }
  }
  // As 3-D: [N, C, D, H, W] with D = 1 for a 2-D ConvTranspose.
  auto lift = [&](std::vector<int64_t> v, int64_t one) {
    v.insert(v.begin(), 3 - sp, one);
    return v;
  };
  std::vector<int64_t> st3 = lift(strides, 1), dl3 = lift(dil, 1), pb3 = lift(std::vector<int64_t>(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(sp)), 0),
                       pe3 = lift(std::vector<int64_t>(pads.begin() + static_cast<std::ptrdiff_t>(sp), pads.end()), 0), op3 = lift(opad, 0);
  TVal v = imp.plain(x);
  TVal wt = imp.plain(w);
  Shape xs = x.shape, ws = w.shape;
  if (sp < 3) {
    xs.insert(xs.begin() + 2, 3 - sp, 1);
    ws.insert(ws.begin() + 2, 3 - sp, 1);
    v = imp.reshape(v, xs);
    wt = imp.reshape(wt, ws);
  }
  v = imp.transpose(v, {0, 2, 3, 4, 1});  // NDHWC
  const DType dt = v.dtype();
  if (!is_float(dt)) imp.fail("ConvTranspose of integer data is not supported here");
  for (int a = 0; a < 3; ++a) {
    const int64_t s = st3[static_cast<size_t>(a)];
    const Shape cur = v.shape();
    if (s > 1) {
      int64_t outer = 1, inner = 1;
      for (int k = 0; k <= a + 1; ++k) outer *= cur[static_cast<size_t>(k)];
      for (size_t k = static_cast<size_t>(a) + 2; k < cur.size(); ++k) inner *= cur[k];
      TVal t = imp.reshape(v, {outer, 1, inner});
      t = imp.emit(Op::PAD, {t, imp.shape_const({0, 0, 0, s - 1, 0, 0}), imp.scalar(dt, 0, 1)});
      Shape grown = cur;
      grown[static_cast<size_t>(a) + 1] *= s;
      t = imp.reshape(t, grown);
      Shape keep = cur;
      keep[static_cast<size_t>(a) + 1] = (cur[static_cast<size_t>(a) + 1] - 1) * s + 1;
      v = imp.slice(t, std::vector<int64_t>(5, 0), std::vector<int64_t>(keep.begin(), keep.end()));
    }
    const int64_t keff = dl3[static_cast<size_t>(a)] * (ws[2 + static_cast<size_t>(a)] - 1) + 1;
    const int64_t before = keff - 1 - pb3[static_cast<size_t>(a)], after = keff - 1 - pe3[static_cast<size_t>(a)] + op3[static_cast<size_t>(a)];
    const Shape now = v.shape();
    const size_t ax = static_cast<size_t>(a) + 1;
    if (before < 0 || after < 0) {
      std::vector<int64_t> start(5, 0), size(now.begin(), now.end());
      start[ax] = std::max<int64_t>(0, -before);
      size[ax] = now[ax] - start[ax] - std::max<int64_t>(0, -after);
      if (size[ax] < 1) imp.fail("the pads leave no output", ErrorCode::kInvalidArgument);
      v = imp.slice(v, start, size);
    }
    if (before > 0 || after > 0) {
      std::vector<int64_t> pp(10, 0);
      pp[2 * ax] = std::max<int64_t>(0, before);
      pp[2 * ax + 1] = std::max<int64_t>(0, after);
      v = imp.emit(Op::PAD, {v, imp.shape_const(pp), imp.scalar(dt, 0, 1)});
    }
  }
  // The kernel reversed in space: [C, OC/g, KD, KH, KW].
  for (int64_t a = 2; a < 5; ++a) wt = imp.emit(Op::REVERSE, {wt}, {{"axis", a}});
  TVal bias = imp.has_input(2) ? imp.plain(imp.in(2)) : imp.const_tensor(Tensor::zeros({dt, {oc}}));
  Attrs attrs{{"pad", std::vector<int64_t>(6, 0)}, {"stride", std::vector<int64_t>{1, 1, 1}}, {"dilation", dl3}, {"acc_type", acc_for(dt)}};
  TVal zp = imp.scalar(dt, 0, 1);
  std::vector<TVal> parts;
  const Shape is = v.shape();
  for (int64_t g = 0; g < group; ++g) {
    TVal xi = group == 1 ? v : imp.slice(v, {0, 0, 0, 0, g * cg}, {is[0], is[1], is[2], is[3], cg});
    TVal wi = group == 1 ? wt : imp.slice(wt, {g * cg, 0, 0, 0, 0}, {cg, ocg, ws[2], ws[3], ws[4]});
    wi = imp.transpose(wi, {1, 2, 3, 4, 0});  // [OC/g, KD, KH, KW, C/g]
    TVal bi = group == 1 ? bias : imp.slice(bias, {g * ocg}, {ocg});
    parts.push_back(imp.emit(Op::CONV3D, {xi, wi, bi, zp, zp}, attrs));
  }
  TVal y = parts.size() == 1 ? parts[0] : imp.emit(Op::CONCAT, parts, {{"axis", int64_t{4}}});
  if (sp == 2) {
    const Shape ys = y.shape();
    imp.set_out(0, imp.reshape(y, {ys[0], ys[2], ys[3], ys[4]}), kNhwc, x.onnx_type);
  } else if (sp == 1) {
    const Shape ys = y.shape();
    imp.set_out(0, imp.reshape(y, {ys[0], ys[3], ys[4]}), kNwc, x.onnx_type);
  } else {
    imp.set_out(0, y, kNdhwc, x.onnx_type);
  }
}
}  // namespace

void lower_ConvTranspose(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  const OVal& w = imp.in(1);  // [C, OC/g, KH, KW]
  if (x.shape.size() != w.shape.size()) imp.fail("the input " + shape_str(x.shape) + " and the weights " + shape_str(w.shape) + " differ in rank", ErrorCode::kInvalidArgument);
  const auto dilations = imp.attr_ints("dilations");
  const bool dilated = dilations && std::any_of(dilations->begin(), dilations->end(), [](int64_t d) { return d != 1; });
  if (x.shape.size() == 5 || x.shape.size() == 3 || (x.shape.size() == 4 && dilated)) {
    conv_transpose_as_conv(imp, x, w);
    return;
  }
  if (x.shape.size() != 4) imp.fail("ConvTranspose needs 1, 2 or 3 spatial dimensions", ErrorCode::kInvalidArgument);
  const int64_t group = imp.attr_int("group", 1);
  const int64_t c = x.shape[1];
  if (group < 1 || c % group || w.shape[0] != c) imp.fail("group " + std::to_string(group) + " does not fit input channels " + std::to_string(c) + " and weights " + shape_str(w.shape), ErrorCode::kInvalidArgument);
  const int64_t ocg = w.shape[1], oc = ocg * group, kh = w.shape[2], kw = w.shape[3];
  auto strides = imp.attr_ints("strides").value_or(std::vector<int64_t>{1, 1});
  auto dil = imp.attr_ints("dilations").value_or(std::vector<int64_t>{1, 1});
  if (dil != std::vector<int64_t>{1, 1}) imp.fail("ConvTranspose with dilations is not supported (TOSA's TRANSPOSE_CONV2D has none)");
  auto pads = imp.attr_ints("pads").value_or(std::vector<int64_t>{0, 0, 0, 0});
  auto opad = imp.attr_ints("output_padding").value_or(std::vector<int64_t>{0, 0});
  const std::string auto_pad = imp.attr_str("auto_pad", "NOTSET");
  auto need = [&](const char* name, const std::vector<int64_t>& v, size_t n) {
    if (v.size() != n)
      imp.fail(std::string(name) + " has " + std::to_string(v.size()) + " values; a 2-D ConvTranspose needs " + std::to_string(n),
               ErrorCode::kInvalidArgument);
  };
  need("strides", strides, 2);
  need("pads", pads, 4);
  need("output_padding", opad, 2);
  if (auto os = imp.attr_ints("output_shape"); os && os->size() != 2 && os->size() != 4)
    imp.fail("output_shape has " + std::to_string(os->size()) + " values; a 2-D ConvTranspose needs 2 (or 4)", ErrorCode::kInvalidArgument);
  const int64_t ih = x.shape[2], iw = x.shape[3];
  if (auto oshape = imp.attr_ints("output_shape")) {
    const auto& os = *oshape;
    const size_t off = os.size() == 4 ? 2 : 0;
    for (int d = 0; d < 2; ++d) {
      const int64_t in = d ? iw : ih, k = d ? kw : kh;
      const int64_t total = strides[static_cast<size_t>(d)] * (in - 1) + opad[static_cast<size_t>(d)] + k - os.at(off + static_cast<size_t>(d));
      // As the ONNX specification splits it: SAME_UPPER puts the odd unit at the end. The split
      // rounds down (Python's //, as in ONNX's reference): an output_shape one larger than the
      // natural output (total -1) adds the row at the end, not the start.
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      pads[static_cast<size_t>(d)] = auto_pad == "SAME_UPPER" ? half : total - half;
      pads[static_cast<size_t>(d) + 2] = total - pads[static_cast<size_t>(d)];
    }
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (int d = 0; d < 2; ++d) {
      const int64_t in = d ? iw : ih, k = d ? kw : kh;
      const int64_t total = strides[static_cast<size_t>(d)] * (in - 1) + opad[static_cast<size_t>(d)] + k - in * strides[static_cast<size_t>(d)];
      const int64_t half = total / 2;
      pads[static_cast<size_t>(d)] = auto_pad == "SAME_UPPER" ? half : total - half;
      pads[static_cast<size_t>(d) + 2] = total - pads[static_cast<size_t>(d)];
    }
  } else if (auto_pad == "VALID") {
    pads = {0, 0, 0, 0};
  }
  TVal in = imp.in_layout(x, kNhwc);
  TVal wt = imp.plain(w);
  TVal bias = imp.has_input(2) ? imp.plain(imp.in(2)) : imp.const_tensor(Tensor::zeros({in.dtype(), {oc}}));
  Attrs attrs{{"out_pad", std::vector<int64_t>{-pads[0], -pads[2] + opad[0], -pads[1], -pads[3] + opad[1]}},
              {"stride", std::vector<int64_t>{strides[0], strides[1]}}, {"acc_type", acc_for(in.dtype())}};
  TVal zp = imp.scalar(in.dtype(), 0, 1), wzp = imp.scalar(wt.dtype(), 0, 1);
  std::vector<TVal> parts;
  const Shape is = in.shape();
  const int64_t cg = c / group;
  for (int64_t g = 0; g < group; ++g) {
    TVal xi = group == 1 ? in : imp.slice(in, {0, 0, 0, g * cg}, {is[0], is[1], is[2], cg});
    TVal wi = group == 1 ? wt : imp.slice(wt, {g * cg, 0, 0, 0}, {cg, ocg, kh, kw});
    wi = imp.transpose(wi, {1, 2, 3, 0});  // [OC/g, KH, KW, C/g]
    TVal bi = group == 1 ? bias : imp.slice(bias, {g * ocg}, {ocg});
    parts.push_back(imp.emit(Op::TRANSPOSE_CONV2D, {xi, wi, bi, zp, wzp}, attrs));
  }
  TVal y = parts.size() == 1 ? parts[0] : imp.emit(Op::CONCAT, parts, {{"axis", int64_t{3}}});
  imp.set_out(0, y, kNhwc, x.onnx_type);
}

void lower_MaxPool(Importer& imp, const onnx::NodeProto&) { pool(imp, true, false); }
void lower_AveragePool(Importer& imp, const onnx::NodeProto&) { pool(imp, false, false); }
void lower_GlobalAveragePool(Importer& imp, const onnx::NodeProto&) { pool(imp, false, true); }
void lower_GlobalMaxPool(Importer& imp, const onnx::NodeProto&) { pool(imp, true, true); }

void lower_Gemm(Importer& imp, const onnx::NodeProto&) {
  TVal a = imp.plain(imp.in(0)), b = imp.plain(imp.in(1));
  if (a.rank() != 2 || b.rank() != 2) imp.fail("A and B must be 2-D (got " + shape_str(a.shape()) + " and " + shape_str(b.shape()) + ")", ErrorCode::kInvalidArgument);
  if (imp.attr_int("transA", 0)) a = imp.transpose(a, {1, 0});
  // A large constant B (a fully connected layer's weights, [N, K] as PyTorch writes them) is read
  // through the transposition in place rather than copied transposed (1 MiB and up).
  constexpr size_t kViewBytes = size_t{1} << 20;
  if (imp.attr_int("transB", 0))
    b = imp.transpose(b.is_const() && b.type.byte_size() >= kViewBytes ? imp.unfolded(b) : b, {1, 0});
  const double alpha = imp.attr_float("alpha", 1.f), beta = imp.attr_float("beta", 1.f);
  Shape os;
  TVal y = matmul(imp, a, b, 0, 0, &os);  // [1, M, N]
  if (alpha != 1.0) y = imp.mul(y, imp.scalar(y.dtype(), alpha, 3));
  if (imp.has_input(2) && beta != 0.0) {
    TVal c = imp.to_rank(imp.plain(imp.in(2)), 3);
    if (beta != 1.0) c = imp.mul(c, imp.scalar(c.dtype(), beta, 3));
    y = imp.add(y, c);
  }
  imp.set_out(0, imp.reshape(y, os), {}, imp.in(0).onnx_type);
}

void lower_MatMul(Importer& imp, const onnx::NodeProto&) {
  const OVal& a = imp.in(0);
  Shape os;
  // A [.., K] times a matrix B multiplies every row of A alone: where A is carried with its leading
  // axes permuted (torch's seq-first attention at batch > 1 leaves [B, S, E] values held as
  // [S, B, E]), the product is taken in that layout and keeps it, so no TRANSPOSE is written.
  const size_t r = a.shape.size();
  if (!a.perm.empty() && r >= 3 && a.perm.back() == static_cast<int64_t>(r) - 1 && imp.in(1).shape.size() == 2) {
    TVal y = matmul(imp, a.v, imp.plain(imp.in(1)), 0, 0, &os);
    imp.set_out(0, imp.reshape(y, os), a.perm, a.onnx_type);
    return;
  }
  TVal y = matmul(imp, imp.plain(a), imp.plain(imp.in(1)), 0, 0, &os);
  imp.set_out(0, imp.reshape(y, os), {}, a.onnx_type);
}

void lower_QLinearMatMul(Importer& imp, const onnx::NodeProto&) {
  int64_t azp = imp.const_ints(2, "a_zero_point").at(0), bzp = imp.const_ints(5, "b_zero_point").at(0);
  auto as = imp.const_doubles(1, "a_scale"), bs = imp.const_doubles(4, "b_scale"), ys = imp.const_doubles(6, "y_scale");
  if (as.size() != 1 || bs.size() != 1 || ys.size() != 1) imp.fail("per-axis scales are not supported in QLinearMatMul");
  int64_t yzp = imp.const_ints(7, "y_zero_point").at(0);
  const int yt = imp.in(7).onnx_type;
  if (yt != kOInt8 && yt != kOUint8) imp.fail("y_zero_point must be int8 or uint8");
  TVal a = signed8(imp, imp.plain(imp.in(0)), imp.in(0).onnx_type, &azp);
  TVal b = signed8(imp, imp.plain(imp.in(3)), imp.in(3).onnx_type, &bzp);
  if (yt == kOUint8) yzp -= 128;
  Shape os;
  TVal acc = matmul(imp, a, b, azp, bzp, &os);
  TVal y = rescale_to(imp, acc, {as[0] * bs[0] / ys[0]}, yzp, DType::kInt8, 0);
  if (yt == kOUint8) y = imp.add(imp.cast(y, DType::kInt32), imp.scalar(DType::kInt32, 128, y.rank()));
  imp.set_out(0, imp.reshape(y, os), {}, yt);
}

// MatMulInteger: (A - a_zero_point) x (B - b_zero_point) accumulated in int32. Per-row / per-column
// zero points that differ have no TOSA form (MATMUL takes one zero point per operand).
void lower_MatMulInteger(Importer& imp, const onnx::NodeProto&) {
  auto zp = [&](int i, const char* what) -> int64_t {
    if (!imp.has_input(i)) return 0;
    auto z = imp.const_ints(i, what);
    for (int64_t v : z)
      if (v != z.at(0)) imp.fail(std::string(what) + " values that differ are not supported (TOSA's MATMUL has one zero point per operand)");
    return z.at(0);
  };
  int64_t azp = zp(2, "a_zero_point"), bzp = zp(3, "b_zero_point");
  TVal a = signed8(imp, imp.plain(imp.in(0)), imp.in(0).onnx_type, &azp);
  TVal b = signed8(imp, imp.plain(imp.in(1)), imp.in(1).onnx_type, &bzp);
  Shape os;
  TVal acc = matmul(imp, a, b, azp, bzp, &os);
  imp.set_out(0, imp.reshape(acc, os), {}, kOInt32);
}

namespace {

// ---- Resize as a product with interpolation matrices ------------------------------------------------
//
// What TOSA RESIZE cannot express (cubic interpolation, antialiasing, tf_crop_and_resize, axes other
// than H and W) is separable: along each resized axis the output is a fixed linear combination of
// input samples, so the axis is resized by a MATMUL with a constant [in, out] matrix whose columns
// hold ONNX's interpolation coefficients, computed here as ONNX's reference implementation does
// (neighbours of the sampling point in the edge-padded input, exclude_outside renormalising).
// tf_crop_and_resize's samples outside the input take extrapolation_value (a SELECT at the end).
struct ResizeAxis {
  std::vector<double> weights;  // [out][in]
  std::vector<bool> outside;    // per output sample (tf_crop_and_resize)
};

double cubic_kernel(double x, double a) {
  x = std::fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

ResizeAxis resize_axis(Importer& imp, int64_t in, int64_t out, double scale, const std::string& mode,
                       const std::string& coord, const std::string& nearest, bool antialias, double cubic_a,
                       bool exclude_outside, double roi_start, double roi_end) {
  ResizeAxis r;
  r.weights.assign(static_cast<size_t>(out * in), 0.0);
  r.outside.assign(static_cast<size_t>(out), false);
  const double out_width = scale * static_cast<double>(in);
  for (int64_t x = 0; x < out; ++x) {
    const double xd = static_cast<double>(x);
    double xo;
    if (coord == "align_corners") {
      xo = out_width == 1 ? 0.0 : xd * static_cast<double>(in - 1) / (out_width - 1);
    } else if (coord == "asymmetric") {
      xo = xd / scale;
    } else if (coord == "tf_crop_and_resize") {
      xo = out == 1 ? (roi_end - roi_start) * static_cast<double>(in - 1) / 2
                    : xd * (roi_end - roi_start) * static_cast<double>(in - 1) / static_cast<double>(out - 1);
      xo += roi_start * static_cast<double>(in - 1);
      if (xo < 0 || xo > static_cast<double>(in - 1)) {
        r.outside[static_cast<size_t>(x)] = true;
        continue;
      }
    } else if (coord == "pytorch_half_pixel") {
      xo = out_width == 1 ? -0.5 : (xd + 0.5) / scale - 0.5;
    } else if (coord == "half_pixel") {
      xo = (xd + 0.5) / scale - 0.5;
    } else if (coord == "half_pixel_symmetric") {
      const double adjustment = static_cast<double>(out) / out_width, center = static_cast<double>(in) / 2;
      xo = center * (1 - adjustment) + (xd + 0.5) / scale - 0.5;
    } else if (coord == "tf_half_pixel_for_nn") {
      xo = (xd + 0.5) / scale;
    } else {
      imp.fail("coordinate_transformation_mode '" + coord + "' is not supported", ErrorCode::kInvalidArgument);
    }
    const double fl = std::floor(xo);
    const double ratio = xo == fl ? 1.0 : xo - fl;
    std::vector<double> c;
    if (mode == "nearest") {
      if (xo == fl) c = {0, 1};
      else if (nearest == "round_prefer_floor") c = {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};
      else if (nearest == "round_prefer_ceil") c = {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
      else if (nearest == "floor") c = {1, 0};
      else if (nearest == "ceil") c = {0, 1};
      else imp.fail("nearest_mode '" + nearest + "' is not one of round_prefer_floor, round_prefer_ceil, floor, ceil", ErrorCode::kInvalidArgument);
    } else if (mode == "linear") {
      if (antialias) {
        const double sc = std::min(scale, 1.0);
        const int64_t start = static_cast<int64_t>(std::floor(-1 / sc) + 1), footprint = 2 - 2 * start;
        double sum = 0;
        for (int64_t i = start; i < start + footprint; ++i) {
          c.push_back(std::clamp(1 - std::fabs((static_cast<double>(i) - ratio) * sc), 0.0, 1.0));
          sum += c.back();
        }
        for (double& v : c) v /= sum;
      } else {
        c = {1 - ratio, ratio};
      }
    } else {  // cubic
      if (antialias) {
        const double sc = std::min(scale, 1.0);
        const int64_t start = static_cast<int64_t>(std::floor(-2 / sc) + 1), end = 2 - start;
        double sum = 0;
        for (int64_t i = start; i < end; ++i) {
          c.push_back(cubic_kernel(sc * (static_cast<double>(i) - ratio), cubic_a));
          sum += c.back();
        }
        for (double& v : c) v /= sum;
      } else {
        c = {cubic_kernel(ratio + 1, cubic_a), cubic_kernel(ratio, cubic_a), cubic_kernel(1 - ratio, cubic_a),
             cubic_kernel(2 - ratio, cubic_a)};
      }
    }
    // The n nearest indices of the edge-padded input (ties to the smaller index), in order.
    const int64_t n = static_cast<int64_t>(c.size()), pad = (n + 1) / 2, limit = in + 2 * pad;
    const double xp = xo + static_cast<double>(pad);
    std::vector<int64_t> cand;
    for (int64_t i = static_cast<int64_t>(std::floor(xp)) - n - 1; i <= static_cast<int64_t>(std::floor(xp)) + n + 1; ++i)
      if (i >= 0 && i < limit) cand.push_back(i);
    std::stable_sort(cand.begin(), cand.end(), [&](int64_t a, int64_t b) {
      const double da = std::fabs(xp - static_cast<double>(a)), db = std::fabs(xp - static_cast<double>(b));
      return da != db ? da < db : a < b;
    });
    if (static_cast<int64_t>(cand.size()) < n) imp.fail("the input is too small for this interpolation", ErrorCode::kInvalidArgument);
    cand.resize(static_cast<size_t>(n));
    std::sort(cand.begin(), cand.end());
    if (exclude_outside) {
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        const int64_t idx = cand[static_cast<size_t>(k)] - pad;
        if (idx < 0 || idx >= in) c[static_cast<size_t>(k)] = 0;
        sum += c[static_cast<size_t>(k)];
      }
      if (sum != 0)
        for (double& v : c) v /= sum;
    }
    for (int64_t k = 0; k < n; ++k) {
      const int64_t idx = std::clamp<int64_t>(cand[static_cast<size_t>(k)] - pad, 0, in - 1);
      r.weights[static_cast<size_t>(x * in + idx)] += c[static_cast<size_t>(k)];
    }
  }
  return r;
}

void resize_by_matrices(Importer& imp, const Shape& out, const std::vector<double>& scale, const std::string& mode,
                        const std::string& coord, const std::string& nearest, const std::vector<double>& roi) {
  const OVal& x = imp.in(0);
  const bool antialias = imp.attr_int("antialias", 0) != 0;
  const double cubic_a = imp.attr_float("cubic_coeff_a", -0.75f);
  const bool exclude_outside = imp.attr_int("exclude_outside", 0) != 0;
  const double extrapolation = imp.attr_float("extrapolation_value", 0.f);
  TVal v = imp.plain(x);
  if (!is_float(v.dtype())) imp.fail("this Resize (interpolation matrices) needs floating-point data");
  const int rank = static_cast<int>(x.shape.size());
  TVal mask;
  bool any_outside = false;
  for (int a = 0; a < rank; ++a) {
    const int64_t in = x.shape[static_cast<size_t>(a)], o = out[static_cast<size_t>(a)];
    const size_t ua = static_cast<size_t>(a);
    const bool crop = coord == "tf_crop_and_resize";
    if (o == in && scale[ua] == 1.0 && !crop) continue;
    ResizeAxis ax = resize_axis(imp, in, o, scale[ua], mode, coord, nearest, antialias, cubic_a, exclude_outside,
                                crop ? roi.at(ua) : 0.0, crop ? roi.at(ua + static_cast<size_t>(rank)) : 1.0);
    // Identity matrices (an axis whose samples land exactly on the input's) need no MATMUL.
    bool identity = o == in && !crop;
    for (int64_t i = 0; identity && i < o; ++i)
      for (int64_t j = 0; j < in; ++j)
        if (ax.weights[static_cast<size_t>(i * in + j)] != (i == j ? 1.0 : 0.0)) identity = false;
    if (!identity) {
      const Shape cur = v.shape();
      std::vector<int64_t> perm;
      for (int k = 0; k < rank; ++k)
        if (k != a) perm.push_back(k);
      perm.push_back(a);
      TVal t = imp.transpose(v, perm);
      const int64_t rows = shape_elements(cur) / in;
      std::vector<double> wt(static_cast<size_t>(in * o));  // [in, out]
      for (int64_t i = 0; i < o; ++i)
        for (int64_t j = 0; j < in; ++j) wt[static_cast<size_t>(j * o + i)] = ax.weights[static_cast<size_t>(i * in + j)];
      TVal w = imp.const_tensor(Tensor::from_doubles({v.dtype(), {1, in, o}}, wt));
      TVal zp = imp.scalar(v.dtype(), 0, 1);
      TVal y = imp.emit(Op::MATMUL, {imp.reshape(t, {1, rows, in}), w, zp, zp});
      Shape ts = t.shape();
      ts.back() = o;
      v = imp.transpose(imp.reshape(y, ts), inverse_perm(perm));
    }
    if (std::find(ax.outside.begin(), ax.outside.end(), true) != ax.outside.end()) {
      Shape ms(static_cast<size_t>(rank), 1);
      ms[ua] = o;
      std::vector<int64_t> bits(ax.outside.begin(), ax.outside.end());
      TVal m = imp.const_tensor(Tensor::from_ints({DType::kBool, ms}, bits));
      mask = any_outside ? imp.emit(Op::LOGICAL_OR, {mask, m}) : m;
      any_outside = true;
    }
  }
  if (any_outside) v = imp.emit(Op::SELECT, {mask, imp.scalar(v.dtype(), extrapolation, rank), v});
  imp.set_out(0, v, {}, x.onnx_type);
}

void resize(Importer& imp, const std::vector<double>& scales_in, const std::vector<int64_t>& sizes_in, std::string mode,
            std::string coord, std::string nearest, const std::vector<double>& roi = {}) {
  const OVal& x = imp.in(0);
  const size_t rank = x.shape.size();
  Shape out = x.shape;
  std::vector<double> scale(rank, 1.0);
  if (!sizes_in.empty()) {
    if (sizes_in.size() != rank) imp.fail("sizes must have " + std::to_string(rank) + " values", ErrorCode::kInvalidArgument);
    for (size_t i = 0; i < rank; ++i) {
      out[i] = sizes_in[i];
      scale[i] = static_cast<double>(sizes_in[i]) / static_cast<double>(x.shape[i]);
    }
  } else {
    if (scales_in.size() != rank) imp.fail("scales must have " + std::to_string(rank) + " values", ErrorCode::kInvalidArgument);
    for (size_t i = 0; i < rank; ++i) {
      if (!(scales_in[i] > 0)) imp.fail("scales must be positive", ErrorCode::kInvalidArgument);
      scale[i] = scales_in[i];
      out[i] = static_cast<int64_t>(std::floor(static_cast<double>(x.shape[i]) * scales_in[i]));
    }
  }
  for (int64_t o : out)
    if (o < 1) imp.fail("the output would be empty", ErrorCode::kInvalidArgument);
  if (mode != "nearest" && mode != "linear" && mode != "cubic") imp.fail("mode '" + mode + "' is not one of nearest, linear, cubic", ErrorCode::kInvalidArgument);
  if (coord == "tf_crop_and_resize" && roi.size() != 2 * rank)
    imp.fail("tf_crop_and_resize needs a constant roi of " + std::to_string(2 * rank) + " values", ErrorCode::kInvalidArgument);
  // TOSA RESIZE covers nearest and bilinear over H and W of 4-D data; the rest are matrix products.
  const bool antialias = imp.attr_int("antialias", 0) != 0 && mode != "nearest";
  if (mode == "cubic" || antialias || coord == "tf_crop_and_resize" || coord == "half_pixel_symmetric" || rank != 4 ||
      out[0] != x.shape[0] || out[1] != x.shape[1] || (mode != "nearest" && imp.attr_int("exclude_outside", 0) != 0)) {
    resize_by_matrices(imp, out, scale, mode, coord, nearest, roi);
    return;
  }
  std::vector<int64_t> sc, off, border;
  for (int d = 2; d < 4; ++d) {
    const int64_t in = x.shape[static_cast<size_t>(d)], o = out[static_cast<size_t>(d)];
    if (o < 1) imp.fail("the output would be empty", ErrorCode::kInvalidArgument);
    int64_t n, q;
    if (coord == "align_corners" && sizes_in.empty() && o > 1 && in > 1) {
      // With scales, ONNX's length_resized is length_original * scale, not the (floored) output
      // length: x_original = x_resized * (in - 1) / (in * scale - 1).
      auto [p, qq] = rational((static_cast<double>(in) * scale[static_cast<size_t>(d)] - 1.0) / static_cast<double>(in - 1), 1024);
      n = p;
      q = qq;
    } else if (coord == "align_corners") {
      n = std::max<int64_t>(o - 1, 1);
      q = std::max<int64_t>(in - 1, o == 1 ? 1 : 0);
      if (q == 0) q = 1;
    } else if (!sizes_in.empty()) {
      n = o;
      q = in;
    } else {
      auto [p, qq] = rational(scale[static_cast<size_t>(d)], 1024);
      n = p;
      q = qq;
    }
    const int64_t g = std::gcd(n, q);
    n /= g;
    q /= g;
    // Every mode is written with doubled scale so that half-pixel offsets are integers.
    int64_t sn = 2 * n, sd = 2 * q, ofs = 0;
    if (coord == "half_pixel" || (coord == "pytorch_half_pixel" && o > 1)) ofs = q - n;
    else if (coord == "pytorch_half_pixel") ofs = -n;
    else if (coord == "align_corners" && o == 1) { sd = 0; ofs = 0; }
    else if (coord != "asymmetric" && coord != "align_corners" && coord != "tf_half_pixel_for_nn")
      imp.fail("coordinate_transformation_mode '" + coord + "' is not supported", ErrorCode::kInvalidArgument);
    if (coord == "tf_half_pixel_for_nn") ofs = q;  // x_in = (x_out + 0.5) / scale
    if (sd == 0) sd = 2;  // a single output sample reads x_in = 0
    if (mode == "nearest") {
      // TOSA rounds half up; shift the sample point for ONNX's other rounding modes.
      if (nearest == "round_prefer_floor") ofs -= 1;
      else if (nearest == "floor") ofs -= n;
      else if (nearest == "ceil") ofs += n - 1;
      else if (nearest != "round_prefer_ceil") imp.fail("nearest_mode '" + nearest + "' is not one of round_prefer_floor, round_prefer_ceil, floor, ceil", ErrorCode::kInvalidArgument);
    }
    sc.push_back(sn);
    sc.push_back(sd);
    off.push_back(ofs);
    border.push_back((o - 1) * sd - (in - 1) * sn + ofs);
  }
  TVal in = imp.in_layout(x, kNhwc);
  TVal y = imp.emit(Op::RESIZE, {in, imp.shape_const(sc), imp.shape_const(off), imp.shape_const(border)},
                    {{"mode", static_cast<int64_t>(mode == "nearest" ? ResizeMode::kNearest : ResizeMode::kBilinear)}});
  imp.set_out(0, y, kNhwc, x.onnx_type);
}

}  // namespace

void lower_Resize(Importer& imp, const onnx::NodeProto&) {
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  std::string coord = "half_pixel", nearest = "round_prefer_floor";
  if (imp.opset() < 11) {
    scales = imp.const_doubles(1, "scales");
    coord = "asymmetric";
  } else {
    if (imp.has_input(3)) sizes = imp.const_ints(3, "sizes");
    else if (imp.has_input(2)) scales = imp.const_doubles(2, "scales");
    if (!sizes.empty() && !scales.empty()) imp.fail("give scales or sizes, not both", ErrorCode::kInvalidArgument);
    if (imp.has_input(2) && imp.has_input(3) && shape_elements(imp.in(2).shape) > 0 && !sizes.empty())
      imp.fail("give scales or sizes, not both", ErrorCode::kInvalidArgument);
    if (sizes.empty() && scales.empty()) imp.fail("scales or sizes is required", ErrorCode::kInvalidArgument);
    coord = imp.attr_str("coordinate_transformation_mode", "half_pixel");
    nearest = imp.attr_str("nearest_mode", "round_prefer_floor");
    if (imp.attr_str("keep_aspect_ratio_policy", "stretch") != "stretch") imp.fail("keep_aspect_ratio_policy other than stretch is not supported");
    if (coord == "tf_crop_and_resize" && imp.has_input(1)) roi = imp.const_doubles(1, "roi");
    // axes (opset 18): scales / sizes / roi name only these axes; the others keep their size.
    if (auto axes = imp.attr_ints("axes")) {
      const int64_t rank = static_cast<int64_t>(imp.in(0).shape.size());
      std::vector<double> fs(static_cast<size_t>(rank), 1.0), froi;
      std::vector<int64_t> fz(imp.in(0).shape.begin(), imp.in(0).shape.end());
      if (!roi.empty()) {
        froi.assign(static_cast<size_t>(rank), 0.0);
        froi.resize(static_cast<size_t>(2 * rank), 1.0);
      }
      const size_t na = axes->size();
      if ((!scales.empty() && scales.size() != na) || (!sizes.empty() && sizes.size() != na) || (!roi.empty() && roi.size() != 2 * na))
        imp.fail("scales, sizes and roi must have one value (roi: two) per entry of axes", ErrorCode::kInvalidArgument);
      for (size_t k = 0; k < na; ++k) {
        const size_t a = static_cast<size_t>(norm_axis(imp, (*axes)[k], rank, "axes"));
        if (!scales.empty()) fs[a] = scales[k];
        if (!sizes.empty()) fz[a] = sizes[k];
        if (!roi.empty()) {
          froi[a] = roi[k];
          froi[a + static_cast<size_t>(rank)] = roi[k + na];
        }
      }
      if (!scales.empty()) scales = fs;
      if (!sizes.empty()) sizes = fz;
      roi = froi;
    }
  }
  resize(imp, scales, sizes, imp.attr_str("mode", "nearest"), coord, imp.opset() < 11 ? "floor" : nearest, roi);
}

void lower_Upsample(Importer& imp, const onnx::NodeProto&) {
  std::vector<double> scales;
  if (imp.opset() < 9) {
    auto s = imp.attr_floats("scales").value_or(std::vector<float>{});
    scales.assign(s.begin(), s.end());
  } else {
    scales = imp.const_doubles(1, "scales");
  }
  resize(imp, scales, {}, imp.attr_str("mode", "nearest"), "asymmetric", "floor");
}


// ---- GridSample (opset 16, 4-D) ---------------------------------------------------------------------
//
// X [N, C, H, W] is read through TOSA GATHER as values [N, H*W, C]; each output point of grid
// [N, Ho, Wo, 2] becomes a row index y * W + x per tap. The sampling point is unnormalized
// (align_corners: (g + 1) / 2 * (size - 1), else ((g + 1) * size - 1) / 2); border and reflection
// padding move it into the image first (for bicubic, each of the 16 taps is moved instead); taps
// outside the image read 0 under zeros padding (a mask on the tap's weight). Bilinear takes 4 taps,
// nearest 1 (rounded half to even), bicubic 16 with A = -0.75, as PyTorch's grid_sample.
void lower_GridSample(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  const OVal& grid = imp.in(1);
  if (x.shape.size() != 4) imp.fail("only 4-D input [N, C, H, W] is supported (GridSample of opset 16)");
  const int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], w = x.shape[3];
  if (grid.shape.size() != 4 || grid.shape[0] != n || grid.shape[3] != 2)
    imp.fail("grid must be [N, H_out, W_out, 2] with N = " + std::to_string(n) + ", got " + shape_str(grid.shape), ErrorCode::kInvalidArgument);
  const std::string mode = imp.attr_str("mode", "bilinear"), padding = imp.attr_str("padding_mode", "zeros");
  const bool align = imp.attr_int("align_corners", 0) != 0;
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic")
    imp.fail("mode '" + mode + "' is not one of bilinear, nearest, bicubic", ErrorCode::kInvalidArgument);
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    imp.fail("padding_mode '" + padding + "' is not one of zeros, border, reflection", ErrorCode::kInvalidArgument);
  TVal vals = imp.plain(x);
  if (!is_float(vals.dtype())) imp.fail("GridSample of integer data is not supported");
  const DType dt = DType::kFp32;
  vals = imp.reshape(imp.transpose(imp.cast(vals, dt), {0, 2, 3, 1}), {n, h * w, c});
  const int64_t ho = grid.shape[1], wo = grid.shape[2], p = ho * wo;
  TVal g = imp.cast(imp.plain(grid), dt);
  auto k = [&](double v) { return imp.scalar(dt, v, 2); };
  auto coord = [&](int64_t comp, int64_t size) {
    TVal gc = imp.reshape(imp.slice(g, {0, 0, 0, comp}, {n, ho, wo, 1}), {n, p});
    if (align) return imp.mul(imp.add(gc, k(1)), k(0.5 * static_cast<double>(size - 1)));
    return imp.mul(imp.sub(imp.mul(imp.add(gc, k(1)), k(static_cast<double>(size))), k(1)), k(0.5));
  };
  auto floor_ = [&](const TVal& v) { return imp.emit(Op::FLOOR, {v}); };
  // Reflection of a coordinate into [lo, hi] (PyTorch's reflect_coordinates), then clipped.
  auto reflect = [&](const TVal& v, int64_t size) {
    const double lo = align ? 0.0 : -0.5, hi = align ? static_cast<double>(size - 1) : static_cast<double>(size) - 0.5;
    const double span = hi - lo;
    if (span <= 0) return imp.mul(v, k(0));
    TVal a = imp.emit(Op::ABS, {imp.sub(v, k(lo))});
    TVal flips = floor_(imp.mul(a, k(1.0 / span)));
    TVal extra = imp.sub(a, imp.mul(flips, k(span)));
    TVal even = imp.emit(Op::EQUAL, {imp.sub(flips, imp.mul(floor_(imp.mul(flips, k(0.5))), k(2))), k(0)});
    TVal r = imp.emit(Op::SELECT, {even, imp.add(extra, k(lo)), imp.add(imp.sub(k(span), extra), k(lo))});
    return imp.clamp(r, 0, static_cast<double>(size - 1));
  };
  auto pad_coord = [&](const TVal& v, int64_t size) {
    if (padding == "border") return imp.clamp(v, 0, static_cast<double>(size - 1));
    if (padding == "reflection") return reflect(v, size);
    return v;
  };
  // One tap at integral float coordinates (xi, yi) with weight wt [N, P]: [N, P, C].
  auto tap = [&](TVal xi, TVal yi, TVal wt) {
    if (padding == "zeros") {
      TVal inside = imp.emit(Op::LOGICAL_AND,
                             {imp.emit(Op::LOGICAL_AND, {imp.emit(Op::GREATER_EQUAL, {xi, k(0)}), imp.emit(Op::GREATER, {k(static_cast<double>(w)), xi})}),
                              imp.emit(Op::LOGICAL_AND, {imp.emit(Op::GREATER_EQUAL, {yi, k(0)}), imp.emit(Op::GREATER, {k(static_cast<double>(h)), yi})})});
      wt = imp.emit(Op::SELECT, {inside, wt, k(0)});
    }
    xi = imp.clamp(xi, 0, static_cast<double>(w - 1));
    yi = imp.clamp(yi, 0, static_cast<double>(h - 1));
    TVal idx = imp.cast(imp.add(imp.mul(yi, k(static_cast<double>(w))), xi), DType::kInt32);
    TVal got = imp.emit(Op::GATHER, {vals, idx});
    return imp.mul(got, imp.reshape(wt, {n, p, 1}));
  };
  TVal gx = coord(0, w), gy = coord(1, h);
  TVal y;
  if (mode == "bicubic") {
    const double a = -0.75;
    auto cubic = [&](const TVal& t) {  // for |t| <= 1 and 1 < |t| < 2 as two polynomials
      TVal at = imp.emit(Op::ABS, {t});
      TVal near = imp.add(imp.mul(imp.mul(imp.sub(imp.mul(at, k(a + 2)), k(a + 3)), at), at), k(1));
      TVal far = imp.sub(imp.mul(imp.add(imp.mul(imp.sub(imp.mul(at, k(a)), k(5 * a)), at), k(8 * a)), at), k(4 * a));
      return imp.emit(Op::SELECT, {imp.emit(Op::GREATER, {at, k(1)}), far, near});
    };
    TVal x0 = floor_(gx), y0 = floor_(gy);
    TVal tx = imp.sub(gx, x0), ty = imp.sub(gy, y0);
    std::vector<TVal> wx, wy, xs, ys;
    for (int i = -1; i <= 2; ++i) {
      wx.push_back(cubic(imp.sub(tx, k(i))));
      wy.push_back(cubic(imp.sub(ty, k(i))));
      xs.push_back(pad_coord(imp.add(x0, k(i)), w));
      ys.push_back(pad_coord(imp.add(y0, k(i)), h));
    }
    for (size_t i = 0; i < 4; ++i)
      for (size_t j = 0; j < 4; ++j) {
        TVal t = tap(xs[j], ys[i], imp.mul(wy[i], wx[j]));
        y = y.type.rank() ? imp.add(y, t) : t;
      }
  } else {
    gx = pad_coord(gx, w);
    gy = pad_coord(gy, h);
    if (mode == "nearest") {
      // CAST to int32 rounds half to even, as nearbyint does.
      TVal xr = imp.cast(imp.cast(gx, DType::kInt32), dt), yr = imp.cast(imp.cast(gy, DType::kInt32), dt);
      y = tap(xr, yr, imp.add(imp.mul(gx, k(0)), k(1)));
    } else {
      TVal x0 = floor_(gx), y0 = floor_(gy);
      TVal fx = imp.sub(gx, x0), fy = imp.sub(gy, y0);
      TVal x1 = imp.add(x0, k(1)), y1 = imp.add(y0, k(1));
      TVal ex = imp.sub(k(1), fx), ey = imp.sub(k(1), fy);
      y = imp.add(imp.add(tap(x0, y0, imp.mul(ey, ex)), tap(x1, y0, imp.mul(ey, fx))),
                  imp.add(tap(x0, y1, imp.mul(fy, ex)), tap(x1, y1, imp.mul(fy, fx))));
    }
  }
  y = imp.cast(imp.reshape(y, {n, ho, wo, c}), imp.plain(x).dtype());
  imp.set_out(0, y, {0, 2, 3, 1}, x.onnx_type);
}


// MaxUnpool: zeros of the output shape with X's values written at the flat positions I holds
// (as MaxPool's Indices give them): one TOSA SCATTER over the flattened output. TOSA requires the
// positions to be distinct (a MaxPool whose windows do not overlap gives distinct ones).
void lower_MaxUnpool(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  const OVal& ind = imp.in(1);
  if (x.shape.size() < 3) imp.fail("the input must be [N, C, spatial...]", ErrorCode::kInvalidArgument);
  if (ind.shape != x.shape) imp.fail("I has shape " + shape_str(ind.shape) + ", X " + shape_str(x.shape) + "; they must match", ErrorCode::kInvalidArgument);
  const size_t sp = x.shape.size() - 2;
  const auto kernel = imp.attr_ints("kernel_shape").value_or(std::vector<int64_t>{});
  if (kernel.size() != sp) imp.fail("kernel_shape must have one value per spatial dimension", ErrorCode::kInvalidArgument);
  const auto strides = imp.attr_ints("strides").value_or(std::vector<int64_t>(sp, 1));
  const auto pads = imp.attr_ints("pads").value_or(std::vector<int64_t>(2 * sp, 0));
  if (strides.size() != sp || pads.size() != 2 * sp) imp.fail("strides and pads must have one (pads: two) value per spatial dimension", ErrorCode::kInvalidArgument);
  // The indices are positions in the unpooled shape the attributes give; an explicit output_shape
  // (larger, as when the pooled input had odd sizes) keeps each value at the same coordinates.
  Shape dflt = x.shape;
  for (size_t d = 0; d < sp; ++d) dflt[2 + d] = (x.shape[2 + d] - 1) * strides[d] - (pads[d] + pads[sp + d]) + kernel[d];
  Shape out = dflt;
  if (imp.has_input(2)) {
    auto os = imp.const_ints(2, "output_shape");
    if (os.size() != x.shape.size() || os[0] != x.shape[0] || os[1] != x.shape[1])
      imp.fail("output_shape " + shape_str(os) + " must keep N and C of " + shape_str(x.shape), ErrorCode::kInvalidArgument);
    out.assign(os.begin(), os.end());
    for (size_t d = 2; d < out.size(); ++d)
      if (out[d] < dflt[d]) imp.fail("output_shape " + shape_str(out) + " is smaller than the unpooled shape " + shape_str(dflt), ErrorCode::kInvalidArgument);
  }
  for (int64_t d : out)
    if (d < 1) imp.fail("the output shape " + shape_str(out) + " is empty", ErrorCode::kInvalidArgument);
  const int64_t total = shape_elements(out), m = shape_elements(x.shape);
  TVal vals = imp.const_tensor(Tensor::zeros({imp.plain(x).dtype(), {1, total, 1}}));
  TVal idx = imp.reshape(imp.cast(imp.plain(ind), DType::kInt32), {1, m});
  if (out != dflt) {
    // Coordinates in the default shape (innermost first), re-flattened in the output shape.
    TVal rest = idx, flat = imp.scalar(DType::kInt32, 0, 2);
    int64_t step = 1;
    for (size_t d = out.size(); d-- > 2;) {
      TVal dd = imp.scalar(DType::kInt32, static_cast<double>(dflt[d]), 2);
      TVal q = imp.emit(Op::INTDIV, {rest, dd});
      TVal coord = imp.sub(rest, imp.mul(q, dd));
      flat = imp.add(flat, imp.mul(coord, imp.scalar(DType::kInt32, static_cast<double>(step), 2)));
      step *= out[d];
      rest = q;
    }
    idx = imp.add(flat, imp.mul(rest, imp.scalar(DType::kInt32, static_cast<double>(step), 2)));
  }
  TVal y = imp.emit(Op::SCATTER, {vals, idx, imp.reshape(imp.plain(x), {1, m, 1})});
  imp.set_out(0, imp.reshape(y, out), {}, x.onnx_type);
}


// ---- RoiAlign (opset 10/16) -------------------------------------------------------------------------
//
// Each region of interest (run-time boxes and batch indices) is sampled on a fixed grid: output_height
// x output_width bins of sampling_ratio^2 points (sampling_ratio 0, adaptive to each box's size, has
// no static form). A point's y is start + bin * (ph + (iy + 0.5) / grid), a [R, 1] x [1, K] product;
// points beyond [-1, size] read 0; inside, the bilinear neighbours are clamped as ONNX Runtime does
// (y < 0 reads row 0; from row size - 1 on, both neighbours are the last row). The four neighbours of
// every point are one GATHER each from X as [1, N*H*W, C] rows; "avg" sums the weighted neighbours and
// averages over the bin, "max" takes the largest weighted neighbour, then the largest over the bin.
void lower_RoiAlign(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  const OVal& rois = imp.in(1);
  const OVal& bidx = imp.in(2);
  if (x.shape.size() != 4) imp.fail("X must be [N, C, H, W]", ErrorCode::kInvalidArgument);
  const int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], w = x.shape[3];
  if (rois.shape.size() != 2 || rois.shape[1] != 4) imp.fail("rois must be [num_rois, 4]", ErrorCode::kInvalidArgument);
  const int64_t r = rois.shape[0];
  if (bidx.shape != Shape{r}) imp.fail("batch_indices must be [" + std::to_string(r) + "]", ErrorCode::kInvalidArgument);
  const std::string mode = imp.attr_str("mode", "avg");
  if (mode != "avg" && mode != "max") imp.fail("mode '" + mode + "' is not avg or max", ErrorCode::kInvalidArgument);
  const int64_t oh = imp.attr_int("output_height", 1), ow = imp.attr_int("output_width", 1);
  const int64_t ratio = imp.attr_int("sampling_ratio", 0);
  if (oh < 1 || ow < 1) imp.fail("output_height and output_width must be >= 1", ErrorCode::kInvalidArgument);
  if (ratio <= 0)
    imp.fail("sampling_ratio 0 (as many points as each box spans, decided by the boxes at run time) has no static "
             "form; export with a fixed sampling_ratio");
  const double scale = imp.attr_float("spatial_scale", 1.f);
  const bool half_pixel = imp.opset() >= 16 && imp.attr_str("coordinate_transformation_mode", "half_pixel") == "half_pixel";
  TVal xv = imp.plain(x);
  if (!is_float(xv.dtype())) imp.fail("X must be floating point");
  const DType dt = DType::kFp32;
  TVal vals = imp.reshape(imp.transpose(imp.cast(xv, dt), {0, 2, 3, 1}), {1, n * h * w, c});
  TVal box = imp.cast(imp.plain(rois), dt);
  auto col = [&](int64_t k) { return imp.mul(imp.slice(box, {0, k}, {r, 1}), imp.scalar(dt, scale, 2)); };  // [R, 1]
  const double off = half_pixel ? 0.5 : 0.0;
  TVal x0 = imp.sub(col(0), imp.scalar(dt, off, 2)), y0 = imp.sub(col(1), imp.scalar(dt, off, 2));
  TVal x1 = imp.sub(col(2), imp.scalar(dt, off, 2)), y1 = imp.sub(col(3), imp.scalar(dt, off, 2));
  TVal rw = imp.sub(x1, x0), rh = imp.sub(y1, y0);
  if (!half_pixel) {
    rw = imp.emit(Op::MAXIMUM, {rw, imp.scalar(dt, 1, 2)});
    rh = imp.emit(Op::MAXIMUM, {rh, imp.scalar(dt, 1, 2)});
  }
  // Sample coordinates along one axis: [R, out * ratio] (bin-major).
  auto samples = [&](const TVal& start, const TVal& len, int64_t out, int64_t size, TVal* lo, TVal* hi, TVal* frac, TVal* valid) {
    std::vector<double> k;
    for (int64_t p = 0; p < out; ++p)
      for (int64_t i = 0; i < ratio; ++i) k.push_back((static_cast<double>(p) + (static_cast<double>(i) + 0.5) / static_cast<double>(ratio)) / static_cast<double>(out));
    const int64_t kn = static_cast<int64_t>(k.size());
    TVal kc = imp.const_tensor(Tensor::from_doubles({dt, {1, kn}}, k));
    TVal v = imp.add(start, imp.mul(len, kc));  // [R, K]
    const double fs = static_cast<double>(size);
    *valid = imp.emit(Op::LOGICAL_AND, {imp.emit(Op::GREATER_EQUAL, {v, imp.scalar(dt, -1, 2)}), imp.emit(Op::GREATER_EQUAL, {imp.scalar(dt, fs, 2), v})});
    v = imp.emit(Op::MAXIMUM, {v, imp.scalar(dt, 0, 2)});
    TVal fl = imp.emit(Op::FLOOR, {v});
    TVal last = imp.emit(Op::GREATER_EQUAL, {fl, imp.scalar(dt, fs - 1, 2)});
    *lo = imp.emit(Op::SELECT, {last, imp.scalar(dt, fs - 1, 2), fl});
    *hi = imp.emit(Op::SELECT, {last, imp.scalar(dt, fs - 1, 2), imp.add(fl, imp.scalar(dt, 1, 2))});
    *frac = imp.emit(Op::SELECT, {last, imp.scalar(dt, 0, 2), imp.sub(v, fl)});
  };
  TVal ylo, yhi, ly, yok, xlo, xhi, lx, xok;
  samples(y0, rh, oh, h, &ylo, &yhi, &ly, &yok);
  samples(x0, rw, ow, w, &xlo, &xhi, &lx, &xok);
  const int64_t ky = oh * ratio, kx = ow * ratio, s = ky * kx;
  // [R, Ky, 1] and [R, 1, Kx] combined into [R, Ky, Kx].
  auto ycol = [&](const TVal& v) { return imp.reshape(v, {r, ky, 1}); };
  auto xrow = [&](const TVal& v) { return imp.reshape(v, {r, 1, kx}); };
  TVal ok = imp.emit(Op::LOGICAL_AND, {ycol(yok), xrow(xok)});
  TVal base = imp.mul(imp.cast(imp.reshape(imp.cast(imp.plain(bidx), DType::kInt32), {r, 1, 1}), dt), imp.scalar(dt, static_cast<double>(h * w), 3));
  TVal hy = imp.sub(imp.scalar(dt, 1, 2), ly), hx = imp.sub(imp.scalar(dt, 1, 2), lx);
  auto corner = [&](const TVal& yy, const TVal& xx, const TVal& wy, const TVal& wx) {
    TVal idx = imp.add(imp.add(base, imp.mul(ycol(yy), imp.scalar(dt, static_cast<double>(w), 3))), xrow(xx));
    TVal got = imp.emit(Op::GATHER, {vals, imp.reshape(imp.cast(idx, DType::kInt32), {1, r * s})});  // [1, R*S, C]
    TVal wt = imp.emit(Op::SELECT, {ok, imp.mul(ycol(wy), xrow(wx)), imp.scalar(dt, 0, 3)});
    return imp.mul(imp.reshape(got, {r, s, c}), imp.reshape(wt, {r, s, 1}));
  };
  std::vector<TVal> parts = {corner(ylo, xlo, hy, hx), corner(ylo, xhi, hy, lx), corner(yhi, xlo, ly, hx), corner(yhi, xhi, ly, lx)};
  TVal v;
  if (mode == "avg") {
    v = imp.add(imp.add(parts[0], parts[1]), imp.add(parts[2], parts[3]));
  } else {
    v = imp.emit(Op::MAXIMUM, {imp.emit(Op::MAXIMUM, {parts[0], parts[1]}), imp.emit(Op::MAXIMUM, {parts[2], parts[3]})});
  }
  // [R, oh, ratio, ow, ratio, C] -> reduce the two sample axes.
  v = imp.reshape(v, {r, oh, ratio, ow, ratio, c});
  const Op red = mode == "avg" ? Op::REDUCE_SUM : Op::REDUCE_MAX;
  v = imp.reduce(red, imp.reduce(red, v, 4), 2);
  v = imp.reshape(v, {r, oh, ow, c});
  if (mode == "avg") v = imp.mul(v, imp.scalar(dt, 1.0 / static_cast<double>(ratio * ratio), 4));
  v = imp.cast(v, xv.dtype());
  imp.set_out(0, v, {0, 2, 3, 1}, x.onnx_type);
}

}  // namespace weft::onnxfe
