// Conv2D: float32 2-D convolution in NCHW with a fused bias, residual and activation.
//   inputs: x [N, C, H, W], w [Cout, C/group, kh, kw], optional bias [Cout], optional residual
//           shaped like the output (y = act(conv + bias + residual), added in that order)
//   attrs:  strides [sh, sw], pads [top, left, bottom, right], dilations [dh, dw], group,
//           activation (ConvActivationCode) with clip_min/clip_max (clip) or alpha/beta (hard sigmoid),
//           residual (1: the last input is the residual; conv_common::conv2d_inputs)
// Constant weights and bias (packed_inputs) may be packed once at plan time.
// Gradient rule: the fused activation's derivative, then Conv2DBackpropInput / Conv2DBackpropFilter
// (ops/conv_backward.cpp), the bias gradient as a sum and the residual's as the pre-activation's.
// Fusions (lowering.h), for device backends that run them: Add(conv, r) with r shaped like the
// convolution's output becomes a Conv2D with residual r, and an activation after it joins too.
// The CPU runs models in the blocked layout, whose residual fusion happens when they are loaded
// (convert/_layout.py).
#include <string>
#include <vector>

#include "mnnpy/lowering.h"
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
  def.max_inputs = 4;
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
  const conv_common::Conv2DInputs at = conv_common::conv2d_inputs(c.node.inputs.size(), c.node.attrs);
  std::vector<Var> r(c.node.inputs.size());
  Attrs input_attrs = geometry;
  input_attrs.set("input_size", std::vector<int64_t>{xs[2], xs[3]});
  r[0] = make_op("Conv2DBackpropInput", {gz, w}, input_attrs);
  Attrs filter_attrs = geometry;
  filter_attrs.set("kernel_size", std::vector<int64_t>{ws[2], ws[3]});
  r[1] = make_op("Conv2DBackpropFilter", {x, gz}, filter_attrs);
  if (at.bias >= 0) r[at.bias] = reduce("sum", gz, std::vector<int64_t>{0, 2, 3}, false);
  if (at.residual >= 0) r[at.residual] = gz;  // added before the activation
  return r;
});

// The Conv2D node behind v, not yet computed, with a residual or without one as asked; null otherwise.
const Node* conv_producing(const Var& v, bool with_residual) {
  const Node* n = v.node.get();
  if (n->kind != NodeKind::Op || n->computed() || n->op->name != "Conv2D") return nullptr;
  return (n->attrs.get_int("residual", 0) != 0) == with_residual ? n : nullptr;
}

// Add(conv, r) -> Conv2D with residual r, where the convolution has no activation (it would come
// before the add) and r has its output's shape and dtype (a broadcast is left to the Add).
MNNPY_REGISTER_FUSION("Add", [](const FusionSite& site) -> std::vector<Var> {
  for (int slot = 0; slot < 2; ++slot) {
    const Var &conv = site.inputs[slot], &other = site.inputs[1 - slot];
    const Node* n = conv_producing(conv, false);
    if (!n || !site.sole_reader[slot] || n->attrs.get_int("activation", 0) != kConvActNone) continue;
    if (!(other.type() == conv.type()) || !(site.node.outputs[0] == conv.type())) continue;
    std::vector<Var> inputs = n->inputs;
    inputs.push_back(other);
    Attrs attrs = n->attrs;
    attrs.set("residual", (int64_t)1);
    return {make_op("Conv2D", std::move(inputs), std::move(attrs))};
  }
  return {};
});

// An activation after a residual convolution joins it, as the activation it has a code for.
FuseFn activation_fusion(ConvActivation act) {
  return [act](const FusionSite& site) -> std::vector<Var> {
    const Node* n = conv_producing(site.inputs[0], true);
    if (!n || !site.sole_reader[0] || n->attrs.get_int("activation", 0) != kConvActNone) return {};
    if (!(site.node.outputs[0] == site.inputs[0].type())) return {};
    Attrs attrs = n->attrs;
    attrs.set("activation", (int64_t)act.code);
    if (act.code == kConvActClip) attrs.set("clip_min", (double)act.p0).set("clip_max", (double)act.p1);
    return {make_op("Conv2D", n->inputs, std::move(attrs))};
  };
}

MNNPY_REGISTER_FUSION("Relu", activation_fusion({kConvActRelu}));
MNNPY_REGISTER_FUSION("Relu6", activation_fusion({kConvActClip, 0.f, 6.f}));
MNNPY_REGISTER_FUSION("Sigmoid", activation_fusion({kConvActSigmoid}));
MNNPY_REGISTER_FUSION("Gelu", activation_fusion({kConvActGelu}));

}  // namespace

}  // namespace mnnpy
