// The int8 GEMM's description (mnnpy._core.int8_gemm_info), for tests and benchmarks.
#include "mnnpy/runtime_info.h"
#include "python/bindings.h"

namespace mnnpy {

MNNPY_REGISTER_BINDING([](py::module_& m) {
  m.def("int8_gemm_info", [] {
    const Int8GemmInfo info = cpu_int8_gemm_info();
    py::dict d;
    d["path"] = info.path;
    d["mr"] = info.mr;
    d["nr"] = info.nr;
    return d;
  }, "The int8 GEMM's micro-kernel on the current SIMD target: path ('vnni', 'madd16', 'loop'), mr, nr.");
});

}  // namespace mnnpy
