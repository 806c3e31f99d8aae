// CPU kernels of Resize and ResizeGrad (ops/resize.cpp).
#include <memory>
#include <optional>
#include <utility>

#include "backend/cpu/resize.h"
#include "backend/cpu/resize_grad.h"
#include "mnnpy/backend.h"
#include "ops/resize_options.h"

namespace mnnpy {

namespace {

// The forward taps of both axes (rows: the identity for a 3-D input).
std::pair<cpu::ResizeAxis, cpu::ResizeAxis> resize_axes(const Attrs& attrs, const Shape& in, const Shape& out) {
  const cpu::ResizeOptions options = resize_options(attrs);
  auto scale = [&](const char* key) {
    return attrs.has(key) ? std::optional<float>((float)attrs.get_float(key)) : std::nullopt;
  };
  const bool has_h = in.size() == 4;
  return {cpu::make_resize_axis(has_h ? in[2] : 1, has_h ? out[2] : 1, scale("scale_h"), options),
          cpu::make_resize_axis(in.back(), out.back(), scale("scale_w"), options)};
}

class ResizeKernel : public Kernel {
 public:
  explicit ResizeKernel(const KernelContext& ctx) : plan_(make_plan(ctx)) {}

  void execute(const KernelArgs& args, void*) const override {
    plan_.run(args.inputs[0]->ptr<float>(), args.outputs[0]->ptr<float>(), args.pool);
  }

 private:
  static cpu::Resize2D make_plan(const KernelContext& ctx) {
    const Shape& s = ctx.input_types[0].shape;
    const Shape& o = ctx.output_types[0].shape;
    const cpu::ResizeOptions options = resize_options(ctx.attrs);
    const bool has_h = s.size() == 4;
    const int64_t in_h = has_h ? s[2] : 1, out_h = has_h ? o[2] : 1;
    const int64_t in_w = s.back(), out_w = o.back();
    auto scale = [&](const char* key) {
      return ctx.attrs.has(key) ? std::optional<float>((float)ctx.attrs.get_float(key)) : std::nullopt;
    };
    return cpu::Resize2D(s[0] * s[1], cpu::make_resize_axis(in_h, out_h, scale("scale_h"), options),
                         cpu::make_resize_axis(in_w, out_w, scale("scale_w"), options));
  }

  cpu::Resize2D plan_;
};

MNNPY_REGISTER_KERNEL("Resize", "cpu", construct_kernel<ResizeKernel>);

class ResizeGradKernel : public Kernel {
 public:
  explicit ResizeGradKernel(const KernelContext& ctx)
      : planes_(ctx.input_types[0].shape[0] * ctx.input_types[0].shape[1]),
        axes_(resize_axes(ctx.attrs, ctx.output_types[0].shape, ctx.input_types[0].shape)) {}
  void execute(const KernelArgs& args, void*) const override {
    cpu::resize_grad(planes_, axes_.first, axes_.second, args.inputs[0]->ptr<float>(), args.outputs[0]->ptr<float>(),
                     args.pool);
  }
  const char* scheme() const override { return "transposed taps"; }

 private:
  int64_t planes_;
  std::pair<cpu::ResizeAxis, cpu::ResizeAxis> axes_;
};

MNNPY_REGISTER_KERNEL("ResizeGrad", "cpu", construct_kernel<ResizeGradKernel>);

}  // namespace

}  // namespace mnnpy
