// Bincount: inputs index (int64, 1-D) and optionally weights (float64, same length); attr
// length. Output [length], int64 counts or float64 weight sums. An index outside [0, length)
// raises ValueError when the kernel runs.
#include <string>

#include "mnnpy/op_registry.h"

namespace mnnpy {

namespace {

std::vector<TensorType> infer_bincount(const std::vector<TensorType>& in, Attrs& attrs) {
  const TensorType& index = in[0];
  if (index.dtype != DType::Int64 || index.shape.size() != 1) {
    throw TypeError("Bincount: index must be a 1-D int64 array, got " + std::string(dtype_name(index.dtype)) + " " +
                    shape_str(index.shape));
  }
  if (in.size() == 2 && (in[1].dtype != DType::Float64 || in[1].shape != index.shape)) {
    throw ValueError("Bincount: weights must be float64 of the index's shape " + shape_str(index.shape));
  }
  const int64_t length = attrs.get_int("length");
  if (length < 0) throw ValueError("Bincount: length must not be negative");
  return {TensorType{in.size() == 2 ? DType::Float64 : DType::Int64, Shape{length}}};
}

MNNPY_REGISTER_OP(OpDef{"Bincount", 1, 2, infer_bincount, {}, false});

}  // namespace

}  // namespace mnnpy
