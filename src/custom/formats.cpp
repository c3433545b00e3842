// The VkFormat and VkDescriptorType names a custom operator's payload may use.
//
// Every value below was checked against the Khronos registry (vulkan_core.h: the core values in
// Debian's Vulkan-Headers 1.3.239, the VK_ARM_tensors values in current Vulkan-Headers).
#include <string>

#include "weft/custom.h"

namespace weft::custom {

namespace {

// kind: 'f' float, 'i' signed integer, 'u' unsigned integer. Arm's tensor element formats have no
// kind of their own: VK_FORMAT_R8_BOOL_ARM is listed as a 1-byte 'u' format, the bfloat16 and fp8
// encodings as 'f' formats; code that needs to tell them apart compares the value.
constexpr FormatInfo kFormats[] = {
    // 8-bit components (Vulkan has no R8 SFLOAT format).
    {"VK_FORMAT_R8_UINT", 13, 1, 1, 'u'},
    {"VK_FORMAT_R8_SINT", 14, 1, 1, 'i'},
    {"VK_FORMAT_R8G8_UINT", 20, 2, 1, 'u'},
    {"VK_FORMAT_R8G8_SINT", 21, 2, 1, 'i'},
    {"VK_FORMAT_R8G8B8_UINT", 27, 3, 1, 'u'},
    {"VK_FORMAT_R8G8B8_SINT", 28, 3, 1, 'i'},
    {"VK_FORMAT_R8G8B8A8_UINT", 41, 4, 1, 'u'},
    {"VK_FORMAT_R8G8B8A8_SINT", 42, 4, 1, 'i'},
    // 16-bit components.
    {"VK_FORMAT_R16_UINT", 74, 1, 2, 'u'},
    {"VK_FORMAT_R16_SINT", 75, 1, 2, 'i'},
    {"VK_FORMAT_R16_SFLOAT", 76, 1, 2, 'f'},
    {"VK_FORMAT_R16G16_UINT", 81, 2, 2, 'u'},
    {"VK_FORMAT_R16G16_SINT", 82, 2, 2, 'i'},
    {"VK_FORMAT_R16G16_SFLOAT", 83, 2, 2, 'f'},
    {"VK_FORMAT_R16G16B16_UINT", 88, 3, 2, 'u'},
    {"VK_FORMAT_R16G16B16_SINT", 89, 3, 2, 'i'},
    {"VK_FORMAT_R16G16B16_SFLOAT", 90, 3, 2, 'f'},
    {"VK_FORMAT_R16G16B16A16_UINT", 95, 4, 2, 'u'},
    {"VK_FORMAT_R16G16B16A16_SINT", 96, 4, 2, 'i'},
    {"VK_FORMAT_R16G16B16A16_SFLOAT", 97, 4, 2, 'f'},
    // 32-bit components.
    {"VK_FORMAT_R32_UINT", 98, 1, 4, 'u'},
    {"VK_FORMAT_R32_SINT", 99, 1, 4, 'i'},
    {"VK_FORMAT_R32_SFLOAT", 100, 1, 4, 'f'},
    {"VK_FORMAT_R32G32_UINT", 101, 2, 4, 'u'},
    {"VK_FORMAT_R32G32_SINT", 102, 2, 4, 'i'},
    {"VK_FORMAT_R32G32_SFLOAT", 103, 2, 4, 'f'},
    {"VK_FORMAT_R32G32B32_UINT", 104, 3, 4, 'u'},
    {"VK_FORMAT_R32G32B32_SINT", 105, 3, 4, 'i'},
    {"VK_FORMAT_R32G32B32_SFLOAT", 106, 3, 4, 'f'},
    {"VK_FORMAT_R32G32B32A32_UINT", 107, 4, 4, 'u'},
    {"VK_FORMAT_R32G32B32A32_SINT", 108, 4, 4, 'i'},
    {"VK_FORMAT_R32G32B32A32_SFLOAT", 109, 4, 4, 'f'},
    // 64-bit components.
    {"VK_FORMAT_R64_UINT", 110, 1, 8, 'u'},
    {"VK_FORMAT_R64_SINT", 111, 1, 8, 'i'},
    {"VK_FORMAT_R64_SFLOAT", 112, 1, 8, 'f'},
    {"VK_FORMAT_R64G64_UINT", 113, 2, 8, 'u'},
    {"VK_FORMAT_R64G64_SINT", 114, 2, 8, 'i'},
    {"VK_FORMAT_R64G64_SFLOAT", 115, 2, 8, 'f'},
    {"VK_FORMAT_R64G64B64_UINT", 116, 3, 8, 'u'},
    {"VK_FORMAT_R64G64B64_SINT", 117, 3, 8, 'i'},
    {"VK_FORMAT_R64G64B64_SFLOAT", 118, 3, 8, 'f'},
    {"VK_FORMAT_R64G64B64A64_UINT", 119, 4, 8, 'u'},
    {"VK_FORMAT_R64G64B64A64_SINT", 120, 4, 8, 'i'},
    {"VK_FORMAT_R64G64B64A64_SFLOAT", 121, 4, 8, 'f'},
    // VK_ARM_tensors element formats (with VK_KHR_shader_bfloat16 / VK_EXT_shader_float8).
    {"VK_FORMAT_R8_BOOL_ARM", 1000460000, 1, 1, 'u'},
    {"VK_FORMAT_R16_SFLOAT_FPENCODING_BFLOAT16_ARM", 1000460001, 1, 2, 'f'},
    {"VK_FORMAT_R8_SFLOAT_FPENCODING_FLOAT8E4M3_ARM", 1000460002, 1, 1, 'f'},
    {"VK_FORMAT_R8_SFLOAT_FPENCODING_FLOAT8E5M2_ARM", 1000460003, 1, 1, 'f'},
};

struct DescriptorTypeName {
  const char* name;
  uint32_t value;
};

// The first entry of a value is its canonical name (descriptor_type_name).
constexpr DescriptorTypeName kDescriptorTypes[] = {
    {"VK_DESCRIPTOR_TYPE_SAMPLER", 0},
    {"VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER", 1},
    {"VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE", 2},
    {"VK_DESCRIPTOR_TYPE_STORAGE_IMAGE", 3},
    {"VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER", 4},
    {"VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER", 5},
    {"VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER", 6},
    {"VK_DESCRIPTOR_TYPE_STORAGE_BUFFER", 7},
    {"VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC", 8},
    {"VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC", 9},
    {"VK_DESCRIPTOR_TYPE_INPUT_ATTACHMENT", 10},
    {"VK_DESCRIPTOR_TYPE_INLINE_UNIFORM_BLOCK", 1000138000},
    {"VK_DESCRIPTOR_TYPE_INLINE_UNIFORM_BLOCK_EXT", 1000138000},
    {"VK_DESCRIPTOR_TYPE_ACCELERATION_STRUCTURE_KHR", 1000150000},
    {"VK_DESCRIPTOR_TYPE_ACCELERATION_STRUCTURE_NV", 1000165000},
    {"VK_DESCRIPTOR_TYPE_MUTABLE_EXT", 1000351000},
    {"VK_DESCRIPTOR_TYPE_MUTABLE_VALVE", 1000351000},
    {"VK_DESCRIPTOR_TYPE_SAMPLE_WEIGHT_IMAGE_QCOM", 1000440000},
    {"VK_DESCRIPTOR_TYPE_BLOCK_MATCH_IMAGE_QCOM", 1000440001},
    {"VK_DESCRIPTOR_TYPE_TENSOR_ARM", 1000460000},
    // The schema's example name. The Vulkan registry has no STORAGE_TENSOR_EXT enumerant (checked
    // against current Vulkan-Headers); it is the name early ML SDK code used for what the registry
    // now calls VK_DESCRIPTOR_TYPE_TENSOR_ARM (same value, 1000460000), so it is an alias of it.
    {"VK_DESCRIPTOR_TYPE_STORAGE_TENSOR_EXT", 1000460000},
};

}  // namespace

const FormatInfo* find_format(std::string_view name) {
  for (const FormatInfo& f : kFormats)
    if (name == f.name) return &f;
  return nullptr;
}

const FormatInfo* find_format(uint32_t value) {
  for (const FormatInfo& f : kFormats)
    if (f.value == value) return &f;
  return nullptr;
}

std::optional<uint32_t> descriptor_type_value(std::string_view name) {
  for (const auto& d : kDescriptorTypes)
    if (name == d.name) return d.value;
  return std::nullopt;
}

std::string descriptor_type_name(uint32_t value) {
  for (const auto& d : kDescriptorTypes)
    if (d.value == value) return d.name;
  return std::to_string(value);
}

}  // namespace weft::custom
