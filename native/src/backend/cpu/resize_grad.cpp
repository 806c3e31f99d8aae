// Resize backward: per plane, the gradient rows are first spread over the input columns (into a
// [rows.out, cols.in] buffer), then those rows are spread over the input rows with contiguous
// row updates. Planes are independent, so threads split them and sums stay deterministic.
#include "backend/cpu/resize_grad.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "mnnpy/thread_pool.h"

namespace mnnpy {
namespace cpu {

void resize_grad(int64_t planes, const ResizeAxis& rows, const ResizeAxis& cols, const float* g, float* dx,
                 ThreadPool* pool) {
  const int64_t ho = rows.out, wo = cols.out, hi = rows.in, wi = cols.in;
  const int64_t per_plane = ho * wo * cols.taps + ho * wi * rows.taps;
  parallel_for(pool, planes, std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(1, per_plane)),
               [&](int64_t p0, int64_t p1) {
    std::vector<float> spread((size_t)(ho * wi));
    for (int64_t p = p0; p < p1; ++p) {
      const float* gp = g + p * ho * wo;
      float* out = dx + p * hi * wi;
      std::fill(spread.begin(), spread.end(), 0.f);
      for (int64_t r = 0; r < ho; ++r) {
        const float* grow = gp + r * wo;
        float* srow = spread.data() + r * wi;
        for (int t = 0; t < cols.taps; ++t) {
          const int32_t* idx = cols.index.data() + (size_t)t * wo;
          const float* w = cols.weight.data() + (size_t)t * wo;
          for (int64_t c = 0; c < wo; ++c) srow[idx[c]] += w[c] * grow[c];
        }
      }
      std::memset(out, 0, (size_t)(hi * wi) * sizeof(float));
      for (int t = 0; t < rows.taps; ++t) {
        for (int64_t r = 0; r < ho; ++r) {
          const size_t k = (size_t)t * ho + r;
          const float w = rows.weight[k];
          if (w == 0.f) continue;
          float* orow = out + (int64_t)rows.index[k] * wi;
          const float* srow = spread.data() + r * wi;
          for (int64_t c = 0; c < wi; ++c) orow[c] += w * srow[c];
        }
      }
    }
  });
}

}  // namespace cpu
}  // namespace mnnpy
