// Element types, their sizes and names, NumPy 2 promotion, and half-precision conversions.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace mnnpy {

// New dtypes go at the end: the numeric values of the others stay as they were.
enum class DType : uint8_t {
  Bool, Int8, UInt8, Int16, Int32, Int64, Float16, BFloat16, Float32, Float64, UInt16, UInt32, UInt64
};
constexpr int kNumDTypes = 13;

size_t dtype_size(DType t);
const char* dtype_name(DType t);          // NumPy spelling: "float32", "bool", "bfloat16" ...
bool dtype_from_name(const std::string& name, DType* out);
inline bool is_float(DType t) { return t >= DType::Float16 && t <= DType::Float64; }
inline bool is_unsigned_int(DType t) {
  return t == DType::UInt8 || t == DType::UInt16 || t == DType::UInt32 || t == DType::UInt64;
}
inline bool is_signed_int(DType t) { return t >= DType::Int8 && t <= DType::Int64 && t != DType::UInt8; }
inline bool is_integer(DType t) { return is_signed_int(t) || is_unsigned_int(t); }

// True when every value of `from` is exactly representable in `to` (NumPy's "safe" casting).
bool can_cast_safely(DType from, DType to);
// NumPy 2 result_type for two array dtypes (bfloat16 follows ml_dtypes: mixes with float16 as float32).
DType promote_types(DType a, DType b);

// Converts n values in host memory from one dtype to another with NumPy's casting rules (those
// of the Cast op, mnnpy/elementwise_program.h); from == to copies. Defined by the CPU backend,
// whose cast kernel is the host's.
void convert_values(DType from, DType to, const void* src, void* dst, size_t n);

// IEEE binary16 and bfloat16 <-> float32, round to nearest even.
inline float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ffu, bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      int e = -1;
      do { mant <<= 1; ++e; } while (!(mant & 0x400u));
      bits = sign | (uint32_t)(127 - 15 - e) << 23 | (mant & 0x3ffu) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | mant << 13;
  } else {
    bits = sign | (exp + 112) << 23 | mant << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0);  // inf / nan
  if (ax >= 0x477ff000u) return sign | 0x7c00u;  // rounds to overflow
  if (ax < 0x38800000u) {  // subnormal or zero in half
    if (ax < 0x33000000u) return sign;
    uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
    int shift = 126 - (int)(ax >> 23);  // 14..24
    uint32_t half_mant = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1))) ++half_mant;
    return sign | (uint16_t)half_mant;
  }
  uint32_t r = ax + 0xfffu + ((ax >> 13) & 1);  // round to nearest even on the 13 dropped bits
  return sign | (uint16_t)((r - 0x38000000u) >> 13);
}

inline float bf16_to_float(uint16_t b) {
  uint32_t bits = (uint32_t)b << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);  // quiet nan
  x += 0x7fffu + ((x >> 16) & 1);
  return (uint16_t)(x >> 16);
}

}  // namespace mnnpy
