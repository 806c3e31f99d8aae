// CPU kernels of the 8-bit ops of ops/quantized_elementwise.cpp, compiled per SIMD target and
// dispatched at run time, in the uint8 domain of quantized_elementwise.h: the same instructions on
// every target, scalar tails included (tails run the vector code on a padded copy). QLinearAdd's
// and QLinearMul's vector code is quantized_elementwise-inl.h's.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/quantized_elementwise_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "backend/cpu/quantized_elementwise-inl.h"
#include "backend/cpu/simd_shared-inl.h"
#include "backend/cpu/thread_buffers.h"
#include "mnnpy/backend.h"
#include "mnnpy/thread_pool.h"

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace quantized_elementwise_detail;
using namespace quantized_binary;

void AddRowImpl(const uint8_t* a, int64_t a_step, const uint8_t* b, int64_t b_step, uint8_t* y, int64_t n,
                const BinaryParams& p) {
  binary_row<false>(a, a_step, b, b_step, y, n, p);
}

void MulRowImpl(const uint8_t* a, int64_t a_step, const uint8_t* b, int64_t b_step, uint8_t* y, int64_t n,
                const BinaryParams& p) {
  binary_row<true>(a, a_step, b, b_step, y, n, p);
}

// sums[i] += x[i] ^ flip for i < n.
void AccumulateBytesImpl(const uint8_t* HWY_RESTRICT x, int64_t n, uint8_t flip, int32_t* HWY_RESTRICT sums) {
  const DI di;
  const int64_t L = (int64_t)hn::Lanes(di);
  int64_t i = 0;
  for (; i + L <= n; i += L) hn::StoreU(hn::Add(hn::LoadU(di, sums + i), load_bytes(x + i, flip)), di, sums + i);
  for (; i < n; ++i) sums[i] += (uint8_t)(x[i] ^ flip);
}

// Sum of x[i] ^ flip for i < n.
int64_t SumBytesImpl(const uint8_t* HWY_RESTRICT x, int64_t n, uint8_t flip) {
  const DI di;
  const int64_t L = (int64_t)hn::Lanes(di);
  int64_t total = 0, i = 0;
  // Blocks short enough that an int32 lane cannot overflow (255 * 2^20).
  constexpr int64_t kBlock = int64_t(1) << 20;
  while (i + L <= n) {
    const int64_t end = std::min(n, i + kBlock) / L * L;
    VI acc = hn::Zero(di);
    for (; i < end; i += L) acc = hn::Add(acc, load_bytes(x + i, flip));
    total += hn::GetLane(hn::SumOfLanes(di, acc));
  }
  for (; i < n; ++i) total += (uint8_t)(x[i] ^ flip);
  return total;
}

// m[i] = max(m[i], x[i] ^ flip) for i < n.
void MaxBytesImpl(const uint8_t* HWY_RESTRICT x, int64_t n, uint8_t flip, uint8_t* HWY_RESTRICT m) {
  const hn::ScalableTag<uint8_t> d8;
  const int64_t L = (int64_t)hn::Lanes(d8);
  const auto f = hn::Set(d8, flip);
  int64_t i = 0;
  for (; i + L <= n; i += L) hn::StoreU(hn::Max(hn::LoadU(d8, m + i), hn::Xor(hn::LoadU(d8, x + i), f)), d8, m + i);
  for (; i < n; ++i) m[i] = std::max<uint8_t>(m[i], (uint8_t)(x[i] ^ flip));
}

// Windows of channels-last bytes, one after another (a row of a pool's outputs): window w has
// counts[w] taps, the next ones of `taps`; y[w * n + i] = (max over its taps t of t[i]) ^ flip
// for i < n, the taps' bytes already in the uint8 domain (a row of maxima).
void MaxWindowsImpl(const uint8_t* const* taps, const int64_t* counts, int64_t windows, int64_t n, uint8_t flip,
                    uint8_t* HWY_RESTRICT y) {
  const hn::ScalableTag<uint8_t> d8;
  const int64_t L = (int64_t)hn::Lanes(d8);
  const auto f = hn::Set(d8, flip);
  for (int64_t w = 0; w < windows; ++w) {
    const int64_t count = counts[w];
    int64_t i = 0;
    for (; i + L <= n; i += L) {
      auto m = hn::Zero(d8);
      for (int64_t t = 0; t < count; ++t) m = hn::Max(m, hn::LoadU(d8, taps[t] + i));
      hn::StoreU(hn::Xor(m, f), d8, y + i);
    }
    for (; i < n; ++i) {
      uint8_t m = 0;
      for (int64_t t = 0; t < count; ++t) m = std::max<uint8_t>(m, taps[t][i]);
      y[i] = m ^ flip;
    }
    taps += count;
    y += n;
  }
}

// out[j] = max over k < taps of row[j + k * step], for j < n.
void SlidingMaxImpl(const uint8_t* HWY_RESTRICT row, int64_t n, int64_t taps, int64_t step,
                    uint8_t* HWY_RESTRICT out) {
  const hn::ScalableTag<uint8_t> d8;
  const int64_t L = (int64_t)hn::Lanes(d8);
  int64_t j = 0;
  for (; j + L <= n; j += L) {
    auto m = hn::LoadU(d8, row + j);
    for (int64_t k = 1; k < taps; ++k) m = hn::Max(m, hn::LoadU(d8, row + j + k * step));
    hn::StoreU(m, d8, out + j);
  }
  for (; j < n; ++j) {
    uint8_t m = row[j];
    for (int64_t k = 1; k < taps; ++k) m = std::max(m, row[j + k * step]);
    out[j] = m;
  }
}

// out[j] = sum over k < taps of row[j + k * step], for j < n.
void SlidingSumImpl(const int32_t* HWY_RESTRICT row, int64_t n, int64_t taps, int64_t step,
                    int32_t* HWY_RESTRICT out) {
  const DI di;
  const int64_t L = (int64_t)hn::Lanes(di);
  int64_t j = 0;
  for (; j + L <= n; j += L) {
    VI s = hn::LoadU(di, row + j);
    for (int64_t k = 1; k < taps; ++k) s = hn::Add(s, hn::LoadU(di, row + j + k * step));
    hn::StoreU(s, di, out + j);
  }
  for (; j < n; ++j) {
    int32_t s = row[j];
    for (int64_t k = 1; k < taps; ++k) s += row[j + k * step];
    out[j] = s;
  }
}

// y[i] = requantize(x[i] / scale) ^ flip for i < n (QuantizeLinear); NaN to the least byte.
void QuantizeRowImpl(const float* HWY_RESTRICT x, int64_t n, float scale, const Requant& q, uint8_t flip,
                     uint8_t* HWY_RESTRICT y) {
  const DF d;
  const int64_t L = (int64_t)hn::Lanes(d);
  const VF s = hn::Set(d, scale), lo = hn::Set(d, q.lo);
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    const VF v = hn::Div(hn::LoadU(d, x + i), s);
    store_requantized(hn::IfThenElse(hn::Eq(v, v), v, lo), q, flip, y + i);
  }
  for (; i < n; ++i) {
    const float v = x[i] / scale;
    y[i] = requantize_one(v == v ? v : q.lo, q) ^ flip;
  }
}

// exp(row[j] - largest) into row[j] for `count` lanes from `at`, as the Exp op computes it: the
// vector exp where the argument lies inside [-87, 88], libm's elsewhere.
HWY_NOINLINE void softmax_exp_lanes(float* HWY_RESTRICT row, int64_t at, int64_t count, float largest) {
  const DF d;
  HWY_ALIGN float lanes[hn::MaxLanes(d)];
  for (size_t j = 0; j < hn::Lanes(d); ++j) lanes[j] = (int64_t)j < count ? row[at + j] - largest : -87.0f;
  const VF v = hn::Load(d, lanes);
  hn::Store(ExpInRange(d, hn::Min(hn::Max(v, hn::Set(d, -87.0f)), hn::Set(d, 88.0f))), d, lanes);
  for (int64_t j = 0; j < count; ++j) {
    const float vj = row[at + j] - largest;
    row[at + j] = vj >= -87.0f && vj <= 88.0f ? lanes[j] : std::exp(vj);
  }
}

// QLinearSoftmax's rows [r0, r1) of n values: x's bytes ^ x_flip in the uint8 domain (x_zero
// there too), each row dequantized, exp(v - max) (softmax_exp_lanes' values), divided by the
// row's sum and then by y_scale (QuantizeLinear's quotient) and stored as QuantizeRowImpl does.
// row: n floats.
void SoftmaxRowsImpl(const uint8_t* HWY_RESTRICT x, uint8_t x_flip, int64_t r0, int64_t r1, int64_t n, int32_t x_zero,
                     float x_scale, float y_scale, const Requant& q, uint8_t flip, uint8_t* HWY_RESTRICT y,
                     float* HWY_RESTRICT row) {
  const DF d;
  const DI di;
  const D8 d8;
  const int64_t L = (int64_t)hn::Lanes(d);
  const VF zero = hn::Set(d, (float)x_zero), scale = hn::Set(d, x_scale);
  const VF lo = hn::Set(d, -87.0f), hi = hn::Set(d, 88.0f), ys = hn::Set(d, y_scale), least = hn::Set(d, q.lo);
  const auto x_flips = hn::Set(d8, x_flip);
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* in = x + r * n;
    // The dequantized row and its largest value.
    VF top = hn::Set(d, -std::numeric_limits<float>::infinity());
    int64_t i = 0;
    for (; i + L <= n; i += L) {
      const VF v = hn::Mul(hn::Sub(hn::ConvertTo(d, hn::PromoteTo(di, hn::Xor(hn::LoadU(d8, in + i), x_flips))), zero),
                           scale);
      hn::StoreU(v, d, row + i);
      top = hn::Max(top, v);
    }
    float largest = hn::GetLane(hn::MaxOfLanes(d, top));
    for (; i < n; ++i) {
      row[i] = ((float)(uint8_t)(in[i] ^ x_flip) - (float)x_zero) * x_scale;
      largest = std::max(largest, row[i]);
    }
    // exp(v - max) and the sum: whole vectors, then the rest of the row as one padded vector.
    const VF shift = hn::Set(d, largest);
    VF total = hn::Zero(d);
    for (i = 0; i + L <= n; i += L) {
      const VF v = hn::Sub(hn::LoadU(d, row + i), shift);
      if (HWY_LIKELY(hn::AllTrue(d, hn::And(hn::Ge(v, lo), hn::Le(v, hi))))) {
        const VF e = ExpInRange(d, v);
        hn::StoreU(e, d, row + i);
        total = hn::Add(total, e);
      } else {
        softmax_exp_lanes(row, i, L, largest);
        total = hn::Add(total, hn::LoadU(d, row + i));
      }
    }
    float sum = 0.0f;
    if (i < n) {
      softmax_exp_lanes(row, i, n - i, largest);
      for (int64_t j = i; j < n; ++j) sum += row[j];
    }
    sum += hn::GetLane(hn::SumOfLanes(d, total));
    // (e / sum) / y_scale, each quotient rounded as its op rounds it, then the bytes.
    const VF s = hn::Set(d, sum);
    uint8_t* out = y + r * n;
    for (i = 0; i + L <= n; i += L) {
      const VF v = hn::Div(hn::Div(hn::LoadU(d, row + i), s), ys);
      store_requantized(hn::IfThenElse(hn::Eq(v, v), v, least), q, flip, out + i);
    }
    for (; i < n; ++i) {
      const float v = (row[i] / sum) / y_scale;
      out[i] = requantize_one(v == v ? v : q.lo, q) ^ flip;
    }
  }
}

// Channels-last bytes of one row of pixels: y[w * channels + c] = rows[c][w] for w < n.
void InterleaveRowsImpl(const uint8_t* const* rows, int64_t channels, int64_t n, uint8_t* HWY_RESTRICT y) {
  const hn::ScalableTag<uint8_t> d8;
  const int64_t L = (int64_t)hn::Lanes(d8);
  int64_t w = 0;
  if (channels == 3) {
    for (; w + L <= n; w += L)
      hn::StoreInterleaved3(hn::LoadU(d8, rows[0] + w), hn::LoadU(d8, rows[1] + w), hn::LoadU(d8, rows[2] + w), d8,
                            y + w * 3);
  } else if (channels == 4) {
    for (; w + L <= n; w += L)
      hn::StoreInterleaved4(hn::LoadU(d8, rows[0] + w), hn::LoadU(d8, rows[1] + w), hn::LoadU(d8, rows[2] + w),
                            hn::LoadU(d8, rows[3] + w), d8, y + w * 4);
  }
  for (; w < n; ++w)
    for (int64_t c = 0; c < channels; ++c) y[w * channels + c] = rows[c][w];
}

// y[i] = requantize(float(sums[i] - zero_sum) * multiplier) ^ flip for i < n.
void RequantizeSumsImpl(const int32_t* HWY_RESTRICT sums, int64_t n, int32_t zero_sum, float multiplier,
                        const Requant& q, uint8_t flip, uint8_t* HWY_RESTRICT y) {
  const DF d;
  const DI di;
  const int64_t L = (int64_t)hn::Lanes(d);
  const VI z = hn::Set(di, zero_sum);
  const VF m = hn::Set(d, multiplier);
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    store_requantized(hn::Mul(hn::ConvertTo(d, hn::Sub(hn::LoadU(di, sums + i), z)), m), q, flip, y + i);
  }
  for (; i < n; ++i) y[i] = requantize_one((float)(sums[i] - zero_sum) * multiplier, q) ^ flip;
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
HWY_EXPORT(AddRowImpl);
HWY_EXPORT(MulRowImpl);
HWY_EXPORT(AccumulateBytesImpl);
HWY_EXPORT(SumBytesImpl);
HWY_EXPORT(MaxBytesImpl);
HWY_EXPORT(QuantizeRowImpl);
HWY_EXPORT(InterleaveRowsImpl);
HWY_EXPORT(MaxWindowsImpl);
HWY_EXPORT(RequantizeSumsImpl);
HWY_EXPORT(SlidingMaxImpl);
HWY_EXPORT(SlidingSumImpl);
HWY_EXPORT(SoftmaxRowsImpl);

void qlinear_add_row(const uint8_t* a, const uint8_t* b, uint8_t* y, int64_t n,
                     const quantized_elementwise_detail::BinaryParams& p) {
  if (y != a) {
    HWY_DYNAMIC_DISPATCH(AddRowImpl)(a, 1, b, 1, y, n, p);
    return;
  }
  // In place: a's bytes go through a copy (the row code takes distinct operands).
  constexpr int64_t kChunk = 4096;
  alignas(64) uint8_t chunk[kChunk];
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t count = std::min(kChunk, n - i);
    std::memcpy(chunk, a + i, (size_t)count);
    HWY_DYNAMIC_DISPATCH(AddRowImpl)(chunk, 1, b + i, 1, y + i, count, p);
  }
}
}  // namespace cpu

namespace {

using namespace cpu::quantized_elementwise_detail;

// Bytes a task handles at least, so that a task outweighs waking a thread.
constexpr int64_t kTaskBytes = int64_t(1) << 14;

uint8_t flip_of(DType t) { return t == DType::Int8 ? 0x80 : 0; }

// A one-value zero point in the uint8 domain.
int32_t zero_u8(const Tensor* t) {
  return t->type.dtype == DType::Int8 ? (int32_t)t->ptr<int8_t>()[0] + 128 : (int32_t)t->ptr<uint8_t>()[0];
}

float scale_of(const Tensor* t) { return t->ptr<float>()[0]; }

int64_t grain_for(int64_t bytes_per_item) {
  return std::max<int64_t>(1, kTaskBytes / std::max<int64_t>(1, bytes_per_item));
}

// ---------------------------------------------------------------- QLinearAdd, QLinearMul
// Output dimensions, merged where both operands allow, with each operand's element strides (0 where
// it broadcasts). The innermost run has strides 0 or 1 and becomes one row call.
class QLinearBinaryKernel : public Kernel {
 public:
  QLinearBinaryKernel(const KernelContext& ctx, bool mul) : mul_(mul), flip_(flip_of(ctx.output_types[0].dtype)) {
    const Shape& out = ctx.output_types[0].shape;
    const size_t rank = out.size();
    auto strides_of = [&](const Shape& s) {
      std::vector<int64_t> st(rank, 0);
      int64_t step = 1;
      for (size_t k = 0; k < s.size(); ++k) {
        const size_t d = rank - 1 - k, sd = s.size() - 1 - k;
        st[d] = s[sd] == 1 ? 0 : step;
        step *= s[sd];
      }
      return st;
    };
    const std::vector<int64_t> sa = strides_of(ctx.input_types[0].shape), sb = strides_of(ctx.input_types[3].shape);
    // Merge adjacent dimensions that both operands walk contiguously (or both broadcast).
    for (size_t d = 0; d < rank; ++d) {
      if (out[d] == 1) continue;
      if (!dims_.empty() && a_st_.back() == sa[d] * out[d] && b_st_.back() == sb[d] * out[d]) {
        dims_.back() *= out[d];
        a_st_.back() = sa[d];
        b_st_.back() = sb[d];
        continue;
      }
      dims_.push_back(out[d]);
      a_st_.push_back(sa[d]);
      b_st_.push_back(sb[d]);
    }
    if (dims_.empty() || (a_st_.back() > 1 || b_st_.back() > 1)) {  // innermost run not unit: one element rows
      dims_.push_back(1);
      a_st_.push_back(0);
      b_st_.push_back(0);
    }
    row_ = dims_.back();
    rows_ = shape_numel(ctx.output_types[0].shape) / std::max<int64_t>(1, row_);
  }

  const char* scheme() const override { return "int8_rows"; }

  void execute(const KernelArgs& args, void*) const override {
    Tensor* out = args.outputs[0];
    if (out->numel() == 0) return;
    BinaryParams p;
    p.flip = flip_;
    const float sa = scale_of(args.inputs[1]), sb = scale_of(args.inputs[4]), sy = scale_of(args.inputs[6]);
    p.a_ratio = sa / sy;
    p.b_ratio = sb / sy;
    p.ratio = sa * sb / sy;
    p.a_zero = zero_u8(args.inputs[2]);
    p.b_zero = zero_u8(args.inputs[5]);
    p.out = make_requant(zero_u8(args.inputs[7]));
    const uint8_t* a = static_cast<const uint8_t*>(args.inputs[0]->data);
    const uint8_t* b = static_cast<const uint8_t*>(args.inputs[3]->data);
    uint8_t* y = static_cast<uint8_t*>(out->data);
    const size_t outer = dims_.size() - 1;
    const int64_t a_step = a_st_.back(), b_step = b_st_.back(), row = row_;
    const bool mul = mul_;
    // Tasks: pieces of rows (a long row, such as two same-shape tensors merge into, is split).
    const int64_t piece = std::min(row, std::max<int64_t>(kTaskBytes, cpu::ceil_div(row * rows_, 16)));
    const int64_t pieces = cpu::ceil_div(row, piece);
    parallel_for(args.pool, rows_ * pieces, std::max<int64_t>(1, grain_for(piece)), [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t r = t / pieces, begin = t % pieces * piece, length = std::min(piece, row - begin);
        int64_t rest = r, a_off = begin * a_step, b_off = begin * b_step;
        for (size_t d = outer; d-- > 0;) {
          const int64_t i = rest % dims_[d];
          rest /= dims_[d];
          a_off += i * a_st_[d];
          b_off += i * b_st_[d];
        }
        uint8_t* yr = y + r * row + begin;
        if (mul) {
          HWY_DYNAMIC_DISPATCH(cpu::MulRowImpl)(a + a_off, a_step, b + b_off, b_step, yr, length, p);
        } else {
          HWY_DYNAMIC_DISPATCH(cpu::AddRowImpl)(a + a_off, a_step, b + b_off, b_step, yr, length, p);
        }
      }
    });
  }

 private:
  bool mul_;
  uint8_t flip_;
  std::vector<int64_t> dims_, a_st_, b_st_;
  int64_t row_ = 1, rows_ = 0;
};

MNNPY_REGISTER_KERNEL("QLinearAdd", "cpu", [](const KernelContext& ctx) -> std::unique_ptr<Kernel> {
  return std::make_unique<QLinearBinaryKernel>(ctx, false);
});
MNNPY_REGISTER_KERNEL("QLinearMul", "cpu", [](const KernelContext& ctx) -> std::unique_ptr<Kernel> {
  return std::make_unique<QLinearBinaryKernel>(ctx, true);
});

// onnxruntime's multiplier of an average over `count` values.
float average_multiplier(float x_scale, float y_scale, int64_t count) {
  return x_scale / (y_scale * (float)count);
}

// ---------------------------------------------------------------- QLinearGlobalAveragePool
class QLinearGlobalAveragePoolKernel : public Kernel {
 public:
  explicit QLinearGlobalAveragePoolKernel(const KernelContext& ctx)
      : flip_(flip_of(ctx.input_types[0].dtype)), channels_last_(ctx.attrs.get_int("channels_last", 0) != 0) {
    const Shape& s = ctx.input_types[0].shape;
    batch_ = s[0];
    channels_ = channels_last_ ? s.back() : s[1];
    image_ = batch_ * channels_ != 0 ? shape_numel(s) / (batch_ * channels_) : 0;
  }

  const char* scheme() const override { return channels_last_ ? "int8_nhwc" : "int8_nchw"; }

  void execute(const KernelArgs& args, void*) const override {
    if (args.outputs[0]->numel() == 0) return;
    const uint8_t* x = static_cast<const uint8_t*>(args.inputs[0]->data);
    uint8_t* y = static_cast<uint8_t*>(args.outputs[0]->data);
    const int32_t zx = zero_u8(args.inputs[2]);
    const float m = average_multiplier(scale_of(args.inputs[1]), scale_of(args.inputs[3]), image_);
    const Requant q = make_requant(zero_u8(args.inputs[4]));
    const int64_t image = image_, channels = channels_;
    const uint8_t flip = flip_;
    if (!channels_last_) {
      parallel_for(args.pool, batch_ * channels, grain_for(image), [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) {
          const int64_t sum = HWY_DYNAMIC_DISPATCH(cpu::SumBytesImpl)(x + p * image, image, flip);
          const int32_t centered = (int32_t)(sum - (int64_t)zx * image);
          y[p] = requantize_one((float)centered * m, q) ^ flip;
        }
      });
      return;
    }
    parallel_for(args.pool, batch_, 1, [&](int64_t n0, int64_t n1) {
      std::vector<int32_t> sums((size_t)channels);
      for (int64_t n = n0; n < n1; ++n) {
        std::fill(sums.begin(), sums.end(), 0);
        const uint8_t* xn = x + n * image * channels;
        for (int64_t i = 0; i < image; ++i) {
          HWY_DYNAMIC_DISPATCH(cpu::AccumulateBytesImpl)(xn + i * channels, channels, flip, sums.data());
        }
        HWY_DYNAMIC_DISPATCH(cpu::RequantizeSumsImpl)(sums.data(), channels, (int32_t)(zx * image), m, q, flip,
                                                      y + n * channels);
      }
    });
  }

 private:
  uint8_t flip_;
  bool channels_last_;
  int64_t batch_ = 0, channels_ = 0, image_ = 0;
};

MNNPY_REGISTER_KERNEL("QLinearGlobalAveragePool", "cpu", construct_kernel<QLinearGlobalAveragePoolKernel>);

// ---------------------------------------------------------------- QuantizeLinear
// Rows of W values (NCHW's rows; channels last: one row of pixels, its channels quantized apart
// and then interleaved).
class QuantizeLinearKernel : public Kernel {
 public:
  explicit QuantizeLinearKernel(const KernelContext& ctx)
      : flip_(flip_of(ctx.output_types[0].dtype)), channels_last_(ctx.attrs.get_int("channels_last", 0) != 0) {
    const Shape& s = ctx.input_types[0].shape;
    total_ = shape_numel(s);
    if (channels_last_) batch_ = s[0], channels_ = s[1], height_ = s[2], width_ = s[3];
  }

  const char* scheme() const override { return channels_last_ ? "to_nhwc" : "rows"; }

  void execute(const KernelArgs& args, void*) const override {
    if (total_ == 0) return;
    const float* x = args.inputs[0]->ptr<float>();
    uint8_t* y = static_cast<uint8_t*>(args.outputs[0]->data);
    const float scale = scale_of(args.inputs[1]);
    const Requant q = make_requant(zero_u8(args.inputs[2]));
    const uint8_t flip = flip_;
    if (!channels_last_) {
      constexpr int64_t kPiece = 16384;
      parallel_for(args.pool, cpu::ceil_div(total_, kPiece), 1, [&](int64_t p0, int64_t p1) {
        const int64_t begin = p0 * kPiece, end = std::min(total_, p1 * kPiece);
        HWY_DYNAMIC_DISPATCH(cpu::QuantizeRowImpl)(x + begin, end - begin, scale, q, flip, y + begin);
      });
      return;
    }
    const int64_t C = channels_, H = height_, W = width_;
    parallel_for(args.pool, batch_ * H, grain_for(C * W * 5), [&](int64_t r0, int64_t r1) {
      std::vector<uint8_t> planes((size_t)(C * W));
      std::vector<const uint8_t*> rows((size_t)C);
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t n = r / H, h = r % H;
        for (int64_t c = 0; c < C; ++c) {
          HWY_DYNAMIC_DISPATCH(cpu::QuantizeRowImpl)(x + ((n * C + c) * H + h) * W, W, scale, q, flip,
                                                     planes.data() + c * W);
          rows[(size_t)c] = planes.data() + c * W;
        }
        HWY_DYNAMIC_DISPATCH(cpu::InterleaveRowsImpl)(rows.data(), C, W, y + r * W * C);
      }
    });
  }

 private:
  uint8_t flip_;
  bool channels_last_;
  int64_t total_ = 0, batch_ = 0, channels_ = 0, height_ = 0, width_ = 0;
};

MNNPY_REGISTER_KERNEL("QuantizeLinear", "cpu", construct_kernel<QuantizeLinearKernel>);

// ---------------------------------------------------------------- QLinearSoftmax
// Rows of the last axis, a task's rows through one float buffer.
class QLinearSoftmaxKernel : public Kernel {
 public:
  explicit QLinearSoftmaxKernel(const KernelContext& ctx)
      : x_flip_(flip_of(ctx.input_types[0].dtype)), flip_(flip_of(ctx.output_types[0].dtype)) {
    const Shape& s = ctx.input_types[0].shape;
    n_ = s.empty() ? 1 : s.back();
    rows_ = n_ ? shape_numel(s) / n_ : 0;
  }

  void execute(const KernelArgs& args, void*) const override {
    if (rows_ == 0 || n_ == 0) return;
    const uint8_t* x = static_cast<const uint8_t*>(args.inputs[0]->data);
    uint8_t* y = static_cast<uint8_t*>(args.outputs[0]->data);
    const float x_scale = scale_of(args.inputs[1]), y_scale = scale_of(args.inputs[3]);
    const int32_t x_zero = zero_u8(args.inputs[2]);
    const Requant q = make_requant(zero_u8(args.inputs[4]));
    parallel_for(args.pool, rows_, grain_for(n_ * 12), [&](int64_t r0, int64_t r1) {
      std::vector<float> row((size_t)n_);
      HWY_DYNAMIC_DISPATCH(cpu::SoftmaxRowsImpl)(x, x_flip_, r0, r1, n_, x_zero, x_scale, y_scale, q, flip_, y,
                                                 row.data());
    });
  }

 private:
  uint8_t x_flip_, flip_;
  int64_t n_ = 0, rows_ = 0;
};
MNNPY_REGISTER_KERNEL("QLinearSoftmax", "cpu", construct_kernel<QLinearSoftmaxKernel>);

// ---------------------------------------------------------------- windowed pools
struct Window {
  int64_t batch = 0, channels = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  bool channels_last = false, count_include_pad = false;

  explicit Window(const KernelContext& ctx) {
    const Shape& s = ctx.input_types[0].shape;
    const Shape& o = ctx.output_types[0].shape;
    channels_last = ctx.attrs.get_int("channels_last", 0) != 0;
    batch = s[0];
    channels = channels_last ? s[3] : s[1];
    in_h = s[channels_last ? 1 : 2], in_w = s[channels_last ? 2 : 3];
    out_h = o[channels_last ? 1 : 2], out_w = o[channels_last ? 2 : 3];
    const auto& k = ctx.attrs.get_ints("kernel");
    const auto& st = ctx.attrs.get_ints("strides");
    const auto& d = ctx.attrs.get_ints("dilations");
    const auto& p = ctx.attrs.get_ints("pads");
    kernel_h = k[0], kernel_w = k[1], stride_h = st[0], stride_w = st[1], dilation_h = d[0], dilation_w = d[1];
    pad_top = p[0], pad_left = p[1], pad_bottom = p[2], pad_right = p[3];
    count_include_pad = ctx.attrs.get_int("count_include_pad", 0) != 0;
    axis_taps(out_h, stride_h, pad_top, kernel_h, dilation_h, in_h, pad_bottom, h_first, h_valid, h_divisor);
    axis_taps(out_w, stride_w, pad_left, kernel_w, dilation_w, in_w, pad_right, w_first, w_valid, w_divisor);
  }

  // Per output position along an axis: its first tap inside the input, how many are inside, and
  // the average's divisor extent (the taps inside the input, or inside the padded input).
  std::vector<int64_t> h_first, h_valid, h_divisor, w_first, w_valid, w_divisor;
  void axis_taps(int64_t outs, int64_t stride, int64_t pad, int64_t kernel, int64_t dilation, int64_t in,
                 int64_t pad_end, std::vector<int64_t>& first, std::vector<int64_t>& valid,
                 std::vector<int64_t>& divisor) const {
    for (int64_t o = 0; o < outs; ++o) {
      int64_t f, l, fd, ld;
      taps(o, stride, pad, kernel, dilation, 0, in, f, l);
      taps(o, stride, pad, kernel, dilation, count_include_pad ? -pad : 0, count_include_pad ? in + pad_end : in, fd,
           ld);
      first.push_back(f);
      valid.push_back(l - f);
      divisor.push_back(ld - fd);
    }
  }

  // The taps [first, last) of output position o along an axis that fall inside [lo, hi).
  static void taps(int64_t o, int64_t stride, int64_t pad, int64_t kernel, int64_t dilation, int64_t lo, int64_t hi,
                   int64_t& first, int64_t& last) {
    const int64_t start = o * stride - pad;
    first = 0;
    while (first < kernel && start + first * dilation < lo) ++first;
    last = kernel;
    while (last > first && start + (last - 1) * dilation >= hi) --last;
  }
  // The divisor of an average window.
  int64_t count(int64_t oh, int64_t ow) const { return h_divisor[(size_t)oh] * w_divisor[(size_t)ow]; }
};

// Average (sums of bytes) or maximum over each window. NCHW: each output row reduces its window's
// input rows into one row first, then slides the kernel's width along it (vectors along W).
// NHWC: each output reduces its taps' channel rows (vectors along C).
class WindowPoolKernel : public Kernel {
 public:
  WindowPoolKernel(const KernelContext& ctx, bool average)
      : w_(ctx), average_(average), flip_(flip_of(ctx.input_types[0].dtype)) {}

  const char* scheme() const override { return w_.channels_last ? "int8_nhwc" : "int8_nchw"; }

  void execute(const KernelArgs& args, void*) const override {
    if (args.outputs[0]->numel() == 0) return;
    const uint8_t* x = static_cast<const uint8_t*>(args.inputs[0]->data);
    uint8_t* y = static_cast<uint8_t*>(args.outputs[0]->data);
    Requant q;
    int32_t zx = 0;
    std::vector<float> multipliers;  // by divisor
    if (average_) {
      zx = zero_u8(args.inputs[2]);
      q = make_requant(zero_u8(args.inputs[4]));
      const float sx = scale_of(args.inputs[1]), sy = scale_of(args.inputs[3]);
      multipliers.resize((size_t)(w_.kernel_h * w_.kernel_w + 1));
      for (size_t c = 1; c < multipliers.size(); ++c) multipliers[c] = average_multiplier(sx, sy, (int64_t)c);
    }
    const Window& w = w_;
    const bool average = average_;
    const uint8_t flip = flip_;
    // `sum` over `taps` values inside the input; padding counted in the divisor holds x_zero (0).
    auto finish = [&](int64_t sum, int64_t taps, int64_t oh, int64_t ow) {
      const int64_t count = w.count(oh, ow);
      return requantize_one((float)(int32_t)(sum - (int64_t)zx * taps) * multipliers[(size_t)count], q) ^ flip;
    };
    if (!w.channels_last) {
      // Each output row: its window's input rows reduced into one row placed at pad_left in a
      // buffer of zeros (neutral for sums, and the least byte for maxima), then sliding
      // reductions over that row at stride 1, of which every stride_w-th is an output.
      const int64_t plane_in = w.in_h * w.in_w, plane_out = w.out_h * w.out_w;
      const int64_t span = (w.out_w - 1) * w.stride_w + 1;
      const int64_t row_len = std::max(span + (w.kernel_w - 1) * w.dilation_w, w.pad_left + w.in_w);
      parallel_for(args.pool, w.batch * w.channels, grain_for(plane_in), [&](int64_t p0, int64_t p1) {
        std::vector<int32_t> sums((size_t)(average ? row_len : 0)), slid_sums((size_t)(average ? span : 0));
        std::vector<uint8_t> maxima((size_t)(average ? 0 : row_len)), slid_maxima((size_t)(average ? 0 : span));
        for (int64_t p = p0; p < p1; ++p) {
          const uint8_t* xp = x + p * plane_in;
          uint8_t* yp = y + p * plane_out;
          for (int64_t oh = 0; oh < w.out_h; ++oh) {
            const int64_t h0 = w.h_first[(size_t)oh], h1 = h0 + w.h_valid[(size_t)oh];
            const int64_t top = oh * w.stride_h - w.pad_top;
            uint8_t* yr = yp + oh * w.out_w;
            if (average) {
              std::fill(sums.begin(), sums.end(), 0);
              for (int64_t kh = h0; kh < h1; ++kh) {
                HWY_DYNAMIC_DISPATCH(cpu::AccumulateBytesImpl)(xp + (top + kh * w.dilation_h) * w.in_w, w.in_w, flip,
                                                               sums.data() + w.pad_left);
              }
              HWY_DYNAMIC_DISPATCH(cpu::SlidingSumImpl)(sums.data(), span, w.kernel_w, w.dilation_w, slid_sums.data());
              for (int64_t ow = 0; ow < w.out_w; ++ow) {
                yr[ow] = finish(slid_sums[(size_t)(ow * w.stride_w)], (h1 - h0) * w.w_valid[(size_t)ow], oh, ow);
              }
            } else {
              std::fill(maxima.begin(), maxima.end(), 0);
              for (int64_t kh = h0; kh < h1; ++kh) {
                HWY_DYNAMIC_DISPATCH(cpu::MaxBytesImpl)(xp + (top + kh * w.dilation_h) * w.in_w, w.in_w, flip,
                                                        maxima.data() + w.pad_left);
              }
              HWY_DYNAMIC_DISPATCH(cpu::SlidingMaxImpl)(maxima.data(), span, w.kernel_w, w.dilation_w,
                                                        slid_maxima.data());
              for (int64_t ow = 0; ow < w.out_w; ++ow) yr[ow] = slid_maxima[(size_t)(ow * w.stride_w)] ^ flip;
            }
          }
        }
      });
      return;
    }
    const int64_t C = w.channels;
    const int64_t row_bytes = w.out_w * C * w.kernel_h * w.kernel_w;
    if (!average) {
      // Each output row: the maxima of its window's input rows (whole rows of pixels, contiguous),
      // then each output pixel's maximum over its window's pixels of that row, in one call.
      const int64_t in_row = w.in_w * C;
      parallel_for(args.pool, w.batch * w.out_h, grain_for(row_bytes), [&](int64_t r0, int64_t r1) {
        std::vector<uint8_t> maxima((size_t)in_row);
        std::vector<const uint8_t*> taps((size_t)(w.kernel_w * w.out_w));
        std::vector<int64_t> counts((size_t)w.out_w);
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t n = r / w.out_h, oh = r % w.out_h;
          const int64_t h0 = w.h_first[(size_t)oh], h1 = h0 + w.h_valid[(size_t)oh];
          const int64_t top = oh * w.stride_h - w.pad_top;
          std::fill(maxima.begin(), maxima.end(), 0);
          for (int64_t kh = h0; kh < h1; ++kh) {
            HWY_DYNAMIC_DISPATCH(cpu::MaxBytesImpl)(x + (n * w.in_h + top + kh * w.dilation_h) * in_row, in_row, flip,
                                                    maxima.data());
          }
          int64_t count = 0;
          for (int64_t ow = 0; ow < w.out_w; ++ow) {
            const int64_t w0 = w.w_first[(size_t)ow], w1 = w0 + w.w_valid[(size_t)ow];
            const int64_t left = ow * w.stride_w - w.pad_left;
            for (int64_t kw = w0; kw < w1; ++kw) taps[(size_t)count++] = maxima.data() + (left + kw * w.dilation_w) * C;
            counts[(size_t)ow] = w1 - w0;
          }
          HWY_DYNAMIC_DISPATCH(cpu::MaxWindowsImpl)(taps.data(), counts.data(), w.out_w, C, flip,
                                                    y + (n * w.out_h + oh) * w.out_w * C);
        }
      });
      return;
    }
    parallel_for(args.pool, w.batch * w.out_h, grain_for(row_bytes), [&](int64_t r0, int64_t r1) {
      std::vector<int32_t> sums((size_t)C);
      std::vector<const uint8_t*> taps((size_t)(w.kernel_h * w.kernel_w));
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t n = r / w.out_h, oh = r % w.out_h;
        const int64_t h0 = w.h_first[(size_t)oh], h1 = h0 + w.h_valid[(size_t)oh];
        const int64_t top = oh * w.stride_h - w.pad_top;
        for (int64_t ow = 0; ow < w.out_w; ++ow) {
          const int64_t w0 = w.w_first[(size_t)ow], w1 = w0 + w.w_valid[(size_t)ow];
          const int64_t left = ow * w.stride_w - w.pad_left;
          uint8_t* py = y + ((n * w.out_h + oh) * w.out_w + ow) * C;
          int64_t count = 0;
          for (int64_t kh = h0; kh < h1; ++kh) {
            for (int64_t kw = w0; kw < w1; ++kw) {
              taps[(size_t)count++] =
                  x + ((n * w.in_h + top + kh * w.dilation_h) * w.in_w + left + kw * w.dilation_w) * C;
            }
          }
          std::fill(sums.begin(), sums.end(), 0);
          for (int64_t t = 0; t < count; ++t)
            HWY_DYNAMIC_DISPATCH(cpu::AccumulateBytesImpl)(taps[(size_t)t], C, flip, sums.data());
          HWY_DYNAMIC_DISPATCH(cpu::RequantizeSumsImpl)(sums.data(), C, (int32_t)(zx * count),
                                                        multipliers[(size_t)w.count(oh, ow)], q, flip, py);
        }
      }
    });
  }

 private:
  Window w_;
  bool average_;
  uint8_t flip_;
};

MNNPY_REGISTER_KERNEL("QLinearAveragePool", "cpu", [](const KernelContext& ctx) -> std::unique_ptr<Kernel> {
  return std::make_unique<WindowPoolKernel>(ctx, true);
});
MNNPY_REGISTER_KERNEL("MaxPool2DInt8", "cpu", [](const KernelContext& ctx) -> std::unique_ptr<Kernel> {
  return std::make_unique<WindowPoolKernel>(ctx, false);
});

// ---------------------------------------------------------------- QLinearConcat
class QLinearConcatKernel : public Kernel {
 public:
  explicit QLinearConcatKernel(const KernelContext& ctx) : flip_(flip_of(ctx.output_types[0].dtype)) {
    const Shape& out = ctx.output_types[0].shape;
    const int64_t axis = ctx.attrs.get_int("axis");
    for (int64_t d = 0; d < axis; ++d) outer_ *= out[d];
    for (size_t i = 2; i < ctx.input_types.size(); i += 3) {
      const Shape& s = ctx.input_types[i].shape;
      int64_t inner = 1;
      for (size_t d = (size_t)axis; d < s.size(); ++d) inner *= s[d];
      inner_.push_back(inner);
      out_inner_ += inner;
    }
  }

  const char* scheme() const override { return "int8_concat"; }

  void execute(const KernelArgs& args, void*) const override {
    if (args.outputs[0]->numel() == 0) return;
    const float sy = scale_of(args.inputs[0]);
    const int32_t zy = zero_u8(args.inputs[1]);
    const Requant q = make_requant(zy);
    const size_t count = inner_.size();
    // Per input: empty (copied as it is) or its 256-entry table, indexed by the raw byte.
    std::vector<std::vector<uint8_t>> tables(count);
    for (size_t i = 0; i < count; ++i) {
      const float sx = scale_of(args.inputs[3 + 3 * i]);
      const int32_t zx = zero_u8(args.inputs[4 + 3 * i]);
      if (sx == sy && zx == zy) continue;
      tables[i].resize(256);
      for (int v = 0; v < 256; ++v) {
        // onnxruntime's rule: dequantize, then quantize with the output's parameters.
        const float value = (float)((v ^ flip_) - zx) * sx;
        tables[i][(size_t)v] = requantize_one(value / sy, q) ^ flip_;
      }
    }
    uint8_t* y = static_cast<uint8_t*>(args.outputs[0]->data);
    const int64_t out_inner = out_inner_;
    // Tasks: pieces of output rows (one row when concatenating along the first non-unit axis),
    // each walking the inputs it overlaps.
    const int64_t piece = std::min(out_inner, std::max<int64_t>(kTaskBytes, cpu::ceil_div(out_inner * outer_, 16)));
    const int64_t pieces = cpu::ceil_div(out_inner, piece);
    parallel_for(args.pool, outer_ * pieces, std::max<int64_t>(1, grain_for(piece)), [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t o = t / pieces, lo = t % pieces * piece, hi = std::min(out_inner, lo + piece);
        int64_t start = 0;
        for (size_t i = 0; i < count && start < hi; start += inner_[i], ++i) {
          const int64_t inner = inner_[i], from = std::max(lo, start), to = std::min(hi, start + inner);
          if (from >= to) continue;
          const uint8_t* src = static_cast<const uint8_t*>(args.inputs[2 + 3 * i]->data) + o * inner + (from - start);
          uint8_t* dst = y + o * out_inner + from;
          if (tables[i].empty()) {
            std::memcpy(dst, src, (size_t)(to - from));
          } else {
            const uint8_t* table = tables[i].data();
            for (int64_t j = 0; j < to - from; ++j) dst[j] = table[src[j]];
          }
        }
      }
    });
  }

 private:
  uint8_t flip_;
  int64_t outer_ = 1, out_inner_ = 0;
  std::vector<int64_t> inner_;
};

MNNPY_REGISTER_KERNEL("QLinearConcat", "cpu", construct_kernel<QLinearConcatKernel>);

}  // namespace

}  // namespace mnnpy
#endif  // HWY_ONCE
