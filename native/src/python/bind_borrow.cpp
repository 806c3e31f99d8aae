// NumPy buffers as constants without a copy, for front-ends that read them at once.
#include <pybind11/numpy.h>

#include "mnnpy/graph.h"
#include "python/bindings.h"
#include "python/convert.h"

namespace mnnpy {

MNNPY_REGISTER_BINDING([](py::module_& m) {
  m.def("borrow", [](py::handle value) -> Var {
    // An ndarray is taken as it is: asarray's call costs more than the rest of a borrow.
    py::object arr = py::array::check_(value) ? py::reinterpret_borrow<py::object>(value)
                                               : py::module_::import("numpy").attr("asarray")(value);
    if (auto tensor = borrowed_tensor(arr)) return make_const(std::move(tensor));
    return make_const(tensor_from_numpy(arr));
  }, py::arg("array"),
  "A constant reading the NumPy array's buffer in place (a copy when it is not C-contiguous and "
  "aligned). The graph sees later writes to the array: evaluate what reads it before the array "
  "may change.");
});

}  // namespace mnnpy
