// Depthwise 8-bit convolution on channels-last (NHWC) tensors for QLinearConv2D
// (quantized_conv_kernels.cpp), compiled per SIMD target: the channels of a pixel are the vector
// lanes, each tap adds (x - x_zero) * (w - w_zero) in int32 (exact, modulo 2^32 as ONNX's int32),
// and the sums plus the bias are requantized as QLinearConv defines (requant_int8-inl.h). Every
// target gives the same bytes.
#pragma once
#include <cstdint>

namespace mnnpy {
class ThreadPool;
namespace cpu {

struct DepthwiseInt8Nhwc {
  int64_t batch = 0, channels = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 0, kernel_w = 0, stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  const void* x = nullptr;  // [batch, in_h, in_w, channels], int8 when x_signed else uint8
  bool x_signed = false;
  int32_t x_zero = 0;
  const int32_t* taps = nullptr;        // w - w_zero, [kernel_h * kernel_w, channels]
  const int32_t* bias = nullptr;        // [channels]
  const double* multiplier = nullptr;   // [channels]: x_scale * w_scale / y_scale
  double out_zero = 0.0, out_low = 0.0, out_high = 255.0;  // int8 output when out_low < 0
  void* y = nullptr;                    // [batch, out_h, out_w, channels]
};

void depthwise_int8_nhwc(const DepthwiseInt8Nhwc& args, ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
