// What the MatMul shaders share (matmul.comp, matmul_f16.comp, matmul_f16_coopmat.comp): the tile
// sizes and transposes as specialization constants (the kernel passes them in this order to every
// one of them), the bindings, the push constants, the grid's z (products times splits of K), and
// the elements of op(A) and op(B) a workgroup stages through shared memory, read along each
// operand's contiguous axis so that a subgroup reads consecutive addresses.
layout(constant_id = 0) const uint BM = 64;  // a workgroup's tile of C: BM x BN
layout(constant_id = 1) const uint BN = 64;
layout(constant_id = 2) const uint BK = 16;  // K taken BK at a time
layout(constant_id = 5) const bool TRANSPOSE_A = false;
layout(constant_id = 6) const bool TRANSPOSE_B = false;
// The workgroup size: given by the host (constant 7), as sizes cannot be computed here.
layout(local_size_x_id = 7) in;

const uint kMaxBatchRank = 6;

// C, or where K is split the splits' partial sums (the kernel's scratch): C's layout, split s
// batch_count * M * N floats in (c_base).
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
  uint splits, split_depth;  // K in `splits` runs of split_depth (a multiple of BK; 1 split: all of K)
} pc;

// The grid's z is products times splits, split fastest: this workgroup's split of K,
// [k_begin, k_end), its first product and the products' step (they loop past the grid's limit).
void split_of_workgroup(out uint k_begin, out uint k_end, out uint first_batch, out uint batch_step) {
  const uint split = gl_WorkGroupID.z % pc.splits;
  k_begin = split * pc.split_depth;
  k_end = min(k_begin + pc.split_depth, pc.K);
  first_batch = gl_WorkGroupID.z / pc.splits;
  batch_step = gl_NumWorkGroups.z / pc.splits;
}

// Where product `batch`'s C (or this split's partial sums of it) starts in binding 0.
uint c_base(uint batch) { return ((gl_WorkGroupID.z % pc.splits) * pc.batch_count + batch) * pc.M * pc.N; }

// Writes element `at` of binding 0 (column `n` of C): as it is, MatMul having no epilogue.
void store_c(uint at, uint n, float v) { c[at] = v; }

// Where the matrices of product `batch` of the stack start in A and B (the batch strides are 0
// where an operand broadcasts).
void batch_bases(uint batch, out uint a_base, out uint b_base) {
  a_base = 0;
  b_base = 0;
  uint rest = batch;
  for (uint d = pc.batch_rank; d-- > 0;) {
    const uint i = rest % pc.batch_dims[d];
    rest /= pc.batch_dims[d];
    a_base += i * pc.a_batch_stride[d];
    b_base += i * pc.b_batch_stride[d];
  }
}

// Element e of the A tile at (row0, k0): op(A)[m][k] is A[m][k], or A[k][m] when transposed;
// consecutive e follow A's contiguous axis. 0 outside the matrix and from k_end on (the split's end).
void a_position(uint e, out uint m, out uint k) {
  m = TRANSPOSE_A ? e % BM : e / BK;
  k = TRANSPOSE_A ? e / BM : e % BK;
}
float load_a(uint e, uint a_base, uint row0, uint k0, uint k_end) {
  uint m, k;
  a_position(e, m, k);
  const uint gm = row0 + m, gk = k0 + k;
  if (e >= BM * BK || gm >= pc.M || gk >= k_end) return 0.0;
  return a[a_base + (TRANSPOSE_A ? gk * pc.lda + gm : gm * pc.lda + gk)];
}

// Likewise for op(B)[k][n]: B[k][n], or B[n][k] when transposed.
void b_position(uint e, out uint k, out uint n) {
  n = TRANSPOSE_B ? e / BK : e % BN;
  k = TRANSPOSE_B ? e % BK : e / BN;
}
float load_b(uint e, uint b_base, uint col0, uint k0, uint k_end) {
  uint k, n;
  b_position(e, k, n);
  const uint gn = col0 + n, gk = k0 + k;
  if (e >= BK * BN || gn >= pc.N || gk >= k_end) return 0.0;
  return b[b_base + (TRANSPOSE_B ? gn * pc.ldb + gk : gk * pc.ldb + gn)];
}

#ifdef HALF_OPERANDS
#include "to_half.glsl"
#endif
