// The elementwise program with MulAdd rounded once, through float64 (devices with shaderFloat64).
// Vulkan only: Metal has no float64, and its fma rounds once by itself.
#version 450
#extension GL_GOOGLE_include_directive : require
#define EXACT_MUL_ADD
#include "elementwise_body.glsl"
