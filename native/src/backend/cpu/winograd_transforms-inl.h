// The 1-D input and output transforms of Winograd F(4, 3) and F(2, 3), over whole SIMD vectors
// (each lane its own tile or channel), compiled once per Highway target: the NCHW kernel
// (winograd.cpp) and the blocked one (winograd_blocked.cpp) apply them along columns, then rows
// (the 2-D forms below).
// Include after hwy/foreach_target.h.
#if defined(MNNPY_WINOGRAD_TRANSFORMS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MNNPY_WINOGRAD_TRANSFORMS_INL_H_
#undef MNNPY_WINOGRAD_TRANSFORMS_INL_H_
#else
#define MNNPY_WINOGRAD_TRANSFORMS_INL_H_
#endif

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// B^T applied to one column (or row) of a patch of OUT + 2 values. F(2, 3) uses the interpolation
// points 0, 1, -1 and infinity; F(4, 3) the points 0, 1, -1, 2, -2 and infinity.
template <int OUT, class D, class V> HWY_INLINE void input_transform_1d(D d, const V* in, V* out) {
  static_assert(OUT == 2 || OUT == 4, "F(2, 3) or F(4, 3)");
  if constexpr (OUT == 2) {
    (void)d;
    out[0] = hn::Sub(in[0], in[2]);
    out[1] = hn::Add(in[1], in[2]);
    out[2] = hn::Sub(in[2], in[1]);
    out[3] = hn::Sub(in[1], in[3]);
  } else {
    const V two = hn::Set(d, 2.f), four = hn::Set(d, 4.f), minus_five = hn::Set(d, -5.f);
    const V d4_minus_d2 = hn::Sub(in[4], in[2]);
    const V d1_minus_d3 = hn::Sub(in[1], in[3]);
    out[0] = hn::MulAdd(four, in[0], hn::MulAdd(minus_five, in[2], in[4]));
    out[1] = hn::NegMulAdd(four, hn::Add(in[1], in[2]), hn::Add(in[3], in[4]));
    out[2] = hn::MulAdd(four, hn::Sub(in[1], in[2]), hn::Sub(in[4], in[3]));
    out[3] = hn::NegMulAdd(two, d1_minus_d3, d4_minus_d2);
    out[4] = hn::MulAdd(two, d1_minus_d3, d4_minus_d2);
    out[5] = hn::MulAdd(four, in[1], hn::MulAdd(minus_five, in[3], in[5]));
  }
}

// A^T applied to one column (or row) of OUT + 2 transformed products: OUT output values.
template <int OUT, class D, class V> HWY_INLINE void output_transform_1d(D d, const V* m, V* out) {
  static_assert(OUT == 2 || OUT == 4, "F(2, 3) or F(4, 3)");
  if constexpr (OUT == 2) {
    (void)d;
    out[0] = hn::Add(hn::Add(m[0], m[1]), m[2]);
    out[1] = hn::Sub(hn::Sub(m[1], m[2]), m[3]);
  } else {
    const V sum12 = hn::Add(m[1], m[2]), diff12 = hn::Sub(m[1], m[2]);
    const V sum34 = hn::Add(m[3], m[4]), diff34 = hn::Sub(m[3], m[4]);
    out[0] = hn::Add(hn::Add(m[0], sum12), sum34);
    out[1] = hn::MulAdd(hn::Set(d, 2.f), diff34, diff12);
    out[2] = hn::MulAdd(hn::Set(d, 4.f), sum34, sum12);
    out[3] = hn::Add(hn::MulAdd(hn::Set(d, 8.f), diff34, diff12), m[5]);
  }
}

// B^T d B of a patch of (OUT + 2) x (OUT + 2) vectors (row-major): columns first, then rows;
// `out` gets the transformed points in the same order.
template <int OUT, class D, class V> HWY_INLINE void input_transform_2d(D d, const V* patch, V* out) {
  constexpr int kPatch = OUT + 2;
  V cols[kPatch * kPatch];
  for (int q = 0; q < kPatch; ++q) {
    V in[kPatch], col[kPatch];
    for (int r = 0; r < kPatch; ++r) in[r] = patch[r * kPatch + q];
    input_transform_1d<OUT>(d, in, col);
    for (int r = 0; r < kPatch; ++r) cols[r * kPatch + q] = col[r];
  }
  for (int r = 0; r < kPatch; ++r) input_transform_1d<OUT>(d, cols + r * kPatch, out + r * kPatch);
}

// A^T m A of (OUT + 2) x (OUT + 2) transformed products (row-major): `out` gets the OUT x OUT
// output pixels, row-major.
template <int OUT, class D, class V> HWY_INLINE void output_transform_2d(D d, const V* m, V* out) {
  constexpr int kPatch = OUT + 2;
  V cols[OUT * kPatch];
  for (int q = 0; q < kPatch; ++q) {
    V in[kPatch], col[OUT];
    for (int p = 0; p < kPatch; ++p) in[p] = m[p * kPatch + q];
    output_transform_1d<OUT>(d, in, col);
    for (int p = 0; p < OUT; ++p) cols[p * kPatch + q] = col[p];
  }
  for (int p = 0; p < OUT; ++p) output_transform_1d<OUT>(d, cols + p * kPatch, out + p * OUT);
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#endif  // include guard
