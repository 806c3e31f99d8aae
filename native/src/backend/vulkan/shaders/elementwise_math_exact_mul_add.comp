// The elementwise program with the long math functions and MulAdd rounded once, through float64
// (devices with shaderFloat64). Vulkan only: Metal has no float64, and its fma rounds once by itself.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#define EXACT_MUL_ADD
#define HEAVY_MATH
#include "elementwise_body.glsl"
