// Models with custom operators in a VGF container: CUSTOM nodes become COMPUTE segments between
// GRAPH segments (docs/vgf.md, "Custom operators: COMPUTE segments"). The layout from_module
// writes (segments, resources and their categories and alias groups, bindings, dispatch shape,
// push constant range, Weft's record), the round trip through files back to the same module, and
// the checks: uncompiled shaders, a tampered file, an intermediate read before it is written.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/module_compare.h"
#include "common/temp_dir.h"
#include "weft/custom.h"
#include "weft/runtime.h"
#include "weft/verify.h"
#include "weft/vgf.h"

namespace weft {
namespace {

using Bytes = std::vector<uint8_t>;

class TempDir : public test::TempDir {
 public:
  TempDir() : test::TempDir("weft_vgf_custom_test") {}
};

// The shader's source (what a GLSL payload carries)...
constexpr const char* kScaleShader = R"(#version 450
layout(local_size_x = 4) in;
layout(set = 0, binding = 0) readonly buffer In { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Out { float y[]; };
layout(push_constant) uniform Push { float scale; uint n; };
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < n) y[i] = x[i] * scale;
}
)";

// ...and a compiled stand-in: a minimal valid compute module (spirv-val --target-env vulkan1.1),
// assembled by hand so that the test needs no shader compiler. The container carries the words
// as they are; nothing here runs them.
//   OpCapability Shader; OpMemoryModel Logical GLSL450; OpEntryPoint GLCompute %1 "main"
//   OpExecutionMode %1 LocalSize 4 1 1; %2 = OpTypeVoid; %3 = OpTypeFunction %2
//   %1 = OpFunction %2 None %3; %4 = OpLabel; OpReturn; OpFunctionEnd
const std::vector<uint32_t>& scale_spirv() {
  static const std::vector<uint32_t> words = {
      0x07230203, 0x00010300, 0, 5, 0,                        // header: SPIR-V 1.3, bound 5
      (2u << 16) | 17, 1,                                     // OpCapability Shader
      (3u << 16) | 14, 0, 1,                                  // OpMemoryModel Logical GLSL450
      (5u << 16) | 15, 5, 1, 0x6E69616D, 0,                   // OpEntryPoint GLCompute %1 "main"
      (6u << 16) | 16, 1, 17, 4, 1, 1,                        // OpExecutionMode %1 LocalSize 4 1 1
      (2u << 16) | 19, 2,                                     // %2 = OpTypeVoid
      (3u << 16) | 33, 3, 2,                                  // %3 = OpTypeFunction %2
      (5u << 16) | 54, 2, 1, 0, 3,                            // %1 = OpFunction %2 None %3
      (2u << 16) | 248, 4,                                    // %4 = OpLabel
      (1u << 16) | 253,                                       // OpReturn
      (1u << 16) | 56};                                       // OpFunctionEnd
  return words;
}

constexpr const char* kBuffer = "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER";
constexpr const char* kTensor = "VK_DESCRIPTOR_TYPE_TENSOR_ARM";

// y = x * scale over n floats; push constants scale = 2.0f, n = 4; one workgroup of 4.
custom::Payload scale_payload(const char* in_type = kBuffer, const char* out_type = kBuffer) {
  custom::Payload p;
  p.entry_point = "main";
  p.workgroup_sizes = {4, 1, 1};
  p.language = custom::ShaderLanguage::kSpirv;
  p.spirv = scale_spirv();
  p.push_constants = {{"scale", 4}, {"n", 4}};
  float scale = 2.0f;
  uint32_t n = 4;
  p.push_constant_data.resize(8);
  std::memcpy(p.push_constant_data.data(), &scale, 4);
  std::memcpy(p.push_constant_data.data() + 4, &n, 4);
  p.dispatch = std::array<uint32_t, 3>{1, 1, 1};
  custom::Resource in;
  in.index = 0;
  in.vkformat = "VK_FORMAT_R32_SFLOAT";
  in.descriptor_type = in_type;
  in.binding = 0;
  in.descriptor_set = 0;
  custom::Resource out = in;
  out.output = true;
  out.descriptor_type = out_type;
  out.binding = 1;
  p.inputs = {in};
  p.outputs = {out};
  return p;
}

const TensorType kF4{DType::kFp32, {4}};

ValueId add_custom(GraphBuilder& b, ValueId in, const std::string& out, const std::string& payload,
                   const std::string& op = "scale", const TensorType& out_type = kF4) {
  return b.op_multi(Op::CUSTOM, {in},
                    {{"operator_name", std::string(op)},
                     {"domain_name", std::string("weft.test")},
                     {"implementation_attrs", payload}},
                    {out}, {out_type})[0];
}

ValueId f32_const(GraphBuilder& b, const std::string& name, std::vector<double> v) {
  return b.constant(name, Tensor::from_doubles(kF4, v));
}

// x -> ADD(x, c) -> CUSTOM -> MUL(b, a, shift) -> y
Module graph_custom_graph() {
  GraphBuilder b("main");
  ValueId x = b.input("x", kF4);
  ValueId c = f32_const(b, "c", {1, 2, 3, 4});
  ValueId a = b.op(Op::ADD, {x, c}, {}, "a");
  ValueId s = add_custom(b, a, "b", custom::write_payload(scale_payload()));
  std::vector<int64_t> zero{0};
  ValueId shift = b.constant("shift", Tensor::from_ints({DType::kInt8, {1}}, zero));
  ValueId y = b.op(Op::MUL, {s, a, shift}, {}, "y");
  b.output(y);
  return Module(b.finish());
}

vgf::BuildOptions graph_constants_only() {
  vgf::BuildOptions o;
  o.encode.inline_constant_max_elements = 0;  // every CONST is a graph constant: tests their numbering
  return o;
}

// The container of graph_custom_graph() whose layout SegmentsResourcesAndBindings spells out.
vgf::Container model_container() { return vgf::from_module(graph_custom_graph(), graph_constants_only()); }

Bytes read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

vgf::Container parse_bytes(const Bytes& b) {
  Buffer buf = Buffer::allocate(b.size());
  std::memcpy(buf.mutable_data(), b.data(), b.size());
  return vgf::parse(buf, "test.vgf");
}

void expect_same(const Module& a, const Module& b) {
  // SPIR-V keeps no node labels of graph operators; CUSTOM labels come back from the record.
  test::expect_same_module(a, b, {.all_labels = false, .data_files = false});
  for (size_t i = 0; i < a.main().nodes().size() && i < b.main().nodes().size(); ++i) {
    if (a.main().node(static_cast<int>(i)).op == Op::CUSTOM) {
      EXPECT_EQ(a.main().node(static_cast<int>(i)).name, b.main().node(static_cast<int>(i)).name);
    }
  }
}

template <class F>
void expect_error(F&& f, ErrorCode code, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error; expected: " << needle;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what() << "\n  expected: " << needle;
  }
}

void expect_check_error(const vgf::Container& c, const std::string& needle) {
  expect_error([&] { vgf::check(c, "test.vgf"); }, ErrorCode::kVerify, needle);
}

// ---- GRAPH, COMPUTE, GRAPH ------------------------------------------------------------------------

TEST(VgfCustom, SegmentsResourcesAndBindings) {
  const Module m = graph_custom_graph();
  verify_or_throw(m);
  const vgf::Container c = vgf::from_module(m, graph_constants_only());
  const vgf::Sequence& q = c.sequence;
  ASSERT_EQ(q.segments.size(), 3u);
  EXPECT_EQ(q.segments[0].type, vgf::ModuleType::kGraph);
  EXPECT_EQ(q.segments[1].type, vgf::ModuleType::kCompute);
  EXPECT_EQ(q.segments[2].type, vgf::ModuleType::kGraph);
  EXPECT_EQ(q.segments[0].name, "main_part0");
  EXPECT_EQ(q.segments[1].name, "b");
  EXPECT_EQ(q.segments[2].name, "main_part1");

  // Modules: one per segment; the COMPUTE module is the payload's shader.
  ASSERT_EQ(c.modules.size(), 3u);
  const vgf::Module& cm = c.modules[q.segments[1].module_index];
  EXPECT_EQ(cm.type, vgf::ModuleType::kCompute);
  EXPECT_EQ(cm.code_type, vgf::CodeType::kSpirv);
  EXPECT_EQ(cm.name, "scale");
  EXPECT_EQ(cm.entry_point, "main");
  EXPECT_EQ(cm.spirv, scale_spirv());
  for (int k : {0, 2}) {
    const vgf::Module& gm = c.modules[q.segments[k].module_index];
    EXPECT_EQ(gm.type, vgf::ModuleType::kGraph);
    EXPECT_EQ(gm.entry_point, q.segments[k].name);
  }

  // Resources: the model's input and output (tensors), then each segment's rows.
  using RC = vgf::ResourceCategory;
  struct Row {
    RC category;
    uint32_t descriptor_type;
    uint32_t format;
    uint32_t alias;
  };
  const uint32_t none = vgf::kNoAliasGroup, ta = vgf::kDescriptorTypeTensorARM, sb = vgf::kDescriptorTypeStorageBuffer,
                 nd = vgf::kNoDescriptorType;
  const std::vector<Row> expected = {
      {RC::kInput, ta, vgf::format::kR32Sfloat, none},          // 0 x
      {RC::kOutput, ta, vgf::format::kR32Sfloat, none},         // 1 y
      {RC::kIntermediate, ta, vgf::format::kR32Sfloat, 0},      // 2 a, as part0 writes it
      {RC::kConstant, nd, vgf::format::kR32Sfloat, none},       // 3 c
      {RC::kIntermediate, sb, vgf::format::kR32Sfloat, 0},      // 4 a, as the shader reads it
      {RC::kIntermediate, sb, vgf::format::kR32Sfloat, 1},      // 5 b, as the shader writes it
      {RC::kConstant, nd, vgf::format::kR8Uint, none},          // 6 Weft's record of the CUSTOM node
      {RC::kIntermediate, ta, vgf::format::kR32Sfloat, 1},      // 7 b, as part1 reads it
      {RC::kConstant, nd, vgf::format::kR8Sint, none},          // 8 shift
  };
  ASSERT_EQ(c.resources.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("resource " + std::to_string(i));
    const vgf::Resource& r = c.resources[i];
    EXPECT_EQ(r.category, expected[i].category);
    EXPECT_EQ(r.vk_descriptor_type, expected[i].descriptor_type);
    EXPECT_EQ(r.vk_format, expected[i].format);
    EXPECT_EQ(r.alias_group_id, expected[i].alias);
    EXPECT_FALSE(r.sampler);
    if (i != 6 && i != 8) {
      EXPECT_EQ(r.shape, (std::vector<int64_t>{4}));
      EXPECT_EQ(r.strides, (std::vector<int64_t>{4}));
    }
  }

  // Constants: part0's graph constant, the record, part1's graph constant (GraphConstantID 2).
  ASSERT_EQ(c.constants.size(), 3u);
  EXPECT_EQ(c.constants[0].mrt_index, 3u);
  EXPECT_EQ(c.constants[1].mrt_index, 6u);
  EXPECT_EQ(c.constants[2].mrt_index, 8u);
  EXPECT_EQ(q.segments[0].constants, (std::vector<uint32_t>{0}));
  EXPECT_EQ(q.segments[1].constants, (std::vector<uint32_t>{1}));
  EXPECT_EQ(q.segments[2].constants, (std::vector<uint32_t>{2}));
  EXPECT_EQ(vgf::graph_constants(c, 2).at(0).id, 2u);

  // The COMPUTE segment: one descriptor set (set_index 0), the payload's bindings.
  const vgf::Segment& s = q.segments[1];
  ASSERT_EQ(s.set_infos.size(), 1u);
  EXPECT_EQ(s.set_infos[0].set_index, 0u);
  EXPECT_EQ(s.set_infos[0].bindings, (std::vector<vgf::BindingSlot>{{0, 4}, {1, 5}}));
  EXPECT_EQ(s.inputs, (std::vector<vgf::BindingSlot>{{0, 4}}));
  EXPECT_EQ(s.outputs, (std::vector<vgf::BindingSlot>{{1, 5}}));
  EXPECT_EQ(s.dispatch_shape, (std::vector<uint32_t>{1, 1, 1}));
  ASSERT_EQ(s.push_constant_ranges.size(), 1u);
  EXPECT_EQ(s.push_constant_ranges[0], (vgf::PushConstantRange{vgf::kShaderStageCompute, 0, 8}));

  // GRAPH segments bind their interface; part1 reads b then a (first use in MUL), writes y.
  EXPECT_EQ(q.segments[0].inputs.size(), 1u);
  EXPECT_EQ(q.segments[0].inputs[0].mrt_index, 0u);
  ASSERT_EQ(q.segments[0].outputs.size(), 1u);
  EXPECT_EQ(q.segments[0].outputs[0].mrt_index, 2u);
  ASSERT_EQ(q.segments[2].inputs.size(), 2u);
  EXPECT_EQ(q.segments[2].inputs[0].mrt_index, 7u);
  EXPECT_EQ(q.segments[2].inputs[1].mrt_index, 2u);
  ASSERT_EQ(q.segments[2].outputs.size(), 1u);
  EXPECT_EQ(q.segments[2].outputs[0].mrt_index, 1u);
  EXPECT_TRUE(q.segments[2].push_constant_ranges.empty());
  EXPECT_EQ(q.segments[2].dispatch_shape, (std::vector<uint32_t>{0, 0, 0}));

  // The model's slots: numbered like a single-graph model's (inputs, then outputs).
  EXPECT_EQ(q.inputs, (std::vector<vgf::BindingSlot>{{0, 0}}));
  EXPECT_EQ(q.outputs, (std::vector<vgf::BindingSlot>{{1, 1}}));
  EXPECT_EQ(q.input_names, (std::vector<std::string>{"x"}));
  EXPECT_EQ(q.output_names, (std::vector<std::string>{"y"}));

  // Weft's record: the node as written.
  std::optional<vgf::CustomOpRecord> rec = vgf::custom_op_record(c, 1);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->constant, 1u);
  EXPECT_EQ(rec->graph, "main");
  EXPECT_EQ(rec->operator_name, "scale");
  EXPECT_EQ(rec->domain_name, "weft.test");
  EXPECT_EQ(rec->implementation_attrs, custom::write_payload(scale_payload()));
  ASSERT_EQ(rec->inputs.size(), 1u);
  EXPECT_EQ(rec->inputs[0].name, "a");
  EXPECT_EQ(rec->inputs[0].type, kF4);
  ASSERT_EQ(rec->outputs.size(), 1u);
  EXPECT_EQ(rec->outputs[0].name, "b");
  EXPECT_FALSE(vgf::custom_op_record(c, 0));
  std::string text(reinterpret_cast<const char*>(c.constants[1].data.data()), c.constants[1].data.size());
  EXPECT_EQ(text.rfind("{\"weft_custom_op\":1,", 0), 0u) << text;

  vgf::check(c, "test.vgf");
}

TEST(VgfCustom, RoundTripThroughFiles) {
  TempDir dir;
  const Module m = graph_custom_graph();
  for (const vgf::BuildOptions& o : {vgf::BuildOptions{}, graph_constants_only()}) {
    vgf::Container c = vgf::from_module(m, o);
    vgf::save(c, dir.file("a.vgf"));
    vgf::Container r = vgf::load(dir.file("a.vgf"));
    EXPECT_TRUE(vgf::equal_tables(c, r));
    vgf::save(r, dir.file("b.vgf"));
    EXPECT_EQ(read_all(dir.file("a.vgf")), read_all(dir.file("b.vgf")));

    Module back = vgf::to_module(r, dir.file("a.vgf"));
    verify_or_throw(back);
    expect_same(m, back);
    // And once more: the decoded module builds the same container.
    EXPECT_TRUE(vgf::equal_tables(vgf::from_module(back, o), c));
  }
  // The runtime reads the whole sequence.
  vgf::save(vgf::from_module(m), dir.file("m.vgf"));
  expect_same(m, read_model(dir.file("m.vgf")));
}

TEST(VgfCustom, ConstantInTwoGraphSegmentsAndAnOutputReadLater) {
  GraphBuilder b("main");
  ValueId x = b.input("x", kF4);
  ValueId c = f32_const(b, "c", {1, 2, 3, 4});
  ValueId a = b.op(Op::ADD, {x, c}, {}, "a");
  ValueId s = add_custom(b, a, "s", custom::write_payload(scale_payload()));
  ValueId y = b.op(Op::SUB, {s, c}, {}, "y");
  b.output(y);
  b.output(a);  // a model output that the shader reads too
  Module m(b.finish());
  for (const vgf::BuildOptions& o : {vgf::BuildOptions{}, graph_constants_only()}) {
    vgf::Container cont = vgf::from_module(m, o);
    ASSERT_EQ(cont.sequence.segments.size(), 3u);
    // `a`: the model's OUTPUT row (written by segment 0) and the shader's view of it, one group.
    const uint32_t out_a = cont.sequence.outputs.at(1).mrt_index;
    const uint32_t shader_a = cont.sequence.segments[1].inputs.at(0).mrt_index;
    EXPECT_EQ(cont.sequence.segments[0].outputs.at(0).mrt_index, out_a);
    EXPECT_NE(out_a, shader_a);
    EXPECT_EQ(cont.resources[shader_a].category, vgf::ResourceCategory::kOutput);
    EXPECT_EQ(cont.resources[shader_a].alias_group_id, cont.resources[out_a].alias_group_id);
    EXPECT_NE(cont.resources[out_a].alias_group_id, vgf::kNoAliasGroup);
    Module back = vgf::to_module(parse_bytes(vgf::serialize(cont)), "test.vgf");
    expect_same(m, back);  // one CONST c, although both GRAPH segments carry it
  }
}

TEST(VgfCustom, SingleGraphModelsAreUnchanged) {
  GraphBuilder b("main");
  ValueId x = b.input("x", kF4);
  ValueId c = f32_const(b, "c", {1, 2, 3, 4});
  b.output(b.op(Op::ADD, {x, c}, {}, "y"));
  Module m(b.finish());
  vgf::Container cont = vgf::from_module(m);
  ASSERT_EQ(cont.sequence.segments.size(), 1u);
  for (const vgf::Resource& r : cont.resources) EXPECT_EQ(r.alias_group_id, vgf::kNoAliasGroup);
  // The whole-sequence decoder gives what the segment decoder gives.
  Module a = vgf::to_module(cont, 0, "x.vgf");
  Module w = vgf::to_module(cont, "x.vgf");
  test::expect_same_module(a, w);
}

// ---- Two adjacent CUSTOM nodes; model input and output bound directly --------------------------

TEST(VgfCustom, AdjacentCustomNodesOnModelInputAndOutput) {
  GraphBuilder b("main");
  ValueId x = b.input("x", kF4);
  ValueId t = add_custom(b, x, "t", custom::write_payload(scale_payload()), "first");
  ValueId y = add_custom(b, t, "y", custom::write_payload(scale_payload(kBuffer, kTensor)), "second");
  b.output(y);
  Module m(b.finish());
  m.main().mutable_node(1).name = "second_node";

  vgf::Container c = vgf::from_module(m);
  const vgf::Sequence& q = c.sequence;
  ASSERT_EQ(q.segments.size(), 2u);
  EXPECT_EQ(q.segments[0].type, vgf::ModuleType::kCompute);
  EXPECT_EQ(q.segments[1].type, vgf::ModuleType::kCompute);
  EXPECT_EQ(q.segments[0].name, "t");
  EXPECT_EQ(q.segments[1].name, "second_node");
  EXPECT_EQ(c.modules[0].name, "first");
  EXPECT_EQ(c.modules[1].name, "second");

  // 0 x (TENSOR_ARM) and 2 x (STORAGE_BUFFER) alias; t is one row shared by both segments; the
  // second shader writes y as TENSOR_ARM: the model's OUTPUT row itself.
  ASSERT_EQ(c.resources.size(), 6u);
  EXPECT_EQ(c.resources[2].category, vgf::ResourceCategory::kInput);
  EXPECT_EQ(c.resources[2].vk_descriptor_type, vgf::kDescriptorTypeStorageBuffer);
  EXPECT_EQ(c.resources[0].alias_group_id, 0u);
  EXPECT_EQ(c.resources[2].alias_group_id, 0u);
  EXPECT_EQ(c.resources[3].category, vgf::ResourceCategory::kIntermediate);
  EXPECT_EQ(c.resources[3].alias_group_id, vgf::kNoAliasGroup);
  EXPECT_EQ(c.resources[1].alias_group_id, vgf::kNoAliasGroup);
  EXPECT_EQ(q.segments[0].inputs, (std::vector<vgf::BindingSlot>{{0, 2}}));
  EXPECT_EQ(q.segments[0].outputs, (std::vector<vgf::BindingSlot>{{1, 3}}));
  EXPECT_EQ(q.segments[1].inputs, (std::vector<vgf::BindingSlot>{{0, 3}}));
  EXPECT_EQ(q.segments[1].outputs, (std::vector<vgf::BindingSlot>{{1, 1}}));
  EXPECT_EQ(c.resources[4].vk_format, vgf::format::kR8Uint);  // records
  EXPECT_EQ(c.resources[5].vk_format, vgf::format::kR8Uint);

  Module back = vgf::to_module(parse_bytes(vgf::serialize(c)), "test.vgf");
  expect_same(m, back);
}

TEST(VgfCustom, ConstantReadByTheShader) {
  GraphBuilder b("main");
  ValueId w = f32_const(b, "w", {5, 6, 7, 8});
  ValueId s = add_custom(b, w, "s", custom::write_payload(scale_payload()));
  ValueId x = b.input("x", kF4);
  b.output(b.op(Op::ADD, {s, x}, {}, "y"));
  Module m(b.finish());
  vgf::Container c = vgf::from_module(m);
  const vgf::Segment& cs = c.sequence.segments.at(0);
  ASSERT_EQ(cs.type, vgf::ModuleType::kCompute);
  // The constant: a CONSTANT resource with the shader's descriptor type, listed and bound.
  const vgf::Resource& r = c.resources.at(cs.inputs.at(0).mrt_index);
  EXPECT_EQ(r.category, vgf::ResourceCategory::kConstant);
  EXPECT_EQ(r.vk_descriptor_type, vgf::kDescriptorTypeStorageBuffer);
  EXPECT_EQ(r.alias_group_id, vgf::kNoAliasGroup);
  ASSERT_EQ(cs.constants.size(), 2u);  // the data, then the record
  EXPECT_EQ(c.constants.at(cs.constants[0]).mrt_index, cs.inputs[0].mrt_index);
  EXPECT_EQ(c.constants.at(cs.constants[0]).data.size(), 16u);
  Module back = vgf::to_module(parse_bytes(vgf::serialize(c)), "test.vgf");
  expect_same(m, back);
}

TEST(VgfCustom, SampledImageAndDeadOperators) {
  const TensorType img{DType::kFp32, {2, 3, 4}};
  custom::Payload p = scale_payload();
  p.push_constants.clear();
  p.push_constant_data.clear();
  p.inputs[0].descriptor_type = "VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER";
  p.inputs[0].vkformat = "VK_FORMAT_R32G32B32A32_SFLOAT";
  p.inputs[0].filter = "nearest";
  p.inputs[0].address_mode = "repeat";
  GraphBuilder b("main");
  ValueId x = b.input("x", img);
  b.op(Op::ADD, {x, x}, {}, "unused");  // nothing reads it: no segment
  b.output(add_custom(b, x, "y", custom::write_payload(p), "sample", img));
  Module m(b.finish());
  vgf::Container c = vgf::from_module(m);
  ASSERT_EQ(c.sequence.segments.size(), 1u);
  const vgf::Segment& s = c.sequence.segments[0];
  EXPECT_EQ(s.type, vgf::ModuleType::kCompute);
  EXPECT_TRUE(s.push_constant_ranges.empty());
  const vgf::Resource& r = c.resources.at(s.inputs.at(0).mrt_index);
  EXPECT_EQ(r.vk_descriptor_type, vgf::kDescriptorTypeCombinedImageSampler);
  EXPECT_EQ(r.vk_format, 109u);  // VK_FORMAT_R32G32B32A32_SFLOAT
  EXPECT_EQ(r.shape, img.shape);
  EXPECT_TRUE(r.strides.empty());
  ASSERT_TRUE(r.sampler);
  EXPECT_EQ(*r.sampler, (vgf::SamplerConfig{0, 0, 0, 0, 0}));  // NEAREST, REPEAT, transparent black
  EXPECT_EQ(r.alias_group_id, c.resources[0].alias_group_id);
  EXPECT_NE(r.alias_group_id, vgf::kNoAliasGroup);
  Module back = vgf::to_module(parse_bytes(vgf::serialize(c)), "test.vgf");
  EXPECT_EQ(back.main().nodes().size(), 1u);  // the unused ADD is gone
  EXPECT_EQ(back.main().node(0).attr_str("implementation_attrs"), custom::write_payload(p));
}

// ---- Errors -------------------------------------------------------------------------------------

TEST(VgfCustom, UncompiledShaderIsRejected) {
  custom::Payload p = scale_payload();
  p.language = custom::ShaderLanguage::kGlsl;
  p.spirv.clear();
  p.shader_code = kScaleShader;
  GraphBuilder b("main");
  b.output(add_custom(b, b.input("x", kF4), "y", custom::write_payload(p)));
  Module m(b.finish());
  expect_error([&] { vgf::from_module(m); }, ErrorCode::kUnsupported,
               "custom node 'y' (operator 'scale') carries GLSL source");
  expect_error([&] { vgf::from_module(m); }, ErrorCode::kUnsupported, "compile the shader first (weft compile --custom-ops)");

  custom::Payload nd = scale_payload();
  nd.dispatch.reset();
  GraphBuilder b2("main");
  b2.output(add_custom(b2, b2.input("x", kF4), "y", custom::write_payload(nd)));
  Module m2(b2.finish());
  expect_error([&] { vgf::from_module(m2); }, ErrorCode::kUnsupported, "has no weft_dispatch");
}

TEST(VgfCustom, TamperedFileIsRejected) {
  vgf::Container c = model_container();
  Bytes good = vgf::serialize(c);
  parse_bytes(good);

  vgf::Container t = c;
  t.sequence.segments[1].dispatch_shape = {2, 1, 1};
  Bytes bad = vgf::serialize(t, {.check = false});
  expect_error([&] { parse_bytes(bad); }, ErrorCode::kVerify,
               "segment 1 'b': dispatch_shape [2,1,1] is not the record's weft_dispatch [1,1,1]");

  t = c;
  t.sequence.segments[1].push_constant_ranges[0].size = 4;
  expect_check_error(t, "segment 1 'b': push_constant_ranges do not describe the record's 8-byte push constant block");
  t = c;
  t.modules[1].entry_point = "other";
  expect_check_error(t, "segment 1 'b': module 1 'scale': entry_point 'other' is not the record's entry_point 'main'");
  t = c;
  t.modules[1].spirv.push_back(0);
  expect_check_error(t, "its code is not the SPIR-V of the record's shader_code");
  t = c;
  t.sequence.segments[1].set_infos[0].bindings[1].binding = 7;
  t.sequence.segments[1].outputs[0].binding = 7;
  expect_check_error(t, "segment 1 'b': outputs[0] has binding 7; the record's output_0_binding is 1");
  t = c;
  t.resources[t.sequence.segments[1].inputs[0].mrt_index].vk_descriptor_type = vgf::kDescriptorTypeTensorARM;
  expect_check_error(t, "vk_descriptor_type VK_DESCRIPTOR_TYPE_TENSOR_ARM is not the record's input_0_vkdescriptortype");
}

TEST(VgfCustom, IntermediateReadBeforeWrittenIsRejected) {
  vgf::Container c = model_container();
  vgf::Container t = c;
  std::swap(t.sequence.segments[0], t.sequence.segments[1]);
  expect_check_error(t, "segment 0 'b': inputs[0] reads resource 4 (INTERMEDIATE, alias group 0) before it is written "
                        "(by segment 1 'main_part0')");
  t = c;
  t.sequence.segments[0].outputs.clear();  // no segment lists `a` among its outputs
  expect_check_error(t, "segment 1 'b': inputs[0] reads resource 4 (INTERMEDIATE, alias group 0), which no segment "
                        "writes");
  t = c;
  t.sequence.segments[2].outputs.push_back(t.sequence.segments[0].outputs[0]);
  expect_check_error(t, "segment 2 'main_part1': outputs[1] writes resource 2 (INTERMEDIATE, alias group 0), which "
                        "segment 0 'main_part0' writes already");
}

TEST(VgfCustom, ComputeSegmentRules) {
  vgf::Container c = model_container();
  vgf::Container t = c;
  t.sequence.segments[1].dispatch_shape = {1, 0, 1};
  expect_check_error(t, "segment 1 'b': dispatch_shape [1,0,1]: a COMPUTE segment dispatches 3 workgroup counts");
  t = c;
  t.sequence.segments[1].dispatch_shape.clear();
  expect_check_error(t, "dispatch_shape []: a COMPUTE segment dispatches 3 workgroup counts");
  t = c;
  t.sequence.segments[1].push_constant_ranges[0].size = 6;
  expect_check_error(t, "push_constant_ranges[0] (offset 0, size 6): a push constant range has an offset and a size "
                        "that are multiples of 4");
  t = c;
  t.sequence.segments[1].push_constant_ranges[0].offset = 0xFFFFFFFC;
  expect_check_error(t, "offset + size does not fit 32 bits");
  t = c;
  t.modules[1].spirv.clear();
  t.modules[1].code_type = vgf::CodeType::kNone;
  expect_check_error(t, "module 1 'scale': its code is not the SPIR-V of the record's shader_code");
  t = c;
  t.resources[c.constants[0].mrt_index].alias_group_id = 5;
  expect_check_error(t, "a constant has storage of its own and never shares it");
  t = c;
  t.sequence.segments[1].set_infos[0].bindings[1].binding = 0;
  expect_check_error(t, "binding 0 of set 0 appears twice");
  t = c;
  t.sequence.segments[1].inputs[0].mrt_index = 99;
  expect_check_error(t, "segment 1 'b': inputs[0]: mrt_index 99 names no resource");
}

TEST(VgfCustom, DumpShowsComputeSegments) {
  nlohmann::json j = nlohmann::json::parse(vgf::to_json(model_container(), {.disassemble = true}));
  const auto& s = j["sequence"]["segments"][1];
  EXPECT_EQ(s["type"], "COMPUTE");
  EXPECT_EQ(s["dispatch_shape"], nlohmann::json::array({1, 1, 1}));
  EXPECT_EQ(s["push_constant_ranges"][0]["size"], 8);
  EXPECT_EQ(s["push_constant_ranges"][0]["stage_flags"], 32);
  EXPECT_EQ(s["set_infos"][0]["set_index"], 0);
  EXPECT_EQ(s["custom_op"]["operator_name"], "scale");
  EXPECT_EQ(s["custom_op"]["inputs"][0]["type"], "f32[4]");
  EXPECT_EQ(j["modules"][1]["type"], "COMPUTE");
  EXPECT_EQ(j["modules"][1]["code_type"], "SPIRV");
  EXPECT_NE(j["modules"][1]["disassembly"].get<std::string>().find("OpEntryPoint GLCompute"), std::string::npos)
      << j["modules"][1].dump();
  EXPECT_EQ(j["resources"][4]["vk_descriptor_type"], "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER");
  EXPECT_EQ(j["resources"][4]["alias_group_id"], 0);
  EXPECT_FALSE(j["resources"][0].contains("alias_group_id"));
}

}  // namespace
}  // namespace weft
