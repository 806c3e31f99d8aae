// Canny edge detection (see cv_canny.h), compiled per SIMD target by Highway and chosen at run
// time. The image is cut into bands of rows, one task each. A band runs its rows through Sobel,
// magnitude and suppression keeping only three rows of gradients (so they stay in cache),
// grows its edges within the band, and writes its part of the result. Edges that reach a
// band's first or last row are grown across bands afterwards, on one thread, writing the
// result of the pixels they add.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/cv_canny.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "backend/cpu/cv_canny.h"
#include "backend/cpu/cv_canny_band.h"
#include "mnnpy/thread_pool.h"

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace cv_canny {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// tan(22.5 degrees) in 15-bit fixed point: the direction tests compare |dy| << 15 against
// |dx| * tan 22.5 and |dx| * tan 67.5 = that + (|dx| << 16), in wrapping 32-bit arithmetic.
constexpr int32_t kTan22 = 13573;

// Sobel's smoothing and first-derivative taps (binomial coefficients) of each aperture.
template <int A>
struct Taps;
template <>
struct Taps<3> {
  static constexpr int smooth[3] = {1, 2, 1};
  static constexpr int deriv[3] = {-1, 0, 1};
};
template <>
struct Taps<5> {
  static constexpr int smooth[5] = {1, 4, 6, 4, 1};
  static constexpr int deriv[5] = {-1, -2, 0, 2, 1};
};
template <>
struct Taps<7> {
  static constexpr int smooth[7] = {1, 6, 15, 20, 15, 6, 1};
  static constexpr int deriv[7] = {-1, -4, -5, 0, 5, 4, 1};
};

// The 7-tap sums, divided by 16 and rounded half to even (OpenCV scales them so).
HWY_INLINE int32_t scale_sixteenth(int32_t s) { return (s + 7 + ((s >> 4) & 1)) >> 4; }

// dx, dy of image row i (len = cols * channels elements). vs_buf / vd_buf: scratch rows of
// len + 2 * (A / 2) * channels for the vertical sums, replicated at both ends.
template <int A>
void sobel_row(const CannyJob& job, int64_t i, int16_t* vs_buf, int16_t* vd_buf, int16_t* HWY_RESTRICT dx,
               int16_t* HWY_RESTRICT dy) {
  constexpr int r = A / 2;
  const int64_t cn = job.channels, len = job.cols * cn, pad = r * cn;
  const uint8_t* lines[A];
  for (int k = 0; k < A; ++k) {
    const int64_t y = std::min<int64_t>(job.rows - 1, std::max<int64_t>(0, i + k - r));
    lines[k] = job.src + y * len;
  }
  int16_t* vs = vs_buf + pad;
  int16_t* vd = vd_buf + pad;
  const hn::ScalableTag<int16_t> d16;
  const hn::RebindToUnsigned<decltype(d16)> du16;
  const hn::Rebind<uint8_t, decltype(d16)> d8;
  const int64_t N16 = (int64_t)hn::Lanes(d16);
  auto widen = [&](const uint8_t* at) { return hn::BitCast(d16, hn::PromoteTo(du16, hn::LoadU(d8, at))); };
  int64_t e = 0;
  for (; e + N16 <= len; e += N16) {
    if constexpr (A == 3) {
      const auto a = widen(lines[0] + e), b = widen(lines[1] + e), c = widen(lines[2] + e);
      hn::StoreU(hn::Add(hn::Add(a, c), hn::ShiftLeft<1>(b)), d16, vs + e);
      hn::StoreU(hn::Sub(c, a), d16, vd + e);
    } else {
      auto s = hn::Zero(d16), t = hn::Zero(d16);
      for (int k = 0; k < A; ++k) {
        const auto x = widen(lines[k] + e);
        s = hn::Add(s, hn::Mul(x, hn::Set(d16, (int16_t)Taps<A>::smooth[k])));
        if (Taps<A>::deriv[k] != 0) t = hn::Add(t, hn::Mul(x, hn::Set(d16, (int16_t)Taps<A>::deriv[k])));
      }
      hn::StoreU(s, d16, vs + e);
      hn::StoreU(t, d16, vd + e);
    }
  }
  for (; e < len; ++e) {
    int s = 0, t = 0;
    for (int k = 0; k < A; ++k) {
      s += Taps<A>::smooth[k] * lines[k][e];
      t += Taps<A>::deriv[k] * lines[k][e];
    }
    vs[e] = (int16_t)s;
    vd[e] = (int16_t)t;
  }
  for (int64_t q = 1; q <= r; ++q) {
    for (int64_t c = 0; c < cn; ++c) {
      vs[-q * cn + c] = vs[c];
      vd[-q * cn + c] = vd[c];
      vs[len - cn + q * cn + c] = vs[len - cn + c];
      vd[len - cn + q * cn + c] = vd[len - cn + c];
    }
  }
  e = 0;
  if constexpr (A < 7) {
    // Apertures 3 and 5 stay within 16 bits all along (at most 24480).
    for (; e + N16 <= len; e += N16) {
      if constexpr (A == 3) {
        hn::StoreU(hn::Sub(hn::LoadU(d16, vs + e + cn), hn::LoadU(d16, vs + e - cn)), d16, dx + e);
        const auto sum = hn::Add(hn::LoadU(d16, vd + e - cn), hn::LoadU(d16, vd + e + cn));
        hn::StoreU(hn::Add(sum, hn::ShiftLeft<1>(hn::LoadU(d16, vd + e))), d16, dy + e);
      } else {
        auto gx = hn::Zero(d16), gy = hn::Zero(d16);
        for (int k = 0; k < A; ++k) {
          const int64_t at = e + (k - r) * cn;
          const auto deriv = hn::Set(d16, (int16_t)Taps<A>::deriv[k]);
          const auto smooth = hn::Set(d16, (int16_t)Taps<A>::smooth[k]);
          if (Taps<A>::deriv[k] != 0) gx = hn::Add(gx, hn::Mul(hn::LoadU(d16, vs + at), deriv));
          gy = hn::Add(gy, hn::Mul(hn::LoadU(d16, vd + at), smooth));
        }
        hn::StoreU(gx, d16, dx + e);
        hn::StoreU(gy, d16, dy + e);
      }
    }
  } else {
    // Aperture 7 sums reach 326400: 32 bits, then scaled by 1/16.
    const hn::ScalableTag<int32_t> d32;
    const hn::Rebind<int16_t, decltype(d32)> dh;
    const int64_t N32 = (int64_t)hn::Lanes(d32);
    const auto seven = hn::Set(d32, 7), one = hn::Set(d32, 1);
    for (; e + N32 <= len; e += N32) {
      auto gx = hn::Zero(d32), gy = hn::Zero(d32);
      for (int k = 0; k < A; ++k) {
        const int64_t at = e + (k - r) * cn;
        if (Taps<A>::deriv[k] != 0)
          gx = hn::Add(gx, hn::Mul(hn::PromoteTo(d32, hn::LoadU(dh, vs + at)), hn::Set(d32, Taps<A>::deriv[k])));
        gy = hn::Add(gy, hn::Mul(hn::PromoteTo(d32, hn::LoadU(dh, vd + at)), hn::Set(d32, Taps<A>::smooth[k])));
      }
      gx = hn::ShiftRight<4>(hn::Add(gx, hn::Add(seven, hn::And(hn::ShiftRight<4>(gx), one))));
      gy = hn::ShiftRight<4>(hn::Add(gy, hn::Add(seven, hn::And(hn::ShiftRight<4>(gy), one))));
      hn::StoreU(hn::DemoteTo(dh, gx), dh, dx + e);
      hn::StoreU(hn::DemoteTo(dh, gy), dh, dy + e);
    }
  }
  for (; e < len; ++e) {
    int32_t gx = 0, gy = 0;
    for (int k = 0; k < A; ++k) {
      gx += Taps<A>::deriv[k] * vs[e + (k - r) * cn];
      gy += Taps<A>::smooth[k] * vd[e + (k - r) * cn];
    }
    if constexpr (A == 7) {
      gx = scale_sixteenth(gx);
      gy = scale_sixteenth(gy);
    }
    dx[e] = (int16_t)gx;
    dy[e] = (int16_t)gy;
  }
}

// L1 (|dx| + |dy|) or L2 (dx^2 + dy^2, wrapping as OpenCV's int arithmetic) magnitudes.
void magnitude_row(const int16_t* HWY_RESTRICT dx, const int16_t* HWY_RESTRICT dy, int64_t n, bool l2,
                   int32_t* HWY_RESTRICT mag) {
  const hn::ScalableTag<int32_t> d;
  const hn::Rebind<int16_t, decltype(d)> dh;
  const int64_t N = (int64_t)hn::Lanes(d);
  int64_t e = 0;
  if (l2) {
    for (; e + N <= n; e += N) {
      const auto a = hn::PromoteTo(d, hn::LoadU(dh, dx + e)), b = hn::PromoteTo(d, hn::LoadU(dh, dy + e));
      hn::StoreU(hn::Add(hn::Mul(a, a), hn::Mul(b, b)), d, mag + e);
    }
    for (; e < n; ++e) mag[e] = (int32_t)((uint32_t)(dx[e] * dx[e]) + (uint32_t)(dy[e] * dy[e]));
  } else {
    // OpenCV takes |v| in 16 bits over the rows' multiples of 8 elements (|-32768| stays
    // -32768 there) and in 32 bits over the rest.
    const int64_t wrapped_end = n - n % 8;
    for (; e + N <= wrapped_end; e += N) {
      const auto a = hn::PromoteTo(d, hn::Abs(hn::LoadU(dh, dx + e)));
      const auto b = hn::PromoteTo(d, hn::Abs(hn::LoadU(dh, dy + e)));
      hn::StoreU(hn::Add(a, b), d, mag + e);
    }
    for (; e < n; ++e) {
      const int32_t a = std::abs((int32_t)dx[e]), b = std::abs((int32_t)dy[e]);
      mag[e] = e < wrapped_end ? (int32_t)(int16_t)a + (int32_t)(int16_t)b : a + b;
    }
  }
}

// The suppression state of one pixel (also the scalar tail of suppress_row).
HWY_INLINE uint8_t suppress_pixel(const int32_t* prev, const int32_t* here, const int32_t* next, int64_t j,
                                  int32_t xs, int32_t ys, int32_t low, int32_t high) {
  const int32_t m = here[j];
  if (m <= low) return kNone;
  const int32_t x = std::abs(xs), y = std::abs(ys) << 15;
  const int32_t tg22x = x * kTan22;
  bool keep;
  if (y < tg22x) {
    keep = m > here[j - 1] && m >= here[j + 1];
  } else {
    const int32_t tg67x = (int32_t)((uint32_t)tg22x + ((uint32_t)x << 16));
    if (y > tg67x) {
      keep = m > prev[j] && m >= next[j];
    } else {
      const int64_t s = (xs ^ ys) < 0 ? -1 : 1;
      keep = m > prev[j - s] && m > next[j + s];
    }
  }
  if (!keep) return kNone;
  return m > high ? kStrong : kWeak;
}

// Non-maximum suppression of one row: its states into map_row, its edges onto the stack.
void suppress_row(const int32_t* prev, const int32_t* here, const int32_t* next, const int16_t* HWY_RESTRICT gx,
                  const int16_t* HWY_RESTRICT gy, int64_t cols, int32_t low, int32_t high, uint8_t* map_row,
                  std::vector<uint8_t*>& stack) {
  const hn::ScalableTag<int32_t> d;
  const hn::Rebind<int16_t, decltype(d)> dh;
  const hn::Rebind<uint8_t, decltype(d)> d8;
  const int64_t N = (int64_t)hn::Lanes(d);
  const auto low_v = hn::Set(d, low), high_v = hn::Set(d, high), tan22 = hn::Set(d, kTan22);
  const auto zero = hn::Zero(d), none = hn::Set(d, kNone), strong_state = hn::Set(d, kStrong);
  const auto none8 = hn::Set(d8, kNone);
  int64_t j = 0;
  for (; j + N <= cols; j += N) {
    const auto m = hn::LoadU(d, here + j);
    const auto above_low = hn::Gt(m, low_v);
    if (hn::AllFalse(d, above_low)) {
      hn::StoreU(none8, d8, map_row + j);
      continue;
    }
    const auto xs = hn::PromoteTo(d, hn::LoadU(dh, gx + j)), ys = hn::PromoteTo(d, hn::LoadU(dh, gy + j));
    const auto x = hn::Abs(xs), y = hn::ShiftLeft<15>(hn::Abs(ys));
    const auto tg22x = hn::Mul(x, tan22);
    const auto tg67x = hn::Add(tg22x, hn::ShiftLeft<16>(x));
    const auto horizontal = hn::Lt(y, tg22x), vertical = hn::Gt(y, tg67x);
    // m > before && m >= after, as !(after > m) && m > before.
    const auto keep_h = hn::AndNot(hn::Gt(hn::LoadU(d, here + j + 1), m), hn::Gt(m, hn::LoadU(d, here + j - 1)));
    const auto keep_v = hn::AndNot(hn::Gt(hn::LoadU(d, next + j), m), hn::Gt(m, hn::LoadU(d, prev + j)));
    // Opposite signs: the diagonal runs from the upper right to the lower left.
    const auto opposite = hn::Lt(hn::Xor(xs, ys), zero);
    const auto before = hn::IfThenElse(opposite, hn::LoadU(d, prev + j + 1), hn::LoadU(d, prev + j - 1));
    const auto after = hn::IfThenElse(opposite, hn::LoadU(d, next + j - 1), hn::LoadU(d, next + j + 1));
    const auto keep_d = hn::And(hn::Gt(m, before), hn::Gt(m, after));
    const auto keep_slanted = hn::Or(hn::And(vertical, keep_v), hn::AndNot(vertical, keep_d));
    const auto keep = hn::And(above_low, hn::Or(hn::And(horizontal, keep_h), hn::AndNot(horizontal, keep_slanted)));
    const auto strong = hn::And(keep, hn::Gt(m, high_v));
    const auto state = hn::IfThenElse(keep, hn::IfThenElseZero(strong, strong_state), none);
    hn::StoreU(hn::DemoteTo(d8, state), d8, map_row + j);
    if (!hn::AllFalse(d, strong)) {
      for (int64_t k = 0; k < N; ++k) {
        if (map_row[j + k] == kStrong) stack.push_back(map_row + j + k);
      }
    }
  }
  for (; j < cols; ++j) {
    const uint8_t state = suppress_pixel(prev, here, next, j, gx[j], gy[j], low, high);
    map_row[j] = state;
    if (state == kStrong) stack.push_back(map_row + j);
  }
}

// Grows the band's edges through its weak candidates, never leaving its rows; pixels of its
// first or last row (where a neighbouring band lies beyond) go to `border` for later.
void grow_in_band(std::vector<uint8_t*>& stack, uint8_t* first_row, uint8_t* last_row, int64_t stride, bool open_top,
                  bool open_bottom, std::vector<uint8_t*>* border) {
  uint8_t* const top_end = first_row + stride;
  auto visit = [&stack](uint8_t* q) {
    if (*q == kWeak) {
      *q = kStrong;
      stack.push_back(q);
    }
  };
  while (!stack.empty()) {
    uint8_t* p = stack.back();
    stack.pop_back();
    const bool top = open_top && p < top_end, bottom = open_bottom && p >= last_row;
    if (top || bottom) border->push_back(p);
    visit(p - 1);
    visit(p + 1);
    if (!top) {
      visit(p - stride - 1);
      visit(p - stride);
      visit(p - stride + 1);
    }
    if (!bottom) {
      visit(p + stride - 1);
      visit(p + stride);
      visit(p + stride + 1);
    }
  }
}

// The result of rows r0 .. r1 - 1: 255 for edges, 0 elsewhere.
void write_edges(const CannyJob& job, int64_t r0, int64_t r1) {
  const hn::ScalableTag<uint8_t> d8;
  const int64_t N = (int64_t)hn::Lanes(d8);
  const auto strong = hn::Set(d8, kStrong);
  for (int64_t i = r0; i < r1; ++i) {
    const uint8_t* states = job.map + (i + 1) * job.map_stride + 1;
    uint8_t* out = job.edges + i * job.cols;
    int64_t j = 0;
    for (; j + N <= job.cols; j += N) {
      hn::StoreU(hn::VecFromMask(d8, hn::Eq(hn::LoadU(d8, states + j), strong)), d8, out + j);
    }
    for (; j < job.cols; ++j) out[j] = states[j] == kStrong ? 255 : 0;
  }
}

template <int A>
void canny_band(const CannyJob& job, int64_t r0, int64_t r1, std::vector<uint8_t*>* border) {
  const int64_t rows = job.rows, cols = job.cols, cn = job.channels, len = cols * cn;
  const bool from_image = job.src != nullptr;
  const int64_t pad = (int64_t)(A / 2) * cn;
  // Three rows of magnitudes (a zero on each side) and of the derivatives they came from.
  std::vector<int32_t> mag_store((size_t)(3 * (cols + 2)));
  std::vector<int16_t> deriv_store((size_t)(6 * cols));
  std::vector<int16_t> vs, vd, dx_all, dy_all;
  std::vector<int32_t> mag_all;
  if (from_image) {
    vs.resize((size_t)(len + 2 * pad));
    vd.resize((size_t)(len + 2 * pad));
  }
  if (cn > 1) {
    mag_all.resize((size_t)len);
    if (from_image) {
      dx_all.resize((size_t)len);
      dy_all.resize((size_t)len);
    }
  }
  int32_t* mags[3];
  const int16_t* gxs[3];
  const int16_t* gys[3];
  for (int s = 0; s < 3; ++s) mags[s] = mag_store.data() + s * (cols + 2) + 1;

  auto gradient_row = [&](int64_t i, int slot) {
    int32_t* mag = mags[slot];
    if (i < 0 || i >= rows) {
      std::fill(mag - 1, mag + cols + 1, 0);
      return;
    }
    int16_t* own_x = deriv_store.data() + (2 * slot) * cols;
    int16_t* own_y = own_x + cols;
    const int16_t *gx, *gy;
    if (from_image) {
      int16_t* ox = cn == 1 ? own_x : dx_all.data();
      int16_t* oy = cn == 1 ? own_y : dy_all.data();
      sobel_row<A>(job, i, vs.data(), vd.data(), ox, oy);
      gx = ox;
      gy = oy;
    } else {
      gx = job.dx + i * len;
      gy = job.dy + i * len;
    }
    if (cn == 1) {
      magnitude_row(gx, gy, cols, job.l2, mag);
      gxs[slot] = gx;
      gys[slot] = gy;
    } else {
      // The channel with the largest magnitude (the first of equal ones) stands for the pixel.
      magnitude_row(gx, gy, len, job.l2, mag_all.data());
      for (int64_t j = 0; j < cols; ++j) {
        int64_t best = j * cn;
        for (int64_t k = 1; k < cn; ++k) {
          if (mag_all[j * cn + k] > mag_all[best]) best = j * cn + k;
        }
        mag[j] = mag_all[best];
        own_x[j] = gx[best];
        own_y[j] = gy[best];
      }
      gxs[slot] = own_x;
      gys[slot] = own_y;
    }
    mag[-1] = mag[cols] = 0;
  };

  std::vector<uint8_t*> stack;
  stack.reserve((size_t)std::max<int64_t>(1024, cols * 4));
  const int64_t stride = job.map_stride;
  gradient_row(r0 - 1, 0);
  gradient_row(r0, 1);
  for (int64_t i = r0; i < r1; ++i) {
    const int prev = (int)((i - r0) % 3), here = (int)((i - r0 + 1) % 3), next = (int)((i - r0 + 2) % 3);
    gradient_row(i + 1, next);
    uint8_t* map_row = job.map + (i + 1) * stride + 1;
    map_row[-1] = map_row[cols] = kNone;
    suppress_row(mags[prev], mags[here], mags[next], gxs[here], gys[here], cols, job.low, job.high, map_row, stack);
  }
  grow_in_band(stack, job.map + (r0 + 1) * stride, job.map + r1 * stride, stride, r0 > 0, r1 < rows, border);
  write_edges(job, r0, r1);
}

void CannyBandImpl(const CannyJob& job, int64_t r0, int64_t r1, std::vector<uint8_t*>* border) {
  if (job.src == nullptr || job.aperture == 3) return canny_band<3>(job, r0, r1, border);
  if (job.aperture == 5) return canny_band<5>(job, r0, r1, border);
  return canny_band<7>(job, r0, r1, border);
}

}  // namespace HWY_NAMESPACE
}  // namespace cv_canny
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
namespace cv_canny {

HWY_EXPORT(CannyBandImpl);

namespace {

// OpenCV's cvFloor of a threshold: values beyond int range (and NaN) become INT_MIN.
int32_t floor_threshold(double t) {
  const double f = std::floor(t);
  if (!(f >= -2147483648.0 && f <= 2147483647.0)) return INT32_MIN;
  return (int32_t)f;
}

void run(CannyJob& job, double low, double high, ThreadPool* pool) {
  if (job.l2) {
    low = std::min(32767.0, low);
    high = std::min(32767.0, high);
    if (low > 0) low *= low;
    if (high > 0) high *= high;
  }
  job.low = floor_threshold(low);
  job.high = floor_threshold(high);
  const int64_t rows = job.rows, cols = job.cols;
  job.map_stride = cols + 2;
  std::unique_ptr<uint8_t[]> map(new uint8_t[(size_t)((rows + 2) * job.map_stride)]);
  job.map = map.get();
  std::memset(job.map, kNone, (size_t)job.map_stride);
  std::memset(job.map + (rows + 1) * job.map_stride, kNone, (size_t)job.map_stride);

  // A few bands per thread balance the load; each costs two extra gradient rows.
  const int threads = pool ? pool->num_threads() : 1;
  const int64_t bands = threads <= 1 ? 1 : std::max<int64_t>(1, std::min<int64_t>(threads * 2, rows / 32));
  std::vector<std::vector<uint8_t*>> borders((size_t)bands);
  const CannyJob& shared = job;
  parallel_for(pool, bands, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      HWY_DYNAMIC_DISPATCH(CannyBandImpl)(shared, rows * b / bands, rows * (b + 1) / bands, &borders[(size_t)b]);
    }
  });
  if (bands == 1) return;

  // Growth across bands from their boundary rows, over the whole map.
  std::vector<uint8_t*> stack;
  for (auto& border : borders) stack.insert(stack.end(), border.begin(), border.end());
  const int64_t stride = job.map_stride;
  uint8_t* const base = job.map;
  uint8_t* const edges = job.edges;
  auto visit = [&](uint8_t* q) {
    if (*q == kWeak) {
      *q = kStrong;
      const int64_t at = q - base;
      edges[(at / stride - 1) * cols + (at % stride - 1)] = 255;
      stack.push_back(q);
    }
  };
  while (!stack.empty()) {
    uint8_t* p = stack.back();
    stack.pop_back();
    visit(p - stride - 1);
    visit(p - stride);
    visit(p - stride + 1);
    visit(p - 1);
    visit(p + 1);
    visit(p + stride - 1);
    visit(p + stride);
    visit(p + stride + 1);
  }
}

}  // namespace

void canny(const uint8_t* src, int64_t rows, int64_t cols, int channels, double low, double high, int aperture,
           bool l2_gradient, uint8_t* edges, ThreadPool* pool) {
  CannyJob job;
  job.src = src;
  job.aperture = aperture;
  job.rows = rows;
  job.cols = cols;
  job.channels = channels;
  job.l2 = l2_gradient;
  job.edges = edges;
  if (aperture == 7) {
    // OpenCV scales the 7-tap derivatives by 1/16, and the thresholds with them.
    low /= 16.0;
    high /= 16.0;
  }
  run(job, low, high, pool);
}

void canny_from_derivatives(const int16_t* dx, const int16_t* dy, int64_t rows, int64_t cols, int channels,
                            double low, double high, bool l2_gradient, uint8_t* edges, ThreadPool* pool) {
  CannyJob job;
  job.dx = dx;
  job.dy = dy;
  job.rows = rows;
  job.cols = cols;
  job.channels = channels;
  job.l2 = l2_gradient;
  job.edges = edges;
  run(job, low, high, pool);
}

}  // namespace cv_canny
}  // namespace cpu
}  // namespace mnnpy
#endif  // HWY_ONCE
