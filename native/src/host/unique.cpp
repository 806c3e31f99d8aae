// numpy.unique's compaction (see unique.h). Runs are found on canonical keys (host/sort_keys.h),
// so that -0.0 meets 0.0 and NaNs meet each other only with equal_nan.
#include "host/unique.h"

#include <algorithm>
#include <vector>

#include "host/sort_keys.h"
#include "mnnpy/thread_pool.h"

namespace mnnpy {
namespace host {

namespace {

using namespace sort_keys;

constexpr int64_t kParallelMin = 1 << 16;  // a sequence this long is scanned by every thread

bool split_over_pool(int64_t n, ThreadPool* pool) {
  return pool && pool->num_threads() > 1 && n >= kParallelMin;
}

// Where each run of equal keys starts in a sorted sequence (key_at(i) gives the canonical key
// of the i-th), with n appended. NaN keys form one run only with equal_nan.
template <class Tr, class KeyAt>
std::vector<int64_t> run_starts(int64_t n, KeyAt key_at, bool equal_nan, ThreadPool* pool) {
  auto starts_here = [&](int64_t i) {
    if (i == 0) return true;
    const auto k = key_at(i);
    return k != key_at(i - 1) || (!equal_nan && is_nan_key<Tr>(k));
  };
  const int64_t parts = split_over_pool(n, pool) ? pool->num_threads() : 1;
  const int64_t part_len = (n + parts - 1) / std::max<int64_t>(parts, 1);
  std::vector<int64_t> part_count((size_t)parts + 1, 0);
  auto for_parts = [&](auto&& fn) {
    if (parts == 1) {
      fn(0);
    } else {
      parallel_for(pool, parts, 1, [&](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p) fn(p);
      });
    }
  };
  for_parts([&](int64_t p) {
    int64_t c = 0;
    for (int64_t i = p * part_len, e = std::min(n, i + part_len); i < e; ++i) c += starts_here(i);
    part_count[p + 1] = c;
  });
  for (int64_t p = 0; p < parts; ++p) part_count[p + 1] += part_count[p];
  std::vector<int64_t> starts((size_t)part_count[parts] + 1);
  for_parts([&](int64_t p) {
    int64_t j = part_count[p];
    for (int64_t i = p * part_len, e = std::min(n, i + part_len); i < e; ++i) {
      if (starts_here(i)) starts[j++] = i;
    }
  });
  starts.back() = n;
  return starts;
}

std::shared_ptr<Tensor> int64_tensor(int64_t n) { return Tensor::allocate(TensorType{DType::Int64, {n}}); }

// The outputs that follow from the runs of a sorted order (perm_at(i): the original position
// of the i-th sorted element).
template <class PermAt>
void fill_from_runs(const std::vector<int64_t>& starts, int64_t n, PermAt perm_at, bool want_index, bool want_inverse,
                    bool want_counts, UniqueParts& out, ThreadPool* pool) {
  const int64_t groups = (int64_t)starts.size() - 1;
  if (want_index) {
    out.first_index = int64_tensor(groups);
    int64_t* f = out.first_index->ptr<int64_t>();
    for (int64_t j = 0; j < groups; ++j) f[j] = perm_at(starts[j]);
  }
  if (want_counts) {
    out.counts = int64_tensor(groups);
    int64_t* c = out.counts->ptr<int64_t>();
    for (int64_t j = 0; j < groups; ++j) c[j] = starts[j + 1] - starts[j];
  }
  if (want_inverse) {
    out.inverse = int64_tensor(n);
    int64_t* inv = out.inverse->ptr<int64_t>();
    parallel_for(split_over_pool(n, pool) ? pool : nullptr, groups, 1024, [&](int64_t b, int64_t e) {
      for (int64_t j = b; j < e; ++j) {
        for (int64_t i = starts[j]; i < starts[j + 1]; ++i) inv[perm_at(i)] = j;
      }
    });
  }
}

template <class Tr>
UniqueParts unique_sorted_typed(DType dt, const void* sorted, int64_t n, bool want_counts, bool equal_nan,
                                ThreadPool* pool) {
  using S = typename Tr::Storage;
  const S* s = static_cast<const S*>(sorted);
  const auto starts = run_starts<Tr>(n, [&](int64_t i) { return Tr::canon(s[i]); }, equal_nan, pool);
  const int64_t groups = (int64_t)starts.size() - 1;
  UniqueParts out;
  out.values = Tensor::allocate(TensorType{dt, {groups}});
  S* v = out.values->ptr<S>();
  for (int64_t j = 0; j < groups; ++j) v[j] = s[starts[j]];
  fill_from_runs(starts, n, [](int64_t i) { return i; }, false, false, want_counts, out, pool);
  return out;
}

template <class Tr>
UniqueParts unique_by_order_typed(DType dt, const void* xv, const int64_t* p, int64_t n, bool want_index,
                                  bool want_inverse, bool want_counts, bool equal_nan, ThreadPool* pool) {
  using S = typename Tr::Storage;
  const S* x = static_cast<const S*>(xv);
  const auto starts = run_starts<Tr>(n, [&](int64_t i) { return Tr::canon(x[p[i]]); }, equal_nan, pool);
  const int64_t groups = (int64_t)starts.size() - 1;
  UniqueParts out;
  out.values = Tensor::allocate(TensorType{dt, {groups}});
  S* v = out.values->ptr<S>();
  for (int64_t j = 0; j < groups; ++j) v[j] = x[p[starts[j]]];
  fill_from_runs(starts, n, [p](int64_t i) { return p[i]; }, want_index, want_inverse, want_counts, out, pool);
  return out;
}

template <class Tr>
UniqueParts unique_rows_typed(const void* xv, int64_t rows, int64_t row_len, bool want_inverse, bool want_counts,
                              bool equal_nan, ThreadPool* pool) {
  using S = typename Tr::Storage;
  using K = typename Tr::Key;
  const S* x = static_cast<const S*>(xv);
  std::vector<K> keys((size_t)(rows * row_len));
  for (int64_t i = 0; i < rows * row_len; ++i) keys[i] = Tr::canon(x[i]);
  std::vector<int64_t> order((size_t)rows);
  for (int64_t r = 0; r < rows; ++r) order[r] = r;
  auto row_less = [&](int64_t a, int64_t b) {
    const K* ka = keys.data() + a * row_len;
    const K* kb = keys.data() + b * row_len;
    for (int64_t j = 0; j < row_len; ++j) {
      if (ka[j] != kb[j]) return ka[j] < kb[j];
    }
    return false;
  };
  std::stable_sort(order.begin(), order.end(), row_less);
  std::vector<int64_t> starts;
  for (int64_t i = 0; i < rows; ++i) {
    bool new_run = i == 0 || row_less(order[i - 1], order[i]);
    if (!new_run && !equal_nan) {
      const K* k = keys.data() + order[i] * row_len;
      for (int64_t j = 0; j < row_len && !new_run; ++j) new_run = is_nan_key<Tr>(k[j]);
    }
    if (new_run) starts.push_back(i);
  }
  starts.push_back(rows);
  UniqueParts out;
  fill_from_runs(starts, rows, [&](int64_t i) { return order[i]; }, true, want_inverse, want_counts, out, pool);
  return out;
}

}  // namespace

UniqueParts unique_sorted(DType dt, const void* sorted, int64_t n, bool want_counts, bool equal_nan,
                          ThreadPool* pool) {
  UniqueParts out;
  with_keys(dt, [&](auto tag) {
    using Tr = typename decltype(tag)::type;
    out = unique_sorted_typed<Tr>(dt, sorted, n, want_counts, equal_nan, pool);
  });
  return out;
}

UniqueParts unique_by_order(DType dt, const void* x, const int64_t* order, int64_t n, bool want_index,
                            bool want_inverse, bool want_counts, bool equal_nan, ThreadPool* pool) {
  UniqueParts out;
  with_keys(dt, [&](auto tag) {
    using Tr = typename decltype(tag)::type;
    out = unique_by_order_typed<Tr>(dt, x, order, n, want_index, want_inverse, want_counts, equal_nan, pool);
  });
  return out;
}

UniqueParts unique_rows(DType dt, const void* x, int64_t rows, int64_t row_len, bool want_inverse, bool want_counts,
                        bool equal_nan, ThreadPool* pool) {
  UniqueParts out;
  with_keys(dt, [&](auto tag) {
    using Tr = typename decltype(tag)::type;
    out = unique_rows_typed<Tr>(x, rows, row_len, want_inverse, want_counts, equal_nan, pool);
  });
  return out;
}

}  // namespace host
}  // namespace mnnpy
