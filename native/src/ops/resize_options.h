// The options of the Resize op (its mode, coordinate_transformation_mode, nearest_mode,
// cubic_coeff_a, exclude_outside and antialias attributes): what its inference checks and its
// kernels and ResizeGrad's compute.
#pragma once
#include <cstddef>
#include <string>

#include "mnnpy/graph.h"

namespace mnnpy {

enum class ResizeMode { Nearest, Linear, Cubic };
enum class CoordinateMode { HalfPixel, HalfPixelSymmetric, PytorchHalfPixel, AlignCorners, Asymmetric, TfHalfPixelForNN };
enum class NearestMode { RoundPreferFloor, RoundPreferCeil, Floor, Ceil };

struct ResizeOptions {
  ResizeMode mode = ResizeMode::Nearest;
  CoordinateMode coordinates = CoordinateMode::HalfPixel;
  NearestMode nearest = NearestMode::RoundPreferFloor;
  float cubic_coeff_a = -0.75f;
  bool exclude_outside = false;
  bool antialias = false;  // linear and cubic: a filter 1 / scale times wider when downsampling
};

namespace resize_detail {

template <class E> struct Named { const char* name; E value; };

inline const Named<ResizeMode> kModes[] = {
    {"nearest", ResizeMode::Nearest}, {"linear", ResizeMode::Linear}, {"cubic", ResizeMode::Cubic}};
inline const Named<CoordinateMode> kCoordinateModes[] = {
    {"half_pixel", CoordinateMode::HalfPixel},
    {"half_pixel_symmetric", CoordinateMode::HalfPixelSymmetric},
    {"pytorch_half_pixel", CoordinateMode::PytorchHalfPixel},
    {"align_corners", CoordinateMode::AlignCorners},
    {"asymmetric", CoordinateMode::Asymmetric},
    {"tf_half_pixel_for_nn", CoordinateMode::TfHalfPixelForNN}};
inline const Named<NearestMode> kNearestModes[] = {
    {"round_prefer_floor", NearestMode::RoundPreferFloor},
    {"round_prefer_ceil", NearestMode::RoundPreferCeil},
    {"floor", NearestMode::Floor},
    {"ceil", NearestMode::Ceil}};

template <class E, size_t K>
E lookup(const Named<E> (&table)[K], const Attrs& attrs, const std::string& key, const char* fallback) {
  const std::string value = attrs.has(key) ? attrs.get_string(key) : fallback;
  std::string known;
  for (const auto& entry : table) {
    if (value == entry.name) return entry.value;
    known += std::string(known.empty() ? "" : ", ") + "'" + entry.name + "'";
  }
  throw ValueError("Resize: unknown " + key + " '" + value + "'; expected one of " + known);
}

}  // namespace resize_detail

// The options of a Resize or ResizeGrad node; ValueError names an unknown mode.
inline ResizeOptions resize_options(const Attrs& attrs) {
  using namespace resize_detail;
  ResizeOptions o;
  o.mode = lookup(kModes, attrs, "mode", "nearest");
  o.coordinates = lookup(kCoordinateModes, attrs, "coordinate_transformation_mode", "half_pixel");
  o.nearest = lookup(kNearestModes, attrs, "nearest_mode", "round_prefer_floor");
  o.cubic_coeff_a = (float)(attrs.has("cubic_coeff_a") ? attrs.get_float("cubic_coeff_a") : -0.75);
  o.exclude_outside = attrs.get_int("exclude_outside", 0) != 0;
  o.antialias = attrs.get_int("antialias", 0) != 0;
  return o;
}

}  // namespace mnnpy
