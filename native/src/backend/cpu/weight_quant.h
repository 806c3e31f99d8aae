// Products with block-quantized weights (WeightQuantMatMul, ops/weight_quant.cpp) on the CPU.
// A few rows of activations (decoding, M <= kWeightQuantGemvRows) take a GEMV kernel that reads
// the codes once and turns them into floats in registers; more rows dequantize slabs of the
// weights and run the float GEMM on them.
#pragma once
#include <cstddef>
#include <cstdint>

namespace mnnpy {
class ThreadPool;
namespace cpu {

constexpr int64_t kWeightQuantGemvRows = 16;

// W [n x k]: element (i, j) is (u - z) * scales[i * (k / block) + j / block], with u the unsigned
// code (bits 8: codes[i * k + j]; bits 4: two per byte, even j in the high nibble) and z the
// block's zero point: zeros[same index], or 2^(bits - 1) when zeros is null.
struct BlockQuantWeights {
  const uint8_t* codes = nullptr;
  const float* scales = nullptr;
  const uint8_t* zeros = nullptr;
  int64_t n = 0, k = 0;
  int bits = 4, block = 32;
};

// Floats of scratch weight_quant_matmul needs for m rows of activations.
size_t weight_quant_scratch_floats(int64_t m, const BlockQuantWeights& w);

// c[m x n] = a[m x k] W^T (+ bias[n] when not null); a and c row-major and contiguous.
void weight_quant_matmul(const float* a, int64_t m, const BlockQuantWeights& w, const float* bias, float* c,
                         float* scratch, ThreadPool* pool);


}  // namespace cpu
}  // namespace mnnpy
