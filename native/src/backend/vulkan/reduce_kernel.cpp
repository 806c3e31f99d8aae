// Reduce on Vulkan: float32 sum, prod, min, max, argmin and argmax (int64 out). Other dtypes and
// any/all stay on the CPU. Each output takes a segment of a workgroup (shaders/reduce.comp): the
// whole workgroup where rows are long and outputs too few to keep the device busy one invocation
// each, or outputs very few; for contiguous rows of at least 64, about one invocation per 8 of
// their elements (a softmax's rows of 128: 16); one invocation otherwise.
#include "backend/vulkan/vulkan_pipelines.h"
#include "backend/vulkan/vulkan_shapes.h"
#include "ops/reduce_kind.h"

namespace mnnpy {
namespace vulkan {

namespace {

const uint32_t kReduceSpirv[] =
#include "backend/vulkan/shaders/reduce.spv.inc"
    ;

constexpr uint32_t kWorkgroup = 256;
constexpr int64_t kTreeRow = 64, kManyOutputs = 16384, kFewOutputs = 256;

uint32_t segment_per_output(const ReducedRun& run) {
  const int64_t outputs = run.outer * run.inner;
  if (run.n > 1 && (outputs < kFewOutputs || (run.n >= kTreeRow && outputs < kManyOutputs))) return kWorkgroup;
  // Contiguous rows are read together by a segment each (consecutive invocations, consecutive
  // addresses); one invocation per row would read them a row apart. Strided rows are read
  // together by the invocations of neighbouring outputs.
  if (run.inner == 1 && run.n >= kTreeRow) {
    uint32_t segment = 1;
    while (segment < kWorkgroup && (int64_t)segment * 8 < run.n) segment *= 2;
    return segment;
  }
  return 1;
}

class ReduceKernel : public VulkanKernel {
 public:
  ReduceKernel(int kind, const ReducedRun& run)
      : outputs_((uint64_t)(run.outer * run.inner)), n_((uint32_t)run.n), inner_((uint32_t)run.inner),
        segment_(segment_per_output(run)),
        pipeline_(pipeline_for(kReduceSpirv, sizeof(kReduceSpirv), 2, 3 * sizeof(uint32_t), {(uint32_t)kind, segment_})) {}

  void execute(const KernelArgs& args, void*) const override {
    if (outputs_ == 0) return;
    const Tensor& in = *args.inputs[0];
    const Tensor& out = *args.outputs[0];
    const uint32_t push[3] = {(uint32_t)outputs_, n_, inner_};
    const GroupGrid grid = group_grid(groups_for(outputs_, kWorkgroup / segment_));
    pipeline_->dispatch({resolve(out.data, out.nbytes()), resolve(in.data, in.nbytes())}, push, grid.x, grid.y);
  }

 private:
  uint64_t outputs_;
  uint32_t n_, inner_;
  uint32_t segment_;  // invocations per output
  std::shared_ptr<Pipeline> pipeline_;
};

std::unique_ptr<Kernel> make_reduce_kernel(const KernelContext& ctx) {
  const int kind = (int)ctx.attrs.get_int("kind");
  if (kind != kReduceSum && kind != kReduceProd && kind != kReduceMin && kind != kReduceMax && kind != kReduceArgMin &&
      kind != kReduceArgMax) {
    return nullptr;
  }
  const TensorType& in = ctx.input_types[0];
  // Element indices are uint32 in the shader.
  if (in.dtype != DType::Float32 || (uint64_t)in.numel() > UINT32_MAX || (uint64_t)ctx.output_types[0].numel() * 2 > UINT32_MAX) {
    return nullptr;
  }
  const ReducedRun run = reduced_run(in.shape, ctx.attrs.get_int("first"), ctx.attrs.get_int("count"));
  return new_kernel<ReduceKernel>(kind, run);
}

MNNPY_REGISTER_KERNEL("Reduce", "vulkan", make_reduce_kernel);

}  // namespace

}  // namespace vulkan
}  // namespace mnnpy
