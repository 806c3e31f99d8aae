// A shape seen as [outer, n, inner] around its axes [first, first + count): the product of the
// dims before them, of theirs, and of the dims after. Kernels along axes walk their data so.
#pragma once
#include <cstdint>

#include "mnnpy/tensor.h"

namespace mnnpy {
namespace cpu {

inline void split_around_axes(const Shape& s, int64_t first, int64_t count, int64_t& outer, int64_t& n,
                              int64_t& inner) {
  outer = n = inner = 1;
  for (int64_t i = 0; i < (int64_t)s.size(); ++i) {
    if (i < first) outer *= s[i];
    else if (i < first + count) n *= s[i];
    else inner *= s[i];
  }
}

}  // namespace cpu
}  // namespace mnnpy
