// Gather on Vulkan (shaders/gather.comp): indices read on the device, so indices computed at run
// time (token ids into an embedding) run here too; constant ones as well, in one dispatch where
// the Raster decomposition would have a region per index. Every dtype: copied as words where a
// slab (the elements after the axis) is whole words, else byte by byte (bools, 1- and 2-byte
// dtypes); int32 and int64 indices (other index dtypes stay on the CPU). An index out of range
// gives zeros as the CPU kernel's does (cpu::gather): a kernel cannot raise on what the device
// finds, and the CPU raises nothing either.
#include <algorithm>

#include "backend/vulkan/vulkan_pipelines.h"
#include "mnnpy/dtype.h"

namespace mnnpy {
namespace vulkan {

namespace {

const uint32_t kGatherSpirv[] =
#include "backend/vulkan/shaders/gather.spv.inc"
    ;

// The grid's size: each invocation loops over every (256 * kMaxGroups)-th word, so word (and
// byte) indices stay below 2^31 + 2^23 and never wrap.
constexpr uint32_t kMaxGroups = 8192;

class GatherKernel : public VulkanKernel {
 public:
  // `narrow`: units are bytes (slabs that are not whole words), else words.
  GatherKernel(uint32_t index_words, bool narrow, uint32_t units, uint32_t slab_units, uint32_t num_index, uint32_t n)
      : push_{units, slab_units, num_index, n}, words_(narrow ? (units + 3) / 4 : units),
        pipeline_(pipeline_for(kGatherSpirv, sizeof(kGatherSpirv), 3, sizeof(push_), {index_words, narrow ? 1u : 0u})) {}

  void execute(const KernelArgs& args, void*) const override {
    if (push_[0] == 0) return;
    const Tensor& out = *args.outputs[0];
    const Tensor& x = *args.inputs[0];
    const Tensor& index = *args.inputs[1];
    pipeline_->dispatch({resolve_words(out.data, out.nbytes()), resolve_words(x.data, x.nbytes()),
                         resolve(index.data, index.nbytes())},
                        push_, std::min(groups_for(words_, 256), kMaxGroups));
  }

 private:
  uint32_t push_[4];  // units, slab_units, num_index, n (shaders/gather.comp)
  uint32_t words_;    // of the output
  std::shared_ptr<Pipeline> pipeline_;
};

std::unique_ptr<Kernel> make_gather_kernel(const KernelContext& ctx) {
  const TensorType& x = ctx.input_types[0];
  const DType index_dtype = ctx.input_types[1].dtype;
  const size_t elem_size = dtype_size(x.dtype);
  if (index_dtype != DType::Int32 && index_dtype != DType::Int64) return nullptr;
  const int64_t axis = ctx.attrs.get_int("axis");
  const int64_t n = x.shape[axis];
  int64_t inner = 1;
  for (size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  const int64_t slab_bytes = inner * (int64_t)elem_size;
  const bool narrow = slab_bytes % 4 != 0;
  const int64_t unit = narrow ? 1 : 4;  // bytes
  // Unit offsets are below 2^31 in the shader (int arithmetic on positions).
  if (x.numel() * (int64_t)elem_size / unit > INT32_MAX || ctx.output_types[0].nbytes() / unit > INT32_MAX ||
      ctx.input_types[1].numel() > INT32_MAX) {
    return nullptr;
  }
  return new_kernel<GatherKernel>((uint32_t)(dtype_size(index_dtype) / 4), narrow,
                                  (uint32_t)(ctx.output_types[0].nbytes() / unit), (uint32_t)(slab_bytes / unit),
                                  (uint32_t)ctx.input_types[1].numel(), (uint32_t)n);
}

MNNPY_REGISTER_KERNEL("Gather", "vulkan", make_gather_kernel);

}  // namespace

}  // namespace vulkan
}  // namespace mnnpy
