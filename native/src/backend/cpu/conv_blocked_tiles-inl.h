// The register tiles of the blocked convolution kernels (P output pixels x NB blocks of 8 output
// channels, reducing over runs of input values), compiled once per Highway target: the direct
// convolution (conv_blocked.cpp) and the products of the blocked Winograd convolution
// (winograd_blocked.cpp) run them. Include after hwy/foreach_target.h.
#if defined(MNNPY_CONV_BLOCKED_TILES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MNNPY_CONV_BLOCKED_TILES_INL_H_
#undef MNNPY_CONV_BLOCKED_TILES_INL_H_
#else
#define MNNPY_CONV_BLOCKED_TILES_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>

#include "backend/cpu/conv_blocked.h"
#include "backend/cpu/conv_blocked_epilogue-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D8 = hn::CappedTag<float, 8>;  // one block of 8 channels: 1 vector (2 on 128-bit targets)
using V8 = hn::Vec<D8>;
constexpr int kLanes = (int)hn::MaxLanes(D8());
constexpr int kVecPerBlock = 8 / kLanes;

// Output blocks per tile and accumulator vectors per tile: the accumulators, the weight vectors of
// one input value and a broadcast fit the register file (16 vectors before AVX-512, 32 with it).
#if HWY_TARGET <= HWY_AVX3
constexpr int kTileBlocks = 4, kAccVectors = 24;
#elif HWY_TARGET == HWY_AVX2
constexpr int kTileBlocks = 2, kAccVectors = 12;
#else
constexpr int kTileBlocks = 2, kAccVectors = 16;
#endif
static_assert(kTileBlocks % kBlockedPanelBlocks == 0 && kTileBlocks <= 2 * kBlockedPanelBlocks,
              "a tile covers one or two whole panels");

// On 512-bit targets a tile of an even number of blocks keeps each pixel's pair of blocks in one
// vector: the two blocks' weights of one input value are one panel row, and the value's broadcast
// serves both. Per lane the arithmetic and its order are those of the 8-lane tiles, so results do
// not depend on the target; CPUs with two 512-bit FMA units do twice the work per instruction.
#undef MNNPY_CONV_PAIR_TILES  // this file is compiled once per target
#if HWY_TARGET <= HWY_AVX3
#define MNNPY_CONV_PAIR_TILES 1
using D16 = hn::FixedTag<float, 16>;
using V16 = hn::Vec<D16>;
constexpr bool kPairTiles = true;
#else
constexpr bool kPairTiles = false;
#endif

template <int NB> constexpr bool pair_tile() { return kPairTiles && NB % 2 == 0; }

template <int NB> constexpr int tile_pixels() {
  const int per_pixel = pair_tile<NB>() ? NB / 2 : NB * kVecPerBlock;
  return std::max(1, std::min(12, kAccVectors / per_pixel));
}

// What the tiles of one chunk and one group of output blocks share, and where the current span of
// output pixels is: their inputs lie at x_offsets[p] from the starts of the runs, their outputs
// (and residuals) at y_offsets[p] from y (and residual).
struct SpanArgs {
  const float* const* run_x = nullptr;  // per run: its first input value, before the pixel's offset
  const int64_t* run_w = nullptr;       // per run: its first weight row
  int64_t runs = 0, run = 0;
  const float* w = nullptr;             // the tile's first panel of weights (its first two blocks)
  const float* w_next = nullptr;        // the next panel (blocks 2 and 3), for tiles of more blocks
  const float* bias = nullptr;          // the tile's first block; read unless accumulating (null: 0)
  int64_t y_block_stride = 0;           // floats between output blocks: Ho * Wo * 8
  bool accumulate = false, finish = false;
  ConvActivation act;
  const int64_t* x_offsets = nullptr;   // per pixel of the span
  const int64_t* y_offsets = nullptr;   // per pixel of the span
  float* y = nullptr;                   // the span's first row and column, first block
  const float* residual = nullptr;      // at y's offset, or null
};

// One input value per pixel times the weight vectors of the tile's blocks: P x NV multiply-adds.
// ws0, ws1: the value's weight rows in the tile's two panels (vectors of blocks 2 and 3 in ws1).
template <int P, int NV>
HWY_INLINE void accumulate_value(V8 (&acc)[P][NV], const float* const (&xp)[P], int64_t i,
                                 const float* HWY_RESTRICT ws0, const float* HWY_RESTRICT ws1) {
  const D8 d;
  constexpr int kPanelVecs = kBlockedPanelBlocks * kVecPerBlock;
  V8 wv[NV];
  for (int v = 0; v < NV; ++v) wv[v] = hn::LoadU(d, (v < kPanelVecs ? ws0 : ws1) + (v % kPanelVecs) * kLanes);
  for (int p = 0; p < P; ++p) {
    const V8 xb = hn::Set(d, xp[p][i]);
    for (int v = 0; v < NV; ++v) acc[p][v] = hn::MulAdd(xb, wv[v], acc[p][v]);
  }
}

// Where accumulator v of a pixel goes, from the pixel's first block.
HWY_INLINE int64_t out_offset(int v, int64_t block_stride) {
  return (v / kVecPerBlock) * block_stride + (v % kVecPerBlock) * kLanes;
}

#ifdef MNNPY_CONV_PAIR_TILES
// accumulate_value for tiles of block pairs: NW vectors of 16 channels a pixel.
template <int P, int NW>
HWY_INLINE void accumulate_value_pairs(V16 (&acc)[P][NW], const float* const (&xp)[P], int64_t i,
                                       const float* HWY_RESTRICT ws0, const float* HWY_RESTRICT ws1) {
  const D16 d;
  V16 wv[NW];
  for (int v = 0; v < NW; ++v) wv[v] = hn::LoadU(d, v == 0 ? ws0 : ws1);
  for (int p = 0; p < P; ++p) {
    const V16 xb = hn::Set(d, xp[p][i]);
    for (int v = 0; v < NW; ++v) acc[p][v] = hn::MulAdd(xb, wv[v], acc[p][v]);
  }
}

// Two consecutive blocks of a pixel, block_stride floats apart in memory, as one vector; and back.
HWY_INLINE V16 load_block_pair(const float* p, int64_t block_stride) {
  const hn::Half<D16> dh;
  return hn::Combine(D16(), hn::LoadU(dh, p + block_stride), hn::LoadU(dh, p));
}
HWY_INLINE void store_block_pair(V16 v, float* p, int64_t block_stride) {
  const hn::Half<D16> dh;
  hn::StoreU(hn::LowerHalf(dh, v), dh, p);
  hn::StoreU(hn::UpperHalf(dh, v), dh, p + block_stride);
}

// direct_tiles for NB = 2 * NW output blocks on 512-bit targets (see pair_tile).
template <int P, int NW, bool kRunsOf8>
HWY_NOINLINE void pair_tiles(const SpanArgs& a, int64_t tiles) {
  const D16 d;
  const int64_t ybs = a.y_block_stride;
  constexpr int64_t w_row = 2 * kChannelBlock;  // each panel holds two blocks
  for (int64_t tile = 0; tile < tiles; ++tile) {
    const int64_t* off = a.x_offsets + tile * P;
    const int64_t* y_off = a.y_offsets + tile * P;
    V16 acc[P][NW];
    if (a.accumulate) {
      for (int p = 0; p < P; ++p)
        for (int v = 0; v < NW; ++v) acc[p][v] = load_block_pair(a.y + y_off[p] + 2 * v * ybs, ybs);
    } else {
      for (int v = 0; v < NW; ++v) {
        const V16 b = a.bias ? hn::LoadU(d, a.bias + v * w_row) : hn::Zero(d);
        for (int p = 0; p < P; ++p) acc[p][v] = b;
      }
    }
    for (int64_t r = 0; r < a.runs; ++r) {
      const float* xs = a.run_x[r];
      const float* ws0 = a.w + a.run_w[r] * w_row;
      const float* ws1 = NW > 1 ? a.w_next + a.run_w[r] * w_row : ws0;
      const float* xp[P];
      for (int p = 0; p < P; ++p) xp[p] = xs + off[p];
      if (kRunsOf8) {
        for (int64_t i = 0; i < a.run; i += 8, ws0 += 8 * w_row, ws1 += 8 * w_row) {
#pragma GCC unroll 8
          for (int j = 0; j < 8; ++j) accumulate_value_pairs<P, NW>(acc, xp, i + j, ws0 + j * w_row, ws1 + j * w_row);
        }
      } else {
        for (int64_t i = 0; i < a.run; ++i, ws0 += w_row, ws1 += w_row) accumulate_value_pairs<P, NW>(acc, xp, i, ws0, ws1);
      }
    }
    bool cheap = true;
    if (a.finish) {
      if (a.residual) {
        for (int p = 0; p < P; ++p)
          for (int v = 0; v < NW; ++v)
            acc[p][v] = hn::Add(acc[p][v], load_block_pair(a.residual + y_off[p] + 2 * v * ybs, ybs));
      }
      cheap = activate_cheap<P * NW>(d, &acc[0][0], a.act);
    }
    for (int p = 0; p < P; ++p)
      for (int v = 0; v < NW; ++v) store_block_pair(acc[p][v], a.y + y_off[p] + 2 * v * ybs, ybs);
    if (!cheap)
      for (int p = 0; p < P; ++p) activate_stored(D8(), a.y + y_off[p], 2 * NW, ybs, kVecPerBlock, a.act);
  }
}
#endif

// `tiles` tiles of P pixels x NB output blocks from the start of the span. kRunsOf8: every run is a
// multiple of 8 values (blocked input), walked 8 at a time, fully unrolled. Each pixel's input has
// its own pointer: measured faster, even for 1x1 layers whose pixels are consecutive, than one
// pointer with constant offsets.
template <int P, int NB, bool kRunsOf8>
HWY_NOINLINE void direct_tiles(const SpanArgs& a, int64_t tiles) {
#ifdef MNNPY_CONV_PAIR_TILES
  if constexpr (pair_tile<NB>()) return pair_tiles<P, NB / 2, kRunsOf8>(a, tiles);
#endif
  constexpr int NV = NB * kVecPerBlock;
  const D8 d;
  const int64_t ybs = a.y_block_stride;
  // Floats per weight row of the tile's panels: a tile starts at a panel, so only a tile that ends
  // on the layer's last, odd block has a panel of one block.
  constexpr int64_t w_row = std::min(NB, 2) * kChannelBlock, w_row_next = (NB == 3 ? 1 : 2) * kChannelBlock;
  for (int64_t tile = 0; tile < tiles; ++tile) {
    const int64_t* off = a.x_offsets + tile * P;
    const int64_t* y_off = a.y_offsets + tile * P;
    V8 acc[P][NV];
    if (a.accumulate) {
      for (int p = 0; p < P; ++p)
        for (int v = 0; v < NV; ++v) acc[p][v] = hn::LoadU(d, a.y + y_off[p] + out_offset(v, ybs));
    } else {
      for (int v = 0; v < NV; ++v) {
        const V8 b = a.bias ? hn::LoadU(d, a.bias + v * kLanes) : hn::Zero(d);
        for (int p = 0; p < P; ++p) acc[p][v] = b;
      }
    }
    for (int64_t r = 0; r < a.runs; ++r) {
      const float* xs = a.run_x[r];
      const float* ws0 = a.w + a.run_w[r] * w_row;
      const float* ws1 = NB > kBlockedPanelBlocks ? a.w_next + a.run_w[r] * w_row_next : ws0;
      const float* xp[P];
      for (int p = 0; p < P; ++p) xp[p] = xs + off[p];
      if (kRunsOf8) {
        for (int64_t i = 0; i < a.run; i += 8, ws0 += 8 * w_row, ws1 += 8 * w_row_next) {
#pragma GCC unroll 8
          for (int j = 0; j < 8; ++j) accumulate_value<P, NV>(acc, xp, i + j, ws0 + j * w_row, ws1 + j * w_row_next);
        }
      } else {
        for (int64_t i = 0; i < a.run; ++i, ws0 += w_row, ws1 += w_row_next)
          accumulate_value<P, NV>(acc, xp, i, ws0, ws1);
      }
    }
    bool cheap = true;
    if (a.finish) {
      if (a.residual) {
        for (int p = 0; p < P; ++p)
          for (int v = 0; v < NV; ++v)
            acc[p][v] = hn::Add(acc[p][v], hn::LoadU(d, a.residual + y_off[p] + out_offset(v, ybs)));
      }
      cheap = activate_cheap<P * NV>(d, &acc[0][0], a.act);
    }
    for (int p = 0; p < P; ++p)
      for (int v = 0; v < NV; ++v) hn::StoreU(acc[p][v], d, a.y + y_off[p] + out_offset(v, ybs));
    if (!cheap)
      for (int p = 0; p < P; ++p) activate_stored(d, a.y + y_off[p], NB, ybs, kVecPerBlock, a.act);
  }
}

using TilesFn = void (*)(const SpanArgs&, int64_t);

// The tiles of width P (1 <= P <= tile_pixels<NB>()) for NB output blocks.
template <int NB, bool kRunsOf8, int P = tile_pixels<NB>()>
TilesFn tiles_of_width(int64_t width) {
  if constexpr (P == 1) {
    return &direct_tiles<1, NB, kRunsOf8>;
  } else {
    if (width >= P) return &direct_tiles<P, NB, kRunsOf8>;
    return tiles_of_width<NB, kRunsOf8, P - 1>(width);
  }
}

template <bool kRunsOf8>
TilesFn tiles_for(int64_t blocks, int64_t width) {
  if constexpr (kTileBlocks >= 4) {
    if (blocks >= 4) return tiles_of_width<4, kRunsOf8>(width);
  }
  if (blocks == 3) return tiles_of_width<3, kRunsOf8>(width);
  if (blocks >= 2) return tiles_of_width<2, kRunsOf8>(width);
  return tiles_of_width<1, kRunsOf8>(width);
}

inline int64_t widest_tile(int64_t blocks) {
  if (kTileBlocks >= 4 && blocks >= 4) return tile_pixels<4>();
  if (blocks == 3) return tile_pixels<3>();
  return blocks >= 2 ? tile_pixels<2>() : tile_pixels<1>();
}

// Output blocks of the tile at block ob, the task's blocks ending at ob_end: kTileBlocks, or the
// three last blocks of a layer with an odd count together (one tile that broadcasts each input
// value once, rather than a tile of two blocks and one of one).
inline int64_t tile_blocks(int64_t ob, int64_t ob_end) {
  const int64_t left = ob_end - ob;
  return left == 3 ? 3 : std::min<int64_t>(kTileBlocks, left);
}

// A span of `pixels` pixels for `blocks` output blocks: full tiles, then the rest as two tiles of
// about equal width (a narrow last tile would leave the FMA units waiting on its few accumulators).
template <bool kRunsOf8>
void run_span(SpanArgs a, int64_t blocks, int64_t pixels) {
  const int64_t P = widest_tile(blocks);
  int64_t full = pixels / P, rest = pixels % P;
  if (rest > 0 && full > 0) {
    --full;
    rest += P;
  }
  if (full > 0) tiles_for<kRunsOf8>(blocks, P)(a, full);
  if (rest == 0) return;
  const int64_t first = (rest + 1) / 2, second = rest - first;
  const int64_t done = full * P;
  auto shift = [&](int64_t n) {
    a.x_offsets += n;
    a.y_offsets += n;
  };
  shift(done);
  if (rest <= P) {  // no full tile before it: one tile
    tiles_for<kRunsOf8>(blocks, rest)(a, 1);
    return;
  }
  tiles_for<kRunsOf8>(blocks, first)(a, 1);
  shift(first);
  tiles_for<kRunsOf8>(blocks, second)(a, 1);
}
}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#endif  // include guard
