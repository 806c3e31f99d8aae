// Conv2D with one input channel per group (depthwise, any channel multiplier) in float32 NCHW
// (backend/vulkan/conv_kernel.cpp): an invocation per output element sums its KH x KW window
// (0 in the padding), then adds the bias and the residual (where given: an input shaped like the
// output) and applies the activation. Neighbouring invocations take
// neighbouring outputs of a row, so they read neighbouring inputs (a stride apart) and share the
// window's rows through the cache. A fixed grid whose invocations loop over the elements.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "conv2d_activation.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint KH = 3;
layout(constant_id = 1) const uint KW = 3;
layout(constant_id = 2) const int ACTIVATION = 0;
layout(constant_id = 3) const bool HAS_BIAS = false;
layout(constant_id = 4) const bool HAS_RESIDUAL = false;

layout(std430, binding = 0) writeonly buffer YOut { float y[]; };
layout(std430, binding = 1) readonly buffer XIn { float x[]; };
layout(std430, binding = 2) readonly buffer WIn { float w[]; };
layout(std430, binding = 3) readonly buffer BiasIn { float bias[]; };
layout(std430, binding = 4) readonly buffer ResidualIn { float residual[]; };

layout(push_constant) uniform Push {
  uint count;  // output elements
  uint in_c, out_c, multiplier;  // output channel co reads input channel co / multiplier
  uint in_h, in_w, out_h, out_w;
  int stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;
  float p0, p1;
} pc;

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < pc.count; i += stride) {
    const uint ow = i % pc.out_w, rows = i / pc.out_w;
    const uint oh = rows % pc.out_h, plane = rows / pc.out_h;  // plane: image * Cout + co
    const uint co = plane % pc.out_c, image = plane / pc.out_c;
    const uint x_base = (image * pc.in_c + co / pc.multiplier) * pc.in_h * pc.in_w;
    const int ih0 = int(oh) * pc.stride_h - pc.pad_top, iw0 = int(ow) * pc.stride_w - pc.pad_left;
    precise float acc = 0.0;
    for (uint ky = 0; ky < KH; ++ky) {
      const int ih = ih0 + int(ky) * pc.dilation_h;
      if (uint(ih) >= pc.in_h) continue;
      for (uint kx = 0; kx < KW; ++kx) {
        const int iw = iw0 + int(kx) * pc.dilation_w;
        if (uint(iw) >= pc.in_w) continue;
        acc = fma(x[x_base + uint(ih) * pc.in_w + uint(iw)], w[co * KH * KW + ky * KW + kx], acc);
      }
    }
    if (HAS_BIAS) acc += bias[co];
    if (HAS_RESIDUAL) acc += residual[i];
    y[i] = conv_activate(ACTIVATION, acc, pc.p0, pc.p1);
  }
}
