// CPU kernel of MatMul (ops/matmul.cpp): float products by the GEMM, integer ones by loops, with
// a constant right-hand matrix packed at plan time, or stored block-sparse when it is mostly zero
// blocks (backend/cpu/block_sparse.h). At precision "low", on a CPU with a bf16 path, a constant
// float32 right-hand matrix is packed as bf16 and the product runs in bf16 (backend/cpu/gemm_bf16.h).
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "backend/cpu/block_sparse.h"
#include "backend/cpu/gemm.h"
#include "backend/cpu/gemm_bf16.h"
#include "mnnpy/backend.h"
#include "mnnpy/thread_pool.h"
#include "ops/matmul_shape.h"

namespace mnnpy {

namespace {

class MatMulKernel : public Kernel {
 public:
  explicit MatMulKernel(const KernelContext& ctx)
      : dtype_(ctx.input_types[0].dtype),
        ta_(ctx.attrs.get_int("transpose_a") != 0),
        tb_(ctx.attrs.get_int("transpose_b") != 0) {
    const Shape& as = ctx.input_types[0].shape;
    const Shape& bs = ctx.input_types[1].shape;
    const Shape& out = ctx.output_types[0].shape;
    const MatMulDims d = matmul_dims(as, bs, ta_, tb_);
    M_ = d.M, N_ = d.N, K_ = d.K, lda_ = d.lda, ldb_ = d.ldb;
    const MatMulBatches batches = matmul_batches(as, bs, out, d);
    batch_shape_ = batches.shape;
    a_stride_ = batches.a_stride;
    b_stride_ = batches.b_stride;
    batch_ = batches.count;
    b_batch_ = batches.b_count;
    // One shared right-hand matrix and row-major left matrices: the stack is one tall product.
    fold_batch_ = batch_ > 1 && b_batch_ == 1 && !ta_;
    // A constant right-hand matrix (weights) is packed once here instead of on every run.
    const bool float_gemm = dtype_ == DType::Float32 || dtype_ == DType::Float64;
    const bool constant_b = ctx.constants.size() > 1 && ctx.constants[1];
    if (constant_b && dtype_ == DType::Float32 && b_batch_ == 1 && (batch_ == 1 || fold_batch_) && K_ > 0 &&
        N_ > 0 && ctx.precision == Precision::Low && cpu::bf16_gemm_available()) {
      bf16_path_ = cpu::bf16_plan_path();
      bf16_b_ = cpu::pack_b_bf16(K_, N_, ctx.constants[1]->ptr<float>(), ldb_, tb_);
      return;
    }
    if (constant_b && dtype_ == DType::Float32 && b_batch_ == 1 && (batch_ == 1 || fold_batch_) && K_ > 0 &&
        N_ > 0) {
      // The weight W = op(B)^T [N x K]: element (n, k) of op(B) transposed.
      const float* b = ctx.constants[1]->ptr<float>();
      sparse_b_ = cpu::choose_block_sparse(b, N_, K_, tb_ ? ldb_ : 1, tb_ ? 1 : ldb_);
      if (sparse_b_.n > 0) {
        sparse_scheme_ = sparse_b_.scheme_name();
        return;
      }
    }
    if (constant_b && float_gemm && b_batch_ == 1 && K_ > 0 && N_ > 0) {
      packed_b_ = cpu::pack_b(dtype_, K_, N_, ctx.constants[1]->data, ldb_, tb_, nullptr);
    }
  }

  double flops() const override { return 2.0 * (double)batch_ * M_ * N_ * K_; }
  const char* scheme() const override {
    if (bf16_b_.data) return "bf16_gemm";
    if (sparse_b_.n > 0) return sparse_scheme_.c_str();
    return dtype_ == DType::Float32 || dtype_ == DType::Float64 ? "gemm" : "loop";
  }
  size_t resident_bytes() const override { return packed_b_.nbytes + sparse_b_.nbytes() + bf16_b_.nbytes; }

  void execute(const KernelArgs& args, void*) const override {
    Tensor* out = args.outputs[0];
    if (out->numel() == 0) return;
    if (K_ == 0) {
      std::memset(out->data, 0, out->nbytes());
      return;
    }
    const size_t es = dtype_size(dtype_);
    const char* a = static_cast<const char*>(args.inputs[0]->data);
    const char* b = static_cast<const char*>(args.inputs[1]->data);
    char* c = static_cast<char*>(out->data);
    if (bf16_b_.data) {
      cpu::gemm_bf16_packed(batch_ * M_, static_cast<const float*>(args.inputs[0]->data), lda_, ta_, bf16_b_,
                            static_cast<float*>(out->data), N_, args.pool, bf16_path_);
      return;
    }
    if (sparse_b_.n > 0) {
      // x(k, m) is op(A)'s element (m, k), y(n, m) is C's element (m, n).
      cpu::SparseOperandLayout x, y;
      x.row_stride = ta_ ? lda_ : 1;
      x.m_stride = ta_ ? 1 : lda_;
      y.row_stride = 1;
      y.m_stride = N_;
      cpu::block_sparse_product(sparse_b_, 1, batch_ * M_, static_cast<const float*>(args.inputs[0]->data), x,
                                static_cast<float*>(out->data), y, nullptr, nullptr, ConvActivation{}, args.pool);
      return;
    }
    if (packed_b_.data && (batch_ == 1 || fold_batch_)) {
      cpu::gemm_packed(batch_ * M_, a, lda_, ta_, packed_b_, c, N_, false, args.pool);
      return;
    }
    if (batch_ == 1 || fold_batch_) {
      product(batch_ * M_, a, b, c, args.pool);
      return;
    }
    // A right-hand matrix shared by the whole stack is packed once.
    const bool float_gemm = dtype_ == DType::Float32 || dtype_ == DType::Float64;
    cpu::PackedB shared_b = packed_b_;
    if (!shared_b.data && float_gemm && b_batch_ == 1) shared_b = cpu::pack_b(dtype_, K_, N_, b, ldb_, tb_, args.pool);
    auto item = [&](int64_t index, ThreadPool* pool) {
      int64_t rest = index, a_off = 0, b_off = 0;
      for (int64_t d = (int64_t)batch_shape_.size() - 1; d >= 0; --d) {
        const int64_t i = rest % batch_shape_[d];
        rest /= batch_shape_[d];
        a_off += i * a_stride_[d];
        b_off += i * b_stride_[d];
      }
      char* ci = c + index * M_ * N_ * es;
      if (shared_b.data) cpu::gemm_packed(M_, a + a_off * es, lda_, ta_, shared_b, ci, N_, false, pool);
      else product(M_, a + a_off * es, b + b_off * es, ci, pool);
    };
    const int threads = args.pool ? args.pool->num_threads() : 1;
    const int64_t work = M_ * N_ * K_;
    if (threads > 1 && batch_ >= threads && work <= (int64_t(1) << 24)) {
      // Many products up to 256^3: one thread per product. Splitting each one over the threads
      // costs a packing pass and two synchronizations per product (measured at 128^3: 10% slower).
      const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 18) / work);
      args.pool->parallel_for(batch_, grain, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) item(i, nullptr);
      });
    } else {
      for (int64_t i = 0; i < batch_; ++i) item(i, args.pool);
    }
  }

 private:
  void product(int64_t M, const void* a, const void* b, void* c, ThreadPool* pool) const {
    if (dtype_ == DType::Float32 || dtype_ == DType::Float64) {
      cpu::gemm(dtype_, M, N_, K_, a, lda_, ta_, b, ldb_, tb_, c, N_, false, pool);
    } else {
      cpu::matmul_integral(dtype_, M, N_, K_, a, lda_, ta_, b, ldb_, tb_, c, N_, pool);
    }
  }

  DType dtype_;
  bool ta_, tb_;
  int64_t M_ = 0, N_ = 0, K_ = 0, lda_ = 0, ldb_ = 0;
  Shape batch_shape_;
  std::vector<int64_t> a_stride_, b_stride_;
  int64_t batch_ = 1, b_batch_ = 1;
  bool fold_batch_ = false;
  cpu::PackedB packed_b_;
  cpu::BlockSparseMatrix sparse_b_;  // a constant float32 B of mostly zero blocks (n == 0: not used)
  std::string sparse_scheme_;
  cpu::PackedBf16B bf16_b_;  // a constant float32 B as bf16 at precision "low" (data null: not used)
  cpu::Bf16Path bf16_path_ = cpu::Bf16Path::None;
};

MNNPY_REGISTER_KERNEL("MatMul", "cpu", construct_kernel<MatMulKernel>);

}  // namespace

}  // namespace mnnpy
