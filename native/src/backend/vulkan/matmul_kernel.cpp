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
// The profile's scheme names the path and its tiles. Other dtypes, higher ranks and grids past
// the device's guaranteed limits stay on the CPU (nullptr). The SGEMMs' tile sizes are
// specialization constants chosen per product (tiles_for); MNNPY_VULKAN_MATMUL_TILES=
// "BM,BN,BK,TM,TN" sets them for every product, for tuning on a device.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "backend/vulkan/vulkan_pipelines.h"
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
constexpr uint32_t kMaxGroups = 65535;  // per grid dimension, what every device allows
// Invocations per workgroup: Vulkan guarantees 128, the devices in use (NVIDIA, AMD, lavapipe) 1024.
constexpr uint32_t kMaxThreads = 1024;

// The shader's push constants (std430).
struct MatMulPush {
  uint32_t M, N, K, lda, ldb;
  uint32_t batch_count, batch_rank;
  uint32_t batch_dims[kMaxBatchRank];
  uint32_t a_batch_stride[kMaxBatchRank];
  uint32_t b_batch_stride[kMaxBatchRank];
};
static_assert(sizeof(MatMulPush) <= 128, "push constants beyond the guaranteed 128 bytes");

// A workgroup's BM x BN tile of C, K taken BK at a time, TM x TN results per invocation (in runs
// of 4: multiples of 4).
struct Tiles {
  uint32_t bm, bn, bk, tm, tn;
  uint32_t threads() const { return (bm / tm) * (bn / tn); }
  // The SGEMM's with float32 tiles (float16 tiles take half).
  uint32_t shared_bytes() const { return bk * (bm + 4 + bn + 4) * 4; }
};

// Small tiles keep a GPU's multiprocessors busy on small products; large ones do twice the
// arithmetic per word read from shared memory, where the grid still has enough workgroups.
// (Starting points, to be tuned per device.)
constexpr Tiles kSmallTiles{64, 64, 16, 4, 4}, kLargeTiles{128, 128, 8, 8, 8};
constexpr uint64_t kLargeTilesFromWorkgroups = 256;

// MNNPY_VULKAN_MATMUL_TILES, parsed once; null where unset.
const Tiles* tiles_from_environment() {
  static const std::unique_ptr<Tiles> tiles = []() -> std::unique_ptr<Tiles> {
    const char* text = std::getenv("MNNPY_VULKAN_MATMUL_TILES");
    if (!text || !*text) return nullptr;
    uint32_t v[5];
    char end = 0;
    if (std::sscanf(text, "%u,%u,%u,%u,%u%c", &v[0], &v[1], &v[2], &v[3], &v[4], &end) != 5) {
      throw ValueError(std::string("MNNPY_VULKAN_MATMUL_TILES: expected BM,BN,BK,TM,TN, got ") + text);
    }
    const Tiles t{v[0], v[1], v[2], v[3], v[4]};
    if (!t.tm || !t.tn || !t.bk || t.tm % 4 || t.tn % 4 || t.bm % t.tm || t.bn % t.tn || t.threads() > kMaxThreads ||
        t.shared_bytes() > device_info().max_shared_memory) {
      throw ValueError(std::string("MNNPY_VULKAN_MATMUL_TILES: ") + text +
                       " needs TM and TN multiples of 4 dividing BM and BN, at most 1024 invocations and shared "
                       "memory within the device's " + std::to_string(device_info().max_shared_memory) + " bytes");
    }
    return std::make_unique<Tiles>(t);
  }();
  return tiles.get();
}

Tiles tiles_for(int64_t M, int64_t N, int64_t batch) {
  if (const Tiles* chosen = tiles_from_environment()) return *chosen;
  const uint64_t large_groups = (uint64_t)groups_for(M, kLargeTiles.bm) * groups_for(N, kLargeTiles.bn) * batch;
  return large_groups >= kLargeTilesFromWorkgroups ? kLargeTiles : kSmallTiles;
}

// The cooperative-matrix GEMM's fixed tiles (the shader's layout): 64 x 64 of C by 4 subgroups,
// K 32 at a time, 16 x 16 x 16 products; its shared memory: float16 tiles of op(A) and op(B)
// (rows padded by 8) and float32 C (rows padded by 4).
constexpr Tiles kCoopMatTiles{64, 64, 32, 0, 0};
constexpr uint32_t kCoopMatSide = 16, kCoopMatSubgroups = 4;
constexpr uint32_t kCoopMatSharedBytes = kCoopMatTiles.bk * (kCoopMatTiles.bm + 8 + kCoopMatTiles.bn + 8) * 2 +
                                         kCoopMatTiles.bm * (kCoopMatTiles.bn + 4) * 4;

enum class Path { Sgemm, Hgemm, HgemmCoopMat };

// The shader for a product at `precision`: float16 operands only at low, and there the
// cooperative matrices wherever the device reports their shape (and room for the tiles).
Path path_for(Precision precision) {
  if (precision != Precision::Low) return Path::Sgemm;
  const DeviceInfo& d = device_info();
  for (const CoopMatShape& s : d.coopmat_f16) {
    if (s.m == kCoopMatSide && s.n == kCoopMatSide && s.k == kCoopMatSide && d.subgroup_size &&
        kCoopMatSubgroups * d.subgroup_size <= kMaxThreads && kCoopMatSharedBytes <= d.max_shared_memory) {
      return Path::HgemmCoopMat;
    }
  }
  return d.float16 ? Path::Hgemm : Path::Sgemm;
}

class MatMulKernel : public VulkanKernel {
 public:
  MatMulKernel(const MatMulPush& push, Path path, const Tiles& tiles, bool ta, bool tb)
      : push_(push),
        groups_x_(groups_for(push.N, tiles.bn)),
        groups_y_(groups_for(push.M, tiles.bm)),
        scheme_(scheme_of(path, tiles)),
        pipeline_(pipeline_of(path, tiles, ta, tb)) {}

  // The path and tiles: "sgemm BMxBNxBK TMxTN", "hgemm BMxBNxBK TMxTN" (float16 tiles) or
  // "hgemm coopmat BMxBNxBK 16x16x16".
  const char* scheme() const override { return scheme_.c_str(); }
  double flops() const override { return 2.0 * push_.batch_count * push_.M * push_.N * push_.K; }

  void execute(const KernelArgs& args, void*) const override {
    const Tensor* out = args.outputs[0];
    if (out->numel() == 0) return;
    if (push_.K == 0) {
      record_fill(out->data, out->nbytes(), 0);
      return;
    }
    const Tensor &a = *args.inputs[0], &b = *args.inputs[1];
    pipeline_->dispatch({resolve(out->data, out->nbytes()), resolve(a.data, a.nbytes()), resolve(b.data, b.nbytes())},
                        &push_, groups_x_, groups_y_, std::min(push_.batch_count, kMaxGroups));
  }

 private:
  MatMulPush push_;
  uint32_t groups_x_, groups_y_;
  std::string scheme_;
  std::shared_ptr<Pipeline> pipeline_;

  // Every MatMul shader takes the same specialization constants (shaders/matmul_common.glsl):
  // BM, BN, BK, TM, TN, the transposes and the workgroup size.
  static std::shared_ptr<Pipeline> pipeline_of(Path path, const Tiles& t, bool ta, bool tb) {
    if (path == Path::HgemmCoopMat) {
      return pipeline_for(kMatMulCoopMatSpirv, sizeof(kMatMulCoopMatSpirv), 3, sizeof(MatMulPush),
                          {t.bm, t.bn, t.bk, t.tm, t.tn, ta, tb, kCoopMatSubgroups * device_info().subgroup_size});
    }
    const bool f16 = path == Path::Hgemm;
    return pipeline_for(f16 ? kMatMulF16Spirv : kMatMulSpirv, f16 ? sizeof(kMatMulF16Spirv) : sizeof(kMatMulSpirv), 3,
                        sizeof(MatMulPush), {t.bm, t.bn, t.bk, t.tm, t.tn, ta, tb, t.threads()});
  }

  static std::string scheme_of(Path path, const Tiles& t) {
    const std::string tile = std::to_string(t.bm) + "x" + std::to_string(t.bn) + "x" + std::to_string(t.bk);
    if (path == Path::HgemmCoopMat) {
      const std::string side = std::to_string(kCoopMatSide);
      return "hgemm coopmat " + tile + " " + side + "x" + side + "x" + side;
    }
    return (path == Path::Hgemm ? "hgemm " : "sgemm ") + tile + " " + std::to_string(t.tm) + "x" + std::to_string(t.tn);
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
  const Tiles tiles = path == Path::HgemmCoopMat ? kCoopMatTiles : tiles_for(d.M, d.N, batches.count);
  if (groups_for(d.N, tiles.bn) > kMaxGroups || groups_for(d.M, tiles.bm) > kMaxGroups) return nullptr;
  MatMulPush push{};
  // Every tensor fits one binding, so element counts and offsets fit 32 bits.
  push.M = (uint32_t)d.M, push.N = (uint32_t)d.N, push.K = (uint32_t)d.K;
  push.lda = (uint32_t)d.lda, push.ldb = (uint32_t)d.ldb;
  push.batch_count = (uint32_t)batches.count;
  push.batch_rank = (uint32_t)batches.shape.size();
  for (size_t i = 0; i < batches.shape.size(); ++i) {
    push.batch_dims[i] = (uint32_t)batches.shape[i];
    push.a_batch_stride[i] = (uint32_t)batches.a_stride[i];
    push.b_batch_stride[i] = (uint32_t)batches.b_stride[i];
  }
  return new_kernel<MatMulKernel>(push, path, tiles, ta, tb);
}

MNNPY_REGISTER_KERNEL("MatMul", "vulkan", make_matmul_kernel);

}  // namespace

}  // namespace vulkan
}  // namespace mnnpy
