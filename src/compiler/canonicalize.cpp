#include "compiler/canonicalize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <tuple>
#include <optional>

#include "compiler/layout_cleanup.h"
#include "compiler/strided_view.h"
#include "compiler/uses.h"

namespace weft::compiler {
namespace {

// Whether `v` is produced by a CONST whose every element equals `want`.
bool const_all(const Graph& g, ValueId v, double want) {
  const int p = g.value(v).producer;
  if (p < 0 || g.node(p).op != Op::CONST) return false;
  const Tensor& t = g.node(p).attr_tensor("values");
  if (!is_float(t.dtype()) || t.num_elements() == 0) return false;
  for (int64_t i = 0; i < t.num_elements(); ++i)
    if (t.at_double(i) != want) return false;
  return true;
}

const Tensor* const_tensor(const Graph& g, ValueId v) {
  const int p = g.value(v).producer;
  return p >= 0 && g.node(p).op == Op::CONST ? &g.node(p).attr_tensor("values") : nullptr;
}

// Whether `v` is a CONST of integers, every one equal to `want` (a MUL's shift).
bool const_all_int(const Graph& g, ValueId v, int64_t want) {
  const Tensor* t = const_tensor(g, v);
  if (!t || !is_integer(t->dtype())) return false;
  for (int64_t i = 0; i < t->num_elements(); ++i)
    if (t->at_int(i) != want) return false;
  return true;
}

// One MATMUL of a group of siblings: the RESHAPE in front of it and after it (batched form, -1
// when none) and the bias ADD after that (-1 when none).
struct Member {
  int matmul = -1, reshape_in = -1, reshape_out = -1, add = -1;
  int64_t n = 0;
  ValueId last = kNoValue;  // the member's result: the ADD's, else the RESHAPE's, else the MATMUL's
};

// A rewrite's new graph, built from `g` node by node (so that inserted nodes keep the order
// topological): the old-to-new value map, names free in both graphs, new nodes.
struct Rebuild {
  const Graph& g;
  Graph out;
  std::vector<ValueId> map;
  explicit Rebuild(const Graph& from) : g(from), out(from.name()), map(from.values().size(), kNoValue) {
    for (ValueId in : g.inputs()) map[static_cast<size_t>(in)] = out.add_input(g.value(in).name, g.value(in).type);
  }
  std::string fresh(const std::string& base) const {
    std::string name = base;
    for (int k = 1; g.find_value(name) || out.find_value(name); ++k) name = base + "_" + std::to_string(k);
    return name;
  }
  void node(Op op, std::vector<ValueId> inputs, std::vector<AttrValue> attrs, ValueId result, std::string label) {
    Node n;
    n.op = op;
    n.name = std::move(label);
    n.inputs = std::move(inputs);
    n.attrs = std::move(attrs);
    n.outputs = {result};
    out.add_node(std::move(n));
  }
  // The new graph with g's outputs mapped, unused nodes pruned.
  Graph finish() {
    std::vector<ValueId> outs;
    for (ValueId o : g.outputs()) outs.push_back(map[static_cast<size_t>(o)]);
    out.set_outputs(outs);
    return prune_graph(out);
  }
};

// How constant c (shape `c`, numpy-aligned to x's rank) broadcast over x's shape `xs` reads once x
// is RESHAPEd to `ys`: the shape over `ys` (each axis 1 or ys's extent) whose row-major elements are
// c's own, or nothing where c is broadcast over part of a group of axes the RESHAPE merges or splits.
std::optional<Shape> broadcast_through_reshape(const Shape& c, const Shape& xs, const Shape& ys) {
  // Axes of extent 1 go with any group; the others form groups where the prefix products meet.
  std::vector<size_t> xa, ya;
  for (size_t i = 0; i < xs.size(); ++i)
    if (xs[i] != 1) xa.push_back(i);
  for (size_t j = 0; j < ys.size(); ++j)
    if (ys[j] != 1) ya.push_back(j);
  Shape p(ys.size(), 1);
  size_t i = 0, j = 0;
  while (i < xa.size() && j < ya.size()) {
    const size_t i0 = i, j0 = j;
    int64_t px = xs[xa[i++]], py = ys[ya[j++]];
    while (px != py) {
      if (px < py && i < xa.size()) px *= xs[xa[i++]];
      else if (py < px && j < ya.size()) py *= ys[ya[j++]];
      else return std::nullopt;
    }
    bool whole = true, broadcast = true;
    for (size_t k = i0; k < i; ++k) {
      whole = whole && c[xa[k]] == xs[xa[k]];
      broadcast = broadcast && c[xa[k]] == 1;
    }
    if (!whole && !broadcast) return std::nullopt;
    if (whole)
      for (size_t k = j0; k < j; ++k) p[ya[k]] = ys[ya[k]];
  }
  if (i != xa.size() || j != ya.size()) return std::nullopt;
  return p;
}

// Row-major strides of `s` with 0 on axes of extent 1 (a broadcast read).
std::vector<int64_t> broadcast_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 0);
  int64_t k = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = s[i] == 1 ? 0 : k;
    k *= s[i];
  }
  return st;
}

}  // namespace

int merge_common_nodes(Graph& g) {
  std::vector<char> is_output(g.values().size(), 0);
  for (ValueId o : g.outputs()) is_output[static_cast<size_t>(o)] = 1;
  std::vector<ValueId> rep(g.values().size());
  for (size_t v = 0; v < rep.size(); ++v) rep[v] = static_cast<ValueId>(v);
  // Candidates by operator and (rewritten) inputs; constants also by type and first element. A
  // CONST is merged only when small (the scalars and shifts that exporters repeat per node): large
  // weights are distinct in practice, and comparing them byte by byte would cost a pass over them.
  constexpr int64_t kMaxConstElements = 64;
  std::map<std::tuple<int, std::vector<ValueId>, std::string>, std::vector<int>> seen;
  int merged = 0, computations = 0;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    Node& n = g.mutable_node(static_cast<int>(i));
    for (ValueId& v : n.inputs) v = rep[static_cast<size_t>(v)];
    // Effects, sub-graphs and user code are never merged; nor a node with no result or one whose
    // result is a graph output (each output keeps its own value). Nor a RESHAPE: it costs nothing,
    // and the importer's RESHAPE per 3-D MatMul of a batch > 1 must stay its own for the sibling
    // merge below to leave that form alone (merge_sibling_matmuls: the slices would be copies on
    // oneDNN).
    if (n.outputs.empty() || n.op == Op::CUSTOM || n.op == Op::COND_IF || n.op == Op::WHILE_LOOP ||
        n.op == Op::VARIABLE || n.op == Op::VARIABLE_READ || n.op == Op::VARIABLE_WRITE || n.op == Op::RESHAPE)
      continue;
    bool escapes = false;
    for (ValueId o : n.outputs) escapes = escapes || is_output[static_cast<size_t>(o)];
    if (escapes) continue;
    std::string extra;
    if (n.op == Op::CONST) {
      const Tensor& t = n.attr_tensor("values");
      if (t.num_elements() > kMaxConstElements || t.num_elements() == 0) continue;
      extra = t.type().str() + " " + std::to_string(t.at_double(0));
    }
    std::vector<int>& bucket = seen[{static_cast<int>(n.op), n.inputs, extra}];
    int same = -1;
    for (int j : bucket) {
      const Node& m = g.node(j);
      bool eq = m.attrs.size() == n.attrs.size() && m.outputs.size() == n.outputs.size();
      for (size_t k = 0; eq && k < n.outputs.size(); ++k)
        eq = g.value(m.outputs[k]).type == g.value(n.outputs[k]).type;
      for (size_t k = 0; eq && k < n.attrs.size(); ++k) eq = same_attr(m.attrs[k], n.attrs[k]);
      if (eq) {
        same = j;
        break;
      }
    }
    if (same < 0) {
      bucket.push_back(static_cast<int>(i));
      continue;
    }
    for (size_t k = 0; k < n.outputs.size(); ++k) rep[static_cast<size_t>(n.outputs[k])] = g.node(same).outputs[k];
    ++merged;
    computations += n.op != Op::CONST && n.op != Op::CONST_SHAPE;
  }
  if (merged > 0) g = prune_graph(g);
  return computations;
}

int drop_identities(Graph& g) {
  std::vector<char> is_output(g.values().size(), 0);
  for (ValueId o : g.outputs()) is_output[static_cast<size_t>(o)] = 1;
  std::vector<int> readers(g.values().size(), 0);
  for (const Node& n : g.nodes())
    for (ValueId v : n.inputs) ++readers[static_cast<size_t>(v)];
  std::vector<ValueId> rep(g.values().size());
  for (size_t v = 0; v < rep.size(); ++v) rep[v] = static_cast<ValueId>(v);
  int dropped = 0;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    Node& n = g.mutable_node(static_cast<int>(i));
    for (ValueId& v : n.inputs) v = rep[static_cast<size_t>(v)];
    if (n.outputs.size() != 1 || is_output[static_cast<size_t>(n.outputs[0])]) continue;
    const TensorType& rt = g.value(n.outputs[0]).type;
    const Tensor* factor = n.op == Op::MUL && n.inputs.size() >= 2 ? const_tensor(g, n.inputs[1]) : nullptr;
    if (factor && factor->num_elements() == 1 && g.value(n.inputs[0]).type == rt && is_float(rt.dtype) &&
        (n.inputs.size() < 3 || const_all_int(g, n.inputs[2], 0)) && const_all(g, n.inputs[1], 1.0)) {
      // x * 1 is x (NaN stays NaN, -0 stays -0). One value only: a per-channel factor that happens
      // to be all ones (a layer norm's gamma as initialised) is the affine part its fusion expects.
      rep[static_cast<size_t>(n.outputs[0])] = n.inputs[0];
      ++dropped;
      continue;
    }
    if (n.op == Op::CLAMP) {
      // CLAMP(CLAMP(x, a, b), c, d) -> CLAMP(x, max(a, c), min(b, d)) when the ranges meet and both
      // treat NaN alike (a ReLU then a clip to [0, 6]: ReLU6 as exported in two steps).
      const ValueId y = n.inputs[0];
      const int p = g.value(y).producer;
      if (p < 0 || g.node(p).op != Op::CLAMP || readers[static_cast<size_t>(y)] != 1 || is_output[static_cast<size_t>(y)])
        continue;
      const Node& inner = g.node(p);
      if (inner.attr_int("nan_mode") != n.attr_int("nan_mode")) continue;
      const Tensor &a = inner.attr_tensor("min_val"), &b = inner.attr_tensor("max_val");
      const Tensor &c = n.attr_tensor("min_val"), &d = n.attr_tensor("max_val");
      const bool fl = is_float(rt.dtype);
      auto less = [&](const Tensor& u, const Tensor& v) { return fl ? u.at_double(0) < v.at_double(0) : u.at_int(0) < v.at_int(0); };
      const Tensor lo = less(a, c) ? c : a, hi = less(b, d) ? b : d;
      if (less(hi, lo)) continue;
      const auto at = [&](const char* name) { return static_cast<size_t>(&n.attr(name) - n.attrs.data()); };
      n.attrs[at("min_val")] = lo;
      n.attrs[at("max_val")] = hi;
      n.inputs[0] = inner.inputs[0];
      --readers[static_cast<size_t>(y)];
      ++readers[static_cast<size_t>(inner.inputs[0])];
      ++dropped;
    }
  }
  if (dropped > 0) g = prune_graph(g);
  return dropped;
}

int canonical_activations(Graph& g) {
  const Uses uses(g);
  auto only = [&](ValueId v, int node) { return uses.only(v, node); };
  auto producer = [&](ValueId v, Op op) {
    const int p = g.value(v).producer;
    return p >= 0 && g.node(p).op == op ? p : -1;
  };
  // One float value equal to `want` within the rounding of the type (an fp16 graph holds 1/6 to 11 bits).
  auto near = [&](ValueId v, double want) {
    const Tensor* t = const_tensor(g, v);
    if (!t || t->num_elements() != 1 || !is_float(t->dtype())) return false;
    const double tol = t->dtype() == DType::kFp32 ? 1e-6 : 1e-3;
    return std::abs(t->at_double(0) - want) <= tol * std::abs(want);
  };
  // A plain product of two tensors of the result's type (shift absent or 0), its operands.
  auto product = [&](int ni) -> std::optional<std::pair<ValueId, ValueId>> {
    const Node& n = g.node(ni);
    if (n.op != Op::MUL || n.inputs.size() < 2 || (n.inputs.size() > 2 && !const_all_int(g, n.inputs[2], 0)))
      return std::nullopt;
    return std::make_pair(n.inputs[0], n.inputs[1]);
  };
  // The scalar-constant operand of product node `ni` near `want`, the other operand in *x.
  auto by_const = [&](int ni, double want, ValueId* x) {
    const auto pr = product(ni);
    if (!pr) return kNoValue;
    if (near(pr->second, want)) return *x = pr->first, pr->second;
    if (near(pr->first, want)) return *x = pr->second, pr->first;
    return kNoValue;
  };
  struct Form {
    enum Kind { kGelu, kHardSwish, kScaledSwish, kGeluHalves, kSigmoid, kCube, kGeluTanhFactored } kind;
    // kGelu: x, 1 + erf(x / sqrt 2), the 0.5; kHardSwish: x, -, the 1/6 constant; kScaledSwish:
    // x, beta * x, beta; kGeluHalves: x, erf(x / sqrt 2), the 0.5; kSigmoid: x; kCube: x, -, the
    // 0.044715; kGeluTanhFactored: x, the 0.044715, the sqrt(2 / pi)
    ValueId x, a, c;
    int clamp = -1;  // kHardSwish: CLAMP(x + 3, 0, 6)
  };
  std::map<int, Form> at;  // the final MUL (kSigmoid: RECIPROCAL) -> the form it ends
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const int fin = static_cast<int>(i);
    // The logistic function written out: RECIPROCAL(ADD(EXP(NEGATE(x)), 1)) -> SIGMOID(x) (then
    // x * sigmoid(x) is the swish the fusions match: SiLU written x / (1 + exp(-x))).
    if (const Node& rn = g.node(fin); rn.op == Op::RECIPROCAL && is_float(g.value(rn.outputs[0]).type.dtype)) {
      const int add = producer(rn.inputs[0], Op::ADD);
      const int ex = add >= 0 && only(rn.inputs[0], fin) && near(g.node(add).inputs[1], 1.0)
                         ? producer(g.node(add).inputs[0], Op::EXP) : -1;
      const int ng = ex >= 0 && only(g.node(add).inputs[0], add) ? producer(g.node(ex).inputs[0], Op::NEGATE) : -1;
      if (ng >= 0 && only(g.node(ex).inputs[0], ex)) {
        const Node& nn = g.node(ng);
        const ValueId x = nn.inputs[0];
        bool zps = true;  // a float NEGATE's zero points are 0
        for (size_t z = 1; z < nn.inputs.size(); ++z) zps = zps && const_all(g, nn.inputs[z], 0.0);
        if (zps && g.value(x).type == g.value(rn.outputs[0]).type) at.emplace(fin, Form{Form::kSigmoid, x, kNoValue, kNoValue});
      }
      continue;
    }
    const auto pr = product(fin);
    if (!pr || !is_float(g.value(g.node(fin).outputs[0]).type.dtype)) continue;
    const TensorType& rt = g.value(g.node(fin).outputs[0]).type;
    for (int k = 0; k < 2 && !at.count(fin); ++k) {
      const ValueId u = k == 0 ? pr->first : pr->second, w = k == 0 ? pr->second : pr->first;
      // GELU's tanh argument factored (BLOOM, HF's FastGELU): sqrt(2 / pi) * x * (1 + 0.044715 * x * x),
      // MUL(MUL(x, k1), ADD(1, x * x * k2)) with x * x * k2 in either association.
      if (const int pm = g.value(u).producer; pm >= 0 && only(u, fin) && only(w, fin)) {
        ValueId x = kNoValue;
        const ValueId k1 = by_const(pm, 0.79788456080286536, &x);
        const int add = producer(w, Op::ADD);
        ValueId r = kNoValue;
        if (k1 != kNoValue && add >= 0 && g.value(x).type == rt) {
          const Node& an = g.node(add);
          if (near(an.inputs[1], 1.0)) r = an.inputs[0];
          else if (near(an.inputs[0], 1.0)) r = an.inputs[1];
        }
        const int rm = r != kNoValue && only(r, add) ? g.value(r).producer : -1;
        ValueId k2 = kNoValue;
        if (const auto rp = rm >= 0 ? product(rm) : std::nullopt) {
          ValueId s = kNoValue;
          if ((k2 = by_const(rm, 0.044715, &s)) != kNoValue) {  // MUL(MUL(x, x), k2)
            const auto sp = g.value(s).producer >= 0 && only(s, rm) ? product(g.value(s).producer) : std::nullopt;
            if (!sp || sp->first != x || sp->second != x) k2 = kNoValue;
          } else {  // MUL(MUL(x, k2), x), either operand order at either level
            for (int j = 0; j < 2 && k2 == kNoValue; ++j) {
              const ValueId q = j == 0 ? rp->first : rp->second, o = j == 0 ? rp->second : rp->first;
              ValueId x2 = kNoValue;
              const int qm = g.value(q).producer;
              if (o == x && qm >= 0 && only(q, rm)) k2 = by_const(qm, 0.044715, &x2);
              if (x2 != x) k2 = kNoValue;
            }
          }
        }
        if (k2 != kNoValue) {
          at.emplace(fin, Form{Form::kGeluTanhFactored, x, k2, k1});
          continue;
        }
      }
      // GELU's tanh form with the constant first, 0.044715 * x * x * x: MUL(MUL(MUL(c, x), x), x).
      if (const int pm = g.value(u).producer; pm >= 0 && only(u, fin) && g.value(w).type == rt) {
        const auto pp = product(pm);
        for (int j = 0; pp && j < 2 && !at.count(fin); ++j) {
          const ValueId q = j == 0 ? pp->first : pp->second, o = j == 0 ? pp->second : pp->first;
          const int qm = g.value(q).producer;
          ValueId x2 = kNoValue;
          const ValueId c = o == w && qm >= 0 && only(q, pm) ? by_const(qm, 0.044715, &x2) : kNoValue;
          if (c != kNoValue && x2 == w) at.emplace(fin, Form{Form::kCube, w, kNoValue, c});
        }
        if (at.count(fin)) continue;
      }
      // GELU as HF BERT writes it: MUL(MUL(x, 0.5), ADD(ERF(MUL(x, 1/sqrt 2)), 1)).
      if (const int h = g.value(u).producer; h >= 0 && only(u, fin)) {
        ValueId x = kNoValue;
        const ValueId half = by_const(h, 0.5, &x);
        const int add = producer(w, Op::ADD);
        if (half != kNoValue && add >= 0 && g.value(x).type == rt) {
          const Node& an = g.node(add);
          const int erf = producer(an.inputs[0], Op::ERF);
          ValueId x2 = kNoValue;
          if (near(an.inputs[1], 1.0) && erf >= 0 && g.node(erf).inputs.size() == 1 &&
              g.value(g.node(erf).inputs[0]).producer >= 0 &&
              by_const(g.value(g.node(erf).inputs[0]).producer, 0.70710678118654752, &x2) != kNoValue && x2 == x) {
            at.emplace(fin, Form{Form::kGelu, x, w, half});
            continue;
          }
        }
      }
      // GELU as x * (0.5 + 0.5 * erf(x / sqrt 2)).
      if (const int add = producer(w, Op::ADD); add >= 0 && only(w, fin) && near(g.node(add).inputs[1], 0.5)) {
        const int hm = g.value(g.node(add).inputs[0]).producer;
        ValueId e = kNoValue, x2 = kNoValue;
        const ValueId half = hm >= 0 && only(g.node(add).inputs[0], add) ? by_const(hm, 0.5, &e) : kNoValue;
        const int erf = half != kNoValue ? producer(e, Op::ERF) : -1;
        if (erf >= 0 && only(e, hm) && g.value(g.node(erf).inputs[0]).producer >= 0 &&
            by_const(g.value(g.node(erf).inputs[0]).producer, 0.70710678118654752, &x2) != kNoValue && x2 == u &&
            g.value(u).type == rt) {
          at.emplace(fin, Form{Form::kGeluHalves, u, e, half});
          continue;
        }
      }
      // x * sigmoid(beta * x), beta a constant other than 1 (CLIP's quick GELU, beta = 1.702).
      if (const int sg = producer(w, Op::SIGMOID); sg >= 0 && only(w, fin)) {
        const ValueId t = g.node(sg).inputs[0];
        const int sc = g.value(t).producer;
        ValueId x = kNoValue;
        const Tensor* beta = nullptr;
        if (sc >= 0 && only(t, sg) && product(sc)) {
          const Node& sn = g.node(sc);
          for (int j = 0; j < 2 && !beta; ++j) {
            const Tensor* c = const_tensor(g, sn.inputs[static_cast<size_t>(j)]);
            if (c && c->num_elements() == 1 && sn.inputs[static_cast<size_t>(1 - j)] == u) beta = c, x = u;
          }
        }
        if (beta && is_float(beta->dtype()) && beta->at_double(0) != 1.0 && beta->at_double(0) != 0.0 &&
            std::isfinite(1.0 / beta->at_double(0)) && g.value(x).type == rt && g.value(t).type == rt) {
          at.emplace(fin, Form{Form::kScaledSwish, x, t, g.node(sc).inputs[0] == x ? g.node(sc).inputs[1] : g.node(sc).inputs[0]});
          continue;
        }
      }
      // Hard-swish as written by hand: x * clamp(x + 3, 0, 6) / 6, the 1/6 last
      // (MUL(MUL(x, clamp), 1/6)) or on the clamp (MUL(x, MUL(clamp, 1/6))).
      ValueId x = kNoValue, sixth = kNoValue;
      int cl = -1;
      if (ValueId m = kNoValue; k == 0 && (sixth = by_const(fin, 1.0 / 6.0, &m)) != kNoValue) {
        const int mi = g.value(m).producer;
        const auto mp = mi >= 0 && only(m, fin) ? product(mi) : std::nullopt;
        for (int j = 0; mp && j < 2 && cl < 0; ++j) {
          const ValueId c = j == 0 ? mp->first : mp->second, o = j == 0 ? mp->second : mp->first;
          if (producer(c, Op::CLAMP) >= 0 && only(c, mi)) cl = producer(c, Op::CLAMP), x = o;
        }
      } else if (const int gi = g.value(w).producer; gi >= 0 && only(w, fin)) {
        ValueId c = kNoValue;
        sixth = by_const(gi, 1.0 / 6.0, &c);
        if (sixth != kNoValue && producer(c, Op::CLAMP) >= 0 && only(c, gi)) cl = producer(c, Op::CLAMP), x = u;
      }
      if (cl < 0 || g.value(x).type != rt) continue;
      const Node& cn = g.node(cl);
      const int add = producer(cn.inputs[0], Op::ADD);
      if (add < 0 || !only(cn.inputs[0], cl) || cn.attr_tensor("min_val").at_double(0) != 0.0 ||
          cn.attr_tensor("max_val").at_double(0) != 6.0)
        continue;
      const Node& an = g.node(add);
      if (an.inputs[0] != x || !near(an.inputs[1], 3.0)) continue;
      at.emplace(fin, Form{Form::kHardSwish, x, kNoValue, sixth, cl});
    }
  }
  if (at.empty()) return 0;
  Rebuild rb(g);
  Graph& out = rb.out;
  auto scalar = [&](DType t, int rank, double v, const std::string& name) {
    const ValueId c = out.add_value(rb.fresh(name), TensorType{t, Shape(static_cast<size_t>(rank), 1)});
    rb.node(Op::CONST, {}, {Tensor::from_doubles(TensorType{t, Shape(static_cast<size_t>(rank), 1)}, std::vector<double>{v})}, c, "");
    return c;
  };
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    auto it = at.find(static_cast<int>(i));
    if (it == at.end()) {
      copy_node(g, static_cast<int>(i), out, rb.map);
      continue;
    }
    const Node& fin = g.node(static_cast<int>(i));
    const Form& f = it->second;
    if (f.kind == Form::kSigmoid) {
      // (1 / (1 + e^-x) is the logistic function: each element within the rounding of the steps.)
      const ValueId r = out.add_value(g.value(fin.outputs[0]).name, g.value(fin.outputs[0]).type);
      rb.node(Op::SIGMOID, {rb.map[static_cast<size_t>(f.x)]}, {}, r, fin.name);
      rb.map[static_cast<size_t>(fin.outputs[0])] = r;
      continue;
    }
    const TensorType& rt = g.value(fin.outputs[0]).type;
    const std::string& name = g.value(fin.outputs[0]).name;
    auto mv = [&](ValueId v) { return rb.map[static_cast<size_t>(v)]; };
    const ValueId shift = fin.inputs.size() > 2 ? mv(fin.inputs[2]) : kNoValue;
    auto mul = [&](ValueId a, ValueId b, ValueId r, const std::string& label) {
      std::vector<ValueId> ins = {a, b};
      if (shift != kNoValue) ins.push_back(shift);
      rb.node(Op::MUL, std::move(ins), {}, r, label);
    };
    const ValueId r = out.add_value(name, rt);
    // x * x * x * k into `dst`: the cube first, as GELU's tanh matcher (and x ** 3) has it.
    auto cube_times = [&](ValueId k, ValueId dst) {
      const ValueId sq = out.add_value(rb.fresh(name + "_square"), rt);
      mul(mv(f.x), mv(f.x), sq, fin.name);
      const ValueId cube = out.add_value(rb.fresh(name + "_cube"), rt);
      mul(sq, mv(f.x), cube, fin.name);
      mul(cube, k, dst, fin.name);
    };
    if (f.kind == Form::kGeluTanhFactored) {
      // (x + x * x * x * k2) * k1, the argument as nn.GELU(approximate="tanh") exports it: the same
      // function within a few roundings.
      const ValueId cubek = out.add_value(rb.fresh(name + "_cube_k"), rt);
      cube_times(mv(f.a), cubek);
      const ValueId in = out.add_value(rb.fresh(name + "_inner"), rt);
      rb.node(Op::ADD, {mv(f.x), cubek}, {}, in, fin.name);
      mul(in, mv(f.c), r, fin.name);
    } else if (f.kind == Form::kCube) {
      // MUL(MUL(MUL(x, x), x), c): the same product within a few roundings.
      cube_times(mv(f.c), r);
    } else if (f.kind == Form::kGelu) {
      // MUL(MUL(x, a), 0.5): the matcher's (and nn.GELU's exported) order; x * 0.5 * a and
      // x * a * 0.5 differ only where a halving is inexact (subnormals, overflow).
      const ValueId xa = out.add_value(rb.fresh(name + "_gelu"), rt);
      mul(mv(f.x), mv(f.a), xa, fin.name);
      mul(xa, mv(f.c), r, fin.name);
    } else if (f.kind == Form::kGeluHalves) {
      // MUL(MUL(x, erf + 1), 0.5): 0.5 + 0.5 e is 0.5 (1 + e) exactly, and halving commutes with
      // the product's rounding (but for subnormals and overflow).
      const ValueId one = scalar(rt.dtype, rt.rank(), 1.0, name + "_gelu_one");
      const ValueId a = out.add_value(rb.fresh(name + "_gelu_sum"), rt);
      rb.node(Op::ADD, {mv(f.a), one}, {}, a, fin.name);
      const ValueId xa = out.add_value(rb.fresh(name + "_gelu"), rt);
      mul(mv(f.x), a, xa, fin.name);
      mul(xa, mv(f.c), r, fin.name);
    } else if (f.kind == Form::kScaledSwish) {
      // swish(t) * (1 / beta) with t = beta * x: x * sigmoid(t) = t * sigmoid(t) / beta. The SCALE,
      // SWISH and SCALE post-ops every fusion has take it whole (each element within a few
      // roundings of the written form: t * 1/beta for x).
      const int rank = rt.rank();
      const ValueId sg = out.add_value(rb.fresh(name + "_sigmoid"), rt);
      rb.node(Op::SIGMOID, {mv(f.a)}, {}, sg, fin.name);
      const ValueId sw = out.add_value(rb.fresh(name + "_swish"), rt);
      mul(mv(f.a), sg, sw, fin.name);
      const double beta = const_tensor(g, f.c)->at_double(0);
      mul(sw, scalar(rt.dtype, rank, 1.0 / beta, name + "_inv_beta"), r, fin.name);
    } else {
      // x * clamp(x * 1/6 + 0.5, 0, 1), as the importer lowers HardSwish (the same function; each
      // element within the rounding of the two forms' steps).
      const Node& cn = g.node(f.clamp);
      const int rank = rt.rank();
      const ValueId s = out.add_value(rb.fresh(name + "_hs_scaled"), rt);
      mul(mv(f.x), mv(f.c), s, fin.name);
      const ValueId sh = out.add_value(rb.fresh(name + "_hs_shifted"), rt);
      rb.node(Op::ADD, {s, scalar(rt.dtype, rank, 0.5, name + "_hs_half")}, {}, sh, fin.name);
      std::vector<AttrValue> attrs = cn.attrs;
      const auto idx = [&](const char* a) { return static_cast<size_t>(&cn.attr(a) - cn.attrs.data()); };
      const TensorType at_t = cn.attr_tensor("min_val").type();
      attrs[idx("min_val")] = Tensor::from_doubles(at_t, std::vector<double>{0.0});
      attrs[idx("max_val")] = Tensor::from_doubles(at_t, std::vector<double>{1.0});
      const ValueId cl = out.add_value(rb.fresh(name + "_hs_gate"), rt);
      rb.node(Op::CLAMP, {sh}, std::move(attrs), cl, cn.name);
      mul(mv(f.x), cl, r, fin.name);
    }
    rb.map[static_cast<size_t>(fin.outputs[0])] = r;
  }
  g = rb.finish();
  return static_cast<int>(at.size());
}

int fold_constant_adds(Graph& g) {
  const Uses uses(g);
  constexpr int64_t kMaxElements = int64_t{1} << 24;
  struct Fold {
    int inner, reshape;
    Tensor sum;
  };
  std::map<int, Fold> at_outer;  // outer ADD -> what replaces it
  std::vector<char> inner_of(g.nodes().size(), 0);
  for (size_t oi = 0; oi < g.nodes().size(); ++oi) {
    const Node& outer = g.node(static_cast<int>(oi));
    if (outer.op != Op::ADD || outer.inputs.size() != 2) continue;
    const Tensor* c2 = const_tensor(g, outer.inputs[1]);
    const TensorType& yt = g.value(outer.outputs[0]).type;
    if (!c2 || g.value(outer.inputs[0]).type != yt || !is_float(yt.dtype)) continue;
    ValueId y = outer.inputs[0];
    int reshape = -1, p = g.value(y).producer;
    if (p >= 0 && g.node(p).op == Op::RESHAPE && uses.only(y, static_cast<int>(oi))) {
      reshape = p;
      y = g.node(p).inputs[0];
      p = g.value(y).producer;
    }
    if (p < 0 || inner_of[static_cast<size_t>(p)] || at_outer.count(p)) continue;
    const Node& inner = g.node(p);
    if (inner.op != Op::ADD || inner.inputs.size() != 2 || !uses.only(y, reshape >= 0 ? reshape : static_cast<int>(oi)))
      continue;
    const Tensor* c1 = const_tensor(g, inner.inputs[1]);
    const TensorType& xt = g.value(inner.inputs[0]).type;
    if (!c1 || const_tensor(g, inner.inputs[0]) || xt != g.value(y).type || c1->dtype() != yt.dtype ||
        c2->dtype() != yt.dtype || c1->rank() > xt.rank() || c2->rank() > yt.rank())
      continue;
    Shape c1s(static_cast<size_t>(xt.rank() - c1->rank()), 1), c2s(static_cast<size_t>(yt.rank() - c2->rank()), 1);
    c1s.insert(c1s.end(), c1->shape().begin(), c1->shape().end());
    c2s.insert(c2s.end(), c2->shape().begin(), c2->shape().end());
    const std::optional<Shape> c1y = broadcast_through_reshape(c1s, xt.shape, yt.shape);
    if (!c1y) continue;
    Shape os(yt.shape.size());
    for (size_t k = 0; k < os.size(); ++k) os[k] = std::max((*c1y)[k], c2s[k]);
    const int64_t total = shape_elements(os);
    if (total > kMaxElements) continue;
    // Each element c1 + c2, rounded once to the type as the ADDs round (the exact sum of two values
    // of a float type, held in a double, rounds as the type's own addition does).
    const std::vector<int64_t> s1 = broadcast_strides(*c1y), s2 = broadcast_strides(c2s);
    std::vector<double> v(static_cast<size_t>(total));
    std::vector<int64_t> idx(os.size(), 0);
    for (int64_t o = 0; o < total; ++o) {
      int64_t a = 0, b = 0;
      for (size_t k = 0; k < os.size(); ++k) a += idx[k] * s1[k], b += idx[k] * s2[k];
      v[static_cast<size_t>(o)] = c1->at_double(a) + c2->at_double(b);
      for (size_t k = os.size(); k-- > 0;) {
        if (++idx[k] < os[k]) break;
        idx[k] = 0;
      }
    }
    inner_of[static_cast<size_t>(p)] = 1;
    at_outer.emplace(static_cast<int>(oi), Fold{p, reshape, Tensor::from_doubles(TensorType{yt.dtype, os}, v)});
  }
  if (at_outer.empty()) return 0;
  Rebuild rb(g);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.node(static_cast<int>(i));
    if (inner_of[i]) {  // its reader (the RESHAPE or the outer ADD) reads x
      rb.map[static_cast<size_t>(n.outputs[0])] = rb.map[static_cast<size_t>(n.inputs[0])];
      continue;
    }
    auto it = at_outer.find(static_cast<int>(i));
    if (it == at_outer.end()) {
      copy_node(g, static_cast<int>(i), rb.out, rb.map);
      continue;
    }
    const std::string& name = g.value(n.outputs[0]).name;
    const ValueId c = rb.out.add_value(rb.fresh(name + "_addend"), it->second.sum.type());
    rb.node(Op::CONST, {}, {std::move(it->second.sum)}, c, "");
    const ValueId r = rb.out.add_value(name, g.value(n.outputs[0]).type);
    rb.node(Op::ADD, {rb.map[static_cast<size_t>(n.inputs[0])], c}, n.attrs, r, n.name);
    rb.map[static_cast<size_t>(n.outputs[0])] = r;
  }
  g = rb.finish();
  return static_cast<int>(at_outer.size());
}

int merge_sibling_matmuls(Graph& g, bool through_reshapes) {
  const Uses uses(g);
  const std::vector<std::vector<int>>& readers = uses.readers;
  const std::vector<char>& is_output = uses.is_output;
  // The single node reading `v` when it is of kind `op` (and `v` is not a graph output), else -1.
  auto only_reader = [&](ValueId v, Op op) {
    const std::vector<int>& r = readers[static_cast<size_t>(v)];
    return r.size() == 1 && !is_output[static_cast<size_t>(v)] && g.node(r[0]).op == op && g.node(r[0]).inputs[0] == v
               ? r[0]
               : -1;
  };

  // Candidates, grouped by A (by the tensor reshaped into A, in the batched form) in node order.
  std::map<ValueId, std::vector<Member>> by_a;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& m = g.node(static_cast<int>(i));
    if (m.op != Op::MATMUL || m.inputs.size() != 4) continue;
    const TensorType& a = g.value(m.inputs[0]).type;
    const Tensor* b = const_tensor(g, m.inputs[1]);
    if (!b || const_tensor(g, m.inputs[0]) || !const_tensor(g, m.inputs[2]) || !const_tensor(g, m.inputs[3])) continue;
    if (!is_float(a.dtype) || b->dtype() != a.dtype || b->shape().size() != 3 || b->shape()[0] != 1 || a.shape[0] != 1)
      continue;
    Member mem{.matmul = static_cast<int>(i), .n = b->shape()[2], .last = m.outputs[0]};
    ValueId key = m.inputs[0];
    if (const int r = only_reader(mem.last, Op::RESHAPE); r >= 0) {
      // The batched form: x [B, S, K] -> RESHAPE [1, B*S, K] -> MATMUL -> RESHAPE [B, S, N].
      const int p = g.value(key).producer;
      const ValueId after = g.node(r).outputs[0];
      if (!through_reshapes || p < 0 || g.node(p).op != Op::RESHAPE || only_reader(key, Op::MATMUL) != mem.matmul ||
          g.value(after).type.shape.back() != mem.n)
        continue;
      mem.reshape_in = p;
      mem.reshape_out = r;
      mem.last = after;
      key = g.node(p).inputs[0];
    }
    if (int r = only_reader(mem.last, Op::ADD); r >= 0) {
      const Node& add = g.node(r);
      const Tensor* bias = add.inputs.size() == 2 ? const_tensor(g, add.inputs[1]) : nullptr;
      const TensorType& t = g.value(mem.last).type;
      Shape want(t.shape.size(), 1);
      want.back() = mem.n;
      if (bias && bias->dtype() == t.dtype && bias->shape() == want && g.value(add.outputs[0]).type == t) {
        mem.add = r;
        mem.last = add.outputs[0];
      }
    }
    by_a[key].push_back(mem);
  }
  // Members agreeing with the first of their A on K, types, zero points, form and having a bias.
  std::map<int, std::vector<Member>> groups;  // by the first member's node
  for (auto& [a, list] : by_a) {
    std::vector<Member> group;
    for (const Member& mem : list) {
      if (group.empty()) {
        group.push_back(mem);
        continue;
      }
      const Member& first = group[0];
      const Node& f = g.node(first.matmul);
      const Node& m = g.node(mem.matmul);
      Shape fs = g.value(first.last).type.shape, ms = g.value(mem.last).type.shape;
      fs.back() = ms.back() = 0;
      if (const_tensor(g, m.inputs[1])->shape()[1] != const_tensor(g, f.inputs[1])->shape()[1] ||
          g.value(m.outputs[0]).type.dtype != g.value(f.outputs[0]).type.dtype || (mem.add < 0) != (first.add < 0) ||
          (mem.reshape_in < 0) != (first.reshape_in < 0) || fs != ms ||
          g.value(m.inputs[0]).type != g.value(f.inputs[0]).type ||
          !const_tensor(g, m.inputs[2])->identical(*const_tensor(g, f.inputs[2])) ||
          !const_tensor(g, m.inputs[3])->identical(*const_tensor(g, f.inputs[3])))
        continue;
      group.push_back(mem);
    }
    if (group.size() >= 2) groups[group[0].matmul] = std::move(group);
  }
  if (groups.empty()) return 0;

  std::vector<char> skip(g.nodes().size(), 0);
  for (const auto& [first, group] : groups)
    for (const Member& mem : group)
      for (int n : {mem.matmul, mem.reshape_in, mem.reshape_out, mem.add})
        if (n >= 0) skip[static_cast<size_t>(n)] = 1;
  Rebuild rb(g);
  Graph& out = rb.out;
  std::vector<ValueId>& map = rb.map;
  auto shape_value = [&](const std::string& base, const Shape& s) {
    const ValueId v = out.add_value(rb.fresh(base), TensorType{DType::kShape, {static_cast<int64_t>(s.size())}});
    rb.node(Op::CONST_SHAPE, {}, {std::vector<int64_t>(s.begin(), s.end())}, v, "");
    return v;
  };
  int merged = 0;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    auto it = groups.find(static_cast<int>(i));
    if (it != groups.end()) {
      const std::vector<Member>& group = it->second;
      const Node& f = g.node(group[0].matmul);
      const TensorType& a = g.value(f.inputs[0]).type;
      const Tensor& fb = *const_tensor(g, f.inputs[1]);
      const int64_t k = fb.shape()[1];
      int64_t total = 0;
      for (const Member& mem : group) total += mem.n;
      const size_t es = storage_size(fb.dtype());
      Tensor w = Tensor::zeros(TensorType{fb.dtype(), {1, k, total}});
      const DType out_dtype = g.value(f.outputs[0]).type.dtype;
      TensorType wide = g.value(group[0].last).type;  // the merged result; each member's is a slice
      wide.shape.back() = total;
      Shape bias_shape(wide.shape.size(), 1);
      bias_shape.back() = total;
      Tensor bias = Tensor::zeros(TensorType{out_dtype, bias_shape});
      int64_t off = 0;
      for (const Member& mem : group) {
        const Tensor& b = *const_tensor(g, g.node(mem.matmul).inputs[1]);
        for (int64_t r = 0; r < k; ++r)
          std::memcpy(w.mutable_bytes() + (r * total + off) * es, b.bytes() + r * mem.n * es, static_cast<size_t>(mem.n) * es);
        if (mem.add >= 0) {
          const Tensor& bb = *const_tensor(g, g.node(mem.add).inputs[1]);
          const size_t bs = storage_size(bb.dtype());
          std::memcpy(bias.mutable_bytes() + off * bs, bb.bytes(), static_cast<size_t>(mem.n) * bs);
        }
        off += mem.n;
      }
      const std::string base = g.value(f.outputs[0]).name;
      ValueId lhs = map[static_cast<size_t>(f.inputs[0])];
      if (group[0].reshape_in >= 0) {
        const Node& r = g.node(group[0].reshape_in);
        lhs = out.add_value(rb.fresh(base + "_merged_lhs"), a);
        rb.node(Op::RESHAPE, {map[static_cast<size_t>(r.inputs[0])], shape_value(base + "_merged_lhs_shape", a.shape)}, {},
             lhs, r.name);
      }
      const ValueId wv = out.add_value(rb.fresh(base + "_merged_weights"), w.type());
      rb.node(Op::CONST, {}, {std::move(w)}, wv, "");
      ValueId result = out.add_value(rb.fresh(base + "_merged"), TensorType{out_dtype, {1, a.shape[1], total}});
      rb.node(Op::MATMUL, {lhs, wv, map[static_cast<size_t>(f.inputs[2])], map[static_cast<size_t>(f.inputs[3])]}, {},
           result, f.name);
      if (group[0].reshape_out >= 0) {
        const ValueId shaped = out.add_value(rb.fresh(base + "_merged_shaped"), wide);
        rb.node(Op::RESHAPE, {result, shape_value(base + "_merged_shape", wide.shape)}, {}, shaped,
             g.node(group[0].reshape_out).name);
        result = shaped;
      }
      if (group[0].add >= 0) {
        const ValueId bv = out.add_value(rb.fresh(base + "_merged_bias"), bias.type());
        rb.node(Op::CONST, {}, {std::move(bias)}, bv, "");
        const ValueId sum = out.add_value(rb.fresh(base + "_merged_biased"), wide);
        rb.node(Op::ADD, {result, bv}, {}, sum, g.node(group[0].add).name);
        result = sum;
      }
      off = 0;
      for (const Member& mem : group) {
        const TensorType& t = g.value(mem.last).type;
        const std::string& name = g.value(mem.last).name;
        Shape start(t.shape.size(), 0);
        start.back() = off;
        const ValueId piece = out.add_value(name, t);
        rb.node(Op::SLICE, {result, shape_value(name + "_start", start), shape_value(name + "_size", t.shape)}, {}, piece,
             g.node(mem.matmul).name);
        map[static_cast<size_t>(mem.last)] = piece;
        off += mem.n;
      }
      merged += static_cast<int>(group.size()) - 1;
    }
    if (!skip[i]) copy_node(g, static_cast<int>(i), out, map);
  }
  g = rb.finish();
  return merged;
}


int drop_broadcast_tiles(Graph& g) {
  const Uses uses(g);
  // Element-wise functions of one float operand: applied to the TILE's input instead of its
  // result, each element is computed from the same value, so the result is the same bit for bit.
  auto unary = [&](const Node& n) {
    switch (n.op) {
      case Op::RECIPROCAL: case Op::RSQRT: case Op::EXP: case Op::LOG: case Op::ABS: case Op::SIGMOID:
      case Op::TANH: case Op::ERF: case Op::FLOOR: case Op::CEIL: case Op::CLAMP: case Op::COS: case Op::SIN:
        return n.inputs.size() == 1 && n.outputs.size() == 1 &&
               g.value(n.inputs[0]).type.dtype == g.value(n.outputs[0]).type.dtype;
      default: return false;
    }
  };
  int dropped = 0;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& bin = g.node(static_cast<int>(i));
    if (bin.op != Op::ADD && bin.op != Op::SUB && bin.op != Op::MUL && bin.op != Op::MAXIMUM && bin.op != Op::MINIMUM)
      continue;
    if (bin.inputs.size() < 2 || bin.outputs.size() != 1) continue;
    if (bin.op == Op::MUL && bin.inputs.size() >= 3 && !const_all_int(g, bin.inputs[2], 0)) continue;
    const Shape& rs = g.value(bin.outputs[0]).type.shape;
    for (int k = 0; k < 2; ++k) {
      const ValueId other = bin.inputs[static_cast<size_t>(1 - k)];
      if (g.value(other).type.shape != rs) continue;  // the other operand gives the result its shape
      // Back from operand k through unary functions (each read only by the next) to a TILE.
      std::vector<int> chain;  // unary nodes, nearest the binary operator first
      ValueId w = bin.inputs[static_cast<size_t>(k)];
      int reader = static_cast<int>(i);
      int tile = -1;
      while (true) {
        const int p = g.value(w).producer;
        if (p < 0 || !uses.only(w, reader)) break;
        if (g.node(p).op == Op::TILE) {
          tile = p;
          break;
        }
        if (!unary(g.node(p)) || chain.size() >= 8) break;
        chain.push_back(p);
        reader = p;
        w = g.node(p).inputs[0];
      }
      if (tile < 0) continue;
      // A pure broadcast: the TILE's input is the result's shape with some axes 1.
      const ValueId v = g.node(tile).inputs[0];
      const TensorType& vt = g.value(v).type;
      bool broadcast = vt.shape.size() == rs.size() && vt.dtype == g.value(w).type.dtype;
      for (size_t d = 0; broadcast && d < rs.size(); ++d) broadcast = vt.shape[d] == rs[d] || vt.shape[d] == 1;
      if (!broadcast) continue;
      // The chain now reads v and keeps its shape; the binary operator broadcasts it.
      ValueId from = v;
      for (size_t c = chain.size(); c-- > 0;) {
        Node& u = g.mutable_node(chain[c]);
        u.inputs[0] = from;
        g.mutable_value(u.outputs[0]).type.shape = vt.shape;
        from = u.outputs[0];
      }
      g.mutable_node(static_cast<int>(i)).inputs[static_cast<size_t>(k)] = from;
      ++dropped;
    }
  }
  if (dropped > 0) g = prune_graph(g);
  return dropped;
}

// The taps [lo, hi] of a window axis that read the input for some output position: tap i reads
// rows o * stride - pad_before + i * dilation, o in [0, out), which must meet [0, in). Empty (lo >
// hi) where every tap reads only padding.
struct TapRange {
  int64_t lo = 0, hi = -1;
};
TapRange live_taps(int64_t in, int64_t out, int64_t k, int64_t pad_before, int64_t stride, int64_t dilation) {
  TapRange r{k, -1};
  for (int64_t i = 0; i < k; ++i) {
    const int64_t first = -pad_before + i * dilation, last = (out - 1) * stride - pad_before + i * dilation;
    if (last >= 0 && first < in) {
      r.lo = std::min(r.lo, i);
      r.hi = std::max(r.hi, i);
    }
  }
  return r;
}

int prune_padding_taps(Graph& g) {
  const Uses uses(g);
  int pruned = 0;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.node(static_cast<int>(i));
    if ((n.op != Op::CONV2D && n.op != Op::DEPTHWISE_CONV2D) || n.inputs.size() < 2 || n.outputs.size() != 1) continue;
    const bool depthwise = n.op == Op::DEPTHWISE_CONV2D;
    const ValueId wv = n.inputs[1];
    const Tensor* w = const_tensor(g, wv);
    const Shape& xs = g.value(n.inputs[0]).type.shape;
    const Shape& ys = g.value(n.outputs[0]).type.shape;
    if (!w || w->shape().size() != 4 || xs.size() != 4 || ys.size() != 4 || !uses.only(wv, static_cast<int>(i))) continue;
    const std::vector<int64_t>& pad = n.attr_ints("pad");
    const std::vector<int64_t>& stride = n.attr_ints("stride");
    const std::vector<int64_t>& dil = n.attr_ints("dilation");
    if (pad.size() != 4 || stride.size() != 2 || dil.size() != 2) continue;
    // Kernel axes: [OC, KH, KW, IC] for CONV2D, [KH, KW, C, M] for DEPTHWISE_CONV2D.
    const size_t ah = depthwise ? 0 : 1, aw = ah + 1;
    const Shape& ks = w->shape();
    const TapRange th = live_taps(xs[1], ys[1], ks[ah], pad[0], stride[0], dil[0]);
    const TapRange tw = live_taps(xs[2], ys[2], ks[aw], pad[2], stride[1], dil[1]);
    if (th.lo > th.hi || tw.lo > tw.hi) continue;  // only padding everywhere: left as written
    if (th.lo == 0 && th.hi == ks[ah] - 1 && tw.lo == 0 && tw.hi == ks[aw] - 1) continue;
    const int64_t kh = th.hi - th.lo + 1, kw = tw.hi - tw.lo + 1;
    const int64_t dh = kh == 1 ? 1 : dil[0], dw = kw == 1 ? 1 : dil[1];
    // The same output positions: the first live tap moves the window's start by lo * dilation,
    // and the end padding is what makes the output extent come out as before (exactly: TOSA
    // requires (in - 1 + pads - (k - 1) * dilation) to be a multiple of the stride).
    const int64_t pt = pad[0] - th.lo * dil[0], pl = pad[2] - tw.lo * dil[1];
    const int64_t pb = (ys[1] - 1) * stride[0] + (kh - 1) * dh + 1 - xs[1] - pt;
    const int64_t pr = (ys[2] - 1) * stride[1] + (kw - 1) * dw + 1 - xs[2] - pl;
    if (pt < 0 || pl < 0 || pb < 0 || pr < 0) continue;
    // TOSA skips the taps that fall outside the input (no product with padding is formed), so
    // the kept taps give the same sum.
    Shape nks = ks;
    nks[ah] = kh;
    nks[aw] = kw;
    Tensor nw = Tensor::zeros(TensorType{w->dtype(), nks});
    const size_t es = storage_size(w->dtype());
    int64_t dst = 0;
    for (int64_t a = 0; a < ks[0]; ++a)
      for (int64_t b = 0; b < ks[1]; ++b)
        for (int64_t c = 0; c < ks[2]; ++c) {
          const int64_t y = depthwise ? a : b, x = depthwise ? b : c;
          if (y < th.lo || y > th.hi || x < tw.lo || x > tw.hi) continue;
          std::memcpy(nw.mutable_bytes() + dst * es, w->bytes() + ((a * ks[1] + b) * ks[2] + c) * ks[3] * es,
                      static_cast<size_t>(ks[3]) * es);
          dst += ks[3];
        }
    Node& c = g.mutable_node(g.value(wv).producer);
    g.mutable_value(wv).type = nw.type();
    c.attrs[static_cast<size_t>(&c.attr("values") - c.attrs.data())] = std::move(nw);
    Node& m = g.mutable_node(static_cast<int>(i));
    m.attrs[static_cast<size_t>(&m.attr("pad") - m.attrs.data())] = std::vector<int64_t>{pt, pb, pl, pr};
    m.attrs[static_cast<size_t>(&m.attr("dilation") - m.attrs.data())] = std::vector<int64_t>{dh, dw};
    ++pruned;
  }
  return pruned;
}

int fold_slice_scales(Graph& g) {
  const Uses uses(g);
  const std::vector<std::vector<int>>& readers = uses.readers;
  const std::vector<char>& is_output = uses.is_output;
  auto is_view = [&](const Node& n) { return n.op == Op::RESHAPE || n.op == Op::TRANSPOSE || n.op == Op::SLICE; };
  // Candidates: MUL(x, s), s one float value of x's type, x read only there, the result of x's type.
  // Each is grouped under the value y that x is a view of (back through RESHAPE / TRANSPOSE / SLICE).
  std::map<ValueId, std::vector<int>> by_y;
  std::vector<char> candidate(g.nodes().size(), 0);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& m = g.node(static_cast<int>(i));
    if (m.op != Op::MUL || m.inputs.size() < 2 || is_output[static_cast<size_t>(m.inputs[0])] ||
        is_output[static_cast<size_t>(m.outputs[0])])
      continue;
    if (m.inputs.size() > 2 && !const_all_int(g, m.inputs[2], 0)) continue;
    const Tensor* c = const_tensor(g, m.inputs[1]);
    const ValueId x = m.inputs[0];
    if (!c || c->num_elements() != 1 || c->dtype() != g.value(x).type.dtype || !is_float(c->dtype()) ||
        g.value(m.outputs[0]).type != g.value(x).type || readers[static_cast<size_t>(x)].size() != 1)
      continue;
    // (Only through a SLICE: a scale behind RESHAPEs and TRANSPOSEs alone applies to all of y,
    // where it is a post-op of y's producer already, e.g. attention's scale after Q K^T.)
    ValueId y = x;
    bool sliced = false;
    while (g.value(y).producer >= 0 && is_view(g.node(g.value(y).producer))) {
      sliced |= g.node(g.value(y).producer).op == Op::SLICE;
      y = g.node(g.value(y).producer).inputs[0];
    }
    const int yp = g.value(y).producer;
    if (!sliced || yp < 0 || g.node(yp).op == Op::CONST || g.value(y).type.rank() < 1) continue;
    by_y[y].push_back(static_cast<int>(i));
    candidate[i] = 1;
  }
  // Which elements of y each reader sees: every reader of y, through the views between, is a leaf
  // (a candidate MUL, or anything else, which is taken to read all of the view it reads). Y's
  // elements are addressed by offset; a column is an offset modulo the last axis. The fold holds
  // where each column is read by candidates of one factor only, or by no candidate.
  constexpr int64_t kMaxElements = int64_t{1} << 26;  // enumerated one by one below
  constexpr int64_t kMaxVisits = int64_t{1} << 25;    // element steps of one walk_back
  // Calls f with the offset in the chain's source of every element of its result, mapping each
  // flat index back node by node (RESHAPE keeps it; TRANSPOSE and SLICE move the multi-index);
  // false (nothing called) where a SLICE's start is not a constant or the walk is too long.
  auto walk_back = [&](const std::vector<int>& chain, const auto& f) {
    struct Step {
      Op op;
      Shape in, out;
      std::vector<int64_t> arg;  // TRANSPOSE: perms; SLICE: start
    };
    std::vector<Step> steps;
    for (int ni : chain) {
      const Node& n = g.node(ni);
      Step st{n.op, g.value(n.inputs[0]).type.shape, g.value(n.outputs[0]).type.shape, {}};
      if (n.op == Op::TRANSPOSE) st.arg = n.attr_ints("perms");
      if (n.op == Op::SLICE) {
        const int p = g.value(n.inputs[1]).producer;
        if (p < 0 || g.node(p).op != Op::CONST_SHAPE) return false;
        st.arg = g.node(p).attr_ints("values");
      }
      steps.push_back(std::move(st));
    }
    const int64_t count = shape_elements(steps.back().out);
    if (count > kMaxVisits / static_cast<int64_t>(steps.size())) return false;
    std::vector<int64_t> idx, in_idx;
    for (int64_t e0 = 0; e0 < count; ++e0) {
      int64_t e = e0;
      for (size_t k = steps.size(); k-- > 0;) {
        const Step& st = steps[k];
        if (st.op == Op::RESHAPE) continue;
        const size_t r = st.out.size();
        idx.assign(r, 0);
        for (size_t d = r, rest = static_cast<size_t>(e); d-- > 0;) {
          idx[d] = static_cast<int64_t>(rest % static_cast<size_t>(st.out[d]));
          rest /= static_cast<size_t>(st.out[d]);
        }
        in_idx.assign(st.in.size(), 0);
        for (size_t d = 0; d < r; ++d) {
          if (st.op == Op::TRANSPOSE) in_idx[static_cast<size_t>(st.arg[d])] = idx[d];
          else in_idx[d] = idx[d] + st.arg[d];
        }
        e = 0;
        for (size_t d = 0; d < st.in.size(); ++d) e = e * st.in[d] + in_idx[d];
      }
      f(e);
    }
    return true;
  };
  std::map<ValueId, std::vector<int>> kept;  // y -> per column, the MUL whose factor it takes (-1: none)
  for (const auto& [y, muls] : by_y) {
    const TensorType& yt = g.value(y).type;
    const int64_t cols = yt.shape.back(), total = shape_elements(yt.shape);
    if (is_output[static_cast<size_t>(y)] || cols < 1 || total > kMaxElements) continue;
    std::vector<int> colf(static_cast<size_t>(cols), -1);
    std::vector<char> plain(static_cast<size_t>(cols), 0);
    bool ok = true;
    // Visits every offset of y that `chain` (views from y) addresses: from its strided view, or
    // where it is none (heads of a batch merged in a middle axis: torch's q.view(S, B*H, D) at
    // B > 1) element by element back through the chain; all of y where the chain is empty, a
    // SLICE's start is not a constant, or the element walk would exceed kMaxVisits.
    auto each = [&](const std::vector<int>& chain, const auto& f) {
      const std::optional<StridedView> v = chain.empty() ? std::nullopt : forward_chain(g, chain, /*allow_split=*/true);
      if (!v) {
        if (!chain.empty() && walk_back(chain, f)) return;
        for (int64_t e = 0; e < total; ++e) f(e);
        return;
      }
      const size_t r = v->dims.size();
      if (r == 0) return f(v->offset);
      std::vector<int64_t> idx(r, 0);
      for (int64_t d : v->dims)
        if (d == 0) return;
      for (;;) {
        // (A split first axis, the heads of a batch: index i at (i / split) * outer + (i % split) * stride.)
        int64_t off = v->offset + (v->split > 1 ? (idx[0] / v->split) * v->outer + (idx[0] % v->split) * v->strides[0]
                                                 : idx[0] * v->strides[0]);
        for (size_t d = 1; d < r; ++d) off += idx[d] * v->strides[d];
        f(off);
        size_t d = r;
        while (d > 0 && ++idx[d - 1] == v->dims[d - 1]) idx[--d] = 0;
        if (d == 0) return;
      }
    };
    std::vector<std::pair<ValueId, std::vector<int>>> stack = {{y, {}}};
    while (ok && !stack.empty()) {
      auto [v, chain] = std::move(stack.back());
      stack.pop_back();
      for (int r : readers[static_cast<size_t>(v)]) {
        const Node& n = g.node(r);
        std::vector<int> next = chain;
        next.push_back(r);
        if (is_view(n) && n.inputs[0] == v) {
          if (is_output[static_cast<size_t>(n.outputs[0])]) ok = false;
          stack.push_back({n.outputs[0], std::move(next)});
        } else if (candidate[static_cast<size_t>(r)] && std::find(muls.begin(), muls.end(), r) != muls.end()) {
          const Tensor& c = *const_tensor(g, n.inputs[1]);
          next.pop_back();
          each(next, [&](int64_t e) {
            int& f = colf[static_cast<size_t>(e % cols)];
            if (f >= 0 && std::memcmp(const_tensor(g, g.node(f).inputs[1])->bytes(), c.bytes(), storage_size(c.dtype())) != 0)
              ok = false;
            f = r;
          });
        } else {
          next.pop_back();
          each(next, [&](int64_t e) { plain[static_cast<size_t>(e % cols)] = 1; });
        }
      }
    }
    for (int64_t k = 0; k < cols && ok; ++k)
      if (colf[static_cast<size_t>(k)] >= 0 && plain[static_cast<size_t>(k)]) ok = false;
    if (ok) kept[y] = std::move(colf);
  }
  if (kept.empty()) return 0;

  std::vector<char> skip(g.nodes().size(), 0);
  std::map<int, std::vector<ValueId>> after;  // producer node -> the Y's it makes that get a scale after it
  for (const auto& [y, colf] : kept) {
    after[g.value(y).producer].push_back(y);
    for (int m : by_y[y]) skip[static_cast<size_t>(m)] = 1;
  }
  Rebuild rb(g);
  Graph& out = rb.out;
  std::vector<ValueId>& map = rb.map;
  int folded = 0;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    if (skip[i]) {
      // The MUL's readers read its input, whose columns are now scaled at the source.
      const Node& m = g.node(static_cast<int>(i));
      map[static_cast<size_t>(m.outputs[0])] = map[static_cast<size_t>(m.inputs[0])];
      ++folded;
      continue;
    }
    copy_node(g, static_cast<int>(i), out, map);
    auto it = after.find(static_cast<int>(i));
    if (it == after.end()) continue;
    for (const ValueId y : it->second) {
      const TensorType& yt = g.value(y).type;
      const std::vector<int>& colf = kept[y];
      const Node& m0 = g.node(by_y[y].front());
      const Tensor& c0 = *const_tensor(g, m0.inputs[1]);
      Shape cs(yt.shape.size(), 1);
      cs.back() = yt.shape.back();
      // 1 elsewhere (x * 1 is x exactly, NaN and infinities included); each column read by a MUL
      // that MUL's factor (the same bits: the product rounds as the MUL did).
      Tensor scale = Tensor::from_doubles(TensorType{c0.dtype(), cs}, std::vector<double>(static_cast<size_t>(cs.back()), 1.0));
      const size_t es = storage_size(c0.dtype());
      for (size_t k = 0; k < colf.size(); ++k)
        if (colf[k] >= 0)
          std::memcpy(scale.mutable_bytes() + k * es, const_tensor(g, g.node(colf[k]).inputs[1])->bytes(), es);
      const std::string base = g.value(y).name;
      const ValueId sv = out.add_value(rb.fresh(base + "_column_scale"), scale.type());
      rb.node(Op::CONST, {}, {std::move(scale)}, sv, "");
      std::vector<ValueId> ins = {map[static_cast<size_t>(y)], sv};
      if (m0.inputs.size() > 2) {
        const ValueId shift = out.add_value(rb.fresh(base + "_column_scale_shift"), g.value(m0.inputs[2]).type);
        rb.node(Op::CONST, {}, {*const_tensor(g, m0.inputs[2])}, shift, "");
        ins.push_back(shift);
      }
      const ValueId scaled = out.add_value(rb.fresh(base + "_column_scaled"), yt);
      rb.node(Op::MUL, std::move(ins), {}, scaled, m0.name);
      map[static_cast<size_t>(y)] = scaled;
    }
  }
  g = rb.finish();
  return folded;
}

int unshare_view_chains(Graph& g) {
  const Uses uses(g);
  const std::vector<std::vector<int>>& readers = uses.readers;
  const std::vector<char>& is_output = uses.is_output;
  auto layout = [&](int n) { return n >= 0 && (g.node(n).op == Op::RESHAPE || g.node(n).op == Op::TRANSPOSE); };
  // Whether the value SLICE node `s` makes reaches a MATMUL operand through views read only on the
  // way, and `chain` (the views in front of `s`), `s` and those views together are one strided view
  // (a split batch axis allowed) of three dimensions: what the MATMUL can read in place.
  auto feeds_matmul = [&](int s, std::vector<int> chain) {
    chain.push_back(s);
    ValueId v = g.node(s).outputs[0];
    for (;;) {
      const std::vector<int>& r = readers[static_cast<size_t>(v)];
      if (r.size() != 1 || is_output[static_cast<size_t>(v)]) return false;
      const Node& n = g.node(r[0]);
      if (n.op == Op::MATMUL) {
        const std::optional<StridedView> view = forward_chain(g, chain, /*allow_split=*/true);
        return (n.inputs[0] == v || n.inputs[1] == v) && view && view->dims.size() == 3;
      }
      if (!layout(r[0]) && n.op != Op::SLICE) return false;
      if (n.inputs[0] != v) return false;
      chain.push_back(r[0]);
      v = n.outputs[0];
    }
  };
  // SLICE node -> the chain (ascending) it gets a copy of.
  std::map<int, std::vector<int>> copies;
  for (size_t i = 0; i < g.values().size(); ++i) {
    const ValueId t = static_cast<ValueId>(i);
    const std::vector<int>& rs = readers[i];
    if (rs.size() < 2 || is_output[i] || !layout(g.value(t).producer)) continue;
    // Up through RESHAPEs / TRANSPOSEs whose results are read on this path only.
    std::vector<int> chain = {g.value(t).producer};
    for (;;) {
      const ValueId in = g.node(chain.front()).inputs[0];
      const int p = g.value(in).producer;
      if (!layout(p) || readers[static_cast<size_t>(in)].size() != 1 || is_output[static_cast<size_t>(in)]) break;
      chain.insert(chain.begin(), p);
    }
    bool ok = true;
    for (int r : rs) ok = ok && g.node(r).op == Op::SLICE && g.node(r).inputs[0] == t && feeds_matmul(r, chain);
    if (!ok) continue;
    for (size_t k = 1; k < rs.size(); ++k) copies[rs[k]] = chain;
  }
  if (copies.empty()) return 0;
  Rebuild rb(g);
  std::vector<ValueId>& map = rb.map;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    auto it = copies.find(static_cast<int>(i));
    if (it != copies.end()) {
      // This SLICE reads its own copy of the views (the original's values stay mapped for the first).
      std::vector<ValueId> saved;
      for (int c : it->second) saved.push_back(map[static_cast<size_t>(g.node(c).outputs[0])]);
      for (int c : it->second) {
        const Node& n = g.node(c);
        std::vector<ValueId> ins;
        for (ValueId v : n.inputs) ins.push_back(map[static_cast<size_t>(v)]);
        const ValueId o = rb.out.add_value(rb.fresh(g.value(n.outputs[0]).name + "_unshared"), g.value(n.outputs[0]).type);
        rb.node(n.op, std::move(ins), n.attrs, o, n.name);
        map[static_cast<size_t>(n.outputs[0])] = o;
      }
      copy_node(g, static_cast<int>(i), rb.out, map);
      for (size_t k = 0; k < it->second.size(); ++k) map[static_cast<size_t>(g.node(it->second[k]).outputs[0])] = saved[k];
      continue;
    }
    copy_node(g, static_cast<int>(i), rb.out, map);
  }
  g = rb.finish();
  return static_cast<int>(copies.size());
}

std::string canonical_summary(const CanonicalizeStats& s) {
  std::string out;
  auto item = [&](int n, const char* one, const char* many) {
    if (n <= 0) return;
    if (!out.empty()) out += ", ";
    out += std::to_string(n) + " " + (n == 1 ? one : many);
  };
  item(s.common, "repeated computation merged", "repeated computations merged");
  item(s.identities, "identity dropped (MUL by 1, CLAMP of a CLAMP)", "identities dropped (MUL by 1, CLAMP of a CLAMP)");
  item(s.activations, "hand-written activation put in the fused form", "hand-written activations put in the fused form");
  item(s.constant_adds, "pair of constant ADDs folded into one", "pairs of constant ADDs folded into one");
  item(s.rsqrt, "division by a square root as RSQRT", "divisions by a square root as RSQRT");
  item(s.merged_matmuls, "sibling MATMUL merged into a wider one", "sibling MATMULs merged into wider ones");
  item(s.column_scales, "column scale moved in front of its SLICE", "column scales moved in front of their SLICEs");
  item(s.tiles, "broadcast TILE left to its element-wise reader", "broadcast TILEs left to their element-wise readers");
  item(s.padding_taps, "convolution kernel cut to the taps that read its input",
       "convolution kernels cut to the taps that read their input");
  return out;
}

CanonicalizeStats canonicalize(Graph& g) {
  CanonicalizeStats stats;
  auto is_const = [&](ValueId v) {
    const int p = g.value(v).producer;
    return p >= 0 && g.node(p).op == Op::CONST;
  };
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    Node& n = g.mutable_node(static_cast<int>(i));
    if ((n.op == Op::ADD || n.op == Op::MUL) && n.inputs.size() >= 2 && is_const(n.inputs[0]) && !is_const(n.inputs[1])) {
      std::swap(n.inputs[0], n.inputs[1]);
      ++stats.commuted;
    }
  }
  // (After the commuting: ADD(c, x) and ADD(x, c) are one node now.)
  stats.common = merge_common_nodes(g);
  stats.identities = drop_identities(g);
  stats.activations = canonical_activations(g);
  // (Before the RESHAPE merge below: the fold leaves RESHAPE(RESHAPE(x)) where a RESHAPE stood
  // between the two ADDs.)
  stats.constant_adds = fold_constant_adds(g);
  std::vector<int> readers(g.values().size(), 0);
  for (const Node& n : g.nodes())
    for (ValueId v : n.inputs) ++readers[static_cast<size_t>(v)];
  for (ValueId o : g.outputs()) ++readers[static_cast<size_t>(o)];
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    Node& r = g.mutable_node(static_cast<int>(i));
    if (r.op != Op::RECIPROCAL || r.inputs.size() != 1) continue;
    const ValueId s = r.inputs[0];
    const int p = g.value(s).producer;
    if (p < 0 || readers[static_cast<size_t>(s)] != 1) continue;
    const Node& pw = g.node(p);
    if (pw.op != Op::POW || !const_all(g, pw.inputs[1], 0.5)) continue;
    // POW broadcasts its exponent; RSQRT keeps x's shape, which must then be the result's.
    if (g.value(pw.inputs[0]).type != g.value(r.outputs[0]).type) continue;
    r.op = Op::RSQRT;
    r.inputs = {pw.inputs[0]};
    ++stats.rsqrt;
  }
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    Node& r = g.mutable_node(static_cast<int>(i));
    if (r.op != Op::RESHAPE || r.inputs.empty()) continue;
    const ValueId m = r.inputs[0];
    const int p = g.value(m).producer;
    if (p < 0 || g.node(p).op != Op::RESHAPE || readers[static_cast<size_t>(m)] != 1) continue;
    // Only on a value a view chain starts from: inside one (after a TRANSPOSE or SLICE) two steps
    // may be a strided view where the merged one is not (compiler/strided_view.h).
    const int q = g.value(g.node(p).inputs[0]).producer;
    if (q >= 0 && (g.node(q).op == Op::RESHAPE || g.node(q).op == Op::TRANSPOSE || g.node(q).op == Op::SLICE)) continue;
    r.inputs[0] = g.node(p).inputs[0];  // (readers counts graph outputs too: m is none)
    ++readers[static_cast<size_t>(r.inputs[0])];
    ++stats.reshapes;
  }
  if (stats.rsqrt > 0 || stats.reshapes > 0) g = prune_graph(g);
  stats.tiles = drop_broadcast_tiles(g);
  stats.padding_taps = prune_padding_taps(g);
  stats.merged_matmuls = merge_sibling_matmuls(g, /*through_reshapes=*/false);
  stats.column_scales = fold_slice_scales(g);
  return stats;
}

}  // namespace weft::compiler
