// The pipeline cache: one pipeline per (shader, bindings, push constants, specialization),
// shared by every kernel that asks for it, kept for the process.
#pragma once
#include <memory>
#include <vector>

#include "backend/vulkan/vulkan_context.h"

namespace mnnpy {
namespace vulkan {

std::shared_ptr<Pipeline> pipeline_for(const uint32_t* spirv, size_t spirv_bytes, uint32_t bindings, uint32_t push_bytes,
                                        const std::vector<uint32_t>& specialization = {});

}  // namespace vulkan
}  // namespace mnnpy
