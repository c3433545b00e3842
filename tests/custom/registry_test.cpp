// Registration of custom operators: the ops file (read_ops_file / register_ops_file), the registry
// (register_op, find_op, find_onnx_op) and lower().
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "common/temp_dir.h"
#include "weft/custom.h"

namespace weft::custom {
namespace {

using weft::test::TempDir;

// A GridSample-like shader: two input buffers, one output buffer, two int push constants.
constexpr const char* kShader = R"(#version 450
layout(local_size_x = 8, local_size_y = 8, local_size_z = 1) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer G { float g[]; };
layout(set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { int align_corners; int in_h; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  y[i] = x[i] + g[i] + float(pc.align_corners + pc.in_h);
}
)";

// Line 5 is broken.
constexpr const char* kBrokenShader = R"(#version 450
layout(local_size_x = 8, local_size_y = 8, local_size_z = 1) in;
layout(set = 0, binding = 2) writeonly buffer Y { float y[]; };
void main() {
  y[0] = undefined_thing;
}
)";

// The entry of the guide's example; `extra` is spliced in before the closing brace.
std::string entry(const std::string& extra = "", const std::string& name = "grid_sample_bilinear",
                  const std::string& op_type = "GridSample") {
  return R"({
      "replaces": {"onnx_domain": "", "onnx_op_type": ")" + op_type + R"("},
      "operator_name": ")" + name + R"(",
      "domain_name": "weft.examples",
      "shader": {"language": "GLSL", "file": "grid_sample.comp", "entry_point": "main"},
      "workgroup_size": [8, 8, 1],
      "inputs": [
        {"type": "Buffer", "layout": "NHWC", "binding": 0},
        {"type": "Buffer", "binding": 1}
      ],
      "outputs": [
        {"type": "Buffer", "layout": "NHWC", "binding": 2, "shape": ["in0[0]", "in1[1]", "in1[2]", "in0[3]"], "dtype": "fp32"}
      ],
      "push_constants": [
        {"name": "align_corners", "size": 4, "value": "attr.align_corners|0"},
        {"name": "in_h", "value": "in0[1]"}
      ],
      "invocations": ["out0[2]", "out0[1]", "out0[0]"],
      "attributes": {"mode": ["bilinear", "linear"], "padding_mode": ["zeros"]})" +
         extra + "\n    }";
}

std::string file_of(const std::string& entries) { return "{\n  \"custom_ops\": [\n    " + entries + "\n  ]\n}\n"; }

// Replaces the first occurrence of `from` in `s` (which must contain it).
std::string edit(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

std::vector<uint8_t> le32(std::initializer_list<uint32_t> words) {
  std::vector<uint8_t> b;
  for (uint32_t w : words)
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(w >> (8 * i)));
  return b;
}

class CustomRegistry : public ::testing::Test {
 protected:
  void SetUp() override {
    clear_ops();
    dir_.write("grid_sample.comp", kShader);
  }
  void TearDown() override { clear_ops(); }

  std::string write_ops(const std::string& text, const std::string& name = "ops.json") {
    dir_.write(name, text);
    return dir_.file(name);
  }
  // The error read_ops_file reports for `text`; its location must be the file.
  Error file_error(const std::string& text, ErrorCode code = ErrorCode::kInvalidArgument) {
    const std::string path = write_ops(text);
    try {
      read_ops_file(path);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_EQ(e.location().file, path) << e.what();
      return e;
    }
    ADD_FAILURE() << "no error for\n" << text;
    return Error(ErrorCode::kInternal, "");
  }
  std::string file_message(const std::string& text) { return file_error(text).message(); }

  // The registered GridSample-like operator.
  OpSpec grid_sample() {
    register_ops_file(write_ops(file_of(entry())));
    std::optional<OpSpec> s = find_op("weft.examples", "grid_sample_bilinear");
    EXPECT_TRUE(s.has_value());
    return s ? *s : OpSpec{};
  }

  TempDir dir_{"weft_custom_registry"};
};

TEST_F(CustomRegistry, ValidFileRegistersEveryField) {
  const std::vector<std::string> names = register_ops_file(write_ops(file_of(entry())));
  EXPECT_EQ(names, std::vector<std::string>{"grid_sample_bilinear"});

  std::optional<OpSpec> s = find_onnx_op("", "GridSample");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->operator_name, "grid_sample_bilinear");
  EXPECT_EQ(s->domain_name, "weft.examples");
  EXPECT_EQ(s->onnx_domain, "");
  EXPECT_EQ(s->onnx_op_type, "GridSample");
  // Compiled at registration: lower() does not compile again.
  EXPECT_EQ(s->language, "SPIR-V");
  ASSERT_GE(s->spirv.size(), 5u);
  EXPECT_EQ(s->spirv[0], 0x07230203u);
  EXPECT_EQ(s->source_file, dir_.file("grid_sample.comp"));
  EXPECT_EQ(s->entry_point, "main");
  EXPECT_EQ(s->workgroup_size, (std::array<uint32_t, 3>{8, 8, 1}));
  ASSERT_EQ(s->inputs.size(), 2u);
  EXPECT_EQ(s->inputs[0].type, "Buffer");
  EXPECT_EQ(s->inputs[0].layout, "NHWC");
  EXPECT_EQ(s->inputs[0].binding, 0);
  EXPECT_EQ(s->inputs[1].layout, "");
  EXPECT_EQ(s->inputs[1].binding, 1);
  ASSERT_EQ(s->outputs.size(), 1u);
  EXPECT_EQ(s->outputs[0].shape, (std::vector<std::string>{"in0[0]", "in1[1]", "in1[2]", "in0[3]"}));
  EXPECT_EQ(s->outputs[0].dtype, "fp32");
  EXPECT_EQ(s->outputs[0].binding, 2);
  ASSERT_EQ(s->push_constants.size(), 2u);
  EXPECT_EQ(s->push_constants[0].name, "align_corners");
  EXPECT_EQ(s->push_constants[0].size, 4u);
  EXPECT_EQ(s->push_constants[0].value, "attr.align_corners|0");
  EXPECT_EQ(s->push_constants[1].name, "in_h");
  EXPECT_EQ(s->push_constants[1].size, 4u);  // the default
  EXPECT_EQ(s->invocations, (std::array<std::string, 3>{"out0[2]", "out0[1]", "out0[0]"}));
  EXPECT_EQ(s->allowed_attrs.at("mode"), (std::vector<std::string>{"bilinear", "linear"}));
  EXPECT_EQ(s->allowed_attrs.at("padding_mode"), (std::vector<std::string>{"zeros"}));

  // "ai.onnx" is the standard domain too; .weft CUSTOM nodes match on (domain_name, operator_name).
  EXPECT_TRUE(find_onnx_op("ai.onnx", "GridSample").has_value());
  EXPECT_FALSE(find_onnx_op("com.other", "GridSample").has_value());
  EXPECT_FALSE(find_onnx_op("", "Resize").has_value());
  EXPECT_TRUE(find_op("weft.examples", "grid_sample_bilinear").has_value());
  EXPECT_FALSE(find_op("weft.examples", "grid_sample").has_value());
  EXPECT_FALSE(find_op("other", "grid_sample_bilinear").has_value());
}

TEST_F(CustomRegistry, FileVariants) {
  // Inline source, numbers as expressions, 1 to 3 invocations, no "replaces", defaults.
  std::string json_source;
  for (char c : std::string(kShader)) json_source += c == '\n' ? std::string("\\n") : std::string(1, c);
  const std::string text = file_of(R"({
      "operator_name": "inline_op",
      "domain_name": "weft.tests",
      "shader": {"source": ")" + json_source + R"("},
      "workgroup_size": [8, 8, 1],
      "inputs": [{}, {"type": "Tensor"}],
      "outputs": [{"shape": [4, "in0[0] * 2"]}],
      "push_constants": [{"name": "a", "value": 3}, {"name": "b", "value": 0.5}],
      "invocations": [64]
    })");
  std::vector<OpSpec> specs = read_ops_file(write_ops(text));
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_FALSE(find_op("weft.tests", "inline_op").has_value());  // read, not registered
  const OpSpec& s = specs[0];
  EXPECT_EQ(s.onnx_op_type, "");
  EXPECT_EQ(s.language, "SPIR-V");
  EXPECT_FALSE(s.spirv.empty());
  EXPECT_EQ(s.inputs[0].type, "Buffer");
  EXPECT_EQ(s.inputs[0].binding, -1);
  EXPECT_EQ(s.inputs[1].type, "Tensor");
  EXPECT_EQ(s.outputs[0].shape, (std::vector<std::string>{"4", "in0[0] * 2"}));
  EXPECT_EQ(s.outputs[0].dtype, "");
  EXPECT_EQ(s.push_constants[0].value, "3");
  EXPECT_EQ(s.push_constants[1].value, "0.5");
  EXPECT_EQ(s.invocations, (std::array<std::string, 3>{"64", "1", "1"}));
  EXPECT_TRUE(s.allowed_attrs.empty());
}

TEST_F(CustomRegistry, UnknownKeysNameTheirPath) {
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"binding\": 1}", "\"bindng\": 1}"))),
            "custom_ops[0].inputs[1]: unknown key 'bindng' (known: type, descriptor_type, vkformat, binding, "
            "descriptor_set, layout, filter, address_mode); did you mean 'binding'?");
  EXPECT_EQ(file_message(file_of(entry(", \"invocation\": [1]"))),
            "custom_ops[0]: unknown key 'invocation' (known: replaces, operator_name, domain_name, shader, "
            "workgroup_size, inputs, outputs, push_constants, invocations, attributes); did you mean 'invocations'?");
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"entry_point\"", "\"entry\""))),
            "custom_ops[0].shader: unknown key 'entry' (known: language, source, file, spirv_file, entry_point)");
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"size\": 4,", "\"size\": 4, \"offset\": 0,"))),
            "custom_ops[0].push_constants[0]: unknown key 'offset' (known: name, size, value)");
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"onnx_domain\"", "\"domain\""))),
            "custom_ops[0].replaces: unknown key 'domain' (known: onnx_domain, onnx_op_type)");
  EXPECT_EQ(file_message("{\"custom_ops\": [], \"version\": 1}"), "unknown key 'version' (known: custom_ops)");
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"binding\": 1}", "\"binding\": 1, \"shape\": [\"1\"]}"))),
            "custom_ops[0].inputs[1].shape: applies to outputs only (an input's is the node's)");
  // A key written twice in one object is an error too.
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"binding\": 1}", "\"binding\": 1, \"binding\": 3}"))),
            "custom_ops[0].inputs[1]: duplicate key 'binding'");
}

TEST_F(CustomRegistry, MissingAndMalformedFields) {
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"operator_name\": \"grid_sample_bilinear\",", ""))),
            "custom_ops[0]: missing required key 'operator_name'");
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"operator_name\": \"grid_sample_bilinear\"", "\"operator_name\": 7"))),
            "custom_ops[0].operator_name: must be a string (got number)");
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"operator_name\": \"grid_sample_bilinear\"", "\"operator_name\": \"\""))),
            "custom_ops[0].operator_name: must not be empty");
  EXPECT_EQ(file_message(file_of(edit(entry(), "[8, 8, 1]", "[8, 8]"))),
            "custom_ops[0].workgroup_size: must be 3 integers >= 1 (got [8,8])");
  EXPECT_EQ(file_message(file_of(edit(entry(), "[8, 8, 1]", "[8, 0, 1]"))),
            "custom_ops[0].workgroup_size: must be 3 integers >= 1 (got [8,0,1])");
  EXPECT_EQ(file_message(file_of(edit(entry(), "[8, 8, 1]", "[8, 8.5, 1]"))),
            "custom_ops[0].workgroup_size: must be 3 integers >= 1 (got [8,8.5,1])");
  EXPECT_EQ(file_message(file_of(edit(entry(), "[8, 8, 1]", "\"8x8\""))),
            "custom_ops[0].workgroup_size: must be an array (got string)");
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"binding\": 1}", "\"binding\": -1}"))),
            "custom_ops[0].inputs[1].binding: must be >= 0 (got -1)");
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"layout\": \"NHWC\", \"binding\": 0", "\"layout\": \"NCHW\""))),
            "custom_ops[0].inputs[0].layout: must be \"\" or \"NHWC\" (got 'NCHW')");
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"type\": \"Buffer\", \"binding\": 1", "\"type\": \"buffer\""))),
            "custom_ops[0].inputs[1].type: unknown type 'buffer' (known: Buffer, Tensor, Image)");
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"binding\": 1}", "\"vkformat\": \"R32_SFLOAT\"}"))),
            "custom_ops[0].inputs[1].vkformat: unknown format 'R32_SFLOAT' (a VK_FORMAT_* name, e.g. VK_FORMAT_R32_SFLOAT)");
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"binding\": 1}", "\"descriptor_type\": \"STORAGE_BUFFER\"}"))),
            "custom_ops[0].inputs[1].descriptor_type: unknown descriptor type 'STORAGE_BUFFER' (a VK_DESCRIPTOR_TYPE_* "
            "name, e.g. VK_DESCRIPTOR_TYPE_STORAGE_BUFFER)");
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"binding\": 1}", "\"filter\": \"linear\"}"))),
            "custom_ops[0].inputs[1].filter: applies to sampled images (type Image) only, this resource is a Buffer");
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"dtype\": \"fp32\"", "\"dtype\": \"float\""))),
            "custom_ops[0].outputs[0].dtype: unknown element type 'float' (known: fp32, fp16, bf16, fp8e4m3, fp8e5m2, "
            "i32, i16, i8, i4, i48, bool)");
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"shape\": [\"in0[0]\", ", "\"shape\": ["))),
            "custom_ops[0].outputs[0].shape: has 3 dimensions; an NHWC output has 4");
  EXPECT_EQ(file_message(file_of(edit(entry(), ", \"shape\": [\"in0[0]\", \"in1[1]\", \"in1[2]\", \"in0[3]\"]", ""))),
            "custom_ops[0].outputs[0]: missing required key 'shape'");
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"size\": 4,", "\"size\": 8,"))),
            "custom_ops[0].push_constants[0].size: must be 4 (a 32-bit int, uint or float; got 8)");
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"name\": \"in_h\"", "\"name\": \"align_corners\""))),
            "custom_ops[0].push_constants[1].name: push constant 'align_corners' is defined twice");
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"name\": \"in_h\"", "\"name\": \"in h\""))),
            "custom_ops[0].push_constants[1].name: 'in h' is not a name (letters, digits and '_', not starting with a "
            "digit)");
  EXPECT_EQ(file_message(file_of(edit(entry(), "[\"out0[2]\", \"out0[1]\", \"out0[0]\"]", "[]"))),
            "custom_ops[0].invocations: must list 1 to 3 expressions (x, y, z; missing ones are 1), got 0");
  EXPECT_EQ(file_message(file_of(edit(entry(), "[\"zeros\"]", "[]"))),
            "custom_ops[0].attributes.padding_mode: must be a non-empty array of the allowed string values (got [])");
  EXPECT_EQ(file_message("{\"custom_ops\": {}}"), "custom_ops: must be an array (got object)");
  EXPECT_EQ(file_message("{}"), "missing required key 'custom_ops'");
  EXPECT_EQ(file_message(file_of("7")), "custom_ops[0]: must be an object (got number)");
}

TEST_F(CustomRegistry, BadExpressionsAreReportedAtRegistration) {
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"in1[2]\"", "\"in1[\""))),
            "custom_ops[0].outputs[0].shape[2]: in1[: expected an integer dimension index after 'in1[' at column 5");
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"attr.align_corners|0\"", "\"attr.align_corners|\""))),
            "custom_ops[0].push_constants[0].value: attr.align_corners|: expected a number literal as the default of "
            "attr.align_corners at column 20");
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"out0[2]\"", "\"width(out0)\""))),
            "custom_ops[0].invocations[0]: width(out0): unknown function 'width' (known: ceil_div, min, max) at column 1");
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"value\": \"in0[1]\"", "\"value\": true"))),
            "custom_ops[0].push_constants[1].value: must be an expression: a string or a number (got boolean)");
}

TEST_F(CustomRegistry, ShaderErrors) {
  const std::string missing = dir_.file("missing.comp");
  EXPECT_EQ(file_message(file_of(edit(entry(), "grid_sample.comp", "missing.comp"))),
            "custom_ops[0].shader.file: cannot read '" + missing + "': No such file or directory");
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"file\":", "\"source\": \"void main() {}\", \"file\":"))),
            "custom_ops[0].shader: give exactly one of 'source', 'file' and 'spirv_file' (got 'source' and 'file')");
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"file\": \"grid_sample.comp\", ", ""))),
            "custom_ops[0].shader: give exactly one of 'source', 'file' and 'spirv_file' (got none)");
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"GLSL\"", "\"GLSL 4.5\""))),
            "custom_ops[0].shader.language: unknown shader language 'GLSL 4.5' (known: GLSL, HLSL, SPIR-V)");
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"GLSL\"", "\"SPIR-V\""))),
            "custom_ops[0].shader.language: SPIR-V is binary: give it as spirv_file (source and file hold GLSL/HLSL "
            "text)");

  // A GLSL error is reported at registration, with the compiler's line in the shader file.
  dir_.write("broken.comp", kBrokenShader);
  const std::string m = file_message(file_of(edit(entry(), "grid_sample.comp", "broken.comp")));
  EXPECT_EQ(m.rfind("custom_ops[0].shader.file: ", 0), 0u) << m;
  EXPECT_NE(m.find(dir_.file("broken.comp") + ":5: error:"), std::string::npos) << m;
  EXPECT_NE(m.find("undefined_thing"), std::string::npos) << m;

  // The workgroup size must be the shader's local size.
  EXPECT_EQ(file_message(file_of(edit(entry(), "[8, 8, 1]", "[4, 4, 1]"))),
            "custom_ops[0].workgroup_size: is [4, 4, 1] but the shader declares local_size [8, 8, 1]");
}

TEST_F(CustomRegistry, SpirvFile) {
  // The compiled words of the registration, written as a .spv file and registered again.
  const OpSpec s = grid_sample();
  {
    std::ofstream f(dir_.file("grid_sample.spv"), std::ios::binary);
    f.write(reinterpret_cast<const char*>(s.spirv.data()), static_cast<std::streamsize>(4 * s.spirv.size()));
  }
  clear_ops();
  register_ops_file(write_ops(file_of(edit(entry(), "\"language\": \"GLSL\", \"file\": \"grid_sample.comp\"",
                                           "\"spirv_file\": \"grid_sample.spv\""))));
  std::optional<OpSpec> t = find_op("weft.examples", "grid_sample_bilinear");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->language, "SPIR-V");
  EXPECT_EQ(t->spirv, s.spirv);

  dir_.write("bad.spv", "abcdef");
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"language\": \"GLSL\", \"file\": \"grid_sample.comp\"",
                                      "\"spirv_file\": \"bad.spv\""))),
            "custom_ops[0].shader.spirv_file: '" + dir_.file("bad.spv") +
                "' is not SPIR-V: its size (6 bytes) is not a non-zero multiple of 4");
  EXPECT_EQ(file_message(file_of(edit(entry(), "\"language\": \"GLSL\", \"file\": \"grid_sample.comp\"",
                                      "\"language\": \"GLSL\", \"spirv_file\": \"grid_sample.spv\""))),
            "custom_ops[0].shader.language: is GLSL but spirv_file holds SPIR-V (language \"SPIR-V\")");
}

TEST_F(CustomRegistry, InvalidJsonHasLineAndColumn) {
  const Error e = file_error("{\n  \"custom_ops\": [\n    {\"operator_name\": x}\n  ]\n}\n", ErrorCode::kParse);
  EXPECT_EQ(e.location().line, 3);
  EXPECT_EQ(e.location().column, 23);
  EXPECT_EQ(e.message().rfind("invalid JSON: syntax error while parsing value", 0), 0u) << e.message();
  try {
    read_ops_file(dir_.file("absent.json"));
    ADD_FAILURE();
  } catch (const Error& x) {
    EXPECT_EQ(x.code(), ErrorCode::kIo);
    EXPECT_EQ(x.location().file, dir_.file("absent.json"));
  }
}

TEST_F(CustomRegistry, DuplicatesWithinAFile) {
  EXPECT_EQ(file_message(file_of(entry() + ",\n" + entry("", "grid_sample_bilinear", "Resize"))),
            "custom_ops[1]: custom operator weft.examples::grid_sample_bilinear is already defined by custom_ops[0]");
  EXPECT_EQ(file_message(file_of(entry() + ",\n" + entry("", "other"))),
            "custom_ops[1].replaces: ONNX operator GridSample is already replaced by custom_ops[0]");
}

TEST_F(CustomRegistry, FileRegistersAllOrNothing) {
  // The second entry is invalid: the first is not registered either.
  const std::string bad = file_of(entry() + ",\n" + edit(entry("", "second", "Resize"), "[8, 8, 1]", "[8, 8, 0]"));
  EXPECT_THROW(register_ops_file(write_ops(bad)), Error);
  EXPECT_FALSE(find_op("weft.examples", "grid_sample_bilinear").has_value());
  EXPECT_FALSE(find_onnx_op("", "GridSample").has_value());

  // An ONNX operator another registration holds: nothing of the file is registered.
  OpSpec holder = grid_sample();
  holder.operator_name = "resize_holder";
  holder.onnx_op_type = "Resize";
  register_op(holder);
  const std::string path = write_ops(file_of(entry("", "new_one", "Upsample") + ",\n" + entry("", "second", "Resize")),
                                     "more.json");
  try {
    register_ops_file(path);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(e.location().file, path);
    EXPECT_EQ(e.message(), "custom_ops[1]: ONNX operator Resize is already replaced by custom operator "
                           "weft.examples::resize_holder; unregister that one first");
  }
  EXPECT_FALSE(find_op("weft.examples", "new_one").has_value());
  EXPECT_FALSE(find_onnx_op("", "Upsample").has_value());
  EXPECT_EQ(find_onnx_op("", "Resize")->operator_name, "resize_holder");
}

TEST_F(CustomRegistry, ReplaceSemantics) {
  OpSpec s = grid_sample();
  EXPECT_EQ(find_onnx_op("", "GridSample")->operator_name, "grid_sample_bilinear");

  // The same (domain_name, operator_name) replaces the earlier registration and its ONNX key.
  OpSpec v2 = s;
  v2.onnx_op_type = "Resize";
  v2.push_constants.pop_back();
  register_op(v2);
  EXPECT_EQ(find_op("weft.examples", "grid_sample_bilinear")->push_constants.size(), 1u);
  EXPECT_FALSE(find_onnx_op("", "GridSample").has_value());
  EXPECT_EQ(find_onnx_op("", "Resize")->operator_name, "grid_sample_bilinear");

  // An ONNX key held by another operator is an error naming both and the origin.
  OpSpec other = s;
  other.operator_name = "resize_nearest";
  other.onnx_domain = "ai.onnx";  // the standard domain
  other.onnx_op_type = "Resize";
  try {
    register_op(other, "mine.json");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(e.location().file, "mine.json");
    EXPECT_EQ(e.message(), "custom operator weft.examples::resize_nearest: ONNX operator Resize is already replaced "
                           "by custom operator weft.examples::grid_sample_bilinear; unregister that one first");
  }
  EXPECT_FALSE(find_op("weft.examples", "resize_nearest").has_value());
  // In another ONNX domain it is a different operator.
  other.onnx_domain = "com.example";
  register_op(other);
  EXPECT_EQ(find_onnx_op("com.example", "Resize")->operator_name, "resize_nearest");
  EXPECT_EQ(find_onnx_op("", "Resize")->operator_name, "grid_sample_bilinear");

  // Copies: changing one does not change the registry.
  std::optional<OpSpec> copy = find_op("weft.examples", "resize_nearest");
  copy->entry_point = "changed";
  EXPECT_EQ(find_op("weft.examples", "resize_nearest")->entry_point, "main");

  EXPECT_TRUE(unregister_op("weft.examples", "grid_sample_bilinear"));
  EXPECT_FALSE(unregister_op("weft.examples", "grid_sample_bilinear"));
  EXPECT_FALSE(find_onnx_op("", "Resize").has_value());
  clear_ops();
  EXPECT_FALSE(find_op("weft.examples", "resize_nearest").has_value());
}

TEST_F(CustomRegistry, RegisterOpFromCode) {
  OpSpec s;
  s.domain_name = "weft.tests";
  s.operator_name = "inline";
  s.source = kShader;
  s.workgroup_size = {8, 8, 1};
  s.inputs.resize(2);
  s.outputs.resize(1);
  s.outputs[0].shape = {"in0[0]"};
  s.push_constants = {{"align_corners", 4, "0"}, {"in_h", 4, "1"}};
  register_op(s);
  std::optional<OpSpec> r = find_op("weft.tests", "inline");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->language, "SPIR-V");
  EXPECT_FALSE(r->spirv.empty());
  EXPECT_EQ(r->source, kShader);  // kept

  auto message = [](OpSpec spec, const std::string& base_dir = "") {
    try {
      register_op(spec, "", base_dir);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      return e.message();
    }
    ADD_FAILURE();
    return std::string();
  };
  OpSpec t = s;
  t.operator_name.clear();
  EXPECT_EQ(message(t), "custom operator: operator_name: must not be empty");
  t = s;
  t.inputs[1].layout = "nhwc";
  EXPECT_EQ(message(t), "custom operator weft.tests::inline: inputs[1].layout: must be \"\" or \"NHWC\" (got 'nhwc')");
  t = s;
  t.source_file = "grid_sample.comp";
  EXPECT_EQ(message(t), "custom operator weft.tests::inline: source: give either source or source_file, not both");
  t = s;
  t.source = kBrokenShader;
  const std::string m = message(t);
  EXPECT_EQ(m.rfind("custom operator weft.tests::inline: source: shader 'inline': GLSL compilation failed", 0), 0u)
      << m;
  EXPECT_NE(m.find("inline:5: error:"), std::string::npos) << m;
  // source_file relative to base_dir.
  t = s;
  t.source.clear();
  t.source_file = "grid_sample.comp";
  register_op(t, "", dir_.path());
  EXPECT_EQ(find_op("weft.tests", "inline")->source_file, dir_.file("grid_sample.comp"));
  t.source_file = "nope.comp";
  EXPECT_EQ(message(t, dir_.path()), "custom operator weft.tests::inline: source_file: cannot read '" +
                                         dir_.file("nope.comp") + "': No such file or directory");
}

TEST_F(CustomRegistry, ConcurrentRegistrationAndLookup) {
  const OpSpec base = grid_sample();  // compiled: registering it again only validates the SPIR-V
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&base, t] {
      for (int i = 0; i < 10; ++i) {
        OpSpec s = base;
        s.operator_name = "op" + std::to_string(t) + "_" + std::to_string(i);
        s.onnx_op_type.clear();
        register_op(s);
        EXPECT_TRUE(find_op("weft.examples", s.operator_name).has_value());
        EXPECT_EQ(find_onnx_op("", "GridSample")->operator_name, "grid_sample_bilinear");
      }
    });
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < 4; ++t)
    for (int i = 0; i < 10; ++i)
      EXPECT_TRUE(find_op("weft.examples", "op" + std::to_string(t) + "_" + std::to_string(i)).has_value());
}

// ---- lower() ----

const Location kWhere{.file = "model.onnx", .node = "gs"};

ExprEnv attrs(int align_corners) {
  ExprEnv e;
  e.attrs["align_corners"] = align_corners;
  e.attr_is_float["align_corners"] = false;
  e.string_attrs["mode"] = "bilinear";
  return e;
}

TensorType f32(Shape s) { return TensorType{DType::kFp32, std::move(s)}; }

Error lower_error(const OpSpec& s, const std::vector<TensorType>& in, const ExprEnv& env) {
  try {
    lower(s, in, env, kWhere);
  } catch (const Error& e) {
    EXPECT_EQ(e.location().node, "gs") << e.what();
    EXPECT_EQ(e.location().file, "model.onnx") << e.what();
    return e;
  }
  ADD_FAILURE() << "no error";
  return Error(ErrorCode::kInternal, "");
}

TEST_F(CustomRegistry, LowerGridSample) {
  const OpSpec s = grid_sample();
  const Lowered l = lower(s, {f32({1, 8, 8, 3}), f32({1, 4, 5, 2})}, attrs(1), kWhere);
  ASSERT_EQ(l.outputs.size(), 1u);
  EXPECT_EQ(l.outputs[0], f32({1, 4, 5, 3}));

  const Payload& p = l.payload;
  EXPECT_EQ(p.entry_point, "main");
  EXPECT_EQ(p.workgroup_sizes, (std::array<uint32_t, 3>{8, 8, 1}));
  EXPECT_EQ(p.language, ShaderLanguage::kSpirv);
  EXPECT_EQ(p.spirv, s.spirv);  // not compiled again
  // invocations [out0[2], out0[1], out0[0]] = [5, 4, 1] over [8, 8, 1]
  EXPECT_EQ(p.dispatch, (std::array<uint32_t, 3>{1, 1, 1}));
  EXPECT_EQ(p.push_constants_text, "align_corners: 4, in_h: 4");
  ASSERT_EQ(p.push_constants.size(), 2u);
  EXPECT_EQ(p.push_constants[1].name, "in_h");
  EXPECT_EQ(p.push_constants[1].size, 4u);
  EXPECT_EQ(p.push_constant_data, le32({1, 8}));

  ASSERT_EQ(p.inputs.size(), 2u);
  ASSERT_EQ(p.outputs.size(), 1u);
  for (const Resource* r : {&p.inputs[0], &p.inputs[1], &p.outputs[0]}) {
    EXPECT_EQ(r->type, "Buffer");
    EXPECT_EQ(r->descriptor_type, "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER");
    EXPECT_EQ(r->vkformat, "VK_FORMAT_R32_SFLOAT");
    EXPECT_EQ(r->descriptor_set, 0);
    EXPECT_FALSE(r->filter.has_value());
  }
  EXPECT_EQ(p.inputs[1].index, 1u);
  EXPECT_EQ(p.inputs[1].binding, 1);
  EXPECT_TRUE(p.outputs[0].output);
  EXPECT_EQ(p.outputs[0].binding, 2);

  // The payload round-trips through the schema's JSON.
  const std::string text = write_payload(p);
  const Payload q = parse_payload(text);
  EXPECT_EQ(write_payload(q), text);
  EXPECT_EQ(q.spirv, p.spirv);
  EXPECT_EQ(q.push_constant_data, p.push_constant_data);
  EXPECT_EQ(q.dispatch, p.dispatch);
  EXPECT_EQ(q.outputs[0].binding, 2);

  // A larger grid: [1, 20, 9, 2] -> output [1, 20, 9, 3]; invocations [9, 20, 1] over [8, 8, 1].
  ExprEnv no_attr;
  const Lowered big = lower(s, {f32({1, 8, 8, 3}), f32({1, 20, 9, 2})}, no_attr, kWhere);
  EXPECT_EQ(big.outputs[0], f32({1, 20, 9, 3}));
  EXPECT_EQ(big.payload.dispatch, (std::array<uint32_t, 3>{2, 3, 1}));
  EXPECT_EQ(big.payload.push_constant_data, le32({0, 8}));  // align_corners absent: its default 0
}

TEST_F(CustomRegistry, LowerChecks) {
  const OpSpec s = grid_sample();
  const std::vector<TensorType> in{f32({1, 8, 8, 3}), f32({1, 4, 5, 2})};

  ExprEnv nearest = attrs(0);
  nearest.string_attrs["mode"] = "nearest";
  EXPECT_EQ(lower_error(s, in, nearest).message(),
            "attribute 'mode' is 'nearest', which custom operator weft.examples::grid_sample_bilinear does not support "
            "(allowed: 'bilinear', 'linear')");
  ExprEnv other = attrs(0);
  other.string_attrs["unlisted"] = "anything";  // attributes the registration does not list pass
  EXPECT_NO_THROW(lower(s, in, other, kWhere));

  const Error count = lower_error(s, {in[0]}, attrs(0));
  EXPECT_EQ(count.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(count.message(), "custom operator weft.examples::grid_sample_bilinear takes 2 inputs, but the node has 1");
  EXPECT_NE(std::string(count.what()).find("node 'gs'"), std::string::npos);

  EXPECT_EQ(lower_error(s, {f32({8, 8, 3}), in[1]}, attrs(0)).message(),
            "custom operator weft.examples::grid_sample_bilinear: input 0 is NHWC but has shape [8,8,3] (NHWC "
            "resources are 4-D)");
  EXPECT_EQ(lower_error(s, {in[0], f32({1, 4})}, attrs(0)).message(),
            "custom operator weft.examples::grid_sample_bilinear: output 0 shape[2]: in1[2]: in1[2]: index 2 out of "
            "range for rank 2 at column 5");

  OpSpec t = s;
  t.push_constants[0].value = "attr.align_corners";
  EXPECT_EQ(lower_error(t, in, ExprEnv{}).message(),
            "custom operator weft.examples::grid_sample_bilinear: push constant 'align_corners': attr.align_corners: "
            "attribute 'align_corners' is not set (write attr.align_corners|<default> when it may be absent) at "
            "column 1");
  t = s;
  t.invocations[1] = "out0[0] - 1";
  EXPECT_EQ(lower_error(t, in, attrs(0)).message(),
            "custom operator weft.examples::grid_sample_bilinear: invocations along y: out0[0] - 1 = 0; it must be >= 1");
  t = s;
  t.invocations[0] = "out0[2] / 2.0";
  EXPECT_EQ(lower_error(t, in, attrs(0)).message(),
            "custom operator weft.examples::grid_sample_bilinear: invocations along x: out0[2] / 2.0 is a float "
            "(2.500000); it must be an integer");
  t = s;
  t.outputs[0].shape[1] = "in1[1] - 4";
  EXPECT_EQ(lower_error(t, in, attrs(0)).message(),
            "custom operator weft.examples::grid_sample_bilinear: output 0 shape[1]: in1[1] - 4 = 0; dimensions must "
            "be >= 1");
  t = s;
  t.push_constants[1].value = "4294967296";
  EXPECT_EQ(lower_error(t, in, attrs(0)).message(),
            "custom operator weft.examples::grid_sample_bilinear: push constant 'in_h': 4294967296 = 4294967296 does "
            "not fit 32 bits (int32 or uint32)");

  // The resource contract's errors come through: an fp16 format on an fp32 tensor.
  t = s;
  t.inputs[1].vkformat = "VK_FORMAT_R16_SFLOAT";
  EXPECT_EQ(lower_error(t, in, attrs(0)).code(), ErrorCode::kVerify);
}

TEST_F(CustomRegistry, LowerPushConstantValuesAndUncompiledSpecs) {
  // A spec that was never registered is compiled by lower(); int and float push constants.
  OpSpec s;
  s.domain_name = "weft.tests";
  s.operator_name = "scale";
  s.source = R"(#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { float scale; int neg; uint big; int n; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < uint(pc.n)) y[i] = x[i] * pc.scale + float(pc.neg) + float(pc.big);
}
)";
  s.workgroup_size = {64, 1, 1};
  s.inputs.resize(1);
  s.outputs.resize(1);
  s.outputs[0].shape = {"in0[0]", "in0[1] * 2"};
  s.outputs[0].dtype = "f32";
  s.push_constants = {{"scale", 4, "in0[1] / 2.0"}, {"neg", 4, "-1"}, {"big", 4, "4294967295"}, {"n", 4, "out0[0] * out0[1]"}};
  s.invocations = {"ceil_div(out0[0] * out0[1], 1)", "1", "1"};
  const Lowered l = lower(s, {f32({10, 7})}, ExprEnv{}, kWhere);
  EXPECT_EQ(l.outputs[0], f32({10, 14}));
  EXPECT_EQ(l.payload.push_constant_data, le32({0x40600000u /* 3.5f */, 0xffffffffu, 0xffffffffu, 140}));
  EXPECT_EQ(l.payload.dispatch, (std::array<uint32_t, 3>{3, 1, 1}));  // ceil(140 / 64)
  EXPECT_EQ(l.payload.push_constants_text, "scale: 4, neg: 4, big: 4, n: 4");
  EXPECT_EQ(l.payload.inputs[0].binding, 0);   // default: position
  EXPECT_EQ(l.payload.outputs[0].binding, 1);  // inputs, then outputs
  EXPECT_FALSE(l.payload.spirv.empty());

  // Output dtype defaults to the first input's; the default scalar format follows it.
  s.outputs[0].dtype.clear();
  s.source = R"(#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { int x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { int y[]; };
layout(push_constant) uniform P { float scale; int neg; uint big; int n; } pc;
void main() { y[gl_GlobalInvocationID.x] = x[gl_GlobalInvocationID.x] + pc.neg; }
)";
  const Lowered li = lower(s, {TensorType{DType::kInt32, {10, 7}}}, ExprEnv{}, kWhere);
  EXPECT_EQ(li.outputs[0].dtype, DType::kInt32);
  EXPECT_EQ(li.payload.inputs[0].vkformat, "VK_FORMAT_R32_SINT");
  EXPECT_EQ(li.payload.outputs[0].vkformat, "VK_FORMAT_R32_SINT");

  // An invalid spec is reported by lower() too, at the node.
  s.push_constants[0].size = 2;
  EXPECT_EQ(lower_error(s, {f32({10, 7})}, ExprEnv{}).message(),
            "custom operator weft.tests::scale: push_constants[0].size: must be 4 (a 32-bit int, uint or float; got 2)");
}

TEST_F(CustomRegistry, LowerImageDefaults) {
  OpSpec s;
  s.domain_name = "weft.tests";
  s.operator_name = "blur";
  s.source = R"(#version 450
layout(local_size_x = 8, local_size_y = 8) in;
layout(set = 0, binding = 0) uniform sampler2D src;
layout(set = 0, binding = 1, rg32f) writeonly uniform image2D dst;
void main() {
  ivec2 p = ivec2(gl_GlobalInvocationID.xy);
  imageStore(dst, p, texelFetch(src, p, 0).xyxy);
}
)";
  s.workgroup_size = {8, 8, 1};
  s.inputs = {ResourceSpec{.type = "Image"}};
  s.inputs[0].filter = "nearest";
  s.outputs = {ResourceSpec{.type = "Image"}};
  s.outputs[0].shape = {"1", "in0[1]", "in0[2]", "2"};
  s.invocations = {"out0[2]", "out0[1]", "1"};
  const Lowered l = lower(s, {f32({1, 16, 12, 4})}, ExprEnv{}, kWhere);
  EXPECT_EQ(l.outputs[0], f32({1, 16, 12, 2}));
  const Resource& in = l.payload.inputs[0];
  EXPECT_EQ(in.descriptor_type, "VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER");
  EXPECT_EQ(in.vkformat, "VK_FORMAT_R32G32B32A32_SFLOAT");
  EXPECT_EQ(in.filter, "nearest");
  EXPECT_EQ(in.address_mode, "clamp_to_edge");
  const Resource& out = l.payload.outputs[0];
  EXPECT_EQ(out.descriptor_type, "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE");
  EXPECT_EQ(out.vkformat, "VK_FORMAT_R32G32_SFLOAT");
  EXPECT_FALSE(out.filter.has_value());
  EXPECT_EQ(l.payload.dispatch, (std::array<uint32_t, 3>{2, 2, 1}));
  EXPECT_FALSE(l.payload.push_constants_text.has_value());
  EXPECT_TRUE(l.payload.push_constant_data.empty());
}

}  // namespace
}  // namespace weft::custom
