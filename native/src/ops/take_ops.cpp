// TakeElements and RepeatElements (below).
// TakeElements: numpy.take(data, indices) over data's flat positions. Output: indices' shape
// in data's dtype. Negative indices count from the end; out-of-range ones give zero (known
// indices are range checked by the Python builders before the node is made).
#include <algorithm>

#include "mnnpy/op_registry.h"
#include "ops/grad_common.h"

namespace mnnpy {

namespace {

std::vector<TensorType> infer_take_elements(const std::vector<TensorType>& in, Attrs&) {
  if (!is_integer(in[1].dtype)) throw IndexError("arrays used as indices must be of integer (or boolean) type");
  return {TensorType{in[0].dtype, in[1].shape}};
}

MNNPY_REGISTER_OP(OpDef{"TakeElements", 2, 2, infer_take_elements, {}, false});

// RepeatElements: numpy.repeat along `axis` (attrs: axis, repeats = one count or one per
// element of the axis, none negative).
std::vector<TensorType> infer_repeat_elements(const std::vector<TensorType>& in, Attrs& attrs) {
  const Shape& s = in[0].shape;
  if (s.empty()) throw ValueError("RepeatElements: x must have at least one axis");
  int64_t axis = attrs.get_int("axis", 0);
  if (axis < -(int64_t)s.size() || axis >= (int64_t)s.size()) throw ValueError("RepeatElements: axis out of range");
  if (axis < 0) axis += (int64_t)s.size();
  attrs.set("axis", axis);
  const std::vector<int64_t>& repeats = attrs.get_ints("repeats");
  if (repeats.size() != 1 && (int64_t)repeats.size() != s[axis]) {
    throw ValueError("RepeatElements: repeats must have one entry or one per element of the axis");
  }
  int64_t total = 0;
  for (int64_t r : repeats) {
    if (r < 0) throw ValueError("repeats may not contain negative values.");
    total += r;
  }
  Shape out = s;
  out[axis] = repeats.size() == 1 ? s[axis] * repeats[0] : total;
  return {TensorType{in[0].dtype, out}};
}

MNNPY_REGISTER_OP(OpDef{"RepeatElements", 1, 1, infer_repeat_elements, {}, false});

// Positions taken more than once receive the sum of their gradients.
MNNPY_REGISTER_GRAD("TakeElements", [](const GradContext& c) {
  const TensorType& data = c.input(0).type();
  const Var summed = grad::scatter_add(c.grad(), c.input(1), 0, data.numel(), false);
  return std::vector<Var>{reshape(summed, data.shape), Var{}};
});

// Each input element receives the sum of the gradients of its copies.
MNNPY_REGISTER_GRAD("RepeatElements", [](const GradContext& c) {
  const Shape& in = c.input(0).type().shape;
  const int64_t axis = c.node.attrs.get_int("axis");
  const std::vector<int64_t>& repeats = c.node.attrs.get_ints("repeats");
  const Var& g = c.grad();
  if (repeats.size() == 1) {
    // [..., n * r, ...] as [..., n, r, ...], summed over the copies.
    Shape split = in;
    split.insert(split.begin() + axis + 1, repeats[0]);
    return std::vector<Var>{reshape(reduce("sum", reshape(g, split), std::vector<int64_t>{axis + 1}, false), in)};
  }
  std::vector<int64_t> owner;
  for (int64_t j = 0; j < (int64_t)repeats.size(); ++j) owner.insert(owner.end(), (size_t)repeats[j], j);
  auto positions = Tensor::allocate(TensorType{DType::Int64, {(int64_t)owner.size()}});
  std::copy(owner.begin(), owner.end(), positions->ptr<int64_t>());
  return std::vector<Var>{grad::scatter_add(g, make_const(positions), axis, in[axis], false)};
});

}  // namespace

}  // namespace mnnpy
