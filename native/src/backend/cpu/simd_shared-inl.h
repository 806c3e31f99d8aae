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
  V poly = hn::Set(d, kP[9]);
  for (int k = 8; k >= 0; --k) poly = hn::MulAdd(poly, t, hn::Set(d, kP[k]));
  // exp's argument stays above -88 (where float exp underflows) for |x| below about 13.
  const V arg = hn::Max(hn::NegMulAdd(z, z, poly), hn::Set(d, -87.0f));
  const V tail = hn::Mul(hn::Set(d, 0.5f), hn::Mul(t, hn::Exp(d, arg)));  // 0.5 erfc(z) = Phi(-|x|)
  const V phi = hn::IfThenElse(hn::Lt(x, hn::Zero(d)), tail, hn::Sub(hn::Set(d, 1.0f), tail));
  return hn::Mul(x, phi);
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#endif  // MNNPY_SIMD_SHARED_INL_H_
