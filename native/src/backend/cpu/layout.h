// Conversions between float32 NCHW and the blocked channel layout [N, C/8, H, W, 8], in which the 8
// channels of a pixel are contiguous (one SIMD vector for the blocked convolution and pooling kernels).
#pragma once
#include <cstdint>

#include "ops/blocked_layout.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

using ::mnnpy::kChannelBlock;

// x [batch, channels, plane] -> y [batch, channels / 8, plane, 8]; channels a multiple of 8.
void to_blocked_channels(const float* x, int64_t batch, int64_t channels, int64_t plane, float* y, ThreadPool* pool);
// The inverse: x [batch, channels / 8, plane, 8] -> y [batch, channels, plane].
void from_blocked_channels(const float* x, int64_t batch, int64_t channels, int64_t plane, float* y,
                           ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
