// The strict IOSpec parser: every malformed field is an error with the file, the line, the field path
// as the operand and a message naming the rule and the value.
#include <gtest/gtest.h>

#include "iospec/iospec_helpers.h"
#include "weft/iospec.h"

namespace weft::iospec {
namespace {

using test::error_of;
using test::kAddYaml;
using test::replace_once;

struct Case {
  std::string name;
  std::string text;
  int line;
  std::string operand;
  std::string message;  // a substring of the message
  ErrorCode code = ErrorCode::kVerify;
};

// Edits of the first example (its lines: B at 2, its fields 3..15; C at 17; outputs at 32, A at 33,
// its fields 34..46; simple_sequences at 48, main_seq 49, type 50, outputs 51-52, inputs 53-55;
// complex_sequences 57).
std::string edit(const std::string& from, const std::string& to) { return replace_once(kAddYaml, from, to); }

std::vector<Case> cases() {
  const std::string main_seq_list = "    outputs:\n    - A\n    inputs:\n    - B\n    - C\n";
  return {
      {"padded_length words", edit("    padded_length: 64\n", "    padded_length: 60\n"), 7, "inputs.B.length_64b_words",
       "length_64b_words must be padded_length * precision / 64 = 60 * 16 / 64 = 15, got 16"},
      {"padded below length", edit("    length: 60\n", "    length: 70\n"), 6, "inputs.B.padded_length",
       "padded_length 64 is less than length 70"},
      {"length zero", edit("    length: 60\n", "    length: 0\n"), 5, "inputs.B.length", "length must be >= 1, got 0"},
      {"length float", edit("    length: 60\n", "    length: 60.0\n"), 5, "inputs.B.length",
       "expected a decimal integer, got '60.0' (a number)"},
      {"length quoted", edit("    length: 60\n", "    length: \"60\"\n"), 5, "inputs.B.length",
       "expected an integer, got \"60\""},
      {"length hex", edit("    length: 60\n", "    length: 0x3c\n"), 5, "inputs.B.length",
       "expected a decimal integer, got '0x3c' (an integer)"},
      {"length list", edit("    length: 60\n", "    length: [60]\n"), 5, "inputs.B.length",
       "expected an integer, got a list"},
      {"length null", edit("    length: 60\n", "    length:\n"), 5, "inputs.B.length", "missing value: expected an integer"},
      {"length huge", edit("    length: 60\n", "    length: 99999999999999999999\n"), 5, "inputs.B.length",
       "integer out of range: 99999999999999999999"},
      {"precision 12", edit("    precision: 16\n", "    precision: 12\n"), 8, "inputs.B.precision",
       "precision must be one of 1, 2, 4, 8, 16, 32, 64 (bits per element, a whole number of elements per 64-bit "
       "word), got 12"},
      {"precision 48", edit("    precision: 16\n", "    precision: 48\n"), 8, "inputs.B.precision", "got 48"},
      {"padded not whole words", edit("    padded_length: 64\n", "    padded_length: 63\n"), 6, "inputs.B.padded_length",
       "padded_length 63 of 16-bit elements is 1008 bits, not a whole number of 64-bit words"},
      {"scale zero", edit("      scale: 1.0\n", "      scale: 0.0\n"), 10, "inputs.B.quantization.scale",
       "scale must be a finite number > 0, got 0.0"},
      {"scale negative", edit("      scale: 1.0\n", "      scale: -0.5\n"), 10, "inputs.B.quantization.scale",
       "scale must be a finite number > 0, got -0.5"},
      {"scale inf", edit("      scale: 1.0\n", "      scale: .inf\n"), 10, "inputs.B.quantization.scale",
       "scale must be a finite number > 0, got .inf"},
      {"scale text", edit("      scale: 1.0\n", "      scale: one\n"), 10, "inputs.B.quantization.scale",
       "expected a number, got 'one'"},
      {"zero_pt nan", edit("      zero_pt: 0.0\n", "      zero_pt: .nan\n"), 11, "inputs.B.quantization.zero_pt",
       "zero_pt must be finite, got .nan"},
      {"quantization extra", edit("      zero_pt: 0.0\n", "      zero_pt: 0.0\n      axis: 1\n"), 12,
       "inputs.B.quantization.axis", "unknown key 'axis' in quantization (expected: scale, zero_pt)"},
      {"quantization missing scale", edit("      scale: 1.0\n", ""), 9, "inputs.B.quantization.scale",
       "missing key 'scale'"},
      {"quantization not a map", edit("    quantization:\n      scale: 1.0\n      zero_pt: 0.0\n", "    quantization: 1.0\n"),
       9, "inputs.B.quantization", "expected quantization (a mapping), got '1.0'"},
      {"core_id negative", edit("    core_id: 0\n", "    core_id: -1\n"), 12, "inputs.B.core_id",
       "core_id must be >= 0, got -1"},
      {"pc negative", edit("    pc: 0\n", "    pc: -1\n"), 13, "inputs.B.pc", "pc must be >= 0, got -1"},
      {"mailbox_id negative", edit("    mailbox_id: 0\n", "    mailbox_id: -2\n"), 44, "outputs.A.mailbox_id",
       "mailbox_id must be >= 0, got -2"},
      {"type output under inputs", edit("    type: input\n", "    type: output\n"), 3, "inputs.B.type",
       "type: output, but 'B' is under inputs (type: input expected)"},
      {"type input under outputs", edit("    type: output\n", "    type: input\n"), 34, "outputs.A.type",
       "type: input, but 'A' is under outputs (type: output expected)"},
      {"type unknown", edit("    type: input\n", "    type: tensor\n"), 3, "inputs.B.type",
       "type must be input or output, got 'tensor'"},
      {"varname empty", edit("    varname: B\n", "    varname: \"\"\n"), 4, "inputs.B.varname",
       "varname must be a non-empty string"},
      {"varname null", edit("    varname: B\n", "    varname:\n"), 4, "inputs.B.varname",
       "varname must be a non-empty string, got nothing"},
      {"varname number", edit("    varname: B\n", "    varname: 12\n"), 4, "inputs.B.varname",
       "varname must be a string, but '12' reads as an integer in YAML; quote it: \"12\""},
      {"varname bool", edit("    varname: B\n", "    varname: true\n"), 4, "inputs.B.varname",
       "varname must be a string, but 'true' reads as a boolean in YAML; quote it: \"true\""},
      {"varname map", edit("    varname: B\n", "    varname: {name: B}\n"), 4, "inputs.B.varname",
       "varname must be a string, got a mapping"},
      {"latched not bool", edit("      latched: false\n", "      latched: maybe\n"), 15, "inputs.B.comments.latched",
       "expected true or false, got 'maybe'"},
      {"comments extra", edit("      latched: false\n", "      latched: false\n      note: hi\n"), 16,
       "inputs.B.comments.note", "unknown key 'note' in comments (expected: latched)"},
      {"comments missing", edit("    comments:\n      latched: false\n", ""), 2, "inputs.B.comments",
       "missing key 'comments'"},
      {"unknown field", edit("    type: input\n", "    type: input\n    color: red\n"), 4, "inputs.B.color",
       "unknown key 'color' in an input (expected: type, varname, length, padded_length, length_64b_words, "
       "precision, quantization, core_id, pc, comments)"},
      {"missing field", edit("    precision: 16\n", ""), 2, "inputs.B.precision", "missing key 'precision'"},
      {"duplicate field", edit("    length: 60\n", "    length: 60\n    length: 60\n"), 6, "inputs.B.length",
       "duplicate key 'length' in an input (first at line 5)"},
      {"pc in outputs", edit("    mailbox_id: 0\n", "    pc: 0\n"), 44, "outputs.A.pc",
       "pc is the inputs' field; outputs use mailbox_id"},
      {"mailbox_id in inputs", edit("    pc: 0\n", "    mailbox_id: 0\n"), 13, "inputs.B.mailbox_id",
       "mailbox_id is the outputs' field; inputs use pc"},
      {"output latched", edit("    mailbox_id: 0\n    comments:\n      latched: false\n",
                              "    mailbox_id: 0\n    comments:\n      latched: true\n"),
       46, "outputs.A.comments.latched", "latched: true, but only inputs can be latched"},
      {"output key equals input key", replace_once(edit("  A:\n", "  B:\n"), "    - A\n", "    - B\n"), 33, "outputs.B",
       "key 'B' is also an input's (line 2); keys must be unique across inputs and outputs"},
      {"duplicate input key", edit("  C:\n", "  B:\n"), 17, "inputs.B", "duplicate key 'B' in the inputs (first at line 2)"},
      {"duplicate varname", edit("    varname: C\n", "    varname: B\n"), 19, "inputs.C.varname",
       "varname 'B' is also the varname of inputs.B"},
      {"numeric key", replace_once(edit("  B:\n", "  12:\n"), "    - B\n", "    - \"12\"\n"), 2, "inputs.12",
       "a key must be a string, but '12' reads as an integer in YAML; quote it: \"12\""},
      {"inputs not a map", "inputs: []\n" + std::string(kAddYaml).substr(std::string(kAddYaml).find("outputs:")), 1,
       "inputs", "expected the inputs (a mapping), got a list"},
      {"sequence type", edit("    type: simple_sequence\n", "    type: complex_sequence\n"), 50,
       "simple_sequences.main_seq.type", "type must be simple_sequence, got 'complex_sequence'"},
      {"sequence type missing", edit("    type: simple_sequence\n", ""), 49, "simple_sequences.main_seq.type",
       "missing key 'type'"},
      {"sequence unknown key", edit("    type: simple_sequence\n", "    type: simple_sequence\n    id: 0\n"), 51,
       "simple_sequences.main_seq.id",
       "unknown key 'id' in a simple sequence (expected: type, outputs, inputs)"},
      {"sequence unknown input", edit("    - C\n", "    - D\n"), 55, "simple_sequences.main_seq.inputs",
       "no input named 'D'"},
      {"sequence output is an input", edit("    - A\n", "    - B\n"), 52, "simple_sequences.main_seq.outputs",
       "'B' is an input; outputs lists output keys"},
      {"sequence input is an output", edit("    - C\n", "    - A\n"), 55, "simple_sequences.main_seq.inputs",
       "'A' is an output; inputs lists input keys"},
      {"sequence duplicate input", edit("    - C\n", "    - B\n"), 55, "simple_sequences.main_seq.inputs",
       "'B' is already in this sequence; every input and output is in exactly one sequence"},
      {"sequence outputs not a list", edit("    outputs:\n    - A\n", "    outputs: A\n"), 51,
       "simple_sequences.main_seq.outputs", "expected a list of output keys ([] for none), got 'A'"},
      {"input in no sequence", edit("    - C\n", ""), 17, "inputs.C",
       "input 'C' is in no sequence; every input and output is in exactly one sequence"},
      {"output in no sequence", edit("    outputs:\n    - A\n", "    outputs: []\n"), 33, "outputs.A",
       "output 'A' is in no sequence"},
      {"sequence without inputs", edit("    inputs:\n    - B\n    - C\n", "    inputs: []\n"), 53,
       "simple_sequences.main_seq.inputs", "a sequence needs at least one input"},
      {"latched input in the main sequence", edit("      latched: false\n", "      latched: true\n"), 2,
       "inputs.B.comments.latched",
       "latched: true, but 'B' is in sequence 'main_seq', which has outputs; a latched input belongs to a sequence "
       "without outputs"},
      {"unlatched input in a latched sequence",
       edit(main_seq_list, "    outputs:\n    - A\n    inputs:\n    - B\n\n  other_seq:\n    type: simple_sequence\n"
                           "    outputs: []\n    inputs:\n    - C\n"),
       17, "inputs.C.comments.latched",
       "latched: false, but 'C' is in sequence 'other_seq', which has no outputs (a latched sequence); set latched: "
       "true"},
      {"input in two sequences",
       edit(main_seq_list, main_seq_list + "\n  again:\n    type: simple_sequence\n    outputs: []\n    inputs:\n    - C\n"),
       61, "simple_sequences.again.inputs", "'C' is already in sequence 'main_seq'"},
      {"duplicate sequence name",
       edit(main_seq_list, main_seq_list + "\n  main_seq:\n    type: simple_sequence\n    outputs: []\n    inputs: []\n"),
       57, "simple_sequences.main_seq", "duplicate key 'main_seq' in the simple sequences (first at line 49)"},
      {"complex sequences", edit("complex_sequences: {}\n", "complex_sequences:\n  c1: {}\n"), 58,
       "complex_sequences.c1", "complex sequences are not supported; complex_sequences must be {}"},
      {"complex sequences null", edit("complex_sequences: {}\n", "complex_sequences:\n"), 57, "complex_sequences",
       "complex_sequences must be {} (complex sequences are not supported), got nothing"},
      {"missing section", edit("complex_sequences: {}\n", ""), 1, "complex_sequences", "missing key 'complex_sequences'"},
      {"unknown section", std::string(kAddYaml) + "version: 2\n", 58, "version",
       "unknown key 'version' in an IOSpec (expected: inputs, outputs, simple_sequences, complex_sequences)"},
      {"not a mapping", "- inputs\n", 1, "", "expected an IOSpec (a mapping), got a list"},
      {"empty", "# nothing\n", 1, "", "empty IOSpec"},
      {"syntax", edit("    length: 60\n", "    length: [60\n"), 6, "", "YAML syntax", ErrorCode::kParse},
      {"two documents", std::string(kAddYaml) + "---\ninputs: {}\n", 59, "", "expected one YAML document, got 2",
       ErrorCode::kParse},
      {"tag", edit("    length: 60\n", "    length: !!str 60\n"), 5, "inputs.B.length", "YAML tags are not supported"},
  };
}

TEST(IospecParse, MalformedFields) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    auto e = error_of([&] { parse_yaml(c.text, "m.iospec.yaml"); });
    ASSERT_TRUE(e) << c.text;
    EXPECT_EQ(e->code(), c.code) << e->what();
    EXPECT_EQ(e->location().file, "m.iospec.yaml");
    EXPECT_EQ(e->location().line, c.line) << e->what();
    EXPECT_EQ(e->location().operand, c.operand) << e->what();
    EXPECT_NE(e->message().find(c.message), std::string::npos) << e->what();
  }
}

TEST(IospecParse, WhatNamesFileLineAndField) {
  auto e = error_of([] { parse_yaml(edit("    padded_length: 64\n", "    padded_length: 50\n"), "m.iospec.yaml"); });
  ASSERT_TRUE(e);
  EXPECT_EQ(std::string(e->what()),
            "m.iospec.yaml:6: operand 'inputs.B.padded_length': padded_length 50 is less than length 60 [verify]");
}

TEST(IospecParse, OnlyOneSequenceWithOutputs) {
  // Two outputs, each in its own sequence.
  GraphBuilder b;
  ValueId B = b.input("B", test::f16(4));
  b.output(b.op(Op::IDENTITY, {B}, {}, "X"));
  b.output(b.op(Op::NEGATE, {B, b.constant("z1", Tensor::zeros({DType::kFp16, {1}})),
                             b.constant("z2", Tensor::zeros({DType::kFp16, {1}}))},
                {}, "Z"));
  const std::string yaml = to_yaml(generate(Module(b.finish())));
  const std::string text =
      replace_once(yaml, "    outputs:\n    - X\n    - Z\n    inputs:\n    - B\n",
                   "    outputs:\n    - X\n    inputs:\n    - B\n\n  second:\n    type: simple_sequence\n"
                   "    outputs:\n    - Z\n    inputs: []\n");
  auto e = error_of([&] { parse_yaml(text, "two.yaml"); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->location().operand, "simple_sequences.second.inputs");  // no inputs comes first
  // With an input of its own it is a second main sequence.
  IoSpec split = generate(test::add_module());
  Variable z = split.outputs[0];
  z.key = z.varname = "Z";
  z.pc = 1;
  split.outputs.push_back(z);
  split.simple_sequences = {Sequence{"main_seq", {"A"}, {"B"}}, Sequence{"latched_seq", {"Z"}, {"C"}}};
  const std::string y2 = to_yaml(split);
  e = error_of([&] { parse_yaml(y2, "two.yaml"); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->location().operand, "simple_sequences.latched_seq.outputs");
  EXPECT_NE(e->message().find("only one sequence with outputs is supported ('main_seq' has outputs already)"),
            std::string::npos)
      << e->what();
}

TEST(IospecParse, FlowStyleAndCommentsAccepted) {
  std::string text = kAddYaml;
  text = replace_once(text, "    quantization:\n      scale: 1.0\n      zero_pt: 0.0\n",
                      "    quantization: {scale: 1, zero_pt: 0}   # flow style\n");
  text = replace_once(text, "    outputs:\n    - A\n    inputs:\n    - B\n    - C\n",
                      "    outputs: [A]\n    inputs: [B, C]\n");
  EXPECT_EQ(parse_yaml(text, "flow.yaml"), parse_yaml(kAddYaml, "add.yaml"));
}

// Fuzzing regression (fuzz/iospec_fuzz.cpp): the scalar patterns were std::regex matches, which
// recurse once per character and overflowed the stack on long scalars; they are matched by hand.
TEST(IospecParse, LongScalarsDoNotOverflowTheStack) {
  const std::string digits(200000, '6');
  std::optional<Error> e = error_of([&] { parse_yaml(edit("    length: 60\n", "    length: " + digits + "\n"), "l.yaml"); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->location().operand, "inputs.B.length");
  EXPECT_NE(e->message().find("integer out of range"), std::string::npos) << e->message().substr(0, 200);

  e = error_of([&] { parse_yaml(edit("    varname: B\n", "    varname: " + digits + "\n"), "v.yaml"); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->location().operand, "inputs.B.varname");
  EXPECT_NE(e->message().find("reads as an integer in YAML; quote it"), std::string::npos) << e->message().substr(0, 200);

  const std::string scale = "1." + std::string(200000, '0');
  IoSpec s = parse_yaml(edit("      scale: 1.0\n", "      scale: " + scale + "\n"), "s.yaml");
  EXPECT_EQ(s.inputs[0].quantization.scale, 1.0);

  // A long name writes plain and reads back (the writer's pattern too).
  const std::string name = "v" + std::string(200000, 'x');
  s = parse_yaml(edit("    varname: B\n", "    varname: " + name + "\n"), "n.yaml");
  EXPECT_EQ(s.inputs[0].varname, name);
  const std::string again = to_yaml(s);
  EXPECT_NE(again.find("    varname: " + name + "\n"), std::string::npos);
  EXPECT_EQ(parse_yaml(again, "n2.yaml"), s);
}

// Fuzzing regression (fuzz/iospec_fuzz.cpp): a token that starts no value (a ',' outside a flow
// collection) made yaml-cpp's LoadAll() report empty documents forever without consuming it,
// allocating until memory ran out (jbeder/yaml-cpp#1040); it is a syntax error at its line.
TEST(IospecParse, StrayFlowIndicatorIsASyntaxError) {
  for (const std::string& text : {std::string(","), std::string(",null_b|iranule_:"), std::string("\n\n  ,\n"),
                                   std::string(kAddYaml) + "---\n,\n"}) {
    std::optional<Error> e = error_of([&] { parse_yaml(text, "stray.yaml"); });
    ASSERT_TRUE(e) << text;
    EXPECT_EQ(e->code(), ErrorCode::kParse) << e->what();
    EXPECT_NE(e->message().find("YAML syntax: unexpected ','"), std::string::npos) << e->what();
    EXPECT_EQ(e->location().file, "stray.yaml");
  }
  std::optional<Error> e = error_of([&] { parse_yaml("\n\n  ,\n", "stray.yaml"); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->location().line, 3);
  EXPECT_EQ(e->message(), "YAML syntax: unexpected ',' at column 3, where no value can start");
  e = error_of([] { parse_target(",", "target.yaml"); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), ErrorCode::kParse);
  // Several documents are still counted, and the second one's line named.
  e = error_of([] { parse_yaml("a: 1\n---\nb: 2\n---\n", "docs.yaml"); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message(), "expected one YAML document, got 3");
  EXPECT_EQ(e->location().line, 3);
}

}  // namespace
}  // namespace weft::iospec
