// CPU kernels for NumPy's sorting and set functions: stable full sorts and argsorts along an
// axis (vectorized quicksort for 32/64-bit types, an MSD radix sort for long rows of 64-bit
// values on one thread, LSD radix sort for narrower types; rows in parallel, or one long row
// split over two threads), unique by sort and compaction, and membership tests.
#pragma once
#include <cstdint>
#include <memory>

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

// numpy.unique of a flat array: the sorted distinct values and, when asked for, the index of
// each value's first occurrence, the inverse (x's positions -> value numbers) and the counts.
// With equal_nan every NaN is one value, else each NaN is its own. Unrequested parts stay null.
struct UniqueParts {
  std::shared_ptr<Tensor> values, first_index, inverse, counts;
};
UniqueParts unique_flat(DType dt, const void* x, int64_t n, bool want_index, bool want_inverse, bool want_counts,
                        bool equal_nan, ThreadPool* pool);

// numpy.unique along an axis, on x viewed as [rows, row_len]: rows compared element by element
// (lexicographic order, NaN last). `values` is null here; first_index holds the first row of
// each distinct row (rows to gather), inverse and counts as above.
UniqueParts unique_rows(DType dt, const void* x, int64_t rows, int64_t row_len, bool want_inverse, bool want_counts,
                        bool equal_nan, ThreadPool* pool);

// numpy.isin: out[i] = (elements[i] equals some test value) != invert; NaN equals nothing.
// kind 0 picks by sizes, 1 sorts, 2 uses a lookup table (integers and bool only).
void isin(DType dt, const void* elements, int64_t n, const void* test, int64_t m, bool invert, int kind, uint8_t* out,
          ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
