// Selection ops. TopK is a graph op (two outputs: values and int64 indices) with ONNX's
// semantics. NonMaxSuppression is not: the number of boxes it selects depends on the data,
// so no shape can be inferred when the node is built; it is an eager function on known
// values instead (the ONNX converter calls it on constants), checked and run in
// host/non_max_suppression.cpp.
#include <string>

#include "mnnpy/op_registry.h"
#include "ops/grad_common.h"

namespace mnnpy {

namespace {

bool topk_dtype_supported(DType t) {
  return t == DType::Int32 || t == DType::Int64 || t == DType::UInt64 || t == DType::Float32 || t == DType::Float64;
}

// attrs: k (>= 0, at most the axis length), axis (negative counts from the end), largest and
// sorted (0/1, default 1). Outputs: values (x's dtype) and indices (int64), of x's shape with
// the axis cut to k.
std::vector<TensorType> infer_topk(const std::vector<TensorType>& in, Attrs& attrs) {
  const TensorType& x = in[0];
  if (!topk_dtype_supported(x.dtype)) {
    throw TypeError(std::string("TopK: x must be int32, int64, uint64, float32 or float64, got ") + dtype_name(x.dtype));
  }
  const int64_t rank = (int64_t)x.shape.size();
  if (rank == 0) throw ValueError("TopK: x must have at least one dimension");
  int64_t axis = attrs.get_int("axis", -1);
  if (axis < -rank || axis >= rank) {
    throw ValueError("TopK: axis " + std::to_string(axis) + " is out of range for an array of dimension " +
                     std::to_string(rank));
  }
  if (axis < 0) axis += rank;
  if (!attrs.has("k")) throw ValueError("TopK: the attribute k is missing");
  const int64_t k = attrs.get_int("k");
  if (k < 0) throw ValueError("TopK: k must not be negative, got " + std::to_string(k));
  if (k > x.shape[axis]) {
    throw ValueError("TopK: k = " + std::to_string(k) + " is larger than the length " + std::to_string(x.shape[axis]) +
                     " of axis " + std::to_string(axis));
  }
  // Normalized attributes: equal requests share a plan.
  attrs.set("axis", axis);
  attrs.set("largest", (int64_t)(attrs.get_int("largest", 1) != 0));
  attrs.set("sorted", (int64_t)(attrs.get_int("sorted", 1) != 0));
  Shape out = x.shape;
  out[axis] = k;
  return {TensorType{x.dtype, out}, TensorType{DType::Int64, out}};
}

MNNPY_REGISTER_OP(OpDef{"TopK", 1, 1, infer_topk, {}, false});

// The selected values' gradients go back through the indices output.
MNNPY_REGISTER_GRAD("TopK", [](const GradContext& c) {
  const Var& x = c.input(0);
  const int64_t axis = c.node.attrs.get_int("axis");
  const Var g = c.output_grads[0].valid() ? c.output_grads[0] : zeros_of(c.outputs[0].type());
  return std::vector<Var>{grad::scatter_add(g, c.outputs[1], axis, x.type().shape[axis], true)};
});

}  // namespace

}  // namespace mnnpy
