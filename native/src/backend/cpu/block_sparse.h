// Block-sparse products with a constant weight, the "block_sparse" scheme of MatMul and of 1x1
// convolutions (Conv2D, Conv2DBlocked). At plan time a weight W [N x K] (rows: output channels)
// whose zeros come in blocks of block_n output rows x block_k input columns is stored in BCSR
// (block compressed sparse rows): per block row the column indices of its nonzero blocks and their
// values. The kernel computes y(n, m) = act(sum_k W(n, k) x(k, m) + bias[n]) for many columns m
// (pixels, tokens), vectorized over m, threads over column chunks and block rows.
//
// Each output adds its nonzero blocks' products in BCSR order (block columns ascending, then the
// block's columns), each product fused into the running sum (one rounding), starting from zero, then
// adds the bias: the same operations on every SIMD target, so every target gives the same bits.
// Against a dense product of the same weights the result differs only by the order of summation:
// at most about (nonzeros of the row) float32 ulps of sum |W(n,k) x(k,m)|.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ops/conv_common.h"
#include "ops/block_sparse_settings.h"
#include "ops/conv_shape.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

struct BlockSparseMatrix {
  int64_t n = 0, k = 0;           // W's shape
  int64_t block_n = 1, block_k = 1;
  std::vector<int64_t> row_ptr;   // n / block_n + 1 offsets into block_cols
  std::vector<int32_t> block_cols;  // per nonzero block: its block column (columns block_k * c ...)
  // Per nonzero block, block_k x block_n values: column ki of the block, then its rows, so that
  // the kernel broadcasts consecutive values against one loaded vector of x.
  conv_common::AlignedFloats values;

  int64_t blocks() const { return (int64_t)block_cols.size(); }
  int64_t stored_values() const { return blocks() * block_n * block_k; }
  double sparsity() const { return n > 0 && k > 0 ? 1.0 - (double)stored_values() / ((double)n * (double)k) : 0.0; }
  size_t nbytes() const {
    return row_ptr.size() * sizeof(int64_t) + block_cols.size() * sizeof(int32_t) + values.size() * sizeof(float);
  }
  std::string scheme_name() const;  // "block_sparse_4x4"
};

// W(r, c) = w[r * row_stride + c * col_stride]; block_n divides n and block_k divides k. A block
// is stored unless all its values compare equal to zero.
BlockSparseMatrix block_sparse_from_dense(const float* w, int64_t n, int64_t k, int64_t row_stride,
                                          int64_t col_stride, int64_t block_n, int64_t block_k);

// The BCSR form of W (as block_sparse_from_dense takes it) when block_sparse_settings() choose the
// sparse scheme for it (its block shape, else the candidate 8x1, 4x4, 4x1, 2x1, 1x4 or 1x1 of least
// estimated cost, whose share of values in all-zero blocks reaches the threshold); an empty matrix
// (n == 0) otherwise.
BlockSparseMatrix choose_block_sparse(const float* w, int64_t n, int64_t k, int64_t row_stride, int64_t col_stride);

// Where element (row, m) of an operand lives: rows are input channels for x, output channels for
// y; m the column (pixel, token). Address = (row / row_group) * group_stride + (row % row_group) *
// row_stride + m * m_stride, per image at image_stride. Row-major [M x K] activations: row_group
// >= K, row_stride 1, m_stride K. NCHW planes: row_stride H*W, m_stride 1. The blocked channel
// layout [C/8, H, W, 8]: row_group 8, group_stride H*W*8, row_stride 1, m_stride 8.
struct SparseOperandLayout {
  int64_t row_group = INT64_MAX, group_stride = 0, row_stride = 0, m_stride = 0, image_stride = 0;
};

// y(n, m) = act(sum_k W(n, k) x(k, m) + bias[n] + residual(n, m)) for m in [0, M) of each of
// `images`. bias and residual (laid out as y) may be null.
void block_sparse_product(const BlockSparseMatrix& w, int64_t images, int64_t M, const float* x,
                          const SparseOperandLayout& x_layout, float* y, const SparseOperandLayout& y_layout,
                          const float* bias, const float* residual, const ConvActivation& act, ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
