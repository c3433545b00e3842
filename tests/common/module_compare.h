// Structural comparison of modules for round-trip tests (text form, SPIR-V): graph names, value
// names and types, producers, node operators, operands and attributes (tensors bit for bit).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

#include "weft/graph.h"

namespace weft::test {

struct CompareOptions {
  bool all_labels = true;  // node labels; false: only those of FFT2D / RFFT2D (what SPIR-V keeps)
  bool data_files = true;  // CONST data_file (the .npy a constant came from)
};

inline void expect_same_graph(const Graph& a, const Graph& b, const CompareOptions& opt = {}) {
  SCOPED_TRACE("graph " + a.name());
  EXPECT_EQ(a.name(), b.name());
  auto names = [](const Graph& g, const std::vector<ValueId>& ids) {
    std::vector<std::string> r;
    for (ValueId id : ids) r.push_back(g.value(id).name);
    return r;
  };
  EXPECT_EQ(names(a, a.inputs()), names(b, b.inputs()));
  EXPECT_EQ(names(a, a.outputs()), names(b, b.outputs()));
  ASSERT_EQ(a.values().size(), b.values().size());
  for (const Value& v : a.values()) {
    auto id = b.find_value(v.name);
    ASSERT_TRUE(id.has_value()) << v.name;
    EXPECT_EQ(b.value(*id).type, v.type) << v.name;
    EXPECT_EQ(b.value(*id).producer, v.producer) << v.name;
    EXPECT_EQ(b.value(*id).producer_output, v.producer_output) << v.name;
  }
  ASSERT_EQ(a.nodes().size(), b.nodes().size());
  for (size_t i = 0; i < a.nodes().size(); ++i) {
    const Node& na = a.nodes()[i];
    const Node& nb = b.nodes()[i];
    SCOPED_TRACE(std::string("node ") + op_name(na.op));
    EXPECT_EQ(na.op, nb.op);
    if (opt.all_labels || na.op == Op::FFT2D || na.op == Op::RFFT2D) {
      EXPECT_EQ(na.name, nb.name);
    }
    if (opt.data_files) {
      EXPECT_EQ(na.data_file, nb.data_file);
    }
    EXPECT_EQ(names(a, na.inputs), names(b, nb.inputs));
    EXPECT_EQ(names(a, na.outputs), names(b, nb.outputs));
    ASSERT_EQ(na.attrs.size(), nb.attrs.size());
    for (size_t k = 0; k < na.attrs.size(); ++k)
      EXPECT_TRUE(same_attr(na.attrs[k], nb.attrs[k])) << "attribute " << op_def(na.op).attrs[k].name;
  }
}

inline void expect_same_module(const Module& a, const Module& b, const CompareOptions& opt = {}) {
  EXPECT_EQ(a.entry(), b.entry());
  EXPECT_EQ(a.profiles(), b.profiles());
  ASSERT_EQ(a.graphs().size(), b.graphs().size());
  for (size_t i = 0; i < a.graphs().size(); ++i) expect_same_graph(a.graphs()[i], b.graphs()[i], opt);
}

}  // namespace weft::test
