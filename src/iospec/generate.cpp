// IOSpec generation: variables (lengths, padding, quantization) and sequences (which inputs each
// output depends on) of a module's entry graph.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "iospec/internal.h"

namespace weft::iospec {

const Variable* IoSpec::find_input(std::string_view key) const {
  for (const Variable& v : inputs) {
    if (v.key == key) return &v;
  }
  return nullptr;
}

const Variable* IoSpec::find_output(std::string_view key) const {
  for (const Variable& v : outputs) {
    if (v.key == key) return &v;
  }
  return nullptr;
}

namespace {

// ---- Dependencies -----------------------------------------------------------------------------------------

// A set of graph input indices.
class Bits {
 public:
  explicit Bits(size_t n = 0) : w_((n + 63) / 64, 0) {}
  void set(size_t i) { w_[i / 64] |= uint64_t{1} << (i % 64); }
  bool test(size_t i) const { return (w_[i / 64] >> (i % 64)) & 1; }
  void merge(const Bits& o) {
    for (size_t i = 0; i < w_.size() && i < o.w_.size(); ++i) w_[i] |= o.w_[i];
  }

 private:
  std::vector<uint64_t> w_;
};

// For every value of a graph, the graph inputs it depends on: each node's outputs depend on all its
// inputs, except COND_IF and WHILE_LOOP, whose outputs depend on the operands their sub-graphs
// (analysed the same way) connect them to, plus the condition.
class Dependencies {
 public:
  explicit Dependencies(const Module& m) : module_(m) {}

  std::vector<Bits> value_deps(const Graph& g) {
    const size_t n = g.inputs().size();
    std::vector<Bits> deps(g.values().size(), Bits(n));
    for (size_t i = 0; i < n; ++i) deps[static_cast<size_t>(g.inputs()[i])].set(i);
    auto dep = [&](ValueId v) -> const Bits& {
      static const Bits kNone;
      return v >= 0 && static_cast<size_t>(v) < deps.size() ? deps[static_cast<size_t>(v)] : kNone;
    };
    for (const Node& node : g.nodes()) {
      std::vector<Bits> outs;
      if (node.op == Op::COND_IF) outs = cond_if(node, dep, n);
      if (node.op == Op::WHILE_LOOP) outs = while_loop(node, dep, n);
      if (outs.size() != node.outputs.size()) {
        Bits all(n);
        for (ValueId v : node.inputs) all.merge(dep(v));
        outs.assign(node.outputs.size(), all);
      }
      for (size_t k = 0; k < node.outputs.size(); ++k) {
        const ValueId o = node.outputs[k];
        if (o >= 0 && static_cast<size_t>(o) < deps.size()) deps[static_cast<size_t>(o)] = outs[k];
      }
    }
    return deps;
  }

 private:
  // Per output of graph `name`: the indices of its inputs it depends on; nullopt if the graph is
  // missing or recursive.
  const std::vector<std::vector<size_t>>* output_deps(const std::string& name) {
    auto it = cache_.find(name);
    if (it != cache_.end()) return &it->second;
    const Graph* g = module_.find_graph(name);
    if (!g || active_.count(name)) return nullptr;
    active_.insert(name);
    std::vector<Bits> deps = value_deps(*g);
    active_.erase(name);
    std::vector<std::vector<size_t>> r;
    for (ValueId o : g->outputs()) {
      std::vector<size_t> ins;
      for (size_t i = 0; i < g->inputs().size(); ++i) {
        if (deps[static_cast<size_t>(o)].test(i)) ins.push_back(i);
      }
      r.push_back(std::move(ins));
    }
    return &(cache_[name] = std::move(r));
  }

  template <class Dep>
  std::vector<Bits> cond_if(const Node& node, const Dep& dep, size_t n) {
    if (node.inputs.empty()) return {};
    const auto* then_g = output_deps(node.attr_str("then_graph"));
    const auto* else_g = output_deps(node.attr_str("else_graph"));
    const size_t list = node.inputs.size() - 1;
    if (!then_g || !else_g || then_g->size() != node.outputs.size() || else_g->size() != node.outputs.size())
      return {};
    std::vector<Bits> outs(node.outputs.size(), Bits(n));
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      outs[k].merge(dep(node.inputs[0]));
      for (const auto* branch : {then_g, else_g}) {
        for (size_t j : (*branch)[k]) {
          if (j >= list) return {};
          outs[k].merge(dep(node.inputs[j + 1]));
        }
      }
    }
    return outs;
  }

  template <class Dep>
  std::vector<Bits> while_loop(const Node& node, const Dep& dep, size_t n) {
    const auto* cond_g = output_deps(node.attr_str("cond_graph"));
    const auto* body_g = output_deps(node.attr_str("body_graph"));
    const size_t list = node.inputs.size();
    if (!cond_g || !body_g || cond_g->size() != 1 || body_g->size() != list || node.outputs.size() != list) return {};
    std::vector<Bits> outs(list, Bits(n));
    for (size_t k = 0; k < list; ++k) {
      // Loop variables that reach output k: k itself and the condition's, closed under the body.
      std::vector<bool> reach(list, false);
      std::vector<size_t> work{k};
      for (size_t j : (*cond_g)[0]) work.push_back(j);
      while (!work.empty()) {
        const size_t j = work.back();
        work.pop_back();
        if (j >= list) return {};
        if (reach[j]) continue;
        reach[j] = true;
        for (size_t i : (*body_g)[j]) work.push_back(i);
      }
      for (size_t j = 0; j < list; ++j) {
        if (reach[j]) outs[k].merge(dep(node.inputs[j]));
      }
    }
    return outs;
  }

  const Module& module_;
  std::map<std::string, std::vector<std::vector<size_t>>> cache_;
  std::set<std::string> active_;
};

// ---- Quantization -----------------------------------------------------------------------------------------

struct Scalar {
  double value = 0;
  DType dtype = DType::kFp32;
};

// The single element of a CONST (per-tensor parameters only).
std::optional<Scalar> const_scalar(const Graph& g, ValueId v) {
  if (v < 0 || static_cast<size_t>(v) >= g.values().size()) return std::nullopt;
  const int p = g.value(v).producer;
  if (p < 0) return std::nullopt;
  const Node& n = g.node(p);
  if (n.op != Op::CONST) return std::nullopt;
  const Tensor& t = n.attr_tensor("values");
  if (t.num_elements() != 1 || !t.valid()) return std::nullopt;
  return Scalar{t.at_double(0), t.dtype()};
}

// A scale as the model's constant holds it: a float constant's value is the shortest decimal that
// reads back as that float (0.1f -> 0.1, not 0.10000000149011612).
double tidy(double v, DType t) {
  if (!is_float(t) || !std::isfinite(v)) return v;
  const float f = static_cast<float>(v);
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, f);
  double d = v;
  std::from_chars(buf, r.ptr, d);
  return d;
}

bool passthrough(Op op) { return op == Op::IDENTITY || op == Op::RESHAPE || op == Op::TRANSPOSE; }

bool usable(const Quantization& q) {
  return std::isfinite(q.scale) && q.scale > 0 && std::isfinite(q.zero_pt);
}

// RESCALE's per-tensor factor multiplier * 2^-shift, if its parameters are constants.
std::optional<double> rescale_factor(const Graph& g, const Node& n) {
  if (n.inputs.size() < 5 || n.attr_bool("per_channel") || n.attr_bool("input_unsigned") || n.attr_bool("output_unsigned"))
    return std::nullopt;
  auto m = const_scalar(g, n.inputs[1]);
  auto s = const_scalar(g, n.inputs[2]);
  if (!m || !s) return std::nullopt;
  return m->value * std::ldexp(1.0, -static_cast<int>(s->value));
}

class Quantizations {
 public:
  explicit Quantizations(const Graph& g) : g_(g), consumers_(g.values().size()) {
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      const Node& n = g.nodes()[i];
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const ValueId v = n.inputs[k];
        if (v >= 0 && static_cast<size_t>(v) < consumers_.size())
          consumers_[static_cast<size_t>(v)].push_back({static_cast<int>(i), static_cast<int>(k)});
      }
    }
  }

  // An integer input read by CAST -> [SUB zero point] -> MUL scale, or by a per-tensor RESCALE. All
  // readings found must agree.
  Quantization of_input(ValueId x) const {
    std::vector<Quantization> found;
    find_dequantize(x, found);
    if (found.empty()) return {};
    for (const Quantization& q : found) {
      if (!(q == found[0])) return {};
    }
    return usable(found[0]) ? found[0] : Quantization{};
  }

  // An integer output made by MUL (1 / scale) -> CAST -> [ADD zero point] -> [saturation] -> [CAST],
  // or by a per-tensor RESCALE.
  Quantization of_output(ValueId y) const {
    ValueId v = skip_saturation(y);
    const Node* n = producer(v);
    if (!n) return {};
    if (n->op == Op::RESCALE) {
      auto f = rescale_factor(g_, *n);
      if (!f || *f == 0) return {};
      auto zp = const_scalar(g_, n->inputs[4]);
      if (!zp) return {};
      Quantization q{1.0 / *f, zp->value};
      return usable(q) ? q : Quantization{};
    }
    double zp = 0;
    if (n->op == Op::ADD && n->inputs.size() == 2 && is_integer(g_.value(v).type.dtype)) {
      int c = const_scalar(g_, n->inputs[1]) ? 1 : const_scalar(g_, n->inputs[0]) ? 0 : -1;
      if (c < 0) return {};
      zp = const_scalar(g_, n->inputs[static_cast<size_t>(c)])->value;
      v = n->inputs[static_cast<size_t>(1 - c)];
      n = producer(v);
      if (!n) return {};
    }
    if (n->op != Op::CAST || n->inputs.empty() || !is_float(g_.value(n->inputs[0]).type.dtype)) return {};
    n = producer(n->inputs[0]);
    if (!n || n->op != Op::MUL || n->inputs.size() < 2) return {};
    for (int c = 1; c >= 0; --c) {
      const ValueId p = n->inputs[static_cast<size_t>(c)];
      if (auto r = const_scalar(g_, p)) {
        if (r->value == 0) return {};
        Quantization q{tidy(1.0 / r->value, r->dtype), zp};
        return usable(q) ? q : Quantization{};
      }
      // MUL(x, RECIPROCAL(scale)) where the reciprocal was not folded.
      const Node* rn = producer(p);
      if (rn && rn->op == Op::RECIPROCAL && !rn->inputs.empty()) {
        if (auto s = const_scalar(g_, rn->inputs[0])) {
          Quantization q{tidy(s->value, s->dtype), zp};
          return usable(q) ? q : Quantization{};
        }
      }
    }
    return {};
  }

 private:
  const Node* producer(ValueId v) const {
    if (v < 0 || static_cast<size_t>(v) >= g_.values().size()) return nullptr;
    const int p = g_.value(v).producer;
    return p < 0 ? nullptr : &g_.node(p);
  }

  // Walks back over layout ops and saturation: integer CASTs, CLAMP, MAXIMUM / MINIMUM against a
  // constant.
  ValueId skip_saturation(ValueId v) const {
    for (int guard = 0; guard < 64; ++guard) {
      const Node* n = producer(v);
      if (!n || n->inputs.empty()) return v;
      const bool int_cast = n->op == Op::CAST && is_integer(g_.value(n->inputs[0]).type.dtype);
      if (passthrough(n->op) || int_cast || n->op == Op::CLAMP) {
        v = n->inputs[0];
      } else if ((n->op == Op::MAXIMUM || n->op == Op::MINIMUM) && n->inputs.size() == 2) {
        if (const_scalar(g_, n->inputs[1])) v = n->inputs[0];
        else if (const_scalar(g_, n->inputs[0])) v = n->inputs[1];
        else return v;
      } else {
        return v;
      }
    }
    return v;
  }

  const std::vector<std::pair<int, int>>& uses(ValueId v) const {
    static const std::vector<std::pair<int, int>> kNone;
    return v >= 0 && static_cast<size_t>(v) < consumers_.size() ? consumers_[static_cast<size_t>(v)] : kNone;
  }

  // MUL(v, scale) in either operand order: the scale.
  std::optional<Scalar> mul_scale(const Node& n, int operand) const {
    if (n.op != Op::MUL || operand > 1 || n.inputs.size() < 2) return std::nullopt;
    return const_scalar(g_, n.inputs[static_cast<size_t>(1 - operand)]);
  }

  void find_dequantize(ValueId v, std::vector<Quantization>& found, int depth = 0) const {
    if (depth > 16) return;
    for (auto [ni, k] : uses(v)) {
      const Node& n = g_.node(ni);
      if (n.outputs.empty()) continue;
      if (passthrough(n.op) && k == 0) {
        find_dequantize(n.outputs[0], found, depth + 1);
      } else if (n.op == Op::RESCALE && k == 0) {
        if (auto f = rescale_factor(g_, n)) {
          if (auto zp = const_scalar(g_, n.inputs[3])) found.push_back({*f, zp->value});
        }
      } else if (n.op == Op::CAST && is_float(g_.value(n.outputs[0]).type.dtype)) {
        for (auto [ci, ck] : uses(n.outputs[0])) {
          const Node& c = g_.node(ci);
          if (auto s = mul_scale(c, ck)) {
            found.push_back({tidy(s->value, s->dtype), 0.0});
          } else if (c.op == Op::SUB && ck == 0 && c.inputs.size() == 2 && !c.outputs.empty()) {
            auto zp = const_scalar(g_, c.inputs[1]);
            if (!zp) continue;
            for (auto [mi, mk] : uses(c.outputs[0])) {
              if (auto s2 = mul_scale(g_.node(mi), mk)) found.push_back({tidy(s2->value, s2->dtype), zp->value});
            }
          }
        }
      }
    }
  }

  const Graph& g_;
  std::vector<std::vector<std::pair<int, int>>> consumers_;
};

}  // namespace

// ---- generate ------------------------------------------------------------------------------------------------

IoSpec generate(const Module& module, const GenerateOptions& options) {
  using namespace detail;
  const Graph& g = module.main();
  const Target& target = options.target;
  auto fail = [&](ErrorCode code, const std::string& msg, const std::string& operand = "") {
    throw Error(code, msg, Location{.graph = g.name(), .operand = operand});
  };
  if (target.word_bits <= 0 || target.word_bits % 8 != 0 || target.granule_words < 1 || target.core_id < 0)
    fail(ErrorCode::kInvalidArgument, "invalid target: word_bits must be a positive multiple of 8 (got " +
                                          std::to_string(target.word_bits) + "), granule_words >= 1 (got " +
                                          std::to_string(target.granule_words) + "), core_id >= 0 (got " +
                                          std::to_string(target.core_id) + ")");

  std::vector<std::string> in_names, out_names;
  for (ValueId v : g.inputs()) in_names.push_back(g.value(v).name);
  for (ValueId v : g.outputs()) out_names.push_back(g.value(v).name);

  // Keys are unique across inputs and outputs.
  for (size_t k = 0; k < out_names.size(); ++k) {
    if (std::find(in_names.begin(), in_names.end(), out_names[k]) != in_names.end())
      fail(ErrorCode::kUnsupported,
           "output '" + out_names[k] + "' is the input '" + out_names[k] +
               "' itself: IOSpec variable names must be unique across inputs and outputs (add an IDENTITY)",
           out_names[k]);
    for (size_t j = 0; j < k; ++j) {
      if (out_names[j] == out_names[k])
        fail(ErrorCode::kUnsupported,
             "value '" + out_names[k] + "' is returned twice: IOSpec variable names must be unique", out_names[k]);
    }
  }

  // Latched inputs: input names, each once.
  std::vector<bool> latched(in_names.size(), false);
  for (size_t i = 0; i < options.latched.size(); ++i) {
    const std::string& name = options.latched[i];
    auto it = std::find(in_names.begin(), in_names.end(), name);
    if (it == in_names.end()) {
      fail(ErrorCode::kInvalidArgument,
           "latched input '" + name + "' is not an input of the model (inputs: " + list_str(in_names) + ")", name);
    }
    if (std::find(options.latched.begin(), options.latched.begin() + static_cast<std::ptrdiff_t>(i), name) !=
        options.latched.begin() + static_cast<std::ptrdiff_t>(i))
      fail(ErrorCode::kInvalidArgument, "input '" + name + "' is marked latched twice", name);
    latched[static_cast<size_t>(it - in_names.begin())] = true;
  }

  // Variables.
  Quantizations quant(g);
  IoSpec spec;
  auto variable = [&](ValueId id, bool input, int64_t position) {
    const Value& val = g.value(id);
    const char* kind = input ? "input" : "output";
    auto precision = precision_of(val.type.dtype);
    if (!precision)
      fail(ErrorCode::kUnsupported,
           std::string(kind) + " '" + val.name + "' has type " + val.type.str() + ", which has no IOSpec precision" +
               (val.type.dtype == DType::kShape ? " (shape values are not streamed)"
                                                : " (48-bit elements do not divide a 64-bit word)"),
           val.name);
    Variable v;
    v.key = val.name;
    v.input = input;
    v.varname = val.name;
    v.length = val.type.num_elements();
    if (v.length < 1)
      fail(ErrorCode::kUnsupported, std::string(kind) + " '" + val.name + "' " + val.type.str() + " has no elements",
           val.name);
    v.precision = *precision;
    try {
      const Padding p = pad(v.length, v.precision, target);
      v.padded_length = p.padded_length;
      v.length_64b_words = p.length_64b_words;
    } catch (const Error& e) {
      fail(ErrorCode::kInvalidArgument,
           std::string(kind) + " '" + val.name + "' " + val.type.str() + " cannot be padded by " +
               describe_target(target) + ": " + e.message(),
           val.name);
    }
    if (is_integer(val.type.dtype)) v.quantization = input ? quant.of_input(id) : quant.of_output(id);
    v.core_id = target.core_id;
    v.pc = position;
    return v;
  };
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    Variable v = variable(g.inputs()[i], true, static_cast<int64_t>(i));
    v.latched = latched[i];
    spec.inputs.push_back(std::move(v));
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) spec.outputs.push_back(variable(g.outputs()[i], false, static_cast<int64_t>(i)));

  // Sequences: every output's non-latched inputs.
  Dependencies deps(module);
  const std::vector<Bits> value_deps = deps.value_deps(g);
  std::vector<std::vector<std::string>> needs(out_names.size());
  for (size_t k = 0; k < out_names.size(); ++k) {
    const Bits& d = value_deps[static_cast<size_t>(g.outputs()[k])];
    std::vector<std::string> latched_used;
    for (size_t i = 0; i < in_names.size(); ++i) {
      if (!d.test(i)) continue;
      (latched[i] ? latched_used : needs[k]).push_back(in_names[i]);
    }
    if (needs[k].empty()) {
      if (latched_used.empty())
        fail(ErrorCode::kUnsupported,
             "output '" + out_names[k] +
                 "' depends on no input (a constant): every output must belong to the main sequence, which needs "
                 "at least one input",
             out_names[k]);
      fail(ErrorCode::kUnsupported,
           "output '" + out_names[k] + "' depends only on latched inputs " + list_str(latched_used) +
               ": it would belong to no sequence; leave one of them unlatched",
           out_names[k]);
    }
  }
  for (size_t k = 1; k < needs.size(); ++k) {
    if (needs[k] == needs[0]) continue;
    std::string each;
    for (size_t j = 0; j < needs.size(); ++j) each += (j ? ", '" : "'") + out_names[j] + "' needs " + list_str(needs[j]);
    fail(ErrorCode::kUnsupported,
         "outputs depend on different inputs, and only one sequence (plus latched inputs) is supported: " + each +
             "; mark inputs latched (--latched) or split the model");
  }
  for (size_t i = 0; i < in_names.size(); ++i) {
    if (latched[i]) continue;
    if (needs.empty() || std::find(needs[0].begin(), needs[0].end(), in_names[i]) == needs[0].end())
      fail(ErrorCode::kUnsupported,
           "input '" + in_names[i] + "' is used by no output" +
               (needs.empty() ? std::string(" (the model has no outputs)") : std::string()) +
               ": every input that is not latched must belong to the main sequence; mark it latched (--latched " +
               in_names[i] + ") or remove it",
           in_names[i]);
  }
  if (!out_names.empty()) spec.simple_sequences.push_back(Sequence{"main_seq", out_names, needs[0]});
  for (const std::string& name : options.latched) {
    spec.simple_sequences.push_back(
        Sequence{options.latched.size() == 1 ? "latched_seq" : "latched_seq_" + name, {}, {name}});
  }
  return spec;
}

}  // namespace weft::iospec
