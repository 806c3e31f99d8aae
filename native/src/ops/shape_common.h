// Checks and helpers shared by the shape op files.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>
#include <string>
#include <utility>
#include <vector>

#include "mnnpy/graph.h"

namespace mnnpy {

// Calls f with a value of the C++ type of integer dtype t; returns false (f not called) for
// any other dtype, so that callers can name the problem in their own error.
template <class F> bool with_index_type(DType t, F&& f) {
  switch (t) {
    case DType::Int8: f(int8_t{}); return true;
    case DType::UInt8: f(uint8_t{}); return true;
    case DType::Int16: f(int16_t{}); return true;
    case DType::Int32: f(int32_t{}); return true;
    case DType::Int64: f(int64_t{}); return true;
    case DType::UInt16: f(uint16_t{}); return true;
    case DType::UInt32: f(uint32_t{}); return true;
    case DType::UInt64: f(uint64_t{}); return true;
    default: return false;
  }
}

// An index value as int64: a uint64 above int64's range becomes the largest int64 (past any
// axis, so out of range) rather than wrapping to a negative index counted from the end.
template <class I> inline int64_t index_as_int64(I v) {
  if constexpr (std::is_same_v<I, uint64_t>) return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
  else return (int64_t)v;
}

// A permutation with negative axes resolved; NumPy's errors for wrong length or repeats.
std::vector<int64_t> normalize_perm(const std::vector<int64_t>& perm, int64_t rank);
// numpy.broadcast_to's rules and messages.
void check_broadcast_to(const Shape& from, const Shape& to);
// The input's strides (in elements, over a contiguous input) along `out`, 0 where it repeats
// (shapes right-aligned, as in broadcasting).
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

// A StridedSlice/SliceAssign box: per axis a first index, a step and a count (attributes
// "begin", "step", "size", normalized by the builder), checked against `shape`.
struct Box {
  std::vector<int64_t> begin, step, size;
};
Box read_box(const Attrs& attrs, const Shape& shape);
// The box's strides and first-element offset (in elements) in a contiguous array of `shape`.
std::pair<std::vector<int64_t>, int64_t> box_strides(const Box& b, const Shape& shape);

// Gather's output shape: params.shape[:axis] + indices.shape + params.shape[axis+1:].
Shape gathered_shape(const Shape& params, const Shape& indices, int64_t axis);
// Scatter's updates: the gathered shape, one value, or one row of data.shape[axis+1:] for every
// index; ValueError otherwise.
enum class ScatterUpdates : uint8_t { Full, Scalar, Row };
ScatterUpdates scatter_updates(const Shape& data, const Shape& indices, const Shape& updates, int64_t axis);
// How Scatter combines an update with the value already there (its "reduction" attribute):
// None overwrites; the others fold each update in, in index order.
enum class ScatterReduction : uint8_t { None, Add, Mul, Max, Min };

// Where output position j of a padded axis of length n reads from (-1: the constant), for
// Pad's modes (constant, edge, reflect, symmetric, wrap).
std::vector<int64_t> pad_map(int64_t n, int64_t before, int64_t after, const std::string& mode);

// The value of v when it is already known (constants, evaluated results), else null.
std::shared_ptr<Tensor> known_value(const Var& v);
// The values of a known integer tensor (TypeError for other dtypes).
std::vector<int64_t> int64_values(const Tensor& t);
// IndexError "index 5 is out of bounds for axis 0 with size 3" for the first bad value.
void check_index_range(const std::vector<int64_t>& values, int64_t size, int64_t axis);
void check_index_range(const void* index, DType dtype, int64_t count, int64_t size, int64_t axis);
void check_index_range(const Tensor& indices, int64_t size, int64_t axis);
// numpy.take(params, index, axis) of known host values, evaluated now by the executor
// (constant folding: a gather cannot fuse with its neighbours). A host synchronization point.
// Raises NumPy's IndexError for an out-of-range index. `axis` is normalized.
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
