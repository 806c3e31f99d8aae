// The colour conversions the CvColor op performs (its `kind` attribute): what its inference
// checks and its kernels compute.
#pragma once

namespace mnnpy {
namespace cv_color {

enum class Kind : int {
  Reorder = 0,     // channels picked by `order` (-1: an opaque alpha channel)
  ToGray,          // RGB(A) -> luma
  YCrCb,           // RGB -> Y, Cr, Cb (or Y, U, V with `yuv`)
  YCrCbInverse,
  XYZ,
  XYZInverse,
  HSV,
  HSVInverse,
  HLS,
  HLSInverse,
  Lab,
  LabInverse,
  Luv,
  LuvInverse,
  To16Bit,         // RGB(A) -> two bytes of 5-6-5 or 5-5-5 bits (`green_bits`)
  From16Bit,
  GrayTo16Bit,
  From16BitToGray,
  Yuv420ToRgb,     // planar (`interleaved_chroma` 0) or semi-planar (1) 4:2:0
  Yuv420ToGray,
  RgbToYuv420,     // planar only
  Yuv422ToRgb,     // packed 4:2:2 (`luma_index`, `u_index` give the byte layout)
  Yuv422ToGray,
  RgbToYuv422,
  PremultiplyAlpha,
  UnpremultiplyAlpha,
  Bayer,           // a one-channel mosaic (`bayer_pattern`) to BGR/RGB(A) or gray (bilinear)
};

}  // namespace cv_color
}  // namespace mnnpy
