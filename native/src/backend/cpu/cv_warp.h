// OpenCV's geometric warps (warpAffine, warpPerspective, remap, convertMaps, getRectSubPix) on
// HxWxC images. Two samplers reproduce the two ways OpenCV 5 computes a warp:
//  - float coordinates (uint8 and float32 images of 1, 3 or 4 channels, nearest or bilinear;
//    bicubic for every depth but float64): source positions in float32 with fused
//    multiply-adds, weights in float32, integer results rounded half to even;
//  - fixed point (every other case: int16 and float64 images, other channel counts, Lanczos,
//    float64 bicubic, fixed-point maps): positions in 1/32 pixel steps and tabulated 2-D
//    weights, 15-bit integers for uint8.
#pragma once
#include <cstdint>

#include "mnnpy/dtype.h"
#include "ops/cv_warp_mapping.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {
namespace cv_warp {

// OpenCV's BORDER_* values that warps accept.
enum class Border : int { Constant = 0, Replicate = 1, Reflect = 2, Wrap = 3, Reflect101 = 4, Transparent = 5 };

// OpenCV's INTER_* values that warps accept (INTER_AREA is taken as Linear by the caller).
enum class Interpolation : int { Nearest = 0, Linear = 1, Cubic = 2, Lanczos4 = 4 };

using ::mnnpy::cv_warp::Mapping;

struct WarpPlan {
  DType dtype = DType::UInt8;
  int64_t src_h = 0, src_w = 0, channels = 1, dst_h = 0, dst_w = 0;
  Interpolation interpolation = Interpolation::Linear;
  Border border = Border::Constant;
  double border_value[4] = {0, 0, 0, 0};
  Mapping mapping = Mapping::Affine;
  double matrix[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};  // destination -> source
  bool relative = false;                             // maps hold offsets from (x, y)
};

// True when OpenCV (and so this warp) samples at float32 coordinates for this plan.
bool uses_float_coordinates(const WarpPlan& plan);

// dst (dst_h x dst_w x channels, src's dtype) from src. With a transparent border dst must hold
// the values that stay where the source does not reach.
void warp(const WarpPlan& plan, const void* src, const void* map1, const void* map2, void* dst, ThreadPool* pool);

// OpenCV's convertMaps between the float (x map + y map, or packed pairs) and the fixed-point
// (int16 pairs + 1/32-pixel fractions) forms of n map entries.
// from_float: map1 (+ map2 when not packed) float32 -> out1 int16 pairs, out2 int16 fractions
// (null with nearest: positions rounded instead). Otherwise map1 int16 pairs + map2 fractions
// (null: 0) -> out1 (+ out2) float32.
void convert_maps(bool from_float, bool src_packed, bool dst_packed, bool nearest, int64_t n, const void* map1,
                  const void* map2, void* out1, void* out2, ThreadPool* pool);

// OpenCV's getRectSubPix: the patch (out_h x out_w) centred at (cx, cy), bilinear with the
// source's edge pixels repeated outside it; src uint8 or float32, dst uint8 or float32.
void rect_sub_pix(DType src_dtype, DType dst_dtype, int64_t src_h, int64_t src_w, int64_t channels, int64_t out_h,
                  int64_t out_w, double cx, double cy, const void* src, void* dst);

// Shared by the two samplers: the in-image position that `border` extrapolates position p of a
// line of len pixels from (-1 for a constant or transparent border).
int64_t border_index(int64_t p, int64_t len, Border border);
// The fixed-point sampler (every plan for which uses_float_coordinates is false).
void fixed_warp(const WarpPlan& plan, const void* src, const void* map1, const void* map2, void* dst,
                ThreadPool* pool);

}  // namespace cv_warp
}  // namespace cpu
}  // namespace mnnpy
