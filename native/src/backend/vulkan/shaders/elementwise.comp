// The elementwise program without MulAdd (devices without float64 leave those programs to the CPU).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "elementwise_body.glsl"
