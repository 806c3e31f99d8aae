// Separable filter kernels, compiled per SIMD target by Highway and chosen at run time.
// Each thread takes a band of output rows; per row, the vertical pass sums the kernel's source
// rows into a row buffer (border columns then filled from it by index), and the horizontal pass
// sums along the buffer. uint8 smoothing with 8-bit fixed-point taps (OpenCV's bit-exact
// GaussianBlur) keeps the vertical sums in 16-bit lanes and the horizontal ones in float32,
// where every partial sum is an integer below 2^24 and so exact.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/cv_filter_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/cpu/simd_shared-inl.h"

#include "backend/cpu/cv_filter.h"
#include "backend/cpu/thread_buffers.h"
#include "mnnpy/thread_pool.h"

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace cv_filter {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using cpu::HWY_NAMESPACE::FusedMulAdd;

// Fills the border columns of a row buffer whose pixels start at `mid`.
// `constants`: the value of each channel where the border is constant (null: zeros).
template <class A>
void fill_border_columns(const SepFilterPlan& p, int64_t kx_size, A* buf, const A* constants = nullptr) {
  const int64_t C = p.channels, ax = p.anchor_x;
  const A* mid = buf + ax * C;
  const int64_t positions = p.width + kx_size - 1;
  for (int64_t q = 0; q < positions; ++q) {
    if (q == ax) q = ax + p.width;  // skip the pixels themselves
    if (q >= positions) break;
    const int32_t from = p.col_index[q];
    for (int64_t c = 0; c < C; ++c) buf[q * C + c] = from >= 0 ? mid[from * C + c] : constants ? constants[c] : A(0);
  }
}

// Row y's vertical sums of a uint8 source with integer taps, in 16-bit lanes (negative taps
// wrap modulo 2^16, as the sums do), into mid. rows / row_taps: scratch of nky entries.
void vertical_u16_sums(const SepFilterPlan& p, const double* ky, int64_t nky, const uint8_t* src, int64_t row_len,
                       int64_t y, const uint8_t** rows, uint16_t* row_taps, uint16_t* mid) {
  const hn::ScalableTag<uint16_t> d16;
  const hn::Rebind<uint8_t, decltype(d16)> d8;
  const int64_t N16 = (int64_t)hn::Lanes(d16);
  int64_t taps = 0;
  for (int64_t t = 0; t < nky; ++t) {
    const int32_t r = p.row_index[y + t];
    if (r < 0 || ky[t] == 0) continue;
    rows[taps] = src + r * row_len;
    row_taps[taps] = (uint16_t)(int64_t)ky[t];
    ++taps;
  }
  int64_t x = 0;
  for (; x + N16 <= row_len; x += N16) {
    auto acc = hn::Zero(d16);
    for (int64_t t = 0; t < taps; ++t) {
      acc = hn::Add(acc, hn::Mul(hn::PromoteTo(d16, hn::LoadU(d8, rows[t] + x)), hn::Set(d16, row_taps[t])));
    }
    hn::StoreU(acc, d16, mid + x);
  }
  for (; x < row_len; ++x) {
    uint32_t acc = 0;
    for (int64_t t = 0; t < taps; ++t) acc += (uint32_t)rows[t][x] * row_taps[t];
    mid[x] = (uint16_t)acc;
  }
}

// A row buffer's 16-bit vertical sums (int16 when signed_sums) as float32: converted once per
// row rather than once per horizontal tap.
void widen_row_sums(const uint16_t* buf, int64_t n, bool signed_sums, float* fbuf) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<uint16_t, decltype(df)> dfu16;
  const hn::Rebind<int16_t, decltype(df)> dfi16;
  const hn::Rebind<uint32_t, decltype(df)> dfu32;
  const hn::Rebind<int32_t, decltype(df)> dfi32;
  const int64_t NF = (int64_t)hn::Lanes(df);
  int64_t x = 0;
  for (; x + NF <= n; x += NF) {
    const auto v = signed_sums ? hn::PromoteTo(dfi32, hn::LoadU(dfi16, reinterpret_cast<const int16_t*>(buf + x)))
                               : hn::BitCast(dfi32, hn::PromoteTo(dfu32, hn::LoadU(dfu16, buf + x)));
    hn::StoreU(hn::ConvertTo(df, v), df, fbuf + x);
  }
  for (; x < n; ++x) fbuf[x] = signed_sums ? (float)(int16_t)buf[x] : (float)buf[x];
}

// The horizontal sums of a widened row, tap by tap in order, each vector of them handed to
// finish(sum, x). Four vectors go at a time: each sum is a chain of multiply-adds, whose latency
// four independent chains hide. Returns where the whole vectors end; the caller's tail rounds as
// the lanes do (std::fma tap by tap), so no pixel depends on where the vector width ends a row.
template <class Finish>
int64_t horizontal_sums(const float* fbuf, int64_t row_len, int64_t C, const float* col_taps, int64_t nkx,
                        const Finish& finish) {
  const hn::ScalableTag<float> df;
  const int64_t NF = (int64_t)hn::Lanes(df);
  int64_t x = 0;
  for (; x + 4 * NF <= row_len; x += 4 * NF) {
    auto a0 = hn::Zero(df), a1 = hn::Zero(df), a2 = hn::Zero(df), a3 = hn::Zero(df);
    for (int64_t j = 0; j < nkx; ++j) {
      const float* b = fbuf + x + j * C;
      const auto k = hn::Set(df, col_taps[j]);
      a0 = FusedMulAdd(hn::LoadU(df, b), k, a0);
      a1 = FusedMulAdd(hn::LoadU(df, b + NF), k, a1);
      a2 = FusedMulAdd(hn::LoadU(df, b + 2 * NF), k, a2);
      a3 = FusedMulAdd(hn::LoadU(df, b + 3 * NF), k, a3);
    }
    finish(a0, x);
    finish(a1, x + NF);
    finish(a2, x + 2 * NF);
    finish(a3, x + 3 * NF);
  }
  for (; x + NF <= row_len; x += NF) {
    auto acc = hn::Zero(df);
    for (int64_t j = 0; j < nkx; ++j) acc = FusedMulAdd(hn::LoadU(df, fbuf + x + j * C), hn::Set(df, col_taps[j]), acc);
    finish(acc, x);
  }
  return x;
}

void fixed_point_u8_rows(const SepFilterPlan& p, const double* kx, int64_t nkx, const double* ky, int64_t nky,
                         const uint8_t* src, uint8_t* dst, int64_t y0, int64_t y1) {
  const int64_t C = p.channels, row_len = p.width * C;
  const int64_t buf_len = (p.width + nkx - 1) * C;
  uint16_t* buf = reinterpret_cast<uint16_t*>(thread_buffer(0, (size_t)buf_len / 2 + 16));
  uint16_t* mid = buf + p.anchor_x * C;
  float* fbuf = thread_buffer(1, (size_t)buf_len + 16);  // the row's sums widened to float32
  std::vector<const uint8_t*> rows((size_t)nky);
  std::vector<uint16_t> row_taps((size_t)nky);
  std::vector<float> col_taps((size_t)nkx);
  for (int64_t j = 0; j < nkx; ++j) col_taps[j] = (float)kx[j];

  const hn::ScalableTag<float> df;
  const hn::Rebind<int32_t, decltype(df)> dfi32;
  const hn::Rebind<uint8_t, decltype(df)> dfu8;
  const auto half = hn::Set(df, 32768.0f), inv_one = hn::Set(df, 1.0f / 65536.0f);

  for (int64_t y = y0; y < y1; ++y) {
    // Vertical: at most 255 * 256 per lane, so 16 bits hold it.
    vertical_u16_sums(p, ky, nky, src, row_len, y, rows.data(), row_taps.data(), mid);
    fill_border_columns(p, nkx, buf);
    widen_row_sums(buf, buf_len, false, fbuf);
    // Horizontal, then (sum + 2^15) >> 16; the sum is non-negative, so truncation floors.
    uint8_t* out = dst + y * row_len;
    int64_t x = horizontal_sums(fbuf, row_len, C, col_taps.data(), nkx, [&](decltype(half) acc, int64_t at) {
      hn::StoreU(hn::DemoteTo(dfu8, hn::ConvertTo(dfi32, hn::Mul(hn::Add(acc, half), inv_one))), dfu8, out + at);
    });
    for (; x < row_len; ++x) {
      uint32_t acc = 0;
      for (int64_t j = 0; j < nkx; ++j) acc += (uint32_t)buf[x + j * C] * (uint32_t)kx[j];
      out[x] = (uint8_t)std::min<uint32_t>((acc + 32768u) >> 16, 255u);
    }
  }
}

template <class D, class A>
HWY_INLINE D to_output(A v) {
  if constexpr (std::numeric_limits<D>::is_integer) {
    const A lo = (A)std::numeric_limits<D>::min(), hi = (A)std::numeric_limits<D>::max();
    // Half to even, as OpenCV's saturate_cast rounds; NaN becomes 0.
    const A r = std::nearbyint(v);
    return r >= lo ? (r <= hi ? (D)r : (D)hi) : (r < lo ? (D)lo : D(0));
  } else {
    return (D)v;
  }
}

// uint8 sources whose vertical taps are integers: the vertical sums are exact in 16-bit lanes
// (as unsigned values, or as signed ones where taps are negative, computed modulo 2^16 and read
// back as int16), the horizontal pass runs in float32, then scale and delta.
template <class D>
void integer_u8_rows(const SepFilterPlan& p, const double* kx, int64_t nkx, const double* ky, int64_t nky,
                     bool signed_sums, const uint8_t* src, D* dst, int64_t y0, int64_t y1) {
  const int64_t C = p.channels, row_len = p.width * C;
  const int64_t buf_len = (p.width + nkx - 1) * C;
  uint16_t* buf = reinterpret_cast<uint16_t*>(thread_buffer(0, (size_t)buf_len / 2 + 16));
  uint16_t* mid = buf + p.anchor_x * C;
  float* fbuf = thread_buffer(1, (size_t)buf_len + 16);  // the row's sums widened to float32
  std::vector<const uint8_t*> rows((size_t)nky);
  std::vector<uint16_t> row_taps((size_t)nky);
  std::vector<float> col_taps((size_t)nkx);
  for (int64_t j = 0; j < nkx; ++j) col_taps[j] = (float)kx[j];

  const hn::ScalableTag<float> df;
  const hn::Rebind<int16_t, decltype(df)> dfi16;
  const hn::Rebind<int32_t, decltype(df)> dfi32;
  const hn::Rebind<uint8_t, decltype(df)> dfu8;
  const float scale = (float)p.scale, delta = (float)p.delta;
  const auto vscale = hn::Set(df, scale), vdelta = hn::Set(df, delta);
  // Keeps the conversion to int32 defined; far beyond every result type's range.
  const auto lowest = hn::Set(df, -1e9f), highest = hn::Set(df, 1e9f);

  for (int64_t y = y0; y < y1; ++y) {
    vertical_u16_sums(p, ky, nky, src, row_len, y, rows.data(), row_taps.data(), mid);
    fill_border_columns(p, nkx, buf);
    widen_row_sums(buf, buf_len, signed_sums, fbuf);
    D* out = dst + y * row_len;
    int64_t x = horizontal_sums(fbuf, row_len, C, col_taps.data(), nkx, [&](decltype(vscale) acc, int64_t at) {
      const auto value = FusedMulAdd(acc, vscale, vdelta);
      if constexpr (std::is_same<D, float>::value) {
        hn::StoreU(value, df, out + at);
      } else {
        const auto whole = hn::ConvertTo(dfi32, hn::Round(hn::Min(hn::Max(value, lowest), highest)));
        if constexpr (std::is_same<D, uint8_t>::value) {
          hn::StoreU(hn::DemoteTo(dfu8, whole), dfu8, out + at);
        } else {
          hn::StoreU(hn::DemoteTo(dfi16, whole), dfi16, out + at);
        }
      }
    });
    for (; x < row_len; ++x) {
      float acc = 0.0f;
      for (int64_t j = 0; j < nkx; ++j) {
        const uint16_t raw = buf[x + j * C];
        acc = std::fma(signed_sums ? (float)(int16_t)raw : (float)raw, col_taps[j], acc);
      }
      out[x] = to_output<D, float>(std::fma(acc, scale, delta));
    }
  }
}

// A: the type sums are kept in (float, or double when the source or result is float64). Every tap
// is a fused multiply-add (std::fma: vector FMAs where the target has them), as OpenCV's vector
// filters compute: the same rounding on every target.
template <class T, class D, class A>
void generic_rows(const SepFilterPlan& p, const double* kx, int64_t nkx, const double* ky, int64_t nky,
                  const T* src, D* dst, int64_t y0, int64_t y1) {
  const int64_t C = p.channels, row_len = p.width * C;
  const size_t per_float = sizeof(A) / sizeof(float);
  A* buf = reinterpret_cast<A*>(thread_buffer(0, (size_t)((p.width + nkx - 1) * C) * per_float + 16));
  A* mid = buf + p.anchor_x * C;
  // Both passes go along the row in blocks whose partial sums stay in L1 while every tap adds
  // to them (a pass per tap over a whole row would move each sum through L2 once per tap).
  constexpr int64_t kBlock = 512 / sizeof(A) * 4;
  alignas(64) A acc[kBlock];
  std::vector<A> col_taps((size_t)nkx), row_taps((size_t)nky);
  for (int64_t j = 0; j < nkx; ++j) col_taps[j] = (A)kx[j];
  for (int64_t t = 0; t < nky; ++t) row_taps[t] = (A)ky[t];
  const A scale = (A)p.scale, delta = (A)p.delta;
  const bool square = p.square;
  std::vector<const T*> rows((size_t)nky);
  std::vector<A> ks((size_t)nky);
  for (int64_t y = y0; y < y1; ++y) {
    int64_t taps = 0;
    for (int64_t t = 0; t < nky; ++t) {
      const int32_t r = p.row_index[y + t];
      if (r < 0 || row_taps[t] == A(0)) continue;
      rows[taps] = src + r * row_len;
      ks[taps++] = row_taps[t];
    }
    // The source row the next output row reads first comes from memory: it is fetched while
    // this row is worked on (the hardware prefetchers learn each new row only after misses).
    const int32_t ahead = y + 1 < y1 ? p.row_index[y + nky] : -1;
    const T* next_row = ahead >= 0 ? src + ahead * row_len : nullptr;
    // Taps go four at a time through the block, which keeps its loads and stores few; each
    // sum still adds its taps one by one in order (the rounding of a tap-by-tap pass).
    for (int64_t x0 = 0; x0 < row_len; x0 += kBlock) {
      const int64_t x1 = std::min(row_len, x0 + kBlock);
      if (next_row) {
        for (int64_t x = x0; x < x1; x += 64 / (int64_t)sizeof(T)) hwy::Prefetch(next_row + x);
      }
      std::fill(mid + x0, mid + x1, A(0));
      int64_t t = 0;
      for (; t + 4 <= taps; t += 4) {
        const T* HWY_RESTRICT s0 = rows[t];
        const T* HWY_RESTRICT s1 = rows[t + 1];
        const T* HWY_RESTRICT s2 = rows[t + 2];
        const T* HWY_RESTRICT s3 = rows[t + 3];
        const A k0 = ks[t], k1 = ks[t + 1], k2 = ks[t + 2], k3 = ks[t + 3];
        if (square) {
          for (int64_t x = x0; x < x1; ++x) {
            const A v0 = (A)s0[x], v1 = (A)s1[x], v2 = (A)s2[x], v3 = (A)s3[x];
            A sum = mid[x];
            sum = std::fma(k0, v0 * v0, sum);
            sum = std::fma(k1, v1 * v1, sum);
            sum = std::fma(k2, v2 * v2, sum);
            sum = std::fma(k3, v3 * v3, sum);
            mid[x] = sum;
          }
        } else {
          for (int64_t x = x0; x < x1; ++x) {
            A sum = mid[x];
            sum = std::fma(k0, (A)s0[x], sum);
            sum = std::fma(k1, (A)s1[x], sum);
            sum = std::fma(k2, (A)s2[x], sum);
            sum = std::fma(k3, (A)s3[x], sum);
            mid[x] = sum;
          }
        }
      }
      for (; t < taps; ++t) {
        const T* HWY_RESTRICT s = rows[t];
        const A k = ks[t];
        if (square) {
          for (int64_t x = x0; x < x1; ++x) mid[x] = std::fma(k, (A)s[x] * (A)s[x], mid[x]);
        } else {
          for (int64_t x = x0; x < x1; ++x) mid[x] = std::fma(k, (A)s[x], mid[x]);
        }
      }
    }
    fill_border_columns(p, nkx, buf);
    D* HWY_RESTRICT out = dst + y * row_len;
    for (int64_t x0 = 0; x0 < row_len; x0 += kBlock) {
      const int64_t n = std::min(kBlock, row_len - x0);
      std::fill(acc, acc + n, A(0));
      int64_t j = 0;
      for (; j + 4 <= nkx; j += 4) {
        const A* HWY_RESTRICT b = buf + j * C + x0;
        const A k0 = col_taps[j], k1 = col_taps[j + 1], k2 = col_taps[j + 2], k3 = col_taps[j + 3];
        for (int64_t x = 0; x < n; ++x) {
          A sum = acc[x];
          sum = std::fma(k0, b[x], sum);
          sum = std::fma(k1, b[x + C], sum);
          sum = std::fma(k2, b[x + 2 * C], sum);
          sum = std::fma(k3, b[x + 3 * C], sum);
          acc[x] = sum;
        }
      }
      for (; j < nkx; ++j) {
        const A k = col_taps[j];
        const A* HWY_RESTRICT b = buf + j * C + x0;
        for (int64_t x = 0; x < n; ++x) acc[x] = std::fma(k, b[x], acc[x]);
      }
      for (int64_t x = 0; x < n; ++x) out[x0 + x] = to_output<D, A>(std::fma(acc[x], scale, delta));
    }
  }
}

template <class T, class D>
void generic_for(const SepFilterPlan& p, const double* kx, int64_t nkx, const double* ky, int64_t nky,
                 const void* src, void* dst, int64_t y0, int64_t y1) {
  if constexpr (std::is_same<T, double>::value || std::is_same<D, double>::value) {
    generic_rows<T, D, double>(p, kx, nkx, ky, nky, static_cast<const T*>(src), static_cast<D*>(dst), y0, y1);
  } else {
    generic_rows<T, D, float>(p, kx, nkx, ky, nky, static_cast<const T*>(src), static_cast<D*>(dst), y0, y1);
  }
}

template <class T>
void generic_for_source(const SepFilterPlan& p, const double* kx, int64_t nkx, const double* ky, int64_t nky,
                        const void* src, void* dst, int64_t y0, int64_t y1) {
  switch (p.dst_dtype) {
    case DType::UInt8: return generic_for<T, uint8_t>(p, kx, nkx, ky, nky, src, dst, y0, y1);
    case DType::Int16: return generic_for<T, int16_t>(p, kx, nkx, ky, nky, src, dst, y0, y1);
    case DType::Float32: return generic_for<T, float>(p, kx, nkx, ky, nky, src, dst, y0, y1);
    case DType::Float64: return generic_for<T, double>(p, kx, nkx, ky, nky, src, dst, y0, y1);
    default: return;
  }
}

template <class T, class D, class A>
void filter_2d_rows(const SepFilterPlan& p, const double* kernel, int64_t kh, int64_t kw, const T* src, D* dst,
                    int64_t y0, int64_t y1) {
  const int64_t C = p.channels, row_len = p.width * C;
  const size_t per_float = sizeof(A) / sizeof(float);
  A* buf = reinterpret_cast<A*>(thread_buffer(0, (size_t)((p.width + kw - 1) * C) * per_float + 16));
  A* acc = reinterpret_cast<A*>(thread_buffer(1, (size_t)row_len * per_float + 16));
  A* mid = buf + p.anchor_x * C;
  std::vector<A> taps((size_t)(kh * kw));
  std::vector<bool> row_used((size_t)kh, false);
  for (int64_t i = 0; i < kh * kw; ++i) {
    taps[i] = (A)kernel[i];
    if (taps[i] != A(0)) row_used[i / kw] = true;
  }
  const A scale = (A)p.scale, delta = (A)p.delta;
  for (int64_t y = y0; y < y1; ++y) {
    std::fill(acc, acc + row_len, A(0));
    for (int64_t i = 0; i < kh; ++i) {
      const int32_t r = p.row_index[y + i];
      if (r < 0 || !row_used[i]) continue;
      const T* HWY_RESTRICT s = src + r * row_len;
      for (int64_t x = 0; x < row_len; ++x) mid[x] = (A)s[x];
      fill_border_columns(p, kw, buf);
      for (int64_t j = 0; j < kw; ++j) {
        const A k = taps[i * kw + j];
        if (k == A(0)) continue;
        const A* HWY_RESTRICT b = buf + j * C;
        for (int64_t x = 0; x < row_len; ++x) acc[x] = std::fma(k, b[x], acc[x]);
      }
    }
    D* HWY_RESTRICT out = dst + y * row_len;
    for (int64_t x = 0; x < row_len; ++x) out[x] = to_output<D, A>(std::fma(acc[x], scale, delta));
  }
}

template <class T>
void filter_2d_for_source(const SepFilterPlan& p, const double* kernel, int64_t kh, int64_t kw, const void* src,
                          void* dst, int64_t y0, int64_t y1) {
  const T* s = static_cast<const T*>(src);
  const bool wide = std::is_same<T, double>::value || p.dst_dtype == DType::Float64;
  switch (p.dst_dtype) {
    case DType::UInt8:
      if (wide) return filter_2d_rows<T, uint8_t, double>(p, kernel, kh, kw, s, static_cast<uint8_t*>(dst), y0, y1);
      return filter_2d_rows<T, uint8_t, float>(p, kernel, kh, kw, s, static_cast<uint8_t*>(dst), y0, y1);
    case DType::Int16:
      if (wide) return filter_2d_rows<T, int16_t, double>(p, kernel, kh, kw, s, static_cast<int16_t*>(dst), y0, y1);
      return filter_2d_rows<T, int16_t, float>(p, kernel, kh, kw, s, static_cast<int16_t*>(dst), y0, y1);
    case DType::Float32:
      if (wide) return filter_2d_rows<T, float, double>(p, kernel, kh, kw, s, static_cast<float*>(dst), y0, y1);
      return filter_2d_rows<T, float, float>(p, kernel, kh, kw, s, static_cast<float*>(dst), y0, y1);
    case DType::Float64: return filter_2d_rows<T, double, double>(p, kernel, kh, kw, s, static_cast<double*>(dst), y0, y1);
    default: return;
  }
}

void Filter2DRowsImpl(const SepFilterPlan& p, const double* kernel, int64_t kh, int64_t kw, const void* src,
                      void* dst, int64_t y0, int64_t y1) {
  switch (p.src_dtype) {
    case DType::UInt8: return filter_2d_for_source<uint8_t>(p, kernel, kh, kw, src, dst, y0, y1);
    case DType::Int16: return filter_2d_for_source<int16_t>(p, kernel, kh, kw, src, dst, y0, y1);
    case DType::Float32: return filter_2d_for_source<float>(p, kernel, kh, kw, src, dst, y0, y1);
    case DType::Float64: return filter_2d_for_source<double>(p, kernel, kh, kw, src, dst, y0, y1);
    default: return;
  }
}

template <class T>
void morphology_rows(const SepFilterPlan& p, const uint8_t* mask, int64_t kh, int64_t kw, bool dilate,
                     const double* border_values, const void* psrc, void* pdst, int64_t y0, int64_t y1) {
  const int64_t C = p.channels, row_len = p.width * C;
  const size_t floats = ((size_t)((p.width + kw - 1) * C) * sizeof(T) + sizeof(float) - 1) / sizeof(float) + 16;
  T* buf = reinterpret_cast<T*>(thread_buffer(0, floats));
  T* mid = buf + p.anchor_x * C;
  const T* src = static_cast<const T*>(psrc);
  T* dst = static_cast<T*>(pdst);
  // The border constant saturated to T (OpenCV's default, the type's extreme, then never wins).
  const double lo = (double)std::numeric_limits<T>::lowest(), hi = (double)std::numeric_limits<T>::max();
  std::vector<T> constants((size_t)C);
  for (int64_t c = 0; c < C; ++c) constants[c] = (T)std::min(std::max(border_values[c], lo), hi);
  std::vector<bool> row_used((size_t)kh, false);
  for (int64_t i = 0; i < kh * kw; ++i)
    if (mask[i]) row_used[i / kw] = true;
  const T start = dilate ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
  for (int64_t y = y0; y < y1; ++y) {
    T* HWY_RESTRICT acc = dst + y * row_len;
    std::fill(acc, acc + row_len, start);
    for (int64_t i = 0; i < kh; ++i) {
      if (!row_used[i]) continue;
      const int32_t r = p.row_index[y + i];
      const T* HWY_RESTRICT b0;
      if (r < 0) {
        for (int64_t q = 0; q < (p.width + kw - 1) * C; ++q) buf[q] = constants[q % C];
      } else {
        std::copy(src + r * row_len, src + (r + 1) * row_len, mid);
        fill_border_columns(p, kw, buf, constants.data());
      }
      for (int64_t j = 0; j < kw; ++j) {
        if (!mask[i * kw + j]) continue;
        b0 = buf + j * C;
        if (dilate) {
          for (int64_t x = 0; x < row_len; ++x) acc[x] = acc[x] < b0[x] ? b0[x] : acc[x];
        } else {
          for (int64_t x = 0; x < row_len; ++x) acc[x] = b0[x] < acc[x] ? b0[x] : acc[x];
        }
      }
    }
  }
}

void MorphologyRowsImpl(const SepFilterPlan& p, const uint8_t* mask, int64_t kh, int64_t kw, bool dilate,
                        const double* border_value, const void* src, void* dst, int64_t y0, int64_t y1) {
  switch (p.src_dtype) {
    case DType::UInt8: return morphology_rows<uint8_t>(p, mask, kh, kw, dilate, border_value, src, dst, y0, y1);
    case DType::Int16: return morphology_rows<int16_t>(p, mask, kh, kw, dilate, border_value, src, dst, y0, y1);
    case DType::Float32: return morphology_rows<float>(p, mask, kh, kw, dilate, border_value, src, dst, y0, y1);
    case DType::Float64: return morphology_rows<double>(p, mask, kh, kw, dilate, border_value, src, dst, y0, y1);
    default: return;
  }
}

// Median of each k x k window (k*k <= kMaxMedianTaps), by an odd-even transposition sort of
// the window's values run lane by lane over a chunk of the row, so that it vectorizes.
constexpr int64_t kMaxMedianTaps = 49;

template <class T>
void median_rows(const SepFilterPlan& p, int64_t k, const void* psrc, void* pdst, int64_t y0, int64_t y1) {
  const int64_t C = p.channels, row_len = p.width * C, padded = (p.width + k - 1) * C;
  const size_t floats = ((size_t)(k * padded) * sizeof(T) + sizeof(float) - 1) / sizeof(float) + 16;
  T* rows = reinterpret_cast<T*>(thread_buffer(0, floats));
  const T* src = static_cast<const T*>(psrc);
  T* dst = static_cast<T*>(pdst);
  constexpr int64_t kChunk = 64;
  T values[kMaxMedianTaps][kChunk];
  const int64_t taps = k * k;
  for (int64_t y = y0; y < y1; ++y) {
    for (int64_t i = 0; i < k; ++i) {
      T* row = rows + i * padded;
      const T* s = src + p.row_index[y + i] * row_len;  // replicated borders: never -1
      std::copy(s, s + row_len, row + p.anchor_x * C);
      fill_border_columns(p, k, row);
    }
    for (int64_t x0 = 0; x0 < row_len; x0 += kChunk) {
      const int64_t n = std::min(kChunk, row_len - x0);
      for (int64_t i = 0; i < k; ++i) {
        for (int64_t j = 0; j < k; ++j) {
          const T* b = rows + i * padded + j * C + x0;
          T* v = values[i * k + j];
          for (int64_t l = 0; l < n; ++l) v[l] = b[l];
          for (int64_t l = n; l < kChunk; ++l) v[l] = T(0);
        }
      }
      for (int64_t round = 0; round < taps; ++round) {
        for (int64_t a = round & 1; a + 1 < taps; a += 2) {
          T* HWY_RESTRICT lo = values[a];
          T* HWY_RESTRICT hi = values[a + 1];
          for (int64_t l = 0; l < kChunk; ++l) {
            const T u = lo[l], w = hi[l];
            lo[l] = w < u ? w : u;
            hi[l] = w < u ? u : w;
          }
        }
      }
      std::copy(values[taps / 2], values[taps / 2] + n, dst + y * row_len + x0);
    }
  }
}

// 3 x 3 medians: each column of three is sorted once per row, and the median of a window is the
// median of (the largest of its three column minima, the median of its column medians, the
// smallest of its column maxima), all with vector min and max.
template <class T>
void median3_rows(const SepFilterPlan& p, const void* psrc, void* pdst, int64_t y0, int64_t y1) {
  const hn::ScalableTag<T> d;
  const int64_t N = (int64_t)hn::Lanes(d);
  const int64_t C = p.channels, row_len = p.width * C, padded = (p.width + 2) * C;
  const size_t floats = ((size_t)(6 * padded) * sizeof(T) + sizeof(float) - 1) / sizeof(float) + 16;
  T* rows = reinterpret_cast<T*>(thread_buffer(0, floats));
  T *lows = rows + 3 * padded, *mids = lows + padded, *highs = mids + padded;
  const T* src = static_cast<const T*>(psrc);
  T* dst = static_cast<T*>(pdst);
  auto median_of_three = [&](auto a, auto b, auto c) { return hn::Max(hn::Min(a, b), hn::Min(hn::Max(a, b), c)); };
  for (int64_t y = y0; y < y1; ++y) {
    for (int64_t i = 0; i < 3; ++i) {
      T* row = rows + i * padded;
      const T* s = src + p.row_index[y + i] * row_len;  // replicated borders: never -1
      std::copy(s, s + row_len, row + p.anchor_x * C);
      fill_border_columns(p, 3, row);
    }
    int64_t x = 0;
    for (; x + N <= padded; x += N) {
      const auto a = hn::LoadU(d, rows + x), b = hn::LoadU(d, rows + padded + x), c = hn::LoadU(d, rows + 2 * padded + x);
      const auto low_ab = hn::Min(a, b), high_ab = hn::Max(a, b), upper = hn::Max(low_ab, c);
      hn::StoreU(hn::Min(low_ab, c), d, lows + x);
      hn::StoreU(hn::Min(high_ab, upper), d, mids + x);
      hn::StoreU(hn::Max(high_ab, upper), d, highs + x);
    }
    for (; x < padded; ++x) {
      T v[3] = {rows[x], rows[padded + x], rows[2 * padded + x]};
      std::sort(v, v + 3);
      lows[x] = v[0], mids[x] = v[1], highs[x] = v[2];
    }
    T* out = dst + y * row_len;
    x = 0;
    for (; x + N <= row_len; x += N) {
      const auto low = hn::Max(hn::Max(hn::LoadU(d, lows + x), hn::LoadU(d, lows + x + C)), hn::LoadU(d, lows + x + 2 * C));
      const auto high = hn::Min(hn::Min(hn::LoadU(d, highs + x), hn::LoadU(d, highs + x + C)), hn::LoadU(d, highs + x + 2 * C));
      const auto mid = median_of_three(hn::LoadU(d, mids + x), hn::LoadU(d, mids + x + C), hn::LoadU(d, mids + x + 2 * C));
      hn::StoreU(median_of_three(low, mid, high), d, out + x);
    }
    for (; x < row_len; ++x) {
      const T low = std::max({lows[x], lows[x + C], lows[x + 2 * C]});
      const T high = std::min({highs[x], highs[x + C], highs[x + 2 * C]});
      T m[3] = {mids[x], mids[x + C], mids[x + 2 * C]};
      std::sort(m, m + 3);
      T v[3] = {low, m[1], high};
      std::sort(v, v + 3);
      out[x] = v[1];
    }
  }
}

template <class T>
void median_rows_of(const SepFilterPlan& p, int64_t k, const void* src, void* dst, int64_t y0, int64_t y1) {
  if (k == 3) return median3_rows<T>(p, src, dst, y0, y1);
  median_rows<T>(p, k, src, dst, y0, y1);
}

void MedianRowsImpl(const SepFilterPlan& p, int64_t k, const void* src, void* dst, int64_t y0, int64_t y1) {
  switch (p.src_dtype) {
    case DType::UInt8: return median_rows_of<uint8_t>(p, k, src, dst, y0, y1);
    case DType::Int16: return median_rows_of<int16_t>(p, k, src, dst, y0, y1);
    case DType::Float32: return median_rows_of<float>(p, k, src, dst, y0, y1);
    case DType::Float64: return median_rows_of<double>(p, k, src, dst, y0, y1);
    default: return;
  }
}

// Bilateral filter of a uint8 image with 1 or 3 channels: per pixel, in the order of the window
// table, weight = space weight * color_weight[sum over channels of |value - center value|].
void BilateralU8RowsImpl(const SepFilterPlan& p, int64_t radius, const float* color_weight, const double* window,
                         int64_t window_size, const void* psrc, void* pdst, int64_t y0, int64_t y1) {
  const int64_t C = p.channels, W = p.width, row_len = W * C, d = 2 * radius + 1, padded = (W + 2 * radius) * C;
  uint8_t* rows = reinterpret_cast<uint8_t*>(thread_buffer(0, (size_t)(d * padded) / sizeof(float) + 16));
  const uint8_t* src = static_cast<const uint8_t*>(psrc);
  uint8_t* dst = static_cast<uint8_t*>(pdst);
  std::vector<float> sums((size_t)row_len), weights((size_t)W);
  for (int64_t y = y0; y < y1; ++y) {
    for (int64_t i = 0; i < d; ++i) {
      uint8_t* row = rows + i * padded;
      const int32_t r = p.row_index[y + i];
      if (r < 0) {
        std::fill(row, row + padded, uint8_t(0));
      } else {
        std::copy(src + r * row_len, src + (r + 1) * row_len, row + radius * C);
        fill_border_columns(p, d, row);
      }
    }
    std::fill(sums.begin(), sums.end(), 0.0f);
    std::fill(weights.begin(), weights.end(), 0.0f);
    const uint8_t* center = rows + radius * padded + radius * C;
    for (int64_t k = 0; k < window_size; ++k) {
      const int64_t dy = (int64_t)window[3 * k], dx = (int64_t)window[3 * k + 1];
      const float space = (float)window[3 * k + 2];
      const uint8_t* row = rows + (dy + radius) * padded + (dx + radius) * C;
      if (C == 1) {
        for (int64_t x = 0; x < W; ++x) {
          const int v = row[x];
          const float w = space * color_weight[std::abs(v - (int)center[x])];
          sums[x] += (float)v * w;
          weights[x] += w;
        }
      } else {
        for (int64_t x = 0; x < W; ++x) {
          const uint8_t* q = row + 3 * x;
          const uint8_t* c0 = center + 3 * x;
          const int diff = std::abs((int)q[0] - (int)c0[0]) + std::abs((int)q[1] - (int)c0[1]) +
                           std::abs((int)q[2] - (int)c0[2]);
          const float w = space * color_weight[diff];
          sums[3 * x] += (float)q[0] * w;
          sums[3 * x + 1] += (float)q[1] * w;
          sums[3 * x + 2] += (float)q[2] * w;
          weights[x] += w;
        }
      }
    }
    uint8_t* out = dst + y * row_len;
    if (C == 1) {
      for (int64_t x = 0; x < W; ++x) out[x] = to_output<uint8_t, float>(sums[x] / weights[x]);
    } else {
      for (int64_t x = 0; x < W; ++x) {
        const float inverse = 1.0f / weights[x];
        for (int64_t c = 0; c < 3; ++c) out[3 * x + c] = to_output<uint8_t, float>(sums[3 * x + c] * inverse);
      }
    }
  }
}

// integer_vertical: 0 none, 1 unsigned 16-bit vertical sums, 2 signed ones (see integer_u8_rows).
void SepFilterRowsImpl(const SepFilterPlan& p, const double* kx, int64_t nkx, const double* ky, int64_t nky,
                       int integer_vertical, const void* src, void* dst, int64_t y0, int64_t y1) {
  if (integer_vertical) {
    const uint8_t* s = static_cast<const uint8_t*>(src);
    const bool signed_sums = integer_vertical == 2;
    switch (p.dst_dtype) {
      case DType::UInt8:
        return integer_u8_rows<uint8_t>(p, kx, nkx, ky, nky, signed_sums, s, static_cast<uint8_t*>(dst), y0, y1);
      case DType::Int16:
        return integer_u8_rows<int16_t>(p, kx, nkx, ky, nky, signed_sums, s, static_cast<int16_t*>(dst), y0, y1);
      case DType::Float32:
        return integer_u8_rows<float>(p, kx, nkx, ky, nky, signed_sums, s, static_cast<float*>(dst), y0, y1);
      default: break;
    }
  }
  if (p.fixed_point_u8) {
    return fixed_point_u8_rows(p, kx, nkx, ky, nky, static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst),
                               y0, y1);
  }
  switch (p.src_dtype) {
    case DType::UInt8: return generic_for_source<uint8_t>(p, kx, nkx, ky, nky, src, dst, y0, y1);
    case DType::Int16: return generic_for_source<int16_t>(p, kx, nkx, ky, nky, src, dst, y0, y1);
    case DType::Float32: return generic_for_source<float>(p, kx, nkx, ky, nky, src, dst, y0, y1);
    case DType::Float64: return generic_for_source<double>(p, kx, nkx, ky, nky, src, dst, y0, y1);
    default: return;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace cv_filter
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
namespace cv_filter {
HWY_EXPORT(SepFilterRowsImpl);
HWY_EXPORT(Filter2DRowsImpl);
HWY_EXPORT(MorphologyRowsImpl);
HWY_EXPORT(MedianRowsImpl);
HWY_EXPORT(BilateralU8RowsImpl);

std::vector<int32_t> border_indices(int64_t length, int64_t before, int64_t after, Border border) {
  std::vector<int32_t> index((size_t)(length + before + after));
  for (int64_t q = 0; q < (int64_t)index.size(); ++q) {
    int64_t i = q - before;
    if (i < 0 || i >= length) {
      switch (border) {
        case Border::Constant: i = -1; break;
        case Border::Replicate: i = i < 0 ? 0 : length - 1; break;
        case Border::Wrap: i = ((i % length) + length) % length; break;
        case Border::Reflect:
        case Border::Reflect101: {
          // Mirror back and forth until inside; a one-pixel line repeats its pixel.
          if (length == 1) { i = 0; break; }
          const int64_t shift = border == Border::Reflect ? 1 : 0;
          while (i < 0 || i >= length) {
            if (i < 0) i = -i - 1 + (1 - shift);
            else i = 2 * length - i - 1 - (1 - shift);
          }
          break;
        }
      }
    }
    index[q] = (int32_t)i;
  }
  return index;
}

void sep_filter(const SepFilterPlan& plan, const double* kx, int64_t kx_size, const double* ky, int64_t ky_size,
                const void* src, void* dst, ThreadPool* pool) {
  // uint8 sources with integer vertical taps whose sums fit 16 bits take the integer path.
  int integer_vertical = 0;
  if (plan.src_dtype == DType::UInt8 && !plan.fixed_point_u8 && !plan.square &&
      (plan.dst_dtype == DType::UInt8 || plan.dst_dtype == DType::Int16 || plan.dst_dtype == DType::Float32)) {
    bool integers = true, non_negative = true;
    double positive = 0, magnitude = 0;
    for (int64_t t = 0; t < ky_size; ++t) {
      integers &= ky[t] == std::floor(ky[t]) && std::abs(ky[t]) <= 65535;
      non_negative &= ky[t] >= 0;
      if (ky[t] > 0) positive += ky[t];
      magnitude += std::abs(ky[t]);
    }
    if (integers && non_negative && positive * 255 <= 65535) integer_vertical = 1;
    else if (integers && magnitude * 255 <= 32767) integer_vertical = 2;
  }
  const int64_t work_per_row = std::max<int64_t>(1, plan.width * plan.channels * (kx_size + ky_size));
  const int64_t grain = std::max<int64_t>(1, (int64_t)(1 << 16) / work_per_row);
  parallel_for(pool, plan.height, grain, [&](int64_t y0, int64_t y1) {
    HWY_DYNAMIC_DISPATCH(SepFilterRowsImpl)(plan, kx, kx_size, ky, ky_size, integer_vertical, src, dst, y0, y1);
  });
}

void filter_2d(const SepFilterPlan& plan, const double* kernel, int64_t kh, int64_t kw, const void* src, void* dst,
               ThreadPool* pool) {
  const int64_t work_per_row = std::max<int64_t>(1, plan.width * plan.channels * kh * (kw + 1));
  const int64_t grain = std::max<int64_t>(1, (int64_t)(1 << 16) / work_per_row);
  parallel_for(pool, plan.height, grain, [&](int64_t y0, int64_t y1) {
    HWY_DYNAMIC_DISPATCH(Filter2DRowsImpl)(plan, kernel, kh, kw, src, dst, y0, y1);
  });
}

void morphology(const SepFilterPlan& plan, const uint8_t* mask, int64_t kh, int64_t kw, bool dilate,
                const double* border_value, const void* src, void* dst, ThreadPool* pool) {
  const int64_t work_per_row = std::max<int64_t>(1, plan.width * plan.channels * kh * (kw + 1));
  const int64_t grain = std::max<int64_t>(1, (int64_t)(1 << 16) / work_per_row);
  parallel_for(pool, plan.height, grain, [&](int64_t y0, int64_t y1) {
    HWY_DYNAMIC_DISPATCH(MorphologyRowsImpl)(plan, mask, kh, kw, dilate, border_value, src, dst, y0, y1);
  });
}

void median_blur(const SepFilterPlan& plan, int64_t ksize, const void* src, void* dst, ThreadPool* pool) {
  const int64_t work_per_row = std::max<int64_t>(1, plan.width * plan.channels * ksize * ksize * ksize);
  const int64_t grain = std::max<int64_t>(1, (int64_t)(1 << 16) / work_per_row);
  parallel_for(pool, plan.height, grain, [&](int64_t y0, int64_t y1) {
    HWY_DYNAMIC_DISPATCH(MedianRowsImpl)(plan, ksize, src, dst, y0, y1);
  });
}

void bilateral_u8(const SepFilterPlan& plan, int64_t radius, const float* color_weight, const double* window,
                  int64_t window_size, const void* src, void* dst, ThreadPool* pool) {
  const int64_t work_per_row = std::max<int64_t>(1, plan.width * plan.channels * window_size);
  const int64_t grain = std::max<int64_t>(1, (int64_t)(1 << 16) / work_per_row);
  parallel_for(pool, plan.height, grain, [&](int64_t y0, int64_t y1) {
    HWY_DYNAMIC_DISPATCH(BilateralU8RowsImpl)(plan, radius, color_weight, window, window_size, src, dst, y0, y1);
  });
}

}  // namespace cv_filter
}  // namespace cpu
}  // namespace mnnpy
#endif
