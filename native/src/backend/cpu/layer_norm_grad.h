// Backward pass of layer normalization on the CPU, fused: each row is read while it sits in L1
// (mean, variance, the two row sums, the input gradient), and gamma's and beta's gradients are
// summed per fixed block of rows, then over the blocks in order (results do not depend on the
// thread count).
#pragma once
#include <cstddef>
#include <cstdint>

namespace mnnpy {
class ThreadPool;
namespace cpu {

// Row blocks (and so partial sums) used for `rows` rows: depends on the shape only.
int64_t layer_norm_grad_blocks(int64_t rows);

// x, g, dx: [rows, d]; gamma: [d] or null (ones); dgamma, dbeta: [d]. scratch holds
// 2 * layer_norm_grad_blocks(rows) * d floats.
void layer_norm_grad(const float* x, const float* g, const float* gamma, int64_t rows, int64_t d, float epsilon,
                     float* dx, float* dgamma, float* dbeta, float* scratch, ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
