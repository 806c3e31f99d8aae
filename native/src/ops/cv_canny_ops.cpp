// CvCanny: OpenCV's Canny on an HxW or HxWxC uint8 image; attrs low, high (floats, ordered),
// aperture (3, 5, 7), l2 (0/1). CvCannyDerivatives: the same from int16 dx, dy images of one
// shape (HxW or HxWx3); attrs low, high, l2. Both output HxW uint8 edges (0 or 255).
#include <string>

#include "mnnpy/op_registry.h"

namespace mnnpy {

namespace {

void check_image_shape(const char* op, const char* name, const TensorType& x) {
  if (x.shape.size() != 2 && x.shape.size() != 3) {
    throw ValueError(std::string(op) + ": " + name + " must be HxW or HxWxC, got shape " + shape_str(x.shape));
  }
}

std::vector<TensorType> infer_canny(const std::vector<TensorType>& in, Attrs& attrs) {
  const TensorType& x = in[0];
  if (x.dtype != DType::UInt8) throw TypeError(std::string("CvCanny: image must be uint8, got ") + dtype_name(x.dtype));
  check_image_shape("CvCanny", "image", x);
  const int64_t aperture = attrs.get_int("aperture");
  if (aperture != 3 && aperture != 5 && aperture != 7) {
    throw ValueError("CvCanny: aperture must be 3, 5 or 7, got " + std::to_string(aperture));
  }
  return {TensorType{DType::UInt8, Shape{x.shape[0], x.shape[1]}}};
}

std::vector<TensorType> infer_canny_derivatives(const std::vector<TensorType>& in, Attrs&) {
  const TensorType &dx = in[0], &dy = in[1];
  if (dx.dtype != DType::Int16 || dy.dtype != DType::Int16) {
    throw TypeError(std::string("CvCannyDerivatives: dx and dy must be int16, got ") + dtype_name(dx.dtype) + " and " +
                    dtype_name(dy.dtype));
  }
  check_image_shape("CvCannyDerivatives", "dx", dx);
  if (dx.shape != dy.shape) {
    throw ValueError("CvCannyDerivatives: dx and dy must have one shape, got " + shape_str(dx.shape) + " and " +
                     shape_str(dy.shape));
  }
  if (dx.shape.size() == 3 && dx.shape[2] != 1 && dx.shape[2] != 3) {
    throw ValueError("CvCannyDerivatives: derivatives must have 1 or 3 channels, got shape " + shape_str(dx.shape));
  }
  return {TensorType{DType::UInt8, Shape{dx.shape[0], dx.shape[1]}}};
}

MNNPY_REGISTER_OP(OpDef{"CvCanny", 1, 1, infer_canny, {}, false});
MNNPY_REGISTER_OP(OpDef{"CvCannyDerivatives", 2, 2, infer_canny_derivatives, {}, false});

}  // namespace

}  // namespace mnnpy
