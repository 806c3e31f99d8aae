// Conversions between float32 NCHW and the blocked channel layout of convolution chains.
//   ToBlockedChannels:   x [N, C, H, W] (C a multiple of 8) -> [N, C/8, H, W, 8]; attr block (8)
//   FromBlockedChannels: x [N, C/8, H, W, 8] -> [N, C, H, W]
// Each is the other's gradient; both decompose into Raster (one region).
#include <string>
#include <utility>

#include "mnnpy/lowering.h"
#include "mnnpy/op_registry.h"
#include "ops/blocked_layout.h"

namespace mnnpy {

namespace {

constexpr int64_t kBlock = kChannelBlock;

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

OpDef layout_def(const char* name, InferFn infer) {
  OpDef def;
  def.name = name;
  def.min_inputs = def.max_inputs = 1;
  def.infer = std::move(infer);
  return def;
}

MNNPY_REGISTER_OP(layout_def("ToBlockedChannels", infer_to_blocked));
MNNPY_REGISTER_OP(layout_def("FromBlockedChannels", infer_from_blocked));

// One region over the blocked axes [N, C/b, H, W, b]: walked in order in the blocked array, at
// strides [C*H*W, b*H*W, W, 1, H*W] in the NCHW one. Reading the NCHW array through them is
// ToBlockedChannels; writing it through them, FromBlockedChannels.
RasterRegion blocked_region(const Shape& nchw, bool to_blocked) {
  const std::vector<int64_t> s = row_major_strides(nchw);
  RasterRegion r;
  r.sizes = {nchw[0], nchw[1] / kBlock, nchw[2], nchw[3], kBlock};
  const std::vector<int64_t> nchw_strides{s[0], kBlock * s[1], s[2], s[3], s[1]};
  const std::vector<int64_t> blocked_strides = row_major_strides(r.sizes);
  r.src_strides = to_blocked ? nchw_strides : blocked_strides;
  r.dst_strides = to_blocked ? blocked_strides : nchw_strides;
  return r;
}

MNNPY_REGISTER_DECOMPOSITION("ToBlockedChannels", [](const std::vector<Var>& in, const Attrs&,
                                                     const std::vector<TensorType>& out) {
  return std::vector<Var>{raster(in, out[0].shape, {blocked_region(in[0].type().shape, true)})};
});
MNNPY_REGISTER_DECOMPOSITION("FromBlockedChannels", [](const std::vector<Var>& in, const Attrs&,
                                                       const std::vector<TensorType>& out) {
  return std::vector<Var>{raster(in, out[0].shape, {blocked_region(out[0].shape, false)})};
});

// Each conversion's gradient is the other conversion.
MNNPY_REGISTER_GRAD("ToBlockedChannels", [](const GradContext& c) {
  return std::vector<Var>{make_op("FromBlockedChannels", {c.grad()})};
});
MNNPY_REGISTER_GRAD("FromBlockedChannels", [](const GradContext& c) {
  return std::vector<Var>{make_op("ToBlockedChannels", {c.grad()}, Attrs().set("block", kBlock))};
});

}  // namespace

}  // namespace mnnpy
