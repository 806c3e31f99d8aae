// Attention of new tokens over a layer's key/value cache (backend/vulkan/cached_attention_kernel.cpp):
// one workgroup per (head, query) row. Query s of head h attends to the cache's keys 0 .. past + s
// of key/value head h / group: softmax(q k * scale) v, the softmax online: the keys go by in
// rounds of one per invocation, each round's scores shift the running maximum, and the sum and the
// weighted values so far are rescaled by exp(old maximum - new). Each invocation accumulates the
// output elements lane, lane + width, ... of the row. A row whose keys pass the cache's capacity
// (the host did not make room) is NaN.
#version 450
layout(local_size_x_id = 0) in;  // a power of two, at most kMaxWidth
const uint kMaxWidth = 256;
const uint kMaxDepth = 256;
const uint kPerLane = 4;  // output elements per invocation at the smallest width (64): kMaxDepth / 64

layout(std430, binding = 0) writeonly buffer Out { float y[]; };
layout(std430, binding = 1) readonly buffer Query { float q[]; };
layout(std430, binding = 2) readonly buffer Cache { float cache[]; };
layout(std430, binding = 3) readonly buffer Past { uint past_words[]; };  // an int64, little-endian
layout(push_constant) uniform Push {
  uint heads;
  uint tokens;
  uint depth;
  uint capacity;
  uint group;
  uint kv_heads;
  float scale;
} pc;

shared float query_row[kMaxDepth];
shared float weights[kMaxWidth];
shared float partial[kMaxWidth];

// Every invocation's `value` combined by max (sum when `maximum` is false); all call it.
float workgroup_reduce(float value, bool maximum) {
  const uint lane = gl_LocalInvocationID.x;
  partial[lane] = value;
  for (uint half_width = gl_WorkGroupSize.x / 2u; half_width > 0u; half_width /= 2u) {
    memoryBarrierShared();
    barrier();
    if (lane < half_width) {
      const float other = partial[lane + half_width];
      partial[lane] = maximum ? max(partial[lane], other) : partial[lane] + other;
    }
  }
  memoryBarrierShared();
  barrier();
  const float total = partial[0];
  barrier();  // read by all before the next reduction writes
  return total;
}

void main() {
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= pc.heads * pc.tokens) return;  // the whole workgroup, before any barrier
  const uint lane = gl_LocalInvocationID.x, width = gl_WorkGroupSize.x, depth = pc.depth;
  const uint head = row / pc.tokens, s = row % pc.tokens, kv = head / pc.group;
  const uint past = past_words[0];
  const float nan = uintBitsToFloat(0x7fc00000u);
  if (past_words[1] != 0u || past >= pc.capacity || s >= pc.capacity - past) {
    for (uint d = lane; d < depth; d += width) y[row * depth + d] = nan;
    return;
  }
  const uint keys = past + s + 1u;
  const uint key_base = kv * pc.capacity * depth;
  const uint value_base = (pc.kv_heads + kv) * pc.capacity * depth;
  for (uint d = lane; d < depth; d += width) query_row[d] = q[row * depth + d];
  memoryBarrierShared();
  barrier();

  float top = uintBitsToFloat(0xff800000u);  // -inf: no key seen yet
  float total = 0.0;
  float acc[kPerLane];
  for (uint c = 0u; c < kPerLane; ++c) acc[c] = 0.0;
  for (uint first = 0u; first < keys; first += width) {
    const uint j = first + lane;
    float score = uintBitsToFloat(0xff800000u);
    if (j < keys) {
      float dot = 0.0;
      const uint at = key_base + j * depth;
      for (uint d = 0u; d < depth; ++d) dot += query_row[d] * cache[at + d];
      score = dot * pc.scale;
    }
    const float new_top = max(top, workgroup_reduce(score, true));
    const float weight = j < keys ? exp(score - new_top) : 0.0;
    const float rescale = exp(top - new_top);  // 0 in the first round (top is -inf)
    weights[lane] = weight;
    total = total * rescale + workgroup_reduce(weight, false);  // the reduction's barriers publish weights
    top = new_top;
    const uint count = min(width, keys - first);
    for (uint c = 0u; c < kPerLane; ++c) {
      const uint d = lane + c * width;
      if (d < depth) {
        float sum = acc[c] * rescale;
        const uint at = value_base + first * depth + d;
        for (uint t = 0u; t < count; ++t) sum += weights[t] * cache[at + t * depth];
        acc[c] = sum;
      }
    }
    barrier();  // weights read by all before the next round writes them
  }
  const float inverse = 1.0 / total;
  for (uint c = 0u; c < kPerLane; ++c) {
    const uint d = lane + c * width;
    if (d < depth) y[row * depth + d] = acc[c] * inverse;
  }
}
