// Depthwise 8-bit convolution on channels-last (NHWC) tensors for QLinearConv2D
// (quantized_conv_kernels.cpp), compiled per SIMD target: the channels of a pixel are the vector
// lanes, each tap adds (x - x_zero) * (w - w_zero) in int32 (exact, modulo 2^32 as ONNX's int32),
// and the sums plus the bias are requantized as QLinearConv defines (requant_int8-inl.h). Every
// target gives the same bytes.
#pragma once
#include <cstdint>
#include <vector>

namespace mnnpy {
class ThreadPool;
namespace cpu {

// The weights in the forms the kernel reads, made once per layer (prepare_depthwise_int8).
struct DepthwiseInt8Weights {
  std::vector<int32_t> taps;         // w - w_zero, [kernel_h * kernel_w, channels]
  std::vector<int32_t> weight_sums;  // per channel, of taps (modulo 2^32)
  // Where every centred weight fits int16 (always for 8-bit weights): tap pairs interleaved for
  // the x86 kernels, in blocks of 16 channels and of 32 (empty below 16 or 32 channels).
  std::vector<int16_t> pairs16, pairs32;
  // Where every centred weight fits int8: the weights of the 2x2 input blocks that the VNNI
  // kernel multiplies by vpdpbusd (see block_weights in depthwise_int8.cpp), and their grid.
  std::vector<int8_t> blocks;
  int64_t block_rows = 0, block_cols = 0;
};

// w: [channels, kernel_h * kernel_w] as ONNX stores a depthwise layer (int8 when w_signed else
// uint8); w_zero: the zero point of each channel.
DepthwiseInt8Weights prepare_depthwise_int8(const void* w, bool w_signed, const int32_t* w_zero, int64_t channels,
                                            int64_t kernel_h, int64_t kernel_w);

struct DepthwiseInt8Nhwc {
  int64_t batch = 0, channels = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 0, kernel_w = 0, stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  const void* x = nullptr;  // [batch, in_h, in_w, channels], int8 when x_signed else uint8
  bool x_signed = false;
  int32_t x_zero = 0;
  const DepthwiseInt8Weights* weights = nullptr;
  const int32_t* bias = nullptr;        // [channels]
  const float* multiplier = nullptr;    // [channels]: x_scale * w_scale / y_scale
  int32_t out_zero = 0, out_low = 0, out_high = 255;  // int8 output when out_low < 0
  void* y = nullptr;                    // [batch, out_h, out_w, channels]
};

void depthwise_int8_nhwc(const DepthwiseInt8Nhwc& args, ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
