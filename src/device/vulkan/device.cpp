// The Vulkan instance, device enumeration and selection, Device (queue submission thread, pipeline
// cache on disk, loss handling).
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "device/vulkan/internal.h"

namespace weft::vk {

namespace detail {

std::string result_name(VkResult r) {
  switch (r) {
#define WEFT_VK_RESULT(x) \
  case x:                 \
    return #x;
    WEFT_VK_RESULT(VK_SUCCESS)
    WEFT_VK_RESULT(VK_NOT_READY)
    WEFT_VK_RESULT(VK_TIMEOUT)
    WEFT_VK_RESULT(VK_EVENT_SET)
    WEFT_VK_RESULT(VK_EVENT_RESET)
    WEFT_VK_RESULT(VK_INCOMPLETE)
    WEFT_VK_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    WEFT_VK_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    WEFT_VK_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    WEFT_VK_RESULT(VK_ERROR_DEVICE_LOST)
    WEFT_VK_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    WEFT_VK_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    WEFT_VK_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    WEFT_VK_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    WEFT_VK_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    WEFT_VK_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    WEFT_VK_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    WEFT_VK_RESULT(VK_ERROR_FRAGMENTED_POOL)
    WEFT_VK_RESULT(VK_ERROR_UNKNOWN)
    WEFT_VK_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    WEFT_VK_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    WEFT_VK_RESULT(VK_ERROR_FRAGMENTATION)
    WEFT_VK_RESULT(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    WEFT_VK_RESULT(VK_PIPELINE_COMPILE_REQUIRED)
    WEFT_VK_RESULT(VK_ERROR_SURFACE_LOST_KHR)
    WEFT_VK_RESULT(VK_ERROR_NATIVE_WINDOW_IN_USE_KHR)
    WEFT_VK_RESULT(VK_SUBOPTIMAL_KHR)
    WEFT_VK_RESULT(VK_ERROR_OUT_OF_DATE_KHR)
    WEFT_VK_RESULT(VK_ERROR_INCOMPATIBLE_DISPLAY_KHR)
    WEFT_VK_RESULT(VK_ERROR_VALIDATION_FAILED_EXT)
    WEFT_VK_RESULT(VK_ERROR_INVALID_SHADER_NV)
    WEFT_VK_RESULT(VK_ERROR_NOT_PERMITTED_KHR)
    WEFT_VK_RESULT(VK_THREAD_IDLE_KHR)
    WEFT_VK_RESULT(VK_THREAD_DONE_KHR)
    WEFT_VK_RESULT(VK_OPERATION_DEFERRED_KHR)
    WEFT_VK_RESULT(VK_OPERATION_NOT_DEFERRED_KHR)
#undef WEFT_VK_RESULT
    default:
      return "VkResult(" + std::to_string(static_cast<int>(r)) + ")";
  }
}

void throw_vk(const char* function, VkResult r, const std::string& context) {
  throw Error(ErrorCode::kRuntime, context + function + ": " + result_name(r));
}

std::string hex(const uint8_t* bytes, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  s.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    s += digits[bytes[i] >> 4];
    s += digits[bytes[i] & 15];
  }
  return s;
}

void keep_forever(std::initializer_list<const void*> handles) {
  static std::mutex mutex;
  static auto* kept = new std::vector<const void*>;  // never freed
  std::lock_guard<std::mutex> lock(mutex);
  kept->insert(kept->end(), handles.begin(), handles.end());
}

namespace {
std::atomic<uint64_t> g_validation_errors{0};
std::mutex g_validation_mutex;
std::string g_last_validation_error;
}  // namespace

uint64_t validation_error_count() { return g_validation_errors.load(); }
std::string last_validation_error() {
  std::lock_guard<std::mutex> lock(g_validation_mutex);
  return g_last_validation_error;
}

}  // namespace detail

using detail::check;
using detail::result_name;

namespace {

std::string version_string(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

uint32_t version_no_patch(uint32_t v) {
  return VK_MAKE_API_VERSION(0, VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v), 0);
}

std::string type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
    default: return "other";
  }
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

bool env_set(const char* name) { return std::getenv(name) != nullptr; }

// The device's maxPerStageDescriptorStorageBuffers, or WEFT_VULKAN_MAX_STORAGE_BUFFERS where lower.
uint32_t capped_storage_buffers(uint32_t limit) {
  const std::string v = env("WEFT_VULKAN_MAX_STORAGE_BUFFERS");
  if (v.empty()) return limit;
  char* end = nullptr;
  const unsigned long n = std::strtoul(v.c_str(), &end, 10);
  if (*end != 0 || n == 0 || n > 0xffffffffUL || v[0] == '-')
    throw Error(ErrorCode::kInvalidArgument,
                "WEFT_VULKAN_MAX_STORAGE_BUFFERS='" + v + "' is not a positive number of storage buffers");
  return std::min(limit, static_cast<uint32_t>(n));
}

VKAPI_ATTR VkBool32 VKAPI_CALL validation_callback(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                   VkDebugUtilsMessageTypeFlagsEXT,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  const char* message = data && data->pMessage ? data->pMessage : "(no message)";
  std::fprintf(stderr, "weft: Vulkan validation: %s\n", message);
  if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
    {
      std::lock_guard<std::mutex> lock(detail::g_validation_mutex);
      detail::g_last_validation_error = message;
    }
    detail::g_validation_errors.fetch_add(1);
  }
  return VK_FALSE;
}

// The process's instance and its devices; created once, never destroyed (devices that are shared
// live until the process ends, and a device lost to a stuck shader must stay valid).
struct InstanceState {
  VkInstance instance = VK_NULL_HANDLE;
  uint32_t api_version = 0;
  std::vector<VkPhysicalDevice> physical;
  std::vector<DeviceInfo> infos;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
};

std::mutex g_instance_mutex;
InstanceState* g_instance = nullptr;

std::string driver_hint() {
  auto show = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(name) + (v ? "='" + std::string(v) + "'" : std::string(" unset"));
  };
  return "install mesa-vulkan-drivers for lavapipe (a CPU implementation), or a GPU driver; "
         "VK_ICD_FILENAMES/VK_DRIVER_FILES select driver manifests (" +
         show("VK_ICD_FILENAMES") + ", " + show("VK_DRIVER_FILES") +
         "), else the loader searches /usr/share/vulkan/icd.d and /etc/vulkan/icd.d";
}

DeviceInfo describe(VkPhysicalDevice pd, uint32_t index, uint32_t instance_api) {
  VkPhysicalDeviceProperties props{};
  vkGetPhysicalDeviceProperties(pd, &props);
  DeviceInfo info;
  info.index = index;
  info.name = props.deviceName;
  info.type = type_name(props.deviceType);
  info.vendor_id = props.vendorID;
  info.device_id = props.deviceID;
  info.api_version = version_string(props.apiVersion);
  uint32_t api = std::min(version_no_patch(props.apiVersion), instance_api);
  if (api >= VK_API_VERSION_1_1) {
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    VkPhysicalDeviceIDProperties id{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
    VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    p2.pNext = &id;
    if (api >= VK_API_VERSION_1_2) id.pNext = &driver;
    vkGetPhysicalDeviceProperties2(pd, &p2);
    info.uuid = detail::hex(id.deviceUUID, VK_UUID_SIZE);
    if (api >= VK_API_VERSION_1_2) {
      info.driver_name = driver.driverName;
      info.driver_info = driver.driverInfo;
    }
  }
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, families.data());
  for (const auto& f : families)
    if ((f.queueFlags & VK_QUEUE_COMPUTE_BIT) && f.queueCount > 0) info.has_compute_queue = true;
  const VkPhysicalDeviceLimits& l = props.limits;
  for (int i = 0; i < 3; ++i) {
    info.max_workgroup_count[i] = l.maxComputeWorkGroupCount[i];
    info.max_workgroup_size[i] = l.maxComputeWorkGroupSize[i];
  }
  info.max_workgroup_invocations = l.maxComputeWorkGroupInvocations;
  info.max_push_constants_size = l.maxPushConstantsSize;
  info.max_storage_buffer_range = l.maxStorageBufferRange;
  info.max_uniform_buffer_range = l.maxUniformBufferRange;
  info.max_image_dimension_2d = l.maxImageDimension2D;
  info.max_bound_descriptor_sets = l.maxBoundDescriptorSets;
  info.max_stage_storage_buffers = capped_storage_buffers(l.maxPerStageDescriptorStorageBuffers);
  info.max_stage_uniform_buffers = l.maxPerStageDescriptorUniformBuffers;
  info.max_stage_storage_images = l.maxPerStageDescriptorStorageImages;
  info.max_stage_sampled_images = l.maxPerStageDescriptorSampledImages;
  return info;
}

// Creates the instance on first use; throws Error(kUnsupported) (and tries again next time).
InstanceState& instance_state() {
  std::lock_guard<std::mutex> lock(g_instance_mutex);
  if (g_instance) return *g_instance;

  uint32_t loader_version = VK_API_VERSION_1_0;
  if (vkEnumerateInstanceVersion(&loader_version) != VK_SUCCESS) loader_version = VK_API_VERSION_1_0;
  if (version_no_patch(loader_version) < VK_API_VERSION_1_1)
    throw Error(ErrorCode::kUnsupported, "the Vulkan loader supports Vulkan " + version_string(loader_version) +
                                             " only; Weft needs Vulkan 1.1 or newer");
  uint32_t api = std::min(version_no_patch(loader_version), static_cast<uint32_t>(VK_API_VERSION_1_3));

  uint32_t n = 0;
  std::vector<VkExtensionProperties> available;
  if (vkEnumerateInstanceExtensionProperties(nullptr, &n, nullptr) == VK_SUCCESS) {
    available.resize(n);
    if (vkEnumerateInstanceExtensionProperties(nullptr, &n, available.data()) != VK_SUCCESS) n = 0;
    available.resize(n);
  }
  auto has_extension = [&](const char* name) {
    return std::any_of(available.begin(), available.end(),
                       [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
  };
  std::vector<const char*> extensions;
  std::vector<const char*> layers;
  VkInstanceCreateFlags flags = 0;
  if (has_extension(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
    extensions.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
    flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
  }
  bool validation = false;
  if (env("WEFT_VULKAN_VALIDATION") == "1") {
    uint32_t nl = 0;
    std::vector<VkLayerProperties> all_layers;
    if (vkEnumerateInstanceLayerProperties(&nl, nullptr) == VK_SUCCESS) {
      all_layers.resize(nl);
      if (vkEnumerateInstanceLayerProperties(&nl, all_layers.data()) != VK_SUCCESS) nl = 0;
      all_layers.resize(nl);
    }
    bool found = std::any_of(all_layers.begin(), all_layers.end(), [](const VkLayerProperties& l) {
      return std::strcmp(l.layerName, "VK_LAYER_KHRONOS_validation") == 0;
    });
    if (!found) {
      std::fprintf(stderr,
                   "weft: WEFT_VULKAN_VALIDATION=1 but VK_LAYER_KHRONOS_validation is not installed "
                   "(vulkan-validationlayers); running without it\n");
    } else {
      layers.push_back("VK_LAYER_KHRONOS_validation");
      if (has_extension(VK_EXT_DEBUG_UTILS_EXTENSION_NAME)) {
        extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
        validation = true;
      }
    }
  }

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "weft";
  app.pEngineName = "weft";
  app.apiVersion = api;
  VkDebugUtilsMessengerCreateInfoEXT messenger_info{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  messenger_info.messageSeverity =
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messenger_info.pfnUserCallback = validation_callback;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pNext = validation ? &messenger_info : nullptr;
  ci.flags = flags;
  ci.pApplicationInfo = &app;
  ci.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  ci.ppEnabledExtensionNames = extensions.data();
  ci.enabledLayerCount = static_cast<uint32_t>(layers.size());
  ci.ppEnabledLayerNames = layers.data();
  VkInstance instance = VK_NULL_HANDLE;
  VkResult r = vkCreateInstance(&ci, nullptr, &instance);
  if (r != VK_SUCCESS)
    throw Error(ErrorCode::kUnsupported,
                "no Vulkan driver found (vkCreateInstance: " + result_name(r) + "): " + driver_hint());

  uint32_t count = 0;
  r = vkEnumeratePhysicalDevices(instance, &count, nullptr);
  std::vector<VkPhysicalDevice> physical(count);
  if (r == VK_SUCCESS && count > 0) r = vkEnumeratePhysicalDevices(instance, &count, physical.data());
  if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
    vkDestroyInstance(instance, nullptr);
    throw Error(ErrorCode::kUnsupported,
                "no Vulkan driver found (vkEnumeratePhysicalDevices: " + result_name(r) + "): " + driver_hint());
  }
  physical.resize(count);
  if (physical.empty()) {
    vkDestroyInstance(instance, nullptr);
    throw Error(ErrorCode::kUnsupported, "no Vulkan driver found (no physical device): " + driver_hint());
  }

  auto* state = new InstanceState;
  state->instance = instance;
  state->api_version = api;
  state->physical = physical;
  for (uint32_t i = 0; i < physical.size(); ++i) state->infos.push_back(describe(physical[i], i, api));
  if (validation) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
    if (create) create(instance, &messenger_info, nullptr, &state->messenger);
  }
  g_instance = state;
  return *g_instance;
}

std::string device_list(const std::vector<DeviceInfo>& devices) {
  std::string s;
  for (const auto& d : devices) {
    if (!s.empty()) s += "; ";
    s += std::to_string(d.index) + ": " + d.name + " (" + d.type;
    if (!d.driver_info.empty()) s += ", " + d.driver_info;
    if (!d.has_compute_queue) s += ", no compute queue";
    s += ")";
  }
  return s;
}

int type_rank(const std::string& type) {
  if (type == "discrete GPU") return 0;
  if (type == "integrated GPU") return 1;
  if (type == "virtual GPU") return 2;
  if (type == "CPU") return 3;
  return 4;
}

uint32_t select(const std::string& selector, bool from_env, const std::vector<DeviceInfo>& devices) {
  std::string what = "Vulkan device selector '" + selector + "'" + (from_env ? " (from WEFT_VULKAN_DEVICE)" : "");
  if (selector.empty()) {
    int best = -1;
    for (const auto& d : devices)
      if (d.has_compute_queue && (best < 0 || type_rank(d.type) < type_rank(devices[best].type)))
        best = static_cast<int>(d.index);
    if (best < 0)
      throw Error(ErrorCode::kUnsupported, "no Vulkan device has a compute queue; devices: " + device_list(devices));
    return static_cast<uint32_t>(best);
  }
  if (std::all_of(selector.begin(), selector.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    if (selector.size() > 9 || std::stoul(selector) >= devices.size())
      throw Error(ErrorCode::kInvalidArgument, what + " is out of range: there " +
                                                   (devices.size() == 1 ? std::string("is 1 device")
                                                                        : "are " + std::to_string(devices.size()) +
                                                                              " devices") +
                                                   ": " + device_list(devices));
    return static_cast<uint32_t>(std::stoul(selector));
  }
  std::string needle = lower(selector);
  for (const auto& d : devices)
    if (lower(d.name).find(needle) != std::string::npos) return d.index;
  throw Error(ErrorCode::kInvalidArgument,
              what + " matches no device name (a decimal index or a case-insensitive substring of the "
                     "name); devices: " +
                  device_list(devices));
}

std::string cache_dir_from_env() {
  if (env_set("WEFT_CACHE_DIR")) {
    std::string dir = env("WEFT_CACHE_DIR");
    if (dir.empty() || lower(dir) == "off") return "";
    return dir;
  }
  std::string xdg = env("XDG_CACHE_HOME");
  if (!xdg.empty()) return xdg + "/weft";
  std::string home = env("HOME");
  if (!home.empty()) return home + "/.cache/weft";
  return "";
}

std::string hex4(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04x", v);
  return buf;
}

std::shared_ptr<Device> create_device(uint32_t index, const DeviceOptions& options) {
  InstanceState& inst = instance_state();
  auto d = std::make_shared<Device>();
  d->info = inst.infos.at(index);
  d->physical = inst.physical.at(index);
  vkGetPhysicalDeviceProperties(d->physical, &d->properties);
  vkGetPhysicalDeviceMemoryProperties(d->physical, &d->memory);
  d->api_version = std::min(version_no_patch(d->properties.apiVersion), inst.api_version);
  if (d->api_version < VK_API_VERSION_1_1)
    throw Error(ErrorCode::kUnsupported, "Vulkan " + d->label() + " supports Vulkan " + d->info.api_version +
                                             " only; Weft needs Vulkan 1.1 or newer");

  // The queue family: compute with timestamps, preferring a compute-only family.
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(d->physical, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(d->physical, &n, families.data());
  int best = -1, best_score = -1;
  for (uint32_t i = 0; i < n; ++i) {
    const auto& f = families[i];
    if (!(f.queueFlags & VK_QUEUE_COMPUTE_BIT) || f.queueCount == 0) continue;
    int score = (f.timestampValidBits > 0 ? 2 : 0) + ((f.queueFlags & VK_QUEUE_GRAPHICS_BIT) ? 0 : 1);
    if (score > best_score) best = static_cast<int>(i), best_score = score;
  }
  if (best < 0)
    throw Error(ErrorCode::kUnsupported, "Vulkan " + d->label() + " has no compute queue");
  d->queue_family = static_cast<uint32_t>(best);
  d->timestamp_valid_bits = families[best].timestampValidBits;
  d->timestamp_period = d->properties.limits.timestampPeriod;

  // Every core feature the device has (storage image formats, 16/8-bit storage, float16, int64...).
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan13Features f13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  if (d->api_version >= VK_API_VERSION_1_2) {
    features.pNext = &f11;
    f11.pNext = &f12;
    if (d->api_version >= VK_API_VERSION_1_3) f12.pNext = &f13;
  }
  vkGetPhysicalDeviceFeatures2(d->physical, &features);

  std::vector<const char*> extensions;
  bool has_coop_nv = false, has_exec_props = false, has_host_import = false, has_sm_nv = false, has_cores_amd = false;
  uint32_t ne = 0;
  if (vkEnumerateDeviceExtensionProperties(d->physical, nullptr, &ne, nullptr) == VK_SUCCESS) {
    std::vector<VkExtensionProperties> available(ne);
    if (vkEnumerateDeviceExtensionProperties(d->physical, nullptr, &ne, available.data()) == VK_SUCCESS) {
      for (uint32_t i = 0; i < ne; ++i) {
        if (std::strcmp(available[i].extensionName, "VK_KHR_portability_subset") == 0)
          extensions.push_back("VK_KHR_portability_subset");
        if (std::strcmp(available[i].extensionName, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME) == 0) has_coop_nv = true;
        if (std::strcmp(available[i].extensionName, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME) == 0) has_host_import = true;
        if (std::strcmp(available[i].extensionName, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME) == 0) has_sm_nv = true;
        if (std::strcmp(available[i].extensionName, VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME) == 0) has_cores_amd = true;
        if (std::strcmp(available[i].extensionName, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME) == 0)
          has_exec_props = true;
      }
    }
  }

  // What TOSA shaders need, and cooperative matrices (NV: the extension Debian's glslang compiles).
  DeviceFeatures& df = d->features;
  df.storage8 = f12.storageBuffer8BitAccess;
  df.storage16 = f11.storageBuffer16BitAccess;
  df.int8 = f12.shaderInt8;
  df.float16 = f12.shaderFloat16;
  df.int16 = features.features.shaderInt16;
  df.int64 = features.features.shaderInt64;
  df.max_shared_memory = d->properties.limits.maxComputeSharedMemorySize;
  df.max_storage_buffers = capped_storage_buffers(d->properties.limits.maxPerStageDescriptorStorageBuffers);
  df.synchronization2 = d->api_version >= VK_API_VERSION_1_3 && f13.synchronization2;
  {
    VkPhysicalDeviceSubgroupProperties sp{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    p2.pNext = &sp;
    vkGetPhysicalDeviceProperties2(d->physical, &p2);
    df.subgroup_size = sp.subgroupSize;
    const VkSubgroupFeatureFlags need = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_VOTE_BIT |
                                        VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
    df.subgroup_arithmetic = (sp.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) && (sp.supportedOperations & need) == need;
  }
  // The compute units (tile choices count waves of workgroups); property structs of supported
  // extensions may be queried without enabling them.
  if (has_sm_nv) {
    VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    p2.pNext = &sm;
    vkGetPhysicalDeviceProperties2(d->physical, &p2);
    df.compute_units = sm.shaderSMCount;
  } else if (has_cores_amd) {
    VkPhysicalDeviceShaderCorePropertiesAMD cp{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    p2.pNext = &cp;
    vkGetPhysicalDeviceProperties2(d->physical, &p2);
    df.compute_units = cp.shaderEngineCount * cp.shaderArraysPerEngineCount * cp.computeUnitsPerShaderArray;
  }
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  if (has_coop_nv && d->api_version >= VK_API_VERSION_1_3) {
    VkPhysicalDeviceFeatures2 probe{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    probe.pNext = &coop;
    vkGetPhysicalDeviceFeatures2(d->physical, &probe);
    auto props_fn = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
        vkGetInstanceProcAddr(inst.instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
    bool shape = false;
    if (coop.cooperativeMatrix && props_fn) {
      uint32_t np = 0;
      props_fn(d->physical, &np, nullptr);
      std::vector<VkCooperativeMatrixPropertiesNV> props(np, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
      if (np) props_fn(d->physical, &np, props.data());
      for (const auto& cp : props)
        shape |= cp.MSize == 16 && cp.NSize == 16 && cp.KSize == 16 && cp.AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
                 cp.BType == VK_COMPONENT_TYPE_FLOAT16_NV && cp.CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
                 cp.DType == VK_COMPONENT_TYPE_FLOAT32_NV && cp.scope == VK_SCOPE_SUBGROUP_NV;
    }
    if (shape && f12.vulkanMemoryModel) {
      df.coop_matrix_f16 = true;
      extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
      coop.cooperativeMatrixRobustBufferAccess = VK_FALSE;
      coop.pNext = features.pNext;
      features.pNext = &coop;
    }
  }

  // Compiler statistics per pipeline, asked for by WEFT_VULKAN_PIPELINE_STATS (a tuning aid).
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR exec_props{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  if (has_exec_props && std::getenv("WEFT_VULKAN_PIPELINE_STATS") != nullptr) {
    VkPhysicalDeviceFeatures2 probe{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    probe.pNext = &exec_props;
    vkGetPhysicalDeviceFeatures2(d->physical, &probe);
    if (exec_props.pipelineExecutableInfo) {
      d->pipeline_stats = true;
      extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
      exec_props.pNext = features.pNext;
      features.pNext = &exec_props;
    }
  }

  // Host memory imported as device memory (VK_EXT_external_memory_host; core VK_KHR_external_memory
  // is in Vulkan 1.1): inputs and outputs without staging copies, asked for by WEFT_VULKAN_HOST_IMPORT=1.
  // Off by default: on an H100 (driver 580) importing and releasing the pages per run cost more than
  // the staging memcpy it saves (bench/vulkan_transfer_bench: a 4 MiB round trip 1.62 ms against
  // 1.00 ms staged, 64 MiB 17.1 against 8.0 ms; docs/vulkan.md).
  if (has_host_import && d->api_version >= VK_API_VERSION_1_1 && env("WEFT_VULKAN_HOST_IMPORT") == "1") {
    VkPhysicalDeviceExternalMemoryHostPropertiesEXT hp{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    p2.pNext = &hp;
    vkGetPhysicalDeviceProperties2(d->physical, &p2);
    const long page = sysconf(_SC_PAGESIZE);
    if (hp.minImportedHostPointerAlignment > 0 && page > 0 &&
        hp.minImportedHostPointerAlignment <= static_cast<VkDeviceSize>(page)) {
      extensions.push_back(VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
      d->host_import_alignment = hp.minImportedHostPointerAlignment;
      d->host_import = true;
    }
  }

  float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = d->queue_family;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.pNext = &features;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  dci.ppEnabledExtensionNames = extensions.data();
  check(vkCreateDevice(d->physical, &dci, nullptr, &d->device), "vkCreateDevice",
        "cannot open Vulkan " + d->label() + ": ");
  vkGetDeviceQueue(d->device, d->queue_family, 0, &d->queue);
  if (d->host_import) {
    d->host_pointer_properties = reinterpret_cast<PFN_vkGetMemoryHostPointerPropertiesEXT>(
        vkGetDeviceProcAddr(d->device, "vkGetMemoryHostPointerPropertiesEXT"));
    d->host_import = d->host_pointer_properties != nullptr;
  }

  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.queueFamilyIndex = d->queue_family;
  check(vkCreateCommandPool(d->device, &pci, nullptr, &d->command_pool), "vkCreateCommandPool",
        "Vulkan " + d->label() + ": ");

  std::string dir = options.exclusive && options.cache_dir ? *options.cache_dir : cache_dir_from_env();
  if (lower(dir) == "off") dir.clear();
  if (!dir.empty())
    d->cache_file = dir + "/vulkan-pipelines-" + hex4(d->properties.vendorID) + "-" +
                    hex4(d->properties.deviceID) + "-" +
                    detail::hex(d->properties.pipelineCacheUUID, VK_UUID_SIZE) + ".bin";
  d->load_pipeline_cache();
  return d;
}

std::mutex g_registry_mutex;
// Shared devices by physical device index; never destroyed (see open_device).
std::map<uint32_t, std::shared_ptr<Device>>* g_registry = nullptr;

}  // namespace

// ---- Device ----------------------------------------------------------------------------------

Device::~Device() {
  if (lost.load()) {
    // The device may still be executing the dispatch that never finished (with lavapipe a stuck
    // shader spins forever, and vkDeviceWaitIdle / vkDestroyDevice would wait for it): leak the
    // device and everything made from it, and leave the submission thread behind.
    if (submit_thread_.joinable()) {
      {
        std::lock_guard<std::mutex> lock(submit_queue_->mutex);
        submit_queue_->stop = true;
      }
      submit_queue_->cv.notify_all();
      submit_thread_.detach();
    }
    using detail::handle_ptr;
    detail::keep_forever({handle_ptr(device), handle_ptr(queue), handle_ptr(command_pool), handle_ptr(pipeline_cache)});
    for (auto& [key, entry] : pipelines) {
      detail::keep_forever({handle_ptr(entry->pipeline), handle_ptr(entry->layout)});
      for (VkDescriptorSetLayout l : entry->set_layouts) detail::keep_forever({handle_ptr(l)});
    }
    return;
  }
  if (submit_thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(submit_queue_->mutex);
      submit_queue_->stop = true;
    }
    submit_queue_->cv.notify_all();
    submit_thread_.join();
  }
  if (!device) return;
  vkDeviceWaitIdle(device);
  save_pipeline_cache();
  for (auto& [key, entry] : pipelines) {
    vkDestroyPipeline(device, entry->pipeline, nullptr);
    vkDestroyPipelineLayout(device, entry->layout, nullptr);
    for (VkDescriptorSetLayout l : entry->set_layouts) vkDestroyDescriptorSetLayout(device, l, nullptr);
  }
  pipelines.clear();
  if (pipeline_cache) vkDestroyPipelineCache(device, pipeline_cache, nullptr);
  if (command_pool) vkDestroyCommandPool(device, command_pool, nullptr);
  vkDestroyDevice(device, nullptr);
}

void Device::mark_lost(const std::string& reason) {
  std::lock_guard<std::mutex> lock(lost_mutex);
  if (lost.load()) return;
  lost_reason = reason;
  lost.store(true);
}

void Device::check_usable() const {
  if (!lost.load()) return;
  std::lock_guard<std::mutex> lock(lost_mutex);
  throw Error(ErrorCode::kRuntime, "Vulkan " + label() + " is no longer usable: " + lost_reason);
}

uint32_t Device::find_memory_type(uint32_t bits, VkMemoryPropertyFlags required,
                                  VkMemoryPropertyFlags preferred) const {
  for (int pass = 0; pass < 2; ++pass) {
    VkMemoryPropertyFlags want = pass == 0 ? required | preferred : required;
    for (uint32_t i = 0; i < memory.memoryTypeCount; ++i)
      if ((bits & (1u << i)) && (memory.memoryTypes[i].propertyFlags & want) == want) return i;
  }
  return UINT32_MAX;
}

std::shared_ptr<detail::PipelineEntry> Device::pipeline(const std::string& key,
                                                        const std::function<detail::PipelineEntry()>& create) {
  std::shared_ptr<detail::PipelineEntry> entry;
  {
    std::lock_guard<std::mutex> lock(pipelines_mutex);
    auto it = pipelines.find(key);
    if (it != pipelines.end()) {
      pipeline_hits.fetch_add(1);
      return it->second;
    }
    entry = std::make_shared<detail::PipelineEntry>(create());
    pipelines.emplace(key, entry);
    pipelines_created.fetch_add(1);
  }
  save_pipeline_cache();
  return entry;
}

namespace {
// VkPipelineCacheHeaderVersionOne, checked before Vulkan sees the data.
std::string check_cache_header(const std::vector<char>& data, const VkPhysicalDeviceProperties& p) {
  if (data.size() < 32) return "shorter than a pipeline cache header";
  uint32_t words[4];
  std::memcpy(words, data.data(), sizeof words);
  if (words[0] < 32 || words[0] > data.size()) return "bad header size";
  if (words[1] != VK_PIPELINE_CACHE_HEADER_VERSION_ONE) return "unknown header version";
  if (words[2] != p.vendorID || words[3] != p.deviceID) return "made for another device";
  if (std::memcmp(data.data() + 16, p.pipelineCacheUUID, VK_UUID_SIZE) != 0) return "made by another driver";
  return "";
}
}  // namespace

void Device::load_pipeline_cache() {
  std::vector<char> data;
  if (cache_file.empty()) {
    cache_status = "disabled";
  } else {
    std::ifstream in(cache_file, std::ios::binary);
    if (!in) {
      cache_status = "absent";
    } else {
      data.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      std::string why = check_cache_header(data, properties);
      if (!why.empty()) {
        cache_status = "ignored: " + why;
        data.clear();
      }
    }
  }
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  ci.initialDataSize = data.size();
  ci.pInitialData = data.empty() ? nullptr : data.data();
  VkResult r = vkCreatePipelineCache(device, &ci, nullptr, &pipeline_cache);
  if (r != VK_SUCCESS && !data.empty()) {
    cache_status = "ignored: rejected by the driver (" + result_name(r) + ")";
    data.clear();
    ci.initialDataSize = 0;
    ci.pInitialData = nullptr;
    r = vkCreatePipelineCache(device, &ci, nullptr, &pipeline_cache);
  }
  check(r, "vkCreatePipelineCache", "Vulkan " + label() + ": ");
  if (!data.empty()) {
    cache_status = "loaded";
    cache_bytes_loaded = data.size();
  }
}

void Device::save_pipeline_cache() {
  if (cache_file.empty() || lost.load() || !pipeline_cache) return;
  std::lock_guard<std::mutex> lock(cache_file_mutex);
  std::vector<char> data;
  for (int attempt = 0; attempt < 4; ++attempt) {
    size_t size = 0;
    if (vkGetPipelineCacheData(device, pipeline_cache, &size, nullptr) != VK_SUCCESS) return;
    data.resize(size);
    VkResult r = vkGetPipelineCacheData(device, pipeline_cache, &size, data.data());
    if (r == VK_SUCCESS) {
      data.resize(size);
      break;
    }
    if (r != VK_INCOMPLETE) return;
    data.clear();
  }
  if (data.empty()) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path path(cache_file);
  fs::create_directories(path.parent_path(), ec);
  static std::atomic<unsigned> counter{0};
  std::string tmp = cache_file + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return;
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    out.close();
    if (!out) {
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return;
  }
  cache_saves.fetch_add(1);
}

void Device::submit_and_wait(std::vector<VkCommandBuffer> command_buffers, VkFence fence, uint32_t timeout_ms,
                             const std::string& name,
                             const std::function<void(std::chrono::steady_clock::time_point)>& while_running) {
  check_usable();
  // Short waits are spun, not slept: waking a blocked thread costs tens of microseconds each time
  // (the submission's hand-off to the submit thread, its result, the fence), against a small BERT
  // encoder's 0.3 ms of GPU time at batch 1. Up to kSpin of spinning for each, then the blocking
  // waits with the deadline; the submit thread likewise spins kSpin for the next job after each one
  // (runs repeated back to back find it awake). Not on a CPU implementation (lavapipe): its own
  // threads run the shaders on the cores a spin would take.
  const auto kSpin = std::chrono::microseconds(info.type == "CPU" ? 0 : 2000);
  {
    std::lock_guard<std::mutex> lock(submit_start_mutex_);
    if (!submit_thread_.joinable()) {
      submit_queue_ = std::make_shared<detail::SubmitQueue>();
      submit_queue_->spin = kSpin;
      submit_thread_ = std::thread([q = submit_queue_, vq = queue] {
        uint64_t taken = 0;
        for (;;) {
          std::shared_ptr<detail::SubmitJob> job;
          const auto spin_until = std::chrono::steady_clock::now() + q->spin;
          while (q->pushed.load(std::memory_order_acquire) == taken && std::chrono::steady_clock::now() < spin_until) {
          }
          {
            std::unique_lock<std::mutex> lock(q->mutex);
            q->cv.wait(lock, [&] { return q->stop || !q->jobs.empty(); });
            if (q->stop) return;
            job = q->jobs.front();
            q->jobs.pop_front();
            ++taken;
          }
          VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
          si.commandBufferCount = static_cast<uint32_t>(job->command_buffers.size());
          si.pCommandBuffers = job->command_buffers.data();
          VkResult r = vkQueueSubmit(vq, 1, &si, job->fence);
          {
            std::lock_guard<std::mutex> lock(q->mutex);
            job->result = r;
            job->done = true;
            job->submitted.store(true, std::memory_order_release);
          }
          q->cv.notify_all();
        }
      });
    }
  }
  auto job = std::make_shared<detail::SubmitJob>();
  job->command_buffers = std::move(command_buffers);
  job->fence = fence;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  auto q = submit_queue_;
  {
    std::lock_guard<std::mutex> lock(q->mutex);
    q->jobs.push_back(job);
    q->pushed.fetch_add(1, std::memory_order_release);
  }
  q->cv.notify_all();

  auto timed_out = [&]() {
    std::string what = "dispatch of '" + name + "' did not finish within " + std::to_string(timeout_ms) + " ms";
    mark_lost(what);
    throw Error(ErrorCode::kRuntime, "Vulkan " + what +
                                         ": the shader is likely stuck (infinite loop) or faulted the device; "
                                         "the device is no longer used (" +
                                         label() + ")");
  };
  auto device_lost = [&](const char* function) {
    std::string what = "it was lost during '" + name + "' (" + function + ": VK_ERROR_DEVICE_LOST)";
    mark_lost(what);
    throw Error(ErrorCode::kRuntime, "Vulkan " + label() + ": " + what +
                                         ": the shader likely faulted the device; the device is no longer used");
  };
  const auto spin_until = std::min(deadline, std::chrono::steady_clock::now() + kSpin);
  while (!job->submitted.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < spin_until) {
  }
  {
    std::unique_lock<std::mutex> lock(q->mutex);
    if (!q->cv.wait_until(lock, deadline, [&] { return job->done; })) {
      lock.unlock();
      timed_out();
    }
  }
  if (job->result == VK_ERROR_DEVICE_LOST) device_lost("vkQueueSubmit");
  check(job->result, "vkQueueSubmit", "Vulkan dispatch of '" + name + "': ");
  if (while_running) while_running(deadline);
  auto now = std::chrono::steady_clock::now();
  uint64_t remaining =
      now < deadline ? static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - now).count())
                     : 0;
  VkResult r = VK_NOT_READY;
  const auto fence_spin_until = std::min(deadline, std::chrono::steady_clock::now() + kSpin);
  while (std::chrono::steady_clock::now() < fence_spin_until) {
    r = vkGetFenceStatus(device, fence);
    if (r != VK_NOT_READY) break;
  }
  if (r == VK_NOT_READY) r = vkWaitForFences(device, 1, &fence, VK_TRUE, remaining);
  if (r == VK_TIMEOUT) timed_out();
  if (r == VK_ERROR_DEVICE_LOST) device_lost("vkWaitForFences");
  check(r, "vkWaitForFences", "Vulkan dispatch of '" + name + "': ");
}

// ---- Public functions ------------------------------------------------------------------------

std::vector<DeviceInfo> list_devices() { return instance_state().infos; }

uint32_t select_device(std::string_view selector) {
  std::vector<DeviceInfo> devices = list_devices();
  std::string sel(selector);
  bool from_env = false;
  if (sel.empty()) {
    sel = env("WEFT_VULKAN_DEVICE");
    from_env = !sel.empty();
  }
  return select(sel, from_env, devices);
}

std::shared_ptr<Device> open_device(std::string_view selector, const DeviceOptions& options) {
  std::vector<DeviceInfo> devices = list_devices();
  uint32_t index = select_device(selector);
  if (!devices[index].has_compute_queue)
    throw Error(ErrorCode::kUnsupported, "Vulkan device " + std::to_string(index) + " '" + devices[index].name +
                                             "' has no compute queue; devices: " + device_list(devices));
  if (options.exclusive) return create_device(index, options);
  std::lock_guard<std::mutex> lock(g_registry_mutex);
  if (!g_registry) g_registry = new std::map<uint32_t, std::shared_ptr<Device>>;
  auto it = g_registry->find(index);
  if (it != g_registry->end() && !it->second->lost.load()) return it->second;
  auto device = create_device(index, DeviceOptions{});
  (*g_registry)[index] = device;
  return device;
}

const DeviceFeatures& features(const Device& device) { return device.features; }

std::string DeviceFeatures::missing() const {
  std::string m;
  auto need = [&](bool have, const char* name) {
    if (!have) m += (m.empty() ? "" : ", ") + std::string(name);
  };
  need(storage8, "storageBuffer8BitAccess");
  need(storage16, "storageBuffer16BitAccess");
  need(int8, "shaderInt8");
  need(int16, "shaderInt16");
  need(int64, "shaderInt64");
  need(float16, "shaderFloat16");
  return m;
}

const DeviceInfo& info(const Device& device) { return device.info; }

DeviceStats stats(const Device& device) {
  DeviceStats s;
  s.pipelines_created = device.pipelines_created.load();
  s.pipeline_cache_hits = device.pipeline_hits.load();
  s.disk_cache_bytes_loaded = device.cache_bytes_loaded;
  s.disk_cache_saves = device.cache_saves.load();
  s.disk_cache_file = device.cache_file;
  s.disk_cache_status = device.cache_status;
  s.timestamps = device.timestamp_valid_bits > 0;
  s.lost = device.lost.load();
  s.host_import = device.host_import;
  return s;
}

size_t pipeline_cache_hits(const Device& device) { return device.pipeline_hits.load(); }

bool is_lost(const Device& device) { return device.lost.load(); }

}  // namespace weft::vk
