// The geometry of a 2-D convolution and the codes of its fused activation: what the convolution
// ops (ops/conv*.cpp) infer and the kernels of every backend run with.
#pragma once
#include <cstdint>

namespace mnnpy {

struct ConvShape {
  int64_t batch = 0, in_c = 0, in_h = 0, in_w = 0;
  int64_t out_c = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 0, kernel_w = 0;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0;  // bottom/right padding only shapes out_h/out_w
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t group = 1;

  int64_t in_c_per_group() const { return in_c / group; }
  int64_t out_c_per_group() const { return out_c / group; }
  int64_t depth() const { return in_c_per_group() * kernel_h * kernel_w; }  // K of the GEMM
  bool is_pointwise() const {  // 1x1, stride 1, no padding: the input is the column matrix
    return kernel_h == 1 && kernel_w == 1 && stride_h == 1 && stride_w == 1 && pad_top == 0 && pad_left == 0 &&
           out_h == in_h && out_w == in_w;
  }
  bool is_depthwise() const { return group == in_c && group == out_c; }
};

// Activation codes of the Conv2D op's `activation` attribute.
enum ConvActivationCode : int {
  kConvActNone = 0,
  kConvActRelu = 1,
  kConvActClip = 2,         // min(max(x, p0), p1)
  kConvActSigmoid = 3,
  kConvActSilu = 4,         // x * sigmoid(x)
  kConvActHardSwish = 5,    // x * relu6(x + 3) / 6
  kConvActGelu = 6,         // erf form
  kConvActHardSigmoid = 7,  // max(0, min(1, p0 * x + p1))
  kConvActCount = 8,
};
struct ConvActivation {
  int code = kConvActNone;
  float p0 = 0.f, p1 = 0.f;  // clip min/max, or hard-sigmoid alpha/beta
};

}  // namespace mnnpy
