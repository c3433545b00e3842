// Vulkan backend: lowering of the data-layout, scatter/gather and image operators (see lower.h):
// CONCAT, PAD, REVERSE, SLICE, TILE, TRANSPOSE, GATHER, SCATTER, RESIZE.
//
// TRANSPOSE, SLICE, TILE, REVERSE, PAD and CONCAT are one shader, ly_map: a copy over an iteration
// space of up to six dimensions in which every coordinate maps to a source position by a stride
// (negative for REVERSE), a modulo (TILE) or an offset with a range check (PAD, whose positions
// outside the input get the pad value). Each operator only describes its map (IndexMap); emit_map
// drops size-1 dimensions, merges dimensions contiguous on both sides and widens the unit of the
// copy to up to 16 bytes over contiguous runs, so a CONCAT along any axis, a SLICE of whole rows or
// an identity-like TRANSPOSE becomes a one- or two-dimensional copy of 16-byte units. A map that
// swaps the destination's contiguous dimension with the source's (NCHW <-> NHWC, [.., X, Y] ->
// [.., Y, X]) goes through 32 x 32 tiles in shared memory instead (ly_transpose), so that reads and
// writes are both contiguous. CONCAT has its own shader (ly_concat): up to eight inputs per
// dispatch, as rows of 4-byte units; one ly_map per input where rows are not whole units.
//
// The shape operands (PAD's padding, SLICE's start / size, TILE's multiples, RESIZE's scale /
// offset / border) must come from CONST_SHAPE nodes and PAD's pad_const from a CONST node: they
// become specialization constants. Every ERROR_IF condition the reference kernel checks is checked
// here too, so a node the Vulkan path would run out of bounds is declined and the reference reports
// the error.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "backends/vulkan/lower.h"

namespace weft::vkb {
namespace {

using backend::Composite;

const TensorType& in_type(const Graph& g, int node, size_t i) { return g.value(g.node(node).inputs.at(i)).type; }
const TensorType& out_type(const Graph& g, int node) { return g.value(g.node(node).outputs.at(0)).type; }

std::string str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// What every operator of the family needs: a single node, every tensor with a shader type and int32
// indexing, a non-empty output.
std::string check_common(const Graph& g, const Composite& c) {
  const Node& n = g.node(c.anchor);
  if (!c.single()) return std::string(op_name(n.op)) + " runs alone on Vulkan (no fused PAD or epilogue)";
  std::string why = check_tensors(g, c.anchor);
  if (!why.empty()) return why;
  if (out_type(g, c.anchor).num_elements() == 0) return std::string(op_name(n.op)) + " with an empty output";
  return "";
}

// ---------------------------------------------------------------------------------------------
// The index-mapping copy (shaders/ly_map.comp).

constexpr int kMapRank = 6;  // dimensions of ly_map's iteration space

struct MapDim {
  enum Mode : int32_t { kPlain = 0, kModulo = 1, kChecked = 2, kSelect = 3 };
  int64_t size = 1;   // extent of the coordinate c
  int64_t src = 0;    // source stride (elements; may be negative)
  int64_t dst = 0;    // destination stride
  Mode mode = kPlain; // kPlain: i = c; kModulo: i = c % lim; kChecked: i = c + off, pad unless 0 <= i < lim;
                      // kSelect (ly_map2): c picks the source (0 or 1), i = 0
  int64_t off = 0;
  int64_t lim = 1;
};

struct IndexMap {
  std::vector<MapDim> dims;  // outermost first
  int64_t src_base = 0, dst_base = 0;
  size_t elem = 1;           // element bytes
  std::array<uint8_t, 8> pad{};  // the pad element (kChecked dimensions), `elem` bytes
};

// Drops dimensions that contribute nothing, merges plain dimensions contiguous on both sides.
void simplify(IndexMap& m) {
  std::vector<MapDim> dims;
  for (const MapDim& d : m.dims) {
    if (d.size == 1) {
      // c = 0: a plain or modulo dimension reads index 0; a checked one index `off`.
      if (d.mode == MapDim::kChecked) {
        if (d.off < 0 || d.off >= d.lim) {  // every position is padding: keep the check
          dims.push_back(d);
          continue;
        }
        m.src_base += d.off * d.src;
      }
      continue;
    }
    if (d.mode == MapDim::kModulo && d.lim == 1) {  // TILE of a size-1 dimension: a broadcast
      dims.push_back({d.size, 0, d.dst, MapDim::kPlain, 0, 1});
      continue;
    }
    dims.push_back(d);
  }
  std::vector<MapDim> merged;
  for (const MapDim& d : dims) {
    if (!merged.empty()) {
      MapDim& a = merged.back();
      if (a.mode == MapDim::kPlain && d.mode == MapDim::kPlain && a.src == d.src * d.size && a.dst == d.dst * d.size) {
        a = {a.size * d.size, d.src, d.dst, MapDim::kPlain, 0, 1};
        continue;
      }
    }
    merged.push_back(d);
  }
  m.dims = std::move(merged);
}

// The widest unit (bytes, up to 16) the copy can move: the innermost dimension contiguous on both
// sides with its extent, offset and limit multiples of the unit, every other stride and the bases
// multiples too.
size_t unit_bytes(const IndexMap& m) {
  for (size_t u = 16; u > m.elem; u /= 2) {
    if (u % m.elem != 0) continue;
    const int64_t f = static_cast<int64_t>(u / m.elem);
    if (m.dims.empty()) break;
    const MapDim& in = m.dims.back();
    bool ok = in.src == 1 && in.dst == 1 && in.size % f == 0 && m.src_base % f == 0 && m.dst_base % f == 0;
    if (in.mode != MapDim::kPlain) ok = ok && in.lim % f == 0 && in.off % f == 0;
    for (size_t i = 0; ok && i + 1 < m.dims.size(); ++i) ok = m.dims[i].src % f == 0 && m.dims[i].dst % f == 0;
    if (ok) return u;
  }
  return m.elem;
}

// The tiled path of a simplified map (shaders/ly_transpose.comp): every dimension plain, the
// innermost one (A) contiguous in the destination but strided in the source, another one (B)
// contiguous in the source, both at least 16 long (shorter ones waste most of a 32 x 32 tile; the
// per-element copy reads them well enough). False when the map is not of that form.
bool emit_tiled_transpose(Lowering& l, const IndexMap& m, Arg src, Arg dst) {
  if (m.elem > 4 || m.dims.size() < 2) return false;
  // 32 x 8 = 256 invocations per workgroup, above Vulkan's guaranteed 128: a device allowing fewer
  // takes the per-element copy.
  if (l.caps.max_invocations < 256) return false;
  for (const MapDim& d : m.dims)
    if (d.mode != MapDim::kPlain) return false;
  const MapDim& a = m.dims.back();
  if (a.dst != 1 || a.src == 1 || a.size < 16) return false;
  size_t b = m.dims.size();
  for (size_t i = 0; i + 1 < m.dims.size(); ++i)
    if (m.dims[i].src == 1 && m.dims[i].size >= 16) b = i;
  if (b == m.dims.size()) return false;
  std::vector<int32_t> batch;  // (extent, source stride, destination stride) per other dimension
  int64_t groups = ((a.size + 31) / 32) * ((m.dims[b].size + 31) / 32);
  for (size_t i = 0; i + 1 < m.dims.size(); ++i) {
    if (i == b) continue;
    const MapDim& d = m.dims[i];
    batch.insert(batch.end(), {static_cast<int32_t>(d.size), static_cast<int32_t>(d.src), static_cast<int32_t>(d.dst)});
    groups *= d.size;
  }
  // Leading unused batch dimensions (four in the shader, outermost first).
  while (batch.size() < 12) batch.insert(batch.begin(), {1, 0, 0});
  if (groups > std::numeric_limits<int32_t>::max()) return false;
  std::vector<int32_t> spec = {static_cast<int32_t>(m.elem),       static_cast<int32_t>(groups),
                               static_cast<int32_t>(a.size),       static_cast<int32_t>(m.dims[b].size),
                               static_cast<int32_t>(a.src),        static_cast<int32_t>(m.dims[b].dst),
                               static_cast<int32_t>(m.src_base),   static_cast<int32_t>(m.dst_base)};
  spec.insert(spec.end(), batch.begin(), batch.end());
  l.dispatch("ly_transpose", std::move(spec), {src, dst}, l.grid(static_cast<uint64_t>(groups) * 256, 256));
  return true;
}

// `src2`: a second source of the first's size, read where a kSelect dimension's coordinate is 1
// (ly_map2).
void emit_map(Lowering& l, IndexMap m, Arg src, Arg dst, std::optional<Arg> src2 = std::nullopt) {
  simplify(m);
  const size_t unit = unit_bytes(m);
  const int64_t f = static_cast<int64_t>(unit / m.elem);
  if (f > 1) {
    MapDim& in = m.dims.back();
    in.size /= f;
    in.off /= f;
    if (in.mode != MapDim::kPlain) in.lim /= f;
    for (size_t i = 0; i + 1 < m.dims.size(); ++i) m.dims[i].src /= f, m.dims[i].dst /= f;
    m.src_base /= f;
    m.dst_base /= f;
  }
  if (m.dims.size() > static_cast<size_t>(kMapRank)) l.fail("index map of rank " + std::to_string(m.dims.size()));
  if (!src2 && emit_tiled_transpose(l, m, src, dst)) return;
  int64_t total = 1;
  for (const MapDim& d : m.dims) total *= d.size;
  if (total == 0) return;
  if (total > std::numeric_limits<int32_t>::max()) l.fail("copy of more than 2^31 units");
  // The pad element repeated over the unit, as four little-endian words.
  std::array<uint8_t, 16> pattern{};
  for (size_t b = 0; b < unit; ++b) pattern[b] = m.pad[b % m.elem];
  std::array<int32_t, 4> words{};
  std::memcpy(words.data(), pattern.data(), sizeof(words));

  std::vector<int32_t> spec = {static_cast<int32_t>(unit), static_cast<int32_t>(total),
                               static_cast<int32_t>(m.src_base), static_cast<int32_t>(m.dst_base),
                               words[0], words[1], words[2], words[3]};
  // The shader's dimension 0 is the outermost: leading unused dimensions have extent 1.
  for (size_t i = m.dims.size(); i < static_cast<size_t>(kMapRank); ++i) spec.insert(spec.end(), {1, 0, 0, 0, 0, 1});
  for (const MapDim& d : m.dims)
    spec.insert(spec.end(), {static_cast<int32_t>(d.size), static_cast<int32_t>(d.src), static_cast<int32_t>(d.dst),
                             static_cast<int32_t>(d.mode), static_cast<int32_t>(d.off), static_cast<int32_t>(d.lim)});
  if (src2) l.dispatch("ly_map2", std::move(spec), {src, dst, *src2}, l.grid(static_cast<uint64_t>(total)));
  else l.dispatch("ly_map", std::move(spec), {src, dst}, l.grid(static_cast<uint64_t>(total)));
}

// The map of an operator that writes its whole output once: the iteration space is the output's
// shape, destination strides the output's.
IndexMap output_map(const TensorType& out) {
  IndexMap m;
  m.elem = storage_size(out.dtype);
  const std::vector<int64_t> st = strides_of(out.shape);
  for (size_t d = 0; d < out.shape.size(); ++d) m.dims.push_back({out.shape[d], 0, st[d], MapDim::kPlain, 0, 1});
  return m;
}

// ---------------------------------------------------------------------------------------------
// TRANSPOSE

std::string check_transpose(const Graph& g, const Composite& c, const Caps&) {
  std::string why = check_common(g, c);
  if (!why.empty()) return why;
  const TensorType& in = in_type(g, c.anchor, 0);
  const TensorType& out = out_type(g, c.anchor);
  const std::vector<int64_t>& perms = g.node(c.anchor).attr_ints("perms");
  const size_t r = in.shape.size();
  std::vector<bool> seen(r, false);
  if (perms.size() != r || out.shape.size() != r) return "TRANSPOSE: perms must have one entry per dimension";
  for (size_t i = 0; i < r; ++i) {
    if (perms[i] < 0 || perms[i] >= static_cast<int64_t>(r) || seen[perms[i]])
      return "TRANSPOSE: perms " + str(perms) + " is not a permutation";
    seen[perms[i]] = true;
    if (out.shape[i] != in.shape[perms[i]]) return "TRANSPOSE: output shape is not the permuted input shape";
  }
  return "";
}

void lower_transpose(Lowering& l, const Composite&) {
  const Node& n = l.n();
  const TensorType& in = l.type(n.inputs[0]);
  const std::vector<int64_t>& perms = n.attr_ints("perms");
  IndexMap m = output_map(l.type(n.outputs[0]));
  const std::vector<int64_t> ist = strides_of(in.shape);
  for (size_t d = 0; d < m.dims.size(); ++d) m.dims[d].src = ist[perms[d]];
  emit_map(l, std::move(m), l.in(n.inputs[0]), l.out(n.outputs[0]));
}

// ---------------------------------------------------------------------------------------------
// SLICE

std::string check_slice(const Graph& g, const Composite& c, const Caps&) {
  std::string why = check_common(g, c);
  if (!why.empty()) return why;
  const Node& n = g.node(c.anchor);
  const auto start = const_shape(g, n.inputs[1]), size = const_shape(g, n.inputs[2]);
  if (!start || !size) return "SLICE: start and size must be CONST_SHAPE values";
  const Shape& in = in_type(g, c.anchor, 0).shape;
  if (start->size() != in.size() || size->size() != in.size()) return "SLICE: start and size need one entry per dimension";
  if (*size != out_type(g, c.anchor).shape) return "SLICE: output shape differs from size " + str(*size);
  for (size_t i = 0; i < in.size(); ++i)
    if ((*start)[i] < 0 || (*size)[i] <= 0 || (*start)[i] + (*size)[i] > in[i])
      return "SLICE: start " + str(*start) + " size " + str(*size) + " outside the input";
  return "";
}

void lower_slice(Lowering& l, const Composite&) {
  const Node& n = l.n();
  const std::vector<int64_t> start = *const_shape(l.graph, n.inputs[1]);
  IndexMap m = output_map(l.type(n.outputs[0]));
  const std::vector<int64_t> ist = strides_of(l.type(n.inputs[0]).shape);
  for (size_t d = 0; d < m.dims.size(); ++d) {
    m.dims[d].src = ist[d];
    m.src_base += start[d] * ist[d];
  }
  emit_map(l, std::move(m), l.in(n.inputs[0]), l.out(n.outputs[0]));
}

// ---------------------------------------------------------------------------------------------
// TILE

std::string check_tile(const Graph& g, const Composite& c, const Caps&) {
  std::string why = check_common(g, c);
  if (!why.empty()) return why;
  const auto mult = const_shape(g, g.node(c.anchor).inputs[1]);
  if (!mult) return "TILE: multiples must be a CONST_SHAPE value";
  const Shape& in = in_type(g, c.anchor, 0).shape;
  const Shape& out = out_type(g, c.anchor).shape;
  if (mult->size() != in.size() || out.size() != in.size()) return "TILE: multiples need one entry per dimension";
  for (size_t i = 0; i < in.size(); ++i)
    if ((*mult)[i] < 0 || in[i] * (*mult)[i] != out[i]) return "TILE: output shape is not input shape times multiples";
  return "";
}

void lower_tile(Lowering& l, const Composite&) {
  const Node& n = l.n();
  const Shape& in = l.type(n.inputs[0]).shape;
  IndexMap m = output_map(l.type(n.outputs[0]));
  const std::vector<int64_t> ist = strides_of(in);
  for (size_t d = 0; d < m.dims.size(); ++d) {
    m.dims[d].src = ist[d];
    if (m.dims[d].size != in[d]) m.dims[d].mode = MapDim::kModulo, m.dims[d].lim = in[d];
  }
  emit_map(l, std::move(m), l.in(n.inputs[0]), l.out(n.outputs[0]));
}

// ---------------------------------------------------------------------------------------------
// REVERSE

std::string check_reverse(const Graph& g, const Composite& c, const Caps&) {
  std::string why = check_common(g, c);
  if (!why.empty()) return why;
  const int64_t axis = g.node(c.anchor).attr_int("axis");
  const TensorType& in = in_type(g, c.anchor, 0);
  if (axis < 0 || axis >= static_cast<int64_t>(in.shape.size())) return "REVERSE: axis out of range";
  if (in != out_type(g, c.anchor)) return "REVERSE: output type differs from the input's";
  return "";
}

void lower_reverse(Lowering& l, const Composite&) {
  const Node& n = l.n();
  const size_t axis = static_cast<size_t>(n.attr_int("axis"));
  const Shape& in = l.type(n.inputs[0]).shape;
  IndexMap m = output_map(l.type(n.outputs[0]));
  const std::vector<int64_t> ist = strides_of(in);
  for (size_t d = 0; d < m.dims.size(); ++d) m.dims[d].src = ist[d];
  // i = (k - 1) - c: a negative stride from the last row.
  m.dims[axis].src = -ist[axis];
  m.src_base = (in[axis] - 1) * ist[axis];
  emit_map(l, std::move(m), l.in(n.inputs[0]), l.out(n.outputs[0]));
}

// ---------------------------------------------------------------------------------------------
// PAD

std::string check_pad(const Graph& g, const Composite& c, const Caps&) {
  std::string why = check_common(g, c);
  if (!why.empty()) return why;
  const Node& n = g.node(c.anchor);
  const auto padding = const_shape(g, n.inputs[1]);
  if (!padding) return "PAD: padding must be a CONST_SHAPE value";
  const Tensor* value = const_tensor(g, n.inputs[2]);
  if (!value) return "PAD: pad_const must be a CONST tensor";
  const TensorType& in = in_type(g, c.anchor, 0);
  const TensorType& out = out_type(g, c.anchor);
  if (value->dtype() != in.dtype || value->num_elements() != 1 || out.dtype != in.dtype)
    return "PAD: pad_const must be one element of the input's type";
  const size_t r = in.shape.size();
  if (padding->size() != 2 * r || out.shape.size() != r) return "PAD: padding needs two entries per dimension";
  for (size_t i = 0; i < r; ++i)
    if ((*padding)[2 * i] < 0 || (*padding)[2 * i + 1] < 0 ||
        out.shape[i] != (*padding)[2 * i] + in.shape[i] + (*padding)[2 * i + 1])
      return "PAD: padding " + str(*padding) + " does not give the output shape";
  return "";
}

void lower_pad(Lowering& l, const Composite&) {
  const Node& n = l.n();
  const std::vector<int64_t> padding = *const_shape(l.graph, n.inputs[1]);
  const Tensor& value = *const_tensor(l.graph, n.inputs[2]);
  const Shape& in = l.type(n.inputs[0]).shape;
  IndexMap m = output_map(l.type(n.outputs[0]));
  std::memcpy(m.pad.data(), value.bytes(), m.elem);
  const std::vector<int64_t> ist = strides_of(in);
  for (size_t d = 0; d < m.dims.size(); ++d) {
    m.dims[d].src = ist[d];
    if (padding[2 * d] != 0 || padding[2 * d + 1] != 0)
      m.dims[d].mode = MapDim::kChecked, m.dims[d].off = -padding[2 * d], m.dims[d].lim = in[d];
  }
  emit_map(l, std::move(m), l.in(n.inputs[0]), l.out(n.outputs[0]));
}

// ---------------------------------------------------------------------------------------------
// CONCAT

std::string check_concat(const Graph& g, const Composite& c, const Caps&) {
  std::string why = check_common(g, c);
  if (!why.empty()) return why;
  const Node& n = g.node(c.anchor);
  const TensorType& out = out_type(g, c.anchor);
  const int64_t axis = n.attr_int("axis");
  if (axis < 0 || axis >= static_cast<int64_t>(out.shape.size())) return "CONCAT: axis out of range";
  if (n.inputs.empty()) return "CONCAT without inputs";
  int64_t sum = 0;
  for (ValueId v : n.inputs) {
    const TensorType& t = g.value(v).type;
    if (t.dtype != out.dtype || t.shape.size() != out.shape.size()) return "CONCAT: an input's type or rank differs";
    for (size_t i = 0; i < t.shape.size(); ++i)
      if (static_cast<int64_t>(i) != axis && t.shape[i] != out.shape[i]) return "CONCAT: input shapes do not match";
    sum += t.shape[axis];
  }
  if (sum != out.shape[axis]) return "CONCAT: output axis length is not the sum of the inputs'";
  return "";
}

void lower_concat(Lowering& l, const Composite&) {
  const Node& n = l.n();
  const TensorType& out = l.type(n.outputs[0]);
  const size_t axis = static_cast<size_t>(n.attr_int("axis"));
  if (lower_concat_views(l, n, {})) return;
  // Rows of another size (int8 / fp16 pieces of an odd extent): one index map per input.
  const std::vector<int64_t> ost = strides_of(out.shape);
  int64_t at = 0;  // the input's first position along the axis
  for (ValueId v : n.inputs) {
    const Shape& s = l.type(v).shape;
    if (s[axis] > 0) {
      IndexMap m;
      m.elem = storage_size(out.dtype);
      const std::vector<int64_t> ist = strides_of(s);
      for (size_t d = 0; d < s.size(); ++d) m.dims.push_back({s[d], ist[d], ost[d], MapDim::kPlain, 0, 1});
      m.dst_base = at * ost[axis];
      emit_map(l, std::move(m), l.in(v), l.out(n.outputs[0]));
    }
    at += s[axis];
  }
}

// ---------------------------------------------------------------------------------------------
// GATHER / SCATTER (shaders/ly_gather.comp, ly_scatter.comp). Rows of C elements move as units of
// the widest size (up to 16 bytes) dividing a row.

size_t row_unit(size_t elem, int64_t c) {
  const int64_t row = c * static_cast<int64_t>(elem);
  for (int64_t u = 16; u > static_cast<int64_t>(elem); u /= 2)
    if (row % u == 0) return static_cast<size_t>(u);
  return elem;
}

std::string check_gather(const Graph& g, const Composite& c, const Caps&) {
  std::string why = check_common(g, c);
  if (!why.empty()) return why;
  const TensorType& values = in_type(g, c.anchor, 0);
  const TensorType& idx = in_type(g, c.anchor, 1);
  const TensorType& out = out_type(g, c.anchor);
  if (values.shape.size() != 3 || idx.shape.size() != 2 || idx.dtype != DType::kInt32 || out.dtype != values.dtype ||
      idx.shape[0] != values.shape[0] || out.shape != Shape{values.shape[0], idx.shape[1], values.shape[2]})
    return "GATHER: operand shapes or types do not agree";
  return "";
}

}  // namespace

void lower_gather_indices(Lowering& l, ValueId indices, bool wrap) {
  const Node& n = l.n();
  const TensorType& values = l.type(n.inputs[0]);
  const int64_t N = values.shape[0], K = values.shape[1], C = values.shape[2];
  const int64_t W = l.type(n.inputs[1]).shape[1];
  const size_t elem = storage_size(values.dtype), unit = row_unit(elem, C);
  const int64_t cu = C * static_cast<int64_t>(elem) / static_cast<int64_t>(unit);
  const int64_t total = N * W * cu;
  l.dispatch("ly_gather",
             {static_cast<int32_t>(unit), static_cast<int32_t>(total), static_cast<int32_t>(K),
              static_cast<int32_t>(W), static_cast<int32_t>(cu), wrap ? 1 : 0},
             {l.in(n.inputs[0]), l.in(indices), l.out(n.outputs[0])}, l.grid(static_cast<uint64_t>(total)));
}

namespace {

void lower_gather(Lowering& l, const Composite&) { lower_gather_indices(l, l.n().inputs[1], false); }

std::string check_scatter(const Graph& g, const Composite& c, const Caps&) {
  std::string why = check_common(g, c);
  if (!why.empty()) return why;
  const TensorType& vin = in_type(g, c.anchor, 0);
  const TensorType& idx = in_type(g, c.anchor, 1);
  const TensorType& input = in_type(g, c.anchor, 2);
  const TensorType& out = out_type(g, c.anchor);
  if (vin.shape.size() != 3 || idx.shape.size() != 2 || idx.dtype != DType::kInt32 || out != vin ||
      input.dtype != vin.dtype || idx.shape[0] != vin.shape[0] ||
      input.shape != Shape{vin.shape[0], idx.shape[1], vin.shape[2]})
    return "SCATTER: operand shapes or types do not agree";
  return "";
}

void lower_scatter(Lowering& l, const Composite&) {
  const Node& n = l.n();
  const TensorType& vin = l.type(n.inputs[0]);
  const int64_t N = vin.shape[0], K = vin.shape[1], C = vin.shape[2];
  const int64_t W = l.type(n.inputs[1]).shape[1];
  const size_t elem = storage_size(vin.dtype), unit = row_unit(elem, C);
  const int64_t cu = C * static_cast<int64_t>(elem) / static_cast<int64_t>(unit);
  // The owner table: per [n, k], the w whose row lands there (-1: none).
  Arg owner = l.scratch(static_cast<size_t>(N * K) * sizeof(int32_t), true);
  auto pass = [&](int32_t p, int64_t total, bool owner_write) {
    Arg o = owner;
    o.write = owner_write;
    // Every pass binds five buffers (the shader declares them all). values_out is written by pass
    // 2 only; passes 0 and 1 bind values_in in its place (unused there), so that no dispatch
    // claims to read values_out before it is written.
    Arg out = p == 2 ? l.out(n.outputs[0]) : l.in(n.inputs[0]);
    l.dispatch("ly_scatter",
               {p, static_cast<int32_t>(unit), static_cast<int32_t>(total), static_cast<int32_t>(K),
                static_cast<int32_t>(W), static_cast<int32_t>(cu)},
               {o, l.in(n.inputs[1]), l.in(n.inputs[0]), l.in(n.inputs[2]), out},
               l.grid(static_cast<uint64_t>(total)));
  };
  pass(0, N * K, true);
  if (N * W > 0) pass(1, N * W, true);
  pass(2, N * K * cu, false);
}

// ---------------------------------------------------------------------------------------------
// RESIZE (shaders/ly_resize.comp)

std::string check_resize(const Graph& g, const Composite& c, const Caps&) {
  std::string why = check_common(g, c);
  if (!why.empty()) return why;
  const Node& n = g.node(c.anchor);
  const auto scale = const_shape(g, n.inputs[1]), offset = const_shape(g, n.inputs[2]),
             border = const_shape(g, n.inputs[3]);
  if (!scale || !offset || !border) return "RESIZE: scale, offset and border must be CONST_SHAPE values";
  if (scale->size() != 4 || offset->size() != 2 || border->size() != 2)
    return "RESIZE: scale needs 4 values, offset and border 2";
  const int64_t mode = n.attr_int("mode");
  const bool bilinear = mode == static_cast<int64_t>(ResizeMode::kBilinear);
  if (!bilinear && mode != static_cast<int64_t>(ResizeMode::kNearest)) return "RESIZE: unknown mode";
  const TensorType& in = in_type(g, c.anchor, 0);
  const TensorType& out = out_type(g, c.anchor);
  if (in.shape.size() != 4 || out.shape.size() != 4 || out.shape[0] != in.shape[0] || out.shape[3] != in.shape[3])
    return "RESIZE: input and output must be [N,H,W,C] of the same N and C";
  const DType it = in.dtype, ot = out.dtype;
  const bool types_ok = it == DType::kInt8    ? ot == (bilinear ? DType::kInt32 : DType::kInt8)
                        : it == DType::kInt16 ? ot == (bilinear ? DType::kInt48 : DType::kInt16)
                                              : (it == DType::kFp16 || it == DType::kFp32) && ot == it;
  if (!types_ok) return std::string("RESIZE: types ") + dtype_name(it) + " -> " + dtype_name(ot) + " not allowed";
  // The spec's ERROR_IFs (as the reference kernel); they keep every source index inside the image.
  const int64_t IH = in.shape[1], IW = in.shape[2], OH = out.shape[1], OW = out.shape[2];
  const int64_t sy_n = (*scale)[0], sy_d = (*scale)[1], sx_n = (*scale)[2], sx_d = (*scale)[3];
  const int64_t off_y = (*offset)[0], off_x = (*offset)[1], bor_y = (*border)[0], bor_x = (*border)[1];
  if (std::max({OH, OW, IH, IW}) >= 16384) return "RESIZE: image dimensions must be < 16384";
  if (sy_n <= 0 || sy_d <= 0 || sx_n <= 0 || sx_d <= 0 || sy_n > 2048 || sx_n > 2048 || sy_d >= 16 * sy_n ||
      sx_d >= 16 * sx_n)
    return "RESIZE: scale " + str(*scale) + " outside the allowed range";
  if (off_y < -sy_n || off_y >= 16 * sy_n || off_x < -sx_n || off_x >= 16 * sx_n ||
      bor_y < -16 * sy_n || bor_y >= sy_n || bor_x < -16 * sx_n || bor_x >= sx_n)
    return "RESIZE: offset " + str(*offset) + " or border " + str(*border) + " outside the allowed range";
  const int64_t ny = (IH - 1) * sy_n - off_y + bor_y, nx = (IW - 1) * sx_n - off_x + bor_x;
  if (IH < 1 || IW < 1 || ny % sy_d != 0 || nx % sx_d != 0 || OH != ny / sy_d + 1 || OW != nx / sx_d + 1)
    return "RESIZE: output height/width do not match scale, offset and border";
  return "";
}

void lower_resize(Lowering& l, const Composite&) {
  const Node& n = l.n();
  const std::vector<int64_t> scale = *const_shape(l.graph, n.inputs[1]);
  const std::vector<int64_t> offset = *const_shape(l.graph, n.inputs[2]);
  const TensorType& in = l.type(n.inputs[0]);
  const TensorType& out = l.type(n.outputs[0]);
  const bool bilinear = n.attr_int("mode") == static_cast<int64_t>(ResizeMode::kBilinear);
  const int64_t total = out.num_elements();
  std::vector<int32_t> spec = {code(in.dtype), code(out.dtype), bilinear ? 1 : 0, static_cast<int32_t>(total),
                               static_cast<int32_t>(in.shape[3]), static_cast<int32_t>(in.shape[1]),
                               static_cast<int32_t>(in.shape[2]), static_cast<int32_t>(out.shape[1]),
                               static_cast<int32_t>(out.shape[2])};
  for (int64_t v : scale) spec.push_back(static_cast<int32_t>(v));
  for (int64_t v : offset) spec.push_back(static_cast<int32_t>(v));
  l.dispatch("ly_resize", std::move(spec), {l.in(n.inputs[0]), l.out(n.outputs[0])},
             l.grid(static_cast<uint64_t>(total)));
}

}  // namespace

// CONCAT as rows of 4-byte units (shaders/ly_concat.comp), eight inputs per dispatch: DenseNet-121's
// 58 channel concatenations of up to 32 inputs took 593 dispatches (2.1 ms of 5.6 on an H200) as one
// copy per input. Needs every input's row (its extent along the axis times the inner dimensions) to
// be a whole number of 4-byte units; nullopt otherwise.
std::optional<ConcatRows> concat_rows(const Graph& g, const Node& n) {
  const TensorType& out = g.value(n.outputs[0]).type;
  const size_t axis = static_cast<size_t>(n.attr_int("axis"));
  const int64_t elem = static_cast<int64_t>(storage_size(out.dtype));
  ConcatRows r;
  int64_t inner = 1;
  for (size_t d = 0; d < axis; ++d) r.outer *= out.shape[d];
  for (size_t d = axis + 1; d < out.shape.size(); ++d) inner *= out.shape[d];
  r.step_bytes = inner * elem;
  if ((out.shape[axis] * r.step_bytes) % 4 != 0) return std::nullopt;
  r.row = out.shape[axis] * r.step_bytes / 4;
  if (r.outer * r.row > std::numeric_limits<int32_t>::max()) return std::nullopt;
  for (ValueId v : n.inputs) {
    const int64_t bytes = g.value(v).type.shape[axis] * r.step_bytes;
    if (bytes % 4 != 0) return std::nullopt;
    r.lengths.push_back(bytes / 4);
  }
  return r;
}

bool lower_concat_views(Lowering& l, const Node& n, const std::vector<ConcatInputView>& views) {
  const std::optional<ConcatRows> rows = concat_rows(l.graph, n);
  if (!rows) return false;
  const int64_t outer = rows->outer, row = rows->row;
  struct Part {
    ValueId v;
    int64_t length, stride, offset;  // in units
  };
  std::vector<Part> parts;  // empty inputs left out
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const int64_t len = rows->lengths[k];
    if (len == 0) continue;
    if (k < views.size() && views[k].src != kNoValue)
      parts.push_back({views[k].src, len, views[k].stride, views[k].offset});
    else
      parts.push_back({n.inputs[k], len, len, 0});
  }
  int64_t base = 0;
  for (size_t first = 0; first < parts.size(); first += 8) {
    const size_t count = std::min<size_t>(8, parts.size() - first);
    std::vector<int32_t> spec = {static_cast<int32_t>(count), static_cast<int32_t>(outer), static_cast<int32_t>(row),
                                 static_cast<int32_t>(base)};
    std::vector<Arg> args;
    int64_t slab = 0;
    for (size_t k = 0; k < 8; ++k) {
      const bool used = k < count;
      spec.push_back(used ? static_cast<int32_t>(parts[first + k].length) : 0);
      args.push_back(l.in(parts[first + (used ? k : 0)].v));
      if (used) slab += parts[first + k].length;
    }
    for (size_t k = 0; k < 8; ++k) spec.push_back(k < count ? static_cast<int32_t>(parts[first + k].stride) : 0);
    for (size_t k = 0; k < 8; ++k) spec.push_back(k < count ? static_cast<int32_t>(parts[first + k].offset) : 0);
    args.push_back(l.out(n.outputs[0]));
    l.dispatch("ly_concat", std::move(spec), std::move(args), l.grid(static_cast<uint64_t>(outer * slab)));
    base += slab;
  }
  return true;
}


void lower_view_copy(Lowering& l, ValueId src, const compiler::StridedView& v, ValueId dst, ValueId src2, int select) {
  if (v.split > 1 || shape_elements(v.dims) != l.type(dst).num_elements())
    l.fail("a folded view copy needs a plain view with the destination's element count");
  if ((src2 == kNoValue) != (select < 0) || (select >= 0 && (static_cast<size_t>(select) >= v.dims.size() ||
                                                              v.dims[static_cast<size_t>(select)] != 2 ||
                                                              l.type(src2) != l.type(src))))
    l.fail("a two-source view copy needs sources of one type and a selecting dimension of 2");
  IndexMap m;
  m.elem = storage_size(l.type(dst).dtype);
  const std::vector<int64_t> dst_strides = strides_of(v.dims);
  for (size_t d = 0; d < v.dims.size(); ++d) {
    const bool sel = static_cast<int>(d) == select;
    m.dims.push_back({v.dims[d], sel ? 0 : v.strides[d], dst_strides[d], sel ? MapDim::kSelect : MapDim::kPlain, 0, 1});
  }
  m.src_base = v.offset;
  emit_map(l, std::move(m), l.in(src), l.out(dst), src2 == kNoValue ? std::nullopt : std::optional<Arg>(l.in(src2)));
}

void register_layout(std::map<Op, OpLowering>& t) {
  t[Op::TRANSPOSE] = {nullptr, check_transpose, lower_transpose};
  t[Op::SLICE] = {nullptr, check_slice, lower_slice};
  t[Op::TILE] = {nullptr, check_tile, lower_tile};
  t[Op::REVERSE] = {nullptr, check_reverse, lower_reverse};
  t[Op::PAD] = {nullptr, check_pad, lower_pad};
  t[Op::CONCAT] = {nullptr, check_concat, lower_concat};
  t[Op::GATHER] = {nullptr, check_gather, lower_gather};
  t[Op::SCATTER] = {nullptr, check_scatter, lower_scatter};
  t[Op::RESIZE] = {nullptr, check_resize, lower_resize};
}

}  // namespace weft::vkb
