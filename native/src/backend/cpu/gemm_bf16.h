// bfloat16 matrix products for precision "low" on the CPU: inputs rounded to bf16 (round to nearest
// even), products accumulated in float32. Two hardware paths, picked at run time by CPUID:
//   "amx":         AMX-BF16 tiles (TDPBF16PS), after the kernel granted this process the tile data
//                  state (arch_prctl ARCH_REQ_XCOMP_PERM);
//   "avx512_bf16": AVX512_BF16 dot products of bf16 pairs (VDPBF16PS).
// Highway has no target with these instructions, so the kernels are compiler intrinsics in
// functions compiled for those instruction sets alone and called only when CPUID reports them.
// A portable reference path with the same arithmetic shape runs only where a caller asks for it
// (tests), never as a fallback: without the hardware, plans stay float32.
//
// Layouts. B (the constant right-hand matrix, weights) is packed once into VNNI pairs, in panels of
// 32 columns: [Np/32][Kp/2][32][2], element (k, n) at (n / 32) * Kp * 32 + (k / 2) * 64 +
// (n % 32) * 2 + k % 2, with K padded with zeros to Kp (a multiple of 32, one AMX tile's depth) and
// N to Np (a multiple of 32). Each panel is the [K/2][N][2] pair layout of its 32 columns, so a
// tile or vector of B is 64 or 128 contiguous bytes a row and a panel streams from memory in order. A is converted to bf16
// per block of 32 rows into a row-major [32][Kp] buffer (rows past M and depths past K zero).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/thread_buffers.h"
#include "ops/conv_shape.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

enum class Bf16Path { None, Reference, Avx512Bf16, Amx };

// The path this CPU runs bf16 products on (None without AMX-BF16 and AVX512_BF16, or when the kernel
// refuses the AMX tile state and AVX512_BF16 is absent). Detected once per process.
Bf16Path bf16_hardware_path();
// The path plans at precision "low" use: the best hardware one, or the one a test chose.
Bf16Path bf16_plan_path();
// Tests only: plans at "low" use `path` (Reference, or a hardware path this CPU has; throws
// ValueError otherwise), or again the best hardware path when `path` is None.
void set_bf16_plan_path(Bf16Path path);
const char* bf16_path_name(Bf16Path path);  // "amx", "avx512_bf16", "reference", "none"
Bf16Path bf16_path_from_name(const std::string& name);  // throws ValueError naming the known ones
// The hardware paths this CPU can run, best first (an AMX CPU has AVX512_BF16 too).
std::vector<Bf16Path> bf16_hardware_paths();
inline bool bf16_gemm_available() { return bf16_plan_path() != Bf16Path::None; }

constexpr int64_t kBf16DepthStep = 32;   // Kp is a multiple of this (an AMX tile's 32 bf16)
constexpr int64_t kBf16ColumnStep = 32;  // Np is a multiple of this (two 16-column tiles)
constexpr int64_t kBf16RowBlock = 32;    // rows of A converted and multiplied together

// float32 -> bf16 bits, round to nearest even; NaN stays NaN (quieted), infinities and subnormals
// round like any other value.
inline uint16_t float_to_bf16(uint32_t bits) {
  if ((bits & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((bits >> 16) | 0x0040u);
  return (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}
void floats_to_bf16(const float* x, int64_t n, uint16_t* out);

struct PackedBf16B {
  int64_t k = 0, n = 0, k_padded = 0, n_padded = 0;
  std::shared_ptr<uint16_t> data;  // [n_padded / 32][k_padded / 2][32][2], 64-byte aligned
  size_t nbytes = 0;
};
// B[K x N] row-major with row stride ldb, or (trans_b) B^T [N x K] row-major with row stride ldb.
PackedBf16B pack_b_bf16(int64_t K, int64_t N, const float* b, int64_t ldb, bool trans_b);

// Fills rows [m0, m0 + rows) of A as bf16 into dst ([rows][kp], row stride kp), zeros past K.
using Bf16RowFiller = std::function<void(int64_t m0, int64_t rows, uint16_t* dst, int64_t kp)>;

// Where the product goes: C's element (m, n) at c[m * row_stride + n * col_stride], plus bias[n]
// (when given), then the activation.
struct Bf16Output {
  float* c = nullptr;
  int64_t row_stride = 0, col_stride = 1;
  const float* bias = nullptr;
  ConvActivation act;
};

// C[M x N] = A[M x K] * B with B from pack_b_bf16. A row-major with row stride lda, or (trans_a)
// A^T [K x M] row-major with row stride lda. C row-major with row stride ldc. path: a hardware
// path this CPU has, or Reference.
void gemm_bf16_packed(int64_t M, const float* a, int64_t lda, bool trans_a, const PackedBf16B& b, float* c,
                      int64_t ldc, ThreadPool* pool, Bf16Path path);
void gemm_bf16_packed(int64_t M, const float* a, int64_t lda, bool trans_a, const PackedBf16B& b,
                      const Bf16Output& out, ThreadPool* pool, Bf16Path path);
// The general form: A's rows from `fill`, C through `out`.
void gemm_bf16_rows(int64_t M, const Bf16RowFiller& fill, const PackedBf16B& b, const Bf16Output& out,
                    ThreadPool* pool, Bf16Path path);
// The most general form: A's rows from `fill`; each block of results goes to `store`, which
// writes rows [m0, m0 + rows) and columns [col0, col0 + cols) of C (columns past N left out)
// from result (row r, column j at result[r * result_stride + j]) wherever and however it wants.
using Bf16BlockStore = std::function<void(int64_t m0, int64_t rows, int64_t col0, int64_t cols,
                                          const float* result, int64_t result_stride)>;
void gemm_bf16_rows(int64_t M, const Bf16RowFiller& fill, const PackedBf16B& b, const Bf16BlockStore& store,
                    ThreadPool* pool, Bf16Path path);
// A already bf16 (converted once by the caller, so that threads splitting B's columns do not
// convert the same rows again): rows of b.k_padded values with zeros past K, row stride
// b.k_padded, round_up(M, kBf16RowBlock) rows with those past M zero.
void gemm_bf16_prepared(int64_t M, const uint16_t* a, const PackedBf16B& b, const Bf16BlockStore& store,
                        ThreadPool* pool, Bf16Path path);
// Row blocks of 32 that gemm_bf16_rows gives threads no more than one task each of: below this many,
// B's columns are split too, and each thread converts its rows of A again.
inline bool bf16_rows_are_few(int64_t M, int threads) { return ceil_div(M, kBf16RowBlock) < 2 * threads; }

// Conv2D (NCHW, any group) as per-group products out^T[HoWo x Cout_g] = cols^T[HoWo x K] * W_g^T:
// the weights are packed once per group, the im2col rows of 32 output pixels are written straight
// as bf16, and bias and activation applied as the results are stored into y.
struct Bf16ConvWeights {
  std::vector<PackedBf16B> groups;
  size_t nbytes() const {
    size_t n = 0;
    for (const PackedBf16B& g : groups) n += g.nbytes;
    return n;
  }
};
Bf16ConvWeights conv_bf16_pack_weights(const ConvShape& s, const float* w);
void conv2d_bf16(const ConvShape& s, const float* x, const Bf16ConvWeights& w, const float* bias,
                 const ConvActivation& act, float* y, ThreadPool* pool, Bf16Path path);

}  // namespace cpu
}  // namespace mnnpy
