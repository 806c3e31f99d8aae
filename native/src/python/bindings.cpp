#include "python/bindings.h"

#include <vector>

namespace mnnpy {

namespace {
std::vector<std::function<void(py::module_&)>>& binders() {
  static std::vector<std::function<void(py::module_&)>> list;
  return list;
}
}  // namespace

BindingRegistrar::BindingRegistrar(std::function<void(py::module_&)> fn) { binders().push_back(std::move(fn)); }

void bind_extensions(py::module_& m) {
  for (auto& fn : binders()) fn(m);
}

}  // namespace mnnpy
