// Gather along an axis (backend/vulkan/gather_kernel.cpp): out[o, j, :] = x[o, index[j], :] over
// the [outer, n, inner] view of x, copied as 32-bit words whatever the dtype where a slab of
// `inner` elements is whole words (slab_units words); else (NARROW: bools, 1- and 2-byte dtypes
// with slabs of other sizes) byte by byte, slab_units bytes a slab, each invocation assembling
// whole words of the output so that no two write one word. Negative indices count from the end
// once; an index still out of range gives a slab of zeros, as the CPU kernel does. int32 or int64
// indices (INDEX_WORDS). A fixed grid whose invocations loop over the output's words: neighbouring
// invocations write neighbouring words and read them from one slab of x.
#version 450
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint INDEX_WORDS = 1;  // 1: int32 indices, 2: int64
layout(constant_id = 1) const bool NARROW = false;    // units are bytes, not words

layout(std430, binding = 0) writeonly buffer Out { uint y[]; };
layout(std430, binding = 1) readonly buffer In { uint x[]; };
layout(std430, binding = 2) readonly buffer Index { uint index[]; };
layout(push_constant) uniform Push {
  uint units;       // of the output: outer * num_index * slab_units
  uint slab_units;  // inner * units per element
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
  if (!NARROW) {
    for (uint t = gl_GlobalInvocationID.x; t < pc.units; t += step) {
      const uint slab = t / pc.slab_units, word = t - slab * pc.slab_units;
      const uint o = slab / pc.num_index, j = slab - o * pc.num_index;
      const int k = position(j);
      y[t] = k < 0 ? 0u : x[(o * pc.n + uint(k)) * pc.slab_units + word];
    }
    return;
  }
  const uint words = (pc.units + 3u) / 4u;
  for (uint t = gl_GlobalInvocationID.x; t < words; t += step) {
    uint packed = 0u;
    for (uint q = 0u; q < 4u && 4u * t + q < pc.units; ++q) {
      const uint b = 4u * t + q;
      const uint slab = b / pc.slab_units, byte = b - slab * pc.slab_units;
      const uint o = slab / pc.num_index, j = slab - o * pc.num_index;
      const int k = position(j);
      if (k >= 0) {
        const uint at = (o * pc.n + uint(k)) * pc.slab_units + byte;
        packed |= ((x[at >> 2u] >> (8u * (at & 3u))) & 0xffu) << (8u * q);
      }
    }
    y[t] = packed;
  }
}
