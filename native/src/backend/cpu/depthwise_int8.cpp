// Depthwise 8-bit NHWC convolution (depthwise_int8.h), compiled per SIMD target. Threads take
// output rows; for each output pixel the channels run in vectors of int32 lanes, every tap whose
// input pixel is inside the image adding its centred product (padding, x_zero centred, adds 0),
// then the row of sums is requantized.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/depthwise_int8.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <vector>

#include "backend/cpu/depthwise_int8.h"
#include "backend/cpu/requant_int8-inl.h"
#include "backend/cpu/thread_buffers.h"
#include "mnnpy/thread_pool.h"

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class T>
void depthwise_rows(const DepthwiseInt8Nhwc& a, const float* multiplier_f, int64_t r0, int64_t r1,
                    int32_t* HWY_RESTRICT sums) {
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
  // Offsets (in bytes of x) of the taps inside the image for the current pixel, and their rows of weights.
  std::vector<int64_t> offsets((size_t)(KH * KW));
  std::vector<const int32_t*> weights((size_t)(KH * KW));
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t n = r / OH, oh = r % OH;
    const int64_t ih0 = oh * a.stride_h - a.pad_top;
    for (int64_t ow = 0; ow < OW; ++ow) {
      const int64_t iw0 = ow * a.stride_w - a.pad_left;
      int64_t count = 0;
      for (int64_t ki = 0; ki < KH; ++ki) {
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
      for (; c + L <= C; c += L) {
        auto acc = hn::LoadU(di, a.bias + c);
        for (int64_t t = 0; t < count; ++t) {
          const auto xv = hn::Sub(hn::PromoteTo(di, hn::LoadU(d8, x + offsets[t] + c)), zero_v);
          acc = hn::Add(acc, hn::Mul(xv, hn::LoadU(di, weights[t] + c)));
        }
        hn::StoreU(acc, di, sums + c);
      }
      for (; c < C; ++c) {  // the channels past the last whole vector, with the same int32 arithmetic
        uint32_t acc = (uint32_t)a.bias[c];
        for (int64_t t = 0; t < count; ++t)
          acc += (uint32_t)(((int32_t)x[offsets[t] + c] - x_zero) * weights[t][c]);
        sums[c] = (int32_t)acc;
      }
      uint8_t* out = y + ((n * OH + oh) * OW + ow) * C;
      if (multiplier_f) RequantRowFloat(sums, multiplier_f, a.multiplier, C, rq, out);
      else RequantRow(sums, a.multiplier, C, rq, out);
    }
  }
}

void DepthwiseInt8NhwcImpl(const DepthwiseInt8Nhwc& a, ThreadPool* pool) {
  const int64_t rows = a.batch * a.out_h;
  const int64_t work = std::max<int64_t>(1, a.out_w * a.channels * a.kernel_h * a.kernel_w);
  // The multipliers as float32 when they all are float32 values (RequantRowFloat's condition).
  std::vector<float> multiplier_f((size_t)a.channels);
  bool float_ok = true;
  for (int64_t c = 0; c < a.channels; ++c) {
    multiplier_f[c] = (float)a.multiplier[c];
    float_ok &= (double)multiplier_f[c] == a.multiplier[c];
  }
  const float* mf = float_ok ? multiplier_f.data() : nullptr;
  parallel_for(pool, rows, std::max<int64_t>(1, (int64_t(1) << 15) / work), [&](int64_t r0, int64_t r1) {
    std::vector<int32_t> sums((size_t)a.channels);
    if (a.x_signed) depthwise_rows<int8_t>(a, mf, r0, r1, sums.data());
    else depthwise_rows<uint8_t>(a, mf, r0, r1, sums.data());
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
