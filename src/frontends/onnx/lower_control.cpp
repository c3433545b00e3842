// Control flow: If, Loop and Scan.
//
// ONNX sub-graphs read the values of their enclosing scopes by name; TOSA's COND_IF and WHILE_LOOP
// graphs see only their inputs. Where the import can decide the control flow, the sub-graph's nodes
// are lowered into the enclosing graph (Importer::inline_graph) and fold with everything else:
//  * If with a condition known at import time: the taken branch, inlined;
//  * Loop with a known trip count and condition: unrolled, scan outputs stacked along a new axis 0;
//  * Scan (opset 8 and 9+): unrolled over its static sequence length.
// Otherwise If becomes a COND_IF and Loop (without scan outputs, whose length would be known only
// at run time) a WHILE_LOOP: the outer values a sub-graph reads at run time become explicit inputs
// of its TOSA graph (Importer::build_graph), constants stay constants inside it.
#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "frontends/onnx/importer.h"
#include "frontends/onnx/lower.h"

namespace weft::onnxfe {
namespace {

// TOSA's tensor lists (COND_IF's and WHILE_LOOP's inputs, CONCAT's) hold at most this many tensors
// (MAX_TENSOR_LIST_SIZE, level 8K).
constexpr size_t kMaxTensorList = 64;

std::string base_name(const onnx::NodeProto& n) {
  return n.name().empty() ? (n.output_size() ? n.output(0) : std::string("node")) : n.name();
}

// The one boolean of a condition: its value when known at import time.
std::optional<bool> const_bool(const OVal& v) {
  if (!v.v.is_const()) return std::nullopt;
  return v.v.c->at_int(0) != 0;
}

void check_condition(Importer& imp, const OVal& v, const std::string& what) {
  if (v.v.dtype() != DType::kBool)
    imp.fail(what + " must be bool, got " + std::string(onnx_type_name(v.onnx_type)), ErrorCode::kInvalidArgument);
  if (shape_elements(v.shape) != 1)
    imp.fail(what + " must hold one value, it has shape " + shape_str(v.shape), ErrorCode::kInvalidArgument);
}

OVal int64_scalar(Importer& imp, int64_t x) {
  OVal o;
  o.onnx_type = kOInt64;
  const std::vector<int64_t> v{std::clamp<int64_t>(x, INT32_MIN, INT32_MAX)};
  o.v = imp.const_tensor(Tensor::from_ints({DType::kInt32, {}}, v));
  o.ints = std::make_shared<const std::vector<int64_t>>(std::vector<int64_t>{x});
  return o;
}

OVal bool_scalar(Importer& imp, bool b) {
  OVal o;
  o.onnx_type = kOBool;
  const std::vector<int64_t> v{b ? 1 : 0};
  o.v = imp.const_tensor(Tensor::from_ints({DType::kBool, {}}, v));
  return o;
}

// An ONNX value in ONNX's layout.
OVal plain_oval(const TVal& v, int onnx_type) {
  OVal o;
  o.v = v;
  o.shape = v.shape();
  o.onnx_type = onnx_type;
  return o;
}

// `parts` (of one type) stacked along a new dimension `axis`: CONCATs of at most kMaxTensorList.
TVal stack(Importer& imp, std::vector<TVal> parts, int64_t axis) {
  for (TVal& p : parts) {
    Shape s = p.shape();
    s.insert(s.begin() + axis, 1);
    p = imp.reshape(p, s);
  }
  while (parts.size() > 1) {
    std::vector<TVal> next;
    for (size_t i = 0; i < parts.size(); i += kMaxTensorList) {
      std::vector<TVal> chunk(parts.begin() + static_cast<std::ptrdiff_t>(i),
                              parts.begin() + static_cast<std::ptrdiff_t>(std::min(i + kMaxTensorList, parts.size())));
      next.push_back(chunk.size() == 1 ? chunk[0] : imp.emit(Op::CONCAT, chunk, {{"axis", axis}}));
    }
    parts = std::move(next);
  }
  return parts.at(0);
}

// The values of enclosing scopes that sub-graphs read: those computed at run time become inputs of
// the TOSA graphs built for them; constants stay constants.
struct Captures {
  std::vector<std::string> names;  // computed at run time, in order of first use
  std::vector<TVal> values;        // their values in the enclosing graph
  std::vector<std::string> consts;
};

Captures capture(Importer& imp, const std::vector<const onnx::GraphProto*>& bodies) {
  Captures c;
  std::set<std::string> seen;
  for (const onnx::GraphProto* b : bodies)
    for (const std::string& name : Importer::outer_names(*b)) {
      if (!seen.insert(name).second) continue;
      const OVal* o = imp.find_value(name);
      if (!o) continue;  // lower_node names it when a node reads it
      if (o->v.is_const()) {
        c.consts.push_back(name);
      } else {
        c.names.push_back(name);
        c.values.push_back(o->v);
      }
    }
  return c;
}

// Inside a TOSA sub-graph: the captured run-time values read its inputs `ins` from `first` on;
// constants are rebound without the layouts cached for the enclosing graph.
void bind_captures(Importer& imp, Importer::Scope& scope, const Captures& c, const std::vector<TVal>& ins, size_t first) {
  for (size_t k = 0; k < c.names.size(); ++k) {
    const OVal outer = *imp.find_value(c.names[k]);
    OVal o;
    o.v = ins.at(first + k);
    o.perm = outer.perm;
    o.shape = outer.shape;
    o.onnx_type = outer.onnx_type;
    scope.bind(c.names[k], std::move(o));
  }
  for (const std::string& name : c.consts) {
    OVal o = *imp.find_value(name);
    o.plain_cache.reset();
    o.layout_cache.reset();
    scope.bind(name, std::move(o));
  }
}

void check_list_size(Importer& imp, size_t n, const std::string& what) {
  if (n > kMaxTensorList)
    imp.fail(what + " " + std::to_string(n) + " tensors; TOSA's tensor lists hold at most " +
             std::to_string(kMaxTensorList) + " (MAX_TENSOR_LIST_SIZE, level 8K)");
}

}  // namespace

// ---- If -------------------------------------------------------------------------------------------

void lower_If(Importer& imp, const onnx::NodeProto& node) {
  const onnx::GraphProto& then_g = imp.attr_graph("then_branch");
  const onnx::GraphProto& else_g = imp.attr_graph("else_branch");
  const OVal& c = imp.in(0);
  check_condition(imp, c, "the condition (input 0)");
  for (const auto& [g, what] : {std::pair<const onnx::GraphProto*, const char*>{&then_g, "then_branch"},
                                std::pair<const onnx::GraphProto*, const char*>{&else_g, "else_branch"}})
    if (g->output_size() != node.output_size())
      imp.fail(std::string(what) + " returns " + std::to_string(g->output_size()) + " values; the If node has " +
                   std::to_string(node.output_size()) + " outputs (ONNX requires one per output)",
               ErrorCode::kInvalidArgument);

  if (const std::optional<bool> taken = const_bool(c)) {
    // Known at import time: the taken branch's nodes join the enclosing graph.
    const std::vector<OVal> outs = imp.inline_graph(*taken ? then_g : else_g, {}, *taken ? "then_branch" : "else_branch");
    for (int k = 0; k < node.output_size(); ++k) imp.alias_out(k, outs[static_cast<size_t>(k)]);
    return;
  }

  const Captures cap = capture(imp, {&then_g, &else_g});
  check_list_size(imp, cap.values.size(), "the branches read values computed at run time from the enclosing graph:");
  check_list_size(imp, static_cast<size_t>(node.output_size()), "the If node has");
  std::vector<TensorType> in_types;
  for (const TVal& v : cap.values) in_types.push_back(v.type);
  std::vector<int> onnx_types[2];
  std::vector<TensorType> out_types[2];
  std::string names[2];
  const onnx::GraphProto* branches[2] = {&then_g, &else_g};
  const char* whats[2] = {"then_branch", "else_branch"};
  for (int b = 0; b < 2; ++b) {
    names[b] = imp.build_graph(
        base_name(node) + (b == 0 ? "_then" : "_else"), in_types, cap.names,
        [&](const std::vector<TVal>& ins) {
          Importer::Scope scope(imp);
          bind_captures(imp, scope, cap, ins, 0);
          std::vector<OVal> outs = imp.inline_graph(*branches[b], {}, whats[b]);
          std::vector<TVal> r;
          for (OVal& o : outs) {
            r.push_back(imp.plain(o));
            onnx_types[b].push_back(o.onnx_type);
          }
          return r;
        },
        &out_types[b]);
  }
  // TOSA: both graphs give outputs of the node's types.
  for (size_t k = 0; k < out_types[0].size(); ++k) {
    const TensorType& a = out_types[0][k];
    const TensorType& e = out_types[1][k];
    if (a == e) continue;
    const std::string name = node.output(static_cast<int>(k)).empty() ? "" : " '" + node.output(static_cast<int>(k)) + "'";
    imp.fail("output " + std::to_string(k) + name + " is " + a.str() + " from then_branch but " + e.str() +
                 " from else_branch; " +
                 (a.dtype != e.dtype ? std::string("ONNX requires both branches to give the same element type")
                                     : std::string("a condition known only at run time becomes a TOSA COND_IF, whose "
                                                   "branches must give outputs of the same types (shapes included); "
                                                   "make the shapes agree, or bind the condition at compile time "
                                                   "(--bind) so that one branch is taken")),
             a.dtype != e.dtype ? ErrorCode::kInvalidArgument : ErrorCode::kUnsupported);
  }
  std::vector<TVal> inputs{imp.plain(c)};
  inputs.insert(inputs.end(), cap.values.begin(), cap.values.end());
  const std::vector<TVal> outs = imp.emit_typed(
      Op::COND_IF, inputs, {{"then_graph", names[0]}, {"else_graph", names[1]}}, out_types[0]);
  for (size_t k = 0; k < outs.size(); ++k) {
    const int t0 = onnx_types[0][k], t1 = onnx_types[1][k];
    imp.set_out(static_cast<int>(k), outs[k], {}, t0 == kOInt64 || t1 == kOInt64 ? kOInt64 : t0);
  }
}

// ---- Loop -----------------------------------------------------------------------------------------

namespace {

// Loop as a WHILE_LOOP. Loop-carried: the iteration number (i32[]), the trip count M and the
// condition when given (i32[] and bool[]), the N loop-carried values, then the run-time values of
// enclosing scopes that the body reads (passed through unchanged).
void loop_while(Importer& imp, const onnx::NodeProto& node, const onnx::GraphProto& body, int N) {
  const bool has_m = imp.has_input(0), has_cond = imp.has_input(1);
  const Captures cap = capture(imp, {&body});
  std::vector<TVal> init;
  std::vector<std::string> names;
  std::vector<int> v_types;
  init.push_back(imp.const_tensor(Tensor::from_ints({DType::kInt32, {}}, std::vector<int64_t>{0})));
  names.push_back("iteration");
  size_t im = 0, ic = 0;
  if (has_m) {
    im = init.size();
    init.push_back(imp.reshape(imp.plain(imp.in(0)), {}));
    names.push_back("trip_count");
  }
  if (has_cond) {
    ic = init.size();
    init.push_back(imp.reshape(imp.plain(imp.in(1)), {}));
    names.push_back("condition");
  }
  const size_t iv = init.size();
  for (int k = 0; k < N; ++k) {
    init.push_back(imp.plain(imp.in(2 + k)));
    names.push_back(body.input(2 + k).name());
    v_types.push_back(imp.in(2 + k).onnx_type);
  }
  const size_t icap = init.size();
  init.insert(init.end(), cap.values.begin(), cap.values.end());
  names.insert(names.end(), cap.names.begin(), cap.names.end());
  check_list_size(imp, init.size(),
                  "as a WHILE_LOOP, the Loop carries the iteration number, its trip count and condition, its " +
                      std::to_string(N) + " loop-carried values and the " + std::to_string(cap.values.size()) +
                      " run-time values of the enclosing graph its body reads:");
  std::vector<TensorType> types;
  for (const TVal& v : init) types.push_back(v.type);

  const std::string base = base_name(node);
  const std::string cond_name = imp.build_graph(
      base + "_cond", types, names,
      [&](const std::vector<TVal>& ins) {
        std::optional<TVal> go;
        if (has_m) go = imp.emit(Op::GREATER, {ins[im], ins[0]});
        if (has_cond) go = go ? imp.emit(Op::LOGICAL_AND, {*go, ins[ic]}) : ins[ic];
        return std::vector<TVal>{*go};
      },
      nullptr);
  const std::string body_name = imp.build_graph(
      base + "_body", types, names,
      [&](const std::vector<TVal>& ins) {
        Importer::Scope scope(imp);
        bind_captures(imp, scope, cap, ins, icap);
        std::vector<OVal> args{plain_oval(ins[0], kOInt64), has_cond ? plain_oval(ins[ic], kOBool) : bool_scalar(imp, true)};
        for (int k = 0; k < N; ++k) {
          const size_t j = static_cast<size_t>(k);
          args.push_back(plain_oval(ins[iv + j], v_types[j]));
        }
        const std::vector<OVal> outs = imp.inline_graph(body, args, "body");
        std::vector<TVal> next = ins;  // the trip count and the captured values pass through
        next[0] = imp.add(ins[0], imp.const_tensor(Tensor::from_ints({DType::kInt32, {}}, std::vector<int64_t>{1})));
        if (has_cond) {
          check_condition(imp, outs[0], "the body's condition output '" + body.output(0).name() + "'");
          next[ic] = imp.reshape(imp.plain(outs[0]), {});
        }
        for (int k = 0; k < N; ++k) {
          const size_t j = iv + static_cast<size_t>(k);
          TVal t = imp.plain(outs[static_cast<size_t>(1 + k)]);
          if (t.type != types[j])
            imp.fail("loop-carried value " + std::to_string(k) + " ('" + body.input(2 + k).name() + "') enters the body as " +
                         types[j].str() + " and leaves it as " + t.type.str() +
                         "; a Loop that runs at run time becomes a TOSA WHILE_LOOP, which carries values of one type "
                         "(shape included) through every iteration");
          next[j] = t;
        }
        return next;
      },
      nullptr);
  const std::vector<TVal> outs =
      imp.emit_typed(Op::WHILE_LOOP, init, {{"cond_graph", cond_name}, {"body_graph", body_name}}, types);
  for (int k = 0; k < N; ++k)
    imp.set_out(k, outs[iv + static_cast<size_t>(k)], {}, v_types[static_cast<size_t>(k)]);
}

enum class Unrolled { kDone, kRunTimeCondition, kTooLong };

// Loop unrolled: iterations while the condition (known at import time, also the body's) holds and
// fewer than `trips` (when given) have run.
Unrolled loop_unrolled(Importer& imp, const onnx::GraphProto& body, int N, int K, std::optional<int64_t> trips,
                       bool initially) {
  const bool has_cond = imp.has_input(1);
  const int64_t body_nodes = std::max<int64_t>(Importer::count_nodes(body), 1);
  std::vector<OVal> v;
  for (int k = 0; k < N; ++k) v.push_back(imp.in(2 + k));
  std::vector<std::vector<TVal>> scans(static_cast<size_t>(K));
  std::vector<int> scan_types(static_cast<size_t>(K), kOUndefined);
  std::vector<std::vector<int64_t>> scan_ints(static_cast<size_t>(K));
  std::vector<bool> exact(static_cast<size_t>(K), true);
  bool go = initially;
  int64_t i = 0;
  for (; go && (!trips || i < *trips); ++i) {
    if (imp.unrolled_nodes() + body_nodes > kMaxUnrolledNodes) return Unrolled::kTooLong;
    imp.unrolled_nodes() += body_nodes;
    std::vector<OVal> args{int64_scalar(imp, i), bool_scalar(imp, true)};
    args.insert(args.end(), v.begin(), v.end());
    const std::vector<OVal> outs = imp.inline_graph(body, args, "body", "iteration " + std::to_string(i));
    if (has_cond) {
      check_condition(imp, outs[0], "the body's condition output '" + body.output(0).name() + "'");
      const std::optional<bool> b = const_bool(outs[0]);
      if (!b) return Unrolled::kRunTimeCondition;
      go = *b;
    }
    for (int k = 0; k < N; ++k) v[static_cast<size_t>(k)] = outs[static_cast<size_t>(1 + k)];
    for (int k = 0; k < K; ++k) {
      const OVal& o = outs[static_cast<size_t>(1 + N + k)];
      const size_t s = static_cast<size_t>(k);
      TVal t = imp.plain(o);
      if (!scans[s].empty() && t.type != scans[s][0].type)
        imp.fail("scan output " + std::to_string(k) + " ('" + body.output(1 + N + k).name() + "') is " + t.type.str() +
                     " in iteration " + std::to_string(i) + " but " + scans[s][0].type.str() +
                     " in iteration 0; the entries of a scan output must have one type",
                 ErrorCode::kInvalidArgument);
      if (o.onnx_type == kOInt64 || scan_types[s] == kOUndefined) scan_types[s] = o.onnx_type;
      exact[s] = exact[s] && o.ints;
      if (exact[s]) scan_ints[s].insert(scan_ints[s].end(), o.ints->begin(), o.ints->end());
      scans[s].push_back(t);
    }
  }
  if (K > 0 && i == 0)
    imp.fail("the loop runs no iteration, so its scan outputs are empty; TOSA has no empty tensors");
  for (int k = 0; k < N; ++k) imp.alias_out(k, v[static_cast<size_t>(k)]);
  for (int k = 0; k < K; ++k) {
    const size_t s = static_cast<size_t>(k);
    imp.set_out(N + k, stack(imp, scans[s], 0), {}, scan_types[s]);
    if (exact[s]) imp.set_exact_ints(N + k, std::make_shared<const std::vector<int64_t>>(std::move(scan_ints[s])));
  }
  return Unrolled::kDone;
}

}  // namespace

void lower_Loop(Importer& imp, const onnx::NodeProto& node) {
  const onnx::GraphProto& body = imp.attr_graph("body");
  if (node.input_size() < 2)
    imp.fail("Loop takes the trip count M and the condition (either may be the empty name) before its loop-carried values",
             ErrorCode::kInvalidArgument);
  const int N = node.input_size() - 2;
  for (int k = 0; k < N; ++k) imp.in(2 + k);  // each loop-carried value is required
  if (body.input_size() != 2 + N)
    imp.fail("the body declares " + std::to_string(body.input_size()) + " inputs; Loop passes it the iteration number, "
             "the condition and its " + std::to_string(N) + " loop-carried values (" + std::to_string(2 + N) + ")",
             ErrorCode::kInvalidArgument);
  if (body.output_size() < 1 + N)
    imp.fail("the body returns " + std::to_string(body.output_size()) + " values; it must return the condition and the " +
                 std::to_string(N) + " loop-carried values, then its scan outputs",
             ErrorCode::kInvalidArgument);
  const int K = body.output_size() - 1 - N;
  if (node.output_size() != N + K)
    imp.fail("the Loop has " + std::to_string(node.output_size()) + " outputs; its body gives " + std::to_string(N) +
                 " loop-carried values and " + std::to_string(K) + " scan outputs (" + std::to_string(N + K) + ")",
             ErrorCode::kInvalidArgument);
  const bool has_m = imp.has_input(0), has_cond = imp.has_input(1);
  if (!has_m && !has_cond)
    imp.fail("the Loop has neither a trip count M nor a condition, so it never ends");
  std::optional<int64_t> trips;
  bool m_known = true, cond_known = true, initially = true;
  if (has_m) {
    const OVal& m = imp.in(0);
    if (m.v.dtype() != DType::kInt32 || shape_elements(m.shape) != 1)
      imp.fail("the trip count M (input 0) must be one int64 value, got " + std::string(onnx_type_name(m.onnx_type)) + " " +
                   shape_str(m.shape),
               ErrorCode::kInvalidArgument);
    m_known = m.v.is_const();
    if (m_known) trips = std::max<int64_t>(m.ints ? m.ints->at(0) : m.v.c->at_int(0), 0);
  }
  if (has_cond) {
    const OVal& c = imp.in(1);
    check_condition(imp, c, "the condition (input 1)");
    const std::optional<bool> b = const_bool(c);
    cond_known = b.has_value();
    initially = b.value_or(true);
  }
  const int64_t body_nodes = std::max<int64_t>(Importer::count_nodes(body), 1);
  const std::string scan_why = "the Loop has " + std::to_string(K) + " scan output" + (K == 1 ? "" : "s") +
                               ", which get one entry per iteration, and TOSA's WHILE_LOOP carries values of one fixed shape";
  if (!m_known || !cond_known) {
    if (K > 0) {
      if (!m_known) imp.fail_not_constant(0, "the trip count M", "must be known when the model is compiled: " + scan_why);
      imp.fail_not_constant(1, "the condition", "must be known when the model is compiled: " + scan_why);
    }
    loop_while(imp, node, body, N);
    return;
  }
  Unrolled r = Unrolled::kTooLong;
  const int64_t budget = kMaxUnrolledNodes - imp.unrolled_nodes();
  if (!trips || !initially || *trips <= budget / body_nodes) r = loop_unrolled(imp, body, N, K, trips, initially);
  if (r == Unrolled::kDone) return;
  if (K == 0) {
    loop_while(imp, node, body, N);
    return;
  }
  if (r == Unrolled::kRunTimeCondition)
    imp.fail("the body's condition output '" + body.output(0).name() + "' is computed at run time, so the number of "
             "iterations is known only when the model runs; " + scan_why + ": a Loop with scan outputs must be unrolled");
  imp.fail("unrolling the Loop (" + (trips ? std::to_string(*trips) : std::string("until its condition fails")) +
           " iterations of a body of " + std::to_string(body_nodes) + " nodes) would lower more than " +
           std::to_string(kMaxUnrolledNodes) + " nodes (Weft's limit on unrolled bodies, per model); " + scan_why +
           ": a Loop with scan outputs must be unrolled");
}

// ---- Scan -----------------------------------------------------------------------------------------

namespace {

struct ScanSteps {
  std::vector<OVal> states;
  std::vector<TVal> scans;  // stacked
  std::vector<int> scan_types;
};

// Runs Scan's body over the static sequence: scan input j is read along axis in_axes[j] (reversed
// where in_dirs[j]), scan output k stacked along out_axes[k] (reversed where out_dirs[k]).
ScanSteps scan_steps(Importer& imp, const onnx::GraphProto& body, std::vector<OVal> states, const std::vector<TVal>& xs,
                     const std::vector<int>& x_types, const std::vector<int64_t>& in_axes,
                     const std::vector<int64_t>& in_dirs, const std::vector<int64_t>& out_axes,
                     const std::vector<int64_t>& out_dirs, const std::string& detail) {
  const size_t N = states.size(), K = static_cast<size_t>(body.output_size()) - N;
  const int64_t L = xs.at(0).shape()[static_cast<size_t>(in_axes[0])];
  for (size_t j = 1; j < xs.size(); ++j)
    if (xs[j].shape()[static_cast<size_t>(in_axes[j])] != L)
      imp.fail("scan input " + std::to_string(j) + " has " + std::to_string(xs[j].shape()[static_cast<size_t>(in_axes[j])]) +
                   " entries along its scan axis " + std::to_string(in_axes[j]) + ", scan input 0 has " + std::to_string(L) +
                   " (every scan input must have the sequence length)",
               ErrorCode::kInvalidArgument);
  std::vector<std::vector<TVal>> parts(K);
  ScanSteps r;
  r.scan_types.assign(K, kOUndefined);
  for (int64_t t = 0; t < L; ++t) {
    std::vector<OVal> args = states;
    for (size_t j = 0; j < xs.size(); ++j) {
      const Shape& s = xs[j].shape();
      const size_t a = static_cast<size_t>(in_axes[j]);
      std::vector<int64_t> start(s.size(), 0), size(s.begin(), s.end());
      start[a] = in_dirs[j] ? L - 1 - t : t;
      size[a] = 1;
      Shape step = s;
      step.erase(step.begin() + static_cast<std::ptrdiff_t>(a));
      args.push_back(plain_oval(imp.reshape(imp.slice(xs[j], start, size), step), x_types[j]));
    }
    const std::vector<OVal> outs = imp.inline_graph(body, args, "body", detail + "step " + std::to_string(t));
    for (size_t k = 0; k < N; ++k) states[k] = outs[k];
    for (size_t k = 0; k < K; ++k) {
      const OVal& o = outs[N + k];
      TVal v = imp.plain(o);
      if (!parts[k].empty() && v.type != parts[k][0].type)
        imp.fail("scan output " + std::to_string(k) + " ('" + body.output(static_cast<int>(N + k)).name() + "') is " +
                     v.type.str() + " in step " + std::to_string(t) + " but " + parts[k][0].type.str() +
                     " in step 0; the entries of a scan output must have one type",
                 ErrorCode::kInvalidArgument);
      if (o.onnx_type == kOInt64 || r.scan_types[k] == kOUndefined) r.scan_types[k] = o.onnx_type;
      parts[k].push_back(v);
    }
  }
  r.states = std::move(states);
  for (size_t k = 0; k < K; ++k) {
    if (out_dirs[k]) std::reverse(parts[k].begin(), parts[k].end());
    const int64_t rank = parts[k][0].rank() + 1;
    const int64_t axis = norm_axis(imp, out_axes[k], rank, "scan_output_axes entry");
    r.scans.push_back(stack(imp, parts[k], axis));
  }
  return r;
}

std::vector<int64_t> list_attr(Importer& imp, const char* name, size_t n, bool directions) {
  std::vector<int64_t> v = imp.attr_ints(name).value_or(std::vector<int64_t>(n, 0));
  if (v.size() != n)
    imp.fail(std::string("attribute '") + name + "' has " + std::to_string(v.size()) + " entries; it needs one per " +
                 (std::string(name).find("output") != std::string::npos ? "scan output" : "scan input") + " (" +
                 std::to_string(n) + ")",
             ErrorCode::kInvalidArgument);
  if (directions)
    for (int64_t d : v)
      if (d != 0 && d != 1)
        imp.fail(std::string("attribute '") + name + "' holds " + std::to_string(d) +
                     "; a direction is 0 (forward) or 1 (reverse)",
                 ErrorCode::kInvalidArgument);
  return v;
}

}  // namespace

void lower_Scan(Importer& imp, const onnx::NodeProto& node) {
  const onnx::GraphProto& body = imp.attr_graph("body");
  const int64_t M = imp.attr_int("num_scan_inputs", 0);
  const bool batched = imp.opset() < 9;  // opset 8: sequence_lens first, a batch axis 0 everywhere
  const int first = batched ? 1 : 0;
  if (M < 1 || M > node.input_size() - first)
    imp.fail("num_scan_inputs is " + std::to_string(M) + "; it must be at least 1 and at most the " +
                 std::to_string(node.input_size() - first) + " state and scan inputs",
             ErrorCode::kInvalidArgument);
  const int N = node.input_size() - first - static_cast<int>(M);
  if (body.input_size() != N + M)
    imp.fail("the body declares " + std::to_string(body.input_size()) + " inputs; Scan passes it its " + std::to_string(N) +
                 " state values and " + std::to_string(M) + " scan slices",
             ErrorCode::kInvalidArgument);
  const int K = body.output_size() - N;
  if (K < 0 || node.output_size() != N + K)
    imp.fail("the body returns " + std::to_string(body.output_size()) + " values and the Scan has " +
                 std::to_string(node.output_size()) + " outputs; both must be the " + std::to_string(N) +
                 " final states, then the scan outputs",
             ErrorCode::kInvalidArgument);
  for (int k = 0; k < N + static_cast<int>(M); ++k) imp.in(first + k);  // each is required
  const size_t nm = static_cast<size_t>(M), nk = static_cast<size_t>(K);
  const std::vector<int64_t> in_dirs = list_attr(imp, batched ? "directions" : "scan_input_directions", nm, true);
  std::vector<int64_t> in_axes(nm, 0), out_axes(nk, 0), out_dirs(nk, 0);
  if (!batched) {
    in_axes = list_attr(imp, "scan_input_axes", nm, false);
    out_axes = list_attr(imp, "scan_output_axes", nk, false);
    out_dirs = list_attr(imp, "scan_output_directions", nk, true);
  }
  std::vector<OVal> states;
  for (int k = 0; k < N; ++k) states.push_back(imp.in(first + k));
  std::vector<TVal> xs;
  std::vector<int> x_types;
  for (size_t j = 0; j < nm; ++j) {
    const OVal& x = imp.in(first + N + static_cast<int>(j));
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    if (batched && rank < 2) imp.fail("scan input " + std::to_string(j) + " has rank " + std::to_string(rank) +
                                      "; at opset 8 a scan input is [batch, sequence, ...]", ErrorCode::kInvalidArgument);
    if (!batched) in_axes[j] = norm_axis(imp, in_axes[j], rank, "scan_input_axes entry");
    xs.push_back(imp.plain(x));
    x_types.push_back(x.onnx_type);
  }
  const int64_t L = xs[0].shape()[static_cast<size_t>(batched ? 1 : in_axes[0])];
  const int64_t B = batched ? xs[0].shape()[0] : 1;
  const int64_t body_nodes = std::max<int64_t>(Importer::count_nodes(body), 1);
  if (L * B > (kMaxUnrolledNodes - imp.unrolled_nodes()) / body_nodes)
    imp.fail("unrolling the Scan (" + (batched ? std::to_string(B) + " batch entries x " : std::string()) + std::to_string(L) +
             " steps of a body of " + std::to_string(body_nodes) + " nodes) would lower more than " +
             std::to_string(kMaxUnrolledNodes) + " nodes (Weft's limit on unrolled bodies, per model)");
  imp.unrolled_nodes() += L * B * body_nodes;

  if (!batched) {
    ScanSteps r = scan_steps(imp, body, states, xs, x_types, in_axes, in_dirs, out_axes, out_dirs, "");
    for (int k = 0; k < N; ++k) imp.alias_out(k, r.states[static_cast<size_t>(k)]);
    for (int k = 0; k < K; ++k)
      imp.set_out(N + k, r.scans[static_cast<size_t>(k)], {}, r.scan_types[static_cast<size_t>(k)]);
    return;
  }
  // Opset 8: every state and scan input has a batch axis 0; the body runs per batch entry.
  if (imp.has_input(0)) {
    const std::vector<int64_t> lens = imp.const_ints(0, "sequence_lens");
    for (int64_t l : lens)
      if (l != L)
        imp.fail("sequence_lens holds " + std::to_string(l) + "; only sequences of the full length " + std::to_string(L) +
                 " are supported");
  }
  for (int k = 0; k < N + static_cast<int>(M); ++k) {
    const OVal& v = imp.in(first + k);
    if (v.shape.empty() || v.shape[0] != B)
      imp.fail("input " + std::to_string(first + k) + " has shape " + shape_str(v.shape) + "; at opset 8 every state and "
               "scan input has the batch size " + std::to_string(B) + " as its dimension 0",
               ErrorCode::kInvalidArgument);
  }
  auto entry = [&](const TVal& v, int64_t b) {
    std::vector<int64_t> start(v.shape().size(), 0), size(v.shape().begin(), v.shape().end());
    start[0] = b;
    size[0] = 1;
    return imp.reshape(imp.slice(v, start, size), Shape(v.shape().begin() + 1, v.shape().end()));
  };
  std::vector<std::vector<TVal>> state_parts(static_cast<size_t>(N)), scan_parts(nk);
  std::vector<int> scan_types(nk, kOUndefined);
  for (int64_t b = 0; b < B; ++b) {
    std::vector<OVal> sb;
    for (const OVal& s : states) sb.push_back(plain_oval(entry(imp.plain(s), b), s.onnx_type));
    std::vector<TVal> xb;
    for (const TVal& x : xs) xb.push_back(entry(x, b));
    ScanSteps r = scan_steps(imp, body, sb, xb, x_types, std::vector<int64_t>(nm, 0), in_dirs, out_axes, out_dirs,
                             "batch entry " + std::to_string(b) + ", ");
    for (int k = 0; k < N; ++k) state_parts[static_cast<size_t>(k)].push_back(imp.plain(r.states[static_cast<size_t>(k)]));
    for (size_t k = 0; k < nk; ++k) {
      scan_parts[k].push_back(r.scans[k]);
      scan_types[k] = r.scan_types[k];
    }
  }
  for (int k = 0; k < N; ++k) {
    const auto& parts = state_parts[static_cast<size_t>(k)];
    for (const TVal& p : parts)
      if (p.type != parts[0].type)
        imp.fail("final state " + std::to_string(k) + " is " + p.type.str() + " for one batch entry and " + parts[0].type.str() +
                 " for another", ErrorCode::kInvalidArgument);
    imp.set_out(k, stack(imp, parts, 0), {}, states[static_cast<size_t>(k)].onnx_type);
  }
  for (size_t k = 0; k < nk; ++k) imp.set_out(N + static_cast<int>(k), stack(imp, scan_parts[k], 0), {}, scan_types[k]);
}

}  // namespace weft::onnxfe
