// Conv2D at precision "low" on devices with float16 arithmetic (backend/vulkan/conv_kernel.cpp):
// the implicit GEMM of conv2d_gemm.glsl with its shared-memory tiles in float16, the input rounded
// to nearest float16 as it is staged, the weights rounded once when the kernel is made (or, fed at
// run time, as they are staged); products of two float16 values are exact in float32, so the
// sums are float32 sums of the rounded operands' exact products. Bias, residual and activation in float32.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "conv2d_activation.glsl"
#define HALF_OPERANDS
#include "to_half.glsl"
#define TILE4 f16vec4
#define TO_TILE(x) to_half(x)
#include "conv2d_gemm.glsl"
