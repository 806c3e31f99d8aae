// MatMul on Vulkan: float32 stacks of products of up to rank 8, as one tiled SGEMM dispatch
// (shaders/matmul.comp); other dtypes, higher ranks and grids past the device's guaranteed
// limits stay on the CPU (nullptr). The tile sizes are the shader's specialization constants,
// chosen per product (tiles_for); MNNPY_VULKAN_MATMUL_TILES="BM,BN,BK,TM,TN" sets them for every
// product, for tuning on a device.
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

class MatMulKernel : public VulkanKernel {
 public:
  MatMulKernel(const MatMulPush& push, const Tiles& tiles, bool ta, bool tb)
      : push_(push),
        groups_x_(groups_for(push.N, tiles.bn)),
        groups_y_(groups_for(push.M, tiles.bm)),
        scheme_("sgemm " + std::to_string(tiles.bm) + "x" + std::to_string(tiles.bn) + "x" + std::to_string(tiles.bk) +
                " " + std::to_string(tiles.tm) + "x" + std::to_string(tiles.tn)),
        pipeline_(pipeline_for(kMatMulSpirv, sizeof(kMatMulSpirv), 3, sizeof(MatMulPush),
                               {tiles.bm, tiles.bn, tiles.bk, tiles.tm, tiles.tn, ta, tb, tiles.threads()})) {}

  // The tiles, as "sgemm BMxBNxBK TMxTN".
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
  const Tiles tiles = tiles_for(d.M, d.N, batches.count);
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
  return new_kernel<MatMulKernel>(push, tiles, ta, tb);
}

MNNPY_REGISTER_KERNEL("MatMul", "vulkan", make_matmul_kernel);

}  // namespace

}  // namespace vulkan
}  // namespace mnnpy
