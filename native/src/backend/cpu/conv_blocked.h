// Direct float32 2-D convolution (group 1) in the blocked channel layout, compiled per SIMD target and
// picked at run time. The output is blocked [N, Cout/8, Ho, Wo, 8]; the input blocked
// [N, C/8, H, W, 8] or, for a first layer, NCHW [N, C, H, W] with any C.
//
// A register tile is a few output pixels times a few blocks of 8 output channels; per input value
// it broadcasts one scalar per pixel and loads one weight vector per block, so nothing but the
// weights (once) is packed or transposed. Weights are packed in panels of kBlockedPanelBlocks
// output blocks, one 64-byte row per input value: [panel][C/8][kh][kw][8][8 * blocks of the panel]
// (NCHW input: [panel][kh][kw][C][8 * blocks]); the last panel of an odd block count has one block.
// The packing is the same for every SIMD target.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "backend/cpu/conv.h"
#include "backend/cpu/thread_buffers.h"
#include "ops/blocked_layout.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

using ::mnnpy::kChannelBlock;               // the blocked layout's, which the CPU backend prefers
constexpr int64_t kBlockedPanelBlocks = 2;  // output channel blocks per packed weight panel: 64-byte rows

// The taps [first, second) of a kernel of `kernel` taps whose input position
// out * stride - pad + tap * dilation lies in [0, size): the kernel rows of output row `out` inside
// an image of `size` rows.
inline std::pair<int64_t, int64_t> taps_inside(int64_t out, int64_t stride, int64_t pad, int64_t dilation,
                                               int64_t kernel, int64_t size) {
  const int64_t in0 = out * stride - pad;
  const int64_t first = std::min(kernel, in0 < 0 ? ceil_div(-in0, dilation) : 0);
  const int64_t last = in0 > size - 1 ? first : std::max(first, std::min(kernel, (size - 1 - in0) / dilation + 1));
  return {first, last};
}

// Floats of the packed weights (s.out_c a multiple of 8, group 1).
size_t conv_blocked_weight_floats(const ConvShape& s, bool nchw_input);
// w: [Cout, C, kh, kw] as given to the op.
void conv_blocked_pack_weights(const ConvShape& s, bool nchw_input, const float* w, float* packed);

// y = act(conv(x, w) + bias + residual): x blocked [N, C/8, H, W, 8] (nchw_input: [N, C, H, W]),
// packed_w from conv_blocked_pack_weights, bias [Cout] (never null), residual shaped like y or null,
// y blocked [N, Cout/8, Ho, Wo, 8].
void conv2d_blocked(const ConvShape& s, bool nchw_input, const float* x, const float* packed_w, const float* bias,
                    const float* residual, const ConvActivation& act, float* y, ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
