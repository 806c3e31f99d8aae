// MatMul at precision "low" on devices with float16 arithmetic (backend/vulkan/matmul_kernel.cpp):
// the tiled SGEMM of matmul_sgemm.glsl with its shared-memory tiles in float16, each operand
// rounded to nearest float16 as it is staged; products of two float16 values are exact in
// float32, so the sums are float32 sums of the rounded operands' exact products.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define HALF_OPERANDS
#define TILE4 f16vec4
#define TO_TILE(x) to_half(x)
#include "matmul_common.glsl"
#include "matmul_sgemm.glsl"
