// a * b + c rounded once, for the shaders that promise it (GLSL's fma may round twice), through
// float64 (only shaders marked "Vulkan only" include it): the product is exact in double; the sum
// is rounded to odd (its last bit set where it was inexact), and double -> float then rounds
// correctly, since double keeps more than two extra bits.
float mul_add(float a, float b, float c) {
  precise double p = double(a) * double(b);
  precise double s = p + double(c);
  precise double back = s - p;
  precise double error = (p - (s - back)) + (double(c) - back);  // p + c == s + error, exactly
  if (!isinf(s) && !isnan(s) && error != 0.0) {
    uvec2 bits = unpackDouble2x32(s);
    if ((bits.x & 1u) == 0u) {
      if ((error > 0.0) == (s > 0.0)) {
        bits.x += 1u;  // even, so no carry
      } else {
        if (bits.x == 0u) bits.y -= 1u;
        bits.x -= 1u;
      }
      s = packDouble2x32(bits);
    }
  }
  return float(s);
}
