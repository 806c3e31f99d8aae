// MatMul in float32 (backend/vulkan/matmul_kernel.cpp): C = op(A) op(B) for a stack of products.
// A workgroup computes a BM x BN tile of C, each invocation a TM x TN block of it in registers,
// with K taken BK at a time through shared memory. An invocation's rows and columns come in runs
// of 4 (TM/4 runs of rows BM/(TM/4) apart, likewise columns), so it reads shared memory as vec4s
// and neighbouring invocations read and write neighbouring runs. Operands are loaded along their
// contiguous axis (the transposes are specialization constants), so a subgroup reads consecutive
// addresses; the next step's elements are loaded into registers while this step computes.
// Products of the stack are the grid's z (looping past the grid's limit); each operand's matrix
// of product b comes from the batch strides in the push constants (0 where it broadcasts).
#version 450

layout(constant_id = 0) const uint BM = 64;
layout(constant_id = 1) const uint BN = 64;
layout(constant_id = 2) const uint BK = 16;
layout(constant_id = 3) const uint TM = 4;  // multiples of 4 dividing BM, BN
layout(constant_id = 4) const uint TN = 4;
layout(constant_id = 5) const bool TRANSPOSE_A = false;
layout(constant_id = 6) const bool TRANSPOSE_B = false;
// The workgroup size, (BM / TM) * (BN / TN): given by the host, as sizes cannot be computed here.
layout(local_size_x_id = 7) in;

const uint THREADS = (BM / TM) * (BN / TN);
const uint A_LOADS = (BM * BK + THREADS - 1) / THREADS, B_LOADS = (BK * BN + THREADS - 1) / THREADS;
// Rows of a tile row k in shared memory: 4 words of padding keep the vec4s aligned and spread a
// subgroup's stores along k over the banks.
const uint A_ROW = BM + 4, B_ROW = BN + 4;
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

// k-major tiles of op(A) and op(B).
shared vec4 a_tile[BK * A_ROW / 4];
shared vec4 b_tile[BK * B_ROW / 4];

// Element e of the A tile at (row0, k0): op(A)[m][k] is A[m][k], or A[k][m] when transposed;
// consecutive e follow A's contiguous axis. 0 outside the matrix.
void a_position(uint e, out uint m, out uint k) {
  m = TRANSPOSE_A ? e % BM : e / BK;
  k = TRANSPOSE_A ? e / BM : e % BK;
}
float load_a(uint e, uint a_base, uint row0, uint k0) {
  uint m, k;
  a_position(e, m, k);
  const uint gm = row0 + m, gk = k0 + k;
  if (e >= BM * BK || gm >= pc.M || gk >= pc.K) return 0.0;
  return a[a_base + (TRANSPOSE_A ? gk * pc.lda + gm : gm * pc.lda + gk)];
}
void store_a(uint e, float v) {
  uint m, k;
  a_position(e, m, k);
  if (e < BM * BK) a_tile[(k * A_ROW + m) / 4][m % 4] = v;
}

// Likewise for op(B)[k][n]: B[k][n], or B[n][k] when transposed.
void b_position(uint e, out uint k, out uint n) {
  n = TRANSPOSE_B ? e / BK : e % BN;
  k = TRANSPOSE_B ? e % BK : e / BN;
}
float load_b(uint e, uint b_base, uint col0, uint k0) {
  uint k, n;
  b_position(e, k, n);
  const uint gn = col0 + n, gk = k0 + k;
  if (e >= BK * BN || gn >= pc.N || gk >= pc.K) return 0.0;
  return b[b_base + (TRANSPOSE_B ? gn * pc.ldb + gk : gk * pc.ldb + gn)];
}
void store_b(uint e, float v) {
  uint k, n;
  b_position(e, k, n);
  if (e < BK * BN) b_tile[(k * B_ROW + n) / 4][n % 4] = v;
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint tx = tid % (BN / TN), ty = tid / (BN / TN);
  const uint row0 = gl_WorkGroupID.y * BM, col0 = gl_WorkGroupID.x * BN;
  // Offsets of this invocation's runs: run i of rows starts at row_run * i + 4 ty.
  const uint row_run = BM * 4 / TM, col_run = BN * 4 / TN;
  for (uint batch = gl_WorkGroupID.z; batch < pc.batch_count; batch += gl_NumWorkGroups.z) {
    uint a_base = 0, b_base = 0, rest = batch;
    for (uint d = pc.batch_rank; d-- > 0;) {
      const uint i = rest % pc.batch_dims[d];
      rest /= pc.batch_dims[d];
      a_base += i * pc.a_batch_stride[d];
      b_base += i * pc.b_batch_stride[d];
    }
    vec4 acc[TM * TN / 4];  // row r, columns of run j: acc[r * TN / 4 + j]
    for (uint i = 0; i < TM * TN / 4; ++i) acc[i] = vec4(0.0);
    float a_next[A_LOADS], b_next[B_LOADS];
    for (uint i = 0; i < A_LOADS; ++i) a_next[i] = load_a(tid + i * THREADS, a_base, row0, 0);
    for (uint i = 0; i < B_LOADS; ++i) b_next[i] = load_b(tid + i * THREADS, b_base, col0, 0);

    for (uint k0 = 0; k0 < pc.K; k0 += BK) {
      for (uint i = 0; i < A_LOADS; ++i) store_a(tid + i * THREADS, a_next[i]);
      for (uint i = 0; i < B_LOADS; ++i) store_b(tid + i * THREADS, b_next[i]);
      barrier();
      if (k0 + BK < pc.K) {
        for (uint i = 0; i < A_LOADS; ++i) a_next[i] = load_a(tid + i * THREADS, a_base, row0, k0 + BK);
        for (uint i = 0; i < B_LOADS; ++i) b_next[i] = load_b(tid + i * THREADS, b_base, col0, k0 + BK);
      }
      for (uint k = 0; k < BK; ++k) {
        vec4 a_reg[TM / 4], b_reg[TN / 4];
        for (uint i = 0; i < TM / 4; ++i) a_reg[i] = a_tile[(k * A_ROW + i * row_run) / 4 + ty];
        for (uint j = 0; j < TN / 4; ++j) b_reg[j] = b_tile[(k * B_ROW + j * col_run) / 4 + tx];
        for (uint i = 0; i < TM / 4; ++i) {
          for (uint r = 0; r < 4; ++r) {
            for (uint j = 0; j < TN / 4; ++j) {
              acc[(i * 4 + r) * (TN / 4) + j] = fma(vec4(a_reg[i][r]), b_reg[j], acc[(i * 4 + r) * (TN / 4) + j]);
            }
          }
        }
      }
      barrier();
    }

    const uint c_base = batch * pc.M * pc.N;
    for (uint i = 0; i < TM / 4; ++i) {
      for (uint r = 0; r < 4; ++r) {
        const uint gm = row0 + i * row_run + ty * 4 + r;
        if (gm >= pc.M) continue;
        for (uint j = 0; j < TN / 4; ++j) {
          for (uint q = 0; q < 4; ++q) {
            const uint gn = col0 + j * col_run + tx * 4 + q;
            if (gn < pc.N) c[c_base + gm * pc.N + gn] = acc[(i * 4 + r) * (TN / 4) + j][q];
          }
        }
      }
    }
  }
}
