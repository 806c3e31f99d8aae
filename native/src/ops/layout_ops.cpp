// Conversions between float32 NCHW and the blocked channel layout of convolution chains.
//   ToBlockedChannels:   x [N, C, H, W] (C a multiple of 8) -> [N, C/8, H, W, 8]; attr block (8)
//   FromBlockedChannels: x [N, C/8, H, W, 8] -> [N, C, H, W]
// Each is the other's gradient.
#include <memory>
#include <string>
#include <utility>

#include "backend/cpu/layout.h"
#include "mnnpy/op_registry.h"

namespace mnnpy {

namespace {

constexpr int64_t kBlock = cpu::kChannelBlock;

void check_float32(const char* op, const TensorType& x) {
  if (x.dtype != DType::Float32) {
    throw TypeError(std::string(op) + ": input must be float32, got " + dtype_name(x.dtype));
  }
}

std::vector<TensorType> infer_to_blocked(const std::vector<TensorType>& in, Attrs& attrs) {
  const TensorType& x = in[0];
  check_float32("ToBlockedChannels", x);
  const int64_t block = attrs.get_int("block", kBlock);
  if (block != kBlock) {
    throw ValueError("ToBlockedChannels: 'block' must be " + std::to_string(kBlock) + ", got " +
                     std::to_string(block));
  }
  attrs.set("block", block);
  if (x.shape.size() != 4) {
    throw ValueError("ToBlockedChannels: input must be 4-D [N, C, H, W], got shape " + shape_str(x.shape));
  }
  const int64_t c = x.shape[1];
  if (c % kBlock != 0) {
    throw ValueError("ToBlockedChannels: the channel count C=" + std::to_string(c) + " of shape " +
                     shape_str(x.shape) + " is not a multiple of the block " + std::to_string(kBlock));
  }
  return {TensorType{DType::Float32, {x.shape[0], c / kBlock, x.shape[2], x.shape[3], kBlock}}};
}

std::vector<TensorType> infer_from_blocked(const std::vector<TensorType>& in, Attrs&) {
  const TensorType& x = in[0];
  check_float32("FromBlockedChannels", x);
  if (x.shape.size() != 5 || x.shape[4] != kBlock) {
    throw ValueError("FromBlockedChannels: input must be 5-D [N, C/" + std::to_string(kBlock) + ", H, W, " +
                     std::to_string(kBlock) + "], got shape " + shape_str(x.shape));
  }
  return {TensorType{DType::Float32, {x.shape[0], x.shape[1] * kBlock, x.shape[2], x.shape[3]}}};
}

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

OpDef layout_def(const char* name, bool to_blocked, InferFn infer) {
  OpDef def;
  def.name = name;
  def.min_inputs = def.max_inputs = 1;
  def.infer = std::move(infer);
  def.cpu_kernel = [to_blocked](const KernelContext& ctx) {
    return std::unique_ptr<Kernel>(new ChannelLayoutKernel(to_blocked, ctx));
  };
  return def;
}

MNNPY_REGISTER_OP(layout_def("ToBlockedChannels", true, infer_to_blocked));
MNNPY_REGISTER_OP(layout_def("FromBlockedChannels", false, infer_from_blocked));

// Each conversion's gradient is the other conversion.
MNNPY_REGISTER_GRAD("ToBlockedChannels", [](const GradContext& c) {
  return std::vector<Var>{make_op("FromBlockedChannels", {c.grad()})};
});
MNNPY_REGISTER_GRAD("FromBlockedChannels", [](const GradContext& c) {
  return std::vector<Var>{make_op("ToBlockedChannels", {c.grad()}, Attrs().set("block", kBlock))};
});

}  // namespace

}  // namespace mnnpy
