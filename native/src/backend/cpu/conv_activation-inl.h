// The fused activations of convolution epilogues (ConvActivation codes from conv.h), compiled once
// per Highway target. Shared by the GEMM, depthwise and Winograd kernels so that every scheme
// rounds the same way. Include after hwy/foreach_target.h.
#if defined(MNNPY_CONV_ACTIVATION_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MNNPY_CONV_ACTIVATION_INL_H_
#undef MNNPY_CONV_ACTIVATION_INL_H_
#else
#define MNNPY_CONV_ACTIVATION_INL_H_
#endif

#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>
#include "backend/cpu/simd_shared-inl.h"

#include "backend/cpu/conv.h"

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class D, class V> HWY_INLINE V sigmoid(D d, V v) {
  // exp(-x) stays finite for |x| <= 80; beyond, the clamped value is 0 or 1 to float precision.
  const V x = hn::Min(hn::Max(v, hn::Set(d, -80.f)), hn::Set(d, 80.f));
  const V one = hn::Set(d, 1.f);
  return hn::Div(one, hn::Add(one, ExpFloat32(d, hn::Neg(x))));
}

template <class D, class V> HWY_INLINE V activate(D d, V v, const ConvActivation& act) {
  switch (act.code) {
    case kConvActRelu: return hn::Max(v, hn::Zero(d));
    case kConvActClip: return hn::Min(hn::Max(v, hn::Set(d, act.p0)), hn::Set(d, act.p1));
    case kConvActSigmoid: return sigmoid(d, v);
    case kConvActSilu: return hn::Mul(v, sigmoid(d, v));
    case kConvActHardSwish: {
      const V gate = hn::Min(hn::Max(hn::Add(v, hn::Set(d, 3.f)), hn::Zero(d)), hn::Set(d, 6.f));
      return hn::Mul(v, hn::Mul(gate, hn::Set(d, 1.f / 6.f)));
    }
    case kConvActGelu: return GeluFloat32(d, v);
    case kConvActHardSigmoid:
      return hn::Max(hn::Zero(d), hn::Min(hn::Set(d, 1.f), hn::MulAdd(hn::Set(d, act.p0), v, hn::Set(d, act.p1))));
    default: return v;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#endif  // MNNPY_CONV_ACTIVATION_INL_H_
