// GEMM, compiled per SIMD target. The structure is the classic one of GotoBLAS/BLIS:
//   B is packed into panels of 64 bytes of columns (K x 16 floats / K x 8 doubles each),
//   for each block of MC rows and KC of depth, A is packed into MR-row micro-panels (L2),
//   a micro-kernel keeps an MR x NR tile of C in registers while it streams one micro-panel of
//   A and one of B (L1), and threads take tiles of C (MC rows x up to NC columns).
// The B panel width is the same on every target, so pre-packed weights survive a change of target.
// Thin products (a few rows or columns of C), where packing would cost as much as the arithmetic,
// read their operands in place instead: a vector-matrix product streams B row by row, a few rows
// of A take micro-tiles straight from B, dot products serve transposed or narrow operands.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/gemm.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include "backend/cpu/simd_shared-inl.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backend/cpu/gemm.h"
#include "backend/cpu/thread_buffers.h"
#include "mnnpy/aligned_memory.h"
#include "mnnpy/runtime_info.h"
#include "mnnpy/sanitizer.h"
#include "mnnpy/thread_pool.h"

#ifndef MNNPY_GEMM_SHARED_ONCE
#define MNNPY_GEMM_SHARED_ONCE
namespace mnnpy {
namespace cpu {
namespace gemm_detail {

constexpr int64_t kPanelBytes = 64;  // one row of a packed B panel is one cache line

// Cache blocking for 32 KB L1 and 512 KB L2 per core: a KC x NR micro-panel of B (16 KB) and an
// MR x KC one of A stay in L1, an MC x KC block of A (~150 KB) in L2, a KC x NC block of B in L3.
template <class T> struct Blocks;
constexpr int64_t kL1PanelBytes = 24 << 10;  // most of L1 for the B micro-panel
constexpr int64_t kL2TaskBytes = 384 << 10;  // a task's packed A block and C block, in L2 together
template <> struct Blocks<float> { static constexpr int64_t kc = 256, mc = 144, nc = 4096; };
template <> struct Blocks<double> { static constexpr int64_t kc = 256, mc = 72, nc = 2048; };

// Packed B for an unpacked call is built in slabs of columns of at most this size (the whole of
// B up to 2048 x 2048 floats), kept by the thread for the next call.
constexpr size_t kMaxSlabBytes = size_t(16) << 20;
// Per-thread scratch above this size is released after use instead of kept for the next call.
constexpr size_t kKeepScratchBytes = size_t(16) << 20;

struct GemmCall {
  int64_t M = 0, N = 0, K = 0;
  const void* a = nullptr;
  int64_t a_rs = 0, a_cs = 0;  // element (i, k) of A at a[i * a_rs + k * a_cs]
  const void* b = nullptr;
  int64_t b_rs = 0, b_cs = 0;  // element (k, j) of B at b[k * b_rs + j * b_cs]
  const void* packed_b = nullptr;  // panels from pack_b; b is unused when set
  void* c = nullptr;
  int64_t ldc = 0;
  bool accumulate = false;
  ThreadPool* pool = nullptr;
};

// Grow-only 64-byte aligned buffers owned by each thread, so that repeated products do not
// allocate (and fault in) fresh pages every call.
enum ScratchSlot { kScratchA, kScratchB, kScratchSmall, kNumScratch };
struct ThreadScratch {
  void* ptr[kNumScratch] = {};
  size_t size[kNumScratch] = {};
  ~ThreadScratch() {
    for (void* p : ptr) std::free(p);
  }
};
inline ThreadScratch& thread_scratch() {
  thread_local ThreadScratch s;
  return s;
}
inline void* scratch(ScratchSlot slot, size_t bytes) {
  ThreadScratch& s = thread_scratch();
  if (s.size[slot] < bytes) {
    std::free(s.ptr[slot]);
    s.ptr[slot] = nullptr;
    s.size[slot] = 0;
    // Packed B is walked panel by panel with strides of K * 64 bytes: large ones start on a huge page.
    const size_t rounded = aligned_block_size(bytes);
    s.ptr[slot] = allocate_aligned(rounded);
    s.size[slot] = rounded;
  }
  limit_access(s.ptr[slot], bytes, s.size[slot]);
  return s.ptr[slot];
}
inline void release_large_scratch(ScratchSlot slot) {
  ThreadScratch& s = thread_scratch();
  if (s.size[slot] > kKeepScratchBytes) {
    std::free(s.ptr[slot]);
    s.ptr[slot] = nullptr;
    s.size[slot] = 0;
  }
}


}  // namespace gemm_detail
}  // namespace cpu
}  // namespace mnnpy
#endif  // MNNPY_GEMM_SHARED_ONCE

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace gemm_detail;

template <class T> using Tile = GemmTile<T>;

// C[MR x NP panels] (+)= sum over kc of a column of packed A times a row of packed B.
// a: kc x MR, b0/b1: kc x kPanel each (b1 is read only when NP == 2).
template <class T, int MR, int NP>
HWY_NOINLINE void micro_tile(int64_t kc, const T* HWY_RESTRICT a, const T* HWY_RESTRICT b0,
                             const T* HWY_RESTRICT b1, T* HWY_RESTRICT c, int64_t ldc, bool accumulate) {
  constexpr int P = Tile<T>::kPanel, L = Tile<T>::kLanes, VP = Tile<T>::kVecPerPanel, NV = VP * NP;
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  // C is touched only after the loop and is usually far from L1 (a row block of C is revisited
  // once per KC step): fetch it now so the misses overlap the arithmetic.
  for (int i = 0; i < MR; ++i) {
    hwy::Prefetch(c + i * ldc);
    hwy::Prefetch(c + i * ldc + NP * P - 1);
  }
  V acc[MR][NV];
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v) acc[i][v] = hn::Zero(d);
  // Unrolled so that the pointer updates and the loop branch are paid once per four depths:
  // the loop body is otherwise a quarter overhead, which the front end cannot hide.
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    V bv[NV];
    for (int v = 0; v < NV; ++v) bv[v] = hn::Load(d, (v < VP ? b0 : b1) + k * P + (v % VP) * L);
    for (int i = 0; i < MR; ++i) {
      const V ai = hn::Set(d, a[k * MR + i]);
      for (int v = 0; v < NV; ++v) acc[i][v] = hn::MulAdd(ai, bv[v], acc[i][v]);
    }
  }
  for (int i = 0; i < MR; ++i) {
    for (int v = 0; v < NV; ++v) {
      T* dst = c + i * ldc + (v / VP) * P + (v % VP) * L;
      V r = acc[i][v];
      if (accumulate) r = hn::Add(r, hn::LoadU(d, dst));
      hn::StoreU(r, d, dst);
    }
  }
}

// Packs rows [0, mc) x depth [0, kc) of A into MR-row micro-panels (kc x MR each), zero-padding
// the last one.
template <class T>
void pack_a(const T* HWY_RESTRICT a, int64_t rs, int64_t cs, int64_t mc, int64_t kc, T* HWY_RESTRICT out) {
  constexpr int MR = Tile<T>::kMR;
  for (int64_t i0 = 0; i0 < mc; i0 += MR) {
    const int mr = (int)std::min<int64_t>(MR, mc - i0);
    T* HWY_RESTRICT dst = out + i0 * kc;
    if (rs == 1 && cs != 1) {  // A stored transposed: the MR values of one k are adjacent
      for (int64_t k = 0; k < kc; ++k) {
        const T* src = a + i0 + k * cs;
        for (int i = 0; i < mr; ++i) dst[k * MR + i] = src[i];
        for (int i = mr; i < MR; ++i) dst[k * MR + i] = 0;
      }
    } else if (mr == MR && cs == 1) {  // rows of A contiguous: read MR rows side by side
      const T* rows[MR];
      for (int i = 0; i < MR; ++i) rows[i] = a + (i0 + i) * rs;
      for (int64_t k = 0; k < kc; ++k)
        for (int i = 0; i < MR; ++i) dst[k * MR + i] = rows[i][k];
    } else {
      if (mr < MR) std::memset(dst, 0, sizeof(T) * MR * kc);
      for (int i = 0; i < mr; ++i) {
        const T* src = a + (i0 + i) * rs;
        for (int64_t k = 0; k < kc; ++k) dst[k * MR + i] = src[k * cs];
      }
    }
  }
}

// Packs panels [p0, p1) of B (all K rows) into out, panel p at out + (p - p0) * K * kPanel.
template <class T>
void pack_b_panels(const T* HWY_RESTRICT b, int64_t rs, int64_t cs, int64_t K, int64_t N, int64_t p0, int64_t p1,
                   T* HWY_RESTRICT out) {
  constexpr int P = Tile<T>::kPanel;
  if (cs == 1) {
    // Rows of B contiguous: read each row from start to end (B usually comes from memory, and
    // sequential reads are what the prefetchers follow), scattering it over the panels.
    for (int64_t k = 0; k < K; ++k) {
      const T* HWY_RESTRICT row = b + k * rs;
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t j0 = p * P;
        const int nj = (int)std::min<int64_t>(P, N - j0);
        T* HWY_RESTRICT dst = out + (p - p0) * K * P + k * P;
        if (nj == P) {
          for (int j = 0; j < P; ++j) dst[j] = row[j0 + j];
        } else {
          for (int j = 0; j < nj; ++j) dst[j] = row[j0 + j];
          for (int j = nj; j < P; ++j) dst[j] = 0;
        }
      }
    }
    return;
  }
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t j0 = p * P;
    const int nj = (int)std::min<int64_t>(P, N - j0);
    T* HWY_RESTRICT dst = out + (p - p0) * K * P;
    if (nj < P) std::memset(dst, 0, sizeof(T) * K * P);
    if (rs == 1) {  // B stored transposed: transpose blocks of 16 rows so reads stay in cache lines
      constexpr int64_t kBlock = 16;
      for (int64_t k0 = 0; k0 < K; k0 += kBlock) {
        const int64_t kb = std::min(kBlock, K - k0);
        for (int j = 0; j < nj; ++j) {
          const T* src = b + (j0 + j) * cs + k0;
          for (int64_t kk = 0; kk < kb; ++kk) dst[(k0 + kk) * P + j] = src[kk];
        }
      }
    } else {
      for (int64_t k = 0; k < K; ++k)
        for (int j = 0; j < nj; ++j) dst[k * P + j] = b[k * rs + (j0 + j) * cs];
    }
  }
}

template <class T>
void pack_b_all(const T* b, int64_t rs, int64_t cs, int64_t K, int64_t N, int64_t p0, int64_t p1, T* out,
                ThreadPool* pool) {
  constexpr int P = Tile<T>::kPanel;
  auto body = [&](int64_t q0, int64_t q1) { pack_b_panels<T>(b, rs, cs, K, N, p0 + q0, p0 + q1, out + q0 * K * P); };
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 15) / std::max<int64_t>(1, K * P));
  parallel_for(pool, p1 - p0, grain, body);
}

// The depth of one step: a KC x NR micro-panel of B should take most of L1 but not more (wider
// AVX-512 tiles take shallower steps); K is cut into equal steps.
template <class T>
int64_t depth_step(int64_t K) {
  constexpr int64_t kMaxKc = std::min<int64_t>(Blocks<T>::kc, kL1PanelBytes / (Tile<T>::kNR * sizeof(T)));
  return ceil_div(K, ceil_div(K, kMaxKc));
}

// How the columns and rows of C are cut into tasks: MC x (panels_per_task panels) tiles.
struct Plan {
  int64_t mc = 0, n_ic = 0, panels_per_task = 0, n_jc = 0;
};

template <class T>
Plan make_plan(int64_t M, int64_t n_panels, int64_t kc, int threads) {
  constexpr int64_t MR = Tile<T>::kMR, NP = Tile<T>::kPanels, P = Tile<T>::kPanel;
  int64_t n_ic = ceil_div(M, Blocks<T>::mc);
  int64_t n_jc = ceil_div(n_panels, Blocks<T>::nc / P);
  const int64_t max_ic = std::max<int64_t>(1, M / (4 * MR)), max_jc = ceil_div(n_panels, NP);
  bool fitted = false;
  if (threads > 1) {
    // The fewest tasks (a multiple of the threads, so that shares are equal) whose block of
    // packed A and whose block of C both stay in L2 while the task runs, and among those the cut
    // that streams the least: each row block reads all of B's columns it covers, each column
    // block packs all of A's rows it covers. Measured at 2 threads: BERT-base 20% and ViT-B/16
    // 6% faster than the rule below, which cut 128 rows into tasks of 36 rows that each
    // streamed all of B. One thread keeps that rule (tasks of its own here measured slower).
    for (int64_t tasks = threads; tasks <= 8 * threads && !fitted; tasks *= 2) {
      double best = 0;
      for (int64_t ic = std::min(max_ic, tasks); ic >= 1; --ic) {
        if (tasks % ic != 0 || tasks / ic > max_jc) continue;
        const int64_t jc = tasks / ic;
        const int64_t mc = round_up(ceil_div(M, ic), MR), cols = round_up(ceil_div(n_panels, jc), NP) * P;
        if ((mc * kc + mc * cols) * (int64_t)sizeof(T) > kL2TaskBytes) continue;
        const double cost = (double)ic * n_panels * P + (double)jc * M;  // B and A streamed, per unit of depth
        if (!fitted || cost < best) {
          n_ic = ic;
          n_jc = jc;
          best = cost;
          fitted = true;
        }
      }
    }
  }
  if (threads > 1 && !fitted) {
    // Otherwise at least two tiles per thread (so that one whose core another process takes can
    // be helped) and equal shares. Row blocks are preferred but stay tall enough to reuse each B
    // micro-panel several times from L1; beyond that, column blocks.
    const int64_t want = 2 * threads;
    if (n_ic * n_jc < want) n_ic = std::min(max_ic, std::max(n_ic, ceil_div(want, n_jc)));
    if (n_ic * n_jc < want) n_jc = std::min(max_jc, ceil_div(want, n_ic));
    if (n_ic * n_jc < 8 * threads) {
      int64_t ic = n_ic, jc = n_jc;
      while (ic < max_ic && (ic * n_jc) % threads != 0) ++ic;
      while (jc < max_jc && (n_ic * jc) % threads != 0) ++jc;
      if ((ic * n_jc) % threads == 0) n_ic = ic;
      else if ((n_ic * jc) % threads == 0) n_jc = jc;
    }
  }
  Plan pl;
  pl.mc = round_up(ceil_div(M, n_ic), MR);
  pl.n_ic = ceil_div(M, pl.mc);
  pl.panels_per_task = round_up(ceil_div(n_panels, n_jc), NP);
  pl.n_jc = ceil_div(n_panels, pl.panels_per_task);
  return pl;
}

// Where the packed panels of B are: rows [k0, ...) of panel p at at(p, k).
template <class T>
struct PanelSource {
  const T* base;
  int64_t p0, panel_stride, k0;
  const T* at(int64_t p, int64_t k) const { return base + (p - p0) * panel_stride + (k - k0) * Tile<T>::kPanel; }
};

// One task: rows [i0, i0 + mc) x panels [p0, p1) of C, over depth [k_begin, k_end) in steps.
template <class T>
void compute_tile(const GemmCall& g, const PanelSource<T>& src, int64_t i0, int64_t mc, int64_t p0, int64_t p1,
                  int64_t k_begin, int64_t k_end, int64_t kc_step) {
  constexpr int MR = Tile<T>::kMR, NP = Tile<T>::kPanels, P = Tile<T>::kPanel, NR = Tile<T>::kNR;
  const int64_t N = g.N, ldc = g.ldc;
  const T* a = static_cast<const T*>(g.a);
  T* c = static_cast<T*>(g.c);
  T* abuf = static_cast<T*>(scratch(kScratchA, sizeof(T) * round_up(mc, MR) * std::min(kc_step, k_end - k_begin)));
  HWY_ALIGN T edge[MR * NR];
  for (int64_t pc = k_begin; pc < k_end; pc += kc_step) {
    const int64_t kc = std::min(kc_step, k_end - pc);
    pack_a<T>(a + i0 * g.a_rs + pc * g.a_cs, g.a_rs, g.a_cs, mc, kc, abuf);
    const bool acc = g.accumulate || pc > 0;
    for (int64_t p = p0; p < p1; p += NP) {
      const int64_t np = std::min<int64_t>(NP, p1 - p);
      const int64_t j0 = p * P;
      const int64_t nvalid = std::min<int64_t>(np * P, N - j0);
      const T* b0 = src.at(p, pc);
      const T* b1 = np > 1 ? src.at(p + 1, pc) : b0;
      // The next micro-panels of B come from L3; fetch them into L2 bit by bit while this one is
      // in use, so that their first micro-tile does not wait on L3 latency.
      const int64_t next_panels = std::min<int64_t>(NP, std::max<int64_t>(0, p1 - (p + NP)));
      const int64_t lines_per_tile = ceil_div(kc, ceil_div(mc, MR));
      for (int64_t ir = 0, l0 = 0; ir < mc; ir += MR, l0 += lines_per_tile) {
        const int64_t mvalid = std::min<int64_t>(MR, mc - ir);
        const int64_t l1 = std::min(kc, l0 + lines_per_tile);
        for (int64_t q = 0; q < next_panels; ++q) {
          const T* next = src.at(p + NP + q, pc);
          for (int64_t l = l0; l < l1; ++l) __builtin_prefetch(next + l * P, 0, 2);
        }
        const T* ap = abuf + ir * kc;
        T* cp = c + (i0 + ir) * ldc + j0;
        if (mvalid == MR && nvalid == NR) {
          micro_tile<T, MR, NP>(kc, ap, b0, b1, cp, ldc, acc);
          continue;
        }
        // Edge tile: compute the whole tile aside, then add or copy its valid part.
        if (np == NP) micro_tile<T, MR, NP>(kc, ap, b0, b1, edge, NR, false);
        else micro_tile<T, MR, 1>(kc, ap, b0, b0, edge, NR, false);
        for (int64_t i = 0; i < mvalid; ++i) {
          T* dst = cp + i * ldc;
          const T* e = edge + i * NR;
          if (acc) for (int64_t j = 0; j < nvalid; ++j) dst[j] += e[j];
          else for (int64_t j = 0; j < nvalid; ++j) dst[j] = e[j];
        }
      }
    }
  }
}

// C[:, panels p0..p1) (+)= A[:, k_begin..k_end) * B over those panels, split into tasks.
template <class T>
void run_tasks(const GemmCall& g, const PanelSource<T>& src, int64_t p0, int64_t p1, int64_t k_begin, int64_t k_end,
               int64_t kc_step) {
  const int threads = g.pool ? g.pool->num_threads() : 1;
  const Plan pl = make_plan<T>(g.M, p1 - p0, kc_step, threads);
  // Row blocks take whole micro-tiles, as evenly as they go: blocks of pl.mc rows would leave
  // the last one short, and the thread that runs it idle for the difference.
  const int64_t row_tiles = ceil_div(g.M, (int64_t)Tile<T>::kMR);
  auto body = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t jc = t / pl.n_ic, ic = t % pl.n_ic;
      const int64_t i0 = ic * row_tiles / pl.n_ic * Tile<T>::kMR;
      const int64_t mc = std::min(g.M, (ic + 1) * row_tiles / pl.n_ic * Tile<T>::kMR) - i0;
      const int64_t q0 = p0 + jc * pl.panels_per_task, q1 = std::min(p1, q0 + pl.panels_per_task);
      compute_tile<T>(g, src, i0, mc, q0, q1, k_begin, k_end, kc_step);
    }
  };
  const int64_t tasks = pl.n_ic * pl.n_jc;
  parallel_for(g.pool, tasks, 1, body);
}

// ----------------------------------------------------------------- thin products
template <class T> T dot(const T* HWY_RESTRICT x, const T* HWY_RESTRICT y, int64_t n) {
  const hn::ScalableTag<T> d;
  const int64_t L = (int64_t)hn::Lanes(d);
  auto s0 = hn::Zero(d), s1 = hn::Zero(d), s2 = hn::Zero(d), s3 = hn::Zero(d);
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    s0 = hn::MulAdd(hn::LoadU(d, x + i), hn::LoadU(d, y + i), s0);
    s1 = hn::MulAdd(hn::LoadU(d, x + i + L), hn::LoadU(d, y + i + L), s1);
    s2 = hn::MulAdd(hn::LoadU(d, x + i + 2 * L), hn::LoadU(d, y + i + 2 * L), s2);
    s3 = hn::MulAdd(hn::LoadU(d, x + i + 3 * L), hn::LoadU(d, y + i + 3 * L), s3);
  }
  for (; i + L <= n; i += L) s0 = hn::MulAdd(hn::LoadU(d, x + i), hn::LoadU(d, y + i), s0);
  T total = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3))));
  for (; i < n; ++i) total += x[i] * y[i];
  return total;
}

constexpr int64_t kThinLimit = 4;        // at most this many rows (or columns): dot products
constexpr int64_t kStreamRows = 4;       // at most this many rows: B streamed row by row
constexpr int64_t kDirectRowGroups = 3;  // at most this many micro-tile rows: no packing
constexpr int64_t kGrainFlops = int64_t(1) << 16;

// C[R x kPanel] (+)= A[R x K] * B[K x kPanel] straight from unpacked operands: row k of B is
// kPanel contiguous values at b + k * ldb, A(i, k) at a[i * a_rs + k * a_cs].
template <class T, int R>
HWY_NOINLINE void direct_tile(int64_t K, const T* HWY_RESTRICT a, int64_t a_rs, int64_t a_cs,
                              const T* HWY_RESTRICT b, int64_t ldb, T* HWY_RESTRICT c, int64_t ldc, bool accumulate) {
  constexpr int L = Tile<T>::kLanes, VP = Tile<T>::kVecPerPanel;
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  V acc[R][VP];
  for (int i = 0; i < R; ++i)
    for (int v = 0; v < VP; ++v) acc[i][v] = hn::Zero(d);
  for (int64_t k = 0; k < K; ++k) {
    // Rows of B are far apart, which hardware prefetchers do not follow: fetch this row's
    // stretch for the column block after next.
    __builtin_prefetch(b + k * ldb + 2 * Tile<T>::kPanel, 0, 3);
    V bv[VP];
    for (int v = 0; v < VP; ++v) bv[v] = hn::LoadU(d, b + k * ldb + v * L);
    for (int i = 0; i < R; ++i) {
      const V ai = hn::Set(d, a[i * a_rs + k * a_cs]);
      for (int v = 0; v < VP; ++v) acc[i][v] = hn::MulAdd(ai, bv[v], acc[i][v]);
    }
  }
  for (int i = 0; i < R; ++i) {
    for (int v = 0; v < VP; ++v) {
      T* dst = c + i * ldc + v * L;
      V r = acc[i][v];
      if (accumulate) r = hn::Add(r, hn::LoadU(d, dst));
      hn::StoreU(r, d, dst);
    }
  }
}

template <class T>
void direct_rows(int rows, int64_t K, const T* a, int64_t a_rs, int64_t a_cs, const T* b, int64_t ldb, T* c, int64_t ldc,
                 bool accumulate) {
  static_assert(Tile<T>::kMR <= 12, "direct_rows handles at most 12 rows at a time");
  switch (rows) {
#define MNNPY_DIRECT_CASE(R) \
  case R: if constexpr (R <= Tile<T>::kMR) direct_tile<T, R>(K, a, a_rs, a_cs, b, ldb, c, ldc, accumulate); break;
    MNNPY_DIRECT_CASE(1) MNNPY_DIRECT_CASE(2) MNNPY_DIRECT_CASE(3) MNNPY_DIRECT_CASE(4)
    MNNPY_DIRECT_CASE(5) MNNPY_DIRECT_CASE(6) MNNPY_DIRECT_CASE(7) MNNPY_DIRECT_CASE(8)
    MNNPY_DIRECT_CASE(9) MNNPY_DIRECT_CASE(10) MNNPY_DIRECT_CASE(11) MNNPY_DIRECT_CASE(12)
#undef MNNPY_DIRECT_CASE
    default: break;
  }
}

// Few rows of C and rows of B contiguous: packing B would cost more than the product, so the
// micro-tiles read A and B where they are. Each block of B (KC rows x 64 bytes) is read from
// memory once and from L1 for the further groups of rows.
template <class T>
void direct_product(const GemmCall& g) {
  constexpr int64_t P = Tile<T>::kPanel, MR = Tile<T>::kMR;
  const T* a = static_cast<const T*>(g.a);
  const T* b = static_cast<const T*>(g.b);
  T* c = static_cast<T*>(g.c);
  const int64_t M = g.M, N = g.N, K = g.K;
  const int64_t full_blocks = N / P, blocks = ceil_div(N, P);
  // Rows in groups of nearly equal size (13 rows: 5 + 4 + 4, not 6 + 6 + 1), no group
  // so small that its loads outweigh its arithmetic.
  const int64_t group_rows = ceil_div(M, ceil_div(M, MR));
  // Depth in steps, so that the rows of B in use stay few (pages in the TLB, lines in flight).
  const int64_t kc_step = ceil_div(K, ceil_div(K, Blocks<T>::kc));
  auto body = [&](int64_t j0, int64_t j1) {
    for (int64_t pc = 0; pc < K; pc += kc_step) {
      const int64_t kc = std::min(kc_step, K - pc);
      const bool acc = g.accumulate || pc > 0;
      const T* ak = a + pc * g.a_cs;
      const T* bk = b + pc * g.b_rs;
      for (int64_t jb = j0; jb < j1; ++jb) {
        const int64_t col = jb * P;
        if (jb < full_blocks) {
          for (int64_t i = 0; i < M; i += group_rows)
            direct_rows<T>((int)std::min(group_rows, M - i), kc, ak + i * g.a_rs, g.a_rs, g.a_cs, bk + col, g.b_rs,
                           c + i * g.ldc + col, g.ldc, acc);
          continue;
        }
        // Last, partial block: its columns copied into a zero-padded strip first.
        const int64_t n = N - col;
        T* strip = static_cast<T*>(scratch(kScratchSmall, sizeof(T) * (kc * P + MR * P)));
        T* tile = strip + kc * P;
        for (int64_t k = 0; k < kc; ++k) {
          for (int64_t j = 0; j < n; ++j) strip[k * P + j] = bk[k * g.b_rs + col + j];
          for (int64_t j = n; j < P; ++j) strip[k * P + j] = 0;
        }
        for (int64_t i = 0; i < M; i += group_rows) {
          const int rows = (int)std::min(group_rows, M - i);
          direct_rows<T>(rows, kc, ak + i * g.a_rs, g.a_rs, g.a_cs, strip, P, tile, P, false);
          for (int r = 0; r < rows; ++r) {
            T* dst = c + (i + r) * g.ldc + col;
            for (int64_t j = 0; j < n; ++j) dst[j] = acc ? dst[j] + tile[r * P + j] : tile[r * P + j];
          }
        }
      }
    }
  };
  const int64_t grain = std::max<int64_t>(1, kGrainFlops / std::max<int64_t>(1, K * M * P));
  parallel_for(g.pool, blocks, grain, body);
}

// At most kStreamRows rows of C, rows of B contiguous (a vector times a matrix): B is read once,
// row after row in memory order, which memory serves fastest; each row of B is scaled into the
// few rows of C, which stay in L1.
template <class T, int R>
void stream_rows_t(const GemmCall& g, int64_t j0, int64_t j1) {
  const hn::ScalableTag<T> d;
  const int64_t L = (int64_t)hn::Lanes(d);
  const T* a = static_cast<const T*>(g.a);
  const T* b = static_cast<const T*>(g.b);
  constexpr int64_t kChunk = 4096 / R;  // R rows of C in 16 KB
  for (int64_t jb = j0; jb < j1; jb += kChunk) {
    const int64_t n = std::min(kChunk, j1 - jb);
    T* crow[R];
    for (int i = 0; i < R; ++i) {
      crow[i] = static_cast<T*>(g.c) + i * g.ldc + jb;
      if (!g.accumulate) std::memset(crow[i], 0, sizeof(T) * n);
    }
    // Four rows of B per pass over the rows of C, so that C is loaded and stored a quarter as often.
    constexpr int64_t kRows = 4;
    for (int64_t k0 = 0; k0 < g.K; k0 += kRows) {
      const int64_t kr = std::min(kRows, g.K - k0);
      const T* brow[kRows];
      T s[R][kRows];
      for (int64_t q = 0; q < kRows; ++q) {
        // Missing rows (the last pass) repeat row k0 with a zero weight.
        brow[q] = b + (k0 + (q < kr ? q : 0)) * g.b_rs + jb;
        for (int i = 0; i < R; ++i) s[i][q] = q < kr ? a[i * g.a_rs + (k0 + q) * g.a_cs] : T(0);
      }
      int64_t j = 0;
      for (; j + L <= n; j += L) {
        const auto b0 = hn::LoadU(d, brow[0] + j), b1 = hn::LoadU(d, brow[1] + j);
        const auto b2 = hn::LoadU(d, brow[2] + j), b3 = hn::LoadU(d, brow[3] + j);
        for (int i = 0; i < R; ++i) {
          auto acc = hn::LoadU(d, crow[i] + j);
          acc = hn::MulAdd(hn::Set(d, s[i][0]), b0, acc);
          acc = hn::MulAdd(hn::Set(d, s[i][1]), b1, acc);
          acc = hn::MulAdd(hn::Set(d, s[i][2]), b2, acc);
          acc = hn::MulAdd(hn::Set(d, s[i][3]), b3, acc);
          hn::StoreU(acc, d, crow[i] + j);
        }
      }
      for (; j < n; ++j)  // the same chain of fused multiply-adds as the lanes
        for (int i = 0; i < R; ++i) {
          T acc = crow[i][j];
          for (int q = 0; q < 4; ++q) acc = std::fma(s[i][q], brow[q][j], acc);
          crow[i][j] = acc;
        }
    }
  }
}

template <class T>
void stream_rows(const GemmCall& g) {
  static_assert(kStreamRows == 4, "one instantiation per row count");
  auto body = [&](int64_t j0, int64_t j1) {
    switch (g.M) {
      case 1: stream_rows_t<T, 1>(g, j0, j1); break;
      case 2: stream_rows_t<T, 2>(g, j0, j1); break;
      case 3: stream_rows_t<T, 3>(g, j0, j1); break;
      default: stream_rows_t<T, 4>(g, j0, j1); break;
    }
  };
  const int64_t grain = std::max<int64_t>(256, kGrainFlops / std::max<int64_t>(1, g.K * g.M));
  parallel_for(g.pool, g.N, grain, body);
}

// At most kStreamRows rows of C against pre-packed B (weights times one token or one image's
// features): each panel is read once, front to back, with independent accumulators for four
// consecutive depths so that the FMA chains never wait on each other; memory bandwidth bounds it.
template <class T, int R>
void packed_rows_t(const GemmCall& g, int64_t p0, int64_t p1) {
  constexpr int64_t P = Tile<T>::kPanel, V = Tile<T>::kVecPerPanel;
  // Depths in flight: enough independent accumulators to cover the FMA latency.
  constexpr int64_t U = R * V <= 2 ? 4 : R * V <= 4 ? 2 : 1;
  const hn::ScalableTag<T> d;
  const int64_t lanes = (int64_t)hn::Lanes(d);
  using VT = hn::Vec<decltype(d)>;
  const T* a = static_cast<const T*>(g.a);
  const T* packed = static_cast<const T*>(g.packed_b);
  for (int64_t p = p0; p < p1; ++p) {
    const T* panel = packed + p * g.K * P;
    VT acc[U][R][V];
    for (int u = 0; u < U; ++u)
      for (int i = 0; i < R; ++i)
        for (int v = 0; v < V; ++v) acc[u][i][v] = hn::Zero(d);
    int64_t k = 0;
    for (; k + U <= g.K; k += U) {
      for (int u = 0; u < U; ++u) {
        const T* row = panel + (k + u) * P;
        for (int i = 0; i < R; ++i) {
          const VT s = hn::Set(d, a[i * g.a_rs + (k + u) * g.a_cs]);
          for (int v = 0; v < V; ++v) acc[u][i][v] = hn::MulAdd(s, hn::Load(d, row + v * lanes), acc[u][i][v]);
        }
      }
    }
    for (; k < g.K; ++k) {
      const T* row = panel + k * P;
      for (int i = 0; i < R; ++i) {
        const VT s = hn::Set(d, a[i * g.a_rs + k * g.a_cs]);
        for (int v = 0; v < V; ++v) acc[0][i][v] = hn::MulAdd(s, hn::Load(d, row + v * lanes), acc[0][i][v]);
      }
    }
    HWY_ALIGN T tile[R * P];
    for (int i = 0; i < R; ++i) {
      for (int v = 0; v < V; ++v) {
        VT sum = acc[0][i][v];
        for (int u = 1; u < U; ++u) sum = hn::Add(sum, acc[u][i][v]);
        hn::Store(sum, d, tile + i * P + v * lanes);
      }
    }
    const int64_t j0 = p * P, n = std::min(P, g.N - j0);
    for (int i = 0; i < R; ++i) {
      T* dst = static_cast<T*>(g.c) + i * g.ldc + j0;
      for (int64_t j = 0; j < n; ++j) dst[j] = g.accumulate ? dst[j] + tile[i * P + j] : tile[i * P + j];
    }
  }
}

template <class T>
void packed_rows(const GemmCall& g) {
  const int64_t n_panels = ceil_div(g.N, Tile<T>::kPanel);
  auto body = [&](int64_t p0, int64_t p1) {
    switch (g.M) {
      case 1: packed_rows_t<T, 1>(g, p0, p1); break;
      case 2: packed_rows_t<T, 2>(g, p0, p1); break;
      case 3: packed_rows_t<T, 3>(g, p0, p1); break;
      default: packed_rows_t<T, 4>(g, p0, p1); break;
    }
  };
  const int64_t grain = std::max<int64_t>(1, kGrainFlops / std::max<int64_t>(1, g.K * g.M * Tile<T>::kPanel));
  parallel_for(g.pool, n_panels, grain, body);
}

// At most one panel of columns: B packed into one zero-padded strip (K x kPanel), past which
// every group of rows of A streams once.
template <class T>
void narrow_product(const GemmCall& g) {
  constexpr int64_t P = Tile<T>::kPanel, MR = Tile<T>::kMR;
  T* strip = static_cast<T*>(scratch(kScratchSmall, sizeof(T) * g.K * P));
  pack_b_panels<T>(static_cast<const T*>(g.b), g.b_rs, g.b_cs, g.K, g.N, 0, 1, strip);
  const T* a = static_cast<const T*>(g.a);
  T* c = static_cast<T*>(g.c);
  auto body = [&](int64_t r0, int64_t r1) {
    HWY_ALIGN T tile[MR * P];
    for (int64_t grp = r0; grp < r1; ++grp) {
      const int64_t i0 = grp * MR;
      const int rows = (int)std::min(MR, g.M - i0);
      direct_rows<T>(rows, g.K, a + i0 * g.a_rs, g.a_rs, g.a_cs, strip, P, tile, P, false);
      for (int r = 0; r < rows; ++r) {
        T* dst = c + (i0 + r) * g.ldc;
        for (int64_t j = 0; j < g.N; ++j) dst[j] = g.accumulate ? dst[j] + tile[r * P + j] : tile[r * P + j];
      }
    }
  };
  const int64_t groups = ceil_div(g.M, MR);
  const int64_t grain = std::max<int64_t>(1, kGrainFlops / std::max<int64_t>(1, g.K * MR * P));
  parallel_for(g.pool, groups, grain, body);
}

// A strided operand (rows x K, element (i, k) at src[i * row_stride + k * k_stride]) copied
// into contiguous rows in scratch, for the dot-product paths.
template <class T>
const T* contiguous_rows(const T* src, int64_t rows, int64_t K, int64_t row_stride, int64_t k_stride) {
  T* tmp = static_cast<T*>(scratch(kScratchSmall, sizeof(T) * rows * K));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t k = 0; k < K; ++k) tmp[i * K + k] = src[i * row_stride + k * k_stride];
  return tmp;
}

// Few rows of C, B stored transposed: dot products of the rows of A with the columns of B.
template <class T>
bool thin_rows(const GemmCall& g) {
  const T* a = static_cast<const T*>(g.a);
  const T* b = static_cast<const T*>(g.b);
  T* c = static_cast<T*>(g.c);
  const int64_t M = g.M, N = g.N, K = g.K;
  if (g.b_rs != 1) return false;
  // Columns of B contiguous: dot products; rows of A gathered when strided.
  const T* arows = a;
  int64_t a_ld = g.a_rs;
  if (g.a_cs != 1) {
    arows = contiguous_rows(a, M, K, g.a_rs, g.a_cs);
    a_ld = K;
  }
  auto body = [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {  // each column of B read once, against every row of A
      for (int64_t i = 0; i < M; ++i) {
        T* cij = c + i * g.ldc + j;
        const T v = dot<T>(arows + i * a_ld, b + j * g.b_cs, K);
        *cij = g.accumulate ? *cij + v : v;
      }
    }
  };
  const int64_t grain = std::max<int64_t>(1, kGrainFlops / std::max<int64_t>(1, K * M));
  parallel_for(g.pool, N, grain, body);
  return true;
}

// A few columns of C from rows of A (contiguous) dotted with the columns of B.
template <class T>
bool thin_cols(const GemmCall& g) {
  if (g.a_cs != 1) return false;
  const T* a = static_cast<const T*>(g.a);
  const T* b = static_cast<const T*>(g.b);
  T* c = static_cast<T*>(g.c);
  const int64_t M = g.M, N = g.N, K = g.K;
  const T* bcols = b;
  int64_t b_ld = g.b_cs;
  if (g.b_rs != 1) {
    bcols = contiguous_rows(b, N, K, g.b_cs, g.b_rs);
    b_ld = K;
  }
  auto body = [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      T* ci = c + i * g.ldc;
      for (int64_t j = 0; j < N; ++j) {
        const T v = dot<T>(a + i * g.a_rs, bcols + j * b_ld, K);
        ci[j] = g.accumulate ? ci[j] + v : v;
      }
    }
  };
  const int64_t grain = std::max<int64_t>(1, kGrainFlops / std::max<int64_t>(1, K * N));
  parallel_for(g.pool, M, grain, body);
  return true;
}

// One dot product (a row of A times a column of B, both contiguous): the depth is cut into
// fixed chunks whose partial sums are added in order, so the result does not depend on the
// number of threads.
template <class T>
void single_dot(const GemmCall& g) {
  constexpr int64_t kChunk = 1 << 15;
  const T* a = static_cast<const T*>(g.a);
  const T* b = static_cast<const T*>(g.b);
  const int64_t chunks = ceil_div(g.K, kChunk);
  T partial_store[64];
  std::vector<T> partial_heap;
  T* partial = partial_store;
  if (chunks > 64) {
    partial_heap.resize((size_t)chunks);
    partial = partial_heap.data();
  }
  parallel_for(g.pool, chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t k0 = c * kChunk;
      partial[c] = dot<T>(a + k0, b + k0, std::min(kChunk, g.K - k0));
    }
  });
  T total = 0;
  for (int64_t c = 0; c < chunks; ++c) total += partial[c];
  T* c = static_cast<T*>(g.c);
  *c = g.accumulate ? *c + total : total;
}

template <class T>
void gemm_t(const GemmCall& g) {
  constexpr int64_t P = Tile<T>::kPanel, NR = Tile<T>::kNR;
  if (g.M == 0 || g.N == 0) return;
  if (g.K == 0) {
    if (!g.accumulate)
      for (int64_t i = 0; i < g.M; ++i) std::memset(static_cast<T*>(g.c) + i * g.ldc, 0, sizeof(T) * g.N);
    return;
  }
  const int64_t n_panels = ceil_div(g.N, P);
  const int64_t kc_step = depth_step<T>(g.K);
  if (g.packed_b && g.M <= kStreamRows) {
    packed_rows<T>(g);
    return;
  }
  if (g.packed_b) {
    // Pre-packed B: every task runs over the whole depth, no synchronization in between.
    run_tasks<T>(g, PanelSource<T>{static_cast<const T*>(g.packed_b), 0, g.K * P, 0}, 0, n_panels, 0, g.K, kc_step);
    return;
  }
  // Thin products, where packing would cost as much as the arithmetic.
  if (g.N == 1 && g.a_cs == 1 && g.b_rs == 1) {
    // A matrix (or a row) times a contiguous vector: dot products; streaming B by rows would
    // handle one element per row.
    if (g.M == 1) single_dot<T>(g);
    else thin_cols<T>(g);
    return;
  }
  if (g.M <= kStreamRows && g.b_cs == 1) {
    stream_rows<T>(g);
    return;
  }
  if (g.M <= kDirectRowGroups * Tile<T>::kMR && g.b_cs == 1) {
    direct_product<T>(g);
    return;
  }
  if ((g.M <= kThinLimit && thin_rows<T>(g)) || (g.N <= kThinLimit && thin_cols<T>(g))) {
    release_large_scratch(kScratchSmall);  // gathered operands can be as large as the input
    return;
  }
  if (g.N <= P) {
    narrow_product<T>(g);
    release_large_scratch(kScratchSmall);
    return;
  }
  // Pack B in slabs of columns (one, unless B is large), then let the threads take tiles of C
  // over the whole depth: two synchronizations per slab, so a thread held up by another
  // process delays nobody; tiles are handed out as threads become free.
  const T* b = static_cast<const T*>(g.b);
  const int64_t group = NR / P;
  const int64_t slab_panels = std::max<int64_t>(group, (int64_t)(kMaxSlabBytes / (sizeof(T) * P * g.K)) / group * group);
  for (int64_t s0 = 0; s0 < n_panels; s0 += slab_panels) {
    const int64_t s1 = std::min(n_panels, s0 + slab_panels);
    T* packed = static_cast<T*>(scratch(kScratchB, sizeof(T) * (s1 - s0) * g.K * P));
    pack_b_all<T>(b, g.b_rs, g.b_cs, g.K, g.N, s0, s1, packed, g.pool);
    run_tasks<T>(g, PanelSource<T>{packed, s0, g.K * P, 0}, s0, s1, 0, g.K, kc_step);
  }
  release_large_scratch(kScratchB);
}

void GemmImpl(DType dt, const GemmCall& g) {
  if (dt == DType::Float64) gemm_t<double>(g);
  else gemm_t<float>(g);
}

void PackBImpl(DType dt, int64_t K, int64_t N, const void* b, int64_t rs, int64_t cs, void* out, ThreadPool* pool) {
  if (dt == DType::Float64) {
    pack_b_all<double>(static_cast<const double*>(b), rs, cs, K, N, 0, ceil_div(N, Tile<double>::kPanel),
                       static_cast<double*>(out), pool);
  } else {
    pack_b_all<float>(static_cast<const float*>(b), rs, cs, K, N, 0, ceil_div(N, Tile<float>::kPanel),
                      static_cast<float*>(out), pool);
  }
}

void GemmInfoImpl(DType dt, int* mr, int* nr, const char** target) {
  if (dt == DType::Float64) {
    *mr = Tile<double>::kMR;
    *nr = Tile<double>::kNR;
  } else {
    *mr = Tile<float>::kMR;
    *nr = Tile<float>::kNR;
  }
  *target = hwy::TargetName(HWY_TARGET);
}

// ----------------------------------------------------------------- integer and bool
template <class T, bool kBool>
void integral_rows(int64_t i0, int64_t i1, int64_t N, int64_t K, const T* a, int64_t a_rs, int64_t a_cs, const T* b,
                   int64_t b_rs, int64_t b_cs, T* c, int64_t ldc) {
  // Products wrap in this type: uint16 operands would otherwise be promoted to int, which overflows.
  using W = std::conditional_t<std::is_same_v<T, uint16_t>, uint32_t, T>;
  for (int64_t i = i0; i < i1; ++i) {
    T* HWY_RESTRICT ci = c + i * ldc;
    if (b_cs == 1) {
      std::memset(ci, 0, sizeof(T) * N);
      for (int64_t k = 0; k < K; ++k) {
        const T s = a[i * a_rs + k * a_cs];
        const T* HWY_RESTRICT bk = b + k * b_rs;
        if constexpr (kBool) {
          for (int64_t j = 0; j < N; ++j) ci[j] |= (T)(s & bk[j]);
        } else {
          for (int64_t j = 0; j < N; ++j) ci[j] = (T)((W)ci[j] + (W)s * (W)bk[j]);
        }
      }
    } else {
      for (int64_t j = 0; j < N; ++j) {
        T acc = 0;
        for (int64_t k = 0; k < K; ++k) {
          const T x = a[i * a_rs + k * a_cs], y = b[k * b_rs + j * b_cs];
          if constexpr (kBool) acc |= (T)(x & y);
          else acc = (T)((W)acc + (W)x * (W)y);
        }
        ci[j] = acc;
      }
    }
  }
}

template <class T, bool kBool = false>
void integral_t(int64_t M, int64_t N, int64_t K, const void* a, int64_t a_rs, int64_t a_cs, const void* b,
                int64_t b_rs, int64_t b_cs, void* c, int64_t ldc, ThreadPool* pool) {
  auto body = [&](int64_t i0, int64_t i1) {
    integral_rows<T, kBool>(i0, i1, N, K, static_cast<const T*>(a), a_rs, a_cs, static_cast<const T*>(b), b_rs, b_cs,
                            static_cast<T*>(c), ldc);
  };
  const int64_t grain = std::max<int64_t>(1, kGrainFlops / std::max<int64_t>(1, N * K));
  parallel_for(pool, M, grain, body);
}

void IntegralImpl(DType dt, int64_t M, int64_t N, int64_t K, const void* a, int64_t a_rs, int64_t a_cs, const void* b,
                  int64_t b_rs, int64_t b_cs, void* c, int64_t ldc, ThreadPool* pool) {
  switch (dt) {
    case DType::Bool: integral_t<uint8_t, true>(M, N, K, a, a_rs, a_cs, b, b_rs, b_cs, c, ldc, pool); break;
    case DType::Int8: integral_t<int8_t>(M, N, K, a, a_rs, a_cs, b, b_rs, b_cs, c, ldc, pool); break;
    case DType::UInt8: integral_t<uint8_t>(M, N, K, a, a_rs, a_cs, b, b_rs, b_cs, c, ldc, pool); break;
    case DType::Int16: integral_t<int16_t>(M, N, K, a, a_rs, a_cs, b, b_rs, b_cs, c, ldc, pool); break;
    case DType::Int32: integral_t<int32_t>(M, N, K, a, a_rs, a_cs, b, b_rs, b_cs, c, ldc, pool); break;
    case DType::Int64: integral_t<int64_t>(M, N, K, a, a_rs, a_cs, b, b_rs, b_cs, c, ldc, pool); break;
    case DType::UInt16: integral_t<uint16_t>(M, N, K, a, a_rs, a_cs, b, b_rs, b_cs, c, ldc, pool); break;
    case DType::UInt32: integral_t<uint32_t>(M, N, K, a, a_rs, a_cs, b, b_rs, b_cs, c, ldc, pool); break;
    case DType::UInt64: integral_t<uint64_t>(M, N, K, a, a_rs, a_cs, b, b_rs, b_cs, c, ldc, pool); break;
    default: break;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
HWY_EXPORT(GemmImpl);
HWY_EXPORT(PackBImpl);
HWY_EXPORT(GemmInfoImpl);
HWY_EXPORT(IntegralImpl);

using gemm_detail::GemmCall;

void gemm(DType dt, int64_t M, int64_t N, int64_t K, const void* a, int64_t lda, bool trans_a, const void* b,
          int64_t ldb, bool trans_b, void* c, int64_t ldc, bool accumulate, ThreadPool* pool) {
  GemmCall g;
  g.M = M, g.N = N, g.K = K;
  g.a = a, g.a_rs = trans_a ? 1 : lda, g.a_cs = trans_a ? lda : 1;
  g.b = b, g.b_rs = trans_b ? 1 : ldb, g.b_cs = trans_b ? ldb : 1;
  g.c = c, g.ldc = ldc, g.accumulate = accumulate, g.pool = pool;
  HWY_DYNAMIC_DISPATCH(GemmImpl)(dt, g);
}

PackedB pack_b(DType dt, int64_t K, int64_t N, const void* b, int64_t ldb, bool trans_b, ThreadPool* pool) {
  PackedB out;
  out.dtype = dt;
  out.k = K;
  out.n = N;
  if (K == 0 || N == 0) return out;
  const int64_t panel = gemm_detail::kPanelBytes / (int64_t)dtype_size(dt);
  out.nbytes = (size_t)(ceil_div(N, panel) * K) * (size_t)gemm_detail::kPanelBytes;
  void* mem = allocate_aligned(out.nbytes);
  out.data = std::shared_ptr<void>(mem, [](void* p) { std::free(p); });
  HWY_DYNAMIC_DISPATCH(PackBImpl)(dt, K, N, b, trans_b ? 1 : ldb, trans_b ? ldb : 1, mem, pool);
  return out;
}

void gemm_packed(int64_t M, const void* a, int64_t lda, bool trans_a, const PackedB& b, void* c, int64_t ldc,
                 bool accumulate, ThreadPool* pool) {
  GemmCall g;
  g.M = M, g.N = b.n, g.K = b.k;
  g.a = a, g.a_rs = trans_a ? 1 : lda, g.a_cs = trans_a ? lda : 1;
  g.packed_b = b.data.get();
  g.c = c, g.ldc = ldc, g.accumulate = accumulate, g.pool = pool;
  HWY_DYNAMIC_DISPATCH(GemmImpl)(b.dtype, g);
}

void matmul_integral(DType dt, int64_t M, int64_t N, int64_t K, const void* a, int64_t lda, bool trans_a,
                     const void* b, int64_t ldb, bool trans_b, void* c, int64_t ldc, ThreadPool* pool) {
  if (M == 0 || N == 0) return;
  HWY_DYNAMIC_DISPATCH(IntegralImpl)(dt, M, N, K, a, trans_a ? 1 : lda, trans_a ? lda : 1, b, trans_b ? 1 : ldb,
                                     trans_b ? ldb : 1, c, ldc, pool);
}

}  // namespace cpu

GemmInfo cpu_gemm_info(DType dt) {
  using namespace cpu;  // where HWY_EXPORT put the dispatch table
  GemmInfo info;
  const char* target = "";
  HWY_DYNAMIC_DISPATCH(GemmInfoImpl)(dt, &info.mr, &info.nr, &target);
  info.target = target;
  return info;
}

}  // namespace mnnpy
#endif
