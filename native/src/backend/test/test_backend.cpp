// The "test" backend: proves placement and copies without a device. Its buffers are kept apart
// from host memory (their bytes are stored scrambled, so a CPU kernel handed one directly
// computes garbage and the tests' comparisons with the CPU catch it), it supports a subset of
// ops on float32 (elementwise programs of the arithmetic a normalization or a softmax needs,
// MatMul, Reduce, and Raster, to which data-movement ops lower; composite ops such as LayerNorm
// and attention decompose into these), and its kernels copy their inputs to the host, run the
// CPU's kernel and copy the results back. Other elementwise math (Sin, Tanh...) falls back.
// Hidden until mnnpy._core.enable_test_backend(True).
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>

#include "mnnpy/aligned_memory.h"
#include "mnnpy/backend.h"

namespace mnnpy {

namespace {

constexpr uint64_t kScramble = 0xA5C3'5A3C'96E1'1E69ull;
constexpr size_t kMemoryBytes = size_t(1) << 30;  // what this "device" lets one plan take

// Stores `bytes` from `src` to `dst` with every 8-byte word XORed with kScramble (its own inverse).
void scramble_copy(void* dst, const void* src, size_t bytes) {
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t w;
    std::memcpy(&w, (const char*)src + i, 8);
    w ^= kScramble;
    std::memcpy((char*)dst + i, &w, 8);
  }
  for (; i < bytes; ++i) ((char*)dst)[i] = (char)(((const char*)src)[i] ^ (char)(kScramble >> (8 * (i % 8))));
}

// The live buffers, by start address: every pointer the backend is handed must address bytes
// inside one of them (the executor sub-allocates values and scratch from one buffer per plan).
// Never destroyed: a buffer freed while the process exits (held by a cached plan) still
// unregisters itself.
struct BufferRegistry {
  std::mutex mutex;
  std::map<const char*, size_t> buffers;
};
BufferRegistry& buffer_registry() {
  static BufferRegistry* registry = new BufferRegistry;
  return *registry;
}

void check_buffer(const void* device_ptr, size_t bytes) {
  if (bytes == 0) return;  // an empty value has no bytes to address
  const char* p = (const char*)device_ptr;
  BufferRegistry& r = buffer_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.buffers.upper_bound(p);
  if (it == r.buffers.begin() || p + bytes > std::prev(it)->first + std::prev(it)->second) {
    throw std::logic_error("test backend: a pointer that is not inside one of its buffers");
  }
}

bool is_listed_elementwise(const EwInstr& ins) {
  if (ins.arity == EwArity::None) return true;  // a load
  static const std::vector<const OpDef*> listed = [] {
    std::vector<const OpDef*> ops;
    for (const char* name : {"Add", "Sub", "Mul", "Div", "Neg", "Relu", "Exp", "Sqrt", "Rsqrt"}) ops.push_back(&get_op(name));
    return ops;
  }();
  for (const OpDef* op : listed) {
    if (ins.arity == op->elementwise.arity && ins.code == op->elementwise.code) return true;
  }
  return false;
}

// Runs a CPU kernel on host copies of the device inputs and writes its results back.
class ThroughHostKernel : public Kernel {
 public:
  ThroughHostKernel(const Backend& backend, std::unique_ptr<Kernel> cpu_kernel)
      : backend_(backend), cpu_kernel_(std::move(cpu_kernel)) {}
  // The CPU kernel's scratch is host memory, kept here: the plan's scratch would be device memory.
  size_t scratch_bytes() const override { return 0; }
  const char* scheme() const override { return cpu_kernel_->scheme(); }
  double flops() const override { return cpu_kernel_->flops(); }
  size_t resident_bytes() const override { return cpu_kernel_->resident_bytes(); }
  void execute(const KernelArgs& args, void*) const override {
    std::vector<std::shared_ptr<Tensor>> host_in, host_out;
    KernelArgs host_args;
    host_args.pool = args.pool;
    for (const Tensor* in : args.inputs) {
      host_in.push_back(Tensor::allocate(in->type));
      backend_.copy_to_host(host_in.back()->data, in->data, in->nbytes());
      host_args.inputs.push_back(host_in.back().get());
    }
    for (const Tensor* out : args.outputs) {
      host_out.push_back(Tensor::allocate(out->type));
      host_args.outputs.push_back(host_out.back().get());
    }
    std::unique_ptr<void, void (*)(void*)> scratch(
        cpu_kernel_->scratch_bytes() ? allocate_aligned(cpu_kernel_->scratch_bytes()) : nullptr, std::free);
    cpu_kernel_->execute(host_args, scratch.get());
    for (size_t i = 0; i < args.outputs.size(); ++i) {
      backend_.copy_from_host(args.outputs[i]->data, host_out[i]->data, host_out[i]->nbytes());
    }
  }

 private:
  const Backend& backend_;
  std::unique_ptr<Kernel> cpu_kernel_;
};


class TestBackend : public Backend {
 public:
  TestBackend() {
    caps_.dtypes = {DType::Float32};
    caps_.channel_block = 4;
    caps_.fp16 = false;
    caps_.host_memory = false;
    caps_.memory_bytes = kMemoryBytes;
  }
  const std::string& name() const override { return name_; }
  const BackendCapabilities& capabilities() const override { return caps_; }

  std::shared_ptr<void> allocate(size_t bytes) const override {
    char* block = (char*)allocate_aligned(bytes);
    {
      BufferRegistry& r = buffer_registry();
      std::lock_guard<std::mutex> lock(r.mutex);
      r.buffers[block] = bytes;
    }
    return std::shared_ptr<void>(block, [](void* p) {
      {
        BufferRegistry& r = buffer_registry();
        std::lock_guard<std::mutex> lock(r.mutex);
        r.buffers.erase((const char*)p);  // a stale pointer fails check_buffer
      }
      std::free(p);
    });
  }
  void copy_from_host(void* device_dst, const void* host_src, size_t bytes) const override {
    check_buffer(device_dst, bytes);
    scramble_copy(device_dst, host_src, bytes);
  }
  void copy_to_host(void* host_dst, const void* device_src, size_t bytes) const override {
    check_buffer(device_src, bytes);
    scramble_copy(host_dst, device_src, bytes);
  }
  // A stretch of steps: every tensor handed over must be in this backend's buffers (but the
  // host side of a copy into it or out of it); copies out come last.
  bool run_steps(const StepCall* calls, size_t count) const override {
    bool copying_out = false;
    for (size_t i = 0; i < count; ++i) {
      if (copying_out && !calls[i].to_host) throw std::logic_error("test backend: a step after a copy to the host in a stretch");
      copying_out = calls[i].to_host;
      if (dynamic_cast<const ThroughHostKernel*>(calls[i].kernel) || calls[i].to_host) {
        for (const Tensor* t : calls[i].args.inputs) check_buffer(t->data, t->nbytes());
      }
      if (!calls[i].to_host) {
        for (const Tensor* t : calls[i].args.outputs) check_buffer(t->data, t->nbytes());
      }
      calls[i].kernel->execute(calls[i].args, calls[i].scratch);
    }
    return false;
  }

  // The ops with a kernel registered for this backend, on float32 only.
  bool supports(const OpDef& op, const KernelContext& ctx) const override {
    if (!find_kernel(op.name, name_)) return false;
    for (const TensorType& t : ctx.input_types) if (t.dtype != DType::Float32) return false;
    return true;
  }
  std::unique_ptr<Kernel> make_kernel(const OpDef& op, const KernelContext& ctx) const override {
    return (*find_kernel(op.name, name_))(ctx);
  }
  std::unique_ptr<Kernel> make_elementwise_kernel(const std::vector<EwInstr>& program,
                                                  const std::vector<TensorType>& input_types,
                                                  const TensorType& output_type) const override {
    for (const EwInstr& ins : program) {
      if (!is_listed_elementwise(ins)) return nullptr;
      if (ins.arity != EwArity::None && (ins.in_dtype != DType::Float32 || ins.out_dtype != DType::Float32)) return nullptr;
    }
    for (const TensorType& t : input_types) if (t.dtype != DType::Float32) return nullptr;
    if (output_type.dtype != DType::Float32) return nullptr;
    return std::make_unique<ThroughHostKernel>(
        *this, cpu_backend().make_elementwise_kernel(program, input_types, output_type));
  }

 private:
  const std::string name_ = "test";
  BackendCapabilities caps_;
};

const std::shared_ptr<TestBackend> g_test_backend = std::make_shared<TestBackend>();
MNNPY_REGISTER_BACKEND(g_test_backend, /*listed=*/false);

MNNPY_REGISTER_KERNEL("MatMul", "test", [](const KernelContext& ctx) -> std::unique_ptr<Kernel> {
  return std::make_unique<ThroughHostKernel>(*g_test_backend, cpu_backend().make_kernel(get_op("MatMul"), ctx));
});
MNNPY_REGISTER_KERNEL("Reduce", "test", [](const KernelContext& ctx) -> std::unique_ptr<Kernel> {
  return std::make_unique<ThroughHostKernel>(*g_test_backend, cpu_backend().make_kernel(get_op("Reduce"), ctx));
});
// The region-copy primitive: with it, every data-movement op that lowers to Raster runs here.
MNNPY_REGISTER_KERNEL("Raster", "test", [](const KernelContext& ctx) -> std::unique_ptr<Kernel> {
  return std::make_unique<ThroughHostKernel>(*g_test_backend, cpu_backend().make_kernel(get_op("Raster"), ctx));
});

}  // namespace

}  // namespace mnnpy
