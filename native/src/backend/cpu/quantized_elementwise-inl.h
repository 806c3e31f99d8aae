// The vector code of QLinearAdd and QLinearMul (quantized_elementwise.h states the arithmetic),
// compiled once per Highway target and shared by their kernels and by the int8 GEMM's epilogue,
// which adds a residual to a convolution's output (gemm_int8.h), so that both give the same bytes.
// Tails run the vector code on a padded copy. Include after hwy/foreach_target.h.
#if defined(MNNPY_QUANTIZED_ELEMENTWISE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MNNPY_QUANTIZED_ELEMENTWISE_INL_H_
#undef MNNPY_QUANTIZED_ELEMENTWISE_INL_H_
#else
#define MNNPY_QUANTIZED_ELEMENTWISE_INL_H_
#endif

#include <hwy/highway.h>

#include <cstring>
#include <type_traits>

#include "backend/cpu/quantized_elementwise.h"
#include "backend/cpu/requant_int8-inl.h"

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#include <immintrin.h>
#endif

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace quantized_binary {
namespace hn = hwy::HWY_NAMESPACE;
using namespace quantized_elementwise_detail;

using DF = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<DF>;
using D8 = hn::Rebind<uint8_t, DF>;
using VF = hn::Vec<DF>;
using VI = hn::Vec<DI>;

// Lanes(DF) bytes at p, sign-flipped by `flip`, as int32 lanes.
HWY_INLINE VI load_bytes(const uint8_t* HWY_RESTRICT p, uint8_t flip) {
  const D8 d8;
  return hn::PromoteTo(DI(), hn::Xor(hn::LoadU(d8, p), hn::Set(d8, flip)));
}

HWY_INLINE void store_requantized(VF v, const Requant& q, uint8_t flip, uint8_t* HWY_RESTRICT y) {
  const DF d;
  const DI di;
  const D8 d8;
  v = hn::Min(hn::Max(v, hn::Set(d, q.lo)), hn::Set(d, q.hi));
  const VI r = hn::Sub(hn::BitCast(di, hn::Add(v, hn::Set(d, kRoundMagic))), hn::Set(di, kRoundMagicBits));
  const auto bytes = hn::DemoteTo(d8, hn::Add(r, hn::Set(di, q.zero)));
  hn::StoreU(hn::Xor(bytes, hn::Set(d8, flip)), d8, y);
}

// QLinearAdd's float value of Lanes(DF) pairs of centred values, a's as floats (exact: whole
// numbers within +-255).
HWY_INLINE VF add_value(VF va, VI vb, VF a_ratio, VF b_ratio) {
  return hn::Add(hn::Mul(va, a_ratio), hn::Mul(hn::ConvertTo(DF(), vb), b_ratio));
}

// The float value of Lanes(DF) pairs of centred values (a - a_zero, b - b_zero).
template <bool kMul>
HWY_INLINE VF binary_value(VI va, VI vb, VF a_ratio, VF b_ratio, VF ratio) {
  const DF d;
  if constexpr (kMul) return hn::Mul(hn::ConvertTo(d, hn::Mul(va, vb)), ratio);
  return add_value(hn::ConvertTo(d, va), vb, a_ratio, b_ratio);
}

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// 64 values (v[j]: the j-th 16) as 64 uint8-domain bytes, bounded by saturating packs rather than
// a float max and min per vector: min(hi, v) keeps a NaN (MINPS returns its second operand then),
// which converts to INT_MIN; everything below lo saturates to byte 0 (= zero + lo) on the way
// down, so the bytes are store_requantized's. kClampHigh false: the values are known to lie
// within +-2^30 (values_within_int32), and the packs saturate them above as min(hi, v) would.
template <bool kClampHigh = true>
HWY_INLINE __m512i requantize_64(const VF* v, __m512 hi, __m512i zero16) {
  __m512i r[4];
  for (int j = 0; j < 4; ++j) r[j] = _mm512_cvtps_epi32(kClampHigh ? _mm512_min_ps(hi, v[j].raw) : v[j].raw);
  return pack_rounded(r[0], r[1], r[2], r[3], zero16, false);
}
#endif

// y[i] = op(a[i * a_step], b[i * b_step]) for i < n; steps 0 (broadcast) or 1. kFlip: int8 data
// (p.flip 0x80); uint8 data skips the flips. kContiguous: both steps 1.
template <bool kMul, bool kFlip, bool kContiguous>
HWY_INLINE void binary_vectors(const uint8_t* HWY_RESTRICT a, int64_t a_step, const uint8_t* HWY_RESTRICT b,
                               int64_t b_step, uint8_t* HWY_RESTRICT y, int64_t n, const BinaryParams& p) {
  const DF d;
  const DI di;
  const int64_t L = (int64_t)hn::Lanes(d);
  const uint8_t flip = kFlip ? p.flip : 0;
  const VI za = hn::Set(di, p.a_zero), zb = hn::Set(di, p.b_zero);
  const VI a_fixed = hn::Sub(hn::Set(di, (int32_t)(uint8_t)(a[0] ^ flip)), za);
  const VI b_fixed = hn::Sub(hn::Set(di, (int32_t)(uint8_t)(b[0] ^ flip)), zb);
  const VF a_ratio = hn::Set(d, p.a_ratio), b_ratio = hn::Set(d, p.b_ratio), ratio = hn::Set(d, p.ratio);
  auto value_at = [&](int64_t i) {
    const VI va = kContiguous || a_step ? hn::Sub(load_bytes(a + i, flip), za) : a_fixed;
    const VI vb = kContiguous || b_step ? hn::Sub(load_bytes(b + i, flip), zb) : b_fixed;
    return binary_value<kMul>(va, vb, a_ratio, b_ratio, ratio);
  };
  int64_t i = 0;
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  const __m512 hi = _mm512_set1_ps(p.out.hi);
  const __m512i zero16 = _mm512_set1_epi16((short)p.out.zero);
  const __m512i flip_bytes = _mm512_set1_epi8((char)flip);
  auto steps_of_64 = [&](auto clamp_high) {
    for (; i + 4 * L <= n; i += 4 * L) {
      const VF v[4] = {value_at(i), value_at(i + L), value_at(i + 2 * L), value_at(i + 3 * L)};
      const __m512i bytes = requantize_64<decltype(clamp_high)::value>(v, hi, zero16);
      _mm512_storeu_si512(y + i, kFlip ? _mm512_xor_si512(bytes, flip_bytes) : bytes);
    }
  };
  if (values_within_int32(p, kMul)) steps_of_64(std::false_type());
  else steps_of_64(std::true_type());
#endif
  for (; i < n; i += L) store_requantized(value_at(i), p.out, flip, y + i);
}

template <bool kMul>
void binary_span(const uint8_t* a, int64_t a_step, const uint8_t* b, int64_t b_step, uint8_t* y, int64_t n,
                 const BinaryParams& p) {
  const bool contiguous = a_step && b_step;
  if (p.flip) {
    if (contiguous) binary_vectors<kMul, true, true>(a, a_step, b, b_step, y, n, p);
    else binary_vectors<kMul, true, false>(a, a_step, b, b_step, y, n, p);
  } else {
    if (contiguous) binary_vectors<kMul, false, true>(a, a_step, b, b_step, y, n, p);
    else binary_vectors<kMul, false, false>(a, a_step, b, b_step, y, n, p);
  }
}

template <bool kMul>
void binary_row(const uint8_t* a, int64_t a_step, const uint8_t* b, int64_t b_step, uint8_t* y, int64_t n,
                const BinaryParams& p) {
  const int64_t L = (int64_t)hn::Lanes(DF());
  const int64_t body = n / L * L;
  if (body) binary_span<kMul>(a, a_step, b, b_step, y, body, p);
  if (body == n) return;
  uint8_t ta[kTailBytes] = {}, tb[kTailBytes] = {}, ty[kTailBytes];
  const int64_t rest = n - body;
  std::memcpy(ta, a + body * a_step, (size_t)(a_step ? rest : 1));
  std::memcpy(tb, b + body * b_step, (size_t)(b_step ? rest : 1));
  binary_span<kMul>(ta, a_step, tb, b_step, ty, L, p);
  std::memcpy(y + body, ty, (size_t)rest);
}

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// QLinearAdd of two rows of 32 values: a's centred values as floats (a[0], a[1]: row 0's 32, a[2],
// a[3]: row 1's), b's bytes at b0 and b1; the bytes stored at y0 and y1, in the columns of `mask`
// (b read only there). binary_vectors' arithmetic, 64 values at once. kPlain: uint8 data and all
// 32 columns (no flips, no masks); kClampHigh: as requantize_64's (clamp_high says which).
struct AddTwoRows {
  explicit AddTwoRows(const BinaryParams& p)
      : zb(hn::Set(DI(), p.b_zero)), a_ratio(hn::Set(DF(), p.a_ratio)), b_ratio(hn::Set(DF(), p.b_ratio)),
        hi(_mm512_set1_ps(p.out.hi)), zero16(_mm512_set1_epi16((short)p.out.zero)),
        flip_bytes(_mm512_set1_epi8((char)p.flip)), flip(p.flip), clamp_high(!values_within_int32(p, false)) {}

  template <bool kPlain, bool kClampHigh>
  void run(const VF* a, const uint8_t* b0, const uint8_t* b1, uint8_t* y0, uint8_t* y1, __mmask32 mask) const {
    const uint8_t* b_at[4] = {b0, b0 + 16, b1, b1 + 16};
    VF v[4];
    for (int j = 0; j < 4; ++j) {
      __m512i b;
      if constexpr (kPlain) {
        b = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)b_at[j]));
      } else {
        const __mmask16 lanes = (__mmask16)(j % 2 ? mask >> 16 : mask);
        b = _mm512_cvtepu8_epi32(
            _mm_xor_si128(_mm_maskz_loadu_epi8(lanes, b_at[j]), _mm512_castsi512_si128(flip_bytes)));
      }
      v[j] = add_value(a[j], hn::Sub(VI{b}, zb), a_ratio, b_ratio);
    }
    const __m512i bytes = requantize_64<kClampHigh>(v, hi, zero16);
    if constexpr (kPlain) {
      _mm256_storeu_si256((__m256i*)y0, _mm512_castsi512_si256(bytes));
      _mm256_storeu_si256((__m256i*)y1, _mm512_extracti64x4_epi64(bytes, 1));
    } else {
      const __m512i flipped = _mm512_xor_si512(bytes, flip_bytes);
      _mm256_mask_storeu_epi8(y0, mask, _mm512_castsi512_si256(flipped));
      _mm256_mask_storeu_epi8(y1, mask, _mm512_extracti64x4_epi64(flipped, 1));
    }
  }

  VI zb;
  VF a_ratio, b_ratio;
  __m512 hi;
  __m512i zero16, flip_bytes;
  uint8_t flip;
  bool clamp_high;
};
#endif

}  // namespace quantized_binary
}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#endif  // MNNPY_QUANTIZED_ELEMENTWISE_INL_H_
