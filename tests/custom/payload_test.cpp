// parse_payload / write_payload: the "Vulkan shader in TOSA custom operation attributes" schema,
// Weft's extensions, unknown keys, base64; and the format / descriptor type tables.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "custom/base64.h"
#include "weft/custom.h"

namespace weft::custom {
namespace {

// The complete GLSL example of the schema, as written there.
constexpr const char* kGlslExample = R"({
  "entry_point": "main",
  "workgroup_sizes": [8, 8, 1],
  "shader_language": "GLSL",
  "shader_code": "void main() { }",

  "input_0_vkformat": "VK_FORMAT_R32_SFLOAT",
  "input_0_vkdescriptortype": "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER",
  "input_0_binding": 0,
  "input_0_descriptorset": 0,

  "output_0_vkformat": "VK_FORMAT_R32_SFLOAT",
  "output_0_vkdescriptortype": "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER",
  "output_0_binding": 1,
  "output_0_descriptorset": 0
})";

constexpr const char* kComputeGlsl = R"(#version 450
layout(local_size_x = 16, local_size_y = 16, local_size_z = 1) in;
layout(set = 0, binding = 0) buffer In { vec4 data[]; } src;
void main() { src.data[gl_GlobalInvocationID.x] *= 2.0; }
)";

// Runs `f`, expecting Error(kVerify) with location operand `operand` and a message containing
// every one of `parts`.
void expect_error(const std::function<void()>& f, const std::string& operand, std::vector<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one about " << operand;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kVerify) << e.what();
    EXPECT_EQ(e.location().operand, operand) << e.what();
    for (const std::string& p : parts) EXPECT_NE(e.message().find(p), std::string::npos) << "'" << p << "' not in: " << e.message();
  }
}

// A minimal valid payload plus `extra` members ("\"k\": v, ...").
std::string doc(const std::string& extra) {
  std::string s = R"({"entry_point": "main", "workgroup_sizes": [1, 1, 1])";
  if (!extra.empty()) s += ", " + extra;
  return s + "}";
}

void expect_payload_error(const std::string& extra, const std::string& operand, std::vector<std::string> parts) {
  Location where;
  where.node = "my_op";
  expect_error([&] { parse_payload(doc(extra), where); }, operand, parts);
}

std::string spirv_base64(const std::vector<uint32_t>& words) {
  std::vector<uint8_t> bytes;
  for (uint32_t w : words)
    for (int b = 0; b < 4; ++b) bytes.push_back(static_cast<uint8_t>(w >> (8 * b)));
  return base64_encode(bytes);
}

// ---- the schema's complete examples ---------------------------------------------------------------

TEST(Payload, GlslExampleOfTheSchema) {
  std::vector<std::string> warnings;
  Payload p = parse_payload(kGlslExample, {}, {}, &warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(p.entry_point, "main");
  EXPECT_EQ(p.workgroup_sizes, (std::array<uint32_t, 3>{8, 8, 1}));
  EXPECT_EQ(p.language, ShaderLanguage::kGlsl);
  EXPECT_EQ(p.shader_code, "void main() { }");
  EXPECT_TRUE(p.spirv.empty());
  ASSERT_EQ(p.inputs.size(), 1u);
  ASSERT_EQ(p.outputs.size(), 1u);
  const Resource* in = p.input(0);
  ASSERT_NE(in, nullptr);
  EXPECT_FALSE(in->output);
  EXPECT_EQ(in->vkformat, "VK_FORMAT_R32_SFLOAT");
  EXPECT_EQ(in->descriptor_type, "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER");
  EXPECT_EQ(in->binding, 0);
  EXPECT_EQ(in->descriptor_set, 0);
  EXPECT_FALSE(in->type.has_value());
  const Resource* out = p.output(0);
  ASSERT_NE(out, nullptr);
  EXPECT_TRUE(out->output);
  EXPECT_EQ(out->binding, 1);
  EXPECT_EQ(p.input(1), nullptr);
  EXPECT_EQ(p.output(3), nullptr);
  EXPECT_EQ(in->key("binding"), "input_0_binding");
  EXPECT_EQ(out->key("vkformat"), "output_0_vkformat");
}

TEST(Payload, SpirvExampleOfTheSchemaWithARealModule) {
  CompiledShader shader = compile_shader(ShaderLanguage::kGlsl, kComputeGlsl, {}, "main", "example.comp");
  std::string json = R"({
    "entry_point": "main",
    "workgroup_sizes": [16, 16, 1],
    "shader_language": "SPIR-V",
    "shader_code": ")" + spirv_base64(shader.spirv) + R"(",
    "input_0_vkformat": "VK_FORMAT_R32G32B32A32_SFLOAT",
    "input_0_vkdescriptortype": "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER",
    "input_0_binding": 0,
    "input_0_descriptorset": 0
  })";
  Payload p = parse_payload(json);
  EXPECT_EQ(p.language, ShaderLanguage::kSpirv);
  EXPECT_EQ(p.spirv, shader.spirv);
  EXPECT_EQ(p.spirv[0], 0x07230203u);
  EXPECT_EQ(p.workgroup_sizes, (std::array<uint32_t, 3>{16, 16, 1}));
  ASSERT_NE(p.input(0), nullptr);
  EXPECT_EQ(p.input(0)->vkformat, "VK_FORMAT_R32G32B32A32_SFLOAT");
  EXPECT_TRUE(p.outputs.empty());
  // The decoded module is what compile_shader takes as SPIR-V input.
  CompiledShader again = compile_shader(ShaderLanguage::kSpirv, "", p.spirv, p.entry_point, "payload");
  EXPECT_EQ(again.local_size, (std::array<uint32_t, 3>{16, 16, 1}));
}

// ---- one test per rule ----------------------------------------------------------------------------

TEST(PayloadRules, NotJsonReportsTheParserPosition) {
  expect_error([] { parse_payload("{\"entry_point\": \"main\",\n  \"workgroup_sizes\": [1,1,1] x}"); }, "",
               {"not valid JSON", "line 2, column"});
}

TEST(PayloadRules, DocumentMustBeAnObject) {
  expect_error([] { parse_payload("[1, 2]"); }, "", {"must be a JSON object", "array"});
}

TEST(PayloadRules, DuplicateKey) {
  expect_error([] { parse_payload(R"({"entry_point": "main", "entry_point": "f", "workgroup_sizes": [1,1,1]})"); },
               "entry_point", {"duplicate key 'entry_point'"});
}

TEST(PayloadRules, EntryPointRequired) {
  expect_error([] { parse_payload(R"({"workgroup_sizes": [1,1,1]})"); }, "entry_point",
               {"entry_point is required"});
}

TEST(PayloadRules, EntryPointNonEmptyString) {
  expect_error([] { parse_payload(R"({"entry_point": "", "workgroup_sizes": [1,1,1]})"); }, "entry_point",
               {"entry_point must be a non-empty string", "got \"\""});
  expect_error([] { parse_payload(R"({"entry_point": 3, "workgroup_sizes": [1,1,1]})"); }, "entry_point",
               {"entry_point must be a non-empty string (got 3)"});
}

TEST(PayloadRules, WorkgroupSizesRequired) {
  expect_error([] { parse_payload(R"({"entry_point": "main"})"); }, "workgroup_sizes", {"workgroup_sizes is required"});
}

TEST(PayloadRules, WorkgroupSizesExactlyThreeIntegersAtLeastOne) {
  auto wg = [](const std::string& v) { return R"({"entry_point": "main", "workgroup_sizes": )" + v + "}"; };
  const std::string rule = "workgroup_sizes must be an array of exactly 3 integers >= 1";
  expect_error([&] { parse_payload(wg("[8, 8]")); }, "workgroup_sizes", {rule + " (got 2 elements)"});
  expect_error([&] { parse_payload(wg("[8, 8, 1, 1]")); }, "workgroup_sizes", {rule + " (got 4 elements)"});
  expect_error([&] { parse_payload(wg("[8, 0, 1]")); }, "workgroup_sizes", {rule + " (element 1 is 0)"});
  expect_error([&] { parse_payload(wg("[8, -2, 1]")); }, "workgroup_sizes", {rule + " (element 1 is -2)"});
  expect_error([&] { parse_payload(wg("[8.0, 8, 1]")); }, "workgroup_sizes", {rule + " (element 0 is 8.0)"});
  expect_error([&] { parse_payload(wg("[8, 8, true]")); }, "workgroup_sizes", {rule + " (element 2 is true)"});
  expect_error([&] { parse_payload(wg("[8, \"8\", 1]")); }, "workgroup_sizes", {rule + " (element 1 is \"8\")"});
  expect_error([&] { parse_payload(wg("[4294967296, 1, 1]")); }, "workgroup_sizes",
               {rule + " (element 0 is 4294967296, above 4294967295)"});
  expect_error([&] { parse_payload(wg("8")); }, "workgroup_sizes", {rule + " (got 8)"});
  Payload p = parse_payload(wg("[4294967295, 1, 2]"));
  EXPECT_EQ(p.workgroup_sizes, (std::array<uint32_t, 3>{4294967295u, 1, 2}));
}

TEST(PayloadRules, ShaderLanguageEnumExactCase) {
  const std::string rule = "shader_language must be one of \"\", \"SPIR-V\", \"GLSL\", \"HLSL\"";
  expect_payload_error(R"("shader_language": "glsl")", "shader_language", {rule, "got \"glsl\""});
  expect_payload_error(R"("shader_language": "SPIRV")", "shader_language", {rule, "got \"SPIRV\""});
  expect_payload_error(R"("shader_language": 1)", "shader_language", {rule, "got 1"});
  EXPECT_EQ(parse_payload(doc(R"("shader_language": "")")).language, ShaderLanguage::kUnspecified);
  EXPECT_EQ(parse_payload(doc(R"("shader_language": "HLSL")")).language, ShaderLanguage::kHlsl);
  EXPECT_EQ(parse_payload(doc("")).language, ShaderLanguage::kUnspecified);
}

TEST(PayloadRules, ShaderCodeIsAString) {
  expect_payload_error(R"("shader_code": ["void main() {}"])", "shader_code", {"shader_code must be a string"});
}

TEST(PayloadRules, SpirvCodeMustBeBase64) {
  expect_payload_error(R"("shader_language": "SPIR-V", "shader_code": "void main() { }")", "shader_code",
                       {"shader_code (SPIR-V) is not valid base64", "length 15 is not a multiple of 4"});
  expect_payload_error(R"("shader_language": "SPIR-V", "shader_code": "AwIj BAA")", "shader_code",
                       {"shader_code (SPIR-V) is not valid base64", "whitespace"});
}

TEST(PayloadRules, SpirvCodeMustBeWholeWords) {
  // 21 bytes: the header plus one stray byte.
  std::vector<uint8_t> bytes = {0x03, 0x02, 0x23, 0x07};
  bytes.resize(21, 0);
  expect_payload_error("\"shader_language\": \"SPIR-V\", \"shader_code\": \"" + base64_encode(bytes) + "\"",
                       "shader_code", {"must decode to whole 32-bit words (got 21 bytes)"});
}

TEST(PayloadRules, SpirvCodeMustStartWithTheMagicNumber) {
  std::vector<uint8_t> bytes(20, 0);
  bytes[0] = 0x04;
  expect_payload_error("\"shader_language\": \"SPIR-V\", \"shader_code\": \"" + base64_encode(bytes) + "\"",
                       "shader_code", {"must start with the SPIR-V magic number 0x07230203", "got 0x00000004"});
  std::vector<uint8_t> big = {0x07, 0x23, 0x02, 0x03};
  big.resize(20, 0);
  expect_payload_error("\"shader_language\": \"SPIR-V\", \"shader_code\": \"" + base64_encode(big) + "\"",
                       "shader_code", {"big-endian"});
  expect_payload_error(R"("shader_language": "SPIR-V", "shader_code": "AwIjBw==")", "shader_code",
                       {"at least the 5-word module header (got 4 bytes)"});
}

TEST(PayloadRules, GlslCodeIsNotDecoded) {
  Payload p = parse_payload(doc(R"("shader_language": "GLSL", "shader_code": "not base64 at all")"));
  EXPECT_EQ(p.shader_code, "not base64 at all");
  EXPECT_TRUE(p.spirv.empty());
}

TEST(PayloadRules, PushConstantsNameSizePairs) {
  Payload p = parse_payload(doc(R"("push_constants": " scale :4 ,bias: 8,\t_n2 : 16 ")"));
  ASSERT_EQ(p.push_constants.size(), 3u);
  EXPECT_EQ(p.push_constants[0], (PushConstant{"scale", 4}));
  EXPECT_EQ(p.push_constants[1], (PushConstant{"bias", 8}));
  EXPECT_EQ(p.push_constants[2], (PushConstant{"_n2", 16}));
  EXPECT_EQ(p.push_constants_text, " scale :4 ,bias: 8,\t_n2 : 16 ");
  Payload none = parse_payload(doc(R"("push_constants": "  ")"));
  EXPECT_TRUE(none.push_constants.empty());
  EXPECT_EQ(none.push_constants_text, "  ");
}

TEST(PayloadRules, PushConstantsMalformed) {
  const std::string rule = "push_constants must be comma-separated \"name: size\" pairs";
  expect_payload_error(R"("push_constants": "scale 4")", "push_constants", {rule, "\"scale 4\" has no ':'"});
  expect_payload_error(R"("push_constants": "1x: 4")", "push_constants", {rule, "\"1x\" is not a C identifier"});
  expect_payload_error(R"("push_constants": "a-b: 4")", "push_constants", {rule, "\"a-b\" is not a C identifier"});
  expect_payload_error(R"("push_constants": "scale: 04")", "push_constants", {rule, "size \"04\""});
  expect_payload_error(R"("push_constants": "scale: +4")", "push_constants", {rule, "size \"+4\""});
  expect_payload_error(R"("push_constants": "scale: 0")", "push_constants", {rule, "size \"0\""});
  expect_payload_error(R"("push_constants": "scale: 4.0")", "push_constants", {rule, "size \"4.0\""});
  expect_payload_error(R"("push_constants": "scale: ")", "push_constants", {rule, "size \"\""});
  expect_payload_error(R"("push_constants": "scale: 4294967296")", "push_constants", {rule, "size \"4294967296\""});
  expect_payload_error(R"("push_constants": "a: 4,, b: 4")", "push_constants", {rule, "pair 2 is empty"});
  expect_payload_error(R"("push_constants": "a: 4,")", "push_constants", {rule, "pair 2 is empty"});
  expect_payload_error(R"("push_constants": 4)", "push_constants", {"push_constants must be a string"});
}

TEST(PayloadRules, PushConstantsDuplicateName) {
  expect_payload_error(R"("push_constants": "scale: 4, bias: 4, scale: 4")", "push_constants",
                       {"push_constants names 'scale' twice"});
}

TEST(PayloadRules, IndexedKeysWithoutLeadingZeros) {
  Payload p = parse_payload(doc(R"("input_0_binding": 0, "input_10_binding": 3, "output_7_binding": 1)"));
  ASSERT_EQ(p.inputs.size(), 2u);
  EXPECT_EQ(p.inputs[0].index, 0u);
  EXPECT_EQ(p.inputs[1].index, 10u);  // sorted numerically, not as text
  EXPECT_EQ(p.input(10)->binding, 3);
  ASSERT_EQ(p.outputs.size(), 1u);
  EXPECT_EQ(p.outputs[0].index, 7u);
  const std::string naming = "breaks the resource key naming rule input_<index>_<property>";
  expect_payload_error(R"("input_01_binding": 0)", "input_01_binding", {naming, "index '01' has a leading zero"});
  expect_payload_error(R"("output_00_binding": 0)", "output_00_binding", {naming, "leading zero"});
  expect_payload_error(R"("input_-1_binding": 0)", "input_-1_binding", {naming, "no index"});
  expect_payload_error(R"("input_x_binding": 0)", "input_x_binding", {naming, "no index"});
  expect_payload_error(R"("input_0_": 0)", "input_0_", {naming, "empty property"});
  expect_payload_error(R"("input_0": 0)", "input_0", {naming, "must be followed by '_<property>'"});
  expect_payload_error(R"("input_0x_binding": 0)", "input_0x_binding", {naming, "must be followed by '_<property>'"});
}

TEST(PayloadRules, MalformedIndexedKeysAreErrorsEvenWhenKeepingUnknownKeys) {
  ParseOptions keep;
  keep.unknown_keys = ParseOptions::Unknown::kKeep;
  expect_error([&] { parse_payload(doc(R"("input_01_foo": 0)"), {}, keep); }, "input_01_foo", {"leading zero"});
}

TEST(PayloadRules, IndexCap) {
  Payload p = parse_payload(doc(R"("input_65535_binding": 0)"));
  EXPECT_EQ(p.inputs.at(0).index, 65535u);
  expect_payload_error(R"("input_65536_binding": 0)", "input_65536_binding", {"resource index 65536 is above 65535"});
  expect_payload_error(R"("output_123456789012_binding": 0)", "output_123456789012_binding",
                       {"resource index 123456789012 is above 65535"});
}

TEST(PayloadRules, VkFormatMustBeKnown) {
  expect_payload_error(R"("input_0_vkformat": "VK_FORMAT_R8G8B8A8_UNORM")", "input_0_vkformat",
                       {"input_0_vkformat must be a VkFormat name Weft knows", "got \"VK_FORMAT_R8G8B8A8_UNORM\""});
  expect_payload_error(R"("output_2_vkformat": 100)", "output_2_vkformat", {"output_2_vkformat must be", "got 100"});
  EXPECT_EQ(parse_payload(doc(R"("input_0_vkformat": "VK_FORMAT_R8_BOOL_ARM")")).inputs[0].vkformat,
            "VK_FORMAT_R8_BOOL_ARM");
}

TEST(PayloadRules, DescriptorTypePattern) {
  const std::string rule = "input_0_vkdescriptortype must match VK_DESCRIPTOR_TYPE_[A-Z0-9_]+";
  expect_payload_error(R"("input_0_vkdescriptortype": "VK_DESCRIPTOR_TYPE_storage_buffer")", "input_0_vkdescriptortype",
                       {rule, "got \"VK_DESCRIPTOR_TYPE_storage_buffer\""});
  expect_payload_error(R"("input_0_vkdescriptortype": "STORAGE_BUFFER")", "input_0_vkdescriptortype", {rule});
  expect_payload_error(R"("input_0_vkdescriptortype": "VK_DESCRIPTOR_TYPE_")", "input_0_vkdescriptortype", {rule});
  expect_payload_error(R"("input_0_vkdescriptortype": 7)", "input_0_vkdescriptortype",
                       {"input_0_vkdescriptortype must be a string matching VK_DESCRIPTOR_TYPE_[A-Z0-9_]+ (got 7)"});
  // The schema only constrains the pattern: an unknown name is kept (check_contract judges it).
  Payload p = parse_payload(doc(R"("input_0_vkdescriptortype": "VK_DESCRIPTOR_TYPE_FUTURE_THING_2")"));
  EXPECT_EQ(p.inputs.at(0).descriptor_type, "VK_DESCRIPTOR_TYPE_FUTURE_THING_2");
  p = parse_payload(doc(R"("input_0_vkdescriptortype": "VK_DESCRIPTOR_TYPE_STORAGE_TENSOR_EXT")"));
  EXPECT_EQ(p.inputs.at(0).descriptor_type, "VK_DESCRIPTOR_TYPE_STORAGE_TENSOR_EXT");
}

TEST(PayloadRules, TypeIsANonEmptyString) {
  expect_payload_error(R"("input_0_type": "")", "input_0_type", {"input_0_type must be a non-empty string"});
  expect_payload_error(R"("input_0_type": 1)", "input_0_type", {"input_0_type must be a non-empty string", "got 1"});
  EXPECT_EQ(parse_payload(doc(R"("input_0_type": "Image")")).inputs.at(0).type, "Image");
  EXPECT_EQ(parse_payload(doc(R"("input_0_type": "Texture")")).inputs.at(0).type, "Texture");
}

TEST(PayloadRules, BindingAndSetAreIntegersAtLeastZero) {
  const std::string rule = "must be an integer >= 0";
  expect_payload_error(R"("input_0_binding": -1)", "input_0_binding", {"input_0_binding " + rule, "got -1"});
  expect_payload_error(R"("input_0_binding": 1.0)", "input_0_binding", {rule, "got 1.0"});
  expect_payload_error(R"("input_0_binding": "1")", "input_0_binding", {rule, "got \"1\""});
  expect_payload_error(R"("input_0_binding": true)", "input_0_binding", {rule, "got true"});
  expect_payload_error(R"("output_3_descriptorset": 0.5)", "output_3_descriptorset",
                       {"output_3_descriptorset " + rule, "got 0.5"});
  expect_payload_error(R"("output_3_descriptorset": 4294967296)", "output_3_descriptorset", {rule});
  Payload p = parse_payload(doc(R"("output_3_descriptorset": 2, "output_3_binding": 4294967295)"));
  EXPECT_EQ(p.output(3)->descriptor_set, 2);
  EXPECT_EQ(p.output(3)->binding, 4294967295);
}

TEST(PayloadRules, SamplerExtensions) {
  Payload p = parse_payload(doc(R"("input_1_weft_filter": "nearest", "input_1_weft_address_mode": "mirrored_repeat")"));
  EXPECT_EQ(p.input(1)->filter, "nearest");
  EXPECT_EQ(p.input(1)->address_mode, "mirrored_repeat");
  expect_payload_error(R"("input_1_weft_filter": "cubic")", "input_1_weft_filter",
                       {"input_1_weft_filter must be one of \"nearest\" or \"linear\"", "got \"cubic\""});
  expect_payload_error(R"("input_1_weft_address_mode": "wrap")", "input_1_weft_address_mode",
                       {"\"clamp_to_edge\", \"repeat\", \"mirrored_repeat\" or \"clamp_to_border\"", "got \"wrap\""});
}

TEST(PayloadRules, PushConstantDataSizeMustMatch) {
  Payload p = parse_payload(doc(R"("push_constants": "a: 4, b: 2", "weft_push_constant_data": "AACAPwEA")"));
  EXPECT_EQ(p.push_constant_data, (std::vector<uint8_t>{0x00, 0x00, 0x80, 0x3F, 0x01, 0x00}));
  expect_payload_error(R"("push_constants": "a: 4, b: 4", "weft_push_constant_data": "AACAPw==")",
                       "weft_push_constant_data", {"sum of the push_constants sizes (8 bytes; got 4 bytes)"});
  expect_payload_error(R"("weft_push_constant_data": "AACAPw==")", "weft_push_constant_data",
                       {"(0 bytes; got 4 bytes)"});
  expect_payload_error(R"("push_constants": "a: 4", "weft_push_constant_data": "AACAP")", "weft_push_constant_data",
                       {"weft_push_constant_data is not valid base64"});
}

TEST(PayloadRules, Dispatch) {
  Payload p = parse_payload(doc(R"("weft_dispatch": [4, 2, 1])"));
  EXPECT_EQ(p.dispatch, (std::array<uint32_t, 3>{4, 2, 1}));
  expect_payload_error(R"("weft_dispatch": [4, 0, 1])", "weft_dispatch",
                       {"weft_dispatch must be an array of exactly 3 integers >= 1 (element 1 is 0)"});
  expect_payload_error(R"("weft_dispatch": [4, 1])", "weft_dispatch", {"(got 2 elements)"});
}

TEST(PayloadRules, ErrorLocationKeepsTheCallersFields) {
  Location where;
  where.graph = "main";
  where.node = "custom_1";
  try {
    parse_payload(doc(R"("input_0_binding": -1)"), where);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.location().graph, "main");
    EXPECT_EQ(e.location().node, "custom_1");
    EXPECT_EQ(e.location().operand, "input_0_binding");
  }
}

// ---- unknown keys ------------------------------------------------------------------------------------

TEST(PayloadUnknown, KeptVerbatimWithAWarning) {
  std::vector<std::string> warnings;
  Payload p = parse_payload(doc(R"("future_key": {"b": [1, 2.5], "a": null}, "input_0_stride": 16, "input_0_binding": 2)"),
                            {}, {}, &warnings);
  ASSERT_EQ(p.unknown.size(), 2u);
  EXPECT_EQ(p.unknown[0].first, "future_key");
  EXPECT_EQ(p.unknown[0].second, R"({"a":null,"b":[1,2.5]})");
  EXPECT_EQ(p.unknown[1].first, "input_0_stride");
  EXPECT_EQ(p.unknown[1].second, "16");
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("unknown key 'future_key'"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find("unknown key 'input_0_stride'"), std::string::npos) << warnings[1];
  EXPECT_NE(warnings[1].find("'stride'"), std::string::npos) << warnings[1];
  EXPECT_EQ(p.input(0)->binding, 2);
  // Written back unchanged.
  std::string text = write_payload(p);
  EXPECT_NE(text.find(R"("future_key":{"a":null,"b":[1,2.5]})"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("input_0_stride":16)"), std::string::npos) << text;
  EXPECT_EQ(parse_payload(text), p);
}

TEST(PayloadUnknown, RejectedInStrictMode) {
  ParseOptions strict;
  strict.unknown_keys = ParseOptions::Unknown::kReject;
  expect_error([&] { parse_payload(doc(R"("future_key": 1)"), {}, strict); }, "future_key",
               {"unknown key 'future_key'", "rejected"});
  expect_error([&] { parse_payload(doc(R"("output_1_stride": 1)"), {}, strict); }, "output_1_stride",
               {"unknown key 'output_1_stride'", "'stride'"});
  // Known keys are fine in strict mode.
  EXPECT_NO_THROW(parse_payload(kGlslExample, {}, strict));
}

// ---- write_payload --------------------------------------------------------------------------------------

TEST(PayloadWrite, RoundTripOfEveryField) {
  CompiledShader shader = compile_shader(ShaderLanguage::kGlsl, kComputeGlsl, {}, "main", "rt.comp");
  Payload p;
  p.entry_point = "main";
  p.workgroup_sizes = {16, 16, 1};
  p.language = ShaderLanguage::kSpirv;
  p.spirv = shader.spirv;
  p.shader_code = spirv_base64(shader.spirv);
  p.push_constants_text = "scale: 4, bias: 4";
  p.push_constants = {{"scale", 4}, {"bias", 4}};
  p.push_constant_data = {1, 2, 3, 4, 5, 6, 7, 8};
  p.dispatch = std::array<uint32_t, 3>{3, 2, 1};
  Resource in0;
  in0.index = 0;
  in0.vkformat = "VK_FORMAT_R32G32B32A32_SFLOAT";
  in0.descriptor_type = "VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER";
  in0.type = "Image";
  in0.binding = 0;
  in0.descriptor_set = 1;
  in0.filter = "nearest";
  in0.address_mode = "repeat";
  Resource in12;
  in12.index = 12;
  in12.binding = 5;
  Resource out0;
  out0.output = true;
  out0.vkformat = "VK_FORMAT_R32_SFLOAT";
  out0.descriptor_type = "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER";
  out0.binding = 1;
  out0.descriptor_set = 0;
  p.inputs = {in0, in12};
  p.outputs = {out0};
  p.unknown = {{"zz_vendor", R"({"k":[true,"x"]})"}};

  std::string text = write_payload(p);
  EXPECT_EQ(text.find('\n'), std::string::npos);
  EXPECT_EQ(text.rfind(R"({"entry_point":"main","input_0_binding":0,)", 0), 0u) << text;  // keys sorted
  Payload back = parse_payload(text);
  EXPECT_EQ(back, p);
  EXPECT_EQ(write_payload(back), text);  // deterministic
}

TEST(PayloadWrite, OnlyPresentFieldsAreWritten) {
  Payload p = parse_payload(doc(""));
  EXPECT_EQ(write_payload(p), R"({"entry_point":"main","workgroup_sizes":[1,1,1]})");
  Payload g = parse_payload(kGlslExample);
  EXPECT_EQ(parse_payload(write_payload(g)), g);
}

TEST(PayloadWrite, PushConstantsTextFromTheListWhenAbsent) {
  Payload p = parse_payload(doc(""));
  p.push_constants = {{"a", 4}, {"b", 8}};
  Payload back = parse_payload(write_payload(p));
  EXPECT_EQ(back.push_constants, p.push_constants);
  EXPECT_EQ(back.push_constants_text, "a: 4, b: 8");
}

TEST(PayloadWrite, SpirvIsWrittenFromTheWords) {
  CompiledShader shader = compile_shader(ShaderLanguage::kGlsl, kComputeGlsl, {}, "main", "w.comp");
  Payload p = parse_payload(doc(R"("shader_language": "SPIR-V")"));
  p.spirv = shader.spirv;
  Payload back = parse_payload(write_payload(p));
  EXPECT_EQ(back.spirv, shader.spirv);
  EXPECT_EQ(back.shader_code, spirv_base64(shader.spirv));
}

// ---- base64 -------------------------------------------------------------------------------------------------

std::vector<uint8_t> bytes_of(std::string_view s) { return {s.begin(), s.end()}; }

TEST(Base64, Rfc4648TestVectors) {
  const std::pair<const char*, const char*> vectors[] = {{"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},  {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, coded] : vectors) {
    EXPECT_EQ(base64_encode(bytes_of(plain)), coded);
    EXPECT_EQ(base64_decode(coded), bytes_of(plain)) << coded;
  }
}

TEST(Base64, EveryByteValueRoundTrips) {
  std::vector<uint8_t> all(256);
  for (int i = 0; i < 256; ++i) all[i] = static_cast<uint8_t>(i);
  for (size_t n = 0; n <= all.size(); n += 37) {
    std::vector<uint8_t> part(all.begin(), all.begin() + n);
    EXPECT_EQ(base64_decode(base64_encode(part)), part);
  }
  EXPECT_EQ(base64_encode(std::vector<uint8_t>{0xFB, 0xFF, 0xBF}), "+/+/");
}

void expect_base64_error(std::string_view text, const std::string& part) {
  try {
    base64_decode(text, "blob");
    ADD_FAILURE() << "'" << text << "' decoded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(e.message().find("blob is not valid base64"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find(part), std::string::npos) << "'" << part << "' not in: " << e.message();
  }
}

TEST(Base64, StrictDecoding) {
  expect_base64_error("Zg", "length 2 is not a multiple of 4");
  expect_base64_error("Zg=", "length 3 is not a multiple of 4");
  expect_base64_error("Zm9vYg", "padding with '=' is required");
  expect_base64_error("Zm9 ", "whitespace");
  expect_base64_error("Zm9v\nYmFy===", "whitespace");
  expect_base64_error("Zm9v-_==", "character '-' at offset 4 is outside the alphabet");
  expect_base64_error("Zm9\x80", "character 0x80 at offset 3");
  expect_base64_error("Z===", "'=' at offset 1");
  expect_base64_error("=Zg=", "'=' at offset 0");
  expect_base64_error("Zg==Zg==", "'=' at offset 2");
  expect_base64_error("Zh==", "non-zero unused bits");
  expect_base64_error("Zm9=", "non-zero unused bits");
}

// ---- formats and descriptor types ------------------------------------------------------------------------------

TEST(Formats, NamesAndValuesFromTheRegistry) {
  const FormatInfo* f = find_format("VK_FORMAT_R32G32_SFLOAT");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->value, 103u);
  EXPECT_EQ(f->components, 2);
  EXPECT_EQ(f->component_bytes, 4);
  EXPECT_EQ(f->kind, 'f');
  EXPECT_EQ(find_format(103u), f);
  const std::pair<const char*, uint32_t> samples[] = {
      {"VK_FORMAT_R8_UINT", 13},
      {"VK_FORMAT_R8G8B8_SINT", 28},
      {"VK_FORMAT_R8G8B8A8_SINT", 42},
      {"VK_FORMAT_R16_SFLOAT", 76},
      {"VK_FORMAT_R16G16B16_SFLOAT", 90},
      {"VK_FORMAT_R16G16B16A16_UINT", 95},
      {"VK_FORMAT_R32_SINT", 99},
      {"VK_FORMAT_R32G32B32_SFLOAT", 106},
      {"VK_FORMAT_R32G32B32A32_SFLOAT", 109},
      {"VK_FORMAT_R64_SFLOAT", 112},
      {"VK_FORMAT_R64G64B64A64_SFLOAT", 121},
      {"VK_FORMAT_R8_BOOL_ARM", 1000460000},
      {"VK_FORMAT_R16_SFLOAT_FPENCODING_BFLOAT16_ARM", 1000460001},
      {"VK_FORMAT_R8_SFLOAT_FPENCODING_FLOAT8E4M3_ARM", 1000460002},
      {"VK_FORMAT_R8_SFLOAT_FPENCODING_FLOAT8E5M2_ARM", 1000460003},
  };
  for (const auto& [name, value] : samples) {
    const FormatInfo* g = find_format(name);
    ASSERT_NE(g, nullptr) << name;
    EXPECT_EQ(g->value, value) << name;
    EXPECT_EQ(find_format(value), g) << name;
    EXPECT_STREQ(g->name, name);
  }
  EXPECT_EQ(find_format("VK_FORMAT_R8_SFLOAT"), nullptr);  // no such Vulkan format
  EXPECT_EQ(find_format("VK_FORMAT_R8G8B8A8_UNORM"), nullptr);
  EXPECT_EQ(find_format(37u), nullptr);
  EXPECT_EQ(find_format("VK_FORMAT_R64G64B64_UINT")->components, 3);
  EXPECT_EQ(find_format("VK_FORMAT_R64G64B64_UINT")->component_bytes, 8);
  EXPECT_EQ(find_format("VK_FORMAT_R16G16_SINT")->kind, 'i');
}

TEST(Formats, DescriptorTypes) {
  EXPECT_EQ(descriptor_type_value("VK_DESCRIPTOR_TYPE_SAMPLER"), 0u);
  EXPECT_EQ(descriptor_type_value("VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER"), 1u);
  EXPECT_EQ(descriptor_type_value("VK_DESCRIPTOR_TYPE_STORAGE_IMAGE"), 3u);
  EXPECT_EQ(descriptor_type_value("VK_DESCRIPTOR_TYPE_STORAGE_BUFFER"), 7u);
  EXPECT_EQ(descriptor_type_value("VK_DESCRIPTOR_TYPE_INPUT_ATTACHMENT"), 10u);
  EXPECT_EQ(descriptor_type_value("VK_DESCRIPTOR_TYPE_TENSOR_ARM"), 1000460000u);
  EXPECT_EQ(descriptor_type_value("VK_DESCRIPTOR_TYPE_STORAGE_TENSOR_EXT"), 1000460000u);
  EXPECT_EQ(descriptor_type_value("VK_DESCRIPTOR_TYPE_FUTURE"), std::nullopt);
  EXPECT_EQ(descriptor_type_name(7), "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER");
  EXPECT_EQ(descriptor_type_name(1000460000), "VK_DESCRIPTOR_TYPE_TENSOR_ARM");
  EXPECT_EQ(descriptor_type_name(424242), "424242");
}

// Fuzzing regressions (fuzz/payload_fuzz.cpp).

// A number beyond double ("1e400") made nlohmann throw out_of_range, which escaped as a
// non-weft exception; it is invalid JSON like any other syntax error.
TEST(PayloadFuzz, NumberOverflowIsAnError) {
  expect_error([] { parse_payload(doc(R"("future_key": 99e99999)")); }, "", {"is not valid JSON", "overflow"});
  expect_error([] { parse_payload(R"({"entry_point": "main", "workgroup_sizes": [1, 1, -1e400]})"); }, "",
               {"is not valid JSON"});
}

// Deeply nested unknown values overflowed the stack (json::dump() recursing while keeping the
// value verbatim); nesting is limited to 64 levels before the document is built.
TEST(PayloadFuzz, NestingDepthIsLimited) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  expect_error([&] { parse_payload(doc("\"future_key\": " + deep)); }, "", {"more than 64 levels deep"});
  const std::string deep_objects = [] {
    std::string s;
    for (int i = 0; i < 100000; ++i) s += "{\"a\":";
    return s + "1" + std::string(100000, '}');
  }();
  expect_error([&] { parse_payload(deep_objects); }, "", {"more than 64 levels deep"});
  // 64 levels (the document itself and 63 below it) are fine, and round-trip.
  const std::string ok = doc("\"future_key\": " + std::string(63, '[') + std::string(63, ']'));
  Payload p = parse_payload(ok);
  ASSERT_EQ(p.unknown.size(), 1u);
  EXPECT_EQ(parse_payload(write_payload(p)), p);
  expect_error([&] { parse_payload(doc("\"future_key\": " + std::string(64, '[') + std::string(64, ']'))); }, "",
               {"more than 64 levels deep"});
}

}  // namespace
}  // namespace weft::custom
