// NumPy's sort, argsort and isin as graph ops. Sort and ArgSort sort along one axis (stable,
// NaN last); IsIn tests every element of its first input against all of its second's values.
// unique sorts with Sort or ArgSort, then compacts on the host (its output shape depends on the
// values): host/unique.h, called from python/bind_numpy_sort.cpp.
#include <string>

#include "mnnpy/op_registry.h"
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

MNNPY_REGISTER_OP(OpDef{"Sort", 1, 1,
                        [](const std::vector<TensorType>& in, Attrs& a) { return infer_sort_like(in, a, "Sort", false); },
                        {}, false});
MNNPY_REGISTER_OP(OpDef{"ArgSort", 1, 1,
                        [](const std::vector<TensorType>& in, Attrs& a) { return infer_sort_like(in, a, "ArgSort", true); },
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

MNNPY_REGISTER_OP(OpDef{"IsIn", 2, 2, infer_isin, {}, false});

}  // namespace

}  // namespace mnnpy
