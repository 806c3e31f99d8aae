// What the convolution ops (Conv2D, Conv2DBlocked) share: their attributes (strides, pads,
// dilations, group, fused activation) with defaults and checks, the output geometry, aligned
// storage for packed weights, and the gradient of the fused activation. Every message starts with the op's name.
#pragma once
#include <cmath>
#include <cstdint>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "mnnpy/aligned_memory.h"
#include "mnnpy/graph.h"
#include "mnnpy/op_registry.h"
#include "ops/blocked_layout.h"
#include "ops/conv_shape.h"
#include "ops/grad_common.h"

namespace mnnpy {
namespace conv_common {

// Aligned storage for packed weights (allocate_aligned): kernels load whole weight panels as vectors.
template <class T> struct Aligned64 {
  using value_type = T;
  Aligned64() = default;
  template <class U> Aligned64(const Aligned64<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(allocate_aligned(n * sizeof(T))); }
  void deallocate(T* p, size_t) { std::free(p); }
  // resize() leaves new elements uninitialized: every packer writes its whole buffer (the same
  // packers fill uninitialized arena scratch when the weights are not constant), and zeroing
  // first would touch each page twice.
  template <class U> void construct(U* p) noexcept { ::new (static_cast<void*>(p)) U; }
  template <class U, class... Args> void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  template <class U> bool operator==(const Aligned64<U>&) const { return true; }
  template <class U> bool operator!=(const Aligned64<U>&) const { return false; }
};
using AlignedFloats = std::vector<float, Aligned64<float>>;

struct ConvAttrs {
  std::vector<int64_t> strides, pads, dilations;  // pads: top, left, bottom, right
  int64_t group = 1, activation = 0;
};

inline std::vector<int64_t> int_list(const Attrs& attrs, const std::string& op, const char* key,
                                     std::vector<int64_t> fallback, size_t size) {
  std::vector<int64_t> v = attrs.has(key) ? attrs.get_ints(key) : std::move(fallback);
  if (v.size() != size) {
    throw ValueError(op + ": attribute '" + key + "' needs " + std::to_string(size) + " values, got " +
                     std::to_string(v.size()));
  }
  return v;
}

// Fills the defaults into attrs and checks them.
inline ConvAttrs read_conv_attrs(Attrs& attrs, const std::string& op) {
  ConvAttrs a;
  a.strides = int_list(attrs, op, "strides", {1, 1}, 2);
  a.pads = int_list(attrs, op, "pads", {0, 0, 0, 0}, 4);
  a.dilations = int_list(attrs, op, "dilations", {1, 1}, 2);
  a.group = attrs.get_int("group", 1);
  a.activation = attrs.get_int("activation", 0);
  for (int64_t v : a.strides)
    if (v <= 0) throw ValueError(op + ": strides must be positive, got " + shape_str(a.strides));
  for (int64_t v : a.dilations)
    if (v <= 0) throw ValueError(op + ": dilations must be positive, got " + shape_str(a.dilations));
  for (int64_t v : a.pads)
    if (v < 0) throw ValueError(op + ": pads must be non-negative, got " + shape_str(a.pads));
  if (a.group <= 0) throw ValueError(op + ": group must be positive, got " + std::to_string(a.group));
  if (a.activation < 0 || a.activation >= kConvActCount) {
    throw ValueError(op + ": unknown activation code " + std::to_string(a.activation) + " (expected 0.." +
                     std::to_string(kConvActCount - 1) + ")");
  }
  attrs.set("strides", a.strides).set("pads", a.pads).set("dilations", a.dilations).set("group", a.group);
  attrs.set("activation", a.activation);
  return a;
}

// TypeError unless every input is float32; names[i] says what input i is.
inline void check_float32(const std::vector<TensorType>& in, const std::string& op,
                          const std::vector<const char*>& names) {
  for (size_t i = 0; i < in.size() && i < names.size(); ++i) {
    if (in[i].dtype != DType::Float32) {
      throw TypeError(op + ": " + names[i] + " must be float32, got " + dtype_name(in[i].dtype));
    }
  }
}

// Completes s from the weight's shape and the attributes, given the input's batch, channels and
// spatial size already in s; checks channels, groups, the bias and that the output is not empty.
inline void finish_conv_shape(ConvShape& s, const ConvAttrs& a, const Shape& w, const Shape* bias,
                              const std::string& op) {
  if (w.size() != 4) throw ValueError(op + ": weight must be 4-D (Cout, C/group, kh, kw), got shape " + shape_str(w));
  s.out_c = w[0], s.kernel_h = w[2], s.kernel_w = w[3];
  s.stride_h = a.strides[0], s.stride_w = a.strides[1];
  s.pad_top = a.pads[0], s.pad_left = a.pads[1];
  s.dilation_h = a.dilations[0], s.dilation_w = a.dilations[1];
  s.group = a.group;
  if (s.out_c <= 0 || w[1] <= 0 || s.kernel_h <= 0 || s.kernel_w <= 0) {
    throw ValueError(op + ": weight shape " + shape_str(w) + " has an empty dimension");
  }
  if (s.in_c != a.group * w[1]) {
    throw ValueError(op + ": input has " + std::to_string(s.in_c) + " channels but weight " + shape_str(w) +
                     " with group " + std::to_string(a.group) + " expects " + std::to_string(a.group * w[1]));
  }
  if (s.out_c % a.group != 0) {
    throw ValueError(op + ": " + std::to_string(s.out_c) + " output channels do not split into " +
                     std::to_string(a.group) + " groups");
  }
  if (bias && (bias->size() != 1 || (*bias)[0] != s.out_c)) {
    throw ValueError(op + ": bias must have shape (" + std::to_string(s.out_c) + ",), got " + shape_str(*bias));
  }
  const int64_t span_h = s.dilation_h * (s.kernel_h - 1) + 1, span_w = s.dilation_w * (s.kernel_w - 1) + 1;
  const int64_t padded_h = s.in_h + a.pads[0] + a.pads[2], padded_w = s.in_w + a.pads[1] + a.pads[3];
  if (padded_h < span_h || padded_w < span_w) {
    throw ValueError(op + ": kernel of extent (" + std::to_string(span_h) + ", " + std::to_string(span_w) +
                     ") is larger than the padded input (" + std::to_string(padded_h) + ", " +
                     std::to_string(padded_w) + "): the output would be empty");
  }
  s.out_h = (padded_h - span_h) / s.stride_h + 1;
  s.out_w = (padded_w - span_w) / s.stride_w + 1;
}

// A residual added before the activation must be float32 and shaped like the output.
inline void check_residual(const TensorType& residual, const Shape& output, const std::string& op) {
  if (residual.dtype != DType::Float32) {
    throw TypeError(op + ": residual must be float32, got " + dtype_name(residual.dtype));
  }
  if (residual.shape != output) {
    throw ValueError(op + ": residual must have the output's shape " + shape_str(output) + ", got " +
                     shape_str(residual.shape));
  }
}

// Where Conv2D's optional inputs are (-1: absent): with the attribute `residual` set, the last input
// is the residual (3 inputs: no bias, 4: bias and residual); otherwise input 2, where given, is the bias.
struct Conv2DInputs {
  int bias = -1, residual = -1;
};

inline Conv2DInputs conv2d_inputs(size_t count, const Attrs& attrs) {
  Conv2DInputs at;
  const bool residual = attrs.get_int("residual", 0) != 0;
  if (residual && count < 3) {
    throw ValueError("Conv2D: attribute residual=1 needs the residual as the last of 3 or 4 inputs, got " +
                     std::to_string(count) + " inputs");
  }
  if (!residual && count > 3) {
    throw ValueError("Conv2D: a fourth input (the residual) needs the attribute residual=1");
  }
  if (residual) at.residual = (int)count - 1;
  if (count == 4 || (!residual && count == 3)) at.bias = 2;
  return at;
}

// Conv2D: fills defaults into attrs, checks them and returns the geometry (batch and spatial sizes
// from the input types).
inline ConvShape conv2d_shape(const std::vector<TensorType>& in, Attrs& attrs) {
  const ConvAttrs a = read_conv_attrs(attrs, "Conv2D");
  const Conv2DInputs at = conv2d_inputs(in.size(), attrs);
  check_float32(in, "Conv2D", {"input", "weight", at.bias == 2 ? "bias" : "residual"});
  const TensorType& x = in[0];
  if (x.shape.size() != 4) throw ValueError("Conv2D: input must be 4-D (N, C, H, W), got shape " + shape_str(x.shape));
  ConvShape s;
  s.batch = x.shape[0], s.in_c = x.shape[1], s.in_h = x.shape[2], s.in_w = x.shape[3];
  finish_conv_shape(s, a, in[1].shape, at.bias >= 0 ? &in[at.bias].shape : nullptr, "Conv2D");
  if (at.residual >= 0) check_residual(in[at.residual], Shape{s.batch, s.out_c, s.out_h, s.out_w}, "Conv2D");
  return s;
}

// Conv2DBlocked: the geometry, whether the input is NCHW (else blocked) and whether the layer is
// depthwise; fills defaults into attrs and checks them.
struct BlockedConvShape {
  ConvShape s;
  bool nchw_input = false;
  bool depthwise = false;
};

inline BlockedConvShape blocked_conv_shape(const std::vector<TensorType>& in, Attrs& attrs) {
  const char* const kOp = "Conv2DBlocked";
  const ConvAttrs a = read_conv_attrs(attrs, kOp);
  check_float32(in, kOp, {"input", "weight", "bias", "residual"});
  BlockedConvShape b;
  ConvShape& s = b.s;
  const Shape& x = in[0].shape;
  if (x.size() == 5) {
    if (x[4] != kChannelBlock) {
      throw ValueError(std::string(kOp) + ": blocked input [N, C/8, H, W, 8] must end in 8 channels, got shape " +
                       shape_str(x));
    }
    s.batch = x[0], s.in_c = x[1] * kChannelBlock, s.in_h = x[2], s.in_w = x[3];
  } else if (x.size() == 4) {
    b.nchw_input = true;
    s.batch = x[0], s.in_c = x[1], s.in_h = x[2], s.in_w = x[3];
  } else {
    throw ValueError(std::string(kOp) + ": input must be blocked 5-D (N, C/8, H, W, 8) or NCHW 4-D, got shape " +
                     shape_str(x));
  }
  finish_conv_shape(s, a, in[1].shape, &in[2].shape, kOp);
  if (s.out_c % kChannelBlock != 0) {
    throw ValueError(std::string(kOp) + ": output channels must be a multiple of 8 for the blocked layout, got " +
                     std::to_string(s.out_c));
  }
  if (s.group != 1) {
    if (!s.is_depthwise()) {
      throw ValueError(std::string(kOp) + ": group " + std::to_string(s.group) + " is not supported: only group 1 " +
                       "or depthwise (group == C == Cout, here C " + std::to_string(s.in_c) + ", Cout " +
                       std::to_string(s.out_c) + ")");
    }
    if (b.nchw_input) {
      throw ValueError(std::string(kOp) + ": a depthwise layer needs blocked input (N, C/8, H, W, 8), got NCHW " +
                       shape_str(x));
    }
    b.depthwise = true;
  }
  if (in.size() > 3) {
    check_residual(in[3], Shape{s.batch, s.out_c / kChannelBlock, s.out_h, s.out_w, kChannelBlock}, kOp);
  }
  return b;
}

// The fused activation named by the (checked) attributes.
inline ConvActivation conv_activation(const Attrs& attrs) {
  auto float_attr = [&](const char* key, double fallback) {
    return (float)(attrs.has(key) ? attrs.get_float(key) : fallback);
  };
  ConvActivation act;
  act.code = (int)attrs.get_int("activation", 0);
  if (act.code == kConvActClip) {
    act.p0 = float_attr("clip_min", 0.0);
    act.p1 = float_attr("clip_max", 6.0);
  } else if (act.code == kConvActHardSigmoid) {
    act.p0 = float_attr("alpha", 0.2);
    act.p1 = float_attr("beta", 0.5);
  }
  return act;
}

// The attributes the convolution ops and their gradient ops share.
inline Attrs geometry_attrs(const Attrs& from) {
  Attrs a;
  a.set("strides", from.get_ints("strides")).set("pads", from.get_ints("pads"));
  a.set("dilations", from.get_ints("dilations")).set("group", from.get_int("group", 1));
  return a;
}

// The gradient of a convolution's fused activation, as g times act'(z) for the pre-activation z; from the
// output y where it determines the derivative, else from z recomputed by the same convolution
// without the activation (silu, hardswish, gelu: one more forward convolution).
inline Var activation_grad(const GradContext& c, const Var& g, const std::string& op) {
  using namespace grad;
  const Attrs& attrs = c.node.attrs;
  const ConvActivation act = conv_common::conv_activation(attrs);
  const Var& y = c.outputs[0];
  auto mask = [&](const Var& m) { return mul(g, as_dtype_of(m, g)); };
  auto inside = [&](const Var& v, double lo, double hi) {
    return binary("LogicalAnd", binary("Greater", v, scalar_like(v, lo)), binary("Less", v, scalar_like(v, hi)));
  };
  auto pre_activation = [&]() {
    Attrs plain = attrs;
    plain.set("activation", (int64_t)kConvActNone);
    return make_op(op, c.node.inputs, plain);
  };
  switch (act.code) {
    case kConvActNone: return g;
    case kConvActRelu: return mask(binary("Greater", y, scalar_like(y, 0)));
    case kConvActClip: return mask(inside(y, act.p0, act.p1));
    case kConvActSigmoid: return mul(g, mul(y, sub(scalar_like(y, 1), y)));
    case kConvActHardSigmoid: return scale(mask(inside(y, 0, 1)), act.p0);
    case kConvActSilu: {
      const Var z = pre_activation(), s = unary("Sigmoid", z);
      return mul(g, mul(s, add(scalar_like(z, 1), mul(z, sub(scalar_like(z, 1), s)))));
    }
    case kConvActHardSwish: {
      // 0 below -3, 1 above 3, z / 3 + 1 / 2 between (as PyTorch: the middle includes 3).
      const Var z = pre_activation();
      const Var middle = add(scale(z, 1.0 / 3.0), scalar_like(z, 0.5));
      const Var d = where(binary("Less", z, scalar_like(z, -3)), scalar_like(z, 0),
                          where(binary("LessEqual", z, scalar_like(z, 3)), middle, scalar_like(z, 1)));
      return mul(g, d);
    }
    case kConvActGelu: {
      // d/dz z * Phi(z) = Phi(z) + z * phi(z)
      const double kPi = 3.14159265358979323846;
      const Var z = pre_activation();
      const Var cdf = scale(add(scalar_like(z, 1), unary("Erf", scale(z, 1 / std::sqrt(2.0)))), 0.5);
      const Var pdf = scale(unary("Exp", scale(mul(z, z), -0.5)), 1 / std::sqrt(2 * kPi));
      return mul(g, add(cdf, mul(z, pdf)));
    }
    default: break;
  }
  throw ValueError("grad: " + op + " with fused activation code " + std::to_string(act.code) + " has no gradient rule");
}

}  // namespace conv_common
}  // namespace mnnpy
