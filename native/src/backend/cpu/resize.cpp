// Resize kernels, compiled once per SIMD target by Highway and chosen at run time.
// Linear and cubic resizes are separable: a block of output rows first resizes the distinct
// input rows it reads horizontally (gathers through a per-column tap table), then blends those
// rows vertically with per-row weights, vectorized across the output width. Nearest resizes
// gather each output row from one input row and copy repeated rows.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/resize.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "backend/cpu/simd_shared-inl.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/resize.h"
#include "mnnpy/thread_pool.h"

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// dst[o] = sum over t of weight[t * out + o] * row[index[t * out + o]].
template <int kTaps>
void horizontal_t(const float* HWY_RESTRICT row, const int32_t* HWY_RESTRICT index, const float* HWY_RESTRICT weight,
                  int64_t out, float* HWY_RESTRICT dst) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const int64_t N = (int64_t)hn::Lanes(d);
  auto vector_at = [&](int64_t o) {
    auto acc = hn::Mul(hn::LoadU(d, weight + o), hn::GatherIndex(d, row, hn::LoadU(di, index + o)));
    for (int t = 1; t < kTaps; ++t) {
      const int64_t at = t * out + o;
      acc = FusedMulAdd(hn::LoadU(d, weight + at), hn::GatherIndex(d, row, hn::LoadU(di, index + at)), acc);
    }
    hn::StoreU(acc, d, dst + o);
  };
  int64_t o = 0;
  if (out >= N) {
    for (; o + N <= out; o += N) vector_at(o);
    if (o < out) vector_at(out - N);  // overlaps the previous vector, rewriting equal values
    return;
  }
  for (; o < out; ++o) {  // rounds as the lanes do
    float acc = 0;
    for (int t = 0; t < kTaps; ++t) acc = std::fma(weight[t * out + o], row[index[t * out + o]], acc);
    dst[o] = acc;
  }
}

// horizontal_t for any number of taps (antialiased downsampling).
void horizontal_any(int taps, const float* HWY_RESTRICT row, const int32_t* HWY_RESTRICT index,
                    const float* HWY_RESTRICT weight, int64_t out, float* HWY_RESTRICT dst) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const int64_t N = (int64_t)hn::Lanes(d);
  int64_t o = 0;
  for (; o + N <= out; o += N) {
    auto acc = hn::Zero(d);
    for (int t = 0; t < taps; ++t) {
      const int64_t at = t * out + o;
      acc = FusedMulAdd(hn::LoadU(d, weight + at), hn::GatherIndex(d, row, hn::LoadU(di, index + at)), acc);
    }
    hn::StoreU(acc, d, dst + o);
  }
  for (; o < out; ++o) {  // rounds as the lanes do
    float acc = 0;
    for (int t = 0; t < taps; ++t) acc = std::fma(weight[t * out + o], row[index[t * out + o]], acc);
    dst[o] = acc;
  }
}

void HorizontalImpl(int taps, const float* row, const int32_t* index, const float* weight, int64_t out, float* dst) {
  switch (taps) {
    case 1: return horizontal_t<1>(row, index, weight, out, dst);
    case 2: return horizontal_t<2>(row, index, weight, out, dst);
    case 4: return horizontal_t<4>(row, index, weight, out, dst);
    default: return horizontal_any(taps, row, index, weight, out, dst);
  }
}

// dst[i] = sum over t of weight[t] * rows[t][i].
void VerticalImpl(int taps, const float* const* rows, const float* weight, int64_t n, float* HWY_RESTRICT dst) {
  const hn::ScalableTag<float> d;
  const int64_t N = (int64_t)hn::Lanes(d);
  int64_t i = 0;
  if (taps == 2) {
    const float* HWY_RESTRICT a = rows[0];
    const float* HWY_RESTRICT b = rows[1];
    const auto wa = hn::Set(d, weight[0]), wb = hn::Set(d, weight[1]);
    for (; i + N <= n; i += N) {
      hn::StoreU(FusedMulAdd(wb, hn::LoadU(d, b + i), hn::Mul(wa, hn::LoadU(d, a + i))), d, dst + i);
    }
    for (; i < n; ++i) dst[i] = std::fma(weight[1], b[i], weight[0] * a[i]);  // as the lanes round
    return;
  }
  for (; i + N <= n; i += N) {
    auto acc = hn::Mul(hn::Set(d, weight[0]), hn::LoadU(d, rows[0] + i));
    for (int t = 1; t < taps; ++t) acc = FusedMulAdd(hn::Set(d, weight[t]), hn::LoadU(d, rows[t] + i), acc);
    hn::StoreU(acc, d, dst + i);
  }
  for (; i < n; ++i) {
    float acc = weight[0] * rows[0][i];  // rounds as the lanes do
    for (int t = 1; t < taps; ++t) acc = std::fma(weight[t], rows[t][i], acc);
    dst[i] = acc;
  }
}

// dst[o] = row[index[o]].
void GatherImpl(const float* HWY_RESTRICT row, const int32_t* HWY_RESTRICT index, int64_t out,
                float* HWY_RESTRICT dst) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const int64_t N = (int64_t)hn::Lanes(d);
  int64_t o = 0;
  for (; o + N <= out; o += N) hn::StoreU(hn::GatherIndex(d, row, hn::LoadU(di, index + o)), d, dst + o);
  for (; o < out; ++o) dst[o] = row[index[o]];
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
HWY_EXPORT(HorizontalImpl);
HWY_EXPORT(VerticalImpl);
HWY_EXPORT(GatherImpl);

namespace {

constexpr int64_t kBlockOutputs = 1 << 15;  // output elements per block of rows

}  // namespace

Resize2D::Resize2D(int64_t planes, ResizeAxis rows, ResizeAxis cols)
    : planes_(planes), rows_(std::move(rows)), cols_(std::move(cols)) {
  const int64_t out_h = rows_.out, out_w = cols_.out, taps = rows_.taps;
  block_rows_ = std::min<int64_t>(std::max<int64_t>(1, kBlockOutputs / std::max<int64_t>(1, out_w)), out_h);
  // Enough blocks to keep threads busy when there are few planes.
  if (planes_ < 16) block_rows_ = std::max<int64_t>(1, std::min(block_rows_, out_h * planes_ / 16));
  if (rows_.taps == 1) return;  // nearest needs no blocks
  row_slot_.assign(taps * out_h, 0);
  block_begin_.push_back(0);
  for (int64_t b0 = 0; b0 < out_h; b0 += block_rows_) {
    const int64_t b1 = std::min(out_h, b0 + block_rows_);
    std::vector<int32_t> inputs;
    for (int64_t o = b0; o < b1; ++o) {
      for (int64_t t = 0; t < taps; ++t) {
        if (t == 0 || rows_.weight[t * out_h + o] != 0.0f) inputs.push_back(rows_.index[t * out_h + o]);
      }
    }
    std::sort(inputs.begin(), inputs.end());
    inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
    for (int64_t o = b0; o < b1; ++o) {
      for (int64_t t = 0; t < taps; ++t) {
        // A tap of weight 0 reads tap 0's row: no input row is resized only to be ignored.
        const int64_t at = (rows_.weight[t * out_h + o] != 0.0f || t == 0) ? t : 0;
        const int32_t wanted = rows_.index[at * out_h + o];
        row_slot_[t * out_h + o] = (int32_t)(std::lower_bound(inputs.begin(), inputs.end(), wanted) - inputs.begin());
      }
    }
    block_inputs_.insert(block_inputs_.end(), inputs.begin(), inputs.end());
    block_begin_.push_back((int32_t)block_inputs_.size());
    max_block_inputs_ = std::max<int64_t>(max_block_inputs_, (int64_t)inputs.size());
  }
}

void Resize2D::run_nearest(const float* x, float* y, ThreadPool* pool) const {
  const int64_t in_h = rows_.in, in_w = cols_.in, out_h = rows_.out, out_w = cols_.out;
  const int64_t grain = std::max<int64_t>(1, kBlockOutputs / std::max<int64_t>(1, out_w));
  parallel_for(pool, planes_ * out_h, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t p = r / out_h, o = r % out_h;
      float* dst = y + r * out_w;
      const int32_t source = rows_.index[o];
      if (r > r0 && o > 0 && rows_.index[o - 1] == source) {
        std::memcpy(dst, dst - out_w, out_w * sizeof(float));  // a repeated input row
        continue;
      }
      const float* row = x + (p * in_h + source) * in_w;
      if (cols_.identity) std::memcpy(dst, row, out_w * sizeof(float));
      else HWY_DYNAMIC_DISPATCH(GatherImpl)(row, cols_.index.data(), out_w, dst);
    }
  });
}

void Resize2D::run(const float* x, float* y, ThreadPool* pool) const {
  const int64_t in_h = rows_.in, in_w = cols_.in, out_h = rows_.out, out_w = cols_.out;
  if (planes_ == 0 || out_h == 0 || out_w == 0) return;
  if (rows_.identity && cols_.identity) {
    std::memcpy(y, x, planes_ * out_h * out_w * sizeof(float));
    return;
  }
  if (rows_.taps == 1) return run_nearest(x, y, pool);
  const int64_t blocks = (int64_t)block_begin_.size() - 1, taps = rows_.taps;
  parallel_for(pool, planes_ * blocks, 1, [&](int64_t i0, int64_t i1) {
    std::vector<float> resized(cols_.identity ? 0 : max_block_inputs_ * out_w);
    std::vector<const float*> slots(max_block_inputs_);
    std::vector<const float*> tap_rows(taps);
    std::vector<float> tap_weights(taps);
    for (int64_t item = i0; item < i1; ++item) {
      const int64_t p = item / blocks, b = item % blocks;
      const float* plane = x + p * in_h * in_w;
      const int64_t first_input = block_begin_[b], inputs = block_begin_[b + 1] - first_input;
      for (int64_t s = 0; s < inputs; ++s) {
        const float* row = plane + (int64_t)block_inputs_[first_input + s] * in_w;
        if (cols_.identity) {
          slots[s] = row;
        } else {
          float* dst = resized.data() + s * out_w;
          HWY_DYNAMIC_DISPATCH(HorizontalImpl)(cols_.taps, row, cols_.index.data(), cols_.weight.data(), out_w, dst);
          slots[s] = dst;
        }
      }
      const int64_t o1 = std::min(out_h, (b + 1) * block_rows_);
      for (int64_t o = b * block_rows_; o < o1; ++o) {
        for (int64_t t = 0; t < taps; ++t) {
          tap_rows[t] = slots[row_slot_[t * out_h + o]];
          tap_weights[t] = rows_.weight[t * out_h + o];
        }
        HWY_DYNAMIC_DISPATCH(VerticalImpl)((int)taps, tap_rows.data(), tap_weights.data(), out_w,
                                           y + (p * out_h + o) * out_w);
      }
    }
  });
}

}  // namespace cpu
}  // namespace mnnpy
#endif
