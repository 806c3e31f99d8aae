// float32 2-D convolution kernels (NCHW) on the CPU, compiled per SIMD target and picked at run
// time. The families:
//   GEMM schemes: out[Cout_g x HoWo] = W[Cout_g x K] * cols[K x HoWo] per image and group, with
//     K = C_g * kh * kw. The weights are packed once into row panels; the columns (im2col, or the
//     input itself for 1x1 stride-1 layers) are packed straight into column panels, one cache-sized
//     block per task, so the full im2col matrix never exists.
//   Pixel rows (few output pixels): the same product transposed, out^T = cols^T * W^T, so that
//     output channels fill the packed panels instead of a 7x7 map's 49 pixels (conv_pixel_rows.cpp).
//   Depthwise direct: one input plane per output plane (backend/cpu/depthwise.h).
// Bias and activation are applied while the result is still in registers.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "ops/conv_shape.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

using ::mnnpy::ConvActivation;
using ::mnnpy::ConvActivationCode;
using ::mnnpy::ConvShape;
using ::mnnpy::kConvActClip;
using ::mnnpy::kConvActCount;
using ::mnnpy::kConvActGelu;
using ::mnnpy::kConvActHardSigmoid;
using ::mnnpy::kConvActHardSwish;
using ::mnnpy::kConvActNone;
using ::mnnpy::kConvActRelu;
using ::mnnpy::kConvActSigmoid;
using ::mnnpy::kConvActSilu;

enum class ConvScheme { Pointwise, Im2colGemm, Depthwise, Winograd, Winograd2x2, PixelRows };
// The output tile side of a Winograd scheme (4 or 2), 0 for the others.
inline int winograd_tile(ConvScheme scheme) {
  return scheme == ConvScheme::Winograd ? 4 : scheme == ConvScheme::Winograd2x2 ? 2 : 0;
}
const char* conv_scheme_name(ConvScheme s);
// The scheme the cost model picks for a layer.
ConvScheme choose_conv_scheme(const ConvShape& s);

// Rows per packed weight panel: a multiple of every target's micro-tile height (12, 6, 4, 3), so
// packed weights stay valid whichever SIMD target runs them.
constexpr int64_t kConvWeightRows = 12;
// Floats of packed weights (all groups) and of the padded bias for the GEMM schemes.
size_t conv_packed_weight_floats(const ConvShape& s);
size_t conv_padded_bias_floats(const ConvShape& s);
// w: [Cout, C/group, kh, kw] as given to the op.
void conv_pack_weights(const ConvShape& s, const float* w, float* packed);
// bias: [Cout] or null (zeros).
void conv_pad_bias(const ConvShape& s, const float* bias, float* padded);

// y[N, Cout, Ho, Wo] = act(conv(x, w) + bias) with weights from conv_pack_weights and bias from
// conv_pad_bias.
void conv2d_gemm(const ConvShape& s, const float* x, const float* packed_w, const float* padded_bias,
                 const ConvActivation& act, float* y, ThreadPool* pool);

// y = act(y + residual) over `count` floats: the end of a Conv2D with a residual, whose scheme
// then runs without the activation. Only device backends get such nodes (fused when lowering), so
// the CPU runs them where it takes over a node the device refused; as the Add and the activation
// it replaces, the residual is added to the rounded conv + bias.
void conv_add_residual(const float* residual, const ConvActivation& act, float* y, int64_t count, ThreadPool* pool);

// The pixel-rows GEMM scheme (backend/cpu/conv_pixel_rows.cpp), for layers with few output pixels:
// out^T[HoWo x Cout_g] = cols^T * W^T, the output channels in 16-wide packed panels, the pixels
// the register tile's rows, the result written transposed back to NCHW.
size_t conv_pixel_rows_weight_floats(const ConvShape& s);
// w: [Cout, C/group, kh, kw] as given to the op.
void conv_pixel_rows_pack_weights(const ConvShape& s, const float* w, float* packed);
// Weights from conv_pixel_rows_pack_weights, bias from conv_pad_bias.
void conv2d_pixel_rows(const ConvShape& s, const float* x, const float* packed_w, const float* padded_bias,
                       const ConvActivation& act, float* y, ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
