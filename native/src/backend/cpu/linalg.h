// Dense linear algebra on stacks of row-major matrices (float32 or float64, computed in that
// type): LU with partial pivoting (blocked, trailing updates through the GEMM), Householder QR,
// Cholesky, cyclic Jacobi for symmetric eigenproblems, one-sided Jacobi SVD, and 1-D
// correlation. Stacks run one matrix per task on the pool; a single matrix threads its GEMMs.
// `info` outputs hold 0 for success, else a 1-based failing pivot.
#pragma once
#include <cstdint>

#include "mnnpy/dtype.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

// sign, logabsdet and det of each n x n matrix.
void lu_determinant(DType dt, const void* a, int64_t batch, int64_t n, void* sign, void* logabsdet, void* det,
                    ThreadPool* pool);

// X = A^-1 B for each matrix (B: n x k, or the identity when b is null). info[i] != 0 when
// A[i] is singular (X[i] is then unspecified).
void lu_solve(DType dt, const void* a, const void* b, int64_t batch, int64_t n, int64_t k, void* x, int32_t* info,
              ThreadPool* pool);

// Lower factor L (A = L L^T, from A's lower triangle), or L^T when `upper`. Zeros elsewhere.
void cholesky(DType dt, const void* a, int64_t batch, int64_t n, bool upper, void* out, int32_t* info,
              ThreadPool* pool);

// A (m x n) = Q R. q: m x qcols (qcols = min(m, n) or m), may be null; r: rrows x n
// (rrows = min(m, n) or m). Householder reflections with LAPACK's sign convention.
void qr(DType dt, const void* a, int64_t batch, int64_t m, int64_t n, int64_t qcols, int64_t rrows, void* q, void* r,
        ThreadPool* pool);

// Eigenvalues ascending (w: n) and eigenvectors as columns (v: n x n, may be null) of the
// symmetric matrix read from A's lower (or upper) triangle.
void eigh(DType dt, const void* a, int64_t batch, int64_t n, bool lower, void* w, void* v, ThreadPool* pool);

// A (m x n) = U diag(s) Vh with s descending (k = min(m, n) values). u: m x ucols and
// vh: vhrows x n (ucols = vhrows = k, or m and n with full matrices); both null when only s
// is wanted.
void svd(DType dt, const void* a, int64_t batch, int64_t m, int64_t n, bool full, void* u, void* s, void* vh,
         ThreadPool* pool);

// out[t] = sum_j a[t + first_lag + j] * v[j] over the j that index inside a, t in [0, count).
// dt: Float32, Float64 or Int64.
void correlate(DType dt, const void* a, int64_t na, const void* v, int64_t nv, int64_t first_lag, int64_t count,
               void* out, ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
