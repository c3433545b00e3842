// Lowerings of ONNX's signal-processing operators (opset 17): the window functions, DFT, STFT and
// MelWeightMatrix.
//
// TOSA 1.0's FFT2D / RFFT2D take power-of-two sizes over the last two axes of a rank-3 tensor only;
// ONNX's DFT takes any length along any axis, with zero padding or truncation to dft_length. So a
// DFT here is a product with constant cosine and sine matrices (one MATMUL each per real part, O(n^2)
// multiply-adds, exact to float32 rounding). STFT gathers its frames with one GATHER of constant
// indices, multiplies by the window, and applies the same matrices. Windows and mel matrices depend
// on constants only and fold to constants.
#include <cmath>
#include <numbers>

#include <onnx/onnx_pb.h>

#include "frontends/onnx/importer.h"
#include "frontends/onnx/lower.h"

namespace weft::onnxfe {

namespace {

int64_t scalar_int(Importer& imp, int i, const char* what) {
  auto v = imp.const_ints(i, what);
  if (v.size() != 1) imp.fail(std::string(what) + " must be one value", ErrorCode::kInvalidArgument);
  return v[0];
}

DType output_dtype(Importer& imp, int* onnx_type) {
  *onnx_type = static_cast<int>(imp.attr_int("output_datatype", kOFloat));
  auto dt = tosa_dtype(*onnx_type);
  if (!dt) imp.fail(std::string("output_datatype ") + onnx_type_name(*onnx_type) + " has no TOSA 1.0 equivalent");
  return *dt;
}

// w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N = size (periodic) or size - 1 (symmetric).
void window(Importer& imp, double a0, double a1, double a2) {
  const int64_t size = scalar_int(imp, 0, "size");
  if (size < 1) imp.fail("size must be at least 1 (TOSA has no empty tensors)", ErrorCode::kInvalidArgument);
  int ot = kOFloat;
  const DType dt = output_dtype(imp, &ot);
  const bool periodic = imp.attr_int("periodic", 1) != 0;
  const double denom = static_cast<double>(periodic ? size : size - 1);
  std::vector<double> w(static_cast<size_t>(size));
  for (int64_t n = 0; n < size; ++n) {
    const double t = denom == 0 ? 0 : 2 * std::numbers::pi * static_cast<double>(n) / denom;
    w[static_cast<size_t>(n)] = a0 - a1 * std::cos(t) + a2 * std::cos(2 * t);
  }
  imp.set_out(0, imp.const_tensor(Tensor::from_doubles({dt, {size}}, w)), {}, ot);
}

// The DFT of the rows of re (and im, when complex) [M, n], to `length` points (zero padding or
// truncating the rows) of which the first `bins` are kept: {re, im} [M, bins].
std::pair<TVal, TVal> dft_rows(Importer& imp, TVal re, std::optional<TVal> im, int64_t length, int64_t bins, bool inverse) {
  const int64_t m = re.shape()[0], n = re.shape()[1];
  const int64_t used = std::min(n, length);  // samples that enter the transform
  auto fit = [&](TVal v) { return used < n ? imp.slice(v, {0, 0}, {m, used}) : v; };
  re = fit(re);
  if (im) im = fit(*im);
  const DType dt = re.dtype();
  std::vector<double> c(static_cast<size_t>(used * bins)), s(static_cast<size_t>(used * bins));
  const double sign = inverse ? 1.0 : -1.0, norm = inverse ? 1.0 / static_cast<double>(length) : 1.0;
  for (int64_t t = 0; t < used; ++t)
    for (int64_t k = 0; k < bins; ++k) {
      // Reduced modulo the length first, so large products keep their precision.
      const double a = 2 * std::numbers::pi * static_cast<double>((t * k) % length) / static_cast<double>(length);
      c[static_cast<size_t>(t * bins + k)] = std::cos(a) * norm;
      s[static_cast<size_t>(t * bins + k)] = sign * std::sin(a) * norm;
    }
  TVal cm = imp.const_tensor(Tensor::from_doubles({dt, {1, used, bins}}, c));
  TVal sm = imp.const_tensor(Tensor::from_doubles({dt, {1, used, bins}}, s));
  TVal zp = imp.scalar(dt, 0, 1);
  auto mm = [&](const TVal& v, const TVal& w) { return imp.reshape(imp.emit(Op::MATMUL, {imp.reshape(v, {1, m, used}), w, zp, zp}), {m, bins}); };
  // (re + i im)(cos a + i sign sin a) = re cos - im sign sin + i (re sign sin + im cos)
  TVal out_re = mm(re, cm), out_im = mm(re, sm);
  if (im) {
    out_re = imp.sub(out_re, mm(*im, sm));
    out_im = imp.add(out_im, mm(*im, cm));
  }
  return {out_re, out_im};
}

}  // namespace

void lower_HannWindow(Importer& imp, const onnx::NodeProto&) { window(imp, 0.5, 0.5, 0.0); }
void lower_HammingWindow(Importer& imp, const onnx::NodeProto&) { window(imp, 25.0 / 46.0, 21.0 / 46.0, 0.0); }
void lower_BlackmanWindow(Importer& imp, const onnx::NodeProto&) { window(imp, 0.42, 0.5, 0.08); }

// DFT (opset 17): input [batch, ..., n, 1 | 2] (real | complex); output [..., length | length/2+1, 2].
void lower_DFT(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank < 3) imp.fail("the input must be [batch, ..., signal, 1 or 2] (rank >= 3)", ErrorCode::kInvalidArgument);
  const int64_t comp = x.shape.back();
  if (comp != 1 && comp != 2) imp.fail("the last dimension must be 1 (real) or 2 (complex), got " + std::to_string(comp), ErrorCode::kInvalidArgument);
  int64_t axis = imp.attr_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 1 || axis >= rank - 1) imp.fail("axis " + std::to_string(imp.attr_int("axis", 1)) + " must name a signal dimension (1 .. rank - 2)", ErrorCode::kInvalidArgument);
  const bool inverse = imp.attr_int("inverse", 0) != 0, onesided = imp.attr_int("onesided", 0) != 0;
  if (onesided && comp == 2) imp.fail("onesided = 1 requires a real input (last dimension 1)", ErrorCode::kInvalidArgument);
  if (onesided && inverse) imp.fail("onesided = 1 with inverse = 1 is not supported", ErrorCode::kInvalidArgument);
  const int64_t n = x.shape[static_cast<size_t>(axis)];
  const int64_t length = imp.has_input(1) ? scalar_int(imp, 1, "dft_length") : n;
  if (length < 1) imp.fail("dft_length must be at least 1", ErrorCode::kInvalidArgument);
  const int64_t bins = onesided ? length / 2 + 1 : length;
  TVal v = imp.plain(x);
  if (!is_float(v.dtype())) imp.fail("the input must be floating point");
  // [..., n, c] -> signal axis last: [rows, n] per component.
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank - 1; ++d)
    if (d != axis) perm.push_back(d);
  perm.push_back(axis);
  perm.push_back(rank - 1);
  TVal t = imp.transpose(v, perm);
  Shape ts = t.shape();
  const int64_t rows = shape_elements(ts) / (n * comp);
  auto part = [&](int64_t k) {
    std::vector<int64_t> start(ts.size(), 0), size(ts.begin(), ts.end());
    start.back() = k;
    size.back() = 1;
    return imp.reshape(imp.slice(t, start, size), {rows, n});
  };
  std::optional<TVal> im;
  if (comp == 2) im = part(1);
  auto [re_out, im_out] = dft_rows(imp, part(0), im, length, bins, inverse);
  Shape os(ts.begin(), ts.end() - 2);
  os.push_back(bins);
  os.push_back(1);
  TVal y = imp.emit(Op::CONCAT, {imp.reshape(re_out, os), imp.reshape(im_out, os)}, {{"axis", static_cast<int64_t>(os.size() - 1)}});
  // Back to the input's dimension order (the signal axis in its place).
  imp.set_out(0, imp.transpose(y, inverse_perm(perm)), {}, x.onnx_type);
}

// STFT (opset 17): signal [batch, length, 1 | 2], frame_step, window [frame_length] (optional),
// frame_length (optional); output [batch, frames, bins, 2].
void lower_STFT(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  if (x.shape.size() != 3 || (x.shape[2] != 1 && x.shape[2] != 2))
    imp.fail("the signal must be [batch, length, 1 or 2], got " + shape_str(x.shape), ErrorCode::kInvalidArgument);
  const int64_t batch = x.shape[0], len = x.shape[1], comp = x.shape[2];
  const int64_t step = scalar_int(imp, 1, "frame_step");
  if (step < 1) imp.fail("frame_step must be at least 1", ErrorCode::kInvalidArgument);
  int64_t frame = -1;
  if (imp.has_input(3)) frame = scalar_int(imp, 3, "frame_length");
  std::optional<TVal> win;
  if (imp.has_input(2)) {
    const OVal& w = imp.in(2);
    if (w.shape.size() != 1) imp.fail("window must be 1-D", ErrorCode::kInvalidArgument);
    if (frame >= 0 && w.shape[0] != frame)
      imp.fail("window has " + std::to_string(w.shape[0]) + " values but frame_length is " + std::to_string(frame), ErrorCode::kInvalidArgument);
    frame = w.shape[0];
    win = imp.plain(w);
  }
  if (frame < 1) imp.fail("frame_length or window is required", ErrorCode::kInvalidArgument);
  if (frame > len) imp.fail("frame_length " + std::to_string(frame) + " exceeds the signal length " + std::to_string(len), ErrorCode::kInvalidArgument);
  const bool onesided = imp.attr_int("onesided", 1) != 0;
  if (onesided && comp == 2) imp.fail("onesided = 1 requires a real signal", ErrorCode::kInvalidArgument);
  const int64_t frames = (len - frame) / step + 1, bins = onesided ? frame / 2 + 1 : frame;
  TVal v = imp.plain(x);
  if (!is_float(v.dtype())) imp.fail("the signal must be floating point");
  // Frames by one GATHER: row f*step + t of the signal for frame f, sample t.
  std::vector<int64_t> idx;
  idx.reserve(static_cast<size_t>(batch * frames * frame));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t f = 0; f < frames; ++f)
      for (int64_t t = 0; t < frame; ++t) idx.push_back(f * step + t);
  TVal gi = imp.const_tensor(Tensor::from_ints({DType::kInt32, {batch, frames * frame}}, idx));
  TVal fr = imp.emit(Op::GATHER, {v, gi});  // [batch, frames * frame, comp]
  auto part = [&](int64_t k) {
    TVal p = imp.reshape(imp.slice(fr, {0, 0, k}, {batch, frames * frame, 1}), {batch * frames, frame});
    if (win) p = imp.mul(p, imp.reshape(imp.cast(*win, p.dtype()), {1, frame}));
    return p;
  };
  std::optional<TVal> im;
  if (comp == 2) im = part(1);
  auto [re_out, im_out] = dft_rows(imp, part(0), im, frame, bins, false);
  const Shape os{batch, frames, bins, 1};
  TVal y = imp.emit(Op::CONCAT, {imp.reshape(re_out, os), imp.reshape(im_out, os)}, {{"axis", int64_t{3}}});
  imp.set_out(0, y, {}, x.onnx_type);
}

// MelWeightMatrix (opset 17): [dft_length / 2 + 1, num_mel_bins] triangular filters between mel
// points spaced evenly from lower_edge_hertz to upper_edge_hertz, as ONNX's reference computes them.
void lower_MelWeightMatrix(Importer& imp, const onnx::NodeProto&) {
  const int64_t mel = scalar_int(imp, 0, "num_mel_bins"), dft = scalar_int(imp, 1, "dft_length");
  const int64_t rate = scalar_int(imp, 2, "sample_rate");
  const auto lo = imp.const_doubles(3, "lower_edge_hertz"), hi = imp.const_doubles(4, "upper_edge_hertz");
  if (mel < 1 || dft < 1 || rate < 1 || lo.size() != 1 || hi.size() != 1)
    imp.fail("num_mel_bins, dft_length and sample_rate must be positive, the edges one value each", ErrorCode::kInvalidArgument);
  int ot = kOFloat;
  const DType dt = output_dtype(imp, &ot);
  const int64_t spec = dft / 2 + 1;
  const double lmel = 2595 * std::log10(1 + lo[0] / 700), hmel = 2595 * std::log10(1 + hi[0] / 700);
  const double mstep = (hmel - lmel) / static_cast<double>(mel + 2);
  std::vector<int64_t> pts(static_cast<size_t>(mel + 2));
  for (int64_t i = 0; i < mel + 2; ++i) {
    const double hz = 700 * (std::pow(10.0, (static_cast<double>(i) * mstep + lmel) / 2595) - 1);
    pts[static_cast<size_t>(i)] = static_cast<int64_t>(std::floor(static_cast<double>(dft + 1) * hz / static_cast<double>(rate)));
  }
  std::vector<double> out(static_cast<size_t>(spec * mel), 0.0);
  auto at = [&](int64_t j, int64_t i) -> double& {
    if (j < 0 || j >= spec) imp.fail("a mel filter reaches past the spectrogram (edges beyond sample_rate / 2?)", ErrorCode::kInvalidArgument);
    return out[static_cast<size_t>(j * mel + i)];
  };
  for (int64_t i = 0; i < mel; ++i) {
    const int64_t l = pts[static_cast<size_t>(i)], c = pts[static_cast<size_t>(i + 1)], h = pts[static_cast<size_t>(i + 2)];
    if (c == l) at(c, i) = 1;
    else
      for (int64_t j = l; j <= c; ++j) at(j, i) = static_cast<double>(j - l) / static_cast<double>(c - l);
    if (h > c)
      for (int64_t j = c; j < h; ++j) at(j, i) = static_cast<double>(h - j) / static_cast<double>(h - c);
  }
  imp.set_out(0, imp.const_tensor(Tensor::from_doubles({dt, {spec, mel}}, out)), {}, ot);
}

}  // namespace weft::onnxfe
