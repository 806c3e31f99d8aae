// This thread's recording of Vulkan work: one command buffer open from the first command of a
// stretch to its submission, the buffers that work uses (kept alive until it is waited for),
// and the fence of the submitted work.
#pragma once
#include <memory>
#include <vector>

#include "backend/vulkan/vulkan_context.h"

namespace mnnpy {
namespace vulkan {

class Recorder {
 public:
  static Recorder& current();  // this thread's
  ~Recorder();

  // What a recorded command is: a compute dispatch or a transfer (copy, fill).
  enum class Work { Compute, Transfer };
  // The open command buffer, ready for a command of kind `next`: opens one (after waiting for
  // earlier work) when none is, and puts a barrier after the commands recorded since the last
  // one, whose stages are theirs and `next`'s only (a GPU drains only those).
  VkCommandBuffer command_buffer(Work next);
  // Notes that a command of kind `done` was recorded: the next command waits for it and sees
  // its writes.
  void recorded(Work done);
  // Keeps `allocation` alive until the work recorded so far has been waited for.
  void keep(std::shared_ptr<Allocation> allocation);
  // Ends and submits what is recorded, without waiting (nothing when nothing is recorded).
  void submit();
  // Submits what is recorded and waits for all submitted work; raises the validation layer's
  // errors, if any.
  void wait();
  // Backend::synchronize: wait(), but nothing inside a stretch, whose copies out are finished
  // when it ends (a copy out of a stretch synchronizes before copying).
  void synchronize() {
    if (!capture_) wait();
  }

  // Host <-> device copies. Into the device: staged and recorded in order with the rest (and
  // submitted at once when no stretch is being recorded). Out: after everything before it; in a
  // stretch, recorded with it and finished (the bytes in host_dst) when the stretch is waited
  // for, so that a stretch and the copies of its results take one submission.
  void copy_from_host(void* device_dst, const void* host_src, size_t bytes);
  void copy_to_host(void* host_dst, const void* device_src, size_t bytes);

  // Seconds between the first and the last command of the last command buffer waited for, by
  // the device's timestamps; -1 where the queue has none.
  double last_seconds() const { return last_seconds_; }
  // The sum of last_seconds() over every command buffer waited for on this thread.
  double seconds_waited() const { return seconds_waited_; }

  // Runs a stretch of a plan's steps (Backend::run_steps): what they record is submitted once, at
  // the end, and waited for there only when it copies results out. Its first run on this thread
  // records the commands and keeps them; a later run of the same kernels on the same device
  // buffers submits them again, redoing only the host's side of its copies (the host arrays may
  // differ from run to run). Returns whether it replayed.
  bool run_stretch(const StepCall* calls, size_t count);

 private:
  VkCommandPool pool_ = VK_NULL_HANDLE;  // this thread's: a pool's buffers are recorded by one thread at a time
  VkCommandBuffer one_time_cb_ = VK_NULL_HANDLE;  // for work outside stretches, recorded anew each time
  VkCommandBuffer cb_ = VK_NULL_HANDLE;  // the one being recorded: one_time_cb_ or a stretch's own
  VkFence fence_ = VK_NULL_HANDLE;  // of the one submission in flight (each waits for the one before)
  VkQueryPool timestamps_ = VK_NULL_HANDLE;  // two per command buffer: its start and its end
  double last_seconds_ = -1, seconds_waited_ = 0;
  bool open_ = false, pending_ = false;
  // Stages of the commands recorded since the last barrier.
  VkPipelineStageFlags unsynchronized_stages_ = 0;
  void create_objects();
  void open();
  // A barrier from the unsynchronized commands to stages `stages` with accesses `access`.
  void barrier_to(VkPipelineStageFlags stages, VkAccessFlags access);
  std::vector<std::shared_ptr<Allocation>> kept_;       // used by the open recording
  std::vector<std::shared_ptr<Allocation>> in_flight_;  // used by the submitted work
  // Copies out recorded in a stretch, finished by the next wait().
  struct CopyOut {
    void* host_dst;
    std::shared_ptr<Allocation> staging;
    size_t bytes;
  };
  std::vector<CopyOut> copies_out_;
  // Host-visible staging buffers free for the next copies: allocating device memory for every
  // copy cost more than the copy of a small tensor.
  std::vector<std::shared_ptr<Allocation>> spare_staging_;
  size_t spare_bytes_ = 0;
  std::shared_ptr<Allocation> take_staging(size_t bytes, Memory kind);

  // A copy between a host array of a stretch's step and a staging buffer of its recording: the
  // step's input `arg` into the device, or its output `arg` out of it.
  struct HostCopy {
    uint32_t call, arg;
    bool to_host;
    std::shared_ptr<Allocation> staging;
    size_t bytes;
  };
  // A stretch's commands as recorded at its first run.
  struct Recording {
    std::vector<uintptr_t> key;  // stretch_key() of its steps
    VkCommandBuffer cb = VK_NULL_HANDLE;
    // The device buffers its commands use: a plan's, which it must not keep alive (a key that
    // matches names live buffers, as addresses never repeat; checked anyway).
    std::vector<std::weak_ptr<Allocation>> buffers;
    std::vector<HostCopy> host_copies;  // in order; their staging buffers are the recording's own
    size_t staging_bytes = 0;
    uint64_t last_used = 0;
  };
  // The stretch being recorded, while its kernels run.
  struct Capture {
    const StepCall* calls;
    uint32_t call = 0;  // the step running now
    bool replayable = true;  // false once a copy's host side is not an array of its step
    std::vector<HostCopy> host_copies;
  };
  std::vector<Recording> recordings_;
  Capture* capture_ = nullptr;  // set while a stretch runs
  uint64_t use_clock_ = 0;
  // What identifies a stretch's commands: per step, its kernel's serial, scratch and device
  // buffers (host arrays only by position).
  void note_host_copy(const void* host, bool to_host, const std::shared_ptr<Allocation>& staging, size_t bytes);
  static std::vector<uintptr_t> stretch_key(const StepCall* calls, size_t count);
  bool replay(const std::vector<uintptr_t>& key, const StepCall* calls);
  void keep_recording(std::vector<uintptr_t> key, Capture& capture, VkCommandBuffer cb,
                      const std::vector<std::shared_ptr<Allocation>>& used);
};

}  // namespace vulkan
}  // namespace mnnpy
