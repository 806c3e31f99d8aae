// CPU kernels of CumScan and Quantile (ops/scan_ops.cpp): both work along one axis, the input
// viewed as [outer, n, inner].
#include <memory>

#include "backend/cpu/axis_split.h"
#include "backend/cpu/scan.h"
#include "mnnpy/backend.h"

namespace mnnpy {

namespace {

class CumScanKernel : public Kernel {
 public:
  explicit CumScanKernel(const KernelContext& ctx)
      : kind_((int)ctx.attrs.get_int("kind")), dtype_(ctx.input_types[0].dtype),
        skip_nan_(ctx.attrs.get_int("skip_nan") != 0) {
    cpu::split_around_axes(ctx.input_types[0].shape, ctx.attrs.get_int("axis"), 1, outer_, n_, inner_);
  }
  void execute(const KernelArgs& args, void*) const override {
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

class QuantileKernel : public Kernel {
 public:
  explicit QuantileKernel(const KernelContext& ctx) : dtype_(ctx.input_types[0].dtype) {
    cpu::split_around_axes(ctx.input_types[0].shape, ctx.attrs.get_int("axis"), 1, outer_, n_, inner_);
    nq_ = ctx.input_types[1].shape[0];
    options_.method = (int)ctx.attrs.get_int("method");
    options_.alpha = ctx.attrs.get_float("alpha");
    options_.beta = ctx.attrs.get_float("beta");
    options_.skip_nan = ctx.attrs.get_int("skip_nan") != 0;
  }
  void execute(const KernelArgs& args, void*) const override {
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

MNNPY_REGISTER_KERNEL("CumScan", "cpu", construct_kernel<CumScanKernel>);
MNNPY_REGISTER_KERNEL("Quantile", "cpu", construct_kernel<QuantileKernel>);

}  // namespace

}  // namespace mnnpy
