// CPU kernel of Conv2DBlocked (ops/conv_blocked.cpp): direct, pointwise, depthwise or Winograd
// over the blocked channel layout, with constant weights packed once; a 1x1 layer whose constant
// weight is mostly zero blocks runs block-sparse (backend/cpu/block_sparse.h). At precision "low",
// on a CPU with a bf16 path, layers other than depthwise with constant weights run as one bf16
// product (backend/cpu/conv_blocked_bf16.h) instead: no Winograd, whose transformed inputs would
// lose too much in bf16.
#include <memory>
#include <string>

#include "backend/cpu/block_sparse.h"
#include "backend/cpu/conv_blocked.h"
#include "backend/cpu/conv_blocked_bf16.h"
#include "backend/cpu/depthwise_blocked.h"
#include "backend/cpu/winograd.h"
#include "mnnpy/backend.h"
#include "ops/conv_common.h"

namespace mnnpy {

namespace {

class Conv2DBlockedKernel : public Kernel {
 public:
  explicit Conv2DBlockedKernel(const KernelContext& ctx) {
    Attrs attrs = ctx.attrs;
    const conv_common::BlockedConvShape b = conv_common::blocked_conv_shape(ctx.input_types, attrs);
    shape_ = b.s;
    nchw_input_ = b.nchw_input;
    depthwise_ = b.depthwise;
    act_ = conv_common::conv_activation(attrs);
    const Tensor* w = ctx.constants.size() > 1 ? ctx.constants[1] : nullptr;
    if (w && !depthwise_ && ctx.precision == Precision::Low && cpu::bf16_gemm_available()) {
      bf16_path_ = cpu::bf16_plan_path();
      bf16_w_ = cpu::conv_blocked_bf16_pack_weights(shape_, nchw_input_, w->ptr<float>());
      weights_packed_ = true;
      return;
    }
    // 3x3 stride-1 layers run Winograd where the NCHW kernel would (the same cost model).
    if (!nchw_input_ && !depthwise_) winograd_tile_ = cpu::winograd_tile(cpu::choose_conv_scheme(shape_));
    if (w && !nchw_input_ && !depthwise_ && shape_.group == 1 && shape_.is_pointwise()) {
      sparse_w_ = cpu::choose_block_sparse(w->ptr<float>(), shape_.out_c, shape_.in_c, shape_.in_c, 1);
      if (sparse_w_.n > 0) {
        sparse_scheme_ = "blocked_" + sparse_w_.scheme_name();
        weights_packed_ = true;
        return;
      }
    }
    if (w) {
      weights_.resize(packed_weight_floats());
      pack_weights(w->ptr<float>(), weights_.data());
      weights_packed_ = true;
    }
  }

  size_t resident_bytes() const override {
    return weights_.size() * sizeof(float) + sparse_w_.nbytes() + bf16_w_.nbytes;
  }
  const char* scheme() const override {
    if (bf16_path_ != cpu::Bf16Path::None) return "bf16_blocked";
    if (sparse_w_.n > 0) return sparse_scheme_.c_str();
    if (depthwise_) return "blocked_depthwise";
    if (winograd_tile_) return winograd_tile_ == 2 ? "blocked_winograd_2x2" : "blocked_winograd";
    return !nchw_input_ && shape_.is_pointwise() ? "blocked_pointwise" : "blocked_direct";
  }

  double flops() const override {
    return 2.0 * (double)shape_.batch * (double)shape_.out_c * (double)(shape_.out_h * shape_.out_w) *
           (double)shape_.depth();
  }

  size_t scratch_bytes() const override {
    if (bf16_path_ != cpu::Bf16Path::None) return cpu::conv_blocked_bf16_scratch_bytes(shape_, nchw_input_, bf16_w_);
    return weights_packed_ ? 0 : packed_weight_floats() * sizeof(float);
  }

  void execute(const KernelArgs& args, void* scratch) const override {
    Tensor* out = args.outputs[0];
    if (out->numel() == 0) return;
    if (sparse_w_.n > 0) {
      // Channel c of pixel p at (c / 8) * H * W * 8 + p * 8 + c % 8.
      const int64_t hw = shape_.in_h * shape_.in_w;
      cpu::SparseOperandLayout xl, yl;
      xl.row_group = yl.row_group = kChannelBlock;
      xl.group_stride = yl.group_stride = hw * kChannelBlock;
      xl.row_stride = yl.row_stride = 1;
      xl.m_stride = yl.m_stride = kChannelBlock;
      xl.image_stride = shape_.in_c * hw;
      yl.image_stride = shape_.out_c * hw;
      const float* residual = args.inputs.size() > 3 ? args.inputs[3]->ptr<float>() : nullptr;
      cpu::block_sparse_product(sparse_w_, shape_.batch, hw, args.inputs[0]->ptr<float>(), xl, out->ptr<float>(), yl,
                                args.inputs[2]->ptr<float>(), residual, act_, args.pool);
      return;
    }
    const float* residual = args.inputs.size() > 3 ? args.inputs[3]->ptr<float>() : nullptr;
    if (bf16_path_ != cpu::Bf16Path::None) {
      cpu::conv2d_blocked_bf16(shape_, nchw_input_, args.inputs[0]->ptr<float>(), bf16_w_, args.inputs[2]->ptr<float>(),
                               residual, act_, out->ptr<float>(), scratch, args.pool, bf16_path_);
      return;
    }
    const float* w = weights_.data();
    if (!weights_packed_) {
      pack_weights(args.inputs[1]->ptr<float>(), static_cast<float*>(scratch));
      w = static_cast<const float*>(scratch);
    }
    const float* x = args.inputs[0]->ptr<float>();
    const float* bias = args.inputs[2]->ptr<float>();
    float* y = out->ptr<float>();
    if (depthwise_) cpu::conv2d_depthwise_blocked(shape_, x, w, bias, residual, act_, y, args.pool);
    else if (winograd_tile_) cpu::conv2d_winograd_blocked(shape_, winograd_tile_, x, w, bias, residual, act_, y, args.pool);
    else cpu::conv2d_blocked(shape_, nchw_input_, x, w, bias, residual, act_, y, args.pool);
  }

 private:
  size_t packed_weight_floats() const {
    if (depthwise_) return cpu::depthwise_blocked_weight_floats(shape_);
    if (winograd_tile_) return cpu::winograd_blocked_weight_floats(shape_, winograd_tile_);
    return cpu::conv_blocked_weight_floats(shape_, nchw_input_);
  }
  void pack_weights(const float* w, float* packed) const {
    if (depthwise_) cpu::depthwise_blocked_pack_weights(shape_, w, packed);
    else if (winograd_tile_) cpu::winograd_blocked_pack_weights(shape_, winograd_tile_, w, packed);
    else cpu::conv_blocked_pack_weights(shape_, nchw_input_, w, packed);
  }

  cpu::ConvShape shape_;
  bool nchw_input_ = false, depthwise_ = false, weights_packed_ = false;
  int winograd_tile_ = 0;  // 4 or 2: Winograd F(4x4, 3x3) or F(2x2, 3x3)
  cpu::ConvActivation act_;
  conv_common::AlignedFloats weights_;  // packed at plan time when constant
  cpu::BlockSparseMatrix sparse_w_;     // a 1x1 layer's weights of mostly zero blocks (n == 0: not used)
  std::string sparse_scheme_;
  cpu::PackedBf16B bf16_w_;  // at precision "low" on a CPU with a bf16 path
  cpu::Bf16Path bf16_path_ = cpu::Bf16Path::None;  // None: the float32 schemes
};

MNNPY_REGISTER_KERNEL("Conv2DBlocked", "cpu", construct_kernel<Conv2DBlockedKernel>);

}  // namespace

}  // namespace mnnpy
