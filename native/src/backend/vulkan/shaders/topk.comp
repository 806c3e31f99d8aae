// TopK of float32 rows (backend/vulkan/topk_kernel.cpp): a workgroup per row, the k best
// elements first, best first, in the CPU kernel's order (backend/cpu/sort.cpp, torch.topk's
// ranking): NaN above every number, -0 equal to +0, equal values by lower index.
//
// Each element becomes a 32-bit rank key (larger ranks first; ~key for the smallest) and enters a
// shared-memory buffer of CAPACITY (key, index) pairs. The row is read in tiles of kPerLane
// elements per invocation, neighbouring invocations on neighbouring elements; once the k best so
// far are known, only elements that rank before the k-th of them enter. When the next tile might
// not fit, the buffer is sorted (bitonic, padded to a power of two) and keeps its first k. A row
// of at most CAPACITY elements is therefore one sort of the whole row.
#version 450
layout(local_size_x_id = 0) in;  // a power of two
layout(constant_id = 1) const uint CAPACITY = 2048;  // a power of two, at least k + kPerLane * workgroup size
layout(constant_id = 2) const bool LARGEST = true;
const uint kPerLane = 4;

layout(std430, binding = 0) writeonly buffer Values { uint values[]; };   // float32 bits
layout(std430, binding = 1) writeonly buffer Indices { uint indices[]; };  // int64 as two words
layout(std430, binding = 2) readonly buffer In { uint x[]; };             // float32 bits
layout(push_constant) uniform Push {
  uint rows;  // outer * inner
  uint n;     // the axis' length
  uint inner;
  uint k;
} pc;

shared uint keys[CAPACITY];
shared uint ids[CAPACITY];
shared uint appended;  // entries added after the kept ones since the last sort

const uint kPaddingKey = 0u, kPaddingId = 0xffffffffu;  // ranks after every element

uint rank_key(uint bits) {
  const uint magnitude = bits & 0x7fffffffu;
  uint key;
  if (magnitude > 0x7f800000u) key = 0xffffffffu;     // NaN, above +inf
  else if (magnitude == 0u) key = 0x80000000u;        // both zeros
  else key = (bits & 0x80000000u) != 0u ? ~bits : bits | 0x80000000u;
  return LARGEST ? key : ~key;  // in either case no element's key is 0 with index 0xffffffff
}

// Whether (key a, index a) comes before (key b, index b) in the output.
bool before(uint key_a, uint id_a, uint key_b, uint id_b) { return key_a > key_b || (key_a == key_b && id_a < id_b); }

// Sorts the first m entries, best first (all invocations call it, in uniform control flow).
void sort_first(uint m) {
  const uint lane = gl_LocalInvocationID.x, width = gl_WorkGroupSize.x;
  uint p = 1u;
  while (p < m) p *= 2u;
  for (uint i = m + lane; i < p; i += width) {
    keys[i] = kPaddingKey;
    ids[i] = kPaddingId;
  }
  memoryBarrierShared();
  barrier();
  for (uint size = 2u; size <= p; size *= 2u) {
    for (uint stride = size / 2u; stride > 0u; stride /= 2u) {
      for (uint t = lane; t < p / 2u; t += width) {
        const uint a = 2u * t - (t & (stride - 1u)), b = a + stride;
        const uint key_a = keys[a], id_a = ids[a], key_b = keys[b], id_b = ids[b];
        // Blocks alternate best-first and worst-first until the last merge, all best-first.
        if (before(key_b, id_b, key_a, id_a) == ((a & size) == 0u)) {
          keys[a] = key_b;
          ids[a] = id_b;
          keys[b] = key_a;
          ids[b] = id_a;
        }
      }
      memoryBarrierShared();
      barrier();
    }
  }
}

void main() {
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= pc.rows) return;  // the whole workgroup, before any barrier
  const uint lane = gl_LocalInvocationID.x, width = gl_WorkGroupSize.x, tile = kPerLane * width;
  const uint outer_index = row / pc.inner, inner_index = row - outer_index * pc.inner;
  const uint base = outer_index * pc.n * pc.inner + inner_index;

  if (lane == 0u) appended = 0u;
  memoryBarrierShared();
  barrier();
  uint kept = 0u;  // the sorted best entries at the buffer's start: 0, then k
  uint threshold_key = 0u, threshold_id = 0u;  // the k-th best so far, once kept == k
  for (uint first = 0u; first < pc.n; first += tile) {
    for (uint e = 0u; e < kPerLane; ++e) {
      const uint j = first + e * width + lane;
      if (j >= pc.n) break;
      const uint key = rank_key(x[base + j * pc.inner]);
      if (kept == 0u || before(key, j, threshold_key, threshold_id)) {
        const uint slot = kept + atomicAdd(appended, 1u);
        keys[slot] = key;
        ids[slot] = j;
      }
    }
    memoryBarrierShared();
    barrier();
    const uint filled = kept + appended;
    barrier();  // every invocation has read `appended` before the next tile adds to it
    const uint next = first + tile;
    if (next < pc.n && filled + min(tile, pc.n - next) > CAPACITY) {
      sort_first(filled);
      kept = pc.k;
      threshold_key = keys[kept - 1u];
      threshold_id = ids[kept - 1u];
      if (lane == 0u) appended = 0u;
      memoryBarrierShared();
      barrier();
    }
  }
  memoryBarrierShared();
  barrier();
  sort_first(kept + appended);

  const uint out_base = outer_index * pc.k * pc.inner + inner_index;
  for (uint t = lane; t < pc.k; t += width) {
    const uint j = ids[t], at = out_base + t * pc.inner;
    values[at] = x[base + j * pc.inner];
    indices[2u * at] = j;
    indices[2u * at + 1u] = 0u;
  }
}
