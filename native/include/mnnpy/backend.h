// Backends: where kernels run and where their buffers live. The executor places each node on a
// backend (the requested one where it supports the node, the CPU otherwise), asks that backend
// for the node's kernel at plan time, and copies values across the border between a backend
// whose buffers are not host memory and the CPU. Nothing outside backend/ names a backend's
// own headers: the executor sees this interface only.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mnnpy/elementwise_program.h"  // EwInstr
#include "mnnpy/op_registry.h"

namespace mnnpy {

struct BackendCapabilities {
  std::vector<DType> dtypes;  // dtypes its kernels compute in
  int channel_block = 1;      // the channel block its convolution layouts prefer
  bool fp16 = false;          // computes in float16 natively
  // Its buffers are plain host memory: CPU kernels may read them and no copies are needed.
  bool host_memory = true;
  // Bytes of device memory a plan's buffers may take together (0: host memory, counted against
  // the process's memory limit).
  size_t memory_bytes = 0;
};

// One step of a plan as a backend runs it: the kernel, its tensors, its scratch (in the memory
// of the backend it runs on).
struct StepCall {
  const Kernel* kernel = nullptr;
  KernelArgs args;
  void* scratch = nullptr;
  bool to_host = false;  // a copy of a value to the host (they end a stretch)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const std::string& name() const = 0;
  virtual const BackendCapabilities& capabilities() const = 0;
  // Whether this machine can run it (a device was found); asked when backends are listed, so a
  // backend may look for its device then, once.
  virtual bool available() const { return true; }
  // A line for people: the device it runs on, or why it is not available.
  virtual std::string description() const { return name(); }

  // Device buffers: the returned pointer is opaque outside this backend unless host_memory, but
  // it addresses the buffer's bytes: pointer + k is byte k (a device whose memory the host cannot
  // address hands out an address range it maps back to buffer and offset). The executor
  // sub-allocates a plan's device values and scratch from one buffer per backend this way. The
  // buffer is freed when the last owner lets go.
  virtual std::shared_ptr<void> allocate(size_t bytes) const = 0;
  // A copy into the device is a step of a stretch (below): a backend that records its work must
  // order it after the steps handed over before it.
  virtual void copy_from_host(void* device_dst, const void* host_src, size_t bytes) const = 0;
  virtual void copy_to_host(void* host_dst, const void* device_src, size_t bytes) const = 0;
  // Waits for the work submitted so far (a no-op for backends that run synchronously).
  virtual void synchronize() const {}
  // The device's own time for the last stretch waited for on this thread (timestamps), or -1
  // where it does not measure one; profiles give it instead of the host's clock.
  virtual double last_stretch_seconds() const { return -1; }
  // The device's own time of all work waited for on this thread so far (a running total, by its
  // timestamps), or -1 where it does not measure one: the executor's last_device_seconds.
  virtual double device_seconds_waited() const { return -1; }
  // Runs consecutive steps of a plan placed on this backend, in order, and the copies of their
  // values to the host that follow them directly (the last calls, `to_host`, whose kernels call
  // copy_to_host): a GPU backend records them into one command buffer and submits it once,
  // waiting only where there are such copies, whose bytes must be on the host when it returns.
  // The default runs each kernel in turn. Returns whether the backend replayed work it had
  // recorded for the same steps on the same buffers at an earlier run, instead of recording anew.
  virtual bool run_steps(const StepCall* calls, size_t count) const {
    for (size_t i = 0; i < count; ++i) calls[i].kernel->execute(calls[i].args, calls[i].scratch);
    return false;
  }

  // Whether make_kernel can run this node here (may depend on dtypes, attributes, shapes).
  virtual bool supports(const OpDef& op, const KernelContext& ctx) const = 0;
  // The node's kernel (the resize step: scheme, packing, scratch). Only called when supported.
  virtual std::unique_ptr<Kernel> make_kernel(const OpDef& op, const KernelContext& ctx) const = 0;
  // The kernel of a fused elementwise program; nullptr where this backend cannot run it.
  virtual std::unique_ptr<Kernel> make_elementwise_kernel(const std::vector<EwInstr>& program,
                                                          const std::vector<TensorType>& input_types,
                                                          const TensorType& output_type) const = 0;
};

// ------------------------------------------------------------------ backend registry
// `listed`: whether it appears in usable_backend_names() and can be chosen; a backend kept for
// testing is registered unlisted and listed on demand.
void register_backend(std::shared_ptr<Backend> backend, bool listed = true);
Backend* find_backend(const std::string& name);  // nullptr when unknown or not listed
Backend& cpu_backend();
std::vector<std::string> usable_backend_names();  // "cpu" first
// The description of a registered backend, usable or not (ValueError when unknown).
std::string backend_description(const std::string& name);
void set_backend_listed(const std::string& name, bool listed);  // throws ValueError when unknown

// The backend plans are built for: this thread's choice where one is in effect (a module loaded
// for a backend runs under it), else the process-wide one ("cpu" unless chosen).
Backend& requested_backend();
void set_requested_backend(const std::string& name);  // throws ValueError naming the usable ones
// This thread's choice ("" clears it); returns the previous one ("" when there was none).
std::string set_thread_backend(const std::string& name);  // throws ValueError like set_requested_backend

// The precision plans are built for, chosen the same two ways: this thread's choice where one is
// in effect (a module loaded with a precision), else the process-wide one (Normal unless chosen).
// Kernels see it in KernelContext::precision; the CPU's ignore it.
Precision requested_precision();
void set_requested_precision(Precision precision);
// This thread's choice by name ("normal", "high", "low"; "" clears it); returns the previous one
// ("" when there was none). Unknown names raise ValueError.
std::string set_thread_precision(const std::string& name);
Precision precision_from_name(const std::string& name);  // throws ValueError naming the known ones
const char* precision_name(Precision precision);

struct BackendRegistrar {
  explicit BackendRegistrar(std::shared_ptr<Backend> backend, bool listed = true) {
    register_backend(std::move(backend), listed);
  }
};
#define MNNPY_REGISTER_BACKEND(...) \
  static ::mnnpy::BackendRegistrar MNNPY_CONCAT(backend_registrar_, __LINE__)(__VA_ARGS__)

// ------------------------------------------------------------------ kernel registry
// Kernels register per (op, backend); an op's meaning (inference, gradient) stays in ops/.
const KernelFactory* find_kernel(const std::string& op_name, const std::string& backend_name);
struct KernelRegistrar {
  KernelRegistrar(const std::string& op_name, const std::string& backend_name, KernelFactory factory);
};
// A kernel of class K built from `args`, as the factories return it.
template <class K, class... Args> std::unique_ptr<Kernel> new_kernel(Args&&... args) {
  return std::unique_ptr<Kernel>(new K(std::forward<Args>(args)...));
}
// The factory of a kernel class built from the context alone:
// MNNPY_REGISTER_KERNEL("Reduce", "cpu", construct_kernel<ReduceKernel>).
template <class K> std::unique_ptr<Kernel> construct_kernel(const KernelContext& ctx) { return new_kernel<K>(ctx); }
#define MNNPY_REGISTER_KERNEL(op, backend, ...) \
  static ::mnnpy::KernelRegistrar MNNPY_CONCAT(kernel_registrar_, __LINE__)(op, backend, __VA_ARGS__)

}  // namespace mnnpy
