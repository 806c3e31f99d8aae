// Threshold and inRange kernels, compiled per SIMD target by Highway and chosen at run time.
// Both are one pass over memory: a compare and a select (threshold) or a compare per channel
// and an AND across the pixel's channels (inRange, deinterleaving 3-channel pixels).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/cv_threshold_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backend/cpu/cv_threshold.h"
#include "backend/cpu/prefetch.h"
#include "mnnpy/thread_pool.h"

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace cv_threshold {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The select of one threshold kind, for vectors and for the scalar tail alike.
template <ThresholdKind K, class Mask, class V>
HWY_INLINE V select(Mask above, V x, V level, V top, V zero) {
  if constexpr (K == ThresholdKind::Binary) return hn::IfThenElse(above, top, zero);
  else if constexpr (K == ThresholdKind::BinaryInv) return hn::IfThenElse(above, zero, top);
  else if constexpr (K == ThresholdKind::Trunc) return hn::IfThenElse(above, level, x);
  else if constexpr (K == ThresholdKind::ToZero) return hn::IfThenElse(above, x, zero);
  else return hn::IfThenElse(above, zero, x);
}

// level_t: the threshold in T; all_above / none_above: an integer level outside T's range.
template <class T, ThresholdKind K>
void threshold_run(const T* HWY_RESTRICT src, T* HWY_RESTRICT dst, int64_t n, T level_t, T top_t, bool all_above,
                   bool none_above) {
  const hn::ScalableTag<T> d;
  const int64_t N = (int64_t)hn::Lanes(d);
  const auto level = hn::Set(d, level_t), top = hn::Set(d, top_t), zero = hn::Zero(d);
  const auto every = hn::FirstN(d, N), none = hn::FirstN(d, 0);
  const auto vector_at = [&](int64_t j) {
    const auto x = hn::LoadU(d, src + j);
    const auto above = all_above ? every : none_above ? none : hn::Gt(x, level);
    hn::StoreU(select<K>(above, x, level, top, zero), d, dst + j);
  };
  // A cache line of output per step, asked for ahead of the stores.
  const int64_t step = std::max<int64_t>(N, 64 / (int64_t)sizeof(T));
  int64_t i = 0;
  for (; i + step <= n; i += step) {
    prefetch_for_write(dst + i + kWritePrefetchBytes / (int64_t)sizeof(T));
    for (int64_t j = i; j < i + step; j += N) vector_at(j);
  }
  for (; i + N <= n; i += N) vector_at(i);
  for (; i < n; ++i) {
    const T x = src[i];
    const bool above = all_above || (!none_above && x > level_t);
    if constexpr (K == ThresholdKind::Binary) dst[i] = above ? top_t : T(0);
    else if constexpr (K == ThresholdKind::BinaryInv) dst[i] = above ? T(0) : top_t;
    else if constexpr (K == ThresholdKind::Trunc) dst[i] = above ? level_t : x;
    else if constexpr (K == ThresholdKind::ToZero) dst[i] = above ? x : T(0);
    else dst[i] = above ? T(0) : x;
  }
}

template <class T>
void threshold_t(int kind, double level, double maxval, const void* src, void* dst, int64_t begin, int64_t end) {
  bool all_above = false, none_above = false;
  T level_t, top_t = (T)maxval;
  if constexpr (std::numeric_limits<T>::is_integer) {
    const double lo = (double)std::numeric_limits<T>::min(), hi = (double)std::numeric_limits<T>::max();
    all_above = level < lo;
    none_above = level >= hi;
    level_t = (T)std::min(std::max(level, lo), hi);
  } else {
    level_t = (T)level;
  }
  const T* s = static_cast<const T*>(src) + begin;
  T* o = static_cast<T*>(dst) + begin;
  const int64_t n = end - begin;
  switch ((ThresholdKind)kind) {
    case ThresholdKind::Binary: return threshold_run<T, ThresholdKind::Binary>(s, o, n, level_t, top_t, all_above, none_above);
    case ThresholdKind::BinaryInv:
      return threshold_run<T, ThresholdKind::BinaryInv>(s, o, n, level_t, top_t, all_above, none_above);
    case ThresholdKind::Trunc: return threshold_run<T, ThresholdKind::Trunc>(s, o, n, level_t, top_t, all_above, none_above);
    case ThresholdKind::ToZero: return threshold_run<T, ThresholdKind::ToZero>(s, o, n, level_t, top_t, all_above, none_above);
    case ThresholdKind::ToZeroInv:
      return threshold_run<T, ThresholdKind::ToZeroInv>(s, o, n, level_t, top_t, all_above, none_above);
  }
}

void ThresholdImpl(DType dt, int kind, double level, double maxval, const void* src, void* dst, int64_t begin,
                   int64_t end) {
  switch (dt) {
    case DType::UInt8: return threshold_t<uint8_t>(kind, level, maxval, src, dst, begin, end);
    case DType::Int16: return threshold_t<int16_t>(kind, level, maxval, src, dst, begin, end);
    case DType::Float32: return threshold_t<float>(kind, level, maxval, src, dst, begin, end);
    case DType::Float64: return threshold_t<double>(kind, level, maxval, src, dst, begin, end);
    default: return;
  }
}

// A per-channel bound in T: integer bounds clamped into T's range (a bound beyond it either
// admits every value or none, which the clamped comparison reproduces when empty is false).
template <class T>
void bounds_in(const double* lower, const double* upper, int channels, T* lo, T* hi, bool* empty) {
  *empty = false;
  for (int c = 0; c < channels; ++c) {
    double l = lower[c], h = upper[c];
    if constexpr (std::numeric_limits<T>::is_integer) {
      const double tmin = (double)std::numeric_limits<T>::min(), tmax = (double)std::numeric_limits<T>::max();
      if (l > tmax || h < tmin || l > h) *empty = true;
      l = std::min(std::max(l, tmin), tmax);
      h = std::min(std::max(h, tmin), tmax);
    }
    lo[c] = (T)l;
    hi[c] = (T)h;
  }
}

template <class T>
void in_range_t(const void* psrc, int64_t p0, int64_t p1, int channels, const double* lower, const double* upper,
                uint8_t* mask) {
  std::vector<T> lo_values(channels), hi_values(channels);
  T* lo = lo_values.data();
  T* hi = hi_values.data();
  bool empty = false;
  bounds_in<T>(lower, upper, channels, lo, hi, &empty);
  const T* src = static_cast<const T*>(psrc);
  if (empty) {
    std::fill(mask + p0, mask + p1, uint8_t(0));
    return;
  }
  int64_t p = p0;
  if constexpr (sizeof(T) == 1) {
    // Byte images: 1 or 3 channels a vector of pixels at a time.
    const hn::ScalableTag<T> d;
    const int64_t N = (int64_t)hn::Lanes(d);
    const auto ff = hn::Set(d, T(0xFF)), zero = hn::Zero(d);
    if (channels == 1) {
      const auto l = hn::Set(d, lo[0]), h = hn::Set(d, hi[0]);
      for (; p + N <= p1; p += N) {
        const auto x = hn::LoadU(d, src + p);
        hn::StoreU(hn::IfThenElse(hn::Eq(hn::Min(hn::Max(x, l), h), x), ff, zero), d, mask + p);
      }
    } else if (channels == 3) {
      const auto l0 = hn::Set(d, lo[0]), l1 = hn::Set(d, lo[1]), l2 = hn::Set(d, lo[2]);
      const auto h0 = hn::Set(d, hi[0]), h1 = hn::Set(d, hi[1]), h2 = hn::Set(d, hi[2]);
      for (; p + N <= p1; p += N) {
        hn::Vec<decltype(d)> x0, x1, x2;
        hn::LoadInterleaved3(d, src + 3 * p, x0, x1, x2);
        // x lies within [l, h] exactly when clamping leaves it as it is (l <= h here).
        const auto in0 = hn::Eq(hn::Min(hn::Max(x0, l0), h0), x0);
        const auto in1 = hn::Eq(hn::Min(hn::Max(x1, l1), h1), x1);
        const auto in2 = hn::Eq(hn::Min(hn::Max(x2, l2), h2), x2);
        hn::StoreU(hn::IfThenElse(hn::And(in0, hn::And(in1, in2)), ff, zero), d, mask + p);
      }
    }
  }
  for (; p < p1; ++p) {
    bool inside = true;
    for (int c = 0; c < channels; ++c) {
      const T v = src[p * channels + c];
      inside &= (v >= lo[c]) & (v <= hi[c]);
    }
    mask[p] = inside ? 255 : 0;
  }
}

void InRangeImpl(DType dt, const void* src, int64_t p0, int64_t p1, int channels, const double* lower,
                 const double* upper, uint8_t* mask) {
  switch (dt) {
    case DType::UInt8: return in_range_t<uint8_t>(src, p0, p1, channels, lower, upper, mask);
    case DType::Int16: return in_range_t<int16_t>(src, p0, p1, channels, lower, upper, mask);
    case DType::Float32: return in_range_t<float>(src, p0, p1, channels, lower, upper, mask);
    case DType::Float64: return in_range_t<double>(src, p0, p1, channels, lower, upper, mask);
    default: return;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace cv_threshold
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
namespace cv_threshold {
HWY_EXPORT(ThresholdImpl);
HWY_EXPORT(InRangeImpl);

namespace {
constexpr int64_t kGrainBytes = 64 << 10;  // the least work worth another thread

template <class T>
void in_range_arrays_t(const void* psrc, const void* plo, const void* phi, int64_t p0, int64_t p1, int channels,
                       uint8_t* mask) {
  const T* src = static_cast<const T*>(psrc);
  const T* lo = static_cast<const T*>(plo);
  const T* hi = static_cast<const T*>(phi);
  for (int64_t p = p0; p < p1; ++p) {
    bool inside = true;
    for (int c = 0; c < channels; ++c) {
      const int64_t i = p * channels + c;
      inside &= (src[i] >= lo[i]) & (src[i] <= hi[i]);
    }
    mask[p] = inside ? 255 : 0;
  }
}
}  // namespace

void threshold(DType dt, ThresholdKind kind, double level, double maxval, const void* src, void* dst, int64_t n,
               ThreadPool* pool) {
  const int64_t grain = std::max<int64_t>(1, kGrainBytes / (int64_t)dtype_size(dt));
  parallel_for(pool, n, grain, [&](int64_t begin, int64_t end) {
    HWY_DYNAMIC_DISPATCH(ThresholdImpl)(dt, (int)kind, level, maxval, src, dst, begin, end);
  });
}

void in_range(DType dt, const void* src, int64_t pixels, int channels, const double* lower, const double* upper,
              uint8_t* mask, ThreadPool* pool) {
  const int64_t grain = std::max<int64_t>(1, kGrainBytes / ((int64_t)dtype_size(dt) * channels));
  parallel_for(pool, pixels, grain, [&](int64_t p0, int64_t p1) {
    HWY_DYNAMIC_DISPATCH(InRangeImpl)(dt, src, p0, p1, channels, lower, upper, mask);
  });
}

void in_range_arrays(DType dt, const void* src, const void* lower, const void* upper, int64_t pixels, int channels,
                     uint8_t* mask, ThreadPool* pool) {
  const int64_t grain = std::max<int64_t>(1, kGrainBytes / ((int64_t)dtype_size(dt) * channels));
  parallel_for(pool, pixels, grain, [&](int64_t p0, int64_t p1) {
    switch (dt) {
      case DType::UInt8: return in_range_arrays_t<uint8_t>(src, lower, upper, p0, p1, channels, mask);
      case DType::Int16: return in_range_arrays_t<int16_t>(src, lower, upper, p0, p1, channels, mask);
      case DType::Float32: return in_range_arrays_t<float>(src, lower, upper, p0, p1, channels, mask);
      case DType::Float64: return in_range_arrays_t<double>(src, lower, upper, p0, p1, channels, mask);
      default: return;
    }
  });
}

void histogram_u8(const uint8_t* data, int64_t n, int64_t* counts, ThreadPool* pool) {
  constexpr int64_t kChunk = 1 << 18;
  const int64_t chunks = std::max<int64_t>(1, (n + kChunk - 1) / kChunk);
  std::vector<int64_t> partial((size_t)chunks * 256, 0);
  parallel_for(pool, chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      // Four tables, so that runs of equal bytes do not wait on one counter's last increment.
      uint32_t table[4][256] = {};
      const uint8_t* p = data + c * kChunk;
      const int64_t m = std::min(kChunk, n - c * kChunk);
      int64_t i = 0;
      for (; i + 4 <= m; i += 4) {
        ++table[0][p[i]];
        ++table[1][p[i + 1]];
        ++table[2][p[i + 2]];
        ++table[3][p[i + 3]];
      }
      for (; i < m; ++i) ++table[0][p[i]];
      int64_t* out = partial.data() + c * 256;
      for (int v = 0; v < 256; ++v) out[v] = (int64_t)table[0][v] + table[1][v] + table[2][v] + table[3][v];
    }
  });
  std::fill(counts, counts + 256, int64_t(0));
  for (int64_t c = 0; c < chunks; ++c)
    for (int v = 0; v < 256; ++v) counts[v] += partial[c * 256 + v];
}

}  // namespace cv_threshold
}  // namespace cpu
}  // namespace mnnpy
#endif
