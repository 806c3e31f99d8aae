// Conv2DBlocked: float32 2-D convolution whose output is in the blocked channel layout
// [N, Cout/8, Ho, Wo, 8], with a fused bias, residual and activation.
//   inputs: x blocked [N, C/8, H, W, 8] (or NCHW [N, C, H, W], any C, group 1: a network's first
//           layer), w [Cout, C/group, kh, kw], bias [Cout], optional residual shaped like the output
//           (y = act(conv + bias + residual))
//   attrs:  as Conv2D's: strides, pads [top, left, bottom, right], dilations, group, activation with
//           clip_min/clip_max or alpha/beta
// group is 1 (the direct kernel, backend/cpu/conv_blocked.h, or Winograd for 3x3 stride-1 layers
// where the cost model picks it, backend/cpu/winograd.h) or depthwise, group == C == Cout
// (backend/cpu/depthwise_blocked.h); Cout is a multiple of 8. Constant weights are packed once when
// the plan is built, weights fed at run time into scratch on every run.
#include <string>
#include <vector>

#include "backend/cpu/conv_blocked.h"
#include "backend/cpu/depthwise_blocked.h"
#include "backend/cpu/winograd.h"
#include "mnnpy/op_registry.h"
#include "mnnpy/ops.h"
#include "ops/conv_common.h"

namespace mnnpy {

namespace {

const char* const kOp = "Conv2DBlocked";

struct BlockedConvShape {
  cpu::ConvShape s;
  bool nchw_input = false;
  bool depthwise = false;
};

BlockedConvShape blocked_conv_shape(const std::vector<TensorType>& in, Attrs& attrs) {
  const conv_common::ConvAttrs a = conv_common::read_conv_attrs(attrs, kOp);
  conv_common::check_float32(in, kOp, {"input", "weight", "bias", "residual"});
  BlockedConvShape b;
  cpu::ConvShape& s = b.s;
  const Shape& x = in[0].shape;
  if (x.size() == 5) {
    if (x[4] != cpu::kChannelBlock) {
      throw ValueError(std::string(kOp) + ": blocked input [N, C/8, H, W, 8] must end in 8 channels, got shape " +
                       shape_str(x));
    }
    s.batch = x[0], s.in_c = x[1] * cpu::kChannelBlock, s.in_h = x[2], s.in_w = x[3];
  } else if (x.size() == 4) {
    b.nchw_input = true;
    s.batch = x[0], s.in_c = x[1], s.in_h = x[2], s.in_w = x[3];
  } else {
    throw ValueError(std::string(kOp) + ": input must be blocked 5-D (N, C/8, H, W, 8) or NCHW 4-D, got shape " +
                     shape_str(x));
  }
  conv_common::finish_conv_shape(s, a, in[1].shape, &in[2].shape, kOp);
  if (s.out_c % cpu::kChannelBlock != 0) {
    throw ValueError(std::string(kOp) + ": output channels must be a multiple of 8 for the blocked layout, got " +
                     std::to_string(s.out_c));
  }
  if (s.group != 1) {
    if (!s.is_depthwise()) {
      throw ValueError(std::string(kOp) + ": group " + std::to_string(s.group) + " is not supported: only group 1 " +
                       "or depthwise (group == C == Cout, here C " + std::to_string(s.in_c) + ", Cout " +
                       std::to_string(s.out_c) + ")");
    }
    if (b.nchw_input) {
      throw ValueError(std::string(kOp) + ": a depthwise layer needs blocked input (N, C/8, H, W, 8), got NCHW " +
                       shape_str(x));
    }
    b.depthwise = true;
  }
  if (in.size() > 3) {
    const Shape expected{s.batch, s.out_c / cpu::kChannelBlock, s.out_h, s.out_w, cpu::kChannelBlock};
    if (in[3].shape != expected) {
      throw ValueError(std::string(kOp) + ": residual must have the output's shape " + shape_str(expected) +
                       ", got " + shape_str(in[3].shape));
    }
  }
  return b;
}

std::vector<TensorType> infer_conv2d_blocked(const std::vector<TensorType>& in, Attrs& attrs) {
  const cpu::ConvShape s = blocked_conv_shape(in, attrs).s;
  return {TensorType{DType::Float32, {s.batch, s.out_c / cpu::kChannelBlock, s.out_h, s.out_w, cpu::kChannelBlock}}};
}

class Conv2DBlockedKernel : public Kernel {
 public:
  explicit Conv2DBlockedKernel(const KernelContext& ctx) {
    Attrs attrs = ctx.attrs;
    const BlockedConvShape b = blocked_conv_shape(ctx.input_types, attrs);
    shape_ = b.s;
    nchw_input_ = b.nchw_input;
    depthwise_ = b.depthwise;
    act_ = conv_common::conv_activation(attrs);
    // 3x3 stride-1 layers run Winograd where the NCHW kernel would (the same cost model).
    if (!nchw_input_ && !depthwise_) winograd_tile_ = cpu::winograd_tile(cpu::choose_conv_scheme(shape_));
    const Tensor* w = ctx.constants.size() > 1 ? ctx.constants[1] : nullptr;
    if (w) {
      weights_.resize(packed_weight_floats());
      pack_weights(w->ptr<float>(), weights_.data());
      weights_packed_ = true;
    }
  }

  size_t resident_bytes() const override { return weights_.size() * sizeof(float); }
  const char* scheme() const override {
    if (depthwise_) return "blocked_depthwise";
    if (winograd_tile_) return winograd_tile_ == 2 ? "blocked_winograd_2x2" : "blocked_winograd";
    return !nchw_input_ && shape_.is_pointwise() ? "blocked_pointwise" : "blocked_direct";
  }

  double flops() const override {
    return 2.0 * (double)shape_.batch * (double)shape_.out_c * (double)(shape_.out_h * shape_.out_w) *
           (double)shape_.depth();
  }

  size_t scratch_bytes() const override { return weights_packed_ ? 0 : packed_weight_floats() * sizeof(float); }

  void execute(const KernelArgs& args, void* scratch) const override {
    Tensor* out = args.outputs[0];
    if (out->numel() == 0) return;
    const float* w = weights_.data();
    if (!weights_packed_) {
      pack_weights(args.inputs[1]->ptr<float>(), static_cast<float*>(scratch));
      w = static_cast<const float*>(scratch);
    }
    const float* x = args.inputs[0]->ptr<float>();
    const float* bias = args.inputs[2]->ptr<float>();
    const float* residual = args.inputs.size() > 3 ? args.inputs[3]->ptr<float>() : nullptr;
    float* y = out->ptr<float>();
    if (depthwise_) cpu::conv2d_depthwise_blocked(shape_, x, w, bias, residual, act_, y, args.pool);
    else if (winograd_tile_) cpu::conv2d_winograd_blocked(shape_, winograd_tile_, x, w, bias, residual, act_, y, args.pool);
    else cpu::conv2d_blocked(shape_, nchw_input_, x, w, bias, residual, act_, y, args.pool);
  }

 private:
  size_t packed_weight_floats() const {
    if (depthwise_) return cpu::depthwise_blocked_weight_floats(shape_);
    if (winograd_tile_) return cpu::winograd_blocked_weight_floats(shape_, winograd_tile_);
    return cpu::conv_blocked_weight_floats(shape_, nchw_input_);
  }
  void pack_weights(const float* w, float* packed) const {
    if (depthwise_) cpu::depthwise_blocked_pack_weights(shape_, w, packed);
    else if (winograd_tile_) cpu::winograd_blocked_pack_weights(shape_, winograd_tile_, w, packed);
    else cpu::conv_blocked_pack_weights(shape_, nchw_input_, w, packed);
  }

  cpu::ConvShape shape_;
  bool nchw_input_ = false, depthwise_ = false, weights_packed_ = false;
  int winograd_tile_ = 0;  // 4 or 2: Winograd F(4x4, 3x3) or F(2x2, 3x3)
  cpu::ConvActivation act_;
  conv_common::AlignedFloats weights_;  // packed at plan time when constant
};

OpDef conv2d_blocked_def() {
  OpDef def;
  def.name = kOp;
  def.min_inputs = 3;
  def.max_inputs = 4;
  def.infer = infer_conv2d_blocked;
  def.cpu_kernel = [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new Conv2DBlockedKernel(ctx)); };
  def.packed_inputs = 1u << 1;
  return def;
}

MNNPY_REGISTER_OP(conv2d_blocked_def());

// The gradients go through the NCHW layout: the pre-activation gradient is converted once, the
// input, weight and bias gradients are Conv2D's, the input gradient converted back when x was blocked.
MNNPY_REGISTER_GRAD(kOp, [](const GradContext& c) {
  const Var &x = c.input(0), &w = c.input(1);
  const Var gz = conv_common::activation_grad(c, c.grad(), kOp);
  const Var gz_nchw = make_op("FromBlockedChannels", {gz});
  const bool nchw_input = x.type().shape.size() == 4;
  const Var x_nchw = nchw_input ? x : make_op("FromBlockedChannels", {x});
  const Shape &xs = x.type().shape, &ws = w.type().shape;
  const Attrs geometry = conv_common::geometry_attrs(c.node.attrs);
  std::vector<Var> r(c.node.inputs.size());
  Attrs input_attrs = geometry;
  input_attrs.set("input_size", std::vector<int64_t>{xs[2], xs[3]});
  const Var dx = make_op("Conv2DBackpropInput", {gz_nchw, w}, input_attrs);
  r[0] = nchw_input ? dx : make_op("ToBlockedChannels", {dx}, Attrs().set("block", cpu::kChannelBlock));
  Attrs filter_attrs = geometry;
  filter_attrs.set("kernel_size", std::vector<int64_t>{ws[2], ws[3]});
  r[1] = make_op("Conv2DBackpropFilter", {x_nchw, gz_nchw}, filter_attrs);
  r[2] = reduce("sum", gz_nchw, std::vector<int64_t>{0, 2, 3}, false);
  if (r.size() > 3) r[3] = gz;  // the residual is added before the activation
  return r;
});

}  // namespace

}  // namespace mnnpy
