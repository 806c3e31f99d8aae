// OpenCV's geometric transforms as graph ops.
// CvResize: input an HxW or HxWxC image (uint8, int16, float32, float64); attrs width, height
//   (the output size), inv_scale_x, inv_scale_y (output over input size, or OpenCV's fx / fy),
//   interpolation (OpenCV's INTER_* value).
// CvFlip: input an image; attr code (OpenCV's flipCode: 0 rows, > 0 columns, < 0 both).
// CvCopyMakeBorder: input an image; attrs top, bottom, left, right (border widths), border
//   (OpenCV's BORDER_* without BORDER_ISOLATED), value0, value1 ... (the BORDER_CONSTANT pixel, per
//   channel, already saturated to the image's type; absent ones are 0).
#include <string>

#include "mnnpy/lowering.h"
#include "mnnpy/op_registry.h"
#include "ops/cv_image_checks.h"

namespace mnnpy {

namespace {

// Geometry ops refuse empty images, as OpenCV's do.
void check_image(const char* op, const TensorType& x) { cv_checks::check_image(op, x, true); }

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

MNNPY_REGISTER_OP(OpDef{"CvResize", 1, 1, infer_resize, {}, false});

std::vector<TensorType> infer_flip(const std::vector<TensorType>& in, Attrs& attrs) {
  check_image("CvFlip", in[0]);
  attrs.get_int("code");
  return {in[0]};
}

MNNPY_REGISTER_OP(OpDef{"CvFlip", 1, 1, infer_flip, {}, false});

// One Raster reading rows (code 0 or < 0) and columns (code > 0 or < 0) backwards.
MNNPY_REGISTER_DECOMPOSITION("CvFlip", [](const std::vector<Var>& in, const Attrs& attrs,
                                          const std::vector<TensorType>& outputs) {
  const Shape& x = in[0].type().shape;
  const int64_t code = attrs.get_int("code");
  RasterRegion region{0, 0, 0, x, row_major_strides(x), row_major_strides(x)};
  for (int axis = 0; axis < 2; ++axis) {
    if (axis == 0 ? code > 0 : code == 0) continue;  // that axis keeps its order
    region.src_offset += (x[axis] - 1) * region.src_strides[axis];
    region.src_strides[axis] = -region.src_strides[axis];
  }
  return std::vector<Var>{raster(in, outputs[0].shape, {region})};
});

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

MNNPY_REGISTER_OP(OpDef{"CvCopyMakeBorder", 1, 1, infer_copy_make_border, {}, false});

}  // namespace

}  // namespace mnnpy
