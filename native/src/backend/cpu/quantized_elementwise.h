// The arithmetic of the 8-bit elementwise ops (quantized_elementwise_kernels.cpp), in the uint8
// domain: int8 data has its sign bit flipped (x ^ 0x80 keeps the order and adds 128 to the value,
// which moves into the zero points), so each kernel is written once. Rounding half to even adds
// and subtracts 1.5 * 2^23 in float32 (exact for the clamped values, which stay within +-255).
// QLinearAdd: y = round(clamp((a - a_zero) * a_ratio + (b - b_zero) * b_ratio, lo, hi)) + zero,
// QLinearMul: y = round(clamp(float((a - a_zero) (b - b_zero)) * ratio, lo, hi)) + zero, each
// product and the sum rounded once in float32 (no fused multiply-add).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace mnnpy {
namespace cpu {
namespace quantized_elementwise_detail {

constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23: v + this rounds v half to even
constexpr int32_t kRoundMagicBits = 0x4B400000;
constexpr int64_t kTailBytes = 64;  // at least one vector of 8-bit lanes widened to floats, any target

// The clamp and zero point of an output in the uint8 domain: a value v becomes
// round(clamp(v, lo, hi)) + zero, within [0, 255].
struct Requant {
  float lo = 0, hi = 255;
  int32_t zero = 0;
};

inline Requant make_requant(int32_t zero_u8) { return Requant{(float)(0 - zero_u8), (float)(255 - zero_u8), zero_u8}; }

inline uint8_t requantize_one(float v, const Requant& q) {
  v = std::min(std::max(v, q.lo), q.hi);
  const float r = (v + kRoundMagic) - kRoundMagic;
  return (uint8_t)((int32_t)r + q.zero);
}

struct BinaryParams {
  float a_ratio = 1, b_ratio = 1;  // QLinearAdd: a_scale / y_scale, b_scale / y_scale
  float ratio = 1;                 // QLinearMul: a_scale * b_scale / y_scale
  int32_t a_zero = 0, b_zero = 0;  // uint8 domain
  uint8_t flip = 0;
  Requant out;
};

// Whether every value of the op lies within +-2^30 whatever the bytes (finite ratios, small enough):
// a vector's conversion to int32 then cannot overflow, and the saturating packs alone bound the
// values from above as the clamp at hi would (hi is the top of the uint8 domain, 255 - zero).
inline bool values_within_int32(const BinaryParams& p, bool mul) {
  constexpr float kLimit = 1073741824.0f;  // 2^30
  if (mul) return 65025.0f * std::fabs(p.ratio) < kLimit;   // false for a NaN
  return 255.0f * (std::fabs(p.a_ratio) + std::fabs(p.b_ratio)) < kLimit;
}

}  // namespace quantized_elementwise_detail

// y[i] = QLinearAdd(a[i], b[i]) for i < n (y may be a).
void qlinear_add_row(const uint8_t* a, const uint8_t* b, uint8_t* y, int64_t n,
                     const quantized_elementwise_detail::BinaryParams& p);

}  // namespace cpu
}  // namespace mnnpy
