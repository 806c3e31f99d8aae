// Depthwise 8-bit NHWC convolution (depthwise_int8.h), compiled per SIMD target. Threads take
// output rows; for each output pixel the channels run in vectors of int32 lanes, every tap whose
// input pixel is inside the image adding its centred product (padding, x_zero centred, adds 0),
// then the output row of sums is requantized at once. On x86 the channels up to the last whole
// 16 take two taps per vpmaddwd instead (the raw inputs, int16 weights; paired_pixels_16), 16
// channels at a time (32 with AVX-512), a whole row of pixels per block of channels.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/depthwise_int8.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "backend/cpu/depthwise_int8.h"
#include "backend/cpu/requant_int8-inl.h"
#include "backend/cpu/thread_buffers.h"
#include "mnnpy/thread_pool.h"

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#include <immintrin.h>
#endif

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
constexpr bool kPairedTaps = true;
// Sums of 16 channels (from c) for `pixels` output pixels, the first pixel's tap t at
// tap_inputs[t] (channel 0), the next pixel's pixel_step bytes on. Two taps per vpmaddwd: raw
// inputs widened to int16 and interleaved tap by tap against the weights interleaved the same way
// (pairs: tap pairs x 2 vectors of 16 int16, pair_stride apart, see pair_weights); a pair's two
// products sum exactly in int32. bias already holds -x_zero times the channel's weight sum, so
// the inputs need no centring (and taps outside the image read a pixel of x_zero). kTaps: the tap
// count when known at compile time (its weights then stay in registers), 0 otherwise.
template <int kTaps, class T>
void paired_pixels_16(const T* const* tap_inputs, int64_t c, int64_t pixel_step, int64_t pixels, int64_t taps,
                      const int16_t* HWY_RESTRICT pairs, int64_t pair_stride, const int32_t* bias,
                      int32_t* HWY_RESTRICT sums, int64_t sums_step) {
  const int64_t n = kTaps ? kTaps : taps;
  auto load = [&](int64_t px, int64_t t) {
    const __m128i bytes = _mm_loadu_si128((const __m128i*)(tap_inputs[t] + px));
    return std::is_signed<T>::value ? _mm256_cvtepi8_epi16(bytes) : _mm256_cvtepu8_epi16(bytes);
  };
  constexpr int kHeld = kTaps ? (kTaps + 1) / 2 * 2 : 1;
  __m256i held[kHeld];
  if (kTaps)
    for (int i = 0; i < kHeld; ++i)
      held[i] = _mm256_loadu_si256((const __m256i*)(pairs + (i / 2) * pair_stride + (i % 2) * 16));
  const __m256i bias_lo = _mm256_loadu_si256((const __m256i*)bias);
  const __m256i bias_hi = _mm256_loadu_si256((const __m256i*)(bias + 8));
  for (int64_t p = 0, px = c; p < pixels; ++p, px += pixel_step, sums += sums_step) {
    __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
    for (int64_t t = 0; t < n; t += 2) {
      const __m256i x0 = load(px, t), x1 = t + 1 < n ? load(px, t + 1) : _mm256_setzero_si256();
      const __m256i w_lo = kTaps ? held[t] : _mm256_loadu_si256((const __m256i*)(pairs + (t / 2) * pair_stride));
      const __m256i w_hi =
          kTaps ? held[t + 1] : _mm256_loadu_si256((const __m256i*)(pairs + (t / 2) * pair_stride + 16));
      lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(x0, x1), w_lo));
      hi = _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(x0, x1), w_hi));
    }
    // lo holds channels 0-3 and 8-11, hi 4-7 and 12-15.
    _mm256_storeu_si256((__m256i*)sums, _mm256_add_epi32(_mm256_permute2x128_si256(lo, hi, 0x20), bias_lo));
    _mm256_storeu_si256((__m256i*)(sums + 8), _mm256_add_epi32(_mm256_permute2x128_si256(lo, hi, 0x31), bias_hi));
  }
}
#else
constexpr bool kPairedTaps = false;
#endif

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
constexpr bool kPairedTaps32 = true;
#if HWY_TARGET == HWY_AVX3_DL
#define MNNPY_DEPTHWISE_VNNI __attribute__((target(HWY_TARGET_STR ",avx512vnni")))
#else
#define MNNPY_DEPTHWISE_VNNI
#endif
// acc + the pair sums of a and b (vpdpwssd where VNNI is, the same int32 sums).
MNNPY_DEPTHWISE_VNNI inline __m512i add_pair_products(__m512i acc, __m512i a, __m512i b) {
#if HWY_TARGET == HWY_AVX3_DL
  return _mm512_dpwssd_epi32(acc, a, b);
#else
  return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
#endif
}

// paired_pixels_16 for 32 channels in 512-bit vectors (pairs: blocks of 32, see pair_weights).
template <int kTaps, class T>
MNNPY_DEPTHWISE_VNNI void paired_pixels_32(const T* const* tap_inputs, int64_t c, int64_t pixel_step, int64_t pixels,
                                           int64_t taps, const int16_t* HWY_RESTRICT pairs, int64_t pair_stride,
                                           const int32_t* bias, int32_t* HWY_RESTRICT sums, int64_t sums_step) {
  const int64_t n = kTaps ? kTaps : taps;
  auto load = [&](int64_t px, int64_t t) {
    const __m256i bytes = _mm256_loadu_si256((const __m256i*)(tap_inputs[t] + px));
    return std::is_signed<T>::value ? _mm512_cvtepi8_epi16(bytes) : _mm512_cvtepu8_epi16(bytes);
  };
  constexpr int kHeld = kTaps ? (kTaps + 1) / 2 * 2 : 1;
  __m512i held[kHeld];
  if (kTaps)
    for (int i = 0; i < kHeld; ++i) held[i] = _mm512_loadu_si512(pairs + (i / 2) * pair_stride + (i % 2) * 32);
  const __m512i bias_first = _mm512_loadu_si512(bias), bias_second = _mm512_loadu_si512(bias + 16);
  // 128-bit block j of lo holds channels 8j .. 8j + 3, of hi 8j + 4 .. 8j + 7: 64-bit lanes
  // (0, 1) of lo, then (8, 9) (hi's), and so on.
  const __m512i first_lanes = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
  const __m512i second_lanes = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
  if constexpr (kTaps == 9) {
    bool sliding = true;  // 3x3, each kernel row's taps adjacent pixels one output step apart (stride 1)
    for (int t = 0; t < 9; ++t)
      if (t % 3 != 2) sliding = sliding && tap_inputs[t + 1] - tap_inputs[t] == pixel_step;
    if (sliding) {
      // The next pixel's taps are this one's shifted by a column: each widened input serves three
      // pixels, and a pixel loads only its last column.
      __m512i x[3][3];
      for (int r = 0; r < 3; ++r)
        for (int j = 0; j < 3; ++j) x[r][j] = load(c, 3 * r + j);
      for (int64_t p = 0, px = c; p < pixels; ++p, px += pixel_step, sums += sums_step) {
        __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
        for (int t = 0; t < 9; t += 2) {
          const __m512i x0 = x[t / 3][t % 3], x1 = t + 1 < 9 ? x[(t + 1) / 3][(t + 1) % 3] : _mm512_setzero_si512();
          lo = add_pair_products(lo, _mm512_unpacklo_epi16(x0, x1), held[t]);
          hi = add_pair_products(hi, _mm512_unpackhi_epi16(x0, x1), held[t + 1]);
        }
        _mm512_storeu_si512(sums, _mm512_add_epi32(_mm512_permutex2var_epi64(lo, first_lanes, hi), bias_first));
        _mm512_storeu_si512(sums + 16, _mm512_add_epi32(_mm512_permutex2var_epi64(lo, second_lanes, hi), bias_second));
        if (p + 1 < pixels) {
          for (int r = 0; r < 3; ++r) {
            x[r][0] = x[r][1];
            x[r][1] = x[r][2];
            x[r][2] = load(px + pixel_step, 3 * r + 2);
          }
        }
      }
      return;
    }
  }
  for (int64_t p = 0, px = c; p < pixels; ++p, px += pixel_step, sums += sums_step) {
    __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
    for (int64_t t = 0; t < n; t += 2) {
      const __m512i x0 = load(px, t), x1 = t + 1 < n ? load(px, t + 1) : _mm512_setzero_si512();
      const __m512i w_lo = kTaps ? held[t] : _mm512_loadu_si512(pairs + (t / 2) * pair_stride);
      const __m512i w_hi = kTaps ? held[t + 1] : _mm512_loadu_si512(pairs + (t / 2) * pair_stride + 32);
      lo = add_pair_products(lo, _mm512_unpacklo_epi16(x0, x1), w_lo);
      hi = add_pair_products(hi, _mm512_unpackhi_epi16(x0, x1), w_hi);
    }
    _mm512_storeu_si512(sums, _mm512_add_epi32(_mm512_permutex2var_epi64(lo, first_lanes, hi), bias_first));
    _mm512_storeu_si512(sums + 16, _mm512_add_epi32(_mm512_permutex2var_epi64(lo, second_lanes, hi), bias_second));
  }
}
#undef MNNPY_DEPTHWISE_VNNI
#else
constexpr bool kPairedTaps32 = false;
#endif

// The paired sums of `pixels` output pixels (their first tap t at tap_inputs[t], channel 0; the
// next pixel's stride_w pixels on) into sums (the first pixel's channel 0): 32 channels a step
// with AVX-512, then 16; the channels past the last 16 are left to the per-pixel loop.
template <class T>
void paired_pixels(const DepthwiseInt8Nhwc& a, const T* const* tap_inputs, int64_t pixels, const int16_t* pairs,
                   const int16_t* pairs32, const int32_t* zero_bias, int32_t* sums) {
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  const int64_t C = a.channels, taps = a.kernel_h * a.kernel_w, step = a.stride_w * C;
  int64_t c = 0;
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  if (pairs32) {
    const int64_t stride = (C / 32) * 64;
    for (; c + 32 <= C; c += 32) {
      const int16_t* w = pairs32 + (c / 32) * 64;
      if (taps == 9) paired_pixels_32<9>(tap_inputs, c, step, pixels, taps, w, stride, zero_bias + c, sums + c, C);
      else paired_pixels_32<0>(tap_inputs, c, step, pixels, taps, w, stride, zero_bias + c, sums + c, C);
    }
  }
#endif
  const int64_t stride = (C / 16) * 32;
  for (; c + 16 <= C; c += 16) {
    const int16_t* w = pairs + (c / 16) * 32;
    if (taps == 9) paired_pixels_16<9>(tap_inputs, c, step, pixels, taps, w, stride, zero_bias + c, sums + c, C);
    else paired_pixels_16<0>(tap_inputs, c, step, pixels, taps, w, stride, zero_bias + c, sums + c, C);
  }
#else
  (void)a, (void)tap_inputs, (void)pixels, (void)pairs, (void)pairs32, (void)zero_bias, (void)sums;
#endif
}

template <class T>
void depthwise_rows(const DepthwiseInt8Nhwc& a, const float* multiplier, int64_t multiplier_count,
                    const int16_t* pairs, const int16_t* pairs32, const int32_t* zero_bias, int64_t r0, int64_t r1,
                    int32_t* HWY_RESTRICT sums) {
  const hn::ScalableTag<int32_t> di;
  const hn::Rebind<T, decltype(di)> d8;
  const int64_t L = (int64_t)hn::Lanes(di);
  const int64_t C = a.channels, H = a.in_h, W = a.in_w, OH = a.out_h, OW = a.out_w, KH = a.kernel_h, KW = a.kernel_w;
  const T* HWY_RESTRICT x = static_cast<const T*>(a.x);
  uint8_t* HWY_RESTRICT y = static_cast<uint8_t*>(a.y);
  const int32_t x_zero = a.x_zero;
  const auto zero_v = hn::Set(di, x_zero);
  RequantParams rq;
  rq.zero = a.out_zero, rq.low = a.out_low, rq.high = a.out_high;
  // Offsets (in bytes of x) of the taps inside the image for the current pixel, and their rows of weights.
  std::vector<int64_t> offsets((size_t)(KH * KW)), tap_offsets((size_t)(KH * KW));
  std::vector<const int32_t*> weights((size_t)(KH * KW));
  for (int64_t ki = 0; ki < KH; ++ki)
    for (int64_t kj = 0; kj < KW; ++kj) tap_offsets[ki * KW + kj] = (ki * a.dilation_h * W + kj * a.dilation_w) * C;
  const int64_t span_h = (KH - 1) * a.dilation_h, span_w = (KW - 1) * a.dilation_w;
  // The paired path: every tap's input pixel, a pixel of x_zero where the tap is outside the image.
  const int64_t paired_channels = pairs ? C / 16 * 16 : 0;
  std::vector<const T*> tap_inputs((size_t)(KH * KW));
  const std::vector<T> padding((size_t)C, (T)x_zero);
  // The output columns whose taps are all inside horizontally: ow * stride_w - pad_left in
  // [0, W - 1 - span_w]; their pixels go through the paired path together.
  const int64_t last_iw0 = W - 1 - span_w;
  const int64_t ow_lo = std::min(OW, (a.pad_left + a.stride_w - 1) / a.stride_w);
  const int64_t ow_hi = last_iw0 < 0 ? 0 : std::max(ow_lo, std::min(OW, (last_iw0 + a.pad_left) / a.stride_w + 1));
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t n = r / OH, oh = r % OH;
    const int64_t ih0 = oh * a.stride_h - a.pad_top;
    const bool rows_inside = ih0 >= 0 && ih0 + span_h < H;
    if (paired_channels > 0) {
      const bool interior = rows_inside && ow_hi > ow_lo;
      if (interior) {
        const T* first = x + ((n * H + ih0) * W + ow_lo * a.stride_w - a.pad_left) * C;
        for (int64_t t = 0; t < KH * KW; ++t) tap_inputs[t] = first + tap_offsets[t];
        paired_pixels(a, tap_inputs.data(), ow_hi - ow_lo, pairs, pairs32, zero_bias, sums + ow_lo * C);
      }
      for (int64_t ow = 0; ow < OW; ++ow) {
        if (interior && ow == ow_lo) ow = ow_hi;
        if (ow >= OW) break;
        const int64_t iw0 = ow * a.stride_w - a.pad_left;
        for (int64_t ki = 0; ki < KH; ++ki) {
          const int64_t ih = ih0 + ki * a.dilation_h;
          for (int64_t kj = 0; kj < KW; ++kj) {
            const int64_t iw = iw0 + kj * a.dilation_w;
            const bool inside = ih >= 0 && ih < H && iw >= 0 && iw < W;
            tap_inputs[ki * KW + kj] = inside ? x + ((n * H + ih) * W + iw) * C : padding.data();
          }
        }
        paired_pixels(a, tap_inputs.data(), 1, pairs, pairs32, zero_bias, sums + ow * C);
      }
    }
    for (int64_t ow = 0; ow < OW && paired_channels < C; ++ow) {
      const int64_t iw0 = ow * a.stride_w - a.pad_left;
      int64_t count = 0;
      if (rows_inside && iw0 >= 0 && iw0 + span_w < W) {  // every tap inside the image
        const int64_t base = ((n * H + ih0) * W + iw0) * C;
        for (int64_t t = 0; t < KH * KW; ++t) {
          offsets[t] = base + tap_offsets[t];
          weights[t] = a.weights->taps.data() + t * C;
        }
        count = KH * KW;
      }
      for (int64_t ki = 0; ki < KH && count < KH * KW; ++ki) {
        const int64_t ih = ih0 + ki * a.dilation_h;
        if (ih < 0 || ih >= H) continue;
        for (int64_t kj = 0; kj < KW; ++kj) {
          const int64_t iw = iw0 + kj * a.dilation_w;
          if (iw < 0 || iw >= W) continue;
          offsets[count] = ((n * H + ih) * W + iw) * C;
          weights[count] = a.weights->taps.data() + (ki * KW + kj) * C;
          ++count;
        }
      }
      int64_t c = paired_channels;
      for (; c + L <= C; c += L) {
        auto acc = hn::LoadU(di, a.bias + c);
        for (int64_t t = 0; t < count; ++t) {
          const auto xv = hn::Sub(hn::PromoteTo(di, hn::LoadU(d8, x + offsets[t] + c)), zero_v);
          acc = hn::Add(acc, hn::Mul(xv, hn::LoadU(di, weights[t] + c)));
        }
        hn::StoreU(acc, di, sums + ow * C + c);
      }
      for (; c < C; ++c) {  // the channels past the last whole vector, with the same int32 arithmetic
        uint32_t acc = (uint32_t)a.bias[c];
        for (int64_t t = 0; t < count; ++t)
          acc += (uint32_t)(((int32_t)x[offsets[t] + c] - x_zero) * weights[t][c]);
        sums[ow * C + c] = (int32_t)acc;
      }
    }
    // The output row, a run of multiplier_count values at a time (a pixel, or the whole row).
    uint8_t* out = y + (n * OH + oh) * OW * C;
    for (int64_t i = 0; i < OW * C; i += multiplier_count)
      RequantRow(sums + i, multiplier, multiplier_count, rq, out + i);
  }
}

void DepthwiseInt8NhwcImpl(const DepthwiseInt8Nhwc& a, ThreadPool* pool) {
  const DepthwiseInt8Weights& wt = *a.weights;
  const int64_t rows = a.batch * a.out_h;
  const int64_t taps = a.kernel_h * a.kernel_w;
  const int64_t work = std::max<int64_t>(1, a.out_w * a.channels * taps);
  // Channels in whole vectors of the requantization: a pixel at a time, with the channels'
  // multipliers; otherwise the multipliers repeated for each pixel of an output row, one
  // requantization per row (no scalar tail per pixel).
  const int64_t C = a.channels, row = a.out_w * C;
  const bool per_pixel = C % 16 == 0;
  std::vector<float> repeated;
  if (!per_pixel) {
    repeated.resize((size_t)row);
    for (int64_t p = 0; p < a.out_w; ++p) std::copy(a.multiplier, a.multiplier + C, repeated.begin() + p * C);
  }
  const float* multiplier = per_pixel ? a.multiplier : repeated.data();
  const int64_t multiplier_count = per_pixel ? C : row;
  const int16_t* pp = kPairedTaps && !wt.pairs16.empty() ? wt.pairs16.data() : nullptr;
  const int16_t* pp32 = kPairedTaps32 && !wt.pairs32.empty() ? wt.pairs32.data() : nullptr;
  // The paired path multiplies the raw inputs: bias - x_zero * (sum of the channel's weights)
  // takes the centring back (the same int32 sums, modulo 2^32).
  std::vector<int32_t> zero_bias((size_t)C);
  for (int64_t c = 0; c < C; ++c)
    zero_bias[c] = (int32_t)((uint32_t)a.bias[c] - (uint32_t)a.x_zero * (uint32_t)wt.weight_sums[c]);
  parallel_for(pool, rows, std::max<int64_t>(1, (int64_t(1) << 17) / work), [&](int64_t r0, int64_t r1) {
    std::vector<int32_t> sums((size_t)row);
    if (a.x_signed)
      depthwise_rows<int8_t>(a, multiplier, multiplier_count, pp, pp32, zero_bias.data(), r0, r1, sums.data());
    else
      depthwise_rows<uint8_t>(a, multiplier, multiplier_count, pp, pp32, zero_bias.data(), r0, r1, sums.data());
  });
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
HWY_EXPORT(DepthwiseInt8NhwcImpl);

namespace {
// The weights for paired_pixels_16 (width 16) and paired_pixels_32 (width 32): for tap pair p and
// block b of `width` channels, at ((p * blocks + b) * 2 * width): the low vector (per 128-bit
// block h, channels 8h .. 8h + 3) then the high one (channels 8h + 4 .. 8h + 7), each channel's
// two taps adjacent.
std::vector<int16_t> pair_weights(const std::vector<int32_t>& centred, int64_t C, int64_t taps, int64_t width) {
  const int64_t blocks = C / width, pairs = (taps + 1) / 2;
  std::vector<int16_t> out((size_t)(pairs * blocks * 2 * width));
  for (int64_t p = 0; p < pairs; ++p)
    for (int64_t b = 0; b < blocks; ++b)
      for (int64_t h = 0; h < width / 8; ++h)
        for (int i = 0; i < 4; ++i)
          for (int part = 0; part < 2; ++part) {
            const int64_t ch = b * width + h * 8 + part * 4 + i;
            int16_t* dst = out.data() + (p * blocks + b) * 2 * width + part * width + h * 8 + 2 * i;
            dst[0] = (int16_t)centred[(2 * p) * C + ch];
            dst[1] = 2 * p + 1 < taps ? (int16_t)centred[(2 * p + 1) * C + ch] : (int16_t)0;
          }
  return out;
}

}  // namespace

DepthwiseInt8Weights prepare_depthwise_int8(const void* w, bool w_signed, const int32_t* w_zero, int64_t channels,
                                            int64_t taps) {
  const int64_t C = channels;
  DepthwiseInt8Weights out;
  out.taps.resize((size_t)(taps * C));
  out.weight_sums.assign((size_t)C, 0);
  bool int16_weights = true;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t t = 0; t < taps; ++t) {
      const int64_t idx = c * taps + t;
      const int32_t stored =
          w_signed ? (int32_t)static_cast<const int8_t*>(w)[idx] : (int32_t)static_cast<const uint8_t*>(w)[idx];
      const int32_t v = stored - w_zero[c];
      out.taps[t * C + c] = v;
      out.weight_sums[c] = (int32_t)((uint32_t)out.weight_sums[c] + (uint32_t)v);
      int16_weights &= v >= -255 && v <= 255;  // false only for zero points outside the weights' type
    }
  if (int16_weights && C >= 16) out.pairs16 = pair_weights(out.taps, C, taps, 16);
  if (int16_weights && C >= 32) out.pairs32 = pair_weights(out.taps, C, taps, 32);
  return out;
}

void depthwise_int8_nhwc(const DepthwiseInt8Nhwc& args, ThreadPool* pool) {
  HWY_DYNAMIC_DISPATCH(DepthwiseInt8NhwcImpl)(args, pool);
}

}  // namespace cpu
}  // namespace mnnpy
#endif
