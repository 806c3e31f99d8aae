// The shape rules of the convolution gradient ops (ops/conv_backward.cpp), which their kernels
// share: Conv2DBackpropInput (dy, w[, bias], attr input_size) and Conv2DBackpropFilter (x, dy, attr
// kernel_size), with the forward's geometry attributes. Each fills defaults into attrs and checks them.
#pragma once
#include <string>
#include <vector>

#include "ops/conv_common.h"

namespace mnnpy {
namespace conv_common {

constexpr const char* kInputGradOp = "Conv2DBackpropInput";
constexpr const char* kFilterGradOp = "Conv2DBackpropFilter";

inline std::vector<int64_t> positive_pair(const Attrs& attrs, const std::string& op, const char* key) {
  if (!attrs.has(key)) throw ValueError(op + ": the '" + key + "' attribute is required");
  const std::vector<int64_t> v = int_list(attrs, op, key, {}, 2);
  if (v[0] <= 0 || v[1] <= 0) throw ValueError(op + ": '" + key + "' must be positive, got " + shape_str(v));
  return v;
}

inline void check_4d(const Shape& s, const std::string& op, const char* what) {
  if (s.size() != 4) throw ValueError(op + ": " + what + " must be 4-D, got shape " + shape_str(s));
  for (int64_t d : s)
    if (d < 0) throw ValueError(op + ": " + what + " has a negative dimension: " + shape_str(s));
}

// The geometry from the attributes and sizes; checks groups and channels.
inline ConvShape backprop_shape(const std::string& op, Attrs& attrs, int64_t batch, int64_t in_c, int64_t in_h,
                                int64_t in_w, int64_t out_c, int64_t out_h, int64_t out_w, int64_t kh, int64_t kw) {
  const ConvAttrs a = read_conv_attrs(attrs, op);
  if (a.activation != 0) throw ValueError(op + ": a fused activation is not supported");
  if (in_c % a.group != 0 || out_c % a.group != 0) {
    throw ValueError(op + ": channels (" + std::to_string(in_c) + " in, " + std::to_string(out_c) +
                     " out) do not split into " + std::to_string(a.group) + " groups");
  }
  ConvShape s;
  s.batch = batch, s.in_c = in_c, s.in_h = in_h, s.in_w = in_w;
  s.out_c = out_c, s.out_h = out_h, s.out_w = out_w;
  s.kernel_h = kh, s.kernel_w = kw;
  s.stride_h = a.strides[0], s.stride_w = a.strides[1];
  s.pad_top = a.pads[0], s.pad_left = a.pads[1];
  s.dilation_h = a.dilations[0], s.dilation_w = a.dilations[1];
  s.group = a.group;
  return s;
}

inline ConvShape input_grad_shape(const std::vector<TensorType>& in, Attrs& attrs) {
  check_float32(in, kInputGradOp, {"output gradient", "weight", "bias"});
  const Shape &dy = in[0].shape, &w = in[1].shape;
  check_4d(dy, kInputGradOp, "output gradient");
  check_4d(w, kInputGradOp, "weight");
  if (w[0] != dy[1]) {
    throw ValueError(std::string(kInputGradOp) + ": weight " + shape_str(w) + " has " + std::to_string(w[0]) +
                     " output channels but the output gradient " + shape_str(dy) + " has " + std::to_string(dy[1]));
  }
  if (w[1] <= 0 || w[2] <= 0 || w[3] <= 0) {
    throw ValueError(std::string(kInputGradOp) + ": weight shape " + shape_str(w) + " has an empty dimension");
  }
  const std::vector<int64_t> size = positive_pair(attrs, kInputGradOp, "input_size");
  attrs.set("input_size", size);
  const int64_t group = attrs.get_int("group", 1);
  const ConvShape s =
      backprop_shape(kInputGradOp, attrs, dy[0], w[1] * group, size[0], size[1], dy[1], dy[2], dy[3], w[2], w[3]);
  if (in.size() > 2 && (in[2].shape.size() != 1 || in[2].shape[0] != s.in_c)) {
    throw ValueError(std::string(kInputGradOp) + ": bias must have shape (" + std::to_string(s.in_c) + ",), got " +
                     shape_str(in[2].shape));
  }
  return s;
}

inline ConvShape filter_grad_shape(const std::vector<TensorType>& in, Attrs& attrs) {
  check_float32(in, kFilterGradOp, {"input", "output gradient"});
  const Shape &x = in[0].shape, &dy = in[1].shape;
  check_4d(x, kFilterGradOp, "input");
  check_4d(dy, kFilterGradOp, "output gradient");
  if (x[0] != dy[0]) {
    throw ValueError(std::string(kFilterGradOp) + ": input " + shape_str(x) + " and output gradient " + shape_str(dy) +
                     " have different batch sizes");
  }
  const std::vector<int64_t> k = positive_pair(attrs, kFilterGradOp, "kernel_size");
  attrs.set("kernel_size", k);
  return backprop_shape(kFilterGradOp, attrs, x[0], x[1], x[2], x[3], dy[1], dy[2], dy[3], k[0], k[1]);
}

}  // namespace conv_common
}  // namespace mnnpy
