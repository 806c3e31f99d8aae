// CPU kernel of SearchSorted (ops/search_ops.cpp).
#include <memory>

#include "backend/cpu/search.h"
#include "mnnpy/backend.h"

namespace mnnpy {

namespace {

class SearchSortedKernel : public Kernel {
 public:
  explicit SearchSortedKernel(const KernelContext& ctx)
      : dtype_(ctx.input_types[0].dtype),
        n_(ctx.input_types[0].shape[0]),
        count_(ctx.input_types[1].numel()),
        right_(ctx.attrs.get_int("right") != 0) {}
  void execute(const KernelArgs& args, void*) const override {
    cpu::searchsorted(dtype_, args.inputs[0]->data, n_, args.inputs[1]->data, count_, right_,
                      args.outputs[0]->ptr<int64_t>(), args.pool);
  }
  const char* scheme() const override { return "branchless binary search"; }

 private:
  DType dtype_;
  int64_t n_, count_;
  bool right_;
};

MNNPY_REGISTER_KERNEL("SearchSorted", "cpu", construct_kernel<SearchSortedKernel>);

}  // namespace

}  // namespace mnnpy
