// MatMul at precision "low" on cooperative matrices (tensor cores; backend/vulkan/matmul_kernel.cpp
// chooses it where the device reports float16 x float16 + float32 -> float32 products of 16x16x16
// per subgroup). Vulkan only: VK_NV_cooperative_matrix has no Metal counterpart here.
// A workgroup of 4 subgroups computes a 64 x 64 tile of C (BM = BN = 64, BK = 32: the host passes
// these), each subgroup a 32 x 32 quarter of it as 2 x 2 accumulators of 16 x 16 in float32. Per
// step of K every invocation stages its share of op(A) and op(B), rounded to nearest float16
// (to_half), into k-major shared tiles: op(A)'s is column-major and op(B)'s row-major, as the
// cooperative loads read them. Products of float16 values are exact in float32, so C is a
// float32 sum of the rounded operands' products. The accumulators go out through shared memory,
// so that C's edges and rows are written with bounds checks by neighbouring invocations. Where K
// is split (the grid's z: products times splits, matmul_common.glsl), a workgroup sums its split's
// run of K (a multiple of BK) and writes the split's partial tile instead.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_NV_cooperative_matrix : require
#define HALF_OPERANDS
#include "matmul_common.glsl"

const uint CM = 16;  // the cooperative matrices' side
const uint THREADS = gl_WorkGroupSize.x;  // 4 subgroups
const uint A_LOADS = (BM * BK + THREADS - 1) / THREADS, B_LOADS = (BK * BN + THREADS - 1) / THREADS;
// Padded rows (8 float16 or 4 float32 elements: 16 bytes, the alignment cooperative loads and
// stores need of their rows), which also spread a row's accesses over the banks.
const uint A_ROW = BM + 8, B_ROW = BN + 8, C_ROW = BN + 4;

shared float16_t a_tile[BK * A_ROW];  // op(A)[m][k] at k * A_ROW + m
shared float16_t b_tile[BK * B_ROW];  // op(B)[k][n] at k * B_ROW + n
shared float c_tile[BM * C_ROW];      // C[m][n] at m * C_ROW + n

void store_a(uint e, float v) {
  uint m, k;
  a_position(e, m, k);
  if (e < BM * BK) a_tile[k * A_ROW + m] = to_half(v);
}
void store_b(uint e, float v) {
  uint k, n;
  b_position(e, k, n);
  if (e < BK * BN) b_tile[k * B_ROW + n] = to_half(v);
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint row0 = gl_WorkGroupID.y * BM, col0 = gl_WorkGroupID.x * BN;
  // This subgroup's quarter of the tile.
  const uint sub_row = (gl_SubgroupID / 2) * (BM / 2), sub_col = (gl_SubgroupID % 2) * (BN / 2);
  uint k_begin, k_end, first_batch, batch_step;
  split_of_workgroup(k_begin, k_end, first_batch, batch_step);
  for (uint batch = first_batch; batch < pc.batch_count; batch += batch_step) {
    uint a_base, b_base;
    batch_bases(batch, a_base, b_base);
    fcoopmatNV<32, gl_ScopeSubgroup, CM, CM> acc[2][2];
    for (uint i = 0; i < 2; ++i) {
      for (uint j = 0; j < 2; ++j) acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, CM, CM>(0.0);
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
        fcoopmatNV<16, gl_ScopeSubgroup, CM, CM> a_frag[2], b_frag[2];
        for (uint i = 0; i < 2; ++i) coopMatLoadNV(a_frag[i], a_tile, k * A_ROW + sub_row + i * CM, A_ROW, true);
        for (uint j = 0; j < 2; ++j) coopMatLoadNV(b_frag[j], b_tile, k * B_ROW + sub_col + j * CM, B_ROW, false);
        for (uint i = 0; i < 2; ++i) {
          for (uint j = 0; j < 2; ++j) acc[i][j] = coopMatMulAddNV(a_frag[i], b_frag[j], acc[i][j]);
        }
      }
      barrier();
    }

    for (uint i = 0; i < 2; ++i) {
      for (uint j = 0; j < 2; ++j) {
        coopMatStoreNV(acc[i][j], c_tile, (sub_row + i * CM) * C_ROW + sub_col + j * CM, C_ROW, false);
      }
    }
    barrier();
    const uint c_at = c_base(batch);
    for (uint e = tid; e < BM * BN; e += THREADS) {
      const uint gm = row0 + e / BN, gn = col0 + e % BN;
      if (gm < pc.M && gn < pc.N) c[c_at + gm * pc.N + gn] = c_tile[(e / BN) * C_ROW + e % BN];
    }
    barrier();  // c_tile is written again for the next product
  }
}
