// CPU kernels of CvLabelComponents and CvComponentStats (ops/cv_components_ops.cpp).
#include <memory>

#include "backend/cpu/cv_components.h"
#include "mnnpy/backend.h"

namespace mnnpy {

namespace {

class LabelKernel : public Kernel {
 public:
  explicit LabelKernel(const KernelContext& ctx) : connectivity_((int)ctx.attrs.get_int("connectivity")) {}
  void execute(const KernelArgs& args, void*) const override {
    const Shape& s = args.inputs[0]->type.shape;
    *args.outputs[1]->ptr<int64_t>() = cpu::cv_components::label(
        static_cast<const uint8_t*>(args.inputs[0]->data), s[0], s[1], connectivity_, args.outputs[0]->ptr<int32_t>());
  }

 private:
  int connectivity_;
};

MNNPY_REGISTER_KERNEL("CvLabelComponents", "cpu", construct_kernel<LabelKernel>);

class StatsKernel : public Kernel {
 public:
  explicit StatsKernel(const KernelContext& ctx) : count_(ctx.attrs.get_int("count")) {}
  void execute(const KernelArgs& args, void*) const override {
    const Shape& s = args.inputs[0]->type.shape;
    cpu::cv_components::statistics(args.inputs[0]->ptr<int32_t>(), s[0], s[1], count_, args.outputs[0]->ptr<int32_t>(),
                                   args.outputs[1]->ptr<double>());
  }

 private:
  int64_t count_;
};

MNNPY_REGISTER_KERNEL("CvComponentStats", "cpu", construct_kernel<StatsKernel>);

}  // namespace

}  // namespace mnnpy
