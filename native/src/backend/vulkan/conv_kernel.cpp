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
// and a second dispatch (shaders/conv2d_finish.comp) adds them, the bias and the activation; the
// scheme then ends in "split-k S". For tuning on a device: MNNPY_VULKAN_CONV_TILES="BM,BN,BK,TM,TN"
// sets the tiles and MNNPY_VULKAN_CONV_SPLITS=S the splits (1: none) of every GEMM layer.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "backend/vulkan/vulkan_pipelines.h"
#include "backend/vulkan/vulkan_shapes.h"
#include "ops/conv_common.h"

namespace mnnpy {
namespace vulkan {

namespace {

const uint32_t kConvSpirv[] =
#include "backend/vulkan/shaders/conv2d.spv.inc"
    ;
const uint32_t kFinishSpirv[] =
#include "backend/vulkan/shaders/conv2d_finish.spv.inc"
    ;
const uint32_t kDepthwiseSpirv[] =
#include "backend/vulkan/shaders/conv2d_depthwise.spv.inc"
    ;

// Invocations per workgroup: Vulkan guarantees 128, the devices in use (NVIDIA, AMD, lavapipe) 1024.
constexpr uint32_t kMaxThreads = 1024;
// The elementwise-like shaders (depthwise, finish): 256 invocations a workgroup, a grid of at most
// kMaxLoopGroups whose invocations loop over the elements.
constexpr uint32_t kLoopWorkgroup = 256, kMaxLoopGroups = 8192;

// A GEMM workgroup's BM x BN tile (output channels x pixels), K taken BK at a time, TM x TN results
// per invocation (in runs of 4). Each invocation loads one pixel's column of the im2col tile, so
// the workgroup is a multiple of BN invocations and BK a multiple of their quotient.
struct Tiles {
  uint32_t bm, bn, bk, tm, tn;
  uint32_t threads() const { return (bm / tm) * (bn / tn); }
  uint32_t shared_bytes() const { return bk * (bm + 4 + bn + 4) * 4; }
  bool valid() const {
    return tm && tn && bk && tm % 4 == 0 && tn % 4 == 0 && bm % tm == 0 && bn % tn == 0 && threads() <= kMaxThreads &&
           threads() % bn == 0 && bk % (threads() / bn) == 0 && shared_bytes() <= device_info().max_shared_memory;
  }
  std::string name() const {
    return std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) + " " + std::to_string(tm) + "x" +
           std::to_string(tn);
  }
};

// Large tiles do twice the arithmetic per word read from shared memory (8x8 per invocation); they
// are taken where the grid still has enough workgroups to fill a large GPU (an H100 has 132
// multiprocessors), else small ones, whose K is split until it does, with at least kMinSplitDepth
// taps per split (their partial sums are written and read once more). Starting points, to be tuned.
constexpr Tiles kSmallTiles{64, 64, 16, 4, 4}, kLargeTiles{128, 128, 8, 8, 8};
constexpr uint64_t kTargetWorkgroups = 256;
constexpr uint32_t kMinSplitDepth = 128, kMaxSplits = 16;

// The positive number an MNNPY_VULKAN_CONV_* variable holds; 0 where unset.
uint32_t env_count(const char* name, const char* text) {
  if (!text || !*text) return 0;
  unsigned v = 0;
  char end = 0;
  if (std::sscanf(text, "%u%c", &v, &end) != 1 || v == 0) {
    throw ValueError(std::string(name) + ": expected a positive number, got " + text);
  }
  return v;
}
uint32_t splits_from_environment() {
  static const uint32_t splits = env_count("MNNPY_VULKAN_CONV_SPLITS", std::getenv("MNNPY_VULKAN_CONV_SPLITS"));
  return splits;
}
const Tiles* tiles_from_environment() {
  static const std::unique_ptr<Tiles> tiles = []() -> std::unique_ptr<Tiles> {
    const char* text = std::getenv("MNNPY_VULKAN_CONV_TILES");
    if (!text || !*text) return nullptr;
    uint32_t v[5];
    char end = 0;
    if (std::sscanf(text, "%u,%u,%u,%u,%u%c", &v[0], &v[1], &v[2], &v[3], &v[4], &end) != 5) {
      throw ValueError(std::string("MNNPY_VULKAN_CONV_TILES: expected BM,BN,BK,TM,TN, got ") + text);
    }
    const Tiles t{v[0], v[1], v[2], v[3], v[4]};
    if (!t.valid()) {
      throw ValueError(std::string("MNNPY_VULKAN_CONV_TILES: ") + text +
                       " needs TM and TN multiples of 4 dividing BM and BN, at most 1024 invocations, a multiple "
                       "of BN invocations with BK a multiple of their quotient, and shared memory within the "
                       "device's " + std::to_string(device_info().max_shared_memory) + " bytes");
    }
    return std::make_unique<Tiles>(t);
  }();
  return tiles.get();
}

uint64_t gemm_workgroups(const ConvShape& s, const Tiles& t) {
  return (uint64_t)groups_for(s.out_c_per_group(), t.bm) * groups_for(s.batch * s.out_h * s.out_w, t.bn) * s.group;
}

// The GEMM's plan: tiles, and K in `splits` runs of `split_depth` taps (a multiple of BK).
struct GemmPlan {
  Tiles tiles{};
  uint32_t splits = 1, split_depth = 0;
};

GemmPlan plan_gemm(const ConvShape& s) {
  GemmPlan p;
  const Tiles* chosen = tiles_from_environment();
  p.tiles = chosen ? *chosen : gemm_workgroups(s, kLargeTiles) >= kTargetWorkgroups ? kLargeTiles : kSmallTiles;
  const uint64_t depth = (uint64_t)s.depth(), groups = gemm_workgroups(s, p.tiles);
  uint64_t splits = splits_from_environment();
  if (!splits) {
    splits = groups >= kTargetWorkgroups ? 1 : (kTargetWorkgroups + groups - 1) / groups;
    splits = std::min<uint64_t>({splits, depth / kMinSplitDepth, kMaxSplits});
  }
  // Every split's partial sums are a copy of the output in scratch, which one binding must hold,
  // indexed in 32 bits.
  const uint64_t out_floats = (uint64_t)s.batch * s.out_c * s.out_h * s.out_w;
  const uint64_t scratch_floats = std::min<uint64_t>(device_info().max_storage_buffer_range / 4, UINT32_MAX);
  splits = std::max<uint64_t>(1, std::min<uint64_t>(splits, scratch_floats / std::max<uint64_t>(out_floats, 1)));
  const uint64_t per_split = (depth + splits - 1) / splits;
  p.split_depth = (uint32_t)((per_split + p.tiles.bk - 1) / p.tiles.bk * p.tiles.bk);
  p.splits = (uint32_t)((depth + p.split_depth - 1) / p.split_depth);
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
// ... of shaders/conv2d_finish.comp.
struct FinishPush {
  uint32_t count, splits, out_c, out_hw;
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
    const bool pointwise = s.is_pointwise(), partial = plan.splits > 1;
    const Tiles& t = plan.tiles;
    const uint32_t out_hw = (uint32_t)(s.out_h * s.out_w);
    gemm_push_ = GemmPush{(uint32_t)s.out_c_per_group(), (uint32_t)(s.batch * out_hw), (uint32_t)s.depth(),
                          (uint32_t)s.in_c, (uint32_t)s.in_c_per_group(), (uint32_t)s.out_c, (uint32_t)s.in_h,
                          (uint32_t)s.in_w, (uint32_t)s.out_w, out_hw, (int32_t)s.stride_h, (int32_t)s.stride_w,
                          (int32_t)s.pad_top, (int32_t)s.pad_left, (int32_t)s.dilation_h, (int32_t)s.dilation_w,
                          plan.splits, plan.split_depth, (uint32_t)out_floats_, act.p0, act.p1};
    pipeline_ = pipeline_for(kConvSpirv, sizeof(kConvSpirv), 4, sizeof(GemmPush),
                             {t.bm, t.bn, t.bk, t.tm, t.tn, t.threads(), (uint32_t)s.kernel_h, (uint32_t)s.kernel_w,
                              pointwise, act_code, has_bias, partial});
    scheme_ = std::string(pointwise ? "conv 1x1 gemm " : "conv implicit-gemm ") + t.name();
    if (partial) {
      finish_push_ = FinishPush{(uint32_t)out_floats_, plan.splits, (uint32_t)s.out_c, out_hw, act.p0, act.p1};
      finish_ = pipeline_for(kFinishSpirv, sizeof(kFinishSpirv), 3, sizeof(FinishPush), {act_code, has_bias});
      scheme_ += " split-k " + std::to_string(plan.splits);
    }
  }

  // The scheme: "conv depthwise KHxKW", or "conv implicit-gemm" / "conv 1x1 gemm" with the tiles
  // "BMxBNxBK TMxTN" and, where K is split, "split-k S".
  const char* scheme() const override { return scheme_.c_str(); }
  double flops() const override {
    return 2.0 * (double)s_.batch * (double)s_.out_c * (double)(s_.out_h * s_.out_w) * (double)s_.depth();
  }
  size_t scratch_bytes() const override { return finish_ ? (size_t)plan_.splits * out_floats_ * sizeof(float) : 0; }

  void execute(const KernelArgs& args, void* scratch) const override {
    const Tensor* out = args.outputs[0];
    if (out->numel() == 0) return;
    const Tensor &x = *args.inputs[0], &w = *args.inputs[1];
    const BufferRange y = resolve(out->data, out->nbytes());
    const BufferRange xr = resolve(x.data, x.nbytes()), wr = resolve(w.data, w.nbytes());
    const BufferRange bias = has_bias_ ? resolve(args.inputs[2]->data, args.inputs[2]->nbytes()) : BufferRange{};
    const uint32_t loop_groups = std::min(groups_for(out_floats_, kLoopWorkgroup), kMaxLoopGroups);
    if (depthwise_) {
      pipeline_->dispatch({y, xr, wr, bias}, &depthwise_push_, loop_groups);
      return;
    }
    const Tiles& t = plan_.tiles;
    const uint32_t groups_x = std::min(groups_for(gemm_push_.pixels, t.bn), kMaxGroupsPerDim);
    const uint32_t groups_y = groups_for(gemm_push_.out_c_group, t.bm), groups_z = (uint32_t)s_.group * plan_.splits;
    if (!finish_) {
      pipeline_->dispatch({y, xr, wr, bias}, &gemm_push_, groups_x, groups_y, groups_z);
      return;
    }
    const BufferRange partial = resolve(scratch, scratch_bytes());
    pipeline_->dispatch({partial, xr, wr, BufferRange{}}, &gemm_push_, groups_x, groups_y, groups_z);
    finish_->dispatch({y, partial, bias}, &finish_push_, loop_groups);
  }

 private:
  ConvShape s_;
  uint64_t out_floats_;
  bool has_bias_, depthwise_;
  GemmPlan plan_;
  std::string scheme_;
  std::shared_ptr<Pipeline> pipeline_, finish_;  // finish_: where K is split
  DepthwisePush depthwise_push_{};
  GemmPush gemm_push_{};
  FinishPush finish_push_{};
};

std::unique_ptr<Kernel> make_conv_kernel(const KernelContext& ctx) {
  Attrs attrs = ctx.attrs;
  const ConvShape s = conv_common::conv2d_shape(ctx.input_types, attrs);
  GemmPlan plan;
  if (s.in_c_per_group() != 1) {
    plan = plan_gemm(s);
    // Channel tiles and groups times splits within the grid's guaranteed limits (pixel tiles loop).
    if (groups_for(s.out_c_per_group(), plan.tiles.bm) > kMaxGroupsPerDim ||
        (uint64_t)s.group * plan.splits > kMaxGroupsPerDim) {
      return nullptr;
    }
  }
  return new_kernel<ConvKernel>(s, conv_common::conv_activation(attrs), ctx.input_types.size() > 2, plan);
}

MNNPY_REGISTER_KERNEL("Conv2D", "vulkan", make_conv_kernel);

}  // namespace

}  // namespace vulkan
}  // namespace mnnpy
