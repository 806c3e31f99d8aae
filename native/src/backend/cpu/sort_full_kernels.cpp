// CPU kernels of Sort, ArgSort and IsIn (ops/sort_full_ops.cpp).
#include <memory>

#include "backend/cpu/axis_split.h"
#include "backend/cpu/sort_full.h"
#include "mnnpy/backend.h"

namespace mnnpy {

namespace {

class SortKernel : public Kernel {
 public:
  SortKernel(const KernelContext& ctx, bool indices) : dtype_(ctx.input_types[0].dtype), indices_(indices) {
    cpu::split_around_axes(ctx.input_types[0].shape, ctx.attrs.get_int("axis"), 1, outer_, n_, inner_);
  }
  void execute(const KernelArgs& args, void*) const override {
    if (indices_) {
      cpu::sort_along_axis(dtype_, args.inputs[0]->data, outer_, n_, inner_, nullptr, args.outputs[0]->ptr<int64_t>(),
                           args.pool);
    } else {
      cpu::sort_along_axis(dtype_, args.inputs[0]->data, outer_, n_, inner_, args.outputs[0]->data, nullptr, args.pool);
    }
  }
  const char* scheme() const override { return "radix"; }

 private:
  DType dtype_;
  bool indices_;
  int64_t outer_ = 1, n_ = 1, inner_ = 1;
};

class IsInKernel : public Kernel {
 public:
  explicit IsInKernel(const KernelContext& ctx)
      : dtype_(ctx.input_types[0].dtype),
        invert_(ctx.attrs.get_int("invert") != 0),
        kind_((int)ctx.attrs.get_int("kind")) {}
  void execute(const KernelArgs& args, void*) const override {
    cpu::isin(dtype_, args.inputs[0]->data, args.inputs[0]->numel(), args.inputs[1]->data, args.inputs[1]->numel(),
              invert_, kind_, args.outputs[0]->ptr<uint8_t>(), args.pool);
  }
  const char* scheme() const override { return kind_ == 2 ? "table" : "sort"; }

 private:
  DType dtype_;
  bool invert_;
  int kind_;
};

MNNPY_REGISTER_KERNEL("Sort", "cpu", [](const KernelContext& ctx) {
  return new_kernel<SortKernel>(ctx, false);
});
MNNPY_REGISTER_KERNEL("ArgSort", "cpu", [](const KernelContext& ctx) {
  return new_kernel<SortKernel>(ctx, true);
});
MNNPY_REGISTER_KERNEL("IsIn", "cpu", construct_kernel<IsInKernel>);

}  // namespace

}  // namespace mnnpy
