// IOSpec generation (variables, padding, sequences, latched inputs), the YAML writer and round trips,
// and the specification's two examples.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/temp_dir.h"
#include "iospec/iospec_helpers.h"
#include "weft/iospec.h"

namespace weft::iospec {
namespace {

using test::add_module;
using test::error_of;
using test::f16;
using test::kAddYaml;

// The specification's second example, as written there but with every field filled in: the key
// latchedC differs from the varname C, and the list items are indented under their keys.
const char* const kLatchedSpecYaml = R"(inputs:
  B:
    type: input
    varname: B
    length: 60
    padded_length: 64
    length_64b_words: 16
    precision: 16
    quantization:
      scale: 1.0
      zero_pt: 0.0
    core_id: 0           # what core this variable is received on
    pc: 0
    comments:            # misc information
      latched: false

  latchedC:
    type: input
    varname: C
    length: 60
    padded_length: 64
    length_64b_words: 16
    precision: 16
    quantization:
      scale: 1.0
      zero_pt: 0.0
    core_id: 0
    pc: 1
    comments:
      latched: true      # useful hint, but redundant with the sequence info

outputs:
  A:
    type: output
    varname: A
    length: 60
    padded_length: 64
    length_64b_words: 16
    precision: 16
    quantization:
      scale: 1.0
      zero_pt: 0.0
    core_id: 0
    mailbox_id: 0
    comments:
      latched: false

simple_sequences:
  main_seq: # sequence id 0 in SPU library FW
    # when B (and only B) is provided, A will be output
    type: simple_sequence
    outputs:
      - A
    inputs:
      - B # no entry for latchedC!

  latched_seq: # sequence id 1 in SPU library FW
    type: simple_sequence
    # the latched input sequence for latchedC (no output)
    outputs: []
    inputs:
    - latchedC

complex_sequences: {}
)";

// ---- The specification's examples ------------------------------------------------------------------

TEST(IospecGenerate, SpecificationFirstExampleExactly) {
  const IoSpec s = generate(add_module());
  ASSERT_EQ(s.inputs.size(), 2u);
  ASSERT_EQ(s.outputs.size(), 1u);
  const Variable& B = s.inputs[0];
  EXPECT_EQ(B.key, "B");
  EXPECT_TRUE(B.input);
  EXPECT_EQ(B.varname, "B");
  EXPECT_EQ(B.length, 60);
  EXPECT_EQ(B.padded_length, 64);
  EXPECT_EQ(B.length_64b_words, 16);
  EXPECT_EQ(B.precision, 16);
  EXPECT_EQ(B.quantization, (Quantization{1.0, 0.0}));
  EXPECT_EQ(B.core_id, 0);
  EXPECT_EQ(B.pc, 0);
  EXPECT_FALSE(B.latched);
  EXPECT_EQ(s.inputs[1].key, "C");
  EXPECT_EQ(s.inputs[1].pc, 1);
  EXPECT_EQ(s.outputs[0].key, "A");
  EXPECT_FALSE(s.outputs[0].input);
  EXPECT_EQ(s.outputs[0].pc, 0);
  ASSERT_EQ(s.simple_sequences.size(), 1u);
  EXPECT_EQ(s.simple_sequences[0], (Sequence{"main_seq", {"A"}, {"B", "C"}}));

  EXPECT_EQ(to_yaml(s), kAddYaml);
  EXPECT_EQ(parse_yaml(kAddYaml, "add.yaml"), s);
  EXPECT_NO_THROW(check_against(s, add_module(), "add.yaml"));
}

TEST(IospecGenerate, SpecificationLatchedExample) {
  const IoSpec s = generate(add_module(), {.latched = {"C"}});
  ASSERT_EQ(s.simple_sequences.size(), 2u);
  EXPECT_EQ(s.simple_sequences[0], (Sequence{"main_seq", {"A"}, {"B"}}));
  EXPECT_EQ(s.simple_sequences[1], (Sequence{"latched_seq", {}, {"C"}}));
  EXPECT_FALSE(s.find_input("B")->latched);
  EXPECT_TRUE(s.find_input("C")->latched);
  const std::string yaml = to_yaml(s);
  EXPECT_NE(yaml.find("  latched_seq:\n    type: simple_sequence\n    outputs: []\n    inputs:\n    - C\n"),
            std::string::npos)
      << yaml;
  EXPECT_EQ(parse_yaml(yaml, "s.yaml"), s);

  // The specification's own text (key latchedC, varname C) parses, re-writes and matches the model.
  const IoSpec spec = parse_yaml(kLatchedSpecYaml, "latched.yaml");
  ASSERT_EQ(spec.inputs.size(), 2u);
  EXPECT_EQ(spec.inputs[1].key, "latchedC");
  EXPECT_EQ(spec.inputs[1].varname, "C");
  EXPECT_TRUE(spec.inputs[1].latched);
  EXPECT_EQ(spec.simple_sequences[0], (Sequence{"main_seq", {"A"}, {"B"}}));
  EXPECT_EQ(spec.simple_sequences[1], (Sequence{"latched_seq", {}, {"latchedC"}}));
  EXPECT_EQ(spec.find_input("latchedC"), &spec.inputs[1]);
  EXPECT_EQ(spec.find_input("C"), nullptr);
  EXPECT_EQ(spec.find_output("A"), &spec.outputs[0]);
  const std::string rewritten = to_yaml(spec);
  EXPECT_EQ(parse_yaml(rewritten, "rewritten.yaml"), spec);
  EXPECT_EQ(to_yaml(parse_yaml(rewritten, "rewritten.yaml")), rewritten);
  EXPECT_NO_THROW(check_against(spec, add_module(), "latched.yaml"));
}

TEST(IospecGenerate, SpecificationFirstExampleFromItsText) {
  // The first example parses as written by hand in any key order, and re-writes to Weft's layout.
  std::string text = kAddYaml;
  text = test::replace_once(text, "    type: input\n    varname: B\n", "    varname: B   # the name\n    type: input\n");
  const IoSpec s = parse_yaml(text, "hand.yaml");
  EXPECT_EQ(to_yaml(s), kAddYaml);
}

// ---- Padding and precision ---------------------------------------------------------------------------

Module identity_module(TensorType t) {
  GraphBuilder b;
  ValueId x = b.input("x", t);
  b.output(b.op(Op::IDENTITY, {x}, {}, "y"));
  return Module(b.finish());
}

TEST(IospecGenerate, PrecisionPerElementType) {
  struct Case {
    DType t;
    int precision;
    int64_t padded;  // of 60 elements, 256-bit granules
    int64_t words;
  };
  for (const Case& c : {Case{DType::kBool, 8, 64, 8}, Case{DType::kInt4, 4, 64, 4}, Case{DType::kInt8, 8, 64, 8},
                        Case{DType::kFp8E4M3, 8, 64, 8}, Case{DType::kInt16, 16, 64, 16},
                        Case{DType::kBf16, 16, 64, 16}, Case{DType::kFp16, 16, 64, 16}, Case{DType::kInt32, 32, 64, 32},
                        Case{DType::kFp32, 32, 64, 32}}) {
    SCOPED_TRACE(dtype_name(c.t));
    const IoSpec s = generate(identity_module({c.t, {6, 10}}));
    EXPECT_EQ(s.inputs[0].length, 60);
    EXPECT_EQ(s.inputs[0].precision, c.precision);
    EXPECT_EQ(s.inputs[0].padded_length, c.padded);
    EXPECT_EQ(s.inputs[0].length_64b_words, c.words);
    EXPECT_EQ(s.outputs[0].precision, c.precision);
  }
  // 61 fp32 elements: 1952 bits -> 2048 bits = 64 elements, 32 words.
  const IoSpec s = generate(identity_module({DType::kFp32, {61}}));
  EXPECT_EQ(s.inputs[0].padded_length, 64);
  EXPECT_EQ(s.inputs[0].length_64b_words, 32);
  // Exactly a granule: no padding.
  EXPECT_EQ(generate(identity_module({DType::kInt8, {32}})).inputs[0].padded_length, 32);
  EXPECT_EQ(generate(identity_module({DType::kInt8, {33}})).inputs[0].padded_length, 64);
}

TEST(IospecGenerate, TypesWithoutPrecision) {
  auto e = error_of([] { generate(identity_module({DType::kInt48, {4}})); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), ErrorCode::kUnsupported);
  EXPECT_NE(e->message().find("input 'x' has type i48[4], which has no IOSpec precision"), std::string::npos)
      << e->what();
}

TEST(IospecGenerate, NonDefaultTarget) {
  // Granules of one 64-bit word: 60 16-bit elements are 960 bits = 15 words, no padding.
  Target t{.word_bits = 64, .granule_words = 1, .core_id = 3};
  const IoSpec s = generate(add_module(), {.target = t});
  EXPECT_EQ(s.inputs[0].padded_length, 60);
  EXPECT_EQ(s.inputs[0].length_64b_words, 15);
  EXPECT_EQ(s.inputs[0].core_id, 3);
  EXPECT_EQ(s.outputs[0].core_id, 3);
  EXPECT_NO_THROW(check_against(s, add_module(), "s.yaml", t));
  // ... which the default target does not accept.
  auto e = error_of([&] { check_against(s, add_module(), "s.yaml"); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->location().operand, "inputs.B.padded_length");

  // 512-bit granules: 60 16-bit elements -> 1024 bits = 64 elements.
  const IoSpec big = generate(add_module(), {.target = {.word_bits = 128, .granule_words = 4}});
  EXPECT_EQ(big.inputs[0].padded_length, 64);
  const IoSpec big2 = generate(add_module(f16(70)), {.target = {.word_bits = 128, .granule_words = 4}});
  EXPECT_EQ(big2.inputs[0].padded_length, 96);
  EXPECT_EQ(big2.inputs[0].length_64b_words, 24);

  // 32-bit granules: 3 16-bit elements pad to 4 (one 64-bit word); 5 pad to 6 = 96 bits, which is
  // not a whole number of 64-bit words.
  const Target narrow{.word_bits = 32, .granule_words = 1};
  EXPECT_EQ(generate(add_module(f16(3)), {.target = narrow}).inputs[0].padded_length, 4);
  auto e2 = error_of([&] { generate(add_module(f16(5)), {.target = narrow}); });
  ASSERT_TRUE(e2);
  EXPECT_EQ(e2->code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(e2->message().find("input 'B' f16[5] cannot be padded by the target (32-bit words, granules of 1 word "
                               "= 32 bits): 5 16-bit elements pad to 96 bits"),
            std::string::npos)
      << e2->what();
}

// ---- Sequences -------------------------------------------------------------------------------------------

TEST(IospecGenerate, OutputsSharingTheirInputsFormOneSequence) {
  GraphBuilder b;
  ValueId B = b.input("B", f16(8));
  ValueId C = b.input("C", f16(8));
  ValueId shift = b.constant("shift", Tensor::from_ints({DType::kInt8, {1}}, std::vector<int64_t>{0}));
  ValueId X = b.op(Op::ADD, {B, C}, {}, "X");
  ValueId Y = b.op(Op::MUL, {C, b.op(Op::NEGATE, {B, b.constant("zp", Tensor::zeros({DType::kFp16, {1}})),
                                                  b.constant("zp2", Tensor::zeros({DType::kFp16, {1}}))}),
                             shift},
                   {}, "Y");
  b.output(Y);
  b.output(X);
  const IoSpec s = generate(Module(b.finish()));
  ASSERT_EQ(s.simple_sequences.size(), 1u);
  // Outputs in the model's output order, inputs in its input order.
  EXPECT_EQ(s.simple_sequences[0], (Sequence{"main_seq", {"Y", "X"}, {"B", "C"}}));
  EXPECT_EQ(s.outputs[0].pc, 0);
  EXPECT_EQ(s.outputs[1].pc, 1);
}

Module two_outputs_module() {
  // X = B + C, Y = C * C
  GraphBuilder b;
  ValueId B = b.input("B", f16(8));
  ValueId C = b.input("C", f16(8));
  ValueId shift = b.constant("shift", Tensor::from_ints({DType::kInt8, {1}}, std::vector<int64_t>{0}));
  b.output(b.op(Op::ADD, {B, C}, {}, "X"));
  b.output(b.op(Op::MUL, {C, C, shift}, {}, "Y"));
  return Module(b.finish());
}

TEST(IospecGenerate, OutputsWithDifferentInputsConflict) {
  auto e = error_of([] { generate(two_outputs_module()); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), ErrorCode::kUnsupported);
  EXPECT_EQ(e->message(),
            "outputs depend on different inputs, and only one sequence (plus latched inputs) is supported: 'X' needs "
            "[B, C], 'Y' needs [C]; mark inputs latched (--latched) or split the model");
  // Latching B makes both need [C].
  const IoSpec s = generate(two_outputs_module(), {.latched = {"B"}});
  EXPECT_EQ(s.simple_sequences[0], (Sequence{"main_seq", {"X", "Y"}, {"C"}}));
  EXPECT_EQ(s.simple_sequences[1], (Sequence{"latched_seq", {}, {"B"}}));
}

TEST(IospecGenerate, OutputOfLatchedInputsOnly) {
  auto e = error_of([] { generate(two_outputs_module(), {.latched = {"C"}}); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), ErrorCode::kUnsupported);
  EXPECT_EQ(e->location().operand, "Y");
  EXPECT_NE(e->message().find("output 'Y' depends only on latched inputs [C]: it would belong to no sequence"),
            std::string::npos)
      << e->what();
}

TEST(IospecGenerate, ConstantOutput) {
  GraphBuilder b;
  ValueId B = b.input("B", f16(4));
  b.output(b.op(Op::IDENTITY, {B}, {}, "A"));
  b.output(b.constant("K", Tensor::zeros(f16(4))));
  auto e = error_of([&] { generate(Module(b.finish())); });
  ASSERT_TRUE(e);
  EXPECT_NE(e->message().find("output 'K' depends on no input (a constant)"), std::string::npos) << e->what();
}

TEST(IospecGenerate, UnusedInput) {
  GraphBuilder b;
  ValueId B = b.input("B", f16(4));
  ValueId C = b.input("C", f16(4));
  b.input("D", f16(4));
  b.output(b.op(Op::ADD, {B, C}, {}, "A"));
  Module m(b.finish());
  auto e = error_of([&] { generate(m); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), ErrorCode::kUnsupported);
  EXPECT_EQ(e->location().operand, "D");
  EXPECT_NE(e->message().find("input 'D' is used by no output: every input that is not latched must belong to the "
                              "main sequence; mark it latched (--latched D) or remove it"),
            std::string::npos)
      << e->what();
  // A latched input nothing reads is allowed: it has its own sequence.
  const IoSpec s = generate(m, {.latched = {"D"}});
  EXPECT_EQ(s.simple_sequences[1], (Sequence{"latched_seq", {}, {"D"}}));
}

TEST(IospecGenerate, SeveralLatchedInputsInTheGivenOrder) {
  GraphBuilder b;
  ValueId B = b.input("B", f16(4));
  ValueId C = b.input("C", f16(4));
  ValueId D = b.input("D", f16(4));
  b.output(b.op(Op::ADD, {b.op(Op::ADD, {B, C}), D}, {}, "A"));
  Module m(b.finish());
  const IoSpec s = generate(m, {.latched = {"D", "C"}});
  ASSERT_EQ(s.simple_sequences.size(), 3u);
  EXPECT_EQ(s.simple_sequences[0], (Sequence{"main_seq", {"A"}, {"B"}}));
  EXPECT_EQ(s.simple_sequences[1], (Sequence{"latched_seq_D", {}, {"D"}}));
  EXPECT_EQ(s.simple_sequences[2], (Sequence{"latched_seq_C", {}, {"C"}}));
  EXPECT_EQ(parse_yaml(to_yaml(s), "s.yaml"), s);
  EXPECT_NO_THROW(check_against(s, m, "s.yaml"));
}

TEST(IospecGenerate, BadLatchedNames) {
  auto e = error_of([] { generate(add_module(), {.latched = {"D"}}); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(e->message(), "latched input 'D' is not an input of the model (inputs: [B, C])");
  e = error_of([] { generate(add_module(), {.latched = {"C", "C"}}); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message(), "input 'C' is marked latched twice");
  e = error_of([] { generate(add_module(), {.latched = {"A"}}); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), ErrorCode::kInvalidArgument);
}

TEST(IospecGenerate, InputReturnedAsOutput) {
  GraphBuilder b;
  ValueId B = b.input("B", f16(4));
  b.output(B);
  auto e = error_of([&] { generate(Module(b.finish())); });
  ASSERT_TRUE(e);
  EXPECT_NE(e->message().find("output 'B' is the input 'B' itself"), std::string::npos) << e->what();
}

// COND_IF: the output depends on the condition and on the operands the branches return, not on
// the others.
TEST(IospecGenerate, DependenciesThroughCondIf) {
  const TensorType t{DType::kFp32, {4}};
  auto branch = [&](const char* name, int returned) {
    GraphBuilder g(name);
    ValueId a = g.input("a", t);
    ValueId b = g.input("b", t);
    g.output(g.op(Op::IDENTITY, {returned == 0 ? a : b}, {}, "r"));
    return g.finish();
  };
  GraphBuilder b;
  ValueId p = b.input("p", {DType::kBool, {1}});
  ValueId x = b.input("x", t);
  ValueId y = b.input("y", t);
  b.input("z", t);
  auto r = b.op_multi(Op::COND_IF, {p, x, y}, {{"then_graph", std::string("then")}, {"else_graph", std::string("else")}},
                      {"out"}, {t});
  b.output(r[0]);
  Module m(b.finish());
  m.add_graph(branch("then", 0));
  m.add_graph(branch("else", 0));
  // Both branches return x: y is not needed (and z is used by nothing).
  auto e = error_of([&] { generate(m, {.latched = {"z"}}); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->location().operand, "y");
  m.graphs()[2] = branch("else", 1);
  const IoSpec s = generate(m, {.latched = {"z"}});
  EXPECT_EQ(s.simple_sequences[0], (Sequence{"main_seq", {"out"}, {"p", "x", "y"}}));
}

// WHILE_LOOP: a loop variable's final value depends on what the body feeds it and on what the
// condition reads; a variable carried through untouched does not flow into the others.
TEST(IospecGenerate, DependenciesThroughWhileLoop) {
  const TensorType t{DType::kFp32, {4}};
  const TensorType ti{DType::kInt32, {1}};
  GraphBuilder cond("cond");
  {
    ValueId i = cond.input("i", ti);
    cond.input("acc", t);
    cond.input("step", t);
    cond.input("carry", t);
    ValueId limit = cond.constant("limit", Tensor::from_ints(ti, std::vector<int64_t>{10}));
    cond.output(cond.op(Op::GREATER, {limit, i}, {}, "go"));
  }
  GraphBuilder body("body");
  {
    ValueId i = body.input("i", ti);
    ValueId acc = body.input("acc", t);
    ValueId step = body.input("step", t);
    ValueId carry = body.input("carry", t);
    ValueId one = body.constant("one", Tensor::from_ints(ti, std::vector<int64_t>{1}));
    body.output(body.op(Op::ADD, {i, one}, {}, "i2"));
    body.output(body.op(Op::ADD, {acc, step}, {}, "acc2"));
    body.output(body.op(Op::IDENTITY, {step}, {}, "step2"));
    body.output(body.op(Op::IDENTITY, {carry}, {}, "carry2"));
  }
  GraphBuilder b;
  ValueId i = b.input("i", ti);
  ValueId acc = b.input("acc", t);
  ValueId step = b.input("step", t);
  ValueId carry = b.input("carry", t);
  auto r = b.op_multi(Op::WHILE_LOOP, {i, acc, step, carry},
                      {{"cond_graph", std::string("cond")}, {"body_graph", std::string("body")}},
                      {"i_out", "acc_out", "step_out", "carry_out"}, {ti, t, t, t});
  b.output(r[1]);
  Module m(b.finish());
  m.add_graph(cond.finish());
  m.add_graph(body.finish());
  auto e = error_of([&] { generate(m); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->location().operand, "carry");
  const IoSpec s = generate(m, {.latched = {"carry"}});
  EXPECT_EQ(s.simple_sequences[0], (Sequence{"main_seq", {"acc_out"}, {"i", "acc", "step"}}));
}

// ---- Writer --------------------------------------------------------------------------------------------------

TEST(IospecYaml, NamesThatNeedQuotingRoundTrip) {
  GraphBuilder b;
  const std::vector<std::string> names = {"x:0", "23", "yes", "has space", "quote\"d", "-dash", "input.1", "Null", "#h"};
  std::vector<ValueId> ins;
  for (const std::string& n : names) ins.push_back(b.input(n, f16(4)));
  ValueId acc = ins[0];
  for (size_t i = 1; i < ins.size(); ++i) acc = b.op(Op::ADD, {acc, ins[i]});
  b.output(b.op(Op::IDENTITY, {acc}, {}, "out put: 1"));
  Module m(b.finish());
  const IoSpec s = generate(m);
  const std::string yaml = to_yaml(s);
  EXPECT_NE(yaml.find("  \"x:0\":\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("  \"23\":\n    type: input\n    varname: \"23\"\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("  \"yes\":\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("  \"quote\\\"d\":\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("  input.1:\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("    - \"out put: 1\"\n"), std::string::npos) << yaml;
  const IoSpec r = parse_yaml(yaml, "q.yaml");
  EXPECT_EQ(r, s);
  EXPECT_NO_THROW(check_against(r, m, "q.yaml"));
}

TEST(IospecYaml, FloatsKeepTheirDecimalPoint) {
  IoSpec s = generate(add_module());
  const std::vector<std::pair<Quantization, std::string>> cases = {
      {{0.05, -3}, "      scale: 0.05\n      zero_pt: -3.0\n"},
      {{1e-05, 128}, "      scale: 1.0e-05\n      zero_pt: 128.0\n"},
      {{0.007843138, 0.5}, "      scale: 0.007843138\n      zero_pt: 0.5\n"},
      {{3e+20, -0.0}, "      scale: 3.0e+20\n      zero_pt: 0.0\n"},
      {{2.5e-07, 0}, "      scale: 2.5e-07\n      zero_pt: 0.0\n"}};
  for (const auto& [q, text] : cases) {
    s.inputs[0].quantization = q;
    const std::string yaml = to_yaml(s);
    EXPECT_NE(yaml.find(text), std::string::npos) << yaml;
    EXPECT_EQ(parse_yaml(yaml, "f.yaml").inputs[0].quantization.scale, q.scale);
  }
}

TEST(IospecYaml, Deterministic) {
  const IoSpec s = generate(add_module(), {.latched = {"C"}});
  EXPECT_EQ(to_yaml(s), to_yaml(generate(add_module(), {.latched = {"C"}})));
}

TEST(IospecYaml, SaveAndLoad) {
  weft::test::TempDir dir("weft_iospec");
  const IoSpec s = generate(add_module(), {.latched = {"B"}});
  save_yaml(s, dir.file("s.yaml"));
  EXPECT_EQ(load_yaml(dir.file("s.yaml")), s);
  auto e = error_of([&] { load_yaml(dir.file("missing.yaml")); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), ErrorCode::kIo);
  EXPECT_EQ(e->location().file, dir.file("missing.yaml"));
  e = error_of([&] { save_yaml(s, dir.file("no/such/dir/s.yaml")); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), ErrorCode::kIo);
  // Errors of a loaded file name it.
  dir.write("bad.yaml", test::replace_once(kAddYaml, "    length: 60\n", "    length: 0\n"));
  e = error_of([&] { load_yaml(dir.file("bad.yaml")); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->location().file, dir.file("bad.yaml"));
  EXPECT_EQ(e->location().line, 5);
}

TEST(IospecYaml, EmptyModel) {
  GraphBuilder b;
  const IoSpec s = generate(Module(b.finish()));
  EXPECT_EQ(to_yaml(s), "inputs: {}\n\noutputs: {}\n\nsimple_sequences: {}\n\ncomplex_sequences: {}\n");
  EXPECT_EQ(parse_yaml(to_yaml(s), "e.yaml"), s);
}

// ---- Target files ------------------------------------------------------------------------------------------

TEST(IospecTarget, Parse) {
  Target t = parse_target("word_bits: 32\ngranule_words: 2\ncore_id: 1\n", "t.yaml");
  EXPECT_EQ(t.word_bits, 32);
  EXPECT_EQ(t.granule_words, 2);
  EXPECT_EQ(t.core_id, 1);
  t = parse_target("granule_words: 1  # one word\n", "t.yaml");
  EXPECT_EQ(t.word_bits, 64);
  EXPECT_EQ(t.granule_words, 1);
  EXPECT_EQ(t.core_id, 0);
  t = parse_target("", "t.yaml");
  EXPECT_EQ(t.granule_words, 4);
  t = parse_target("{}", "t.yaml");
  EXPECT_EQ(t.word_bits, 64);
}

TEST(IospecTarget, Errors) {
  struct Case {
    const char* text;
    ErrorCode code;
    int line;
    const char* operand;
    const char* message;
  };
  for (const Case& c : {
           Case{"word_bits: 12\n", ErrorCode::kInvalidArgument, 1, "word_bits",
                "word_bits must be a positive multiple of 8, got 12"},
           Case{"core_id: 0\nword_bits: 0\n", ErrorCode::kInvalidArgument, 2, "word_bits",
                "word_bits must be a positive multiple of 8, got 0"},
           Case{"granule_words: 0\n", ErrorCode::kInvalidArgument, 1, "granule_words", "granule_words must be >= 1, got 0"},
           Case{"core_id: -1\n", ErrorCode::kInvalidArgument, 1, "core_id", "core_id must be >= 0, got -1"},
           Case{"word_bits: 64\nwords: 4\n", ErrorCode::kInvalidArgument, 2, "words",
                "unknown key 'words' in a target (expected: word_bits, granule_words, core_id)"},
           Case{"word_bits: 64\nword_bits: 32\n", ErrorCode::kInvalidArgument, 2, "word_bits", "duplicate key 'word_bits'"},
           Case{"word_bits: sixty\n", ErrorCode::kInvalidArgument, 1, "word_bits", "expected a decimal integer, got 'sixty'"},
           Case{"- 64\n", ErrorCode::kInvalidArgument, 1, "", "expected a target (a mapping), got a list"},
           Case{"word_bits: [64\n", ErrorCode::kParse, 0, "", "YAML syntax"},
       }) {
    SCOPED_TRACE(c.text);
    auto e = error_of([&] { parse_target(c.text, "t.yaml"); });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), c.code) << e->what();
    EXPECT_EQ(e->location().file, "t.yaml");
    if (c.line) {
      EXPECT_EQ(e->location().line, c.line) << e->what();
    }
    EXPECT_EQ(e->location().operand, c.operand) << e->what();
    EXPECT_NE(e->message().find(c.message), std::string::npos) << e->what();
  }
}

TEST(IospecTarget, ReadFile) {
  weft::test::TempDir dir("weft_iospec_target");
  dir.write("t.yaml", "granule_words: 1\n");
  EXPECT_EQ(read_target(dir.file("t.yaml")).granule_words, 1);
  auto e = error_of([&] { read_target(dir.file("none.yaml")); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), ErrorCode::kIo);
  dir.write("bad.yaml", "granule_words: -2\n");
  e = error_of([&] { read_target(dir.file("bad.yaml")); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->location().file, dir.file("bad.yaml"));
  EXPECT_NE(std::string(e->what()).find("bad.yaml:1: operand 'granule_words': granule_words must be >= 1, got -2"),
            std::string::npos)
      << e->what();
}

}  // namespace
}  // namespace weft::iospec
