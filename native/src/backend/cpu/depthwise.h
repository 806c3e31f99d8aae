// Depthwise float32 2-D convolution (NCHW, group == in_c == out_c) on the CPU, compiled per SIMD
// target and picked at run time: one input plane per output plane, bias and activation fused.
#pragma once
#include "backend/cpu/conv.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

// y[N, C, Ho, Wo] = act(depthwise_conv(x, w) + bias); w as given to the op ([C, 1, kh, kw]),
// bias [C] or null.
void conv2d_depthwise(const ConvShape& s, const float* x, const float* w, const float* bias,
                      const ConvActivation& act, float* y, ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
