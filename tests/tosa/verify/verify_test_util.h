// Helpers of the verifier tests: build graphs node by node with explicit output types (the
// GraphBuilder would call shape inference), and search diagnostics.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "weft/graph.h"
#include "weft/verify.h"

namespace weft::verify_test {

inline TensorType tt(DType d, Shape s) { return TensorType{d, std::move(s)}; }

using Outs = std::vector<std::pair<std::string, TensorType>>;

// Appends a node with named attributes (defaults applied by make_attrs) and new output values.
inline std::vector<ValueId> add(Graph& g, Op op, std::vector<ValueId> inputs, const Attrs& attrs,
                                const Outs& outs) {
  Node n;
  n.op = op;
  n.inputs = std::move(inputs);
  n.attrs = make_attrs(op, attrs);
  for (const auto& [name, type] : outs) n.outputs.push_back(g.add_value(name, type));
  g.add_node(std::move(n));
  return g.nodes().back().outputs;
}

inline ValueId add1(Graph& g, Op op, std::vector<ValueId> inputs, const Attrs& attrs, const std::string& out,
                    TensorType type) {
  return add(g, op, std::move(inputs), attrs, {{out, std::move(type)}}).at(0);
}

inline ValueId constant(Graph& g, const std::string& name, TensorType type, std::vector<double> values) {
  Tensor t = Tensor::from_doubles(type, values);
  return add1(g, Op::CONST, {}, {{"values", t}}, name, type);
}

inline ValueId constant_shape(Graph& g, const std::string& name, std::vector<int64_t> dims) {
  TensorType t{DType::kShape, {static_cast<int64_t>(dims.size())}};
  return add1(g, Op::CONST_SHAPE, {}, {{"values", std::move(dims)}}, name, t);
}

inline Tensor scalar(DType d, double v) {
  return Tensor::from_doubles(TensorType{d, {}}, std::vector<double>{v});
}

// True while src/tosa/infer.cpp is still the placeholder that throws kInternal for every node.
inline bool inference_pending() {
  Graph g;
  ValueId a = g.add_input("a", tt(DType::kFp32, {2}));
  Node n;
  n.op = Op::ABS;
  n.inputs = {a};
  try {
    infer_output_types(g, n, nullptr);
  } catch (const Error& e) {
    return e.code() == ErrorCode::kInternal;
  }
  return false;
}

// Errors worth asserting on: while inference is a placeholder its kInternal "pending" errors are
// dropped, so the structural and table-driven checks can be tested on their own.
inline std::vector<Error> relevant(std::vector<Error> errors) {
  if (!inference_pending()) return errors;
  std::vector<Error> r;
  for (Error& e : errors) {
    if (e.code() != ErrorCode::kInternal) r.push_back(std::move(e));
  }
  return r;
}

inline std::string all_messages(const std::vector<Error>& errors) {
  std::string s;
  for (const Error& e : errors) {
    s += "  ";
    s += e.what();
    s += "\n";
  }
  return s;
}

// The first error whose message contains `needle` (nullptr if none).
inline const Error* find_error(const std::vector<Error>& errors, const std::string& needle) {
  for (const Error& e : errors) {
    if (e.message().find(needle) != std::string::npos) return &e;
  }
  return nullptr;
}

#define EXPECT_HAS_ERROR(errors, needle)                                  \
  EXPECT_NE(::weft::verify_test::find_error((errors), (needle)), nullptr) \
      << "no error containing \"" << (needle) << "\"; got:\n"             \
      << ::weft::verify_test::all_messages(errors)

#define EXPECT_NO_ERRORS(errors) \
  EXPECT_TRUE((errors).empty()) << "unexpected errors:\n" << ::weft::verify_test::all_messages(errors)

// verify_node on one node with all profiles.
inline std::vector<Error> check(const Module* m, const Graph& g, int node,
                                ProfileSet profiles = kAllProfiles) {
  std::vector<Error> errors;
  verify_node(m, g, node, profiles, errors);
  return errors;
}

}  // namespace weft::verify_test
