// NumPy buffers as constants without a copy, for front-ends that read them at once.
#include <pybind11/numpy.h>

#include "mnnpy/graph.h"
#include "python/bindings.h"
#include "python/convert.h"

namespace mnnpy {

namespace {

// The reference that keeps a borrowed array alive; it may be dropped on any thread, so the
// release takes the GIL (and is skipped once the interpreter is gone: the process is ending).
void release_array(void* p) {
  auto* array = static_cast<py::object*>(p);
  if (!Py_IsInitialized()) return;
  py::gil_scoped_acquire gil;
  delete array;
}

}  // namespace

MNNPY_REGISTER_BINDING([](py::module_& m) {
  m.def("borrow", [](py::handle value) -> Var {
    // An ndarray is taken as it is: asarray's call costs more than the rest of a borrow.
    py::array arr = py::array::check_(value)
                        ? py::reinterpret_borrow<py::array>(value)
                        : py::reinterpret_borrow<py::array>(py::module_::import("numpy").attr("asarray")(value));
    const int flags = py::detail::array_proxy(arr.ptr())->flags;
    const bool in_place = (flags & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_) &&
                          (flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_) && arr.dtype().byteorder() != '>' &&
                          arr.ndim() <= 32;
    if (!in_place) return make_const(tensor_from_numpy(arr));
    auto tensor = std::make_shared<Tensor>();
    tensor->type = TensorType{dtype_from_python(arr.dtype()), Shape(arr.shape(), arr.shape() + arr.ndim())};
    tensor->data = const_cast<void*>(arr.data());
    tensor->owner = std::shared_ptr<void>(new py::object(arr), release_array);
    return make_const(std::move(tensor));
  }, py::arg("array"),
  "A constant reading the NumPy array's buffer in place (a copy when it is not C-contiguous and "
  "aligned). The graph sees later writes to the array: evaluate what reads it before the array "
  "may change.");
});

}  // namespace mnnpy
