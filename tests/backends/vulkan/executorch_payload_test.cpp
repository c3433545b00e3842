// Payloads as ExecuTorch's Arm backend writes them (is_vkshader, push_constants "", input_<i>_type
// "TENSOR", SPIR-V from glslc in base64, and workgroup_sizes carrying the dispatch count, which is
// what Arm's runtimes do with it) load and run; where the payload gives no weft_dispatch, Weft
// decides the dispatch from the shader's own local size and --explain says how.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "custom/base64.h"
#include "backends/vulkan/vulkan_fixture.h"
#include "device/vulkan/vulkan.h"
#include "weft/custom.h"
#include "weft/graph.h"
#include "weft/runtime.h"

namespace weft {
namespace {

// y = x + 1 over 256 floats; 64 invocations a workgroup.
constexpr const char* kAddOne = R"(#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer In { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Out { float y[]; };
void main() { uint i = gl_GlobalInvocationID.x; if (i < 256u) y[i] = x[i] + 1.0; }
)";

std::string executorch_payload(std::array<uint32_t, 3> workgroup_sizes) {
  custom::CompiledShader c = custom::compile_shader(custom::ShaderLanguage::kGlsl, kAddOne, {}, "main", "add_one");
  std::vector<uint8_t> bytes(c.spirv.size() * 4);
  for (size_t i = 0; i < c.spirv.size(); ++i)
    for (int b = 0; b < 4; ++b) bytes[4 * i + static_cast<size_t>(b)] = static_cast<uint8_t>(c.spirv[i] >> (8 * b));
  nlohmann::json j;  // sorted keys, as json.dumps(payload, sort_keys=True)
  j["entry_point"] = "main";
  j["workgroup_sizes"] = workgroup_sizes;
  j["is_vkshader"] = true;
  j["shader_language"] = "SPIR-V";
  j["shader_code"] = custom::base64_encode(bytes);
  j["push_constants"] = "";
  for (const char* io : {"input_0", "output_0"}) {
    const std::string k = io;
    j[k + "_type"] = "TENSOR";
    j[k + "_binding"] = k == "input_0" ? 0 : 1;
    j[k + "_descriptorset"] = 0;
    j[k + "_vkdescriptortype"] = "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER";
    j[k + "_vkformat"] = "VK_FORMAT_R32_SFLOAT";
  }
  return j.dump();
}

Module model(const std::string& payload) {
  GraphBuilder b;
  const TensorType t{DType::kFp32, {1, 16, 16, 1}};
  ValueId x = b.input("x", t);
  std::vector<ValueId> y = b.op_multi(Op::CUSTOM, {x},
                                      {{"operator_name", std::string("add_one")},
                                       {"domain_name", std::string("com.arm.VulkanCustomShader")},
                                       {"implementation_attrs", payload}},
                                      {"y"}, {t});
  b.output(y[0]);
  return Module(b.finish());
}

class ExecutorchPayload : public test::VulkanDeviceTest {};

TEST_F(ExecutorchPayload, KeysOfTheArmBackendParseWithoutWarnings) {
  std::vector<std::string> warnings;
  custom::Payload p = custom::parse_payload(executorch_payload({4, 1, 1}), {}, {}, &warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_EQ(p.is_vkshader, true);
  EXPECT_TRUE(p.push_constants.empty());
  EXPECT_FALSE(p.dispatch.has_value());
}

TEST_F(ExecutorchPayload, WorkgroupSizesThatAreNotTheLocalSizeAreTheDispatchCount) {
  Module m = model(executorch_payload({4, 1, 1}));  // 4 workgroups of the shader's 64
  custom::prepare_module(m, "executorch.weft");
  custom::Payload p = custom::parse_payload(m.main().node(0).attr_str("implementation_attrs"));
  ASSERT_TRUE(p.dispatch.has_value());
  EXPECT_EQ(*p.dispatch, (std::array<uint32_t, 3>{4, 1, 1}));
  ASSERT_TRUE(p.dispatch_rule.has_value());
  EXPECT_NE(p.dispatch_rule->find("is not the shader's local size [64,1,1]: it is the dispatch count"),
            std::string::npos)
      << *p.dispatch_rule;

  auto loaded = Model::from_module(m);
  EXPECT_NE(loaded->explain().find("dispatch [4,1,1]: workgroup_sizes [4,1,1] is not the shader's local size"),
            std::string::npos)
      << loaded->explain();
  Context ctx(loaded);
  std::vector<double> x(256);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i) * 0.5;
  ctx.set_input("x", Tensor::from_doubles(TensorType{DType::kFp32, {1, 16, 16, 1}}, x));
  ctx.run();
  std::vector<double> y = ctx.output("y").to_doubles();
  for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], x[i] + 1.0) << i;  // every element: 4 x 64 invocations
}

TEST_F(ExecutorchPayload, WorkgroupSizesEqualToTheLocalSizeAreSaidToBeAmbiguous) {
  Module m = model(executorch_payload({64, 1, 1}));
  custom::prepare_module(m, "executorch.weft");
  custom::Payload p = custom::parse_payload(m.main().node(0).attr_str("implementation_attrs"));
  ASSERT_TRUE(p.dispatch_rule.has_value());
  EXPECT_NE(p.dispatch_rule->find("equals the shader's local size"), std::string::npos) << *p.dispatch_rule;
  // An explicit weft_dispatch wins and needs no rule.
  nlohmann::json j = nlohmann::json::parse(executorch_payload({64, 1, 1}));
  j["weft_dispatch"] = {4, 1, 1};
  Module m2 = model(j.dump());
  custom::prepare_module(m2, "executorch.weft");
  p = custom::parse_payload(m2.main().node(0).attr_str("implementation_attrs"));
  EXPECT_EQ(*p.dispatch, (std::array<uint32_t, 3>{4, 1, 1}));
  EXPECT_FALSE(p.dispatch_rule.has_value());
}

// A shader whose bindings are not the payload's (it reads binding 2, the payload binds 1; or the
// payload says 65536) would read an unbound descriptor: refused before any pipeline exists.
TEST_F(ExecutorchPayload, ShaderBindingsMustBeThePayloads) {
  nlohmann::json j = nlohmann::json::parse(executorch_payload({4, 1, 1}));
  j["output_0_binding"] = 2;  // the shader writes binding 1
  Module m = model(j.dump());
  try {
    custom::prepare_module(m, "bindings.weft");
    FAIL() << "a shader binding nobody binds was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the shader uses a buffer at set 0, binding 1, which the payload does not describe"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("output_0_binding (set 0, binding 2)"), std::string::npos) << e.what();
  }
  j = nlohmann::json::parse(executorch_payload({4, 1, 1}));
  j["input_0_descriptorset"] = 1;  // the shader's resources are in set 0
  Module m2 = model(j.dump());
  EXPECT_THROW(custom::prepare_module(m2, "sets.weft"), Error);
  // The shader's own bindings.
  custom::CompiledShader c = custom::compile_shader(custom::ShaderLanguage::kGlsl, kAddOne, {}, "main", "add_one");
  ASSERT_EQ(c.bindings.size(), 2u);
  EXPECT_EQ(c.bindings[0].binding, 0u);
  EXPECT_EQ(c.bindings[1].binding, 1u);
  EXPECT_EQ(c.bindings[1].kind, custom::ShaderBinding::Kind::kBuffer);
}

}  // namespace
}  // namespace weft
