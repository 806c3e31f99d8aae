// LayerNorm: (x - mean) / sqrt(var + epsilon) * gamma + beta over the trailing axes from `axis`.
//   inputs: x (float32), optional gamma, optional beta (float32, the shape of x's normalized axes)
//   attrs:  axis (int, default -1; negative counts from the end), epsilon (float, default 1e-5)
//   output: like x
#include <string>
#include <vector>

#include "mnnpy/lowering.h"
#include "mnnpy/op_registry.h"
#include "ops/grad_common.h"

namespace mnnpy {

namespace {

std::vector<TensorType> infer_layer_norm(const std::vector<TensorType>& in, Attrs& attrs) {
  static const char* names[] = {"x", "gamma", "beta"};
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].dtype != DType::Float32) {
      throw TypeError(std::string("LayerNorm: ") + names[i] + " must be float32, got " + dtype_name(in[i].dtype));
    }
  }
  const Shape& x = in[0].shape;
  const int64_t rank = (int64_t)x.size();
  int64_t axis = attrs.has("axis") ? attrs.get_int("axis") : -1;
  if (axis < -rank || axis >= rank) {
    throw ValueError("LayerNorm: axis " + std::to_string(axis) + " is out of range for an input of shape " +
                     shape_str(x));
  }
  if (axis < 0) axis += rank;
  attrs.set("axis", axis);
  const double epsilon = attrs.has("epsilon") ? attrs.get_float("epsilon") : 1e-5;
  if (!(epsilon >= 0)) throw ValueError("LayerNorm: epsilon must be >= 0");
  attrs.set("epsilon", epsilon);
  const Shape normalized(x.begin() + axis, x.end());
  for (size_t i = 1; i < in.size(); ++i) {
    Shape s = in[i].shape;
    bool fits = s.size() <= normalized.size();
    if (fits) s.insert(s.begin(), normalized.size() - s.size(), 1);
    if (!fits || s != normalized) {
      throw ValueError(std::string("LayerNorm: ") + names[i] + " has shape " + shape_str(in[i].shape) +
                       ", expected the normalized axes' shape " + shape_str(normalized));
    }
  }
  return {in[0]};
}

OpDef layer_norm_def() {
  OpDef def;
  def.name = "LayerNorm";
  def.min_inputs = 1;
  def.max_inputs = 3;
  def.infer = infer_layer_norm;
  return def;
}

MNNPY_REGISTER_OP(layer_norm_def());

// On a backend without LayerNorm: two mean reductions over the normalized axes and elementwise
// work, (x - mean) * rsqrt(mean((x - mean)^2) + epsilon) * gamma + beta, as the kernel computes it.
MNNPY_REGISTER_DECOMPOSITION("LayerNorm", [](const std::vector<Var>& in, const Attrs& attrs,
                                             const std::vector<TensorType>&) {
  const Var& x = in[0];
  std::vector<int64_t> axes;
  for (int64_t i = attrs.get_int("axis"); i < (int64_t)x.type().shape.size(); ++i) axes.push_back(i);
  const Var centered = grad::sub(x, reduce("mean", x, axes, true));
  const Var variance = reduce("mean", grad::mul(centered, centered), axes, true);
  Var y = grad::mul(centered, unary("Rsqrt", grad::add(variance, grad::scalar_like(x, attrs.get_float("epsilon")))));
  if (in.size() > 1) y = grad::mul(y, in[1]);
  if (in.size() > 2) y = grad::add(y, in[2]);
  return std::vector<Var>{y};
});

// LayerNormGrad: the backward pass of LayerNorm in one kernel.
//   inputs: x, g (the output gradient, x's shape), optional gamma; all float32
//   attrs:  axis (non-negative), epsilon, as the forward node's
//   outputs: dx (x's shape), dgamma and dbeta (the normalized axes' shape)
std::vector<TensorType> infer_layer_norm_grad(const std::vector<TensorType>& in, Attrs& attrs) {
  for (const TensorType& t : in) {
    if (t.dtype != DType::Float32) throw TypeError("LayerNormGrad: inputs must be float32");
  }
  if (in[1].shape != in[0].shape) throw ValueError("LayerNormGrad: g must have x's shape");
  const Shape& x = in[0].shape;
  const int64_t axis = attrs.get_int("axis");
  if (axis < 0 || axis > (int64_t)x.size()) throw ValueError("LayerNormGrad: axis out of range");
  attrs.get_float("epsilon");
  const Shape normalized(x.begin() + axis, x.end());
  if (in.size() > 2 && shape_numel(in[2].shape) != shape_numel(normalized)) {
    throw ValueError("LayerNormGrad: gamma must hold the normalized axes' " + std::to_string(shape_numel(normalized)) +
                     " values");
  }
  const TensorType per_position{DType::Float32, normalized};
  return {in[0], per_position, per_position};
}

OpDef layer_norm_grad_def() {
  OpDef def;
  def.name = "LayerNormGrad";
  def.min_inputs = 2;
  def.max_inputs = 3;
  def.infer = infer_layer_norm_grad;
  return def;
}

MNNPY_REGISTER_OP(layer_norm_grad_def());

// dx = rstd * (gx - mean(gx) - xh * mean(gx * xh)) with xh the normalized x and gx = g * gamma;
// dgamma = sum(g * xh) and dbeta = sum(g) over the leading axes (the LayerNormGrad kernel).
MNNPY_REGISTER_GRAD("LayerNorm", [](const GradContext& c) {
  const Var& x = c.input(0);
  const int64_t axis = c.node.attrs.get_int("axis");
  std::vector<Var> inputs{x, c.grad()};
  if (c.node.inputs.size() > 1) inputs.push_back(c.input(1));
  const std::vector<Var> grads = make_op_multi(
      "LayerNormGrad", inputs, Attrs().set("axis", axis).set("epsilon", c.node.attrs.get_float("epsilon")));
  std::vector<Var> result{grads[0]};
  for (size_t i = 1; i < c.node.inputs.size(); ++i) result.push_back(reshape(grads[i], c.input(i).type().shape));
  return result;
});

}  // namespace

}  // namespace mnnpy
