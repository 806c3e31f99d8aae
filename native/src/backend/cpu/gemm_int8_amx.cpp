// The AMX-INT8 path of gemm_int8 (backend/cpu/gemm_int8_amx.h): detection and switch, A's copy
// into tile rows, the tile kernel, and the split of the work over threads.
#include "backend/cpu/gemm_int8_amx.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/cpu/amx_support.h"
#include "backend/cpu/thread_buffers.h"
#include "mnnpy/runtime_info.h"
#include "mnnpy/tensor.h"  // ValueError
#include "mnnpy/thread_pool.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define MNNPY_INT8_AMX_X86 1
#include <immintrin.h>
#endif

namespace mnnpy {
namespace cpu {

namespace {

// The thread_buffer slots of the vector path's driver, which this path replaces for a call.
enum BufferSlot : int { kRowsSlot = 0, kRowSumsSlot = 1 };

constexpr int64_t kTileRows = 16;                                    // rows of a C or A tile
constexpr int64_t kGroupBytes = kInt8Panel * kInt8Depth;             // one depth group of a panel
constexpr int64_t kTileGroups = kAmxInt8TileDepth / kInt8Depth;      // depth groups in one B tile
constexpr int64_t kBTileBytes = kTileGroups * kGroupBytes;           // 1024
constexpr int64_t kPrefetchTiles = 4;                                // how far ahead B is prefetched
constexpr int64_t kL2BlockBytes = 192 << 10;  // a task's rows of A, kept in L2
// Epilogues overlap the next block's products in tasks of at most this many blocks of rows, of at
// least this many depth steps (PendingEpilogue).
constexpr int64_t kOverlapRowBlocks = 2, kOverlapSteps = 4;
constexpr int64_t kRowsOuterBBytes = 32 << 10;  // B's bytes of a chunk of columns, kept in L1
// Work below this is not worth a thread (a few microseconds): multiply-adds, which the tiles run
// fast, plus the outputs, whose epilogue is the larger part of a layer with few depths.
constexpr int64_t kGrainMacs = int64_t(1) << 22;
constexpr int64_t kGrainOutputs = int64_t(1) << 15;
int64_t grains(int64_t M, int64_t N, int64_t K) { return M * N * K / kGrainMacs + M * N / kGrainOutputs; }
// Tasks of a product split by rows, on `threads` threads: grains a quarter of those, a whole number
// of tasks per thread (up to four). Each thread then reads the rows it wrote in the layer before
// (ThreadPool's shares), where one thread running all of a small layer (mobilenet_v2's 28x28 and
// 14x14 projections, 10-15 us) reads half its input from the other core's cache and takes longer
// than on one thread.
int64_t row_split_tasks(int64_t M, int64_t N, int64_t K, int threads) {
  const int64_t fine_grains = M * N * K / (kGrainMacs / 4) + M * N / (kGrainOutputs / 4);
  return fine_grains <= 1 ? 1 : std::min<int64_t>(4, ceil_div(fine_grains, threads)) * threads;
}

// Column blocks per task for `tasks` tasks over `blocks`; with byte outputs a whole number of
// pairs (64 bytes of a row: threads never write parts of one cache line).
int64_t column_task_blocks(int64_t blocks, int64_t tasks, bool byte_output) {
  const int64_t per_task = ceil_div(blocks, std::max<int64_t>(1, tasks));
  return byte_output ? round_up(per_task, 2) : per_task;
}
static_assert(kAmxInt8BlockCols == 2 * kInt8Panel, "a block spans two panels of B");
static_assert(kAmxInt8BlockRows == 2 * kTileRows, "a block spans two tiles of rows");

// The setting, read by every product and written by tests: its fields in atomics of their own (a
// product racing a change may see a mix, each part valid).
struct AmxSwitch {
  std::atomic<bool> on{true};
  std::atomic<int64_t> min_rows{kAmxInt8MinRows}, min_depth{kAmxInt8MinDepth};
  AmxSwitch() {
    const char* env = std::getenv("MNNPY_INT8_AMX");
    if (env && std::strcmp(env, "0") == 0) on.store(false);
  }
};

AmxSwitch& amx_switch() {
  static AmxSwitch s;
  return s;
}

#ifdef MNNPY_INT8_AMX_X86
// Rows [m0, m0 + rows) of A into dst (kAmxInt8BlockRows rows, `stride` bytes apart, of kp bytes: A,
// or A + 128 for an int8 A; zero past K and in the rows past `rows`), and their sums (of A as
// given) into row_sums[m0 ..], modulo 2^32. Zero (not 128) past K: products there are 0 whatever
// B's tile holds. AVX-512 (every AMX CPU has it): 64 depths a step, masked past K; the sums by
// vpsadbw over the stored bytes, less 128 K for an int8 A.
template <class T>
__attribute__((target("avx512f,avx512bw"))) void copy_rows(const T* a, int64_t lda, int64_t m0, int64_t rows,
                                                           int64_t K, int64_t kp, int64_t stride, uint8_t* dst,
                                                           int32_t* row_sums) {
  constexpr bool kSigned = std::is_signed<T>::value;
  const __m512i flip = _mm512_set1_epi8((char)0x80);
  for (int64_t r = 0; r < rows; ++r) {
    const T* src = a + (m0 + r) * lda;
    uint8_t* out = dst + r * stride;
    __m512i sums = _mm512_setzero_si512();
    for (int64_t k = 0; k < kp; k += 64) {
      const int64_t left = K - k;
      const __mmask64 valid = left >= 64 ? ~__mmask64(0) : left > 0 ? (__mmask64(1) << left) - 1 : __mmask64(0);
      __m512i v = _mm512_maskz_loadu_epi8(valid, src + k);
      if (kSigned) v = _mm512_maskz_mov_epi8(valid, _mm512_xor_si512(v, flip));
      sums = _mm512_add_epi64(sums, _mm512_sad_epu8(v, _mm512_setzero_si512()));
      _mm512_storeu_si512(out + k, v);
    }
    alignas(64) uint64_t lanes[8];
    _mm512_store_si512(lanes, sums);
    uint64_t sum = 0;
    for (uint64_t lane : lanes) sum += lane;
    if (kSigned) sum -= 128u * (uint64_t)K;
    row_sums[m0 + r] = (int32_t)(uint32_t)sum;
  }
  for (int64_t r = rows; r < kAmxInt8BlockRows; ++r) std::memset(dst + r * stride, 0, (size_t)kp);
}

// Every tile 16 rows x 64 bytes: 0-3 C (int32), 4-5 A (16 rows x 64 uint8 depths), 6-7 B (16
// depth groups x 16 columns x 4 int8). Tile state is per thread: each thread loads its own.
__attribute__((target("amx-tile"))) void configure_tiles() {
  AmxTileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.rows[t] = (uint8_t)kTileRows;
    cfg.colsb[t] = 64;
  }
  // The intrinsic's asm names only the first bytes of the configuration: make the compiler store
  // all 64 before LDTILECFG reads them.
  __asm__ volatile("" : : "r"(&cfg) : "memory");
  _tile_loadconfig(&cfg);
}

__attribute__((target("amx-tile"))) void release_tiles() { _tile_release(); }

// One depth tile: C's 2 x 2 tiles += the A tiles at a_high (rows 0-15) and a_low (rows 16-31)
// times the B tiles at b0 and b1 (16 groups of a panel, 64 bytes apart).
__attribute__((target("amx-tile,amx-int8"), always_inline)) inline void depth_step(const uint8_t* a_high,
                                                                                    const uint8_t* a_low,
                                                                                    int64_t a_stride, const int8_t* b0,
                                                                                    const int8_t* b1) {
  _tile_loadd(4, a_high, a_stride);
  _tile_loadd(5, a_low, a_stride);
  _tile_loadd(6, b0, kGroupBytes);
  _tile_loadd(7, b1, kGroupBytes);
  _tile_dpbusd(0, 4, 6);
  _tile_dpbusd(1, 4, 7);
  _tile_dpbusd(2, 5, 6);
  _tile_dpbusd(3, 5, 7);
}

// One depth tile's operands, as depth_step takes them.
struct DepthStep {
  const uint8_t* a_high;
  const uint8_t* a_low;
  const int8_t* b0;
  const int8_t* b1;
};

// C's 2 x 2 tiles += the products of `steps` depth tiles, step(t) giving step t's operands
// (asked for in order); after_step(t) runs once step t's products are issued.
// kPipelined: the tile registers are not renamed, so each of the next step's loads is issued as
// soon as the last product reading its register is, its latency overlapping the remaining
// products. Measured on resnet50's layers that reuse B from cache: 1x1 layers of 512 and 1024
// depths 11 % faster, 3x3 layers 4-7 %; on layers streaming B from memory (two blocks of rows or
// fewer a task) it was 5-10 % slower, so those load each step's operands together.
template <bool kPipelined, typename Step, typename AfterStep>
__attribute__((target("amx-tile,amx-int8"), always_inline)) inline void run_depth_steps(int64_t steps,
                                                                                         int64_t a_stride, Step step,
                                                                                         AfterStep after_step) {
  if (steps <= 0) return;
  DepthStep s = step(0);
  if (!kPipelined) {
    for (int64_t t = 0; t < steps; ++t) {
      if (t > 0) s = step(t);
      depth_step(s.a_high, s.a_low, a_stride, s.b0, s.b1);
      after_step(t);
    }
    return;
  }
  _tile_loadd(4, s.a_high, a_stride);
  _tile_loadd(6, s.b0, kGroupBytes);
  _tile_loadd(7, s.b1, kGroupBytes);
  _tile_loadd(5, s.a_low, a_stride);
  for (int64_t t = 0; t < steps; ++t) {
    const bool more = t + 1 < steps;
    if (more) s = step(t + 1);
    _tile_dpbusd(0, 4, 6);
    _tile_dpbusd(1, 4, 7);
    if (more) _tile_loadd(4, s.a_high, a_stride);
    _tile_dpbusd(2, 5, 6);
    if (more) _tile_loadd(6, s.b0, kGroupBytes);
    _tile_dpbusd(3, 5, 7);
    if (more) {
      _tile_loadd(5, s.a_low, a_stride);
      _tile_loadd(7, s.b1, kGroupBytes);
    }
    after_step(t);
  }
}

// B's depth tile `ahead` of the panels b0 and b1, prefetched: a layer with few rows (the last
// stages of a CNN at batch 1) streams its weights from memory faster than the hardware
// prefetchers fetch them.
__attribute__((always_inline)) inline void prefetch_b_tiles(const int8_t* b0, const int8_t* b1, int64_t ahead) {
  for (int64_t line = 0; line < kBTileBytes; line += 64) {
    _mm_prefetch((const char*)(b0 + ahead * kBTileBytes + line), _MM_HINT_T0);
    _mm_prefetch((const char*)(b1 + ahead * kBTileBytes + line), _MM_HINT_T0);
  }
}

// C's 2 x 2 tiles into c[32][32] (row stride 32 int32).
__attribute__((target("amx-tile"), always_inline)) inline void store_block(int32_t* c) {
  constexpr int64_t c_stride = kAmxInt8BlockCols * (int64_t)sizeof(int32_t);
  _tile_stored(0, c, c_stride);
  _tile_stored(1, c + kInt8Panel, c_stride);
  _tile_stored(2, c + kTileRows * kAmxInt8BlockCols, c_stride);
  _tile_stored(3, c + kTileRows * kAmxInt8BlockCols + kInt8Panel, c_stride);
}

// The previous block's epilogue, run in parts between the depth steps of the next block: the
// vector units requantize while the tile unit multiplies. finish_rows(from, to) runs the pending
// block's rows [from, to); parts are whole tiles of rows, spread over the steps by a schedule made
// once per layer. Without `overlap` each block's epilogue runs as soon as it is done (measured on
// resnet50: overlapping takes 10-15 % off its 7x7 layers, whose blocks wait on B's stream from
// memory, and nothing off its layers of many rows).
template <typename FinishRows>
struct PendingEpilogue {
  PendingEpilogue(FinishRows finish, int64_t steps, bool overlap) : finish_rows(finish), overlapped(overlap) {
    for (int64_t i = 0; i < kParts; ++i) run_after[i] = i * steps / kParts;
  }
  // A block is done: its epilogue becomes pending (or runs now).
  void start(int pending_rows) {
    rows = pending_rows, done = 0, next = 0;
    if (!overlapped) finish();
  }
  void after_step(int64_t t) {
    while (done < rows && t >= run_after[next]) {
      run_to(std::min(rows, done + (int)kTileRows));
      ++next;
    }
  }
  void finish() { run_to(rows); }

 private:
  static constexpr int64_t kParts = kAmxInt8BlockRows / kTileRows;
  void run_to(int to) {
    if (to <= done) return;
    finish_rows(done, to);
    done = to;
  }
  FinishRows finish_rows;
  bool overlapped;
  int64_t run_after[kParts] = {};
  int rows = 0, done = 0, next = 0;
};

// c[32][32] (row stride 32 int32) = a[32][...] (a_stride bytes a row) times the panels b0 and b1
// over full_tiles depth tiles, then, when tail0 is set, one more depth tile of A against the two
// panels' last groups, copied into tail0 and tail1 (1024 bytes each, zero past the panel).
template <typename Pending>
__attribute__((target("amx-tile,amx-int8"))) void block_amx_int8(const uint8_t* a, int64_t a_stride,
                                                                  const int8_t* b0, const int8_t* b1,
                                                                  int64_t full_tiles, const int8_t* tail0,
                                                                  const int8_t* tail1, int32_t* c, Pending& pending,
                                                                  bool pipelined) {
  const uint8_t* a_low = a + kTileRows * a_stride;  // rows 16-31
  // The tile loads' asm names no memory: make the caller's copies of A and B land before them.
  __asm__ volatile("" : : : "memory");
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  const int64_t steps = full_tiles + (tail0 ? 1 : 0);
  if (kPrefetchTiles < full_tiles) prefetch_b_tiles(b0, b1, kPrefetchTiles);
  auto step = [&](int64_t t) {
    const int64_t k0 = t * kAmxInt8TileDepth;
    if (t < full_tiles) return DepthStep{a + k0, a_low + k0, b0 + t * kBTileBytes, b1 + t * kBTileBytes};
    return DepthStep{a + k0, a_low + k0, tail0, tail1};
  };
  auto after_step = [&](int64_t t) {
    if (t + 1 + kPrefetchTiles < full_tiles) prefetch_b_tiles(b0, b1, t + 1 + kPrefetchTiles);
    if (t < full_tiles) pending.after_step(t);
  };
  if (pipelined) {
    run_depth_steps<true>(steps, a_stride, step, after_step);
  } else {
    run_depth_steps<false>(steps, a_stride, step, after_step);
  }
  pending.finish();  // before the stores, which wait for the products
  store_block(c);
}

// Two tiles of 16 image rows (a_high, a_low: the first pixel's bytes of each, pixels a_stride
// apart) times the panels b0 and b1 over every tap (tap_offsets: from a pixel to its tap's input
// pixel, in bytes) and channel tile: c[32][32] as block_amx_int8 leaves it.
__attribute__((target("amx-tile,amx-int8"))) void block_amx_image(const uint8_t* a_high, const uint8_t* a_low,
                                                                   int64_t a_stride, const int64_t* tap_offsets,
                                                                   int64_t taps, int64_t channel_tiles,
                                                                   const int8_t* b0, const int8_t* b1, int32_t* c,
                                                                   bool pipelined) {
  __asm__ volatile("" : : : "memory");
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  const int64_t depth_tiles = taps * channel_tiles;
  if (pipelined) {
    int64_t tap = 0, channel_tile = 0;  // of the step asked for, asked in order
    auto step = [&](int64_t t) {
      const int64_t at = tap_offsets[tap] + channel_tile * kAmxInt8TileDepth;
      if (++channel_tile == channel_tiles) channel_tile = 0, ++tap;
      return DepthStep{a_high + at, a_low + at, b0 + t * kBTileBytes, b1 + t * kBTileBytes};
    };
    run_depth_steps<true>(depth_tiles, a_stride, step, [](int64_t) {});
  } else {
    // B streams from memory (few rows): each step's B prefetched kPrefetchTiles ahead. (This
    // loop, not run_depth_steps with a step counting taps, measured 5-10 % faster here.)
    int64_t t = 0;
    for (int64_t tap = 0; tap < taps; ++tap) {
      const int64_t offset = tap_offsets[tap];
      for (int64_t j = 0; j < channel_tiles; ++j, ++t) {
        if (t + kPrefetchTiles < depth_tiles) prefetch_b_tiles(b0, b1, t + kPrefetchTiles);
        const int64_t at = offset + j * kAmxInt8TileDepth;
        depth_step(a_high + at, a_low + at, a_stride, b0 + t * kBTileBytes, b1 + t * kBTileBytes);
      }
    }
  }
  store_block(c);
}
#endif

}  // namespace

bool int8_amx_available() { return amx_features().int8; }

Int8AmxSetting int8_amx_setting() {
  const AmxSwitch& s = amx_switch();
  Int8AmxSetting out;
  out.on = s.on.load(std::memory_order_relaxed);
  out.min_rows = s.min_rows.load(std::memory_order_relaxed);
  out.min_depth = s.min_depth.load(std::memory_order_relaxed);
  return out;
}

Int8AmxSetting set_int8_amx_setting(const Int8AmxSetting& setting) {
  if (setting.min_rows < 1 || setting.min_depth < 1) {
    throw ValueError("the AMX path's smallest product needs min_rows >= 1 and min_depth >= 1, got " +
                     std::to_string(setting.min_rows) + " and " + std::to_string(setting.min_depth));
  }
  const Int8AmxSetting previous = int8_amx_setting();
  AmxSwitch& s = amx_switch();
  s.on.store(setting.on, std::memory_order_relaxed);
  s.min_rows.store(setting.min_rows, std::memory_order_relaxed);
  s.min_depth.store(setting.min_depth, std::memory_order_relaxed);
  return previous;
}

bool int8_amx_chosen(int64_t M, int64_t K) {
  const AmxSwitch& s = amx_switch();
  return s.on.load(std::memory_order_relaxed) && M >= s.min_rows.load(std::memory_order_relaxed) &&
         K >= s.min_depth.load(std::memory_order_relaxed) && int8_amx_available();
}

void gemm_int8_amx(int64_t M, const void* a, int64_t lda, bool a_signed, const PackedInt8B& b, ThreadPool* pool,
                   Int8BlockEpilogue finish, const void* context, bool rows_in_place, bool rows_padded,
                   bool byte_output) {
#ifdef MNNPY_INT8_AMX_X86
  const int64_t K = b.k, N = b.n, groups = b.groups;
  const int64_t kp = round_up(std::max<int64_t>(K, 1), kAmxInt8TileDepth);
  // Whole blocks of rows read in place (a uint8 A): a row's tiles read kp bytes, those past K
  // (the next row's, or padding) meeting B's zero padding. That stays inside A for every row when
  // K is a multiple of 64 or the rows are padded to it, and otherwise for all but the last rows;
  // the blocks past those, and a last partial one, are copied.
  int64_t blocks_in_place = 0;
  if (rows_in_place && !a_signed && K > 0 && lda >= K) {
    int64_t safe_rows = M;  // rows m whose read m * lda + kp ends inside A, (M - 1) * lda + K
    if (K % kAmxInt8TileDepth != 0 && !(rows_padded && lda >= kp))
      safe_rows = std::max<int64_t>(0, M - ceil_div(kp - K, lda));
    blocks_in_place = safe_rows / kAmxInt8BlockRows;
  }
  const int64_t row_blocks_total = ceil_div(M, kAmxInt8BlockRows);
  // Rows an odd number of cache lines apart: a tile's 16 rows then fall in different L1 sets
  // (with K a multiple of 512, rows kp apart would share a few sets and evict each other).
  const int64_t a_stride = (kp / 64) % 2 ? kp : kp + 64;
  const int64_t block_bytes = kAmxInt8BlockRows * a_stride;
  uint8_t* rows = reinterpret_cast<uint8_t*>(
      thread_buffer(kRowsSlot, (size_t)ceil_div(row_blocks_total * block_bytes, (int64_t)sizeof(float))));
  int32_t* row_sums = reinterpret_cast<int32_t*>(thread_buffer(kRowSumsSlot, (size_t)M));
  if (blocks_in_place) std::memset(row_sums, 0, sizeof(int32_t) * (size_t)M);  // not read: no zero points of B
  // Copies the blocks of rows [r0, r1) that are not read in place.
  auto copy_blocks = [&](int64_t r0, int64_t r1) {
    for (int64_t r = std::max(r0, blocks_in_place); r < r1; ++r) {
      const int64_t m0 = r * kAmxInt8BlockRows, n_rows = std::min(kAmxInt8BlockRows, M - m0);
      uint8_t* dst = rows + r * block_bytes;
      if (a_signed) copy_rows(static_cast<const int8_t*>(a), lda, m0, n_rows, K, kp, a_stride, dst, row_sums);
      else copy_rows(static_cast<const uint8_t*>(a), lda, m0, n_rows, K, kp, a_stride, dst, row_sums);
    }
  };
  // Tasks as on the vector path: blocks of rows whose copy of A fits in L2, times blocks of
  // column pairs; more tasks than threads so that shares even out.
  const int64_t col_blocks_total = ceil_div(N, kAmxInt8BlockCols);
  int64_t row_tasks = ceil_div(row_blocks_total, std::max<int64_t>(1, kL2BlockBytes / block_bytes));
  const int threads = pool ? pool->num_threads() : 1;
  const bool split_columns = byte_output && N > M;
  int64_t want = 1;
  if (threads > 1 && byte_output && !split_columns) want = row_split_tasks(M, N, K, threads);
  else if (threads > 1) want = std::min<int64_t>(4 * threads, std::max<int64_t>(1, grains(M, N, K)));
  // Byte outputs split by rows first: a block of 32 byte columns covers part of a cache line,
  // which threads writing its neighbours would contend for. But where B has more columns than A
  // has rows (the last stages of a CNN at batch 1) every thread would stream all of B: they split
  // by columns then, in whole column tasks (split_columns).
  int64_t col_tasks = byte_output && !split_columns
                          ? 1 : std::min(col_blocks_total, std::max<int64_t>(1, ceil_div(want, row_tasks)));
  if (row_tasks * col_tasks < want) row_tasks = std::min(row_blocks_total, ceil_div(want, col_tasks));
  if (row_tasks * col_tasks < want) col_tasks = std::min(col_blocks_total, ceil_div(want, row_tasks));
  const int64_t rows_per_task = ceil_div(row_blocks_total, row_tasks);
  const int64_t cols_per_task = column_task_blocks(col_blocks_total, col_tasks, byte_output);
  row_tasks = ceil_div(row_blocks_total, rows_per_task);
  col_tasks = ceil_div(col_blocks_total, cols_per_task);
  const int64_t panel_stride = groups * kGroupBytes;
  // B's depth tiles: whole ones read in place; the last groups of a panel (fewer than a tile) are
  // copied out, since a tile read in place would run past the panel (and past the last one's end).
  const int64_t full_tiles = groups / kTileGroups, tail_groups = groups % kTileGroups;
  // Where each block of rows belongs to one task, that task copies it just before its products
  // (in its core's cache, and no pass of its own to wait for); otherwise a pass copies them first.
  const bool copy_in_tasks = col_tasks == 1;
  if (!copy_in_tasks) {
    const int64_t copy_grain = std::max<int64_t>(1, (int64_t(1) << 16) / block_bytes);
    parallel_for(pool, row_blocks_total - blocks_in_place, copy_grain,
                 [&](int64_t c0, int64_t c1) { copy_blocks(c0 + blocks_in_place, c1 + blocks_in_place); });
  }
  // Blocks of few rows a task wait on B's stream: their epilogues overlap the next block's products.
  const int64_t steps = full_tiles + (tail_groups ? 1 : 0);
  const bool overlap = steps >= kOverlapSteps && rows_per_task <= kOverlapRowBlocks;
  const bool pipelined = rows_per_task > kOverlapRowBlocks;  // B reused from cache (run_depth_steps)
  // Byte outputs (whole depths without tails) go through the task's columns in chunks whose part
  // of B stays in L1, row block by row block within a chunk: A's block then stays in L1 too, and
  // each output row's cache lines (and the residual's) are written whole while they are in cache,
  // where column blocks outermost write each line in halves far apart (resnet50's 56x56 layers of
  // 64 depths, 10-15 % faster). Chunks are whole cache lines of the output (pairs of blocks); B
  // too deep for a pair in L1 keeps column blocks outermost.
  const int64_t chunk_blocks = kRowsOuterBBytes / (2 * panel_stride) / 2 * 2;
  const bool rows_outer = byte_output && !tail_groups && !split_columns && chunk_blocks >= 2;
  parallel_for(pool, row_tasks * col_tasks, 1, [&](int64_t t0, int64_t t1) {
    // Two blocks of sums: one computed while the other goes through the epilogue.
    alignas(64) int32_t sums_buffers[2][kAmxInt8BlockRows * kAmxInt8BlockCols];
    alignas(64) int8_t tails[2][kBTileBytes];
    std::memset(tails, 0, sizeof tails);
    int32_t* pending_sums = nullptr;
    int64_t pending_i0 = 0, pending_j0 = 0;
    int pending_cols = 0;
    auto finish_rows = [&](int from, int to) {
      finish(context, pending_sums + from * kAmxInt8BlockCols, pending_i0 + from, to - from, pending_j0, pending_cols,
             row_sums);
    };
    PendingEpilogue<decltype(finish_rows)> pending(finish_rows, steps, overlap);
    int current = 0;
    configure_tiles();
    for (int64_t t = t0; t < t1; ++t) {
      // Split by columns: a thread's share of the tasks is a range of columns (its part of B).
      const int64_t rt = split_columns ? t % row_tasks : t / col_tasks;
      const int64_t ct = split_columns ? t / row_tasks : t % col_tasks;
      const int64_t rb0 = rt * rows_per_task, rb1 = std::min(row_blocks_total, rb0 + rows_per_task);
      const int64_t cb0 = ct * cols_per_task, cb1 = std::min(col_blocks_total, cb0 + cols_per_task);
      if (copy_in_tasks) copy_blocks(rb0, rb1);
      // Block (rb, cb); tails: B's last groups of column block cb copied already.
      auto run_block = [&](int64_t rb, int64_t cb) {
        const int64_t i0 = rb * kAmxInt8BlockRows, j0 = cb * kAmxInt8BlockCols;
        // pack_int8_b stores whole pairs of panels: the second exists (zero) past N.
        const int8_t* b0 = b.data.get() + 2 * cb * panel_stride;
        const int8_t* b1 = b0 + panel_stride;
        int32_t* block = sums_buffers[current];
        if (rb < blocks_in_place) {
          block_amx_int8(static_cast<const uint8_t*>(a) + i0 * lda, lda, b0, b1, full_tiles,
                         tail_groups ? tails[0] : nullptr, tails[1], block, pending,
                         pipelined);
        } else {
          block_amx_int8(rows + rb * block_bytes, a_stride, b0, b1, full_tiles, tail_groups ? tails[0] : nullptr,
                         tails[1], block, pending, pipelined);
        }
        pending_sums = block, pending_i0 = i0, pending_j0 = j0;
        pending_cols = (int)std::min(kAmxInt8BlockCols, N - j0);
        pending.start((int)std::min(kAmxInt8BlockRows, M - i0));
        current ^= 1;
      };
      if (rows_outer) {
        for (int64_t c0 = cb0; c0 < cb1; c0 += chunk_blocks) {
          const int64_t c1 = std::min(cb1, c0 + chunk_blocks);
          for (int64_t rb = rb0; rb < rb1; ++rb)
            for (int64_t cb = c0; cb < c1; ++cb) run_block(rb, cb);
        }
        continue;
      }
      for (int64_t cb = cb0; cb < cb1; ++cb) {
        if (tail_groups) {
          const int8_t* b0 = b.data.get() + 2 * cb * panel_stride;
          std::memcpy(tails[0], b0 + full_tiles * kBTileBytes, (size_t)(tail_groups * kGroupBytes));
          std::memcpy(tails[1], b0 + panel_stride + full_tiles * kBTileBytes, (size_t)(tail_groups * kGroupBytes));
        }
        for (int64_t rb = rb0; rb < rb1; ++rb) run_block(rb, cb);
      }
    }
    pending.finish();
    release_tiles();
  });
#else
  (void)M, (void)a, (void)lda, (void)a_signed, (void)b, (void)pool, (void)finish, (void)context, (void)rows_in_place,
      (void)rows_padded, (void)byte_output;
#endif
}

#ifdef MNNPY_INT8_AMX_X86
namespace {
// 64 bytes of a stacked row from where a pixel's byte `phase` lies (stack_image_rows): source row
// s's 64 bytes from that pixel on, permuted into place by index[s] where mask[s] is set.
struct StackChunk {
  alignas(64) uint8_t index[kMaxStackedRows][kAmxInt8TileDepth];
  uint64_t mask[kMaxStackedRows];
};

// The rows [r0, r1) of stack_image_rows for kS stacked rows: every row's chunks alike, chunk k
// made by pattern[k] from the source rows' bytes at from[k] on (the loop over the stacked rows
// unrolled, so that the parts stay in registers).
template <int64_t kS>
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void stack_rows(const uint8_t* image, int64_t row_in,
                                                                       int64_t row_step, int64_t row_out,
                                                                       const StackChunk* const* pattern,
                                                                       const int64_t* from, int64_t count, int64_t r0,
                                                                       int64_t r1, uint8_t* out) {
  const int64_t tail = row_out - (count - 1) * kAmxInt8TileDepth;
  const __mmask64 last = tail == kAmxInt8TileDepth ? ~__mmask64(0) : (__mmask64(1) << tail) - 1;
  for (int64_t r = r0; r < r1; ++r) {
    uint8_t* dst = out + r * row_out;
    const uint8_t* src = image + r * row_step * row_in;
    for (int64_t k = 0; k < count; ++k) {
      const StackChunk& chunk = *pattern[k];
      const uint8_t* at = src + from[k];
      __m512i v = _mm512_maskz_permutexvar_epi8(chunk.mask[0], _mm512_load_si512(chunk.index[0]), _mm512_loadu_si512(at));
      _Pragma("GCC unroll 8") for (int64_t s = 1; s < kS; ++s) {
        const __m512i part = _mm512_maskz_permutexvar_epi8(chunk.mask[s], _mm512_load_si512(chunk.index[s]),
                                                           _mm512_loadu_si512(at + s * row_in));
        v = _mm512_or_si512(v, part);
      }
      _mm512_mask_storeu_epi8(dst + k * kAmxInt8TileDepth, k + 1 < count ? ~__mmask64(0) : last, v);
    }
  }
}
}  // namespace

void stack_image_rows(const uint8_t* image, int64_t width, int64_t channels, int64_t stacked, int64_t row_step,
                      int64_t r0, int64_t r1, uint8_t* out) {
  const int64_t C = channels, S = stacked, pixel = S * C, row_out = width * pixel;
  std::vector<StackChunk> chunks((size_t)pixel);  // by the byte of a pixel they start at
  for (int64_t phase = 0; phase < pixel; ++phase) {
    StackChunk& chunk = chunks[(size_t)phase];
    std::memset(chunk.index, 0, sizeof chunk.index);
    std::memset(chunk.mask, 0, sizeof chunk.mask);
    for (int64_t i = 0; i < kAmxInt8TileDepth; ++i) {
      const int64_t q = phase + i, j = q / pixel, s = q % pixel / C, c = q % C;
      chunk.index[s][i] = (uint8_t)(j * C + c);  // under 64: at most 64 / (S C) + 2 pixels of C <= 16 bytes
      chunk.mask[s] |= uint64_t(1) << i;
    }
  }
  const int64_t count = ceil_div(row_out, kAmxInt8TileDepth);
  std::vector<const StackChunk*> pattern((size_t)count);
  std::vector<int64_t> from((size_t)count);
  for (int64_t k = 0; k < count; ++k) {
    const int64_t o = k * kAmxInt8TileDepth;
    pattern[(size_t)k] = &chunks[(size_t)(o % pixel)];
    from[(size_t)k] = o / pixel * C;
  }
  const int64_t row_in = width * C;
  switch (S) {
#define MNNPY_STACK_ROWS(n) \
  case n:                   \
    return stack_rows<n>(image, row_in, row_step, row_out, pattern.data(), from.data(), count, r0, r1, out);
    MNNPY_STACK_ROWS(2)
    MNNPY_STACK_ROWS(3)
    MNNPY_STACK_ROWS(4)
    MNNPY_STACK_ROWS(5)
    MNNPY_STACK_ROWS(6)
    MNNPY_STACK_ROWS(7)
    MNNPY_STACK_ROWS(8)
#undef MNNPY_STACK_ROWS
    default:
      throw ValueError("stack_image_rows: 2 to " + std::to_string(kMaxStackedRows) + " stacked rows, not " +
                       std::to_string(S));
  }
}
#else
void stack_image_rows(const uint8_t* image, int64_t width, int64_t channels, int64_t stacked, int64_t row_step,
                      int64_t r0, int64_t r1, uint8_t* out) {
  (void)image, (void)width, (void)channels, (void)stacked, (void)row_step, (void)r0, (void)r1, (void)out;
}
#endif

void gemm_int8_amx_image(const Int8ImageRows& rows, const PackedInt8B& b, ThreadPool* pool, Int8BlockEpilogue finish,
                         const void* context) {
#ifdef MNNPY_INT8_AMX_X86
  const int64_t C = rows.channels, OW = rows.out_w, N = b.n, W = rows.width;
  const bool flat = rows.flat;
  // Tiles: 16 pixels of one output row, or (flat) 16 consecutive positions of the padded rows.
  const int64_t tiles_per_row = ceil_div(OW, kTileRows);
  const int64_t tiles = flat ? ceil_div(rows.out_h * W, kTileRows) : rows.out_h * tiles_per_row;
  const int64_t M = rows.out_h * OW, taps = rows.kernel_h * rows.kernel_w, channel_tiles = rows.tap_tiles;
  std::vector<int64_t> tap_offsets((size_t)taps);
  for (int64_t ki = 0; ki < rows.kernel_h; ++ki) {
    for (int64_t kj = 0; kj < rows.kernel_w; ++kj) {
      tap_offsets[ki * rows.kernel_w + kj] =
          rows.phase_bytes ? ((ki % 2) * 2 + kj % 2) * rows.phase_bytes + ((ki / 2) * W + kj / 2) * C
                           : (ki * rows.tap_rows * W + kj) * C;
    }
  }
  const int64_t a_stride = rows.stride_w * C;
  // Tile i: the first pixel's bytes.
  auto tile_start = [&](int64_t i) {
    if (flat) return rows.x + i * kTileRows * C;
    const int64_t oh = i / tiles_per_row, ow0 = (i % tiles_per_row) * kTileRows;
    return rows.x + (oh * rows.stride_h * W + ow0 * rows.stride_w) * C;
  };
  // Tile i's sums (rows of `sums`, kAmxInt8BlockCols apart) through the epilogue: each run of
  // them that is one output row's pixels, at that row's place in C; positions past out_w dropped.
  auto finish_tile = [&](int64_t i, int32_t* sums, int64_t j0, int cols, const int32_t* row_sums) {
    if (!flat) {
      const int64_t oh = i / tiles_per_row, ow0 = (i % tiles_per_row) * kTileRows;
      finish(context, sums, oh * OW + ow0, (int)std::min<int64_t>(kTileRows, OW - ow0), j0, cols, row_sums);
      return;
    }
    const int64_t p0 = i * kTileRows, end = std::min(p0 + kTileRows, rows.out_h * W);
    for (int64_t p = p0; p < end;) {
      const int64_t oh = p / W, ow = p % W;
      if (ow >= OW) {
        p = (oh + 1) * W;
        continue;
      }
      const int64_t run = std::min(OW - ow, end - p);
      finish(context, sums + (p - p0) * kAmxInt8BlockCols, oh * OW + ow, (int)run, j0, cols, row_sums);
      p += run;
    }
  };
  int32_t* row_sums = reinterpret_cast<int32_t*>(thread_buffer(kRowSumsSlot, (size_t)M));
  std::memset(row_sums, 0, sizeof(int32_t) * (size_t)M);
  // Blocks of two tiles times blocks of two panels; byte outputs split by rows, or by columns
  // where B has more columns than the image has output pixels (see gemm_int8_amx).
  const int64_t blocks = ceil_div(tiles, (int64_t)2), col_blocks = ceil_div(N, kAmxInt8BlockCols);
  const int threads = pool ? pool->num_threads() : 1;
  const int64_t want =
      threads > 1 ? std::min<int64_t>(4 * threads, std::max<int64_t>(1, grains(M, N, b.k))) : 1;
  const bool split_columns = N > M;
  const int64_t cols_per_task =
      split_columns ? column_task_blocks(col_blocks, std::min(col_blocks, want), true) : col_blocks;
  const int64_t col_tasks = ceil_div(col_blocks, cols_per_task);
  const int64_t per_task = ceil_div(blocks, std::min(blocks, ceil_div(want, col_tasks)));
  const int64_t row_tasks = ceil_div(blocks, per_task);
  const int64_t panel_stride = b.groups * kGroupBytes;
  const bool pipelined = per_task > kOverlapRowBlocks;  // B reused from cache (run_depth_steps)
  parallel_for(pool, row_tasks * col_tasks, 1, [&](int64_t t0, int64_t t1) {
    alignas(64) int32_t block[kAmxInt8BlockRows * kAmxInt8BlockCols];
    configure_tiles();
    for (int64_t t = t0; t < t1; ++t) {
      // Column tasks outermost: a thread's share of the tasks is a range of columns (its part of B).
      const int64_t ct = t / row_tasks, rt = t % row_tasks;
      const int64_t cb1 = std::min(col_blocks, (ct + 1) * cols_per_task);
      for (int64_t cb = ct * cols_per_task; cb < cb1; ++cb) {
        const int64_t j0 = cb * kAmxInt8BlockCols;
        const int cols = (int)std::min(kAmxInt8BlockCols, N - j0);
        const int8_t* b0 = b.data.get() + 2 * cb * panel_stride;
        const int8_t* b1 = b0 + panel_stride;
        for (int64_t blk = rt * per_task; blk < std::min(blocks, (rt + 1) * per_task); ++blk) {
          const int64_t high = 2 * blk, low = std::min(tiles - 1, high + 1);  // an odd last tile pairs with itself
          block_amx_image(tile_start(high), tile_start(low), a_stride, tap_offsets.data(), taps, channel_tiles, b0,
                          b1, block, pipelined);
          finish_tile(high, block, j0, cols, row_sums);
          if (low != high) finish_tile(low, block + kTileRows * kAmxInt8BlockCols, j0, cols, row_sums);
        }
      }
    }
    release_tiles();
  });
#else
  (void)rows, (void)b, (void)pool, (void)finish, (void)context;
#endif
}

}  // namespace cpu

Int8AmxChoice cpu_set_int8_amx(const Int8AmxChoice& choice) {
  cpu::Int8AmxSetting setting;
  setting.on = choice.on;
  setting.min_rows = choice.min_rows;
  setting.min_depth = choice.min_depth;
  const cpu::Int8AmxSetting previous = cpu::set_int8_amx_setting(setting);
  return {previous.on, previous.min_rows, previous.min_depth};
}

}  // namespace mnnpy
