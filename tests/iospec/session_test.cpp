// weft::StreamSession: the IOSpec specification's examples (A = B + C as one sequence; B with a
// latched C and the specification's exact transaction sequence), every sequence violation with its
// message and the session unchanged afterwards, latched inputs starting at zero, padding, and
// quantized inputs written as real values.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "weft/error.h"
#include "weft/graph.h"
#include "weft/iospec.h"
#include "weft/runtime.h"

namespace weft {
namespace {

const BackendOptions kReference{.backends = {"reference"}};

TensorType f32(int64_t n) { return {DType::kFp32, {n}}; }

std::vector<double> fill(size_t n, double v) { return std::vector<double>(n, v); }

// A = B + C over f32[n] (the specification's first example has n = 60).
Module add_module(int64_t n = 60) {
  GraphBuilder b;
  ValueId B = b.input("B", f32(n));
  ValueId C = b.input("C", f32(n));
  b.output(b.op(Op::ADD, {B, C}, {}, "A"));
  return Module(b.finish());
}

// X = B + C, Y = B - C: two outputs, X first.
Module two_output_module(int64_t n = 4) {
  GraphBuilder b;
  ValueId B = b.input("B", f32(n));
  ValueId C = b.input("C", f32(n));
  b.output(b.op(Op::ADD, {B, C}, {}, "X"));
  b.output(b.op(Op::SUB, {B, C}, {}, "Y"));
  return Module(b.finish());
}

// A = (B + D) + C with C latched: a main sequence of two inputs beside a latched one.
Module three_input_module(int64_t n = 4) {
  GraphBuilder b;
  ValueId B = b.input("B", f32(n));
  ValueId C = b.input("C", f32(n));
  ValueId D = b.input("D", f32(n));
  b.output(b.op(Op::ADD, {b.op(Op::ADD, {B, D}), C}, {}, "A"));
  return Module(b.finish());
}

struct Built {
  std::shared_ptr<const Model> model;
  iospec::IoSpec spec;
};

Built make(Module m, std::vector<std::string> latched = {}) {
  iospec::GenerateOptions o;
  o.latched = std::move(latched);
  iospec::IoSpec spec = iospec::generate(m, o);
  return {Model::from_module(std::move(m), kReference), std::move(spec)};
}

// Every element of output `key` equals `v`.
void expect_all(StreamSession& s, const std::string& key, double v) {
  std::vector<double> r = s.read_values(key);
  ASSERT_FALSE(r.empty());
  for (size_t i = 0; i < r.size(); ++i) ASSERT_EQ(r[i], v) << key << "[" << i << "]";
}

// `f` throws Error(code) whose message is exactly `message`.
void expect_error(const std::function<void()>& f, ErrorCode code, const std::string& message) {
  try {
    f();
    ADD_FAILURE() << "no error; expected: " << message;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_EQ(e.message(), message);
  }
}

TEST(StreamSession, SpecExampleOneSequence) {
  Built s = make(add_module());
  ASSERT_EQ(s.spec.simple_sequences.size(), 1u);
  EXPECT_EQ(s.spec.simple_sequences[0].outputs, std::vector<std::string>{"A"});
  EXPECT_EQ(s.spec.simple_sequences[0].inputs, (std::vector<std::string>{"B", "C"}));
  StreamSession session(s.model, s.spec);
  EXPECT_EQ(session.spec(), s.spec);
  EXPECT_EQ(session.expected(), "input 'B' of main_seq");
  for (int round = 1; round <= 3; ++round) {
    session.write_values("B", fill(60, round));
    EXPECT_EQ(session.expected(), "input 'C' of main_seq");
    session.write_values("C", fill(60, 10));
    EXPECT_EQ(session.expected(), "output 'A' of main_seq");
    Tensor a = session.read("A");
    EXPECT_EQ(a.type(), f32(60));
    for (int64_t i = 0; i < 60; ++i) ASSERT_EQ(a.at_double(i), 10 + round);
    EXPECT_EQ(session.expected(), "input 'B' of main_seq");
  }
}

TEST(StreamSession, PaddedInputHoldsTheDataThenZeros) {
  Built s = make(add_module());
  ASSERT_EQ(s.spec.inputs[0].padded_length, 64);
  StreamSession session(s.model, s.spec);
  // Before any write: zeros of the padded length.
  EXPECT_EQ(session.padded_input("B").type(), f32(64));
  for (double v : session.padded_input("C").to_doubles()) EXPECT_EQ(v, 0);
  std::vector<double> b(60);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<double>(i) + 1;
  session.write_values("B", b);
  const Tensor& p = session.padded_input("B");
  ASSERT_EQ(p.num_elements(), 64);
  for (int64_t i = 0; i < 60; ++i) EXPECT_EQ(p.at_double(i), static_cast<double>(i) + 1);
  for (int64_t i = 60; i < 64; ++i) EXPECT_EQ(p.at_double(i), 0) << i;
  // write() with a tensor of the input's type (any shape of `length` elements).
  session.write("C", Tensor::from_doubles(f32(60), fill(60, 0.5)));
  EXPECT_EQ(session.padded_input("C").at_double(59), 0.5);
  EXPECT_EQ(session.padded_input("C").at_double(60), 0);
  std::vector<double> a = session.read_values("A");
  EXPECT_EQ(a[0], 1.5);
  EXPECT_EQ(a[59], 60.5);
}

// The specification's latched example, transaction for transaction.
TEST(StreamSession, SpecLatchedExampleTransactions) {
  Built s = make(add_module(), {"C"});
  ASSERT_EQ(s.spec.simple_sequences.size(), 2u);
  EXPECT_EQ(s.spec.simple_sequences[0].name, "main_seq");
  EXPECT_EQ(s.spec.simple_sequences[0].inputs, std::vector<std::string>{"B"});
  EXPECT_EQ(s.spec.simple_sequences[1].name, "latched_seq");
  EXPECT_EQ(s.spec.simple_sequences[1].inputs, std::vector<std::string>{"C"});
  EXPECT_TRUE(s.spec.simple_sequences[1].outputs.empty());
  StreamSession session(s.model, s.spec);
  EXPECT_EQ(session.expected(), "input 'B' of main_seq (or a latched input)");

  session.write_values("C", fill(60, 1));  // write latched_C = 1
  session.write_values("B", fill(60, 1));  // write B = 1
  expect_all(session, "A", 2);             // read A = 2
  session.write_values("B", fill(60, 2));
  expect_all(session, "A", 3);
  session.write_values("B", fill(60, 3));
  expect_all(session, "A", 4);
  session.write_values("C", fill(60, 2));  // write latched_C = 2
  session.write_values("B", fill(60, 4));
  expect_all(session, "A", 6);
}

// The specification's latched example names the IOSpec entry `latchedC` with varname `C`: both the
// key and the model's name address it.
TEST(StreamSession, KeyOrVarnameAddressesAVariable) {
  Built s = make(add_module(), {"C"});
  s.spec.inputs[1].key = "latchedC";
  s.spec.simple_sequences[1].inputs = {"latchedC"};
  StreamSession session(s.model, s.spec);
  session.write_values("latchedC", fill(60, 1));
  session.write_values("B", fill(60, 1));
  expect_all(session, "A", 2);
  session.write_values("C", fill(60, 2));  // the varname
  session.write_values("B", fill(60, 4));
  expect_all(session, "A", 6);
}

TEST(StreamSession, LatchedInputStartsAtZero) {
  Built s = make(add_module(8), {"C"});
  StreamSession session(s.model, s.spec);
  session.write_values("B", fill(8, 5));
  expect_all(session, "A", 5);
  // A latched value stays until rewritten, and may be rewritten any number of times while idle.
  session.write_values("C", fill(8, 1));
  session.write_values("C", fill(8, 7));
  session.write_values("B", fill(8, 5));
  expect_all(session, "A", 12);
  session.write_values("B", fill(8, 1));
  expect_all(session, "A", 8);
}

TEST(StreamSession, InputTwiceBeforeTheNextInput) {
  Built s = make(add_module(4));
  StreamSession session(s.model, s.spec);
  session.write_values("B", fill(4, 1));
  expect_error([&] { session.write_values("B", fill(4, 100)); }, ErrorCode::kRuntime,
               "sequence error: expected input 'C' (main_seq, input 2 of 2), got 'B'");
  EXPECT_EQ(session.expected(), "input 'C' of main_seq");
  EXPECT_EQ(session.padded_input("B").at_double(0), 1);  // the failed write changed nothing
  session.write_values("C", fill(4, 2));
  expect_all(session, "A", 3);
}

TEST(StreamSession, InputTwiceBeforeTheOutputIsRead) {
  Built s = make(add_module(4));
  StreamSession session(s.model, s.spec);
  session.write_values("B", fill(4, 1));
  session.write_values("C", fill(4, 2));
  expect_error([&] { session.write_values("B", fill(4, 100)); }, ErrorCode::kRuntime,
               "sequence error: input 'B' written again before output 'A' was read");
  expect_error([&] { session.write_values("C", fill(4, 100)); }, ErrorCode::kRuntime,
               "sequence error: input 'C' written again before output 'A' was read");
  EXPECT_EQ(session.expected(), "output 'A' of main_seq");
  expect_all(session, "A", 3);
  session.write_values("B", fill(4, 10));
  session.write_values("C", fill(4, 20));
  expect_all(session, "A", 30);
}

TEST(StreamSession, InputOutOfOrder) {
  Built s = make(add_module(4));
  StreamSession session(s.model, s.spec);
  expect_error([&] { session.write_values("C", fill(4, 2)); }, ErrorCode::kRuntime,
               "sequence error: expected input 'B' (main_seq, input 1 of 2), got 'C'");
  EXPECT_EQ(session.expected(), "input 'B' of main_seq");
  EXPECT_EQ(session.padded_input("C").at_double(0), 0);
  session.write_values("B", fill(4, 1));
  session.write_values("C", fill(4, 2));
  expect_all(session, "A", 3);
}

TEST(StreamSession, ReadBeforeTheOutputExists) {
  Built s = make(add_module(4));
  StreamSession session(s.model, s.spec);
  expect_error([&] { session.read("A"); }, ErrorCode::kRuntime,
               "sequence error: output 'A' is not available: main_seq still needs input 'B'");
  session.write_values("B", fill(4, 1));
  expect_error([&] { session.read_values("A"); }, ErrorCode::kRuntime,
               "sequence error: output 'A' is not available: main_seq still needs input 'C'");
  EXPECT_EQ(session.expected(), "input 'C' of main_seq");
  session.write_values("C", fill(4, 2));
  expect_all(session, "A", 3);
  // Read once: the next read needs a new round.
  expect_error([&] { session.read("A"); }, ErrorCode::kRuntime,
               "sequence error: output 'A' is not available: main_seq still needs input 'B'");
}

TEST(StreamSession, OutputsAreReadInOrder) {
  Built s = make(two_output_module());
  ASSERT_EQ(s.spec.simple_sequences.size(), 1u);
  EXPECT_EQ(s.spec.simple_sequences[0].outputs, (std::vector<std::string>{"X", "Y"}));
  StreamSession session(s.model, s.spec);
  session.write_values("B", fill(4, 5));
  session.write_values("C", fill(4, 2));
  expect_error([&] { session.read("Y"); }, ErrorCode::kRuntime,
               "sequence error: expected output 'X' (main_seq, output 1 of 2), got 'Y'");
  EXPECT_EQ(session.expected(), "output 'X' of main_seq");
  expect_all(session, "X", 7);
  EXPECT_EQ(session.expected(), "output 'Y' of main_seq");
  expect_error([&] { session.read("X"); }, ErrorCode::kRuntime,
               "sequence error: expected output 'Y' (main_seq, output 2 of 2), got 'X'");
  expect_error([&] { session.write_values("B", fill(4, 1)); }, ErrorCode::kRuntime,
               "sequence error: input 'B' written again before output 'Y' was read");
  expect_all(session, "Y", 3);
  EXPECT_EQ(session.expected(), "input 'B' of main_seq");
}

TEST(StreamSession, LatchedWriteOnlyWhileIdle) {
  Built s = make(add_module(4), {"C"});
  StreamSession session(s.model, s.spec);
  session.write_values("C", fill(4, 1));
  session.write_values("B", fill(4, 1));
  expect_error([&] { session.write_values("C", fill(4, 50)); }, ErrorCode::kRuntime,
               "sequence error: latched input 'C' written before output 'A' was read (latched inputs may be "
               "written only while main_seq is idle)");
  EXPECT_EQ(session.padded_input("C").at_double(0), 1);
  expect_all(session, "A", 2);
  session.write_values("C", fill(4, 50));  // idle again
  session.write_values("B", fill(4, 1));
  expect_all(session, "A", 51);
}

TEST(StreamSession, LatchedWriteBetweenMainInputs) {
  Built s = make(three_input_module(), {"C"});
  ASSERT_EQ(s.spec.simple_sequences[0].inputs, (std::vector<std::string>{"B", "D"}));
  StreamSession session(s.model, s.spec);
  session.write_values("B", fill(4, 1));
  expect_error([&] { session.write_values("C", fill(4, 50)); }, ErrorCode::kRuntime,
               "sequence error: expected input 'D' (main_seq, input 2 of 2), got 'C' (latched inputs may be "
               "written only while main_seq is idle)");
  session.write_values("D", fill(4, 1));
  expect_error([&] { session.write_values("D", fill(4, 1)); }, ErrorCode::kRuntime,
               "sequence error: input 'D' written again before output 'A' was read");
  expect_all(session, "A", 2);  // B + D + C(0)
  expect_error([&] { session.write_values("D", fill(4, 1)); }, ErrorCode::kRuntime,
               "sequence error: expected input 'B' (main_seq, input 1 of 2) or a latched input, got 'D'");
  session.write_values("C", fill(4, 10));
  session.write_values("B", fill(4, 1));
  session.write_values("D", fill(4, 2));
  expect_all(session, "A", 13);
}

TEST(StreamSession, WrongLengthOrType) {
  Built s = make(add_module(4));
  StreamSession session(s.model, s.spec);
  session.write_values("B", fill(4, 1));
  expect_error([&] { session.write_values("C", {1, 2}); }, ErrorCode::kInvalidArgument,
               "input 'C' takes 4 values, got 2");
  expect_error([&] { session.write("C", Tensor::from_doubles(f32(5), fill(5, 1))); }, ErrorCode::kInvalidArgument,
               "input 'C' takes 4 elements, got 5 (f32[5])");
  expect_error([&] { session.write("C", Tensor::from_ints({DType::kInt32, {4}}, std::vector<int64_t>{1, 2, 3, 4})); },
               ErrorCode::kInvalidArgument, "input 'C' takes f32 elements, got i32[4]");
  EXPECT_EQ(session.expected(), "input 'C' of main_seq");
  EXPECT_EQ(session.padded_input("C").at_double(0), 0);
  // Any shape of `length` elements.
  session.write("C", Tensor::from_doubles({DType::kFp32, {2, 2}}, fill(4, 2)));
  expect_all(session, "A", 3);
}

TEST(StreamSession, UnknownNames) {
  Built s = make(add_module(4));
  StreamSession session(s.model, s.spec);
  expect_error([&] { session.write_values("Z", fill(4, 1)); }, ErrorCode::kNotFound,
               "the IOSpec has no input named 'Z'; its inputs are: B, C");
  expect_error([&] { session.read("Z"); }, ErrorCode::kNotFound,
               "the IOSpec has no output named 'Z'; its outputs are: A");
  expect_error([&] { session.write_values("A", fill(4, 1)); }, ErrorCode::kInvalidArgument,
               "'A' is an output of the IOSpec, not an input; its inputs are: B, C");
  expect_error([&] { session.read_values("B"); }, ErrorCode::kInvalidArgument,
               "'B' is an input of the IOSpec, not an output; its outputs are: A");
  expect_error([&] { session.padded_input("Z"); }, ErrorCode::kNotFound,
               "the IOSpec has no input named 'Z'; its inputs are: B, C");
  EXPECT_EQ(session.expected(), "input 'B' of main_seq");
  session.write_values("B", fill(4, 1));
  session.write_values("C", fill(4, 1));
  expect_all(session, "A", 2);
}

TEST(StreamSession, FailedRunUndoesTheWrite) {
  // A = B / C in i32: a zero divisor fails INTDIV's REQUIRE while the model runs.
  GraphBuilder b;
  const TensorType i32{DType::kInt32, {2}};
  ValueId B = b.input("B", i32);
  ValueId C = b.input("C", i32);
  b.output(b.op(Op::INTDIV, {B, C}, {}, "A"));
  Built s = make(Module(b.finish()));
  StreamSession session(s.model, s.spec);
  session.write_values("B", {7, 9});
  try {
    session.write_values("C", {0, 3});
    ADD_FAILURE() << "the run did not fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime) << e.what();
    EXPECT_EQ(e.message().find("sequence error"), std::string::npos) << e.what();
  }
  EXPECT_EQ(session.expected(), "input 'C' of main_seq");  // B stays written, C may be retried
  EXPECT_EQ(session.padded_input("C").at_int(0), 0);
  EXPECT_EQ(session.padded_input("C").at_int(1), 0);
  session.write_values("C", {2, 3});
  EXPECT_EQ(session.read_values("A"), (std::vector<double>{3, 3}));
}

TEST(StreamSession, QuantizedInputWrittenAsRealValues) {
  // y = (float(q) - 3) * 0.5 for an int8 q: an input with scale 0.5 and zero point 3.
  GraphBuilder b;
  ValueId q = b.input("q", {DType::kInt8, {5}});
  ValueId f = b.op_multi(Op::CAST, {q}, {}, {"qf"}, {f32(5)})[0];
  ValueId zp = b.constant("zp", Tensor::from_doubles(f32(1), std::vector<double>{3}));
  ValueId scale = b.constant("scale", Tensor::from_doubles(f32(1), std::vector<double>{0.5}));
  ValueId shift = b.constant("shift", Tensor::from_ints({DType::kInt8, {1}}, std::vector<int64_t>{0}));
  b.output(b.op(Op::MUL, {b.op(Op::SUB, {f, zp}), scale, shift}, {}, "y"));
  Built s = make(Module(b.finish()));
  ASSERT_EQ(s.spec.inputs.size(), 1u);
  ASSERT_EQ(s.spec.inputs[0].quantization, (iospec::Quantization{0.5, 3.0}));
  ASSERT_EQ(s.spec.inputs[0].precision, 8);
  ASSERT_EQ(s.spec.inputs[0].padded_length, 32);  // 40 bits -> one 256-bit granule
  StreamSession session(s.model, s.spec);
  // x / 0.5 rounded half to even, + 3, clamped to [-128, 127].
  session.write_values("q", {1.0, 1.25, 1.75, -100, 100});
  const Tensor& p = session.padded_input("q");
  ASSERT_EQ(p.type(), (TensorType{DType::kInt8, {32}}));
  const std::vector<int64_t> want = {5, 5, 7, -128, 127};
  for (int64_t i = 0; i < 32; ++i) EXPECT_EQ(p.at_int(i), i < 5 ? want[static_cast<size_t>(i)] : 0) << i;
  EXPECT_EQ(session.read_values("y"), (std::vector<double>{1, 1, 2, -65.5, 62}));
  // Raw quantized values through write().
  session.write("q", Tensor::from_ints({DType::kInt8, {5}}, std::vector<int64_t>{3, 4, 5, 6, 7}));
  EXPECT_EQ(session.read_values("y"), (std::vector<double>{0, 0.5, 1, 1.5, 2}));
  expect_error([&] { session.write_values("q", {1, 2, 3, 4, std::nan("")}); }, ErrorCode::kInvalidArgument,
               "input 'q': value 4 is NaN, which cannot be quantized to i8");
}

TEST(StreamSession, QuantizedOutputReadAsRealValues) {
  // r = q in int8; the IOSpec gives both a scale of 0.25 and a zero point of -2.
  GraphBuilder b;
  const TensorType i8{DType::kInt8, {3}};
  b.output(b.op(Op::IDENTITY, {b.input("q", i8)}, {}, "r"));
  Built s = make(Module(b.finish()));
  s.spec.inputs[0].quantization = {0.25, -2};
  s.spec.outputs[0].quantization = {0.25, -2};
  StreamSession session(s.model, s.spec);
  session.write_values("q", {1.0, -0.5, 0.125});  // 4 - 2, -2 - 2, 0 (0.5 half to even) - 2
  EXPECT_EQ(session.padded_input("q").to_ints(), (std::vector<int64_t>{2, -4, -2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                                                      0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(session.read_values("r"), (std::vector<double>{1, -0.5, 0}));
  session.write_values("q", {1.0, -0.5, 0.125});
  Tensor raw = session.read("r");  // the quantized values themselves
  EXPECT_EQ(raw.type(), i8);
  EXPECT_EQ(raw.to_ints(), (std::vector<int64_t>{2, -4, -2}));
}

TEST(StreamSession, ExpectedDescribesEveryState) {
  Built s = make(three_input_module(), {"C"});
  StreamSession session(s.model, s.spec);
  EXPECT_EQ(session.expected(), "input 'B' of main_seq (or a latched input)");
  session.write_values("B", fill(4, 1));
  EXPECT_EQ(session.expected(), "input 'D' of main_seq");
  session.write_values("D", fill(4, 1));
  EXPECT_EQ(session.expected(), "output 'A' of main_seq");
  session.read("A");
  EXPECT_EQ(session.expected(), "input 'B' of main_seq (or a latched input)");
}

}  // namespace
}  // namespace weft
