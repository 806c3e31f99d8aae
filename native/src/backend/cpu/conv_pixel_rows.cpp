// The "pixel rows" GEMM scheme for convolutions with few output pixels (7x7, 14x14 maps), compiled
// per SIMD target (Highway foreach_target) and dispatched at run time.
//
// Per image and group: out^T[HoWo x Cout_g] = cols^T[HoWo x K] * W^T[K x Cout_g]. The output
// channels are the 16-wide packed column panels (the weights, packed once at plan time as
// [panel][K][16]), the pixels the rows of the register tile: a 49-pixel map wastes no columns on
// panel padding, and its last rows run a shorter tile instead of a padded one. A task packs the
// im2col rows of its pixel block (rows of kMR pixels, one depth step at a time), runs kMR x 16(32)
// tiles over its channel panels, keeps partial sums of earlier depth steps in a small buffer and,
// on the last step, adds the bias, applies the activation and writes the tile transposed back to
// NCHW (one channel's pixels are contiguous there).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/conv_pixel_rows.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include "backend/cpu/simd_shared-inl.h"
#include "backend/cpu/conv_activation-inl.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "backend/cpu/conv.h"
#include "backend/cpu/thread_buffers.h"
#include "mnnpy/thread_pool.h"

#ifndef MNNPY_CONV_PIXEL_ROWS_SHARED_ONCE
#define MNNPY_CONV_PIXEL_ROWS_SHARED_ONCE
namespace mnnpy {
namespace cpu {
namespace conv_pixel_rows_detail {

constexpr int64_t kPanel = 16;                  // output channels per packed weight panel
constexpr int64_t kL1PanelBytes = 24 << 10;     // one depth step of the tile's weight panels in L1
constexpr int64_t kRowBlockBytes = 224 << 10;   // packed pixel rows of one depth step: within L2
constexpr int64_t kMaxBlockRows = 256;


enum BufferSlot : int { kRowsSlot, kPartialSlot, kBiasSlot };  // this kernel's thread_buffer slots

// Where a finished tile goes: the bias of its channels (padded to whole panels), the output of its
// first channel and pixel, and how many of its channels exist.
struct TileOut {
  const float* bias;
  float* y;
  int64_t hw;  // distance between channels in y
  int64_t channels;
  ConvActivation act;
};

}  // namespace conv_pixel_rows_detail
}  // namespace cpu
}  // namespace mnnpy
#endif  // MNNPY_CONV_PIXEL_ROWS_SHARED_ONCE

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace conv_pixel_rows_detail;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
using PixelTile = GemmTile<float>;
static_assert(PixelTile::kPanel == kPanel, "weight panels are the GEMM's");

// Packs depth [pc, pc + kc) of the im2col rows of pixels [p0, p0 + m) (x: [C_g][H][W] of one
// image and group) as row panels: for each group of kMR pixels, kc steps of kMR values. Rows past
// the end of the last panel are left unset (its tile is shorter).
void pack_pixel_rows(const ConvShape& s, const float* x, int64_t p0, int64_t m, int64_t pc, int64_t kc,
                     float* out) {
  constexpr int64_t MR = PixelTile::kMR;
  const int64_t H = s.in_h, W = s.in_w, HW = H * W, Wo = s.out_w;
  const int64_t tile_stride = kc * MR;
  // Writes n values src[q * stride] (zeros when src is null) for pixels jj.. of depth row k.
  auto put = [&](int64_t k, int64_t jj, int64_t n, const float* src, int64_t stride) {
    int64_t t = jj / MR, r = jj % MR;
    float* dst = out + t * tile_stride + k * MR;
    for (int64_t q = 0; q < n; ++q) {
      dst[r] = src ? src[q * stride] : 0.f;
      if (++r == MR) {
        r = 0;
        dst += tile_stride;
      }
    }
  };
  if (s.is_pointwise()) {
    for (int64_t k = 0; k < kc; ++k) {
      const float* src = x + (pc + k) * HW + p0;
      const int64_t full = m / MR * MR;
      float* dst = out + k * MR;
      for (int64_t j = 0; j < full; j += MR, dst += tile_stride)
        for (int64_t r = 0; r < MR; ++r) dst[r] = src[j + r];
      for (int64_t j = full; j < m; ++j) dst[j - full] = src[j];
    }
    return;
  }
  const int64_t sh = s.stride_h, sw = s.stride_w, khw = s.kernel_h * s.kernel_w;
  for (int64_t k = 0; k < kc; ++k) {
    const int64_t kk = pc + k, c = kk / khw, ky = (kk % khw) / s.kernel_w, kx = kk % s.kernel_w;
    const float* plane = x + c * HW;
    const int64_t dy = ky * s.dilation_h - s.pad_top, dx = kx * s.dilation_w - s.pad_left;
    // Output columns whose input column ox * sw + dx lies inside the image.
    const int64_t valid_lo = dx >= 0 ? 0 : ceil_div(-dx, sw);
    const int64_t valid_hi = W - dx > 0 ? ceil_div(W - dx, sw) : 0;
    for (int64_t j = p0; j < p0 + m;) {
      const int64_t oy = j / Wo, ox0 = j % Wo, ox1 = std::min(Wo, ox0 + (p0 + m - j)), jj = j - p0;
      j += ox1 - ox0;
      const int64_t iy = oy * sh + dy;
      if (iy < 0 || iy >= H) {
        put(k, jj, ox1 - ox0, nullptr, 0);
        continue;
      }
      const int64_t lo = std::min(std::max(ox0, valid_lo), ox1);
      const int64_t hi = std::max(std::min(ox1, valid_hi), lo);
      if (lo > ox0) put(k, jj, lo - ox0, nullptr, 0);
      if (hi > lo) put(k, jj + (lo - ox0), hi - lo, plane + iy * W + lo * sw + dx, sw);
      if (ox1 > hi) put(k, jj + (hi - ox0), ox1 - hi, nullptr, 0);
    }
  }
}

// Partial[M x NP panels] (+)= rows[M x kc] * W[kc x NP panels]. a: the packed pixel rows (kMR
// values per depth step, the first M used); b0/b1: weight panels (b1 read only when NP == 2);
// partial: row stride ldp. With `out` (the last depth step) the bias is added, the activation
// applied and the tile written transposed to the output instead.
template <int M, int NP>
HWY_NOINLINE void pixel_tile(int64_t kc, const float* HWY_RESTRICT a, const float* HWY_RESTRICT b0,
                             const float* HWY_RESTRICT b1, float* HWY_RESTRICT partial, int64_t ldp, bool accumulate,
                             const TileOut* out) {
  constexpr int MR = PixelTile::kMR, L = PixelTile::kLanes, VP = PixelTile::kVecPerPanel, NV = VP * NP;
  constexpr int NR = NP * (int)kPanel;
  const DF d;
  VF acc[M][NV];
  AccumulatePanels(d, acc, kc, a, MR, b0, b1);
  if (accumulate) {
    for (int i = 0; i < M; ++i)
      for (int v = 0; v < NV; ++v) acc[i][v] = hn::Add(acc[i][v], hn::LoadU(d, partial + i * ldp + v * L));
  }
  if (!out) {
    for (int i = 0; i < M; ++i)
      for (int v = 0; v < NV; ++v) hn::StoreU(acc[i][v], d, partial + i * ldp + v * L);
    return;
  }
  HWY_ALIGN float tile[M * NR];
  for (int v = 0; v < NV; ++v) {
    const VF bias = hn::LoadU(d, out->bias + v * L);
    for (int i = 0; i < M; ++i) hn::Store(activate(d, hn::Add(acc[i][v], bias), out->act), d, tile + i * NR + v * L);
  }
  const int64_t channels = std::min<int64_t>(NR, out->channels);
  for (int64_t j = 0; j < channels; ++j) {
    float* dst = out->y + j * out->hw;
    for (int i = 0; i < M; ++i) dst[i] = tile[i * NR + j];
  }
}

template <int M>
HWY_INLINE void run_tile(int m, int np, int64_t kc, const float* a, const float* b0, const float* b1, float* partial,
                         int64_t ldp, bool accumulate, const TileOut* out) {
  if constexpr (M > PixelTile::kMR) {
    (void)m, (void)np, (void)kc, (void)a, (void)b0, (void)b1, (void)partial, (void)ldp, (void)accumulate, (void)out;
  } else if (m == M) {
    if (PixelTile::kPanels == 2 && np == 2)
      pixel_tile<M, PixelTile::kPanels>(kc, a, b0, b1, partial, ldp, accumulate, out);
    else pixel_tile<M, 1>(kc, a, b0, b0, partial, ldp, accumulate, out);
  } else {
    run_tile<M + 1>(m, np, kc, a, b0, b1, partial, ldp, accumulate, out);
  }
}

// One task: pixels [p0, p0 + m) of one image and group x channel panels [q0, q1) of the group.
// x: the image and group's input; w: the group's packed weights; bias: the group's bias (rows
// values); y: the image and group's output.
void pixel_rows_task(const ConvShape& s, const float* x, const float* w, const float* bias, const ConvActivation& act,
                     float* y, int64_t p0, int64_t m, int64_t q0, int64_t q1, int64_t kc_step) {
  constexpr int64_t MR = PixelTile::kMR, NP = PixelTile::kPanels;
  const int64_t K = s.depth(), HW = s.out_h * s.out_w, rows = s.out_c_per_group();
  const int64_t width = (q1 - q0) * kPanel;  // the task's channels, padded to whole panels
  const int64_t n_tiles = ceil_div(m, MR);
  float* packed = thread_buffer(kRowsSlot, (size_t)(n_tiles * MR * kc_step));
  float* partial = K > kc_step ? thread_buffer(kPartialSlot, (size_t)(m * width)) : nullptr;
  float* bias_block = thread_buffer(kBiasSlot, (size_t)width);
  const int64_t c0 = q0 * kPanel, real = std::min(rows, q1 * kPanel) - c0;
  std::memcpy(bias_block, bias + c0, sizeof(float) * real);
  std::memset(bias_block + real, 0, sizeof(float) * (width - real));
  for (int64_t pc = 0; pc < K; pc += kc_step) {
    const int64_t kc = std::min(kc_step, K - pc);
    const bool first = pc == 0, last = pc + kc >= K;
    pack_pixel_rows(s, x, p0, m, pc, kc, packed);
    for (int64_t q = q0; q < q1; q += NP) {
      const int np = (int)std::min<int64_t>(NP, q1 - q);
      const float* b0 = w + q * K * kPanel + pc * kPanel;
      const float* b1 = np > 1 ? b0 + K * kPanel : b0;
      TileOut out{bias_block + (q - q0) * kPanel, nullptr, HW, rows - q * kPanel, act};
      for (int64_t t = 0; t < n_tiles; ++t) {
        const int mt = (int)std::min<int64_t>(MR, m - t * MR);
        float* part = partial ? partial + t * MR * width + (q - q0) * kPanel : nullptr;
        out.y = y + q * kPanel * HW + p0 + t * MR;
        run_tile<1>(mt, np, kc, packed + t * MR * kc, b0, b1, part, width, !first, last ? &out : nullptr);
      }
    }
  }
}

void ConvPixelRowsImpl(const ConvShape& s, const float* x, const float* packed_w, const float* padded_bias,
                       const ConvActivation& act, float* y, ThreadPool* pool) {
  constexpr int64_t MR = PixelTile::kMR, NR = PixelTile::kNR;
  const int64_t K = s.depth(), HW = s.out_h * s.out_w, G = s.group, rows = s.out_c_per_group();
  if (HW == 0 || s.batch == 0 || rows == 0) return;
  constexpr int64_t kMaxKc = kL1PanelBytes / (NR * (int64_t)sizeof(float));
  const int64_t kc_step = ceil_div(K, ceil_div(K, kMaxKc));
  // Pixel blocks: as many rows as fit the L2 budget, then equalized in whole tiles.
  int64_t block = std::min(kMaxBlockRows, kRowBlockBytes / (kc_step * (int64_t)sizeof(float))) / MR * MR;
  block = std::max(block, MR);
  int64_t n_pixel_blocks = ceil_div(HW, block);
  block = round_up(ceil_div(HW, n_pixel_blocks), MR);
  n_pixel_blocks = ceil_div(HW, block);
  // Too few pixel tasks for the threads: split the channel panels, one share per thread.
  const int threads = pool ? pool->num_threads() : 1;
  const int64_t panels = ceil_div(rows, kPanel);
  const int64_t pixel_tasks = s.batch * G * n_pixel_blocks;
  int64_t n_channel_blocks = 1;
  if (threads > 1 && pixel_tasks < 2 * threads)
    n_channel_blocks = std::min(ceil_div(panels, NR / kPanel), ceil_div(threads, pixel_tasks));
  const int64_t panels_per_block = round_up(ceil_div(panels, n_channel_blocks), NR / kPanel);
  n_channel_blocks = ceil_div(panels, panels_per_block);
  const int64_t group_w = panels * kPanel * K;
  const int64_t group_bias = round_up(rows, kConvWeightRows);
  auto body = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t cb = t % n_channel_blocks, rest = t / n_channel_blocks;
      const int64_t pb = rest % n_pixel_blocks, image_group = rest / n_pixel_blocks;
      const int64_t n = image_group / G, g = image_group % G;
      const int64_t p0 = pb * block, m = std::min(block, HW - p0);
      const int64_t q0 = cb * panels_per_block, q1 = std::min(panels, q0 + panels_per_block);
      pixel_rows_task(s, x + (n * s.in_c + g * s.in_c_per_group()) * s.in_h * s.in_w, packed_w + g * group_w,
                      padded_bias + g * group_bias, act, y + (n * s.out_c + g * rows) * HW, p0, m, q0, q1, kc_step);
    }
  };
  parallel_for(pool, pixel_tasks * n_channel_blocks, 1, body);
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
HWY_EXPORT(ConvPixelRowsImpl);

using conv_pixel_rows_detail::kPanel;

size_t conv_pixel_rows_weight_floats(const ConvShape& s) {
  return (size_t)(s.group * round_up(s.out_c_per_group(), kPanel) * s.depth());
}

void conv_pixel_rows_pack_weights(const ConvShape& s, const float* w, float* packed) {
  const int64_t K = s.depth(), rows = s.out_c_per_group(), padded = round_up(rows, kPanel);
  std::memset(packed, 0, sizeof(float) * conv_pixel_rows_weight_floats(s));
  for (int64_t g = 0; g < s.group; ++g) {
    float* pg = packed + g * padded * K;
    for (int64_t r = 0; r < rows; ++r) {
      const float* src = w + (g * rows + r) * K;
      float* dst = pg + (r / kPanel) * K * kPanel + r % kPanel;
      for (int64_t k = 0; k < K; ++k) dst[k * kPanel] = src[k];
    }
  }
}

void conv2d_pixel_rows(const ConvShape& s, const float* x, const float* packed_w, const float* padded_bias,
                       const ConvActivation& act, float* y, ThreadPool* pool) {
  HWY_DYNAMIC_DISPATCH(ConvPixelRowsImpl)(s, x, packed_w, padded_bias, act, y, pool);
}

}  // namespace cpu
}  // namespace mnnpy
#endif
