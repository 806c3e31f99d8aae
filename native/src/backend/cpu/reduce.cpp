// Reductions, compiled per SIMD target. Rows (inner == 1) use explicit vectors with
// several accumulators; columns (inner > 1) combine whole rows elementwise, which the
// compiler vectorizes for each target. Short columns (a few floats per row, as the 8 channels of a
// blocked pixel) read the whole [R, inner] block as one flat run of vectors instead, so the
// accumulators stay in registers rather than being reloaded and stored for every row.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/reduce.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/cpu/reduce.h"
#include "mnnpy/thread_pool.h"

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class T> HWY_INLINE bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return v != v; else return false;
}
// NaN-propagating max/min, as NumPy's.
template <class T> HWY_INLINE T max_nan(T a, T b) { return (a >= b || is_nan(a)) ? a : b; }
template <class T> HWY_INLINE T min_nan(T a, T b) { return (a <= b || is_nan(a)) ? a : b; }

// Sum of a contiguous float run, the same bits on every target: blocks of 2048 elements; in a
// block, element i goes to partial sum i % kWays (kWays = four AVX-512 vectors of lanes: four
// vectors there, eight on AVX2, kWays scalars on the portable target), the partial sums are added
// pairwise in a fixed order and the block's last elements after them one by one; blocks are
// added in double. Each partial sum takes at most 2048 / kWays elements on every target, so the
// portable target is as accurate as the widest.
template <class T> double sum_float_run(const T* HWY_RESTRICT x, int64_t n) {
  const hn::ScalableTag<T> d;
  constexpr int64_t kWays = 4 * (64 / (int64_t)sizeof(T));
  constexpr int64_t N = (int64_t)hn::MaxLanes(d);
  static_assert(kWays % N == 0, "whole vectors of partial sums");
  constexpr int64_t kVectors = kWays / N;
  HWY_DASSERT((int64_t)hn::Lanes(d) == N);
  double total = 0;
  constexpr int64_t kBlock = 2048;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = std::min(n, b + kBlock);
    hn::Vec<decltype(d)> acc[kVectors];
    for (int64_t v = 0; v < kVectors; ++v) acc[v] = hn::Zero(d);
    int64_t i = b;
    for (; i + kWays <= e; i += kWays) {
      for (int64_t v = 0; v < kVectors; ++v) acc[v] = hn::Add(acc[v], hn::LoadU(d, x + i + v * N));
    }
    HWY_ALIGN T part[kWays];
    for (int64_t v = 0; v < kVectors; ++v) hn::Store(acc[v], d, part + v * N);
    for (int64_t w = kWays / 2; w >= 1; w /= 2) {
      for (int64_t j = 0; j < w; ++j) part[j] += part[j + w];
    }
    T block = part[0];
    for (; i < e; ++i) block += x[i];
    total += (double)block;
  }
  return total;
}

template <class T, bool kMax> T extreme_float_run(const T* HWY_RESTRICT x, int64_t n) {
  const hn::ScalableTag<T> d;
  const int64_t N = (int64_t)hn::Lanes(d);
  int64_t i = 0;
  T best = x[0];
  if (n >= 4 * N) {
    auto m0 = hn::LoadU(d, x), m1 = hn::LoadU(d, x + N), m2 = hn::LoadU(d, x + 2 * N), m3 = hn::LoadU(d, x + 3 * N);
    // A NaN anywhere makes the running sum NaN (so does inf - inf: then look again, exactly).
    auto probe = hn::Add(hn::Add(m0, m1), hn::Add(m2, m3));
    for (i = 4 * N; i + 4 * N <= n; i += 4 * N) {
      const auto v0 = hn::LoadU(d, x + i), v1 = hn::LoadU(d, x + i + N);
      const auto v2 = hn::LoadU(d, x + i + 2 * N), v3 = hn::LoadU(d, x + i + 3 * N);
      probe = hn::Add(probe, hn::Sub(hn::Add(v0, v1), hn::Add(v2, v3)));
      m0 = kMax ? hn::Max(m0, v0) : hn::Min(m0, v0);
      m1 = kMax ? hn::Max(m1, v1) : hn::Min(m1, v1);
      m2 = kMax ? hn::Max(m2, v2) : hn::Min(m2, v2);
      m3 = kMax ? hn::Max(m3, v3) : hn::Min(m3, v3);
    }
    if (!hn::AllFalse(d, hn::IsNaN(probe))) {
      for (int64_t j = 0; j < i; ++j) {
        if (x[j] != x[j]) return x[j];
      }
    }
    const auto m = kMax ? hn::Max(hn::Max(m0, m1), hn::Max(m2, m3)) : hn::Min(hn::Min(m0, m1), hn::Min(m2, m3));
    best = hn::GetLane(kMax ? hn::MaxOfLanes(d, m) : hn::MinOfLanes(d, m));
  }
  for (; i < n; ++i) best = kMax ? max_nan(best, x[i]) : min_nan(best, x[i]);
  return best;
}

template <class T> T reduce_run(int kind, const T* HWY_RESTRICT x, int64_t n) {
  if constexpr (std::is_floating_point_v<T>) {
    if (kind == kReduceSum) return (T)sum_float_run(x, n);
    if (kind == kReduceMax) return extreme_float_run<T, true>(x, n);
    if (kind == kReduceMin) return extreme_float_run<T, false>(x, n);
  }
  switch (kind) {
    case kReduceSum: { T s = 0; for (int64_t i = 0; i < n; ++i) s += x[i]; return s; }
    case kReduceProd: { T p = 1; for (int64_t i = 0; i < n; ++i) p *= x[i]; return p; }
    case kReduceMax: { T m = x[0]; for (int64_t i = 1; i < n; ++i) m = x[i] > m ? x[i] : m; return m; }
    case kReduceMin: { T m = x[0]; for (int64_t i = 1; i < n; ++i) m = x[i] < m ? x[i] : m; return m; }
    case kReduceAny: { uint8_t r = 0; for (int64_t i = 0; i < n; ++i) r |= (x[i] != 0); return (T)r; }
    case kReduceAll: { uint8_t r = 1; for (int64_t i = 0; i < n; ++i) r &= (x[i] != 0); return (T)r; }
  }
  return 0;
}

// Largest (smallest) lane; Highway has no such reduction for 8-bit lanes, so those go through memory.
template <bool kMax, class D, class V> HWY_INLINE hn::TFromD<D> extreme_of_lanes(D d, V v) {
  using T = hn::TFromD<D>;
  if constexpr (sizeof(T) == 1) {
    HWY_ALIGN T lanes[HWY_MAX_BYTES];
    hn::Store(v, d, lanes);
    T m = lanes[0];
    for (size_t i = 1; i < hn::Lanes(d); ++i) m = kMax ? std::max(m, lanes[i]) : std::min(m, lanes[i]);
    return m;
  } else {
    return hn::GetLane(kMax ? hn::MaxOfLanes(d, v) : hn::MinOfLanes(d, v));
  }
}

// First index of the max (min); a NaN wins at its first position. Blocks of 1 KB (L1) are
// scanned once with vector max (min) accumulators; only a block whose extreme beats the best so
// far is searched again, four vectors per test, for the first position of that extreme. On
// random data that search runs for a handful of short blocks per row.
template <class T, bool kMax> int64_t arg_extreme_run(const T* HWY_RESTRICT x, int64_t n) {
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  const int64_t N = (int64_t)hn::Lanes(d);
  const int64_t block = std::max<int64_t>(4 * N, 1024 / (int64_t)sizeof(T));
  int64_t best_i = 0;
  T best = x[0];
  if (is_nan(best)) return 0;
  auto better = [&](T v) { return kMax ? v > best : v < best; };
  auto first_equal = [&](int64_t b, int64_t e, T m) {
    const V vm = hn::Set(d, m);
    int64_t i = b;
    for (; i + 4 * N <= e; i += 4 * N) {
      const auto q0 = hn::Eq(hn::LoadU(d, x + i), vm), q1 = hn::Eq(hn::LoadU(d, x + i + N), vm);
      const auto q2 = hn::Eq(hn::LoadU(d, x + i + 2 * N), vm), q3 = hn::Eq(hn::LoadU(d, x + i + 3 * N), vm);
      if (hn::AllFalse(d, hn::Or(hn::Or(q0, q1), hn::Or(q2, q3)))) continue;
      if (!hn::AllFalse(d, q0)) return i + (int64_t)hn::FindFirstTrue(d, q0);
      if (!hn::AllFalse(d, q1)) return i + N + (int64_t)hn::FindFirstTrue(d, q1);
      if (!hn::AllFalse(d, q2)) return i + 2 * N + (int64_t)hn::FindFirstTrue(d, q2);
      return i + 3 * N + (int64_t)hn::FindFirstTrue(d, q3);
    }
    for (; i < e; ++i) if (x[i] == m) return i;
    return e;  // unreachable: m is one of x[b, e)
  };
  int64_t b = 0;
  for (; b + block <= n; b += block) {
    const T* xb = x + b;
    V m0 = hn::LoadU(d, xb), m1 = hn::LoadU(d, xb + N), m2 = hn::LoadU(d, xb + 2 * N), m3 = hn::LoadU(d, xb + 3 * N);
    // Floats: a NaN anywhere makes these sums NaN (so does inf - inf: then the block is scanned
    // exactly). Two chains, so that the adds' latency does not bound the loop.
    V probe0 = hn::Add(m0, m1), probe1 = hn::Add(m2, m3);
    for (int64_t i = 4 * N; i < block; i += 4 * N) {
      const V v0 = hn::LoadU(d, xb + i), v1 = hn::LoadU(d, xb + i + N);
      const V v2 = hn::LoadU(d, xb + i + 2 * N), v3 = hn::LoadU(d, xb + i + 3 * N);
      if constexpr (std::is_floating_point_v<T>) {
        probe0 = hn::Add(probe0, hn::Add(v0, v1));
        probe1 = hn::Add(probe1, hn::Add(v2, v3));
      }
      m0 = kMax ? hn::Max(m0, v0) : hn::Min(m0, v0);
      m1 = kMax ? hn::Max(m1, v1) : hn::Min(m1, v1);
      m2 = kMax ? hn::Max(m2, v2) : hn::Min(m2, v2);
      m3 = kMax ? hn::Max(m3, v3) : hn::Min(m3, v3);
    }
    if constexpr (std::is_floating_point_v<T>) {
      if (!hn::AllFalse(d, hn::IsNaN(hn::Sub(probe0, probe1)))) {
        for (int64_t i = b; i < b + block; ++i) {
          if (is_nan(x[i])) return i;
          if (better(x[i])) best = x[i], best_i = i;
        }
        continue;
      }
    }
    const V m = kMax ? hn::Max(hn::Max(m0, m1), hn::Max(m2, m3)) : hn::Min(hn::Min(m0, m1), hn::Min(m2, m3));
    const T e = extreme_of_lanes<kMax>(d, m);
    if (better(e)) {
      best = e;
      best_i = first_equal(b, b + block, e);
    }
  }
  for (; b < n; ++b) {
    if (is_nan(x[b])) return b;
    if (better(x[b])) best = x[b], best_i = b;
  }
  return best_i;
}

template <class T>
void reduce_rows_t(int kind, const void* px, int64_t rows, int64_t R, void* pout) {
  const T* x = (const T*)px;
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = x + r * R;
    if (kind == kReduceArgMax) ((int64_t*)pout)[r] = arg_extreme_run<T, true>(row, R);
    else if (kind == kReduceArgMin) ((int64_t*)pout)[r] = arg_extreme_run<T, false>(row, R);
    else ((T*)pout)[r] = R == 0 ? T(kind == kReduceProd || kind == kReduceAll ? 1 : 0) : reduce_run<T>(kind, row, R);
  }
}

// out[i] for i in [i0, i1) of one outer slice: combine R rows of length `inner`.
template <class T>
void reduce_cols_t(int kind, const void* px, int64_t R, int64_t inner, int64_t i0, int64_t i1, void* pout) {
  const T* x = (const T*)px;
  const int64_t n = i1 - i0;
  if (kind == kReduceArgMax || kind == kReduceArgMin) {
    int64_t* idx = (int64_t*)pout + i0;
    std::vector<T> best(x + i0, x + i1);
    std::fill(idx, idx + n, 0);
    for (int64_t r = 1; r < R; ++r) {
      const T* row = x + r * inner + i0;
      for (int64_t i = 0; i < n; ++i) {
        const T v = row[i], b = best[i];
        const bool better = !is_nan(b) && (is_nan(v) || (kind == kReduceArgMax ? v > b : v < b));
        if (better) { best[i] = v; idx[i] = r; }
      }
    }
    return;
  }
  T* HWY_RESTRICT out = (T*)pout + i0;
  if (R == 0) {
    std::fill(out, out + n, T(kind == kReduceProd || kind == kReduceAll ? 1 : 0));
    return;
  }
  std::memcpy(out, x + i0, n * sizeof(T));
  for (int64_t r = 1; r < R; ++r) {
    const T* HWY_RESTRICT row = x + r * inner + i0;
    switch (kind) {
      case kReduceSum: for (int64_t i = 0; i < n; ++i) out[i] += row[i]; break;
      case kReduceProd: for (int64_t i = 0; i < n; ++i) out[i] *= row[i]; break;
      case kReduceMax: for (int64_t i = 0; i < n; ++i) out[i] = max_nan(out[i], row[i]); break;
      case kReduceMin: for (int64_t i = 0; i < n; ++i) out[i] = min_nan(out[i], row[i]); break;
      case kReduceAny: for (int64_t i = 0; i < n; ++i) out[i] = (out[i] != 0) | (row[i] != 0); break;
      case kReduceAll: for (int64_t i = 0; i < n; ++i) out[i] = (out[i] != 0) & (row[i] != 0); break;
    }
  }
  if (kind == kReduceAny || kind == kReduceAll) {
    for (int64_t i = 0; i < n; ++i) out[i] = out[i] != 0;
  }
}

#define MNNPY_REDUCE_DISPATCH(dt, FN, ...)                  \
  switch (dt) {                                             \
    case DType::Bool: case DType::UInt8: FN<uint8_t>(__VA_ARGS__); break; \
    case DType::Int8: FN<int8_t>(__VA_ARGS__); break;       \
    case DType::Int16: FN<int16_t>(__VA_ARGS__); break;     \
    case DType::Int32: FN<int32_t>(__VA_ARGS__); break;     \
    case DType::Int64: FN<int64_t>(__VA_ARGS__); break;     \
    case DType::UInt16: FN<uint16_t>(__VA_ARGS__); break;   \
    case DType::UInt32: FN<uint32_t>(__VA_ARGS__); break;   \
    case DType::UInt64: FN<uint64_t>(__VA_ARGS__); break;   \
    case DType::Float32: FN<float>(__VA_ARGS__); break;     \
    case DType::Float64: FN<double>(__VA_ARGS__); break;    \
    default: break;                                         \
  }

void ReduceRowsImpl(int kind, DType dt, const void* x, int64_t rows, int64_t R, void* out) {
  MNNPY_REDUCE_DISPATCH(dt, reduce_rows_t, kind, x, rows, R, out);
}
void ReduceColsImpl(int kind, DType dt, const void* x, int64_t R, int64_t inner, int64_t i0, int64_t i1, void* out) {
  MNNPY_REDUCE_DISPATCH(dt, reduce_cols_t, kind, x, R, inner, i0, i1, out);
}

// ---------------------------------------------------------------- short rows
// Sum, max or min over the R rows of a contiguous [R, n] block whose rows are short. The block is
// one flat run: flat position f belongs to column f % n, so over a period of lcm(n, lanes) elements
// (kPeriodVecs vectors) every lane keeps one column, and whole periods are combined as vectors in
// kChains independent accumulator sets. Sums move into double per column after every 64 additions
// per lane, as exact as the row path's blocks. Max and min return false when the data hold a
// NaN, for the exact path to place it as NumPy does.
constexpr int64_t kShortRowMaxVecs = 8;  // the longest period handled, in vectors

template <class T, int kPeriodVecs>
bool reduce_short_rows_t(int kind, const T* HWY_RESTRICT x, int64_t R, int64_t n, T* HWY_RESTRICT out) {
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  constexpr int kChains = kPeriodVecs >= 4 ? 1 : 4 / kPeriodVecs;
  const int64_t N = (int64_t)hn::Lanes(d), period = kPeriodVecs * N;
  // Each accumulator lane sums at most kFlushAdds values before they move into double.
  constexpr int64_t kFlushAdds = 64;
  const int64_t flush_periods = kFlushAdds * kChains;
  const int64_t total = R * n, periods = total / period;
  const bool sum = kind == kReduceSum, is_max = kind == kReduceMax;
  HWY_ALIGN T folded_lanes[kShortRowMaxVecs * HWY_MAX_BYTES / sizeof(T)];
  double sums[kShortRowMaxVecs * HWY_MAX_BYTES / sizeof(T)];
  T extremes[kShortRowMaxVecs * HWY_MAX_BYTES / sizeof(T)];
  for (int64_t i = 0; i < n; ++i) sums[i] = 0, extremes[i] = x[i];  // R >= 1: row 0 holds every column
  V acc[kChains][kPeriodVecs];
  V probe = hn::Zero(d);  // max/min: a NaN anywhere makes this sum NaN (so does inf - inf: then look again)
  auto fold = [&]() {
    for (int m = 0; m < kPeriodVecs; ++m) {
      V a = acc[0][m];
      for (int k = 1; k < kChains; ++k) {
        a = sum ? hn::Add(a, acc[k][m]) : is_max ? hn::Max(a, acc[k][m]) : hn::Min(a, acc[k][m]);
      }
      hn::Store(a, d, folded_lanes + m * N);
    }
    for (int64_t j = 0; j < period; ++j) {
      const int64_t c = j % n;
      if (sum) sums[c] += (double)folded_lanes[j];
      else extremes[c] = is_max ? std::max(extremes[c], folded_lanes[j]) : std::min(extremes[c], folded_lanes[j]);
    }
  };
  const T inf = std::numeric_limits<T>::infinity();
  const V identity = hn::Set(d, sum ? T(0) : is_max ? -inf : inf);
  for (int64_t p0 = 0; p0 < periods; p0 += flush_periods) {
    const int64_t p1 = std::min(periods, p0 + flush_periods);
    for (int k = 0; k < kChains; ++k)
      for (int m = 0; m < kPeriodVecs; ++m) acc[k][m] = identity;
    int64_t p = p0;
    for (; p + kChains <= p1; p += kChains) {
      for (int k = 0; k < kChains; ++k) {
        const T* src = x + (p + k) * period;
        for (int m = 0; m < kPeriodVecs; ++m) {
          const V v = hn::LoadU(d, src + m * N);
          if (sum) {
            acc[k][m] = hn::Add(acc[k][m], v);
          } else {
            probe = hn::Add(probe, v);
            acc[k][m] = is_max ? hn::Max(acc[k][m], v) : hn::Min(acc[k][m], v);
          }
        }
      }
    }
    for (; p < p1; ++p) {
      for (int m = 0; m < kPeriodVecs; ++m) {
        const V v = hn::LoadU(d, x + p * period + m * N);
        if (sum) {
          acc[0][m] = hn::Add(acc[0][m], v);
        } else {
          probe = hn::Add(probe, v);
          acc[0][m] = is_max ? hn::Max(acc[0][m], v) : hn::Min(acc[0][m], v);
        }
      }
    }
    fold();
  }
  if (!sum && !hn::AllFalse(d, hn::IsNaN(probe))) return false;
  for (int64_t f = periods * period; f < total; ++f) {
    const int64_t c = f % n;
    const T v = x[f];
    if (sum) sums[c] += (double)v;
    else if (v != v) return false;
    else extremes[c] = is_max ? std::max(extremes[c], v) : std::min(extremes[c], v);
  }
  for (int64_t i = 0; i < n; ++i) out[i] = sum ? (T)sums[i] : extremes[i];
  return true;
}

// Vectors per period for rows of n elements: lcm(n, lanes) / lanes, or 0 when that is too long.
template <class T> int64_t short_row_period_vecs(int64_t n) {
  const int64_t N = (int64_t)hn::Lanes(hn::ScalableTag<T>());
  int64_t a = n, b = N;
  while (b) { const int64_t t = a % b; a = b; b = t; }
  const int64_t vecs = n / a;  // lcm(n, N) / N
  return vecs <= kShortRowMaxVecs ? vecs : 0;
}

template <class T> bool reduce_short_rows_dispatch(int kind, const void* x, int64_t R, int64_t n, void* out) {
  const T* xt = (const T*)x;
  T* ot = (T*)out;
  switch (short_row_period_vecs<T>(n)) {
    case 1: return reduce_short_rows_t<T, 1>(kind, xt, R, n, ot);
    case 2: return reduce_short_rows_t<T, 2>(kind, xt, R, n, ot);
    case 3: return reduce_short_rows_t<T, 3>(kind, xt, R, n, ot);
    case 4: return reduce_short_rows_t<T, 4>(kind, xt, R, n, ot);
    case 5: return reduce_short_rows_t<T, 5>(kind, xt, R, n, ot);
    case 6: return reduce_short_rows_t<T, 6>(kind, xt, R, n, ot);
    case 7: return reduce_short_rows_t<T, 7>(kind, xt, R, n, ot);
    case 8: return reduce_short_rows_t<T, 8>(kind, xt, R, n, ot);
    default: return false;
  }
}

// Whether ReduceShortRowsImpl takes this reduction (float sum, max or min of rows of n elements).
bool ShortRowsApplyImpl(int kind, DType dt, int64_t n) {
  if (kind != kReduceSum && kind != kReduceMax && kind != kReduceMin) return false;
  if (dt == DType::Float32) return short_row_period_vecs<float>(n) != 0;
  if (dt == DType::Float64) return short_row_period_vecs<double>(n) != 0;
  return false;
}

// For each of `outer` blocks [R, n] (stride R * n), out[o, :] = the reduction over R; blocks holding
// a NaN (max/min) go through the column path.
void ReduceShortRowsImpl(int kind, DType dt, const void* x, int64_t outer, int64_t R, int64_t n, void* out) {
  const size_t es = dtype_size(dt);
  for (int64_t o = 0; o < outer; ++o) {
    const char* xo = (const char*)x + o * R * n * es;
    char* oo = (char*)out + o * n * es;
    const bool done = dt == DType::Float32 ? reduce_short_rows_dispatch<float>(kind, xo, R, n, oo)
                                           : reduce_short_rows_dispatch<double>(kind, xo, R, n, oo);
    if (!done) ReduceColsImpl(kind, dt, xo, R, n, 0, n, oo);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
HWY_EXPORT(ReduceRowsImpl);
HWY_EXPORT(ReduceColsImpl);
HWY_EXPORT(ShortRowsApplyImpl);
HWY_EXPORT(ReduceShortRowsImpl);

namespace {
constexpr int64_t kGrainElements = 1 << 16;

// Combines per-chunk results of one long row.
void combine_partials(int kind, DType dt, const char* x, const std::vector<int64_t>& starts,
                      const std::vector<char>& partials, void* out) {
  const size_t es = dtype_size(dt);
  const int64_t chunks = (int64_t)starts.size();
  if (kind == kReduceArgMax || kind == kReduceArgMin) {
    // Gather each chunk's candidate value, then pick the first best among them.
    std::vector<char> values(chunks * es);
    const int64_t* idx = (const int64_t*)partials.data();
    for (int64_t c = 0; c < chunks; ++c) std::memcpy(values.data() + c * es, x + (starts[c] + idx[c]) * es, es);
    int64_t which = 0;
    HWY_DYNAMIC_DISPATCH(ReduceRowsImpl)(kind, dt, values.data(), 1, chunks, &which);
    *(int64_t*)out = starts[which] + idx[which];
    return;
  }
  HWY_DYNAMIC_DISPATCH(ReduceRowsImpl)(kind, dt, partials.data(), 1, chunks, out);
}
}  // namespace

void reduce(int kind, DType dt, const void* x, int64_t outer, int64_t R, int64_t inner, void* out, ThreadPool* pool) {
  const size_t es = dtype_size(dt);
  const bool arg = kind == kReduceArgMax || kind == kReduceArgMin;
  const size_t out_es = arg ? 8 : es;
  const char* xc = (const char*)x;
  char* oc = (char*)out;
  const int threads = pool ? pool->num_threads() : 1;
  if (inner == 1) {
    if (outer < threads && R >= 2 * kGrainElements && threads > 1) {
      // Few long rows: split each row across threads and combine the partial results.
      for (int64_t o = 0; o < outer; ++o) {
        const char* row = xc + o * R * es;
        const int64_t chunks = std::min<int64_t>(threads * 4, R / kGrainElements);
        std::vector<int64_t> starts(chunks);
        std::vector<char> partials(chunks * out_es);
        const int64_t step = (R + chunks - 1) / chunks;
        for (int64_t c = 0; c < chunks; ++c) starts[c] = std::min(R, c * step);
        pool->parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
          for (int64_t c = c0; c < c1; ++c) {
            const int64_t b = starts[c], e = std::min(R, b + step);
            HWY_DYNAMIC_DISPATCH(ReduceRowsImpl)(kind, dt, row + b * es, 1, e - b, partials.data() + c * out_es);
          }
        });
        combine_partials(kind, dt, row, starts, partials, oc + o * out_es);
      }
      return;
    }
    const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, R));
    auto body = [&](int64_t o0, int64_t o1) {
      HWY_DYNAMIC_DISPATCH(ReduceRowsImpl)(kind, dt, xc + o0 * R * es, o1 - o0, R, oc + o0 * out_es);
    };
    parallel_for(pool, outer, grain, body);
    return;
  }
  if (R > 0 && HWY_DYNAMIC_DISPATCH(ShortRowsApplyImpl)(kind, dt, inner)) {
    // Short columns: each [R, inner] block is one contiguous run.
    const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, R * inner));
    parallel_for(pool, outer, grain, [&](int64_t o0, int64_t o1) {
      HWY_DYNAMIC_DISPATCH(ReduceShortRowsImpl)(kind, dt, xc + o0 * R * inner * es, o1 - o0, R, inner,
                                                oc + o0 * inner * es);
    });
    return;
  }
  // Columns: tile the inner axis so each task combines R rows of a tile. A single slice (sum
  // over axis 0) is cut into up to two tiles per thread, none under 4 KB per row: shorter runs
  // at a long stride left float32 sums at 2 threads no faster than at one.
  int64_t tile = 4096;
  if (threads > 1 && outer * ((inner + tile - 1) / tile) < 2 * threads) {
    const int64_t per_outer = (2 * threads + outer - 1) / outer;
    const int64_t min_tile = std::max<int64_t>(256, 4096 / (int64_t)es);
    tile = std::max<int64_t>(min_tile, ((inner + per_outer - 1) / per_outer + 63) / 64 * 64);
  }
  const int64_t tiles_per_outer = (inner + tile - 1) / tile;
  const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, R * std::min(inner, tile)));
  auto body = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / tiles_per_outer, i0 = (t % tiles_per_outer) * tile, i1 = std::min(inner, i0 + tile);
      HWY_DYNAMIC_DISPATCH(ReduceColsImpl)(kind, dt, xc + o * R * inner * es, R, inner, i0, i1,
                                           oc + o * inner * out_es);
    }
  };
  parallel_for(pool, outer * tiles_per_outer, grain, body);
}

}  // namespace cpu
}  // namespace mnnpy
#endif
