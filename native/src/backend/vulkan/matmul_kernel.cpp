// MatMul on Vulkan: float32 stacks of products of up to rank 8, as one tiled SGEMM dispatch
// (shaders/matmul.comp); other dtypes, higher ranks and grids past the device's guaranteed
// limits stay on the CPU (nullptr). The tile sizes are the shader's specialization constants:
// MNNPY_VULKAN_MATMUL_TILES="BM,BN,BK,TM,TN" replaces the default, for tuning on a device.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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

// A workgroup's BM x BN tile of C, K taken BK at a time, TM x TN results per invocation.
struct Tiles {
  uint32_t bm = 64, bn = 64, bk = 16, tm = 4, tn = 4;
  uint32_t threads() const { return (bm / tm) * (bn / tn); }
  uint32_t shared_bytes() const { return bk * (bm + 1 + bn + 1) * 4; }
};

Tiles tiles_from_environment() {
  Tiles t;
  const char* text = std::getenv("MNNPY_VULKAN_MATMUL_TILES");
  if (!text || !*text) return t;
  uint32_t v[5];
  char end = 0;
  if (std::sscanf(text, "%u,%u,%u,%u,%u%c", &v[0], &v[1], &v[2], &v[3], &v[4], &end) != 5) {
    throw ValueError(std::string("MNNPY_VULKAN_MATMUL_TILES: expected BM,BN,BK,TM,TN, got ") + text);
  }
  t = Tiles{v[0], v[1], v[2], v[3], v[4]};
  if (!t.tm || !t.tn || !t.bk || t.bm % t.tm || t.bn % t.tn || t.threads() > kMaxThreads ||
      t.shared_bytes() > device_info().max_shared_memory) {
    throw ValueError(std::string("MNNPY_VULKAN_MATMUL_TILES: ") + text +
                     " needs TM | BM, TN | BN, at most 1024 invocations and shared memory within the device's " +
                     std::to_string(device_info().max_shared_memory) + " bytes");
  }
  return t;
}

const Tiles& tiles() {
  static const Tiles t = tiles_from_environment();
  return t;
}

class MatMulKernel : public VulkanKernel {
 public:
  MatMulKernel(const MatMulPush& push, bool ta, bool tb)
      : push_(push),
        pipeline_(pipeline_for(kMatMulSpirv, sizeof(kMatMulSpirv), 3, sizeof(MatMulPush),
                               {tiles().bm, tiles().bn, tiles().bk, tiles().tm, tiles().tn, ta, tb, tiles().threads()})) {}

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
                        &push_, groups_for(push_.N, tiles().bn), groups_for(push_.M, tiles().bm),
                        std::min(push_.batch_count, kMaxGroups));
  }

 private:
  MatMulPush push_;
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
  if (groups_for(d.N, tiles().bn) > kMaxGroups || groups_for(d.M, tiles().bm) > kMaxGroups) return nullptr;
  const MatMulBatches batches = matmul_batches(as, bs, out, d);
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
  return new_kernel<MatMulKernel>(push, ta, tb);
}

MNNPY_REGISTER_KERNEL("MatMul", "vulkan", make_matmul_kernel);

}  // namespace

}  // namespace vulkan
}  // namespace mnnpy
