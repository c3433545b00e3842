// Helpers of the SPIR-V encoder/decoder tests: a structural comparison of modules that ignores
// what SPIR-V does not carry (docs/spirv.md, "Round trip"), and a verifying one-operator module for
// every operator and row of its type support table.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "common/module_compare.h"
#include "weft/graph.h"
#include "spirv/lift_rank0.h"
#include "weft/spirv.h"
#include "weft/verify.h"

namespace weft::codec_test {

// What SPIR-V carries: node labels only on FFT2D / RFFT2D, no CONST data_file.
inline void expect_same_module(const Module& a, const Module& b) {
  test::expect_same_module(a, b, {.all_labels = false, .data_files = false});
}

inline void expect_same_constants(const std::vector<spirv::GraphConstant>& a,
                                  const std::vector<spirv::GraphConstant>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].id, b[i].id);
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_TRUE(a[i].tensor.identical(b[i].tensor)) << a[i].name;
  }
}

// IR -> words -> IR must give `m` back, and the decoded module must encode to the same words.
// Returns the first encoding.
inline spirv::Binary round_trip(const Module& m, const spirv::EncodeOptions& options = {}) {
  spirv::Binary first;
  try {
    first = spirv::encode(m, options);
  } catch (const Error& e) {
    ADD_FAILURE() << "encode: " << e.what();
    return first;
  }
  Module back;
  try {
    back = spirv::decode(first.words, first.constants, "<roundtrip>");
  } catch (const Error& e) {
    ADD_FAILURE() << "decode: " << e.what();
    return first;
  }
  // Rank-0 tensors come back as [1] (SPIR-V tensors have Rank > 0).
  std::optional<Module> lifted = spirv::lift_rank0(m);
  expect_same_module(lifted ? *lifted : m, back);
  try {
    spirv::Binary second = spirv::encode(back, options);
    EXPECT_EQ(first.words, second.words);
    expect_same_constants(first.constants, second.constants);
  } catch (const Error& e) {
    ADD_FAILURE() << "encode of the decoded module: " << e.what();
  }
  return first;
}

inline std::string errors_str(const std::vector<Error>& errors) {
  std::string s;
  for (const Error& e : errors) s += std::string("  ") + e.what() + "\n";
  return s;
}

// ---- A verifying module for one operator and one row of its type support table ----

inline Tensor filled(TensorType t, double v) {
  std::vector<double> values(static_cast<size_t>(t.num_elements()), v);
  return Tensor::from_doubles(std::move(t), values);
}

// The element type of an operand or output: a type variable bound by the row, or a fixed type.
inline DType resolve(const OpDef& d, const TypeSupport& row, const char* elem,
                     const std::map<std::string, DType>& extra) {
  if (auto it = extra.find(elem); it != extra.end()) return it->second;
  int v = d.type_var_index(elem);
  if (v >= 0) return row.types[v];
  std::optional<DType> fixed = parse_dtype(elem);
  if (!fixed) throw Error(ErrorCode::kInternal, std::string("cannot resolve element type ") + elem);
  return *fixed;
}

inline DType row_var(const OpDef& d, const TypeSupport& row, const char* var, DType fallback) {
  int v = d.type_var_index(var);
  return v >= 0 ? row.types[v] : fallback;
}

// Shapes and values of the sample operands: tensors [2,3] (broadcast [1,3] for a second operand),
// the NHWC / NDHWC layouts of the tensor operators, zero points and shifts as CONST zeros.
inline Shape sample_shape(Op op, const ArgDef& a, DType table_t) {
  const std::string name = a.name, shape = a.shape;
  switch (op) {
    case Op::AVG_POOL2D:
    case Op::MAX_POOL2D:
    case Op::RESIZE:
      if (name == "input") return {1, 4, 4, 2};
      break;
    case Op::CONV2D:
    case Op::TRANSPOSE_CONV2D:
      if (name == "input") return {1, 4, 4, 2};
      if (name == "weight") return {3, 1, 1, 2};
      if (name == "bias") return {3};
      break;
    case Op::DEPTHWISE_CONV2D:
      if (name == "input") return {1, 4, 4, 2};
      if (name == "weight") return {1, 1, 2, 2};
      if (name == "bias") return {4};
      break;
    case Op::CONV3D:
      if (name == "input") return {1, 2, 4, 4, 2};
      if (name == "weight") return {3, 1, 1, 1, 2};
      if (name == "bias") return {3};
      break;
    case Op::FFT2D:
    case Op::RFFT2D:
      return {1, 4, 4};
    case Op::MATMUL:
      if (name == "A") return {1, 2, 3};
      if (name == "B") return {1, 3, 4};
      break;
    case Op::GATHER:
    case Op::SCATTER:
      if (name == "values" || name == "values_in") return {1, 4, 2};
      if (name == "indices") return {1, 3};
      if (name == "input") return {1, 3, 2};
      break;
    case Op::TABLE:
      if (name == "table") return {table_t == DType::kInt8 ? 256 : 513};
      break;
    case Op::RESCALE:
      if (name == "multiplier" || name == "shift") return {1};
      break;
    default:
      break;
  }
  if (shape == "[1]") return {1};
  if (shape == "shape2") return {1, 3};
  return {2, 3};
}

inline std::vector<int64_t> sample_shape_values(Op op, const std::string& name) {
  if (op == Op::PAD) return {0, 1, 1, 0};
  if (op == Op::RESHAPE) return {3, 2};
  if (op == Op::SLICE) return name == "start" ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{2, 2};
  if (op == Op::TILE) return {2, 1};
  if (op == Op::RESIZE) return name == "scale" ? std::vector<int64_t>{2, 1, 2, 1} : std::vector<int64_t>{0, 0};
  return {};
}

inline std::vector<int64_t> sample_int_list(Op op, const AttrDef& a) {
  const std::string name = a.name;
  if (name == "perms") return {1, 0};
  if (name == "kernel" || name == "stride")
    return op == Op::AVG_POOL2D || op == Op::MAX_POOL2D ? std::vector<int64_t>{2, 2}
                                                        : std::vector<int64_t>(static_cast<size_t>(a.length), 1);
  if (name == "dilation") return std::vector<int64_t>(static_cast<size_t>(a.length), 1);
  return std::vector<int64_t>(static_cast<size_t>(a.length), 0);  // pad, out_pad
}

// A graph `main` computing `op` for `row`: tensor operands are graph inputs (zero points, shifts and
// pad values are CONST zeros placed just before the operator, as the decoder places them), shape
// operands CONST_SHAPE; the outputs are the graph's outputs.
// A module whose one output is a CONST "c" of type `t` and `shape`, element i holding bits[i].
inline Module const_module(DType t, const Shape& shape, const std::vector<uint64_t>& bits) {
  const size_t size = storage_size(t);
  Tensor v = Tensor::zeros(TensorType{t, shape});
  for (size_t i = 0; i < bits.size(); ++i) std::memcpy(v.mutable_bytes() + i * size, &bits[i], size);
  GraphBuilder b;
  b.output(b.constant("c", v));
  return Module(b.finish());
}

inline Module op_module(Op op, const TypeSupport& row) {
  const OpDef& d = op_def(op);
  Graph g("main");
  Node n;
  n.op = op;
  std::map<std::string, DType> extra;
  bool scale32 = true;
  if (op == Op::RESCALE) {
    scale32 = row_var(d, row, "in_t", DType::kInt8) != DType::kInt48;
    extra["mul_t"] = scale32 ? DType::kInt32 : DType::kInt16;
  }
  const DType table_t = row_var(d, row, "table_t", DType::kInt8);
  std::vector<Node> consts;  // added right before the operator, in operand order
  for (const ArgDef& a : d.inputs) {
    if (a.kind == ArgKind::kShape) {
      std::vector<int64_t> values = sample_shape_values(op, a.name);
      Node c;
      c.op = Op::CONST_SHAPE;
      c.outputs = {g.add_value(a.name, TensorType{DType::kShape, {static_cast<int64_t>(values.size())}})};
      c.attrs = {std::move(values)};
      n.inputs.push_back(c.outputs[0]);
      consts.push_back(std::move(c));
      continue;
    }
    const TensorType t{resolve(d, row, a.elem, extra), sample_shape(op, a, table_t)};
    const int copies = a.kind == ArgKind::kTensorList ? 2 : 1;
    for (int k = 0; k < copies; ++k) {
      const std::string name = copies > 1 ? std::string(a.name) + "_" + std::to_string(k) : std::string(a.name);
      if (std::string(a.shape) == "[1]" || (op == Op::RESCALE && t.shape == Shape{1})) {
        Node c;
        c.op = Op::CONST;
        c.outputs = {g.add_value(name, t)};
        c.attrs = {filled(t, name == "multiplier" ? 1 << 14 : 0)};
        n.inputs.push_back(c.outputs[0]);
        consts.push_back(std::move(c));
      } else {
        n.inputs.push_back(g.add_input(name, t));
      }
    }
  }
  for (const AttrDef& a : d.attrs) {
    const std::string name = a.name;
    switch (a.kind) {
      case AttrKind::kInt:
        n.attrs.emplace_back(int64_t{op == Op::CONCAT ? 0 : 1});
        break;
      case AttrKind::kBool:
        n.attrs.emplace_back(name == "scale32" ? scale32
                                               : (name == "local_bound" || name == "round" || name == "inverse"));
        break;
      case AttrKind::kIntList:
        n.attrs.emplace_back(sample_int_list(op, a));
        break;
      case AttrKind::kAccType: {
        std::optional<AccType> acc = dtype_acc_type(row_var(d, row, "acc_t", DType::kInt32));
        n.attrs.emplace_back(static_cast<int64_t>(acc.value_or(AccType::kInt32)));
        break;
      }
      case AttrKind::kNanMode:
        n.attrs.emplace_back(static_cast<int64_t>(NanMode::kIgnore));
        break;
      case AttrKind::kResizeMode: {
        const bool same = row_var(d, row, "in_t", DType::kFp32) == row_var(d, row, "out_t", DType::kFp32);
        const bool fp = is_float(row_var(d, row, "in_t", DType::kFp32));
        n.attrs.emplace_back(static_cast<int64_t>(same && !fp ? ResizeMode::kNearest : ResizeMode::kBilinear));
        break;
      }
      case AttrKind::kRoundingMode:
        n.attrs.emplace_back(static_cast<int64_t>(RoundingMode::kSingle));
        break;
      case AttrKind::kScalar: {
        const DType t = resolve(d, row, a.elem, extra);
        n.attrs.emplace_back(filled(TensorType{t, {}}, name == "min_val" ? -1.0 : 1.0));
        break;
      }
      default:
        throw Error(ErrorCode::kInternal, "no sample for attribute " + name);
    }
  }
  for (Node& c : consts) g.add_node(std::move(c));
  // Output types: inferred, or (CAST) the input's shape with the row's output type.
  std::vector<TensorType> out_types;
  try {
    out_types = infer_output_types(g, n, nullptr);
  } catch (const Error&) {
    // The row fixes an output type the inputs leave open (CAST, MATMUL with either accumulator).
    Shape shape = g.value(n.inputs[0]).type.shape;
    if (op == Op::MATMUL) shape = {shape[0], shape[1], g.value(n.inputs[1]).type.shape[2]};
    for (const ArgDef& a : d.outputs) out_types.push_back(TensorType{resolve(d, row, a.elem, extra), shape});
  }
  for (size_t k = 0; k < d.outputs.size(); ++k) n.outputs.push_back(g.add_value(d.outputs[k].name, out_types[k]));
  if (op == Op::FFT2D || op == Op::RFFT2D) n.name = std::string("label of ") + d.name;
  g.add_node(std::move(n));
  for (ValueId v : g.nodes().back().outputs) g.add_output(v);
  Module m(std::move(g));
  ProfileSet profiles = kProInt | kProFp;
  for (ProfileSet p : row.any_of) profiles |= p;
  m.set_profiles(profiles);
  return m;
}

}  // namespace weft::codec_test
