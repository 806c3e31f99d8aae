// Depthwise convolution kernels, compiled per SIMD target (Highway foreach_target) and dispatched at
// run time.
//
// A plane is computed in blocks of kBlockRows output rows, vectorized along the output width. The
// input rows a block needs are staged once each into a small ring of zero-padded rows (split into
// stride phases for stride 2, so that every tap is one unaligned load): the ring stays in L1
// whatever the plane's size, rows above and below the image read a shared zero row, and no tap
// needs a bounds check. The block's output rows keep independent accumulators, so the FMA chains
// of one row do not wait on each other; with the kernel size and stride known at compile time
// (3x3 and 5x5, stride 1 and 2) each staged vector is loaded once and feeds every output row of
// the block that uses it. Bias and activation are applied before the result leaves the registers.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/depthwise.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "backend/cpu/conv_activation-inl.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "backend/cpu/depthwise.h"
#include "backend/cpu/thread_buffers.h"
#include "mnnpy/thread_pool.h"

#ifndef MNNPY_DEPTHWISE_SHARED_ONCE
#define MNNPY_DEPTHWISE_SHARED_ONCE
namespace mnnpy {
namespace cpu {
namespace depthwise_detail {

// The rows staged per task live in this thread's buffer slot 0.
inline float* stage_buffer(size_t floats) { return thread_buffer(0, floats); }

}  // namespace depthwise_detail
}  // namespace cpu
}  // namespace mnnpy
#endif  // MNNPY_DEPTHWISE_SHARED_ONCE

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace depthwise_detail;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Output rows computed together: their accumulators (and, for 3x3, the nine weight vectors) fit the
// 16 vector registers of AVX2.
constexpr int kBlockRows = 4;

// How the input rows of one layer are staged.
struct StageLayout {
  int64_t wo_vec = 0;      // output width rounded up to whole vectors: every load stays in the row
  int64_t phase_len = 0;   // floats per stride phase: padded column m * sw + q is phase q, position m
  int64_t row_floats = 0;  // floats per staged row (all phases), a multiple of 16
  int64_t window = 0;      // input rows read by one block of output rows
  int64_t ring_rows = 0;   // staged rows kept: a power of two >= window, so a row's slot is a mask
  // Per phase, the positions [lo, hi) that hold input values; the rest of a staged row is padding,
  // the same zeros for every row, so it is written once per task.
  std::vector<int64_t> lo, hi;
};

StageLayout stage_layout(const ConvShape& s) {
  const DF d;
  StageLayout g;
  g.wo_vec = round_up(s.out_w, (int64_t)hn::Lanes(d));
  const int64_t padded_w = (g.wo_vec - 1) * s.stride_w + (s.kernel_w - 1) * s.dilation_w + 1;
  g.phase_len = ceil_div(padded_w, s.stride_w);
  g.row_floats = round_up(s.stride_w * g.phase_len, 16);
  g.window = (kBlockRows - 1) * s.stride_h + (s.kernel_h - 1) * s.dilation_h + 1;
  g.ring_rows = 1;
  while (g.ring_rows < g.window) g.ring_rows *= 2;
  const int64_t sw = s.stride_w;
  for (int64_t q = 0; q < sw; ++q) {
    // Positions m whose input column m * sw + q - pad_left lies inside the row.
    const int64_t first = s.pad_left - q > 0 ? ceil_div(s.pad_left - q, sw) : 0;
    const int64_t end = s.in_w + s.pad_left - q > 0 ? ceil_div(s.in_w + s.pad_left - q, sw) : 0;
    const int64_t lo = std::min(first, g.phase_len);
    g.lo.push_back(lo);
    g.hi.push_back(std::max(lo, std::min(end, g.phase_len)));
  }
  return g;
}

// phase[m] = in[m * 2] for m in [lo, hi): the even elements of a stretch of input row.
HWY_INLINE void take_even(const float* in, float* phase, int64_t lo, int64_t hi) {
  int64_t m = lo;
#if HWY_TARGET != HWY_SCALAR
  const DF d;
  const int64_t L = (int64_t)hn::Lanes(d);
  // Two vectors in[2m .. 2m + 2L - 1] give L even elements; the last odd one must still be inside
  // the valid stretch, which ends at in[2 * hi - 2].
  for (; m + L < hi; m += L) {
    const VF first = hn::LoadU(d, in + 2 * m), second = hn::LoadU(d, in + 2 * m + L);
    hn::StoreU(hn::ConcatEven(d, second, first), d, phase + m);
  }
#endif
  for (; m < hi; ++m) phase[m] = in[2 * m];
}

// dst[0, n) = src[0, n) in vectors; the last vector overlaps the one before instead of running
// past n (which would overwrite the padding after it).
HWY_INLINE void copy_floats(const float* src, float* dst, int64_t n) {
  const DF d;
  const int64_t L = (int64_t)hn::Lanes(d);
  if (n < L) {
    for (int64_t m = 0; m < n; ++m) dst[m] = src[m];
    return;
  }
  for (int64_t m = 0; m + L < n; m += L) hn::StoreU(hn::LoadU(d, src + m), d, dst + m);
  hn::StoreU(hn::LoadU(d, src + n - L), d, dst + n - L);
}

// Stages the values of input row `in` into a staged row whose padding is already zero.
HWY_INLINE void stage_row(const ConvShape& s, const StageLayout& g, const float* in, float* row) {
  const int64_t sw = s.stride_w;
  for (int64_t q = 0; q < sw; ++q) {
    float* phase = row + q * g.phase_len;
    const int64_t lo = g.lo[q], hi = g.hi[q];
    const float* in_q = in + q - s.pad_left;
    if (sw == 1) {
      copy_floats(in_q + lo, phase + lo, hi - lo);
    } else if (sw == 2) {
      take_even(in_q, phase, lo, hi);
    } else {
      for (int64_t m = lo; m < hi; ++m) phase[m] = in_q[m * sw];
    }
  }
}

// Applies the activation and stores one vector of each block row at column ox0 (only the columns
// below Wo).
HWY_INLINE void store_block(VF* acc, const ConvActivation& act, float* const* out, int64_t ox0, int64_t Wo) {
  const DF d;
  const int64_t L = (int64_t)hn::Lanes(d);
  for (int r = 0; r < kBlockRows; ++r) {
    const VF v = activate(d, acc[r], act);
    if (ox0 + L <= Wo) {
      hn::StoreU(v, d, out[r] + ox0);
    } else {
      HWY_ALIGN float tail[hn::MaxLanes(DF())];
      hn::Store(v, d, tail);
      std::memcpy(out[r] + ox0, tail, sizeof(float) * (Wo - ox0));
    }
  }
}

// One block for a K x K kernel at stride S, dilation 1. rows: the window's staged rows; wv: the
// K * K weights, each broadcast to a vector.
template <int K, int S>
HWY_NOINLINE void block_fixed(const float* const* rows, int64_t phase_len, const VF* wv, VF bias,
                              const ConvActivation& act, float* const* out, int64_t Wo, int64_t wo_vec) {
  const DF d;
  const int64_t L = (int64_t)hn::Lanes(d);
  constexpr int kWindow = (kBlockRows - 1) * S + K;
  for (int64_t ox0 = 0; ox0 < wo_vec; ox0 += L) {
    VF acc[kBlockRows];
    for (int r = 0; r < kBlockRows; ++r) acc[r] = bias;
    // Input row i feeds block row r through kernel row i - r * S; the conditions fold away once
    // the loops are unrolled.
#pragma GCC unroll 16
    for (int i = 0; i < kWindow; ++i) {
#pragma GCC unroll 8
      for (int kx = 0; kx < K; ++kx) {
        const VF v = hn::LoadU(d, rows[i] + (kx % S) * phase_len + kx / S + ox0);
#pragma GCC unroll 4
        for (int r = 0; r < kBlockRows; ++r) {
          const int ky = i - r * S;
          if (ky >= 0 && ky < K) acc[r] = hn::MulAdd(wv[ky * K + kx], v, acc[r]);
        }
      }
    }
    store_block(acc, act, out, ox0, Wo);
  }
}

// One block for any kernel, stride and dilation. tap_col[kx]: where tap column kx reads in a
// staged row (its phase and position).
HWY_NOINLINE void block_generic(const ConvShape& s, const float* const* rows, const int64_t* tap_col, const float* w,
                                VF bias, const ConvActivation& act, float* const* out, int64_t wo_vec) {
  const DF d;
  const int64_t L = (int64_t)hn::Lanes(d);
  for (int64_t ox0 = 0; ox0 < wo_vec; ox0 += L) {
    VF acc[kBlockRows];
    for (int r = 0; r < kBlockRows; ++r) acc[r] = bias;
    for (int64_t ky = 0; ky < s.kernel_h; ++ky) {
      const float* row[kBlockRows];
      for (int r = 0; r < kBlockRows; ++r) row[r] = rows[r * s.stride_h + ky * s.dilation_h] + ox0;
      for (int64_t kx = 0; kx < s.kernel_w; ++kx) {
        const VF wv = hn::Set(d, w[ky * s.kernel_w + kx]);
        for (int r = 0; r < kBlockRows; ++r) acc[r] = hn::MulAdd(wv, hn::LoadU(d, row[r] + tap_col[kx]), acc[r]);
      }
    }
    store_block(acc, act, out, ox0, s.out_w);
  }
}

enum class DepthwiseVariant { k3s1, k3s2, k5s1, k5s2, kGeneric };

DepthwiseVariant depthwise_variant(const ConvShape& s) {
  if (s.kernel_h != s.kernel_w || s.stride_h != s.stride_w || s.dilation_h != 1 || s.dilation_w != 1)
    return DepthwiseVariant::kGeneric;
  const int64_t k = s.kernel_h, st = s.stride_h;
  if (k == 3 && st == 1) return DepthwiseVariant::k3s1;
  if (k == 3 && st == 2) return DepthwiseVariant::k3s2;
  if (k == 5 && st == 1) return DepthwiseVariant::k5s1;
  if (k == 5 && st == 2) return DepthwiseVariant::k5s2;
  return DepthwiseVariant::kGeneric;
}

// Output rows [oy_begin, oy_end) of one plane. ring: ring_rows staged rows (padding zeroed), then a
// zero row and a row that takes the outputs of block rows past oy_end; slot_row: which input row
// each slot holds.
void depthwise_plane_rows(const ConvShape& s, const StageLayout& g, DepthwiseVariant variant, const int64_t* tap_col,
                          const float* x_plane, const float* wc, float bc, const ConvActivation& act, float* y_plane,
                          int64_t oy_begin, int64_t oy_end, float* ring, int64_t* slot_row, const float** rows) {
  const DF d;
  float* zero_row = ring + g.ring_rows * g.row_floats;
  float* discard = zero_row + g.row_floats;
  std::fill(slot_row, slot_row + g.ring_rows, int64_t(-1));
  VF wv[25];
  const int64_t taps = s.kernel_h * s.kernel_w;
  if (variant != DepthwiseVariant::kGeneric)
    for (int64_t t = 0; t < taps; ++t) wv[t] = hn::Set(d, wc[t]);
  const VF bias = hn::Set(d, bc);
  const int64_t H = s.in_h, Wo = s.out_w;
  for (int64_t oy0 = oy_begin; oy0 < oy_end; oy0 += kBlockRows) {
    // Consecutive blocks overlap in their input rows; a row keeps its slot (iy mod ring_rows) while
    // it is needed, since the rows of one window differ mod ring_rows >= window.
    const int64_t iy0 = oy0 * s.stride_h - s.pad_top;
    for (int64_t i = 0; i < g.window; ++i) {
      const int64_t iy = iy0 + i;
      if (iy < 0 || iy >= H) {
        rows[i] = zero_row;
        continue;
      }
      const int64_t slot = iy & (g.ring_rows - 1);
      float* staged = ring + slot * g.row_floats;
      if (slot_row[slot] != iy) {
        stage_row(s, g, x_plane + iy * s.in_w, staged);
        slot_row[slot] = iy;
      }
      rows[i] = staged;
    }
    float* out[kBlockRows];
    for (int r = 0; r < kBlockRows; ++r) out[r] = oy0 + r < oy_end ? y_plane + (oy0 + r) * Wo : discard;
    switch (variant) {
      case DepthwiseVariant::k3s1: block_fixed<3, 1>(rows, g.phase_len, wv, bias, act, out, Wo, g.wo_vec); break;
      case DepthwiseVariant::k3s2: block_fixed<3, 2>(rows, g.phase_len, wv, bias, act, out, Wo, g.wo_vec); break;
      case DepthwiseVariant::k5s1: block_fixed<5, 1>(rows, g.phase_len, wv, bias, act, out, Wo, g.wo_vec); break;
      case DepthwiseVariant::k5s2: block_fixed<5, 2>(rows, g.phase_len, wv, bias, act, out, Wo, g.wo_vec); break;
      default: block_generic(s, rows, tap_col, wc, bias, act, out, g.wo_vec); break;
    }
  }
}

void ConvDepthwiseImpl(const ConvShape& s, const float* x, const float* w, const float* bias,
                       const ConvActivation& act, float* y, ThreadPool* pool) {
  const int64_t Ho = s.out_h, Wo = s.out_w, kh = s.kernel_h, kw = s.kernel_w;
  if (Ho == 0 || Wo == 0 || s.batch == 0 || s.in_c == 0) return;
  const StageLayout g = stage_layout(s);
  const DepthwiseVariant variant = depthwise_variant(s);
  std::vector<int64_t> tap_col(kw);
  for (int64_t kx = 0; kx < kw; ++kx) {
    const int64_t off = kx * s.dilation_w;
    tap_col[kx] = (off % s.stride_w) * g.phase_len + off / s.stride_w;
  }
  // Tasks: planes, split into row chunks when there are too few planes to keep the threads busy.
  const int64_t planes = s.batch * s.in_c;
  const int threads = pool ? pool->num_threads() : 1;
  const int64_t row_blocks = ceil_div(Ho, kBlockRows);
  int64_t chunks = 1;
  if (threads > 1 && planes < 4 * threads) chunks = std::min(row_blocks, ceil_div(4 * threads, planes));
  const int64_t chunk_rows = ceil_div(row_blocks, chunks) * kBlockRows;
  chunks = ceil_div(Ho, chunk_rows);
  const size_t ring_floats = (size_t)((g.ring_rows + 2) * g.row_floats);
  auto body = [&](int64_t t0, int64_t t1) {
    float* ring = stage_buffer(ring_floats);
    std::fill(ring, ring + ring_floats, 0.f);
    std::vector<int64_t> slot_row(g.ring_rows);
    std::vector<const float*> rows(g.window);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t plane = t / chunks, chunk = t % chunks;
      const int64_t c = plane % s.in_c;
      const int64_t oy_begin = chunk * chunk_rows, oy_end = std::min(Ho, oy_begin + chunk_rows);
      depthwise_plane_rows(s, g, variant, tap_col.data(), x + plane * s.in_h * s.in_w, w + c * kh * kw,
                           bias ? bias[c] : 0.f, act, y + plane * Ho * Wo, oy_begin, oy_end, ring, slot_row.data(),
                           rows.data());
    }
  };
  const int64_t task_macs = std::max<int64_t>(1, chunk_rows * Wo * kh * kw);
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 15) / task_macs);
  parallel_for(pool, planes * chunks, grain, body);
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
HWY_EXPORT(ConvDepthwiseImpl);

void conv2d_depthwise(const ConvShape& s, const float* x, const float* w, const float* bias,
                      const ConvActivation& act, float* y, ThreadPool* pool) {
  HWY_DYNAMIC_DISPATCH(ConvDepthwiseImpl)(s, x, w, bias, act, y, pool);
}

}  // namespace cpu
}  // namespace mnnpy
#endif
