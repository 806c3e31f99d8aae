// CPU kernels of the pooling ops (ops/pool.cpp): MaxPool2D, AvgPool2D, their blocked twins and
// their gradients.
#include <memory>

#include "backend/cpu/pool.h"
#include "backend/cpu/pool_backward.h"
#include "mnnpy/backend.h"

namespace mnnpy {

namespace {

// The geometry of an NCHW pooling (or of the blocked layout, whose axes 0-3 line up with NCHW's:
// planes then count channel blocks) from the input and output shapes and the checked attributes.
cpu::PoolGeometry pool_geometry(const Shape& in, const Shape& out, const Attrs& attrs) {
  const auto& k = attrs.get_ints("kernel");
  const auto& st = attrs.get_ints("strides");
  const auto& p = attrs.get_ints("pads");
  const auto& dl = attrs.get_ints("dilations");
  cpu::PoolGeometry g;
  g.planes = in[0] * in[1];
  g.in_h = in[2], g.in_w = in[3], g.out_h = out[2], g.out_w = out[3];
  g.kernel_h = k[0], g.kernel_w = k[1], g.stride_h = st[0], g.stride_w = st[1];
  g.dilation_h = dl[0], g.dilation_w = dl[1];
  g.pad_top = p[0], g.pad_left = p[1], g.pad_bottom = p[2], g.pad_right = p[3];
  return g;
}

// Plan is cpu::Pool2D (NCHW) or cpu::BlockedPool2D.
template <class Plan> class PoolKernel : public Kernel {
 public:
  PoolKernel(bool is_max, const KernelContext& ctx)
      : plan_(is_max, pool_geometry(ctx.input_types[0].shape, ctx.output_types[0].shape, ctx.attrs),
              is_max ? false : ctx.attrs.get_int("count_include_pad") != 0) {}

  void execute(const KernelArgs& args, void*) const override {
    plan_.run(args.inputs[0]->ptr<float>(), args.outputs[0]->ptr<float>(), args.pool);
  }
  const char* scheme() const override { return plan_.scheme(); }
  size_t resident_bytes() const override { return plan_.resident_bytes(); }

 private:
  Plan plan_;
};

class PoolGradKernel : public Kernel {
 public:
  PoolGradKernel(bool is_max, const KernelContext& ctx)
      : PoolGradKernel(is_max, ctx,
                       pool_geometry(ctx.output_types[0].shape, ctx.input_types[is_max ? 1 : 0].shape, ctx.attrs)) {}
  PoolGradKernel(bool is_max, const KernelContext& ctx, const cpu::PoolGeometry& asked)
      : is_max_(is_max),
        geometry_(cpu::trim_padding_taps(asked)),
        windows_(asked, is_max, is_max ? false : ctx.attrs.get_int("count_include_pad") != 0) {}

  void execute(const KernelArgs& args, void*) const override {
    float* dx = args.outputs[0]->ptr<float>();
    if (is_max_) {
      cpu::max_pool2d_backward(geometry_, windows_, args.inputs[0]->ptr<float>(), args.inputs[1]->ptr<float>(), dx,
                               args.pool);
    } else {
      cpu::avg_pool2d_backward(geometry_, windows_, args.inputs[0]->ptr<float>(), dx, args.pool);
    }
  }
  const char* scheme() const override { return is_max_ ? "argmax_scatter" : "window_scatter"; }

 private:
  bool is_max_;
  cpu::PoolGeometry geometry_;
  cpu::PoolWindows windows_;
};

template <class Plan> KernelFactory pool(bool is_max) {
  return [is_max](const KernelContext& ctx) { return new_kernel<PoolKernel<Plan>>(is_max, ctx); };
}
KernelFactory pool_grad(bool is_max) {
  return [is_max](const KernelContext& ctx) { return new_kernel<PoolGradKernel>(is_max, ctx); };
}

MNNPY_REGISTER_KERNEL("MaxPool2D", "cpu", pool<cpu::Pool2D>(true));
MNNPY_REGISTER_KERNEL("AvgPool2D", "cpu", pool<cpu::Pool2D>(false));
MNNPY_REGISTER_KERNEL("MaxPool2DBlocked", "cpu", pool<cpu::BlockedPool2D>(true));
MNNPY_REGISTER_KERNEL("AvgPool2DBlocked", "cpu", pool<cpu::BlockedPool2D>(false));
MNNPY_REGISTER_KERNEL("MaxPool2DGrad", "cpu", pool_grad(true));
MNNPY_REGISTER_KERNEL("AvgPool2DGrad", "cpu", pool_grad(false));

}  // namespace

}  // namespace mnnpy
