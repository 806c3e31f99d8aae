// CPU kernel for element gathers: out[i] = data[index[i]] over flat positions.
#pragma once
#include <cstddef>
#include <cstdint>

#include "mnnpy/dtype.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

// out[i] = data[index[i]] for i < count; negative indices count from the end of data[0:n],
// indices still out of range give zero. elem_size: 1, 2, 4 or 8; index dtype: any integer.
// Returns false when some index was out of range.
bool take_elements(size_t elem_size, DType index_dtype, const void* data, int64_t n, const void* index,
                   int64_t count, void* out, ThreadPool* pool);

// numpy.repeat along the middle axis of an [outer, n, inner] block: element j of that axis is
// written repeats[j] times (repeats has n entries, or one used for every element).
void repeat_elements(size_t elem_size, const void* data, int64_t outer, int64_t n, int64_t inner,
                     const int64_t* repeats, bool one_count, void* out, ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
