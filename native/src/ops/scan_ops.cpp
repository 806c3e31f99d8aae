// Cumulative sums/products (CumScan) and quantiles along one axis (Quantile).
//
// CumScan: attrs kind (0 sum, 1 product), axis, skip_nan (NaN counts as the identity). x is
// int64, float32 or float64; the result has x's dtype and shape.
//
// Quantile: inputs x (float32 or float64, the axis not empty) and q (float64, 1-D, values in
// [0, 1]); attrs axis, method (QuantileMethod), alpha and beta (plotting position of the
// continuous methods), skip_nan. The result, of x's dtype, has shape [len(q)] + x's shape
// without the axis.
#include <algorithm>
#include <cmath>
#include <string>

#include "mnnpy/op_registry.h"
#include "ops/grad_common.h"
#include "ops/scan_kind.h"

namespace mnnpy {

namespace {

int64_t checked_axis(const char* op, Attrs& attrs, int64_t rank) {
  int64_t axis = attrs.get_int("axis", 0);
  if (axis < -rank || axis >= rank) {
    throw ValueError(std::string(op) + ": axis " + std::to_string(axis) + " is out of range for an array of dimension " +
                     std::to_string(rank));
  }
  if (axis < 0) axis += rank;
  attrs.set("axis", axis);
  return axis;
}

std::vector<TensorType> infer_cumscan(const std::vector<TensorType>& in, Attrs& attrs) {
  const TensorType& x = in[0];
  if (x.dtype != DType::Int64 && x.dtype != DType::UInt64 && x.dtype != DType::Float32 && x.dtype != DType::Float64) {
    throw TypeError(std::string("CumScan: x must be int64, uint64, float32 or float64, got ") + dtype_name(x.dtype));
  }
  const int64_t kind = attrs.get_int("kind", kScanSum);
  if (kind != kScanSum && kind != kScanProd) throw ValueError("CumScan: kind must be 0 (sum) or 1 (product)");
  if (x.shape.empty()) throw ValueError("CumScan: x must have at least one dimension");
  checked_axis("CumScan", attrs, (int64_t)x.shape.size());
  attrs.set("skip_nan", (int64_t)(attrs.get_int("skip_nan", 0) != 0));
  return {x};
}

MNNPY_REGISTER_OP(OpDef{"CumScan", 1, 1, infer_cumscan, {}, false});

std::vector<TensorType> infer_quantile(const std::vector<TensorType>& in, Attrs& attrs) {
  const TensorType& x = in[0];
  const TensorType& q = in[1];
  if (x.dtype != DType::Float32 && x.dtype != DType::Float64) {
    throw TypeError(std::string("Quantile: x must be float32 or float64, got ") + dtype_name(x.dtype));
  }
  if (q.dtype != DType::Float64 || q.shape.size() != 1) {
    throw TypeError("Quantile: q must be a 1-D float64 array, got " + std::string(dtype_name(q.dtype)) + " " +
                    shape_str(q.shape));
  }
  if (x.shape.empty()) throw ValueError("Quantile: x must have at least one dimension");
  const int64_t axis = checked_axis("Quantile", attrs, (int64_t)x.shape.size());
  if (x.shape[axis] == 0 && x.numel() == 0) {
    // An empty axis has no order statistics (callers give NaN themselves where NumPy does).
    Shape rest;
    for (int64_t i = 0; i < (int64_t)x.shape.size(); ++i) if (i != axis) rest.push_back(x.shape[i]);
    if (shape_numel(rest) != 0) throw ValueError("Quantile: the axis is empty");
  }
  const int64_t method = attrs.get_int("method", kQuantileLinear);
  if (method < kQuantileLinear || method > kQuantileMedian) {
    throw ValueError("Quantile: unknown method " + std::to_string(method));
  }
  attrs.set("skip_nan", (int64_t)(attrs.get_int("skip_nan", 0) != 0));
  if (!attrs.has("alpha")) attrs.set("alpha", 1.0);
  if (!attrs.has("beta")) attrs.set("beta", 1.0);
  Shape out{q.shape[0]};
  for (int64_t i = 0; i < (int64_t)x.shape.size(); ++i) if (i != axis) out.push_back(x.shape[i]);
  return {TensorType{x.dtype, out}};
}

// v reversed along axis.
Var flipped(const Var& v, int64_t axis) {
  std::vector<IndexItem> items((size_t)axis, IndexItem::make_slice(std::nullopt, std::nullopt, std::nullopt));
  items.push_back(IndexItem::make_slice(std::nullopt, std::nullopt, int64_t(-1)));
  return index(v, items);
}

// A running sum or product of v along axis.
Var running(const Var& v, int64_t kind, int64_t axis) {
  return make_op("CumScan", {v}, Attrs().set("kind", kind).set("axis", axis));
}

// The running sum of v from the far end of the axis.
Var reverse_cumsum(const Var& v, int64_t axis) {
  return flipped(running(flipped(v, axis), kScanSum, axis), axis);
}

// The gradient of a running sum is the running sum of the gradient from the other end. A
// running product: d y_j / d x_i = prod_{m <= j, m != i} x_m for j >= i, which is y_j / x_i
// before the first zero of the row, the products with that zero left out at the first zero,
// and 0 after it. Skipped NaNs act as the identity and take no gradient.
MNNPY_REGISTER_GRAD("CumScan", [](const GradContext& c) {
  const Var& x_in = c.input(0);
  const int64_t axis = c.node.attrs.get_int("axis");
  const bool skip_nan = c.node.attrs.get_int("skip_nan") != 0;
  const Var& g = c.grad();
  const Var nan = skip_nan ? unary("IsNan", x_in) : Var{};
  Var result;
  if (c.node.attrs.get_int("kind") != kScanProd) {
    result = reverse_cumsum(g, axis);
  } else {
    const Var x = skip_nan ? where(nan, grad::scalar_like(x_in, 1), x_in) : x_in;
    const Var one = grad::scalar_like(x, 1), zero = grad::scalar_like(x, 0);
    const Var is_zero = binary("Equal", x, zero);
    const Var zeros_so_far = running(grad::as_dtype_of(is_zero, x), kScanSum, axis);
    const Var before_zero = binary("Equal", zeros_so_far, zero);
    const Var first_zero = binary("LogicalAnd", is_zero, binary("Equal", zeros_so_far, one));
    const Var y = c.outputs[0];
    const Var safe_x = where(before_zero, x, one);
    const Var general = where(before_zero, grad::div(reverse_cumsum(grad::mul(g, y), axis), safe_x), zero);
    const Var without_zero = running(where(first_zero, one, x), kScanProd, axis);
    const Var at_zero = where(first_zero, reverse_cumsum(grad::mul(g, without_zero), axis), zero);
    result = grad::add(general, at_zero);
  }
  if (skip_nan) result = where(nan, grad::scalar_like(result, 0), result);
  return std::vector<Var>{result};
});

MNNPY_REGISTER_OP(OpDef{"Quantile", 2, 2, infer_quantile, {}, false});

// The order statistics a quantile reads and the weight of the higher one, as the kernel
// picks them for q of a row of m values.
struct QuantileTaps {
  int64_t lo, hi;
  double weight_hi;
};

QuantileTaps quantile_taps(double q, int64_t m, int method, double alpha, double beta) {
  const double last = (double)(m - 1);
  double index;
  switch (method) {
    case kQuantileLower: { const int64_t i = (int64_t)std::floor(last * q); return {i, i, 0}; }
    case kQuantileHigher: { const int64_t i = (int64_t)std::ceil(last * q); return {i, i, 0}; }
    case kQuantileNearest: { const int64_t i = (int64_t)std::nearbyint(last * q); return {i, i, 0}; }
    case kQuantileMidpoint: index = 0.5 * (std::floor(last * q) + std::ceil(last * q)); break;
    case kQuantileMedian: return {(m - 1) / 2, m / 2, 0.5};
    default:
      index = alpha == 1 && beta == 1 ? last * q : (double)m * q + (alpha + q * (1 - alpha - beta)) - 1;
  }
  if (!(index >= 0)) return {0, 0, 0};
  if (index >= last) return {m - 1, m - 1, 0};
  const double lo = std::floor(index);
  return {(int64_t)lo, (int64_t)lo + 1, index - lo};
}

// A quantile is a weighted sum of (at most) two order statistics: the gradient goes to the
// sorted positions through a [n, len(q)] weight matrix, then back to where they came from.
// Needs q known when the graph is built and no NaN skipping (the row length would depend on
// the data).
MNNPY_REGISTER_GRAD("Quantile", [](const GradContext& c) {
  const Var& x = c.input(0);
  const Var& q = c.input(1);
  const Attrs& attrs = c.node.attrs;
  if (attrs.get_int("skip_nan") != 0) {
    throw ValueError("grad: the quantiles of NaN-skipping rows (nanquantile, nanmedian) have no gradient rule");
  }
  if (q.node->kind != NodeKind::Const || !q.node->has_values()) {
    throw ValueError("grad: quantile's gradient needs the quantiles q as constants");
  }
  const Tensor& qt = *q.node->values[q.index];
  const int64_t axis = attrs.get_int("axis"), n = x.type().shape[axis], nq = qt.numel();
  auto weights = Tensor::allocate(TensorType{DType::Float64, {n, nq}});
  double* w = weights->ptr<double>();
  std::fill(w, w + n * nq, 0.0);
  for (int64_t k = 0; k < nq; ++k) {
    const QuantileTaps t = quantile_taps(qt.ptr<double>()[k], n, (int)attrs.get_int("method"),
                                         attrs.get_float("alpha"), attrs.get_float("beta"));
    w[t.lo * nq + k] += 1 - t.weight_hi;
    w[t.hi * nq + k] += t.weight_hi;
  }
  const Shape& gs = c.grad().type().shape;  // [nq] + x's shape without the axis
  const Shape rest(gs.begin() + 1, gs.end());
  const Var g2 = reshape(c.grad(), {nq, shape_numel(rest)});
  const Var spread = make_op("MatMul", {cast(make_const(weights), x.type().dtype), g2},
                             Attrs().set("transpose_a", int64_t(0)).set("transpose_b", int64_t(0)));
  Shape sorted_shape{n};
  sorted_shape.insert(sorted_shape.end(), rest.begin(), rest.end());
  std::vector<int64_t> perm;
  for (int64_t i = 1; i <= axis; ++i) perm.push_back(i);
  perm.push_back(0);
  for (int64_t i = axis + 1; i < (int64_t)sorted_shape.size(); ++i) perm.push_back(i);
  const Var on_sorted = transpose(reshape(spread, sorted_shape), perm);
  const Var order = make_op("ArgSort", {x}, Attrs().set("axis", axis));
  return std::vector<Var>{grad::scatter_add(on_sorted, order, axis, n, true), Var{}};
});

}  // namespace

}  // namespace mnnpy
