// Gradient rule of Bincount: with weights, bin k holds the sum of the weights whose index is k,
// so each weight's gradient is its bin's gradient.
#include <vector>

#include "mnnpy/op_registry.h"
#include "ops/grad_common.h"

namespace mnnpy {

namespace {

MNNPY_REGISTER_GRAD("Bincount", [](const GradContext& c) {
  if (c.node.inputs.size() < 2) return std::vector<Var>{Var{}};
  return std::vector<Var>{Var{}, make_op("TakeElements", {c.grad(), c.input(0)})};
});

}  // namespace

}  // namespace mnnpy
