// Shape and element type inference for every TOSA 1.0 operator (TOSA 1.0.2 specification), together
// with every ERROR_IF rule of the operators' pseudocode that can be decided before running: from the
// operand types, the attributes, the values of CONST_SHAPE operands and, where an ERROR_IF reads a
// zero point or shift operand, the values of CONST operands.
//
// Element types come from the operator table (op_table.cpp): every operand names a type variable of
// the operator ("in_t", "out_t") or a fixed type ("bool_t", "i8_t"). The inputs bind the variables;
// an output whose variable no input binds (ARGMAX's out_t, MUL's out_t, MATMUL's out_t ...) takes
// the value of that variable in the TypeSupport rows that fit the bound ones, when those rows agree
// on it. Profiles are not checked here: that is the verifier's job (verify.cpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weft/verify.h"

namespace weft {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

std::string fnum(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// Shape arithmetic runs in 128 bits: attribute and CONST_SHAPE values come from untrusted text, and
// their sums and products must be range-checked, not wrapped.
using Wide = __int128;
constexpr int64_t kMaxExtent = int64_t{1} << 62;

// Number of elements of a shape, or nullopt when it exceeds the tensor size range.
// A tensor holds at most 2^44 elements: 2^47 bytes of 8-byte elements, the user address space of
// x86-64 and AArch64. Past it the tensor cannot exist, and its byte size could wrap.
constexpr int64_t kMaxElements = int64_t{1} << 44;

std::optional<int64_t> element_count(const Shape& s) {
  Wide n = 1;
  for (int64_t d : s) {
    if (d < 0) return std::nullopt;
    n *= d;
    if (n > kMaxElements) return std::nullopt;
  }
  return static_cast<int64_t>(n);
}

std::string list_str(const std::vector<int64_t>& v) { return shape_str(v); }

bool is_power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// "[1]", "[4]": a shape expression of the table that fixes the length of a rank-1 operand.
std::optional<int64_t> literal_length(const char* shape_expr) {
  std::string_view s(shape_expr);
  if (s.size() < 3 || s.front() != '[' || s.back() != ']') return std::nullopt;
  int64_t v = 0;
  for (char c : s.substr(1, s.size() - 2)) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

int resolve_rank_bound(int8_t bound) {
  if (bound == kRankMax) return kMaxRank;
  if (bound == kRankMaxMinus1) return kMaxRank - 1;
  return bound;
}

std::string types_str(const std::vector<TensorType>& types) {
  std::string r = "(";
  for (size_t i = 0; i < types.size(); ++i) r += (i ? ", " : "") + types[i].str();
  return r + ")";
}

// One inference run for one node: operand access, type variable bindings and error reporting.
class Infer {
 public:
  Infer(const Graph& g, const Node& n, const Module* m) : g_(g), n_(n), def_(op_def(n.op)), module_(m) {}

  std::vector<TensorType> run();

  // For a VARIABLE node: its declared type, after checking the declaration.
  TensorType variable_type() {
    variable();
    return TensorType{var_type_dtype(static_cast<VarType>(attr_int("type"))), attr_ints("var_shape", -1)};
  }

 private:
  // ---- Errors ----
  std::string label() const {
    const std::vector<Node>& nodes = g_.nodes();
    std::less<const Node*> before;
    if (!nodes.empty() && !before(&n_, nodes.data()) && before(&n_, nodes.data() + nodes.size())) {
      return g_.node_label(static_cast<int>(&n_ - nodes.data()));
    }
    return n_.name;  // a node not yet added to the graph (GraphBuilder infers before adding)
  }

  [[noreturn]] void fail(std::string_view operand, const std::string& message) const {
    throw Error(ErrorCode::kVerify, std::string(def_.name) + ": " + message,
                Location{.graph = g_.name(), .node = label(), .operand = std::string(operand)});
  }

  // ---- Operands ----
  void check_operands();
  void check_operand(const ArgDef& a, ValueId id, const std::string& name);
  void bind(const char* var, DType t, const std::string& operand);

  ValueId input_id(std::string_view name) const {
    int i = def_.input_index(name);
    if (i < 0 || static_cast<size_t>(i) >= n_.inputs.size()) {
      throw Error(ErrorCode::kInternal,
                  std::string(def_.name) + " has no operand '" + std::string(name) + "'");
    }
    return n_.inputs[static_cast<size_t>(i)];
  }
  const TensorType& ty(std::string_view name) const { return g_.value(input_id(name)).type; }
  const Shape& sh(std::string_view name) const { return ty(name).shape; }

  // Number of operands in the tensor list (the last ArgDef), and the type of its k-th element.
  size_t list_size() const { return n_.inputs.size() - (def_.inputs.size() - 1); }
  const TensorType& list_ty(size_t k) const { return g_.value(n_.inputs[def_.inputs.size() - 1 + k]).type; }
  std::string list_name(size_t k) const {
    return std::string(def_.inputs.back().name) + "[" + num(static_cast<int64_t>(k)) + "]";
  }
  std::vector<TensorType> list_types() const {
    std::vector<TensorType> r;
    for (size_t k = 0; k < list_size(); ++k) r.push_back(list_ty(k));
    return r;
  }

  // The values of a shape_t operand; they must be known (CONST_SHAPE) to infer the output shape.
  std::vector<int64_t> shape_value(std::string_view name) const {
    ValueId id = input_id(name);
    std::optional<std::vector<int64_t>> v = constant_shape_value(g_, id);
    if (!v) {
      fail(name, "shape operand '" + std::string(name) + "' (%" + g_.value(id).name +
                     ") is not produced by CONST_SHAPE, so the output shape cannot be determined statically");
    }
    const Shape& declared = g_.value(id).type.shape;
    if (declared.size() == 1 && declared[0] != static_cast<int64_t>(v->size())) {
      fail(name, "shape operand '" + std::string(name) + "' is declared with " + num(declared[0]) +
                     " components but its CONST_SHAPE holds " + num(static_cast<int64_t>(v->size())));
    }
    return *v;
  }

  // ---- Attributes ----
  const AttrValue& attr(std::string_view name) const {
    int i = def_.attr_index(name);
    if (i < 0)
      throw Error(ErrorCode::kInternal,
                  std::string(def_.name) + " has no attribute '" + std::string(name) + "'");
    if (n_.attrs.size() != def_.attrs.size()) {
      fail(name, "expects " + num(static_cast<int64_t>(def_.attrs.size())) + " attributes, the node has " +
                     num(static_cast<int64_t>(n_.attrs.size())));
    }
    return n_.attrs[static_cast<size_t>(i)];
  }
  int64_t attr_int(std::string_view name) const {
    if (const int64_t* p = std::get_if<int64_t>(&attr(name))) return *p;
    fail(name, "attribute '" + std::string(name) + "' must be an integer");
  }
  bool attr_bool(std::string_view name) const {
    if (const bool* p = std::get_if<bool>(&attr(name))) return *p;
    fail(name, "attribute '" + std::string(name) + "' must be a boolean");
  }
  const std::string& attr_str(std::string_view name) const {
    if (const std::string* p = std::get_if<std::string>(&attr(name))) return *p;
    fail(name, "attribute '" + std::string(name) + "' must be a string");
  }
  const Tensor& attr_tensor(std::string_view name) const {
    if (const Tensor* p = std::get_if<Tensor>(&attr(name))) return *p;
    fail(name, "attribute '" + std::string(name) + "' must be a tensor");
  }
  // An i32_t list attribute; `length` < 0: any length.
  const std::vector<int64_t>& attr_ints(std::string_view name, int64_t length) const {
    const auto* p = std::get_if<std::vector<int64_t>>(&attr(name));
    if (!p) fail(name, "attribute '" + std::string(name) + "' must be an integer list");
    if (length >= 0 && static_cast<int64_t>(p->size()) != length) {
      fail(name, "attribute '" + std::string(name) + "' has " + num(static_cast<int64_t>(p->size())) +
                     " values but must have " + num(length));
    }
    return *p;
  }

  // ---- Types ----
  DType var(std::string_view name) const {
    auto it = vars_.find(std::string(name));
    if (it == vars_.end())
      throw Error(ErrorCode::kInternal,
                  std::string(def_.name) + ": type variable " + std::string(name) + " is not bound");
    return it->second.first;
  }
  DType resolve(const char* elem, std::string_view operand) const;
  // The output `index` with `shape`: checks the output's rank bounds and dimensions, resolves its type.
  TensorType out(size_t index, Shape shape, std::optional<DType> dtype = std::nullopt) const;

  // ---- Shared rules ----
  // `v` as a tensor extent; fails when it is outside the tensor size range.
  int64_t fit(Wide v, std::string_view operand, const std::string& what) const {
    if (v > kMaxExtent || v < -kMaxExtent) fail(operand, what + " is outside the tensor size range");
    return static_cast<int64_t>(v);
  }
  Shape broadcast(const std::vector<std::string_view>& operands) const;
  void check_axis(int64_t axis, int64_t rank, const char* rank_expr) const;
  void check_zero_point_int8_only(std::string_view zp, std::string_view type_var) const;
  void check_dim_equal(std::string_view operand, const char* what, int64_t got, std::string_view ref_operand,
                       int64_t expected) const;
  void check_positive(std::string_view attr_name, const std::vector<int64_t>& v,
                      const std::vector<const char*>& names, int64_t min, const char* rule) const;
  int64_t conv_extent(const char* out_name, const char* in_name, int64_t in, const char* pad_a_name,
                      int64_t pad_a, const char* pad_b_name, int64_t pad_b, const char* k_name, int64_t k,
                      const char* dil_name, int64_t dil, const char* stride_name, int64_t stride) const;
  int64_t pool_extent(const char* out_name, const char* in_name, int64_t in, const char* pad_a_name,
                      int64_t pad_a, const char* pad_b_name, int64_t pad_b, const char* k_name, int64_t k,
                      const char* stride_name, int64_t stride) const;
  void check_bias(int64_t bc, int64_t oc, const char* oc_name) const;
  void check_graph_types(std::string_view operand, const std::string& what,
                         const std::vector<TensorType>& got, const std::string& ref_what,
                         const std::vector<TensorType>& expected) const;
  const Graph& subgraph(std::string_view attr_name) const;
  std::vector<TensorType> graph_types(const Graph& sg, const std::vector<ValueId>& ids) const;
  std::pair<const Graph*, const Node*> find_variable(const std::string& name) const;

  // ---- Operator families ----
  std::vector<TensorType> elementwise_binary();
  std::vector<TensorType> unary_same_shape();
  std::vector<TensorType> comparison();
  std::vector<TensorType> reduce();
  std::vector<TensorType> pool2d(bool avg);
  std::vector<TensorType> conv2d();
  std::vector<TensorType> conv3d();
  std::vector<TensorType> depthwise_conv2d();
  std::vector<TensorType> transpose_conv2d();
  std::vector<TensorType> argmax();
  std::vector<TensorType> fft2d();
  std::vector<TensorType> rfft2d();
  std::vector<TensorType> matmul();
  std::vector<TensorType> clamp();
  std::vector<TensorType> mul();
  std::vector<TensorType> table();
  std::vector<TensorType> negate();
  std::vector<TensorType> select();
  std::vector<TensorType> concat();
  std::vector<TensorType> pad();
  std::vector<TensorType> reshape();
  std::vector<TensorType> reverse();
  std::vector<TensorType> slice();
  std::vector<TensorType> tile();
  std::vector<TensorType> transpose();
  std::vector<TensorType> gather();
  std::vector<TensorType> scatter();
  std::vector<TensorType> resize();
  std::vector<TensorType> rescale();
  std::vector<TensorType> constant();
  std::vector<TensorType> cond_if();
  std::vector<TensorType> while_loop();
  std::vector<TensorType> variable();
  std::vector<TensorType> variable_write();
  std::vector<TensorType> variable_read();
  std::vector<TensorType> const_shape();

  const Graph& g_;
  const Node& n_;
  const OpDef& def_;
  const Module* module_;
  // Type variable -> (element type, operand that bound it).
  std::map<std::string, std::pair<DType, std::string>> vars_;
  // Extra condition on the TypeSupport rows that can apply (RESIZE: the mode).
  std::function<bool(const TypeSupport&)> row_filter_;
};

// ---------------------------------------------------------------------------------------------
// Operands and type variables

void Infer::check_operands() {
  const bool has_list = def_.has_list_input();
  const size_t fixed = def_.inputs.size() - (has_list ? 1 : 0);
  if (has_list ? n_.inputs.size() < fixed : n_.inputs.size() != fixed) {
    fail("", "expects " + std::string(has_list ? "at least " : "") + num(static_cast<int64_t>(fixed)) +
                 " operands, the node has " + num(static_cast<int64_t>(n_.inputs.size())));
  }
  for (size_t i = 0; i < n_.inputs.size(); ++i) {
    ValueId id = n_.inputs[i];
    if (id < 0 || static_cast<size_t>(id) >= g_.values().size()) {
      fail(i < fixed ? def_.inputs[i].name : def_.inputs.back().name,
           "operand " + num(static_cast<int64_t>(i)) + " refers to unknown value id " + num(id));
    }
  }
  for (size_t i = 0; i < fixed; ++i) check_operand(def_.inputs[i], n_.inputs[i], def_.inputs[i].name);
  if (has_list) {
    for (size_t k = 0; k < list_size(); ++k)
      check_operand(def_.inputs.back(), n_.inputs[fixed + k], list_name(k));
  }
}

void Infer::check_operand(const ArgDef& a, ValueId id, const std::string& name) {
  const TensorType& t = g_.value(id).type;
  if (a.kind == ArgKind::kShape) {
    if (t.dtype != DType::kShape || t.rank() != 1) {
      fail(name, "operand '" + name + "' must be a shape_t value, got " + t.str());
    }
    if (auto len = literal_length(a.shape); len && t.shape[0] != *len) {
      fail(name, "operand '" + name + "' must have " + num(*len) + " components " + a.shape + ", got " +
                     num(t.shape[0]));
    }
    return;
  }
  // Tensor lists of CUSTOM and the control flow operators take any tensors.
  if (a.min_rank == kRankAny) return;
  if (t.dtype == DType::kShape)
    fail(name, "operand '" + name + "' must be a tensor, got the shape_t value " + t.str());
  const int lo = resolve_rank_bound(a.min_rank);
  const int hi = resolve_rank_bound(a.max_rank);
  if (t.rank() < lo || t.rank() > hi) {
    fail(name, "operand '" + name + "' " + a.shape + " has rank " + num(t.rank()) + ", must be " +
                   (lo == hi ? num(lo) : "in [" + num(lo) + ", " + num(hi) + "]"));
  }
  for (int d = 0; d < t.rank(); ++d) {
    if (t.shape[static_cast<size_t>(d)] < 1) {
      fail(name, "operand '" + name + "' has shape " + shape_str(t.shape) +
                     "; every tensor dimension must be >= 1");
    }
  }
  if (!element_count(t.shape)) {
    fail(name, "operand '" + name + "' has shape " + shape_str(t.shape) +
                   " with more than 2^44 elements: such a tensor cannot exist in memory");
  }
  if (auto len = literal_length(a.shape); len && t.shape[0] != *len) {
    fail(name, "operand '" + name + "' must have shape " + a.shape + ", got " + shape_str(t.shape));
  }
  if (a.elem[0] == '\0') return;
  if (std::optional<DType> fixed = parse_dtype(a.elem)) {
    if (t.dtype != *fixed) {
      fail(name, "operand '" + name + "' must have element type " + dtype_spec_name(*fixed) + ", got " +
                     dtype_spec_name(t.dtype));
    }
    return;
  }
  bind(a.elem, t.dtype, name);
}

void Infer::bind(const char* v, DType t, const std::string& operand) {
  auto [it, inserted] = vars_.emplace(v, std::make_pair(t, operand));
  if (!inserted && it->second.first != t) {
    fail(operand, "operand '" + operand + "' has element type " + dtype_spec_name(t) + " but " + v + " = " +
                      dtype_spec_name(it->second.first) + " (from '" + it->second.second + "')");
  }
}

DType Infer::resolve(const char* elem, std::string_view operand) const {
  if (std::optional<DType> fixed = parse_dtype(elem)) return *fixed;
  if (auto it = vars_.find(elem); it != vars_.end()) return it->second.first;
  const int vi = def_.type_var_index(elem);
  if (vi < 0) throw Error(ErrorCode::kInternal, std::string(def_.name) + ": unknown type variable " + elem);
  // The rows that fit every bound variable; the output's variable must agree across them.
  std::string bound;
  std::vector<DType> candidates;
  for (const auto& [name, binding] : vars_) {
    if (def_.type_var_index(name) < 0) continue;
    bound += (bound.empty() ? "" : ", ") + name + " = " + dtype_spec_name(binding.first);
  }
  for (const TypeSupport& row : def_.types) {
    bool fits = true;
    for (const auto& [name, binding] : vars_) {
      int i = def_.type_var_index(name);
      if (i >= 0 && row.types[i] != binding.first) fits = false;
    }
    if (!fits || (row_filter_ && !row_filter_(row))) continue;
    bool seen = false;
    for (DType c : candidates) seen |= c == row.types[vi];
    if (!seen) candidates.push_back(row.types[vi]);
  }
  if (candidates.empty()) {
    fail(operand, "the input types (" + bound + ") fit no row of the type support table, so " + elem +
                      " cannot be determined");
  }
  if (candidates.size() > 1) {
    // A node already in a graph declares its outputs: when the declared type is one of the
    // candidates, it decides (and its shape is still checked against the inferred one).
    for (size_t k = 0; k < n_.outputs.size() && k < def_.outputs.size(); ++k) {
      ValueId id = n_.outputs[k];
      if (std::string_view(def_.outputs[k].elem) != elem || id < 0 ||
          static_cast<size_t>(id) >= g_.values().size()) {
        continue;
      }
      DType declared = g_.value(id).type.dtype;
      for (DType c : candidates) {
        if (c == declared) return declared;
      }
    }
    std::string options;
    for (DType c : candidates) options += std::string(options.empty() ? "" : ", ") + dtype_spec_name(c);
    fail(operand, std::string(elem) + " is not determined by the input types (" + bound + "; it may be " +
                      options + "): the output type of " + def_.name + " must be given explicitly");
  }
  return candidates[0];
}

TensorType Infer::out(size_t index, Shape shape, std::optional<DType> dtype) const {
  const ArgDef& a = def_.outputs[index];
  const int lo = resolve_rank_bound(a.min_rank);
  const int hi = resolve_rank_bound(a.max_rank);
  const int rank = static_cast<int>(shape.size());
  if (rank < lo || rank > hi) {
    fail(a.name, "output '" + std::string(a.name) + "' would have shape " + shape_str(shape) + " of rank " +
                     num(rank) + ", but its rank must be in [" + num(lo) + ", " + num(hi) + "]");
  }
  for (int64_t d : shape) {
    if (d < 1) {
      fail(a.name, "output '" + std::string(a.name) + "' would have shape " + shape_str(shape) +
                       "; every tensor dimension must be >= 1");
    }
  }
  if (!element_count(shape)) {
    fail(a.name, "output '" + std::string(a.name) + "' would have shape " + shape_str(shape) +
                     " with more than 2^44 elements: such a tensor cannot exist in memory");
  }
  return TensorType{dtype ? *dtype : resolve(a.elem, a.name), std::move(shape)};
}

// ---------------------------------------------------------------------------------------------
// Shared rules

// broadcast_shape() of the specification, folded over the operands left to right (SELECT folds 3).
Shape Infer::broadcast(const std::vector<std::string_view>& operands) const {
  Shape result = sh(operands[0]);
  for (size_t k = 1; k < operands.size(); ++k) {
    const Shape& s = sh(operands[k]);
    if (s.size() != result.size()) {
      fail(operands[k], std::string(operands[k]) + " has rank " + num(static_cast<int64_t>(s.size())) +
                            " but " + std::string(operands[0]) + " has rank " +
                            num(static_cast<int64_t>(result.size())) +
                            "; broadcast_shape requires equal ranks (ERROR_IF)");
    }
    for (size_t i = 0; i < s.size(); ++i) {
      if (result[i] == 1) {
        result[i] = s[i];
      } else if (s[i] != 1 && s[i] != result[i]) {
        fail(operands[k], std::string(operands[k]) + " " + shape_str(s) + " cannot be broadcast with " +
                              shape_str(result) + ": dimension " + num(static_cast<int64_t>(i)) + " is " +
                              num(s[i]) + " vs " + num(result[i]) + " (ERROR_IF in broadcast_shape)");
      }
    }
  }
  return result;
}

void Infer::check_axis(int64_t axis, int64_t rank, const char* rank_expr) const {
  if (axis < 0 || axis >= rank) {
    fail("axis", "axis = " + num(axis) + " must satisfy 0 <= axis < " + rank_expr + " = " + num(rank) +
                     " (ERROR_IF)");
  }
}

// ERROR_IF(!is_same<T,i8_t>() && zp != 0): zero points are only allowed for int8. The value is known
// statically when the operand is a CONST; otherwise the check is left to run time.
void Infer::check_zero_point_int8_only(std::string_view zp, std::string_view type_var) const {
  DType t = var(type_var);
  if (t == DType::kInt8) return;
  const Tensor* c = constant_tensor_value(g_, input_id(zp));
  if (!c || !c->valid()) return;
  for (int64_t i = 0; i < c->num_elements(); ++i) {
    double v = c->at_double(i);
    if (v != 0) {
      fail(zp, std::string(zp) + " = " + (is_float(t) ? fnum(v) : num(c->at_int(i))) +
                   " but must be 0 when " + std::string(type_var) + " is " + dtype_spec_name(t) +
                   " (zero points are only allowed for i8_t) (ERROR_IF)");
    }
  }
}

void Infer::check_dim_equal(std::string_view operand, const char* what, int64_t got,
                            std::string_view ref_operand, int64_t expected) const {
  if (got != expected) {
    fail(operand, std::string(operand) + " " + what + " = " + num(got) + " differs from " +
                      std::string(ref_operand) + " " + what + " = " + num(expected));
  }
}

// ERROR_IF(v[i] < min) for the components of an attribute list, naming each component.
void Infer::check_positive(std::string_view attr_name, const std::vector<int64_t>& v,
                           const std::vector<const char*>& names, int64_t min, const char* rule) const {
  for (size_t i = 0; i < v.size() && i < names.size(); ++i) {
    if (v[i] < min) {
      fail(attr_name, std::string(names[i]) + " = " + num(v[i]) + " but " + rule + " (ERROR_IF)");
    }
  }
}

// O = idiv_check(I - 1 + pad_a + pad_b - (K - 1) * dilation, stride) + 1, as in
// CONV2D/CONV3D/DEPTHWISE_CONV2D.
int64_t Infer::conv_extent(const char* out_name, const char* in_name, int64_t in, const char* pad_a_name,
                           int64_t pad_a, const char* pad_b_name, int64_t pad_b, const char* k_name,
                           int64_t k, const char* dil_name, int64_t dil, const char* stride_name,
                           int64_t stride) const {
  const Wide numerator = Wide(in) - 1 + pad_a + pad_b - (Wide(k) - 1) * dil;
  const std::string expr = std::string("(") + in_name + " - 1 + " + pad_a_name + " + " + pad_b_name + " - (" +
                           k_name + " - 1) * " + dil_name + ")";
  const std::string values = std::string(" with ") + in_name + " = " + num(in) + ", " + pad_a_name + " = " +
                             num(pad_a) + ", " + pad_b_name + " = " + num(pad_b) + ", " + k_name + " = " +
                             num(k) + ", " + dil_name + " = " + num(dil);
  if (numerator % stride != 0) {
    fail("stride", expr + " = " + num(fit(numerator, "stride", expr)) + " is not a multiple of " +
                       stride_name + " = " + num(stride) + values + " (ERROR_IF in idiv_check)");
  }
  const int64_t o = fit(numerator / stride + 1, "output", std::string("output size ") + out_name);
  if (o < 1) {
    fail("output", std::string("output size ") + out_name + " = " + expr + " / " + stride_name +
                       " + 1 = " + num(o) + " must be >= 1" + values);
  }
  return o;
}

// O = idiv_check(I + pad_a + pad_b - kernel, stride) + 1, as in AVG_POOL2D/MAX_POOL2D.
int64_t Infer::pool_extent(const char* out_name, const char* in_name, int64_t in, const char* pad_a_name,
                           int64_t pad_a, const char* pad_b_name, int64_t pad_b, const char* k_name,
                           int64_t k, const char* stride_name, int64_t stride) const {
  const Wide numerator = Wide(in) + pad_a + pad_b - k;
  const std::string expr =
      std::string("(") + in_name + " + " + pad_a_name + " + " + pad_b_name + " - " + k_name + ")";
  const std::string values = std::string(" with ") + in_name + " = " + num(in) + ", " + pad_a_name + " = " +
                             num(pad_a) + ", " + pad_b_name + " = " + num(pad_b) + ", " + k_name + " = " +
                             num(k);
  if (numerator % stride != 0) {
    fail("stride", expr + " = " + num(fit(numerator, "stride", expr)) + " is not a multiple of " +
                       stride_name + " = " + num(stride) + values + " (ERROR_IF in idiv_check)");
  }
  const int64_t o = fit(numerator / stride + 1, "output", std::string("output size ") + out_name);
  if (o < 1) {
    fail("output", std::string("output size ") + out_name + " = " + expr + " / " + stride_name +
                       " + 1 = " + num(o) + " must be >= 1" + values);
  }
  return o;
}

// ERROR_IF(BC != OC && BC != 1): the bias has one value per output channel or a single value.
void Infer::check_bias(int64_t bc, int64_t oc, const char* oc_name) const {
  if (bc != oc && bc != 1) {
    fail("bias",
         "bias length BC = " + num(bc) + " must be " + oc_name + " = " + num(oc) + " or 1 (ERROR_IF)");
  }
}

void Infer::check_graph_types(std::string_view operand, const std::string& what,
                              const std::vector<TensorType>& got, const std::string& ref_what,
                              const std::vector<TensorType>& expected) const {
  if (got.size() != expected.size()) {
    fail(operand, what + " has " + num(static_cast<int64_t>(got.size())) + " tensors but " + ref_what +
                      " has " + num(static_cast<int64_t>(expected.size())) + " (ERROR_IF)");
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != expected[i]) {
      fail(operand, what + " " + types_str(got) + " does not match " + ref_what + " " + types_str(expected) +
                        ": element " + num(static_cast<int64_t>(i)) + " is " + got[i].str() + " vs " +
                        expected[i].str() + " (ERROR_IF)");
    }
  }
}

const Graph& Infer::subgraph(std::string_view attr_name) const {
  const std::string& name = attr_str(attr_name);
  if (!module_) {
    fail(attr_name, std::string(attr_name) + " '" + name + "' cannot be resolved: no module was given");
  }
  const Graph* sg = module_->find_graph(name);
  if (!sg) fail(attr_name, std::string(attr_name) + " '" + name + "' is not a graph of the module");
  return *sg;
}

// The types of a sub-graph's inputs or outputs.
std::vector<TensorType> Infer::graph_types(const Graph& sg, const std::vector<ValueId>& ids) const {
  std::vector<TensorType> r;
  for (ValueId id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= sg.values().size()) {
      fail("", "graph '" + sg.name() + "' refers to unknown value id " + num(id) + " in its signature");
    }
    r.push_back(sg.value(id).type);
  }
  return r;
}

// The VARIABLE declaration named `name`: in the node's graph first, then in the other graphs of the
// module (a VARIABLE_READ/WRITE may sit in a control flow sub-graph of the declaring graph).
std::pair<const Graph*, const Node*> Infer::find_variable(const std::string& name) const {
  auto search = [&](const Graph& graph) -> const Node* {
    for (const Node& cand : graph.nodes()) {
      if (&cand == &n_ || cand.op != Op::VARIABLE || cand.attrs.empty()) continue;
      const auto* s = std::get_if<std::string>(&cand.attrs[0]);
      if (s && *s == name) return &cand;
    }
    return nullptr;
  };
  if (const Node* v = search(g_)) return {&g_, v};
  if (module_) {
    for (const Graph& other : module_->graphs()) {
      if (&other == &g_) continue;
      if (const Node* v = search(other)) return {&other, v};
    }
  }
  return {nullptr, nullptr};
}

// ---------------------------------------------------------------------------------------------
// Operator families

// ADD, SUB, ... : output shape = broadcast_shape(shape1, shape2), output type = in_out_t.
std::vector<TensorType> Infer::elementwise_binary() { return {out(0, broadcast({"input1", "input2"}))}; }

std::vector<TensorType> Infer::unary_same_shape() { return {out(0, sh(def_.inputs[0].name))}; }

// EQUAL, GREATER, GREATER_EQUAL: broadcast like the binary operators; out_t (bool_t) from the table.
std::vector<TensorType> Infer::comparison() { return {out(0, broadcast({"input1", "input2"}))}; }

// REDUCE_*: ERROR_IF(axis < 0 || axis >= rank(shape1)); ERROR_IF(shape[axis] != 1).
std::vector<TensorType> Infer::reduce() {
  Shape s = sh("input");
  const int64_t axis = attr_int("axis");
  check_axis(axis, static_cast<int64_t>(s.size()), "rank(shape1)");
  s[static_cast<size_t>(axis)] = 1;
  return {out(0, std::move(s))};
}

std::vector<TensorType> Infer::argmax() {
  const Shape& s = sh("input");
  const int64_t axis = attr_int("axis");
  check_axis(axis, static_cast<int64_t>(s.size()), "rank(shape1)");
  // shape = flatten(left_shape, right_shape): the input shape without the axis.
  Shape o;
  for (size_t i = 0; i < s.size(); ++i) {
    if (static_cast<int64_t>(i) != axis) o.push_back(s[i]);
  }
  return {out(0, std::move(o))};
}

std::vector<TensorType> Infer::pool2d(bool avg) {
  const Shape& in = sh("input");  // [N,IH,IW,C]
  if (avg) {
    check_zero_point_int8_only("input_zp", "in_out_t");
    check_zero_point_int8_only("output_zp", "in_out_t");
  }
  const auto& kernel = attr_ints("kernel", 2);
  const auto& stride = attr_ints("stride", 2);
  const auto& pad = attr_ints("pad", 4);
  check_positive("kernel", kernel, {"kernel_y", "kernel_x"}, 1, "kernel sizes must be >= 1");
  check_positive("stride", stride, {"stride_y", "stride_x"}, 1, "strides must be >= 1");
  check_positive("pad", pad, {"pad_top", "pad_bottom", "pad_left", "pad_right"}, 0, "padding must be >= 0");
  // Padding must be less than the kernel so that every window holds at least one input value.
  const char* pad_names[] = {"pad_top", "pad_bottom", "pad_left", "pad_right"};
  for (int i = 0; i < 4; ++i) {
    const int64_t k = kernel[static_cast<size_t>(i / 2)];
    if (pad[static_cast<size_t>(i)] >= k) {
      fail("pad", std::string(pad_names[i]) + " = " + num(pad[static_cast<size_t>(i)]) +
                      " must be less than " + (i < 2 ? "kernel_y" : "kernel_x") + " = " + num(k) +
                      " (ERROR_IF)");
    }
  }
  const int64_t oh = pool_extent("OH", "IH", in[1], "pad_top", pad[0], "pad_bottom", pad[1], "kernel_y",
                                 kernel[0], "stride_y", stride[0]);
  const int64_t ow = pool_extent("OW", "IW", in[2], "pad_left", pad[2], "pad_right", pad[3], "kernel_x",
                                 kernel[1], "stride_x", stride[1]);
  return {out(0, {in[0], oh, ow, in[3]})};
}

std::vector<TensorType> Infer::conv2d() {
  const Shape& in = sh("input");  // [N,IH,IW,IC]
  const Shape& w = sh("weight");  // [OC,KH,KW,IC]
  check_dim_equal("weight", "IC", w[3], "input", in[3]);
  check_zero_point_int8_only("input_zp", "in_t");
  check_zero_point_int8_only("weight_zp", "weight_t");
  const auto& pad = attr_ints("pad", 4);
  const auto& stride = attr_ints("stride", 2);
  const auto& dil = attr_ints("dilation", 2);
  check_positive("pad", pad, {"pad_top", "pad_bottom", "pad_left", "pad_right"}, 0, "padding must be >= 0");
  check_positive("stride", stride, {"stride_y", "stride_x"}, 1, "strides must be >= 1");
  check_positive("dilation", dil, {"dilation_y", "dilation_x"}, 1, "dilations must be >= 1");
  const int64_t oh = conv_extent("OH", "IH", in[1], "pad_top", pad[0], "pad_bottom", pad[1], "KH", w[1],
                                 "dilation_y", dil[0], "stride_y", stride[0]);
  const int64_t ow = conv_extent("OW", "IW", in[2], "pad_left", pad[2], "pad_right", pad[3], "KW", w[2],
                                 "dilation_x", dil[1], "stride_x", stride[1]);
  check_bias(sh("bias")[0], w[0], "OC");
  return {out(0, {in[0], oh, ow, w[0]})};
}

std::vector<TensorType> Infer::conv3d() {
  const Shape& in = sh("input");  // [N,ID,IH,IW,IC]
  const Shape& w = sh("weight");  // [OC,KD,KH,KW,IC]
  check_dim_equal("weight", "IC", w[4], "input", in[4]);
  check_zero_point_int8_only("input_zp", "in_t");
  check_zero_point_int8_only("weight_zp", "weight_t");
  const auto& pad = attr_ints("pad", 6);
  const auto& stride = attr_ints("stride", 3);
  const auto& dil = attr_ints("dilation", 3);
  check_positive("pad", pad, {"pad_d0", "pad_d1", "pad_top", "pad_bottom", "pad_left", "pad_right"}, 0,
                 "padding must be >= 0");
  check_positive("stride", stride, {"stride_d", "stride_y", "stride_x"}, 1, "strides must be >= 1");
  check_positive("dilation", dil, {"dilation_d", "dilation_y", "dilation_x"}, 1, "dilations must be >= 1");
  const int64_t od = conv_extent("OD", "ID", in[1], "pad_d0", pad[0], "pad_d1", pad[1], "KD", w[1],
                                 "dilation_d", dil[0], "stride_d", stride[0]);
  const int64_t oh = conv_extent("OH", "IH", in[2], "pad_top", pad[2], "pad_bottom", pad[3], "KH", w[2],
                                 "dilation_y", dil[1], "stride_y", stride[1]);
  const int64_t ow = conv_extent("OW", "IW", in[3], "pad_left", pad[4], "pad_right", pad[5], "KW", w[3],
                                 "dilation_x", dil[2], "stride_x", stride[2]);
  check_bias(sh("bias")[0], w[0], "OC");
  return {out(0, {in[0], od, oh, ow, w[0]})};
}

std::vector<TensorType> Infer::depthwise_conv2d() {
  const Shape& in = sh("input");  // [N,IH,IW,C]
  const Shape& w = sh("weight");  // [KH,KW,C,M]
  check_dim_equal("weight", "C", w[2], "input", in[3]);
  check_zero_point_int8_only("input_zp", "in_t");
  check_zero_point_int8_only("weight_zp", "weight_t");
  const auto& pad = attr_ints("pad", 4);
  const auto& stride = attr_ints("stride", 2);
  const auto& dil = attr_ints("dilation", 2);
  check_positive("pad", pad, {"pad_top", "pad_bottom", "pad_left", "pad_right"}, 0, "padding must be >= 0");
  check_positive("stride", stride, {"stride_y", "stride_x"}, 1, "strides must be >= 1");
  check_positive("dilation", dil, {"dilation_y", "dilation_x"}, 1, "dilations must be >= 1");
  const int64_t oh = conv_extent("OH", "IH", in[1], "pad_top", pad[0], "pad_bottom", pad[1], "KH", w[0],
                                 "dilation_y", dil[0], "stride_y", stride[0]);
  const int64_t ow = conv_extent("OW", "IW", in[2], "pad_left", pad[2], "pad_right", pad[3], "KW", w[1],
                                 "dilation_x", dil[1], "stride_x", stride[1]);
  const int64_t cm = fit(Wide(w[2]) * w[3], "weight", "C*M");
  check_bias(sh("bias")[0], cm, "C*M");
  return {out(0, {in[0], oh, ow, cm})};
}

std::vector<TensorType> Infer::transpose_conv2d() {
  const Shape& in = sh("input");  // [N,IH,IW,IC]
  const Shape& w = sh("weight");  // [OC,KH,KW,IC]
  check_dim_equal("weight", "IC", w[3], "input", in[3]);
  check_zero_point_int8_only("input_zp", "in_t");
  check_zero_point_int8_only("weight_zp", "weight_t");
  const auto& out_pad = attr_ints("out_pad", 4);
  const auto& stride = attr_ints("stride", 2);
  const int64_t kh = w[1], kw = w[2];
  const char* pad_names[] = {"out_pad_top", "out_pad_bottom", "out_pad_left", "out_pad_right"};
  for (int i = 0; i < 4; ++i) {
    const int64_t k = i < 2 ? kh : kw;
    if (out_pad[static_cast<size_t>(i)] <= -k) {
      fail("out_pad", std::string(pad_names[i]) + " = " + num(out_pad[static_cast<size_t>(i)]) +
                          " must be > -" + (i < 2 ? "KH" : "KW") + " = " + num(-k) + " (ERROR_IF)");
    }
  }
  check_positive("stride", stride, {"stride_y", "stride_x"}, 1, "strides must be >= 1");
  // OH = (IH - 1) * stride_y + out_pad_top + out_pad_bottom + KH (and likewise OW).
  const int64_t oh =
      fit((Wide(in[1]) - 1) * stride[0] + out_pad[0] + out_pad[1] + kh, "output", "output size OH");
  const int64_t ow =
      fit((Wide(in[2]) - 1) * stride[1] + out_pad[2] + out_pad[3] + kw, "output", "output size OW");
  if (oh < 1 || ow < 1) {
    fail("output", "output size OH = (IH - 1) * stride_y + out_pad_top + out_pad_bottom + KH = " + num(oh) +
                       ", OW = (IW - 1) * stride_x + out_pad_left + out_pad_right + KW = " + num(ow) +
                       "; both must be >= 1");
  }
  check_bias(sh("bias")[0], w[0], "OC");
  return {out(0, {in[0], oh, ow, w[0]})};
}

// FFT2D: ERROR_IF(!power_of_two(H)); ERROR_IF(!power_of_two(W)); both outputs [N,H,W].
std::vector<TensorType> Infer::fft2d() {
  const Shape& re = sh("input_real");
  const Shape& im = sh("input_imag");
  if (re != im) {
    fail("input_imag",
         "input_imag " + shape_str(im) + " must have the shape of input_real " + shape_str(re) + " [N,H,W]");
  }
  if (!is_power_of_two(re[1])) fail("input_real", "H = " + num(re[1]) + " must be a power of two (ERROR_IF)");
  if (!is_power_of_two(re[2])) fail("input_real", "W = " + num(re[2]) + " must be a power of two (ERROR_IF)");
  return {out(0, re), out(1, re)};
}

// RFFT2D: both outputs [N,H,W/2 + 1].
std::vector<TensorType> Infer::rfft2d() {
  const Shape& in = sh("input_real");
  if (!is_power_of_two(in[1])) fail("input_real", "H = " + num(in[1]) + " must be a power of two (ERROR_IF)");
  if (!is_power_of_two(in[2])) fail("input_real", "W = " + num(in[2]) + " must be a power of two (ERROR_IF)");
  Shape o{in[0], in[1], in[2] / 2 + 1};
  return {out(0, o), out(1, o)};
}

std::vector<TensorType> Infer::matmul() {
  const Shape& a = sh("A");  // [N,H,C]
  const Shape& b = sh("B");  // [N,C,W]
  check_dim_equal("B", "N", b[0], "A", a[0]);
  check_dim_equal("B", "C", b[1], "A", a[2]);
  // The 1.0.2 pseudocode reads ERROR_IF(is_same<in_t,i8_t> && (A_zp != 0 || B_zp != 0)), which
  // contradicts the argument descriptions ("Must be zero for non-int8 types") and every other
  // operator with zero points; the descriptions' rule is the one applied.
  check_zero_point_int8_only("A_zp", "in_t");
  check_zero_point_int8_only("B_zp", "in_t");
  return {out(0, {a[0], a[1], b[2]})};
}

std::vector<TensorType> Infer::clamp() {
  const DType t = var("in_out_t");
  const Tensor& lo = attr_tensor("min_val");
  const Tensor& hi = attr_tensor("max_val");
  for (const auto& [name, v] : {std::pair<const char*, const Tensor*>{"min_val", &lo}, {"max_val", &hi}}) {
    if (v->dtype() != t || v->num_elements() != 1 || !v->valid()) {
      fail(name, std::string(name) + " must be one value of in_out_t = " + dtype_spec_name(t) + ", got " +
                     v->type().str());
    }
  }
  if (is_float(t)) {
    const double l = lo.at_double(0), h = hi.at_double(0);
    if (std::isnan(l) || std::isnan(h))
      fail(std::isnan(l) ? "min_val" : "max_val", "min_val and max_val must not be NaN (ERROR_IF)");
    if (h < l) fail("max_val", "max_val = " + fnum(h) + " is less than min_val = " + fnum(l) + " (ERROR_IF)");
  } else {
    const int64_t l = lo.at_int(0), h = hi.at_int(0);
    if (h < l) fail("max_val", "max_val = " + num(h) + " is less than min_val = " + num(l) + " (ERROR_IF)");
  }
  return {out(0, sh("input"))};
}

// MUL: REQUIRE(0 <= shift && shift <= 63); REQUIRE(is_same<in_t,int32_t>() || shift == 0). These are
// decided here when the shift is a CONST: a graph that breaks them can never run correctly.
std::vector<TensorType> Infer::mul() {
  Shape s = broadcast({"input1", "input2"});
  if (const Tensor* c = constant_tensor_value(g_, input_id("shift"));
      c && c->valid() && c->num_elements() == 1) {
    const int64_t shift = c->at_int(0);
    if (shift < 0 || shift > 63) fail("shift", "shift = " + num(shift) + " must be in [0, 63] (REQUIRE)");
    const DType in_t = var("in_t");
    if (in_t != DType::kInt32 && shift != 0) {
      fail("shift", "shift = " + num(shift) + " but must be 0 when in_t is " + dtype_spec_name(in_t) +
                        " (only i32_t multiplies are shifted) (REQUIRE)");
    }
  }
  return {out(0, std::move(s))};
}

// TABLE: the table holds TABLE_SIZE entries: 256 for i8_t inputs, 513 for i16_t (tosa.xml typesupport).
std::vector<TensorType> Infer::table() {
  TensorType o = out(0, sh("input1"));  // first: in_t and table_t must fit a row of the table
  const DType in_t = var("in_t");
  const int64_t len = sh("table")[0];
  int64_t expected = 0;
  if (in_t == DType::kInt8) expected = 256;
  if (in_t == DType::kInt16) expected = 513;
  if (expected != 0 && len != expected) {
    fail("table", "table has " + num(len) + " entries but TABLE_SIZE = " + num(expected) +
                      " for in_t = " + dtype_spec_name(in_t) + " (REQUIRE(length(table) == TABLE_SIZE))");
  }
  return {o};
}

std::vector<TensorType> Infer::negate() {
  check_zero_point_int8_only("input1_zp", "in_out_t");
  check_zero_point_int8_only("output_zp", "in_out_t");
  return {out(0, sh("input1"))};
}

// SELECT: shape = broadcast_shape(broadcast_shape(shape1, shape2), shape3).
std::vector<TensorType> Infer::select() { return {out(0, broadcast({"input1", "input2", "input3"}))}; }

std::vector<TensorType> Infer::concat() {
  const size_t count = list_size();
  if (count == 0) fail("input1", "the input list must hold at least one tensor (ERROR_IF)");
  const Shape& first = list_ty(0).shape;
  const int64_t axis = attr_int("axis");
  const int64_t rank = static_cast<int64_t>(first.size());
  if (axis < 0 || axis >= std::max<int64_t>(1, rank)) {
    fail("axis", "axis = " + num(axis) + " must satisfy 0 <= axis < max(1, rank(shapes1[0])) = " +
                     num(std::max<int64_t>(1, rank)) + " (ERROR_IF)");
  }
  Wide axis_sum = 0;
  for (size_t k = 0; k < count; ++k) {
    const Shape& s = list_ty(k).shape;
    if (static_cast<int64_t>(s.size()) != rank) {
      fail(list_name(k), list_name(k) + " has rank " + num(static_cast<int64_t>(s.size())) +
                             " but input1[0] has rank " + num(rank) + " (ERROR_IF)");
    }
    for (int64_t i = 0; i < rank; ++i) {
      const size_t u = static_cast<size_t>(i);
      if (i == axis) {
        axis_sum += s[u];
      } else if (s[u] != first[u]) {
        fail(list_name(k), list_name(k) + " " + shape_str(s) + " differs from input1[0] " + shape_str(first) +
                               " in dimension " + num(i) +
                               ", which is not the concatenation axis (ERROR_IF)");
      }
    }
  }
  Shape o = first;
  o[static_cast<size_t>(axis)] = fit(axis_sum, "input1", "the sum of the concatenated dimensions");
  return {out(0, std::move(o))};
}

std::vector<TensorType> Infer::pad() {
  const Shape& in = sh("input1");
  const std::vector<int64_t> padding = shape_value("padding");
  if (padding.size() != 2 * in.size()) {
    fail("padding",
         "padding has " + num(static_cast<int64_t>(padding.size())) +
             " values but must have 2 * rank(shape1) = " + num(static_cast<int64_t>(2 * in.size())));
  }
  Shape o(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (padding[2 * i] < 0 || padding[2 * i + 1] < 0) {
      fail("padding", "padding " + list_str(padding) + " has a negative value for dimension " +
                          num(static_cast<int64_t>(i)) + " (ERROR_IF)");
    }
    o[i] = fit(Wide(padding[2 * i]) + in[i] + padding[2 * i + 1], "padding",
               "padded dimension " + num(static_cast<int64_t>(i)));
  }
  return {out(0, std::move(o))};
}

std::vector<TensorType> Infer::reshape() {
  const Shape& in = sh("input1");
  Shape o = shape_value("shape");
  for (int64_t d : o) {
    if (d < 1)
      fail("shape", "new shape " + shape_str(o) + " has a dimension < 1; tensor dimensions must be >= 1");
  }
  if (static_cast<int>(o.size()) > kMaxRank) {
    fail("shape", "new shape " + shape_str(o) + " has rank " + num(static_cast<int64_t>(o.size())) +
                      " > MAX_RANK = " + num(kMaxRank));
  }
  const std::optional<int64_t> in_n = element_count(in);
  const std::optional<int64_t> out_n = element_count(o);
  if (!out_n)
    fail("shape", "new shape " + shape_str(o) + " has more elements than the tensor size range allows");
  if (in_n != out_n) {
    fail("shape", "tensor_size(shape1) = " + num(in_n.value_or(-1)) + " (" + shape_str(in) +
                      ") differs from tensor_size(shape) = " + num(*out_n) + " (" + shape_str(o) +
                      ") (ERROR_IF)");
  }
  return {out(0, std::move(o))};
}

std::vector<TensorType> Infer::reverse() {
  const Shape& in = sh("input1");
  check_axis(attr_int("axis"), static_cast<int64_t>(in.size()), "rank(shape)");
  return {out(0, in)};
}

std::vector<TensorType> Infer::slice() {
  const Shape& in = sh("input1");
  const std::vector<int64_t> start = shape_value("start");
  const std::vector<int64_t> size = shape_value("size");
  const int64_t rank = static_cast<int64_t>(in.size());
  if (static_cast<int64_t>(start.size()) != rank) {
    fail("start", "length(start) = " + num(static_cast<int64_t>(start.size())) +
                      " differs from rank(shape1) = " + num(rank) + " (ERROR_IF)");
  }
  if (static_cast<int64_t>(size.size()) != rank) {
    fail("size", "length(size) = " + num(static_cast<int64_t>(size.size())) +
                     " differs from rank(shape1) = " + num(rank) + " (ERROR_IF)");
  }
  for (size_t i = 0; i < in.size(); ++i) {
    const std::string at = "[" + num(static_cast<int64_t>(i)) + "]";
    if (start[i] < 0) fail("start", "start" + at + " = " + num(start[i]) + " must be >= 0 (ERROR_IF)");
    if (size[i] <= 0) fail("size", "size" + at + " = " + num(size[i]) + " must be > 0 (ERROR_IF)");
    if (start[i] + size[i] > in[i]) {
      fail("size", "start" + at + " + size" + at + " = " + num(start[i]) + " + " + num(size[i]) +
                       " exceeds shape1" + at + " = " + num(in[i]) + " (ERROR_IF)");
    }
  }
  return {out(0, size)};
}

std::vector<TensorType> Infer::tile() {
  const Shape& in = sh("input1");
  const std::vector<int64_t> multiples = shape_value("multiples");
  if (multiples.size() != in.size()) {
    fail("multiples", "multiples has " + num(static_cast<int64_t>(multiples.size())) +
                          " values but must have rank(shape1) = " + num(static_cast<int64_t>(in.size())) +
                          " (ERROR_IF(rank(shape1) != rank(shape)))");
  }
  Shape o(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    // shape[i] = shape1[i] * multiples[i], and output dimensions must be >= 1.
    if (multiples[i] < 1) {
      fail("multiples", "multiples[" + num(static_cast<int64_t>(i)) + "] = " + num(multiples[i]) +
                            " must be >= 1 (output dimension shape1[i] * multiples[i] must be >= 1)");
    }
    o[i] = fit(Wide(in[i]) * multiples[i], "multiples",
               "shape1[i] * multiples[i] for i = " + num(static_cast<int64_t>(i)));
  }
  return {out(0, std::move(o))};
}

std::vector<TensorType> Infer::transpose() {
  const Shape& in = sh("input1");
  const auto& perms = attr_ints("perms", -1);
  if (perms.size() != in.size()) {
    fail("perms", "perms has " + num(static_cast<int64_t>(perms.size())) +
                      " values but must have rank(shape1) = " + num(static_cast<int64_t>(in.size())));
  }
  std::vector<bool> used(in.size(), false);
  Shape o(in.size());
  for (size_t i = 0; i < perms.size(); ++i) {
    const int64_t p = perms[i];
    if (p < 0 || p >= static_cast<int64_t>(in.size())) {
      fail("perms", "perms " + list_str(perms) + ": value " + num(p) +
                        " is not in [0, rank(shape1) - 1] = [0, " + num(static_cast<int64_t>(in.size()) - 1) +
                        "] (ERROR_IF)");
    }
    if (used[static_cast<size_t>(p)]) {
      fail("perms",
           "perms " + list_str(perms) + " is not a permutation: " + num(p) + " is repeated (ERROR_IF)");
    }
    used[static_cast<size_t>(p)] = true;
    o[i] = in[static_cast<size_t>(p)];  // shape[i] = shape1[perms[i]]
  }
  return {out(0, std::move(o))};
}

std::vector<TensorType> Infer::gather() {
  const Shape& values = sh("values");    // [N,K,C]
  const Shape& indices = sh("indices");  // [N,W]
  check_dim_equal("indices", "N", indices[0], "values", values[0]);
  return {out(0, {values[0], indices[1], values[2]})};
}

std::vector<TensorType> Infer::scatter() {
  const Shape& values = sh("values_in");  // [N,K,C]
  const Shape& indices = sh("indices");   // [N,W]
  const Shape& input = sh("input");       // [N,W,C]
  check_dim_equal("indices", "N", indices[0], "values_in", values[0]);
  check_dim_equal("input", "N", input[0], "values_in", values[0]);
  check_dim_equal("input", "W", input[1], "indices", indices[1]);
  check_dim_equal("input", "C", input[2], "values_in", values[2]);
  return {out(0, values)};
}

std::vector<TensorType> Infer::resize() {
  const Shape& in = sh("input");  // [N,IH,IW,C]
  const std::vector<int64_t> scale = shape_value("scale");
  const std::vector<int64_t> offset = shape_value("offset");
  const std::vector<int64_t> border = shape_value("border");
  if (scale.size() != 4)
    fail("scale", "scale must hold 4 values [scale_y_n, scale_y_d, scale_x_n, scale_x_d]");
  if (offset.size() != 2) fail("offset", "offset must hold 2 values [offset_y, offset_x]");
  if (border.size() != 2) fail("border", "border must hold 2 values [border_y, border_x]");
  const int64_t y_n = scale[0], y_d = scale[1], x_n = scale[2], x_d = scale[3];
  const int64_t off_y = offset[0], off_x = offset[1], bord_y = border[0], bord_x = border[1];
  const std::string sc = " (scale = " + list_str(scale) + ")";
  if (y_n <= 0 || y_d <= 0 || x_n <= 0 || x_d <= 0)
    fail("scale", "scale values must be > 0" + sc + " (ERROR_IF)");
  if (y_n > (1 << 11) || x_n > (1 << 11)) {
    fail("scale", "scale_y_n and scale_x_n must be <= 2048 (1 << 11)" + sc + " (ERROR_IF)");
  }
  if (y_d >= 16 * y_n || x_d >= 16 * x_n) {
    fail("scale",
         "scale_y_d must be < 16 * scale_y_n and scale_x_d < 16 * scale_x_n (downscale limited to 1/16)" +
             sc + " (ERROR_IF)");
  }
  if (off_y < -y_n || off_y >= 16 * y_n) {
    fail("offset", "offset_y = " + num(off_y) + " must be in [-scale_y_n, 16 * scale_y_n) = [" + num(-y_n) +
                       ", " + num(16 * y_n) + ") (ERROR_IF)");
  }
  if (off_x < -x_n || off_x >= 16 * x_n) {
    fail("offset", "offset_x = " + num(off_x) + " must be in [-scale_x_n, 16 * scale_x_n) = [" + num(-x_n) +
                       ", " + num(16 * x_n) + ") (ERROR_IF)");
  }
  if (bord_y < -16 * y_n || bord_y >= y_n) {
    fail("border", "border_y = " + num(bord_y) + " must be in [-16 * scale_y_n, scale_y_n) = [" +
                       num(-16 * y_n) + ", " + num(y_n) + ") (ERROR_IF)");
  }
  if (bord_x < -16 * x_n || bord_x >= x_n) {
    fail("border", "border_x = " + num(bord_x) + " must be in [-16 * scale_x_n, scale_x_n) = [" +
                       num(-16 * x_n) + ", " + num(x_n) + ") (ERROR_IF)");
  }
  // OH = idiv_check((IH - 1) * scale_y_n - offset_y + border_y, scale_y_d) + 1, likewise OW.
  auto extent = [&](const char* o_name, const char* i_name, int64_t i, int64_t n, int64_t d, int64_t off,
                    int64_t bord, const char* axis) {
    const int64_t numerator =
        fit((Wide(i) - 1) * n - off + bord, "scale", std::string("the ") + o_name + " numerator");
    const std::string expr = std::string("(") + i_name + " - 1) * scale_" + axis + "_n - offset_" + axis +
                             " + border_" + axis + " = " + num(numerator);
    if (numerator % d != 0) {
      fail("scale",
           expr + " is not a multiple of scale_" + axis + "_d = " + num(d) + " (ERROR_IF in idiv_check)");
    }
    const int64_t o = numerator / d + 1;
    if (o < 1)
      fail("output", std::string("output size ") + o_name + " = " + num(o) + " must be >= 1 (" + expr + ")");
    return o;
  };
  const int64_t oh = extent("OH", "IH", in[1], y_n, y_d, off_y, bord_y, "y");
  const int64_t ow = extent("OW", "IW", in[2], x_n, x_d, off_x, bord_x, "x");
  const int64_t largest = std::max({oh, ow, in[1], in[2]});
  if (largest >= 16384) {
    fail(largest == oh || largest == ow ? "output" : "input",
         "max(OH, OW, IH, IW) = max(" + num(oh) + ", " + num(ow) + ", " + num(in[1]) + ", " + num(in[2]) +
             ") must be < 16384 (ERROR_IF)");
  }
  // The table's integer rows are per mode ("signed 8, bilinear" -> i32_t, "signed 8, nearest" -> i8_t):
  // only the rows of this node's mode decide out_t.
  const int64_t mode = attr_int("mode");
  const char* other = mode == static_cast<int64_t>(ResizeMode::kBilinear) ? "nearest" : "bilinear";
  if (mode != static_cast<int64_t>(ResizeMode::kBilinear) &&
      mode != static_cast<int64_t>(ResizeMode::kNearest)) {
    fail("mode", "mode = " + num(mode) + " is not NEAREST_NEIGHBOR or BILINEAR");
  }
  row_filter_ = [other](const TypeSupport& row) {
    return std::string_view(row.mode).find(other) == std::string_view::npos;
  };
  return {out(0, {in[0], oh, ow, in[3]})};
}

std::vector<TensorType> Infer::rescale() {
  const Shape& in = sh("input");
  const DType in_t = var("in_t");
  const DType out_t = var("out_t");  // bound by output_zp
  const bool scale32 = attr_bool("scale32");
  const bool per_channel = attr_bool("per_channel");
  const bool in_unsigned = attr_bool("input_unsigned");
  const bool out_unsigned = attr_bool("output_unsigned");
  const int64_t rounding = attr_int("rounding_mode");
  // mul_t = scale32 ? i32_t : i16_t (scale32 attribute description).
  const DType mul_t = scale32 ? DType::kInt32 : DType::kInt16;
  if (ty("multiplier").dtype != mul_t) {
    fail("multiplier", std::string("multiplier has element type ") + dtype_spec_name(ty("multiplier").dtype) +
                           " but mul_t must be " + dtype_spec_name(mul_t) +
                           " when scale32 = " + (scale32 ? "true" : "false"));
  }
  // Zero points: int8/uint8 any value in range, uint16 0 or 32768, every other type 0.
  auto check_zp = [&](const char* zp, DType t, bool is_unsigned, const char* flag) {
    const Tensor* c = constant_tensor_value(g_, input_id(zp));
    if (!c || !c->valid() || c->num_elements() != 1) return;
    // A zero point of an unsigned type is stored in the signed type's bits: read it unsigned.
    int64_t v = c->at_int(0);
    if (is_unsigned && t == DType::kInt16) v &= 0xFFFF;
    if (is_unsigned && t == DType::kInt8) v &= 0xFF;
    if (t == DType::kInt8) return;
    if (t == DType::kInt16 && is_unsigned) {
      if (v != 0 && v != 32768) {
        fail(zp, std::string(zp) + " = " + num(v) + " but must be 0 or 32768 for unsigned 16-bit values (" +
                     flag + " = true) (ERROR_IF)");
      }
      return;
    }
    if (v != 0) {
      fail(zp, std::string(zp) + " = " + num(v) + " but must be 0 for " + dtype_spec_name(t) +
                   (t == DType::kInt16 ? " unless " + std::string(flag) + " (uint16 zero point 32768)"
                                       : std::string()) +
                   " (ERROR_IF)");
    }
  };
  check_zp("input_zp", in_t, in_unsigned, "input_unsigned");
  check_zp("output_zp", out_t, out_unsigned, "output_unsigned");
  if (scale32 && in_t == DType::kInt48)
    fail("scale32", "scale32 must be false when in_t is i48_t (ERROR_IF)");
  if (!scale32 && rounding == static_cast<int64_t>(RoundingMode::kDouble)) {
    fail("rounding_mode", "rounding_mode DOUBLE_ROUND requires scale32 = true (ERROR_IF)");
  }
  if (in_unsigned && out_unsigned) {
    fail("input_unsigned", "input_unsigned and output_unsigned must not both be true (ERROR_IF)");
  }
  if (out_t == DType::kInt32 && in_unsigned) {
    fail("input_unsigned", "input_unsigned must be false when out_t is i32_t (ERROR_IF)");
  }
  if ((in_t == DType::kInt32 || in_t == DType::kInt48) && out_unsigned) {
    fail("output_unsigned",
         std::string("output_unsigned must be false when in_t is ") + dtype_spec_name(in_t) + " (ERROR_IF)");
  }
  if ((in_t == DType::kInt32 || in_t == DType::kInt48) && in_unsigned) {
    fail("input_unsigned", std::string("input_unsigned must be false when in_t is ") + dtype_spec_name(in_t) +
                               " (no u32/u48 inputs) (ERROR_IF)");
  }
  if (out_t == DType::kInt32 && out_unsigned) {
    fail("output_unsigned", "output_unsigned must be false when out_t is i32_t (no u32 outputs) (ERROR_IF)");
  }
  if (per_channel && in.empty()) fail("per_channel", "per_channel requires rank(input) >= 1 (ERROR_IF)");
  // NC = per_channel ? shape[rank(shape) - 1] : 1 for both multiplier and shift.
  const int64_t nc = per_channel ? in.back() : 1;
  for (const char* name : {"multiplier", "shift"}) {
    if (sh(name)[0] != nc) {
      fail(name, std::string(name) + " has " + num(sh(name)[0]) + " values but NC = " + num(nc) +
                     (per_channel ? " (per_channel: the last input dimension)" : " (per_channel = false)"));
    }
  }
  return {out(0, in)};
}

std::vector<TensorType> Infer::constant() {
  const Tensor& values = attr_tensor("values");
  if (values.type().dtype == DType::kShape)
    fail("values", "CONST values must be a tensor, not shape_t (use CONST_SHAPE)");
  if (!values.valid()) fail("values", "CONST values " + values.type().str() + " hold no data");
  return {out(0, values.shape(), values.dtype())};
}

std::vector<TensorType> Infer::cond_if() {
  // ERROR_IF(tensor_size(shape) != 1): the condition is a single bool_t value.
  const TensorType& cond = ty("condition");
  if (element_count(cond.shape) != 1) {
    fail("condition", "condition " + cond.str() + " must hold exactly one value (ERROR_IF)");
  }
  const Graph& then_g = subgraph("then_graph");
  const Graph& else_g = subgraph("else_graph");
  std::vector<TensorType> inputs = list_types();
  check_graph_types("input_list", "input_list", inputs, "the inputs of then_graph '" + then_g.name() + "'",
                    graph_types(then_g, then_g.inputs()));
  check_graph_types("input_list", "input_list", inputs, "the inputs of else_graph '" + else_g.name() + "'",
                    graph_types(else_g, else_g.inputs()));
  std::vector<TensorType> outs = graph_types(then_g, then_g.outputs());
  check_graph_types("else_graph", "the outputs of else_graph '" + else_g.name() + "'",
                    graph_types(else_g, else_g.outputs()),
                    "the outputs of then_graph '" + then_g.name() + "'", outs);
  return outs;
}

std::vector<TensorType> Infer::while_loop() {
  const Graph& cond_g = subgraph("cond_graph");
  const Graph& body_g = subgraph("body_graph");
  std::vector<TensorType> inputs = list_types();
  check_graph_types("input_list", "input_list", inputs, "the inputs of cond_graph '" + cond_g.name() + "'",
                    graph_types(cond_g, cond_g.inputs()));
  check_graph_types("input_list", "input_list", inputs, "the inputs of body_graph '" + body_g.name() + "'",
                    graph_types(body_g, body_g.inputs()));
  check_graph_types("body_graph", "the outputs of body_graph '" + body_g.name() + "'",
                    graph_types(body_g, body_g.outputs()), "input_list", inputs);
  // The condition graph yields a single bool_t tensor of one element.
  std::vector<TensorType> cond_out = graph_types(cond_g, cond_g.outputs());
  if (cond_out.size() != 1 || element_count(cond_out[0].shape) != 1 || cond_out[0].dtype != DType::kBool) {
    fail("cond_graph", "cond_graph '" + cond_g.name() +
                           "' must output one bool_t tensor of one element, it outputs " +
                           types_str(cond_out) + " (ERROR_IF)");
  }
  // The output list takes the shapes of the input list (ERROR_IF(tensor_list_shape(input_list) != ...)).
  return inputs;
}

// VARIABLE has no outputs. Only what defines the variable's type (read by VARIABLE_READ/WRITE) is
// checked here; the module-wide rules (unique names, initial_value matching the declaration) are
// verify.cpp's, so that one broken declaration is reported once.
std::vector<TensorType> Infer::variable() {
  attr_str("name");
  const auto& var_shape = attr_ints("var_shape", -1);
  const int64_t type = attr_int("type");
  if (!enum_value_name(AttrKind::kVarType, type))
    fail("type", "type = " + num(type) + " is not a var_t value");
  if (static_cast<int>(var_shape.size()) > kMaxRank) {
    fail("var_shape", "var_shape " + list_str(var_shape) + " has rank > MAX_RANK = " + num(kMaxRank));
  }
  for (int64_t d : var_shape) {
    if (d < 1) fail("var_shape", "var_shape " + list_str(var_shape) + " has a dimension < 1");
  }
  return {};
}

std::vector<TensorType> Infer::variable_write() {
  const std::string& name = attr_str("name");
  const auto [decl_graph, decl] = find_variable(name);
  if (!decl) fail("name", "no VARIABLE declares '" + name + "' (REQUIRE(variable_tensor))");
  Infer declared(*decl_graph, *decl, module_);
  const TensorType var_type = declared.variable_type();
  const TensorType& t = ty("input1");
  if (t != var_type) {
    fail("input1", "input1 " + t.str() + " does not match variable '" + name + "' declared as " +
                       var_type.str() + " (REQUIRE)");
  }
  return {};
}

std::vector<TensorType> Infer::variable_read() {
  const std::string& name = attr_str("name");
  const auto [decl_graph, decl] = find_variable(name);
  if (!decl) {
    fail("name", "no VARIABLE declares '" + name +
                     "', so the output type is unknown (REQUIRE(variable_tensor != NULL))");
  }
  Infer declared(*decl_graph, *decl, module_);
  TensorType t = declared.variable_type();
  return {out(0, t.shape, t.dtype)};
}

std::vector<TensorType> Infer::const_shape() {
  const auto* values = std::get_if<std::vector<int64_t>>(&attr("values"));
  if (!values) fail("values", "CONST_SHAPE values must be a list of integers");
  return {TensorType{DType::kShape, {static_cast<int64_t>(values->size())}}};
}

// ---------------------------------------------------------------------------------------------

std::vector<TensorType> Infer::run() {
  check_operands();
  switch (n_.op) {
    case Op::ARGMAX:
      return argmax();
    case Op::AVG_POOL2D:
      return pool2d(true);
    case Op::CONV2D:
      return conv2d();
    case Op::CONV3D:
      return conv3d();
    case Op::DEPTHWISE_CONV2D:
      return depthwise_conv2d();
    case Op::FFT2D:
      return fft2d();
    case Op::MATMUL:
      return matmul();
    case Op::MAX_POOL2D:
      return pool2d(false);
    case Op::RFFT2D:
      return rfft2d();
    case Op::TRANSPOSE_CONV2D:
      return transpose_conv2d();
    case Op::CLAMP:
      return clamp();
    case Op::ERF:
    case Op::SIGMOID:
    case Op::TANH:
      return unary_same_shape();
    case Op::ADD:
    case Op::ARITHMETIC_RIGHT_SHIFT:
    case Op::BITWISE_AND:
    case Op::BITWISE_OR:
    case Op::BITWISE_XOR:
    case Op::INTDIV:
    case Op::LOGICAL_AND:
    case Op::LOGICAL_LEFT_SHIFT:
    case Op::LOGICAL_RIGHT_SHIFT:
    case Op::LOGICAL_OR:
    case Op::LOGICAL_XOR:
    case Op::MAXIMUM:
    case Op::MINIMUM:
    case Op::POW:
    case Op::SUB:
      return elementwise_binary();
    case Op::MUL:
      return mul();
    case Op::TABLE:
      return table();
    case Op::ABS:
    case Op::BITWISE_NOT:
    case Op::CEIL:
    case Op::CLZ:
    case Op::COS:
    case Op::EXP:
    case Op::FLOOR:
    case Op::LOG:
    case Op::LOGICAL_NOT:
    case Op::RECIPROCAL:
    case Op::RSQRT:
    case Op::SIN:
      return unary_same_shape();
    case Op::NEGATE:
      return negate();
    case Op::SELECT:
      return select();
    case Op::EQUAL:
    case Op::GREATER:
    case Op::GREATER_EQUAL:
      return comparison();
    case Op::REDUCE_ALL:
    case Op::REDUCE_ANY:
    case Op::REDUCE_MAX:
    case Op::REDUCE_MIN:
    case Op::REDUCE_PRODUCT:
    case Op::REDUCE_SUM:
      return reduce();
    case Op::CONCAT:
      return concat();
    case Op::PAD:
      return pad();
    case Op::RESHAPE:
      return reshape();
    case Op::REVERSE:
      return reverse();
    case Op::SLICE:
      return slice();
    case Op::TILE:
      return tile();
    case Op::TRANSPOSE:
      return transpose();
    case Op::GATHER:
      return gather();
    case Op::SCATTER:
      return scatter();
    case Op::RESIZE:
      return resize();
    // CAST: out_t is free (any of the table's conversions from in_t); resolve() reports that the
    // output type must be given unless the table allows only one conversion.
    case Op::CAST:
      return unary_same_shape();
    case Op::RESCALE:
      return rescale();
    case Op::CONST:
      return constant();
    case Op::IDENTITY:
      return unary_same_shape();
    case Op::CUSTOM:
      fail("output_list", "the outputs of CUSTOM operator '" + attr_str("operator_name") +
                              "' cannot be inferred: the output types of CUSTOM must be given explicitly");
    case Op::COND_IF:
      return cond_if();
    case Op::WHILE_LOOP:
      return while_loop();
    case Op::VARIABLE:
      return variable();
    case Op::VARIABLE_WRITE:
      return variable_write();
    case Op::VARIABLE_READ:
      return variable_read();
    case Op::CONST_SHAPE:
      return const_shape();
  }
  throw Error(ErrorCode::kInternal, std::string("no inference rule for ") + def_.name);
}

}  // namespace

std::vector<TensorType> infer_output_types(const Graph& g, const Node& node, const Module* module) {
  return Infer(g, node, module).run();
}

}  // namespace weft
