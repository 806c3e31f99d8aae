// CPU scatter-add: the transpose of a gather. Rows (or elements) that name the same position
// are summed in index order, so results do not depend on the thread count.
#pragma once
#include <cstdint>

#include "mnnpy/dtype.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

// The transpose of a gather, into out [outer, n, inner] from updates [outer, m, inner].
// per_element false: index has m entries and out[o, index[j], i] += updates[o, j, i] (take);
// per_element true: index is [outer, m, inner] and out[o, index[o, j, i], i] += updates[o, j, i]
// (take_along_axis). Negative indices count from the end; indices still out of range are
// skipped. dtype: float32 or float64; index dtype: any integer.
void scatter_add(DType dtype, DType index_dtype, const void* updates, const void* index, bool per_element,
                 int64_t outer, int64_t m, int64_t inner, int64_t n, void* out, ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
