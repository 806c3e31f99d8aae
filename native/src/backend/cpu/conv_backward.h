// Gradients of the float32 NCHW convolution on the CPU: with respect to its input (which is also
// the forward pass of a transposed convolution) and to its weights.
// Both are GEMMs over blocks of output pixels, per group, on the project's packed GEMM:
//   input:  cols[K x B] = W_g^T[K x Cout_g] * dy[Cout_g x B], then col2im adds cols into dx;
//   weight: dW_g[Cout_g x K] += dy[Cout_g x B] * im2col(x)^T[B x K], over every block of the batch;
// with K = C_g * kh * kw and B a block of output pixels (part of one image, or several whole images
// of small maps, so that thin layers still make one large product). The weight gradient of 3x3
// stride-1 layers with enough 2x2 output tiles is a Winograd F(3x3, 2x2) product instead (16
// multiplications per tile for 36), and depthwise layers (one input channel per output) are direct
// loops over planes. (The op also runs a stride-1 input gradient as a forward convolution with
// flipped weights: see ops/conv_backward.cpp.)
// The geometry is a ConvShape whose in_h/in_w are the convolution input's size and out_h/out_w the
// output gradient's: taps that land outside the input are dropped, so any output size works.
#pragma once
#include <cstddef>

#include "backend/cpu/conv.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

// Floats of scratch either gradient needs.
size_t conv_backward_scratch_floats(const ConvShape& s);

// dx[N, C, H, W] = conv^T(dy[N, Cout, Ho, Wo], w[Cout, C/group, kh, kw]) (+ bias[C] when not null).
void conv2d_backward_input(const ConvShape& s, const float* dy, const float* w, const float* bias, float* dx,
                           float* scratch, ThreadPool* pool);

// dw[Cout, C/group, kh, kw] = sum over the batch of dy (x) im2col(x).
// The scheme conv2d_backward_weight takes (for profiles).
const char* conv_backward_weight_scheme(const ConvShape& s);
void conv2d_backward_weight(const ConvShape& s, const float* x, const float* dy, float* dw, float* scratch,
                            ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
