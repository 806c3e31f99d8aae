// The gradient ops of Conv2D (float32 NCHW), also the building blocks of transposed convolution:
//   Conv2DBackpropInput:  inputs dy [N, Cout, Ho, Wo], w [Cout, C/group, kh, kw], optional bias [C]
//                         -> dx [N, C, H, W], the transposed convolution of dy (plus bias);
//                         attr input_size [H, W]
//   Conv2DBackpropFilter: inputs x [N, C, H, W], dy [N, Cout, Ho, Wo]
//                         -> dw [Cout, C/group, kh, kw]; attr kernel_size [kh, kw]
// Both take Conv2D's strides, pads, dilations and group. Only the top and left pads place the taps;
// taps that land outside the input are dropped, so H, W and Ho, Wo need not match exactly the sizes
// a Conv2D would pair (a transposed convolution's output_padding). Kernels: backend/cpu/conv_backward.h.
// Gradient rules: Conv2DBackpropInput's (the input gradient is a Conv2D, the weight gradient a
// Conv2DBackpropFilter with the roles swapped); Conv2D's own rule lives in conv.cpp.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/conv_backward.h"
#include "backend/cpu/depthwise.h"
#include "backend/cpu/winograd.h"
#include "mnnpy/autograd.h"
#include "mnnpy/op_registry.h"
#include "mnnpy/ops.h"
#include "mnnpy/shape_ops.h"
#include "mnnpy/thread_pool.h"
#include "ops/conv_common.h"

namespace mnnpy {

namespace {

const char* const kInputOp = "Conv2DBackpropInput";
const char* const kFilterOp = "Conv2DBackpropFilter";

std::vector<int64_t> positive_pair(const Attrs& attrs, const std::string& op, const char* key) {
  if (!attrs.has(key)) throw ValueError(op + ": the '" + key + "' attribute is required");
  const std::vector<int64_t> v = conv_common::int_list(attrs, op, key, {}, 2);
  if (v[0] <= 0 || v[1] <= 0) throw ValueError(op + ": '" + key + "' must be positive, got " + shape_str(v));
  return v;
}

void check_4d(const Shape& s, const std::string& op, const char* what) {
  if (s.size() != 4) throw ValueError(op + ": " + what + " must be 4-D, got shape " + shape_str(s));
  for (int64_t d : s)
    if (d < 0) throw ValueError(op + ": " + what + " has a negative dimension: " + shape_str(s));
}

// The geometry from the attributes and sizes; checks groups and channels.
cpu::ConvShape backprop_shape(const std::string& op, Attrs& attrs, int64_t batch, int64_t in_c, int64_t in_h,
                              int64_t in_w, int64_t out_c, int64_t out_h, int64_t out_w, int64_t kh, int64_t kw) {
  const conv_common::ConvAttrs a = conv_common::read_conv_attrs(attrs, op);
  if (a.activation != 0) throw ValueError(op + ": a fused activation is not supported");
  if (in_c % a.group != 0 || out_c % a.group != 0) {
    throw ValueError(op + ": channels (" + std::to_string(in_c) + " in, " + std::to_string(out_c) +
                     " out) do not split into " + std::to_string(a.group) + " groups");
  }
  cpu::ConvShape s;
  s.batch = batch, s.in_c = in_c, s.in_h = in_h, s.in_w = in_w;
  s.out_c = out_c, s.out_h = out_h, s.out_w = out_w;
  s.kernel_h = kh, s.kernel_w = kw;
  s.stride_h = a.strides[0], s.stride_w = a.strides[1];
  s.pad_top = a.pads[0], s.pad_left = a.pads[1];
  s.dilation_h = a.dilations[0], s.dilation_w = a.dilations[1];
  s.group = a.group;
  return s;
}

cpu::ConvShape input_grad_shape(const std::vector<TensorType>& in, Attrs& attrs) {
  conv_common::check_float32(in, kInputOp, {"output gradient", "weight", "bias"});
  const Shape &dy = in[0].shape, &w = in[1].shape;
  check_4d(dy, kInputOp, "output gradient");
  check_4d(w, kInputOp, "weight");
  if (w[0] != dy[1]) {
    throw ValueError(std::string(kInputOp) + ": weight " + shape_str(w) + " has " + std::to_string(w[0]) +
                     " output channels but the output gradient " + shape_str(dy) + " has " + std::to_string(dy[1]));
  }
  if (w[1] <= 0 || w[2] <= 0 || w[3] <= 0) {
    throw ValueError(std::string(kInputOp) + ": weight shape " + shape_str(w) + " has an empty dimension");
  }
  const std::vector<int64_t> size = positive_pair(attrs, kInputOp, "input_size");
  attrs.set("input_size", size);
  const int64_t group = attrs.get_int("group", 1);
  const cpu::ConvShape s =
      backprop_shape(kInputOp, attrs, dy[0], w[1] * group, size[0], size[1], dy[1], dy[2], dy[3], w[2], w[3]);
  if (in.size() > 2 && (in[2].shape.size() != 1 || in[2].shape[0] != s.in_c)) {
    throw ValueError(std::string(kInputOp) + ": bias must have shape (" + std::to_string(s.in_c) + ",), got " +
                     shape_str(in[2].shape));
  }
  return s;
}

cpu::ConvShape filter_grad_shape(const std::vector<TensorType>& in, Attrs& attrs) {
  conv_common::check_float32(in, kFilterOp, {"input", "output gradient"});
  const Shape &x = in[0].shape, &dy = in[1].shape;
  check_4d(x, kFilterOp, "input");
  check_4d(dy, kFilterOp, "output gradient");
  if (x[0] != dy[0]) {
    throw ValueError(std::string(kFilterOp) + ": input " + shape_str(x) + " and output gradient " + shape_str(dy) +
                     " have different batch sizes");
  }
  const std::vector<int64_t> k = positive_pair(attrs, kFilterOp, "kernel_size");
  attrs.set("kernel_size", k);
  return backprop_shape(kFilterOp, attrs, x[0], x[1], x[2], x[3], dy[1], dy[2], dy[3], k[0], k[1]);
}

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
    shape_ = input_grad_shape(ctx.input_types, attrs);
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
    shape_ = filter_grad_shape(ctx.input_types, attrs);
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

OpDef input_grad_def() {
  OpDef def;
  def.name = kInputOp;
  def.min_inputs = 2;
  def.max_inputs = 3;
  def.infer = [](const std::vector<TensorType>& in, Attrs& attrs) {
    const cpu::ConvShape s = input_grad_shape(in, attrs);
    return std::vector<TensorType>{TensorType{DType::Float32, {s.batch, s.in_c, s.in_h, s.in_w}}};
  };
  def.cpu_kernel = [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new InputGradKernel(ctx)); };
  def.packed_inputs = 1u << 1;
  return def;
}

OpDef filter_grad_def() {
  OpDef def;
  def.name = kFilterOp;
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](const std::vector<TensorType>& in, Attrs& attrs) {
    const cpu::ConvShape s = filter_grad_shape(in, attrs);
    return std::vector<TensorType>{TensorType{DType::Float32, {s.out_c, s.in_c_per_group(), s.kernel_h, s.kernel_w}}};
  };
  def.cpu_kernel = [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new FilterGradKernel(ctx)); };
  return def;
}

MNNPY_REGISTER_OP(input_grad_def());
MNNPY_REGISTER_OP(filter_grad_def());

// y = Conv2DBackpropInput(dy, w, b): the gradient for dy is the convolution of g by w over the
// taps that reached y, for w the backprop of the filter with g as the input, for b the sum of g.
MNNPY_REGISTER_GRAD(kInputOp, [](const GradContext& c) {
  const Var &dy = c.input(0), &w = c.input(1), &g = c.grad();
  const Attrs& attrs = c.node.attrs;
  const Shape &dys = dy.type().shape, &ws = w.type().shape;
  const std::vector<int64_t> strides = attrs.get_ints("strides"), pads = attrs.get_ints("pads"),
                             dil = attrs.get_ints("dilations"), size = attrs.get_ints("input_size");
  // Bottom/right pads so that the convolution of g covers dy's size; where g extends a full stride
  // past the last tap (output_padding >= stride), the convolution is longer and is cut to dy's size.
  std::vector<int64_t> conv_pads{pads[0], pads[1], 0, 0};
  bool cut = false;
  for (int axis = 0; axis < 2; ++axis) {
    const int64_t span = dil[axis] * (ws[2 + axis] - 1) + 1, out = dys[2 + axis], stride = strides[axis];
    const int64_t end = std::max<int64_t>(0, (out - 1) * stride + span - size[axis] - pads[axis]);
    cut = cut || (size[axis] + pads[axis] + end - span) / stride + 1 != out;
    conv_pads[2 + axis] = end;
  }
  std::vector<Var> r(c.node.inputs.size());
  Attrs conv = conv_common::geometry_attrs(attrs);
  conv.set("pads", conv_pads).set("activation", (int64_t)0);
  r[0] = make_op("Conv2D", {g, w}, conv);
  if (cut) r[0] = slice(r[0], {0, 0, 0, 0}, {dys[0], dys[1], dys[2], dys[3]});
  Attrs filter = conv_common::geometry_attrs(attrs);
  filter.set("kernel_size", std::vector<int64_t>{ws[2], ws[3]});
  r[1] = make_op(kFilterOp, {g, dy}, filter);
  if (r.size() > 2) r[2] = reduce("sum", g, std::vector<int64_t>{0, 2, 3}, false);
  return r;
});

}  // namespace

}  // namespace mnnpy
