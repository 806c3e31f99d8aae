// CPU 2-D max and average pooling over float32 NCHW planes, and over the blocked channel layout
// [N, C/8, H, W, 8] (the 8 channels of a pixel contiguous).
#pragma once
#include <cstdint>
#include <cstddef>
#include <vector>

#include "ops/pool_windows.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

using ::mnnpy::PoolGeometry;
using ::mnnpy::PoolWindows;
using ::mnnpy::trim_padding_taps;

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
