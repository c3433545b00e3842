// compile_shader: GLSL/HLSL through shaderc, SPIR-V validation, entry points and workgroup sizes.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "custom/base64.h"
#include "weft/custom.h"

namespace weft::custom {
namespace {

constexpr const char* kScale = R"(#version 450
layout(local_size_x = 8, local_size_y = 4, local_size_z = 2) in;
layout(set = 0, binding = 0) readonly buffer In { float x[]; } src;
layout(set = 0, binding = 1) writeonly buffer Out { float y[]; } dst;
layout(push_constant) uniform Push { float scale; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  dst.y[i] = src.x[i] * pc.scale;
}
)";

std::string expect_error(const std::function<void()>& f, std::vector<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kVerify) << e.what();
    for (const std::string& p : parts)
      EXPECT_NE(e.message().find(p), std::string::npos) << "'" << p << "' not in: " << e.message();
    return e.message();
  }
  return "";
}

TEST(Shader, GlslComputeCompilesAndLocalSizeIsRead) {
  CompiledShader s = compile_shader(ShaderLanguage::kGlsl, kScale, {}, "main", "scale.comp");
  ASSERT_GE(s.spirv.size(), 5u);
  EXPECT_EQ(s.spirv[0], 0x07230203u);
  EXPECT_EQ(s.spirv[1], 0x00010300u);  // Vulkan 1.1 -> SPIR-V 1.3
  EXPECT_EQ(s.local_size, (std::array<uint32_t, 3>{8, 4, 2}));
}

TEST(Shader, WorkgroupSizeFromSpecializationConstants) {
  // local_size_*_id makes glslang emit a WorkgroupSize built-in over spec constants; their
  // defaults are the size.
  const char* src = R"(#version 450
layout(local_size_x_id = 0, local_size_y = 3) in;
layout(constant_id = 0) const uint unused = 1;
layout(set = 0, binding = 0) buffer B { uint v[]; } b;
void main() { b.v[gl_GlobalInvocationID.x] = gl_WorkGroupSize.x; }
)";
  CompiledShader s = compile_shader(ShaderLanguage::kGlsl, src, {}, "main", "spec.comp");
  EXPECT_EQ(s.local_size, (std::array<uint32_t, 3>{1, 3, 1}));
}

TEST(Shader, SpirvInputIsValidatedAndRead) {
  CompiledShader glsl = compile_shader(ShaderLanguage::kGlsl, kScale, {}, "main", "scale.comp");
  CompiledShader s = compile_shader(ShaderLanguage::kSpirv, "", glsl.spirv, "main", "scale.spv");
  EXPECT_EQ(s.spirv, glsl.spirv);
  EXPECT_EQ(s.local_size, glsl.local_size);
  // SPIR-V given as base64 text only.
  std::vector<uint8_t> bytes;
  for (uint32_t w : glsl.spirv)
    for (int b = 0; b < 4; ++b) bytes.push_back(static_cast<uint8_t>(w >> (8 * b)));
  CompiledShader t = compile_shader(ShaderLanguage::kSpirv, base64_encode(bytes), {}, "main", "scale.spv");
  EXPECT_EQ(t.spirv, glsl.spirv);
}

TEST(Shader, SyntaxErrorCarriesNameAndLine) {
  const char* bad = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {\n  float x = undefined_thing;\n}\n";
  std::string m = expect_error([&] { compile_shader(ShaderLanguage::kGlsl, bad, {}, "main", "my_op.comp"); },
                               {"shader 'my_op.comp'", "GLSL compilation failed", "my_op.comp:4:", "error",
                                "undefined_thing"});
  EXPECT_FALSE(m.empty());
}

TEST(Shader, WrongEntryPointListsTheOnesThereAre) {
  expect_error([] { compile_shader(ShaderLanguage::kGlsl, kScale, {}, "scale_main", "scale.comp"); },
               {"no GLCompute entry point 'scale_main'", "entry points: 'main' (GLCompute)"});
}

TEST(Shader, InvalidSpirvRejectedByTheValidator) {
  CompiledShader glsl = compile_shader(ShaderLanguage::kGlsl, kScale, {}, "main", "scale.comp");
  // Drop the OpMemoryModel instruction (opcode 14): the module no longer validates.
  std::vector<uint32_t> words(glsl.spirv.begin(), glsl.spirv.begin() + 5);
  size_t i = 5;
  bool dropped = false;
  while (i < glsl.spirv.size()) {
    uint32_t n = glsl.spirv[i] >> 16;
    if ((glsl.spirv[i] & 0xFFFF) == 14) dropped = true;
    else words.insert(words.end(), glsl.spirv.begin() + i, glsl.spirv.begin() + i + n);
    i += n;
  }
  ASSERT_TRUE(dropped);
  expect_error([&] { compile_shader(ShaderLanguage::kSpirv, "", words, "main", "broken.spv"); },
               {"shader 'broken.spv'", "SPIR-V validation (Vulkan 1.1) failed", "word 3:",
                "EntryPoint cannot appear before the memory model instruction"});
  expect_error([] { compile_shader(ShaderLanguage::kSpirv, "", {0x07230203u, 0x00010300u}, "main", "short.spv"); },
               {"not a SPIR-V module"});
  expect_error([] { compile_shader(ShaderLanguage::kSpirv, "", {1, 2, 3, 4, 5, 6}, "main", "junk.spv"); },
               {"not a SPIR-V module"});
}

TEST(Shader, NothingToCompile) {
  expect_error([] { compile_shader(ShaderLanguage::kGlsl, "", {}, "main", "empty"); }, {"no GLSL source"});
  expect_error([] { compile_shader(ShaderLanguage::kUnspecified, "void main(){}", {}, "main", "u"); },
               {"shader_language is unspecified"});
  expect_error([] { compile_shader(ShaderLanguage::kSpirv, "", {}, "main", "none"); }, {"no shader"});
}

TEST(Shader, HlslComputeCompiles) {
  const char* hlsl = R"(
RWStructuredBuffer<float> data : register(u0);
[numthreads(4, 2, 1)]
void CSMain(uint3 id : SV_DispatchThreadID) {
  data[id.x] = data[id.x] * 2.0f;
}
)";
  CompiledShader s = compile_shader(ShaderLanguage::kHlsl, hlsl, {}, "CSMain", "double.hlsl");
  EXPECT_EQ(s.local_size, (std::array<uint32_t, 3>{4, 2, 1}));
  expect_error([&] { compile_shader(ShaderLanguage::kHlsl, "[numthreads(1,1,1)] void f() { oops }", {}, "f", "e.hlsl"); },
               {"HLSL compilation failed", "e.hlsl:1:"});
}

}  // namespace

// The push-constant block's size is reflected (offsets, vectors, std430 matrices and arrays), and
// a payload whose push constants do not cover it is refused before any dispatch.
TEST(Shader, PushConstantBlockSizeIsReflectedAndChecked) {
  CompiledShader s = compile_shader(ShaderLanguage::kGlsl, kScale, {}, "main", "scale.comp");
  ASSERT_TRUE(s.push_constant_bytes.has_value());
  EXPECT_EQ(*s.push_constant_bytes, 4u);
  const std::string wide = R"(#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Out { float y[]; } dst;
layout(push_constant) uniform P { vec3 a; float b; mat2 m; float arr[3]; } pc;
void main() { dst.y[0] = pc.a.x + pc.b + pc.m[1][1] + pc.arr[2]; }
)";
  CompiledShader w = compile_shader(ShaderLanguage::kGlsl, wide, {}, "main", "wide.comp");
  ASSERT_TRUE(w.push_constant_bytes.has_value());
  EXPECT_EQ(*w.push_constant_bytes, 44u);  // a 0..12, b 12..16, m 16..32 (stride 8), arr 32..44
  CompiledShader none = compile_shader(ShaderLanguage::kGlsl,
                                       "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n", {}, "main", "none.comp");
  EXPECT_EQ(none.push_constant_bytes, std::optional<uint32_t>(0u));

  const std::string resources =
      R"("input_0_binding": 0, "input_0_vkdescriptortype": "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER",)"
      R"( "output_0_binding": 1, "output_0_vkdescriptortype": "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER")";
  Payload with = parse_payload(R"({"entry_point": "main", "workgroup_sizes": [8, 4, 2], "shader_language": "GLSL",)"
                               R"( "push_constants": "scale: 4", )" + resources + "}");
  EXPECT_NO_THROW(check_shader_bindings(with, s, {}));
  Payload without = parse_payload(R"({"entry_point": "main", "workgroup_sizes": [8, 4, 2], "shader_language": "GLSL", )" +
                                  resources + "}");
  expect_error([&] { check_shader_bindings(without, s, {.file = "ops.json"}); },
               {"the shader's push-constant block is 4 bytes, but the payload provides 0 (no push_constants)"});
}

}  // namespace weft::custom
