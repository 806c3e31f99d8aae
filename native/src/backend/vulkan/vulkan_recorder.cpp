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

// Recordings kept per thread: a process that cycles through more plans than this records again.
constexpr size_t kMaxRecordings = 64;
constexpr size_t kMaxRecordingStagingBytes = size_t(256) << 20;

Recorder::~Recorder() {
  Context* ctx = context();
  if (!ctx || !pool_ || process_exiting()) return;
  if (pending_) vkWaitForFences(ctx->device, 1, &fence_, VK_TRUE, UINT64_MAX);
  vkDestroyFence(ctx->device, fence_, nullptr);
  if (timestamps_) vkDestroyQueryPool(ctx->device, timestamps_, nullptr);
  vkDestroyCommandPool(ctx->device, pool_, nullptr);  // frees its command buffers
}

void Recorder::create_objects() {
  Context& ctx = *context();
  VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool.queueFamilyIndex = ctx.queue_family;
  check(vkCreateCommandPool(ctx.device, &pool, nullptr, &pool_), "vkCreateCommandPool");
  VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  info.commandPool = pool_;
  info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  info.commandBufferCount = 1;
  check(vkAllocateCommandBuffers(ctx.device, &info, &one_time_cb_), "vkAllocateCommandBuffers");
  VkFenceCreateInfo fence{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  check(vkCreateFence(ctx.device, &fence, nullptr, &fence_), "vkCreateFence");
  if (ctx.timestamp_period > 0) {
    VkQueryPoolCreateInfo queries{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    queries.queryType = VK_QUERY_TYPE_TIMESTAMP;
    queries.queryCount = 2;
    check(vkCreateQueryPool(ctx.device, &queries, nullptr, &timestamps_), "vkCreateQueryPool");
  }
}

void Recorder::open() {
  Context& ctx = *context();
  if (!pool_) create_objects();
  if (pending_) wait();  // one submission in flight at a time: the fence (and a reused buffer) is free again
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  if (capture_) {
    // A stretch's own buffer, kept to be submitted again.
    VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    info.commandPool = pool_;
    info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    info.commandBufferCount = 1;
    check(vkAllocateCommandBuffers(ctx.device, &info, &cb_), "vkAllocateCommandBuffers");
  } else {
    cb_ = one_time_cb_;
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  }
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

std::vector<uintptr_t> Recorder::stretch_key(const StepCall* calls, size_t count) {
  std::vector<uintptr_t> key;
  for (size_t i = 0; i < count; ++i) {
    const StepCall& c = calls[i];
    // A kernel of this backend sees device buffers only; a copy has one host side.
    const bool device_only = dynamic_cast<const VulkanKernel*>(c.kernel) != nullptr;
    key.insert(key.end(), {(uintptr_t)c.kernel->serial(), (uintptr_t)c.scratch, c.args.inputs.size(), c.args.outputs.size()});
    for (const Tensor* t : c.args.inputs) key.push_back(device_only || is_device_address(t->data) ? (uintptr_t)t->data : 0);
    for (const Tensor* t : c.args.outputs) key.push_back(device_only || is_device_address(t->data) ? (uintptr_t)t->data : 0);
  }
  return key;
}

bool Recorder::replay(const std::vector<uintptr_t>& key, const StepCall* calls) {
  auto found = std::find_if(recordings_.begin(), recordings_.end(), [&](const Recording& r) { return r.key == key; });
  if (found == recordings_.end()) return false;
  std::vector<std::shared_ptr<Allocation>> used;
  for (const std::weak_ptr<Allocation>& b : found->buffers) {
    used.push_back(b.lock());
    if (!used.back()) {  // cannot happen while its key matches; recorded again if it does
      if (pending_) wait();  // it may be the work in flight
      vkFreeCommandBuffers(context()->device, pool_, 1, &found->cb);
      recordings_.erase(found);
      return false;
    }
  }
  Context& ctx = *context();
  if (open_) submit();
  if (pending_) wait();
  for (const HostCopy& c : found->host_copies) {
    if (!c.to_host) copy_host_bytes(c.staging->mapped, calls[c.call].args.inputs[c.arg]->data, c.bytes);
    used.push_back(c.staging);
  }
  VkSubmitInfo info{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  info.commandBufferCount = 1;
  info.pCommandBuffers = &found->cb;
  {
    std::lock_guard<std::mutex> lock(ctx.queue_mutex);
    check(vkQueueSubmit(ctx.queue, 1, &info, fence_), "vkQueueSubmit");
  }
  pending_ = true;
  in_flight_.insert(in_flight_.end(), used.begin(), used.end());
  found->last_used = ++use_clock_;
  for (const HostCopy& c : found->host_copies) {
    if (c.to_host) copies_out_.push_back(CopyOut{calls[c.call].args.outputs[c.arg]->data, c.staging, c.bytes});
  }
  if (!copies_out_.empty()) wait();
  return true;
}

void Recorder::keep_recording(std::vector<uintptr_t> key, Capture& capture, VkCommandBuffer cb,
                              const std::vector<std::shared_ptr<Allocation>>& used) {
  Recording r;
  r.key = std::move(key);
  r.cb = cb;
  r.host_copies = std::move(capture.host_copies);
  std::vector<const Allocation*> seen;
  for (const HostCopy& c : r.host_copies) {
    seen.push_back(c.staging.get());
    r.staging_bytes += c.staging->bytes;
  }
  for (const std::shared_ptr<Allocation>& a : used) {
    if (std::find(seen.begin(), seen.end(), a.get()) != seen.end()) continue;
    seen.push_back(a.get());
    r.buffers.push_back(a);
  }
  r.last_used = ++use_clock_;
  // Those whose plan or arena is gone can never run again.
  for (size_t k = recordings_.size(); k-- > 0;) {
    const std::vector<std::weak_ptr<Allocation>>& buffers = recordings_[k].buffers;
    if (std::any_of(buffers.begin(), buffers.end(), [](const std::weak_ptr<Allocation>& b) { return b.expired(); })) {
      vkFreeCommandBuffers(context()->device, pool_, 1, &recordings_[k].cb);
      recordings_.erase(recordings_.begin() + k);
    }
  }
  recordings_.push_back(std::move(r));
  // The least recently used go (never the one just submitted, the only one that may be in flight).
  size_t staging_bytes = 0;
  for (const Recording& k : recordings_) staging_bytes += k.staging_bytes;
  while (recordings_.size() > 1 && (recordings_.size() > kMaxRecordings || staging_bytes > kMaxRecordingStagingBytes)) {
    auto oldest = std::min_element(recordings_.begin(), recordings_.end(),
                                   [](const Recording& a, const Recording& b) { return a.last_used < b.last_used; });
    staging_bytes -= oldest->staging_bytes;
    vkFreeCommandBuffers(context()->device, pool_, 1, &oldest->cb);
    recordings_.erase(oldest);
  }
}

bool Recorder::run_stretch(const StepCall* calls, size_t count) {
  std::vector<uintptr_t> key = stretch_key(calls, count);
  if (replay(key, calls)) return true;
  if (open_) submit();  // work recorded before belongs to no stretch
  Capture capture{calls};
  capture_ = &capture;
  try {
    for (size_t i = 0; i < count; ++i) {
      capture.call = (uint32_t)i;
      calls[i].kernel->execute(calls[i].args, calls[i].scratch);
    }
  } catch (...) {
    // Waited for, so that nothing it uses goes before the device is done with it; not kept.
    capture_ = nullptr;
    const VkCommandBuffer partial = open_ ? cb_ : VK_NULL_HANDLE;
    try {
      wait();
    } catch (...) {
    }
    if (partial) vkFreeCommandBuffers(context()->device, pool_, 1, &partial);
    throw;
  }
  capture_ = nullptr;
  if (!open_) return false;  // nothing recorded
  const VkCommandBuffer cb = cb_;
  const std::vector<std::shared_ptr<Allocation>> used = kept_;
  submit();
  if (capture.replayable) keep_recording(std::move(key), capture, cb, used);
  if (!copies_out_.empty()) wait();
  if (!capture.replayable) {
    wait();
    vkFreeCommandBuffers(context()->device, pool_, 1, &cb);
  }
  return false;
}

void Recorder::note_host_copy(const void* host, bool to_host, const std::shared_ptr<Allocation>& staging, size_t bytes) {
  const KernelArgs& args = capture_->calls[capture_->call].args;
  const size_t n = to_host ? args.outputs.size() : args.inputs.size();
  for (size_t k = 0; k < n; ++k) {
    if ((to_host ? args.outputs[k]->data : args.inputs[k]->data) == host) {
      capture_->host_copies.push_back(HostCopy{capture_->call, (uint32_t)k, to_host, staging, bytes});
      return;
    }
  }
  capture_->replayable = false;  // a host array that is not its step's: its place at the next run is unknown
}

void Recorder::copy_from_host(void* device_dst, const void* host_src, size_t bytes) {
  if (!bytes) return;
  VkDeviceSize offset = 0;
  std::shared_ptr<Allocation> dst = allocation_at(device_dst, bytes, &offset);
  std::shared_ptr<Allocation> staging = take_staging(bytes, Memory::Upload);
  copy_host_bytes(staging->mapped, host_src, bytes);
  if (capture_) note_host_copy(host_src, false, staging, bytes);
  const VkBufferCopy region{0, offset, bytes};
  vkCmdCopyBuffer(command_buffer(Work::Transfer), staging->buffer, dst->buffer, 1, &region);
  recorded(Work::Transfer);
  keep(std::move(staging));
  keep(std::move(dst));
  if (!capture_) wait();
}

void Recorder::copy_to_host(void* host_dst, const void* device_src, size_t bytes) {
  if (!bytes) return;
  VkDeviceSize offset = 0;
  std::shared_ptr<Allocation> src = allocation_at(device_src, bytes, &offset);
  std::shared_ptr<Allocation> staging = take_staging(bytes, Memory::Readback);
  if (capture_) note_host_copy(host_dst, true, staging, bytes);
  const VkBufferCopy region{offset, 0, bytes};
  vkCmdCopyBuffer(command_buffer(Work::Transfer), src->buffer, staging->buffer, 1, &region);
  recorded(Work::Transfer);
  keep(src);
  keep(staging);
  copies_out_.push_back(CopyOut{host_dst, staging, bytes});
  if (!capture_) wait();
}

}  // namespace vulkan
}  // namespace mnnpy
