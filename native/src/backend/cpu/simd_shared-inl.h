// SIMD pieces shared by several kernel files, compiled once per Highway target (include this
// after hwy/foreach_target.h, like Highway's own -inl.h headers).
#if defined(MNNPY_SIMD_SHARED_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MNNPY_SIMD_SHARED_INL_H_
#undef MNNPY_SIMD_SHARED_INL_H_
#else
#define MNNPY_SIMD_SHARED_INL_H_
#endif

#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <cmath>

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The GEMM micro-kernel shape of this target, used by matmul and convolution alike. A tile is
// kPanels packed panels of 64 bytes wide (one or two) and kMR rows tall, chosen so that the
// accumulators, the B vectors and one broadcast fit in the register file (16 vector registers
// before AVX-512, 32 with it).
template <class T> struct GemmTile {
  static constexpr int kPanel = (int)(64 / sizeof(T));
  static constexpr int kLanes = (int)hn::MaxLanes(hn::ScalableTag<T>());
  static constexpr int kVecPerPanel = kPanel / kLanes;
  static constexpr int kPanels = kVecPerPanel == 1 ? 2 : 1;
#if HWY_TARGET == HWY_SCALAR || HWY_TARGET == HWY_EMU128
  static constexpr int kMR = 4;
#elif HWY_TARGET <= HWY_AVX3
  static constexpr int kMR = 12;
#else
  static constexpr int kMR = kVecPerPanel * kPanels <= 2 ? 6 : 3;
#endif
  static constexpr int kNR = kPanels * kPanel;
};

// a * b + c rounded once, on every target: Highway's portable targets (SCALAR, EMU128) round the
// product first in MulAdd, so kernels whose results must agree across targets call this.
template <class V>
HWY_INLINE V FusedMulAdd(V a, V b, V c) {
#if HWY_TARGET == HWY_SCALAR || HWY_TARGET == HWY_EMU128
  using T = hn::TFromV<V>;
  const hn::DFromV<V> d;
  constexpr size_t kMax = hn::MaxLanes(d);
  HWY_ALIGN T x[kMax], y[kMax], z[kMax];
  hn::Store(a, d, x);
  hn::Store(b, d, y);
  hn::Store(c, d, z);
  for (size_t i = 0; i < kMax; ++i) x[i] = std::fma(x[i], y[i], z[i]);
  return hn::Load(d, x);
#else
  return hn::MulAdd(a, b, c);
#endif
}

// The inner loop of the convolution micro-kernels: over kc depth steps,
// acc[i][v] += a[k * a_stride + i] * (vector v of row k of the packed panels b0, then b1).
// Panels are GemmTile<float>::kPanel floats wide; b1 is read only when NV spans two panels.
template <int M, int NV, class D, class V>
HWY_INLINE void AccumulatePanels(D d, V (&acc)[M][NV], int64_t kc, const float* HWY_RESTRICT a, int64_t a_stride,
                                 const float* HWY_RESTRICT b0, const float* HWY_RESTRICT b1) {
  constexpr int kPanel = GemmTile<float>::kPanel, L = GemmTile<float>::kLanes, VP = GemmTile<float>::kVecPerPanel;
  for (int i = 0; i < M; ++i)
    for (int v = 0; v < NV; ++v) acc[i][v] = hn::Zero(d);
  for (int64_t k = 0; k < kc; ++k) {
    V bv[NV];
    for (int v = 0; v < NV; ++v) bv[v] = hn::LoadU(d, (v < VP ? b0 : b1) + k * kPanel + (v % VP) * L);
    const float* ak = a + k * a_stride;
    for (int i = 0; i < M; ++i) {
      const V ai = hn::Set(d, ak[i]);
      for (int v = 0; v < NV; ++v) acc[i][v] = hn::MulAdd(ai, bv[v], acc[i][v]);
    }
  }
}

// exp for float32 lanes with x in [-87, 88] (callers keep it there): x = n ln 2 + r with
// |r| <= ln 2 / 2, exp(r) by its Taylor polynomial to r^7 (truncation below 1.1e-8 relative), 2^n
// built in the exponent bits (n in [-126, 127]: always a normal number). Shorter dependency
// chains than Highway's Exp, which also covers the whole float range.
template <class D, class V> HWY_INLINE V ExpFloat32(D d, V x) {
  const hn::RebindToSigned<D> di;
  const V n = hn::Round(hn::Mul(x, hn::Set(d, 1.44269504088896341f)));
  V r = hn::NegMulAdd(n, hn::Set(d, 0.693145751953125f), x);  // ln 2 in two parts: n * hi is exact
  r = hn::NegMulAdd(n, hn::Set(d, 1.428606765330187e-06f), r);
  const V r2 = hn::Mul(r, r);
  const V p01 = hn::Add(hn::Set(d, 1.0f), r);
  const V p23 = hn::MulAdd(hn::Set(d, 1.0f / 6), r, hn::Set(d, 0.5f));
  const V p45 = hn::MulAdd(hn::Set(d, 1.0f / 120), r, hn::Set(d, 1.0f / 24));
  const V p67 = hn::MulAdd(hn::Set(d, 1.0f / 5040), r, hn::Set(d, 1.0f / 720));
  const V poly = hn::MulAdd(hn::MulAdd(hn::MulAdd(p67, r2, p45), r2, p23), r2, p01);
  const auto bits = hn::ShiftLeft<23>(hn::Add(hn::ConvertTo(di, n), hn::Set(di, 127)));
  return hn::Mul(poly, hn::BitCast(d, bits));
}

// exp for float32 lanes inside [-87, 88] (ExpFloat32), or for doubles (Highway's Exp).
template <class D, class V> HWY_INLINE V ExpInRange(D d, V x) {
  if constexpr (sizeof(hn::TFromD<D>) == 4) return ExpFloat32(d, x);
  else return hn::Exp(d, x);
}

// erf for float32 lanes. |x| <= 1: the Taylor series in x^2 to the x^21 term (error below
// 2e-8). |x| > 1: Abramowitz & Stegun 7.1.26, 1 - t P(t) exp(-x^2) with t = 1 / (1 + p|x|)
// (absolute error below 1.5e-7, under 2 ulp of results there, which lie in [0.84, 1]).
template <class D, class V> HWY_INLINE V ErfFloat32(D d, V x) {
  static constexpr float kTaylor[] = {1.1283791670955126f,     -0.37612638903183754f,  0.11283791670955126f,
                                      -0.026866170645131252f,  0.0052239776254421879f, -0.00085483270234508522f,
                                      0.00012055332981789664f, -1.492565035840625e-05f, 1.6462114365889246e-06f,
                                      -1.6365844691234924e-07f, 1.4807192815879218e-08f};
  const V one = hn::Set(d, 1.0f);
  const V ax = hn::Abs(x);
  const V x2 = hn::Mul(x, x);
  V series = hn::Set(d, kTaylor[10]);
  for (int k = 9; k >= 0; --k) series = hn::MulAdd(series, x2, hn::Set(d, kTaylor[k]));
  const V small = hn::Mul(series, x);
  const V t = hn::Div(one, hn::MulAdd(hn::Set(d, 0.3275911f), ax, one));
  V poly = hn::Set(d, 1.061405429f);
  poly = hn::MulAdd(poly, t, hn::Set(d, -1.453152027f));
  poly = hn::MulAdd(poly, t, hn::Set(d, 1.421413741f));
  poly = hn::MulAdd(poly, t, hn::Set(d, -0.284496736f));
  poly = hn::MulAdd(poly, t, hn::Set(d, 0.254829592f));
  poly = hn::Mul(poly, t);
  const V tail = hn::Exp(d, hn::Neg(hn::Min(x2, hn::Set(d, 87.0f))));
  const V large = hn::CopySign(hn::NegMulAdd(poly, tail, one), x);
  return hn::IfThenElse(hn::Le(ax, one), small, large);
}

// x Phi(x) = 0.5 x (1 + erf(x / sqrt 2)), the exact (erf) form of GELU. Phi comes from erfc of
// |x| / sqrt 2 by the Chebyshev-fitted form t exp(-z^2 + P(t)), t = 1 / (1 + z / 2) (Numerical
// Recipes' erfcc, fractional error below 1.2e-7 for every z >= 0): one branch, so it costs about
// half of erf's two, and the left tail keeps its relative accuracy.
template <class D, class V> HWY_INLINE V GeluFloat32(D d, V x) {
  static constexpr float kP[] = {-1.26551223f, 1.00002368f, 0.37409196f,  0.09678418f, -0.18628806f,
                                 0.27886807f,  -1.13520398f, 1.48851587f, -0.82215223f, 0.17087277f};
  const V z = hn::Mul(hn::Abs(x), hn::Set(d, 0.70710678118654752440f));
  const V t = hn::Div(hn::Set(d, 1.0f), hn::MulAdd(hn::Set(d, 0.5f), z, hn::Set(d, 1.0f)));
  // P(t) by Estrin's scheme: pairs, then powers of t; about half the dependent steps of Horner's.
  const V t2 = hn::Mul(t, t), t4 = hn::Mul(t2, t2);
  V pair[5];
  for (int k = 0; k < 5; ++k) pair[k] = hn::MulAdd(hn::Set(d, kP[2 * k + 1]), t, hn::Set(d, kP[2 * k]));
  const V low = hn::MulAdd(pair[1], t2, pair[0]), high = hn::MulAdd(pair[3], t2, pair[2]);
  const V poly = hn::MulAdd(hn::Mul(t4, t4), pair[4], hn::MulAdd(high, t4, low));
  // exp's argument stays above -88 (where float exp underflows) for |x| below about 13.
  const V arg = hn::Max(hn::NegMulAdd(z, z, poly), hn::Set(d, -87.0f));
  const V tail = hn::Mul(hn::Set(d, 0.5f), hn::Mul(t, ExpFloat32(d, arg)));  // 0.5 erfc(z) = Phi(-|x|)
  const V phi = hn::IfThenElse(hn::Lt(x, hn::Zero(d)), tail, hn::Sub(hn::Set(d, 1.0f), tail));
  return hn::Mul(x, phi);
}

// Nearest integers (ties to even) of values known to lie well within int32's range: the plain
// x86 conversion, without the overflow fix-up that NearestInt adds.
template <class V>
HWY_INLINE hn::Vec<hn::RebindToSigned<hn::DFromV<V>>> round_in_range(V v) {
#if HWY_TARGET == HWY_AVX2
  if constexpr (sizeof(V) == 32) return hn::Vec<hn::RebindToSigned<hn::DFromV<V>>>{_mm256_cvtps_epi32(v.raw)};
#elif HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
  if constexpr (sizeof(V) == 64) return hn::Vec<hn::RebindToSigned<hn::DFromV<V>>>{_mm512_cvtps_epi32(v.raw)};
#endif
  return hn::NearestInt(v);
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#endif  // MNNPY_SIMD_SHARED_INL_H_
