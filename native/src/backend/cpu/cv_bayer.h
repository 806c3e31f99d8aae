// Bayer demosaicing (OpenCV's cvtColor Bayer codes, bilinear): a one-channel uint8 mosaic to
// BGR/RGB(A) or to gray, with OpenCV's integer rounding and its edge rule (the outermost rows
// and columns repeat their inner neighbours).
#pragma once
#include <cstdint>

namespace mnnpy {
class ThreadPool;
namespace cpu {
namespace cv_color {

struct BayerJob {
  // The colour of the mosaic's top-left 2x2 block, row by row: 0 blue, 1 green, 2 red.
  int pattern[2][2] = {{2, 1}, {1, 0}};
  int dst_channels = 3;  // 1 (gray), 3 or 4
  int blue = 0;          // output index of blue (0: BGR order, 2: RGB order)
  int64_t height = 0, width = 0;
  const uint8_t* src = nullptr;
  uint8_t* dst = nullptr;
};

void run_bayer(const BayerJob& job, ThreadPool* pool);

}  // namespace cv_color
}  // namespace cpu
}  // namespace mnnpy
