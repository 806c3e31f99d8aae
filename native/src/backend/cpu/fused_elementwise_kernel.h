// The CPU's kernel for a fused elementwise program (mnnpy/elementwise_program.h).
#pragma once
#include <memory>
#include <vector>

#include "mnnpy/elementwise_program.h"
#include "mnnpy/op_registry.h"  // Kernel

namespace mnnpy {
namespace cpu {

// Interprets `program` (already prepared: runtime/fused_elementwise.h) over tiles that stay in
// cache. Throws ValueError for outputs of more than 16 dimensions.
std::unique_ptr<Kernel> make_fused_elementwise_kernel(std::vector<EwInstr> program,
                                                      const std::vector<TensorType>& input_types,
                                                      const TensorType& output_type);

}  // namespace cpu
}  // namespace mnnpy
