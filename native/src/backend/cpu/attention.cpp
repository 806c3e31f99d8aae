// Scaled dot-product attention kernels, compiled per SIMD target and dispatched at run time.
// Tasks are (batch, block of query rows): the block's scores (rows x T) are one GEMM into a
// per-thread buffer, each row is scaled, masked and turned into probabilities in place, and a
// second GEMM multiplies them into the output rows.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/attention.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include "backend/cpu/simd_shared-inl.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "backend/cpu/attention.h"
#include "backend/cpu/gemm.h"
#include "backend/cpu/thread_buffers.h"
#include "mnnpy/thread_pool.h"

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// row[t] = softmax over t of (row[t] * scale + mask[t * mask_stride]); mask may be null.
void softmax_row(float* HWY_RESTRICT row, int64_t n, float scale, const float* mask, int64_t mask_stride) {
  const hn::ScalableTag<float> d;
  const int64_t L = (int64_t)hn::Lanes(d);
  if (mask && mask_stride == 1) {
    int64_t t = 0;
    for (; t + L <= n; t += L)
      hn::StoreU(hn::MulAdd(hn::LoadU(d, row + t), hn::Set(d, scale), hn::LoadU(d, mask + t)), d, row + t);
    for (; t < n; ++t) row[t] = std::fma(row[t], scale, mask[t]);  // as the lanes round
  } else if (mask) {
    const float m = mask[0];  // a mask broadcast along the keys
    for (int64_t t = 0; t < n; ++t) row[t] = row[t] * scale + m;
  } else if (scale != 1.f) {
    for (int64_t t = 0; t < n; ++t) row[t] *= scale;
  }
  auto vmax = hn::Set(d, -std::numeric_limits<float>::infinity());
  int64_t t = 0;
  for (; t + L <= n; t += L) vmax = hn::Max(vmax, hn::LoadU(d, row + t));
  float mx = hn::GetLane(hn::MaxOfLanes(d, vmax));
  for (; t < n; ++t) mx = std::max(mx, row[t]);
  auto vsum = hn::Zero(d);
  const auto vmx = hn::Set(d, mx);
  t = 0;
  for (; t + L <= n; t += L) {
    // Below -87 exp is under 2e-38 of the row's largest term: clamped there, as ExpFloat32 needs.
    const auto e = ExpFloat32(d, hn::Max(hn::Sub(hn::LoadU(d, row + t), vmx), hn::Set(d, -87.f)));
    hn::StoreU(e, d, row + t);
    vsum = hn::Add(vsum, e);
  }
  float sum = hn::GetLane(hn::SumOfLanes(d, vsum));
  for (; t < n; ++t) {
    row[t] = std::exp(row[t] - mx);
    sum += row[t];
  }
  const auto inv = hn::Set(d, 1.f / sum);
  t = 0;
  for (; t + L <= n; t += L) hn::StoreU(hn::Mul(hn::LoadU(d, row + t), inv), d, row + t);
  for (; t < n; ++t) row[t] /= sum;
}

void AttentionImpl(const AttentionShape& s, const float* q, const float* kt, const float* v, const float* mask,
                   float* out, ThreadPool* pool) {
  // Query rows per task: the score block (rows x T) stays within about 64 KB.
  const int64_t rows = std::max<int64_t>(1, std::min<int64_t>(s.queries, (16 << 10) / std::max<int64_t>(1, s.keys)));
  const int64_t blocks = ceil_div(s.queries, rows);
  auto body = [&](int64_t t0, int64_t t1) {
    float* scores = thread_buffer(0, (size_t)(rows * s.keys));
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t b = task / blocks, r0 = (task % blocks) * rows, n = std::min(rows, s.queries - r0);
      const float* qb = q + (b * s.queries + r0) * s.depth;
      gemm(DType::Float32, n, s.keys, s.depth, qb, s.depth, false, kt + b * s.depth * s.keys, s.keys, false, scores,
           s.keys, false, nullptr);
      for (int64_t i = 0; i < n; ++i) {
        const float* m = mask ? mask + s.mask_batch_offset[b] + (r0 + i) * s.mask_row_stride : nullptr;
        softmax_row(scores + i * s.keys, s.keys, s.scale, m, s.mask_col_stride);
      }
      gemm(DType::Float32, n, s.value_depth, s.keys, scores, s.keys, false, v + b * s.keys * s.value_depth,
           s.value_depth, false, out + (b * s.queries + r0) * s.value_depth, s.value_depth, false, nullptr);
    }
  };
  parallel_for(pool, s.batch * blocks, 1, body);
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
HWY_EXPORT(AttentionImpl);

void attention(const AttentionShape& s, const float* q, const float* kt, const float* v, const float* mask,
               float* out, ThreadPool* pool) {
  if (s.batch == 0 || s.queries == 0 || s.value_depth == 0) return;
  HWY_DYNAMIC_DISPATCH(AttentionImpl)(s, q, kt, v, mask, out, pool);
}

}  // namespace cpu
}  // namespace mnnpy
#endif
