// The shared dispatch helpers (validation, pipelines, buffers, images, descriptors) and ComputeKernel,
// a one-dispatch Program.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <type_traits>
#include <utility>

#include "device/vulkan/internal.h"

namespace weft::vk {

using custom::ResourceKind;
using detail::check;

namespace {

// ---- SPIR-V: the compute entry point and its LocalSize -----------------------------------------

struct EntryPointScan {
  bool found = false;
  std::array<uint32_t, 3> local_size{};  // 0: unknown (LocalSizeId or absent)
  std::vector<std::string> compute_entry_points;
};

std::string spirv_string(const std::vector<uint32_t>& words, size_t begin, size_t end, size_t* next) {
  std::string s;
  for (size_t i = begin; i < end; ++i) {
    for (int b = 0; b < 4; ++b) {
      char c = static_cast<char>((words[i] >> (8 * b)) & 0xff);
      if (c == 0) {
        *next = i + 1;
        return s;
      }
      s += c;
    }
  }
  *next = end;
  return s;
}

EntryPointScan scan_spirv(const std::vector<uint32_t>& words, const std::string& entry, const std::string& kernel) {
  constexpr uint32_t kMagic = 0x07230203;
  constexpr uint32_t kOpEntryPoint = 15, kOpExecutionMode = 16, kGLCompute = 5, kLocalSize = 17;
  if (words.size() < 5 || words[0] != kMagic)
    throw Error(ErrorCode::kInvalidArgument,
                "kernel '" + kernel + "': the shader is not a SPIR-V module (" +
                    (words.empty() ? std::string("no words") : "magic number missing") + ")");
  EntryPointScan scan;
  uint32_t entry_id = 0;
  bool have_id = false;
  for (size_t i = 5; i < words.size();) {
    uint32_t count = words[i] >> 16, op = words[i] & 0xffff;
    if (count == 0 || i + count > words.size())
      throw Error(ErrorCode::kInvalidArgument,
                  "kernel '" + kernel + "': malformed SPIR-V (instruction at word " + std::to_string(i) + ")");
    if (op == kOpEntryPoint && count >= 4 && words[i + 1] == kGLCompute) {
      size_t next = 0;
      std::string name = spirv_string(words, i + 3, i + count, &next);
      scan.compute_entry_points.push_back(name);
      if (name == entry && !have_id) {
        entry_id = words[i + 2];
        have_id = true;
        scan.found = true;
      }
    } else if (op == kOpExecutionMode && count >= 6 && have_id && words[i + 1] == entry_id &&
               words[i + 2] == kLocalSize) {
      scan.local_size = {words[i + 3], words[i + 4], words[i + 5]};
    }
    i += count;
  }
  return scan;
}

// ---- Vulkan names ------------------------------------------------------------------------------



std::string descriptor_name(VkDescriptorType t) {
  switch (t) {
    case VK_DESCRIPTOR_TYPE_STORAGE_BUFFER: return "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER";
    case VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER: return "VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER";
    case VK_DESCRIPTOR_TYPE_STORAGE_IMAGE: return "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE";
    case VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER: return "VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER";
    default: return "VkDescriptorType(" + std::to_string(static_cast<int>(t)) + ")";
  }
}



}  // namespace

namespace detail {

VkFilter filter_of(const std::string& s, const std::string& what) {
  if (s.empty() || s == "linear") return VK_FILTER_LINEAR;
  if (s == "nearest") return VK_FILTER_NEAREST;
  throw Error(ErrorCode::kInvalidArgument, what + ": unknown sampler filter '" + s + "' (nearest, linear)");
}

VkSamplerAddressMode address_of(const std::string& s, const std::string& what) {
  if (s.empty() || s == "clamp_to_edge") return VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE;
  if (s == "repeat") return VK_SAMPLER_ADDRESS_MODE_REPEAT;
  if (s == "mirrored_repeat") return VK_SAMPLER_ADDRESS_MODE_MIRRORED_REPEAT;
  if (s == "clamp_to_border") return VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_BORDER;
  throw Error(ErrorCode::kInvalidArgument, what + ": unknown sampler address mode '" + s +
                                               "' (clamp_to_edge, repeat, mirrored_repeat, clamp_to_border)");
}

uint32_t env_timeout_ms(uint32_t fallback) {
  const char* v = std::getenv("WEFT_VULKAN_TIMEOUT_MS");
  if (!v || !*v) return fallback;
  char* end = nullptr;
  unsigned long ms = std::strtoul(v, &end, 10);
  if (*end != 0 || ms == 0 || ms > 0xffffffffUL)
    throw Error(ErrorCode::kInvalidArgument,
                std::string("WEFT_VULKAN_TIMEOUT_MS='") + v + "' is not a positive number of milliseconds");
  return static_cast<uint32_t>(ms);
}

}  // namespace detail

using detail::Backing;

// Checks the dispatch against the module, the contract's resource kinds and the device's limits,
// and groups the resources into backings.
void detail::validate_dispatch(const Device& dev, const DispatchDesc& desc, std::vector<uint8_t>& push,
                               std::vector<Backing>& backings) {
  const DeviceInfo& info = dev.info;
  const std::string k = "kernel '" + desc.name + "'";
  const std::string on = " of Vulkan " + dev.label();

  EntryPointScan scan = scan_spirv(desc.spirv, desc.entry_point, desc.name);
  if (!scan.found) {
    std::string names;
    for (const auto& n : scan.compute_entry_points) names += (names.empty() ? "'" : ", '") + n + "'";
    throw Error(ErrorCode::kInvalidArgument, k + ": the SPIR-V module has no compute entry point '" +
                                                 desc.entry_point + "' (compute entry points: " +
                                                 (names.empty() ? std::string("none") : names) + ")");
  }
  static const char* axes[3] = {"x", "y", "z"};
  if (scan.local_size[0] != 0) {
    uint64_t invocations = 1;
    for (int i = 0; i < 3; ++i) {
      invocations *= scan.local_size[i];
      if (scan.local_size[i] > info.max_workgroup_size[i])
        throw Error(ErrorCode::kUnsupported, k + ": workgroup size " + axes[i] + " = " +
                                                 std::to_string(scan.local_size[i]) +
                                                 " exceeds maxComputeWorkGroupSize[" + std::to_string(i) +
                                                 "] = " + std::to_string(info.max_workgroup_size[i]) + on);
    }
    if (invocations > info.max_workgroup_invocations)
      throw Error(ErrorCode::kUnsupported, k + ": workgroup size " + std::to_string(scan.local_size[0]) + " x " +
                                               std::to_string(scan.local_size[1]) + " x " +
                                               std::to_string(scan.local_size[2]) +
                                               " exceeds maxComputeWorkGroupInvocations = " +
                                               std::to_string(info.max_workgroup_invocations) + on);
  }
  for (int i = 0; i < 3; ++i)
    if (desc.groups[i] > info.max_workgroup_count[i])
      throw Error(ErrorCode::kUnsupported,
                  k + ": dispatch of " + std::to_string(desc.groups[0]) + " x " + std::to_string(desc.groups[1]) +
                      " x " + std::to_string(desc.groups[2]) + " workgroups exceeds maxComputeWorkGroupCount[" +
                      std::to_string(i) + "] = " + std::to_string(info.max_workgroup_count[i]) + on);
  if (desc.push_constants.size() > info.max_push_constants_size)
    throw Error(ErrorCode::kUnsupported, k + ": " + std::to_string(desc.push_constants.size()) +
                                             " bytes of push constants exceed maxPushConstantsSize = " +
                                             std::to_string(info.max_push_constants_size) + on);
  push = desc.push_constants;
  push.resize((push.size() + 3) / 4 * 4, 0);

  std::map<std::pair<uint32_t, uint32_t>, size_t> by_binding;
  for (const custom::BoundResource& r : desc.resources) {
    std::string what = std::string(r.output ? "output " : "input ") + std::to_string(r.index) + " (set " +
                       std::to_string(r.set) + ", binding " + std::to_string(r.binding) + ")";
    std::string where = k + ", " + what;
    VkDescriptorType type = static_cast<VkDescriptorType>(r.descriptor_type);
    switch (r.kind) {
      case ResourceKind::kBuffer:
        if (r.descriptor_type == 0) type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        if (type != VK_DESCRIPTOR_TYPE_STORAGE_BUFFER && type != VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER)
          throw Error(ErrorCode::kInvalidArgument,
                      where + ": a buffer resource needs VK_DESCRIPTOR_TYPE_STORAGE_BUFFER or "
                              "VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, not " + descriptor_name(type));
        if (r.output && type == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER)
          throw Error(ErrorCode::kInvalidArgument, where + ": a uniform buffer cannot be an output");
        break;
      case ResourceKind::kStorageImage:
        if (r.descriptor_type == 0) type = VK_DESCRIPTOR_TYPE_STORAGE_IMAGE;
        if (type != VK_DESCRIPTOR_TYPE_STORAGE_IMAGE)
          throw Error(ErrorCode::kInvalidArgument,
                      where + ": a storage image needs VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, not " + descriptor_name(type));
        break;
      case ResourceKind::kSampledImage:
        if (r.descriptor_type == 0) type = VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER;
        if (type != VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER)
          throw Error(ErrorCode::kInvalidArgument, where + ": a sampled image needs "
                                                           "VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, not " +
                                                       descriptor_name(type));
        if (r.output)
          throw Error(ErrorCode::kInvalidArgument,
                      where + ": a sampled image cannot be an output (use VK_DESCRIPTOR_TYPE_STORAGE_IMAGE)");
        break;
      case ResourceKind::kTensorArm:
        throw Error(ErrorCode::kUnsupported, where + ": tensor descriptors (VK_ARM_tensors) are not supported by "
                                                     "Weft's Vulkan runtime; use a storage buffer");
    }
    Backing b;
    b.set = r.set;
    b.binding = r.binding;
    b.kind = r.kind;
    b.type = type;
    b.bytes = r.tensor.byte_size();
    b.size = std::max<VkDeviceSize>(4, (b.bytes + 3) / 4 * 4);
    b.what = what;
    if (b.is_image()) {
      if (!r.format)
        throw Error(ErrorCode::kInvalidArgument, where + ": an image resource needs a format");
      b.format = static_cast<VkFormat>(r.format->value);
      b.format_name = r.format->name;
      b.width = r.width;
      b.height = r.height;
      const Shape& s = r.tensor.shape;
      if (b.width == 0 || b.height == 0) {
        if (s.size() == 3) {
          b.height = static_cast<uint32_t>(s[0]), b.width = static_cast<uint32_t>(s[1]);
        } else if (s.size() == 4 && s[0] == 1) {
          b.height = static_cast<uint32_t>(s[1]), b.width = static_cast<uint32_t>(s[2]);
        } else {
          throw Error(ErrorCode::kInvalidArgument,
                      where + ": an image tensor has shape [H,W,C] or [1,H,W,C], not " + r.tensor.str());
        }
      }
      if (b.width == 0 || b.height == 0)
        throw Error(ErrorCode::kUnsupported, where + ": an image cannot be empty (" + r.tensor.str() + ")");
      if (r.channels != 0 && r.channels != static_cast<uint32_t>(r.format->components))
        throw Error(ErrorCode::kInvalidArgument, where + ": " + std::to_string(r.channels) + " channels, but " +
                                                     r.format->name + " has " +
                                                     std::to_string(r.format->components) + " components");
      size_t texel = static_cast<size_t>(r.format->components) * static_cast<size_t>(r.format->component_bytes);
      if (static_cast<size_t>(b.width) * b.height * texel != b.bytes)
        throw Error(ErrorCode::kInvalidArgument,
                    where + ": " + std::to_string(b.width) + " x " + std::to_string(b.height) + " texels of " +
                        r.format->name + " are not the " + std::to_string(b.bytes) + " bytes of " + r.tensor.str());
      if (b.width > info.max_image_dimension_2d || b.height > info.max_image_dimension_2d)
        throw Error(ErrorCode::kUnsupported, where + ": image extent " + std::to_string(b.width) + " x " +
                                                 std::to_string(b.height) + " exceeds maxImageDimension2D = " +
                                                 std::to_string(info.max_image_dimension_2d) + on);
      b.filter = r.filter;
      b.address_mode = r.address_mode;
    } else {
      bool uniform = type == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER;
      uint64_t limit = uniform ? info.max_uniform_buffer_range : info.max_storage_buffer_range;
      if (b.size > limit)
        throw Error(ErrorCode::kUnsupported, where + ": " + std::to_string(b.bytes) + " bytes exceed " +
                                                 (uniform ? "maxUniformBufferRange" : "maxStorageBufferRange") +
                                                 " = " + std::to_string(limit) + on);
    }
    auto key = std::make_pair(r.set, r.binding);
    auto it = by_binding.find(key);
    if (it == by_binding.end()) {
      if (r.output)
        b.outputs.push_back(r.index);
      else
        b.input = static_cast<int>(r.index);
      by_binding.emplace(key, backings.size());
      backings.push_back(std::move(b));
      continue;
    }
    // An alias: the same device object.
    Backing& a = backings[it->second];
    if (a.kind != b.kind || a.type != b.type || a.format != b.format || a.bytes != b.bytes ||
        a.width != b.width || a.height != b.height)
      throw Error(ErrorCode::kInvalidArgument,
                  k + ": " + a.what + " and " + what +
                      " share a binding but differ in kind, descriptor type, format or size");
    if (r.output) {
      if (std::find(a.outputs.begin(), a.outputs.end(), r.index) == a.outputs.end()) a.outputs.push_back(r.index);
    } else if (a.input < 0) {
      a.input = static_cast<int>(r.index);
    }
    a.what += " = " + what;
  }

  uint32_t set_count = 0;
  for (const Backing& b : backings) set_count = std::max(set_count, b.set + 1);
  if (set_count > info.max_bound_descriptor_sets)
    throw Error(ErrorCode::kUnsupported, k + ": descriptor set " + std::to_string(set_count - 1) +
                                             " exceeds maxBoundDescriptorSets = " +
                                             std::to_string(info.max_bound_descriptor_sets) + on);
  // What one shader stage may bind of each descriptor kind (a combined image sampler counts as a
  // sampled image). Checked here, so that a device below the kernel's needs gets the kernel and the
  // limit named instead of a failed pipeline layout.
  struct PerStage {
    VkDescriptorType type;
    uint32_t limit;
    const char* limit_name;
    const char* what;
  };
  const PerStage per_stage[] = {
      {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, info.max_stage_storage_buffers, "maxPerStageDescriptorStorageBuffers",
       "storage buffers"},
      {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, info.max_stage_uniform_buffers, "maxPerStageDescriptorUniformBuffers",
       "uniform buffers"},
      {VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, info.max_stage_storage_images, "maxPerStageDescriptorStorageImages",
       "storage images"},
      {VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, info.max_stage_sampled_images, "maxPerStageDescriptorSampledImages",
       "sampled images"}};
  for (const PerStage& s : per_stage) {
    const auto used = static_cast<uint32_t>(
        std::count_if(backings.begin(), backings.end(), [&](const Backing& b) { return b.type == s.type; }));
    if (used > s.limit)
      throw Error(ErrorCode::kUnsupported, k + " binds " + std::to_string(used) + " " + s.what + ", above " +
                                               s.limit_name + " = " + std::to_string(s.limit) + on);
  }

  // Image formats must support their use.
  for (const Backing& b : backings) {
    if (!b.is_image()) continue;
    VkFormatProperties fp{};
    vkGetPhysicalDeviceFormatProperties(dev.physical, b.format, &fp);
    VkFormatFeatureFlags have = fp.optimalTilingFeatures;
    auto need = [&](VkFormatFeatureFlags bit, const char* feature, const char* use) {
      if (!(have & bit))
        throw Error(ErrorCode::kUnsupported, "Vulkan " + dev.label() + " does not support " + b.format_name +
                                                 " " + use + " (" + feature + "), needed by " + k + ", " + b.what);
    };
    if (b.kind == ResourceKind::kSampledImage) {
      need(VK_FORMAT_FEATURE_SAMPLED_IMAGE_BIT, "VK_FORMAT_FEATURE_SAMPLED_IMAGE_BIT", "as a sampled image");
      if (filter_of(b.filter, k + ", " + b.what) == VK_FILTER_LINEAR)
        need(VK_FORMAT_FEATURE_SAMPLED_IMAGE_FILTER_LINEAR_BIT, "VK_FORMAT_FEATURE_SAMPLED_IMAGE_FILTER_LINEAR_BIT",
             "with a linear filter");
      address_of(b.address_mode, k + ", " + b.what);
    } else {
      need(VK_FORMAT_FEATURE_STORAGE_IMAGE_BIT, "VK_FORMAT_FEATURE_STORAGE_IMAGE_BIT", "as a storage image");
    }
    need(VK_FORMAT_FEATURE_TRANSFER_DST_BIT, "VK_FORMAT_FEATURE_TRANSFER_DST_BIT", "as a copy destination");
    if (b.is_output())
      need(VK_FORMAT_FEATURE_TRANSFER_SRC_BIT, "VK_FORMAT_FEATURE_TRANSFER_SRC_BIT", "as a copy source");
  }
}

namespace {
// One line per executable of `pipeline`: the driver's compiler statistics (NVIDIA: registers per
// invocation, spills, shared memory; Mesa: instructions, ...). WEFT_VULKAN_PIPELINE_STATS only.
void print_pipeline_stats(Device& dev, VkPipeline pipeline, const std::string& k) {
  auto props_fn = reinterpret_cast<PFN_vkGetPipelineExecutablePropertiesKHR>(
      vkGetDeviceProcAddr(dev.device, "vkGetPipelineExecutablePropertiesKHR"));
  auto stats_fn = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
      vkGetDeviceProcAddr(dev.device, "vkGetPipelineExecutableStatisticsKHR"));
  if (!props_fn || !stats_fn) return;
  VkPipelineInfoKHR pi{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  pi.pipeline = pipeline;
  uint32_t n = 0;
  if (props_fn(dev.device, &pi, &n, nullptr) != VK_SUCCESS) return;
  for (uint32_t x = 0; x < n; ++x) {
    VkPipelineExecutableInfoKHR ei{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    ei.pipeline = pipeline;
    ei.executableIndex = x;
    uint32_t ns = 0;
    if (stats_fn(dev.device, &ei, &ns, nullptr) != VK_SUCCESS) continue;
    std::vector<VkPipelineExecutableStatisticKHR> st(ns, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
    if (stats_fn(dev.device, &ei, &ns, st.data()) != VK_SUCCESS) continue;
    std::string line = "weft: pipeline statistics of " + k + ":";
    for (const auto& s : st) {
      line += std::string(" ") + s.name + "=";
      switch (s.format) {
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: line += s.value.b32 ? "true" : "false"; break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: line += std::to_string(s.value.i64); break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: line += std::to_string(s.value.u64); break;
        default: line += std::to_string(s.value.f64); break;
      }
      line += ";";
    }
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}
}  // namespace

std::shared_ptr<detail::PipelineEntry> detail::dispatch_pipeline(Device& dev, const DispatchDesc& desc,
                                                             const std::vector<Backing>& backings,
                                                             const std::vector<uint8_t>& push) {
  // The layout: bindings per set, sets 0..max (empty layouts fill the gaps).
  uint32_t set_count = 0;
  for (const Backing& b : backings) set_count = std::max(set_count, b.set + 1);
  std::vector<std::vector<VkDescriptorSetLayoutBinding>> sets_bindings(set_count);
  for (const Backing& b : backings) {
    VkDescriptorSetLayoutBinding lb{};
    lb.binding = b.binding;
    lb.descriptorType = b.type;
    lb.descriptorCount = 1;
    lb.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    sets_bindings[b.set].push_back(lb);
  }
  std::string key(reinterpret_cast<const char*>(desc.spirv.data()), desc.spirv.size() * sizeof(uint32_t));
  key += '\0';
  key += desc.entry_point;
  key += '\0';
  for (uint32_t s = 0; s < set_count; ++s) {
    auto& v = sets_bindings[s];
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.binding < b.binding; });
    key += "s" + std::to_string(s) + ":";
    for (const auto& lb : v) key += std::to_string(lb.binding) + "=" + std::to_string(lb.descriptorType) + ",";
  }
  key += "pc" + std::to_string(push.size());
  if (!desc.spec_constants.empty()) {
    key += "sc";
    key.append(reinterpret_cast<const char*>(desc.spec_constants.data()), desc.spec_constants.size() * 4);
  }

  const std::string k = "kernel '" + desc.name + "'";
  return dev.pipeline(key, [&]() {
    detail::PipelineEntry e;
    VkShaderModule module = VK_NULL_HANDLE;
    auto cleanup = [&]() {
      if (module) vkDestroyShaderModule(dev.device, module, nullptr);
      if (e.pipeline) vkDestroyPipeline(dev.device, e.pipeline, nullptr);
      if (e.layout) vkDestroyPipelineLayout(dev.device, e.layout, nullptr);
      for (VkDescriptorSetLayout l : e.set_layouts) vkDestroyDescriptorSetLayout(dev.device, l, nullptr);
    };
    try {
      for (uint32_t s = 0; s < set_count; ++s) {
        VkDescriptorSetLayoutCreateInfo ci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
        ci.bindingCount = static_cast<uint32_t>(sets_bindings[s].size());
        ci.pBindings = sets_bindings[s].data();
        VkDescriptorSetLayout l = VK_NULL_HANDLE;
        check(vkCreateDescriptorSetLayout(dev.device, &ci, nullptr, &l), "vkCreateDescriptorSetLayout", k + ": ");
        e.set_layouts.push_back(l);
      }
      VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, static_cast<uint32_t>(push.size())};
      VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
      pl.setLayoutCount = set_count;
      pl.pSetLayouts = e.set_layouts.data();
      pl.pushConstantRangeCount = push.empty() ? 0 : 1;
      pl.pPushConstantRanges = push.empty() ? nullptr : &range;
      check(vkCreatePipelineLayout(dev.device, &pl, nullptr, &e.layout), "vkCreatePipelineLayout", k + ": ");
      VkShaderModuleCreateInfo sm{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
      sm.codeSize = desc.spirv.size() * sizeof(uint32_t);
      sm.pCode = desc.spirv.data();
      check(vkCreateShaderModule(dev.device, &sm, nullptr, &module), "vkCreateShaderModule", k + ": ");
      VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
      ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
      ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
      ci.stage.module = module;
      ci.stage.pName = desc.entry_point.c_str();
      std::vector<VkSpecializationMapEntry> entries(desc.spec_constants.size());
      for (uint32_t i = 0; i < entries.size(); ++i) entries[i] = {i, i * 4, 4};
      VkSpecializationInfo spec{static_cast<uint32_t>(entries.size()), entries.data(),
                                desc.spec_constants.size() * 4, desc.spec_constants.data()};
      if (!entries.empty()) ci.stage.pSpecializationInfo = &spec;
      ci.layout = e.layout;
      if (dev.pipeline_stats) ci.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
      check(vkCreateComputePipelines(dev.device, dev.pipeline_cache, 1, &ci, nullptr, &e.pipeline),
            "vkCreateComputePipelines", k + ": ");
      if (dev.pipeline_stats) print_pipeline_stats(dev, e.pipeline, k);
      vkDestroyShaderModule(dev.device, module, nullptr);
    } catch (...) {
      cleanup();
      throw;
    }
    return e;
  });
}

VkDeviceMemory detail::allocate_memory(Device& dev, const VkMemoryRequirements& req, uint32_t type,
                                       const std::string& where) {
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = type;
  VkDeviceMemory m = VK_NULL_HANDLE;
  check(vkAllocateMemory(dev.device, &ai, nullptr, &m), "vkAllocateMemory", where + ": ");
  return m;
}

namespace {
bool coherent_type(const Device& dev, uint32_t type) {
  return (dev.memory.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
}
}  // namespace

bool detail::create_buffer(Device& dev, Backing& b, VkBufferUsageFlags usage, bool map_direct,
                           const std::string& where) {
  VkDevice d = dev.device;
  // Direct mapping: a memory type that is device-local, host-visible and host-cached (UMA).
  const VkMemoryPropertyFlags kDirect = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                        VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
  bool staged = true;
  VkBufferCreateInfo ci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  ci.size = b.size;
  ci.usage = usage;
  ci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(vkCreateBuffer(d, &ci, nullptr, &b.buffer), "vkCreateBuffer", where + ": ");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(d, b.buffer, &req);
  uint32_t type = UINT32_MAX;
  if (map_direct) {
    type = dev.find_memory_type(req.memoryTypeBits, kDirect, VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    if (type != UINT32_MAX) staged = false;
  }
  if (type == UINT32_MAX) type = dev.find_memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  if (type == UINT32_MAX) type = dev.find_memory_type(req.memoryTypeBits, 0);
  if (type == UINT32_MAX)
    throw Error(ErrorCode::kRuntime, where + ": no memory type of Vulkan " + dev.label() + " fits a buffer");
  b.memory = allocate_memory(dev, req, type, where);
  check(vkBindBufferMemory(d, b.buffer, b.memory, 0), "vkBindBufferMemory", where + ": ");
  if (!staged) {
    check(vkMapMemory(d, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped), "vkMapMemory", where + ": ");
    b.coherent = coherent_type(dev, type);
  }
  return staged;
}

void detail::create_image(Device& dev, Backing& b, bool transfer_src, const std::string& where) {
  VkDevice d = dev.device;
  VkImageCreateInfo ci{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
  ci.imageType = VK_IMAGE_TYPE_2D;
  ci.format = b.format;
  ci.extent = {b.width, b.height, 1};
  ci.mipLevels = 1;
  ci.arrayLayers = 1;
  ci.samples = VK_SAMPLE_COUNT_1_BIT;
  ci.tiling = VK_IMAGE_TILING_OPTIMAL;
  ci.usage = VK_IMAGE_USAGE_TRANSFER_DST_BIT |
             (b.kind == ResourceKind::kSampledImage ? VK_IMAGE_USAGE_SAMPLED_BIT : VK_IMAGE_USAGE_STORAGE_BIT) |
             (transfer_src ? VK_IMAGE_USAGE_TRANSFER_SRC_BIT : 0);
  ci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  ci.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
  VkImageFormatProperties ifp{};
  VkResult r = vkGetPhysicalDeviceImageFormatProperties(dev.physical, ci.format, ci.imageType, ci.tiling, ci.usage, 0,
                                                        &ifp);
  if (r == VK_ERROR_FORMAT_NOT_SUPPORTED ||
      (r == VK_SUCCESS && (b.width > ifp.maxExtent.width || b.height > ifp.maxExtent.height)))
    throw Error(ErrorCode::kUnsupported, "Vulkan " + dev.label() + " cannot create a " + std::to_string(b.width) +
                                             " x " + std::to_string(b.height) + " " + b.format_name +
                                             " image for this use (vkGetPhysicalDeviceImageFormatProperties), "
                                             "needed by " + where);
  check(vkCreateImage(d, &ci, nullptr, &b.image), "vkCreateImage", where + ": ");
  VkMemoryRequirements req;
  vkGetImageMemoryRequirements(d, b.image, &req);
  uint32_t type = dev.find_memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  if (type == UINT32_MAX) type = dev.find_memory_type(req.memoryTypeBits, 0);
  if (type == UINT32_MAX)
    throw Error(ErrorCode::kRuntime, where + ": no memory type of Vulkan " + dev.label() + " fits an image");
  b.memory = allocate_memory(dev, req, type, where);
  check(vkBindImageMemory(d, b.image, b.memory, 0), "vkBindImageMemory", where + ": ");
  VkImageViewCreateInfo vi{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
  vi.image = b.image;
  vi.viewType = VK_IMAGE_VIEW_TYPE_2D;
  vi.format = b.format;
  vi.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
  check(vkCreateImageView(d, &vi, nullptr, &b.view), "vkCreateImageView", where + ": ");
  if (b.kind == ResourceKind::kSampledImage) {
    VkSamplerCreateInfo si{VK_STRUCTURE_TYPE_SAMPLER_CREATE_INFO};
    si.magFilter = si.minFilter = filter_of(b.filter, where);
    si.mipmapMode = VK_SAMPLER_MIPMAP_MODE_NEAREST;
    si.addressModeU = si.addressModeV = si.addressModeW = address_of(b.address_mode, where);
    si.borderColor = VK_BORDER_COLOR_FLOAT_TRANSPARENT_BLACK;
    si.minLod = 0;
    si.maxLod = 0;
    si.unnormalizedCoordinates = VK_FALSE;
    check(vkCreateSampler(d, &si, nullptr, &b.sampler), "vkCreateSampler", where + ": ");
  }
}

void detail::create_staging(Device& dev, Backing& b, const std::string& where) {
  VkDevice d = dev.device;
  VkBufferCreateInfo ci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  ci.size = b.size;
  ci.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  ci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(vkCreateBuffer(d, &ci, nullptr, &b.staging), "vkCreateBuffer", where + " (staging): ");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(d, b.staging, &req);
  // Cached memory both ways: reads back at full speed, and the host's memcpy into it is faster than
  // into write-combined memory (MobileNetV2 at batch 32, 19 MB of input, on an H100: 6.0 -> 5.25 ms
  // per inference); the device's copy from it costs the same.
  VkMemoryPropertyFlags preferred = VK_MEMORY_PROPERTY_HOST_COHERENT_BIT | VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
  uint32_t type = dev.find_memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, preferred);
  if (type == UINT32_MAX)
    throw Error(ErrorCode::kRuntime, where + ": Vulkan " + dev.label() + " has no host-visible memory type for staging");
  b.staging_memory = allocate_memory(dev, req, type, where + " (staging)");
  check(vkBindBufferMemory(d, b.staging, b.staging_memory, 0), "vkBindBufferMemory", where + " (staging): ");
  check(vkMapMemory(d, b.staging_memory, 0, VK_WHOLE_SIZE, 0, &b.staging_mapped), "vkMapMemory",
        where + " (staging): ");
  b.staging_coherent = coherent_type(dev, type);
}

void detail::create_descriptor_sets(Device& dev, const PipelineEntry& pipeline, const std::vector<Backing>& backings,
                                    VkDescriptorPool& descriptor_pool, std::vector<VkDescriptorSet>& sets,
                                    const std::string& k) {
  VkDevice d = dev.device;
  if (pipeline.set_layouts.empty()) return;
  std::map<VkDescriptorType, uint32_t> counts;
  for (const Backing& b : backings) counts[b.type]++;
  std::vector<VkDescriptorPoolSize> sizes;
  for (auto [type, n] : counts) sizes.push_back({type, n});
  VkDescriptorPoolCreateInfo pci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pci.maxSets = static_cast<uint32_t>(pipeline.set_layouts.size());
  pci.poolSizeCount = static_cast<uint32_t>(sizes.size());
  pci.pPoolSizes = sizes.data();
  check(vkCreateDescriptorPool(d, &pci, nullptr, &descriptor_pool), "vkCreateDescriptorPool", k + ": ");
  VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorPool = descriptor_pool;
  ai.descriptorSetCount = static_cast<uint32_t>(pipeline.set_layouts.size());
  ai.pSetLayouts = pipeline.set_layouts.data();
  sets.resize(pipeline.set_layouts.size());
  check(vkAllocateDescriptorSets(d, &ai, sets.data()), "vkAllocateDescriptorSets", k + ": ");

  std::vector<VkDescriptorBufferInfo> buffer_infos(backings.size());
  std::vector<VkDescriptorImageInfo> image_infos(backings.size());
  std::vector<VkWriteDescriptorSet> writes;
  for (size_t i = 0; i < backings.size(); ++i) {
    const Backing& b = backings[i];
    VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    w.dstSet = sets[b.set];
    w.dstBinding = b.binding;
    w.descriptorCount = 1;
    w.descriptorType = b.type;
    if (b.is_image()) {
      image_infos[i].sampler = b.sampler;
      image_infos[i].imageView = b.view;
      image_infos[i].imageLayout = shader_layout(b);
      w.pImageInfo = &image_infos[i];
    } else {
      buffer_infos[i] = {b.buffer, b.offset, b.size};
      w.pBufferInfo = &buffer_infos[i];
    }
    writes.push_back(w);
  }
  vkUpdateDescriptorSets(d, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
}

VkImageLayout detail::shader_layout(const Backing& b) {
  return b.kind == ResourceKind::kSampledImage ? VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL : VK_IMAGE_LAYOUT_GENERAL;
}

VkImageMemoryBarrier detail::image_barrier(VkImage image, VkImageLayout from, VkImageLayout to, VkAccessFlags src,
                                           VkAccessFlags dst) {
  VkImageMemoryBarrier ib{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
  ib.srcAccessMask = src;
  ib.dstAccessMask = dst;
  ib.oldLayout = from;
  ib.newLayout = to;
  ib.srcQueueFamilyIndex = ib.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  ib.image = image;
  ib.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
  return ib;
}

VkBufferImageCopy detail::image_copy_region(const Backing& b) {
  VkBufferImageCopy region{};
  region.bufferOffset = 0;
  region.bufferRowLength = 0;  // tightly packed: the contract's dense [H,W,C]
  region.bufferImageHeight = 0;
  region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
  region.imageExtent = {b.width, b.height, 1};
  return region;
}

double detail::elapsed_ms(const Device& dev, VkQueryPool pool) {
  if (!pool) return -1;
  uint64_t ticks[2] = {0, 0};
  if (vkGetQueryPoolResults(dev.device, pool, 0, 2, sizeof ticks, ticks, sizeof(uint64_t), VK_QUERY_RESULT_64_BIT) !=
      VK_SUCCESS)
    return -1;
  uint64_t mask = dev.timestamp_valid_bits >= 64 ? ~0ull : (1ull << dev.timestamp_valid_bits) - 1;
  uint64_t elapsed = ((ticks[1] & mask) - (ticks[0] & mask)) & mask;
  return static_cast<double>(elapsed) * dev.timestamp_period / 1e6;
}

std::vector<double> detail::interval_ms(const Device& dev, VkQueryPool pool, uint32_t count) {
  if (!pool || count == 0) return {};
  std::vector<uint64_t> ticks(count + 1, 0);
  if (vkGetQueryPoolResults(dev.device, pool, 0, count + 1, ticks.size() * sizeof(uint64_t), ticks.data(),
                            sizeof(uint64_t), VK_QUERY_RESULT_64_BIT) != VK_SUCCESS)
    return {};
  const uint64_t mask = dev.timestamp_valid_bits >= 64 ? ~0ull : (1ull << dev.timestamp_valid_bits) - 1;
  std::vector<double> ms(count);
  for (uint32_t i = 0; i < count; ++i)
    ms[i] = static_cast<double>(((ticks[i + 1] & mask) - (ticks[i] & mask)) & mask) * dev.timestamp_period / 1e6;
  return ms;
}

void detail::check_validation(uint64_t before, const char* doing, const std::string& what) {
  if (validation_error_count() != before)
    throw Error(ErrorCode::kRuntime,
                std::string("Vulkan validation error while ") + doing + " " + what + ": " + last_validation_error());
}

// ---- ComputeKernel: a one-dispatch Program ---------------------------------------------------------

struct ComputeKernel::Impl {
  Program program;
  // The Program's external input / output slots (in slot order): the node index each one holds.
  std::vector<uint32_t> input_index, output_index;
  std::vector<size_t> input_bytes, output_bytes;

  Impl(std::shared_ptr<Device> device, ProgramDesc desc, std::vector<uint32_t> in, std::vector<uint32_t> out,
       std::vector<size_t> in_bytes, std::vector<size_t> out_bytes)
      : program(std::move(device), std::move(desc)),
        input_index(std::move(in)),
        output_index(std::move(out)),
        input_bytes(std::move(in_bytes)),
        output_bytes(std::move(out_bytes)) {}
};

ComputeKernel::ComputeKernel(std::shared_ptr<Device> device, DispatchDesc desc) {
  if (!device) throw Error(ErrorCode::kInvalidArgument, "ComputeKernel '" + desc.name + "': no device");
  // One slot per node input index (an alias is filled from its first input, so a later input of the
  // same (set, binding) shares that slot), then one per node output index.
  ProgramDesc pd;
  pd.name = desc.name;
  pd.timeout_ms = desc.timeout_ms;
  pd.map_device_memory = desc.map_device_memory;
  ProgramDispatch dispatch;
  dispatch.slot_of_resource.assign(desc.resources.size(), 0);
  std::vector<uint32_t> in, out;
  std::vector<size_t> in_bytes, out_bytes;
  std::map<uint32_t, uint32_t> input_slot, output_slot;           // node index -> slot
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> alias_input;  // (set, binding) -> slot
  for (bool output : {false, true}) {
    for (size_t i = 0; i < desc.resources.size(); ++i) {
      const custom::BoundResource& r = desc.resources[i];
      if (r.output != output) continue;
      auto& by_index = output ? output_slot : input_slot;
      auto key = std::make_pair(r.set, r.binding);
      auto alias = alias_input.find(key);
      uint32_t slot;
      if (!output && alias != alias_input.end()) {
        slot = alias->second;
      } else if (auto it = by_index.find(r.index); it != by_index.end()) {
        slot = it->second;
      } else {
        slot = static_cast<uint32_t>(pd.slots.size());
        size_t bytes = r.tensor.byte_size();
        pd.slots.push_back({output ? ProgramSlot::Role::kOutput : ProgramSlot::Role::kInput, bytes,
                            std::string(output ? "output " : "input ") + std::to_string(r.index)});
        (output ? out : in).push_back(r.index);
        (output ? out_bytes : in_bytes).push_back(bytes);
        by_index.emplace(r.index, slot);
      }
      if (!output) alias_input.emplace(key, slot);
      dispatch.slot_of_resource[i] = slot;
    }
  }
  dispatch.desc = std::move(desc);
  pd.dispatches.push_back(std::move(dispatch));
  impl_ = std::make_unique<Impl>(std::move(device), std::move(pd), std::move(in), std::move(out),
                                 std::move(in_bytes), std::move(out_bytes));
}

ComputeKernel::~ComputeKernel() = default;
ComputeKernel::ComputeKernel(ComputeKernel&&) noexcept = default;
ComputeKernel& ComputeKernel::operator=(ComputeKernel&&) noexcept = default;

void ComputeKernel::run(const std::vector<const void*>& inputs, const std::vector<void*>& outputs) {
  Impl& m = *impl_;
  m.program.device()->check_usable();
  const std::string k = "kernel '" + desc().name + "'";
  // The program's slots in order, each from the caller's tensor its resource names.
  auto pick = [&](const auto& given, const std::vector<uint32_t>& index, const std::vector<size_t>& bytes,
                  const char* what) {
    std::vector<std::remove_cvref_t<decltype(given[0])>> slots(index.size(), nullptr);
    for (size_t j = 0; j < slots.size(); ++j) {
      if (index[j] < given.size()) slots[j] = given[index[j]];
      if (!slots[j] && bytes[j] > 0)
        throw Error(ErrorCode::kInvalidArgument, k + ": no host memory for " + what + " " + std::to_string(index[j]) +
                                                     " (" + std::to_string(given.size()) + " " + what + "s given)");
    }
    return slots;
  };
  m.program.run(pick(inputs, m.input_index, m.input_bytes, "input"),
                pick(outputs, m.output_index, m.output_bytes, "output"));
}

double ComputeKernel::last_gpu_ms() const { return impl_->program.last_gpu_ms(); }
double ComputeKernel::last_total_ms() const { return impl_->program.last_total_ms(); }
const DispatchDesc& ComputeKernel::desc() const { return impl_->program.desc().dispatches[0].desc; }
const std::shared_ptr<Device>& ComputeKernel::device() const { return impl_->program.device(); }

}  // namespace weft::vk
