// The taps of ONNX Resize along one axis (ops/resize.cpp): for each output position the input
// positions it reads and their weights, from the op's options (ops/resize_options.h). Built once
// per shape on the host; every backend's Resize kernels and ResizeGrad combine these same tables,
// so that their coordinates, rounding and weights agree bit for bit.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "ops/resize_options.h"

namespace mnnpy {

// The taps of one axis: output position o reads input index[t * out + o] with weight
// weight[t * out + o], t in [0, taps).
struct ResizeAxis {
  int64_t in = 0, out = 0;
  int taps = 1;
  std::vector<int32_t> index;
  std::vector<float> weight;
  bool identity = false;  // out == in and every output copies its own input position
};

namespace resize_detail {

// The input coordinate of output position o, as ONNX Resize defines it (computed in float,
// as onnxruntime does, so that ties in nearest rounding land the same way). length: the resized
// length before rounding down to out (in * scale).
inline float source_coordinate(int64_t o, int64_t in, int64_t out, float scale, double length,
                               CoordinateMode mode) {
  const float x = (float)o;
  switch (mode) {
    case CoordinateMode::HalfPixel: return (x + 0.5f) / scale - 0.5f;
    case CoordinateMode::HalfPixelSymmetric: {
      // Centres the rounded-down output on the input: shifts by half of what rounding cut off.
      const float offset = (float)(in / 2.0 * (1.0 - (double)out / length));
      return offset + (x + 0.5f) / scale - 0.5f;
    }
    case CoordinateMode::PytorchHalfPixel: return out > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
    // By the rounded length even when the model gives scales, as onnxruntime and PyTorch do (the
    // ONNX reference divides by in * scale - 1).
    case CoordinateMode::AlignCorners: return out == 1 ? 0.0f : x * (float)(in - 1) / (float)(out - 1);
    case CoordinateMode::Asymmetric: return x / scale;
    case CoordinateMode::TfHalfPixelForNN: return (x + 0.5f) / scale;
  }
  return 0.0f;
}

inline int64_t nearest_index(float x, NearestMode mode) {
  switch (mode) {
    case NearestMode::RoundPreferFloor:
      // Halfway values round down; others to the nearest integer.
      if (x == (float)(int64_t)x + 0.5f) return (int64_t)std::floor(x);
      return (int64_t)std::round(x);
    case NearestMode::RoundPreferCeil:
      if (x == (float)(int64_t)x + 0.5f) return (int64_t)std::ceil(x);
      return (int64_t)std::round(x);
    case NearestMode::Floor: return (int64_t)std::floor(x);
    case NearestMode::Ceil: return (int64_t)std::ceil(x);
  }
  return 0;
}

// Keys' cubic convolution weights for the taps at floor(x) - 1 .. floor(x) + 2, t = x - floor(x).
inline void cubic_weights(float t, float a, float w[4]) {
  const float t1 = t + 1, s = 1 - t, s1 = 2 - t;
  w[0] = ((a * t1 - 5 * a) * t1 + 8 * a) * t1 - 4 * a;
  w[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
  w[2] = ((a + 2) * s - (a + 3)) * s * s + 1;
  w[3] = ((a * s1 - 5 * a) * s1 + 8 * a) * s1 - 4 * a;
}

inline int64_t clamp_index(int64_t i, int64_t in) { return std::min(std::max<int64_t>(i, 0), in - 1); }

// Keys' cubic kernel at distance x.
inline double cubic_kernel(double x, double a) {
  x = std::fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// Antialiased linear or cubic taps of a downsampling axis (scale < 1), as ONNX Resize defines
// them: the triangle or cubic kernel stretched by 1 / scale, normalized to sum 1, over the taps
// nearest the source coordinate (edge values beyond the input, or with exclude_outside, none).
inline void antialias_taps(ResizeAxis& axis, const std::vector<float>& source, double scale,
                           const ResizeOptions& options) {
  const int64_t in = axis.in, out = axis.out;
  const bool cubic = options.mode == ResizeMode::Cubic;
  const int64_t first = (int64_t)std::floor((cubic ? -2.0 : -1.0) / scale) + 1;  // tap offsets first .. -first + 1
  const int64_t taps = 2 - 2 * first;
  axis.taps = (int)taps;
  axis.index.assign(taps * out, 0);
  axis.weight.assign(taps * out, 0.0f);
  std::vector<double> w(taps);
  for (int64_t o = 0; o < out; ++o) {
    const double x = source[o], whole = std::floor(x);
    // The input to the left of x is the kernel's centre; an integral x counts as one past it.
    const bool integral = x == whole;
    const double ratio = integral ? 1.0 : x - whole;
    const int64_t left = (int64_t)whole - (integral ? 1 : 0);
    double total = 0;
    for (int64_t t = 0; t < taps; ++t) {
      const double at = ((double)(first + t) - ratio) * scale;
      w[t] = cubic ? cubic_kernel(at, options.cubic_coeff_a) : std::max(0.0, 1.0 - std::fabs(at));
      if (options.exclude_outside && (left + first + t < 0 || left + first + t >= in)) w[t] = 0;
      total += w[t];
    }
    for (int64_t t = 0; t < taps; ++t) {
      axis.index[t * out + o] = (int32_t)clamp_index(left + first + t, in);
      axis.weight[t * out + o] = total != 0 ? (float)(w[t] / total) : 0.0f;
    }
  }
}

}  // namespace resize_detail

// given_scale: the model's own scale factor (ONNX `scales`), when it has one; ONNX then maps
// coordinates by it and by the unrounded resized length in * scale, rather than by out / in.
inline ResizeAxis make_resize_axis(int64_t in, int64_t out, std::optional<float> given_scale,
                                   const ResizeOptions& options) {
  using namespace resize_detail;
  const float scale = given_scale ? *given_scale : (float)out / (float)in;
  const double length = given_scale ? (double)in * *given_scale : (double)out;
  ResizeAxis axis;
  axis.in = in;
  axis.out = out;
  const bool antialias = options.antialias && options.mode != ResizeMode::Nearest && scale < 1.0f;
  axis.taps = options.mode == ResizeMode::Nearest ? 1 : options.mode == ResizeMode::Linear ? 2 : 4;
  axis.index.assign(antialias ? 0 : axis.taps * out, 0);
  axis.weight.assign(antialias ? 0 : axis.taps * out, 0.0f);
  for (int64_t o = 0; o < out && !antialias; ++o) {
    const float x = source_coordinate(o, in, out, scale, length, options.coordinates);
    if (options.mode == ResizeMode::Nearest) {
      axis.index[o] = (int32_t)clamp_index(nearest_index(x, options.nearest), in);
      axis.weight[o] = 1.0f;
    } else if (options.mode == ResizeMode::Linear) {
      // Outside [0, in - 1] the edge value holds (with or without exclude_outside).
      const float xc = std::min(std::max(x, 0.0f), (float)(in - 1));
      const int64_t i0 = std::min<int64_t>((int64_t)xc, in - 1), i1 = std::min<int64_t>(i0 + 1, in - 1);
      const float t = xc - (float)i0;
      axis.index[o] = (int32_t)i0;
      axis.index[out + o] = (int32_t)i1;
      axis.weight[o] = 1.0f - t;
      axis.weight[out + o] = t;
    } else {
      const float fl = std::floor(x);
      const int64_t base = (int64_t)fl - 1;
      float w[4];
      cubic_weights(x - fl, options.cubic_coeff_a, w);
      if (options.exclude_outside) {
        float total = 0;
        for (int t = 0; t < 4; ++t) {
          if (base + t < 0 || base + t >= in) w[t] = 0;
          total += w[t];
        }
        for (int t = 0; t < 4; ++t) w[t] = total != 0 ? w[t] / total : 0.0f;
      }
      for (int t = 0; t < 4; ++t) {
        axis.index[t * out + o] = (int32_t)clamp_index(base + t, in);
        axis.weight[t * out + o] = w[t];
      }
    }
  }
  if (antialias) {
    std::vector<float> source(out);
    for (int64_t o = 0; o < out; ++o) source[o] = source_coordinate(o, in, out, scale, length, options.coordinates);
    antialias_taps(axis, source, scale, options);
  }
  axis.identity = in == out;
  for (int64_t o = 0; o < out && axis.identity; ++o) {
    for (int t = 0; t < axis.taps; ++t) {
      const float w = axis.weight[t * out + o];
      const bool own = axis.index[t * out + o] == o;
      if (own ? w != 1.0f : w != 0.0f) { axis.identity = false; break; }
    }
  }
  return axis;
}

}  // namespace mnnpy
