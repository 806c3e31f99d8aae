// Variance and standard deviation over the middle axis of a contiguous [outer, R, inner] block,
// fused into one kernel (NumPy builds them from mean, subtract, square and sum passes).
#pragma once
#include <cstdint>

#include "mnnpy/dtype.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

// out has outer*inner elements of `dt` (float32 or float64): sum((x - mean)^2) / max(R - ddof, 0),
// its square root when `root`. Deviations are taken from each block's own mean (a corrected
// two-pass over cache-sized blocks) and blocks are merged with Chan's formula, in double.
void variance(DType dt, const void* x, int64_t outer, int64_t R, int64_t inner, double ddof, bool root, void* out,
              ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
