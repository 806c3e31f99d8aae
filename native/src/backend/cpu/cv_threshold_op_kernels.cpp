// CPU kernels of CvThreshold, CvInRange and CvHistogram8U (ops/cv_threshold_ops.cpp).
#include <memory>

#include "backend/cpu/cv_threshold.h"
#include "mnnpy/backend.h"
#include "ops/cv_image_checks.h"

namespace mnnpy {

namespace {

using cv_checks::image_channels;

class ThresholdKernel : public Kernel {
 public:
  explicit ThresholdKernel(const KernelContext& ctx)
      : kind_((cpu::cv_threshold::ThresholdKind)ctx.attrs.get_int("kind")),
        level_(ctx.attrs.get_float("level")),
        maxval_(ctx.attrs.get_float("maxval")) {}

  void execute(const KernelArgs& args, void*) const override {
    const Tensor& x = *args.inputs[0];
    cpu::cv_threshold::threshold(x.type.dtype, kind_, level_, maxval_, x.data, args.outputs[0]->data, x.numel(),
                                 args.pool);
  }

 private:
  cpu::cv_threshold::ThresholdKind kind_;
  double level_, maxval_;
};

MNNPY_REGISTER_KERNEL("CvThreshold", "cpu", construct_kernel<ThresholdKernel>);

class InRangeKernel : public Kernel {
 public:
  explicit InRangeKernel(const KernelContext& ctx)
      : channels_((int)image_channels(ctx.input_types[0].shape)),
        arrays_(ctx.input_types[1].shape == ctx.input_types[0].shape) {}

  void execute(const KernelArgs& args, void*) const override {
    const Tensor& x = *args.inputs[0];
    const int64_t pixels = x.numel() / channels_;
    uint8_t* mask = args.outputs[0]->ptr<uint8_t>();
    if (arrays_) {
      cpu::cv_threshold::in_range_arrays(x.type.dtype, x.data, args.inputs[1]->data, args.inputs[2]->data, pixels,
                                         channels_, mask, args.pool);
    } else {
      cpu::cv_threshold::in_range(x.type.dtype, x.data, pixels, channels_, args.inputs[1]->ptr<double>(),
                                  args.inputs[2]->ptr<double>(), mask, args.pool);
    }
  }

 private:
  int channels_;
  bool arrays_;
};

MNNPY_REGISTER_KERNEL("CvInRange", "cpu", construct_kernel<InRangeKernel>);

class HistogramKernel : public Kernel {
 public:
  void execute(const KernelArgs& args, void*) const override {
    const Tensor& x = *args.inputs[0];
    cpu::cv_threshold::histogram_u8(x.ptr<uint8_t>(), x.numel(), args.outputs[0]->ptr<int64_t>(), args.pool);
  }
};

MNNPY_REGISTER_KERNEL("CvHistogram8U", "cpu", [](const KernelContext&) {
  return new_kernel<HistogramKernel>();
});

}  // namespace

}  // namespace mnnpy
