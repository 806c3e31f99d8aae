// The tiled SGEMM (after matmul_common.glsl): C = op(A) op(B) for a stack of products, with
// shared-memory tiles of TILE4 (vec4: float32, f16vec4: operands rounded to float16 by TO_TILE)
// and float32 accumulation either way.
// A workgroup computes a BM x BN tile of C, each invocation a TM x TN block of it in registers,
// with K taken BK at a time through shared memory. An invocation's rows and columns come in runs
// of 4 (TM/4 runs of rows BM/(TM/4) apart, likewise columns), so it reads shared memory as vec4s
// and neighbouring invocations read and write neighbouring runs. Operands are loaded along their
// contiguous axis (the transposes are specialization constants), so a subgroup reads consecutive
// addresses; the next step's elements are loaded into registers while this step computes.
// Products of the stack times splits of K are the grid's z (matmul_common.glsl): a workgroup sums
// its split's run of K, and where K is split writes the sums to the split's partial tile.
// The includer defines the operands' loads (load_a, load_b and their positions), the grid's
// helpers and store_c(at, column, value), which writes one element of C (or of a partial tile).
layout(constant_id = 3) const uint TM = 4;  // multiples of 4 dividing BM, BN
layout(constant_id = 4) const uint TN = 4;

const uint THREADS = (BM / TM) * (BN / TN);  // the workgroup size (constant 7)
const uint A_LOADS = (BM * BK + THREADS - 1) / THREADS, B_LOADS = (BK * BN + THREADS - 1) / THREADS;
// Rows of a tile row k in shared memory: 4 elements of padding keep the vec4s aligned and spread a
// subgroup's stores along k over the banks.
const uint A_ROW = BM + 4, B_ROW = BN + 4;

// k-major tiles of op(A) and op(B).
shared TILE4 a_tile[BK * A_ROW / 4];
shared TILE4 b_tile[BK * B_ROW / 4];

void store_a(uint e, float v) {
  uint m, k;
  a_position(e, m, k);
  if (e < BM * BK) a_tile[(k * A_ROW + m) / 4][m % 4] = TO_TILE(v);
}
void store_b(uint e, float v) {
  uint k, n;
  b_position(e, k, n);
  if (e < BK * BN) b_tile[(k * B_ROW + n) / 4][n % 4] = TO_TILE(v);
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint tx = tid % (BN / TN), ty = tid / (BN / TN);
  const uint row0 = gl_WorkGroupID.y * BM, col0 = gl_WorkGroupID.x * BN;
  // Offsets of this invocation's runs: run i of rows starts at row_run * i + 4 ty.
  const uint row_run = BM * 4 / TM, col_run = BN * 4 / TN;
  uint k_begin, k_end, first_batch, batch_step;
  split_of_workgroup(k_begin, k_end, first_batch, batch_step);
  for (uint batch = first_batch; batch < pc.batch_count; batch += batch_step) {
    uint a_base, b_base;
    batch_bases(batch, a_base, b_base);
    vec4 acc[TM * TN / 4];  // row r, columns of run j: acc[r * TN / 4 + j]
    for (uint i = 0; i < TM * TN / 4; ++i) acc[i] = vec4(0.0);
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
      for (uint k = 0; k < BK; ++k) {
        vec4 a_reg[TM / 4], b_reg[TN / 4];
        for (uint i = 0; i < TM / 4; ++i) a_reg[i] = vec4(a_tile[(k * A_ROW + i * row_run) / 4 + ty]);
        for (uint j = 0; j < TN / 4; ++j) b_reg[j] = vec4(b_tile[(k * B_ROW + j * col_run) / 4 + tx]);
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

    const uint c_at = c_base(batch);
    for (uint i = 0; i < TM / 4; ++i) {
      for (uint r = 0; r < 4; ++r) {
        const uint gm = row0 + i * row_run + ty * 4 + r;
        if (gm >= pc.M) continue;
        for (uint j = 0; j < TN / 4; ++j) {
          for (uint q = 0; q < 4; ++q) {
            const uint gn = col0 + j * col_run + tx * 4 + q;
            if (gn < pc.N) store_c(c_at + gm * pc.N + gn, gn, acc[(i * 4 + r) * (TN / 4) + j][q]);
          }
        }
      }
    }
  }
}
