// Resize of float32 [N, C, H, W] (or [N, C, W]) tensors over the spatial axes, as ONNX Resize.
// Attributes: size [Ho, Wo] (or [Wo]); mode "nearest" | "linear" | "cubic";
// coordinate_transformation_mode "half_pixel" | "half_pixel_symmetric" | "pytorch_half_pixel" |
// "align_corners" | "asymmetric" | "tf_half_pixel_for_nn"; nearest_mode "round_prefer_floor" |
// "round_prefer_ceil" | "floor" | "ceil"; cubic_coeff_a (float, -0.75); exclude_outside 0/1;
// antialias 0/1 (linear and cubic downsampling widen their filter by 1 / scale);
// optional scale_h / scale_w (floats > 0): the model's own scale factors, which ONNX uses in the
// coordinate transform (with the unrounded length in * scale) when a model gives `scales`.
#include <algorithm>
#include <string>

#include "mnnpy/op_registry.h"
#include "ops/grad_common.h"
#include "ops/resize_options.h"

namespace mnnpy {

namespace {

std::vector<TensorType> infer_resize(const std::vector<TensorType>& in, Attrs& attrs) {
  const TensorType& x = in[0];
  if (x.dtype != DType::Float32) throw TypeError(std::string("Resize: input must be float32, got ") + dtype_name(x.dtype));
  const size_t rank = x.shape.size();
  if (rank != 3 && rank != 4) {
    throw ValueError("Resize: input must be 3-D [N, C, W] or 4-D [N, C, H, W], got shape " + shape_str(x.shape));
  }
  if (!attrs.has("size")) throw ValueError("Resize: the 'size' attribute (output spatial size) is required");
  const auto& size = attrs.get_ints("size");
  if (size.size() != rank - 2) {
    throw ValueError("Resize: 'size' needs " + std::to_string(rank - 2) + " values for a " + std::to_string(rank) +
                     "-D input, got " + std::to_string(size.size()));
  }
  for (int64_t s : size) {
    if (s <= 0) throw ValueError("Resize: output sizes must be positive, got " + shape_str(size));
  }
  for (size_t i = 2; i < rank; ++i) {
    if (x.shape[i] <= 0) throw ValueError("Resize: cannot resize an empty spatial axis, input shape " + shape_str(x.shape));
  }
  for (const char* key : {"scale_h", "scale_w"}) {
    if (attrs.has(key) && !(attrs.get_float(key) > 0)) {
      throw ValueError(std::string("Resize: '") + key + "' must be positive");
    }
  }
  const int64_t exclude = attrs.get_int("exclude_outside", 0);
  if (exclude != 0 && exclude != 1) throw ValueError("Resize: 'exclude_outside' must be 0 or 1");
  const int64_t antialias = attrs.get_int("antialias", 0);
  if (antialias != 0 && antialias != 1) throw ValueError("Resize: 'antialias' must be 0 or 1");
  resize_options(attrs);  // validates the mode names
  Shape out = x.shape;
  for (size_t i = 2; i < rank; ++i) out[i] = size[i - 2];
  return {TensorType{DType::Float32, out}};
}

MNNPY_REGISTER_OP(OpDef{"Resize", 1, 1, infer_resize, {}, false});

// ResizeGrad: the input gradient of Resize. Input g (the output gradient, float32); attrs: the
// forward node's, plus input_size (the forward input's spatial size). Output: the forward
// input's shape.
std::vector<TensorType> infer_resize_grad(const std::vector<TensorType>& in, Attrs& attrs) {
  const TensorType& g = in[0];
  if (g.dtype != DType::Float32) throw TypeError("ResizeGrad: the gradient must be float32");
  const auto& size = attrs.get_ints("input_size");
  if ((g.shape.size() != 3 && g.shape.size() != 4) || size.size() != g.shape.size() - 2) {
    throw ValueError("ResizeGrad: expected a 3-D or 4-D gradient and one input size per spatial axis");
  }
  resize_options(attrs);
  Shape out = g.shape;
  for (size_t i = 2; i < out.size(); ++i) out[i] = size[i - 2];
  return {TensorType{DType::Float32, out}};
}

MNNPY_REGISTER_OP(OpDef{"ResizeGrad", 1, 1, infer_resize_grad, {}, false});

// Every mode is separable and linear in x: the gradient applies the same taps in transpose.
MNNPY_REGISTER_GRAD("Resize", [](const GradContext& c) {
  const Shape& s = c.input(0).type().shape;
  Attrs attrs = c.node.attrs;
  attrs.set("input_size", std::vector<int64_t>(s.begin() + 2, s.end()));
  return std::vector<Var>{make_op("ResizeGrad", {c.grad()}, attrs)};
});

}  // namespace

}  // namespace mnnpy
