#include "backend/vulkan/vulkan_recorder.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "mnnpy/thread_pool.h"

namespace mnnpy {
namespace vulkan {

namespace {

// Copies between the host's arrays and staging buffers; a large one takes the pool's threads, as
// one core copies slower than the bus moves the bytes. (The CPU backend's parallel_memcpy, with
// its streaming stores, is in a layer this backend does not reach.)
void copy_host_bytes(void* dst, const void* src, size_t bytes) {
  constexpr size_t kChunk = size_t(1) << 20;
  if (bytes < 4 * kChunk) {
    std::memcpy(dst, src, bytes);
    return;
  }
  parallel_for(&ThreadPool::global(), (int64_t)((bytes + kChunk - 1) / kChunk), 1, [&](int64_t begin, int64_t end) {
    const size_t from = (size_t)begin * kChunk, to = std::min(bytes, (size_t)end * kChunk);
    std::memcpy((char*)dst + from, (const char*)src + from, to - from);
  });
}

}  // namespace

Recorder& Recorder::current() {
  thread_local Recorder recorder;
  return recorder;
}

Recorder::~Recorder() {
  Context* ctx = context();
  if (!ctx || !cb_ || process_exiting()) return;
  if (pending_) vkWaitForFences(ctx->device, 1, &fence_, VK_TRUE, UINT64_MAX);
  vkDestroyFence(ctx->device, fence_, nullptr);
  if (timestamps_) vkDestroyQueryPool(ctx->device, timestamps_, nullptr);
  vkDestroyCommandPool(ctx->device, pool_, nullptr);  // frees its command buffer
}

void Recorder::open() {
  Context& ctx = *context();
  if (!cb_) {
    VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool.queueFamilyIndex = ctx.queue_family;
    check(vkCreateCommandPool(ctx.device, &pool, nullptr, &pool_), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    info.commandPool = pool_;
    info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    info.commandBufferCount = 1;
    check(vkAllocateCommandBuffers(ctx.device, &info, &cb_), "vkAllocateCommandBuffers");
    VkFenceCreateInfo fence{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    check(vkCreateFence(ctx.device, &fence, nullptr, &fence_), "vkCreateFence");
    if (ctx.timestamp_period > 0) {
      VkQueryPoolCreateInfo pool{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
      pool.queryType = VK_QUERY_TYPE_TIMESTAMP;
      pool.queryCount = 2;
      check(vkCreateQueryPool(ctx.device, &pool, nullptr, &timestamps_), "vkCreateQueryPool");
    }
  }
  if (pending_) wait();  // the command buffer is reused: its earlier work must be done
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(cb_, &begin), "vkBeginCommandBuffer");
  if (timestamps_) {
    vkCmdResetQueryPool(cb_, timestamps_, 0, 2);
    vkCmdWriteTimestamp(cb_, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, timestamps_, 0);
  }
  open_ = true;
  unsynchronized_stages_ = 0;
}

VkCommandBuffer Recorder::command_buffer(Work next) {
  if (!open_) open();
  if (next == Work::Compute) barrier_to(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
  else barrier_to(VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
  return cb_;
}

void Recorder::recorded(Work done) {
  unsynchronized_stages_ |= done == Work::Compute ? VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT : VK_PIPELINE_STAGE_TRANSFER_BIT;
}

void Recorder::barrier_to(VkPipelineStageFlags stages, VkAccessFlags access) {
  if (!unsynchronized_stages_) return;
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  if (unsynchronized_stages_ & VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT) barrier.srcAccessMask |= VK_ACCESS_SHADER_WRITE_BIT;
  if (unsynchronized_stages_ & VK_PIPELINE_STAGE_TRANSFER_BIT) barrier.srcAccessMask |= VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = access;
  vkCmdPipelineBarrier(cb_, unsynchronized_stages_, stages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
  unsynchronized_stages_ = 0;
}

void Recorder::keep(std::shared_ptr<Allocation> allocation) { kept_.push_back(std::move(allocation)); }

void Recorder::submit() {
  if (!open_) return;
  Context& ctx = *context();
  barrier_to(VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);  // copies out are read by the host after the wait
  if (timestamps_) vkCmdWriteTimestamp(cb_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timestamps_, 1);
  check(vkEndCommandBuffer(cb_), "vkEndCommandBuffer");
  open_ = false;
  VkSubmitInfo info{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  info.commandBufferCount = 1;
  info.pCommandBuffers = &cb_;
  {
    std::lock_guard<std::mutex> lock(ctx.queue_mutex);
    check(vkQueueSubmit(ctx.queue, 1, &info, fence_), "vkQueueSubmit");
  }
  pending_ = true;
  in_flight_.insert(in_flight_.end(), kept_.begin(), kept_.end());
  kept_.clear();
}

void Recorder::wait() {
  Context& ctx = *context();
  submit();
  if (pending_) {
    check(vkWaitForFences(ctx.device, 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    check(vkResetFences(ctx.device, 1, &fence_), "vkResetFences");
    pending_ = false;
    uint64_t ticks[2];
    last_seconds_ = timestamps_ && vkGetQueryPoolResults(ctx.device, timestamps_, 0, 2, sizeof(ticks), ticks, sizeof(uint64_t),
                                                         VK_QUERY_RESULT_64_BIT) == VK_SUCCESS
                        ? (double)(ticks[1] - ticks[0]) * ctx.timestamp_period * 1e-9
                        : -1;
    seconds_waited_ = last_seconds_ < 0 || seconds_waited_ < 0 ? -1 : seconds_waited_ + last_seconds_;
  }
  for (const CopyOut& c : copies_out_) copy_host_bytes(c.host_dst, c.staging->mapped, c.bytes);
  copies_out_.clear();
  // Staging buffers only this recorder still holds go back to the spares (up to 64 MiB of them).
  for (std::shared_ptr<Allocation>& a : in_flight_) {
    if (a->mapped && a.use_count() == 1 && spare_bytes_ + a->bytes <= (size_t(64) << 20)) {
      spare_bytes_ += a->bytes;
      spare_staging_.push_back(std::move(a));
    }
  }
  in_flight_.clear();
  if (ctx.validation) {
    const std::string error = ctx.take_validation_error();
    if (!error.empty()) throw std::runtime_error(error);
  }
}

std::shared_ptr<Allocation> Recorder::take_staging(size_t bytes, Memory kind) {
  size_t best = spare_staging_.size();
  for (size_t k = 0; k < spare_staging_.size(); ++k) {
    const Allocation& a = *spare_staging_[k];
    if (a.kind == kind && a.bytes >= bytes && (best == spare_staging_.size() || a.bytes < spare_staging_[best]->bytes)) best = k;
  }
  if (best == spare_staging_.size()) return std::make_shared<Allocation>(std::max<size_t>(bytes, 64 << 10), kind);
  std::shared_ptr<Allocation> staging = std::move(spare_staging_[best]);
  spare_staging_.erase(spare_staging_.begin() + best);
  spare_bytes_ -= staging->bytes;
  return staging;
}

void Recorder::end_stretch(bool failed) {
  in_stretch_ = false;
  if (failed || !copies_out_.empty()) wait();
  else submit();
}

void Recorder::copy_from_host(void* device_dst, const void* host_src, size_t bytes) {
  if (!bytes) return;
  VkDeviceSize offset = 0;
  std::shared_ptr<Allocation> dst = allocation_at(device_dst, bytes, &offset);
  std::shared_ptr<Allocation> staging = take_staging(bytes, Memory::Upload);
  copy_host_bytes(staging->mapped, host_src, bytes);
  const VkBufferCopy region{0, offset, bytes};
  vkCmdCopyBuffer(command_buffer(Work::Transfer), staging->buffer, dst->buffer, 1, &region);
  recorded(Work::Transfer);
  keep(std::move(staging));
  keep(std::move(dst));
  if (!in_stretch_) wait();
}

void Recorder::copy_to_host(void* host_dst, const void* device_src, size_t bytes) {
  if (!bytes) return;
  VkDeviceSize offset = 0;
  std::shared_ptr<Allocation> src = allocation_at(device_src, bytes, &offset);
  std::shared_ptr<Allocation> staging = take_staging(bytes, Memory::Readback);
  const VkBufferCopy region{offset, 0, bytes};
  vkCmdCopyBuffer(command_buffer(Work::Transfer), src->buffer, staging->buffer, 1, &region);
  recorded(Work::Transfer);
  keep(src);
  keep(staging);
  copies_out_.push_back(CopyOut{host_dst, staging, bytes});
  if (!in_stretch_) wait();
}

}  // namespace vulkan
}  // namespace mnnpy
