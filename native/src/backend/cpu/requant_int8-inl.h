// Requantization of int32 sums to 8-bit outputs, as ONNX's QLinearConv / QLinearMatMul define it:
//   y = clamp(round_half_even(double(acc) * multiplier) + zero, low, high)
// compiled once per Highway target and shared by the int8 GEMM's epilogue and the NHWC depthwise
// kernel, so that every scheme rounds the same way. The product is clamped to +-1e9 before the
// rounding: beyond that the output saturates whatever the rounding, and within it the product's
// magnitude is below 2^51, where both the vector rounding and the scalar one below are exact;
// every target then gives the same bytes. Include after hwy/foreach_target.h.
#if defined(MNNPY_REQUANT_INT8_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MNNPY_REQUANT_INT8_INL_H_
#undef MNNPY_REQUANT_INT8_INL_H_
#else
#define MNNPY_REQUANT_INT8_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#include <immintrin.h>
#endif

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace rq_hn = hwy::HWY_NAMESPACE;

struct RequantParams {
  double zero = 0.0, low = 0.0, high = 255.0;  // the output's zero point and clamp (a ReLU raises low)
  // Every multiplier at most 0.5 in magnitude (as scales make them): products of int32 sums stay
  // below 2^30, so the clamp to +-1e9 changes nothing and the x86 path leaves it out.
  bool small_multipliers = false;
};

// Whether count multipliers are all at most 0.5 in magnitude (RequantParams::small_multipliers).
inline bool AllSmallMultipliers(const double* multiplier, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    if (!(std::fabs(multiplier[i]) <= 0.5)) return false;
  return true;
}

// One value by the formula above (the vector loop's tail).
inline int32_t RequantOne(int32_t acc, double multiplier, const RequantParams& p) {
  constexpr double kShift = 6755399441055744.0;  // 1.5 * 2^52: rounds half to even below 2^51
  const double v = std::min(std::max((double)acc * multiplier, -1e9), 1e9);
  const double r = ((v + kShift) - kShift) + p.zero;
  return (int32_t)std::min(std::max(r, p.low), p.high);
}

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// 16 sums at a time in 512-bit vectors: the products (sums 0-7 times m_lo, 8-15 times m_hi),
// clamped where RequantParams asks, are rounded half to even by adding 1.5 * 2^52 (exact below
// 2^51; the default rounding mode), which leaves round(v) modulo 2^32 in each double's low 32
// bits; the zero point and the clamp then run on int32 lanes, which hold every value exactly.
struct Requant16 {
  explicit Requant16(const RequantParams& p)
      : zero(_mm512_set1_epi32((int32_t)p.zero)),
        low(_mm512_set1_epi32((int32_t)p.low)),
        high(_mm512_set1_epi32((int32_t)p.high)),
        clamp(!p.small_multipliers) {}
  __m128i operator()(__m512i sums, __m512d m_lo, __m512d m_hi) const {
    const __m512d shift = _mm512_set1_pd(6755399441055744.0);
    const __m512d lo_limit = _mm512_set1_pd(-1e9), hi_limit = _mm512_set1_pd(1e9);
    __m512d v0 = _mm512_mul_pd(_mm512_cvtepi32_pd(_mm512_castsi512_si256(sums)), m_lo);
    __m512d v1 = _mm512_mul_pd(_mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(sums, 1)), m_hi);
    if (clamp) {
      v0 = _mm512_min_pd(_mm512_max_pd(v0, lo_limit), hi_limit);
      v1 = _mm512_min_pd(_mm512_max_pd(v1, lo_limit), hi_limit);
    }
    const __m512i low_words = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    __m512i r = _mm512_permutex2var_epi32(_mm512_castpd_si512(_mm512_add_pd(v0, shift)), low_words,
                                          _mm512_castpd_si512(_mm512_add_pd(v1, shift)));
    r = _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(r, zero), low), high);
    return _mm512_cvtepi32_epi8(r);  // the low bytes: uint8 or int8 (two's complement) alike
  }
  __m512i zero, low, high;
  bool clamp;
};
#endif

// out[i] = 8-bit requantization of acc[i] with multiplier[i], i < count; bytes as int8 or uint8
// by the clamp range.
inline void RequantRow(const int32_t* HWY_RESTRICT acc, const double* HWY_RESTRICT multiplier, int64_t count,
                       const RequantParams& p, uint8_t* HWY_RESTRICT out) {
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  // x86: vcvtpd2dq rounds the clamped product half to even (the default rounding mode, which the
  // scalar formula's rounding relies on too); the zero point and the clamp then run on int16
  // lanes, whose saturating packs and adds keep every out-of-range value on its side.
  {
    const __m256d lo_limit = _mm256_set1_pd(-1e9), hi_limit = _mm256_set1_pd(1e9);
    const __m128i zero = _mm_set1_epi16((int16_t)p.zero), low = _mm_set1_epi16((int16_t)p.low);
    const __m128i high = _mm_set1_epi16((int16_t)p.high);
    const bool is_signed = p.low < 0.0;
    const bool clamp = !p.small_multipliers;
    int64_t i = 0;
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    {
      const Requant16 requant16(p);
      for (; i + 16 <= count; i += 16)
        _mm_storeu_si128((__m128i*)(out + i),
                         requant16(_mm512_loadu_si512(acc + i), _mm512_loadu_pd(multiplier + i),
                                   _mm512_loadu_pd(multiplier + i + 8)));
    }
#endif
    for (; i + 8 <= count; i += 8) {
      const __m128i a0 = _mm_loadu_si128((const __m128i*)(acc + i)), a1 = _mm_loadu_si128((const __m128i*)(acc + i + 4));
      __m256d v0 = _mm256_mul_pd(_mm256_cvtepi32_pd(a0), _mm256_loadu_pd(multiplier + i));
      __m256d v1 = _mm256_mul_pd(_mm256_cvtepi32_pd(a1), _mm256_loadu_pd(multiplier + i + 4));
      if (clamp) {
        v0 = _mm256_min_pd(_mm256_max_pd(v0, lo_limit), hi_limit);
        v1 = _mm256_min_pd(_mm256_max_pd(v1, lo_limit), hi_limit);
      }
      __m128i r = _mm_packs_epi32(_mm256_cvtpd_epi32(v0), _mm256_cvtpd_epi32(v1));
      r = _mm_min_epi16(_mm_max_epi16(_mm_adds_epi16(r, zero), low), high);
      const __m128i bytes = is_signed ? _mm_packs_epi16(r, r) : _mm_packus_epi16(r, r);
      _mm_storel_epi64((__m128i*)(out + i), bytes);
    }
    for (; i < count; ++i) out[i] = (uint8_t)RequantOne(acc[i], multiplier[i], p);
    return;
  }
#endif
  const rq_hn::ScalableTag<double> dd;
  const rq_hn::Rebind<int32_t, decltype(dd)> di;
  const rq_hn::Rebind<int16_t, decltype(dd)> d16;
  const rq_hn::Rebind<uint8_t, decltype(dd)> du8;
  const int64_t L = (int64_t)rq_hn::Lanes(dd);
  const auto lo_limit = rq_hn::Set(dd, -1e9), hi_limit = rq_hn::Set(dd, 1e9);
  const auto zero = rq_hn::Set(dd, p.zero), low = rq_hn::Set(dd, p.low), high = rq_hn::Set(dd, p.high);
  // Bytes after the clamp: a uint8 output's values lie in [0, 255]; an int8 one's in [-128, 127]
  // are stored shifted by 128 as unsigned bytes and shifted back (the same bits).
  const bool is_signed = p.low < 0.0;
  const auto bias8 = rq_hn::Set(dd, is_signed ? 128.0 : 0.0);
  int64_t i = 0;
  for (; i + L <= count; i += L) {
    auto v = rq_hn::Mul(rq_hn::PromoteTo(dd, rq_hn::LoadU(di, acc + i)), rq_hn::LoadU(dd, multiplier + i));
    v = rq_hn::Min(rq_hn::Max(v, lo_limit), hi_limit);
    v = rq_hn::Min(rq_hn::Max(rq_hn::Add(rq_hn::Round(v), zero), low), high);
    const auto as_int = rq_hn::DemoteTo(di, rq_hn::Add(v, bias8));
    const auto bytes = rq_hn::DemoteTo(du8, rq_hn::DemoteTo(d16, as_int));
    if (is_signed) {
      rq_hn::StoreU(rq_hn::Xor(bytes, rq_hn::Set(du8, (uint8_t)0x80)), du8, out + i);
    } else {
      rq_hn::StoreU(bytes, du8, out + i);
    }
  }
  for (; i < count; ++i) out[i] = (uint8_t)RequantOne(acc[i], multiplier[i], p);
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#endif  // MNNPY_REQUANT_INT8_INL_H_
