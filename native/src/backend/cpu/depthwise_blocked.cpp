// Depthwise convolution in the blocked channel layout, compiled per SIMD target (Highway
// foreach_target) and dispatched at run time.
//
// The 8 channels of a pixel are one vector (two on 128-bit targets), so every tap is a vector load
// times a weight vector. An output row is computed in tiles of several pixels with independent
// accumulators; with the kernel size and stride known at compile time (3x3 and 5x5, stride 1 and
// 2) each input pixel of a kernel row is loaded once and feeds every pixel of the tile that uses it.
// Kernel rows outside the image are skipped per output row; the tiles at a row's ends run a checked
// form of the same tile that leaves out the taps outside the row and stores only the row's pixels.
// Bias, residual and activation are applied before the result leaves the registers.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/depthwise_blocked.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "backend/cpu/conv_blocked_epilogue-inl.h"

#include <algorithm>

#include "backend/cpu/conv_blocked.h"
#include "backend/cpu/depthwise_blocked.h"
#include "backend/cpu/thread_buffers.h"
#include "mnnpy/thread_pool.h"

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace depthwise_blocked {

using D8 = hn::CappedTag<float, 8>;  // one pixel of a block: 1 vector (2 on 128-bit targets)
using V8 = hn::Vec<D8>;
constexpr int kLanes = (int)hn::MaxLanes(D8());
constexpr int kVecPerBlock = 8 / kLanes;
constexpr int64_t kB = kChannelBlock;

// Pixels per tile: 8 accumulators leave room for a kernel row's weights and the input vector in 16
// registers (twice the vectors per pixel on 128-bit targets: half the pixels).
constexpr int kTilePixels = 8 / kVecPerBlock > 0 ? 8 / kVecPerBlock : 1;

// Where a tile's results go and what is added on the way.
struct TileOut {
  const float* bias;      // the block's 8 biases
  const float* residual;  // at y's offset, or null
  float* y;               // the tile's first output pixel
  const ConvActivation* act;
};

template <int P>
HWY_INLINE void init_tile(V8 (&acc)[P][kVecPerBlock], const TileOut& o) {
  const D8 d;
  for (int h = 0; h < kVecPerBlock; ++h) {
    const V8 b = hn::LoadU(d, o.bias + h * kLanes);
    for (int p = 0; p < P; ++p) acc[p][h] = b;
  }
}

// Adds the residual, applies the activation and stores the first `count` pixels (all P unless
// kPartial).
template <int P, bool kPartial>
HWY_INLINE void store_tile(V8 (&acc)[P][kVecPerBlock], const TileOut& o, int64_t count) {
  const D8 d;
  if (o.residual) {
    for (int p = 0; p < P; ++p) {
      if (kPartial && p >= count) break;
      for (int h = 0; h < kVecPerBlock; ++h) acc[p][h] = hn::Add(acc[p][h], hn::LoadU(d, o.residual + p * kB + h * kLanes));
    }
  }
  const bool cheap = activate_cheap<P * kVecPerBlock>(d, &acc[0][0], *o.act);
  for (int p = 0; p < P; ++p) {
    if (kPartial && p >= count) break;
    for (int h = 0; h < kVecPerBlock; ++h) hn::StoreU(acc[p][h], d, o.y + p * kB + h * kLanes);
  }
  if (!cheap) activate_stored(d, o.y, 1, 0, (kPartial ? count : P) * kVecPerBlock, *o.act);
}

// P pixels of a K x K, stride S, dilation 1 kernel over kernel rows [0, rows): in is where the
// tile's first pixel's first tap would read in the first of those rows, w their weights
// ([rows][K][8]). kEdge: only the row's input pixels [lo, hi) exist (counted from in) and only
// `count` output pixels are stored; the other taps are left out, so nothing outside the row is read.
template <int K, int S, int P, bool kEdge>
HWY_NOINLINE void tile_fixed(const float* in, int64_t row_stride, int64_t rows, const float* HWY_RESTRICT w,
                             const TileOut& o, int64_t lo, int64_t hi, int64_t count) {
  const D8 d;
  V8 acc[P][kVecPerBlock];
  init_tile<P>(acc, o);
  constexpr int kInputs = (P - 1) * S + K;  // input pixels of one kernel row the tile reads
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = in + r * row_stride;
    const float* wr = w + r * K * kB;
    for (int h = 0; h < kVecPerBlock; ++h) {
      V8 wv[K];
      for (int kx = 0; kx < K; ++kx) wv[kx] = hn::LoadU(d, wr + kx * kB + h * kLanes);
#pragma GCC unroll 64
      for (int i = 0; i < kInputs; ++i) {
        if (kEdge && (i < lo || i >= hi)) continue;
        const V8 v = hn::LoadU(d, row + i * kB + h * kLanes);
#pragma GCC unroll 16
        for (int p = 0; p < P; ++p) {
          const int kx = i - p * S;  // folds away once the loops are unrolled
          if (kx >= 0 && kx < K) acc[p][h] = hn::MulAdd(v, wv[kx], acc[p][h]);
        }
      }
    }
  }
  store_tile<P, kEdge>(acc, o, count);
}

// Any kernel, stride and dilation: P pixels over kernel rows [0, rows). in: where the tile's first
// pixel's first tap would read in the first row; its input column is ix0. kEdge: taps outside
// [0, W) are left out and only `count` pixels stored.
template <int P, bool kEdge>
HWY_NOINLINE void tile_generic(const ConvShape& s, const float* in, int64_t row_stride, int64_t rows,
                               const float* HWY_RESTRICT w, const TileOut& o, int64_t ix0, int64_t count) {
  const D8 d;
  V8 acc[P][kVecPerBlock];
  init_tile<P>(acc, o);
  const int64_t kw = s.kernel_w, pixel_step = s.stride_w * kB, tap_step = s.dilation_w * kB;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t kx = 0; kx < kw; ++kx) {
      const float* src = in + r * row_stride + kx * tap_step;
      for (int h = 0; h < kVecPerBlock; ++h) {
        const V8 wv = hn::LoadU(d, w + (r * kw + kx) * kB + h * kLanes);
        for (int p = 0; p < P; ++p) {
          if (kEdge) {
            const int64_t ix = ix0 + p * s.stride_w + kx * s.dilation_w;
            if (p >= count || ix < 0 || ix >= s.in_w) continue;
          }
          acc[p][h] = hn::MulAdd(hn::LoadU(d, src + p * pixel_step + h * kLanes), wv, acc[p][h]);
        }
      }
    }
  }
  store_tile<P, kEdge>(acc, o, count);
}

// Square kernels of size 3 or 5 at equal strides 1 or 2 without dilation have compile-time tiles;
// this names them k * 10 + stride (31, 32, 51, 52), and every other layer 0 (the generic tile).
int fixed_kernel(const ConvShape& s) {
  const bool square = s.kernel_h == s.kernel_w && s.stride_h == s.stride_w && s.dilation_h == 1 && s.dilation_w == 1;
  const bool fixed = square && (s.kernel_h == 3 || s.kernel_h == 5) && (s.stride_h == 1 || s.stride_h == 2);
  return fixed ? (int)(s.kernel_h * 10 + s.stride_h) : 0;
}

// One output row in tiles of kTilePixels; tiles at the row's ends (taps outside the row, fewer
// pixels) take the checked form of the same tile. in: where output pixel 0's first tap would read
// (column -pad_left) in the first kernel row inside the image.
template <int K, int S>
void row_fixed(const ConvShape& s, const float* in, int64_t row_stride, int64_t rows, const float* w, TileOut o) {
  constexpr int64_t kInputs = (kTilePixels - 1) * S + K;
  float* const y0 = o.y;
  const float* const res0 = o.residual;
  for (int64_t ox = 0; ox < s.out_w; ox += kTilePixels) {
    const int64_t count = std::min<int64_t>(kTilePixels, s.out_w - ox);
    const int64_t ix0 = ox * S - s.pad_left;  // input column of the tile's first tap
    const int64_t lo = std::max<int64_t>(0, -ix0), hi = s.in_w - ix0;
    o.y = y0 + ox * kB;
    o.residual = res0 ? res0 + ox * kB : nullptr;
    const float* src = in + ox * S * kB;
    if (count == kTilePixels && lo == 0 && hi >= kInputs)
      tile_fixed<K, S, kTilePixels, false>(src, row_stride, rows, w, o, 0, kInputs, count);
    else
      tile_fixed<K, S, kTilePixels, true>(src, row_stride, rows, w, o, lo, hi, count);
  }
}

void row_generic(const ConvShape& s, const float* in, int64_t row_stride, int64_t rows, const float* w, TileOut o) {
  float* const y0 = o.y;
  const float* const res0 = o.residual;
  const int64_t last_tap = (s.kernel_w - 1) * s.dilation_w;
  for (int64_t ox = 0; ox < s.out_w; ox += kTilePixels) {
    const int64_t count = std::min<int64_t>(kTilePixels, s.out_w - ox);
    const int64_t ix0 = ox * s.stride_w - s.pad_left;
    o.y = y0 + ox * kB;
    o.residual = res0 ? res0 + ox * kB : nullptr;
    const float* src = in + ox * s.stride_w * kB;
    const bool inside = count == kTilePixels && ix0 >= 0 && ix0 + (count - 1) * s.stride_w + last_tap < s.in_w;
    if (inside) tile_generic<kTilePixels, false>(s, src, row_stride, rows, w, o, ix0, count);
    else tile_generic<kTilePixels, true>(s, src, row_stride, rows, w, o, ix0, count);
  }
}

// Output rows [oy0, oy1) of one image and channel block. x: the block's input plane [H][W][8], y and
// residual: its output planes, w: its weights [kh][kw][8], bias: its 8 biases.
void plane_rows(const ConvShape& s, int kernel, const float* x, const float* w, const float* bias,
                const float* residual, const ConvActivation& act, float* y, int64_t oy0, int64_t oy1) {
  const int64_t H = s.in_h, W = s.in_w, Wo = s.out_w, kh = s.kernel_h, kw = s.kernel_w;
  const int64_t row_stride = s.dilation_h * W * kB;
  for (int64_t oy = oy0; oy < oy1; ++oy) {
    const int64_t iy0 = oy * s.stride_h - s.pad_top;
    const auto [ky_lo, ky_hi] = taps_inside(oy, s.stride_h, s.pad_top, s.dilation_h, kh, H);  // rows in the image
    const int64_t rows = ky_hi - ky_lo;
    // Where output pixel 0's first tap would read in row ky_lo (column -pad_left): an offset base
    // only; the tiles read inside the row.
    const float* in = rows > 0 ? x + ((iy0 + ky_lo * s.dilation_h) * W - s.pad_left) * kB : x;
    const float* w_rows = w + ky_lo * kw * kB;
    const TileOut o{bias, residual ? residual + oy * Wo * kB : nullptr, y + oy * Wo * kB, &act};
    switch (kernel) {
      case 31: row_fixed<3, 1>(s, in, row_stride, rows, w_rows, o); break;
      case 32: row_fixed<3, 2>(s, in, row_stride, rows, w_rows, o); break;
      case 51: row_fixed<5, 1>(s, in, row_stride, rows, w_rows, o); break;
      case 52: row_fixed<5, 2>(s, in, row_stride, rows, w_rows, o); break;
      default: row_generic(s, in, row_stride, rows, w_rows, o); break;
    }
  }
}

}  // namespace depthwise_blocked

void ConvDepthwiseBlockedImpl(const ConvShape& s, const float* x, const float* packed_w, const float* bias,
                              const float* residual, const ConvActivation& act, float* y, ThreadPool* pool) {
  using namespace depthwise_blocked;
  const int64_t Ho = s.out_h, Wo = s.out_w;
  if (s.batch == 0 || Ho == 0 || Wo == 0) return;
  const int kernel = fixed_kernel(s);
  const int64_t blocks = s.in_c / kB, in_plane = s.in_h * s.in_w * kB, out_plane = Ho * Wo * kB;
  const int64_t taps = s.kernel_h * s.kernel_w;
  // Tasks: block planes, split into row chunks when there are too few planes for the threads.
  const int threads = pool ? pool->num_threads() : 1;
  const int64_t planes = s.batch * blocks;
  int64_t chunks = 1;
  if (threads > 1 && planes < 4 * threads) chunks = std::min(Ho, ceil_div(4 * threads, planes));
  const int64_t chunk_rows = ceil_div(Ho, chunks);
  chunks = ceil_div(Ho, chunk_rows);
  auto body = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t plane = t / chunks, chunk = t % chunks, cb = plane % blocks;
      const int64_t oy0 = chunk * chunk_rows, oy1 = std::min(Ho, oy0 + chunk_rows);
      plane_rows(s, kernel, x + plane * in_plane, packed_w + cb * taps * kB, bias + cb * kB,
                 residual ? residual + plane * out_plane : nullptr, act, y + plane * out_plane, oy0, oy1);
    }
  };
  // Small tasks are grouped so that a wake-up pays for itself.
  const int64_t task_macs = std::max<int64_t>(1, chunk_rows * Wo * taps);
  parallel_for(pool, planes * chunks, std::max<int64_t>(1, (int64_t(1) << 14) / task_macs), body);
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
HWY_EXPORT(ConvDepthwiseBlockedImpl);

size_t depthwise_blocked_weight_floats(const ConvShape& s) { return (size_t)(s.in_c * s.kernel_h * s.kernel_w); }

void depthwise_blocked_pack_weights(const ConvShape& s, const float* w, float* packed) {
  const int64_t taps = s.kernel_h * s.kernel_w;
  for (int64_t c = 0; c < s.in_c; ++c) {
    const int64_t cb = c / kChannelBlock, lane = c % kChannelBlock;
    for (int64_t t = 0; t < taps; ++t) packed[(cb * taps + t) * kChannelBlock + lane] = w[c * taps + t];
  }
}

void conv2d_depthwise_blocked(const ConvShape& s, const float* x, const float* packed_w, const float* bias,
                              const float* residual, const ConvActivation& act, float* y, ThreadPool* pool) {
  HWY_DYNAMIC_DISPATCH(ConvDepthwiseBlockedImpl)(s, x, packed_w, bias, residual, act, y, pool);
}

}  // namespace cpu
}  // namespace mnnpy
#endif
