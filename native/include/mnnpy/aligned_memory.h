#pragma once
// Aligned heap blocks for kernels' data. Blocks of 2 MB and more start on 2 MB boundaries and are
// marked for transparent huge pages: packed weights and activations are walked with large strides,
// which would otherwise touch a new 4 KB page (and TLB entry) at each step, and a model's first run
// takes one page fault per 2 MB instead of per 4 KB. Free with std::free.
#include <cstddef>
#include <cstdlib>
#include <new>

#include "mnnpy/sanitizer.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace mnnpy {

constexpr size_t kHugePageBytes = size_t(2) << 20;

// The size allocate_aligned(bytes) really reserves (a multiple of its alignment).
inline size_t aligned_block_size(size_t bytes) {
  const size_t align = bytes >= kHugePageBytes ? kHugePageBytes : 64;
  return (bytes + align - 1) & ~(align - 1);
}

inline void* allocate_aligned(size_t bytes) {
  const size_t rounded = aligned_block_size(bytes == 0 ? 1 : bytes);
  const bool huge = rounded >= kHugePageBytes;
  void* p = std::aligned_alloc(huge ? kHugePageBytes : 64, rounded);
  if (!p) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  if (huge) madvise(p, rounded, MADV_HUGEPAGE);
#endif
  limit_access(p, bytes, rounded);  // ASan builds: the rounding is not the caller's
  return p;
}

}  // namespace mnnpy
