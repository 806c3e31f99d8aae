// Depthwise 8-bit NHWC convolution (depthwise_int8.h), compiled per SIMD target. Threads take
// output rows; for each output pixel the channels run in vectors of int32 lanes, every tap whose
// input pixel is inside the image adding its centred product (padding, x_zero centred, adds 0),
// then the output row of sums is requantized at once. On x86 the pixels whose taps are all
// inside take two taps per vpmaddwd (centred values fit int16), 16 channels at a time (32 with
// AVX-512).
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
// Sums of 16 channels (from c) of a pixel whose taps are all inside the image, two taps per
// vpmaddwd: centred inputs (|x - x_zero| <= 255) widened to int16 and interleaved tap by tap,
// against the weights interleaved the same way (pairs: tap pairs x 2 vectors of 16 int16 per
// block of 16 channels, see pair_weights); a pair's two products sum exactly in int32.
template <class T>
inline void paired_taps_16(const T* HWY_RESTRICT x, const int64_t* offsets, int64_t taps, int64_t c,
                           const int16_t* HWY_RESTRICT pairs, int64_t pair_stride, __m256i zero,
                           const int32_t* bias, int32_t* sums) {
  __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
  auto load = [&](int64_t t) {
    const __m128i bytes = _mm_loadu_si128((const __m128i*)(x + offsets[t] + c));
    return _mm256_sub_epi16(std::is_signed<T>::value ? _mm256_cvtepi8_epi16(bytes) : _mm256_cvtepu8_epi16(bytes),
                            zero);
  };
  for (int64_t t = 0; t < taps; t += 2, pairs += pair_stride) {
    const __m256i x0 = load(t), x1 = t + 1 < taps ? load(t + 1) : x0;  // a last odd tap: weight 0
    lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(x0, x1), _mm256_loadu_si256((const __m256i*)pairs)));
    hi = _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(x0, x1),
                                                _mm256_loadu_si256((const __m256i*)(pairs + 16))));
  }
  // lo holds channels 0-3 and 8-11, hi 4-7 and 12-15.
  const __m256i first = _mm256_permute2x128_si256(lo, hi, 0x20), second = _mm256_permute2x128_si256(lo, hi, 0x31);
  _mm256_storeu_si256((__m256i*)(sums + c), _mm256_add_epi32(first, _mm256_loadu_si256((const __m256i*)(bias + c))));
  _mm256_storeu_si256((__m256i*)(sums + c + 8),
                      _mm256_add_epi32(second, _mm256_loadu_si256((const __m256i*)(bias + c + 8))));
}
#else
constexpr bool kPairedTaps = false;
#endif

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
constexpr bool kPairedTaps32 = true;
// paired_taps_16 for 32 channels in 512-bit vectors (pairs: blocks of 32, see pair_weights).
template <class T>
inline void paired_taps_32(const T* HWY_RESTRICT x, const int64_t* offsets, int64_t taps, int64_t c,
                           const int16_t* HWY_RESTRICT pairs, int64_t pair_stride, __m512i zero,
                           const int32_t* bias, int32_t* sums) {
  __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
  auto load = [&](int64_t t) {
    const __m256i bytes = _mm256_loadu_si256((const __m256i*)(x + offsets[t] + c));
    return _mm512_sub_epi16(std::is_signed<T>::value ? _mm512_cvtepi8_epi16(bytes) : _mm512_cvtepu8_epi16(bytes),
                            zero);
  };
  for (int64_t t = 0; t < taps; t += 2, pairs += pair_stride) {
    const __m512i x0 = load(t), x1 = t + 1 < taps ? load(t + 1) : x0;  // a last odd tap: weight 0
    lo = _mm512_add_epi32(lo, _mm512_madd_epi16(_mm512_unpacklo_epi16(x0, x1), _mm512_loadu_si512(pairs)));
    hi = _mm512_add_epi32(hi, _mm512_madd_epi16(_mm512_unpackhi_epi16(x0, x1), _mm512_loadu_si512(pairs + 32)));
  }
  // 128-bit block j of lo holds channels 8j .. 8j + 3, of hi 8j + 4 .. 8j + 7: 64-bit lanes
  // (0, 1) of lo, then (8, 9) (hi's), and so on.
  const __m512i first = _mm512_permutex2var_epi64(lo, _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0), hi);
  const __m512i second = _mm512_permutex2var_epi64(lo, _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4), hi);
  _mm512_storeu_si512(sums + c, _mm512_add_epi32(first, _mm512_loadu_si512(bias + c)));
  _mm512_storeu_si512(sums + c + 16, _mm512_add_epi32(second, _mm512_loadu_si512(bias + c + 16)));
}
#else
constexpr bool kPairedTaps32 = false;
#endif

// The weights for paired_taps_16 (width 16) and paired_taps_32 (width 32): for tap pair p and
// block b of `width` channels, at ((p * blocks + b) * 2 * width): the low vector (per 128-bit
// block h, channels 8h .. 8h + 3) then the high one (channels 8h + 4 .. 8h + 7), each channel's
// two taps adjacent.
std::vector<int16_t> pair_weights(const DepthwiseInt8Nhwc& a, int64_t width) {
  const int64_t taps = a.kernel_h * a.kernel_w, C = a.channels, blocks = C / width, pairs = (taps + 1) / 2;
  std::vector<int16_t> out((size_t)(pairs * blocks * 2 * width));
  for (int64_t p = 0; p < pairs; ++p)
    for (int64_t b = 0; b < blocks; ++b)
      for (int64_t h = 0; h < width / 8; ++h)
        for (int i = 0; i < 4; ++i)
          for (int part = 0; part < 2; ++part) {
            const int64_t ch = b * width + h * 8 + part * 4 + i;
            int16_t* dst = out.data() + (p * blocks + b) * 2 * width + part * width + h * 8 + 2 * i;
            dst[0] = (int16_t)a.taps[(2 * p) * C + ch];
            dst[1] = 2 * p + 1 < taps ? (int16_t)a.taps[(2 * p + 1) * C + ch] : (int16_t)0;
          }
  return out;
}

template <class T>
void depthwise_rows(const DepthwiseInt8Nhwc& a, const double* multiplier, const int16_t* pairs,
                    const int16_t* pairs32, int64_t r0, int64_t r1, int32_t* HWY_RESTRICT sums) {
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
  rq.small_multipliers = AllSmallMultipliers(a.multiplier, C);
  // Offsets (in bytes of x) of the taps inside the image for the current pixel, and their rows of weights.
  std::vector<int64_t> offsets((size_t)(KH * KW)), tap_offsets((size_t)(KH * KW));
  std::vector<const int32_t*> weights((size_t)(KH * KW));
  for (int64_t ki = 0; ki < KH; ++ki)
    for (int64_t kj = 0; kj < KW; ++kj) tap_offsets[ki * KW + kj] = (ki * a.dilation_h * W + kj * a.dilation_w) * C;
  const int64_t span_h = (KH - 1) * a.dilation_h, span_w = (KW - 1) * a.dilation_w;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t n = r / OH, oh = r % OH;
    const int64_t ih0 = oh * a.stride_h - a.pad_top;
    const bool rows_inside = ih0 >= 0 && ih0 + span_h < H;
    for (int64_t ow = 0; ow < OW; ++ow) {
      const int64_t iw0 = ow * a.stride_w - a.pad_left;
      int64_t count = 0;
      if (rows_inside && iw0 >= 0 && iw0 + span_w < W) {  // every tap inside the image
        const int64_t base = ((n * H + ih0) * W + iw0) * C;
        for (int64_t t = 0; t < KH * KW; ++t) {
          offsets[t] = base + tap_offsets[t];
          weights[t] = a.taps + t * C;
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
          weights[count] = a.taps + (ki * KW + kj) * C;
          ++count;
        }
      }
      int64_t c = 0;
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
      if (pairs && count == KH * KW) {  // every tap inside: two at a time
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
        if (pairs32) {
          const __m512i zero32 = _mm512_set1_epi16((int16_t)x_zero);
          for (; c + 32 <= C; c += 32)
            paired_taps_32(x, offsets.data(), count, c, pairs32 + (c / 32) * 64, (C / 32) * 64, zero32, a.bias,
                           sums + ow * C);
        }
#endif
        const __m256i zero16 = _mm256_set1_epi16((int16_t)x_zero);
        const int64_t blocks = C / 16;
        for (; c + 16 <= C; c += 16)
          paired_taps_16(x, offsets.data(), count, c, pairs + (c / 16) * 32, blocks * 32, zero16, a.bias,
                         sums + ow * C);
      }
#endif
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
    // The output row at once (multipliers repeated per pixel): one long vector loop.
    uint8_t* out = y + (n * OH + oh) * OW * C;
    RequantRow(sums, multiplier, OW * C, rq, out);
  }
}

void DepthwiseInt8NhwcImpl(const DepthwiseInt8Nhwc& a, ThreadPool* pool) {
  const int64_t rows = a.batch * a.out_h;
  const int64_t work = std::max<int64_t>(1, a.out_w * a.channels * a.kernel_h * a.kernel_w);
  // The multipliers repeated for each pixel of an output row: one requantization per row.
  const int64_t C = a.channels, row = a.out_w * C;
  std::vector<double> multiplier((size_t)row);
  for (int64_t i = 0; i < row; ++i) multiplier[i] = a.multiplier[i % C];
  // Centred weights within int16's range (|w - w_zero| <= 255 for 8-bit weights): paired taps.
  bool int16_weights = kPairedTaps && a.channels >= 16;
  for (int64_t i = 0; int16_weights && i < a.kernel_h * a.kernel_w * a.channels; ++i)
    int16_weights = a.taps[i] >= -255 && a.taps[i] <= 255;
  const std::vector<int16_t> pairs = int16_weights ? pair_weights(a, 16) : std::vector<int16_t>();
  const int16_t* pp = int16_weights ? pairs.data() : nullptr;
  const bool wide = kPairedTaps32 && int16_weights && a.channels >= 32;
  const std::vector<int16_t> pairs32 = wide ? pair_weights(a, 32) : std::vector<int16_t>();
  const int16_t* pp32 = wide ? pairs32.data() : nullptr;
  parallel_for(pool, rows, std::max<int64_t>(1, (int64_t(1) << 15) / work), [&](int64_t r0, int64_t r1) {
    std::vector<int32_t> sums((size_t)row);
    if (a.x_signed) depthwise_rows<int8_t>(a, multiplier.data(), pp, pp32, r0, r1, sums.data());
    else depthwise_rows<uint8_t>(a, multiplier.data(), pp, pp32, r0, r1, sums.data());
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

void depthwise_int8_nhwc(const DepthwiseInt8Nhwc& args, ThreadPool* pool) {
  HWY_DYNAMIC_DISPATCH(DepthwiseInt8NhwcImpl)(args, pool);
}

}  // namespace cpu
}  // namespace mnnpy
#endif
