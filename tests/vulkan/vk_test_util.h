// Helpers of the Vulkan runtime tests: GLSL -> SPIR-V with shaderc, BoundResource builders, skips.
#pragma once

#include <gtest/gtest.h>
#include <shaderc/shaderc.h>
#include <vulkan/vulkan.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/scoped_env.h"
#include "device/vulkan/vulkan.h"
#include "weft/custom.h"

namespace vk_test {

// Why the Vulkan tests cannot run (no loader/driver), or nothing.
inline std::optional<std::string> unavailable() {
  try {
    weft::vk::list_devices();
    return std::nullopt;
  } catch (const weft::Error& e) {
    if (e.code() == weft::ErrorCode::kUnsupported) return std::string(e.what());
    throw;
  }
}

#define WEFT_VK_REQUIRE_DEVICE()                                  \
  do {                                                            \
    if (auto why = ::vk_test::unavailable()) GTEST_SKIP() << *why; \
  } while (0)

// Compiles a GLSL compute shader for Vulkan 1.1 (or `env`: a shaderc_env_version, e.g. Vulkan 1.2 for
// SPIR-V 1.5); throws std::runtime_error with the compiler log.
inline std::vector<uint32_t> glsl(const std::string& source, const std::string& name = "test.comp",
                                  uint32_t env = shaderc_env_version_vulkan_1_1) {
  shaderc_compiler_t compiler = shaderc_compiler_initialize();
  shaderc_compile_options_t options = shaderc_compile_options_initialize();
  shaderc_compile_options_set_target_env(options, shaderc_target_env_vulkan, env);
  shaderc_compilation_result_t result = shaderc_compile_into_spv(
      compiler, source.data(), source.size(), shaderc_compute_shader, name.c_str(), "main", options);
  std::vector<uint32_t> words;
  std::string error;
  if (shaderc_result_get_compilation_status(result) != shaderc_compilation_status_success) {
    error = shaderc_result_get_error_message(result);
  } else {
    words.resize(shaderc_result_get_length(result) / sizeof(uint32_t));
    std::memcpy(words.data(), shaderc_result_get_bytes(result), words.size() * sizeof(uint32_t));
  }
  shaderc_result_release(result);
  shaderc_compile_options_release(options);
  shaderc_compiler_release(compiler);
  if (!error.empty()) throw std::runtime_error("shaderc: " + error);
  return words;
}

// Formats as weft::custom::find_format describes them (spelled out: the tests use only the structs).
inline const weft::custom::FormatInfo kR32{"VK_FORMAT_R32_SFLOAT", VK_FORMAT_R32_SFLOAT, 1, 4, 'f'};
inline const weft::custom::FormatInfo kRG32{"VK_FORMAT_R32G32_SFLOAT", VK_FORMAT_R32G32_SFLOAT, 2, 4, 'f'};
inline const weft::custom::FormatInfo kRGB32{"VK_FORMAT_R32G32B32_SFLOAT", VK_FORMAT_R32G32B32_SFLOAT, 3, 4, 'f'};
inline const weft::custom::FormatInfo kRGBA32{"VK_FORMAT_R32G32B32A32_SFLOAT", VK_FORMAT_R32G32B32A32_SFLOAT, 4, 4,
                                              'f'};
inline const weft::custom::FormatInfo kR32I{"VK_FORMAT_R32_SINT", VK_FORMAT_R32_SINT, 1, 4, 'i'};

inline weft::custom::BoundResource buffer(bool output, uint32_t index, uint32_t set, uint32_t binding,
                                          weft::Shape shape, weft::DType dtype = weft::DType::kFp32,
                                          uint32_t descriptor_type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER) {
  weft::custom::BoundResource r;
  r.output = output;
  r.index = index;
  r.kind = weft::custom::ResourceKind::kBuffer;
  r.descriptor_type = descriptor_type;
  r.set = set;
  r.binding = binding;
  r.format = dtype == weft::DType::kInt32 ? &kR32I : &kR32;
  r.tensor = weft::TensorType{dtype, std::move(shape)};
  return r;
}

// An image resource of shape [H,W,C] or [1,H,W,C]; extent and channels from the shape.
inline weft::custom::BoundResource image(bool output, uint32_t index, weft::custom::ResourceKind kind, uint32_t set,
                                         uint32_t binding, const weft::custom::FormatInfo& format,
                                         weft::Shape shape) {
  weft::custom::BoundResource r;
  r.output = output;
  r.index = index;
  r.kind = kind;
  r.descriptor_type = kind == weft::custom::ResourceKind::kSampledImage ? VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER
                                                                        : VK_DESCRIPTOR_TYPE_STORAGE_IMAGE;
  r.set = set;
  r.binding = binding;
  r.format = &format;
  size_t off = shape.size() == 4 ? 1 : 0;
  r.height = static_cast<uint32_t>(shape[off]);
  r.width = static_cast<uint32_t>(shape[off + 1]);
  r.channels = static_cast<uint32_t>(shape[off + 2]);
  r.tensor = weft::TensorType{weft::DType::kFp32, std::move(shape)};
  return r;
}

template <typename T>
std::vector<uint8_t> bytes_of(const T& value) {
  std::vector<uint8_t> b(sizeof(T));
  std::memcpy(b.data(), &value, sizeof(T));
  return b;
}

// Sets (or unsets) an environment variable for a scope (tests/common/scoped_env.h).
using ScopedEnv = weft::test::ScopedEnv;

}  // namespace vk_test
