// OpenCV's threshold and inRange as graph ops.
// CvThreshold: input an HxW or HxWxC image (uint8, int16, float32, float64); attrs kind
//   (THRESH_BINARY ... THRESH_TOZERO_INV), level (for integer images an integer, possibly
//   outside the type's range), maxval (already rounded and saturated for integer images).
// CvInRange: inputs image, lower, upper; the bounds are float64 [C] (one value per channel) or
//   arrays of the image's shape and dtype. Output: HxW uint8 mask, 255 inside.
// CvHistogram8U: input any uint8 array; output int64 [256], the count of each value.
#include <string>

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

MNNPY_REGISTER_OP(OpDef{"CvThreshold", 1, 1, infer_threshold, {}, false});

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

MNNPY_REGISTER_OP(OpDef{"CvInRange", 3, 3, infer_in_range, {}, false});

std::vector<TensorType> infer_histogram(const std::vector<TensorType>& in, Attrs&) {
  if (in[0].dtype != DType::UInt8) {
    throw TypeError(std::string("CvHistogram8U: input must be uint8, got ") + dtype_name(in[0].dtype));
  }
  return {TensorType{DType::Int64, Shape{256}}};
}

MNNPY_REGISTER_OP(OpDef{"CvHistogram8U", 1, 1, infer_histogram, {}, false});

}  // namespace

}  // namespace mnnpy
