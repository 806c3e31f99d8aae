// Colour conversion kernels (OpenCV's cvtColor), compiled once per SIMD target by Highway and
// chosen at run time. Integer (uint8) conversions use OpenCV's fixed-point coefficients and
// rounding, so their results are bit-exact; the others compute in float32 as OpenCV does.
// The benchmarked conversions (gray, channel reorders, 4:2:0 to RGB, uint8 YCrCb/YUV, HSV and
// Lab) have explicit vector code; the other rows are plain loops that each target's compiler flags
// may vectorize.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/cv_color.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "backend/cpu/simd_shared-inl.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/cv_bayer.h"
#include "backend/cpu/cv_color.h"
#include "backend/cpu/prefetch.h"
#include "mnnpy/thread_pool.h"

#ifndef MNNPY_CV_COLOR_SHARED
#define MNNPY_CV_COLOR_SHARED
namespace mnnpy {
namespace cpu {
namespace cv_color {
namespace shared {

// Luma weights in 14-bit fixed point (ITU-R BT.601: 0.299 R + 0.587 G + 0.114 B).
constexpr int kYuvShift = 14;
constexpr int kR2Y = 4899, kG2Y = 9617, kB2Y = 1868;
// RGB -> gray uses the same weights in 15-bit fixed point (they sum to 2^15).
constexpr int kGrayShift = 15;
constexpr int kGrayR = 9798, kGrayG = 19235, kGrayB = 3735;
// 4:2:0 / 4:2:2 <-> RGB in 20-bit fixed point (BT.601, video range).
constexpr int kShift601 = 20;
constexpr int kCY = 1220542, kCUB = 2116026, kCUG = -409993, kCVG = -852492, kCVR = 1673527;
constexpr int kCRY = 269484, kCGY = 528482, kCBY = 102760, kCRU = -155188, kCGU = -305135, kCBU = 460324,
              kCGV = -385875, kCBV = -74448;

inline int descale(int x, int n) { return (x + (1 << (n - 1))) >> n; }
inline uint8_t saturate_u8(int x) { return (uint8_t)std::min(std::max(x, 0), 255); }
// OpenCV's saturate_cast<uchar>(float): round half to even, then clamp.
inline uint8_t round_u8(float x) {
  const float r = std::nearbyint(x);
  return (uint8_t)(r <= 0.f ? 0.f : r >= 255.f ? 255.f : r);
}

// sRGB <-> XYZ (D65).
constexpr float kRgbToXyz[9] = {0.412453f, 0.357580f, 0.180423f, 0.212671f, 0.715160f,
                                0.072169f, 0.019334f, 0.119193f, 0.950227f};
constexpr float kXyzToRgb[9] = {3.240479f, -1.53715f, -0.498535f, -0.969256f, 1.875991f,
                                0.041556f, 0.055648f, -0.204043f, 1.057311f};
constexpr float kWhiteX = 0.950456f, kWhiteZ = 1.088754f;
// The white point's u' and v' (X, Y, Z of white are the sums of kRgbToXyz's rows).
constexpr float kLuvWhiteSum = 0.950456f + 15.f + 3.f * 1.088754f;
constexpr float kLuvUn = 4.f * 0.950456f / kLuvWhiteSum, kLuvVn = 9.f / kLuvWhiteSum;

// HSV's integer division tables: round(255 * 2^12 / v) and round(hue_range * 2^12 / (6 diff)).
constexpr int kHsvShift = 12;
struct HsvTables {
  int saturation[256], hue180[256], hue256[256];
  HsvTables() {
    saturation[0] = hue180[0] = hue256[0] = 0;
    for (int i = 1; i < 256; ++i) {
      saturation[i] = (int)std::lrint((255 << kHsvShift) / (1. * i));
      hue180[i] = (int)std::lrint((180 << kHsvShift) / (6. * i));
      hue256[i] = (int)std::lrint((256 << kHsvShift) / (6. * i));
    }
  }
};
inline const HsvTables& hsv_tables() {
  static const HsvTables tables;
  return tables;
}

// Which of the six hue sectors takes which of the four tabulated values for B, G, R.
constexpr int kSectors[6][3] = {{1, 3, 0}, {1, 0, 2}, {3, 0, 1}, {0, 2, 1}, {0, 1, 3}, {2, 1, 0}};

inline float srgb_to_linear(float x) {
  x = std::min(std::max(x, 0.f), 1.f);
  return x <= 0.04045f ? x * (1.f / 12.92f) : std::pow((x + 0.055f) * (1.f / 1.055f), 2.4f);
}
inline float linear_to_srgb(float x) {
  x = std::min(std::max(x, 0.f), 1.f);
  return x <= 0.0031308f ? 12.92f * x : 1.055f * std::pow(x, 1.f / 2.4f) - 0.055f;
}
inline float lab_f(float t) { return t > 0.008856f ? std::cbrt(t) : 7.787f * t + 16.f / 116.f; }

// Tables for uint8 sources: the linear value of each sRGB level, and lab_f sampled finely over
// [0, 1.25] (linear interpolation between samples is within 2e-6 of lab_f, far below 1 LSB).
constexpr int kLabFSamples = 8192;
constexpr float kLabFRange = 1.25f;
struct LabTables {
  float linear[256];
  float f[kLabFSamples + 2];
  LabTables() {
    for (int i = 0; i < 256; ++i) linear[i] = srgb_to_linear(i / 255.f);
    for (int i = 0; i < kLabFSamples + 2; ++i) f[i] = lab_f((float)((double)i * kLabFRange / kLabFSamples));
  }
  float lab_f_of(float t) const {
    const float at = std::min(std::max(t, 0.f), kLabFRange) * (kLabFSamples / kLabFRange);
    const int i = std::min((int)at, kLabFSamples);
    return f[i] + (f[i + 1] - f[i]) * (at - (float)i);
  }
};
inline const LabTables& lab_tables() {
  static const LabTables tables;
  return tables;
}

}  // namespace shared
}  // namespace cv_color
}  // namespace cpu
}  // namespace mnnpy
#endif  // MNNPY_CV_COLOR_SHARED

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace cv_color {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace shared;

using cpu::HWY_NAMESPACE::FusedMulAdd;
using cpu::HWY_NAMESPACE::round_in_range;

template <class T> constexpr T opaque() { return std::is_same<T, float>::value ? T(1) : T(255); }

// ---------------------------------------------------------------- channel reorder
template <class T, int S, int D>
void reorder_row(const T* HWY_RESTRICT s, T* HWY_RESTRICT d, int64_t w, const int* order) {
  const hn::ScalableTag<T> dt;
  using V = hn::Vec<decltype(dt)>;
  const int64_t N = (int64_t)hn::Lanes(dt);
  int64_t x = 0;
  const V alpha = hn::Set(dt, opaque<T>());
  for (; x + N <= w; x += N) {
    V in[4] = {alpha, alpha, alpha, alpha}, out[4];
    if constexpr (S == 1) in[0] = hn::LoadU(dt, s + x);
    else if constexpr (S == 3) hn::LoadInterleaved3(dt, s + 3 * x, in[0], in[1], in[2]);
    else hn::LoadInterleaved4(dt, s + 4 * x, in[0], in[1], in[2], in[3]);
    for (int j = 0; j < D; ++j) out[j] = order[j] < 0 ? alpha : in[order[j]];
    if constexpr (D == 1) hn::StoreU(out[0], dt, d + x);
    else if constexpr (D == 3) hn::StoreInterleaved3(out[0], out[1], out[2], dt, d + 3 * x);
    else hn::StoreInterleaved4(out[0], out[1], out[2], out[3], dt, d + 4 * x);
  }
  for (; x < w; ++x)
    for (int j = 0; j < D; ++j) d[x * D + j] = order[j] < 0 ? opaque<T>() : s[x * S + order[j]];
}

#if HWY_TARGET != HWY_SCALAR
// Byte q of a 3-byte-pixel row is channel q % 3 (for vectors that start on a pixel).
struct PixelPhases {
  uint8_t phase[3 * 64 + 64];
  PixelPhases() {
    for (int i = 0; i < (int)sizeof(phase); ++i) phase[i] = (uint8_t)(i % 3);
  }
};

// Vectors of whole 16-byte blocks for the byte-shuffling reorders: 32 bytes where x86 has them.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
using PixelBlocks = hn::FixedTag<uint8_t, 32>;
#else
using PixelBlocks = hn::FixedTag<uint8_t, 16>;
#endif

// The bytes of `a` from byte 2 on, then the first 2 of `next` (and the last 2 of `prev`, then
// `a` up to its last 2): `a` shifted across a vector boundary. x86 shifts bytes within 16-byte
// blocks, so 32-byte vectors first pair their inner halves.
template <class D, class V>
HWY_INLINE V bytes_from_2_after(D d, V a, V next) {
  if constexpr (hn::MaxLanes(D()) == 32) return hn::CombineShiftRightBytes<2>(d, hn::ConcatLowerUpper(d, next, a), a);
  else return hn::CombineShiftRightBytes<2>(d, next, a);
}
template <class D, class V>
HWY_INLINE V bytes_from_2_before(D d, V prev, V a) {
  if constexpr (hn::MaxLanes(D()) == 32) return hn::CombineShiftRightBytes<14>(d, a, hn::ConcatLowerUpper(d, a, prev));
  else return hn::CombineShiftRightBytes<14>(d, a, prev);
}
#endif

// Channels 0 and 2 of a row of 3-byte pixels swapped. Each output byte comes from 2 bytes
// after (channel 0), the same place (1) or 2 bytes before (2). Three vectors hold whole pixels,
// so the shifted bytes are made in registers from the block's own three loads: loads at +-2
// bytes would split cache lines. The output is asked for ahead, as in every streaming kernel.
void swap_rb_u8(const uint8_t* HWY_RESTRICT s, uint8_t* HWY_RESTRICT d, int64_t pixels) {
  int64_t x = 0;  // bytes
  const int64_t bytes = 3 * pixels;
#if HWY_TARGET != HWY_SCALAR
  const PixelBlocks d8;
  constexpr int64_t N = hn::MaxLanes(d8);
  static const PixelPhases phases;
  hn::Mask<decltype(d8)> from_after[3], from_before[3];
  for (int k = 0; k < 3; ++k) {
    const auto phase = hn::LoadU(d8, phases.phase + k * N);
    from_after[k] = hn::Eq(phase, hn::Zero(d8));
    from_before[k] = hn::Eq(phase, hn::Set(d8, 2));
  }
  for (; x + 3 * N <= bytes; x += 3 * N) {
    for (int64_t line = 0; line < 3 * N; line += 64) prefetch_for_write(d + x + kWritePrefetchBytes + line);
    const auto a0 = hn::LoadU(d8, s + x), a1 = hn::LoadU(d8, s + x + N), a2 = hn::LoadU(d8, s + x + 2 * N);
    // The first two bytes of a block never come from before it, nor the last two from after
    // it: a2 and a0 stand in for the neighbours there.
    const auto v0 = hn::IfThenElse(from_after[0], bytes_from_2_after(d8, a0, a1),
                                   hn::IfThenElse(from_before[0], bytes_from_2_before(d8, a2, a0), a0));
    const auto v1 = hn::IfThenElse(from_after[1], bytes_from_2_after(d8, a1, a2),
                                   hn::IfThenElse(from_before[1], bytes_from_2_before(d8, a0, a1), a1));
    const auto v2 = hn::IfThenElse(from_after[2], bytes_from_2_after(d8, a2, a0),
                                   hn::IfThenElse(from_before[2], bytes_from_2_before(d8, a1, a2), a2));
    hn::StoreU(v0, d8, d + x);
    hn::StoreU(v1, d8, d + x + N);
    hn::StoreU(v2, d8, d + x + 2 * N);
  }
#endif
  for (; x < bytes; x += 3) {
    const uint8_t b = s[x], g = s[x + 1], r = s[x + 2];
    d[x] = r; d[x + 1] = g; d[x + 2] = b;
  }
}

// Pixels of S bytes reordered into pixels of D bytes by `order` (-1: 255), S and D being 3 or 4:
// four pixels per 16-byte block, each block done by one byte shuffle. 32-byte vectors move
// 3-byte pixels between their blocks with one 4-byte lane shuffle (before the byte shuffle when
// reading them, after it when writing them). Loads and stores of 3-byte pixels reach past the
// pixels they convert, so the vector loop stops a vector short of the ends.
template <int S, int D>
void shuffle_pixels_u8(const uint8_t* HWY_RESTRICT s, uint8_t* HWY_RESTRICT d, int64_t pixels, const int* order) {
  int64_t x = 0;
#if HWY_TARGET != HWY_SCALAR
  const PixelBlocks d8;
  constexpr int64_t V = hn::MaxLanes(d8), P = V / 4;  // bytes per vector, pixels per step
  const hn::Repartition<uint32_t, decltype(d8)> d32;
  alignas(16) uint8_t index[16], alpha[16];
  for (int i = 0; i < 16; ++i) {
    const int p = i / D, o = order[i % D];
    index[i] = p >= 4 || o < 0 ? 0x80 : (uint8_t)(p * S + o);
    alpha[i] = p < 4 && o < 0 ? 255 : 0;
  }
  const auto table = hn::LoadDup128(d8, index), opaque = hn::LoadDup128(d8, alpha);
  // 4-byte lanes of the block-spanning moves: the second block's 3-byte pixels start at lane 3.
  alignas(32) static constexpr int32_t kSpread[8] = {0, 1, 2, 3, 3, 4, 5, 6}, kGather[8] = {0, 1, 2, 4, 5, 6, 7, 7};
  constexpr int64_t narrow = S < D ? S : D;
  for (; x + P <= pixels && narrow * x + V <= narrow * pixels; x += P) {
    prefetch_for_write(d + D * x + kWritePrefetchBytes);
    auto v = hn::LoadU(d8, s + S * x);
    if constexpr (V == 32 && S == 3)
      v = hn::BitCast(d8, hn::TableLookupLanes(hn::BitCast(d32, v), hn::SetTableIndices(d32, kSpread)));
    v = hn::Or(hn::TableLookupBytesOr0(v, table), opaque);
    if constexpr (V == 32 && D == 3)
      v = hn::BitCast(d8, hn::TableLookupLanes(hn::BitCast(d32, v), hn::SetTableIndices(d32, kGather)));
    hn::StoreU(v, d8, d + D * x);
  }
#endif
  for (; x < pixels; ++x)
    for (int j = 0; j < D; ++j) d[D * x + j] = order[j] < 0 ? 255 : s[S * x + order[j]];
}

template <class T>
void reorder(const ColorJob& job, const T* s, T* d, int64_t w) {
  const int S = job.src_channels, D = job.dst_channels;
  const int* o = job.order;
  if constexpr (std::is_same<T, uint8_t>::value) {
    if (S == 3 && D == 3 && o[0] == 2 && o[1] == 1 && o[2] == 0) return swap_rb_u8(s, d, w);
    if (S == 4 && D == 4) return shuffle_pixels_u8<4, 4>(s, d, w, o);
    if (S == 3 && D == 4) return shuffle_pixels_u8<3, 4>(s, d, w, o);
    if (S == 4 && D == 3) return shuffle_pixels_u8<4, 3>(s, d, w, o);
  }
#define MNNPY_CV_REORDER(s_, d_) \
  if (S == s_ && D == d_) return reorder_row<T, s_, d_>(s, d, w, o);
  MNNPY_CV_REORDER(3, 3) MNNPY_CV_REORDER(3, 4) MNNPY_CV_REORDER(4, 3) MNNPY_CV_REORDER(4, 4)
  MNNPY_CV_REORDER(1, 3) MNNPY_CV_REORDER(1, 4)
#undef MNNPY_CV_REORDER
}

// ---------------------------------------------------------------- gray

template <int S>
void gray_u8_row(const uint8_t* HWY_RESTRICT s, uint8_t* HWY_RESTRICT d, int64_t w, int blue) {
  const int c0 = blue == 0 ? kGrayB : kGrayR, c2 = blue == 0 ? kGrayR : kGrayB;
  int64_t x = 0;
#if HWY_ARCH_X86 && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
  // Pixels widened to 16 bits are paired (channel 0 with 1, channel 2 with a constant 1 that
  // carries the rounding term) so that two multiply-adds of pairs give each 32-bit sum. On x86
  // the pairing and the narrowing pack both work within 128-bit blocks, so the pixels come back
  // in order.
  const hn::ScalableTag<uint8_t> d8;
  const hn::Half<decltype(d8)> d8h;
  const hn::Repartition<int16_t, decltype(d8)> d16;
  const hn::Repartition<int32_t, decltype(d8)> d32;
  const int64_t N = (int64_t)hn::Lanes(d8);
  const auto coef01 = hn::BitCast(d16, hn::Set(d32, c0 | (kGrayG << 16)));
  const auto coef2r = hn::BitCast(d16, hn::Set(d32, c2 | ((1 << (kGrayShift - 1)) << 16)));
  const auto one = hn::Set(d16, 1);
  auto luma = [&](auto a8, auto b8, auto c8) {
    const auto a = hn::BitCast(d16, hn::PromoteTo(d16, a8));
    const auto b = hn::BitCast(d16, hn::PromoteTo(d16, b8));
    const auto c = hn::BitCast(d16, hn::PromoteTo(d16, c8));
    auto lo1 = hn::Zero(d32), hi1 = hn::Zero(d32);
    auto lo = hn::ReorderWidenMulAccumulate(d32, hn::InterleaveLower(a, b), coef01, hn::Zero(d32), lo1);
    lo = hn::ReorderWidenMulAccumulate(d32, hn::InterleaveLower(c, one), coef2r, lo, lo1);
    auto hi = hn::ReorderWidenMulAccumulate(d32, hn::InterleaveUpper(d16, a, b), coef01, hn::Zero(d32), hi1);
    hi = hn::ReorderWidenMulAccumulate(d32, hn::InterleaveUpper(d16, c, one), coef2r, hi, hi1);
    lo = hn::ShiftRight<kGrayShift>(hn::RearrangeToOddPlusEven(lo, lo1));
    hi = hn::ShiftRight<kGrayShift>(hn::RearrangeToOddPlusEven(hi, hi1));
    return hn::DemoteTo(d8h, hn::ReorderDemote2To(d16, lo, hi));
  };
  for (; x + N <= w; x += N) {
    hn::Vec<decltype(d8)> a, b, c, e;
    if constexpr (S == 3) hn::LoadInterleaved3(d8, s + 3 * x, a, b, c);
    else hn::LoadInterleaved4(d8, s + 4 * x, a, b, c, e);
    const auto lower = luma(hn::LowerHalf(d8h, a), hn::LowerHalf(d8h, b), hn::LowerHalf(d8h, c));
    const auto upper = luma(hn::UpperHalf(d8h, a), hn::UpperHalf(d8h, b), hn::UpperHalf(d8h, c));
    hn::StoreU(hn::Combine(d8, upper, lower), d8, d + x);
  }
#endif
  for (; x < w; ++x) {
    const uint8_t* p = s + x * S;
    d[x] = (uint8_t)descale(p[0] * c0 + p[1] * kGrayG + p[2] * c2, kGrayShift);
  }
}

template <int S>
void gray_f32_row(const float* HWY_RESTRICT s, float* HWY_RESTRICT d, int64_t w, int blue) {
  const float k0 = blue == 0 ? 0.114f : 0.299f, k1 = 0.587f, k2 = blue == 0 ? 0.299f : 0.114f;
  const hn::ScalableTag<float> df;
  const int64_t N = (int64_t)hn::Lanes(df);
  int64_t x = 0;
  for (; x + N <= w; x += N) {
    hn::Vec<decltype(df)> a, b, c, e;
    if constexpr (S == 3) hn::LoadInterleaved3(df, s + 3 * x, a, b, c);
    else hn::LoadInterleaved4(df, s + 4 * x, a, b, c, e);
    hn::StoreU(FusedMulAdd(c, hn::Set(df, k2), FusedMulAdd(b, hn::Set(df, k1), hn::Mul(a, hn::Set(df, k0)))), df, d + x);
  }
  // The tail rounds as the lanes do.
  for (; x < w; ++x) d[x] = std::fma(s[x * S + 2], k2, std::fma(s[x * S + 1], k1, s[x * S] * k0));
}

// ---------------------------------------------------------------- YCrCb / YUV
#if HWY_TARGET != HWY_SCALAR
// Whole uint8 vectors are cut into quarters that widen to 32-bit lanes, and put back together.
template <class D8> using QuarterOf = hn::Half<hn::Half<D8>>;

template <class D8, class V>
hn::Vec<QuarterOf<D8>> quarter_of(D8 d8, V v, int q) {
  const hn::Half<D8> dh;
  const QuarterOf<D8> dq;
  (void)d8;
  const auto half = q < 2 ? hn::LowerHalf(dh, v) : hn::UpperHalf(dh, v);
  return (q & 1) ? hn::UpperHalf(dq, half) : hn::LowerHalf(dq, half);
}

template <class D8, class VQ>
hn::Vec<D8> join_quarters(D8 d8, const VQ* q) {
  const hn::Half<D8> dh;
  return hn::Combine(d8, hn::Combine(dh, q[3], q[2]), hn::Combine(dh, q[1], q[0]));
}

// Four vectors of 32-bit lanes (quarters 0..3 of a uint8 vector) narrowed with saturation to
// [0, 255] and joined. On AVX2 two 16-bit packs and one byte pack do it for all four at once,
// and a lane permutation puts the per-block results back in order.
template <class D8, class VI>
HWY_INLINE hn::Vec<D8> narrow_quarters(D8 d8, const VI* q) {
#if HWY_TARGET == HWY_AVX2
  if constexpr (sizeof(VI) == 32 && sizeof(hn::Vec<D8>) == 32) {
    const __m256i words01 = _mm256_packs_epi32(q[0].raw, q[1].raw), words23 = _mm256_packs_epi32(q[2].raw, q[3].raw);
    const __m256i bytes = _mm256_packus_epi16(words01, words23);
    return hn::Vec<D8>{_mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7))};
  }
#endif
  const QuarterOf<D8> dq;
  hn::Vec<QuarterOf<D8>> parts[4];
  for (int i = 0; i < 4; ++i) parts[i] = hn::DemoteTo(dq, q[i]);
  return join_quarters(d8, parts);
}
#endif

// uint8 rows computed 32-bit lanes at a time: `pixel(b, g, r, o0, o1, o2)` maps widened
// channels to three outputs, which are narrowed with saturation. Whole vectors of pixels are
// loaded and stored interleaved. Returns the pixels done.
template <int S, class PixelFn>
int64_t u8_pixels_i32(const uint8_t* HWY_RESTRICT s, uint8_t* HWY_RESTRICT d, int64_t w, int blue, const PixelFn& pixel) {
  int64_t x = 0;
#if HWY_TARGET != HWY_SCALAR
  const hn::ScalableTag<uint8_t> d8;
  const QuarterOf<decltype(d8)> dq;
  const hn::Rebind<int32_t, decltype(dq)> di;
  const int64_t N = (int64_t)hn::Lanes(d8);
  for (; x + N <= w; x += N) {
    hn::Vec<decltype(d8)> c0, c1, c2, c3;
    if constexpr (S == 3) hn::LoadInterleaved3(d8, s + 3 * x, c0, c1, c2);
    else hn::LoadInterleaved4(d8, s + 4 * x, c0, c1, c2, c3);
    const auto b8 = blue == 0 ? c0 : c2, r8 = blue == 0 ? c2 : c0;
    hn::Vec<decltype(di)> o0[4], o1[4], o2[4];
    for (int q = 0; q < 4; ++q) {
      const auto b = hn::PromoteTo(di, quarter_of(d8, b8, q)), g = hn::PromoteTo(di, quarter_of(d8, c1, q)),
                 r = hn::PromoteTo(di, quarter_of(d8, r8, q));
      pixel(di, b, g, r, o0[q], o1[q], o2[q]);
    }
    hn::StoreInterleaved3(narrow_quarters(d8, o0), narrow_quarters(d8, o1), narrow_quarters(d8, o2), d8, d + 3 * x);
  }
#else
  (void)s; (void)d; (void)w; (void)blue; (void)pixel;
#endif
  return x;
}

// Pixels [x, w) one at a time through the same `pixel` function on one-lane vectors, saturated as
// the vector path narrows: the tail of u8_pixels_i32's rows (and, on the portable target, whole
// rows), so that every pixel rounds alike whatever the vector width.
template <int S, class PixelFn>
void u8_pixels_i32_each(const uint8_t* HWY_RESTRICT s, uint8_t* HWY_RESTRICT d, int64_t x, int64_t w, int blue,
                        const PixelFn& pixel) {
  const hn::CappedTag<int32_t, 1> di;
  auto narrow = [](int32_t v) { return (uint8_t)std::min(std::max(v, 0), 255); };
  for (; x < w; ++x) {
    const uint8_t* p = s + S * x;
    const auto b = hn::Set(di, (int32_t)p[blue == 0 ? 0 : 2]), g = hn::Set(di, (int32_t)p[1]),
               r = hn::Set(di, (int32_t)p[blue == 0 ? 2 : 0]);
    hn::Vec<decltype(di)> o0, o1, o2;
    pixel(di, b, g, r, o0, o1, o2);
    d[3 * x] = narrow(hn::GetLane(o0));
    d[3 * x + 1] = narrow(hn::GetLane(o1));
    d[3 * x + 2] = narrow(hn::GetLane(o2));
  }
}

template <int S>
int64_t ycrcb_u8_vector(const ColorJob& job, const uint8_t* s, uint8_t* d, int64_t w) {
  const int kc = job.yuv ? 14369 : 11682, kb = job.yuv ? 8061 : 9241;
  const bool yuv = job.yuv;
  return u8_pixels_i32<S>(s, d, w, job.blue, [&](auto di, auto b, auto g, auto r, auto& o0, auto& o1, auto& o2) {
    const auto half = hn::Set(di, 1 << (kYuvShift - 1));
    const auto y = hn::ShiftRight<kYuvShift>(
        hn::Add(hn::Add(hn::Mul(r, hn::Set(di, kR2Y)), hn::Mul(g, hn::Set(di, kG2Y))),
                hn::Add(hn::Mul(b, hn::Set(di, kB2Y)), half)));
    const auto delta = hn::Set(di, (128 << kYuvShift) + (1 << (kYuvShift - 1)));
    const auto cr = hn::ShiftRight<kYuvShift>(hn::Add(hn::Mul(hn::Sub(r, y), hn::Set(di, kc)), delta));
    const auto cb = hn::ShiftRight<kYuvShift>(hn::Add(hn::Mul(hn::Sub(b, y), hn::Set(di, kb)), delta));
    o0 = y;
    o1 = yuv ? cb : cr;
    o2 = yuv ? cr : cb;
  });
}

// HsvTables' entries for v and diff in 1..255 computed instead of looked up: the float32
// quotient of the numerator and v (or 6 diff) rounded to the nearest integer equals the table's
// rounded double quotient for every such value (checked exhaustively; ties never occur).
// Lanes with v or diff 0 multiply the entry by 0, so any entry serves there.
template <int S>
int64_t hsv_u8_vector(const ColorJob& job, const uint8_t* s, uint8_t* d, int64_t w) {
  const int hr = job.hue_range, table_range = hr == 180 ? 180 : 256;
  return u8_pixels_i32<S>(s, d, w, job.blue, [&](auto di, auto b, auto g, auto r, auto& o0, auto& o1, auto& o2) {
    const hn::Rebind<float, decltype(di)> df;
    const auto half = hn::Set(di, 1 << (kHsvShift - 1)), one = hn::Set(di, 1);
    const auto v = hn::Max(hn::Max(b, g), r);
    const auto diff = hn::Sub(v, hn::Min(hn::Min(b, g), r));
    const auto sat_scale =
        round_in_range(hn::Div(hn::Set(df, (float)(255 << kHsvShift)), hn::ConvertTo(df, hn::Max(v, one))));
    const auto hue_scale = round_in_range(
        hn::Div(hn::Set(df, (float)(table_range << kHsvShift)), hn::Mul(hn::Set(df, 6.f), hn::ConvertTo(df, hn::Max(diff, one)))));
    const auto sat = hn::ShiftRight<kHsvShift>(hn::Add(hn::Mul(diff, sat_scale), half));
    const auto two_diff = hn::Add(diff, diff);
    const auto h_other = hn::IfThenElse(hn::Eq(v, g), hn::Add(hn::Sub(b, r), two_diff),
                                        hn::Add(hn::Sub(r, g), hn::Add(two_diff, two_diff)));
    auto h = hn::IfThenElse(hn::Eq(v, r), hn::Sub(g, b), h_other);
    h = hn::ShiftRight<kHsvShift>(hn::Add(hn::Mul(h, hue_scale), half));
    h = hn::Add(h, hn::IfThenElseZero(hn::Lt(h, hn::Zero(di)), hn::Set(di, hr)));
    o0 = h;
    o1 = sat;
    o2 = v;
  });
}

template <class T>
void ycrcb_row(const ColorJob& job, const T* s, T* d, int64_t w) {
  const int S = job.src_channels, D = job.dst_channels, bi = job.blue, ri = 2 - job.blue;
  if constexpr (std::is_same<T, uint8_t>::value) {
    const int kc = job.yuv ? 14369 : 11682, kb = job.yuv ? 8061 : 9241;  // (R - Y) and (B - Y) scales
    const int delta = 128 << kYuvShift;
    for (int64_t x = 0; x < w; ++x, s += S, d += D) {
      const int b = s[bi], g = s[1], r = s[ri];
      const int y = descale(r * kR2Y + g * kG2Y + b * kB2Y, kYuvShift);
      const uint8_t cr = saturate_u8(descale((r - y) * kc + delta, kYuvShift));
      const uint8_t cb = saturate_u8(descale((b - y) * kb + delta, kYuvShift));
      d[0] = saturate_u8(y);
      d[1] = job.yuv ? cb : cr;
      d[2] = job.yuv ? cr : cb;
    }
  } else {
    const float kc = job.yuv ? 0.877f : 0.713f, kb = job.yuv ? 0.492f : 0.564f;
    for (int64_t x = 0; x < w; ++x, s += S, d += D) {
      const float b = s[bi], g = s[1], r = s[ri];
      const float y = r * 0.299f + g * 0.587f + b * 0.114f;
      const float cr = (r - y) * kc + 0.5f, cb = (b - y) * kb + 0.5f;
      d[0] = y;
      d[1] = job.yuv ? cb : cr;
      d[2] = job.yuv ? cr : cb;
    }
  }
}

template <class T>
void ycrcb_inverse_row(const ColorJob& job, const T* s, T* d, int64_t w) {
  const int S = job.src_channels, D = job.dst_channels, bi = job.blue, ri = 2 - job.blue;
  const int cr_at = job.yuv ? 2 : 1, cb_at = job.yuv ? 1 : 2;
  if constexpr (std::is_same<T, uint8_t>::value) {
    // R = Y + c0 Cr, G = Y + c1 Cr + c2 Cb, B = Y + c3 Cb (14-bit).
    const int c0 = job.yuv ? 18678 : 22987, c1 = job.yuv ? -9519 : -11698, c2 = job.yuv ? -6472 : -5636,
              c3 = job.yuv ? 33292 : 29049;
    for (int64_t x = 0; x < w; ++x, s += S, d += D) {
      const int y = s[0], cr = s[cr_at] - 128, cb = s[cb_at] - 128;
      d[bi] = saturate_u8(y + descale(cb * c3, kYuvShift));
      d[1] = saturate_u8(y + descale(cb * c2 + cr * c1, kYuvShift));
      d[ri] = saturate_u8(y + descale(cr * c0, kYuvShift));
      if (D == 4) d[3] = 255;
    }
  } else {
    const float c0 = job.yuv ? 1.140f : 1.403f, c1 = job.yuv ? -0.581f : -0.714f, c2 = job.yuv ? -0.395f : -0.344f,
                c3 = job.yuv ? 2.032f : 1.773f;
    for (int64_t x = 0; x < w; ++x, s += S, d += D) {
      const float y = s[0], cr = s[cr_at] - 0.5f, cb = s[cb_at] - 0.5f;
      d[bi] = y + cb * c3;
      d[1] = y + cb * c2 + cr * c1;
      d[ri] = y + cr * c0;
      if (D == 4) d[3] = 1.f;
    }
  }
}

// ---------------------------------------------------------------- XYZ
template <class T>
void xyz_row(const ColorJob& job, const T* s, T* d, int64_t w, bool inverse) {
  const int S = job.src_channels, D = job.dst_channels, bi = job.blue, ri = 2 - job.blue;
  const float* m = inverse ? kXyzToRgb : kRgbToXyz;
  // Input and output channel positions: RGB -> XYZ reads R, G, B at ri, 1, bi.
  const int in_at[3] = {inverse ? 0 : ri, 1, inverse ? 2 : bi};
  const int out_at[3] = {inverse ? ri : 0, 1, inverse ? bi : 2};
  if constexpr (std::is_same<T, uint8_t>::value) {
    int c[9];
    for (int i = 0; i < 9; ++i) c[i] = (int)std::lrint(m[i] * (1 << 12));
    for (int64_t x = 0; x < w; ++x, s += S, d += D) {
      const int a = s[in_at[0]], b = s[in_at[1]], e = s[in_at[2]];
      for (int k = 0; k < 3; ++k) d[out_at[k]] = saturate_u8(descale(a * c[3 * k] + b * c[3 * k + 1] + e * c[3 * k + 2], 12));
      if (D == 4) d[3] = 255;
    }
  } else {
    for (int64_t x = 0; x < w; ++x, s += S, d += D) {
      const float a = s[in_at[0]], b = s[in_at[1]], e = s[in_at[2]];
      for (int k = 0; k < 3; ++k) d[out_at[k]] = a * m[3 * k] + b * m[3 * k + 1] + e * m[3 * k + 2];
      if (D == 4) d[3] = 1.f;
    }
  }
}

// ---------------------------------------------------------------- HSV / HLS
// Float hue, saturation and value (or lightness) of one pixel with components in [0, 1]
// (any range for HSV); hue in [0, hue_range).
inline void hsv_f(float b, float g, float r, float hscale, float* h, float* sat, float* val) {
  const float v = std::max(std::max(b, g), r), vmin = std::min(std::min(b, g), r);
  float diff = v - vmin;
  *sat = diff / (std::fabs(v) + FLT_EPSILON);
  diff = 60.f / (diff + FLT_EPSILON);
  float hue = v == r ? (g - b) * diff : v == g ? (b - r) * diff + 120.f : (r - g) * diff + 240.f;
  if (hue < 0) hue += 360.f;
  *h = hue * hscale;
  *val = v;
}

inline void hls_f(float b, float g, float r, float hscale, float* h, float* l, float* sat) {
  const float vmax = std::max(std::max(b, g), r), vmin = std::min(std::min(b, g), r);
  float diff = vmax - vmin, hue = 0.f, s = 0.f;
  const float light = (vmax + vmin) * 0.5f;
  if (diff > FLT_EPSILON) {
    s = light < 0.5f ? diff / (vmax + vmin) : diff / (2 - vmax - vmin);
    diff = 60.f / diff;
    hue = vmax == r ? (g - b) * diff : vmax == g ? (b - r) * diff + 120.f : (r - g) * diff + 240.f;
    if (hue < 0.f) hue += 360.f;
  }
  *h = hue * hscale;
  *l = light;
  *sat = s;
}

inline void sector_of(float h, float hscale, int* sector, float* frac) {
  h *= hscale;
  if (h < 0) do h += 6; while (h < 0);
  else if (h >= 6) do h -= 6; while (h >= 6);
  int k = (int)std::floor(h);
  h -= (float)k;
  if ((unsigned)k >= 6u) { k = 0; h = 0.f; }
  *sector = k;
  *frac = h;
}

inline void hsv_inverse_f(float h, float s, float v, float hscale, float bgr[3]) {
  if (s == 0) { bgr[0] = bgr[1] = bgr[2] = v; return; }
  int k; float f;
  sector_of(h, hscale, &k, &f);
  const float tab[4] = {v, v * (1.f - s), v * (1.f - s * f), v * (1.f - s * (1.f - f))};
  for (int c = 0; c < 3; ++c) bgr[c] = tab[kSectors[k][c]];
}

inline void hls_inverse_f(float h, float l, float s, float hscale, float bgr[3]) {
  if (s == 0) { bgr[0] = bgr[1] = bgr[2] = l; return; }
  const float p2 = l <= 0.5f ? l * (1 + s) : l + s - l * s, p1 = 2 * l - p2;
  int k; float f;
  sector_of(h, hscale, &k, &f);
  const float tab[4] = {p2, p1, p1 + (p2 - p1) * (1 - f), p1 + (p2 - p1) * f};
  for (int c = 0; c < 3; ++c) bgr[c] = tab[kSectors[k][c]];
}

void hsv_u8_row(const ColorJob& job, const uint8_t* HWY_RESTRICT s, uint8_t* HWY_RESTRICT d, int64_t w) {
  const HsvTables& t = hsv_tables();
  const int* hdiv = job.hue_range == 180 ? t.hue180 : t.hue256;
  const int hr = job.hue_range, S = job.src_channels, bi = job.blue, ri = 2 - job.blue;
  const int half = 1 << (kHsvShift - 1);
  for (int64_t x = 0; x < w; ++x, s += S, d += 3) {
    const int b = s[bi], g = s[1], r = s[ri];
    const int v = std::max(std::max(b, g), r), vmin = std::min(std::min(b, g), r), diff = v - vmin;
    const int sat = (diff * t.saturation[v] + half) >> kHsvShift;
    int h = v == r ? g - b : v == g ? b - r + 2 * diff : r - g + 4 * diff;
    h = (h * hdiv[diff] + half) >> kHsvShift;
    h += h < 0 ? hr : 0;
    d[0] = saturate_u8(h);
    d[1] = (uint8_t)sat;
    d[2] = (uint8_t)v;
  }
}

template <class T>
void hsv_hls_row(const ColorJob& job, const T* s, T* d, int64_t w, bool hls) {
  const int S = job.src_channels, bi = job.blue, ri = 2 - job.blue;
  const float hscale = job.hue_range / 360.f;
  const float in_scale = std::is_same<T, uint8_t>::value ? 1.f / 255.f : 1.f;
  for (int64_t x = 0; x < w; ++x, s += S, d += 3) {
    const float b = s[bi] * in_scale, g = s[1] * in_scale, r = s[ri] * in_scale;
    float o[3];
    if (hls) hls_f(b, g, r, hscale, &o[0], &o[1], &o[2]);
    else hsv_f(b, g, r, hscale, &o[0], &o[1], &o[2]);
    if constexpr (std::is_same<T, uint8_t>::value) {
      d[0] = round_u8(o[0]);
      d[1] = round_u8(o[1] * 255.f);
      d[2] = round_u8(o[2] * 255.f);
    } else {
      d[0] = o[0]; d[1] = o[1]; d[2] = o[2];
    }
  }
}

template <class T>
void hsv_hls_inverse_row(const ColorJob& job, const T* s, T* d, int64_t w, bool hls) {
  const int D = job.dst_channels, bi = job.blue, ri = 2 - job.blue;
  const float hscale = 6.f / job.hue_range;
  const bool u8 = std::is_same<T, uint8_t>::value;
  const float in_scale = u8 ? 1.f / 255.f : 1.f;
  for (int64_t x = 0; x < w; ++x, s += 3, d += D) {
    float bgr[3];
    if (hls) hls_inverse_f((float)s[0], s[1] * in_scale, s[2] * in_scale, hscale, bgr);
    else hsv_inverse_f((float)s[0], s[1] * in_scale, s[2] * in_scale, hscale, bgr);
    if constexpr (std::is_same<T, uint8_t>::value) {
      d[bi] = round_u8(bgr[0] * 255.f); d[1] = round_u8(bgr[1] * 255.f); d[ri] = round_u8(bgr[2] * 255.f);
    } else {
      d[bi] = bgr[0]; d[1] = bgr[1]; d[ri] = bgr[2];
    }
    if (D == 4) d[3] = opaque<T>();
  }
}

// ---------------------------------------------------------------- Lab / Luv
// Lab or Luv of linear (or, with `srgb`, gamma-encoded) components in [0, 1]; `tables`, when
// given, holds lab_f (the components are then already linear).
inline void lab_luv_f(float b, float g, float r, bool srgb, bool luv, float o[3], const LabTables* tables = nullptr) {
  if (srgb) { b = srgb_to_linear(b); g = srgb_to_linear(g); r = srgb_to_linear(r); }
  else { b = std::min(std::max(b, 0.f), 1.f); g = std::min(std::max(g, 0.f), 1.f); r = std::min(std::max(r, 0.f), 1.f); }
  auto f = [&](float t) { return tables ? tables->lab_f_of(t) : lab_f(t); };
  const float* m = kRgbToXyz;
  float X = r * m[0] + g * m[1] + b * m[2], Y = r * m[3] + g * m[4] + b * m[5], Z = r * m[6] + g * m[7] + b * m[8];
  if (!luv) {
    const float fx = f(X / kWhiteX), fy = f(Y), fz = f(Z / kWhiteZ);
    o[0] = Y > 0.008856f ? 116.f * fy - 16.f : 903.3f * Y;
    o[1] = 500.f * (fx - fy);
    o[2] = 200.f * (fy - fz);
    return;
  }
  const float L = 116.f * f(Y) - 16.f;
  const float den = 52.f / std::max(X + 15 * Y + 3 * Z, FLT_EPSILON);
  o[0] = L;
  o[1] = L * (X * den - 13 * kLuvUn);
  o[2] = L * (2.25f * Y * den - 13 * kLuvVn);
}

inline void lab_luv_inverse_f(float L, float a, float bb, bool srgb, bool luv, float bgr[3]) {
  float X, Y, Z;
  if (!luv) {
    float fy;
    if (L <= 8.f) { Y = L / 903.3f; fy = 7.787f * Y + 16.f / 116.f; }
    else { fy = (L + 16.f) / 116.f; Y = fy * fy * fy; }
    float fxz[2] = {a / 500.f + fy, fy - bb / 200.f};
    for (float& f : fxz) f = f <= 0.20689271f ? (f - 16.f / 116.f) / 7.787f : f * f * f;
    X = fxz[0] * kWhiteX;
    Z = fxz[1] * kWhiteZ;
  } else {
    if (L >= 8.f) {
      Y = (L + 16.f) * (1.f / 116.f);
      Y = Y * Y * Y;
    } else {
      Y = L * (1.f / 903.3f);
    }
    // X = 9/4 Y u'/v', Z = Y (12 - 3 u' - 20 v') / (4 v') with u', v' scaled by 13 L, and
    // 1 / (4 v') bounded so that black (L = 0) and near-zero v' stay finite.
    const float up = 3.f * (a + 13.f * kLuvUn * L);
    const float vp = std::min(std::max(0.25f / (bb + 13.f * kLuvVn * L), -0.25f), 0.25f);
    X = Y * 3.f * up * vp;
    Z = Y * ((12.f * 13.f * L - up) * vp - 5.f);
  }
  const float* m = kXyzToRgb;
  float r = X * m[0] + Y * m[1] + Z * m[2], g = X * m[3] + Y * m[4] + Z * m[5], b = X * m[6] + Y * m[7] + Z * m[8];
  if (srgb) { r = linear_to_srgb(r); g = linear_to_srgb(g); b = linear_to_srgb(b); }
  else { r = std::min(std::max(r, 0.f), 1.f); g = std::min(std::max(g, 0.f), 1.f); b = std::min(std::max(b, 0.f), 1.f); }
  bgr[0] = b; bgr[1] = g; bgr[2] = r;
}

// uint8 to Lab 32-bit lanes at a time: the linear value of each byte looked up in the scalar
// row's gamma table, f's cube root computed. The row's tail goes through the same lane code one
// pixel at a time (the whole row on the portable target), with fused multiply-adds everywhere:
// every target gives the same bytes.
template <int S>
void lab_u8_row(const ColorJob& job, const uint8_t* s, uint8_t* d, int64_t w) {
  const LabTables& tables = lab_tables();
  const bool srgb = job.srgb;
  auto pixel = [&](auto di, auto b, auto g, auto r, auto& o0, auto& o1, auto& o2) {
    const hn::Rebind<float, decltype(di)> df;
    const auto linear = [&](auto c) {
      return srgb ? hn::GatherIndex(df, tables.linear, c) : hn::Mul(hn::ConvertTo(df, c), hn::Set(df, 1.f / 255.f));
    };
    const auto bf = linear(b), gf = linear(g), rf = linear(r);
    const float* m = kRgbToXyz;
    const auto xyz = [&](const float* row) {
      return FusedMulAdd(rf, hn::Set(df, row[0]), FusedMulAdd(gf, hn::Set(df, row[1]), hn::Mul(bf, hn::Set(df, row[2]))));
    };
    const auto X = xyz(m), Y = xyz(m + 3), Z = xyz(m + 6);
    // f's cube root by Newton's method from the exponent divided by 3 (within 3.5%, then 0.13%
    // and 2e-6 after the two steps); the linear part below 0.008856 (X, Y, Z are never negative).
    const auto third = hn::Set(df, 1.f / 3.f);
    const auto f = [&](auto t) {
      const auto above = hn::Gt(t, hn::Set(df, 0.008856f));
      const auto x = hn::Max(t, hn::Set(df, 0.008856f));
      auto y = hn::BitCast(df, hn::Add(hn::ConvertTo(di, hn::Mul(hn::ConvertTo(df, hn::BitCast(di, x)), third)),
                                       hn::Set(di, 709921077)));
      for (int k = 0; k < 2; ++k) y = hn::Mul(hn::Add(hn::Add(y, y), hn::Div(x, hn::Mul(y, y))), third);
      return hn::IfThenElse(above, y, FusedMulAdd(t, hn::Set(df, 7.787f), hn::Set(df, 16.f / 116.f)));
    };
    const auto fx = f(hn::Mul(X, hn::Set(df, 1.f / kWhiteX))), fy = f(Y), fz = f(hn::Mul(Z, hn::Set(df, 1.f / kWhiteZ)));
    const auto L = hn::IfThenElse(hn::Gt(Y, hn::Set(df, 0.008856f)), FusedMulAdd(hn::Set(df, 116.f), fy, hn::Set(df, -16.f)),
                                  hn::Mul(hn::Set(df, 903.3f), Y));
    o0 = hn::NearestInt(hn::Mul(L, hn::Set(df, 2.55f)));
    o1 = hn::NearestInt(FusedMulAdd(hn::Set(df, 500.f), hn::Sub(fx, fy), hn::Set(df, 128.f)));
    o2 = hn::NearestInt(FusedMulAdd(hn::Set(df, 200.f), hn::Sub(fy, fz), hn::Set(df, 128.f)));
  };
  const int64_t done = u8_pixels_i32<S>(s, d, w, job.blue, pixel);
  u8_pixels_i32_each<S>(s, d, done, w, job.blue, pixel);
}

template <class T>
void lab_luv_row(const ColorJob& job, const T* s, T* d, int64_t w, bool luv) {
  const int S = job.src_channels, bi = job.blue, ri = 2 - job.blue;
  for (int64_t x = 0; x < w; ++x, s += S, d += 3) {
    float o[3];
    if constexpr (std::is_same<T, uint8_t>::value) {
      const LabTables& t = lab_tables();
      if (job.srgb) lab_luv_f(t.linear[s[bi]], t.linear[s[1]], t.linear[s[ri]], false, luv, o, &t);
      else lab_luv_f(s[bi] * (1.f / 255.f), s[1] * (1.f / 255.f), s[ri] * (1.f / 255.f), false, luv, o, &t);
      d[0] = round_u8(o[0] * 2.55f);
      if (luv) { d[1] = round_u8((o[1] + 134.f) * (255.f / 354.f)); d[2] = round_u8((o[2] + 140.f) * (255.f / 262.f)); }
      else { d[1] = round_u8(o[1] + 128.f); d[2] = round_u8(o[2] + 128.f); }
    } else {
      lab_luv_f(s[bi], s[1], s[ri], job.srgb, luv, o);
      d[0] = o[0]; d[1] = o[1]; d[2] = o[2];
    }
  }
}

template <class T>
void lab_luv_inverse_row(const ColorJob& job, const T* s, T* d, int64_t w, bool luv) {
  const int D = job.dst_channels, bi = job.blue, ri = 2 - job.blue;
  for (int64_t x = 0; x < w; ++x, s += 3, d += D) {
    float L = s[0], a = s[1], b = s[2], bgr[3];
    if constexpr (std::is_same<T, uint8_t>::value) {
      L *= 100.f / 255.f;
      if (luv) { a = a * (354.f / 255.f) - 134.f; b = b * (262.f / 255.f) - 140.f; }
      else { a -= 128.f; b -= 128.f; }
    }
    lab_luv_inverse_f(L, a, b, job.srgb, luv, bgr);
    if constexpr (std::is_same<T, uint8_t>::value) {
      d[bi] = round_u8(bgr[0] * 255.f); d[1] = round_u8(bgr[1] * 255.f); d[ri] = round_u8(bgr[2] * 255.f);
    } else {
      d[bi] = bgr[0]; d[1] = bgr[1]; d[ri] = bgr[2];
    }
    if (D == 4) d[3] = opaque<T>();
  }
}

// ---------------------------------------------------------------- 16-bit packings
void to16_row(const ColorJob& job, const uint8_t* s, uint8_t* d, int64_t w) {
  const int S = job.src_channels, bi = job.blue, ri = 2 - job.blue;
  for (int64_t x = 0; x < w; ++x, s += S, d += 2) {
    int t;
    if (job.green_bits == 6) t = (s[bi] >> 3) | ((s[1] << 3) & ~31) | ((s[ri] << 8) & ~2047);
    else t = (s[bi] >> 3) | ((s[1] << 2) & ~31) | ((s[ri] << 7) & ~1023) | (S == 4 && s[3] ? 0x8000 : 0);
    d[0] = (uint8_t)t;
    d[1] = (uint8_t)(t >> 8);
  }
}

void from16_row(const ColorJob& job, const uint8_t* s, uint8_t* d, int64_t w) {
  const int D = job.dst_channels, bi = job.blue, ri = 2 - job.blue;
  for (int64_t x = 0; x < w; ++x, s += 2, d += D) {
    const int t = s[0] | (s[1] << 8);
    d[bi] = (uint8_t)(t << 3);
    if (job.green_bits == 6) {
      d[1] = (uint8_t)((t >> 3) & ~3);
      d[ri] = (uint8_t)((t >> 8) & ~7);
      if (D == 4) d[3] = 255;
    } else {
      d[1] = (uint8_t)((t >> 2) & ~7);
      d[ri] = (uint8_t)((t >> 7) & ~7);
      if (D == 4) d[3] = t & 0x8000 ? 255 : 0;
    }
  }
}

void gray_to16_row(const ColorJob& job, const uint8_t* s, uint8_t* d, int64_t w) {
  for (int64_t x = 0; x < w; ++x, d += 2) {
    const int g = s[x];
    int t;
    if (job.green_bits == 6) t = (g >> 3) | ((g & ~3) << 3) | ((g & ~7) << 8);
    else { t = g >> 3; t |= (t << 5) | (t << 10); }
    d[0] = (uint8_t)t;
    d[1] = (uint8_t)(t >> 8);
  }
}

void from16_gray_row(const ColorJob& job, const uint8_t* s, uint8_t* d, int64_t w) {
  for (int64_t x = 0; x < w; ++x, s += 2) {
    const int t = s[0] | (s[1] << 8);
    const int b = (t << 3) & 0xf8;
    const int g = job.green_bits == 6 ? (t >> 3) & 0xfc : (t >> 2) & 0xf8;
    const int r = job.green_bits == 6 ? (t >> 8) & 0xf8 : (t >> 7) & 0xf8;
    d[x] = (uint8_t)descale(b * kGrayB + g * kGrayG + r * kGrayR, kGrayShift);
  }
}

// ---------------------------------------------------------------- YUV 4:2:0 and 4:2:2
// Two output rows that share one row of chroma, given as interleaved pairs (first, second).
void yuv420_pair_rows(const uint8_t* HWY_RESTRICT y0, const uint8_t* HWY_RESTRICT y1,
                      const uint8_t* HWY_RESTRICT chroma, bool u_first, uint8_t* HWY_RESTRICT d0,
                      uint8_t* HWY_RESTRICT d1, int64_t w, int D, int blue) {
  const int half = 1 << (kShift601 - 1);
  int64_t x = 0;
#if HWY_TARGET != HWY_SCALAR
  const hn::ScalableTag<uint8_t> d8;
  const QuarterOf<decltype(d8)> dq;
  const hn::Rebind<int32_t, decltype(dq)> di;
  const int64_t N = (int64_t)hn::Lanes(d8);
  if (hn::Lanes(di) >= 2) {
    const auto k128 = hn::Set(di, 128), vhalf = hn::Set(di, half), cy = hn::Set(di, kCY);
    const auto k16 = hn::Set(d8, 16), opaque8 = hn::Set(d8, 255);
    // Each chroma pair is multiplied once: lanes of the first chroma value by its blue (u) or red
    // (v) coefficient and its green one, lanes of the second likewise; the products are then
    // spread over both pixels of the pair.
    HWY_ALIGN int32_t blue_red[hn::MaxLanes(di)], green[hn::MaxLanes(di)];
    for (size_t i = 0; i < hn::Lanes(di); ++i) {
      const bool is_u = (i % 2 == 0) == u_first;
      blue_red[i] = is_u ? kCUB : kCVR;
      green[i] = is_u ? kCUG : kCVG;
    }
    const auto blue_red_coef = hn::Load(di, blue_red), green_coef = hn::Load(di, green);
    for (; x + N <= w; x += N) {
      const auto pairs = hn::LoadU(d8, chroma + x);
      // max(Y - 16, 0) while still bytes.
      const auto luma0 = hn::SaturatedSub(hn::LoadU(d8, y0 + x), k16), luma1 = hn::SaturatedSub(hn::LoadU(d8, y1 + x), k16);
      hn::Vec<decltype(di)> out[2][3][4];  // [row][b, g, r][quarter]
      for (int q = 0; q < 4; ++q) {
        const auto c = hn::Sub(hn::PromoteTo(di, quarter_of(d8, pairs, q)), k128);
        const auto br = hn::Add(hn::Mul(c, blue_red_coef), vhalf);
        const auto g_parts = hn::Mul(c, green_coef);
        const auto guv = hn::Add(hn::Add(g_parts, hn::Shuffle2301(g_parts)), vhalf);
        const auto ruv = u_first ? hn::DupOdd(br) : hn::DupEven(br);
        const auto buv = u_first ? hn::DupEven(br) : hn::DupOdd(br);
        for (int row = 0; row < 2; ++row) {
          const auto luma = quarter_of(d8, row ? luma1 : luma0, q);
          const auto yy = hn::Mul(hn::PromoteTo(di, luma), cy);
          out[row][0][q] = hn::ShiftRight<kShift601>(hn::Add(yy, buv));
          out[row][1][q] = hn::ShiftRight<kShift601>(hn::Add(yy, guv));
          out[row][2][q] = hn::ShiftRight<kShift601>(hn::Add(yy, ruv));
        }
      }
      for (int row = 0; row < 2; ++row) {
        uint8_t* dr = (row ? d1 : d0) + x * D;
        const auto b = narrow_quarters(d8, out[row][0]), g = narrow_quarters(d8, out[row][1]),
                   r = narrow_quarters(d8, out[row][2]);
        const auto first = blue == 0 ? b : r;
        const auto third = blue == 0 ? r : b;
        if (D == 3) hn::StoreInterleaved3(first, g, third, d8, dr);
        else hn::StoreInterleaved4(first, g, third, opaque8, d8, dr);
      }
    }
  }
#endif
  for (; x < w; x += 2) {
    const int first = chroma[x] - 128, second = chroma[x + 1] - 128;
    const int u = u_first ? first : second, v = u_first ? second : first;
    const int ruv = half + kCVR * v, guv = half + kCVG * v + kCUG * u, buv = half + kCUB * u;
    for (int row = 0; row < 2; ++row) {
      const uint8_t* yr = row ? y1 : y0;
      uint8_t* dr = row ? d1 : d0;
      for (int k = 0; k < 2; ++k) {
        const int yy = std::max(0, yr[x + k] - 16) * kCY;
        uint8_t* p = dr + (x + k) * D;
        p[blue] = saturate_u8((yy + buv) >> kShift601);
        p[1] = saturate_u8((yy + guv) >> kShift601);
        p[2 - blue] = saturate_u8((yy + ruv) >> kShift601);
        if (D == 4) p[3] = 255;
      }
    }
  }
}

void yuv420_to_rgb(const ColorJob& job, int64_t p0, int64_t p1) {
  const int64_t w = job.width, h = job.height;
  const uint8_t* src = (const uint8_t*)job.src;
  uint8_t* dst = (uint8_t*)job.dst;
  const int D = job.dst_channels;
  std::vector<uint8_t> pairs(job.interleaved_chroma ? 0 : (size_t)w);
  for (int64_t p = p0; p < p1; ++p) {
    const uint8_t* chroma;
    bool u_first = job.u_first != 0;
    if (job.interleaved_chroma) {
      chroma = (job.chroma ? (const uint8_t*)job.chroma : src + h * w) + p * w;
    } else {
      // Planar: each chroma row is w / 2 bytes; the second plane follows the first.
      const uint8_t* first = src + h * w + p * (w / 2);
      const uint8_t* second = first + (h / 2) * (w / 2);
      for (int64_t i = 0; i < w / 2; ++i) {
        pairs[2 * i] = first[i];
        pairs[2 * i + 1] = second[i];
      }
      chroma = pairs.data();
    }
    yuv420_pair_rows(src + 2 * p * w, src + (2 * p + 1) * w, chroma, u_first, dst + 2 * p * w * D,
                     dst + (2 * p + 1) * w * D, w, D, job.blue);
  }
}

void rgb_to_yuv420(const ColorJob& job, int64_t p0, int64_t p1) {
  const int64_t w = job.width, h = job.height;
  const uint8_t* src = (const uint8_t*)job.src;
  uint8_t* dst = (uint8_t*)job.dst;
  const int S = job.src_channels, bi = job.blue, ri = 2 - job.blue;
  const int half = 1 << (kShift601 - 1);
  uint8_t* plane_u = dst + h * w + (job.u_first ? 0 : (h / 2) * (w / 2));
  uint8_t* plane_v = dst + h * w + (job.u_first ? (h / 2) * (w / 2) : 0);
  for (int64_t p = p0; p < p1; ++p) {
    for (int row = 0; row < 2; ++row) {
      const uint8_t* s = src + (2 * p + row) * w * S;
      uint8_t* y = dst + (2 * p + row) * w;
      for (int64_t x = 0; x < w; ++x, s += S)
        y[x] = saturate_u8((kCRY * s[ri] + kCGY * s[1] + kCBY * s[bi] + half + (16 << kShift601)) >> kShift601);
    }
    // Chroma is taken from the top-left pixel of each 2x2 block.
    const uint8_t* s0 = src + 2 * p * w * S;
    const int base = half + (128 << kShift601);
    for (int64_t i = 0; i < w / 2; ++i) {
      const uint8_t* q = s0 + 2 * i * S;
      const int r = q[ri], g = q[1], b = q[bi];
      plane_u[p * (w / 2) + i] = saturate_u8((kCRU * r + kCGU * g + kCBU * b + base) >> kShift601);
      plane_v[p * (w / 2) + i] = saturate_u8((kCBU * r + kCGV * g + kCBV * b + base) >> kShift601);
    }
  }
}

void yuv422_to_rgb_row(const ColorJob& job, const uint8_t* s, uint8_t* d, int64_t w) {
  const int D = job.dst_channels, bi = job.blue, ri = 2 - job.blue;
  const int yi = job.luma_index, ui = job.u_index, vi = (job.u_index + 2) & 3;
  const int half = 1 << (kShift601 - 1);
  for (int64_t x = 0; x < w; x += 2, s += 4) {
    const int u = s[ui] - 128, v = s[vi] - 128;
    const int ruv = half + kCVR * v, guv = half + kCVG * v + kCUG * u, buv = half + kCUB * u;
    for (int k = 0; k < 2; ++k, d += D) {
      const int yy = std::max(0, s[yi + 2 * k] - 16) * kCY;
      d[bi] = saturate_u8((yy + buv) >> kShift601);
      d[1] = saturate_u8((yy + guv) >> kShift601);
      d[ri] = saturate_u8((yy + ruv) >> kShift601);
      if (D == 4) d[3] = 255;
    }
  }
}

void rgb_to_yuv422_row(const ColorJob& job, const uint8_t* s, uint8_t* d, int64_t w) {
  const int S = job.src_channels, bi = job.blue, ri = 2 - job.blue;
  const int yi = job.luma_index, ui = job.u_index, vi = (job.u_index + 2) & 3;
  const int half = 1 << (kShift601 - 1);
  for (int64_t x = 0; x < w; x += 2, s += 2 * S, d += 4) {
    int r = 0, g = 0, b = 0;
    for (int k = 0; k < 2; ++k) {
      const uint8_t* q = s + k * S;
      d[yi + 2 * k] = saturate_u8((kCRY * q[ri] + kCGY * q[1] + kCBY * q[bi] + half + (16 << kShift601)) >> kShift601);
      r += q[ri]; g += q[1]; b += q[bi];
    }
    const int base = (half << 1) + (128 << (kShift601 + 1));
    d[ui] = saturate_u8((kCRU * r + kCGU * g + kCBU * b + base) >> (kShift601 + 1));
    d[vi] = saturate_u8((kCBU * r + kCGV * g + kCBV * b + base) >> (kShift601 + 1));
  }
}

// ---------------------------------------------------------------- premultiplied alpha
void alpha_row(const uint8_t* s, uint8_t* d, int64_t w, bool premultiply) {
  for (int64_t x = 0; x < w; ++x, s += 4, d += 4) {
    const int a = s[3];
    for (int c = 0; c < 3; ++c) {
      if (premultiply) d[c] = (uint8_t)((s[c] * a + 127) / 255);
      else d[c] = a ? saturate_u8((s[c] * 255 + a / 2) / a) : 0;
    }
    d[3] = (uint8_t)a;
  }
}

// ---------------------------------------------------------------- dispatch
template <class T>
void convert_row(const ColorJob& job, const T* s, T* d, int64_t w) {
  const int S = job.src_channels;
  switch (job.kind) {
    case Kind::Reorder: return reorder<T>(job, s, d, w);
    case Kind::ToGray:
      if constexpr (std::is_same<T, uint8_t>::value) return S == 3 ? gray_u8_row<3>(s, d, w, job.blue) : gray_u8_row<4>(s, d, w, job.blue);
      else return S == 3 ? gray_f32_row<3>(s, d, w, job.blue) : gray_f32_row<4>(s, d, w, job.blue);
    case Kind::YCrCb:
      if constexpr (std::is_same<T, uint8_t>::value) {
        const int64_t done = S == 3 ? ycrcb_u8_vector<3>(job, s, d, w) : ycrcb_u8_vector<4>(job, s, d, w);
        return ycrcb_row<T>(job, s + done * S, d + done * 3, w - done);
      } else {
        return ycrcb_row<T>(job, s, d, w);
      }
    case Kind::YCrCbInverse: return ycrcb_inverse_row<T>(job, s, d, w);
    case Kind::XYZ: return xyz_row<T>(job, s, d, w, false);
    case Kind::XYZInverse: return xyz_row<T>(job, s, d, w, true);
    case Kind::HSV:
      if constexpr (std::is_same<T, uint8_t>::value) {
        const int64_t done = S == 3 ? hsv_u8_vector<3>(job, s, d, w) : hsv_u8_vector<4>(job, s, d, w);
        return hsv_u8_row(job, s + done * S, d + done * 3, w - done);
      }
      else return hsv_hls_row<T>(job, s, d, w, false);
    case Kind::HLS: return hsv_hls_row<T>(job, s, d, w, true);
    case Kind::HSVInverse: return hsv_hls_inverse_row<T>(job, s, d, w, false);
    case Kind::HLSInverse: return hsv_hls_inverse_row<T>(job, s, d, w, true);
    case Kind::Lab:
      if constexpr (std::is_same<T, uint8_t>::value) {
        return S == 3 ? lab_u8_row<3>(job, s, d, w) : lab_u8_row<4>(job, s, d, w);
      }
      else return lab_luv_row<T>(job, s, d, w, false);
    case Kind::Luv: return lab_luv_row<T>(job, s, d, w, true);
    case Kind::LabInverse: return lab_luv_inverse_row<T>(job, s, d, w, false);
    case Kind::LuvInverse: return lab_luv_inverse_row<T>(job, s, d, w, true);
    default: break;
  }
  if constexpr (std::is_same<T, uint8_t>::value) {
    switch (job.kind) {
      case Kind::To16Bit: return to16_row(job, s, d, w);
      case Kind::From16Bit: return from16_row(job, s, d, w);
      case Kind::GrayTo16Bit: return gray_to16_row(job, s, d, w);
      case Kind::From16BitToGray: return from16_gray_row(job, s, d, w);
      case Kind::Yuv422ToRgb: return yuv422_to_rgb_row(job, s, d, w);
      case Kind::RgbToYuv422: return rgb_to_yuv422_row(job, s, d, w);
      case Kind::PremultiplyAlpha: return alpha_row(s, d, w, true);
      case Kind::UnpremultiplyAlpha: return alpha_row(s, d, w, false);
      case Kind::Yuv422ToGray:
        for (int64_t x = 0; x < w; ++x) d[x] = s[2 * x + (job.luma_index)];
        return;
      default: break;
    }
  }
}

// Rows [r0, r1) of the output (row pairs for 4:2:0).
void ConvertRows(const ColorJob& job, int64_t r0, int64_t r1) {
  if (job.kind == Kind::Yuv420ToRgb) return yuv420_to_rgb(job, r0, r1);
  if (job.kind == Kind::RgbToYuv420) return rgb_to_yuv420(job, r0, r1);
  const int64_t w = job.width;
  const int64_t s_row = w * (job.kind == Kind::Yuv422ToRgb || job.kind == Kind::Yuv422ToGray || job.kind == Kind::From16Bit ||
                                     job.kind == Kind::From16BitToGray ? 2 : job.src_channels);
  const int64_t d_row = w * (job.kind == Kind::To16Bit || job.kind == Kind::GrayTo16Bit || job.kind == Kind::RgbToYuv422
                                 ? 2 : job.dst_channels);
  if (job.kind == Kind::Yuv420ToGray) {
    std::memcpy((uint8_t*)job.dst + r0 * w, (const uint8_t*)job.src + r0 * w, (size_t)((r1 - r0) * w));
    return;
  }
  // Each row conversion reads pixel by pixel (pairs for 4:2:2, whose widths are even), and rows
  // follow each other in both images: the rows are converted as one long row, which keeps the
  // vector loops running instead of restarting them at every row.
  const int64_t pixels = (r1 - r0) * w;
  if (job.is_float) convert_row<float>(job, (const float*)job.src + r0 * s_row, (float*)job.dst + r0 * d_row, pixels);
  else convert_row<uint8_t>(job, (const uint8_t*)job.src + r0 * s_row, (uint8_t*)job.dst + r0 * d_row, pixels);
}

}  // namespace HWY_NAMESPACE
}  // namespace cv_color
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
namespace cv_color {
HWY_EXPORT(ConvertRows);

void run(const ColorJob& job, ThreadPool* pool) {
  if (job.kind == Kind::Bayer) {
    // Colours of the top-left 2x2 block (0 blue, 1 green, 2 red) for RGGB, GRBG, BGGR, GBRG.
    static const int kPatterns[4][2][2] = {{{2, 1}, {1, 0}}, {{1, 2}, {0, 1}}, {{0, 1}, {1, 2}}, {{1, 0}, {2, 1}}};
    BayerJob bayer;
    std::memcpy(bayer.pattern, kPatterns[job.bayer_pattern & 3], sizeof(bayer.pattern));
    bayer.dst_channels = job.dst_channels;
    bayer.blue = job.blue;
    bayer.height = job.height;
    bayer.width = job.width;
    bayer.src = (const uint8_t*)job.src;
    bayer.dst = (uint8_t*)job.dst;
    return run_bayer(bayer, pool);
  }
  const bool pairs = job.kind == Kind::Yuv420ToRgb || job.kind == Kind::RgbToYuv420;
  const int64_t units = pairs ? job.height / 2 : job.height;
  const int64_t unit_pixels = std::max<int64_t>(1, job.width * (pairs ? 2 : 1));
  // Chunks of at least ~64K pixels, so the wake-up of a thread pays for itself.
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 16) / unit_pixels);
  parallel_for(pool, units, grain, [&](int64_t r0, int64_t r1) { HWY_DYNAMIC_DISPATCH(ConvertRows)(job, r0, r1); });
}

}  // namespace cv_color
}  // namespace cpu
}  // namespace mnnpy
#endif
