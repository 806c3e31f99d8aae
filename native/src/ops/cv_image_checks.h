// Argument checks shared by the OpenCV-style image ops: the element types OpenCV's functions
// take here (CV_8U, CV_16S, CV_32F, CV_64F) and the HxW / HxWxC layout.
#pragma once
#include <string>

#include "mnnpy/tensor.h"

namespace mnnpy {
namespace cv_checks {

inline bool is_image_dtype(DType dt) {
  return dt == DType::UInt8 || dt == DType::Int16 || dt == DType::Float32 || dt == DType::Float64;
}

inline int64_t image_channels(const Shape& s) { return s.size() == 3 ? s[2] : 1; }

// TypeError / ValueError naming `op` unless x is such an image; empty images too when asked.
inline void check_image(const char* op, const TensorType& x, bool reject_empty = false) {
  if (!is_image_dtype(x.dtype)) {
    throw TypeError(std::string(op) + ": image dtype must be uint8, int16, float32 or float64, got " +
                    dtype_name(x.dtype));
  }
  if (x.shape.size() != 2 && x.shape.size() != 3) {
    throw ValueError(std::string(op) + ": image must be HxW or HxWxC, got shape " + shape_str(x.shape));
  }
  if (!reject_empty) return;
  for (int64_t s : x.shape) {
    if (s <= 0) throw ValueError(std::string(op) + ": image is empty, shape " + shape_str(x.shape));
  }
}

}  // namespace cv_checks
}  // namespace mnnpy
