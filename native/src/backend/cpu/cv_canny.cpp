// Canny edge detection (see cv_canny.h). Plain loops the compiler vectorizes: the Sobel passes
// and the magnitudes run over whole rows; suppression runs on rows in parallel, hysteresis once
// over the candidates.
#include "backend/cpu/cv_canny.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
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

struct CannyBuffers {
  std::vector<int16_t> dx, dy;
  std::vector<int32_t> mag;
  std::vector<uint8_t> state;
};

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
  // The working images are kept between calls (per calling thread): fresh pages for them cost
  // more than the whole detection (a 1080p image needs ~20 MB).
  thread_local CannyBuffers buffers;
  const int64_t mag_stride = cols + 2;
  buffers.dx.resize((size_t)(rows * cols));
  buffers.dy.resize((size_t)(rows * cols));
  buffers.mag.assign((size_t)((rows + 2) * mag_stride), 0);
  buffers.state.assign((size_t)(rows * cols), kNone);
  // Plain pointers: loops through the thread-local vectors would look the buffers up each time.
  int16_t* const dx = buffers.dx.data();
  int16_t* const dy = buffers.dy.data();
  int32_t* const mag = buffers.mag.data();
  uint8_t* const state = buffers.state.data();
  const int64_t pad = (int64_t)radius * channels;
  parallel_for(pool, rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, cols)), [&](int64_t r0, int64_t r1) {
    // Vertical sums with `radius` replicated pixels on each side, so that the horizontal pass
    // is a plain sum of shifted rows.
    std::vector<int32_t> vs((size_t)(row_len + 2 * pad)), vd((size_t)(row_len + 2 * pad));
    std::vector<int32_t> sx((size_t)row_len), sy((size_t)row_len);
    for (int64_t i = r0; i < r1; ++i) {
      int32_t* row_s = vs.data() + pad;
      int32_t* row_d = vd.data() + pad;
      std::fill(vs.begin(), vs.end(), 0);
      std::fill(vd.begin(), vd.end(), 0);
      for (int k = 0; k < aperture; ++k) {
        const int64_t y = std::min(rows - 1, std::max<int64_t>(0, i + k - radius));
        const uint8_t* line = src + y * row_len;
        const int32_t s = smooth[k], d = deriv[k];
        for (int64_t e = 0; e < row_len; ++e) {
          row_s[e] += s * line[e];
          row_d[e] += d * line[e];
        }
      }
      for (int64_t q = 1; q <= radius; ++q) {
        for (int c = 0; c < channels; ++c) {
          row_s[-q * channels + c] = row_s[c];
          row_d[-q * channels + c] = row_d[c];
          row_s[row_len - channels + q * channels + c] = row_s[row_len - channels + c];
          row_d[row_len - channels + q * channels + c] = row_d[row_len - channels + c];
        }
      }
      std::fill(sx.begin(), sx.end(), 0);
      std::fill(sy.begin(), sy.end(), 0);
      for (int k = 0; k < aperture; ++k) {
        const int32_t s = smooth[k], d = deriv[k];
        const int32_t* shifted_s = vs.data() + k * channels;
        const int32_t* shifted_d = vd.data() + k * channels;
        for (int64_t e = 0; e < row_len; ++e) {
          sx[e] += d * shifted_s[e];
          sy[e] += s * shifted_d[e];
        }
      }
      int32_t* m = mag + (i + 1) * mag_stride + 1;
      int16_t* dxi = dx + i * cols;
      int16_t* dyi = dy + i * cols;
      if (channels == 1) {
        for (int64_t j = 0; j < cols; ++j) {
          const int32_t a = saturate16(sx[j]), b = saturate16(sy[j]);
          dxi[j] = (int16_t)a;
          dyi[j] = (int16_t)b;
          m[j] = l2_gradient ? a * a + b * b : std::abs(a) + std::abs(b);
        }
        continue;
      }
      for (int64_t j = 0; j < cols; ++j) {
        int32_t best_a = 0, best_b = 0, best_mag = -1;
        for (int c = 0; c < channels; ++c) {
          const int32_t a = saturate16(sx[j * channels + c]), b = saturate16(sy[j * channels + c]);
          const int32_t value = l2_gradient ? a * a + b * b : std::abs(a) + std::abs(b);
          if (value > best_mag) {
            best_mag = value;
            best_a = a;
            best_b = b;
          }
        }
        dxi[j] = (int16_t)best_a;
        dyi[j] = (int16_t)best_b;
        m[j] = best_mag;
      }
    }
  });

  // Non-maximum suppression: a pixel above the low threshold stays when it is a maximum across
  // the edge (the neighbour before it must be smaller, the one after not larger, except along
  // diagonals where both must be smaller).
  parallel_for(pool, rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, cols)), [&](int64_t r0, int64_t r1) {
    // Locals, so that the compiler keeps them in registers (captured references may alias).
    const int64_t lo = low, hi = high, width = cols, stride = mag_stride;
    const int32_t* const magnitudes = mag;
    const int16_t* const gx = dx;
    const int16_t* const gy = dy;
    uint8_t* const marks = state;
    for (int64_t i = r0; i < r1; ++i) {
      const int32_t* prev = magnitudes + i * stride + 1;
      const int32_t* here = prev + stride;
      const int32_t* next = here + stride;
      for (int64_t j = 0; j < width; ++j) {
        const int32_t m = here[j];
        if (m <= lo) continue;
        const int a = gx[i * width + j], b = gy[i * width + j];
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
        if (keep) marks[i * width + j] = m > hi ? kStrong : kWeak;
      }
    }
  });

  // Hysteresis: weak candidates 8-connected to a strong one become edges.
  std::vector<int64_t> stack;
  const int64_t pixels = rows * cols;
  for (const uint8_t* at = state; (at = (const uint8_t*)std::memchr(at, kStrong, (size_t)(state + pixels - at)));
       ++at) {
    stack.push_back(at - state);
  }
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
