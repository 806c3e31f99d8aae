// OpenCV's fixed-point warps: source positions in 1/32 pixel steps (computed per destination
// row as OpenCV's warpAffine, warpPerspective and remap invokers compute them) and tabulated
// 2-D weights (15-bit integers for uint8, float otherwise). Every case that OpenCV 5 does not
// sample at float coordinates comes here: int16 and float64 images, channel counts other than
// 1, 3 and 4, Lanczos (and float64 bicubic) interpolation, fixed-point maps. Also convertMaps
// and getRectSubPix. Plain scalar code, compiled once (no fused multiply-adds, as OpenCV's).
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/cv_warp.h"
#include "mnnpy/thread_pool.h"

namespace mnnpy {
namespace cpu {
namespace cv_warp {

namespace {

constexpr int kTabBits = 5, kTabSize = 1 << kTabBits, kTabSize2 = kTabSize * kTabSize;
constexpr int kCoefBits = 15, kCoefScale = 1 << kCoefBits;

int round_to_int(double v) {  // OpenCV's cvRound of a double: half to even, INT_MIN when out of range
  if (!(v > (double)INT_MIN - 0.5 && v < (double)INT_MAX + 0.5)) return INT_MIN;
  return (int)std::nearbyint(v);
}

int round_to_int(float v) {
  if (!(v > -2147483648.f && v < 2147483648.f)) return INT_MIN;
  return (int)std::nearbyint(v);
}

int16_t saturate_short(int v) { return (int16_t)std::min(std::max(v, -32768), 32767); }

void linear_coeffs(float x, float* c) {
  c[0] = 1.f - x;
  c[1] = x;
}

void cubic_coeffs(float x, float* c) {
  const float a = -0.75f;
  c[0] = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a;
  c[1] = ((a + 2) * x - (a + 3)) * x * x + 1;
  c[2] = ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1;
  c[3] = 1.f - c[0] - c[1] - c[2];
}

void lanczos4_coeffs(float x, float* c) {
  if (x < 1.1920928955078125e-07f) {
    for (int i = 0; i < 8; ++i) c[i] = 0;
    c[3] = 1;
    return;
  }
  const double s45 = 0.70710678118654752440084436210485;
  const double cs[8][2] = {{1, 0}, {-s45, -s45}, {0, 1}, {s45, -s45}, {-1, 0}, {s45, s45}, {0, -1}, {-s45, s45}};
  const double pi = 3.1415926535897932384626433832795;
  float sum = 0;
  const double y0 = -(x + 3) * pi * 0.25, s0 = std::sin(y0), c0 = std::cos(y0);
  for (int i = 0; i < 8; ++i) {
    const double y = -(x + 3 - i) * pi * 0.25;
    c[i] = (float)((cs[i][0] * s0 + cs[i][1] * c0) / (y * y));
    sum += c[i];
  }
  sum = 1.f / sum;
  for (int i = 0; i < 8; ++i) c[i] *= sum;
}

// The 2-D weights of one interpolation for each of the 32 x 32 sub-pixel positions (index
// fy * 32 + fx): float, and 15-bit integers that sum to exactly 1 << 15.
struct WeightTable {
  int ksize = 0;
  std::vector<float> weights;
  std::vector<int16_t> fixed;

  explicit WeightTable(Interpolation mode) {
    ksize = mode == Interpolation::Cubic ? 4 : mode == Interpolation::Lanczos4 ? 8 : 2;
    std::vector<float> one_d(kTabSize * ksize);
    const float scale = 1.f / kTabSize;
    for (int i = 0; i < kTabSize; ++i) {
      float* c = one_d.data() + i * ksize;
      if (ksize == 2) linear_coeffs(i * scale, c);
      else if (ksize == 4) cubic_coeffs(i * scale, c);
      else lanczos4_coeffs(i * scale, c);
    }
    const int k2 = ksize * ksize;
    weights.resize(kTabSize2 * k2);
    fixed.resize(kTabSize2 * k2);
    for (int i = 0; i < kTabSize; ++i) {
      for (int j = 0; j < kTabSize; ++j) {
        float* tab = weights.data() + (i * kTabSize + j) * k2;
        int16_t* itab = fixed.data() + (i * kTabSize + j) * k2;
        int isum = 0;
        for (int a = 0; a < ksize; ++a) {
          const float vy = one_d[i * ksize + a];
          for (int b = 0; b < ksize; ++b) {
            const float v = vy * one_d[j * ksize + b];
            tab[a * ksize + b] = v;
            itab[a * ksize + b] = saturate_short(round_to_int(v * (float)kCoefScale));
            isum += itab[a * ksize + b];
          }
        }
        if (isum != kCoefScale) {
          // Move the rounding error onto one tap, chosen as OpenCV chooses it.
          const int diff = isum - kCoefScale, half = ksize / 2;
          int max_a = half, max_b = half, min_a = half, min_b = half;
          for (int a = half; a < half + 2 && a < ksize; ++a) {
            for (int b = half; b < half + 2 && b < ksize; ++b) {
              if (itab[a * ksize + b] < itab[min_a * ksize + min_b]) min_a = a, min_b = b;
              else if (itab[a * ksize + b] > itab[max_a * ksize + max_b]) max_a = a, max_b = b;
            }
          }
          if (diff < 0) itab[max_a * ksize + max_b] = (int16_t)(itab[max_a * ksize + max_b] - diff);
          else itab[min_a * ksize + min_b] = (int16_t)(itab[min_a * ksize + min_b] - diff);
        }
      }
    }
  }
};

const WeightTable& weight_table(Interpolation mode) {
  static const WeightTable linear(Interpolation::Linear), cubic(Interpolation::Cubic),
      lanczos(Interpolation::Lanczos4);
  return mode == Interpolation::Cubic ? cubic : mode == Interpolation::Lanczos4 ? lanczos : linear;
}

// Per destination pixel of one row: integer source position and (not nearest) the 1/32-pixel
// fraction index fy * 32 + fx, as OpenCV's invokers compute them.
void fixed_row_positions(const WarpPlan& p, const void* map1, const void* map2, int64_t y, int32_t* ix, int32_t* iy,
                         int32_t* frac) {
  const bool nearest = p.interpolation == Interpolation::Nearest;
  const int64_t w = p.dst_w;
  const double* M = p.matrix;
  switch (p.mapping) {
    case Mapping::Affine: {
      constexpr int kAbBits = 10, kAbScale = 1 << kAbBits;
      const int round_delta = nearest ? kAbScale / 2 : kAbScale / kTabSize / 2;
      const int x0 = round_to_int((M[1] * y + M[2]) * kAbScale) + round_delta;
      const int y0 = round_to_int((M[4] * y + M[5]) * kAbScale) + round_delta;
      for (int64_t x = 0; x < w; ++x) {
        const int ad = round_to_int(M[0] * x * kAbScale), bd = round_to_int(M[3] * x * kAbScale);
        if (nearest) {
          ix[x] = saturate_short((x0 + ad) >> kAbBits);
          iy[x] = saturate_short((y0 + bd) >> kAbBits);
        } else {
          const int X = (x0 + ad) >> (kAbBits - kTabBits), Y = (y0 + bd) >> (kAbBits - kTabBits);
          ix[x] = saturate_short(X >> kTabBits);
          iy[x] = saturate_short(Y >> kTabBits);
          frac[x] = ((Y & (kTabSize - 1)) << kTabBits) + (X & (kTabSize - 1));
        }
      }
      return;
    }
    case Mapping::Perspective: {
      // OpenCV walks the destination in blocks of bw columns and sums positions from each
      // block's first column, which decides the last bits of the doubles.
      const int64_t bh = std::min<int64_t>(16, p.dst_h);
      const int64_t bw = std::max<int64_t>(1, std::min<int64_t>(1024 / bh, w));
      for (int64_t xb = 0; xb < w; xb += bw) {
        const double X0 = M[0] * xb + M[1] * y + M[2], Y0 = M[3] * xb + M[4] * y + M[5];
        const double W0 = M[6] * xb + M[7] * y + M[8];
        const int64_t end = std::min(w, xb + bw);
        for (int64_t x = xb; x < end; ++x) {
          const int64_t x1 = x - xb;
          double W = W0 + M[6] * x1;
          W = W != 0 ? (nearest ? 1. / W : kTabSize / W) : 0;
          const double fX = std::max((double)INT_MIN, std::min((double)INT_MAX, (X0 + M[0] * x1) * W));
          const double fY = std::max((double)INT_MIN, std::min((double)INT_MAX, (Y0 + M[3] * x1) * W));
          const int X = round_to_int(fX), Y = round_to_int(fY);
          if (nearest) {
            ix[x] = saturate_short(X);
            iy[x] = saturate_short(Y);
          } else {
            ix[x] = saturate_short(X >> kTabBits);
            iy[x] = saturate_short(Y >> kTabBits);
            frac[x] = ((Y & (kTabSize - 1)) << kTabBits) + (X & (kTabSize - 1));
          }
        }
      }
      return;
    }
    case Mapping::MapsXY:
    case Mapping::MapsXYPacked: {
      const bool packed = p.mapping == Mapping::MapsXYPacked;
      const float* m1 = (const float*)map1 + y * w * (packed ? 2 : 1);
      const float* m2 = packed ? m1 + 1 : (const float*)map2 + y * w;
      const int64_t step = packed ? 2 : 1;
      for (int64_t x = 0; x < w; ++x) {
        float sx = m1[x * step], sy = m2[x * step];
        if (p.relative) sx += (float)x, sy += (float)y;
        if (nearest) {
          ix[x] = saturate_short(round_to_int(sx));
          iy[x] = saturate_short(round_to_int(sy));
        } else {
          const int X = round_to_int(sx * (float)kTabSize), Y = round_to_int(sy * (float)kTabSize);
          ix[x] = saturate_short(X >> kTabBits);
          iy[x] = saturate_short(Y >> kTabBits);
          frac[x] = ((Y & (kTabSize - 1)) << kTabBits) + (X & (kTabSize - 1));
        }
      }
      return;
    }
    case Mapping::MapsFixed: {
      const int16_t* m1 = (const int16_t*)map1 + y * w * 2;
      const int16_t* m2 = map2 ? (const int16_t*)map2 + y * w : nullptr;
      for (int64_t x = 0; x < w; ++x) {
        ix[x] = m1[2 * x];
        iy[x] = m1[2 * x + 1];
        if (p.relative) ix[x] = saturate_short(ix[x] + (int)x), iy[x] = saturate_short(iy[x] + (int)y);
        const int f = m2 ? (m2[x] & (kTabSize2 - 1)) : 0;
        if (!nearest) {
          frac[x] = f;
        } else if (m2) {
          // OpenCV's nearest reading of fixed-point maps steps to the next pixel for fractions
          // below one half (its rounding table is set so).
          ix[x] += (f & (kTabSize - 1)) < kTabSize / 2;
          iy[x] += (f >> kTabBits) < kTabSize / 2;
        }
      }
      return;
    }
  }
}

template <class T> struct Accum { using type = float; using weight = float; };
template <> struct Accum<uint8_t> { using type = int32_t; using weight = int16_t; };
template <> struct Accum<double> { using type = double; using weight = float; };

template <class T> T saturate_from(int32_t v) {  // uint8 fixed point: round the 15-bit sum
  return (T)std::min(std::max((v + (1 << (kCoefBits - 1))) >> kCoefBits, 0), 255);
}
template <class T> T saturate_from(float v) {  // int16 and float32
  if (std::is_same<T, int16_t>::value) {
    const float r = std::nearbyint(v);
    return (T)(r >= 32767.f ? 32767 : r <= -32768.f ? -32768 : (int)r);
  }
  return (T)v;
}
template <class T> T saturate_from(double v) { return (T)v; }

template <class T> T saturate_value(double v) {
  if (std::is_same<T, uint8_t>::value) return (T)std::min(std::max(std::nearbyint(v), 0.0), 255.0);
  if (std::is_same<T, int16_t>::value) return (T)std::min(std::max(std::nearbyint(v), -32768.0), 32767.0);
  return (T)v;
}

template <class T>
void fixed_rows(const WarpPlan& p, const void* psrc, const void* map1, const void* map2, void* pdst, int64_t y0,
                int64_t y1) {
  using WT = typename Accum<T>::type;
  using AT = typename Accum<T>::weight;
  const T* src = (const T*)psrc;
  T* dst = (T*)pdst;
  const int64_t cn = p.channels, sw = p.src_w, sh = p.src_h, w = p.dst_w, sstep = sw * cn;
  const Border border = p.border;
  const bool nearest = p.interpolation == Interpolation::Nearest;
  std::vector<T> cval(cn);
  for (int64_t c = 0; c < cn; ++c) cval[c] = saturate_value<T>(c < 4 ? p.border_value[c] : 0.0);
  std::vector<int32_t> ix(w), iy(w), frac(w);
  const WeightTable* table = nearest ? nullptr : &weight_table(p.interpolation);
  const int k = nearest ? 1 : table->ksize, k2 = k * k;
  // Taps outside the image for a transparent border (pixels that reach it are skipped) follow
  // BORDER_REFLECT_101, as OpenCV's.
  const Border tap_border = border == Border::Transparent ? Border::Reflect101 : border;
  std::vector<int64_t> xo(k), yo(k);
  std::vector<WT> row(cn);
  for (int64_t y = y0; y < y1; ++y) {
    fixed_row_positions(p, map1, map2, y, ix.data(), iy.data(), frac.data());
    T* out = dst + y * w * cn;
    for (int64_t x = 0; x < w; ++x) {
      T* o = out + x * cn;
      const int64_t sx = ix[x], sy = iy[x];
      if (nearest) {
        if (sx >= 0 && sx < sw && sy >= 0 && sy < sh) {
          const T* s = src + sy * sstep + sx * cn;
          for (int64_t c = 0; c < cn; ++c) o[c] = s[c];
        } else if (border == Border::Constant) {
          for (int64_t c = 0; c < cn; ++c) o[c] = cval[c];
        } else if (border != Border::Transparent) {
          const T* s = src + border_index(sy, sh, border) * sstep + border_index(sx, sw, border) * cn;
          for (int64_t c = 0; c < cn; ++c) o[c] = s[c];
        }
        continue;
      }
      const int64_t bx = sx - (k / 2 - 1), by = sy - (k / 2 - 1);
      const bool inside = bx >= 0 && bx + k <= sw && by >= 0 && by + k <= sh;
      if (!inside) {
        if (border == Border::Transparent) {
          if (k == 2 || !(sx >= 0 && sx < sw && sy >= 0 && sy < sh)) continue;
        }
        if (border == Border::Constant && (bx >= sw || bx + k <= 0 || by >= sh || by + k <= 0)) {
          for (int64_t c = 0; c < cn; ++c) o[c] = cval[c];
          continue;
        }
      }
      const AT* wt;
      if (std::is_same<AT, int16_t>::value) wt = (const AT*)(table->fixed.data() + frac[x] * k2);
      else wt = (const AT*)(table->weights.data() + frac[x] * k2);
      for (int i = 0; i < k; ++i) {
        xo[i] = inside ? (bx + i) * cn : border_index(bx + i, sw, tap_border) * cn;
        yo[i] = inside ? (by + i) * sstep : border_index(by + i, sh, tap_border) * sstep;
      }
      for (int64_t c = 0; c < cn; ++c) {
        WT sum = 0;
        for (int i = 0; i < k; ++i) {
          WT part = 0;
          for (int j = 0; j < k; ++j) {
            const WT v = (yo[i] >= 0 && xo[j] >= 0) ? (WT)src[yo[i] + xo[j] + c] : (WT)cval[c];
            part += v * (WT)wt[i * k + j];
          }
          sum += part;
        }
        o[c] = saturate_from<T>(sum);
      }
    }
  }
}

}  // namespace

int64_t border_index(int64_t p, int64_t len, Border border) {
  if (p >= 0 && p < len) return p;
  if (border == Border::Constant || border == Border::Transparent) return -1;
  if (len == 1) return 0;
  switch (border) {
    case Border::Replicate: return p < 0 ? 0 : len - 1;
    case Border::Reflect: {
      const int64_t period = 2 * len;
      int64_t q = p % period;
      if (q < 0) q += period;
      return q < len ? q : period - 1 - q;
    }
    case Border::Reflect101: {
      const int64_t period = 2 * len - 2;
      int64_t q = p % period;
      if (q < 0) q += period;
      return q < len ? q : period - q;
    }
    default: {  // Wrap
      int64_t q = p % len;
      return q < 0 ? q + len : q;
    }
  }
}

void fixed_warp(const WarpPlan& plan, const void* src, const void* map1, const void* map2, void* dst,
                ThreadPool* pool) {
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, plan.dst_w * plan.channels));
  parallel_for(pool, plan.dst_h, grain, [&](int64_t y0, int64_t y1) {
    switch (plan.dtype) {
      case DType::UInt8: return fixed_rows<uint8_t>(plan, src, map1, map2, dst, y0, y1);
      case DType::Int16: return fixed_rows<int16_t>(plan, src, map1, map2, dst, y0, y1);
      case DType::Float32: return fixed_rows<float>(plan, src, map1, map2, dst, y0, y1);
      default: return fixed_rows<double>(plan, src, map1, map2, dst, y0, y1);
    }
  });
}

void convert_maps(bool from_float, bool src_packed, bool dst_packed, bool nearest, int64_t n, const void* map1,
                  const void* map2, void* out1, void* out2, ThreadPool* pool) {
  parallel_for(pool, n, 1 << 14, [&](int64_t i0, int64_t i1) {
    if (from_float) {
      const float* m1 = (const float*)map1;
      const float* m2 = (const float*)map2;
      int16_t* o1 = (int16_t*)out1;
      int16_t* o2 = (int16_t*)out2;
      for (int64_t i = i0; i < i1; ++i) {
        const float sx = src_packed ? m1[2 * i] : m1[i], sy = src_packed ? m1[2 * i + 1] : m2[i];
        if (nearest) {
          o1[2 * i] = saturate_short(round_to_int(sx));
          o1[2 * i + 1] = saturate_short(round_to_int(sy));
        } else {
          const int X = round_to_int(sx * (float)kTabSize), Y = round_to_int(sy * (float)kTabSize);
          o1[2 * i] = saturate_short(X >> kTabBits);
          o1[2 * i + 1] = saturate_short(Y >> kTabBits);
          o2[i] = (int16_t)((Y & (kTabSize - 1)) * kTabSize + (X & (kTabSize - 1)));
        }
      }
      return;
    }
    const int16_t* m1 = (const int16_t*)map1;
    const int16_t* m2 = (const int16_t*)map2;
    float* o1 = (float*)out1;
    float* o2 = (float*)out2;
    const float scale = 1.f / kTabSize;
    for (int64_t i = i0; i < i1; ++i) {
      const int f = m2 ? (m2[i] & (kTabSize2 - 1)) : 0;
      const float sx = m1[2 * i] + (f & (kTabSize - 1)) * scale, sy = m1[2 * i + 1] + (f >> kTabBits) * scale;
      if (dst_packed) {
        o1[2 * i] = sx;
        o1[2 * i + 1] = sy;
      } else {
        o1[i] = sx;
        o2[i] = sy;
      }
    }
  });
}

void rect_sub_pix(DType src_dtype, DType dst_dtype, int64_t src_h, int64_t src_w, int64_t channels, int64_t out_h,
                  int64_t out_w, double cx, double cy, const void* src, void* dst) {
  const float fx = (float)cx - (out_w - 1) * 0.5f, fy = (float)cy - (out_h - 1) * 0.5f;
  const int64_t ipx = (int64_t)std::floor(fx), ipy = (int64_t)std::floor(fy);
  const float a = fx - (float)ipx, b = fy - (float)ipy;
  const float a11 = (1.f - a) * (1.f - b), a12 = a * (1.f - b), a21 = (1.f - a) * b, a22 = a * b;
  const float b1 = 1.f - b, b2 = b;
  const bool fixed = src_dtype == DType::UInt8 && dst_dtype == DType::UInt8;
  // uint8 to uint8: weights in 16-bit fixed point, as OpenCV's.
  const int i11 = round_to_int(a11 * 65536.f), i12 = round_to_int(a12 * 65536.f),
            i21 = round_to_int(a21 * 65536.f), i22 = round_to_int(a22 * 65536.f),
            ib1 = round_to_int(b1 * 65536.f), ib2 = round_to_int(b2 * 65536.f);
  const int64_t cn = channels, sstep = src_w * cn;
  auto at = [&](int64_t r, int64_t c, int64_t ch) -> float {
    return src_dtype == DType::UInt8 ? (float)((const uint8_t*)src)[r * sstep + c * cn + ch]
                                     : ((const float*)src)[r * sstep + c * cn + ch];
  };
  auto at_int = [&](int64_t r, int64_t c, int64_t ch) -> int {
    return ((const uint8_t*)src)[r * sstep + c * cn + ch];
  };
  for (int64_t i = 0; i < out_h; ++i) {
    const int64_t sy = ipy + i;
    // Rows off the image repeat the edge row (both taps).
    int64_t r0 = sy, r1 = sy + 1;
    if (!(sy >= 0 && sy + 1 < src_h)) r0 = r1 = std::min(std::max<int64_t>(sy, 0), src_h - 1);
    for (int64_t j = 0; j < out_w; ++j) {
      const int64_t sx = ipx + j;
      const bool x_inside = sx >= 0 && sx + 1 < src_w;
      const int64_t e = sx < 0 ? 0 : src_w - 1;
      for (int64_t c = 0; c < cn; ++c) {
        const int64_t o = (i * out_w + j) * cn + c;
        if (fixed) {
          const int v = x_inside ? at_int(r0, sx, c) * i11 + at_int(r0, sx + 1, c) * i12 + at_int(r1, sx, c) * i21 +
                                       at_int(r1, sx + 1, c) * i22
                                 : at_int(r0, e, c) * ib1 + at_int(r1, e, c) * ib2;
          ((uint8_t*)dst)[o] = (uint8_t)std::min(std::max((v + (1 << 15)) >> 16, 0), 255);
        } else {
          const float v = x_inside ? at(r0, sx, c) * a11 + at(r0, sx + 1, c) * a12 + at(r1, sx, c) * a21 +
                                         at(r1, sx + 1, c) * a22
                                   : at(r0, e, c) * b1 + at(r1, e, c) * b2;
          ((float*)dst)[o] = v;
        }
      }
    }
  }
}

}  // namespace cv_warp
}  // namespace cpu
}  // namespace mnnpy
