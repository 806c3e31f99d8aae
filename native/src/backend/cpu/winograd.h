// Winograd F(4x4, 3x3) and F(2x2, 3x3) float32 convolution (NCHW, 3x3, stride 1, dilation 1,
// group 1) on the CPU, compiled per SIMD target and picked at run time. `tile` is the output tile
// side, 4 or 2.
//
// Each 4x4 block of output pixels (a tile) is computed from a 6x6 input patch d and the 3x3 filter
// g as A^T [(G g G^T) . (B^T d B)] A: 36 products per channel pair instead of 144 multiply-adds
// (2x2 tiles: 16 products from a 4x4 patch instead of 36, with weights 16/9 the size of the
// direct ones instead of 4 times). The channel sums of those products are GEMMs,
// out_xi[Cout x tiles] = U_xi[Cout x Cin] * V_xi[Cin x tiles], one per position xi of the
// transformed tile.
#pragma once
#include <cstddef>
#include <cstdint>

#include "backend/cpu/conv.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

// Where one tile lies: its image and its first output pixel; image < 0 for padding tiles.
struct WinogradTilePlace {
  int64_t image, oy, ox;
};

// The places of tiles [first, first + count) of a layer with tiles_h x tiles_w tiles of side
// out_side per image and `tiles` in all; those past the last are padding.
inline void place_winograd_tiles(int64_t first, int64_t count, int64_t tiles, int64_t tiles_h, int64_t tiles_w,
                                 int64_t out_side, WinogradTilePlace* places) {
  for (int64_t j = 0; j < count; ++j) {
    const int64_t tile = first + j;
    if (tile >= tiles) {
      places[j] = WinogradTilePlace{-1, 0, 0};
      continue;
    }
    const int64_t image = tile / (tiles_h * tiles_w), rest = tile % (tiles_h * tiles_w);
    places[j] = WinogradTilePlace{image, (rest / tiles_w) * out_side, (rest % tiles_w) * out_side};
  }
}

// Whether the Winograd kernel computes this layer at all (the cost model decides whether it should).
bool winograd_supports(const ConvShape& s);
// Floats of the transformed, packed weights: 36 (16) matrices of round_up(Cout, kConvWeightRows) x Cin.
size_t winograd_packed_weight_floats(const ConvShape& s, int tile);
// w: [Cout, Cin, 3, 3] as given to the op.
void winograd_pack_weights(const ConvShape& s, int tile, const float* w, float* packed);
// y[N, Cout, Ho, Wo] = act(conv(x, w) + bias); packed_w from winograd_pack_weights, padded_bias from
// conv_pad_bias (at least Cout values).
void conv2d_winograd(const ConvShape& s, int tile, const float* x, const float* packed_w, const float* padded_bias,
                     const ConvActivation& act, float* y, ThreadPool* pool);

// The same in the blocked channel layout (winograd_blocked.cpp): x [N, C/8, H, W, 8], y and the
// residual [N, Cout/8, Ho, Wo, 8] (C and Cout multiples of 8). Each point's transformed weights are
// packed as the blocked kernel packs a 1x1 layer (conv_blocked.h): no padding rows.
size_t winograd_blocked_weight_floats(const ConvShape& s, int tile);
void winograd_blocked_pack_weights(const ConvShape& s, int tile, const float* w, float* packed);
// y = act(conv(x, w) + bias + residual); bias [Cout] (never null), residual null or shaped like y.
void conv2d_winograd_blocked(const ConvShape& s, int tile, const float* x, const float* packed_w, const float* bias,
                             const float* residual, const ConvActivation& act, float* y, ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
