// Modules other producers write decode: shader functions beside the graph, graph debug
// information (names), Arm.ExperimentalMLOperations CALL (a CUSTOM node, both ways), OpUndef and
// specialization constants.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/temp_dir.h"
#include "weft/graph.h"
#include "weft/spirv.h"

namespace weft::spirv {
namespace {

namespace fs = std::filesystem;

// ABS of a graph input, with a compute shader in the same module and the graph's debug info.
constexpr const char* kMixed = R"(
               OpCapability Shader
               OpCapability VulkanMemoryModel
               OpCapability TensorsARM
               OpCapability GraphARM
               OpExtension "SPV_ARM_graph"
               OpExtension "SPV_ARM_tensors"
       %tosa = OpExtInstImport "TOSA.001000.1"
         %di = OpExtInstImport "NonSemantic.Graph.DebugInfo.1"
       %glsl = OpExtInstImport "GLSL.std.450"
               OpMemoryModel Logical Vulkan
               OpEntryPoint GLCompute %shader "main"
               OpExecutionMode %shader LocalSize 1 1 1
      %gname = OpString "resnet_block"
      %oname = OpString "block1/abs"
      %tname = OpString "activations"
               OpDecorate %vin DescriptorSet 0
               OpDecorate %vin Binding 0
               OpDecorate %vout DescriptorSet 0
               OpDecorate %vout Binding 1
       %void = OpTypeVoid
       %fnty = OpTypeFunction %void
      %float = OpTypeFloat 32
       %uint = OpTypeInt 32 0
     %uint_0 = OpConstant %uint 0
     %uint_1 = OpConstant %uint 1
     %uint_4 = OpConstant %uint 4
      %arr_1 = OpTypeArray %uint %uint_1
    %shape_4 = OpConstantComposite %arr_1 %uint_4
          %t = OpTypeTensorARM %float %uint_1 %shape_4
        %ptr = OpTypePointer UniformConstant %t
        %vin = OpVariable %ptr UniformConstant
       %vout = OpVariable %ptr UniformConstant
      %gtype = OpTypeGraphARM 1 %t %t
    %float_2 = OpConstant %float 2
      %undef = OpUndef %float
     %shader = OpFunction %void None %fnty
      %label = OpLabel
        %sq = OpExtInst %float %glsl Sqrt %float_2
               OpReturn
               OpFunctionEnd
               OpGraphEntryPointARM %graph "entry" %vin %vout
      %graph = OpGraphARM %gtype
         %dg = OpExtInst %void %di DebugGraph %graph %gname
         %in = OpGraphInputARM %t %uint_0
         %dt = OpExtInst %void %di DebugTensor %in %tname
        %abs = OpExtInst %t %tosa ABS %in
               OpGraphSetOutputARM %abs %uint_0
         %do = OpExtInst %void %di DebugOperation %dg %oname %abs
               OpGraphEndARM
)";

TEST(ForeignModules, ShaderFunctionsAndDebugInfoBesideAGraph) {
  std::vector<uint32_t> words = assemble(kMixed);
  ASSERT_TRUE(validate(words, {.target_env = "vulkan1.3"}).empty());
  Module m = decode(words, {});
  ASSERT_EQ(m.graphs().size(), 1u);
  const Graph& g = m.main();
  EXPECT_EQ(g.name(), "resnet_block");                     // DebugGraph
  EXPECT_EQ(g.value(g.inputs()[0]).name, "activations");  // DebugTensor
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.node(0).op, Op::ABS);
  EXPECT_EQ(g.node(0).name, "block1/abs");  // DebugOperation
}

TEST(ForeignModules, MlOperationsCallIsACustomNodeBothWays) {
  GraphBuilder b;
  const TensorType t{DType::kInt8, {1, 8}};
  ValueId x = b.input("x", t);
  std::vector<ValueId> y = b.op_multi(Op::CUSTOM, {x},
                                      {{"operator_name", std::string("CALL_7")},
                                       {"domain_name", std::string("Arm.ExperimentalMLOperations")},
                                       {"implementation_attrs", std::string()}},
                                      {"y"}, {t});
  b.output(y[0]);
  Module m(b.finish());
  Binary bin = encode(m);
  EXPECT_TRUE(validate(bin.words, {.target_env = "vulkan1.3"}).empty());
  EXPECT_NE(disassemble(bin.words).find("CALL 7 %x"), std::string::npos) << disassemble(bin.words);
  Module back = decode(bin.words, bin.constants);
  const Node& n = back.main().node(0);
  EXPECT_EQ(n.op, Op::CUSTOM);
  EXPECT_EQ(n.attr_str("operator_name"), "CALL_7");
  EXPECT_EQ(n.attr_str("domain_name"), "Arm.ExperimentalMLOperations");
  EXPECT_EQ(encode(back).words, bin.words);
  // Upstream agrees the module is valid.
  const fs::path val = fs::path(WEFT_SOURCE_DIR) / "../shared/tools/bin/spirv-val";
  if (fs::exists(val)) {
    test::TempDir dir("weft_call");
    write_file(dir.file("m.spv"), bin.words);
    EXPECT_EQ(std::system((val.string() + " --target-env vulkan1.3 " + dir.file("m.spv")).c_str()), 0);
  }
  // Other custom nodes still have no SPIR-V form, and the error says which would.
  GraphBuilder b2;
  ValueId x2 = b2.input("x", t);
  b2.output(b2.op_multi(Op::CUSTOM, {x2},
                        {{"operator_name", std::string("mine")},
                         {"domain_name", std::string("acme")},
                         {"implementation_attrs", std::string()}},
                        {"y"}, {t})[0]);
  try {
    encode(Module(b2.finish()));
    FAIL() << "a CUSTOM node of another domain was encoded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CALL_<opcode>"), std::string::npos) << e.what();
  }
}

TEST(ForeignModules, UndefOperandsAreRefusedWithTheIdNamed) {
  std::string text = kMixed;
  // A graph whose operand is an OpUndef tensor.
  text.replace(text.find("      %undef = OpUndef %float"), std::string("      %undef = OpUndef %float").size(),
               "      %undef = OpUndef %t");
  text.replace(text.find("ABS %in"), 7, "ADD %in %undef");
  std::vector<uint32_t> words = assemble(text);
  try {
    decode(words, {});
    FAIL() << "an OpUndef operand decoded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("OpUndef"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace weft::spirv
