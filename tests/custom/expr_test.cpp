// The expression language of custom operator registrations: eval_expr (custom.h, above OpSpec).
#include <gtest/gtest.h>

#include <string>

#include "weft/custom.h"

namespace weft::custom {
namespace {

ExprEnv env() {
  ExprEnv e;
  e.inputs = {{1, 8, 6, 3}, {2, 5}};
  e.outputs = {{7, 9}};
  e.attrs = {{"align_corners", 1}, {"alpha", 0.5}, {"count", -7}};
  e.attr_is_float = {{"align_corners", false}, {"alpha", true}, {"count", false}};
  return e;
}

int64_t ival(const std::string& expr) {
  const ExprValue v = eval_expr(expr, env(), "test");
  EXPECT_FALSE(v.is_float) << expr;
  return static_cast<int64_t>(v.value);
}

double fval(const std::string& expr) {
  const ExprValue v = eval_expr(expr, env(), "test");
  EXPECT_TRUE(v.is_float) << expr;
  return v.value;
}

// The error's message, which must be kInvalidArgument.
std::string error(const std::string& expr, const std::string& what = "push constant 'k'") {
  try {
    eval_expr(expr, env(), what);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    return e.message();
  }
  ADD_FAILURE() << "no error for " << expr;
  return "";
}

TEST(CustomExpr, IntegerArithmeticAndPrecedence) {
  EXPECT_EQ(ival("42"), 42);
  EXPECT_EQ(ival("1 + 2 * 3"), 7);
  EXPECT_EQ(ival("(1 + 2) * 3"), 9);
  EXPECT_EQ(ival("10 - 4 - 3"), 3);  // left associative
  EXPECT_EQ(ival("2 * 3 % 4"), 2);   // (2*3) % 4
  EXPECT_EQ(ival("100 / 10 / 5"), 2);
  EXPECT_EQ(ival("-3 * -2"), 6);
  EXPECT_EQ(ival("--4"), 4);
  EXPECT_EQ(ival("-(2 + 3) * 2"), -10);
  EXPECT_EQ(ival("  7\t+1 "), 8);
  EXPECT_EQ(ival("1000000000000000 * 8"), 8000000000000000);
}

TEST(CustomExpr, FloorDivisionAndModulo) {
  EXPECT_EQ(ival("7 / 2"), 3);
  EXPECT_EQ(ival("-7 / 2"), -4);
  EXPECT_EQ(ival("7 / -2"), -4);
  EXPECT_EQ(ival("-7 / -2"), 3);
  EXPECT_EQ(ival("-8 / 2"), -4);
  EXPECT_EQ(ival("7 % 3"), 1);
  EXPECT_EQ(ival("-7 % 3"), 2);   // a == (a / b) * b + a % b
  EXPECT_EQ(ival("7 % -3"), -2);
  EXPECT_EQ(ival("-7 % -3"), -1);
  EXPECT_EQ(ival("-6 % 3"), 0);
}

TEST(CustomExpr, Floats) {
  EXPECT_DOUBLE_EQ(fval("1.5"), 1.5);
  EXPECT_DOUBLE_EQ(fval("7 / 2.0"), 3.5);  // any float operand makes the operation float
  EXPECT_DOUBLE_EQ(fval("1 + 0.25"), 1.25);
  EXPECT_DOUBLE_EQ(fval("2.5e2"), 250.0);
  EXPECT_DOUBLE_EQ(fval("1E-1"), 0.1);
  EXPECT_DOUBLE_EQ(fval(".5 * 4"), 2.0);
  EXPECT_DOUBLE_EQ(fval("-7.5 % 2"), 0.5);  // the divisor's sign, as for integers
  EXPECT_DOUBLE_EQ(fval("-1.5"), -1.5);
}

TEST(CustomExpr, Functions) {
  EXPECT_EQ(ival("ceil_div(10, 4)"), 3);
  EXPECT_EQ(ival("ceil_div(8, 4)"), 2);
  EXPECT_EQ(ival("ceil_div(-7, 2)"), -3);
  EXPECT_EQ(ival("ceil_div(in0[1] * in0[2], 16)"), 3);
  EXPECT_DOUBLE_EQ(fval("ceil_div(7.0, 2)"), 4.0);
  EXPECT_EQ(ival("min(3, -4)"), -4);
  EXPECT_EQ(ival("max(3, -4)"), 3);
  EXPECT_EQ(ival("max(min(in0[1], in0[2]), 2) + 1"), 7);
  EXPECT_DOUBLE_EQ(fval("min(1, 0.5)"), 0.5);
  EXPECT_DOUBLE_EQ(fval("max(1, 0.5)"), 1.0);  // float when any argument is
}

TEST(CustomExpr, DimensionsAndRanks) {
  EXPECT_EQ(ival("in0[0]"), 1);
  EXPECT_EQ(ival("in0[3]"), 3);
  EXPECT_EQ(ival("in0[-1]"), 3);
  EXPECT_EQ(ival("in0[-4]"), 1);
  EXPECT_EQ(ival("in1[1]"), 5);
  EXPECT_EQ(ival("in0 [ 1 ]"), 8);
  EXPECT_EQ(ival("in0.rank"), 4);
  EXPECT_EQ(ival("in1.rank + out0.rank"), 4);
  EXPECT_EQ(ival("out0[1]"), 9);
  EXPECT_EQ(ival("out0[-2]"), 7);
  EXPECT_EQ(ival("in0[1] * in0[2] / 2"), 24);
}

TEST(CustomExpr, Attributes) {
  EXPECT_EQ(ival("attr.align_corners"), 1);
  EXPECT_EQ(ival("attr.count * 2"), -14);
  EXPECT_DOUBLE_EQ(fval("attr.alpha"), 0.5);
  EXPECT_DOUBLE_EQ(fval("attr.alpha * 4"), 2.0);
  EXPECT_EQ(ival("attr.align_corners|0"), 1);  // present: the default is not used
  EXPECT_EQ(ival("attr.missing|3"), 3);
  EXPECT_EQ(ival("attr.missing|-3 + 1"), -2);
  EXPECT_EQ(ival("attr.missing | 5"), 5);
  EXPECT_DOUBLE_EQ(fval("attr.missing|0.75"), 0.75);
  EXPECT_DOUBLE_EQ(fval("attr.missing|-2.5"), -2.5);
}

TEST(CustomExpr, Errors) {
  EXPECT_EQ(error("1 / 0"), "push constant 'k': 1 / 0: division by zero at column 3");
  EXPECT_EQ(error("5 % (2 - 2)"), "push constant 'k': 5 % (2 - 2): division by zero at column 3");
  EXPECT_EQ(error("1.0 / 0.0"), "push constant 'k': 1.0 / 0.0: division by zero at column 5");
  EXPECT_EQ(error("ceil_div(3, 0)"), "push constant 'k': ceil_div(3, 0): division by zero in ceil_div at column 1");
  EXPECT_EQ(error("in0[4]", "output 0 shape[1]"),
            "output 0 shape[1]: in0[4]: in0[4]: index 4 out of range for rank 4 at column 5");
  EXPECT_EQ(error("in0[-5]"), "push constant 'k': in0[-5]: in0[-5]: index -5 out of range for rank 4 at column 5");
  EXPECT_EQ(error("1 + in2[0]"), "push constant 'k': 1 + in2[0]: in2: input 2 out of range (the node has 2 inputs) at column 5");
  EXPECT_NE(error("out1[0]").find("out1: output 1 is not known here (1 output shape known"), std::string::npos);
  EXPECT_EQ(error("attr.mode"),
            "push constant 'k': attr.mode: attribute 'mode' is not set (write attr.mode|<default> when it may be "
            "absent) at column 1");
  EXPECT_EQ(error(""), "push constant 'k': : empty expression at column 1");
  EXPECT_EQ(error("   "), "push constant 'k':    : empty expression at column 4");
  EXPECT_EQ(error("1 +"), "push constant 'k': 1 +: unexpected end of expression (expected a value) at column 4");
  EXPECT_EQ(error("(1 + 2"), "push constant 'k': (1 + 2: expected ')' to close the '(' at column 1, found end of expression at column 7");
  EXPECT_EQ(error("1 + 2)"), "push constant 'k': 1 + 2): unbalanced ')' at column 6");
  EXPECT_EQ(error("2 3"), "push constant 'k': 2 3: unexpected '3' (expected an operator or the end) at column 3");
  EXPECT_EQ(error("1 # 2"), "push constant 'k': 1 # 2: unexpected '#' (expected an operator or the end) at column 3");
  EXPECT_EQ(error("* 2"), "push constant 'k': * 2: unexpected '*' (expected a value) at column 1");
  EXPECT_EQ(error("foo + 1"),
            "push constant 'k': foo + 1: unknown name 'foo' (known: in<i>[<d>], in<i>.rank, out<i>[<d>], out<i>.rank, "
            "attr.<name>) at column 1");
  EXPECT_EQ(error("floor(3, 2)"), "push constant 'k': floor(3, 2): unknown function 'floor' (known: ceil_div, min, max) at column 1");
  EXPECT_EQ(error("min(1)"), "push constant 'k': min(1): expected ',' between the arguments of min, found ')' at column 6");
  EXPECT_EQ(error("max(1, 2, 3)"),
            "push constant 'k': max(1, 2, 3): expected ')' after the arguments of max (it takes 2), found ',' at column 9");
  EXPECT_EQ(error("in0"), "push constant 'k': in0: expected '[' or '.rank' after 'in0' at column 4");
  EXPECT_EQ(error("in0.size"), "push constant 'k': in0.size: expected 'rank' after 'in0.' at column 5");
  EXPECT_EQ(error("in0[x]"), "push constant 'k': in0[x]: expected an integer dimension index after 'in0[' at column 5");
  EXPECT_EQ(error("in0[1"), "push constant 'k': in0[1: expected ']' after the dimension index, found end of expression at column 6");
  EXPECT_EQ(error("in01[0]"), "push constant 'k': in01[0]: 'in01': no leading zeros in the index at column 1");
  EXPECT_EQ(error("attr."), "push constant 'k': attr.: expected an attribute name after 'attr.' at column 6");
  EXPECT_EQ(error("attr.x|"), "push constant 'k': attr.x|: expected a number literal as the default of attr.x at column 8");
  EXPECT_EQ(error("attr.x|in0[0]"),
            "push constant 'k': attr.x|in0[0]: expected a number literal as the default of attr.x at column 8");
  EXPECT_EQ(error("2x"), "push constant 'k': 2x: unexpected 'x' after a number at column 2");
  EXPECT_EQ(error("99999999999999999999"),
            "push constant 'k': 99999999999999999999: integer literal out of range at column 1");
  EXPECT_EQ(error("9223372036854775807 + 1"),
            "push constant 'k': 9223372036854775807 + 1: integer overflow at column 21");
  EXPECT_EQ(error("4611686018427387904 * 2"),
            "push constant 'k': 4611686018427387904 * 2: integer overflow at column 21");
  // Without `what`, the message starts with the expression.
  try {
    eval_expr("1/0", env(), "");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "1/0: division by zero at column 2");
  }
}

TEST(CustomExpr, ErrorsOnlyWhenEvaluated) {
  // The syntax of both branches is checked, but a missing attribute with a default is fine and
  // the right operand is evaluated even when the left already decides nothing (no short-circuit).
  EXPECT_EQ(ival("min(attr.missing|2, 3)"), 2);
  ExprEnv empty;
  EXPECT_EQ(eval_expr("1 + 2", empty, "x").value, 3);
  EXPECT_NE(error("min(1, 1 / 0)").find("division by zero at column 10"), std::string::npos);
}

}  // namespace
}  // namespace weft::custom
