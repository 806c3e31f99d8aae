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

#include "mnnpy/autograd.h"
#include "mnnpy/op_registry.h"
#include "mnnpy/ops.h"
#include "mnnpy/shape_ops.h"
#include "ops/conv_backward_shape.h"
#include "ops/conv_common.h"

namespace mnnpy {

namespace {

const char* const kInputOp = conv_common::kInputGradOp;
const char* const kFilterOp = conv_common::kFilterGradOp;

OpDef input_grad_def() {
  OpDef def;
  def.name = kInputOp;
  def.min_inputs = 2;
  def.max_inputs = 3;
  def.infer = [](const std::vector<TensorType>& in, Attrs& attrs) {
    const ConvShape s = conv_common::input_grad_shape(in, attrs);
    return std::vector<TensorType>{TensorType{DType::Float32, {s.batch, s.in_c, s.in_h, s.in_w}}};
  };
  def.packed_inputs = 1u << 1;
  return def;
}

OpDef filter_grad_def() {
  OpDef def;
  def.name = kFilterOp;
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](const std::vector<TensorType>& in, Attrs& attrs) {
    const ConvShape s = conv_common::filter_grad_shape(in, attrs);
    return std::vector<TensorType>{TensorType{DType::Float32, {s.out_c, s.in_c_per_group(), s.kernel_h, s.kernel_w}}};
  };
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
