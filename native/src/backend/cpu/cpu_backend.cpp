// The CPU backend: host memory, every op that has a CPU kernel, and the fused elementwise
// program interpreted by the fused kernel.
#include <cstring>

#include "backend/cpu/conv_blocked.h"
#include "backend/cpu/fused_elementwise_kernel.h"
#include "mnnpy/aligned_memory.h"
#include "mnnpy/backend.h"
#include "mnnpy/simd_target.h"
#include "runtime/fused_elementwise.h"

namespace mnnpy {

namespace {

class CpuBackend : public Backend {
 public:
  CpuBackend() {
    // Kernels compute in these; float16 and bfloat16 math runs in float32 between casts.
    caps_.dtypes = {DType::Bool,   DType::Int8,   DType::UInt8,  DType::Int16,   DType::UInt16,
                    DType::Int32,  DType::UInt32, DType::Int64,  DType::UInt64,  DType::Float32, DType::Float64};
    caps_.channel_block = (int)cpu::kChannelBlock;  // the blocked convolution layout's
    caps_.fp16 = false;
    caps_.host_memory = true;
  }
  const std::string& name() const override { return name_; }
  std::string description() const override { return "host CPU, " + simd_target() + " kernels"; }
  const BackendCapabilities& capabilities() const override { return caps_; }

  std::shared_ptr<void> allocate(size_t bytes) const override {
    return std::shared_ptr<void>(allocate_aligned(bytes), [](void* p) { std::free(p); });
  }
  void copy_from_host(void* dst, const void* src, size_t bytes) const override { std::memcpy(dst, src, bytes); }
  void copy_to_host(void* dst, const void* src, size_t bytes) const override { std::memcpy(dst, src, bytes); }

  bool supports(const OpDef& op, const KernelContext&) const override { return find_kernel(op.name, name_) != nullptr; }
  std::unique_ptr<Kernel> make_kernel(const OpDef& op, const KernelContext& ctx) const override {
    const KernelFactory* factory = find_kernel(op.name, name_);
    if (!factory) throw ValueError("op '" + op.name + "' has no CPU kernel");
    return (*factory)(ctx);
  }
  std::unique_ptr<Kernel> make_elementwise_kernel(const std::vector<EwInstr>& program,
                                                  const std::vector<TensorType>& input_types,
                                                  const TensorType& output_type) const override {
    return cpu::make_fused_elementwise_kernel(prepare_elementwise_program(program), input_types, output_type);
  }

 private:
  const std::string name_ = "cpu";
  BackendCapabilities caps_;
};

MNNPY_REGISTER_BACKEND(std::make_shared<CpuBackend>());

}  // namespace

}  // namespace mnnpy
