// LayerNorm in float32 (backend/vulkan/layer_norm_kernel.cpp): a workgroup per row of d elements,
// y = (x - mean) * rstd * gamma + beta with rstd = inversesqrt(var + epsilon), the arithmetic of
// the CPU kernel (backend/cpu/layer_norm.cpp): the mean, then the mean of squared deviations from
// it (two passes, so no E[x^2] - E[x]^2 cancellation), each a sum of per-invocation partial sums
// (invocations striding over the row, so a subgroup reads consecutive addresses) finished by a
// tree in shared memory. An invocation keeps up to kCached of its elements in registers: rows of
// up to kCached * workgroup size elements are read from memory once, longer ones once per pass.
// inversesqrt rather than 1.0 / sqrt: Vulkan bounds it by 2 ulp, while its sqrt is only bounded
// as 1.0 / inversesqrt and a division adds 2.5 ulp. Every value is `precise`: no product is fused
// into a sum that the CPU rounds apart.
#version 450
layout(local_size_x_id = 0) in;  // 32 to 256, a power of two
layout(constant_id = 1) const bool HAS_GAMMA = false;
layout(constant_id = 2) const bool HAS_BETA = false;
const uint kCached = 16;
const uint kMaxWorkgroup = 256;

layout(std430, binding = 0) writeonly buffer Out { float y[]; };
layout(std430, binding = 1) readonly buffer In { float x[]; };
layout(std430, binding = 2) readonly buffer Gamma { float gamma[]; };
layout(std430, binding = 3) readonly buffer Beta { float beta[]; };
layout(push_constant) uniform Push {
  uint rows;
  uint d;
  float epsilon;
} pc;

shared float partial[kMaxWorkgroup];

// The sum of every invocation's `value` (all invocations call it, in uniform control flow).
float workgroup_sum(float value) {
  const uint lane = gl_LocalInvocationID.x;
  partial[lane] = value;
  for (uint half_width = gl_WorkGroupSize.x / 2u; half_width > 0u; half_width /= 2u) {
    memoryBarrierShared();
    barrier();
    if (lane < half_width) {
      precise float sum = partial[lane] + partial[lane + half_width];
      partial[lane] = sum;
    }
  }
  memoryBarrierShared();
  barrier();
  const float total = partial[0];
  barrier();  // every invocation has read it before the next sum overwrites it
  return total;
}

void main() {
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= pc.rows) return;  // the whole workgroup, before any barrier
  const uint lane = gl_LocalInvocationID.x, width = gl_WorkGroupSize.x, d = pc.d;
  const uint base = row * d, cached_end = kCached * width;

  float cached[kCached];
  precise float sum = 0.0;
  for (uint c = 0u; c < kCached; ++c) {
    const uint i = lane + c * width;
    cached[c] = i < d ? x[base + i] : 0.0;
    sum += cached[c];
  }
  for (uint i = cached_end + lane; i < d; i += width) sum += x[base + i];
  precise float mean = workgroup_sum(sum) / float(d);

  precise float squares = 0.0;
  for (uint c = 0u; c < kCached; ++c) {
    if (lane + c * width < d) {
      precise float centered = cached[c] - mean;
      squares += centered * centered;
    }
  }
  for (uint i = cached_end + lane; i < d; i += width) {
    precise float centered = x[base + i] - mean;
    squares += centered * centered;
  }
  precise float shifted = workgroup_sum(squares) / float(d) + pc.epsilon;
  // inversesqrt is undefined at 0 and past +inf: the CPU's 1 / sqrt gives inf and 0 there, and
  // NaN stays NaN.
  const float inf = uintBitsToFloat(0x7f800000u);
  precise float rstd = shifted == 0.0 ? inf : shifted == inf ? 0.0 : isnan(shifted) ? shifted : inversesqrt(shifted);

  for (uint c = 0u; c < kCached; ++c) {
    const uint i = lane + c * width;
    if (i < d) {
      precise float v = (cached[c] - mean) * rstd;
      if (HAS_GAMMA) v = v * gamma[i];
      if (HAS_BETA) v = v + beta[i];
      y[base + i] = v;
    }
  }
  for (uint i = cached_end + lane; i < d; i += width) {
    precise float v = (x[base + i] - mean) * rstd;
    if (HAS_GAMMA) v = v * gamma[i];
    if (HAS_BETA) v = v + beta[i];
    y[base + i] = v;
  }
}
