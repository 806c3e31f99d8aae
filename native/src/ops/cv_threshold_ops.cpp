// OpenCV's threshold and inRange as graph ops.
// CvThreshold: input an HxW or HxWxC image (uint8, int16, float32, float64); attrs kind
//   (THRESH_BINARY ... THRESH_TOZERO_INV), level (for integer images an integer, possibly
//   outside the type's range), maxval (already rounded and saturated for integer images).
// CvInRange: inputs image, lower, upper; the bounds are float64 [C] (one value per channel) or
//   arrays of the image's shape and dtype. Output: HxW uint8 mask, 255 inside.
// CvHistogram8U: input any uint8 array; output int64 [256], the count of each value.
#include <string>

#include "backend/cpu/cv_threshold.h"
#include "mnnpy/op_registry.h"
#include "ops/cv_image_checks.h"

namespace mnnpy {

namespace {

using cv_checks::check_image;
using cv_checks::is_image_dtype;

std::vector<TensorType> infer_threshold(const std::vector<TensorType>& in, Attrs& attrs) {
  check_image("CvThreshold", in[0]);
  const int64_t kind = attrs.get_int("kind");
  if (kind < 0 || kind > 4) throw ValueError("CvThreshold: kind must be 0..4, got " + std::to_string(kind));
  attrs.get_float("level");
  attrs.get_float("maxval");
  return {in[0]};
}

class ThresholdKernel : public Kernel {
 public:
  explicit ThresholdKernel(const KernelContext& ctx)
      : kind_((cpu::cv_threshold::ThresholdKind)ctx.attrs.get_int("kind")),
        level_(ctx.attrs.get_float("level")),
        maxval_(ctx.attrs.get_float("maxval")) {}

  void execute(const KernelArgs& args, void*) const override {
    const Tensor& x = *args.inputs[0];
    cpu::cv_threshold::threshold(x.type.dtype, kind_, level_, maxval_, x.data, args.outputs[0]->data, x.numel(),
                                 args.pool);
  }

 private:
  cpu::cv_threshold::ThresholdKind kind_;
  double level_, maxval_;
};

MNNPY_REGISTER_OP(OpDef{"CvThreshold", 1, 1, infer_threshold,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new ThresholdKernel(ctx)); },
                        {}, false});

using cv_checks::image_channels;

std::vector<TensorType> infer_in_range(const std::vector<TensorType>& in, Attrs&) {
  const TensorType& x = in[0];
  check_image("CvInRange", x);
  const int64_t c = image_channels(x.shape);
  for (int b = 1; b <= 2; ++b) {
    const TensorType& bound = in[b];
    const bool per_channel = bound.dtype == DType::Float64 && bound.shape == Shape{c};
    const bool array = bound.dtype == x.dtype && bound.shape == x.shape;
    if (!per_channel && !array) {
      throw ValueError(std::string("CvInRange: ") + (b == 1 ? "lower" : "upper") +
                       " bound must be float64 [" + std::to_string(c) + "] or an array of the image's shape " +
                       shape_str(x.shape) + " and dtype, got " + dtype_name(bound.dtype) + " " +
                       shape_str(bound.shape));
    }
  }
  if ((in[1].shape == x.shape) != (in[2].shape == x.shape)) {
    throw ValueError("CvInRange: both bounds must be per channel, or both arrays");
  }
  return {TensorType{DType::UInt8, Shape{x.shape[0], x.shape[1]}}};
}

class InRangeKernel : public Kernel {
 public:
  explicit InRangeKernel(const KernelContext& ctx)
      : channels_((int)image_channels(ctx.input_types[0].shape)),
        arrays_(ctx.input_types[1].shape == ctx.input_types[0].shape) {}

  void execute(const KernelArgs& args, void*) const override {
    const Tensor& x = *args.inputs[0];
    const int64_t pixels = x.numel() / channels_;
    uint8_t* mask = args.outputs[0]->ptr<uint8_t>();
    if (arrays_) {
      cpu::cv_threshold::in_range_arrays(x.type.dtype, x.data, args.inputs[1]->data, args.inputs[2]->data, pixels,
                                         channels_, mask, args.pool);
    } else {
      cpu::cv_threshold::in_range(x.type.dtype, x.data, pixels, channels_, args.inputs[1]->ptr<double>(),
                                  args.inputs[2]->ptr<double>(), mask, args.pool);
    }
  }

 private:
  int channels_;
  bool arrays_;
};

MNNPY_REGISTER_OP(OpDef{"CvInRange", 3, 3, infer_in_range,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new InRangeKernel(ctx)); },
                        {}, false});

std::vector<TensorType> infer_histogram(const std::vector<TensorType>& in, Attrs&) {
  if (in[0].dtype != DType::UInt8) {
    throw TypeError(std::string("CvHistogram8U: input must be uint8, got ") + dtype_name(in[0].dtype));
  }
  return {TensorType{DType::Int64, Shape{256}}};
}

class HistogramKernel : public Kernel {
 public:
  void execute(const KernelArgs& args, void*) const override {
    const Tensor& x = *args.inputs[0];
    cpu::cv_threshold::histogram_u8(x.ptr<uint8_t>(), x.numel(), args.outputs[0]->ptr<int64_t>(), args.pool);
  }
};

MNNPY_REGISTER_OP(OpDef{"CvHistogram8U", 1, 1, infer_histogram,
                        [](const KernelContext&) { return std::unique_ptr<Kernel>(new HistogramKernel()); },
                        {}, false});

}  // namespace

}  // namespace mnnpy
