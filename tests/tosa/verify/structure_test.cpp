// verify_module: graph structure, sub-graph references and signatures, recursion, variables.
#include <gtest/gtest.h>

#include "verify_test_util.h"

namespace weft {
namespace {

using namespace verify_test;

// main: z = ADD(x, y); output z.
Graph simple_graph(const std::string& name = "main") {
  Graph g(name);
  ValueId x = g.add_input("x", tt(DType::kFp32, {2, 3}));
  ValueId y = g.add_input("y", tt(DType::kFp32, {2, 3}));
  ValueId z = add1(g, Op::ADD, {x, y}, {}, "z", tt(DType::kFp32, {2, 3}));
  g.add_output(z);
  return g;
}

// A graph passing its single input through ABS: f32[2] -> f32[2].
Graph abs_graph(const std::string& name, DType d = DType::kFp32) {
  Graph g(name);
  ValueId a = g.add_input("a", tt(d, {2}));
  ValueId b = add1(g, Op::ABS, {a}, {}, "b", tt(d, {2}));
  g.add_output(b);
  return g;
}

TEST(VerifyStructure, SimpleGraphIsValid) {
  Module m(simple_graph());
  EXPECT_NO_ERRORS(relevant(verify_module(m)));
}

TEST(VerifyStructure, MissingEntryGraph) {
  Module m(simple_graph());
  m.set_entry("start");
  auto errors = verify_module(m);
  EXPECT_HAS_ERROR(errors, "no entry graph 'start'");
}

TEST(VerifyStructure, DuplicateValueNames) {
  Graph g = simple_graph();
  g.mutable_value(g.value_id("y")).name = "x";  // bypasses the name index on purpose
  auto errors = verify_module(Module(std::move(g)));
  const Error* e = find_error(errors, "'%x' is used by two values");
  ASSERT_NE(e, nullptr) << all_messages(errors);
  EXPECT_EQ(e->location().graph, "main");
  EXPECT_EQ(e->code(), ErrorCode::kVerify);
}

TEST(VerifyStructure, EmptyValueName) {
  Graph g = simple_graph();
  g.mutable_value(g.value_id("y")).name = "";
  EXPECT_HAS_ERROR(verify_module(Module(std::move(g))), "has no name");
}

TEST(VerifyStructure, DuplicateGraphOutput) {
  Graph g = simple_graph();
  g.add_output(g.value_id("z"));
  EXPECT_HAS_ERROR(verify_module(Module(std::move(g))), "graph output '%z' is listed twice");
}

TEST(VerifyStructure, ValueDefinedTwice) {
  Graph g = simple_graph();
  ValueId x = g.value_id("x");
  // A second node that claims to produce the graph input x.
  Node n;
  n.op = Op::ABS;
  n.inputs = {g.value_id("z")};
  n.outputs = {g.add_value("w", tt(DType::kFp32, {2, 3}))};
  int i = g.add_node(std::move(n));
  g.mutable_node(i).outputs[0] = x;
  auto errors = verify_module(Module(std::move(g)));
  EXPECT_HAS_ERROR(errors, "value '%x' is defined more than once: it is a graph input");
  EXPECT_HAS_ERROR(errors, "value '%w' is never defined");
}

TEST(VerifyStructure, ProducerRecordMismatch) {
  Graph g = simple_graph();
  g.mutable_value(g.value_id("z")).producer_output = 3;
  EXPECT_HAS_ERROR(verify_module(Module(std::move(g))), "records producer #0 output 3");
}

TEST(VerifyStructure, UndefinedValueUsed) {
  Graph g("main");
  ValueId x = g.add_input("x", tt(DType::kFp32, {2}));
  ValueId u = g.add_value("u", tt(DType::kFp32, {2}));  // no producer, not an input
  ValueId z = add1(g, Op::ADD, {x, u}, {}, "z", tt(DType::kFp32, {2}));
  g.add_output(z);
  auto errors = verify_module(Module(std::move(g)));
  const Error* e = find_error(errors, "uses undefined value '%u'");
  ASSERT_NE(e, nullptr) << all_messages(errors);
  EXPECT_EQ(e->location().node, "%z");
  EXPECT_EQ(e->location().operand, "%u");
  // Reported once, at the use.
  EXPECT_EQ(find_error(errors, "'%u' is never defined"), nullptr) << all_messages(errors);
}

TEST(VerifyStructure, UseBeforeDefinition) {
  Graph g("main");
  ValueId x = g.add_input("x", tt(DType::kFp32, {2}));
  ValueId a = g.add_value("a", tt(DType::kFp32, {2}));
  // b = ABS(a) comes first, a = ABS(x) second: not in topological order, but no cycle.
  Node first;
  first.op = Op::ABS;
  first.inputs = {a};
  first.outputs = {g.add_value("b", tt(DType::kFp32, {2}))};
  g.add_node(std::move(first));
  Node second;
  second.op = Op::ABS;
  second.inputs = {x};
  second.outputs = {a};
  g.add_node(std::move(second));
  g.add_output(g.value_id("b"));
  auto errors = verify_module(Module(std::move(g)));
  const Error* e = find_error(errors, "uses '%a' before its definition by node '%a'");
  ASSERT_NE(e, nullptr) << all_messages(errors);
  EXPECT_EQ(e->location().node, "%b");
  EXPECT_EQ(find_error(errors, "cycle"), nullptr) << all_messages(errors);
}

TEST(VerifyStructure, Cycle) {
  Graph g("main");
  ValueId x = g.add_input("x", tt(DType::kFp32, {2}));
  ValueId a = g.add_value("a", tt(DType::kFp32, {2}));
  ValueId b = g.add_value("b", tt(DType::kFp32, {2}));
  Node n1;
  n1.op = Op::ADD;
  n1.inputs = {x, b};
  n1.outputs = {a};
  g.add_node(std::move(n1));
  Node n2;
  n2.op = Op::ADD;
  n2.inputs = {a, x};
  n2.outputs = {b};
  g.add_node(std::move(n2));
  g.add_output(b);
  auto errors = verify_module(Module(std::move(g)));
  EXPECT_HAS_ERROR(errors, "cycle between nodes '%a', '%b' through values '%b', '%a'");
  // The back edge inside the cycle is not reported a second time as a use before definition.
  EXPECT_EQ(find_error(errors, "before its definition"), nullptr) << all_messages(errors);
}

TEST(VerifyStructure, SelfLoop) {
  Graph g("main");
  ValueId a = g.add_value("a", tt(DType::kFp32, {2}));
  Node n;
  n.op = Op::ABS;
  n.inputs = {a};
  n.outputs = {a};
  g.add_node(std::move(n));
  g.add_output(a);
  EXPECT_HAS_ERROR(verify_module(Module(std::move(g))), "cycle between nodes '%a' through values '%a'");
}

TEST(VerifyStructure, GraphOutputNotProduced) {
  Graph g = simple_graph();
  ValueId lost = g.add_value("lost", tt(DType::kFp32, {2, 3}));
  g.add_output(lost);
  auto errors = verify_module(Module(std::move(g)));
  EXPECT_HAS_ERROR(errors, "graph output '%lost' is not produced");
}

TEST(VerifyStructure, GraphInputMayBeAnOutput) {
  Graph g = simple_graph();
  g.add_output(g.value_id("x"));
  EXPECT_NO_ERRORS(relevant(verify_module(Module(std::move(g)))));
}

TEST(VerifyStructure, DanglingValueIds) {
  Graph g = simple_graph();
  g.mutable_node(0).inputs[1] = 42;
  g.set_outputs({g.value_id("z"), 77});
  auto errors = verify_module(Module(std::move(g)));
  EXPECT_HAS_ERROR(errors, "node input refers to an unknown value id 42");
  EXPECT_HAS_ERROR(errors, "graph output refers to an unknown value id 77");
  // verify_node stops at the bad id instead of reading past the values.
  EXPECT_HAS_ERROR(errors, "ADD: input 'input2' refers to an unknown value id 42");
}

TEST(VerifyStructure, LongChainIsVerifiedIteratively) {
  // 50000 nodes in a chain: no recursion deep enough to exhaust the stack.
  Graph g("main");
  ValueId v = g.add_input("x", tt(DType::kFp32, {2}));
  for (int i = 0; i < 50000; ++i)
    v = add1(g, Op::ABS, {v}, {}, "v" + std::to_string(i), tt(DType::kFp32, {2}));
  g.add_output(v);
  EXPECT_NO_ERRORS(relevant(verify_module(Module(std::move(g)))));
}

TEST(VerifyStructure, DuplicateGraphNames) {
  Module m(simple_graph());
  m.add_graph(simple_graph("other"));
  m.graphs()[1].set_name("main");
  EXPECT_HAS_ERROR(verify_module(m), "graph name is used twice");
}

// ---- Sub-graphs ----

Module cond_if_module(const std::string& then_name, Graph then_graph, Graph else_graph, DType list_type) {
  Graph g("main");
  ValueId c = g.add_input("c", tt(DType::kBool, {}));
  ValueId x = g.add_input("x", tt(list_type, {2}));
  ValueId y = add1(g, Op::COND_IF, {c, x}, {{"then_graph", then_name}, {"else_graph", std::string("else")}},
                   "y", tt(list_type, {2}));
  g.add_output(y);
  Module m(std::move(g));
  m.add_graph(std::move(then_graph));
  m.add_graph(std::move(else_graph));
  return m;
}

TEST(VerifyStructure, CondIfValid) {
  Module m = cond_if_module("then", abs_graph("then"), abs_graph("else"), DType::kFp32);
  EXPECT_NO_ERRORS(relevant(verify_module(m)));
}

TEST(VerifyStructure, CondIfBadGraphReference) {
  Module m = cond_if_module("missing", abs_graph("then"), abs_graph("else"), DType::kFp32);
  auto errors = verify_module(m);
  const Error* e =
      find_error(errors, "COND_IF: attribute 'then_graph' refers to graph 'missing', which is not");
  ASSERT_NE(e, nullptr) << all_messages(errors);
  EXPECT_EQ(e->location().operand, "then_graph");
  EXPECT_EQ(e->location().node, "%y");
}

TEST(VerifyStructure, CondIfSignatureMismatch) {
  // The list carries i32 values; the branches take and return f32.
  Module m = cond_if_module("then", abs_graph("then"), abs_graph("else"), DType::kInt32);
  auto errors = verify_module(m);
  EXPECT_HAS_ERROR(errors,
                   "COND_IF: inputs of graph 'then' (f32[2]) do not match the node's input_list (i32[2])");
  EXPECT_HAS_ERROR(errors,
                   "COND_IF: outputs of graph 'else' (f32[2]) do not match the node's output_list (i32[2])");
}

// main: WHILE_LOOP over an i32[] counter.
Module while_module(Graph cond, Graph body, TensorType out_type = tt(DType::kInt32, {})) {
  Graph g("main");
  ValueId i = g.add_input("i", tt(DType::kInt32, {}));
  ValueId r = add1(g, Op::WHILE_LOOP, {i},
                   {{"cond_graph", std::string("cond")}, {"body_graph", std::string("body")}}, "r", out_type);
  g.add_output(r);
  Module m(std::move(g));
  m.add_graph(std::move(cond));
  m.add_graph(std::move(body));
  return m;
}

// cond: i < 10.
Graph counter_cond(DType result = DType::kBool) {
  Graph g("cond");
  ValueId i = g.add_input("i", tt(DType::kInt32, {}));
  ValueId limit = constant(g, "limit", tt(DType::kInt32, {}), {10});
  ValueId r = add1(g, Op::GREATER, {limit, i}, {}, "r", tt(DType::kBool, {}));
  if (result != DType::kBool) r = add1(g, Op::CAST, {r}, {}, "r2", tt(result, {}));
  g.add_output(r);
  return g;
}

// body: i + 1.
Graph counter_body(DType out = DType::kInt32) {
  Graph g("body");
  ValueId i = g.add_input("i", tt(DType::kInt32, {}));
  ValueId one = constant(g, "one", tt(DType::kInt32, {}), {1});
  ValueId r = add1(g, Op::ADD, {i, one}, {}, "r", tt(DType::kInt32, {}));
  if (out != DType::kInt32) r = add1(g, Op::CAST, {r}, {}, "r2", tt(out, {}));
  g.add_output(r);
  return g;
}

TEST(VerifyStructure, WhileLoopValid) {
  Module m = while_module(counter_cond(), counter_body());
  EXPECT_NO_ERRORS(relevant(verify_module(m)));
}

TEST(VerifyStructure, WhileLoopCondMustReturnBool) {
  Module m = while_module(counter_cond(DType::kInt32), counter_body());
  EXPECT_HAS_ERROR(verify_module(m), "WHILE_LOOP: graph 'cond' must return one bool value");
}

TEST(VerifyStructure, WhileLoopBodyMustKeepTypes) {
  Module m = while_module(counter_cond(), counter_body(DType::kInt16));
  EXPECT_HAS_ERROR(verify_module(m),
                   "WHILE_LOOP: outputs of graph 'body' (i16[]) do not match the node's input_list (i32[])");
}

TEST(VerifyStructure, WhileLoopOutputsMustMatchInputs) {
  Module m = while_module(counter_cond(), counter_body(), tt(DType::kInt32, {1}));
  EXPECT_HAS_ERROR(verify_module(m),
                   "WHILE_LOOP: output_list (i32[1]) must have the types of input_list (i32[])");
}

TEST(VerifyStructure, Recursion) {
  // main -> then -> then: COND_IF inside "then" refers to "then" again.
  Graph rec("then");
  ValueId c = rec.add_input("c", tt(DType::kBool, {}));
  ValueId a = rec.add_input("a", tt(DType::kFp32, {2}));
  ValueId b = add1(rec, Op::COND_IF, {c, a},
                   {{"then_graph", std::string("then")}, {"else_graph", std::string("else")}}, "b",
                   tt(DType::kFp32, {2}));
  rec.add_output(b);
  Graph g("main");
  ValueId mc = g.add_input("c", tt(DType::kBool, {}));
  ValueId x = g.add_input("x", tt(DType::kFp32, {2}));
  ValueId y = add1(g, Op::COND_IF, {mc, mc, x},
                   {{"then_graph", std::string("then")}, {"else_graph", std::string("else2")}}, "y",
                   tt(DType::kFp32, {2}));
  g.add_output(y);
  Module m(std::move(g));
  m.add_graph(std::move(rec));
  m.add_graph(abs_graph("else"));
  Graph else2("else2");
  else2.add_input("c", tt(DType::kBool, {}));
  ValueId e2 = else2.add_input("a", tt(DType::kFp32, {2}));
  else2.add_output(e2);
  m.add_graph(std::move(else2));
  auto errors = verify_module(m);
  const Error* e = find_error(errors, "recursively: then -> then");
  ASSERT_NE(e, nullptr) << all_messages(errors);
  EXPECT_EQ(e->location().graph, "then");
  EXPECT_EQ(e->location().node, "%b");
}

TEST(VerifyStructure, NestingDepthLimit) {
  // main -> g1 -> ... -> g7, each through a COND_IF: the COND_IF in g6 is at depth 6.
  Module m;
  const int levels = 7;
  for (int k = 0; k <= levels; ++k) {
    Graph g(k == 0 ? std::string("main") : "g" + std::to_string(k));
    ValueId c = g.add_input("c", tt(DType::kBool, {}));
    ValueId a = g.add_input("a", tt(DType::kFp32, {2}));
    if (k < levels) {
      std::string next = "g" + std::to_string(k + 1);
      ValueId b = add1(g, Op::COND_IF, {c, c, a}, {{"then_graph", next}, {"else_graph", next}}, "b",
                       tt(DType::kFp32, {2}));
      g.add_output(b);
    } else {
      g.add_output(a);
    }
    m.add_graph(std::move(g));
  }
  auto errors = verify_module(m);
  const Error* e = find_error(errors, "nested 6 levels deep");
  ASSERT_NE(e, nullptr) << all_messages(errors);
  EXPECT_EQ(e->location().graph, "g6");
  EXPECT_EQ(find_error(errors, "nested 5 levels deep"), nullptr) << all_messages(errors);
}

// ---- Variables ----

Module variable_module(const std::string& read_name, TensorType read_type, TensorType write_type) {
  Graph g("main");
  add(g, Op::VARIABLE, {},
      {{"name", std::string("state")},
       {"var_shape", std::vector<int64_t>{2}},
       {"type", static_cast<int64_t>(VarType::kFp32)},
       {"initial_value", Tensor::zeros(tt(DType::kFp32, {2}))}},
      {});
  ValueId r = add1(g, Op::VARIABLE_READ, {}, {{"name", read_name}}, "r", read_type);
  ValueId w = g.add_input("w", write_type);
  add(g, Op::VARIABLE_WRITE, {w}, {{"name", std::string("state")}}, {});
  g.add_output(r);
  return Module(std::move(g));
}

TEST(VerifyStructure, VariablesValid) {
  Module m = variable_module("state", tt(DType::kFp32, {2}), tt(DType::kFp32, {2}));
  EXPECT_NO_ERRORS(relevant(verify_module(m)));
}

TEST(VerifyStructure, VariableReadUndeclared) {
  Module m = variable_module("other", tt(DType::kFp32, {2}), tt(DType::kFp32, {2}));
  auto errors = verify_module(m);
  const Error* e = find_error(errors, "VARIABLE_READ: variable 'other' is not declared");
  ASSERT_NE(e, nullptr) << all_messages(errors);
  EXPECT_EQ(e->location().operand, "name");
}

TEST(VerifyStructure, VariableTypeMismatch) {
  Module m = variable_module("state", tt(DType::kFp32, {3}), tt(DType::kFp16, {2}));
  auto errors = verify_module(m);
  EXPECT_HAS_ERROR(errors,
                   "VARIABLE_READ: 'output1' has type f32[3] but variable 'state' is declared f32[2]");
  EXPECT_HAS_ERROR(errors,
                   "VARIABLE_WRITE: 'input1' has type f16[2] but variable 'state' is declared f32[2]");
}

TEST(VerifyStructure, VariableDeclaredTwice) {
  Module m = variable_module("state", tt(DType::kFp32, {2}), tt(DType::kFp32, {2}));
  add(m.main(), Op::VARIABLE, {},
      {{"name", std::string("state")},
       {"var_shape", std::vector<int64_t>{2}},
       {"type", static_cast<int64_t>(VarType::kFp32)},
       {"initial_value", Tensor::zeros(tt(DType::kFp32, {2}))}},
      {});
  EXPECT_HAS_ERROR(verify_module(m), "VARIABLE: variable 'state' is already declared");
}

TEST(VerifyStructure, VariableInitialValueMustMatchDeclaration) {
  Graph g("main");
  add(g, Op::VARIABLE, {},
      {{"name", std::string("state")},
       {"var_shape", std::vector<int64_t>{2}},
       {"type", static_cast<int64_t>(VarType::kFp32)},
       {"initial_value", Tensor::zeros(tt(DType::kFp32, {3}))}},
      {});
  EXPECT_HAS_ERROR(verify_module(Module(std::move(g))), "VARIABLE: initial_value has type f32[3]");
}

// ---- verify_or_throw ----

TEST(VerifyOrThrow, ValidModuleDoesNotThrow) {
  if (inference_pending()) GTEST_SKIP() << "infer_output_types is still a placeholder";
  EXPECT_NO_THROW(verify_or_throw(Module(simple_graph())));
}

TEST(VerifyOrThrow, FirstErrorWithCount) {
  Graph g = simple_graph();
  g.add_output(g.add_value("lost1", tt(DType::kFp32, {1})));
  g.add_output(g.add_value("lost2", tt(DType::kFp32, {1})));
  Module m(std::move(g));
  size_t total = verify_module(m).size();
  ASSERT_GE(total, 2u);
  try {
    verify_or_throw(m);
    FAIL() << "verify_or_throw accepted an invalid module";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kVerify);
    EXPECT_NE(e.message().find("graph output '%lost1' is not produced"), std::string::npos) << e.what();
    std::string suffix = " (and " + std::to_string(total - 1) + " more error" + (total == 2 ? ")" : "s)");
    EXPECT_NE(e.message().find(suffix), std::string::npos) << e.what();
    EXPECT_EQ(e.location().graph, "main");
  }
}

}  // namespace
}  // namespace weft
