// CPU cumulative sums and products along the middle axis of a contiguous [outer, n, inner]
// block, and quantiles (order statistics) along it.
#pragma once
#include <cstdint>

#include "mnnpy/dtype.h"
#include "ops/scan_kind.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

using ::mnnpy::ScanKind;
using ::mnnpy::kScanSum;
using ::mnnpy::kScanProd;

// out[o, j, i] = x[o, 0, i] (+ or *) ... x[o, j, i], in `dt` (int64, float32 or float64; integer
// results wrap as NumPy's). With skip_nan, NaNs count as the identity (nancumsum/nancumprod).
void cumulative(int kind, DType dt, const void* x, int64_t outer, int64_t n, int64_t inner, bool skip_nan, void* out,
                ThreadPool* pool);

using ::mnnpy::QuantileMethod;
using ::mnnpy::kQuantileLinear;
using ::mnnpy::kQuantileLower;
using ::mnnpy::kQuantileHigher;
using ::mnnpy::kQuantileNearest;
using ::mnnpy::kQuantileMidpoint;
using ::mnnpy::kQuantileMedian;

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
