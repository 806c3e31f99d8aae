// CPU cumulative sums and products along the middle axis of a contiguous [outer, n, inner]
// block, and quantiles (order statistics) along it.
#pragma once
#include <cstdint>

#include "mnnpy/dtype.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

enum ScanKind : int { kScanSum, kScanProd };

// out[o, j, i] = x[o, 0, i] (+ or *) ... x[o, j, i], in `dt` (int64, float32 or float64; integer
// results wrap as NumPy's). With skip_nan, NaNs count as the identity (nancumsum/nancumprod).
void cumulative(int kind, DType dt, const void* x, int64_t outer, int64_t n, int64_t inner, bool skip_nan, void* out,
                ThreadPool* pool);

// How a quantile's position among the n sorted values is chosen (NumPy's `method`).
enum QuantileMethod : int {
  kQuantileLinear,     // (n - 1) q, interpolated; also the alpha/beta plotting-position methods
  kQuantileLower,
  kQuantileHigher,
  kQuantileNearest,    // rounded half to even
  kQuantileMidpoint,
  kQuantileMedian,     // q = 0.5 as numpy.median: the mean of the two middle values
};

struct QuantileOptions {
  int method = kQuantileLinear;
  // Plotting position of the continuous methods: index = n q + alpha + q (1 - alpha - beta) - 1,
  // clipped to [0, n - 1]. Linear is alpha = beta = 1.
  double alpha = 1, beta = 1;
  bool skip_nan = false;  // nanquantile: NaNs are left out (all NaN: NaN); else a NaN makes the result NaN
};

// For each (outer, inner) row of x (float32 or float64, n >= 1) and each of the nq quantiles
// q[k] in [0, 1]: out[k, o, i]. x is not modified.
void quantiles(DType dt, const void* x, int64_t outer, int64_t n, int64_t inner, const double* q, int64_t nq,
               const QuantileOptions& options, void* out, ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
