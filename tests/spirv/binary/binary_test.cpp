// Word-level SPIR-V: splitting streams, strings, grammar-driven operand parsing, the instruction
// writer and byte order of .spv files.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "spirv/binary.h"
#include "weft/spirv.h"

namespace weft::spirv {
namespace {

std::vector<uint32_t> header(uint32_t bound = 10) { return {kMagic, kVersion16, 0, bound, 0}; }

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(SpirvBinary, SplitsInstructionsWithOffsets) {
  std::vector<uint32_t> w = header();
  InstructionWriter(w, kOpCapability).word(kCapShader).finish();
  InstructionWriter(w, kOpExtension).string("SPV_ARM_graph").finish();
  Stream s = split_instructions(w);
  ASSERT_EQ(s.instructions.size(), 2u);
  EXPECT_EQ(s.header.bound, 10u);
  EXPECT_EQ(s.instructions[0].offset, 5u);
  EXPECT_EQ(s.instructions[0].opcode(), kOpCapability);
  EXPECT_EQ(s.instructions[0].word_count(), 2);
  EXPECT_EQ(s.instructions[1].offset, 7u);
  EXPECT_EQ(s.instructions[1].word_count(), 1 + 4);  // 13 chars + nul = 14 bytes -> 4 words
  size_t next = 0;
  EXPECT_EQ(read_string(s.instructions[1], 1, &next), "SPV_ARM_graph");
  EXPECT_EQ(next, 5u);
}

TEST(SpirvBinary, StringPaddingAtWordBoundaries) {
  for (std::string str : {"", "abc", "abcd", "abcde", "abcdefgh"}) {
    std::vector<uint32_t> w;
    append_string(w, str);
    EXPECT_EQ(w.size(), str.size() / 4 + 1) << str;
    EXPECT_EQ(w.back() >> 24, 0u) << "last byte of the last word is always nul";
    std::vector<uint32_t> inst = {static_cast<uint32_t>((w.size() + 1) << 16 | kOpSourceExtension)};
    inst.insert(inst.end(), w.begin(), w.end());
    size_t next = 0;
    EXPECT_EQ(read_string({0, inst}, 1, &next), str);
    EXPECT_EQ(next, inst.size());
  }
}

TEST(SpirvBinary, StreamErrorsNameTheOffsetAndRule) {
  EXPECT_NE(error_of([] { split_instructions(std::vector<uint32_t>{kMagic, 0, 0}); }).find("5-word header"),
            std::string::npos);
  std::vector<uint32_t> swapped = header();
  swapped[0] = 0x03022307;
  EXPECT_NE(error_of([&] { split_instructions(swapped); }).find("byte-swapped"), std::string::npos);
  std::vector<uint32_t> bad_magic = header();
  bad_magic[0] = 0xdeadbeef;
  EXPECT_NE(error_of([&] { split_instructions(bad_magic); }).find("wrong magic number 0xdeadbeef"),
            std::string::npos);
  std::vector<uint32_t> zero = header();
  zero.push_back(kOpCapability);  // word count 0
  EXPECT_NE(error_of([&] { split_instructions(zero); }).find("word 5: instruction with a word count of 0"),
            std::string::npos);
  std::vector<uint32_t> past = header();
  past.push_back(3u << 16 | kOpCapability);
  past.push_back(kCapShader);
  EXPECT_NE(error_of([&] { split_instructions(past); }).find("declares 3 words but only 2 remain"),
            std::string::npos);
}

TEST(SpirvBinary, UnterminatedString) {
  std::vector<uint32_t> inst = {2u << 16 | kOpSourceExtension, 0x64636261};  // "abcd", no nul
  EXPECT_NE(error_of([&] { read_string({7, inst}, 1, nullptr); }).find("no nul terminator"), std::string::npos);
  EXPECT_NE(error_of([&] { parse_operands({7, inst}, nullptr); }).find("word 7"), std::string::npos);
}

// Feeds `words` (one instruction each) to a ParseState.
ParseState state_of(std::initializer_list<std::vector<uint32_t>> insts) {
  ParseState s;
  for (const std::vector<uint32_t>& w : insts) {
    Instruction i{0, w};
    s.record(i, parse_operands(i, &s));
  }
  return s;
}

TEST(SpirvBinary, ParsesOperandsFromTheGrammar) {
  // OpDecorate %5 Binding 3: the enumerant's parameter is an operand of its own.
  std::vector<uint32_t> dec = {4u << 16 | kOpDecorate, 5, kDecorationBinding, 3};
  auto ops = parse_operands({0, dec}, nullptr);
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0].kind, OperandKind::kIdRef);
  EXPECT_EQ(ops[1].kind, OperandKind::kDecoration);
  EXPECT_EQ(ops[2].kind, OperandKind::kLiteralInteger);
  EXPECT_EQ(ops[2].first_word, 3);
  // OpConstant of a 64-bit type takes two literal words; a 32-bit one, one.
  ParseState widths = state_of({{4u << 16 | kOpTypeInt, 2, 64, 1}, {4u << 16 | kOpTypeInt, 3, 32, 1}});
  std::vector<uint32_t> c64 = {5u << 16 | kOpConstant, 2, 7, 0xffffffff, 0x7fff};
  ops = parse_operands({0, c64}, &widths);
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[2].num_words, 2);
  std::vector<uint32_t> c32 = {5u << 16 | kOpConstant, 3, 7, 1, 2};
  EXPECT_NE(error_of([&] { parse_operands({9, c32}, &widths); }).find("1 words left over"),
            std::string::npos);
  // Optional and variadic operands: OpTypeTensorARM %elem [%rank [%shape]].
  std::vector<uint32_t> t = {3u << 16 | kOpTypeTensorARM, 8, 4};
  EXPECT_EQ(parse_operands({0, t}, nullptr).size(), 2u);
  std::vector<uint32_t> ext = {7u << 16 | kOpExtInst, 1, 2, 3, 14, 4, 5};
  ops = parse_operands({0, ext}, nullptr);
  ASSERT_EQ(ops.size(), 6u);
  EXPECT_EQ(ops[3].kind, OperandKind::kLiteralExtInstInteger);
}

TEST(SpirvBinary, ParsesEveryCategoryOfOperand) {
  // A bit enum: each set flag's parameters follow in bit order (TensorOperands
  // OutOfBoundsValueARM|MakeElementAvailableARM take one id each).
  std::vector<uint32_t> read = {7u << 16 | kOpTensorReadARM, 1, 2, 3, 4, 0x2 | 0x4, 5};
  EXPECT_NE(error_of([&] { parse_operands({0, read}, nullptr); }).find("missing operand"), std::string::npos);
  read.push_back(6);
  read[0] = 8u << 16 | kOpTensorReadARM;
  auto ops = parse_operands({0, read}, nullptr);
  ASSERT_EQ(ops.size(), 7u);
  EXPECT_EQ(ops[4].kind, OperandKind::kTensorOperands);
  EXPECT_EQ(ops[5].kind, OperandKind::kIdRef);
  std::vector<uint32_t> bad_bit = {7u << 16 | kOpTensorReadARM, 1, 2, 3, 4, 0x40000000};
  bad_bit[0] = 6u << 16 | kOpTensorReadARM;
  EXPECT_NE(error_of([&] { parse_operands({0, bad_bit}, nullptr); }).find("unknown TensorOperands bit"),
            std::string::npos);
  // A composite is read as its parts: OpPhi's (IdRef, IdRef) pairs.
  std::vector<uint32_t> phi = {7u << 16 | kOpPhi, 1, 2, 3, 4, 5, 6};
  ops = parse_operands({0, phi}, nullptr);
  ASSERT_EQ(ops.size(), 6u);
  EXPECT_EQ(ops[5].kind, OperandKind::kIdRef);
  phi[0] = 6u << 16 | kOpPhi;
  EXPECT_NE(error_of([&] { parse_operands({0, {phi.data(), 6}}, nullptr); }).find("cut short"), std::string::npos);
  // OpSpecConstantOp: the operation's operands (IAdd: two ids).
  std::vector<uint32_t> spec = {6u << 16 | kOpSpecConstantOp, 1, 2, kOpIAdd, 3, 4};
  EXPECT_EQ(parse_operands({0, spec}, nullptr).size(), 5u);
  // OpSwitch with a 64-bit selector: two-word case literals.
  ParseState wide = state_of({{4u << 16 | kOpTypeInt, 2, 64, 0}, {3u << 16 | kOpUndef, 2, 9}});
  std::vector<uint32_t> sw = {7u << 16 | kOpSwitch, 9, 10, 1, 0, 11};
  ops = parse_operands({0, sw}, &wide);
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(ops[2].num_words, 2);
}

TEST(SpirvBinary, ExtendedInstructionsFollowTheirSetsGrammar) {
  auto import = [](std::string_view name) {
    std::vector<uint32_t> w = {kOpExtInstImport, 1};
    append_string(w, name);
    w[0] |= static_cast<uint32_t>(w.size()) << 16;
    return w;
  };
  // Arm.ExperimentalMLOperations.1 CALL: a literal opcode, then ids.
  ParseState ml = state_of({import("Arm.ExperimentalMLOperations.1")});
  std::vector<uint32_t> call = {7u << 16 | kOpExtInst, 2, 3, 1, 0, 77, 4};
  auto ops = parse_operands({0, call}, &ml);
  ASSERT_EQ(ops.size(), 6u);
  EXPECT_EQ(ops[4].kind, OperandKind::kLiteralInteger);
  EXPECT_EQ(ops[5].kind, OperandKind::kIdRef);
  // NonSemantic.Graph.DebugInfo.1 DebugGraph takes exactly two ids; an unknown number is an error.
  ParseState dbg = state_of({import("NonSemantic.Graph.DebugInfo.1")});
  std::vector<uint32_t> graph = {7u << 16 | kOpExtInst, 2, 3, 1, 1, 4, 5};
  EXPECT_EQ(parse_operands({0, graph}, &dbg).size(), 6u);
  graph.push_back(6);
  graph[0] = 8u << 16 | kOpExtInst;
  EXPECT_NE(error_of([&] { parse_operands({0, graph}, &dbg); }).find("left over"), std::string::npos);
  std::vector<uint32_t> bad = {5u << 16 | kOpExtInst, 2, 3, 1, 42};
  EXPECT_NE(error_of([&] { parse_operands({0, bad}, &dbg); }).find("has no instruction 42"), std::string::npos);
}

TEST(SpirvBinary, OperandErrors) {
  std::vector<uint32_t> unknown = {1u << 16 | 9999};
  EXPECT_NE(error_of([&] { parse_operands({5, unknown}, nullptr); }).find("unknown opcode 9999"),
            std::string::npos);
  std::vector<uint32_t> missing = {2u << 16 | kOpTypeInt, 4};
  EXPECT_NE(error_of([&] { parse_operands({5, missing}, nullptr); }).find("OpTypeInt: missing operand 2"),
            std::string::npos);
  std::vector<uint32_t> bad_cap = {2u << 16 | kOpCapability, 0x7ffffff0};
  EXPECT_NE(error_of([&] { parse_operands({5, bad_cap}, nullptr); }).find("unknown Capability"),
            std::string::npos);
}

TEST(SpirvBinary, WriterRejectsOversizedInstructionsAndLeavesOutputAsItWas) {
  std::vector<uint32_t> w = header();
  InstructionWriter iw(w, kOpTypeStruct);
  std::vector<uint32_t> many(70000, 1);
  iw.words(many);
  EXPECT_THROW(iw.finish(), Error);
  EXPECT_EQ(w, header());
}

TEST(SpirvBinary, FilesAreLittleEndianAndEitherOrderReads) {
  std::vector<uint32_t> w = header(3);
  InstructionWriter(w, kOpCapability).word(kCapGraphARM).finish();
  std::string path = (std::filesystem::temp_directory_path() / "weft_binary_test.spv").string();
  write_file(path, w);
  EXPECT_EQ(read_file(path), w);
  std::vector<uint8_t> be(w.size() * 4);
  for (size_t i = 0; i < w.size(); ++i)
    for (int b = 0; b < 4; ++b) be[4 * i + static_cast<size_t>(b)] = static_cast<uint8_t>(w[i] >> (8 * (3 - b)));
  EXPECT_EQ(words_from_bytes(be, "be.spv"), w);
  std::filesystem::remove(path);
  EXPECT_NE(error_of([] { words_from_bytes(std::vector<uint8_t>(21, 0), "x.spv"); }).find("multiple of 4"),
            std::string::npos);
  EXPECT_NE(error_of([] { words_from_bytes(std::vector<uint8_t>(16, 0), "x.spv"); }).find("20-byte"),
            std::string::npos);
  EXPECT_NE(error_of([] { words_from_bytes(std::vector<uint8_t>(20, 0), "x.spv"); }).find("x.spv"),
            std::string::npos);
  EXPECT_EQ(error_of([] { read_file("/nonexistent/dir/m.spv"); }).find("/nonexistent/dir/m.spv"), 0u);
}

TEST(SpirvBinary, TosaInstructionsFollowTheOperatorTable) {
  ASSERT_TRUE(tosa_op_from_opcode(2).has_value());
  EXPECT_EQ(*tosa_op_from_opcode(2), Op::CONV2D);
  EXPECT_FALSE(tosa_op_from_opcode(66).has_value());
  EXPECT_FALSE(tosa_op_from_opcode(0xffffffffu).has_value());
  auto ops = tosa_operands(Op::CONCAT);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_STREQ(ops[0].name, "axis");
  EXPECT_TRUE(ops[0].is_attribute);
  EXPECT_TRUE(ops[1].variadic);
  EXPECT_TRUE(tosa_operands(Op::CUSTOM).empty());
  EXPECT_EQ(find_instruction("OpGraphARM")->opcode, kOpGraphARM);
  EXPECT_EQ(find_enumerant(OperandKind::kCapability, "GraphARM")->value, kCapGraphARM);
}

}  // namespace
}  // namespace weft::spirv
