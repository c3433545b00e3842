// Round trips of SPIR-V graph modules: IR -> words -> IR gives the module back and the decoded
// module encodes to the same words, for every operator and every row of its type support table,
// every element type, several graphs, tensor-array interfaces, and the layout rules of
// docs/spirv.md.
#include <algorithm>
#include <cstring>
#include <random>

#include "codec_test_util.h"
#include "spirv/binary.h"
#include "spirv/grammar.h"

namespace weft {
namespace {

using namespace codec_test;
using spirv::Binary;
using spirv::EncodeOptions;

bool has_instruction(Op op) { return op_def(op).spirv_opcode >= 0; }

bool uses_int4(const TypeSupport& row) { return std::ranges::count(row.types, DType::kInt4) > 0; }

// The instructions of a module (header checked).
std::vector<spirv::Instruction> instructions(const Binary& b) {
  return spirv::split_instructions(b.words).instructions;
}

size_t count_opcode(const Binary& b, uint16_t opcode) {
  size_t n = 0;
  for (const spirv::Instruction& i : instructions(b)) n += i.opcode() == opcode;
  return n;
}

TEST(SpirvRoundTrip, EveryOperatorAndTypeCombination) {
  size_t combinations = 0;
  for (const OpDef& d : all_op_defs()) {
    if (!has_instruction(d.op)) continue;
    for (const TypeSupport& row : d.types) {
      SCOPED_TRACE(std::string(d.name) + " " + row.mode);
      Module m = op_module(d.op, row);
      if (uses_int4(row)) {
        EXPECT_THROW(spirv::encode(m), Error);
        continue;
      }
      std::vector<Error> errors = verify_module(m);
      ASSERT_TRUE(errors.empty()) << "test module does not verify:\n" << errors_str(errors);
      Binary b = round_trip(m);
      // The operator is one OpExtInst of TOSA.001000.1 with its instruction number.
      bool found = false;
      for (const spirv::Instruction& i : instructions(b)) {
        if (i.opcode() == spirv::kOpExtInst) {
          EXPECT_EQ(i.word(4), static_cast<uint32_t>(d.spirv_opcode));
          EXPECT_EQ(i.size(), 5 + d.attrs.size() + m.main().nodes().back().inputs.size());
          found = true;
        }
      }
      EXPECT_TRUE(found);
      // Every constant as a graph constant: the same module comes back.
      round_trip(m, EncodeOptions{.inline_constant_max_elements = 0});
      ++combinations;
    }
  }
  EXPECT_GT(combinations, 250u);
}

TEST(SpirvRoundTrip, TwoOutputOperatorsUseAStructAndTheirLabel) {
  Module m = op_module(Op::FFT2D, op_def(Op::FFT2D).types[0]);
  Binary b = round_trip(m);
  EXPECT_EQ(count_opcode(b, spirv::kOpTypeStruct), 1u);
  EXPECT_EQ(count_opcode(b, spirv::kOpCompositeExtract), 2u);
  Module back = spirv::decode(b.words, b.constants);
  EXPECT_EQ(back.main().nodes().back().name, "label of FFT2D");
}

// One CONST of type `t` holding `bits` (raw storage), as the graph's output.
TEST(SpirvRoundTrip, EveryElementTypeInlineAndAsGraphConstant) {
  const std::vector<std::pair<DType, std::vector<uint64_t>>> cases = {
      {DType::kBool, {0, 1, 1, 0, 1, 0}},
      {DType::kInt8, {0x80, 0x7f, 0, 0xff, 5, 0xfe}},
      {DType::kInt16, {0x8000, 0x7fff, 0, 0xffff, 1, 2}},
      {DType::kInt32, {0x80000000, 0x7fffffff, 0, 0xffffffff, 1, 2}},
      {DType::kInt48, {0xffff800000000000, 0x00007fffffffffff, 0, 0xffffffffffffffff, 1, 0x0000123456789abc}},
      {DType::kFp8E4M3, {0x7f, 0xff, 0x80, 0, 0x01, 0x38}},
      {DType::kFp8E5M2, {0x7c, 0xfc, 0x7f, 0x80, 0x01, 0x3c}},
      {DType::kFp16, {0x7c00, 0xfc00, 0x7e01, 0x8000, 0x0001, 0x3c00}},
      {DType::kBf16, {0x7f80, 0xff80, 0x7fc1, 0x8000, 0x0001, 0x3f80}},
      {DType::kFp32, {0x7f800000, 0xff800000, 0x7fc00001, 0x80000000, 0x00000001, 0x3f800000}},
  };
  for (const auto& [t, bits] : cases) {
    SCOPED_TRACE(dtype_name(t));
    for (const Shape& shape : {Shape{6}, Shape{2, 3}, Shape{1, 3, 2, 1}}) {
      Module m = const_module(t, shape, bits);
      Binary inline_form = round_trip(m);
      EXPECT_TRUE(inline_form.constants.empty());
      EXPECT_EQ(count_opcode(inline_form, spirv::kOpGraphConstantARM), 0u);
      Binary graph_form = round_trip(m, EncodeOptions{.inline_constant_max_elements = 0});
      ASSERT_EQ(graph_form.constants.size(), 1u);
      EXPECT_EQ(graph_form.constants[0].name, "c");
      // Graph constants share the IR's buffer.
      EXPECT_TRUE(
          graph_form.constants[0].tensor.buffer().same_storage(std::get<Tensor>(m.main().node(0).attrs[0]).buffer()));
    }
    // Rank 0 is written as [1] (SPIR-V tensors have Rank > 0): an inline constant.
    Module scalar = const_module(t, {}, {bits[0]});
    EXPECT_TRUE(round_trip(scalar).constants.empty());
  }
}

TEST(SpirvRoundTrip, EveryBitPatternOfNarrowFloatsInline) {
  for (DType t : {DType::kFp16, DType::kBf16, DType::kFp8E4M3, DType::kFp8E5M2}) {
    SCOPED_TRACE(dtype_name(t));
    std::vector<uint64_t> bits(size_t{1} << (8 * storage_size(t)));
    for (size_t i = 0; i < bits.size(); ++i) bits[i] = i;
    const auto n = static_cast<int64_t>(bits.size());
    round_trip(const_module(t, {n / 256, 256}, bits), EncodeOptions{.inline_constant_max_elements = n});
  }
}

TEST(SpirvRoundTrip, LiteralEncoding) {
  // An i8 -1 is 0xff in one word; an i48 takes two words, low first; a bf16 its bit pattern.
  GraphBuilder b;
  ValueId x = b.input("x", TensorType{DType::kInt8, {2}});
  auto lo = Tensor::from_ints(TensorType{DType::kInt8, {}}, std::vector<int64_t>{-1});
  auto hi = Tensor::from_ints(TensorType{DType::kInt8, {}}, std::vector<int64_t>{5});
  b.output(b.op(Op::CLAMP, {x}, {{"min_val", lo}, {"max_val", hi}}, "y"));
  b.output(b.constant("big", Tensor::from_ints(TensorType{DType::kInt48, {1}}, std::vector<int64_t>{-2})));
  Binary bin = round_trip(Module(b.finish()));
  std::vector<std::vector<uint32_t>> constants;
  for (const spirv::Instruction& i : instructions(bin))
    if (i.opcode() == spirv::kOpConstant) constants.emplace_back(i.words.begin() + 3, i.words.end());
  EXPECT_NE(std::ranges::count(constants, std::vector<uint32_t>{0xff}), 0);
  EXPECT_NE(std::ranges::count(constants, std::vector<uint32_t>{0xfffffffe, 0xffffffff}), 0);
}

Graph pass_through(const std::string& name, const std::vector<std::string>& ins, const std::vector<std::string>& outs,
                   DType t = DType::kFp32) {
  Graph g(name);
  std::vector<ValueId> in_ids;
  for (const std::string& n : ins) in_ids.push_back(g.add_input(n, TensorType{t, {2, 2}}));
  for (size_t i = 0; i < outs.size(); ++i) {
    Node n;
    n.op = Op::ABS;
    n.inputs = {in_ids[i % in_ids.size()]};
    n.outputs = {g.add_value(outs[i], TensorType{t, {2, 2}})};
    g.add_node(std::move(n));
    g.add_output(g.nodes().back().outputs[0]);
  }
  return g;
}

TEST(SpirvRoundTrip, SeveralGraphsTheEntryPointFirst) {
  Module m(pass_through("first", {"a"}, {"b"}));
  m.add_graph(pass_through("second", {"a", "c"}, {"d", "e", "f"}, DType::kInt32));
  m.add_graph(pass_through("third graph", {"x"}, {"y"}, DType::kFp16));
  m.set_entry("second");
  Binary b = round_trip(m);
  std::vector<uint32_t> entry_graphs, definitions;
  for (const spirv::Instruction& i : instructions(b)) {
    if (i.opcode() == spirv::kOpGraphEntryPointARM) entry_graphs.push_back(i.word(1));
    if (i.opcode() == spirv::kOpGraphARM) definitions.push_back(i.word(2));
  }
  ASSERT_EQ(entry_graphs.size(), 3u);
  ASSERT_EQ(definitions.size(), 3u);
  EXPECT_EQ(entry_graphs[0], definitions[1]);  // the entry graph's entry point first
  EXPECT_EQ(entry_graphs[1], definitions[0]);
  EXPECT_EQ(entry_graphs[2], definitions[2]);
  // Bindings restart at 0 for each graph: inputs, then outputs.
  std::vector<uint32_t> bindings;
  for (const spirv::Instruction& i : instructions(b))
    if (i.opcode() == spirv::kOpDecorate && i.word(2) == spirv::kDecorationBinding) bindings.push_back(i.word(3));
  EXPECT_EQ(bindings, (std::vector<uint32_t>{0, 1, 0, 1, 2, 3, 4, 0, 1}));
}

TEST(SpirvRoundTrip, TensorArrayInterfaces) {
  Graph g = pass_through("main", {"x[0]", "x[1]", "x[2]", "y", "z[0]"}, {"o[0]", "o[1]", "p", "x[5]"});
  Module m(std::move(g));
  Binary b = round_trip(m);
  // Interfaces: x (array of 3), y, z (array of 1) -> o (array of 2), p, x[5] (not a run from 0).
  size_t with_element = 0;
  for (const spirv::Instruction& i : instructions(b)) {
    if (i.opcode() == spirv::kOpTypeGraphARM) {
      EXPECT_EQ(i.word(2), 3u);
      EXPECT_EQ(i.size(), 3u + 6u);
    }
    if ((i.opcode() == spirv::kOpGraphInputARM && i.size() == 5) ||
        (i.opcode() == spirv::kOpGraphSetOutputARM && i.size() == 4))
      ++with_element;
  }
  EXPECT_EQ(with_element, 3u + 1u + 2u);
  EXPECT_EQ(count_opcode(b, spirv::kOpVariable), 6u);
}

TEST(SpirvRoundTrip, IdentityIsForwarded) {
  GraphBuilder b;
  ValueId x = b.input("x", TensorType{DType::kFp32, {2}});
  ValueId i1 = b.op(Op::IDENTITY, {x}, {}, "i1");
  ValueId a = b.op(Op::ABS, {i1}, {}, "a");
  ValueId i2 = b.op(Op::IDENTITY, {a}, {}, "i2");
  b.output(i2);
  b.output(b.op(Op::IDENTITY, {x}, {}, "i3"));
  Module m(b.finish());
  Binary bin = spirv::encode(m);
  Module back = spirv::decode(bin.words, bin.constants);
  const Graph& g = back.main();
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.nodes()[0].op, Op::ABS);
  EXPECT_EQ(g.value(g.nodes()[0].inputs[0]).name, "x");
  ASSERT_EQ(g.outputs().size(), 2u);
  EXPECT_EQ(g.value(g.outputs()[0]).name, "a");
  EXPECT_EQ(g.value(g.outputs()[1]).name, "x");
  EXPECT_EQ(spirv::encode(back).words, bin.words);
}

TEST(SpirvRoundTrip, ConstantsAreNamedDeclaredOnceAndPlacedBeforeFirstUse) {
  GraphBuilder b;
  ValueId x = b.input("x", TensorType{DType::kFp32, {2, 3}});
  ValueId s = b.constant_shape("shape", {3, 2});
  ValueId r = b.op(Op::RESHAPE, {x, s}, {}, "r");
  ValueId s2 = b.constant_shape("shape_again", {3, 2});  // same values, its own constant
  ValueId r2 = b.op(Op::RESHAPE, {r, s2}, {}, "r2");
  ValueId k =
      b.constant("k", Tensor::from_doubles(TensorType{DType::kFp32, {3, 2}}, std::vector<double>{1, 2, 3, 4, 5, 6}));
  ValueId sum = b.op(Op::ADD, {r2, k}, {}, "sum");
  ValueId sum2 = b.op(Op::ADD, {sum, k}, {}, "sum2");
  b.output(sum2);
  b.output(b.constant("out_const", Tensor::from_doubles(TensorType{DType::kFp32, {2}}, std::vector<double>{7, 8})));
  Module m(b.finish());
  m.set_profiles(kProFp);
  Binary bin = round_trip(m);
  EXPECT_EQ(count_opcode(bin, spirv::kOpModuleProcessed), 1u);
}

TEST(SpirvRoundTrip, EmptyProfileSet) {
  Graph g("main");
  g.add_output(g.add_input("x", TensorType{DType::kFp32, {2}}));
  Module m(std::move(g));
  m.set_profiles(0);
  round_trip(m);
}

TEST(SpirvRoundTrip, ProfilesAndNoDebugNames) {
  Module m = op_module(Op::CONV2D, op_def(Op::CONV2D).types[0]);
  m.set_profiles(kProInt);
  m.main().set_name("conv_graph");
  m.set_entry("conv_graph");
  Binary b = spirv::encode(m, EncodeOptions{.descriptor_set = 3, .debug_names = false});
  EXPECT_EQ(count_opcode(b, spirv::kOpName), 0u);
  for (const spirv::Instruction& i : instructions(b))
    if (i.opcode() == spirv::kOpDecorate && i.word(2) == spirv::kDecorationDescriptorSet) {
      EXPECT_EQ(i.word(3), 3u);
    }
  Module back = spirv::decode(b.words, b.constants);
  EXPECT_EQ(back.profiles(), kProInt);
  EXPECT_EQ(back.entry(), "conv_graph");  // from the entry point's name
  EXPECT_EQ(back.main().value(back.main().inputs()[0]).name.substr(0, 1), "v");
  EXPECT_EQ(spirv::encode(back, EncodeOptions{.descriptor_set = 3, .debug_names = false}).words, b.words);
}

TEST(SpirvRoundTrip, HeaderCapabilitiesExtensionsAndIdOrder) {
  // Element types needing every optional capability.
  GraphBuilder b;
  for (DType t :
       {DType::kBf16, DType::kFp8E5M2, DType::kInt8, DType::kInt16, DType::kInt48, DType::kFp16, DType::kBool})
    b.output(b.constant(std::string("c_") + dtype_name(t), Tensor::zeros(TensorType{t, {2}})));
  Binary bin = round_trip(Module(b.finish()));
  ASSERT_GE(bin.words.size(), 5u);
  EXPECT_EQ(bin.words[0], spirv::kMagic);
  EXPECT_EQ(bin.words[1], spirv::kVersion16);
  EXPECT_EQ(bin.words[2], 0u);
  EXPECT_EQ(bin.words[4], 0u);
  std::vector<uint32_t> caps;
  std::vector<std::string> exts;
  uint32_t max_id = 0;
  std::vector<spirv::Instruction> insts = instructions(bin);
  for (const spirv::Instruction& i : insts) {
    if (i.opcode() == spirv::kOpCapability) caps.push_back(i.word(1));
    if (i.opcode() == spirv::kOpExtension) exts.push_back(spirv::read_string(i, 1, nullptr));
    if (i.opcode() == spirv::kOpConstant || i.opcode() == spirv::kOpConstantComposite)
      max_id = std::max(max_id, i.word(2));
  }
  using namespace spirv;
  EXPECT_EQ(caps, (std::vector<uint32_t>{kCapShader, kCapVulkanMemoryModel, kCapTensorsARM, kCapGraphARM, kCapFloat16,
                                         kCapInt64, kCapInt16, kCapInt8, kCapFloat8EXT, kCapBFloat16TypeKHR}));
  EXPECT_EQ(exts, (std::vector<std::string>{"SPV_ARM_graph", "SPV_ARM_tensors", "SPV_EXT_float8", "SPV_KHR_bfloat16"}));
  // The first id is the instruction set import; the bound is one past the last id.
  const Instruction* import = nullptr;
  for (const Instruction& i : insts)
    if (i.opcode() == kOpExtInstImport) import = &i;
  ASSERT_NE(import, nullptr);
  EXPECT_EQ(import->word(1), 1u);
  EXPECT_EQ(read_string(*import, 2, nullptr), "TOSA.001000.1");
  EXPECT_LT(max_id, bin.words[3]);
  // Plain fp32 needs none of the optional capabilities.
  GraphBuilder f;
  f.output(f.op(Op::ABS, {f.input("x", TensorType{DType::kFp32, {2}})}, {}, "y"));
  Binary plain = round_trip(Module(f.finish()));
  EXPECT_EQ(count_opcode(plain, kOpCapability), 4u);
  EXPECT_EQ(count_opcode(plain, kOpExtension), 2u);
}

TEST(SpirvRoundTrip, Deterministic) {
  Module m = op_module(Op::RESIZE, op_def(Op::RESIZE).types[0]);
  EXPECT_EQ(spirv::encode(m).words, spirv::encode(m).words);
}

}  // namespace
}  // namespace weft
