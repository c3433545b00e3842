// Verification of TOSA modules: graph structure (verify_module) and per-node rules (verify_node).
//
// verify_node is driven by the operator table (op_table.cpp): operand counts and kinds, ranks,
// attribute kinds and values and the allowed type combinations per profile all come from
// op_def(node.op). The per-operator shape rules and ERROR_IF conditions live in infer.cpp
// (infer_output_types); verify_node calls it and compares its answer with the declared outputs.
#include "weft/verify.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace weft {

namespace {

// Level 8K limits of the TOSA 1.0 specification (tosa.xml <levels>).
constexpr int kMaxNesting = 6;
constexpr size_t kMaxTensorListSize = 64;

bool valid_id(const Graph& g, ValueId v) { return v >= 0 && static_cast<size_t>(v) < g.values().size(); }

std::string value_ref(const Graph& g, ValueId v) {
  if (!valid_id(g, v)) return "<invalid value id " + std::to_string(v) + ">";
  return "'%" + g.value(v).name + "'";
}

int resolve_rank_bound(int8_t b) {
  if (b == kRankMax) return kMaxRank;
  if (b == kRankMaxMinus1) return kMaxRank - 1;
  return b;
}

// What an attribute of kind `k` must hold (the AttrValue alternative index) and its description.
size_t expected_alternative(AttrKind k) {
  switch (k) {
    case AttrKind::kBool: return 0;
    case AttrKind::kInt:
    case AttrKind::kAccType:
    case AttrKind::kNanMode:
    case AttrKind::kResizeMode:
    case AttrKind::kRoundingMode:
    case AttrKind::kVarType: return 1;
    case AttrKind::kIntList:
    case AttrKind::kShapeValues: return 2;
    case AttrKind::kString:
    case AttrKind::kGraph: return 3;
    case AttrKind::kScalar:
    case AttrKind::kTensor: return 4;
  }
  return 0;
}

const char* attr_kind_desc(AttrKind k) {
  switch (k) {
    case AttrKind::kInt: return "an i32_t value";
    case AttrKind::kBool: return "a bool_t value";
    case AttrKind::kIntList: return "a list of i32_t values";
    case AttrKind::kAccType: return "an acc_type_t value";
    case AttrKind::kNanMode: return "a nan_propagation_mode_t value";
    case AttrKind::kResizeMode: return "a resize_mode_t value";
    case AttrKind::kRoundingMode: return "a rounding_mode_t value";
    case AttrKind::kVarType: return "a var_t value";
    case AttrKind::kScalar: return "a scalar (rank-0 tensor)";
    case AttrKind::kTensor: return "a tensor";
    case AttrKind::kShapeValues: return "a list of shape_t values";
    case AttrKind::kString: return "a string";
    case AttrKind::kGraph: return "a graph name";
  }
  return "?";
}

const char* alternative_desc(const AttrValue& v) {
  switch (v.index()) {
    case 0: return "a bool";
    case 1: return "an integer";
    case 2: return "an integer list";
    case 3: return "a string";
    case 4: return "a tensor";
  }
  return "?";
}

// "1 input", "2 inputs".
std::string count_str(size_t n, const char* noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string r;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) r += sep;
    r += parts[i];
  }
  return r;
}

// "PRO-INT or EXT-INT16"; "" when the row needs nothing.
std::string requirement_str(const TypeSupport& row) {
  std::vector<std::string> alts;
  for (ProfileSet alt : row.any_of) {
    if (alt == 0) break;
    alts.push_back(profile_set_str(alt));
  }
  return join(alts, " or ");
}

bool row_enabled(const TypeSupport& row, ProfileSet profiles) {
  if (row.any_of[0] == 0) return true;  // no requirement
  for (ProfileSet alt : row.any_of) {
    if (alt == 0) break;
    if ((alt & ~profiles) == 0) return true;
  }
  return false;
}

// Collects the diagnostics of one node with its location filled in.
class NodeReporter {
 public:
  NodeReporter(const Graph& g, int index, std::vector<Error>& errors)
      : g_(g), index_(index), def_(op_def(g.node(index).op)), errors_(errors), start_(errors.size()) {}

  void add(const std::string& operand, const std::string& message) {
    errors_.push_back(Error(ErrorCode::kVerify, std::string(def_.name) + ": " + message,
                            Location{.graph = g_.name(), .node = g_.node_label(index_), .operand = operand}));
  }
  void add_error(const Error& e) {
    errors_.push_back(e.with_context(Location{.graph = g_.name(), .node = g_.node_label(index_)}));
  }
  size_t count() const { return errors_.size() - start_; }

 private:
  const Graph& g_;
  int index_;
  const OpDef& def_;
  std::vector<Error>& errors_;
  size_t start_;
};

// Maps operand positions of a node to the ArgDef they instantiate (a tensor list covers all the
// trailing positions) and names them for messages: "input", "input_list[2]".
struct OperandMap {
  std::span<const ArgDef> defs;
  size_t fixed = 0;  // number of non-list operands
  bool has_list = false;

  explicit OperandMap(std::span<const ArgDef> d) : defs(d) {
    has_list = !d.empty() && d.back().kind == ArgKind::kTensorList;
    fixed = d.size() - (has_list ? 1 : 0);
  }
  const ArgDef& def(size_t pos) const { return pos < fixed ? defs[pos] : defs.back(); }
  std::string name(size_t pos) const {
    if (pos < fixed) return defs[pos].name;
    if (!has_list) return "#" + std::to_string(pos);  // beyond the operator's operands
    return std::string(defs.back().name) + "[" + std::to_string(pos - fixed) + "]";
  }
};

// ---- Step 1: operand counts and kinds. Returns false when later checks would be meaningless. ----
bool check_counts_and_kinds(const Graph& g, const Node& n, const OpDef& d, NodeReporter& rep) {
  size_t before = rep.count();
  auto check_count = [&](const OperandMap& m, size_t got, const char* what) {
    std::vector<std::string> names;
    for (size_t i = 0; i < m.fixed; ++i) names.push_back(m.defs[i].name);
    std::string fixed = count_str(m.fixed, what) + (names.empty() ? "" : " (" + join(names, ", ") + ")");
    if (!m.has_list) {
      if (got != m.fixed) rep.add("", "expects " + fixed + ", got " + std::to_string(got));
      return;
    }
    // CONCAT concatenates at least one tensor; the other lists (CUSTOM, control flow) may be empty.
    size_t min_list = n.op == Op::CONCAT ? 1 : 0;
    const char* list_name = m.defs.back().name;
    if (got < m.fixed + min_list) {
      std::string list = "at least " + count_str(min_list, "tensor") + " in list '" + list_name + "'";
      rep.add(list_name, "expects " + (m.fixed ? fixed + " followed by " + list : list) + ", got " +
                             count_str(got, what));
    } else if (got - m.fixed > kMaxTensorListSize) {
      rep.add(list_name, "tensor list '" + std::string(list_name) + "' has " + std::to_string(got - m.fixed) +
                             " entries; level 8K allows at most " + std::to_string(kMaxTensorListSize) +
                             " (MAX_TENSOR_LIST_SIZE)");
    }
  };
  OperandMap in(d.inputs), out(d.outputs);
  check_count(in, n.inputs.size(), "input");
  check_count(out, n.outputs.size(), "output");

  if (rep.count() != before) return false;
  // Ids outside the graph make every later check meaningless (verify_module reports them too).
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (!valid_id(g, n.inputs[i])) {
      rep.add(in.name(i),
              "input '" + in.name(i) + "' refers to an unknown value id " + std::to_string(n.inputs[i]));
    }
  }
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    if (!valid_id(g, n.outputs[i])) {
      rep.add(out.name(i),
              "output '" + out.name(i) + "' refers to an unknown value id " + std::to_string(n.outputs[i]));
    }
  }
  if (rep.count() != before) return false;

  auto check_kind = [&](const OperandMap& m, const std::vector<ValueId>& ids, bool is_input) {
    for (size_t i = 0; i < ids.size(); ++i) {
      const ArgDef& a = m.def(i);
      const Value& v = g.value(ids[i]);
      std::string nm = m.name(i);
      if (a.kind == ArgKind::kShape) {
        if (v.type.dtype != DType::kShape) {
          rep.add(nm, "operand '" + nm + "' must be a shape_t value, got tensor " + value_ref(g, ids[i]) +
                          " of type " + v.type.str());
        } else if (is_input && !constant_shape_value(g, ids[i])) {
          // TOSA 1.0 has no shape arithmetic: shape operands are compile-time constants, and the
          // shape rules need their values.
          rep.add(nm, "shape operand '" + nm + "' (" + value_ref(g, ids[i]) +
                          ") must be produced by CONST_SHAPE so that its value is known");
        }
      } else if (v.type.dtype == DType::kShape) {
        rep.add(nm, "operand '" + nm + "' must be a tensor, got shape_t value " + value_ref(g, ids[i]));
      }
    }
  };
  check_kind(in, n.inputs, true);
  check_kind(out, n.outputs, false);
  return rep.count() == before;
}

// ---- Step 2: ranks and dimensions of inputs and outputs. ----
void check_ranks(const Graph& g, const Node& n, const OpDef& d, NodeReporter& rep) {
  auto check = [&](const OperandMap& m, const std::vector<ValueId>& ids) {
    for (size_t i = 0; i < ids.size(); ++i) {
      const ArgDef& a = m.def(i);
      const TensorType& t = g.value(ids[i]).type;
      std::string nm = m.name(i);
      int lo = 0;
      int hi = kMaxRank;  // every tensor of a level-8K network is bounded by MAX_RANK
      if (a.min_rank != kRankAny) lo = resolve_rank_bound(a.min_rank);
      if (a.max_rank != kRankAny) hi = resolve_rank_bound(a.max_rank);
      if (a.kind == ArgKind::kShape || t.dtype == DType::kShape) {
        // shape_t values are one-dimensional lists of their components.
        if (t.rank() != 1) {
          rep.add(nm, "shape_t operand '" + nm + "' must have a type of rank 1 (its length), got " + t.str());
        }
        continue;
      }
      if (t.rank() < lo || t.rank() > hi) {
        std::string bound =
            lo == hi ? std::to_string(lo) : "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
        std::string expr = *a.shape ? std::string(" ") + a.shape : std::string();
        rep.add(nm, "rank of '" + nm + "'" + expr + " must be " + bound + ", got " +
                        std::to_string(t.rank()) + " (" + t.str() + ")");
      }
      for (size_t k = 0; k < t.shape.size(); ++k) {
        if (t.shape[k] < 0) {
          rep.add(nm, "dimension " + std::to_string(k) + " of '" + nm + "' is negative (" + t.str() + ")");
          break;
        }
      }
    }
  };
  check(OperandMap(d.inputs), n.inputs);
  check(OperandMap(d.outputs), n.outputs);
}

// Type variable bindings of one node: index into OpDef::type_vars -> type, and where it came from.
struct Bindings {
  std::vector<std::optional<DType>> type;
  std::vector<std::string> source;
  bool conflict = false;
};

// ---- Step 3: attributes. `b` is used to check kScalar/kTensor element types. ----
// Returns false when the attribute vector cannot be read positionally.
bool check_attrs(const Module* module, const Graph& g, const Node& n, const OpDef& d, const Bindings& b,
                 NodeReporter& rep) {
  if (n.attrs.size() != d.attrs.size()) {
    std::vector<std::string> names;
    for (const AttrDef& a : d.attrs) names.push_back(a.name);
    rep.add("", "expects " + std::to_string(d.attrs.size()) + " attributes" +
                    (names.empty() ? "" : " (" + join(names, ", ") + ")") + ", got " +
                    std::to_string(n.attrs.size()));
    return false;
  }
  bool readable = true;
  for (size_t i = 0; i < d.attrs.size(); ++i) {
    const AttrDef& a = d.attrs[i];
    const AttrValue& v = n.attrs[i];
    std::string nm = a.name;
    if (v.index() != expected_alternative(a.kind)) {
      rep.add(nm,
              "attribute '" + nm + "' must be " + attr_kind_desc(a.kind) + ", got " + alternative_desc(v));
      readable = false;
      continue;
    }
    switch (a.kind) {
      case AttrKind::kInt: {
        int64_t x = std::get<int64_t>(v);
        if (x < INT32_MIN || x > INT32_MAX) {
          rep.add(nm, "attribute '" + nm + "' value " + std::to_string(x) + " does not fit in i32_t");
        }
        break;
      }
      case AttrKind::kIntList: {
        const auto& list = std::get<std::vector<int64_t>>(v);
        int expected = a.length;
        std::string why;
        if (a.length == kLenRankOfInput0) {
          expected = -1;
          if (!n.inputs.empty() && valid_id(g, n.inputs[0])) {
            expected = g.value(n.inputs[0]).type.rank();
            why = " (the rank of '" + std::string(d.inputs.empty() ? "input" : d.inputs[0].name) + "')";
          }
        }
        if (expected >= 0 && list.size() != static_cast<size_t>(expected)) {
          rep.add(nm, "attribute '" + nm + "' must have " + std::to_string(expected) + " entries" + why +
                          ", got " + std::to_string(list.size()));
        }
        for (int64_t x : list) {
          if (x < INT32_MIN || x > INT32_MAX) {
            rep.add(nm, "attribute '" + nm + "' entry " + std::to_string(x) + " does not fit in i32_t");
            break;
          }
        }
        break;
      }
      case AttrKind::kAccType:
      case AttrKind::kNanMode:
      case AttrKind::kResizeMode:
      case AttrKind::kRoundingMode:
      case AttrKind::kVarType: {
        int64_t x = std::get<int64_t>(v);
        if (enum_value_name(a.kind, x) == nullptr) {
          std::vector<std::string> valid;
          for (int64_t e = 1; enum_value_name(a.kind, e) != nullptr; ++e) {
            valid.push_back(std::to_string(e) + " " + enum_value_name(a.kind, e));
          }
          rep.add(nm, "attribute '" + nm + "' value " + std::to_string(x) + " is not " +
                          attr_kind_desc(a.kind) + " (valid: " + join(valid, ", ") + ")");
          readable = false;
        }
        break;
      }
      case AttrKind::kScalar:
      case AttrKind::kTensor: {
        const Tensor& t = std::get<Tensor>(v);
        // VARIABLE's initial_value is optional: an empty Tensor stands for NULL.
        bool optional_absent = n.op == Op::VARIABLE && !t.valid();
        if (optional_absent) break;
        if (!t.valid()) {
          rep.add(nm, "attribute '" + nm + "' holds a tensor of type " + t.type().str() + " without data");
          break;
        }
        if (a.kind == AttrKind::kScalar && t.rank() != 0) {
          rep.add(nm, "attribute '" + nm + "' must be a scalar (rank 0), got " + t.type().str());
        }
        int var = d.type_var_index(a.elem);
        if (var >= 0 && b.type[static_cast<size_t>(var)] && *b.type[static_cast<size_t>(var)] != t.dtype()) {
          rep.add(nm, "attribute '" + nm + "' has element type " + dtype_name(t.dtype()) + " but " + a.elem +
                          " is " + dtype_name(*b.type[static_cast<size_t>(var)]) + " (from " +
                          b.source[static_cast<size_t>(var)] + ")");
        }
        break;
      }
      case AttrKind::kGraph: {
        const std::string& name = std::get<std::string>(v);
        if (name.empty()) {
          rep.add(nm, "attribute '" + nm + "' must name a graph");
        } else if (module == nullptr) {
          rep.add(nm, "attribute '" + nm + "' refers to graph '" + name +
                          "' but there is no module to resolve it");
        } else if (module->find_graph(name) == nullptr) {
          rep.add(nm, "attribute '" + nm + "' refers to graph '" + name + "', which is not in the module");
        }
        break;
      }
      case AttrKind::kString: {
        const std::string& s = std::get<std::string>(v);
        bool required = nm == "name" || nm == "operator_name";  // variable names, custom operator names
        if (required && s.empty()) rep.add(nm, "attribute '" + nm + "' must not be empty");
        break;
      }
      case AttrKind::kBool:
      case AttrKind::kShapeValues: break;
    }
  }
  return readable;
}

// Binds the op's type variables from operands, outputs and type-defining attributes. Reports
// operands whose type disagrees with an earlier binding or with a fixed type ("bool_t").
Bindings bind_types(const Graph& g, const Node& n, const OpDef& d, bool attrs_readable, NodeReporter& rep) {
  Bindings b;
  b.type.resize(d.type_vars.size());
  b.source.resize(d.type_vars.size());
  auto bind = [&](const char* elem, DType t, const std::string& operand) {
    std::string from = "'" + operand + "'";
    if (elem == nullptr || *elem == '\0') return;
    int var = d.type_var_index(elem);
    if (var >= 0) {
      auto k = static_cast<size_t>(var);
      if (!b.type[k]) {
        b.type[k] = t;
        b.source[k] = from;
      } else if (*b.type[k] != t) {
        rep.add(operand, from + " has type " + dtype_name(t) + " but " + elem + " is " +
                             dtype_name(*b.type[k]) + " (from " + b.source[k] + ")");
        b.conflict = true;
      }
      return;
    }
    if (auto fixed = parse_dtype(elem)) {
      if (*fixed != t) {
        rep.add(operand, from + " must have element type " + elem + ", got " + dtype_name(t));
        b.conflict = true;
      }
    }
    // Other names (RESCALE's mul_t) depend on attribute values; infer_output_types checks them.
  };
  OperandMap in(d.inputs), out(d.outputs);
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    bind(in.def(i).elem, g.value(n.inputs[i]).type.dtype, in.name(i));
  }
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    bind(out.def(i).elem, g.value(n.outputs[i]).type.dtype, out.name(i));
  }
  if (!attrs_readable || n.attrs.size() != d.attrs.size()) return b;
  for (size_t i = 0; i < d.attrs.size(); ++i) {
    const AttrDef& a = d.attrs[i];
    if (a.kind == AttrKind::kAccType) {
      // The accumulator type is chosen by the acc_type attribute; it binds acc_t.
      int var = d.type_var_index("acc_t");
      int64_t x = std::get<int64_t>(n.attrs[i]);
      if (var >= 0 && enum_value_name(a.kind, x) && !b.type[static_cast<size_t>(var)]) {
        b.type[static_cast<size_t>(var)] = acc_type_dtype(static_cast<AccType>(x));
        b.source[static_cast<size_t>(var)] = "'" + std::string(a.name) + "'";
      }
    } else if (a.kind == AttrKind::kVarType && n.op == Op::VARIABLE) {
      // VARIABLE has no tensor operands: its declared type binds in_t.
      int var = d.type_var_index("in_t");
      int64_t x = std::get<int64_t>(n.attrs[i]);
      if (var >= 0 && enum_value_name(a.kind, x) && !b.type[static_cast<size_t>(var)]) {
        b.type[static_cast<size_t>(var)] = var_type_dtype(static_cast<VarType>(x));
        b.source[static_cast<size_t>(var)] = "'" + std::string(a.name) + "'";
      }
    }
  }
  return b;
}

std::string row_types_str(const OpDef& d, const TypeSupport& row) {
  std::vector<std::string> parts;
  for (size_t k = 0; k < d.type_vars.size(); ++k) parts.push_back(dtype_name(row.types[k]));
  return "[" + join(parts, ",") + "]";
}

// ---- Step 4: the bound types must form a supported combination enabled by `profiles`. ----
// Returns false when no combination matches at all (inference would be meaningless).
bool check_type_support(const Node& n, const OpDef& d, const Bindings& b, ProfileSet profiles,
                        NodeReporter& rep) {
  if (d.types.empty()) return true;
  auto matches = [&](const TypeSupport& row, int ignore_var) {
    for (size_t k = 0; k < d.type_vars.size(); ++k) {
      if (static_cast<int>(k) == ignore_var) continue;
      // Unbound variables (RESIZE's resize_t, REDUCE_SUM's acc_t) are implied by the others.
      if (b.type[k] && *b.type[k] != row.types[k]) return false;
    }
    return true;
  };
  std::vector<const TypeSupport*> found;
  for (const TypeSupport& row : d.types) {
    if (matches(row, -1)) found.push_back(&row);
  }
  std::vector<std::string> bound;
  for (size_t k = 0; k < d.type_vars.size(); ++k) {
    if (b.type[k]) bound.push_back(std::string(d.type_vars[k]) + "=" + dtype_name(*b.type[k]));
  }
  std::string bound_str = join(bound, ", ");

  if (found.empty()) {
    // An acc_type that does not fit the operand types gets its own message.
    int acc_var = d.type_var_index("acc_t");
    int acc_attr = -1;
    for (size_t i = 0; i < d.attrs.size(); ++i) {
      if (d.attrs[i].kind == AttrKind::kAccType) acc_attr = static_cast<int>(i);
    }
    if (acc_var >= 0 && acc_attr >= 0 && b.type[static_cast<size_t>(acc_var)]) {
      std::vector<std::string> allowed;
      for (const TypeSupport& row : d.types) {
        if (!matches(row, acc_var)) continue;
        auto acc = dtype_acc_type(row.types[acc_var]);
        std::string nm = acc ? enum_value_name(AttrKind::kAccType, static_cast<int64_t>(*acc)) : "?";
        if (std::find(allowed.begin(), allowed.end(), nm) == allowed.end()) allowed.push_back(nm);
      }
      if (!allowed.empty()) {
        auto acc = dtype_acc_type(*b.type[static_cast<size_t>(acc_var)]);
        std::string given = acc ? enum_value_name(AttrKind::kAccType, static_cast<int64_t>(*acc)) : "?";
        std::vector<std::string> operand_types;
        for (size_t k = 0; k < d.type_vars.size(); ++k) {
          if (static_cast<int>(k) != acc_var && b.type[k]) {
            operand_types.push_back(std::string(d.type_vars[k]) + "=" + dtype_name(*b.type[k]));
          }
        }
        rep.add(d.attrs[static_cast<size_t>(acc_attr)].name,
                "acc_type " + given + " does not match the operand types (" + join(operand_types, ", ") +
                    "); allowed: " + join(allowed, ", "));
        return false;
      }
    }
    std::vector<std::string> rows;
    for (const TypeSupport& row : d.types)
      rows.push_back(std::string(row.mode) + " " + row_types_str(d, row));
    std::vector<std::string> vars(d.type_vars.begin(), d.type_vars.end());
    rep.add("", "no type combination matches (" + bound_str + "); supported (" + join(vars, ",") +
                    "): " + join(rows, "; "));
    return false;
  }
  for (const TypeSupport* row : found) {
    if (row_enabled(*row, profiles)) return true;
  }
  std::vector<std::string> needs;
  for (const TypeSupport* row : found)
    needs.push_back(std::string(row->mode) + " needs " + requirement_str(*row));
  std::string have = profiles == 0 ? std::string("none") : profile_set_str(profiles);
  rep.add("", join(needs, "; ") + ", module profiles are " + have);
  return true;
}

// Names of the outputs whose element type the inputs do not determine: their type variable is
// bound by no input, and the TypeSupport rows that fit the input types disagree on it (CAST's
// out_t, RESCALE's out_t from i8, MATMUL's out_t from fp16). Inference works from the inputs alone
// and cannot choose; the declared type, already checked against the table in step 4, stands.
// Maps each such output's name to its type variable.
std::map<std::string, std::string> undetermined_outputs(const Graph& g, const Node& n, const OpDef& d) {
  std::vector<std::optional<DType>> bound(d.type_vars.size());
  OperandMap in(d.inputs), out(d.outputs);
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    int var = d.type_var_index(in.def(i).elem);
    if (var >= 0) bound[static_cast<size_t>(var)] = g.value(n.inputs[i]).type.dtype;
  }
  std::map<std::string, std::string> names;
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    int var = d.type_var_index(out.def(i).elem);
    if (var < 0 || bound[static_cast<size_t>(var)]) continue;
    std::set<DType> candidates;
    for (const TypeSupport& row : d.types) {
      bool fits = true;
      for (size_t k = 0; k < bound.size(); ++k) fits = fits && (!bound[k] || *bound[k] == row.types[k]);
      if (fits) candidates.insert(row.types[var]);
    }
    if (candidates.size() > 1) names.emplace(out.name(i), out.def(i).elem);
  }
  return names;
}

// ---- Step 5: inferred output types must equal the declared ones. ----
void check_inference(const Module* module, const Graph& g, const Node& n, const OpDef& d, NodeReporter& rep) {
  std::vector<TensorType> inferred;
  try {
    inferred = infer_output_types(g, n, module);
  } catch (const Error& e) {
    // Inference reports an element type it cannot choose at that output, naming the type
    // variable; the node declares that type (checked in step 4). Other errors there are kept.
    if (e.code() == ErrorCode::kVerify) {
      auto open = undetermined_outputs(g, n, d);
      auto it = open.find(e.location().operand);
      if (it != open.end() && e.message().find(it->second) != std::string::npos) return;
    }
    rep.add_error(e);
    return;
  } catch (const std::exception& e) {
    rep.add_error(Error(ErrorCode::kInternal, std::string(d.name) + ": shape inference failed: " + e.what()));
    return;
  }
  OperandMap out(d.outputs);
  if (inferred.size() != n.outputs.size()) {
    rep.add("", "the operator produces " + std::to_string(inferred.size()) +
                    " outputs but the node declares " + std::to_string(n.outputs.size()));
    return;
  }
  for (size_t i = 0; i < inferred.size(); ++i) {
    const TensorType& declared = g.value(n.outputs[i]).type;
    if (declared != inferred[i]) {
      std::string nm = out.name(i);
      rep.add(nm, "output '" + nm + "' (" + value_ref(g, n.outputs[i]) + ") is declared " + declared.str() +
                      " but the operator gives " + inferred[i].str());
    }
  }
}

void check_node(const Module* module, const Graph& g, int node_index, ProfileSet profiles, bool run_inference,
                std::vector<Error>& errors) {
  if (node_index < 0 || static_cast<size_t>(node_index) >= g.nodes().size()) {
    errors.push_back(Error(ErrorCode::kInvalidArgument,
                           "node index " + std::to_string(node_index) + " is out of range",
                           Location{.graph = g.name()}));
    return;
  }
  const Node& n = g.node(node_index);
  if (static_cast<size_t>(n.op) >= static_cast<size_t>(kNumOps)) {
    errors.push_back(Error(ErrorCode::kVerify,
                           "unknown operator code " + std::to_string(static_cast<int>(n.op)),
                           Location{.graph = g.name(), .node = "#" + std::to_string(node_index)}));
    return;
  }
  const OpDef& d = op_def(n.op);
  NodeReporter rep(g, node_index, errors);
  if (!check_counts_and_kinds(g, n, d, rep)) return;
  check_ranks(g, n, d, rep);
  // Type variables are bound before the attributes are checked (kScalar / kTensor attributes are
  // compared with the bindings), but binding conflicts are reported after the attribute
  // diagnostics, in the order of the checks.
  bool attrs_shape_ok = n.attrs.size() == d.attrs.size();
  bool attrs_kinds_ok = attrs_shape_ok;
  if (attrs_shape_ok) {
    for (size_t i = 0; i < d.attrs.size(); ++i) {
      if (n.attrs[i].index() != expected_alternative(d.attrs[i].kind)) attrs_kinds_ok = false;
    }
  }
  std::vector<Error> binding_errors;
  NodeReporter bind_rep(g, node_index, binding_errors);
  Bindings b = bind_types(g, n, d, attrs_kinds_ok, bind_rep);
  bool attrs_ok = check_attrs(module, g, n, d, b, rep);
  size_t structural = rep.count();  // counts, kinds, ranks and attributes
  errors.insert(errors.end(), binding_errors.begin(), binding_errors.end());
  bool types_ok = !b.conflict;
  if (types_ok && attrs_kinds_ok) types_ok = check_type_support(n, d, b, profiles, rep);
  // CUSTOM outputs are defined by the implementation, not by TOSA: the declared types stand.
  if (n.op == Op::CUSTOM) return;
  // Inference relies on well-formed operands and attributes; a profile that is not enabled does
  // not make the shape rules meaningless, so that case still runs them.
  if (run_inference && structural == 0 && attrs_ok && types_ok) check_inference(module, g, n, d, rep);
}

// ---- Module structure ----

Location graph_loc(const Graph& g, std::string node = "", std::string operand = "") {
  return Location{.graph = g.name(), .node = std::move(node), .operand = std::move(operand)};
}

void add_error(std::vector<Error>& errors, std::string message, Location loc) {
  errors.push_back(Error(ErrorCode::kVerify, std::move(message), std::move(loc)));
}

std::string types_str(const std::vector<TensorType>& ts) {
  std::vector<std::string> parts;
  for (const TensorType& t : ts) parts.push_back(t.str());
  return "(" + join(parts, ", ") + ")";
}

std::vector<TensorType> value_types(const Graph& g, const std::vector<ValueId>& ids) {
  std::vector<TensorType> r;
  for (ValueId v : ids) r.push_back(valid_id(g, v) ? g.value(v).type : TensorType{});
  return r;
}

bool ids_valid(const Graph& g, const std::vector<ValueId>& ids) {
  return std::all_of(ids.begin(), ids.end(), [&](ValueId v) { return valid_id(g, v); });
}

// Checks values, inputs, outputs and the order of nodes of one graph. Marks nodes whose operands
// are broken in `broken` (their inference is skipped: it would only repeat the diagnosis).
void check_graph_structure(const Graph& g, std::vector<Error>& errors, std::vector<bool>& broken) {
  const size_t nv = g.values().size();
  const size_t nn = g.nodes().size();
  broken.assign(nn, false);

  // Names: non-empty and unique (Graph keeps an index, but values can be renamed in place).
  std::map<std::string, ValueId> names;
  for (size_t v = 0; v < nv; ++v) {
    const std::string& name = g.values()[v].name;
    if (name.empty()) {
      add_error(errors, "value #" + std::to_string(v) + " has no name", graph_loc(g));
    } else if (!names.emplace(name, static_cast<ValueId>(v)).second) {
      add_error(errors, "value name '%" + name + "' is used by two values", graph_loc(g, "", "%" + name));
    }
  }

  // Definitions: graph inputs and node outputs, each value exactly once.
  std::vector<int> def_count(nv, 0);
  std::vector<int> def_node(nv, -1);  // -1: graph input
  std::set<ValueId> seen_inputs;
  for (ValueId v : g.inputs()) {
    if (!valid_id(g, v)) {
      add_error(errors, "graph input refers to an unknown value id " + std::to_string(v), graph_loc(g));
      continue;
    }
    if (!seen_inputs.insert(v).second) {
      add_error(errors, "graph input " + value_ref(g, v) + " is listed twice",
                graph_loc(g, "", "%" + g.value(v).name));
      continue;
    }
    ++def_count[static_cast<size_t>(v)];
  }
  for (size_t i = 0; i < nn; ++i) {
    const Node& n = g.nodes()[i];
    std::string label = g.node_label(static_cast<int>(i));
    for (ValueId v : n.inputs) {
      if (!valid_id(g, v)) {
        add_error(errors, "node input refers to an unknown value id " + std::to_string(v),
                  graph_loc(g, label));
        broken[i] = true;
      }
    }
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      ValueId v = n.outputs[k];
      if (!valid_id(g, v)) {
        add_error(errors, "node output refers to an unknown value id " + std::to_string(v),
                  graph_loc(g, label));
        broken[i] = true;
        continue;
      }
      auto idx = static_cast<size_t>(v);
      if (def_count[idx] > 0) {
        std::string prev = def_node[idx] < 0
                               ? std::string("it is a graph input")
                               : "it is also produced by node '" + g.node_label(def_node[idx]) + "'";
        add_error(errors, "value " + value_ref(g, v) + " is defined more than once: " + prev,
                  graph_loc(g, label, "%" + g.value(v).name));
        broken[i] = true;
      } else {
        def_node[idx] = static_cast<int>(i);
        const Value& val = g.value(v);
        if (val.producer != static_cast<int>(i) || val.producer_output != static_cast<int>(k)) {
          add_error(errors,
                    "value " + value_ref(g, v) + " records producer #" + std::to_string(val.producer) +
                        " output " + std::to_string(val.producer_output) + " but node #" + std::to_string(i) +
                        " produces it as output " + std::to_string(k),
                    graph_loc(g, label, "%" + val.name));
        }
      }
      ++def_count[idx];
    }
  }
  // Undefined values that are used are reported at their uses below.
  std::vector<bool> used(nv, false);
  for (const Node& n : g.nodes()) {
    for (ValueId v : n.inputs) {
      if (valid_id(g, v)) used[static_cast<size_t>(v)] = true;
    }
  }
  for (ValueId v : g.outputs()) {
    if (valid_id(g, v)) used[static_cast<size_t>(v)] = true;
  }
  for (size_t v = 0; v < nv; ++v) {
    if (def_count[v] == 0 && !used[v]) {
      add_error(errors,
                "value " + value_ref(g, static_cast<ValueId>(v)) +
                    " is never defined (it is neither a graph input nor a node output)",
                graph_loc(g, "", "%" + g.values()[v].name));
    } else if (def_node[v] < 0 && g.values()[v].producer >= 0) {
      add_error(errors,
                "graph input " + value_ref(g, static_cast<ValueId>(v)) + " records producer #" +
                    std::to_string(g.values()[v].producer),
                graph_loc(g, "", "%" + g.values()[v].name));
    }
  }

  // Order: node dependencies through values must point backwards. Find cycles first (Tarjan's
  // strongly connected components), then report the remaining forward references.
  std::vector<std::vector<int>> deps(nn);  // node -> producer nodes of its inputs
  for (size_t i = 0; i < nn; ++i) {
    for (ValueId v : g.nodes()[i].inputs) {
      if (valid_id(g, v) && def_node[static_cast<size_t>(v)] >= 0)
        deps[i].push_back(def_node[static_cast<size_t>(v)]);
    }
  }
  std::vector<int> index(nn, -1), low(nn, 0), comp(nn, -1);
  std::vector<bool> on_stack(nn, false);
  std::vector<int> stack;
  int counter = 0, ncomp = 0;
  std::vector<std::vector<int>> comps;
  // Iterative Tarjan: graphs can be deep (thousands of nodes in a chain).
  for (size_t root = 0; root < nn; ++root) {
    if (index[root] >= 0) continue;
    std::vector<std::pair<int, size_t>> work{{static_cast<int>(root), 0}};
    while (!work.empty()) {
      auto& [u, next] = work.back();
      auto uu = static_cast<size_t>(u);
      if (next == 0 && index[uu] < 0) {
        index[uu] = low[uu] = counter++;
        stack.push_back(u);
        on_stack[uu] = true;
      }
      if (next < deps[uu].size()) {
        int w = deps[uu][next++];
        auto ww = static_cast<size_t>(w);
        if (index[ww] < 0) {
          work.push_back({w, 0});
        } else if (on_stack[ww]) {
          low[uu] = std::min(low[uu], index[ww]);
        }
        continue;
      }
      if (low[uu] == index[uu]) {
        std::vector<int> members;
        int w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[static_cast<size_t>(w)] = false;
          comp[static_cast<size_t>(w)] = ncomp;
          members.push_back(w);
        } while (w != u);
        comps.push_back(std::move(members));
        ++ncomp;
      }
      int finished = u;
      work.pop_back();
      if (!work.empty()) {
        auto parent = static_cast<size_t>(work.back().first);
        low[parent] = std::min(low[parent], low[static_cast<size_t>(finished)]);
      }
    }
  }
  for (const auto& members : comps) {
    int u = members.front();
    bool self_loop = std::find(deps[static_cast<size_t>(u)].begin(), deps[static_cast<size_t>(u)].end(), u) !=
                     deps[static_cast<size_t>(u)].end();
    if (members.size() < 2 && !self_loop) continue;
    std::vector<int> sorted = members;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::string> labels, values;
    for (int m : sorted) {
      labels.push_back("'" + g.node_label(m) + "'");
      broken[static_cast<size_t>(m)] = true;
      // The values that close the cycle: inputs of a member produced by a member.
      for (ValueId v : g.node(m).inputs) {
        if (!valid_id(g, v) || def_node[static_cast<size_t>(v)] < 0) continue;
        if (comp[static_cast<size_t>(def_node[static_cast<size_t>(v)])] != comp[static_cast<size_t>(m)])
          continue;
        std::string ref = value_ref(g, v);
        if (std::find(values.begin(), values.end(), ref) == values.end()) values.push_back(ref);
      }
    }
    add_error(errors,
              "cycle between nodes " + join(labels, ", ") + " through values " + join(values, ", ") +
                  ": each depends on the outputs of another",
              graph_loc(g, g.node_label(sorted.front())));
  }
  for (size_t i = 0; i < nn; ++i) {
    for (ValueId v : g.nodes()[i].inputs) {
      if (!valid_id(g, v)) continue;
      int p = def_node[static_cast<size_t>(v)];
      if (def_count[static_cast<size_t>(v)] == 0) {
        add_error(errors, "node uses undefined value " + value_ref(g, v),
                  graph_loc(g, g.node_label(static_cast<int>(i)), "%" + g.value(v).name));
        broken[i] = true;
      } else if (p >= static_cast<int>(i) && comp[static_cast<size_t>(p)] != comp[i]) {
        add_error(errors,
                  "node uses " + value_ref(g, v) + " before its definition by node '" + g.node_label(p) +
                      "' (nodes must be in topological order)",
                  graph_loc(g, g.node_label(static_cast<int>(i)), "%" + g.value(v).name));
      }
    }
  }

  // Outputs: known, unique, defined.
  std::set<ValueId> seen_outputs;
  for (ValueId v : g.outputs()) {
    if (!valid_id(g, v)) {
      add_error(errors, "graph output refers to an unknown value id " + std::to_string(v), graph_loc(g));
      continue;
    }
    if (!seen_outputs.insert(v).second) {
      add_error(errors, "graph output " + value_ref(g, v) + " is listed twice",
                graph_loc(g, "", "%" + g.value(v).name));
    }
    if (def_count[static_cast<size_t>(v)] == 0) {
      add_error(errors, "graph output " + value_ref(g, v) + " is not produced by any node nor a graph input",
                graph_loc(g, "", "%" + g.value(v).name));
    }
  }
}

// Graph attribute of a node by attribute name; nullptr if absent, of another kind or unresolved.
const Graph* sub_graph(const Module& m, const Node& n, const char* attr) {
  const OpDef& d = op_def(n.op);
  int i = d.attr_index(attr);
  if (i < 0 || static_cast<size_t>(i) >= n.attrs.size()) return nullptr;
  const auto* name = std::get_if<std::string>(&n.attrs[static_cast<size_t>(i)]);
  return name ? m.find_graph(*name) : nullptr;
}

// COND_IF and WHILE_LOOP: the referenced graphs' signatures must fit the node's tensor lists.
void check_control_flow(const Module& m, const Graph& g, int node_index, std::vector<Error>& errors,
                        std::vector<bool>& broken) {
  const Node& n = g.node(node_index);
  if (!ids_valid(g, n.inputs) || !ids_valid(g, n.outputs)) return;
  std::string label = g.node_label(node_index);
  const char* op = op_name(n.op);
  auto fail = [&](const std::string& attr, const std::string& msg) {
    add_error(errors, std::string(op) + ": " + msg, graph_loc(g, label, attr));
    broken[static_cast<size_t>(node_index)] = true;
  };
  auto compare = [&](const char* attr, const Graph& sub, const char* side,
                     const std::vector<TensorType>& have, const std::vector<TensorType>& want,
                     const char* list) {
    if (have != want) {
      fail(attr, std::string(side) + " of graph '" + sub.name() + "' " + types_str(have) + " do not match " +
                     list + " " + types_str(want));
    }
  };
  if (n.op == Op::COND_IF) {
    if (n.inputs.empty()) return;  // verify_node reports the count
    std::vector<ValueId> list(n.inputs.begin() + 1, n.inputs.end());
    std::vector<TensorType> in = value_types(g, list), out = value_types(g, n.outputs);
    for (const char* attr : {"then_graph", "else_graph"}) {
      const Graph* sub = sub_graph(m, n, attr);
      if (!sub || !ids_valid(*sub, sub->inputs()) || !ids_valid(*sub, sub->outputs())) continue;
      compare(attr, *sub, "inputs", value_types(*sub, sub->inputs()), in, "the node's input_list");
      compare(attr, *sub, "outputs", value_types(*sub, sub->outputs()), out, "the node's output_list");
    }
  } else if (n.op == Op::WHILE_LOOP) {
    std::vector<TensorType> in = value_types(g, n.inputs), out = value_types(g, n.outputs);
    if (in != out) {
      fail("output_list",
           "output_list " + types_str(out) + " must have the types of input_list " + types_str(in));
    }
    if (const Graph* cond = sub_graph(m, n, "cond_graph");
        cond && ids_valid(*cond, cond->inputs()) && ids_valid(*cond, cond->outputs())) {
      compare("cond_graph", *cond, "inputs", value_types(*cond, cond->inputs()), in, "the node's input_list");
      std::vector<TensorType> res = value_types(*cond, cond->outputs());
      bool ok = res.size() == 1 && res[0].dtype == DType::kBool;
      if (ok) {
        // tensor_size(shape) == 1: shape [] or [1] (or any shape of one element).
        ok = std::all_of(res[0].shape.begin(), res[0].shape.end(), [](int64_t x) { return x == 1; });
      }
      if (!ok) {
        fail("cond_graph", "graph '" + cond->name() +
                               "' must return one bool value of one element ([] or [1]), returns " +
                               types_str(res));
      }
    }
    if (const Graph* body = sub_graph(m, n, "body_graph");
        body && ids_valid(*body, body->inputs()) && ids_valid(*body, body->outputs())) {
      compare("body_graph", *body, "inputs", value_types(*body, body->inputs()), in, "the node's input_list");
      compare("body_graph", *body, "outputs", value_types(*body, body->outputs()), in,
              "the node's input_list");
    }
  }
}

// Graph -> graphs it references through COND_IF / WHILE_LOOP, with the referencing node.
struct CallEdge {
  size_t callee;
  int node;
};

void check_recursion_and_nesting(const Module& m, std::vector<Error>& errors) {
  const auto& graphs = m.graphs();
  size_t ng = graphs.size();
  std::vector<std::vector<CallEdge>> calls(ng);
  for (size_t gi = 0; gi < ng; ++gi) {
    const Graph& g = graphs[gi];
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      const Node& n = g.nodes()[i];
      if (static_cast<size_t>(n.op) >= static_cast<size_t>(kNumOps)) continue;
      const OpDef& d = op_def(n.op);
      for (size_t a = 0; a < d.attrs.size() && a < n.attrs.size(); ++a) {
        if (d.attrs[a].kind != AttrKind::kGraph) continue;
        const auto* name = std::get_if<std::string>(&n.attrs[a]);
        if (!name) continue;
        for (size_t c = 0; c < ng; ++c) {
          if (graphs[c].name() == *name) {
            calls[gi].push_back({c, static_cast<int>(i)});
            break;
          }
        }
      }
    }
  }
  // Depth-first search with colours; a back edge closes a cycle, reported once per back edge.
  std::vector<int> colour(ng, 0);  // 0 new, 1 on path, 2 done
  std::vector<size_t> path;
  bool recursive = false;
  std::function<void(size_t)> dfs = [&](size_t u) {
    colour[u] = 1;
    path.push_back(u);
    for (const CallEdge& e : calls[u]) {
      if (colour[e.callee] == 1) {
        recursive = true;
        std::vector<std::string> names;
        auto it = std::find(path.begin(), path.end(), e.callee);
        for (; it != path.end(); ++it) names.push_back(graphs[*it].name());
        names.push_back(graphs[e.callee].name());
        const Graph& g = graphs[u];
        add_error(errors,
                  "graphs call themselves recursively: " + join(names, " -> ") +
                      " (TOSA control flow cannot recurse)",
                  graph_loc(g, g.node_label(e.node)));
      } else if (colour[e.callee] == 0) {
        dfs(e.callee);
      }
    }
    path.pop_back();
    colour[u] = 2;
  };
  for (size_t gi = 0; gi < ng; ++gi) {
    if (colour[gi] == 0) dfs(gi);
  }
  if (recursive) return;

  // Nesting depth from the entry graph: ERROR_IF(tosa_nesting_depth >= MAX_NESTING) at each
  // COND_IF / WHILE_LOOP. Longest call path, the call graph being acyclic here.
  size_t entry = ng;
  for (size_t gi = 0; gi < ng; ++gi) {
    if (graphs[gi].name() == m.entry()) entry = gi;
  }
  if (entry == ng) return;
  std::vector<int> depth(ng, -1);
  std::vector<size_t> order;  // reverse post-order from the entry
  std::vector<bool> visited(ng, false);
  std::function<void(size_t)> post = [&](size_t u) {
    visited[u] = true;
    for (const CallEdge& e : calls[u]) {
      if (!visited[e.callee]) post(e.callee);
    }
    order.push_back(u);
  };
  post(entry);
  std::reverse(order.begin(), order.end());
  depth[entry] = 0;
  for (size_t u : order) {
    for (const CallEdge& e : calls[u]) depth[e.callee] = std::max(depth[e.callee], depth[u] + 1);
  }
  for (size_t u : order) {
    std::set<int> reported;
    for (const CallEdge& e : calls[u]) {
      if (depth[u] >= kMaxNesting && reported.insert(e.node).second) {
        const Graph& g = graphs[u];
        add_error(errors,
                  std::string(op_name(g.node(e.node).op)) + ": control flow nested " +
                      std::to_string(depth[u]) + " levels deep; level 8K allows less than " +
                      std::to_string(kMaxNesting) + " (MAX_NESTING)",
                  graph_loc(g, g.node_label(e.node)));
      }
    }
  }
}

// VARIABLE declarations: unique names; VARIABLE_READ / VARIABLE_WRITE refer to one with their type.
void check_variables(const Module& m, std::vector<Error>& errors, std::vector<std::vector<bool>>& broken) {
  struct Decl {
    TensorType type;
    bool type_known = false;
    std::string graph, node;
  };
  std::map<std::string, Decl> decls;
  const auto& graphs = m.graphs();
  auto attr_of = [](const Node& n, const char* name) -> const AttrValue* {
    int i = op_def(n.op).attr_index(name);
    if (i < 0 || static_cast<size_t>(i) >= n.attrs.size()) return nullptr;
    return &n.attrs[static_cast<size_t>(i)];
  };
  for (size_t gi = 0; gi < graphs.size(); ++gi) {
    const Graph& g = graphs[gi];
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      const Node& n = g.nodes()[i];
      if (n.op != Op::VARIABLE) continue;
      std::string label = g.node_label(static_cast<int>(i));
      const auto* name = attr_of(n, "name") ? std::get_if<std::string>(attr_of(n, "name")) : nullptr;
      if (!name || name->empty()) continue;  // verify_node reports the attribute
      Decl decl{.graph = g.name(), .node = label};
      const auto* shape =
          attr_of(n, "var_shape") ? std::get_if<std::vector<int64_t>>(attr_of(n, "var_shape")) : nullptr;
      const auto* type = attr_of(n, "type") ? std::get_if<int64_t>(attr_of(n, "type")) : nullptr;
      if (shape && type && enum_value_name(AttrKind::kVarType, *type)) {
        decl.type = TensorType{var_type_dtype(static_cast<VarType>(*type)), *shape};
        decl.type_known = true;
        // The var_shape rules (rank, dimensions) are infer_output_types' checks of the VARIABLE node.
        const auto* init =
            attr_of(n, "initial_value") ? std::get_if<Tensor>(attr_of(n, "initial_value")) : nullptr;
        if (init && init->valid() && init->type() != decl.type) {
          add_error(errors,
                    "VARIABLE: initial_value has type " + init->type().str() + " but the variable '" + *name +
                        "' is declared " + decl.type.str() +
                        " (REQUIRE(var_t == in_t) and REQUIRE(var_shape == shape))",
                    graph_loc(g, label, "initial_value"));
        }
      }
      auto [it, inserted] = decls.emplace(*name, decl);
      if (!inserted) {
        add_error(errors,
                  "VARIABLE: variable '" + *name + "' is already declared by node '" + it->second.node +
                      "' of graph '" + it->second.graph + "'",
                  graph_loc(g, label, "name"));
      }
    }
  }
  for (size_t gi = 0; gi < graphs.size(); ++gi) {
    const Graph& g = graphs[gi];
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      const Node& n = g.nodes()[i];
      if (n.op != Op::VARIABLE_READ && n.op != Op::VARIABLE_WRITE) continue;
      std::string label = g.node_label(static_cast<int>(i));
      const auto* name = attr_of(n, "name") ? std::get_if<std::string>(attr_of(n, "name")) : nullptr;
      if (!name || name->empty()) continue;
      auto it = decls.find(*name);
      if (it == decls.end()) {
        add_error(errors,
                  std::string(op_name(n.op)) + ": variable '" + *name + "' is not declared by any VARIABLE",
                  graph_loc(g, label, "name"));
        broken[gi][i] = true;
        continue;
      }
      const std::vector<ValueId>& ids = n.op == Op::VARIABLE_READ ? n.outputs : n.inputs;
      if (!it->second.type_known || ids.size() != 1 || !valid_id(g, ids[0])) continue;
      const TensorType& t = g.value(ids[0]).type;
      if (t != it->second.type) {
        const char* operand = n.op == Op::VARIABLE_READ ? "output1" : "input1";
        add_error(errors,
                  std::string(op_name(n.op)) + ": '" + operand + "' has type " + t.str() + " but variable '" +
                      *name + "' is declared " + it->second.type.str(),
                  graph_loc(g, label, operand));
        broken[gi][i] = true;
      }
    }
  }
}

}  // namespace

void verify_node(const Module* module, const Graph& g, int node_index, ProfileSet profiles,
                 std::vector<Error>& errors) {
  check_node(module, g, node_index, profiles, true, errors);
}

std::vector<Error> verify_module(const Module& module) {
  std::vector<Error> errors;
  const auto& graphs = module.graphs();
  if (module.find_graph(module.entry()) == nullptr) {
    add_error(errors, "the module has no entry graph '" + module.entry() + "'",
              Location{.graph = module.entry()});
  }
  std::set<std::string> graph_names;
  for (const Graph& g : graphs) {
    if (g.name().empty())
      add_error(errors, "a graph of the module has no name", Location{});
    else if (!graph_names.insert(g.name()).second)
      add_error(errors, "graph name is used twice", graph_loc(g));
  }

  std::vector<std::vector<bool>> broken(graphs.size());
  for (size_t gi = 0; gi < graphs.size(); ++gi) check_graph_structure(graphs[gi], errors, broken[gi]);
  for (size_t gi = 0; gi < graphs.size(); ++gi) {
    const Graph& g = graphs[gi];
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      Op op = g.nodes()[i].op;
      if (op == Op::COND_IF || op == Op::WHILE_LOOP)
        check_control_flow(module, g, static_cast<int>(i), errors, broken[gi]);
    }
  }
  check_recursion_and_nesting(module, errors);
  check_variables(module, errors, broken);

  for (size_t gi = 0; gi < graphs.size(); ++gi) {
    const Graph& g = graphs[gi];
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      check_node(&module, g, static_cast<int>(i), module.profiles(), !broken[gi][i], errors);
    }
  }
  return errors;
}

void verify_or_throw(const Module& module) {
  std::vector<Error> errors = verify_module(module);
  if (errors.empty()) return;
  const Error& first = errors.front();
  std::string message = first.message();
  if (errors.size() > 1) {
    size_t more = errors.size() - 1;
    message += " (and " + std::to_string(more) + " more error" + (more == 1 ? "" : "s") + ")";
  }
  throw Error(first.code(), message, first.location());
}

std::optional<std::vector<int64_t>> constant_shape_value(const Graph& g, ValueId v) {
  const Value& val = g.value(v);
  if (val.producer < 0 || static_cast<size_t>(val.producer) >= g.nodes().size()) return std::nullopt;
  const Node& n = g.node(val.producer);
  if (n.op != Op::CONST_SHAPE || n.attrs.empty()) return std::nullopt;
  const auto* values = std::get_if<std::vector<int64_t>>(&n.attrs[0]);
  if (!values) return std::nullopt;
  return *values;
}

const Tensor* constant_tensor_value(const Graph& g, ValueId v) {
  const Value& val = g.value(v);
  if (val.producer < 0 || static_cast<size_t>(val.producer) >= g.nodes().size()) return nullptr;
  const Node& n = g.node(val.producer);
  if (n.op != Op::CONST || n.attrs.empty()) return nullptr;
  return std::get_if<Tensor>(&n.attrs[0]);
}

}  // namespace weft
