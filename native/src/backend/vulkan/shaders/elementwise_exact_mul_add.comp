// The elementwise program with MulAdd rounded once, through float64 (devices with shaderFloat64).
#version 450
#extension GL_GOOGLE_include_directive : require
#define EXACT_MUL_ADD
#include "elementwise_body.glsl"
