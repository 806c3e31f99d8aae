// The AMX-INT8 path of weight_quant_matmul_int8 (weight_quant.h): block-quantized weights times
// int8 activation codes on 16 x 16 tiles, one 32-k sub-block per tile product (TDPBSUD: signed
// activations, unsigned codes), each sub-block's int32 sums then scaled into the outputs' 16
// float chains exactly as the vector path does (chain s % 16, the same fma, the same halvings at
// the end), so both give the same bits.
//
// Per task a pair of column tiles (32 weight rows): their codes are first laid out as B tiles,
// per sub-block 8 rows of 16 columns x 4 consecutive k (int4 codes expanded to bytes), with each
// sub-block's weight scales (and zero points) per column beside them; then every 16 activation
// rows run over all sub-blocks against them, the tile sums of every sub-block stored, then per
// output row the 16 chains of 16 columns in registers.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backend/cpu/amx_support.h"
#include "backend/cpu/thread_buffers.h"
#include "backend/cpu/weight_quant.h"
#include "mnnpy/thread_pool.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define MNNPY_WEIGHT_QUANT_AMX_X86 1
#include <immintrin.h>
#endif

namespace mnnpy {
namespace cpu {

#ifdef MNNPY_WEIGHT_QUANT_AMX_X86
namespace {

#define MNNPY_AMX_TARGET __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,amx-tile,amx-int8")))

constexpr int64_t kSub = kActivationBlock;  // k per sub-block: one tile product's depth
constexpr int kChains = 16;
constexpr int64_t kRows = 16;               // activation rows per tile
constexpr int64_t kCols = 32;               // weight rows (output columns) per task: two B tiles
constexpr int64_t kTileBytes = 8 * 64;      // a B tile of one sub-block: 8 rows of 16 x 4 codes
// Tile registers (the intrinsics take literal numbers): C0 0, C1 1, A 2, B0 3, B1 4.
constexpr int kTileC0 = 0, kTileC1 = 1, kTileA = 2, kTileB0 = 3, kTileB1 = 4;

// Tiles: C0, C1 16 rows x 16 int32; A 16 rows x 32 int8; B0, B1 8 rows x 64 uint8.
MNNPY_AMX_TARGET void configure_tiles() {
  AmxTileConfig cfg;
  for (int t : {kTileC0, kTileC1}) {
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  cfg.rows[kTileA] = 16;
  cfg.colsb[kTileA] = (uint16_t)kSub;
  for (int t : {kTileB0, kTileB1}) {
    cfg.rows[t] = (uint8_t)(kSub / 4);
    cfg.colsb[t] = 64;
  }
  __asm__ volatile("" : : "r"(&cfg) : "memory");  // all 64 bytes stored before LDTILECFG reads them
  _tile_loadconfig(&cfg);
}

// Weight rows n0 .. n0 + 15 (those below n) as B tiles of every sub-block: tile s at
// dst + s * kTileBytes * 2 + t * kTileBytes (t: which of the pair), row q holding per column the
// codes of k = 32 s + 4 q .. + 3 as bytes. Columns at or past n are zero.
MNNPY_AMX_TARGET void pack_tile_columns(const BlockQuantWeights& w, int64_t n0, int t, uint8_t* dst) {
  const int64_t K = w.k, subs = K / kSub, row_bytes = K * w.bits / 8;
  const int64_t valid = std::max<int64_t>(0, std::min<int64_t>(16, w.n - n0));
  const __mmask16 lanes = (__mmask16)((1u << valid) - 1);
  const __m512i rows = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                          _mm512_set1_epi32((int32_t)row_bytes));
  const uint8_t* base = w.codes + n0 * row_bytes;
  if (w.bits == 8) {
    for (int64_t s = 0; s < subs; ++s) {
      uint8_t* tile = dst + (s * 2 + t) * kTileBytes;
      for (int q = 0; q < 8; ++q) {
        const __m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), lanes, rows, base + s * kSub + 4 * q, 1);
        _mm512_storeu_si512(tile + 64 * q, v);
      }
    }
    return;
  }
  // int4: a dword of codes (4 bytes, k = 8h .. 8h + 7 of the sub-block, even k in the high
  // nibbles) gives rows 2h and 2h + 1.
  const __m512i nibble = _mm512_set1_epi8(15);
  const __m512i even = _mm512_setr_epi32(0, 2, 16, 18, 4, 6, 20, 22, 8, 10, 24, 26, 12, 14, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  for (int64_t s = 0; s < subs; ++s) {
    uint8_t* tile = dst + (s * 2 + t) * kTileBytes;
    for (int h = 0; h < 4; ++h) {
      const __m512i x = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), lanes, rows, base + s * kSub / 2 + 4 * h, 1);
      const __m512i low = _mm512_and_si512(x, nibble), high = _mm512_and_si512(_mm512_srli_epi16(x, 4), nibble);
      // Per 128-bit lane (columns 4L .. 4L + 3): u = rows 2h, 2h+1 of column 4L, then of 4L + 1;
      // v the same of columns 4L + 2, 4L + 3.
      const __m512i u = _mm512_unpacklo_epi8(high, low), v = _mm512_unpackhi_epi8(high, low);
      _mm512_storeu_si512(tile + 64 * (2 * h), _mm512_permutex2var_epi32(u, even, v));
      _mm512_storeu_si512(tile + 64 * (2 * h + 1), _mm512_permutex2var_epi32(u, odd, v));
    }
  }
}

struct TaskBuffers {
  uint8_t* tiles;     // subs * 2 B tiles
  float* scales;      // [subs][kCols]: each sub-block's weight scale per column
  int32_t* zeros;     // [subs][kCols]: zero points (asymmetric weights)
  int32_t* sums;      // [kRows][subs][kCols]: the tile sums of every sub-block, a row's in a run
};

// The weight scales (and zero points) of columns n0 .. n0 + 31 per sub-block.
void gather_block_values(const BlockQuantWeights& w, int64_t n0, const TaskBuffers& b) {
  const int64_t subs = w.k / kSub, blocks = w.k / w.block, per_block = w.block / kSub;
  for (int64_t c = 0; c < kCols; ++c) {
    const int64_t n = n0 + c;
    for (int64_t s = 0; s < subs; ++s) {
      const int64_t at = n * blocks + s / per_block;
      b.scales[s * kCols + c] = n < w.n ? w.scales[at] : 0.0f;
      if (w.zeros) b.zeros[s * kCols + c] = n < w.n ? (int32_t)w.zeros[at] : 0;
    }
  }
}

// Adds sub-block s of output row r's 16 columns from `half` to its chain acc.
MNNPY_AMX_TARGET inline __attribute__((always_inline)) void add_sub_block(const BlockQuantWeights& w, const TaskBuffers& b,
                                                    const int32_t* x_sums, const float* x_scales, int64_t r,
                                                    int half, int64_t s, __m512& acc) {
  const __m512i sums = _mm512_loadu_si512((const void*)(b.sums + (r * (w.k / kSub) + s) * kCols + 16 * half));
  const __m512i code_sum = _mm512_set1_epi32(x_sums[s]);
  const __m512i centred =
      w.zeros ? _mm512_mullo_epi32(_mm512_loadu_si512((const void*)(b.zeros + s * kCols + 16 * half)), code_sum)
              : _mm512_slli_epi32(code_sum, w.bits - 1);
  const __m512 scale = _mm512_mul_ps(_mm512_loadu_ps(b.scales + s * kCols + 16 * half), _mm512_set1_ps(x_scales[s]));
  acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(sums, centred)), scale, acc);
}

// Outputs of activation rows i0 .. i0 + 15 (those below m) and columns n0 .. n0 + 31 (below n):
// every sub-block's tile sums first, then per output row and 16 columns the 16 chains in
// registers.
MNNPY_AMX_TARGET void tile_rows(const BlockQuantWeights& w, const int8_t* codes, const float* x_scales,
                                const int32_t* x_sums, int64_t m, int64_t i0, int64_t n0, const float* bias,
                                float* c, const TaskBuffers& b) {
  const int64_t K = w.k, subs = K / kSub;
  const int64_t rows = std::min(kRows, m - i0);
  for (int64_t s = 0; s < subs; ++s) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_loadd(2, codes + i0 * K + s * kSub, K);
    _tile_loadd(3, b.tiles + s * 2 * kTileBytes, 64);
    _tile_loadd(4, b.tiles + (s * 2 + 1) * kTileBytes, 64);
    _tile_dpbsud(0, 2, 3);
    _tile_dpbsud(1, 2, 4);
    _tile_stored(0, b.sums + s * kCols, subs * kCols * sizeof(int32_t));
    _tile_stored(1, b.sums + s * kCols + 16, subs * kCols * sizeof(int32_t));
  }
  const int64_t valid = std::min<int64_t>(kCols, w.n - n0);
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t* row_sums = x_sums + (i0 + r) * subs;
    const float* row_scales = x_scales + (i0 + r) * subs;
    for (int half = 0; half < 2; ++half) {
      const int64_t cols = std::min<int64_t>(16, valid - 16 * half);
      if (cols <= 0) break;
      __m512 acc[kChains];
      for (int j = 0; j < kChains; ++j) acc[j] = _mm512_setzero_ps();
      for (int64_t s = 0; s < subs; s += kChains) {
        // Chain j takes sub-blocks s + j (indices known here, so the chains stay in registers).
#pragma GCC unroll 16
        for (int j = 0; j < kChains; ++j) {
          if (s + j < subs) add_sub_block(w, b, row_sums, row_scales, r, half, s + j, acc[j]);
        }
      }
      // The chains summed in halves (j + j + 8, then + 4, + 2, + 1), then the bias.
      for (int width = kChains / 2; width >= 1; width /= 2)
        for (int j = 0; j < width; ++j) acc[j] = _mm512_add_ps(acc[j], acc[j + width]);
      const __mmask16 lanes = (__mmask16)((1u << cols) - 1);
      __m512 out = acc[0];
      if (bias) out = _mm512_add_ps(out, _mm512_maskz_loadu_ps(lanes, bias + n0 + 16 * half));
      _mm512_mask_storeu_ps(c + (i0 + r) * w.n + n0 + 16 * half, lanes, out);
    }
  }
}

// Bytes of one task's buffers (TaskBuffers).
size_t weight_quant_amx_task_bytes(const BlockQuantWeights& w) {
  const size_t subs = (size_t)(w.k / kSub);
  return subs * 2 * kTileBytes + 2 * subs * kCols * 4 + subs * kRows * kCols * 4;
}

}  // namespace

bool weight_quant_amx_usable() { return amx_features().int8; }

namespace {

// Column pairs [p0, p1) of the product, on this thread's tiles.
MNNPY_AMX_TARGET void run_pairs(const int8_t* codes, const float* x_scales, const int32_t* x_sums, int64_t m,
                                const BlockQuantWeights& w, const float* bias, float* c, int64_t p0, int64_t p1) {
  const int64_t subs = w.k / kSub;
  char* base = reinterpret_cast<char*>(thread_buffer(0, (weight_quant_amx_task_bytes(w) + 3) / 4));
  TaskBuffers b;
  b.tiles = reinterpret_cast<uint8_t*>(base);
  b.scales = reinterpret_cast<float*>(base + subs * 2 * kTileBytes);
  b.zeros = reinterpret_cast<int32_t*>(b.scales + subs * kCols);
  b.sums = b.zeros + subs * kCols;
  configure_tiles();
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * kCols;
    pack_tile_columns(w, n0, 0, b.tiles);
    pack_tile_columns(w, n0 + 16, 1, b.tiles);
    gather_block_values(w, n0, b);
    for (int64_t i0 = 0; i0 < m; i0 += kRows) tile_rows(w, codes, x_scales, x_sums, m, i0, n0, bias, c, b);
  }
  _tile_release();
}

}  // namespace

void weight_quant_int8_amx(const int8_t* codes, const float* x_scales, const int32_t* x_sums, int64_t m,
                           const BlockQuantWeights& w, const float* bias, float* c, ThreadPool* pool) {
  parallel_for(pool, (w.n + kCols - 1) / kCols, 1, [&](int64_t p0, int64_t p1) {
    run_pairs(codes, x_scales, x_sums, m, w, bias, c, p0, p1);
  });
}

#else
bool weight_quant_amx_usable() { return false; }
void weight_quant_int8_amx(const int8_t*, const float*, const int32_t*, int64_t, const BlockQuantWeights&,
                           const float*, float*, ThreadPool*) {}
#endif

}  // namespace cpu
}  // namespace mnnpy
