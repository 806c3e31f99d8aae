// The _core extension: Var, graph building, evaluation and runtime settings.
#include <pybind11/stl.h>

#include <cstdlib>
#include <cstring>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "mnnpy/backend.h"
#include "mnnpy/executor.h"
#include "mnnpy/limits.h"
#include "mnnpy/op_registry.h"
#include "mnnpy/ops.h"
#include "mnnpy/simd_target.h"
#include "mnnpy/thread_pool.h"
#include "python/convert.h"
#include "python/bindings.h"

namespace mnnpy {

namespace {

std::vector<std::shared_ptr<Tensor>> evaluate_without_gil(const std::vector<Var>& vars) {
  py::gil_scoped_release release;
  return evaluate(vars);
}

// Computed values as constant Vars, in the data format of the Vars they were computed for.
std::vector<Var> as_constants(const std::vector<std::shared_ptr<Tensor>>& tensors, const std::vector<Var>& vars) {
  std::vector<Var> out;
  for (size_t i = 0; i < tensors.size(); ++i) out.push_back(make_const(tensors[i], vars[i].node->data_format));
  return out;
}

// `value` (an array or anything NumPy converts) as a value for `placeholder`: its dtype, and its
// shape (an array of the same number of elements is reshaped). `reuse`: see tensor_from_numpy.
std::shared_ptr<Tensor> placeholder_value(const Var& placeholder, py::handle value,
                                          const std::shared_ptr<Tensor>& reuse = nullptr) {
  const TensorType& t = placeholder.type();
  std::shared_ptr<Tensor> tensor = tensor_from_numpy(value, &t.dtype, reuse);
  // Equal element counts: a reused block always lands here, so a refusal never follows reuse.
  if (tensor->numel() == t.numel()) tensor->type.shape = t.shape;
  if (tensor->type.shape != t.shape) {
    const std::string name = placeholder.node->name.empty() ? std::string() : " '" + placeholder.node->name + "'";
    throw ValueError("cannot write a value of shape " + shape_str(tensor->type.shape) + " to a placeholder" + name +
                     " of shape " + shape_str(t.shape));
  }
  return tensor;
}

py::array read(const Var& v) {
  if (auto held = held_value(v)) return numpy_from_tensor(held);
  return numpy_from_tensor(evaluate_without_gil({v})[0]);
}

py::tuple shape_tuple(const Shape& s) {
  py::tuple t(s.size());
  for (size_t i = 0; i < s.size(); ++i) t[i] = py::int_(s[i]);
  return t;
}

Shape shape_from_python(py::handle obj) {
  Shape s;
  if (py::isinstance<py::int_>(obj)) return {obj.cast<int64_t>()};
  for (py::handle d : obj) s.push_back(py::cast<int64_t>(d));
  return s;
}

// An op attribute: an int, a float, a str or a list of ints; TypeError naming the attribute
// for anything else (a nested list, an int beyond int64, None ...), as a damaged model may hold.
AttrValue attr_from_python(const std::string& key, py::handle v) {
  try {
    if (PyBool_Check(v.ptr()) || py::isinstance<py::int_>(v)) return v.cast<int64_t>();
    if (py::isinstance<py::float_>(v)) return v.cast<double>();
    if (py::isinstance<py::str>(v)) return v.cast<std::string>();
    return v.cast<std::vector<int64_t>>();
  } catch (const py::cast_error&) {
    std::string shown = py::repr(v).cast<std::string>();
    if (shown.size() > 80) shown = shown.substr(0, 77) + "...";
    throw TypeError("attribute '" + key + "' must be an int, a float, a str or a list of ints (within int64), got " +
                    shown);
  }
}

py::object attr_to_python(const AttrValue& v) {
  return std::visit([](auto&& x) -> py::object { return py::cast(x); }, v);
}

Var binary_operand(const std::string& op, const Var& self, py::handle other, bool reflected, bool comparison = false) {
  Var o = operand_to_var(other, &self, comparison);
  return reflected ? binary(op, o, self) : binary(op, self, o);
}

void check_scalar(const Var& v, const char* what) {
  if (v.type().numel() != 1) {
    throw ValueError(std::string(what) + ": only arrays of size 1 can be converted to Python scalars");
  }
}

}  // namespace

void bind_var(py::module_& m) {
  py::class_<Var> var(m, "Var", py::dynamic_attr());
  var.def_property_readonly("shape", [](const Var& v) { return shape_tuple(v.type().shape); })
      .def_property_readonly("dtype", [](const Var& v) { return numpy_dtype(v.type().dtype); })
      .def_property_readonly("ndim", [](const Var& v) { return v.type().shape.size(); })
      .def_property_readonly("size", [](const Var& v) { return v.type().numel(); })
      .def_property_readonly("itemsize", [](const Var& v) { return dtype_size(v.type().dtype); })
      .def_property_readonly("nbytes", [](const Var& v) { return v.type().nbytes(); })
      .def_property_readonly("data_format", [](const Var& v) { return v.node->data_format; })
      .def_property("name", [](const Var& v) { return v.node->name; },
                    [](Var& v, const std::string& n) { v.node->name = n; })
      .def_property_readonly("op_type", [](const Var& v) { return v.node->op->name; })
      .def_property_readonly("inputs", [](const Var& v) { return v.node->inputs; })
      .def_property_readonly("output_index", [](const Var& v) { return v.index; })
      .def_property_readonly("node_id", [](const Var& v) { return v.node->id; },
                             "The number of the node that computes this Var, unique in the process.")
      .def_property_readonly("attrs", [](const Var& v) {
        py::dict d;
        for (auto& [k, x] : v.node->attrs.items()) d[py::str(k)] = attr_to_python(x);
        return d;
      })
      .def_property_readonly("is_placeholder", [](const Var& v) { return v.node->kind == NodeKind::Placeholder; })
      .def_property_readonly("is_const", [](const Var& v) { return v.node->kind == NodeKind::Const; })
      .def_property_readonly("is_evaluated", [](const Var& v) { return v.node->computed(); })
      .def_property_readonly("reads_placeholder", [](const Var& v) {
        return v.node->kind == NodeKind::Placeholder || v.node->uses_placeholder;
      }, "Whether the value depends on a placeholder (so it changes when the placeholder is written).")
      .def("read", &read, "Evaluate and return the value as a read-only NumPy array.")
      .def("numpy", &read, "Evaluate and return the value as a read-only NumPy array.")
      .def("write", [](Var& v, py::handle value) {
        if (v.node->kind != NodeKind::Placeholder) throw ValueError("write() needs a placeholder; this Var is " + v.node->op->name);
        // The old value is taken out so that its bytes can be written again when nothing else
        // holds them (see tensor_from_numpy); it comes back when the new value is refused.
        std::shared_ptr<Tensor> previous = v.node->exchange_value(nullptr);
        std::shared_ptr<Tensor> tensor;
        try {
          tensor = placeholder_value(v, value, previous);
        } catch (...) {
          v.node->exchange_value(std::move(previous));
          throw;
        }
        v.node->exchange_value(std::move(tensor));
      }, py::arg("value"))
      .def("fix_as_const", [](Var& v) {
        auto values = evaluate_without_gil({v});
        Node& n = *v.node;
        if (n.kind == NodeKind::Const) return;
        if (n.outputs.size() != 1) throw ValueError("fix_as_const needs a single-output node");
        n.exchange_value(values[0]);
        n.kind = NodeKind::Const;
        n.op = &get_op("Const");
        n.inputs.clear();
        n.attrs = Attrs();
        n.uses_placeholder = false;
        n.id = Node::next_id();
      })
      .def("__array__", [](const Var& v, py::object dtype, py::object copy) {
        py::object a = read(v);
        if (!dtype.is_none()) a = a.attr("astype")(dtype, py::arg("copy") = false);
        if (!copy.is_none() && copy.cast<bool>()) a = a.attr("copy")();
        return a;
      }, py::arg("dtype") = py::none(), py::arg("copy") = py::none())
      .def("__len__", [](const Var& v) {
        if (v.type().shape.empty()) throw TypeError("len() of unsized object");
        return v.type().shape[0];
      })
      .def("__bool__", [](const Var& v) {
        if (v.type().numel() != 1) {
          throw ValueError("The truth value of an array with more than one element is ambiguous. Use a.any() or a.all()");
        }
        return read(v).attr("item")().cast<bool>();
      })
      .def("__float__", [](const Var& v) { check_scalar(v, "float()"); return read(v).attr("item")().cast<double>(); })
      .def("__int__", [](const Var& v) { check_scalar(v, "int()"); return py::int_(read(v).attr("item")()); })
      .def("__index__", [](const Var& v) {
        if (!is_integer(v.type().dtype) || v.type().numel() != 1) {
          throw TypeError("only integer scalar arrays can be converted to a scalar index");
        }
        return py::int_(read(v).attr("item")());  // uint64 values may exceed int64
      })
      .def("item", [](const Var& v) {
        check_scalar(v, "item()");
        return read(v).attr("item")();
      })
      .def("__neg__", [](const Var& v) { return unary("Neg", v); })
      .def("__pos__", [](const Var& v) { return unary("Identity", v); })
      .def("__abs__", [](const Var& v) { return unary("Abs", v); })
      .def("__invert__", [](const Var& v) {
        return unary(v.type().dtype == DType::Bool ? "LogicalNot" : "BitwiseNot", v);
      });

  struct BinaryDunder { const char* name; const char* rname; const char* op; };
  const BinaryDunder dunders[] = {
      {"__add__", "__radd__", "Add"},           {"__sub__", "__rsub__", "Sub"},
      {"__mul__", "__rmul__", "Mul"},           {"__truediv__", "__rtruediv__", "Div"},
      {"__floordiv__", "__rfloordiv__", "FloorDiv"}, {"__mod__", "__rmod__", "Mod"},
      {"__pow__", "__rpow__", "Pow"},           {"__and__", "__rand__", "BitwiseAnd"},
      {"__or__", "__ror__", "BitwiseOr"},       {"__xor__", "__rxor__", "BitwiseXor"},
      {"__lshift__", "__rlshift__", "LeftShift"}, {"__rshift__", "__rrshift__", "RightShift"},
  };
  for (const auto& d : dunders) {
    const std::string op = d.op;
    var.def(d.name, [op](const Var& a, py::handle b) { return binary_operand(op, a, b, false); }, py::is_operator());
    var.def(d.rname, [op](const Var& a, py::handle b) { return binary_operand(op, a, b, true); }, py::is_operator());
  }
  const std::pair<const char*, const char*> comparisons[] = {
      {"__eq__", "Equal"}, {"__ne__", "NotEqual"}, {"__lt__", "Less"},
      {"__le__", "LessEqual"}, {"__gt__", "Greater"}, {"__ge__", "GreaterEqual"},
  };
  for (const auto& [name, op_name] : comparisons) {
    const std::string op = op_name;
    var.def(name, [op](const Var& a, py::handle b) { return binary_operand(op, a, b, false, true); }, py::is_operator());
  }
  var.attr("__hash__") = py::none();
}

PYBIND11_MODULE(_core, m) {
  m.doc() = "mnnpy's C++ core: lazy expression graph, executor and CPU kernels";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const IOError& e) {
      PyErr_SetString(PyExc_OSError, e.what());
    } catch (const MemoryError& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    }
  });

  bind_var(m);

  m.def("const", [](py::handle value, py::object dtype, const std::string& data_format) {
    if (dtype.is_none()) return make_const(tensor_from_numpy(value), data_format);
    const DType t = dtype_from_python(dtype);
    return make_const(tensor_from_numpy(value, &t), data_format);
  }, py::arg("value"), py::arg("dtype") = py::none(), py::arg("data_format") = "NCHW");
  m.def("placeholder", [](py::handle shape, py::handle dtype, const std::string& data_format) {
    return make_placeholder(TensorType{dtype_from_python(dtype), shape_from_python(shape)}, data_format);
  }, py::arg("shape"), py::arg("dtype"), py::arg("data_format") = "NCHW");
  m.def("scalar", [](py::handle value, py::handle partner) {
    if (partner.is_none()) return operand_to_var(value, nullptr);
    Var p = partner.cast<Var>();
    return operand_to_var(value, &p);
  }, py::arg("value"), py::arg("partner") = py::none(),
     "A Var for an operand; Python numbers take the partner's dtype as NumPy 2 does.");
  m.def("op", [](const std::string& name, std::vector<Var> inputs, py::dict attrs) -> py::object {
    Attrs a;
    for (auto kv : attrs) {
      const std::string key = py::str(kv.first);
      a.set(key, attr_from_python(key, kv.second));
    }
    auto outs = make_op_multi(name, std::move(inputs), std::move(a));
    if (outs.size() == 1) return py::cast(outs[0]);
    return py::cast(outs);
  }, py::arg("name"), py::arg("inputs"), py::arg("attrs") = py::dict());
  m.def("unary", [](const std::string& name, const Var& x) { return unary(name, x); });
  m.def("binary", [](const std::string& name, py::handle a, py::handle b) {
    const bool a_var = py::isinstance<Var>(a);
    if (a_var) {
      Var av = a.cast<Var>();
      return binary(name, av, operand_to_var(b, &av));
    }
    if (py::isinstance<Var>(b)) {
      Var bv = b.cast<Var>();
      return binary(name, operand_to_var(a, &bv), bv);
    }
    Var av = operand_to_var(a, nullptr);
    return binary(name, av, operand_to_var(b, &av));
  });
  m.def("where", [](const Var& c, const Var& a, const Var& b) { return where(c, a, b); });
  m.def("reduce", [](const std::string& kind, const Var& x, std::optional<std::vector<int64_t>> axes, bool keepdims) {
    return reduce(kind, x, axes, keepdims);
  }, py::arg("kind"), py::arg("x"), py::arg("axes") = py::none(), py::arg("keepdims") = false);
  m.def("cast", [](const Var& x, py::handle dtype) { return cast(x, dtype_from_python(dtype)); });
  m.def("reshape", [](const Var& x, py::handle shape) { return reshape(x, shape_from_python(shape)); });
  m.def("evaluate", [](const std::vector<Var>& vars) {
    auto tensors = evaluate_without_gil(vars);
    py::list out;
    for (auto& t : tensors) out.append(numpy_from_tensor(t));
    return out;
  }, "Compute several Vars in one plan; returns their values as NumPy arrays.");
  m.def("compute", [](const std::vector<Var>& vars) { evaluate_without_gil(vars); },
        "Compute several Vars in one plan, keeping the values on them (for Vars that read no placeholder).");
  m.def("last_profile", []() {
    py::list out;
    for (const StepProfile& p : last_profile()) {
      py::dict d;
      d["op"] = p.op;
      d["scheme"] = p.scheme;
      d["shape"] = p.shape;
      d["seconds"] = p.seconds;
      d["flops"] = p.flops;
      d["backend"] = p.backend;
      d["fallback"] = p.fallback;
      out.append(d);
    }
    return out;
  }, "The steps of the last run made with the executor option 'profile' on.");
  m.def("evaluate_as_constants", [](const std::vector<Var>& vars) {
    return as_constants(evaluate_without_gil(vars), vars);
  }, "Compute several Vars in one plan; returns new constant Vars sharing the computed values "
     "(values are never written again, so later runs of the same graph leave them alone).");
  py::class_<PlannedGraph>(m, "PlannedGraph",
                           "The graph behind some Vars, folded and planned once. run(values) computes them "
                           "again from values for the placeholders listed in `inputs` (in that order), "
                           "writing nothing shared, so threads may run one plan at once; run() reads "
                           "every placeholder's current value. Results are constant Vars.")
      .def(py::init([](const std::vector<Var>& targets, const std::vector<Var>& inputs) {
             py::gil_scoped_release release;
             return PlannedGraph(targets, inputs);
           }), py::arg("targets"), py::arg("inputs") = std::vector<Var>{})
      .def_property_readonly("inputs", &PlannedGraph::inputs)
      .def("run", [](const PlannedGraph& g, std::optional<py::sequence> values) {
        std::vector<std::shared_ptr<Tensor>> tensors;
        if (!values) {
          py::gil_scoped_release release;
          tensors = g.run();
        } else {
          const std::vector<Var>& inputs = g.inputs();
          if ((size_t)py::len(*values) != inputs.size()) {
            throw ValueError("PlannedGraph.run: the plan takes " + std::to_string(inputs.size()) +
                             " input values, got " + std::to_string(py::len(*values)));
          }
          // Arrays of the input's type are read in place (a model's input is often large: its copy
          // would cost as much as a layer), the others converted.
          std::vector<std::shared_ptr<Tensor>> given, borrowed;
          for (size_t i = 0; i < inputs.size(); ++i) {
            const TensorType& want = inputs[i].type();
            std::shared_ptr<Tensor> tensor = borrowed_tensor((*values)[i]);
            if (tensor && tensor->type.dtype == want.dtype && tensor->numel() == want.numel()) {
              tensor->type.shape = want.shape;
              borrowed.push_back(tensor);
            } else {
              tensor = placeholder_value(inputs[i], (*values)[i]);
            }
            given.push_back(std::move(tensor));
          }
          {
            py::gil_scoped_release release;
            tensors = g.run(given);
          }
          // An output that views an input (a reshape of it, or the input itself) gets its own copy:
          // results never share the caller's buffers.
          for (auto& t : tensors) {
            for (const auto& b : borrowed) {
              const char* p = static_cast<const char*>(t->data);
              const char* begin = static_cast<const char*>(b->data);
              if (t->nbytes() && p >= begin && p < begin + b->nbytes()) {
                auto copy = Tensor::allocate(t->type);
                std::memcpy(copy->data, t->data, t->nbytes());
                t = std::move(copy);
                break;
              }
            }
          }
        }
        return as_constants(tensors, g.targets());
      }, py::arg("values") = py::none());
  m.def("promote_types", [](py::handle a, py::handle b) {
    return numpy_dtype(promote_types(dtype_from_python(a), dtype_from_python(b)));
  });
  m.def("set_num_threads", [](int n) {
    if (n < 1) throw ValueError("number of threads must be at least 1, got " + std::to_string(n));
    py::gil_scoped_release release;  // it waits for a running job, which other Python threads may start
    ThreadPool::global().set_num_threads(n);
  });
  m.def("get_num_threads", [] { return ThreadPool::global().num_threads(); });
  m.def("release_free_memory", [] {
#if defined(__GLIBC__)
    // Blocks freed below glibc's mmap threshold stay in its heaps, counted in the process's
    // memory: a model's load frees many (its float weights once quantized and copied).
    return malloc_trim(0) != 0;
#else
    return false;
#endif
  }, "Returns the C heap's free memory to the system (glibc's malloc_trim); True if some was returned.");
  m.def("simd_target", &simd_target, "The SIMD target the CPU kernels run on now.");
  m.def("compiled_simd_targets", &compiled_simd_targets, "The SIMD targets the kernels were compiled for, best first.");
  m.def("usable_simd_targets", &usable_simd_targets,
        "The compiled SIMD targets this CPU supports, best first (any of them can be chosen).");
  m.def("set_simd_target", &set_simd_target, py::arg("name"),
        "Run every CPU kernel on the SIMD target `name` (one of usable_simd_targets()), 'portable' or 'best'.");
  m.def("force_portable_simd", [](bool on) {
          const char* chosen = std::getenv("MNNPY_SIMD");
          set_simd_target(on ? "portable" : chosen && *chosen ? chosen : "best");
        },
        "Run every SIMD kernel on the portable fallback target (for testing), or back on the process's own "
        "(MNNPY_SIMD's, else the best).");
  m.def("memory_limit_bytes", &memory_limit_bytes,
        "The most bytes one array or one computation may take: physical memory plus swap, or less where "
        "RLIMIT_AS, the cgroup's memory.max or MNNPY_MEMORY_LIMIT says so; larger requests raise MemoryError.");
  m.def("registered_ops", &registered_op_names);
  m.def("unary_ops", &unary_op_names);
  m.def("binary_ops", &binary_op_names);
  m.def("executor_stats", [] {
    ExecutorStats s = executor_stats();
    py::dict d;
    d["plans_built"] = s.plans_built;
    d["plan_cache_hits"] = s.plan_cache_hits;
    d["runs"] = s.runs;
    d["last_nodes_before"] = s.last_nodes_before;
    d["last_nodes_after"] = s.last_nodes_after;
    d["last_kernels"] = s.last_kernels;
    d["last_fused_groups"] = s.last_fused_groups;
    d["last_arena_bytes"] = s.last_arena_bytes;
    d["last_folded"] = s.last_folded;
    d["plans_cached"] = s.plans_cached;
    d["cached_plan_bytes"] = s.cached_plan_bytes;
    d["last_copies"] = s.last_copies;
    d["last_fallbacks"] = s.last_fallbacks;
    d["last_device_bytes"] = s.last_device_bytes;
    d["last_device_submits"] = s.last_device_submits;
    d["last_device_seconds"] = s.last_device_seconds;
    d["last_device_replays"] = s.last_device_replays;
    return d;
  });
  m.def("clear_plan_cache", &clear_plan_cache);
  m.def("usable_backends", &usable_backend_names, "The backends plans can be requested for, the CPU first.");
  m.def("backend_description", &backend_description, py::arg("name"),
        "The device a registered backend runs on, or why it is not available.");
  m.def("set_backend", &set_requested_backend, py::arg("name"),
        "Build later plans for the backend `name` (one of usable_backends()): nodes it supports run there, "
        "the others on the CPU, with copies between them.");
  m.def("get_backend", [] { return requested_backend().name(); }, "The backend later plans are built for.");
  m.def("set_thread_backend", &set_thread_backend, py::arg("name"),
        "Build this thread's later plans for the backend `name` ('' clears it, going back to set_backend's); "
        "returns the previous choice ('' when there was none).");
  m.def("set_precision", [](const std::string& name) { set_requested_precision(precision_from_name(name)); },
        py::arg("name"),
        "Build later plans for the precision `name` ('normal', 'high' or 'low'): at 'low' a device backend may "
        "round float32 operands to float16 where that is faster; the CPU computes as given.");
  m.def("get_precision", [] { return std::string(precision_name(requested_precision())); },
        "The precision later plans are built for.");
  m.def("set_thread_precision", &set_thread_precision, py::arg("name"),
        "Build this thread's later plans for the precision `name` ('' clears it, going back to set_precision's); "
        "returns the previous choice ('' when there was none).");
  m.def("enable_test_backend", [](bool on) { set_backend_listed("test", on); },
        "List (or hide) the 'test' backend: device-like buffers apart from host memory and a subset of ops, "
        "for testing placement and copies without a device.");
  m.def("set_executor_option", &set_executor_option);

  bind_extensions(m);
}

}  // namespace mnnpy
