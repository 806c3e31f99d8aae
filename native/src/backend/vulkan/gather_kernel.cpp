// Gather on Vulkan (shaders/gather.comp): indices read on the device, so indices computed at run
// time (token ids into an embedding) run here too; constant ones as well, in one dispatch where
// the Raster decomposition would have a region per index. 4- and 8-byte dtypes, copied as
// words; int32 and int64 indices (other index dtypes and element sizes stay on the CPU). An index
// out of range gives zeros as the CPU kernel's does (cpu::gather): a kernel cannot raise on what
// the device finds, and the CPU raises nothing either.
#include <algorithm>

#include "backend/vulkan/vulkan_pipelines.h"
#include "mnnpy/dtype.h"

namespace mnnpy {
namespace vulkan {

namespace {

const uint32_t kGatherSpirv[] =
#include "backend/vulkan/shaders/gather.spv.inc"
    ;

// The grid's size: each invocation loops over every (256 * kMaxGroups)-th word, so word indices
// stay below 2^31 + 2^21 and never wrap.
constexpr uint32_t kMaxGroups = 8192;

class GatherKernel : public VulkanKernel {
 public:
  GatherKernel(uint32_t index_words, uint32_t words, uint32_t slab_words, uint32_t num_index, uint32_t n)
      : push_{words, slab_words, num_index, n},
        pipeline_(pipeline_for(kGatherSpirv, sizeof(kGatherSpirv), 3, sizeof(push_), {index_words})) {}

  void execute(const KernelArgs& args, void*) const override {
    if (push_[0] == 0) return;
    const Tensor& out = *args.outputs[0];
    const Tensor& x = *args.inputs[0];
    const Tensor& index = *args.inputs[1];
    pipeline_->dispatch({resolve(out.data, out.nbytes()), resolve(x.data, x.nbytes()), resolve(index.data, index.nbytes())},
                        push_, std::min(groups_for(push_[0], 256), kMaxGroups));
  }

 private:
  uint32_t push_[4];  // words, slab_words, num_index, n (shaders/gather.comp)
  std::shared_ptr<Pipeline> pipeline_;
};

std::unique_ptr<Kernel> make_gather_kernel(const KernelContext& ctx) {
  const TensorType& x = ctx.input_types[0];
  const DType index_dtype = ctx.input_types[1].dtype;
  const size_t elem_size = dtype_size(x.dtype);
  if ((elem_size != 4 && elem_size != 8) || (index_dtype != DType::Int32 && index_dtype != DType::Int64)) return nullptr;
  const int64_t axis = ctx.attrs.get_int("axis");
  const int64_t n = x.shape[axis];
  int64_t inner = 1;
  for (size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  const int64_t words_per_elem = (int64_t)elem_size / 4;
  const int64_t out_words = ctx.output_types[0].numel() * words_per_elem;
  // Word offsets are below 2^31 in the shader (int arithmetic on positions).
  if (x.numel() * words_per_elem > INT32_MAX || out_words > INT32_MAX || ctx.input_types[1].numel() > INT32_MAX) {
    return nullptr;
  }
  return new_kernel<GatherKernel>((uint32_t)(dtype_size(index_dtype) / 4), (uint32_t)out_words,
                                  (uint32_t)(inner * words_per_elem), (uint32_t)ctx.input_types[1].numel(), (uint32_t)n);
}

MNNPY_REGISTER_KERNEL("Gather", "vulkan", make_gather_kernel);

}  // namespace

}  // namespace vulkan
}  // namespace mnnpy
