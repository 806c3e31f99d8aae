// WeightQuantMatMul for more rows of x (backend/vulkan/weight_quant_kernel.cpp): the tiled SGEMM of
// matmul_sgemm.glsl with A = x ([M, K], rows contiguous) and op(B) = W^T, W's elements dequantized
// as they are staged: each element of a workgroup's BN x BK tile of W is decoded from its code
// once, (u - z) * scale in float32 (the rounding of the float weights the CPU's GEMM path and
// expr.dequantize_weight_blocks make), stored in shared memory and used by all BM rows of the
// tile; float32 fused multiply-adds. Consecutive invocations stage consecutive k of a row of W, so
// a subgroup reads a few consecutive words of codes. K may be split (the grid's z; gemm_tiles.h),
// each split's sums then written to its partial tile and added by shaders/split_k_finish.comp with
// the bias; unsplit, the bias is added here as each output is written.
#version 450
#extension GL_GOOGLE_include_directive : require
#define TILE4 vec4
#define TO_TILE(x) (x)

layout(constant_id = 0) const uint BM = 64;  // a workgroup's tile of C: BM x BN
layout(constant_id = 1) const uint BN = 64;
layout(constant_id = 2) const uint BK = 16;  // K taken BK at a time
// 3, 4: TM and TN (matmul_sgemm.glsl)
layout(constant_id = 5) const uint BITS = 4;    // 4 or 8
layout(constant_id = 6) const uint BLOCK = 32;  // k per scale: 32, 64 or 128
layout(local_size_x_id = 7) in;                 // (BM / TM) * (BN / TN)
layout(constant_id = 8) const bool ASYMMETRIC = false;
layout(constant_id = 9) const bool HAS_BIAS = false;  // unsplit only: the finish pass adds it otherwise

// C, or where K is split the splits' partial sums (the kernel's scratch), split s M * N floats in.
layout(std430, binding = 0) writeonly buffer COut { float c[]; };
layout(std430, binding = 1) readonly buffer AIn { float a[]; };
layout(std430, binding = 2) readonly buffer Codes { uint codes[]; };  // uint8 codes, 4 a word
layout(std430, binding = 3) readonly buffer Scales { float scales[]; };
layout(std430, binding = 4) readonly buffer Zeros { uint zeros[]; };  // uint8 zero points, 4 a word
layout(std430, binding = 5) readonly buffer Bias { float bias[]; };

layout(push_constant) uniform Push {
  uint M, N, K;
  uint batch_count;          // 1: x's leading dims are the rows of A
  uint splits, split_depth;  // K in `splits` runs of split_depth (a multiple of BK)
} pc;

void split_of_workgroup(out uint k_begin, out uint k_end, out uint first_batch, out uint batch_step) {
  k_begin = gl_WorkGroupID.z * pc.split_depth;
  k_end = min(k_begin + pc.split_depth, pc.K);
  first_batch = 0;
  batch_step = 1;
}
uint c_base(uint batch) { return gl_WorkGroupID.z * pc.M * pc.N; }
void batch_bases(uint batch, out uint a_base, out uint b_base) {
  a_base = 0;
  b_base = 0;
}

void a_position(uint e, out uint m, out uint k) {
  m = e / BK;
  k = e % BK;
}
float load_a(uint e, uint a_base, uint row0, uint k0, uint k_end) {
  uint m, k;
  a_position(e, m, k);
  const uint gm = row0 + m, gk = k0 + k;
  if (e >= BM * BK || gm >= pc.M || gk >= k_end) return 0.0;
  return a[gm * pc.K + gk];
}

// op(B)[k][n] = W[n][k]: consecutive e take consecutive k of a row of W.
void b_position(uint e, out uint k, out uint n) {
  n = e / BK;
  k = e % BK;
}
// W[n][k] from its code, its block's scale and zero point. Bytes are indexed over the whole of
// the codes (rows need not be whole words).
float dequantized(uint n, uint k) {
  const uint b = n * (pc.K / BLOCK) + k / BLOCK;
  const float z = ASYMMETRIC ? float((zeros[b >> 2u] >> ((b & 3u) * 8u)) & 255u) : float(1u << (BITS - 1u));
  const uint byte_at = BITS == 8u ? n * pc.K + k : n * (pc.K / 2u) + k / 2u;
  const uint word = codes[byte_at >> 2u] >> ((byte_at & 3u) * 8u);
  const uint u = BITS == 8u ? word & 255u : (k & 1u) == 0u ? (word >> 4u) & 15u : word & 15u;
  precise float w = (float(u) - z) * scales[b];
  return w;
}
float load_b(uint e, uint b_base, uint col0, uint k0, uint k_end) {
  uint k, n;
  b_position(e, k, n);
  const uint gn = col0 + n, gk = k0 + k;
  if (e >= BK * BN || gn >= pc.N || gk >= k_end) return 0.0;
  return dequantized(gn, gk);
}

void store_c(uint at, uint n, float v) { c[at] = HAS_BIAS ? v + bias[n] : v; }

#include "matmul_sgemm.glsl"
