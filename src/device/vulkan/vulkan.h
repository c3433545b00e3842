// The Vulkan compute runtime that runs custom-operator shaders (include/weft/custom.h).
//
// Internal to libweft (namespace weft::vk): the Vulkan types stay out of this header, so that its
// users need no Vulkan headers. One VkInstance per process, one shared Device per physical
// device, and a ComputeKernel per shader dispatch that owns everything that dispatch needs:
//
//   auto dev = weft::vk::open_device();              // WEFT_VULKAN_DEVICE, else the best device
//   weft::vk::ComputeKernel k(dev, std::move(desc)); // pipeline, descriptors, memory, commands
//   k.run({x.data()}, {y.data()});                   // upload, dispatch, download; blocking
//
// A vk::Program runs several dispatches as one submission, their intermediates kept on the device
// (the Vulkan backend prepares one per region of adjacent shader nodes).
//
// Errors are weft::Error: kUnsupported for a missing driver, device, feature, format or limit;
// kInvalidArgument for a bad selector or a malformed dispatch; kRuntime for failures while running
// (Vulkan errors carry the function and the VkResult name, e.g. "vkAllocateMemory:
// VK_ERROR_OUT_OF_DEVICE_MEMORY").
//
// Environment:
//   WEFT_VULKAN_DEVICE      default device selector (see open_device)
//   WEFT_VULKAN_TIMEOUT_MS  how long run() waits for a dispatch (default 10000)
//   WEFT_VULKAN_VALIDATION  "1": enable VK_LAYER_KHRONOS_validation when installed; its messages
//                           go to stderr, and an error message makes the kernel creation or run()
//                           that caused it throw Error(kRuntime)
//   WEFT_CACHE_DIR          pipeline cache folder ("" or "off": no on-disk cache); default
//                           $XDG_CACHE_HOME/weft, else ~/.cache/weft
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weft/custom.h"
#include "weft/error.h"

namespace weft::vk {

struct DeviceInfo {
  uint32_t index = 0;        // position in list_devices()
  std::string name;          // "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::string type;          // "discrete GPU", "integrated GPU", "virtual GPU", "CPU", "other"
  uint32_t vendor_id = 0, device_id = 0;
  std::string driver_name, driver_info;  // "llvmpipe", "Mesa 22.3.6 (LLVM 15.0.6)" (Vulkan 1.2+)
  std::string api_version;   // "1.3.230": the device's own version
  std::string uuid;          // deviceUUID, 32 lowercase hex digits
  bool has_compute_queue = false;
  // Limits a dispatch is checked against.
  std::array<uint32_t, 3> max_workgroup_count{};
  std::array<uint32_t, 3> max_workgroup_size{};
  uint32_t max_workgroup_invocations = 0;
  uint32_t max_push_constants_size = 0;
  uint32_t max_storage_buffer_range = 0;
  uint32_t max_uniform_buffer_range = 0;
  uint32_t max_image_dimension_2d = 0;
  uint32_t max_bound_descriptor_sets = 0;
  // maxPerStageDescriptor*: what one compute shader may bind of each kind (Vulkan's minimums: 4
  // storage buffers, 12 uniform buffers, 4 storage images, 16 sampled images). The storage-buffer
  // limit is the device's or WEFT_VULKAN_MAX_STORAGE_BUFFERS where that is lower (to try a small
  // device's limit on a large one).
  uint32_t max_stage_storage_buffers = 0;
  uint32_t max_stage_uniform_buffers = 0;
  uint32_t max_stage_storage_images = 0;
  uint32_t max_stage_sampled_images = 0;
};

// Every physical device (vkEnumeratePhysicalDevices), in the loader's order. The instance (Vulkan
// 1.1+, apiVersion min(1.3, the loader's)) is created on first use, once per process, thread-safe;
// it is never destroyed. Throws Error(kUnsupported) when the loader cannot create an instance or
// finds no device ("no Vulkan driver found: install mesa-vulkan-drivers ..."); a failed attempt is
// retried on the next call.
std::vector<DeviceInfo> list_devices();

// Whether list_devices() could find a GPU, decided from the loader's driver manifests without
// loading a driver (which creating an instance does; lavapipe and its LLVM cost a CPU-only process
// about 56 MB and 40 ms). False only when every manifest names a CPU driver (lavapipe,
// SwiftShader) or a Mesa driver for kernel DRM devices on a machine without /dev/dri/renderD*; true
// for any other driver, an unreadable manifest, or a driver or device named in the environment
// (VK_DRIVER_FILES, VK_ICD_FILENAMES, VK_ADD_DRIVER_FILES, WEFT_VULKAN_DEVICE). Always true outside
// Linux. Computed once per process.
bool gpu_driver_possible();
enum class DriverKind { kSoftware, kRenderNode, kOther };
DriverKind classify_driver(std::string_view library_path);  // by the library's file name
// The rule itself, over given manifest files (tests).
bool gpu_driver_possible(const std::vector<std::string>& manifests, bool has_render_node);

struct DeviceOptions {
  // A private Device: not shared with, nor registered for, other open_device() calls; destroyed
  // with its last reference. Tests use it to isolate a device (the timeout test, the disk cache).
  bool exclusive = false;
  // Pipeline cache folder for an exclusive device, overriding WEFT_CACHE_DIR/XDG_CACHE_HOME/HOME
  // ("" or "off" disables the disk cache). Ignored (the environment decides) for shared devices.
  std::optional<std::string> cache_dir;
};

// The index into list_devices() that open_device(selector) opens, without opening it (same rules
// and errors as open_device; "" consults WEFT_VULKAN_DEVICE).
uint32_t select_device(std::string_view selector = "");

// VkDevice + one compute queue (fed by a submission thread) + command pool + VkPipelineCache +
// memory type choice. Opaque outside src/vulkan.
class Device;

// Opens a device. `selector`:
//   ""            the environment variable WEFT_VULKAN_DEVICE if set and not empty, else the first
//                 discrete GPU, else integrated GPU, else virtual GPU, else CPU (lavapipe), else
//                 any other device with a compute queue;
//   "<digits>"    an index into list_devices();
//   anything else a case-insensitive substring of the device name ("llvmpipe", "H100"); the first
//                 match wins.
// Shared devices are opened once per process, keyed by physical device, and live until the process
// ends (never destroyed: their pipeline cache is saved whenever a pipeline is created). A shared
// device that was lost (see ComputeKernel::run) is replaced by a freshly opened one.
// Errors: kInvalidArgument naming the selector (and WEFT_VULKAN_DEVICE when it came from there) and
// listing the devices there are; kUnsupported when the device has no compute queue, or no driver;
// kRuntime when vkCreateDevice fails.
std::shared_ptr<Device> open_device(std::string_view selector = "", const DeviceOptions& options = {});

// The device's description.
const DeviceInfo& info(const Device& device);

// What the device offers TOSA shaders (src/backends/vulkan): the storage and arithmetic types they
// declare, and the optional fast paths.
struct DeviceFeatures {
  bool storage8 = false, storage16 = false;  // storageBuffer8BitAccess, storageBuffer16BitAccess
  bool int8 = false, int16 = false, int64 = false, float16 = false;  // shaderInt8/16/64, shaderFloat16
  // VK_NV_cooperative_matrix enabled, with a subgroup-scope 16x16x16 fp16 x fp16 + fp32 shape.
  bool coop_matrix_f16 = false;
  uint32_t subgroup_size = 0;
  // Subgroup arithmetic and vote operations (GL_KHR_shader_subgroup_arithmetic / _vote) in compute.
  bool subgroup_arithmetic = false;
  uint32_t max_shared_memory = 0;  // maxComputeSharedMemorySize
  uint32_t max_storage_buffers = 0;  // DeviceInfo::max_stage_storage_buffers (with its cap)
  // Streaming multiprocessors / compute units, where the driver says (VK_NV_shader_sm_builtins'
  // shaderSMCount, VK_AMD_shader_core_properties' engines x arrays x units); 0: unknown.
  uint32_t compute_units = 0;
  // synchronization2 (Vulkan 1.3): events that carry a memory dependency, which the chunked
  // downloads of large outputs need (program.cpp); without it an output is copied in one piece.
  bool synchronization2 = false;
  // "" when every TOSA shader can run; else the missing features, e.g. "shaderInt64, storageBuffer8BitAccess".
  std::string missing() const;
};
const DeviceFeatures& features(const Device& device);

// Counters, for tests and diagnostics.
struct DeviceStats {
  size_t pipelines_created = 0;     // VkPipelines created (vkCreateComputePipelines calls)
  size_t pipeline_cache_hits = 0;   // kernels that reused an existing VkPipeline (in-memory cache)
  size_t disk_cache_bytes_loaded = 0;  // size of the cache file accepted at open (0: none)
  size_t disk_cache_saves = 0;      // cache files written
  std::string disk_cache_file;      // its path ("" when the disk cache is disabled)
  std::string disk_cache_status;    // "disabled", "absent", "loaded", "ignored: <why>"
  bool timestamps = false;          // the queue supports timestamp queries
  bool lost = false;                // the device is no longer used (see ComputeKernel::run)
  bool host_import = false;         // imports the caller's memory for large transfers (ProgramStats::bytes_imported)
};
DeviceStats stats(const Device& device);
// Kernels that reused an existing pipeline (stats(d).pipeline_cache_hits).
size_t pipeline_cache_hits(const Device& device);
// Whether the device was marked lost (a timeout or VK_ERROR_DEVICE_LOST); every later use throws.
bool is_lost(const Device& device);

struct DispatchDesc {
  std::string name;                 // for errors and profiling, e.g. the custom node's name
  std::vector<uint32_t> spirv;      // a compute shader module
  std::string entry_point = "main";
  // From check_contract: kind, descriptor_type, set, binding, format, tensor type, image extent.
  // Resources with the same (set, binding) are one alias: one descriptor and one device object,
  // filled from the first input among them and read back into every output among them (an
  // in-place operator binds its input and its output at the same binding). Their kind, descriptor
  // type, format and byte size must agree.
  std::vector<custom::BoundResource> resources;
  std::vector<uint8_t> push_constants;  // the whole block, bound at offset 0, stage COMPUTE
                                        // (padded with zeros to a multiple of 4 bytes)
  std::array<uint32_t, 3> groups{1, 1, 1};  // vkCmdDispatch counts
  // Specialization constants: constant_id i = spec_constants[i] (4 bytes each: int32, uint32 or
  // float bits). Part of the pipeline's identity (the in-memory cache key).
  std::vector<uint32_t> spec_constants;
  // How long run() waits for the dispatch, in ms; 0: WEFT_VULKAN_TIMEOUT_MS, else 10000.
  uint32_t timeout_ms = 0;
  // Map device-local buffers directly when a memory type is DEVICE_LOCAL + HOST_VISIBLE +
  // HOST_CACHED (lavapipe, integrated GPUs), skipping staging copies. false: always stage.
  bool map_device_memory = true;
};

// One dispatch of one shader with its resources, created once and run many times.
class ComputeKernel {
 public:
  // Creates everything once: descriptor set layouts (one per set number up to the highest used),
  // the pipeline layout with the push constant range, the pipeline (through the device's
  // VkPipelineCache and an in-memory cache keyed by SPIR-V + entry point + layout, so identical
  // kernels share one VkPipeline), descriptor pool and sets, device buffers and images (+ a sampler
  // for COMBINED_IMAGE_SAMPLER from the resource's filter/address_mode; clamp_to_border uses
  // transparent black), host-visible staging, a command buffer recorded once (uploads -> barrier
  // -> bind/push/dispatch -> barrier -> downloads) and a fence: a one-dispatch Program with a slot
  // per node input index and per node output index that the resources use.
  // Checks first: the SPIR-V module and its compute entry point (and its LocalSize against
  // maxComputeWorkGroupSize/Invocations), groups vs maxComputeWorkGroupCount, push constants vs
  // maxPushConstantsSize, buffer sizes vs maxStorageBufferRange/maxUniformBufferRange, image
  // extents, set count vs maxBoundDescriptorSets, and that each image format supports its use
  // (storage / sampled / linear filtering / transfers); errors name the kernel and the limit or
  // the device, format and feature (kUnsupported), or the resource (kInvalidArgument).
  // Output-only buffers and images are cleared to zero at every run before the dispatch.
  ComputeKernel(std::shared_ptr<Device> device, DispatchDesc desc);
  // On a lost device the kernel's Vulkan objects are deliberately leaked (the device may still be
  // executing the stuck dispatch that uses them).
  ~ComputeKernel();
  ComputeKernel(ComputeKernel&&) noexcept;
  ComputeKernel& operator=(ComputeKernel&&) noexcept;
  ComputeKernel(const ComputeKernel&) = delete;
  ComputeKernel& operator=(const ComputeKernel&) = delete;

  // Runs the dispatch once, blocking: copies the inputs in, submits one command buffer, waits for
  // its fence (the timeout above), copies the outputs out. inputs[i] / outputs[j]: host memory of
  // the node's i-th input / j-th output (BoundResource::index), each exactly tensor.byte_size()
  // bytes (may be null for zero-size tensors and for indexes no resource uses). A ComputeKernel is
  // used by one thread at a time; kernels on the same Device may run from different threads.
  // A dispatch that does not finish in time throws Error(kRuntime) "Vulkan dispatch of '<name>'
  // did not finish within N ms: ..." and marks the device lost: every later use of it (this and
  // every other kernel on it, new kernels) throws. VK_ERROR_DEVICE_LOST is handled the same way.
  void run(const std::vector<const void*>& inputs, const std::vector<void*>& outputs);

  // Time of the last dispatch alone from timestamp queries, in ms (-1 when the queue has no
  // timestamps or nothing ran yet).
  double last_gpu_ms() const;
  // Wall time of the last run(), transfers included, in ms (-1 before the first run).
  double last_total_ms() const;

  const DispatchDesc& desc() const;
  const std::shared_ptr<Device>& device() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// A region of dispatches run as one submission, created once and run many times. Its tensors are
// "slots": external inputs (uploaded at every run), external outputs (downloaded at every run) and
// internal slots (device-only buffers: a dispatch's result that later dispatches read stays on the
// device). An external output may also be read by later dispatches on the device.
// Internal slots share one device arena: two of them overlap in memory only when their lifetimes
// (first write to last read, in dispatch order) do not, placed by the memory planner's interval
// packing (core/interval_pack.h). Constant slots hold data uploaded once, at creation.
struct ProgramSlot {
  enum class Role { kInput, kOutput, kInternal, kConstant };
  Role role = Role::kInternal;
  size_t bytes = 0;  // the tensor's bytes; every resource naming the slot must have this size
  std::string name;  // for errors (e.g. the value's name)
  std::vector<uint8_t> data;  // kConstant: exactly `bytes` bytes (freed once uploaded: Program::desc() has it empty)
  // An external slot whose host tensor has another type than the device's, converted by the host
  // copy into or out of staging memory (core/half_copy.h): kFp32ToFp16, an input the caller gives as
  // fp32 and the device holds as fp16 (rounded to nearest even); kFp16ToFp32, an output the device
  // holds as fp16 and the caller gets as fp32 (exact). `bytes` is the device's size: the caller's
  // tensor has twice as many. Such a slot is never imported from the caller's memory.
  enum class HostCast { kNone, kFp32ToFp16, kFp16ToFp32 };
  HostCast host_cast = HostCast::kNone;
};

struct ProgramDispatch {
  // Checked as a ComputeKernel's (limits, formats, aliases); BoundResource::index is not used:
  // slot_of_resource[i] is the slot that desc.resources[i] reads (input) or writes (output).
  // desc.timeout_ms and desc.map_device_memory are ignored (see ProgramDesc).
  DispatchDesc desc;
  std::vector<uint32_t> slot_of_resource;
  // Output buffers that the dispatch reads nothing from are cleared to zero before it (the custom
  // operator contract); false for shaders that write every element (TOSA operators).
  bool zero_outputs = true;
  // On lavapipe, whose compiler ends a shader's loops after 65535 passes per subgroup, the shader
  // gets a loop guard (device/vulkan/loop_guard.h): a run whose loops reached the limit throws
  // Error(kRuntime) naming the kernel instead of returning cut-short results. The guard adds a flag
  // buffer in set 0 after the dispatch's bindings and clears output-only buffers (zero_outputs).
  // false for shaders whose loops stay under the limit by construction (Weft's TOSA shaders);
  // WEFT_VULKAN_LOOP_GUARD=off turns it off for every dispatch.
  bool guard_loops = true;
};

struct ProgramDesc {
  std::string name;  // for errors and the timeout message
  std::vector<ProgramSlot> slots;
  std::vector<ProgramDispatch> dispatches;  // in execution order
  uint32_t timeout_ms = 0;         // for the whole submission; 0: WEFT_VULKAN_TIMEOUT_MS, else default_timeout_ms
  uint32_t default_timeout_ms = 10000;
  bool map_device_memory = true;   // external slots: map device memory directly when possible
};

// Per run, for tests and diagnostics.
struct ProgramStats {
  size_t bytes_uploaded = 0;    // host -> device bytes of the last run (external inputs)
  size_t bytes_downloaded = 0;  // device -> host bytes of the last run (external outputs)
  size_t bytes_imported = 0;    // of those, moved straight from / to the caller's memory, imported as
                                // device memory (VK_EXT_external_memory_host), without a staging copy
  size_t barriers = 0;          // vkCmdPipelineBarrier calls recorded
  size_t images = 0;            // image objects (one per image resource of each dispatch)
  size_t runs = 0;
  size_t arena_bytes = 0;       // the internal slots' arena
  size_t internal_bytes = 0;    // sum of the internal slots' sizes (what separate buffers would take)
  size_t constant_bytes = 0;    // uploaded once at creation
};

class Program {
 public:
  // Validates every dispatch as ComputeKernel does, then creates one device buffer per slot (internal
  // slots device-only; external ones mapped directly or staged), an image per image resource of each
  // dispatch (filled from / copied back to its slot's buffer inside the command buffer), shared
  // pipelines, descriptor sets and ONE command buffer: uploads and zero-filling of output-only slots,
  // then each dispatch (a pipeline barrier before it only when it touches a slot written earlier),
  // then downloads. Errors as ComputeKernel's; kInvalidArgument for a malformed slot mapping (a slot
  // read before anything writes it, an external input written, an output never written, a size
  // mismatch).
  Program(std::shared_ptr<Device> device, ProgramDesc desc);
  ~Program();  // on a lost device, leaks its objects as ComputeKernel does
  Program(Program&&) noexcept;
  Program& operator=(Program&&) noexcept;
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  // inputs[i]: the i-th external-input slot (in slot order), outputs[j]: the j-th external-output
  // slot; each exactly its bytes (null only for zero bytes). Blocking; one thread at a time; timeout
  // and device loss as ComputeKernel::run. `timestamps`: a timestamp after every dispatch, read back
  // for last_gpu_ms / last_dispatch_ms (off: those are -1 / empty for this run, and the run is a
  // little faster: no per-dispatch query writes, no readback).
  void run(const std::vector<const void*>& inputs, const std::vector<void*>& outputs, bool timestamps = true);

  double last_gpu_ms() const;    // first dispatch to last, from timestamps (-1: none)
  // Per dispatch of the last run, from timestamps: the time from the end of the previous dispatch (or
  // the start of the first) to its end, in ms; empty when the queue has no timestamps.
  std::vector<double> last_dispatch_ms() const;
  double last_total_ms() const;  // wall time of the last run() (-1 before the first)
  ProgramStats stats() const;
  const ProgramDesc& desc() const;
  const std::shared_ptr<Device>& device() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::vk
