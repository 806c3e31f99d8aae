// Convolution kernels, compiled per SIMD target (Highway foreach_target) and dispatched at run time.
//
// GEMM schemes: per image and group, out[Cout_g x HoWo] = W[Cout_g x K] * cols[K x HoWo]. A task
// owns a block of output columns (pixels) and a range of output channels: it writes the columns
// of its block straight into 16-wide panels (im2col fused with packing, sized to stay in L2), then
// runs MR x NR register tiles over them, depth in L1-sized steps; the last step adds the bias and
// applies the activation before the tile leaves the registers.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/conv.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include "backend/cpu/simd_shared-inl.h"
#include "backend/cpu/conv_activation-inl.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "backend/cpu/conv.h"
#include "backend/cpu/thread_buffers.h"
#include "backend/cpu/winograd.h"
#include "mnnpy/thread_pool.h"

#ifndef MNNPY_CONV_SHARED_ONCE
#define MNNPY_CONV_SHARED_ONCE
namespace mnnpy {
namespace cpu {
namespace conv_detail {

constexpr int64_t kPanel = 16;                     // columns per packed panel: one cache line of floats
constexpr int64_t kL1PanelBytes = 24 << 10;        // most of L1 for the depth step of one column panel
constexpr int64_t kColumnBlockBytes = 256 << 10;   // packed columns of one task: a quarter of L2
constexpr int64_t kRowBlock = 20 * kConvWeightRows;  // weight rows per pass: their depth step stays in L2


enum BufferSlot : int { kColumnsSlot };  // this kernel's thread_buffer slots

}  // namespace conv_detail
}  // namespace cpu
}  // namespace mnnpy
#endif  // MNNPY_CONV_SHARED_ONCE

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace conv_detail;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

using ConvTile = GemmTile<float>;  // the GEMM micro-kernel shape
static_assert(ConvTile::kPanel == kPanel, "convolution panels are the GEMM's");

// Writes n values of row k of a panel-packed column block, starting at column jj: src[q * stride],
// or zeros when src is null. Column jj lives in panel jj / 16, at offset (jj % 16) of its row.
// Whole panel rows (16 values) are moved as vectors; only the ends of a stretch go one by one.
HWY_INLINE void put_columns(float* out, int64_t K, int64_t k, int64_t jj, int64_t n, const float* src,
                            int64_t stride) {
  const DF d;
  constexpr int64_t L = ConvTile::kLanes;
  float* row = out + k * kPanel;
  const int64_t panel_stride = K * kPanel;
  auto one_by_one = [&](int64_t count) {
    float* dst = row + (jj / kPanel) * panel_stride + (jj & (kPanel - 1));
    if (!src) {
      for (int64_t q = 0; q < count; ++q) dst[q] = 0.f;
    } else {
      for (int64_t q = 0; q < count; ++q) dst[q] = src[q * stride];
      src += count * stride;
    }
    jj += count;
    n -= count;
  };
  if (jj & (kPanel - 1)) one_by_one(std::min(kPanel - (jj & (kPanel - 1)), n));
  // Stride 2 reads one element past the last it uses: allowed only while more values follow.
  while (n >= kPanel && (stride <= 1 || !src || (stride == 2 && n > kPanel))) {
    float* dst = row + (jj / kPanel) * panel_stride;
    if (!src) {
      for (int64_t v = 0; v < kPanel; v += L) hn::Store(hn::Zero(d), d, dst + v);
    } else if (stride == 1) {
      for (int64_t v = 0; v < kPanel; v += L) hn::Store(hn::LoadU(d, src + v), d, dst + v);
      src += kPanel;
    } else {
#if HWY_TARGET == HWY_SCALAR
      for (int64_t v = 0; v < kPanel; ++v) dst[v] = src[2 * v];
#else
      for (int64_t v = 0; v < kPanel; v += L)
        hn::Store(hn::ConcatEven(d, hn::LoadU(d, src + 2 * v + L), hn::LoadU(d, src + 2 * v)), d, dst + v);
#endif
      src += 2 * kPanel;
    }
    jj += kPanel;
    n -= kPanel;
  }
  while (n > 0) one_by_one(std::min(kPanel, n));
}

// Packs columns [j0, j0 + ncols) of the im2col matrix of one image and group (x: [C_g][H][W]) into
// panels (K x 16 each); the last panel is zero-padded.
void pack_columns(const ConvShape& s, const float* x, int64_t j0, int64_t ncols, float* out) {
  const int64_t K = s.depth(), H = s.in_h, W = s.in_w, HW = H * W, Wo = s.out_w;
  const int64_t n_panels = ceil_div(ncols, kPanel);
  if (ncols % kPanel) std::memset(out + (n_panels - 1) * K * kPanel, 0, sizeof(float) * K * kPanel);
  if (s.is_pointwise()) {
    for (int64_t k = 0; k < K; ++k) put_columns(out, K, k, 0, ncols, x + k * HW + j0, 1);
    return;
  }
  // The block as runs of consecutive output pixels within one output row.
  struct Run {
    int64_t oy, ox0, ox1, jj;
  };
  Run runs_small[64];
  std::unique_ptr<Run[]> runs_large;
  const int64_t max_runs = ncols / std::max<int64_t>(1, Wo) + 2;
  Run* runs = runs_small;
  if (max_runs > 64) {
    runs_large.reset(new Run[max_runs]);
    runs = runs_large.get();
  }
  int64_t n_runs = 0;
  for (int64_t j = j0; j < j0 + ncols;) {
    const int64_t oy = j / Wo, ox0 = j % Wo, ox1 = std::min(Wo, ox0 + (j0 + ncols - j));
    runs[n_runs++] = Run{oy, ox0, ox1, j - j0};
    j += ox1 - ox0;
  }
  const int64_t sh = s.stride_h, sw = s.stride_w;
  for (int64_t c = 0; c < s.in_c_per_group(); ++c) {
    const float* plane = x + c * HW;
    for (int64_t ky = 0; ky < s.kernel_h; ++ky) {
      const int64_t dy = ky * s.dilation_h - s.pad_top;
      for (int64_t kx = 0; kx < s.kernel_w; ++kx) {
        const int64_t k = (c * s.kernel_h + ky) * s.kernel_w + kx;
        const int64_t dx = kx * s.dilation_w - s.pad_left;
        // Output columns whose input column ox * sw + dx lies inside the image.
        const int64_t valid_lo = dx >= 0 ? 0 : ceil_div(-dx, sw);
        const int64_t valid_hi = W - dx > 0 ? ceil_div(W - dx, sw) : 0;
        for (int64_t r = 0; r < n_runs; ++r) {
          const Run& run = runs[r];
          const int64_t iy = run.oy * sh + dy;
          if (iy < 0 || iy >= H) {
            put_columns(out, K, k, run.jj, run.ox1 - run.ox0, nullptr, 0);
            continue;
          }
          const int64_t lo = std::min(std::max(run.ox0, valid_lo), run.ox1);
          const int64_t hi = std::max(std::min(run.ox1, valid_hi), lo);
          if (lo > run.ox0) put_columns(out, K, k, run.jj, lo - run.ox0, nullptr, 0);
          if (hi > lo) put_columns(out, K, k, run.jj + (lo - run.ox0), hi - lo, plane + iy * W + lo * sw + dx, sw);
          if (run.ox1 > hi) put_columns(out, K, k, run.jj + (hi - run.ox0), run.ox1 - hi, nullptr, 0);
        }
      }
    }
  }
}

// C[MR x NP panels] (+)= W[MR x kc] * cols[kc x NP panels]. a: packed weights of the tile's
// first row (row stride kConvWeightRows per depth step); b0/b1: panels (b1 read only when NP == 2).
// With `bias` (the last depth step), the bias is added and the activation applied before storing.
template <int MR, int NP>
HWY_NOINLINE void micro_tile(int64_t kc, const float* HWY_RESTRICT a, const float* HWY_RESTRICT b0,
                             const float* HWY_RESTRICT b1, float* HWY_RESTRICT c, int64_t ldc, bool accumulate,
                             const float* bias, const ConvActivation& act) {
  constexpr int L = ConvTile::kLanes, VP = ConvTile::kVecPerPanel, NV = VP * NP;
  const DF d;
  VF acc[MR][NV];
  AccumulatePanels(d, acc, kc, a, kConvWeightRows, b0, b1);
  for (int i = 0; i < MR; ++i) {
    const VF bi = hn::Set(d, bias ? bias[i] : 0.f);
    for (int v = 0; v < NV; ++v) {
      float* dst = c + i * ldc + (v / VP) * kPanel + (v % VP) * L;
      VF r = acc[i][v];
      if (accumulate) r = hn::Add(r, hn::LoadU(d, dst));
      if (bias) r = activate(d, hn::Add(r, bi), act);
      hn::StoreU(r, d, dst);
    }
  }
}

// One task of a GEMM-scheme convolution: output channels [r0, r1) of one group (multiples of
// kConvWeightRows, r1 possibly the group's end) x output pixels [j0, j0 + ncols).
void gemm_task(const ConvShape& s, const float* x, const float* w, const float* bias, const ConvActivation& act,
               float* y, int64_t j0, int64_t ncols, int64_t r0, int64_t r1) {
  constexpr int MR = ConvTile::kMR, NP = ConvTile::kPanels, NR = ConvTile::kNR;
  const int64_t K = s.depth(), HW = s.out_h * s.out_w, rows = s.out_c_per_group();
  const int64_t n_panels = ceil_div(ncols, kPanel);
  float* cols = thread_buffer(kColumnsSlot, (size_t)(n_panels * kPanel * K));
  pack_columns(s, x, j0, ncols, cols);
  constexpr int64_t kMaxKc = std::min<int64_t>(256, kL1PanelBytes / (NR * (int64_t)sizeof(float)));
  const int64_t kc_step = ceil_div(K, ceil_div(K, kMaxKc));
  HWY_ALIGN float edge[MR * NR];
  for (int64_t rb0 = r0; rb0 < r1; rb0 += kRowBlock) {
    const int64_t rb1 = std::min(r1, rb0 + kRowBlock);
    for (int64_t pc = 0; pc < K; pc += kc_step) {
      const int64_t kc = std::min(kc_step, K - pc);
      const bool first = pc == 0, last = pc + kc >= K;
      for (int64_t p = 0; p < n_panels; p += NP) {
        const int64_t np = std::min<int64_t>(NP, n_panels - p);
        const float* b0 = cols + p * K * kPanel + pc * kPanel;
        const float* b1 = np > 1 ? b0 + K * kPanel : b0;
        const int64_t col = j0 + p * kPanel;
        const int64_t nvalid = std::min<int64_t>(np * kPanel, j0 + ncols - col);
        for (int64_t i = rb0; i < rb1; i += MR) {
          const int64_t mvalid = std::min<int64_t>(MR, rows - i);
          const float* a = w + (i / kConvWeightRows) * K * kConvWeightRows + pc * kConvWeightRows + i % kConvWeightRows;
          const float* bias_i = last ? bias + i : nullptr;
          float* c = y + i * HW + col;
          if (mvalid == MR && nvalid == NR) {
            micro_tile<MR, NP>(kc, a, b0, b1, c, HW, !first, bias_i, act);
            continue;
          }
          // Edge tile: computed in full into a buffer, its valid part copied.
          if (!first) {
            for (int64_t r = 0; r < mvalid; ++r)
              for (int64_t j = 0; j < nvalid; ++j) edge[r * NR + j] = c[r * HW + j];
          }
          if (np == NP) micro_tile<MR, NP>(kc, a, b0, b1, edge, NR, !first, bias_i, act);
          else micro_tile<MR, 1>(kc, a, b0, b0, edge, NR, !first, bias_i, act);
          for (int64_t r = 0; r < mvalid; ++r)
            for (int64_t j = 0; j < nvalid; ++j) c[r * HW + j] = edge[r * NR + j];
        }
      }
    }
  }
}

void ConvGemmImpl(const ConvShape& s, const float* x, const float* packed_w, const float* padded_bias,
                  const ConvActivation& act, float* y, ThreadPool* pool) {
  const int64_t K = s.depth(), HW = s.out_h * s.out_w, G = s.group, rows = s.out_c_per_group();
  if (HW == 0 || s.batch == 0 || rows == 0) return;
  // Column blocks: as many columns as fit the L2 budget, then equalized.
  int64_t block = (kColumnBlockBytes / (K * (int64_t)sizeof(float))) / kPanel * kPanel;
  block = std::min(std::max<int64_t>(block, kPanel), std::min<int64_t>(1024, round_up(HW, kPanel)));
  int64_t n_col_blocks = ceil_div(HW, block);
  block = round_up(ceil_div(HW, n_col_blocks), kPanel);
  n_col_blocks = ceil_div(HW, block);
  // Too few column tasks for the threads: split the output channels too.
  const int threads = pool ? pool->num_threads() : 1;
  const int64_t col_tasks = s.batch * G * n_col_blocks;
  int64_t n_row_blocks = 1;
  if (threads > 1 && col_tasks < 2 * threads)
    n_row_blocks = std::min(ceil_div(rows, kConvWeightRows), ceil_div(2 * threads, col_tasks));
  const int64_t rows_per_block = round_up(ceil_div(rows, n_row_blocks), kConvWeightRows);
  n_row_blocks = ceil_div(rows, rows_per_block);
  const int64_t group_w = round_up(rows, kConvWeightRows) * K;
  const int64_t group_bias = round_up(rows, kConvWeightRows);
  auto body = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t rb = t % n_row_blocks, rest = t / n_row_blocks;
      const int64_t cb = rest % n_col_blocks, image_group = rest / n_col_blocks;
      const int64_t n = image_group / G, g = image_group % G;
      const int64_t j0 = cb * block, ncols = std::min(block, HW - j0);
      const int64_t r0 = rb * rows_per_block, r1 = std::min(rows, r0 + rows_per_block);
      gemm_task(s, x + (n * s.in_c + g * s.in_c_per_group()) * s.in_h * s.in_w, packed_w + g * group_w,
                padded_bias + g * group_bias, act, y + (n * s.out_c + g * rows) * HW, j0, ncols, r0, r1);
    }
  };
  parallel_for(pool, col_tasks * n_row_blocks, 1, body);
}

void ConvAddResidualImpl(const float* residual, const ConvActivation& act, float* y, int64_t count,
                         ThreadPool* pool) {
  const hn::ScalableTag<float> d;
  const int64_t L = (int64_t)hn::Lanes(d);
  parallel_for(pool, ceil_div(count, L), 4096, [&](int64_t v0, int64_t v1) {
    const int64_t end = std::min(count, v1 * L);
    int64_t i = v0 * L;
    for (; i + L <= end; i += L) {
      hn::StoreU(activate(d, hn::Add(hn::LoadU(d, y + i), hn::LoadU(d, residual + i)), act), d, y + i);
    }
    if (i == end) return;
    // The last partial vector, through a buffer.
    HWY_ALIGN float tail_y[hn::MaxLanes(d)] = {}, tail_r[hn::MaxLanes(d)] = {};
    std::copy(y + i, y + end, tail_y);
    std::copy(residual + i, residual + end, tail_r);
    hn::Store(activate(d, hn::Add(hn::Load(d, tail_y), hn::Load(d, tail_r)), act), d, tail_y);
    std::copy(tail_y, tail_y + (end - i), y + i);
  });
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
HWY_EXPORT(ConvGemmImpl);
HWY_EXPORT(ConvAddResidualImpl);


const char* conv_scheme_name(ConvScheme s) {
  switch (s) {
    case ConvScheme::Pointwise: return "pointwise_gemm";
    case ConvScheme::Im2colGemm: return "im2col_gemm";
    case ConvScheme::Depthwise: return "depthwise_direct";
    case ConvScheme::Winograd: return "winograd";
    case ConvScheme::Winograd2x2: return "winograd_2x2";
    case ConvScheme::PixelRows: return "pixel_rows_gemm";
  }
  return "unknown";
}

ConvScheme choose_conv_scheme(const ConvShape& s) {
  // Depthwise layers have one input channel per output: a GEMM of depth kh*kw would be all packing.
  if (s.is_depthwise() && s.group > 1) return ConvScheme::Depthwise;
  // Winograd F(4x4, 3x3) does 36 products per 4x4 output tile where im2col does 144 multiply-adds,
  // but tiles are padded to 4x4 and blocks to 16 tiles, and the transforms cost about as much as a
  // GEMM of depth 10 to 20: it wins once both channel counts reach 16 (measured 1.3-3x faster than
  // im2col and pixel rows from 16 channels, at 8x8 to 112x112 maps) and the padded product count
  // stays well under the direct one (not at 7x7 with batch 1: 4 real tiles in a block of 16).
  // There F(2x2, 3x3) fills its 16 tiles (16 products per 2x2 tile against 36) and its weights
  // grow 16/9 rather than 4 times, which matters where they are streamed from memory.
  if (winograd_supports(s) && s.in_c >= 16 && s.out_c >= 16) {
    auto product_ratio = [&](int64_t tile) {
      const int64_t tiles = s.batch * ceil_div(s.out_h, tile) * ceil_div(s.out_w, tile);
      return (double)((tile + 2) * (tile + 2) * round_up(tiles, 16)) / (9.0 * (double)(s.batch * s.out_h * s.out_w));
    };
    if (product_ratio(4) < 0.5) return ConvScheme::Winograd;
    if (product_ratio(2) < 0.65) return ConvScheme::Winograd2x2;
  }
  // Few output pixels (7x7, 14x14 maps): as the GEMM's 16-wide column panels a 49-pixel map fills
  // 64 columns. The pixel-rows scheme packs the output channels into the panels instead and gives
  // the pixels the register tile's rows (6 on AVX2, the last tile shorter); its pixel block and
  // weight panels also stay in cache. It measured 15-45% faster at 7x7 and 3-25% at 14x14, slower
  // from 28x28 on; it loses when the groups' channel counts fill 16-wide panels badly.
  const int64_t hw = s.out_h * s.out_w, rows = s.out_c_per_group();
  if (hw <= 256) {
    auto fill = [](int64_t n, int64_t tile) { return (double)n / (double)round_up(n, tile); };
    const double columns_fill = fill(hw, 16) * fill(rows, 6), pixel_rows_fill = fill(rows, 16) * fill(hw, 6);
    if (pixel_rows_fill >= 0.95 * columns_fill) return ConvScheme::PixelRows;
  }
  if (s.is_pointwise()) return ConvScheme::Pointwise;
  return ConvScheme::Im2colGemm;
}

size_t conv_packed_weight_floats(const ConvShape& s) {
  return (size_t)(s.group * round_up(s.out_c_per_group(), kConvWeightRows) * s.depth());
}
size_t conv_padded_bias_floats(const ConvShape& s) {
  return (size_t)(s.group * round_up(s.out_c_per_group(), kConvWeightRows));
}

void conv_pack_weights(const ConvShape& s, const float* w, float* packed) {
  const int64_t K = s.depth(), rows = s.out_c_per_group(), padded = round_up(rows, kConvWeightRows);
  std::memset(packed, 0, sizeof(float) * conv_packed_weight_floats(s));
  for (int64_t g = 0; g < s.group; ++g) {
    float* pg = packed + g * padded * K;
    for (int64_t r = 0; r < rows; ++r) {
      const float* src = w + (g * rows + r) * K;
      float* dst = pg + (r / kConvWeightRows) * K * kConvWeightRows + r % kConvWeightRows;
      for (int64_t k = 0; k < K; ++k) dst[k * kConvWeightRows] = src[k];
    }
  }
}

void conv_pad_bias(const ConvShape& s, const float* bias, float* padded) {
  const int64_t rows = s.out_c_per_group(), stride = round_up(rows, kConvWeightRows);
  std::memset(padded, 0, sizeof(float) * conv_padded_bias_floats(s));
  if (!bias) return;
  for (int64_t g = 0; g < s.group; ++g) std::memcpy(padded + g * stride, bias + g * rows, sizeof(float) * rows);
}

void conv2d_gemm(const ConvShape& s, const float* x, const float* packed_w, const float* padded_bias,
                 const ConvActivation& act, float* y, ThreadPool* pool) {
  HWY_DYNAMIC_DISPATCH(ConvGemmImpl)(s, x, packed_w, padded_bias, act, y, pool);
}

void conv_add_residual(const float* residual, const ConvActivation& act, float* y, int64_t count, ThreadPool* pool) {
  HWY_DYNAMIC_DISPATCH(ConvAddResidualImpl)(residual, act, y, count, pool);
}

}  // namespace cpu
}  // namespace mnnpy
#endif
