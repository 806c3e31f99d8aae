// Eager parts of NumPy's set functions: unique's output shape depends on the values, so the
// input is sorted by the graph (Sort, or ArgSort when positions are asked for) and evaluated when
// the call is made; the host library compacts the runs, and the parts come back as constant Vars.
#include <pybind11/stl.h>

#include "host/unique.h"
#include "mnnpy/executor.h"
#include "mnnpy/graph.h"
#include "mnnpy/thread_pool.h"
#include "python/bindings.h"
#include "python/convert.h"

namespace mnnpy {

namespace {

py::object as_var_or_none(const std::shared_ptr<Tensor>& t) {
  if (!t) return py::none();
  return py::cast(make_const(t));
}

py::tuple parts_tuple(const host::UniqueParts& parts) {
  return py::make_tuple(as_var_or_none(parts.values), as_var_or_none(parts.first_index),
                        as_var_or_none(parts.inverse), as_var_or_none(parts.counts));
}

py::tuple unique_flat_eager(const Var& x, bool return_index, bool return_inverse, bool return_counts, bool equal_nan) {
  const Var flat = reshape(x, {x.type().numel()});
  const Attrs along_flat = Attrs().set("axis", (int64_t)0);
  host::UniqueParts parts;
  if (!return_index && !return_inverse) {
    const Var sorted = make_op("Sort", {flat}, along_flat);
    py::gil_scoped_release release;
    const std::shared_ptr<Tensor> value = evaluate({sorted})[0];
    parts = host::unique_sorted(value->type.dtype, value->data, value->numel(), return_counts, equal_nan,
                                &ThreadPool::global());
  } else {
    const Var order = make_op("ArgSort", {flat}, along_flat);
    py::gil_scoped_release release;
    const auto values = evaluate({flat, order});
    parts = host::unique_by_order(values[0]->type.dtype, values[0]->data, values[1]->ptr<int64_t>(),
                                  values[0]->numel(), return_index, return_inverse, return_counts, equal_nan,
                                  &ThreadPool::global());
  }
  return parts_tuple(parts);
}

py::tuple unique_rows_eager(const Var& x, bool return_inverse, bool return_counts, bool equal_nan) {
  if (x.type().shape.size() != 2) throw ValueError("unique_rows: x must be 2-D, got " + shape_str(x.type().shape));
  host::UniqueParts parts;
  {
    py::gil_scoped_release release;
    const std::shared_ptr<Tensor> value = evaluate({x})[0];
    parts = host::unique_rows(value->type.dtype, value->data, value->type.shape[0], value->type.shape[1],
                             return_inverse, return_counts, equal_nan, &ThreadPool::global());
  }
  return parts_tuple(parts);
}

}  // namespace

MNNPY_REGISTER_BINDING([](py::module_& m) {
  m.def("unique_flat", &unique_flat_eager, py::arg("x"), py::arg("return_index") = false,
        py::arg("return_inverse") = false, py::arg("return_counts") = false, py::arg("equal_nan") = true,
        "numpy.unique of x's values (any shape, read in C order), evaluated now: (values, first index, inverse, "
        "counts) as 1-D constant Vars, None for parts not asked for.");
  m.def("unique_rows", &unique_rows_eager, py::arg("x"), py::arg("return_inverse") = false,
        py::arg("return_counts") = false, py::arg("equal_nan") = true,
        "numpy.unique of the rows of a 2-D x (lexicographic order), evaluated now: (None, first row of each distinct "
        "row, inverse, counts).");
});

}  // namespace mnnpy
