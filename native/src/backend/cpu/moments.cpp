// Fused variance, compiled per SIMD target. Rows (inner == 1) are cut into blocks of 16 KB: a
// first pass sums a block (vector accumulators), a second pass, on the block still in L1, sums the
// squared deviations from that block's mean together with the deviations themselves (their sum
// corrects for the rounded mean). Blocks combine as (count, mean, M2) triples by Chan's formula.
// Columns (inner > 1) take two passes over a tile of columns with per-column double accumulators.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/moments.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/moments.h"
#include "mnnpy/thread_pool.h"

#ifndef MNNPY_MOMENTS_ONCE
#define MNNPY_MOMENTS_ONCE
namespace mnnpy {
namespace cpu {
namespace {
// Count, mean and sum of squared deviations of a run of values.
struct Moments {
  double n = 0, mean = 0, m2 = 0;
};

inline Moments merge(const Moments& a, const Moments& b) {
  if (a.n == 0) return b;
  if (b.n == 0) return a;
  Moments r;
  r.n = a.n + b.n;
  const double delta = b.mean - a.mean;
  r.mean = a.mean + delta * (b.n / r.n);
  r.m2 = a.m2 + b.m2 + delta * delta * (a.n * b.n / r.n);
  return r;
}

inline double finish(const Moments& m, double ddof, bool root) {
  const double v = m.m2 / std::max(m.n - ddof, 0.0);  // NumPy's max(N - ddof, 0): 0/0 gives NaN
  return root ? std::sqrt(v) : v;
}
}  // namespace
}  // namespace cpu
}  // namespace mnnpy
#endif

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Moments of one block of n values (n small enough for the block to stay in L1).
template <class T> Moments block_moments(const T* HWY_RESTRICT x, int64_t n) {
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  const int64_t N = (int64_t)hn::Lanes(d);
  V a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  int64_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    a0 = hn::Add(a0, hn::LoadU(d, x + i));
    a1 = hn::Add(a1, hn::LoadU(d, x + i + N));
    a2 = hn::Add(a2, hn::LoadU(d, x + i + 2 * N));
    a3 = hn::Add(a3, hn::LoadU(d, x + i + 3 * N));
  }
  double sum = (double)hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
  for (; i < n; ++i) sum += (double)x[i];
  const T center = (T)(sum / (double)n);
  const V c = hn::Set(d, center);
  V s0 = hn::Zero(d), s1 = hn::Zero(d), q0 = hn::Zero(d), q1 = hn::Zero(d);
  i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    const V d0 = hn::Sub(hn::LoadU(d, x + i), c), d1 = hn::Sub(hn::LoadU(d, x + i + N), c);
    s0 = hn::Add(s0, d0);
    s1 = hn::Add(s1, d1);
    q0 = hn::MulAdd(d0, d0, q0);
    q1 = hn::MulAdd(d1, d1, q1);
  }
  double dev = (double)hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
  double sq = (double)hn::GetLane(hn::SumOfLanes(d, hn::Add(q0, q1)));
  for (; i < n; ++i) {
    const double e = (double)x[i] - (double)center;
    dev += e;
    sq += e * e;
  }
  Moments m;
  m.n = (double)n;
  m.mean = (double)center + dev / (double)n;
  m.m2 = std::max(sq - dev * dev / (double)n, 0.0);
  if (!std::isfinite(sq)) m.m2 = sq;  // inf or NaN stays so (inf - inf would hide an inf)
  return m;
}

template <class T> Moments run_moments_t(const void* px, int64_t n) {
  const T* x = (const T*)px;
  constexpr int64_t kBlock = 16384 / sizeof(T);
  Moments m;
  for (int64_t b = 0; b < n; b += kBlock) m = merge(m, block_moments(x + b, std::min(kBlock, n - b)));
  return m;
}

Moments RunMomentsImpl(DType dt, const void* x, int64_t n) {
  return dt == DType::Float32 ? run_moments_t<float>(x, n) : run_moments_t<double>(x, n);
}

template <class T> void variance_rows_t(const void* px, int64_t rows, int64_t R, double ddof, bool root, void* pout) {
  const T* x = (const T*)px;
  T* out = (T*)pout;
  for (int64_t r = 0; r < rows; ++r) out[r] = (T)finish(run_moments_t<T>(x + r * R, R), ddof, root);
}

void VarianceRowsImpl(DType dt, const void* x, int64_t rows, int64_t R, double ddof, bool root, void* out) {
  if (dt == DType::Float32) variance_rows_t<float>(x, rows, R, ddof, root, out);
  else variance_rows_t<double>(x, rows, R, ddof, root, out);
}

// Columns [i0, i1) of one [R, inner] slice: exact two passes in double.
template <class T>
void variance_cols_t(const void* px, int64_t R, int64_t inner, int64_t i0, int64_t i1, double ddof, bool root,
                     void* pout) {
  const T* x = (const T*)px;
  const int64_t w = i1 - i0;
  std::vector<double> mean(w, 0.0), dev(w, 0.0), sq(w, 0.0);
  for (int64_t r = 0; r < R; ++r) {
    const T* HWY_RESTRICT row = x + r * inner + i0;
    double* HWY_RESTRICT s = mean.data();
    for (int64_t i = 0; i < w; ++i) s[i] += (double)row[i];
  }
  for (int64_t i = 0; i < w; ++i) mean[i] /= (double)R;
  for (int64_t r = 0; r < R; ++r) {
    const T* HWY_RESTRICT row = x + r * inner + i0;
    const double* HWY_RESTRICT mu = mean.data();
    double* HWY_RESTRICT dv = dev.data();
    double* HWY_RESTRICT q = sq.data();
    for (int64_t i = 0; i < w; ++i) {
      const double e = (double)row[i] - mu[i];
      dv[i] += e;
      q[i] += e * e;
    }
  }
  T* out = (T*)pout + i0;
  for (int64_t i = 0; i < w; ++i) {
    Moments m;
    m.n = (double)R;
    m.m2 = std::isfinite(sq[i]) ? std::max(sq[i] - dev[i] * dev[i] / (double)R, 0.0) : sq[i];
    out[i] = (T)finish(m, ddof, root);
  }
}

void VarianceColsImpl(DType dt, const void* x, int64_t R, int64_t inner, int64_t i0, int64_t i1, double ddof,
                      bool root, void* out) {
  if (dt == DType::Float32) variance_cols_t<float>(x, R, inner, i0, i1, ddof, root, out);
  else variance_cols_t<double>(x, R, inner, i0, i1, ddof, root, out);
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
HWY_EXPORT(RunMomentsImpl);
HWY_EXPORT(VarianceRowsImpl);
HWY_EXPORT(VarianceColsImpl);

namespace {
constexpr int64_t kGrainElements = 1 << 16;
}  // namespace

void variance(DType dt, const void* x, int64_t outer, int64_t R, int64_t inner, double ddof, bool root, void* out,
              ThreadPool* pool) {
  const size_t es = dtype_size(dt);
  const char* xc = (const char*)x;
  char* oc = (char*)out;
  const int threads = pool ? pool->num_threads() : 1;
  if (inner == 1) {
    if (outer < threads && R >= 2 * kGrainElements && threads > 1) {
      // Few long rows: each thread takes chunks of a row; the chunks' moments merge in order.
      for (int64_t o = 0; o < outer; ++o) {
        const char* row = xc + o * R * es;
        const int64_t chunks = std::min<int64_t>(threads * 4, R / kGrainElements);
        const int64_t step = (R + chunks - 1) / chunks;
        std::vector<Moments> parts(chunks);
        pool->parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
          for (int64_t c = c0; c < c1; ++c) {
            const int64_t b = std::min(R, c * step), e = std::min(R, b + step);
            parts[c] = HWY_DYNAMIC_DISPATCH(RunMomentsImpl)(dt, row + b * es, e - b);
          }
        });
        Moments m;
        for (const Moments& p : parts) m = merge(m, p);
        const double v = finish(m, ddof, root);
        if (dt == DType::Float32) ((float*)oc)[o] = (float)v;
        else ((double*)oc)[o] = v;
      }
      return;
    }
    const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, R));
    parallel_for(pool, outer, grain, [&](int64_t o0, int64_t o1) {
      HWY_DYNAMIC_DISPATCH(VarianceRowsImpl)(dt, xc + o0 * R * es, o1 - o0, R, ddof, root, oc + o0 * es);
    });
    return;
  }
  const int64_t tile = 512;
  const int64_t tiles_per_outer = (inner + tile - 1) / tile;
  const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, R * std::min(inner, tile)));
  parallel_for(pool, outer * tiles_per_outer, grain, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / tiles_per_outer, i0 = (t % tiles_per_outer) * tile, i1 = std::min(inner, i0 + tile);
      HWY_DYNAMIC_DISPATCH(VarianceColsImpl)(dt, xc + o * R * inner * es, R, inner, i0, i1, ddof, root,
                                             oc + o * inner * es);
    }
  });
}

}  // namespace cpu
}  // namespace mnnpy
#endif
