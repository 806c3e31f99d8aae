// NumPy's sort, argsort and isin as graph ops. Sort and ArgSort sort along one axis (stable,
// NaN last); IsIn tests every element of its first input against all of its second's values.
// unique's output shape depends on the values, so it is an eager function (python/bind_numpy_sort.cpp).
#include <string>

#include "backend/cpu/sort_full.h"
#include "mnnpy/op_registry.h"
#include "mnnpy/thread_pool.h"
#include "ops/grad_common.h"

namespace mnnpy {

namespace {

// attrs: axis (negative counts from the end). The output has x's shape.
std::vector<TensorType> infer_sort_like(const std::vector<TensorType>& in, Attrs& attrs, const char* name,
                                        bool indices) {
  const TensorType& x = in[0];
  const int64_t rank = (int64_t)x.shape.size();
  if (rank == 0) throw ValueError(std::string(name) + ": x must have at least one dimension");
  int64_t axis = attrs.get_int("axis", -1);
  if (axis < -rank || axis >= rank) {
    throw ValueError(std::string(name) + ": axis " + std::to_string(axis) + " is out of range for an array of dimension " +
                     std::to_string(rank));
  }
  if (axis < 0) axis += rank;
  attrs.set("axis", axis);
  return {TensorType{indices ? DType::Int64 : x.dtype, x.shape}};
}

class SortKernel : public Kernel {
 public:
  SortKernel(const KernelContext& ctx, bool indices) : dtype_(ctx.input_types[0].dtype), indices_(indices) {
    const Shape& s = ctx.input_types[0].shape;
    const int64_t axis = ctx.attrs.get_int("axis");
    for (int64_t i = 0; i < (int64_t)s.size(); ++i) {
      if (i < axis) outer_ *= s[i];
      else if (i == axis) n_ = s[i];
      else inner_ *= s[i];
    }
  }
  void execute(const KernelArgs& args, void*) const override {
    if (indices_) {
      cpu::sort_along_axis(dtype_, args.inputs[0]->data, outer_, n_, inner_, nullptr, args.outputs[0]->ptr<int64_t>(),
                           args.pool);
    } else {
      cpu::sort_along_axis(dtype_, args.inputs[0]->data, outer_, n_, inner_, args.outputs[0]->data, nullptr, args.pool);
    }
  }
  const char* scheme() const override { return "radix"; }

 private:
  DType dtype_;
  bool indices_;
  int64_t outer_ = 1, n_ = 1, inner_ = 1;
};

MNNPY_REGISTER_OP(OpDef{"Sort", 1, 1,
                        [](const std::vector<TensorType>& in, Attrs& a) { return infer_sort_like(in, a, "Sort", false); },
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new SortKernel(ctx, false)); },
                        {}, false});
MNNPY_REGISTER_OP(OpDef{"ArgSort", 1, 1,
                        [](const std::vector<TensorType>& in, Attrs& a) { return infer_sort_like(in, a, "ArgSort", true); },
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new SortKernel(ctx, true)); },
                        {}, false});

// Each sorted value's gradient goes back to the position it came from (the stable argsort
// orders equal values as the sort placed them).
MNNPY_REGISTER_GRAD("Sort", [](const GradContext& c) {
  const Var& x = c.input(0);
  const int64_t axis = c.node.attrs.get_int("axis");
  const Var order = make_op("ArgSort", {x}, Attrs().set("axis", axis));
  return std::vector<Var>{grad::scatter_add(c.grad(), order, axis, x.type().shape[axis], true)};
});

// attrs: invert (0/1), kind (0 any, 1 sort, 2 table). Inputs of one dtype; output bool, of
// the elements' shape.
std::vector<TensorType> infer_isin(const std::vector<TensorType>& in, Attrs& attrs) {
  if (in[0].dtype != in[1].dtype) {
    throw TypeError(std::string("IsIn: elements and test_elements must have one dtype, got ") +
                    dtype_name(in[0].dtype) + " and " + dtype_name(in[1].dtype));
  }
  const int64_t kind = attrs.get_int("kind", 0);
  if (kind < 0 || kind > 2) throw ValueError("IsIn: kind must be 0, 1 or 2, got " + std::to_string(kind));
  if (kind == 2 && is_float(in[0].dtype)) {
    throw ValueError("IsIn: kind 'table' works only on integer and bool arrays");
  }
  attrs.set("kind", kind);
  attrs.set("invert", (int64_t)(attrs.get_int("invert", 0) != 0));
  return {TensorType{DType::Bool, in[0].shape}};
}

class IsInKernel : public Kernel {
 public:
  explicit IsInKernel(const KernelContext& ctx)
      : dtype_(ctx.input_types[0].dtype),
        invert_(ctx.attrs.get_int("invert") != 0),
        kind_((int)ctx.attrs.get_int("kind")) {}
  void execute(const KernelArgs& args, void*) const override {
    cpu::isin(dtype_, args.inputs[0]->data, args.inputs[0]->numel(), args.inputs[1]->data, args.inputs[1]->numel(),
              invert_, kind_, args.outputs[0]->ptr<uint8_t>(), args.pool);
  }
  const char* scheme() const override { return kind_ == 2 ? "table" : "sort"; }

 private:
  DType dtype_;
  bool invert_;
  int kind_;
};

MNNPY_REGISTER_OP(OpDef{"IsIn", 2, 2, infer_isin,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new IsInKernel(ctx)); }, {},
                        false});

}  // namespace

}  // namespace mnnpy
