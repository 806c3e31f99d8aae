// OpenCV's image pyramids (pyrDown, pyrUp): the 5-tap [1 4 6 4 1] / 16 Gaussian in each
// direction with decimation, or 2x upsampling with the same kernel times 4. Integer images sum
// exactly and round half up (uint8 and int16), floating-point images scale by 1/256 or 1/64.
#pragma once
#include <cstdint>

#include "mnnpy/dtype.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {
namespace cv_pyramid {

// dst (out_h x out_w, |2 out - in| <= 2 along each axis) from src; border is OpenCV's
// BORDER_REPLICATE (1), BORDER_REFLECT (2), BORDER_WRAP (3) or BORDER_REFLECT_101 (4).
void pyr_down(DType dtype, int64_t in_h, int64_t in_w, int64_t channels, int64_t out_h, int64_t out_w, int border,
              const void* src, void* dst, ThreadPool* pool);

// dst (out_h x out_w, 2 in or 2 in + 1 along each axis) from src, borders as OpenCV's pyrUp.
void pyr_up(DType dtype, int64_t in_h, int64_t in_w, int64_t channels, int64_t out_h, int64_t out_w,
            const void* src, void* dst, ThreadPool* pool);

}  // namespace cv_pyramid
}  // namespace cpu
}  // namespace mnnpy
