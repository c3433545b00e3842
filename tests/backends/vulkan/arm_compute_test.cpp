// COMPUTE segments as Arm's model converter writes them (no Weft record): the module's code as
// SPIR-V words or GLSL / HLSL source, bindings in explicit descriptor sets, dispatch_shape as the
// workgroup count. They run on the Vulkan backend as plain dispatches, alone and between GRAPH
// segments (a tensor row and a buffer row of one alias group carrying the same data).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "common/run_cli.h"
#include "common/temp_dir.h"
#include "backends/vulkan/vulkan_fixture.h"
#include "device/vulkan/vulkan.h"
#include "weft/custom.h"
#include "weft/graph.h"
#include "weft/runtime.h"
#include "weft/vgf.h"

namespace weft {
namespace {

namespace fs = std::filesystem;
const fs::path kVgfDump = fs::path(WEFT_SOURCE_DIR) / "../shared/tools/bin/vgf_dump";

constexpr const char* kGlsl = R"(#version 450
layout(local_size_x = 64) in;
layout(set = 1, binding = 3) readonly buffer In { float x[]; };
layout(set = 1, binding = 4) writeonly buffer Out { float y[]; };
void main() { uint i = gl_GlobalInvocationID.x; if (i < 256u) y[i] = 2.0 * x[i] + 1.0; }
)";

constexpr const char* kHlsl = R"(
[[vk::binding(3, 1)]] StructuredBuffer<float> x;
[[vk::binding(4, 1)]] RWStructuredBuffer<float> y;
[numthreads(64, 1, 1)]
void main(uint3 id : SV_DispatchThreadID) { if (id.x < 256) y[id.x] = 2.0 * x[id.x] + 1.0; }
)";

vgf::Resource buffer_row(vgf::ResourceCategory cat) {
  vgf::Resource r;
  r.vk_descriptor_type = vgf::kDescriptorTypeStorageBuffer;
  r.vk_format = vgf::format::kR32Sfloat;
  r.category = cat;
  r.shape = {1, 16, 16, 1};
  return r;
}

// input buffer -> COMPUTE (y = 2x + 1, set 1, bindings 3 and 4, 4 workgroups of 64) -> output buffer
vgf::Container compute_container(vgf::CodeType code) {
  vgf::Container c;
  c.header.vk_header_version = 0;
  vgf::Module m{vgf::ModuleType::kCompute, "scale_shift", "main", code, {}, {}};
  if (code == vgf::CodeType::kSpirv) {
    m.spirv = custom::compile_shader(custom::ShaderLanguage::kGlsl, kGlsl, {}, "main", "scale_shift").spirv;
  } else {
    m.source = code == vgf::CodeType::kGlsl ? kGlsl : kHlsl;
  }
  c.modules.push_back(m);
  c.resources = {buffer_row(vgf::ResourceCategory::kInput), buffer_row(vgf::ResourceCategory::kOutput)};
  vgf::Segment s;
  s.type = vgf::ModuleType::kCompute;
  s.name = "compute_segment_0";
  s.module_index = 0;
  s.set_infos = {{{{3, 0}, {4, 1}}, 1}};
  s.inputs = {{3, 0}};
  s.outputs = {{4, 1}};
  s.dispatch_shape = {4, 1, 1};
  c.sequence.segments = {s};
  c.sequence.inputs = {{3, 0}};
  c.sequence.outputs = {{4, 1}};
  c.sequence.input_names = {"x"};
  c.sequence.output_names = {"y"};
  return c;
}

Tensor input() {
  std::vector<double> v(256);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i) - 100.0;
  return Tensor::from_doubles(TensorType{DType::kFp32, {1, 16, 16, 1}}, v);
}

class ArmCompute : public test::VulkanDeviceTest {};

TEST_F(ArmCompute, SpirvGlslAndHlslSegmentsRunAsPlainDispatches) {
  test::TempDir dir("weft_arm_compute");
  for (vgf::CodeType code : {vgf::CodeType::kSpirv, vgf::CodeType::kGlsl, vgf::CodeType::kHlsl}) {
    SCOPED_TRACE(vgf::code_type_name(code));
    const std::string file = dir.file(std::string("m_") + vgf::code_type_name(code) + ".vgf");
    vgf::save(compute_container(code), file);
    if (fs::exists(kVgfDump)) {
      EXPECT_EQ(std::system(("'" + kVgfDump.string() + "' -i '" + file + "' >/dev/null 2>&1").c_str()), 0);
    }
    auto model = Model::load(file);
    EXPECT_NE(model->explain().find("dispatch [4,1,1]: the container's dispatch_shape"), std::string::npos)
        << model->explain();
    Context ctx(model);
    Tensor x = input();
    ctx.set_input("x", x);
    ctx.run();
    std::vector<double> y = ctx.output("y").to_doubles(), xs = x.to_doubles();
    for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], 2.0 * xs[i] + 1.0) << i;
  }
}

TEST_F(ArmCompute, BetweenGraphSegmentsThroughAnAliasGroup) {
  // GRAPH (ABS) -> TENSOR row 1 / BUFFER row 2 (one alias group) -> COMPUTE -> output buffer.
  GraphBuilder b;
  ValueId x = b.input("x", TensorType{DType::kFp32, {1, 16, 16, 1}});
  b.output(b.op(Op::ABS, {x}, {}, "a"));
  spirv::Binary bin = spirv::encode(Module(b.finish()));
  vgf::Container c = compute_container(vgf::CodeType::kGlsl);
  c.modules.insert(c.modules.begin(), {vgf::ModuleType::kGraph, "graph_partition_0", "main", vgf::CodeType::kSpirv, bin.words, ""});
  vgf::Resource in = buffer_row(vgf::ResourceCategory::kInput), mid_t = buffer_row(vgf::ResourceCategory::kIntermediate);
  in.vk_descriptor_type = vgf::kDescriptorTypeTensorARM;
  mid_t.vk_descriptor_type = vgf::kDescriptorTypeTensorARM;
  mid_t.alias_group_id = 0;
  vgf::Resource mid_b = buffer_row(vgf::ResourceCategory::kIntermediate);
  mid_b.alias_group_id = 0;
  c.resources = {in, mid_t, mid_b, buffer_row(vgf::ResourceCategory::kOutput)};
  vgf::Segment g;
  g.type = vgf::ModuleType::kGraph;
  g.name = "graph_segment_0";
  g.module_index = 0;
  g.set_infos = {{{{0, 0}, {1, 1}}, vgf::kSetIndexUnset}};
  g.inputs = {{0, 0}};
  g.outputs = {{1, 1}};
  g.dispatch_shape = {0, 0, 0};
  vgf::Segment& k = c.sequence.segments[0];
  k.module_index = 1;
  k.set_infos = {{{{3, 2}, {4, 3}}, 1}};
  k.inputs = {{3, 2}};
  k.outputs = {{4, 3}};
  c.sequence.segments.insert(c.sequence.segments.begin(), g);
  c.sequence.inputs = {{0, 0}};
  c.sequence.outputs = {{4, 3}};
  test::TempDir dir("weft_arm_compute");
  const std::string file = dir.file("mixed.vgf");
  vgf::save(c, file);
  if (fs::exists(kVgfDump)) {
    EXPECT_EQ(std::system(("'" + kVgfDump.string() + "' -i '" + file + "' >/dev/null 2>&1").c_str()), 0);
  }
  auto model = Model::load(file);
  Context ctx(model);
  Tensor xin = input();
  ctx.set_input("x", xin);
  ctx.run();
  std::vector<double> y = ctx.output("y").to_doubles(), xs = xin.to_doubles();
  for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], 2.0 * std::abs(xs[i]) + 1.0) << i;
}

TEST_F(ArmCompute, WhatCannotRunIsNamed) {
  vgf::Container c = compute_container(vgf::CodeType::kGlsl);
  c.sequence.segments[0].push_constant_ranges = {{vgf::kShaderStageCompute, 0, 8}};
  try {
    vgf::to_module(c, "pc.vgf");
    FAIL() << "a push constant range without values ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("push constant range of 8 bytes"), std::string::npos) << e.what();
  }
  c = compute_container(vgf::CodeType::kNone);
  try {
    vgf::to_module(c, "placeholder.vgf");
    FAIL() << "a placeholder ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is a placeholder without code"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace weft
