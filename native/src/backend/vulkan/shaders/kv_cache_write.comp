// The new tokens' keys and values into a layer's cache (backend/vulkan/cached_attention_kernel.cpp):
// k and v [kv_heads][tokens][depth] to rows past .. past + tokens - 1 of each head's keys (the
// buffer's first half) and values (its second). Rows past the capacity are left alone; the
// attention shader reports them.
#version 450
layout(local_size_x = 256) in;

layout(std430, binding = 0) buffer Cache { float cache[]; };
layout(std430, binding = 1) readonly buffer Keys { float k[]; };
layout(std430, binding = 2) readonly buffer Values { float v[]; };
layout(std430, binding = 3) readonly buffer Past { uint past_words[]; };  // an int64, little-endian
layout(push_constant) uniform Push {
  uint kv_heads;
  uint tokens;
  uint depth;
  uint capacity;
} pc;

void main() {
  const uint i = gl_GlobalInvocationID.x;
  const uint per_head = pc.tokens * pc.depth;
  if (i >= pc.kv_heads * per_head) return;
  const uint head = i / per_head, s = i % per_head / pc.depth, d = i % pc.depth;
  const uint past = past_words[0];
  if (past_words[1] != 0u || past >= pc.capacity || s >= pc.capacity - past) return;
  const uint at = (head * pc.capacity + past + s) * pc.depth + d;
  cache[at] = k[i];
  cache[pc.kv_heads * pc.capacity * pc.depth + at] = v[i];
}
