// Conv2D: float32 2-D convolution in NCHW with a fused bias and activation.
//   inputs: x [N, C, H, W], w [Cout, C/group, kh, kw], optional bias [Cout]
//   attrs:  strides [sh, sw], pads [top, left, bottom, right], dilations [dh, dw], group,
//           activation (ConvActivationCode) with clip_min/clip_max (clip) or alpha/beta (hard sigmoid)
// The kernel picks its scheme per layer at plan time (see backend/cpu/conv.h) and packs constant
// weights once; weights fed at run time are packed into scratch on every run.
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "backend/cpu/conv.h"
#include "backend/cpu/depthwise.h"
#include "backend/cpu/winograd.h"
#include "mnnpy/op_registry.h"
#include "mnnpy/thread_pool.h"

namespace mnnpy {

namespace {

// 64-byte aligned storage for packed weights: kernels load whole weight panels as vectors.
template <class T> struct Aligned64 {
  using value_type = T;
  Aligned64() = default;
  template <class U> Aligned64(const Aligned64<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(64))); }
  void deallocate(T* p, size_t) { ::operator delete(p, std::align_val_t(64)); }
  template <class U> bool operator==(const Aligned64<U>&) const { return true; }
  template <class U> bool operator!=(const Aligned64<U>&) const { return false; }
};

std::vector<int64_t> int_list(const Attrs& attrs, const char* key, std::vector<int64_t> fallback, size_t size) {
  std::vector<int64_t> v = attrs.has(key) ? attrs.get_ints(key) : std::move(fallback);
  if (v.size() != size) {
    throw ValueError(std::string("Conv2D: attribute '") + key + "' needs " + std::to_string(size) + " values, got " +
                     std::to_string(v.size()));
  }
  return v;
}

float float_attr(const Attrs& attrs, const char* key, double fallback) {
  return (float)(attrs.has(key) ? attrs.get_float(key) : fallback);
}

// Fills defaults into attrs, checks them and returns the geometry (batch and spatial sizes from the
// input types).
cpu::ConvShape conv_shape(const std::vector<TensorType>& in, Attrs& attrs) {
  const auto strides = int_list(attrs, "strides", {1, 1}, 2);
  const auto pads = int_list(attrs, "pads", {0, 0, 0, 0}, 4);
  const auto dilations = int_list(attrs, "dilations", {1, 1}, 2);
  const int64_t group = attrs.get_int("group", 1);
  const int64_t activation = attrs.get_int("activation", 0);
  for (int64_t v : strides)
    if (v <= 0) throw ValueError("Conv2D: strides must be positive, got " + shape_str(strides));
  for (int64_t v : dilations)
    if (v <= 0) throw ValueError("Conv2D: dilations must be positive, got " + shape_str(dilations));
  for (int64_t v : pads)
    if (v < 0) throw ValueError("Conv2D: pads must be non-negative, got " + shape_str(pads));
  if (group <= 0) throw ValueError("Conv2D: group must be positive, got " + std::to_string(group));
  if (activation < 0 || activation >= cpu::kConvActCount) {
    throw ValueError("Conv2D: unknown activation code " + std::to_string(activation) + " (expected 0.." +
                     std::to_string(cpu::kConvActCount - 1) + ")");
  }
  attrs.set("strides", strides).set("pads", pads).set("dilations", dilations).set("group", group);
  attrs.set("activation", activation);

  const TensorType &x = in[0], &w = in[1];
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].dtype != DType::Float32) {
      static const char* names[] = {"input", "weight", "bias"};
      throw TypeError(std::string("Conv2D: ") + names[i] + " must be float32, got " + dtype_name(in[i].dtype));
    }
  }
  if (x.shape.size() != 4) throw ValueError("Conv2D: input must be 4-D (N, C, H, W), got shape " + shape_str(x.shape));
  if (w.shape.size() != 4) {
    throw ValueError("Conv2D: weight must be 4-D (Cout, C/group, kh, kw), got shape " + shape_str(w.shape));
  }
  cpu::ConvShape s;
  s.batch = x.shape[0], s.in_c = x.shape[1], s.in_h = x.shape[2], s.in_w = x.shape[3];
  s.out_c = w.shape[0], s.kernel_h = w.shape[2], s.kernel_w = w.shape[3];
  s.stride_h = strides[0], s.stride_w = strides[1];
  s.pad_top = pads[0], s.pad_left = pads[1];
  s.dilation_h = dilations[0], s.dilation_w = dilations[1];
  s.group = group;
  if (s.out_c <= 0 || w.shape[1] <= 0 || s.kernel_h <= 0 || s.kernel_w <= 0) {
    throw ValueError("Conv2D: weight shape " + shape_str(w.shape) + " has an empty dimension");
  }
  if (s.in_c != group * w.shape[1]) {
    throw ValueError("Conv2D: input has " + std::to_string(s.in_c) + " channels but weight " + shape_str(w.shape) +
                     " with group " + std::to_string(group) + " expects " + std::to_string(group * w.shape[1]));
  }
  if (s.out_c % group != 0) {
    throw ValueError("Conv2D: " + std::to_string(s.out_c) + " output channels do not split into " +
                     std::to_string(group) + " groups");
  }
  if (in.size() > 2) {
    const Shape& b = in[2].shape;
    if (b.size() != 1 || b[0] != s.out_c) {
      throw ValueError("Conv2D: bias must have shape (" + std::to_string(s.out_c) + ",), got " + shape_str(b));
    }
  }
  const int64_t span_h = s.dilation_h * (s.kernel_h - 1) + 1, span_w = s.dilation_w * (s.kernel_w - 1) + 1;
  const int64_t padded_h = s.in_h + pads[0] + pads[2], padded_w = s.in_w + pads[1] + pads[3];
  if (padded_h < span_h || padded_w < span_w) {
    throw ValueError("Conv2D: kernel of extent (" + std::to_string(span_h) + ", " + std::to_string(span_w) +
                     ") is larger than the padded input (" + std::to_string(padded_h) + ", " +
                     std::to_string(padded_w) + "): the output would be empty");
  }
  s.out_h = (padded_h - span_h) / s.stride_h + 1;
  s.out_w = (padded_w - span_w) / s.stride_w + 1;
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
    act_.code = (int)attrs.get_int("activation");
    if (act_.code == cpu::kConvActClip) {
      act_.p0 = float_attr(attrs, "clip_min", 0.0);
      act_.p1 = float_attr(attrs, "clip_max", 6.0);
    } else if (act_.code == cpu::kConvActHardSigmoid) {
      act_.p0 = float_attr(attrs, "alpha", 0.2);
      act_.p1 = float_attr(attrs, "beta", 0.5);
    }
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

  void execute(const KernelArgs& args, void* scratch) override {
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
    if (scheme_ == cpu::ConvScheme::Winograd) cpu::conv2d_winograd(shape_, x, w, b, act_, y, args.pool);
    else if (scheme_ == cpu::ConvScheme::PixelRows) cpu::conv2d_pixel_rows(shape_, x, w, b, act_, y, args.pool);
    else cpu::conv2d_gemm(shape_, x, w, b, act_, y, args.pool);
  }

 private:
  // The GEMM schemes pack weights into row panels (column panels for pixel rows), Winograd packs
  // their 6x6 transforms.
  size_t packed_weight_floats() const {
    if (scheme_ == cpu::ConvScheme::Winograd) return cpu::winograd_packed_weight_floats(shape_);
    if (scheme_ == cpu::ConvScheme::PixelRows) return cpu::conv_pixel_rows_weight_floats(shape_);
    return cpu::conv_packed_weight_floats(shape_);
  }
  void pack_weights(const float* w, float* packed) const {
    if (scheme_ == cpu::ConvScheme::Winograd) cpu::winograd_pack_weights(shape_, w, packed);
    else if (scheme_ == cpu::ConvScheme::PixelRows) cpu::conv_pixel_rows_pack_weights(shape_, w, packed);
    else cpu::conv_pack_weights(shape_, w, packed);
  }

  cpu::ConvShape shape_;
  cpu::ConvScheme scheme_ = cpu::ConvScheme::Im2colGemm;
  cpu::ConvActivation act_;
  bool has_bias_ = false, weights_packed_ = false, bias_packed_ = false;
  std::vector<float, Aligned64<float>> weights_, bias_;  // packed at plan time when constant
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

}  // namespace

}  // namespace mnnpy
