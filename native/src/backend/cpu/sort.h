// CPU kernel for TopK along the middle axis of an [outer, n, inner] block.
#pragma once
#include <cstdint>

#include "mnnpy/tensor.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

// For each (outer, inner) row of x (dtype int32, int64, float32 or float64), the k first
// elements in the order "largest first" (or smallest first), equal values by lower index
// first; NaN counts as larger than every number (as torch.topk). values has x's dtype and
// indices int64, both laid out [outer, k, inner]. With sorted false the k elements come in
// an unspecified order (the selected set is the same).
void topk(DType dt, const void* x, int64_t outer, int64_t n, int64_t inner, int64_t k, bool largest, bool sorted,
          void* values, int64_t* indices, ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
