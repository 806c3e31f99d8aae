// Host library: runs on host memory after the inputs were synchronized to the host.
// numpy.unique's compaction: the runs of equal values in an already sorted order become the
// distinct values, the index of each one's first occurrence, the inverse (positions -> value
// numbers) and the counts. Not a graph op, since the number of distinct values depends on the
// data; the sorting itself is the graph's Sort or ArgSort, run by a backend.
#pragma once
#include <cstdint>
#include <memory>

#include "mnnpy/tensor.h"

namespace mnnpy {
class ThreadPool;
namespace host {

// 1-D int64 tensors (values: the input's dtype); parts not asked for stay null. With equal_nan
// every NaN is one value, else each NaN is its own; -0.0 and 0.0 are one value.
struct UniqueParts {
  std::shared_ptr<Tensor> values, first_index, inverse, counts;
};

// From the n values of x sorted ascending, NaN last (the graph's Sort): values and counts.
UniqueParts unique_sorted(DType dt, const void* sorted, int64_t n, bool want_counts, bool equal_nan,
                          ThreadPool* pool);

// From x and its stable ascending sorting permutation `order` (the graph's ArgSort): values and
// every part asked for.
UniqueParts unique_by_order(DType dt, const void* x, const int64_t* order, int64_t n, bool want_index,
                            bool want_inverse, bool want_counts, bool equal_nan, ThreadPool* pool);

// numpy.unique along an axis, on x viewed as [rows, row_len]: rows compared element by element
// (lexicographic order, NaN last). `values` is null here; first_index holds the first row of
// each distinct row (rows to gather), inverse and counts as above.
UniqueParts unique_rows(DType dt, const void* x, int64_t rows, int64_t row_len, bool want_inverse, bool want_counts,
                        bool equal_nan, ThreadPool* pool);

}  // namespace host
}  // namespace mnnpy
