// CPU kernel for numpy.searchsorted: a binary search per element of v in a sorted 1-D array.
#pragma once
#include <cstdint>

#include "mnnpy/dtype.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

// out[i] = the insertion point of v[i] in sorted[0:n] (left: first position whose element is
// not less than v[i]; right: first position whose element is greater). NaN sorts after every
// number, as in NumPy. dt: bool, int8..int64, float32 or float64 (float16 is widened first).
void searchsorted(DType dt, const void* sorted, int64_t n, const void* v, int64_t count, bool right, int64_t* out,
                  ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
