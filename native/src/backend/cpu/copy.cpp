// Data movement kernels. Plain C++: the work is memory-bound, memcpy handles contiguous
// runs, and the element loops below are simple enough for the compiler.
#include "backend/cpu/copy.h"

#include <algorithm>
#include <cstring>

#include "mnnpy/thread_pool.h"

namespace mnnpy {
namespace cpu {

namespace {

constexpr int64_t kTaskBytes = 64 << 10;   // the least work worth handing to another thread
constexpr int64_t kMemcpyChunk = 256 << 10;
constexpr int64_t kTile = 32;              // transposes move kTile x kTile element tiles

// Calls f with a value of the unsigned type as wide as one element.
template <class F> void with_elem_type(size_t elem_size, F&& f) {
  switch (elem_size) {
    case 1: f(uint8_t{}); break;
    case 2: f(uint16_t{}); break;
    case 4: f(uint32_t{}); break;
    case 8: f(uint64_t{}); break;
    default: break;
  }
}

template <class F> void with_index_type(DType t, F&& f) {
  switch (t) {
    case DType::Int8: f(int8_t{}); break;
    case DType::UInt8: f(uint8_t{}); break;
    case DType::Int16: f(int16_t{}); break;
    case DType::Int32: f(int32_t{}); break;
    case DType::Int64: f(int64_t{}); break;
    default: break;
  }
}

void run_parallel(ThreadPool* pool, int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (pool) pool->parallel_for(n, grain, fn);
  else if (n > 0) fn(0, n);
}

// n elements from s (stride ss) to d (stride ds).
template <class T> void copy_elements(const T* s, int64_t ss, T* d, int64_t ds, int64_t n) {
  if (ds == 1) {
    if (ss == 1) {
      std::memcpy(d, s, n * sizeof(T));
    } else if (ss == 0) {
      std::fill_n(d, n, *s);
    } else if (ss == -1) {
      for (int64_t k = 0; k < n; ++k) d[k] = s[-k];
    } else {
      for (int64_t k = 0; k < n; ++k) d[k] = s[k * ss];
    }
    return;
  }
  for (int64_t k = 0; k < n; ++k) d[k * ds] = s[k * ss];
}

// A multi-index over `dims` with the matching source/destination offsets, advanced one
// step at a time (the last dim fastest).
struct Walker {
  const std::vector<int64_t>& dims;
  const std::vector<int64_t>& ss;
  const std::vector<int64_t>& ds;
  std::vector<int64_t> idx;
  int64_t src = 0, dst = 0;

  Walker(const std::vector<int64_t>& d, const std::vector<int64_t>& s, const std::vector<int64_t>& t, int64_t flat)
      : dims(d), ss(s), ds(t), idx(d.size()) {
    for (size_t k = dims.size(); k-- > 0;) {
      idx[k] = flat % dims[k];
      flat /= dims[k];
      src += idx[k] * ss[k];
      dst += idx[k] * ds[k];
    }
  }
  void next() {
    for (size_t k = dims.size(); k-- > 0;) {
      src += ss[k];
      dst += ds[k];
      if (++idx[k] < dims[k]) return;
      src -= dims[k] * ss[k];
      dst -= dims[k] * ds[k];
      idx[k] = 0;
    }
  }
};

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

}  // namespace

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    s[k] = acc;
    acc *= shape[k];
  }
  return s;
}

void parallel_memcpy(void* dst, const void* src, size_t bytes, ThreadPool* pool) {
  if (bytes == 0 || dst == src) return;
  if (!pool || bytes < 2 * (size_t)kMemcpyChunk) {
    std::memcpy(dst, src, bytes);
    return;
  }
  const int64_t chunks = (int64_t)((bytes + kMemcpyChunk - 1) / kMemcpyChunk);
  pool->parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
    const size_t b = (size_t)c0 * kMemcpyChunk, e = std::min(bytes, (size_t)c1 * kMemcpyChunk);
    std::memcpy((char*)dst + b, (const char*)src + b, e - b);
  });
}

// ------------------------------------------------------------------ StridedCopy
StridedCopy::StridedCopy(size_t elem_size, const Shape& dims, const std::vector<int64_t>& src_strides,
                         const std::vector<int64_t>& dst_strides)
    : elem_size_(elem_size) {
  // Drop size-1 dims; merge a dim into the next inner one when both sides walk them as one.
  std::vector<int64_t> d, s, t;
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] == 0) return;  // Empty
    if (dims[k] == 1) continue;
    if (!d.empty() && s.back() == src_strides[k] * dims[k] && t.back() == dst_strides[k] * dims[k]) {
      d.back() *= dims[k];
      s.back() = src_strides[k];
      t.back() = dst_strides[k];
      continue;
    }
    d.push_back(dims[k]);
    s.push_back(src_strides[k]);
    t.push_back(dst_strides[k]);
  }
  if (d.empty()) {  // one element
    d = {1};
    s = {1};
    t = {1};
  }
  inner_ = d.back();
  inner_src_ = s.back();
  inner_dst_ = t.back();
  d.pop_back();
  s.pop_back();
  t.pop_back();

  int tile_at = -1;
  if (inner_dst_ == 1 && inner_src_ != 1 && inner_src_ != 0) {
    // A transpose: some outer dim is read contiguously. Move kTile x kTile tiles so that
    // both sides stay in cache.
    for (int k = (int)d.size() - 1; k >= 0; --k) {
      if (s[k] == 1) { tile_at = k; break; }
    }
  }
  if (tile_at >= 0) {
    scheme_ = Scheme::Tiles;
    tile_dim_ = d[tile_at];
    tile_dst_ = t[tile_at];
    d.erase(d.begin() + tile_at);
    s.erase(s.begin() + tile_at);
    t.erase(t.begin() + tile_at);
  } else if (inner_src_ == 1 && inner_dst_ == 1) {
    scheme_ = Scheme::Runs;
  } else if (inner_src_ == 0 && inner_dst_ == 1) {
    scheme_ = Scheme::Fill;
  } else {
    scheme_ = Scheme::Elements;
  }
  outer_dims_ = std::move(d);
  outer_src_ = std::move(s);
  outer_dst_ = std::move(t);
  // Long rows are split so that even a single row spreads across threads.
  inner_chunk_ = std::max<int64_t>(1, (4 * kTaskBytes) / (int64_t)elem_size_);
  if (inner_ <= inner_chunk_) inner_chunk_ = inner_;
}

void StridedCopy::run(const void* src, void* dst, ThreadPool* pool) const {
  if (scheme_ == Scheme::Empty) return;
  const int64_t outer = product(outer_dims_);
  with_elem_type(elem_size_, [&](auto tag) {
    using T = decltype(tag);
    const T* s = (const T*)src;
    T* d = (T*)dst;
    if (scheme_ == Scheme::Tiles) {
      const int64_t row_tiles = (tile_dim_ + kTile - 1) / kTile;
      const int64_t unit_bytes = std::min(tile_dim_, kTile) * inner_ * (int64_t)sizeof(T);
      run_parallel(pool, outer * row_tiles, std::max<int64_t>(1, kTaskBytes / unit_bytes), [&](int64_t u0, int64_t u1) {
        Walker w(outer_dims_, outer_src_, outer_dst_, u0 / row_tiles);
        int64_t tile = u0 % row_tiles;
        for (int64_t u = u0; u < u1; ++u) {
          const T* sb = s + w.src;
          T* db = d + w.dst;
          const int64_t i0 = tile * kTile, i1 = std::min(tile_dim_, i0 + kTile);
          for (int64_t a0 = 0; a0 < inner_; a0 += kTile) {
            const int64_t a1 = std::min(inner_, a0 + kTile);
            for (int64_t i = i0; i < i1; ++i) {
              const T* sr = sb + i;
              T* dr = db + i * tile_dst_;
              for (int64_t a = a0; a < a1; ++a) dr[a] = sr[a * inner_src_];
            }
          }
          if (++tile == row_tiles) {
            tile = 0;
            w.next();
          }
        }
      });
      return;
    }
    const int64_t chunks = (inner_ + inner_chunk_ - 1) / inner_chunk_;
    const int64_t unit_bytes = inner_chunk_ * (int64_t)sizeof(T);
    run_parallel(pool, outer * chunks, std::max<int64_t>(1, kTaskBytes / unit_bytes), [&](int64_t u0, int64_t u1) {
      Walker w(outer_dims_, outer_src_, outer_dst_, u0 / chunks);
      int64_t c = u0 % chunks;
      for (int64_t u = u0; u < u1; ++u) {
        const int64_t i0 = c * inner_chunk_, n = std::min(inner_chunk_, inner_ - i0);
        copy_elements(s + w.src + i0 * inner_src_, inner_src_, d + w.dst + i0 * inner_dst_, inner_dst_, n);
        if (++c == chunks) {
          c = 0;
          w.next();
        }
      }
    });
  });
}

// ------------------------------------------------------------------ gather / scatter
void gather(size_t elem_size, DType index_dtype, const void* src, const void* index, int64_t outer,
            int64_t axis_size, int64_t num_index, int64_t inner, void* dst, ThreadPool* pool) {
  const int64_t units = outer * num_index;
  if (units == 0 || inner == 0) return;
  const int64_t unit_bytes = inner * (int64_t)elem_size;
  with_elem_type(elem_size, [&](auto etag) {
    using T = decltype(etag);
    with_index_type(index_dtype, [&](auto itag) {
      using I = decltype(itag);
      const T* s = (const T*)src;
      const I* ix = (const I*)index;
      T* d = (T*)dst;
      run_parallel(pool, units, std::max<int64_t>(1, kTaskBytes / unit_bytes), [&](int64_t u0, int64_t u1) {
        int64_t o = u0 / num_index, j = u0 % num_index;
        for (int64_t u = u0; u < u1; ++u) {
          int64_t k = (int64_t)ix[j];
          if (k < 0) k += axis_size;
          T* out = d + u * inner;
          if (k < 0 || k >= axis_size) {
            std::fill_n(out, inner, T(0));
          } else {
            const T* in = s + (o * axis_size + k) * inner;
            if (inner == 1) *out = *in;
            else std::memcpy(out, in, inner * sizeof(T));
          }
          if (++j == num_index) {
            j = 0;
            ++o;
          }
        }
      });
    });
  });
}

void scatter(size_t elem_size, DType index_dtype, const void* updates, const void* index, int64_t outer,
             int64_t axis_size, int64_t num_index, int64_t inner, void* dst, ThreadPool* pool) {
  if (outer * num_index == 0 || inner == 0) return;
  const int64_t unit_bytes = std::max<int64_t>(1, num_index * inner * (int64_t)elem_size);
  with_elem_type(elem_size, [&](auto etag) {
    using T = decltype(etag);
    with_index_type(index_dtype, [&](auto itag) {
      using I = decltype(itag);
      const T* up = (const T*)updates;
      const I* ix = (const I*)index;
      T* d = (T*)dst;
      // Threads split the outer slices only, so repeated indices keep their order.
      run_parallel(pool, outer, std::max<int64_t>(1, kTaskBytes / unit_bytes), [&](int64_t o0, int64_t o1) {
        for (int64_t o = o0; o < o1; ++o) {
          for (int64_t j = 0; j < num_index; ++j) {
            int64_t k = (int64_t)ix[j];
            if (k < 0) k += axis_size;
            if (k < 0 || k >= axis_size) continue;
            const T* in = up + (o * num_index + j) * inner;
            T* out = d + (o * axis_size + k) * inner;
            if (inner == 1) *out = *in;
            else std::memcpy(out, in, inner * sizeof(T));
          }
        }
      });
    });
  });
}

// ------------------------------------------------------------------ pad
void pad(size_t elem_size, const Shape& in_shape, const Shape& out_shape, const std::vector<std::vector<int64_t>>& maps,
         int64_t last_before, const void* fill, const void* src, void* dst, ThreadPool* pool) {
  const int64_t total = shape_numel(out_shape);
  if (total == 0) return;
  if (out_shape.empty()) {
    std::memcpy(dst, src, elem_size);
    return;
  }
  const size_t rank = out_shape.size();
  const int64_t out_w = out_shape.back(), in_w = in_shape.back();
  const int64_t rows = total / out_w;
  const std::vector<int64_t> in_strides = contiguous_strides(in_shape);
  with_elem_type(elem_size, [&](auto tag) {
    using T = decltype(tag);
    const T* s = (const T*)src;
    T* d = (T*)dst;
    const T value = *(const T*)fill;
    const std::vector<int64_t>& last_map = maps[rank - 1];
    run_parallel(pool, rows, std::max<int64_t>(1, kTaskBytes / (out_w * (int64_t)sizeof(T))), [&](int64_t r0, int64_t r1) {
      std::vector<int64_t> idx(rank - 1);
      int64_t flat = r0;
      for (size_t k = rank - 1; k-- > 0;) {
        idx[k] = flat % out_shape[k];
        flat /= out_shape[k];
      }
      for (int64_t r = r0; r < r1; ++r) {
        T* out = d + r * out_w;
        int64_t offset = 0;
        bool inside = true;
        for (size_t k = 0; k + 1 < rank; ++k) {
          const int64_t m = maps[k][idx[k]];
          if (m < 0) { inside = false; break; }
          offset += m * in_strides[k];
        }
        if (!inside) {
          std::fill_n(out, out_w, value);
        } else {
          const T* in = s + offset;
          for (int64_t j = 0; j < last_before; ++j) out[j] = last_map[j] < 0 ? value : in[last_map[j]];
          std::memcpy(out + last_before, in, in_w * sizeof(T));
          for (int64_t j = last_before + in_w; j < out_w; ++j) out[j] = last_map[j] < 0 ? value : in[last_map[j]];
        }
        for (size_t k = rank - 1; k-- > 0;) {
          if (++idx[k] < out_shape[k]) break;
          idx[k] = 0;
        }
      }
    });
  });
}

// ------------------------------------------------------------------ iota
void iota(int64_t start, const Shape& dims, const std::vector<int64_t>& strides, int64_t* out, ThreadPool* pool) {
  const int64_t total = shape_numel(dims);
  if (total == 0) return;
  if (dims.empty()) {
    *out = start;
    return;
  }
  const size_t rank = dims.size();
  const int64_t w = dims.back(), step = strides.back(), rows = total / w;
  run_parallel(pool, rows, std::max<int64_t>(1, kTaskBytes / (w * 8)), [&](int64_t r0, int64_t r1) {
    std::vector<int64_t> idx(rank - 1);
    int64_t flat = r0, base = start;
    for (size_t k = rank - 1; k-- > 0;) {
      idx[k] = flat % dims[k];
      flat /= dims[k];
      base += idx[k] * strides[k];
    }
    for (int64_t r = r0; r < r1; ++r) {
      int64_t* o = out + r * w;
      for (int64_t j = 0; j < w; ++j) o[j] = base + j * step;
      for (size_t k = rank - 1; k-- > 0;) {
        base += strides[k];
        if (++idx[k] < dims[k]) break;
        base -= dims[k] * strides[k];
        idx[k] = 0;
      }
    }
  });
}

}  // namespace cpu
}  // namespace mnnpy
