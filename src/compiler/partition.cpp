#include "compiler/partition.h"

#include "weft/custom.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <map>
#include <set>

#include "compiler/strided_view.h"

namespace weft::compiler {

using backend::Backend;
using backend::Composite;
using backend::PostOp;

bool default_rules(const std::vector<std::string>& names) {
  return names.empty() || (names.size() == 1 && names[0] == "cpu");
}

std::vector<const Backend*> resolve_backends(const std::vector<std::string>& names) {
  const auto& all = backend::all_backends();
  std::string known;
  for (const Backend* b : all) known += (known.empty() ? "" : ", ") + std::string(b->name());
  std::vector<const Backend*> out;
  if (default_rules(names)) {
    const bool cpu = !names.empty();
    for (const Backend* b : all)
      if ((b->defers_probe() || b->unavailable_reason().empty()) && !(cpu && b->on_device())) out.push_back(b);
    return out;
  }
  for (const std::string& n : names) {
    if (n == "cpu") {
      std::string given;
      for (const std::string& m : names) given += (given.empty() ? "" : ",") + m;
      throw Error(ErrorCode::kInvalidArgument,
                  "backend 'cpu' stands for the CPU backends in their default order and rules, and cannot be "
                  "listed with other backends (got '" + given + "')",
                  {.operand = "backends"});
    }
    const Backend* b = backend::find_backend(n);
    if (!b)
      throw Error(ErrorCode::kInvalidArgument,
                  "unknown backend '" + n + "' (this build has: " + known + "; 'cpu' selects those on the CPU)",
                  {.operand = "backends"});
    if (std::string why = b->unavailable_reason(); !why.empty())
      throw Error(ErrorCode::kUnsupported, "backend '" + n + "' is not available here: " + why, {.operand = "backends"});
    if (std::find(out.begin(), out.end(), b) != out.end())
      throw Error(ErrorCode::kInvalidArgument, "backend '" + n + "' is listed twice", {.operand = "backends"});
    out.push_back(b);
  }
  const Backend* ref = &backend::reference_backend();
  if (std::find(out.begin(), out.end(), ref) == out.end()) out.push_back(ref);
  return out;
}

namespace {

// "a: why; b: why" for an error that lists every backend's reason.
std::string join_reasons(const std::vector<std::string>& reasons) {
  std::string r;
  for (const std::string& s : reasons) r += (r.empty() ? "" : "; ") + s;
  return r;
}

class Matcher {
 public:
  Matcher(const Graph& g, const std::vector<bool>& taken) : g_(g), taken_(taken) {
    consumers_.resize(g.values().size());
    for (int ni = 0; ni < static_cast<int>(g.nodes().size()); ++ni)
      for (ValueId v : g.node(ni).inputs) consumers_[static_cast<size_t>(v)].push_back(ni);
    is_output_.assign(g.values().size(), false);
    for (ValueId v : g.outputs()) is_output_[static_cast<size_t>(v)] = true;
  }

  // The node that alone reads `v` (once), if `v` is not a graph output; else -1.
  int sole_consumer(ValueId v) const {
    const auto& c = consumers_[static_cast<size_t>(v)];
    if (c.size() != 1 || is_output_[static_cast<size_t>(v)] || taken_[static_cast<size_t>(c[0])]) return -1;
    return c[0];
  }
  // The producer of `v` if it is a free node of op `op` whose output only `user` reads.
  int private_producer(ValueId v, int user) const {
    int p = g_.value(v).producer;
    if (p < 0 || taken_[static_cast<size_t>(p)] || sole_consumer(v) != user) return -1;
    return p;
  }
  bool is_const(ValueId v) const {
    int p = g_.value(v).producer;
    return p >= 0 && g_.node(p).op == Op::CONST;
  }

  // Variants of the composite anchored at node `a`, largest first; the last is `a` alone.
  std::vector<Composite> variants(int a) const {
    const Node& n = g_.node(a);
    if (n.op == Op::REDUCE_MAX || n.op == Op::REDUCE_SUM) {
      std::vector<Composite> out;
      if (auto c = n.op == Op::REDUCE_MAX ? softmax(a) : layer_norm(a)) out.push_back(std::move(*c));
      out.push_back(single(a));
      return out;
    }
    if (n.op == Op::MUL) {
      std::vector<Composite> out;
      if (auto c = rms_norm(a)) out.push_back(std::move(*c));
      if (auto c = l2_norm(a)) out.push_back(std::move(*c));
      for (Composite& c : elementwise_chain(a)) out.push_back(std::move(c));
      return out;
    }
    if (n.op == Op::ADD || n.op == Op::SUB) return elementwise_chain(a);
    std::vector<Composite> out;
    if (n.op == Op::CONV2D) out = grouped_conv(a);
    Composite full;
    full.anchor = a;
    const bool conv = n.op == Op::CONV2D || n.op == Op::CONV3D || n.op == Op::DEPTHWISE_CONV2D || n.op == Op::TRANSPOSE_CONV2D;
    const bool pool = n.op == Op::MAX_POOL2D || n.op == Op::AVG_POOL2D;
    const bool matmul = n.op == Op::MATMUL;
    if ((conv && n.op != Op::TRANSPOSE_CONV2D && n.op != Op::CONV3D) || pool) {
      int p = private_producer(n.inputs[0], a);
      // PAD, or a SLICE cropping the end of H/W (ONNX strided convs whose last rows no window
      // reaches: TOSA requires exact division), folds into the window's padding.
      if (p >= 0 && (g_.node(p).op == Op::PAD || (conv && g_.node(p).op == Op::SLICE))) full.pad = p;
      if (p >= 0 && n.op == Op::CONV2D && g_.node(p).op == Op::MUL) scale_in(p, full);
    }
    if (matmul) {
      full.a_view = view_chain(n.inputs[0], a);
      full.b_view = view_chain(n.inputs[1], a);
    }
    int mid_reshape = -1;  // a RESHAPE between post-ops (post_ops' `reshape`), before post-op mid_at
    size_t mid_at = 0;
    if (conv || matmul) full.post_ops = post_ops(n.outputs[0], matmul, matmul ? &mid_reshape : nullptr, &mid_at);
    if (matmul && full.post_ops.empty()) {
      // Post-ops behind a RESHAPE that keeps the last dimension (bias and GELU of a 3-D MatMul
      // that the ONNX importer reshaped back to 4-D).
      const int rs = sole_consumer(n.outputs[0]);
      if (rs >= 0 && g_.node(rs).op == Op::RESHAPE) {
        const Shape& from = g_.value(n.outputs[0]).type.shape;
        const Shape& to = g_.value(g_.node(rs).outputs[0]).type.shape;
        if (!to.empty() && !from.empty() && to.back() == from.back()) {
          full.post_ops = post_ops(g_.node(rs).outputs[0], true);
          if (!full.post_ops.empty()) full.post_reshape = rs;
        }
      }
    }
    if (matmul && full.post_ops.empty()) full.out_view = out_chain(n.outputs[0]);

    const bool has_prefix = full.pad >= 0 || full.scale_in >= 0 || !full.a_view.empty() || !full.b_view.empty();
    for (int with_prefix = has_prefix ? 1 : 0; with_prefix >= 0; --with_prefix) {
      for (size_t k = full.post_ops.size() + 1; k-- > 0;) {
        Composite c;
        c.anchor = a;
        if (with_prefix) {
          c.pad = full.pad;
          c.scale_in = full.scale_in;
          c.scale_in_source = full.scale_in_source;
          c.scale_in_factor = full.scale_in_factor;
          c.a_view = full.a_view;
          c.b_view = full.b_view;
        }
        c.post_ops.assign(full.post_ops.begin(), full.post_ops.begin() + static_cast<long>(k));
        if (k > 0) c.post_reshape = full.post_reshape;
        if (mid_reshape >= 0 && k > mid_at) c.post_reshape = mid_reshape, c.post_reshape_at = mid_at;
        if (k == 0 && !full.out_view.empty()) {
          Composite with_out = c;
          with_out.out_view = full.out_view;
          finish(with_out);
          out.push_back(std::move(with_out));
        }
        if (c.pad < 0 && c.scale_in < 0 && c.a_view.empty() && c.b_view.empty() && c.post_ops.empty()) continue;
        finish(c);
        out.push_back(std::move(c));
      }
    }
    out.push_back(single(a));
    return out;
  }

  // The nodes reading `v`.
  const std::vector<int>& consumers(ValueId v) const { return consumers_[static_cast<size_t>(v)]; }

  // Region::kSliceCopies anchored at free TRANSPOSE node `t` (compiler::fold_transpose over free
  // nodes), or nullopt.
  std::optional<Composite> slice_copies(int t) const {
    const std::optional<TransposeFold> f = fold_transpose(
        g_, t, consumers_, [&](int n) { return !taken_[static_cast<size_t>(n)]; },
        [&](ValueId v) { return is_output_[static_cast<size_t>(v)]; });
    if (!f) return std::nullopt;
    Composite c;
    c.region = Composite::Region::kSliceCopies;
    c.anchor = t;
    if (f->concat >= 0) c.region_nodes.push_back(f->concat);
    c.region_nodes.insert(c.region_nodes.end(), f->views.begin(), f->views.end());
    for (const SliceCopy& sc : f->copies) c.region_nodes.push_back(sc.slice);
    finish(c);
    c.outputs.clear();
    for (const SliceCopy& sc : f->copies) c.outputs.push_back(g_.node(sc.slice).outputs[0]);
    c.run_at = f->copies.front().slice;
    c.pattern = f->concat >= 0 ? "CONCAT+TRANSPOSE+SLICE" : "TRANSPOSE+SLICE";
    return c;
  }

  // Groups of free element-wise nodes for Region::kElementwise, in graph order of their first node.
  // `fusable(ni)` is the backend that would run node ni in a loop (Backend::loop_fusable), or null.
  // A node joins the group of a node whose result it reads when both have one backend and one
  // result type, the group has room, and none of its other operands depends on the group through a
  // node outside it (the group stays convex); otherwise it starts a group. Groups of one node are
  // left out.
  template <class F>
  std::vector<Composite> elementwise_groups(F&& fusable) const {
    // A loop kernel holds a block of every member's values at once: the bound keeps that small.
    constexpr size_t kMaxMembers = 48;
    const int nn = static_cast<int>(g_.nodes().size());
    std::vector<int> group_of(static_cast<size_t>(nn), -1);
    std::vector<std::vector<int>> members;
    std::vector<const Backend*> owner;
    std::vector<int> seen(static_cast<size_t>(nn), -1);
    int stamp = 0;
    // Whether some node outside groups `x`, `y` and node `ni` that a node of `readers` reads
    // depends on group `target` (a path that leaves the union and comes back). Only nodes after the
    // target's first member can depend on it.
    auto leaves_and_returns = [&](const std::vector<int>& readers, int target, int x, int y, int ni) {
      auto in_union = [&](int n) {
        const int gi = group_of[static_cast<size_t>(n)];
        return n == ni || (gi >= 0 && (gi == x || gi == y));
      };
      const int first = members[static_cast<size_t>(target)].front();
      ++stamp;
      std::vector<int> stack;
      for (int r : readers)
        for (ValueId v : g_.node(r).inputs) {
          const int p = g_.value(v).producer;
          if (p > first && !in_union(p)) stack.push_back(p);
        }
      while (!stack.empty()) {
        const int n = stack.back();
        stack.pop_back();
        if (seen[static_cast<size_t>(n)] == stamp) continue;
        seen[static_cast<size_t>(n)] = stamp;
        for (ValueId v : g_.node(n).inputs) {
          const int p = g_.value(v).producer;
          if (p < first) continue;
          if (group_of[static_cast<size_t>(p)] == target) return true;
          if (!in_union(p)) stack.push_back(p);
        }
      }
      return false;
    };
    for (int ni = 0; ni < nn; ++ni) {
      if (taken_[static_cast<size_t>(ni)] || g_.node(ni).outputs.size() != 1) continue;
      const Backend* b = fusable(ni);
      if (!b) continue;
      const TensorType& t = g_.value(g_.node(ni).outputs[0]).type;
      // Node ni joins the first group it reads that stays convex with it; further groups it reads
      // merge in when the union stays convex (an LSTM cell's c' = f * c + i * tanh(g) reads two
      // chains that started apart).
      int join = -1;
      for (ValueId v : g_.node(ni).inputs) {
        const int p = g_.value(v).producer;
        const int gi = p < 0 ? -1 : group_of[static_cast<size_t>(p)];
        if (gi < 0 || gi == join || owner[static_cast<size_t>(gi)] != b ||
            g_.value(g_.node(members[static_cast<size_t>(gi)].front()).outputs[0]).type != t)
          continue;
        std::vector<int>& mg = members[static_cast<size_t>(gi)];
        const size_t cap = std::min(kMaxMembers, b->loop_max_steps());
        if (join < 0) {
          if (mg.size() < cap && !leaves_and_returns({ni}, gi, gi, -1, ni)) join = gi;
          continue;
        }
        std::vector<int>& mj = members[static_cast<size_t>(join)];
        if (mj.size() + mg.size() >= cap) continue;
        std::vector<int> with_j = mj, with_g = mg;
        with_j.push_back(ni);
        with_g.push_back(ni);
        if (leaves_and_returns(with_g, join, join, gi, ni) || leaves_and_returns(with_j, gi, join, gi, ni)) continue;
        for (int m : mg) group_of[static_cast<size_t>(m)] = join;
        mj.insert(mj.end(), mg.begin(), mg.end());
        std::sort(mj.begin(), mj.end());
        mg.clear();
      }
      if (join < 0) {
        join = static_cast<int>(members.size());
        members.emplace_back();
        owner.push_back(b);
      }
      members[static_cast<size_t>(join)].push_back(ni);
      group_of[static_cast<size_t>(ni)] = join;
    }
    std::vector<Composite> out;
    for (std::vector<int>& m : members) {
      if (m.size() < 2) continue;
      Composite c;
      c.region = Composite::Region::kElementwise;
      c.anchor = m.front();
      c.region_nodes = m;
      c.nodes = m;
      const int gi = group_of[static_cast<size_t>(m.front())];
      for (int ni : m)
        for (ValueId v : g_.node(ni).inputs) {
          const int p = g_.value(v).producer;
          if ((p < 0 || group_of[static_cast<size_t>(p)] != gi) && std::find(c.inputs.begin(), c.inputs.end(), v) == c.inputs.end())
            c.inputs.push_back(v);
        }
      for (int ni : m) {
        const ValueId o = g_.node(ni).outputs[0];
        bool outside = is_output_[static_cast<size_t>(o)];
        for (int user : consumers_[static_cast<size_t>(o)]) outside |= group_of[static_cast<size_t>(user)] != gi;
        if (outside) c.outputs.push_back(o);
      }
      c.pattern = "ELEMENTWISE[" + std::to_string(m.size()) + " ops]";
      out.push_back(std::move(c));
    }
    return out;
  }

  Composite single(int ni) const {
    Composite c;
    c.anchor = ni;
    c.nodes = {ni};
    c.inputs = g_.node(ni).inputs;
    c.outputs = g_.node(ni).outputs;
    c.pattern = op_name(g_.node(ni).op);
    return c;
  }

 private:
  // RESHAPE/TRANSPOSE/SLICE chain (source side first) feeding operand `v` of `user`, kept only when it
  // contains a TRANSPOSE or SLICE and the whole chain is a strided view of its source.
  std::vector<int> view_chain(ValueId v, int user) const {
    std::vector<int> chain;
    for (;;) {
      int p = private_producer(v, user);
      const Op op = p < 0 ? Op::CONST : g_.node(p).op;
      if (op != Op::TRANSPOSE && op != Op::RESHAPE && op != Op::SLICE) break;
      chain.insert(chain.begin(), p);
      user = p;
      v = g_.node(p).inputs[0];
    }
    // Shortest source-side trim that is expressible (a reshape that needs a copy ends the chain).
    // (A split batch axis, attention's heads of a batch, is offered too: backends that cannot
    // address one decline the composite and run the chain on its own.)
    while (!chain.empty() && !forward_chain(g_, chain, true)) chain.erase(chain.begin());
    // A chain of reshapes alone is a free alias anyway; a TRANSPOSE or SLICE (q/k/v split out of
    // one projection) in it is a copy the strided view saves.
    bool copies = false;
    for (int ni : chain) copies |= g_.node(ni).op == Op::TRANSPOSE || g_.node(ni).op == Op::SLICE;
    if (!copies) chain.clear();
    return chain;
  }

  // RESHAPE/TRANSPOSE chain reading a matmul's result `r` alone, kept when it contains a
  // TRANSPOSE and the matmul can write the chain's result directly (a strided destination: the
  // heads of attention going back to [S, H*dh]).
  std::vector<int> out_chain(ValueId r) const {
    std::vector<int> chain;
    for (;;) {
      int c = sole_consumer(r);
      if (c < 0 || (g_.node(c).op != Op::TRANSPOSE && g_.node(c).op != Op::RESHAPE)) break;
      chain.push_back(c);
      r = g_.node(c).outputs[0];
    }
    while (!chain.empty() && (!backward_chain(g_, chain, true) || g_.node(chain.back()).op == Op::RESHAPE)) chain.pop_back();
    // (Trailing RESHAPEs are trimmed above: they are free aliases of the chain's result.)
    bool has_transpose = false;
    for (int ni : chain) has_transpose |= g_.node(ni).op == Op::TRANSPOSE;
    if (!has_transpose) chain.clear();
    return chain;
  }

  // With `reshape`: the chain may pass one RESHAPE that keeps the last dimension after the first
  // post-op (a 3-D MatMul's bias, then the residual stream's shape: torch 2.x's ViT adds its
  // [S, 1, E] residual to the out-projection's [1, S, E] result); *reshape is that RESHAPE and
  // *reshape_at the number of post-ops before it (left -1 and 0 when none).
  std::vector<PostOp> post_ops(ValueId r, bool allow_bias, int* reshape = nullptr, size_t* reshape_at = nullptr) const {
    std::vector<PostOp> ops;
    TensorType rt = g_.value(r).type;
    bool had_bias = false, had_residual = false;
    for (;;) {
      // swish: r feeds a SIGMOID and a MUL(r, sigmoid(r)), nothing else.
      if (auto pair = two_users(r, Op::SIGMOID, Op::MUL)) {
        auto [s, m] = *pair;
        const ValueId so = g_.node(s).outputs[0];
        if (sole_consumer(so) == m && other(g_.node(m), r) == so) {
          ops.push_back({PostOp::Kind::kSwish, s, m, {}, kNoValue});
          r = g_.node(m).outputs[0];
          continue;
        }
      }
      if (auto gelu = gelu_erf(r)) {
        ops.push_back(*gelu);
        r = g_.node(gelu->more.back()).outputs[0];
        continue;
      }
      if (auto hs = hard_swish(r)) {
        ops.push_back(*hs);
        r = g_.node(hs->more.back()).outputs[0];
        continue;
      }
      if (auto gt = gelu_tanh(r)) {
        ops.push_back(*gt);
        r = g_.node(gt->more.back()).outputs[0];
        continue;
      }
      int c = sole_consumer(r);
      if (c < 0) break;
      const Node& n = g_.node(c);
      if (reshape && *reshape < 0 && !ops.empty() && n.op == Op::RESHAPE && n.inputs[0] == r) {
        const TensorType& to = g_.value(n.outputs[0]).type;
        if (to.rank() < 1 || rt.rank() < 1 || to.shape.back() != rt.shape.back()) break;
        *reshape = c;
        *reshape_at = ops.size();
        rt = to;
        r = n.outputs[0];
        continue;
      }
      if (g_.value(n.outputs[0]).type != rt) break;
      if (n.op == Op::ADD) {
        ValueId other = n.inputs[0] == r ? n.inputs[1] : n.inputs[0];
        if (other == r) break;
        const TensorType& ot = g_.value(other).type;
        if (allow_bias && !had_bias && !had_residual && ops.empty() && is_const(other) && ot.rank() == rt.rank() &&
            ot.shape.back() == rt.shape.back() && shape_elements(ot.shape) == ot.shape.back()) {
          ops.push_back({PostOp::Kind::kBias, c, -1, {}, other});
          had_bias = true;
        } else if (!had_residual && ot == rt) {
          ops.push_back({PostOp::Kind::kResidual, c, -1, {}, other});
          had_residual = true;
        } else if (is_float(rt.dtype) && (scalar(other) || per_column(other, rt))) {
          ops.push_back({PostOp::Kind::kShift, c, -1, {}, other});
        } else if (!had_residual && is_float(rt.dtype) && broadcast_to(ot, rt)) {
          // (One tensor read per element: a mask, or a residual, not both.)
          ops.push_back({PostOp::Kind::kMask, c, -1, {}, other});
          had_residual = true;
        } else {
          break;
        }
      } else if (n.op == Op::MUL) {
        const ValueId o = other(n, r);
        const bool factor = o != kNoValue && o != r && (scalar(o) || per_column(o, rt));
        if (!factor || !zero_shift(n) || !is_float(rt.dtype)) break;
        ops.push_back({PostOp::Kind::kScale, c, -1, {}, o});
      } else if (n.op == Op::CLAMP) {
        ops.push_back({PostOp::Kind::kClamp, c});
      } else if (n.op == Op::SIGMOID) {
        ops.push_back({PostOp::Kind::kSigmoid, c});
      } else if (n.op == Op::TANH) {
        ops.push_back({PostOp::Kind::kTanh, c});
      } else {
        break;
      }
      r = n.outputs[0];
    }
    if (reshape && *reshape >= 0 && *reshape_at == ops.size()) *reshape = -1, *reshape_at = 0;  // nothing after it
    return ops;
  }

  // Whether `t` (of `rt`'s element type and rank) broadcasts to `rt`: every axis equal or 1.
  static bool broadcast_to(const TensorType& t, const TensorType& rt) {
    if (t.dtype != rt.dtype || t.rank() != rt.rank()) return false;
    for (size_t i = 0; i < t.shape.size(); ++i)
      if (t.shape[i] != rt.shape[i] && t.shape[i] != 1) return false;
    return true;
  }
  // A constant of `rt`'s element type holding one value per index of `rt`'s last axis (the output
  // channel), of no higher rank and 1 along every other axis: ConvNeXt's layer scale [1,1,1,C].
  bool per_column(ValueId v, const TensorType& rt) const {
    if (!is_const(v)) return false;
    const TensorType& t = g_.value(v).type;
    return t.dtype == rt.dtype && t.rank() >= 1 && t.rank() <= rt.rank() && rt.rank() >= 1 &&
           t.shape.back() == rt.shape.back() && shape_elements(t.shape) == t.shape.back();
  }
  // Fills c.scale_in when MUL node `m` (read only by the convolution after it) multiplies a tensor of
  // its own type by a float factor per image and channel ([N,1,1,C]; shift 0), in either order.
  void scale_in(int m, Composite& c) const {
    const Node& n = g_.node(m);
    const TensorType& rt = g_.value(n.outputs[0]).type;
    if (!is_float(rt.dtype) || rt.rank() != 4 || !zero_shift(n)) return;
    for (int k = 0; k < 2; ++k) {
      const ValueId x = n.inputs[static_cast<size_t>(k)], s = n.inputs[static_cast<size_t>(1 - k)];
      const TensorType& st = g_.value(s).type;
      if (g_.value(x).type == rt && st.dtype == rt.dtype && st.shape == Shape{rt.shape[0], 1, 1, rt.shape[3]}) {
        c.scale_in = m;
        c.scale_in_source = x;
        c.scale_in_factor = s;
        return;
      }
    }
  }
  // Whether MUL node `n`'s shift operand is absent or a constant 0 (a plain product).
  bool zero_shift(const Node& n) const {
    const std::optional<double> shift = n.inputs.size() > 2 ? scalar(n.inputs[2]) : std::optional<double>(0.0);
    return shift && *shift == 0;
  }
  // A constant holding one value (any shape of one element).
  std::optional<double> scalar(ValueId v) const {
    int p = g_.value(v).producer;
    if (p < 0 || g_.node(p).op != Op::CONST) return std::nullopt;
    const Tensor& t = g_.node(p).attr_tensor("values");
    if (t.num_elements() != 1) return std::nullopt;
    return t.at_double(0);
  }
  // Whether `v` is a one-element constant equal to `want` within its type's rounding (an fp16
  // graph, narrowed or exported so, holds 1/768 or 0.7071 only to 11 bits).
  bool near(ValueId v, double want) const {
    if (v == kNoValue) return false;
    const std::optional<double> x = scalar(v);
    const double tol = g_.value(v).type.dtype == DType::kFp16 ? 1e-3 : 1e-6;
    return x && std::abs(*x - want) <= tol * std::abs(want);
  }
  // The operand of binary node `n` other than `v` (kNoValue when v is not an operand).
  ValueId other(const Node& n, ValueId v) const {
    if (n.inputs[0] == v) return n.inputs[1];
    if (n.inputs[1] == v) return n.inputs[0];
    return kNoValue;
  }
  // When `v` (not a graph output) is read by exactly two free nodes, one of op `a` and one of op
  // `b`: those nodes, in that order.
  std::optional<std::pair<int, int>> two_users(ValueId v, Op a, Op b) const {
    const auto& users = consumers_[static_cast<size_t>(v)];
    if (users.size() != 2 || is_output_[static_cast<size_t>(v)]) return std::nullopt;
    for (int k = 0; k < 2; ++k) {
      const int x = users[static_cast<size_t>(k)], y = users[static_cast<size_t>(1 - k)];
      if (!taken_[static_cast<size_t>(x)] && !taken_[static_cast<size_t>(y)] && g_.node(x).op == a && g_.node(y).op == b)
        return std::make_pair(x, y);
    }
    return std::nullopt;
  }
  int free_user(ValueId v, Op op) const {
    int c = sole_consumer(v);
    return c >= 0 && g_.node(c).op == op ? c : -1;
  }

  std::optional<PostOp> gelu_erf(ValueId x) const {
    const auto& users = consumers_[static_cast<size_t>(x)];
    if (users.size() != 2 || is_output_[static_cast<size_t>(x)]) return std::nullopt;
    for (int k = 0; k < 2; ++k) {
      int m1 = users[static_cast<size_t>(k)], m2 = users[static_cast<size_t>(1 - k)];
      if (taken_[static_cast<size_t>(m1)] || taken_[static_cast<size_t>(m2)]) continue;
      const Node& n1 = g_.node(m1);
      if (n1.op != Op::MUL || !near(other(n1, x), 0.70710678118654752)) continue;
      int erf = free_user(n1.outputs[0], Op::ERF);
      if (erf < 0) continue;
      int add = free_user(g_.node(erf).outputs[0], Op::ADD);
      if (add < 0 || !near(other(g_.node(add), g_.node(erf).outputs[0]), 1.0)) continue;
      if (sole_consumer(g_.node(add).outputs[0]) != m2 || g_.node(m2).op != Op::MUL ||
          other(g_.node(m2), x) != g_.node(add).outputs[0])
        continue;
      int half = free_user(g_.node(m2).outputs[0], Op::MUL);
      if (half < 0 || !near(other(g_.node(half), g_.node(m2).outputs[0]), 0.5)) continue;
      if (g_.value(g_.node(half).outputs[0]).type != g_.value(x).type) continue;
      PostOp p{PostOp::Kind::kGeluErf, m1};
      p.more = {erf, add, m2, half};
      return p;
    }
    return std::nullopt;
  }

  // A binary element-wise operator whose second operand is a constant broadcast along the last
  // dimension (a batch-norm scale or shift, DenseNet's pre-activation BN) followed by post-ops
  // (bias, residual, activations): one pass instead of one per operator. Largest first; the last
  // variant is the operator alone.
  std::vector<Composite> elementwise_chain(int a) const {
    const Node& n = g_.node(a);
    std::vector<Composite> out;
    const TensorType& rt = g_.value(n.outputs[0]).type;
    const ValueId c = n.inputs[1];
    const TensorType& ct = g_.value(c).type;
    const bool per_channel = is_const(c) && rt.rank() >= 2 && ct.rank() == rt.rank() && ct.shape.back() == rt.shape.back() &&
                             shape_elements(ct.shape) == ct.shape.back() && g_.value(n.inputs[0]).type == rt;
    if (per_channel && (rt.dtype == DType::kFp32 || rt.dtype == DType::kFp16)) {
      const std::vector<PostOp> all = post_ops(n.outputs[0], true);
      // A CONCAT along the last axis in front, read by the chain alone (DenseNet's features going
      // into each layer's BN + ReLU): the chain can read its pieces, and the concatenation is
      // never written.
      int cat = private_producer(n.inputs[0], a);
      if (cat >= 0 && (g_.node(cat).op != Op::CONCAT || g_.node(cat).attr_int("axis") != rt.rank() - 1)) cat = -1;
      for (int with_concat = cat >= 0 ? 1 : 0; with_concat >= 0; --with_concat)
        for (size_t k = all.size(); k + with_concat >= 1; --k) {  // without the CONCAT, the operator alone comes last
          Composite v;
          v.anchor = a;
          if (with_concat) v.concat_in = cat;
          v.post_ops.assign(all.begin(), all.begin() + static_cast<long>(k));
          finish(v);
          out.push_back(std::move(v));
        }
    }
    out.push_back(single(a));
    return out;
  }

  // The values of a CONST_SHAPE (empty when `v` is not one).
  std::vector<int64_t> const_shape(ValueId v) const {
    int p = g_.value(v).producer;
    if (p < 0 || g_.node(p).op != Op::CONST_SHAPE) return {};
    return g_.node(p).attr_ints("values");
  }

  // A grouped convolution whose first group's CONV2D is `a` (Region::kGroupedConv), with every
  // prefix of the post-ops after its CONCAT, largest first; empty when `a` is not one.
  std::vector<Composite> grouped_conv(int a) const {
    const Node& c0 = g_.node(a);
    const int s0 = private_producer(c0.inputs[0], a);
    if (s0 < 0 || g_.node(s0).op != Op::SLICE) return {};
    const int cat = sole_consumer(c0.outputs[0]);
    if (cat < 0 || g_.node(cat).op != Op::CONCAT) return {};
    const Node& concat = g_.node(cat);
    const ValueId x = g_.node(s0).inputs[0];
    const TensorType& xt = g_.value(x).type;
    const size_t groups = concat.inputs.size();
    if (xt.rank() != 4 || groups < 2 || concat.attr_int("axis") != 3 || xt.shape[3] % static_cast<int64_t>(groups))
      return {};
    const int64_t cg = xt.shape[3] / static_cast<int64_t>(groups);
    Composite c;
    c.anchor = a;
    c.region = Composite::Region::kGroupedConv;
    c.source = x;
    c.group_concat = cat;
    for (size_t k = 0; k < groups; ++k) {
      const ValueId r = concat.inputs[k];
      const int conv = g_.value(r).producer;
      if (conv < 0 || taken_[static_cast<size_t>(conv)] || g_.node(conv).op != Op::CONV2D || sole_consumer(r) != cat)
        return {};
      const Node& cn = g_.node(conv);
      const int sl = private_producer(cn.inputs[0], conv);
      if (sl < 0 || g_.node(sl).op != Op::SLICE || g_.node(sl).inputs[0] != x) return {};
      const std::vector<int64_t> start = const_shape(g_.node(sl).inputs[1]), size = const_shape(g_.node(sl).inputs[2]);
      const std::vector<int64_t> want_start{0, 0, 0, static_cast<int64_t>(k) * cg};
      const std::vector<int64_t> want_size{xt.shape[0], xt.shape[1], xt.shape[2], cg};
      if (start != want_start || size != want_size) return {};
      // Every group the same convolution but for its weights and bias.
      if (g_.value(cn.outputs[0]).type != g_.value(c0.outputs[0]).type ||
          g_.value(cn.inputs[1]).type != g_.value(c0.inputs[1]).type ||
          g_.value(cn.inputs[2]).type != g_.value(c0.inputs[2]).type || !is_const(cn.inputs[1]) ||
          !is_const(cn.inputs[2]) || cn.attrs.size() != c0.attrs.size())
        return {};
      for (size_t i = 0; i < cn.attrs.size(); ++i)
        if (!same_attr(cn.attrs[i], c0.attrs[i])) return {};
      for (int i = 3; i < 5; ++i)
        if (cn.inputs[static_cast<size_t>(i)] != c0.inputs[static_cast<size_t>(i)] &&
            !(is_const(cn.inputs[static_cast<size_t>(i)]) && scalar(cn.inputs[static_cast<size_t>(i)]) ==
                                                              scalar(c0.inputs[static_cast<size_t>(i)])))
          return {};
      c.group_convs.push_back(conv);
      c.region_nodes.push_back(sl);
      c.region_nodes.push_back(conv);
    }
    if (c.group_convs.front() != a) return {};  // anchored at the first group only
    c.region_nodes.push_back(cat);
    const std::vector<PostOp> all = post_ops(concat.outputs[0], true);
    std::vector<Composite> out;
    for (size_t k = all.size() + 1; k-- > 0;) {
      Composite v = c;
      v.post_ops.assign(all.begin(), all.begin() + static_cast<long>(k));
      finish(v);
      out.push_back(std::move(v));
    }
    return out;
  }

  // GELU's tanh form (PostOp::Kind::kGeluTanh): x read by MUL(x, x) (twice), the cube's MUL, the
  // ADD inside the tanh and the product outside it, nothing else.
  std::optional<PostOp> gelu_tanh(ValueId x) const {
    const auto& users = consumers_[static_cast<size_t>(x)];
    if (users.size() != 5 || is_output_[static_cast<size_t>(x)]) return std::nullopt;
    for (int u : users)
      if (taken_[static_cast<size_t>(u)]) return std::nullopt;
    int sq = -1;
    for (int u : users)
      if (g_.node(u).op == Op::MUL && g_.node(u).inputs[0] == x && g_.node(u).inputs[1] == x) sq = u;
    if (sq < 0) return std::nullopt;
    const int cube = free_user(g_.node(sq).outputs[0], Op::MUL);
    if (cube < 0 || other(g_.node(cube), g_.node(sq).outputs[0]) != x) return std::nullopt;
    const int m1 = free_user(g_.node(cube).outputs[0], Op::MUL);
    if (m1 < 0 || !near(other(g_.node(m1), g_.node(cube).outputs[0]), 0.044715)) return std::nullopt;
    const int in = free_user(g_.node(m1).outputs[0], Op::ADD);
    if (in < 0 || other(g_.node(in), g_.node(m1).outputs[0]) != x) return std::nullopt;
    const int m2 = free_user(g_.node(in).outputs[0], Op::MUL);
    if (m2 < 0 || !near(other(g_.node(m2), g_.node(in).outputs[0]), 0.79788456080286536)) return std::nullopt;
    const int th = free_user(g_.node(m2).outputs[0], Op::TANH);
    if (th < 0) return std::nullopt;
    const int one = free_user(g_.node(th).outputs[0], Op::ADD);
    if (one < 0 || !near(other(g_.node(one), g_.node(th).outputs[0]), 1.0)) return std::nullopt;
    const ValueId a1 = g_.node(one).outputs[0];
    int outer = -1;  // the fifth reader of x
    for (int u : users)
      if (u != sq && u != cube && u != in) outer = u;
    if (outer < 0 || g_.node(outer).op != Op::MUL) return std::nullopt;
    const ValueId ox = other(g_.node(outer), x);
    int fin = -1;
    if (near(ox, 0.5)) {  // MUL(MUL(x, 0.5), 1 + tanh)
      fin = sole_consumer(g_.node(outer).outputs[0]);
      if (fin < 0 || sole_consumer(a1) != fin || g_.node(fin).op != Op::MUL ||
          other(g_.node(fin), g_.node(outer).outputs[0]) != a1)
        return std::nullopt;
    } else if (ox == a1 && sole_consumer(a1) == outer) {  // MUL(MUL(x, 1 + tanh), 0.5)
      fin = free_user(g_.node(outer).outputs[0], Op::MUL);
      if (fin < 0 || !near(other(g_.node(fin), g_.node(outer).outputs[0]), 0.5)) return std::nullopt;
    } else {
      return std::nullopt;
    }
    if (taken_[static_cast<size_t>(fin)] || g_.value(g_.node(fin).outputs[0]).type != g_.value(x).type)
      return std::nullopt;
    PostOp p{PostOp::Kind::kGeluTanh, sq};
    p.more = {cube, m1, in, m2, th, one, outer, fin};
    return p;
  }

  // x * clamp(x * 1/6 + 1/2, 0, 1): x read by MUL(x, 1/6) and by the final MUL, nothing else.
  std::optional<PostOp> hard_swish(ValueId x) const {
    const auto& users = consumers_[static_cast<size_t>(x)];
    if (users.size() != 2 || is_output_[static_cast<size_t>(x)]) return std::nullopt;
    for (int k = 0; k < 2; ++k) {
      const int m1 = users[static_cast<size_t>(k)], m2 = users[static_cast<size_t>(1 - k)];
      if (taken_[static_cast<size_t>(m1)] || taken_[static_cast<size_t>(m2)]) continue;
      const Node& n1 = g_.node(m1);
      if (n1.op != Op::MUL || !near(other(n1, x), 1.0 / 6.0)) continue;
      const int add = free_user(n1.outputs[0], Op::ADD);
      if (add < 0 || !near(other(g_.node(add), n1.outputs[0]), 0.5)) continue;
      const int clamp = free_user(g_.node(add).outputs[0], Op::CLAMP);
      if (clamp < 0) continue;
      const Node& cl = g_.node(clamp);
      if (cl.attr_tensor("min_val").at_double(0) != 0.0 || cl.attr_tensor("max_val").at_double(0) != 1.0) continue;
      if (sole_consumer(cl.outputs[0]) != m2 || g_.node(m2).op != Op::MUL || other(g_.node(m2), x) != cl.outputs[0])
        continue;
      if (g_.value(g_.node(m2).outputs[0]).type != g_.value(x).type) continue;
      PostOp p{PostOp::Kind::kHardSwish, m1};
      p.more = {add, clamp, m2};
      return p;
    }
    return std::nullopt;
  }

  // Softmax anchored at a REDUCE_MAX.
  std::optional<Composite> softmax(int a) const {
    const Node& rm = g_.node(a);
    if (rm.op != Op::REDUCE_MAX) return std::nullopt;
    const ValueId x = rm.inputs[0];
    const int64_t axis = rm.attr_int("axis");
    int sub = free_user(rm.outputs[0], Op::SUB);
    if (sub < 0 || g_.node(sub).inputs[0] != x) return std::nullopt;
    const ValueId d = g_.node(sub).outputs[0];
    // Log-softmax: d = x - m read by the EXP and by the final SUB(d, LOG(sum(e))).
    if (auto ds = two_users(d, Op::EXP, Op::SUB)) {
      const auto [exp, fin] = *ds;
      const int rs = free_user(g_.node(exp).outputs[0], Op::REDUCE_SUM);
      if (rs < 0 || g_.node(rs).attr_int("axis") != axis) return std::nullopt;
      const int lg = free_user(g_.node(rs).outputs[0], Op::LOG);
      if (lg < 0 || sole_consumer(g_.node(lg).outputs[0]) != fin || g_.node(fin).inputs[0] != d ||
          g_.node(fin).inputs[1] != g_.node(lg).outputs[0])
        return std::nullopt;
      return row_region(Composite::Region::kLogSoftmax, axis, x, {a, sub, exp, rs, lg, fin});
    }
    int exp = free_user(d, Op::EXP);
    if (exp < 0) return std::nullopt;
    const ValueId e = g_.node(exp).outputs[0];
    auto pair = two_users(e, Op::REDUCE_SUM, Op::MUL);
    if (!pair || g_.node(pair->first).attr_int("axis") != axis) return std::nullopt;
    const auto [rs, mul] = *pair;
    int rec = free_user(g_.node(rs).outputs[0], Op::RECIPROCAL);
    if (rec < 0 || sole_consumer(g_.node(rec).outputs[0]) != mul || other(g_.node(mul), e) != g_.node(rec).outputs[0])
      return std::nullopt;
    return row_region(Composite::Region::kSoftmax, axis, x, {a, sub, exp, rs, rec, mul});
  }

  // A softmax-like region over `axis` of `x` made of `nodes` (the first is the anchor).
  Composite row_region(Composite::Region region, int64_t axis, ValueId x, std::vector<int> nodes) const {
    Composite c;
    c.anchor = nodes.front();
    c.region = region;
    c.axis = static_cast<int>(axis);
    c.source = x;
    c.region_nodes = std::move(nodes);
    finish(c);
    return c;
  }

  // Layer normalization over the last axis anchored at the REDUCE_SUM of the mean.
  std::optional<Composite> layer_norm(int a) const {
    const Node& s1 = g_.node(a);
    if (s1.op != Op::REDUCE_SUM) return std::nullopt;
    const ValueId x = s1.inputs[0];
    const TensorType& xt = g_.value(x).type;
    const int64_t axis = s1.attr_int("axis");
    if (axis != xt.rank() - 1 || (xt.dtype != DType::kFp32 && xt.dtype != DType::kFp16)) return std::nullopt;
    const double inv_n = 1.0 / static_cast<double>(xt.shape.back());
    int mean = free_user(s1.outputs[0], Op::MUL);
    if (mean < 0 || !near(other(g_.node(mean), s1.outputs[0]), inv_n)) return std::nullopt;
    int sub = free_user(g_.node(mean).outputs[0], Op::SUB);
    if (sub < 0 || g_.node(sub).inputs[0] != x) return std::nullopt;
    const ValueId d = g_.node(sub).outputs[0];
    const auto& users = consumers_[static_cast<size_t>(d)];
    if (users.size() != 3 || is_output_[static_cast<size_t>(d)]) return std::nullopt;  // d*d reads d twice
    int sq = -1, norm = -1;
    for (int u : users) {
      if (taken_[static_cast<size_t>(u)] || g_.node(u).op != Op::MUL) return std::nullopt;
      if (g_.node(u).inputs[0] == d && g_.node(u).inputs[1] == d) sq = u;
      else norm = u;
    }
    if (sq < 0 || norm < 0) return std::nullopt;
    int s2 = free_user(g_.node(sq).outputs[0], Op::REDUCE_SUM);
    if (s2 < 0 || g_.node(s2).attr_int("axis") != axis) return std::nullopt;
    int var = free_user(g_.node(s2).outputs[0], Op::MUL);
    if (var < 0 || !near(other(g_.node(var), g_.node(s2).outputs[0]), inv_n)) return std::nullopt;
    const auto tail = eps_rsqrt(var);
    if (!tail || sole_consumer(g_.node(tail->rsqrt).outputs[0]) != norm ||
        other(g_.node(norm), d) != g_.node(tail->rsqrt).outputs[0])
      return std::nullopt;
    return norm_region(Composite::Region::kLayerNorm, x, *tail, other(g_.node(mean), s1.outputs[0]),
                       {a, mean, sub, sq, s2, var, tail->add, tail->rsqrt, norm});
  }

  // The ADD of a non-negative epsilon and the RSQRT after a norm's variance MUL `var`.
  struct EpsRsqrt {
    int add, rsqrt;
    double eps;
  };
  std::optional<EpsRsqrt> eps_rsqrt(int var) const {
    const int add = free_user(g_.node(var).outputs[0], Op::ADD);
    if (add < 0) return std::nullopt;
    const auto eps = scalar(other(g_.node(add), g_.node(var).outputs[0]));
    if (!eps || *eps < 0) return std::nullopt;
    const int rsqrt = free_user(g_.node(add).outputs[0], Op::RSQRT);
    if (rsqrt < 0) return std::nullopt;
    return EpsRsqrt{add, rsqrt, *eps};
  }

  // A norm region over the last axis of x: `nodes` (the anchor first, the normalizing MUL last), the
  // mean's 1/N constant `inv_n` and the optional affine part after it.
  Composite norm_region(Composite::Region region, ValueId x, const EpsRsqrt& tail, ValueId inv_n, std::vector<int> nodes) const {
    Composite c;
    c.anchor = nodes.front();
    c.region = region;
    c.axis = g_.value(x).type.rank() - 1;
    c.epsilon = tail.eps;
    c.inv_n = scalar(inv_n).value_or(0.0);
    c.source = x;
    c.region_nodes = std::move(nodes);
    affine(c, g_.node(c.region_nodes.back()).outputs[0]);
    finish(c);
    return c;
  }

  // The start of the RMS and L2 norms: a MUL(x, x) (node a, a plain product of x's float type)
  // read only by a REDUCE_SUM over the last axis. x and that REDUCE_SUM.
  std::optional<std::pair<ValueId, int>> sum_of_squares(int a) const {
    const Node& sq = g_.node(a);
    if (sq.op != Op::MUL || sq.inputs.size() < 2 || sq.inputs[0] != sq.inputs[1] || !zero_shift(sq)) return std::nullopt;
    const ValueId x = sq.inputs[0];
    const TensorType& xt = g_.value(x).type;
    if (xt.rank() < 1 || (xt.dtype != DType::kFp32 && xt.dtype != DType::kFp16) || g_.value(sq.outputs[0]).type != xt)
      return std::nullopt;
    const int s = free_user(sq.outputs[0], Op::REDUCE_SUM);
    if (s < 0 || g_.node(s).attr_int("axis") != xt.rank() - 1) return std::nullopt;
    return std::make_pair(x, s);
  }
  // The end of the RMS and L2 norms: the MUL of x by `factor` (its only reader), of x's type.
  int times_x(ValueId factor, ValueId x) const {
    const int norm = free_user(factor, Op::MUL);
    if (norm < 0 || other(g_.node(norm), factor) != x || !zero_shift(g_.node(norm)) ||
        g_.value(g_.node(norm).outputs[0]).type != g_.value(x).type)
      return -1;
    return norm;
  }

  // RMS normalization over the last axis anchored at the MUL(x, x): x * x -> REDUCE_SUM -> MUL 1/N
  // -> ADD eps -> RSQRT -> MUL(x, .) [-> MUL gamma [-> ADD beta]]. x may have other readers (the
  // residual stream around a transformer's norm).
  std::optional<Composite> rms_norm(int a) const {
    const auto head = sum_of_squares(a);
    if (!head) return std::nullopt;
    const auto [x, s] = *head;
    const int var = free_user(g_.node(s).outputs[0], Op::MUL);
    if (var < 0 || !near(other(g_.node(var), g_.node(s).outputs[0]), 1.0 / static_cast<double>(g_.value(x).type.shape.back())) ||
        !zero_shift(g_.node(var)))
      return std::nullopt;
    const auto tail = eps_rsqrt(var);
    if (!tail) return std::nullopt;
    const int norm = times_x(g_.node(tail->rsqrt).outputs[0], x);
    if (norm < 0) return std::nullopt;
    return norm_region(Composite::Region::kRmsNorm, x, *tail, other(g_.node(var), g_.node(s).outputs[0]),
                       {a, s, var, tail->add, tail->rsqrt, norm});
  }

  // L2 normalization over the last axis anchored at the MUL(x, x), as the ONNX import writes
  // F.normalize(x, dim=-1): x * x -> REDUCE_SUM -> POW 0.5 -> CLAMP [eps, +inf] -> RECIPROCAL ->
  // MUL(x, .) [-> MUL gamma [-> ADD beta]] (compiler::canonicalize has dropped the Expand's TILE
  // before the RECIPROCAL). The CLAMP propagates NaN; eps is its lower bound (>= 0).
  std::optional<Composite> l2_norm(int a) const {
    const auto head = sum_of_squares(a);
    if (!head) return std::nullopt;
    const auto [x, s] = *head;
    const ValueId sum = g_.node(s).outputs[0];
    const int pw = free_user(sum, Op::POW);
    if (pw < 0 || g_.node(pw).inputs[0] != sum || scalar(g_.node(pw).inputs[1]) != 0.5 ||
        g_.value(g_.node(pw).outputs[0]).type != g_.value(sum).type)
      return std::nullopt;
    const int cl = free_user(g_.node(pw).outputs[0], Op::CLAMP);
    if (cl < 0) return std::nullopt;
    const Node& clamp = g_.node(cl);
    const double lo = clamp.attr_tensor("min_val").at_double(0), hi = clamp.attr_tensor("max_val").at_double(0);
    if (!(lo >= 0) || !std::isinf(hi) || hi < 0 || clamp.attr_int("nan_mode") != static_cast<int64_t>(NanMode::kPropagate))
      return std::nullopt;
    const int rc = free_user(clamp.outputs[0], Op::RECIPROCAL);
    if (rc < 0) return std::nullopt;
    const int norm = times_x(g_.node(rc).outputs[0], x);
    if (norm < 0) return std::nullopt;
    Composite c;
    c.anchor = a;
    c.region = Composite::Region::kL2Norm;
    c.axis = g_.value(x).type.rank() - 1;
    c.epsilon = lo;
    c.source = x;
    c.region_nodes = {a, s, pw, cl, rc, norm};
    affine(c, g_.node(norm).outputs[0]);
    finish(c);
    return c;
  }

  // A norm region's optional affine part after its normalized value r: MUL by a constant gamma
  // [1,..,1,N], then ADD of a constant beta (into c.gamma, c.beta and c.region_nodes).
  void affine(Composite& c, ValueId r) const {
    const TensorType& xt = g_.value(c.source).type;
    auto per_channel = [&](ValueId v) {
      const TensorType& t = g_.value(v).type;
      return is_const(v) && t.rank() == xt.rank() && t.shape.back() == xt.shape.back() &&
             shape_elements(t.shape) == t.shape.back();
    };
    int gm = free_user(r, Op::MUL);
    if (gm >= 0 && per_channel(other(g_.node(gm), r))) {
      c.gamma = other(g_.node(gm), r);
      c.region_nodes.push_back(gm);
      r = g_.node(gm).outputs[0];
      int bt = free_user(r, Op::ADD);
      if (bt >= 0 && per_channel(other(g_.node(bt), r))) {
        c.beta = other(g_.node(bt), r);
        c.region_nodes.push_back(bt);
      }
    }
  }

  // Fills nodes, inputs, outputs and pattern from the roles.
  void finish(Composite& c) const {
    std::set<int> members;
    std::string pattern;
    auto add = [&](int ni) {
      if (ni >= 0) members.insert(ni);
    };
    add(c.pad);
    add(c.scale_in);
    add(c.concat_in);
    for (int ni : c.a_view) add(ni);
    for (int ni : c.b_view) add(ni);
    for (int ni : c.out_view) add(ni);
    add(c.post_reshape);
    add(c.anchor);
    for (int ni : c.region_nodes) add(ni);
    for (const PostOp& p : c.post_ops) {
      add(p.node);
      add(p.mul);
      for (int ni : p.more) add(ni);
    }
    c.nodes.assign(members.begin(), members.end());
    std::set<ValueId> produced;
    for (int ni : c.nodes)
      for (ValueId o : g_.node(ni).outputs) produced.insert(o);
    for (int ni : c.nodes)
      for (ValueId v : g_.node(ni).inputs)
        if (!produced.count(v) && std::find(c.inputs.begin(), c.inputs.end(), v) == c.inputs.end()) c.inputs.push_back(v);
    c.outputs = {g_.node(c.last()).outputs[0]};
    if (c.region == Composite::Region::kSoftmax) {
      c.pattern = "SOFTMAX";
      return;
    }
    if (c.region == Composite::Region::kLogSoftmax) {
      c.pattern = "LOG_SOFTMAX";
      return;
    }
    if (c.region == Composite::Region::kLayerNorm) {
      c.pattern = "LAYER_NORM";
      return;
    }
    if (c.region == Composite::Region::kRmsNorm) {
      c.pattern = "RMS_NORM";
      return;
    }
    if (c.region == Composite::Region::kL2Norm) {
      c.pattern = "L2_NORM";
      return;
    }
    if (c.pad >= 0) pattern = std::string(op_name(g_.node(c.pad).op)) + "+";
    if (c.scale_in >= 0) pattern = "MUL+";
    if (c.concat_in >= 0) pattern = "CONCAT+";
    if (!c.a_view.empty() || !c.b_view.empty()) pattern += "TRANSPOSE+";
    if (!c.out_view.empty()) {
      c.pattern = pattern + std::string(op_name(g_.node(c.anchor).op)) + "+TRANSPOSE";
      return;
    }
    if (c.region == Composite::Region::kGroupedConv) pattern += "GROUPED_";
    pattern += op_name(g_.node(c.anchor).op);
    for (const PostOp& p : c.post_ops) {
      if (c.post_reshape >= 0 && &p == &c.post_ops[c.post_reshape_at]) pattern += "+RESHAPE";
      switch (p.kind) {
        case PostOp::Kind::kBias: pattern += "+BIAS"; break;
        case PostOp::Kind::kResidual: pattern += "+ADD"; break;
        case PostOp::Kind::kClamp: pattern += "+CLAMP"; break;
        case PostOp::Kind::kSigmoid: pattern += "+SIGMOID"; break;
        case PostOp::Kind::kTanh: pattern += "+TANH"; break;
        case PostOp::Kind::kSwish: pattern += "+SWISH"; break;
        case PostOp::Kind::kGeluErf: pattern += "+GELU"; break;
        case PostOp::Kind::kHardSwish: pattern += "+HARDSWISH"; break;
        case PostOp::Kind::kGeluTanh: pattern += "+GELU_TANH"; break;
        case PostOp::Kind::kScale: pattern += "+SCALE"; break;
        case PostOp::Kind::kShift: pattern += "+SHIFT"; break;
        case PostOp::Kind::kMask: pattern += "+MASK"; break;
      }
    }
    c.pattern = pattern;
  }

  const Graph& g_;
  const std::vector<bool>& taken_;
  std::vector<std::vector<int>> consumers_;
  std::vector<bool> is_output_;
};

// A CONST or CONST_SHAPE on its own: it reads nothing, so it may run anywhere before its readers.
bool is_constant_unit(const Graph& g, const Composite& c) {
  const Op op = g.node(c.anchor).op;
  return c.single() && (op == Op::CONST || op == Op::CONST_SHAPE);
}

// Composite anchors: the window and matmul operators, and the first node of the regions.
bool is_anchor(Op op) {
  return backend::is_fusion_anchor(op) || op == Op::REDUCE_MAX /* softmax */ || op == Op::REDUCE_SUM /* layer norm */ ||
         op == Op::MUL || op == Op::ADD || op == Op::SUB /* element-wise chains */;
}

}  // namespace

namespace {

// Backends that take whole regions get every run of consecutive units merged into one. Units
// consecutive in a topological order form a convex set (a path between two of them only passes
// through units between them), so the merged region can run as one step. Constants (no inputs)
// move to the front first, so that they do not cut runs.
void merge_regions(const Graph& g, Partition& p) {
  bool any = false;
  for (const Backend* b : p.priority) any |= b->grouping() == Backend::Grouping::kRegions;
  if (!any) return;
  std::stable_partition(p.units.begin(), p.units.end(), [&](const Unit& u) {
    return u.composite.single() && g.node(u.composite.anchor).inputs.empty();
  });
  std::vector<bool> is_output(g.values().size(), false);
  for (ValueId v : g.outputs()) is_output[static_cast<size_t>(v)] = true;
  std::vector<Unit> merged;
  std::vector<size_t> merged_units;  // units per entry of merged
  for (Unit& u : p.units) {
    const bool region = u.backend->grouping() == Backend::Grouping::kRegions;
    if (!region || merged.empty() || merged.back().backend != u.backend) {
      Composite member = u.composite;
      merged.push_back(std::move(u));
      merged_units.push_back(1);
      if (region) {
        merged.back().composite.members.push_back(std::move(member));
        merged.back().composite.region = Composite::Region::kSubgraph;
      }
      continue;
    }
    ++merged_units.back();
    Unit& r = merged.back();
    r.composite.members.push_back(u.composite);
    r.composite.nodes.insert(r.composite.nodes.end(), u.composite.nodes.begin(), u.composite.nodes.end());
    for (std::string& d : u.declined)
      if (std::find(r.declined.begin(), r.declined.end(), d) == r.declined.end()) r.declined.push_back(std::move(d));
  }
  // Inputs, outputs and pattern of each region from its nodes.
  for (size_t ui = 0; ui < merged.size(); ++ui) {
    Composite& c = merged[ui].composite;
    if (c.region != Composite::Region::kSubgraph) continue;
    if (merged_units[ui] == 1) {
      // A run of one unit stays that unit (an operator, or a fused group such as CONV2D+CLAMP).
      Composite only = std::move(c.members.front());
      c = std::move(only);
      continue;
    }
    std::sort(c.nodes.begin(), c.nodes.end());
    std::vector<bool> member(g.nodes().size(), false);
    for (int ni : c.nodes) member[static_cast<size_t>(ni)] = true;
    c.inputs.clear();
    c.outputs.clear();
    for (int ni : c.nodes)
      for (ValueId v : g.node(ni).inputs) {
        const int prod = g.value(v).producer;
        if ((prod < 0 || !member[static_cast<size_t>(prod)]) && std::find(c.inputs.begin(), c.inputs.end(), v) == c.inputs.end())
          c.inputs.push_back(v);
      }
    std::vector<bool> read_outside(g.values().size(), false);
    for (int ni = 0; ni < static_cast<int>(g.nodes().size()); ++ni)
      if (!member[static_cast<size_t>(ni)])
        for (ValueId v : g.node(ni).inputs) read_outside[static_cast<size_t>(v)] = true;
    for (int ni : c.nodes)
      for (ValueId o : g.node(ni).outputs)
        if (read_outside[static_cast<size_t>(o)] || is_output[static_cast<size_t>(o)]) c.outputs.push_back(o);
    c.anchor = c.nodes.front();
    c.pattern = "REGION[" + std::to_string(c.nodes.size()) + " nodes]";
  }
  p.units = std::move(merged);
}

}  // namespace

Partition partition_graph(const Module& m, const Graph& g, const std::vector<const Backend*>& priority,
                          const PartitionOptions& options) {
  if (priority.empty()) throw Error(ErrorCode::kInvalidArgument, "no backends to partition for");
  Partition p;
  p.priority = priority;
  const size_t nn = g.nodes().size();
  std::vector<bool> taken(nn, false);
  std::map<int, std::vector<std::string>> anchor_declines;
  Matcher matcher(g, taken);
  auto ask = [&](const Backend* b, const Composite& c) {
    if (options.default_priority && !b->takes_by_default(g, c)) return backend::Support::no("");
    backend::Support s = b->supports(m, g, c);
    if (s.ok && options.nan_exact) {
      backend::Support n = b->nan_exact(g, c);
      if (!n.ok) return backend::Support::no(n.reason + " (exact NaN semantics were asked for)");
    }
    return s;
  };

  auto assign = [&](Composite c, const Backend* b, std::vector<std::string> declined) {
    for (int ni : c.nodes) taken[static_cast<size_t>(ni)] = true;
    p.units.push_back({std::move(c), b, std::move(declined)});
  };

  // Pass 1: composites around anchors, in graph order. Each backend in priority order takes the
  // largest variant it supports; a backend that only runs single nodes leaves the anchor to pass 2.
  for (int a = 0; a < static_cast<int>(nn); ++a) {
    if (taken[static_cast<size_t>(a)] || !is_anchor(g.node(a).op)) continue;
    std::vector<Composite> variants = matcher.variants(a);
    std::vector<std::string> declined;
    for (const Backend* b : priority) {
      const Composite* chosen = nullptr;
      std::string first_reason;
      for (const Composite& c : variants) {
        backend::Support s = ask(b, c);
        if (s.ok) {
          chosen = &c;
          break;
        }
        if (first_reason.empty()) first_reason = s.reason;
      }
      if (chosen && chosen->single()) break;  // pass 2 places it (same backend, same answer)
      if (chosen) {
        assign(*chosen, b, declined);
        break;
      }
      // An empty reason: not the backend's kind of operator at all, nothing to explain.
      if (!first_reason.empty()) declined.push_back(std::string(b->name()) + ": " + first_reason);
    }
    if (!taken[static_cast<size_t>(a)]) anchor_declines[a] = declined;
  }

  // Where each node would run on its own, asked once (pass 1b groups by it, pass 2 places by it).
  struct SingleChoice {
    bool asked = false;
    const Backend* backend = nullptr;  // null: no backend runs it
    std::vector<std::string> declined;
  };
  std::vector<SingleChoice> singles(nn);
  auto single_choice = [&](int ni) -> const SingleChoice& {
    SingleChoice& sc = singles[static_cast<size_t>(ni)];
    if (sc.asked) return sc;
    sc.asked = true;
    const Composite c = matcher.single(ni);
    if (auto it = anchor_declines.find(ni); it != anchor_declines.end()) sc.declined = it->second;
    for (const Backend* b : priority) {
      backend::Support s = ask(b, c);
      if (s.ok) {
        sc.backend = b;
        break;
      }
      const std::string prefix = std::string(b->name()) + ": ";
      bool listed = false;
      for (const std::string& d : sc.declined) listed |= d.rfind(prefix, 0) == 0;
      if (!listed && !s.reason.empty()) sc.declined.push_back(prefix + s.reason);
    }
    return sc;
  };

  // Pass 1b: element-wise groups (Region::kElementwise) among the nodes left.
  // A node goes to the first backend in priority order that can run it in a loop, when that
  // backend comes no later than the one that would run it alone (a RECIPROCAL that oneDNN has no
  // primitive for joins its loop rather than run alone on the reference backend; nothing is taken
  // from a backend preferred to the loop's).
  auto loop_backend = [&](int ni) -> const Backend* {
    const Backend* alone = single_choice(ni).backend;
    for (const Backend* b : priority) {
      if (b->loop_fusable(g, ni)) {
        // A backend the default priority keeps groups off (Vulkan on a CPU device) is passed by.
        if (!options.default_priority) return b;
        Composite group = matcher.single(ni);
        group.region = Composite::Region::kElementwise;
        if (b->takes_by_default(g, group)) return b;
      }
      if (b == alone) break;
    }
    return nullptr;
  };
  // What the backends other than `b` said of a group's members on their own (kept with the group).
  auto members_declined = [&](const Composite& c, const Backend* b) {
    std::vector<std::string> declined;
    const std::string own = std::string(b->name()) + ": ";
    for (int ni : c.nodes)
      for (const std::string& d : single_choice(ni).declined)
        if (d.rfind(own, 0) != 0 && std::find(declined.begin(), declined.end(), d) == declined.end()) declined.push_back(d);
    return declined;
  };
  for (Composite& c : matcher.elementwise_groups(loop_backend)) {
    const Backend* b = loop_backend(c.anchor);  // every member's
    if (!ask(b, c).ok) continue;
    std::vector<std::string> declined = members_declined(c, b);
    assign(std::move(c), b, std::move(declined));
  }

  // Pass 1c: a TRANSPOSE read only by SLICEs (Region::kSliceCopies), on the first backend in
  // priority order that takes the group, when that backend comes no later than the ones that
  // would run its members alone. After pass 1, so that a matmul's strided operand views keep
  // their TRANSPOSEs.
  auto rank = [&](const Backend* b) {
    return b ? static_cast<size_t>(std::find(priority.begin(), priority.end(), b) - priority.begin()) : priority.size();
  };
  for (int t = 0; t < static_cast<int>(nn); ++t) {
    if (taken[static_cast<size_t>(t)] || g.node(t).op != Op::TRANSPOSE) continue;
    std::optional<Composite> c = matcher.slice_copies(t);
    if (!c) continue;
    size_t latest = priority.size();
    for (int ni : c->nodes)
      if (!is_view_or_const(g.node(ni).op)) latest = std::min(latest, rank(single_choice(ni).backend));
    for (size_t bi = 0; bi < priority.size() && bi <= latest; ++bi) {
      if (!ask(priority[bi], *c).ok) continue;
      std::vector<std::string> declined = members_declined(*c, priority[bi]);
      assign(std::move(*c), priority[bi], std::move(declined));
      break;
    }
  }

  // Pass 2: every other node on its own.
  auto assign_single = [&](int ni) {
    const SingleChoice& sc = single_choice(ni);
    if (!sc.backend) {
      std::vector<std::string> declined = sc.declined;
      // Backends this machine lacks may be the ones that would have run it: say why they are missing.
      for (const Backend* b : backend::all_backends()) {
        if (std::find(priority.begin(), priority.end(), b) != priority.end()) continue;
        const std::string why = b->unavailable_reason();
        if (!why.empty()) declined.push_back(std::string(b->name()) + " (unavailable on this machine): " + why);
      }
      throw Error(ErrorCode::kUnsupported,
                  "no backend runs " + std::string(op_name(g.node(ni).op)) + ": " +
                      (declined.empty() ? std::string("(none listed)") : join_reasons(declined)),
                  {.graph = g.name(), .node = g.node_label(ni)});
    }
    assign(matcher.single(ni), sc.backend, sc.declined);
  };
  for (int ni = 0; ni < static_cast<int>(nn); ++ni)
    if (!taken[static_cast<size_t>(ni)]) assign_single(ni);

  // Units run at their position (Composite::position: the last node's, or an earlier one). A group
  // is a valid unit when everything it reads comes from units that run before it and everything
  // reading its results from units that run after it (this also keeps it convex); one that is not
  // runs as its members alone, which can in turn move other groups' neighbours, hence the loop.
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<int> unit_of(nn, -1);
    for (size_t u = 0; u < p.units.size(); ++u)
      for (int ni : p.units[u].composite.nodes) unit_of[static_cast<size_t>(ni)] = static_cast<int>(u);
    for (size_t u = 0; u < p.units.size() && !changed; ++u) {
      const Composite& c = p.units[u].composite;
      if (c.region != Composite::Region::kElementwise && c.region != Composite::Region::kSliceCopies) continue;
      const int at = c.position();
      bool ok = true;
      for (ValueId v : c.inputs) {
        const int prod = g.value(v).producer;
        if (prod < 0) continue;
        Composite& pc = p.units[static_cast<size_t>(unit_of[static_cast<size_t>(prod)])].composite;
        if (pc.position() < at) continue;
        // A constant (a CONST_SHAPE of a SLICE's start after a unit's run_at) runs wherever it is
        // needed: it moves forward to run just before this unit.
        if (is_constant_unit(g, pc)) pc.run_at = at;
        else ok = false;
      }
      for (int ni : c.nodes)
        for (ValueId o : g.node(ni).outputs)
          for (int user : matcher.consumers(o))
            if (unit_of[static_cast<size_t>(user)] != static_cast<int>(u) &&
                p.units[static_cast<size_t>(unit_of[static_cast<size_t>(user)])].composite.position() <= at)
              ok = false;
      if (ok) continue;
      const std::vector<int> members = c.nodes;
      p.units.erase(p.units.begin() + static_cast<long>(u));
      for (int ni : members) assign_single(ni);
      changed = true;
    }
  }

  std::stable_sort(p.units.begin(), p.units.end(), [&](const Unit& x, const Unit& y) {
    if (x.composite.position() != y.composite.position()) return x.composite.position() < y.composite.position();
    return is_constant_unit(g, x.composite) && !is_constant_unit(g, y.composite);
  });
  merge_regions(g, p);
  p.unit_of_node.assign(nn, -1);
  for (size_t u = 0; u < p.units.size(); ++u)
    for (int ni : p.units[u].composite.nodes) p.unit_of_node[static_cast<size_t>(ni)] = static_cast<int>(u);
  return p;
}

bool is_view_or_const(Op op) {
  return op == Op::CONST || op == Op::CONST_SHAPE || op == Op::IDENTITY || op == Op::RESHAPE;
}

std::string explain(const Graph& g, const Partition& p) {
  std::string out = "partition of graph '" + g.name() + "' (backends in priority order:";
  for (const Backend* b : p.priority) out += " " + std::string(b->name());
  out += ")\n";
  // Summary per backend: units, nodes and patterns.
  for (const Backend* b : p.priority) {
    int units = 0, nodes = 0, views = 0;
    std::map<std::string, int> patterns, members;
    for (const Unit& u : p.units) {
      if (u.backend != b) continue;
      if (u.composite.single() && is_view_or_const(g.node(u.composite.anchor).op)) {
        ++views;
        continue;
      }
      ++units;
      nodes += static_cast<int>(u.composite.nodes.size());
      ++patterns[u.composite.pattern];
      // A region's members: the fused groups and operators it is made of (views left out).
      for (const Composite& m : u.composite.members)
        if (!(m.single() && is_view_or_const(g.node(m.anchor).op))) ++members[m.pattern];
    }
    out += "  " + std::string(b->name()) + ": " + std::to_string(units) + " kernels covering " + std::to_string(nodes) +
           " nodes";
    if (views) out += ", " + std::to_string(views) + " constants and views (no computation)";
    out += "\n";
    std::vector<std::pair<int, std::string>> sorted;
    for (const auto& [pat, cnt] : patterns) sorted.push_back({-cnt, pat});
    std::sort(sorted.begin(), sorted.end());
    for (const auto& [neg, pat] : sorted) out += "      " + std::to_string(-neg) + " x " + pat + "\n";
    if (!members.empty()) {
      std::vector<std::pair<int, std::string>> msorted;
      for (const auto& [pat, cnt] : members) msorted.push_back({-cnt, pat});
      std::sort(msorted.begin(), msorted.end());
      out += "      regions made of:";
      for (size_t i = 0; i < msorted.size(); ++i)
        out += (i ? ", " : " ") + std::to_string(-msorted[i].first) + " x " + msorted[i].second;
      out += "\n";
    }
  }
  out += "units in execution order:\n";
  for (size_t i = 0; i < p.units.size(); ++i) {
    const Unit& u = p.units[i];
    const Composite& c = u.composite;
    if (c.single() && is_view_or_const(g.node(c.anchor).op)) continue;
    out += "  #" + std::to_string(i) + " " + std::string(u.backend->name()) + " " + c.pattern + ": ";
    for (size_t k = 0; k < c.nodes.size(); ++k) out += (k ? ", " : "") + g.node_label(c.nodes[k]);
    out += "\n";
    for (const std::string& why : u.declined) out += "      not on " + why + "\n";
    // A custom shader whose dispatch Weft decided from its payload: say how (docs/custom-ops.md).
    const Node& anchor = g.node(c.anchor);
    if (anchor.op == Op::CUSTOM) {
      try {
        custom::Payload pl = custom::parse_payload(anchor.attr_str("implementation_attrs"));
        if (pl.dispatch && pl.dispatch_rule)
          out += "      dispatch [" + std::to_string((*pl.dispatch)[0]) + "," + std::to_string((*pl.dispatch)[1]) + "," +
                 std::to_string((*pl.dispatch)[2]) + "]: " + *pl.dispatch_rule + "\n";
      } catch (const Error&) {
        // not a shader payload (a CPU kernel's attributes): nothing to say
      }
    }
  }
  return out;
}

}  // namespace weft::compiler
