// The end of a decoding step's attention split over SPLITS workgroups per row
// (shaders/cached_attention.comp): each partial holds [depth] unnormalized weighted sums of values,
// its maximum score and its sum of weights; the row's output rescales each partial by
// exp(its maximum - the row's) and divides the sum by the rescaled weights' sum. A partial without
// keys has maximum -inf and weight 0. One workgroup per row, an invocation per output element.
#version 450
layout(local_size_x = 64) in;

layout(std430, binding = 0) writeonly buffer Out { float y[]; };
layout(std430, binding = 1) readonly buffer Partials { float partial[]; };
layout(push_constant) uniform Push {
  uint rows;
  uint depth;
  uint splits;
} pc;

void main() {
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= pc.rows) return;
  const uint stride = pc.depth + 2u, base = row * pc.splits * stride;
  float top = uintBitsToFloat(0xff800000u);
  for (uint i = 0u; i < pc.splits; ++i) top = max(top, partial[base + i * stride + pc.depth]);
  for (uint d = gl_LocalInvocationID.x; d < pc.depth; d += gl_WorkGroupSize.x) {
    float sum = 0.0, total = 0.0;
    for (uint i = 0u; i < pc.splits; ++i) {
      const uint at = base + i * stride;
      const float part_total = partial[at + pc.depth + 1u];
      if (part_total != 0.0 || isnan(part_total)) {  // a partial without keys adds nothing
        const float rescale = exp(partial[at + pc.depth] - top);
        sum += partial[at + d] * rescale;
        total += part_total * rescale;
      }
    }
    y[row * pc.depth + d] = sum / total;
  }
}
