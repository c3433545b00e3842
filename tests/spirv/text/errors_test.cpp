// Malformed assembly: each error is an Error(kParse) at the exact file:line:column, saying what was
// expected.
#include <gtest/gtest.h>

#include "weft/spirv.h"

namespace weft::spirv {
namespace {

void expect_error(const std::string& text, int line, int column, const std::string& message_part) {
  SCOPED_TRACE(text);
  try {
    assemble(text, "test.spvasm");
    ADD_FAILURE() << "assembled without error; expected: " << message_part;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse) << e.what();
    EXPECT_EQ(e.location().file, "test.spvasm") << e.what();
    EXPECT_EQ(e.location().line, line) << e.what();
    EXPECT_EQ(e.location().column, column) << e.what();
    EXPECT_NE(e.message().find(message_part), std::string::npos) << e.what();
  }
}

const std::string kTypes = "%uint = OpTypeInt 32 0\n%uchar = OpTypeInt 8 0\n%char = OpTypeInt 8 1\n"
                           "%half = OpTypeFloat 16\n%float = OpTypeFloat 32\n";  // 5 lines

TEST(SpirvAssembleErrors, Instructions) {
  expect_error("OpCapability Shader\n  OpFoo %x", 2, 3, "unknown instruction 'OpFoo'");
  expect_error("\"x\"", 1, 1, "expected an instruction like OpTypeInt or %name = OpTypeInt, got a string");
  expect_error("OpCapability Shader\nfoo", 2, 1, "too many operands for OpCapability: unexpected 'foo'");
  expect_error("= OpCapability Shader", 1, 1, "expected an instruction like OpTypeInt or %name = OpTypeInt, got '='");
  expect_error("%x = ", 1, 6, "expected an instruction like OpTypeInt or %name = OpTypeInt, got the end of the input");
  expect_error("OpTypeInt 32 0", 1, 1, "OpTypeInt has a result: write %name = OpTypeInt");
  expect_error("  %x = OpCapability Shader", 1, 3, "OpCapability has no result id");
  expect_error("OpUnknown(70000) 1", 1, 1, "expected OpUnknown(<opcode 0 to 65535>)");
}

TEST(SpirvAssembleErrors, OperandCounts) {
  expect_error("OpCapability Shader Float16", 1, 21, "too many operands for OpCapability: unexpected 'Float16'");
  expect_error("%t = OpTypeInt 32\n%u = OpTypeBool", 1, 18,
               "too few operands for OpTypeInt: expected LiteralInteger 'Signedness'");
  expect_error("OpMemoryModel Logical", 1, 22, "too few operands for OpMemoryModel: expected MemoryModel");
  expect_error("OpDecorate %x Binding", 1, 22, "too few operands for OpDecorate: expected LiteralInteger");
  expect_error("%b = OpTypeBool %b", 1, 17, "too many operands for OpTypeBool: unexpected '%b'");
}

TEST(SpirvAssembleErrors, OperandKinds) {
  expect_error("OpName foo \"x\"", 1, 8, "expected an id like %name, got 'foo'");
  expect_error("OpName % \"x\"", 1, 8, "expected an id like %name after '%'");
  expect_error("OpExtension foo", 1, 13, "expected a string in double quotes, got 'foo'");
  expect_error("OpName %x \"abc", 1, 11, "unterminated string");
  expect_error("OpName %x \"abc\\\"", 1, 11, "unterminated string");
  expect_error("OpCapability Foo", 1, 14, "unknown Capability 'Foo'");
  expect_error("OpCapability 99999", 1, 14, "unknown Capability 99999");
  expect_error("OpCapability %x", 1, 14, "expected a Capability name, got '%x'");
  expect_error("OpMemoryModel Logical GLSL", 1, 23, "unknown MemoryModel 'GLSL'");
  expect_error("OpDecorate %x Bindin 3", 1, 15, "unknown Decoration 'Bindin'");
  expect_error("%t = OpTypeFloat 16 BFloat16", 1, 21, "unknown FPEncoding 'BFloat16'");
  expect_error("%t = OpTypeInt 4294967296 0", 1, 16, "literal 4294967296 out of range for a LiteralInteger");
  expect_error("%t = OpTypeInt -1 0", 1, 16, "literal -1 out of range for a LiteralInteger");
  expect_error("%t = OpTypeInt x 0", 1, 16, "expected a LiteralInteger, got 'x'");
  expect_error("%4294967296 = OpTypeBool", 1, 1, "id %4294967296 out of range");
}

TEST(SpirvAssembleErrors, ExtendedInstructions) {
  std::string prefix = "%tosa = OpExtInstImport \"TOSA.001000.1\"\n%glsl = OpExtInstImport \"GLSL.std.450\"\n";
  expect_error(prefix + "%r = OpExtInst %t %tosa CONV9D %a", 3, 25, "unknown TOSA.001000.1 instruction 'CONV9D'");
  expect_error(prefix + "%r = OpExtInst %t %tosa IDENTITY %a", 3, 25, "IDENTITY has no TOSA.001000.1 instruction");
  expect_error(prefix + "%r = OpExtInst %t %glsl CONV2D %a", 3, 25, "unknown GLSL.std.450 instruction 'CONV2D'");
  expect_error(prefix + "%r = OpExtInst %t %glsl FMin %a", 3, 32, "too few operands for OpExtInst");
  expect_error(prefix + "%r = OpExtInst %t %glsl Cos %a %a", 3, 32, "too many operands for OpExtInst");
  // The set must be imported before its use for names to be known.
  expect_error("%r = OpExtInst %t %tosa CONV2D %a\n%tosa = OpExtInstImport \"TOSA.001000.1\"", 1, 25,
               "expected an extended instruction number");
}

TEST(SpirvAssembleErrors, ConstantLiterals) {
  expect_error(kTypes + "%c = OpConstant %uchar 256", 6, 24, "literal 256 out of range for 8-bit unsigned integer (0 to 255)");
  expect_error(kTypes + "%c = OpConstant %uchar -1", 6, 24, "literal -1 out of range for 8-bit unsigned integer");
  expect_error(kTypes + "%c = OpConstant %char -129", 6, 23, "literal -129 out of range for 8-bit signed integer (-128 to 127)");
  expect_error(kTypes + "%c = OpConstant %char 128", 6, 23, "out of range for 8-bit signed integer");
  expect_error(kTypes + "%c = OpConstant %uint 99999999999999999999", 6, 23, "out of range for 32-bit unsigned integer");
  expect_error(kTypes + "%c = OpConstant %uint 1.5", 6, 23, "expected a 32-bit unsigned integer literal, got '1.5'");
  expect_error(kTypes + "%c = OpConstant %uint 0x100000000", 6, 23, "hex literal '0x100000000' does not fit");
  expect_error(kTypes + "%c = OpConstant %half 65520", 6, 23, "literal 65520 out of range for 16-bit float");
  expect_error(kTypes + "%c = OpConstant %float 1e39", 6, 24, "literal 1e39 out of range for 32-bit float");
  expect_error(kTypes + "%c = OpConstant %float abc", 6, 24, "expected a 32-bit float literal");
  expect_error(kTypes + "%c = OpConstant %float inf", 6, 24, "expected a 32-bit float literal");
  expect_error(kTypes + "%c = OpConstant %float 0x1.0000001p+128", 6, 24, "out of range for 32-bit float");
  expect_error(kTypes + "%c = OpConstant %float \"1\"", 6, 24, "expected a number, got a string");
  // The literal's width comes from its type, which must come first.
  expect_error("%c = OpConstant %t 1\n%t = OpTypeInt 32 0", 1, 20, "must be declared earlier in the text");
}

TEST(SpirvAssembleErrors, HeaderComments) {
  expect_error("; SPIR-V\n; Version: one\n", 2, 12, "malformed header comment: Version expects <major>.<minor>");
  expect_error("; SPIR-V\n;   Bound: -3\n", 2, 12, "malformed header comment: Bound expects a number");
  expect_error("; SPIR-V\n; Generator: Acme; 2\n", 2, 14, "Generator expects <tool>; <version>");
}

TEST(SpirvAssembleErrors, SourceNameInLocation) {
  try {
    assemble("OpFoo", "model.spvasm");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("model.spvasm:1:1: unknown instruction 'OpFoo'", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace weft::spirv
