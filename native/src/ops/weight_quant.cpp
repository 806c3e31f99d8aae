// WeightQuantMatMul: y = x W^T (+ bias) with W stored as block-quantized integer codes, the
// weight-only quantization of LLM linear layers (MNN's --weightQuantBits / --weightQuantBlock).
//   inputs: x (float32, [..., K]), codes (uint8, [N, K * bits / 8]), scales (float32,
//           [N, K / block]), then zeros (uint8, [N, K / block]) when asymmetric, then an
//           optional bias (float32, [N])
//   attrs:  bits (4 or 8), block (32, 64 or 128; divides K), asymmetric (0 or 1),
//           int8_activations (0 or 1: x quantized to int8 per 32 k at run time, integer products;
//           MNN's memory mode "low", backend/cpu/weight_quant.h)
//   output: float32, [..., N]
// W has one row per output feature (torch's Linear.weight, MNN's layout) and its blocks run along
// K. Element (n, k) is (u - z) * scale[n, k / block], u its unsigned code and z the block's zero
// point (2^(bits-1) when symmetric). int4 codes are two per byte, the lower k in the high nibble.
// Inference only: the weights are constants, and a model is trained with float weights.
#include <string>
#include <vector>

#include "mnnpy/op_registry.h"

namespace mnnpy {

namespace {

void expect(bool ok, const std::string& message) {
  if (!ok) throw ValueError("WeightQuantMatMul: " + message);
}

void expect_dtype(const TensorType& t, DType want, const char* what) {
  if (t.dtype != want) {
    throw TypeError(std::string("WeightQuantMatMul: ") + what + " must be " + dtype_name(want) + ", got " +
                    dtype_name(t.dtype));
  }
}

std::vector<TensorType> infer_weight_quant_matmul(const std::vector<TensorType>& in, Attrs& attrs) {
  const int64_t bits = attrs.get_int("bits", 0), block = attrs.get_int("block", 0);
  const int64_t asymmetric = attrs.get_int("asymmetric", 0);
  const int64_t int8_activations = attrs.get_int("int8_activations", 0);
  expect(bits == 4 || bits == 8, "bits must be 4 or 8, got " + std::to_string(bits));
  expect(block == 32 || block == 64 || block == 128, "block must be 32, 64 or 128, got " + std::to_string(block));
  expect(asymmetric == 0 || asymmetric == 1, "asymmetric must be 0 or 1, got " + std::to_string(asymmetric));
  expect(int8_activations == 0 || int8_activations == 1,
         "int8_activations must be 0 or 1, got " + std::to_string(int8_activations));
  attrs.set("bits", bits).set("block", block).set("asymmetric", asymmetric).set("int8_activations", int8_activations);
  const size_t required = 3 + (size_t)asymmetric;
  expect(in.size() == required || in.size() == required + 1,
         "takes x, codes, scales" + std::string(asymmetric ? ", zeros" : "") + " and an optional bias; got " +
             std::to_string(in.size()) + " inputs");
  expect_dtype(in[0], DType::Float32, "x");
  expect_dtype(in[1], DType::UInt8, "codes");
  expect_dtype(in[2], DType::Float32, "scales");
  const Shape& x = in[0].shape;
  expect(!x.empty(), "x must have at least one dimension, got a scalar");
  const int64_t K = x.back();
  expect(K % block == 0, "the block " + std::to_string(block) + " does not divide K = " + std::to_string(K) +
                             " (x's last dimension)");
  const Shape& codes = in[1].shape;
  expect(codes.size() == 2 && codes[1] * 8 == K * bits,
         "codes have shape " + shape_str(codes) + ", expected (N, " + std::to_string(K * bits / 8) + ") for K = " +
             std::to_string(K) + " at " + std::to_string(bits) + " bits");
  const int64_t N = codes[0];
  const Shape per_block{N, K / block};
  expect(in[2].shape == per_block,
         "scales have shape " + shape_str(in[2].shape) + ", expected one per block " + shape_str(per_block));
  if (asymmetric) {
    expect_dtype(in[3], DType::UInt8, "zeros");
    expect(in[3].shape == per_block,
           "zeros have shape " + shape_str(in[3].shape) + ", expected one per block " + shape_str(per_block));
  }
  if (in.size() == required + 1) {
    expect_dtype(in[required], DType::Float32, "bias");
    expect(in[required].shape == Shape{N},
           "bias has shape " + shape_str(in[required].shape) + ", expected (" + std::to_string(N) + ",)");
  }
  Shape out = x;
  out.back() = N;
  return {TensorType{DType::Float32, out}};
}

OpDef weight_quant_matmul_def() {
  OpDef def;
  def.name = "WeightQuantMatMul";
  def.min_inputs = 3;
  def.max_inputs = 5;
  def.infer = infer_weight_quant_matmul;
  // The codes, scales, zero points and bias are a model's weights: a device backend keeps them
  // in its memory instead of copying them at every run.
  def.resident_inputs = (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4);
  return def;
}

MNNPY_REGISTER_OP(weight_quant_matmul_def());

}  // namespace

}  // namespace mnnpy
