// CPU kernels of ToBlockedChannels and FromBlockedChannels (ops/layout_ops.cpp).
#include <memory>

#include "backend/cpu/layout.h"
#include "mnnpy/backend.h"

namespace mnnpy {

namespace {

class ChannelLayoutKernel : public Kernel {
 public:
  ChannelLayoutKernel(bool to_blocked, const KernelContext& ctx) : to_blocked_(to_blocked) {
    const Shape& nchw = to_blocked ? ctx.input_types[0].shape : ctx.output_types[0].shape;
    batch_ = nchw[0], channels_ = nchw[1], plane_ = nchw[2] * nchw[3];
  }

  const char* scheme() const override { return "transpose8x8"; }

  void execute(const KernelArgs& args, void*) const override {
    const float* x = args.inputs[0]->ptr<float>();
    float* y = args.outputs[0]->ptr<float>();
    if (to_blocked_) cpu::to_blocked_channels(x, batch_, channels_, plane_, y, args.pool);
    else cpu::from_blocked_channels(x, batch_, channels_, plane_, y, args.pool);
  }

 private:
  bool to_blocked_;
  int64_t batch_ = 0, channels_ = 0, plane_ = 0;
};

MNNPY_REGISTER_KERNEL("ToBlockedChannels", "cpu", [](const KernelContext& ctx) {
  return new_kernel<ChannelLayoutKernel>(true, ctx);
});
MNNPY_REGISTER_KERNEL("FromBlockedChannels", "cpu", [](const KernelContext& ctx) {
  return new_kernel<ChannelLayoutKernel>(false, ctx);
});

}  // namespace

}  // namespace mnnpy
