// OpenCV's copyMakeBorder on HxWxC images of any element size: the image framed by borders
// whose pixels are extrapolated by OpenCV's border rules or filled with a constant pixel.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace mnnpy {
class ThreadPool;
namespace cpu {
namespace cv_geometry {

// OpenCV's BORDER_* values (without BORDER_ISOLATED).
enum class Border : int { Constant = 0, Replicate = 1, Reflect = 2, Wrap = 3, Reflect101 = 4 };

// The source index of position p (which may lie outside [0, length)) under `border`, as OpenCV's
// borderInterpolate computes it; -1 for BORDER_CONSTANT outside the image.
int64_t border_source(int64_t p, int64_t length, Border border);

class BorderPlan {
 public:
  // `fill`: the constant pixel (channels * element_size bytes), used by Border::Constant.
  BorderPlan(int64_t in_h, int64_t in_w, int64_t channels, size_t element_size, int64_t top, int64_t bottom,
             int64_t left, int64_t right, Border border, std::vector<uint8_t> fill);
  void run(const void* src, void* dst, ThreadPool* pool) const;

 private:
  int64_t in_h_, in_w_, out_h_, out_w_, top_, left_, right_;
  size_t pixel_;
  std::vector<int32_t> rows_;          // per output row: its source row, or -1 (constant)
  std::vector<int32_t> left_columns_;  // per left / right border column: its source column, or -1
  std::vector<int32_t> right_columns_;
  std::vector<uint8_t> constant_row_;  // one output row of the constant pixel (Border::Constant)
};

}  // namespace cv_geometry
}  // namespace cpu
}  // namespace mnnpy
