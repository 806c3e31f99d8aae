// Canny edge detection as OpenCV computes it: Sobel derivatives in 16-bit integers (border
// replicated; aperture 7 scaled by 1/16 and its thresholds too), L1 or L2 gradient magnitude in
// 32-bit integers, non-maximum suppression along four directions with the tangent tests in
// 15-bit fixed point, and hysteresis by 8-connected growth from strong edges.
#pragma once
#include <cstdint>

namespace mnnpy {
class ThreadPool;
namespace cpu {
namespace cv_canny {

// src: rows x cols x channels uint8; edges: rows x cols uint8 (0 or 255). aperture 3, 5 or 7.
// low/high: the thresholds as given by the caller, already ordered (low <= high).
void canny(const uint8_t* src, int64_t rows, int64_t cols, int channels, double low, double high, int aperture,
           bool l2_gradient, uint8_t* edges, ThreadPool* pool);

// The same from given derivatives: dx, dy are rows x cols x channels int16 (channels 1 or 3).
void canny_from_derivatives(const int16_t* dx, const int16_t* dy, int64_t rows, int64_t cols, int channels,
                            double low, double high, bool l2_gradient, uint8_t* edges, ThreadPool* pool);

}  // namespace cv_canny
}  // namespace cpu
}  // namespace mnnpy
