// Conv2D in float32 NCHW as an implicit GEMM, float32 throughout (conv2d_gemm.glsl).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "conv2d_activation.glsl"
#define TILE4 vec4
#define TO_TILE(x) (x)
#include "conv2d_gemm.glsl"
