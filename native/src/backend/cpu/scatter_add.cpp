// Scatter-add kernels. Work is split over (outer slice, column block) pairs: each task owns a
// disjoint part of the output and walks the indices in order, so sums are deterministic and
// need no atomics.
#include "backend/cpu/scatter_add.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "backend/cpu/copy.h"
#include "mnnpy/thread_pool.h"

namespace mnnpy {
namespace cpu {

namespace {

constexpr int64_t kColumnBlock = 512;     // columns per task: long enough for SIMD adds
constexpr int64_t kWorkPerTask = 1 << 15;  // elements touched per task before splitting pays

template <class I> inline int64_t wrapped(I raw, int64_t n) {
  int64_t k = index_as_int64(raw);
  return k < 0 ? k + n : k;
}

// Columns per task: at most kColumnBlock, fewer (in multiples of a cache line of floats) when
// there are too few outer slices to keep every thread busy.
int64_t column_block(int64_t outer, int64_t inner, ThreadPool* pool) {
  const int64_t threads = pool ? pool->num_threads() : 1;
  int64_t block = std::min(inner, kColumnBlock);
  if (outer < 2 * threads && inner > 32) {
    const int64_t wanted = (2 * threads + outer - 1) / outer;  // column blocks per slice
    block = std::min(block, std::max<int64_t>(16, ((inner + wanted - 1) / wanted + 15) / 16 * 16));
  }
  return block;
}

// One index per update row (Gather's layout), or one per update element (take_along_axis's):
// the tiling is the same, only where a column's index is read differs.
template <bool kPerElement, class T, class I>
void scatter_typed(const T* updates, const I* index, int64_t outer, int64_t m, int64_t inner, int64_t n, T* out,
                   ThreadPool* pool) {
  const int64_t block = column_block(outer, inner, pool);
  const int64_t blocks = (inner + block - 1) / block;
  const int64_t per_task = std::max<int64_t>(1, (m + n) * block);
  parallel_for(pool, outer * blocks, std::max<int64_t>(1, kWorkPerTask / per_task), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / blocks, c0 = (t % blocks) * block, len = std::min(block, inner - c0);
      T* dst = out + o * n * inner + c0;
      for (int64_t k = 0; k < n; ++k) std::memset(dst + k * inner, 0, (size_t)len * sizeof(T));
      const T* src = updates + o * m * inner + c0;
      for (int64_t j = 0; j < m; ++j) {
        const T* s = src + j * inner;
        if constexpr (kPerElement) {
          const I* idx = index + (o * m + j) * inner + c0;
          for (int64_t i = 0; i < len; ++i) {
            const int64_t k = wrapped(idx[i], n);
            if ((uint64_t)k < (uint64_t)n) dst[k * inner + i] += s[i];
          }
        } else {
          const int64_t k = wrapped(index[j], n);
          if ((uint64_t)k >= (uint64_t)n) continue;
          T* d = dst + k * inner;
          for (int64_t i = 0; i < len; ++i) d[i] += s[i];
        }
      }
    }
  });
}

template <class Fn> void dispatch(DType dtype, DType index_dtype, Fn&& fn) {
  bool integral = false;
  if (dtype == DType::Float32) {
    integral = with_index_type(index_dtype, [&](auto tag) { fn(float{}, tag); });
  } else if (dtype == DType::Float64) {
    integral = with_index_type(index_dtype, [&](auto tag) { fn(double{}, tag); });
  } else {
    throw std::invalid_argument(std::string("scatter_add: unsupported dtype ") + dtype_name(dtype));
  }
  if (!integral) {
    throw std::invalid_argument(std::string("scatter_add: unsupported index dtype ") + dtype_name(index_dtype));
  }
}

}  // namespace

void scatter_add(DType dtype, DType index_dtype, const void* updates, const void* index, bool per_element,
                 int64_t outer, int64_t m, int64_t inner, int64_t n, void* out, ThreadPool* pool) {
  if (outer * n * inner == 0) return;
  dispatch(dtype, index_dtype, [&](auto t, auto i) {
    using T = decltype(t);
    using I = decltype(i);
    if (per_element) scatter_typed<true>((const T*)updates, (const I*)index, outer, m, inner, n, (T*)out, pool);
    else scatter_typed<false>((const T*)updates, (const I*)index, outer, m, inner, n, (T*)out, pool);
  });
}

}  // namespace cpu
}  // namespace mnnpy
