// Small graph builders for gradient rules: arithmetic on Vars (NumPy broadcasting and dtype
// rules, through the registered elementwise ops), constants of a Var's dtype, and scatter-add.
#pragma once
#include "mnnpy/autograd.h"
#include "mnnpy/ops.h"
#include "mnnpy/shape_ops.h"

namespace mnnpy {
namespace grad {

inline Var add(const Var& a, const Var& b) { return binary("Add", a, b); }
inline Var sub(const Var& a, const Var& b) { return binary("Sub", a, b); }
inline Var mul(const Var& a, const Var& b) { return binary("Mul", a, b); }
inline Var div(const Var& a, const Var& b) { return binary("Div", a, b); }
inline Var neg(const Var& a) { return unary("Neg", a); }
// A 0-d constant of v's dtype.
inline Var scalar_like(const Var& v, double value) { return make_scalar(value, v.type().dtype); }
inline Var scale(const Var& v, double factor) { return mul(v, scalar_like(v, factor)); }
// mask (bool) as v's dtype: 1 where true.
inline Var as_dtype_of(const Var& mask, const Var& v) { return cast(mask, v.type().dtype); }
// Single-input rules: the gradient for input 0, nothing for the others.
inline std::vector<Var> only_first(const Var& g, size_t inputs) {
  std::vector<Var> r(inputs);
  r[0] = g;
  return r;
}

// The sum of `updates` into a zero tensor at the positions `indices` name along `axis`, whose
// length is `size` (the ScatterAdd op): along = false for a Gather's layout, true for
// take_along_axis' (indices shaped as updates).
Var scatter_add(const Var& updates, const Var& indices, int64_t axis, int64_t size, bool along);
// numpy.take_along_axis(data, index, axis) for a non-negative axis.
Var take_along_axis(const Var& data, const Var& index, int64_t axis);

}  // namespace grad
}  // namespace mnnpy
