// Layer normalization on the CPU: each row of D values becomes (x - mean) / sqrt(var + eps),
// times gamma and plus beta (per position in the row), in one pass over memory.
#pragma once
#include <cstdint>

namespace mnnpy {
class ThreadPool;
namespace cpu {

// x, y: [rows, d]; gamma, beta: [d] or null (1 and 0).
void layer_norm(const float* x, const float* gamma, const float* beta, int64_t rows, int64_t d, float epsilon,
                float* y, ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
