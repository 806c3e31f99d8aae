// Gradients of 2-D max and average pooling over float32 NCHW planes (geometry as the forward's,
// backend/cpu/pool.h). Each output gradient goes back to the taps of its window: max pooling to
// the window's arg-max (the first maximum in row-major order, a NaN wins; overlapping windows
// accumulate), average pooling to every valid tap times the window's inverse count.
#pragma once

#include "backend/cpu/pool.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

// dx[planes, H, W] from the forward input x and the output gradient dy[planes, Ho, Wo].
void max_pool2d_backward(const PoolGeometry& g, const PoolWindows& windows, const float* x, const float* dy,
                         float* dx, ThreadPool* pool);
// windows built with is_max = false and the forward's count_include_pad.
void avg_pool2d_backward(const PoolGeometry& g, const PoolWindows& windows, const float* dy, float* dx,
                         ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
