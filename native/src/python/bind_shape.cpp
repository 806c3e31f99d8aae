// Bindings for the shape ops and for Var indexing (x[...] and x[...] = value).
#include <pybind11/stl.h>

#include "mnnpy/op_registry.h"
#include "mnnpy/shape_ops.h"
#include "ops/shape_common.h"
#include "python/bindings.h"
#include "python/convert.h"

namespace mnnpy {

namespace {

const char kBadIndex[] =
    "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or boolean arrays are valid "
    "indices";

// An array-like index (list, ndarray, NumPy bool) as a const Var of an integer or bool dtype.
Var index_array(py::handle obj) {
  py::module_ np = py::module_::import("numpy");
  py::array arr = py::reinterpret_borrow<py::array>(np.attr("asarray")(obj));
  const char kind = arr.dtype().kind();
  if (kind == 'b') return make_const(tensor_from_numpy(arr));
  const DType i64 = DType::Int64;
  if (kind == 'i' || kind == 'u') return make_const(tensor_from_numpy(arr));
  // An empty list is an empty integer index, as in NumPy.
  if (arr.size() == 0 && (PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr()))) return make_const(tensor_from_numpy(arr, &i64));
  if (kind == 'f' || kind == 'c') throw IndexError("arrays used as indices must be of integer (or boolean) type");
  throw IndexError(kBadIndex);
}

IndexItem parse_item(py::handle obj) {
  PyObject* o = obj.ptr();
  if (o == Py_None) return IndexItem::make_new_axis();
  if (o == Py_Ellipsis) return IndexItem::make_ellipsis();
  if (PySlice_Check(o)) {
    Py_ssize_t start, stop, step;
    if (PySlice_Unpack(o, &start, &stop, &step) < 0) throw py::error_already_set();
    auto* s = reinterpret_cast<PySliceObject*>(o);
    return IndexItem::make_slice(s->start == Py_None ? std::nullopt : std::optional<int64_t>(start),
                                 s->stop == Py_None ? std::nullopt : std::optional<int64_t>(stop),
                                 s->step == Py_None ? std::nullopt : std::optional<int64_t>(step));
  }
  if (py::isinstance<Var>(obj)) return IndexItem::make_array(obj.cast<Var>());
  if (PyBool_Check(o)) return IndexItem::make_array(index_array(obj));
  if (PyLong_Check(o) || (PyIndex_Check(o) && !py::isinstance<py::array>(obj) &&
                          !py::isinstance(obj, py::module_::import("numpy").attr("bool_")))) {
    const Py_ssize_t i = PyNumber_AsSsize_t(o, nullptr);
    if (i == -1 && PyErr_Occurred()) throw py::error_already_set();
    if (i == PY_SSIZE_T_MAX || i == PY_SSIZE_T_MIN) throw IndexError(kBadIndex);
    return IndexItem::make_integer(i);
  }
  if (PyFloat_Check(o) || PyUnicode_Check(o) || PyBytes_Check(o) || PyDict_Check(o)) throw IndexError(kBadIndex);
  return IndexItem::make_array(index_array(obj));
}

std::vector<IndexItem> parse_index(py::handle index) {
  std::vector<IndexItem> items;
  if (PyTuple_Check(index.ptr())) {
    for (py::handle it : index) items.push_back(parse_item(it));
  } else {
    items.push_back(parse_item(index));
  }
  return items;
}

// numpy.take(x, index, axis) computed now, straight from the buffer of a C-contiguous NumPy
// integer array, when x's values are known (see take_now); axis None reads x flattened.
// Null when that does not apply (the caller builds the graph instead).
std::optional<Var> take_known_now(const Var& x, py::handle index, std::optional<int64_t> axis) {
  if (!py::isinstance<py::array>(index)) return std::nullopt;
  const auto arr = py::reinterpret_borrow<py::array>(index);
  const py::dtype dt = arr.dtype();
  const char kind = dt.kind();
  if (!(kind == 'i' || (kind == 'u' && dt.itemsize() == 1)) || !(arr.flags() & py::array::c_style) ||
      !dt.attr("isnative").cast<bool>()) {
    return std::nullopt;
  }
  const std::shared_ptr<Tensor> values = known_value(x);
  const Shape index_shape(arr.shape(), arr.shape() + arr.ndim());
  if (!values || values->numel() == 0 || shape_numel(index_shape) == 0) return std::nullopt;
  TensorType params = values->type;
  if (!axis) params.shape = {values->numel()};
  if (params.shape.empty()) return std::nullopt;
  const int64_t a = normalize_axis(axis.value_or(0), (int64_t)params.shape.size());
  const DType index_dtype = dtype_from_python(dt);
  std::shared_ptr<Tensor> out;
  {
    py::gil_scoped_release release;
    out = take_now(values->data, params, arr.data(), index_dtype, index_shape, a);
  }
  return make_const(out);
}

Var getitem(const Var& x, py::handle index) {
  if (std::optional<Var> taken = take_known_now(x, index, 0)) return *taken;
  const std::vector<IndexItem> items = parse_index(index);
  py::gil_scoped_release release;  // a boolean index may be evaluated
  return mnnpy::index(x, items);
}

Var setitem_result(const Var& x, py::handle index, py::handle value) {
  const std::vector<IndexItem> items = parse_index(index);
  const Var v = operand_to_var(value, &x);
  py::gil_scoped_release release;
  return index_assign(x, items, v);
}

// Integer indices for gather: a Var as it is, anything array-like as a constant.
Var indices_var(py::handle obj) {
  if (py::isinstance<Var>(obj)) return obj.cast<Var>();
  return index_array(obj);
}

std::vector<Var> as_vars(py::handle values) {
  std::vector<Var> out;
  for (py::handle v : values) out.push_back(operand_to_var(v, nullptr));
  return out;
}

}  // namespace

MNNPY_REGISTER_BINDING([](py::module_& m) {
  py::object var_class = m.attr("Var");
  var_class.attr("__getitem__") = py::cpp_function(&getitem, py::name("__getitem__"), py::is_method(var_class),
                                                   py::arg("index"), "NumPy indexing; returns a new Var.");
  var_class.attr("__setitem__") = py::cpp_function(
      [](Var& self, py::handle index, py::handle value) { self = setitem_result(self, index, value); },
      py::name("__setitem__"), py::is_method(var_class), py::arg("index"), py::arg("value"),
      "x[index] = value: rebinds x to a new node holding the updated array; Vars taken from x before keep "
      "their values (writes never go through views).");

  m.def("rebind", [](Var& var, const Var& target) { var = target; }, py::arg("var"), py::arg("target"),
        "Makes `var` refer to `target`'s node (in place, for every Python reference to `var`).");
  m.def("index", &getitem, py::arg("x"), py::arg("index"));
  m.def("take_now", &take_known_now, py::arg("x"), py::arg("indices"), py::arg("axis"),
        "numpy.take(x, indices, axis) evaluated now when x's values are known and indices is a C-contiguous NumPy "
        "integer array (IndexError for an out-of-range index); else None.");
  m.def("index_assign", &setitem_result, py::arg("x"), py::arg("index"), py::arg("value"),
        "The array x[index] = value would give, as a new Var.");
  m.def("transpose", [](const Var& x, std::optional<std::vector<int64_t>> perm) { return transpose(x, perm); },
        py::arg("x"), py::arg("perm") = py::none());
  m.def("broadcast_to", [](const Var& x, const Shape& shape) { return broadcast_to(x, shape); });
  m.def("concat", [](py::handle values, int64_t axis) { return concat(as_vars(values), axis); },
        py::arg("values"), py::arg("axis"));
  m.def("stack", [](py::handle values, int64_t axis) { return stack(as_vars(values), axis); },
        py::arg("values"), py::arg("axis") = 0);
  m.def("split", [](const Var& x, const std::vector<int64_t>& sizes, int64_t axis) { return split(x, sizes, axis); },
        py::arg("x"), py::arg("sizes"), py::arg("axis") = 0, "Pieces of the given sizes along the axis.");
  m.def("split_sections", &split_sections, py::arg("x"), py::arg("sections"), py::arg("axis") = 0,
        py::arg("equal") = true, "numpy.split (equal) or numpy.array_split into a number of pieces.");
  m.def("split_at", &split_at, py::arg("x"), py::arg("indices"), py::arg("axis") = 0,
        "numpy.split at the given indices.");
  m.def("slice", &slice, py::arg("x"), py::arg("starts"), py::arg("sizes"));
  m.def("strided_slice", &strided_slice, py::arg("x"), py::arg("begin"), py::arg("end"), py::arg("strides"),
        py::arg("begin_mask") = 0, py::arg("end_mask") = 0, py::arg("ellipsis_mask") = 0, py::arg("new_axis_mask") = 0,
        py::arg("shrink_axis_mask") = 0);
  m.def("gather", [](const Var& params, py::handle indices, int64_t axis) {
    return gather(params, indices_var(indices), axis);
  }, py::arg("params"), py::arg("indices"), py::arg("axis") = 0);
  m.def("gather_nd", [](const Var& params, py::handle indices) { return gather_nd(params, indices_var(indices)); },
        py::arg("params"), py::arg("indices"));
  m.def("pad", &pad, py::arg("x"), py::arg("pads"), py::arg("mode") = "constant", py::arg("value") = 0.0,
        "numpy.pad with (before, after) per axis; mode: constant, edge, reflect, symmetric, wrap.");
  m.def("expand_dims", &expand_dims, py::arg("x"), py::arg("axes"));
  m.def("squeeze", [](const Var& x, std::optional<std::vector<int64_t>> axes) { return squeeze(x, axes); },
        py::arg("x"), py::arg("axes") = py::none());
  m.def("tile", &tile, py::arg("x"), py::arg("multiples"));
  m.def("convert", &convert_format, py::arg("x"), py::arg("format"));
  m.def("with_format", [](const Var& x, const std::string& format) {
    if (format != "NCHW" && format != "NHWC" && format != "NC4HW4") {
      throw ValueError("unknown data format '" + format + "'; expected NCHW, NHWC or NC4HW4");
    }
    Var v = make_op("Reshape", {x}, Attrs().set("shape", x.type().shape));
    v.node->data_format = format;
    return v;
  }, py::arg("x"), py::arg("format"), "x's values and shape under the layout tag `format` (no data moves).");
});

}  // namespace mnnpy
