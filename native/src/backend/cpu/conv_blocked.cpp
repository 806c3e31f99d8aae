// Direct convolution in the blocked channel layout (group 1), compiled per SIMD target (Highway
// foreach_target) and dispatched at run time.
//
// Register tile: P consecutive output pixels x NB blocks of 8 output channels (AVX2: 6 x 2;
// AVX-512, with 32 registers: 6 x 4). Per input value it broadcasts one scalar per pixel and loads
// one weight vector per block; the accumulators start from the bias (or from the partial sums in
// the output) and leave the registers with the residual added and the activation applied. A layer
// with an odd block count ends on a tile of 3 blocks, so that no input is broadcast for one block.
//
// What a tile reduces over is a list of runs, one per input channel block and kernel row: with
// dilation 1 the kw taps of a kernel row are neighbouring pixels, so a run is kw * 8 consecutive
// values in the input and kw * 8 consecutive weight rows. Kernel rows outside the image are left
// out of an output row's list (vertical padding costs nothing), and output rows with the same list
// form one span of pixels whose tiles run across row ends: each pixel's input and output are
// offsets from the run starts and the span's start, so a 7-wide map costs no narrow tile per row.
// Horizontal padding: the rows a task reads are first copied into zero-padded rows, so that no
// tap checks bounds; dilated layers, whose kernel columns are separate runs, also leave out the
// columns outside the image (spans of the columns with the same taps). NCHW input (a first
// layer with few channels): its rows are copied pixel-interleaved ([W][C]), so that a kernel row's
// kw * C values are one run as well.
//
// Work: tasks of (image, range of weight panels, range of output rows); 1x1 stride-1 layers see a
// plane as one row and split it into pixel ranges. A task takes the input channels in chunks (most
// layers: one) and per chunk and tile of output blocks sweeps all its pixels, whose input stays in
// L2 meanwhile. Later chunks add to the sums in the output.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/conv_blocked.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "backend/cpu/conv_blocked_tiles-inl.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/cpu/conv_blocked.h"
#include "backend/cpu/thread_buffers.h"
#include "mnnpy/thread_pool.h"

#ifndef MNNPY_CONV_BLOCKED_SHARED_ONCE
#define MNNPY_CONV_BLOCKED_SHARED_ONCE
namespace mnnpy {
namespace cpu {
namespace conv_blocked_detail {

constexpr int64_t kPanelWidth = kBlockedPanelBlocks * kChannelBlock;  // floats per weight row of a full panel
static_assert(kBlockedPanelBlocks == 2, "a tile's weights are one or two panels");
// Cache budgets. A chunk of input channels is sized so that one tile's weights for it stay in L2
// (they are read once per tile of pixels): smaller chunks, sized for L1, measured slower, since
// every chunk after the first reloads and stores the partial sums. A task's rows are sized so that
// the input they read for one chunk stays in L2 beside those weights while every tile of output
// blocks sweeps it.
constexpr int64_t kWeightChunkBytes = 192 << 10;
constexpr int64_t kTaskInputBytes = 160 << 10;

enum BufferSlot : int { kStageSlot };  // this kernel's thread_buffer slots

// The layer as the tile loops see it.
struct Layer {
  ConvShape s;
  bool nchw = false;
  bool flat = false;    // 1x1, stride 1, no padding: a plane is one row of H * W pixels
  bool staged = false;  // rows are read from zero-padded copies
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;  // after flattening
  int64_t in_blocks = 0;     // input channel blocks (NCHW: one of all C channels)
  int64_t out_blocks = 0, panels = 0;
  int64_t staged_w = 0;      // columns of a staged row: the padded columns the output reads
  int64_t pixel_stride = 0;  // floats between the inputs of neighbouring output pixels
  int64_t run = 0;           // values per run: kw * 8 or 8 (blocked), kw * C or C (NCHW)
  int64_t runs_per_row = 0;  // runs per kernel row and channel block: 1, or kw when dilated
  int64_t chunk_blocks = 0, chunks = 0;
};

}  // namespace conv_blocked_detail
}  // namespace cpu
}  // namespace mnnpy
#endif  // MNNPY_CONV_BLOCKED_SHARED_ONCE

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace conv_blocked_detail;

Layer make_layer(const ConvShape& s, bool nchw) {
  Layer g;
  g.s = s;
  g.nchw = nchw;
  g.flat = !nchw && s.is_pointwise();
  g.in_h = g.flat ? 1 : s.in_h;
  g.in_w = g.flat ? s.in_h * s.in_w : s.in_w;
  g.out_h = g.flat ? 1 : s.out_h;
  g.out_w = g.flat ? s.out_h * s.out_w : s.out_w;
  const int64_t span_w = (s.kernel_w - 1) * s.dilation_w + 1;
  g.staged_w = (g.out_w - 1) * s.stride_w + span_w;
  g.runs_per_row = s.dilation_w == 1 ? 1 : s.kernel_w;
  // Dilated layers read no padding (their spans leave out the columns outside the image).
  g.staged = nchw || (g.runs_per_row == 1 && (s.pad_left > 0 || g.staged_w - s.pad_left > g.in_w));
  g.in_blocks = nchw ? 1 : s.in_c / kChannelBlock;
  g.out_blocks = s.out_c / kChannelBlock;
  g.panels = ceil_div(g.out_blocks, kBlockedPanelBlocks);
  const int64_t cell = nchw ? s.in_c : kChannelBlock;  // floats per input pixel of a staged row or block
  g.pixel_stride = s.stride_w * cell;
  g.run = (s.dilation_w == 1 ? s.kernel_w : 1) * cell;
  if (nchw) {
    g.chunk_blocks = g.chunks = 1;
  } else {
    const int64_t block_bytes = s.kernel_h * s.kernel_w * kChannelBlock * kTileBlocks * kChannelBlock * 4;
    g.chunk_blocks = std::min(g.in_blocks, std::max<int64_t>(1, kWeightChunkBytes / block_bytes));
    g.chunks = ceil_div(g.in_blocks, g.chunk_blocks);
    g.chunk_blocks = ceil_div(g.in_blocks, g.chunks);
  }
  return g;
}

// Copies input rows [iy0, iy0 + rows) of channel blocks [cb0, cb0 + blocks) into zero-padded rows:
// blocked [blocks][rows][staged_w][8], NCHW [rows][staged_w][C] (pixel-interleaved).
void stage_rows(const Layer& g, const float* x_img, int64_t cb0, int64_t blocks, int64_t iy0, int64_t rows,
                float* stage) {
  const ConvShape& s = g.s;
  const int64_t pl = s.pad_left, W = g.in_w, H = g.in_h;
  const int64_t copied = std::max<int64_t>(0, std::min(W, g.staged_w - pl));  // input columns the rows read
  const int64_t cell = g.nchw ? s.in_c : kChannelBlock;
  const int64_t row_floats = g.staged_w * cell;
  const int64_t lead = std::min(pl, g.staged_w) * cell, tail_begin = std::min(row_floats, (pl + copied) * cell);
  auto zero_pads = [&](float* row) {
    std::memset(row, 0, sizeof(float) * lead);
    std::memset(row + tail_begin, 0, sizeof(float) * (row_floats - tail_begin));
  };
  if (!g.nchw) {
    for (int64_t cb = 0; cb < blocks; ++cb) {
      for (int64_t r = 0; r < rows; ++r) {
        float* row = stage + (cb * rows + r) * row_floats;
        zero_pads(row);
        std::memcpy(row + pl * kChannelBlock, x_img + (((cb0 + cb) * H + iy0 + r) * W) * kChannelBlock,
                    sizeof(float) * copied * kChannelBlock);
      }
    }
    return;
  }
  const int64_t C = s.in_c;
  for (int64_t r = 0; r < rows; ++r) {
    float* row = stage + r * row_floats;
    zero_pads(row);
    for (int64_t c = 0; c < C; ++c) {
      const float* src = x_img + (c * H + iy0 + r) * W;
      float* dst = row + pl * C + c;
      for (int64_t ix = 0; ix < copied; ++ix) dst[ix * C] = src[ix];
    }
  }
}

struct TaskSplit {
  int64_t units = 0, per_task = 0, tasks = 0;  // output rows (flat layers: pixels) per task
  int64_t panels_per_task = 0, panel_tasks = 0;
};

// Rows per task: the input a chunk of them reads stays in L2. More tasks when threads would idle,
// split where the data read again costs less: rows (each task reads its panels' weights) or panels
// (each task reads its rows' input).
TaskSplit split_tasks(const Layer& g, int threads) {
  const ConvShape& s = g.s;
  TaskSplit t;
  const int64_t chunk_c = g.nchw ? s.in_c : g.chunk_blocks * kChannelBlock;
  t.units = g.flat ? g.out_w : g.out_h;
  // Input pixels one output row reads: the rows and columns its taps touch.
  const int64_t rows_read = std::min(s.stride_h, s.kernel_h);
  const int64_t cols_read = std::min(g.staged ? g.staged_w : g.in_w, g.out_w * std::min(s.stride_w, s.kernel_w));
  const int64_t unit_bytes = g.flat ? chunk_c * 4 : rows_read * cols_read * chunk_c * 4;
  int64_t row_tasks = ceil_div(t.units, std::max<int64_t>(1, kTaskInputBytes / unit_bytes));
  int64_t panel_tasks = 1;
  const int64_t want = threads > 1 ? 2 * threads : 1;
  const double weight_bytes = (double)s.out_c * s.in_c * s.kernel_h * s.kernel_w * 4;
  const double input_bytes = (double)t.units * unit_bytes * g.chunks;
  while (s.batch * row_tasks * panel_tasks < want) {
    const bool more_panels = panel_tasks < g.panels;
    const bool more_rows = row_tasks < t.units;
    if (more_panels && (!more_rows || weight_bytes / panel_tasks >= input_bytes / row_tasks)) {
      panel_tasks = std::min(g.panels, panel_tasks * 2);
    } else if (more_rows) {
      row_tasks = std::min(t.units, row_tasks * 2);
    } else {
      break;
    }
  }
  t.per_task = ceil_div(t.units, row_tasks);
  if (g.flat) t.per_task = std::min(t.units, round_up(t.per_task, tile_pixels<kTileBlocks>()));
  t.tasks = ceil_div(t.units, t.per_task);
  t.panels_per_task = ceil_div(g.panels, panel_tasks);
  t.panel_tasks = ceil_div(g.panels, t.panels_per_task);
  return t;
}

// Output pixels whose kernel taps inside the image are the same (a band of rows, and for dilated
// layers a segment of columns): their runs differ only by where the pixels start, so they form one
// span, which runs on across row ends.
struct PixelGroup {
  int64_t oy0 = 0, ox0 = 0;  // the first pixel's row and column
  size_t first_run = 0, runs = 0, first_pixel = 0, pixels = 0;
};

// Columns [ox0, ox1) as segments whose kernel columns inside the image are the same: (first
// column, taps) per segment.
void column_segments(const ConvShape& s, int64_t in_w, int64_t ox0, int64_t ox1,
                     std::vector<std::pair<int64_t, std::pair<int64_t, int64_t>>>& out) {
  out.clear();
  for (int64_t ox = ox0; ox < ox1; ++ox) {
    const auto kx = taps_inside(ox, s.stride_w, s.pad_left, s.dilation_w, s.kernel_w, in_w);
    if (out.empty() || out.back().second != kx) out.push_back({ox, kx});
  }
}

// Per task and chunk: the groups, their runs and their pixels' input offsets.
struct ChunkPlan {
  std::vector<PixelGroup> groups;
  std::vector<const float*> run_x;
  std::vector<int64_t> run_w, x_offsets, y_offsets;
  std::vector<std::pair<int64_t, std::pair<int64_t, int64_t>>> columns;
};

void ConvBlockedImpl(const ConvShape& shape, bool nchw, const float* x, const float* packed_w, const float* bias,
                     const float* residual, const ConvActivation& act, float* y, ThreadPool* pool) {
  if (shape.batch == 0 || shape.out_h == 0 || shape.out_w == 0) return;
  const Layer g = make_layer(shape, nchw);
  const ConvShape& s = g.s;
  const TaskSplit split = split_tasks(g, pool ? pool->num_threads() : 1);
  const int64_t taps = s.kernel_h * s.kernel_w;
  const int64_t in_image = s.in_c * s.in_h * s.in_w, out_plane = g.out_h * g.out_w * kChannelBlock;
  const int64_t out_image = g.out_blocks * out_plane;
  const int64_t cell = nchw ? s.in_c : kChannelBlock;
  const int64_t row_floats = g.staged_w * cell;

  auto body = [&](int64_t t0, int64_t t1) {
    ChunkPlan plan;
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t pt = task % split.panel_tasks, rest = task / split.panel_tasks;
      const int64_t ut = rest % split.tasks, n = rest / split.tasks;
      const int64_t u0 = ut * split.per_task, u1 = std::min(split.units, u0 + split.per_task);
      const int64_t q0 = pt * split.panels_per_task, q1 = std::min(g.panels, q0 + split.panels_per_task);
      const int64_t oy0 = g.flat ? 0 : u0, oy1 = g.flat ? 1 : u1;
      const int64_t ox0 = g.flat ? u0 : 0, ox1 = g.flat ? u1 : g.out_w;
      const float* x_img = x + n * in_image;
      float* y_img = y + n * out_image;
      const float* res_img = residual ? residual + n * out_image : nullptr;
      // Input rows the task reads.
      const int64_t iy_lo = std::max<int64_t>(0, oy0 * s.stride_h - s.pad_top);
      const int64_t iy_hi =
          std::min(g.in_h, (oy1 - 1) * s.stride_h - s.pad_top + (s.kernel_h - 1) * s.dilation_h + 1);
      const int64_t rows_in = std::max<int64_t>(0, iy_hi - iy_lo);
      auto kernel_rows = [&](int64_t oy) {
        return taps_inside(oy, s.stride_h, s.pad_top, s.dilation_h, s.kernel_h, g.in_h);
      };
      for (int64_t chunk = 0; chunk < g.chunks; ++chunk) {
        const int64_t cb0 = chunk * g.chunk_blocks, blocks = std::min(g.chunk_blocks, g.in_blocks - cb0);
        float* stage = nullptr;
        if (g.staged && rows_in > 0) {
          stage = thread_buffer(kStageSlot, (size_t)(blocks * rows_in * row_floats));
          stage_rows(g, x_img, cb0, blocks, iy_lo, rows_in, stage);
        }
        // Floats between the inputs of output rows oy and oy + 1.
        const int64_t row_step = s.stride_h * (stage ? row_floats : g.in_w * kChannelBlock);
        plan.groups.clear();
        plan.run_x.clear();
        plan.run_w.clear();
        plan.x_offsets.clear();
        plan.y_offsets.clear();
        // Output pixels are grouped by the kernel taps inside the image, so that no group reads
        // the padding: rows by their kernel rows; for dilated layers, whose taps of a kernel row
        // are separate runs, also columns by their kernel columns (with a large dilation on a
        // small map most taps of most pixels fall outside). Undilated rows read their horizontal
        // padding from the staged zeros: a kernel row is one run there.
        if (g.runs_per_row > 1) column_segments(s, g.in_w, ox0, ox1, plan.columns);
        else plan.columns.assign(1, {ox0, {0, 1}});
        for (int64_t oy = oy0; oy < oy1;) {
          const int64_t row0 = oy;
          const auto ky = kernel_rows(oy);
          for (++oy; oy < oy1 && kernel_rows(oy) == ky;) ++oy;
          for (size_t i = 0; i < plan.columns.size(); ++i) {
            const auto kx = plan.columns[i].second;
            PixelGroup grp;
            grp.oy0 = row0;
            grp.ox0 = plan.columns[i].first;
            const int64_t col1 = i + 1 < plan.columns.size() ? plan.columns[i + 1].first : ox1;
            grp.first_run = plan.run_x.size();
            for (int64_t cb = 0; cb < blocks; ++cb) {
              for (int64_t kyy = ky.first; kyy < ky.second; ++kyy) {
                const int64_t iy = row0 * s.stride_h - s.pad_top + kyy * s.dilation_h;
                for (int64_t kr = kx.first; kr < kx.second; ++kr) {
                  // The column the group's first pixel reads (staged rows start at the padding).
                  const int64_t kxx = g.runs_per_row == 1 ? 0 : kr;
                  const int64_t col = grp.ox0 * s.stride_w + kxx * s.dilation_w - (stage ? 0 : s.pad_left);
                  plan.run_x.push_back(stage ? stage + (cb * rows_in + (iy - iy_lo)) * row_floats + col * cell
                                             : x_img + (((cb0 + cb) * g.in_h + iy) * g.in_w + col) * kChannelBlock);
                  plan.run_w.push_back(nchw ? (kyy * s.kernel_w + kxx) * s.in_c
                                            : ((cb0 + cb) * taps + kyy * s.kernel_w + kxx) * kChannelBlock);
                }
              }
            }
            grp.runs = plan.run_x.size() - grp.first_run;
            grp.first_pixel = plan.x_offsets.size();
            for (int64_t r = 0; r < oy - row0; ++r) {
              for (int64_t ox = grp.ox0; ox < col1; ++ox) {
                plan.x_offsets.push_back(r * row_step + (ox - grp.ox0) * g.pixel_stride);
                plan.y_offsets.push_back((r * g.out_w + ox - grp.ox0) * kChannelBlock);
              }
            }
            grp.pixels = plan.x_offsets.size() - grp.first_pixel;
            plan.groups.push_back(grp);
          }
        }
        SpanArgs a;
        a.run = g.run;
        a.y_block_stride = out_plane;
        a.accumulate = chunk > 0;
        a.finish = chunk == g.chunks - 1;
        a.act = act;
        const int64_t ob_end = std::min(g.out_blocks, q1 * kBlockedPanelBlocks);
        for (int64_t ob = q0 * kBlockedPanelBlocks, nb = 0; ob < ob_end; ob += nb) {
          nb = tile_blocks(ob, ob_end);
          const int64_t q = ob / kBlockedPanelBlocks;
          a.w = packed_w + q * kPanelWidth * s.in_c * taps;
          a.w_next = nb > kBlockedPanelBlocks ? a.w + kPanelWidth * s.in_c * taps : nullptr;
          a.bias = bias + ob * kChannelBlock;
          for (const PixelGroup& grp : plan.groups) {
            a.run_x = plan.run_x.data() + grp.first_run;
            a.run_w = plan.run_w.data() + grp.first_run;
            a.runs = (int64_t)grp.runs;
            a.x_offsets = plan.x_offsets.data() + grp.first_pixel;
            a.y_offsets = plan.y_offsets.data() + grp.first_pixel;
            const int64_t out_at = ((ob * g.out_h + grp.oy0) * g.out_w + grp.ox0) * kChannelBlock;
            a.y = y_img + out_at;
            a.residual = res_img ? res_img + out_at : nullptr;
            if (nchw) run_span<false>(a, nb, (int64_t)grp.pixels);
            else run_span<true>(a, nb, (int64_t)grp.pixels);
          }
        }
      }
    }
  };
  parallel_for(pool, s.batch * split.tasks * split.panel_tasks, 1, body);
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
HWY_EXPORT(ConvBlockedImpl);

size_t conv_blocked_weight_floats(const ConvShape& s, bool) {
  return (size_t)(s.out_c * s.in_c * s.kernel_h * s.kernel_w);
}

void conv_blocked_pack_weights(const ConvShape& s, bool nchw_input, const float* w, float* packed) {
  using conv_blocked_detail::kPanelWidth;
  const int64_t C = s.in_c, taps = s.kernel_h * s.kernel_w, out_blocks = s.out_c / kChannelBlock;
  for (int64_t q = 0; q * kBlockedPanelBlocks < out_blocks; ++q) {
    const int64_t row = std::min(kBlockedPanelBlocks, out_blocks - q * kBlockedPanelBlocks) * kChannelBlock;
    const float* src = w + q * kPanelWidth * C * taps;  // [row][C][kh][kw]
    float* panel = packed + q * kPanelWidth * C * taps;
    // Weight rows in the order they are stored, each gathered from the panel's output channels:
    // NCHW input [kh][kw][C]; blocked [C/8][kh][kw][8].
    const int64_t rows = C * taps;
    for (int64_t r = 0; r < rows; ++r) {
      int64_t c, tap;
      if (nchw_input) {
        tap = r / C;
        c = r % C;
      } else {
        const int64_t cb = r / (taps * kChannelBlock), rest = r % (taps * kChannelBlock);
        tap = rest / kChannelBlock;
        c = cb * kChannelBlock + rest % kChannelBlock;
      }
      const float* from = src + c * taps + tap;
      float* to = panel + r * row;
      for (int64_t j = 0; j < row; ++j) to[j] = from[j * C * taps];
    }
  }
}

void conv2d_blocked(const ConvShape& s, bool nchw_input, const float* x, const float* packed_w, const float* bias,
                    const float* residual, const ConvActivation& act, float* y, ThreadPool* pool) {
  HWY_DYNAMIC_DISPATCH(ConvBlockedImpl)(s, nchw_input, x, packed_w, bias, residual, act, y, pool);
}

}  // namespace cpu
}  // namespace mnnpy
#endif
