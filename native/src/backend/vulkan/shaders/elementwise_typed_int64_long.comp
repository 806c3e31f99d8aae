// The elementwise program over float32, int32, int64 and bool registers, MulAdd rounded once
// through float64 (devices with shaderInt64 and shaderFloat64), of 9 to 32 instructions.
// Vulkan only: Metal lacks float64.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#define INT64
#define EXACT_MUL_ADD
#define LONG_PROGRAMS
#include "elementwise_typed_body.glsl"
