// CPU kernels of LayerNorm and LayerNormGrad (ops/norm.cpp): rows are the leading axes before
// `axis`, each normalized over the trailing ones.
#include <memory>

#include "backend/cpu/layer_norm.h"
#include "backend/cpu/layer_norm_grad.h"
#include "mnnpy/backend.h"

namespace mnnpy {

namespace {

class LayerNormKernel : public Kernel {
 public:
  explicit LayerNormKernel(const KernelContext& ctx) {
    const Shape& x = ctx.input_types[0].shape;
    const int64_t axis = ctx.attrs.get_int("axis");
    for (size_t i = 0; i < x.size(); ++i) ((int64_t)i < axis ? rows_ : dim_) *= x[i];
    epsilon_ = (float)ctx.attrs.get_float("epsilon");
  }
  void execute(const KernelArgs& args, void*) const override {
    const float* gamma = args.inputs.size() > 1 ? args.inputs[1]->ptr<float>() : nullptr;
    const float* beta = args.inputs.size() > 2 ? args.inputs[2]->ptr<float>() : nullptr;
    if (dim_ == 0) return;
    cpu::layer_norm(args.inputs[0]->ptr<float>(), gamma, beta, rows_, dim_, epsilon_, args.outputs[0]->ptr<float>(),
                    args.pool);
  }

 private:
  int64_t rows_ = 1, dim_ = 1;
  float epsilon_ = 1e-5f;
};

class LayerNormGradKernel : public Kernel {
 public:
  explicit LayerNormGradKernel(const KernelContext& ctx) {
    const Shape& x = ctx.input_types[0].shape;
    const int64_t axis = ctx.attrs.get_int("axis");
    for (size_t i = 0; i < x.size(); ++i) ((int64_t)i < axis ? rows_ : dim_) *= x[i];
    epsilon_ = (float)ctx.attrs.get_float("epsilon");
  }
  size_t scratch_bytes() const override {
    return (size_t)(2 * cpu::layer_norm_grad_blocks(rows_) * dim_) * sizeof(float);
  }
  void execute(const KernelArgs& args, void* scratch) const override {
    const float* gamma = args.inputs.size() > 2 ? args.inputs[2]->ptr<float>() : nullptr;
    cpu::layer_norm_grad(args.inputs[0]->ptr<float>(), args.inputs[1]->ptr<float>(), gamma, rows_, dim_, epsilon_,
                         args.outputs[0]->ptr<float>(), args.outputs[1]->ptr<float>(), args.outputs[2]->ptr<float>(),
                         static_cast<float*>(scratch), args.pool);
  }
  const char* scheme() const override { return "fused rows"; }

 private:
  int64_t rows_ = 1, dim_ = 1;
  float epsilon_ = 1e-5f;
};

MNNPY_REGISTER_KERNEL("LayerNorm", "cpu", construct_kernel<LayerNormKernel>);
MNNPY_REGISTER_KERNEL("LayerNormGrad", "cpu", construct_kernel<LayerNormGradKernel>);

}  // namespace

}  // namespace mnnpy
