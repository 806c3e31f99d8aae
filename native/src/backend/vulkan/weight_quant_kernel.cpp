// WeightQuantMatMul on Vulkan (ops/weight_quant.cpp): y = x W^T (+ bias) with W as int4 or int8
// block-quantized codes, read from the codes on the device (never expanded to a float copy of W),
// as one of two shaders by the rows of x (M, the product of x's leading dims):
// - M up to kGemvMaxRows (decoding a token: memory bound): shaders/weight_quant_gemv.comp, a team
//   of invocations per 4 / M output features striding over their rows of codes 16 bytes at a
//   time, each decoded weight used for every row of x and each value of x read once for the
//   team's rows; scheme "gemv team T, O outputs";
// - more rows (a prompt): shaders/weight_quant_gemm.comp, the MatMul kernel's tiled SGEMM
//   (shaders/matmul_sgemm.glsl) with W's tile dequantized into shared memory once per step and
//   used by every row of x's tile; tiles and K splits chosen as MatMul's (gemm_tiles.h), the split
//   sums added with the bias by the split-K finish pass; scheme "dequantize sgemm BMxBNxBK TMxTN"
//   (+ " split-k S"). MNNPY_VULKAN_WEIGHT_QUANT_TILES="BM,BN,BK,TM,TN" and
//   MNNPY_VULKAN_WEIGHT_QUANT_SPLITS=S override them for tuning on a device.
// Both compute in float32 whatever the precision asked, and whatever int8_activations says: int8
// activations are the CPU's scheme for memory and integer dot products (backend/cpu/weight_quant.h),
// a GPU does float32 arithmetic at the speed the codes arrive, so x stays float here and the result
// is the float path's (within its bound; not the int8 path's rounding of x).
// Shapes whose element counts pass 32 bits, grids past the device's guaranteed limits and K = 0
// stay on the CPU (nullptr).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "backend/vulkan/gemm_tiles.h"
#include "backend/vulkan/vulkan_pipelines.h"
#include "backend/vulkan/vulkan_shapes.h"

namespace mnnpy {
namespace vulkan {

namespace {

const uint32_t kGemvSpirv[] =
#include "backend/vulkan/shaders/weight_quant_gemv.spv.inc"
    ;
const uint32_t kGemmSpirv[] =
#include "backend/vulkan/shaders/weight_quant_gemm.spv.inc"
    ;

// The GEMV's rows of x (the shader's kMaxRows), its workgroup and the widest team per output.
constexpr uint32_t kGemvMaxRows = 4, kGemvWorkgroup = 128, kGemvMaxTeam = 32;
constexpr uint32_t kBindings = 6;  // y, x, codes, scales, zeros, bias

const GemmOverrides& overrides() {
  static const GemmOverrides o =
      gemm_overrides_from_environment("MNNPY_VULKAN_WEIGHT_QUANT_TILES", "MNNPY_VULKAN_WEIGHT_QUANT_SPLITS");
  return o;
}

// The op's shape and attributes.
struct Quantized {
  uint32_t m, n, k, bits, block;
  bool asymmetric, has_bias;
};

// Output features per team: 4 / M, so that a team keeps at most 4 sums (the shader's kMaxSums).
uint32_t gemv_outputs(const Quantized& q) { return kGemvMaxRows / std::max<uint32_t>(q.m, 1); }

// Invocations per team: one per uvec4 of a row of codes (a chunk: 128 / bits codes), as a
// power of two, at most kGemvMaxTeam; longer rows give each invocation several chunks.
uint32_t gemv_team(const Quantized& q) {
  const uint32_t chunks = q.k * q.bits / 128;
  uint32_t team = 1;
  while (team < kGemvMaxTeam && team * 2 <= chunks) team *= 2;
  return team;
}

// The GEMV's workgroups: kGemvWorkgroup / team teams each, of gemv_outputs outputs a team.
uint64_t gemv_groups(const Quantized& q) { return groups_for(q.n, kGemvWorkgroup / gemv_team(q) * gemv_outputs(q)); }

class WeightQuantKernel : public VulkanKernel {
 public:
  // The GEMV.
  explicit WeightQuantKernel(const Quantized& q)
      : q_(q),
        gemv_push_{q.n, q.k},
        scheme_("gemv team " + std::to_string(gemv_team(q)) + ", " + std::to_string(gemv_outputs(q)) + " outputs"),
        pipeline_(pipeline_for(kGemvSpirv, sizeof(kGemvSpirv), kBindings, sizeof(GemvPush),
                               {kGemvWorkgroup, gemv_team(q), q.m, q.bits, q.block, q.asymmetric, q.has_bias,
                                gemv_outputs(q)})) {
    const GroupGrid grid = group_grid(gemv_groups(q));
    groups_x_ = grid.x, groups_y_ = grid.y;
  }

  // The dequantizing SGEMM on `tiles`, K in `split`.
  WeightQuantKernel(const Quantized& q, const GemmTiles& tiles, const KSplit& split)
      : q_(q),
        gemm_push_{q.m, q.n, q.k, 1, split.splits, split.depth},
        groups_x_(groups_for(q.n, tiles.bn)),
        groups_y_(groups_for(q.m, tiles.bm)),
        groups_z_(split.splits),
        scheme_("dequantize sgemm " + tiles.name() +
                (split.splits > 1 ? " split-k " + std::to_string(split.splits) : std::string())),
        // Bias in the shader only where K is whole; the finish pass adds it otherwise.
        pipeline_(pipeline_for(kGemmSpirv, sizeof(kGemmSpirv), kBindings, sizeof(GemmPush),
                               {tiles.bm, tiles.bn, tiles.bk, tiles.tm, tiles.tn, q.bits, q.block, tiles.threads(),
                                q.asymmetric, q.has_bias && split.splits == 1})),
        gemm_(true) {
    if (split.splits > 1) finish_.emplace((uint64_t)q.m * q.n, split.splits, ConvActivation{}, q.has_bias, q.n, 1);
  }

  const char* scheme() const override { return scheme_.c_str(); }
  double flops() const override { return 2.0 * q_.m * q_.n * q_.k; }
  size_t scratch_bytes() const override { return finish_ ? finish_->partial_bytes() : 0; }

  void execute(const KernelArgs& args, void* scratch) const override {
    const Tensor* out = args.outputs[0];
    if (out->numel() == 0) return;
    auto input = [&](size_t i) { return resolve_words(args.inputs[i]->data, args.inputs[i]->nbytes()); };
    const BufferRange y = resolve(out->data, out->nbytes());
    const BufferRange zeros = q_.asymmetric ? input(3) : BufferRange{};
    const BufferRange bias = q_.has_bias ? input(args.inputs.size() - 1) : BufferRange{};
    const BufferRange x = input(0), codes = input(1), scales = input(2);
    if (!gemm_) {
      pipeline_->dispatch({y, x, codes, scales, zeros, bias}, &gemv_push_, groups_x_, groups_y_);
    } else if (!finish_) {
      pipeline_->dispatch({y, x, codes, scales, zeros, bias}, &gemm_push_, groups_x_, groups_y_, groups_z_);
    } else {
      const BufferRange partial = resolve(scratch, scratch_bytes());
      pipeline_->dispatch({partial, x, codes, scales, zeros, BufferRange{}}, &gemm_push_, groups_x_, groups_y_,
                          groups_z_);
      finish_->record(y, partial, bias);
    }
  }

 private:
  struct GemvPush {
    uint32_t n, k;
  };
  struct GemmPush {
    uint32_t m, n, k, batch_count, splits, split_depth;
  };
  Quantized q_;
  GemvPush gemv_push_{};
  GemmPush gemm_push_{};
  uint32_t groups_x_ = 1, groups_y_ = 1, groups_z_ = 1;
  std::string scheme_;
  std::shared_ptr<Pipeline> pipeline_;
  bool gemm_ = false;
  std::optional<SplitKFinish> finish_;  // where K is split
};

std::unique_ptr<Kernel> make_weight_quant_kernel(const KernelContext& ctx) {
  const Shape& xs = ctx.input_types[0].shape;
  uint64_t m = 1;
  for (size_t i = 0; i + 1 < xs.size(); ++i) m *= (uint64_t)xs[i];
  const uint64_t k = (uint64_t)xs.back(), n = (uint64_t)ctx.input_types[1].shape[0];
  const bool asymmetric = ctx.attrs.get_int("asymmetric") != 0;
  Quantized q{};
  q.bits = (uint32_t)ctx.attrs.get_int("bits");
  q.block = (uint32_t)ctx.attrs.get_int("block");
  q.asymmetric = asymmetric;
  q.has_bias = ctx.input_types.size() == (asymmetric ? 5u : 4u);
  // Indices are uint32 in the shaders: x's and y's elements and W's (its bytes for int8) must fit.
  if (k == 0 || m * k > UINT32_MAX || m * n > UINT32_MAX || n * k > UINT32_MAX) return nullptr;
  q.m = (uint32_t)m, q.n = (uint32_t)n, q.k = (uint32_t)k;
  if (m <= kGemvMaxRows) {
    if (gemv_groups(q) > (uint64_t)kMaxGroupsPerDim * kMaxGroupsPerDim) return nullptr;
    return new_kernel<WeightQuantKernel>(q);
  }
  const GemmShape shape{m, n, k, 1};
  const GemmTiles tiles = gemm_tiles_for(shape, overrides().tiles);
  if (groups_for(n, tiles.bn) > kMaxGroupsPerDim || groups_for(m, tiles.bm) > kMaxGroupsPerDim) return nullptr;
  return new_kernel<WeightQuantKernel>(q, tiles, split_k_for(shape, tiles, overrides().splits));
}

MNNPY_REGISTER_KERNEL("WeightQuantMatMul", "vulkan", make_weight_quant_kernel);

}  // namespace

}  // namespace vulkan
}  // namespace mnnpy
