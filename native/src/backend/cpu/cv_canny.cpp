// Canny edge detection (see cv_canny.h). Plain loops the compiler vectorizes: the Sobel passes
// and the magnitudes run over whole rows; suppression runs on rows in parallel, hysteresis once
// over the candidates.
#include "backend/cpu/cv_canny.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "mnnpy/thread_pool.h"

namespace mnnpy {
namespace cpu {
namespace cv_canny {

namespace {

// The Sobel smoothing and first-derivative kernels of each aperture (binomial coefficients).
void sobel_kernels(int aperture, std::vector<int>* smooth, std::vector<int>* deriv) {
  if (aperture == 3) {
    *smooth = {1, 2, 1};
    *deriv = {-1, 0, 1};
  } else if (aperture == 5) {
    *smooth = {1, 4, 6, 4, 1};
    *deriv = {-1, -2, 0, 2, 1};
  } else {
    *smooth = {1, 6, 15, 20, 15, 6, 1};
    *deriv = {-1, -4, -5, 0, 5, 4, 1};
  }
}

inline int16_t saturate16(int v) { return (int16_t)std::min(32767, std::max(-32768, v)); }

// Candidate states of the suppression map.
constexpr uint8_t kWeak = 0, kNone = 1, kStrong = 2;
// tan(22.5 degrees) in 15-bit fixed point, the suppression's direction test.
constexpr int64_t kTan22 = 13573;

}  // namespace

void canny(const uint8_t* src, int64_t rows, int64_t cols, int channels, double low_threshold,
           double high_threshold, int aperture, bool l2_gradient, uint8_t* edges, ThreadPool* pool) {
  std::vector<int> smooth, deriv;
  sobel_kernels(aperture, &smooth, &deriv);
  const int radius = aperture / 2;
  const int64_t row_len = cols * channels;
  if (l2_gradient) {
    low_threshold = std::min(32767.0, low_threshold);
    high_threshold = std::min(32767.0, high_threshold);
    if (low_threshold > 0) low_threshold *= low_threshold;
    if (high_threshold > 0) high_threshold *= high_threshold;
  }
  const int64_t low = (int64_t)std::floor(low_threshold), high = (int64_t)std::floor(high_threshold);

  // Per pixel: the derivatives of the channel with the largest magnitude, and that magnitude.
  // Magnitude rows carry one zero on each side, and rows of zeros above and below the image.
  std::vector<int16_t> dx((size_t)(rows * cols)), dy((size_t)(rows * cols));
  const int64_t mag_stride = cols + 2;
  std::vector<int64_t> mag((size_t)((rows + 2) * mag_stride), 0);
  parallel_for(pool, rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, cols)), [&](int64_t r0, int64_t r1) {
    std::vector<int> vs((size_t)row_len), vd((size_t)row_len);
    std::vector<int16_t> gx((size_t)row_len), gy((size_t)row_len);
    for (int64_t i = r0; i < r1; ++i) {
      std::fill(vs.begin(), vs.end(), 0);
      std::fill(vd.begin(), vd.end(), 0);
      for (int k = 0; k < aperture; ++k) {
        const int64_t y = std::min(rows - 1, std::max<int64_t>(0, i + k - radius));
        const uint8_t* line = src + y * row_len;
        const int s = smooth[k], d = deriv[k];
        for (int64_t e = 0; e < row_len; ++e) {
          vs[e] += s * line[e];
          vd[e] += d * line[e];
        }
      }
      for (int64_t j = 0; j < cols; ++j) {
        for (int c = 0; c < channels; ++c) {
          int sx = 0, sy = 0;
          for (int k = 0; k < aperture; ++k) {
            const int64_t x = std::min(cols - 1, std::max<int64_t>(0, j + k - radius));
            sx += deriv[k] * vs[x * channels + c];
            sy += smooth[k] * vd[x * channels + c];
          }
          gx[j * channels + c] = saturate16(sx);
          gy[j * channels + c] = saturate16(sy);
        }
      }
      int64_t* m = mag.data() + (i + 1) * mag_stride + 1;
      for (int64_t j = 0; j < cols; ++j) {
        int best = 0;
        int64_t best_mag = -1;
        for (int c = 0; c < channels; ++c) {
          const int64_t a = gx[j * channels + c], b = gy[j * channels + c];
          const int64_t value = l2_gradient ? a * a + b * b : std::abs(a) + std::abs(b);
          if (value > best_mag) {
            best_mag = value;
            best = c;
          }
        }
        dx[i * cols + j] = gx[j * channels + best];
        dy[i * cols + j] = gy[j * channels + best];
        m[j] = best_mag;
      }
    }
  });

  // Non-maximum suppression: a pixel above the low threshold stays when it is a maximum across
  // the edge (the neighbour before it must be smaller, the one after not larger, except along
  // diagonals where both must be smaller).
  std::vector<uint8_t> state((size_t)(rows * cols), kNone);
  parallel_for(pool, rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, cols)), [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      const int64_t* prev = mag.data() + i * mag_stride + 1;
      const int64_t* here = prev + mag_stride;
      const int64_t* next = here + mag_stride;
      for (int64_t j = 0; j < cols; ++j) {
        const int64_t m = here[j];
        if (m <= low) continue;
        const int a = dx[i * cols + j], b = dy[i * cols + j];
        const int64_t xs = std::abs(a), ys = std::abs(b);
        const int64_t tg22x = xs * kTan22, y = ys << 15;
        bool keep;
        if (y < tg22x) {
          keep = m > here[j - 1] && m >= here[j + 1];
        } else {
          const int64_t tg67x = tg22x + (xs << 16);
          if (y > tg67x) {
            keep = m > prev[j] && m >= next[j];
          } else {
            const int s = (a ^ b) < 0 ? -1 : 1;
            keep = m > prev[j - s] && m > next[j + s];
          }
        }
        if (keep) state[i * cols + j] = m > high ? kStrong : kWeak;
      }
    }
  });

  // Hysteresis: weak candidates 8-connected to a strong one become edges.
  std::vector<int64_t> stack;
  for (int64_t p = 0; p < rows * cols; ++p)
    if (state[p] == kStrong) stack.push_back(p);
  while (!stack.empty()) {
    const int64_t p = stack.back();
    stack.pop_back();
    const int64_t i = p / cols, j = p % cols;
    for (int64_t di = -1; di <= 1; ++di) {
      const int64_t y = i + di;
      if (y < 0 || y >= rows) continue;
      for (int64_t dj = -1; dj <= 1; ++dj) {
        const int64_t x = j + dj;
        if (x < 0 || x >= cols) continue;
        uint8_t& s = state[y * cols + x];
        if (s == kWeak) {
          s = kStrong;
          stack.push_back(y * cols + x);
        }
      }
    }
  }
  for (int64_t p = 0; p < rows * cols; ++p) edges[p] = state[p] == kStrong ? 255 : 0;
}

}  // namespace cv_canny
}  // namespace cpu
}  // namespace mnnpy
