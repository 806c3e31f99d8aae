// The Vulkan backend: compute shaders on the device found at first use (a GPU, or lavapipe on
// the CPU), listed only where one was found. Kernels register per op under "vulkan"
// (MNNPY_REGISTER_KERNEL) and say per node whether they can run it by returning null; the
// elementwise program runs through its own kernel. A stretch of steps is recorded into one
// command buffer at its first run and submitted once per run.
#include <map>
#include <mutex>

#include "backend/vulkan/elementwise_kernel.h"
#include "runtime/fused_elementwise.h"  // prepare_elementwise_program
#include "backend/vulkan/vulkan_pipelines.h"
#include "backend/vulkan/vulkan_recorder.h"

namespace mnnpy {
namespace vulkan {

std::shared_ptr<Pipeline> pipeline_for(const uint32_t* spirv, size_t spirv_bytes, uint32_t bindings, uint32_t push_bytes,
                                       const std::vector<uint32_t>& specialization) {
  using Key = std::tuple<const uint32_t*, uint32_t, uint32_t, std::vector<uint32_t>>;
  // Kept for the process, as the device is (never destroyed at exit).
  static std::mutex mutex;
  static auto& cache = *new std::map<Key, std::shared_ptr<Pipeline>>();
  std::lock_guard<std::mutex> lock(mutex);
  std::shared_ptr<Pipeline>& entry = cache[Key{spirv, bindings, push_bytes, specialization}];
  if (!entry) entry = std::make_shared<Pipeline>(spirv, spirv_bytes, bindings, push_bytes, specialization);
  return entry;
}

void record_fill(const void* data, size_t bytes, uint32_t fill_word) {
  if (!bytes) return;
  const BufferRange b = resolve(data, bytes);
  Recorder& recorder = Recorder::current();
  vkCmdFillBuffer(recorder.command_buffer(Recorder::Work::Transfer), b.buffer, b.offset, b.bytes, fill_word);
  recorder.recorded(Recorder::Work::Transfer);
}

namespace {

class VulkanBackend : public Backend {
 public:
  VulkanBackend() {
    caps_.dtypes = {DType::Float32, DType::Int32, DType::Int64, DType::Bool};
    caps_.channel_block = 4;  // C4, as MNN's GPU backends; models run NCHW here (no blocked kernels)
    caps_.fp16 = false;
    caps_.host_memory = false;
  }
  const std::string& name() const override { return name_; }
  // The device is looked for the first time backends are listed (MNNPY_NO_VULKAN=1: never).
  bool available() const override { return context() != nullptr; }
  std::string description() const override {
    if (!context()) return "not available: " + unavailable_reason();
    const DeviceInfo& d = device_info();
    std::string coopmat;
    for (const CoopMatShape& s : d.coopmat_f16) {
      coopmat += (coopmat.empty() ? ", float16 cooperative matrices " : " ") + std::to_string(s.m) + "x" +
                 std::to_string(s.n) + "x" + std::to_string(s.k);
    }
    return d.name + " (subgroup " + std::to_string(d.subgroup_size) + ", " + std::to_string(d.max_shared_memory / 1024) +
           " KiB shared memory, " + std::to_string(d.max_storage_buffer_range >> 20) + " MiB per binding, " +
           std::to_string(d.device_memory >> 20) + " MiB device memory" + (context()->float64 ? ", float64" : "") +
           (d.float16 ? ", float16" : "") + coopmat + ")";
  }
  const BackendCapabilities& capabilities() const override {
    std::call_once(memory_once_, [this] { caps_.memory_bytes = context() ? device_info().device_memory : 0; });
    return caps_;
  }

  std::shared_ptr<void> allocate(size_t bytes) const override { return allocate_device_buffer(bytes); }
  void copy_from_host(void* device_dst, const void* host_src, size_t bytes) const override {
    Recorder::current().copy_from_host(device_dst, host_src, bytes);
  }
  void copy_to_host(void* host_dst, const void* device_src, size_t bytes) const override {
    Recorder::current().copy_to_host(host_dst, device_src, bytes);
  }
  void synchronize() const override { Recorder::current().synchronize(); }
  double last_stretch_seconds() const override { return Recorder::current().last_seconds(); }
  double device_seconds_waited() const override { return Recorder::current().seconds_waited(); }

  bool run_steps(const StepCall* calls, size_t count) const override {
    return Recorder::current().run_stretch(calls, count);
  }

  // A node runs here where a kernel is registered for its op, every tensor fits one binding, and
  // the kernel takes this instance (its factory returns null otherwise).
  bool supports(const OpDef& op, const KernelContext& ctx) const override {
    const KernelFactory* factory = find_kernel(op.name, name_);
    if (!factory || !fits_bindings(ctx.input_types, ctx.output_types)) return false;
    return (*factory)(ctx) != nullptr;
  }
  std::unique_ptr<Kernel> make_kernel(const OpDef& op, const KernelContext& ctx) const override {
    return (*find_kernel(op.name, name_))(ctx);
  }
  std::unique_ptr<Kernel> make_elementwise_kernel(const std::vector<EwInstr>& program,
                                                  const std::vector<TensorType>& input_types,
                                                  const TensorType& output_type) const override {
    if (!fits_bindings(input_types, {output_type})) return nullptr;
    return vulkan::make_elementwise_kernel(prepare_elementwise_program(program), input_types, output_type);
  }

 private:
  // Whether every tensor fits one storage-buffer binding.
  static bool fits_bindings(const std::vector<TensorType>& inputs, const std::vector<TensorType>& outputs) {
    const uint64_t limit = device_info().max_storage_buffer_range;
    for (const auto* types : {&inputs, &outputs}) {
      for (const TensorType& t : *types) if (t.nbytes() > limit) return false;
    }
    return true;
  }

  const std::string name_ = "vulkan";
  mutable BackendCapabilities caps_;
  mutable std::once_flag memory_once_;
};

const std::shared_ptr<VulkanBackend> g_backend = std::make_shared<VulkanBackend>();
MNNPY_REGISTER_BACKEND(g_backend);

}  // namespace

}  // namespace vulkan
}  // namespace mnnpy
