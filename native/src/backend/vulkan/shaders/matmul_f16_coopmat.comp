// MatMul at precision "low" on cooperative matrices (tensor cores; backend/vulkan/matmul_kernel.cpp
// chooses it where the device reports float16 x float16 + float32 -> float32 products of 16x16x16
// per subgroup). Vulkan only: VK_NV_cooperative_matrix has no Metal counterpart here.
// A workgroup computes a BM x BN tile of C (128 x 128 or 64 x 64, K 32 at a time: the host passes
// these) with (BM / 32) x 2 subgroups, each a 32 x (BN / 2) part of it as 2 x (BN / 32)
// accumulators of 16 x 16 in float32. Per step of K every invocation stages its share of op(A)
// and op(B), rounded to nearest float16 (to_half), into shared tiles laid out along the operand's
// contiguous axis (so that neighbouring invocations write neighbouring halves, and the
// cooperative loads read them row- or column-major). Products of float16 values are exact in
// float32, so C is a float32 sum of the rounded operands' products. Each accumulator goes out
// through a 16 x 16 staging area of its subgroup, so that C's edges are written with bounds checks
// and rows by neighbouring invocations. Where K is split (the grid's z: products times splits,
// matmul_common.glsl), a workgroup sums its split's run of K (a multiple of BK) and writes the
// split's partial tile instead.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_NV_cooperative_matrix : require
#define HALF_OPERANDS
#include "matmul_common.glsl"

const uint CM = 16;  // the cooperative matrices' side
const uint THREADS = gl_WorkGroupSize.x;
const uint FN = BN / 32;  // accumulators across a subgroup's part: 2 or 4
const uint A_LOADS = (BM * BK + THREADS - 1) / THREADS, B_LOADS = (BK * BN + THREADS - 1) / THREADS;
// Rows padded by 8 float16 (16 bytes, the alignment cooperative loads need of their rows), which
// also spreads a column's accesses over the banks. op(A) is stored m-major ([m][k]) unless A is
// transposed (then [k][m]); op(B) k-major ([k][n]) unless B is transposed (then [n][k]).
const uint A_ROW = TRANSPOSE_A ? BM + 8 : BK + 8, B_ROW = TRANSPOSE_B ? BK + 8 : BN + 8;
const uint A_SIZE = TRANSPOSE_A ? BK * A_ROW : BM * A_ROW, B_SIZE = TRANSPOSE_B ? BN * B_ROW : BK * B_ROW;
const uint STAGE_ROW = CM + 4, STAGE_SIZE = CM * STAGE_ROW;

shared float16_t a_tile[A_SIZE];
shared float16_t b_tile[B_SIZE];
shared float stage[(BM / 32) * 2 * STAGE_SIZE];

void store_a(uint e, float v) {
  uint m, k;
  a_position(e, m, k);
  if (e < BM * BK) a_tile[TRANSPOSE_A ? k * A_ROW + m : m * A_ROW + k] = to_half(v);
}
void store_b(uint e, float v) {
  uint k, n;
  b_position(e, k, n);
  if (e < BK * BN) b_tile[TRANSPOSE_B ? n * B_ROW + k : k * B_ROW + n] = to_half(v);
}

void main() {
  const uint tid = gl_LocalInvocationID.x, lane = gl_SubgroupInvocationID, subgroup = gl_SubgroupID;
  const uint row0 = gl_WorkGroupID.y * BM, col0 = gl_WorkGroupID.x * BN;
  // This subgroup's part of the tile: 32 rows, BN / 2 columns.
  const uint sub_row = (subgroup / 2) * 32, sub_col = (subgroup % 2) * (BN / 2);
  uint k_begin, k_end, first_batch, batch_step;
  split_of_workgroup(k_begin, k_end, first_batch, batch_step);
  for (uint batch = first_batch; batch < pc.batch_count; batch += batch_step) {
    uint a_base, b_base;
    batch_bases(batch, a_base, b_base);
    fcoopmatNV<32, gl_ScopeSubgroup, CM, CM> acc[2][4];
    for (uint i = 0; i < 2; ++i) {
      for (uint j = 0; j < FN; ++j) acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, CM, CM>(0.0);
    }
    float a_next[A_LOADS], b_next[B_LOADS];
    for (uint i = 0; i < A_LOADS; ++i) a_next[i] = load_a(tid + i * THREADS, a_base, row0, k_begin, k_end);
    for (uint i = 0; i < B_LOADS; ++i) b_next[i] = load_b(tid + i * THREADS, b_base, col0, k_begin, k_end);

    for (uint k0 = k_begin; k0 < k_end; k0 += BK) {
      for (uint i = 0; i < A_LOADS; ++i) store_a(tid + i * THREADS, a_next[i]);
      for (uint i = 0; i < B_LOADS; ++i) store_b(tid + i * THREADS, b_next[i]);
      barrier();
      if (k0 + BK < k_end) {
        for (uint i = 0; i < A_LOADS; ++i) a_next[i] = load_a(tid + i * THREADS, a_base, row0, k0 + BK, k_end);
        for (uint i = 0; i < B_LOADS; ++i) b_next[i] = load_b(tid + i * THREADS, b_base, col0, k0 + BK, k_end);
      }
      for (uint k = 0; k < BK; k += CM) {
        fcoopmatNV<16, gl_ScopeSubgroup, CM, CM> a_frag[2], b_frag[4];
        for (uint i = 0; i < 2; ++i) {
          const uint m = sub_row + i * CM;
          coopMatLoadNV(a_frag[i], a_tile, TRANSPOSE_A ? k * A_ROW + m : m * A_ROW + k, A_ROW, TRANSPOSE_A);
        }
        for (uint j = 0; j < FN; ++j) {
          const uint n = sub_col + j * CM;
          coopMatLoadNV(b_frag[j], b_tile, TRANSPOSE_B ? n * B_ROW + k : k * B_ROW + n, B_ROW, TRANSPOSE_B);
        }
        for (uint i = 0; i < 2; ++i) {
          for (uint j = 0; j < FN; ++j) acc[i][j] = coopMatMulAddNV(a_frag[i], b_frag[j], acc[i][j]);
        }
      }
      barrier();
    }

    const uint c_at = c_base(batch), stage_at = subgroup * STAGE_SIZE;
    for (uint i = 0; i < 2; ++i) {
      for (uint j = 0; j < FN; ++j) {
        coopMatStoreNV(acc[i][j], stage, stage_at, STAGE_ROW, false);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        const uint m0 = row0 + sub_row + i * CM, n0 = col0 + sub_col + j * CM;
        for (uint e = lane; e < CM * CM; e += gl_SubgroupSize) {
          const uint gm = m0 + e / CM, gn = n0 + e % CM;
          if (gm < pc.M && gn < pc.N) c[c_at + gm * pc.N + gn] = stage[stage_at + (e / CM) * STAGE_ROW + e % CM];
        }
        subgroupBarrier();  // the staging area is written again for the next accumulator
      }
    }
  }
}
