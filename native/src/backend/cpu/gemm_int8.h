// Integer GEMM on 8-bit operands: C[M x N] (int32) = sum_k A[m, k] * B[k, n] with A uint8 or int8
// (activations) and B int8 or uint8 (weights), zero points applied in the epilogue:
//   (A - a_zero) (B - b_zero) = A B - a_zero colsum(B) - b_zero rowsum(A) + K a_zero b_zero,
// so the inner loop multiplies the stored bytes only. B is packed once into panels of 16 columns
// with its column sums; a uint8 B is stored as B - 128 (int8) and the shift goes into b_zero.
// Every SIMD target gives the same int32 results (arithmetic modulo 2^32, as ONNX's int32):
//   AVX3_DL: VNNI vpdpbusd (u8 x s8 -> s32; an int8 A is stored as A + 128 and the shift is taken
//            back with 128 colsum(B));
//   AVX3, AVX2: bytes widened to int16 and multiplied by vpmaddwd (pairs of products summed into
//            int32, which never saturates for 8-bit values); on AVX2, when B's depth pairs are
//            small enough that vpmaddubsw's int16 pair sums cannot saturate (pairs_fit_u8s8),
//            A as bytes (as VNNI's) by vpmaddubsw;
//   SCALAR: a plain loop.
// The float epilogue (dynamic quantization) is out = fma(float(C), row_scale[m] * col_scale[n],
// bias[n]), one rounding of the product of the scales and one of the fused multiply-add, on every
// target.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

namespace mnnpy {
class ThreadPool;
namespace cpu {
namespace quantized_elementwise_detail {
struct BinaryParams;  // quantized_elementwise.h
}

constexpr int64_t kInt8Panel = 16;  // columns of B per packed panel
constexpr int64_t kInt8Depth = 4;   // depths of B per packed group (one int32 lane of bytes)

// B packed for gemm_int8: panel p, depth group g, column c, depth j (4 bytes per column and group)
// at data[(p * groups + g) * 64 + c * 4 + j]; zero past K and N. The layout is the same on every
// target, so packed weights survive a change of target.
struct PackedInt8B {
  int64_t k = 0, n = 0;
  int64_t groups = 0;      // ceil(K / 4)
  bool b_signed = true;    // the operand's type; a uint8 B is stored as B - 128
  std::shared_ptr<int8_t> data;
  std::shared_ptr<int32_t> col_sums;  // of the stored (int8) values, padded to whole panels
  // Every pair of depths (4j, 4j + 1), (4j + 2, 4j + 3) of a column has |b0| + |b1| <= 128
  // (7-bit weights, as quantizers with reduce_range make): AVX2 then multiplies by vpmaddubsw,
  // whose int16 pair sums cannot saturate, twice as many products per instruction, same sums.
  bool pairs_fit_u8s8 = false;
  size_t nbytes = 0;                  // of both
};

// B[K x N], element (k, n) at b[k * ldb + n] (or b[n * ldb + k] when trans_b), int8 or uint8.
PackedInt8B pack_int8_b(int64_t K, int64_t N, const void* b, int64_t ldb, bool trans_b, bool b_signed,
                        ThreadPool* pool);

struct Int8Epilogue {
  // Zero points: A's of row m at a_zero[m * a_zero_step], B's of column n at b_zero[n * b_zero_step]
  // (step 0: one for all); null: 0.
  const int32_t* a_zero = nullptr;
  int64_t a_zero_step = 0;
  const int32_t* b_zero = nullptr;
  int64_t b_zero_step = 0;
  // Float output when row_scale is set: fma(float(C), row_scale[m] * col_scale[n], bias[n]) (no
  // bias: 0); C is int32 otherwise.
  const float* row_scale = nullptr;
  const float* col_scale = nullptr;
  const float* bias = nullptr;
  // Float output only: an elementwise unary op (an ew::UnaryCode, run by cpu::unary) applied to
  // each tile's rows after the bias, while they are in cache; -1: none.
  int activation = -1;
  // 8-bit output when requant_multiplier is set (static quantization, ONNX's QLinearConv): the
  // sum plus requant_bias[n] (int32, wrapping; null: 0) becomes
  //   clamp(round_half_even(float(sum) * requant_multiplier[n]), out_low - out_zero, out_high - out_zero) + out_zero
  // (requant_int8.h), one byte per element: int8 when out_low < 0, else uint8.
  const float* requant_multiplier = nullptr;
  const int32_t* requant_bias = nullptr;
  int32_t out_zero = 0, out_low = 0, out_high = 255;
  // 8-bit output only: a residual added to the requantized output as ONNX's QLinearAdd of the
  // two computes it (quantized_elementwise.h; residual_add: its parameters, the output being its
  // a and the residual its b), element (m, n) at residual[m * ldc + n]; null: none. The
  // requantized output is not stored on the way.
  const uint8_t* residual = nullptr;
  const quantized_elementwise_detail::BinaryParams* residual_add = nullptr;
  // A's rows may be read up to whole groups of 4 depths (ceil(K / 4) * 4 <= lda bytes, the last
  // row's too: the caller's buffer holds them), and up to whole tiles of 64 depths where lda
  // holds them (AMX); the bytes past K meet B's zero padding.
  bool a_rows_padded = false;
};

// C[M x N] (row stride ldc in elements, int32, float32 or 8-bit by the epilogue) from A[M x K] (row stride lda,
// int8 when a_signed else uint8) and B packed by pack_int8_b. pool may be null (one thread).
void gemm_int8(int64_t M, const void* a, int64_t lda, bool a_signed, const PackedInt8B& b, const Int8Epilogue& ep,
               void* c, int64_t ldc, ThreadPool* pool);

// Rows of float32 x[M x K] (row stride ldx) quantized as ONNX's DynamicQuantizeLinear does for a
// whole tensor, per row: scale = (max(x, 0) - min(x, 0)) / 255 (1 when that is 0), zero =
// round(-min(x, 0) / scale), q = saturate_uint8(round(x / scale) + zero), rounding half to even.
void quantize_rows_uint8(int64_t M, int64_t K, const float* x, int64_t ldx, uint8_t* q, float* scale, int32_t* zero,
                         ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
