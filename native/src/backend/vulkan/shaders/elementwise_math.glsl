// Float32 math of the elementwise shaders, within a few ulp of the exact values on any Vulkan
// device. GLSL's own exp, log, sin, tanh, ... promise little (exp: 3 + 2|x| ulp; sin: 2^-11
// absolute in [-pi, pi]; tanh is whatever exp gives) and drivers use fast approximations, so
// these functions are built only from what Vulkan rounds correctly: float32 +, -, * and
// conversions (division is 2.5 ulp and only for divisors in [2^-126, 2^126], so every divisor
// here stays there; sqrt is about 4.5 ulp). Every local is `precise`, so nothing is fused or
// reordered: the exact two-sum and two-product below depend on it. Special values (NaN, +-inf,
// -0.0, overflow to inf, subnormal results) follow C and NumPy; results a device flushes to zero
// are subnormal ones, which Vulkan allows it to flush.

float math_inf() { return uintBitsToFloat(0x7f800000u); }
float math_nan() { return uintBitsToFloat(0x7fc00000u); }

// |a| with b's sign bit.
float copy_sign(float a, float b) {
  return uintBitsToFloat((floatBitsToUint(a) & 0x7fffffffu) | (floatBitsToUint(b) & 0x80000000u));
}

bool sign_bit(float a) { return (floatBitsToUint(a) & 0x80000000u) != 0u; }

// 2^n for n in [-126, 127].
float pow2i(int n) { return intBitsToFloat((n + 127) << 23); }

// The exponent of a positive finite value (subnormals: -127), clamped to [-126, 126] so that
// pow2i(-e) exists.
int exponent_of(float a) { return clamp(int(floatBitsToUint(a) >> 23u) - 127, -126, 126); }

// v * 2^n rounded once, for |v| in [2^-2, 2) and n in [-226, 254]: the first factor keeps v
// normal and finite, the second rounds (to inf on overflow, to a subnormal or 0 on underflow).
float scale2(float v, int n) {
  const int n1 = clamp(n, -100, 127);
  precise float s = v * pow2i(n1);
  precise float r = s * pow2i(n - n1);
  return r;
}

// ---------------------------------------------------------------- exact sums and products
// a + b == s + e exactly (Knuth).
vec2 two_sum(float a, float b) {
  precise float s = a + b;
  precise float bb = s - a;
  precise float e = (a - (s - bb)) + (b - bb);
  return vec2(s, e);
}

// a + b == s + e exactly, where a == 0 or |a| >= |b| (Dekker).
vec2 fast_two_sum(float a, float b) {
  precise float s = a + b;
  precise float e = b - (s - a);
  return vec2(s, e);
}

// a as hi + lo, each of at most 12 significant bits (Veltkamp), for |a| below 2^115.
vec2 split(float a) {
  precise float c = 4097.0 * a;
  precise float h = c - (c - a);
  precise float l = a - h;
  return vec2(h, l);
}

// a * b == p + e exactly (Dekker: the halves' products are exact), for |a|, |b| below 2^100 and
// products far from the subnormals. No fma: GLSL's may round twice.
vec2 two_prod(float a, float b) {
  precise vec2 x = split(a);
  precise vec2 y = split(b);
  precise float p = a * b;
  precise float e = (((x.x * y.x - p) + x.x * y.y) + x.y * y.x) + x.y * y.y;
  return vec2(p, e);
}

// ---------------------------------------------------------------- exponentials
// e^r for |r| <= 0.36 by its Taylor polynomial to r^7 (truncation below 6e-9 relative), the last
// two additions ordered so that they round little.
float exp_taylor(float r) {
  precise float q = ((((r * (1.0 / 5040.0) + 1.0 / 720.0) * r + 1.0 / 120.0) * r + 1.0 / 24.0) * r + 1.0 / 6.0) * r + 0.5;
  precise float v = 1.0 + (r + (r * r) * q);
  return v;
}

// e^(x + lo) * 2^k for x not NaN, |lo| <= 2 and k in {-1, 0}: x + lo = n ln 2 + r (Cody-Waite:
// ln 2's high part has 15 bits, so n times it is exact), e^r by exp_taylor, 2^(n + k) applied in
// one rounding. Beyond [-120, 100] the result is 0 or inf however x is clamped.
float exp_parts(float x, float lo, int k) {
  precise float xc = clamp(x, -120.0, 100.0);
  precise float n = roundEven((xc + lo) * 1.44269504);
  precise float r = ((xc - n * 0.693145751953125) - n * 1.42860677e-06) + lo;
  return scale2(exp_taylor(r), int(n) + k);
}

// 2^(x + lo) for x not NaN and |lo| small: x = n + f exactly, 2^f = e^(f ln 2).
float exp2_parts(float x, float lo) {
  precise float xc = clamp(x, -200.0, 200.0);
  precise float n = roundEven(xc);
  precise float r = ((xc - n) + (abs(x) < 200.0 ? lo : 0.0)) * 0.693147182;
  return scale2(exp_taylor(r), int(n));
}

float exp2_f(float x) { return isnan(x) ? x : exp2_parts(x, 0.0); }

// e^r - 1 for |r| <= 0.35 by its Taylor polynomial to r^8 (truncation below 2e-10 relative).
float expm1_taylor(float r) {
  precise float q =
      (((((r * (1.0 / 40320.0) + 1.0 / 5040.0) * r + 1.0 / 720.0) * r + 1.0 / 120.0) * r + 1.0 / 24.0) * r + 1.0 / 6.0) * r + 0.5;
  precise float v = r + (r * r) * q;
  return v;
}

// e^x - 1 without cancellation: Taylor near 0; 2^n expm1(r) + (2^n - 1) for |x| <= 16, where
// 2^n - 1 is exact; e^x - 1 beyond, where nothing cancels.
float expm1_f(float x) {
  if (isnan(x) || x == 0.0) return x;  // keeps -0.0
  precise float ax = abs(x);
  if (ax < 0.3465) return expm1_taylor(x);
  precise float v;
  if (ax > 16.0) {
    v = exp_parts(x, 0.0, 0) - 1.0;
  } else {
    precise float n = roundEven(x * 1.44269504);
    precise float r = (x - n * 0.693145751953125) - n * 1.42860677e-06;
    precise float s = pow2i(int(n));
    v = s * expm1_taylor(r) + (s - 1.0);
  }
  return v;
}

// ---------------------------------------------------------------- logarithms
// log(1 + f) for f in [sqrt(1/2) - 1, sqrt(2) - 1]. With s = f / (2 + f), log(1 + f) = 2 atanh(s)
// = 2s + s R(s^2), and 2s = f - s f, so log(1 + f) = f - s (f - R): the division's error reaches
// only the small term s (f - R). R by atanh's series to s^10 (|s| <= 0.172: truncation < 1e-10).
float log1p_reduced(float f) {
  precise float s = f / (2.0 + f);
  precise float z = s * s;
  precise float R = z * ((((z * (2.0 / 11.0) + 2.0 / 9.0) * z + 2.0 / 7.0) * z + 2.0 / 5.0) * z + 2.0 / 3.0);
  precise float v = f - s * (f - R);
  return v;
}

// x = 2^e (1 + f) with f in [sqrt(1/2) - 1, sqrt(2) - 1], exactly, for finite x > 0
// (subnormals too, where the device keeps them).
float log_reduce(float x, out int e) {
  const bool subnormal = x < 1.17549435e-38;
  precise float y = subnormal ? x * 16777216.0 : x;
  const uint bits = floatBitsToUint(y);
  e = int(bits >> 23u) - (subnormal ? 151 : 127);
  precise float m = uintBitsToFloat((bits & 0x007fffffu) | 0x3f800000u);
  if (m > 1.41421354) {
    m = m * 0.5;
    e += 1;
  }
  precise float f = m - 1.0;
  return f;
}

float log_f(float x) {
  if (isnan(x) || x == math_inf()) return x;
  if (x <= 0.0) return x == 0.0 ? -math_inf() : math_nan();
  int e;
  precise float f = log_reduce(x, e);
  precise float fe = float(e);
  // e ln 2 in two parts: e times the 15-bit high part is exact.
  precise float v = fe * 0.693145751953125 + (log1p_reduced(f) + fe * 1.42860677e-06);
  return v;
}

float log2_f(float x) {
  if (isnan(x) || x == math_inf()) return x;
  if (x <= 0.0) return x == 0.0 ? -math_inf() : math_nan();
  int e;
  precise float f = log_reduce(x, e);
  precise float v = float(e) + log1p_reduced(f) * 1.44269502;
  return v;
}

float log10_f(float x) {
  if (isnan(x) || x == math_inf()) return x;
  if (x <= 0.0) return x == 0.0 ? -math_inf() : math_nan();
  int e;
  precise float f = log_reduce(x, e);
  precise float fe = float(e);
  precise float v = fe * 0.301025390625 + (fe * 4.60503907e-06 + log1p_reduced(f) * 0.434294492);
  return v;
}

// log(1 + x): directly where x itself is a reduced argument; elsewhere 1 + x = u + err exactly
// and log(1 + x) = log(u) + err / u (the next term is below 2^-48 relative).
float log1p_f(float x) {
  if (isnan(x) || x == math_inf()) return x;
  if (x <= -1.0) return x == -1.0 ? -math_inf() : math_nan();
  if (x >= -0.292893231 && x <= 0.414213538) return log1p_reduced(x);
  precise vec2 u = two_sum(1.0, x);
  int e;
  precise float f = log_reduce(u.x, e);
  precise float fe = float(e);
  precise float correction = u.x < 16777216.0 ? u.y / u.x : 0.0;
  precise float v = fe * 0.693145751953125 + ((log1p_reduced(f) + correction) + fe * 1.42860677e-06);
  return v;
}

// log(1 + f) as hi + lo, about 2^-37 relative, for f in [sqrt(1/2) - 1, sqrt(2) - 1] (pow's
// logarithm): s = f / (2 + f) in two parts, its low part from the exact residual f - s (2 + f),
// then 2 atanh(s) = 2s + s^3 Q(s^2), the cubic term's derivative taking the low part into account.
vec2 log1p_reduced_dd(float f) {
  precise vec2 d = fast_two_sum(2.0, f);
  precise float sh = f / d.x;
  precise vec2 p = two_prod(sh, d.x);
  precise float sl = (((f - p.x) - p.y) - sh * d.y) / d.x;
  precise float z = sh * sh;
  precise float Q = (((z * (2.0 / 11.0) + 2.0 / 9.0) * z + 2.0 / 7.0) * z + 2.0 / 5.0) * z + 2.0 / 3.0;
  precise vec2 v = fast_two_sum(2.0 * sh, (2.0 * sl + 2.0 * z * sl) + sh * z * Q);
  return v;
}

// ---------------------------------------------------------------- trigonometric
// 2/pi's bits after the point, a zero word first (the windows below may start before the point).
const uint kTwoOverPi[10] = uint[](0u, 0xA2F9836Eu, 0x4E441529u, 0xFC2757D1u, 0xF534DDC0u, 0xDB629599u, 0x3C439041u,
                                   0xFE5163ABu, 0xDEBBC561u, 0xB7246E3Au);

// x = k pi/2 + r with |r| about pi/4 at most; returns r and sets q = k mod 4. x finite.
// |x| <= 1e5 (|k| < 2^16): Cody-Waite, pi/2 in six 8-bit pieces whose products with k are exact
// and a 24-bit seventh, 72 bits in all: r's absolute error stays below 2^-56, far below the
// smallest |r| of a float there. Beyond: Payne-Hanek in 32-bit integers, x's 24-bit mantissa
// times the 96 bits of 2/pi that decide x * 2/pi modulo 4 (those before only add multiples of 4),
// the fraction exact to 2^-70 in 94 bits.
float trig_reduce(float x, out int q) {
  precise float ax = abs(x);
  precise float r;
  if (ax <= 1.0e5) {
    precise float k = roundEven(ax * 0.636619747);
    r = ax - k * 1.5703125;
    r = r - k * 4.84466553e-04;
    r = r - k * -6.40749931e-07;
    r = r - k * 9.89530236e-10;
    r = r - k * 2.55795385e-12;
    r = r - k * 5.38458167e-15;
    r = r - k * 5.72118892e-18;
    q = int(k) & 3;
  } else {
    const uint bits = floatBitsToUint(ax);
    const uint m = (bits & 0x007fffffu) | 0x00800000u;
    // x = m 2^E (E = exponent field - 150); bit i of 2/pi (weight 2^-i) adds m 2^(E - i), which
    // is a multiple of 4 for i < E - 1: the window starts at bit E - 1, table bit E + 30.
    const int t = int(bits >> 23u) - 120;
    const int w = t >> 5, o = t & 31;
    const uint w0 = (kTwoOverPi[w] << o) | ((kTwoOverPi[w + 1] >> 1) >> (31 - o));
    const uint w1 = (kTwoOverPi[w + 1] << o) | ((kTwoOverPi[w + 2] >> 1) >> (31 - o));
    const uint w2 = (kTwoOverPi[w + 2] << o) | ((kTwoOverPi[w + 3] >> 1) >> (31 - o));
    // m * (w0 w1 w2) modulo 2^96 is x * 2/pi modulo 4 in units of 2^-94.
    uint hi2, p0, hi1, lo1, carry;
    umulExtended(m, w2, hi2, p0);
    umulExtended(m, w1, hi1, lo1);
    uint p1 = uaddCarry(hi2, lo1, carry);
    const uint p2 = hi1 + carry + m * w0;
    q = int(p2 >> 30u);
    uint f2 = p2 & 0x3fffffffu;
    const bool up = (f2 & 0x20000000u) != 0u;  // fraction >= 1/2: round k up, r = -(1 - fraction)
    if (up) {
      q = (q + 1) & 3;
      const uint c0 = p0 == 0u ? 1u : 0u;
      const uint c1 = (c0 == 1u && p1 == 0u) ? 1u : 0u;
      p0 = ~p0 + 1u;
      p1 = ~p1 + c0;
      f2 = (~f2 + c1) & 0x3fffffffu;
    }
    precise float fraction = (float(f2) * 9.31322575e-10 + float(p1) * 2.16840434e-19) + float(p0) * 5.04870979e-29;
    r = fraction * 1.57079637;
    if (up) r = -r;
  }
  if (x < 0.0) {
    r = -r;
    q = (4 - q) & 3;
  }
  return r;
}

// sin r and cos r for |r| <= 0.8 by their Taylor polynomials (truncation below 3e-9 relative).
float sin_taylor(float r) {
  precise float z = r * r;
  precise float v = r + (r * z) * ((((z * (1.0 / 362880.0) - 1.0 / 5040.0) * z + 1.0 / 120.0) * z) - 1.0 / 6.0);
  return v;
}

float cos_taylor(float r) {
  precise float z = r * r;
  precise float v = 1.0 + z * (((((z * (-1.0 / 3628800.0) + 1.0 / 40320.0) * z - 1.0 / 720.0) * z + 1.0 / 24.0) * z) - 0.5);
  return v;
}

float sin_f(float x) {
  if (isnan(x) || isinf(x)) return math_nan();
  if (x == 0.0) return x;
  int q;
  precise float r = trig_reduce(x, q);
  precise float v = (q & 1) == 0 ? sin_taylor(r) : cos_taylor(r);
  if ((q & 2) != 0) v = -v;
  return v;
}

float cos_f(float x) {
  if (isnan(x) || isinf(x)) return math_nan();
  int q;
  precise float r = trig_reduce(x, q);
  q += 1;  // cos x = sin(x + pi/2)
  precise float v = (q & 1) == 0 ? sin_taylor(r) : cos_taylor(r);
  if ((q & 2) != 0) v = -v;
  return v;
}

float tan_f(float x) {
  if (isnan(x) || isinf(x)) return math_nan();
  if (x == 0.0) return x;
  int q;
  precise float r = trig_reduce(x, q);
  precise float s = sin_taylor(r);
  precise float c = cos_taylor(r);
  precise float v = (q & 1) == 0 ? s / c : -c / s;
  return v;
}

// atan(u) for |u| <= tan(pi/8) by its Taylor series to u^19 (truncation below 1.2e-9 relative).
float atan_taylor(float u) {
  precise float z = u * u;
  precise float p = -1.0 / 19.0;
  p = p * z + 1.0 / 17.0;
  p = p * z - 1.0 / 15.0;
  p = p * z + 1.0 / 13.0;
  p = p * z - 1.0 / 11.0;
  p = p * z + 1.0 / 9.0;
  p = p * z - 1.0 / 7.0;
  p = p * z + 1.0 / 5.0;
  p = p * z - 1.0 / 3.0;
  precise float v = u + (u * z) * p;
  return v;
}

// atan |x| for |x| not NaN: past 1, pi/2 - atan(1/|x|); past tan(pi/8), pi/4 + atan((t-1)/(t+1)).
float atan_abs(float ax) {
  if (ax > 67108864.0) return 1.57079637;  // pi/2 - 1/|x| rounds to pi/2 (and 1/inf is not defined)
  const bool big = ax > 1.0;
  precise float t = big ? 1.0 / ax : ax;
  const bool mid = t > 0.414213568;
  precise float u = mid ? (t - 1.0) / (t + 1.0) : t;
  precise float v = atan_taylor(u);
  if (mid) v = (0.785398185 + v) + -2.18556941e-08;  // pi/4 in two parts
  if (big) v = (1.57079637 - v) + -4.37113883e-08;   // pi/2 in two parts
  return v;
}

float atan_f(float x) { return isnan(x) ? x : copy_sign(atan_abs(abs(x)), x); }

// asin x = atan(x / sqrt(1 - x^2)), 1 - x^2 as (1 - |x|)(1 + |x|) (the first factor exact near 1).
float asin_f(float x) {
  if (isnan(x)) return x;
  precise float a = abs(x);
  if (a > 1.0) return math_nan();
  if (a == 1.0) return copy_sign(1.57079637, x);
  precise float w = a / sqrt((1.0 - a) * (1.0 + a));
  return copy_sign(atan_abs(w), x);
}

// acos x = 2 atan(sqrt((1 - x) / (1 + x))): no cancellation at either end.
float acos_f(float x) {
  if (isnan(x)) return x;
  if (abs(x) > 1.0) return math_nan();
  if (x == -1.0) return 3.14159274;
  precise float v = 2.0 * atan_abs(sqrt((1.0 - x) / (1.0 + x)));
  return v;
}

float atan2_f(float y, float x) {
  if (isnan(x) || isnan(y)) return math_nan();
  precise float ax = abs(x), ay = abs(y);
  precise float a;
  if (isinf(ax) || isinf(ay)) {
    a = isinf(ax) ? (isinf(ay) ? 0.785398185 : 0.0) : 1.57079637;
  } else if (ax == 0.0 && ay == 0.0) {
    a = 0.0;
  } else {
    // The smaller over the larger, both scaled by a power of two into the division's range.
    precise float s = pow2i(-exponent_of(max(ax, ay)));
    precise float q = (min(ax, ay) * s) / (max(ax, ay) * s);
    a = atan_abs(q);
    if (ay > ax) a = (1.57079637 - a) + -4.37113883e-08;
  }
  if (sign_bit(x)) a = (3.14159274 - a) + -8.74227766e-08;  // pi in two parts
  return copy_sign(a, y);
}

// ---------------------------------------------------------------- hyperbolic
float sinh_f(float x) {
  if (isnan(x)) return x;
  precise float a = abs(x);
  precise float v;
  if (a > 20.0) {
    v = exp_parts(a, 0.0, -1);  // e^-a is below 2^-57 of e^a
  } else {
    precise float t = expm1_f(a);
    v = 0.5 * (t + t / (t + 1.0));  // (e^a - e^-a) / 2 without cancellation
  }
  return copy_sign(v, x);
}

float cosh_f(float x) {
  if (isnan(x)) return x;
  precise float a = abs(x);
  precise float v;
  if (a > 20.0) {
    v = exp_parts(a, 0.0, -1);
  } else {
    precise float e = exp_parts(a, 0.0, 0);
    v = 0.5 * (e + 1.0 / e);
  }
  return v;
}

// tanh |x| = t / (t + 2) with t = expm1(2|x|): relative accuracy near 0 too; 1 from 9.1 on.
float tanh_f(float x) {
  if (isnan(x)) return x;
  precise float a = abs(x);
  precise float v = 1.0;
  if (a < 9.1) {
    precise float t = expm1_f(2.0 * a);
    v = t / (t + 2.0);
  }
  return copy_sign(v, x);
}

// asinh |x| = log1p(|x| + x^2 / (1 + sqrt(1 + x^2))) (no cancellation), log |x| + ln 2 past 2^12.
float asinh_f(float x) {
  if (isnan(x) || isinf(x)) return x;
  precise float a = abs(x);
  precise float v;
  if (a > 4096.0) {
    v = log_f(a) + 0.693147182;
  } else {
    precise float a2 = a * a;
    v = log1p_f(a + a2 / (1.0 + sqrt(1.0 + a2)));
  }
  return copy_sign(v, x);
}

// acosh x = log1p(t + sqrt(t (t + 2))) with t = x - 1 (exact below 2^24), log x + ln 2 past 2^12.
float acosh_f(float x) {
  if (isnan(x)) return x;
  if (x < 1.0) return math_nan();
  precise float v;
  if (x > 4096.0) {
    v = log_f(x) + 0.693147182;
  } else {
    precise float t = x - 1.0;
    v = log1p_f(t + sqrt(t * (t + 2.0)));
  }
  return v;
}

// atanh |x| = log1p(2|x| / (1 - |x|)) / 2.
float atanh_f(float x) {
  if (isnan(x)) return x;
  precise float a = abs(x);
  if (a > 1.0) return math_nan();
  if (a == 1.0) return copy_sign(math_inf(), x);
  precise float v = 0.5 * log1p_f((a + a) / (1.0 - a));
  return copy_sign(v, x);
}

// ---------------------------------------------------------------- error function and GELU
// P(t) of erfc z = t exp(-z^2 + P(t)), t = 1 / (1 + z/2): the Chebyshev-fitted form of Numerical
// Recipes' erfcc, fractional error below 1.2e-7 for every z >= 0 (the CPU's GELU uses it too).
float erfc_poly(float t) {
  precise float p = 0.17087277;
  p = p * t - 0.82215223;
  p = p * t + 1.48851587;
  p = p * t - 1.13520398;
  p = p * t + 0.27886807;
  p = p * t - 0.18628806;
  p = p * t + 0.09678418;
  p = p * t + 0.37409196;
  p = p * t + 1.00002368;
  p = p * t - 1.26551223;
  return p;
}

// e^(-x^2 s) e^c with s = 1/2 if halved, else 1, and x^2 exact in two parts: rounding x^2 would cost
// 2^-24 x^2 relative (5e-6 at x = 9).
float exp_minus_square(float x, float c, bool halved) {
  precise vec2 h = two_prod(x, x);
  precise float scale = halved ? -0.5 : -1.0;
  precise float hi = h.x * scale;
  precise float lo = c + h.y * scale;
  return exp_parts(hi, lo, 0);
}

// erfc a for a >= 0 (not NaN); it underflows past 10.06.
float erfc_nonnegative(float a) {
  precise float z = min(a, 12.0);
  precise float t = 1.0 / (1.0 + 0.5 * z);
  precise float v = t * exp_minus_square(z, erfc_poly(t), false);
  return v;
}

float erfc_f(float x) {
  if (isnan(x)) return x;
  precise float v = x >= 0.0 ? erfc_nonnegative(x) : 2.0 - erfc_nonnegative(-x);
  return v;
}

// erf: Taylor series to x^21 for |x| <= 1 (error below 2e-8, the CPU's), 1 - erfc |x| beyond.
float erf_f(float x) {
  if (isnan(x)) return x;
  precise float a = abs(x);
  precise float v;
  if (a <= 1.0) {
    precise float z = x * x;
    precise float p = 1.4807192815879218e-08;
    p = p * z - 1.6365844691234924e-07;
    p = p * z + 1.6462114365889246e-06;
    p = p * z - 1.492565035840625e-05;
    p = p * z + 0.00012055332981789664;
    p = p * z - 0.00085483270234508522;
    p = p * z + 0.0052239776254421879;
    p = p * z - 0.026866170645131252;
    p = p * z + 0.11283791670955126;
    p = p * z - 0.37612638903183754;
    p = p * z + 1.1283791670955126;
    v = x * p;
  } else {
    v = copy_sign(1.0 - erfc_nonnegative(a), x);
  }
  return v;
}

// x Phi(x) = x erfc(-x / sqrt 2) / 2, with Phi(-|x|) = erfc(|x| / sqrt 2) / 2 from the erfc form
// above (so the left tail keeps its relative accuracy), its exponent -x^2/2 exact in two parts.
float gelu_f(float x) {
  if (isnan(x)) return x;
  precise float a = min(abs(x), 30.0);  // beyond, Phi(-|x|) is 0 in float32
  precise float t = 1.0 / (1.0 + 0.5 * (a * 0.707106769));
  precise float half_t = 0.5 * t;
  precise float e = exp_minus_square(a, erfc_poly(t), true);
  // Phi(-|x|) = half_t e; x half_t first, so that a normal result never passes a subnormal.
  precise float v = x < 0.0 ? (x * half_t) * e : x * (1.0 - half_t * e);
  return v;
}

// 0.5 x (1 + tanh(u)) = x / (1 + e^-w), w = 2u = 2 sqrt(2/pi) (x + 0.044715 x^3). Where e^-w is
// large (x < -3) the result's relative error is |w| times w's, so there w is formed in two parts
// (exact products and sums, the constants in two parts); x e^w where 1 + e^-w is e^-w in float32.
float gelu_tanh_f(float x) {
  if (isnan(x)) return x;
  if (isinf(x)) return x > 0.0 ? x : math_nan();  // -inf * 0, as the formula gives
  if (x < -30.0) return uintBitsToFloat(0x80000000u);  // -0.0
  precise float w, wl = 0.0;
  if (x >= -3.0) {
    w = x * (1.59576917 + 0.0713548139 * (x * x));
  } else {
    precise vec2 x2 = two_prod(x, x);
    precise vec2 c = two_prod(0.0713548139, x2.x);
    precise float cl = c.y + (0.0713548139 * x2.y + 2.39883247e-09 * x2.x);
    precise vec2 g = two_sum(1.59576917, c.x);
    precise float gl = g.y + (cl + -4.53406805e-08);
    precise vec2 p = two_prod(x, g.x);
    w = p.x;
    wl = p.y + x * gl;
  }
  precise float v;
  if (w < -17.0) {
    v = x * exp_parts(w, wl, 0);
  } else {
    v = x / (1.0 + exp_parts(-w, -wl, 0));
  }
  return v;
}

// ---------------------------------------------------------------- other unary functions
// log1p(e^x); x itself above 20 (as the CPU).
float softplus_f(float x) {
  if (isnan(x) || x > 20.0) return x;
  return log1p_f(exp_parts(x, 0.0, 0));
}

// x / (1 + |x|); +-1 past 2^24, where 1 + |x| rounds to |x| (and the divisor may leave the
// division's range); NaN for +-inf, as the formula gives.
float softsign_f(float x) {
  if (isinf(x)) return math_nan();
  if (abs(x) > 16777216.0) return copy_sign(1.0, x);
  precise float v = x / (1.0 + abs(x));
  return v;
}

float selu_f(float x) {
  if (isnan(x)) return x;
  precise float v = 1.05070102 * (x > 0.0 ? x : 1.67326319 * expm1_f(x));
  return v;
}

// cbrt: |x| = 2^(3k + j) m with m in [1, 2), cbrt(2^j m) from a quadratic seed (relative error
// below 1.6e-2) by three Newton steps t -= (t - y / t^2) / 3, then 2^k.
float cbrt_f(float x) {
  if (isnan(x) || isinf(x) || x == 0.0) return x;
  precise float a = abs(x);
  const bool subnormal = a < 1.17549435e-38;
  precise float b = subnormal ? a * 16777216.0 : a;
  const uint bits = floatBitsToUint(b);
  const int e = int(bits >> 23u) - (subnormal ? 151 : 127);
  const int k = e >= 0 ? e / 3 : -((2 - e) / 3);
  precise float y = uintBitsToFloat((bits & 0x007fffffu) | 0x3f800000u) * float(1 << (e - 3 * k));
  precise float t = (-0.0146714495 * y + 0.268056542) * y + 0.762576222;
  t = t - (t - y / (t * t)) * (1.0 / 3.0);
  t = t - (t - y / (t * t)) * (1.0 / 3.0);
  t = t - (t - y / (t * t)) * (1.0 / 3.0);
  precise float v = t * pow2i(k);
  return copy_sign(v, x);
}

// ---------------------------------------------------------------- binary functions
// C's pow (NumPy's): the special cases first, then |x|^y = 2^(y log2 |x|) with log2 |x| and the
// product in two parts: y log2 |x| reaches 150, so its absolute error must stay near 2^-30.
float pow_f(float x, float y) {
  if (y == 0.0 || x == 1.0) return 1.0;
  if (isnan(x) || isnan(y)) return math_nan();
  precise float ax = abs(x), ay = abs(y);
  const bool integer = ay >= 16777216.0 || ay == floor(ay);  // every float from 2^24 on is even
  const bool odd = ay < 16777216.0 && ay == floor(ay) && (int(ay) & 1) == 1;
  if (isinf(y)) return ax == 1.0 ? 1.0 : ((ax < 1.0) == (y < 0.0) ? math_inf() : 0.0);
  if (isinf(x) || x == 0.0) {
    precise float m = (x == 0.0) == (y < 0.0) ? math_inf() : 0.0;
    return odd ? copy_sign(m, x) : m;
  }
  if (x < 0.0 && !integer) return math_nan();
  if (y == 1.0) return x;
  precise float v;
  if (y == 2.0) {
    v = x * x;
  } else {
    int e;
    precise float f = log_reduce(ax, e);
    precise vec2 l = log1p_reduced_dd(f);
    // log2 |x| = e + log(1 + f) log2(e), log2(e) in two parts.
    precise vec2 c = two_prod(l.x, 1.44269502);
    precise float cl = c.y + (l.x * 1.92596303e-08 + l.y * 1.44269502);
    precise vec2 t = fast_two_sum(float(e), c.x);
    precise float tl = t.y + cl;
    // Past 2^40, |y log2 |x|| exceeds 2^17 for every |x| != 1: the result is 0 or inf all the same.
    precise float yc = clamp(y, -1.09951163e12, 1.09951163e12);
    precise vec2 z = two_prod(yc, t.x);
    v = exp2_parts(z.x, z.y + yc * tl);
    if (x < 0.0 && odd) v = -v;
  }
  return v;
}

float hypot_f(float a, float b) {
  if (isinf(a) || isinf(b)) return math_inf();
  if (isnan(a) || isnan(b)) return math_nan();
  precise float big = max(abs(a), abs(b)), small = min(abs(a), abs(b));
  if (big == 0.0) return 0.0;
  // Scaled by a power of two so that the squares neither overflow nor underflow.
  const int e = exponent_of(big);
  precise float s = pow2i(-e);
  precise float bs = big * s, ss = small * s;
  precise float root = sqrt(bs * bs + ss * ss);
  return scale2(root, e);
}

float nextafter_f(float a, float b) {
  if (isnan(a) || isnan(b)) return math_nan();
  if (a == b) return b;
  if (a == 0.0) return copy_sign(uintBitsToFloat(1u), b);
  const uint bits = floatBitsToUint(a);
  return uintBitsToFloat((a < b) == (a > 0.0) ? bits + 1u : bits - 1u);
}
