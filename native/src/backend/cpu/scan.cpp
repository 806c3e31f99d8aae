// Cumulative sums and products, and quantiles by selection.
//
// A scan row is latency bound (each output waits for the previous one), so float rows are
// scanned four elements at a time: the block's own partial sums do not wait on the carry and
// only one combine per block does. Few long rows are split across threads in two passes: each
// chunk's total first, then each chunk scanned from the combined totals before it. Columns
// (inner > 1) combine whole rows, which vectorizes.
//
// Quantiles copy each row into a buffer and place the needed order statistics with
// nth_element (the input is never reordered), smallest needed position first so each later
// selection works on the part above the previous one.
#include "backend/cpu/scan.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "mnnpy/thread_pool.h"

namespace mnnpy {
namespace cpu {

namespace {

constexpr int64_t kGrainElements = 1 << 15;

template <class T, int kKind>
inline T combine(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    // Unsigned arithmetic wraps as NumPy's integers do (signed overflow is undefined in C++).
    using U = std::make_unsigned_t<T>;
    return kKind == kScanSum ? (T)((U)a + (U)b) : (T)((U)a * (U)b);
  } else {
    return kKind == kScanSum ? a + b : a * b;
  }
}

template <class T, int kKind>
constexpr T identity() {
  return kKind == kScanSum ? T(0) : T(1);
}

template <class T, int kKind, bool kSkipNan>
inline T load(const T* x, int64_t i) {
  const T v = x[i];
  if constexpr (kSkipNan && std::is_floating_point_v<T>) return v != v ? identity<T, kKind>() : v;
  return v;
}

// Scans x[0..n) into out starting from `carry`; returns the last value.
template <class T, int kKind, bool kSkipNan>
T scan_row(const T* x, T* out, int64_t n, T carry) {
  int64_t i = 0;
  if constexpr (std::is_floating_point_v<T>) {
    for (; i + 4 <= n; i += 4) {
      const T p0 = load<T, kKind, kSkipNan>(x, i);
      const T p1 = combine<T, kKind>(p0, load<T, kKind, kSkipNan>(x, i + 1));
      const T p2 = combine<T, kKind>(p1, load<T, kKind, kSkipNan>(x, i + 2));
      const T p3 = combine<T, kKind>(p2, load<T, kKind, kSkipNan>(x, i + 3));
      out[i] = combine<T, kKind>(carry, p0);
      out[i + 1] = combine<T, kKind>(carry, p1);
      out[i + 2] = combine<T, kKind>(carry, p2);
      carry = out[i + 3] = combine<T, kKind>(carry, p3);
    }
  }
  for (; i < n; ++i) out[i] = carry = combine<T, kKind>(carry, load<T, kKind, kSkipNan>(x, i));
  return carry;
}

template <class T, int kKind, bool kSkipNan>
T total_of(const T* x, int64_t n) {
  T a0 = identity<T, kKind>(), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a0 = combine<T, kKind>(a0, load<T, kKind, kSkipNan>(x, i));
    a1 = combine<T, kKind>(a1, load<T, kKind, kSkipNan>(x, i + 1));
    a2 = combine<T, kKind>(a2, load<T, kKind, kSkipNan>(x, i + 2));
    a3 = combine<T, kKind>(a3, load<T, kKind, kSkipNan>(x, i + 3));
  }
  for (; i < n; ++i) a0 = combine<T, kKind>(a0, load<T, kKind, kSkipNan>(x, i));
  return combine<T, kKind>(combine<T, kKind>(a0, a1), combine<T, kKind>(a2, a3));
}

template <class T, int kKind, bool kSkipNan>
void cumulative_t(const T* x, int64_t outer, int64_t n, int64_t inner, T* out, ThreadPool* pool) {
  const int threads = pool ? pool->num_threads() : 1;
  if (inner == 1) {
    if (outer < threads && threads > 1 && n >= 4 * kGrainElements) {
      for (int64_t o = 0; o < outer; ++o) {
        const T* row = x + o * n;
        T* dst = out + o * n;
        const int64_t chunks = threads;
        const int64_t step = (n + chunks - 1) / chunks;
        std::vector<T> totals(chunks, identity<T, kKind>());
        // Pass 1: chunk 0 is scanned at once; the others only total their values.
        pool->parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
          for (int64_t c = c0; c < c1; ++c) {
            const int64_t b = std::min(n, c * step), e = std::min(n, b + step);
            if (c == 0) scan_row<T, kKind, kSkipNan>(row, dst, e, identity<T, kKind>());
            else totals[c] = total_of<T, kKind, kSkipNan>(row + b, e - b);
          }
        });
        std::vector<T> carries(chunks);
        carries[0] = identity<T, kKind>();
        carries[1] = dst[std::min(n, step) - 1];
        for (int64_t c = 2; c < chunks; ++c) carries[c] = combine<T, kKind>(carries[c - 1], totals[c - 1]);
        pool->parallel_for(chunks - 1, 1, [&](int64_t c0, int64_t c1) {
          for (int64_t c = c0 + 1; c < c1 + 1; ++c) {
            const int64_t b = std::min(n, c * step), e = std::min(n, b + step);
            scan_row<T, kKind, kSkipNan>(row + b, dst + b, e - b, carries[c]);
          }
        });
      }
      return;
    }
    const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, n));
    parallel_for(pool, outer, grain, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) scan_row<T, kKind, kSkipNan>(x + o * n, out + o * n, n, identity<T, kKind>());
    });
    return;
  }
  // Columns: tiles of the inner axis, each scanned down the n rows.
  const int64_t tile = 2048;
  const int64_t tiles = (inner + tile - 1) / tile;
  const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, n * std::min(inner, tile)));
  parallel_for(pool, outer * tiles, grain, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / tiles, i0 = (t % tiles) * tile, w = std::min(inner, i0 + tile) - i0;
      const T* src = x + o * n * inner + i0;
      T* dst = out + o * n * inner + i0;
      for (int64_t i = 0; i < w; ++i) dst[i] = load<T, kKind, kSkipNan>(src, i);
      for (int64_t j = 1; j < n; ++j) {
        const T* s = src + j * inner;
        const T* prev = dst + (j - 1) * inner;
        T* d = dst + j * inner;
        for (int64_t i = 0; i < w; ++i) d[i] = combine<T, kKind>(prev[i], load<T, kKind, kSkipNan>(s, i));
      }
    }
  });
}

template <class T>
void cumulative_dispatch(int kind, const void* x, int64_t outer, int64_t n, int64_t inner, bool skip_nan, void* out,
                         ThreadPool* pool) {
  const T* xt = (const T*)x;
  T* ot = (T*)out;
  if (kind == kScanSum) {
    if (skip_nan) cumulative_t<T, kScanSum, true>(xt, outer, n, inner, ot, pool);
    else cumulative_t<T, kScanSum, false>(xt, outer, n, inner, ot, pool);
  } else {
    if (skip_nan) cumulative_t<T, kScanProd, true>(xt, outer, n, inner, ot, pool);
    else cumulative_t<T, kScanProd, false>(xt, outer, n, inner, ot, pool);
  }
}

// ---------------------------------------------------------------- quantiles

// NumPy's interpolation between neighbours a <= b: exact at both ends.
inline double lerp(double a, double b, double t) {
  const double diff = b - a;
  return t >= 0.5 ? b - diff * (1 - t) : a + diff * t;
}

struct Position {
  int64_t lo, hi;  // order statistics needed (hi == lo: one)
  double gamma;    // weight of hi
};

Position position_of(double q, int64_t m, const QuantileOptions& opt) {
  const double last = (double)(m - 1);
  double index;
  switch (opt.method) {
    case kQuantileLower: { const int64_t i = (int64_t)std::floor(last * q); return {i, i, 0}; }
    case kQuantileHigher: { const int64_t i = (int64_t)std::ceil(last * q); return {i, i, 0}; }
    case kQuantileNearest: { const int64_t i = (int64_t)std::nearbyint(last * q); return {i, i, 0}; }
    case kQuantileMidpoint: index = 0.5 * (std::floor(last * q) + std::ceil(last * q)); break;
    case kQuantileMedian: return {(m - 1) / 2, m / 2, 0.5};
    default:
      index = opt.alpha == 1 && opt.beta == 1 ? last * q : (double)m * q + (opt.alpha + q * (1 - opt.alpha - opt.beta)) - 1;
  }
  if (!(index >= 0)) return {0, 0, 0};
  if (index >= last) return {m - 1, m - 1, 0};
  const double lo = std::floor(index);
  return {(int64_t)lo, (int64_t)lo + 1, index - lo};
}

template <class T>
void quantile_rows(const T* x, int64_t n, int64_t inner, int64_t rows, const double* q, int64_t nq,
                   const QuantileOptions& opt, T* out, int64_t r0, int64_t r1) {
  std::vector<T> buf(n);
  std::vector<Position> pos(nq);
  std::vector<int64_t> needed;
  needed.reserve(2 * nq);
  const T nan = std::numeric_limits<T>::quiet_NaN();
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t o = r / inner, i = r % inner;
    const T* src = x + o * n * inner + i;
    if (inner == 1) std::memcpy(buf.data(), src, n * sizeof(T));
    else for (int64_t j = 0; j < n; ++j) buf[j] = src[j * inner];
    int64_t m = n;
    if (opt.skip_nan) {
      m = std::partition(buf.begin(), buf.end(), [](T v) { return v == v; }) - buf.begin();
    } else if (std::any_of(buf.begin(), buf.end(), [](T v) { return v != v; })) {
      m = 0;
    }
    if (m == 0) {
      for (int64_t k = 0; k < nq; ++k) out[k * rows + r] = nan;
      continue;
    }
    needed.clear();
    for (int64_t k = 0; k < nq; ++k) {
      pos[k] = position_of(q[k], m, opt);
      needed.push_back(pos[k].lo);
      needed.push_back(pos[k].hi);
    }
    std::sort(needed.begin(), needed.end());
    needed.erase(std::unique(needed.begin(), needed.end()), needed.end());
    int64_t from = 0;
    for (const int64_t p : needed) {
      std::nth_element(buf.begin() + from, buf.begin() + p, buf.begin() + m);
      from = p + 1;
    }
    for (int64_t k = 0; k < nq; ++k) {
      const T a = buf[pos[k].lo], b = buf[pos[k].hi];
      T v;
      if (opt.method == kQuantileMedian) v = pos[k].lo == pos[k].hi ? a : (T)(a + b) / T(2);
      else v = pos[k].lo == pos[k].hi ? a : (T)lerp((double)a, (double)b, pos[k].gamma);
      out[k * rows + r] = v;
    }
  }
}

}  // namespace

void cumulative(int kind, DType dt, const void* x, int64_t outer, int64_t n, int64_t inner, bool skip_nan, void* out,
                ThreadPool* pool) {
  if (outer * n * inner == 0) return;
  switch (dt) {
    case DType::Int64: cumulative_dispatch<int64_t>(kind, x, outer, n, inner, false, out, pool); break;
    case DType::Float32: cumulative_dispatch<float>(kind, x, outer, n, inner, skip_nan, out, pool); break;
    case DType::Float64: cumulative_dispatch<double>(kind, x, outer, n, inner, skip_nan, out, pool); break;
    default: break;
  }
}

void quantiles(DType dt, const void* x, int64_t outer, int64_t n, int64_t inner, const double* q, int64_t nq,
               const QuantileOptions& options, void* out, ThreadPool* pool) {
  const int64_t rows = outer * inner;
  if (rows == 0 || nq == 0) return;
  const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, n));
  parallel_for(pool, rows, grain, [&](int64_t r0, int64_t r1) {
    if (dt == DType::Float32) {
      quantile_rows<float>((const float*)x, n, inner, rows, q, nq, options, (float*)out, r0, r1);
    } else {
      quantile_rows<double>((const double*)x, n, inner, rows, q, nq, options, (double*)out, r0, r1);
    }
  });
}

}  // namespace cpu
}  // namespace mnnpy
