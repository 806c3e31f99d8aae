// OpenCV 5's float-coordinate warps (uint8 and float32 images of 1, 3 or 4 channels, nearest or
// bilinear), compiled per SIMD target by Highway and chosen at run time.
// Per destination row the source positions are computed as OpenCV computes them: in float32,
// the row term y * M[1] + M[2] rounded before a fused multiply-add along x for all but the last
// (width mod 16) columns, which sum x * M[0] + y * M[1] + M[2] as its scalar tail does.
// Bilinear weights are the fractions of those positions, applied by fused multiply-adds; uint8
// results round half to even. Vectors of pixels whose 2x2 neighbourhood lies in the image read
// their neighbours directly (3- and 4-channel uint8 images with one 8-byte load per row of the
// neighbourhood); uint8 vectors wholly outside it under a constant or transparent border take
// the border value or keep the destination; the others fetch them through the border rule.
// Fused multiply-adds appear only where written (hn::MulAdd), never by contraction.
#pragma GCC optimize("fp-contract=off")
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/cv_warp.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/aligned_allocator.h>
#include <hwy/highway.h>

#include "backend/cpu/simd_shared-inl.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backend/cpu/cv_warp.h"
#include "mnnpy/thread_pool.h"

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace cv_warp {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<DF>;

// Columns per step of OpenCV's vectorized position loop (two vectors of 8 floats).
constexpr int64_t kOpenCvColumnStep = 16;
// Positions beyond this magnitude (and NaN) read as OpenCV's INT_MIN: far outside the image.
constexpr float kFarAway = 1073741824.f;

using cpu::HWY_NAMESPACE::FusedMulAdd;
using cpu::HWY_NAMESPACE::round_in_range;

// Source positions of destination row y into sx, sy (padded to whole vectors with far-away
// positions).
void row_positions(const WarpPlan& p, const void* map1, const void* map2, int64_t y, float* HWY_RESTRICT sx,
                   float* HWY_RESTRICT sy) {
  const DF df;
  const int64_t n = (int64_t)hn::Lanes(df), w = p.dst_w;
  const int64_t padded = (w + n - 1) / n * n;
  const auto far = hn::Set(df, -2147483648.f), limit = hn::Set(df, kFarAway);
  float m[9];
  for (int i = 0; i < 9; ++i) m[i] = (float)p.matrix[i];
  const auto yv = hn::Set(df, (float)y);
  // The perspective division is chosen at compile time: GCC 12 turned a run-time `if` around it
  // into a division masked by the condition's bool itself on AVX-512, dividing lane 0 only.
  auto linear_map = [&](auto perspective) {
    constexpr bool persp = decltype(perspective)::value;
    // OpenCV steps two float vectors at a time and leaves the rest to scalar code; its x86 build
    // runs this loop on AVX2 (16 columns a step) whatever the CPU has beyond, so every target
    // here splits the row at the same column.
    const int64_t tail = w - w % kOpenCvColumnStep;
    const auto m0 = hn::Set(df, m[0]), m1 = hn::Set(df, m[1]), m2 = hn::Set(df, m[2]);
    const auto m3 = hn::Set(df, m[3]), m4 = hn::Set(df, m[4]), m5 = hn::Set(df, m[5]);
    const auto m6 = hn::Set(df, m[6]), m7 = hn::Set(df, m[7]), m8 = hn::Set(df, m[8]);
    const auto row_x = hn::Add(hn::Mul(yv, m1), m2), row_y = hn::Add(hn::Mul(yv, m4), m5);
    const auto row_w = hn::Add(hn::Mul(yv, m7), m8);
    for (int64_t x = 0; x < padded; x += n) {
      const auto xs = hn::Iota(df, (float)x);
      hn::Vec<DF> X, Y;
      if (x < tail) {
        X = FusedMulAdd(m0, xs, row_x);
        Y = FusedMulAdd(m3, xs, row_y);
        if constexpr (persp) {
          const auto W = FusedMulAdd(m6, xs, row_w);
          X = hn::Div(X, W);
          Y = hn::Div(Y, W);
        }
      } else {
        X = hn::Add(FusedMulAdd(xs, m0, hn::Mul(yv, m1)), m2);
        Y = hn::Add(FusedMulAdd(xs, m3, hn::Mul(yv, m4)), m5);
        if constexpr (persp) {
          const auto W = hn::Add(FusedMulAdd(xs, m6, hn::Mul(yv, m7)), m8);
          X = hn::Div(X, W);
          Y = hn::Div(Y, W);
        }
      }
      hn::Store(hn::IfThenElse(hn::Lt(hn::Abs(X), limit), X, far), df, sx + x);
      hn::Store(hn::IfThenElse(hn::Lt(hn::Abs(Y), limit), Y, far), df, sy + x);
    }
  };
  if (p.mapping == Mapping::Perspective) {
    linear_map(std::true_type());
  } else if (p.mapping == Mapping::Affine) {
    linear_map(std::false_type());
  } else {
    const bool packed = p.mapping == Mapping::MapsXYPacked;
    const float* m1 = (const float*)map1 + y * w * (packed ? 2 : 1);
    const float* m2 = packed ? nullptr : (const float*)map2 + y * w;
    for (int64_t x = 0; x < w; ++x) {
      sx[x] = packed ? m1[2 * x] : m1[x];
      sy[x] = packed ? m1[2 * x + 1] : m2[x];
    }
    for (int64_t x = w; x < padded; ++x) sx[x] = sy[x] = 0.f;
    if (p.relative) {
      for (int64_t x = 0; x < padded; x += n) {
        hn::Store(hn::Add(hn::Load(df, sx + x), hn::Iota(df, (float)x)), df, sx + x);
        hn::Store(hn::Add(hn::Load(df, sy + x), yv), df, sy + x);
      }
    }
    for (int64_t x = 0; x < padded; x += n) {
      const auto X = hn::Load(df, sx + x), Y = hn::Load(df, sy + x);
      hn::Store(hn::IfThenElse(hn::Lt(hn::Abs(X), limit), X, far), df, sx + x);
      hn::Store(hn::IfThenElse(hn::Lt(hn::Abs(Y), limit), Y, far), df, sy + x);
    }
  }
  for (int64_t x = w; x < padded; ++x) sx[x] = sy[x] = -2147483648.f;
}

template <class T>
struct RowContext {
  const T* src;
  T* dst;  // this destination row
  int64_t sw, sh, sstep;
  Border border, border_x, border_y;
  float cval[4];
};

// Neighbour (py, px) of destination pixel x, channel c, through the border rule.
template <class T, int C>
HWY_INLINE float fetch(const RowContext<T>& r, int64_t py, int64_t px, int64_t x, int c) {
  if (px >= 0 && px < r.sw && py >= 0 && py < r.sh) return (float)r.src[py * r.sstep + px * C + c];
  if (r.border == Border::Constant) return r.cval[c];
  if (r.border == Border::Transparent) return (float)r.dst[x * C + c];
  return (float)r.src[border_index(py, r.sh, r.border_y) * r.sstep + border_index(px, r.sw, r.border_x) * C + c];
}

template <int K, class V>
HWY_INLINE V byte_lane(V v) {
  const hn::DFromV<V> d;
  return hn::And(hn::ShiftRight<8 * K>(v), hn::Set(d, 0xFF));
}

// One vector of bilinear samples: p[corner][channel] (corners 00, 01, 10, 11) to result[channel].
template <int C>
HWY_INLINE void blend(const hn::Vec<DF> (&p)[4][C], hn::Vec<DF> ax, hn::Vec<DF> by, hn::Vec<DF> (&out)[C]) {
  for (int c = 0; c < C; ++c) {
    const auto v0 = FusedMulAdd(ax, hn::Sub(p[1][c], p[0][c]), p[0][c]);
    const auto v1 = FusedMulAdd(ax, hn::Sub(p[3][c], p[2][c]), p[2][c]);
    out[c] = FusedMulAdd(by, hn::Sub(v1, v0), v0);
  }
}

template <int C>
HWY_INLINE void gather_u8(const uint8_t* src, int64_t sstep, hn::Vec<DI> addr, hn::Vec<DF> (&p)[4][C]) {
  const DF df;
  const DI di;
  const hn::RebindToUnsigned<DI> du;
  const int32_t* base = reinterpret_cast<const int32_t*>(src);
  const auto g00 = hn::GatherOffset(di, base, addr);
  const auto g10 = hn::GatherOffset(di, base, hn::Add(addr, hn::Set(di, (int32_t)sstep)));
  if constexpr (C == 1) {
    p[0][0] = hn::ConvertTo(df, byte_lane<0>(g00));
    p[1][0] = hn::ConvertTo(df, byte_lane<1>(g00));
    p[2][0] = hn::ConvertTo(df, byte_lane<0>(g10));
    p[3][0] = hn::ConvertTo(df, byte_lane<1>(g10));
  } else {
    const auto g01 = hn::GatherOffset(di, base, hn::Add(addr, hn::Set(di, C)));
    const auto g11 = hn::GatherOffset(di, base, hn::Add(addr, hn::Set(di, (int32_t)sstep + C)));
    const hn::Vec<DI> g[4] = {g00, g01, g10, g11};
    for (int k = 0; k < 4; ++k) {
      p[k][0] = hn::ConvertTo(df, byte_lane<0>(g[k]));
      p[k][1] = hn::ConvertTo(df, byte_lane<1>(g[k]));
      p[k][2] = hn::ConvertTo(df, byte_lane<2>(g[k]));
      if constexpr (C == 4) {
        // The top byte through an unsigned shift (a signed one would carry the sign bit).
        p[k][3] = hn::ConvertTo(df, hn::BitCast(di, hn::ShiftRight<24>(hn::BitCast(du, g[k]))));
      }
    }
  }
}

#if HWY_TARGET != HWY_SCALAR
// Constants of the uint8 3- and 4-channel bilinear path (made once).
template <int C>
struct PixelPairTables {
  // Byte k of every 32-bit lane moved to its low byte (the rest zero): byte_of[k].
  hn::Vec<hn::Repartition<uint8_t, DI>> byte_of[4];
  // Three-channel results: the first 3 bytes of each 32-bit lane packed to the front, so that
  // one vector holds 3 * Lanes bytes of output pixels in order.
  hn::Vec<hn::Repartition<uint8_t, DI>> drop_fourth;
  decltype(hn::SetTableIndices(DI(), (const int32_t*)nullptr)) join_blocks;
  PixelPairTables() {
    const DI di;
    const hn::Repartition<uint8_t, DI> d8;
    HWY_ALIGN uint8_t bytes[hn::MaxLanes(d8)];
    for (int k = 0; k < 4; ++k) {
      for (size_t i = 0; i < hn::Lanes(d8); ++i) bytes[i] = (uint8_t)(i % 4 == 0 ? i % 16 + k : 0x80);
      byte_of[k] = hn::Load(d8, bytes);
    }
    for (size_t i = 0; i < hn::Lanes(d8); ++i) {
      const size_t k = i % 16;
      bytes[i] = (uint8_t)(k < 12 ? k / 3 * 4 + k % 3 : 0x80);
    }
    drop_fourth = hn::Load(d8, bytes);
    HWY_ALIGN int32_t lanes[hn::MaxLanes(di)];
    for (size_t i = 0; i < hn::Lanes(di); ++i) lanes[i] = (int32_t)(i / 3 * 4 + i % 3 < hn::Lanes(di) ? i / 3 * 4 + i % 3 : 0);
    join_blocks = hn::SetTableIndices(di, lanes);
  }
};

// The 2x2 neighbourhoods of a vector of 3- or 4-byte pixels that lie in the image. Each row's
// two neighbours come with one 8-byte scalar load (cheaper than hardware gathers on many
// cores); the even and odd 32-bit halves of those loads then hold the left and right pixels.
template <int C>
HWY_INLINE void load_pixel_pairs(const uint8_t* src, int64_t sstep, const int32_t* addr,
                                 const PixelPairTables<C>& t, hn::Vec<DF> (&p)[4][C]) {
  const DF df;
  const DI di;
  const hn::Repartition<uint8_t, DI> d8;
  constexpr size_t n = hn::MaxLanes(di);
  const size_t lanes = hn::Lanes(di);
  HWY_ALIGN uint64_t top[n], bottom[n];
  for (size_t i = 0; i < lanes; ++i) {
    std::memcpy(&top[i], src + addr[i], 8);
    std::memcpy(&bottom[i], src + addr[i] + sstep, 8);
  }
  const uint64_t* rows[2] = {top, bottom};
  for (int row = 0; row < 2; ++row) {
    const int32_t* words = reinterpret_cast<const int32_t*>(rows[row]);
    const auto first = hn::Load(di, words), second = hn::Load(di, words + lanes);
    const auto left = hn::BitCast(d8, hn::ConcatEven(di, second, first));
    const auto right = hn::BitCast(d8, hn::ConcatOdd(di, second, first));
    auto channel = [&](hn::Vec<decltype(d8)> v, int k) {
      return hn::ConvertTo(df, hn::BitCast(di, hn::TableLookupBytesOr0(v, t.byte_of[k])));
    };
    hn::Vec<DF>* l = p[2 * row];
    hn::Vec<DF>* r = p[2 * row + 1];
    for (int c = 0; c < C; ++c) l[c] = channel(left, c);
    if constexpr (C == 3) {
      // Bytes 0..5 of the load are B G R of the left pixel, then of the right one.
      r[0] = channel(left, 3);
      r[1] = channel(right, 0);
      r[2] = channel(right, 1);
    } else {
      for (int c = 0; c < C; ++c) r[c] = channel(right, c);
    }
  }
}
#endif

template <class T, int C>
void linear_row(const RowContext<T>& r, const float* sx, const float* sy, int64_t w) {
  const DF df;
  const DI di;
  const int64_t n = (int64_t)hn::Lanes(df);
  constexpr bool kU8 = std::is_same<T, uint8_t>::value;
#if HWY_TARGET != HWY_SCALAR
  constexpr bool kPixelPairs = kU8 && C >= 3;
#else
  constexpr bool kPixelPairs = false;
#endif
  HWY_ALIGN int32_t ixs[hn::MaxLanes(di)], iys[hn::MaxLanes(di)];
  HWY_ALIGN float buf[4][C][hn::MaxLanes(df)];
  HWY_ALIGN float res[C][hn::MaxLanes(df)];
  // Whole 2x2 neighbourhoods: ix in [0, sw - 2], iy in [0, sh - 2]; for uint8 each row of a
  // neighbourhood is read with loads of 4 bytes (1 channel) or one of 8 bytes (3 and 4
  // channels), which must end within the image.
  const auto x_hi = hn::Set(di, (int32_t)(r.sw - 1)), y_hi = hn::Set(di, (int32_t)(r.sh - 1));
  const auto minus_one = hn::Set(di, -1);
  const int64_t total = r.sstep * r.sh;
  const int64_t addr_end = kPixelPairs ? total - r.sstep - 7 : total - r.sstep - C - 3;
  const auto addr_hi = hn::Set(di, (int32_t)std::min<int64_t>(INT32_MAX, addr_end));
  const auto vstep = hn::Set(di, (int32_t)r.sstep), vcn = hn::Set(di, C);
  const bool outside_is_uniform = r.border == Border::Constant || r.border == Border::Transparent;
#if HWY_TARGET != HWY_SCALAR
  static const PixelPairTables<kPixelPairs ? C : 3> tables;
#endif
  for (int64_t x = 0; x < w; x += n) {
    const auto X = hn::Load(df, sx + x), Y = hn::Load(df, sy + x);
    const auto fx = hn::Floor(X), fy = hn::Floor(Y);
    const auto ix = hn::ConvertTo(di, fx), iy = hn::ConvertTo(di, fy);
    const auto ax = hn::Sub(X, fx), by = hn::Sub(Y, fy);
    const auto addr = hn::Add(hn::Mul(iy, vstep), hn::Mul(ix, vcn));
    auto inside = hn::And(hn::And(hn::Gt(ix, minus_one), hn::Lt(ix, x_hi)), hn::And(hn::Gt(iy, minus_one), hn::Lt(iy, y_hi)));
    if (kU8) inside = hn::And(inside, hn::Lt(addr, addr_hi));
    hn::Vec<DF> p[4][C];
    hn::Vec<DF> v[C];
    // uint8 pixels whose whole neighbourhood lies outside take the border value (constant) or
    // keep the destination (transparent) exactly, as blending four equal values does.
    const auto beyond = hn::Or(hn::Or(hn::Lt(ix, minus_one), hn::Gt(ix, x_hi)), hn::Or(hn::Lt(iy, minus_one), hn::Gt(iy, y_hi)));
    if (kU8 && outside_is_uniform && hn::AllTrue(di, beyond)) {
      if (r.border == Border::Transparent) continue;
      for (int c = 0; c < C; ++c) v[c] = hn::Set(df, r.cval[c]);
    } else if (hn::AllTrue(di, inside)) {
      if constexpr (kPixelPairs) {
#if HWY_TARGET != HWY_SCALAR
        HWY_ALIGN int32_t addrs[hn::MaxLanes(di)];
        hn::Store(addr, di, addrs);
        load_pixel_pairs<C>((const uint8_t*)r.src, r.sstep, addrs, tables, p);
#endif
      } else if constexpr (kU8) {
        gather_u8<C>((const uint8_t*)r.src, r.sstep, addr, p);
      } else {
        const float* s = (const float*)r.src;
        const hn::Vec<DI> offs[4] = {addr, hn::Add(addr, vcn), hn::Add(addr, vstep), hn::Add(addr, hn::Add(vstep, vcn))};
        for (int k = 0; k < 4; ++k) {
          for (int c = 0; c < C; ++c) p[k][c] = hn::GatherIndex(df, s + c, offs[k]);
        }
      }
      blend<C>(p, ax, by, v);
    } else {
      hn::Store(ix, di, ixs);
      hn::Store(iy, di, iys);
      const int64_t m = std::min(n, w - x);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t px = ixs[i], py = iys[i];
        for (int c = 0; c < C; ++c) {
          if (i >= m) {
            buf[0][c][i] = buf[1][c][i] = buf[2][c][i] = buf[3][c][i] = 0.f;
            continue;
          }
          buf[0][c][i] = fetch<T, C>(r, py, px, x + i, c);
          buf[1][c][i] = fetch<T, C>(r, py, px + 1, x + i, c);
          buf[2][c][i] = fetch<T, C>(r, py + 1, px, x + i, c);
          buf[3][c][i] = fetch<T, C>(r, py + 1, px + 1, x + i, c);
        }
      }
      for (int k = 0; k < 4; ++k) {
        for (int c = 0; c < C; ++c) p[k][c] = hn::Load(df, buf[k][c]);
      }
      blend<C>(p, ax, by, v);
    }
    const int64_t m = std::min(n, w - x);
    if constexpr (kU8) {
      const auto zero = hn::Zero(di), top = hn::Set(di, 255);
      hn::Vec<DI> q[C];
      for (int c = 0; c < C; ++c) q[c] = hn::Min(hn::Max(round_in_range(v[c]), zero), top);
      uint8_t* out = (uint8_t*)r.dst + x * C;
      if constexpr (C == 1) {
        const hn::Rebind<uint8_t, DI> d8;
        if (m == n) {
          hn::StoreU(hn::DemoteTo(d8, q[0]), d8, out);
        } else {
          HWY_ALIGN uint8_t tmp[hn::MaxLanes(di)];
          hn::Store(hn::DemoteTo(d8, q[0]), d8, tmp);
          std::memcpy(out, tmp, m);
        }
      } else {
        auto packed = hn::Or(q[0], hn::Or(hn::ShiftLeft<8>(q[1]), hn::ShiftLeft<16>(q[2])));
        if constexpr (C == 4) packed = hn::Or(packed, hn::ShiftLeft<24>(q[3]));
        HWY_ALIGN int32_t tmp[hn::MaxLanes(di)];
        if (C == 4 && m == n) {
          hn::StoreU(packed, di, reinterpret_cast<int32_t*>(out));
#if HWY_TARGET != HWY_SCALAR
        } else if (C == 3 && m == n && n >= 4) {
          // 3 * n bytes of pixels, then n bytes that the next vector overwrites: whole-vector
          // stores while a next vector follows in this row (and does not read the destination
          // through a transparent border), a copy of the pixels otherwise.
          const hn::Repartition<uint8_t, DI> d8;
          const auto bytes = hn::TableLookupLanes(
              hn::BitCast(di, hn::TableLookupBytesOr0(hn::BitCast(d8, packed), tables.drop_fourth)), tables.join_blocks);
          if (x + 2 * n <= w && r.border != Border::Transparent) {
            hn::StoreU(bytes, di, reinterpret_cast<int32_t*>(out));
          } else {
            hn::Store(bytes, di, tmp);
            std::memcpy(out, tmp, 3 * n);
          }
#endif
        } else {
          hn::Store(packed, di, tmp);
          if (C == 4) {
            std::memcpy(out, tmp, 4 * std::min<int64_t>(m, hn::MaxLanes(di)));
          } else {
            for (int64_t i = 0; i + 1 < m; ++i) std::memcpy(out + 3 * i, tmp + i, 4);
            std::memcpy(out + 3 * (m - 1), tmp + m - 1, 3);
          }
        }
      }
    } else {
      for (int c = 0; c < C; ++c) hn::Store(v[c], df, res[c]);
      float* out = (float*)r.dst + x * C;
      for (int64_t i = 0; i < m; ++i) {
        for (int c = 0; c < C; ++c) out[i * C + c] = res[c][i];
      }
    }
  }
}

template <class T, int C>
void nearest_row(const RowContext<T>& r, const float* sx, const float* sy, int64_t w) {
  const DF df;
  const DI di;
  const int64_t n = (int64_t)hn::Lanes(df);
  HWY_ALIGN int32_t ixs[hn::MaxLanes(di)], iys[hn::MaxLanes(di)];
  T cval[C];
  for (int c = 0; c < C; ++c) cval[c] = (T)r.cval[c];
  for (int64_t x = 0; x < w; x += n) {
    hn::Store(hn::NearestInt(hn::Load(df, sx + x)), di, ixs);
    hn::Store(hn::NearestInt(hn::Load(df, sy + x)), di, iys);
    const int64_t m = std::min(n, w - x);
    for (int64_t i = 0; i < m; ++i) {
      const int64_t px = ixs[i], py = iys[i];
      T* o = r.dst + (x + i) * C;
      const T* s;
      if (px >= 0 && px < r.sw && py >= 0 && py < r.sh) {
        s = r.src + py * r.sstep + px * C;
      } else if (r.border == Border::Constant) {
        s = cval;
      } else if (r.border == Border::Transparent) {
        continue;
      } else {
        s = r.src + border_index(py, r.sh, r.border_y) * r.sstep + border_index(px, r.sw, r.border_x) * C;
      }
      for (int c = 0; c < C; ++c) o[c] = s[c];
    }
  }
}

template <class T, int C>
void float_rows(const WarpPlan& p, const void* src, const void* map1, const void* map2, void* dst, int64_t y0,
                int64_t y1) {
  const int64_t n = (int64_t)hn::Lanes(DF());
  const int64_t padded = (p.dst_w + n - 1) / n * n;
  auto positions = hwy::AllocateAligned<float>(2 * padded);
  float* sx = positions.get();
  float* sy = positions.get() + padded;
  RowContext<T> r;
  r.src = (const T*)src;
  r.sw = p.src_w;
  r.sh = p.src_h;
  r.sstep = p.src_w * C;
  r.border = p.border;
  const bool extrapolated = p.border != Border::Constant && p.border != Border::Transparent;
  // OpenCV repeats the edge along an axis only one pixel long.
  r.border_x = extrapolated && p.src_w <= 1 ? Border::Replicate : p.border;
  r.border_y = extrapolated && p.src_h <= 1 ? Border::Replicate : p.border;
  for (int c = 0; c < 4; ++c) {
    const double v = p.border_value[c];
    r.cval[c] = std::is_same<T, uint8_t>::value ? (float)std::min(std::max(std::nearbyint(v), 0.0), 255.0) : (float)v;
  }
  for (int64_t y = y0; y < y1; ++y) {
    row_positions(p, map1, map2, y, sx, sy);
    r.dst = (T*)dst + y * p.dst_w * C;
    if (p.interpolation == Interpolation::Nearest) nearest_row<T, C>(r, sx, sy, p.dst_w);
    else linear_row<T, C>(r, sx, sy, p.dst_w);
  }
}

// Keys' cubic weights (a = -0.75) of the taps floor(x) - 1 .. floor(x) + 2, t = x - floor(x).
HWY_INLINE void cubic_weights(float t, float* w) {
  const float a = -0.75f;
  w[0] = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a;
  w[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
  w[2] = ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1;
  w[3] = 1.f - w[0] - w[1] - w[2];
}

template <class T>
T saturate_double(double v) {
  if (std::is_same<T, uint8_t>::value) return (T)std::min(std::max(std::nearbyint(v), 0.0), 255.0);
  if (std::is_same<T, int16_t>::value) return (T)std::min(std::max(std::nearbyint(v), -32768.0), 32767.0);
  return (T)v;
}

// Bicubic sampling at float positions (any depth, up to 4 channels): each tap weighs
// wy * wx (a float product) times the pixel, summed in double.
template <class T>
void cubic_rows(const WarpPlan& p, const void* psrc, const void* map1, const void* map2, void* pdst, int64_t y0,
                int64_t y1) {
  const int64_t n = (int64_t)hn::Lanes(DF());
  const int64_t padded = (p.dst_w + n - 1) / n * n;
  auto positions = hwy::AllocateAligned<float>(2 * padded);
  float* sx = positions.get();
  float* sy = positions.get() + padded;
  const T* src = (const T*)psrc;
  const int64_t cn = p.channels, sw = p.src_w, sh = p.src_h, sstep = sw * cn;
  const bool extrapolated = p.border != Border::Constant && p.border != Border::Transparent;
  const Border bx = extrapolated && sw <= 1 ? Border::Replicate : p.border;
  const Border by = extrapolated && sh <= 1 ? Border::Replicate : p.border;
  double cval[4];
  for (int c = 0; c < 4; ++c) cval[c] = (double)saturate_double<T>(p.border_value[c]);
  for (int64_t y = y0; y < y1; ++y) {
    row_positions(p, map1, map2, y, sx, sy);
    T* out = (T*)pdst + y * p.dst_w * cn;
    for (int64_t x = 0; x < p.dst_w; ++x) {
      const float fx = std::floor(sx[x]), fy = std::floor(sy[x]);
      const int64_t ix = (int64_t)fx, iy = (int64_t)fy;
      float wx[4], wy[4];
      cubic_weights(sx[x] - fx, wx);
      cubic_weights(sy[x] - fy, wy);
      int64_t xo[4], yo[4];
      for (int k = 0; k < 4; ++k) {
        xo[k] = ix - 1 + k >= 0 && ix - 1 + k < sw ? ix - 1 + k : border_index(ix - 1 + k, sw, bx);
        yo[k] = iy - 1 + k >= 0 && iy - 1 + k < sh ? iy - 1 + k : border_index(iy - 1 + k, sh, by);
      }
      T* o = out + x * cn;
      for (int64_t c = 0; c < cn; ++c) {
        const double outside = p.border == Border::Transparent ? (double)o[c] : cval[c];
        double sum = 0;
        for (int i = 0; i < 4; ++i) {
          for (int j = 0; j < 4; ++j) {
            const double v = yo[i] >= 0 && xo[j] >= 0 ? (double)src[yo[i] * sstep + xo[j] * cn + c] : outside;
            sum += (double)((float)(wy[i] * wx[j]) * (float)v);
          }
        }
        o[c] = saturate_double<T>(sum);
      }
    }
  }
}

void CubicWarpRows(const WarpPlan& p, const void* src, const void* map1, const void* map2, void* dst, int64_t y0,
                   int64_t y1) {
  switch (p.dtype) {
    case DType::UInt8: return cubic_rows<uint8_t>(p, src, map1, map2, dst, y0, y1);
    case DType::Int16: return cubic_rows<int16_t>(p, src, map1, map2, dst, y0, y1);
    case DType::Float32: return cubic_rows<float>(p, src, map1, map2, dst, y0, y1);
    default: return cubic_rows<double>(p, src, map1, map2, dst, y0, y1);
  }
}

void FloatWarpRows(const WarpPlan& p, const void* src, const void* map1, const void* map2, void* dst, int64_t y0,
                   int64_t y1) {
  const bool u8 = p.dtype == DType::UInt8;
  switch (p.channels) {
    case 1: return u8 ? float_rows<uint8_t, 1>(p, src, map1, map2, dst, y0, y1)
                      : float_rows<float, 1>(p, src, map1, map2, dst, y0, y1);
    case 3: return u8 ? float_rows<uint8_t, 3>(p, src, map1, map2, dst, y0, y1)
                      : float_rows<float, 3>(p, src, map1, map2, dst, y0, y1);
    default: return u8 ? float_rows<uint8_t, 4>(p, src, map1, map2, dst, y0, y1)
                       : float_rows<float, 4>(p, src, map1, map2, dst, y0, y1);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace cv_warp
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
namespace cv_warp {
HWY_EXPORT(FloatWarpRows);
HWY_EXPORT(CubicWarpRows);

bool uses_float_coordinates(const WarpPlan& p) {
  if (p.interpolation == Interpolation::Cubic) {
    return p.channels <= 4 && p.mapping != Mapping::MapsFixed;
  }
  return (p.dtype == DType::UInt8 || p.dtype == DType::Float32) &&
         (p.channels == 1 || p.channels == 3 || p.channels == 4) &&
         (p.interpolation == Interpolation::Nearest || p.interpolation == Interpolation::Linear) &&
         p.mapping != Mapping::MapsFixed;
}

void warp(const WarpPlan& plan, const void* src, const void* map1, const void* map2, void* dst, ThreadPool* pool) {
  if (!uses_float_coordinates(plan)) return fixed_warp(plan, src, map1, map2, dst, pool);
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, plan.dst_w * plan.channels));
  parallel_for(pool, plan.dst_h, grain, [&](int64_t y0, int64_t y1) {
    if (plan.interpolation == Interpolation::Cubic) {
      HWY_DYNAMIC_DISPATCH(CubicWarpRows)(plan, src, map1, map2, dst, y0, y1);
    } else {
      HWY_DYNAMIC_DISPATCH(FloatWarpRows)(plan, src, map1, map2, dst, y0, y1);
    }
  });
}

}  // namespace cv_warp
}  // namespace cpu
}  // namespace mnnpy
#endif  // HWY_ONCE
