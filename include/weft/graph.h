// Weft's graph IR: a module of named graphs; each graph holds values (typed tensors or shapes),
// nodes (TOSA operators in topological order), named inputs and outputs. Constants are CONST /
// CONST_SHAPE nodes whose data is a shared Buffer, so large weights are never copied.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "weft/error.h"
#include "weft/ops.h"
#include "weft/tensor.h"

namespace weft {

using ValueId = int32_t;
inline constexpr ValueId kNoValue = -1;

// Attribute value. Which alternative is used follows AttrDef::kind:
//  kBool -> bool; kInt, enums -> int64_t; kIntList, kShapeValues -> std::vector<int64_t>;
//  kString, kGraph -> std::string; kScalar (rank 0), kTensor -> Tensor.
using AttrValue = std::variant<bool, int64_t, std::vector<int64_t>, std::string, Tensor>;
// Same alternative and value (tensors: same type and bytes).
bool same_attr(const AttrValue& a, const AttrValue& b);

struct Value {
  std::string name;  // unique within its graph, without the '%' sigil
  TensorType type;   // dtype kShape + shape {n} for shape_t values
  int producer = -1; // index of the producing node, -1 for graph inputs
  int producer_output = 0;
};

struct Node {
  Op op;
  std::string name;               // optional label; errors fall back to the first output's name
  std::vector<ValueId> inputs;    // in OpDef::inputs order, a tensor list flattened at the end
  std::vector<AttrValue> attrs;   // exactly OpDef::attrs.size() entries, in that order
  std::vector<ValueId> outputs;   // in OpDef::outputs order, a tensor list flattened at the end
  // CONST only: the .npy file its values were read from, relative to the .weft file ("" = inline).
  // Printers keep referring to it so that formatting a model does not rewrite its weights.
  std::string data_file;

  // Typed attribute access by name (throws Error(kInternal) if the op has no such attribute or
  // the stored alternative is wrong).
  const AttrValue& attr(std::string_view name) const;
  bool attr_bool(std::string_view name) const;
  int64_t attr_int(std::string_view name) const;
  const std::vector<int64_t>& attr_ints(std::string_view name) const;
  const std::string& attr_str(std::string_view name) const;
  const Tensor& attr_tensor(std::string_view name) const;
};

class Graph {
 public:
  explicit Graph(std::string name = "main") : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }

  const std::vector<Value>& values() const { return values_; }
  const Value& value(ValueId id) const { return values_.at(static_cast<size_t>(id)); }
  Value& mutable_value(ValueId id) { return values_.at(static_cast<size_t>(id)); }
  const std::vector<Node>& nodes() const { return nodes_; }
  const Node& node(int i) const { return nodes_.at(static_cast<size_t>(i)); }
  Node& mutable_node(int i) { return nodes_.at(static_cast<size_t>(i)); }
  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }

  std::optional<ValueId> find_value(std::string_view name) const;
  ValueId value_id(std::string_view name) const;  // throws Error(kNotFound)
  // Label for diagnostics: node.name, else its first output's name, else "#<index>".
  std::string node_label(int node_index) const;

  // ---- Low-level construction (the GraphBuilder and parsers use these) ----
  // Adds a value; throws Error(kInvalidArgument) if the name is empty or taken.
  ValueId add_value(std::string name, TensorType type);
  ValueId add_input(std::string name, TensorType type);
  // Appends a node; its outputs must be values with no producer yet. Returns the node index.
  int add_node(Node node);
  void add_output(ValueId id);
  void set_outputs(std::vector<ValueId> ids) { outputs_ = std::move(ids); }
  // Rename a value (keeps the name index consistent). Throws if taken.
  void rename_value(ValueId id, std::string new_name);
  // A fresh name "<base>", "<base>_1", ... not used yet (not reserved: add the value to take it).
  // Not const: it keeps a per-base hint of the next suffix to try.
  std::string unique_name(std::string_view base);

  // Sum of bytes held by CONST nodes.
  size_t constant_bytes() const;

 private:
  std::string name_;
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<ValueId> inputs_;
  std::vector<ValueId> outputs_;
  std::unordered_map<std::string, ValueId> by_name_;
  // unique_name's next suffix to try per base name (a hint: names are still checked), so that an
  // importer naming thousands of values after one node does not probe _1, _2, ... each time.
  std::unordered_map<std::string, int> next_suffix_;
};

// A TOSA module: graphs by name. The entry graph is "main" unless set otherwise.
class Module {
 public:
  Module() = default;
  explicit Module(Graph main);

  std::vector<Graph>& graphs() { return graphs_; }
  const std::vector<Graph>& graphs() const { return graphs_; }
  const Graph& main() const;  // throws Error(kNotFound) if there is no entry graph
  Graph& main();
  const std::string& entry() const { return entry_; }
  void set_entry(std::string name) { entry_ = std::move(name); }
  const Graph* find_graph(std::string_view name) const;
  Graph& add_graph(Graph g);  // throws on duplicate names

  // Profiles the module claims (verification checks each node's types against them).
  ProfileSet profiles() const { return profiles_; }
  void set_profiles(ProfileSet p) { profiles_ = p; }

  // What a frontend changed in the model's meaning that a user must know (e.g. float64 narrowed
  // to float32); Model::explain prints them. Not written to model files.
  const std::vector<std::string>& notes() const { return notes_; }
  void add_note(std::string note) { notes_.push_back(std::move(note)); }

 private:
  std::vector<Graph> graphs_;
  std::string entry_ = "main";
  ProfileSet profiles_ = kAllProfiles;
  std::vector<std::string> notes_;
};

// Named attributes for the builder; unspecified attributes take their defaults
// (nan_mode = PROPAGATE, local_bound = false, rounding_mode = SINGLE_ROUND, booleans false);
// others are required.
using Attrs = std::vector<std::pair<std::string, AttrValue>>;

// Convenience builder. Output types are inferred by the verifier's rules unless given.
class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name = "main") : graph_(std::move(name)) {}

  ValueId input(std::string name, TensorType type);
  ValueId constant(std::string name, Tensor values);                   // CONST
  ValueId constant_shape(std::string name, std::vector<int64_t> dims);  // CONST_SHAPE
  // Adds a node with a single output named `out_name` ("" = generated); returns that output.
  ValueId op(Op op, std::vector<ValueId> inputs, Attrs attrs = {}, std::string out_name = "");
  // General form: explicit output names and (optionally) types; returns all outputs.
  std::vector<ValueId> op_multi(Op op, std::vector<ValueId> inputs, Attrs attrs,
                                std::vector<std::string> out_names,
                                std::vector<TensorType> out_types = {});
  void output(ValueId v);
  const Graph& graph() const { return graph_; }
  Graph& graph() { return graph_; }
  // Sub-graphs referenced by COND_IF / WHILE_LOOP must be in the module for inference; set it here.
  void set_module(const Module* m) { module_ = m; }
  Graph finish() { return std::move(graph_); }

 private:
  Graph graph_;
  const Module* module_ = nullptr;
};

// Builds the positional attribute vector of `op` from named attributes, applying defaults.
// Throws Error(kInvalidArgument) naming the attribute for unknown names, wrong kinds or missing
// required ones.
std::vector<AttrValue> make_attrs(Op op, const Attrs& named);

}  // namespace weft
