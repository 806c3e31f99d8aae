// The Vulkan backend's device and the tools its kernels record with. The loader is opened at run
// time (volk), so the core imports on machines without Vulkan; the backend is listed only where
// a device with compute queues and push descriptors was found.
//
// Buffers: every Backend::allocate() is one VkBuffer of device memory, handed out as an address
// range nothing reads directly; `resolve` maps an address inside it back to (buffer, offset), so
// the executor's arena sub-allocations work as on the host.
//
// Recording: Backend::run_steps opens one command buffer, each kernel's execute() records its
// dispatches into it (`Recorder::current()`), copies into the device record a staging copy, and
// the stretch is submitted once; later runs of the same stretch submit the same buffer again.
// synchronize() waits for it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <volk.h>

#include "mnnpy/backend.h"

namespace mnnpy {
namespace vulkan {

// A shape M x N x K that a subgroup multiplies as one cooperative matrix operation.
struct CoopMatShape {
  uint32_t m, n, k;
};

struct DeviceInfo {
  std::string name;
  uint32_t subgroup_size = 0;
  uint32_t max_shared_memory = 0;       // bytes per workgroup
  uint64_t max_storage_buffer_range = 0;  // bytes one binding may cover
  uint64_t device_memory = 0;           // bytes of the largest device-local heap
  bool gpu = false;                     // a discrete or integrated GPU (not a CPU implementation)
  bool float16 = false;                 // shaderFloat16 enabled: shaders may use float16_t
  // The shapes of float16 x float16 + float32 -> float32 cooperative matrix products a subgroup
  // makes in compute shaders (VK_NV_cooperative_matrix, enabled with the Vulkan memory model);
  // empty where the device has none, or with MNNPY_VULKAN_COOPMAT=0.
  std::vector<CoopMatShape> coopmat_f16;
};

// The process's device and queue, made on first use.
struct Context {
  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory{};
  VkDevice device = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  VkQueue queue = VK_NULL_HANDLE;
  std::mutex queue_mutex;  // vkQueueSubmit needs the queue to itself
  VkPipelineCache pipeline_cache = VK_NULL_HANDLE;
  bool float64 = false;  // shaderFloat64: MulAdd rounds once through it
  bool int64 = false;    // shaderInt64: elementwise programs with int64 values
  double timestamp_period = 0;  // nanoseconds per timestamp tick; 0 where the queue has no timestamps
  // Bound where a dispatch has no bytes to bind; made on first use (after the context).
  std::unique_ptr<class ParamBuffer> placeholder;
  std::once_flag placeholder_once;
  // With MNNPY_VULKAN_VALIDATION set, the validation layer's errors are collected here and
  // raised at the next synchronization.
  bool validation = false;
  std::mutex errors_mutex;
  int validation_errors = 0;
  std::string first_validation_error;

  ~Context();
  // The first allowed type with all of `want` and none of `avoid`, else the first with `want`.
  uint32_t memory_type(uint32_t allowed, VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid = 0) const;
  struct BufferRange placeholder_range();
  void note_validation_error(const char* message);
  std::string take_validation_error();  // "" when there was none
};
// Raises std::runtime_error naming `what` where a Vulkan call did not succeed.
void check(VkResult result, const char* what);

// Null when this machine has no usable device (why: `unavailable_reason`).
Context* context();
const std::string& unavailable_reason();
const DeviceInfo& device_info();  // only when context() is not null
// Whether the process is exiting (std::exit has begun): the driver may already have torn itself
// down, so destructors leave Vulkan objects to the OS instead of destroying them.
bool process_exiting();

// Where an Allocation's memory is: the device's, or the host's, mapped, for copies into the
// device (written by the host; write-combined is fine) or out of it (read by the host: cached).
// Host memory is never the device's own memory mapped across the bus, which the host reaches slowly.
enum class Memory { Device, Upload, Readback };

// One VkBuffer with its own memory.
struct Allocation {
  Allocation(size_t bytes, Memory memory);
  ~Allocation();
  Allocation(const Allocation&) = delete;
  Allocation& operator=(const Allocation&) = delete;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  size_t bytes;
  Memory kind;
  void* mapped = nullptr;  // host memory
};

// Backend::allocate: a device buffer behind an address range of its own.
std::shared_ptr<void> allocate_device_buffer(size_t bytes);
// The buffer holding [data, data + bytes) and the offset of data in it; throws std::logic_error
// for an address outside every live buffer.
std::shared_ptr<Allocation> allocation_at(const void* data, size_t bytes, VkDeviceSize* offset);

// Whether `data` is inside a live device buffer (not host memory).
bool is_device_address(const void* data);

// A storage-buffer binding: a tensor's bytes.
struct BufferRange {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0, bytes = 0;
};
// The buffer and offset of `bytes` bytes at address `data` of a backend buffer; throws
// std::logic_error for an address outside every live buffer.
BufferRange resolve(const void* data, size_t bytes);

// resolve() for a tensor that shaders read or write as 32-bit words, its bytes rounded up to whole
// words: the executor places device tensors at 64-byte offsets in blocks of 64-byte multiples, so
// the rest of a last partial word is the tensor's own padding.
inline BufferRange resolve_words(const void* data, size_t bytes) { return resolve(data, (bytes + 3) & ~size_t(3)); }

// A compute pipeline: one shader taking `bindings` storage buffers (binding k = k) and
// `push_bytes` of push constants, made once (per kernel, at plan time).
class Pipeline {
 public:
  Pipeline(const uint32_t* spirv, size_t spirv_bytes, uint32_t bindings, uint32_t push_bytes,
           const std::vector<uint32_t>& specialization = {});
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Records one dispatch of `groups` workgroups with `buffers` bound (one per binding, in order;
  // zero-byte ones are bound to a placeholder) and `push` as the push constants; the next command
  // recorded waits for it and sees its writes (Recorder::command_buffer).
  void dispatch(const std::vector<BufferRange>& buffers, const void* push, uint32_t groups_x, uint32_t groups_y = 1,
                uint32_t groups_z = 1) const;

 private:
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  uint32_t bindings_, push_bytes_;
};

// A small buffer of parameters a kernel keeps from plan to run (index tables, programs): device
// memory, uploaded when made (the upload is waited for, unless recorded inside a stretch, where it
// precedes the dispatches that follow), bound like a tensor.
class ParamBuffer {
 public:
  ParamBuffer(const void* data, size_t bytes);
  ~ParamBuffer();
  ParamBuffer(const ParamBuffer&) = delete;
  ParamBuffer& operator=(const ParamBuffer&) = delete;
  BufferRange range() const { return range_; }
  size_t bytes() const { return bytes_; }

 private:
  std::shared_ptr<void> device_;
  BufferRange range_;
  size_t bytes_;
};

// Workgroups of `size` invocations covering `n` items: ceil(n / size), at least 1.
uint32_t groups_for(uint64_t n, uint32_t size);

// A kernel of this backend: records its work in execute() (called only inside run_steps).
class VulkanKernel : public Kernel {
 public:
  const char* scheme() const override { return "vulkan"; }
};

// Records `fill_word` repeated over `bytes` bytes at `data` (a multiple of 4 bytes).
void record_fill(const void* data, size_t bytes, uint32_t fill_word);

}  // namespace vulkan
}  // namespace mnnpy
