// numpy.linalg's factorizations as graph ops over stacks of matrices ([..., m, n], float32 or
// float64; callers cast other dtypes). Ops that can fail on the data (singular or not
// positive definite matrices) add an int32 `info` output per matrix (0: success) so the
// caller can raise NumPy's LinAlgError. Correlate1D is numpy.correlate's kernel.
#include <algorithm>
#include <string>

#include "mnnpy/op_registry.h"
#include "ops/linalg_shape.h"

namespace mnnpy {

namespace {

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

MNNPY_REGISTER_OP(OpDef{"LinalgDet", 1, 1, infer_det, {}, false});

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

MNNPY_REGISTER_OP(OpDef{"LinalgSolve", 1, 2, infer_solve, {}, false});

// ---------------------------------------------------------------- Cholesky
std::vector<TensorType> infer_cholesky(const std::vector<TensorType>& in, Attrs& attrs) {
  const StackDims d = stack_dims(in[0], "LinalgCholesky", true);
  attrs.set("upper", (int64_t)(attrs.get_int("upper", 0) != 0));
  return {in[0], TensorType{DType::Int32, d.batch_shape}};
}

MNNPY_REGISTER_OP(OpDef{"LinalgCholesky", 1, 1, infer_cholesky, {}, false});

// ---------------------------------------------------------------- QR
// attr mode: "reduced" (Q [.., m, k], R [.., k, n]), "complete" (Q [.., m, m], R [.., m, n])
// or "r" (R [.., k, n] only); k = min(m, n).
std::vector<TensorType> infer_qr(const std::vector<TensorType>& in, Attrs& attrs) {
  const StackDims d = stack_dims(in[0], "LinalgQR", false);
  const QrSizes s = qr_sizes(attrs.get_string("mode"), d);
  const TensorType r{in[0].dtype, with(d.batch_shape, {s.rrows, d.n})};
  if (!s.want_q) return {r};
  return {TensorType{in[0].dtype, with(d.batch_shape, {d.m, s.qcols})}, r};
}

MNNPY_REGISTER_OP(OpDef{"LinalgQR", 1, 1, infer_qr, {}, false});

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

MNNPY_REGISTER_OP(OpDef{"LinalgEigh", 1, 1, infer_eigh, {}, false});

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

MNNPY_REGISTER_OP(OpDef{"LinalgSVD", 1, 1, infer_svd, {}, false});

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

MNNPY_REGISTER_OP(OpDef{"Correlate1D", 2, 2, infer_correlate, {}, false});

}  // namespace

}  // namespace mnnpy
