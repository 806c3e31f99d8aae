// CPU kernels of CvCanny and CvCannyDerivatives (ops/cv_canny_ops.cpp).
#include <memory>

#include "backend/cpu/cv_canny.h"
#include "mnnpy/backend.h"

namespace mnnpy {

namespace {

class CannyKernel : public Kernel {
 public:
  explicit CannyKernel(const KernelContext& ctx)
      : low_(ctx.attrs.get_float("low")),
        high_(ctx.attrs.get_float("high")),
        aperture_((int)ctx.attrs.get_int("aperture")),
        l2_(ctx.attrs.get_int("l2", 0) != 0) {}

  void execute(const KernelArgs& args, void*) const override {
    const Shape& s = args.inputs[0]->type.shape;
    cpu::cv_canny::canny(args.inputs[0]->ptr<uint8_t>(), s[0], s[1], s.size() == 3 ? (int)s[2] : 1, low_, high_,
                         aperture_, l2_, args.outputs[0]->ptr<uint8_t>(), args.pool);
  }

 private:
  double low_, high_;
  int aperture_;
  bool l2_;
};

MNNPY_REGISTER_KERNEL("CvCanny", "cpu", construct_kernel<CannyKernel>);

class CannyDerivativesKernel : public Kernel {
 public:
  explicit CannyDerivativesKernel(const KernelContext& ctx)
      : low_(ctx.attrs.get_float("low")), high_(ctx.attrs.get_float("high")), l2_(ctx.attrs.get_int("l2", 0) != 0) {}

  void execute(const KernelArgs& args, void*) const override {
    const Shape& s = args.inputs[0]->type.shape;
    cpu::cv_canny::canny_from_derivatives(args.inputs[0]->ptr<int16_t>(), args.inputs[1]->ptr<int16_t>(), s[0], s[1],
                                          s.size() == 3 ? (int)s[2] : 1, low_, high_, l2_,
                                          args.outputs[0]->ptr<uint8_t>(), args.pool);
  }

 private:
  double low_, high_;
  bool l2_;
};

MNNPY_REGISTER_KERNEL("CvCannyDerivatives", "cpu", construct_kernel<CannyDerivativesKernel>);

}  // namespace

}  // namespace mnnpy
