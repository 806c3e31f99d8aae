#include "backend/vulkan/gemm_tiles.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "backend/vulkan/vulkan_pipelines.h"
#include "backend/vulkan/vulkan_shapes.h"

namespace mnnpy {
namespace vulkan {

namespace {

const uint32_t kSplitKFinishSpirv[] =
#include "backend/vulkan/shaders/split_k_finish.spv.inc"
    ;
// The finish shader's workgroup; its grid is at most kFinishGroups, invocations looping over the
// elements.
constexpr uint32_t kFinishWorkgroup = 256, kFinishGroups = 8192;

std::optional<GemmTiles> tiles_from(const char* variable, bool (*kernel_rule)(const GemmTiles&),
                                    const char* kernel_rule_text) {
  const char* text = std::getenv(variable);
  if (!text || !*text) return std::nullopt;
  uint32_t v[5];
  char end = 0;
  if (std::sscanf(text, "%u,%u,%u,%u,%u%c", &v[0], &v[1], &v[2], &v[3], &v[4], &end) != 5) {
    throw ValueError(std::string(variable) + ": expected BM,BN,BK,TM,TN, got " + text);
  }
  const GemmTiles t{v[0], v[1], v[2], v[3], v[4]};
  if (!t.valid() || (kernel_rule && !kernel_rule(t))) {
    throw ValueError(std::string(variable) + ": " + text +
                     " needs TM and TN multiples of 4 dividing BM and BN, at most " +
                     std::to_string(kMaxGemmThreads) + " invocations" +
                     (kernel_rule_text ? std::string(", ") + kernel_rule_text : std::string()) +
                     " and shared memory within the device's " + std::to_string(device_info().max_shared_memory) +
                     " bytes");
  }
  return t;
}

uint32_t count_from(const char* variable) {
  const char* text = std::getenv(variable);
  if (!text || !*text) return 0;
  unsigned v = 0;
  char end = 0;
  if (std::sscanf(text, "%u%c", &v, &end) != 1 || v == 0) {
    throw ValueError(std::string(variable) + ": expected a positive number, got " + text);
  }
  return v;
}

}  // namespace

bool GemmTiles::valid() const {
  return tm && tn && bk && tm % 4 == 0 && tn % 4 == 0 && bm % tm == 0 && bn % tn == 0 &&
         threads() <= kMaxGemmThreads && shared_bytes() <= device_info().max_shared_memory;
}

std::string GemmTiles::name() const {
  return std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) + " " + std::to_string(tm) + "x" +
         std::to_string(tn);
}

GemmOverrides gemm_overrides_from_environment(const char* tiles_variable, const char* splits_variable,
                                              bool (*kernel_rule)(const GemmTiles&), const char* kernel_rule_text) {
  GemmOverrides o;
  o.tiles = tiles_from(tiles_variable, kernel_rule, kernel_rule_text);
  o.splits = count_from(splits_variable);
  return o;
}

GemmTiles gemm_tiles_for(const GemmShape& s, const std::optional<GemmTiles>& chosen) {
  if (chosen) return *chosen;
  for (const GemmTiles& t : {kLargeGemmTiles, kMediumGemmTiles}) {
    if (s.workgroups(t) >= kTargetWorkgroups) return t;
  }
  return kSmallGemmTiles;
}

KSplit split_k_for(const GemmShape& s, const GemmTiles& tiles, uint32_t chosen) {
  KSplit split;
  if (s.k == 0) return split;
  uint64_t splits = chosen;
  if (!splits) {
    const uint64_t groups = s.workgroups(tiles);
    splits = groups >= kTargetWorkgroups ? 1 : (kTargetWorkgroups + groups - 1) / groups;
    splits = std::min<uint64_t>({splits, s.k / kMinSplitDepth, kMaxSplits});
  }
  const uint64_t scratch_floats = std::min<uint64_t>(device_info().max_storage_buffer_range / 4, UINT32_MAX);
  splits = std::min<uint64_t>({splits, scratch_floats / std::max<uint64_t>(s.out_floats(), 1), kMaxGroupsPerDim});
  splits = std::max<uint64_t>(splits, 1);
  // Runs of whole BK steps; rounding them up may leave fewer splits than asked.
  const uint64_t per_split = (s.k + splits - 1) / splits;
  split.depth = (uint32_t)((per_split + tiles.bk - 1) / tiles.bk * tiles.bk);
  split.splits = (uint32_t)((s.k + split.depth - 1) / split.depth);
  return split;
}

SplitKFinish::SplitKFinish(uint64_t count, uint32_t splits, const ConvActivation& act, bool has_bias,
                           uint32_t channels, uint32_t channel_stride, bool has_residual)
    : push_{(uint32_t)count, splits, channels, channel_stride, act.p0, act.p1},
      pipeline_(pipeline_for(kSplitKFinishSpirv, sizeof(kSplitKFinishSpirv), 4, sizeof(Push),
                             {(uint32_t)act.code, has_bias, has_residual})) {}

void SplitKFinish::record(const BufferRange& out, const BufferRange& partial, const BufferRange& bias,
                          const BufferRange& residual) const {
  pipeline_->dispatch({out, partial, bias, residual}, &push_,
                      std::min(groups_for(push_.count, kFinishWorkgroup), kFinishGroups));
}

}  // namespace vulkan
}  // namespace mnnpy
