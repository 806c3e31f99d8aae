// Bilinear demosaicing. Each inner pixel keeps its own colour; green at a red or blue site is the
// rounded mean of the 4 direct neighbours, the opposite colour the mean of the 4 diagonal ones;
// at a green site each other colour is the mean of its 2 neighbours (left/right or up/down).
// Gray sums those neighbour sums with 14-bit luma weights and rounds once, as OpenCV does.
#include "backend/cpu/cv_bayer.h"

#include <algorithm>
#include <cstring>

#include "mnnpy/thread_pool.h"

namespace mnnpy {
namespace cpu {
namespace cv_color {

namespace {

constexpr int kBlue = 0, kGreen = 1, kRed = 2;
constexpr int kShift = 14;
constexpr int kLuma[3] = {1868, 9617, 4899};  // blue, green, red

// Output row `y` (1 <= y <= height - 2), inner columns 1 .. width - 2.
void inner_row(const BayerJob& job, int64_t y, uint8_t* out) {
  const int64_t w = job.width;
  const uint8_t* up = job.src + (y - 1) * w;
  const uint8_t* mid = up + w;
  const uint8_t* down = mid + w;
  const int D = job.dst_channels;
  const int* colours = job.pattern[y & 1];
  const int* colours_above = job.pattern[(y + 1) & 1];
  for (int64_t x = 1; x < w - 1; ++x) {
    const int centre = colours[x & 1];
    const int cross = up[x] + down[x] + mid[x - 1] + mid[x + 1];
    uint8_t* p = out + x * D;
    if (centre == kGreen) {
      const int across = colours[(x + 1) & 1], vertical = colours_above[x & 1];
      const int horizontal_sum = mid[x - 1] + mid[x + 1], vertical_sum = up[x] + down[x];
      if (D == 1) {
        const int v = horizontal_sum * kLuma[across] + vertical_sum * kLuma[vertical] + mid[x] * 2 * kLuma[kGreen];
        p[0] = (uint8_t)((v + (1 << kShift)) >> (kShift + 1));
        continue;
      }
      const int a = job.blue == 0 ? across : 2 - across, v = job.blue == 0 ? vertical : 2 - vertical;
      p[a] = (uint8_t)((horizontal_sum + 1) >> 1);
      p[v] = (uint8_t)((vertical_sum + 1) >> 1);
      p[1] = mid[x];
    } else {
      const int diagonal = up[x - 1] + up[x + 1] + down[x - 1] + down[x + 1];
      const int opposite = 2 - centre;
      if (D == 1) {
        const int v = diagonal * kLuma[opposite] + cross * kLuma[kGreen] + mid[x] * 4 * kLuma[centre];
        p[0] = (uint8_t)((v + (1 << (kShift + 1))) >> (kShift + 2));
        continue;
      }
      const int c = job.blue == 0 ? centre : 2 - centre, o = job.blue == 0 ? opposite : 2 - opposite;
      p[c] = mid[x];
      p[1] = (uint8_t)((cross + 2) >> 2);
      p[o] = (uint8_t)((diagonal + 2) >> 2);
    }
    if (D == 4) p[3] = 255;
  }
  // The first and last columns repeat their neighbours.
  std::memcpy(out, out + D, D);
  std::memcpy(out + (w - 1) * D, out + (w - 2) * D, D);
}

}  // namespace

void run_bayer(const BayerJob& job, ThreadPool* pool) {
  const int64_t h = job.height, w = job.width, D = job.dst_channels;
  const size_t row = (size_t)(w * D);
  if (h <= 2 || w <= 2) {
    // Too small for an inner pixel: black, as OpenCV leaves it (alpha opaque from 3 rows on).
    std::memset(job.dst, 0, row * h);
    if (D == 4 && h > 2) {
      for (int64_t i = 0; i < h * w; ++i) job.dst[i * 4 + 3] = 255;
    }
    return;
  }
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 16) / w);
  parallel_for(pool, h - 2, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) inner_row(job, r + 1, job.dst + (r + 1) * row);
  });
  // The first and last rows repeat their neighbours.
  std::memcpy(job.dst, job.dst + row, row);
  std::memcpy(job.dst + (h - 1) * row, job.dst + (h - 2) * row, row);
}

}  // namespace cv_color
}  // namespace cpu
}  // namespace mnnpy
