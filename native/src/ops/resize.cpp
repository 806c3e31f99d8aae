// Resize of float32 [N, C, H, W] (or [N, C, W]) tensors over the spatial axes, as ONNX Resize.
// Attributes: size [Ho, Wo] (or [Wo]); mode "nearest" | "linear" | "cubic";
// coordinate_transformation_mode "half_pixel" | "half_pixel_symmetric" | "pytorch_half_pixel" |
// "align_corners" | "asymmetric" | "tf_half_pixel_for_nn"; nearest_mode "round_prefer_floor" |
// "round_prefer_ceil" | "floor" | "ceil"; cubic_coeff_a (float, -0.75); exclude_outside 0/1;
// antialias 0/1 (linear and cubic downsampling widen their filter by 1 / scale);
// optional scale_h / scale_w (floats > 0): the model's own scale factors, which ONNX uses in the
// coordinate transform (with the unrounded length in * scale) when a model gives `scales`.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "backend/cpu/resize.h"
#include "backend/cpu/resize_grad.h"
#include "mnnpy/op_registry.h"
#include "ops/grad_common.h"

namespace mnnpy {

namespace {

template <class E> struct Named { const char* name; E value; };

const Named<cpu::ResizeMode> kModes[] = {
    {"nearest", cpu::ResizeMode::Nearest}, {"linear", cpu::ResizeMode::Linear}, {"cubic", cpu::ResizeMode::Cubic}};
const Named<cpu::CoordinateMode> kCoordinateModes[] = {
    {"half_pixel", cpu::CoordinateMode::HalfPixel},
    {"half_pixel_symmetric", cpu::CoordinateMode::HalfPixelSymmetric},
    {"pytorch_half_pixel", cpu::CoordinateMode::PytorchHalfPixel},
    {"align_corners", cpu::CoordinateMode::AlignCorners},
    {"asymmetric", cpu::CoordinateMode::Asymmetric},
    {"tf_half_pixel_for_nn", cpu::CoordinateMode::TfHalfPixelForNN}};
const Named<cpu::NearestMode> kNearestModes[] = {
    {"round_prefer_floor", cpu::NearestMode::RoundPreferFloor},
    {"round_prefer_ceil", cpu::NearestMode::RoundPreferCeil},
    {"floor", cpu::NearestMode::Floor},
    {"ceil", cpu::NearestMode::Ceil}};

template <class E, size_t K>
E lookup(const Named<E> (&table)[K], const Attrs& attrs, const std::string& key, const char* fallback) {
  const std::string value = attrs.has(key) ? attrs.get_string(key) : fallback;
  std::string known;
  for (const auto& entry : table) {
    if (value == entry.name) return entry.value;
    known += std::string(known.empty() ? "" : ", ") + "'" + entry.name + "'";
  }
  throw ValueError("Resize: unknown " + key + " '" + value + "'; expected one of " + known);
}

cpu::ResizeOptions options_from(const Attrs& attrs) {
  cpu::ResizeOptions o;
  o.mode = lookup(kModes, attrs, "mode", "nearest");
  o.coordinates = lookup(kCoordinateModes, attrs, "coordinate_transformation_mode", "half_pixel");
  o.nearest = lookup(kNearestModes, attrs, "nearest_mode", "round_prefer_floor");
  o.cubic_coeff_a = (float)(attrs.has("cubic_coeff_a") ? attrs.get_float("cubic_coeff_a") : -0.75);
  o.exclude_outside = attrs.get_int("exclude_outside", 0) != 0;
  o.antialias = attrs.get_int("antialias", 0) != 0;
  return o;
}

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
  options_from(attrs);  // validates the mode names
  Shape out = x.shape;
  for (size_t i = 2; i < rank; ++i) out[i] = size[i - 2];
  return {TensorType{DType::Float32, out}};
}

class ResizeKernel : public Kernel {
 public:
  explicit ResizeKernel(const KernelContext& ctx) : plan_(make_plan(ctx)) {}

  void execute(const KernelArgs& args, void*) const override {
    plan_.run(args.inputs[0]->ptr<float>(), args.outputs[0]->ptr<float>(), args.pool);
  }

 private:
  static cpu::Resize2D make_plan(const KernelContext& ctx) {
    const Shape& s = ctx.input_types[0].shape;
    const Shape& o = ctx.output_types[0].shape;
    const cpu::ResizeOptions options = options_from(ctx.attrs);
    const bool has_h = s.size() == 4;
    const int64_t in_h = has_h ? s[2] : 1, out_h = has_h ? o[2] : 1;
    const int64_t in_w = s.back(), out_w = o.back();
    auto scale = [&](const char* key) {
      return ctx.attrs.has(key) ? std::optional<float>((float)ctx.attrs.get_float(key)) : std::nullopt;
    };
    return cpu::Resize2D(s[0] * s[1], cpu::make_resize_axis(in_h, out_h, scale("scale_h"), options),
                         cpu::make_resize_axis(in_w, out_w, scale("scale_w"), options));
  }

  cpu::Resize2D plan_;
};

MNNPY_REGISTER_OP(OpDef{"Resize", 1, 1, infer_resize,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new ResizeKernel(ctx)); },
                        {}, false});

// The forward taps of both axes (rows: the identity for a 3-D input).
std::pair<cpu::ResizeAxis, cpu::ResizeAxis> resize_axes(const Attrs& attrs, const Shape& in, const Shape& out) {
  const cpu::ResizeOptions options = options_from(attrs);
  auto scale = [&](const char* key) {
    return attrs.has(key) ? std::optional<float>((float)attrs.get_float(key)) : std::nullopt;
  };
  const bool has_h = in.size() == 4;
  return {cpu::make_resize_axis(has_h ? in[2] : 1, has_h ? out[2] : 1, scale("scale_h"), options),
          cpu::make_resize_axis(in.back(), out.back(), scale("scale_w"), options)};
}

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
  options_from(attrs);
  Shape out = g.shape;
  for (size_t i = 2; i < out.size(); ++i) out[i] = size[i - 2];
  return {TensorType{DType::Float32, out}};
}

class ResizeGradKernel : public Kernel {
 public:
  explicit ResizeGradKernel(const KernelContext& ctx)
      : planes_(ctx.input_types[0].shape[0] * ctx.input_types[0].shape[1]),
        axes_(resize_axes(ctx.attrs, ctx.output_types[0].shape, ctx.input_types[0].shape)) {}
  void execute(const KernelArgs& args, void*) const override {
    cpu::resize_grad(planes_, axes_.first, axes_.second, args.inputs[0]->ptr<float>(), args.outputs[0]->ptr<float>(),
                     args.pool);
  }
  const char* scheme() const override { return "transposed taps"; }

 private:
  int64_t planes_;
  std::pair<cpu::ResizeAxis, cpu::ResizeAxis> axes_;
};

MNNPY_REGISTER_OP(OpDef{"ResizeGrad", 1, 1, infer_resize_grad,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new ResizeGradKernel(ctx)); },
                        {}, false});

// Every mode is separable and linear in x: the gradient applies the same taps in transpose.
MNNPY_REGISTER_GRAD("Resize", [](const GradContext& c) {
  const Shape& s = c.input(0).type().shape;
  Attrs attrs = c.node.attrs;
  attrs.set("input_size", std::vector<int64_t>(s.begin() + 2, s.end()));
  return std::vector<Var>{make_op("ResizeGrad", {c.grad()}, attrs)};
});

}  // namespace

}  // namespace mnnpy
