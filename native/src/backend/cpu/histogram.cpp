// Counting into bins: one partial histogram per thread when the bins are few.
#include "backend/cpu/histogram.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <type_traits>
#include <vector>

#include "mnnpy/thread_pool.h"

namespace mnnpy {
namespace cpu {

namespace {

template <class W>
bool count_range(const int64_t* index, const double* weights, int64_t i0, int64_t i1, int64_t length, W* counts) {
  for (int64_t i = i0; i < i1; ++i) {
    const int64_t k = index[i];
    if ((uint64_t)k >= (uint64_t)length) return false;
    if constexpr (std::is_same_v<W, double>) counts[k] += weights[i];
    else counts[k] += 1;
  }
  return true;
}

template <class W>
bool bincount_t(const int64_t* index, const double* weights, int64_t n, int64_t length, W* counts, ThreadPool* pool) {
  std::fill(counts, counts + length, W(0));
  const int threads = pool ? pool->num_threads() : 1;
  constexpr int64_t kGrain = 1 << 16;
  if (threads == 1 || n < 2 * kGrain || length * 4 > n) return count_range(index, weights, 0, n, length, counts);
  // Partial histograms per chunk, added in chunk order (weights sum in the same order each run).
  const int64_t chunks = std::min<int64_t>(threads, n / kGrain);
  const int64_t step = (n + chunks - 1) / chunks;
  std::vector<std::vector<W>> partial(chunks);
  std::atomic<bool> ok{true};
  pool->parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      partial[c].assign(length, W(0));
      const int64_t b = std::min(n, c * step), e = std::min(n, b + step);
      if (!count_range(index, weights, b, e, length, partial[c].data())) ok = false;
    }
  });
  for (int64_t c = 0; c < chunks; ++c)
    for (int64_t k = 0; k < length; ++k) counts[k] += partial[c][k];
  return ok;
}

}  // namespace

bool bincount(const int64_t* index, const double* weights, int64_t n, int64_t length, void* counts, ThreadPool* pool) {
  if (weights) return bincount_t<double>(index, weights, n, length, (double*)counts, pool);
  return bincount_t<int64_t>(index, nullptr, n, length, (int64_t*)counts, pool);
}

}  // namespace cpu
}  // namespace mnnpy
