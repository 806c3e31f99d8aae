// Resize with the fused multiply-add rounded once through float64 (devices with shaderFloat64), so
// that interpolation matches the CPU's bit for bit. Vulkan only: Metal has no float64, and its fma
// rounds once by itself (resize.comp).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "exact_mul_add.glsl"
#include "resize_body.glsl"
