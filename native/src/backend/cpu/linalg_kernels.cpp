// CPU kernels of numpy.linalg's graph ops (ops/linalg_ops.cpp): determinant, solve/inverse,
// Cholesky, QR, symmetric eigenproblem, SVD, and Correlate1D.
#include <memory>

#include "backend/cpu/linalg.h"
#include "mnnpy/backend.h"
#include "ops/linalg_shape.h"

namespace mnnpy {

namespace {

class DetKernel : public Kernel {
 public:
  explicit DetKernel(const KernelContext& ctx) : d_(stack_dims(ctx.input_types[0], "LinalgDet", true)),
                                                 dtype_(ctx.input_types[0].dtype) {}
  void execute(const KernelArgs& args, void*) const override {
    cpu::lu_determinant(dtype_, args.inputs[0]->data, d_.batch, d_.n, args.outputs[0]->data, args.outputs[1]->data,
                        args.outputs[2]->data, args.pool);
  }
  const char* scheme() const override { return "lu"; }

 private:
  StackDims d_;
  DType dtype_;
};

class SolveKernel : public Kernel {
 public:
  explicit SolveKernel(const KernelContext& ctx)
      : d_(stack_dims(ctx.input_types[0], "LinalgSolve", true)),
        dtype_(ctx.input_types[0].dtype),
        k_(ctx.output_types[0].shape.back()) {}
  void execute(const KernelArgs& args, void*) const override {
    cpu::lu_solve(dtype_, args.inputs[0]->data, args.inputs.size() == 2 ? args.inputs[1]->data : nullptr, d_.batch,
                  d_.n, k_, args.outputs[0]->data, args.outputs[1]->ptr<int32_t>(), args.pool);
  }
  const char* scheme() const override { return "lu"; }

 private:
  StackDims d_;
  DType dtype_;
  int64_t k_;
};

class CholeskyKernel : public Kernel {
 public:
  explicit CholeskyKernel(const KernelContext& ctx)
      : d_(stack_dims(ctx.input_types[0], "LinalgCholesky", true)),
        dtype_(ctx.input_types[0].dtype),
        upper_(ctx.attrs.get_int("upper") != 0) {}
  void execute(const KernelArgs& args, void*) const override {
    cpu::cholesky(dtype_, args.inputs[0]->data, d_.batch, d_.n, upper_, args.outputs[0]->data,
                  args.outputs[1]->ptr<int32_t>(), args.pool);
  }

 private:
  StackDims d_;
  DType dtype_;
  bool upper_;
};

class QrKernel : public Kernel {
 public:
  explicit QrKernel(const KernelContext& ctx)
      : d_(stack_dims(ctx.input_types[0], "LinalgQR", false)),
        s_(qr_sizes(ctx.attrs.get_string("mode"), d_)),
        dtype_(ctx.input_types[0].dtype) {}
  void execute(const KernelArgs& args, void*) const override {
    void* q = s_.want_q ? args.outputs[0]->data : nullptr;
    void* r = args.outputs[s_.want_q ? 1 : 0]->data;
    cpu::qr(dtype_, args.inputs[0]->data, d_.batch, d_.m, d_.n, s_.qcols, s_.rrows, q, r, args.pool);
  }
  const char* scheme() const override { return "householder"; }

 private:
  StackDims d_;
  QrSizes s_;
  DType dtype_;
};

class EighKernel : public Kernel {
 public:
  explicit EighKernel(const KernelContext& ctx)
      : d_(stack_dims(ctx.input_types[0], "LinalgEigh", true)),
        dtype_(ctx.input_types[0].dtype),
        lower_(ctx.attrs.get_int("lower") != 0) {}
  void execute(const KernelArgs& args, void*) const override {
    cpu::eigh(dtype_, args.inputs[0]->data, d_.batch, d_.n, lower_, args.outputs[0]->data,
              args.outputs.size() > 1 ? args.outputs[1]->data : nullptr, args.pool);
  }
  const char* scheme() const override { return "jacobi"; }

 private:
  StackDims d_;
  DType dtype_;
  bool lower_;
};

class SvdKernel : public Kernel {
 public:
  explicit SvdKernel(const KernelContext& ctx)
      : d_(stack_dims(ctx.input_types[0], "LinalgSVD", false)),
        dtype_(ctx.input_types[0].dtype),
        full_(ctx.attrs.get_int("full") != 0),
        uv_(ctx.attrs.get_int("compute_uv") != 0) {}
  void execute(const KernelArgs& args, void*) const override {
    if (uv_) {
      cpu::svd(dtype_, args.inputs[0]->data, d_.batch, d_.m, d_.n, full_, args.outputs[0]->data,
               args.outputs[1]->data, args.outputs[2]->data, args.pool);
    } else {
      cpu::svd(dtype_, args.inputs[0]->data, d_.batch, d_.m, d_.n, false, nullptr, args.outputs[0]->data, nullptr,
               args.pool);
    }
  }
  const char* scheme() const override { return "one-sided-jacobi"; }

 private:
  StackDims d_;
  DType dtype_;
  bool full_, uv_;
};

class CorrelateKernel : public Kernel {
 public:
  explicit CorrelateKernel(const KernelContext& ctx)
      : dtype_(ctx.input_types[0].dtype),
        na_(ctx.input_types[0].shape[0]),
        nv_(ctx.input_types[1].shape[0]),
        first_lag_(ctx.attrs.get_int("first_lag")),
        count_(ctx.attrs.get_int("count")) {}
  void execute(const KernelArgs& args, void*) const override {
    cpu::correlate(dtype_, args.inputs[0]->data, na_, args.inputs[1]->data, nv_, first_lag_, count_,
                   args.outputs[0]->data, args.pool);
  }

 private:
  DType dtype_;
  int64_t na_, nv_, first_lag_, count_;
};

MNNPY_REGISTER_KERNEL("LinalgDet", "cpu", construct_kernel<DetKernel>);
MNNPY_REGISTER_KERNEL("LinalgSolve", "cpu", construct_kernel<SolveKernel>);
MNNPY_REGISTER_KERNEL("LinalgCholesky", "cpu", construct_kernel<CholeskyKernel>);
MNNPY_REGISTER_KERNEL("LinalgQR", "cpu", construct_kernel<QrKernel>);
MNNPY_REGISTER_KERNEL("LinalgEigh", "cpu", construct_kernel<EighKernel>);
MNNPY_REGISTER_KERNEL("LinalgSVD", "cpu", construct_kernel<SvdKernel>);
MNNPY_REGISTER_KERNEL("Correlate1D", "cpu", construct_kernel<CorrelateKernel>);

}  // namespace

}  // namespace mnnpy
