// Block-quantized weights against int8 activations (weight_quant_matmul_int8, weight_quant.h),
// compiled per SIMD target. Each activation row is quantized once per call; the weight codes are
// then multiplied by the activation codes as integers, four byte products per int32 lane
// (vpdpbusd with AVX-512 VNNI, vpmaddubsw + vpmaddwd on AVX2 and AVX-512 without it), and only
// the sub-block sums meet the scales. The integer sums are exact, so every way of forming them
// gives the same numbers; the float steps after them are one fixed sequence per output (16
// accumulators, sub-block s into s mod 16, a fixed tree at the end), so every target gives the
// same bits.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/weight_quant_int8.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backend/cpu/gemm_int8_amx.h"
#include "backend/cpu/weight_quant.h"
#include "mnnpy/thread_pool.h"

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#include <immintrin.h>
#endif

#ifndef MNNPY_WEIGHT_QUANT_INT8_SHARED_ONCE
#define MNNPY_WEIGHT_QUANT_INT8_SHARED_ONCE
namespace mnnpy {
namespace cpu {
namespace weight_quant_int8_detail {

constexpr int64_t kSub = kActivationBlock;  // k per activation scale: a sub-block
constexpr int kChains = 16;                  // float accumulators per output; sub-block s feeds s % 16
// Activation rows quantized per pass over the weights: their codes (4 KB a row at K = 4096) stay
// in L2 while every weight row meets them.
constexpr int64_t kRowsPerPass = 64;
constexpr int64_t kTaskBytes = int64_t(1) << 16;  // codes a task reads at least, to outweigh a wake-up
constexpr int64_t kPrefetchRows = 16;  // weight rows ahead whose codes are requested early

// The activations of one call: row i's codes at codes + i * k (int4 weights: its even ks, then its
// odd ks, the order of the nibbles), and per sub-block s its scale and the sum of its codes at
// [i * subs + s].
struct ActivationCodes {
  const int8_t* codes = nullptr;
  const float* scales = nullptr;
  const int32_t* sums = nullptr;
  int64_t k = 0, subs = 0;
};

inline int32_t zero_point_of(const BlockQuantWeights& w, int64_t n, int64_t block) {
  return w.zeros ? (int32_t)w.zeros[n * (w.k / w.block) + block] : 1 << (w.bits - 1);
}

// The exact integer c_s of sub-block s for weight row n and activation row i (the header's formula).
inline int32_t sub_block_sum(const BlockQuantWeights& w, int64_t n, const ActivationCodes& x, int64_t i, int64_t s) {
  const int64_t K = w.k;
  const uint8_t* row = w.codes + n * (K * w.bits / 8);
  const int8_t* q = x.codes + i * K;
  int32_t d = 0;
  if (w.bits == 4) {
    for (int64_t j = s * kSub / 2; j < (s + 1) * kSub / 2; ++j) d += (row[j] >> 4) * q[j] + (row[j] & 15) * q[K / 2 + j];
  } else {
    for (int64_t j = s * kSub; j < (s + 1) * kSub; ++j) d += row[j] * q[j];
  }
  return d - zero_point_of(w, n, s * kSub / w.block) * x.sums[i * x.subs + s];
}

// Adds sub-blocks [s0, s1) of output (i, n) to its chains, one std::fma each: the scalar target's
// whole product, and the sub-blocks past the last whole group of 16 on the others.
inline void add_sub_blocks(const BlockQuantWeights& w, int64_t n, const ActivationCodes& x, int64_t i, int64_t s0,
                           int64_t s1, float* chains) {
  const int64_t blocks = w.k / w.block;
  for (int64_t s = s0; s < s1; ++s) {
    const float scale = w.scales[n * blocks + s * kSub / w.block] * x.scales[i * x.subs + s];
    chains[s % kChains] = std::fma((float)sub_block_sum(w, n, x, i, s), scale, chains[s % kChains]);
  }
}

// The output from its chains: halves added in a fixed order, then the bias.
inline float finish_output(float* chains, const float* bias, int64_t n) {
  for (int half = kChains / 2; half >= 1; half /= 2)
    for (int j = 0; j < half; ++j) chains[j] += chains[j + half];
  return bias ? chains[0] + bias[n] : chains[0];
}

}  // namespace weight_quant_int8_detail
}  // namespace cpu
}  // namespace mnnpy
#endif  // MNNPY_WEIGHT_QUANT_INT8_SHARED_ONCE

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
using namespace weight_quant_int8_detail;

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#if HWY_TARGET == HWY_AVX3_DL
#define MNNPY_WEIGHT_QUANT_VNNI __attribute__((target(HWY_TARGET_STR ",avx512vnni")))
#else
#define MNNPY_WEIGHT_QUANT_VNNI
#endif
constexpr int kTileRows = 4;  // weight rows sharing each load of activation codes

// acc + per int32 lane the four products of unsigned u and signed x bytes. Without VNNI,
// vpmaddubsw's int16 pair sums could saturate for u above 127: its low 7 bits and its top bit go
// separately.
MNNPY_WEIGHT_QUANT_VNNI HWY_INLINE __m512i add_quad_products(__m512i acc, __m512i u, __m512i x) {
#if HWY_TARGET == HWY_AVX3_DL
  return _mm512_dpbusd_epi32(acc, u, x);
#else
  const __m512i ones = _mm512_set1_epi16(1);
  const __m512i low = _mm512_and_si512(u, _mm512_set1_epi8(0x7F));
  const __m512i top = _mm512_and_si512(_mm512_srli_epi16(u, 7), _mm512_set1_epi8(1));
  const __m512i sum_low = _mm512_madd_epi16(_mm512_maddubs_epi16(low, x), ones);
  const __m512i sum_top = _mm512_madd_epi16(_mm512_maddubs_epi16(top, x), ones);
  return _mm512_add_epi32(acc, _mm512_add_epi32(sum_low, _mm512_slli_epi32(sum_top, 7)));
#endif
}

// One 64-byte chunk of int4 codes against the even and odd activation codes of the same ks.
MNNPY_WEIGHT_QUANT_VNNI HWY_INLINE __m512i int4_codes_chunk(__m512i u, __m512i even, __m512i odd) {
  const __m512i nibble = _mm512_set1_epi8(15);
  const __m512i high = _mm512_and_si512(_mm512_srli_epi16(u, 4), nibble);
#if HWY_TARGET == HWY_AVX3_DL
  return _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), high, even), _mm512_and_si512(u, nibble), odd);
#else
  // Nibbles times codes: int16 pair sums of at most 2 * 15 * 128, two of them fit as well.
  const __m512i pairs = _mm512_add_epi16(_mm512_maddubs_epi16(high, even),
                                         _mm512_maddubs_epi16(_mm512_and_si512(u, nibble), odd));
  return _mm512_madd_epi16(pairs, _mm512_set1_epi16(1));
#endif
}

MNNPY_WEIGHT_QUANT_VNNI HWY_INLINE __m512i int4_chunk(const uint8_t* codes, __m512i even, __m512i odd) {
  return int4_codes_chunk(_mm512_loadu_si512((const void*)codes), even, odd);
}

// Four vectors holding one sub-block per 128-bit lane (a[c]: sub-blocks 4c to 4c + 3) to the 16
// sub-block sums in order.
MNNPY_WEIGHT_QUANT_VNNI HWY_INLINE __m512i sum_sub_blocks(const __m512i* a) {
  const __m512i s01 = _mm512_add_epi32(_mm512_unpacklo_epi32(a[0], a[1]), _mm512_unpackhi_epi32(a[0], a[1]));
  const __m512i s23 = _mm512_add_epi32(_mm512_unpacklo_epi32(a[2], a[3]), _mm512_unpackhi_epi32(a[2], a[3]));
  // Lane 4q + c now holds sub-block 4c + q.
  const __m512i t = _mm512_add_epi32(_mm512_unpacklo_epi64(s01, s23), _mm512_unpackhi_epi64(s01, s23));
  return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), t);
}

// Bytes [0, bytes) of a 64-byte chunk (the rest zero): a group's last sub-blocks.
MNNPY_WEIGHT_QUANT_VNNI HWY_INLINE __m512i load_first_bytes(const void* p, int64_t bytes) {
  if (bytes >= 64) return _mm512_loadu_si512(p);
  return bytes <= 0 ? _mm512_setzero_si512() : _mm512_maskz_loadu_epi8((__mmask64)((1ULL << bytes) - 1), p);
}

// The integer sums of group g (sub-blocks 16g to 16g + count - 1; count < 16 only for the last,
// partial group, whose missing sub-blocks sum to zero) of NR weight rows against one activation
// row.
template <int BITS, int NR, bool kPartial>
MNNPY_WEIGHT_QUANT_VNNI HWY_INLINE void group_sums(const uint8_t* const* rows, const int8_t* q, int64_t K, int64_t g,
                                                   int64_t count, __m512i* sums) {
  __m512i a[NR][4];
  if constexpr (BITS == 4) {
    const int64_t at = g * kChains * kSub / 2;
    for (int c = 0; c < 4; ++c) {
      // A chunk: 4 sub-blocks of 16 code bytes.
      const int64_t bytes = kPartial ? (count - 4 * c) * (kSub / 2) : 64;
      if (kPartial && bytes <= 0) {
        for (int r = 0; r < NR; ++r) a[r][c] = _mm512_setzero_si512();
        continue;
      }
      const __m512i even = load_first_bytes(q + at + 64 * c, bytes);
      const __m512i odd = load_first_bytes(q + K / 2 + at + 64 * c, bytes);
      for (int r = 0; r < NR; ++r) {
        a[r][c] = kPartial ? int4_codes_chunk(load_first_bytes(rows[r] + at + 64 * c, bytes), even, odd)
                           : int4_chunk(rows[r] + at + 64 * c, even, odd);
      }
    }
  } else {
    const int64_t at = g * kChains * kSub;
    for (int c = 0; c < 4; ++c) {
      // A chunk: 4 sub-blocks of 32 code bytes, two vectors.
      const int64_t bytes = kPartial ? (count - 4 * c) * kSub : 128;
      const __m512i x0 = load_first_bytes(q + at + 128 * c, bytes);
      const __m512i x1 = load_first_bytes(q + at + 128 * c + 64, bytes - 64);
      for (int r = 0; r < NR; ++r) {
        const __m512i zero = _mm512_setzero_si512();
        const __m512i p0 = add_quad_products(zero, load_first_bytes(rows[r] + at + 128 * c, bytes), x0);
        const __m512i p1 = add_quad_products(zero, load_first_bytes(rows[r] + at + 128 * c + 64, bytes - 64), x1);
        // Sub-blocks 4c, 4c + 1 (two 128-bit lanes each), then 4c + 2, 4c + 3: one per lane.
        a[r][c] = _mm512_add_epi32(_mm512_shuffle_i32x4(p0, p1, 0x88), _mm512_shuffle_i32x4(p0, p1, 0xDD));
      }
    }
  }
  for (int r = 0; r < NR; ++r) sums[r] = sum_sub_blocks(a[r]);
}

// 16 lanes of per-block values for sub-blocks from the one in block `first`, each block's value
// repeated over its `per_block` sub-blocks (1, 2 or 4); `blocks` of them (fewer than 16 /
// per_block in a partial group: the other lanes zero).
MNNPY_WEIGHT_QUANT_VNNI HWY_INLINE __m512 block_floats(const float* first, int per_block, int64_t blocks) {
  const __m512 v = _mm512_maskz_loadu_ps((__mmask16)((1u << blocks) - 1), first);
  if (per_block == 1) return v;
  const __m512i index = _mm512_srli_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                          per_block == 2 ? 1 : 2);
  return _mm512_permutexvar_ps(index, v);
}

MNNPY_WEIGHT_QUANT_VNNI HWY_INLINE __m512i block_zeros(const uint8_t* first, int per_block, int64_t blocks) {
  const __m512i z = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8((__mmask16)((1u << blocks) - 1), first));
  if (per_block == 1) return z;
  const __m512i index = _mm512_srli_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                          per_block == 2 ? 1 : 2);
  return _mm512_permutexvar_epi32(index, z);
}

// Adds group g's sub-block products (count of them) of NR weight rows to their chains acc.
template <int BITS, int NR, bool kPartial>
MNNPY_WEIGHT_QUANT_VNNI HWY_INLINE void add_group(const BlockQuantWeights& w, const ActivationCodes& x,
                                                  const uint8_t* const* rows, int64_t n0, int64_t i, int64_t g,
                                                  int64_t count, __m512* acc) {
  const int64_t K = w.k, subs = K / kSub, blocks = K / w.block;
  const int per_block = (int)(w.block / kSub);
  __m512i sums[NR];
  group_sums<BITS, NR, kPartial>(rows, x.codes + i * K, K, g, count, sums);
  const __mmask16 lanes = (__mmask16)((1u << count) - 1);
  const __m512i code_sums = _mm512_maskz_loadu_epi32(lanes, x.sums + i * subs + g * kChains);
  const __m512 x_scales = _mm512_maskz_loadu_ps(lanes, x.scales + i * subs + g * kChains);
  const int64_t first_block = g * kChains / per_block, group_blocks = count / per_block;
  for (int r = 0; r < NR; ++r) {
    const __m512i centred =
        w.zeros ? _mm512_mullo_epi32(block_zeros(w.zeros + (n0 + r) * blocks + first_block, per_block, group_blocks),
                                     code_sums)
                : _mm512_slli_epi32(code_sums, BITS - 1);
    const __m512 scale =
        _mm512_mul_ps(block_floats(w.scales + (n0 + r) * blocks + first_block, per_block, group_blocks), x_scales);
    // Lanes past count: 0 * 0 added, which leaves their chains as they are.
    acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(sums[r], centred)), scale, acc[r]);
  }
}

// Outputs (i, n0 .. n0 + NR - 1).
template <int BITS, int NR>
MNNPY_WEIGHT_QUANT_VNNI void dot_tile(const BlockQuantWeights& w, const ActivationCodes& x, int64_t n0, int64_t i,
                                      const float* bias, float* out) {
  const int64_t K = w.k, subs = K / kSub, groups = subs / kChains;
  const uint8_t* rows[NR];
  for (int r = 0; r < NR; ++r) rows[r] = w.codes + (n0 + r) * (K * BITS / 8);
  __m512 acc[NR];
  for (int r = 0; r < NR; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t g = 0; g < groups; ++g) add_group<BITS, NR, false>(w, x, rows, n0, i, g, kChains, acc);
  if (subs % kChains) add_group<BITS, NR, true>(w, x, rows, n0, i, groups, subs % kChains, acc);
  for (int r = 0; r < NR; ++r) {
    // finish_output's halvings in registers: chains j + j + 8, then j + j + 4, j + j + 2, j + j + 1.
    const __m256 eighths = _mm256_add_ps(_mm512_castps512_ps256(acc[r]), _mm512_extractf32x8_ps(acc[r], 1));
    __m128 v = _mm_add_ps(_mm256_castps256_ps128(eighths), _mm256_extractf128_ps(eighths, 1));
    v = _mm_add_ps(v, _mm_movehl_ps(v, v));
    v = _mm_add_ss(v, _mm_shuffle_ps(v, v, 1));
    const float total = _mm_cvtss_f32(v);
    out[r] = bias ? total + bias[n0 + r] : total;
  }
}
#undef MNNPY_WEIGHT_QUANT_VNNI

#elif HWY_TARGET == HWY_AVX2
constexpr int kTileRows = 2;

// Per int32 lane, the four products of unsigned u and signed x bytes (low 7 bits and top bit of u
// apart, as on AVX-512 without VNNI).
HWY_INLINE __m256i quad_products(__m256i u, __m256i x) {
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i low = _mm256_and_si256(u, _mm256_set1_epi8(0x7F));
  const __m256i top = _mm256_and_si256(_mm256_srli_epi16(u, 7), _mm256_set1_epi8(1));
  const __m256i sum_low = _mm256_madd_epi16(_mm256_maddubs_epi16(low, x), ones);
  const __m256i sum_top = _mm256_madd_epi16(_mm256_maddubs_epi16(top, x), ones);
  return _mm256_add_epi32(sum_low, _mm256_slli_epi32(sum_top, 7));
}

HWY_INLINE __m256i int4_codes_chunk(__m256i u, __m256i even, __m256i odd) {
  const __m256i nibble = _mm256_set1_epi8(15);
  const __m256i high = _mm256_and_si256(_mm256_srli_epi16(u, 4), nibble);
  const __m256i pairs = _mm256_add_epi16(_mm256_maddubs_epi16(high, even),
                                         _mm256_maddubs_epi16(_mm256_and_si256(u, nibble), odd));
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

// 32 bytes at p, or (for a half group's last sub-blocks) the first `bytes` of them, the rest zero:
// 0, 16 or 32 for int4 (16 code bytes a sub-block), 0 or 32 for int8 codes.
HWY_INLINE __m256i load_first_bytes(const void* p, int64_t bytes) {
  if (bytes >= 32) return _mm256_loadu_si256((const __m256i*)p);
  if (bytes >= 16) return _mm256_zextsi128_si256(_mm_loadu_si128((const __m128i*)p));
  return _mm256_setzero_si256();
}

// The sums of `count` (8, or fewer in the last, partial half group: the others zero) sub-blocks
// from first_sub on, in order, of NR weight rows.
template <int BITS, int NR, bool kPartial>
HWY_INLINE void half_group_sums(const uint8_t* const* rows, const int8_t* q, int64_t K, int64_t first_sub,
                                int64_t count, __m256i* sums) {
  if constexpr (BITS == 4) {
    // A 32-byte chunk holds two sub-blocks, one per 128-bit lane.
    const int64_t at = first_sub * kSub / 2;
    __m256i a[NR][4];
    for (int c = 0; c < 4; ++c) {
      const int64_t bytes = kPartial ? (count - 2 * c) * (kSub / 2) : 32;
      const __m256i even = load_first_bytes(q + at + 32 * c, bytes);
      const __m256i odd = load_first_bytes(q + K / 2 + at + 32 * c, bytes);
      for (int r = 0; r < NR; ++r) a[r][c] = int4_codes_chunk(load_first_bytes(rows[r] + at + 32 * c, bytes), even, odd);
    }
    for (int r = 0; r < NR; ++r) {
      // Lanes 0-3: the low halves' sums (sub-blocks 0, 2, 4, 6), lanes 4-7 the high ones'.
      const __m256i t = _mm256_hadd_epi32(_mm256_hadd_epi32(a[r][0], a[r][1]), _mm256_hadd_epi32(a[r][2], a[r][3]));
      sums[r] = _mm256_permutevar8x32_epi32(t, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    }
  } else {
    // A 32-byte chunk is one sub-block.
    const int64_t at = first_sub * kSub;
    __m256i h[NR][4];
    for (int c = 0; c < 4; ++c) {
      const int64_t bytes0 = kPartial ? (count - 2 * c) * kSub : 32, bytes1 = kPartial ? bytes0 - kSub : 32;
      const __m256i x0 = load_first_bytes(q + at + 64 * c, bytes0);
      const __m256i x1 = load_first_bytes(q + at + 64 * c + 32, bytes1);
      for (int r = 0; r < NR; ++r) {
        h[r][c] = _mm256_hadd_epi32(quad_products(load_first_bytes(rows[r] + at + 64 * c, bytes0), x0),
                                    quad_products(load_first_bytes(rows[r] + at + 64 * c + 32, bytes1), x1));
      }
    }
    for (int r = 0; r < NR; ++r) {
      // Per 128-bit lane: the partial sums of sub-blocks 0-3, then 4-7; the two lanes then add.
      const __m256i lo = _mm256_hadd_epi32(h[r][0], h[r][1]), hi = _mm256_hadd_epi32(h[r][2], h[r][3]);
      sums[r] = _mm256_add_epi32(_mm256_permute2x128_si256(lo, hi, 0x20), _mm256_permute2x128_si256(lo, hi, 0x31));
    }
  }
}

// 8 lanes of per-block values for sub-blocks from the one in block `first` (see the AVX-512
// twin), `blocks` of them.
HWY_INLINE __m256 block_floats(const float* first, int per_block, int64_t blocks) {
  float values[8] = {};
  std::memcpy(values, first, sizeof(float) * (size_t)blocks);
  if (per_block == 1) return _mm256_loadu_ps(values);
  const __m256i index = _mm256_srli_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), per_block == 2 ? 1 : 2);
  return _mm256_permutevar8x32_ps(_mm256_loadu_ps(values), index);
}

HWY_INLINE __m256i block_zeros(const uint8_t* first, int per_block, int64_t blocks) {
  uint8_t bytes[16] = {};
  std::memcpy(bytes, first, (size_t)blocks);
  const __m256i z = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)bytes));
  if (per_block == 1) return z;
  const __m256i index = _mm256_srli_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), per_block == 2 ? 1 : 2);
  return _mm256_permutevar8x32_epi32(z, index);
}

// Adds the `count` sub-block products from first_sub on (8, or fewer in the last half group) of
// NR weight rows to their chains acc (first_sub % 16 picks the chains' half).
template <int BITS, int NR, bool kPartial>
HWY_INLINE void add_half_group(const BlockQuantWeights& w, const ActivationCodes& x, const uint8_t* const* rows,
                               int64_t n0, int64_t i, int64_t first_sub, int64_t count, __m256 (*acc)[2]) {
  const int64_t K = w.k, subs = K / kSub, blocks = K / w.block;
  const int per_block = (int)(w.block / kSub);
  __m256i sums[NR];
  half_group_sums<BITS, NR, kPartial>(rows, x.codes + i * K, K, first_sub, count, sums);
  int32_t code_sum_values[8] = {};
  float x_scale_values[8] = {};
  std::memcpy(code_sum_values, x.sums + i * subs + first_sub, sizeof(int32_t) * (size_t)count);
  std::memcpy(x_scale_values, x.scales + i * subs + first_sub, sizeof(float) * (size_t)count);
  const __m256i code_sums = _mm256_loadu_si256((const __m256i*)code_sum_values);
  const __m256 x_scales = _mm256_loadu_ps(x_scale_values);
  const int64_t first_block = first_sub / per_block, half_blocks = count / per_block;
  const int h = (int)(first_sub % kChains) / 8;
  for (int r = 0; r < NR; ++r) {
    const __m256i centred =
        w.zeros ? _mm256_mullo_epi32(block_zeros(w.zeros + (n0 + r) * blocks + first_block, per_block, half_blocks),
                                     code_sums)
                : _mm256_slli_epi32(code_sums, BITS - 1);
    const __m256 scale =
        _mm256_mul_ps(block_floats(w.scales + (n0 + r) * blocks + first_block, per_block, half_blocks), x_scales);
    // Lanes past count: 0 * 0 added, which leaves their chains as they are.
    acc[r][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(sums[r], centred)), scale, acc[r][h]);
  }
}

template <int BITS, int NR>
void dot_tile(const BlockQuantWeights& w, const ActivationCodes& x, int64_t n0, int64_t i, const float* bias,
              float* out) {
  const int64_t K = w.k, subs = K / kSub;
  const uint8_t* rows[NR];
  for (int r = 0; r < NR; ++r) rows[r] = w.codes + (n0 + r) * (K * BITS / 8);
  __m256 acc[NR][2];  // chains 0-7 and 8-15
  for (int r = 0; r < NR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  int64_t first_sub = 0;
  for (; first_sub + 8 <= subs; first_sub += 8) add_half_group<BITS, NR, false>(w, x, rows, n0, i, first_sub, 8, acc);
  if (first_sub < subs) add_half_group<BITS, NR, true>(w, x, rows, n0, i, first_sub, subs - first_sub, acc);
  for (int r = 0; r < NR; ++r) {
    // finish_output's halvings in registers: chains j + j + 8, then j + j + 4, j + j + 2, j + j + 1.
    const __m256 eighths = _mm256_add_ps(acc[r][0], acc[r][1]);
    __m128 v = _mm_add_ps(_mm256_castps256_ps128(eighths), _mm256_extractf128_ps(eighths, 1));
    v = _mm_add_ps(v, _mm_movehl_ps(v, v));
    v = _mm_add_ss(v, _mm_shuffle_ps(v, v, 1));
    const float total = _mm_cvtss_f32(v);
    out[r] = bias ? total + bias[n0 + r] : total;
  }
}

#else
constexpr int kTileRows = 1;

// The portable targets: every sub-block through the shared scalar steps.
template <int BITS, int NR>
void dot_tile(const BlockQuantWeights& w, const ActivationCodes& x, int64_t n0, int64_t i, const float* bias,
              float* out) {
  for (int r = 0; r < NR; ++r) {
    float chains[kChains] = {};
    add_sub_blocks(w, n0 + r, x, i, 0, w.k / kSub, chains);
    out[r] = finish_output(chains, bias, n0 + r);
  }
}
#endif

// Outputs (i, n) for weight rows [n0, n1) and activation rows [i0, i1): kTileRows weight rows at a
// time, which stay in L1 while every activation row meets them.
template <int BITS>
void dot_rows(const BlockQuantWeights& w, const ActivationCodes& x, int64_t i0, int64_t i1, int64_t n0, int64_t n1,
              const float* bias, float* c) {
  // The codes and scales of the tile kPrefetchRows rows on are requested while this one computes:
  // a few rows of activations leave the product bound by memory latency, whose lines the
  // hardware prefetcher, new to each matrix, does not request early enough.
  const int64_t row_bytes = w.k * BITS / 8, blocks = w.k / w.block;
  int64_t n = n0;
  for (; n + kTileRows <= n1; n += kTileRows) {
    if (n + kPrefetchRows + kTileRows <= n1) {
      const char* codes = reinterpret_cast<const char*>(w.codes + (n + kPrefetchRows) * row_bytes);
      for (int64_t at = 0; at < kTileRows * row_bytes; at += 64) __builtin_prefetch(codes + at);
      const char* scales = reinterpret_cast<const char*>(w.scales + (n + kPrefetchRows) * blocks);
      for (int64_t at = 0; at < kTileRows * blocks * 4; at += 64) __builtin_prefetch(scales + at);
    }
    for (int64_t i = i0; i < i1; ++i) dot_tile<BITS, kTileRows>(w, x, n, i, bias, c + i * w.n + n);
  }
  for (; n < n1; ++n)
    for (int64_t i = i0; i < i1; ++i) dot_tile<BITS, 1>(w, x, n, i, bias, c + i * w.n + n);
}

bool AmxTargetImpl() { return HWY_TARGET == HWY_AVX3_DL; }  // the target gemm_int8 takes AMX on too

void DotRowsImpl(const BlockQuantWeights& w, const ActivationCodes& x, int64_t i0, int64_t i1, int64_t n0, int64_t n1,
                 const float* bias, float* c) {
  if (w.bits == 4) dot_rows<4>(w, x, i0, i1, n0, n1, bias, c);
  else dot_rows<8>(w, x, i0, i1, n0, n1, bias, c);
}

// Rows [i0, i1) of a as int8 codes (split_nibble_order, the vector path's for int4 weights: even
// ks first, then odd ks; else in k order), with each
// sub-block's scale and code sum. IEEE steps only (max of magnitudes, one division, a product,
// clamping, rounding half to even), so every target gives the same codes.
void QuantizeRowsImpl(const float* a, int64_t i0, int64_t i1, int64_t K, bool split_nibble_order, int8_t* codes,
                      float* scales, int32_t* sums) {
  namespace hn = hwy::HWY_NAMESPACE;
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const int64_t lanes = (int64_t)hn::Lanes(d), subs = K / kSub;
  HWY_ALIGN int32_t values[kSub];
  for (int64_t i = i0; i < i1; ++i) {
    const float* row = a + i * K;
    int8_t* out = codes + i * K;
    for (int64_t s = 0; s < subs; ++s) {
      const float* x = row + s * kSub;
      auto top = hn::Zero(d);
      auto finite = hn::Zero(d);  // x - x: 0 for finite values, NaN for inf and NaN
      for (int64_t j = 0; j < kSub; j += lanes) {
        const auto v = hn::LoadU(d, x + j);
        top = hn::Max(top, hn::Abs(v));
        finite = hn::Add(finite, hn::Sub(v, v));
      }
      const float largest = hn::GetLane(hn::MaxOfLanes(d, top));
      const bool all_finite = hn::GetLane(hn::SumOfLanes(d, finite)) == 0.0f;
      if (!all_finite) {
        // inf or NaN: a scale of NaN makes every output of the row NaN, as the float product
        // would be NaN or infinite there; the codes are zero.
        scales[i * subs + s] = std::nanf("");
        sums[i * subs + s] = 0;
        if (split_nibble_order) {
          for (int64_t k = s * kSub; k < (s + 1) * kSub; ++k) out[(k % 2) * (K / 2) + k / 2] = 0;
        } else {
          std::memset(out + s * kSub, 0, kSub);
        }
        continue;
      }
      const auto ratio = hn::Set(d, largest > 0.0f ? 127.0f / largest : 0.0f);
      scales[i * subs + s] = largest / 127.0f;
      auto total = hn::Zero(di);
      const auto low = hn::Set(d, -127.0f), high = hn::Set(d, 127.0f);
      for (int64_t j = 0; j < kSub; j += lanes) {
        const auto scaled = hn::Min(high, hn::Max(low, hn::Mul(hn::LoadU(d, x + j), ratio)));
        const auto code = hn::ConvertTo(di, hn::Round(scaled));
        total = hn::Add(total, code);
        hn::Store(code, di, values + j);
      }
      sums[i * subs + s] = hn::GetLane(hn::SumOfLanes(di, total));
      if (split_nibble_order) {
        for (int64_t j = 0; j < kSub; ++j) {
          const int64_t k = s * kSub + j;
          out[(k % 2) * (K / 2) + k / 2] = (int8_t)values[j];
        }
      } else {
        for (int64_t j = 0; j < kSub; ++j) out[s * kSub + j] = (int8_t)values[j];
      }
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
HWY_EXPORT(DotRowsImpl);
HWY_EXPORT(QuantizeRowsImpl);
HWY_EXPORT(AmxTargetImpl);

using namespace weight_quant_int8_detail;

namespace {

constexpr size_t align64(size_t bytes) { return (bytes + 63) & ~size_t(63); }

}  // namespace

// Rows of scratch for m activation rows: a multiple of 16, the AMX path's tile of rows.
int64_t padded_rows(int64_t m) { return (m + 15) / 16 * 16; }

size_t weight_quant_int8_scratch_bytes(int64_t m, const BlockQuantWeights& w) {
  const size_t rows = (size_t)padded_rows(m), subs = (size_t)(w.k / kSub);
  return align64(rows * (size_t)w.k) + align64(rows * subs * sizeof(float)) + rows * subs * sizeof(int32_t);
}

void weight_quant_matmul_int8(const float* a, int64_t m, const BlockQuantWeights& w, const float* bias, float* c,
                              void* scratch, ThreadPool* pool) {
  if (m == 0 || w.n == 0) return;
  const int64_t K = w.k, subs = K / kSub, rows = padded_rows(m);
  int8_t* codes = static_cast<int8_t*>(scratch);
  float* scales = reinterpret_cast<float*>(static_cast<char*>(scratch) + align64((size_t)(rows * K)));
  int32_t* sums = reinterpret_cast<int32_t*>(reinterpret_cast<char*>(scales) + align64((size_t)(rows * subs) * sizeof(float)));
  const bool amx = HWY_DYNAMIC_DISPATCH(AmxTargetImpl)() && int8_amx_chosen(m, K) && weight_quant_amx_usable();
  parallel_for(pool, m, std::max<int64_t>(1, 8192 / K), [&](int64_t i0, int64_t i1) {
    HWY_DYNAMIC_DISPATCH(QuantizeRowsImpl)(a, i0, i1, K, w.bits == 4 && !amx, codes, scales, sums);
  });
  if (amx) {
    std::memset(codes + m * K, 0, (size_t)((rows - m) * K));  // the last tile's rows past m
    weight_quant_int8_amx(codes, scales, sums, m, w, bias, c, pool);
    return;
  }
  const ActivationCodes x{codes, scales, sums, K, subs};
  for (int64_t i0 = 0; i0 < m; i0 += kRowsPerPass) {
    const int64_t i1 = std::min(m, i0 + kRowsPerPass);
    const int64_t bytes_per_row = std::max<int64_t>(1, K * w.bits / 8 * (i1 - i0));
    const int64_t grain = std::max<int64_t>(4, kTaskBytes / bytes_per_row);
    parallel_for(pool, w.n, grain, [&](int64_t n0, int64_t n1) {
      HWY_DYNAMIC_DISPATCH(DotRowsImpl)(w, x, i0, i1, n0, n1, bias, c);
    });
  }
}

}  // namespace cpu
}  // namespace mnnpy
#endif
