// CPU kernels of MatMulInteger and DynamicQuantMatMul (ops/quantized_matmul.cpp) on the int8
// GEMM; a constant right-hand matrix is packed once at plan time.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/gemm_int8.h"
#include "backend/cpu/thread_buffers.h"
#include "mnnpy/backend.h"
#include "mnnpy/elementwise_program.h"
#include "mnnpy/thread_pool.h"
#include "ops/matmul_shape.h"

namespace mnnpy {

namespace {

// A zero point tensor (int8 or uint8, one value or one per index) as int32 values.
std::vector<int32_t> zero_points(const Tensor* t) {
  std::vector<int32_t> out((size_t)t->numel());
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = t->type.dtype == DType::Int8 ? (int32_t)t->ptr<int8_t>()[i] : (int32_t)t->ptr<uint8_t>()[i];
  }
  return out;
}

// MatMulInteger (int32 sums) and QLinearMatMul (the sums requantized in the GEMM's epilogue):
// inputs at A's, B's and the zero points' places of each op.
class MatMulIntegerKernel : public Kernel {
  struct Places {
    int a, b, a_zero, b_zero;
  };
  static Places places_of(bool requantized) { return requantized ? Places{0, 3, 2, 5} : Places{0, 1, 2, 3}; }

 public:
  explicit MatMulIntegerKernel(const KernelContext& ctx, bool requantized = false)
      : requantized_(requantized),
        at_(places_of(requantized)),
        a_signed_(ctx.input_types[at_.a].dtype == DType::Int8),
        b_signed_(ctx.input_types[at_.b].dtype == DType::Int8) {
    const Shape& as = ctx.input_types[at_.a].shape;
    const Shape& bs = ctx.input_types[at_.b].shape;
    const MatMulDims d = matmul_dims(as, bs, false, false);
    M_ = d.M, N_ = d.N, K_ = d.K;
    const MatMulBatches batches = matmul_batches(as, bs, ctx.output_types[0].shape, d);
    batch_shape_ = batches.shape;
    a_stride_ = batches.a_stride;
    b_stride_ = batches.b_stride;
    batch_ = batches.count;
    b_batch_ = batches.b_count;
    a_zero_per_row_ = (int)ctx.input_types.size() > at_.a_zero && ctx.input_types[at_.a_zero].numel() > 1;
    if ((int)ctx.constants.size() > at_.b && ctx.constants[at_.b] && b_batch_ == 1 && N_ > 0) {
      packed_b_ = cpu::pack_int8_b(K_, N_, ctx.constants[at_.b]->data, N_, false, b_signed_, nullptr);
    }
    if (requantized_) {
      const bool y_signed = ctx.output_types[0].dtype == DType::Int8;
      out_low_ = y_signed ? -128 : 0, out_high_ = y_signed ? 127 : 255;
    }
  }

  double flops() const override { return 2.0 * (double)batch_ * M_ * N_ * K_; }
  const char* scheme() const override { return "gemm_int8"; }
  size_t resident_bytes() const override { return packed_b_.nbytes; }

  void execute(const KernelArgs& args, void*) const override {
    Tensor* out = args.outputs[0];
    if (out->numel() == 0) return;
    std::vector<int32_t> za, zb;
    cpu::Int8Epilogue ep;
    if ((int)args.inputs.size() > at_.a_zero) {
      za = zero_points(args.inputs[at_.a_zero]);
      ep.a_zero = za.data();
      ep.a_zero_step = za.size() > 1 ? 1 : 0;
    }
    if ((int)args.inputs.size() > at_.b_zero) {
      zb = zero_points(args.inputs[at_.b_zero]);
      ep.b_zero = zb.data();
      ep.b_zero_step = zb.size() > 1 ? 1 : 0;
    }
    std::vector<float> multiplier;
    if (requantized_) {
      // ONNX's (a_scale * b_scale) / y_scale in float32, per column of B.
      const float a_scale = args.inputs[1]->ptr<float>()[0], y_scale = args.inputs[6]->ptr<float>()[0];
      const Tensor* b_scale = args.inputs[4];
      multiplier.resize((size_t)N_);
      for (int64_t n = 0; n < N_; ++n) multiplier[(size_t)n] = a_scale * b_scale->ptr<float>()[b_scale->numel() > 1 ? n : 0] / y_scale;
      ep.requant_multiplier = multiplier.data();
      ep.out_zero = zero_points(args.inputs[7])[0], ep.out_low = out_low_, ep.out_high = out_high_;
    }
    const uint8_t* a = static_cast<const uint8_t*>(args.inputs[at_.a]->data);
    const uint8_t* b = static_cast<const uint8_t*>(args.inputs[at_.b]->data);
    // int32 sums, or bytes (requantized)
    const int64_t out_bytes = requantized_ ? 1 : (int64_t)sizeof(int32_t);
    uint8_t* c = static_cast<uint8_t*>(out->data);
    cpu::PackedInt8B shared_b = packed_b_;
    if (!shared_b.data && b_batch_ == 1) shared_b = cpu::pack_int8_b(K_, N_, b, N_, false, b_signed_, args.pool);
    // A shared B and one zero point for every row of A: the stack is one tall product.
    if (b_batch_ == 1 && (batch_ == 1 || !a_zero_per_row_)) {
      cpu::gemm_int8(batch_ * M_, a, K_, a_signed_, shared_b, ep, c, N_, args.pool);
      return;
    }
    // Products [first, last), each with its own pack of B where it has one, split over `pool`.
    auto products = [&](int64_t first, int64_t last, ThreadPool* pool) {
      for (int64_t index = first; index < last; ++index) {
        int64_t rest = index, a_off = 0, b_off = 0;
        for (int64_t d = (int64_t)batch_shape_.size() - 1; d >= 0; --d) {
          const int64_t i = rest % batch_shape_[d];
          rest /= batch_shape_[d];
          a_off += i * a_stride_[d];
          b_off += i * b_stride_[d];
        }
        const cpu::PackedInt8B bi =
            shared_b.data ? shared_b : cpu::pack_int8_b(K_, N_, b + b_off, N_, false, b_signed_, pool);
        cpu::gemm_int8(M_, a + a_off, K_, a_signed_, bi, ep, c + index * M_ * N_ * out_bytes, N_, pool);
      }
    };
    // At least a product per thread (attention's: 12 or more of about a million multiply-adds,
    // too small to split well): threads take whole products. Fewer: each is split.
    const int threads = args.pool ? args.pool->num_threads() : 1;
    if (batch_ < threads) {
      products(0, batch_, args.pool);
      return;
    }
    parallel_for(args.pool, batch_, 1, [&](int64_t first, int64_t last) { products(first, last, nullptr); });
  }

 private:
  bool requantized_;
  Places at_;
  bool a_signed_, b_signed_;
  int32_t out_low_ = 0, out_high_ = 255;  // QLinearMatMul: the output type's range
  int64_t M_ = 0, N_ = 0, K_ = 0;
  Shape batch_shape_;
  std::vector<int64_t> a_stride_, b_stride_;
  int64_t batch_ = 1, b_batch_ = 1;
  bool a_zero_per_row_ = false;
  cpu::PackedInt8B packed_b_;
};

MNNPY_REGISTER_KERNEL("MatMulInteger", "cpu", construct_kernel<MatMulIntegerKernel>);
MNNPY_REGISTER_KERNEL("QLinearMatMul", "cpu", [](const KernelContext& ctx) -> std::unique_ptr<Kernel> {
  return new_kernel<MatMulIntegerKernel>(ctx, true);
});

class DynamicQuantMatMulKernel : public Kernel {
 public:
  explicit DynamicQuantMatMulKernel(const KernelContext& ctx) {
    const Shape& ws = ctx.input_types[1].shape;
    K_ = ws[0], N_ = ws[1];
    const Shape& xs = ctx.input_types[0].shape;
    M_ = shape_numel(Shape(xs.begin(), xs.end() - 1));
    if (ctx.attrs.has("activation")) {
      const std::string& act = ctx.attrs.get_string("activation");
      if (act == "relu") activation_ = ew::kRelu;
      if (act == "gelu") activation_ = ew::kGelu;
    }
    if (ctx.constants.size() > 1 && ctx.constants[1] && N_ > 0) {
      packed_w_ = cpu::pack_int8_b(K_, N_, ctx.constants[1]->data, N_, false, true, nullptr);
    }
  }

  double flops() const override { return 2.0 * (double)M_ * N_ * K_; }
  const char* scheme() const override { return "dynamic_int8"; }
  size_t resident_bytes() const override { return packed_w_.nbytes; }
  // The quantized rows, then their scales and zero points.
  size_t scratch_bytes() const override { return (size_t)(round_up64(M_ * K_) + 8 * M_); }

  void execute(const KernelArgs& args, void* scratch) const override {
    if (M_ == 0 || N_ == 0) return;
    float* y = args.outputs[0]->ptr<float>();
    uint8_t* q = static_cast<uint8_t*>(scratch);
    float* row_scale = reinterpret_cast<float*>(q + round_up64(M_ * K_));
    int32_t* row_zero = reinterpret_cast<int32_t*>(row_scale + M_);
    cpu::quantize_rows_uint8(M_, K_, args.inputs[0]->ptr<float>(), K_, q, row_scale, row_zero, args.pool);
    const Tensor* scales = args.inputs[2];
    std::vector<float> col_scale;
    const float* cs = scales->ptr<float>();
    if (scales->numel() == 1) {
      col_scale.assign((size_t)N_, cs[0]);
      cs = col_scale.data();
    }
    std::vector<float> bias_values;
    const float* bias = nullptr;
    if (args.inputs.size() > 3) {
      bias = args.inputs[3]->ptr<float>();
      if (args.inputs[3]->numel() == 1) {
        bias_values.assign((size_t)N_, bias[0]);
        bias = bias_values.data();
      }
    }
    cpu::Int8Epilogue ep;
    ep.a_zero = row_zero;
    ep.a_zero_step = 1;
    ep.row_scale = row_scale;
    ep.col_scale = cs;
    ep.bias = bias;
    ep.activation = activation_;
    cpu::PackedInt8B w = packed_w_;
    if (!w.data) w = cpu::pack_int8_b(K_, N_, args.inputs[1]->data, N_, false, true, args.pool);
    cpu::gemm_int8(M_, q, K_, false, w, ep, y, N_, args.pool);
  }

 private:
  static int64_t round_up64(int64_t v) { return (v + 63) & ~int64_t(63); }
  int64_t M_ = 0, N_ = 0, K_ = 0;
  int activation_ = -1;  // an ew::UnaryCode applied in the epilogue
  cpu::PackedInt8B packed_w_;
};

MNNPY_REGISTER_KERNEL("DynamicQuantMatMul", "cpu", construct_kernel<DynamicQuantMatMulKernel>);

}  // namespace

}  // namespace mnnpy
