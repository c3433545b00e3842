// check_contract: the resource contract between a CUSTOM node's tensors and its shader resources.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "weft/custom.h"

namespace weft::custom {
namespace {

constexpr const char* kStorageBuffer = "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER";
constexpr const char* kUniformBuffer = "VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER";
constexpr const char* kStorageImage = "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE";
constexpr const char* kSampler = "VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER";
constexpr const char* kR32 = "VK_FORMAT_R32_SFLOAT";
constexpr const char* kRG32 = "VK_FORMAT_R32G32_SFLOAT";
constexpr const char* kRGBA32 = "VK_FORMAT_R32G32B32A32_SFLOAT";

Resource res(bool output, uint32_t index, const char* descriptor_type, const char* format, int64_t binding,
             int64_t set = 0) {
  Resource r;
  r.output = output;
  r.index = index;
  r.descriptor_type = descriptor_type;
  r.vkformat = format;
  r.binding = binding;
  r.descriptor_set = set;
  return r;
}

TensorType f32(Shape s) { return {DType::kFp32, std::move(s)}; }

Location node() {
  Location l;
  l.graph = "main";
  l.node = "grid_sample_1";
  return l;
}

// Expects Error(kVerify) located at `operand`, naming the node, with every one of `parts`.
void expect_violation(const Payload& p, const std::vector<TensorType>& in, const std::vector<TensorType>& out,
                      const std::string& operand, std::vector<std::string> parts) {
  try {
    check_contract(p, in, out, node());
    ADD_FAILURE() << "no error; expected one at " << operand;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kVerify) << e.what();
    EXPECT_EQ(e.location().operand, operand) << e.what();
    EXPECT_EQ(e.location().node, "grid_sample_1");
    EXPECT_EQ(e.location().graph, "main");
    EXPECT_NE(e.message().find("custom node 'grid_sample_1'"), std::string::npos) << e.message();
    for (const std::string& part : parts)
      EXPECT_NE(e.message().find(part), std::string::npos) << "'" << part << "' not in: " << e.message();
  }
}

// One input and one output, both scalar storage buffers of the same type.
Payload buffer_pair() {
  Payload p;
  p.entry_point = "main";
  p.workgroup_sizes = {64, 1, 1};
  p.inputs = {res(false, 0, kStorageBuffer, kR32, 0)};
  p.outputs = {res(true, 0, kStorageBuffer, kR32, 1)};
  return p;
}

TEST(Contract, GridSampleImageGridAndBuffers) {
  // grid_sample: a sampled NHWC image, an [N, Hout, Wout, 2] grid as a scalar buffer, a buffer out.
  Payload p;
  p.inputs = {res(false, 0, kSampler, kRGBA32, 0), res(false, 1, kStorageBuffer, kR32, 1)};
  p.inputs[0].type = "Image";
  p.inputs[1].type = "Tensor";
  p.outputs = {res(true, 0, kStorageBuffer, kR32, 2)};
  p.outputs[0].type = "Buffer";
  std::vector<BoundResource> b =
      check_contract(p, {f32({1, 16, 12, 4}), f32({1, 5, 7, 2})}, {f32({1, 5, 7, 4})}, node());
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].kind, ResourceKind::kSampledImage);
  EXPECT_EQ(b[0].descriptor_type, 1u);
  EXPECT_EQ(b[0].height, 16u);
  EXPECT_EQ(b[0].width, 12u);
  EXPECT_EQ(b[0].channels, 4u);
  EXPECT_EQ(b[0].filter, "linear");
  EXPECT_EQ(b[0].address_mode, "clamp_to_edge");
  EXPECT_STREQ(b[0].format->name, kRGBA32);
  EXPECT_EQ(b[0].tensor, f32({1, 16, 12, 4}));
  EXPECT_EQ(b[1].kind, ResourceKind::kBuffer);
  EXPECT_EQ(b[1].index, 1u);
  EXPECT_EQ(b[1].binding, 1u);
  EXPECT_EQ(b[1].width, 0u);
  EXPECT_EQ(b[1].channels, 0u);
  EXPECT_EQ(b[1].format->value, 100u);
  EXPECT_EQ(b[1].tensor, f32({1, 5, 7, 2}));
  EXPECT_TRUE(b[2].output);
  EXPECT_EQ(b[2].descriptor_type, 7u);
}

TEST(Contract, ThreeChannelTensorOnABufferIsFine) {
  Payload p = buffer_pair();
  EXPECT_EQ(check_contract(p, {f32({1, 4, 4, 3})}, {f32({1, 4, 4, 3})}, node()).size(), 2u);
}

TEST(Contract, PackedFormatOnABufferRejected) {
  Payload p = buffer_pair();
  p.inputs[0].vkformat = kRG32;
  expect_violation(p, {f32({1, 4, 4, 2})}, {f32({1, 4, 4, 2})}, "input_0_vkformat",
                   {"VK_FORMAT_R32G32_SFLOAT is a packed 2-component format",
                    "tensor/buffer resources use a scalar element format and channels stay in the shape",
                    "e.g. VK_FORMAT_R32_SFLOAT"});
}

TEST(Contract, PackedFormatOnATensorArmRejected) {
  Payload p = buffer_pair();
  p.outputs[0].descriptor_type = "VK_DESCRIPTOR_TYPE_TENSOR_ARM";
  p.outputs[0].vkformat = kRGBA32;
  expect_violation(p, {f32({2, 4})}, {f32({2, 4})}, "output_0_vkformat",
                   {"tensor/buffer resources use a scalar element format"});
}

TEST(Contract, DtypeFormatMismatchRejected) {
  Payload p = buffer_pair();
  expect_violation(p, {TensorType{DType::kFp16, {8}}}, {f32({8})}, "input_0_vkformat",
                   {"VK_FORMAT_R32_SFLOAT does not match the element type f16 of input 0 (f16[8])",
                    "expected VK_FORMAT_R16_SFLOAT"});
  p.inputs[0].vkformat = "VK_FORMAT_R32_UINT";
  expect_violation(p, {f32({8})}, {f32({8})}, "input_0_vkformat", {"expected VK_FORMAT_R32_SFLOAT"});
  p.inputs[0].vkformat = "VK_FORMAT_R16_SINT";
  expect_violation(p, {TensorType{DType::kInt8, {8}}}, {f32({8})}, "input_0_vkformat",
                   {"expected VK_FORMAT_R8_SINT or VK_FORMAT_R8_UINT"});
}

TEST(Contract, ElementTypesAndTheirFormats) {
  struct Case {
    DType dtype;
    const char* format;
  };
  const Case ok[] = {{DType::kFp32, "VK_FORMAT_R32_SFLOAT"},
                     {DType::kFp16, "VK_FORMAT_R16_SFLOAT"},
                     {DType::kBf16, "VK_FORMAT_R16_SFLOAT_FPENCODING_BFLOAT16_ARM"},
                     {DType::kInt32, "VK_FORMAT_R32_SINT"},
                     {DType::kInt32, "VK_FORMAT_R32_UINT"},
                     {DType::kInt16, "VK_FORMAT_R16_SINT"},
                     {DType::kInt16, "VK_FORMAT_R16_UINT"},
                     {DType::kInt8, "VK_FORMAT_R8_SINT"},
                     {DType::kInt8, "VK_FORMAT_R8_UINT"},
                     {DType::kBool, "VK_FORMAT_R8_BOOL_ARM"},
                     {DType::kBool, "VK_FORMAT_R8_UINT"}};
  for (const Case& c : ok) {
    Payload p = buffer_pair();
    p.inputs[0].vkformat = c.format;
    EXPECT_NO_THROW(check_contract(p, {TensorType{c.dtype, {3, 5}}}, {f32({2})}, node())) << c.format;
  }
  Payload p = buffer_pair();
  p.inputs[0].vkformat = "VK_FORMAT_R8_SINT";
  expect_violation(p, {TensorType{DType::kInt4, {4}}}, {f32({2})}, "input_0_vkformat",
                   {"element type i4, which no Vulkan tensor/buffer element format describes"});
}

TEST(Contract, StorageTensorExtIsTensorArm) {
  Payload p = buffer_pair();
  p.inputs[0].descriptor_type = "VK_DESCRIPTOR_TYPE_STORAGE_TENSOR_EXT";
  p.outputs[0].descriptor_type = "VK_DESCRIPTOR_TYPE_TENSOR_ARM";
  auto b = check_contract(p, {f32({2, 3})}, {f32({2, 3})}, node());
  EXPECT_EQ(b[0].kind, ResourceKind::kTensorArm);
  EXPECT_EQ(b[0].descriptor_type, 1000460000u);
  EXPECT_EQ(b[1].kind, ResourceKind::kTensorArm);
}

TEST(Contract, ImagesWithOneTwoAndFourChannels) {
  Payload p;
  p.inputs = {res(false, 0, kSampler, kR32, 0), res(false, 1, "VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE", kRG32, 1)};
  p.outputs = {res(true, 0, kStorageImage, kRGBA32, 2)};
  p.outputs[0].type = "Image";
  auto b = check_contract(p, {f32({5, 6, 1}), f32({1, 5, 6, 2})}, {f32({1, 7, 9, 4})}, node());
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].channels, 1u);
  EXPECT_EQ(b[0].width, 6u);
  EXPECT_EQ(b[0].height, 5u);
  EXPECT_EQ(b[1].kind, ResourceKind::kSampledImage);
  EXPECT_EQ(b[1].descriptor_type, 2u);
  EXPECT_EQ(b[1].channels, 2u);
  EXPECT_EQ(b[2].kind, ResourceKind::kStorageImage);
  EXPECT_EQ(b[2].width, 9u);
  EXPECT_EQ(b[2].height, 7u);
  EXPECT_EQ(b[2].channels, 4u);
}

TEST(Contract, ThreeChannelImageRejectedWithBothWaysOut) {
  Payload p;
  p.inputs = {res(false, 0, kSampler, kRGBA32, 0)};
  p.outputs = {res(true, 0, kStorageBuffer, kR32, 1)};
  expect_violation(p, {f32({1, 8, 8, 3})}, {f32({8})}, "input_0_vkformat",
                   {"has 3 channels", "no implicit 3->4 promotion",
                    "pad the tensor to 4 channels explicitly before the custom node",
                    "or use a tensor/buffer resource"});
  // An output image too.
  p = buffer_pair();
  p.outputs[0] = res(true, 0, kStorageImage, kRGBA32, 1);
  expect_violation(p, {f32({8})}, {f32({4, 4, 3})}, "output_0_vkformat", {"has 3 channels", "pad the tensor to 4"});
}

TEST(Contract, ImageChannelsMustMatchTheFormat) {
  Payload p;
  p.inputs = {res(false, 0, kSampler, kRGBA32, 0)};
  p.outputs = {res(true, 0, kStorageBuffer, kR32, 1)};
  expect_violation(p, {f32({8, 8, 2})}, {f32({8})}, "input_0_vkformat",
                   {"VK_FORMAT_R32G32B32A32_SFLOAT packs 4 channels but input 0 f32[8,8,2] has C=2", "exactly"});
  p.inputs[0].vkformat = "VK_FORMAT_R16G16B16A16_SFLOAT";
  expect_violation(p, {f32({8, 8, 4})}, {f32({8})}, "input_0_vkformat",
                   {"is not an image format of the contract"});
}

TEST(Contract, ImageBatchMustBeOne) {
  Payload p;
  p.inputs = {res(false, 0, kSampler, kRGBA32, 0)};
  p.outputs = {res(true, 0, kStorageBuffer, kR32, 1)};
  expect_violation(p, {f32({2, 8, 8, 4})}, {f32({8})}, "input_0_vkdescriptortype",
                   {"[H,W,C] or [1,H,W,C] (a rank-4 batch must be 1)", "f32[2,8,8,4]"});
  expect_violation(p, {f32({8, 4})}, {f32({8})}, "input_0_vkdescriptortype", {"[H,W,C] or [1,H,W,C]", "f32[8,4]"});
}

TEST(Contract, ImagesHoldFp32) {
  Payload p;
  p.inputs = {res(false, 0, kStorageImage, kRGBA32, 0)};
  p.outputs = {res(true, 0, kStorageBuffer, kR32, 1)};
  expect_violation(p, {TensorType{DType::kFp16, {8, 8, 4}}}, {f32({8})}, "input_0_vkdescriptortype",
                   {"image resources hold fp32 tensors"});
}

TEST(Contract, OutputImageMustBeStorageImage) {
  Payload p = buffer_pair();
  p.outputs[0] = res(true, 0, kSampler, kRGBA32, 1);
  expect_violation(p, {f32({8})}, {f32({1, 4, 4, 4})}, "output_0_vkdescriptortype",
                   {"output images must be writable", "use VK_DESCRIPTOR_TYPE_STORAGE_IMAGE"});
}

TEST(Contract, OutputUniformBufferRejected) {
  Payload p = buffer_pair();
  p.outputs[0].descriptor_type = kUniformBuffer;
  expect_violation(p, {f32({8})}, {f32({8})}, "output_0_vkdescriptortype", {"uniform buffers are read-only"});
  p = buffer_pair();
  p.inputs[0].descriptor_type = kUniformBuffer;
  EXPECT_EQ(check_contract(p, {f32({8})}, {f32({8})}, node())[0].kind, ResourceKind::kBuffer);
}

TEST(Contract, UnknownAndUnsupportedDescriptorTypes) {
  Payload p = buffer_pair();
  p.inputs[0].descriptor_type = "VK_DESCRIPTOR_TYPE_FUTURE_THING";
  expect_violation(p, {f32({8})}, {f32({8})}, "input_0_vkdescriptortype",
                   {"VK_DESCRIPTOR_TYPE_FUTURE_THING is not a descriptor type Weft knows"});
  p.inputs[0].descriptor_type = "VK_DESCRIPTOR_TYPE_SAMPLER";
  expect_violation(p, {f32({8})}, {f32({8})}, "input_0_vkdescriptortype", {"cannot carry a tensor"});
}

TEST(Contract, TypeMustAgreeWithTheDescriptorType) {
  Payload p = buffer_pair();
  p.inputs[0].type = "Image";
  expect_violation(p, {f32({8})}, {f32({8})}, "input_0_type",
                   {"input_0_type \"Image\" disagrees with input_0_vkdescriptortype VK_DESCRIPTOR_TYPE_STORAGE_BUFFER"});
  p = buffer_pair();
  p.outputs[0] = res(true, 0, kStorageImage, kR32, 1);
  p.outputs[0].type = "Buffer";
  expect_violation(p, {f32({8})}, {f32({4, 4, 1})}, "output_0_type", {"disagrees", "_type \"Image\""});
  p = buffer_pair();
  p.inputs[0].type = "Texture";
  expect_violation(p, {f32({8})}, {f32({8})}, "input_0_type", {"\"Texture\" is not a resource type Weft knows"});
}

TEST(Contract, MissingKeysNamed) {
  Payload p = buffer_pair();
  p.inputs[0].binding.reset();
  expect_violation(p, {f32({8})}, {f32({8})}, "input_0_binding",
                   {"input_0_binding is missing", "vkdescriptortype, vkformat, binding and descriptorset"});
  p = buffer_pair();
  p.outputs[0].descriptor_set.reset();
  expect_violation(p, {f32({8})}, {f32({8})}, "output_0_descriptorset", {"output_0_descriptorset is missing"});
  p = buffer_pair();
  p.outputs[0].vkformat.reset();
  expect_violation(p, {f32({8})}, {f32({8})}, "output_0_vkformat", {"output_0_vkformat is missing"});
  p = buffer_pair();
  p.inputs[0].descriptor_type.reset();
  expect_violation(p, {f32({8})}, {f32({8})}, "input_0_vkdescriptortype", {"input_0_vkdescriptortype is missing"});
}

TEST(Contract, EveryTensorHasExactlyOneResource) {
  Payload p = buffer_pair();
  expect_violation(p, {f32({8}), f32({8})}, {f32({8})}, "input_1",
                   {"input 1 (f32[8]) has no input_1_* resource"});
  p.outputs.push_back(res(true, 3, kStorageBuffer, kR32, 4));
  expect_violation(p, {f32({8})}, {f32({8})}, "output_3",
                   {"output_3_* describes output 3 but the node has 1 outputs"});
}

TEST(Contract, DuplicateBindingRejected) {
  Payload p = buffer_pair();
  p.outputs[0].binding = 0;
  expect_violation(p, {f32({8})}, {f32({8})}, "output_0_binding",
                   {"output_0 and input_0 share descriptor set 0, binding 0", "an output never shares its binding"});
  p = buffer_pair();
  p.inputs.push_back(res(false, 1, kStorageBuffer, kR32, 0));
  expect_violation(p, {f32({8}), f32({9})}, {f32({8})}, "input_1_binding",
                   {"input_1 and input_0 share descriptor set 0, binding 0",
                    "only when they alias the same input tensor", "f32[8]", "f32[9]"});
  // A tensor view and an image view of the same data need two bindings.
  p = buffer_pair();
  p.inputs.push_back(res(false, 1, kSampler, kRGBA32, 0));
  expect_violation(p, {f32({1, 2, 2, 4}), f32({1, 2, 2, 4})}, {f32({8})}, "input_1_binding",
                   {"a tensor view and an image view of the same data use different bindings"});
}

TEST(Contract, AliasesOfOneInputShareABinding) {
  Payload p = buffer_pair();
  p.inputs.push_back(res(false, 1, kStorageBuffer, kR32, 0));
  auto b = check_contract(p, {f32({8}), f32({8})}, {f32({8})}, node());
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].index, 0u);
  EXPECT_EQ(b[1].index, 1u);
  EXPECT_EQ(b[1].binding, 0u);
  EXPECT_TRUE(b[2].output);
  // The same data as a tensor view and an image view on different bindings is fine.
  p = buffer_pair();
  p.inputs.push_back(res(false, 1, kSampler, kRGBA32, 2));
  EXPECT_EQ(check_contract(p, {f32({1, 2, 2, 4}), f32({1, 2, 2, 4})}, {f32({8})}, node()).size(), 3u);
}

TEST(Contract, SortedBySetThenBindingInputsFirst) {
  Payload p;
  p.inputs = {res(false, 0, kStorageBuffer, kR32, 0, 1), res(false, 1, kStorageBuffer, kR32, 5, 0)};
  p.outputs = {res(true, 0, kStorageBuffer, kR32, 0, 0), res(true, 1, kStorageBuffer, kR32, 1, 1)};
  auto b = check_contract(p, {f32({1}), f32({1})}, {f32({1}), f32({1})}, node());
  ASSERT_EQ(b.size(), 4u);
  EXPECT_TRUE(b[0].output && b[0].index == 0);  // set 0 binding 0
  EXPECT_TRUE(!b[1].output && b[1].index == 1);  // set 0 binding 5
  EXPECT_TRUE(!b[2].output && b[2].index == 0);  // set 1 binding 0
  EXPECT_TRUE(b[3].output && b[3].index == 1);   // set 1 binding 1
  EXPECT_EQ(b[2].set, 1u);
}

TEST(Contract, SamplerSettings) {
  Payload p = buffer_pair();
  p.inputs[0] = res(false, 0, kSampler, kRGBA32, 0);
  p.inputs[0].filter = "nearest";
  p.inputs[0].address_mode = "repeat";
  auto b = check_contract(p, {f32({4, 4, 4})}, {f32({8})}, node());
  EXPECT_EQ(b[0].filter, "nearest");
  EXPECT_EQ(b[0].address_mode, "repeat");
  p.inputs[0].filter = "bicubic";
  expect_violation(p, {f32({4, 4, 4})}, {f32({8})}, "input_0_weft_filter", {"\"nearest\" or \"linear\""});
  p.inputs[0].filter.reset();
  p.inputs[0].address_mode = "wrap";
  expect_violation(p, {f32({4, 4, 4})}, {f32({8})}, "input_0_weft_address_mode", {"\"clamp_to_edge\""});
}

TEST(Contract, FromAParsedPayload) {
  Payload p = parse_payload(R"({
    "entry_point": "main", "workgroup_sizes": [8, 8, 1], "shader_language": "GLSL", "shader_code": "",
    "input_0_vkformat": "VK_FORMAT_R32_SFLOAT", "input_0_vkdescriptortype": "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER",
    "input_0_binding": 0, "input_0_descriptorset": 0,
    "output_0_vkformat": "VK_FORMAT_R32_SFLOAT", "output_0_vkdescriptortype": "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER",
    "output_0_binding": 1, "output_0_descriptorset": 0})");
  auto b = check_contract(p, {f32({1, 8, 8, 3})}, {f32({1, 8, 8, 3})}, node());
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[1].binding, 1u);
}

}  // namespace
}  // namespace weft::custom
