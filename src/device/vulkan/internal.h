// Shared between device.cpp, compute.cpp and program.cpp: the Device class and Vulkan helpers
// (dispatch validation, pipelines, buffers, images, descriptors, barriers), defined in compute.cpp.
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <chrono>
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

#include "device/vulkan/vulkan.h"

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
  std::vector<VkCommandBuffer> command_buffers;
  VkFence fence = VK_NULL_HANDLE;
  VkResult result = VK_SUCCESS;
  bool done = false;                  // under SubmitQueue::mutex
  std::atomic<bool> submitted{false};  // set with `done`, read without the lock (the caller's spin)
};
struct SubmitQueue {
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<std::shared_ptr<SubmitJob>> jobs;
  bool stop = false;
  // Jobs pushed so far (written under `mutex`, read without it by the submit thread's spin) and
  // how long that thread spins for the next job before it sleeps on `cv`.
  std::atomic<uint64_t> pushed{0};
  std::chrono::microseconds spin{0};
};

// One device object: every resource with the same (set, binding).
struct Backing {
  uint32_t set = 0, binding = 0;
  custom::ResourceKind kind = custom::ResourceKind::kBuffer;
  VkDescriptorType type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  VkFormat format = VK_FORMAT_UNDEFINED;
  const char* format_name = "";
  size_t bytes = 0;      // the tensor's bytes (host side)
  VkDeviceSize size = 4;  // the buffer's size: bytes rounded up to 4, at least 4
  int input = -1;        // the input uploaded into it
  std::vector<uint32_t> outputs;  // the outputs read back from it
  std::string what;      // "input 0 (set 0, binding 1)"
  uint32_t width = 0, height = 0;
  std::string filter, address_mode;

  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;  // where the data starts in `buffer` (slots of a Program's arena)
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void* mapped = nullptr;  // the device buffer itself, when mapped directly
  bool coherent = true;
  VkImage image = VK_NULL_HANDLE;
  VkImageView view = VK_NULL_HANDLE;
  VkSampler sampler = VK_NULL_HANDLE;
  VkBuffer staging = VK_NULL_HANDLE;
  VkDeviceMemory staging_memory = VK_NULL_HANDLE;
  void* staging_mapped = nullptr;
  bool staging_coherent = true;

  bool is_image() const { return kind == custom::ResourceKind::kStorageImage || kind == custom::ResourceKind::kSampledImage; }
  bool is_output() const { return !outputs.empty(); }
  bool is_input() const { return input >= 0; }
  // Host memory holding the data: the mapped device buffer, or the staging buffer.
  uint8_t* host() const { return static_cast<uint8_t*>(mapped ? mapped : staging_mapped); }
  VkDeviceMemory host_memory() const { return mapped ? memory : staging_memory; }
  bool host_coherent() const { return mapped ? coherent : staging_coherent; }
};

// WEFT_VULKAN_TIMEOUT_MS, else `fallback`.
uint32_t env_timeout_ms(uint32_t fallback = 10000);
VkFilter filter_of(const std::string& s, const std::string& what);
VkSamplerAddressMode address_of(const std::string& s, const std::string& what);
VkImageLayout shader_layout(const Backing& b);  // SHADER_READ_ONLY_OPTIMAL (sampled) or GENERAL

// Error(kRuntime) when the validation layer reported an error since `before`.
void check_validation(uint64_t before, const char* doing, const std::string& what);

// Checks one dispatch against its module, the contract's resource kinds and the device's limits,
// and groups its resources into backings (one per (set, binding)); `push` gets the padded block.
void validate_dispatch(const Device& dev, const DispatchDesc& desc, std::vector<uint8_t>& push,
                       std::vector<Backing>& backings);
// The (shared) pipeline of a validated dispatch.
std::shared_ptr<PipelineEntry> dispatch_pipeline(Device& dev, const DispatchDesc& desc,
                                                 const std::vector<Backing>& backings,
                                                 const std::vector<uint8_t>& push);
VkDeviceMemory allocate_memory(Device& dev, const VkMemoryRequirements& req, uint32_t type, const std::string& where);
// b.buffer + b.memory of b.size bytes; mapped directly (b.mapped, b.coherent) when `map_direct`
// and a DEVICE_LOCAL + HOST_VISIBLE + HOST_CACHED type exists. Returns whether it needs staging.
bool create_buffer(Device& dev, Backing& b, VkBufferUsageFlags usage, bool map_direct, const std::string& where);
// b.image + b.memory + b.view (+ b.sampler for sampled images); `transfer_src`: copied back.
void create_image(Device& dev, Backing& b, bool transfer_src, const std::string& where);
// b.staging (+ memory, mapped) of b.size bytes, preferring HOST_CACHED memory (uploads and readbacks).
void create_staging(Device& dev, Backing& b, const std::string& where);
// A descriptor pool and sets for `pipeline`, written with the backings' buffers / images.
void create_descriptor_sets(Device& dev, const PipelineEntry& pipeline, const std::vector<Backing>& backings,
                            VkDescriptorPool& pool, std::vector<VkDescriptorSet>& sets, const std::string& what);
VkImageMemoryBarrier image_barrier(VkImage image, VkImageLayout from, VkImageLayout to, VkAccessFlags src,
                                   VkAccessFlags dst);
VkBufferImageCopy image_copy_region(const Backing& b);  // the whole image, tightly packed
// ms between the two timestamps of `pool`, or -1.
double elapsed_ms(const Device& dev, VkQueryPool pool);
// Per dispatch: ms between consecutive timestamps 0..n of `pool` (n = `count` dispatches); empty on failure.
std::vector<double> interval_ms(const Device& dev, VkQueryPool pool, uint32_t count);

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
  DeviceFeatures features;
  // WEFT_VULKAN_PIPELINE_STATS set and VK_KHR_pipeline_executable_properties enabled: each new
  // pipeline's compiler statistics (registers, spills, shared memory, ...) go to stderr.
  bool pipeline_stats = false;
  // VK_EXT_external_memory_host enabled (WEFT_VULKAN_HOST_IMPORT=1 and the device has it): large external inputs
  // and outputs of a staged Program move straight between the caller's memory and the device
  // (Program::Impl::run), without the staging copy. `host_import_alignment`: the extension's
  // minImportedHostPointerAlignment (used only when it is at most the page size).
  bool host_import = false;
  VkDeviceSize host_import_alignment = 0;
  PFN_vkGetMemoryHostPointerPropertiesEXT host_pointer_properties = nullptr;

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

  // Submits `command_buffers` (in order, one submission) signalling `fence` (unsignalled) and waits
  // for it. Throws Error(kRuntime) on timeout (marking the device lost), device loss or submission
  // failure. `while_running`, if given, is called on this thread once the work is submitted and
  // before the fence is waited for, with the run's deadline (host work that overlaps the GPU's).
  void submit_and_wait(std::vector<VkCommandBuffer> command_buffers, VkFence fence, uint32_t timeout_ms,
                       const std::string& name,
                       const std::function<void(std::chrono::steady_clock::time_point)>& while_running = {});
  void submit_and_wait(VkCommandBuffer command_buffer, VkFence fence, uint32_t timeout_ms, const std::string& name) {
    submit_and_wait(std::vector<VkCommandBuffer>{command_buffer}, fence, timeout_ms, name);
  }

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
