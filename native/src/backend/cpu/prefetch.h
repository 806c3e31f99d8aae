// Software prefetch of output memory for streaming kernels.
#pragma once

#include <cstddef>

namespace mnnpy {
namespace cpu {

// How far ahead of its stores a streaming kernel asks for its output lines: far enough that the
// read for ownership of a line in L3 is done when the stores reach it.
constexpr std::ptrdiff_t kWritePrefetchBytes = 2048;

// Asks for the cache line holding `p` with intent to write: the line's read for ownership starts
// now instead of stalling the store that needs it (hardware prefetchers follow the loads of a
// stream better than its stores). A hint only: any address is allowed.
inline void prefetch_for_write(const void* p) {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p, 1, 3);
#else
  (void)p;
#endif
}

}  // namespace cpu
}  // namespace mnnpy
