// Reductions. The registered op reduces one contiguous run of axes (keepdims); the builder
// turns any axis set into a chain of those, applies NumPy's result dtypes and computes mean.
#include <algorithm>

#include "mnnpy/lowering.h"
#include "mnnpy/op_registry.h"
#include "mnnpy/ops.h"
#include "ops/grad_common.h"
#include "ops/reduce_kind.h"

namespace mnnpy {

namespace {

struct KindInfo { const char* name; int kind; const char* numpy_name; };
const KindInfo kKinds[] = {
    {"sum", kReduceSum, "add"},       {"prod", kReduceProd, "multiply"},
    {"min", kReduceMin, "minimum"},   {"max", kReduceMax, "maximum"},
    {"any", kReduceAny, "logical_or"}, {"all", kReduceAll, "logical_and"},
    {"argmin", kReduceArgMin, "argmin"}, {"argmax", kReduceArgMax, "argmax"},
};

std::vector<TensorType> infer_reduce(const std::vector<TensorType>& in, Attrs& attrs) {
  const int64_t kind = attrs.get_int("kind");
  if (kind < kReduceSum || kind > kReduceArgMax) throw ValueError("Reduce: unknown kind " + std::to_string(kind));
  const int64_t rank = (int64_t)in[0].shape.size();
  const int64_t first = attrs.get_int("first"), count = attrs.get_int("count");
  if (first < 0 || count < 1 || first + count > rank) throw ValueError("Reduce: axis run out of range");
  Shape out = in[0].shape;
  int64_t r = 1;
  for (int64_t i = first; i < first + count; ++i) {
    r *= out[i];
    out[i] = 1;
  }
  const bool no_identity = kind == kReduceMin || kind == kReduceMax || kind == kReduceArgMin ||
                           kind == kReduceArgMax;
  if (r == 0 && no_identity && in[0].numel() == 0 && shape_numel(out) != 0) {
    throw ValueError(std::string("zero-size array to reduction operation ") + kKinds[kind].numpy_name +
                     " which has no identity");
  }
  const bool arg = kind == kReduceArgMin || kind == kReduceArgMax;
  return {TensorType{arg ? DType::Int64 : in[0].dtype, out}};
}

MNNPY_REGISTER_OP(OpDef{"Reduce", 1, 1, infer_reduce, {}, false});

// Variance over one contiguous run of axes (kept as size 1), attrs first, count, ddof (float) and
// root (1: the standard deviation); float32/float64 in and out.
std::vector<TensorType> infer_variance(const std::vector<TensorType>& in, Attrs& attrs) {
  const DType t = in[0].dtype;
  if (t != DType::Float32 && t != DType::Float64) throw TypeError("Variance: expects float32 or float64 input");
  const int64_t rank = (int64_t)in[0].shape.size();
  const int64_t first = attrs.get_int("first"), count = attrs.get_int("count");
  if (first < 0 || count < 1 || first + count > rank) throw ValueError("Variance: axis run out of range");
  attrs.get_float("ddof");
  Shape out = in[0].shape;
  for (int64_t i = first; i < first + count; ++i) out[i] = 1;
  return {TensorType{t, out}};
}

MNNPY_REGISTER_OP(OpDef{"Variance", 1, 1, infer_variance, {}, false});

// On a backend without the Variance kernel: NumPy's two passes, sum((x - mean)^2) / (N - ddof)
// (a non-positive divisor gives inf or nan, as NumPy's), and its square root for root.
MNNPY_REGISTER_DECOMPOSITION("Variance", [](const std::vector<Var>& in, const Attrs& attrs,
                                            const std::vector<TensorType>&) {
  const Var& x = in[0];
  const int64_t first = attrs.get_int("first"), count = attrs.get_int("count");
  std::vector<int64_t> axes;
  int64_t n = 1;
  for (int64_t i = first; i < first + count; ++i) {
    axes.push_back(i);
    n *= x.type().shape[i];
  }
  const Var centered = grad::sub(x, reduce("mean", x, axes, true));
  const double divisor = std::max(0.0, (double)n - attrs.get_float("ddof"));
  const Var variance = grad::div(reduce("sum", grad::mul(centered, centered), axes, true), grad::scalar_like(x, divisor));
  return std::vector<Var>{attrs.get_int("root") ? unary("Sqrt", variance) : variance};
});

const KindInfo* find_kind(const std::string& name) {
  for (auto& k : kKinds) if (name == k.name) return &k;
  return nullptr;
}

// One Reduce node per contiguous run of axes, last run first, all with kept dims.
Var reduce_runs(int kind, Var x, const std::vector<int64_t>& axes) {
  size_t i = axes.size();
  while (i > 0) {
    size_t j = i - 1;
    while (j > 0 && axes[j - 1] == axes[j] - 1) --j;
    x = make_op("Reduce", {x}, Attrs().set("kind", (int64_t)kind).set("first", axes[j]).set("count", (int64_t)(i - j)));
    i = j;
  }
  return x;
}

}  // namespace

Var reduce(const std::string& kind_name, const Var& x, const std::optional<std::vector<int64_t>>& axes_opt,
           bool keepdims) {
  const bool mean = kind_name == "mean";
  const KindInfo* info = find_kind(mean ? "sum" : kind_name);
  if (!info) throw ValueError("unknown reduction '" + kind_name + "'");
  const int kind = info->kind;
  const bool arg = kind == kReduceArgMin || kind == kReduceArgMax;
  const Shape& shape = x.type().shape;
  const int64_t rank = (int64_t)shape.size();
  std::vector<int64_t> axes;
  if (axes_opt) {
    axes = normalize_axes(*axes_opt, rank);
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  if (arg && axes_opt && axes.size() > 1) throw ValueError(kind_name + " takes a single axis or None");

  Shape out_shape;
  int64_t count = 1;
  for (int64_t i = 0; i < rank; ++i) {
    const bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (reduced) count *= shape[i];
    if (!reduced) out_shape.push_back(shape[i]);
    else if (keepdims) out_shape.push_back(1);
  }
  if (count == 0 && (arg || kind == kReduceMin || kind == kReduceMax)) {
    if (arg) throw ValueError("attempt to get " + kind_name + " of an empty sequence");
    throw ValueError(std::string("zero-size array to reduction operation ") + info->numpy_name +
                     " which has no identity");
  }

  // Input and result dtypes, as NumPy's.
  const DType t = x.type().dtype;
  DType compute = t, result = t;
  if (kind == kReduceSum || kind == kReduceProd) {
    if (!is_float(t)) compute = result = is_unsigned_int(t) ? DType::UInt64 : DType::Int64;
    if (t == DType::Float16 || t == DType::BFloat16) compute = DType::Float32;
    if (mean) {
      if (!is_float(t)) compute = result = DType::Float64;
    }
  } else if (kind == kReduceAny || kind == kReduceAll) {
    compute = result = DType::Bool;
  } else {
    if (t == DType::Float16 || t == DType::BFloat16) compute = DType::Float32;
    if (arg) result = DType::Int64;
  }

  Var v = cast(x, compute);
  if (rank == 0) {
    // Reducing a 0-d array leaves its value (argmin/argmax: index 0).
    v = reshape(v, {1});
    axes = {0};
  }
  if (!axes.empty()) {
    if (arg && !axes_opt && rank > 1) {
      v = reshape(v, {shape_numel(shape)});
      axes = {0};
    }
    v = reduce_runs(kind, v, axes);
  }
  if (mean) v = binary("Div", v, make_scalar((double)count, compute));
  v = cast(v, result);
  return reshape(v, out_shape);
}

}  // namespace mnnpy

// ------------------------------------------------------------------ gradients
namespace mnnpy {
namespace {

// v with the reduced axes put back as length 1 (it then broadcasts against the input).
Var with_kept_axes(const Var& v, const Shape& in, int64_t first, int64_t count) {
  Shape kept = in;
  for (int64_t i = first; i < first + count; ++i) kept[i] = 1;
  return v.type().shape == kept ? v : reshape(v, kept);
}

// Products and extremes broadcast the kept-axes gradient inside their elementwise math, so no
// broadcast copy of it is made.
MNNPY_REGISTER_GRAD("Reduce", [](const GradContext& c) {
  const Var& x = c.input(0);
  const Shape& in = x.type().shape;
  const int64_t kind = c.node.attrs.get_int("kind"), first = c.node.attrs.get_int("first"),
                count = c.node.attrs.get_int("count");
  const Var g = with_kept_axes(c.grad(), in, first, count);
  if (kind == kReduceSum) return std::vector<Var>{broadcast_to_shape(g, in)};
  const Var y = with_kept_axes(c.outputs[0], in, first, count);
  if (kind == kReduceProd) return std::vector<Var>{grad::div(grad::mul(g, y), x)};
  if (kind == kReduceMax || kind == kReduceMin) {
    // Ties share the gradient evenly.
    const Var hits = grad::as_dtype_of(binary("Equal", x, y), x);
    std::vector<int64_t> axes;
    for (int64_t i = first; i < first + count; ++i) axes.push_back(i);
    const Var ties = reduce("sum", hits, axes, true);
    return std::vector<Var>{grad::mul(hits, grad::div(g, ties))};
  }
  throw ValueError("grad: reduction kind " + std::to_string(kind) + " is not differentiable");
});

// d var / dx = 2 (x - mean) / (N - ddof); the standard deviation divides by 2 std.
MNNPY_REGISTER_GRAD("Variance", [](const GradContext& c) {
  const Var& x = c.input(0);
  const Shape& in = x.type().shape;
  const int64_t first = c.node.attrs.get_int("first"), count = c.node.attrs.get_int("count");
  const double ddof = c.node.attrs.get_float("ddof");
  const bool root = c.node.attrs.get_int("root") != 0;
  std::vector<int64_t> axes;
  int64_t n = 1;
  for (int64_t i = first; i < first + count; ++i) {
    axes.push_back(i);
    n *= in[i];
  }
  const Var centered = grad::sub(x, reduce("mean", x, axes, true));
  if (root) {
    // g (x - mean) / ((N - ddof) std)
    const Var factor = grad::div(c.grad(), grad::scale(c.outputs[0], n - ddof));
    return std::vector<Var>{grad::mul(centered, factor)};
  }
  return std::vector<Var>{grad::mul(centered, grad::scale(c.grad(), 2.0 / (n - ddof)))};
});

}  // namespace
}  // namespace mnnpy
