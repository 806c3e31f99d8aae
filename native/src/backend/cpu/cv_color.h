// Colour conversions of interleaved images (OpenCV's cvtColor), uint8 and float32.
#pragma once
#include <cstdint>

#include "ops/cv_color_kind.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {
namespace cv_color {

using ::mnnpy::cv_color::Kind;

struct ColorJob {
  Kind kind = Kind::Reorder;
  int src_channels = 3, dst_channels = 3;
  int blue = 0;                 // index of blue among the RGB channels (0: BGR order, 2: RGB order)
  int order[4] = {0, 1, 2, -1}; // Reorder
  bool yuv = false;             // YCrCb kinds: Y, U, V with the YUV coefficients
  int hue_range = 180;          // HSV/HLS: 180 (or 256 / 360 for the _FULL codes and float images)
  bool srgb = true;             // Lab/Luv: sRGB gamma (false for the linear LBGR/LRGB codes)
  int green_bits = 6;           // 16-bit packings: 6 (565) or 5 (555)
  int u_first = 1;              // 4:2:0: U before V (NV12, I420) or after (NV21, YV12)
  bool interleaved_chroma = false;
  int luma_index = 0, u_index = 1;  // 4:2:2: byte offsets of the first Y and of U in a 4-byte pair
  int bayer_pattern = 0;            // Bayer: the top-left 2x2 block is RGGB (0), GRBG, BGGR or GBRG (3)
  bool is_float = false;
  int64_t height = 0, width = 0;    // of the RGB image
  const void* src = nullptr;
  const void* chroma = nullptr;     // two-plane 4:2:0: the interleaved chroma plane; null: after the Y plane
  void* dst = nullptr;
};

void run(const ColorJob& job, ThreadPool* pool);

}  // namespace cv_color
}  // namespace cpu
}  // namespace mnnpy
