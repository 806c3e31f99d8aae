// The int8 GEMM's description (mnnpy._core.int8_gemm_info) and its AMX switch
// (mnnpy._core.set_int8_amx), for tests and benchmarks.
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
    d["amx_available"] = info.amx_available;
    d["amx_enabled"] = info.amx_enabled;
    d["amx_min_rows"] = info.amx_min_rows;
    d["amx_min_depth"] = info.amx_min_depth;
    return d;
  }, "The int8 GEMM on the current SIMD target: path ('amx', 'vnni', 'madd16', 'loop') and tile (mr, nr); "
     "amx_available (the CPU and OS allow AMX-INT8), amx_enabled (the switch), and the smallest product "
     "AMX takes (amx_min_rows rows, amx_min_depth depths; smaller ones run on 'vnni').");
  m.def(
      "set_int8_amx",
      [](bool on, int64_t min_rows, int64_t min_depth) {
        const Int8AmxChoice previous = cpu_set_int8_amx({on, min_rows, min_depth});
        return py::make_tuple(previous.on, previous.min_rows, previous.min_depth);
      },
      py::arg("on"), py::arg("min_rows") = 16, py::arg("min_depth") = 64,
      "Allows (True) or forbids (False) the AMX-INT8 path of the int8 GEMM for later products of at least "
      "min_rows rows and min_depth depths (both >= 1, else ValueError); returns the previous (on, min_rows, "
      "min_depth). Without AMX-INT8 on the CPU the path stays unused either way. The environment variable "
      "MNNPY_INT8_AMX=0 forbids it from the start.");
});

}  // namespace mnnpy
