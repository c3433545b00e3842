// Program: a region of shader dispatches recorded into one command buffer, intermediates on the device.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>

#include "runtime/vulkan/internal.h"

namespace weft::vk {

using custom::ResourceKind;
using detail::Backing;
using detail::check;

namespace {

using Role = ProgramSlot::Role;

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
};

}  // namespace

struct Program::Impl {
  std::shared_ptr<Device> device;
  ProgramDesc desc;
  uint32_t timeout_ms = 10000;
  std::vector<SlotMemory> slots;
  std::vector<uint32_t> input_slots, output_slots;  // external slots in order
  std::vector<Step> steps;
  VkCommandBuffer command_buffer = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  VkQueryPool query_pool = VK_NULL_HANDLE;
  double gpu_ms = -1, total_ms = -1;
  ProgramStats stats;
  std::mutex run_mutex;

  ~Impl();
  std::string what() const { return "program '" + desc.name + "'"; }
  void map_slots();
  void create_slots();
  void record();
  void run(const std::vector<const void*>& inputs, const std::vector<void*>& outputs);
};

Program::Impl::~Impl() {
  if (!device || !device->device) return;
  if (device->lost.load()) {
    using detail::handle_ptr;
    detail::keep_forever({handle_ptr(command_buffer), handle_ptr(fence), handle_ptr(query_pool)});
    for (const Step& s : steps) {
      detail::keep_forever({handle_ptr(s.descriptor_pool)});
      for (const Backing& b : s.backings)
        if (b.is_image())
          detail::keep_forever({handle_ptr(b.sampler), handle_ptr(b.view), handle_ptr(b.image), handle_ptr(b.memory)});
    }
    for (const SlotMemory& m : slots)
      detail::keep_forever({handle_ptr(m.b.buffer), handle_ptr(m.b.memory), handle_ptr(m.b.staging),
                            handle_ptr(m.b.staging_memory)});
    return;
  }
  VkDevice d = device->device;
  if (command_buffer) {
    std::lock_guard<std::mutex> lock(device->pool_mutex);
    vkFreeCommandBuffers(d, device->command_pool, 1, &command_buffer);
  }
  if (fence) vkDestroyFence(d, fence, nullptr);
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
  for (SlotMemory& m : slots) {
    if (m.b.buffer) vkDestroyBuffer(d, m.b.buffer, nullptr);
    if (m.b.memory) vkFreeMemory(d, m.b.memory, nullptr);
    if (m.b.staging) vkDestroyBuffer(d, m.b.staging, nullptr);
    if (m.b.staging_memory) vkFreeMemory(d, m.b.staging_memory, nullptr);
  }
}

// Validates each dispatch and ties its backings to slots.
void Program::Impl::map_slots() {
  const std::string p = what();
  slots.resize(desc.slots.size());
  for (size_t s = 0; s < desc.slots.size(); ++s) {
    const ProgramSlot& ps = desc.slots[s];
    slots[s].b.bytes = ps.bytes;
    slots[s].b.size = std::max<VkDeviceSize>(4, (ps.bytes + 3) / 4 * 4);
    slots[s].b.what = "slot " + std::to_string(s) + (ps.name.empty() ? "" : " (" + ps.name + ")");
    if (ps.role == Role::kInput) input_slots.push_back(static_cast<uint32_t>(s));
    if (ps.role == Role::kOutput) output_slots.push_back(static_cast<uint32_t>(s));
  }
  std::vector<bool> written(slots.size(), false);
  for (size_t s = 0; s < slots.size(); ++s) written[s] = desc.slots[s].role == Role::kInput;
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
        if (desc.slots[s].role == Role::kInput)
          throw Error(ErrorCode::kInvalidArgument,
                      k + ": " + st.backings[bi].what + " writes external input " + slots[s].b.what);
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
  for (size_t s = 0; s < slots.size(); ++s) {
    SlotMemory& m = slots[s];
    const std::string where = p + ", " + m.b.what;
    Role role = desc.slots[s].role;
    bool external = role != Role::kInternal;
    m.staged = detail::create_buffer(dev, m.b, usage, external && desc.map_device_memory, where);
    if (external && m.staged) detail::create_staging(dev, m.b, role == Role::kOutput, where);
  }
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
        b.size = slots[st.bound_slot[bi]].b.size;
      }
    }
    st.pipeline = detail::dispatch_pipeline(dev, desc.dispatches[i].desc, st.backings, st.push);
    detail::create_descriptor_sets(dev, *st.pipeline, st.backings, st.descriptor_pool, st.sets, k);
  }
}

void Program::Impl::record() {
  Device& dev = *device;
  VkDevice d = dev.device;
  const std::string p = what();
  if (dev.timestamp_valid_bits > 0 && !steps.empty()) {
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = 2;
    check(vkCreateQueryPool(d, &qi, nullptr, &query_pool), "vkCreateQueryPool", p + ": ");
  }
  VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  check(vkCreateFence(d, &fi, nullptr, &fence), "vkCreateFence", p + ": ");

  std::lock_guard<std::mutex> lock(dev.pool_mutex);
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = dev.command_pool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  check(vkAllocateCommandBuffers(d, &ai, &command_buffer), "vkAllocateCommandBuffers", p + ": ");
  VkCommandBuffer cb = command_buffer;
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  check(vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer", p + ": ");
  if (query_pool) vkCmdResetQueryPool(cb, query_pool, 0, 2);

  // Hazards: accesses to slot buffers since the last barrier. A barrier is global (a VkMemoryBarrier
  // from every pending stage), so it makes every earlier access available.
  std::vector<bool> dirty_write(slots.size(), false), dirty_read(slots.size(), false);
  VkPipelineStageFlags pending_stages = 0;
  VkAccessFlags pending_writes = 0;
  auto needs = [&](int slot, bool write) { return dirty_write[slot] || (write && dirty_read[slot]); };
  auto touch = [&](int slot, bool write, VkPipelineStageFlags stage, VkAccessFlags access) {
    if (write) dirty_write[slot] = true, pending_writes |= access;
    else dirty_read[slot] = true;
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
    std::fill(dirty_write.begin(), dirty_write.end(), false);
    std::fill(dirty_read.begin(), dirty_read.end(), false);
    pending_stages = 0;
    pending_writes = 0;
  };
  const VkAccessFlags kShaderAccess = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_UNIFORM_READ_BIT;
  const VkAccessFlags kTransferAccess = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;

  // 1. Uploads of staged external inputs; zeroing of slots whose writer reads nothing.
  for (uint32_t s : input_slots) {
    const SlotMemory& m = slots[s];
    if (!m.staged || m.b.bytes == 0) continue;
    VkBufferCopy region{0, 0, m.b.bytes};
    vkCmdCopyBuffer(cb, m.b.staging, m.b.buffer, 1, &region);
    touch(static_cast<int>(s), true, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
  }
  {
    std::vector<bool> zeroed(slots.size(), false);
    for (const Step& st : steps)
      for (size_t b = 0; b < st.backings.size(); ++b) {
        int s = st.bound_slot[b];
        if (st.backings[b].is_image() || st.in_slot[b] >= 0 || s < 0 || zeroed[s]) continue;
        zeroed[s] = true;
        vkCmdFillBuffer(cb, slots[s].b.buffer, 0, VK_WHOLE_SIZE, 0);
        touch(s, true, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
      }
  }

  // 2. The dispatches.
  for (size_t i = 0; i < steps.size(); ++i) {
    Step& st = steps[i];
    // Before: images filled from their slots (or cleared); buffers bound to an output slot other than
    // the one they read get a copy of it.
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
            vkCmdCopyBufferToImage(cb, slots[st.in_slot[b]].b.buffer, bk.image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                                   1, &region);
            touch(st.in_slot[b], false, VK_PIPELINE_STAGE_TRANSFER_BIT, 0);
          } else {
            VkClearColorValue zero{};
            VkImageSubresourceRange range{VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
            vkCmdClearColorImage(cb, bk.image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, &zero, 1, &range);
          }
        } else if (st.in_slot[b] >= 0 && st.bound_slot[b] != st.in_slot[b]) {
          VkBufferCopy region{0, 0, bk.size};
          vkCmdCopyBuffer(cb, slots[st.in_slot[b]].b.buffer, slots[st.bound_slot[b]].b.buffer, 1, &region);
          touch(st.in_slot[b], false, VK_PIPELINE_STAGE_TRANSFER_BIT, 0);
          touch(st.bound_slot[b], true, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
        }
      }
      pending_stages |= VK_PIPELINE_STAGE_TRANSFER_BIT;
      pending_writes |= VK_ACCESS_TRANSFER_WRITE_BIT;
    }
    // The dispatch: a barrier only when it touches a slot with an unordered earlier access (or
    // images must change layout).
    need = !to_shader.empty();
    for (size_t b = 0; b < st.backings.size(); ++b)
      if (st.bound_slot[b] >= 0) need |= needs(st.bound_slot[b], !st.out_slots[b].empty());
    if (need) barrier(0, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, kShaderAccess, to_shader);
    if (query_pool && i == 0) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, query_pool, 0);
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, st.pipeline->pipeline);
    if (!st.sets.empty())
      vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, st.pipeline->layout, 0,
                              static_cast<uint32_t>(st.sets.size()), st.sets.data(), 0, nullptr);
    if (!st.push.empty())
      vkCmdPushConstants(cb, st.pipeline->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                         static_cast<uint32_t>(st.push.size()), st.push.data());
    const auto& groups = desc.dispatches[i].desc.groups;
    vkCmdDispatch(cb, groups[0], groups[1], groups[2]);
    if (query_pool && i + 1 == steps.size())
      vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, query_pool, 1);
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
          if (bk.is_image()) {
            VkBufferImageCopy region = detail::image_copy_region(bk);
            vkCmdCopyImageToBuffer(cb, bk.image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, slots[s].b.buffer, 1, &region);
          } else if (o > 0) {
            VkBufferCopy region{0, 0, bk.size};
            vkCmdCopyBuffer(cb, bk.buffer, slots[s].b.buffer, 1, &region);
            touch(st.bound_slot[b], false, VK_PIPELINE_STAGE_TRANSFER_BIT, 0);
          } else {
            continue;
          }
          touch(static_cast<int>(s), true, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
        }
      }
    }
  }

  // 3. Downloads of staged external outputs, then make everything visible to the host.
  bool copies = false;
  for (uint32_t s : output_slots) copies |= slots[s].staged && slots[s].b.bytes > 0;
  if (pending_stages || copies)
    barrier(0, VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_HOST_READ_BIT, {});
  if (copies) {
    for (uint32_t s : output_slots) {
      const SlotMemory& m = slots[s];
      if (!m.staged || m.b.bytes == 0) continue;
      VkBufferCopy region{0, 0, m.b.bytes};
      vkCmdCopyBuffer(cb, m.b.buffer, m.b.staging, 1, &region);
      touch(static_cast<int>(s), true, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
    }
    barrier(0, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT, {});
  }
  check(vkEndCommandBuffer(cb), "vkEndCommandBuffer", p + ": ");
}

void Program::Impl::run(const std::vector<const void*>& inputs, const std::vector<void*>& outputs) {
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
  size_t up = 0, down = 0;
  for (size_t i = 0; i < input_slots.size(); ++i) {
    const Backing& b = slots[input_slots[i]].b;
    if (b.bytes == 0) continue;
    std::memcpy(b.host(), inputs[i], b.bytes);
    up += b.bytes;
    if (!b.host_coherent()) {
      VkMappedMemoryRange r{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, nullptr, b.host_memory(), 0, VK_WHOLE_SIZE};
      check(vkFlushMappedMemoryRanges(d, 1, &r), "vkFlushMappedMemoryRanges", p + ": ");
    }
  }
  check(vkResetFences(d, 1, &fence), "vkResetFences", p + ": ");
  device->submit_and_wait(command_buffer, fence, timeout_ms, desc.name);
  for (size_t i = 0; i < output_slots.size(); ++i) {
    const Backing& b = slots[output_slots[i]].b;
    if (b.bytes == 0) continue;
    if (!b.host_coherent()) {
      VkMappedMemoryRange r{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, nullptr, b.host_memory(), 0, VK_WHOLE_SIZE};
      check(vkInvalidateMappedMemoryRanges(d, 1, &r), "vkInvalidateMappedMemoryRanges", p + ": ");
    }
    std::memcpy(outputs[i], b.host(), b.bytes);
    down += b.bytes;
  }
  gpu_ms = detail::elapsed_ms(*device, query_pool);
  stats.bytes_uploaded = up;
  stats.bytes_downloaded = down;
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
  m.timeout_ms = m.desc.timeout_ms ? m.desc.timeout_ms : detail::env_timeout_ms();
  uint64_t validation_before = detail::validation_error_count();
  m.map_slots();
  m.create_slots();
  m.record();
  detail::check_validation(validation_before, "creating", m.what());
}

Program::~Program() = default;
Program::Program(Program&&) noexcept = default;
Program& Program::operator=(Program&&) noexcept = default;

void Program::run(const std::vector<const void*>& inputs, const std::vector<void*>& outputs) {
  impl_->run(inputs, outputs);
}

double Program::last_gpu_ms() const { return impl_->gpu_ms; }
double Program::last_total_ms() const { return impl_->total_ms; }
ProgramStats Program::stats() const { return impl_->stats; }
const ProgramDesc& Program::desc() const { return impl_->desc; }
const std::shared_ptr<Device>& Program::device() const { return impl_->device; }

}  // namespace weft::vk
