// NumPy <-> Tensor conversion and Python operand rules, shared by the binding files.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "mnnpy/graph.h"

namespace mnnpy {
namespace py = pybind11;

// NumPy dtype object for a DType (bfloat16 comes from ml_dtypes, imported on first use).
py::dtype numpy_dtype(DType t);
// DType for anything np.dtype() accepts, or a DType name; TypeError when unsupported.
DType dtype_from_python(py::handle obj);
// A tensor holding a copy of the array's values (any layout) in C order, cast to `force` when
// given. The bytes of `reuse` are written again when nothing else holds them and they fit.
std::shared_ptr<Tensor> tensor_from_numpy(py::handle obj, const DType* force = nullptr,
                                          const std::shared_ptr<Tensor>& reuse = nullptr);
// A tensor reading the array's buffer in place (the tensor keeps the array alive), or null when
// the array is not a C-contiguous, aligned, native-order ndarray (then it must be copied).
std::shared_ptr<Tensor> borrowed_tensor(py::handle obj);
// A NumPy array viewing the tensor's bytes, keeping the tensor alive; read-only.
py::array numpy_from_tensor(const std::shared_ptr<Tensor>& t);

// Turns an operand of a binary operation into a Var. Python bool/int/float are "weak"
// (NEP 50): they take the dtype of `partner` where NumPy 2 would.
// In comparisons an int outside the partner's range is compared exactly, as NumPy 2 does.
Var operand_to_var(py::handle obj, const Var* partner, bool for_comparison = false);

}  // namespace mnnpy
