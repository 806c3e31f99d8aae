// What one band of rows of a Canny run needs (shared by every SIMD target of cv_canny.cpp).
#pragma once
#include <cstdint>
#include <vector>

namespace mnnpy {
namespace cpu {
namespace cv_canny {

// Suppression map states: a weak candidate, no edge, an edge.
constexpr uint8_t kWeak = 0, kNone = 1, kStrong = 2;

struct CannyJob {
  // Either an image (src, aperture) or its derivatives (dx, dy).
  const uint8_t* src = nullptr;
  int aperture = 3;
  const int16_t* dx = nullptr;
  const int16_t* dy = nullptr;
  int64_t rows = 0, cols = 0;
  int channels = 1;
  int32_t low = 0, high = 0;  // magnitude thresholds (squared for L2)
  bool l2 = false;
  // (rows + 2) x map_stride states; the outer ring is kNone, so that growth needs no bounds.
  uint8_t* map = nullptr;
  int64_t map_stride = 0;
  uint8_t* edges = nullptr;
};

}  // namespace cv_canny
}  // namespace cpu
}  // namespace mnnpy
