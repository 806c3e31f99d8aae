// CPU 2-D max and average pooling over float32 NCHW planes, and over the blocked channel layout
// [N, C/8, H, W, 8] (the 8 channels of a pixel contiguous).
#pragma once
#include <cstdint>
#include <cstddef>
#include <vector>

namespace mnnpy {
class ThreadPool;
namespace cpu {

struct PoolGeometry {
  int64_t planes = 0;  // N * C, or N * C/8 for the blocked layout
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
};

// The same pooling with the taps that fall outside the input for every output removed (a model may
// ask for windows far larger than its input): the geometry kernels run, whatever was asked for.
PoolGeometry trim_padding_taps(const PoolGeometry& g);

// The window tables of one geometry, built once per shape. Both poolings are separable: the valid
// taps of a window form a rectangle, so they are a row range times a column range, and average
// divisors factor into a row count times a column count.
struct PoolWindows {
  // Built from the geometry as asked for; the tap ranges index the kernel of trim_padding_taps(g).
  PoolWindows(const PoolGeometry& g, bool is_max, bool count_include_pad);
  // Per output row (column): the range [first, last) of kernel rows (columns) inside the input.
  std::vector<int32_t> row_first, row_last, col_first, col_last;
  // Average pooling: per output row (column) 1 / its share of the divisor (0 where nothing counts).
  std::vector<float> inv_count_h, inv_count_w;
  // One window covering the whole unpadded plane: a plain per-plane reduction.
  bool whole_plane = false;
  size_t bytes() const {
    return (row_first.size() + row_last.size() + col_first.size() + col_last.size()) * sizeof(int32_t) +
           (inv_count_h.size() + inv_count_w.size()) * sizeof(float);
  }
};

// A pooling plan over NCHW planes; run() is called every execution. Each output row is a vertical
// pass over its valid input rows into a padded row buffer, then a horizontal pass.
class Pool2D {
 public:
  Pool2D(bool is_max, const PoolGeometry& g, bool count_include_pad);
  void run(const float* x, float* y, ThreadPool* pool) const;
  const char* scheme() const { return windows_.whole_plane ? "plane" : "separable"; }
  size_t resident_bytes() const { return windows_.bytes() + inv_count_w_padded_.size() * sizeof(float); }

 private:
  bool is_max_;
  PoolGeometry g_;
  PoolWindows windows_;
  std::vector<float> inv_count_w_padded_;  // inv_count_w with slack for whole-vector reads
  int64_t buffer_len_ = 0;  // padded row length the horizontal pass reads
};

// A pooling plan over the blocked layout: geometry.planes counts (image, channel block) pairs, each
// an [H, W, 8] block of pixels. Every tap is one 8-channel vector; a row of output pixels is
// computed a few pixels at a time with independent accumulators, from the taps directly or, for
// large windows, by a vertical then a horizontal pass as for NCHW.
class BlockedPool2D {
 public:
  BlockedPool2D(bool is_max, const PoolGeometry& g, bool count_include_pad);
  void run(const float* x, float* y, ThreadPool* pool) const;
  const char* scheme() const { return windows_.whole_plane ? "plane" : separable_ ? "separable" : "direct"; }
  size_t resident_bytes() const { return windows_.bytes(); }

 private:
  bool is_max_;
  PoolGeometry g_;
  PoolWindows windows_;
  int64_t interior_begin_ = 0, interior_end_ = 0;  // output columns whose window has every column inside
  bool separable_ = false;                           // by passes rather than directly
  int64_t buffer_pixels_ = 0;                        // padded row the horizontal pass reads, in pixels
};

}  // namespace cpu
}  // namespace mnnpy
