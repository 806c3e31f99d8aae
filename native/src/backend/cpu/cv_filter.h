// Separable image filters (OpenCV's GaussianBlur, sepFilter2D, boxFilter and their kin): a
// vertical pass over the source rows into a row buffer, then a horizontal pass along it.
#pragma once
#include <cstdint>
#include <vector>

#include "mnnpy/dtype.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {
namespace cv_filter {

// OpenCV's border types (BORDER_CONSTANT ... BORDER_REFLECT_101).
enum class Border : int { Constant = 0, Replicate = 1, Reflect = 2, Wrap = 3, Reflect101 = 4 };

// For positions -before .. length + after - 1 of a line of `length` pixels, the position in
// [0, length) that the border extrapolates it from, or -1 where the border is a constant.
std::vector<int32_t> border_indices(int64_t length, int64_t before, int64_t after, Border border);

struct SepFilterPlan {
  int64_t height = 0, width = 0, channels = 1;
  DType src_dtype = DType::UInt8, dst_dtype = DType::UInt8;
  // Tap t of the vertical kernel reads source row row_index[y + t] for output row y (-1: a
  // row of zeros); likewise columns. Sizes: height + ky - 1 and width + kx - 1.
  std::vector<int32_t> row_index, col_index;
  int64_t anchor_x = 0, anchor_y = 0;  // the kernel tap that lies over the output pixel
  double scale = 1.0, delta = 0.0;
  // uint8 to uint8 with integer taps that sum to 256 in each direction: the result is the
  // exact sum rounded half up after dividing by 2^16 (OpenCV's bit-exact smoothing).
  bool fixed_point_u8 = false;
  bool square = false;  // filter the squares of the source values
};

// dst = scale * (kx (x) ky) applied to src + delta, converted (rounded, saturated) to dst_dtype.
void sep_filter(const SepFilterPlan& plan, const double* kx, int64_t kx_size, const double* ky, int64_t ky_size,
                const void* src, void* dst, ThreadPool* pool);

// dst = scale * (kernel correlated with src) + delta for a kh x kw kernel (row-major), with the
// plan's border tables built for kh and kw; converted (rounded, saturated) to dst_dtype.
void filter_2d(const SepFilterPlan& plan, const double* kernel, int64_t kh, int64_t kw, const void* src, void* dst,
               ThreadPool* pool);

// Erosion (minimum) or dilation (maximum) over the nonzero entries of a kh x kw mask (row-major);
// positions outside the image read border_values[channel] (saturated to the type) where the
// border is constant. dst has src's type.
void morphology(const SepFilterPlan& plan, const uint8_t* mask, int64_t kh, int64_t kw, bool dilate,
                const double* border_values, const void* src, void* dst, ThreadPool* pool);

// The median of each ksize x ksize window (ksize odd, ksize^2 <= 49), the plan's border tables
// built for replicated borders. dst has src's type.
void median_blur(const SepFilterPlan& plan, int64_t ksize, const void* src, void* dst, ThreadPool* pool);

// Bilateral filter of a uint8 image with 1 or 3 channels over a (2 radius + 1)^2 window, the
// plan's border tables built for it: window holds window_size rows (dy, dx, space weight), and
// color_weight the weight of each summed absolute channel difference (channels * 255 + 1 values).
void bilateral_u8(const SepFilterPlan& plan, int64_t radius, const float* color_weight, const double* window,
                  int64_t window_size, const void* src, void* dst, ThreadPool* pool);

}  // namespace cv_filter
}  // namespace cpu
}  // namespace mnnpy
