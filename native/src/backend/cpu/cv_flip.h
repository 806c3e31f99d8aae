// OpenCV's flip on HxWxC images of any element size: rows, columns or both reversed.
#pragma once
#include <cstddef>
#include <cstdint>

namespace mnnpy {
class ThreadPool;
namespace cpu {
namespace cv_geometry {

// flip_code as OpenCV's: 0 reverses the rows, > 0 the columns, < 0 both.
void flip_image(const void* src, void* dst, int64_t height, int64_t width, size_t pixel_bytes, int flip_code,
                ThreadPool* pool);

}  // namespace cv_geometry
}  // namespace cpu
}  // namespace mnnpy
