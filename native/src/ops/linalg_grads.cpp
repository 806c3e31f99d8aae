// Gradient rules of the linear-algebra graph ops with closed forms: the determinant (and its
// logarithm), solve and inverse, and 1-D correlation. The factorizations (Cholesky, QR, eigh,
// SVD) have none here.
#include <vector>

#include "mnnpy/op_registry.h"
#include "ops/grad_common.h"

namespace mnnpy {

namespace {

Var mm(const Var& a, const Var& b, bool ta = false, bool tb = false) {
  return make_op("MatMul", {a, b}, Attrs().set("transpose_a", (int64_t)ta).set("transpose_b", (int64_t)tb));
}

// Swap the last two axes.
Var matrix_transpose(const Var& a) {
  const int64_t r = (int64_t)a.type().shape.size();
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < r - 2; ++i) perm.push_back(i);
  perm.push_back(r - 1);
  perm.push_back(r - 2);
  return transpose(a, perm);
}

// v [...] as [..., 1, 1], to scale a stack of matrices.
Var per_matrix(const Var& v) {
  Shape s = v.type().shape;
  s.push_back(1);
  s.push_back(1);
  return reshape(v, s);
}

// Outputs sign, logabsdet, det. d det / dA = det * A^-T; d logabsdet / dA = A^-T.
MNNPY_REGISTER_GRAD("LinalgDet", [](const GradContext& c) {
  const Var& a = c.input(0);
  const Var inverse_t = matrix_transpose(make_op_multi("LinalgSolve", {a})[0]);
  Var scale;
  if (c.output_grads[1].valid()) scale = c.output_grads[1];
  if (c.output_grads[2].valid()) {
    const Var from_det = grad::mul(c.output_grads[2], c.outputs[2]);
    scale = scale.valid() ? grad::add(scale, from_det) : from_det;
  }
  if (!scale.valid()) return std::vector<Var>{zeros_of(a.type())};
  return std::vector<Var>{grad::mul(per_matrix(scale), inverse_t)};
});

// X = A^-1 B: dB = A^-T dX, dA = -dB X^T. Without B (X = A^-1): dA = -X^T dX X^T.
MNNPY_REGISTER_GRAD("LinalgSolve", [](const GradContext& c) {
  const Var& a = c.input(0);
  const Var& x = c.outputs[0];
  const Var g = c.output_grads[0].valid() ? c.output_grads[0] : zeros_of(x.type());
  if (c.node.inputs.size() == 1) return std::vector<Var>{grad::neg(mm(x, mm(g, x, false, true), true, false))};
  const Var gb = make_op_multi("LinalgSolve", {matrix_transpose(a), g})[0];
  return std::vector<Var>{grad::neg(mm(gb, x, false, true)), gb};
});

// out[t] = sum_j a[t + L + j] v[j]: a's gradient correlates g with v reversed, v's correlates
// a with g.
MNNPY_REGISTER_GRAD("Correlate1D", [](const GradContext& c) {
  const Var &a = c.input(0), &v = c.input(1), &g = c.grad();
  const int64_t lag = c.node.attrs.get_int("first_lag");
  const int64_t na = a.type().shape[0], nv = v.type().shape[0];
  const Var reversed = index(v, {IndexItem::make_slice(std::nullopt, std::nullopt, int64_t(-1))});
  const Var ga = make_op("Correlate1D", {g, reversed}, Attrs().set("first_lag", -lag - nv + 1).set("count", na));
  const Var gv = make_op("Correlate1D", {a, g}, Attrs().set("first_lag", lag).set("count", nv));
  return std::vector<Var>{ga, gv};
});

}  // namespace

}  // namespace mnnpy
