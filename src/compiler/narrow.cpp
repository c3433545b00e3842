// fp32 -> fp16 narrowing (narrow.h): each graph rebuilt with narrowed types, constants converted,
// accumulators chosen by mode, CASTs at the entry graph's boundary for full_preserve_io.
#include "compiler/narrow.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "compiler/uses.h"
#include "weft/verify.h"

namespace weft::compiler {

std::optional<Narrowing> parse_narrowing(std::string_view name) {
  if (name == "none") return Narrowing::kNone;
  if (name == "full") return Narrowing::kFull;
  if (name == "partial") return Narrowing::kPartial;
  if (name == "full_preserve_io") return Narrowing::kFullPreserveIo;
  return std::nullopt;
}

const char* narrowing_name(Narrowing n) {
  switch (n) {
    case Narrowing::kNone: return "none";
    case Narrowing::kFull: return "full";
    case Narrowing::kPartial: return "partial";
    case Narrowing::kFullPreserveIo: return "full_preserve_io";
  }
  return "?";
}

namespace {

constexpr double kFp16Max = 65504.0;
constexpr double kFp16MinNormal = 6.103515625e-05;  // 2^-14
constexpr double kFp16MinSubnormal = 5.9604644775390625e-08;  // 2^-24

TensorType narrowed(const TensorType& t) {
  return t.dtype == DType::kFp32 ? TensorType{DType::kFp16, t.shape} : t;
}

// fp32 -> fp16, saturating beyond +-65504 (counted). With `floor` > 0 a value that is not 0 but
// smaller in magnitude than `floor` becomes +-floor (counted in *raised) rather than rounding to
// 0 or to a subnormal: the guards below.
Tensor to_fp16(const Tensor& t, NarrowStats& st, double floor = 0, size_t* raised = nullptr) {
  Tensor out = Tensor::zeros(narrowed(t.type()));
  const int64_t n = t.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    double v = load_as_double(DType::kFp32, t.buffer().data() + 4 * i);
    if (std::isfinite(v) && std::fabs(v) > kFp16Max) {
      v = std::copysign(kFp16Max, v);
      ++st.saturated;
    } else if (v != 0.0 && std::fabs(v) < floor) {
      v = std::copysign(floor, v);
      ++*raised;
    }
    store_from_double(DType::kFp16, out.mutable_bytes() + 2 * i, v);
  }
  st.constant_elements += static_cast<size_t>(n);
  return out;
}

// Two kinds of constant guard a division, and lose that rounded to 0 in fp16:
//  - A CLAMP bound that is not 0 but lies below fp16's normal range (F.normalize's eps of 1e-12):
//    x / max(norm, eps) divides by it where the norm is 0 (Swin V2's padded window tokens, whose
//    k is exactly 0), and 0 * (1 / bound) is NaN where fp32 gives 0. It becomes +-2^-14, fp16's
//    smallest normal (reciprocal 16384); a subnormal's reciprocal would be inf. A norm computed in
//    fp16 from squares is 0 or at least 2^-12, so the raised bound acts only where it is 0.
//  - A norm's epsilon (epsilon_consts below) that fp16 rounds to 0 becomes +-2^-24, fp16's
//    smallest subnormal (RSQRT 4096): the nearest value that is not 0.

bool has_accumulator_choice(Op op) {
  return op == Op::CONV2D || op == Op::CONV3D || op == Op::DEPTHWISE_CONV2D || op == Op::TRANSPOSE_CONV2D ||
         op == Op::AVG_POOL2D;
}

// The CONST nodes of `g` holding a norm's epsilon that fp16 would round to 0: one nonzero fp32
// value, every reader an ADD whose result only RSQRTs read (var + eps -> RSQRT: a layer norm as
// the ONNX import writes it; HF BERT's eps is 1e-12). Rounded to 0, a row whose variance is 0
// gives 0 * RSQRT(0) = 0 * inf = NaN where fp32 gives 0. Those become +-2^-24 (fp16's smallest
// subnormal, RSQRT 4096): the nearest value that is not 0.
std::set<int> epsilon_consts(const Graph& g) {
  const Uses uses(g);
  const std::vector<std::vector<int>>& readers = uses.readers;
  auto output = [&](ValueId v) { return uses.is_output[static_cast<size_t>(v)] != 0; };
  std::set<int> out;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& c = g.node(static_cast<int>(i));
    if (c.op != Op::CONST || c.outputs.size() != 1 || output(c.outputs[0])) continue;
    const Tensor& t = c.attr_tensor("values");
    if (t.dtype() != DType::kFp32 || t.num_elements() != 1) continue;
    const double v = t.at_double(0);
    if (v == 0.0 || std::fabs(v) > kFp16MinSubnormal / 2) continue;  // rounds to a nonzero fp16 already
    // var + eps, read by RSQRTs only.
    auto before_rsqrt = [&](int r) {
      const Node& add = g.node(r);
      const auto& next = readers[static_cast<size_t>(add.outputs[0])];
      return add.op == Op::ADD && !output(add.outputs[0]) && !next.empty() &&
             std::all_of(next.begin(), next.end(), [&](int q) { return g.node(q).op == Op::RSQRT; });
    };
    const auto& rs = readers[static_cast<size_t>(c.outputs[0])];
    if (!rs.empty() && std::all_of(rs.begin(), rs.end(), before_rsqrt)) out.insert(static_cast<int>(i));
  }
  return out;
}

Graph narrow_graph(const Graph& g, bool fp32_accumulators, bool preserve_io, bool entry, NarrowStats& st) {
  const std::set<int> epsilons = epsilon_consts(g);
  Graph ng(g.name());
  const bool keep_io = entry && preserve_io;
  std::vector<ValueId> map(g.values().size(), kNoValue);
  std::vector<ValueId> raw_input(g.values().size(), kNoValue);  // preserved fp32 inputs
  auto fresh = [&](const std::string& base) {
    std::string name = base;
    for (int k = 1; g.find_value(name) || ng.find_value(name); ++k) name = base + "_" + std::to_string(k);
    return name;
  };
  auto count = [&](const TensorType& t) { st.values += t.dtype == DType::kFp32; };
  for (ValueId v : g.inputs()) {
    const Value& val = g.value(v);
    if (keep_io && val.type.dtype == DType::kFp32) {
      const ValueId in = ng.add_input(val.name, val.type);
      raw_input[static_cast<size_t>(v)] = in;
      const ValueId c = ng.add_value(fresh(val.name + "_fp16"), narrowed(val.type));
      ng.add_node(Node{Op::CAST, "", {in}, make_attrs(Op::CAST, {}), {c}, ""});
      ++st.casts;
      map[static_cast<size_t>(v)] = c;
    } else {
      count(val.type);
      map[static_cast<size_t>(v)] = ng.add_input(val.name, narrowed(val.type));
    }
  }
  const std::set<ValueId> outputs(g.outputs().begin(), g.outputs().end());
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    const OpDef& def = op_def(n.op);
    if (n.op == Op::CUSTOM) {
      for (const auto* list : {&n.inputs, &n.outputs})
        for (ValueId v : *list)
          if (g.value(v).type.dtype == DType::kFp32)
            throw Error(ErrorCode::kUnsupported,
                        "fp16 narrowing would change the fp32 operand '" + g.value(v).name +
                            "' of a custom operator, whose shader reads and writes fp32; narrow with "
                            "--type-narrowing none, or give the operator fp16 operands",
                        {.graph = g.name(), .node = g.node_label(static_cast<int>(i))});
    }
    Node m = n;
    m.data_file.clear();
    m.inputs.clear();
    for (ValueId v : n.inputs) m.inputs.push_back(map[static_cast<size_t>(v)]);
    const bool fp32_in = !n.inputs.empty() && g.value(n.inputs[0]).type.dtype == DType::kFp32;
    for (size_t a = 0; a < def.attrs.size() && a < m.attrs.size(); ++a) {
      AttrValue& v = m.attrs[a];
      switch (def.attrs[a].kind) {
        case AttrKind::kTensor:
        case AttrKind::kScalar:
          if (std::get<Tensor>(v).dtype() != DType::kFp32) break;
          if (n.op == Op::CLAMP)
            v = to_fp16(std::get<Tensor>(v), st, kFp16MinNormal, &st.bounds_raised);
          else if (epsilons.count(static_cast<int>(i)))
            v = to_fp16(std::get<Tensor>(v), st, kFp16MinSubnormal, &st.epsilons_raised);
          else
            v = to_fp16(std::get<Tensor>(v), st);
          break;
        case AttrKind::kAccType:
          if (fp32_in && std::get<int64_t>(v) == static_cast<int64_t>(AccType::kFp32)) {
            if (fp32_accumulators && has_accumulator_choice(n.op))
              ++st.accumulators_kept;
            else
              v = static_cast<int64_t>(AccType::kFp16);
          }
          break;
        case AttrKind::kVarType:
          if (std::get<int64_t>(v) == static_cast<int64_t>(VarType::kFp32)) v = static_cast<int64_t>(VarType::kFp16);
          break;
        default:
          break;
      }
    }
    m.outputs.clear();
    for (ValueId o : n.outputs) {
      const Value& val = g.value(o);
      const bool keep = keep_io && outputs.count(o) && val.type.dtype == DType::kFp32;
      count(val.type);
      const ValueId id = ng.add_value(keep ? fresh(val.name + "_fp16") : val.name, narrowed(val.type));
      map[static_cast<size_t>(o)] = id;
      m.outputs.push_back(id);
    }
    if (n.op == Op::CAST && ng.value(m.inputs[0]).type.dtype == ng.value(m.outputs[0]).type.dtype) {
      m.op = Op::IDENTITY;
      m.attrs = make_attrs(Op::IDENTITY, {});
    }
    ng.add_node(std::move(m));
  }
  std::map<ValueId, ValueId> cast_of;
  for (ValueId o : g.outputs()) {
    const Value& val = g.value(o);
    if (raw_input[static_cast<size_t>(o)] != kNoValue) {  // an input returned as it came
      ng.add_output(raw_input[static_cast<size_t>(o)]);
    } else if (keep_io && val.type.dtype == DType::kFp32) {
      auto it = cast_of.find(o);
      if (it == cast_of.end()) {
        const ValueId out = ng.add_value(val.name, val.type);
        ng.add_node(Node{Op::CAST, "", {map[static_cast<size_t>(o)]}, make_attrs(Op::CAST, {}), {out}, ""});
        ++st.casts;
        it = cast_of.emplace(o, out).first;
      }
      ng.add_output(it->second);
    } else {
      ng.add_output(map[static_cast<size_t>(o)]);
    }
  }
  return ng;
}

}  // namespace

std::string narrow_summary(const NarrowStats& st) {
  return std::to_string(st.values) + " fp32 tensors, " + std::to_string(st.constant_elements) + " constant elements (" +
         std::to_string(st.saturated) + " saturated to +-65504), " +
         (st.bounds_raised ? std::to_string(st.bounds_raised) + " CLAMP bounds below fp16's normal range raised to +-2^-14, " : "") +
         (st.epsilons_raised ? std::to_string(st.epsilons_raised) + " epsilons before an RSQRT below fp16's range raised to +-2^-24, " : "") +
         std::to_string(st.accumulators_kept) +
         " fp32 accumulators kept, " + std::to_string(st.casts) + " casts at the inputs and outputs";
}

NarrowStats narrow_fp32_to_fp16(Module& m, Narrowing mode) {
  if (mode == Narrowing::kNone) return {};
  return narrow_fp32_to_fp16(m, mode == Narrowing::kPartial, mode == Narrowing::kFullPreserveIo);
}

NarrowStats narrow_fp32_to_fp16(Module& m, bool fp32_accumulators, bool preserve_io) {
  NarrowStats st;
  Module out = m;
  for (Graph& g : out.graphs()) g = narrow_graph(g, fp32_accumulators, preserve_io, g.name() == out.entry(), st);
  verify_or_throw(out);
  m = std::move(out);
  return st;
}

}  // namespace weft::compiler
