// The bf16 products of precision "low" (mnnpy._core.bf16_*), for tests and benchmarks: the path in
// use, rounding and packing as the kernels do them, and one product on a chosen path.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <string>

#include "mnnpy/executor.h"
#include "mnnpy/runtime_info.h"
#include "mnnpy/tensor.h"
#include "python/bindings.h"

namespace mnnpy {

namespace {

using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;

void require_matrix(const FloatArray& x, const char* name) {
  if (x.ndim() != 2) throw ValueError(std::string(name) + " must be 2-D, got " + std::to_string(x.ndim()) + "-D");
}

}  // namespace

MNNPY_REGISTER_BINDING([](py::module_& m) {
  m.def("bf16_path", &cpu_bf16_path,
        "The path precision='low' plans use on the CPU: 'amx', 'avx512_bf16', 'reference' (forced), or 'none'.");
  m.def("bf16_hardware_paths", &cpu_bf16_hardware_paths, "The bf16 hardware paths this CPU has, best first.");
  m.def(
      "bf16_choose_path",
      [](const std::string& path) {
        cpu_bf16_choose_path(path);
        clear_plan_cache();  // cached plans keep the kernels they were built with
      },
      py::arg("path"),
      "Tests only: precision='low' plans use `path` ('reference', or a hardware path this CPU has), or "
      "the best hardware path again when `path` is ''.");
  m.def(
      "bf16_round",
      [](FloatArray x) {
        py::array_t<uint16_t> out(std::vector<py::ssize_t>(x.shape(), x.shape() + x.ndim()));
        cpu_bf16_round(x.data(), (int64_t)x.size(), out.mutable_data());
        return out;
      },
      py::arg("x"), "float32 values as bf16 bits (uint16): round to nearest even, NaN kept NaN.");
  m.def(
      "bf16_pack_b",
      [](FloatArray b, bool trans_b) {
        require_matrix(b, "b");
        const int64_t K = trans_b ? b.shape(1) : b.shape(0), N = trans_b ? b.shape(0) : b.shape(1);
        if (K == 0 || N == 0) throw ValueError("b must not be empty");
        int64_t kp = 0, np = 0;
        std::vector<uint16_t> packed = cpu_bf16_pack_b(K, N, b.data(), b.shape(1), trans_b, &kp, &np);
        py::array_t<uint16_t> out({(py::ssize_t)(np / 32), (py::ssize_t)(kp / 2), (py::ssize_t)32, (py::ssize_t)2});
        std::copy(packed.begin(), packed.end(), out.mutable_data());
        return out;
      },
      py::arg("b"), py::arg("trans_b") = false,
      "B (K x N, or its transpose N x K with trans_b) as the kernels pack it: bf16 pairs in panels of 32 columns "
      "[Np/32][Kp/2][32][2], K and N padded to multiples of 32 with zeros.");
  m.def(
      "gemm_bf16",
      [](FloatArray a, FloatArray b, bool trans_a, bool trans_b, const std::string& path, int threads) {
        require_matrix(a, "a");
        require_matrix(b, "b");
        const int64_t M = trans_a ? a.shape(1) : a.shape(0), K = trans_a ? a.shape(0) : a.shape(1);
        const int64_t Kb = trans_b ? b.shape(1) : b.shape(0), N = trans_b ? b.shape(0) : b.shape(1);
        if (K != Kb) {
          throw ValueError("gemm_bf16: the depths differ: a gives K=" + std::to_string(K) + ", b gives K=" +
                           std::to_string(Kb));
        }
        py::array_t<float> c({(py::ssize_t)M, (py::ssize_t)N});
        if (M > 0 && N > 0) {
          if (K == 0) std::fill(c.mutable_data(), c.mutable_data() + M * N, 0.f);
          else cpu_gemm_bf16(path, M, N, K, a.data(), trans_a, b.data(), trans_b, c.mutable_data(), threads);
        }
        return c;
      },
      py::arg("a"), py::arg("b"), py::arg("trans_a") = false, py::arg("trans_b") = false,
      py::arg("path") = "reference", py::arg("threads") = 1,
      "a @ b (op(a) M x K, op(b) K x N) in bf16 with float32 accumulation on `path` ('reference', or a "
      "hardware path this CPU has); threads > 1 uses the thread pool.");
});

}  // namespace mnnpy
