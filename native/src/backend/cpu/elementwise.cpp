// Elementwise kernels, compiled once per SIMD target by Highway and chosen at run time.
// Plain loops inside the target namespace are auto-vectorized for that target; the
// transcendental functions use Highway's vector math where its valid range holds and fall
// back to libm lane by lane elsewhere, so results stay right for every input.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/elementwise.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include "backend/cpu/simd_shared-inl.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "backend/cpu/elementwise.h"
#include "mnnpy/tensor.h"

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace ::mnnpy::ew;  // the op codes

// ---------------------------------------------------------------- scalar definitions
template <class T> using Unsigned = std::make_unsigned_t<T>;
// Integer arithmetic wraps in this type: at least as wide as unsigned int, so that the operands of
// a product are never promoted to (overflowing) int.
template <class T> using Wrapping = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, Unsigned<T>>;

template <class T> inline T int_floordiv(T a, T b) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return (T)(Unsigned<T>(0) - (Unsigned<T>)a);
    T q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
  } else {
    return a / b;
  }
}
template <class T> inline T int_mod(T a, T b) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return 0;
    T r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  } else {
    return a % b;
  }
}
template <class T> inline T int_pow(T base, T exp) {
  if constexpr (std::is_signed_v<T>) {
    if (exp < 0) return base == 1 ? 1 : (base == -1 ? ((exp & 1) ? -1 : 1) : 0);
  }
  Unsigned<T> result = 1, b = (Unsigned<T>)base;
  auto e = (Unsigned<T>)exp;
  while (e) {
    if (e & 1) result = (Unsigned<T>)((Wrapping<T>)result * b);
    b = (Unsigned<T>)((Wrapping<T>)b * b);
    e >>= 1;
  }
  return (T)result;
}
template <class T> inline T float_floordiv(T a, T b) {
  if (b == 0) return a / b;
  T mod = std::fmod(a, b);
  T div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
  if (div == 0) return std::copysign(T(0), a / b);
  T fl = std::floor(div);
  if (div - fl > T(0.5)) fl += 1;
  return fl;
}
template <class T> inline T float_mod(T a, T b) {
  if (b == 0) return std::fmod(a, b);
  T mod = std::fmod(a, b);
  if (mod != 0) {
    if ((b < 0) != (mod < 0)) mod += b;
  } else {
    mod = std::copysign(T(0), b);
  }
  return mod;
}
template <class T> inline T shift_left(T a, T b) {
  if ((std::make_unsigned_t<T>)b >= sizeof(T) * 8) return 0;
  return (T)((Unsigned<T>)a << b);
}
template <class T> inline T shift_right(T a, T b) {
  if ((std::make_unsigned_t<T>)b >= sizeof(T) * 8) return (std::is_signed_v<T> && a < 0) ? T(-1) : T(0);
  return (T)(a >> b);
}

// Greatest common divisor of |a| and |b| (NumPy's gcd: never negative, gcd(0, 0) = 0), in the
// unsigned type so that |INT_MIN| is representable.
template <class T> inline T int_gcd(T a, T b) {
  using U = Unsigned<T>;
  U x = a < 0 ? U(U(0) - (U)a) : (U)a, y = b < 0 ? U(U(0) - (U)b) : (U)b;
  while (y != 0) {
    const U r = x % y;
    x = y;
    y = r;
  }
  return (T)x;
}
template <class T> inline T int_lcm(T a, T b) {
  using U = Unsigned<T>;
  const U g = (U)int_gcd(a, b);
  if (g == 0) return T(0);
  const U x = a < 0 ? U(U(0) - (U)a) : (U)a, y = b < 0 ? U(U(0) - (U)b) : (U)b;
  return (T)(U)((Wrapping<T>)(x / g) * y);
}

template <class T> inline T scalar_unary(int code, T x) {
  if constexpr (std::is_floating_point_v<T>) {
    switch (code) {
      case kNeg: return -x;
      case kAbs: return std::fabs(x);
      case kSign: return x > 0 ? T(1) : (x < 0 ? T(-1) : (x == 0 ? T(0) : x));
      case kSquare: return x * x;
      case kSqrt: return std::sqrt(x);
      case kRsqrt: return T(1) / std::sqrt(x);
      case kReciprocal: return T(1) / x;
      case kExp: return std::exp(x);
      case kExpm1: return std::expm1(x);
      case kExp2: return std::exp2(x);
      case kLog: return std::log(x);
      case kLog1p: return std::log1p(x);
      case kLog2: return std::log2(x);
      case kLog10: return std::log10(x);
      case kSin: return std::sin(x);
      case kCos: return std::cos(x);
      case kTan: return std::tan(x);
      case kAsin: return std::asin(x);
      case kAcos: return std::acos(x);
      case kAtan: return std::atan(x);
      case kSinh: return std::sinh(x);
      case kCosh: return std::cosh(x);
      case kTanh: return std::tanh(x);
      case kAsinh: return std::asinh(x);
      case kAcosh: return std::acosh(x);
      case kAtanh: return std::atanh(x);
      case kFloor: return std::floor(x);
      case kCeil: return std::ceil(x);
      case kRint: return std::nearbyint(x);
      case kTrunc: return std::trunc(x);
      case kErf: return std::erf(x);
      case kErfc: return std::erfc(x);
      case kSigmoid: return x >= 0 ? T(1) / (T(1) + std::exp(-x)) : std::exp(x) / (T(1) + std::exp(x));
      case kRelu: return x > 0 ? x : (x == x ? T(0) : x);
      case kRelu6: return x != x ? x : std::min(std::max(x, T(0)), T(6));
      // x Phi(x) with Phi from erfc: no cancellation in the left tail (1 + erf(x / sqrt 2) loses every
      // digit there), as the vector form computes it.
      case kGelu: return T(0.5) * x * std::erfc(x * T(-0.70710678118654752440));
      case kGeluTanh:
        return T(0.5) * x * (T(1) + std::tanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x)));
      case kSoftplus: return x > T(20) ? x : std::log1p(std::exp(x));
      case kSoftsign: return x / (T(1) + std::fabs(x));
      case kSelu:
        return T(1.0507009873554804934) * (x > 0 ? x : T(1.6732632423543772848) * std::expm1(x));
      case kCbrt: return std::cbrt(x);
      case kCopy: return x;
      default: return x;
    }
  } else {
    using U = Unsigned<T>;
    switch (code) {
      case kNeg: return (T)(U(0) - (U)x);
      case kAbs: return x < 0 ? (T)(U(0) - (U)x) : x;
      case kSign: return (T)((x > 0) - (x < 0));
      case kSquare: return (T)((Wrapping<T>)(U)x * (Wrapping<T>)(U)x);
      case kReciprocal: return x == 0 ? T(0) : (T)(T(1) / x);
      case kRelu: return x > 0 ? x : T(0);
      case kRelu6: return x < 0 ? T(0) : (x > 6 ? T(6) : x);
      case kBitwiseNot: return (T)~x;
      default: return x;  // floor/ceil/trunc/rint/copy keep integers as they are
    }
  }
}

template <class T> inline T scalar_binary(int code, T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    switch (code) {
      case kAdd: return a + b;
      case kSub: return a - b;
      case kMul: return a * b;
      case kDiv: return a / b;
      case kFloorDiv: return float_floordiv(a, b);
      case kMod: return float_mod(a, b);
      case kFmod: return std::fmod(a, b);
      case kPow: return std::pow(a, b);
      case kMaximum: return (a >= b || a != a) ? a : b;
      case kMinimum: return (a <= b || a != a) ? a : b;
      case kFmax: return (b != b || a >= b) ? a : b;
      case kFmin: return (b != b || a <= b) ? a : b;
      case kAtan2: return std::atan2(a, b);
      case kHypot: return std::hypot(a, b);
      case kCopysign: return std::copysign(a, b);
      case kSquaredDiff: return (a - b) * (a - b);
      case kNextafter: return std::nextafter(a, b);
      default: return a;
    }
  } else {
    using U = Unsigned<T>;
    switch (code) {
      case kAdd: return (T)((U)a + (U)b);
      case kSub: return (T)((U)a - (U)b);
      case kMul: return (T)((Wrapping<T>)(U)a * (Wrapping<T>)(U)b);
      case kFloorDiv: return int_floordiv(a, b);
      case kMod: return int_mod(a, b);
      case kFmod:  // a % b, but 0 for b == 0 (and for -1, whose quotient of the minimum overflows)
        if constexpr (std::is_signed_v<T>) return b == 0 || b == T(-1) ? T(0) : (T)(a % b);
        else return b == 0 ? T(0) : (T)(a % b);
      case kPow: return int_pow(a, b);
      case kMaximum: case kFmax: return a > b ? a : b;
      case kMinimum: case kFmin: return a < b ? a : b;
      case kSquaredDiff: { const Wrapping<T> d = (U)((U)a - (U)b); return (T)(d * d); }
      case kBitAnd: return (T)(a & b);
      case kBitOr: return (T)(a | b);
      case kBitXor: return (T)(a ^ b);
      case kShiftLeft: return shift_left(a, b);
      case kShiftRight: return shift_right(a, b);
      case kGcd: return int_gcd(a, b);
      case kLcm: return int_lcm(a, b);
      default: return a;
    }
  }
}

// ---------------------------------------------------------------- loops
// Vector functions handed to the loops are inlined by force: called out of line, the four
// vectors of a map_math step would run their long dependency chains one after the other.
#ifndef MNNPY_ALWAYS_INLINE
#define MNNPY_ALWAYS_INLINE __attribute__((always_inline))
#endif
template <class T, class F> HWY_INLINE void map1(const T* HWY_RESTRICT x, T* HWY_RESTRICT y, size_t n, F f) {
  for (size_t i = 0; i < n; ++i) y[i] = f(x[i]);
}
// Operand forms of the binary loops: both arrays, or one side a single value held in a register
// (a 0-d constant), so that it is never expanded into memory.
enum BinaryForm : int { kArrays = 0, kScalarA = 1, kScalarB = 2 };

template <int Form, class T, class R, class F>
HWY_INLINE void map2(const T* HWY_RESTRICT a, const T* HWY_RESTRICT b, R* HWY_RESTRICT y, size_t n, F f) {
  if constexpr (Form == kScalarA) {
    const T s = a[0];
    for (size_t i = 0; i < n; ++i) y[i] = (R)f(s, b[i]);
  } else if constexpr (Form == kScalarB) {
    const T s = b[0];
    for (size_t i = 0; i < n; ++i) y[i] = (R)f(a[i], s);
  } else {
    for (size_t i = 0; i < n; ++i) y[i] = (R)f(a[i], b[i]);
  }
}
template <int Form, class T, class F>
HWY_INLINE void compare2(const T* HWY_RESTRICT a, const T* HWY_RESTRICT b, uint8_t* HWY_RESTRICT y, size_t n, F f) {
  map2<Form>(a, b, y, n, [f](T p, T q) { return f(p, q) ? uint8_t(1) : uint8_t(0); });
}
// A binary op as a vector function `vf` over whole vectors, `f` on the tail (the same formula).
template <int Form, class T, class VF, class F>
HWY_INLINE void map2_vec(const T* HWY_RESTRICT a, const T* HWY_RESTRICT b, T* HWY_RESTRICT y, size_t n, VF vf, F f) {
  const hn::ScalableTag<T> d;
  const size_t N = hn::Lanes(d);
  const auto sa = hn::Set(d, a[0]), sb = hn::Set(d, b[0]);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto p = Form == kScalarA ? sa : hn::LoadU(d, a + i);
    const auto q = Form == kScalarB ? sb : hn::LoadU(d, b + i);
    hn::StoreU(vf(p, q), d, y + i);
  }
  for (; i < n; ++i) y[i] = f(Form == kScalarA ? a[0] : a[i], Form == kScalarB ? b[0] : b[i]);
}
// The general case for ops without a vector loop.
template <int Form, class T>
void binary_scalar_loop(int code, const T* a, const T* b, T* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = scalar_binary<T>(code, Form == kScalarA ? a[0] : a[i], Form == kScalarB ? b[0] : b[i]);
}

// Vector math on the lanes inside [lo, hi], libm on the others. Each lane's result depends on its
// own value only, never on its neighbours or on where the array ends (so not on the vector width
// either): a vector with lanes outside the range computes the vector math with those lanes
// replaced and takes libm's values for them alone, and the last partial vector goes through the
// vector math from a buffer. Four vectors at a time while all their lanes are inside: the math
// functions are long dependency chains (a division, an exp), and four independent ones keep the
// FMA units busy.
template <class T, class VecFn>
HWY_INLINE void map_math(const T* HWY_RESTRICT x, T* HWY_RESTRICT y, size_t n, int code, T lo, T hi, VecFn vf) {
  const hn::ScalableTag<T> d;
  const size_t N = hn::Lanes(d);
  const auto vlo = hn::Set(d, lo), vhi = hn::Set(d, hi);
  auto inside = [&](auto v) { return hn::And(hn::Ge(v, vlo), hn::Le(v, vhi)); };  // false for NaN
  // `count` lanes from `at`: vector math where inside, libm for each lane that is not.
  auto partial = [&](size_t at, size_t count) {
    HWY_ALIGN T buf[hn::MaxLanes(d)];
    for (size_t j = 0; j < hn::MaxLanes(d); ++j) buf[j] = j < count ? x[at + j] : lo;
    const auto v = hn::Load(d, buf);
    hn::Store(vf(d, hn::IfThenElse(inside(v), v, vlo)), d, buf);
    for (size_t j = 0; j < count; ++j) {
      const T xj = x[at + j];
      y[at + j] = (xj >= lo && xj <= hi) ? buf[j] : scalar_unary<T>(code, xj);
    }
  };
  auto one = [&](size_t at) {
    const auto v = hn::LoadU(d, x + at);
    if (hn::AllTrue(d, inside(v))) hn::StoreU(vf(d, v), d, y + at);
    else partial(at, N);
  };
  size_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    const auto v0 = hn::LoadU(d, x + i), v1 = hn::LoadU(d, x + i + N);
    const auto v2 = hn::LoadU(d, x + i + 2 * N), v3 = hn::LoadU(d, x + i + 3 * N);
    if (!hn::AllTrue(d, hn::And(hn::And(inside(v0), inside(v1)), hn::And(inside(v2), inside(v3))))) {
      for (size_t k = 0; k < 4; ++k) one(i + k * N);
      continue;
    }
    const auto r0 = vf(d, v0), r1 = vf(d, v1), r2 = vf(d, v2), r3 = vf(d, v3);
    hn::StoreU(r0, d, y + i);
    hn::StoreU(r1, d, y + i + N);
    hn::StoreU(r2, d, y + i + 2 * N);
    hn::StoreU(r3, d, y + i + 3 * N);
  }
  for (; i + N <= n; i += N) one(i);
  if (i < n) partial(i, n - i);
}

template <class T> void unary_float(int code, const T* x, T* y, size_t n) {
  constexpr bool f32 = sizeof(T) == 4;
  constexpr T big = std::numeric_limits<T>::max();
  constexpr T tiny = std::numeric_limits<T>::min();
  switch (code) {
    case kNeg: return map1(x, y, n, [](T v) { return -v; });
    case kAbs: return map1(x, y, n, [](T v) { return v < 0 ? -v : (v == 0 ? T(0) : v); });
    case kSquare: return map1(x, y, n, [](T v) { return v * v; });
    case kSqrt: {
      const hn::ScalableTag<T> d;
      const size_t N = hn::Lanes(d);
      size_t i = 0;
      for (; i + N <= n; i += N) hn::StoreU(hn::Sqrt(hn::LoadU(d, x + i)), d, y + i);
      for (; i < n; ++i) y[i] = std::sqrt(x[i]);
      return;
    }
    case kRsqrt: {
      const hn::ScalableTag<T> d;
      const size_t N = hn::Lanes(d);
      size_t i = 0;
      for (; i + N <= n; i += N) hn::StoreU(hn::Div(hn::Set(d, T(1)), hn::Sqrt(hn::LoadU(d, x + i))), d, y + i);
      for (; i < n; ++i) y[i] = T(1) / std::sqrt(x[i]);
      return;
    }
    case kReciprocal: return map1(x, y, n, [](T v) { return T(1) / v; });
    case kRelu: return map1(x, y, n, [](T v) { return v > 0 ? v : (v == v ? T(0) : v); });
    case kRelu6: return map1(x, y, n, [](T v) { return v != v ? v : (v < 0 ? T(0) : (v > 6 ? T(6) : v)); });
    case kSoftsign: return map1(x, y, n, [](T v) { return v / (T(1) + (v < 0 ? -v : v)); });
    case kFloor: case kCeil: case kTrunc: case kRint: {
      const hn::ScalableTag<T> d;
      const size_t N = hn::Lanes(d);
      size_t i = 0;
      for (; i + N <= n; i += N) {
        auto v = hn::LoadU(d, x + i);
        v = code == kFloor ? hn::Floor(v) : code == kCeil ? hn::Ceil(v) : code == kTrunc ? hn::Trunc(v) : hn::Round(v);
        hn::StoreU(v, d, y + i);
      }
      for (; i < n; ++i) y[i] = scalar_unary<T>(code, x[i]);
      return;
    }
    case kExp:
      return map_math(x, y, n, code, f32 ? T(-87.0) : T(-708.0), f32 ? T(88.0) : T(709.0),
                      [](auto d, auto v) MNNPY_ALWAYS_INLINE { return ExpInRange(d, v); });
    case kExpm1:
      return map_math(x, y, n, code, f32 ? T(-87.0) : T(-708.0), f32 ? T(88.0) : T(709.0),
                      [](auto d, auto v) MNNPY_ALWAYS_INLINE { return hn::Expm1(d, v); });
    case kLog:
      return map_math(x, y, n, code, tiny, big, [](auto d, auto v) MNNPY_ALWAYS_INLINE { return hn::Log(d, v); });
    case kLog2:
      return map_math(x, y, n, code, tiny, big, [](auto d, auto v) MNNPY_ALWAYS_INLINE { return hn::Log2(d, v); });
    case kLog10:
      return map_math(x, y, n, code, tiny, big, [](auto d, auto v) MNNPY_ALWAYS_INLINE { return hn::Log10(d, v); });
    case kLog1p:
      return map_math(x, y, n, code, T(0), big, [](auto d, auto v) MNNPY_ALWAYS_INLINE { return hn::Log1p(d, v); });
    case kSin:
      return map_math(x, y, n, code, T(-39000), T(39000), [](auto d, auto v) MNNPY_ALWAYS_INLINE { return hn::Sin(d, v); });
    case kCos:
      return map_math(x, y, n, code, T(-39000), T(39000), [](auto d, auto v) MNNPY_ALWAYS_INLINE { return hn::Cos(d, v); });
    case kTanh:
      return map_math(x, y, n, code, -big, big, [](auto d, auto v) MNNPY_ALWAYS_INLINE { return hn::Tanh(d, v); });
    case kSinh:
      return map_math(x, y, n, code, f32 ? T(-88.0) : T(-709.0), f32 ? T(88.0) : T(709.0),
                      [](auto d, auto v) MNNPY_ALWAYS_INLINE { return hn::Sinh(d, v); });
    case kAtan:
      return map_math(x, y, n, code, -big, big, [](auto d, auto v) MNNPY_ALWAYS_INLINE { return hn::Atan(d, v); });
    case kAsinh:
      return map_math(x, y, n, code, -big, big, [](auto d, auto v) MNNPY_ALWAYS_INLINE { return hn::Asinh(d, v); });
    case kAsin:
      return map_math(x, y, n, code, T(-1), T(1), [](auto d, auto v) MNNPY_ALWAYS_INLINE { return hn::Asin(d, v); });
    case kAcos:
      return map_math(x, y, n, code, T(-1), T(1), [](auto d, auto v) MNNPY_ALWAYS_INLINE { return hn::Acos(d, v); });
    case kAcosh:
      return map_math(x, y, n, code, T(1), big, [](auto d, auto v) MNNPY_ALWAYS_INLINE { return hn::Acosh(d, v); });
    case kSigmoid:
      // 1 / (1 + exp(-x)); outside the range exp(-x) over/underflows and libm handles it.
      return map_math(x, y, n, code, f32 ? T(-80.0) : T(-700.0), f32 ? T(80.0) : T(700.0), [](auto d, auto v) MNNPY_ALWAYS_INLINE {
        const auto one = hn::Set(d, T(1));
        return hn::Div(one, hn::Add(one, ExpInRange(d, hn::Neg(v))));
      });
    case kErf:
      if constexpr (f32) return map_math(x, y, n, code, -big, big, [](auto d, auto v) MNNPY_ALWAYS_INLINE { return ErfFloat32(d, v); });
      break;
    case kGelu:
      if constexpr (f32) return map_math(x, y, n, code, -big, big, [](auto d, auto v) MNNPY_ALWAYS_INLINE { return GeluFloat32(d, v); });
      break;
    case kGeluTanh:
      return map_math(x, y, n, code, -big, big, [](auto d, auto v) MNNPY_ALWAYS_INLINE {
        const auto inner = hn::Mul(hn::Set(d, T(0.79788456080286535588)),
                                   hn::MulAdd(hn::Mul(hn::Set(d, T(0.044715)), hn::Mul(v, v)), v, v));
        return hn::Mul(hn::Mul(hn::Set(d, T(0.5)), v), hn::Add(hn::Set(d, T(1)), hn::Tanh(d, inner)));
      });
    default:
      break;
  }
  for (size_t i = 0; i < n; ++i) y[i] = scalar_unary<T>(code, x[i]);
}

template <class T> void unary_predicate(int code, const T* x, uint8_t* y, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    bool r = false;
    if constexpr (std::is_floating_point_v<T>) {
      const T v = x[i];
      switch (code) {
        case kIsNan: r = v != v; break;
        case kIsInf: r = v == std::numeric_limits<T>::infinity() || v == -std::numeric_limits<T>::infinity(); break;
        case kIsFinite: r = v - v == v - v; break;
        case kSignbit: r = std::signbit(v); break;
        case kLogicalNot: r = v == 0; break;
      }
    } else {
      switch (code) {
        case kIsNan: case kIsInf: r = false; break;
        case kIsFinite: r = true; break;
        case kSignbit: if constexpr (std::is_signed_v<T>) r = x[i] < 0; break;
        case kLogicalNot: r = x[i] == 0; break;
      }
    }
    y[i] = r;
  }
}

template <class T> void unary_t(int code, const void* x, void* y, size_t n) {
  if (unary_returns_bool(code)) return unary_predicate<T>(code, (const T*)x, (uint8_t*)y, n);
  if constexpr (std::is_floating_point_v<T>) {
    unary_float<T>(code, (const T*)x, (T*)y, n);
  } else {
    const T* xs = (const T*)x;
    T* ys = (T*)y;
    switch (code) {
      case kNeg: return map1(xs, ys, n, [](T v) { return (T)(Unsigned<T>(0) - (Unsigned<T>)v); });
      case kAbs: return map1(xs, ys, n, [](T v) { return v < 0 ? (T)(Unsigned<T>(0) - (Unsigned<T>)v) : v; });
      case kSquare: return map1(xs, ys, n, [](T v) { return (T)((Wrapping<T>)(Unsigned<T>)v * (Wrapping<T>)(Unsigned<T>)v); });
      case kBitwiseNot: return map1(xs, ys, n, [](T v) { return (T)~v; });
      case kRelu: return map1(xs, ys, n, [](T v) { return v > 0 ? v : T(0); });
      default: for (size_t i = 0; i < n; ++i) ys[i] = scalar_unary<T>(code, xs[i]);
    }
  }
}

template <int Form, class T> void binary_compare(int code, const T* a, const T* b, uint8_t* y, size_t n) {
  switch (code) {
    case kEqual: return compare2<Form>(a, b, y, n, [](T p, T q) { return p == q; });
    case kNotEqual: return compare2<Form>(a, b, y, n, [](T p, T q) { return p != q; });
    case kLess: return compare2<Form>(a, b, y, n, [](T p, T q) { return p < q; });
    case kLessEqual: return compare2<Form>(a, b, y, n, [](T p, T q) { return p <= q; });
    case kGreater: return compare2<Form>(a, b, y, n, [](T p, T q) { return p > q; });
    case kGreaterEqual: return compare2<Form>(a, b, y, n, [](T p, T q) { return p >= q; });
    case kLogicalAnd: return compare2<Form>(a, b, y, n, [](T p, T q) { return p != 0 && q != 0; });
    case kLogicalOr: return compare2<Form>(a, b, y, n, [](T p, T q) { return p != 0 || q != 0; });
    case kLogicalXor: return compare2<Form>(a, b, y, n, [](T p, T q) { return (p != 0) != (q != 0); });
  }
}

template <int Form, class T> void binary_form(int code, const void* pa, const void* pb, void* py, size_t n) {
  const T* a = (const T*)pa;
  const T* b = (const T*)pb;
  if (binary_returns_bool(code)) return binary_compare<Form, T>(code, a, b, (uint8_t*)py, n);
  T* y = (T*)py;
  if constexpr (std::is_floating_point_v<T>) {
    switch (code) {
      case kAdd: return map2<Form>(a, b, y, n, [](T p, T q) { return p + q; });
      case kSub: return map2<Form>(a, b, y, n, [](T p, T q) { return p - q; });
      case kMul: return map2<Form>(a, b, y, n, [](T p, T q) { return p * q; });
      case kDiv: return map2<Form>(a, b, y, n, [](T p, T q) { return p / q; });
      // Written with explicit vectors: the compiler does not vectorize the NaN-aware selects.
      // (IsNaN, not Ne(p, p): a vector Ne is an ordered compare, false for NaN.)
      case kMaximum:
        return map2_vec<Form>(
            a, b, y, n, [](auto p, auto q) MNNPY_ALWAYS_INLINE { return hn::IfThenElse(hn::Or(hn::Ge(p, q), hn::IsNaN(p)), p, q); },
            [](T p, T q) { return (p >= q || p != p) ? p : q; });
      case kMinimum:
        return map2_vec<Form>(
            a, b, y, n, [](auto p, auto q) MNNPY_ALWAYS_INLINE { return hn::IfThenElse(hn::Or(hn::Le(p, q), hn::IsNaN(p)), p, q); },
            [](T p, T q) { return (p <= q || p != p) ? p : q; });
      case kFmax:
        return map2_vec<Form>(
            a, b, y, n, [](auto p, auto q) MNNPY_ALWAYS_INLINE { return hn::IfThenElse(hn::Or(hn::IsNaN(q), hn::Ge(p, q)), p, q); },
            [](T p, T q) { return (q != q || p >= q) ? p : q; });
      case kFmin:
        return map2_vec<Form>(
            a, b, y, n, [](auto p, auto q) MNNPY_ALWAYS_INLINE { return hn::IfThenElse(hn::Or(hn::IsNaN(q), hn::Le(p, q)), p, q); },
            [](T p, T q) { return (q != q || p <= q) ? p : q; });
      case kSquaredDiff: return map2<Form>(a, b, y, n, [](T p, T q) { return (p - q) * (p - q); });
      case kCopysign: return map2<Form>(a, b, y, n, [](T p, T q) { return std::copysign(p, q); });
      default: return binary_scalar_loop<Form>(code, a, b, y, n);
    }
  } else {
    using U = Unsigned<T>;
    switch (code) {
      case kAdd: return map2<Form>(a, b, y, n, [](T p, T q) { return (T)((U)p + (U)q); });
      case kSub: return map2<Form>(a, b, y, n, [](T p, T q) { return (T)((U)p - (U)q); });
      case kMul: return map2<Form>(a, b, y, n, [](T p, T q) { return (T)((Wrapping<T>)(U)p * (Wrapping<T>)(U)q); });
      case kMaximum: case kFmax: return map2<Form>(a, b, y, n, [](T p, T q) { return p > q ? p : q; });
      case kMinimum: case kFmin: return map2<Form>(a, b, y, n, [](T p, T q) { return p < q ? p : q; });
      case kBitAnd: return map2<Form>(a, b, y, n, [](T p, T q) { return (T)(p & q); });
      case kBitOr: return map2<Form>(a, b, y, n, [](T p, T q) { return (T)(p | q); });
      case kBitXor: return map2<Form>(a, b, y, n, [](T p, T q) { return (T)(p ^ q); });
      default: return binary_scalar_loop<Form>(code, a, b, y, n);
    }
  }
}

// Bool arithmetic follows NumPy: + is or, * is and, max/min are or/and.
template <int Form> void binary_bool(int code, const uint8_t* a, const uint8_t* b, uint8_t* y, size_t n) {
  if (binary_returns_bool(code)) return binary_compare<Form, uint8_t>(code, a, b, y, n);
  switch (code) {
    case kAdd: case kMaximum: case kFmax: case kBitOr: return map2<Form>(a, b, y, n, [](uint8_t p, uint8_t q) { return uint8_t(p | q); });
    case kMul: case kMinimum: case kFmin: case kBitAnd: return map2<Form>(a, b, y, n, [](uint8_t p, uint8_t q) { return uint8_t(p & q); });
    case kBitXor: case kSub: return map2<Form>(a, b, y, n, [](uint8_t p, uint8_t q) { return uint8_t(p ^ q); });
    default:
      for (size_t i = 0; i < n; ++i) {
        y[i] = scalar_binary<uint8_t>(code, Form == kScalarA ? a[0] : a[i], Form == kScalarB ? b[0] : b[i]) != 0;
      }
  }
}

#define MNNPY_DISPATCH_NUMERIC(dt, FN, ...)                 \
  switch (dt) {                                             \
    case DType::Int8: FN<int8_t>(__VA_ARGS__); break;       \
    case DType::UInt8: FN<uint8_t>(__VA_ARGS__); break;     \
    case DType::Int16: FN<int16_t>(__VA_ARGS__); break;     \
    case DType::Int32: FN<int32_t>(__VA_ARGS__); break;     \
    case DType::Int64: FN<int64_t>(__VA_ARGS__); break;     \
    case DType::UInt16: FN<uint16_t>(__VA_ARGS__); break;   \
    case DType::UInt32: FN<uint32_t>(__VA_ARGS__); break;   \
    case DType::UInt64: FN<uint64_t>(__VA_ARGS__); break;   \
    case DType::Float32: FN<float>(__VA_ARGS__); break;     \
    case DType::Float64: FN<double>(__VA_ARGS__); break;    \
    default: break;                                         \
  }

void UnaryImpl(int code, DType dt, const void* x, void* y, size_t n) {
  const bool identity = code == kCopy || (!is_float(dt) && (code == kFloor || code == kCeil || code == kTrunc || code == kRint));
  if (identity) {
    std::memcpy(y, x, n * dtype_size(dt));
    return;
  }
  if (dt == DType::Bool) {
    const uint8_t* xs = (const uint8_t*)x;
    uint8_t* ys = (uint8_t*)y;
    if (code == kLogicalNot || code == kBitwiseNot) {
      map1(xs, ys, n, [](uint8_t v) { return uint8_t(v == 0); });
    } else if (code == kIsNan || code == kIsInf || code == kSignbit) {
      std::memset(ys, 0, n);
    } else if (code == kIsFinite) {
      std::memset(ys, 1, n);
    } else {
      std::memcpy(ys, xs, n);
    }
    return;
  }
  MNNPY_DISPATCH_NUMERIC(dt, unary_t, code, x, y, n);
}

template <int Form> void binary_dispatch(int code, DType dt, const void* a, const void* b, void* y, size_t n) {
  if (dt == DType::Bool) return binary_bool<Form>(code, (const uint8_t*)a, (const uint8_t*)b, (uint8_t*)y, n);
  switch (dt) {
    case DType::Int8: return binary_form<Form, int8_t>(code, a, b, y, n);
    case DType::UInt8: return binary_form<Form, uint8_t>(code, a, b, y, n);
    case DType::Int16: return binary_form<Form, int16_t>(code, a, b, y, n);
    case DType::Int32: return binary_form<Form, int32_t>(code, a, b, y, n);
    case DType::Int64: return binary_form<Form, int64_t>(code, a, b, y, n);
    case DType::UInt16: return binary_form<Form, uint16_t>(code, a, b, y, n);
    case DType::UInt32: return binary_form<Form, uint32_t>(code, a, b, y, n);
    case DType::UInt64: return binary_form<Form, uint64_t>(code, a, b, y, n);
    case DType::Float32: return binary_form<Form, float>(code, a, b, y, n);
    case DType::Float64: return binary_form<Form, double>(code, a, b, y, n);
    default: return;
  }
}

void BinaryImpl(int code, DType dt, const void* a, const void* b, void* y, size_t n, unsigned scalars) {
  switch (scalars & 3u) {
    case 0: return binary_dispatch<kArrays>(code, dt, a, b, y, n);
    case 1: return binary_dispatch<kScalarA>(code, dt, a, b, y, n);
    case 2: return binary_dispatch<kScalarB>(code, dt, a, b, y, n);
    default: {
      // Both single values: one result, repeated.
      alignas(8) char one[8];
      binary_dispatch<kArrays>(code, dt, a, b, one, 1);
      const size_t size = binary_returns_bool(code) ? 1 : dtype_size(dt);
      for (size_t i = 0; i < n; ++i) std::memcpy((char*)y + i * size, one, size);
    }
  }
}

// y = a * b + c in one rounding on every target (the portable ones too: fused programs then give
// the same bits everywhere). With `stream`, y (vector-aligned) is written with non-temporal
// stores: a large result then costs no read of its lines. Bit k of Scalars marks operand k
// (a, b, c) as one value held in a register.
template <unsigned Scalars, class T>
void mul_add_t(const T* HWY_RESTRICT a, const T* HWY_RESTRICT b, const T* HWY_RESTRICT c, T* HWY_RESTRICT y, size_t n,
               bool stream) {
  const hn::ScalableTag<T> d;
  const size_t N = hn::Lanes(d);
  constexpr bool sa = Scalars & 1u, sb = Scalars & 2u, sc = Scalars & 4u;
  const auto va = hn::Set(d, a[0]), vb = hn::Set(d, b[0]), vc = hn::Set(d, c[0]);
  auto at = [&](size_t i) MNNPY_ALWAYS_INLINE {
    return FusedMulAdd(sa ? va : hn::LoadU(d, a + i), sb ? vb : hn::LoadU(d, b + i), sc ? vc : hn::LoadU(d, c + i));
  };
  size_t i = 0;
  if (stream) {
    for (; i + N <= n; i += N) hn::Stream(at(i), d, y + i);
  } else {
    for (; i + N <= n; i += N) hn::StoreU(at(i), d, y + i);
  }
  for (; i < n; ++i) y[i] = std::fma(a[sa ? 0 : i], b[sb ? 0 : i], c[sc ? 0 : i]);  // as the vector lanes round
}
template <class T>
void mul_add_forms(unsigned scalars, const void* a, const void* b, const void* c, void* y, size_t n, bool stream) {
  const T *pa = (const T*)a, *pb = (const T*)b, *pc = (const T*)c;
  switch (scalars & 7u) {
    case 0: return mul_add_t<0>(pa, pb, pc, (T*)y, n, stream);
    case 1: return mul_add_t<1>(pa, pb, pc, (T*)y, n, stream);
    case 2: return mul_add_t<2>(pa, pb, pc, (T*)y, n, stream);
    case 3: return mul_add_t<3>(pa, pb, pc, (T*)y, n, stream);
    case 4: return mul_add_t<4>(pa, pb, pc, (T*)y, n, stream);
    case 5: return mul_add_t<5>(pa, pb, pc, (T*)y, n, stream);
    case 6: return mul_add_t<6>(pa, pb, pc, (T*)y, n, stream);
    default: return mul_add_t<7>(pa, pb, pc, (T*)y, n, stream);
  }
}
void MulAddImpl(DType dt, const void* a, const void* b, const void* c, void* y, size_t n, bool stream, unsigned scalars) {
  if (dt == DType::Float64) return mul_add_forms<double>(scalars, a, b, c, y, n, stream);
  mul_add_forms<float>(scalars, a, b, c, y, n, stream);
}

// Bit k of Scalars marks operand k (c, a, b) as one value.
template <unsigned Scalars, class T>
void select_t(const uint8_t* HWY_RESTRICT c, const T* HWY_RESTRICT a, const T* HWY_RESTRICT b, T* HWY_RESTRICT y, size_t n) {
  constexpr bool sc = Scalars & 1u, sa = Scalars & 2u, sb = Scalars & 4u;
  const uint8_t c0 = c[0];
  const T a0 = a[0], b0 = b[0];
  for (size_t i = 0; i < n; ++i) y[i] = (sc ? c0 : c[i]) ? (sa ? a0 : a[i]) : (sb ? b0 : b[i]);
}
template <class T> void select_forms(unsigned scalars, const uint8_t* c, const void* a, const void* b, void* y, size_t n) {
  const T *pa = (const T*)a, *pb = (const T*)b;
  switch (scalars & 7u) {
    case 0: return select_t<0>(c, pa, pb, (T*)y, n);
    case 2: return select_t<2>(c, pa, pb, (T*)y, n);
    case 4: return select_t<4>(c, pa, pb, (T*)y, n);
    case 6: return select_t<6>(c, pa, pb, (T*)y, n);
    default: {
      // A single condition picks one operand for every element.
      const bool take_a = c[0] != 0;
      const bool single = scalars & (take_a ? 2u : 4u);
      const T* from = take_a ? pa : pb;
      for (size_t i = 0; i < n; ++i) ((T*)y)[i] = single ? from[0] : from[i];
    }
  }
}
void SelectImpl(size_t elem_size, const uint8_t* c, const void* a, const void* b, void* y, size_t n, unsigned scalars) {
  switch (elem_size) {
    case 1: return select_forms<uint8_t>(scalars, c, a, b, y, n);
    case 2: return select_forms<uint16_t>(scalars, c, a, b, y, n);
    case 4: return select_forms<uint32_t>(scalars, c, a, b, y, n);
    default: return select_forms<uint64_t>(scalars, c, a, b, y, n);
  }
}

template <class T> HWY_INLINE float to_float32(T v) { return (float)v; }

// Numeric -> numeric conversion with C semantics made defined: float to int goes through a
// saturating range check (NumPy leaves it undefined; we never trap).
template <class From, class To> HWY_INLINE To convert_value(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if (!(v == v)) return std::numeric_limits<To>::min();
    if (v >= (From)std::numeric_limits<To>::max()) return std::numeric_limits<To>::max();
    if (v <= (From)std::numeric_limits<To>::min()) return std::numeric_limits<To>::min();
    return (To)v;
  } else {
    return (To)v;
  }
}
template <class From, class To>
void convert_loop(const From* HWY_RESTRICT x, To* HWY_RESTRICT y, size_t n) {
  if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To> && !std::is_same_v<To, bool>) {
    for (size_t i = 0; i < n; ++i) y[i] = convert_value<From, To>(x[i]);
  } else {
    for (size_t i = 0; i < n; ++i) y[i] = (To)x[i];
  }
}

// Half types travel through float32 in blocks small enough to stay in L1.
constexpr size_t kHalfBlock = 512;

template <class To> void cast_from_f32_block(const float* x, void* y, DType to, size_t n);

void half_to_f32(DType from, const uint16_t* x, float* y, size_t n) {
  if (from == DType::BFloat16) {
    uint32_t* yu = (uint32_t*)y;
    for (size_t i = 0; i < n; ++i) yu[i] = (uint32_t)x[i] << 16;
    return;
  }
  size_t i = 0;
#if HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
  // Not on the portable targets: Highway's emulated conversion there turns infinities and NaNs
  // into finite values (exponent 31 rebiased like any other).
  const hn::ScalableTag<float> df;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  const size_t N = hn::Lanes(df);
  for (; i + N <= n; i += N) hn::StoreU(hn::PromoteTo(df, hn::LoadU(dh, (const hwy::float16_t*)x + i)), df, y + i);
#endif
  for (; i < n; ++i) y[i] = half_to_float(x[i]);
}
void f32_to_half(DType to, const float* x, uint16_t* y, size_t n) {
  if (to == DType::BFloat16) {
    for (size_t i = 0; i < n; ++i) y[i] = float_to_bf16(x[i]);
    return;
  }
  for (size_t i = 0; i < n; ++i) y[i] = float_to_half(x[i]);
}

template <class From> void cast_from(const From* x, DType to, void* y, size_t n) {
  switch (to) {
    case DType::Bool: for (size_t i = 0; i < n; ++i) ((uint8_t*)y)[i] = x[i] != From(0); break;
    case DType::Int8: convert_loop(x, (int8_t*)y, n); break;
    case DType::UInt8: convert_loop(x, (uint8_t*)y, n); break;
    case DType::Int16: convert_loop(x, (int16_t*)y, n); break;
    case DType::Int32: convert_loop(x, (int32_t*)y, n); break;
    case DType::Int64: convert_loop(x, (int64_t*)y, n); break;
    case DType::UInt16: convert_loop(x, (uint16_t*)y, n); break;
    case DType::UInt32: convert_loop(x, (uint32_t*)y, n); break;
    case DType::UInt64: convert_loop(x, (uint64_t*)y, n); break;
    case DType::Float32: convert_loop(x, (float*)y, n); break;
    case DType::Float64: convert_loop(x, (double*)y, n); break;
    case DType::Float16: case DType::BFloat16: {
      float buf[kHalfBlock];
      for (size_t i = 0; i < n; i += kHalfBlock) {
        const size_t m = std::min(kHalfBlock, n - i);
        convert_loop(x + i, buf, m);
        f32_to_half(to, buf, (uint16_t*)y + i, m);
      }
      break;
    }
  }
}

void CastImpl(DType from, DType to, const void* x, void* y, size_t n) {
  if (from == to) {
    std::memcpy(y, x, n * dtype_size(from));
    return;
  }
  switch (from) {
    case DType::Bool: case DType::UInt8: cast_from((const uint8_t*)x, to, y, n); break;
    case DType::Int8: cast_from((const int8_t*)x, to, y, n); break;
    case DType::Int16: cast_from((const int16_t*)x, to, y, n); break;
    case DType::Int32: cast_from((const int32_t*)x, to, y, n); break;
    case DType::Int64: cast_from((const int64_t*)x, to, y, n); break;
    case DType::UInt16: cast_from((const uint16_t*)x, to, y, n); break;
    case DType::UInt32: cast_from((const uint32_t*)x, to, y, n); break;
    case DType::UInt64: cast_from((const uint64_t*)x, to, y, n); break;
    case DType::Float32: cast_from((const float*)x, to, y, n); break;
    case DType::Float64: cast_from((const double*)x, to, y, n); break;
    case DType::Float16: case DType::BFloat16: {
      float buf[kHalfBlock];
      const size_t out_size = dtype_size(to);
      for (size_t i = 0; i < n; i += kHalfBlock) {
        const size_t m = std::min(kHalfBlock, n - i);
        half_to_f32(from, (const uint16_t*)x + i, buf, m);
        cast_from(buf, to, (char*)y + i * out_size, m);
      }
      break;
    }
  }
}

template <class T> void fill_t(T v, T* HWY_RESTRICT y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = v;
}
void FillImpl(size_t elem_size, const void* value, void* y, size_t n) {
  switch (elem_size) {
    case 1: return fill_t(*(const uint8_t*)value, (uint8_t*)y, n);
    case 2: return fill_t(*(const uint16_t*)value, (uint16_t*)y, n);
    case 4: return fill_t(*(const uint32_t*)value, (uint32_t*)y, n);
    default: return fill_t(*(const uint64_t*)value, (uint64_t*)y, n);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
HWY_EXPORT(UnaryImpl);
HWY_EXPORT(BinaryImpl);
HWY_EXPORT(MulAddImpl);
HWY_EXPORT(SelectImpl);
HWY_EXPORT(CastImpl);
HWY_EXPORT(FillImpl);

void unary(int code, DType dt, const void* x, void* y, size_t n) { HWY_DYNAMIC_DISPATCH(UnaryImpl)(code, dt, x, y, n); }
void binary(int code, DType dt, const void* a, const void* b, void* y, size_t n, unsigned scalars) {
  HWY_DYNAMIC_DISPATCH(BinaryImpl)(code, dt, a, b, y, n, scalars);
}
void mul_add(DType dt, const void* a, const void* b, const void* c, void* y, size_t n, bool stream, unsigned scalars) {
  HWY_DYNAMIC_DISPATCH(MulAddImpl)(dt, a, b, c, y, n, stream, scalars);
}
void select(size_t elem_size, const uint8_t* c, const void* a, const void* b, void* y, size_t n, unsigned scalars) {
  HWY_DYNAMIC_DISPATCH(SelectImpl)(elem_size, c, a, b, y, n, scalars);
}
void cast(DType from, DType to, const void* x, void* y, size_t n) { HWY_DYNAMIC_DISPATCH(CastImpl)(from, to, x, y, n); }
void fill(size_t elem_size, const void* value, void* y, size_t n) { HWY_DYNAMIC_DISPATCH(FillImpl)(elem_size, value, y, n); }

}  // namespace cpu

void convert_values(DType from, DType to, const void* src, void* dst, size_t n) { cpu::cast(from, to, src, dst, n); }

}  // namespace mnnpy
#endif
