// LayerNorm on Vulkan (shaders/layer_norm.comp): float32, one workgroup per normalized row, with
// gamma and beta where the node has them. With this kernel the plan has one LayerNorm step where
// the lowering would otherwise decompose it into two mean reductions and elementwise programs
// (ops/norm.cpp), each reading the whole tensor.
#include <algorithm>

#include "backend/vulkan/vulkan_pipelines.h"
#include "backend/vulkan/vulkan_shapes.h"

namespace mnnpy {
namespace vulkan {

namespace {

const uint32_t kLayerNormSpirv[] =
#include "backend/vulkan/shaders/layer_norm.spv.inc"
    ;

constexpr uint32_t kMinWorkgroup = 32, kMaxWorkgroup = 256;

// Invocations per row: enough for every invocation to have a few elements (4 to 8) of a short
// row, a whole subgroup at least, and 256 for rows of 1024 and more.
uint32_t workgroup_for(int64_t d) {
  uint32_t size = kMinWorkgroup;
  while (size < kMaxWorkgroup && (int64_t)size * 8 < d) size *= 2;
  return size;
}

class LayerNormKernel : public VulkanKernel {
 public:
  LayerNormKernel(uint32_t rows, uint32_t d, float epsilon, uint32_t workgroup, bool gamma, bool beta)
      : push_{rows, d, epsilon},
        pipeline_(pipeline_for(kLayerNormSpirv, sizeof(kLayerNormSpirv), 4, sizeof(Push),
                               {workgroup, gamma ? 1u : 0u, beta ? 1u : 0u})) {}

  void execute(const KernelArgs& args, void*) const override {
    if (push_.rows == 0 || push_.d == 0) return;
    std::vector<BufferRange> buffers{resolve(args.outputs[0]->data, args.outputs[0]->nbytes())};
    for (size_t k = 0; k < 3; ++k) {
      buffers.push_back(k < args.inputs.size() ? resolve(args.inputs[k]->data, args.inputs[k]->nbytes()) : BufferRange{});
    }
    const GroupGrid grid = group_grid(push_.rows);
    pipeline_->dispatch(buffers, &push_, grid.x, grid.y);
  }

 private:
  struct Push {
    uint32_t rows, d;
    float epsilon;
  } push_;
  std::shared_ptr<Pipeline> pipeline_;
};

std::unique_ptr<Kernel> make_layer_norm_kernel(const KernelContext& ctx) {
  const TensorType& x = ctx.input_types[0];
  // Element indices are uint32 in the shader (the op's inference checked the dtypes).
  if ((uint64_t)x.numel() > INT32_MAX) return nullptr;
  const int64_t axis = ctx.attrs.get_int("axis");
  int64_t rows = 1, d = 1;
  for (size_t i = 0; i < x.shape.size(); ++i) ((int64_t)i < axis ? rows : d) *= x.shape[i];
  const size_t inputs = ctx.input_types.size();
  return new_kernel<LayerNormKernel>((uint32_t)rows, (uint32_t)d, (float)ctx.attrs.get_float("epsilon"),
                                     workgroup_for(d), inputs > 1, inputs > 2);
}

MNNPY_REGISTER_KERNEL("LayerNorm", "vulkan", make_layer_norm_kernel);

}  // namespace

}  // namespace vulkan
}  // namespace mnnpy
