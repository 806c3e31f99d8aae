// WeightQuantMatMul for 1 to 4 rows of x (backend/vulkan/weight_quant_kernel.cpp): y = x W^T
// (+ bias), W's elements (u - z) * scale[n, k / BLOCK] read from their int4 or int8 codes. Memory
// bound: every code is read once, and each decoded weight serves all ROWS rows of x.
// A team of TEAM invocations computes OUTS neighbouring outputs (rows n of W; ROWS * OUTS <= 4),
// a workgroup gl_WorkGroupSize.x / TEAM teams. The team strides over its rows of codes a uvec4
// at a time (a "chunk" of 32 int4 or 16 int8 codes, never straddling a block: blocks are 32, 64
// or 128 codes and rows whole blocks), so neighbouring invocations read neighbouring 16 bytes of
// each row; the x values of a chunk (vec4s, from the cache) are read once for the OUTS rows. Each
// chunk's products are summed in float32 and the sum scaled once by its block's scale, then an
// invocation's chunk sums are added and the team's partial sums finished by a tree in shared
// memory. Each output is then a sum of K products each rounded once, in some order, scaled: the
// float32 error of any K-term sum (tests/test_vulkan_weight_quant.py).
// The codes bind as uvec4s: a row holds K * BITS / 8 bytes, a multiple of 16 as K is a multiple
// of the block, so rows start at whole uvec4s.
#version 450
layout(local_size_x_id = 0) in;  // at most kMaxWorkgroup, a multiple of TEAM
layout(constant_id = 1) const uint TEAM = 32;   // invocations per output: a power of two
layout(constant_id = 2) const uint ROWS = 1;    // rows of x: 1 to kMaxRows
layout(constant_id = 3) const uint BITS = 4;    // 4 or 8
layout(constant_id = 4) const uint BLOCK = 32;  // k per scale: 32, 64 or 128
layout(constant_id = 5) const bool ASYMMETRIC = false;
layout(constant_id = 6) const bool HAS_BIAS = false;
layout(constant_id = 7) const uint OUTS = 1;    // outputs per team: 1, 2 or 4
const uint kMaxWorkgroup = 256, kMaxRows = 4, kMaxOuts = 4;
const uint kMaxSums = 4;  // ROWS * OUTS
const uint CHUNK = 128 / BITS;  // codes per uvec4

layout(std430, binding = 0) writeonly buffer YOut { float y[]; };
layout(std430, binding = 1) readonly buffer XIn { vec4 x[]; };
layout(std430, binding = 2) readonly buffer Codes { uvec4 codes[]; };
layout(std430, binding = 3) readonly buffer Scales { float scales[]; };
layout(std430, binding = 4) readonly buffer Zeros { uint zeros[]; };  // uint8 zero points, 4 a word
layout(std430, binding = 5) readonly buffer Bias { float bias[]; };

layout(push_constant) uniform Push {
  uint N, K;
} pc;

shared float partial[kMaxSums * kMaxWorkgroup];

// Code t (0 to CHUNK - 1) of a chunk: bytes in memory order (little-endian words), int4 codes two
// to a byte with the lower k in the high nibble.
uint code_at(uvec4 chunk, uint t) {
  const uint bit = BITS == 8u ? 8u * t : 8u * (t >> 1u) + ((t & 1u) == 0u ? 4u : 0u);
  return (chunk[bit >> 5u] >> (bit & 31u)) & ((1u << BITS) - 1u);
}

// Block b's zero point (b counted over all of W's blocks).
float zero_of(uint b) {
  if (!ASYMMETRIC) return float(1u << (BITS - 1u));
  return float((zeros[b >> 2u] >> ((b & 3u) * 8u)) & 255u);
}

void main() {
  const uint lid = gl_LocalInvocationID.x, width = gl_WorkGroupSize.x, lane = lid % TEAM;
  const uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint n0 = (group * (width / TEAM) + lid / TEAM) * OUTS;
  const uint chunks = pc.K / CHUNK, blocks = pc.K / BLOCK, x_row = pc.K / 4u;
  // Rows past N read row N - 1 (their sums are not written): no branch around the loads, and
  // every invocation takes part in the tree's barriers.
  uint rows[kMaxOuts];
  for (uint o = 0u; o < kMaxOuts; ++o) rows[o] = min(n0 + o, pc.N - 1u);

  float acc[kMaxSums];
  for (uint i = 0u; i < kMaxSums; ++i) acc[i] = 0.0;
  for (uint c = lane; c < chunks; c += TEAM) {
    const uint k0 = c * CHUNK;
    uvec4 chunk[kMaxOuts];
    float z[kMaxOuts];
    for (uint o = 0u; o < OUTS; ++o) {
      chunk[o] = codes[rows[o] * chunks + c];
      z[o] = zero_of(rows[o] * blocks + k0 / BLOCK);
    }
    float sums[kMaxSums];
    for (uint i = 0u; i < kMaxSums; ++i) sums[i] = 0.0;
    for (uint g = 0u; g < CHUNK / 4u; ++g) {
      vec4 xv[kMaxRows];
      for (uint r = 0u; r < ROWS; ++r) xv[r] = x[r * x_row + k0 / 4u + g];
      for (uint o = 0u; o < OUTS; ++o) {
        // u - z is exact (integers below 256).
        const vec4 w = vec4(code_at(chunk[o], 4u * g), code_at(chunk[o], 4u * g + 1u),
                            code_at(chunk[o], 4u * g + 2u), code_at(chunk[o], 4u * g + 3u)) - z[o];
        for (uint r = 0u; r < ROWS; ++r) sums[o * ROWS + r] += dot(w, xv[r]);
      }
    }
    for (uint o = 0u; o < OUTS; ++o) {
      const float scale = scales[rows[o] * blocks + k0 / BLOCK];
      for (uint r = 0u; r < ROWS; ++r) acc[o * ROWS + r] += sums[o * ROWS + r] * scale;
    }
  }

  for (uint i = 0u; i < OUTS * ROWS; ++i) partial[i * kMaxWorkgroup + lid] = acc[i];
  for (uint half_team = TEAM / 2u; half_team > 0u; half_team /= 2u) {
    memoryBarrierShared();
    barrier();
    if (lane < half_team) {
      for (uint i = 0u; i < OUTS * ROWS; ++i) {
        partial[i * kMaxWorkgroup + lid] += partial[i * kMaxWorkgroup + lid + half_team];
      }
    }
  }
  if (lane != 0u) return;  // lane 0 wrote the team's sums itself
  for (uint o = 0u; o < OUTS; ++o) {
    const uint n = n0 + o;
    if (n >= pc.N) break;
    for (uint r = 0u; r < ROWS; ++r) {
      const float sum = partial[(o * ROWS + r) * kMaxWorkgroup + lid];
      y[r * pc.N + n] = HAS_BIAS ? sum + bias[n] : sum;
    }
  }
}
