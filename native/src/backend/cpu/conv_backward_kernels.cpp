// CPU kernels of Conv2DBackpropInput and Conv2DBackpropFilter (ops/conv_backward.cpp).
#include <algorithm>
#include <memory>
#include <utility>

#include "backend/cpu/conv.h"
#include "backend/cpu/conv_backward.h"
#include "backend/cpu/depthwise.h"
#include "backend/cpu/winograd.h"
#include "mnnpy/backend.h"
#include "mnnpy/thread_pool.h"
#include "ops/conv_backward_shape.h"

namespace mnnpy {

namespace {

// Stride 1: the input gradient is the forward convolution of dy by the weights flipped in space,
// with input and output channels swapped, padded by (extent - 1 - pad) at the top/left. It then runs
// on the forward's fastest scheme (Winograd for 3x3 layers: fewer products than GEMM + col2im).
bool as_forward_convolution(const cpu::ConvShape& s, cpu::ConvShape& fwd) {
  if (s.stride_h != 1 || s.stride_w != 1) return false;
  const int64_t span_h = s.dilation_h * (s.kernel_h - 1) + 1, span_w = s.dilation_w * (s.kernel_w - 1) + 1;
  fwd = s;
  fwd.in_c = s.out_c, fwd.in_h = s.out_h, fwd.in_w = s.out_w;
  fwd.out_c = s.in_c, fwd.out_h = s.in_h, fwd.out_w = s.in_w;
  fwd.pad_top = span_h - 1 - s.pad_top, fwd.pad_left = span_w - 1 - s.pad_left;
  // The forward kernels expect non-negative padding on every side.
  const int64_t pad_bottom = s.in_h - s.out_h + s.pad_top, pad_right = s.in_w - s.out_w + s.pad_left;
  return fwd.pad_top >= 0 && fwd.pad_left >= 0 && pad_bottom >= 0 && pad_right >= 0 && s.batch > 0 &&
         s.out_h > 0 && s.out_w > 0;
}

class InputGradKernel : public Kernel {
 public:
  explicit InputGradKernel(const KernelContext& ctx) {
    Attrs attrs = ctx.attrs;
    shape_ = conv_common::input_grad_shape(ctx.input_types, attrs);
    has_bias_ = ctx.input_types.size() > 2;
    forward_ = as_forward_convolution(shape_, fwd_);
    if (!forward_) return;
    scheme_ = cpu::choose_conv_scheme(fwd_);
    // Constant weights (a transposed convolution's, at inference): flipped and packed once.
    const Tensor* w = ctx.constants.size() > 1 ? ctx.constants[1] : nullptr;
    if (w) {
      conv_common::AlignedFloats flipped(flipped_floats());
      flip_weights(w->ptr<float>(), flipped.data(), nullptr);
      if (scheme_ == cpu::ConvScheme::Depthwise) {
        packed_ = std::move(flipped);
      } else {
        packed_.resize(packed_floats());
        pack(flipped.data(), packed_.data());
      }
    }
  }
  const char* scheme() const override {
    if (forward_) return cpu::conv_scheme_name(scheme_);
    return shape_.is_depthwise() && shape_.group > 1 ? "depthwise" : "gemm_col2im";
  }
  double flops() const override {
    return 2.0 * (double)shape_.batch * (double)shape_.out_c * (double)(shape_.out_h * shape_.out_w) *
           (double)shape_.depth();
  }
  size_t scratch_bytes() const override {
    if (!forward_) return cpu::conv_backward_scratch_floats(shape_) * sizeof(float);
    const size_t weights = packed_.empty() ? flipped_floats() + packed_floats() : 0;
    return (weights + cpu::conv_padded_bias_floats(fwd_)) * sizeof(float);
  }
  void execute(const KernelArgs& args, void* scratch) const override {
    const float* dy = args.inputs[0]->ptr<float>();
    const float* w = args.inputs[1]->ptr<float>();
    const float* bias = has_bias_ ? args.inputs[2]->ptr<float>() : nullptr;
    float* dx = args.outputs[0]->ptr<float>();
    if (!forward_) {
      cpu::conv2d_backward_input(shape_, dy, w, bias, dx, static_cast<float*>(scratch), args.pool);
      return;
    }
    if (args.outputs[0]->numel() == 0) return;
    float* free_scratch = static_cast<float*>(scratch);
    const float* packed = packed_.data();
    if (packed_.empty()) {
      float* flipped = free_scratch;
      flip_weights(w, flipped, args.pool);
      free_scratch += flipped_floats();
      if (scheme_ == cpu::ConvScheme::Depthwise) {
        packed = flipped;
      } else {
        pack(flipped, free_scratch);
        packed = free_scratch;
        free_scratch += packed_floats();
      }
    }
    const cpu::ConvActivation none;
    if (scheme_ == cpu::ConvScheme::Depthwise) {
      cpu::conv2d_depthwise(fwd_, dy, packed, bias, none, dx, args.pool);
      return;
    }
    float* padded_bias = free_scratch;
    cpu::conv_pad_bias(fwd_, bias, padded_bias);
    if (const int tile = cpu::winograd_tile(scheme_)) {
      cpu::conv2d_winograd(fwd_, tile, dy, packed, padded_bias, none, dx, args.pool);
    } else if (scheme_ == cpu::ConvScheme::PixelRows) {
      cpu::conv2d_pixel_rows(fwd_, dy, packed, padded_bias, none, dx, args.pool);
    } else {
      cpu::conv2d_gemm(fwd_, dy, packed, padded_bias, none, dx, args.pool);
    }
  }

 private:
  size_t flipped_floats() const { return (size_t)(shape_.out_c * shape_.depth()); }
  size_t packed_floats() const {
    if (scheme_ == cpu::ConvScheme::Depthwise) return 0;
    if (const int tile = cpu::winograd_tile(scheme_)) return cpu::winograd_packed_weight_floats(fwd_, tile);
    if (scheme_ == cpu::ConvScheme::PixelRows) return cpu::conv_pixel_rows_weight_floats(fwd_);
    return cpu::conv_packed_weight_floats(fwd_);
  }
  void pack(const float* flipped, float* packed) const {
    if (const int tile = cpu::winograd_tile(scheme_)) cpu::winograd_pack_weights(fwd_, tile, flipped, packed);
    else if (scheme_ == cpu::ConvScheme::PixelRows) cpu::conv_pixel_rows_pack_weights(fwd_, flipped, packed);
    else cpu::conv_pack_weights(fwd_, flipped, packed);
  }
  // flipped[g * Cg + c][o][ky][kx] = w[g * Og + o][c][kh - 1 - ky][kw - 1 - kx], split over the
  // weights' output channels (large layers stream megabytes here on every run).
  void flip_weights(const float* w, float* flipped, ThreadPool* pool) const {
    const int64_t taps = shape_.kernel_h * shape_.kernel_w;
    const int64_t cg = shape_.in_c_per_group(), og = shape_.out_c_per_group();
    parallel_for(pool, shape_.out_c, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, cg * taps)),
                 [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t g = r / og, o = r % og;
        for (int64_t c = 0; c < cg; ++c) {
          const float* src = w + (r * cg + c) * taps;
          float* dst = flipped + ((g * cg + c) * og + o) * taps;
          for (int64_t t = 0; t < taps; ++t) dst[t] = src[taps - 1 - t];
        }
      }
    });
  }

  cpu::ConvShape shape_, fwd_;
  cpu::ConvScheme scheme_ = cpu::ConvScheme::Im2colGemm;
  bool has_bias_ = false, forward_ = false;
  conv_common::AlignedFloats packed_;  // flipped and packed at plan time when the weights are constant
};

class FilterGradKernel : public Kernel {
 public:
  explicit FilterGradKernel(const KernelContext& ctx) {
    Attrs attrs = ctx.attrs;
    shape_ = conv_common::filter_grad_shape(ctx.input_types, attrs);
  }
  const char* scheme() const override { return cpu::conv_backward_weight_scheme(shape_); }
  double flops() const override {
    return 2.0 * (double)shape_.batch * (double)shape_.out_c * (double)(shape_.out_h * shape_.out_w) *
           (double)shape_.depth();
  }
  size_t scratch_bytes() const override { return cpu::conv_backward_scratch_floats(shape_) * sizeof(float); }
  void execute(const KernelArgs& args, void* scratch) const override {
    cpu::conv2d_backward_weight(shape_, args.inputs[0]->ptr<float>(), args.inputs[1]->ptr<float>(),
                                args.outputs[0]->ptr<float>(), static_cast<float*>(scratch), args.pool);
  }

 private:
  cpu::ConvShape shape_;
};

MNNPY_REGISTER_KERNEL("Conv2DBackpropInput", "cpu", construct_kernel<InputGradKernel>);
MNNPY_REGISTER_KERNEL("Conv2DBackpropFilter", "cpu", construct_kernel<FilterGradKernel>);

}  // namespace

}  // namespace mnnpy
