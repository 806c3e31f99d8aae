// Resize with GLSL's fma as the fused multiply-add: Metal's rounds once, so its Resize matches the
// CPU's bit for bit. On Vulkan, where fma may round twice, this one only gathers (nearest and
// identity resizes); interpolation takes resize_exact.comp.
#version 450
#extension GL_GOOGLE_include_directive : require

float mul_add(float a, float b, float c) { return fma(a, b, c); }

#include "resize_body.glsl"
