// Cumulative sums/products (CumScan) and quantiles along one axis (Quantile).
//
// CumScan: attrs kind (0 sum, 1 product), axis, skip_nan (NaN counts as the identity). x is
// int64, float32 or float64; the result has x's dtype and shape.
//
// Quantile: inputs x (float32 or float64, the axis not empty) and q (float64, 1-D, values in
// [0, 1]); attrs axis, method (cpu::QuantileMethod), alpha and beta (plotting position of the
// continuous methods), skip_nan. The result, of x's dtype, has shape [len(q)] + x's shape
// without the axis.
#include <string>

#include "backend/cpu/scan.h"
#include "mnnpy/op_registry.h"
#include "mnnpy/thread_pool.h"

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

void split_at_axis(const Shape& s, int64_t axis, int64_t& outer, int64_t& n, int64_t& inner) {
  outer = n = inner = 1;
  for (int64_t i = 0; i < (int64_t)s.size(); ++i) {
    if (i < axis) outer *= s[i];
    else if (i == axis) n = s[i];
    else inner *= s[i];
  }
}

std::vector<TensorType> infer_cumscan(const std::vector<TensorType>& in, Attrs& attrs) {
  const TensorType& x = in[0];
  if (x.dtype != DType::Int64 && x.dtype != DType::Float32 && x.dtype != DType::Float64) {
    throw TypeError(std::string("CumScan: x must be int64, float32 or float64, got ") + dtype_name(x.dtype));
  }
  const int64_t kind = attrs.get_int("kind", cpu::kScanSum);
  if (kind != cpu::kScanSum && kind != cpu::kScanProd) throw ValueError("CumScan: kind must be 0 (sum) or 1 (product)");
  if (x.shape.empty()) throw ValueError("CumScan: x must have at least one dimension");
  checked_axis("CumScan", attrs, (int64_t)x.shape.size());
  attrs.set("skip_nan", (int64_t)(attrs.get_int("skip_nan", 0) != 0));
  return {x};
}

class CumScanKernel : public Kernel {
 public:
  explicit CumScanKernel(const KernelContext& ctx)
      : kind_((int)ctx.attrs.get_int("kind")), dtype_(ctx.input_types[0].dtype),
        skip_nan_(ctx.attrs.get_int("skip_nan") != 0) {
    split_at_axis(ctx.input_types[0].shape, ctx.attrs.get_int("axis"), outer_, n_, inner_);
  }
  void execute(const KernelArgs& args, void*) override {
    cpu::cumulative(kind_, dtype_, args.inputs[0]->data, outer_, n_, inner_, skip_nan_, args.outputs[0]->data,
                    args.pool);
  }
  const char* scheme() const override { return inner_ == 1 ? "rows" : "columns"; }

 private:
  int kind_;
  DType dtype_;
  bool skip_nan_;
  int64_t outer_ = 1, n_ = 1, inner_ = 1;
};

MNNPY_REGISTER_OP(OpDef{"CumScan", 1, 1, infer_cumscan,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new CumScanKernel(ctx)); },
                        {}, false});

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
  const int64_t method = attrs.get_int("method", cpu::kQuantileLinear);
  if (method < cpu::kQuantileLinear || method > cpu::kQuantileMedian) {
    throw ValueError("Quantile: unknown method " + std::to_string(method));
  }
  attrs.set("skip_nan", (int64_t)(attrs.get_int("skip_nan", 0) != 0));
  if (!attrs.has("alpha")) attrs.set("alpha", 1.0);
  if (!attrs.has("beta")) attrs.set("beta", 1.0);
  Shape out{q.shape[0]};
  for (int64_t i = 0; i < (int64_t)x.shape.size(); ++i) if (i != axis) out.push_back(x.shape[i]);
  return {TensorType{x.dtype, out}};
}

class QuantileKernel : public Kernel {
 public:
  explicit QuantileKernel(const KernelContext& ctx) : dtype_(ctx.input_types[0].dtype) {
    split_at_axis(ctx.input_types[0].shape, ctx.attrs.get_int("axis"), outer_, n_, inner_);
    nq_ = ctx.input_types[1].shape[0];
    options_.method = (int)ctx.attrs.get_int("method");
    options_.alpha = ctx.attrs.get_float("alpha");
    options_.beta = ctx.attrs.get_float("beta");
    options_.skip_nan = ctx.attrs.get_int("skip_nan") != 0;
  }
  void execute(const KernelArgs& args, void*) override {
    if (n_ == 0) return;
    const double* q = args.inputs[1]->ptr<double>();
    for (int64_t k = 0; k < nq_; ++k) {
      if (!(q[k] >= 0 && q[k] <= 1)) throw ValueError("Quantiles must be in the range [0, 1]");
    }
    cpu::quantiles(dtype_, args.inputs[0]->data, outer_, n_, inner_, q, nq_, options_, args.outputs[0]->data,
                   args.pool);
  }
  const char* scheme() const override { return "nth_element"; }

 private:
  DType dtype_;
  int64_t outer_ = 1, n_ = 1, inner_ = 1, nq_ = 0;
  cpu::QuantileOptions options_;
};

MNNPY_REGISTER_OP(OpDef{"Quantile", 2, 2, infer_quantile,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new QuantileKernel(ctx)); },
                        {}, false});

}  // namespace

}  // namespace mnnpy
