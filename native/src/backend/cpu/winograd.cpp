// Winograd F(4x4, 3x3) and F(2x2, 3x3) convolution kernels, compiled per SIMD target (Highway foreach_target) and
// dispatched at run time. See winograd.h for the algorithm.
//
// Work is split into blocks of tiles. A block
//   1. transforms the 6x6 (4x4) input patches of its tiles, channel by channel, into V: for each of
//      the 36 (16) positions xi a Cin x tiles matrix stored as 16-wide column panels (the layout the
//      micro-kernel reads). The transform runs across SIMD lanes, one tile per lane;
//   2. runs the GEMMs U_xi * V_xi with an MR x 16 register tile into M (points x rows x tiles);
//   3. transforms M back, again one tile per lane, adds the bias, applies the activation and
//      writes each tile's 4x4 (2x2) pixels.
// Tile blocks are sized so that V stays within L2; the weights U (transformed once at plan time)
// are read once per block.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/winograd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "backend/cpu/conv_activation-inl.h"
#include "backend/cpu/simd_shared-inl.h"
#include "backend/cpu/winograd_transforms-inl.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "backend/cpu/winograd.h"
#include "backend/cpu/conv_blocked.h"
#include "backend/cpu/thread_buffers.h"
#include "mnnpy/thread_pool.h"

#ifndef MNNPY_WINOGRAD_SHARED_ONCE
#define MNNPY_WINOGRAD_SHARED_ONCE
namespace mnnpy {
namespace cpu {
namespace winograd_detail {

// F(OUT x OUT, 3x3): output pixels per tile side, input pixels per tile side (OUT + 3 - 1) and
// transformed values per tile and channel.
template <int OUT> struct WinoSize {
  static constexpr int64_t kOut = OUT, kPatch = OUT + 2, kPoints = kPatch * kPatch;
};
constexpr int64_t kMaxPoints = WinoSize<4>::kPoints;
constexpr int64_t kPanel = 16;                 // tiles per packed column panel
constexpr int64_t kMaxDepthStep = 256;         // channels per GEMM depth step: a B panel stays in L1
constexpr int64_t kInputBlockBytes = 1 << 20;  // V of one task: the size of L2
constexpr int64_t kMaxBlockTiles = 128;


enum BufferSlot : int { kInputSlot, kProductSlot };  // this kernel's thread_buffer slots

using TilePlace = WinogradTilePlace;  // padding tiles fill a block's last panel

}  // namespace winograd_detail
}  // namespace cpu
}  // namespace mnnpy
#endif  // MNNPY_WINOGRAD_SHARED_ONCE

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace winograd_detail;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
using WinoTile = GemmTile<float>;
static_assert(WinoTile::kPanel == kPanel, "Winograd panels are the GEMM's");
static_assert(kPanel % hn::MaxLanes(DF()) == 0, "a vector of tiles never straddles two panels");

// Transforms the input patches of the block's tiles (places[0..block)) for channels [c0, c1) into V:
// value xi of tile j and channel c at V[xi][j / 16][c][j % 16], i.e. per xi a Cin x block matrix in
// 16-wide panels.
template <int OUT>
void transform_input(const ConvShape& s, const float* x, const TilePlace* places, int64_t block, int64_t c0,
                     int64_t c1, float* V) {
  using T = WinoSize<OUT>;
  constexpr int64_t kPatch = T::kPatch, kPoints = T::kPoints;
  const DF d;
  constexpr int64_t L = (int64_t)hn::MaxLanes(DF());
  const int64_t C = s.in_c, H = s.in_h, W = s.in_w, HW = H * W;
  const int64_t point_stride = C * block;
  HWY_ALIGN float patch[kMaxPoints * L];
  for (int64_t c = c0; c < c1; ++c) {
    for (int64_t j0 = 0; j0 < block; j0 += L) {
      // Gather: patch[p * L + lane] is pixel p of the 6x6 patch of tile j0 + lane (zero outside).
      for (int64_t lane = 0; lane < L; ++lane) {
        const TilePlace& t = places[j0 + lane];
        if (t.image < 0) {
          for (int64_t p = 0; p < kPoints; ++p) patch[p * L + lane] = 0.f;
          continue;
        }
        const int64_t iy0 = t.oy - s.pad_top, ix0 = t.ox - s.pad_left;
        const float* plane = x + (t.image * C + c) * HW;
        if (iy0 >= 0 && ix0 >= 0 && iy0 + kPatch <= H && ix0 + kPatch <= W) {
          const float* src = plane + iy0 * W + ix0;
          for (int64_t r = 0; r < kPatch; ++r)
            for (int64_t q = 0; q < kPatch; ++q) patch[(r * kPatch + q) * L + lane] = src[r * W + q];
          continue;
        }
        for (int64_t r = 0; r < kPatch; ++r) {
          const int64_t iy = iy0 + r;
          const bool row_inside = iy >= 0 && iy < H;
          for (int64_t q = 0; q < kPatch; ++q) {
            const int64_t ix = ix0 + q;
            patch[(r * kPatch + q) * L + lane] = row_inside && ix >= 0 && ix < W ? plane[iy * W + ix] : 0.f;
          }
        }
      }
      VF in[kPoints], points[kPoints];
      for (int64_t p = 0; p < kPoints; ++p) in[p] = hn::Load(d, patch + p * L);
      input_transform_2d<OUT>(d, in, points);
      float* dst = V + (j0 / kPanel) * C * kPanel + c * kPanel + (j0 % kPanel);
      for (int64_t xi = 0; xi < kPoints; ++xi) hn::Store(points[xi], d, dst + xi * point_stride);
    }
  }
}

// C[MR x NP panels] (+)= U[MR x kc] * V[kc x NP panels]. a: packed weights of the tile's first row
// (row stride kConvWeightRows per depth step); b0/b1: panels (b1 read only when NP == 2). c is
// 64-byte aligned with row stride ldc (a multiple of 16).
template <int MR, int NP>
HWY_NOINLINE void product_tile(int64_t kc, const float* HWY_RESTRICT a, const float* HWY_RESTRICT b0,
                               const float* HWY_RESTRICT b1, float* HWY_RESTRICT c, int64_t ldc, bool accumulate) {
  constexpr int L = WinoTile::kLanes, VP = WinoTile::kVecPerPanel, NV = VP * NP;
  const DF d;
  VF acc[MR][NV];
  AccumulatePanels(d, acc, kc, a, kConvWeightRows, b0, b1);
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v) {
      float* dst = c + i * ldc + (v / VP) * kPanel + (v % VP) * L;
      hn::Store(accumulate ? hn::Add(acc[i][v], hn::Load(d, dst)) : acc[i][v], d, dst);
    }
}

// M[xi][r][j] = sum_c U_xi[r][c] V_xi[c][j] for the points [xi0, xi1), every row (padded to
// kConvWeightRows) and the block's tiles. The same for every tile size.
void multiply(const ConvShape& s, const float* U, const float* V, int64_t block, int64_t xi0, int64_t xi1,
              float* M) {
  constexpr int MR = WinoTile::kMR, NP = WinoTile::kPanels;
  const int64_t C = s.in_c, padded_rows = round_up(s.out_c, kConvWeightRows);
  const int64_t n_panels = block / kPanel;
  // Rows past the last output channel are zero weights: skip whole register tiles of them (64
  // channels pad to 72 rows, but with MR = 6 only 66 need computing).
  const int64_t r_end = round_up(s.out_c, MR);
  // Depth steps keep a B panel in L1 while the row tiles pass over it; a block of one panel (few
  // tiles: the weights are streamed, each value used 16 times) takes the whole depth at once, so
  // that each point's weights are read front to back in one stream.
  const int64_t kc_step = n_panels == 1 ? C : ceil_div(C, ceil_div(C, kMaxDepthStep));
  for (int64_t xi = xi0; xi < xi1; ++xi) {
    const float* U_xi = U + xi * padded_rows * C;
    const float* V_xi = V + xi * C * block;
    float* M_xi = M + xi * padded_rows * block;
    for (int64_t pc = 0; pc < C; pc += kc_step) {
      const int64_t kc = std::min(kc_step, C - pc);
      for (int64_t p = 0; p < n_panels; p += NP) {
        const float* b0 = V_xi + p * C * kPanel + pc * kPanel;
        const bool pair = NP == 2 && p + 1 < n_panels;
        for (int64_t i = 0; i < r_end; i += MR) {
          const float* a = U_xi + (i / kConvWeightRows) * C * kConvWeightRows + pc * kConvWeightRows +
                           i % kConvWeightRows;
          float* c = M_xi + i * block + p * kPanel;
          if (pair || NP == 1) product_tile<MR, NP>(kc, a, b0, b0 + C * kPanel, c, block, pc > 0);
          else product_tile<MR, 1>(kc, a, b0, b0, c, block, pc > 0);
        }
      }
    }
  }
}

// Transforms M back into output pixels for output channels [r0, min(r1, Cout)), adding the bias
// and applying the activation.
template <int OUT>
void transform_output(const ConvShape& s, const float* M, const TilePlace* places, int64_t block, int64_t r0,
                      int64_t r1, const float* bias, const ConvActivation& act, float* y) {
  using T = WinoSize<OUT>;
  constexpr int64_t kOut = T::kOut, kPatch = T::kPatch;
  const DF d;
  constexpr int64_t L = (int64_t)hn::MaxLanes(DF());
  const int64_t Ho = s.out_h, Wo = s.out_w, point_stride = round_up(s.out_c, kConvWeightRows) * block;
  HWY_ALIGN float pixels[kOut * kOut * L];
  for (int64_t r = r0; r < std::min(r1, s.out_c); ++r) {
    const VF b = hn::Set(d, bias[r]);
    for (int64_t j0 = 0; j0 < block; j0 += L) {
      if (places[j0].image < 0) break;  // padding tiles only at the block's end
      const float* m = M + r * block + j0;
      VF products[kPatch * kPatch], out[kOut * kOut];
      for (int64_t xi = 0; xi < kPatch * kPatch; ++xi) products[xi] = hn::Load(d, m + xi * point_stride);
      output_transform_2d<OUT>(d, products, out);
      for (int64_t p = 0; p < kOut * kOut; ++p) hn::Store(activate(d, hn::Add(out[p], b), act), d, pixels + p * L);
      for (int64_t lane = 0; lane < L; ++lane) {
        const TilePlace& t = places[j0 + lane];
        if (t.image < 0) break;
        float* dst = y + ((t.image * s.out_c + r) * Ho + t.oy) * Wo + t.ox;
        const int64_t h = std::min(kOut, Ho - t.oy), w = std::min(kOut, Wo - t.ox);
        for (int64_t p = 0; p < h; ++p)
          for (int64_t q = 0; q < w; ++q) dst[p * Wo + q] = pixels[(p * kOut + q) * L + lane];
      }
    }
  }
}

template <int OUT>
void conv_winograd(const ConvShape& s, const float* x, const float* U, const float* padded_bias,
                   const ConvActivation& act, float* y, ThreadPool* pool) {
  constexpr int64_t kOut = WinoSize<OUT>::kOut, kPoints = WinoSize<OUT>::kPoints;
  const int64_t tiles_h = ceil_div(s.out_h, kOut), tiles_w = ceil_div(s.out_w, kOut);
  const int64_t tiles = s.batch * tiles_h * tiles_w;
  if (tiles == 0 || s.out_c == 0) return;
  // Tile blocks: as many 16-tile panels as keep V within L2, then equalized.
  int64_t max_block = kInputBlockBytes / (kPoints * s.in_c * (int64_t)sizeof(float)) / kPanel * kPanel;
  max_block = std::min(std::max(max_block, kPanel), kMaxBlockTiles);
  int64_t n_blocks = ceil_div(tiles, max_block);
  const int64_t block = round_up(ceil_div(tiles, n_blocks), kPanel);
  n_blocks = ceil_div(tiles, block);
  const int64_t padded_rows = round_up(s.out_c, kConvWeightRows);
  const int threads = pool ? pool->num_threads() : 1;
  if (threads == 1 || n_blocks >= 2 * threads) {
    // Enough blocks for the threads: each block is one task, its V and M in the thread's L2.
    parallel_for(pool, n_blocks, 1, [&](int64_t b0, int64_t b1) {
      TilePlace places[kMaxBlockTiles];
      float* V = thread_buffer(kInputSlot, (size_t)(kPoints * s.in_c * block));
      float* M = thread_buffer(kProductSlot, (size_t)(kPoints * padded_rows * block));
      for (int64_t b = b0; b < b1; ++b) {
        place_winograd_tiles(b * block, block, tiles, tiles_h, tiles_w, kOut, places);
        transform_input<OUT>(s, x, places, block, 0, s.in_c, V);
        multiply(s, U, V, block, 0, kPoints, M);
        transform_output<OUT>(s, M, places, block, 0, padded_rows, padded_bias, act, y);
      }
    });
    return;
  }
  // Few blocks (small maps): the threads share each block, in three steps over one V and one M:
  // input channels, then the products of each point (each reads its own slice of the weights once), then
  // output channels. Splitting the blocks by output channels instead would transform the input
  // once per task and leave the tasks unequal.
  TilePlace places[kMaxBlockTiles];
  float* V = thread_buffer(kInputSlot, (size_t)(kPoints * s.in_c * block));
  float* M = thread_buffer(kProductSlot, (size_t)(kPoints * padded_rows * block));
  const int64_t row_panels = padded_rows / kConvWeightRows;
  for (int64_t b = 0; b < n_blocks; ++b) {
    place_winograd_tiles(b * block, block, tiles, tiles_h, tiles_w, kOut, places);
    parallel_for(pool, s.in_c, 8, [&](int64_t c0, int64_t c1) { transform_input<OUT>(s, x, places, block, c0, c1, V); });
    parallel_for(pool, kPoints, 1, [&](int64_t xi0, int64_t xi1) {
      multiply(s, U, V, block, xi0, xi1, M);
    });
    parallel_for(pool, row_panels, 1, [&](int64_t p0, int64_t p1) {
      const int64_t r0 = p0 * kConvWeightRows, r1 = p1 * kConvWeightRows;
      transform_output<OUT>(s, M, places, block, r0, r1, padded_bias, act, y);
    });
  }
}

void ConvWinogradImpl(const ConvShape& s, int tile, const float* x, const float* U, const float* padded_bias,
                      const ConvActivation& act, float* y, ThreadPool* pool) {
  if (tile == 2) conv_winograd<2>(s, x, U, padded_bias, act, y, pool);
  else conv_winograd<4>(s, x, U, padded_bias, act, y, pool);
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
HWY_EXPORT(ConvWinogradImpl);

namespace {
int64_t patch_side(int tile) { return tile + 2; }

// U = G g G^T for every pair of channels, written panel by panel: the output channels
// [r0, r0 + panel_rows) side by side (the inner loops run over them, which the compiler
// vectorizes), channel by channel, at packed + xi * plane + r0 * C + c * width + row, where
// width is panel_rows (pad: rows past Cout are zeros) or the panel's real rows.
void transform_weights(const ConvShape& s, int tile, const float* w, int64_t panel_rows, bool pad, float* packed) {
  // G of F(4, 3) for the points 0, 1, -1, 2, -2 and infinity, and of F(2, 3) for 0, 1, -1 and
  // infinity.
  static const float G4[6][3] = {{1.f / 4, 0, 0},
                                 {-1.f / 6, -1.f / 6, -1.f / 6},
                                 {-1.f / 6, 1.f / 6, -1.f / 6},
                                 {1.f / 24, 1.f / 12, 1.f / 6},
                                 {1.f / 24, -1.f / 12, 1.f / 6},
                                 {0, 0, 1}};
  static const float G2[4][3] = {{1, 0, 0}, {0.5f, 0.5f, 0.5f}, {0.5f, -0.5f, 0.5f}, {0, 0, 1}};
  constexpr int64_t kMaxRows = 16;
  const float(*G)[3] = tile == 2 ? G2 : G4;
  const int n = (int)patch_side(tile);
  const int64_t C = s.in_c, rows_total = pad ? round_up(s.out_c, panel_rows) : s.out_c, plane = rows_total * C;
  for (int64_t r0 = 0; r0 < rows_total; r0 += panel_rows) {
    float* panel = packed + r0 * C;
    const int64_t rows = std::min(panel_rows, s.out_c - r0), width = pad ? panel_rows : rows;
    for (int64_t c = 0; c < C; ++c) {
      float g[9][kMaxRows] = {};
      for (int64_t rr = 0; rr < rows; ++rr)
        for (int k = 0; k < 9; ++k) g[k][rr] = w[((r0 + rr) * C + c) * 9 + k];
      float Gg[6][3][kMaxRows];  // G g
      for (int i = 0; i < n; ++i)
        for (int k = 0; k < 3; ++k)
          for (int64_t rr = 0; rr < kMaxRows; ++rr)
            Gg[i][k][rr] = G[i][0] * g[k][rr] + G[i][1] * g[3 + k][rr] + G[i][2] * g[6 + k][rr];
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
          float* dst = panel + (i * n + j) * plane + c * width;
          for (int64_t rr = 0; rr < width; ++rr)
            dst[rr] = Gg[i][0][rr] * G[j][0] + Gg[i][1][rr] * G[j][1] + Gg[i][2][rr] * G[j][2];
        }
    }
  }
}

}  // namespace

bool winograd_supports(const ConvShape& s) {
  return s.kernel_h == 3 && s.kernel_w == 3 && s.stride_h == 1 && s.stride_w == 1 && s.dilation_h == 1 &&
         s.dilation_w == 1 && s.group == 1;
}

size_t winograd_packed_weight_floats(const ConvShape& s, int tile) {
  return (size_t)(patch_side(tile) * patch_side(tile) * round_up(s.out_c, kConvWeightRows) * s.in_c);
}

void winograd_pack_weights(const ConvShape& s, int tile, const float* w, float* packed) {
  static_assert(kConvWeightRows <= 16, "a panel's rows fit transform_weights' buffers");
  transform_weights(s, tile, w, kConvWeightRows, true, packed);
}

size_t winograd_blocked_weight_floats(const ConvShape& s, int tile) {
  return (size_t)(patch_side(tile) * patch_side(tile) * s.out_c * s.in_c);
}

void winograd_blocked_pack_weights(const ConvShape& s, int tile, const float* w, float* packed) {
  transform_weights(s, tile, w, kBlockedPanelBlocks * kChannelBlock, false, packed);
}

void conv2d_winograd(const ConvShape& s, int tile, const float* x, const float* packed_w, const float* padded_bias,
                     const ConvActivation& act, float* y, ThreadPool* pool) {
  HWY_DYNAMIC_DISPATCH(ConvWinogradImpl)(s, tile, x, packed_w, padded_bias, act, y, pool);
}

}  // namespace cpu
}  // namespace mnnpy
#endif
