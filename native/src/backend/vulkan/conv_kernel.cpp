// Conv2D on Vulkan (float32 NCHW, ops/conv.cpp), with the bias and the activation fused; weights
// and bias are read as the device tensors they arrive as. Three schemes, chosen per layer:
// - "conv depthwise KHxKW": one input channel per group (depthwise, any channel multiplier), an
//   invocation per output element (shaders/conv2d_depthwise.comp);
// - "conv 1x1 gemm ...": 1x1, stride 1, no padding, a GEMM of the weights and the input's channels
//   (shaders/conv2d.comp, POINTWISE);
// - "conv implicit-gemm ...": every other layer, a GEMM of the weights and the im2col matrix read
//   from the input on the fly (shaders/conv2d.comp).
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

#include "backend/vulkan/gemm_tiles.h"
#include "backend/vulkan/vulkan_pipelines.h"
#include "backend/vulkan/vulkan_shapes.h"
#include "ops/conv_common.h"

namespace mnnpy {
namespace vulkan {

namespace {

const uint32_t kConvSpirv[] =
#include "backend/vulkan/shaders/conv2d.spv.inc"
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
  // Depthwise where each group has one input channel, else the GEMM of `plan`.
  ConvKernel(const ConvShape& s, const ConvActivation& act, bool has_bias, const GemmPlan& plan)
      : s_(s), out_floats_((uint64_t)s.batch * s.out_c * s.out_h * s.out_w), has_bias_(has_bias),
        depthwise_(s.in_c_per_group() == 1), plan_(plan) {
    const uint32_t act_code = (uint32_t)act.code;
    if (depthwise_) {
      depthwise_push_ = DepthwisePush{(uint32_t)out_floats_, (uint32_t)s.in_c, (uint32_t)s.out_c,
                                      (uint32_t)s.out_c_per_group(), (uint32_t)s.in_h, (uint32_t)s.in_w,
                                      (uint32_t)s.out_h, (uint32_t)s.out_w, (int32_t)s.stride_h, (int32_t)s.stride_w,
                                      (int32_t)s.pad_top, (int32_t)s.pad_left, (int32_t)s.dilation_h,
                                      (int32_t)s.dilation_w, act.p0, act.p1};
      pipeline_ = pipeline_for(kDepthwiseSpirv, sizeof(kDepthwiseSpirv), 4, sizeof(DepthwisePush),
                               {(uint32_t)s.kernel_h, (uint32_t)s.kernel_w, act_code, has_bias});
      scheme_ = "conv depthwise " + std::to_string(s.kernel_h) + "x" + std::to_string(s.kernel_w);
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
    pipeline_ = pipeline_for(kConvSpirv, sizeof(kConvSpirv), 4, sizeof(GemmPush),
                             {t.bm, t.bn, t.bk, t.tm, t.tn, t.threads(), (uint32_t)s.kernel_h, (uint32_t)s.kernel_w,
                              pointwise, act_code, has_bias, partial});
    scheme_ = std::string(pointwise ? "conv 1x1 gemm " : "conv implicit-gemm ") + t.name();
    if (partial) {
      finish_.emplace(out_floats_, plan.split.splits, act, has_bias, (uint32_t)s.out_c, out_hw);
      scheme_ += " split-k " + std::to_string(plan.split.splits);
    }
  }

  // The scheme: "conv depthwise KHxKW", or "conv implicit-gemm" / "conv 1x1 gemm" with the tiles
  // "BMxBNxBK TMxTN" and, where K is split, "split-k S".
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
    const BufferRange xr = resolve(x.data, x.nbytes()), wr = resolve(w.data, w.nbytes());
    const BufferRange bias = has_bias_ ? resolve(args.inputs[2]->data, args.inputs[2]->nbytes()) : BufferRange{};
    if (depthwise_) {
      pipeline_->dispatch({y, xr, wr, bias}, &depthwise_push_,
                          std::min(groups_for(out_floats_, kLoopWorkgroup), kMaxLoopGroups));
      return;
    }
    const GemmTiles& t = plan_.tiles;
    const uint32_t groups_x = std::min(groups_for(gemm_push_.pixels, t.bn), kMaxGroupsPerDim);
    const uint32_t groups_y = groups_for(gemm_push_.out_c_group, t.bm), groups_z = (uint32_t)s_.group * plan_.split.splits;
    if (!finish_) {
      pipeline_->dispatch({y, xr, wr, bias}, &gemm_push_, groups_x, groups_y, groups_z);
      return;
    }
    const BufferRange partial = resolve(scratch, scratch_bytes());
    pipeline_->dispatch({partial, xr, wr, BufferRange{}}, &gemm_push_, groups_x, groups_y, groups_z);
    finish_->record(y, partial, bias);
  }

 private:
  ConvShape s_;
  uint64_t out_floats_;
  bool has_bias_, depthwise_;
  GemmPlan plan_;
  std::string scheme_;
  std::shared_ptr<Pipeline> pipeline_;
  std::optional<SplitKFinish> finish_;  // where K is split
  DepthwisePush depthwise_push_{};
  GemmPush gemm_push_{};
};

std::unique_ptr<Kernel> make_conv_kernel(const KernelContext& ctx) {
  Attrs attrs = ctx.attrs;
  const ConvShape s = conv_common::conv2d_shape(ctx.input_types, attrs);
  GemmPlan plan;
  if (s.in_c_per_group() != 1) {
    plan = plan_gemm(s);
    // Channel tiles and groups times splits within the grid's guaranteed limits (pixel tiles loop).
    if (groups_for(s.out_c_per_group(), plan.tiles.bm) > kMaxGroupsPerDim ||
        (uint64_t)s.group * plan.split.splits > kMaxGroupsPerDim) {
      return nullptr;
    }
  }
  return new_kernel<ConvKernel>(s, conv_common::conv_activation(attrs), ctx.input_types.size() > 2, plan);
}

MNNPY_REGISTER_KERNEL("Conv2D", "vulkan", make_conv_kernel);

}  // namespace

}  // namespace vulkan
}  // namespace mnnpy
