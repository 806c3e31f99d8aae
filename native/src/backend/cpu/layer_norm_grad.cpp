// Layer normalization backward kernels, compiled per SIMD target and dispatched at run time.
// With xh = (x - mean) * rstd and gx = g * gamma, per row:
//   dx = rstd * (gx - mean(gx) - xh * mean(gx * xh)); dgamma += g * xh; dbeta += g.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/layer_norm_grad.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/layer_norm_grad.h"
#include "mnnpy/thread_pool.h"

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Sum over i < n of a per-lane term, in four independent vector accumulators, then the tail.
template <class D, class VecTerm, class ScalarTerm>
HWY_INLINE float row_reduce(D d, int64_t n, VecTerm vec_term, ScalarTerm scalar_term) {
  const int64_t L = (int64_t)hn::Lanes(d);
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    a0 = hn::Add(a0, vec_term(i));
    a1 = hn::Add(a1, vec_term(i + L));
    a2 = hn::Add(a2, vec_term(i + 2 * L));
    a3 = hn::Add(a3, vec_term(i + 3 * L));
  }
  for (; i + L <= n; i += L) a0 = hn::Add(a0, vec_term(i));
  float total = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
  for (; i < n; ++i) total += scalar_term(i);
  return total;
}

void LayerNormGradImpl(const float* x, const float* g, const float* gamma, int64_t rows, int64_t dim, float epsilon,
                       int64_t blocks, float* dx, float* dgamma, float* dbeta, float* scratch, ThreadPool* pool) {
  const int64_t block_rows = (rows + blocks - 1) / blocks;
  float* part_gamma = scratch;
  float* part_beta = scratch + blocks * dim;
  parallel_for(pool, blocks, 1, [&](int64_t b0, int64_t b1) {
    const hn::ScalableTag<float> d;
    const int64_t L = (int64_t)hn::Lanes(d);
    for (int64_t b = b0; b < b1; ++b) {
      float* HWY_RESTRICT pg = part_gamma + b * dim;
      float* HWY_RESTRICT pb = part_beta + b * dim;
      std::memset(pg, 0, (size_t)dim * sizeof(float));
      std::memset(pb, 0, (size_t)dim * sizeof(float));
      const int64_t r_end = std::min(rows, (b + 1) * block_rows);
      for (int64_t r = b * block_rows; r < r_end; ++r) {
        const float* HWY_RESTRICT xr = x + r * dim;
        const float* HWY_RESTRICT gr = g + r * dim;
        float* HWY_RESTRICT out = dx + r * dim;
        // Mean and two-pass variance, as the forward kernel computes them.
        const float mean = row_reduce(d, dim, [&](int64_t i) { return hn::LoadU(d, xr + i); },
                                      [&](int64_t i) { return xr[i]; }) / (float)dim;
        const auto vmean = hn::Set(d, mean);
        const float sq = row_reduce(
            d, dim,
            [&](int64_t i) {
              const auto c = hn::Sub(hn::LoadU(d, xr + i), vmean);
              return hn::Mul(c, c);
            },
            [&](int64_t i) { return (xr[i] - mean) * (xr[i] - mean); });
        const float rstd = 1.0f / std::sqrt(sq / (float)dim + epsilon);
        const auto vrstd = hn::Set(d, rstd);
        // Row sums of gx and gx * xh.
        auto gx_at = [&](int64_t i) {
          const auto gv = hn::LoadU(d, gr + i);
          return gamma ? hn::Mul(gv, hn::LoadU(d, gamma + i)) : gv;
        };
        auto gx_scalar = [&](int64_t i) { return gamma ? gr[i] * gamma[i] : gr[i]; };
        const float sum_gx = row_reduce(d, dim, gx_at, gx_scalar);
        const float sum_gx_xh = row_reduce(
            d, dim, [&](int64_t i) { return hn::Mul(gx_at(i), hn::Mul(hn::Sub(hn::LoadU(d, xr + i), vmean), vrstd)); },
            [&](int64_t i) { return gx_scalar(i) * (xr[i] - mean) * rstd; });
        const float mean_gx = sum_gx / (float)dim, mean_gx_xh = sum_gx_xh / (float)dim;
        const auto vmg = hn::Set(d, mean_gx), vmgx = hn::Set(d, mean_gx_xh);
        int64_t i = 0;
        for (; i + L <= dim; i += L) {
          const auto gv = hn::LoadU(d, gr + i);
          const auto gx = gamma ? hn::Mul(gv, hn::LoadU(d, gamma + i)) : gv;
          const auto xh = hn::Mul(hn::Sub(hn::LoadU(d, xr + i), vmean), vrstd);
          // rstd * (gx - mean_gx - xh * mean_gx_xh)
          hn::StoreU(hn::Mul(vrstd, hn::NegMulAdd(xh, vmgx, hn::Sub(gx, vmg))), d, out + i);
          hn::StoreU(hn::MulAdd(gv, xh, hn::LoadU(d, pg + i)), d, pg + i);
          hn::StoreU(hn::Add(gv, hn::LoadU(d, pb + i)), d, pb + i);
        }
        for (; i < dim; ++i) {
          const float gx = gamma ? gr[i] * gamma[i] : gr[i];
          const float xh = (xr[i] - mean) * rstd;
          out[i] = rstd * std::fma(-xh, mean_gx_xh, gx - mean_gx);  // as the lanes round
          pg[i] = std::fma(gr[i], xh, pg[i]);
          pb[i] += gr[i];
        }
      }
    }
  });
  // The blocks' partial sums, added in block order.
  parallel_for(pool, dim, 1024, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      float sg = 0.f, sb = 0.f;
      for (int64_t b = 0; b < blocks; ++b) {
        sg += part_gamma[b * dim + c];
        sb += part_beta[b * dim + c];
      }
      dgamma[c] = sg;
      dbeta[c] = sb;
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
HWY_EXPORT(LayerNormGradImpl);

int64_t layer_norm_grad_blocks(int64_t rows) { return std::max<int64_t>(1, std::min<int64_t>(64, (rows + 15) / 16)); }

void layer_norm_grad(const float* x, const float* g, const float* gamma, int64_t rows, int64_t d, float epsilon,
                     float* dx, float* dgamma, float* dbeta, float* scratch, ThreadPool* pool) {
  if (rows == 0 || d == 0) {
    std::fill(dgamma, dgamma + d, 0.f);
    std::fill(dbeta, dbeta + d, 0.f);
    return;
  }
  HWY_DYNAMIC_DISPATCH(LayerNormGradImpl)(x, g, gamma, rows, d, epsilon, layer_norm_grad_blocks(rows), dx, dgamma,
                                          dbeta, scratch, pool);
}

}  // namespace cpu
}  // namespace mnnpy
#endif
