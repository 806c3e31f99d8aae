// MatMul in float32 (backend/vulkan/matmul_kernel.cpp): the tiled SGEMM of matmul_sgemm.glsl with
// float32 tiles.
#version 450
#extension GL_GOOGLE_include_directive : require
#define TILE4 vec4
#define TO_TILE(x) (x)
#include "matmul_common.glsl"
#include "matmul_sgemm.glsl"
