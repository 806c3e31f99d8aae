// What the Vulkan GEMM kernels (MatMul: matmul_kernel.cpp, Conv2D: conv_kernel.cpp) share: their
// tiles, the policy that picks tiles and splits K where the tiles are too few to fill the device,
// the environment variables that override both for tuning, and the finish pass of a split GEMM
// (shaders/split_k_finish.comp).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "backend/vulkan/vulkan_context.h"
#include "ops/conv_shape.h"

namespace mnnpy {
namespace vulkan {

// Invocations per workgroup: Vulkan guarantees 128, the devices in use (NVIDIA, AMD, lavapipe) 1024.
constexpr uint32_t kMaxGemmThreads = 1024;

// A workgroup's BM x BN tile of C, K taken BK at a time, TM x TN results per invocation (in runs
// of 4: multiples of 4).
struct GemmTiles {
  uint32_t bm, bn, bk, tm, tn;
  constexpr uint32_t threads() const { return (bm / tm) * (bn / tn); }
  // Of float32 tiles, rows padded by 4 (float16 tiles take half).
  constexpr uint32_t shared_bytes() const { return bk * (bm + 4 + bn + 4) * 4; }
  // TM and TN multiples of 4 dividing BM and BN, at most kMaxGemmThreads invocations and shared
  // memory within the device's.
  bool valid() const;
  std::string name() const;  // "BMxBNxBK TMxTN"
};

// Small tiles keep a GPU's multiprocessors busy on small products; large ones do twice the
// arithmetic per word read from shared memory (8x8 per invocation), taken where the grid still
// has kTargetWorkgroups of them (an H100 has 132 multiprocessors), else medium ones (8x8 per
// invocation on half the tile) where those do. On an H100, BERT-base's products at batch 32
// (4096 x 768 x 768 and the like) took 22.4 ms on medium tiles where the large-or-small choice
// took 25.5 ms.
constexpr GemmTiles kSmallGemmTiles{64, 64, 16, 4, 4}, kMediumGemmTiles{128, 64, 8, 8, 8},
    kLargeGemmTiles{128, 128, 8, 8, 8};
constexpr uint64_t kTargetWorkgroups = 256;
// A split of K sums at least kMinSplitDepth products (its partial sums are written and read once
// more), and K splits into at most kMaxSplits.
constexpr uint32_t kMinSplitDepth = 128, kMaxSplits = 16;

// A GEMM as the policy sees it: `stack` independent M x N x K products (a MatMul's batch, a
// convolution's groups).
struct GemmShape {
  uint64_t m, n, k, stack;
  uint64_t workgroups(const GemmTiles& t) const { return (uint64_t)groups_for(m, t.bm) * groups_for(n, t.bn) * stack; }
  uint64_t out_floats() const { return m * n * stack; }
};

// How K is summed: `splits` runs of `depth` products each (a multiple of BK; the last run may be
// shorter), each split's partial sums a copy of the output in scratch. One split: the whole of K.
struct KSplit {
  uint32_t splits = 1, depth = 0;
};

// The tiles and splits set for a kernel's GEMMs by its environment variables, read once.
struct GemmOverrides {
  std::optional<GemmTiles> tiles;  // "BM,BN,BK,TM,TN"
  uint32_t splits = 0;             // a positive number; 0 where unset
};
// Parses `tiles_variable` and `splits_variable` (ValueError naming the variable where either is
// malformed or the tiles are not valid() or fail `kernel_rule`, which `kernel_rule_text` words).
GemmOverrides gemm_overrides_from_environment(const char* tiles_variable, const char* splits_variable,
                                              bool (*kernel_rule)(const GemmTiles&) = nullptr,
                                              const char* kernel_rule_text = nullptr);

// The tiles of `s`: the overriding ones, else the largest that still give kTargetWorkgroups.
GemmTiles gemm_tiles_for(const GemmShape& s, const std::optional<GemmTiles>& chosen);

// K's split for `s` on `tiles`: `chosen` splits where set (0: unset), else none where the grid
// has kTargetWorkgroups, else towards that many workgroups with at least kMinSplitDepth products
// a split and at most kMaxSplits. Either way at most what scratch allows: all splits' partial sums
// in one binding, indexed in 32 bits; and at most kMaxGroupsPerDim, each a workgroup along z.
KSplit split_k_for(const GemmShape& s, const GemmTiles& tiles, uint32_t chosen);

// The finish pass of a split GEMM (shaders/split_k_finish.comp): out[i] = act(sum over splits, in
// split order, of partial[s * count + i] + bias[(i / channel_stride) % channels] + residual[i]),
// the bias, residual and act optional; deterministic, no atomics. Without them a plain ordered sum
// (MatMul).
class SplitKFinish {
 public:
  SplitKFinish(uint64_t count, uint32_t splits, const ConvActivation& act = {}, bool has_bias = false,
               uint32_t channels = 1, uint32_t channel_stride = 1, bool has_residual = false);
  // What the partial sums take: the kernel's scratch.
  size_t partial_bytes() const { return (size_t)push_.splits * push_.count * sizeof(float); }
  void record(const BufferRange& out, const BufferRange& partial, const BufferRange& bias = {},
              const BufferRange& residual = {}) const;

 private:
  struct Push {
    uint32_t count, splits, channels, channel_stride;
    float p0, p1;
  } push_;
  std::shared_ptr<Pipeline> pipeline_;
};

}  // namespace vulkan
}  // namespace mnnpy
