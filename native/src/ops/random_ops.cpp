// Random draws as graph ops. Each node is one fixed draw: its seed and stream attributes pick
// the numbers (callers give every call a new stream), so re-evaluating a node or a plan
// gives the same values, and threads split the work without changing them.
#include <string>

#include "mnnpy/op_registry.h"
#include "ops/random_dist.h"

namespace mnnpy {

namespace {

Shape checked_shape(const Attrs& attrs, const char* op) {
  Shape shape = attrs.has("shape") ? attrs.get_ints("shape") : Shape{};
  for (int64_t d : shape) {
    if (d < 0) throw ValueError(std::string(op) + ": negative dimensions are not allowed");
  }
  return shape;
}

// attrs: dist (uniform/normal/exponential/integers), dtype, shape, seed, stream; a, b (floats:
// location and scale) or low, span (integers; span is an unsigned 64-bit count stored as int64).
std::vector<TensorType> infer_random_fill(const std::vector<TensorType>&, Attrs& attrs) {
  const RandomDist dist = parse_random_dist(attrs.get_string("dist"));
  DType dt;
  if (!dtype_from_name(attrs.get_string("dtype"), &dt)) throw TypeError("RandomFill: unknown dtype");
  if (dist == RandomDist::Integers) {
    if (!is_integer(dt) && dt != DType::Bool) throw TypeError("RandomFill: integers need an integer or bool dtype");
  } else if (dt != DType::Float32 && dt != DType::Float64) {
    throw TypeError(std::string("RandomFill: unsupported dtype ") + dtype_name(dt) + " (float32 or float64)");
  }
  return {TensorType{dt, checked_shape(attrs, "RandomFill")}};
}

MNNPY_REGISTER_OP(OpDef{"RandomFill", 0, 0, infer_random_fill, {}, false});

// attrs: n, seed, stream. Output: a permutation of [0, n) as int64.
std::vector<TensorType> infer_permutation(const std::vector<TensorType>&, Attrs& attrs) {
  const int64_t n = attrs.get_int("n");
  if (n < 0) throw ValueError("RandomPermutation: n must not be negative");
  return {TensorType{DType::Int64, Shape{n}}};
}

MNNPY_REGISTER_OP(OpDef{"RandomPermutation", 0, 0, infer_permutation, {}, false});

// Input: weights (float64, 1-D, non-negative, checked by the caller). attrs: shape, seed,
// stream. Output: int64 indices drawn with replacement, probability proportional to weight.
std::vector<TensorType> infer_weighted(const std::vector<TensorType>& in, Attrs& attrs) {
  if (in[0].dtype != DType::Float64 || in[0].shape.size() != 1 || in[0].shape[0] == 0) {
    throw ValueError("RandomWeightedIndices: weights must be a non-empty 1-D float64 array");
  }
  return {TensorType{DType::Int64, checked_shape(attrs, "RandomWeightedIndices")}};
}

MNNPY_REGISTER_OP(OpDef{"RandomWeightedIndices", 1, 1, infer_weighted, {}, false});

}  // namespace

}  // namespace mnnpy
