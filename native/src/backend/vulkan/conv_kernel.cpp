// Conv2D on Vulkan (float32 NCHW, ops/conv.cpp), with the bias, the residual (where the node has
// one: an Add after the convolution fused into it when lowering) and the activation fused; weights
// and bias are read as the device tensors they arrive as. Three schemes, chosen per layer:
// - "conv depthwise KHxKW": one input channel per group (depthwise, any channel multiplier), an
//   invocation per output element (shaders/conv2d_depthwise.comp);
// - "conv 1x1 gemm ...": 1x1, stride 1, no padding, a GEMM of the weights and the input's channels
//   (shaders/conv2d.comp, POINTWISE);
// - "conv implicit-gemm ...": every other layer, a GEMM of the weights and the im2col matrix read
//   from the input on the fly (shaders/conv2d.comp).
// At precision low, where the device has float16 arithmetic, the GEMMs take float16 operands with
// float32 sums (shaders/conv2d_f16.comp; the scheme says "f16"): constant weights rounded to
// float16 once when the kernel is made (half the bytes to read), the input as it is staged. The
// depthwise scheme stays float32: it reads each input once per tap from cache and is bound by
// memory, not arithmetic, so float16 operands would only cost precision.
// The GEMMs are tiled BM x BN (channels x pixels) with BK-deep steps and TM x TN per invocation
// (specialization constants). Where a layer's tiles are too few to fill the device (small maps,
// as at batch 1 in a network's later stages), K is split: the splits' partial sums go to scratch
// and a second dispatch (shaders/split_k_finish.comp) adds them, the bias and the activation; the
// scheme then ends in "split-k S". Tiles and splits follow the policy MatMul's GEMMs follow too
// (gemm_tiles.h). For tuning on a device: MNNPY_VULKAN_CONV_TILES="BM,BN,BK,TM,TN" sets the tiles
// and MNNPY_VULKAN_CONV_SPLITS=S the splits (1: none) of every GEMM layer.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/vulkan/gemm_tiles.h"
#include "backend/vulkan/vulkan_pipelines.h"
#include "backend/vulkan/vulkan_shapes.h"
#include "mnnpy/dtype.h"
#include "ops/conv_common.h"

namespace mnnpy {
namespace vulkan {

namespace {

const uint32_t kConvSpirv[] =
#include "backend/vulkan/shaders/conv2d.spv.inc"
    ;
const uint32_t kConvF16Spirv[] =
#include "backend/vulkan/shaders/conv2d_f16.spv.inc"
    ;
const uint32_t kDepthwiseSpirv[] =
#include "backend/vulkan/shaders/conv2d_depthwise.spv.inc"
    ;

// The depthwise shader: 256 invocations a workgroup, a grid of at most kMaxLoopGroups whose
// invocations loop over the elements.
constexpr uint32_t kLoopWorkgroup = 256, kMaxLoopGroups = 8192;

// The GEMM's tiles (gemm_tiles.h) need one more rule here: each invocation loads one pixel's
// column of the im2col tile, so the workgroup is a multiple of BN invocations and BK a multiple of
// their quotient.
bool loads_whole_columns(const GemmTiles& t) { return t.threads() % t.bn == 0 && t.bk % (t.threads() / t.bn) == 0; }

const GemmOverrides& overrides() {
  static const GemmOverrides o = gemm_overrides_from_environment(
      "MNNPY_VULKAN_CONV_TILES", "MNNPY_VULKAN_CONV_SPLITS", loads_whole_columns,
      "a multiple of BN invocations with BK a multiple of their quotient");
  return o;
}

// The GEMM of group g: output channels x pixels (over the whole batch) x filter taps.
GemmShape gemm_shape(const ConvShape& s) {
  return GemmShape{(uint64_t)s.out_c_per_group(), (uint64_t)(s.batch * s.out_h * s.out_w), (uint64_t)s.depth(),
                   (uint64_t)s.group};
}

// The GEMM's plan: tiles, and K's split.
struct GemmPlan {
  GemmTiles tiles{};
  KSplit split;
};

GemmPlan plan_gemm(const ConvShape& s) {
  const GemmShape shape = gemm_shape(s);
  GemmPlan p;
  p.tiles = gemm_tiles_for(shape, overrides().tiles);
  p.split = split_k_for(shape, p.tiles, overrides().splits);
  return p;
}

// The push constants of shaders/conv2d.comp (std430).
struct GemmPush {
  uint32_t out_c_group, pixels, depth;
  uint32_t in_c, in_c_group, out_c, in_h, in_w, out_w, out_hw;
  int32_t stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;
  uint32_t splits, split_depth, partial_stride;
  float p0, p1;
};
// ... of shaders/conv2d_depthwise.comp.
struct DepthwisePush {
  uint32_t count;
  uint32_t in_c, out_c, multiplier;
  uint32_t in_h, in_w, out_h, out_w;
  int32_t stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;
  float p0, p1;
};
static_assert(sizeof(GemmPush) <= 128 && sizeof(DepthwisePush) <= 128, "push constants beyond the guaranteed 128 bytes");

class ConvKernel : public VulkanKernel {
 public:
  // Depthwise where each group has one input channel, else the GEMM of `plan`; `inputs`: where the
  // bias and the residual are.
  // `half`: float16 operands (GEMMs only), the weights rounded now where `constant_weights` is given.
  ConvKernel(const ConvShape& s, const ConvActivation& act, const conv_common::Conv2DInputs& inputs,
             const GemmPlan& plan, bool half, const Tensor* constant_weights)
      : s_(s), out_floats_((uint64_t)s.batch * s.out_c * s.out_h * s.out_w), inputs_(inputs),
        depthwise_(s.in_c_per_group() == 1), plan_(plan) {
    const bool has_bias = inputs.bias >= 0, has_residual = inputs.residual >= 0;
    const uint32_t act_code = (uint32_t)act.code;
    if (depthwise_) {
      depthwise_push_ = DepthwisePush{(uint32_t)out_floats_, (uint32_t)s.in_c, (uint32_t)s.out_c,
                                      (uint32_t)s.out_c_per_group(), (uint32_t)s.in_h, (uint32_t)s.in_w,
                                      (uint32_t)s.out_h, (uint32_t)s.out_w, (int32_t)s.stride_h, (int32_t)s.stride_w,
                                      (int32_t)s.pad_top, (int32_t)s.pad_left, (int32_t)s.dilation_h,
                                      (int32_t)s.dilation_w, act.p0, act.p1};
      pipeline_ = pipeline_for(kDepthwiseSpirv, sizeof(kDepthwiseSpirv), 5, sizeof(DepthwisePush),
                               {(uint32_t)s.kernel_h, (uint32_t)s.kernel_w, act_code, has_bias, has_residual});
      scheme_ = "conv depthwise " + std::to_string(s.kernel_h) + "x" + std::to_string(s.kernel_w);
      if (has_residual) scheme_ += " residual";
      return;
    }
    const bool pointwise = s.is_pointwise(), partial = plan.split.splits > 1;
    const GemmTiles& t = plan.tiles;
    const uint32_t out_hw = (uint32_t)(s.out_h * s.out_w);
    gemm_push_ = GemmPush{(uint32_t)s.out_c_per_group(), (uint32_t)(s.batch * out_hw), (uint32_t)s.depth(),
                          (uint32_t)s.in_c, (uint32_t)s.in_c_per_group(), (uint32_t)s.out_c, (uint32_t)s.in_h,
                          (uint32_t)s.in_w, (uint32_t)s.out_w, out_hw, (int32_t)s.stride_h, (int32_t)s.stride_w,
                          (int32_t)s.pad_top, (int32_t)s.pad_left, (int32_t)s.dilation_h, (int32_t)s.dilation_w,
                          plan.split.splits, plan.split.depth, (uint32_t)out_floats_, act.p0, act.p1};
    std::vector<uint32_t> specialization{t.bm, t.bn, t.bk, t.tm, t.tn, t.threads(), (uint32_t)s.kernel_h,
                                         (uint32_t)s.kernel_w, pointwise, act_code, has_bias, partial, has_residual};
    if (half && constant_weights) half_weights_ = half_weights(*constant_weights);
    if (half) specialization.push_back(half_weights_ != nullptr);
    pipeline_ = half ? pipeline_for(kConvF16Spirv, sizeof(kConvF16Spirv), 5, sizeof(GemmPush), specialization)
                     : pipeline_for(kConvSpirv, sizeof(kConvSpirv), 5, sizeof(GemmPush), specialization);
    scheme_ = std::string(pointwise ? "conv 1x1 gemm " : "conv implicit-gemm ") + (half ? "f16 " : "") + t.name();
    if (partial) {
      finish_.emplace(out_floats_, plan.split.splits, act, has_bias, (uint32_t)s.out_c, out_hw, has_residual);
      scheme_ += " split-k " + std::to_string(plan.split.splits);
    }
    if (has_residual) scheme_ += " residual";
  }

  // The scheme: "conv depthwise KHxKW", or "conv implicit-gemm" / "conv 1x1 gemm" with the tiles
  // "BMxBNxBK TMxTN" and, where K is split, "split-k S"; then "residual" where the node has one.
  const char* scheme() const override { return scheme_.c_str(); }
  double flops() const override {
    return 2.0 * (double)s_.batch * (double)s_.out_c * (double)(s_.out_h * s_.out_w) * (double)s_.depth();
  }
  size_t scratch_bytes() const override { return finish_ ? finish_->partial_bytes() : 0; }

  void execute(const KernelArgs& args, void* scratch) const override {
    const Tensor* out = args.outputs[0];
    if (out->numel() == 0) return;
    const Tensor &x = *args.inputs[0], &w = *args.inputs[1];
    const BufferRange y = resolve(out->data, out->nbytes());
    const BufferRange xr = resolve(x.data, x.nbytes());
    const BufferRange wr = half_weights_ ? half_weights_->range() : resolve(w.data, w.nbytes());
    auto optional_input = [&](int at) {
      return at >= 0 ? resolve(args.inputs[at]->data, args.inputs[at]->nbytes()) : BufferRange{};
    };
    const BufferRange bias = optional_input(inputs_.bias), residual = optional_input(inputs_.residual);
    if (depthwise_) {
      pipeline_->dispatch({y, xr, wr, bias, residual}, &depthwise_push_,
                          std::min(groups_for(out_floats_, kLoopWorkgroup), kMaxLoopGroups));
      return;
    }
    const GemmTiles& t = plan_.tiles;
    const uint32_t groups_x = std::min(groups_for(gemm_push_.pixels, t.bn), kMaxGroupsPerDim);
    const uint32_t groups_y = groups_for(gemm_push_.out_c_group, t.bm), groups_z = (uint32_t)s_.group * plan_.split.splits;
    if (!finish_) {
      pipeline_->dispatch({y, xr, wr, bias, residual}, &gemm_push_, groups_x, groups_y, groups_z);
      return;
    }
    const BufferRange partial = resolve(scratch, scratch_bytes());
    pipeline_->dispatch({partial, xr, wr, BufferRange{}, BufferRange{}}, &gemm_push_, groups_x, groups_y, groups_z);
    finish_->record(y, partial, bias, residual);
  }

 private:
  // The weights rounded to nearest float16, two to a 32-bit word (the first in the low half).
  static std::unique_ptr<ParamBuffer> half_weights(const Tensor& w) {
    std::vector<uint16_t> halves((size_t)(w.numel() + 1) / 2 * 2, 0);
    const float* from = w.ptr<float>();
    for (int64_t i = 0; i < w.numel(); ++i) halves[i] = float_to_half(from[i]);
    return std::make_unique<ParamBuffer>(halves.data(), halves.size() * sizeof(uint16_t));
  }

  ConvShape s_;
  uint64_t out_floats_;
  conv_common::Conv2DInputs inputs_;
  bool depthwise_;
  GemmPlan plan_;
  std::string scheme_;
  std::shared_ptr<Pipeline> pipeline_;
  std::optional<SplitKFinish> finish_;  // where K is split
  std::unique_ptr<ParamBuffer> half_weights_;  // float16 weights, where rounded when made
  DepthwisePush depthwise_push_{};
  GemmPush gemm_push_{};
};

std::unique_ptr<Kernel> make_conv_kernel(const KernelContext& ctx) {
  Attrs attrs = ctx.attrs;
  const ConvShape s = conv_common::conv2d_shape(ctx.input_types, attrs);
  GemmPlan plan;
  const bool gemm = s.in_c_per_group() != 1;
  if (gemm) {
    plan = plan_gemm(s);
    // Channel tiles and groups times splits within the grid's guaranteed limits (pixel tiles loop).
    if (groups_for(s.out_c_per_group(), plan.tiles.bm) > kMaxGroupsPerDim ||
        (uint64_t)s.group * plan.split.splits > kMaxGroupsPerDim) {
      return nullptr;
    }
  }
  const bool half = gemm && ctx.precision == Precision::Low && device_info().float16;
  const Tensor* constant_weights = ctx.constants.size() > 1 ? ctx.constants[1] : nullptr;
  return new_kernel<ConvKernel>(s, conv_common::conv_activation(attrs),
                                conv_common::conv2d_inputs(ctx.input_types.size(), attrs), plan, half,
                                constant_weights);
}

MNNPY_REGISTER_KERNEL("Conv2D", "vulkan", make_conv_kernel);

}  // namespace

}  // namespace vulkan
}  // namespace mnnpy
