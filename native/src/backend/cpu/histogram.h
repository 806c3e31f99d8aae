// CPU kernel behind bincount and histogram.
#pragma once
#include <cstdint>

#include "mnnpy/dtype.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

// counts[k] = number of i with index[i] == k (or the sum of weights[i] when weights is not
// null), for k in [0, length). Every index must lie in [0, length): false when one does not.
bool bincount(const int64_t* index, const double* weights, int64_t n, int64_t length, void* counts, ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
