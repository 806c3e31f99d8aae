// The fused activation over a register tile of the blocked convolution kernels, compiled once per
// Highway target. Include after hwy/foreach_target.h.
#if defined(MNNPY_CONV_BLOCKED_EPILOGUE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MNNPY_CONV_BLOCKED_EPILOGUE_INL_H_
#undef MNNPY_CONV_BLOCKED_EPILOGUE_INL_H_
#else
#define MNNPY_CONV_BLOCKED_EPILOGUE_INL_H_
#endif

#include <hwy/highway.h>

#include "backend/cpu/conv_activation-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// activate() with its code a compile-time constant, so that its switch folds away.
template <int Code, int N, class D, class V>
HWY_INLINE void activate_with_code(D d, V* acc, const ConvActivation& act) {
  const ConvActivation fixed{Code, act.p0, act.p1};
#pragma GCC unroll 64
  for (int i = 0; i < N; ++i) acc[i] = activate(d, acc[i], fixed);
}

// Applies act to N accumulators of a tile (kept in registers) when it is one of the cheap
// activations, switching on the code once per tile, and returns true. The activations built on exp
// or erf are left to activate_stored() once the tile is stored: their math dwarfs the trip through
// L1, and the tiles stay small.
template <int N, class D, class V>
HWY_INLINE bool activate_cheap(D d, V* acc, const ConvActivation& act) {
  switch (act.code) {
    case kConvActNone: return true;
    case kConvActRelu: activate_with_code<kConvActRelu, N>(d, acc, act); return true;
    case kConvActClip: activate_with_code<kConvActClip, N>(d, acc, act); return true;
    case kConvActHardSwish: activate_with_code<kConvActHardSwish, N>(d, acc, act); return true;
    case kConvActHardSigmoid: activate_with_code<kConvActHardSigmoid, N>(d, acc, act); return true;
    default: return false;
  }
}

// act on `vectors` vectors of `rows` rows of a stored tile, rows `row_stride` floats apart.
template <class D>
HWY_NOINLINE void activate_stored(D d, float* y, int64_t rows, int64_t row_stride, int64_t vectors,
                                  const ConvActivation& act) {
  const int64_t L = (int64_t)hn::Lanes(d);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < vectors * L; i += L) hn::StoreU(activate(d, hn::LoadU(d, y + r * row_stride + i), act), d, y + r * row_stride + i);
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#endif  // MNNPY_CONV_BLOCKED_EPILOGUE_INL_H_
