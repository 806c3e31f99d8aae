#include "backend/vulkan/vulkan_context.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>

#include "backend/vulkan/vulkan_recorder.h"

namespace mnnpy {
namespace vulkan {

void check(VkResult result, const char* what) {
  if (result != VK_SUCCESS) throw std::runtime_error(std::string("Vulkan: ") + what + " failed (VkResult " + std::to_string((int)result) + ")");
}

namespace {

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

// Set to "0": a switch that is on unless turned off.
bool env_off(const char* name) {
  const char* v = std::getenv(name);
  return v && std::strcmp(v, "0") == 0;
}

}  // namespace

// ------------------------------------------------------------------ device
VkBool32 VKAPI_PTR on_validation_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                         VkDebugUtilsMessageTypeFlagsEXT, const VkDebugUtilsMessengerCallbackDataEXT* data,
                                         void* user) {
  if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) ((Context*)user)->note_validation_error(data->pMessage);
  return VK_FALSE;
}

void Context::note_validation_error(const char* message) {
  std::lock_guard<std::mutex> lock(errors_mutex);
  if (validation_errors++ == 0) first_validation_error = message ? message : "";
}

std::string Context::take_validation_error() {
  std::lock_guard<std::mutex> lock(errors_mutex);
  if (!validation_errors) return {};
  std::string message = "Vulkan validation: " + std::to_string(validation_errors) + " error(s), the first: " + first_validation_error;
  validation_errors = 0;
  first_validation_error.clear();
  return message;
}

namespace {

std::string g_unavailable;
DeviceInfo g_info;

uint32_t find_memory_type(const VkPhysicalDeviceMemoryProperties& props, uint32_t allowed, VkMemoryPropertyFlags want) {
  for (uint32_t i = 0; i < props.memoryTypeCount; ++i) {
    if ((allowed >> i & 1u) && (props.memoryTypes[i].propertyFlags & want) == want) return i;
  }
  return UINT32_MAX;
}

// Makes the instance and device; throws with the reason where there is no usable device.
std::unique_ptr<Context> make_context() {
  if (env_on("MNNPY_NO_VULKAN")) throw std::runtime_error("turned off by MNNPY_NO_VULKAN");
  if (volkInitialize() != VK_SUCCESS) throw std::runtime_error("no Vulkan loader (libvulkan.so.1) on this machine");
  auto ctx = std::make_unique<Context>();
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "mnnpy";
  app.apiVersion = VK_API_VERSION_1_1;
  std::vector<const char*> layers, extensions;
  ctx->validation = env_on("MNNPY_VULKAN_VALIDATION");
  if (ctx->validation) {
    layers.push_back("VK_LAYER_KHRONOS_validation");
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  info.enabledLayerCount = (uint32_t)layers.size();
  info.ppEnabledLayerNames = layers.data();
  info.enabledExtensionCount = (uint32_t)extensions.size();
  info.ppEnabledExtensionNames = extensions.data();
  if (vkCreateInstance(&info, nullptr, &ctx->instance) != VK_SUCCESS) {
    throw std::runtime_error(ctx->validation ? "could not create a Vulkan instance with the validation layer"
                                             : "could not create a Vulkan instance");
  }
  volkLoadInstance(ctx->instance);
  if (ctx->validation) {
    VkDebugUtilsMessengerCreateInfoEXT messenger{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    messenger.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
    messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                            VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    messenger.pfnUserCallback = on_validation_message;
    messenger.pUserData = ctx.get();
    check(vkCreateDebugUtilsMessengerEXT(ctx->instance, &messenger, nullptr, &ctx->messenger), "vkCreateDebugUtilsMessengerEXT");
  }
  uint32_t count = 0;
  vkEnumeratePhysicalDevices(ctx->instance, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  vkEnumeratePhysicalDevices(ctx->instance, &count, devices.data());
  // A discrete GPU first, then an integrated one, then anything (lavapipe, a CPU device).
  int best_rank = -1;
  for (VkPhysicalDevice d : devices) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(d, &p);
    if (p.apiVersion < VK_API_VERSION_1_1) continue;
    uint32_t n = 0;
    vkEnumerateDeviceExtensionProperties(d, nullptr, &n, nullptr);
    std::vector<VkExtensionProperties> exts(n);
    vkEnumerateDeviceExtensionProperties(d, nullptr, &n, exts.data());
    bool push = false;
    for (const auto& e : exts) push = push || std::strcmp(e.extensionName, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME) == 0;
    if (!push) continue;
    const int rank = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ? 3
                     : p.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ? 2 : 1;
    if (rank > best_rank) {
      best_rank = rank;
      ctx->physical = d;
    }
  }
  if (!ctx->physical) throw std::runtime_error("no Vulkan 1.1 device with push descriptors");
  vkGetPhysicalDeviceMemoryProperties(ctx->physical, &ctx->memory);
  uint32_t families = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical, &families, nullptr);
  std::vector<VkQueueFamilyProperties> family_props(families);
  vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical, &families, family_props.data());
  ctx->queue_family = UINT32_MAX;
  for (uint32_t i = 0; i < families; ++i) {
    if (family_props[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      ctx->queue_family = i;
      break;
    }
  }
  if (ctx->queue_family == UINT32_MAX) throw std::runtime_error("the Vulkan device has no compute queue");
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue.queueFamilyIndex = ctx->queue_family;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;

  // Optional features, each asked for only where its extension is there: float16 arithmetic
  // (VK_KHR_shader_float16_int8), and cooperative matrices, whose shaders also need float16, the
  // Vulkan memory model and the subgroup's index in the workgroup.
  uint32_t extension_count = 0;
  vkEnumerateDeviceExtensionProperties(ctx->physical, nullptr, &extension_count, nullptr);
  std::vector<VkExtensionProperties> device_extension_list(extension_count);
  vkEnumerateDeviceExtensionProperties(ctx->physical, nullptr, &extension_count, device_extension_list.data());
  auto has_extension = [&](const char* name) {
    for (const auto& e : device_extension_list) {
      if (std::strcmp(e.extensionName, name) == 0) return true;
    }
    return false;
  };
  VkPhysicalDeviceShaderFloat16Int8FeaturesKHR float16_features{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES_KHR};
  VkPhysicalDeviceVulkanMemoryModelFeaturesKHR memory_model_features{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES_KHR};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coopmat_features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDeviceFeatures2 features2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  void** chain = &features2.pNext;
  auto link = [&chain](auto& s) {
    *chain = &s;
    chain = &s.pNext;
  };
  const bool float16_extension = has_extension(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  const bool coopmat_extensions = float16_extension && has_extension(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME) &&
                                  has_extension(VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME) &&
                                  !env_off("MNNPY_VULKAN_COOPMAT");
  if (float16_extension) link(float16_features);
  if (coopmat_extensions) {
    link(memory_model_features);
    link(coopmat_features);
  }
  vkGetPhysicalDeviceFeatures2(ctx->physical, &features2);

  VkPhysicalDeviceProperties props;
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceCooperativeMatrixPropertiesNV coopmat_props{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_NV};
  VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props2.pNext = &subgroup;
  if (coopmat_extensions) subgroup.pNext = &coopmat_props;
  vkGetPhysicalDeviceProperties2(ctx->physical, &props2);
  props = props2.properties;

  const bool float16 = float16_features.shaderFloat16 == VK_TRUE;
  std::vector<CoopMatShape> coopmat_shapes;
  if (float16 && coopmat_features.cooperativeMatrix && memory_model_features.vulkanMemoryModel &&
      (coopmat_props.cooperativeMatrixSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
      (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
      (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT) && vkGetPhysicalDeviceCooperativeMatrixPropertiesNV) {
    uint32_t n = 0;
    vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(ctx->physical, &n, nullptr);
    std::vector<VkCooperativeMatrixPropertiesNV> shapes(n, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
    vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(ctx->physical, &n, shapes.data());
    for (const auto& p : shapes) {
      if (p.AType == VK_COMPONENT_TYPE_FLOAT16_NV && p.BType == VK_COMPONENT_TYPE_FLOAT16_NV &&
          p.CType == VK_COMPONENT_TYPE_FLOAT32_NV && p.DType == VK_COMPONENT_TYPE_FLOAT32_NV &&
          p.scope == VK_SCOPE_SUBGROUP_NV) {
        coopmat_shapes.push_back({p.MSize, p.NSize, p.KSize});
      }
    }
  }

  std::vector<const char*> device_extensions = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
  // Only the features used are enabled (a chain of its own).
  VkPhysicalDeviceShaderFloat16Int8FeaturesKHR float16_enabled{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES_KHR};
  VkPhysicalDeviceVulkanMemoryModelFeaturesKHR memory_model_enabled{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES_KHR};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coopmat_enabled{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDeviceFeatures2 enabled{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  chain = &enabled.pNext;
  enabled.features.shaderFloat64 = features2.features.shaderFloat64;
  ctx->float64 = features2.features.shaderFloat64 == VK_TRUE;
  enabled.features.shaderInt64 = features2.features.shaderInt64;
  ctx->int64 = features2.features.shaderInt64 == VK_TRUE;
  if (float16) {
    device_extensions.push_back(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
    float16_enabled.shaderFloat16 = VK_TRUE;
    link(float16_enabled);
  }
  if (!coopmat_shapes.empty()) {
    device_extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
    device_extensions.push_back(VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME);
    memory_model_enabled.vulkanMemoryModel = VK_TRUE;
    coopmat_enabled.cooperativeMatrix = VK_TRUE;
    link(memory_model_enabled);
    link(coopmat_enabled);
  }
  VkDeviceCreateInfo dinfo{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dinfo.pNext = &enabled;
  dinfo.queueCreateInfoCount = 1;
  dinfo.pQueueCreateInfos = &queue;
  dinfo.enabledExtensionCount = (uint32_t)device_extensions.size();
  dinfo.ppEnabledExtensionNames = device_extensions.data();
  check(vkCreateDevice(ctx->physical, &dinfo, nullptr, &ctx->device), "vkCreateDevice");
  volkLoadDevice(ctx->device);
  vkGetDeviceQueue(ctx->device, ctx->queue_family, 0, &ctx->queue);

  g_info.float16 = float16;
  g_info.coopmat_f16 = coopmat_shapes;
  g_info.name = props.deviceName;
  g_info.gpu = props.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ||
               props.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
  g_info.subgroup_size = subgroup.subgroupSize;
  g_info.max_shared_memory = props.limits.maxComputeSharedMemorySize;
  g_info.max_storage_buffer_range = props.limits.maxStorageBufferRange;
  if (family_props[ctx->queue_family].timestampValidBits > 0) ctx->timestamp_period = props.limits.timestampPeriod;
  for (uint32_t i = 0; i < ctx->memory.memoryHeapCount; ++i) {
    if (ctx->memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) {
      g_info.device_memory = std::max<uint64_t>(g_info.device_memory, ctx->memory.memoryHeaps[i].size);
    }
  }
  return ctx;
}

// Never destroyed: plans in the executor's cache, and other static objects destroyed at exit in
// an order across files that nothing fixes, may still hold buffers of the device then.
Context* g_context = nullptr;
std::atomic<bool> g_exiting{false};

}  // namespace

Context::~Context() {
  if (device) {
    vkDeviceWaitIdle(device);
    placeholder.reset();
    vkDestroyDevice(device, nullptr);
  }
  if (messenger) vkDestroyDebugUtilsMessengerEXT(instance, messenger, nullptr);
  if (instance) vkDestroyInstance(instance, nullptr);
}

Context* context() {
  static std::once_flag once;
  std::call_once(once, [] {
    try {
      g_context = make_context().release();
      // Registered after the driver was loaded, so it runs before the driver's own teardown and
      // before the destructors of older static objects that still hold buffers.
      std::atexit([] { g_exiting = true; });
    } catch (const std::exception& e) {
      g_unavailable = e.what();
      g_context = nullptr;
    }
  });
  return g_context;
}

const std::string& unavailable_reason() {
  context();
  return g_unavailable;
}

const DeviceInfo& device_info() { return g_info; }

BufferRange Context::placeholder_range() {
  std::call_once(placeholder_once, [this] { placeholder = std::make_unique<ParamBuffer>("\0\0\0\0", 4); });
  return placeholder->range();
}

uint32_t Context::memory_type(uint32_t allowed, VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid) const {
  for (uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
    const VkMemoryPropertyFlags flags = memory.memoryTypes[i].propertyFlags;
    if ((allowed >> i & 1u) && (flags & want) == want && !(flags & avoid)) return i;
  }
  const uint32_t type = find_memory_type(memory, allowed, want);
  if (type == UINT32_MAX) throw std::runtime_error("Vulkan: no memory type with the properties a buffer needs");
  return type;
}

// ------------------------------------------------------------------ buffers
Allocation::Allocation(size_t bytes_, Memory memory_kind) : bytes(bytes_), kind(memory_kind) {
  Context& ctx = *context();
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = std::max<size_t>(bytes, 4);
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(vkCreateBuffer(ctx.device, &info, nullptr, &buffer), "vkCreateBuffer");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(ctx.device, buffer, &req);
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = req.size;
  const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  switch (kind) {
    case Memory::Device:
      alloc.memoryTypeIndex = ctx.memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
      break;
    case Memory::Upload:
      alloc.memoryTypeIndex = ctx.memory_type(req.memoryTypeBits, host, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
      break;
    case Memory::Readback: {
      // Cached where there is such a type; else any host memory not on the device.
      const uint32_t cached = ctx.memory_type(req.memoryTypeBits, host | VK_MEMORY_PROPERTY_HOST_CACHED_BIT,
                                              VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
      const VkMemoryPropertyFlags flags = ctx.memory.memoryTypes[cached].propertyFlags;
      alloc.memoryTypeIndex = (flags & host) == host && !(flags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)
                                  ? cached
                                  : ctx.memory_type(req.memoryTypeBits, host, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
      break;
    }
  }
  const VkResult result = vkAllocateMemory(ctx.device, &alloc, nullptr, &memory);
  if (result != VK_SUCCESS) {
    vkDestroyBuffer(ctx.device, buffer, nullptr);
    if (result == VK_ERROR_OUT_OF_DEVICE_MEMORY || result == VK_ERROR_OUT_OF_HOST_MEMORY) {
      throw std::bad_alloc();
    }
    check(result, "vkAllocateMemory");
  }
  vkBindBufferMemory(ctx.device, buffer, memory, 0);
  if (kind != Memory::Device) check(vkMapMemory(ctx.device, memory, 0, VK_WHOLE_SIZE, 0, &mapped), "vkMapMemory");
}

bool process_exiting() { return g_exiting; }

Allocation::~Allocation() {
  if (process_exiting()) return;  // the driver may be gone: the OS takes the memory back
  Context* ctx = context();
  if (mapped) vkUnmapMemory(ctx->device, memory);
  vkDestroyBuffer(ctx->device, buffer, nullptr);
  vkFreeMemory(ctx->device, memory, nullptr);
}

namespace {
// Device buffers by the start of their address range. Addresses start high and never repeat, so
// a stale pointer finds no buffer. Kept past the process's end (never destroyed): buffers that
// static objects hold (cached plans' constants and tables) are released into it at exit.
struct AddressRegistry {
  std::mutex mutex;
  std::map<uintptr_t, std::shared_ptr<Allocation>> by_address;
  uintptr_t next = uintptr_t(1) << 44;
};
AddressRegistry& addresses() {
  static AddressRegistry* registry = new AddressRegistry();
  return *registry;
}
}  // namespace

std::shared_ptr<void> allocate_device_buffer(size_t bytes) {
  auto allocation = std::make_shared<Allocation>(bytes, Memory::Device);
  AddressRegistry& registry = addresses();
  uintptr_t address;
  {
    std::lock_guard<std::mutex> lock(registry.mutex);
    address = registry.next;
    registry.next += (bytes + 4096 + 255) & ~uintptr_t(255);  // a gap: one past the end is no other buffer
    registry.by_address[address] = allocation;
  }
  return std::shared_ptr<void>((void*)address, [](void* p) {
    AddressRegistry& registry = addresses();
    std::shared_ptr<Allocation> released;
    std::lock_guard<std::mutex> lock(registry.mutex);
    auto it = registry.by_address.find((uintptr_t)p);
    if (it != registry.by_address.end()) {
      released = std::move(it->second);  // work recorded on it keeps it (Recorder::keep) until waited for
      registry.by_address.erase(it);
    }
  });
}

namespace {
// The live buffer holding [data, data + bytes) and data's offset in it; null where none does.
std::shared_ptr<Allocation> find_allocation(const void* data, size_t bytes, VkDeviceSize* offset) {
  const uintptr_t p = (uintptr_t)data;
  AddressRegistry& registry = addresses();
  std::lock_guard<std::mutex> lock(registry.mutex);
  auto it = registry.by_address.upper_bound(p);
  if (it == registry.by_address.begin()) return nullptr;
  --it;
  if (p + bytes > it->first + it->second->bytes) return nullptr;
  *offset = p - it->first;
  return it->second;
}
}  // namespace

std::shared_ptr<Allocation> allocation_at(const void* data, size_t bytes, VkDeviceSize* offset) {
  std::shared_ptr<Allocation> a = find_allocation(data, bytes, offset);
  if (!a) throw std::logic_error("vulkan backend: an address outside every live buffer");
  return a;
}

bool is_device_address(const void* data) {
  VkDeviceSize offset;
  return find_allocation(data, 1, &offset) != nullptr;
}

BufferRange resolve(const void* data, size_t bytes) {
  VkDeviceSize offset = 0;
  std::shared_ptr<Allocation> a = allocation_at(data, bytes, &offset);
  Recorder::current().keep(a);
  return BufferRange{a->buffer, offset, bytes};
}

ParamBuffer::ParamBuffer(const void* data, size_t bytes) : bytes_(bytes) {
  // In device memory: a discrete GPU would read host-visible memory across PCIe at every dispatch.
  device_ = allocate_device_buffer(std::max<size_t>(bytes, 4));
  range_ = resolve(device_.get(), bytes);
  Recorder::current().copy_from_host(device_.get(), data, bytes);
}

ParamBuffer::~ParamBuffer() = default;

uint32_t groups_for(uint64_t n, uint32_t size) { return (uint32_t)std::max<uint64_t>(1, (n + size - 1) / size); }

// ------------------------------------------------------------------ pipelines
Pipeline::Pipeline(const uint32_t* spirv, size_t spirv_bytes, uint32_t bindings, uint32_t push_bytes,
                   const std::vector<uint32_t>& specialization)
    : bindings_(bindings), push_bytes_(push_bytes) {
  Context& ctx = *context();
  std::vector<VkDescriptorSetLayoutBinding> slots(bindings);
  for (uint32_t k = 0; k < bindings; ++k) {
    slots[k] = VkDescriptorSetLayoutBinding{k, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  }
  VkDescriptorSetLayoutCreateInfo set{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  set.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
  set.bindingCount = bindings;
  set.pBindings = slots.data();
  check(vkCreateDescriptorSetLayout(ctx.device, &set, nullptr, &set_layout_), "vkCreateDescriptorSetLayout");
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
  VkPipelineLayoutCreateInfo layout{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layout.setLayoutCount = 1;
  layout.pSetLayouts = &set_layout_;
  layout.pushConstantRangeCount = push_bytes ? 1 : 0;
  layout.pPushConstantRanges = &range;
  check(vkCreatePipelineLayout(ctx.device, &layout, nullptr, &layout_), "vkCreatePipelineLayout");
  VkShaderModuleCreateInfo module{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  module.codeSize = spirv_bytes;
  module.pCode = spirv;
  VkShaderModule shader;
  check(vkCreateShaderModule(ctx.device, &module, nullptr, &shader), "vkCreateShaderModule");
  std::vector<VkSpecializationMapEntry> entries;
  for (uint32_t i = 0; i < specialization.size(); ++i) entries.push_back({i, i * 4, 4});
  VkSpecializationInfo spec{(uint32_t)entries.size(), entries.data(), specialization.size() * 4, specialization.data()};
  VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  info.stage = VkPipelineShaderStageCreateInfo{VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = shader;
  info.stage.pName = "main";
  info.stage.pSpecializationInfo = specialization.empty() ? nullptr : &spec;
  info.layout = layout_;
  const VkResult result = vkCreateComputePipelines(ctx.device, ctx.pipeline_cache, 1, &info, nullptr, &pipeline_);
  vkDestroyShaderModule(ctx.device, shader, nullptr);
  check(result, "vkCreateComputePipelines");
}

Pipeline::~Pipeline() {
  if (process_exiting()) return;
  Context* ctx = context();
  vkDestroyPipeline(ctx->device, pipeline_, nullptr);
  vkDestroyPipelineLayout(ctx->device, layout_, nullptr);
  vkDestroyDescriptorSetLayout(ctx->device, set_layout_, nullptr);
}

void Pipeline::dispatch(const std::vector<BufferRange>& buffers, const void* push, uint32_t groups_x,
                        uint32_t groups_y, uint32_t groups_z) const {
  if (buffers.size() != bindings_) throw std::logic_error("vulkan: a dispatch binds the wrong number of buffers");
  Context& ctx = *context();
  const BufferRange placeholder = ctx.placeholder_range();  // made (and uploaded) before this dispatch is
  Recorder& recorder = Recorder::current();
  VkCommandBuffer cb = recorder.command_buffer(Recorder::Work::Compute);
  std::vector<VkDescriptorBufferInfo> infos(bindings_);
  std::vector<VkWriteDescriptorSet> writes(bindings_);
  for (uint32_t k = 0; k < bindings_; ++k) {
    const BufferRange& b = buffers[k].bytes ? buffers[k] : placeholder;
    infos[k] = VkDescriptorBufferInfo{b.buffer, b.offset, b.bytes};
    writes[k] = VkWriteDescriptorSet{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[k].dstBinding = k;
    writes[k].descriptorCount = 1;
    writes[k].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[k].pBufferInfo = &infos[k];
  }
  vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_);
  vkCmdPushDescriptorSetKHR(cb, VK_PIPELINE_BIND_POINT_COMPUTE, layout_, 0, bindings_, writes.data());
  if (push_bytes_) vkCmdPushConstants(cb, layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes_, push);
  vkCmdDispatch(cb, groups_x, groups_y, groups_z);
  recorder.recorded(Recorder::Work::Compute);
}

}  // namespace vulkan
}  // namespace mnnpy

// The loader's entry points, resolved at run time (one definition for the core).
#include <volk.c>
