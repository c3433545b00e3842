// Hand-written SPIR-V assembly, checked word by word against words built independently of the
// assembler: ids, enumerants, extended instructions, literals of every width, strings, the header
// comment block and free layout.
#include <gtest/gtest.h>

#include "spirv/text.h"
#include "text_test_util.h"
#include "weft/spirv.h"

namespace weft::spirv {
namespace {

using testing::expect_same_words;
using testing::ModuleBuilder;

TEST(SpirvAssemble, ExampleModuleWordByWord) {
  expect_same_words(assemble(testing::kExampleText), testing::example_module());
}

TEST(SpirvAssemble, NumericIdsKeepTheirNumberNamesTakeTheLowestFreeIds) {
  std::string text = R"(
    %a = OpTypeBool
    %2 = OpTypeVoid
    %b = OpTypeInt 32 0
    %7 = OpTypeFloat 32
    %c = OpTypeArray %b %a
  )";
  std::vector<uint32_t> expected = ModuleBuilder()
                                       .op(kOpTypeBool, {1u})
                                       .op(kOpTypeVoid, {2u})
                                       .op(kOpTypeInt, {3u, 32u, 0u})
                                       .op(kOpTypeFloat, {7u, 32u})
                                       .op(kOpTypeArray, {4u, 3u, 1u})
                                       .words(8);
  expect_same_words(assemble(text), expected);
}

TEST(SpirvAssemble, ForwardReferencesTakeIdsAtFirstAppearance) {
  // %late appears first in OpName, so it gets id 1 although it is defined last.
  std::string text = "OpName %late \"late\"\n%t = OpTypeBool\n%late = OpTypeVoid\n";
  std::vector<uint32_t> expected =
      ModuleBuilder().op(kOpName, {1u, std::string("late")}).op(kOpTypeBool, {2u}).op(kOpTypeVoid, {1u}).words(3);
  expect_same_words(assemble(text), expected);
}

TEST(SpirvAssemble, BoundIsMaxIdPlusOne) {
  EXPECT_EQ(assemble("%100 = OpTypeBool")[3], 101u);
  EXPECT_EQ(assemble("OpCapability Shader")[3], 1u);
  // A header comment block raises it (a module disassembled with a generous bound reassembles
  // to the same words), but never below max id + 1.
  EXPECT_EQ(assemble("; SPIR-V\n; Bound: 50\n%7 = OpTypeBool\n")[3], 50u);
  EXPECT_EQ(assemble("; SPIR-V\n; Bound: 2\n%7 = OpTypeBool\n")[3], 8u);
}

TEST(SpirvAssemble, HeaderCommentBlockSetsTheHeaderWords) {
  std::vector<uint32_t> w = assemble("; SPIR-V\n; Version: 1.3\n; Generator: 8; 11\n; Bound: 9\n; Schema: 0\n");
  ASSERT_EQ(w.size(), 5u);
  EXPECT_EQ(w[0], kMagic);
  EXPECT_EQ(w[1], 0x00010300u);
  EXPECT_EQ(w[2], (8u << 16) | 11u);
  EXPECT_EQ(w[3], 9u);
  EXPECT_EQ(w[4], 0u);
  // Without the block: version 1.6, generator 0, schema 0.
  std::vector<uint32_t> d = assemble("");
  EXPECT_EQ(d, (std::vector<uint32_t>{kMagic, kVersion16, 0, 1, 0}));
  // The same comments elsewhere are just comments.
  EXPECT_EQ(assemble("OpCapability Shader\n; SPIR-V\n; Version: 1.3\n")[1], kVersion16);
  EXPECT_EQ(assemble("; SPIR-V\n; Generator: Khronos; 3\n")[2], 3u);
}

TEST(SpirvAssemble, EnumerantsByNameOrNumber) {
  std::vector<uint32_t> expected = ModuleBuilder()
                                       .op(kOpCapability, {kCapGraphARM})
                                       .op(kOpMemoryModel, {kAddressingLogical, kMemoryModelVulkan})
                                       .op(kOpDecorate, {1u, kDecorationBinding, 3u})
                                       .words(2);
  expect_same_words(assemble("OpCapability GraphARM\nOpMemoryModel Logical Vulkan\nOpDecorate %v Binding 3"),
                    expected);
  expect_same_words(assemble("OpCapability 4191\nOpMemoryModel 0 3\nOpDecorate %v 33 3"), expected);
}

TEST(SpirvAssemble, ExtInstByTosaNameOrNumber) {
  std::string prefix = "%tosa = OpExtInstImport \"TOSA.001000.1\"\n%t = OpTypeBool\n";
  std::vector<uint32_t> expected = ModuleBuilder()
                                       .op(kOpExtInstImport, {1u, std::string("TOSA.001000.1")})
                                       .op(kOpTypeBool, {2u})
                                       .op(kOpExtInst, {2u, 3u, 1u, 2u /* CONV2D */, 4u, 5u})
                                       .words(6);
  expect_same_words(assemble(prefix + "%r = OpExtInst %t %tosa CONV2D %a %b"), expected);
  expect_same_words(assemble(prefix + "%r = OpExtInst %t %tosa 2 %a %b"), expected);
  // Another set: numbers only; the TOSA names mean nothing there.
  std::vector<uint32_t> other = ModuleBuilder()
                                    .op(kOpExtInstImport, {1u, std::string("GLSL.std.450")})
                                    .op(kOpTypeBool, {2u})
                                    .op(kOpExtInst, {2u, 3u, 1u, 31u, 4u})
                                    .words(5);
  expect_same_words(assemble("%glsl = OpExtInstImport \"GLSL.std.450\"\n%t = OpTypeBool\n"
                             "%r = OpExtInst %t %glsl 31 %a"),
                    other);
}

// One OpConstant of `type_decl` holding `literal`: its literal words.
std::vector<uint32_t> constant_words(const std::string& type_decl, const std::string& literal) {
  std::vector<uint32_t> w = assemble("%t = " + type_decl + "\n%c = OpConstant %t " + literal);
  // header (5) + type instruction + [count|opcode, type, result, literal...]
  size_t type_words = w[5] >> 16;
  size_t at = 5 + type_words;
  EXPECT_EQ(w[at] & 0xffff, kOpConstant);
  return std::vector<uint32_t>(w.begin() + static_cast<long>(at) + 3, w.end());
}

using W = std::vector<uint32_t>;

TEST(SpirvAssemble, IntegerLiteralsFollowTheResultType) {
  EXPECT_EQ(constant_words("OpTypeInt 32 0", "4294967295"), W{0xffffffffu});
  EXPECT_EQ(constant_words("OpTypeInt 32 1", "-1"), W{0xffffffffu});
  EXPECT_EQ(constant_words("OpTypeInt 32 1", "-2147483648"), W{0x80000000u});
  // Narrower types: unsigned zero-extended, signed sign-extended (SPIR-V 2.2.1).
  EXPECT_EQ(constant_words("OpTypeInt 8 0", "255"), W{0xffu});
  EXPECT_EQ(constant_words("OpTypeInt 8 1", "-1"), W{0xffffffffu});
  EXPECT_EQ(constant_words("OpTypeInt 8 1", "-128"), W{0xffffff80u});
  EXPECT_EQ(constant_words("OpTypeInt 16 0", "65535"), W{0xffffu});
  EXPECT_EQ(constant_words("OpTypeInt 16 1", "-32768"), W{0xffff8000u});
  // 64-bit: two words, low first.
  EXPECT_EQ(constant_words("OpTypeInt 64 0", "18446744073709551615"), (W{0xffffffffu, 0xffffffffu}));
  EXPECT_EQ(constant_words("OpTypeInt 64 0", "4294967296"), (W{0u, 1u}));
  EXPECT_EQ(constant_words("OpTypeInt 64 1", "-2"), (W{0xfffffffeu, 0xffffffffu}));
  EXPECT_EQ(constant_words("OpTypeInt 64 1", "-9223372036854775808"), (W{0u, 0x80000000u}));
  // Hex: the literal's raw bits.
  EXPECT_EQ(constant_words("OpTypeInt 8 1", "0xff"), W{0xffu});
  EXPECT_EQ(constant_words("OpTypeInt 64 0", "0x100000002"), (W{2u, 1u}));
}

TEST(SpirvAssemble, FloatLiteralsFollowTheResultType) {
  EXPECT_EQ(constant_words("OpTypeFloat 32", "1"), W{0x3f800000u});
  EXPECT_EQ(constant_words("OpTypeFloat 32", "0.1"), W{0x3dcccccdu});
  EXPECT_EQ(constant_words("OpTypeFloat 32", "-0"), W{0x80000000u});
  EXPECT_EQ(constant_words("OpTypeFloat 32", "1e-45"), W{0x00000001u});  // smallest subnormal
  EXPECT_EQ(constant_words("OpTypeFloat 32", "3.4028235e38"), W{0x7f7fffffu});
  EXPECT_EQ(constant_words("OpTypeFloat 32", "0x1p+128"), W{0x7f800000u});
  EXPECT_EQ(constant_words("OpTypeFloat 32", "-0x1p+128"), W{0xff800000u});
  EXPECT_EQ(constant_words("OpTypeFloat 32", "0x1.8p+128"), W{0x7fc00000u});
  EXPECT_EQ(constant_words("OpTypeFloat 32", "0x1.000002p+128"), W{0x7f800001u});
  EXPECT_EQ(constant_words("OpTypeFloat 32", "0x1.8p-1"), W{0x3f400000u});  // finite hex float: 0.75
  EXPECT_EQ(constant_words("OpTypeFloat 32", "0x3f800000"), W{0x3f800000u});  // raw bits
  EXPECT_EQ(constant_words("OpTypeFloat 16", "1"), W{0x3c00u});
  EXPECT_EQ(constant_words("OpTypeFloat 16", "65504"), W{0x7bffu});
  EXPECT_EQ(constant_words("OpTypeFloat 16", "-0x1p+16"), W{0xfc00u});
  EXPECT_EQ(constant_words("OpTypeFloat 16", "0x1.8p+16"), W{0x7e00u});
  EXPECT_EQ(constant_words("OpTypeFloat 16", "6e-08"), W{0x0001u});
  EXPECT_EQ(constant_words("OpTypeFloat 16", "0.1"), W{0x2e66u});
  EXPECT_EQ(constant_words("OpTypeFloat 16 BFloat16KHR", "1"), W{0x3f80u});
  EXPECT_EQ(constant_words("OpTypeFloat 16 BFloat16KHR", "0x1.8p+128"), W{0x7fc0u});
  EXPECT_EQ(constant_words("OpTypeFloat 8 Float8E4M3EXT", "448"), W{0x7eu});
  EXPECT_EQ(constant_words("OpTypeFloat 8 Float8E4M3EXT", "-0.001953125"), W{0x81u});  // -2^-9
  EXPECT_EQ(constant_words("OpTypeFloat 8 Float8E4M3EXT", "0x1.ep+8"), W{0x7fu});      // NaN
  EXPECT_EQ(constant_words("OpTypeFloat 8 Float8E5M2EXT", "57344"), W{0x7bu});
  EXPECT_EQ(constant_words("OpTypeFloat 8 Float8E5M2EXT", "-0x1p+16"), W{0xfcu});
  EXPECT_EQ(constant_words("OpTypeFloat 64", "0.1"), (W{0x9999999au, 0x3fb99999u}));
  EXPECT_EQ(constant_words("OpTypeFloat 64", "0x1.8p+1024"), (W{0u, 0x7ff80000u}));
  EXPECT_EQ(constant_words("OpTypeFloat 64", "-0"), (W{0u, 0x80000000u}));
}

TEST(SpirvAssemble, StringsAreNulTerminatedAndPadded) {
  auto ext = [](const std::string& quoted) {
    std::vector<uint32_t> w = assemble("OpExtension " + quoted);
    return std::vector<uint32_t>(w.begin() + 5, w.end());
  };
  EXPECT_EQ(ext("\"\""), (W{0x00020000u | kOpExtension, 0}));
  EXPECT_EQ(ext("\"abc\""), (W{0x00020000u | kOpExtension, 0x00636261u}));
  EXPECT_EQ(ext("\"abcd\""), (W{0x00030000u | kOpExtension, 0x64636261u, 0}));
  EXPECT_EQ(ext("\"abcde\""), (W{0x00030000u | kOpExtension, 0x64636261u, 0x65u}));
  // \" and \\ escapes; a backslash before any other character stands for that character.
  EXPECT_EQ(ext(R"("a\"b\\c\d")"), (W{0x00030000u | kOpExtension, 0x5c622261u, 0x6463u}));
  // ';' and '%' inside strings are not comments or ids; a string may span lines.
  EXPECT_EQ(ext("\";%\n\""), (W{0x00020000u | kOpExtension, 0x000a253bu}));
}

TEST(SpirvAssemble, CommentsAndLayoutAreFree) {
  std::string text =
      "; leading comment\n"
      "  OpCapability   Shader ; trailing comment\n"
      "%uint=OpTypeInt 32\n"
      "   0\n"
      "\t%c = OpConstant\t%uint 7;no space before the comment\n";
  std::vector<uint32_t> expected = ModuleBuilder()
                                       .op(kOpCapability, {kCapShader})
                                       .op(kOpTypeInt, {1u, 32u, 0u})
                                       .op(kOpConstant, {1u, 2u, 7u})
                                       .words(3);
  expect_same_words(assemble(text), expected);
}

TEST(SpirvAssemble, OptionalAndVariadicOperands) {
  std::vector<uint32_t> expected = ModuleBuilder()
                                       .op(kOpTypeInt, {1u, 32u, 0u})
                                       .op(kOpTypeTensorARM, {2u, 1u})
                                       .op(kOpTypeTensorARM, {3u, 1u, 4u})
                                       .op(kOpTypeTensorARM, {5u, 1u, 4u, 6u})
                                       .op(kOpTypeGraphARM, {7u, 0u, 5u})
                                       .op(kOpTypeGraphARM, {8u, 2u, 5u, 5u, 5u, 5u})
                                       .op(kOpTypeFloat, {9u, 16u, kFPEncodingBFloat16KHR})
                                       .op(kOpGraphInputARM, {5u, 10u, 4u})
                                       .op(kOpGraphInputARM, {5u, 11u, 4u, 4u})
                                       .words(12);
  std::string text = R"(
    %uint = OpTypeInt 32 0
    %t0 = OpTypeTensorARM %uint
    %t1 = OpTypeTensorARM %uint %rank
    %t2 = OpTypeTensorARM %uint %rank %shape
    %g0 = OpTypeGraphARM 0 %t2
    %g1 = OpTypeGraphARM 2 %t2 %t2 %t2 %t2
    %bf16 = OpTypeFloat 16 BFloat16KHR
    %in0 = OpGraphInputARM %t2 %rank
    %in1 = OpGraphInputARM %t2 %rank %rank
  )";
  expect_same_words(assemble(text), expected);
}

TEST(SpirvAssemble, UnknownInstructionsAsRawWords) {
  // What the disassembler prints for an instruction it cannot parse reads back to the same words.
  std::vector<uint32_t> w = assemble("OpUnknown(9999) 0x00000001 2 %a ; why\nOpUnknown(43)");
  EXPECT_EQ(std::vector<uint32_t>(w.begin() + 5, w.end()),
            (W{(4u << 16) | 9999u, 1u, 2u, 1u, (1u << 16) | 43u}));
}

TEST(SpirvAssemble, EveryInstructionNameIsAccepted) {
  // Each instruction of the table, with no operands: either it assembles (it has none) or the
  // error is about its operands or result, never "unknown instruction".
  for (const InstDef& d : core_instructions()) {
    SCOPED_TRACE(d.name);
    try {
      std::vector<uint32_t> w = assemble(d.name);
      ASSERT_EQ(w.size(), 6u);
      EXPECT_EQ(w[5], (1u << 16) | d.opcode);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kParse);
      EXPECT_EQ(e.message().find("unknown instruction"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace weft::spirv
