// Block-quantized weight products, compiled per SIMD target and dispatched at run time.
// Codes become floats without tables: a code u below 2^23 or-ed into the mantissa of 2^23 is the
// float 2^23 + u, and subtracting 2^23 + z leaves u - z exactly. int4 bytes hold an even k in the
// high nibble and the next odd k in the low one, so the activations are split once per call into
// their even and odd halves and each half meets one nibble of the same byte: no shuffles.
// GEMV (a few rows): each block's products are summed in float32 and scaled once per block.
// More rows: slabs of weight rows are dequantized (in the split order, where int4 needs it: a
// product does not depend on the order of k as long as both operands share it) and multiplied by
// the float GEMM.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/weight_quant.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>

#include "backend/cpu/gemm.h"
#include "backend/cpu/thread_buffers.h"
#include "backend/cpu/weight_quant.h"
#include "mnnpy/thread_pool.h"

#ifndef MNNPY_WEIGHT_QUANT_SHARED_ONCE
#define MNNPY_WEIGHT_QUANT_SHARED_ONCE
namespace mnnpy {
namespace cpu {
namespace weight_quant_detail {

constexpr uint32_t kTwoPow23Bits = 0x4B000000u;  // the float 2^23
constexpr float kTwoPow23 = 8388608.0f;
// Weight rows dequantized at a time on the GEMM path: 64 rows of K = 4096 are 1 MB of floats.
constexpr int64_t kSlabRows = 64;
// Bytes of codes a GEMV task reads at least, so that a task outweighs waking a thread.
constexpr int64_t kGemvTaskBytes = int64_t(1) << 16;

inline float zero_point(const BlockQuantWeights& w, int64_t row, int64_t block) {
  return w.zeros ? (float)w.zeros[row * (w.k / w.block) + block] : (float)(1 << (w.bits - 1));
}

}  // namespace weight_quant_detail
}  // namespace cpu
}  // namespace mnnpy
#endif  // MNNPY_WEIGHT_QUANT_SHARED_ONCE

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace weight_quant_detail;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Lanes() codes at p, unsigned, widened to 32 bits.
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> load_codes(const uint8_t* HWY_RESTRICT p) {
  const hn::RebindToUnsigned<DF> du;
  const hn::Rebind<uint8_t, DF> d8;
  return hn::PromoteTo(du, hn::LoadU(d8, p));
}

// u - z as floats, exactly; zero_bias holds 2^23 + z.
template <class VU>
HWY_INLINE VF code_values(VU u, VF zero_bias) {
  const DF d;
  const hn::RebindToUnsigned<DF> du;
  return hn::Sub(hn::BitCast(d, hn::Or(u, hn::Set(du, kTwoPow23Bits))), zero_bias);
}

// The values of Lanes() bytes of int4 codes: high nibbles (even k) and low nibbles (odd k).
HWY_INLINE void int4_values(const uint8_t* HWY_RESTRICT p, VF zero_bias, VF& even, VF& odd) {
  const hn::RebindToUnsigned<DF> du;
  const auto u = load_codes(p);
  even = code_values(hn::ShiftRight<4>(u), zero_bias);
  odd = code_values(hn::And(u, hn::Set(du, 15u)), zero_bias);
}

// c[m0 + i][n0 + r] for r < NR, i < MR: NR weight rows against MR activation rows, each pair
// with its own accumulator (independent chains). x: activation rows of K floats, int4: split
// into even ks then odd ks.
template <int BITS, int NR, int MR>
HWY_INLINE void gemv_tile(const BlockQuantWeights& w, const float* HWY_RESTRICT x, int64_t n0, int64_t m0,
                          const float* HWY_RESTRICT bias, float* HWY_RESTRICT c) {
  const DF d;
  const int64_t L = (int64_t)hn::Lanes(d);
  const int64_t K = w.k, blocks = K / w.block, row_bytes = K * BITS / 8, block_bytes = w.block * BITS / 8;
  const uint8_t* rows[NR];
  for (int r = 0; r < NR; ++r) rows[r] = w.codes + (n0 + r) * row_bytes;
  const float* xr[MR];
  for (int i = 0; i < MR; ++i) xr[i] = x + (m0 + i) * K;
  VF acc[NR][MR];
  for (int r = 0; r < NR; ++r)
    for (int i = 0; i < MR; ++i) acc[r][i] = hn::Zero(d);
  float zero_bias[NR];  // 2^23 + the zero point; symmetric: the same for every block
  for (int r = 0; r < NR; ++r) zero_bias[r] = kTwoPow23 + zero_point(w, n0 + r, 0);
  for (int64_t b = 0; b < blocks; ++b) {
    // Two partial sums per pair (even and odd ks, or alternate vectors for int8): chains of half
    // the length, so the multiply-add latency overlaps across them.
    VF part[NR][MR][2];
    for (int r = 0; r < NR; ++r)
      for (int i = 0; i < MR; ++i) part[r][i][0] = part[r][i][1] = hn::Zero(d);
    if (w.zeros) {
      for (int r = 0; r < NR; ++r) zero_bias[r] = kTwoPow23 + (float)w.zeros[(n0 + r) * blocks + b];
    }
    const int64_t begin = b * block_bytes, end = begin + block_bytes;
    if constexpr (BITS == 4) {
      for (int64_t at = begin; at < end; at += L) {
        for (int r = 0; r < NR; ++r) {
          VF even, odd;
          int4_values(rows[r] + at, hn::Set(d, zero_bias[r]), even, odd);
          for (int i = 0; i < MR; ++i) {
            part[r][i][0] = hn::MulAdd(even, hn::LoadU(d, xr[i] + at), part[r][i][0]);
            part[r][i][1] = hn::MulAdd(odd, hn::LoadU(d, xr[i] + K / 2 + at), part[r][i][1]);
          }
        }
      }
    } else {  // block_bytes is a multiple of 2 L on every target (blocks of 32 and up, at most 16 lanes)
      for (int64_t at = begin; at < end; at += 2 * L) {
        for (int r = 0; r < NR; ++r) {
          const VF zb = hn::Set(d, zero_bias[r]);
          const VF v0 = code_values(load_codes(rows[r] + at), zb);
          const VF v1 = code_values(load_codes(rows[r] + at + L), zb);
          for (int i = 0; i < MR; ++i) {
            part[r][i][0] = hn::MulAdd(v0, hn::LoadU(d, xr[i] + at), part[r][i][0]);
            part[r][i][1] = hn::MulAdd(v1, hn::LoadU(d, xr[i] + at + L), part[r][i][1]);
          }
        }
      }
    }
    for (int r = 0; r < NR; ++r) {
      const VF scale = hn::Set(d, w.scales[(n0 + r) * blocks + b]);
      for (int i = 0; i < MR; ++i) acc[r][i] = hn::MulAdd(hn::Add(part[r][i][0], part[r][i][1]), scale, acc[r][i]);
    }
  }
  for (int r = 0; r < NR; ++r) {
    for (int i = 0; i < MR; ++i) {
      const float sum = hn::GetLane(hn::SumOfLanes(d, acc[r][i]));
      c[(m0 + i) * w.n + n0 + r] = bias ? sum + bias[n0 + r] : sum;
    }
  }
}

// Weight rows [n, n + NR) against every activation row, four activation rows at a time: the
// weight rows are decoded once per four activation rows while they sit in L1.
template <int BITS, int NR>
HWY_INLINE void gemv_weight_rows(const BlockQuantWeights& w, const float* x, int64_t m, int64_t n,
                                 const float* bias, float* c) {
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) gemv_tile<BITS, NR, 4>(w, x, n, i, bias, c);
  switch (m - i) {
    case 3: gemv_tile<BITS, NR, 3>(w, x, n, i, bias, c); break;
    case 2: gemv_tile<BITS, NR, 2>(w, x, n, i, bias, c); break;
    case 1: gemv_tile<BITS, NR, 1>(w, x, n, i, bias, c); break;
    default: break;
  }
}

template <int BITS, int NR>
void gemv_rows(const BlockQuantWeights& w, const float* x, int64_t m, int64_t n0, int64_t n1, const float* bias,
               float* c) {
  int64_t n = n0;
  for (; n + NR <= n1; n += NR) gemv_weight_rows<BITS, NR>(w, x, m, n, bias, c);
  for (; n < n1; ++n) gemv_weight_rows<BITS, 1>(w, x, m, n, bias, c);
}

template <int BITS>
void gemv(const BlockQuantWeights& w, const float* x, int64_t m, int64_t n0, int64_t n1, const float* bias,
          float* c) {
  // One activation row: four weight rows at once keep four sums in flight; two rows: two by two.
  if (m == 1) gemv_rows<BITS, 2>(w, x, m, n0, n1, bias, c);
  else if (m == 2) gemv_rows<BITS, 2>(w, x, m, n0, n1, bias, c);
  else gemv_rows<BITS, 1>(w, x, m, n0, n1, bias, c);
}

void GemvImpl(const BlockQuantWeights& w, const float* x, int64_t m, int64_t n0, int64_t n1, const float* bias,
              float* c) {
  if (w.bits == 4) gemv<4>(w, x, m, n0, n1, bias, c);
  else gemv<8>(w, x, m, n0, n1, bias, c);
}

// Rows [r0, r1) of W as floats (u - z) * scale, int4 in the split order (even ks, then odd ks).
void DequantizeRowsImpl(const BlockQuantWeights& w, int64_t r0, int64_t r1, float* HWY_RESTRICT out) {
  const DF d;
  const int64_t L = (int64_t)hn::Lanes(d);
  const int64_t K = w.k, blocks = K / w.block, row_bytes = K * w.bits / 8, block_bytes = w.block * w.bits / 8;
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* HWY_RESTRICT row = w.codes + r * row_bytes;
    float* HWY_RESTRICT dst = out + (r - r0) * K;
    for (int64_t b = 0; b < blocks; ++b) {
      const VF scale = hn::Set(d, w.scales[r * blocks + b]);
      const VF zero_bias = hn::Set(d, kTwoPow23 + zero_point(w, r, b));
      for (int64_t at = b * block_bytes; at < (b + 1) * block_bytes; at += L) {
        if (w.bits == 4) {
          VF even, odd;
          int4_values(row + at, zero_bias, even, odd);
          hn::StoreU(hn::Mul(even, scale), d, dst + at);
          hn::StoreU(hn::Mul(odd, scale), d, dst + K / 2 + at);
        } else {
          hn::StoreU(hn::Mul(code_values(load_codes(row + at), zero_bias), scale), d, dst + at);
        }
      }
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
HWY_EXPORT(GemvImpl);
HWY_EXPORT(DequantizeRowsImpl);

using namespace weight_quant_detail;

size_t weight_quant_scratch_floats(int64_t m, const BlockQuantWeights& w) {
  return w.bits == 4 ? (size_t)(m * w.k) : 0;
}

void weight_quant_matmul(const float* a, int64_t m, const BlockQuantWeights& w, const float* bias, float* c,
                         float* scratch, ThreadPool* pool) {
  if (m == 0 || w.n == 0) return;
  const int64_t K = w.k, N = w.n;
  const float* x = a;
  if (w.bits == 4) {  // activations split into even and odd ks, the order of the nibbles
    for (int64_t i = 0; i < m; ++i) {
      const float* src = a + i * K;
      float* even = scratch + i * K;
      float* odd = even + K / 2;
      for (int64_t j = 0; j < K / 2; ++j) {
        even[j] = src[2 * j];
        odd[j] = src[2 * j + 1];
      }
    }
    x = scratch;
  }
  if (m <= kWeightQuantGemvRows) {
    const int64_t grain = std::max<int64_t>(4, kGemvTaskBytes / std::max<int64_t>(1, K * w.bits / 8));
    parallel_for(pool, N, grain, [&](int64_t n0, int64_t n1) {
      HWY_DYNAMIC_DISPATCH(GemvImpl)(w, x, m, n0, n1, bias, c);
    });
    return;
  }
  parallel_for(pool, ceil_div(N, kSlabRows), 1, [&](int64_t s0, int64_t s1) {
    float* slab = thread_buffer(0, (size_t)(kSlabRows * K));
    for (int64_t s = s0; s < s1; ++s) {
      const int64_t r0 = s * kSlabRows, r1 = std::min(N, r0 + kSlabRows);
      HWY_DYNAMIC_DISPATCH(DequantizeRowsImpl)(w, r0, r1, slab);
      if (bias) {
        for (int64_t i = 0; i < m; ++i) std::copy(bias + r0, bias + r1, c + i * N + r0);
      }
      gemm(DType::Float32, m, r1 - r0, K, x, K, false, slab, K, true, c + r0, N, bias != nullptr, nullptr);
    }
  });
}

}  // namespace cpu
}  // namespace mnnpy
#endif
