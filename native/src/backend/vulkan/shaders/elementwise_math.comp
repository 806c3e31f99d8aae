// The elementwise program with the long math functions (opcodes from HEAVY), without MulAdd.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#define HEAVY_MATH
#include "elementwise_body.glsl"
