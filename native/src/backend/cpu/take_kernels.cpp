// CPU kernels of TakeElements and RepeatElements (ops/take_ops.cpp).
#include <memory>
#include <vector>

#include "backend/cpu/axis_split.h"
#include "backend/cpu/take.h"
#include "mnnpy/backend.h"

namespace mnnpy {

namespace {

class TakeElementsKernel : public Kernel {
 public:
  explicit TakeElementsKernel(const KernelContext& ctx)
      : elem_size_(dtype_size(ctx.input_types[0].dtype)),
        index_dtype_(ctx.input_types[1].dtype),
        n_(ctx.input_types[0].numel()),
        count_(ctx.input_types[1].numel()) {}
  void execute(const KernelArgs& args, void*) const override {
    cpu::take_elements(elem_size_, index_dtype_, args.inputs[0]->data, n_, args.inputs[1]->data, count_,
                       args.outputs[0]->data, args.pool);
  }
  const char* scheme() const override { return "prefetched element gather"; }

 private:
  size_t elem_size_;
  DType index_dtype_;
  int64_t n_, count_;
};

class RepeatElementsKernel : public Kernel {
 public:
  explicit RepeatElementsKernel(const KernelContext& ctx)
      : elem_size_(dtype_size(ctx.input_types[0].dtype)), repeats_(ctx.attrs.get_ints("repeats")) {
    cpu::split_around_axes(ctx.input_types[0].shape, ctx.attrs.get_int("axis"), 1, outer_, n_, inner_);
  }
  void execute(const KernelArgs& args, void*) const override {
    if (args.outputs[0]->numel() == 0) return;
    cpu::repeat_elements(elem_size_, args.inputs[0]->data, outer_, n_, inner_, repeats_.data(), repeats_.size() == 1,
                         args.outputs[0]->data, args.pool);
  }

 private:
  size_t elem_size_;
  std::vector<int64_t> repeats_;
  int64_t outer_ = 1, n_ = 1, inner_ = 1;
};

MNNPY_REGISTER_KERNEL("TakeElements", "cpu", construct_kernel<TakeElementsKernel>);
MNNPY_REGISTER_KERNEL("RepeatElements", "cpu", construct_kernel<RepeatElementsKernel>);

}  // namespace

}  // namespace mnnpy
