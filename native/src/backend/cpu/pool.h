// CPU 2-D max and average pooling over float32 NCHW planes.
#pragma once
#include <cstdint>
#include <vector>

namespace mnnpy {
class ThreadPool;
namespace cpu {

struct PoolGeometry {
  int64_t planes = 0;  // N * C
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
};

// A pooling plan: window tables are built once per shape; run() is called every execution.
// Both poolings are separable (the window's valid region is a rectangle), so each output row
// is a vertical pass over its valid input rows into a padded row buffer, then a horizontal pass.
class Pool2D {
 public:
  Pool2D(bool is_max, const PoolGeometry& g, bool count_include_pad);
  void run(const float* x, float* y, ThreadPool* pool) const;

 private:
  bool is_max_;
  PoolGeometry g_;
  bool whole_plane_;  // one window covering the whole unpadded plane: a plain per-plane reduction
  // Per output row: the range [first, last) of kernel rows that land inside the input.
  std::vector<int32_t> row_first_, row_last_;
  // Average pooling: 1 / divisor, split into its row and column factors.
  std::vector<float> inv_count_h_, inv_count_w_;
  int64_t buffer_len_ = 0;  // padded row length the horizontal pass reads
};

}  // namespace cpu
}  // namespace mnnpy
