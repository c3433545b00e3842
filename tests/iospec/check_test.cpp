// check_against: an IOSpec cross-checked against a module; the first mismatch names the field and
// gives both values.
#include <gtest/gtest.h>

#include "iospec/iospec_helpers.h"
#include "weft/iospec.h"

namespace weft::iospec {
namespace {

using test::add_module;
using test::error_of;
using test::f16;
using test::kAddYaml;
using test::replace_once;

void expect_mismatch(const IoSpec& spec, const Module& m, const std::string& operand, const std::string& message,
                     const Target& target = {}) {
  auto e = error_of([&] { check_against(spec, m, "m.iospec.yaml", target); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), ErrorCode::kVerify) << e->what();
  EXPECT_EQ(e->location().file, "m.iospec.yaml");
  EXPECT_EQ(e->location().operand, operand) << e->what();
  EXPECT_EQ(e->message(), message) << e->what();
}

const IoSpec& add_spec() {
  static const IoSpec s = parse_yaml(kAddYaml, "add.yaml");
  return s;
}

TEST(IospecCheck, MatchingSpecPasses) {
  EXPECT_NO_THROW(check_against(add_spec(), add_module(), "add.yaml"));
  // Quantization, core ids, pcs and sequence names are the spec's own business.
  IoSpec s = add_spec();
  s.inputs[0].quantization = {0.5, 3};
  s.inputs[0].pc = 7;
  s.outputs[0].core_id = 2;
  s.simple_sequences[0].name = "frames";
  EXPECT_NO_THROW(check_against(s, add_module(), "add.yaml"));
}

TEST(IospecCheck, Length) {
  expect_mismatch(add_spec(), add_module({DType::kFp16, {1, 64}}), "inputs.B.length",
                  "length: 60, but the model's input 'B' f16[1,64] has 64 elements");
}

TEST(IospecCheck, Precision) {
  expect_mismatch(add_spec(), add_module({DType::kFp32, {60}}), "inputs.B.precision",
                  "precision: 16, but the model's input 'B' f32[60] has 32-bit elements");
}

TEST(IospecCheck, Padding) {
  IoSpec s = add_spec();
  s.outputs[0].padded_length = 128;
  s.outputs[0].length_64b_words = 32;
  expect_mismatch(s, add_module(), "outputs.A.padded_length",
                  "padded_length: 128, but the target (64-bit words, granules of 4 words = 256 bits) pads 60 16-bit "
                  "elements to 64");
  expect_mismatch(add_spec(), add_module(), "inputs.B.padded_length",
                  "padded_length: 64, but the target (64-bit words, granules of 1 word = 64 bits) pads 60 16-bit "
                  "elements to 60",
                  Target{.granule_words = 1});
  s = add_spec();
  s.inputs[1].length_64b_words = 17;
  expect_mismatch(s, add_module(), "inputs.C.length_64b_words",
                  "length_64b_words: 17, but the target (64-bit words, granules of 4 words = 256 bits) pads 60 16-bit "
                  "elements to 16 64-bit words");
}

TEST(IospecCheck, MissingAndUnknownVariables) {
  GraphBuilder b;
  ValueId B = b.input("B", f16(60));
  ValueId C = b.input("C", f16(60));
  ValueId D = b.input("D", f16(60));
  b.output(b.op(Op::ADD, {b.op(Op::ADD, {B, C}), D}, {}, "A"));
  expect_mismatch(add_spec(), Module(b.finish()), "inputs",
                  "the model's input 'D' f16[60] has no entry (no input with varname 'D')");

  const IoSpec renamed = parse_yaml(replace_once(kAddYaml, "    varname: C\n", "    varname: Z\n"), "r.yaml");
  expect_mismatch(renamed, add_module(), "inputs.C.varname",
                  "varname: 'Z', but the model has no input 'Z' (its inputs: [B, C])");

  GraphBuilder b2;
  ValueId B2 = b2.input("B", f16(60));
  ValueId C2 = b2.input("C", f16(60));
  b2.output(b2.op(Op::ADD, {B2, C2}, {}, "Out"));
  expect_mismatch(add_spec(), Module(b2.finish()), "outputs.A.varname",
                  "varname: 'A', but the model has no output 'A' (its outputs: [Out])");

  GraphBuilder b3;
  ValueId B3 = b3.input("B", f16(60));
  ValueId C3 = b3.input("C", f16(60));
  b3.output(b3.op(Op::ADD, {B3, C3}, {}, "A"));
  b3.output(b3.op(Op::SUB, {B3, C3}, {}, "S"));
  expect_mismatch(add_spec(), Module(b3.finish()), "outputs",
                  "the model's output 'S' f16[60] has no entry (no output with varname 'S')");
}

TEST(IospecCheck, SequenceOrder) {
  const IoSpec s = parse_yaml(replace_once(kAddYaml, "    - B\n    - C\n", "    - C\n    - B\n"), "o.yaml");
  expect_mismatch(s, add_module(), "simple_sequences.main_seq.inputs",
                  "inputs: [C, B], but the model's main_seq needs [B, C] (inputs in the model's order)");
}

TEST(IospecCheck, SequencesTheModelCannotHave) {
  // A depends on B only: C must be latched, but the spec has it in the main sequence.
  GraphBuilder b;
  ValueId B = b.input("B", f16(60));
  b.input("C", f16(60));
  b.output(b.op(Op::IDENTITY, {B}, {}, "A"));
  expect_mismatch(add_spec(), Module(b.finish()), "simple_sequences",
                  "the model's sequences with latched inputs [] cannot be derived: input 'C' is used by no output: "
                  "every input that is not latched must belong to the main sequence; mark it latched (--latched C) "
                  "or remove it");
}

TEST(IospecCheck, LatchedInputs) {
  const IoSpec latched = generate(add_module(), {.latched = {"C"}});
  EXPECT_NO_THROW(check_against(latched, add_module(), "l.yaml"));
  // Latching B instead matches as well: the IOSpec says which inputs are latched.
  EXPECT_NO_THROW(check_against(generate(add_module(), {.latched = {"B"}}), add_module(), "l.yaml"));

  IoSpec s = latched;
  s.inputs[1].latched = false;
  expect_mismatch(s, add_module(), "inputs.C.comments.latched",
                  "latched: false, but 'C' is in a sequence without outputs (a latched sequence)");
  s = latched;
  s.inputs[0].latched = true;
  expect_mismatch(s, add_module(), "inputs.B.comments.latched",
                  "latched: true, but 'B' is in no sequence without outputs");

  // The main sequence comes first.
  s = latched;
  std::swap(s.simple_sequences[0], s.simple_sequences[1]);
  expect_mismatch(s, add_module(), "simple_sequences.latched_seq",
                  "sequence 0 'latched_seq' has no outputs, but the model's sequence 0 is main_seq [B] -> [A] (the "
                  "main sequence first, then one per latched input)");

  // Unlatched, C belongs in the main sequence.
  s = latched;
  s.simple_sequences.pop_back();
  s.simple_sequences[0].inputs.push_back("C");
  s.inputs[1].latched = false;
  EXPECT_NO_THROW(check_against(s, add_module(), "l.yaml"));
  s.simple_sequences[0].inputs = {"B"};
  s.simple_sequences.push_back(Sequence{"latched_seq", {}, {"C"}});
  expect_mismatch(s, add_module(), "inputs.C.comments.latched",
                  "latched: false, but 'C' is in a sequence without outputs (a latched sequence)");
}

TEST(IospecCheck, SequenceCount) {
  IoSpec s = generate(add_module(), {.latched = {"C"}});
  GraphBuilder b;
  ValueId B = b.input("B", f16(60));
  ValueId C = b.input("C", f16(60));
  ValueId D = b.input("D", f16(60));
  b.output(b.op(Op::ADD, {b.op(Op::ADD, {B, C}), D}, {}, "A"));
  Module m(b.finish());
  // The model has D too: the variables differ first.
  expect_mismatch(s, m, "inputs", "the model's input 'D' f16[60] has no entry (no input with varname 'D')");
  // With D latched in its own sequence the spec is complete.
  IoSpec full = generate(m, {.latched = {"C", "D"}});
  EXPECT_NO_THROW(check_against(full, m, "f.yaml"));
  // Two latched inputs in one sequence: not what generate() derives.
  full.simple_sequences[1].inputs.push_back("D");
  full.simple_sequences.pop_back();
  expect_mismatch(full, m, "simple_sequences",
                  "2 sequences, but the model with latched inputs [C, D] has 3: main_seq [B] -> [A], latched_seq_C "
                  "[C] -> [], latched_seq_D [D] -> []");
}

}  // namespace
}  // namespace weft::iospec
