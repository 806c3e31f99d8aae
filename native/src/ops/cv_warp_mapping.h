// The mappings of the CvWarp op (its `mapping` attribute) and the map inputs each reads: what
// its inference checks and its kernels compute.
#pragma once
#include <cstddef>

#include "mnnpy/graph.h"

namespace mnnpy {
namespace cv_warp {

// Where output pixel (x, y) takes its value from.
enum class Mapping : int {
  Affine = 0,       // matrix[0..5]: source = M * (x, y, 1)
  Perspective = 1,  // matrix[0..8]: source = projective M * (x, y, 1)
  MapsXY = 2,       // map1, map2: float32 HxW maps of x and of y
  MapsXYPacked = 3, // map1: float32 HxWx2 (x, y) pairs
  MapsFixed = 4,    // map1: int16 HxWx2 integer positions; map2: int16 HxW 1/32-pixel fractions (or null)
};

// How many map inputs follow the image for the warp's `mapping` (and `has_fractions`).
inline size_t map_inputs(const Attrs& attrs) {
  switch ((Mapping)attrs.get_int("mapping")) {
    case Mapping::Affine:
    case Mapping::Perspective: return 0;
    case Mapping::MapsXYPacked: return 1;
    case Mapping::MapsXY: return 2;
    default: return attrs.get_int("has_fractions", 0) ? 2 : 1;
  }
}

}  // namespace cv_warp
}  // namespace mnnpy
