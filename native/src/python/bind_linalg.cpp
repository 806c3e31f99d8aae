// Python bindings of the matrix products.
#include "mnnpy/linalg.h"
#include "mnnpy/runtime_info.h"
#include "python/bindings.h"
#include "python/convert.h"

namespace mnnpy {

namespace {

// Operands may be Vars, NumPy arrays or nested lists; plain numbers take the other side's dtype.
std::pair<Var, Var> matmul_operands(py::handle a, py::handle b) {
  if (py::isinstance<Var>(a)) {
    Var av = a.cast<Var>();
    return {av, operand_to_var(b, &av)};
  }
  if (py::isinstance<Var>(b)) {
    Var bv = b.cast<Var>();
    return {operand_to_var(a, &bv), bv};
  }
  Var av = operand_to_var(a, nullptr);
  return {av, operand_to_var(b, &av)};
}

py::dict gemm_info_dict() {
  py::dict d;
  for (DType t : {DType::Float32, DType::Float64}) {
    const GemmInfo info = cpu_gemm_info(t);
    py::dict entry;
    entry["mr"] = info.mr;
    entry["nr"] = info.nr;
    d[dtype_name(t)] = entry;
    d["target"] = info.target;
  }
  return d;
}

}  // namespace

MNNPY_REGISTER_BINDING([](py::module_& m) {
  m.def("matmul", [](py::handle a, py::handle b, bool transpose_a, bool transpose_b) {
    auto [av, bv] = matmul_operands(a, b);
    return matmul(av, bv, transpose_a, transpose_b);
  }, py::arg("a"), py::arg("b"), py::arg("transpose_a") = false, py::arg("transpose_b") = false,
     "numpy.matmul of two operands; the transpose flags swap the last two axes of an operand first.");
  m.def("gemm_info", &gemm_info_dict,
        "The CPU backend's GEMM micro-kernel tile (rows mr x columns nr) per dtype and the SIMD target running it.");
});

}  // namespace mnnpy
