// OpenCV's resize, compiled per SIMD target by Highway and chosen at run time.
// Separable schemes resize the source rows an output row reads horizontally (through the
// plan's per-element tap tables) into a small ring of row buffers, then blend those rows
// vertically; blocks of output rows run on the thread pool. The row loops are plain loops
// that each target's compiler vectorizes.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/cv_resize.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "backend/cpu/cv_resize.h"
#include "backend/cpu/thread_buffers.h"
#include "mnnpy/thread_pool.h"

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace cv_geometry {
namespace HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

template <int64_t C>
void horizontal_linear_u8(const uint8_t* HWY_RESTRICT src, const int32_t* HWY_RESTRICT off0,
                          const int32_t* HWY_RESTRICT off1, const int16_t* HWY_RESTRICT w0,
                          const int16_t* HWY_RESTRICT w1, int64_t begin, int64_t columns, int32_t* HWY_RESTRICT dst) {
  for (int64_t o = begin; o < columns; ++o) {
    const uint8_t* a = src + off0[o];
    const uint8_t* b = src + off1[o];
    const int32_t wa = w0[o], wb = w1[o];
    for (int64_t c = 0; c < C; ++c) dst[o * C + c] = (int32_t)a[c] * wa + (int32_t)b[c] * wb;
  }
}

// The first `vector_columns` columns read their two taps as adjacent pixels (off1 = off0 + cn)
// that lie, with some bytes after them, inside the row: per column, one 8-byte load holds both
// pixels, a byte shuffle pairs each channel of the first with the same channel of the second as
// 16-bit lanes, and one pairwise multiply-add by (w0, w1) gives the channel sums. One channel:
// eight columns at a time, each pair of bytes gathered as one 32-bit lane.
int64_t horizontal_linear_u8_vector(const uint8_t* HWY_RESTRICT src, const int32_t* HWY_RESTRICT off0,
                                    const int32_t* HWY_RESTRICT weight_pairs, int64_t vector_columns, int64_t cn,
                                    int32_t* HWY_RESTRICT dst) {
  int64_t o = 0;
#if HWY_TARGET != HWY_SCALAR
  if (cn == 1) {
    const hn::ScalableTag<int32_t> d32;
    const hn::Repartition<int16_t, decltype(d32)> d16;
    const int64_t N = (int64_t)hn::Lanes(d32);
    const auto low_byte = hn::Set(d32, 0xFF), second_byte = hn::Set(d32, 0xFF00);
    for (; o + N <= vector_columns; o += N) {
      const auto bytes = hn::GatherOffset(d32, reinterpret_cast<const int32_t*>(src), hn::LoadU(d32, off0 + o));
      const auto pairs = hn::Or(hn::And(bytes, low_byte), hn::ShiftLeft<8>(hn::And(bytes, second_byte)));
      auto odd = hn::Zero(d32);
      const auto sum = hn::ReorderWidenMulAccumulate(d32, hn::BitCast(d16, pairs),
                                                     hn::BitCast(d16, hn::LoadU(d32, weight_pairs + o)),
                                                     hn::Zero(d32), odd);
      hn::StoreU(hn::RearrangeToOddPlusEven(sum, odd), d32, dst + o);
    }
    return o;
  }
  const hn::Full128<uint8_t> d8;
  const hn::Full64<uint8_t> d8_half;
  const hn::Full128<int16_t> d16;
  const hn::Full128<int32_t> d32;
  // Byte c of the first pixel and byte c of the second (at +cn) as one 16-bit pair; 0x80: zero.
  alignas(16) uint8_t pairing[16];
  for (int k = 0; k < 16; ++k) {
    const int c = k / 4, second = (k / 2) & 1;
    pairing[k] = (k & 1) || c >= cn ? 0x80 : (uint8_t)(c + second * cn);
  }
  const auto shuffle = hn::Load(d8, pairing);
  for (; o < vector_columns; ++o) {
    const auto pixels = hn::ZeroExtendVector(d8, hn::LoadU(d8_half, src + off0[o]));
    const auto pairs = hn::BitCast(d16, hn::TableLookupBytesOr0(pixels, shuffle));
    auto odd = hn::Zero(d32);
    const auto sum = hn::ReorderWidenMulAccumulate(d32, pairs, hn::BitCast(d16, hn::Set(d32, weight_pairs[o])),
                                                   hn::Zero(d32), odd);
    // Four lanes stored, cn of them used: the next column overwrites the rest (rows have slack).
    hn::StoreU(hn::RearrangeToOddPlusEven(sum, odd), d32, dst + o * cn);
  }
#else
  (void)src; (void)off0; (void)weight_pairs; (void)vector_columns; (void)cn; (void)dst;
#endif
  return o;
}

// dst[o * cn + c] = src[off0[o] + c] * w0[o] + src[off1[o] + c] * w1[o]: exact integers (11-bit
// weights), per output column o and channel c.
void HorizontalLinearU8(const uint8_t* HWY_RESTRICT src, const int32_t* HWY_RESTRICT off0,
                        const int32_t* HWY_RESTRICT off1, const int16_t* HWY_RESTRICT w0,
                        const int16_t* HWY_RESTRICT w1, const int32_t* HWY_RESTRICT weight_pairs,
                        int64_t vector_columns, int64_t columns, int64_t cn, int32_t* HWY_RESTRICT dst) {
  const int64_t begin =
      cn <= 4 ? horizontal_linear_u8_vector(src, off0, weight_pairs, vector_columns, cn, dst) : 0;
  switch (cn) {
    case 1: return horizontal_linear_u8<1>(src, off0, off1, w0, w1, begin, columns, dst);
    case 2: return horizontal_linear_u8<2>(src, off0, off1, w0, w1, begin, columns, dst);
    case 3: return horizontal_linear_u8<3>(src, off0, off1, w0, w1, begin, columns, dst);
    case 4: return horizontal_linear_u8<4>(src, off0, off1, w0, w1, begin, columns, dst);
    default:
      for (int64_t o = begin; o < columns; ++o) {
        for (int64_t c = 0; c < cn; ++c) {
          dst[o * cn + c] = (int32_t)src[off0[o] + c] * w0[o] + (int32_t)src[off1[o] + c] * w1[o];
        }
      }
  }
}

// HorizontalLinearU8 of two source rows that share the column taps. On 256-bit targets one
// vector holds the same column of both rows (a 128-bit half each), so the tap offset and the
// weights are loaded once for the two.
void HorizontalLinearU8Pair(const uint8_t* HWY_RESTRICT src0, const uint8_t* HWY_RESTRICT src1,
                            const int32_t* HWY_RESTRICT off0, const int32_t* HWY_RESTRICT off1,
                            const int16_t* HWY_RESTRICT w0, const int16_t* HWY_RESTRICT w1,
                            const int32_t* HWY_RESTRICT weight_pairs, int64_t vector_columns, int64_t columns,
                            int64_t cn, int32_t* HWY_RESTRICT dst0, int32_t* HWY_RESTRICT dst1) {
#if HWY_TARGET <= HWY_AVX2 && HWY_ARCH_X86
  if (cn >= 2 && cn <= 4) {
    const hn::Full256<uint8_t> d8;
    const hn::Full128<uint8_t> d8_half;
    const hn::Full64<uint8_t> d8_quarter;
    const hn::Full256<int16_t> d16;
    const hn::Full256<int32_t> d32;
    const hn::Full128<int32_t> d32_half;
    alignas(16) uint8_t pairing[16];
    for (int k = 0; k < 16; ++k) {
      const int c = k / 4, second = (k / 2) & 1;
      pairing[k] = (k & 1) || c >= cn ? 0x80 : (uint8_t)(c + second * cn);
    }
    const auto shuffle = hn::LoadDup128(d8, pairing);
    for (int64_t o = 0; o < vector_columns; ++o) {
      const auto lo = hn::ZeroExtendVector(d8_half, hn::LoadU(d8_quarter, src0 + off0[o]));
      const auto hi = hn::ZeroExtendVector(d8_half, hn::LoadU(d8_quarter, src1 + off0[o]));
      const auto pairs = hn::BitCast(d16, hn::TableLookupBytesOr0(hn::Combine(d8, hi, lo), shuffle));
      auto odd = hn::Zero(d32);
      const auto sum = hn::RearrangeToOddPlusEven(
          hn::ReorderWidenMulAccumulate(d32, pairs, hn::BitCast(d16, hn::Set(d32, weight_pairs[o])), hn::Zero(d32), odd),
          odd);
      hn::StoreU(hn::LowerHalf(d32_half, sum), d32_half, dst0 + o * cn);
      hn::StoreU(hn::UpperHalf(d32_half, sum), d32_half, dst1 + o * cn);
    }
    switch (cn) {
      case 2:
        horizontal_linear_u8<2>(src0, off0, off1, w0, w1, vector_columns, columns, dst0);
        return horizontal_linear_u8<2>(src1, off0, off1, w0, w1, vector_columns, columns, dst1);
      case 3:
        horizontal_linear_u8<3>(src0, off0, off1, w0, w1, vector_columns, columns, dst0);
        return horizontal_linear_u8<3>(src1, off0, off1, w0, w1, vector_columns, columns, dst1);
      default:
        horizontal_linear_u8<4>(src0, off0, off1, w0, w1, vector_columns, columns, dst0);
        return horizontal_linear_u8<4>(src1, off0, off1, w0, w1, vector_columns, columns, dst1);
    }
  }
#endif
  HorizontalLinearU8(src0, off0, off1, w0, w1, weight_pairs, vector_columns, columns, cn, dst0);
  HorizontalLinearU8(src1, off0, off1, w0, w1, weight_pairs, vector_columns, columns, cn, dst1);
}

// The vertical blend of two horizontally resized rows as OpenCV's vectorized path computes
// it: each product keeps its high 16 bits of (row >> 4) * weight, and the sum is rounded by 2 bits.
void VerticalLinearU8(const int32_t* HWY_RESTRICT s0, const int32_t* HWY_RESTRICT s1, int32_t b0, int32_t b1,
                      int64_t n, uint8_t* HWY_RESTRICT dst) {
  int64_t i = 0;
#if HWY_TARGET != HWY_SCALAR
  // Rows hold sums of 8-bit pixels times 11-bit non-negative weights: (row >> 4) fits int16.
  const hn::ScalableTag<int16_t> d16;
  const hn::Repartition<int32_t, decltype(d16)> d32;
  const hn::Rebind<uint8_t, decltype(d16)> d8;
  const int64_t N = (int64_t)hn::Lanes(d16), H = (int64_t)hn::Lanes(d32);
  const auto beta0 = hn::Set(d16, (int16_t)b0), beta1 = hn::Set(d16, (int16_t)b1), two = hn::Set(d16, 2);
  const hn::Half<decltype(d16)> d16_half;
  auto narrow = [&](const int32_t* p) {
    return hn::Combine(d16, hn::DemoteTo(d16_half, hn::ShiftRight<4>(hn::LoadU(d32, p + H))),
                       hn::DemoteTo(d16_half, hn::ShiftRight<4>(hn::LoadU(d32, p))));
  };
  for (; i + N <= n; i += N) {
    const auto v = hn::Add(hn::MulHigh(narrow(s0 + i), beta0), hn::MulHigh(narrow(s1 + i), beta1));
    hn::StoreU(hn::DemoteTo(d8, hn::ShiftRight<2>(hn::Add(v, two))), d8, dst + i);
  }
#endif
  for (; i < n; ++i) {
    const int32_t v = (((s0[i] >> 4) * b0) >> 16) + (((s1[i] >> 4) * b1) >> 16);
    dst[i] = (uint8_t)std::min(std::max((v + 2) >> 2, 0), 255);
  }
}

// Whole 2x2 blocks of uint8 pixels of C channels: out = (sum of the four + 2) >> 2, the first
// `columns` output pixels. Returns the pixels done (the rest is left to the caller).
template <int C>
int64_t halve_u8(const uint8_t* HWY_RESTRICT r0, const uint8_t* HWY_RESTRICT r1, int64_t columns,
                 uint8_t* HWY_RESTRICT out) {
  int64_t o = 0;
#if HWY_TARGET != HWY_SCALAR
  const hn::ScalableTag<uint8_t> d8;
  const hn::Repartition<uint16_t, decltype(d8)> d16;
  const hn::Repartition<int16_t, decltype(d8)> d16_signed;
  const hn::Rebind<uint8_t, decltype(d16)> d8_half;
  const int64_t N = (int64_t)hn::Lanes(d8);
  const auto low = hn::Set(d16, 0xFF), two = hn::Set(d16, 2);
  // Each plane's pixels in pairs: the sum of each pair of adjacent pixels of both rows.
  auto mean = [&](auto a, auto b) {
    const auto x = hn::BitCast(d16, a), y = hn::BitCast(d16, b);
    const auto sum = hn::Add(hn::Add(hn::And(x, low), hn::ShiftRight<8>(x)),
                             hn::Add(hn::And(y, low), hn::ShiftRight<8>(y)));
    return hn::DemoteTo(d8_half, hn::BitCast(d16_signed, hn::ShiftRight<2>(hn::Add(sum, two))));
  };
  for (; o + N / 2 <= columns; o += N / 2) {
    const int64_t x = 2 * o * C;
    if constexpr (C == 1) {
      hn::StoreU(mean(hn::LoadU(d8, r0 + x), hn::LoadU(d8, r1 + x)), d8_half, out + o);
    } else if constexpr (C == 3) {
      hn::Vec<decltype(d8)> a0, a1, a2, b0, b1, b2;
      hn::LoadInterleaved3(d8, r0 + x, a0, a1, a2);
      hn::LoadInterleaved3(d8, r1 + x, b0, b1, b2);
      hn::StoreInterleaved3(mean(a0, b0), mean(a1, b1), mean(a2, b2), d8_half, out + o * C);
    } else {
      hn::Vec<decltype(d8)> a0, a1, a2, a3, b0, b1, b2, b3;
      hn::LoadInterleaved4(d8, r0 + x, a0, a1, a2, a3);
      hn::LoadInterleaved4(d8, r1 + x, b0, b1, b2, b3);
      hn::StoreInterleaved4(mean(a0, b0), mean(a1, b1), mean(a2, b2), mean(a3, b3), d8_half, out + o * C);
    }
  }
#endif
  for (; o < columns; ++o) {
    for (int c = 0; c < C; ++c) {
      const int64_t j = 2 * o * C + c;
      out[o * C + c] = (uint8_t)((r0[j] + r0[j + C] + r1[j] + r1[j + C] + 2) >> 2);
    }
  }
  return o;
}

int64_t HalveU8(const uint8_t* r0, const uint8_t* r1, int64_t columns, int64_t cn, uint8_t* out) {
  switch (cn) {
    case 1: return halve_u8<1>(r0, r1, columns, out);
    case 3: return halve_u8<3>(r0, r1, columns, out);
    case 4: return halve_u8<4>(r0, r1, columns, out);
    default: return 0;
  }
}

template <class T, class W>
void horizontal_taps(const T* HWY_RESTRICT src, const int32_t* HWY_RESTRICT off, const float* HWY_RESTRICT weight,
                     int taps, int64_t n, W* HWY_RESTRICT dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = (W)weight[i] * (W)src[off[i]];
  for (int t = 1; t < taps; ++t) {
    const int32_t* HWY_RESTRICT o = off + t * n;
    const float* HWY_RESTRICT w = weight + t * n;
    for (int64_t i = 0; i < n; ++i) dst[i] = std::fma((W)w[i], (W)src[o[i]], dst[i]);
  }
}

// dst[i] = sum over t of weight[t] * src[off[t * n + i]], in float (double for float64 images). Taps
// are fused multiply-adds (std::fma: vector FMAs where the target has them), the same rounding on
// every target.
void HorizontalTaps(DType dtype, const void* src, const int32_t* off, const float* weight, int taps, int64_t n,
                    void* dst) {
  switch (dtype) {
    case DType::UInt8: return horizontal_taps((const uint8_t*)src, off, weight, taps, n, (float*)dst);
    case DType::Int16: return horizontal_taps((const int16_t*)src, off, weight, taps, n, (float*)dst);
    case DType::Float32: return horizontal_taps((const float*)src, off, weight, taps, n, (float*)dst);
    default: return horizontal_taps((const double*)src, off, weight, taps, n, (double*)dst);
  }
}

template <class W, class T>
void vertical_taps(const W* const* rows, const float* weight, int taps, int64_t n, T* HWY_RESTRICT dst, W lo, W hi) {
  constexpr int64_t kBlock = 512;
  W acc[kBlock];
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const int64_t m = std::min(kBlock, n - i0);
    const W* HWY_RESTRICT r0 = rows[0] + i0;
    const W w0 = (W)weight[0];
    for (int64_t i = 0; i < m; ++i) acc[i] = w0 * r0[i];
    for (int t = 1; t < taps; ++t) {
      const W* HWY_RESTRICT r = rows[t] + i0;
      const W w = (W)weight[t];
      for (int64_t i = 0; i < m; ++i) acc[i] = std::fma(w, r[i], acc[i]);
    }
    if constexpr (std::is_integral<T>::value) {
      // OpenCV's saturate_cast: round half to even, then clamp.
      for (int64_t i = 0; i < m; ++i) dst[i0 + i] = (T)std::min(std::max(std::rint(acc[i]), lo), hi);
    } else {
      for (int64_t i = 0; i < m; ++i) dst[i0 + i] = (T)acc[i];
    }
  }
}

void VerticalTaps(DType dtype, const void* const* rows, const float* weight, int taps, int64_t n, void* dst) {
  switch (dtype) {
    case DType::UInt8:
      return vertical_taps((const float* const*)rows, weight, taps, n, (uint8_t*)dst, 0.f, 255.f);
    case DType::Int16:
      return vertical_taps((const float* const*)rows, weight, taps, n, (int16_t*)dst, -32768.f, 32767.f);
    case DType::Float32: return vertical_taps((const float* const*)rows, weight, taps, n, (float*)dst, 0.f, 0.f);
    default: return vertical_taps((const double* const*)rows, weight, taps, n, (double*)dst, 0.0, 0.0);
  }
}

// acc[j] += row[j] for the vertical sums of integer-factor area resizing.
template <class A, class T>
void accumulate_row(const T* HWY_RESTRICT row, int64_t n, bool first, A* HWY_RESTRICT acc) {
  if (first) {
    for (int64_t j = 0; j < n; ++j) acc[j] = (A)row[j];
  } else {
    for (int64_t j = 0; j < n; ++j) acc[j] += (A)row[j];
  }
}

void AccumulateRow(DType dtype, const void* row, int64_t n, bool first, void* acc) {
  switch (dtype) {
    case DType::UInt8: return accumulate_row((const uint8_t*)row, n, first, (int32_t*)acc);
    case DType::Int16: return accumulate_row((const int16_t*)row, n, first, (int32_t*)acc);
    case DType::Float32: return accumulate_row((const float*)row, n, first, (float*)acc);
    default: return accumulate_row((const double*)row, n, first, (double*)acc);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace cv_geometry
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
namespace cv_geometry {
HWY_EXPORT(HorizontalLinearU8);
HWY_EXPORT(HorizontalLinearU8Pair);
HWY_EXPORT(VerticalLinearU8);
HWY_EXPORT(HorizontalTaps);
HWY_EXPORT(VerticalTaps);
HWY_EXPORT(AccumulateRow);
HWY_EXPORT(HalveU8);

namespace {

constexpr int64_t kRowGrainElements = 1 << 14;  // output elements per block of rows, at least

int64_t clamp_index(int64_t i, int64_t n) { return std::min(std::max<int64_t>(i, 0), n - 1); }

int16_t fixed_weight(float w) {  // OpenCV's saturate_cast<short>(w * 2048)
  return (int16_t)std::min(std::max(std::lrint(w * 2048.0f), -32768L), 32767L);
}

// Keys' cubic weights (a = -0.75) for the taps at floor(x) - 1 .. floor(x) + 2, t = x - floor(x).
void cubic_weights(float t, float* w) {
  const float a = -0.75f;
  w[0] = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a;
  w[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
  w[2] = ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1;
  w[3] = 1.f - w[0] - w[1] - w[2];
}

// Lanczos weights (window 4) for the taps at floor(x) - 3 .. floor(x) + 4, normalized to sum 1.
void lanczos4_weights(float t, float* w) {
  if (t < FLT_EPSILON) {
    for (int i = 0; i < 8; ++i) w[i] = i == 3 ? 1.f : 0.f;
    return;
  }
  const double pi = 3.14159265358979323846;
  float sum = 0;
  for (int i = 0; i < 8; ++i) {
    const double d = (t + 3 - i) * pi;
    w[i] = (float)(16.0 * std::sin(d) * std::sin(d / 4) / (d * d));
    sum += w[i];
  }
  const float inv = 1.f / sum;
  for (int i = 0; i < 8; ++i) w[i] *= inv;
}

// The taps of one axis for the interpolating modes, placed as OpenCV places them. Along x an
// output that falls off the image keeps its edge pixel with weight 1 (bilinear only); along y
// the rows are clamped but the weights kept (`clamp_weights` false).
ResizePlan::Axis interpolation_axis(int64_t in, int64_t out, double inv_scale, Interpolation mode, bool area_mode,
                                    bool clamp_weights) {
  ResizePlan::Axis axis;
  const int taps = mode == Interpolation::Cubic ? 4 : mode == Interpolation::Lanczos4 ? 8 : 2;
  const double scale = 1.0 / inv_scale;
  axis.taps = taps;
  axis.index.resize(out * taps);
  axis.weight.resize(out * taps);
  for (int64_t o = 0; o < out; ++o) {
    int64_t s;
    float f;
    if (area_mode) {
      s = (int64_t)std::floor(o * scale);
      f = (float)((o + 1) - (s + 1) * inv_scale);
      f = f <= 0 ? 0.f : f - std::floor(f);
    } else {
      f = (float)((o + 0.5) * scale - 0.5);
      s = (int64_t)std::floor(f);
      f -= (float)s;
    }
    if (clamp_weights && taps == 2) {
      if (s < 0) f = 0, s = 0;
      if (s >= in - 1) f = 0, s = in - 1;
    }
    float w[8];
    if (taps == 2) {
      w[0] = 1.f - f;
      w[1] = f;
    } else if (taps == 4) {
      cubic_weights(f, w);
    } else {
      lanczos4_weights(f, w);
    }
    for (int t = 0; t < taps; ++t) {
      axis.index[o * taps + t] = (int32_t)clamp_index(s - (taps / 2 - 1) + t, in);
      axis.weight[o * taps + t] = w[t];
    }
  }
  return axis;
}

// OpenCV's bit-exact horizontal pass for int16: 16-bit weights, int32 sums (exact: the weights of
// a pair sum to 2^16).
void horizontal_exact_i16(const int16_t* src, const int32_t* off0, const int32_t* off1, const int32_t* weight,
                          int64_t columns, int64_t cn, int32_t* dst) {
  for (int64_t o = 0; o < columns; ++o) {
    const int64_t w0 = weight[2 * o], w1 = weight[2 * o + 1];
    for (int64_t c = 0; c < cn; ++c) {
      dst[o * cn + c] = (int32_t)(src[off0[o] + c] * w0 + src[off1[o] + c] * w1);
    }
  }
}

// The taps of one axis of area resizing by a non-integer factor >= 1: each source pixel weighs
// by how much of it the output pixel's footprint covers.
ResizePlan::Axis area_axis(int64_t in, int64_t out, double scale) {
  std::vector<std::vector<std::pair<int32_t, float>>> lists(out);
  size_t taps = 1;
  for (int64_t o = 0; o < out; ++o) {
    const double begin = o * scale, end = begin + scale;
    const double cell = std::min(scale, (double)in - begin);
    int64_t first = (int64_t)std::ceil(begin), last = (int64_t)std::floor(end);
    last = std::min<int64_t>(last, in - 1);
    first = std::min(first, last);
    auto& list = lists[o];
    if (first - begin > 1e-3) list.push_back({(int32_t)(first - 1), (float)((first - begin) / cell)});
    for (int64_t s = first; s < last; ++s) list.push_back({(int32_t)s, (float)(1.0 / cell)});
    const double tail = std::min(std::min(end - last, 1.0), cell);
    if (tail > 1e-3) list.push_back({(int32_t)last, (float)(tail / cell)});
    if (list.empty()) list.push_back({(int32_t)clamp_index(first, in), 0.f});
    taps = std::max(taps, list.size());
  }
  ResizePlan::Axis axis;
  axis.taps = (int)taps;
  axis.index.assign(out * taps, 0);
  axis.weight.assign(out * taps, 0.f);
  for (int64_t o = 0; o < out; ++o) {
    for (size_t t = 0; t < taps; ++t) {
      // Padding taps repeat the first source index with weight 0 (a row already in the ring).
      const auto& e = lists[o][t < lists[o].size() ? t : 0];
      axis.index[o * taps + t] = e.first;
      axis.weight[o * taps + t] = t < lists[o].size() ? e.second : 0.f;
    }
  }
  return axis;
}

}  // namespace

ResizePlan::ResizePlan(DType dtype, int64_t in_h, int64_t in_w, int64_t channels, int64_t out_h, int64_t out_w,
                       double inv_scale_x, double inv_scale_y, Interpolation interpolation)
    : dtype_(dtype), in_h_(in_h), in_w_(in_w), channels_(channels), out_h_(out_h), out_w_(out_w) {
  const double scale_x = 1.0 / inv_scale_x, scale_y = 1.0 / inv_scale_y;
  const int64_t cn = channels;
  const int64_t n = out_w * cn;
  if (interpolation == Interpolation::Nearest || interpolation == Interpolation::NearestExact) {
    scheme_ = Scheme::Nearest;
    x_.taps = y_.taps = 1;
    x_.index.resize(out_w);
    y_.index.resize(out_h);
    if (interpolation == Interpolation::Nearest) {
      for (int64_t o = 0; o < out_w; ++o) x_.index[o] = (int32_t)std::min<int64_t>((int64_t)std::floor(o * scale_x), in_w - 1);
      for (int64_t o = 0; o < out_h; ++o) y_.index[o] = (int32_t)std::min<int64_t>((int64_t)std::floor(o * scale_y), in_h - 1);
    } else {
      // Pixel centres in 16-bit fixed point, as OpenCV's exact nearest neighbour computes them.
      auto fill = [](std::vector<int32_t>& index, int64_t in, int64_t out) {
        const int64_t step = ((in << 16) + out / 2) / out;
        const int64_t start = step / 2 - in % 2;
        for (int64_t o = 0; o < out; ++o) index[o] = (int32_t)std::min((step * o + start) >> 16, in - 1);
      };
      fill(x_.index, in_w, out_w);
      fill(y_.index, in_h, out_h);
    }
    return;
  }
  const int64_t area_x = std::lrint(scale_x), area_y = std::lrint(scale_y);
  const bool integer_factors = std::fabs(scale_x - area_x) < DBL_EPSILON && std::fabs(scale_y - area_y) < DBL_EPSILON;
  if (interpolation == Interpolation::Linear && integer_factors && area_x == 2 && area_y == 2) {
    interpolation = Interpolation::Area;  // halving: bilinear and area agree, area is faster
  }
  if (interpolation == Interpolation::LinearExact) {
    if (dtype == DType::Float32 || dtype == DType::Float64) {
      interpolation = Interpolation::Linear;  // OpenCV has no exact variant for floats
    } else if (integer_factors && area_x == 2 && area_y == 2 && channels != 2) {
      interpolation = Interpolation::Area;  // OpenCV halves by the area mean, which is exact here
    } else {
      build_linear_exact(inv_scale_x, inv_scale_y);
      return;
    }
  }
  bool area_mode = false;
  if (interpolation == Interpolation::Area) {
    if (scale_x >= 1 && scale_y >= 1) {
      if (integer_factors) {
        scheme_ = Scheme::AreaFast;
        area_x_ = (int)area_x;
        area_y_ = (int)area_y;
        return;
      }
      x_ = area_axis(in_w, out_w, scale_x);
      y_ = area_axis(in_h, out_h, scale_y);
    } else {
      area_mode = true;  // enlarging: bilinear with the weights of the covered fractions
    }
  }
  if (interpolation != Interpolation::Area || area_mode) {
    const Interpolation taps_mode = area_mode ? Interpolation::Linear : interpolation;
    x_ = interpolation_axis(in_w, out_w, inv_scale_x, taps_mode, area_mode, true);
    y_ = interpolation_axis(in_h, out_h, inv_scale_y, taps_mode, area_mode, false);
  }
  const bool fixed_linear = dtype == DType::UInt8 && x_.taps == 2 && (interpolation == Interpolation::Linear || area_mode);
  scheme_ = fixed_linear ? Scheme::LinearFixed8U : Scheme::Taps;
  if (dtype == DType::UInt8 && !fixed_linear && interpolation != Interpolation::Area) {
    // OpenCV rounds cubic and Lanczos weights of uint8 images to 11 bits.
    for (Axis* a : {&x_, &y_}) {
      for (float& w : a->weight) w = fixed_weight(w) / 2048.0f;
    }
  }
  const int taps = x_.taps;
  column_offsets_.resize(taps * n);
  for (int64_t o = 0; o < out_w; ++o) {
    for (int t = 0; t < taps; ++t) {
      for (int64_t c = 0; c < cn; ++c) column_offsets_[t * n + o * cn + c] = (int32_t)(x_.index[o * taps + t] * cn + c);
    }
  }
  if (fixed_linear) {
    // Per output column (not element): tap t's pixel offset at [t * out_w + o].
    column_offsets_.assign(2 * out_w, 0);
    column_fixed_.resize(2 * out_w);
    for (int64_t o = 0; o < out_w; ++o) {
      for (int t = 0; t < 2; ++t) {
        column_offsets_[t * out_w + o] = (int32_t)(x_.index[o * 2 + t] * cn);
        column_fixed_[t * out_w + o] = fixed_weight(x_.weight[o * 2 + t]);
      }
    }
    fill_vector_columns();
    y_.fixed.resize(y_.weight.size());
    for (size_t i = 0; i < y_.weight.size(); ++i) y_.fixed[i] = fixed_weight(y_.weight[i]);
  } else {
    column_weights_.resize(taps * n);
    for (int64_t o = 0; o < out_w; ++o) {
      for (int t = 0; t < taps; ++t) {
        for (int64_t c = 0; c < cn; ++c) column_weights_[t * n + o * cn + c] = x_.weight[o * taps + t];
      }
    }
  }
}

// The taps of one axis of OpenCV's bit-exact bilinear resize: for output o, source indices
// index[2o], index[2o + 1] and weights that sum to `one` (2^8 for uint8, 2^16 for int16), the
// second rounded half to even from the fraction of the sample position. Positions before the
// first pixel or at / after the last one take that pixel whole.
static void exact_linear_axis(int64_t in, int64_t out, double inv_scale, int32_t one, std::vector<int32_t>& index,
                       std::vector<int32_t>& weight) {
  const double scale = 1.0 / inv_scale;
  index.resize(2 * out);
  weight.resize(2 * out);
  for (int64_t o = 0; o < out; ++o) {
    const double position = scale * ((double)o + 0.5) - 0.5;
    const int64_t first = (int64_t)std::floor(position);
    int64_t s = 0;
    int32_t w1 = 0;
    if (first >= 0 && in > 1) {
      if (first < in - 1) {
        s = first;
        w1 = (int32_t)std::nearbyint((position - (double)first) * one);
      } else {
        s = in - 1;
      }
    }
    index[2 * o] = (int32_t)s;
    index[2 * o + 1] = (int32_t)std::min(s + 1, in - 1);
    weight[2 * o] = one - w1;
    weight[2 * o + 1] = w1;
  }
}

void ResizePlan::build_linear_exact(double inv_scale_x, double inv_scale_y) {
  scheme_ = Scheme::LinearExact;
  const int32_t one = dtype_ == DType::UInt8 ? 1 << 8 : 1 << 16;
  const int64_t cn = channels_;
  exact_linear_axis(in_w_, out_w_, inv_scale_x, one, x_.index, exact_x_);
  exact_linear_axis(in_h_, out_h_, inv_scale_y, one, y_.index, exact_y_);
  x_.taps = y_.taps = 2;
  column_offsets_.resize(2 * out_w_);
  for (int64_t o = 0; o < out_w_; ++o) {
    column_offsets_[o] = (int32_t)(x_.index[2 * o] * cn);
    column_offsets_[out_w_ + o] = (int32_t)(x_.index[2 * o + 1] * cn);
  }
  if (dtype_ == DType::UInt8) {
    // 8-bit weights fit the 16-bit lanes of the fixed-point bilinear horizontal pass.
    column_fixed_.resize(2 * out_w_);
    for (int64_t o = 0; o < out_w_; ++o) {
      column_fixed_[o] = (int16_t)exact_x_[2 * o];
      column_fixed_[out_w_ + o] = (int16_t)exact_x_[2 * o + 1];
    }
    fill_vector_columns();
  }
}

void ResizePlan::fill_vector_columns() {
  // Columns whose taps are adjacent pixels with room for the vector load after them.
  const int64_t cn = channels_, load_bytes = cn == 1 ? 4 : 8, row_bytes = in_w_ * cn;
  column_pairs_.resize(out_w_);
  vector_columns_ = 0;
  for (int64_t o = 0; o < out_w_; ++o) {
    column_pairs_[o] = (int32_t)(uint16_t)column_fixed_[o] | ((int32_t)column_fixed_[out_w_ + o] << 16);
    if (vector_columns_ == o && column_offsets_[out_w_ + o] == column_offsets_[o] + cn &&
        column_offsets_[o] + load_bytes <= row_bytes) {
      vector_columns_ = o + 1;
    }
  }
}

ResizePlan::ResizePlan(DType dtype, int64_t in_h, int64_t in_w, int64_t channels, std::vector<int32_t> rows,
                       std::vector<int32_t> columns)
    : dtype_(dtype), in_h_(in_h), in_w_(in_w), channels_(channels), out_h_((int64_t)rows.size()),
      out_w_((int64_t)columns.size()), scheme_(Scheme::Nearest) {
  x_.taps = y_.taps = 1;
  x_.index = std::move(columns);
  y_.index = std::move(rows);
}

const char* ResizePlan::scheme() const {
  switch (scheme_) {
    case Scheme::Nearest: return "nearest";
    case Scheme::LinearFixed8U: return "bilinear-fixed-point";
    case Scheme::AreaFast: return "area-integer";
    case Scheme::Taps: return "separable-taps";
    case Scheme::LinearExact: return "bilinear-bit-exact";
  }
  return "";
}

void ResizePlan::run(const void* src, void* dst, ThreadPool* pool) const {
  switch (scheme_) {
    case Scheme::Nearest: return run_nearest((const uint8_t*)src, (uint8_t*)dst, pool);
    case Scheme::AreaFast: return run_area_fast(src, dst, pool);
    default: return run_separable(src, dst, pool);
  }
}

void ResizePlan::run_nearest(const uint8_t* src, uint8_t* dst, ThreadPool* pool) const {
  const size_t pixel = (size_t)channels_ * dtype_size(dtype_);
  const int64_t in_row = in_w_ * (int64_t)pixel, out_row = out_w_ * (int64_t)pixel;
  const int64_t grain = std::max<int64_t>(1, kRowGrainElements / std::max<int64_t>(1, out_w_ * channels_));
  parallel_for(pool, out_h_, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      uint8_t* out = dst + r * out_row;
      if (r > r0 && y_.index[r] == y_.index[r - 1]) {
        std::memcpy(out, out - out_row, out_row);
        continue;
      }
      const uint8_t* in = src + y_.index[r] * in_row;
      auto gather = [&](auto pixel_size) {
        constexpr size_t P = decltype(pixel_size)::value;
        for (int64_t o = 0; o < out_w_; ++o) std::memcpy(out + o * P, in + x_.index[o] * P, P);
      };
      switch (pixel) {
        case 1: gather(std::integral_constant<size_t, 1>()); break;
        case 2: gather(std::integral_constant<size_t, 2>()); break;
        case 3: gather(std::integral_constant<size_t, 3>()); break;
        case 4: gather(std::integral_constant<size_t, 4>()); break;
        case 6: gather(std::integral_constant<size_t, 6>()); break;
        case 8: gather(std::integral_constant<size_t, 8>()); break;
        case 12: gather(std::integral_constant<size_t, 12>()); break;
        case 16: gather(std::integral_constant<size_t, 16>()); break;
        default:
          for (int64_t o = 0; o < out_w_; ++o) std::memcpy(out + o * pixel, in + x_.index[o] * pixel, pixel);
      }
    }
  });
}

void ResizePlan::run_area_fast(const void* src, void* dst, ThreadPool* pool) const {
  const int64_t cn = channels_, row = in_w_ * cn, n = out_w_ * cn;
  const size_t elem = dtype_size(dtype_);
  const bool integer = dtype_ == DType::UInt8 || dtype_ == DType::Int16;
  const int ax = area_x_, ay = area_y_;
  const bool shift_mean = ax == 2 && ay == 2 && (cn == 1 || cn == 3 || cn == 4);
  const int64_t grain = std::max<int64_t>(1, kRowGrainElements / std::max<int64_t>(1, n * ay));
  parallel_for(pool, out_h_, grain, [&](int64_t r0, int64_t r1) {
    // Sums of ay source rows: int32 for integer images, the image's type for floats.
    const size_t acc_size = integer ? 4 : elem;
    void* acc = thread_buffer(0, (row * acc_size + 3) / 4 + 16);
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t sy0 = r * ay, rows = std::min<int64_t>(ay, in_h_ - sy0);
      uint8_t* out = (uint8_t*)dst + r * n * elem;
      int64_t first_partial = 0;
      if (shift_mean && dtype_ == DType::UInt8 && rows == 2) {
        // Whole 2x2 blocks of uint8 pixels straight from the two source rows.
        const uint8_t* row0 = (const uint8_t*)src + sy0 * row;
        first_partial = HWY_DYNAMIC_DISPATCH(HalveU8)(row0, row0 + row, std::min(out_w_, in_w_ / 2), cn, out);
        if (first_partial == out_w_) continue;
      }
      for (int64_t k = 0; k < rows; ++k) {
        HWY_DYNAMIC_DISPATCH(AccumulateRow)(dtype_, (const uint8_t*)src + (sy0 + k) * row * elem, row, k == 0, acc);
      }
      for (int64_t o = first_partial; o < out_w_; ++o) {
        const int64_t sx0 = o * ax, cols = std::min<int64_t>(ax, in_w_ - sx0);
        const int64_t count = rows * cols;
        const bool full = count == (int64_t)ax * ay;
        for (int64_t c = 0; c < cn; ++c) {
          const int64_t j0 = sx0 * cn + c;
          if (integer) {
            const int32_t* a = (const int32_t*)acc;
            int32_t s = 0;
            for (int64_t k = 0; k < cols; ++k) s += a[j0 + k * cn];
            // OpenCV rounds the 2x2 mean of 1, 3 or 4 channels by a shift, other means by a float product.
            const int32_t v = full && shift_mean ? (s + 2) >> 2
                                                         : (int32_t)std::nearbyint((float)s * (1.f / (float)count));
            if (dtype_ == DType::UInt8) {
              out[o * cn + c] = (uint8_t)std::min(std::max(v, 0), 255);
            } else {
              ((int16_t*)out)[o * cn + c] = (int16_t)std::min(std::max(v, -32768), 32767);
            }
          } else if (dtype_ == DType::Float32) {
            const float* a = (const float*)acc;
            float s = 0;
            for (int64_t k = 0; k < cols; ++k) s += a[j0 + k * cn];
            ((float*)out)[o * cn + c] = s * (1.f / (float)count);
          } else {
            const double* a = (const double*)acc;
            double s = 0;
            for (int64_t k = 0; k < cols; ++k) s += a[j0 + k * cn];
            ((double*)out)[o * cn + c] = s * (1.0 / (double)count);
          }
        }
      }
    }
  });
}

void ResizePlan::run_separable(const void* src, void* dst, ThreadPool* pool) const {
  const int64_t n = out_w_ * channels_, row = in_w_ * channels_;
  const int taps = y_.taps;
  const bool exact = scheme_ == Scheme::LinearExact;
  const bool fixed = scheme_ == Scheme::LinearFixed8U || (exact && dtype_ == DType::UInt8);
  const size_t elem = dtype_size(dtype_);
  const size_t work = fixed || exact ? 4 : dtype_ == DType::Float64 ? 8 : 4;  // bytes of a row-buffer element
  // Bytes per ring slot, with room for the vector stores that run past a row's last element.
  const int64_t stride = (int64_t)(((n + 4) * work + 63) / 64 * 64);
  const int64_t grain = std::max<int64_t>(1, kRowGrainElements / std::max<int64_t>(1, n));
  parallel_for(pool, out_h_, grain, [&](int64_t r0, int64_t r1) {
    uint8_t* ring = (uint8_t*)thread_buffer(0, (size_t)(stride * taps) / 4 + 16);
    std::vector<int64_t> held(taps, -1);
    std::vector<const void*> rows(taps);
    for (int64_t r = r0; r < r1; ++r) {
      if (fixed && taps == 2) {
        // Both rows new (shrinking, usually): resized together.
        const int64_t sy0 = y_.index[r * 2], sy1 = y_.index[r * 2 + 1];
        if (sy0 != sy1 && sy0 % 2 != sy1 % 2 && held[sy0 % 2] != sy0 && held[sy1 % 2] != sy1) {
          const uint8_t* in = (const uint8_t*)src;
          HWY_DYNAMIC_DISPATCH(HorizontalLinearU8Pair)(
              in + sy0 * row, in + sy1 * row, column_offsets_.data(), column_offsets_.data() + out_w_,
              column_fixed_.data(), column_fixed_.data() + out_w_, column_pairs_.data(), vector_columns_, out_w_,
              channels_, (int32_t*)(ring + (sy0 % 2) * stride), (int32_t*)(ring + (sy1 % 2) * stride));
          held[sy0 % 2] = sy0;
          held[sy1 % 2] = sy1;
        }
      }
      for (int t = 0; t < taps; ++t) {
        const int64_t sy = y_.index[r * taps + t];
        // Consecutive source rows land in distinct slots, so a row stays while it is needed.
        const int slot = (int)(sy % taps);
        uint8_t* buf = ring + slot * stride;
        if (held[slot] != sy) {
          const uint8_t* in = (const uint8_t*)src + sy * row * elem;
          if (fixed) {
            HWY_DYNAMIC_DISPATCH(HorizontalLinearU8)(in, column_offsets_.data(), column_offsets_.data() + out_w_,
                                                     column_fixed_.data(), column_fixed_.data() + out_w_,
                                                     column_pairs_.data(), vector_columns_, out_w_, channels_,
                                                     (int32_t*)buf);
          } else if (exact) {
            horizontal_exact_i16((const int16_t*)in, column_offsets_.data(), column_offsets_.data() + out_w_,
                                 exact_x_.data(), out_w_, channels_, (int32_t*)buf);
          } else {
            HWY_DYNAMIC_DISPATCH(HorizontalTaps)(dtype_, in, column_offsets_.data(), column_weights_.data(),
                                                 x_.taps, n, buf);
          }
          held[slot] = sy;
        }
        rows[t] = buf;
      }
      uint8_t* out = (uint8_t*)dst + r * n * elem;
      if (exact) {
        const int32_t* h0 = (const int32_t*)rows[0];
        const int32_t* h1 = (const int32_t*)rows[1];
        const int64_t b0 = exact_y_[r * 2], b1 = exact_y_[r * 2 + 1];
        if (dtype_ == DType::UInt8) {
          // 8 + 8 fraction bits, rounded: sums of 16-bit rows times 8-bit weights fit 32 bits.
          for (int64_t i = 0; i < n; ++i) {
            out[i] = (uint8_t)std::min<uint32_t>(((uint32_t)h0[i] * (uint32_t)b0 + (uint32_t)h1[i] * (uint32_t)b1 +
                                                  (1u << 15)) >> 16, 255u);
          }
        } else {
          int16_t* o16 = (int16_t*)out;
          for (int64_t i = 0; i < n; ++i) {
            const int64_t v = (h0[i] * b0 + h1[i] * b1 + (int64_t(1) << 31)) >> 32;
            o16[i] = (int16_t)std::min<int64_t>(std::max<int64_t>(v, -32768), 32767);
          }
        }
      } else if (fixed) {
        HWY_DYNAMIC_DISPATCH(VerticalLinearU8)((const int32_t*)rows[0], (const int32_t*)rows[1], y_.fixed[r * 2],
                                               y_.fixed[r * 2 + 1], n, out);
      } else {
        HWY_DYNAMIC_DISPATCH(VerticalTaps)(dtype_, rows.data(), y_.weight.data() + r * taps, taps, n, out);
      }
    }
  });
}

}  // namespace cv_geometry
}  // namespace cpu
}  // namespace mnnpy
#endif  // HWY_ONCE
