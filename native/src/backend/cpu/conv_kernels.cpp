// CPU kernel of Conv2D (ops/conv.cpp): the scheme is picked per layer at plan time (see
// backend/cpu/conv.h) and constant weights are packed once; weights fed at run time are packed
// into scratch on every run. A 1x1 layer whose constant weight is mostly zero blocks runs
// block-sparse (backend/cpu/block_sparse.h). At precision "low", on a CPU with a bf16 path, layers
// other than depthwise with constant weights run as bf16 products (backend/cpu/gemm_bf16.h).
#include <memory>
#include <string>
#include <utility>

#include "backend/cpu/block_sparse.h"
#include "backend/cpu/conv.h"
#include "backend/cpu/depthwise.h"
#include "backend/cpu/gemm_bf16.h"
#include "backend/cpu/winograd.h"
#include "mnnpy/backend.h"
#include "ops/conv_common.h"

namespace mnnpy {

namespace {

class Conv2DKernel : public Kernel {
 public:
  explicit Conv2DKernel(const KernelContext& ctx) {
    Attrs attrs = ctx.attrs;
    shape_ = conv_common::conv2d_shape(ctx.input_types, attrs);
    scheme_ = cpu::choose_conv_scheme(shape_);
    act_ = conv_common::conv_activation(attrs);
    const conv_common::Conv2DInputs at = conv_common::conv2d_inputs(ctx.input_types.size(), attrs);
    has_bias_ = at.bias >= 0;
    residual_ = at.residual;
    // With a residual the scheme stops before the activation, applied after the sum.
    if (residual_ >= 0) std::swap(act_, residual_act_);
    const Tensor* w = ctx.constants.size() > 1 ? ctx.constants[1] : nullptr;
    const Tensor* b = has_bias_ && ctx.constants.size() > 2 ? ctx.constants[2] : nullptr;
    if (w && scheme_ != cpu::ConvScheme::Depthwise && ctx.precision == Precision::Low && cpu::bf16_gemm_available()) {
      bf16_path_ = cpu::bf16_plan_path();
      bf16_w_ = cpu::conv_bf16_pack_weights(shape_, w->ptr<float>());
      if (b) bias_.assign(b->ptr<float>(), b->ptr<float>() + b->numel());
      weights_packed_ = true;
      bias_packed_ = !has_bias_ || b != nullptr;
      return;
    }
    if (w && shape_.is_pointwise() && shape_.group == 1) {
      sparse_w_ = cpu::choose_block_sparse(w->ptr<float>(), shape_.out_c, shape_.in_c, shape_.in_c, 1);
      if (sparse_w_.n > 0) {
        sparse_scheme_ = sparse_w_.scheme_name();
        if (b) bias_.assign(b->ptr<float>(), b->ptr<float>() + b->numel());
        weights_packed_ = true;
        bias_packed_ = !has_bias_ || b != nullptr;
        return;
      }
    }
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

  const char* scheme() const override {
    if (bf16_path_ != cpu::Bf16Path::None) return "bf16_gemm";
    return sparse_w_.n > 0 ? sparse_scheme_.c_str() : cpu::conv_scheme_name(scheme_);
  }
  size_t resident_bytes() const override {
    return (weights_.size() + bias_.size()) * sizeof(float) + sparse_w_.nbytes() + bf16_w_.nbytes();
  }

  double flops() const override {
    return 2.0 * (double)shape_.batch * (double)shape_.out_c * (double)(shape_.out_h * shape_.out_w) *
           (double)shape_.depth();
  }

  size_t scratch_bytes() const override {
    if (scheme_ == cpu::ConvScheme::Depthwise || sparse_w_.n > 0 || bf16_path_ != cpu::Bf16Path::None) return 0;
    size_t floats = 0;
    if (!weights_packed_) floats += packed_weight_floats();
    if (!bias_packed_) floats += cpu::conv_padded_bias_floats(shape_);
    return floats * sizeof(float);
  }

  void execute(const KernelArgs& args, void* scratch) const override {
    Tensor* out = args.outputs[0];
    if (out->numel() == 0) return;
    convolve(args, scratch);
    if (residual_ >= 0) {
      cpu::conv_add_residual(args.inputs[residual_]->ptr<float>(), residual_act_, out->ptr<float>(), out->numel(),
                             args.pool);
    }
  }

 private:
  // y = act(conv + bias), act none where a residual follows.
  void convolve(const KernelArgs& args, void* scratch) const {
    Tensor* out = args.outputs[0];
    const float* x = args.inputs[0]->ptr<float>();
    float* y = out->ptr<float>();
    if (bf16_path_ != cpu::Bf16Path::None) {
      const float* b = !has_bias_ ? nullptr : bias_packed_ ? bias_.data() : args.inputs[2]->ptr<float>();
      cpu::conv2d_bf16(shape_, x, bf16_w_, b, act_, y, args.pool, bf16_path_);
      return;
    }
    if (sparse_w_.n > 0) {
      // Planes of H * W pixels: x(c, p) and y(o, p) in place.
      const int64_t hw = shape_.in_h * shape_.in_w;
      cpu::SparseOperandLayout xl, yl;
      xl.row_stride = yl.row_stride = hw;
      xl.m_stride = yl.m_stride = 1;
      xl.image_stride = shape_.in_c * hw;
      yl.image_stride = shape_.out_c * hw;
      const float* b = !has_bias_ ? nullptr : bias_packed_ ? bias_.data() : args.inputs[2]->ptr<float>();
      cpu::block_sparse_product(sparse_w_, shape_.batch, hw, x, xl, y, yl, b, nullptr, act_, args.pool);
      return;
    }
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
  cpu::ConvActivation act_, residual_act_;  // the scheme's; the one after the residual
  int residual_ = -1;                       // the residual's input, -1 without one
  bool has_bias_ = false, weights_packed_ = false, bias_packed_ = false;
  conv_common::AlignedFloats weights_, bias_;  // packed at plan time when constant
  cpu::BlockSparseMatrix sparse_w_;            // a 1x1 layer's weights of mostly zero blocks (n == 0: not used)
  std::string sparse_scheme_;
  cpu::Bf16ConvWeights bf16_w_;  // per group, at precision "low" on a CPU with a bf16 path
  cpu::Bf16Path bf16_path_ = cpu::Bf16Path::None;  // None: the float32 schemes
};

MNNPY_REGISTER_KERNEL("Conv2D", "cpu", construct_kernel<Conv2DKernel>);

}  // namespace

}  // namespace mnnpy
