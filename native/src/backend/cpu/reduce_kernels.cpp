// CPU kernels of Reduce and Variance (ops/reduce_ops.cpp): each reduces one contiguous run of
// axes, the input viewed as [outer, R, inner].
#include <memory>

#include "backend/cpu/axis_split.h"
#include "backend/cpu/moments.h"
#include "backend/cpu/reduce.h"
#include "mnnpy/backend.h"

namespace mnnpy {

namespace {

class ReduceKernel : public Kernel {
 public:
  explicit ReduceKernel(const KernelContext& ctx) : kind_((int)ctx.attrs.get_int("kind")), dtype_(ctx.input_types[0].dtype) {
    cpu::split_around_axes(ctx.input_types[0].shape, ctx.attrs.get_int("first"), ctx.attrs.get_int("count"), outer_,
                           r_, inner_);
  }
  void execute(const KernelArgs& args, void*) const override {
    if (outer_ * inner_ == 0) return;
    cpu::reduce(kind_, dtype_, args.inputs[0]->data, outer_, r_, inner_, args.outputs[0]->data, args.pool);
  }

 private:
  int kind_;
  DType dtype_;
  int64_t outer_ = 1, r_ = 1, inner_ = 1;
};

class VarianceKernel : public Kernel {
 public:
  explicit VarianceKernel(const KernelContext& ctx)
      : dtype_(ctx.input_types[0].dtype), ddof_(ctx.attrs.get_float("ddof")), root_(ctx.attrs.get_int("root") != 0) {
    cpu::split_around_axes(ctx.input_types[0].shape, ctx.attrs.get_int("first"), ctx.attrs.get_int("count"), outer_,
                           r_, inner_);
  }
  void execute(const KernelArgs& args, void*) const override {
    if (outer_ * inner_ == 0) return;
    cpu::variance(dtype_, args.inputs[0]->data, outer_, r_, inner_, ddof_, root_, args.outputs[0]->data, args.pool);
  }

 private:
  DType dtype_;
  double ddof_;
  bool root_;
  int64_t outer_ = 1, r_ = 1, inner_ = 1;
};

MNNPY_REGISTER_KERNEL("Reduce", "cpu", construct_kernel<ReduceKernel>);
MNNPY_REGISTER_KERNEL("Variance", "cpu", construct_kernel<VarianceKernel>);

}  // namespace

}  // namespace mnnpy
