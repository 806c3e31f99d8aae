// Channel layout conversions, compiled per SIMD target and picked at run time. Both directions are
// the same 8x8 transposition, tile by tile: eight channel rows of eight pixels on the NCHW side are
// eight pixels of eight channels on the blocked side. A tile is transposed in registers (two rounds
// of interleaves inside 128-bit blocks, then a swap of 128-bit halves on 8-lane targets; 4-lane
// targets transpose its four 4x4 quadrants), so every load and store is a whole vector.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/layout.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>

#include "backend/cpu/copy.h"
#include "backend/cpu/layout.h"
#include "backend/cpu/thread_buffers.h"
#include "mnnpy/thread_pool.h"

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR
// Within each 128-bit block, rows r0..r3 become columns: afterwards r_j holds, block by block,
// element j of the old r0, r1, r2, r3.
template <class D, class V> HWY_INLINE void transpose4_in_blocks(D d, V& r0, V& r1, V& r2, V& r3) {
  const hn::Repartition<uint64_t, D> d64;
  const auto t0 = hn::BitCast(d64, hn::InterleaveLower(d, r0, r1));  // r0[0] r1[0] r0[1] r1[1]
  const auto t1 = hn::BitCast(d64, hn::InterleaveLower(d, r2, r3));  // r2[0] r3[0] r2[1] r3[1]
  const auto t2 = hn::BitCast(d64, hn::InterleaveUpper(d, r0, r1));  // r0[2] r1[2] r0[3] r1[3]
  const auto t3 = hn::BitCast(d64, hn::InterleaveUpper(d, r2, r3));
  r0 = hn::BitCast(d, hn::InterleaveLower(d64, t0, t1));
  r1 = hn::BitCast(d, hn::InterleaveUpper(d64, t0, t1));
  r2 = hn::BitCast(d, hn::InterleaveLower(d64, t2, t3));
  r3 = hn::BitCast(d, hn::InterleaveUpper(d64, t2, t3));
}
#endif

// dst[j * ds + i] = src[i * ss + j] for i, j < 8; d holds at most 8 floats.
template <class D>
HWY_INLINE void transpose8x8(D d, const float* HWY_RESTRICT src, int64_t ss, float* HWY_RESTRICT dst, int64_t ds) {
#if HWY_TARGET == HWY_SCALAR
  (void)d;
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 8; ++j) dst[j * ds + i] = src[i * ss + j];
#else
  if constexpr (hn::MaxLanes(d) == 8) {
    using V = hn::Vec<decltype(d)>;
    V r[8];
    for (int i = 0; i < 8; ++i) r[i] = hn::LoadU(d, src + i * ss);
    transpose4_in_blocks(d, r[0], r[1], r[2], r[3]);
    transpose4_in_blocks(d, r[4], r[5], r[6], r[7]);
    // r[j] (j < 4) is column j of rows 0-3 then column j + 4 of rows 0-3; r[4 + j] the same of rows 4-7.
    for (int j = 0; j < 4; ++j) {
      hn::StoreU(hn::ConcatLowerLower(d, r[4 + j], r[j]), d, dst + j * ds);
      hn::StoreU(hn::ConcatUpperUpper(d, r[4 + j], r[j]), d, dst + (j + 4) * ds);
    }
  } else {
    // Four lanes: quadrant (a, b) of rows 4a.. and columns 4b.. lands at rows 4b.., columns 4a...
    static_assert(hn::MaxLanes(d) == 4, "128-bit targets hold four floats");
    for (int a = 0; a < 2; ++a) {
      for (int b = 0; b < 2; ++b) {
        const float* s = src + 4 * a * ss + 4 * b;
        auto r0 = hn::LoadU(d, s), r1 = hn::LoadU(d, s + ss), r2 = hn::LoadU(d, s + 2 * ss),
             r3 = hn::LoadU(d, s + 3 * ss);
        transpose4_in_blocks(d, r0, r1, r2, r3);
        float* o = dst + 4 * b * ds + 4 * a;
        hn::StoreU(r0, d, o);
        hn::StoreU(r1, d, o + ds);
        hn::StoreU(r2, d, o + 2 * ds);
        hn::StoreU(r3, d, o + 3 * ds);
      }
    }
  }
#endif
}

// Pixels [p0, p1) of one channel block. NCHW side: 8 rows of `plane` floats; blocked side: pixels
// of 8 floats. A ragged end re-transposes the last full tile of the range (same values written
// twice) when the range holds one; shorter ranges go element by element.
template <bool kToBlocked>
void transpose_block_range(const float* HWY_RESTRICT x, float* HWY_RESTRICT y, int64_t plane, int64_t p0,
                           int64_t p1) {
  constexpr int64_t B = kChannelBlock;
  const hn::CappedTag<float, 8> d;
  auto tile = [&](int64_t p) {
    if (kToBlocked) transpose8x8(d, x + p, plane, y + p * B, B);
    else transpose8x8(d, x + p * B, B, y + p, plane);
  };
  int64_t p = p0;
  // Two tiles per step: each NCHW-side row access then covers a whole 64-byte line.
  for (; p + 2 * B <= p1; p += 2 * B) {
    tile(p);
    tile(p + B);
  }
  for (; p + B <= p1; p += B) tile(p);
  if (p == p1) return;
  if (p1 - p0 >= B) {
    tile(p1 - B);
    return;
  }
  for (; p < p1; ++p) {
    for (int64_t c = 0; c < B; ++c) {
      if (kToBlocked) y[p * B + c] = x[c * plane + p];
      else y[c * plane + p] = x[p * B + c];
    }
  }
}

// Units [u0, u1) of (channel block, pixel chunk), chunks_per_block chunks of `chunk` pixels per block.
// Block b starts at b * 8 * plane on both sides.
void TransposeChannelBlocksImpl(bool to_blocked, const float* x, float* y, int64_t plane, int64_t chunk,
                                int64_t chunks_per_block, int64_t u0, int64_t u1) {
  for (int64_t u = u0; u < u1; ++u) {
    const int64_t b = u / chunks_per_block, p0 = (u % chunks_per_block) * chunk;
    const int64_t offset = b * kChannelBlock * plane, p1 = std::min(plane, p0 + chunk);
    if (to_blocked) transpose_block_range<true>(x + offset, y + offset, plane, p0, p1);
    else transpose_block_range<false>(x + offset, y + offset, plane, p0, p1);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
HWY_EXPORT(TransposeChannelBlocksImpl);

namespace {
// Pixels per unit of work: 16K floats each side, a multiple of the 8-pixel tile.
constexpr int64_t kChunkPixels = 2048;
// Floats moved per parallel task: enough to amortize a thread wake-up.
constexpr int64_t kGrainFloats = 1 << 16;

void convert(bool to_blocked, const float* x, int64_t batch, int64_t channels, int64_t plane, float* y,
             ThreadPool* pool) {
  const int64_t blocks = batch * (channels / kChannelBlock);
  if (blocks == 0 || plane == 0) return;
  if (plane == 1) {
    // One pixel per plane: both layouts hold the same bytes.
    parallel_memcpy(y, x, (size_t)(blocks * kChannelBlock) * sizeof(float), pool);
    return;
  }
  const int64_t chunk = std::min(round_up(plane, 8), kChunkPixels);
  const int64_t chunks_per_block = ceil_div(plane, chunk);
  const int64_t units = blocks * chunks_per_block;
  const int64_t grain = std::max<int64_t>(1, kGrainFloats / (chunk * kChannelBlock));
  parallel_for(pool, units, grain, [&](int64_t u0, int64_t u1) {
    HWY_DYNAMIC_DISPATCH(TransposeChannelBlocksImpl)(to_blocked, x, y, plane, chunk, chunks_per_block, u0, u1);
  });
}
}  // namespace

void to_blocked_channels(const float* x, int64_t batch, int64_t channels, int64_t plane, float* y, ThreadPool* pool) {
  convert(true, x, batch, channels, plane, y, pool);
}

void from_blocked_channels(const float* x, int64_t batch, int64_t channels, int64_t plane, float* y,
                           ThreadPool* pool) {
  convert(false, x, batch, channels, plane, y, pool);
}

}  // namespace cpu
}  // namespace mnnpy
#endif
