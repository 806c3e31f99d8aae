// CPU data movement: strided box copies (transpose, slice, broadcast, concat), gathers and
// scatters along an axis, padding, and index grids. Kernels move bytes, so they only care
// about the element size (1, 2, 4 or 8 bytes). Large copies are split across the thread
// pool.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "mnnpy/dtype.h"
#include "mnnpy/tensor.h"
#include "ops/shape_common.h"  // ScatterUpdates, with_index_type

namespace mnnpy {
class ThreadPool;
namespace cpu {

// Row-major strides of a shape, in elements.
std::vector<int64_t> contiguous_strides(const Shape& shape);

// Results from this size on do not stay in cache: copies write them with streaming stores.
constexpr size_t kStreamingBytes = size_t(8) << 20;

// Copies with non-temporal stores (any alignment), then fences: for results too large to stay
// in cache, this skips reading the destination lines before writing them.
void stream_copy(const void* src, void* dst, size_t bytes);
// Orders earlier non-temporal stores before what follows.
void stream_fence();

// Copies `bytes` bytes, split across threads when large (and bypassing the cache when very large).
void parallel_memcpy(void* dst, const void* src, size_t bytes, ThreadPool* pool);

// Concatenation seen as rows: `whole` has `rows` rows, each the parts' rows side by side
// (part k's rows are part_bytes[k] long). to_whole: parts -> whole (concat), else the
// reverse (split).
void join_rows(int64_t rows, const std::vector<int64_t>& part_bytes, const std::vector<char*>& parts, char* whole,
               bool to_whole, ThreadPool* pool);

// A copy of an n-d box between two strided layouts, simplified once (size-1 dims dropped,
// dims both sides walk contiguously merged, a scheme chosen) and run many times.
// Strides are in elements; source strides may be negative, or 0 to broadcast.
class StridedCopy {
 public:
  StridedCopy() = default;
  StridedCopy(size_t elem_size, const Shape& dims, const std::vector<int64_t>& src_strides,
              const std::vector<int64_t>& dst_strides);
  // src and dst point at the box's first element.
  void run(const void* src, void* dst, ThreadPool* pool) const;

 private:
  enum class Scheme : uint8_t { Empty, Runs, Fill, Tiles, Deinterleave, Elements };
  Scheme scheme_ = Scheme::Empty;
  size_t elem_size_ = 1;
  // Outer dims walked one index at a time; the innermost dim (and for Tiles/Deinterleave
  // the dim whose source stride is 1) is handled by the scheme.
  std::vector<int64_t> outer_dims_, outer_src_, outer_dst_;
  int64_t inner_ = 1, inner_src_ = 1, inner_dst_ = 1;
  // Tiles, Deinterleave: the dim read contiguously, and its destination stride.
  int64_t tile_dim_ = 1, tile_dst_ = 1;
  int64_t inner_chunk_ = 1;              // inner elements per parallel task
  bool stream_ = false;                  // large result: write with streaming stores
};

// Element gather along an axis of a [outer, axis_size, inner] block:
//   out[o, j, i] = src[o, index[j], i]   for j < num_index.
// Negative indices count from the end once; indices still out of range give zeros.
// index_dtype is any integer dtype.
void gather(size_t elem_size, DType index_dtype, const void* src, const void* index, int64_t outer,
            int64_t axis_size, int64_t num_index, int64_t inner, void* dst, ThreadPool* pool);

// The inverse of gather, writing into `dst` (which already holds the data to update):
//   dst[o, index[j], i] = updates[o, j, i], later j winning on repeated indices.
// Negative indices count from the end once; indices still out of range are skipped.
// Updates may also be one value for everything, or one row of `inner` for every (o, j).
void scatter(size_t elem_size, DType index_dtype, const void* updates, ScatterUpdates kind, const void* index,
             int64_t outer, int64_t axis_size, int64_t num_index, int64_t inner, void* dst, ThreadPool* pool);

// Padding as per-axis source index maps: out[i0, i1, ...] = src[map0[i0], map1[i1], ...],
// or `fill` (one element) when any map entry is -1. The last axis' map must be the identity
// on [last_before, last_before + in_shape.back()).
void pad(size_t elem_size, const Shape& in_shape, const Shape& out_shape, const std::vector<std::vector<int64_t>>& maps,
         int64_t last_before, const void* fill, const void* src, void* dst, ThreadPool* pool);

// out[i0, i1, ...] = start + sum(i_d * strides[d]) as int64, row-major over `dims`.
void iota(int64_t start, const Shape& dims, const std::vector<int64_t>& strides, int64_t* out, ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
