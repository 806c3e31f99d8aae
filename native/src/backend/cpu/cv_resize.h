// OpenCV's resize on HxWxC images (uint8, int16, float32, float64; any channel count).
// A plan is built once per shape: per output column and row the source taps and weights,
// chosen and rounded as OpenCV chooses them, so that uint8 results that OpenCV computes in
// fixed point (bilinear, integer-factor area, the bit-exact bilinear and nearest modes) are
// reproduced bit for bit.
#pragma once
#include <cstdint>
#include <vector>

#include "mnnpy/dtype.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {
namespace cv_geometry {

// OpenCV's INTER_* values.
enum class Interpolation : int {
  Nearest = 0, Linear = 1, Cubic = 2, Area = 3, Lanczos4 = 4, LinearExact = 5, NearestExact = 6
};

class ResizePlan {
 public:
  // inv_scale_x / inv_scale_y: output size over input size, or the fx / fy the caller gave
  // (OpenCV maps coordinates with their reciprocals, not with the rounded sizes).
  ResizePlan(DType dtype, int64_t in_h, int64_t in_w, int64_t channels, int64_t out_h, int64_t out_w,
             double inv_scale_x, double inv_scale_y, Interpolation interpolation);
  // A plan that copies source pixel (rows[r], columns[c]) to output pixel (r, c) (flips).
  ResizePlan(DType dtype, int64_t in_h, int64_t in_w, int64_t channels, std::vector<int32_t> rows,
             std::vector<int32_t> columns);
  void run(const void* src, void* dst, ThreadPool* pool) const;
  const char* scheme() const;

  // Source taps of one axis: for output position o, taps source indices index[o * taps + t]
  // (already clamped into the image) with weights weight[o * taps + t].
  struct Axis {
    int taps = 0;
    std::vector<int32_t> index;
    std::vector<float> weight;
    std::vector<int16_t> fixed;  // 11-bit fixed-point weights (uint8 bilinear)
  };

 private:
  enum class Scheme { Nearest, LinearFixed8U, AreaFast, Taps, LinearExact };
  void build_linear_exact(double inv_scale_x, double inv_scale_y);
  void fill_vector_columns();
  void run_nearest(const uint8_t* src, uint8_t* dst, ThreadPool* pool) const;
  void run_area_fast(const void* src, void* dst, ThreadPool* pool) const;
  void run_separable(const void* src, void* dst, ThreadPool* pool) const;

  DType dtype_;
  int64_t in_h_, in_w_, channels_, out_h_, out_w_;
  Scheme scheme_ = Scheme::Taps;
  Axis x_, y_;                           // x_ per output column, y_ per output row
  std::vector<int32_t> column_offsets_;  // per output element (per column for LinearFixed8U): tap t at [t * n + i]
  std::vector<float> column_weights_;
  std::vector<int16_t> column_fixed_;
  std::vector<int32_t> column_pairs_;    // LinearFixed8U: per column, w0 | w1 << 16 (16-bit lanes)
  int64_t vector_columns_ = 0;           // LinearFixed8U: leading columns the vector loop may take
  std::vector<int32_t> exact_x_, exact_y_;  // LinearExact: weights of both taps per column / row
  int area_x_ = 1, area_y_ = 1;          // AreaFast: the integer factors
};

}  // namespace cv_geometry
}  // namespace cpu
}  // namespace mnnpy
