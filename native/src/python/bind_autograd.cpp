// Python bindings of reverse-mode differentiation and of placeholder rebinding (how a training
// step hands its new parameter values to the next step without copying them).
#include <pybind11/stl.h>

#include "mnnpy/autograd.h"
#include "mnnpy/op_registry.h"
#include "python/bindings.h"

namespace mnnpy {

namespace {

void bind_autograd(py::module_& m) {
  m.def("grad", [](const std::vector<Var>& ys, const std::vector<Var>& xs, const std::vector<Var>& seeds) {
    return gradients(ys, seeds, xs);
  }, py::arg("ys"), py::arg("xs"), py::arg("seeds") = std::vector<Var>{},
     "Gradients of sum(ys[i] * seeds[i]) (seeds default to ones) with respect to each of xs, as new Vars.");
  m.def("has_grad_rule", [](const std::string& op) { return find_grad(op) != nullptr; }, py::arg("op"));
  m.def("share_value", [](Var& placeholder, const Var& value) {
    Node& n = *placeholder.node;
    if (n.kind != NodeKind::Placeholder) throw ValueError("share_value needs a placeholder as its first argument");
    std::shared_ptr<Tensor> tensor = value.node->value(value.index);
    if (!tensor) throw ValueError("share_value needs a computed value");
    if (tensor->type.dtype != placeholder.type().dtype || tensor->type.shape != placeholder.type().shape) {
      throw ValueError("share_value: the value's shape " + shape_str(tensor->type.shape) + " and dtype " +
                       dtype_name(tensor->type.dtype) + " must match the placeholder's " +
                       shape_str(placeholder.type().shape) + " " + dtype_name(placeholder.type().dtype));
    }
    n.exchange_value(std::move(tensor));
  }, py::arg("placeholder"), py::arg("value"),
     "Make the placeholder hold a computed Var's value, without a copy (the value is never written again).");
}

MNNPY_REGISTER_BINDING(bind_autograd);

}  // namespace

}  // namespace mnnpy
