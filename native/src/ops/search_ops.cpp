// SearchSorted: numpy.searchsorted of v (any shape) in a sorted 1-D array of the same dtype.
// attrs: right (0/1). Output: int64 insertion points of v's shape.
#include <string>

#include "mnnpy/op_registry.h"

namespace mnnpy {

namespace {

std::vector<TensorType> infer_searchsorted(const std::vector<TensorType>& in, Attrs& attrs) {
  if (in[0].shape.size() != 1) {
    throw ValueError("SearchSorted: the sorted array must be 1-D, got shape " + shape_str(in[0].shape));
  }
  if (in[0].dtype != in[1].dtype) {
    throw TypeError(std::string("SearchSorted: both inputs must have one dtype, got ") + dtype_name(in[0].dtype) +
                    " and " + dtype_name(in[1].dtype));
  }
  if (in[0].dtype == DType::Float16 || in[0].dtype == DType::BFloat16) {
    throw TypeError(std::string("SearchSorted: ") + dtype_name(in[0].dtype) + " is not supported (widen it first)");
  }
  attrs.set("right", (int64_t)(attrs.get_int("right", 0) != 0));
  return {TensorType{DType::Int64, in[1].shape}};
}

MNNPY_REGISTER_OP(OpDef{"SearchSorted", 2, 2, infer_searchsorted, {}, false});

}  // namespace

}  // namespace mnnpy
