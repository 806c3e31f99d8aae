// CPU kernel of Bincount (ops/histogram_ops.cpp).
#include <memory>
#include <string>

#include "backend/cpu/histogram.h"
#include "mnnpy/backend.h"

namespace mnnpy {

namespace {

class BincountKernel : public Kernel {
 public:
  explicit BincountKernel(const KernelContext& ctx)
      : n_(ctx.input_types[0].shape[0]), length_(ctx.attrs.get_int("length")) {}
  void execute(const KernelArgs& args, void*) const override {
    const double* weights = args.inputs.size() == 2 ? args.inputs[1]->ptr<double>() : nullptr;
    if (!cpu::bincount(args.inputs[0]->ptr<int64_t>(), weights, n_, length_, args.outputs[0]->data, args.pool)) {
      throw ValueError("Bincount: an index lies outside [0, " + std::to_string(length_) + ")");
    }
  }

 private:
  int64_t n_, length_;
};

MNNPY_REGISTER_KERNEL("Bincount", "cpu", construct_kernel<BincountKernel>);

}  // namespace

}  // namespace mnnpy
