#include "compiler/strided_view.h"

#include <algorithm>

namespace weft::compiler {

StridedView StridedView::contiguous(const Shape& dims) {
  StridedView v{dims, std::vector<int64_t>(dims.size(), 1)};
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i)
    v.strides[static_cast<size_t>(i)] = v.strides[static_cast<size_t>(i) + 1] * std::max<int64_t>(dims[static_cast<size_t>(i) + 1], 1);
  return v;
}

bool StridedView::is_contiguous() const {
  if (split > 1) return false;
  StridedView c = contiguous(dims);
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != 1 && strides[i] != c.strides[i]) return false;
  return true;
}

StridedView transpose_view(const StridedView& v, const std::vector<int64_t>& perms) {
  StridedView r;
  r.offset = v.offset;
  for (int64_t p : perms) {
    r.dims.push_back(v.dims.at(static_cast<size_t>(p)));
    r.strides.push_back(v.strides.at(static_cast<size_t>(p)));
  }
  return r;
}

// Groups the old and new dimensions into runs of equal element count; within a run the old
// dimensions must be laid out contiguously relative to each other, and the new dimensions take
// strides from the run's innermost stride.
namespace {

// reshape_view without split views: nullopt when strides cannot express it.
std::optional<StridedView> plain_reshape(const StridedView& v, const Shape& to) {
  // Size-1 dimensions carry no addressing information: drop them from the source.
  Shape od;
  std::vector<int64_t> os;
  for (size_t i = 0; i < v.dims.size(); ++i) {
    if (v.dims[i] == 0) {
      StridedView empty = StridedView::contiguous(to);
      empty.offset = v.offset;
      return empty;
    }
    if (v.dims[i] != 1) {
      od.push_back(v.dims[i]);
      os.push_back(v.strides[i]);
    }
  }
  StridedView r{to, std::vector<int64_t>(to.size(), 1), v.offset};
  size_t oi = 0, ni = 0;
  const size_t on = od.size(), nn = to.size();
  while (ni < nn) {
    if (to[ni] == 1) {
      r.strides[ni] = oi < on ? os[oi] * od[oi] : 1;
      ++ni;
      continue;
    }
    if (oi >= on) return std::nullopt;
    // Extend a run until the products match.
    size_t o_end = oi + 1, n_end = ni + 1;
    int64_t op = od[oi], np = to[ni];
    while (op != np) {
      if (op < np) {
        if (o_end >= on) return std::nullopt;
        op *= od[o_end++];
      } else {
        if (n_end >= nn) return std::nullopt;
        np *= to[n_end++];
      }
    }
    for (size_t k = oi; k + 1 < o_end; ++k)
      if (os[k] != os[k + 1] * od[k + 1]) return std::nullopt;
    int64_t stride = os[o_end - 1];
    for (size_t k = n_end; k-- > ni;) {
      r.strides[k] = stride;
      stride *= to[k];
    }
    oi = o_end;
    ni = n_end;
  }
  if (oi != on) return std::nullopt;
  return r;
}

}  // namespace

std::optional<StridedView> reshape_view(const StridedView& v, const Shape& to, bool allow_split) {
  if (v.split > 1) {
    if (to == v.dims) return v;
    return std::nullopt;
  }
  if (auto r = plain_reshape(v, to)) return r;
  if (!allow_split) return std::nullopt;
  // [d0, d1, rest...] -> [d0 * d1, rest...] with d0's and d1's strides unrelated: a split axis.
  if (v.dims.size() < 2 || to.size() + 1 != v.dims.size() || to[0] != v.dims[0] * v.dims[1] || v.dims[1] < 2)
    return std::nullopt;
  for (size_t i = 1; i < to.size(); ++i)
    if (to[i] != v.dims[i + 1]) return std::nullopt;
  StridedView r;
  r.dims = to;
  r.strides.push_back(v.strides[1]);
  r.strides.insert(r.strides.end(), v.strides.begin() + 2, v.strides.end());
  r.offset = v.offset;
  r.split = v.dims[1];
  r.outer = v.strides[0];
  return r;
}

std::optional<StridedView> slice_merged_view(const StridedView& v, const Shape& to, const std::vector<int64_t>& start,
                                             const Shape& size) {
  if (v.split > 1 || start.size() != to.size() || size.size() != to.size()) return std::nullopt;
  StridedView r{{}, {}, v.offset};
  size_t vi = 0;
  for (size_t ti = 0; ti < to.size(); ++ti) {
    // The run of v's dimensions whose product is to[ti] (at least one; v's trailing size-1
    // dimensions join the last run).
    const size_t first = vi;
    int64_t product = 1;
    do {
      if (vi >= v.dims.size()) return std::nullopt;
      product *= v.dims[vi++];
    } while (product != to[ti]);
    if (ti + 1 == to.size())
      while (vi < v.dims.size() && v.dims[vi] == 1) ++vi;
    int64_t inner = 1;
    for (size_t k = first + 1; k < vi; ++k) inner *= v.dims[k];
    if (inner == 0 || start[ti] % inner != 0 || size[ti] % inner != 0) return std::nullopt;
    r.dims.push_back(size[ti] / inner);
    r.strides.push_back(v.strides[first]);
    r.offset += (start[ti] / inner) * v.strides[first];
    for (size_t k = first + 1; k < vi; ++k) {
      r.dims.push_back(v.dims[k]);
      r.strides.push_back(v.strides[k]);
    }
  }
  if (vi != v.dims.size()) return std::nullopt;
  return r;
}

StridedView slice_view(const StridedView& v, const std::vector<int64_t>& start, const Shape& size) {
  StridedView r{size, v.strides, v.offset};
  for (size_t i = 0; i < start.size() && i < v.strides.size(); ++i) r.offset += start[i] * v.strides[i];
  return r;
}

std::optional<StridedView> apply_node(const Graph& g, const Node& n, const StridedView& v, bool allow_split) {
  if (v.split > 1 && n.op != Op::RESHAPE) return std::nullopt;
  if (n.op == Op::TRANSPOSE) return transpose_view(v, n.attr_ints("perms"));
  if (n.op == Op::RESHAPE) return reshape_view(v, g.value(n.outputs[0]).type.shape, allow_split);
  if (n.op == Op::SLICE) {
    const int p = g.value(n.inputs[1]).producer;
    if (p < 0 || g.node(p).op != Op::CONST_SHAPE) return std::nullopt;
    return slice_view(v, g.node(p).attr_ints("values"), g.value(n.outputs[0]).type.shape);
  }
  return std::nullopt;
}

namespace {

// A view whose axes may each be several strided parts (outer to inner; parts of extent 1 dropped):
// what a chain of TRANSPOSE / RESHAPE / SLICE addresses when an intermediate value is no strided
// view but the end is (torch's seq-first attention: [S, B, E] -> [S, B*H, D] merges axes with
// unrelated strides, the TRANSPOSE and RESHAPE after it split them apart again).
struct Part {
  int64_t extent, stride;
};
struct PartsView {
  std::vector<std::vector<Part>> axes;
  int64_t offset = 0;
};

void push_part(std::vector<Part>& parts, Part p) {
  if (p.extent == 1) return;
  if (!parts.empty() && parts.back().stride == p.stride * p.extent) {
    parts.back() = {parts.back().extent * p.extent, p.stride};  // contiguous with the outer part
    return;
  }
  parts.push_back(p);
}

PartsView parts_of(const Shape& dims) {
  PartsView v;
  const StridedView c = StridedView::contiguous(dims);
  for (size_t i = 0; i < dims.size(); ++i) {
    v.axes.emplace_back();
    push_part(v.axes.back(), {dims[i], c.strides[i]});
  }
  return v;
}

std::optional<PartsView> parts_reshape(const PartsView& v, const Shape& to) {
  std::vector<Part> flat;  // every part, outermost first, contiguous neighbours merged
  for (const auto& a : v.axes)
    for (const Part& p : a) push_part(flat, p);
  PartsView r{{}, v.offset};
  size_t k = 0;
  for (int64_t n : to) {
    r.axes.emplace_back();
    for (int64_t need = n; need > 1;) {
      if (k >= flat.size()) return std::nullopt;
      Part& p = flat[k];
      if (need % p.extent == 0) {  // the whole part
        push_part(r.axes.back(), p);
        need /= p.extent;
        ++k;
      } else if (p.extent % need == 0) {  // its outer `need` indices; the inner rest stays
        push_part(r.axes.back(), {need, p.stride * (p.extent / need)});
        p.extent /= need;
        need = 1;
      } else {
        return std::nullopt;
      }
    }
  }
  if (k != flat.size()) return std::nullopt;
  return r;
}

std::optional<PartsView> parts_node(const Graph& g, const Node& n, const PartsView& v) {
  if (n.op == Op::TRANSPOSE) {
    PartsView r{{}, v.offset};
    for (int64_t p : n.attr_ints("perms")) r.axes.push_back(v.axes.at(static_cast<size_t>(p)));
    return r;
  }
  if (n.op == Op::RESHAPE) return parts_reshape(v, g.value(n.outputs[0]).type.shape);
  if (n.op == Op::SLICE) {
    const int p = g.value(n.inputs[1]).producer;
    if (p < 0 || g.node(p).op != Op::CONST_SHAPE) return std::nullopt;
    const std::vector<int64_t>& start = g.node(p).attr_ints("values");
    const Shape& size = g.value(n.outputs[0]).type.shape;
    if (start.size() != v.axes.size() || size.size() != v.axes.size() || shape_elements(size) == 0) return std::nullopt;
    PartsView r = v;
    for (size_t i = 0; i < v.axes.size(); ++i) {
      std::vector<Part>& a = r.axes[i];
      if (a.empty()) continue;  // (size 1: start 0)
      // Only the outermost part is sliced: start and size whole multiples of the inner parts.
      int64_t inner = 1;
      for (size_t j = 1; j < a.size(); ++j) inner *= a[j].extent;
      if (start[i] % inner != 0 || size[i] % inner != 0) return std::nullopt;
      r.offset += start[i] / inner * a[0].stride;
      a[0].extent = size[i] / inner;
      if (a[0].extent == 1) a.erase(a.begin());
    }
    return r;
  }
  return std::nullopt;
}

// A RESHAPE, or a TRANSPOSE that keeps the order of the axes bigger than 1 (the same elements in
// the same order: a reshape).
bool reshape_like(const Graph& g, const Node& n) {
  if (n.op == Op::RESHAPE) return true;
  if (n.op != Op::TRANSPOSE) return false;
  const Shape& in = g.value(n.inputs[0]).type.shape;
  int64_t last = -1;
  for (int64_t p : n.attr_ints("perms")) {
    if (in.at(static_cast<size_t>(p)) == 1) continue;
    if (p < last) return false;
    last = p;
  }
  return true;
}

// The StridedView of `v` with dims `dims`: one part per axis, or two on the first axis where
// `allow_split` (a split view); nullopt otherwise.
std::optional<StridedView> to_strided(const PartsView& v, const Shape& dims, bool allow_split) {
  for (int64_t d : dims)
    if (d == 0) return std::nullopt;
  StridedView r{dims, std::vector<int64_t>(dims.size(), 1), v.offset};
  int64_t below = 1;  // a size-1 axis takes the stride it would have in contiguous memory of the rest
  for (size_t i = dims.size(); i-- > 0;) {
    const auto& a = v.axes[i];
    if (a.size() > 2 || (a.size() == 2 && (i != 0 || !allow_split))) return std::nullopt;
    r.strides[i] = a.empty() ? below : a.back().stride;
    if (a.size() == 2) {
      r.split = a[1].extent;
      r.outer = a[0].stride;
    }
    below = a.empty() ? below : a.front().stride * a.front().extent;
  }
  return r;
}

}  // namespace

// Step by step where every value on the way is a strided view (the common case, and the strides
// earlier releases gave); otherwise through PartsView, which takes chains whose middle is none.
std::optional<StridedView> forward_chain(const Graph& g, const std::vector<int>& chain, bool allow_split) {
  if (chain.empty()) return std::nullopt;
  const Shape& in = g.value(g.node(chain.front()).inputs[0]).type.shape;
  std::optional<StridedView> v = StridedView::contiguous(in);
  for (int ni : chain) {
    v = apply_node(g, g.node(ni), *v, allow_split);
    if (!v) break;
  }
  if (v) return v;
  if (shape_elements(in) == 0) return std::nullopt;
  std::optional<PartsView> p = parts_of(in);
  for (size_t k = 0; k < chain.size(); ++k) {
    const Node& n = g.node(chain[k]);
    if (reshape_like(g, n)) {
      // RESHAPE(RESHAPE(x)) is RESHAPE(x): the shape between may cut the parts where the last does not.
      if (k + 1 < chain.size() && reshape_like(g, g.node(chain[k + 1]))) continue;
      p = parts_reshape(*p, g.value(n.outputs[0]).type.shape);
    } else {
      p = parts_node(g, n, *p);
    }
    if (!p) return std::nullopt;
  }
  return to_strided(*p, g.value(g.node(chain.back()).outputs[0]).type.shape, allow_split);
}

std::optional<StridedView> backward_chain(const Graph& g, const std::vector<int>& chain, bool allow_split) {
  if (chain.empty()) return std::nullopt;
  const Shape& out = g.value(g.node(chain.back()).outputs[0]).type.shape;
  std::optional<StridedView> v = StridedView::contiguous(out);
  for (size_t k = chain.size(); k-- > 0 && v;) {
    if (v->split > 1) {
      v.reset();
      break;
    }
    const Node& n = g.node(chain[k]);
    const Shape& in_shape = g.value(n.inputs[0]).type.shape;
    if (n.op == Op::TRANSPOSE) {
      const std::vector<int64_t>& p = n.attr_ints("perms");
      std::vector<int64_t> inverse(p.size());
      for (size_t i = 0; i < p.size(); ++i) inverse[static_cast<size_t>(p[i])] = static_cast<int64_t>(i);
      v = transpose_view(*v, inverse);
    } else if (n.op == Op::RESHAPE) {
      v = reshape_view(*v, in_shape, allow_split);
    } else {
      v.reset();  // SLICE: its output is not all of its input
    }
  }
  if (v) return v;
  if (shape_elements(out) == 0) return std::nullopt;
  PartsView p = parts_of(out);
  for (size_t k = chain.size(); k-- > 0;) {
    const Node& n = g.node(chain[k]);
    if (reshape_like(g, n)) {
      if (k > 0 && reshape_like(g, g.node(chain[k - 1]))) continue;  // (as forward_chain)
      std::optional<PartsView> r = parts_reshape(p, g.value(n.inputs[0]).type.shape);
      if (!r) return std::nullopt;
      p = *r;
    } else if (n.op == Op::TRANSPOSE) {
      const std::vector<int64_t>& perms = n.attr_ints("perms");
      PartsView r{std::vector<std::vector<Part>>(perms.size()), p.offset};
      for (size_t i = 0; i < perms.size(); ++i) r.axes.at(static_cast<size_t>(perms[i])) = p.axes.at(i);
      p = r;
    } else {
      return std::nullopt;
    }
  }
  return to_strided(p, g.value(g.node(chain.front()).inputs[0]).type.shape, allow_split);
}

std::optional<int64_t> contiguous_slice_offset(const Graph& g, const Node& n) {
  if (n.op != Op::SLICE) return std::nullopt;
  const std::optional<StridedView> v = apply_node(g, n, StridedView::contiguous(g.value(n.inputs[0]).type.shape));
  if (!v || !v->is_contiguous()) return std::nullopt;
  return v->offset;
}

namespace {

bool is_alias(Op op) { return op == Op::RESHAPE || op == Op::IDENTITY; }

std::optional<std::vector<int64_t>> shape_constant(const Graph& g, ValueId v) {
  const int p = g.value(v).producer;
  if (p < 0 || g.node(p).op != Op::CONST_SHAPE) return std::nullopt;
  return g.node(p).attr_ints("values");
}

// Maps the copies of `f` (views of a CONCAT's result, through RESHAPEs) onto the CONCAT's two
// pieces: false where some view does not take both pieces by one dimension of extent 2.
bool map_onto_pieces(const Graph& g, const Node& concat, TransposeFold& f) {
  const Shape& cs = g.value(concat.outputs[0]).type.shape;
  const int64_t C = cs.back(), piece = C / 2;
  std::vector<SliceCopy> mapped;
  for (const SliceCopy& c : f.copies) {
    SliceCopy m{c.slice, c.view, -1};
    int64_t channel_end = c.view.offset % C;  // one past the last channel a piece is read at
    for (size_t d = 0; d < c.view.dims.size(); ++d) {
      const int64_t n = c.view.dims[d], st = c.view.strides[d];
      if (n == 1) {
        m.view.strides[d] = 0;
      } else if (n == 2 && st == piece && m.select < 0) {
        m.select = static_cast<int>(d);
        m.view.strides[d] = 0;
      } else if (st > 0 && st % C == 0) {
        m.view.strides[d] = st / C * piece;
      } else if (st > 0 && st < piece) {
        channel_end += (n - 1) * st;
      } else {
        return false;
      }
    }
    if (m.select < 0 || channel_end >= piece) return false;
    m.view.offset = c.view.offset / C * piece + c.view.offset % C;
    mapped.push_back(std::move(m));
  }
  f.copies = std::move(mapped);
  return true;
}

}  // namespace

std::optional<TransposeFold> fold_transpose(const Graph& g, int t, const std::vector<std::vector<int>>& readers,
                                            const std::function<bool(int)>& joinable,
                                            const std::function<bool(ValueId)>& escapes) {
  const Node& tn = g.node(t);
  if (tn.op != Op::TRANSPOSE || escapes(tn.outputs[0])) return std::nullopt;
  auto readers_of = [&](ValueId v) -> const std::vector<int>& { return readers.at(static_cast<size_t>(v)); };
  TransposeFold f;
  f.transpose = t;
  // Value `v` is `view` of the TRANSPOSE's input, or (no view) RESHAPE(`before`, v's shape) where
  // strides cannot express that reshape: then only SLICEs may read it. False where a reader is
  // neither a joinable RESHAPE nor a SLICE a view expresses.
  std::function<bool(ValueId, const std::optional<StridedView>&, const StridedView&)> walk =
      [&](ValueId v, const std::optional<StridedView>& view, const StridedView& before) {
        const Shape& shape = g.value(v).type.shape;
        for (int r : readers_of(v)) {
          if (!joinable(r)) return false;
          const Node& rn = g.node(r);
          if (is_alias(rn.op)) {
            if (!view || escapes(rn.outputs[0])) return false;
            f.views.push_back(r);
            if (!walk(rn.outputs[0], reshape_view(*view, g.value(rn.outputs[0]).type.shape), *view)) return false;
            continue;
          }
          if (rn.op != Op::SLICE || rn.inputs[0] != v) return false;
          const auto begin = shape_constant(g, rn.inputs[1]), size = shape_constant(g, rn.inputs[2]);
          if (!begin || !size) return false;
          const std::optional<StridedView> sv =
              view ? slice_view(*view, *begin, *size) : slice_merged_view(before, shape, *begin, *size);
          if (!sv || sv->split > 1) return false;
          f.copies.push_back({r, *sv, -1});
        }
        return true;
      };
  const StridedView start = transpose_view(StridedView::contiguous(g.value(tn.inputs[0]).type.shape), tn.attr_ints("perms"));
  if (!walk(tn.outputs[0], start, start) || f.copies.empty()) return std::nullopt;
  std::sort(f.copies.begin(), f.copies.end(), [](const SliceCopy& a, const SliceCopy& b) { return a.slice < b.slice; });

  // Back from the TRANSPOSE's input through RESHAPEs read by nothing else, to a CONCAT of two
  // equal pieces along the last axis.
  f.sources = {tn.inputs[0]};
  std::vector<int> before;
  ValueId v = tn.inputs[0];
  int p = g.value(v).producer;
  while (readers_of(v).size() == 1 && !escapes(v) && p >= 0 && joinable(p) && is_alias(g.node(p).op)) {
    before.push_back(p);
    v = g.node(p).inputs[0];
    p = g.value(v).producer;
  }
  if (readers_of(v).size() == 1 && !escapes(v) && p >= 0 && joinable(p) && g.node(p).op == Op::CONCAT) {
    const Node& cn = g.node(p);
    const Shape& cs = g.value(v).type.shape;
    TransposeFold pieces = f;
    if (cn.inputs.size() == 2 && !cs.empty() && cn.attr_int("axis") == static_cast<int64_t>(cs.size()) - 1 &&
        g.value(cn.inputs[0]).type == g.value(cn.inputs[1]).type && map_onto_pieces(g, cn, pieces)) {
      f = std::move(pieces);
      f.concat = p;
      f.sources = {cn.inputs[0], cn.inputs[1]};
      f.views.insert(f.views.end(), before.begin(), before.end());
    }
  }
  std::sort(f.views.begin(), f.views.end());
  return f;
}

}  // namespace weft::compiler
