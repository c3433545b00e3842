// Internal interface of the ONNX frontend: the state of one import and the helpers that the
// operator lowerings (lower_*.cpp) share. Nothing here is public API.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/reloadable.h"
#include "weft/error.h"
#include "weft/custom.h"
#include "weft/graph.h"
#include "weft/onnx.h"

namespace onnx {
class NodeProto;
class TensorProto;
class AttributeProto;
class ModelProto;
class GraphProto;
}  // namespace onnx

namespace weft::onnxfe {

// ONNX TensorProto.DataType values used here.
enum OnnxType : int {
  kOUndefined = 0, kOFloat = 1, kOUint8 = 2, kOInt8 = 3, kOUint16 = 4, kOInt16 = 5, kOInt32 = 6, kOInt64 = 7,
  kOString = 8, kOBool = 9, kOFloat16 = 10, kODouble = 11, kOUint32 = 12, kOUint64 = 13, kOBfloat16 = 16,
};
const char* onnx_type_name(int t);
// The TOSA type an ONNX element type is carried as; nullopt when there is none.
std::optional<DType> tosa_dtype(int onnx_type);
// The TOSA type a graph input or output of this ONNX type has: as tosa_dtype, except that uint8
// and uint16 travel as the bits of int8 and int16 (RESCALE's unsigned flags convert them).
std::optional<DType> boundary_dtype(int onnx_type);
bool is_unsigned_onnx(int onnx_type);

// A TOSA-side value: a value of the graph being built, or a constant that is not (yet) in the
// graph. Constants are folded through operators and only become CONST nodes where an operator
// that runs at inference time consumes them.
struct TVal {
  ValueId id = kNoValue;
  std::shared_ptr<const Tensor> c;  // set for constants
  TensorType type;
  bool is_const() const { return c != nullptr; }
  int rank() const { return type.rank(); }
  const Shape& shape() const { return type.shape; }
  DType dtype() const { return type.dtype; }
};

// An ONNX value: its TOSA value holds transpose(onnx_value, perm) (dimension i of the TOSA value is
// dimension perm[i] of the ONNX one); an empty perm means the layouts are the same.
struct OVal {
  TVal v;
  std::vector<int64_t> perm;
  int onnx_type = kOUndefined;
  Shape shape;  // ONNX shape
  // Exact values of int64 constants (TOSA carries them as int32; shape arithmetic reads these).
  std::shared_ptr<const std::vector<int64_t>> ints;
  std::shared_ptr<TVal> plain_cache;  // the value in ONNX layout, once materialized
  // The value in other layouts, once materialized (a graph input feeding several NHWC users is
  // transposed once).
  std::shared_ptr<std::map<std::vector<int64_t>, TVal>> layout_cache;
};

class Importer;
using LowerFn = void (*)(Importer&, const onnx::NodeProto&);

struct OpRule {
  const char* op_type;
  LowerFn lower;
};
// The ONNX operators of the default domain that the frontend lowers (lower_table.cpp).
const std::vector<OpRule>& op_rules();

namespace custom_lowering {
// Lowers the current node to a tosa.CUSTOM node of a registered custom operator (lower_custom.cpp):
// NCHW->NHWC permutes before the inputs the registration declares NHWC, NHWC->NCHW after such outputs.
void lower(Importer& imp, const onnx::NodeProto& n, const custom::OpSpec& spec);
}

struct ParsedOnnx;

class Importer {
 public:
  // `owner` keeps `model` alive past the import (initializers are borrowed from it); may be null.
  // `parsed`, when given, is `model`'s parse (kept alive by `owner`).
  Importer(const onnx::ModelProto& model, std::string source, const OnnxImportOptions& options, std::string base_dir,
           std::shared_ptr<const void> owner = nullptr, const ParsedOnnx* parsed = nullptr);
  Module run();

  // ---- the node being lowered ----
  const onnx::NodeProto& node() const { return *node_; }
  int opset() const { return opset_; }
  int num_inputs() const;       // count of node inputs, trailing empty names removed
  bool has_input(int i) const;  // present and not the empty name
  const OVal& in(int i) const;  // throws naming the input when missing
  int num_outputs() const;
  bool wants_output(int i) const;  // output i exists and has a name
  void set_out(int i, TVal v, std::vector<int64_t> perm = {}, int onnx_type = -1);
  void alias_out(int i, const OVal& v);
  // Records the exact int64 values of constant output i (shape arithmetic).
  void set_exact_ints(int i, std::shared_ptr<const std::vector<int64_t>> ints);  // the output is the input value itself (Identity, Dropout)
  void set_out_const_ints(int i, std::vector<int64_t> values, Shape shape, int onnx_type = kOInt64);

  // Attributes of the current node.
  const onnx::AttributeProto* attr(const char* name) const;
  int64_t attr_int(const char* name, int64_t dflt) const;
  float attr_float(const char* name, float dflt) const;
  std::string attr_str(const char* name, const std::string& dflt) const;
  std::optional<std::vector<int64_t>> attr_ints(const char* name) const;
  std::optional<std::vector<float>> attr_floats(const char* name) const;
  Tensor attr_tensor(const char* name) const;

  // Errors located at the current node.
  [[noreturn]] void fail(const std::string& msg, ErrorCode code = ErrorCode::kUnsupported) const;
  void require(bool cond, const std::string& msg) const {
    if (!cond) fail(msg, ErrorCode::kInvalidArgument);
  }

  // Input i of the current node is not known at compile time but must be: an error naming it, and
  // how to bind the graph inputs it comes from (--bind); the Location's operand is the graph input
  // to bind.
  [[noreturn]] void fail_not_constant(int i, const std::string& what, const std::string& must) const;

  // ---- constants ----
  // The values of input i, which must be known at import time (`what` names it in the error).
  std::vector<int64_t> const_ints(int i, const char* what) const;
  std::vector<double> const_doubles(int i, const char* what) const;
  bool is_const(int i) const { return has_input(i) && in(i).v.is_const(); }
  TVal const_tensor(Tensor t) const;
  TVal scalar(DType dt, double v, int rank = 1) const;  // shape [1,...,1] of `rank` dims (rank 0 allowed)
  TVal shape_const(const std::vector<int64_t>& dims) const;  // a shape_t value
  // Whether a constant of `shape` and `dt` fits the constant-folding budget (see
  // OnnxImportOptions::max_folded_bytes); require_ fails, naming `what` and the option, if not.
  bool fits_fold_budget(const Shape& shape, DType dt) const;
  void require_fold_budget(const Shape& shape, DType dt, const std::string& what) const;

  // ---- emitting TOSA operators (folded when every input is constant) ----
  TVal emit(Op op, std::vector<TVal> inputs, Attrs attrs = {});
  std::vector<TVal> emit_multi(Op op, std::vector<TVal> inputs, Attrs attrs, std::vector<DType> out_dtypes = {});
  // With the output's element type given (CAST, RESCALE, and rows the inputs leave open).
  TVal emit_as(Op op, DType out, std::vector<TVal> inputs, Attrs attrs = {});
  // A node whose output types are given, not inferred (CUSTOM); never folded.
  std::vector<TVal> emit_typed(Op op, std::vector<TVal> inputs, Attrs attrs, const std::vector<TensorType>& out_types);

  // Common building blocks.
  TVal reshape(const TVal& v, const Shape& shape);
  TVal transpose(const TVal& v, const std::vector<int64_t>& perm);
  // A constant as a graph value that later nodes do not fold: a TRANSPOSE of a large initializer
  // stays a node that the backends read the initializer through in place (a strided view),
  // instead of a transposed copy made at import (and, for Gemm's transB, transposed back by the
  // CPU's matrix-vector kernel). Non-constants pass unchanged.
  TVal unfolded(const TVal& v);
  TVal cast(const TVal& v, DType to);
  TVal add(const TVal& a, const TVal& b) { return emit(Op::ADD, {a, b}); }
  TVal sub(const TVal& a, const TVal& b) { return emit(Op::SUB, {a, b}); }
  TVal mul(const TVal& a, const TVal& b);
  TVal slice(const TVal& v, const std::vector<int64_t>& start, const std::vector<int64_t>& size);
  TVal clamp(const TVal& v, double lo, double hi);
  TVal reduce(Op op, const TVal& v, int64_t axis);
  // Unsigned values: `bits` (uint8 in int8 bits, uint16 in int16 bits) as the int32 the graph
  // computes with, and back (wrapped modulo 2^8 / 2^16 as ONNX's unsigned arithmetic does).
  TVal widen_unsigned(const TVal& bits, int onnx_type);
  TVal narrow_unsigned(const TVal& v, int onnx_type);
  // Brings a and b (TOSA values) to the same rank by inserting leading 1s.
  TVal to_rank(const TVal& v, int rank);

  // ---- layouts ----
  // The value in ONNX's layout (emits a TRANSPOSE, or a RESHAPE when only size-1 dimensions move).
  TVal plain(const OVal& v);
  // The value in layout `perm` (an empty perm is ONNX's layout).
  TVal in_layout(const OVal& v, const std::vector<int64_t>& perm);
  // Elementwise operands: the layout the output takes and each operand broadcast-ready in it.
  std::vector<TVal> elementwise_operands(const std::vector<int>& inputs, std::vector<int64_t>* perm, Shape* onnx_shape);

  const std::string& source() const { return source_; }
  Graph& graph() { return graph_; }

  // ---- sub-graphs (If, Loop, Scan: lower_control.cpp) ----
  // Rebinds ONNX names while it lives: each name bound or saved gets its previous value (or none)
  // back when the scope ends, so that a sub-graph's names stay inside it.
  class Scope {
   public:
    explicit Scope(Importer& imp) : imp_(imp) {}
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    void save(const std::string& name);  // restored when the scope ends
    void bind(const std::string& name, OVal v);

   private:
    Importer& imp_;
    std::vector<std::pair<std::string, std::optional<OVal>>> saved_;
  };
  // The value of ONNX name `name` in the scope being lowered; nullptr when there is none.
  const OVal* find_value(const std::string& name) const;
  // The graph attribute `name` of the current node (required).
  const onnx::GraphProto& attr_graph(const char* name) const;
  // The names `body` (with the sub-graphs nested in it) reads from the enclosing scopes, in the
  // order of first use.
  static std::vector<std::string> outer_names(const onnx::GraphProto& body);
  // The number of nodes of `body`, those of nested sub-graphs included.
  static int64_t count_nodes(const onnx::GraphProto& body);
  // Lowers the nodes of sub-graph `body` into the graph being built: its inputs bound to `inputs`
  // (one per body input, checked against the element types it declares), the values of the
  // enclosing scopes visible, its own names visible only inside. Returns its outputs. Errors name
  // the sub-graph by the attribute it comes from (`where`: "then_branch", "body") and `detail`
  // ("iteration 3") after the node's label.
  std::vector<OVal> inline_graph(const onnx::GraphProto& body, const std::vector<OVal>& inputs, const std::string& where,
                                 const std::string& detail = "");
  // Builds a separate TOSA graph of the module (COND_IF branches, WHILE_LOOP condition and body):
  // `fn` runs with every emitted node going to it, gets its inputs (of `input_types`, named after
  // `input_names`) and returns its outputs, which are then materialized. Returns the graph's name
  // (unique in the module, from `base`); `output_types` receives the types of its outputs.
  std::string build_graph(const std::string& base, const std::vector<TensorType>& input_types,
                          const std::vector<std::string>& input_names,
                          const std::function<std::vector<TVal>(const std::vector<TVal>&)>& fn,
                          std::vector<TensorType>* output_types);
  // Nodes lowered inside unrolled sub-graphs so far, and the limit on them (one import).
  int64_t& unrolled_nodes() { return unrolled_nodes_; }

 private:
  friend struct ImporterAccess;
  void import_initializers();
  void import_inputs();
  void infer_onnx_shapes();
  void check_structure(const onnx::GraphProto& g, std::set<std::string> scope, int depth) const;
  void lower_node(const onnx::NodeProto& n);
  void finish_outputs();
  ValueId materialize(const TVal& v);
  ValueId hint_value(DType d);
  // Folds a node of constant inputs, or returns nothing when a result is past the budget.
  std::optional<std::vector<TVal>> fold(Node n, const std::vector<TVal>& inputs, const std::vector<DType>& out_dtypes);
  // Appended to "must be known at compile time" errors once folding stopped at the budget.
  std::string budget_note() const;
  // The graph inputs given at run time that the main graph's value `name` is computed from.
  std::vector<std::string> runtime_inputs_behind(const std::string& name) const;
  OVal make_const_oval(const onnx::TensorProto& t, const std::string& what);

  const onnx::ModelProto& model_;
  const onnx::GraphProto& g_;
  std::shared_ptr<const void> owner_;
  const ParsedOnnx* parsed_ = nullptr;
  std::string source_;
  OnnxImportOptions options_;
  std::string over_budget_;  // the first node whose folded result was past the budget
  std::string base_dir_;
  int opset_ = 0;
  Graph graph_;
  std::map<std::string, OVal> values_;
  std::map<const Tensor*, std::pair<std::shared_ptr<const Tensor>, ValueId>> materialized_;
  std::map<DType, ValueId> hints_;
  std::map<std::string, Shape> onnx_shapes_;
  std::map<std::string, std::pair<Shape, std::string>> lowered_shapes_;  // ONNX value -> (shape, node label)
  std::map<std::string, std::string> unusable_;  // initializers TOSA cannot carry: why  // static shapes from ONNX's shape inference
  const onnx::NodeProto* node_ = nullptr;
  std::string node_label_;
  // Appended to the labels of nodes lowered inside a sub-graph: " in <where> of <outer node>".
  std::string scope_note_;
  int sub_depth_ = 0;  // sub-graphs being lowered inside each other
  std::vector<Graph> subgraphs_;  // COND_IF / WHILE_LOOP graphs built so far
  std::set<std::string> graph_names_{"main"};
  int64_t unrolled_nodes_ = 0;
};

// Nodes an import may lower by unrolling Loop and Scan bodies (iterations x body nodes, summed
// over the model); past it a Loop without scan outputs becomes a WHILE_LOOP, anything else an error.
inline constexpr int64_t kMaxUnrolledNodes = 65536;

// An ONNX file parsed once (streamed from the file: no copy of its bytes), for the interface
// and the import of one load; the model's initializers are borrowed from it by the import.
struct ParsedOnnx {
  std::shared_ptr<onnx::ModelProto> model;
  // Where the raw_data of each top-level initializer of kReloadableBytes and more lies in the file,
  // by the address of its bytes in `model` (checked against the name and size before use): those
  // tensors borrow the bytes as reloadable buffers (src/core/reloadable.h), which a model's runtime
  // may drop once its backends have copied them and read from the file again.
  struct Range {
    std::string name;
    uint64_t offset = 0;
    size_t size = 0;
    mutable std::optional<Buffer> wrapped;  // the one buffer over these bytes, once made
  };
  std::unordered_map<const void*, Range> raw_ranges;
  std::shared_ptr<const core::FileOrigin> origin;
};
inline constexpr size_t kReloadableBytes = size_t{1} << 20;

// `owner`, when given, keeps `t` alive: a tensor whose raw_data is stored as-is (fp32, int8, ...
// of 4 KiB and more) then borrows those bytes instead of copying them; reloadably where `parsed`
// knows their place in the file.
Tensor tensor_from_proto(const onnx::TensorProto& t, const std::string& what, const std::string& base_dir,
                         std::shared_ptr<const std::vector<int64_t>>* exact_ints, int* onnx_type,
                         const std::shared_ptr<const void>& owner = nullptr, const ParsedOnnx* parsed = nullptr);

std::shared_ptr<ParsedOnnx> parse_onnx_file(const std::string& path);
OnnxInterface interface_of(const onnx::ModelProto& model, const std::string& path);
Module import_parsed(std::shared_ptr<ParsedOnnx> parsed, const std::string& path, const OnnxImportOptions& options);
std::vector<int64_t> inverse_perm(const std::vector<int64_t>& perm);
int64_t norm_axis(const Importer& imp, int64_t axis, int64_t rank, const char* what = "axis");
// The position in the TOSA value of ONNX dimension `onnx_axis` of a value with layout `perm`.
int64_t tosa_axis(const std::vector<int64_t>& perm, int64_t onnx_axis);

}  // namespace weft::onnxfe
