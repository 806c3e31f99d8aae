// CPU scatter-add: the transpose of a gather. Rows (or elements) that name the same position
// are summed in index order, so results do not depend on the thread count.
#pragma once
#include <cstdint>

#include "mnnpy/dtype.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

// out[o, k, i] = sum over j with index[j] == k of updates[o, j, i]; updates is [outer, m, inner],
// index has m entries, out is [outer, n, inner]. Negative indices count from the end; indices
// still out of range are skipped. dtype: float32 or float64; index dtype: any integer.
void scatter_add_rows(DType dtype, DType index_dtype, const void* updates, const void* index, int64_t outer,
                      int64_t m, int64_t inner, int64_t n, void* out, ThreadPool* pool);

// The transpose of take_along_axis: out[o, index[o, j, i], i] += updates[o, j, i]; updates and
// index are [outer, m, inner], out is [outer, n, inner].
void scatter_add_along(DType dtype, DType index_dtype, const void* updates, const void* index, int64_t outer,
                       int64_t m, int64_t inner, int64_t n, void* out, ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
