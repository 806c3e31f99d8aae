// Conv2D: float32 2-D convolution in NCHW with a fused bias and activation.
//   inputs: x [N, C, H, W], w [Cout, C/group, kh, kw], optional bias [Cout]
//   attrs:  strides [sh, sw], pads [top, left, bottom, right], dilations [dh, dw], group,
//           activation (ConvActivationCode) with clip_min/clip_max (clip) or alpha/beta (hard sigmoid)
// The kernel picks its scheme per layer at plan time (see backend/cpu/conv.h) and packs constant
// weights once; weights fed at run time are packed into scratch on every run.
// Gradient rule: the fused activation's derivative, then Conv2DBackpropInput / Conv2DBackpropFilter
// (ops/conv_backward.cpp) and the bias gradient as a sum.
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "backend/cpu/conv.h"
#include "backend/cpu/depthwise.h"
#include "backend/cpu/winograd.h"
#include "mnnpy/op_registry.h"
#include "mnnpy/ops.h"
#include "mnnpy/thread_pool.h"
#include "ops/conv_common.h"

namespace mnnpy {

namespace {

using conv_common::AlignedFloats;

// Fills defaults into attrs, checks them and returns the geometry (batch and spatial sizes from the
// input types).
cpu::ConvShape conv_shape(const std::vector<TensorType>& in, Attrs& attrs) {
  const conv_common::ConvAttrs a = conv_common::read_conv_attrs(attrs, "Conv2D");
  conv_common::check_float32(in, "Conv2D", {"input", "weight", "bias"});
  const TensorType& x = in[0];
  if (x.shape.size() != 4) throw ValueError("Conv2D: input must be 4-D (N, C, H, W), got shape " + shape_str(x.shape));
  cpu::ConvShape s;
  s.batch = x.shape[0], s.in_c = x.shape[1], s.in_h = x.shape[2], s.in_w = x.shape[3];
  conv_common::finish_conv_shape(s, a, in[1].shape, in.size() > 2 ? &in[2].shape : nullptr, "Conv2D");
  return s;
}

std::vector<TensorType> infer_conv2d(const std::vector<TensorType>& in, Attrs& attrs) {
  const cpu::ConvShape s = conv_shape(in, attrs);
  return {TensorType{DType::Float32, {s.batch, s.out_c, s.out_h, s.out_w}}};
}

class Conv2DKernel : public Kernel {
 public:
  explicit Conv2DKernel(const KernelContext& ctx) {
    Attrs attrs = ctx.attrs;
    shape_ = conv_shape(ctx.input_types, attrs);
    scheme_ = cpu::choose_conv_scheme(shape_);
    act_ = conv_common::conv_activation(attrs);
    has_bias_ = ctx.input_types.size() > 2;
    const Tensor* w = ctx.constants.size() > 1 ? ctx.constants[1] : nullptr;
    const Tensor* b = has_bias_ && ctx.constants.size() > 2 ? ctx.constants[2] : nullptr;
    if (scheme_ == cpu::ConvScheme::Depthwise) {
      // The direct kernel reads weights [C, 1, kh, kw] and bias [C] as given.
      if (w) weights_.assign(w->ptr<float>(), w->ptr<float>() + w->numel());
      if (b) bias_.assign(b->ptr<float>(), b->ptr<float>() + b->numel());
      weights_packed_ = w != nullptr;
      bias_packed_ = !has_bias_ || b != nullptr;
      return;
    }
    if (w) {
      weights_.resize(packed_weight_floats());
      pack_weights(w->ptr<float>(), weights_.data());
      weights_packed_ = true;
    }
    if (!has_bias_ || b) {
      bias_.resize(cpu::conv_padded_bias_floats(shape_));
      cpu::conv_pad_bias(shape_, b ? b->ptr<float>() : nullptr, bias_.data());
      bias_packed_ = true;
    }
  }

  const char* scheme() const override { return cpu::conv_scheme_name(scheme_); }
  size_t resident_bytes() const override { return (weights_.size() + bias_.size()) * sizeof(float); }

  double flops() const override {
    return 2.0 * (double)shape_.batch * (double)shape_.out_c * (double)(shape_.out_h * shape_.out_w) *
           (double)shape_.depth();
  }

  size_t scratch_bytes() const override {
    if (scheme_ == cpu::ConvScheme::Depthwise) return 0;
    size_t floats = 0;
    if (!weights_packed_) floats += packed_weight_floats();
    if (!bias_packed_) floats += cpu::conv_padded_bias_floats(shape_);
    return floats * sizeof(float);
  }

  void execute(const KernelArgs& args, void* scratch) const override {
    Tensor* out = args.outputs[0];
    if (out->numel() == 0) return;
    const float* x = args.inputs[0]->ptr<float>();
    float* y = out->ptr<float>();
    if (scheme_ == cpu::ConvScheme::Depthwise) {
      const float* w = weights_packed_ ? weights_.data() : args.inputs[1]->ptr<float>();
      const float* b = !has_bias_ ? nullptr : bias_packed_ ? bias_.data() : args.inputs[2]->ptr<float>();
      cpu::conv2d_depthwise(shape_, x, w, b, act_, y, args.pool);
      return;
    }
    float* free_scratch = static_cast<float*>(scratch);
    const float* w = weights_.data();
    if (!weights_packed_) {
      pack_weights(args.inputs[1]->ptr<float>(), free_scratch);
      w = free_scratch;
      free_scratch += packed_weight_floats();
    }
    const float* b = bias_.data();
    if (!bias_packed_) {
      cpu::conv_pad_bias(shape_, args.inputs[2]->ptr<float>(), free_scratch);
      b = free_scratch;
    }
    if (const int tile = cpu::winograd_tile(scheme_)) cpu::conv2d_winograd(shape_, tile, x, w, b, act_, y, args.pool);
    else if (scheme_ == cpu::ConvScheme::PixelRows) cpu::conv2d_pixel_rows(shape_, x, w, b, act_, y, args.pool);
    else cpu::conv2d_gemm(shape_, x, w, b, act_, y, args.pool);
  }

 private:
  // The GEMM schemes pack weights into row panels (column panels for pixel rows), Winograd packs
  // their 6x6 (4x4) transforms.
  size_t packed_weight_floats() const {
    if (const int tile = cpu::winograd_tile(scheme_)) return cpu::winograd_packed_weight_floats(shape_, tile);
    if (scheme_ == cpu::ConvScheme::PixelRows) return cpu::conv_pixel_rows_weight_floats(shape_);
    return cpu::conv_packed_weight_floats(shape_);
  }
  void pack_weights(const float* w, float* packed) const {
    if (const int tile = cpu::winograd_tile(scheme_)) cpu::winograd_pack_weights(shape_, tile, w, packed);
    else if (scheme_ == cpu::ConvScheme::PixelRows) cpu::conv_pixel_rows_pack_weights(shape_, w, packed);
    else cpu::conv_pack_weights(shape_, w, packed);
  }

  cpu::ConvShape shape_;
  cpu::ConvScheme scheme_ = cpu::ConvScheme::Im2colGemm;
  cpu::ConvActivation act_;
  bool has_bias_ = false, weights_packed_ = false, bias_packed_ = false;
  AlignedFloats weights_, bias_;  // packed at plan time when constant
};

OpDef conv2d_def() {
  OpDef def;
  def.name = "Conv2D";
  def.min_inputs = 2;
  def.max_inputs = 3;
  def.infer = infer_conv2d;
  def.cpu_kernel = [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new Conv2DKernel(ctx)); };
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
