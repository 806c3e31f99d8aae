#pragma once
// Aligned heap blocks for kernels' data. Blocks of 2 MB and more start on 2 MB boundaries, so that
// where the system gives transparent huge pages to every process they are whole huge pages. They
// are not marked MADV_HUGEPAGE: where the system's defrag setting is "madvise" (the default of
// many distributions), a fault on a marked block compacts memory synchronously, which made a
// model's first run (packing its weights) 2.5 to 3 times slower (ResNet-50: 487-642 ms against
// 215-236, BERT-base 1.49 s against 0.5 s) with no measurable gain in later runs. Free with
// std::free.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "mnnpy/sanitizer.h"

namespace mnnpy {

constexpr size_t kHugePageBytes = size_t(2) << 20;

// Maps the whole pages of [p, p + bytes), about to be written whole, in one system call
// (MADV_POPULATE_WRITE, Linux 5.14) instead of one page fault each: copying a model's weights
// into fresh blocks took a fifth less time, and ResNet-18's first run (which packs its weights)
// 78 ms instead of 92. Does nothing where the system lacks it.
inline void prefault_for_writing(void* p, size_t bytes) {
#if defined(__linux__)
  constexpr int kPopulateWrite = 23;  // MADV_POPULATE_WRITE, missing from older headers
  const uintptr_t page = 4096, begin = ((uintptr_t)p + page - 1) & ~(page - 1);
  const uintptr_t end = ((uintptr_t)p + bytes) & ~(page - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, kPopulateWrite);
#else
  (void)p;
  (void)bytes;
#endif
}

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
  // Large blocks are written whole (packed weights, tensors): their pages mapped at once, but not
  // the rounding's tail, which nothing writes (up to 2 MB a block, resident for nothing).
  if (huge) prefault_for_writing(p, bytes);
  limit_access(p, bytes, rounded);  // ASan builds: the rounding is not the caller's
  return p;
}

}  // namespace mnnpy
