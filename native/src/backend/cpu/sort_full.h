// CPU kernels for NumPy's sorting and set functions: stable full sorts and argsorts along an
// axis (vectorized quicksort for 32/64-bit types, an MSD radix sort for long rows of 64-bit
// values on one thread, LSD radix sort for narrower types; rows in parallel, or one long row
// split over two threads), and membership tests. unique compacts the runs of a sort on the host
// (host/unique.h).
#pragma once
#include <cstdint>

#include "mnnpy/tensor.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

// Stable ascending sort along the middle axis of an [outer, n, inner] block, in NumPy's order
// (NaN after every number). Writes the sorted values (x's dtype) when `values` is not null and
// the sorting permutation (int64) when `indices` is not null, both laid out like x. In a value
// sort -0.0 comes before 0.0 and NaNs lose their sign bit.
void sort_along_axis(DType dt, const void* x, int64_t outer, int64_t n, int64_t inner, void* values, int64_t* indices,
                     ThreadPool* pool);

// numpy.isin: out[i] = (elements[i] equals some test value) != invert; NaN equals nothing.
// kind 0 picks by sizes, 1 sorts, 2 uses a lookup table (integers and bool only).
void isin(DType dt, const void* elements, int64_t n, const void* test, int64_t m, bool invert, int kind, uint8_t* out,
          ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
