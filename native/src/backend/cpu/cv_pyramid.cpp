// OpenCV's pyrDown and pyrUp, compiled per SIMD target by Highway and chosen at run time.
// pyrDown sums five source rows vertically into a row buffer, filters that row horizontally at
// full resolution, then keeps every other pixel; pyrUp filters each source row horizontally
// into its even and odd output columns, then blends three such rows into two output rows. Row
// loops are plain loops each target's compiler vectorizes; blocks of output rows run on the
// thread pool. uint8 sums stay below 2^16, so their buffers are uint16.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/cv_pyramid.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backend/cpu/cv_pyramid.h"
#include "backend/cpu/cv_warp.h"
#include "mnnpy/thread_pool.h"

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace cv_pyramid {
namespace HWY_NAMESPACE {

using cv_warp::Border;
using cv_warp::border_index;

template <class T> struct Work { using type = int32_t; };
template <> struct Work<uint8_t> { using type = uint16_t; };
template <> struct Work<float> { using type = float; };
template <> struct Work<double> { using type = double; };

// The sum of a 2^shift-weighted kernel as T: integers rounded half up (then saturated),
// floating point scaled.
template <class T, int kShift, class W>
inline T finish(W v) {
  if constexpr (std::is_floating_point<T>::value) {
    return (T)(v * (W)(1.0 / (1 << kShift)));
  } else {
    const int32_t r = ((int32_t)v + (1 << (kShift - 1))) >> kShift;
    if constexpr (std::is_same<T, uint8_t>::value) return (T)std::min(std::max(r, 0), 255);
    else return (T)std::min(std::max(r, -32768), 32767);
  }
}

template <class T>
void pyr_down_rows(int64_t h, int64_t w, int64_t cn, int64_t out_h, int64_t out_w, Border border, const T* src,
                   T* dst, int64_t y0, int64_t y1) {
  using W = typename Work<T>::type;
  const int64_t row = w * cn;
  // Columns of the vertical sums that output column x reads: source 2x - 2 .. 2x + 2.
  std::vector<int32_t> cols(out_w * 5);
  for (int64_t x = 0; x < out_w; ++x) {
    for (int k = 0; k < 5; ++k) cols[x * 5 + k] = (int32_t)(border_index(2 * x - 2 + k, w, border) * cn);
  }
  // Interior columns read 2x - 2 .. 2x + 2 inside the row: 1 <= x <= (w - 3) / 2.
  const int64_t interior_begin = 1, interior_end = std::max<int64_t>(1, std::min(out_w, (w - 3) / 2 + 1));
  std::vector<W> sum(row);
  std::vector<T> full(row);
  for (int64_t y = y0; y < y1; ++y) {
    const T* r[5];
    for (int k = 0; k < 5; ++k) r[k] = src + border_index(2 * y - 2 + k, h, border) * row;
    W* vsum = sum.data();
    for (int64_t j = 0; j < row; ++j) {
      vsum[j] = (W)((W)r[0][j] + (W)r[4][j] + (W)4 * ((W)r[1][j] + (W)r[3][j]) + (W)6 * (W)r[2][j]);
    }
    T* out = dst + y * out_w * cn;
    auto column = [&](int64_t x) {
      const int32_t* c5 = cols.data() + x * 5;
      for (int64_t c = 0; c < cn; ++c) {
        const W* s = sum.data() + c;
        const W v = (W)(s[c5[0]] + s[c5[4]] + (W)4 * (s[c5[1]] + s[c5[3]]) + (W)6 * s[c5[2]]);
        out[x * cn + c] = finish<T, 8>(v);
      }
    };
    for (int64_t x = 0; x < std::min(out_w, interior_begin); ++x) column(x);
    if (interior_begin < interior_end) {
      // The horizontal filter at every position of the interior, then every other pixel.
      const int64_t j0 = 2 * interior_begin * cn, j1 = (2 * (interior_end - 1) + 1) * cn;
      const W* HWY_RESTRICT v = sum.data();
      T* HWY_RESTRICT t = full.data();
      const int64_t c1 = cn, c2 = 2 * cn;
      if constexpr (std::is_same<T, uint8_t>::value) {
        for (int64_t j = j0; j < j1; ++j) {
          const uint16_t f = (uint16_t)(v[j - c2] + v[j + c2] + 4 * (v[j - c1] + v[j + c1]) + 6 * v[j] + 128);
          t[j] = (uint8_t)(f >> 8);
        }
      } else {
        for (int64_t j = j0; j < j1; ++j) {
          t[j] = finish<T, 8>((W)(v[j - c2] + v[j + c2] + (W)4 * (v[j - c1] + v[j + c1]) + (W)6 * v[j]));
        }
      }
      if (cn == 3) {
        for (int64_t x = interior_begin; x < interior_end; ++x) std::memcpy(out + x * 3, t + x * 6, 3 * sizeof(T));
      } else if (cn == 1) {
        for (int64_t x = interior_begin; x < interior_end; ++x) out[x] = t[2 * x];
      } else {
        for (int64_t x = interior_begin; x < interior_end; ++x) std::memcpy(out + x * cn, t + 2 * x * cn, cn * sizeof(T));
      }
    }
    for (int64_t x = std::max(interior_begin, interior_end); x < out_w; ++x) column(x);
  }
}

// Source row or column i of the upsampling (i may be -1 or n): reflected at the start,
// repeated at the end, as OpenCV's pyrUp extends its input.
int64_t up_index(int64_t i, int64_t n) { return border_index(2 * i, 2 * n, Border::Reflect101) / 2; }

template <class T>
void pyr_up_rows(int64_t h, int64_t w, int64_t cn, int64_t out_h, int64_t out_w, const T* src, T* dst, int64_t y0,
                 int64_t y1) {
  using W = std::conditional_t<std::is_same<T, uint8_t>::value, int32_t, typename Work<T>::type>;
  const int64_t n = out_w * cn;
  std::vector<W> rows(3 * n);
  int64_t held[3] = {-2, -2, -2};
  // The horizontal pass of source row sy into out_w columns.
  auto horizontal = [&](int64_t sy, W* o) {
    const T* s = src + sy * w * cn;
    for (int64_t x = 0; x < w; ++x) {
      const T* l = s + up_index(x - 1, w) * cn;
      const T* m = s + x * cn;
      const T* r = s + up_index(x + 1, w) * cn;
      for (int64_t c = 0; c < cn; ++c) {
        o[2 * x * cn + c] = (W)l[c] + (W)6 * (W)m[c] + (W)r[c];
        o[(2 * x + 1) * cn + c] = (W)4 * ((W)m[c] + (W)r[c]);
      }
    }
    if (out_w > 2 * w) {
      for (int64_t c = 0; c < cn; ++c) o[2 * w * cn + c] = o[(2 * w - 1) * cn + c];
    }
  };
  // Rows i - 1, i, i + 1 live in distinct slots (i mod 3), so the three a row needs stay.
  auto source_row = [&](int64_t i) -> const W* {
    const int slot = (int)(((i % 3) + 3) % 3);
    W* o = rows.data() + slot * n;
    if (held[slot] != i) {
      horizontal(up_index(i, h), o);
      held[slot] = i;
    }
    return o;
  };
  for (int64_t yo = y0; yo < y1; ++yo) {
    const int64_t y = yo / 2;
    T* out = dst + yo * n;
    if (y >= h) {  // the extra row of an odd height repeats the last even row, as OpenCV's
      const W* a = source_row(h - 2);
      const W* b = source_row(h - 1);
      const W* c = source_row(h);
      for (int64_t j = 0; j < n; ++j) out[j] = finish<T, 6>((W)(a[j] + (W)6 * b[j] + c[j]));
      continue;
    }
    if (yo % 2 == 0) {
      const W* a = source_row(y - 1);
      const W* b = source_row(y);
      const W* c = source_row(y + 1);
      for (int64_t j = 0; j < n; ++j) out[j] = finish<T, 6>((W)(a[j] + (W)6 * b[j] + c[j]));
    } else {
      const W* b = source_row(y);
      const W* c = source_row(y + 1);
      for (int64_t j = 0; j < n; ++j) out[j] = finish<T, 6>((W)((W)4 * (b[j] + c[j])));
    }
  }
}

void PyrDownRows(DType dtype, int64_t in_h, int64_t in_w, int64_t channels, int64_t out_h, int64_t out_w, int border,
                 const void* src, void* dst, int64_t y0, int64_t y1) {
  const Border b = (Border)border;
  switch (dtype) {
    case DType::UInt8:
      return pyr_down_rows(in_h, in_w, channels, out_h, out_w, b, (const uint8_t*)src, (uint8_t*)dst, y0, y1);
    case DType::Int16:
      return pyr_down_rows(in_h, in_w, channels, out_h, out_w, b, (const int16_t*)src, (int16_t*)dst, y0, y1);
    case DType::Float32:
      return pyr_down_rows(in_h, in_w, channels, out_h, out_w, b, (const float*)src, (float*)dst, y0, y1);
    default:
      return pyr_down_rows(in_h, in_w, channels, out_h, out_w, b, (const double*)src, (double*)dst, y0, y1);
  }
}

void PyrUpRows(DType dtype, int64_t in_h, int64_t in_w, int64_t channels, int64_t out_h, int64_t out_w,
               const void* src, void* dst, int64_t y0, int64_t y1) {
  switch (dtype) {
    case DType::UInt8:
      return pyr_up_rows(in_h, in_w, channels, out_h, out_w, (const uint8_t*)src, (uint8_t*)dst, y0, y1);
    case DType::Int16:
      return pyr_up_rows(in_h, in_w, channels, out_h, out_w, (const int16_t*)src, (int16_t*)dst, y0, y1);
    case DType::Float32:
      return pyr_up_rows(in_h, in_w, channels, out_h, out_w, (const float*)src, (float*)dst, y0, y1);
    default:
      return pyr_up_rows(in_h, in_w, channels, out_h, out_w, (const double*)src, (double*)dst, y0, y1);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace cv_pyramid
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
namespace cv_pyramid {
HWY_EXPORT(PyrDownRows);
HWY_EXPORT(PyrUpRows);

void pyr_down(DType dtype, int64_t in_h, int64_t in_w, int64_t channels, int64_t out_h, int64_t out_w, int border,
              const void* src, void* dst, ThreadPool* pool) {
  const int64_t grain = std::max<int64_t>(1, 8192 / std::max<int64_t>(1, in_w * channels));
  parallel_for(pool, out_h, grain, [&](int64_t y0, int64_t y1) {
    HWY_DYNAMIC_DISPATCH(PyrDownRows)(dtype, in_h, in_w, channels, out_h, out_w, border, src, dst, y0, y1);
  });
}

void pyr_up(DType dtype, int64_t in_h, int64_t in_w, int64_t channels, int64_t out_h, int64_t out_w,
            const void* src, void* dst, ThreadPool* pool) {
  const int64_t grain = std::max<int64_t>(2, 16384 / std::max<int64_t>(1, out_w * channels)) & ~(int64_t)1;
  parallel_for(pool, out_h, grain, [&](int64_t y0, int64_t y1) {
    HWY_DYNAMIC_DISPATCH(PyrUpRows)(dtype, in_h, in_w, channels, out_h, out_w, src, dst, y0, y1);
  });
}

}  // namespace cv_pyramid
}  // namespace cpu
}  // namespace mnnpy
#endif  // HWY_ONCE
