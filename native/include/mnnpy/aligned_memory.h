#pragma once
// Aligned heap blocks for kernels' data. Blocks of 2 MB and more start on 2 MB boundaries, so that
// where the system gives transparent huge pages to every process they are whole huge pages. They
// are not marked MADV_HUGEPAGE: where the system's defrag setting is "madvise" (the default of
// many distributions), a fault on a marked block compacts memory synchronously, which made a
// model's first run (packing its weights) 2.5 to 3 times slower (ResNet-50: 487-642 ms against
// 215-236, BERT-base 1.49 s against 0.5 s) with no measurable gain in later runs. Free with
// std::free.
#include <cstddef>
#include <cstdlib>
#include <new>

#include <sys/mman.h>

#include "mnnpy/sanitizer.h"

namespace mnnpy {

constexpr size_t kHugePageBytes = size_t(2) << 20;
#ifdef MADV_POPULATE_WRITE
constexpr int kPopulateWrite = MADV_POPULATE_WRITE;
#else
constexpr int kPopulateWrite = 23;  // Linux's value, for headers older than the running kernel
#endif

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
  // Large blocks are about to be written whole (packed weights, tensors): faulting their pages
  // in with one call costs a fraction of a fault per 4 KB page (ResNet-18's first run, which
  // packs its weights: 92 to 78 ms). Kernels before Linux 5.14 refuse the advice; nothing changes.
  if (huge) madvise(p, rounded, kPopulateWrite);
  limit_access(p, bytes, rounded);  // ASan builds: the rounding is not the caller's
  return p;
}

}  // namespace mnnpy
