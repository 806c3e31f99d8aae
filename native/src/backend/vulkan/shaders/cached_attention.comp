// Attention of new tokens over a layer's key/value cache (backend/vulkan/cached_attention_kernel.cpp):
// a workgroup per (head, query) row, or SPLITS of them, each over its share of the keys. Query s of head h attends to the cache's keys 0 .. past + s
// of key/value head h / group: softmax(q k * scale) v, the softmax online: the keys go by in
// rounds of one per invocation, each round's scores shift the running maximum, and the sum and the
// weighted values so far are rescaled by exp(old maximum - new). Each invocation accumulates the
// output elements lane, lane + width, ... of the row. With SPLITS > 1 (few rows: a decoding step)
// each workgroup writes its unnormalized partial instead, [SPLITS][depth] sums then its maximum
// and its sum of weights, for shaders/cached_attention_combine.comp. A row whose keys pass the
// cache's capacity (the host did not make room) is NaN.
#version 450
layout(local_size_x_id = 0) in;  // a power of two, at most kMaxWidth
layout(constant_id = 1) const uint SPLITS = 1;  // workgroups per row
const uint kMaxWidth = 256;
const uint kMaxDepth = 256;
const uint kPerLane = 4;  // output elements per invocation at the smallest width (64): kMaxDepth / 64

layout(std430, binding = 0) writeonly buffer Out { float y[]; };  // or the partials
layout(std430, binding = 1) readonly buffer Query { float q[]; };
layout(std430, binding = 2) readonly buffer Cache { float cache[]; };
layout(std430, binding = 3) readonly buffer Past { uint past_words[]; };  // an int64, little-endian
layout(std430, binding = 4) readonly buffer Cache4 { vec4 cache4[]; };  // the cache again, by 4 values
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
  const uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint row = group / SPLITS, split = group % SPLITS;
  if (row >= pc.heads * pc.tokens) return;  // the whole workgroup, before any barrier
  const uint lane = gl_LocalInvocationID.x, width = gl_WorkGroupSize.x, depth = pc.depth;
  const uint head = row / pc.tokens, s = row % pc.tokens, kv = head / pc.group;
  const uint past = past_words[0];
  const float nan = uintBitsToFloat(0x7fc00000u);
  const uint partial_at = group * (depth + 2u);  // this workgroup's partial (SPLITS > 1)
  if (past_words[1] != 0u || past >= pc.capacity || s >= pc.capacity - past) {
    if (SPLITS == 1u) {
      for (uint d = lane; d < depth; d += width) y[row * depth + d] = nan;
    } else {
      for (uint d = lane; d < depth + 2u; d += width) y[partial_at + d] = nan;
    }
    return;
  }
  const uint all_keys = past + s + 1u;
  const uint first_key = all_keys * split / SPLITS, keys = all_keys * (split + 1u) / SPLITS;
  const uint key_base = kv * pc.capacity * depth;
  const uint value_base = (pc.kv_heads + kv) * pc.capacity * depth;
  for (uint d = lane; d < depth; d += width) query_row[d] = q[row * depth + d];
  memoryBarrierShared();
  barrier();

  float top = uintBitsToFloat(0xff800000u);  // -inf: no key seen yet
  float total = 0.0;
  float acc[kPerLane];
  for (uint c = 0u; c < kPerLane; ++c) acc[c] = 0.0;
  for (uint first = first_key; first < keys; first += width) {
    const uint j = first + lane;
    float score = uintBitsToFloat(0xff800000u);
    if (j < keys) {
      float dot = 0.0;
      const uint at = key_base + j * depth;
      if (depth % 4u == 0u) {  // the key's row in 16-byte loads (every row starts on one then)
        for (uint d = 0u; d < depth; d += 4u) {
          const vec4 k4 = cache4[(at + d) / 4u];
          dot += query_row[d] * k4.x;
          dot += query_row[d + 1u] * k4.y;
          dot += query_row[d + 2u] * k4.z;
          dot += query_row[d + 3u] * k4.w;
        }
      } else {
        for (uint d = 0u; d < depth; ++d) dot += query_row[d] * cache[at + d];
      }
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
  if (SPLITS > 1u) {
    for (uint c = 0u; c < kPerLane; ++c) {
      const uint d = lane + c * width;
      if (d < depth) y[partial_at + d] = acc[c];
    }
    if (lane == 0u) {
      y[partial_at + depth] = top;
      y[partial_at + depth + 1u] = total;
    }
    return;
  }
  const float inverse = 1.0 / total;
  for (uint c = 0u; c < kPerLane; ++c) {
    const uint d = lane + c * width;
    if (d < depth) y[row * depth + d] = acc[c] * inverse;
  }
}
