// Data movement kernels. Contiguous runs go through memcpy (or streaming stores when the
// result is too large to stay in cache); transposes move tiles through registers, and
// interleaved channels, reversals and small strides use de-interleaving loads, each with a
// per-target SIMD kernel; everything else is plain loops over elements.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/copy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/copy.h"
#include "mnnpy/lowering.h"
#include "mnnpy/thread_pool.h"

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// dst[i * ds + a] = src[a * ss + i] for i < ni, a < na: 4x4 (4-byte), 2x2 (8-byte) or 8x8
// (2-byte) blocks transposed in 128-bit registers, the ragged edges element by element.
template <class T> void transpose_tile(const T* src, int64_t ss, T* dst, int64_t ds, int64_t ni, int64_t na) {
  int64_t a = 0;
#if HWY_TARGET != HWY_SCALAR
  constexpr int64_t B = sizeof(T) == 1 ? 1 : 16 / (int64_t)sizeof(T);
  if constexpr (B > 1) {
    const hn::Full128<T> d;
    const hn::Repartition<uint64_t, decltype(d)> d64;
    for (; a + B <= na; a += B) {
      int64_t i = 0;
      for (; i + B <= ni; i += B) {
        const T* s = src + a * ss + i;
        T* o = dst + i * ds + a;
        if constexpr (sizeof(T) == 8) {
          const auto r0 = hn::LoadU(d, s), r1 = hn::LoadU(d, s + ss);
          hn::StoreU(hn::InterleaveLower(d, r0, r1), d, o);
          hn::StoreU(hn::InterleaveUpper(d, r0, r1), d, o + ds);
        } else if constexpr (sizeof(T) == 4) {
          const auto r0 = hn::LoadU(d, s), r1 = hn::LoadU(d, s + ss), r2 = hn::LoadU(d, s + 2 * ss),
                     r3 = hn::LoadU(d, s + 3 * ss);
          const auto t0 = hn::BitCast(d64, hn::InterleaveLower(d, r0, r1));
          const auto t1 = hn::BitCast(d64, hn::InterleaveLower(d, r2, r3));
          const auto t2 = hn::BitCast(d64, hn::InterleaveUpper(d, r0, r1));
          const auto t3 = hn::BitCast(d64, hn::InterleaveUpper(d, r2, r3));
          hn::StoreU(hn::BitCast(d, hn::InterleaveLower(d64, t0, t1)), d, o);
          hn::StoreU(hn::BitCast(d, hn::InterleaveUpper(d64, t0, t1)), d, o + ds);
          hn::StoreU(hn::BitCast(d, hn::InterleaveLower(d64, t2, t3)), d, o + 2 * ds);
          hn::StoreU(hn::BitCast(d, hn::InterleaveUpper(d64, t2, t3)), d, o + 3 * ds);
        } else {
          const hn::Repartition<uint32_t, decltype(d)> d32;
          hn::Vec<decltype(d)> r[8];
          for (int k = 0; k < 8; ++k) r[k] = hn::LoadU(d, s + k * ss);
          // Pairs of rows interleaved at 16, then 32, then 64 bits give the columns.
          hn::Vec<decltype(d32)> p[8];
          for (int k = 0; k < 4; ++k) {
            p[k] = hn::BitCast(d32, hn::InterleaveLower(d, r[2 * k], r[2 * k + 1]));
            p[4 + k] = hn::BitCast(d32, hn::InterleaveUpper(d, r[2 * k], r[2 * k + 1]));
          }
          for (int h = 0; h < 2; ++h) {  // h = 0: columns 0-3, h = 1: columns 4-7
            const auto* q = p + 4 * h;
            const auto lo01 = hn::BitCast(d64, hn::InterleaveLower(d32, q[0], q[1]));
            const auto hi01 = hn::BitCast(d64, hn::InterleaveUpper(d32, q[0], q[1]));
            const auto lo23 = hn::BitCast(d64, hn::InterleaveLower(d32, q[2], q[3]));
            const auto hi23 = hn::BitCast(d64, hn::InterleaveUpper(d32, q[2], q[3]));
            T* oh = o + 4 * h * ds;
            hn::StoreU(hn::BitCast(d, hn::InterleaveLower(d64, lo01, lo23)), d, oh);
            hn::StoreU(hn::BitCast(d, hn::InterleaveUpper(d64, lo01, lo23)), d, oh + ds);
            hn::StoreU(hn::BitCast(d, hn::InterleaveLower(d64, hi01, hi23)), d, oh + 2 * ds);
            hn::StoreU(hn::BitCast(d, hn::InterleaveUpper(d64, hi01, hi23)), d, oh + 3 * ds);
          }
        }
      }
      for (; i < ni; ++i) {
        for (int64_t k = 0; k < B; ++k) dst[i * ds + a + k] = src[(a + k) * ss + i];
      }
    }
  }
#endif
  for (; a < na; ++a) {
    for (int64_t i = 0; i < ni; ++i) dst[i * ds + a] = src[a * ss + i];
  }
}

void TransposeTileImpl(size_t elem_size, const void* src, int64_t ss, void* dst, int64_t ds, int64_t ni, int64_t na) {
  switch (elem_size) {
    case 1: transpose_tile((const uint8_t*)src, ss, (uint8_t*)dst, ds, ni, na); break;
    case 2: transpose_tile((const uint16_t*)src, ss, (uint16_t*)dst, ds, ni, na); break;
    case 4: transpose_tile((const uint32_t*)src, ss, (uint32_t*)dst, ds, ni, na); break;
    case 8: transpose_tile((const uint64_t*)src, ss, (uint64_t*)dst, ds, ni, na); break;
    default: break;
  }
}

// d[k] = s[k * ss] for ss = -1 (reversed vectors) or a small stride (2, 3 or 4:
// de-interleaving loads; each vector step also reads the elements up to the next one it
// keeps, so it stops one short).
template <class T> void read_strided(const T* s, int64_t ss, T* d, int64_t n) {
  int64_t k = 0;
#if HWY_TARGET != HWY_SCALAR
  const hn::ScalableTag<T> dt;
  const int64_t N = (int64_t)hn::Lanes(dt);
  hn::Vec<decltype(dt)> v0, v1, v2, v3;
  if (ss == -1) {
    if constexpr (sizeof(T) >= 2) {  // this Highway has no 8-bit Reverse
      for (; k + N <= n; k += N) hn::StoreU(hn::Reverse(dt, hn::LoadU(dt, s - k - (N - 1))), dt, d + k);
    }
  } else if (ss == 2) {
    for (; k + N < n; k += N) {
      hn::LoadInterleaved2(dt, s + 2 * k, v0, v1);
      hn::StoreU(v0, dt, d + k);
    }
  } else if (ss == 3) {
    for (; k + N < n; k += N) {
      hn::LoadInterleaved3(dt, s + 3 * k, v0, v1, v2);
      hn::StoreU(v0, dt, d + k);
    }
  } else if (ss == 4) {
    for (; k + N < n; k += N) {
      hn::LoadInterleaved4(dt, s + 4 * k, v0, v1, v2, v3);
      hn::StoreU(v0, dt, d + k);
    }
  }
#endif
  for (; k < n; ++k) d[k] = s[k * ss];
}

void ReadStridedImpl(size_t elem_size, const void* src, int64_t ss, void* dst, int64_t n) {
  switch (elem_size) {
    case 1: read_strided((const uint8_t*)src, ss, (uint8_t*)dst, n); break;
    case 2: read_strided((const uint16_t*)src, ss, (uint16_t*)dst, n); break;
    case 4: read_strided((const uint32_t*)src, ss, (uint32_t*)dst, n); break;
    case 8: read_strided((const uint64_t*)src, ss, (uint64_t*)dst, n); break;
    default: break;
  }
}

// d[c * ds + a] = s[a * K + c] for c < K (2, 3 or 4 interleaved channels), a < n.
template <class T> void deinterleave(const T* s, int64_t K, T* d, int64_t ds, int64_t n) {
  int64_t a = 0;
#if HWY_TARGET != HWY_SCALAR
  const hn::ScalableTag<T> dt;
  const int64_t N = (int64_t)hn::Lanes(dt);
  hn::Vec<decltype(dt)> v0, v1, v2, v3;
  for (; a + N <= n; a += N) {
    if (K == 2) {
      hn::LoadInterleaved2(dt, s + 2 * a, v0, v1);
    } else if (K == 3) {
      hn::LoadInterleaved3(dt, s + 3 * a, v0, v1, v2);
    } else {
      hn::LoadInterleaved4(dt, s + 4 * a, v0, v1, v2, v3);
    }
    hn::StoreU(v0, dt, d + a);
    hn::StoreU(v1, dt, d + ds + a);
    if (K >= 3) hn::StoreU(v2, dt, d + 2 * ds + a);
    if (K == 4) hn::StoreU(v3, dt, d + 3 * ds + a);
  }
#endif
  for (; a < n; ++a) {
    for (int64_t c = 0; c < K; ++c) d[c * ds + a] = s[a * K + c];
  }
}

void DeinterleaveImpl(size_t elem_size, const void* src, int64_t K, void* dst, int64_t ds, int64_t n) {
  switch (elem_size) {
    case 1: deinterleave((const uint8_t*)src, K, (uint8_t*)dst, ds, n); break;
    case 2: deinterleave((const uint16_t*)src, K, (uint16_t*)dst, ds, n); break;
    case 4: deinterleave((const uint32_t*)src, K, (uint32_t*)dst, ds, n); break;
    case 8: deinterleave((const uint64_t*)src, K, (uint64_t*)dst, ds, n); break;
    default: break;
  }
}

// w[a * K + c] = parts[c][a] for c < K (2, 3 or 4 parts), a in [a0, a1): the inverse of
// deinterleave, for concatenating single elements along the last axis (stack(axis=-1), merge).
template <class T> void interleave(const T* const* parts, int64_t K, T* w, int64_t a0, int64_t a1) {
  int64_t a = a0;
#if HWY_TARGET != HWY_SCALAR
  const hn::ScalableTag<T> dt;
  const int64_t N = (int64_t)hn::Lanes(dt);
  for (; a + N <= a1; a += N) {
    const auto v0 = hn::LoadU(dt, parts[0] + a), v1 = hn::LoadU(dt, parts[1] + a);
    if (K == 2) {
      hn::StoreInterleaved2(v0, v1, dt, w + 2 * a);
    } else if (K == 3) {
      hn::StoreInterleaved3(v0, v1, hn::LoadU(dt, parts[2] + a), dt, w + 3 * a);
    } else {
      hn::StoreInterleaved4(v0, v1, hn::LoadU(dt, parts[2] + a), hn::LoadU(dt, parts[3] + a), dt, w + 4 * a);
    }
  }
#endif
  for (; a < a1; ++a) {
    for (int64_t c = 0; c < K; ++c) w[a * K + c] = parts[c][a];
  }
}

void InterleaveImpl(size_t elem_size, const void* const* parts, int64_t K, void* whole, int64_t a0, int64_t a1) {
  switch (elem_size) {
    case 1: interleave((const uint8_t* const*)parts, K, (uint8_t*)whole, a0, a1); break;
    case 2: interleave((const uint16_t* const*)parts, K, (uint16_t*)whole, a0, a1); break;
    case 4: interleave((const uint32_t* const*)parts, K, (uint32_t*)whole, a0, a1); break;
    case 8: interleave((const uint64_t* const*)parts, K, (uint64_t*)whole, a0, a1); break;
    default: break;
  }
}

// memcpy with non-temporal stores for the aligned middle (any alignment of dst); the caller
// fences once its batch of runs is done.
void StreamRunImpl(const void* src, void* dst, size_t bytes) {
  const hn::ScalableTag<uint8_t> d;
  const size_t N = hn::Lanes(d);
  const uint8_t* s = (const uint8_t*)src;
  uint8_t* t = (uint8_t*)dst;
  size_t head = (N - ((uintptr_t)t % N)) % N;
  if (head > bytes) head = bytes;
  std::memcpy(t, s, head);
  size_t i = head;
  for (; i + N <= bytes; i += N) hn::Stream(hn::LoadU(d, s + i), d, t + i);
  std::memcpy(t + i, s + i, bytes - i);
}

// memcpy of a medium run (a row of a gather or a concatenation) by whole vectors: on AMD cores
// glibc's `rep movsb` for a few KB from a source misaligned to the destination was measured
// 5-12% slower than plain unaligned vector loads and stores.
void CopyRunImpl(const void* src, void* dst, size_t bytes) {
  const hn::ScalableTag<uint8_t> d;
  const size_t N = hn::Lanes(d);
  const uint8_t* s = (const uint8_t*)src;
  uint8_t* t = (uint8_t*)dst;
  size_t i = 0;
  for (; i + 4 * N <= bytes; i += 4 * N) {
    const auto v0 = hn::LoadU(d, s + i), v1 = hn::LoadU(d, s + i + N);
    const auto v2 = hn::LoadU(d, s + i + 2 * N), v3 = hn::LoadU(d, s + i + 3 * N);
    hn::StoreU(v0, d, t + i);
    hn::StoreU(v1, d, t + i + N);
    hn::StoreU(v2, d, t + i + 2 * N);
    hn::StoreU(v3, d, t + i + 3 * N);
  }
  for (; i + N <= bytes; i += N) hn::StoreU(hn::LoadU(d, s + i), d, t + i);
  std::memcpy(t + i, s + i, bytes - i);
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {

HWY_EXPORT(TransposeTileImpl);
HWY_EXPORT(StreamRunImpl);
HWY_EXPORT(CopyRunImpl);
HWY_EXPORT(ReadStridedImpl);
HWY_EXPORT(DeinterleaveImpl);
HWY_EXPORT(InterleaveImpl);

namespace {

constexpr int64_t kTaskBytes = 64 << 10;   // the least work worth handing to another thread
constexpr int64_t kMemcpyChunk = 256 << 10;
constexpr int64_t kTile = 32;              // transposes move kTile x kTile element tiles
constexpr size_t kStreamingMinRun = 256;   // shorter runs are not worth a streaming store
// Runs in [kVectorRunMin, kVectorRunMax) are copied by CopyRunImpl, others by memcpy (whose
// short-copy code wins below, and whose large-copy strategy above).
constexpr size_t kVectorRunMin = 256, kVectorRunMax = 64 << 10;
constexpr int64_t kFillBlock = 1024;       // a repeated value is streamed out from a block this long

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


// A run of bytes, with streaming stores when the caller's result is too large for the cache.
void copy_run(void* dst, const void* src, size_t bytes, bool stream) {
  if (stream && bytes >= kStreamingMinRun) HWY_DYNAMIC_DISPATCH(StreamRunImpl)(src, dst, bytes);
  else if (bytes >= kVectorRunMin && bytes < kVectorRunMax) HWY_DYNAMIC_DISPATCH(CopyRunImpl)(src, dst, bytes);
  else std::memcpy(dst, src, bytes);
}

// n elements from s (stride ss) to d (stride ds).
template <class T> void copy_elements(const T* s, int64_t ss, T* d, int64_t ds, int64_t n) {
  if (ds == 1) {
    if (ss == 1) {
      std::memcpy(d, s, n * sizeof(T));
    } else if (ss == 0) {
      std::fill_n(d, n, *s);
    } else if ((ss == -1 || (ss >= 2 && ss <= 4)) && n >= 16) {
      HWY_DYNAMIC_DISPATCH(ReadStridedImpl)(sizeof(T), s, ss, d, n);
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

void stream_copy(const void* src, void* dst, size_t bytes) {
  HWY_DYNAMIC_DISPATCH(StreamRunImpl)(src, dst, bytes);
  hwy::FlushStream();
}

void stream_fence() { hwy::FlushStream(); }

std::vector<int64_t> contiguous_strides(const Shape& shape) { return row_major_strides(shape); }

void parallel_memcpy(void* dst, const void* src, size_t bytes, ThreadPool* pool) {
  if (bytes == 0 || dst == src) return;
  const bool stream = bytes >= kStreamingBytes;
  const int64_t chunks = (int64_t)((bytes + kMemcpyChunk - 1) / kMemcpyChunk);
  parallel_for(pool, chunks, 2, [&](int64_t c0, int64_t c1) {
    const size_t b = (size_t)c0 * kMemcpyChunk, e = std::min(bytes, (size_t)c1 * kMemcpyChunk);
    copy_run((char*)dst + b, (const char*)src + b, e - b, stream);
    if (stream) hwy::FlushStream();
  });
}

void join_rows(int64_t rows, const std::vector<int64_t>& part_bytes, const std::vector<char*>& parts, char* whole,
               bool to_whole, ThreadPool* pool) {
  int64_t row = 0;
  for (int64_t b : part_bytes) row += b;
  if (rows == 1) {
    int64_t offset = 0;
    for (size_t k = 0; k < parts.size(); ++k) {
      if (to_whole) parallel_memcpy(whole + offset, parts[k], part_bytes[k], pool);
      else parallel_memcpy(parts[k], whole + offset, part_bytes[k], pool);
      offset += part_bytes[k];
    }
    return;
  }
  const int64_t width = part_bytes[0];
  const bool one_element_each = to_whole && parts.size() >= 2 && parts.size() <= 4 &&
                                (width == 1 || width == 2 || width == 4 || width == 8) &&
                                std::all_of(part_bytes.begin(), part_bytes.end(), [&](int64_t b) { return b == width; });
  if (one_element_each) {
    // Rows of one element per part: vector interleaving instead of a tiny copy per element.
    parallel_for(pool, rows, std::max<int64_t>(1, kTaskBytes / row), [&](int64_t r0, int64_t r1) {
      HWY_DYNAMIC_DISPATCH(InterleaveImpl)((size_t)width, (const void* const*)parts.data(), (int64_t)parts.size(),
                                           whole, r0, r1);
    });
    return;
  }
  const bool stream = rows * row >= (int64_t)kStreamingBytes;
  parallel_for(pool, rows, std::max<int64_t>(1, kTaskBytes / std::max<int64_t>(1, row)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      char* w = whole + r * row;
      for (size_t k = 0; k < parts.size(); ++k) {
        char* p = parts[k] + r * part_bytes[k];
        if (to_whole) copy_run(w, p, part_bytes[k], stream);
        else copy_run(p, w, part_bytes[k], stream);
        w += part_bytes[k];
      }
    }
    if (stream) hwy::FlushStream();
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
  // Channels interleaved by 2, 3 or 4 (HWC -> CHW) are split in one pass; other short
  // contiguous dims are better read as strided rows than as tiles.
  const bool interleaved = tile_at >= 0 && d[tile_at] <= 4 && inner_src_ == d[tile_at];
  if (tile_at >= 0 && (interleaved || d[tile_at] >= (elem_size_ >= 8 ? 2 : 16 / (int64_t)elem_size_))) {
    scheme_ = interleaved ? Scheme::Deinterleave : Scheme::Tiles;
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
  const size_t total = (size_t)(product(outer_dims_) * inner_ * tile_dim_) * elem_size_;
  // (Strided reads gained nothing from streaming stores when measured.)
  stream_ = (scheme_ == Scheme::Runs || scheme_ == Scheme::Fill) && total >= kStreamingBytes &&
            (size_t)inner_ * elem_size_ >= kStreamingMinRun;
}

void StridedCopy::run(const void* src, void* dst, ThreadPool* pool) const {
  if (scheme_ == Scheme::Empty) return;
  const int64_t outer = product(outer_dims_);
  const int64_t es = (int64_t)elem_size_;
  const char* s = (const char*)src;
  char* d = (char*)dst;
  if (scheme_ == Scheme::Tiles) {
    // Units: one band of rows along the contiguously read dim, all of the inner dim. Small
    // matrices (up to 64 x 64) go as one tile.
    const int64_t band_rows = tile_dim_ <= 2 * kTile ? tile_dim_ : kTile;
    const int64_t tile_cols = inner_ <= 2 * kTile ? inner_ : kTile;
    const int64_t bands = (tile_dim_ + band_rows - 1) / band_rows;
    const int64_t unit_bytes = band_rows * inner_ * es;
    parallel_for(pool, outer * bands, std::max<int64_t>(1, kTaskBytes / unit_bytes), [&](int64_t u0, int64_t u1) {
      Walker w(outer_dims_, outer_src_, outer_dst_, u0 / bands);
      int64_t band = u0 % bands;
      for (int64_t u = u0; u < u1; ++u) {
        const int64_t i0 = band * band_rows, ni = std::min(band_rows, tile_dim_ - i0);
        for (int64_t a0 = 0; a0 < inner_; a0 += tile_cols) {
          HWY_DYNAMIC_DISPATCH(TransposeTileImpl)(elem_size_, s + (w.src + i0 + a0 * inner_src_) * es, inner_src_,
                                                  d + (w.dst + i0 * tile_dst_ + a0) * es, tile_dst_, ni,
                                                  std::min(tile_cols, inner_ - a0));
        }
        if (++band == bands) {
          band = 0;
          w.next();
        }
      }
    });
    return;
  }
  const int64_t chunks = (inner_ + inner_chunk_ - 1) / inner_chunk_;
  parallel_for(pool, outer * chunks, std::max<int64_t>(1, kTaskBytes / (inner_chunk_ * es)), [&](int64_t u0, int64_t u1) {
    with_elem_type(elem_size_, [&](auto tag) {
      using T = decltype(tag);
      alignas(64) T fill_block[kFillBlock];
      Walker w(outer_dims_, outer_src_, outer_dst_, u0 / chunks);
      int64_t c = u0 % chunks;
      for (int64_t u = u0; u < u1; ++u) {
        const int64_t i0 = c * inner_chunk_, n = std::min(inner_chunk_, inner_ - i0);
        const T* from = (const T*)s + w.src + i0 * inner_src_;
        T* to = (T*)d + w.dst + i0 * inner_dst_;
        if (scheme_ == Scheme::Deinterleave) {
          HWY_DYNAMIC_DISPATCH(DeinterleaveImpl)(sizeof(T), from, tile_dim_, to, tile_dst_, n);
        } else if (!stream_) {
          copy_elements(from, inner_src_, to, inner_dst_, n);
        } else if (scheme_ == Scheme::Runs) {
          copy_run(to, from, n * sizeof(T), true);
        } else {  // Fill: a block of the repeated value, streamed out as often as needed
          const int64_t m = std::min(kFillBlock, n);
          std::fill_n(fill_block, m, *from);
          for (int64_t k = 0; k < n; k += m) copy_run(to + k, fill_block, std::min(m, n - k) * sizeof(T), true);
        }
        if (++c == chunks) {
          c = 0;
          w.next();
        }
      }
      if (stream_) hwy::FlushStream();
    });
  });
}

// ------------------------------------------------------------------ gather / scatter
void gather(size_t elem_size, DType index_dtype, const void* src, const void* index, int64_t outer,
            int64_t axis_size, int64_t num_index, int64_t inner, void* dst, ThreadPool* pool) {
  const int64_t units = outer * num_index;
  if (units == 0 || inner == 0) return;
  if (elem_size == 1 && inner == 1 && outer == 1 && axis_size == 256 &&
      (index_dtype == DType::UInt8 || index_dtype == DType::Int8)) {
    // A byte table over every byte (the 8-bit lookups of converted int8 models): an int8 index v
    // reads v + 256 when negative, which is its unsigned byte, as a uint8 index reads.
    const uint8_t* table = static_cast<const uint8_t*>(src);
    const uint8_t* ix = static_cast<const uint8_t*>(index);
    uint8_t* d = static_cast<uint8_t*>(dst);
    parallel_for(pool, units, kTaskBytes, [table, ix, d](int64_t u0, int64_t u1) {
      // Byte stores may alias anything: the pointers held in registers, not re-read per byte.
      const uint8_t* __restrict t = table;
      const uint8_t* __restrict in = ix + u0;
      uint8_t* __restrict out = d + u0;
      const int64_t n = u1 - u0;
      int64_t u = 0;
      for (; u + 8 <= n; u += 8) {
        uint64_t codes;
        std::memcpy(&codes, in + u, 8);
        uint64_t bytes = 0;
        for (int b = 0; b < 8; ++b) bytes |= (uint64_t)t[(codes >> (8 * b)) & 0xff] << (8 * b);
        std::memcpy(out + u, &bytes, 8);
      }
      for (; u < n; ++u) out[u] = t[in[u]];
    });
    return;
  }
  const int64_t unit_bytes = inner * (int64_t)elem_size;
  const bool stream = (size_t)(units * unit_bytes) >= kStreamingBytes;
  with_elem_type(elem_size, [&](auto etag) {
    using T = decltype(etag);
    with_index_type(index_dtype, [&](auto itag) {
      using I = decltype(itag);
      const T* s = (const T*)src;
      const I* ix = (const I*)index;
      T* d = (T*)dst;
      // Rows in random order defeat the hardware prefetcher at each row's start: the first lines
      // of the next row are requested while this one is copied.
      const int64_t ahead_lines = unit_bytes >= (int64_t)kVectorRunMin ? std::min<int64_t>(8, unit_bytes / 64) : 0;
      parallel_for(pool, units, std::max<int64_t>(1, kTaskBytes / unit_bytes), [&](int64_t u0, int64_t u1) {
        int64_t o = u0 / num_index, j = u0 % num_index;
        for (int64_t u = u0; u < u1; ++u) {
          int64_t k = index_as_int64(ix[j]);
          if (k < 0) k += axis_size;
          if (ahead_lines && j + 1 < num_index) {
            int64_t next = index_as_int64(ix[j + 1]);
            if (next < 0) next += axis_size;
            if (next >= 0 && next < axis_size) {
              const char* line = (const char*)(s + (o * axis_size + next) * inner);
              for (int64_t l = 0; l < ahead_lines; ++l) __builtin_prefetch(line + 64 * l);
            }
          }
          T* out = d + u * inner;
          if (k < 0 || k >= axis_size) {
            std::fill_n(out, inner, T(0));
          } else {
            const T* in = s + (o * axis_size + k) * inner;
            if (inner == 1) *out = *in;
            else copy_run(out, in, inner * sizeof(T), stream);
          }
          if (++j == num_index) {
            j = 0;
            ++o;
          }
        }
        if (stream) hwy::FlushStream();
      });
    });
  });
}

void scatter(size_t elem_size, DType index_dtype, const void* updates, ScatterUpdates kind, const void* index,
             int64_t outer, int64_t axis_size, int64_t num_index, int64_t inner, void* dst, ThreadPool* pool) {
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
      parallel_for(pool, outer, std::max<int64_t>(1, kTaskBytes / unit_bytes), [&](int64_t o0, int64_t o1) {
        for (int64_t o = o0; o < o1; ++o) {
          for (int64_t j = 0; j < num_index; ++j) {
            int64_t k = index_as_int64(ix[j]);
            if (k < 0) k += axis_size;
            if (k < 0 || k >= axis_size) continue;
            T* out = d + (o * axis_size + k) * inner;
            if (kind == ScatterUpdates::Scalar) {
              std::fill_n(out, inner, up[0]);
            } else {
              const T* in = kind == ScatterUpdates::Row ? up : up + (o * num_index + j) * inner;
              if (inner == 1) *out = *in;
              else std::memcpy(out, in, inner * sizeof(T));
            }
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
    parallel_for(pool, rows, std::max<int64_t>(1, kTaskBytes / (out_w * (int64_t)sizeof(T))), [&](int64_t r0, int64_t r1) {
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
  parallel_for(pool, rows, std::max<int64_t>(1, kTaskBytes / (w * 8)), [&](int64_t r0, int64_t r1) {
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
#endif  // HWY_ONCE
