// Depthwise float32 2-D convolution in the blocked channel layout ([N, C/8, H, W, 8], C a multiple
// of 8, group == C == Cout), compiled per SIMD target and picked at run time. The 8 channels of a
// pixel are one vector, so every tap is a vector load and a vector FMA with no transposition.
#pragma once
#include <cstddef>

#include "backend/cpu/conv.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

// Floats of the packed weights: [C/8][kh][kw][8].
size_t depthwise_blocked_weight_floats(const ConvShape& s);
// w: [C, 1, kh, kw] as given to the op.
void depthwise_blocked_pack_weights(const ConvShape& s, const float* w, float* packed);

// y = act(depthwise_conv(x, w) + bias + residual), all blocked [N, C/8, ., ., 8]; bias [C] (never
// null), residual shaped like y or null.
void conv2d_depthwise_blocked(const ConvShape& s, const float* x, const float* packed_w, const float* bias,
                              const float* residual, const ConvActivation& act, float* y, ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
