// MatMul on Vulkan: float32 stacks of products of up to rank 8, as one dispatch of one of three
// shaders (their common part: shaders/matmul_common.glsl):
// - the tiled SGEMM (shaders/matmul.comp): float32 throughout, at precision normal and high, and
//   at low on devices without float16 arithmetic;
// - at precision low, where the device has float16 x float16 -> float32 cooperative matrices of
//   16x16x16 (DeviceInfo::coopmat_f16; MNNPY_VULKAN_COOPMAT=0 turns them off): a GEMM on them
//   (shaders/matmul_f16_coopmat.comp), operands rounded to float16 as they are staged, float32
//   sums;
// - else at precision low, where the device has float16 arithmetic: the tiled SGEMM with
//   float16 tiles (shaders/matmul_f16.comp), operands rounded likewise, float32 sums.
// Where the tiles are too few to fill the device (a product of few rows, as at batch 1, or a small
// stack), K is split as a convolution's is (gemm_tiles.h): each split sums its run of K into its
// partial tile in the kernel's scratch, and a second dispatch (shaders/split_k_finish.comp) adds
// the partials in split order into C (deterministic, no atomics). Every path splits alike.
// The profile's scheme names the path, its tiles and "split-k S" where K is split. Other dtypes,
// higher ranks and grids past the device's guaranteed limits stay on the CPU (nullptr). The SGEMMs'
// tile sizes are specialization constants chosen per product (gemm_tiles_for); for tuning on a
// device, MNNPY_VULKAN_MATMUL_TILES="BM,BN,BK,TM,TN" sets them and MNNPY_VULKAN_MATMUL_SPLITS=S the
// splits (1: none) of every product.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "backend/vulkan/gemm_tiles.h"
#include "backend/vulkan/vulkan_pipelines.h"
#include "backend/vulkan/vulkan_shapes.h"
#include "ops/matmul_shape.h"

namespace mnnpy {
namespace vulkan {

namespace {

const uint32_t kMatMulSpirv[] =
#include "backend/vulkan/shaders/matmul.spv.inc"
    ;
const uint32_t kMatMulF16Spirv[] =
#include "backend/vulkan/shaders/matmul_f16.spv.inc"
    ;
const uint32_t kMatMulCoopMatSpirv[] =
#include "backend/vulkan/shaders/matmul_f16_coopmat.spv.inc"
    ;

constexpr size_t kMaxRank = 8, kMaxBatchRank = kMaxRank - 2;

// The shaders' push constants (std430; shaders/matmul_common.glsl).
struct MatMulPush {
  uint32_t M, N, K, lda, ldb;
  uint32_t batch_count, batch_rank;
  uint32_t batch_dims[kMaxBatchRank];
  uint32_t a_batch_stride[kMaxBatchRank];
  uint32_t b_batch_stride[kMaxBatchRank];
  uint32_t splits, split_depth;
};
static_assert(sizeof(MatMulPush) <= 128, "push constants beyond the guaranteed 128 bytes");

const GemmOverrides& overrides() {
  static const GemmOverrides o =
      gemm_overrides_from_environment("MNNPY_VULKAN_MATMUL_TILES", "MNNPY_VULKAN_MATMUL_SPLITS");
  return o;
}

// The cooperative-matrix GEMM's tiles (the shader's layout): 128 x 128 of C by 8 subgroups, or
// 64 x 64 by 4 where the products are smaller; K 32 at a time, 16 x 16 x 16 products. Its shared
// memory: float16 tiles of op(A) and op(B) (rows padded by 8) and a float32 16 x 16 staging area
// per subgroup (rows padded by 4).
constexpr GemmTiles kCoopMatLarge{128, 128, 32, 0, 0}, kCoopMatSmall{64, 64, 32, 0, 0};
constexpr uint32_t kCoopMatSide = 16;
constexpr uint32_t coopmat_subgroups(const GemmTiles& t) { return (t.bm / 32) * 2; }
constexpr uint32_t coopmat_shared_bytes(const GemmTiles& t) {
  return (std::max(t.bm * (t.bk + 8), t.bk * (t.bm + 8)) + std::max(t.bn * (t.bk + 8), t.bk * (t.bn + 8))) * 2 +
         coopmat_subgroups(t) * kCoopMatSide * (kCoopMatSide + 4) * 4;
}

enum class Path { Sgemm, Hgemm, HgemmCoopMat };

// The shader for a product at `precision`: float16 operands only at low, and there the
// cooperative matrices wherever the device reports their shape (and room for the tiles).
Path path_for(Precision precision) {
  if (precision != Precision::Low) return Path::Sgemm;
  const DeviceInfo& d = device_info();
  for (const CoopMatShape& s : d.coopmat_f16) {
    if (s.m == kCoopMatSide && s.n == kCoopMatSide && s.k == kCoopMatSide && d.subgroup_size &&
        coopmat_subgroups(kCoopMatLarge) * d.subgroup_size <= kMaxGemmThreads &&
        coopmat_shared_bytes(kCoopMatLarge) <= d.max_shared_memory) {
      return Path::HgemmCoopMat;
    }
  }
  return d.float16 ? Path::Hgemm : Path::Sgemm;
}

class MatMulKernel : public VulkanKernel {
 public:
  MatMulKernel(const MatMulPush& push, Path path, const GemmTiles& tiles, bool ta, bool tb)
      : push_(push),
        groups_x_(groups_for(push.N, tiles.bn)),
        groups_y_(groups_for(push.M, tiles.bm)),
        // Products times splits along z (split fastest); products past the grid's limit loop.
        groups_z_(std::min(push.batch_count, kMaxGroupsPerDim / push.splits) * push.splits),
        scheme_(scheme_of(path, tiles, push.splits)),
        pipeline_(pipeline_of(path, tiles, ta, tb)) {
    if (push.splits > 1) finish_.emplace((uint64_t)push.batch_count * push.M * push.N, push.splits);
  }

  // The path and tiles: "sgemm BMxBNxBK TMxTN", "hgemm BMxBNxBK TMxTN" (float16 tiles) or
  // "hgemm coopmat BMxBNxBK 16x16x16", then "split-k S" where K is split.
  const char* scheme() const override { return scheme_.c_str(); }
  double flops() const override { return 2.0 * push_.batch_count * push_.M * push_.N * push_.K; }
  size_t scratch_bytes() const override { return finish_ ? finish_->partial_bytes() : 0; }

  void execute(const KernelArgs& args, void* scratch) const override {
    const Tensor* out = args.outputs[0];
    if (out->numel() == 0) return;
    if (push_.K == 0) {
      record_fill(out->data, out->nbytes(), 0);
      return;
    }
    const Tensor &a = *args.inputs[0], &b = *args.inputs[1];
    const BufferRange c = resolve(out->data, out->nbytes());
    const BufferRange ar = resolve(a.data, a.nbytes()), br = resolve(b.data, b.nbytes());
    if (!finish_) {
      pipeline_->dispatch({c, ar, br}, &push_, groups_x_, groups_y_, groups_z_);
      return;
    }
    const BufferRange partial = resolve(scratch, scratch_bytes());
    pipeline_->dispatch({partial, ar, br}, &push_, groups_x_, groups_y_, groups_z_);
    finish_->record(c, partial);
  }

 private:
  MatMulPush push_;
  uint32_t groups_x_, groups_y_, groups_z_;
  std::string scheme_;
  std::shared_ptr<Pipeline> pipeline_;
  std::optional<SplitKFinish> finish_;  // where K is split

  // Every MatMul shader takes the same specialization constants (shaders/matmul_common.glsl):
  // BM, BN, BK, TM, TN, the transposes and the workgroup size.
  static std::shared_ptr<Pipeline> pipeline_of(Path path, const GemmTiles& t, bool ta, bool tb) {
    if (path == Path::HgemmCoopMat) {
      return pipeline_for(kMatMulCoopMatSpirv, sizeof(kMatMulCoopMatSpirv), 3, sizeof(MatMulPush),
                          {t.bm, t.bn, t.bk, t.tm, t.tn, ta, tb, coopmat_subgroups(t) * device_info().subgroup_size});
    }
    const bool f16 = path == Path::Hgemm;
    return pipeline_for(f16 ? kMatMulF16Spirv : kMatMulSpirv, f16 ? sizeof(kMatMulF16Spirv) : sizeof(kMatMulSpirv), 3,
                        sizeof(MatMulPush), {t.bm, t.bn, t.bk, t.tm, t.tn, ta, tb, t.threads()});
  }

  static std::string scheme_of(Path path, const GemmTiles& t, uint32_t splits) {
    const std::string split = splits > 1 ? " split-k " + std::to_string(splits) : "";
    if (path == Path::HgemmCoopMat) {
      const std::string side = std::to_string(kCoopMatSide);
      return "hgemm coopmat " + std::to_string(t.bm) + "x" + std::to_string(t.bn) + "x" + std::to_string(t.bk) + " " +
             side + "x" + side + "x" + side + split;
    }
    return (path == Path::Hgemm ? "hgemm " : "sgemm ") + t.name() + split;
  }
};

std::unique_ptr<Kernel> make_matmul_kernel(const KernelContext& ctx) {
  const Shape &as = ctx.input_types[0].shape, &bs = ctx.input_types[1].shape, &out = ctx.output_types[0].shape;
  if (ctx.input_types[0].dtype != DType::Float32 || ctx.input_types[1].dtype != DType::Float32 ||
      out.size() > kMaxRank) {
    return nullptr;
  }
  const bool ta = ctx.attrs.get_int("transpose_a") != 0, tb = ctx.attrs.get_int("transpose_b") != 0;
  const MatMulDims d = matmul_dims(as, bs, ta, tb);
  const MatMulBatches batches = matmul_batches(as, bs, out, d);
  const Path path = path_for(ctx.precision);
  const GemmShape shape{(uint64_t)d.M, (uint64_t)d.N, (uint64_t)d.K, (uint64_t)batches.count};
  const GemmTiles tiles = path != Path::HgemmCoopMat ? gemm_tiles_for(shape, overrides().tiles)
                          : d.M >= 128 && d.N >= 128 ? kCoopMatLarge
                                                     : kCoopMatSmall;
  if (groups_for(d.N, tiles.bn) > kMaxGroupsPerDim || groups_for(d.M, tiles.bm) > kMaxGroupsPerDim) return nullptr;
  const KSplit split = split_k_for(shape, tiles, overrides().splits);
  MatMulPush push{};
  // Every tensor fits one binding, so element counts and offsets fit 32 bits (and the splits'
  // partial sums together too: split_k_for).
  push.M = (uint32_t)d.M, push.N = (uint32_t)d.N, push.K = (uint32_t)d.K;
  push.lda = (uint32_t)d.lda, push.ldb = (uint32_t)d.ldb;
  push.batch_count = (uint32_t)batches.count;
  push.batch_rank = (uint32_t)batches.shape.size();
  for (size_t i = 0; i < batches.shape.size(); ++i) {
    push.batch_dims[i] = (uint32_t)batches.shape[i];
    push.a_batch_stride[i] = (uint32_t)batches.a_stride[i];
    push.b_batch_stride[i] = (uint32_t)batches.b_stride[i];
  }
  push.splits = split.splits, push.split_depth = split.depth;
  return new_kernel<MatMulKernel>(push, path, tiles, ta, tb);
}

MNNPY_REGISTER_KERNEL("MatMul", "vulkan", make_matmul_kernel);

}  // namespace

}  // namespace vulkan
}  // namespace mnnpy
