// Branchless binary search (the loop has no data-dependent branch, so mispredictions do not
// dominate on random keys); elements are spread over the thread pool.
#include "backend/cpu/search.h"

#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "mnnpy/thread_pool.h"

namespace mnnpy {
namespace cpu {

namespace {

// a < b with NaN above every number (NumPy's sort order).
template <class T>
inline bool sort_less(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return a < b || (std::isnan(b) && !std::isnan(a));
  } else {
    return a < b;
  }
}

// Number of leading elements of sorted[0:n] that come before key: for the left side those
// less than key, for the right side those not greater than it.
template <class T, bool kRight>
inline int64_t insertion_point(const T* sorted, int64_t n, T key) {
  if (n == 0) return 0;
  auto before = [&](T x) { return kRight ? !sort_less(key, x) : sort_less(x, key); };
  const T* base = sorted;
  while (n > 1) {
    const int64_t half = n >> 1;
    base = before(base[half]) ? base + half : base;
    n -= half;
  }
  return (base - sorted) + (before(*base) ? 1 : 0);
}

template <class T>
void search_typed(const T* sorted, int64_t n, const T* v, int64_t count, bool right, int64_t* out, ThreadPool* pool) {
  parallel_for(pool, count, 2048, [&](int64_t begin, int64_t end) {
    if (right) {
      for (int64_t i = begin; i < end; ++i) out[i] = insertion_point<T, true>(sorted, n, v[i]);
    } else {
      for (int64_t i = begin; i < end; ++i) out[i] = insertion_point<T, false>(sorted, n, v[i]);
    }
  });
}

}  // namespace

void searchsorted(DType dt, const void* sorted, int64_t n, const void* v, int64_t count, bool right, int64_t* out,
                  ThreadPool* pool) {
  switch (dt) {
    case DType::Bool:
    case DType::UInt8:
      return search_typed(static_cast<const uint8_t*>(sorted), n, static_cast<const uint8_t*>(v), count, right, out, pool);
    case DType::Int8:
      return search_typed(static_cast<const int8_t*>(sorted), n, static_cast<const int8_t*>(v), count, right, out, pool);
    case DType::Int16:
      return search_typed(static_cast<const int16_t*>(sorted), n, static_cast<const int16_t*>(v), count, right, out, pool);
    case DType::Int32:
      return search_typed(static_cast<const int32_t*>(sorted), n, static_cast<const int32_t*>(v), count, right, out, pool);
    case DType::Int64:
      return search_typed(static_cast<const int64_t*>(sorted), n, static_cast<const int64_t*>(v), count, right, out, pool);
    case DType::UInt16:
      return search_typed(static_cast<const uint16_t*>(sorted), n, static_cast<const uint16_t*>(v), count, right, out, pool);
    case DType::UInt32:
      return search_typed(static_cast<const uint32_t*>(sorted), n, static_cast<const uint32_t*>(v), count, right, out, pool);
    case DType::UInt64:
      return search_typed(static_cast<const uint64_t*>(sorted), n, static_cast<const uint64_t*>(v), count, right, out, pool);
    case DType::Float32:
      return search_typed(static_cast<const float*>(sorted), n, static_cast<const float*>(v), count, right, out, pool);
    case DType::Float64:
      return search_typed(static_cast<const double*>(sorted), n, static_cast<const double*>(v), count, right, out, pool);
    default:
      throw std::invalid_argument(std::string("searchsorted: unsupported dtype ") + dtype_name(dt));
  }
}

}  // namespace cpu
}  // namespace mnnpy
