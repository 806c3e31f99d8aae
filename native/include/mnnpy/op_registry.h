// The op registry: the single source of truth for what an op is. Each op file registers its
// definition (inference + elementwise description for fusion) with MNNPY_REGISTER_OP, and its
// gradient rule and decomposition beside it; kernels register per backend, CPU ones included,
// with MNNPY_REGISTER_KERNEL (mnnpy/backend.h) from backend/<name>/. Nothing else in the engine
// names ops.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mnnpy/elementwise_program.h"  // ElementwiseInfo
#include "mnnpy/graph.h"

namespace mnnpy {

class ThreadPool;

struct KernelArgs {
  std::vector<const Tensor*> inputs;
  std::vector<Tensor*> outputs;
  ThreadPool* pool = nullptr;
};

// A backend kernel: resize() once per plan (choose scheme, pack constants, size scratch),
// execute() every run. A plan is shared by every thread that runs it, so execute() is const:
// whatever changes during a run lives in the scratch, the outputs or thread_local buffers.
class Kernel {
 public:
  virtual ~Kernel() = default;
  // Bytes of scratch that execute() needs (allocated from the plan's arena).
  virtual size_t scratch_bytes() const { return 0; }
  virtual void execute(const KernelArgs& args, void* scratch) const = 0;
  // For profiles: the scheme chosen at plan time ("im2col+gemm", "winograd"...) and the
  // floating-point operations one run performs (0 where not counted).
  virtual const char* scheme() const { return ""; }
  virtual double flops() const { return 0; }
  // Bytes the kernel keeps from plan to run (packed weights, index tables): what its plan costs
  // while cached. Kernels whose state grows with tensor sizes report it.
  virtual size_t resident_bytes() const { return 0; }
  // Unique in the process, never reused: tells this kernel from a later one made at the same
  // address (a device backend keeps the commands it recorded for a stretch of kernels).
  uint64_t serial() const { return serial_; }

 private:
  static uint64_t next_serial() {
    static std::atomic<uint64_t> last{0};
    return ++last;
  }
  const uint64_t serial_ = next_serial();
};

// MNN's precision modes (BackendConfig::PrecisionMode, in its order): what a plan's kernels may
// trade for speed. Normal and High compute float32 as given; Low lets a device backend round
// float32 operands to float16 where it computes faster so (accumulating in float32). The CPU
// computes as given whatever is asked.
enum class Precision : uint8_t { Normal = 0, High = 1, Low = 2 };

struct KernelContext {
  const Attrs& attrs;
  const std::vector<TensorType>& input_types;
  const std::vector<TensorType>& output_types;
  // Per input: its value when it is constant at plan time and the op lists the input in
  // OpDef::packed_inputs (so a kernel can pack weights once); null otherwise. A plan that
  // used a constant is cached under that tensor's id, never reused for other values. Kernels
  // copy what they need: the tensor may die before the plan.
  const std::vector<const Tensor*>& constants;
  Precision precision = Precision::Normal;  // the precision the plan is built for
};

using InferFn = std::function<std::vector<TensorType>(const std::vector<TensorType>& inputs, Attrs& attrs)>;
using KernelFactory = std::function<std::unique_ptr<Kernel>(const KernelContext&)>;

struct OpDef {
  std::string name;
  int min_inputs = 0, max_inputs = 0;  // max -1: variadic
  InferFn infer;
  ElementwiseInfo elementwise;  // elementwise ops fuse into one pass by these codes
  bool view_only = false;  // output is a reinterpretation of input 0's bytes (reshape)
  // Bit i set: the kernel may read input i at plan time when it is constant (weights it packs).
  uint32_t packed_inputs = 0;
  // Bit i set: input i, when constant, stays in a device backend's memory from run to run (a
  // table the op reads, such as an embedding) instead of being copied at each run. Packed inputs
  // stay so too.
  uint32_t resident_inputs = 0;
};

// Reverse-mode rule of an op: given the forward node and the gradients of its outputs (an
// invalid Var where an output received none), the gradient of each input, shaped as that input
// (an invalid Var for inputs that take none: integer operands, indices, shapes).
struct GradContext {
  const Node& node;
  std::vector<Var> outputs;       // the node's outputs, for rules that reuse them (exp, sigmoid)
  std::vector<Var> output_grads;  // one per output
  const Var& input(size_t i) const { return node.inputs[i]; }
  const Var& grad() const { return output_grads[0]; }
};
using GradFn = std::function<std::vector<Var>(const GradContext&)>;

// Rules are registered beside their op, by op name (MNNPY_REGISTER_GRAD in the op's file).
const GradFn* find_grad(const std::string& op_name);  // nullptr when the op has no rule
struct GradRegistrar {
  GradRegistrar(const std::string& op_name, GradFn fn);
};
#define MNNPY_REGISTER_GRAD(name, ...) \
  static ::mnnpy::GradRegistrar MNNPY_CONCAT(grad_registrar_, __LINE__)(name, __VA_ARGS__)

const OpDef* find_op(const std::string& name);  // nullptr when unknown
const OpDef& get_op(const std::string& name);    // throws ValueError when unknown
std::vector<std::string> registered_op_names();

struct OpRegistrar {
  explicit OpRegistrar(OpDef def);
};

#define MNNPY_CONCAT_INNER(a, b) a##b
#define MNNPY_CONCAT(a, b) MNNPY_CONCAT_INNER(a, b)
#define MNNPY_REGISTER_OP(...) static ::mnnpy::OpRegistrar MNNPY_CONCAT(op_registrar_, __LINE__)(__VA_ARGS__)

// Shared inference helpers.
Shape broadcast_shapes(const Shape& a, const Shape& b);  // throws ValueError on mismatch
int64_t normalize_axis(int64_t axis, int64_t rank);       // throws IndexError when out of range
std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank);  // sorted, unique

}  // namespace mnnpy
