// Elementwise, pooling and concatenation ops on 8-bit quantized tensors: onnxruntime's QOperator
// contrib ops (com.microsoft) and what the QDQ pass (mnnpy/convert/_qdq_fusion.py) fuses into
// them. CPU kernels: backend/cpu/quantized_elementwise_kernels.cpp. T is int8 or uint8; a scale is
// one float32 value, a zero point one value of T. All arithmetic is float32 without fused
// multiply-adds, rounding half to even, saturating to T (docs/int8.md, "int8 elementwise ops").
//   QLinearAdd(a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero) -> T, a and b broadcast:
//     y = sat(round(float(a_scale / y_scale) (a - a_zero) + float(b_scale / y_scale) (b - b_zero)) + y_zero)
//   QLinearMul(same inputs) -> T:
//     y = sat(round(float(a_scale * b_scale / y_scale) (a - a_zero)(b - b_zero)) + y_zero)
//   QLinearGlobalAveragePool(x, x_scale, x_zero, y_scale, y_zero) -> T, x [N, C, spatial...]
//     (channels_last 1: [N, spatial..., C]), every spatial axis reduced to 1:
//     y = sat(round(float(sum(x - x_zero)) * float(x_scale / (y_scale * count))) + y_zero),
//     the sum in int32
//   QLinearAveragePool(x, x_scale, x_zero, y_scale, y_zero) -> T, x 4-D; attributes of AvgPool2D
//     (kernel, strides, pads, ceil_mode, count_include_pad; no dilations) and channels_last; the
//     rule above with count the window's divisor
//   MaxPool2DInt8(x) -> T: MaxPool2D on 8-bit values (kernel, strides, pads, dilations, ceil_mode,
//     channels_last); no rescaling, exact
//   QLinearConcat(y_scale, y_zero, x0, x0_scale, x0_zero, x1, ...) -> T, attribute axis: inputs
//     whose scale or zero point differ from the output's are requantized value by value,
//     sat(round(float(x - x_zero) * x_scale / y_scale) + y_zero) (as a 256-entry table), the
//     others copied. A pass that changes the layout moves `axis` with it.
//   QLinearSoftmax(x, x_scale, x_zero, y_scale, y_zero) -> y_zero's type, along x's last axis:
//     v = (float(x) - float(x_zero)) * x_scale, e = exp(v - max(v)), y = sat(round((e / sum(e)) /
//     y_scale) + y_zero) (QuantizeLinear's bytes), each row in one pass (the DequantizeLinear,
//     Softmax, QuantizeLinear chain of a QDQ model's attention, and onnxruntime's contrib op).
//   QuantizeLinear(x, y_scale, y_zero) -> T: ONNX's per-tensor QuantizeLinear of float32 x,
//     y = sat(round(x / y_scale) + y_zero), the quotient in float32 rounded half to even, NaN to
//     T's least value; channels_last 1: x is [N, C, H, W] and y [N, H, W, C] (a model's input
//     quantized straight into the int8 convolutions' layout).
// channels_last (0 or 1) places the channels last ([N, H, W, C]) for the pools.
#include <string>

#include "mnnpy/op_registry.h"

namespace mnnpy {

namespace {

bool is_8bit(DType t) { return t == DType::Int8 || t == DType::UInt8; }

void check_scale(const std::string& op, const char* what, const TensorType& t) {
  if (t.dtype != DType::Float32) {
    throw TypeError(op + ": " + what + " must be float32, got " + dtype_name(t.dtype));
  }
  if (t.numel() != 1) throw ValueError(op + ": " + what + " must hold one value, got shape " + shape_str(t.shape));
}

void check_zero(const std::string& op, const char* what, const TensorType& t, DType want) {
  if (t.dtype != want) {
    throw TypeError(op + ": " + what + " must be " + dtype_name(want) + " (the data's type), got " +
                    dtype_name(t.dtype));
  }
  if (t.numel() != 1) throw ValueError(op + ": " + what + " must hold one value, got shape " + shape_str(t.shape));
}

void check_data(const std::string& op, const char* what, const TensorType& t) {
  if (!is_8bit(t.dtype)) throw TypeError(op + ": " + what + " must be int8 or uint8, got " + dtype_name(t.dtype));
}

int64_t channels_last_attr(const std::string& op, Attrs& attrs) {
  const int64_t v = attrs.get_int("channels_last", 0);
  if (v != 0 && v != 1) throw ValueError(op + ": 'channels_last' must be 0 or 1, got " + std::to_string(v));
  attrs.set("channels_last", v);
  return v;
}

// ---------------------------------------------------------------- QLinearAdd, QLinearMul
std::vector<TensorType> infer_binary(const std::string& op, const std::vector<TensorType>& in, Attrs&) {
  check_data(op, "a", in[0]);
  const DType t = in[0].dtype;
  if (in[3].dtype != t) {
    throw TypeError(op + ": a and b must have one type, got " + dtype_name(t) + " and " + dtype_name(in[3].dtype));
  }
  check_scale(op, "a_scale", in[1]);
  check_zero(op, "a_zero_point", in[2], t);
  check_scale(op, "b_scale", in[4]);
  check_zero(op, "b_zero_point", in[5], t);
  check_scale(op, "y_scale", in[6]);
  check_zero(op, "y_zero_point", in[7], t);
  Shape out;
  try {
    out = broadcast_shapes(in[0].shape, in[3].shape);
  } catch (const ValueError&) {
    throw ValueError(op + ": shapes " + shape_str(in[0].shape) + " and " + shape_str(in[3].shape) +
                     " do not broadcast");
  }
  return {TensorType{t, out}};
}

OpDef binary_def(const char* name) {
  OpDef def;
  def.name = name;
  def.min_inputs = def.max_inputs = 8;
  def.infer = [op = std::string(name)](const std::vector<TensorType>& in, Attrs& attrs) {
    return infer_binary(op, in, attrs);
  };
  return def;
}
MNNPY_REGISTER_OP(binary_def("QLinearAdd"));
MNNPY_REGISTER_OP(binary_def("QLinearMul"));

// ---------------------------------------------------------------- pools
std::vector<int64_t> pool_ints(const std::string& op, const Attrs& attrs, const std::string& key,
                               std::vector<int64_t> fallback, size_t count, int64_t min_value) {
  std::vector<int64_t> v = attrs.has(key) ? attrs.get_ints(key) : std::move(fallback);
  bool ok = v.size() == count;
  for (int64_t x : v) ok = ok && x >= min_value;
  if (!ok) {
    std::string got = "[";
    for (size_t i = 0; i < v.size(); ++i) got += (i ? ", " : "") + std::to_string(v[i]);
    throw ValueError(op + ": '" + key + "' needs " + std::to_string(count) + " values >= " +
                     std::to_string(min_value) + ", got " + got + "]");
  }
  return v;
}

// ONNX's output length of one pooled axis (ceil mode: the last window starts inside the input or
// the leading padding).
int64_t pooled_length(const std::string& op, int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                      int64_t pad_begin, int64_t pad_end, bool ceil_mode) {
  const int64_t extent = (kernel - 1) * dilation + 1;
  if (pad_begin >= extent || pad_end >= extent) {
    throw ValueError(op + ": the padding (" + std::to_string(pad_begin) + ", " + std::to_string(pad_end) +
                     ") must be smaller than the window's extent " + std::to_string(extent));
  }
  const int64_t span = in + pad_begin + pad_end - extent;
  if (span < 0) {
    throw ValueError(op + ": the window's extent " + std::to_string(extent) + " exceeds the padded input length " +
                     std::to_string(in + pad_begin + pad_end));
  }
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad_begin) --out;
  return out;
}

// The output type of a windowed pool over 4-D x in either layout; sets the normalized attributes.
TensorType infer_window_pool(const std::string& op, const TensorType& x, Attrs& attrs, bool average) {
  check_data(op, "x", x);
  const int64_t last = channels_last_attr(op, attrs);
  if (x.shape.size() != 4) {
    throw ValueError(op + ": x must be 4-D " + (last ? "[N, H, W, C]" : "[N, C, H, W]") + ", got shape " +
                     shape_str(x.shape));
  }
  if (!attrs.has("kernel")) throw ValueError(op + ": the 'kernel' attribute is required");
  const auto kernel = pool_ints(op, attrs, "kernel", {}, 2, 1);
  const auto strides = pool_ints(op, attrs, "strides", {1, 1}, 2, 1);
  const auto pads = pool_ints(op, attrs, "pads", {0, 0, 0, 0}, 4, 0);
  const auto dilations = pool_ints(op, attrs, "dilations", {1, 1}, 2, 1);
  if (average && (dilations[0] != 1 || dilations[1] != 1)) throw ValueError(op + ": dilations must be [1, 1]");
  const int64_t ceil_mode = attrs.get_int("ceil_mode", 0);
  if (ceil_mode != 0 && ceil_mode != 1) throw ValueError(op + ": 'ceil_mode' must be 0 or 1");
  attrs.set("kernel", kernel).set("strides", strides).set("pads", pads).set("dilations", dilations);
  attrs.set("ceil_mode", ceil_mode);
  if (average) {
    const int64_t include = attrs.get_int("count_include_pad", 0);
    if (include != 0 && include != 1) throw ValueError(op + ": 'count_include_pad' must be 0 or 1");
    attrs.set("count_include_pad", include);
  }
  const int64_t h = x.shape[last ? 1 : 2], w = x.shape[last ? 2 : 3];
  const int64_t oh = pooled_length(op, h, kernel[0], strides[0], dilations[0], pads[0], pads[2], ceil_mode != 0);
  const int64_t ow = pooled_length(op, w, kernel[1], strides[1], dilations[1], pads[1], pads[3], ceil_mode != 0);
  const Shape out = last ? Shape{x.shape[0], oh, ow, x.shape[3]} : Shape{x.shape[0], x.shape[1], oh, ow};
  return TensorType{x.dtype, out};
}

void check_pool_quant(const std::string& op, const std::vector<TensorType>& in) {
  check_scale(op, "x_scale", in[1]);
  check_zero(op, "x_zero_point", in[2], in[0].dtype);
  check_scale(op, "y_scale", in[3]);
  check_zero(op, "y_zero_point", in[4], in[0].dtype);
}

std::vector<TensorType> infer_average_pool(const std::vector<TensorType>& in, Attrs& attrs) {
  const std::string op = "QLinearAveragePool";
  TensorType out = infer_window_pool(op, in[0], attrs, true);
  check_pool_quant(op, in);
  return {out};
}

std::vector<TensorType> infer_global_average_pool(const std::vector<TensorType>& in, Attrs& attrs) {
  const std::string op = "QLinearGlobalAveragePool";
  const TensorType& x = in[0];
  check_data(op, "x", x);
  const int64_t last = channels_last_attr(op, attrs);
  if (x.shape.size() < 3) {
    throw ValueError(op + ": x needs a batch, a channel and at least one spatial axis, got shape " +
                     shape_str(x.shape));
  }
  check_pool_quant(op, in);
  Shape out(x.shape.size(), 1);
  out[0] = x.shape[0];
  if (last) {
    out.back() = x.shape.back();
  } else {
    out[1] = x.shape[1];
  }
  return {TensorType{x.dtype, out}};
}

std::vector<TensorType> infer_max_pool(const std::vector<TensorType>& in, Attrs& attrs) {
  return {infer_window_pool("MaxPool2DInt8", in[0], attrs, false)};
}

OpDef fixed_def(const char* name, int inputs, InferFn infer) {
  OpDef def;
  def.name = name;
  def.min_inputs = def.max_inputs = inputs;
  def.infer = std::move(infer);
  return def;
}
MNNPY_REGISTER_OP(fixed_def("QLinearAveragePool", 5, infer_average_pool));
MNNPY_REGISTER_OP(fixed_def("QLinearGlobalAveragePool", 5, infer_global_average_pool));
MNNPY_REGISTER_OP(fixed_def("MaxPool2DInt8", 1, infer_max_pool));

// ---------------------------------------------------------------- QLinearSoftmax
std::vector<TensorType> infer_softmax(const std::vector<TensorType>& in, Attrs&) {
  const std::string op = "QLinearSoftmax";
  const TensorType& x = in[0];
  check_data(op, "x", x);
  if (x.shape.empty()) throw ValueError(op + ": x must have at least 1 dimension, got a scalar");
  check_scale(op, "x_scale", in[1]);
  check_zero(op, "x_zero_point", in[2], x.dtype);
  check_scale(op, "y_scale", in[3]);
  check_data(op, "y_zero_point", in[4]);
  if (in[4].numel() != 1) throw ValueError(op + ": y_zero_point must hold one value, got shape " + shape_str(in[4].shape));
  return {TensorType{in[4].dtype, x.shape}};
}
MNNPY_REGISTER_OP(fixed_def("QLinearSoftmax", 5, infer_softmax));

// ---------------------------------------------------------------- QuantizeLinear
std::vector<TensorType> infer_quantize(const std::vector<TensorType>& in, Attrs& attrs) {
  const std::string op = "QuantizeLinear";
  if (in[0].dtype != DType::Float32) throw TypeError(op + ": x must be float32, got " + dtype_name(in[0].dtype));
  check_scale(op, "y_scale", in[1]);
  check_data(op, "y_zero_point", in[2]);
  check_zero(op, "y_zero_point", in[2], in[2].dtype);
  Shape out = in[0].shape;
  if (channels_last_attr(op, attrs)) {
    if (out.size() != 4) throw ValueError(op + ": channels_last needs a 4-D x, got shape " + shape_str(out));
    out = Shape{out[0], out[2], out[3], out[1]};
  }
  return {TensorType{in[2].dtype, out}};
}
MNNPY_REGISTER_OP(fixed_def("QuantizeLinear", 3, infer_quantize));

// ---------------------------------------------------------------- QLinearConcat
std::vector<TensorType> infer_concat(const std::vector<TensorType>& in, Attrs& attrs) {
  const std::string op = "QLinearConcat";
  if (in.size() < 5 || (in.size() - 2) % 3 != 0) {
    throw ValueError(op + ": takes y_scale, y_zero_point and then (x, x_scale, x_zero_point) for each input; got " +
                     std::to_string(in.size()) + " inputs");
  }
  const DType t = in[1].dtype;
  check_data(op, "y_zero_point", in[1]);
  check_zero(op, "y_zero_point", in[1], t);
  check_scale(op, "y_scale", in[0]);
  const TensorType& first = in[2];
  const int64_t rank = (int64_t)first.shape.size();
  if (rank == 0) throw ValueError(op + ": the inputs must have at least one dimension, got a scalar");
  int64_t axis = attrs.get_int("axis", 1);
  if (axis < -rank || axis >= rank) {
    throw ValueError(op + ": axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  if (axis < 0) axis += rank;
  attrs.set("axis", axis);
  Shape out = first.shape;
  out[axis] = 0;
  for (size_t i = 2; i < in.size(); i += 3) {
    const std::string which = "input " + std::to_string((i - 2) / 3);
    const TensorType& x = in[i];
    if (x.dtype != t) {
      throw TypeError(op + ": " + which + " must be " + dtype_name(t) + " (the output's type), got " +
                      dtype_name(x.dtype));
    }
    check_scale(op, (which + "'s scale").c_str(), in[i + 1]);
    check_zero(op, (which + "'s zero point").c_str(), in[i + 2], t);
    bool fits = (int64_t)x.shape.size() == rank;
    for (int64_t d = 0; fits && d < rank; ++d) fits = d == axis || x.shape[d] == first.shape[d];
    if (!fits) {
      throw ValueError(op + ": " + which + " has shape " + shape_str(x.shape) + ", which does not match " +
                       shape_str(first.shape) + " outside axis " + std::to_string(axis));
    }
    out[axis] += x.shape[axis];
  }
  return {TensorType{t, out}};
}

OpDef concat_def() {
  OpDef def;
  def.name = "QLinearConcat";
  def.min_inputs = 5;
  def.max_inputs = -1;
  def.infer = infer_concat;
  return def;
}
MNNPY_REGISTER_OP(concat_def());

}  // namespace

}  // namespace mnnpy
