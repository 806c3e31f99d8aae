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
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "backend/cpu/elementwise.h"
#include "backend/cpu/gemm_int8.h"
#include "backend/cpu/gemm_int8_amx.h"
#include "backend/cpu/quantized_elementwise-inl.h"
#include "backend/cpu/requant_int8-inl.h"
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
constexpr int64_t kGrainMacs = int64_t(1) << 20;  // work below this is not worth a thread (a few microseconds)

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
  // A packed as bytes, one int32 word per row and depth group (an int8 A shifted by 128), for a
  // u8 x s8 micro-kernel: VNNI's, and AVX2's vpmaddubsw one when B's pairs allow it.
  bool bytes_form = false;
};

// Rounds half to even (the default rounding mode) for |v| < 2^22 in the float adder, on every
// target alike (no library call, no rounding instruction of one target).
constexpr float kRoundShift = 12582912.0f;  // 1.5 * 2^23
inline float round_half_even(float v) { return (v + kRoundShift) - kRoundShift; }

// v clamped to [lo, hi]; NaN (from a row holding NaN or infinity) to lo.
inline float clamp_to(float v, float lo, float hi) { return v >= lo ? (v <= hi ? v : hi) : lo; }

// pack_int8_b's panel p of B (element (k, n) at b[k * rs + n * cs], uint8 when !b_signed, stored
// less 128), element by element: column c's 4 depths of group g at byte g * 64 + 4c + (k % 4),
// zeros past K and N; sums: each column's total. Returns whether every depth pair (0, 1) and
// (2, 3) has |b0| + |b1| <= 128 (vpmaddubsw's bound).
inline bool pack_int8_panel(int64_t K, int64_t N, const void* b, int64_t rs, int64_t cs, bool b_signed, int64_t p,
                            int8_t* data, int32_t* sums) {
  const int64_t groups = (K + kInt8Depth - 1) / kInt8Depth;
  int8_t* dst = data + p * groups * kGroupBytes;
  std::memset(dst, 0, (size_t)(groups * kGroupBytes));
  for (int64_t c = 0; c < kInt8Panel; ++c) {
    const int64_t n = p * kInt8Panel + c;
    uint32_t sum = 0;
    if (n < N) {
      for (int64_t k = 0; k < K; ++k) {
        const int32_t v = b_signed ? (int32_t)static_cast<const int8_t*>(b)[k * rs + n * cs]
                                   : (int32_t)static_cast<const uint8_t*>(b)[k * rs + n * cs] - 128;
        dst[(k / 4) * kGroupBytes + c * 4 + (k % 4)] = (int8_t)v;
        sum += (uint32_t)v;
      }
    }
    sums[n] = (int32_t)sum;
  }
  bool fits = true;
  for (int64_t i = 0; i < groups * kInt8Panel * 2; ++i) fits &= std::abs((int)dst[2 * i]) + std::abs((int)dst[2 * i + 1]) <= 128;
  return fits;
}

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
constexpr int kMR = 4, kNP = 1, kAWords = 2;
constexpr const char* kPath = "madd16";
#else
constexpr int kMR = 4, kNP = 1, kAWords = 4;
constexpr const char* kPath = "loop";
#endif
constexpr int64_t kNR = kNP * kInt8Panel;

// One depth group (4 values of A, 0 past K) in this target's packed form (or as bytes), at w.
inline void store_group(const int32_t (&v)[4], bool a_signed, bool bytes_form, int32_t* HWY_RESTRICT w) {
  if (bytes_form) {
    // Unsigned bytes for vpdpbusd / vpmaddubsw: an int8 A goes in shifted by 128 (the epilogue's
    // correction). Depths past K get 128 then, which meets B's zeros there: the product is 0.
    const uint32_t shift = a_signed ? 128u : 0u;
    uint32_t word = 0;
    for (int j = 0; j < 4; ++j) word |= (((uint32_t)v[j] + shift) & 0xffu) << (8 * j);
    w[0] = (int32_t)word;
    return;
  }
#if HWY_TARGET == HWY_AVX3_DL
  (void)a_signed;
#elif HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
  (void)a_signed;
  // int16 pairs for vpmaddwd against B's even depths (0, 2) and odd ones (1, 3).
  w[0] = (int32_t)(((uint32_t)v[0] & 0xffffu) | ((uint32_t)v[2] << 16));
  w[1] = (int32_t)(((uint32_t)v[1] & 0xffffu) | ((uint32_t)v[3] << 16));
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
  const bool a_signed = g.a_signed, bytes_form = g.bytes_form;
  const int words = bytes_form ? 1 : kAWords;  // per row and group
  std::memset(dst, 0, sizeof(int32_t) * groups * kMR * words);
  for (int r = 0; r < rows; ++r) {
    const int64_t m = i0 + r;
    const T* HWY_RESTRICT src = static_cast<const T*>(g.a) + m * g.lda;
    uint32_t sum = 0;  // modulo 2^32, as the rest of the arithmetic
    for (int64_t k = 0; k < K; ++k) sum += (uint32_t)(int32_t)src[k];
    row_sums[m] = wrap(sum);
    int32_t* HWY_RESTRICT w = dst + r * words;
    for (int64_t gr = 0; gr < full; ++gr, w += kMR * words) {
      const int32_t v[4] = {src[gr * 4], src[gr * 4 + 1], src[gr * 4 + 2], src[gr * 4 + 3]};
      store_group(v, a_signed, bytes_form, w);
    }
    if (full < groups) {  // the last, partial group
      int32_t v[4] = {0, 0, 0, 0};
      for (int64_t k = full * 4; k < K; ++k) v[k - full * 4] = src[k];
      if (bytes_form && a_signed)  // depths past K: 0 after the shift
        for (int64_t k = K; k < groups * 4; ++k) v[k - full * 4] = -128;
      store_group(v, a_signed, bytes_form, w);
    }
  }
}

// The bytes form (store_group's, 4 bytes a word) by whole words: an int8 A's bytes flipped in
// their top bit (v + 128 modulo 256), its row sums taken over the flipped bytes less 128 K.
void pack_a_rows_bytes(const Int8Call& g, int64_t i0, int rows, int64_t groups, int32_t* HWY_RESTRICT dst,
                       int32_t* HWY_RESTRICT row_sums) {
  namespace hn = hwy::HWY_NAMESPACE;
  const hn::ScalableTag<uint8_t> d8;
  const hn::Repartition<uint64_t, decltype(d8)> d64;
  const int64_t L = (int64_t)hn::Lanes(d8);
  const int64_t K = g.b->k, full = K / 4;
  const uint8_t flip = g.a_signed ? 0x80 : 0;
  const uint32_t flip_word = g.a_signed ? 0x80808080u : 0u;
  const auto flip_v = hn::Set(d8, flip);
  if (rows < kMR) std::memset(dst, 0, sizeof(int32_t) * groups * kMR);
  for (int r = 0; r < rows; ++r) {
    const int64_t m = i0 + r;
    const uint8_t* HWY_RESTRICT src = static_cast<const uint8_t*>(g.a) + m * g.lda;
    auto sums = hn::Zero(d64);
    int64_t k = 0;
    for (; k + L <= K; k += L) sums = hn::Add(sums, hn::SumsOf8(hn::Xor(hn::LoadU(d8, src + k), flip_v)));
    uint64_t sum = hn::GetLane(hn::SumOfLanes(d64, sums));
    // Short rows (K below a vector: narrow layers) by 8-byte words: the bytes summed in 16-bit
    // fields (at most 8 x 255), without a read past the row.
    const uint64_t flip_bytes = g.a_signed ? 0x8080808080808080ull : 0ull, low_bytes = 0x00FF00FF00FF00FFull;
    for (; k + 8 <= K; k += 8) {
      uint64_t word;
      std::memcpy(&word, src + k, 8);
      word ^= flip_bytes;
      sum += (((word & low_bytes) + ((word >> 8) & low_bytes)) * 0x0001000100010001ull) >> 48;
    }
    for (; k < K; ++k) sum += (uint8_t)(src[k] ^ flip);
    row_sums[m] = wrap((uint32_t)sum - 128u * (uint32_t)(flip ? K : 0));
    int32_t* HWY_RESTRICT w = dst + r;
    for (int64_t gr = 0; gr < full; ++gr) {
      uint32_t word;
      std::memcpy(&word, src + gr * 4, 4);
      w[gr * kMR] = (int32_t)(word ^ flip_word);
    }
    if (full < groups) {  // the last, partial group; depths past K 0 (after the shift)
      uint32_t word = 0;
      for (int64_t kk = full * 4; kk < K; ++kk) word |= (uint32_t)(uint8_t)(src[kk] ^ flip) << (8 * (kk - full * 4));
      w[full * kMR] = (int32_t)word;
    }
  }
}

void pack_a_group(const Int8Call& g, int64_t i0, int rows, int64_t groups, int32_t* dst, int32_t* row_sums) {
  if (g.bytes_form) pack_a_rows_bytes(g, i0, rows, groups, dst, row_sums);
  else if (g.a_signed) pack_a_rows<int8_t>(g, i0, rows, groups, dst, row_sums);
  else pack_a_rows<uint8_t>(g, i0, rows, groups, dst, row_sums);
}

// Raw sums of R rows x kNP panels over all depth groups into tile (R x kNR, row stride kNR).
// a: the row group's packed A; b: the first panel, the next at b + panel_stride.
#if HWY_TARGET == HWY_AVX3_DL
// kRows: A's own rows (uint8, row stride lda, whole groups of 4 depths), whose words are already
// the bytes form, so nothing is packed; otherwise the row group's packed A (lda unused).
template <int R, bool kRows>
__attribute__((target(HWY_TARGET_STR ",avx512vnni"))) HWY_NOINLINE void micro_tile_vnni(
    int64_t groups, const void* HWY_RESTRICT a, int64_t lda, const int8_t* HWY_RESTRICT b, int64_t panel_stride,
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
    #pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      int32_t word;
      if (kRows) std::memcpy(&word, static_cast<const uint8_t*>(a) + i * lda + gr * 4, 4);
      else word = static_cast<const int32_t*>(a)[gr * kMR + i];
      const __m512i ai = _mm512_set1_epi32(word);
      #pragma GCC unroll 16
      for (int p = 0; p < kNP; ++p) acc[i][p] = _mm512_dpbusd_epi32(acc[i][p], ai, bv[p]);
    }
  }
  #pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
    #pragma GCC unroll 16
    for (int p = 0; p < kNP; ++p) _mm512_storeu_si512((void*)(tile + i * kNR + p * kInt8Panel), acc[i][p]);
}

template <int R>
void micro_tile(int64_t groups, const int32_t* a, const int8_t* b, int64_t panel_stride, int32_t* tile) {
  micro_tile_vnni<R, false>(groups, a, 0, b, panel_stride, tile);
}

void micro_tile_direct(int rows, int64_t groups, const uint8_t* a, int64_t lda, const int8_t* b, int64_t panel_stride,
                       int32_t* tile) {
  switch (rows) {
    case 1: micro_tile_vnni<1, true>(groups, a, lda, b, panel_stride, tile); return;
    case 2: micro_tile_vnni<2, true>(groups, a, lda, b, panel_stride, tile); return;
    case 3: micro_tile_vnni<3, true>(groups, a, lda, b, panel_stride, tile); return;
    case 4: micro_tile_vnni<4, true>(groups, a, lda, b, panel_stride, tile); return;
    case 5: micro_tile_vnni<5, true>(groups, a, lda, b, panel_stride, tile); return;
    case 6: micro_tile_vnni<6, true>(groups, a, lda, b, panel_stride, tile); return;
    case 7: micro_tile_vnni<7, true>(groups, a, lda, b, panel_stride, tile); return;
    default: micro_tile_vnni<kMR, true>(groups, a, lda, b, panel_stride, tile); return;
  }
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
template <int R>
HWY_NOINLINE void micro_tile(int64_t groups, const int32_t* HWY_RESTRICT a, const int8_t* HWY_RESTRICT b,
                             int64_t panel_stride, int32_t* HWY_RESTRICT tile) {
  (void)panel_stride;  // one panel: two vectors of 8 columns
  __m256i acc[R][2];
  #pragma GCC unroll 16
  for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_si256();
  for (int64_t gr = 0; gr < groups; ++gr) {
    const int32_t* ag = a + gr * kMR * 2;
    // One half of the panel at a time (the broadcasts of A are loaded twice, from L1): with both
    // halves' B vectors live, the 16 registers overflow and accumulators spill.
    #pragma GCC unroll 16
    for (int h = 0; h < 2; ++h) {
      const __m256i v = _mm256_load_si256((const __m256i*)(b + gr * kGroupBytes + h * 32));
      const __m256i even = _mm256_srai_epi16(_mm256_slli_epi16(v, 8), 8), odd = _mm256_srai_epi16(v, 8);
      #pragma GCC unroll 16
      for (int i = 0; i < R; ++i) {
        const __m256i ae = _mm256_set1_epi32(ag[i * 2]), ao = _mm256_set1_epi32(ag[i * 2 + 1]);
        acc[i][h] = _mm256_add_epi32(acc[i][h], _mm256_madd_epi16(ae, even));
        acc[i][h] = _mm256_add_epi32(acc[i][h], _mm256_madd_epi16(ao, odd));
      }
    }
  }
  #pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
    #pragma GCC unroll 16
    for (int h = 0; h < 2; ++h) _mm256_storeu_si256((__m256i*)(tile + i * kNR + h * 8), acc[i][h]);
}

// A as bytes (one word per row and group) against B whose depth pairs satisfy |b0| + |b1| <= 128
// (PackedInt8B::pairs_fit_u8s8): vpmaddubsw's int16 pair sums, at most 255 * 128, never
// saturate, so the sums are exact and equal to the other paths'.
template <int R>
HWY_NOINLINE void micro_tile_u8s8(int64_t groups, const int32_t* HWY_RESTRICT a, const int8_t* HWY_RESTRICT b,
                                  int32_t* HWY_RESTRICT tile) {
  __m256i acc[R][2];
  #pragma GCC unroll 16
  for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_si256();
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t gr = 0; gr < groups; ++gr) {
    const __m256i b0 = _mm256_load_si256((const __m256i*)(b + gr * kGroupBytes));
    const __m256i b1 = _mm256_load_si256((const __m256i*)(b + gr * kGroupBytes + 32));
    const int32_t* ag = a + gr * kMR;
    #pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const __m256i ai = _mm256_set1_epi32(ag[i]);
      acc[i][0] = _mm256_add_epi32(acc[i][0], _mm256_madd_epi16(_mm256_maddubs_epi16(ai, b0), ones));
      acc[i][1] = _mm256_add_epi32(acc[i][1], _mm256_madd_epi16(_mm256_maddubs_epi16(ai, b1), ones));
    }
  }
  #pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
    #pragma GCC unroll 16
    for (int h = 0; h < 2; ++h) _mm256_storeu_si256((__m256i*)(tile + i * kNR + h * 8), acc[i][h]);
}

// micro_tile_u8s8 on A's own rows (uint8, row stride lda, K a multiple of 4): its words are
// already the bytes form, so nothing is packed.
template <int R>
HWY_NOINLINE void micro_tile_u8s8_rows(int64_t groups, const uint8_t* HWY_RESTRICT a, int64_t lda,
                                       const int8_t* HWY_RESTRICT b, int32_t* HWY_RESTRICT tile) {
  __m256i acc[R][2];
  #pragma GCC unroll 16
  for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_si256();
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t gr = 0; gr < groups; ++gr) {
    const __m256i b0 = _mm256_load_si256((const __m256i*)(b + gr * kGroupBytes));
    const __m256i b1 = _mm256_load_si256((const __m256i*)(b + gr * kGroupBytes + 32));
    #pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      int32_t word;
      std::memcpy(&word, a + i * lda + gr * 4, 4);
      const __m256i ai = _mm256_set1_epi32(word);
      acc[i][0] = _mm256_add_epi32(acc[i][0], _mm256_madd_epi16(_mm256_maddubs_epi16(ai, b0), ones));
      acc[i][1] = _mm256_add_epi32(acc[i][1], _mm256_madd_epi16(_mm256_maddubs_epi16(ai, b1), ones));
    }
  }
  #pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
    #pragma GCC unroll 16
    for (int h = 0; h < 2; ++h) _mm256_storeu_si256((__m256i*)(tile + i * kNR + h * 8), acc[i][h]);
}

void micro_tile_direct(int rows, int64_t groups, const uint8_t* a, int64_t lda, const int8_t* b, int64_t panel_stride,
                       int32_t* tile) {
  (void)panel_stride;  // one panel per tile
  switch (rows) {
    case 1: micro_tile_u8s8_rows<1>(groups, a, lda, b, tile); return;
    case 2: micro_tile_u8s8_rows<2>(groups, a, lda, b, tile); return;
    case 3: micro_tile_u8s8_rows<3>(groups, a, lda, b, tile); return;
    default: micro_tile_u8s8_rows<kMR>(groups, a, lda, b, tile); return;
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
                     int32_t* tile, bool bytes_form) {
#if HWY_TARGET == HWY_AVX2
  if (bytes_form) {
    switch (rows) {
      case 1: micro_tile_u8s8<1>(groups, a, b, tile); return;
      case 2: micro_tile_u8s8<2>(groups, a, b, tile); return;
      case 3: micro_tile_u8s8<3>(groups, a, b, tile); return;
      default: micro_tile_u8s8<kMR>(groups, a, b, tile); return;
    }
  }
#else
  (void)bytes_form;
#endif
  static_assert(kMR == 4 || kMR == 8, "row dispatch below covers 4 and 8 rows");
  switch (rows) {
    case 1: micro_tile<1>(groups, a, b, panel_stride, tile); break;
    case 2: micro_tile<2>(groups, a, b, panel_stride, tile); break;
    case 3: micro_tile<3>(groups, a, b, panel_stride, tile); break;
#if HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX3
    case 4: micro_tile<4>(groups, a, b, panel_stride, tile); break;
    case 5: micro_tile<5>(groups, a, b, panel_stride, tile); break;
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
  // A as bytes went in as A + 128: take 128 colsum(B) back.
  const uint32_t a_shift = g.bytes_form && g.a_signed ? 128u : 0u;
  if (!ep.row_scale && ep.a_zero_step == 0) {
    // int32 outputs with one zero point of A: acc = t + (K za zb - (za + shift) colsum) - zb rs,
    // the column term once per tile, each row's in vectors (wrapping uint32 arithmetic).
    const uint32_t za = ep.a_zero ? (uint32_t)ep.a_zero[0] : 0u;
    alignas(64) uint32_t col_term[kNR];
    for (int j = 0; j < cols; ++j) col_term[j] = K * za * b_zero[j] - (za + a_shift) * col_sum[j];
    const hn::ScalableTag<uint32_t> du;
    const int L = (int)hn::Lanes(du), whole = cols / L * L;
    for (int r = 0; r < rows; ++r) {
      const int64_t m = i0 + r;
      const uint32_t rs = (uint32_t)row_sums[m];
      const uint32_t* t = reinterpret_cast<const uint32_t*>(tile + r * kNR);
      uint32_t* out = reinterpret_cast<uint32_t*>(static_cast<int32_t*>(g.c) + m * g.ldc + j0);
      const auto row_sum = hn::Set(du, rs);
      for (int j = 0; j < whole; j += L) {
        const auto v = hn::Add(hn::LoadU(du, t + j), hn::LoadU(du, col_term + j));
        hn::StoreU(hn::Sub(v, hn::Mul(hn::LoadU(du, b_zero + j), row_sum)), du, out + j);
      }
      for (int j = whole; j < cols; ++j) out[j] = t[j] + col_term[j] - b_zero[j] * rs;
    }
    return;
  }
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

// The column terms of the 8-bit epilogue for one column tile (kNR columns, zeros past N),
// gathered once per tile of columns rather than per tile.
struct RequantColumns {
  alignas(64) uint32_t col_sum[kNR];
  alignas(64) uint32_t b_zero[kNR];
  alignas(64) uint32_t bias[kNR];
  // With one zero point of A for all rows: bias - (a_zero + a_shift) col_sum + K a_zero b_zero,
  // what is left per row being - b_zero row_sum.
  alignas(64) uint32_t col_const[kNR];
  alignas(64) float multiplier[kNR];
  bool no_b_zero = false;          // B's zero points all 0 (symmetric weights): no row-sum term
  bool small_multipliers = false;  // every multiplier finite, |m| <= 0.5 (RequantVector::two_rows)
};

void gather_requant_columns(const Int8Call& g, int64_t j0, int cols, RequantColumns& c) {
  const PackedInt8B& b = *g.b;
  const Int8Epilogue& ep = *g.ep;
  const uint32_t b_shift = b.b_signed ? 0u : 128u;
  if (cols == (int)kNR && ep.b_zero && ep.b_zero_step == 1 && ep.requant_bias) {
    // A whole tile of per-column terms (a convolution's): plain copies, which vectorize.
    const int32_t* HWY_RESTRICT col_sums = b.col_sums.get() + j0;
    const int32_t* HWY_RESTRICT b_zero = ep.b_zero + j0;
    const int32_t* HWY_RESTRICT bias = ep.requant_bias + j0;
    const float* HWY_RESTRICT multiplier = ep.requant_multiplier + j0;
    for (int j = 0; j < (int)kNR; ++j) {
      c.col_sum[j] = (uint32_t)col_sums[j];
      c.b_zero[j] = (uint32_t)b_zero[j] - b_shift;
      c.bias[j] = (uint32_t)bias[j];
      c.multiplier[j] = multiplier[j];
    }
  } else {
    for (int j = 0; j < (int)kNR; ++j) {
      const int64_t n = j0 + j;
      const bool in = j < cols;
      c.col_sum[j] = in ? (uint32_t)b.col_sums.get()[n] : 0u;
      // Stored B is B - b_shift: (B - zb) = stored - (zb - b_shift).
      c.b_zero[j] = in ? (ep.b_zero ? (uint32_t)ep.b_zero[n * ep.b_zero_step] : 0u) - b_shift : 0u;
      c.bias[j] = in && ep.requant_bias ? (uint32_t)ep.requant_bias[n] : 0u;
      c.multiplier[j] = in ? ep.requant_multiplier[n] : 0.0f;
    }
  }
  c.no_b_zero = true;
  c.small_multipliers = true;
  for (int j = 0; j < (int)kNR; ++j) {
    c.no_b_zero &= c.b_zero[j] == 0u;
    c.small_multipliers &= std::fabs(c.multiplier[j]) <= 0.5f;  // false for a NaN
  }
  if (ep.a_zero_step == 0) {
    const uint32_t za = ep.a_zero ? (uint32_t)ep.a_zero[0] : 0u, a_shift = g.bytes_form && g.a_signed ? 128u : 0u;
    for (int j = 0; j < (int)kNR; ++j)
      c.col_const[j] = c.bias[j] - (za + a_shift) * c.col_sum[j] + (uint32_t)b.k * za * c.b_zero[j];
  }
}

// finish_tile for 8-bit outputs: the zero points and bias over whole rows of the tile (fixed
// length: vector code), then the requantization, then the residual (Int8Epilogue::residual),
// which rows [residual_from, rows) of the tile still need: the rows before it got theirs in
// registers.
void requantize_tile(const Int8Call& g, const int32_t* tile, int64_t i0, int rows, int64_t j0, int cols,
                     const int32_t* row_sums, const RequantColumns& c, int& residual_from) {
  residual_from = 0;
  const Int8Epilogue& ep = *g.ep;
  const uint32_t K = (uint32_t)g.b->k;
  const uint32_t a_shift = g.bytes_form && g.a_signed ? 128u : 0u;  // A as bytes went in as A + 128
  RequantParams requant;
  requant.zero = ep.out_zero, requant.low = ep.out_low, requant.high = ep.out_high;
  alignas(64) uint8_t bytes[kNR];
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  // x86: each row's sums stay in two vectors, requantized with the tile's multipliers held in
  // registers.
  using RV = RequantVector;
  constexpr int L = RV::kLanes;
  static_assert(kNR == 2 * L, "two vectors of sums a row");
  const RV requant_vector(requant);
  const RV::Multipliers m0 = RV::load_multipliers(c.multiplier), m1 = RV::load_multipliers(c.multiplier + L);
  const hn::ScalableTag<uint32_t> du;
  static_assert(HWY_LANES(uint32_t) == L, "Highway's vectors are RequantVector's");
#if HWY_TARGET != HWY_AVX2
  // The lanes of a partial tile's n columns within one vector of bytes.
  const auto lanes_mask = [](int n) {
    return n >= L ? (__mmask16)0xFFFF : n > 0 ? (__mmask16)((1u << n) - 1u) : (__mmask16)0;
  };
#endif
  if (ep.a_zero_step == 0 && c.no_b_zero) {
    // The common case (one zero point of A, symmetric weights): the column terms in registers
    // and nothing else per row, with every field read before the byte stores (which the compiler
    // must assume alias them).
    const auto col0 = hn::Load(du, c.col_const), col1 = hn::Load(du, c.col_const + L);
    const uint32_t* t = reinterpret_cast<const uint32_t*>(tile);
    uint8_t* out = static_cast<uint8_t*>(g.c) + i0 * g.ldc + j0;
    const int64_t ldc = g.ldc;
    int r = 0;
#if HWY_TARGET != HWY_AVX2
    auto sums = [&](int i) { return hn::Add(hn::LoadU(du, t + i), i % kNR ? col1 : col0).raw; };
    if (ep.residual) {
      // The output's values never become bytes: QLinearAdd takes them centred, as floats.
      const quantized_binary::AddTwoRows add(*ep.residual_add);
      const __mmask32 mask = cols >= (int)kNR ? ~__mmask32(0) : (__mmask32(1) << cols) - 1u;
      const uint8_t* res = ep.residual + i0 * ldc + j0;
      auto add_rows = [&](auto plain, auto clamp_high) {
        for (; r + 2 <= rows; r += 2, t += 2 * kNR, out += 2 * ldc, res += 2 * ldc) {
          const hn::Vec<hn::ScalableTag<float>> a[4] = {
              {requant_vector.centred(sums(0), m0)}, {requant_vector.centred(sums(L), m1)},
              {requant_vector.centred(sums(kNR), m0)}, {requant_vector.centred(sums(kNR + L), m1)}};
          add.run<decltype(plain)::value, decltype(clamp_high)::value>(a, res, res + ldc, out, out + ldc, mask);
        }
      };
      const bool plain = cols == (int)kNR && add.flip == 0;
      if (plain && !add.clamp_high) add_rows(std::true_type(), std::false_type());
      else if (plain) add_rows(std::true_type(), std::true_type());
      else if (!add.clamp_high) add_rows(std::false_type(), std::false_type());
      else add_rows(std::false_type(), std::true_type());
      residual_from = r;
    }
#endif
    if (cols == (int)kNR) {
#if HWY_TARGET != HWY_AVX2
      if (c.small_multipliers && requant.high == (requant.low < 0 ? 127 : 255)) {
        for (; r + 2 <= rows; r += 2, t += 2 * kNR, out += 2 * ldc)
          requant_vector.store_two_rows<false>(out, out + ldc, sums(0), sums(L), sums(kNR), sums(kNR + L), m0, m1);
      }
      for (; r + 2 <= rows; r += 2, t += 2 * kNR, out += 2 * ldc)
        requant_vector.store_two_rows(out, out + ldc, sums(0), sums(L), sums(kNR), sums(kNR + L), m0, m1);
#endif
      for (; r < rows; ++r, t += kNR, out += ldc) {
        RV::store(out, requant_vector(hn::Add(hn::LoadU(du, t), col0).raw, m0));
        RV::store(out + L, requant_vector(hn::Add(hn::LoadU(du, t + L), col1).raw, m1));
      }
      return;
    }
#if HWY_TARGET != HWY_AVX2
    // A partial tile: masked stores, the second half only where it has columns.
    const __mmask16 mask0 = lanes_mask(cols), mask1 = lanes_mask(cols - L);
    for (; r < rows; ++r, t += kNR, out += ldc) {
      _mm_mask_storeu_epi8(out, mask0, requant_vector(hn::Add(hn::LoadU(du, t), col0).raw, m0));
      if (mask1) _mm_mask_storeu_epi8(out + L, mask1, requant_vector(hn::Add(hn::LoadU(du, t + L), col1).raw, m1));
    }
    return;
#endif
  }
#else
  alignas(64) int32_t sums[kNR];
#endif
  for (int r = 0; r < rows; ++r) {
    const int64_t m = i0 + r;
    const uint32_t za = ep.a_zero ? (uint32_t)ep.a_zero[m * ep.a_zero_step] : 0u;
    const uint32_t rs = (uint32_t)row_sums[m], za_total = za + a_shift, kza = K * za;
    const uint32_t* t = reinterpret_cast<const uint32_t*>(tile + r * kNR);
    uint8_t* out = static_cast<uint8_t*>(g.c) + m * g.ldc + j0;
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    // The sums of columns j .. j + L (the formulas of the scalar branch below, in uint32 lanes).
    auto sums_at = [&](int j) {
      const auto tv = hn::LoadU(du, t + j);
      if (ep.a_zero_step == 0 && c.no_b_zero) return hn::Add(tv, hn::Load(du, c.col_const + j)).raw;
      const auto zb = hn::Load(du, c.b_zero + j);
      const auto row_term = hn::Mul(zb, hn::Set(du, rs));
      if (ep.a_zero_step == 0) return hn::Sub(hn::Add(tv, hn::Load(du, c.col_const + j)), row_term).raw;
      const auto a_term = hn::Mul(hn::Set(du, za_total), hn::Load(du, c.col_sum + j));
      const auto v = hn::Sub(hn::Sub(hn::Add(tv, hn::Load(du, c.bias + j)), a_term), row_term);
      return hn::Add(v, hn::Mul(hn::Set(du, kza), zb)).raw;
    };
    const __m128i first = requant_vector(sums_at(0), m0);
    if (cols == (int)kNR) {
      RV::store(out, first);
      RV::store(out + L, requant_vector(sums_at(L), m1));
      continue;
    }
#if HWY_TARGET == HWY_AVX2
    RV::store(bytes, first);
    if (cols > L) RV::store(bytes + L, requant_vector(sums_at(L), m1));
    std::memcpy(out, bytes, (size_t)cols);
#else
    // A partial tile: masked stores, and the second half only where it has columns.
    _mm_mask_storeu_epi8(out, lanes_mask(cols), first);
    if (cols > L) _mm_mask_storeu_epi8(out + L, lanes_mask(cols - L), requant_vector(sums_at(L), m1));
#endif
#else
    if (ep.a_zero_step == 0 && c.no_b_zero) {
      for (int j = 0; j < (int)kNR; ++j) sums[j] = wrap(t[j] + c.col_const[j]);
    } else if (ep.a_zero_step == 0) {
      for (int j = 0; j < (int)kNR; ++j) sums[j] = wrap(t[j] + c.col_const[j] - c.b_zero[j] * rs);
    } else {
      for (int j = 0; j < (int)kNR; ++j)
        sums[j] = wrap(t[j] + c.bias[j] - za_total * c.col_sum[j] - c.b_zero[j] * rs + kza * c.b_zero[j]);
    }
    if (cols == (int)kNR) {
      RequantRow(sums, c.multiplier, kNR, requant, out);
    } else {
      RequantRow(sums, c.multiplier, kNR, requant, bytes);
      std::memcpy(out, bytes, (size_t)cols);
    }
#endif
  }
}

void finish_tile_requant(const Int8Call& g, const int32_t* tile, int64_t i0, int rows, int64_t j0, int cols,
                         const int32_t* row_sums, const RequantColumns& c) {
  int residual_from = 0;
  requantize_tile(g, tile, i0, rows, j0, cols, row_sums, c, residual_from);
  const Int8Epilogue& ep = *g.ep;
  if (!ep.residual) return;
  // The rest of the rows: their requantized bytes as QLinearAdd's a (a copy: its operands are
  // distinct), the residual as its b.
  alignas(64) uint8_t a[kNR];
  for (int r = residual_from; r < rows; ++r) {
    const int64_t at = (i0 + r) * g.ldc + j0;
    uint8_t* out = static_cast<uint8_t*>(g.c) + at;
    std::memcpy(a, out, (size_t)cols);
    quantized_binary::binary_row<false>(a, 1, ep.residual + at, 1, out, cols, *ep.residual_add);
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

// 8-bit outputs: the column terms of each column tile (one per AMX block of columns).
struct AmxRequantCall {
  const Int8Call* call;
  const RequantColumns* columns;
};
void finish_amx_block_requant(const void* context, int32_t* block, int64_t i0, int rows, int64_t j0, int cols,
                              const int32_t* row_sums) {
  const AmxRequantCall& c = *static_cast<const AmxRequantCall*>(context);
  finish_tile_requant(*c.call, block, i0, rows, j0, cols, row_sums, c.columns[j0 / kNR]);
}
#endif

// The column terms of the 8-bit epilogue for every column tile of the product.
std::vector<RequantColumns> gather_all_requant_columns(const Int8Call& g) {
  const int64_t N = g.b->n, col_tiles = ceil_div(N, (int64_t)kNR);
  std::vector<RequantColumns> columns((size_t)col_tiles);
  for (int64_t ct = 0; ct < col_tiles; ++ct)
    gather_requant_columns(g, ct * kNR, (int)std::min<int64_t>(kNR, N - ct * kNR), columns[ct]);
  return columns;
}

// Whether B is int8 with every zero point 0 (symmetric weights): no row sums of A are needed.
bool symmetric_b(const Int8Call& g) {
  if (!g.b->b_signed) return false;
  for (int64_t n = 0; g.ep->b_zero && n < g.b->n; ++n)
    if (g.ep->b_zero[n * g.ep->b_zero_step] != 0) return false;
  return true;
}

// gemm_int8_image: AMX reads the image's pixels in place where the call qualifies (this target
// with AMX chosen, 8-bit outputs, one zero point of A, symmetric B); rows null: only whether.
bool ImageGemmInt8Impl(Int8Call g, const Int8ImageRows* rows) {
#if HWY_TARGET == HWY_AVX3_DL
  if (!int8_amx_chosen(g.M, g.b->k) || !g.ep->requant_multiplier || g.ep->a_zero_step != 0 || !symmetric_b(g))
    return false;
  if (!rows) return true;
  g.bytes_form = true;
  const std::vector<RequantColumns> columns = gather_all_requant_columns(g);
  const AmxRequantCall call{&g, columns.data()};
  gemm_int8_amx_image(*rows, *g.b, g.pool, &finish_amx_block_requant, &call);
  return true;
#else
  (void)g, (void)rows;
  return false;
#endif
}

void GemmInt8Impl(Int8Call g) {
#if HWY_TARGET == HWY_AVX3_DL
  g.bytes_form = true;
  if (int8_amx_chosen(g.M, g.b->k)) {
    // Symmetric weights: the epilogue has no row-sum term, so A's rows may be read in place.
    const bool no_b_zero = symmetric_b(g);
    if (g.ep->requant_multiplier) {
      const std::vector<RequantColumns> columns = gather_all_requant_columns(g);
      const AmxRequantCall call{&g, columns.data()};
      gemm_int8_amx(g.M, g.a, g.lda, g.a_signed, *g.b, g.pool, &finish_amx_block_requant, &call, no_b_zero,
                    g.ep->a_rows_padded, true);
    } else {
      gemm_int8_amx(g.M, g.a, g.lda, g.a_signed, *g.b, g.pool, &finish_amx_block, &g, no_b_zero, g.ep->a_rows_padded);
    }
    return;
  }
#elif HWY_TARGET == HWY_AVX2
  g.bytes_form = g.b->pairs_fit_u8s8;
#else
  g.bytes_form = false;
#endif
  const PackedInt8B& b = *g.b;
  const int64_t M = g.M, N = b.n, groups = b.groups;
  const int64_t row_groups = ceil_div(M, kMR);
  const int64_t a_group_words = groups * kMR * kAWords;
  // AVX2 or VNNI with a uint8 A whose rows hold whole depth groups (K a multiple of 4, or rows
  // padded to them: Int8Epilogue::a_rows_padded), against B without zero points (symmetric
  // weights, whose row-sum term vanishes): the micro-kernel reads A's rows as they are.
  bool direct_a = false;
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3_DL
  const bool whole_groups = b.k % kInt8Depth == 0 || (g.ep->a_rows_padded && g.lda >= groups * kInt8Depth);
  direct_a = g.bytes_form && !g.a_signed && whole_groups && symmetric_b(g);
#endif
  int32_t* packed_a = direct_a ? nullptr
                               : reinterpret_cast<int32_t*>(thread_buffer(0, (size_t)(row_groups * a_group_words)));
  int32_t* row_sums = reinterpret_cast<int32_t*>(thread_buffer(1, (size_t)M));
  if (direct_a) {
    std::memset(row_sums, 0, sizeof(int32_t) * M);  // multiplied by zero points of 0 only
  } else {
    const int64_t pack_grain = std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(1, kMR * groups * 4));
    parallel_for(g.pool, row_groups, pack_grain, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        pack_a_group(g, r * kMR, (int)std::min<int64_t>(kMR, M - r * kMR), groups, packed_a + r * a_group_words,
                     row_sums);
      }
    });
  }
  // Tasks: blocks of row groups whose packed A fits in L2, times blocks of column tiles; more
  // tasks than threads so that shares even out.
  const int64_t col_tiles = ceil_div(ceil_div(N, kInt8Panel), kNP);
  const int64_t block_groups =
      std::max<int64_t>(1, std::min(row_groups, kL2BlockBytes / std::max<int64_t>(1, a_group_words * 4)));
  int64_t row_blocks = ceil_div(row_groups, block_groups);
  const int threads = g.pool ? g.pool->num_threads() : 1;
  // Work in multiply-adds, or for few rows in B's bytes, which then stream from memory at about
  // a quarter of the multiply-adds' pace (a classifier's GEMV: 1000 x 1280 in 50 us on one core).
  const int64_t work = std::max(M * N * b.k, 4 * N * b.k);
  const int64_t want = threads > 1 ? std::min<int64_t>(4 * threads, std::max<int64_t>(1, work / kGrainMacs)) : 1;
  const bool requant = g.ep->requant_multiplier != nullptr;
  // 8-bit outputs split by rows first: a column tile of bytes covers part of a cache line, which
  // threads writing its neighbours would contend for.
  int64_t col_blocks = requant ? 1 : std::min(col_tiles, std::max<int64_t>(1, ceil_div(want, row_blocks)));
  if (row_blocks * col_blocks < want) row_blocks = std::min(row_groups, ceil_div(want, col_blocks));
  if (row_blocks * col_blocks < want) col_blocks = std::min(col_tiles, ceil_div(want, row_blocks));
  const int64_t rows_per_block = ceil_div(row_groups, row_blocks), tiles_per_block = ceil_div(col_tiles, col_blocks);
  row_blocks = ceil_div(row_groups, rows_per_block);
  col_blocks = ceil_div(col_tiles, tiles_per_block);
  const int64_t panel_stride = groups * kGroupBytes;
  // 8-bit outputs: the column terms of every tile gathered once; and where a task's panels of B
  // stay in L2, a task's rows go through all its panels before the next ones, so that each output
  // row is written whole while in cache (column tiles of bytes cover parts of cache lines).
  const std::vector<RequantColumns> requant_columns =
      requant ? gather_all_requant_columns(g) : std::vector<RequantColumns>();
  const bool rows_outer = requant && tiles_per_block * kNP * panel_stride <= kL2BlockBytes;
  parallel_for(g.pool, row_blocks * col_blocks, 1, [&](int64_t t0, int64_t t1) {
    alignas(64) int32_t tile[kMR * kNR];
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t rb = t / col_blocks, cb = t % col_blocks;
      const int64_t rg0 = rb * rows_per_block, rg1 = std::min(row_groups, rg0 + rows_per_block);
      const int64_t ct0 = cb * tiles_per_block, ct1 = std::min(col_tiles, ct0 + tiles_per_block);
      auto run_tile = [&](int64_t rg, int64_t ct) {
        const int64_t j0 = ct * kNR, i0 = rg * kMR;
        const int cols = (int)std::min<int64_t>(kNR, N - j0), rows = (int)std::min<int64_t>(kMR, M - i0);
        const int8_t* bp = b.data.get() + ct * kNP * panel_stride;
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3_DL
        if (direct_a) {
          micro_tile_direct(rows, groups, static_cast<const uint8_t*>(g.a) + i0 * g.lda, g.lda, bp, panel_stride, tile);
        } else {
          micro_tile_rows(rows, groups, packed_a + rg * a_group_words, bp, panel_stride, tile, g.bytes_form);
        }
#else
        micro_tile_rows(rows, groups, packed_a + rg * a_group_words, bp, panel_stride, tile, g.bytes_form);
#endif
        if (requant) finish_tile_requant(g, tile, i0, rows, j0, cols, row_sums, requant_columns[ct]);
        else finish_tile(g, tile, i0, rows, j0, cols, row_sums);
      };
      if (rows_outer) {
        for (int64_t rg = rg0; rg < rg1; ++rg)
          for (int64_t ct = ct0; ct < ct1; ++ct) run_tile(rg, ct);
      } else {
        for (int64_t ct = ct0; ct < ct1; ++ct)
          for (int64_t rg = rg0; rg < rg1; ++rg) run_tile(rg, ct);
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

// pack_int8_b's panels [p0, p1) of a row-major B (row k at b + k * ldb, uint8 when !b_signed,
// stored less 128): each group of 4 rows times the panel's 16 columns is a 4 x 16 byte transpose
// (column c's 4 depths at bytes 4c .. 4c + 3), zeros past K and N. sums: each column's total;
// returns whether every depth pair (0, 1) and (2, 3) has |b0| + |b1| <= 128 (vpmaddubsw's bound).
bool PackInt8PanelsImpl(int64_t K, int64_t N, const uint8_t* b, int64_t ldb, bool b_signed, int64_t p0, int64_t p1,
                        int8_t* data, int32_t* sums) {
#if HWY_TARGET == HWY_SCALAR
  bool fits = true;
  for (int64_t p = p0; p < p1; ++p) fits &= pack_int8_panel(K, N, b, ldb, 1, b_signed, p, data, sums);
  return fits;
#else
  const hn::Full128<uint8_t> d8;
  const hn::Full128<uint16_t> d16;
  const hn::Full128<int16_t> di16;
  const hn::Full128<int32_t> di32;
  const hn::Full64<int8_t> dh8;
  const hn::Full64<int16_t> dh16;
  const int64_t groups = ceil_div(K, kInt8Depth);
  const auto flip = hn::Set(d8, (uint8_t)(b_signed ? 0 : 0x80));
  const auto low_byte = hn::Set(d16, 0xFF), pair_bound = hn::Set(d16, 128);
  auto pairs_fit = hn::Set(d16, 0);  // lanes over the bound, summed
  alignas(16) uint8_t row_bytes[kInt8Panel];
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * kInt8Panel, cols = std::max<int64_t>(0, std::min(kInt8Panel, N - n0));
    int8_t* dst = data + p * groups * kGroupBytes;
    auto load_row = [&](int64_t k) {
      if (k >= K || cols == 0) return hn::Zero(d8);
      const uint8_t* src = b + k * ldb + n0;
      if (cols < kInt8Panel) {
        std::memcpy(row_bytes, src, (size_t)cols);
        std::memset(row_bytes + cols, b_signed ? 0 : 0x80, (size_t)(kInt8Panel - cols));
        src = row_bytes;
      }
      return hn::Xor(hn::LoadU(d8, src), flip);
    };
    hn::Vec128<int32_t> total[4] = {hn::Zero(di32), hn::Zero(di32), hn::Zero(di32), hn::Zero(di32)};
    auto partial_low = hn::Zero(di16), partial_high = hn::Zero(di16);  // int16 sums of up to 128 rows
    auto flush = [&]() {
      total[0] = hn::Add(total[0], hn::PromoteTo(di32, hn::LowerHalf(partial_low)));
      total[1] = hn::Add(total[1], hn::PromoteTo(di32, hn::UpperHalf(dh16, partial_low)));
      total[2] = hn::Add(total[2], hn::PromoteTo(di32, hn::LowerHalf(partial_high)));
      total[3] = hn::Add(total[3], hn::PromoteTo(di32, hn::UpperHalf(dh16, partial_high)));
      partial_low = partial_high = hn::Zero(di16);
    };
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t k = g * kInt8Depth;
      const auto r0 = load_row(k), r1 = load_row(k + 1), r2 = load_row(k + 2), r3 = load_row(k + 3);
      const auto r01 = hn::BitCast(d16, hn::InterleaveLower(r0, r1)), r01h = hn::BitCast(d16, hn::InterleaveUpper(d8, r0, r1));
      const auto r23 = hn::BitCast(d16, hn::InterleaveLower(r2, r3)), r23h = hn::BitCast(d16, hn::InterleaveUpper(d8, r2, r3));
      const hn::Vec128<uint8_t> out[4] = {
          hn::BitCast(d8, hn::InterleaveLower(r01, r23)), hn::BitCast(d8, hn::InterleaveUpper(d16, r01, r23)),
          hn::BitCast(d8, hn::InterleaveLower(r01h, r23h)), hn::BitCast(d8, hn::InterleaveUpper(d16, r01h, r23h))};
      for (int q = 0; q < 4; ++q) {
        hn::StoreU(out[q], d8, reinterpret_cast<uint8_t*>(dst + g * kGroupBytes + q * 16));
        // |b0| + |b1| of each depth pair: the pair's two bytes as one uint16 lane.
        const auto magnitudes = hn::BitCast(d16, hn::Abs(hn::BitCast(hn::Full128<int8_t>(), out[q])));
        const auto pair = hn::Add(hn::And(magnitudes, low_byte), hn::ShiftRight<8>(magnitudes));
        pairs_fit = hn::Add(pairs_fit, hn::VecFromMask(d16, hn::Gt(pair, pair_bound)));
      }
      for (const auto& r : {r0, r1, r2, r3}) {
        const auto v = hn::BitCast(hn::Full128<int8_t>(), r);
        partial_low = hn::Add(partial_low, hn::PromoteTo(di16, hn::LowerHalf(dh8, v)));
        partial_high = hn::Add(partial_high, hn::PromoteTo(di16, hn::UpperHalf(dh8, v)));
      }
      if (g % 32 == 31) flush();
    }
    flush();
    alignas(16) int32_t column_sums[kInt8Panel];
    for (int q = 0; q < 4; ++q) hn::Store(total[q], di32, column_sums + 4 * q);
    for (int64_t c = 0; c < kInt8Panel; ++c) sums[n0 + c] = c < cols ? column_sums[c] : 0;
  }
  return hn::AllTrue(d16, hn::Eq(pairs_fit, hn::Zero(d16)));
#endif
}

void Int8InfoImpl(const char** path, int* mr, int* nr) {
  *path = kPath;
#if HWY_TARGET == HWY_AVX3_DL
  // GemmInt8Impl hands large enough products to AMX here when the switch and the CPU allow it.
  if (int8_amx_setting().on && int8_amx_available()) *path = "amx";
#endif
  *mr = kMR;
  *nr = (int)kNR;
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
HWY_EXPORT(GemmInt8Impl);
HWY_EXPORT(ImageGemmInt8Impl);
HWY_EXPORT(Int8InfoImpl);
HWY_EXPORT(QuantizeRowsImpl);
HWY_EXPORT(PackInt8PanelsImpl);

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
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 15) / std::max<int64_t>(1, out.groups * 64));
  std::atomic<bool> pairs_fit{true};
  parallel_for(pool, panels, grain, [&](int64_t p0, int64_t p1) {
    bool fits = true;
    if (trans_b) {  // B's columns as rows: element by element
      for (int64_t p = p0; p < p1; ++p) fits &= gemm_int8_detail::pack_int8_panel(K, N, b, 1, ldb, b_signed, p, data, sums);
    } else {  // rows of B as they lie: a vector transpose per group of 4 rows
      fits = HWY_DYNAMIC_DISPATCH(PackInt8PanelsImpl)(K, N, static_cast<const uint8_t*>(b), ldb, b_signed, p0, p1,
                                                      data, sums);
    }
    if (!fits) pairs_fit.store(false, std::memory_order_relaxed);
  });
  out.pairs_fit_u8s8 = pairs_fit.load();
  return out;
}

void gemm_int8(int64_t M, const void* a, int64_t lda, bool a_signed, const PackedInt8B& b, const Int8Epilogue& ep,
               void* c, int64_t ldc, ThreadPool* pool) {
  if (M == 0 || b.n == 0) return;
  Int8Call g;
  g.M = M, g.a = a, g.lda = lda, g.a_signed = a_signed, g.b = &b, g.ep = &ep, g.c = c, g.ldc = ldc, g.pool = pool;
  HWY_DYNAMIC_DISPATCH(GemmInt8Impl)(g);
}


bool gemm_int8_image_applies(int64_t M, bool a_signed, const PackedInt8B& b, const Int8Epilogue& ep) {
  Int8Call g;
  g.M = M, g.a_signed = a_signed, g.b = &b, g.ep = &ep;
  return M > 0 && b.n > 0 && HWY_DYNAMIC_DISPATCH(ImageGemmInt8Impl)(g, nullptr);
}

void gemm_int8_image(const Int8ImageRows& rows, bool a_signed, const PackedInt8B& b, const Int8Epilogue& ep, void* c,
                     int64_t ldc, ThreadPool* pool) {
  Int8Call g;
  g.M = rows.out_h * rows.out_w, g.a = rows.x, g.lda = 0, g.a_signed = a_signed, g.b = &b, g.ep = &ep, g.c = c;
  g.ldc = ldc, g.pool = pool;
  if (g.M == 0 || b.n == 0) return;
  if (!HWY_DYNAMIC_DISPATCH(ImageGemmInt8Impl)(g, &rows))
    throw std::logic_error("gemm_int8_image: called where gemm_int8_image_applies is false");
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
