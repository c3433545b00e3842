// disassemble -> assemble gives back the same words: the example module (golden text), random
// grammar-driven modules with every instruction kind, every literal bit pattern of the narrow float
// formats, edge cases of the wide ones, integer widths, strings and friendly-name clashes.
#include <gtest/gtest.h>

#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <sstream>

#include "spirv/text.h"
#include "text_test_util.h"
#include "weft/spirv.h"

namespace weft::spirv {
namespace {

using testing::expect_same_words;
using testing::ModuleBuilder;

// Every combination of options (or, for large modules, friendly names with the header and raw ids
// without it) reassembles to `words`.
void expect_round_trip(const std::vector<uint32_t>& words, bool every_option = true) {
  for (int mask = 0; mask < 8; ++mask) {
    if (!every_option && mask != 3 && mask != 4) continue;
    DisassembleOptions o{.friendly_names = (mask & 1) != 0, .header = (mask & 2) != 0, .offsets = (mask & 4) != 0};
    std::string text = disassemble(words, o);
    SCOPED_TRACE("friendly_names=" + std::to_string(o.friendly_names) + " header=" + std::to_string(o.header) +
                 " offsets=" + std::to_string(o.offsets) + "\n" + text.substr(0, 20000));
    try {
      expect_same_words(assemble(text), words);
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

// The lines of a listing (header excluded) without the alignment.
std::vector<std::string> body_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (l.starts_with(";") || l.find_first_not_of(' ') == std::string::npos) continue;
    lines.push_back(l.substr(l.find_first_not_of(' ')));
  }
  return lines;
}

TEST(SpirvTextRoundTrip, ExampleModuleGolden) {
  std::vector<uint32_t> words = testing::example_module();
  EXPECT_EQ(disassemble(words), testing::kExampleText);
  expect_round_trip(words);
}

TEST(SpirvTextRoundTrip, RawIdsAndOffsets) {
  std::vector<uint32_t> words = testing::example_module();
  std::string raw = disassemble(words, {.friendly_names = false, .header = false, .offsets = true});
  std::vector<std::string> lines = body_lines(raw);
  ASSERT_EQ(lines.size(), 39u);
  EXPECT_EQ(lines[0], "OpCapability Shader ; @5");
  EXPECT_EQ(lines[6], "%1 = OpExtInstImport \"TOSA.001000.1\" ; @23");
  // OpExtInst (9 words), OpGraphSetOutputARM (3), OpGraphEndARM (1) end the module.
  EXPECT_EQ(lines[36], "%6 = OpExtInst %15 %1 CLAMP %18 %19 %11 %5 ; @" + std::to_string(words.size() - 13));
  // Alignment: '=' of every result sits at the same column, like spirv-dis.
  std::istringstream in(raw);
  for (std::string l; std::getline(in, l);) {
    size_t eq = l.find(" = ");
    if (eq != std::string::npos) EXPECT_EQ(eq, 12u) << l;
    else EXPECT_EQ(l.find("Op"), 15u) << l;
  }
}

TEST(SpirvTextRoundTrip, DisassemblerObjectPrintsSingleInstructions) {
  std::vector<uint32_t> words = testing::example_module();
  Disassembler dis(words);
  EXPECT_EQ(dis.instruction(5), "OpCapability Shader");
  EXPECT_EQ(dis.instruction(23), "%tosa = OpExtInstImport \"TOSA.001000.1\"");
  EXPECT_EQ(dis.instruction(6), "");  // not the start of an instruction
  EXPECT_EQ(dis.instruction(100000), "");
  EXPECT_EQ(dis.id_name(testing::kTensor), "%tensor_float_1x8x8x3");
  EXPECT_EQ(dis.id_name(testing::kShape), "%14");
  EXPECT_EQ(dis.id_name(999), "%999");
  EXPECT_EQ(dis.listing(), disassemble(words));
  Disassembler raw(words, {.friendly_names = false});
  EXPECT_EQ(raw.id_name(testing::kTensor), "%15");
  EXPECT_EQ(raw.instruction(23), "%1 = OpExtInstImport \"TOSA.001000.1\"");
}

TEST(SpirvTextRoundTrip, RandomModulesWithEveryInstruction) {
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::vector<uint32_t> words = testing::RandomModule(seed).build(60);
    // Every generated instruction parses: nothing falls back to OpUnknown.
    std::string text = disassemble(words);
    EXPECT_EQ(text.find("OpUnknown"), std::string::npos) << text;
    expect_round_trip(words);
    if (::testing::Test::HasFailure()) break;
  }
}

TEST(SpirvTextRoundTrip, RandomModulesCoverEveryInstructionAndEnumKind) {
  std::set<std::string> seen;
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    for (const std::string& l : body_lines(disassemble(testing::RandomModule(seed).build(60)))) {
      size_t eq = l.find(" = ");
      size_t op = eq == std::string::npos ? 0 : eq + 3;
      seen.insert(l.substr(op, l.find(' ', op) - op));
    }
  }
  for (const InstDef& d : core_instructions()) EXPECT_TRUE(seen.count(d.name)) << d.name;
}

// A module holding one OpConstant of a scalar type per literal: type id 1, constants 2, 3, ...
std::vector<uint32_t> constants_module(uint16_t type_opcode, std::initializer_list<uint32_t> type_operands,
                                       const std::vector<std::vector<uint32_t>>& literals) {
  std::vector<uint32_t> w{kMagic, kVersion16, 0, static_cast<uint32_t>(literals.size() + 2), 0};
  InstructionWriter t(w, type_opcode);
  t.word(1);
  for (uint32_t o : type_operands) t.word(o);
  t.finish();
  uint32_t id = 2;
  for (const auto& literal : literals) InstructionWriter(w, kOpConstant).word(1).word(id++).words(literal).finish();
  return w;
}

// The printed literal of each OpConstant line.
std::vector<std::string> printed_literals(const std::vector<uint32_t>& words) {
  std::vector<std::string> out;
  for (const std::string& l : body_lines(disassemble(words, {.friendly_names = false}))) {
    if (l.find("OpConstant ") == std::string::npos) continue;
    out.push_back(l.substr(l.rfind(' ') + 1));
  }
  return out;
}

std::vector<std::vector<uint32_t>> all_patterns(uint32_t bits) {
  std::vector<std::vector<uint32_t>> v;
  for (uint32_t i = 0; i < (1u << bits); ++i) v.push_back({i});
  return v;
}

TEST(SpirvTextRoundTrip, EveryHalfBfloat16AndFp8Pattern) {
  expect_round_trip(constants_module(kOpTypeFloat, {16}, all_patterns(16)), false);
  expect_round_trip(constants_module(kOpTypeFloat, {16, kFPEncodingBFloat16KHR}, all_patterns(16)), false);
  expect_round_trip(constants_module(kOpTypeFloat, {8, kFPEncodingFloat8E4M3EXT}, all_patterns(8)));
  expect_round_trip(constants_module(kOpTypeFloat, {8, kFPEncodingFloat8E5M2EXT}, all_patterns(8)));
}

TEST(SpirvTextRoundTrip, FloatLiteralTexts) {
  auto printed = [](std::initializer_list<uint32_t> type, std::vector<std::vector<uint32_t>> literals) {
    return printed_literals(constants_module(kOpTypeFloat, type, literals));
  };
  using S = std::vector<std::string>;
  EXPECT_EQ(printed({32}, {{0x3f800000}, {0x3dcccccd}, {0x80000000}, {0x00000001}, {0x7f7fffff}, {0x7f800000},
                           {0xff800000}, {0x7fc00000}, {0x7f800001}, {0xffffffff}, {0x4b000001}}),
            (S{"1", "0.1", "-0", "1e-45", "3.4028235e+38", "0x1p+128", "-0x1p+128", "0x1.8p+128",
               "0x1.000002p+128", "-0x1.fffffep+128", "8388609"}));
  EXPECT_EQ(printed({16}, {{0x3c00}, {0x2e66}, {0x0001}, {0x7bff}, {0x7c00}, {0xfc00}, {0x7e00}, {0x8000}}),
            (S{"1", "0.1", "6e-08", "65504", "0x1p+16", "-0x1p+16", "0x1.8p+16", "-0"}));
  EXPECT_EQ(printed({16, kFPEncodingBFloat16KHR}, {{0x3f80}, {0x3dcd}, {0x7f80}, {0x7fc0}, {0x0001}}),
            (S{"1", "0.1", "0x1p+128", "0x1.8p+128", "9e-41"}));
  EXPECT_EQ(printed({8, kFPEncodingFloat8E4M3EXT}, {{0x7e}, {0x7f}, {0xff}, {0x01}, {0x78}, {0x80}}),
            (S{"448", "0x1.ep+8", "-0x1.ep+8", "0.002", "256", "-0"}));
  EXPECT_EQ(printed({8, kFPEncodingFloat8E5M2EXT}, {{0x7b}, {0x7c}, {0x7e}, {0x01}}),
            (S{"57344", "0x1p+16", "0x1.8p+16", "2e-05"}));
  EXPECT_EQ(printed({64}, {{0x9999999a, 0x3fb99999}, {0, 0x7ff00000}, {1, 0x7ff00000}, {0, 0x80000000}, {1, 0}}),
            (S{"0.1", "0x1p+1024", "0x1.0000000000001p+1024", "-0", "5e-324"}));
  // High bits above the type's width are not a value of the type: raw bits.
  EXPECT_EQ(printed({16}, {{0x00013c00}}), (S{"0x00013c00"}));
}

TEST(SpirvTextRoundTrip, RandomFp32AndFp64Patterns) {
  std::mt19937 rng(7);
  std::vector<std::vector<uint32_t>> f32, f64;
  for (int i = 0; i < 20000; ++i) {
    f32.push_back({static_cast<uint32_t>(rng())});
    f64.push_back({static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng())});
  }
  for (uint32_t bits : {0x00000000u, 0x80000000u, 0x00800000u, 0x007fffffu, 0x7f7fffffu, 0xff7fffffu}) f32.push_back({bits});
  expect_round_trip(constants_module(kOpTypeFloat, {32}, f32), false);
  expect_round_trip(constants_module(kOpTypeFloat, {64}, f64), false);
  // The printed decimals are the shortest that read back: the same as std::to_chars.
  std::vector<std::string> texts = printed_literals(constants_module(kOpTypeFloat, {32}, f32));
  for (size_t i = 0; i < 200; ++i) {
    float f = std::bit_cast<float>(f32[i][0]);
    if (!std::isfinite(f)) continue;
    char buf[64];
    EXPECT_EQ(texts[i], std::string(buf, std::to_chars(buf, buf + sizeof buf, f).ptr));
  }
}

TEST(SpirvTextRoundTrip, IntegerWidthsAndSignedness) {
  using S = std::vector<std::string>;
  auto printed = [](uint32_t width, uint32_t sign, std::vector<std::vector<uint32_t>> literals) {
    std::vector<uint32_t> m = constants_module(kOpTypeInt, {width, sign}, literals);
    expect_round_trip(m);
    return printed_literals(m);
  };
  EXPECT_EQ(printed(8, 0, {{0}, {255}, {0xffffffff}}), (S{"0", "255", "0xffffffff"}));
  EXPECT_EQ(printed(8, 1, {{0xffffff80}, {127}, {0xff}, {0x80}}), (S{"-128", "127", "0x000000ff", "0x00000080"}));
  EXPECT_EQ(printed(16, 0, {{65535}, {0x10000}}), (S{"65535", "0x00010000"}));
  EXPECT_EQ(printed(16, 1, {{0xffff8000}, {0x7fff}}), (S{"-32768", "32767"}));
  EXPECT_EQ(printed(32, 0, {{0xffffffff}}), (S{"4294967295"}));
  EXPECT_EQ(printed(32, 1, {{0x80000000}, {0xffffffff}}), (S{"-2147483648", "-1"}));
  EXPECT_EQ(printed(64, 0, {{0xffffffff, 0xffffffff}, {0, 1}}), (S{"18446744073709551615", "4294967296"}));
  EXPECT_EQ(printed(64, 1, {{0, 0x80000000}, {0xfffffffe, 0xffffffff}}), (S{"-9223372036854775808", "-2"}));
  // Widths without decimal syntax print (and read) as raw bits.
  EXPECT_EQ(printed(100, 0, {{1, 2, 3, 4}}), (S{"0x00000004000000030000000200000001"}));
  EXPECT_EQ(printed(48, 1, {{0xffffffff, 0xffffffff}, {0, 0x8000}}), (S{"-1", "0x0000800000000000"}));
}

TEST(SpirvTextRoundTrip, StringsWithEscapesAndEveryPadding) {
  ModuleBuilder b;
  for (const char* s : {"", "abc", "abcd", "abcde", "a\"b", "\\", "\"\\\"", "semi;colon %id = OpName", "\n",
                        "caf\xc3\xa9"})
    b.op(kOpExtension, {std::string(s)});
  std::vector<uint32_t> words = b.words(1);
  expect_round_trip(words);
  std::vector<std::string> lines = body_lines(disassemble(words));
  EXPECT_EQ(lines[0], "OpExtension \"\"");
  EXPECT_EQ(lines[4], "OpExtension \"a\\\"b\"");
  EXPECT_EQ(lines[5], "OpExtension \"\\\\\"");
}

TEST(SpirvTextRoundTrip, FriendlyNamesAreSanitizedAndUnique) {
  // OpName strings that clash with each other, with derived names, or look like numbers.
  ModuleBuilder b;
  b.op(kOpName, {1u, std::string("a.b")})
      .op(kOpName, {2u, std::string("a-b")})
      .op(kOpName, {3u, std::string("12")})
      .op(kOpName, {4u, std::string("uint")})
      .op(kOpName, {1u, std::string("second name ignored")})
      .op(kOpName, {5u, std::string("")})
      .op(kOpTypeInt, {6u, 32u, 0u})
      .op(kOpTypeInt, {4u, 32u, 0u})
      .op(kOpTypeInt, {5u, 8u, 1u})
      .op(kOpConstant, {6u, 7u, 4u})
      .op(kOpConstant, {5u, 8u, 0xffffffffu})
      .op(kOpConstant, {6u, 9u, 4u})
      .op(kOpTypeBool, {1u})
      .op(kOpTypeBool, {2u})
      .op(kOpTypeBool, {3u});
  std::vector<uint32_t> words = b.words(10);
  Disassembler d(words);
  EXPECT_EQ(d.id_name(1), "%a_b");
  EXPECT_EQ(d.id_name(2), "%a_b_1");
  EXPECT_EQ(d.id_name(3), "%_12");
  EXPECT_EQ(d.id_name(4), "%uint");
  EXPECT_EQ(d.id_name(6), "%uint_1");  // derived "uint" is taken by the OpName
  EXPECT_EQ(d.id_name(5), "%char");    // empty OpName: derived name
  EXPECT_EQ(d.id_name(7), "%uint_1_4");
  EXPECT_EQ(d.id_name(8), "%char_n1");
  EXPECT_EQ(d.id_name(9), "%uint_1_4_1");
  expect_round_trip(words);
}

TEST(SpirvTextRoundTrip, DerivedNames) {
  ModuleBuilder b;
  b.op(kOpTypeVoid, {1u})
      .op(kOpTypeBool, {2u})
      .op(kOpTypeInt, {3u, 16u, 1u})
      .op(kOpTypeInt, {4u, 64u, 0u})
      .op(kOpTypeFloat, {5u, 16u})
      .op(kOpTypeFloat, {6u, 16u, kFPEncodingBFloat16KHR})
      .op(kOpTypeFloat, {7u, 8u, kFPEncodingFloat8E4M3EXT})
      .op(kOpTypeFloat, {8u, 8u, kFPEncodingFloat8E5M2EXT})
      .op(kOpTypeFloat, {9u, 64u})
      .op(kOpConstant, {5u, 10u, 0x3800u})
      .op(kOpConstant, {3u, 11u, 0xfffffffbu})
      .op(kOpConstantTrue, {2u, 12u})
      .op(kOpConstantFalse, {2u, 13u})
      .op(kOpTypeRuntimeArray, {14u, 5u})
      .op(kOpTypeStruct, {15u, 5u, 6u})
      .op(kOpConstant, {4u, 16u, 0u, 0u})
      .op(kOpTypeTensorARM, {17u, 7u, 16u})
      .op(kOpTypeTensorARM, {18u, 8u})
      .op(kOpGraphConstantARM, {17u, 19u, 3u})
      .op(kOpExtInstImport, {20u, std::string("GLSL.std.450")})
      .op(kOpConstant, {5u, 21u, 0x7c00u});
  Disassembler d(b.words(22));
  const char* expected[] = {"",        "%void",        "%bool",          "%short",           "%ulong",
                            "%half",   "%bfloat16",    "%fp8e4m3",       "%fp8e5m2",         "%double",
                            "%half_0_5", "%short_n5",  "%true",          "%false",           "%_runtimearr_half",
                            "%_struct_15", "%ulong_0", "%tensor_fp8e4m3_r0", "%tensor_fp8e5m2", "%graph_constant_3",
                            "%GLSL_std_450", "%half_0x1p16"};
  for (uint32_t id = 1; id < 22; ++id) EXPECT_EQ(d.id_name(id), expected[id]) << id;
  expect_round_trip(b.words(22));
}

TEST(SpirvTextRoundTrip, HeaderFieldsAndLargeBound) {
  std::vector<uint32_t> words = ModuleBuilder().op(kOpTypeBool, {1u}).words(1000, 0x00010300, 0x00080005);
  words[4] = 0;
  std::string text = disassemble(words);
  EXPECT_NE(text.find("; Version: 1.3\n; Generator: 8; 5\n; Bound: 1000\n; Schema: 0\n"), std::string::npos) << text;
  expect_same_words(assemble(text), words);
  // A version word that is not major.minor prints raw and still round-trips.
  words[1] = 0x01010601;
  text = disassemble(words);
  EXPECT_NE(text.find("; Version: 0x01010601\n"), std::string::npos) << text;
  expect_same_words(assemble(text), words);
}

TEST(SpirvTextRoundTrip, UnparsableInstructionsAsRawWords) {
  std::vector<uint32_t> words = ModuleBuilder()
                                    .op(9999, {1u, 2u})                        // unknown opcode
                                    .op(kOpTypeInt, {1u, 32u})                 // too few operands
                                    .op(kOpCapability, {123456u})              // unknown enumerant
                                    .op(kOpExtension, {0x61616161u})           // unterminated string
                                    .op(kOpExtension, {0x00ff0061u})           // nonzero padding
                                    .op(kOpTypeBool, {1u, 2u})                 // extra word
                                    .words(1);
  std::vector<std::string> lines = body_lines(disassemble(words));
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_TRUE(lines[0].starts_with("OpUnknown(9999) 0x00000001 0x00000002 ; ")) << lines[0];
  EXPECT_NE(lines[0].find("unknown opcode 9999"), std::string::npos) << lines[0];
  EXPECT_TRUE(lines[1].starts_with("OpUnknown(21) 0x00000001 0x00000020 ; ")) << lines[1];
  EXPECT_TRUE(lines[2].starts_with("OpUnknown(17) 0x0001e240 ; ")) << lines[2];
  EXPECT_TRUE(lines[3].starts_with("OpUnknown(10) 0x61616161 ; ")) << lines[3];
  EXPECT_TRUE(lines[4].starts_with("OpUnknown(10) 0x00ff0061 ; ")) << lines[4];
  EXPECT_TRUE(lines[5].starts_with("OpUnknown(20) 0x00000001 0x00000002 ; ")) << lines[5];
  expect_round_trip(words);
}

}  // namespace
}  // namespace weft::spirv
