// Reshape: a view of the input's bytes under a new shape (one -1 is inferred).
#include "mnnpy/autograd.h"
#include "mnnpy/op_registry.h"

namespace mnnpy {

namespace {
std::vector<TensorType> infer_reshape(const std::vector<TensorType>& in, Attrs& attrs) {
  Shape shape = attrs.get_ints("shape");
  const int64_t total = in[0].numel();
  int64_t known = 1, infer_at = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer_at >= 0) throw ValueError("can only specify one unknown dimension");
      infer_at = (int64_t)i;
    } else if (shape[i] < 0) {
      throw ValueError("negative dimensions not allowed");
    } else {
      known *= shape[i];
    }
  }
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0) {
      throw ValueError("cannot reshape array of size " + std::to_string(total) + " into shape " + shape_str(shape));
    }
    shape[infer_at] = total / known;
  } else if (known != total) {
    throw ValueError("cannot reshape array of size " + std::to_string(total) + " into shape " + shape_str(shape));
  }
  attrs.set("shape", shape);
  return {TensorType{in[0].dtype, shape}};
}
}  // namespace

MNNPY_REGISTER_OP(OpDef{"Reshape", 1, 1, infer_reshape, {}, true});

Var reshape(const Var& v, const Shape& shape) {
  if (v.type().shape == shape) return v;
  return make_op("Reshape", {v}, Attrs().set("shape", shape));
}

}  // namespace mnnpy

namespace mnnpy {
namespace {
MNNPY_REGISTER_GRAD("Reshape", [](const GradContext& c) {
  return std::vector<Var>{reshape(c.grad(), c.input(0).type().shape)};
});
}  // namespace
}  // namespace mnnpy
