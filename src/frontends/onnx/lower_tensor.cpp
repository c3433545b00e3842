// Lowerings of ONNX's data-movement and shape operators: constants, shapes, reshapes, transposes,
// concatenation, slicing, gathering, padding, casts and selection.
#include <algorithm>
#include <cmath>
#include <numeric>

#include <onnx/onnx_pb.h>

#include "frontends/onnx/importer.h"
#include "frontends/onnx/lower.h"

namespace weft::onnxfe {

namespace {

int64_t product(const Shape& s, size_t b, size_t e) {
  int64_t p = 1;
  for (size_t i = b; i < e; ++i) p *= s[i];
  return p;
}

// Normalised, sorted, unique axes.
std::vector<int64_t> norm_axes(const Importer& imp, std::vector<int64_t> axes, int64_t rank, const char* what) {
  for (auto& a : axes) a = norm_axis(imp, a, rank, what);
  std::vector<int64_t> s = axes;
  std::sort(s.begin(), s.end());
  if (std::adjacent_find(s.begin(), s.end()) != s.end()) imp.fail(std::string(what) + " lists an axis twice", ErrorCode::kInvalidArgument);
  return s;
}

// The axes operand of Squeeze/Unsqueeze/Reduce*: an attribute before `input_since`, an input after.
std::optional<std::vector<int64_t>> axes_operand(const Importer& imp, int input, const char* name = "axes") {
  if (imp.has_input(input)) return imp.const_ints(input, name);
  return imp.attr_ints(name);
}

// Reshape that keeps exact int64 constants exact.
void set_reshaped(Importer& imp, int out, const OVal& x, const Shape& shape) {
  TVal p = imp.plain(x);
  TVal r = imp.reshape(p, shape);
  imp.set_out(out, r, {}, x.onnx_type);
  if (x.ints && r.is_const() && imp.wants_output(out)) {
    // Same element order: the exact values carry over.
    imp.set_exact_ints(out, x.ints);
  }
}

}  // namespace

void lower_Identity(Importer& imp, const onnx::NodeProto&) { imp.alias_out(0, imp.in(0)); }

void lower_Dropout(Importer& imp, const onnx::NodeProto&) {
  // Inference: the input passes through; the mask, if wanted, is all true. Exporters also write
  // training_mode = true with a ratio of 0 (torchvision's swin_t), which is the same identity.
  bool training = false;
  if (imp.opset() >= 12 && imp.has_input(2)) {
    auto t = imp.const_ints(2, "training_mode");
    training = !t.empty() && t[0] != 0;
  }
  if (training) {
    double ratio = 0.5;  // ONNX's default
    if (imp.has_input(1)) {
      auto r = imp.const_doubles(1, "ratio");
      if (r.size() != 1) imp.fail("ratio must be a scalar", ErrorCode::kInvalidArgument);
      ratio = r[0];
    }
    if (ratio != 0)
      imp.fail("training_mode = true with ratio " + std::to_string(ratio) +
               " zeroes random elements; Weft compiles for inference (export the model in eval mode, or give ratio 0)");
  }
  imp.alias_out(0, imp.in(0));
  if (imp.wants_output(1)) {
    Tensor ones = Tensor::zeros({DType::kBool, imp.in(0).shape});
    std::fill(ones.mutable_bytes(), ones.mutable_bytes() + ones.byte_size(), 1);
    imp.set_out(1, imp.const_tensor(ones), {}, kOBool);
  }
}

void lower_Constant(Importer& imp, const onnx::NodeProto& n) {
  if (n.attribute_size() != 1) imp.fail("Constant needs exactly one value attribute", ErrorCode::kInvalidArgument);
  const auto& a = n.attribute(0);
  const std::string& name = a.name();
  if (name == "value") {
    std::shared_ptr<const std::vector<int64_t>> ints;
    int ot = 0;
    Tensor t = tensor_from_proto(a.t(), "attribute 'value'", "", &ints, &ot);
    imp.set_out(0, imp.const_tensor(t), {}, ot);
    if (ints) imp.set_exact_ints(0, ints);
  } else if (name == "value_float") {
    imp.set_out(0, imp.scalar(DType::kFp32, a.f(), 0), {}, kOFloat);
  } else if (name == "value_floats") {
    std::vector<double> v(a.floats().begin(), a.floats().end());
    imp.set_out(0, imp.const_tensor(Tensor::from_doubles({DType::kFp32, {static_cast<int64_t>(v.size())}}, v)), {}, kOFloat);
  } else if (name == "value_int") {
    imp.set_out_const_ints(0, {a.i()}, {});
  } else if (name == "value_ints") {
    std::vector<int64_t> v(a.ints().begin(), a.ints().end());
    imp.set_out_const_ints(0, v, {static_cast<int64_t>(v.size())});
  } else {
    imp.fail("Constant attribute '" + name + "' is not supported (sparse and string constants have no TOSA form)");
  }
}

void lower_ConstantOfShape(Importer& imp, const onnx::NodeProto&) {
  std::vector<int64_t> dims = imp.const_ints(0, "shape");
  for (int64_t d : dims)
    if (d < 0) imp.fail("shape " + shape_str(dims) + " has a negative dimension", ErrorCode::kInvalidArgument);
  Tensor value = Tensor::from_doubles({DType::kFp32, {1}}, std::vector<double>{0.0});
  int ot = kOFloat;
  if (imp.attr("value")) {
    const auto* a = imp.attr("value");
    std::shared_ptr<const std::vector<int64_t>> ints;
    value = tensor_from_proto(a->t(), "attribute 'value'", "", &ints, &ot);
    if (value.num_elements() != 1) imp.fail("attribute 'value' must hold one element", ErrorCode::kInvalidArgument);
    if (ints && !imp.fits_fold_budget(dims, value.dtype())) ints.reset();
    if (ints) {
      std::vector<int64_t> all(static_cast<size_t>(shape_elements(dims)), (*ints)[0]);
      imp.set_out_const_ints(0, all, dims, ot);
      return;
    }
  }
  if (shape_elements(dims) == 0) imp.fail("an empty tensor (shape " + shape_str(dims) + ") has no TOSA form");
  if (!imp.fits_fold_budget(dims, value.dtype())) {
    // Past the constant-folding budget: a one-element constant tiled at run time.
    const Shape ones(dims.size(), 1);
    TVal one = imp.const_tensor(Tensor({value.dtype(), ones}, value.buffer()));
    imp.set_out(0, dims.empty() ? one : imp.emit(Op::TILE, {one, imp.shape_const(dims)}), {}, ot);
    return;
  }
  Tensor t = Tensor::zeros({value.dtype(), dims});
  const size_t es = storage_size(value.dtype());
  for (int64_t i = 0; i < t.num_elements(); ++i) std::memcpy(t.mutable_bytes() + i * static_cast<int64_t>(es), value.bytes(), es);
  imp.set_out(0, imp.const_tensor(t), {}, ot);
}

void lower_Shape(Importer& imp, const onnx::NodeProto&) {
  const Shape& s = imp.in(0).shape;
  const int64_t r = static_cast<int64_t>(s.size());
  int64_t start = imp.attr_int("start", 0), end = imp.attr_int("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  std::vector<int64_t> dims(s.begin() + start, s.begin() + std::max(start, end));
  imp.set_out_const_ints(0, dims, {static_cast<int64_t>(dims.size())});
}

void lower_Size(Importer& imp, const onnx::NodeProto&) { imp.set_out_const_ints(0, {shape_elements(imp.in(0).shape)}, {}); }

void lower_Range(Importer& imp, const onnx::NodeProto&) {
  const OVal& s = imp.in(0);
  if (s.onnx_type == kOFloat) {
    double a = imp.const_doubles(0, "start")[0], b = imp.const_doubles(1, "limit")[0], d = imp.const_doubles(2, "delta")[0];
    if (d == 0) imp.fail("delta is 0", ErrorCode::kInvalidArgument);
    const double count = std::ceil((b - a) / d);
    if (!std::isfinite(a) || !std::isfinite(b) || !std::isfinite(d) || !(count < 9.0e15))
      imp.fail("Range(" + std::to_string(a) + ", " + std::to_string(b) + ", " + std::to_string(d) + ") has no finite length", ErrorCode::kInvalidArgument);
    int64_t n = std::max<int64_t>(static_cast<int64_t>(count), 0);
    imp.require_fold_budget({n}, DType::kFp32, "Range's result");
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = a + static_cast<double>(i) * d;
    if (n == 0) imp.fail("Range produces an empty tensor, which has no TOSA form");
    imp.set_out(0, imp.const_tensor(Tensor::from_doubles({DType::kFp32, {n}}, v)), {}, kOFloat);
    return;
  }
  int64_t a = imp.const_ints(0, "start")[0], b = imp.const_ints(1, "limit")[0], d = imp.const_ints(2, "delta")[0];
  if (d == 0) imp.fail("delta is 0", ErrorCode::kInvalidArgument);
  // In 128 bits: limit - start overflows int64 for start = INT64_MIN, limit = INT64_MAX.
  const __int128 span = static_cast<__int128>(b) - a + d + (d > 0 ? -1 : 1);
  const __int128 count = std::max<__int128>(span / d, 0);
  if (count > (__int128{1} << 62)) imp.fail("Range(" + std::to_string(a) + ", " + std::to_string(b) + ", " + std::to_string(d) + ") has more than 2^62 elements", ErrorCode::kInvalidArgument);
  const int64_t n = static_cast<int64_t>(count);
  imp.require_fold_budget({n}, tosa_dtype(s.onnx_type).value_or(DType::kInt32), "Range's result");
  if (n == 0) imp.fail("Range produces an empty tensor, which has no TOSA form");
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = a + i * d;
  imp.set_out_const_ints(0, v, {n}, s.onnx_type);
}

void lower_Reshape(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  std::vector<int64_t> spec = imp.opset() < 5 ? imp.attr_ints("shape").value_or(std::vector<int64_t>{}) : imp.const_ints(1, "shape");
  const bool allowzero = imp.attr_int("allowzero", 0) != 0;
  Shape out(spec.size());
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == 0 && !allowzero) {
      if (i >= x.shape.size()) imp.fail("shape " + shape_str(spec) + " copies dimension " + std::to_string(i) + " (0), which the input " + shape_str(x.shape) + " lacks", ErrorCode::kInvalidArgument);
      d = x.shape[i];
    }
    if (d == -1) {
      if (infer >= 0) imp.fail("shape " + shape_str(spec) + " has more than one -1", ErrorCode::kInvalidArgument);
      infer = static_cast<int>(i);
      continue;
    }
    if (d < 0) imp.fail("shape " + shape_str(spec) + " has a negative dimension", ErrorCode::kInvalidArgument);
    out[i] = d;
    if (d != 0 && known > (int64_t{1} << 62) / d)
      imp.fail("shape " + shape_str(spec) + " has more than 2^62 elements", ErrorCode::kInvalidArgument);
    known *= d;
  }
  const int64_t total = shape_elements(x.shape);
  if (infer >= 0) {
    if (known == 0 || total % known != 0)
      imp.fail("cannot reshape " + shape_str(x.shape) + " to " + shape_str(spec), ErrorCode::kInvalidArgument);
    out[static_cast<size_t>(infer)] = total / known;
  } else if (known != total) {
    imp.fail("cannot reshape " + shape_str(x.shape) + " (" + std::to_string(total) + " elements) to " + shape_str(out),
             ErrorCode::kInvalidArgument);
  }
  set_reshaped(imp, 0, x, out);
}

void lower_Flatten(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  const int64_t r = static_cast<int64_t>(x.shape.size());
  int64_t axis = imp.attr_int("axis", 1);
  if (axis < -r || axis > r) imp.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r), ErrorCode::kInvalidArgument);
  if (axis < 0) axis += r;
  set_reshaped(imp, 0, x, {product(x.shape, 0, static_cast<size_t>(axis)), product(x.shape, static_cast<size_t>(axis), x.shape.size())});
}

void lower_Squeeze(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  const int64_t r = static_cast<int64_t>(x.shape.size());
  auto axes = axes_operand(imp, 1);
  Shape out;
  std::vector<int64_t> ax = axes ? norm_axes(imp, *axes, r, "axes") : std::vector<int64_t>{};
  for (int64_t i = 0; i < r; ++i) {
    const bool listed = std::find(ax.begin(), ax.end(), i) != ax.end();
    if (listed && x.shape[static_cast<size_t>(i)] != 1)
      imp.fail("cannot squeeze dimension " + std::to_string(i) + " of " + shape_str(x.shape) + ": its size is not 1", ErrorCode::kInvalidArgument);
    if (listed || (!axes && x.shape[static_cast<size_t>(i)] == 1)) continue;
    out.push_back(x.shape[static_cast<size_t>(i)]);
  }
  set_reshaped(imp, 0, x, out);
}

void lower_Unsqueeze(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  auto axes = axes_operand(imp, 1);
  if (!axes) imp.fail("axes are required", ErrorCode::kInvalidArgument);
  const int64_t r = static_cast<int64_t>(x.shape.size() + axes->size());
  std::vector<int64_t> ax = norm_axes(imp, *axes, r, "axes");
  Shape out;
  size_t k = 0;
  for (int64_t i = 0; i < r; ++i) {
    if (std::find(ax.begin(), ax.end(), i) != ax.end()) out.push_back(1);
    else out.push_back(x.shape[k++]);
  }
  set_reshaped(imp, 0, x, out);
}

void lower_Transpose(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  const int64_t r = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> t = imp.attr_ints("perm").value_or(std::vector<int64_t>{});
  if (t.empty())
    for (int64_t i = r - 1; i >= 0; --i) t.push_back(i);
  std::vector<int64_t> sorted = t;
  std::sort(sorted.begin(), sorted.end());
  // (The length is checked on its own: a scalar input has no dimension to compare against.)
  bool permutation = static_cast<int64_t>(sorted.size()) == r;
  for (int64_t i = 0; i < r && permutation; ++i) permutation = sorted[static_cast<size_t>(i)] == i;
  if (!permutation)
    imp.fail("perm " + shape_str(t) + " is not a permutation of the " + std::to_string(r) + " dimensions", ErrorCode::kInvalidArgument);
  // No data moves here: the result is the same TOSA value in another layout. Transposes that a
  // later operator needs are emitted there, and pairs that cancel never appear.
  std::vector<int64_t> p = x.perm;
  if (p.empty()) {
    p.resize(static_cast<size_t>(r));
    std::iota(p.begin(), p.end(), 0);
  }
  std::vector<int64_t> tinv = inverse_perm(t), q(p.size());
  for (size_t i = 0; i < p.size(); ++i) q[i] = tinv[static_cast<size_t>(p[i])];
  imp.set_out(0, x.v, q, x.onnx_type);
}

void lower_Concat(Importer& imp, const onnx::NodeProto&) {
  const int n = imp.num_inputs();
  const OVal& first = imp.in(0);
  const int64_t r = static_cast<int64_t>(first.shape.size());
  const int64_t axis = norm_axis(imp, imp.attr_int("axis", imp.opset() < 4 ? 1 : 0), r);
  std::vector<int64_t> perm;
  for (int i = 0; i < n; ++i)
    if (!imp.in(i).v.is_const() && !imp.in(i).perm.empty()) {
      perm = imp.in(i).perm;
      break;
    }
  std::vector<TVal> parts;
  std::vector<std::shared_ptr<const std::vector<int64_t>>> ints;
  bool all_ints = true;
  for (int i = 0; i < n; ++i) {
    const OVal& v = imp.in(i);
    if (static_cast<int64_t>(v.shape.size()) != r) imp.fail("input " + std::to_string(i) + " has rank " + std::to_string(v.shape.size()) + ", input 0 has rank " + std::to_string(r), ErrorCode::kInvalidArgument);
    for (int64_t k = 0; k < r; ++k)
      if (k != axis && v.shape[static_cast<size_t>(k)] != first.shape[static_cast<size_t>(k)])
        imp.fail("input " + std::to_string(i) + " has shape " + shape_str(v.shape) + ", which differs from input 0's " + shape_str(first.shape) + " outside axis " + std::to_string(axis), ErrorCode::kInvalidArgument);
    if (v.shape[static_cast<size_t>(axis)] == 0) continue;  // empty pieces add nothing
    parts.push_back(imp.in_layout(v, perm));
    all_ints = all_ints && v.ints && r == 1;
    ints.push_back(v.ints);
  }
  if (parts.empty()) imp.fail("every input is empty; an empty tensor has no TOSA form");
  TVal out = parts.size() == 1 ? parts[0] : imp.emit(Op::CONCAT, parts, {{"axis", tosa_axis(perm, axis)}});
  imp.set_out(0, out, perm, first.onnx_type);
  if (all_ints && imp.wants_output(0)) {
    std::vector<int64_t> joined;
    for (auto& p : ints) joined.insert(joined.end(), p->begin(), p->end());
    imp.set_exact_ints(0, std::make_shared<const std::vector<int64_t>>(joined));
  }
}

void lower_Split(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  const int64_t r = static_cast<int64_t>(x.shape.size());
  const int64_t axis = norm_axis(imp, imp.attr_int("axis", 0), r);
  const int64_t len = x.shape[static_cast<size_t>(axis)];
  const int outs = imp.num_outputs();
  std::vector<int64_t> sizes;
  if (imp.has_input(1)) sizes = imp.const_ints(1, "split");
  else if (auto s = imp.attr_ints("split")) sizes = *s;
  if (sizes.empty()) {
    const int64_t parts = imp.attr("num_outputs") ? imp.attr_int("num_outputs", outs) : outs;
    const int64_t each = (len + parts - 1) / parts;
    for (int64_t i = 0; i < parts; ++i) sizes.push_back(std::min(each, len - i * each));
  }
  if (static_cast<int>(sizes.size()) != outs)
    imp.fail("split has " + std::to_string(sizes.size()) + " sizes for " + std::to_string(outs) + " outputs", ErrorCode::kInvalidArgument);
  if (std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != len)
    imp.fail("split sizes " + shape_str(sizes) + " do not add up to the axis length " + std::to_string(len), ErrorCode::kInvalidArgument);
  const int64_t ta = tosa_axis(x.perm, axis);
  int64_t off = 0;
  for (int i = 0; i < outs; ++i) {
    if (sizes[static_cast<size_t>(i)] <= 0) imp.fail("split size " + std::to_string(sizes[static_cast<size_t>(i)]) + " of output " + std::to_string(i) + " is not positive (empty tensors have no TOSA form)");
    std::vector<int64_t> start(static_cast<size_t>(r), 0), size(x.v.shape().begin(), x.v.shape().end());
    start[static_cast<size_t>(ta)] = off;
    size[static_cast<size_t>(ta)] = sizes[static_cast<size_t>(i)];
    imp.set_out(i, imp.slice(x.v, start, size), x.perm, x.onnx_type);
    off += sizes[static_cast<size_t>(i)];
  }
}

void lower_Slice(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  const int64_t r = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (imp.opset() < 10) {
    starts = imp.attr_ints("starts").value_or(std::vector<int64_t>{});
    ends = imp.attr_ints("ends").value_or(std::vector<int64_t>{});
    axes = imp.attr_ints("axes").value_or(std::vector<int64_t>{});
  } else {
    starts = imp.const_ints(1, "starts");
    ends = imp.const_ints(2, "ends");
    if (imp.has_input(3)) axes = imp.const_ints(3, "axes");
    if (imp.has_input(4)) steps = imp.const_ints(4, "steps");
  }
  if (starts.size() != ends.size()) imp.fail("starts and ends differ in length", ErrorCode::kInvalidArgument);
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) imp.fail("starts, ends, axes and steps differ in length", ErrorCode::kInvalidArgument);
  TVal v = x.v;
  Shape vs = v.shape();
  std::vector<int64_t> start(static_cast<size_t>(r), 0), size(vs.begin(), vs.end());
  std::vector<std::pair<int64_t, int64_t>> strided;  // (tosa axis, step) for steps other than 1
  // Positive steps over an axis whose length is a multiple of the step: the axis is split whole
  // into [length / step, step] and both parts sliced at once (no PAD): (tosa axis, step, first, count).
  struct Whole {
    int64_t ta, step, first, count;
  };
  std::vector<Whole> whole;
  std::vector<int64_t> seen;
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t a = norm_axis(imp, axes[i], r, "axes");
    if (std::find(seen.begin(), seen.end(), a) != seen.end()) imp.fail("axes list axis " + std::to_string(a) + " twice", ErrorCode::kInvalidArgument);
    seen.push_back(a);
    const int64_t d = x.shape[static_cast<size_t>(a)];
    const int64_t st = steps[i];
    if (st == 0) imp.fail("steps must not be 0", ErrorCode::kInvalidArgument);
    int64_t b = starts[i], e = ends[i];
    if (b < 0) b += d;
    if (e < 0) e += d;
    int64_t first, count;
    if (st > 0) {
      b = std::clamp<int64_t>(b, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      count = e > b ? (e - b + st - 1) / st : 0;
      first = b;
    } else {
      b = std::clamp<int64_t>(b, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
      count = b > e ? (b - e + (-st) - 1) / (-st) : 0;
      first = b - (count - 1) * (-st);  // lowest index taken
    }
    if (count <= 0) {
      // An empty result (a shape vector sliced past its end, as exporters write in shape
      // arithmetic): a constant with no elements, which a Concat drops; anywhere it would have
      // to exist at run time it is an error (Importer::materialize).
      Shape tosa_empty = x.v.shape();
      tosa_empty[static_cast<size_t>(tosa_axis(x.perm, a))] = 0;
      imp.set_out(0, imp.const_tensor(Tensor::zeros({x.v.dtype(), tosa_empty})), x.perm, x.onnx_type);
      if (x.ints && r == 1) imp.set_exact_ints(0, std::make_shared<const std::vector<int64_t>>());
      return;
    }
    const int64_t ta = tosa_axis(x.perm, a);
    const int64_t step = st > 0 ? st : -st;
    if (st > 1 && d % st == 0 && !x.ints) {
      whole.push_back({ta, st, first, count});
      continue;
    }
    start[static_cast<size_t>(ta)] = first;
    size[static_cast<size_t>(ta)] = (count - 1) * step + 1;
    if (step != 1 || st < 0) strided.emplace_back(ta, st);
  }
  v = imp.slice(v, start, size);
  if (!whole.empty()) {
    // x[.., first::step, ..] with the axis a multiple of the step: element first + i * step is
    // [first / step + i, first % step] of the axis split into [length / step, step].
    std::sort(whole.begin(), whole.end(), [](const Whole& p, const Whole& q) { return p.ta < q.ta; });
    const Shape before = v.shape();
    Shape split, after = before;
    std::vector<int64_t> st0, sz;
    size_t w = 0;
    for (size_t d = 0; d < before.size(); ++d) {
      if (w < whole.size() && whole[w].ta == static_cast<int64_t>(d)) {
        const Whole& h = whole[w++];
        split.insert(split.end(), {before[d] / h.step, h.step});
        st0.insert(st0.end(), {h.first / h.step, h.first % h.step});
        sz.insert(sz.end(), {h.count, 1});
        after[d] = h.count;
      } else {
        split.push_back(before[d]);
        st0.push_back(0);
        sz.push_back(before[d]);
      }
    }
    v = imp.reshape(imp.slice(imp.reshape(v, split), st0, sz), after);
  }
  for (auto [ta, st] : strided) {
    const int64_t step = st > 0 ? st : -st;
    if (step != 1) {
      // Take every step-th element: pad the axis to a multiple of the step, split it into
      // [count, step] and keep index 0 of the second.
      Shape s = v.shape();
      const int64_t len = s[static_cast<size_t>(ta)];
      const int64_t count = (len - 1) / step + 1;
      const int64_t padded = count * step;
      if (padded != len) {
        std::vector<int64_t> pad(static_cast<size_t>(2 * s.size()), 0);
        pad[static_cast<size_t>(2 * ta + 1)] = padded - len;
        v = imp.emit(Op::PAD, {v, imp.shape_const(pad), imp.scalar(v.dtype(), 0, 1)});
      }
      Shape split = v.shape();
      split[static_cast<size_t>(ta)] = count;
      split.insert(split.begin() + ta + 1, step);
      v = imp.reshape(v, split);
      std::vector<int64_t> st0(split.size(), 0), sz(split.begin(), split.end());
      sz[static_cast<size_t>(ta + 1)] = 1;
      v = imp.slice(v, st0, sz);
      s[static_cast<size_t>(ta)] = count;
      v = imp.reshape(v, s);
    }
    if (st < 0) v = imp.emit(Op::REVERSE, {v}, {{"axis", ta}});
  }
  imp.set_out(0, v, x.perm, x.onnx_type);
  if (x.ints && r == 1 && v.is_const() && imp.wants_output(0)) {
    // Exact int64 values of a sliced 1-D constant (shape arithmetic).
    std::vector<int64_t> vals;
    const int64_t b = start[0], st = strided.empty() ? 1 : strided[0].second;
    const int64_t cnt = v.shape()[0];
    for (int64_t i = 0; i < cnt; ++i) vals.push_back((*x.ints)[static_cast<size_t>(st > 0 ? b + i * st : b + size[0] - 1 + i * st)]);
    imp.set_exact_ints(0, std::make_shared<const std::vector<int64_t>>(vals));
  }
}

void lower_Gather(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  const OVal& idx = imp.in(1);
  const int64_t r = static_cast<int64_t>(x.shape.size());
  const int64_t axis = norm_axis(imp, imp.attr_int("axis", 0), r);
  const int64_t k = x.shape[static_cast<size_t>(axis)];
  Shape out_shape(x.shape.begin(), x.shape.begin() + axis);
  out_shape.insert(out_shape.end(), idx.shape.begin(), idx.shape.end());
  out_shape.insert(out_shape.end(), x.shape.begin() + axis + 1, x.shape.end());
  if (shape_elements(out_shape) == 0) imp.fail("the result is empty; empty tensors have no TOSA form");
  const int64_t outer = product(x.shape, 0, static_cast<size_t>(axis));
  const int64_t inner = product(x.shape, static_cast<size_t>(axis + 1), x.shape.size());
  if (idx.v.is_const()) {
    std::vector<int64_t> iv = imp.const_ints(1, "indices");
    for (auto& i : iv) {
      if (i < -k || i >= k) imp.fail("index " + std::to_string(i) + " is out of range for axis " + std::to_string(axis) + " of size " + std::to_string(k), ErrorCode::kInvalidArgument);
      if (i < 0) i += k;
    }
    if (x.ints && r == 1) {
      // Shape arithmetic: gather exact values.
      std::vector<int64_t> vals;
      for (int64_t i : iv) vals.push_back((*x.ints)[static_cast<size_t>(i)]);
      imp.set_out_const_ints(0, vals, out_shape, x.onnx_type);
      return;
    }
    if (iv.size() == 1) {
      // One index: a slice of the data (in its own layout), then a reshape.
      const int64_t ta = tosa_axis(x.perm, axis);
      std::vector<int64_t> start(static_cast<size_t>(r), 0), size(x.v.shape().begin(), x.v.shape().end());
      start[static_cast<size_t>(ta)] = iv[0];
      size[static_cast<size_t>(ta)] = 1;
      TVal s = imp.slice(x.v, start, size);
      if (idx.shape.size() == 1) {
        imp.set_out(0, s, x.perm, x.onnx_type);
      } else {
        OVal tmp;
        tmp.v = s;
        tmp.perm = x.perm;
        tmp.shape = x.shape;
        tmp.shape[static_cast<size_t>(axis)] = 1;
        imp.set_out(0, imp.reshape(imp.plain(tmp), out_shape), {}, x.onnx_type);
      }
      return;
    }
    TVal ti = imp.const_tensor(Tensor::from_ints({DType::kInt32, {1, static_cast<int64_t>(iv.size())}}, iv));
    TVal vals = imp.reshape(imp.plain(x), {outer, k, inner});
    if (outer > 1) ti = imp.emit(Op::TILE, {ti, imp.shape_const({outer, 1})});
    imp.set_out(0, imp.reshape(imp.emit(Op::GATHER, {vals, ti}), out_shape), {}, x.onnx_type);
    return;
  }
  TVal i = imp.plain(idx);
  if (i.dtype() != DType::kInt32) imp.fail("indices must be int32 or int64");
  const int64_t w = shape_elements(idx.shape);
  i = imp.reshape(i, {1, w});
  // Negative indices count from the end.
  TVal zero = imp.scalar(DType::kInt32, 0, 2);
  TVal neg = imp.emit(Op::GREATER, {zero, i});
  i = imp.emit(Op::SELECT, {neg, imp.add(i, imp.scalar(DType::kInt32, static_cast<double>(k), 2)), i});
  if (outer > 1) i = imp.emit(Op::TILE, {i, imp.shape_const({outer, 1})});
  TVal vals = imp.reshape(imp.plain(x), {outer, k, inner});
  imp.set_out(0, imp.reshape(imp.emit(Op::GATHER, {vals, i}), out_shape), {}, x.onnx_type);
}

void lower_Pad(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  const int64_t r = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> pads;
  double value = 0;
  if (imp.opset() < 11) {
    pads = imp.attr_ints("pads").value_or(std::vector<int64_t>{});
    value = imp.attr_float("value", 0.f);
  } else {
    pads = imp.const_ints(1, "pads");
    if (imp.has_input(2)) value = imp.const_doubles(2, "constant_value").at(0);
  }
  std::vector<int64_t> axes;
  if (imp.has_input(3)) axes = norm_axes(imp, imp.const_ints(3, "axes"), r, "axes");
  else
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  if (pads.size() != 2 * axes.size())
    imp.fail("pads has " + std::to_string(pads.size()) + " values; it needs 2 per padded axis (" + std::to_string(2 * axes.size()) + ")", ErrorCode::kInvalidArgument);
  const std::string mode = imp.attr_str("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    imp.fail("mode '" + mode + "' is not one of constant, reflect, edge, wrap", ErrorCode::kInvalidArgument);
  // Per TOSA axis: (before, after).
  std::vector<int64_t> before(static_cast<size_t>(r), 0), after(static_cast<size_t>(r), 0);
  const size_t na = axes.size();
  for (size_t i = 0; i < na; ++i) {
    const size_t ta = static_cast<size_t>(tosa_axis(x.perm, axes[i]));
    before[ta] = pads[i];
    after[ta] = pads[i + na];
  }
  TVal v = x.v;
  // Negative pads crop.
  {
    std::vector<int64_t> start(static_cast<size_t>(r), 0), size(v.shape().begin(), v.shape().end());
    bool crop = false;
    for (size_t a = 0; a < static_cast<size_t>(r); ++a) {
      if (before[a] < 0) { start[a] = -before[a]; size[a] += before[a]; before[a] = 0; crop = true; }
      if (after[a] < 0) { size[a] += after[a]; after[a] = 0; crop = true; }
      if (size[a] <= 0) imp.fail("the pads crop axis " + std::to_string(a) + " away completely");
    }
    if (crop) v = imp.slice(v, start, size);
  }
  if (mode == "constant") {
    std::vector<int64_t> p;
    bool any = false;
    for (size_t a = 0; a < static_cast<size_t>(r); ++a) {
      p.push_back(before[a]);
      p.push_back(after[a]);
      any = any || before[a] || after[a];
    }
    if (any) v = imp.emit(Op::PAD, {v, imp.shape_const(p), imp.scalar(v.dtype(), value, 1)});
  } else {
    for (size_t a = 0; a < static_cast<size_t>(r); ++a) {
      if (!before[a] && !after[a]) continue;
      const int64_t len = v.shape()[a];
      auto piece = [&](int64_t from, int64_t n) {
        std::vector<int64_t> start(static_cast<size_t>(r), 0), size(v.shape().begin(), v.shape().end());
        start[a] = from;
        size[a] = n;
        return imp.slice(v, start, size);
      };
      std::vector<TVal> parts;
      if (mode == "reflect") {
        if (before[a] >= len || after[a] >= len) imp.fail("reflect padding of " + std::to_string(std::max(before[a], after[a])) + " needs an axis longer than " + std::to_string(len), ErrorCode::kInvalidArgument);
        if (before[a]) parts.push_back(imp.emit(Op::REVERSE, {piece(1, before[a])}, {{"axis", static_cast<int64_t>(a)}}));
        parts.push_back(v);
        if (after[a]) parts.push_back(imp.emit(Op::REVERSE, {piece(len - 1 - after[a], after[a])}, {{"axis", static_cast<int64_t>(a)}}));
      } else if (mode == "edge") {
        std::vector<int64_t> mult(static_cast<size_t>(r), 1);
        if (before[a]) { mult[a] = before[a]; parts.push_back(imp.emit(Op::TILE, {piece(0, 1), imp.shape_const(mult)})); }
        parts.push_back(v);
        if (after[a]) { mult[a] = after[a]; parts.push_back(imp.emit(Op::TILE, {piece(len - 1, 1), imp.shape_const(mult)})); }
      } else {  // wrap
        if (before[a] > len || after[a] > len) imp.fail("wrap padding longer than the axis is not supported");
        if (before[a]) parts.push_back(piece(len - before[a], before[a]));
        parts.push_back(v);
        if (after[a]) parts.push_back(piece(0, after[a]));
      }
      v = imp.emit(Op::CONCAT, parts, {{"axis", static_cast<int64_t>(a)}});
    }
  }
  imp.set_out(0, v, x.perm, x.onnx_type);
}

void lower_Tile(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  std::vector<int64_t> rep = imp.const_ints(1, "repeats");
  if (rep.size() != x.shape.size()) imp.fail("repeats has " + std::to_string(rep.size()) + " values for rank " + std::to_string(x.shape.size()), ErrorCode::kInvalidArgument);
  std::vector<int64_t> m(rep.size());
  for (size_t i = 0; i < rep.size(); ++i) {
    if (rep[i] < 1) imp.fail("repeats must be >= 1 (empty tensors have no TOSA form)");
    m[static_cast<size_t>(tosa_axis(x.perm, static_cast<int64_t>(i)))] = rep[i];
  }
  imp.set_out(0, imp.emit(Op::TILE, {x.v, imp.shape_const(m)}), x.perm, x.onnx_type);
}

void lower_Expand(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  std::vector<int64_t> target = imp.const_ints(1, "shape");
  const size_t r = std::max(target.size(), x.shape.size());
  Shape xs(r - x.shape.size(), 1), out(r);
  xs.insert(xs.end(), x.shape.begin(), x.shape.end());
  Shape ts(r - target.size(), 1);
  ts.insert(ts.end(), target.begin(), target.end());
  std::vector<int64_t> mult(r, 1);
  for (size_t i = 0; i < r; ++i) {
    if (xs[i] != ts[i] && xs[i] != 1 && ts[i] != 1)
      imp.fail("cannot expand " + shape_str(x.shape) + " to " + shape_str(target), ErrorCode::kInvalidArgument);
    out[i] = std::max(xs[i], ts[i]);
    if (xs[i] == 1) mult[i] = out[i];
  }
  TVal v = imp.reshape(imp.plain(x), xs);
  if (std::any_of(mult.begin(), mult.end(), [](int64_t m) { return m != 1; })) v = imp.emit(Op::TILE, {v, imp.shape_const(mult)});
  imp.set_out(0, v, {}, x.onnx_type);
}

namespace {
// Converts x to ONNX type `to` with ONNX's semantics: float -> integer truncates towards zero
// (TOSA's CAST rounds, so FLOOR/CEIL come first), float -> bool is x != 0, bool -> float goes
// through int32. Shared by Cast and CastLike.
void cast_to(Importer& imp, const OVal& x, int to) {
  auto dt = tosa_dtype(to);
  if (!dt) imp.fail(std::string("cast to ") + onnx_type_name(to) + ": this type has no TOSA 1.0 equivalent");
  if (x.ints && (to == kOInt64 || to == kOInt32)) {
    imp.set_out_const_ints(0, *x.ints, x.shape, to);
    return;
  }
  TVal v = x.v;
  const DType from = v.dtype();
  if (is_float(from) && *dt == DType::kBool) {
    TVal z = imp.emit(Op::EQUAL, {v, imp.scalar(from, 0, v.rank())});
    imp.set_out(0, imp.emit(Op::LOGICAL_NOT, {z}), x.perm, to);
    return;
  }
  if (is_float(from) && !is_float(*dt)) {
    TVal pos = imp.emit(Op::GREATER_EQUAL, {v, imp.scalar(from, 0, v.rank())});
    v = imp.emit(Op::SELECT, {pos, imp.emit(Op::FLOOR, {v}), imp.emit(Op::CEIL, {v})});
  }
  if (from == DType::kBool && is_float(*dt)) v = imp.cast(v, DType::kInt32);
  v = imp.cast(v, *dt);
  // uint8 / uint16 are computed in int32: wrap into the type's range as a C cast does.
  if (to == kOUint8 || to == kOUint16) v = imp.emit(Op::BITWISE_AND, {v, imp.scalar(DType::kInt32, to == kOUint8 ? 0xFF : 0xFFFF, v.rank())});
  imp.set_out(0, v, x.perm, to);
}
}  // namespace

void lower_Cast(Importer& imp, const onnx::NodeProto&) { cast_to(imp, imp.in(0), static_cast<int>(imp.attr_int("to", 0))); }

void lower_Where(Importer& imp, const onnx::NodeProto&) {
  std::vector<int64_t> perm;
  Shape shape;
  auto ops = imp.elementwise_operands({0, 1, 2}, &perm, &shape);
  imp.set_out(0, imp.emit(Op::SELECT, ops), perm, imp.in(1).onnx_type);
}

void lower_DepthToSpace(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  if (x.shape.size() != 4) imp.fail("the input must be 4-D [N,C,H,W]", ErrorCode::kInvalidArgument);
  const int64_t b = imp.attr_int("blocksize", 0);
  const int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], w = x.shape[3];
  if (b < 1 || c % (b * b)) imp.fail("channels " + std::to_string(c) + " are not divisible by blocksize^2", ErrorCode::kInvalidArgument);
  const bool crd = imp.attr_str("mode", "DCR") == "CRD";
  TVal v = imp.plain(x);
  if (crd) {
    v = imp.reshape(v, {n, c / (b * b), b, b, h, w});
    v = imp.transpose(v, {0, 1, 4, 2, 5, 3});
  } else {
    v = imp.reshape(v, {n, b, b, c / (b * b), h, w});
    v = imp.transpose(v, {0, 3, 4, 1, 5, 2});
  }
  imp.set_out(0, imp.reshape(v, {n, c / (b * b), h * b, w * b}), {}, x.onnx_type);
}

void lower_SpaceToDepth(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  if (x.shape.size() != 4) imp.fail("the input must be 4-D [N,C,H,W]", ErrorCode::kInvalidArgument);
  const int64_t b = imp.attr_int("blocksize", 0);
  const int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], w = x.shape[3];
  if (b < 1 || h % b || w % b) imp.fail("H and W must be divisible by blocksize", ErrorCode::kInvalidArgument);
  TVal v = imp.reshape(imp.plain(x), {n, c, h / b, b, w / b, b});
  v = imp.transpose(v, {0, 3, 5, 1, 2, 4});
  imp.set_out(0, imp.reshape(v, {n, c * b * b, h / b, w / b}), {}, x.onnx_type);
}

}  // namespace weft::onnxfe

namespace weft::onnxfe {

void lower_CastLike(Importer& imp, const onnx::NodeProto&) { cast_to(imp, imp.in(0), imp.in(1).onnx_type); }

void lower_Trilu(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  if (x.shape.size() < 2) imp.fail("the input must have rank >= 2", ErrorCode::kInvalidArgument);
  const int64_t k = imp.has_input(1) ? imp.const_ints(1, "k").at(0) : 0;
  const bool upper = imp.attr_int("upper", 1) != 0;
  const int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
  // The kept positions are known at import time: a constant mask selects them.
  Tensor mask = Tensor::zeros({DType::kBool, {rows, cols}});
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) mask.mutable_bytes()[i * cols + j] = upper ? (j - i >= k) : (j - i <= k);
  TVal v = imp.plain(x);
  TVal m = imp.to_rank(imp.const_tensor(mask), v.rank());
  imp.set_out(0, imp.emit(Op::SELECT, {m, v, imp.scalar(v.dtype(), 0, v.rank())}), {}, x.onnx_type);
}

void lower_EyeLike(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  if (x.shape.size() != 2) imp.fail("the input must be 2-D", ErrorCode::kInvalidArgument);
  const int64_t k = imp.attr_int("k", 0);
  int ot = static_cast<int>(imp.attr_int("dtype", x.onnx_type));
  auto dt = tosa_dtype(ot);
  if (!dt) imp.fail(std::string("dtype ") + onnx_type_name(ot) + " has no TOSA 1.0 equivalent");
  std::vector<double> vals(static_cast<size_t>(shape_elements(x.shape)), 0.0);
  for (int64_t i = 0; i < x.shape[0]; ++i)
    if (i + k >= 0 && i + k < x.shape[1]) vals[static_cast<size_t>(i * x.shape[1] + i + k)] = 1.0;
  imp.set_out(0, imp.const_tensor(Tensor::from_doubles({*dt, x.shape}, vals)), {}, ot);
}

namespace {

// GatherElements / ScatterElements: the flat position in the data of every element of `idx`: its
// own coordinates (known) with the axis coordinate replaced by the index value (run time, negative
// counting from the end): base + index * stride(axis). Returns [1, elements of idx] int32.
TVal element_positions(Importer& imp, const OVal& x, const OVal& idx, int64_t axis) {
  const int64_t r = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> stride(static_cast<size_t>(r), 1);
  for (int64_t d = r - 2; d >= 0; --d) stride[static_cast<size_t>(d)] = stride[static_cast<size_t>(d + 1)] * x.shape[static_cast<size_t>(d + 1)];
  const int64_t n = shape_elements(idx.shape);
  std::vector<int64_t> base(static_cast<size_t>(n));
  for (int64_t f = 0; f < n; ++f) {
    int64_t rem = f, off = 0;
    for (int64_t d = r - 1; d >= 0; --d) {
      const int64_t c = rem % idx.shape[static_cast<size_t>(d)];
      rem /= idx.shape[static_cast<size_t>(d)];
      if (d != axis) {
        if (c >= x.shape[static_cast<size_t>(d)]) imp.fail("indices shape " + shape_str(idx.shape) + " exceeds the data shape " + shape_str(x.shape) + " outside the axis", ErrorCode::kInvalidArgument);
        off += c * stride[static_cast<size_t>(d)];
      }
    }
    base[static_cast<size_t>(f)] = off;
  }
  const int64_t k = x.shape[static_cast<size_t>(axis)];
  TVal i = imp.reshape(imp.plain(idx), {1, n});
  if (i.dtype() != DType::kInt32) imp.fail("indices must be int32 or int64", ErrorCode::kInvalidArgument);
  TVal zero = imp.scalar(DType::kInt32, 0, 2);
  i = imp.emit(Op::SELECT, {imp.emit(Op::GREATER, {zero, i}), imp.add(i, imp.scalar(DType::kInt32, static_cast<double>(k), 2)), i});
  return imp.add(imp.const_tensor(Tensor::from_ints({DType::kInt32, {1, n}}, base)),
                 imp.mul(i, imp.scalar(DType::kInt32, static_cast<double>(stride[static_cast<size_t>(axis)]), 2)));
}

}  // namespace

void lower_GatherElements(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  const OVal& idx = imp.in(1);
  const int64_t r = static_cast<int64_t>(x.shape.size());
  if (static_cast<int64_t>(idx.shape.size()) != r) imp.fail("indices must have the rank of the data", ErrorCode::kInvalidArgument);
  const int64_t axis = norm_axis(imp, imp.attr_int("axis", 0), r);
  TVal flat = element_positions(imp, x, idx, axis);
  TVal vals = imp.reshape(imp.plain(x), {1, shape_elements(x.shape), 1});
  imp.set_out(0, imp.reshape(imp.emit(Op::GATHER, {vals, flat}), idx.shape), {}, x.onnx_type);
}

// ---- GatherND, ScatterND, ScatterElements ----------------------------------------------------------
//
// Through TOSA's GATHER / SCATTER on flat positions: the data seen as [1, outer, C] (C the slice
// each index addresses), the indices turned into flat row numbers (with negative indices counting
// from the end), the updates as [1, W, C]. Constant operands fold at import time (the shape
// arithmetic of swin_t's shifted windows is 45 ScatterNDs on constants).
namespace {

// Row numbers of the k-tuples in the last dimension of `idx` (int32 [.., k]) over data dims [0, k).
TVal flat_rows(Importer& imp, const OVal& idx, const Shape& data, int64_t k) {
  const int64_t w = shape_elements(idx.shape) / std::max<int64_t>(k, 1);
  TVal i = imp.reshape(imp.plain(idx), {w, k});
  if (i.dtype() != DType::kInt32) imp.fail("indices must be int32 or int64", ErrorCode::kInvalidArgument);
  TVal rows;
  int64_t stride = 1;
  for (int64_t d = k - 1; d >= 0; --d) {
    TVal c = imp.slice(i, {0, d}, {w, 1});
    const int64_t dim = data[static_cast<size_t>(d)];
    c = imp.emit(Op::SELECT, {imp.emit(Op::GREATER, {imp.scalar(DType::kInt32, 0, 2), c}),
                              imp.add(c, imp.scalar(DType::kInt32, static_cast<double>(dim), 2)), c});
    TVal term = stride == 1 ? c : imp.mul(c, imp.scalar(DType::kInt32, static_cast<double>(stride), 2));
    rows = d == k - 1 ? term : imp.add(rows, term);
    stride *= dim;
  }
  return imp.reshape(rows, {1, w});
}

// GatherND / ScatterND over data `x` and index tuples `idx` [..., k]: the data as [1, outer, c] rows
// (outer = the first k dimensions, c = the rest) and the row number of each tuple.
struct NdRows {
  int64_t k, outer, c;
  TVal rows, vals;
};
NdRows nd_rows(Importer& imp, const OVal& x, const OVal& idx) {
  if (idx.shape.empty()) imp.fail("indices must have rank >= 1", ErrorCode::kInvalidArgument);
  const int64_t k = idx.shape.back();
  const int64_t r = static_cast<int64_t>(x.shape.size());
  if (k < 1 || k > r) imp.fail("the last dimension of indices (" + std::to_string(k) + ") must be in [1, rank of data]", ErrorCode::kInvalidArgument);
  const int64_t outer = product(x.shape, 0, static_cast<size_t>(k));
  const int64_t c = product(x.shape, static_cast<size_t>(k), x.shape.size());
  return {k, outer, c, flat_rows(imp, idx, x.shape, k), imp.reshape(imp.plain(x), {1, outer, c})};
}

}  // namespace

void lower_GatherND(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  const OVal& idx = imp.in(1);
  const int64_t bd = imp.attr_int("batch_dims", 0);
  if (bd != 0) {
    // The first batch_dims dimensions of data and indices pair up: rows are counted within each
    // batch entry, then offset by the entry's number times its row count.
    if (bd < 0 || bd >= static_cast<int64_t>(std::min(x.shape.size(), idx.shape.size())))
      imp.fail("batch_dims " + std::to_string(bd) + " must be below the ranks of data and indices", ErrorCode::kInvalidArgument);
    for (int64_t d = 0; d < bd; ++d)
      if (x.shape[static_cast<size_t>(d)] != idx.shape[static_cast<size_t>(d)])
        imp.fail("data and indices differ in batch dimension " + std::to_string(d), ErrorCode::kInvalidArgument);
    const int64_t k = idx.shape.back();
    const Shape inner(x.shape.begin() + bd, x.shape.end());
    if (k < 1 || k > static_cast<int64_t>(inner.size())) imp.fail("the last dimension of indices must be in [1, rank of data - batch_dims]", ErrorCode::kInvalidArgument);
    const int64_t bt = product(x.shape, 0, static_cast<size_t>(bd));
    const int64_t rows_per = product(inner, 0, static_cast<size_t>(k)), c = product(inner, static_cast<size_t>(k), inner.size());
    const int64_t w = shape_elements(idx.shape) / k, m = w / bt;
    TVal rows = flat_rows(imp, idx, inner, k);
    std::vector<int64_t> base(static_cast<size_t>(w));
    for (int64_t e = 0; e < w; ++e) base[static_cast<size_t>(e)] = (e / m) * rows_per;
    rows = imp.add(rows, imp.const_tensor(Tensor::from_ints({DType::kInt32, {1, w}}, base)));
    TVal vals = imp.reshape(imp.plain(x), {1, bt * rows_per, c});
    Shape out_shape(idx.shape.begin(), idx.shape.end() - 1);
    out_shape.insert(out_shape.end(), inner.begin() + k, inner.end());
    imp.set_out(0, imp.reshape(imp.emit(Op::GATHER, {vals, rows}), out_shape), {}, x.onnx_type);
    return;
  }
  const NdRows nd = nd_rows(imp, x, idx);
  Shape out_shape(idx.shape.begin(), idx.shape.end() - 1);
  out_shape.insert(out_shape.end(), x.shape.begin() + nd.k, x.shape.end());
  imp.set_out(0, imp.reshape(imp.emit(Op::GATHER, {nd.vals, nd.rows}), out_shape), {}, x.onnx_type);
}

// Scatter with a reduction (add, mul, max, min): TOSA's SCATTER replaces values and forbids
// repeated positions, so the updates are applied one by one, in order: for update u, the rows
// whose position equals its index become (row op update). [1, K, C] data, [1, U] positions.
TVal scatter_reduce(Importer& imp, TVal data, const TVal& pos, const TVal& upd, const std::string& red) {
  const Op op = red == "add" ? Op::ADD : red == "mul" ? Op::MUL : red == "max" ? Op::MAXIMUM : red == "min" ? Op::MINIMUM : Op::CONST;
  if (op == Op::CONST) imp.fail("reduction '" + red + "' is not one of none, add, mul, max, min", ErrorCode::kInvalidArgument);
  const int64_t k = data.shape()[1], c = data.shape()[2], u = pos.shape()[1];
  constexpr int64_t kMaxUpdates = 4096;
  if (u > kMaxUpdates)
    imp.fail("a scatter with reduction '" + red + "' is applied update by update (TOSA's SCATTER cannot combine " +
             "values); " + std::to_string(u) + " updates are more than " + std::to_string(kMaxUpdates));
  std::vector<int64_t> iota(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) iota[static_cast<size_t>(i)] = i;
  TVal rows = imp.const_tensor(Tensor::from_ints({DType::kInt32, {1, k, 1}}, iota));
  for (int64_t i = 0; i < u; ++i) {
    TVal p = imp.reshape(imp.slice(pos, {0, i}, {1, 1}), {1, 1, 1});
    TVal v = imp.slice(upd, {0, i, 0}, {1, 1, c});
    TVal hit = imp.emit(Op::EQUAL, {rows, p});
    TVal combined = op == Op::MUL ? imp.mul(data, v) : imp.emit(op, {data, v});
    data = imp.emit(Op::SELECT, {hit, combined, data});
  }
  return data;
}

void lower_ScatterND(Importer& imp, const onnx::NodeProto&) {
  const std::string red = imp.attr_str("reduction", "none");
  const OVal& x = imp.in(0);
  const OVal& idx = imp.in(1);
  const OVal& upd = imp.in(2);
  const NdRows nd = nd_rows(imp, x, idx);
  const int64_t w = shape_elements(idx.shape) / nd.k;
  if (shape_elements(upd.shape) != w * nd.c) imp.fail("updates have shape " + shape_str(upd.shape) + ", which does not match the indices and data", ErrorCode::kInvalidArgument);
  TVal u = imp.reshape(imp.plain(upd), {1, w, nd.c});
  TVal out = red == "none" ? imp.reshape(imp.emit(Op::SCATTER, {nd.vals, nd.rows, u}), x.shape)
                           : imp.reshape(scatter_reduce(imp, nd.vals, nd.rows, u, red), x.shape);
  imp.set_out(0, out, {}, x.onnx_type);
  if (out.is_const() && x.shape.size() == 1 && (x.onnx_type == kOInt64 || x.onnx_type == kOInt32) && imp.wants_output(0))
    imp.set_exact_ints(0, std::make_shared<const std::vector<int64_t>>(out.c->to_ints()));
}

void lower_ScatterElements(Importer& imp, const onnx::NodeProto&) {
  const std::string red = imp.attr_str("reduction", "none");
  const OVal& x = imp.in(0);
  const OVal& idx = imp.in(1);
  const OVal& upd = imp.in(2);
  const int64_t r = static_cast<int64_t>(x.shape.size());
  const int64_t axis = norm_axis(imp, imp.attr_int("axis", 0), r);
  if (idx.shape != upd.shape || static_cast<int64_t>(idx.shape.size()) != r)
    imp.fail("indices and updates must have the same shape and the data's rank", ErrorCode::kInvalidArgument);
  TVal flat = element_positions(imp, x, idx, axis);
  const int64_t n = shape_elements(idx.shape);
  TVal vals = imp.reshape(imp.plain(x), {1, shape_elements(x.shape), 1});
  TVal u = imp.reshape(imp.plain(upd), {1, n, 1});
  TVal out = red == "none" ? imp.emit(Op::SCATTER, {vals, flat, u}) : scatter_reduce(imp, vals, flat, u, red);
  imp.set_out(0, imp.reshape(out, x.shape), {}, x.onnx_type);
}

// Scatter (opsets 9-10) is ScatterElements under its former name.
void lower_Scatter(Importer& imp, const onnx::NodeProto& n) { lower_ScatterElements(imp, n); }


// Compress with a condition known at compile time (its output's size depends on it): a GATHER of
// the selected positions along the axis (of the flattened input without one).
void lower_Compress(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  const std::vector<int64_t> cond = imp.const_ints(1, "condition");
  TVal v = imp.plain(x);
  int64_t outer = 1, len, inner = 1;
  Shape out;
  std::optional<int64_t> axis;
  if (imp.attr("axis")) axis = norm_axis(imp, imp.attr_int("axis", 0), static_cast<int64_t>(x.shape.size()));
  if (axis) {
    for (int64_t d = 0; d < *axis; ++d) outer *= x.shape[static_cast<size_t>(d)];
    for (size_t d = static_cast<size_t>(*axis) + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
    len = x.shape[static_cast<size_t>(*axis)];
  } else {
    len = shape_elements(x.shape);
  }
  if (static_cast<int64_t>(cond.size()) > len)
    imp.fail("condition has " + std::to_string(cond.size()) + " values, more than the " + std::to_string(len) + " it selects from", ErrorCode::kInvalidArgument);
  std::vector<int64_t> sel;
  for (size_t i = 0; i < cond.size(); ++i)
    if (cond[i]) sel.push_back(static_cast<int64_t>(i));
  if (sel.empty()) imp.fail("the condition selects nothing: the output would be empty (TOSA has no empty tensors)");
  std::vector<int64_t> idx;
  for (int64_t o = 0; o < outer; ++o) idx.insert(idx.end(), sel.begin(), sel.end());
  const int64_t m = static_cast<int64_t>(sel.size());
  TVal g = imp.emit(Op::GATHER, {imp.reshape(v, {outer, len, inner}), imp.const_tensor(Tensor::from_ints({DType::kInt32, {outer, m}}, idx))});
  if (axis) {
    out = x.shape;
    out[static_cast<size_t>(*axis)] = m;
  } else {
    out = {m};
  }
  imp.set_out(0, imp.reshape(g, out), {}, x.onnx_type);
}

// ReverseSequence: along the time axis, the first sequence_lens[b] entries of each batch entry b
// reversed, the rest kept: one GATHER whose source index (len - 1 - t where t < len, else t) is
// computed from the lengths at run time.
void lower_ReverseSequence(Importer& imp, const onnx::NodeProto&) {
  const OVal& x = imp.in(0);
  const OVal& lens = imp.in(1);
  const int64_t r = static_cast<int64_t>(x.shape.size());
  if (r < 2) imp.fail("the input must have rank >= 2", ErrorCode::kInvalidArgument);
  const int64_t ta = norm_axis(imp, imp.attr_int("time_axis", 0), r, "time_axis"), ba = norm_axis(imp, imp.attr_int("batch_axis", 1), r, "batch_axis");
  if (ta == ba || ta > 1 || ba > 1) imp.fail("time_axis and batch_axis must be 0 and 1 in either order", ErrorCode::kInvalidArgument);
  const int64_t b = x.shape[static_cast<size_t>(ba)], t = x.shape[static_cast<size_t>(ta)];
  if (lens.shape != Shape{b}) imp.fail("sequence_lens must be [" + std::to_string(b) + "]", ErrorCode::kInvalidArgument);
  const int64_t rest = shape_elements(x.shape) / (b * t);
  std::vector<int64_t> perm{ba, ta};
  for (int64_t d = 2; d < r; ++d) perm.push_back(d);
  TVal v = imp.reshape(imp.transpose(imp.plain(x), perm), {b, t, rest});
  std::vector<int64_t> iota(static_cast<size_t>(t));
  for (int64_t i = 0; i < t; ++i) iota[static_cast<size_t>(i)] = i;
  TVal ti = imp.const_tensor(Tensor::from_ints({DType::kInt32, {1, t}}, iota));
  TVal len = imp.reshape(imp.cast(imp.plain(lens), DType::kInt32), {b, 1});
  TVal rev = imp.sub(imp.sub(len, imp.scalar(DType::kInt32, 1, 2)), ti);
  TVal src = imp.emit(Op::SELECT, {imp.emit(Op::GREATER, {len, ti}), rev, imp.emit(Op::TILE, {ti, imp.shape_const({b, 1})})});
  TVal g = imp.emit(Op::GATHER, {v, src});
  Shape ps;
  for (int64_t d : perm) ps.push_back(x.shape[static_cast<size_t>(d)]);
  imp.set_out(0, imp.transpose(imp.reshape(g, ps), inverse_perm(perm)), {}, x.onnx_type);
}

}  // namespace weft::onnxfe
