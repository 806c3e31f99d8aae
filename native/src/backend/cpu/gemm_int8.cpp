// Integer GEMM on 8-bit operands (gemm_int8.h), compiled per SIMD target. B comes packed in
// panels of 16 columns and groups of 4 depths; A is packed per call into row groups of the
// micro-kernel's height in the form its target multiplies (bytes for VNNI, int16 pairs for
// vpmaddwd), with its row sums. Threads take tiles of C: blocks of rows (sized so that their
// packed A stays in L2) times blocks of panels. A micro-kernel sums one tile over the whole depth
// into registers; the epilogue then applies zero points (and scales) to it and writes it.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/gemm_int8.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "backend/cpu/elementwise.h"
#include "backend/cpu/gemm_int8.h"
#include "backend/cpu/gemm_int8_amx.h"
#include "backend/cpu/simd_shared-inl.h"
#include "backend/cpu/thread_buffers.h"
#include "mnnpy/aligned_memory.h"
#include "mnnpy/runtime_info.h"
#include "mnnpy/thread_pool.h"

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#include <immintrin.h>
#endif

#ifndef MNNPY_GEMM_INT8_SHARED_ONCE
#define MNNPY_GEMM_INT8_SHARED_ONCE
namespace mnnpy {
namespace cpu {
namespace gemm_int8_detail {

constexpr int64_t kGroupBytes = kInt8Panel * kInt8Depth;  // one depth group of one panel: 64 bytes
constexpr int64_t kL2BlockBytes = 192 << 10;  // a task's packed rows of A, kept in L2
constexpr int64_t kGrainMacs = int64_t(1) << 18;  // work below this is not worth a thread

// uint32 arithmetic: int32 results wrap modulo 2^32 as ONNX's do, without undefined behaviour.
inline int32_t wrap(uint32_t v) { return (int32_t)v; }

struct Int8Call {
  int64_t M = 0;
  const void* a = nullptr;
  int64_t lda = 0;
  bool a_signed = false;
  const PackedInt8B* b = nullptr;
  const Int8Epilogue* ep = nullptr;
  void* c = nullptr;
  int64_t ldc = 0;
  ThreadPool* pool = nullptr;
};

// Rounds half to even (the default rounding mode) for |v| < 2^22 in the float adder, on every
// target alike (no library call, no rounding instruction of one target).
constexpr float kRoundShift = 12582912.0f;  // 1.5 * 2^23
inline float round_half_even(float v) { return (v + kRoundShift) - kRoundShift; }

// v clamped to [lo, hi]; NaN (from a row holding NaN or infinity) to lo.
inline float clamp_to(float v, float lo, float hi) { return v >= lo ? (v <= hi ? v : hi) : lo; }

}  // namespace gemm_int8_detail
}  // namespace cpu
}  // namespace mnnpy
#endif  // MNNPY_GEMM_INT8_SHARED_ONCE

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
using namespace gemm_int8_detail;

// The micro-kernel of this target: kMR rows x kNP panels; packed A holds kAWords int32 words per
// row and depth group.
#if HWY_TARGET == HWY_AVX3_DL
constexpr int kMR = 8, kNP = 2, kAWords = 1;
constexpr const char* kPath = "vnni";
#elif HWY_TARGET == HWY_AVX3
constexpr int kMR = 8, kNP = 2, kAWords = 2;
constexpr const char* kPath = "madd16";
#elif HWY_TARGET == HWY_AVX2
constexpr int kMR = 6, kNP = 1, kAWords = 2;
constexpr const char* kPath = "madd16";
#else
constexpr int kMR = 4, kNP = 1, kAWords = 4;
constexpr const char* kPath = "loop";
#endif
constexpr int64_t kNR = kNP * kInt8Panel;

// One depth group (4 values of A, 0 past K) in this target's packed form, at w.
inline void store_group(const int32_t (&v)[4], bool a_signed, int32_t* HWY_RESTRICT w) {
#if HWY_TARGET == HWY_AVX3_DL
  // Unsigned bytes for vpdpbusd: an int8 A goes in shifted by 128 (the epilogue's correction).
  // Depths past K get 128 then, which meets B's zeros there: the product is 0 whatever A holds.
  const uint32_t shift = a_signed ? 128u : 0u;
  uint32_t word = 0;
  for (int j = 0; j < 4; ++j) word |= (((uint32_t)v[j] + shift) & 0xffu) << (8 * j);
  w[0] = (int32_t)word;
#elif HWY_TARGET == HWY_AVX3
  (void)a_signed;
  // int16 pairs for vpmaddwd against B's even depths (0, 2) and odd ones (1, 3).
  w[0] = (int32_t)(((uint32_t)v[0] & 0xffffu) | ((uint32_t)v[2] << 16));
  w[1] = (int32_t)(((uint32_t)v[1] & 0xffffu) | ((uint32_t)v[3] << 16));
#elif HWY_TARGET == HWY_AVX2
  (void)a_signed;
  // The 4 depths as int16 in order: one 64-bit broadcast meets B's columns sign-extended in place.
  w[0] = (int32_t)(((uint32_t)v[0] & 0xffffu) | ((uint32_t)v[1] << 16));
  w[1] = (int32_t)(((uint32_t)v[2] & 0xffffu) | ((uint32_t)v[3] << 16));
#else
  (void)a_signed;
  for (int j = 0; j < 4; ++j) w[j] = v[j];
#endif
}

// Packs rows [i0, i0 + rows) of A (rows <= kMR), all depth groups, into dst (groups x kMR x
// kAWords words, zero past the rows and K) and stores their row sums. T: A's element type.
template <class T>
void pack_a_rows(const Int8Call& g, int64_t i0, int rows, int64_t groups, int32_t* HWY_RESTRICT dst,
                 int32_t* HWY_RESTRICT row_sums) {
  const int64_t K = g.b->k, full = K / 4;
  const bool a_signed = g.a_signed;
  std::memset(dst, 0, sizeof(int32_t) * groups * kMR * kAWords);
  for (int r = 0; r < rows; ++r) {
    const int64_t m = i0 + r;
    const T* HWY_RESTRICT src = static_cast<const T*>(g.a) + m * g.lda;
    int32_t* HWY_RESTRICT w = dst + r * kAWords;
    int64_t gr = 0;
#if HWY_TARGET == HWY_AVX2
    // 16 depths at a time: widened to int16 in order (this target's form), the 4 groups' 8
    // bytes each stored kMR rows apart; their sum by vpmaddwd with ones (int32 lanes, wrapping as
    // the scalar sum does).
    __m256i lanes = _mm256_setzero_si256();
    for (; gr + 4 <= full; gr += 4, w += 4 * kMR * kAWords) {
      const __m128i bytes = _mm_loadu_si128((const __m128i*)(src + gr * 4));
      const __m256i v = std::is_signed<T>::value ? _mm256_cvtepi8_epi16(bytes) : _mm256_cvtepu8_epi16(bytes);
      lanes = _mm256_add_epi32(lanes, _mm256_madd_epi16(v, _mm256_set1_epi16(1)));
      const __m128d lo = _mm_castsi128_pd(_mm256_castsi256_si128(v));
      const __m128d hi = _mm_castsi128_pd(_mm256_extracti128_si256(v, 1));
      _mm_storel_pd((double*)w, lo);
      _mm_storeh_pd((double*)(w + kMR * kAWords), lo);
      _mm_storel_pd((double*)(w + 2 * kMR * kAWords), hi);
      _mm_storeh_pd((double*)(w + 3 * kMR * kAWords), hi);
    }
    alignas(32) uint32_t lane_sums[8];
    _mm256_store_si256((__m256i*)lane_sums, lanes);
    uint32_t sum = 0;  // modulo 2^32, as the rest of the arithmetic
    for (int j = 0; j < 8; ++j) sum += lane_sums[j];
    for (int64_t k = gr * 4; k < K; ++k) sum += (uint32_t)(int32_t)src[k];
#elif HWY_TARGET == HWY_AVX3_DL
    // 16 depths at a time: the bytes as they are (uint8) or shifted by 128 (int8, store_group's
    // form), one 4-byte word per group stored kMR rows apart; the sum of the stored bytes by
    // vpsadbw, the shift taken back after.
    __m128i byte_sums = _mm_setzero_si128();
    const __m128i shift = _mm_set1_epi8(std::is_signed<T>::value ? (char)0x80 : 0);
    for (; gr + 4 <= full; gr += 4, w += 4 * kMR * kAWords) {
      const __m128i v = _mm_xor_si128(_mm_loadu_si128((const __m128i*)(src + gr * 4)), shift);
      byte_sums = _mm_add_epi64(byte_sums, _mm_sad_epu8(v, _mm_setzero_si128()));
      w[0] = _mm_cvtsi128_si32(v);
      w[kMR * kAWords] = _mm_extract_epi32(v, 1);
      w[2 * kMR * kAWords] = _mm_extract_epi32(v, 2);
      w[3 * kMR * kAWords] = _mm_extract_epi32(v, 3);
    }
    uint32_t sum = (uint32_t)_mm_cvtsi128_si64(byte_sums) + (uint32_t)_mm_extract_epi64(byte_sums, 1);
    if (std::is_signed<T>::value) sum -= 128u * (uint32_t)(gr * 4);
    for (int64_t k = gr * 4; k < K; ++k) sum += (uint32_t)(int32_t)src[k];
#else
    uint32_t sum = 0;  // modulo 2^32, as the rest of the arithmetic
    for (int64_t k = 0; k < K; ++k) sum += (uint32_t)(int32_t)src[k];
#endif
    row_sums[m] = wrap(sum);
    for (; gr < full; ++gr, w += kMR * kAWords) {
      const int32_t v[4] = {src[gr * 4], src[gr * 4 + 1], src[gr * 4 + 2], src[gr * 4 + 3]};
      store_group(v, a_signed, w);
    }
    if (full < groups) {  // the last, partial group
      int32_t v[4] = {0, 0, 0, 0};
      for (int64_t k = full * 4; k < K; ++k) v[k - full * 4] = src[k];
#if HWY_TARGET == HWY_AVX3_DL
      if (a_signed)  // depths past K: 0 after the shift
        for (int64_t k = K; k < groups * 4; ++k) v[k - full * 4] = -128;
#endif
      store_group(v, a_signed, w);
    }
  }
}

void pack_a_group(const Int8Call& g, int64_t i0, int rows, int64_t groups, int32_t* dst, int32_t* row_sums) {
  if (g.a_signed) pack_a_rows<int8_t>(g, i0, rows, groups, dst, row_sums);
  else pack_a_rows<uint8_t>(g, i0, rows, groups, dst, row_sums);
}

// Raw sums of R rows x kNP panels over all depth groups into tile (R x kNR, row stride kNR).
// a: the row group's packed A; b: the first panel, the next at b + panel_stride.
#if HWY_TARGET == HWY_AVX3_DL
template <int R>
__attribute__((target(HWY_TARGET_STR ",avx512vnni"))) HWY_NOINLINE void micro_tile(
    int64_t groups, const int32_t* HWY_RESTRICT a, const int8_t* HWY_RESTRICT b, int64_t panel_stride,
    int32_t* HWY_RESTRICT tile) {
  __m512i acc[R][kNP];
  #pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
    #pragma GCC unroll 16
    for (int p = 0; p < kNP; ++p) acc[i][p] = _mm512_setzero_si512();
  for (int64_t gr = 0; gr < groups; ++gr) {
    __m512i bv[kNP];
    #pragma GCC unroll 16
    for (int p = 0; p < kNP; ++p) bv[p] = _mm512_load_si512((const void*)(b + p * panel_stride + gr * kGroupBytes));
    const int32_t* ag = a + gr * kMR;
    #pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const __m512i ai = _mm512_set1_epi32(ag[i]);
      #pragma GCC unroll 16
      for (int p = 0; p < kNP; ++p) acc[i][p] = _mm512_dpbusd_epi32(acc[i][p], ai, bv[p]);
    }
  }
  #pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
    #pragma GCC unroll 16
    for (int p = 0; p < kNP; ++p) _mm512_storeu_si512((void*)(tile + i * kNR + p * kInt8Panel), acc[i][p]);
}
#elif HWY_TARGET == HWY_AVX3
template <int R>
HWY_NOINLINE void micro_tile(int64_t groups, const int32_t* HWY_RESTRICT a, const int8_t* HWY_RESTRICT b,
                             int64_t panel_stride, int32_t* HWY_RESTRICT tile) {
  __m512i acc[R][kNP];
  #pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
    #pragma GCC unroll 16
    for (int p = 0; p < kNP; ++p) acc[i][p] = _mm512_setzero_si512();
  for (int64_t gr = 0; gr < groups; ++gr) {
    // Each int16 lane holds two depths of one column: the low byte (depths 0, 2) and the high
    // one (1, 3), sign-extended to int16 by shifts.
    __m512i even[kNP], odd[kNP];
    #pragma GCC unroll 16
    for (int p = 0; p < kNP; ++p) {
      const __m512i v = _mm512_load_si512((const void*)(b + p * panel_stride + gr * kGroupBytes));
      even[p] = _mm512_srai_epi16(_mm512_slli_epi16(v, 8), 8);
      odd[p] = _mm512_srai_epi16(v, 8);
    }
    const int32_t* ag = a + gr * kMR * 2;
    #pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const __m512i ae = _mm512_set1_epi32(ag[i * 2]), ao = _mm512_set1_epi32(ag[i * 2 + 1]);
      #pragma GCC unroll 16
      for (int p = 0; p < kNP; ++p) {
        acc[i][p] = _mm512_add_epi32(acc[i][p], _mm512_add_epi32(_mm512_madd_epi16(ae, even[p]),
                                                                 _mm512_madd_epi16(ao, odd[p])));
      }
    }
  }
  #pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
    #pragma GCC unroll 16
    for (int p = 0; p < kNP; ++p) _mm512_storeu_si512((void*)(tile + i * kNR + p * kInt8Panel), acc[i][p]);
}
#elif HWY_TARGET == HWY_AVX2
// One half panel (8 columns) at a time over the whole depth: 16 bytes of B (4 columns x 4
// depths) sign-extended to int16 by one vpmovsxbw and multiplied by the row's 4 depths broadcast
// as one 64-bit word give two int32 partial sums per column, added pairwise at the end.

// Sums of one half panel for kMR (6) rows into acc (12 vectors: row i's columns 0-3 at 2i, 4-7 at
// 2i + 1). In assembly: its 12 accumulators, B's 2 vectors, the broadcast and a product take all
// 16 registers, which GCC's allocator does not manage without spilling accumulators every group.
#define MNNPY_INT8_AVX2_ROW(offset, acc0, acc1)                \
  "vpbroadcastq " #offset "(%[a]), %%ymm14\n\t"                \
  "vpmaddwd %%ymm14, %%ymm12, %%ymm15\n\t"                     \
  "vpaddd %%ymm15, %%ymm" #acc0 ", %%ymm" #acc0 "\n\t"         \
  "vpmaddwd %%ymm14, %%ymm13, %%ymm14\n\t"                     \
  "vpaddd %%ymm14, %%ymm" #acc1 ", %%ymm" #acc1 "\n\t"
#define MNNPY_INT8_AVX2_STORE(index) "vmovdqu %%ymm" #index ", " #index "*32(%[acc])\n\t"
inline void half_panel_6_rows(int64_t groups, const int32_t* a, const int8_t* b, __m256i* acc) {
  static_assert(kMR == 6 && kAWords == 2 && kGroupBytes == 64, "the assembly's strides");
  __asm__ volatile(
      "vpxor %%xmm0, %%xmm0, %%xmm0\n\t"
      "vpxor %%xmm1, %%xmm1, %%xmm1\n\t"
      "vpxor %%xmm2, %%xmm2, %%xmm2\n\t"
      "vpxor %%xmm3, %%xmm3, %%xmm3\n\t"
      "vpxor %%xmm4, %%xmm4, %%xmm4\n\t"
      "vpxor %%xmm5, %%xmm5, %%xmm5\n\t"
      "vpxor %%xmm6, %%xmm6, %%xmm6\n\t"
      "vpxor %%xmm7, %%xmm7, %%xmm7\n\t"
      "vpxor %%xmm8, %%xmm8, %%xmm8\n\t"
      "vpxor %%xmm9, %%xmm9, %%xmm9\n\t"
      "vpxor %%xmm10, %%xmm10, %%xmm10\n\t"
      "vpxor %%xmm11, %%xmm11, %%xmm11\n\t"
      "test %[n], %[n]\n\t"
      "jle 2f\n\t"
      "1:\n\t"
      "vpmovsxbw (%[b]), %%ymm12\n\t"
      "vpmovsxbw 16(%[b]), %%ymm13\n\t"
      MNNPY_INT8_AVX2_ROW(0, 0, 1)
      MNNPY_INT8_AVX2_ROW(8, 2, 3)
      MNNPY_INT8_AVX2_ROW(16, 4, 5)
      MNNPY_INT8_AVX2_ROW(24, 6, 7)
      MNNPY_INT8_AVX2_ROW(32, 8, 9)
      MNNPY_INT8_AVX2_ROW(40, 10, 11)
      "add $64, %[b]\n\t"
      "add $48, %[a]\n\t"
      "dec %[n]\n\t"
      "jnz 1b\n\t"
      "2:\n\t"
      MNNPY_INT8_AVX2_STORE(0) MNNPY_INT8_AVX2_STORE(1) MNNPY_INT8_AVX2_STORE(2) MNNPY_INT8_AVX2_STORE(3)
      MNNPY_INT8_AVX2_STORE(4) MNNPY_INT8_AVX2_STORE(5) MNNPY_INT8_AVX2_STORE(6) MNNPY_INT8_AVX2_STORE(7)
      MNNPY_INT8_AVX2_STORE(8) MNNPY_INT8_AVX2_STORE(9) MNNPY_INT8_AVX2_STORE(10) MNNPY_INT8_AVX2_STORE(11)
      : [a] "+r"(a), [b] "+r"(b), [n] "+r"(groups)
      : [acc] "r"(acc)
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",
        "xmm13", "xmm14", "xmm15", "memory", "cc");
}
#undef MNNPY_INT8_AVX2_ROW
#undef MNNPY_INT8_AVX2_STORE

template <int R>
HWY_NOINLINE void micro_tile(int64_t groups, const int32_t* HWY_RESTRICT a, const int8_t* HWY_RESTRICT b,
                             int64_t panel_stride, int32_t* HWY_RESTRICT tile) {
  (void)panel_stride;  // one panel
  if (R <= 2) {
    // A row or two (a product with a vector): both halves in one pass over B, which then streams
    // through once, with 4 accumulators per row.
    __m256i acc[R][4];
    #pragma GCC unroll 16
    for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = _mm256_setzero_si256();
    for (int64_t gr = 0; gr < groups; ++gr) {
      __m256i bv[4];
      #pragma GCC unroll 4
      for (int q = 0; q < 4; ++q)
        bv[q] = _mm256_cvtepi8_epi16(_mm_load_si128((const __m128i*)(b + gr * kGroupBytes + q * 16)));
      const int32_t* ag = a + gr * kMR * 2;
      #pragma GCC unroll 16
      for (int i = 0; i < R; ++i) {
        int64_t depths;
        std::memcpy(&depths, ag + i * 2, sizeof(depths));
        const __m256i ai = _mm256_set1_epi64x(depths);
        #pragma GCC unroll 4
        for (int q = 0; q < 4; ++q) acc[i][q] = _mm256_add_epi32(acc[i][q], _mm256_madd_epi16(ai, bv[q]));
      }
    }
    #pragma GCC unroll 16
    for (int i = 0; i < R; ++i)
      #pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const __m256i sums = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[i][2 * h], acc[i][2 * h + 1]), 0xd8);
        _mm256_storeu_si256((__m256i*)(tile + i * kNR + h * 8), sums);
      }
    return;
  }
  for (int h = 0; h < 2; ++h) {
    __m256i acc[kMR][2];
    const int8_t* bh = b + h * 32;
    if (R == kMR) {
      half_panel_6_rows(groups, a, bh, &acc[0][0]);
    } else {  // the last rows of A: the same arithmetic in intrinsics
      #pragma GCC unroll 16
      for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_si256();
      for (int64_t gr = 0; gr < groups; ++gr) {
        const __m256i b0 = _mm256_cvtepi8_epi16(_mm_load_si128((const __m128i*)(bh + gr * kGroupBytes)));
        const __m256i b1 = _mm256_cvtepi8_epi16(_mm_load_si128((const __m128i*)(bh + gr * kGroupBytes + 16)));
        const int32_t* ag = a + gr * kMR * 2;
        #pragma GCC unroll 16
        for (int i = 0; i < R; ++i) {
          int64_t depths;
          std::memcpy(&depths, ag + i * 2, sizeof(depths));
          const __m256i ai = _mm256_set1_epi64x(depths);
          acc[i][0] = _mm256_add_epi32(acc[i][0], _mm256_madd_epi16(ai, b0));
          acc[i][1] = _mm256_add_epi32(acc[i][1], _mm256_madd_epi16(ai, b1));
        }
      }
    }
    // Lanes hold (column, depths 0-1) and (column, depths 2-3) of columns 0-3 and of 4-7: hadd
    // sums the pairs as columns 0 1 4 5 | 2 3 6 7 and the 64-bit permute puts them in order.
    #pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const __m256i sums = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[i][0], acc[i][1]), 0xd8);
      _mm256_storeu_si256((__m256i*)(tile + i * kNR + h * 8), sums);
    }
  }
}
#else
template <int R>
HWY_NOINLINE void micro_tile(int64_t groups, const int32_t* HWY_RESTRICT a, const int8_t* HWY_RESTRICT b,
                             int64_t panel_stride, int32_t* HWY_RESTRICT tile) {
  (void)panel_stride;
  uint32_t acc[R][kNR] = {};
  for (int64_t gr = 0; gr < groups; ++gr) {
    const int8_t* bg = b + gr * kGroupBytes;
    const int32_t* ag = a + gr * kMR * 4;
    #pragma GCC unroll 16
    for (int i = 0; i < R; ++i)
      #pragma GCC unroll 16
      for (int c = 0; c < (int)kNR; ++c)
        #pragma GCC unroll 16
        for (int j = 0; j < 4; ++j) acc[i][c] += (uint32_t)(ag[i * 4 + j] * (int32_t)bg[c * 4 + j]);
  }
  #pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
    #pragma GCC unroll 16
    for (int c = 0; c < (int)kNR; ++c) tile[i * kNR + c] = wrap(acc[i][c]);
}
#endif

void micro_tile_rows(int rows, int64_t groups, const int32_t* a, const int8_t* b, int64_t panel_stride,
                     int32_t* tile) {
  static_assert(kMR >= 4 && kMR <= 8, "row dispatch below covers 4 to 8 rows");
  switch (rows) {
    case 1: micro_tile<1>(groups, a, b, panel_stride, tile); break;
    case 2: micro_tile<2>(groups, a, b, panel_stride, tile); break;
    case 3: micro_tile<3>(groups, a, b, panel_stride, tile); break;
#if HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
    case 4: micro_tile<4>(groups, a, b, panel_stride, tile); break;
    case 5: micro_tile<5>(groups, a, b, panel_stride, tile); break;
#endif
#if HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX3
    case 6: micro_tile<6>(groups, a, b, panel_stride, tile); break;
    case 7: micro_tile<7>(groups, a, b, panel_stride, tile); break;
#endif
    default: micro_tile<kMR>(groups, a, b, panel_stride, tile); break;
  }
}

namespace hn = hwy::HWY_NAMESPACE;

// The epilogue's activation on a tile's rows (out: its first row, rows ldc apart), with the
// values of the elementwise op of that code (cpu::unary): ReLU by its formula, GELU by the same
// vector function on vectors of finite values (the elementwise kernel's own fast path), four
// vectors at a time so that their long dependency chains overlap, and the elementwise kernel
// itself for the rest (NaN or infinity in a vector, a partial vector, other codes). Calling that
// kernel on every row of 16 values would cost more than the separate pass it saves.
void activate_tile(int code, float* out, int64_t ldc, int rows, int cols) {
  if (code == ew::kRelu) {
    for (int r = 0; r < rows; ++r) {
      float* HWY_RESTRICT row = out + r * ldc;
      for (int j = 0; j < cols; ++j) row[j] = row[j] > 0 ? row[j] : (row[j] == row[j] ? 0.0f : row[j]);
    }
    return;
  }
  const hn::ScalableTag<float> d;
  const int L = (int)hn::Lanes(d), per_row = cols / L;
  if (code != ew::kGelu || per_row == 0) {
    for (int r = 0; r < rows; ++r) unary(code, DType::Float32, out + r * ldc, out + r * ldc, (size_t)cols);
    return;
  }
  const auto big = hn::Set(d, std::numeric_limits<float>::max());
  auto finite = [&](auto v) { return hn::And(hn::Ge(v, hn::Neg(big)), hn::Le(v, big)); };
  auto at = [&](int index) { return out + (index / per_row) * ldc + (index % per_row) * L; };
  const int count = rows * per_row;  // whole vectors of the tile
  int i = 0;
  for (; i + 4 <= count; i += 4) {
    float *p0 = at(i), *p1 = at(i + 1), *p2 = at(i + 2), *p3 = at(i + 3);
    const auto v0 = hn::LoadU(d, p0), v1 = hn::LoadU(d, p1), v2 = hn::LoadU(d, p2), v3 = hn::LoadU(d, p3);
    if (!hn::AllTrue(d, hn::And(hn::And(finite(v0), finite(v1)), hn::And(finite(v2), finite(v3))))) break;
    const auto g0 = GeluFloat32(d, v0), g1 = GeluFloat32(d, v1), g2 = GeluFloat32(d, v2), g3 = GeluFloat32(d, v3);
    hn::StoreU(g0, d, p0);
    hn::StoreU(g1, d, p1);
    hn::StoreU(g2, d, p2);
    hn::StoreU(g3, d, p3);
  }
  for (; i < count; ++i) unary(code, DType::Float32, at(i), at(i), (size_t)L);
  if (per_row * L < cols) {  // a partial vector at the end of each row
    for (int r = 0; r < rows; ++r) {
      float* tail = out + r * ldc + per_row * L;
      unary(code, DType::Float32, tail, tail, (size_t)(cols - per_row * L));
    }
  }
}

// Writes a tile's valid part through the epilogue: the zero points, then int32 or the float
// scales. The tile's column terms are gathered first so that the row loops are plain vector code.
void finish_tile(const Int8Call& g, int32_t* tile, int64_t i0, int rows, int64_t j0, int cols,
                 const int32_t* row_sums) {
  const PackedInt8B& b = *g.b;
  const Int8Epilogue& ep = *g.ep;
  const uint32_t K = (uint32_t)b.k, b_shift = b.b_signed ? 0u : 128u;
  uint32_t col_sum[kNR], b_zero[kNR];
  float col_scale[kNR], bias[kNR];
  for (int j = 0; j < cols; ++j) {
    const int64_t n = j0 + j;
    col_sum[j] = (uint32_t)b.col_sums.get()[n];
    // Stored B is B - b_shift: (B - zb) = stored - (zb - b_shift).
    b_zero[j] = (ep.b_zero ? (uint32_t)ep.b_zero[n * ep.b_zero_step] : 0u) - b_shift;
    if (ep.row_scale) {
      col_scale[j] = ep.col_scale[n];
      bias[j] = ep.bias ? ep.bias[n] : 0.0f;
    }
  }
#if HWY_TARGET == HWY_AVX3_DL
  // A went in as A + 128: take 128 colsum(B) back.
  const uint32_t a_shift = g.a_signed ? 128u : 0u;
#else
  const uint32_t a_shift = 0u;
#endif
  for (int r = 0; r < rows; ++r) {
    const int64_t m = i0 + r;
    const uint32_t za = ep.a_zero ? (uint32_t)ep.a_zero[m * ep.a_zero_step] : 0u;
    const uint32_t rs = (uint32_t)row_sums[m];
    const uint32_t za_total = za + a_shift;
    const uint32_t* t = reinterpret_cast<const uint32_t*>(tile + r * kNR);
    if (!ep.row_scale) {
      int32_t* out = static_cast<int32_t*>(g.c) + m * g.ldc + j0;
      for (int j = 0; j < cols; ++j)
        out[j] = wrap(t[j] - za_total * col_sum[j] - b_zero[j] * rs + K * za * b_zero[j]);
      continue;
    }
    // Float output: fma(float(acc), row_scale * col_scale, bias), one rounding of each.
    const float row_scale = ep.row_scale[m];
    float* out = static_cast<float*>(g.c) + m * g.ldc + j0;
    for (int j = 0; j < cols; ++j) {
      const int32_t acc = wrap(t[j] - za_total * col_sum[j] - b_zero[j] * rs + K * za * b_zero[j]);
      out[j] = std::fma((float)acc, row_scale * col_scale[j], bias[j]);
    }
  }
  if (ep.row_scale && ep.activation >= 0) {
    activate_tile(ep.activation, static_cast<float*>(g.c) + i0 * g.ldc + j0, g.ldc, rows, cols);
  }
}

#if HWY_TARGET == HWY_AVX3_DL
// AMX-INT8 (gemm_int8_amx.h) hands its blocks of raw sums, A taken as A + 128 like vpdpbusd's,
// to this target's epilogue; a block's row stride is this target's tile width.
static_assert(kNR == kAmxInt8BlockCols, "AMX blocks have the row stride finish_tile reads");
void finish_amx_block(const void* call, int32_t* block, int64_t i0, int rows, int64_t j0, int cols,
                      const int32_t* row_sums) {
  finish_tile(*static_cast<const Int8Call*>(call), block, i0, rows, j0, cols, row_sums);
}
#endif

void GemmInt8Impl(const Int8Call& g) {
#if HWY_TARGET == HWY_AVX3_DL
  if (int8_amx_chosen(g.M, g.b->k)) {
    gemm_int8_amx(g.M, g.a, g.lda, g.a_signed, *g.b, g.pool, &finish_amx_block, &g);
    return;
  }
#endif
  const PackedInt8B& b = *g.b;
  const int64_t M = g.M, N = b.n, groups = b.groups;
  const int64_t row_groups = ceil_div(M, kMR);
  const int64_t a_group_words = groups * kMR * kAWords;
  int32_t* packed_a = reinterpret_cast<int32_t*>(thread_buffer(0, (size_t)(row_groups * a_group_words)));
  int32_t* row_sums = reinterpret_cast<int32_t*>(thread_buffer(1, (size_t)M));
  const int64_t pack_grain = std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(1, kMR * groups * 4));
  parallel_for(g.pool, row_groups, pack_grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      pack_a_group(g, r * kMR, (int)std::min<int64_t>(kMR, M - r * kMR), groups, packed_a + r * a_group_words,
                   row_sums);
    }
  });
  // Tasks: blocks of row groups whose packed A fits in L2, times blocks of column tiles; more
  // tasks than threads so that shares even out.
  const int64_t col_tiles = ceil_div(ceil_div(N, kInt8Panel), kNP);
  const int64_t block_groups =
      std::max<int64_t>(1, std::min(row_groups, kL2BlockBytes / std::max<int64_t>(1, a_group_words * 4)));
  int64_t row_blocks = ceil_div(row_groups, block_groups);
  const int threads = g.pool ? g.pool->num_threads() : 1;
  const int64_t macs = M * N * b.k;
  const int64_t want = threads > 1 ? std::min<int64_t>(4 * threads, std::max<int64_t>(1, macs / kGrainMacs)) : 1;
  int64_t col_blocks = std::min(col_tiles, std::max<int64_t>(1, ceil_div(want, row_blocks)));
  if (row_blocks * col_blocks < want) row_blocks = std::min(row_groups, ceil_div(want, col_blocks));
  const int64_t rows_per_block = ceil_div(row_groups, row_blocks), tiles_per_block = ceil_div(col_tiles, col_blocks);
  row_blocks = ceil_div(row_groups, rows_per_block);
  col_blocks = ceil_div(col_tiles, tiles_per_block);
  const int64_t panel_stride = groups * kGroupBytes;
  parallel_for(g.pool, row_blocks * col_blocks, 1, [&](int64_t t0, int64_t t1) {
    alignas(64) int32_t tile[kMR * kNR];
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t rb = t / col_blocks, cb = t % col_blocks;
      const int64_t rg0 = rb * rows_per_block, rg1 = std::min(row_groups, rg0 + rows_per_block);
      const int64_t ct0 = cb * tiles_per_block, ct1 = std::min(col_tiles, ct0 + tiles_per_block);
      for (int64_t ct = ct0; ct < ct1; ++ct) {
        const int64_t j0 = ct * kNR;
        const int cols = (int)std::min<int64_t>(kNR, N - j0);
        const int8_t* bp = b.data.get() + ct * kNP * panel_stride;
        for (int64_t rg = rg0; rg < rg1; ++rg) {
          const int64_t i0 = rg * kMR;
          const int rows = (int)std::min<int64_t>(kMR, M - i0);
          micro_tile_rows(rows, groups, packed_a + rg * a_group_words, bp, panel_stride, tile);
          finish_tile(g, tile, i0, rows, j0, cols, row_sums);
        }
      }
    }
  });
}


// v clamped to [lo, hi]; NaN to lo: the comparisons the scalar tail makes, lane by lane.
template <class D, class V>
HWY_INLINE V clamp_lanes(D d, V v, float lo, float hi) {
  const V vlo = hn::Set(d, lo), vhi = hn::Set(d, hi);
  return hn::IfThenElse(hn::Ge(v, vlo), hn::IfThenElse(hn::Le(v, vhi), v, vhi), vlo);
}

// Rows [m0, m1) of quantize_rows_uint8. Every step is an exact IEEE operation (comparisons,
// selections, one division, the rounding additions), so the vectors give the scalar tail's bytes.
void QuantizeRowsImpl(int64_t m0, int64_t m1, int64_t K, const float* x, int64_t ldx, uint8_t* q, float* scale,
                      int32_t* zero) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<uint8_t, decltype(df)> du8;
  const int64_t L = (int64_t)hn::Lanes(df);
  for (int64_t m = m0; m < m1; ++m) {
    const float* HWY_RESTRICT row = x + m * ldx;
    // min(x, 0) and max(x, 0), NaN skipped (a comparison with NaN keeps the running value).
    auto vlow = hn::Zero(df), vhigh = hn::Zero(df);
    int64_t k = 0;
    for (; k + L <= K; k += L) {
      const auto v = hn::LoadU(df, row + k);
      vlow = hn::IfThenElse(hn::Lt(v, vlow), v, vlow);
      vhigh = hn::IfThenElse(hn::Lt(vhigh, v), v, vhigh);
    }
    HWY_ALIGN float lows[hn::MaxLanes(df)], highs[hn::MaxLanes(df)];
    hn::Store(vlow, df, lows);
    hn::Store(vhigh, df, highs);
    float low = 0.0f, high = 0.0f;
    for (int64_t j = 0; j < L; ++j) {
      low = lows[j] < low ? lows[j] : low;
      high = high < highs[j] ? highs[j] : high;
    }
    for (int64_t t = k; t < K; ++t) {
      low = row[t] < low ? row[t] : low;
      high = high < row[t] ? row[t] : high;
    }
    float s = (high - low) / 255.0f;
    if (s == 0.0f) s = 1.0f;
    const float zp = round_half_even(clamp_to(-low / s, 0.0f, 255.0f));
    uint8_t* HWY_RESTRICT out = q + m * K;
    const auto vs = hn::Set(df, s), vzp = hn::Set(df, zp), vshift = hn::Set(df, kRoundShift);
    const auto v0 = hn::Zero(df), v255 = hn::Set(df, 255.0f);
    for (k = 0; k + L <= K; k += L) {
      // Clamped before rounding (where the rounding is exact; NaN to -512), saturated after: by
      // then every lane is a finite whole number, which Min/Max clamp and the conversion keeps.
      const auto c = clamp_lanes(df, hn::Div(hn::LoadU(df, row + k), vs), -512.0f, 512.0f);
      const auto v = hn::Add(hn::Sub(hn::Add(c, vshift), vshift), vzp);
      hn::StoreU(hn::DemoteTo(du8, round_in_range(hn::Min(hn::Max(v, v0), v255))), du8, out + k);
    }
    for (; k < K; ++k) {
      const float v = round_half_even(clamp_to(row[k] / s, -512.0f, 512.0f)) + zp;
      out[k] = (uint8_t)clamp_to(v, 0.0f, 255.0f);
    }
    scale[m] = s;
    zero[m] = (int32_t)zp;
  }
}

void Int8InfoImpl(const char** path, int* mr, int* nr) {
  *path = kPath;
  *mr = kMR;
  *nr = (int)kNR;
#if HWY_TARGET == HWY_AVX3_DL
  if (int8_amx_setting().on && int8_amx_available()) {  // for products at least int8_amx_setting()'s size
    *path = "amx";
    *mr = (int)kAmxInt8BlockRows;
    *nr = (int)kAmxInt8BlockCols;
  }
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
HWY_EXPORT(GemmInt8Impl);
HWY_EXPORT(Int8InfoImpl);
HWY_EXPORT(QuantizeRowsImpl);

using gemm_int8_detail::Int8Call;

PackedInt8B pack_int8_b(int64_t K, int64_t N, const void* b, int64_t ldb, bool trans_b, bool b_signed,
                        ThreadPool* pool) {
  PackedInt8B out;
  out.k = K;
  out.n = N;
  out.b_signed = b_signed;
  out.groups = ceil_div(K, kInt8Depth);
  // Whole micro-tiles of panels (the widest target reads two at a time), zero-filled.
  const int64_t panels = round_up(ceil_div(N, kInt8Panel), 2);
  const size_t data_bytes = (size_t)(panels * std::max<int64_t>(out.groups, 1) * gemm_int8_detail::kGroupBytes);
  int8_t* data = static_cast<int8_t*>(allocate_aligned(data_bytes));
  out.data = std::shared_ptr<int8_t>(data, [](int8_t* p) { std::free(p); });
  int32_t* sums = static_cast<int32_t*>(allocate_aligned(sizeof(int32_t) * panels * kInt8Panel));
  out.col_sums = std::shared_ptr<int32_t>(sums, [](int32_t* p) { std::free(p); });
  out.nbytes = data_bytes + sizeof(int32_t) * panels * kInt8Panel;
  const int64_t groups = out.groups;
  const int64_t rs = trans_b ? 1 : ldb, cs = trans_b ? ldb : 1;
  parallel_for(pool, panels, std::max<int64_t>(1, (int64_t(1) << 15) / std::max<int64_t>(1, groups * 64)),
               [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      int8_t* dst = data + p * groups * gemm_int8_detail::kGroupBytes;
      std::memset(dst, 0, (size_t)(groups * gemm_int8_detail::kGroupBytes));
      for (int64_t c = 0; c < kInt8Panel; ++c) {
        const int64_t n = p * kInt8Panel + c;
        uint32_t sum = 0;
        if (n < N) {
          for (int64_t k = 0; k < K; ++k) {
            const int32_t v = b_signed ? (int32_t)static_cast<const int8_t*>(b)[k * rs + n * cs]
                                       : (int32_t)static_cast<const uint8_t*>(b)[k * rs + n * cs] - 128;
            dst[(k / 4) * gemm_int8_detail::kGroupBytes + c * 4 + (k % 4)] = (int8_t)v;
            sum += (uint32_t)v;
          }
        }
        sums[n] = (int32_t)sum;
      }
    }
  });
  return out;
}

void gemm_int8(int64_t M, const void* a, int64_t lda, bool a_signed, const PackedInt8B& b, const Int8Epilogue& ep,
               void* c, int64_t ldc, ThreadPool* pool) {
  if (M == 0 || b.n == 0) return;
  Int8Call g;
  g.M = M, g.a = a, g.lda = lda, g.a_signed = a_signed, g.b = &b, g.ep = &ep, g.c = c, g.ldc = ldc, g.pool = pool;
  HWY_DYNAMIC_DISPATCH(GemmInt8Impl)(g);
}


void quantize_rows_uint8(int64_t M, int64_t K, const float* x, int64_t ldx, uint8_t* q, float* scale, int32_t* zero,
                         ThreadPool* pool) {
  parallel_for(pool, M, std::max<int64_t>(1, (int64_t(1) << 14) / std::max<int64_t>(1, K)), [&](int64_t m0, int64_t m1) {
    HWY_DYNAMIC_DISPATCH(QuantizeRowsImpl)(m0, m1, K, x, ldx, q, scale, zero);
  });
}

}  // namespace cpu

Int8GemmInfo cpu_int8_gemm_info() {
  using namespace cpu;  // where HWY_EXPORT put the dispatch table
  Int8GemmInfo info;
  const char* path = "";
  HWY_DYNAMIC_DISPATCH(Int8InfoImpl)(&path, &info.mr, &info.nr);
  info.path = path;
  const Int8AmxSetting amx = int8_amx_setting();
  info.amx_available = int8_amx_available();
  info.amx_enabled = amx.on;
  info.amx_min_rows = amx.min_rows;
  info.amx_min_depth = amx.min_depth;
  return info;
}

}  // namespace mnnpy
#endif
