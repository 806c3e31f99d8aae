// CPU kernel of ScatterAdd (ops/scatter_add_grad.cpp).
#include <memory>

#include "backend/cpu/scatter_add.h"
#include "mnnpy/backend.h"

namespace mnnpy {

namespace {

struct ScatterAddLayout {
  int64_t outer = 1, m = 1, inner = 1, n = 0;
};

ScatterAddLayout layout_of(const Shape& updates, const Shape& indices, int64_t axis, int64_t size, bool along) {
  ScatterAddLayout l;
  l.n = size;
  const int64_t index_rank = along ? 1 : (int64_t)indices.size();
  for (int64_t d = 0; d < (int64_t)updates.size(); ++d) {
    if (d < axis) l.outer *= updates[d];
    else if (d < axis + index_rank) l.m *= updates[d];
    else l.inner *= updates[d];
  }
  return l;
}

class ScatterAddKernel : public Kernel {
 public:
  explicit ScatterAddKernel(const KernelContext& ctx)
      : dtype_(ctx.input_types[0].dtype), index_dtype_(ctx.input_types[1].dtype),
        along_(ctx.attrs.get_int("along") != 0),
        layout_(layout_of(ctx.input_types[0].shape, ctx.input_types[1].shape, ctx.attrs.get_int("axis"),
                          ctx.attrs.get_int("size"), along_)) {}
  void execute(const KernelArgs& args, void*) const override {
    const ScatterAddLayout& l = layout_;
    cpu::scatter_add(dtype_, index_dtype_, args.inputs[0]->data, args.inputs[1]->data, along_, l.outer, l.m, l.inner, l.n,
                     args.outputs[0]->data, args.pool);
  }
  const char* scheme() const override { return along_ ? "along axis" : "rows"; }

 private:
  DType dtype_, index_dtype_;
  bool along_;
  ScatterAddLayout layout_;
};

MNNPY_REGISTER_KERNEL("ScatterAdd", "cpu", construct_kernel<ScatterAddKernel>);

}  // namespace

}  // namespace mnnpy
