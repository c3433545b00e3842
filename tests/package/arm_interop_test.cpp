// Containers as Arm's tools write them (the facts are in docs/vgf.md, "Containers from Arm's
// tools"): a GRAPH module from the model converter (SPIR-V 1.5, MLIR's generator word, interface
// variables named <entry>_arg_<i>, zero tensors as OpConstantNull, equal-valued tensors as
// OpConstantCompositeReplicateEXT, constants first in the resource table, model names in
// input_names / output_names), placeholder modules of the SDK's encoder and test files, 0.3
// containers and entry-point names that differ from the module's. Each is built here from those
// facts; Arm's own reader (vgf_dump, where ../shared has it) must accept it, and Weft must read,
// name and run it.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/run_cli.h"
#include "common/temp_dir.h"
#include "weft/graph.h"
#include "weft/interpreter.h"
#include "weft/npy.h"
#include "weft/runtime.h"
#include "weft/spirv.h"
#include "weft/vgf.h"

namespace weft {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

const fs::path kVgfDump = fs::path(WEFT_SOURCE_DIR) / "../shared/tools/bin/vgf_dump";

// CONV2D 1x1 (f32, 2 -> 2 channels) as Arm's converter lays it out: pad all zeros (OpConstantNull),
// stride and dilation [1,1] (replicated), zero points null, weight and bias graph constants 0, 1.
constexpr const char* kConverterModule = R"(; SPIR-V
; Version: 1.5
; Generator: 22; 0
; Bound: 60
; Schema: 0
               OpCapability GraphARM
               OpCapability TensorsARM
               OpCapability Shader
               OpCapability VulkanMemoryModel
               OpCapability Matrix
               OpCapability ReplicatedCompositesEXT
               OpExtension "SPV_ARM_graph"
               OpExtension "SPV_ARM_tensors"
               OpExtension "SPV_EXT_replicated_composites"
               OpExtension "SPV_KHR_vulkan_memory_model"
       %tosa = OpExtInstImport "TOSA.001000.1"
               OpMemoryModel Logical Vulkan
               OpName %arg0 "graph_partition_0_arg_0"
               OpName %res0 "graph_partition_0_res_0"
               OpDecorate %arg0 Binding 0
               OpDecorate %arg0 DescriptorSet 0
               OpDecorate %res0 Binding 1
               OpDecorate %res0 DescriptorSet 0
      %float = OpTypeFloat 32
       %uint = OpTypeInt 32 0
       %bool = OpTypeBool
     %uint_1 = OpConstant %uint 1
     %uint_2 = OpConstant %uint 2
     %uint_3 = OpConstant %uint 3
     %uint_4 = OpConstant %uint 4
     %uint_0 = OpConstant %uint 0
      %arr_4 = OpTypeArray %uint %uint_4
      %arr_1 = OpTypeArray %uint %uint_1
    %shape_a = OpConstantComposite %arr_4 %uint_1 %uint_4 %uint_4 %uint_2
    %shape_w = OpConstantComposite %arr_4 %uint_2 %uint_1 %uint_1 %uint_2
    %shape_1 = OpConstantComposite %arr_1 %uint_1
    %shape_2 = OpConstantComposite %arr_1 %uint_2
    %shape_4 = OpConstantComposite %arr_1 %uint_4
      %t_act = OpTypeTensorARM %float %uint_4 %shape_a
        %t_w = OpTypeTensorARM %float %uint_4 %shape_w
        %t_b = OpTypeTensorARM %float %uint_1 %shape_2
       %t_zp = OpTypeTensorARM %float %uint_1 %shape_1
      %t_i32 = OpTypeTensorARM %uint %uint_1 %shape_4
     %t_i32x2 = OpTypeTensorARM %uint %uint_1 %shape_2
    %ptr_act = OpTypePointer UniformConstant %t_act
       %arg0 = OpVariable %ptr_act UniformConstant
       %res0 = OpVariable %ptr_act UniformConstant
      %gtype = OpTypeGraphARM 1 %t_act %t_act
          %w = OpGraphConstantARM %t_w 0
          %b = OpGraphConstantARM %t_b 1
        %pad = OpConstantNull %t_i32
        %one = OpConstantCompositeReplicateEXT %t_i32x2 %uint_1
         %zp = OpConstantNull %t_zp
      %false = OpConstantFalse %bool
               OpGraphEntryPointARM %graph "graph_partition_0" %arg0 %res0
      %graph = OpGraphARM %gtype
         %in = OpGraphInputARM %t_act %uint_0
       %conv = OpExtInst %t_act %tosa CONV2D %pad %one %one %uint_3 %false %in %w %b %zp %zp
               OpGraphSetOutputARM %conv %uint_0
               OpGraphEndARM
)";

const std::vector<float> kWeight = {0.5f, -1.0f, 2.0f, 0.25f};  // [OC=2][1][1][IC=2]
const std::vector<float> kBias = {0.125f, -3.0f};

Buffer floats(const std::vector<float>& v) {
  Buffer b = Buffer::allocate(v.size() * sizeof(float));
  std::memcpy(b.mutable_data(), v.data(), b.size());
  return b;
}

// The container the converter would write for kConverterModule: constant rows first (GraphConstantID
// i = constant i = row i), then the model input and output; names in the model sequence.
vgf::Container converter_container() {
  vgf::Container c;
  c.header.vk_header_version = 0;
  c.modules.push_back({vgf::ModuleType::kGraph, "graph_partition_0", "graph_partition_0", vgf::CodeType::kSpirv,
                       spirv::assemble(kConverterModule, "converter.spvasm"), ""});
  auto row = [](vgf::ResourceCategory cat, uint32_t descriptor, std::vector<int64_t> shape) {
    vgf::Resource r;
    r.vk_descriptor_type = descriptor;
    r.vk_format = vgf::format::kR32Sfloat;
    r.category = cat;
    r.shape = std::move(shape);
    return r;
  };
  c.resources.push_back(row(vgf::ResourceCategory::kConstant, vgf::kNoDescriptorType, {2, 1, 1, 2}));
  c.resources.push_back(row(vgf::ResourceCategory::kConstant, vgf::kNoDescriptorType, {2}));
  c.resources.push_back(row(vgf::ResourceCategory::kInput, vgf::kDescriptorTypeTensorARM, {1, 4, 4, 2}));
  c.resources.push_back(row(vgf::ResourceCategory::kOutput, vgf::kDescriptorTypeTensorARM, {1, 4, 4, 2}));
  c.constants.push_back({0, -1, floats(kWeight)});
  c.constants.push_back({1, -1, floats(kBias)});
  vgf::Segment s;
  s.type = vgf::ModuleType::kGraph;
  s.name = "graph_segment_0";
  s.module_index = 0;
  s.set_infos = {{{{0, 2}, {1, 3}}, vgf::kSetIndexUnset}};
  s.inputs = {{0, 2}};
  s.outputs = {{1, 3}};
  s.constants = {0, 1};
  s.dispatch_shape = {0, 0, 0};
  c.sequence.segments = {s};
  c.sequence.inputs = {{0, 2}};
  c.sequence.outputs = {{1, 3}};
  c.sequence.input_names = {"input"};
  c.sequence.output_names = {"Identity"};
  return c;
}

Tensor input_tensor() {
  std::vector<double> v(32);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i % 7) - 3.0;
  return Tensor::from_doubles(TensorType{DType::kFp32, {1, 4, 4, 2}}, v);
}

// out[n,h,w,oc] = bias[oc] + sum_ic in[n,h,w,ic] * w[oc,ic]
std::vector<double> expected_output(const Tensor& in) {
  std::vector<double> x = in.to_doubles(), y(x.size());
  for (size_t p = 0; p < x.size() / 2; ++p)
    for (size_t oc = 0; oc < 2; ++oc)
      y[p * 2 + oc] = kBias[oc] + x[p * 2] * kWeight[oc * 2] + x[p * 2 + 1] * kWeight[oc * 2 + 1];
  return y;
}

// `vgf_dump -i FILE` of Arm's VGF library: 0 when every section verifies and parses.
int arm_vgf_dump(const std::string& file, const TempDir& dir) {
  return std::system(("'" + kVgfDump.string() + "' -i '" + file + "' > '" + dir.file("dump.json") + "' 2>&1").c_str());
}

TEST(ArmInterop, ConverterContainerRunsByTheContainersNames) {
  TempDir dir("weft_arm");
  const std::string file = dir.file("model.vgf");
  vgf::save(converter_container(), file);
  if (fs::exists(kVgfDump)) {
    EXPECT_EQ(arm_vgf_dump(file, dir), 0) << test::slurp(dir.file("dump.json"));
  }

  // The model's inputs and outputs are the container's names, not the SPIR-V ids.
  auto model = Model::load(file);
  ASSERT_EQ(model->inputs().size(), 1u);
  EXPECT_EQ(model->inputs()[0].name, "input");
  EXPECT_EQ(model->outputs()[0].name, "Identity");
  Context ctx(model);
  Tensor in = input_tensor();
  ctx.set_input("input", in);
  ctx.run();
  std::vector<double> got = ctx.output("Identity").to_doubles(), want = expected_output(in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(static_cast<float>(got[i]), static_cast<float>(want[i])) << i;

  // The CLI addresses them the same way.
  write_npy(dir.file("x.npy"), in);
  test::CliResult r = test::run_weft(dir, "run model.vgf --input input=x.npy --output Identity=y.npy");
  EXPECT_EQ(r.rc, 0) << r.all();
  Tensor y = read_npy(dir.file("y.npy"));
  EXPECT_EQ(y.to_doubles(), got);
}

TEST(ArmInterop, ReplicatedAndNullConstantsDecodeToTheirValues) {
  vgf::Container c = converter_container();
  Module m = vgf::to_module(c, "converter.vgf");
  const Graph& g = m.main();
  int found = 0;
  for (const Node& n : g.nodes()) {
    if (n.op != Op::CONV2D) continue;
    ++found;
    EXPECT_EQ(n.attr_ints("pad"), (std::vector<int64_t>{0, 0, 0, 0}));
    EXPECT_EQ(n.attr_ints("stride"), (std::vector<int64_t>{1, 1}));
    EXPECT_EQ(n.attr_ints("dilation"), (std::vector<int64_t>{1, 1}));
    EXPECT_FALSE(n.attr_bool("local_bound"));
    const Node& zp = g.node(g.value(n.inputs[3]).producer);
    EXPECT_EQ(zp.attr_tensor("values").to_doubles(), std::vector<double>{0.0});
  }
  EXPECT_EQ(found, 1);
  // Upstream spirv-val takes the module (the converter's output is what it validates).
  EXPECT_TRUE(spirv::validate(c.modules[0].spirv, {.target_env = "vulkan1.3"}).empty());
}

TEST(ArmInterop, EntryPointNameThatDiffersFromTheModulesIsAWarning) {
  vgf::Container c = converter_container();
  c.modules[0].entry_point = "main";  // the SDK's samples use "main" whatever the graph is called
  TempDir dir("weft_arm");
  const std::string file = dir.file("model.vgf");
  vgf::save(c, file);
  vgf::Container back = vgf::load(file);
  ASSERT_EQ(back.warnings.size(), 1u);
  EXPECT_NE(back.warnings[0].find("entry_point 'main' is not the name of its OpGraphEntryPointARM"), std::string::npos)
      << back.warnings[0];
  EXPECT_NO_THROW(vgf::to_module(back, file));
  test::CliResult r = test::run_weft(dir, "check model.vgf");
  EXPECT_EQ(r.rc, 0) << r.all();
  EXPECT_NE(r.err.find("warning:"), std::string::npos) << r.all();
}

TEST(ArmInterop, PlaceholderModulesAreDumpedNotRun) {
  TempDir dir("weft_arm");
  for (int variant = 0; variant < 2; ++variant) {
    SCOPED_TRACE(variant == 0 ? "no code (the SDK encoder's placeholder)" : "one zero word (the SDK's test files)");
    vgf::Container c = converter_container();
    if (variant == 0) {
      c.modules[0].spirv.clear();
    } else {
      c.modules[0].spirv = {0};
    }
    const std::string file = dir.file("placeholder" + std::to_string(variant) + ".vgf");
    vgf::save(c, file);
    if (fs::exists(kVgfDump)) {
      EXPECT_EQ(arm_vgf_dump(file, dir), 0) << test::slurp(dir.file("dump.json"));
    }
    vgf::Container back = vgf::load(file);
    ASSERT_FALSE(back.warnings.empty());
    EXPECT_NE(back.warnings[0].find("placeholder"), std::string::npos);
    test::CliResult dump = test::run_weft(dir, "dump " + fs::path(file).filename().string());
    EXPECT_EQ(dump.rc, 0) << dump.all();
    test::CliResult run = test::run_weft(dir, "check " + fs::path(file).filename().string());
    EXPECT_NE(run.rc, 0);
    EXPECT_NE(run.err.find("is a placeholder"), std::string::npos) << run.all();
  }
}

TEST(ArmInterop, Version03ContainersRead) {
  // 0.3.x files have the same header and tables (the FlatBuffers constant section of 0.3 and
  // unaligned sections are covered by VgfLegacy in vgf_test.cpp).
  std::vector<uint8_t> bytes = vgf::serialize(converter_container());
  bytes[8] = 0, bytes[9] = 3, bytes[10] = 0;
  Buffer buf = Buffer::allocate(bytes.size());
  std::memcpy(buf.mutable_data(), bytes.data(), bytes.size());
  vgf::Container back = vgf::parse(buf, "old.vgf");
  EXPECT_EQ(back.header.version.str(), "0.3.0");
  Module m = vgf::to_module(back, "old.vgf");
  std::vector<Tensor> out = Interpreter(m).run(std::vector<Tensor>{input_tensor()});
  std::vector<double> got = out[0].to_doubles(), want = expected_output(input_tensor());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(static_cast<float>(got[i]), static_cast<float>(want[i]));
}

// `weft dump --format vgf_dump` prints what Arm's vgf_dump prints, byte for byte.
TEST(ArmInterop, VgfDumpFormatIsArmsLayout) {
  TempDir dir("weft_arm");
  std::vector<std::pair<std::string, vgf::Container>> cases;
  cases.emplace_back("converter", converter_container());
  vgf::Container placeholder = converter_container();
  placeholder.modules[0].spirv.clear();
  placeholder.sequence.input_names.clear();  // names absent: printed as ""
  cases.emplace_back("placeholder", placeholder);
  vgf::Container sampler = converter_container();
  sampler.resources[2].sampler = vgf::SamplerConfig{1, 1, 2, 2, 0};
  sampler.resources[3].alias_group_id = 4;
  sampler.resources[3].strides = {128, 32, 8, 4};
  cases.emplace_back("sampler", sampler);
  for (const auto& [name, c] : cases) {
    SCOPED_TRACE(name);
    const std::string ours = vgf::to_vgf_dump_json(c);
    nlohmann::json j = nlohmann::json::parse(ours);
    EXPECT_EQ(j["model_sequence"]["segments"][0]["descriptor_set_infos"][0]["set_index"], 0);  // unset: its position
    EXPECT_EQ(j["resources"][0]["vk_descriptor_type"], "none");
    EXPECT_EQ(j["resources"][2]["vk_format"], "VK_FORMAT_R32_SFLOAT");
    EXPECT_NE(ours.back(), '\n');
    if (!fs::exists(kVgfDump)) continue;
    const std::string file = dir.file(name + ".vgf");
    vgf::save(c, file);
    EXPECT_EQ(arm_vgf_dump(file, dir), 0);
    EXPECT_EQ(ours, test::slurp(dir.file("dump.json")));
    test::CliResult r = test::run_weft(dir, "dump --format vgf_dump " + name + ".vgf");
    EXPECT_EQ(r.rc, 0) << r.all();
    EXPECT_EQ(r.out, ours);
  }
  if (!fs::exists(kVgfDump)) GTEST_SKIP() << "vgf_dump not found in " << kVgfDump << ": compared with the layout only";
}

TEST(ArmInterop, ScenarioRunsTheContainerByItsNames) {
  TempDir dir("weft_arm");
  vgf::save(converter_container(), dir.file("model.vgf"));
  test::CliResult r = test::run_weft(dir, "scenario model.vgf -o scenario.json --output Identity=out/y.npy");
  ASSERT_EQ(r.rc, 0) << r.all();
  nlohmann::json j = nlohmann::json::parse(test::slurp(dir.file("scenario.json")));
  ASSERT_EQ(j["resources"].size(), 3u);
  EXPECT_EQ(j["resources"][0]["graph"]["src"], "model.vgf");
  const nlohmann::json& in = j["resources"][1]["tensor"];
  EXPECT_EQ(in["src"], "input.npy");
  EXPECT_EQ(in["shader_access"], "readonly");
  EXPECT_EQ(in["format"], "VK_FORMAT_R32_SFLOAT");
  EXPECT_EQ(in["dims"], (std::vector<int64_t>{1, 4, 4, 2}));
  EXPECT_EQ(j["resources"][2]["tensor"]["dst"], "out/y.npy");
  const nlohmann::json& d = j["commands"][0]["dispatch_graph"];
  EXPECT_EQ(d["graph_ref"], "vgf_graph_ref");
  ASSERT_EQ(d["bindings"].size(), 2u);
  EXPECT_EQ(d["bindings"][0]["id"], 0);  // the model input's binding
  EXPECT_EQ(d["bindings"][1]["id"], 1);
  EXPECT_EQ(d["bindings"][1]["resource_ref"], "output_0_ref");
  // A name the model does not have is a usage error naming the ones it has.
  r = test::run_weft(dir, "scenario model.vgf --input nope=x.npy");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("(input)"), std::string::npos) << r.err;
  // A placeholder module is to be supplied: a shader resource and a substitution for it.
  vgf::Container c = converter_container();
  c.modules[0].spirv.clear();
  nlohmann::json p = nlohmann::json::parse(vgf::to_scenario(c).json);
  EXPECT_EQ(p["commands"][0]["dispatch_graph"]["shader_substitutions"][0]["target"], "graph_partition_0");
  EXPECT_EQ(p["resources"][3]["shader"]["src"], "graph_partition_0.spv");
}

}  // namespace
}  // namespace weft
