// CPU kernel of TopK (ops/sort_ops.cpp).
#include <memory>

#include "backend/cpu/axis_split.h"
#include "backend/cpu/sort.h"
#include "mnnpy/backend.h"
#include "mnnpy/thread_pool.h"

namespace mnnpy {

namespace {

class TopKKernel : public Kernel {
 public:
  explicit TopKKernel(const KernelContext& ctx)
      : dtype_(ctx.input_types[0].dtype),
        k_(ctx.attrs.get_int("k")),
        largest_(ctx.attrs.get_int("largest") != 0),
        sorted_(ctx.attrs.get_int("sorted") != 0) {
    cpu::split_around_axes(ctx.input_types[0].shape, ctx.attrs.get_int("axis"), 1, outer_, n_, inner_);
  }
  void execute(const KernelArgs& args, void*) const override {
    cpu::topk(dtype_, args.inputs[0]->data, outer_, n_, inner_, k_, largest_, sorted_, args.outputs[0]->data,
              args.outputs[1]->ptr<int64_t>(), args.pool);
  }
  const char* scheme() const override { return k_ == 1 ? "scan" : k_ * 16 <= n_ ? "heap" : "nth_element"; }

 private:
  DType dtype_;
  int64_t k_;
  bool largest_, sorted_;
  int64_t outer_ = 1, n_ = 1, inner_ = 1;
};

MNNPY_REGISTER_KERNEL("TopK", "cpu", construct_kernel<TopKKernel>);

}  // namespace

}  // namespace mnnpy
