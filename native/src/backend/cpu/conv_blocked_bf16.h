// The blocked convolution (group 1) as one bf16 product, for precision "low" on a CPU with a bf16
// path (backend/cpu/gemm_bf16.h):
//   out[pixels x Cout] = patches[pixels x K] * W^T,
// pixels = N * Ho * Wo, K = C * kh * kw. The patch rows are read straight from the blocked input
// [N, C/8, H, W, 8] in the order [C/8][kh][kw][8], so that each kernel tap of a channel block is 8
// consecutive values, converted to bf16 8 at a time; a 1x1 stride-1 layer's row is one 8-channel
// run per block, with no gather. An NCHW input (a first layer with few channels) is converted to
// bf16 whole first, into scratch, and its rows copied in the order [C][kh][kw]: a kernel row's kw
// values are neighbours in a plane. The product's blocks
// are stored into the blocked output [N, Cout/8, Ho, Wo, 8] with bias, residual and activation.
#pragma once
#include <cstddef>
#include <cstdint>

#include "backend/cpu/conv.h"
#include "backend/cpu/gemm_bf16.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

// w: [Cout, C, kh, kw] as given to the op; B^T with K in the patch rows' order.
PackedBf16B conv_blocked_bf16_pack_weights(const ConvShape& s, bool nchw_input, const float* w);

// Bytes of the scratch conv2d_blocked_bf16 needs: an NCHW input as bf16, and for a layer of few
// output pixels (deep layers on small maps) all its patch rows, converted once before the product
// so that threads splitting the output channels share them.
size_t conv_blocked_bf16_scratch_bytes(const ConvShape& s, bool nchw_input, const PackedBf16B& w);

// y = act(conv(x, w) + bias + residual) with the layouts of conv2d_blocked (backend/cpu/conv_blocked.h);
// bias never null, residual shaped like y or null, scratch of conv_blocked_bf16_scratch_bytes (64-byte
// aligned).
// path: a hardware path this CPU has, or Reference.
void conv2d_blocked_bf16(const ConvShape& s, bool nchw_input, const float* x, const PackedBf16B& w,
                         const float* bias, const float* residual, const ConvActivation& act, float* y,
                         void* scratch, ThreadPool* pool, Bf16Path path);

}  // namespace cpu
}  // namespace mnnpy
