// The vector code of the requantization (requant_int8.h states the formula), compiled once per
// Highway target and shared by the int8 GEMM's epilogue and the NHWC depthwise kernel, so that
// every scheme and every target gives the same bytes. Include after hwy/foreach_target.h.
#if defined(MNNPY_REQUANT_INT8_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MNNPY_REQUANT_INT8_INL_H_
#undef MNNPY_REQUANT_INT8_INL_H_
#else
#define MNNPY_REQUANT_INT8_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>

#include "backend/cpu/requant_int8.h"

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#include <immintrin.h>
#endif

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace rq_hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// Four vectors of 16 rounded int32 values, plus zero16 (the zero point in int16 lanes), as 64 bytes
// in their order (r0's 16, then r1's, r2's, r3's), saturated to int8 (is_signed) or uint8; the
// packs saturate through int16, where the sum with the zero point is exact below saturation.
inline __m512i pack_rounded(__m512i r0, __m512i r1, __m512i r2, __m512i r3, __m512i zero16, bool is_signed) {
  const __m512i low = _mm512_adds_epi16(_mm512_packs_epi32(r0, r1), zero16);
  const __m512i high = _mm512_adds_epi16(_mm512_packs_epi32(r2, r3), zero16);
  const __m512i bytes = is_signed ? _mm512_packs_epi16(low, high) : _mm512_packus_epi16(low, high);
  // 128-bit block k holds 4 values each of r0, r1, r2, r3 (in that order): put each vector's 16
  // back in order.
  return _mm512_permutexvar_epi32(_mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0), bytes);
}
#endif

// x86: one vector of int32 sums at a time (kLanes: 8 with AVX2, 16 with AVX-512) against as many
// multipliers. The float clamp runs max(v, lo) first: MAXPS returns its second operand where the
// first is NaN. cvtps2dq rounds half to even (the default rounding mode), as the scalar code does.
// The result's low kLanes bytes are the outputs.
struct RequantVector {
#if HWY_TARGET == HWY_AVX2
  using Sums = __m256i;
  using Multipliers = __m256;
  static constexpr int kLanes = 8;
  static Sums load_sums(const int32_t* p) { return _mm256_loadu_si256((const __m256i*)p); }
  static Multipliers load_multipliers(const float* p) { return _mm256_loadu_ps(p); }
  static void store(uint8_t* out, __m128i bytes) { _mm_storel_epi64((__m128i*)out, bytes); }
#else
  using Sums = __m512i;
  using Multipliers = __m512;
  static constexpr int kLanes = 16;
  static Sums load_sums(const int32_t* p) { return _mm512_loadu_si512(p); }
  static Multipliers load_multipliers(const float* p) { return _mm512_loadu_ps(p); }
  static void store(uint8_t* out, __m128i bytes) { _mm_storeu_si128((__m128i*)out, bytes); }
#endif

  // The bounds and zero point broadcast once: a kernel's loop keeps them in registers (read
  // through a member, a scalar would be loaded again after every byte store, which may alias it).
#if HWY_TARGET == HWY_AVX2
  explicit RequantVector(const RequantParams& p)
      : zero(_mm256_set1_epi32(p.zero)), lo(_mm256_set1_ps(p.lo())), hi(_mm256_set1_ps(p.hi())), is_signed(p.low < 0) {}
#else
  explicit RequantVector(const RequantParams& p)
      : zero(_mm512_set1_epi32(p.zero)), lo(_mm512_set1_ps(p.lo())), hi(_mm512_set1_ps(p.hi())), is_signed(p.low < 0),
        low8(_mm512_set1_epi8((char)p.low)) {}
#endif

  __m128i operator()(Sums sums, Multipliers m) const {
#if HWY_TARGET == HWY_AVX2
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(sums), m);
    v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
    const __m256i r = _mm256_add_epi32(_mm256_cvtps_epi32(v), zero);
    // Values within [-128, 255] by now: the saturating packs keep them.
    const __m128i halves = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    return is_signed ? _mm_packs_epi16(halves, halves) : _mm_packus_epi16(halves, halves);
#else
    __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(sums), m);
    v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    const __m512i r = _mm512_add_epi32(_mm512_cvtps_epi32(v), zero);
    return _mm512_cvtepi32_epi8(r);  // the low bytes: uint8 or int8 (two's complement) alike
#endif
  }

#if HWY_TARGET != HWY_AVX2
  // Two rows of 32 outputs (row a: sums a0 then a1, row b: b0 then b1; multipliers m0 for the
  // first 16 columns, m1 for the next) in fewer instructions than four calls: the low bound
  // comes from the saturating packs and one byte max over all 64 instead of a float max per 16.
  // The same bytes: min(hi, v) keeps a NaN (MINPS returns its second operand then), which
  // converts to INT_MIN, and everything below lo saturates on the way to bytes, then rises to
  // low; rint(v) + zero is exact in int16 (|rint(v)| <= 32767 or saturated below low).
  // The requantized values less the zero point, rint(clamp(v, lo, hi)), as floats (exact: whole
  // numbers within +-383), which are QLinearAdd's centred operand when a residual is added to the
  // output: cvtps2dq's rounding (half to even) by vrndscaleps. A NaN v gives lo, as the bytes do.
  __m512 centred(Sums s, Multipliers m) const {
    const __m512 v = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(s), m), lo), hi);
    return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }

  // The 64 bytes: row a's 32 in the low half, row b's in the high. kClampHigh false: every
  // multiplier is finite and at most 0.5 in magnitude (|v| < 2^30: cvtps2dq cannot overflow) and
  // high is the type's largest value, so the saturating packs alone bound v from above.
  template <bool kClampHigh = true>
  __m512i two_rows(Sums a0, Sums a1, Sums b0, Sums b1, Multipliers m0, Multipliers m1) const {
    auto rounded = [&](Sums s, Multipliers m) {
      const __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(s), m);
      return _mm512_cvtps_epi32(kClampHigh ? _mm512_min_ps(hi, v) : v);
    };
    const __m512i packed = pack_rounded(rounded(a0, m0), rounded(a1, m1), rounded(b0, m0), rounded(b1, m1),
                                        _mm512_packs_epi32(zero, zero), is_signed);
    return is_signed ? _mm512_max_epi8(packed, low8) : _mm512_max_epu8(packed, low8);
  }
  template <bool kClampHigh = true>
  void store_two_rows(uint8_t* row_a, uint8_t* row_b, Sums a0, Sums a1, Sums b0, Sums b1, Multipliers m0,
                      Multipliers m1) const {
    const __m512i bytes = two_rows<kClampHigh>(a0, a1, b0, b1, m0, m1);
    _mm256_storeu_si256((__m256i*)row_a, _mm512_castsi512_si256(bytes));
    _mm256_storeu_si256((__m256i*)row_b, _mm512_extracti64x4_epi64(bytes, 1));
  }
#endif

  Sums zero;
  Multipliers lo, hi;
  bool is_signed;
#if HWY_TARGET != HWY_AVX2
  __m512i low8 = _mm512_setzero_si512();  // the lowest output byte, broadcast
#endif
};
#endif

// out[i] = 8-bit requantization of acc[i] with multiplier[i], i < count; bytes as int8 or uint8
// by the output's range.
inline void RequantRow(const int32_t* HWY_RESTRICT acc, const float* HWY_RESTRICT multiplier, int64_t count,
                       const RequantParams& p, uint8_t* HWY_RESTRICT out) {
  int64_t i = 0;
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  const RequantVector requant(p);
  constexpr int64_t L = RequantVector::kLanes;
  for (; i + L <= count; i += L)
    RequantVector::store(out + i, requant(RequantVector::load_sums(acc + i), RequantVector::load_multipliers(multiplier + i)));
#else
  const rq_hn::ScalableTag<float> df;
  const rq_hn::RebindToSigned<decltype(df)> di;
  const rq_hn::Rebind<int16_t, decltype(df)> d16;
  const rq_hn::Rebind<uint8_t, decltype(df)> du8;
  const int64_t L = (int64_t)rq_hn::Lanes(df);
  const auto lo = rq_hn::Set(df, p.lo()), hi = rq_hn::Set(df, p.hi()), shift = rq_hn::Set(df, 12582912.0f);
  // Bytes after the clamp: a uint8 output's values lie in [0, 255]; an int8 one's in [-128, 127]
  // are stored shifted by 128 as unsigned bytes and shifted back (the same bits).
  const bool is_signed = p.low < 0;
  const auto zero = rq_hn::Set(di, p.zero + (is_signed ? 128 : 0));
  for (; i + L <= count; i += L) {
    auto v = rq_hn::Mul(rq_hn::ConvertTo(df, rq_hn::LoadU(di, acc + i)), rq_hn::LoadU(df, multiplier + i));
    v = rq_hn::IfThenElse(rq_hn::Ge(v, lo), rq_hn::IfThenElse(rq_hn::Le(v, hi), v, hi), lo);
    const auto r = rq_hn::Add(rq_hn::ConvertTo(di, rq_hn::Sub(rq_hn::Add(v, shift), shift)), zero);
    const auto bytes = rq_hn::DemoteTo(du8, rq_hn::DemoteTo(d16, r));
    rq_hn::StoreU(is_signed ? rq_hn::Xor(bytes, rq_hn::Set(du8, (uint8_t)0x80)) : bytes, du8, out + i);
  }
#endif
  for (; i < count; ++i) out[i] = (uint8_t)RequantOne(acc[i], multiplier[i], p);
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#endif  // MNNPY_REQUANT_INT8_INL_H_
