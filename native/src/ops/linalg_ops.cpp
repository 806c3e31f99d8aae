// numpy.linalg's factorizations as graph ops over stacks of matrices ([..., m, n], float32 or
// float64; callers cast other dtypes). Ops that can fail on the data (singular or not
// positive definite matrices) add an int32 `info` output per matrix (0: success) so the
// caller can raise NumPy's LinAlgError. Correlate1D is numpy.correlate's kernel.
#include <string>

#include "backend/cpu/linalg.h"
#include "mnnpy/op_registry.h"

namespace mnnpy {

namespace {

struct StackDims {
  Shape batch_shape;
  int64_t batch = 1, m = 0, n = 0;
};

StackDims stack_dims(const TensorType& t, const char* op, bool square) {
  if (t.dtype != DType::Float32 && t.dtype != DType::Float64) {
    throw TypeError(std::string(op) + ": matrices must be float32 or float64, got " + dtype_name(t.dtype));
  }
  const size_t r = t.shape.size();
  if (r < 2) {
    throw ValueError(std::string(op) + ": " + std::to_string(r) +
                     "-dimensional array given. Array must be at least two-dimensional");
  }
  StackDims d;
  d.batch_shape.assign(t.shape.begin(), t.shape.end() - 2);
  for (int64_t b : d.batch_shape) d.batch *= b;
  d.m = t.shape[r - 2];
  d.n = t.shape[r - 1];
  if (square && d.m != d.n) throw ValueError(std::string(op) + ": Last 2 dimensions of the array must be square");
  return d;
}

Shape with(Shape s, std::initializer_list<int64_t> tail) {
  s.insert(s.end(), tail.begin(), tail.end());
  return s;
}

// ---------------------------------------------------------------- determinant
std::vector<TensorType> infer_det(const std::vector<TensorType>& in, Attrs&) {
  const StackDims d = stack_dims(in[0], "LinalgDet", true);
  const TensorType t{in[0].dtype, d.batch_shape};
  return {t, t, t};
}

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

MNNPY_REGISTER_OP(OpDef{"LinalgDet", 1, 1, infer_det,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new DetKernel(ctx)); }, {},
                        false});

// ---------------------------------------------------------------- solve / inverse
// Inputs: A [..., n, n] and optionally B [..., n, k] with A's batch shape and dtype (without B:
// the inverse). Outputs: X [..., n, k] and info [...].
std::vector<TensorType> infer_solve(const std::vector<TensorType>& in, Attrs&) {
  const StackDims d = stack_dims(in[0], "LinalgSolve", true);
  Shape out = with(d.batch_shape, {d.n, d.n});
  if (in.size() == 2) {
    const TensorType& b = in[1];
    if (b.dtype != in[0].dtype) throw TypeError("LinalgSolve: A and B must have one dtype");
    if (b.shape.size() != in[0].shape.size() || b.shape[b.shape.size() - 2] != d.n ||
        !std::equal(d.batch_shape.begin(), d.batch_shape.end(), b.shape.begin())) {
      throw ValueError("LinalgSolve: B of shape " + shape_str(b.shape) + " does not match A of shape " +
                       shape_str(in[0].shape));
    }
    out = b.shape;
  }
  return {TensorType{in[0].dtype, out}, TensorType{DType::Int32, d.batch_shape}};
}

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

MNNPY_REGISTER_OP(OpDef{"LinalgSolve", 1, 2, infer_solve,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new SolveKernel(ctx)); }, {},
                        false});

// ---------------------------------------------------------------- Cholesky
std::vector<TensorType> infer_cholesky(const std::vector<TensorType>& in, Attrs& attrs) {
  const StackDims d = stack_dims(in[0], "LinalgCholesky", true);
  attrs.set("upper", (int64_t)(attrs.get_int("upper", 0) != 0));
  return {in[0], TensorType{DType::Int32, d.batch_shape}};
}

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

MNNPY_REGISTER_OP(OpDef{"LinalgCholesky", 1, 1, infer_cholesky,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new CholeskyKernel(ctx)); }, {},
                        false});

// ---------------------------------------------------------------- QR
// attr mode: "reduced" (Q [.., m, k], R [.., k, n]), "complete" (Q [.., m, m], R [.., m, n])
// or "r" (R [.., k, n] only); k = min(m, n).
struct QrSizes {
  int64_t qcols, rrows;
  bool want_q;
};

QrSizes qr_sizes(const std::string& mode, const StackDims& d) {
  const int64_t k = std::min(d.m, d.n);
  if (mode == "reduced") return {k, k, true};
  if (mode == "complete") return {d.m, d.m, true};
  if (mode == "r") return {k, k, false};
  throw ValueError("LinalgQR: unrecognized mode '" + mode + "'");
}

std::vector<TensorType> infer_qr(const std::vector<TensorType>& in, Attrs& attrs) {
  const StackDims d = stack_dims(in[0], "LinalgQR", false);
  const QrSizes s = qr_sizes(attrs.get_string("mode"), d);
  const TensorType r{in[0].dtype, with(d.batch_shape, {s.rrows, d.n})};
  if (!s.want_q) return {r};
  return {TensorType{in[0].dtype, with(d.batch_shape, {d.m, s.qcols})}, r};
}

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

MNNPY_REGISTER_OP(OpDef{"LinalgQR", 1, 1, infer_qr,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new QrKernel(ctx)); }, {},
                        false});

// ---------------------------------------------------------------- symmetric eigenproblem
// attrs: lower (read A's lower triangle, else the upper), vectors (0: eigenvalues only).
std::vector<TensorType> infer_eigh(const std::vector<TensorType>& in, Attrs& attrs) {
  const StackDims d = stack_dims(in[0], "LinalgEigh", true);
  attrs.set("lower", (int64_t)(attrs.get_int("lower", 1) != 0));
  attrs.set("vectors", (int64_t)(attrs.get_int("vectors", 1) != 0));
  const TensorType w{in[0].dtype, with(d.batch_shape, {d.n})};
  if (!attrs.get_int("vectors")) return {w};
  return {w, in[0]};
}

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

MNNPY_REGISTER_OP(OpDef{"LinalgEigh", 1, 1, infer_eigh,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new EighKernel(ctx)); }, {},
                        false});

// ---------------------------------------------------------------- SVD
// attrs: full (full_matrices), compute_uv. Outputs U, S, Vh, or S alone.
std::vector<TensorType> infer_svd(const std::vector<TensorType>& in, Attrs& attrs) {
  const StackDims d = stack_dims(in[0], "LinalgSVD", false);
  attrs.set("full", (int64_t)(attrs.get_int("full", 1) != 0));
  attrs.set("compute_uv", (int64_t)(attrs.get_int("compute_uv", 1) != 0));
  const int64_t k = std::min(d.m, d.n);
  const TensorType s{in[0].dtype, with(d.batch_shape, {k})};
  if (!attrs.get_int("compute_uv")) return {s};
  const bool full = attrs.get_int("full") != 0;
  return {TensorType{in[0].dtype, with(d.batch_shape, {d.m, full ? d.m : k})}, s,
          TensorType{in[0].dtype, with(d.batch_shape, {full ? d.n : k, d.n})}};
}

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

MNNPY_REGISTER_OP(OpDef{"LinalgSVD", 1, 1, infer_svd,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new SvdKernel(ctx)); }, {},
                        false});

// ---------------------------------------------------------------- 1-D correlation
// Inputs a [na], v [nv] of one dtype (float32, float64 or int64). attrs: first_lag, count.
// out[t] = sum_j a[t + first_lag + j] v[j].
std::vector<TensorType> infer_correlate(const std::vector<TensorType>& in, Attrs& attrs) {
  const DType t = in[0].dtype;
  if (in[1].dtype != t || (t != DType::Float32 && t != DType::Float64 && t != DType::Int64)) {
    throw TypeError("Correlate1D: operands must both be float32, float64 or int64");
  }
  if (in[0].shape.size() != 1 || in[1].shape.size() != 1) throw ValueError("Correlate1D: operands must be 1-D");
  const int64_t count = attrs.get_int("count");
  if (count < 0) throw ValueError("Correlate1D: count must not be negative");
  attrs.get_int("first_lag");
  return {TensorType{t, Shape{count}}};
}

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

MNNPY_REGISTER_OP(OpDef{"Correlate1D", 2, 2, infer_correlate,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new CorrelateKernel(ctx)); }, {},
                        false});

}  // namespace

}  // namespace mnnpy
