// MaxPool2D and AvgPool2D over float32 NCHW tensors, with ONNX/PyTorch output sizes, and their
// blocked-layout twins MaxPool2DBlocked and AvgPool2DBlocked over [N, C/8, H, W, 8] (same attributes
// and output sizes, output blocked too).
// Attributes: kernel [kh, kw], strides [sh, sw], pads [top, left, bottom, right],
// dilations [dh, dw], ceil_mode 0/1, count_include_pad 0/1 (average only).
// Gradients (NCHW only), with the forward's attributes:
//   MaxPool2DGrad: inputs x, dy -> dx (dy to each window's arg-max in x)
//   AvgPool2DGrad: input dy, attr input_size [H, W] -> dx
// and the rules of MaxPool2D and AvgPool2D that build them (the blocked twins' through the NCHW
// layout).
#include <string>

#include "mnnpy/autograd.h"
#include "mnnpy/op_registry.h"
#include "ops/blocked_layout.h"

namespace mnnpy {

namespace {

std::string list_str(const std::vector<int64_t>& v) {
  std::string r = "[";
  for (size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + std::to_string(v[i]);
  return r + "]";
}

std::vector<int64_t> ints_or(const Attrs& attrs, const std::string& op, const std::string& key,
                             std::vector<int64_t> fallback, size_t count, int64_t min_value) {
  std::vector<int64_t> v = attrs.has(key) ? attrs.get_ints(key) : std::move(fallback);
  if (v.size() != count) {
    throw ValueError(op + ": '" + key + "' needs " + std::to_string(count) + " values, got " + list_str(v));
  }
  for (int64_t x : v) {
    if (x < min_value) {
      throw ValueError(op + ": '" + key + "' values must be >= " + std::to_string(min_value) + ", got " +
                       list_str(v));
    }
  }
  return v;
}

// One spatial axis: output length with ceil mode's rule that the last window must start
// inside the input or the leading padding.
int64_t pooled_length(const std::string& op, const char* axis, int64_t in, int64_t kernel, int64_t stride,
                      int64_t dilation, int64_t pad_begin, int64_t pad_end, bool ceil_mode) {
  const int64_t extent = (kernel - 1) * dilation + 1;
  if (pad_begin >= extent || pad_end >= extent) {
    throw ValueError(op + ": padding along " + axis + " (" + std::to_string(pad_begin) + ", " +
                     std::to_string(pad_end) + ") must be smaller than the kernel extent " + std::to_string(extent));
  }
  const int64_t span = in + pad_begin + pad_end - extent;
  if (span < 0) {
    throw ValueError(op + ": kernel extent " + std::to_string(extent) + " is larger than the padded input " +
                     axis + " " + std::to_string(in + pad_begin + pad_end));
  }
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad_begin) --out;
  return out;
}

constexpr int64_t kBlock = kChannelBlock;

// Both layouts keep N at axis 0, channels (or channel blocks) at 1 and H, W at 2, 3.
std::vector<TensorType> infer_pool(const std::string& op, bool is_max, bool blocked,
                                   const std::vector<TensorType>& in, Attrs& attrs) {
  const TensorType& x = in[0];
  if (x.dtype != DType::Float32) {
    throw TypeError(op + ": input must be float32, got " + dtype_name(x.dtype));
  }
  if (blocked && (x.shape.size() != 5 || x.shape[4] != kBlock)) {
    throw ValueError(op + ": input must be 5-D [N, C/8, H, W, 8], got shape " + shape_str(x.shape));
  }
  if (!blocked && x.shape.size() != 4) {
    throw ValueError(op + ": input must be 4-D [N, C, H, W], got shape " + shape_str(x.shape));
  }
  if (!attrs.has("kernel")) throw ValueError(op + ": the 'kernel' attribute is required");
  const auto kernel = ints_or(attrs, op, "kernel", {}, 2, 1);
  const auto strides = ints_or(attrs, op, "strides", {1, 1}, 2, 1);
  const auto pads = ints_or(attrs, op, "pads", {0, 0, 0, 0}, 4, 0);
  const auto dilations = ints_or(attrs, op, "dilations", {1, 1}, 2, 1);
  const int64_t ceil_mode = attrs.get_int("ceil_mode", 0);
  if (ceil_mode != 0 && ceil_mode != 1) throw ValueError(op + ": 'ceil_mode' must be 0 or 1");
  attrs.set("kernel", kernel).set("strides", strides).set("pads", pads).set("dilations", dilations);
  attrs.set("ceil_mode", ceil_mode);
  if (!is_max) {
    const int64_t include = attrs.get_int("count_include_pad", 0);
    if (include != 0 && include != 1) throw ValueError(op + ": 'count_include_pad' must be 0 or 1");
    attrs.set("count_include_pad", include);
  }
  const int64_t out_h = pooled_length(op, "height", x.shape[2], kernel[0], strides[0], dilations[0], pads[0], pads[2],
                                      ceil_mode != 0);
  const int64_t out_w = pooled_length(op, "width", x.shape[3], kernel[1], strides[1], dilations[1], pads[1], pads[3],
                                      ceil_mode != 0);
  Shape out{x.shape[0], x.shape[1], out_h, out_w};
  if (blocked) out.push_back(kBlock);
  return {TensorType{DType::Float32, out}};
}

OpDef pool_def(const char* name, bool is_max, bool blocked) {
  OpDef def;
  def.name = name;
  def.min_inputs = def.max_inputs = 1;
  def.infer = [name = std::string(name), is_max, blocked](const std::vector<TensorType>& in, Attrs& attrs) {
    return infer_pool(name, is_max, blocked, in, attrs);
  };
  return def;
}

// ---------------------------------------------------------------- gradients
// The forward's input type for a gradient op: x itself (max) or [N, C, input_size] (average).
TensorType pool_input_type(const std::string& op, bool is_max, const std::vector<TensorType>& in, Attrs& attrs) {
  if (is_max) return in[0];
  const TensorType& dy = in[0];
  if (!attrs.has("input_size")) throw ValueError(op + ": the 'input_size' attribute is required");
  const auto size = ints_or(attrs, op, "input_size", {}, 2, 1);
  attrs.set("input_size", size);
  if (dy.shape.size() != 4) {
    throw ValueError(op + ": output gradient must be 4-D [N, C, Ho, Wo], got shape " + shape_str(dy.shape));
  }
  return TensorType{dy.dtype, {dy.shape[0], dy.shape[1], size[0], size[1]}};
}

std::vector<TensorType> infer_pool_grad(const std::string& op, bool is_max, const std::vector<TensorType>& in,
                                        Attrs& attrs) {
  const TensorType x = pool_input_type(op, is_max, in, attrs);
  const TensorType& dy = in[is_max ? 1 : 0];
  if (dy.dtype != DType::Float32) {
    throw TypeError(op + ": output gradient must be float32, got " + dtype_name(dy.dtype));
  }
  const std::vector<TensorType> out = infer_pool(op, is_max, false, {x}, attrs);
  if (out[0].shape != dy.shape) {
    throw ValueError(op + ": output gradient has shape " + shape_str(dy.shape) + " but the pooling of " +
                     shape_str(x.shape) + " gives " + shape_str(out[0].shape));
  }
  return {x};
}

OpDef pool_grad_def(const char* name, bool is_max) {
  OpDef def;
  def.name = name;
  def.min_inputs = def.max_inputs = is_max ? 2 : 1;
  def.infer = [name = std::string(name), is_max](const std::vector<TensorType>& in, Attrs& attrs) {
    return infer_pool_grad(name, is_max, in, attrs);
  };
  return def;
}

MNNPY_REGISTER_OP(pool_grad_def("MaxPool2DGrad", true));
MNNPY_REGISTER_OP(pool_grad_def("AvgPool2DGrad", false));

MNNPY_REGISTER_GRAD("MaxPool2D", [](const GradContext& c) {
  return std::vector<Var>{make_op("MaxPool2DGrad", {c.input(0), c.grad()}, c.node.attrs)};
});

MNNPY_REGISTER_GRAD("AvgPool2D", [](const GradContext& c) {
  Attrs attrs = c.node.attrs;
  const Shape& x = c.input(0).type().shape;
  attrs.set("input_size", std::vector<int64_t>{x[2], x[3]});
  return std::vector<Var>{make_op("AvgPool2DGrad", {c.grad()}, attrs)};
});

// The blocked twins: the same gradients through the NCHW layout.
Var from_blocked(const Var& v) { return make_op("FromBlockedChannels", {v}); }
Var to_blocked(const Var& v) { return make_op("ToBlockedChannels", {v}, Attrs().set("block", kBlock)); }

MNNPY_REGISTER_GRAD("MaxPool2DBlocked", [](const GradContext& c) {
  return std::vector<Var>{
      to_blocked(make_op("MaxPool2DGrad", {from_blocked(c.input(0)), from_blocked(c.grad())}, c.node.attrs))};
});

MNNPY_REGISTER_GRAD("AvgPool2DBlocked", [](const GradContext& c) {
  Attrs attrs = c.node.attrs;
  const Shape& x = c.input(0).type().shape;
  attrs.set("input_size", std::vector<int64_t>{x[2], x[3]});
  return std::vector<Var>{to_blocked(make_op("AvgPool2DGrad", {from_blocked(c.grad())}, attrs))};
});

MNNPY_REGISTER_OP(pool_def("MaxPool2D", true, false));
MNNPY_REGISTER_OP(pool_def("AvgPool2D", false, false));
MNNPY_REGISTER_OP(pool_def("MaxPool2DBlocked", true, true));
MNNPY_REGISTER_OP(pool_def("AvgPool2DBlocked", false, true));

}  // namespace

}  // namespace mnnpy
