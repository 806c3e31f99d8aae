// Requantization of int32 sums to 8-bit outputs, as onnxruntime's QLinearConv / QLinearMatMul
// kernels compute it (and oneDNN's, OpenVINO's):
//   y = clamp(round_half_even(float(acc) * multiplier), low - zero, high - zero) + zero
// in float32, with multiplier = float(x_scale * w_scale / y_scale) formed in float32; a NaN product
// (an infinite or NaN multiplier) gives low. The clamp bounds are whole numbers, so clamping
// before the rounding equals clamping after it, and the clamped value (|v| <= 383) rounds exactly
// by adding and subtracting 1.5 * 2^23. This is the scalar statement; requant_int8-inl.h has the
// vector code of every target, which gives the same bytes.
#pragma once
#include <cstdint>

namespace mnnpy {
namespace cpu {

struct RequantParams {
  int32_t zero = 0, low = 0, high = 255;  // the output's zero point and range (a ReLU raises low)
  float lo() const { return (float)(low - zero); }
  float hi() const { return (float)(high - zero); }
};

inline int32_t RequantOne(int32_t acc, float multiplier, const RequantParams& p) {
  constexpr float kShift = 12582912.0f;  // 1.5 * 2^23
  float v = (float)acc * multiplier;
  const float lo = p.lo(), hi = p.hi();
  v = v >= lo ? (v <= hi ? v : hi) : lo;  // NaN fails both comparisons: lo
  return (int32_t)((v + kShift) - kShift) + p.zero;
}

}  // namespace cpu
}  // namespace mnnpy
