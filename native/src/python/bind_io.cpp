// save / load of graph files.
#include <pybind11/stl.h>

#include <cstring>

#include "mnnpy/serialize.h"
#include "python/bindings.h"

namespace mnnpy {

namespace {
// OSError(errno, strerror, filename): Python picks FileNotFoundError, PermissionError ... itself.
[[noreturn]] void raise_file_error(const FileError& e) {
  py::tuple args = py::make_tuple(e.error_number, std::strerror(e.error_number), e.path);
  PyErr_SetObject(PyExc_OSError, args.ptr());
  throw py::error_already_set();
}
}  // namespace

MNNPY_REGISTER_BINDING([](py::module_& m) {
  m.def("save_graph", [](const std::vector<Var>& outputs, const std::string& path) {
    try {
      py::gil_scoped_release release;
      save_graph(outputs, path);
    } catch (const FileError& e) {
      raise_file_error(e);
    }
  }, py::arg("outputs"), py::arg("path"), "Write the graph behind `outputs` to a graph file.");
  m.def("load_graph", [](const std::string& path) {
    LoadedGraph g;
    try {
      py::gil_scoped_release release;
      g = load_graph(path);
    } catch (const FileError& e) {
      raise_file_error(e);
    }
    return py::make_tuple(py::cast(g.outputs), py::cast(g.names), py::cast(g.named_nodes));
  }, py::arg("path"), "Read a graph file: (output Vars, their saved names, [(name, Var)] of every named node).");
  m.attr("graph_format_version") = py::make_tuple(kGraphFormatMajor, kGraphFormatMinor);
});

}  // namespace mnnpy
