// Convolution gradients (see conv_backward.h): block planning, im2col / col2im over blocks of
// output pixels and the GEMMs; the Winograd weight gradient of 3x3 stride-1 layers; the direct
// depthwise loops. The products run on the packed, threaded GEMM; the gathers and scatters around
// them are split over (image, channel) planes.
#include "backend/cpu/conv_backward.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/cpu/gemm.h"
#include "backend/cpu/thread_buffers.h"
#include "mnnpy/thread_pool.h"

namespace mnnpy {
namespace cpu {

namespace {

// Columns of one block: about 2 MB of im2col data, which stays in cache between im2col and the
// product; at least 256 pixels, so that the products stay deep (weight) or wide (input gradient).
constexpr int64_t kColumnBudgetFloats = int64_t(1) << 19;
constexpr int64_t kMinBlockPixels = 256;

// A block of output pixels: pixels [j0, j0 + len) of each of images [n0, n0 + images).
struct PixelBlock {
  int64_t n0 = 0, images = 1, j0 = 0, len = 0;
  int64_t columns() const { return images * len; }
};

std::vector<PixelBlock> plan_blocks(const ConvShape& s) {
  const int64_t hw = s.out_h * s.out_w, target = std::max(kMinBlockPixels, kColumnBudgetFloats / s.depth());
  std::vector<PixelBlock> blocks;
  if (hw >= target) {
    const int64_t per_image = ceil_div(hw, target), len = ceil_div(hw, per_image);
    for (int64_t n = 0; n < s.batch; ++n)
      for (int64_t j0 = 0; j0 < hw; j0 += len) blocks.push_back(PixelBlock{n, 1, j0, std::min(len, hw - j0)});
  } else {
    const int64_t want = std::min(s.batch, std::max<int64_t>(1, target / hw));
    const int64_t n_blocks = ceil_div(s.batch, want), per_block = ceil_div(s.batch, n_blocks);
    for (int64_t n0 = 0; n0 < s.batch; n0 += per_block)
      blocks.push_back(PixelBlock{n0, std::min(per_block, s.batch - n0), 0, hw});
  }
  return blocks;
}

int64_t max_block_columns(const ConvShape& s) {
  int64_t m = 0;
  for (const PixelBlock& b : plan_blocks(s)) m = std::max(m, b.columns());
  return m;
}

// Output columns ox whose input column ox * stride + offset lies in [0, size).
inline void valid_range(int64_t offset, int64_t stride, int64_t size, int64_t& lo, int64_t& hi) {
  lo = offset >= 0 ? 0 : ceil_div(-offset, stride);
  hi = size - offset > 0 ? ceil_div(size - offset, stride) : 0;
}

// Calls fn(oy, ox0, ox1, column) for each run of output pixels of [j0, j0 + len) within one row.
template <class Fn> inline void for_each_row_run(int64_t wo, int64_t j0, int64_t len, Fn&& fn) {
  for (int64_t j = j0; j < j0 + len;) {
    const int64_t oy = j / wo, ox0 = j % wo, ox1 = std::min(wo, ox0 + (j0 + len - j));
    fn(oy, ox0, ox1, j - j0);
    j += ox1 - ox0;
  }
}

// Walks the im2col rows (c, ky, kx) of input channel c for the block's pixels: per run of output
// pixels [ox0, ox1) of one output row, fn(row, col, ox0, ox1, iy, dx, lo, hi) where row is the
// im2col row index, col the run's first column in the block, iy the input row (outside [0, H)
// when the run reads padding) and [lo, hi) the output columns whose input column lies inside.
template <class Fn> void for_each_tap_run(const ConvShape& s, int64_t c, const PixelBlock& b, Fn&& fn) {
  for (int64_t ky = 0; ky < s.kernel_h; ++ky) {
    const int64_t dy = ky * s.dilation_h - s.pad_top;
    for (int64_t kx = 0; kx < s.kernel_w; ++kx) {
      const int64_t dx = kx * s.dilation_w - s.pad_left;
      int64_t valid_lo, valid_hi;
      valid_range(dx, s.stride_w, s.in_w, valid_lo, valid_hi);
      const int64_t row = (c * s.kernel_h + ky) * s.kernel_w + kx;
      for_each_row_run(s.out_w, b.j0, b.len, [&](int64_t oy, int64_t ox0, int64_t ox1, int64_t col) {
        const int64_t lo = std::min(std::max(ox0, valid_lo), ox1), hi = std::max(std::min(ox1, valid_hi), lo);
        fn(row, col, ox0, ox1, oy * s.stride_h + dy, dx, lo, hi);
      });
    }
  }
}

// Rows (c, ky, kx) of the im2col matrix of one image plane c of the group, for the block's pixels,
// into cols (row stride ld) at column offset col0.
void im2col_plane(const ConvShape& s, const float* plane, int64_t c, const PixelBlock& b, float* cols, int64_t ld,
                  int64_t col0) {
  const int64_t H = s.in_h, W = s.in_w, sw = s.stride_w;
  for_each_tap_run(s, c, b, [&](int64_t row, int64_t col, int64_t ox0, int64_t ox1, int64_t iy, int64_t dx,
                                int64_t lo, int64_t hi) {
    float* dst = cols + row * ld + col0 + col - ox0;
    if (iy < 0 || iy >= H) {
      std::fill(dst + ox0, dst + ox1, 0.f);
      return;
    }
    std::fill(dst + ox0, dst + lo, 0.f);
    const float* src = plane + iy * W + dx;
    if (sw == 1) std::memcpy(dst + lo, src + lo, sizeof(float) * (hi - lo));
    else if (sw == 2)  // a constant stride the compiler can vectorize
      for (int64_t ox = lo; ox < hi; ++ox) dst[ox] = src[ox * 2];
    else
      for (int64_t ox = lo; ox < hi; ++ox) dst[ox] = src[ox * sw];
    std::fill(dst + hi, dst + ox1, 0.f);
  });
}

// The reverse of im2col_plane: adds the rows of input channel c back into its plane.
void col2im_plane(const ConvShape& s, const float* cols, int64_t ld, int64_t col0, int64_t c, const PixelBlock& b,
                  float* plane) {
  const int64_t H = s.in_h, W = s.in_w, sw = s.stride_w;
  for_each_tap_run(s, c, b, [&](int64_t row, int64_t col, int64_t ox0, int64_t, int64_t iy, int64_t dx,
                                int64_t lo, int64_t hi) {
    if (iy < 0 || iy >= H) return;
    const float* __restrict src = cols + row * ld + col0 + col - ox0;
    float* __restrict dst = plane + iy * W + dx;
    if (sw == 1)
      for (int64_t ox = lo; ox < hi; ++ox) dst[ox] += src[ox];
    else
      for (int64_t ox = lo; ox < hi; ++ox) dst[ox * sw] += src[ox];
  });
}

// The block's output gradient of group g as a [Cout_g x B] matrix: in place when the block is part
// of one image, else gathered image after image into buf. Returns the matrix and its row stride.
const float* block_gradient(const ConvShape& s, const float* dy, int64_t g, const PixelBlock& b, float* buf,
                            int64_t& ld, ThreadPool* pool) {
  const int64_t hw = s.out_h * s.out_w, rows = s.out_c_per_group();
  if (b.images == 1) {
    ld = hw;
    return dy + (b.n0 * s.out_c + g * rows) * hw + b.j0;
  }
  ld = b.columns();
  parallel_for(pool, b.images * rows, 16, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t i = t / rows, o = t % rows;
      std::memcpy(buf + o * ld + i * b.len, dy + ((b.n0 + i) * s.out_c + g * rows + o) * hw + b.j0,
                  sizeof(float) * b.len);
    }
  });
  return buf;
}

void depthwise_backward_input(const ConvShape& s, const float* dy, const float* w, const float* bias, float* dx,
                              ThreadPool* pool) {
  const int64_t C = s.in_c, H = s.in_h, W = s.in_w, hw_in = s.in_h * s.in_w,
                hw_out = s.out_h * s.out_w, taps = s.kernel_h * s.kernel_w, sw = s.stride_w;
  parallel_for(pool, s.batch * C, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t c = p % C;
      float* plane = dx + p * hw_in;
      std::fill(plane, plane + hw_in, bias ? bias[c] : 0.f);
      const float* grad = dy + p * hw_out;
      for (int64_t ky = 0; ky < s.kernel_h; ++ky) {
        const int64_t dyo = ky * s.dilation_h - s.pad_top;
        for (int64_t kx = 0; kx < s.kernel_w; ++kx) {
          const int64_t dxo = kx * s.dilation_w - s.pad_left;
          const float wv = w[c * taps + ky * s.kernel_w + kx];
          int64_t lo, hi;
          valid_range(dxo, sw, W, lo, hi);
          hi = std::min(hi, s.out_w);
          for (int64_t oy = 0; oy < s.out_h; ++oy) {
            const int64_t iy = oy * s.stride_h + dyo;
            if (iy < 0 || iy >= H) continue;
            float* __restrict dst = plane + iy * W + dxo;
            const float* __restrict src = grad + oy * s.out_w;
            if (sw == 1)
              for (int64_t ox = lo; ox < hi; ++ox) dst[ox] += wv * src[ox];
            else
              for (int64_t ox = lo; ox < hi; ++ox) dst[ox * sw] += wv * src[ox];
          }
        }
      }
    }
  });
}

void depthwise_backward_weight(const ConvShape& s, const float* x, const float* dy, float* dw, ThreadPool* pool) {
  const int64_t C = s.in_c, H = s.in_h, W = s.in_w, hw_in = H * W, hw_out = s.out_h * s.out_w,
                taps = s.kernel_h * s.kernel_w, sw = s.stride_w;
  parallel_for(pool, C, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      for (int64_t ky = 0; ky < s.kernel_h; ++ky) {
        const int64_t dyo = ky * s.dilation_h - s.pad_top;
        for (int64_t kx = 0; kx < s.kernel_w; ++kx) {
          const int64_t dxo = kx * s.dilation_w - s.pad_left;
          int64_t lo, hi;
          valid_range(dxo, sw, W, lo, hi);
          hi = std::min(hi, s.out_w);
          // Four partial sums: independent chains the compiler can keep in flight.
          double total = 0;
          for (int64_t n = 0; n < s.batch; ++n) {
            const float* plane = x + (n * C + c) * hw_in;
            const float* grad = dy + (n * C + c) * hw_out;
            float acc[4] = {0.f, 0.f, 0.f, 0.f};
            for (int64_t oy = 0; oy < s.out_h; ++oy) {
              const int64_t iy = oy * s.stride_h + dyo;
              if (iy < 0 || iy >= H) continue;
              const float* src = plane + iy * W + dxo;
              const float* g = grad + oy * s.out_w;
              int64_t ox = lo;
              for (; ox + 4 <= hi; ox += 4)
                for (int q = 0; q < 4; ++q) acc[q] += g[ox + q] * src[(ox + q) * sw];
              for (; ox < hi; ++ox) acc[0] += g[ox] * src[ox * sw];
            }
            total += (double)((acc[0] + acc[1]) + (acc[2] + acc[3]));
          }
          dw[c * taps + ky * s.kernel_w + kx] = (float)total;
        }
      }
    }
  });
}

// ---- Winograd weight gradient of 3x3 stride-1 layers, F(3x3, 2x2): each 2x2 tile of dy and the
// 4x4 input patch under it give the 3x3 correlation as A^T [(G g G^T) . (B^T d B)] A, 16 products
// for 36. The products of all tiles are summed in the transformed domain, one GEMM per position:
// M[xi][o][c] += U[xi][o][t] V[xi][c][t] over tiles t, then dW[o][c] = A^T M[.][o][c] A.
//   B^T = [1 0 -1 0; 0 .5 .5 0; 0 -.5 .5 0; 0 -1 0 1], G = [1 0; 1 1; 1 -1; 0 1],
//   A^T = [1 1 1 0; 0 1 -1 0; 0 1 1 1]
constexpr int64_t kWinogradTileBudgetFloats = int64_t(1) << 20;  // transformed tiles of one chunk: 4 MB

bool use_winograd_filter(const ConvShape& s) {
  const int64_t tiles = ceil_div(s.out_h, 2) * ceil_div(s.out_w, 2);
  return s.kernel_h == 3 && s.kernel_w == 3 && s.stride_h == 1 && s.stride_w == 1 && s.dilation_h == 1 &&
         s.dilation_w == 1 && s.group == 1 && s.in_c >= 8 && s.out_c >= 8 && tiles >= 16;
}

int64_t winograd_filter_chunk(const ConvShape& s) {
  const int64_t total = s.batch * ceil_div(s.out_h, 2) * ceil_div(s.out_w, 2);
  return std::min(total, std::max<int64_t>(64, kWinogradTileBudgetFloats / (16 * (s.in_c + s.out_c))));
}

// Floats between the matrices of two transformed positions: one cache line more than the matrix, so
// that the sixteen streams a transform writes fall into different cache sets.
int64_t position_stride(int64_t channels, int64_t chunk) { return channels * chunk + 16; }

size_t winograd_filter_scratch_floats(const ConvShape& s) {
  const int64_t chunk = winograd_filter_chunk(s);
  return (size_t)(16 * (position_stride(s.in_c, chunk) + position_stride(s.out_c, chunk)) + 16 * s.in_c * s.out_c);
}

// 4x4 (or 2x2 for dy) values of a plane at (y0, x0), zeros outside [0, h) x [0, w).
template <int N> inline void load_patch(const float* plane, int64_t h, int64_t w, int64_t y0, int64_t x0, float* d) {
  if (y0 >= 0 && x0 >= 0 && y0 + N <= h && x0 + N <= w) {
    for (int a = 0; a < N; ++a)
      for (int b = 0; b < N; ++b) d[a * N + b] = plane[(y0 + a) * w + x0 + b];
    return;
  }
  for (int a = 0; a < N; ++a)
    for (int b = 0; b < N; ++b) {
      const int64_t y = y0 + a, x = x0 + b;
      d[a * N + b] = (y >= 0 && y < h && x >= 0 && x < w) ? plane[y * w + x] : 0.f;
    }
}

// B^T d B for a 4x4 patch.
inline void transform_input_patch(const float* d, float* v) {
  float t[16];
  for (int b = 0; b < 4; ++b) {
    const float d0 = d[b], d1 = d[4 + b], d2 = d[8 + b], d3 = d[12 + b];
    t[b] = d0 - d2, t[4 + b] = 0.5f * (d1 + d2), t[8 + b] = 0.5f * (d2 - d1), t[12 + b] = d3 - d1;
  }
  for (int a = 0; a < 4; ++a) {
    const float* r = t + 4 * a;
    v[4 * a] = r[0] - r[2], v[4 * a + 1] = 0.5f * (r[1] + r[2]), v[4 * a + 2] = 0.5f * (r[2] - r[1]),
    v[4 * a + 3] = r[3] - r[1];
  }
}

// G g G^T for a 2x2 tile.
inline void transform_grad_tile(const float* g, float* u) {
  float t[8];  // 4 rows x 2 columns
  for (int b = 0; b < 2; ++b) {
    const float g0 = g[b], g1 = g[2 + b];
    t[b] = g0, t[2 + b] = g0 + g1, t[4 + b] = g0 - g1, t[6 + b] = g1;
  }
  for (int a = 0; a < 4; ++a) {
    const float r0 = t[2 * a], r1 = t[2 * a + 1];
    u[4 * a] = r0, u[4 * a + 1] = r0 + r1, u[4 * a + 2] = r0 - r1, u[4 * a + 3] = r1;
  }
}

void winograd_backward_weight(const ConvShape& s, const float* x, const float* dy, float* dw, float* scratch,
                              ThreadPool* pool) {
  const int64_t C = s.in_c, O = s.out_c, H = s.in_h, W = s.in_w, Ho = s.out_h, Wo = s.out_w;
  const int64_t tiles_w = ceil_div(Wo, 2), per_image = ceil_div(Ho, 2) * tiles_w, total = s.batch * per_image;
  const int64_t chunk = winograd_filter_chunk(s);
  const int64_t pv = position_stride(C, chunk), pu = position_stride(O, chunk);
  float* V = scratch;      // [16][C][chunk], positions pv apart
  float* U = V + 16 * pv;  // [16][O][chunk], positions pu apart
  float* M = U + 16 * pu;  // [16][O][C]
  for (int64_t t0 = 0; t0 < total; t0 += chunk) {
    const int64_t tb = std::min(chunk, total - t0);
    parallel_for(pool, C + O, 1, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const bool is_input = i < C;
        const int64_t ch = is_input ? i : i - C;
        float* dst = is_input ? V + ch * chunk : U + ch * chunk;
        const int64_t stride = is_input ? pv : pu;
        for (int64_t t = t0; t < t0 + tb; ++t) {
          const int64_t n = t / per_image, r = t % per_image, ty = r / tiles_w, tx = r % tiles_w;
          float patch[16], out[16];
          if (is_input) {
            load_patch<4>(x + (n * C + ch) * H * W, H, W, 2 * ty - s.pad_top, 2 * tx - s.pad_left, patch);
            transform_input_patch(patch, out);
          } else {
            load_patch<2>(dy + (n * O + ch) * Ho * Wo, Ho, Wo, 2 * ty, 2 * tx, patch);
            transform_grad_tile(patch, out);
          }
          for (int xi = 0; xi < 16; ++xi) dst[xi * stride + (t - t0)] = out[xi];
        }
      }
    });
    // Sixteen small products: one per task, each on one thread.
    parallel_for(pool, 16, 1, [&](int64_t x0, int64_t x1) {
      for (int64_t xi = x0; xi < x1; ++xi)
        gemm(DType::Float32, O, C, tb, U + xi * pu, chunk, false, V + xi * pv, chunk, true,
             M + xi * O * C, C, t0 > 0, nullptr);
    });
  }
  parallel_for(pool, O, 1, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o)
      for (int64_t c = 0; c < C; ++c) {
        float m[16], t[12];
        for (int xi = 0; xi < 16; ++xi) m[xi] = M[(xi * O + o) * C + c];
        for (int b = 0; b < 4; ++b) {  // A^T m: 3 rows x 4 columns
          t[b] = m[b] + m[4 + b] + m[8 + b], t[4 + b] = m[4 + b] - m[8 + b], t[8 + b] = m[4 + b] + m[8 + b] + m[12 + b];
        }
        float* out = dw + (o * C + c) * 9;
        for (int a = 0; a < 3; ++a) {
          const float* r = t + 4 * a;
          out[3 * a] = r[0] + r[1] + r[2], out[3 * a + 1] = r[1] - r[2], out[3 * a + 2] = r[1] + r[2] + r[3];
        }
      }
  });
}

bool use_depthwise(const ConvShape& s) { return s.is_depthwise() && s.group > 1; }

}  // namespace

size_t conv_backward_scratch_floats(const ConvShape& s) {
  if (use_depthwise(s) || s.batch == 0 || s.out_h * s.out_w == 0) return 0;
  const int64_t b = max_block_columns(s);
  const size_t columns = (size_t)((s.depth() + s.out_c_per_group()) * b);
  return use_winograd_filter(s) ? std::max(columns, winograd_filter_scratch_floats(s)) : columns;
}

void conv2d_backward_input(const ConvShape& s, const float* dy, const float* w, const float* bias, float* dx,
                           float* scratch, ThreadPool* pool) {
  const int64_t C = s.in_c, Cg = s.in_c_per_group(), hw_in = s.in_h * s.in_w, K = s.depth();
  if (s.batch == 0 || C == 0 || hw_in == 0) return;
  if (use_depthwise(s)) {
    depthwise_backward_input(s, dy, w, bias, dx, pool);
    return;
  }
  parallel_for(pool, s.batch * C, 4, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) std::fill(dx + p * hw_in, dx + (p + 1) * hw_in, bias ? bias[p % C] : 0.f);
  });
  if (s.out_h * s.out_w == 0) return;
  const std::vector<PixelBlock> blocks = plan_blocks(s);
  const int64_t max_cols = max_block_columns(s), rows = s.out_c_per_group();
  float* cols = scratch;
  float* gathered = scratch + K * max_cols;
  for (const PixelBlock& b : blocks) {
    const int64_t B = b.columns();
    for (int64_t g = 0; g < s.group; ++g) {
      int64_t ldg = 0;
      const float* grad = block_gradient(s, dy, g, b, gathered, ldg, pool);
      const float* wg = w + g * rows * K;
      if (s.is_pointwise() && b.images == 1) {
        // The column matrix is the input gradient itself.
        gemm(DType::Float32, K, B, rows, wg, K, true, grad, ldg, false, dx + (b.n0 * C + g * Cg) * hw_in + b.j0,
             hw_in, true, pool);
        continue;
      }
      gemm(DType::Float32, K, B, rows, wg, K, true, grad, ldg, false, cols, B, false, pool);
      parallel_for(pool, b.images * Cg, 1, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t i = t / Cg, c = t % Cg;
          col2im_plane(s, cols, B, i * b.len, c, b, dx + ((b.n0 + i) * C + g * Cg + c) * hw_in);
        }
      });
    }
  }
}

const char* conv_backward_weight_scheme(const ConvShape& s) {
  if (use_depthwise(s)) return "depthwise";
  return use_winograd_filter(s) ? "winograd_f3x3_2x2" : "im2col_gemm";
}

void conv2d_backward_weight(const ConvShape& s, const float* x, const float* dy, float* dw, float* scratch,
                            ThreadPool* pool) {
  const int64_t C = s.in_c, Cg = s.in_c_per_group(), hw_in = s.in_h * s.in_w, K = s.depth();
  const int64_t rows = s.out_c_per_group();
  if (s.batch == 0 || s.out_h * s.out_w == 0) {
    std::fill(dw, dw + s.out_c * K, 0.f);
    return;
  }
  if (use_depthwise(s)) {
    depthwise_backward_weight(s, x, dy, dw, pool);
    return;
  }
  if (use_winograd_filter(s)) {
    winograd_backward_weight(s, x, dy, dw, scratch, pool);
    return;
  }
  const std::vector<PixelBlock> blocks = plan_blocks(s);
  const int64_t max_cols = max_block_columns(s);
  float* cols = scratch;
  float* gathered = scratch + K * max_cols;
  for (size_t bi = 0; bi < blocks.size(); ++bi) {
    const PixelBlock& b = blocks[bi];
    const int64_t B = b.columns();
    for (int64_t g = 0; g < s.group; ++g) {
      int64_t ldg = 0;
      const float* grad = block_gradient(s, dy, g, b, gathered, ldg, pool);
      const float* columns = cols;
      int64_t ldc = B;
      if (s.is_pointwise() && b.images == 1) {
        columns = x + (b.n0 * C + g * Cg) * hw_in + b.j0;
        ldc = hw_in;
      } else {
        parallel_for(pool, b.images * Cg, 1, [&](int64_t t0, int64_t t1) {
          for (int64_t t = t0; t < t1; ++t) {
            const int64_t i = t / Cg, c = t % Cg;
            im2col_plane(s, x + ((b.n0 + i) * C + g * Cg + c) * hw_in, c, b, cols, B, i * b.len);
          }
        });
      }
      gemm(DType::Float32, rows, K, B, grad, ldg, false, columns, ldc, true, dw + g * rows * K, K, bi > 0, pool);
    }
  }
}

}  // namespace cpu
}  // namespace mnnpy
