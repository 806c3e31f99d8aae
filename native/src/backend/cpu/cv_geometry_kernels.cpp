// CPU kernels of CvResize, CvFlip and CvCopyMakeBorder (ops/cv_geometry.cpp).
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/cv_border.h"
#include "backend/cpu/cv_flip.h"
#include "backend/cpu/cv_resize.h"
#include "mnnpy/backend.h"
#include "ops/cv_image_checks.h"

namespace mnnpy {

namespace {

namespace geo = cpu::cv_geometry;

using cv_checks::image_channels;

// The constant pixel in the image's element type.
std::vector<uint8_t> fill_pixel(const TensorType& t, const Attrs& attrs) {
  const int64_t channels = image_channels(t.shape);
  const size_t e = dtype_size(t.dtype);
  std::vector<uint8_t> pixel((size_t)channels * e);
  for (int64_t c = 0; c < channels; ++c) {
    const std::string key = "value" + std::to_string(c);
    const double v = attrs.has(key) ? attrs.get_float(key) : 0.0;
    uint8_t* p = pixel.data() + c * e;
    switch (t.dtype) {
      case DType::UInt8: *p = (uint8_t)v; break;
      case DType::Int16: { const int16_t x = (int16_t)v; std::memcpy(p, &x, 2); break; }
      case DType::Float32: { const float x = (float)v; std::memcpy(p, &x, 4); break; }
      default: std::memcpy(p, &v, 8); break;
    }
  }
  return pixel;
}

class ResizeKernel : public Kernel {
 public:
  explicit ResizeKernel(const KernelContext& ctx)
      : plan_(ctx.input_types[0].dtype, ctx.input_types[0].shape[0], ctx.input_types[0].shape[1],
              image_channels(ctx.input_types[0].shape), ctx.output_types[0].shape[0], ctx.output_types[0].shape[1],
              ctx.attrs.get_float("inv_scale_x"), ctx.attrs.get_float("inv_scale_y"),
              (geo::Interpolation)ctx.attrs.get_int("interpolation")) {}

  void execute(const KernelArgs& args, void*) const override {
    plan_.run(args.inputs[0]->data, args.outputs[0]->data, args.pool);
  }
  const char* scheme() const override { return plan_.scheme(); }

 private:
  geo::ResizePlan plan_;
};

MNNPY_REGISTER_KERNEL("CvResize", "cpu", construct_kernel<ResizeKernel>);

class FlipKernel : public Kernel {
 public:
  explicit FlipKernel(const KernelContext& ctx)
      : height_(ctx.input_types[0].shape[0]), width_(ctx.input_types[0].shape[1]),
        pixel_((size_t)image_channels(ctx.input_types[0].shape) * dtype_size(ctx.input_types[0].dtype)),
        code_((int)ctx.attrs.get_int("code")) {}

  void execute(const KernelArgs& args, void*) const override {
    geo::flip_image(args.inputs[0]->data, args.outputs[0]->data, height_, width_, pixel_, code_, args.pool);
  }

 private:
  int64_t height_, width_;
  size_t pixel_;
  int code_;
};

MNNPY_REGISTER_KERNEL("CvFlip", "cpu", construct_kernel<FlipKernel>);

class CopyMakeBorderKernel : public Kernel {
 public:
  explicit CopyMakeBorderKernel(const KernelContext& ctx)
      : plan_(ctx.input_types[0].shape[0], ctx.input_types[0].shape[1], image_channels(ctx.input_types[0].shape),
              dtype_size(ctx.input_types[0].dtype), ctx.attrs.get_int("top"), ctx.attrs.get_int("bottom"),
              ctx.attrs.get_int("left"), ctx.attrs.get_int("right"), (geo::Border)ctx.attrs.get_int("border"),
              fill_pixel(ctx.input_types[0], ctx.attrs)) {}

  void execute(const KernelArgs& args, void*) const override {
    plan_.run(args.inputs[0]->data, args.outputs[0]->data, args.pool);
  }

 private:
  geo::BorderPlan plan_;
};

MNNPY_REGISTER_KERNEL("CvCopyMakeBorder", "cpu", construct_kernel<CopyMakeBorderKernel>);

}  // namespace

}  // namespace mnnpy
