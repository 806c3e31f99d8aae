// Descriptions of how the CPU backend's kernels run, for benchmarks and tests. Declared here so
// that the bindings need no backend header; defined with the kernels in backend/cpu/, as the
// functions of simd_target.h are. Not part of the Backend interface: no other backend has them.
#pragma once
#include <string>

#include "mnnpy/dtype.h"

namespace mnnpy {

// The CPU GEMM's micro-kernel tile (mr rows x nr columns of the product) and the SIMD target
// running it.
struct GemmInfo {
  int mr = 0, nr = 0;
  std::string target;
};
// For dt Float32 or Float64, on the SIMD target the kernels run on now.
GemmInfo cpu_gemm_info(DType dt);

// The int8 GEMM's micro-kernel on the SIMD target the kernels run on now: its path ("vnni",
// "madd16" or "loop") and tile (mr rows x nr columns).
struct Int8GemmInfo {
  std::string path;
  int mr = 0, nr = 0;
};
Int8GemmInfo cpu_int8_gemm_info();

}  // namespace mnnpy
