// Raster regions copied into the output, one region per row of workgroups
// (backend/vulkan/raster_kernel.cpp): each invocation copies elements of its region, striding
// over the region by the width of the dispatch. Elements are 1 or 2 words (4- or 8-byte dtypes).
#version 450
layout(local_size_x = 256) in;

// One region per kRegionInts ints: [0] rank, [1] source offset, [2] destination offset (both in
// words), [3] elements, [4..12) sizes (innermost last), [12..20) source strides, [20..28)
// destination strides (in elements; source strides may be 0 or negative).
const int kMaxRank = 8, kRegionInts = 32;
layout(std430, binding = 0) readonly buffer Regions { int regions[]; };
layout(std430, binding = 1) writeonly buffer Out { uint y[]; };
layout(std430, binding = 2) readonly buffer In { uint x[]; };
layout(push_constant) uniform Push {
  uint first_region;  // the region of workgroup row 0
  uint words;         // words per element
} pc;

void main() {
  const int base = int(pc.first_region + gl_WorkGroupID.y) * kRegionInts;
  const int rank = regions[base];
  const uint count = uint(regions[base + 3]);
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < count; i += step) {
    int src = regions[base + 1], dst = regions[base + 2];
    uint rest = i;
    for (int d = rank - 1; d >= 0; --d) {
      const uint size = uint(regions[base + 4 + d]);
      const int index = int(rest % size);
      rest /= size;
      src += index * regions[base + 12 + d] * int(pc.words);
      dst += index * regions[base + 20 + d] * int(pc.words);
    }
    y[dst] = x[src];
    if (pc.words == 2u) y[dst + 1] = x[src + 1];
  }
}
