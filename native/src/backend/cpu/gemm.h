// Matrix multiplication on the CPU. Float32/float64 use a BLAS-style GEMM: B is packed into
// column panels and A into row panels, the work is blocked for the caches and the inner loop is a
// register-blocked micro-kernel picked per SIMD target at run time. Integer and bool products use
// a plain loop with NumPy's semantics (wrapping arithmetic; bool is an or of ands).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "mnnpy/dtype.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

// C[M x N] = A[M x K] * B[K x N], or C += A * B when `accumulate`. C is row-major with row
// stride ldc. A is row-major with row stride lda, or, when trans_a, A^T (K x M) is stored
// row-major with row stride lda; likewise B. Transposes are absorbed by packing, never copied.
// dt: Float32 or Float64. pool may be null (one thread).
void gemm(DType dt, int64_t M, int64_t N, int64_t K, const void* a, int64_t lda, bool trans_a, const void* b,
          int64_t ldb, bool trans_b, void* c, int64_t ldc, bool accumulate, ThreadPool* pool);

// B packed once into the layout the micro-kernels read, for products with a constant right-hand
// side (weights). The layout does not depend on the SIMD target, so a PackedB stays valid
// whichever target runs later.
struct PackedB {
  DType dtype = DType::Float32;
  int64_t k = 0, n = 0;
  std::shared_ptr<void> data;  // 64-byte aligned panels; null when k or n is 0
  size_t nbytes = 0;
};
PackedB pack_b(DType dt, int64_t K, int64_t N, const void* b, int64_t ldb, bool trans_b, ThreadPool* pool);
// C[M x N] (+)= A[M x K] * B with B from pack_b (K and N taken from it).
void gemm_packed(int64_t M, const void* a, int64_t lda, bool trans_a, const PackedB& b, void* c, int64_t ldc,
                 bool accumulate, ThreadPool* pool);

// Integer and bool matrix products with NumPy's matmul semantics, arguments as gemm's.
// dt: Bool, Int8, UInt8, Int16, Int32 or Int64.
void matmul_integral(DType dt, int64_t M, int64_t N, int64_t K, const void* a, int64_t lda, bool trans_a,
                     const void* b, int64_t ldb, bool trans_b, void* c, int64_t ldc, ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
