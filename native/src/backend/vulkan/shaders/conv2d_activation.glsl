// The fused activations of the convolution shaders (ConvActivationCode in ops/conv_shape.h), by the
// formulas of the CPU kernels (backend/cpu/conv_activation-inl.h, simd_shared-inl.h): the same
// exp polynomial and erfc fit, so every backend approximates alike; only the roundings differ
// (GLSL's division may be 2.5 ulp and its fma may round twice). `code` is a specialization
// constant, so the switch is resolved when the pipeline is made.
const int ACT_NONE = 0, ACT_RELU = 1, ACT_CLIP = 2, ACT_SIGMOID = 3, ACT_SILU = 4, ACT_HARDSWISH = 5, ACT_GELU = 6,
          ACT_HARDSIGMOID = 7;

// exp for x in [-87, 88]: x = n ln 2 + r with |r| <= ln 2 / 2, exp(r) by its Taylor polynomial to
// r^7, 2^n built in the exponent bits (a normal number for such x).
float conv_exp(float x) {
  precise float n = roundEven(x * 1.44269504088896341);
  precise float r = fma(-n, 0.693145751953125, x);  // ln 2 in two parts: n * hi is exact
  r = fma(-n, 1.428606765330187e-06, r);
  precise float r2 = r * r;
  precise float p01 = 1.0 + r;
  precise float p23 = fma(1.0 / 6.0, r, 0.5);
  precise float p45 = fma(1.0 / 120.0, r, 1.0 / 24.0);
  precise float p67 = fma(1.0 / 5040.0, r, 1.0 / 720.0);
  precise float poly = fma(fma(fma(p67, r2, p45), r2, p23), r2, p01);
  return poly * uintBitsToFloat(uint(int(n) + 127) << 23);
}

float conv_sigmoid(float v) {
  // exp(-x) stays finite for |x| <= 80; beyond, the clamped value is 0 or 1 to float precision.
  const float x = clamp(v, -80.0, 80.0);
  precise float e = conv_exp(-x);
  precise float s = 1.0 / (1.0 + e);
  return s;
}

// x Phi(x), Phi from erfc(|x| / sqrt 2) = t exp(-z^2 + P(t)), t = 1 / (1 + z / 2) (Numerical
// Recipes' erfcc, fractional error below 1.2e-7), P by Estrin's scheme.
float conv_gelu(float x) {
  precise float z = abs(x) * 0.70710678118654752440;
  precise float t = 1.0 / fma(0.5, z, 1.0);
  precise float t2 = t * t;
  precise float t4 = t2 * t2;
  precise float pair0 = fma(1.00002368, t, -1.26551223), pair1 = fma(0.09678418, t, 0.37409196);
  precise float pair2 = fma(0.27886807, t, -0.18628806), pair3 = fma(1.48851587, t, -1.13520398);
  precise float pair4 = fma(0.17087277, t, -0.82215223);
  precise float low = fma(pair1, t2, pair0), high = fma(pair3, t2, pair2);
  precise float poly = fma(t4 * t4, pair4, fma(high, t4, low));
  // exp's argument stays above -88 (where float exp underflows) for |x| below about 13.
  precise float arg = max(fma(-z, z, poly), -87.0);
  precise float tail = 0.5 * (t * conv_exp(arg));  // 0.5 erfc(z) = Phi(-|x|)
  precise float phi = x < 0.0 ? tail : 1.0 - tail;
  precise float g = x * phi;
  return g;
}

// The activation of v; p0, p1: clip's min and max, or hard sigmoid's alpha and beta.
float conv_activate(const int code, float v, float p0, float p1) {
  switch (code) {
    case ACT_RELU: return max(v, 0.0);
    case ACT_CLIP: return min(max(v, p0), p1);
    case ACT_SIGMOID: return conv_sigmoid(v);
    case ACT_SILU: {
      precise float s = v * conv_sigmoid(v);
      return s;
    }
    case ACT_HARDSWISH: {
      precise float gate = min(max(v + 3.0, 0.0), 6.0);
      precise float h = v * (gate * (1.0 / 6.0));
      return h;
    }
    case ACT_GELU: return conv_gelu(v);
    case ACT_HARDSIGMOID: {
      precise float h = max(0.0, min(1.0, fma(p0, v, p1)));
      return h;
    }
    default: return v;
  }
}
