// Binding files register themselves here so that adding an area never edits module.cpp.
#pragma once
#include <functional>

#include <pybind11/pybind11.h>

namespace mnnpy {
namespace py = pybind11;

void bind_extensions(py::module_& m);

struct BindingRegistrar {
  explicit BindingRegistrar(std::function<void(py::module_&)> fn);
};
#define MNNPY_REGISTER_BINDING(fn) static ::mnnpy::BindingRegistrar MNNPY_BINDING_CONCAT(binding_registrar_, __LINE__)(fn)
#define MNNPY_BINDING_CONCAT_INNER(a, b) a##b
#define MNNPY_BINDING_CONCAT(a, b) MNNPY_BINDING_CONCAT_INNER(a, b)

}  // namespace mnnpy
