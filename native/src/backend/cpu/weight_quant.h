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

// Activations are quantized per row in sub-blocks of this many k (int8_activations).
constexpr int64_t kActivationBlock = 32;

// Bytes of scratch weight_quant_matmul_int8 needs for m rows of activations.
size_t weight_quant_int8_scratch_bytes(int64_t m, const BlockQuantWeights& w);

// The same product with a's rows quantized first (MNN's dynamic quantization of the activations in
// memory mode "low"): per sub-block s of 32 k, symmetric int8 codes q = round_half_even(x * (127 /
// max|x|)) clamped to [-127, 127] and the scale sx_s = max|x| / 127. Then per output, for each s
// inside weight block b,
//   c_s = sum_k u_k q_k - z_b sum_k q_k                     (integers, exact)
//   acc[s % 16] = fma(float(c_s), scale_b * sx_s, acc[s % 16])
// and the output is the 16 accumulators summed in halves (8, 4, 2, 1), plus the bias: the same
// bits on every SIMD target. A row holding inf or NaN gives NaN outputs.
void weight_quant_matmul_int8(const float* a, int64_t m, const BlockQuantWeights& w, const float* bias, float* c,
                              void* scratch, ThreadPool* pool);

// Its AMX-INT8 path (weight_quant_amx.cpp), taken on the AVX3_DL target where the CPU and OS allow
// AMX-INT8 and gemm_int8's AMX setting takes the product (int8_amx_chosen: 16 rows and more by
// default): the activation codes in k order (codes + i * k, rows padded with zeros to a multiple
// of 16), their scales and sums per sub-block as the vector path has them; the same bits.
bool weight_quant_amx_usable();
void weight_quant_int8_amx(const int8_t* codes, const float* x_scales, const int32_t* x_sums, int64_t m,
                           const BlockQuantWeights& w, const float* bias, float* c, ThreadPool* pool);


}  // namespace cpu
}  // namespace mnnpy
