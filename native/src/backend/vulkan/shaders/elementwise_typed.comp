// The elementwise program over float32, int32 and bool registers (no int64, no MulAdd), of up to 8
// instructions.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "elementwise_typed_body.glsl"
