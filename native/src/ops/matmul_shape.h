// The core dimensions of MatMul's operands (rank >= 2, last two axes the matrix), under its
// transpose flags, and how the stack of products maps to each operand's matrices: what its
// inference checks and its kernels compute with.
#pragma once
#include <cstdint>
#include <vector>

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

// The output's batch dimensions and each operand's element stride along them, 0 where that
// operand broadcasts: product i (row-major over `shape`) reads A's matrix at sum_d i_d a_stride[d].
struct MatMulBatches {
  Shape shape;
  std::vector<int64_t> a_stride, b_stride;
  int64_t count = 1;    // products
  int64_t b_count = 1;  // distinct right-hand matrices
};

inline MatMulBatches matmul_batches(const Shape& a, const Shape& b, const Shape& out, const MatMulDims& d) {
  MatMulBatches r;
  const size_t nb = out.size() - 2;
  r.shape.assign(out.begin(), out.end() - 2);
  r.a_stride.assign(nb, 0);
  r.b_stride.assign(nb, 0);
  int64_t sa = d.M * d.K, sb = d.K * d.N;
  for (size_t i = 0; i < nb; ++i) {
    const size_t dim = nb - 1 - i;  // from the right
    const int64_t ai = (int64_t)a.size() - 3 - (int64_t)i, bi = (int64_t)b.size() - 3 - (int64_t)i;
    if (ai >= 0) {
      if (a[ai] != 1) r.a_stride[dim] = sa;
      sa *= a[ai];
    }
    if (bi >= 0) {
      if (b[bi] != 1) r.b_stride[dim] = sb;
      sb *= b[bi];
      r.b_count *= b[bi];
    }
  }
  r.count = shape_numel(r.shape);
  return r;
}

}  // namespace mnnpy
