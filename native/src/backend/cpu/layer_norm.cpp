// Layer normalization kernels, compiled per SIMD target and dispatched at run time. A row is read
// three times while it sits in L1 (sum, sum of squared deviations, output): the two-pass variance
// keeps float32 accuracy where E[x^2] - E[x]^2 would cancel.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/layer_norm.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>

#include "backend/cpu/layer_norm.h"
#include "mnnpy/thread_pool.h"

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Sum of f(x[i]) over the row in four vector accumulators (independent chains), then the tail.
template <class F>
HWY_INLINE float row_sum(const float* HWY_RESTRICT x, int64_t n, F f) {
  const hn::ScalableTag<float> d;
  const int64_t L = (int64_t)hn::Lanes(d);
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    a0 = hn::Add(a0, f(d, hn::LoadU(d, x + i)));
    a1 = hn::Add(a1, f(d, hn::LoadU(d, x + i + L)));
    a2 = hn::Add(a2, f(d, hn::LoadU(d, x + i + 2 * L)));
    a3 = hn::Add(a3, f(d, hn::LoadU(d, x + i + 3 * L)));
  }
  for (; i + L <= n; i += L) a0 = hn::Add(a0, f(d, hn::LoadU(d, x + i)));
  float total = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
  for (; i < n; ++i) total += hn::GetLane(f(hn::CappedTag<float, 1>(), hn::Set(hn::CappedTag<float, 1>(), x[i])));
  return total;
}

void LayerNormImpl(const float* x, const float* gamma, const float* beta, int64_t rows, int64_t dim, float epsilon,
                   float* y, ThreadPool* pool) {
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 14) / std::max<int64_t>(1, dim));
  parallel_for(pool, rows, grain, [&](int64_t r0, int64_t r1) {
    const hn::ScalableTag<float> d;
    const int64_t L = (int64_t)hn::Lanes(d);
    for (int64_t r = r0; r < r1; ++r) {
      const float* HWY_RESTRICT row = x + r * dim;
      float* HWY_RESTRICT out = y + r * dim;
      const float mean = row_sum(row, dim, [](auto dd, auto v) { return v; }) / (float)dim;
      const float var = row_sum(row, dim, [mean](auto dd, auto v) {
                          const auto c = hn::Sub(v, hn::Set(dd, mean));
                          return hn::Mul(c, c);
                        }) / (float)dim;
      const float inv_std = 1.0f / std::sqrt(var + epsilon);
      const auto vmean = hn::Set(d, mean), vinv = hn::Set(d, inv_std);
      int64_t i = 0;
      for (; i + L <= dim; i += L) {
        auto v = hn::Mul(hn::Sub(hn::LoadU(d, row + i), vmean), vinv);
        if (gamma) v = hn::Mul(v, hn::LoadU(d, gamma + i));
        if (beta) v = hn::Add(v, hn::LoadU(d, beta + i));
        hn::StoreU(v, d, out + i);
      }
      for (; i < dim; ++i) {
        float v = (row[i] - mean) * inv_std;
        if (gamma) v *= gamma[i];
        if (beta) v += beta[i];
        out[i] = v;
      }
    }
  });
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
HWY_EXPORT(LayerNormImpl);

void layer_norm(const float* x, const float* gamma, const float* beta, int64_t rows, int64_t d, float epsilon,
                float* y, ThreadPool* pool) {
  HWY_DYNAMIC_DISPATCH(LayerNormImpl)(x, gamma, beta, rows, d, epsilon, y, pool);
}

}  // namespace cpu
}  // namespace mnnpy
#endif
