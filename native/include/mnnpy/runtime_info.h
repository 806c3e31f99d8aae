// Descriptions of how the CPU backend's kernels run, for benchmarks and tests. Declared here so
// that the bindings need no backend header; defined with the kernels in backend/cpu/, as the
// functions of simd_target.h are. Not part of the Backend interface: no other backend has them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

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

// The int8 GEMM's micro-kernel on the SIMD target the kernels run on now: its path ("amx",
// "vnni", "madd16" or "loop") and tile (mr rows x nr columns).
struct Int8GemmInfo {
  std::string path;
  int mr = 0, nr = 0;
  // AMX-INT8 (backend/cpu/gemm_int8_amx.h): whether this CPU and OS allow it, whether it is
  // switched on, and the smallest products it takes (smaller ones run on "vnni").
  bool amx_available = false, amx_enabled = false;
  int64_t amx_min_rows = 0, amx_min_depth = 0;
};
Int8GemmInfo cpu_int8_gemm_info();
// Tests and benchmarks: allows (on) or forbids the AMX-INT8 path and sets the smallest product it
// takes (ValueError below 1); returns the previous choice.
struct Int8AmxChoice {
  bool on = true;
  int64_t min_rows = 0, min_depth = 0;
};
Int8AmxChoice cpu_set_int8_amx(const Int8AmxChoice& choice);

// The bf16 products of precision "low" (backend/cpu/gemm_bf16.h). Whether the CPU plans "low"
// with them (it has a bf16 path, or the reference path is forced); the executor asks.
bool cpu_computes_bf16();
// For tests and benchmarks:
// The path plans at "low" use: "amx", "avx512_bf16", "reference" (only where forced), or "none".
std::string cpu_bf16_path();
std::vector<std::string> cpu_bf16_hardware_paths();  // the hardware paths this CPU has, best first
// Tests only: plans at "low" use `path` ("reference" or a hardware path this CPU has; ValueError
// otherwise), or again the best hardware path when `path` is empty.
void cpu_bf16_choose_path(const std::string& path);
// float32 -> bf16 bits, round to nearest even, NaN kept.
void cpu_bf16_round(const float* x, int64_t n, uint16_t* out);
// B [K x N] (trans_b: B^T [N x K], row stride ldb) packed as bf16 pairs in panels of 32
// columns [np / 32][kp / 2][32][2].
std::vector<uint16_t> cpu_bf16_pack_b(int64_t K, int64_t N, const float* b, int64_t ldb, bool trans_b, int64_t* kp,
                                      int64_t* np);
// C[M x N] = A[M x K] * B[K x N] (row-major, contiguous) on `path`, B packed first.
void cpu_gemm_bf16(const std::string& path, int64_t M, int64_t N, int64_t K, const float* a, bool trans_a,
                   const float* b, bool trans_b, float* c, int threads);

}  // namespace mnnpy
