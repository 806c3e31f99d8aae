// _core.read_onnx: an ONNX model (a file, mapped, or bytes) as plain Python data for
// mnnpy.convert.onnx, without the onnx package; each tensor is copied once, into the array the
// converter keeps.
#include <pybind11/numpy.h>

#include "host/onnx_reader.h"
#include "mnnpy/limits.h"
#include "mnnpy/mapped_file.h"
#include "python/bindings.h"
#include "python/convert.h"

namespace mnnpy {

namespace {

using host::OnnxAttribute;
using host::OnnxGraph;
using host::OnnxNode;
using host::OnnxTensor;
using host::OnnxValueInfo;

// ValueError with a message that may quote names that are not UTF-8 (PyErr_SetString would
// fail on them): invalid bytes become U+FFFD.
[[noreturn]] void raise_value_error(const std::string& message) {
  py::object text = py::reinterpret_steal<py::object>(PyUnicode_DecodeUTF8(message.data(), (Py_ssize_t)message.size(),
                                                                           "replace"));
  if (!text) throw py::error_already_set();
  PyErr_SetObject(PyExc_ValueError, text.ptr());
  throw py::error_already_set();
}

// Text as Python reads it: protobuf strings must be UTF-8; the values of STRING attributes are
// bytes, decoded with replacement as the converter always did.
py::str lenient_text(std::string_view s) {
  return py::reinterpret_steal<py::str>(PyUnicode_DecodeUTF8(s.data(), (Py_ssize_t)s.size(), "replace"));
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

// A buffer-protocol object's bytes, held (a bytearray cannot be resized meanwhile) until the
// reading is done.
class HeldBuffer {
 public:
  explicit HeldBuffer(py::handle source) {
    if (PyObject_GetBuffer(source.ptr(), &view_, PyBUF_SIMPLE) != 0) {
      PyErr_Clear();
      throw TypeError(std::string("read_onnx takes a path or a bytes-like object, got ") + Py_TYPE(source.ptr())->tp_name);
    }
  }
  ~HeldBuffer() { PyBuffer_Release(&view_); }
  HeldBuffer(const HeldBuffer&) = delete;
  HeldBuffer& operator=(const HeldBuffer&) = delete;
  std::string_view bytes() const { return {static_cast<const char*>(view_.buf), (size_t)view_.len}; }

 private:
  Py_buffer view_{};
};

// Python objects for a parsed model; each tensor's array is allocated here and filled later by
// `copies`, without the GIL.
class Builder {
 public:
  struct Copy {
    const OnnxTensor* tensor;
    host::OnnxArrayPlan plan;
    void* dest;
    py::object array;  // kept until the copy is done (a repeated name drops the first array)
  };
  std::vector<Copy> copies;

  py::dict model(const host::OnnxModel& m) {
    py::list opsets;
    for (const auto& [domain, version] : m.opset_import) {
      opsets.append(py::make_tuple(text(domain, "opset_import", "a domain"), version));
    }
    py::dict d;
    d["ir_version"] = m.ir_version;
    d["producer_name"] = text(m.producer_name, "", "producer_name");
    d["producer_version"] = text(m.producer_version, "", "producer_version");
    d["opset_import"] = opsets;
    d["graph"] = graph(m.graph, "graph");
    return d;
  }

 private:
  // Strict UTF-8, as protobuf requires of string fields.
  static py::str text(std::string_view s, const std::string& where, const char* what) {
    PyObject* str = PyUnicode_DecodeUTF8(s.data(), (Py_ssize_t)s.size(), nullptr);
    if (!str) {
      PyErr_Clear();
      throw host::OnnxWireError((where.empty() ? "" : where + ": ") + what + " " + quoted(s) + " is not valid UTF-8");
    }
    return py::reinterpret_steal<py::str>(str);
  }

  static py::list texts(const std::vector<std::string_view>& items, const std::string& where, const char* what) {
    py::list out(items.size());
    for (size_t i = 0; i < items.size(); ++i) out[i] = text(items[i], where, what);
    return out;
  }

  py::dict graph(const OnnxGraph& g, const std::string& where) {
    py::list nodes(g.nodes.size());
    for (size_t i = 0; i < g.nodes.size(); ++i) nodes[i] = node(g.nodes[i], where + ".node[" + std::to_string(i) + "]");
    py::dict initializers;
    for (const OnnxTensor& t : g.initializers) {
      initializers[text(t.name, where, "an initializer name")] = array(t, "tensor " + quoted(t.name));
    }
    py::dict d;
    d["name"] = text(g.name, where, "the graph name");
    d["nodes"] = nodes;
    d["initializers"] = initializers;
    d["inputs"] = value_infos(g.inputs, where);
    d["outputs"] = value_infos(g.outputs, where);
    return d;
  }

  py::tuple node(const OnnxNode& n, const std::string& where) {
    py::dict attrs;
    for (size_t k = 0; k < n.attributes.size(); ++k) {
      const OnnxAttribute& a = n.attributes[k];
      attrs[text(a.name, where, "an attribute name")] =
          attribute(a, n, where + ".attribute[" + std::to_string(k) + "] " + quoted(a.name));
    }
    return py::make_tuple(text(n.op_type, where, "op_type"), text(n.domain, where, "the domain"),
                          text(n.name, where, "the node name"), texts(n.inputs, where, "an input name"),
                          texts(n.outputs, where, "an output name"), attrs);
  }

  py::object attribute(const OnnxAttribute& a, const OnnxNode& n, const std::string& where) {
    switch (a.type) {
      case host::kOnnxFloat: return py::float_(a.f);
      case host::kOnnxInt: return py::int_(a.i);
      case host::kOnnxString: return lenient_text(a.s);
      case host::kOnnxFloats: {
        py::list out(a.floats.size());
        for (size_t i = 0; i < a.floats.size(); ++i) out[i] = py::float_(a.floats[i]);
        return std::move(out);
      }
      case host::kOnnxInts: {
        py::list out(a.ints.size());
        for (size_t i = 0; i < a.ints.size(); ++i) out[i] = py::int_(a.ints[i]);
        return std::move(out);
      }
      case host::kOnnxStrings: {
        py::list out(a.strings.size());
        for (size_t i = 0; i < a.strings.size(); ++i) out[i] = lenient_text(a.strings[i]);
        return std::move(out);
      }
      case host::kOnnxTensor: {
        const std::string node = n.name.empty() ? "a " + std::string(n.op_type) + " node" : "node " + quoted(n.name);
        return array(*a.t, "tensor " + quoted(a.t->name) + " (attribute " + quoted(a.name) + " of " + node + ")");
      }
      case host::kOnnxGraph: return graph(*a.g, where + ".g");
      default:
        throw ValueError("node " + quoted(n.name) + " (" + std::string(n.op_type) + "): attribute " + quoted(a.name) +
                         " holds a subgraph or another kind mnnpy cannot convert");
    }
  }

  py::object array(const OnnxTensor& t, const std::string& label) {
    const host::OnnxArrayPlan plan = host::plan_onnx_array(t, label);
    total_bytes_ += plan.nbytes;  // each tensor is at most the memory limit: no overflow
    if (total_bytes_ > memory_limit_bytes()) {
      throw ValueError(label + ": the model's tensors need more than the " + byte_size_str(memory_limit_bytes()) +
                       " this process may allocate");
    }
    if (plan.has_dtype) {
      // mnnpy's own aligned block: constants made from the array read it in place.
      auto tensor = Tensor::allocate(TensorType{plan.dtype, Shape(t.dims)});
      copies.push_back({&t, plan, tensor->data, numpy_from_tensor(tensor)});
      return copies.back().array;
    }
    py::array a(py::dtype(plan.numpy_name), std::vector<py::ssize_t>(t.dims.begin(), t.dims.end()));
    copies.push_back({&t, plan, a.mutable_data(), a});
    py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
    return std::move(a);
  }

  py::list value_infos(const std::vector<OnnxValueInfo>& values, const std::string& where) {
    py::list out(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      const OnnxValueInfo& v = values[i];
      py::object dims = py::none();
      if (v.has_shape) {
        py::list shape(v.dims.size());
        for (size_t k = 0; k < v.dims.size(); ++k) {
          const host::OnnxDim& d = v.dims[k];
          shape[k] = d.kind == host::OnnxDim::kValue   ? py::object(py::int_(d.value))
                     : d.kind == host::OnnxDim::kParam ? py::object(text(d.param, where, "a dim_param"))
                                                       : py::object(py::none());
        }
        dims = std::move(shape);
      }
      out[i] = py::make_tuple(text(v.name, where, "a value name"), v.elem_type, dims);
    }
    return out;
  }

  uint64_t total_bytes_ = 0;
};

py::dict read_onnx(py::handle source) {
  std::string prefix = "not a readable ONNX model: ";
  std::shared_ptr<MappedFile> file;
  std::unique_ptr<HeldBuffer> buffer;
  std::string_view bytes;
  if (py::isinstance<py::str>(source)) {
    // The file system's encoding, surrogate escapes included (os.fsencode).
    const auto path_bytes = py::reinterpret_steal<py::bytes>(PyUnicode_EncodeFSDefault(source.ptr()));
    if (!path_bytes) throw py::error_already_set();
    const std::string path = path_bytes.cast<std::string>();
    prefix = "'" + path + "' is not a readable ONNX model: ";
    try {
      file = map_file(path, /*writable=*/false, "read");
    } catch (const IOError& e) {
      raise_value_error(prefix + e.what());
    }
    bytes = {reinterpret_cast<const char*>(file->data), file->size};
  } else {
    buffer = std::make_unique<HeldBuffer>(source);
    bytes = buffer->bytes();
  }
  try {
    host::OnnxModel model;
    {
      py::gil_scoped_release release;
      model = host::parse_onnx_model(bytes);
    }
    Builder builder;
    py::dict result = builder.model(model);
    {
      py::gil_scoped_release release;
      for (const Builder::Copy& c : builder.copies) host::decode_onnx_tensor(*c.tensor, c.plan, c.dest);
    }
    return result;
  } catch (const host::OnnxWireError& e) {
    raise_value_error(prefix + e.what());
  } catch (const ValueError& e) {
    raise_value_error(e.what());
  }
}

}  // namespace

MNNPY_REGISTER_BINDING([](py::module_& m) {
  m.def("read_onnx", &read_onnx, py::arg("source"),
        "An ONNX model from a path (mapped, not read) or a bytes-like object, as plain data: a dict of "
        "ir_version, producer_name, producer_version, opset_import [(domain, version)] and graph. A graph is a "
        "dict of name, nodes [(op_type, domain, name, inputs, outputs, {attribute: value})], initializers "
        "{name: read-only ndarray}, inputs and outputs [(name, elem_type, dims or None)], dims holding ints, "
        "dim_param strings or None. Attribute values: float, int, str, lists of those, an ndarray (TENSOR) or a "
        "graph (GRAPH). ValueError names what is wrong in a damaged or unsupported model.");
});

}  // namespace mnnpy
