#pragma once
#include <memory>
#include <vector>

#include "mnnpy/backend.h"

namespace mnnpy {
namespace vulkan {

// The Vulkan kernel of a fused elementwise program; nullptr where the shader cannot run it.
std::unique_ptr<Kernel> make_elementwise_kernel(const std::vector<EwInstr>& program, const std::vector<TensorType>& input_types,
                                                const TensorType& output_type);

}  // namespace vulkan
}  // namespace mnnpy
