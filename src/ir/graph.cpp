#include "weft/graph.h"

#include "weft/verify.h"

namespace weft {

namespace {
const AttrValue& node_attr(const Node& n, std::string_view name) {
  const OpDef& d = op_def(n.op);
  int i = d.attr_index(name);
  if (i < 0 || static_cast<size_t>(i) >= n.attrs.size()) {
    throw Error(ErrorCode::kInternal, std::string(d.name) + " has no attribute '" + std::string(name) + "'",
                {.node = n.name, .operand = std::string(name)});
  }
  return n.attrs[static_cast<size_t>(i)];
}

template <class T>
const T& get_alt(const Node& n, std::string_view name) {
  const AttrValue& v = node_attr(n, name);
  if (const T* p = std::get_if<T>(&v)) return *p;
  throw Error(ErrorCode::kInternal, "attribute '" + std::string(name) + "' holds another kind of value",
              {.node = n.name, .operand = std::string(name)});
}
}  // namespace

const AttrValue& Node::attr(std::string_view n) const { return node_attr(*this, n); }
bool Node::attr_bool(std::string_view n) const { return get_alt<bool>(*this, n); }
int64_t Node::attr_int(std::string_view n) const { return get_alt<int64_t>(*this, n); }
const std::vector<int64_t>& Node::attr_ints(std::string_view n) const { return get_alt<std::vector<int64_t>>(*this, n); }
const std::string& Node::attr_str(std::string_view n) const { return get_alt<std::string>(*this, n); }
const Tensor& Node::attr_tensor(std::string_view n) const { return get_alt<Tensor>(*this, n); }

std::optional<ValueId> Graph::find_value(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

ValueId Graph::value_id(std::string_view name) const {
  auto v = find_value(name);
  if (!v) throw Error(ErrorCode::kNotFound, "no value named '%" + std::string(name) + "'", {.graph = name_});
  return *v;
}

std::string Graph::node_label(int i) const {
  const Node& n = node(i);
  if (!n.name.empty()) return n.name;
  if (!n.outputs.empty() && n.outputs[0] >= 0 && static_cast<size_t>(n.outputs[0]) < values_.size()) {
    return "%" + values_[static_cast<size_t>(n.outputs[0])].name;
  }
  return "#" + std::to_string(i) + " " + op_name(n.op);
}

ValueId Graph::add_value(std::string name, TensorType type) {
  if (name.empty()) throw Error(ErrorCode::kInvalidArgument, "value names must not be empty", {.graph = name_});
  if (by_name_.count(name)) {
    throw Error(ErrorCode::kInvalidArgument, "value '%" + name + "' is defined twice", {.graph = name_});
  }
  auto id = static_cast<ValueId>(values_.size());
  by_name_.emplace(name, id);
  values_.push_back(Value{std::move(name), std::move(type), -1, 0});
  return id;
}

ValueId Graph::add_input(std::string name, TensorType type) {
  ValueId id = add_value(std::move(name), std::move(type));
  inputs_.push_back(id);
  return id;
}

int Graph::add_node(Node node) {
  auto index = static_cast<int>(nodes_.size());
  for (ValueId v : node.inputs) {
    if (v < 0 || static_cast<size_t>(v) >= values_.size()) {
      throw Error(ErrorCode::kInvalidArgument, "node input refers to an unknown value id " + std::to_string(v),
                  {.graph = name_, .node = node.name});
    }
  }
  for (size_t k = 0; k < node.outputs.size(); ++k) {
    ValueId v = node.outputs[k];
    if (v < 0 || static_cast<size_t>(v) >= values_.size()) {
      throw Error(ErrorCode::kInvalidArgument, "node output refers to an unknown value id " + std::to_string(v),
                  {.graph = name_, .node = node.name});
    }
    Value& val = values_[static_cast<size_t>(v)];
    bool is_input = false;
    for (ValueId in : inputs_) is_input |= in == v;
    if (val.producer >= 0 || is_input) {
      throw Error(ErrorCode::kInvalidArgument, "value '%" + val.name + "' is defined twice",
                  {.graph = name_, .node = node.name});
    }
  }
  for (size_t k = 0; k < node.outputs.size(); ++k) {
    Value& val = values_[static_cast<size_t>(node.outputs[k])];
    val.producer = index;
    val.producer_output = static_cast<int>(k);
  }
  nodes_.push_back(std::move(node));
  return index;
}

void Graph::add_output(ValueId id) {
  if (id < 0 || static_cast<size_t>(id) >= values_.size()) {
    throw Error(ErrorCode::kInvalidArgument, "graph output refers to an unknown value id", {.graph = name_});
  }
  outputs_.push_back(id);
}

void Graph::rename_value(ValueId id, std::string new_name) {
  Value& v = values_.at(static_cast<size_t>(id));
  if (v.name == new_name) return;
  if (new_name.empty() || by_name_.count(new_name)) {
    throw Error(ErrorCode::kInvalidArgument, "cannot rename '%" + v.name + "' to '%" + new_name + "': name taken or empty",
                {.graph = name_});
  }
  by_name_.erase(v.name);
  by_name_.emplace(new_name, id);
  v.name = std::move(new_name);
}

std::string Graph::unique_name(std::string_view base) {
  std::string b = base.empty() ? std::string("v") : std::string(base);
  if (!by_name_.count(b)) return b;
  int& next = next_suffix_[b];
  for (int i = std::max(next, 1);; ++i) {
    std::string c = b + "_" + std::to_string(i);
    if (!by_name_.count(c)) {
      next = i;  // (taken once the caller adds it; if not, the next call returns it again)
      return c;
    }
  }
}

size_t Graph::constant_bytes() const {
  size_t total = 0;
  for (const Node& n : nodes_) {
    if (n.op == Op::CONST) {
      if (const Tensor* t = std::get_if<Tensor>(&n.attrs.at(0))) total += t->byte_size();
    }
  }
  return total;
}

Module::Module(Graph main) {
  entry_ = main.name();
  graphs_.push_back(std::move(main));
}

const Graph* Module::find_graph(std::string_view name) const {
  for (const Graph& g : graphs_) {
    if (g.name() == name) return &g;
  }
  return nullptr;
}

const Graph& Module::main() const {
  const Graph* g = find_graph(entry_);
  if (!g) throw Error(ErrorCode::kNotFound, "module has no entry graph '" + entry_ + "'");
  return *g;
}

Graph& Module::main() { return const_cast<Graph&>(static_cast<const Module*>(this)->main()); }

Graph& Module::add_graph(Graph g) {
  if (find_graph(g.name())) throw Error(ErrorCode::kInvalidArgument, "graph '" + g.name() + "' is defined twice");
  graphs_.push_back(std::move(g));
  return graphs_.back();
}

std::vector<AttrValue> make_attrs(Op op, const Attrs& named) {
  const OpDef& d = op_def(op);
  std::vector<std::optional<AttrValue>> slots(d.attrs.size());
  for (const auto& [name, value] : named) {
    int i = d.attr_index(name);
    if (i < 0) {
      throw Error(ErrorCode::kInvalidArgument, std::string(d.name) + " has no attribute '" + name + "'",
                  {.operand = name});
    }
    if (slots[static_cast<size_t>(i)]) {
      throw Error(ErrorCode::kInvalidArgument, "attribute '" + name + "' given twice", {.operand = name});
    }
    slots[static_cast<size_t>(i)] = value;
  }
  std::vector<AttrValue> out;
  out.reserve(slots.size());
  for (size_t i = 0; i < slots.size(); ++i) {
    const AttrDef& a = d.attrs[i];
    if (slots[i]) {
      out.push_back(std::move(*slots[i]));
      continue;
    }
    switch (a.kind) {
      case AttrKind::kNanMode: out.emplace_back(static_cast<int64_t>(NanMode::kPropagate)); break;
      case AttrKind::kRoundingMode: out.emplace_back(static_cast<int64_t>(RoundingMode::kSingle)); break;
      case AttrKind::kBool: out.emplace_back(false); break;
      default:
        throw Error(ErrorCode::kInvalidArgument,
                    std::string(d.name) + " requires attribute '" + a.name + "'", {.operand = a.name});
    }
  }
  return out;
}

ValueId GraphBuilder::input(std::string name, TensorType type) { return graph_.add_input(std::move(name), std::move(type)); }

ValueId GraphBuilder::constant(std::string name, Tensor values) {
  TensorType t = values.type();
  auto outs = op_multi(Op::CONST, {}, {{"values", std::move(values)}}, {std::move(name)}, {t});
  return outs[0];
}

ValueId GraphBuilder::constant_shape(std::string name, std::vector<int64_t> dims) {
  TensorType t{DType::kShape, {static_cast<int64_t>(dims.size())}};
  auto outs = op_multi(Op::CONST_SHAPE, {}, {{"values", std::move(dims)}}, {std::move(name)}, {t});
  return outs[0];
}

ValueId GraphBuilder::op(Op o, std::vector<ValueId> inputs, Attrs attrs, std::string out_name) {
  auto outs = op_multi(o, std::move(inputs), std::move(attrs), {std::move(out_name)});
  return outs.at(0);
}

std::vector<ValueId> GraphBuilder::op_multi(Op o, std::vector<ValueId> inputs, Attrs attrs,
                                            std::vector<std::string> out_names, std::vector<TensorType> out_types) {
  Node n;
  n.op = o;
  n.inputs = std::move(inputs);
  n.attrs = make_attrs(o, attrs);
  if (out_types.empty()) out_types = infer_output_types(graph_, n, module_);
  if (out_names.size() < out_types.size()) out_names.resize(out_types.size());
  std::vector<ValueId> outs;
  for (size_t i = 0; i < out_types.size(); ++i) {
    std::string nm = out_names[i].empty() ? graph_.unique_name(std::string("t") + std::to_string(graph_.values().size()))
                                          : out_names[i];
    outs.push_back(graph_.add_value(nm, out_types[i]));
  }
  n.outputs = outs;
  graph_.add_node(std::move(n));
  return outs;
}

void GraphBuilder::output(ValueId v) { graph_.add_output(v); }

bool same_attr(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  return std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Tensor>) {
          return x.identical(std::get<Tensor>(b));
        } else {
          return x == std::get<T>(b);
        }
      },
      a);
}

}  // namespace weft
