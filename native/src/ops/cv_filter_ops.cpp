// OpenCV's linear filters as graph ops.
// CvSepFilter: inputs an HxW or HxWxC image (uint8, int16, float32, float64), the horizontal
//   kernel kx and the vertical kernel ky (float64 vectors); attrs border (BORDER_CONSTANT ..
//   BORDER_REFLECT_101; the constant is 0), ddepth (CV_8U 0, CV_16S 3, CV_32F 5, CV_64F 6: the
//   result's type), anchor_x / anchor_y (the taps over the output pixel), scale and delta
//   (result = scale * filtered + delta), fixed_point (uint8 -> uint8 with integer taps summing
//   to 256 each way: OpenCV's bit-exact smoothing) and square (filter the squared values).
// CvFilter2D: inputs the image and a float64 [kh, kw] kernel (correlation); attrs border,
//   ddepth, anchor_x, anchor_y, scale and delta as above.
// CvMorphology: inputs the image and a uint8 [kh, kw] structuring element (nonzero: used);
//   and the float64 [C] values read outside the image under BORDER_CONSTANT; attrs dilate (0:
//   erode, the minimum; 1: dilate, the maximum), border, anchor_x, anchor_y. The result has the
//   image's type.
// CvMedianBlur: input the image; attr ksize (odd, 3 to 7). Borders replicate, as OpenCV's do.
// CvBilateral8U: inputs a uint8 image of 1 or 3 channels, the float32 color weights [C * 256]
//   and the float64 window [n, 3] (dy, dx, space weight); attrs radius and border.
#include <string>

#include "mnnpy/op_registry.h"
#include "ops/cv_image_checks.h"

namespace mnnpy {

namespace {

DType depth_dtype(int64_t ddepth, const char* op = "CvSepFilter") {
  switch (ddepth) {
    case 0: return DType::UInt8;
    case 3: return DType::Int16;
    case 5: return DType::Float32;
    case 6: return DType::Float64;
    default: throw ValueError(std::string(op) + ": ddepth must be CV_8U, CV_16S, CV_32F or CV_64F, got " + std::to_string(ddepth));
  }
}

using cv_checks::check_image;
using cv_checks::image_channels;
using cv_checks::is_image_dtype;

void check_border(const char* op, const Attrs& attrs) {
  const int64_t border = attrs.get_int("border");
  if (border < 0 || border > 4) throw ValueError(std::string(op) + ": border must be 0..4, got " + std::to_string(border));
}

void check_anchor(const char* op, const Attrs& attrs, int64_t kh, int64_t kw) {
  const int64_t ax = attrs.get_int("anchor_x"), ay = attrs.get_int("anchor_y");
  if (ax < 0 || ax >= kw || ay < 0 || ay >= kh) throw ValueError(std::string(op) + ": the anchor must lie inside the kernel");
}

std::vector<TensorType> infer_sep_filter(const std::vector<TensorType>& in, Attrs& attrs) {
  const TensorType& x = in[0];
  check_image("CvSepFilter", x);
  for (int k = 1; k <= 2; ++k) {
    if (in[k].dtype != DType::Float64 || in[k].shape.size() != 1 || in[k].shape[0] < 1) {
      throw ValueError(std::string("CvSepFilter: ") + (k == 1 ? "kx" : "ky") +
                       " must be a non-empty float64 vector, got " + dtype_name(in[k].dtype) + " " +
                       shape_str(in[k].shape));
    }
  }
  const int64_t border = attrs.get_int("border");
  if (border < 0 || border > 4) throw ValueError("CvSepFilter: border must be 0..4, got " + std::to_string(border));
  const DType out = depth_dtype(attrs.get_int("ddepth"));
  const int64_t ax = attrs.get_int("anchor_x"), ay = attrs.get_int("anchor_y");
  if (ax < 0 || ax >= in[1].shape[0] || ay < 0 || ay >= in[2].shape[0]) {
    throw ValueError("CvSepFilter: the anchor must lie inside the kernel");
  }
  attrs.get_float("scale");
  attrs.get_float("delta");
  if (attrs.get_int("fixed_point") && (x.dtype != DType::UInt8 || out != DType::UInt8)) {
    throw ValueError("CvSepFilter: fixed_point needs a uint8 image and result");
  }
  attrs.get_int("square");
  return {TensorType{out, x.shape}};
}

MNNPY_REGISTER_OP(OpDef{"CvSepFilter", 3, 3, infer_sep_filter, {}, false});

std::vector<TensorType> infer_filter_2d(const std::vector<TensorType>& in, Attrs& attrs) {
  check_image("CvFilter2D", in[0]);
  if (in[1].dtype != DType::Float64 || in[1].shape.size() != 2 || in[1].numel() == 0) {
    throw ValueError("CvFilter2D: the kernel must be a non-empty float64 matrix, got " + std::string(dtype_name(in[1].dtype)) +
                     " " + shape_str(in[1].shape));
  }
  check_border("CvFilter2D", attrs);
  check_anchor("CvFilter2D", attrs, in[1].shape[0], in[1].shape[1]);
  const DType out = depth_dtype(attrs.get_int("ddepth"), "CvFilter2D");
  attrs.get_float("scale");
  attrs.get_float("delta");
  return {TensorType{out, in[0].shape}};
}

MNNPY_REGISTER_OP(OpDef{"CvFilter2D", 2, 2, infer_filter_2d, {}, false});

std::vector<TensorType> infer_morphology(const std::vector<TensorType>& in, Attrs& attrs) {
  check_image("CvMorphology", in[0]);
  if (in[1].dtype != DType::UInt8 || in[1].shape.size() != 2 || in[1].numel() == 0) {
    throw ValueError("CvMorphology: the structuring element must be a non-empty uint8 matrix, got " +
                     std::string(dtype_name(in[1].dtype)) + " " + shape_str(in[1].shape));
  }
  check_border("CvMorphology", attrs);
  check_anchor("CvMorphology", attrs, in[1].shape[0], in[1].shape[1]);
  attrs.get_int("dilate");
  const int64_t c = image_channels(in[0].shape);
  if (in[2].dtype != DType::Float64 || in[2].shape != Shape{c}) {
    throw ValueError("CvMorphology: the border values must be float64 [" + std::to_string(c) + "], got " +
                     std::string(dtype_name(in[2].dtype)) + " " + shape_str(in[2].shape));
  }
  return {in[0]};
}

MNNPY_REGISTER_OP(OpDef{"CvMorphology", 3, 3, infer_morphology, {}, false});

std::vector<TensorType> infer_median(const std::vector<TensorType>& in, Attrs& attrs) {
  check_image("CvMedianBlur", in[0]);
  const int64_t k = attrs.get_int("ksize");
  if (k < 3 || k % 2 == 0 || k * k > 49) throw ValueError("CvMedianBlur: ksize must be 3, 5 or 7, got " + std::to_string(k));
  return {in[0]};
}

MNNPY_REGISTER_OP(OpDef{"CvMedianBlur", 1, 1, infer_median, {}, false});

std::vector<TensorType> infer_bilateral(const std::vector<TensorType>& in, Attrs& attrs) {
  check_image("CvBilateral8U", in[0]);
  const int64_t c = image_channels(in[0].shape);
  if (in[0].dtype != DType::UInt8 || (c != 1 && c != 3)) {
    throw ValueError("CvBilateral8U: the image must be uint8 with 1 or 3 channels");
  }
  if (in[1].dtype != DType::Float32 || in[1].shape != Shape{c * 256}) {
    throw ValueError("CvBilateral8U: the color weights must be float32 [" + std::to_string(c * 256) + "]");
  }
  if (in[2].dtype != DType::Float64 || in[2].shape.size() != 2 || in[2].shape[1] != 3) {
    throw ValueError("CvBilateral8U: the window must be float64 [n, 3]");
  }
  const int64_t radius = attrs.get_int("radius");
  if (radius < 1 || radius > 1000) throw ValueError("CvBilateral8U: radius must be 1..1000");
  check_border("CvBilateral8U", attrs);
  return {in[0]};
}

MNNPY_REGISTER_OP(OpDef{"CvBilateral8U", 3, 3, infer_bilateral, {}, false});

}  // namespace

}  // namespace mnnpy
