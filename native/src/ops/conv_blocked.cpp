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

#include "mnnpy/op_registry.h"
#include "mnnpy/ops.h"
#include "ops/blocked_layout.h"
#include "ops/conv_common.h"

namespace mnnpy {

namespace {

const char* const kOp = "Conv2DBlocked";

std::vector<TensorType> infer_conv2d_blocked(const std::vector<TensorType>& in, Attrs& attrs) {
  const ConvShape s = conv_common::blocked_conv_shape(in, attrs).s;
  return {TensorType{DType::Float32, {s.batch, s.out_c / kChannelBlock, s.out_h, s.out_w, kChannelBlock}}};
}

OpDef conv2d_blocked_def() {
  OpDef def;
  def.name = kOp;
  def.min_inputs = 3;
  def.max_inputs = 4;
  def.infer = infer_conv2d_blocked;
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
  r[0] = nchw_input ? dx : make_op("ToBlockedChannels", {dx}, Attrs().set("block", kChannelBlock));
  Attrs filter_attrs = geometry;
  filter_attrs.set("kernel_size", std::vector<int64_t>{ws[2], ws[3]});
  r[1] = make_op("Conv2DBackpropFilter", {x_nchw, gz_nchw}, filter_attrs);
  r[2] = reduce("sum", gz_nchw, std::vector<int64_t>{0, 2, 3}, false);
  if (r.size() > 3) r[3] = gz;  // the residual is added before the activation
  return r;
});

}  // namespace

}  // namespace mnnpy
