// Program: a region of shader dispatches recorded into one command buffer, intermediates on the device.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "core/half_copy.h"
#include "core/interval_pack.h"
#include "device/vulkan/internal.h"
#include "device/vulkan/loop_guard.h"

namespace weft::vk {

using custom::ResourceKind;
using detail::Backing;
using detail::check;

namespace {

using Role = ProgramSlot::Role;

// Bytes of the caller's tensor per byte of a slot.
size_t host_scale(ProgramSlot::HostCast c) { return c == ProgramSlot::HostCast::kNone ? 1 : 2; }

// Slot bytes [begin, end) from the caller's tensor `host` into the slot's staging memory `dev`,
// converted as the slot's HostCast says (begin and end even where it converts).
void copy_in(ProgramSlot::HostCast cast, uint8_t* dev, const uint8_t* host, size_t begin, size_t end) {
  if (cast == ProgramSlot::HostCast::kFp32ToFp16)
    fp32_to_fp16_array(reinterpret_cast<const float*>(host + 2 * begin), reinterpret_cast<uint16_t*>(dev + begin),
                       (end - begin) / 2);
  else
    std::memcpy(dev + begin, host + begin, end - begin);
}

// Slot bytes [begin, end) from staging memory `dev` into the caller's tensor `host`.
void copy_out(ProgramSlot::HostCast cast, uint8_t* host, const uint8_t* dev, size_t begin, size_t end) {
  if (cast == ProgramSlot::HostCast::kFp16ToFp32)
    fp16_to_fp32_array(reinterpret_cast<const uint16_t*>(dev + begin), reinterpret_cast<float*>(host + 2 * begin),
                       (end - begin) / 2);
  else
    std::memcpy(host + begin, dev + begin, end - begin);
}

// A host copy of a slot's `bytes` into or out of staging memory (`copy(begin, end)` moves a range
// of them). One thread copies about 8-10 GB/s, so a large input or output (ResNet-50's batch of 32
// images: 19 MB, about 2 ms; BERT's batch-32 output: 4 MB) is split over several threads, up to 8
// and at least 1 MB each (counted on the caller's side, which a conversion makes the larger);
// small copies stay on the calling thread.
void staging_copy(size_t bytes, size_t scale, const std::function<void(size_t, size_t)>& copy) {
  constexpr size_t kPerThread = size_t{1} << 20;
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const size_t threads = std::min<size_t>({8, hw, bytes * scale / kPerThread});
  if (threads <= 1) {
    copy(0, bytes);
    return;
  }
  const size_t chunk = (bytes / threads + 63) / 64 * 64;
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (size_t t = 1; t < threads; ++t) {
    const size_t begin = std::min(bytes, t * chunk), end = std::min(bytes, begin + chunk);
    if (begin < end) pool.emplace_back([=, &copy] { copy(begin, end); });
  }
  copy(0, std::min(bytes, chunk));
  for (std::thread& th : pool) th.join();
}

// Outputs of kChunkedBytes and more are downloaded in chunks of at least kMinChunk (at most
// kMaxChunks of them) that the host copies out as they arrive, on up to kChunkThreads threads (the
// caller's included). On an H100 with BERT's 4 MB batch-32 output, the copy after the fence took
// 0.22 ms on four threads (0.31-0.38 on one), after a download of about 0.1 ms.
constexpr size_t kChunkedBytes = size_t{2} << 20;
constexpr size_t kMinChunk = size_t{512} << 10;
constexpr size_t kMaxChunks = 16;
constexpr unsigned kChunkThreads = 4;

// One dispatch: its validated backings (buffers point at slot buffers; images are its own) and
// which slots they read and write.
struct Step {
  std::vector<uint8_t> push;
  std::vector<Backing> backings;
  std::vector<int> in_slot;                    // per backing: the slot it is filled from (-1: none)
  std::vector<std::vector<uint32_t>> out_slots;  // per backing: the slots it is read back into
  std::vector<int> bound_slot;                 // per backing (buffers): the slot buffer bound
  std::shared_ptr<detail::PipelineEntry> pipeline;
  VkDescriptorPool descriptor_pool = VK_NULL_HANDLE;
  std::vector<VkDescriptorSet> sets;
};

// Host-side memory of a slot (Backing's buffer/staging fields).
struct SlotMemory {
  Backing b;
  bool staged = false;
  bool owned = true;        // false: a range of the program's arena
  int first = -1, last = -1;  // dispatches that first and last touch it
};

// A byte range of a device buffer, for hazard tracking (arena slots share one buffer).
struct Range {
  VkBuffer buffer;
  VkDeviceSize begin, end;
  bool overlaps(const Range& o) const { return buffer == o.buffer && begin < o.end && o.begin < end; }
};

// Host memory of the caller's imported as a transfer buffer for one run (VK_EXT_external_memory_host):
// the whole pages around [ptr, ptr + bytes) (the import's alignment is at most the page size, so they
// are the caller's mapped pages); the data starts at `offset` in `buffer`. Freed with the object.
struct HostImport {
  Device* dev = nullptr;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;
  HostImport() = default;
  HostImport(const HostImport&) = delete;
  HostImport& operator=(const HostImport&) = delete;
  HostImport(HostImport&& o) noexcept { *this = std::move(o); }
  HostImport& operator=(HostImport&& o) noexcept {
    std::swap(dev, o.dev), std::swap(buffer, o.buffer), std::swap(memory, o.memory), std::swap(offset, o.offset);
    return *this;
  }
  ~HostImport() {
    if (!dev) return;
    if (dev->lost.load()) {  // the device may still be using it
      detail::keep_forever({detail::handle_ptr(buffer), detail::handle_ptr(memory)});
      return;
    }
    if (buffer) vkDestroyBuffer(dev->device, buffer, nullptr);
    if (memory) vkFreeMemory(dev->device, memory, nullptr);
  }
};

// Large transfers only: below this the import could not pay even where it is cheap (on the H100 it
// did not pay at any size: docs/vulkan.md, hence WEFT_VULKAN_HOST_IMPORT=1 to ask for it).
constexpr size_t kHostImportMin = size_t{1} << 20;

// `ptr`'s pages as a transfer buffer, or an empty HostImport when the device cannot import them
// (the caller then stages the copy): no extension, memory the driver refuses (a read-only file
// mapping, say) or no host-coherent memory type for it.
HostImport import_host(Device& dev, const void* ptr, size_t bytes) {
  HostImport h;
  if (!dev.host_import || bytes < kHostImportMin || !ptr) return h;
  const uintptr_t a = static_cast<uintptr_t>(dev.host_import_alignment);
  const uintptr_t begin = reinterpret_cast<uintptr_t>(ptr) / a * a;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(ptr) + bytes + a - 1) / a * a;
  void* base = reinterpret_cast<void*>(begin);
  VkMemoryHostPointerPropertiesEXT props{VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
  if (dev.host_pointer_properties(dev.device, VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, base, &props) !=
      VK_SUCCESS)
    return h;
  VkExternalMemoryBufferCreateInfo ext{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO};
  ext.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
  VkBufferCreateInfo ci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  ci.pNext = &ext;
  ci.size = end - begin;
  ci.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  ci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  h.dev = &dev;
  if (vkCreateBuffer(dev.device, &ci, nullptr, &h.buffer) != VK_SUCCESS) {
    h.buffer = VK_NULL_HANDLE;
    return HostImport{};
  }
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(dev.device, h.buffer, &req);
  const uint32_t type = dev.find_memory_type(req.memoryTypeBits & props.memoryTypeBits,
                                             VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
  if (type == UINT32_MAX || req.size > ci.size) return HostImport{};
  VkImportMemoryHostPointerInfoEXT import{VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT};
  import.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
  import.pHostPointer = base;
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.pNext = &import;
  ai.allocationSize = ci.size;
  ai.memoryTypeIndex = type;
  if (vkAllocateMemory(dev.device, &ai, nullptr, &h.memory) != VK_SUCCESS) {
    h.memory = VK_NULL_HANDLE;
    return HostImport{};
  }
  if (vkBindBufferMemory(dev.device, h.buffer, h.memory, 0) != VK_SUCCESS) return HostImport{};
  h.offset = reinterpret_cast<uintptr_t>(ptr) - begin;
  return h;
}

// A primary command buffer from the device's pool; the caller holds dev.pool_mutex. `p` prefixes
// the error.
VkCommandBuffer allocate_primary(Device& dev, const std::string& p) {
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = dev.command_pool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  check(vkAllocateCommandBuffers(dev.device, &ai, &cb), "vkAllocateCommandBuffers", p + ": ");
  return cb;
}

}  // namespace

struct Program::Impl {
  std::shared_ptr<Device> device;
  ProgramDesc desc;
  uint32_t timeout_ms = 10000;
  std::vector<SlotMemory> slots;
  std::vector<uint32_t> input_slots, output_slots;  // external slots in order
  // Loop guards (lavapipe): slots from `first_guard_slot` on hold one flag each, written by
  // guard_kernel[k]'s dispatch; they are not outputs of the caller's.
  size_t first_guard_slot = SIZE_MAX;
  std::vector<uint32_t> guard_slots;
  std::vector<std::string> guard_kernels;
  std::vector<Step> steps;
  // Two recordings of the same work: with a timestamp after every dispatch (the profile's GPU times)
  // and without (a small BERT encoder's batch-1 run took 0.60 ms with them, 0.51 without, on an
  // H200). Each is recorded on its first use.
  VkCommandBuffer command_buffer = VK_NULL_HANDLE;  // timed
  VkCommandBuffer plain_buffer = VK_NULL_HANDLE;    // untimed
  // The transfers between staging memory and the staged external slots, submitted before and after
  // the dispatches (recorded on first use). A run that imports the caller's memory records its own.
  VkCommandBuffer stage_in = VK_NULL_HANDLE, stage_out = VK_NULL_HANDLE;
  // A large staged output (kChunkedBytes and more, coherent staging memory) is downloaded by
  // stage_out in chunks, each followed by an event: the host copies a chunk out of staging memory
  // as soon as it has arrived, on several threads, while the GPU copies the next ones
  // (copy_chunks). Filled when stage_out is recorded.
  struct OutChunk {
    size_t output = 0;  // index into output_slots
    size_t begin = 0, end = 0;
    VkEvent event = VK_NULL_HANDLE;
  };
  std::vector<OutChunk> out_chunks;
  std::vector<bool> chunked_output;  // per output_slots entry
  VkFence fence = VK_NULL_HANDLE;
  VkQueryPool query_pool = VK_NULL_HANDLE;
  VkBuffer arena = VK_NULL_HANDLE;
  VkDeviceMemory arena_memory = VK_NULL_HANDLE;
  double gpu_ms = -1, total_ms = -1;
  std::vector<double> dispatch_ms;
  ProgramStats stats;
  std::mutex run_mutex;

  ~Impl();
  std::string what() const { return "program '" + desc.name + "'"; }
  void add_loop_guards();
  void map_slots();
  void create_slots();
  void upload_constants();
  void record(bool timed);
  // Copies into the staged input slots (`in`) or out of the staged output slots, from / to their
  // staging buffers or, where `imports` has one for the slot's index, the caller's imported memory.
  void record_transfers(VkCommandBuffer cb, bool in, const std::vector<HostImport>* imports);
  void run(const std::vector<const void*>& inputs, const std::vector<void*>& outputs, bool timed);
  // While stage_out runs: copies each chunk of out_chunks into `outputs` once its event is set,
  // marking it in `copied`; a chunk not seen before `deadline` is left (run copies it after the fence).
  void copy_chunks(const std::vector<void*>& outputs, std::vector<char>& copied,
                   std::chrono::steady_clock::time_point deadline);
};

Program::Impl::~Impl() {
  if (!device || !device->device) return;
  if (device->lost.load()) {
    using detail::handle_ptr;
    detail::keep_forever({handle_ptr(command_buffer), handle_ptr(plain_buffer), handle_ptr(stage_in), handle_ptr(stage_out),
                          handle_ptr(fence), handle_ptr(query_pool), handle_ptr(arena), handle_ptr(arena_memory)});
    for (const OutChunk& c : out_chunks) detail::keep_forever({handle_ptr(c.event)});
    for (const Step& s : steps) {
      detail::keep_forever({handle_ptr(s.descriptor_pool)});
      for (const Backing& b : s.backings)
        if (b.is_image())
          detail::keep_forever({handle_ptr(b.sampler), handle_ptr(b.view), handle_ptr(b.image), handle_ptr(b.memory)});
    }
    for (const SlotMemory& m : slots)
      if (m.owned)
        detail::keep_forever({handle_ptr(m.b.buffer), handle_ptr(m.b.memory), handle_ptr(m.b.staging),
                            handle_ptr(m.b.staging_memory)});
    return;
  }
  VkDevice d = device->device;
  for (VkCommandBuffer* cb : {&command_buffer, &plain_buffer, &stage_in, &stage_out}) {
    if (!*cb) continue;
    std::lock_guard<std::mutex> lock(device->pool_mutex);
    vkFreeCommandBuffers(d, device->command_pool, 1, cb);
  }
  if (fence) vkDestroyFence(d, fence, nullptr);
  for (const OutChunk& c : out_chunks)
    if (c.event) vkDestroyEvent(d, c.event, nullptr);
  if (query_pool) vkDestroyQueryPool(d, query_pool, nullptr);
  for (Step& s : steps) {
    if (s.descriptor_pool) vkDestroyDescriptorPool(d, s.descriptor_pool, nullptr);
    for (Backing& b : s.backings) {
      if (!b.is_image()) continue;  // buffers belong to the slots
      if (b.sampler) vkDestroySampler(d, b.sampler, nullptr);
      if (b.view) vkDestroyImageView(d, b.view, nullptr);
      if (b.image) vkDestroyImage(d, b.image, nullptr);
      if (b.memory) vkFreeMemory(d, b.memory, nullptr);
    }
  }
  if (arena) vkDestroyBuffer(d, arena, nullptr);
  if (arena_memory) vkFreeMemory(d, arena_memory, nullptr);
  for (SlotMemory& m : slots) {
    if (!m.owned) continue;
    if (m.b.buffer) vkDestroyBuffer(d, m.b.buffer, nullptr);
    if (m.b.memory) vkFreeMemory(d, m.b.memory, nullptr);
    if (m.b.staging) vkDestroyBuffer(d, m.b.staging, nullptr);
    if (m.b.staging_memory) vkFreeMemory(d, m.b.staging_memory, nullptr);
  }
}

// Validates each dispatch and ties its backings to slots.
// On llvmpipe, every dispatch that asks for it and has loops gets the loop guard (loop_guard.h): its
// shader rewritten, and a 4-byte output slot for its flag bound after its own bindings in set 0.
void Program::Impl::add_loop_guards() {
  const DeviceInfo& info = device->info;
  if (info.driver_name != "llvmpipe") return;
  if (const char* e = std::getenv("WEFT_VULKAN_LOOP_GUARD"); e && std::string_view(e) == "off") return;
  static const custom::FormatInfo* r32ui = custom::find_format("VK_FORMAT_R32_UINT");
  for (ProgramDispatch& pd : desc.dispatches) {
    if (!pd.guard_loops || !detail::has_loops(pd.desc.spirv)) continue;
    uint32_t min_binding = 0;
    for (const custom::BoundResource& r : pd.desc.resources)
      if (r.set == 0) min_binding = std::max(min_binding, r.binding + 1);
    std::optional<detail::GuardedShader> g = detail::add_loop_guard(pd.desc.spirv, pd.desc.entry_point, info.max_workgroup_invocations, min_binding);
    if (!g) continue;  // left to validate_dispatch to report
    if (first_guard_slot == SIZE_MAX) first_guard_slot = desc.slots.size();
    pd.desc.spirv = std::move(g->spirv);
    custom::BoundResource flag;
    flag.output = true;
    flag.kind = ResourceKind::kBuffer;
    flag.descriptor_type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    flag.set = g->set;
    flag.binding = g->binding;
    flag.format = r32ui;
    flag.tensor = TensorType{DType::kInt32, {1}};
    pd.desc.resources.push_back(flag);
    pd.slot_of_resource.push_back(static_cast<uint32_t>(desc.slots.size()));
    pd.zero_outputs = true;  // the flag starts at 0 on every run
    guard_slots.push_back(static_cast<uint32_t>(desc.slots.size()));
    guard_kernels.push_back(pd.desc.name);
    desc.slots.push_back({Role::kOutput, 4, "loop guard of kernel '" + pd.desc.name + "'", {}});
  }
}

void Program::Impl::map_slots() {
  const std::string p = what();
  slots.resize(desc.slots.size());
  for (size_t s = 0; s < desc.slots.size(); ++s) {
    const ProgramSlot& ps = desc.slots[s];
    slots[s].b.bytes = ps.bytes;
    slots[s].b.size = std::max<VkDeviceSize>(4, (ps.bytes + 3) / 4 * 4);
    slots[s].b.what = "slot " + std::to_string(s) + (ps.name.empty() ? "" : " (" + ps.name + ")");
    if (ps.role == Role::kInput) input_slots.push_back(static_cast<uint32_t>(s));
    if (ps.role == Role::kOutput && s < first_guard_slot) output_slots.push_back(static_cast<uint32_t>(s));
    if ((ps.host_cast == ProgramSlot::HostCast::kFp32ToFp16 && ps.role != Role::kInput) ||
        (ps.host_cast == ProgramSlot::HostCast::kFp16ToFp32 && ps.role != Role::kOutput) ||
        (ps.host_cast != ProgramSlot::HostCast::kNone && ps.bytes % 2 != 0))
      throw Error(ErrorCode::kInvalidArgument, p + ": " + slots[s].b.what + " converts between fp32 and fp16 " +
                                                   "on the host but is not an external input of fp32 -> fp16 or an " +
                                                   "external output of fp16 -> fp32 (of an even byte count)");
    if (ps.role == Role::kConstant && ps.data.size() != ps.bytes)
      throw Error(ErrorCode::kInvalidArgument, p + ": constant " + slots[s].b.what + " has " +
                                                   std::to_string(ps.data.size()) + " bytes of data for " +
                                                   std::to_string(ps.bytes));
  }
  std::vector<bool> written(slots.size(), false);
  for (size_t s = 0; s < slots.size(); ++s)
    written[s] = desc.slots[s].role == Role::kInput || desc.slots[s].role == Role::kConstant;
  steps.resize(desc.dispatches.size());
  for (size_t i = 0; i < desc.dispatches.size(); ++i) {
    const ProgramDispatch& pd = desc.dispatches[i];
    Step& st = steps[i];
    const std::string k = p + ", kernel '" + pd.desc.name + "'";
    if (pd.slot_of_resource.size() != pd.desc.resources.size())
      throw Error(ErrorCode::kInvalidArgument, k + ": " + std::to_string(pd.slot_of_resource.size()) +
                                                   " slots for " + std::to_string(pd.desc.resources.size()) +
                                                   " resources");
    detail::validate_dispatch(*device, pd.desc, st.push, st.backings);
    st.in_slot.assign(st.backings.size(), -1);
    st.out_slots.assign(st.backings.size(), {});
    st.bound_slot.assign(st.backings.size(), -1);
    for (size_t r = 0; r < pd.desc.resources.size(); ++r) {
      const custom::BoundResource& res = pd.desc.resources[r];
      uint32_t slot = pd.slot_of_resource[r];
      if (slot >= slots.size())
        throw Error(ErrorCode::kInvalidArgument, k + ": resource " + std::to_string(r) + " names slot " +
                                                     std::to_string(slot) + " of " + std::to_string(slots.size()));
      if (res.tensor.byte_size() != desc.slots[slot].bytes)
        throw Error(ErrorCode::kInvalidArgument, k + ": resource " + std::to_string(r) + " has " +
                                                     std::to_string(res.tensor.byte_size()) + " bytes, " +
                                                     slots[slot].b.what + " " +
                                                     std::to_string(desc.slots[slot].bytes));
      size_t bi = 0;
      while (bi < st.backings.size() && !(st.backings[bi].set == res.set && st.backings[bi].binding == res.binding)) ++bi;
      SlotMemory& sm = slots[slot];
      if (sm.first < 0) sm.first = static_cast<int>(i);
      sm.last = static_cast<int>(i);
      if (res.output) {
        auto& outs = st.out_slots[bi];
        if (std::find(outs.begin(), outs.end(), slot) == outs.end()) outs.push_back(slot);
      } else if (st.in_slot[bi] < 0) {
        st.in_slot[bi] = static_cast<int>(slot);
      }
    }
    for (size_t bi = 0; bi < st.backings.size(); ++bi) {
      if (st.in_slot[bi] >= 0 && !written[st.in_slot[bi]])
        throw Error(ErrorCode::kInvalidArgument, k + ": " + st.backings[bi].what + " reads " +
                                                     slots[st.in_slot[bi]].b.what + " before anything writes it");
      if (!st.backings[bi].is_image())
        st.bound_slot[bi] = st.out_slots[bi].empty() ? st.in_slot[bi] : static_cast<int>(st.out_slots[bi][0]);
    }
    for (size_t bi = 0; bi < st.backings.size(); ++bi)
      for (uint32_t s : st.out_slots[bi]) {
        if (desc.slots[s].role == Role::kInput || desc.slots[s].role == Role::kConstant)
          throw Error(ErrorCode::kInvalidArgument,
                      k + ": " + st.backings[bi].what + " writes " +
                          (desc.slots[s].role == Role::kInput ? "external input " : "constant ") + slots[s].b.what);
        written[s] = true;
      }
  }
  for (uint32_t s : output_slots)
    if (!written[s]) throw Error(ErrorCode::kInvalidArgument, p + ": nothing writes external output " + slots[s].b.what);
}

void Program::Impl::create_slots() {
  const std::string p = what();
  Device& dev = *device;
  const VkBufferUsageFlags usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT |
                                   VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  // Internal slots: ranges of one arena, packed by lifetime (a slot nothing touches gets none).
  std::vector<Interval> intervals;
  std::vector<uint32_t> internal;
  for (size_t s = 0; s < slots.size(); ++s)
    if (desc.slots[s].role == Role::kInternal && slots[s].first >= 0) {
      internal.push_back(static_cast<uint32_t>(s));
      intervals.push_back({static_cast<size_t>(slots[s].b.size), slots[s].first, slots[s].last});
      stats.internal_bytes += slots[s].b.size;
    }
  const VkPhysicalDeviceLimits& lim = dev.properties.limits;
  const size_t align = std::max<size_t>({64, static_cast<size_t>(lim.minStorageBufferOffsetAlignment),
                                         static_cast<size_t>(lim.minUniformBufferOffsetAlignment)});
  size_t arena_size = 0;
  std::vector<size_t> offsets = pack_intervals(intervals, align, &arena_size);
  stats.arena_bytes = arena_size;
  if (arena_size > 0) {
    Backing a;
    a.size = arena_size;
    detail::create_buffer(dev, a, usage, false, p + ", arena of " + std::to_string(arena_size) + " bytes");
    arena = a.buffer;
    arena_memory = a.memory;
  }
  for (size_t k = 0; k < internal.size(); ++k) {
    SlotMemory& m = slots[internal[k]];
    m.owned = false;
    m.b.buffer = arena;
    m.b.offset = offsets[k];
  }
  for (size_t s = 0; s < slots.size(); ++s) {
    SlotMemory& m = slots[s];
    Role role = desc.slots[s].role;
    if (role == Role::kInternal) continue;
    const std::string where = p + ", " + m.b.what;
    const bool map = role == Role::kConstant || desc.map_device_memory;
    m.staged = detail::create_buffer(dev, m.b, usage, map, where);
    if (m.staged) detail::create_staging(dev, m.b, where);
  }
  upload_constants();
  for (size_t i = 0; i < steps.size(); ++i) {
    Step& st = steps[i];
    const std::string k = p + ", kernel '" + desc.dispatches[i].desc.name + "'";
    for (size_t bi = 0; bi < st.backings.size(); ++bi) {
      Backing& b = st.backings[bi];
      if (b.is_image()) {
        detail::create_image(dev, b, !st.out_slots[bi].empty(), k + ", " + b.what);
        ++stats.images;
      } else {
        b.buffer = slots[st.bound_slot[bi]].b.buffer;  // not owned
        b.offset = slots[st.bound_slot[bi]].b.offset;
        b.size = slots[st.bound_slot[bi]].b.size;
      }
    }
    st.pipeline = detail::dispatch_pipeline(dev, desc.dispatches[i].desc, st.backings, st.push);
    detail::create_descriptor_sets(dev, *st.pipeline, st.backings, st.descriptor_pool, st.sets, k);
  }
}

// Constant slots get their data once: written through the mapping, or copied from staging memory by a
// one-time submission (the staging buffers are freed afterwards).
void Program::Impl::upload_constants() {
  Device& dev = *device;
  VkDevice d = dev.device;
  const std::string p = what();
  std::vector<uint32_t> staged;
  for (size_t s = 0; s < slots.size(); ++s) {
    if (desc.slots[s].role != Role::kConstant || desc.slots[s].bytes == 0) continue;
    SlotMemory& m = slots[s];
    std::memcpy(m.b.host(), desc.slots[s].data.data(), m.b.bytes);
    std::vector<uint8_t>().swap(desc.slots[s].data);  // on the device (or in staging) now: no third copy
    stats.constant_bytes += m.b.bytes;
    if (!m.b.host_coherent()) {
      VkMappedMemoryRange r{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, nullptr, m.b.host_memory(), 0, VK_WHOLE_SIZE};
      check(vkFlushMappedMemoryRanges(d, 1, &r), "vkFlushMappedMemoryRanges", p + ": ");
    }
    if (m.staged) staged.push_back(static_cast<uint32_t>(s));
  }
  if (staged.empty()) return;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  VkFence upload_fence = VK_NULL_HANDLE;
  auto release = [&]() {
    if (upload_fence) vkDestroyFence(d, upload_fence, nullptr);
    if (cb) {
      std::lock_guard<std::mutex> lock(dev.pool_mutex);
      vkFreeCommandBuffers(d, dev.command_pool, 1, &cb);
    }
  };
  try {
    {
      std::lock_guard<std::mutex> lock(dev.pool_mutex);
      cb = allocate_primary(dev, p);
      VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
      bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
      check(vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer", p + ": ");
      for (uint32_t s : staged) {
        VkBufferCopy region{0, slots[s].b.offset, slots[s].b.bytes};
        vkCmdCopyBuffer(cb, slots[s].b.staging, slots[s].b.buffer, 1, &region);
      }
      check(vkEndCommandBuffer(cb), "vkEndCommandBuffer", p + ": ");
    }
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    check(vkCreateFence(d, &fi, nullptr, &upload_fence), "vkCreateFence", p + ": ");
    dev.submit_and_wait(cb, upload_fence, timeout_ms, desc.name + " (constant upload)");
  } catch (...) {
    if (!dev.lost.load()) release();
    throw;
  }
  release();
  for (uint32_t s : staged) {
    Backing& b = slots[s].b;
    vkDestroyBuffer(d, b.staging, nullptr);
    vkFreeMemory(d, b.staging_memory, nullptr);
    b.staging = VK_NULL_HANDLE;
    b.staging_memory = VK_NULL_HANDLE;
    b.staging_mapped = nullptr;
  }
}

void Program::Impl::record(bool timed) {
  Device& dev = *device;
  VkDevice d = dev.device;
  const std::string p = what();
  const uint32_t queries = static_cast<uint32_t>(steps.size()) + 1;
  if (timed && !query_pool && dev.timestamp_valid_bits > 0 && !steps.empty()) {
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = queries;
    check(vkCreateQueryPool(d, &qi, nullptr, &query_pool), "vkCreateQueryPool", p + ": ");
  }
  if (!fence) {
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    check(vkCreateFence(d, &fi, nullptr, &fence), "vkCreateFence", p + ": ");
  }
  const VkQueryPool queries_pool = timed ? query_pool : VK_NULL_HANDLE;

  std::lock_guard<std::mutex> lock(dev.pool_mutex);
  VkCommandBuffer& target = timed ? command_buffer : plain_buffer;
  target = allocate_primary(dev, p);
  VkCommandBuffer cb = target;
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  check(vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer", p + ": ");
  if (queries_pool) vkCmdResetQueryPool(cb, queries_pool, 0, queries);

  // Hazards: byte ranges accessed since the last barrier (arena slots share one buffer, so a slot's
  // memory may have been another slot's). A barrier is global (a VkMemoryBarrier from every pending
  // stage), so it makes every earlier access available.
  std::vector<Range> dirty_writes, dirty_reads;
  VkPipelineStageFlags pending_stages = 0;
  VkAccessFlags pending_writes = 0;
  auto range_of = [&](int slot) {
    const Backing& b = slots[slot].b;
    return Range{b.buffer, b.offset, b.offset + b.size};
  };
  auto overlaps = [](const std::vector<Range>& rs, const Range& r) {
    for (const Range& x : rs)
      if (x.overlaps(r)) return true;
    return false;
  };
  auto needs = [&](int slot, bool write) {
    Range r = range_of(slot);
    return overlaps(dirty_writes, r) || (write && overlaps(dirty_reads, r));
  };
  auto touch = [&](int slot, bool write, VkPipelineStageFlags stage, VkAccessFlags access) {
    if (write) dirty_writes.push_back(range_of(slot)), pending_writes |= access;
    else dirty_reads.push_back(range_of(slot));
    pending_stages |= stage;
  };
  auto barrier = [&](VkPipelineStageFlags extra_src, VkPipelineStageFlags dst_stage, VkAccessFlags dst_access,
                     const std::vector<VkImageMemoryBarrier>& images) {
    VkPipelineStageFlags src = pending_stages | extra_src;
    if (!src) src = VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT;
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = pending_writes;
    mb.dstAccessMask = dst_access;
    vkCmdPipelineBarrier(cb, src, dst_stage, 0, 1, &mb, 0, nullptr, static_cast<uint32_t>(images.size()),
                         images.data());
    ++stats.barriers;
    dirty_writes.clear();
    dirty_reads.clear();
    pending_stages = 0;
    pending_writes = 0;
  };
  const VkAccessFlags kShaderAccess = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_UNIFORM_READ_BIT;
  const VkAccessFlags kTransferAccess = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;

  // 1. Staged external inputs are written by the transfers submitted just before this command
  // buffer (record_transfers): their first readers wait for them (a barrier's first scope is every
  // earlier command in submission order).
  for (uint32_t s : input_slots) {
    const SlotMemory& m = slots[s];
    if (!m.staged || m.b.bytes == 0) continue;
    touch(static_cast<int>(s), true, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
  }

  // 2. The dispatches.
  for (size_t i = 0; i < steps.size(); ++i) {
    Step& st = steps[i];
    const bool zero_outputs = desc.dispatches[i].zero_outputs;
    // Before: images filled from their slots (or cleared); buffers bound to an output slot other than
    // the one they read get a copy of it; output-only buffers cleared (custom operators).
    bool transfers = false, need = false;
    std::vector<VkImageMemoryBarrier> to_transfer, to_shader, to_read;
    for (size_t b = 0; b < st.backings.size(); ++b) {
      const Backing& bk = st.backings[b];
      if (bk.is_image()) {
        transfers = true;
        to_transfer.push_back(detail::image_barrier(bk.image, VK_IMAGE_LAYOUT_UNDEFINED,
                                                    VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 0,
                                                    VK_ACCESS_TRANSFER_WRITE_BIT));
        to_shader.push_back(detail::image_barrier(bk.image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                                                  detail::shader_layout(bk), VK_ACCESS_TRANSFER_WRITE_BIT,
                                                  VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT));
        if (!st.out_slots[b].empty())
          to_read.push_back(detail::image_barrier(bk.image, detail::shader_layout(bk),
                                                  VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, VK_ACCESS_SHADER_WRITE_BIT,
                                                  VK_ACCESS_TRANSFER_READ_BIT));
        if (st.in_slot[b] >= 0) need |= needs(st.in_slot[b], false);
      } else if (st.in_slot[b] >= 0 && st.bound_slot[b] != st.in_slot[b]) {
        transfers = true;
        need |= needs(st.in_slot[b], false) || needs(st.bound_slot[b], true);
      } else if (st.in_slot[b] < 0 && st.bound_slot[b] >= 0 && zero_outputs) {
        transfers = true;
        need |= needs(st.bound_slot[b], true);
      }
    }
    if (transfers) {
      if (need || !to_transfer.empty())
        barrier(0, VK_PIPELINE_STAGE_TRANSFER_BIT, kTransferAccess, to_transfer);
      for (size_t b = 0; b < st.backings.size(); ++b) {
        const Backing& bk = st.backings[b];
        if (bk.is_image()) {
          if (st.in_slot[b] >= 0) {
            VkBufferImageCopy region = detail::image_copy_region(bk);
            region.bufferOffset = slots[st.in_slot[b]].b.offset;
            vkCmdCopyBufferToImage(cb, slots[st.in_slot[b]].b.buffer, bk.image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                                   1, &region);
            touch(st.in_slot[b], false, VK_PIPELINE_STAGE_TRANSFER_BIT, 0);
          } else {
            VkClearColorValue zero{};
            VkImageSubresourceRange range{VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
            vkCmdClearColorImage(cb, bk.image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, &zero, 1, &range);
          }
        } else if (st.in_slot[b] >= 0 && st.bound_slot[b] != st.in_slot[b]) {
          const Backing& from = slots[st.in_slot[b]].b;
          const Backing& to = slots[st.bound_slot[b]].b;
          VkBufferCopy region{from.offset, to.offset, bk.size};
          vkCmdCopyBuffer(cb, from.buffer, to.buffer, 1, &region);
          touch(st.in_slot[b], false, VK_PIPELINE_STAGE_TRANSFER_BIT, 0);
          touch(st.bound_slot[b], true, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
        } else if (st.in_slot[b] < 0 && st.bound_slot[b] >= 0 && zero_outputs) {
          const Backing& to = slots[st.bound_slot[b]].b;
          vkCmdFillBuffer(cb, to.buffer, to.offset, to.size, 0);
          touch(st.bound_slot[b], true, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
        }
      }
      pending_stages |= VK_PIPELINE_STAGE_TRANSFER_BIT;
      pending_writes |= VK_ACCESS_TRANSFER_WRITE_BIT;
    }
    // The dispatch: a barrier only when it touches a range with an unordered earlier access (or
    // images must change layout).
    need = !to_shader.empty();
    for (size_t b = 0; b < st.backings.size(); ++b)
      if (st.bound_slot[b] >= 0) need |= needs(st.bound_slot[b], !st.out_slots[b].empty());
    if (need) barrier(0, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, kShaderAccess, to_shader);
    if (queries_pool && i == 0) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_pool, 0);
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, st.pipeline->pipeline);
    if (!st.sets.empty())
      vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, st.pipeline->layout, 0,
                              static_cast<uint32_t>(st.sets.size()), st.sets.data(), 0, nullptr);
    if (!st.push.empty())
      vkCmdPushConstants(cb, st.pipeline->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                         static_cast<uint32_t>(st.push.size()), st.push.data());
    const auto& groups = desc.dispatches[i].desc.groups;
    vkCmdDispatch(cb, groups[0], groups[1], groups[2]);
    if (queries_pool)
      vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_pool, static_cast<uint32_t>(i) + 1);
    bool post = !to_read.empty();
    for (size_t b = 0; b < st.backings.size(); ++b) {
      int s = st.bound_slot[b];
      if (s < 0) continue;
      bool writes = !st.out_slots[b].empty();
      touch(s, writes, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT);
      if (writes && !st.backings[b].is_image()) touch(s, false, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0);
      if (st.out_slots[b].size() > 1) post = true;
    }
    // After: images copied back into their output slots; extra output slots of an alias copied.
    if (post) {
      barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, kTransferAccess, to_read);
      for (size_t b = 0; b < st.backings.size(); ++b) {
        const Backing& bk = st.backings[b];
        for (size_t o = 0; o < st.out_slots[b].size(); ++o) {
          uint32_t s = st.out_slots[b][o];
          const Backing& to = slots[s].b;
          if (bk.is_image()) {
            VkBufferImageCopy region = detail::image_copy_region(bk);
            region.bufferOffset = to.offset;
            vkCmdCopyImageToBuffer(cb, bk.image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, to.buffer, 1, &region);
          } else if (o > 0) {
            VkBufferCopy region{bk.offset, to.offset, bk.size};
            vkCmdCopyBuffer(cb, bk.buffer, to.buffer, 1, &region);
            touch(st.bound_slot[b], false, VK_PIPELINE_STAGE_TRANSFER_BIT, 0);
          } else {
            continue;
          }
          touch(static_cast<int>(s), true, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
        }
      }
    }
  }

  // 3. Everything visible to the host and to the downloads of staged external outputs submitted
  // after this command buffer (record_transfers).
  bool copies = false;
  for (uint32_t s : output_slots) copies |= slots[s].staged && slots[s].b.bytes > 0;
  if (pending_stages || copies)
    barrier(0, VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_HOST_READ_BIT, {});
  check(vkEndCommandBuffer(cb), "vkEndCommandBuffer", p + ": ");
}

void Program::Impl::record_transfers(VkCommandBuffer cb, bool in, const std::vector<HostImport>* imports) {
  const std::vector<uint32_t>& external = in ? input_slots : output_slots;
  bool any = false;
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  check(vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer", what() + ": ");
  // stage_out. Not with loop guards (lavapipe running custom shaders): a run whose guard trips must
  // not have written the caller's outputs, and chunks are copied out before the guard is read.
  const bool chunking = !in && !imports && guard_slots.empty();
  if (chunking) chunked_output.assign(output_slots.size(), false);
  for (size_t i = 0; i < external.size(); ++i) {
    const SlotMemory& m = slots[external[i]];
    if (!m.staged || m.b.bytes == 0) continue;
    const HostImport* h = imports && (*imports)[i].buffer ? &(*imports)[i] : nullptr;
    const VkBuffer host = h ? h->buffer : m.b.staging;
    const VkDeviceSize host_offset = h ? h->offset : 0;
    if (chunking && m.b.bytes >= kChunkedBytes && m.b.host_coherent() && device->features.synchronization2) {
      // Chunks of at least kMinChunk, at most kMaxChunks, 64 KB multiples.
      const size_t n = std::min<size_t>(kMaxChunks, m.b.bytes / kMinChunk);
      const size_t size = (m.b.bytes / n + 65535) / 65536 * 65536;
      for (size_t begin = 0; begin < m.b.bytes; begin += size) {
        OutChunk c{i, begin, std::min(m.b.bytes, begin + size), VK_NULL_HANDLE};
        VkEventCreateInfo ei{VK_STRUCTURE_TYPE_EVENT_CREATE_INFO};
        check(vkCreateEvent(device->device, &ei, nullptr, &c.event), "vkCreateEvent", what() + ": ");
        out_chunks.push_back(c);
        VkBufferCopy region{m.b.offset + c.begin, c.begin, c.end - c.begin};
        vkCmdCopyBuffer(cb, m.b.buffer, m.b.staging, 1, &region);
        // The chunk's bytes made available to the host before the event says they are there: the
        // signal carries the memory dependency (synchronization2). vkCmdSetEvent's own has none,
        // and with it (after a TRANSFER -> HOST barrier) an H100 let the host see an event before the
        // chunk's bytes, one run in a few.
        VkMemoryBarrier2 mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER_2};
        mb.srcStageMask = VK_PIPELINE_STAGE_2_TRANSFER_BIT;
        mb.srcAccessMask = VK_ACCESS_2_TRANSFER_WRITE_BIT;
        mb.dstStageMask = VK_PIPELINE_STAGE_2_HOST_BIT;
        mb.dstAccessMask = VK_ACCESS_2_HOST_READ_BIT;
        VkDependencyInfo dep{VK_STRUCTURE_TYPE_DEPENDENCY_INFO};
        dep.memoryBarrierCount = 1;
        dep.pMemoryBarriers = &mb;
        vkCmdSetEvent2(cb, c.event, &dep);
      }
      chunked_output[i] = true;
      any = true;
      continue;
    }
    VkBufferCopy region = in ? VkBufferCopy{host_offset, m.b.offset, m.b.bytes} : VkBufferCopy{m.b.offset, host_offset, m.b.bytes};
    if (in) vkCmdCopyBuffer(cb, host, m.b.buffer, 1, &region);
    else vkCmdCopyBuffer(cb, m.b.buffer, host, 1, &region);
    any = true;
  }
  if (any && !in) {
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
  }
  check(vkEndCommandBuffer(cb), "vkEndCommandBuffer", what() + ": ");
}

void Program::Impl::copy_chunks(const std::vector<void*>& outputs, std::vector<char>& copied,
                                std::chrono::steady_clock::time_point deadline) {
  VkDevice d = device->device;
  // On a CPU implementation the shaders run on the cores a spinning wait would take: sleep instead.
  const bool cpu = device->info.type == "CPU";
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t c; (c = next.fetch_add(1)) < out_chunks.size();) {  // in download order
      const OutChunk& k = out_chunks[c];
      for (;;) {
        const VkResult r = vkGetEventStatus(d, k.event);
        if (r == VK_EVENT_SET) break;
        if (r != VK_EVENT_RESET || std::chrono::steady_clock::now() > deadline) return;  // the fence wait reports it
        if (cpu) std::this_thread::sleep_for(std::chrono::microseconds(20));
        else std::this_thread::yield();
      }
      copy_out(desc.slots[output_slots[k.output]].host_cast, static_cast<uint8_t*>(outputs[k.output]),
               slots[output_slots[k.output]].b.host(), k.begin, k.end);
      copied[c] = 1;
    }
  };
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const size_t helpers = std::min<size_t>({kChunkThreads, hw, out_chunks.size()}) - 1;
  std::vector<std::thread> pool;
  try {
    for (size_t t = 0; t < helpers; ++t) pool.emplace_back(work);
  } catch (const std::system_error&) {  // no more threads: the ones there (and this one) do it all
  }
  work();
  for (std::thread& th : pool) th.join();
}

void Program::Impl::run(const std::vector<const void*>& inputs, const std::vector<void*>& outputs, bool timed) {
  std::lock_guard<std::mutex> lock(run_mutex);
  device->check_usable();
  auto start = std::chrono::steady_clock::now();
  uint64_t validation_before = detail::validation_error_count();
  VkDevice d = device->device;
  const std::string p = what();
  if (inputs.size() < input_slots.size() || outputs.size() < output_slots.size())
    throw Error(ErrorCode::kInvalidArgument, p + ": " + std::to_string(inputs.size()) + " inputs and " +
                                                 std::to_string(outputs.size()) + " outputs given, " +
                                                 std::to_string(input_slots.size()) + " and " +
                                                 std::to_string(output_slots.size()) + " expected");
  for (size_t i = 0; i < input_slots.size(); ++i)
    if (!inputs[i] && slots[input_slots[i]].b.bytes > 0)
      throw Error(ErrorCode::kInvalidArgument, p + ": no host memory for input " + std::to_string(i));
  for (size_t i = 0; i < output_slots.size(); ++i)
    if (!outputs[i] && slots[output_slots[i]].b.bytes > 0)
      throw Error(ErrorCode::kInvalidArgument, p + ": no host memory for output " + std::to_string(i));
  size_t up = 0, down = 0, imported = 0;
  // With WEFT_VULKAN_HOST_IMPORT=1, large staged inputs and outputs move straight from / to the
  // caller's memory where the device can import it; the others go through staging memory.
  std::vector<HostImport> in_imports, out_imports;  // empty without host import
  bool any_import = false;
  if (device->host_import) {
    in_imports.resize(input_slots.size());
    out_imports.resize(output_slots.size());
    for (size_t i = 0; i < input_slots.size(); ++i) {
      const SlotMemory& m = slots[input_slots[i]];
      if (m.staged && desc.slots[input_slots[i]].host_cast == ProgramSlot::HostCast::kNone &&
          (in_imports[i] = import_host(*device, inputs[i], m.b.bytes)).buffer)
        any_import = true;
    }
    for (size_t i = 0; i < output_slots.size(); ++i) {
      const SlotMemory& m = slots[output_slots[i]];
      if (m.staged && desc.slots[output_slots[i]].host_cast == ProgramSlot::HostCast::kNone &&
          (out_imports[i] = import_host(*device, outputs[i], m.b.bytes)).buffer)
        any_import = true;
    }
  }
  auto imported_at = [&](const std::vector<HostImport>& v, size_t i) { return any_import && v[i].buffer; };
  for (size_t i = 0; i < input_slots.size(); ++i) {
    const Backing& b = slots[input_slots[i]].b;
    if (b.bytes == 0) continue;
    up += b.bytes;
    if (imported_at(in_imports, i)) {
      imported += b.bytes;
      continue;
    }
    const ProgramSlot::HostCast cast = desc.slots[input_slots[i]].host_cast;
    uint8_t* dev = b.host();
    const uint8_t* host = static_cast<const uint8_t*>(inputs[i]);
    staging_copy(b.bytes, host_scale(cast), [&](size_t begin, size_t end) { copy_in(cast, dev, host, begin, end); });
    if (!b.host_coherent()) {
      VkMappedMemoryRange r{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, nullptr, b.host_memory(), 0, VK_WHOLE_SIZE};
      check(vkFlushMappedMemoryRanges(d, 1, &r), "vkFlushMappedMemoryRanges", p + ": ");
    }
  }
  check(vkResetFences(d, 1, &fence), "vkResetFences", p + ": ");
  if (!timed && !plain_buffer) record(false);
  // The transfers: recorded once for staging, per run around imported memory (freed when done).
  struct RunBuffers {
    Device* dev;
    std::vector<VkCommandBuffer> cbs;
    ~RunBuffers() {
      if (cbs.empty() || dev->lost.load()) return;
      std::lock_guard<std::mutex> lock(dev->pool_mutex);
      vkFreeCommandBuffers(dev->device, dev->command_pool, static_cast<uint32_t>(cbs.size()), cbs.data());
    }
  } per_run{device.get(), {}};
  bool has_in = false, has_out = false;
  for (uint32_t s : input_slots) has_in |= slots[s].staged && slots[s].b.bytes > 0;
  for (uint32_t s : output_slots) has_out |= slots[s].staged && slots[s].b.bytes > 0;
  VkCommandBuffer pre = VK_NULL_HANDLE, post = VK_NULL_HANDLE;
  if (any_import) {
    std::lock_guard<std::mutex> lock(device->pool_mutex);
    if (has_in) {
      per_run.cbs.push_back(pre = allocate_primary(*device, p));
      record_transfers(pre, true, &in_imports);
    }
    if (has_out) {
      per_run.cbs.push_back(post = allocate_primary(*device, p));
      record_transfers(post, false, &out_imports);
    }
  } else {
    if ((has_in && !stage_in) || (has_out && !stage_out)) {
      std::lock_guard<std::mutex> lock(device->pool_mutex);
      if (has_in && !stage_in) record_transfers(stage_in = allocate_primary(*device, p), true, nullptr);
      if (has_out && !stage_out) record_transfers(stage_out = allocate_primary(*device, p), false, nullptr);
    }
    pre = has_in ? stage_in : VK_NULL_HANDLE;
    post = has_out ? stage_out : VK_NULL_HANDLE;
  }
  std::vector<VkCommandBuffer> submission;
  if (pre) submission.push_back(pre);
  submission.push_back(timed ? command_buffer : plain_buffer);
  if (post) submission.push_back(post);
  // Chunked downloads (stage_out's recording): copied out while the GPU works, then the rest.
  const bool chunked = post == stage_out && post && !out_chunks.empty();
  std::vector<char> copied(chunked ? out_chunks.size() : 0, 0);
  std::function<void(std::chrono::steady_clock::time_point)> overlap;
  if (chunked) overlap = [&](std::chrono::steady_clock::time_point deadline) { copy_chunks(outputs, copied, deadline); };
  device->submit_and_wait(std::move(submission), fence, timeout_ms, desc.name, overlap);
  for (size_t c = 0; c < copied.size(); ++c) {
    const OutChunk& k = out_chunks[c];
    if (!copied[c])
      copy_out(desc.slots[output_slots[k.output]].host_cast, static_cast<uint8_t*>(outputs[k.output]),
               slots[output_slots[k.output]].b.host(), k.begin, k.end);
    check(vkResetEvent(d, k.event), "vkResetEvent", p + ": ");
  }
  // A loop cut short by llvmpipe: the outputs are wrong, and not handed out.
  for (size_t k = 0; k < guard_slots.size(); ++k) {
    const Backing& b = slots[guard_slots[k]].b;
    if (!b.host_coherent()) {
      VkMappedMemoryRange r{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, nullptr, b.host_memory(), 0, VK_WHOLE_SIZE};
      check(vkInvalidateMappedMemoryRanges(d, 1, &r), "vkInvalidateMappedMemoryRanges", p + ": ");
    }
    uint32_t flag = 0;
    std::memcpy(&flag, b.host(), sizeof flag);
    if (flag != 0)
      throw Error(ErrorCode::kRuntime,
                  "Vulkan dispatch of '" + guard_kernels[k] + "' on " + device->label() + ": llvmpipe ended a loop of the shader before the loop's own exit (it stops loops after " +
                      std::to_string(detail::kLavapipeLoopLimit) +
                      " passes per subgroup, a guard against runaway shaders), so the outputs would be wrong and "
                      "were not returned; run it on another Vulkan device, or give each invocation fewer loop "
                      "iterations (more invocations, each doing less)");
  }
  for (size_t i = 0; i < output_slots.size(); ++i) {
    const Backing& b = slots[output_slots[i]].b;
    if (b.bytes == 0) continue;
    if (imported_at(out_imports, i)) {  // already in the caller's memory
      down += b.bytes;
      imported += b.bytes;
      continue;
    }
    if (chunked && chunked_output[i]) {  // copied chunk by chunk above
      down += b.bytes;
      continue;
    }
    if (!b.host_coherent()) {
      VkMappedMemoryRange r{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, nullptr, b.host_memory(), 0, VK_WHOLE_SIZE};
      check(vkInvalidateMappedMemoryRanges(d, 1, &r), "vkInvalidateMappedMemoryRanges", p + ": ");
    }
    const ProgramSlot::HostCast cast = desc.slots[output_slots[i]].host_cast;
    const uint8_t* dev = b.host();
    uint8_t* host = static_cast<uint8_t*>(outputs[i]);
    staging_copy(b.bytes, host_scale(cast), [&](size_t begin, size_t end) { copy_out(cast, host, dev, begin, end); });
    down += b.bytes;
  }
  dispatch_ms = timed ? detail::interval_ms(*device, query_pool, static_cast<uint32_t>(steps.size()))
                      : std::vector<double>{};
  gpu_ms = -1;
  if (!dispatch_ms.empty()) {
    gpu_ms = 0;
    for (double t : dispatch_ms) gpu_ms += t;
  }
  stats.bytes_uploaded = up;
  stats.bytes_downloaded = down;
  stats.bytes_imported = imported;
  ++stats.runs;
  total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  detail::check_validation(validation_before, "running", p);
}

// ---- Program ----------------------------------------------------------------------------------------

Program::Program(std::shared_ptr<Device> device, ProgramDesc desc) : impl_(std::make_unique<Impl>()) {
  if (!device) throw Error(ErrorCode::kInvalidArgument, "Program '" + desc.name + "': no device");
  impl_->device = std::move(device);
  impl_->desc = std::move(desc);
  Impl& m = *impl_;
  m.device->check_usable();
  m.timeout_ms = m.desc.timeout_ms ? m.desc.timeout_ms : detail::env_timeout_ms(m.desc.default_timeout_ms);
  uint64_t validation_before = detail::validation_error_count();
  m.add_loop_guards();
  m.map_slots();
  m.create_slots();
  m.record(true);
  detail::check_validation(validation_before, "creating", m.what());
}

Program::~Program() = default;
Program::Program(Program&&) noexcept = default;
Program& Program::operator=(Program&&) noexcept = default;

void Program::run(const std::vector<const void*>& inputs, const std::vector<void*>& outputs, bool timestamps) {
  impl_->run(inputs, outputs, timestamps);
}

double Program::last_gpu_ms() const { return impl_->gpu_ms; }
double Program::last_total_ms() const { return impl_->total_ms; }
std::vector<double> Program::last_dispatch_ms() const { return impl_->dispatch_ms; }
ProgramStats Program::stats() const { return impl_->stats; }
const ProgramDesc& Program::desc() const { return impl_->desc; }
const std::shared_ptr<Device>& Program::device() const { return impl_->device; }

}  // namespace weft::vk
