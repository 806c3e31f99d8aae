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

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// x86: one vector of int32 sums at a time (kLanes: 8 with AVX2, 16 with AVX-512). The products
// (the first half of the sums times m_lo, the second times m_hi), clamped where RequantParams
// asks, are rounded half to even by adding 1.5 * 2^52 (exact below 2^51; the default rounding
// mode), which leaves round(v) modulo 2^32 in each double's low 32 bits; the zero point and the
// clamp then run on int32 lanes, which hold every value exactly. The result's low kLanes bytes
// are the outputs.
struct RequantVector {
#if HWY_TARGET == HWY_AVX2
  using Sums = __m256i;
  using Multipliers = __m256d;
  static constexpr int kLanes = 8;
  static Sums load_sums(const int32_t* p) { return _mm256_loadu_si256((const __m256i*)p); }
  static Multipliers load_multipliers(const double* p) { return _mm256_loadu_pd(p); }
  static void store(uint8_t* out, __m128i bytes) { _mm_storel_epi64((__m128i*)out, bytes); }
#else
  using Sums = __m512i;
  using Multipliers = __m512d;
  static constexpr int kLanes = 16;
  static Sums load_sums(const int32_t* p) { return _mm512_loadu_si512(p); }
  static Multipliers load_multipliers(const double* p) { return _mm512_loadu_pd(p); }
  static void store(uint8_t* out, __m128i bytes) { _mm_storeu_si128((__m128i*)out, bytes); }
#endif

  explicit RequantVector(const RequantParams& p)
      : zero((int32_t)p.zero), low((int32_t)p.low), high((int32_t)p.high), clamp(!p.small_multipliers),
        is_signed(p.low < 0.0) {}

  __m128i operator()(Sums sums, Multipliers m_lo, Multipliers m_hi) const {
#if HWY_TARGET == HWY_AVX2
    const __m256d shift = _mm256_set1_pd(6755399441055744.0);
    const __m256d lo_limit = _mm256_set1_pd(-1e9), hi_limit = _mm256_set1_pd(1e9);
    __m256d v0 = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(sums)), m_lo);
    __m256d v1 = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(sums, 1)), m_hi);
    if (clamp) {
      v0 = _mm256_min_pd(_mm256_max_pd(v0, lo_limit), hi_limit);
      v1 = _mm256_min_pd(_mm256_max_pd(v1, lo_limit), hi_limit);
    }
    // The low words of each 128-bit block of v0 and v1, then the 64-bit lanes in order.
    const __m256 words = _mm256_shuffle_ps(_mm256_castpd_ps(_mm256_add_pd(v0, shift)),
                                           _mm256_castpd_ps(_mm256_add_pd(v1, shift)), _MM_SHUFFLE(2, 0, 2, 0));
    __m256i r = _mm256_permute4x64_epi64(_mm256_castps_si256(words), _MM_SHUFFLE(3, 1, 2, 0));
    r = _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(r, _mm256_set1_epi32(zero)), _mm256_set1_epi32(low)),
                         _mm256_set1_epi32(high));
    // Values within [-128, 255] by now: the saturating packs keep them.
    const __m128i halves = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    return is_signed ? _mm_packs_epi16(halves, halves) : _mm_packus_epi16(halves, halves);
#else
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
    r = _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(r, _mm512_set1_epi32(zero)), _mm512_set1_epi32(low)),
                         _mm512_set1_epi32(high));
    return _mm512_cvtepi32_epi8(r);  // the low bytes: uint8 or int8 (two's complement) alike
#endif
  }

  int32_t zero, low, high;
  bool clamp, is_signed;
};
#endif

// out[i] = 8-bit requantization of acc[i] with multiplier[i], i < count; bytes as int8 or uint8
// by the clamp range.
inline void RequantRow(const int32_t* HWY_RESTRICT acc, const double* HWY_RESTRICT multiplier, int64_t count,
                       const RequantParams& p, uint8_t* HWY_RESTRICT out) {
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  {
    const RequantVector requant(p);
    constexpr int64_t L = RequantVector::kLanes;
    int64_t i = 0;
    for (; i + L <= count; i += L)
      RequantVector::store(out + i, requant(RequantVector::load_sums(acc + i),
                                            RequantVector::load_multipliers(multiplier + i),
                                            RequantVector::load_multipliers(multiplier + i + L / 2)));
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
