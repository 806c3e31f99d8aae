// Conv2D: float32 2-D convolution in NCHW with a fused bias and activation.
//   inputs: x [N, C, H, W], w [Cout, C/group, kh, kw], optional bias [Cout]
//   attrs:  strides [sh, sw], pads [top, left, bottom, right], dilations [dh, dw], group,
//           activation (ConvActivationCode) with clip_min/clip_max (clip) or alpha/beta (hard sigmoid)
// Constant weights and bias (packed_inputs) may be packed once at plan time.
// Gradient rule: the fused activation's derivative, then Conv2DBackpropInput / Conv2DBackpropFilter
// (ops/conv_backward.cpp) and the bias gradient as a sum.
#include <string>
#include <vector>

#include "mnnpy/op_registry.h"
#include "mnnpy/ops.h"
#include "ops/conv_common.h"

namespace mnnpy {

namespace {

std::vector<TensorType> infer_conv2d(const std::vector<TensorType>& in, Attrs& attrs) {
  const ConvShape s = conv_common::conv2d_shape(in, attrs);
  return {TensorType{DType::Float32, {s.batch, s.out_c, s.out_h, s.out_w}}};
}

OpDef conv2d_def() {
  OpDef def;
  def.name = "Conv2D";
  def.min_inputs = 2;
  def.max_inputs = 3;
  def.infer = infer_conv2d;
  def.packed_inputs = (1u << 1) | (1u << 2);
  return def;
}

MNNPY_REGISTER_OP(conv2d_def());

// dx: the transposed convolution of the pre-activation gradient; dw: its product with the input's
// columns over the batch; db: its sum over N, H, W.
MNNPY_REGISTER_GRAD("Conv2D", [](const GradContext& c) {
  const Var &x = c.input(0), &w = c.input(1);
  const Var gz = conv_common::activation_grad(c, c.grad(), "Conv2D");
  const Attrs geometry = conv_common::geometry_attrs(c.node.attrs);
  const Shape &xs = x.type().shape, &ws = w.type().shape;
  std::vector<Var> r(c.node.inputs.size());
  Attrs input_attrs = geometry;
  input_attrs.set("input_size", std::vector<int64_t>{xs[2], xs[3]});
  r[0] = make_op("Conv2DBackpropInput", {gz, w}, input_attrs);
  Attrs filter_attrs = geometry;
  filter_attrs.set("kernel_size", std::vector<int64_t>{ws[2], ws[3]});
  r[1] = make_op("Conv2DBackpropFilter", {x, gz}, filter_attrs);
  if (r.size() > 2) r[2] = reduce("sum", gz, std::vector<int64_t>{0, 2, 3}, false);
  return r;
});

}  // namespace

}  // namespace mnnpy
