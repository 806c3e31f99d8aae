// flip, compiled per SIMD target by Highway and chosen at run time. A row is mirrored 16 bytes
// at a time: a byte shuffle reverses the order of the whole pixels one 16-byte load holds
// (5 pixels of 3 bytes, 4 of 4 ...); the spare bytes of each store are overwritten by the next.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/cv_flip.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/cv_flip.h"
#include "mnnpy/thread_pool.h"

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace cv_geometry {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// out pixel j = in pixel (width - 1 - j), for one row of `width` pixels of P bytes.
template <size_t P>
void mirror_row(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out, int64_t width) {
  int64_t j = 0;
#if HWY_TARGET != HWY_SCALAR
  if constexpr (P <= 16) {
    constexpr int64_t K = 16 / P;  // pixels per 16-byte load
    constexpr int64_t spare = 16 - K * P;
    const hn::Full128<uint8_t> d8;
    alignas(16) uint8_t reverse[16];
    for (int64_t b = 0; b < 16; ++b) reverse[b] = b < K * (int64_t)P ? (uint8_t)((K - 1 - b / P) * P + b % P) : 0;
    const auto shuffle = hn::Load(d8, reverse);
    // The load for pixels j.. ends `spare` bytes after pixel width - 1 - j: start where that stays
    // inside the row; the store's spare bytes must stay inside the row too.
    j = (spare + (int64_t)P - 1) / (int64_t)P;
    for (int64_t x = 0; x < j && x < width; ++x) std::memcpy(out + x * P, in + (width - 1 - x) * P, P);
    for (; j + K <= width && (j * (int64_t)P + 16) <= width * (int64_t)P; j += K) {
      const auto v = hn::LoadU(d8, in + (width - j - K) * (int64_t)P);
      hn::StoreU(hn::TableLookupBytes(v, shuffle), d8, out + j * (int64_t)P);
    }
  }
#endif
  for (; j < width; ++j) std::memcpy(out + j * P, in + (width - 1 - j) * P, P);
}

void MirrorRow(const uint8_t* in, uint8_t* out, int64_t width, size_t pixel) {
  switch (pixel) {
    case 1: return mirror_row<1>(in, out, width);
    case 2: return mirror_row<2>(in, out, width);
    case 3: return mirror_row<3>(in, out, width);
    case 4: return mirror_row<4>(in, out, width);
    case 6: return mirror_row<6>(in, out, width);
    case 8: return mirror_row<8>(in, out, width);
    case 12: return mirror_row<12>(in, out, width);
    case 16: return mirror_row<16>(in, out, width);
    default:
      for (int64_t j = 0; j < width; ++j) std::memcpy(out + j * pixel, in + (width - 1 - j) * pixel, pixel);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace cv_geometry
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
namespace cv_geometry {
HWY_EXPORT(MirrorRow);

void flip_image(const void* src, void* dst, int64_t height, int64_t width, size_t pixel_bytes, int flip_code,
                ThreadPool* pool) {
  const size_t row = (size_t)width * pixel_bytes;
  const bool rows_reversed = flip_code <= 0, columns_reversed = flip_code != 0;
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 17) / (int64_t)std::max<size_t>(1, row));
  parallel_for(pool, height, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const uint8_t* in = (const uint8_t*)src + (rows_reversed ? height - 1 - r : r) * row;
      uint8_t* out = (uint8_t*)dst + r * row;
      if (columns_reversed) {
        HWY_DYNAMIC_DISPATCH(MirrorRow)(in, out, width, pixel_bytes);
      } else {
        std::memcpy(out, in, row);
      }
    }
  });
}

}  // namespace cv_geometry
}  // namespace cpu
}  // namespace mnnpy
#endif  // HWY_ONCE
