// OpenCV's geometric transforms as graph ops.
// CvResize: input an HxW or HxWxC image (uint8, int16, float32, float64); attrs width, height
//   (the output size), inv_scale_x, inv_scale_y (output over input size, or OpenCV's fx / fy),
//   interpolation (OpenCV's INTER_* value).
// CvFlip: input an image; attr code (OpenCV's flipCode: 0 rows, > 0 columns, < 0 both).
// CvCopyMakeBorder: input an image; attrs top, bottom, left, right (border widths), border
//   (OpenCV's BORDER_* without BORDER_ISOLATED), value0, value1 ... (the BORDER_CONSTANT pixel, per
//   channel, already saturated to the image's type; absent ones are 0).
#include <cstring>
#include <memory>
#include <string>

#include "backend/cpu/cv_border.h"
#include "backend/cpu/cv_flip.h"
#include "backend/cpu/cv_resize.h"
#include "mnnpy/op_registry.h"
#include "ops/cv_image_checks.h"

namespace mnnpy {

namespace {

namespace geo = cpu::cv_geometry;

// Geometry ops refuse empty images, as OpenCV's do.
void check_image(const char* op, const TensorType& x) { cv_checks::check_image(op, x, true); }

using cv_checks::image_channels;

std::vector<TensorType> infer_resize(const std::vector<TensorType>& in, Attrs& attrs) {
  check_image("CvResize", in[0]);
  const int64_t width = attrs.get_int("width"), height = attrs.get_int("height");
  if (width <= 0 || height <= 0) {
    throw ValueError("CvResize: output size must be positive, got " + std::to_string(width) + "x" +
                     std::to_string(height));
  }
  if (!(attrs.get_float("inv_scale_x") > 0) || !(attrs.get_float("inv_scale_y") > 0)) {
    throw ValueError("CvResize: scale factors must be positive");
  }
  const int64_t interpolation = attrs.get_int("interpolation");
  // INTER_NEAREST_EXACT (6) does not yet break ties as OpenCV 5 does.
  if (interpolation < 0 || interpolation > 5) {
    throw ValueError("CvResize: unknown or unsupported interpolation " + std::to_string(interpolation));
  }
  Shape out = in[0].shape;
  out[0] = height;
  out[1] = width;
  return {TensorType{in[0].dtype, out}};
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

MNNPY_REGISTER_OP(OpDef{"CvResize", 1, 1, infer_resize,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new ResizeKernel(ctx)); },
                        {}, false});

std::vector<TensorType> infer_flip(const std::vector<TensorType>& in, Attrs& attrs) {
  check_image("CvFlip", in[0]);
  attrs.get_int("code");
  return {in[0]};
}

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

MNNPY_REGISTER_OP(OpDef{"CvFlip", 1, 1, infer_flip,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new FlipKernel(ctx)); },
                        {}, false});

std::vector<TensorType> infer_copy_make_border(const std::vector<TensorType>& in, Attrs& attrs) {
  check_image("CvCopyMakeBorder", in[0]);
  int64_t widths[4];
  const char* names[4] = {"top", "bottom", "left", "right"};
  for (int i = 0; i < 4; ++i) {
    widths[i] = attrs.get_int(names[i]);
    if (widths[i] < 0 || widths[i] > (int64_t(1) << 30)) {
      throw ValueError(std::string("CvCopyMakeBorder: border width ") + names[i] + " out of range: " +
                       std::to_string(widths[i]));
    }
  }
  const int64_t border = attrs.get_int("border");
  if (border < 0 || border > 4) throw ValueError("CvCopyMakeBorder: unknown border type " + std::to_string(border));
  Shape out = in[0].shape;
  out[0] += widths[0] + widths[1];
  out[1] += widths[2] + widths[3];
  if (out[0] > (int64_t(1) << 31) - 1 || out[1] > (int64_t(1) << 31) - 1) {
    throw ValueError("CvCopyMakeBorder: the bordered image is too large");
  }
  return {TensorType{in[0].dtype, out}};
}

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

MNNPY_REGISTER_OP(OpDef{"CvCopyMakeBorder", 1, 1, infer_copy_make_border,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new CopyMakeBorderKernel(ctx)); },
                        {}, false});

}  // namespace

}  // namespace mnnpy
