// What the executor options do to fused elementwise programs (mnnpy/elementwise_program.h),
// whichever backend runs them: backends build their kernels from
// prepare_elementwise_program(program) and read the options when they do.
#pragma once
#include <atomic>
#include <vector>

#include "mnnpy/elementwise_program.h"

namespace mnnpy {

// Whether large results are written with non-temporal stores (an executor option; a backend
// whose stores do not go through the CPU's caches ignores it).
extern std::atomic<bool> g_streaming_stores;  // atomic: plans may be built while it is set
// Whether a float multiply feeding an add runs as one fused multiply-add (an executor option,
// on by default; off gives NumPy's bits exactly).
extern std::atomic<bool> g_fuse_mul_add;

// `program` with the rewrites the options ask for: while g_fuse_mul_add is on, a float32 or
// float64 multiply whose only use is an add becomes one MulAdd instruction.
std::vector<EwInstr> prepare_elementwise_program(std::vector<EwInstr> program);

}  // namespace mnnpy
