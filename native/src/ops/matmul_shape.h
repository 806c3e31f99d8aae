// The core dimensions of MatMul's operands (rank >= 2, last two axes the matrix), under its
// transpose flags: what its inference checks and its kernels compute with.
#pragma once
#include <cstdint>

#include "mnnpy/graph.h"

namespace mnnpy {

struct MatMulDims {
  int64_t M, N, K, lda, ldb;  // op(A) is M x K, op(B) K x N; lda, ldb: the operands' row lengths
};

inline MatMulDims matmul_dims(const Shape& a, const Shape& b, bool ta, bool tb) {
  const size_t ra = a.size(), rb = b.size();
  MatMulDims d;
  d.M = ta ? a[ra - 1] : a[ra - 2];
  d.K = ta ? a[ra - 2] : a[ra - 1];
  d.N = tb ? b[rb - 2] : b[rb - 1];
  d.lda = a[ra - 1];
  d.ldb = b[rb - 1];
  return d;
}

}  // namespace mnnpy
