// copyMakeBorder: each output row is its source row copied whole into the middle (a memcpy),
// with the few border pixels on either side copied from their extrapolated source columns.
#include "backend/cpu/cv_border.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "mnnpy/thread_pool.h"

namespace mnnpy {
namespace cpu {
namespace cv_geometry {

int64_t border_source(int64_t p, int64_t length, Border border) {
  if (p >= 0 && p < length) return p;
  switch (border) {
    case Border::Constant: return -1;
    case Border::Replicate: return p < 0 ? 0 : length - 1;
    case Border::Wrap:
      p %= length;
      return p < 0 ? p + length : p;
    case Border::Reflect:
    case Border::Reflect101: {
      if (length == 1) return 0;
      const int64_t skip_edge = border == Border::Reflect101 ? 1 : 0;
      // Mirrored back and forth until inside: the pattern repeats every 2 * length - 2 * skip_edge.
      const int64_t period = 2 * length - 2 * skip_edge;
      p %= period;
      if (p < 0) p += period;
      if (p >= length) p = period - p - 1 + skip_edge;
      return p;
    }
  }
  return -1;
}

BorderPlan::BorderPlan(int64_t in_h, int64_t in_w, int64_t channels, size_t element_size, int64_t top,
                       int64_t bottom, int64_t left, int64_t right, Border border, std::vector<uint8_t> fill)
    : in_h_(in_h), in_w_(in_w), out_h_(in_h + top + bottom), out_w_(in_w + left + right), top_(top), left_(left),
      right_(right), pixel_((size_t)channels * element_size) {
  rows_.resize(out_h_);
  for (int64_t r = 0; r < out_h_; ++r) rows_[r] = (int32_t)border_source(r - top, in_h, border);
  left_columns_.resize(left);
  for (int64_t j = 0; j < left; ++j) left_columns_[j] = (int32_t)border_source(j - left, in_w, border);
  right_columns_.resize(right);
  for (int64_t j = 0; j < right; ++j) right_columns_[j] = (int32_t)border_source(in_w + j, in_w, border);
  if (border == Border::Constant) {
    constant_row_.resize((size_t)out_w_ * pixel_);
    for (int64_t j = 0; j < out_w_; ++j) std::memcpy(constant_row_.data() + j * pixel_, fill.data(), pixel_);
  }
}

void BorderPlan::run(const void* src, void* dst, ThreadPool* pool) const {
  const size_t in_row = (size_t)in_w_ * pixel_, out_row = (size_t)out_w_ * pixel_;
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 17) / (int64_t)std::max<size_t>(1, out_row));
  parallel_for(pool, out_h_, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      uint8_t* out = (uint8_t*)dst + r * out_row;
      if (rows_[r] < 0) {
        std::memcpy(out, constant_row_.data(), out_row);
        continue;
      }
      const uint8_t* in = (const uint8_t*)src + rows_[r] * in_row;
      std::memcpy(out + left_ * pixel_, in, in_row);
      // Border pixels are few and small: copies of a size known at compile time, not memcpy calls.
      auto border_pixels = [&](const std::vector<int32_t>& columns, int64_t first) {
        auto copy = [&](auto pixel_size) {
          constexpr size_t P = decltype(pixel_size)::value;
          const size_t bytes = P ? P : pixel_;
          for (size_t j = 0; j < columns.size(); ++j) {
            const int64_t o = first + (int64_t)j;
            const uint8_t* from = columns[j] < 0 ? constant_row_.data() + o * bytes : in + columns[j] * bytes;
            std::memcpy(out + o * bytes, from, P ? P : bytes);
          }
        };
        switch (pixel_) {
          case 1: return copy(std::integral_constant<size_t, 1>());
          case 2: return copy(std::integral_constant<size_t, 2>());
          case 3: return copy(std::integral_constant<size_t, 3>());
          case 4: return copy(std::integral_constant<size_t, 4>());
          case 6: return copy(std::integral_constant<size_t, 6>());
          case 8: return copy(std::integral_constant<size_t, 8>());
          case 12: return copy(std::integral_constant<size_t, 12>());
          case 16: return copy(std::integral_constant<size_t, 16>());
          default: return copy(std::integral_constant<size_t, 0>());
        }
      };
      border_pixels(left_columns_, 0);
      border_pixels(right_columns_, left_ + in_w_);
    }
  });
}

}  // namespace cv_geometry
}  // namespace cpu
}  // namespace mnnpy
