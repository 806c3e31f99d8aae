// TopK per row (a scan for k = 1, a k-element heap for small k, else nth_element and a sort
// of the k winners), rows spread over the thread pool.
#include "backend/cpu/sort.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "mnnpy/thread_pool.h"

namespace mnnpy {
namespace cpu {

namespace {

template <class T>
struct Ranked {
  T value;
  int64_t index;
};

// A strict total order on values where NaN is above every number (as torch.topk ranks it),
// so the sorting algorithms always see a valid comparator.
template <class T>
inline bool value_above(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return !std::isnan(b);
    if (std::isnan(b)) return false;
  }
  return a > b;
}

// "a comes before b" in the output: the better value first, equal values by lower index
// (ONNX's tie rule). Indices are unique, so this is a strict total order.
template <class T, bool kLargest>
inline bool ranks_before(const Ranked<T>& a, const Ranked<T>& b) {
  const bool better = kLargest ? value_above(a.value, b.value) : value_above(b.value, a.value);
  if (better) return true;
  const bool worse = kLargest ? value_above(b.value, a.value) : value_above(a.value, b.value);
  return !worse && a.index < b.index;
}

template <class T, bool kLargest>
void topk_rows(const T* x, int64_t n, int64_t inner, int64_t k, bool sorted, T* values, int64_t* indices,
               int64_t row_begin, int64_t row_end) {
  auto before = [](const Ranked<T>& a, const Ranked<T>& b) { return ranks_before<T, kLargest>(a, b); };
  // One buffer per chunk of rows: rows along a strided axis are gathered into it so the
  // selection works on contiguous memory.
  // Small k: one scan keeping the k best in a heap whose top is the worst of them. On most
  // data few elements beat that top, so this is about one comparison per element (versus
  // copying the row and running nth_element over it).
  const bool use_heap = k > 1 && k * 16 <= n;
  std::vector<Ranked<T>> row(k == 1 ? 0 : use_heap ? (size_t)k : (size_t)n);
  for (int64_t r = row_begin; r < row_end; ++r) {
    const int64_t outer_index = r / inner, inner_index = r % inner;
    const T* src = x + outer_index * n * inner + inner_index;
    T* value_dst = values + outer_index * k * inner + inner_index;
    int64_t* index_dst = indices + outer_index * k * inner + inner_index;
    if (k == 1) {  // argmax/argmin: one pass, no buffer
      Ranked<T> best{src[0], 0};
      for (int64_t j = 1; j < n; ++j) {
        const Ranked<T> candidate{src[j * inner], j};
        if (before(candidate, best)) best = candidate;
      }
      value_dst[0] = best.value;
      index_dst[0] = best.index;
      continue;
    }
    if (use_heap) {
      for (int64_t j = 0; j < k; ++j) row[j] = Ranked<T>{src[j * inner], j};
      std::make_heap(row.begin(), row.end(), before);
      for (int64_t j = k; j < n; ++j) {
        const Ranked<T> candidate{src[j * inner], j};
        if (!before(candidate, row.front())) continue;
        std::pop_heap(row.begin(), row.end(), before);
        row.back() = candidate;
        std::push_heap(row.begin(), row.end(), before);
      }
      std::sort_heap(row.begin(), row.end(), before);  // best first, whatever `sorted` says
    } else {
      for (int64_t j = 0; j < n; ++j) row[j] = Ranked<T>{src[j * inner], j};
      if (k < n) std::nth_element(row.begin(), row.begin() + k, row.end(), before);
      if (sorted) std::sort(row.begin(), row.begin() + k, before);
    }
    for (int64_t j = 0; j < k; ++j) {
      value_dst[j * inner] = row[j].value;
      index_dst[j * inner] = row[j].index;
    }
  }
}

template <class T>
void topk_typed(const void* x, int64_t outer, int64_t n, int64_t inner, int64_t k, bool largest, bool sorted,
                void* values, int64_t* indices, ThreadPool* pool) {
  const int64_t rows = outer * inner;
  // Enough rows per chunk that each one sorts some tens of thousands of elements.
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(n, 1));
  parallel_for(pool, rows, grain, [&](int64_t begin, int64_t end) {
    if (largest) {
      topk_rows<T, true>((const T*)x, n, inner, k, sorted, (T*)values, indices, begin, end);
    } else {
      topk_rows<T, false>((const T*)x, n, inner, k, sorted, (T*)values, indices, begin, end);
    }
  });
}

}  // namespace

void topk(DType dt, const void* x, int64_t outer, int64_t n, int64_t inner, int64_t k, bool largest, bool sorted,
          void* values, int64_t* indices, ThreadPool* pool) {
  if (outer * inner * k == 0) return;
  switch (dt) {
    case DType::Int32: return topk_typed<int32_t>(x, outer, n, inner, k, largest, sorted, values, indices, pool);
    case DType::Int64: return topk_typed<int64_t>(x, outer, n, inner, k, largest, sorted, values, indices, pool);
    case DType::UInt64: return topk_typed<uint64_t>(x, outer, n, inner, k, largest, sorted, values, indices, pool);
    case DType::Float32: return topk_typed<float>(x, outer, n, inner, k, largest, sorted, values, indices, pool);
    case DType::Float64: return topk_typed<double>(x, outer, n, inner, k, largest, sorted, values, indices, pool);
    default: throw std::logic_error(std::string("topk: unsupported dtype ") + dtype_name(dt));
  }
}

}  // namespace cpu
}  // namespace mnnpy
