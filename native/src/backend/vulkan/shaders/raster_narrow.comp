// Raster regions of 1- or 2-byte elements (backend/vulkan/raster_kernel.cpp), laid out and spread
// over workgroups as in raster.comp, offsets in elements. An element is part of a 32-bit word whose
// other elements other invocations may be writing at the same time, so each write clears and sets
// only its own bits, with atomics: the two never interleave with another write of the same bits,
// since a dispatch writes each element at most once.
#version 450
layout(local_size_x = 256) in;

const int kMaxRank = 8, kRegionInts = 32;
layout(std430, binding = 0) readonly buffer Regions { int regions[]; };
layout(std430, binding = 1) buffer Out { uint y[]; };
layout(std430, binding = 2) readonly buffer In { uint x[]; };
layout(push_constant) uniform Push {
  uint first_region;  // the region of workgroup row 0
  uint bytes;         // per element: 1 or 2
} pc;

void main() {
  const int base = int(pc.first_region + gl_WorkGroupID.y) * kRegionInts;
  const int rank = regions[base];
  const uint count = uint(regions[base + 3]);
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  const uint per_word = 4u / pc.bytes, bits = 8u * pc.bytes, mask = (1u << bits) - 1u;
  for (uint i = gl_GlobalInvocationID.x; i < count; i += step) {
    int src = regions[base + 1], dst = regions[base + 2];
    uint rest = i;
    for (int d = rank - 1; d >= 0; --d) {
      const uint size = uint(regions[base + 4 + d]);
      const int index = int(rest % size);
      rest /= size;
      src += index * regions[base + 12 + d];
      dst += index * regions[base + 20 + d];
    }
    const uint value = (x[uint(src) / per_word] >> ((uint(src) % per_word) * bits)) & mask;
    const uint word = uint(dst) / per_word, shift = (uint(dst) % per_word) * bits;
    atomicAnd(y[word], ~(mask << shift));
    atomicOr(y[word], value << shift);
  }
}
