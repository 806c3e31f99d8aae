// Shape arithmetic the Vulkan kernels share: workgroup grids past the 65535-per-dimension limit,
// strided boxes reduced to their fewest dims, and the [outer, n, inner] view of a reduced run.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "backend/vulkan/vulkan_context.h"

namespace mnnpy {
namespace vulkan {

// The most workgroups one dimension of a dispatch may have (Vulkan's guaranteed minimum).
constexpr uint32_t kMaxGroupsPerDim = 65535;

// `groups` workgroups laid out as x * y (x at most kMaxGroupsPerDim): the shader numbers them
// gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x and skips those from `groups` on.
struct GroupGrid {
  uint32_t x = 1, y = 1;
};
inline GroupGrid group_grid(uint64_t groups) {
  return GroupGrid{(uint32_t)std::min<uint64_t>(std::max<uint64_t>(groups, 1), kMaxGroupsPerDim),
                   groups_for(groups, kMaxGroupsPerDim)};
}

// A strided box (element strides per dim, outermost first) with size-1 dims dropped and each dim
// merged into the next inner one where both sides walk the pair as one dim.
struct StridedBox {
  std::vector<int64_t> sizes, src_strides, dst_strides;
  int64_t count() const {
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    return n;
  }
};
inline StridedBox collapse_box(const std::vector<int64_t>& sizes, const std::vector<int64_t>& src_strides,
                               const std::vector<int64_t>& dst_strides) {
  StridedBox box;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    if (!box.sizes.empty() && box.src_strides.back() == src_strides[d] * sizes[d] &&
        box.dst_strides.back() == dst_strides[d] * sizes[d]) {
      box.sizes.back() *= sizes[d];
      box.src_strides.back() = src_strides[d];
      box.dst_strides.back() = dst_strides[d];
      continue;
    }
    box.sizes.push_back(sizes[d]);
    box.src_strides.push_back(src_strides[d]);
    box.dst_strides.push_back(dst_strides[d]);
  }
  return box;
}

// Whether the box's elements land at distinct offsets through `strides`: enough that each dim,
// taken by increasing |stride|, steps past everything the dims before it reach (a box of
// distinct offsets may still fail this; then its writes are treated as overlapping).
inline bool distinct_offsets(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  std::vector<size_t> order(sizes.size());
  for (size_t d = 0; d < order.size(); ++d) order[d] = d;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return std::llabs(strides[a]) < std::llabs(strides[b]); });
  int64_t reach = 0;  // the widest offset difference of the dims taken so far
  for (size_t d : order) {
    if (sizes[d] == 1) continue;
    if (std::llabs(strides[d]) <= reach) return false;
    reach += (sizes[d] - 1) * std::llabs(strides[d]);
  }
  return true;
}

// The input of a reduction over axes [first, first + count) viewed as [outer, n, inner].
struct ReducedRun {
  int64_t outer = 1, n = 1, inner = 1;
};
inline ReducedRun reduced_run(const std::vector<int64_t>& shape, int64_t first, int64_t count) {
  ReducedRun run;
  for (int64_t d = 0; d < (int64_t)shape.size(); ++d) {
    (d < first ? run.outer : d < first + count ? run.n : run.inner) *= shape[d];
  }
  return run;
}

}  // namespace vulkan
}  // namespace mnnpy
