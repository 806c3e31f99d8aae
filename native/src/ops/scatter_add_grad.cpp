// ScatterAdd: the transpose of a gather, used by the gradients of Gather, TakeElements, Pad,
// RepeatElements, Sort and TopK. Positions named more than once receive the sum of their
// updates (an embedding's gradient), added in index order.
//   inputs: updates (float32 or float64), indices (integer)
//   attrs:  axis, size (the output's length along axis), along (0/1)
//     along 0: updates are data.shape[:axis] + indices.shape + data.shape[axis+1:] (a Gather's
//              output); indices pick positions along axis. Output: updates with the indices'
//              axes replaced by [size].
//     along 1: indices have the updates' shape and pick the axis position of each element (the
//              transpose of take_along_axis). Output: updates with axis of length size.
//   Negative indices count from the end; indices out of range add nothing.
#include <string>
#include <vector>

#include "mnnpy/op_registry.h"
#include "ops/grad_common.h"

namespace mnnpy {

namespace {

std::vector<TensorType> infer_scatter_add(const std::vector<TensorType>& in, Attrs& attrs) {
  const TensorType &u = in[0], &idx = in[1];
  if (u.dtype != DType::Float32 && u.dtype != DType::Float64) {
    throw TypeError(std::string("ScatterAdd: updates must be float32 or float64, got ") + dtype_name(u.dtype));
  }
  if (!is_integer(idx.dtype)) {
    throw TypeError(std::string("ScatterAdd: indices must be integers, got ") + dtype_name(idx.dtype));
  }
  const bool along = attrs.get_int("along", 0) != 0;
  const int64_t axis = attrs.get_int("axis"), size = attrs.get_int("size");
  if (size < 0) throw ValueError("ScatterAdd: size must not be negative");
  const int64_t rank = (int64_t)u.shape.size();
  Shape out;
  if (along) {
    if (idx.shape != u.shape) {
      throw ValueError("ScatterAdd: indices " + shape_str(idx.shape) + " must have the updates' shape " +
                       shape_str(u.shape));
    }
    if (axis < 0 || axis >= rank) throw ValueError("ScatterAdd: axis out of range");
    out = u.shape;
    out[axis] = size;
  } else {
    const int64_t k = (int64_t)idx.shape.size();
    if (axis < 0 || axis + k > rank) throw ValueError("ScatterAdd: axis out of range");
    for (int64_t d = 0; d < k; ++d) {
      if (u.shape[axis + d] != idx.shape[d]) {
        throw ValueError("ScatterAdd: updates " + shape_str(u.shape) + " do not hold indices " + shape_str(idx.shape) +
                         " at axis " + std::to_string(axis));
      }
    }
    out.assign(u.shape.begin(), u.shape.begin() + axis);
    out.push_back(size);
    out.insert(out.end(), u.shape.begin() + axis + k, u.shape.end());
  }
  attrs.set("along", (int64_t)along);
  return {TensorType{u.dtype, out}};
}

MNNPY_REGISTER_OP(OpDef{"ScatterAdd", 2, 2, infer_scatter_add, {}, false});

// Linear in its updates: the gradient gathers the output gradient back.
MNNPY_REGISTER_GRAD("ScatterAdd", [](const GradContext& c) {
  const int64_t axis = c.node.attrs.get_int("axis");
  if (c.node.attrs.get_int("along") != 0) {
    return std::vector<Var>{grad::take_along_axis(c.grad(), c.input(1), axis), Var{}};
  }
  return std::vector<Var>{gather(c.grad(), c.input(1), axis), Var{}};
});

}  // namespace

namespace grad {

Var scatter_add(const Var& updates, const Var& indices, int64_t axis, int64_t size, bool along) {
  const DType t = updates.type().dtype;
  const bool native = t == DType::Float32 || t == DType::Float64;
  const Var u = native ? updates : cast(updates, DType::Float32);
  const Var out = make_op("ScatterAdd", {u, indices},
                          Attrs().set("axis", axis).set("size", size).set("along", (int64_t)along));
  return native ? out : cast(out, t);
}

// Flat positions of data[..., index[...], ...] for an index of `index_shape` along `axis` of
// `data_shape` (index_shape equals data_shape except along axis).
Var take_along_axis(const Var& data, const Var& index, int64_t axis) {
  const Shape& ds = data.type().shape;
  const Shape& is = index.type().shape;
  std::vector<int64_t> data_strides(ds.size(), 1);
  for (size_t d = ds.size(); d-- > 1;) data_strides[d - 1] = data_strides[d] * ds[d];
  std::vector<int64_t> base_strides = data_strides;
  base_strides[axis] = 0;
  const Var base = make_op("Iota", {}, Attrs().set("shape", is).set("start", int64_t(0)).set("strides", base_strides));
  Var position = cast(index, DType::Int64);
  // Negative indices count from the end of the axis.
  const Var negative = binary("Less", position, make_scalar(0, DType::Int64));
  position = where(negative, binary("Add", position, make_scalar((double)ds[axis], DType::Int64)), position);
  position = binary("Add", base, binary("Mul", position, make_scalar((double)data_strides[axis], DType::Int64)));
  return make_op("TakeElements", {data, position});
}

}  // namespace grad

}  // namespace mnnpy
