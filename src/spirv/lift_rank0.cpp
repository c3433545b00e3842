// Lifting rank-0 tensors to shape [1] before SPIR-V encoding (lift_rank0.h).
#include "spirv/lift_rank0.h"

#include <algorithm>
#include <cstring>

#include "weft/verify.h"

namespace weft::spirv {
namespace {

bool is_scalar_tensor(const TensorType& t) { return t.rank() == 0 && t.dtype != DType::kShape; }

bool has_rank0(const Graph& g) {
  return std::any_of(g.values().begin(), g.values().end(), [](const Value& v) { return is_scalar_tensor(v.type); });
}

TensorType lifted(TensorType t) {
  if (is_scalar_tensor(t)) t.shape = {1};
  return t;
}

// A copy of `t` of shape [1] sharing its bytes.
Tensor lifted(const Tensor& t) { return Tensor(lifted(t.type()), t.buffer()); }

class Lifter {
 public:
  explicit Lifter(const Graph& g) : old_(g), new_(g.name()), map_(g.values().size(), kNoValue) {}

  Graph run() {
    for (ValueId in : old_.inputs()) map_[static_cast<size_t>(in)] = new_.add_input(old_.value(in).name, lifted(old_.value(in).type));
    for (size_t i = 0; i < old_.nodes().size(); ++i) node(static_cast<int>(i));
    for (ValueId out : old_.outputs()) new_.add_output(map_.at(static_cast<size_t>(out)));
    return std::move(new_);
  }

 private:
  ValueId mapped(ValueId v) {
    ValueId& m = map_.at(static_cast<size_t>(v));
    if (m == kNoValue) m = shape_const(old_.value(v).name, {});  // an empty shape still in use
    return m;
  }

  // A new node with one output (inserted before the one being copied).
  ValueId add(Op op, std::vector<ValueId> inputs, std::vector<AttrValue> attrs, const std::string& base, TensorType t) {
    Node n;
    n.op = op;
    n.inputs = std::move(inputs);
    n.attrs = std::move(attrs);
    ValueId out = new_.add_value(new_.unique_name(base), std::move(t));
    n.outputs = {out};
    new_.add_node(std::move(n));
    return out;
  }

  ValueId shape_const(const std::string& base, std::vector<int64_t> dims) {
    TensorType t{DType::kShape, {static_cast<int64_t>(dims.size())}};
    return add(Op::CONST_SHAPE, {}, {std::move(dims)}, base, t);
  }

  void node(int index) {
    const Node& n = old_.node(index);
    // Empty shapes (RESHAPE to []) are replaced by [1]: made again only if something else uses them.
    if (n.op == Op::CONST_SHAPE && n.attr_ints("values").empty()) return;
    Node copy = n;
    bool scalar_out = std::any_of(n.outputs.begin(), n.outputs.end(),
                                  [&](ValueId v) { return is_scalar_tensor(old_.value(v).type); });
    for (size_t k = 0; k < copy.inputs.size(); ++k) {
      if (scalar_out && n.op == Op::RESHAPE && k == 1) continue;  // replaced below
      copy.inputs[k] = mapped(copy.inputs[k]);
    }
    if (scalar_out) {
      bool scalar_in = std::all_of(n.inputs.begin(), n.inputs.end(), [&](ValueId v) {
        const TensorType& t = old_.value(v).type;
        return is_scalar_tensor(t) || t.dtype == DType::kShape || t.shape == Shape{1};
      });
      const std::string label = old_.node_label(index);
      switch (n.op) {
        case Op::CONST:
          copy.attrs[0] = lifted(n.attr_tensor("values"));
          break;
        case Op::RESHAPE:  // to []: to [1]
          copy.inputs[1] = shape_const(label + "_shape_rank1", {1});
          break;
        case Op::ARGMAX: {  // [N] -> []: [1, N] -> [1] along axis 1
          const TensorType& in = old_.value(n.inputs[0]).type;
          TensorType wide{in.dtype, {1, in.shape.at(0)}};
          ValueId shape = shape_const(label + "_shape_rank2", {1, in.shape[0]});
          copy.inputs[0] = add(Op::RESHAPE, {copy.inputs[0], shape}, {}, label + "_rank2", wide);
          copy.attrs[0] = int64_t{1};
          break;
        }
        default:
          if (!scalar_in) {
            throw Error(ErrorCode::kUnsupported,
                        std::string(op_name(n.op)) +
                            " has a rank-0 result from inputs of higher rank: SPIR-V tensors have Rank > 0 and "
                            "Weft lifts rank-0 values to [1] only where an operator's meaning allows it",
                        Location{.graph = old_.name(), .node = label});
          }
          break;  // element-wise on scalars: the same operator on [1]
      }
    }
    for (ValueId& out : copy.outputs) {
      const Value& v = old_.value(out);
      ValueId id = new_.add_value(v.name, lifted(v.type));
      map_[static_cast<size_t>(out)] = id;
      out = id;
    }
    new_.add_node(std::move(copy));
  }

  const Graph& old_;
  Graph new_;
  std::vector<ValueId> map_;
};

}  // namespace

std::optional<Module> lift_rank0(const Module& module) {
  if (std::none_of(module.graphs().begin(), module.graphs().end(), has_rank0)) return std::nullopt;
  Module out = module;
  for (Graph& g : out.graphs()) {
    if (has_rank0(g)) g = Lifter(g).run();
  }
  try {
    verify_or_throw(out);
  } catch (const Error& e) {
    throw Error(ErrorCode::kUnsupported,
                "the module's rank-0 tensors cannot be written to SPIR-V (Rank > 0) by lifting them to [1]: " +
                    e.message(),
                e.location());
  }
  return out;
}

}  // namespace weft::spirv
