// Rounding to float16 for the shaders whose operands are float16 (matmul_f16*.comp, conv2d_f16.comp);
// they enable GL_EXT_shader_explicit_arithmetic_types_float16.
// x rounded to float16, to nearest with ties to even, for |x| in float16's normal range: Vulkan
// leaves the direction of a conversion's rounding to the device, so the rounding happens here on
// the bits (to float16's 11 significant bits) and the conversion has nothing left to round.
// Below 2^-14 the device may flush to zero or round to a neighbouring subnormal; past 65504 the
// result is infinite. Infinities and NaNs convert as they are.
float16_t to_half(float x) {
  const uint bits = floatBitsToUint(x);
  if ((bits & 0x7f800000u) == 0x7f800000u) return float16_t(x);
  return float16_t(uintBitsToFloat((bits + 0xfffu + ((bits >> 13) & 1u)) & ~0x1fffu));
}
