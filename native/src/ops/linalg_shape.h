// The matrix stacks numpy.linalg's ops work on ([..., m, n], float32 or float64) and the output
// sizes of QR's modes: what their inference checks and their kernels compute with.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>

#include "mnnpy/tensor.h"

namespace mnnpy {

struct StackDims {
  Shape batch_shape;
  int64_t batch = 1, m = 0, n = 0;
};

inline StackDims stack_dims(const TensorType& t, const char* op, bool square) {
  if (t.dtype != DType::Float32 && t.dtype != DType::Float64) {
    throw TypeError(std::string(op) + ": matrices must be float32 or float64, got " + dtype_name(t.dtype));
  }
  const size_t r = t.shape.size();
  if (r < 2) {
    throw ValueError(std::string(op) + ": " + std::to_string(r) +
                     "-dimensional array given. Array must be at least two-dimensional");
  }
  StackDims d;
  d.batch_shape.assign(t.shape.begin(), t.shape.end() - 2);
  for (int64_t b : d.batch_shape) d.batch *= b;
  d.m = t.shape[r - 2];
  d.n = t.shape[r - 1];
  if (square && d.m != d.n) throw ValueError(std::string(op) + ": Last 2 dimensions of the array must be square");
  return d;
}

struct QrSizes {
  int64_t qcols, rrows;
  bool want_q;
};

inline QrSizes qr_sizes(const std::string& mode, const StackDims& d) {
  const int64_t k = std::min(d.m, d.n);
  if (mode == "reduced") return {k, k, true};
  if (mode == "complete") return {d.m, d.m, true};
  if (mode == "r") return {k, k, false};
  throw ValueError("LinalgQR: unrecognized mode '" + mode + "'");
}

}  // namespace mnnpy
