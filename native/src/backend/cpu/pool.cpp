// Max and average pooling, compiled once per SIMD target by Highway and chosen at run time.
// Per output row: the valid input rows are combined vertically into a row buffer whose
// padding holds the identity (-inf for max, 0 for sum), then a horizontal pass combines each
// window of that buffer, vectorized across output columns (stride 1 and 2 with plain and
// deinterleaving loads; other strides lane by lane).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/pool.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/cpu/pool.h"
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

namespace {
// Work per parallel chunk: enough to amortize a thread wake-up.
constexpr int64_t kGrainWork = 1 << 15;
constexpr int64_t kMaxLanes = 64;  // over-read slack for any vector width
}  // namespace

Pool2D::Pool2D(bool is_max, const PoolGeometry& g, bool count_include_pad) : is_max_(is_max), g_(g) {
  whole_plane_ = g.out_h == 1 && g.out_w == 1 && g.kernel_h == g.in_h && g.kernel_w == g.in_w && g.pad_top == 0 &&
                 g.pad_left == 0 && g.dilation_h == 1 && g.dilation_w == 1;
  row_first_.resize(g.out_h);
  row_last_.resize(g.out_h);
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    const int64_t start = oh * g.stride_h - g.pad_top;
    int64_t first = 0, last = g.kernel_h;
    while (first < last && start + first * g.dilation_h < 0) ++first;
    while (last > first && start + (last - 1) * g.dilation_h >= g.in_h) --last;
    row_first_[oh] = (int32_t)first;
    row_last_[oh] = (int32_t)last;
  }
  // Divisors factor into rows times columns: the counted region of a window is a rectangle.
  auto inverse_counts = [&](int64_t outs, int64_t in, int64_t stride, int64_t kernel, int64_t dilation,
                            int64_t pad_begin, int64_t pad_end) {
    std::vector<float> inv(outs);
    const int64_t lo = count_include_pad ? -pad_begin : 0, hi = count_include_pad ? in + pad_end : in;
    for (int64_t o = 0; o < outs; ++o) {
      int64_t count = 0;
      for (int64_t k = 0; k < kernel; ++k) {
        const int64_t i = o * stride - pad_begin + k * dilation;
        count += i >= lo && i < hi;
      }
      inv[o] = count ? (float)(1.0 / (double)count) : 0.0f;
    }
    return inv;
  };
  if (!is_max) {
    inv_count_h_ = inverse_counts(g.out_h, g.in_h, g.stride_h, g.kernel_h, g.dilation_h, g.pad_top, g.pad_bottom);
    inv_count_w_ = inverse_counts(g.out_w, g.in_w, g.stride_w, g.kernel_w, g.dilation_w, g.pad_left, g.pad_right);
    inv_count_w_.resize(g.out_w + kMaxLanes, 0.0f);
  }
  const int64_t last_read = (g.out_w - 1) * g.stride_w + (g.kernel_w - 1) * g.dilation_w + 1;
  buffer_len_ = std::max(last_read, g.pad_left + g.in_w) + 2 * kMaxLanes;
}

void Pool2D::run(const float* x, float* y, ThreadPool* pool) const {
  const PoolGeometry& g = g_;
  const int64_t plane_in = g.in_h * g.in_w, plane_out = g.out_h * g.out_w;
  if (g.planes == 0 || plane_out == 0) return;
  if (whole_plane_) {
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
      const int64_t first = row_first_[oh], last = row_last_[oh];
      const int64_t start = oh * g.stride_h - g.pad_top;
      for (int64_t k = first; k < last; ++k) rows[k - first] = plane + (start + k * g.dilation_h) * g.in_w;
      if (last > first) {
        HWY_DYNAMIC_DISPATCH(VerticalImpl)(is_max_, rows.data(), last - first, g.in_w, interior);
      } else {
        std::fill(interior, interior + g.in_w, identity);  // a window row entirely in padding
      }
      const float row_scale = is_max_ ? 1.0f : inv_count_h_[oh];
      HWY_DYNAMIC_DISPATCH(HorizontalImpl)(is_max_, buffer.data(), g.out_w, g.stride_w, g.kernel_w, g.dilation_w,
                                           row_scale, is_max_ ? nullptr : inv_count_w_.data(),
                                           y + p * plane_out + oh * g.out_w);
    }
  });
}

}  // namespace cpu
}  // namespace mnnpy
#endif
