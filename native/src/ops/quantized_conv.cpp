// QLinearConv2D: ONNX's QLinearConv on NCHW 8-bit tensors (its CPU kernel:
// backend/cpu/quantized_conv_kernels.cpp). Inputs in ONNX's order: x (int8/uint8 [N, C, H, W]),
// x_scale (float32, one), x_zero (x's type, one), w (int8/uint8 [OC, C/group, kh, kw]), w_scale
// (float32, one or OC), w_zero (w's type, one or OC), y_scale (float32, one), y_zero (int8/uint8,
// one: the output's type), bias (int32 [OC], optional). Attributes as Conv2D's (strides, pads,
// dilations, group) and activation 0 or 1 (ReLU: the output clamped below at y_zero).
//   acc = sum (x - x_zero)(w - w_zero) + bias  (int32)
//   y = saturate(round_half_even(float(acc) * float(x_scale * w_scale / y_scale)) + y_zero)
// in float32, as onnxruntime computes it (backend/cpu/requant_int8.h).
// Attribute channels_last (0 or 1, default 0): x is [N, H, W, C] and y [N, H, W, OC] instead
// (the fast layout of the int8 kernels; convert/_int8_layout.py switches fused models to it).
// Five more inputs (the bias then given) add a residual as ONNX's QLinearAdd of y and it:
// residual (y's type and shape), residual_scale, residual_zero, sum_scale, sum_zero (y's type);
// the output is the sum, y is not stored (convert/_qdq_fusion.py fuses residual connections so).
#include <string>

#include "mnnpy/op_registry.h"
#include "ops/conv_common.h"

namespace mnnpy {

namespace {
using namespace conv_common;

bool is_8bit(DType t) { return t == DType::Int8 || t == DType::UInt8; }

void check_count(const TensorType& t, const char* what, int64_t count, const char* per) {
  const int64_t n = t.numel();
  if (t.shape.size() > 1 || (n != 1 && n != count)) {
    throw ValueError(std::string("QLinearConv2D: ") + what + " must hold one value" +
                     (count > 1 ? std::string(" or one per ") + per + " (" + std::to_string(count) + ")" : "") +
                     ", got shape " + shape_str(t.shape));
  }
}

std::vector<TensorType> infer_qlinear_conv(const std::vector<TensorType>& in, Attrs& attrs) {
  const std::string op = "QLinearConv2D";
  const ConvAttrs a = read_conv_attrs(attrs, op);
  if (a.activation != kConvActNone && a.activation != kConvActRelu) {
    throw ValueError(op + ": activation must be 0 (none) or 1 (ReLU), got " + std::to_string(a.activation));
  }
  const TensorType &x = in[0], &w = in[3];
  if (!is_8bit(x.dtype) || !is_8bit(w.dtype) || !is_8bit(in[7].dtype)) {
    throw ValueError(op + ": x, w and y_zero must be int8 or uint8, got " + dtype_name(x.dtype) + ", " +
                     dtype_name(w.dtype) + " and " + dtype_name(in[7].dtype));
  }
  if (in[2].dtype != x.dtype) throw ValueError(op + ": x_zero must have x's type " + dtype_name(x.dtype));
  if (in[5].dtype != w.dtype) throw ValueError(op + ": w_zero must have w's type " + dtype_name(w.dtype));
  for (int i : {1, 4, 6}) {
    if (in[i].dtype != DType::Float32) {
      throw ValueError(op + ": the scales must be float32, got " + dtype_name(in[i].dtype));
    }
  }
  const int64_t channels_last = attrs.get_int("channels_last", 0);
  if (channels_last != 0 && channels_last != 1) {
    throw ValueError(op + ": channels_last must be 0 or 1, got " + std::to_string(channels_last));
  }
  attrs.set("channels_last", channels_last);
  if (x.shape.size() != 4) {
    throw ValueError(op + ": x must be 4-D (" + (channels_last ? "N, H, W, C" : "N, C, H, W") + "), got shape " +
                     shape_str(x.shape));
  }
  ConvShape s;
  if (channels_last) {
    s.batch = x.shape[0], s.in_h = x.shape[1], s.in_w = x.shape[2], s.in_c = x.shape[3];
  } else {
    s.batch = x.shape[0], s.in_c = x.shape[1], s.in_h = x.shape[2], s.in_w = x.shape[3];
  }
  const bool has_bias = in.size() > 8;
  if (has_bias && in[8].dtype != DType::Int32) {
    throw ValueError(op + ": the bias must be int32, got " + dtype_name(in[8].dtype));
  }
  finish_conv_shape(s, a, w.shape, has_bias ? &in[8].shape : nullptr, op);
  check_count(in[1], "x_scale", 1, "");
  check_count(in[2], "x_zero", 1, "");
  check_count(in[4], "w_scale", s.out_c, "output channel");
  check_count(in[5], "w_zero", s.out_c, "output channel");
  check_count(in[6], "y_scale", 1, "");
  check_count(in[7], "y_zero", 1, "");
  const Shape y_shape = channels_last ? Shape{s.batch, s.out_h, s.out_w, s.out_c} : Shape{s.batch, s.out_c, s.out_h, s.out_w};
  if (in.size() > 9) {
    if (in.size() != 14) {
      throw ValueError(op + ": a residual takes five inputs after the bias (residual, residual_scale, residual_zero, "
                            "sum_scale, sum_zero), got " + std::to_string(in.size() - 9));
    }
    if (in[9].dtype != in[7].dtype || in[9].shape != y_shape) {
      throw ValueError(op + ": the residual must have the output's type and shape " + dtype_name(in[7].dtype) + " " +
                       shape_str(y_shape) + ", got " + dtype_name(in[9].dtype) + " " + shape_str(in[9].shape));
    }
    for (int i : {10, 12}) {
      if (in[i].dtype != DType::Float32) {
        throw ValueError(op + ": the residual's and the sum's scales must be float32, got " + dtype_name(in[i].dtype));
      }
    }
    for (int i : {11, 13}) {
      if (in[i].dtype != in[7].dtype) {
        throw ValueError(op + ": the residual's and the sum's zero points must have the output's type " +
                         dtype_name(in[7].dtype) + ", got " + dtype_name(in[i].dtype));
      }
    }
    check_count(in[10], "residual_scale", 1, "");
    check_count(in[11], "residual_zero", 1, "");
    check_count(in[12], "sum_scale", 1, "");
    check_count(in[13], "sum_zero", 1, "");
  }
  return {TensorType{in[7].dtype, y_shape}};
}

OpDef qlinear_conv_def() {
  OpDef def{"QLinearConv2D", 8, 14, infer_qlinear_conv, {}, false};
  // The weights, packed for the int8 GEMM at plan time, their zero points, which depthwise layers
  // fold into their prepared weights, and the scales, zero points and bias of the requantization
  // and of the residual's sum.
  def.packed_inputs = (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4) | (1u << 5) | (1u << 6) | (1u << 7) | (1u << 8) |
                      (1u << 10) | (1u << 11) | (1u << 12) | (1u << 13);
  return def;
}
MNNPY_REGISTER_OP(qlinear_conv_def());

}  // namespace

}  // namespace mnnpy
