// Gather along an axis (backend/vulkan/gather_kernel.cpp): out[o, j, :] = x[o, index[j], :] over
// the [outer, n, inner] view of x, copied as 32-bit words whatever the dtype (a slab of `inner`
// elements is slab_words words). Negative indices count from the end once; an index still out of
// range gives a slab of zeros, as the CPU kernel does. int32 or int64 indices (INDEX_WORDS).
// A fixed grid whose invocations loop over the output's words: neighbouring invocations write
// neighbouring words and read them from one slab of x.
#version 450
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint INDEX_WORDS = 1;  // 1: int32 indices, 2: int64

layout(std430, binding = 0) writeonly buffer Out { uint y[]; };
layout(std430, binding = 1) readonly buffer In { uint x[]; };
layout(std430, binding = 2) readonly buffer Index { uint index[]; };
layout(push_constant) uniform Push {
  uint words;       // of the output: outer * num_index * slab_words
  uint slab_words;  // inner * words per element
  uint num_index;
  uint n;           // the gathered axis' length (below 2^31)
} pc;

// The index's position along the axis, or -1 where it is out of range.
int position(uint j) {
  int k;
  if (INDEX_WORDS == 1u) {
    k = int(index[j]);
  } else {
    // An int64 in [-2^31, 2^31) has a high word that is the sign of its low word; anything else
    // is out of range for an axis of fewer than 2^31 elements.
    const uint low = index[2u * j], high = index[2u * j + 1u];
    if (high != (int(low) < 0 ? 0xffffffffu : 0u)) return -1;
    k = int(low);
  }
  if (k < 0) k += int(pc.n);
  return k >= 0 && k < int(pc.n) ? k : -1;
}

void main() {
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint t = gl_GlobalInvocationID.x; t < pc.words; t += step) {
    const uint slab = t / pc.slab_words, word = t - slab * pc.slab_words;
    const uint o = slab / pc.num_index, j = slab - o * pc.num_index;
    const int k = position(j);
    y[t] = k < 0 ? 0u : x[(o * pc.n + uint(k)) * pc.slab_words + word];
  }
}
