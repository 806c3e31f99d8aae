// The blocked convolution as a bf16 product (backend/cpu/conv_blocked_bf16.h): the patch-row filler
// and the blocked epilogue, compiled per SIMD target (Highway foreach_target) around the bf16
// product of gemm_bf16.cpp, whose block kernels pick their own instructions.
//
// The filler's conversion is float_to_bf16's integer steps on vectors, so its bits are those of
// every other path; the epilogue adds the bias and then the residual to each float32 sum and applies
// the activation with the helpers every blocked kernel uses, so results do not depend on the target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/conv_blocked_bf16.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "backend/cpu/conv_activation-inl.h"

#include <cstring>
#include <vector>

#include "backend/cpu/conv_blocked.h"
#include "backend/cpu/conv_blocked_bf16.h"
#include "mnnpy/thread_pool.h"

#ifndef MNNPY_CONV_BLOCKED_BF16_SHARED_ONCE
#define MNNPY_CONV_BLOCKED_BF16_SHARED_ONCE
namespace mnnpy {
namespace cpu {
namespace conv_blocked_bf16_detail {

// Output pixels (batch included) up to which a layer's patch rows are converted once into scratch,
// where threads would otherwise convert them again: a few MB at most.
constexpr int64_t kPreparedPixelsMax = 2048;
// Rows a thread converts at a time then: small, so that the 49 rows of a 7x7 map spread over threads.
constexpr int64_t kPreparedRowsPerTask = 4;

inline int64_t image_scratch_bytes(const ConvShape& s, bool nchw) {
  return nchw ? round_up(s.batch * s.in_c * s.in_h * s.in_w * (int64_t)sizeof(uint16_t), 64) : 0;
}

}  // namespace conv_blocked_bf16_detail
}  // namespace cpu
}  // namespace mnnpy
#endif  // MNNPY_CONV_BLOCKED_BF16_SHARED_ONCE

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace conv_blocked_bf16_detail;

using DBlock = hn::CappedTag<float, 8>;  // one block of 8 channels: 1 vector (more on narrower targets)

// float32 -> bf16 of n values, n a multiple of 8: round to nearest even, NaN quieted. The bits are
// worked on as unsigned lanes (logical shifts); NaN is found and the result narrowed in signed
// lanes, whose compare and saturating demotion every target has (no value exceeds 0xffff).
HWY_INLINE void block_values_to_bf16(const float* x, int64_t n, uint16_t* out) {
  const DBlock df;
  const hn::RebindToUnsigned<DBlock> du;
  const hn::RebindToSigned<DBlock> di;
  const hn::Rebind<uint16_t, decltype(di)> d16;
  const int64_t L = (int64_t)hn::Lanes(df);
  const auto half = hn::Set(du, 0x7fffu), one = hn::Set(du, 1u), quiet = hn::Set(du, 0x40u);
  const auto magnitude = hn::Set(du, 0x7fffffffu);
  const auto inf = hn::Set(di, 0x7f800000);
  for (int64_t i = 0; i < n; i += L) {
    const auto bits = hn::BitCast(du, hn::LoadU(df, x + i));
    const auto upper = hn::ShiftRight<16>(bits);
    const auto rounded = hn::ShiftRight<16>(hn::Add(bits, hn::Add(half, hn::And(upper, one))));
    const auto nan = hn::Gt(hn::BitCast(di, hn::And(bits, magnitude)), inf);
    const auto result = hn::IfThenElse(nan, hn::BitCast(di, hn::Or(upper, quiet)), hn::BitCast(di, rounded));
    hn::StoreU(hn::DemoteTo(d16, result), d16, out + i);
  }
}

struct Geometry {
  int64_t out_plane = 0;           // Ho * Wo
  int64_t in_image = 0, out_image = 0;  // floats per image
  int64_t taps = 0, depth = 0;     // kh * kw, C * kh * kw
};

Geometry geometry(const ConvShape& s) {
  Geometry g;
  g.out_plane = s.out_h * s.out_w;
  g.in_image = s.in_c * s.in_h * s.in_w;
  g.out_image = s.out_c * g.out_plane;
  g.taps = s.kernel_h * s.kernel_w;
  g.depth = s.in_c * g.taps;
  return g;
}

// Patch rows [m0, m0 + rows) from the blocked input, K in the order [C/8][kh][kw][8].
void fill_blocked_rows(const ConvShape& s, const Geometry& g, const float* x, int64_t m0, int64_t rows,
                       uint16_t* dst, int64_t kp) {
  const int64_t blocks = s.in_c / kChannelBlock, plane = s.in_h * s.in_w * kChannelBlock;
  if (s.is_pointwise()) {
    // A pixel's row is its 8-channel run in each block: block by block, the rows' runs are
    // neighbours in the input (within an image).
    int64_t pixel_at[kBf16RowBlock];
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t m = m0 + r, n = m / g.out_plane, p = m % g.out_plane;
      pixel_at[r] = n * g.in_image + p * kChannelBlock;
    }
    for (int64_t cb = 0; cb < blocks; ++cb)
      for (int64_t r = 0; r < rows; ++r)
        block_values_to_bf16(x + pixel_at[r] + cb * plane, kChannelBlock, dst + r * kp + cb * kChannelBlock);
  } else {
    const int64_t kh = s.kernel_h, kw = s.kernel_w;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t m = m0 + r, n = m / g.out_plane, p = m % g.out_plane;
      const int64_t oy = p / s.out_w, ox = p % s.out_w;
      const int64_t ix0 = ox * s.stride_w - s.pad_left;
      // With dilation 1 and no column outside the image, a kernel row's taps are kw neighbouring
      // pixels: one run of kw * 8 values.
      const bool whole_rows = s.dilation_w == 1 && ix0 >= 0 && ix0 + kw <= s.in_w;
      uint16_t* row = dst + r * kp;
      for (int64_t cb = 0; cb < blocks; ++cb) {
        const float* x_block = x + n * g.in_image + cb * plane;
        for (int64_t ky = 0; ky < kh; ++ky) {
          uint16_t* seg = row + (cb * g.taps + ky * kw) * kChannelBlock;
          const int64_t iy = oy * s.stride_h - s.pad_top + ky * s.dilation_h;
          if (iy < 0 || iy >= s.in_h) {
            std::memset(seg, 0, sizeof(uint16_t) * (size_t)(kw * kChannelBlock));
            continue;
          }
          const float* x_row = x_block + iy * s.in_w * kChannelBlock;
          if (whole_rows) {
            block_values_to_bf16(x_row + ix0 * kChannelBlock, kw * kChannelBlock, seg);
            continue;
          }
          for (int64_t kx = 0; kx < kw; ++kx) {
            const int64_t ix = ix0 + kx * s.dilation_w;
            if (ix < 0 || ix >= s.in_w) std::memset(seg + kx * kChannelBlock, 0, sizeof(uint16_t) * kChannelBlock);
            else block_values_to_bf16(x_row + ix * kChannelBlock, kChannelBlock, seg + kx * kChannelBlock);
          }
        }
      }
    }
  }
  for (int64_t r = 0; r < rows; ++r) std::memset(dst + r * kp + g.depth, 0, sizeof(uint16_t) * (size_t)(kp - g.depth));
}

// Patch rows from an NCHW input already converted to bf16 (xb), K in the order [C][kh][kw]: a
// kernel row inside the image is kw neighbouring values of a plane, copied at once.
void fill_nchw_rows(const ConvShape& s, const Geometry& g, const uint16_t* xb, int64_t m0, int64_t rows,
                    uint16_t* dst, int64_t kp) {
  const int64_t C = s.in_c, kh = s.kernel_h, kw = s.kernel_w, in_plane = s.in_h * s.in_w;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t m = m0 + r, n = m / g.out_plane, p = m % g.out_plane;
    const int64_t oy = p / s.out_w, ox = p % s.out_w;
    const int64_t ix0 = ox * s.stride_w - s.pad_left;
    const bool whole_rows = s.dilation_w == 1 && ix0 >= 0 && ix0 + kw <= s.in_w;
    uint16_t* row = dst + r * kp;
    for (int64_t c = 0; c < C; ++c) {
      const uint16_t* plane = xb + (n * C + c) * in_plane;
      for (int64_t ky = 0; ky < kh; ++ky) {
        uint16_t* seg = row + (c * kh + ky) * kw;
        const int64_t iy = oy * s.stride_h - s.pad_top + ky * s.dilation_h;
        if (iy < 0 || iy >= s.in_h) {
          std::memset(seg, 0, sizeof(uint16_t) * (size_t)kw);
          continue;
        }
        const uint16_t* x_row = plane + iy * s.in_w;
        if (whole_rows) {
          std::memcpy(seg, x_row + ix0, sizeof(uint16_t) * (size_t)kw);
          continue;
        }
        for (int64_t kx = 0; kx < kw; ++kx) {
          const int64_t ix = ix0 + kx * s.dilation_w;
          seg[kx] = ix >= 0 && ix < s.in_w ? x_row[ix] : 0;
        }
      }
    }
    std::memset(row + g.depth, 0, sizeof(uint16_t) * (size_t)(kp - g.depth));
  }
}

// Rows [m0, m0 + rows) and columns [col0, col0 + cols) (whole blocks of 8) of the product into
// the blocked output: y = act(sum + bias + residual).
void store_blocked(const ConvShape& s, const Geometry& g, int64_t m0, int64_t rows, int64_t col0, int64_t cols,
                   const float* result, int64_t ld, const float* bias, const float* residual,
                   const ConvActivation& act, float* y) {
  const DBlock d;
  const int64_t L = (int64_t)hn::Lanes(d);
  int64_t pixel_at[kBf16RowBlock];
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t m = m0 + r, n = m / g.out_plane, p = m % g.out_plane;
    pixel_at[r] = n * g.out_image + p * kChannelBlock;
  }
  for (int64_t j = 0; j < cols; j += kChannelBlock) {
    const int64_t block_at = (col0 + j) / kChannelBlock * g.out_plane * kChannelBlock;
    for (int64_t v = 0; v < kChannelBlock; v += L) {
      const auto b = hn::LoadU(d, bias + col0 + j + v);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t at = pixel_at[r] + block_at + v;
        auto acc = hn::Add(hn::LoadU(d, result + r * ld + j + v), b);
        if (residual) acc = hn::Add(acc, hn::LoadU(d, residual + at));
        hn::StoreU(activate(d, acc, act), d, y + at);
      }
    }
  }
}

void ConvBlockedBf16Impl(const ConvShape& s, bool nchw, const float* x, const PackedBf16B& w, const float* bias,
                         const float* residual, const ConvActivation& act, float* y, void* scratch,
                         ThreadPool* pool, Bf16Path path) {
  const Geometry g = geometry(s);
  const int64_t M = s.batch * g.out_plane;
  if (M == 0) return;
  uint16_t* xb = static_cast<uint16_t*>(scratch);
  if (nchw) {
    // The whole input once (a first layer's input is small): its values are read kh * kw times.
    const int64_t total = s.batch * g.in_image, vectorized = total / kChannelBlock * kChannelBlock;
    block_values_to_bf16(x, vectorized, xb);
    for (int64_t i = vectorized; i < total; ++i) {
      uint32_t bits;
      std::memcpy(&bits, x + i, sizeof bits);
      xb[i] = float_to_bf16(bits);
    }
  }
  auto fill = [&](int64_t m0, int64_t rows, uint16_t* dst, int64_t kp) {
    if (nchw) fill_nchw_rows(s, g, xb, m0, rows, dst, kp);
    else fill_blocked_rows(s, g, x, m0, rows, dst, kp);
  };
  auto store = [&](int64_t m0, int64_t rows, int64_t col0, int64_t cols, const float* result, int64_t ld) {
    store_blocked(s, g, m0, rows, col0, cols, result, ld, bias, residual, act, y);
  };
  const int threads = pool ? pool->num_threads() : 1;
  if (M <= kPreparedPixelsMax && bf16_rows_are_few(M, threads)) {
    const int64_t kp = w.k_padded;
    uint16_t* a = reinterpret_cast<uint16_t*>(static_cast<char*>(scratch) + image_scratch_bytes(s, nchw));
    parallel_for(pool, ceil_div(M, kPreparedRowsPerTask), 1, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t m0 = t * kPreparedRowsPerTask;
        fill(m0, std::min(kPreparedRowsPerTask, M - m0), a + m0 * kp, kp);
      }
    });
    std::memset(a + M * kp, 0, sizeof(uint16_t) * (size_t)((round_up(M, kBf16RowBlock) - M) * kp));
    gemm_bf16_prepared(M, a, w, Bf16BlockStore(store), pool, path);
    return;
  }
  gemm_bf16_rows(M, Bf16RowFiller(fill), w, Bf16BlockStore(store), pool, path);
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
HWY_EXPORT(ConvBlockedBf16Impl);

PackedBf16B conv_blocked_bf16_pack_weights(const ConvShape& s, bool nchw_input, const float* w) {
  const int64_t C = s.in_c, taps = s.kernel_h * s.kernel_w, K = C * taps;
  // W^T rows [Cout][K] with K in the patch rows' order.
  std::vector<float> reordered((size_t)(s.out_c * K));
  for (int64_t o = 0; o < s.out_c; ++o) {
    for (int64_t c = 0; c < C; ++c) {
      for (int64_t tap = 0; tap < taps; ++tap) {
        const int64_t k = nchw_input ? c * taps + tap
                                     : ((c / kChannelBlock) * taps + tap) * kChannelBlock + c % kChannelBlock;
        reordered[(size_t)(o * K + k)] = w[(o * C + c) * taps + tap];
      }
    }
  }
  return pack_b_bf16(K, s.out_c, reordered.data(), K, true);
}

size_t conv_blocked_bf16_scratch_bytes(const ConvShape& s, bool nchw_input, const PackedBf16B& w) {
  const int64_t M = s.batch * s.out_h * s.out_w;
  const int64_t rows = M <= conv_blocked_bf16_detail::kPreparedPixelsMax ? round_up(M, kBf16RowBlock) : 0;
  return (size_t)(conv_blocked_bf16_detail::image_scratch_bytes(s, nchw_input) + rows * w.k_padded * (int64_t)sizeof(uint16_t));
}

void conv2d_blocked_bf16(const ConvShape& s, bool nchw_input, const float* x, const PackedBf16B& w,
                         const float* bias, const float* residual, const ConvActivation& act, float* y,
                         void* scratch, ThreadPool* pool, Bf16Path path) {
  HWY_DYNAMIC_DISPATCH(ConvBlockedBf16Impl)(s, nchw_input, x, w, bias, residual, act, y, scratch, pool, path);
}

}  // namespace cpu
}  // namespace mnnpy
#endif
