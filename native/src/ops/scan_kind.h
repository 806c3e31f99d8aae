// The kinds of CumScan (its `kind` attribute) and the methods of Quantile (its `method`
// attribute): what their inference and gradients check and choose among and their kernels
// compute.
#pragma once

namespace mnnpy {

enum ScanKind : int { kScanSum, kScanProd };

// How a quantile's position among the n sorted values is chosen (NumPy's `method`).
enum QuantileMethod : int {
  kQuantileLinear,     // (n - 1) q, interpolated; also the alpha/beta plotting-position methods
  kQuantileLower,
  kQuantileHigher,
  kQuantileNearest,    // rounded half to even
  kQuantileMidpoint,
  kQuantileMedian,     // q = 0.5 as numpy.median: the mean of the two middle values
};

}  // namespace mnnpy
