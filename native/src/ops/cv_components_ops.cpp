// Connected components as graph ops. The number of components depends on the pixels, so the
// front-end runs them in two steps:
// CvLabelComponents: input HxW uint8 or int8 (nonzero = foreground); attr connectivity (4, 8).
//   Outputs: labels HxW int32, and the number of labels (with the background) as int64 [1].
// CvComponentStats: input labels HxW int32; attr count. Outputs: stats [count, 5] int32
//   (left, top, width, height, area) and centroids [count, 2] float64.
#include <string>

#include "mnnpy/op_registry.h"

namespace mnnpy {

namespace {

std::vector<TensorType> infer_label(const std::vector<TensorType>& in, Attrs& attrs) {
  const TensorType& x = in[0];
  if (x.dtype != DType::UInt8 && x.dtype != DType::Int8) {
    throw TypeError(std::string("CvLabelComponents: image must be 8-bit, got ") + dtype_name(x.dtype));
  }
  if (x.shape.size() != 2) throw ValueError("CvLabelComponents: image must be HxW, got shape " + shape_str(x.shape));
  const int64_t connectivity = attrs.get_int("connectivity");
  if (connectivity != 4 && connectivity != 8) {
    throw ValueError("CvLabelComponents: connectivity must be 4 or 8, got " + std::to_string(connectivity));
  }
  return {TensorType{DType::Int32, x.shape}, TensorType{DType::Int64, Shape{1}}};
}

MNNPY_REGISTER_OP(OpDef{"CvLabelComponents", 1, 1, infer_label, {}, false});

std::vector<TensorType> infer_stats(const std::vector<TensorType>& in, Attrs& attrs) {
  if (in[0].dtype != DType::Int32 || in[0].shape.size() != 2) {
    throw TypeError("CvComponentStats: labels must be HxW int32, got " + std::string(dtype_name(in[0].dtype)) + " " +
                    shape_str(in[0].shape));
  }
  const int64_t count = attrs.get_int("count");
  if (count < 1) throw ValueError("CvComponentStats: count must be at least 1");
  return {TensorType{DType::Int32, Shape{count, 5}}, TensorType{DType::Float64, Shape{count, 2}}};
}

MNNPY_REGISTER_OP(OpDef{"CvComponentStats", 1, 1, infer_stats, {}, false});

}  // namespace

}  // namespace mnnpy
