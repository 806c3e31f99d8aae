// One kernel for any connected group of elementwise nodes of the same output shape: the
// group runs as a small program over tiles that stay in cache, reading its inputs in place
// (broadcast ones are expanded per tile) and writing only the final result.
#pragma once
#include <atomic>
#include <memory>
#include <vector>

#include "mnnpy/backend.h"  // EwInstr

namespace mnnpy {

// Whether large results are written with non-temporal stores (an executor option).
extern std::atomic<bool> g_streaming_stores;  // atomic: plans may be built while it is set
// Whether a float multiply feeding an add runs as one fused multiply-add (an executor option,
// on by default; off gives NumPy's bits exactly).
extern std::atomic<bool> g_fuse_mul_add;

// `program` is in evaluation order; register i is the result of instruction i; the last
// instruction is the group's output.
std::unique_ptr<Kernel> make_fused_elementwise_kernel(std::vector<EwInstr> program,
                                                      const std::vector<TensorType>& input_types,
                                                      const TensorType& output_type);

}  // namespace mnnpy
