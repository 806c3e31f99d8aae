// Winograd F(4x4, 3x3) and F(2x2, 3x3) convolution in the blocked channel layout, compiled per SIMD
// target (Highway foreach_target) and dispatched at run time. See winograd.h for the algorithm.
//
// A pixel's 8 channels are one vector here, so the transforms run with a channel per lane and
// every load and store is a whole vector: no gathers of tiles into lanes as in the NCHW kernel.
// Work is split into blocks of tiles. A block
//   1. transforms the input patches of its tiles, channel block by channel block, into V: per
//      point xi of the transformed tile, a blocked "image" of the block's tiles as its pixels,
//      V[xi][C/8][tiles][8];
//   2. multiplies each point's image by that point's transformed weights: a 1x1 blocked
//      convolution, run by the register tiles of the direct kernel (conv_blocked_tiles-inl.h),
//      into M[xi][Cout/8][tiles][8];
//   3. transforms M back, adds the bias and the residual, applies the activation and writes each
//      tile's pixels.
// Tile blocks are sized so that V stays within L2; the weights are read once per block.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/winograd_blocked.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "backend/cpu/conv_blocked_tiles-inl.h"
#include "backend/cpu/winograd_transforms-inl.h"

#include <algorithm>
#include <vector>

#include "backend/cpu/conv_blocked.h"
#include "backend/cpu/thread_buffers.h"
#include "backend/cpu/winograd.h"
#include "mnnpy/thread_pool.h"

#ifndef MNNPY_WINOGRAD_BLOCKED_SHARED_ONCE
#define MNNPY_WINOGRAD_BLOCKED_SHARED_ONCE
namespace mnnpy {
namespace cpu {
namespace winograd_blocked_detail {

constexpr int64_t kInputBlockBytes = 1 << 20;  // V of one block: the size of L2
constexpr int64_t kMinBlockTiles = 12, kMaxBlockTiles = 128;

enum BufferSlot : int { kInputSlot, kProductSlot };  // this kernel's thread_buffer slots

using TilePlace = WinogradTilePlace;  // blocks hold real tiles only: no padding

// The layer and the block split, as every step sees them.
struct WinogradLayer {
  ConvShape s;
  int64_t in_blocks = 0, out_blocks = 0;
  int64_t tiles_h = 0, tiles_w = 0, tiles = 0;
  int64_t block = 0, n_blocks = 0;
};

}  // namespace winograd_blocked_detail
}  // namespace cpu
}  // namespace mnnpy
#endif  // MNNPY_WINOGRAD_BLOCKED_SHARED_ONCE

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace winograd_blocked_detail;

// Input channel blocks [cb0, cb1) of the tiles `places[0, tiles)` into V: value xi of tile j and
// channel block cb at V + xi * C * tiles + (cb * tiles + j) * 8. Pixels outside the image read as 0.
template <int OUT>
void transform_input(const WinogradLayer& g, const float* x, const TilePlace* places, int64_t tiles, int64_t cb0,
                     int64_t cb1, float* V) {
  constexpr int64_t kPatch = OUT + 2, kPoints = kPatch * kPatch;
  const D8 d;
  const ConvShape& s = g.s;
  const int64_t H = s.in_h, W = s.in_w, point_stride = s.in_c * tiles;
  for (int64_t cb = cb0; cb < cb1; ++cb) {
    for (int64_t j = 0; j < tiles; ++j) {
      const TilePlace& t = places[j];
      const float* plane = x + (t.image * g.in_blocks + cb) * H * W * kChannelBlock;
      const int64_t iy0 = t.oy - s.pad_top, ix0 = t.ox - s.pad_left;
      const bool inside = iy0 >= 0 && ix0 >= 0 && iy0 + kPatch <= H && ix0 + kPatch <= W;
      float* dst = V + (cb * tiles + j) * kChannelBlock;
      for (int h = 0; h < kVecPerBlock; ++h) {
        V8 patch[kPoints];
        for (int64_t r = 0; r < kPatch; ++r) {
          const int64_t iy = iy0 + r;
          for (int64_t q = 0; q < kPatch; ++q) {
            const int64_t ix = ix0 + q;
            patch[r * kPatch + q] = inside || (iy >= 0 && iy < H && ix >= 0 && ix < W)
                                        ? hn::LoadU(d, plane + (iy * W + ix) * kChannelBlock + h * kLanes)
                                        : hn::Zero(d);
          }
        }
        V8 points[kPoints];
        input_transform_2d<OUT>(d, patch, points);
        for (int64_t xi = 0; xi < kPoints; ++xi) hn::StoreU(points[xi], d, dst + xi * point_stride + h * kLanes);
      }
    }
  }
}

// M_xi = V_xi * U_xi for the points [xi0, xi1): a 1x1 convolution of each point's image of `tiles`
// pixels, with the direct kernel's register tiles. offsets: 0, 8, 16, ... (one per tile).
void multiply(const WinogradLayer& g, const float* U, const float* V, int64_t tiles, int64_t xi0, int64_t xi1,
              const int64_t* offsets, float* M) {
  const ConvShape& s = g.s;
  constexpr int64_t kPanelFloats = kBlockedPanelBlocks * kChannelBlock;
  std::vector<const float*> run_x((size_t)g.in_blocks);
  std::vector<int64_t> run_w((size_t)g.in_blocks);
  for (int64_t cb = 0; cb < g.in_blocks; ++cb) run_w[(size_t)cb] = cb * kChannelBlock;
  SpanArgs a;
  a.run_x = run_x.data();
  a.run_w = run_w.data();
  a.runs = g.in_blocks;
  a.run = kChannelBlock;
  a.bias = nullptr;  // the sums start from zero; the bias joins in the output transform
  a.y_block_stride = tiles * kChannelBlock;
  a.x_offsets = offsets;
  a.y_offsets = offsets;
  for (int64_t xi = xi0; xi < xi1; ++xi) {
    const float* V_xi = V + xi * s.in_c * tiles;
    const float* U_xi = U + xi * s.out_c * s.in_c;
    float* M_xi = M + xi * s.out_c * tiles;
    for (int64_t cb = 0; cb < g.in_blocks; ++cb) run_x[(size_t)cb] = V_xi + cb * tiles * kChannelBlock;
    for (int64_t ob = 0, nb = 0; ob < g.out_blocks; ob += nb) {
      nb = tile_blocks(ob, g.out_blocks);
      a.w = U_xi + (ob / kBlockedPanelBlocks) * kPanelFloats * s.in_c;
      a.w_next = nb > kBlockedPanelBlocks ? a.w + kPanelFloats * s.in_c : nullptr;
      a.y = M_xi + ob * tiles * kChannelBlock;
      run_span<true>(a, nb, tiles);
    }
  }
}

// Output blocks [ob0, ob1) of the tiles from M: A^T m A, plus the bias and the residual, then the
// activation; only the pixels inside the output are written.
template <int OUT>
void transform_output(const WinogradLayer& g, const float* M, const TilePlace* places, int64_t tiles, int64_t ob0,
                      int64_t ob1, const float* bias, const float* residual, const ConvActivation& act, float* y) {
  constexpr int64_t kPatch = OUT + 2;
  const D8 d;
  const ConvShape& s = g.s;
  const int64_t Ho = s.out_h, Wo = s.out_w, point_stride = s.out_c * tiles;
  for (int64_t ob = ob0; ob < ob1; ++ob) {
    for (int64_t j = 0; j < tiles; ++j) {
      const TilePlace& t = places[j];
      const int64_t rows = std::min<int64_t>(OUT, Ho - t.oy), cols_out = std::min<int64_t>(OUT, Wo - t.ox);
      const int64_t out_at = (((t.image * g.out_blocks + ob) * Ho + t.oy) * Wo + t.ox) * kChannelBlock;
      const float* m = M + (ob * tiles + j) * kChannelBlock;
      for (int h = 0; h < kVecPerBlock; ++h) {
        const V8 b = hn::LoadU(d, bias + ob * kChannelBlock + h * kLanes);
        V8 products[kPatch * kPatch], out[OUT * OUT];
        for (int64_t xi = 0; xi < kPatch * kPatch; ++xi) products[xi] = hn::LoadU(d, m + xi * point_stride + h * kLanes);
        output_transform_2d<OUT>(d, products, out);
        for (int64_t p = 0; p < rows; ++p) {
          for (int64_t q = 0; q < cols_out; ++q) {
            const int64_t at = out_at + (p * Wo + q) * kChannelBlock + h * kLanes;
            V8 v = hn::Add(out[p * OUT + q], b);
            if (residual) v = hn::Add(v, hn::LoadU(d, residual + at));
            hn::StoreU(activate(d, v, act), d, y + at);
          }
        }
      }
    }
  }
}

template <int OUT>
void conv_winograd_blocked(const ConvShape& s, const float* x, const float* U, const float* bias,
                           const float* residual, const ConvActivation& act, float* y, ThreadPool* pool) {
  constexpr int64_t kPoints = (OUT + 2) * (OUT + 2);
  WinogradLayer g;
  g.s = s;
  g.in_blocks = s.in_c / kChannelBlock;
  g.out_blocks = s.out_c / kChannelBlock;
  g.tiles_h = ceil_div(s.out_h, OUT);
  g.tiles_w = ceil_div(s.out_w, OUT);
  g.tiles = s.batch * g.tiles_h * g.tiles_w;
  if (g.tiles == 0 || s.out_c == 0) return;
  // Tile blocks: as many tiles as keep V within L2, then equalized.
  int64_t max_block = kInputBlockBytes / (kPoints * s.in_c * (int64_t)sizeof(float));
  max_block = std::min(std::max(max_block, kMinBlockTiles), kMaxBlockTiles);
  g.n_blocks = ceil_div(g.tiles, max_block);
  g.block = ceil_div(g.tiles, g.n_blocks);
  std::vector<int64_t> offsets((size_t)g.block);
  for (int64_t j = 0; j < g.block; ++j) offsets[(size_t)j] = j * kChannelBlock;
  const size_t v_floats = (size_t)(kPoints * s.in_c * g.block), m_floats = (size_t)(kPoints * s.out_c * g.block);
  const int threads = pool ? pool->num_threads() : 1;
  if (threads == 1 || g.n_blocks >= 2 * threads) {
    // Enough blocks for the threads: each block is one task, its V and M in the thread's cache.
    parallel_for(pool, g.n_blocks, 1, [&](int64_t b0, int64_t b1) {
      TilePlace places[kMaxBlockTiles];
      float* V = thread_buffer(kInputSlot, v_floats);
      float* M = thread_buffer(kProductSlot, m_floats);
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t tiles = std::min(g.block, g.tiles - b * g.block);
        place_winograd_tiles(b * g.block, tiles, g.tiles, g.tiles_h, g.tiles_w, OUT, places);
        transform_input<OUT>(g, x, places, tiles, 0, g.in_blocks, V);
        multiply(g, U, V, tiles, 0, kPoints, offsets.data(), M);
        transform_output<OUT>(g, M, places, tiles, 0, g.out_blocks, bias, residual, act, y);
      }
    });
    return;
  }
  // Few blocks (small maps): the threads share each block, in three steps over one V and one M:
  // input channel blocks, then the products of each point (each reads its own slice of the
  // weights once), then output channel blocks.
  TilePlace places[kMaxBlockTiles];
  float* V = thread_buffer(kInputSlot, v_floats);
  float* M = thread_buffer(kProductSlot, m_floats);
  for (int64_t b = 0; b < g.n_blocks; ++b) {
    const int64_t tiles = std::min(g.block, g.tiles - b * g.block);
    place_winograd_tiles(b * g.block, tiles, g.tiles, g.tiles_h, g.tiles_w, OUT, places);
    parallel_for(pool, g.in_blocks, 1, [&](int64_t c0, int64_t c1) {
      transform_input<OUT>(g, x, places, tiles, c0, c1, V);
    });
    parallel_for(pool, kPoints, 1, [&](int64_t xi0, int64_t xi1) {
      multiply(g, U, V, tiles, xi0, xi1, offsets.data(), M);
    });
    parallel_for(pool, g.out_blocks, 1, [&](int64_t o0, int64_t o1) {
      transform_output<OUT>(g, M, places, tiles, o0, o1, bias, residual, act, y);
    });
  }
}

void ConvWinogradBlockedImpl(const ConvShape& s, int tile, const float* x, const float* U, const float* bias,
                             const float* residual, const ConvActivation& act, float* y, ThreadPool* pool) {
  if (tile == 2) conv_winograd_blocked<2>(s, x, U, bias, residual, act, y, pool);
  else conv_winograd_blocked<4>(s, x, U, bias, residual, act, y, pool);
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
HWY_EXPORT(ConvWinogradBlockedImpl);

void conv2d_winograd_blocked(const ConvShape& s, int tile, const float* x, const float* packed_w, const float* bias,
                             const float* residual, const ConvActivation& act, float* y, ThreadPool* pool) {
  HWY_DYNAMIC_DISPATCH(ConvWinogradBlockedImpl)(s, tile, x, packed_w, bias, residual, act, y, pool);
}

}  // namespace cpu
}  // namespace mnnpy
#endif
