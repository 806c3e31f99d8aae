// TopK on Vulkan (shaders/topk.comp): float32 along any axis, a workgroup per row sorting in
// shared memory, values and int64 indices in the CPU kernel's order. The output is sorted best
// first whatever `sorted` says (unsorted output may come in any order). Other dtypes, and rows
// longer than the shared buffer whose k leaves no room in it for a tile of candidates, stay on
// the CPU.
#include <algorithm>

#include "backend/vulkan/vulkan_pipelines.h"
#include "backend/vulkan/vulkan_shapes.h"

namespace mnnpy {
namespace vulkan {

namespace {

const uint32_t kTopKSpirv[] =
#include "backend/vulkan/shaders/topk.spv.inc"
    ;

constexpr uint32_t kPerLane = 4;  // the shader's elements per invocation in a tile
constexpr uint32_t kMinWorkgroup = 32, kMaxWorkgroup = 256;
// The shared buffer holds at most this many (key, index) pairs: larger buffers sort less often
// on long rows but hold fewer workgroups per multiprocessor.
constexpr uint32_t kMaxCapacity = 8192;

// The largest buffer (a power of two) the device's shared memory holds beside the counter.
uint32_t capacity_for_device() {
  uint32_t capacity = kMaxCapacity;
  while (capacity > 1 && (uint64_t)capacity * 8 + 16 > device_info().max_shared_memory) capacity /= 2;
  return capacity;
}

class TopKKernel : public VulkanKernel {
 public:
  TopKKernel(uint32_t rows, uint32_t n, uint32_t inner, uint32_t k, uint32_t workgroup, uint32_t capacity, bool largest)
      : push_{rows, n, inner, k},
        pipeline_(pipeline_for(kTopKSpirv, sizeof(kTopKSpirv), 3, sizeof(push_), {workgroup, capacity, largest ? 1u : 0u})) {}

  void execute(const KernelArgs& args, void*) const override {
    if (push_[0] == 0 || push_[3] == 0) return;
    const Tensor& values = *args.outputs[0];
    const Tensor& indices = *args.outputs[1];
    const Tensor& x = *args.inputs[0];
    const GroupGrid grid = group_grid(push_[0]);
    pipeline_->dispatch({resolve(values.data, values.nbytes()), resolve(indices.data, indices.nbytes()),
                         resolve(x.data, x.nbytes())},
                        push_, grid.x, grid.y);
  }

 private:
  uint32_t push_[4];  // rows, n, inner, k (shaders/topk.comp)
  std::shared_ptr<Pipeline> pipeline_;
};

std::unique_ptr<Kernel> make_topk_kernel(const KernelContext& ctx) {
  const TensorType& x = ctx.input_types[0];
  // Element indices are uint32 in the shader; int64 indices are two words of the output.
  if (x.dtype != DType::Float32 || (uint64_t)x.numel() > INT32_MAX || (uint64_t)ctx.output_types[1].numel() * 2 > UINT32_MAX) {
    return nullptr;
  }
  const int64_t axis = ctx.attrs.get_int("axis");
  const int64_t n = x.shape[axis], k = ctx.attrs.get_int("k");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < (int64_t)x.shape.size(); ++d) {
    if (d < axis) outer *= x.shape[d];
    if (d > axis) inner *= x.shape[d];
  }
  const uint32_t capacity = capacity_for_device();
  // Invocations: one per pair a sorting stage compares, up to 256 (a row within the buffer is
  // one sort of its next power of two).
  uint32_t workgroup = kMinWorkgroup;
  while (workgroup < kMaxWorkgroup && (int64_t)workgroup * 2 < std::min<int64_t>(n, capacity)) workgroup *= 2;
  // A tile of candidates must fit the buffer, and for a longer row, fit beside the k kept with k
  // at most half the buffer.
  const int64_t tile = kPerLane * workgroup;
  if (std::min(n, tile) > capacity || (n > capacity && (k > capacity / 2 || k + tile > capacity))) return nullptr;
  return new_kernel<TopKKernel>((uint32_t)(outer * inner), (uint32_t)n, (uint32_t)inner, (uint32_t)k, workgroup, capacity,
                                ctx.attrs.get_int("largest") != 0);
}

MNNPY_REGISTER_KERNEL("TopK", "vulkan", make_topk_kernel);

}  // namespace

}  // namespace vulkan
}  // namespace mnnpy
