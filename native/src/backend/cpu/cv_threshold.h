// Per-pixel tests of images: OpenCV's threshold and inRange, on uint8, int16, float32 and
// float64 data, and the 256-bin histogram that Otsu's and the triangle method start from.
#pragma once
#include <cstdint>

#include "mnnpy/dtype.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {
namespace cv_threshold {

// OpenCV's threshold types (THRESH_BINARY ... THRESH_TOZERO_INV).
enum class ThresholdKind : int { Binary = 0, BinaryInv = 1, Trunc = 2, ToZero = 3, ToZeroInv = 4 };

// dst[i] = f(src[i]) over n elements, "above" meaning src[i] > level. For integer types, level
// is an integer (floored by the caller) and may lie outside the type's range; maxval is the
// value written for BINARY(_INV), already rounded and saturated by the caller.
void threshold(DType dt, ThresholdKind kind, double level, double maxval, const void* src, void* dst, int64_t n,
               ThreadPool* pool);

// mask[p] = 255 if lower[c] <= src[p * channels + c] <= upper[c] for every channel, else 0;
// the bounds are per channel, already rounded for integer types by the caller.
void in_range(DType dt, const void* src, int64_t pixels, int channels, const double* lower, const double* upper,
              uint8_t* mask, ThreadPool* pool);

// The same with image-shaped bounds (lower and upper have src's shape and dtype).
void in_range_arrays(DType dt, const void* src, const void* lower, const void* upper, int64_t pixels, int channels,
                     uint8_t* mask, ThreadPool* pool);

// counts[v] = how many of the n bytes equal v (counts has 256 entries).
void histogram_u8(const uint8_t* data, int64_t n, int64_t* counts, ThreadPool* pool);

}  // namespace cv_threshold
}  // namespace cpu
}  // namespace mnnpy
