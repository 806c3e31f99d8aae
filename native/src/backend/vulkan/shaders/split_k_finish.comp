// The end of a GEMM whose K was split (backend/vulkan/gemm_tiles.h, SplitKFinish: the MatMul
// shaders and shaders/conv2d.comp with PARTIAL write each split's partial sums, laid out as the
// output, `count` floats apart): each output element is the sum of the splits' partial sums, in
// split order, plus the bias of its channel, plus the residual (an input laid out as the output),
// through the activation (a convolution's; a MatMul has none of them, so its sum is all there is). A fixed grid whose invocations loop over the
// elements, neighbouring invocations on neighbours.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "conv2d_activation.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const int ACTIVATION = 0;
layout(constant_id = 1) const bool HAS_BIAS = false;
layout(constant_id = 2) const bool HAS_RESIDUAL = false;

layout(std430, binding = 0) writeonly buffer YOut { float y[]; };
layout(std430, binding = 1) readonly buffer Partial { float partial[]; };
layout(std430, binding = 2) readonly buffer BiasIn { float bias[]; };
layout(std430, binding = 3) readonly buffer ResidualIn { float residual[]; };

layout(push_constant) uniform Push {
  uint count;  // output elements, also the floats between splits' partial sums
  uint splits;
  uint channels, channel_stride;  // element i's bias: bias[(i / channel_stride) % channels]
  float p0, p1;
} pc;

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < pc.count; i += stride) {
    precise float v = partial[i];
    for (uint s = 1; s < pc.splits; ++s) v += partial[s * pc.count + i];
    if (HAS_BIAS) v += bias[(i / pc.channel_stride) % pc.channels];
    if (HAS_RESIDUAL) v += residual[i];
    y[i] = conv_activate(ACTIVATION, v, pc.p0, pc.p1);
  }
}
