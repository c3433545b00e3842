// Shared between device.cpp and compute.cpp: the Device class and Vulkan helpers.
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "runtime/vulkan/vulkan.h"

namespace weft::vk::detail {

// "VK_ERROR_DEVICE_LOST", or "VkResult(<n>)" for values this table does not know.
std::string result_name(VkResult r);

// Error(kRuntime) "<context><function>: <VkResult name>".
[[noreturn]] void throw_vk(const char* function, VkResult r, const std::string& context = "");
inline void check(VkResult r, const char* function, const std::string& context = "") {
  if (r != VK_SUCCESS) throw_vk(function, r, context);
}

// Validation layer messages (WEFT_VULKAN_VALIDATION=1): the number of error messages so far, and
// the latest one.
uint64_t validation_error_count();
std::string last_validation_error();

// Lowercase hex digits of `n` bytes.
std::string hex(const uint8_t* bytes, size_t n);

// Objects of a lost device are never destroyed (the device may still run the work that uses them);
// their handles are kept here, reachable, so that leak checkers do not report them.
void keep_forever(std::initializer_list<const void*> handles);
template <typename T>
const void* handle_ptr(T h) {
  if constexpr (std::is_pointer_v<T>)
    return h;
  else
    return reinterpret_cast<const void*>(static_cast<uintptr_t>(h));
}

// A pipeline with its layouts, shared by every kernel whose key matches.
struct PipelineEntry {
  std::vector<VkDescriptorSetLayout> set_layouts;  // index = set number
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
};

// Submissions go through one thread per device (the only user of the VkQueue), so that a driver
// whose vkQueueSubmit executes the work synchronously (lavapipe) cannot block the caller past its
// timeout. The state lives apart from the Device: a thread stuck in the driver may outlive it.
struct SubmitJob {
  VkCommandBuffer command_buffer = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  VkResult result = VK_SUCCESS;
  bool done = false;
};
struct SubmitQueue {
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<std::shared_ptr<SubmitJob>> jobs;
  bool stop = false;
};

}  // namespace weft::vk::detail

namespace weft::vk {

class Device {
 public:
  Device() = default;
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  DeviceInfo info;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  uint32_t timestamp_valid_bits = 0;
  float timestamp_period = 1.0f;  // ns per tick
  uint32_t api_version = 0;       // min(instance, device)
  VkPhysicalDeviceProperties properties{};
  VkPhysicalDeviceMemoryProperties memory{};

  // The command pool (allocation and recording need it externally synchronized).
  std::mutex pool_mutex;
  VkCommandPool command_pool = VK_NULL_HANDLE;

  // Pipelines: VkPipelineCache (internally synchronized) + entries by key.
  VkPipelineCache pipeline_cache = VK_NULL_HANDLE;
  std::mutex pipelines_mutex;
  std::map<std::string, std::shared_ptr<detail::PipelineEntry>> pipelines;
  std::atomic<size_t> pipelines_created{0}, pipeline_hits{0};
  // Returns the entry of `key`, creating it with `create` (under the lock) when absent; a new
  // pipeline saves the disk cache.
  std::shared_ptr<detail::PipelineEntry> pipeline(const std::string& key,
                                                  const std::function<detail::PipelineEntry()>& create);

  // Disk cache.
  std::string cache_file;  // "" = disabled
  std::string cache_status;
  size_t cache_bytes_loaded = 0;
  std::atomic<size_t> cache_saves{0};
  std::mutex cache_file_mutex;
  void load_pipeline_cache();  // creates pipeline_cache, from the file when it is valid
  void save_pipeline_cache();  // best effort, atomic (tmp + rename)

  // Loss: after a timeout or VK_ERROR_DEVICE_LOST nothing uses the device any more.
  std::atomic<bool> lost{false};
  mutable std::mutex lost_mutex;
  std::string lost_reason;
  void mark_lost(const std::string& reason);
  void check_usable() const;  // throws Error(kRuntime) when lost

  // Submits `command_buffer` signalling `fence` (unsignalled) and waits for it. Throws
  // Error(kRuntime) on timeout (marking the device lost), device loss or submission failure.
  void submit_and_wait(VkCommandBuffer command_buffer, VkFence fence, uint32_t timeout_ms,
                       const std::string& name);

  // A memory type in `bits` with `required` flags, preferring those that also have `preferred`;
  // UINT32_MAX if none.
  uint32_t find_memory_type(uint32_t bits, VkMemoryPropertyFlags required,
                            VkMemoryPropertyFlags preferred = 0) const;

  // "device 'llvmpipe (...)'" for messages.
  std::string label() const { return "device '" + info.name + "'"; }

 private:
  std::shared_ptr<detail::SubmitQueue> submit_queue_;
  std::thread submit_thread_;
  std::mutex submit_start_mutex_;
};

}  // namespace weft::vk
