// Checks and helpers shared by the shape op files.
#pragma once
#include <memory>
#include <optional>
#include <vector>

#include "mnnpy/graph.h"

namespace mnnpy {

// A permutation with negative axes resolved; NumPy's errors for wrong length or repeats.
std::vector<int64_t> normalize_perm(const std::vector<int64_t>& perm, int64_t rank);
// numpy.broadcast_to's rules and messages.
void check_broadcast_to(const Shape& from, const Shape& to);
// The value of v when it is already known (constants, evaluated results), else null.
std::shared_ptr<Tensor> known_value(const Var& v);
std::vector<int64_t> int64_values(const Tensor& t);
// IndexError "index 5 is out of bounds for axis 0 with size 3" for the first bad value.
void check_index_range(const std::vector<int64_t>& values, int64_t size, int64_t axis);
void check_index_range(const void* index, DType dtype, int64_t count, int64_t size, int64_t axis);
void check_index_range(const Tensor& indices, int64_t size, int64_t axis);
// numpy.take(params, index, axis) of known values, computed now (constant folding: a gather
// cannot fuse with its neighbours, and the indices need no copy or separate check). Raises
// NumPy's IndexError for an out-of-range index. `axis` is normalized.
std::shared_ptr<Tensor> take_now(const void* params, const TensorType& params_type, const void* index,
                                 DType index_dtype, const Shape& index_shape, int64_t axis);

// A Python slice resolved against an axis of length n (slice.indices): the first index, the
// step and how many elements it selects.
struct SliceRange {
  int64_t begin = 0, step = 1, count = 0;
};
SliceRange normalize_slice(std::optional<int64_t> start, std::optional<int64_t> stop, std::optional<int64_t> step,
                           int64_t n);

}  // namespace mnnpy
