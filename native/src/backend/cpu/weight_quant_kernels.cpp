// CPU kernel of WeightQuantMatMul (ops/weight_quant.cpp): the codes are read where they lie (a
// model file's mapping), never expanded to a float copy of the weights.
#include <memory>

#include "backend/cpu/weight_quant.h"
#include "mnnpy/backend.h"

namespace mnnpy {

namespace {

class WeightQuantMatMulKernel : public Kernel {
 public:
  explicit WeightQuantMatMulKernel(const KernelContext& ctx) {
    const Shape& x = ctx.input_types[0].shape;
    for (size_t i = 0; i + 1 < x.size(); ++i) m_ *= x[i];
    weights_.k = x.back();
    weights_.n = ctx.input_types[1].shape[0];
    weights_.bits = (int)ctx.attrs.get_int("bits");
    weights_.block = (int)ctx.attrs.get_int("block");
    asymmetric_ = ctx.attrs.get_int("asymmetric") != 0;
    int8_activations_ = ctx.attrs.get_int("int8_activations", 0) != 0;
    has_bias_ = ctx.input_types.size() == (asymmetric_ ? 5u : 4u);
  }

  size_t scratch_bytes() const override {
    return int8_activations_ ? cpu::weight_quant_int8_scratch_bytes(m_, weights_)
                             : cpu::weight_quant_scratch_floats(m_, weights_) * sizeof(float);
  }
  double flops() const override { return 2.0 * (double)m_ * weights_.n * weights_.k; }
  const char* scheme() const override {
    if (int8_activations_) return "int8 activations";
    return m_ <= cpu::kWeightQuantGemvRows ? "gemv" : "dequantize+gemm";
  }

  void execute(const KernelArgs& args, void* scratch) const override {
    float* c = args.outputs[0]->ptr<float>();
    if (args.outputs[0]->numel() == 0) return;
    if (weights_.k == 0) {
      const float* bias = has_bias_ ? args.inputs.back()->ptr<float>() : nullptr;
      for (int64_t i = 0; i < m_; ++i)
        for (int64_t j = 0; j < weights_.n; ++j) c[i * weights_.n + j] = bias ? bias[j] : 0.0f;
      return;
    }
    cpu::BlockQuantWeights w = weights_;
    w.codes = args.inputs[1]->ptr<uint8_t>();
    w.scales = args.inputs[2]->ptr<float>();
    w.zeros = asymmetric_ ? args.inputs[3]->ptr<uint8_t>() : nullptr;
    const float* bias = has_bias_ ? args.inputs.back()->ptr<float>() : nullptr;
    if (int8_activations_) cpu::weight_quant_matmul_int8(args.inputs[0]->ptr<float>(), m_, w, bias, c, scratch, args.pool);
    else cpu::weight_quant_matmul(args.inputs[0]->ptr<float>(), m_, w, bias, c, static_cast<float*>(scratch), args.pool);
  }

 private:
  int64_t m_ = 1;
  cpu::BlockQuantWeights weights_;
  bool asymmetric_ = false, has_bias_ = false, int8_activations_ = false;
};

MNNPY_REGISTER_KERNEL("WeightQuantMatMul", "cpu", construct_kernel<WeightQuantMatMulKernel>);

}  // namespace

}  // namespace mnnpy
