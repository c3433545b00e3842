// Hand-written .weft input: omitted optional attributes, comments and layout freedom, and every
// class of malformed input reported at its exact line:column with a clear message.
#include <gtest/gtest.h>

#include <cmath>

#include "weft/text.h"
#include "weft/verify.h"

namespace weft {
namespace {

struct Pos {
  int line;
  int column;
};

// 1-based line:column of the `nth` occurrence of `needle` in `text`.
Pos pos_of(std::string_view text, std::string_view needle, int nth = 0) {
  size_t at = text.find(needle);
  for (int i = 0; i < nth && at != std::string_view::npos; ++i) at = text.find(needle, at + 1);
  EXPECT_NE(at, std::string_view::npos) << "marker '" << needle << "' not in the test input";
  if (at == std::string_view::npos) return {0, 0};
  Pos p{1, 1};
  for (size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') {
      ++p.line;
      p.column = 1;
    } else {
      ++p.column;
    }
  }
  return p;
}

Pos end_of(std::string_view text) {
  Pos p{1, 1};
  for (char c : text) {
    if (c == '\n') {
      ++p.line;
      p.column = 1;
    } else {
      ++p.column;
    }
  }
  return p;
}

void expect_error(const std::string& text, Pos where, const std::string& message_part,
                  ErrorCode code = ErrorCode::kParse) {
  SCOPED_TRACE(text);
  try {
    parse_weft(text, "test.weft");
    ADD_FAILURE() << "parsed without error; expected: " << message_part;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_EQ(e.location().file, "test.weft") << e.what();
    EXPECT_EQ(e.location().line, where.line) << e.what();
    EXPECT_EQ(e.location().column, where.column) << e.what();
    EXPECT_NE(e.message().find(message_part), std::string::npos) << e.what();
  }
}

// Errors at the position of `marker` (its nth occurrence).
void expect_error_at(const std::string& text, std::string_view marker, const std::string& message_part,
                     int nth = 0) {
  Pos p = pos_of(text, marker, nth);
  expect_error(text, p, message_part);
}

std::string wrap(const std::string& body, const std::string& header = "(%x: f32[2]) -> (%y)") {
  return "graph @main" + header + " {\n" + body + "  return %y\n}\n";
}

// ---- Accepted input ----

TEST(TextParse, HandWrittenWithOmittedAttributes) {
  const std::string text = R"(# A hand-written module.
profiles [PRO-FP, EXT-CONTROLFLOW, PRO-INT]   # order does not matter
entry @start

graph @start(%a: f32[1,2,2,1], %b: f32[1,2,2,1], %q: i8[4]) -> (%m, %p, %"r/1") {
  %m: f32[1,2,2,1] = tosa.MAXIMUM(%a, %b)          # nan_mode defaults to PROPAGATE
  %p: f32[1,1,1,1] = MAX_POOL2D(%a) {
    stride = [1, 1], kernel = [2, 2],              # any attribute order
    pad = [0, 0, 0, 0]
  } loc("pool \"1\"")
  %mul: i32[1] = CONST() {values = [1073741824]}
  %sh: i8[1] = CONST() {values = [+30]}
  %zp: i8[1] = CONST() {values = [0]}
  %"r/1": i8[4] = RESCALE(%q, %mul, %sh, %zp, %zp) {scale32 = true}
  return %m, %p, %"r/1"
}
)";
  Module m = parse_weft(text, "hand.weft");
  EXPECT_EQ(m.entry(), "start");
  EXPECT_EQ(m.profiles(), kProFp | kProInt | kExtControlFlow);
  const Graph& g = m.main();
  ASSERT_EQ(g.nodes().size(), 6u);
  EXPECT_EQ(g.node(0).op, Op::MAXIMUM);
  EXPECT_EQ(g.node(0).attr_int("nan_mode"), static_cast<int64_t>(NanMode::kPropagate));
  EXPECT_EQ(g.node(1).attr_ints("kernel"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(g.node(1).attr_int("nan_mode"), static_cast<int64_t>(NanMode::kPropagate));
  EXPECT_EQ(g.node(1).name, "pool \"1\"");
  EXPECT_EQ(g.node(3).attr_tensor("values").at_int(0), 30);
  const Node& rescale = g.node(5);
  EXPECT_TRUE(rescale.attr_bool("scale32"));
  EXPECT_FALSE(rescale.attr_bool("per_channel"));
  EXPECT_FALSE(rescale.attr_bool("input_unsigned"));
  EXPECT_EQ(rescale.attr_int("rounding_mode"), static_cast<int64_t>(RoundingMode::kSingle));
  EXPECT_EQ(g.value(g.outputs()[2]).name, "r/1");
  EXPECT_EQ(g.value(g.outputs()[2]).producer, 5);
  EXPECT_NO_THROW(parse_weft(wrap("  %y: f32[2] = ABS(%x) {}\n")));  // empty attribute braces
  // The canonical form prints every attribute, in table order.
  std::string canon = print_weft(m);
  EXPECT_NE(
      canon.find("MAX_POOL2D(%a) {kernel = [2, 2], stride = [1, 1], pad = [0, 0, 0, 0], nan_mode = PROPAGATE}"
                 " loc(\"pool \\\"1\\\"\")"),
      std::string::npos)
      << canon;
  EXPECT_EQ(print_weft(parse_weft(canon)), canon);
}

TEST(TextParse, ScalarsTakeTheInputElementType) {
  Module m = parse_weft(
      wrap("  %y: f16[2] = CLAMP(%x) {min_val = -inf, max_val = 65504}\n", "(%x: f16[2]) -> (%y)"));
  const Tensor& lo = m.main().node(0).attr_tensor("min_val");
  EXPECT_EQ(lo.type(), (TensorType{DType::kFp16, {}}));
  EXPECT_TRUE(std::isinf(lo.at_double(0)) && lo.at_double(0) < 0);
  EXPECT_EQ(m.main().node(0).attr_tensor("max_val").at_double(0), 65504.0);
  Module mi =
      parse_weft(wrap("  %y: i8[2] = CLAMP(%x) {min_val = -128, max_val = 127}\n", "(%x: i8[2]) -> (%y)"));
  EXPECT_EQ(mi.main().node(0).attr_tensor("min_val").type(), (TensorType{DType::kInt8, {}}));
}

TEST(TextParse, RawBitsAndSignedWords) {
  Module m =
      parse_weft(wrap("  %y: f32[5] = CONST() {values = [0x7fc00001, -nan, +inf, -0, .5]}\n", "() -> (%y)"));
  const Tensor& t = m.main().node(0).attr_tensor("values");
  EXPECT_EQ(t.data<uint32_t>()[0], 0x7fc00001u);
  EXPECT_TRUE(std::isnan(t.data<float>()[1]) && std::signbit(t.data<float>()[1]));
  EXPECT_EQ(t.data<uint32_t>()[3], 0x80000000u);
  EXPECT_EQ(t.data<float>()[4], 0.5f);
}

TEST(TextParse, ForwardGraphReferencesAndVariables) {
  const std::string text = R"(graph @main(%c: bool[], %v: f32[2]) -> (%out) {
  VARIABLE() {name = "state", var_shape = [2], type = FP32, initial_value = [0, 1]}
  VARIABLE_WRITE(%v) {name = "state"}
  %r: f32[2] = VARIABLE_READ() {name = "state"}
  %out: f32[2] = COND_IF(%c, %r) {then_graph = @yes, else_graph = @no}
  return %out
}
graph @yes(%a: f32[2]) -> (%a) { return %a }
graph @no(%a: f32[2]) -> (%b) { %b: f32[2] = NEGATE(%a, %zp, %zp) return %b }
)";
  // NEGATE needs zero points: the text above is missing them on purpose to show they are checked.
  expect_error_at(text, "%zp", "undefined value %zp");
  std::string fixed = text;
  fixed.replace(fixed.find("{ %b"), 4, "{ %zp: f32[1] = CONST() {values = [0]}\n  %b");
  Module m = parse_weft(fixed);
  ASSERT_EQ(m.graphs().size(), 3u);
  EXPECT_EQ(m.main().node(0).attr_tensor("initial_value").type(), (TensorType{DType::kFp32, {2}}));
  EXPECT_EQ(m.main().node(3).attr_str("then_graph"), "yes");
  EXPECT_EQ(print_weft(parse_weft(print_weft(m))), print_weft(m));
}

// Omitted output types are inferred, sub-graphs included (forward references are built first).
TEST(TextParse, OmittedOutputTypesAreInferred) {
  Module m = parse_weft(wrap("  %t = ABS(%x)\n  %y = ADD(%t, %x)\n"));
  EXPECT_EQ(m.main().value(m.main().value_id("t")).type, (TensorType{DType::kFp32, {2}}));
  EXPECT_EQ(m.main().value(m.main().value_id("y")).type, (TensorType{DType::kFp32, {2}}));
  // CONST_SHAPE takes shape[n] from its values; COND_IF's outputs come from a later graph.
  Module cf = parse_weft(
      "graph @main(%c: bool[], %x: f32[2]) -> (%y, %s) {\n"
      "  %s = CONST_SHAPE() {values = [1, 2]}\n"
      "  %y = COND_IF(%c, %x) {then_graph = @same, else_graph = @same}\n"
      "  return %y, %s\n}\n"
      "graph @same(%a: f32[2]) -> (%b) {\n  %b = ABS(%a)\n  return %b\n}\n");
  EXPECT_EQ(cf.main().value(cf.main().value_id("s")).type, (TensorType{DType::kShape, {2}}));
  EXPECT_EQ(cf.main().value(cf.main().value_id("y")).type, (TensorType{DType::kFp32, {2}}));
  EXPECT_EQ(cf.graphs()[1].name(), "same");  // the file's graph order is kept
  EXPECT_NE(print_weft(cf).find("%y: f32[2] = COND_IF(%c, %x)"), std::string::npos);
}

// ---- Malformed input, one class at a time ----

TEST(TextErrors, Lexical) {
  expect_error_at(wrap("  %y: f32[2] = CUSTOM(%x) {operator_name = \"abc}\n"), "\"abc",
                  "unterminated string");
  expect_error_at(wrap("  %y: f32[2] = ABS(%x) $\n"), "$", "unexpected character '$'");
  expect_error_at(wrap("  %y: f32[2] = ABS(% x)\n"), "% x", "expected a name after '%'");
  expect_error_at(wrap("  %y: f32[2] = CUSTOM(%x) {operator_name = \"a\\qb\", domain_name = \"\", "
                       "implementation_attrs = \"\"}\n"),
                  "\\q", "unknown escape");
  expect_error(wrap("  %y: f32[2] = ABS(%x) \x01\n"), {2, 24}, "unexpected byte 0x01");
}

TEST(TextErrors, Unterminated) {
  const std::string graph = "graph @main(%x: f32[2]) -> (%y) {\n  %y: f32[2] = ABS(%x)\n";
  expect_error(graph, {3, 1}, "graph @main opened at 1:33 is not closed");
  const std::string list = "graph @main() -> (%y) {\n  %y: f32[3] = CONST() {values = [1, 2,\n";
  expect_error(list, end_of(list), "list opened at 2:34 is not closed");
  const std::string attrs = "graph @main() -> (%y) {\n  %y: f32[3] = CONST() {values = [1, 2, 3]";
  expect_error(attrs, end_of(attrs), "attributes of CONST opened at 2:24 are not closed");
  expect_error("graph @main() -> (%y) {\n  %y: f32[2", {2, 12}, "expected ']' to end the shape");
  expect_error("graph @main(%x: f32[2]", {1, 23},
               "expected ')' after the inputs of @main, found end of input");
  expect_error("", {1, 1}, "expected 'graph', found end of input");
  expect_error("# only a comment\n", {2, 1}, "expected 'graph', found end of input");
}

TEST(TextErrors, Syntax) {
  expect_error_at(wrap("  %y: f32[2] = CONV2D(%x {pad = [0]}\n"), "{pad",
                  "expected ')' after the inputs of CONV2D, found '{'");
  expect_error_at(wrap("  %y f32[2] = ABS(%x)\n"),
                  "f32[2] =", "expected '=' after the outputs of a node, found 'f32'");
  expect_error_at(wrap("  %y: f32[2] = ABS(%x) {nan_mode PROPAGATE}\n"), "PROPAGATE",
                  "expected '=' after attribute 'nan_mode'");
  expect_error_at("graph @main(%x: f32[2]) -> (%y) {\n  %y: f32[2] = ABS(%x)\n}\n", "}",
                  "expected 'return' before '}'");
  expect_error_at(wrap("  %y: f32[2] = ABS(%x)\n") + "junk\n", "junk", "expected 'graph', found 'junk'");
  expect_error_at(wrap("  %y: f32[2] = ABS(%x)\n", "(%x: f32[2]) (%y)"), "(%y)", "expected '->'");
  expect_error_at(wrap("  %y: f32[2] = CONST() {values = [1, (]}\n", "() -> (%y)"), "(]",
                  "expected a list element");
}

TEST(TextErrors, UnknownNames) {
  expect_error_at(wrap("  %y: f32[2] = FROBNICATE(%x)\n"), "FROBNICATE", "unknown operator 'FROBNICATE'");
  expect_error_at(wrap("  %y: f32[2] = ABS(%x) {alpha = 1}\n"), "alpha",
                  "ABS has no attribute 'alpha' (it takes none)");
  expect_error_at(wrap("  %y: i32[] = ARGMAX(%x) {axis = 0, nan_mod = IGNORE}\n"), "nan_mod",
                  "ARGMAX has no attribute 'nan_mod' (attributes: axis, nan_mode)");
  expect_error_at(wrap("  %y: f64[2] = ABS(%x)\n"), "f64", "unknown element type 'f64'");
  expect_error_at("profiles [PRO-INT, PRO-QUANTUM]\n" + wrap("  %y: f32[2] = ABS(%x)\n"), "PRO-QUANTUM",
                  "unknown profile 'PRO-QUANTUM'");
  expect_error_at(wrap("  %y: f32[2] = COND_IF(%x) {then_graph = @main, else_graph = @nowhere}\n"),
                  "@nowhere", "undefined graph @nowhere");
  expect_error_at("entry @start\n" + wrap("  %y: f32[2] = ABS(%x)\n"), "@start",
                  "entry graph @start is not defined");
  expect_error_at("graph @other() -> () {\n  return\n}\n", "@other", "module has no graph @main");
}

TEST(TextErrors, AttributeValues) {
  expect_error_at(wrap("  %y: i32[] = ARGMAX(%x) {axis = FP32}\n"), "FP32",
                  "attribute 'axis' of ARGMAX takes an integer, found 'FP32'");
  expect_error_at(wrap("  %y: f32[2] = MAXIMUM(%x, %x) {nan_mode = SOMETIMES}\n"), "SOMETIMES",
                  "takes one of PROPAGATE, IGNORE, found 'SOMETIMES'");
  expect_error_at(wrap("  %y: f32[2], %z: f32[2] = FFT2D(%x, %x) {inverse = 1, local_bound = false}\n"), "1,",
                  "attribute 'inverse' of FFT2D takes true or false");
  expect_error_at(wrap("  %y: f32[2] = TRANSPOSE(%x) {perms = 0}\n"), "0}", "takes a list of integers");
  expect_error_at(wrap("  %y: f32[2] = TRANSPOSE(%x) {perms = [0, 1.5]}\n"), "1.5",
                  "expected an i32 list element");
  expect_error_at(wrap("  %y: i32[] = ARGMAX(%x) {axis = 4294967296}\n"), "4294967296", "out of range");
  expect_error_at(wrap("  %y: f32[2] = CUSTOM(%x) {operator_name = 1, domain_name = \"\", "
                       "implementation_attrs = \"\"}\n"),
                  "1,", "takes a string");
  expect_error_at(wrap("  %y: i32[] = ARGMAX(%x) {axis = 0, axis = 1}\n"), "axis = 1",
                  "attribute 'axis' is given twice");
  expect_error_at(wrap("  %y: i32[] = ARGMAX(%x)\n"), "ARGMAX", "ARGMAX requires attribute 'axis'");
  expect_error_at(wrap("  %y: f32[2] = CLAMP(%x) {min_val = [0], max_val = 1}\n"), "[0]", "takes a number");
}

TEST(TextErrors, Numbers) {
  const std::string h = "() -> (%y)";
  expect_error_at(wrap("  %y: f32[2] = CONST() {values = [1.2.3, 4]}\n", h), "1.2.3", "bad number '1.2.3'");
  expect_error_at(wrap("  %y: f32[2] = CONST() {values = [1e99, 4]}\n", h), "1e99", "out of range for f32");
  expect_error_at(wrap("  %y: i8[2] = CONST() {values = [1, 300]}\n", h), "300",
                  "i8 value 300 is out of range");
  expect_error_at(wrap("  %y: i4[2] = CONST() {values = [-9, 0]}\n", h), "-9", "out of range [-8, 7]");
  expect_error_at(wrap("  %y: i8[2] = CONST() {values = [1, 2.5]}\n", h), "2.5",
                  "expected i8 value, found '2.5'");
  expect_error_at(wrap("  %y: bool[2] = CONST() {values = [true, 2]}\n", h), "2]}", "expected a bool value");
  expect_error_at(wrap("  %y: f16[2] = CONST() {values = [0x10000, 0]}\n", h), "0x10000",
                  "do not fit in f16");
  expect_error_at(wrap("  %y: f32[2] = CONST() {values = [-0x1, 0]}\n", h), "-0x1", "take no sign");
  expect_error_at(wrap("  %y: f32[2] = CONST() {values = [true, 0]}\n", h), "true", "expected a f32 value");
  expect_error_at(wrap("  %y: f32[-1] = ABS(%x)\n"), "-1", "a dimension -1 is out of range");
  expect_error_at(wrap("  %y: i48[1] = CONST() {values = [140737488355328]}\n", h), "1407", "out of range");
}

TEST(TextErrors, Values) {
  expect_error_at(wrap("  %y: f32[2] = ABS(%x)\n  %y: f32[2] = ABS(%x)\n"), "%y",
                  "value %y is already defined at 2:3", 2);
  expect_error_at("graph @main(%x: f32[2], %x: f32[2]) -> (%x) {\n  return %x\n}\n", "%x",
                  "already defined at 1:13", 1);
  expect_error_at(wrap("  %a: f32[2] = ABS(%b)\n  %b: f32[2] = ABS(%x)\n  %y: f32[2] = ABS(%a)\n"), "%b",
                  "value %b is used before its definition at 3:3");
  // A cycle is a use before definition.
  expect_error_at(wrap("  %a: f32[2] = ABS(%y)\n  %y: f32[2] = ABS(%a)\n"), "%y)",
                  "value %y is used before its definition at 3:3", 1);
  expect_error_at(wrap("  %y: f32[2] = ADD(%x, %nope)\n"), "%nope", "undefined value %nope");
  expect_error_at(wrap("  %z: f32[2] = ABS(%x)\n"), "%y",
                  "graph output %y of @main is not defined in its body");
  // Names are per graph: %x of @main is not visible in @sub.
  expect_error_at(
      wrap("  %y: f32[2] = ABS(%x)\n") + "graph @sub() -> (%y) {\n  %y: f32[2] = ABS(%x)\n  return %y\n}\n",
      "%x", "undefined value %x", 2);
  expect_error_at(wrap("  %y: f32[2] = ABS(%x)\n") + wrap("  %y: f32[2] = ABS(%x)\n"), "@main",
                  "graph @main is already defined at 1:7", 1);
}

TEST(TextErrors, Returns) {
  expect_error_at("graph @main(%x: f32[2]) -> (%y) {\n  %y: f32[2] = ABS(%x)\n  return %x\n}\n", "%x\n",
                  "return values must match the outputs of @main: expected %y, found %x");
  expect_error_at("graph @main(%x: f32[2]) -> (%y) {\n  %y: f32[2] = ABS(%x)\n  return\n}\n", "return",
                  "lists 0 values, but the graph header lists 1 outputs");
  expect_error_at("graph @main(%x: f32[2]) -> (%y) {\n  %y: f32[2] = ABS(%x)\n  return %y, %x\n}\n", "%x\n",
                  "lists more values than the 1 outputs");
  expect_error_at("graph @main(%x: f32[2]) -> (%y) {\n  %y: f32[2] = ABS(%x)\n  return %y %x\n}\n", "%x\n",
                  "expected '}' after the return values of @main, found '%x'");
}

TEST(TextErrors, OperandCounts) {
  expect_error_at(wrap("  %y: f32[2] = ADD(%x)\n"), "ADD", "ADD takes 2 inputs, found 1");
  expect_error_at(wrap("  %y: f32[2], %z: f32[2] = ABS(%x)\n"), "ABS", "ABS produces 1 output, found 2");
  expect_error_at(wrap("  %y: f32[2] = COND_IF() {then_graph = @main, else_graph = @main}\n"), "COND_IF",
                  "COND_IF takes at least 1 input, found 0");
  expect_error_at(
      wrap(
          "  %y: f32[2] = VARIABLE() {name = \"v\", var_shape = [2], type = FP32, initial_value = [0, 0]}\n"),
      "VARIABLE", "VARIABLE produces 0 outputs, found 1");
}

TEST(TextErrors, TensorValues) {
  const std::string h = "() -> (%y)";
  expect_error_at(wrap("  %y: f32[2,2] = CONST() {values = [1, 2, 3]}\n", h), "[1,",
                  "values of %y: f32[2,2] needs 4 elements, found 3");
  expect_error_at(wrap("  %y = CONST() {values = [1, 2, 3]}\n", h), "%y =", "CONST needs an output type");
  expect_error_at(wrap("  VARIABLE() {name = \"v\", var_shape = [3], type = INT8, initial_value = [1]}\n  "
                       "%y: i8[3] = VARIABLE_READ() {name = \"v\"}\n",
                       h),
                  "[1]", "values of VARIABLE \"v\": i8[3] needs 3 elements, found 1");
  expect_error_at(wrap("  %y: f32[2] = CONST() {values = 1}\n", h), "1}", "takes a list of values or file");
  expect_error_at(wrap("  %y: f32[4611686018427387904,4] = CONST() {values = []}\n", h), "[]",
                  "more than 2^62");
}

TEST(TextErrors, UninferableOutputType) {
  // CUSTOM's outputs cannot be inferred: the error is at the output and says what to write.
  expect_error_at(
      wrap("  %y = CUSTOM(%x) {operator_name = \"op\", domain_name = \"d\", implementation_attrs = \"\"}\n"),
      "%y =", "output type of %y is omitted and cannot be inferred");
  // A sub-graph that refers back to the graph being defined cannot be used for inference.
  expect_error_at(
      "graph @main(%c: bool[], %x: f32[2]) -> (%y) {\n  %y = COND_IF(%c, %x) {then_graph = @a, "
      "else_graph = @a}\n  return %y\n}\ngraph @a(%c: bool[], %x: f32[2]) -> (%z) {\n  %z = COND_IF(%c, "
      "%x) {then_graph = @main, else_graph = @main}\n  return %z\n}\n",
      "%z =", "refers back to the graph being defined");
}

}  // namespace
}  // namespace weft
