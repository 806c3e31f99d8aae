// Max and average pooling, compiled once per SIMD target by Highway and chosen at run time.
// Per output row: the valid input rows are combined vertically into a row buffer whose
// padding holds the identity (-inf for max, 0 for sum), then a horizontal pass combines each
// window of that buffer, vectorized across output columns (stride 1 and 2 with plain and
// deinterleaving loads; other strides lane by lane).
// In the blocked layout [N, C/8, H, W, 8] each tap of a window is one 8-channel vector. Small
// windows combine their valid taps directly: interior pixels (every kernel column inside the input)
// eight at a time with independent accumulators, the rest one by one over their valid column range.
// Large windows (5x5 at stride 1 and up) take the two passes above, over pixel vectors. A
// whole-plane window is a sum or max of pixel vectors.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/pool.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/cpu/pool.h"
#include "backend/cpu/thread_buffers.h"
#include "mnnpy/thread_pool.h"

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <bool kMax, class V> HWY_INLINE V combine(V a, V b) { return kMax ? hn::Max(a, b) : hn::Add(a, b); }
template <bool kMax> HWY_INLINE float combine_scalar(float a, float b) { return kMax ? (b > a ? b : a) : a + b; }

// dst[i] = combination of rows[r][i] over r, for i in [0, n).
template <bool kMax> void vertical_t(const float* const* rows, int64_t row_count, int64_t n, float* HWY_RESTRICT dst) {
  const hn::ScalableTag<float> d;
  const int64_t N = (int64_t)hn::Lanes(d);
  int64_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    auto a0 = hn::LoadU(d, rows[0] + i), a1 = hn::LoadU(d, rows[0] + i + N);
    for (int64_t r = 1; r < row_count; ++r) {
      a0 = combine<kMax>(a0, hn::LoadU(d, rows[r] + i));
      a1 = combine<kMax>(a1, hn::LoadU(d, rows[r] + i + N));
    }
    hn::StoreU(a0, d, dst + i);
    hn::StoreU(a1, d, dst + i + N);
  }
  for (; i < n; ++i) {
    float a = rows[0][i];
    for (int64_t r = 1; r < row_count; ++r) a = combine_scalar<kMax>(a, rows[r][i]);
    dst[i] = a;
  }
}

// out[o] = combination of buf[o * stride + k * dilation], k in [0, kernel); average pooling then
// multiplies by row_scale * col_scale[o].
template <bool kMax>
void horizontal_t(const float* HWY_RESTRICT buf, int64_t out_w, int64_t stride, int64_t kernel, int64_t dilation,
                  float row_scale, const float* HWY_RESTRICT col_scale, float* HWY_RESTRICT out) {
  const hn::ScalableTag<float> d;
  const int64_t N = (int64_t)hn::Lanes(d);
  auto window = [&](int64_t o) {
    hn::Vec<decltype(d)> acc;
    for (int64_t k = 0; k < kernel; ++k) {
      const int64_t off = o * stride + k * dilation;
      hn::Vec<decltype(d)> v;
      if (stride == 1) {
        v = hn::LoadU(d, buf + off);
      } else {
        // Lanes of one parity: even offsets are the even lanes of a pair load at `off`.
        hn::Vec<decltype(d)> even, odd;
        hn::LoadInterleaved2(d, buf + (off & ~int64_t(1)), even, odd);
        v = (off & 1) ? odd : even;
      }
      acc = k == 0 ? v : combine<kMax>(acc, v);
    }
    if (!kMax) acc = hn::Mul(hn::Mul(acc, hn::Set(d, row_scale)), hn::LoadU(d, col_scale + o));
    hn::StoreU(acc, d, out + o);
  };
  int64_t o = 0;
  if (stride <= 2 && out_w >= N) {
    for (; o + N <= out_w; o += N) window(o);
    // The last partial vector overlaps the previous one: the same values are written again.
    if (o < out_w) window(out_w - N);
    return;
  }
  for (; o < out_w; ++o) {
    const float* w = buf + o * stride;
    float acc = w[0];
    for (int64_t k = 1; k < kernel; ++k) acc = combine_scalar<kMax>(acc, w[k * dilation]);
    out[o] = kMax ? acc : acc * row_scale * col_scale[o];
  }
}

void VerticalImpl(bool is_max, const float* const* rows, int64_t row_count, int64_t n, float* dst) {
  if (is_max) vertical_t<true>(rows, row_count, n, dst);
  else vertical_t<false>(rows, row_count, n, dst);
}

void HorizontalImpl(bool is_max, const float* buf, int64_t out_w, int64_t stride, int64_t kernel, int64_t dilation,
                    float row_scale, const float* col_scale, float* out) {
  if (is_max) horizontal_t<true>(buf, out_w, stride, kernel, dilation, row_scale, col_scale, out);
  else horizontal_t<false>(buf, out_w, stride, kernel, dilation, row_scale, col_scale, out);
}

// y[p] = max or scaled sum of the n contiguous values of plane p, for p in [0, planes).
void PlaneReduceImpl(bool is_max, const float* HWY_RESTRICT x, int64_t planes, int64_t n, float scale,
                     float* HWY_RESTRICT y) {
  const hn::ScalableTag<float> d;
  const int64_t N = (int64_t)hn::Lanes(d);
  for (int64_t p = 0; p < planes; ++p) {
    const float* row = x + p * n;
    int64_t i = 0;
    float result;
    if (is_max) {
      result = row[0];
      if (n >= N) {
        auto m0 = hn::LoadU(d, row), m1 = m0;
        for (i = N; i + 2 * N <= n; i += 2 * N) {
          m0 = hn::Max(m0, hn::LoadU(d, row + i));
          m1 = hn::Max(m1, hn::LoadU(d, row + i + N));
        }
        if (i + N <= n) { m0 = hn::Max(m0, hn::LoadU(d, row + i)); i += N; }
        result = hn::GetLane(hn::MaxOfLanes(d, hn::Max(m0, m1)));
      }
      for (; i < n; ++i) result = row[i] > result ? row[i] : result;
    } else {
      auto s0 = hn::Zero(d), s1 = hn::Zero(d);
      for (; i + 2 * N <= n; i += 2 * N) {
        s0 = hn::Add(s0, hn::LoadU(d, row + i));
        s1 = hn::Add(s1, hn::LoadU(d, row + i + N));
      }
      if (i + N <= n) { s0 = hn::Add(s0, hn::LoadU(d, row + i)); i += N; }
      result = hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
      for (; i < n; ++i) result += row[i];
      result *= scale;
    }
    y[p] = result;
  }
}

// ---------------------------------------------------------------- blocked layout [N, C/8, H, W, 8]
using DBlock = hn::CappedTag<float, 8>;
using VBlock = hn::Vec<DBlock>;
constexpr int64_t kBlockLanes = (int64_t)hn::MaxLanes(DBlock());
constexpr int kVecsPerPixel = (int)(8 / kBlockLanes);  // vectors per 8-channel pixel (1 on AVX2 and up)
// Output pixels computed together: their accumulators and a loaded tap fit the 16 registers of AVX2.
constexpr int kInteriorPixels = kVecsPerPixel == 1 ? 8 : 4;

template <bool kMax> HWY_INLINE VBlock block_identity() {
  return hn::Set(DBlock(), kMax ? -std::numeric_limits<float>::infinity() : 0.0f);
}

// acc[q] combines the `rows` x `cols` taps of pixel q (q < P): tap (k, j) of pixel q is at
// base + k * row_step + j * col_step + q * pixel_step.
template <bool kMax, int P>
HWY_INLINE void combine_taps(const float* HWY_RESTRICT base, int64_t rows, int64_t row_step, int64_t cols,
                             int64_t col_step, int64_t pixel_step, VBlock (&acc)[P][kVecsPerPixel]) {
  const DBlock d;
  for (int q = 0; q < P; ++q)
    for (int v = 0; v < kVecsPerPixel; ++v) acc[q][v] = block_identity<kMax>();
  for (int64_t k = 0; k < rows; ++k) {
    const float* row = base + k * row_step;
    for (int64_t j = 0; j < cols; ++j) {
      const float* tap = row + j * col_step;
      for (int q = 0; q < P; ++q)
        for (int v = 0; v < kVecsPerPixel; ++v)
          acc[q][v] = combine<kMax>(acc[q][v], hn::LoadU(d, tap + q * pixel_step + v * kBlockLanes));
    }
  }
}

// Stores pixels ow .. ow + P - 1 of acc; average pooling scales each by row_scale times its column's
// 1 / count (kNoScale: plain stores).
template <bool kNoScale, int P>
HWY_INLINE void store_pixels(const VBlock (&acc)[P][kVecsPerPixel], float row_scale, const PoolWindows& w, int64_t ow,
                             float* HWY_RESTRICT out) {
  const DBlock d;
  for (int q = 0; q < P; ++q) {
    const VBlock scale = kNoScale ? hn::Set(d, 1.0f) : hn::Set(d, row_scale * w.inv_count_w[ow + q]);
    for (int v = 0; v < kVecsPerPixel; ++v) {
      hn::StoreU(kNoScale ? acc[q][v] : hn::Mul(acc[q][v], scale), d, out + (ow + q) * 8 + v * kBlockLanes);
    }
  }
}

// Output rows [r0, r1) of the planes * out_h rows, each pixel from its valid taps directly.
template <bool kMax>
void blocked_rows_direct_t(const PoolGeometry& g, const PoolWindows& w, int64_t interior_begin, int64_t interior_end,
                           const float* HWY_RESTRICT x, float* HWY_RESTRICT y, int64_t r0, int64_t r1) {
  const int64_t pixel = 8, in_plane = g.in_h * g.in_w * pixel;
  const int64_t col_step = g.dilation_w * pixel, pixel_step = g.stride_w * pixel;
  const int64_t row_step = g.dilation_h * g.in_w * pixel;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t p = r / g.out_h, oh = r % g.out_h;
    const int64_t first = w.row_first[oh], rows = w.row_last[oh] - first;
    // Column offsets below are relative to input column 0 of the first valid row.
    const float* row0 = x + p * in_plane + (oh * g.stride_h - g.pad_top + first * g.dilation_h) * g.in_w * pixel;
    float* out = y + r * g.out_w * pixel;
    const float row_scale = kMax ? 1.0f : w.inv_count_h[oh];
    auto single = [&](int64_t ow) {
      const int64_t cf = w.col_first[ow];
      VBlock acc[1][kVecsPerPixel];
      combine_taps<kMax, 1>(row0 + (ow * g.stride_w - g.pad_left + cf * g.dilation_w) * pixel, rows, row_step,
                            w.col_last[ow] - cf, col_step, pixel_step, acc);
      store_pixels<kMax, 1>(acc, row_scale, w, ow, out);
    };
    int64_t ow = 0;
    for (; ow < interior_begin; ++ow) single(ow);
    for (; ow + kInteriorPixels <= interior_end; ow += kInteriorPixels) {
      VBlock acc[kInteriorPixels][kVecsPerPixel];
      combine_taps<kMax, kInteriorPixels>(row0 + (ow * g.stride_w - g.pad_left) * pixel, rows, row_step, g.kernel_w,
                                          col_step, pixel_step, acc);
      store_pixels<kMax, kInteriorPixels>(acc, row_scale, w, ow, out);
    }
    for (; ow < g.out_w; ++ow) single(ow);
  }
}

// The same by separable passes, for large windows: per output row, the valid input rows are combined
// into a row of pixels whose padding holds the identity (buffer: buffer_pixels pixels), then each
// output pixel combines kernel_w pixels of that row.
template <bool kMax>
void blocked_rows_separable_t(const PoolGeometry& g, const PoolWindows& w, int64_t buffer_pixels,
                              float* HWY_RESTRICT buffer, const float* HWY_RESTRICT x, float* HWY_RESTRICT y,
                              int64_t r0, int64_t r1) {
  const DBlock d;
  const int64_t pixel = 8, in_plane = g.in_h * g.in_w * pixel;
  const int64_t row_step = g.dilation_h * g.in_w * pixel;
  for (int64_t i = 0; i < buffer_pixels * pixel; i += kBlockLanes) hn::Store(block_identity<kMax>(), d, buffer + i);
  float* interior = buffer + g.pad_left * pixel;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t p = r / g.out_h, oh = r % g.out_h;
    const int64_t first = w.row_first[oh], rows = w.row_last[oh] - first;
    const float* row0 = x + p * in_plane + (oh * g.stride_h - g.pad_top + first * g.dilation_h) * g.in_w * pixel;
    int64_t iw = 0;
    for (; iw + kInteriorPixels <= g.in_w; iw += kInteriorPixels) {
      VBlock acc[kInteriorPixels][kVecsPerPixel];
      combine_taps<kMax, kInteriorPixels>(row0 + iw * pixel, rows, row_step, 1, 0, pixel, acc);
      store_pixels<true, kInteriorPixels>(acc, 1.0f, w, iw, interior);
    }
    for (; iw < g.in_w; ++iw) {
      VBlock acc[1][kVecsPerPixel];
      combine_taps<kMax, 1>(row0 + iw * pixel, rows, row_step, 1, 0, pixel, acc);
      store_pixels<true, 1>(acc, 1.0f, w, iw, interior);
    }
    float* out = y + r * g.out_w * pixel;
    const float row_scale = kMax ? 1.0f : w.inv_count_h[oh];
    const int64_t col_step = g.dilation_w * pixel, pixel_step = g.stride_w * pixel;
    int64_t ow = 0;
    for (; ow + kInteriorPixels <= g.out_w; ow += kInteriorPixels) {
      VBlock acc[kInteriorPixels][kVecsPerPixel];
      combine_taps<kMax, kInteriorPixels>(buffer + ow * pixel_step, 1, 0, g.kernel_w, col_step, pixel_step, acc);
      store_pixels<kMax, kInteriorPixels>(acc, row_scale, w, ow, out);
    }
    for (; ow < g.out_w; ++ow) {
      VBlock acc[1][kVecsPerPixel];
      combine_taps<kMax, 1>(buffer + ow * pixel_step, 1, 0, g.kernel_w, col_step, pixel_step, acc);
      store_pixels<kMax, 1>(acc, row_scale, w, ow, out);
    }
  }
}

// Planes [p0, p1), each `pixels` pixels reduced to one: max, or sum times scale.
template <bool kMax>
void blocked_planes_t(const float* HWY_RESTRICT x, int64_t pixels, float scale, float* HWY_RESTRICT y, int64_t p0,
                      int64_t p1) {
  const DBlock d;
  constexpr int kChains = 4;
  for (int64_t p = p0; p < p1; ++p) {
    const float* xp = x + p * pixels * 8;
    VBlock acc[kChains][kVecsPerPixel];
    const int64_t whole = pixels / kChains;
    combine_taps<kMax, kChains>(xp, 1, 0, whole, kChains * 8, 8, acc);
    for (int64_t i = whole * kChains; i < pixels; ++i)
      for (int v = 0; v < kVecsPerPixel; ++v)
        acc[0][v] = combine<kMax>(acc[0][v], hn::LoadU(d, xp + i * 8 + v * kBlockLanes));
    for (int v = 0; v < kVecsPerPixel; ++v) {
      VBlock total = combine<kMax>(combine<kMax>(acc[0][v], acc[1][v]), combine<kMax>(acc[2][v], acc[3][v]));
      if (!kMax) total = hn::Mul(total, hn::Set(d, scale));
      hn::StoreU(total, d, y + p * 8 + v * kBlockLanes);
    }
  }
}

void BlockedRowsImpl(bool is_max, const PoolGeometry& g, const PoolWindows& w, int64_t interior_begin,
                     int64_t interior_end, const float* x, float* y, int64_t r0, int64_t r1) {
  if (is_max) blocked_rows_direct_t<true>(g, w, interior_begin, interior_end, x, y, r0, r1);
  else blocked_rows_direct_t<false>(g, w, interior_begin, interior_end, x, y, r0, r1);
}

void BlockedRowsSeparableImpl(bool is_max, const PoolGeometry& g, const PoolWindows& w, int64_t buffer_pixels,
                              float* buffer, const float* x, float* y, int64_t r0, int64_t r1) {
  if (is_max) blocked_rows_separable_t<true>(g, w, buffer_pixels, buffer, x, y, r0, r1);
  else blocked_rows_separable_t<false>(g, w, buffer_pixels, buffer, x, y, r0, r1);
}

void BlockedPlanesImpl(bool is_max, const float* x, int64_t pixels, float scale, float* y, int64_t p0, int64_t p1) {
  if (is_max) blocked_planes_t<true>(x, pixels, scale, y, p0, p1);
  else blocked_planes_t<false>(x, pixels, scale, y, p0, p1);
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
HWY_EXPORT(VerticalImpl);
HWY_EXPORT(HorizontalImpl);
HWY_EXPORT(PlaneReduceImpl);
HWY_EXPORT(BlockedRowsImpl);
HWY_EXPORT(BlockedRowsSeparableImpl);
HWY_EXPORT(BlockedPlanesImpl);

namespace {
// Work per parallel chunk: enough to amortize a thread wake-up.
constexpr int64_t kGrainWork = 1 << 15;
constexpr int64_t kMaxLanes = 64;  // over-read slack for any vector width
}  // namespace

Pool2D::Pool2D(bool is_max, const PoolGeometry& g_counted, bool count_include_pad)
    : is_max_(is_max), g_(trim_padding_taps(g_counted)), windows_(g_counted, is_max, count_include_pad) {
  const PoolGeometry& g = g_;
  if (!is_max) {
    inv_count_w_padded_ = windows_.inv_count_w;
    inv_count_w_padded_.resize(g.out_w + kMaxLanes, 0.0f);
  }
  const int64_t last_read = (g.out_w - 1) * g.stride_w + (g.kernel_w - 1) * g.dilation_w + 1;
  buffer_len_ = std::max(last_read, g.pad_left + g.in_w) + 2 * kMaxLanes;
}

void Pool2D::run(const float* x, float* y, ThreadPool* pool) const {
  const PoolGeometry& g = g_;
  const int64_t plane_in = g.in_h * g.in_w, plane_out = g.out_h * g.out_w;
  if (g.planes == 0 || plane_out == 0) return;
  if (windows_.whole_plane) {
    const float scale = is_max_ ? 1.0f : (float)(1.0 / (double)plane_in);
    const int64_t grain = std::max<int64_t>(1, kGrainWork / std::max<int64_t>(1, plane_in));
    parallel_for(pool, g.planes, grain, [&](int64_t p0, int64_t p1) {
      HWY_DYNAMIC_DISPATCH(PlaneReduceImpl)(is_max_, x + p0 * plane_in, p1 - p0, plane_in, scale, y + p0);
    });
    return;
  }
  const float identity = is_max_ ? -std::numeric_limits<float>::infinity() : 0.0f;
  const int64_t row_work = g.kernel_h * g.in_w + g.kernel_w * g.out_w;
  const int64_t grain = std::max<int64_t>(1, kGrainWork / std::max<int64_t>(1, row_work));
  parallel_for(pool, g.planes * g.out_h, grain, [&](int64_t r0, int64_t r1) {
    // The buffer's padding keeps the identity; only [pad_left, pad_left + in_w) is rewritten.
    std::vector<float> buffer(buffer_len_, identity);
    std::vector<const float*> rows(g.kernel_h);
    float* interior = buffer.data() + g.pad_left;
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t p = r / g.out_h, oh = r % g.out_h;
      const float* plane = x + p * plane_in;
      const int64_t first = windows_.row_first[oh], last = windows_.row_last[oh];
      const int64_t start = oh * g.stride_h - g.pad_top;
      for (int64_t k = first; k < last; ++k) rows[k - first] = plane + (start + k * g.dilation_h) * g.in_w;
      if (last > first) {
        HWY_DYNAMIC_DISPATCH(VerticalImpl)(is_max_, rows.data(), last - first, g.in_w, interior);
      } else {
        std::fill(interior, interior + g.in_w, identity);  // a window row entirely in padding
      }
      const float row_scale = is_max_ ? 1.0f : windows_.inv_count_h[oh];
      HWY_DYNAMIC_DISPATCH(HorizontalImpl)(is_max_, buffer.data(), g.out_w, g.stride_w, g.kernel_w, g.dilation_w,
                                           row_scale, is_max_ ? nullptr : inv_count_w_padded_.data(),
                                           y + p * plane_out + oh * g.out_w);
    }
  });
}

BlockedPool2D::BlockedPool2D(bool is_max, const PoolGeometry& g_counted, bool count_include_pad)
    : is_max_(is_max), g_(trim_padding_taps(g_counted)), windows_(g_counted, is_max, count_include_pad) {
  const PoolGeometry& g = g_;
  // Windows with every column inside the input form one run of output columns.
  interior_begin_ = interior_end_ = 0;
  for (int64_t ow = 0; ow < g.out_w; ++ow) {
    if (windows_.col_first[ow] != 0 || windows_.col_last[ow] != g.kernel_w) continue;
    if (interior_end_ == 0) interior_begin_ = ow;
    interior_end_ = ow + 1;
  }
  // Taps read per output row: directly kernel_h * kernel_w per pixel; by passes kernel_h per input
  // pixel plus its store, then kernel_w per output pixel. Passes pay from 5x5 at stride 1 on (measured:
  // at 3x3 stride 1 the two are even, at 3x3 stride 2 direct wins).
  const int64_t direct_taps = g.kernel_h * g.kernel_w * g.out_w;
  const int64_t separable_taps = (g.kernel_h + 1) * g.in_w + g.kernel_w * g.out_w;
  separable_ = 4 * separable_taps < 3 * direct_taps;
  const int64_t last_read = (g.out_w - 1) * g.stride_w + (g.kernel_w - 1) * g.dilation_w + 1;
  buffer_pixels_ = std::max(last_read, g.pad_left + g.in_w);
}

void BlockedPool2D::run(const float* x, float* y, ThreadPool* pool) const {
  const PoolGeometry& g = g_;
  if (g.planes == 0 || g.out_h * g.out_w == 0) return;
  if (windows_.whole_plane) {
    const int64_t pixels = g.in_h * g.in_w;
    const float scale = is_max_ ? 1.0f : (float)(1.0 / (double)pixels);
    const int64_t grain = std::max<int64_t>(1, kGrainWork / std::max<int64_t>(1, pixels * 8));
    parallel_for(pool, g.planes, grain, [&](int64_t p0, int64_t p1) {
      HWY_DYNAMIC_DISPATCH(BlockedPlanesImpl)(is_max_, x, pixels, scale, y, p0, p1);
    });
    return;
  }
  const int64_t row_work = 8 * (separable_ ? g.kernel_h * g.in_w + g.kernel_w * g.out_w
                                           : g.kernel_h * g.kernel_w * g.out_w);
  const int64_t grain = std::max<int64_t>(1, kGrainWork / std::max<int64_t>(1, row_work));
  parallel_for(pool, g.planes * g.out_h, grain, [&](int64_t r0, int64_t r1) {
    if (separable_) {
      float* buffer = thread_buffer(0, (size_t)buffer_pixels_ * 8);
      HWY_DYNAMIC_DISPATCH(BlockedRowsSeparableImpl)(is_max_, g, windows_, buffer_pixels_, buffer, x, y, r0, r1);
    } else {
      HWY_DYNAMIC_DISPATCH(BlockedRowsImpl)(is_max_, g, windows_, interior_begin_, interior_end_, x, y, r0, r1);
    }
  });
}

}  // namespace cpu
}  // namespace mnnpy
#endif
