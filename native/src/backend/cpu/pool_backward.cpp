// Pooling gradients, one task per group of (image, channel) planes: every plane owns its input
// gradient, so overlapping windows accumulate without synchronization.
#include "backend/cpu/pool_backward.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "mnnpy/thread_pool.h"

namespace mnnpy {
namespace cpu {

namespace {

// Planes per task: about 16k taps of work each.
int64_t plane_grain(const PoolGeometry& g) {
  const int64_t work = std::max<int64_t>(1, g.out_h * g.out_w * g.kernel_h * g.kernel_w + g.in_h * g.in_w);
  return std::max<int64_t>(1, (int64_t(1) << 14) / work);
}

}  // namespace

// The winner of a tap against the best so far, without branches (which tap wins is unpredictable):
// a mask from the comparisons (a NaN always takes over, as in PyTorch) selects value bits and index.
inline void take_if_better(float v, int64_t at, float& best, int64_t& arg) {
  const int32_t take = -(int32_t)((int)(v > best) | (int)(v != v));
  uint32_t vb, bb;
  std::memcpy(&vb, &v, 4);
  std::memcpy(&bb, &best, 4);
  bb ^= (bb ^ vb) & (uint32_t)take;
  std::memcpy(&best, &bb, 4);
  arg ^= (arg ^ at) & (int64_t)take;
}

// L windows side by side in one output row, each with every column inside the input and rows
// [r0, r1) of the kernel: their searches are independent dependency chains, interleaved.
template <int L>
inline void max_windows(const float* in, int64_t W, int64_t first_row, int64_t r0, int64_t r1, int64_t dh,
                        int64_t kw, int64_t dw, int64_t sw, const float* grad, float* out) {
  float best[L];
  int64_t arg[L];
  for (int j = 0; j < L; ++j) {
    best[j] = -std::numeric_limits<float>::infinity();
    arg[j] = first_row + r0 * dh * W + j * sw;
  }
  for (int64_t ky = r0; ky < r1; ++ky) {
    const int64_t row = first_row + ky * dh * W;
    for (int64_t kx = 0; kx < kw; ++kx) {
      const int64_t base = row + kx * dw;
      for (int j = 0; j < L; ++j) take_if_better(in[base + j * sw], base + j * sw, best[j], arg[j]);
    }
  }
  for (int j = 0; j < L; ++j) out[arg[j]] += grad[j];
}

void max_pool2d_backward(const PoolGeometry& g, const PoolWindows& win, const float* x, const float* dy, float* dx,
                         ThreadPool* pool) {
  const int64_t W = g.in_w, plane_in = g.in_h * g.in_w, plane_out = g.out_h * g.out_w;
  const int64_t dh = g.dilation_h, dw = g.dilation_w, sw = g.stride_w, kw = g.kernel_w;
  parallel_for(pool, g.planes, plane_grain(g), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const float* in = x + p * plane_in;
      const float* grad = dy + p * plane_out;
      float* out = dx + p * plane_in;
      std::fill(out, out + plane_in, 0.f);
      for (int64_t oy = 0; oy < g.out_h; ++oy) {
        const int64_t r0 = win.row_first[oy], r1 = win.row_last[oy], y0 = oy * g.stride_h - g.pad_top;
        if (r0 >= r1) continue;
        const float* grad_row = grad + oy * g.out_w;
        // Windows [ox, ox + L) all inside the input: the column ranges are monotone, so the ends tell.
        auto interior = [&](int64_t ox, int64_t L) {
          return ox + L <= g.out_w && win.col_first[ox] == 0 && win.col_last[ox + L - 1] == kw;
        };
        for (int64_t ox = 0; ox < g.out_w;) {
          const int64_t x0 = ox * sw - g.pad_left;
          if (interior(ox, 8)) {
            max_windows<8>(in, W, y0 * W + x0, r0, r1, dh, kw, dw, sw, grad_row + ox, out);
            ox += 8;
            continue;
          }
          if (interior(ox, 4)) {
            max_windows<4>(in, W, y0 * W + x0, r0, r1, dh, kw, dw, sw, grad_row + ox, out);
            ox += 4;
            continue;
          }
          const int64_t c0 = win.col_first[ox], c1 = win.col_last[ox];
          if (c0 < c1) {
            float best = -std::numeric_limits<float>::infinity();
            int64_t arg = (y0 + r0 * dh) * W + x0 + c0 * dw;
            for (int64_t ky = r0; ky < r1; ++ky) {
              const int64_t row = (y0 + ky * dh) * W + x0;
              for (int64_t kx = c0; kx < c1; ++kx) take_if_better(in[row + kx * dw], row + kx * dw, best, arg);
            }
            out[arg] += grad_row[ox];
          }
          ++ox;
        }
      }
    }
  });
}

void avg_pool2d_backward(const PoolGeometry& g, const PoolWindows& win, const float* dy, float* dx,
                         ThreadPool* pool) {
  const int64_t W = g.in_w, plane_in = g.in_h * g.in_w, plane_out = g.out_h * g.out_w;
  parallel_for(pool, g.planes, plane_grain(g), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const float* grad = dy + p * plane_out;
      float* out = dx + p * plane_in;
      std::fill(out, out + plane_in, 0.f);
      for (int64_t oy = 0; oy < g.out_h; ++oy) {
        const int64_t r0 = win.row_first[oy], r1 = win.row_last[oy], y0 = oy * g.stride_h - g.pad_top;
        const float row_scale = win.inv_count_h[oy];
        for (int64_t ox = 0; ox < g.out_w; ++ox) {
          const int64_t c0 = win.col_first[ox], c1 = win.col_last[ox], x0 = ox * g.stride_w - g.pad_left;
          const float v = grad[oy * g.out_w + ox] * row_scale * win.inv_count_w[ox];
          for (int64_t ky = r0; ky < r1; ++ky) {
            float* row = out + (y0 + ky * g.dilation_h) * W + x0;
            for (int64_t kx = c0; kx < c1; ++kx) row[kx * g.dilation_w] += v;
          }
        }
      }
    }
  });
}

}  // namespace cpu
}  // namespace mnnpy
