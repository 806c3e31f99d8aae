// MatMul in float32 (backend/vulkan/matmul_kernel.cpp): C = op(A) op(B) for a stack of products.
// A workgroup computes a BM x BN tile of C, each invocation a TM x TN block of it in registers,
// with K taken BK at a time through shared memory. An invocation's block is strided (rows
// ty + i BM/TM, columns tx + j BN/TN), so neighbouring invocations read neighbouring words of
// shared memory and write neighbouring columns of C. Operands are loaded along their contiguous
// axis (the transposes are specialization constants), so a subgroup reads consecutive addresses.
// Products of the stack are the grid's z (looping past the grid's limit); each operand's matrix
// of product b comes from the batch strides in the push constants (0 where it broadcasts).
#version 450

layout(constant_id = 0) const uint BM = 64;
layout(constant_id = 1) const uint BN = 64;
layout(constant_id = 2) const uint BK = 16;
layout(constant_id = 3) const uint TM = 4;
layout(constant_id = 4) const uint TN = 4;
layout(constant_id = 5) const bool TRANSPOSE_A = false;
layout(constant_id = 6) const bool TRANSPOSE_B = false;
// The workgroup size, (BM / TM) * (BN / TN): given by the host, as sizes cannot be computed here.
layout(local_size_x_id = 7) in;

const uint THREADS = (BM / TM) * (BN / TN);
const uint kMaxBatchRank = 6;

layout(std430, binding = 0) writeonly buffer COut { float c[]; };
layout(std430, binding = 1) readonly buffer AIn { float a[]; };
layout(std430, binding = 2) readonly buffer BIn { float b[]; };

layout(push_constant) uniform Push {
  uint M, N, K;
  uint lda, ldb;  // the stored row lengths of A and B
  uint batch_count, batch_rank;
  uint batch_dims[kMaxBatchRank];
  uint a_batch_stride[kMaxBatchRank];
  uint b_batch_stride[kMaxBatchRank];
} pc;

// k-major tiles; one word of padding per row keeps the transposing stores free of bank conflicts.
shared float a_tile[BK * (BM + 1)];
shared float b_tile[BK * (BN + 1)];

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint tx = tid % (BN / TN), ty = tid / (BN / TN);
  const uint row0 = gl_WorkGroupID.y * BM, col0 = gl_WorkGroupID.x * BN;
  for (uint batch = gl_WorkGroupID.z; batch < pc.batch_count; batch += gl_NumWorkGroups.z) {
    uint a_base = 0, b_base = 0, rest = batch;
    for (uint d = pc.batch_rank; d-- > 0;) {
      const uint i = rest % pc.batch_dims[d];
      rest /= pc.batch_dims[d];
      a_base += i * pc.a_batch_stride[d];
      b_base += i * pc.b_batch_stride[d];
    }
    float acc[TM * TN];
    for (uint i = 0; i < TM * TN; ++i) acc[i] = 0.0;

    for (uint k0 = 0; k0 < pc.K; k0 += BK) {
      // op(A)[m][k] is A[m][k], or A[k][m] when transposed.
      for (uint e = tid; e < BM * BK; e += THREADS) {
        const uint m = TRANSPOSE_A ? e % BM : e / BK, k = TRANSPOSE_A ? e / BM : e % BK;
        const uint gm = row0 + m, gk = k0 + k;
        float v = 0.0;
        if (gm < pc.M && gk < pc.K) v = a[a_base + (TRANSPOSE_A ? gk * pc.lda + gm : gm * pc.lda + gk)];
        a_tile[k * (BM + 1) + m] = v;
      }
      // op(B)[k][n] is B[k][n], or B[n][k] when transposed.
      for (uint e = tid; e < BK * BN; e += THREADS) {
        const uint n = TRANSPOSE_B ? e / BK : e % BN, k = TRANSPOSE_B ? e % BK : e / BN;
        const uint gn = col0 + n, gk = k0 + k;
        float v = 0.0;
        if (gn < pc.N && gk < pc.K) v = b[b_base + (TRANSPOSE_B ? gn * pc.ldb + gk : gk * pc.ldb + gn)];
        b_tile[k * (BN + 1) + n] = v;
      }
      barrier();
      for (uint k = 0; k < BK; ++k) {
        float a_reg[TM], b_reg[TN];
        for (uint i = 0; i < TM; ++i) a_reg[i] = a_tile[k * (BM + 1) + ty + i * (BM / TM)];
        for (uint j = 0; j < TN; ++j) b_reg[j] = b_tile[k * (BN + 1) + tx + j * (BN / TN)];
        for (uint i = 0; i < TM; ++i) {
          for (uint j = 0; j < TN; ++j) acc[i * TN + j] = fma(a_reg[i], b_reg[j], acc[i * TN + j]);
        }
      }
      barrier();
    }

    const uint c_base = batch * pc.M * pc.N;
    for (uint i = 0; i < TM; ++i) {
      const uint gm = row0 + ty + i * (BM / TM);
      if (gm >= pc.M) continue;
      for (uint j = 0; j < TN; ++j) {
        const uint gn = col0 + tx + j * (BN / TN);
        if (gn < pc.N) c[c_base + gm * pc.N + gn] = acc[i * TN + j];
      }
    }
  }
}
