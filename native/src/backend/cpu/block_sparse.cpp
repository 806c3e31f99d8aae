// Block-sparse products (backend/cpu/block_sparse.h), compiled per SIMD target (Highway
// foreach_target) and dispatched at run time.
//
// A task owns a chunk of columns (sized so that its K x chunk activations stay in L2) of one image
// and a range of block rows. Where the activations' columns are contiguous (NCHW planes) full tiles
// are read and written in place; otherwise (row-major tokens, the blocked channel layout, a last
// partial tile) the chunk is first gathered into a K x chunk buffer, eight rows at a time by 8x8
// transposes where eight rows lie side by side, and the outputs go through a tile buffer, for 8 rows
// at once in that case. For each block row the tile's accumulators (up to 4 rows x V vectors) take
// one broadcast weight per loaded vector of x, so the weights of a block row stay in L1 while the
// chunk's tiles pass under them.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/block_sparse.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "backend/cpu/simd_shared-inl.h"
#include "backend/cpu/conv_activation-inl.h"

#include <algorithm>
#include <cstring>

#include "backend/cpu/block_sparse.h"
#include "backend/cpu/thread_buffers.h"
#include "mnnpy/thread_pool.h"

#ifndef MNNPY_BLOCK_SPARSE_SHARED_ONCE
#define MNNPY_BLOCK_SPARSE_SHARED_ONCE
namespace mnnpy {
namespace cpu {
namespace block_sparse_detail {

constexpr int64_t kChunkBytes = 128 << 10;  // a task's gathered activations: a quarter of L2
enum BufferSlot : int { kColumnsSlot, kTileSlot };  // this kernel's thread_buffer slots

// Offset of row `row` of an operand within its image.
inline int64_t row_offset(const SparseOperandLayout& l, int64_t row) {
  return (row / l.row_group) * l.group_stride + (row % l.row_group) * l.row_stride;
}

}  // namespace block_sparse_detail
}  // namespace cpu
}  // namespace mnnpy
#endif  // MNNPY_BLOCK_SPARSE_SHARED_ONCE

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace block_sparse_detail;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Rows [r, r + RC) of block row `br` over one tile of V vectors of columns: x holds row k of the
// tile at x + k * ldx, y row i (of these RC) at y + i * ldy.
template <int RC, int V>
HWY_INLINE void block_rows_tile(const BlockSparseMatrix& w, int64_t br, int64_t r, const float* HWY_RESTRICT x,
                                int64_t ldx, float* HWY_RESTRICT y, int64_t ldy, const float* bias,
                                const float* residual, int64_t ldr, const ConvActivation& act) {
  const DF d;
  const int64_t L = (int64_t)hn::Lanes(d);
  const int64_t bn = w.block_n, bk = w.block_k, block_values = bn * bk;
  VF acc[RC][V];
  for (int i = 0; i < RC; ++i)
    for (int v = 0; v < V; ++v) acc[i][v] = hn::Zero(d);
  const int32_t* cols = w.block_cols.data();
  const float* values = w.values.data();
  for (int64_t j = w.row_ptr[br], end = w.row_ptr[br + 1]; j < end; ++j) {
    const float* xb = x + (int64_t)cols[j] * bk * ldx;
    const float* vb = values + j * block_values + r;
    for (int64_t ki = 0; ki < bk; ++ki) {
      VF xv[V];
      for (int v = 0; v < V; ++v) xv[v] = hn::LoadU(d, xb + ki * ldx + v * L);
      const float* vk = vb + ki * bn;
      for (int i = 0; i < RC; ++i) {
        const VF wi = hn::Set(d, vk[i]);
        for (int v = 0; v < V; ++v) acc[i][v] = FusedMulAdd(wi, xv[v], acc[i][v]);
      }
    }
  }
  for (int i = 0; i < RC; ++i) {
    const VF b = hn::Set(d, bias ? bias[i] : 0.f);
    for (int v = 0; v < V; ++v) {
      VF out = acc[i][v];
      if (bias) out = hn::Add(out, b);
      if (residual) out = hn::Add(out, hn::LoadU(d, residual + i * ldr + v * L));
      hn::StoreU(activate(d, out, act), d, y + i * ldy + v * L);
    }
  }
}

// Every row of block row `br` over one tile, in groups of up to 4 rows.
template <int V>
HWY_INLINE void block_row_tile(const BlockSparseMatrix& w, int64_t br, const float* x, int64_t ldx, float* y,
                               int64_t ldy, const float* bias, const float* residual, int64_t ldr,
                               const ConvActivation& act) {
  const int64_t bn = w.block_n;
  for (int64_t r = 0; r < bn; r += 4) {
    const float* b = bias ? bias + br * bn + r : nullptr;
    const float* res = residual ? residual + r * ldr : nullptr;
    float* yr = y + r * ldy;
    switch (std::min<int64_t>(4, bn - r)) {
      case 4: block_rows_tile<4, V>(w, br, r, x, ldx, yr, ldy, b, res, ldr, act); break;
      case 3: block_rows_tile<3, V>(w, br, r, x, ldx, yr, ldy, b, res, ldr, act); break;
      case 2: block_rows_tile<2, V>(w, br, r, x, ldx, yr, ldy, b, res, ldr, act); break;
      default: block_rows_tile<1, V>(w, br, r, x, ldx, yr, ldy, b, res, ldr, act); break;
    }
  }
}

#if HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
// 8x8 transpose of v (row i in v[i]) in place, for vectors of 8 lanes.
template <class D, class V>
HWY_INLINE void transpose8x8(D d, V (&v)[8]) {
  const hn::Repartition<double, D> dd;
  auto lower64 = [&](V a, V b) { return hn::BitCast(d, hn::InterleaveLower(dd, hn::BitCast(dd, a), hn::BitCast(dd, b))); };
  auto upper64 = [&](V a, V b) { return hn::BitCast(d, hn::InterleaveUpper(dd, hn::BitCast(dd, a), hn::BitCast(dd, b))); };
  V t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = hn::InterleaveLower(d, v[2 * i], v[2 * i + 1]);  // a0 b0 a1 b1 | a4 b4 a5 b5
    t[2 * i + 1] = hn::InterleaveUpper(d, v[2 * i], v[2 * i + 1]);  // a2 b2 a3 b3 | a6 b6 a7 b7
  }
  for (int h = 0; h < 2; ++h) {
    u[4 * h] = lower64(t[4 * h], t[4 * h + 2]);      // a0 b0 c0 d0 | a4 b4 c4 d4
    u[4 * h + 1] = upper64(t[4 * h], t[4 * h + 2]);  // a1 b1 c1 d1 | a5 b5 c5 d5
    u[4 * h + 2] = lower64(t[4 * h + 1], t[4 * h + 3]);
    u[4 * h + 3] = upper64(t[4 * h + 1], t[4 * h + 3]);
  }
  for (int i = 0; i < 4; ++i) {
    v[i] = hn::ConcatLowerLower(d, u[i + 4], u[i]);
    v[i + 4] = hn::ConcatUpperUpper(d, u[i + 4], u[i]);
  }
}
#endif

// Eight operand rows that lie side by side for each column (row-major tokens, the blocked channel
// layout) to and from the rows of a tile: out[c * out_stride + r] = in[r * in_stride + c] (rows
// to tile) or out[r * out_stride + c] = in[c * in_stride + r] (tile to rows), r < n, c < 8.
template <bool kToTile>
HWY_INLINE void move_octets(const float* in, int64_t in_stride, float* out, int64_t out_stride, int64_t n) {
  int64_t r = 0;
#if HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
  const hn::CappedTag<float, 8> d8;
  if constexpr (hn::MaxLanes(d8) == 8) {
    for (; r + 8 <= n; r += 8) {
      hn::Vec<decltype(d8)> v[8];
      for (int i = 0; i < 8; ++i) v[i] = hn::LoadU(d8, kToTile ? in + (r + i) * in_stride : in + i * in_stride + r);
      transpose8x8(d8, v);
      for (int i = 0; i < 8; ++i) hn::StoreU(v[i], d8, kToTile ? out + i * out_stride + r : out + (r + i) * out_stride);
    }
  }
#endif
  for (; r < n; ++r)
    for (int64_t c = 0; c < 8; ++c) {
      if (kToTile) out[c * out_stride + r] = in[r * in_stride + c];
      else out[r * out_stride + c] = in[c * in_stride + r];
    }
}

template <int V>
void sparse_product(const BlockSparseMatrix& w, int64_t images, int64_t M, const float* x,
                    const SparseOperandLayout& xl, float* y, const SparseOperandLayout& yl, const float* bias,
                    const float* residual, const ConvActivation& act, ThreadPool* pool) {
  const DF d;
  const int64_t T = V * (int64_t)hn::Lanes(d);  // columns per tile
  const int64_t K = w.k, N = w.n, bn = w.block_n, R = N / bn;
  const bool x_in_place = xl.m_stride == 1 && xl.row_group >= K;
  const bool y_in_place = yl.m_stride == 1 && yl.row_group >= N;
  // Operands whose rows lie side by side per column move in octets of rows by 8x8 transposes;
  // the outputs then in batches of block rows that make up 8 rows.
  const bool x_octets = xl.row_stride == 1 && xl.m_stride >= 8 && (xl.row_group >= K || xl.row_group % 8 == 0);
  const bool y_octets = !y_in_place && yl.row_stride == 1 && yl.m_stride >= 8 && N % 8 == 0 && 8 % bn == 0 &&
                        (yl.row_group >= N || yl.row_group % 8 == 0);
  const int64_t batch = y_octets ? 8 / bn : 1;  // block rows computed before their outputs are stored
  // Column chunks: as many columns as keep the chunk's activations in L2, then equalized.
  int64_t chunk = K > 0 ? (kChunkBytes / (K * (int64_t)sizeof(float))) / T * T : M;
  chunk = std::min(std::max(chunk, T), round_up(M, T));
  int64_t n_chunks = ceil_div(M, chunk);
  chunk = round_up(ceil_div(M, n_chunks), T);
  n_chunks = ceil_div(M, chunk);
  // Too few chunks for the threads: split the block rows too, in ranges of equal work.
  const int threads = pool ? pool->num_threads() : 1;
  const int64_t chunk_tasks = images * n_chunks;
  int64_t n_ranges = 1;
  if (threads > 1 && chunk_tasks < 2 * threads) n_ranges = std::min(R / batch, ceil_div(2 * threads, chunk_tasks));
  std::vector<int64_t> range_start(n_ranges + 1, R);
  {
    // Work of block row i: its blocks' values plus the epilogue of its rows.
    const double total = (double)w.stored_values() + (double)N;
    int64_t br = 0;
    for (int64_t q = 0; q < n_ranges; ++q) {
      const double target = total * (double)q / (double)n_ranges;
      while (br < R && (double)(w.row_ptr[br] * bn * w.block_k + br * bn) < target) ++br;
      range_start[q] = std::min(R, round_up(br, batch));
    }
  }
  auto body = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t range = t % n_ranges, rest = t / n_ranges;
      const int64_t c = rest % n_chunks, image = rest / n_chunks;
      const int64_t br0 = range_start[range], br1 = range_start[range + 1];
      if (br0 >= br1) continue;
      const float* xi = x + image * xl.image_stride;
      float* yi = y + image * yl.image_stride;
      const float* ri = residual ? residual + image * yl.image_stride : nullptr;
      const int64_t m0 = c * chunk, nc = std::min(chunk, M - m0);
      // Columns [0, direct) are read in place; the rest gathered, zero-padded to whole tiles.
      const int64_t direct = x_in_place ? nc / T * T : 0;
      const int64_t gathered = round_up(nc - direct, T);
      float* columns = nullptr;
      if (gathered > 0) {
        columns = thread_buffer(kColumnsSlot, (size_t)std::max<int64_t>(1, K * gathered));
        const int64_t count = nc - direct;
        int64_t k = 0;
        if (x_octets) {
          for (; k + 8 <= K; k += 8) {
            move_octets<true>(xi + row_offset(xl, k) + (m0 + direct) * xl.m_stride, xl.m_stride, columns + k * gathered,
                              gathered, count);
            for (int64_t r = k; r < k + 8; ++r) std::fill(columns + r * gathered + count, columns + (r + 1) * gathered, 0.f);
          }
        }
        for (; k < K; ++k) {
          const float* src = xi + row_offset(xl, k) + (m0 + direct) * xl.m_stride;
          float* dst = columns + k * gathered;
          if (xl.m_stride == 1) std::memcpy(dst, src, sizeof(float) * count);
          else
            for (int64_t j = 0; j < count; ++j) dst[j] = src[j * xl.m_stride];
          std::fill(dst + count, dst + gathered, 0.f);
        }
      }
      // Tiles not written in place go through `tile` (their residual through `residual_tile`).
      const int64_t rows = batch * bn;
      float* tile = thread_buffer(kTileSlot, (size_t)(2 * rows * T));
      float* residual_tile = tile + rows * T;
      for (int64_t br = br0; br < br1; br += batch) {
        const int64_t n0 = br * bn;
        for (int64_t j = 0; j < nc; j += T) {
          const float* xt = j < direct ? xi + m0 + j : columns + (j - direct);
          const int64_t ldx = j < direct ? xl.row_stride : gathered;
          const int64_t valid = std::min(T, nc - j);
          if (y_in_place && valid == T) {
            const int64_t offset = n0 * yl.row_stride + m0 + j;
            block_row_tile<V>(w, br, xt, ldx, yi + offset, yl.row_stride, bias, ri ? ri + offset : nullptr,
                              yl.row_stride, act);
            continue;
          }
          if (ri) {
            if (y_octets) {
              move_octets<true>(ri + row_offset(yl, n0) + (m0 + j) * yl.m_stride, yl.m_stride, residual_tile, T, valid);
            } else {
              for (int64_t i = 0; i < rows; ++i) {
                const float* src = ri + row_offset(yl, n0 + i) + (m0 + j) * yl.m_stride;
                for (int64_t q = 0; q < valid; ++q) residual_tile[i * T + q] = src[q * yl.m_stride];
              }
            }
            for (int64_t i = 0; i < rows; ++i) std::fill(residual_tile + i * T + valid, residual_tile + (i + 1) * T, 0.f);
          }
          for (int64_t b = 0; b < batch; ++b) {
            block_row_tile<V>(w, br + b, xt, ldx, tile + b * bn * T, T, bias, ri ? residual_tile + b * bn * T : nullptr,
                              T, act);
          }
          if (y_octets) {
            move_octets<false>(tile, T, yi + row_offset(yl, n0) + (m0 + j) * yl.m_stride, yl.m_stride, valid);
            continue;
          }
          for (int64_t i = 0; i < rows; ++i) {
            float* dst = yi + row_offset(yl, n0 + i) + (m0 + j) * yl.m_stride;
            for (int64_t q = 0; q < valid; ++q) dst[q * yl.m_stride] = tile[i * T + q];
          }
        }
      }
    }
  };
  parallel_for(pool, chunk_tasks * n_ranges, 1, body);
}

void BlockSparseProductImpl(const BlockSparseMatrix& w, int64_t images, int64_t M, const float* x,
                            const SparseOperandLayout& xl, float* y, const SparseOperandLayout& yl, const float* bias,
                            const float* residual, const ConvActivation& act, ThreadPool* pool) {
  // About 8 accumulators hide the multiply-add latency: blocks of 3 or more rows take 4 rows x 2
  // vectors; 2-row blocks 2 x 4, one-row blocks (whose rows share no loaded vector) 1 x 8. Few
  // columns (a 7x7 map, 16-lane vectors) take narrower tiles where a quarter of a tile would be padding.
  const int64_t lanes = (int64_t)hn::Lanes(DF());
  auto fits = [&](int64_t v) { return 4 * (round_up(M, v * lanes) - M) <= round_up(M, v * lanes); };
  int64_t v = w.block_n >= 3 ? 2 : w.block_n == 2 ? 4 : 8;
  while (v > 1 && !fits(v)) v /= 2;
  switch (v) {
    case 8: sparse_product<8>(w, images, M, x, xl, y, yl, bias, residual, act, pool); break;
    case 4: sparse_product<4>(w, images, M, x, xl, y, yl, bias, residual, act, pool); break;
    case 2: sparse_product<2>(w, images, M, x, xl, y, yl, bias, residual, act, pool); break;
    default: sparse_product<1>(w, images, M, x, xl, y, yl, bias, residual, act, pool); break;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
HWY_EXPORT(BlockSparseProductImpl);

std::string BlockSparseMatrix::scheme_name() const {
  return "block_sparse_" + std::to_string(block_n) + "x" + std::to_string(block_k);
}

BlockSparseMatrix block_sparse_from_dense(const float* w, int64_t n, int64_t k, int64_t row_stride,
                                          int64_t col_stride, int64_t block_n, int64_t block_k) {
  BlockSparseMatrix m;
  m.n = n, m.k = k, m.block_n = block_n, m.block_k = block_k;
  const int64_t R = n / block_n, C = k / block_k;
  m.row_ptr.assign(R + 1, 0);
  for (int64_t br = 0; br < R; ++br) {
    for (int64_t bc = 0; bc < C; ++bc) {
      bool nonzero = false;
      for (int64_t ki = 0; ki < block_k && !nonzero; ++ki)
        for (int64_t i = 0; i < block_n && !nonzero; ++i)
          nonzero = w[(br * block_n + i) * row_stride + (bc * block_k + ki) * col_stride] != 0.f;
      if (!nonzero) continue;
      m.block_cols.push_back((int32_t)bc);
      for (int64_t ki = 0; ki < block_k; ++ki)
        for (int64_t i = 0; i < block_n; ++i)
          m.values.push_back(w[(br * block_n + i) * row_stride + (bc * block_k + ki) * col_stride]);
    }
    m.row_ptr[br + 1] = (int64_t)m.block_cols.size();
  }
  return m;
}

namespace {

// Nonzero blocks of W for one block shape, from the mask of nonzero values.
int64_t count_nonzero_blocks(const std::vector<uint8_t>& nonzero, int64_t n, int64_t k, int64_t bn, int64_t bk) {
  int64_t count = 0;
  for (int64_t br = 0; br < n / bn; ++br)
    for (int64_t bc = 0; bc < k / bk; ++bc) {
      bool any = false;
      for (int64_t i = 0; i < bn && !any; ++i)
        for (int64_t ki = 0; ki < bk && !any; ++ki) any = nonzero[(br * bn + i) * k + bc * bk + ki] != 0;
      count += any;
    }
  return count;
}

}  // namespace

BlockSparseMatrix choose_block_sparse(const float* w, int64_t n, int64_t k, int64_t row_stride, int64_t col_stride) {
  const BlockSparseSettings s = block_sparse_settings();
  if (s.threshold > 1.0 || n <= 0 || k <= 0 || k > INT32_MAX || n * k < s.min_weights) return {};
  // Every block shape stores at least the nonzero values: a weight with more than the threshold
  // allows stays dense after one pass (most weights; planning them costs no more).
  const int64_t allowed = (int64_t)((1.0 - s.threshold) * (double)n * (double)k);
  // Read in storage order (a [K x N] MatMul operand is W transposed).
  std::vector<uint8_t> nonzero((size_t)(n * k));
  int64_t count = 0;
  const bool rows_outer = row_stride >= col_stride;
  for (int64_t outer = 0; outer < (rows_outer ? n : k); ++outer) {
    for (int64_t inner = 0; inner < (rows_outer ? k : n); ++inner) {
      const int64_t r = rows_outer ? outer : inner, c = rows_outer ? inner : outer;
      count += nonzero[r * k + c] = w[r * row_stride + c * col_stride] != 0.f;
    }
    if (count > allowed) return {};
  }
  struct Candidate {
    int64_t bn, bk;
    double cost_per_value;  // relative cost of a stored value: one-row blocks load a vector per product
  };
  std::vector<Candidate> candidates;
  if (s.block_n > 0 && s.block_k > 0) candidates.push_back({s.block_n, s.block_k, 1.0});
  else candidates = {{8, 1, 1.0}, {4, 4, 1.0}, {4, 1, 1.0}, {2, 1, 1.3}, {1, 4, 1.6}, {1, 1, 1.6}};
  int64_t best_bn = 0, best_bk = 0, best_blocks = 0;
  double best_cost = 0;
  for (const Candidate& c : candidates) {
    if (n % c.bn || k % c.bk) continue;
    const int64_t blocks = count_nonzero_blocks(nonzero, n, k, c.bn, c.bk);
    // Per stored value one multiply-add; per block its index and a pass over its rows' accumulators.
    const double cost = (double)(blocks * c.bn * c.bk) * c.cost_per_value + 2.0 * (double)blocks;
    if (best_bn == 0 || cost < best_cost) best_bn = c.bn, best_bk = c.bk, best_blocks = blocks, best_cost = cost;
  }
  if (best_bn == 0) return {};
  const double sparsity = 1.0 - (double)(best_blocks * best_bn * best_bk) / ((double)n * (double)k);
  if (sparsity < s.threshold) return {};
  return block_sparse_from_dense(w, n, k, row_stride, col_stride, best_bn, best_bk);
}

void block_sparse_product(const BlockSparseMatrix& w, int64_t images, int64_t M, const float* x,
                          const SparseOperandLayout& x_layout, float* y, const SparseOperandLayout& y_layout,
                          const float* bias, const float* residual, const ConvActivation& act, ThreadPool* pool) {
  if (images <= 0 || M <= 0 || w.n <= 0) return;
  HWY_DYNAMIC_DISPATCH(BlockSparseProductImpl)(w, images, M, x, x_layout, y, y_layout, bias, residual, act, pool);
}

}  // namespace cpu
}  // namespace mnnpy
#endif
