// Scaled dot-product attention on the CPU: softmax(Q K^T * scale + mask) V, computed a block of
// query rows at a time so that the score block stays in cache and never reaches memory.
#pragma once
#include <cstdint>

namespace mnnpy {
class ThreadPool;
namespace cpu {

struct AttentionShape {
  int64_t batch = 0;     // product of the leading dimensions (batch x heads)
  int64_t queries = 0;   // S
  int64_t keys = 0;      // T
  int64_t depth = 0;     // D of Q and K
  int64_t value_depth = 0;  // Dv
  float scale = 1.f;
  // Mask element (b, s, t) at mask[mask_batch_offset[b] + s * mask_row_stride + t * mask_col_stride];
  // strides are 0 along broadcast dimensions.
  const int64_t* mask_batch_offset = nullptr;
  int64_t mask_row_stride = 0, mask_col_stride = 0;
};

// q [batch, S, D], kt [batch, D, T] (K transposed), v [batch, T, Dv], mask (float32, may be null),
// out [batch, S, Dv].
void attention(const AttentionShape& s, const float* q, const float* kt, const float* v, const float* mask,
               float* out, ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
