// Element gathers with the indices checked in one branch-free select and the data loads
// issued ahead (prefetch) so that random positions overlap their cache misses.
#include "backend/cpu/take.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/cpu/copy.h"
#include "mnnpy/thread_pool.h"

namespace mnnpy {
namespace cpu {

namespace {

constexpr int64_t kPrefetchDistance = 16;

// Returns whether every index was in range: the check rides along the gather (one OR per
// element), so callers holding known indices need no separate pass over them.
template <class T, class I>
bool take_typed(const T* data, int64_t n, const I* index, int64_t count, T* out, ThreadPool* pool) {
  std::atomic<bool> all_in_range{true};
  parallel_for(pool, count, 16384, [&](int64_t begin, int64_t end) {
    auto position = [&](int64_t i) {
      int64_t k = index_as_int64(index[i]);
      k += k < 0 ? n : 0;
      return k;
    };
    bool bad = false;
    const int64_t ahead_end = end - kPrefetchDistance;
    int64_t i = begin;
    for (; i < ahead_end; ++i) {
      const int64_t p = position(i + kPrefetchDistance);
      if ((uint64_t)p < (uint64_t)n) __builtin_prefetch(data + p);
      const int64_t k = position(i);
      const bool inside = (uint64_t)k < (uint64_t)n;
      bad |= !inside;
      out[i] = inside ? data[k] : T(0);
    }
    for (; i < end; ++i) {
      const int64_t k = position(i);
      const bool inside = (uint64_t)k < (uint64_t)n;
      bad |= !inside;
      out[i] = inside ? data[k] : T(0);
    }
    if (bad) all_in_range.store(false, std::memory_order_relaxed);
  });
  return all_in_range.load();
}

template <class T>
bool take_index_dispatch(DType index_dtype, const T* data, int64_t n, const void* index, int64_t count, T* out,
                         ThreadPool* pool) {
  bool all_in_range = true;
  const bool integral = with_index_type(index_dtype, [&](auto tag) {
    all_in_range = take_typed(data, n, static_cast<const decltype(tag)*>(index), count, out, pool);
  });
  if (!integral) throw std::invalid_argument(std::string("take: unsupported index dtype ") + dtype_name(index_dtype));
  return all_in_range;
}

template <class T>
void repeat_typed(const T* data, int64_t outer, int64_t n, int64_t inner, const int64_t* repeats, bool one_count,
                  T* out, ThreadPool* pool) {
  int64_t total = 0;  // output length of the axis
  std::vector<int64_t> start((size_t)n + 1, 0);
  for (int64_t j = 0; j < n; ++j) start[j + 1] = start[j] + repeats[one_count ? 0 : j];
  total = start[n];
  // Rows of the output (outer, j) are independent: split them over the pool.
  const int64_t rows = outer * n;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, inner * (total / std::max<int64_t>(n, 1) + 1)));
  parallel_for(pool, rows, grain, [&](int64_t r0, int64_t r1) {
    int64_t o = r0 / n, j = r0 % n;  // advanced by increments: no division per element
    const T* src = data + r0 * inner;
    T* dst = out + (o * total + start[j]) * inner;
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t count = start[j + 1] - start[j];
      if (inner == 1) {
        const T value = *src;
        for (int64_t c = 0; c < count; ++c) dst[c] = value;
      } else {
        for (int64_t c = 0; c < count; ++c) std::memcpy(dst + c * inner, src, (size_t)inner * sizeof(T));
      }
      src += inner;
      dst += count * inner;
      if (++j == n) {
        j = 0;
        ++o;
      }
    }
  });
}

}  // namespace

void repeat_elements(size_t elem_size, const void* data, int64_t outer, int64_t n, int64_t inner,
                     const int64_t* repeats, bool one_count, void* out, ThreadPool* pool) {
  switch (elem_size) {
    case 1:
      return repeat_typed(static_cast<const uint8_t*>(data), outer, n, inner, repeats, one_count,
                          static_cast<uint8_t*>(out), pool);
    case 2:
      return repeat_typed(static_cast<const uint16_t*>(data), outer, n, inner, repeats, one_count,
                          static_cast<uint16_t*>(out), pool);
    case 4:
      return repeat_typed(static_cast<const uint32_t*>(data), outer, n, inner, repeats, one_count,
                          static_cast<uint32_t*>(out), pool);
    case 8:
      return repeat_typed(static_cast<const uint64_t*>(data), outer, n, inner, repeats, one_count,
                          static_cast<uint64_t*>(out), pool);
    default:
      throw std::invalid_argument("repeat: unsupported element size " + std::to_string(elem_size));
  }
}

bool take_elements(size_t elem_size, DType index_dtype, const void* data, int64_t n, const void* index,
                   int64_t count, void* out, ThreadPool* pool) {
  switch (elem_size) {
    case 1:
      return take_index_dispatch(index_dtype, static_cast<const uint8_t*>(data), n, index, count,
                                 static_cast<uint8_t*>(out), pool);
    case 2:
      return take_index_dispatch(index_dtype, static_cast<const uint16_t*>(data), n, index, count,
                                 static_cast<uint16_t*>(out), pool);
    case 4:
      return take_index_dispatch(index_dtype, static_cast<const uint32_t*>(data), n, index, count,
                                 static_cast<uint32_t*>(out), pool);
    case 8:
      return take_index_dispatch(index_dtype, static_cast<const uint64_t*>(data), n, index, count,
                                 static_cast<uint64_t*>(out), pool);
    default:
      throw std::invalid_argument("take: unsupported element size " + std::to_string(elem_size));
  }
}

}  // namespace cpu
}  // namespace mnnpy
