// The key property of the text form: every module Weft's encoder writes disassembles, with friendly
// names or raw ids, to text that assembles back to exactly the same words.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "spirv/codec/codec_test_util.h"
#include "text_test_util.h"
#include "weft/spirv.h"
#include "weft/text.h"

namespace weft::spirv {
namespace {

void expect_text_round_trip(const std::vector<uint32_t>& words) {
  for (bool friendly : {true, false}) {
    std::string text = disassemble(words, {.friendly_names = friendly});
    SCOPED_TRACE(text);
    EXPECT_EQ(text.find("OpUnknown"), std::string::npos);
    try {
      testing::expect_same_words(assemble(text), words);
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

TEST(SpirvTextEncoded, TinyCnn) {
  Module m = load_weft(std::string(WEFT_SOURCE_DIR) + "/examples/tiny_cnn/tiny_cnn.weft");
  Binary b = encode(m);
  expect_text_round_trip(b.words);
  // Friendly names come from the IR: the graph, its values, its interface variables.
  std::string text = disassemble(b.words);
  for (const char* line : {"%main = OpGraphARM %graph_type", "%main_image = OpVariable", "OpName %conv \"conv\"",
                           "OpExtInst %tensor_float_1x8x8x4 %tosa CONV2D "})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
}

TEST(SpirvTextEncoded, EveryOperatorAndTypeRow) {
  int encoded = 0;
  for (const OpDef& d : all_op_defs()) {
    if (d.spirv_opcode < 0) continue;
    for (const TypeSupport& row : d.types) {
      if (std::ranges::count(row.types, DType::kInt4) > 0) continue;  // not expressible
      SCOPED_TRACE(std::string(d.name) + " " + row.mode);
      Module m = codec_test::op_module(d.op, row);
      for (const EncodeOptions& o : {EncodeOptions{}, EncodeOptions{.inline_constant_max_elements = 0, .debug_names = false}}) {
        std::vector<uint32_t> words;
        try {
          words = encode(m, o).words;
        } catch (const Error& e) {
          continue;  // the codec tests report encoder failures
        }
        expect_text_round_trip(words);
        ++encoded;
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
  EXPECT_GT(encoded, 400);
}

TEST(SpirvTextEncoded, EveryElementTypeAsInlineConstants) {
  const std::vector<std::pair<DType, std::vector<uint64_t>>> cases = {
      {DType::kBool, {0, 1}},
      {DType::kInt8, {0x80, 0x7f, 0, 0xff}},
      {DType::kInt16, {0x8000, 0x7fff, 0, 0xffff}},
      {DType::kInt32, {0x80000000, 0x7fffffff, 0, 0xffffffff}},
      {DType::kInt48, {0xffff800000000000, 0x00007fffffffffff, 0, 0xffffffffffffffff}},
      {DType::kFp8E4M3, {0x7f, 0xff, 0x80, 0x01}},
      {DType::kFp8E5M2, {0x7c, 0xfc, 0x7f, 0x01}},
      {DType::kFp16, {0x7c00, 0xfc00, 0x7e01, 0x0001}},
      {DType::kBf16, {0x7f80, 0xff80, 0x7fc1, 0x0001}},
      {DType::kFp32, {0x7f800000, 0xff800000, 0x7fc00001, 0x00000001}},
  };
  for (const auto& [t, bits] : cases) {
    SCOPED_TRACE(dtype_name(t));
    Tensor v = Tensor::zeros(TensorType{t, {static_cast<int64_t>(bits.size())}});
    for (size_t i = 0; i < bits.size(); ++i) std::memcpy(v.mutable_bytes() + i * storage_size(t), &bits[i], storage_size(t));
    GraphBuilder g;
    g.output(g.constant("c", v));
    Module m(g.finish());
    expect_text_round_trip(encode(m).words);
  }
}

}  // namespace
}  // namespace weft::spirv
