#include "python/convert.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace mnnpy {

namespace {
// Indexed by the DType value (bfloat16 comes from ml_dtypes).
const char* const kNumpyNames[kNumDTypes] = {"bool",    "int8",    "uint8",   "int16",  "int32",  "int64", "float16",
                                             nullptr,   "float32", "float64", "uint16", "uint32", "uint64"};

py::dtype bfloat16_dtype() {
  static py::object dt;
  if (!dt) {
    try {
      dt = py::dtype::from_args(py::module_::import("ml_dtypes").attr("bfloat16"));
    } catch (py::error_already_set&) {
      throw TypeError("bfloat16 arrays need the ml_dtypes package (pip install ml_dtypes)");
    }
  }
  return py::reinterpret_borrow<py::dtype>(dt);
}
}  // namespace

py::dtype numpy_dtype(DType t) {
  if (t == DType::BFloat16) return bfloat16_dtype();
  static PyObject* cache[kNumDTypes] = {};  // kept for the process lifetime
  PyObject*& d = cache[(int)t];
  if (!d) d = py::dtype(kNumpyNames[(int)t]).release().ptr();
  return py::reinterpret_borrow<py::dtype>(d);
}

namespace {
// The common NumPy dtypes from their kind and size, without asking NumPy for the name (a Python
// call that costs more than a small image op); false for the rest.
bool dtype_from_kind(const py::dtype& dt, DType* t) {
  const char kind = dt.kind();
  const py::ssize_t size = dt.itemsize();
  switch (kind) {
    case 'b': *t = DType::Bool; return size == 1;
    case 'u':
      if (size == 1) *t = DType::UInt8;
      else if (size == 2) *t = DType::UInt16;
      else if (size == 4) *t = DType::UInt32;
      else if (size == 8) *t = DType::UInt64;
      else return false;
      return true;
    case 'i':
      if (size == 1) *t = DType::Int8;
      else if (size == 2) *t = DType::Int16;
      else if (size == 4) *t = DType::Int32;
      else if (size == 8) *t = DType::Int64;
      else return false;
      return true;
    case 'f':
      if (size == 2) *t = DType::Float16;
      else if (size == 4) *t = DType::Float32;
      else if (size == 8) *t = DType::Float64;
      else return false;
      return true;
    default: return false;
  }
}
}  // namespace

DType dtype_from_python(py::handle obj) {
  if (py::isinstance<py::dtype>(obj)) {
    DType t;
    if (dtype_from_kind(py::reinterpret_borrow<py::dtype>(obj), &t)) return t;
  }
  if (py::isinstance<py::str>(obj)) {
    DType t;
    if (dtype_from_name(obj.cast<std::string>(), &t)) return t;
  }
  py::dtype dt;
  try {
    dt = py::dtype::from_args(py::reinterpret_borrow<py::object>(obj));
  } catch (py::error_already_set&) {
    throw TypeError("data type '" + py::str(obj).cast<std::string>() + "' not understood");
  }
  const std::string name = py::str(dt.attr("name")).cast<std::string>();
  DType t;
  if (dtype_from_name(name, &t)) return t;
  throw TypeError("mnnpy does not support dtype " + name +
                  " (supported: bool, int8, uint8, int16, uint16, int32, uint32, int64, uint64, float16, bfloat16, float32, "
                  "float64)");
}

std::shared_ptr<Tensor> tensor_from_numpy(py::handle obj, const DType* force, const std::shared_ptr<Tensor>& reuse) {
  py::module_ np = py::module_::import("numpy");
  py::object arr_obj = np.attr("asarray")(obj);
  py::array arr = py::reinterpret_borrow<py::array>(arr_obj);
  const py::dtype dt = arr.dtype();
  const char kind = dt.kind();
  if (kind == 'O' || kind == 'U' || kind == 'S' || kind == 'c' || kind == 'M' || kind == 'm') {
    throw TypeError("cannot make a tensor from an array of dtype " + py::str(dt).cast<std::string>());
  }
  DType src = dtype_from_python(dt);
  if (arr.ndim() > 32) throw ValueError("arrays of more than 32 dimensions are not supported");
  const TensorType type{force ? *force : src, Shape(arr.shape(), arr.shape() + arr.ndim())};
  py::array contiguous = np.attr("ascontiguousarray")(arr);
  std::shared_ptr<Tensor> tensor;
  // A block that nothing else reads (no other tensor, view or NumPy array) is written again:
  // its pages are already mapped and likely cached. The tensor is new, so caches keyed by
  // tensor id never see old contents.
  if (reuse && reuse.use_count() == 1 && reuse->owner.use_count() == 1 && reuse->nbytes() == type.nbytes() &&
      reuse->type.dtype == type.dtype) {
    tensor = std::make_shared<Tensor>();
    tensor->type = type;
    tensor->data = reuse->data;
    tensor->owner = reuse->owner;
  } else {
    tensor = Tensor::allocate(type);
  }
  if (type.dtype == src) {
    std::memcpy(tensor->data, contiguous.data(), tensor->nbytes());
  } else {
    convert_values(src, type.dtype, contiguous.data(), tensor->data, (size_t)tensor->numel());
  }
  return tensor;
}

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

std::shared_ptr<Tensor> borrowed_tensor(py::handle obj) {
  if (!py::array::check_(obj)) return nullptr;
  py::array arr = py::reinterpret_borrow<py::array>(obj);
  const int flags = py::detail::array_proxy(arr.ptr())->flags;
  const bool in_place = (flags & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_) &&
                        (flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_) && arr.dtype().byteorder() != '>' &&
                        arr.ndim() <= 32;
  if (!in_place) return nullptr;
  const char kind = arr.dtype().kind();
  if (kind == 'O' || kind == 'U' || kind == 'S' || kind == 'c' || kind == 'M' || kind == 'm') return nullptr;
  auto tensor = std::make_shared<Tensor>();
  tensor->type = TensorType{dtype_from_python(arr.dtype()), Shape(arr.shape(), arr.shape() + arr.ndim())};
  tensor->data = const_cast<void*>(arr.data());
  tensor->owner = std::shared_ptr<void>(new py::object(arr), release_array);
  return tensor;
}

py::array numpy_from_tensor(const std::shared_ptr<Tensor>& t) {
  auto* keep = new std::shared_ptr<Tensor>(t);
  py::capsule owner(keep, [](void* p) { delete static_cast<std::shared_ptr<Tensor>*>(p); });
  std::vector<py::ssize_t> shape(t->type.shape.begin(), t->type.shape.end());
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t s = (py::ssize_t)dtype_size(t->type.dtype);
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= std::max<py::ssize_t>(shape[i], 1);
  }
  py::array a(numpy_dtype(t->type.dtype), shape, strides, t->data, owner);
  // Values may be shared with the graph (cached results, constants): never writable.
  py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return a;
}

Var operand_to_var(py::handle obj, const Var* partner, bool for_comparison) {
  if (py::isinstance<Var>(obj)) return obj.cast<Var>();
  const DType p = partner ? partner->type().dtype : DType::Float64;
  if (PyBool_Check(obj.ptr())) return make_scalar(obj.ptr() == Py_True ? 1.0 : 0.0, DType::Bool);
  if (PyLong_Check(obj.ptr())) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(obj.ptr(), &overflow);
    const DType t = !partner || p == DType::Bool ? DType::Int64 : p;
    if (t == DType::UInt64 && overflow > 0) {
      // Above int64's range: uint64 still holds it up to 2**64 - 1.
      const unsigned long long u = PyLong_AsUnsignedLongLong(obj.ptr());
      if (!PyErr_Occurred()) {
        auto tensor = Tensor::allocate(TensorType{DType::UInt64, {}});
        *tensor->ptr<uint64_t>() = u;
        return make_const(tensor);
      }
      PyErr_Clear();
    }
    if (is_integer(t)) {
      long long lo = 0, hi = 0;
      switch (t) {
        case DType::Int8: lo = INT8_MIN; hi = INT8_MAX; break;
        case DType::UInt8: lo = 0; hi = UINT8_MAX; break;
        case DType::Int16: lo = INT16_MIN; hi = INT16_MAX; break;
        case DType::UInt16: lo = 0; hi = UINT16_MAX; break;
        case DType::Int32: lo = INT32_MIN; hi = INT32_MAX; break;
        case DType::UInt32: lo = 0; hi = UINT32_MAX; break;
        case DType::UInt64: lo = 0; hi = std::numeric_limits<long long>::max(); break;
        default: lo = std::numeric_limits<long long>::min(); hi = std::numeric_limits<long long>::max();
      }
      if ((overflow || v < lo || v > hi) && for_comparison) {
        // Beyond every int64 and uint64: an infinity of its sign compares alike with any integer.
        if (overflow) return make_scalar(overflow > 0 ? HUGE_VAL : -HUGE_VAL, DType::Float64);
        auto wide = Tensor::allocate(TensorType{DType::Int64, {}});
        *wide->ptr<int64_t>() = v;
        return make_const(wide);
      }
      if (overflow || v < lo || v > hi) {
        const std::string msg = "Python integer " + py::str(obj).cast<std::string>() + " out of bounds for " + dtype_name(t);
        PyErr_SetString(PyExc_OverflowError, msg.c_str());
        throw py::error_already_set();
      }
      auto tensor = Tensor::allocate(TensorType{t, {}});
      convert_values(DType::Int64, t, &v, tensor->data, 1);
      return make_const(tensor);
    }
    const double d = PyLong_AsDouble(obj.ptr());
    if (d == -1.0 && PyErr_Occurred()) throw py::error_already_set();
    return make_scalar(d, t);
  }
  if (PyFloat_Check(obj.ptr())) {
    const DType t = partner && is_float(p) ? p : DType::Float64;
    return make_scalar(PyFloat_AsDouble(obj.ptr()), t);
  }
  if (PyComplex_Check(obj.ptr())) throw TypeError("mnnpy does not support complex numbers");
  return make_const(tensor_from_numpy(obj));
}

}  // namespace mnnpy
