// SearchSorted: numpy.searchsorted of v (any shape) in a sorted 1-D array of the same dtype.
// attrs: right (0/1). Output: int64 insertion points of v's shape.
#include <string>

#include "backend/cpu/search.h"
#include "mnnpy/op_registry.h"
#include "mnnpy/thread_pool.h"

namespace mnnpy {

namespace {

std::vector<TensorType> infer_searchsorted(const std::vector<TensorType>& in, Attrs& attrs) {
  if (in[0].shape.size() != 1) {
    throw ValueError("SearchSorted: the sorted array must be 1-D, got shape " + shape_str(in[0].shape));
  }
  if (in[0].dtype != in[1].dtype) {
    throw TypeError(std::string("SearchSorted: both inputs must have one dtype, got ") + dtype_name(in[0].dtype) +
                    " and " + dtype_name(in[1].dtype));
  }
  if (in[0].dtype == DType::Float16 || in[0].dtype == DType::BFloat16) {
    throw TypeError(std::string("SearchSorted: ") + dtype_name(in[0].dtype) + " is not supported (widen it first)");
  }
  attrs.set("right", (int64_t)(attrs.get_int("right", 0) != 0));
  return {TensorType{DType::Int64, in[1].shape}};
}

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

MNNPY_REGISTER_OP(OpDef{"SearchSorted", 2, 2, infer_searchsorted,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new SearchSortedKernel(ctx)); },
                        {}, false});

}  // namespace

}  // namespace mnnpy
