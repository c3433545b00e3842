// CUSTOM, COND_IF, WHILE_LOOP and the VARIABLE operators, run through hand-built modules.
// Only kernels of this concern and test-registered CUSTOM kernels are used inside the graphs.
#include <cmath>
#include <stdexcept>

#include "reference/ref_test_util.h"
#include "weft/runtime.h"

namespace weft::testing {
namespace {

InterpreterOptions no_verify() {
  InterpreterOptions o;
  o.verify = false;
  return o;
}

Attrs custom_attrs(const std::string& domain, const std::string& op, const std::string& impl = "") {
  return {{"operator_name", op}, {"domain_name", domain}, {"implementation_attrs", impl}};
}

// Registers a kernel for the lifetime of a test.
struct ScopedCustom {
  std::string domain, op;
  ScopedCustom(std::string d, std::string o, CustomKernel k) : domain(std::move(d)), op(std::move(o)) {
    register_custom_kernel(domain, op, std::move(k));
  }
  ~ScopedCustom() { unregister_custom_kernel(domain, op); }
};

// "weft.test::le": bool[1] = (inputs[0][0] <= implementation_attrs as an integer).
CustomKernel less_equal_kernel() {
  return [](const std::vector<Tensor>& in, std::vector<Tensor>& out, const std::string& impl) {
    out.at(0).mutable_data<uint8_t>()[0] = in.at(0).at_int(0) <= std::stoll(impl) ? 1 : 0;
  };
}

TEST(Custom, RegisteredKernelRuns) {
  ScopedCustom reg("weft.test", "scale_add",
                   [](const std::vector<Tensor>& in, std::vector<Tensor>& out, const std::string& impl) {
                     const double k = std::stod(impl);
                     for (int64_t i = 0; i < in[0].num_elements(); ++i) {
                       out[0].mutable_data<float>()[i] =
                           static_cast<float>(in[0].at_double(i) * k + in[1].at_double(i));
                     }
                     out[1].mutable_data<int32_t>()[0] = static_cast<int32_t>(in.size());
                   });
  auto outs =
      run_op(Op::CUSTOM, {Operand::input(F32({3}, {1, 2, 3})), Operand::constant(F32({3}, {10, 20, 30}))},
             custom_attrs("weft.test", "scale_add", "2"), {{DType::kFp32, {3}}, {DType::kInt32, {1}}});
  ASSERT_EQ(outs.size(), 2u);
  expect_tensor_eq(outs[0], F32({3}, {12, 24, 36}));
  expect_tensor_eq(outs[1], I(DType::kInt32, {1}, {2}));
}

TEST(Custom, MissingKernelNamesHowToRegister) {
  try {
    run_op(Op::CUSTOM, {Operand::input(F32({1}, {1}))}, custom_attrs("acme", "frobnicate"),
           {{DType::kFp32, {1}}});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
    const std::string m = e.message();
    EXPECT_NE(m.find("acme"), std::string::npos) << m;
    EXPECT_NE(m.find("frobnicate"), std::string::npos) << m;
    EXPECT_NE(m.find("register_custom_kernel"), std::string::npos) << m;
  }
}

TEST(Custom, KernelFailuresBecomeRuntimeErrors) {
  ScopedCustom thrower("weft.test", "throws",
                       [](const std::vector<Tensor>&, std::vector<Tensor>&, const std::string&) {
                         throw std::runtime_error("boom");
                       });
  ScopedCustom retype("weft.test", "retype",
                      [](const std::vector<Tensor>&, std::vector<Tensor>& out, const std::string&) {
                        out[0] = Tensor::zeros({DType::kInt8, {1}});
                      });
  for (const char* op : {"throws", "retype"}) {
    SCOPED_TRACE(op);
    try {
      run_op(Op::CUSTOM, {Operand::input(F32({1}, {1}))}, custom_attrs("weft.test", op),
             {{DType::kFp32, {1}}});
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kRuntime) << e.what();
    }
  }
}

// then: REVERSE(x); else: IDENTITY(x).
Module cond_if_module(TensorType then_out) {
  const TensorType x_t{DType::kFp32, {3}};
  GraphBuilder tb("then_g");
  ValueId tx = tb.input("x", x_t);
  tb.output(tb.op_multi(Op::REVERSE, {tx}, {{"axis", int64_t{0}}}, {"r"}, {then_out})[0]);
  GraphBuilder eb("else_g");
  ValueId ex = eb.input("x", x_t);
  eb.output(eb.op_multi(Op::IDENTITY, {ex}, {}, {"r"}, {x_t})[0]);
  GraphBuilder mb("main");
  ValueId c = mb.input("c", {DType::kBool, {}});
  ValueId x = mb.input("x", x_t);
  auto outs = mb.op_multi(Op::COND_IF, {c, x},
                          {{"then_graph", std::string("then_g")}, {"else_graph", std::string("else_g")}},
                          {"y"}, {x_t});
  mb.output(outs[0]);
  Module m(mb.finish());
  m.add_graph(tb.finish());
  m.add_graph(eb.finish());
  return m;
}

TEST(CondIf, BothBranches) {
  Module m = cond_if_module({DType::kFp32, {3}});
  Interpreter interp(m, no_verify());
  Tensor x = F32({3}, {1, 2, 3});
  expect_tensor_eq(interp.run(std::vector<Tensor>{I(DType::kBool, {}, {1}), x}).at(0), F32({3}, {3, 2, 1}));
  expect_tensor_eq(interp.run(std::vector<Tensor>{I(DType::kBool, {}, {0}), x}).at(0), x);
}

TEST(CondIf, ConditionAndOutputTypeChecks) {
  // The then branch produces f32[3] values typed f16 inside: REVERSE rejects the mismatch.
  Module bad = cond_if_module({DType::kFp16, {3}});
  Interpreter interp(bad, no_verify());
  EXPECT_THROW(interp.run(std::vector<Tensor>{I(DType::kBool, {}, {1}), F32({3}, {1, 2, 3})}), Error);

  // A condition with two elements is rejected.
  const TensorType x_t{DType::kFp32, {3}};
  GraphBuilder mb("main");
  ValueId c = mb.input("c", {DType::kBool, {2}});
  ValueId x = mb.input("x", x_t);
  mb.output(mb.op_multi(Op::COND_IF, {c, x},
                        {{"then_graph", std::string("g")}, {"else_graph", std::string("g")}}, {"y"},
                        {x_t})[0]);
  GraphBuilder gb("g");
  gb.output(gb.input("x", x_t));
  Module m2(mb.finish());
  m2.add_graph(gb.finish());
  Interpreter i2(m2, no_verify());
  EXPECT_THROW(i2.run(std::vector<Tensor>{I(DType::kBool, {2}, {1, 1}), F32({3}, {1, 2, 3})}), Error);

  // A branch that returns a differently typed value than the node declares.
  GraphBuilder mb3("main");
  ValueId c3 = mb3.input("c", {DType::kBool, {1}});
  ValueId x3 = mb3.input("x", x_t);
  mb3.output(mb3.op_multi(Op::COND_IF, {c3, x3},
                          {{"then_graph", std::string("g")}, {"else_graph", std::string("g")}}, {"y"},
                          {{DType::kFp32, {4}}})[0]);
  GraphBuilder gb3("g");
  gb3.output(gb3.input("x", x_t));
  Module m3(mb3.finish());
  m3.add_graph(gb3.finish());
  Interpreter i3(m3, no_verify());
  EXPECT_THROW(i3.run(std::vector<Tensor>{I(DType::kBool, {1}, {1}), F32({3}, {1, 2, 3})}), Error);
}

// i + j for i32[1] values, built from CONCAT + REDUCE_SUM.
ValueId add_i32(GraphBuilder& b, ValueId x, ValueId y, const std::string& name) {
  ValueId both =
      b.op_multi(Op::CONCAT, {x, y}, {{"axis", int64_t{0}}}, {name + "_cat"}, {{DType::kInt32, {2}}})[0];
  return b.op_multi(Op::REDUCE_SUM, {both}, {{"axis", int64_t{0}}}, {name}, {{DType::kInt32, {1}}})[0];
}

TEST(WhileLoop, SumOneToTen) {
  ScopedCustom le("weft.test", "le", less_equal_kernel());
  const TensorType s{DType::kInt32, {1}};
  // cond: i <= 10
  GraphBuilder cb("cond");
  ValueId ci = cb.input("i", s);
  cb.input("acc", s);
  cb.output(
      cb.op_multi(Op::CUSTOM, {ci}, custom_attrs("weft.test", "le", "10"), {"ok"}, {{DType::kBool, {1}}})[0]);
  // body: (i + 1, acc + i)
  GraphBuilder bb("body");
  ValueId bi = bb.input("i", s);
  ValueId bacc = bb.input("acc", s);
  ValueId one = bb.constant("one", I(DType::kInt32, {1}, {1}));
  bb.output(add_i32(bb, bi, one, "next_i"));
  bb.output(add_i32(bb, bacc, bi, "next_acc"));
  GraphBuilder mb("main");
  ValueId i0 = mb.input("i0", s);
  ValueId a0 = mb.input("a0", s);
  auto outs = mb.op_multi(Op::WHILE_LOOP, {i0, a0},
                          {{"cond_graph", std::string("cond")}, {"body_graph", std::string("body")}},
                          {"i_end", "sum"}, {s, s});
  mb.output(outs[0]);
  mb.output(outs[1]);
  Module m(mb.finish());
  m.add_graph(cb.finish());
  m.add_graph(bb.finish());
  Interpreter interp(m, no_verify());
  auto r = interp.run(std::vector<Tensor>{I(DType::kInt32, {1}, {1}), I(DType::kInt32, {1}, {0})});
  expect_tensor_eq(r.at(0), I(DType::kInt32, {1}, {11}));
  expect_tensor_eq(r.at(1), I(DType::kInt32, {1}, {55}));  // 1 + 2 + ... + 10
  // Condition false at once: the inputs come back unchanged.
  r = interp.run(std::vector<Tensor>{I(DType::kInt32, {1}, {20}), I(DType::kInt32, {1}, {7})});
  expect_tensor_eq(r.at(0), I(DType::kInt32, {1}, {20}));
  expect_tensor_eq(r.at(1), I(DType::kInt32, {1}, {7}));
}

// A loop whose condition stays true: bounded by the run's options, with an error naming the loop.
Module forever() {
  const TensorType s{DType::kInt32, {1}};
  GraphBuilder cb("cond");
  cb.input("i", s);
  cb.output(cb.constant("t", I(DType::kBool, {1}, {1})));
  GraphBuilder bb("body");
  ValueId bi = bb.input("i", s);
  bb.output(add_i32(bb, bi, bb.constant("one", I(DType::kInt32, {1}, {1})), "next"));
  GraphBuilder mb("main");
  ValueId i0 = mb.input("i0", s);
  mb.output(mb.op_multi(Op::WHILE_LOOP, {i0}, {{"cond_graph", std::string("cond")}, {"body_graph", std::string("body")}},
                        {"spin"}, {s})[0]);
  Module m(mb.finish());
  m.add_graph(cb.finish());
  m.add_graph(bb.finish());
  return m;
}

TEST(WhileLoop, IterationLimitAndDeadlineStopALoopThatNeverEnds) {
  Module m = forever();
  InterpreterOptions o;
  o.max_loop_iterations = 1000;
  Interpreter interp(m, o);
  try {
    interp.run(std::vector<Tensor>{I(DType::kInt32, {1}, {0})});
    FAIL() << "the loop was not stopped";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
    EXPECT_NE(std::string(e.what()).find("the loop ran 1000 iterations"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("spin"), std::string::npos) << e.what();  // the loop's node
  }
  InterpreterOptions d;
  d.deadline_ms = 50;
  Interpreter timed(m, d);
  try {
    timed.run(std::vector<Tensor>{I(DType::kInt32, {1}, {0})});
    FAIL() << "the deadline did not stop the loop";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("passed its deadline"), std::string::npos) << e.what();
  }
  // The runtime's Context takes the same bounds.
  auto model = Model::from_module(m);
  Context ctx(model, {.threads = 1, .max_loop_iterations = 10});
  ctx.set_input(0, I(DType::kInt32, {1}, {0}));
  EXPECT_THROW(ctx.run(), Error);
  EXPECT_THROW(Context(model, {.threads = 100000}), Error);
}

TEST(WhileLoop, RankZeroConditionAndBodyTypeCheck) {
  const TensorType s{DType::kInt32, {1}};
  // cond returns bool[] from a CONST (false), so the loop ends at once.
  GraphBuilder cb("cond");
  cb.input("i", s);
  cb.output(cb.constant("f", I(DType::kBool, {}, {0})));
  // body returns the wrong type: only reached when cond is true.
  GraphBuilder bb("body");
  bb.input("i", s);
  bb.output(bb.constant("bad", I(DType::kInt8, {1}, {0})));
  GraphBuilder cb2("cond_true");
  cb2.input("i", s);
  cb2.output(cb2.constant("t", I(DType::kBool, {}, {1})));
  for (const char* cond : {"cond", "cond_true"}) {
    SCOPED_TRACE(cond);
    GraphBuilder mb("main");
    ValueId i0 = mb.input("i0", s);
    mb.output(mb.op_multi(Op::WHILE_LOOP, {i0},
                          {{"cond_graph", std::string(cond)}, {"body_graph", std::string("body")}}, {"o"},
                          {s})[0]);
    Module m(mb.finish());
    m.add_graph(GraphBuilder(cb).finish());
    m.add_graph(GraphBuilder(bb).finish());
    m.add_graph(GraphBuilder(cb2).finish());
    Interpreter interp(m, no_verify());
    if (std::string(cond) == "cond") {
      expect_tensor_eq(interp.run(std::vector<Tensor>{I(DType::kInt32, {1}, {4})}).at(0),
                       I(DType::kInt32, {1}, {4}));
    } else {
      EXPECT_THROW(interp.run(std::vector<Tensor>{I(DType::kInt32, {1}, {4})}), Error);
    }
  }
}

void add_no_output_node(GraphBuilder& b, Op op, std::vector<ValueId> inputs, const Attrs& attrs) {
  Node n;
  n.op = op;
  n.inputs = std::move(inputs);
  n.attrs = make_attrs(op, attrs);
  b.graph().add_node(std::move(n));
}

// main(x): VARIABLE v = [1, 2]; r = VARIABLE_READ v; VARIABLE_WRITE v <- x; return r.
Module variable_module(TensorType write_t) {
  const TensorType v_t{DType::kFp32, {2}};
  GraphBuilder b("main");
  ValueId x = b.input("x", write_t);
  add_no_output_node(b, Op::VARIABLE, {},
                     {{"name", std::string("v")},
                      {"var_shape", std::vector<int64_t>{2}},
                      {"type", static_cast<int64_t>(VarType::kFp32)},
                      {"initial_value", F32({2}, {1, 2})}});
  ValueId r = b.op_multi(Op::VARIABLE_READ, {}, {{"name", std::string("v")}}, {"r"}, {v_t})[0];
  add_no_output_node(b, Op::VARIABLE_WRITE, {x}, {{"name", std::string("v")}});
  b.output(r);
  return Module(b.finish());
}

TEST(Variable, PersistsAcrossRunsAndResets) {
  Module m = variable_module({DType::kFp32, {2}});
  Interpreter interp(m, no_verify());
  Tensor r1 = interp.run(std::vector<Tensor>{F32({2}, {5, 6})}).at(0);
  expect_tensor_eq(r1, F32({2}, {1, 2}));
  Tensor r2 = interp.run(std::vector<Tensor>{F32({2}, {7, 8})}).at(0);
  expect_tensor_eq(r2, F32({2}, {5, 6}));
  expect_tensor_eq(r1, F32({2}, {1, 2}));  // an earlier read is a copy, not a view of the variable
  interp.reset_variables();
  expect_tensor_eq(interp.run(std::vector<Tensor>{F32({2}, {9, 9})}).at(0), F32({2}, {1, 2}));
  expect_tensor_eq(interp.run(std::vector<Tensor>{F32({2}, {0, 0})}).at(0), F32({2}, {9, 9}));
  // A second interpreter has its own variables.
  Interpreter other(m, no_verify());
  expect_tensor_eq(other.run(std::vector<Tensor>{F32({2}, {3, 3})}).at(0), F32({2}, {1, 2}));
}

TEST(Variable, WriteTypeMismatchAndUndeclared) {
  Module m = variable_module({DType::kFp32, {3}});
  Interpreter interp(m, no_verify());
  try {
    interp.run(std::vector<Tensor>{F32({3}, {1, 2, 3})});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
  }
  // Reading an undeclared variable fails.
  GraphBuilder b("main");
  b.output(
      b.op_multi(Op::VARIABLE_READ, {}, {{"name", std::string("nope")}}, {"r"}, {{DType::kFp32, {2}}})[0]);
  Module m2(b.finish());
  Interpreter i2(m2, no_verify());
  EXPECT_THROW(i2.run(std::vector<Tensor>{}), Error);
}

TEST(Variable, InitialValueMustMatchDeclaredType) {
  GraphBuilder b("main");
  add_no_output_node(b, Op::VARIABLE, {},
                     {{"name", std::string("v")},
                      {"var_shape", std::vector<int64_t>{3}},
                      {"type", static_cast<int64_t>(VarType::kFp32)},
                      {"initial_value", F32({2}, {1, 2})}});
  Module m(b.finish());
  Interpreter interp(m, no_verify());
  EXPECT_THROW(interp.run(std::vector<Tensor>{}), Error);
}

}  // namespace
}  // namespace weft::testing
