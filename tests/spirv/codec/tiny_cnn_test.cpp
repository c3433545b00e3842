// The bundled example through SPIR-V: tiny_cnn.weft encodes (its two weight tensors as graph
// constants), decodes to the same module, and the interpreter computes the same logits bit for bit.
#include "codec_test_util.h"
#include "weft/interpreter.h"
#include "weft/npy.h"
#include "weft/text.h"

namespace weft {
namespace {

using namespace codec_test;

TEST(SpirvTinyCnn, EncodesDecodesAndRunsTheSame) {
  const std::string dir = std::string(WEFT_SOURCE_DIR) + "/examples/tiny_cnn/";
  Module original = load_weft(dir + "tiny_cnn.weft");
  spirv::Binary b = round_trip(original);
  ASSERT_EQ(b.constants.size(), 2u);
  EXPECT_EQ(b.constants[0].name, "conv_w");
  EXPECT_EQ(b.constants[1].name, "fc_w");
  Module decoded = spirv::decode(b.words, b.constants, "tiny_cnn.spv");

  const Tensor image = read_npy(dir + "image.npy");
  Interpreter a(original);
  Interpreter c(decoded);
  std::vector<Tensor> expected = a.run({image});
  std::vector<Tensor> got = c.run({image});
  ASSERT_EQ(expected.size(), 1u);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(expected[0].identical(got[0]));
  EXPECT_EQ(got[0].type(), (TensorType{DType::kFp32, {1, 10}}));
}

}  // namespace
}  // namespace weft
