// CPU kernel of QLinearConv2D (ops/quantized_conv.cpp): depthwise layers by a direct loop, every
// other layer as a product of the weights with the input's patches on the int8 GEMM, weights
// packed per group at plan time.
// Channels-last (NHWC) tensors, the fast layout: a 1x1 stride-1 layer is the GEMM on the input
// itself, a KxK layer's patch rows are runs of C bytes per tap (depths ordered (ki, kj, c), the
// weights packed in that order), and the GEMM's epilogue requantizes its tiles straight into the
// output's rows; depthwise layers run the vector kernel of depthwise_int8.h.
// NCHW tensors: a 1x1 layer's patch matrix is the transposed input, and the GEMM's int32 sums,
// with zero points applied, are requantized per output channel into channel planes.
// A residual (inputs 9-13) is added in the GEMM's epilogue on channels-last tensors, otherwise in a
// pass over the output, with the same bytes.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/depthwise_int8.h"
#include "backend/cpu/gemm_int8.h"
#include "backend/cpu/gemm_int8_amx.h"
#include "backend/cpu/quantized_elementwise.h"
#include "backend/cpu/requant_int8.h"
#include "backend/cpu/thread_buffers.h"
#include "mnnpy/backend.h"
#include "mnnpy/thread_pool.h"
#include "ops/conv_common.h"

namespace mnnpy {

namespace {
using namespace conv_common;

int32_t value_at(const Tensor* t, int64_t i) {
  if (t->numel() == 1) i = 0;
  return t->type.dtype == DType::Int8 ? (int32_t)t->ptr<int8_t>()[i] : (int32_t)t->ptr<uint8_t>()[i];
}

class QLinearConvKernel : public Kernel {
 public:
  explicit QLinearConvKernel(const KernelContext& ctx)
      : x_signed_(ctx.input_types[0].dtype == DType::Int8),
        w_signed_(ctx.input_types[3].dtype == DType::Int8),
        y_signed_(ctx.input_types[7].dtype == DType::Int8) {
    Attrs attrs = ctx.attrs;
    const ConvAttrs a = read_conv_attrs(attrs, "QLinearConv2D");
    relu_ = a.activation == kConvActRelu;
    channels_last_ = attrs.get_int("channels_last", 0) != 0;
    const Shape& xs = ctx.input_types[0].shape;
    if (channels_last_) {
      s_.batch = xs[0], s_.in_h = xs[1], s_.in_w = xs[2], s_.in_c = xs[3];
    } else {
      s_.batch = xs[0], s_.in_c = xs[1], s_.in_h = xs[2], s_.in_w = xs[3];
    }
    finish_conv_shape(s_, a, ctx.input_types[3].shape, nullptr, "QLinearConv2D");
    depthwise_ = s_.is_depthwise() && s_.in_c > 1;
    if (!depthwise_ && ctx.constants.size() > 3 && ctx.constants[3]) packed_ = pack(ctx.constants[3]->data, nullptr);
    // Constant depthwise weights and zero points: their kernel forms once.
    if (depthwise_ && channels_last_ && ctx.constants.size() > 5 && ctx.constants[3] && ctx.constants[5]) {
      const std::vector<int32_t> w_zeros = weight_zeros(ctx.constants[5]);
      depthwise_weights_ = cpu::prepare_depthwise_int8(ctx.constants[3]->data, w_signed_, w_zeros.data(), s_.in_c,
                                                       s_.kernel_h, s_.kernel_w);
      depthwise_prepared_ = true;
    }
    // Constant scales, zero points and bias (as quantized models have them): their terms once.
    bool constant = ctx.constants.size() == ctx.input_types.size();
    for (size_t i : {1, 2, 4, 5, 6, 7, 8})
      constant = constant && (i >= ctx.constants.size() || ctx.constants[i] != nullptr);
    if (constant) {
      requant_ = requantization(ctx.constants);
      requant_prepared_ = true;
    }
    residual_ = ctx.input_types.size() > 9;
    if (residual_ && ctx.constants.size() > 13 && ctx.constants[6] && ctx.constants[10] && ctx.constants[11] &&
        ctx.constants[12] && ctx.constants[13]) {
      residual_add_ = residual_params(ctx.constants);
      residual_prepared_ = true;
    }
    // Whether runs will take the image path (the profile's scheme): asked now for the target and
    // AMX setting of the plan, as a run would ask.
    if (image_layer() && row_taps() && ctx.constants.size() > 3 && ctx.constants[3])
      packed_row_taps_ = pack_row_taps(ctx.constants[3]->data);
    if (image_layer() && !packed_.empty() && requant_prepared_) {
      cpu::Int8Epilogue ep;
      ep.b_zero = requant_.w_zeros.data(), ep.b_zero_step = 1, ep.requant_multiplier = requant_.multiplier.data();
      image_planned_ = cpu::gemm_int8_image_applies(s_.out_h * s_.out_w, x_signed_, image_weights(packed_), ep);
    }
  }

  double flops() const override {
    return 2.0 * s_.batch * s_.out_c * s_.out_h * s_.out_w * s_.depth();
  }
  const char* scheme() const override {
    if (channels_last_) {
      if (depthwise_) return "depthwise_int8_nhwc";
      return s_.is_pointwise() ? "gemm_int8_nhwc" : image_planned_ ? "image_gemm_int8_nhwc" : "im2col_gemm_int8_nhwc";
    }
    return depthwise_ ? "depthwise_int8" : "im2col_gemm_int8";
  }
  size_t resident_bytes() const override {
    size_t n = 0;
    for (const auto& p : packed_) n += p.nbytes;
    n += packed_row_taps_.nbytes;
    n += depthwise_weights_.taps.size() * 4 + depthwise_weights_.weight_sums.size() * 4 +
         (depthwise_weights_.pairs16.size() + depthwise_weights_.pairs32.size()) * 2;
    return n;
  }
  // One image's patches of one group, then their int32 sums.
  size_t scratch_bytes() const override {
    if (depthwise_) return 0;
    if (channels_last_) {
      if (s_.is_pointwise()) return 0;
      const size_t patches = (size_t)(s_.out_h * s_.out_w * patch_stride()) + kPatchSlack;
      return image_layer() ? std::max(patches, image_bytes()) : patches;
    }
    const int64_t M = s_.out_h * s_.out_w;
    return (size_t)(((M * s_.depth() + 63) & ~int64_t(63)) + M * s_.out_c_per_group() * 4);
  }

  void execute(const KernelArgs& args, void* scratch) const override {
    const Tensor* x = args.inputs[0];
    const int32_t x_zero = value_at(args.inputs[2], 0);
    Requantization fresh_requant;
    const Requantization& rq = requant_prepared_ ? requant_ : (fresh_requant = requantization(args.inputs));
    Residual residual;
    cpu::quantized_elementwise_detail::BinaryParams fresh_add;
    if (residual_) {
      residual.values = static_cast<const uint8_t*>(args.inputs[9]->data);
      residual.add = residual_prepared_ ? &residual_add_ : &(fresh_add = residual_params(args.inputs));
    }
    if (channels_last_) {
      run_channels_last(x, args.inputs[3], x_zero, rq, residual, args.outputs[0], scratch, args.pool);
    } else if (depthwise_) {
      run_depthwise(x, args.inputs[3], x_zero, rq, args.outputs[0], args.pool);
    } else {
      run_nchw(x, x_zero, rq, args, scratch);
    }
    // The GEMM's epilogue adds the residual on channels-last tensors; the other schemes here.
    if (residual_ && (depthwise_ || !channels_last_)) add_residual(residual, args.outputs[0], args.pool);
  }

 private:
  // What the requantization needs from the scales, zero points and bias (inputs 1 and 4 to 8).
  struct Requantization {
    std::vector<float> multiplier;  // per output channel: x_scale * w_scale / y_scale in float32
    std::vector<int32_t> bias, w_zeros;
    cpu::RequantParams params;

    // count sums of channel oc (acc[i * stride]) into out (requant_int8.h's formula).
    void row(const int32_t* acc, int64_t stride, int64_t count, int64_t oc, char* out) const {
      const float m = multiplier[oc];
      const uint32_t b = (uint32_t)bias[oc];
      const cpu::RequantParams p = params;  // a local: byte stores may alias the fields
      for (int64_t i = 0; i < count; ++i) {
        const int32_t sum = (int32_t)((uint32_t)acc[i * stride] + b);
        out[i] = (char)cpu::RequantOne(sum, m, p);
      }
    }
  };

  // The residual's values and the parameters of its sum with the output (null: no residual).
  struct Residual {
    const uint8_t* values = nullptr;
    const cpu::quantized_elementwise_detail::BinaryParams* add = nullptr;
  };

  // QLinearAdd's parameters with the requantized output as a and the residual as b.
  template <class TensorPtr>
  cpu::quantized_elementwise_detail::BinaryParams residual_params(const std::vector<TensorPtr>& in) const {
    auto zero_u8 = [&](const Tensor* t) { return value_at(t, 0) + (y_signed_ ? 128 : 0); };
    const float y_scale = in[6]->template ptr<float>()[0], r_scale = in[10]->template ptr<float>()[0];
    const float sum_scale = in[12]->template ptr<float>()[0];
    cpu::quantized_elementwise_detail::BinaryParams p;
    p.a_ratio = y_scale / sum_scale;
    p.b_ratio = r_scale / sum_scale;
    p.ratio = y_scale * r_scale / sum_scale;
    p.a_zero = zero_u8(in[7]);
    p.b_zero = zero_u8(in[11]);
    p.flip = y_signed_ ? 0x80 : 0;
    p.out = cpu::quantized_elementwise_detail::make_requant(zero_u8(in[13]));
    return p;
  }

  // y = QLinearAdd(y, residual) over the whole output, for the schemes whose epilogue does not add it.
  static void add_residual(const Residual& residual, Tensor* y, ThreadPool* pool) {
    uint8_t* out = static_cast<uint8_t*>(y->data);
    const int64_t n = y->numel();
    constexpr int64_t kPiece = 16384;
    parallel_for(pool, cpu::ceil_div(n, kPiece), 1, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t at = p * kPiece, count = std::min(kPiece, n - at);
        cpu::qlinear_add_row(out + at, residual.values + at, out + at, count, *residual.add);
      }
    });
  }

  void run_nchw(const Tensor* x, int32_t x_zero, const Requantization& rq, const KernelArgs& args,
                void* scratch) const {
    const int64_t OC = s_.out_c;
    std::vector<cpu::PackedInt8B> fresh;
    const std::vector<cpu::PackedInt8B>& packed = packed_.empty() ? (fresh = pack(args.inputs[3]->data, args.pool))
                                                                   : packed_;
    const int64_t M = s_.out_h * s_.out_w, K = s_.depth(), OCg = s_.out_c_per_group();
    uint8_t* patches = static_cast<uint8_t*>(scratch);
    int32_t* acc = reinterpret_cast<int32_t*>(patches + ((M * K + 63) & ~int64_t(63)));
    for (int64_t n = 0; n < s_.batch; ++n) {
      for (int64_t g = 0; g < s_.group; ++g) {
        im2col(static_cast<const uint8_t*>(x->data), n, g, (uint8_t)x_zero, patches, args.pool);
        cpu::Int8Epilogue ep;
        ep.a_zero = &x_zero;
        ep.b_zero = rq.w_zeros.data() + g * OCg;
        ep.b_zero_step = 1;
        cpu::gemm_int8(M, patches, K, x_signed_, packed[g], ep, acc, OCg, args.pool);
        // Requantized into channel planes: acc is pixels x channels, taken in blocks of pixels
        // that stay in cache while every channel reads its column of them.
        constexpr int64_t kPixels = 128;
        parallel_for(args.pool, cpu::ceil_div(M, kPixels), std::max<int64_t>(1, 4096 / (kPixels * OCg)),
                     [&](int64_t b0, int64_t b1) {
          for (int64_t blk = b0; blk < b1; ++blk) {
            const int64_t p0 = blk * kPixels, count = std::min(kPixels, M - p0);
            for (int64_t j = 0; j < OCg; ++j) {
              const int64_t oc = g * OCg + j;
              rq.row(acc + p0 * OCg + j, OCg, count, oc,
                     static_cast<char*>(args.outputs[0]->data) + (n * OC + oc) * M + p0);
            }
          }
        });
      }
    }
  }

  template <class TensorPtr>
  Requantization requantization(const std::vector<TensorPtr>& in) const {
    const float x_scale = in[1]->template ptr<float>()[0], y_scale = in[6]->template ptr<float>()[0];
    const int32_t y_zero = value_at(in[7], 0);
    const Tensor* w_scale = in[4];
    const int64_t OC = s_.out_c;
    Requantization r;
    r.multiplier.resize((size_t)OC);
    r.bias.assign((size_t)OC, 0);
    r.w_zeros = weight_zeros(in[5]);
    for (int64_t oc = 0; oc < OC; ++oc) {
      const float ws = w_scale->ptr<float>()[w_scale->numel() == 1 ? 0 : oc];
      r.multiplier[oc] = (x_scale * ws) / y_scale;  // in float32, as onnxruntime forms it
      if (in.size() > 8) r.bias[oc] = in[8]->template ptr<int32_t>()[oc];
    }
    r.params.zero = y_zero;
    r.params.low = relu_ ? std::max<int32_t>(y_zero, y_signed_ ? -128 : 0) : (y_signed_ ? -128 : 0);
    r.params.high = y_signed_ ? 127 : 255;
    return r;
  }

  // The zero point of each output channel (one for all when w_zero has one value).
  std::vector<int32_t> weight_zeros(const Tensor* w_zero) const {
    std::vector<int32_t> out((size_t)s_.out_c);
    for (int64_t oc = 0; oc < s_.out_c; ++oc) out[oc] = value_at(w_zero, oc);
    return out;
  }

  // The weights of each group as the GEMM's B: [K, OC/group], element (k, j) at w[(g OCg + j) K + k].
  // Channels-last KxK layers take the depths in the order (ki, kj, c) of their patch rows.
  std::vector<cpu::PackedInt8B> pack(const void* w, ThreadPool* pool) const {
    const int64_t K = s_.depth(), OCg = s_.out_c_per_group();
    std::vector<uint8_t> reordered;
    const int64_t taps = s_.kernel_h * s_.kernel_w, Cg = s_.in_c_per_group();
    if (channels_last_ && taps > 1) {
      reordered.resize((size_t)(s_.out_c * K));
      const uint8_t* src = static_cast<const uint8_t*>(w);
      for (int64_t oc = 0; oc < s_.out_c; ++oc)
        for (int64_t c = 0; c < Cg; ++c)
          for (int64_t t = 0; t < taps; ++t) reordered[oc * K + t * Cg + c] = src[(oc * Cg + c) * taps + t];
      w = reordered.data();
    }
    std::vector<cpu::PackedInt8B> out;
    for (int64_t g = 0; g < s_.group; ++g) {
      out.push_back(cpu::pack_int8_b(K, OCg, static_cast<const uint8_t*>(w) + g * OCg * K, K, true, w_signed_, pool));
    }
    return out;
  }

  // Patches of image n, group g: row p = (oh, ow), column k = (c, ki, kj); outside the input: x_zero.
  void im2col(const uint8_t* x, int64_t n, int64_t g, uint8_t x_zero, uint8_t* patches, ThreadPool* pool) const {
    const int64_t Cg = s_.in_c_per_group(), KH = s_.kernel_h, KW = s_.kernel_w, K = s_.depth();
    const int64_t H = s_.in_h, W = s_.in_w, OW = s_.out_w;
    const uint8_t* base = x + (n * s_.in_c + g * Cg) * H * W;
    if (s_.is_pointwise()) {  // the patches are the transposed input: blocks of pixels
      const int64_t HW = H * W;
      constexpr int64_t kBlock = 64;
      parallel_for(pool, cpu::ceil_div(HW, kBlock), std::max<int64_t>(1, 4096 / std::max<int64_t>(1, kBlock * K)),
                   [&](int64_t b0, int64_t b1) {
        // Locals: byte stores may alias anything, which would reload captured values per byte.
        uint8_t* out_base = patches;
        const uint8_t* in = base;
        const int64_t depth = K, channels = Cg, pixels = HW;
        for (int64_t b = b0; b < b1; ++b) {
          const int64_t p0 = b * kBlock, p1 = std::min(pixels, p0 + kBlock);
          for (int64_t c = 0; c < channels; ++c) {
            const uint8_t* src = in + c * pixels;
            uint8_t* dst = out_base + c;
            for (int64_t p = p0; p < p1; ++p) dst[p * depth] = src[p];
          }
        }
      });
      return;
    }
    const int64_t SH = s_.stride_h, SW = s_.stride_w, PT = s_.pad_top, PL = s_.pad_left, DH = s_.dilation_h,
                  DW = s_.dilation_w;
    parallel_for(pool, s_.out_h, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, OW * K)),
                 [&](int64_t r0, int64_t r1) {
      const int64_t sh = SH, sw = SW, pt = PT, pl = PL, dh = DH, dw = DW;
      // Locals: byte stores may alias anything, which would reload captured values per byte.
      uint8_t* const out_base = patches;
      const int64_t channels = Cg, kh = KH, kw = KW, depth = K, height = H, width = W, out_w = OW;
      const uint8_t pad = x_zero;
      const uint8_t* const in_base = base;
      for (int64_t oh = r0; oh < r1; ++oh) {
        for (int64_t ow = 0; ow < out_w; ++ow) {
          uint8_t* row = out_base + (oh * out_w + ow) * depth;
          const int64_t ih0 = oh * sh - pt, iw0 = ow * sw - pl;
          const bool cols_inside = iw0 >= 0 && iw0 + (kw - 1) * dw < width;
          for (int64_t c = 0; c < channels; ++c) {
            const uint8_t* plane = in_base + c * height * width;
            for (int64_t ki = 0; ki < kh; ++ki) {
              const int64_t ih = ih0 + ki * dh;
              uint8_t* dst = row + (c * kh + ki) * kw;
              if (ih < 0 || ih >= height) {
                for (int64_t kj = 0; kj < kw; ++kj) dst[kj] = pad;
                continue;
              }
              const uint8_t* src = plane + ih * width + iw0;
              if (cols_inside) {
                for (int64_t kj = 0; kj < kw; ++kj) dst[kj] = src[kj * dw];
                continue;
              }
              for (int64_t kj = 0; kj < kw; ++kj) {
                const int64_t iw = iw0 + kj * dw;
                dst[kj] = (iw >= 0 && iw < width) ? plane[ih * width + iw] : pad;
              }
            }
          }
        }
      }
    });
  }

  void run_depthwise(const Tensor* x, const Tensor* w, int32_t x_zero, const Requantization& rq,
                     Tensor* y, ThreadPool* pool) const {
    const int64_t KH = s_.kernel_h, KW = s_.kernel_w;
    // Centred 8-bit values multiply to at most 255 * 255, so sums of up to 258 products are
    // exact in float32 (below 2^24), whose vector multiply-adds are cheaper than 32-bit integer
    // ones; longer kernels sum in int32.
    if (KH * KW > 258) {
      depthwise<uint32_t>(x, w, x_zero, rq, y, pool);
      return;
    }
    depthwise<float>(x, w, x_zero, rq, y, pool);
  }

  template <class Acc>
  void depthwise(const Tensor* x, const Tensor* w, int32_t x_zero, const Requantization& rq,
                 Tensor* y, ThreadPool* pool) const {
    const int64_t C = s_.in_c, H = s_.in_h, W = s_.in_w, OH = s_.out_h, OW = s_.out_w, KH = s_.kernel_h,
                  KW = s_.kernel_w;
    const bool xs = x_signed_, wsg = w_signed_;
    parallel_for(pool, s_.batch * C, 1, [&](int64_t i0, int64_t i1) {
      std::vector<Acc> taps((size_t)(KH * KW)), plane((size_t)(H * W)), row((size_t)OW);
      std::vector<int32_t> sums((size_t)OW);
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t c = i % C;
        // Centred values: padding contributes (x_zero - x_zero) = 0 and is skipped.
        for (int64_t t = 0; t < KH * KW; ++t) {
          const int64_t idx = c * KH * KW + t;
          taps[t] = (Acc)((wsg ? (int32_t)w->ptr<int8_t>()[idx] : (int32_t)w->ptr<uint8_t>()[idx]) - rq.w_zeros[c]);
        }
        for (int64_t p = 0; p < H * W; ++p) {
          const int64_t idx = i * H * W + p;
          plane[p] = (Acc)((xs ? (int32_t)x->ptr<int8_t>()[idx] : (int32_t)x->ptr<uint8_t>()[idx]) - x_zero);
        }
        char* out = static_cast<char*>(y->data) + i * OH * OW;
        for (int64_t oh = 0; oh < OH; ++oh) {
          // One output row: each tap adds a shifted run of an input row over the output columns
          // whose input column is inside the image (the rest is padding, which adds 0).
          std::fill(row.begin(), row.end(), (Acc)0);
          const int64_t ih0 = oh * s_.stride_h - s_.pad_top;
          for (int64_t ki = 0; ki < KH; ++ki) {
            const int64_t ih = ih0 + ki * s_.dilation_h;
            if (ih < 0 || ih >= H) continue;
            const Acc* in = plane.data() + ih * W;
            for (int64_t kj = 0; kj < KW; ++kj) {
              const int64_t off = kj * s_.dilation_w - s_.pad_left;  // iw = ow * stride + off
              const int64_t lo = off >= 0 ? 0 : (-off + s_.stride_w - 1) / s_.stride_w;
              const int64_t hi = std::min<int64_t>(OW, W - 1 - off < 0 ? 0 : (W - 1 - off) / s_.stride_w + 1);
              const Acc tap = taps[ki * KW + kj];
              Acc* __restrict acc = row.data();
              if (s_.stride_w == 1) {
                for (int64_t ow = lo; ow < hi; ++ow) acc[ow] += in[ow + off] * tap;
              } else {
                for (int64_t ow = lo; ow < hi; ++ow) acc[ow] += in[ow * s_.stride_w + off] * tap;
              }
            }
          }
          for (int64_t ow = 0; ow < OW; ++ow) sums[ow] = (int32_t)row[ow];
          rq.row(sums.data(), 1, OW, c, out + oh * OW);
        }
      }
    });
  }

  // The residual goes into the GEMM's epilogue (depthwise layers leave it to execute).
  void run_channels_last(const Tensor* x, const Tensor* w, int32_t x_zero, const Requantization& rq,
                         const Residual& residual, Tensor* y, void* scratch, ThreadPool* pool) const {
    const int64_t OC = s_.out_c;
    if (depthwise_) {
      cpu::DepthwiseInt8Weights fresh;
      if (!depthwise_prepared_)
        fresh =
            cpu::prepare_depthwise_int8(w->data, w_signed_, rq.w_zeros.data(), s_.in_c, s_.kernel_h, s_.kernel_w);
      cpu::DepthwiseInt8Nhwc a;
      a.batch = s_.batch, a.channels = s_.in_c, a.in_h = s_.in_h, a.in_w = s_.in_w, a.out_h = s_.out_h, a.out_w = s_.out_w;
      a.kernel_h = s_.kernel_h, a.kernel_w = s_.kernel_w, a.stride_h = s_.stride_h, a.stride_w = s_.stride_w;
      a.pad_top = s_.pad_top, a.pad_left = s_.pad_left, a.dilation_h = s_.dilation_h, a.dilation_w = s_.dilation_w;
      a.x = x->data, a.x_signed = x_signed_, a.x_zero = x_zero, a.bias = rq.bias.data();
      a.weights = depthwise_prepared_ ? &depthwise_weights_ : &fresh;
      a.multiplier = rq.multiplier.data(), a.out_zero = rq.params.zero, a.out_low = rq.params.low;
      a.out_high = rq.params.high, a.y = y->data;
      cpu::depthwise_int8_nhwc(a, pool);
      return;
    }
    std::vector<cpu::PackedInt8B> fresh;
    const std::vector<cpu::PackedInt8B>& packed = packed_.empty() ? (fresh = pack(w->data, pool)) : packed_;
    const int64_t OCg = s_.out_c_per_group(), Cg = s_.in_c_per_group(), C = s_.in_c;
    const int64_t pixels = s_.out_h * s_.out_w;
    const uint8_t* xb = static_cast<const uint8_t*>(x->data);
    uint8_t* yb = static_cast<uint8_t*>(y->data);
    for (int64_t g = 0; g < s_.group; ++g) {
      cpu::Int8Epilogue ep;
      ep.a_zero = &x_zero;
      ep.b_zero = rq.w_zeros.data() + g * OCg;
      ep.b_zero_step = 1;
      ep.requant_multiplier = rq.multiplier.data() + g * OCg;
      ep.requant_bias = rq.bias.data() + g * OCg;
      ep.out_zero = rq.params.zero, ep.out_low = rq.params.low, ep.out_high = rq.params.high;
      ep.residual_add = residual.add;
      // The residual at the output's place of the GEMM's C (offset: from the output's start).
      auto residual_at = [&](int64_t offset) { return residual.values ? residual.values + offset : nullptr; };
      if (s_.is_pointwise()) {  // the input's pixels are the GEMM's rows, all images at once
        ep.residual = residual_at(g * OCg);
        cpu::gemm_int8(s_.batch * pixels, xb + g * Cg, C, x_signed_, packed[g], ep, yb + g * OCg, OC, pool);
        continue;
      }
      const bool image = image_layer();
      cpu::PackedInt8B fresh_rows;  // row-tap weights of a layer whose weights are not constant
      if (image && row_taps() && packed_row_taps_.n == 0) fresh_rows = pack_row_taps(w->data);
      const cpu::PackedInt8B& image_b =
          image && row_taps() ? (packed_row_taps_.n ? packed_row_taps_ : fresh_rows) : packed[g];
      if (image && cpu::gemm_int8_image_applies(pixels, x_signed_, image_b, ep)) {
        // AMX reads the input's pixels in place (its copy padded with the zero point): no patches.
        for (int64_t n = 0; n < s_.batch; ++n) {
          const cpu::Int8ImageRows rows = image_rows(xb + n * s_.in_h * s_.in_w * C, (uint8_t)x_zero, scratch, pool);
          ep.residual = residual_at(n * pixels * OC);
          cpu::gemm_int8_image(rows, x_signed_, image_b, ep, yb + n * pixels * OC, OC, pool);
        }
        continue;
      }
      uint8_t* patches = static_cast<uint8_t*>(scratch);
      ep.a_rows_padded = true;  // patch rows of patch_stride() bytes
      for (int64_t n = 0; n < s_.batch; ++n) {
        im2col_channels_last(xb, n, g, (uint8_t)x_zero, patches, pool);
        ep.residual = residual_at(n * pixels * OC + g * OCg);
        cpu::gemm_int8(pixels, patches, patch_stride(), x_signed_, packed[g], ep, yb + n * pixels * OC + g * OCg, OC,
                       pool);
      }
    }
  }

  // Channels-last KxK layers that AMX may run from the input itself (gemm_int8_image): one group,
  // no dilation, whole tiles of 64 channels. 1x1 layers with strides keep their patches, a
  // gather of every other pixel: their tiles would hold one output row each, partly empty on
  // small images (resnet50's 7x7x2048 layer 0.31 ms from patches, 0.42 from the image).
  bool image_layer() const {
    return channels_last_ && !depthwise_ && s_.kernel_h * s_.kernel_w > 1 && s_.group == 1 && s_.dilation_h == 1 &&
           s_.dilation_w == 1 && (s_.in_c % cpu::kAmxInt8TileDepth == 0 || row_taps());
  }
  // A layer of few channels (a network's first, on an image's 3) reads a whole kernel row as one
  // tap of 64 depths, its weights packed so (pack_row_taps).
  bool row_taps() const {
    return s_.in_c % cpu::kAmxInt8TileDepth != 0 && s_.kernel_w * s_.in_c <= cpu::kAmxInt8TileDepth;
  }
  // Kernel rows a row tap reads at once, from an image whose pixels hold that many rows
  // (Int8ImageRows::tap_rows; at most 16 channels and kMaxStackedRows rows, which
  // stack_image_rows takes): as many as fit in 64 bytes of KW pixels, or the most of those that
  // are a multiple of the stride, so that the stacked image holds only every stride_h-th row
  // (stacked_rows_strided). resnet50's 7x7 first layer (stride 2): 2 rows, 4 taps instead of 7,
  // 15 % faster than 3 rows in 3 taps from every row; mobilenet_v2's 3x3: 3 rows, one tap.
  int64_t stacked_rows() const {
    if (!row_taps() || s_.in_c > 16) return 1;
    const int64_t most = std::min({s_.kernel_h, cpu::kAmxInt8TileDepth / (s_.kernel_w * s_.in_c), cpu::kMaxStackedRows});
    if (most <= 1 || most >= s_.kernel_h || most % s_.stride_h == 0) return std::max<int64_t>(1, most);
    const int64_t strided = most / s_.stride_h * s_.stride_h;
    return strided >= 2 ? strided : most;
  }
  int64_t row_tap_count() const { return cpu::ceil_div(s_.kernel_h, stacked_rows()); }
  // Whether the taps' first rows are all multiples of the stride, so that the stacked image holds
  // those rows only (a stride-2 layer: half the rows).
  bool stacked_rows_strided() const { return row_tap_count() == 1 || stacked_rows() % s_.stride_h == 0; }
  // The weights for row taps: [taps * 64, OC], tap t's depths (kj, s, c) at
  // t * 64 + (kj * S + s) * C + c for kernel row t * S + s (S = stacked_rows()), zero past the
  // kernel's rows and past KW * S * C.
  cpu::PackedInt8B pack_row_taps(const void* w) const {
    const int64_t C = s_.in_c, KH = s_.kernel_h, KW = s_.kernel_w, S = stacked_rows();
    const int64_t K = row_tap_count() * cpu::kAmxInt8TileDepth;
    std::vector<uint8_t> reordered((size_t)(s_.out_c * K), 0);
    const uint8_t* src = static_cast<const uint8_t*>(w);
    for (int64_t oc = 0; oc < s_.out_c; ++oc)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t ki = 0; ki < KH; ++ki)
          for (int64_t kj = 0; kj < KW; ++kj)
            reordered[oc * K + ki / S * cpu::kAmxInt8TileDepth + (kj * S + ki % S) * C + c] =
                src[((oc * C + c) * KH + ki) * KW + kj];
    return cpu::pack_int8_b(K, s_.out_c, reordered.data(), K, true, w_signed_, nullptr);
  }
  // Stride-1 layers whose right padding fits in the next row's left (symmetric padding, as 3x3
  // layers have) run flat (Int8ImageRows::flat): their padded rows share the padding columns.
  bool flat_image() const {
    const int64_t pad_right = s_.out_w - 1 + s_.kernel_w - s_.in_w - s_.pad_left;
    return !row_taps() && s_.stride_h == 1 && s_.stride_w == 1 && pad_right <= s_.pad_left;
  }
  // Stride-2 layers whose output rows would fill under three quarters of their tiles (resnet50's
  // last stage: 7 pixels in 16) read their image as four phase planes, flat
  // (Int8ImageRows::phase_bytes): about half the tile rows.
  bool phased_image() const {
    return !row_taps() && s_.stride_h == 2 && s_.stride_w == 2 && 4 * s_.out_w < 3 * cpu::round_up(s_.out_w, 16);
  }
  // The padded image gemm_int8_image reads, as rows of image_width() pixels: the rows and
  // columns that whole tiles of 16 output pixels reach (flat: the rows that the tiles over every
  // position reach, rows of in_w + pad_left pixels; phased: each plane's, rows of the output's
  // width and the kernel's reach in the plane).
  int64_t image_width() const {
    if (phased_image()) return s_.out_w + (s_.kernel_w - 1) / 2;
    if (flat_image()) return s_.in_w + s_.pad_left;
    return (cpu::round_up(s_.out_w, 16) - 1) * s_.stride_w + s_.kernel_w;
  }
  int64_t image_height() const {
    const int64_t W = image_width();
    if (phased_image()) {
      const int64_t reach = cpu::round_up(s_.out_h * W, 16) + (s_.kernel_h - 1) / 2 * W + (s_.kernel_w + 1) / 2;
      return cpu::ceil_div(reach, W);
    }
    if (flat_image()) {
      const int64_t reach = cpu::round_up(s_.out_h * W, 16) + (s_.kernel_h - 1) * W + s_.kernel_w;
      return cpu::ceil_div(reach, W);
    }
    // Row taps: whole stacks of rows for the last tap (rows past the kernel's meet zero weights).
    const int64_t reach = row_taps() ? row_tap_count() * stacked_rows() : s_.kernel_h;
    return (s_.out_h - 1) * s_.stride_h + reach;
  }
  // The padded image's bytes, and 64 read past its last pixel by row taps.
  size_t padded_image_bytes() const {
    const int64_t planes = phased_image() ? 4 : 1;
    return (size_t)cpu::round_up(planes * image_height() * image_width() * s_.in_c + cpu::kAmxInt8TileDepth,
                                 cpu::kAmxInt8TileDepth);
  }
  // Rows of the stacked image (stacked_rows() > 1): one per first row of a tap (of every
  // stride_h-th row where stacked_rows_strided()).
  int64_t stacked_image_height() const {
    const int64_t rows = image_height() - stacked_rows() + 1;
    return stacked_rows_strided() ? cpu::ceil_div(rows, s_.stride_h) : rows;
  }
  size_t image_bytes() const {
    size_t bytes = padded_image_bytes();
    if (stacked_rows() > 1) {
      bytes += (size_t)(stacked_image_height() * image_width() * stacked_rows() * s_.in_c + cpu::kAmxInt8TileDepth);
    }
    return bytes;
  }

  // One image of x as gemm_int8_image reads it: in place where it is uint8, unpadded and holds
  // every pixel the tiles reach (rows of W pixels; the columns past the last output's taps run
  // into the next row, for outputs that are dropped); otherwise a copy into `scratch`, the zero
  // point around the image, int8 flipped to uint8.
  cpu::Int8ImageRows image_rows(const uint8_t* x, uint8_t x_zero, void* scratch, ThreadPool* pool) const {
    const int64_t C = s_.in_c, H = s_.in_h, W = s_.in_w, Hp = image_height(), Wp = image_width();
    cpu::Int8ImageRows rows;
    rows.channels = C, rows.out_h = s_.out_h, rows.out_w = s_.out_w, rows.kernel_h = s_.kernel_h;
    rows.kernel_w = s_.kernel_w, rows.stride_h = s_.stride_h, rows.stride_w = s_.stride_w;
    rows.tap_tiles = C / cpu::kAmxInt8TileDepth;
    if (row_taps()) rows.kernel_w = 1, rows.tap_tiles = 1;
    rows.flat = flat_image();
    uint8_t* image = static_cast<uint8_t*>(scratch);
    const uint8_t flip = x_signed_ ? 0x80 : 0, fill = (uint8_t)(x_zero ^ flip);
    const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, Wp * C));  // rows of the copy a task
    // n bytes of the input into the copy, int8 flipped to uint8.
    auto copy_in = [&](uint8_t* dst, const uint8_t* src, int64_t n) {
      if (flip) {
        for (int64_t i = 0; i < n; ++i) dst[i] = (uint8_t)(src[i] ^ flip);
      } else {
        std::memcpy(dst, src, (size_t)n);
      }
    };
    if (phased_image()) {
      // Plane (a, b)'s pixel (i, j) is the padded image's (2i + a, 2j + b).
      const int64_t plane = Hp * Wp * C;
      parallel_for(pool, 4 * Hp, grain, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t phase = r / Hp, i = r % Hp, ih = 2 * i + phase / 2 - s_.pad_top;
          uint8_t* dst = image + phase * plane + i * Wp * C;
          for (int64_t j = 0; j < Wp; ++j, dst += C) {
            const int64_t iw = 2 * j + phase % 2 - s_.pad_left;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) {
              std::memset(dst, fill, (size_t)C);
              continue;
            }
            copy_in(dst, x + (ih * W + iw) * C, C);
          }
        }
      });
      std::memset(image + 4 * plane, 0, (size_t)cpu::kAmxInt8TileDepth);
      rows.x = image, rows.width = Wp, rows.phase_bytes = plane;
      rows.flat = true, rows.stride_h = 1, rows.stride_w = 1;
      return rows;
    }
    const bool unpadded = s_.pad_top == 0 && s_.pad_left == 0 && Hp <= H &&
                          (s_.out_w - 1) * s_.stride_w + s_.kernel_w <= W;
    if (!x_signed_ && unpadded && !row_taps() && !rows.flat && (Hp - 1) * W + Wp <= H * W) {
      rows.x = x, rows.width = W;
      return rows;
    }
    const int64_t left = std::min(s_.pad_left, Wp), inside = std::max<int64_t>(0, std::min(W, Wp - left));
    parallel_for(pool, Hp, grain, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        uint8_t* dst = image + r * Wp * C;
        const int64_t ih = r - s_.pad_top;
        if (ih < 0 || ih >= H) {
          std::memset(dst, fill, (size_t)(Wp * C));
          continue;
        }
        std::memset(dst, fill, (size_t)(left * C));
        const uint8_t* src = x + ih * W * C;
        uint8_t* body = dst + left * C;
        copy_in(body, src, inside * C);
        std::memset(body + inside * C, fill, (size_t)((Wp - left - inside) * C));
      }
    });
    std::memset(image + Hp * Wp * C, 0, (size_t)cpu::kAmxInt8TileDepth);  // read past the last pixel by row taps
    rows.x = image, rows.width = Wp;
    const int64_t S = stacked_rows();
    if (S > 1) {
      const int64_t Hs = stacked_image_height();
      uint8_t* stacked = image + padded_image_bytes();
      const int64_t step = stacked_rows_strided() ? s_.stride_h : 1;
      parallel_for(pool, Hs, std::max<int64_t>(1, grain / S),
                   [&](int64_t r0, int64_t r1) { cpu::stack_image_rows(image, Wp, C, S, step, r0, r1, stacked); });
      std::memset(stacked + Hs * Wp * S * C, 0, (size_t)cpu::kAmxInt8TileDepth);
      rows.x = stacked, rows.channels = S * C, rows.kernel_h = row_tap_count(), rows.tap_rows = S / step;
      if (step > 1) rows.stride_h = 1;
    }
    return rows;
  }

  // The weights gemm_int8_image multiplies: packed (one group) or packed for row taps.
  const cpu::PackedInt8B& image_weights(const std::vector<cpu::PackedInt8B>& packed) const {
    return row_taps() ? packed_row_taps_ : packed[0];
  }

  // Row stride of the channels-last patches: whole groups of 4 depths, so that the GEMM can read
  // the rows as they are (the padding bytes meet the weights' zero padding), and whole tiles of
  // 64 depths from 64 on, which AMX reads in place.
  int64_t patch_stride() const {
    const int64_t depth = s_.depth();
    return cpu::round_up(depth, depth >= cpu::kAmxInt8TileDepth ? cpu::kAmxInt8TileDepth : cpu::kInt8Depth);
  }

  // n bytes: short runs (a few channels times the kernel's width) by words, inline, where a
  // memcpy call would cost more than the copy.
  static void copy_bytes(uint8_t* dst, const uint8_t* src, int64_t n) {
    if (n >= 64) {
      std::memcpy(dst, src, (size_t)n);
      return;
    }
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) std::memcpy(dst + i, src + i, 8);
    for (; i < n; ++i) dst[i] = src[i];
  }

  // Patches of image n, group g, channels last: row p = (oh, ow), depths (ki, kj, c), each tap a
  // run of the group's C/group bytes; outside the input: x_zero.
  void im2col_channels_last(const uint8_t* x, int64_t n, int64_t g, uint8_t x_zero, uint8_t* patches,
                            ThreadPool* pool) const {
    const int64_t Cg = s_.in_c_per_group(), C = s_.in_c, KH = s_.kernel_h, KW = s_.kernel_w, K = s_.depth();
    const int64_t H = s_.in_h, W = s_.in_w, OW = s_.out_w;
    const uint8_t* base = x + n * H * W * C + g * Cg;
    const uint8_t* x_end = x + s_.batch * H * W * C;
    const bool runs = Cg == C && s_.dilation_w == 1;
    const int64_t stride = patch_stride(), run = KW * C;
    // Runs of at most 256 bytes (a few channels times the kernel's width, as in a network's first
    // layer, or a 3x3 layer on up to 85 channels) go as fixed-size copies of 16, 32 or 64 bytes
    // each: the bytes past a run are written again by the runs after it (pixels in order, kernel
    // rows in order) or lie in the padding of the row or past the patches (the scratch has
    // kPatchSlack bytes more); the source's extra bytes are read only inside x.
    const int64_t wide = run <= 16 ? 16 : run <= 32 ? 32 : cpu::round_up(run, 64);
    // Output columns whose taps all lie inside the input's width.
    const int64_t sw = s_.stride_w, pad_left = s_.pad_left;
    const int64_t inner_lo = std::min(OW, (pad_left + sw - 1) / sw);
    const int64_t last_left = W + pad_left - KW;  // the largest ow * stride_w whose taps all lie inside
    const int64_t inner_hi = std::max(inner_lo, std::min(OW, last_left >= 0 ? last_left / sw + 1 : 0));
    const int64_t row_step = s_.dilation_h * W * C;  // from one kernel row's input row to the next
    parallel_for(pool, s_.out_h, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, OW * K)), [&](int64_t r0, int64_t r1) {
      for (int64_t oh = r0; oh < r1; ++oh) {
        const int64_t ih0 = oh * s_.stride_h - s_.pad_top;
        const bool rows_inside = ih0 >= 0 && ih0 + (KH - 1) * s_.dilation_h < H;
        for (int64_t ow = 0; ow < OW; ++ow) {
          uint8_t* dst = patches + (oh * OW + ow) * stride;
          const int64_t iw0 = ow * sw - pad_left;
          if (runs && rows_inside && run <= kFixedRunBytes && ow >= inner_lo && ow < inner_hi) {
            // Every tap inside: one fixed-size copy per kernel row, in the order of the row's bytes.
            const uint8_t* src = base + (ih0 * W + iw0) * C;
            for (int64_t ki = 0; ki < KH; ++ki, dst += run, src += row_step) {
              if (src + wide <= x_end) copy_fixed(dst, src, wide);
              else copy_bytes(dst, src, run);
            }
            continue;
          }
          for (int64_t ki = 0; ki < KH; ++ki) {
            const int64_t ih = ih0 + ki * s_.dilation_h;
            if (runs) {  // the row's taps are adjacent pixels: one copy of those inside
              const int64_t lo = std::min(KW, std::max<int64_t>(0, -iw0)), hi = std::max(lo, std::min(KW, W - iw0));
              if (ih < 0 || ih >= H) {
                std::memset(dst, x_zero, (size_t)run);
              } else {
                if (lo > 0) std::memset(dst, x_zero, (size_t)(lo * C));
                copy_bytes(dst + lo * C, base + (ih * W + iw0 + lo) * C, (hi - lo) * C);
                if (hi < KW) std::memset(dst + hi * C, x_zero, (size_t)((KW - hi) * C));
              }
              dst += run;
              continue;
            }
            for (int64_t kj = 0; kj < KW; ++kj, dst += Cg) {
              const int64_t iw = iw0 + kj * s_.dilation_w;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) std::memset(dst, x_zero, (size_t)Cg);
              else std::memcpy(dst, base + (ih * W + iw) * C, (size_t)Cg);
            }
          }
        }
      }
    });
  }

  // width (16, 32, or a multiple of 64 up to 256) bytes as constant-size copies, which the compiler
  // makes vector moves.
  static void copy_fixed(uint8_t* dst, const uint8_t* src, int64_t width) {
    if (width == 16) {
      std::memcpy(dst, src, 16);
    } else if (width == 32) {
      std::memcpy(dst, src, 32);
    } else {
      for (int64_t at = 0; at < width; at += 64) std::memcpy(dst + at, src + at, 64);
    }
  }

  // The longest run copied by copy_fixed, and the bytes past the channels-last patches that its
  // copies may write.
  static constexpr int64_t kFixedRunBytes = 256;
  static constexpr size_t kPatchSlack = 64;

  bool x_signed_, w_signed_, y_signed_;
  bool relu_ = false, depthwise_ = false, channels_last_ = false;
  ConvShape s_;
  std::vector<cpu::PackedInt8B> packed_;
  cpu::DepthwiseInt8Weights depthwise_weights_;
  bool depthwise_prepared_ = false;
  Requantization requant_;
  bool requant_prepared_ = false;
  bool residual_ = false;  // inputs 9-13 add a residual
  cpu::quantized_elementwise_detail::BinaryParams residual_add_;
  bool residual_prepared_ = false;
  cpu::PackedInt8B packed_row_taps_;  // the weights for row taps (pack_row_taps), when constant
  bool image_planned_ = false;  // runs read the input in place (gemm_int8_image), as the plan found
};

MNNPY_REGISTER_KERNEL("QLinearConv2D", "cpu", construct_kernel<QLinearConvKernel>);

}  // namespace

}  // namespace mnnpy
